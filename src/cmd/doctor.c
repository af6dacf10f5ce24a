/* doctor.c - `bootccm doctor [--kubeconfig FILE] [-o text|json] [--local]`:
 * list what the findings need, analyze, print, exit by the worst finding. */
#include "cmd/doctor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "doctor/doctor.h"
#include "base/duration.h"
#include "base/dynbuf.h"
#include "config/flags.h"
#include "http/http.h"
#include "base/jsonx.h"
#include "kube/client.h"
#include "config/kubeconfig.h"
#include "base/log.h"
#include "base/xalloc.h"

#define DOCTOR_PROG "bootccm doctor"

struct doctor_opts {
	char *kubeconfig;
	char *context;
	char *output;
	int local;
	char *ccm_kubeconfig;
	int64_t threshold_ns;
	int64_t timeout_ns;
	int verbosity;
	int help;
};

static size_t
doctor_table(struct doctor_opts *o, struct flag *t, size_t cap)
{
	const struct flag table[] = {
		{ "kubeconfig", FLAG_STRING, &o->kubeconfig, NULL,
		  "Path to a kubeconfig (default: the in-cluster service account). Read-only "
		  "access is enough: the ClusterRole bootccm-doctor.", 0 },
		{ "context", FLAG_STRING, &o->context, NULL,
		  "The kubeconfig context to use (default: its current-context).", 0 },
		{ "output", FLAG_STRING, &o->output, "text",
		  "Output format: text or json (one object per finding: id, severity, "
		  "summary, objects, evidence, fix).", 0 },
		{ "o", FLAG_STRING, &o->output, "text", "Shorthand for --output.", 0 },
		{ "local", FLAG_BOOL, &o->local, "false",
		  "Run on a control-plane node: also check that the cloud-controller-manager's "
		  "kubeconfig (--ccm-kubeconfig) names the local API server.", 0 },
		{ "ccm-kubeconfig", FLAG_STRING, &o->ccm_kubeconfig, DOCTOR_CCM_KUBECONFIG,
		  "The cloud-controller-manager's kubeconfig, for --local.", 0 },
		{ "threshold", FLAG_DURATION, &o->threshold_ns, DOCTOR_THRESHOLD_DEFAULT,
		  "How long a node may keep the uninitialized taint, a LoadBalancer Service wait "
		  "for its address and a certificate request for an answer before it is "
		  "reported.", 0 },
		{ "timeout", FLAG_DURATION, &o->timeout_ns, DOCTOR_TIMEOUT_DEFAULT,
		  "The whole command's time limit.", 0 },
		{ "v", FLAG_INT, &o->verbosity, "0", "Log verbosity on standard error.", 0 },
		{ "help", FLAG_BOOL, &o->help, "false", "Help for bootccm doctor.", 0 },
	};
	size_t n = sizeof(table) / sizeof(table[0]);

	if (n > cap)
		log_fatal("internal: doctor_table: the caller's array is too small", NULL);
	memcpy(t, table, sizeof(table));
	return n;
}

static void
doctor_usage(FILE *out, const struct flag *t, size_t n)
{
	fprintf(out,
	    "Usage: " DOCTOR_PROG " [flags]\n\n"
	    "Read the cluster and report every known way it is stuck: nodes that keep the\n"
	    "uninitialized taint and why, nodes without addresses, kubelets without\n"
	    "--cloud-provider=external, pods the bootstrap taints keep Pending, nodes\n"
	    "without routes, LoadBalancer Services no controller serves, kubelet serving\n"
	    "certificate requests nobody approves, a Lease held by no running pod; each\n"
	    "with its evidence and its fix. Read-only.\n"
	    "Exit status: 0 healthy, 1 warnings, 2 a deadlock found, 3 the cluster could\n"
	    "not be read (bad flags, kubeconfig, an API error, --timeout).\n\n"
	    "Flags:\n");
	flags_usage(t, n, out);
}

