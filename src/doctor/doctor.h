/* doctor.h - the findings of `bootccm doctor`: every known way a cluster
 * whose nodes a cloud-controller-manager initializes gets stuck, read from
 * the API server's objects alone.
 *
 * doctor_analyze is pure: it reads the objects the command fetched (the
 * API server's list answers, parsed) and the time, and fills a report. Each
 * finding has a stable id, a severity, the objects it is about
 * ("node/NAME", "pod/NS/NAME", "service/NS/NAME",
 * "certificatesigningrequest/NAME", "lease/NS/NAME"), the evidence read and
 * the fix. Objects that do not parse as their kind (a taint that is not an
 * object, a time that is not RFC 3339) fail the analysis with ERR_INVALID
 * naming the object and the field: nothing is concluded from half-read data.
 *
 * The severities order the command's exit status: a deadlock (nodes or
 * pods that cannot make progress without someone acting) is worse than a
 * warning. */
#ifndef BOOTCCM_DOCTOR_DOCTOR_H
#define BOOTCCM_DOCTOR_DOCTOR_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "base/dynbuf.h"
#include "base/err.h"

#define DOCTOR_TAINT_UNINITIALIZED "node.cloudprovider.kubernetes.io/uninitialized"
#define DOCTOR_TAINT_NETWORK "node.kubernetes.io/network-unavailable"
#define DOCTOR_LB_FINALIZER "service.kubernetes.io/load-balancer-cleanup"
#define DOCTOR_KUBELET_SERVING "kubernetes.io/kubelet-serving"
#define DOCTOR_PROVIDED_NODE_IP "alpha.kubernetes.io/provided-node-ip"
#define DOCTOR_THRESHOLD_DEFAULT "5m"
#define DOCTOR_TEXT_OBJECTS 10     /* objects listed per finding in text output */
#define DOCTOR_OUTPUT_MAX (64 * 1024 * 1024) /* bytes of one report */

enum doctor_severity {
	DOCTOR_WARNING = 1,
	DOCTOR_DEADLOCK = 2,
};

struct doctor_finding {
	char *id;                  /* "uninitialized-no-ccm" */
	enum doctor_severity severity;
	char *summary;             /* one line */
	char **objects;            /* kind/[ns/]name */
	size_t n_objects;
	char *evidence;
	char *fix;
};

struct doctor_report {
	struct doctor_finding **findings; /* each its own allocation: a finding
	                                     stays put while others are added */
	size_t n;
	size_t alloc;
	enum doctor_severity worst; /* 0 when there is no finding */
	size_t nodes, pods, services, csrs; /* objects read */
};

/* What the command read. Arrays are the lists' items (borrowed); lease is
 * the Lease kube-system/cloud-controller-manager or NULL when there is none;
 * csrs is NULL when the API server serves no certificates.k8s.io/v1. */
struct doctor_input {
	json_object *nodes;
	json_object *pending_pods;  /* every namespace, status.phase=Pending */
	json_object *system_pods;   /* kube-system */
	json_object *services;      /* every namespace */
	json_object *init_events;   /* involvedObject.kind=Node, reason=InitializationFailed */
	json_object *csrs;
	json_object *lease;
	int64_t now;                /* seconds since the epoch */
	int64_t threshold;          /* seconds: how long a node may stay uninitialized,
	                               a Service pending, a CSR unanswered */
	/* --local: the server the CCM's kubeconfig names, and that file (NULL:
	 * not checked) */
	const char *ccm_server;
	const char *ccm_kubeconfig;
};

/* doctor_analyze fills r (zeroed by the caller) from in. 0, or
 * ERR_INVALID naming the object and field that do not parse, with r left
 * empty. */
int doctor_analyze(const struct doctor_input *in, struct doctor_report *r,
    struct errbuf *e);

/* doctor_render appends the report as text (a block per finding, then a
 * summary line) or, with json, one JSON object {"findings": [...],
 * "summary": {...}} whose findings carry id, severity, summary, objects,
 * evidence and fix. ERR_TOO_LARGE past the buffer's cap. */
int doctor_render(const struct doctor_report *r, int json, struct dynbuf *out);

/* doctor_severity_name is "warning" or "deadlock". */
const char *doctor_severity_name(enum doctor_severity s);

void doctor_report_free(struct doctor_report *r);

#endif
