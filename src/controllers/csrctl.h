/* csrctl.h - the kubelet-serving CSR approver's decision: whether a
 * CertificateSigningRequest may be approved, checked against the Node the
 * cloud-node controller initialized.
 *
 * A request is approved only when every check holds, in this order (the
 * first that fails names the request's fate):
 *   signer      spec.signerName is kubernetes.io/kubelet-serving
 *   requester   spec.username is system:node:NAME and system:nodes is among
 *               spec.groups
 *   request     spec.request is one PEM CERTIFICATE REQUEST whose
 *               self-signature verifies (csr.h)
 *   subject     exactly CN=system:node:NAME, O=system:nodes
 *   usages      within {digital signature, key encipherment, server auth},
 *               server auth included
 *   san-kind    no email or URI SAN, and at least one DNS or IP SAN
 *   node        the Node NAME exists
 *   initialized it carries no uninitialized taint and has addresses
 *   source      its addresses came from the cloud or the metadata service,
 *               not only from its own kubelet (unless trusted)
 *   ip-san      every IP SAN is one of the Node's status.addresses
 *   dns-san     every DNS SAN is one of its Hostname, InternalDNS or
 *               ExternalDNS addresses
 *
 * The controller (csrctl_start): leader only, level-triggered and
 * idempotent. Every CSRCTL_PERIOD_NS (and at once when it starts) a pass
 * LISTs the requests of signer kubernetes.io/kubelet-serving (a field
 * selector, pages of CSRCTL_PAGE_LIMIT) and checks each pending one (no
 * Approved or Denied condition) against the Node cache. One that passes
 * gets an Approved condition (reason CSRCTL_REASON_APPROVED) through the
 * /approval subresource, with the listed resourceVersion as precondition;
 * one that fails stays pending, with a Warning Event CSRCTL_REASON_REFUSED
 * on it and a log line naming the failed check, once per resourceVersion of
 * the request; with deny set (--csr-deny) it gets a Denied condition
 * instead (reason CSRCTL_REASON_DENIED), unless the failed check is one time
 * settles (csrctl_check_transient). A Node's source is told by the
 * annotation the cloud-node controller writes with the initialization
 * (KUBE_ANNOTATION_ADDRESS_SOURCE, csrctl_node_source): never approved on doubt.
 * A request another actor decides between the list and the write gets a
 * conflict and is looked at again next pass.
 *
 * Contract of the checks: pure, never logs; messages name the request and
 * the failed check. */
#ifndef BOOTCCM_CONTROLLERS_CSRCTL_H
#define BOOTCCM_CONTROLLERS_CSRCTL_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "base/err.h"
#include "kube/events.h"
#include "kube/node.h"
#include "kube/reflector.h"
#include "config/kubeconfig.h"

#define CSRCTL_SIGNER "kubernetes.io/kubelet-serving"
#define CSRCTL_NODE_USER_PREFIX "system:node:"
#define CSRCTL_NODES_GROUP "system:nodes"
#define CSRCTL_GROUPS_MAX 64   /* spec.groups entries */
#define CSRCTL_USAGES_MAX 32   /* spec.usages entries */
#define CSRCTL_PERIOD_NS (5 * 1000000000LL)  /* between passes */
#define CSRCTL_PAGE_LIMIT 500                /* requests per LIST page */
#define CSRCTL_SEEN_MAX 10000                /* requests remembered as reported */
#define CSRCTL_REASON_APPROVED "AutoApproved"
#define CSRCTL_REASON_DENIED "AutoDenied"
#define CSRCTL_REASON_REFUSED "KubeletServingCSRNotApproved"

/* A request as the checks read it (csrctl_request_decode). */
struct csrctl_request {
	char *name;
	char *signer;            /* "" when absent */
	char *username;          /* "" when absent */
	char **groups;
	size_t ngroups;
	char **usages;
	size_t nusages;
	char *pem;               /* spec.request, base64-decoded */
	size_t pem_len;
	int decided;             /* an Approved or Denied condition exists */
};

/* Where a Node's addresses came from. */
enum csrctl_source {
	CSRCTL_SOURCE_CLOUD = 0,   /* the cloud API, the metadata service, an inventory */
	CSRCTL_SOURCE_KUBELET,     /* only what its kubelet reported */
	CSRCTL_SOURCE_UNKNOWN,     /* nothing says */
};

/* csrctl_node_source reads n's KUBE_ANNOTATION_ADDRESS_SOURCE annotation:
 * kubelet-reported is KUBELET; cloud-api, instance-metadata and inventory
 * are CLOUD; absent (a Node initialized by another controller, or before
 * the annotation existed) or any other value UNKNOWN. */
enum csrctl_source csrctl_node_source(const struct kube_node *n);

/* csrctl_request_decode reads a CertificateSigningRequest object (borrowed)
 * into *ret (free with csrctl_request_free). ERR_INVALID naming the field,
 * ERR_TOO_LARGE past a cap. */
int csrctl_request_decode(json_object *o, struct csrctl_request *ret,
    struct errbuf *e);
void csrctl_request_free(struct csrctl_request *r);

/* csrctl_check decides on r for node (NULL: no such Node), whose addresses
 * came from source; trust_kubelet (--csr-trust-kubelet-addresses) accepts
 * CSRCTL_SOURCE_KUBELET. Returns 0 (approve), or ERR_INVALID with *ret_check
 * the failed check's name (above) and the reason in e. The Node name is the
 * one spec.username names: pass the Node of that name. */
int csrctl_check(const struct csrctl_request *r, const struct kube_node *node,
    enum csrctl_source source, int trust_kubelet, const char **ret_check,
    struct errbuf *e);

/* csrctl_check_transient tells whether a failed check (csrctl_check's
 * *ret_check) may pass later without the request changing: "node" (not
 * registered yet) and "initialized". Such a request is never denied. */
int csrctl_check_transient(const char *check);

struct csrctl_config {
	struct kubeconfig *kc;       /* borrowed; outlives the controller */
	struct reflector *nodes;     /* the Node cache (synced or not yet) */
	struct events *events;       /* NULL: no Events */
	int trust_kubelet;           /* --csr-trust-kubelet-addresses */
	int deny;                    /* --csr-deny */
	int64_t period_ns;           /* 0: CSRCTL_PERIOD_NS */
	const char *user_agent;      /* NULL: "bootccm" */
};

struct csrctl;

/* csrctl_start copies cfg and starts the controller's thread; its first
 * pass waits for the Node cache to sync. Returns 0 or ERR_INTERNAL (no
 * kubeconfig or cache, or a thread that did not start; *ret untouched). */
int csrctl_start(const struct csrctl_config *cfg, struct csrctl **ret,
    struct errbuf *e);

/* csrctl_stop ends the pass in progress and joins the thread: nothing is
 * written after it returns. Idempotent. csrctl_free stops c if needed and
 * frees it; NULL is fine. */
void csrctl_stop(struct csrctl *c);
void csrctl_free(struct csrctl *c);

/* csrctl_node_name returns the Node name spec.username names, or NULL when
 * it is not system:node:NAME. */
const char *csrctl_node_name(const struct csrctl_request *r);

#endif