static int
doctor_list_page(json_object *items, size_t n, void *arg, struct errbuf *e)
{
	json_object *all = arg;

	(void)e;
	for (size_t i = 0; i < n; i++)
		json_object_array_add(all, json_object_get(json_object_array_get_idx(items, i)));
	return 0;
}

/* doctor_list GETs every page of a list (api, ns NULL for every namespace,
 * an optional field selector) and appends its items to *ret. */
static int
doctor_list(struct kube_client *c, const char *api, const char *ns, const char *resource,
    const char *fields, json_object **ret, struct errbuf *e)
{
	json_object *all = xcheck(json_object_new_array());
	int r = kube_list_pages(c, api, ns, resource, fields, DOCTOR_PAGE_SIZE, DOCTOR_PAGES_MAX,
	    doctor_list_page, all, e);

	if (r < 0) {
		json_object_put(all);
		return r;
	}
	*ret = all;
	return 0;
}

/* doctor_read fills in from the API server; the objects are the caller's
 * to release (doctor_release). */
static int
doctor_read(struct kube_client *c, struct doctor_input *in, struct errbuf *e)
{
	int r;

	if ((r = doctor_list(c, "/api/v1", NULL, "nodes", NULL, &in->nodes, e)) < 0 ||
	    (r = doctor_list(c, "/api/v1", NULL, "pods", "status.phase=Pending",
	    &in->pending_pods, e)) < 0 ||
	    (r = doctor_list(c, "/api/v1", "kube-system", "pods", NULL, &in->system_pods, e)) < 0 ||
	    (r = doctor_list(c, "/api/v1", NULL, "services", NULL, &in->services, e)) < 0 ||
	    (r = doctor_list(c, "/api/v1", NULL, "events",
	    "involvedObject.kind=Node,reason=InitializationFailed", &in->init_events, e)) < 0)
		return r;
	r = kube_request(c, "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/"
	    "cloud-controller-manager", NULL, NULL, &in->lease, NULL, e);
	if (r == ERR_NOT_FOUND)
		in->lease = NULL;
	else if (r < 0)
		return errbuf_prefix(e, r, "reading the Lease kube-system/cloud-controller-manager");
	r = doctor_list(c, "/apis/certificates.k8s.io/v1", NULL, "certificatesigningrequests",
	    NULL, &in->csrs, e);
	if (r == ERR_NOT_FOUND)  /* no certificates.k8s.io/v1: nothing to report */
		in->csrs = NULL;
	else if (r < 0)
		return r;
	return 0;
}

static void
doctor_release(struct doctor_input *in)
{
	json_object *all[] = { in->nodes, in->pending_pods, in->system_pods, in->services,
	    in->init_events, in->csrs, in->lease };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		json_object_put(all[i]);
}

int
doctor_cmd(int argc, char **argv, struct stop *stop)
{
	struct doctor_opts o;
	struct flag t[16];
	struct doctor_input in;
	struct doctor_report rep;
	struct kubeconfig kc, ccm;
	struct kube_client c;
	struct errbuf e = { "" };
	struct dynbuf out;
	int have_kc = 0, have_ccm = 0, have_client = 0, json, r, rc;
	int64_t deadline;
	size_t n;
	char limit[32], esc[LOG_ESCAPED_MAX];

	memset(&o, 0, sizeof(o));
	memset(&in, 0, sizeof(in));
	memset(&rep, 0, sizeof(rep));
	dynbuf_init(&out, DOCTOR_OUTPUT_MAX);
	n = doctor_table(&o, t, sizeof(t) / sizeof(t[0]));
	if ((r = flags_defaults(t, n, &e)) < 0 || (r = flags_parse(t, n, argc, argv, 1, NULL,
	    &e)) < 0)
		goto usage;
	if (o.help) {
		doctor_usage(stdout, t, n);
		rc = DOCTOR_EXIT_HEALTHY;
		goto out;
	}
	json = strcmp(o.output, "json") == 0;
	if (!json && strcmp(o.output, "text") != 0) {
		errbuf_set(&e, ERR_INVALID, "--output \"%s\": want text or json", o.output);
		goto usage;
	}
	if (o.timeout_ns <= 0 || o.threshold_ns < 0 || o.verbosity < 0) {
		errbuf_set(&e, ERR_INVALID, "--timeout must be greater than zero, --threshold and "
		    "-v not negative");
		goto usage;
	}
	if (duration_check("timeout", o.timeout_ns, 1, DOCTOR_TIMEOUT_MAX_S * NS_PER_S, &e) < 0 ||
	    duration_check("threshold", o.threshold_ns, 0, DOCTOR_THRESHOLD_MAX_S * NS_PER_S,
	    &e) < 0)
		goto usage;
	log_init(o.verbosity, LOG_TEXT, STDERR_FILENO);
	if (o.local) {
		if ((r = kubeconfig_load(o.ccm_kubeconfig, NULL, &ccm, &e)) < 0) {
			errbuf_prefix(&e, r, "--ccm-kubeconfig");
			goto fail;
		}
		have_ccm = 1;
		in.ccm_server = ccm.server;
		in.ccm_kubeconfig = o.ccm_kubeconfig;
	}
	r = o.kubeconfig && *o.kubeconfig ? kubeconfig_load(o.kubeconfig, o.context, &kc, &e) :
	    kubeconfig_in_cluster(NULL, &kc, &e);
	if (r < 0)
		goto fail;
	have_kc = 1;
	if ((r = http_global_init(&e)) < 0)
		goto fail;
	kube_client_init(&c, &kc, "bootccm-doctor");
	have_client = 1;
	kube_client_set_stop(&c, stop);
	/* one deadline for every request (a request after it fails unsent;
	 * a transfer it cuts has run to it, so the message below is true) */
	deadline = clock_add_ns(clock_mono_ns(), o.timeout_ns);
	http_set_deadline(deadline);
	if ((r = doctor_read(&c, &in, &e)) < 0) {
		if (clock_mono_ns() >= deadline) {
			duration_format(o.timeout_ns, limit, sizeof(limit));
			errbuf_prefix(&e, r, "no answer within --timeout %s", limit);
		}
		goto fail;
	}
	in.now = (int64_t)time(NULL);
	in.threshold = o.threshold_ns / NS_PER_S;
	if ((r = doctor_analyze(&in, &rep, &e)) < 0) {
		errbuf_prefix(&e, r, "the API server's answer");
		goto fail;
	}
	if ((r = doctor_render(&rep, json, &out)) < 0 ||
	    log_print(STDOUT_FILENO, "%s", dynbuf_ptr(&out)) < 0) {
		errbuf_set(&e, ERR_IO, "cannot write the report");
		goto fail;
	}
	rc = rep.worst == DOCTOR_DEADLOCK ? DOCTOR_EXIT_DEADLOCK :
	    rep.worst == DOCTOR_WARNING ? DOCTOR_EXIT_WARNINGS : DOCTOR_EXIT_HEALTHY;
	goto out;
fail:
	log_print(STDERR_FILENO, DOCTOR_PROG ": %s\n", log_escape(e.msg, esc, sizeof(esc)));
	rc = DOCTOR_EXIT_CANNOT_READ;
	goto out;
usage:
	log_print(STDERR_FILENO, DOCTOR_PROG ": %s\nRun '" DOCTOR_PROG " --help' for usage.\n",
	    log_escape(e.msg, esc, sizeof(esc)));
	rc = DOCTOR_EXIT_CANNOT_READ;
out:
	doctor_release(&in);
	doctor_report_free(&rep);
	dynbuf_free(&out);
	if (have_client)
		kube_client_cleanup(&c);
	if (have_kc)
		kubeconfig_free(&kc);
	if (have_ccm)
		kubeconfig_free(&ccm);
	flags_free(t, n);
	return rc;
}
