/* serviceview.h - a cached Service and the cached Nodes seen through the
 * provider interface, and what the service controller compares and writes
 * of them.
 *
 * Contract: a struct serviceview is the struct cloud_service a provider
 * operation takes, built from a struct kube_service of the reflector's
 * cache; it borrows the Service's strings (the caller keeps its reference
 * while the view is used) and owns only its arrays. A struct serviceview_nodes is a
 * snapshot of the Node cache (every Node referenced, the included ones as
 * provider views), reference-counted and shared through a struct
 * serviceview_cache by the syncs of one cache generation. The comparisons
 * and patch builders are pure. Out of memory is fatal. Logs only
 * serviceview_drift's per-Service failures. */
#ifndef BOOTCCM_CONTROLLERS_SERVICEVIEW_H
#define BOOTCCM_CONTROLLERS_SERVICEVIEW_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "cloud.h"
#include "controllers/nodeview.h"
#include "base/err.h"
#include "kube/node.h"
#include "kube/reflector.h"
#include "kube/service.h"
#include "kube/client.h"
#include "kube/events.h"
#include "base/labelsel.h"
#include "base/stop.h"

#define SERVICEVIEW_RV_MAX 64
#define SERVICEVIEW_EVENT_NODES_MAX 20  /* node names an Event lists (upstream's) */

#define SERVICEVIEW_FINALIZER "service.kubernetes.io/load-balancer-cleanup"
#define SERVICEVIEW_LABEL_EXCLUDE "node.kubernetes.io/exclude-from-external-load-balancers"
#define SERVICEVIEW_TAINT_TO_BE_DELETED "ToBeDeletedByClusterAutoscaler"

/* Which Services the controller serves, besides their type. */
struct serviceview_classes {
	const char *const *names;       /* spec.loadBalancerClass values served */
	size_t n;
	int only;                       /* class-less Services are not served */
};

/* --- the Service view ------------------------------------------------------ */

struct serviceview {
	struct cloud_service svc;
	struct cloud_kv *kv;            /* annotations, then the selector */
	struct cloud_lb_port *ports;
	struct cloud_lb_status status;
};

/* serviceview_init fills v from s (served: the controller serves s);
 * serviceview_free releases it. */
void serviceview_init(struct serviceview *v, const struct kube_service *s, int served);
void serviceview_free(struct serviceview *v);

/* --- Node snapshots ---------------------------------------------------------- */

/* A snapshot of the Node cache for a sync: the included Nodes as the
 * provider sees them. Shared by the syncs of one cache generation. */
struct serviceview_nodes {
	unsigned refs;                  /* under the cache's mu */
	uint64_t gen;
	const struct store_obj **objs;  /* every Node (references) */
	size_t nobjs;
	const struct kube_node **incl;  /* the included ones */
	uint64_t digest;                /* the digest of all included ones */
	struct nodeview *views;
	struct cloud_node *nodes;
	size_t n;
};

/* serviceview_nodes_build lists nodes' cache into a snapshot of generation gen (one
 * reference); serviceview_nodes_free frees one (NULL is fine). */
struct serviceview_nodes *serviceview_nodes_build(struct reflector *nodes, uint64_t gen);
void serviceview_nodes_free(struct serviceview_nodes *b);

/* The latest snapshot, shared. mu is the owner's lock: it guards latest,
 * every snapshot's refs, and the owner's *gen (bumped at every Node change)
 * and *pass_gen (the oldest generation a non-fresh get may return). */
struct serviceview_cache {
	pthread_mutex_t *mu;
	const uint64_t *gen, *pass_gen;
	struct reflector *nodes;
	struct serviceview_nodes *latest;        /* (mu) or NULL */
	pthread_mutex_t build;          /* one snapshot built at a time (before mu) */
};

void serviceview_cache_init(struct serviceview_cache *k, pthread_mutex_t *mu,
    const uint64_t *gen, const uint64_t *pass_gen, struct reflector *nodes);

/* serviceview_cache_destroy drops the latest snapshot; no reference may be
 * out. */
void serviceview_cache_destroy(struct serviceview_cache *k);

/* serviceview_cache_get returns a snapshot (a reference:
 * serviceview_cache_put) no older than the last Node change seen, or, with
 * fresh 0, than *pass_gen: the syncs of one pass share one snapshot while
 * Nodes go on changing (the changes since make the next pass), instead of
 * each building its own (some 5 MiB each at 5,000 Nodes, several at once
 * with several workers). */
struct serviceview_nodes *serviceview_cache_get(struct serviceview_cache *k, int fresh);
void serviceview_cache_put(struct serviceview_cache *k, struct serviceview_nodes *b);

/* serviceview_cache_trim lets the latest snapshot go once no sync needs it:
 * its Node views take about a KiB per Node, for nothing while idle. */
void serviceview_cache_trim(struct serviceview_cache *k);

/* serviceview_node_names writes the names of b's first
 * SERVICEVIEW_EVENT_NODES_MAX included Nodes, space-separated, into buf. */
void serviceview_node_names(const struct serviceview_nodes *b, char *buf, size_t len);

/* serviceview_drift asks lb which of the served, ensured Services objs[0..n)
 * drifted from what ensure made of them, against the snapshot b, and sets
 * drifted[i] for those: one lb->verify when the provider has it (its
 * failure is returned, nothing set), else lb->get for each (a failure is
 * logged at -v=2 and leaves that Service unset; a stop of stop ends the
 * loop). */
int serviceview_drift(const struct cloud_lb_ops *lb, void *state, const char *cluster,
    const struct store_obj *const *objs, size_t n, const struct serviceview_nodes *b,
    struct stop *stop, unsigned char *drifted, struct errbuf *e);

/* serviceview_event records an Event about s on ev (NULL: none). */
void serviceview_event(struct events *ev, const struct kube_service *s, const char *type,
    const char *reason, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* serviceview_patch sends patch (consumed) to s's main resource (status 0)
 * or its status, behind the resourceVersion in rv, which then holds the
 * answer's. A Service gone meanwhile is ERR_NOT_FOUND; a stop requested on
 * kc's stop writes nothing (ERR_CANCELED). */
int serviceview_patch(struct kube_client *kc, const struct kube_service *s, int status,
    json_object *patch, char rv[SERVICEVIEW_RV_MAX], struct errbuf *e);

/* --- comparisons and patches ------------------------------------------------- */

/* serviceview_streq: both NULL, or both strings and equal. */
int serviceview_streq(const char *a, const char *b);

/* serviceview_ip_mode is an ingress entry's ipMode as the API server keeps
 * it: VIP by default for an IP, none for a hostname. */
const char *serviceview_ip_mode(const char *ip, const char *mode);

/* serviceview_wants is upstream's wantsLoadBalancer with the served classes:
 * type LoadBalancer and a class cls serves. */
int serviceview_wants(const struct serviceview_classes *cls, const struct kube_service *s);

/* serviceview_needs_cleanup: s carries the finalizer and is being deleted or
 * no longer wanted. */
int serviceview_needs_cleanup(const struct serviceview_classes *cls,
    const struct kube_service *s);

/* serviceview_needs_update_except is serviceview_needs_update with the
 * annotation keys own[0..n_own) (the provider's output, not a change) left
 * out of the comparison. */
const char *serviceview_needs_update_except(const struct serviceview_classes *cls,
    const struct kube_service *old, const struct kube_service *s, const char *const *own,
    size_t n_own);

/* serviceview_needs_update is upstream's needsUpdate: NULL when the change
 * from old to s does not concern the balancer, else the field that does
 * ("type", "loadBalancerSourceRanges", "ports", "sessionAffinity",
 * "sessionAffinityConfig", "loadBalancerIP", "externalIPs", "annotations",
 * "uid", "externalTrafficPolicy", "healthCheckNodePort", "ipFamilies").
 * Ports compare name, protocol, port, nodePort, targetPort and appProtocol,
 * in order. */
const char *serviceview_needs_update(const struct serviceview_classes *cls,
    const struct kube_service *old, const struct kube_service *s);

/* serviceview_node_included is the stable node set predicate: not being
 * deleted, not excluded by label, not tainted ToBeDeletedByClusterAutoscaler. */
int serviceview_node_included(const struct kube_node *n);

/* serviceview_node_label_excludes: the exclusion label is present with a
 * value Go's strconv.ParseBool does not read as false. */
int serviceview_node_label_excludes(const struct kube_node *n);

/* serviceview_node_update_matters is upstream's shouldSyncUpdatedNode: the
 * exclusion label's verdict or the providerID changed. */
int serviceview_node_update_matters(const struct kube_node *old, const struct kube_node *n);

/* serviceview_node_labels_changed: the label sets differ (order aside). */
int serviceview_node_labels_changed(const struct kube_node *old, const struct kube_node *n);

/* serviceview_node_matches tells whether n's labels satisfy sel. */
int serviceview_node_matches(const struct labelsel *sel, const struct kube_node *n);

/* serviceview_nodes_digest sums up the backend set of nodes[0..n): the
 * names and providerIDs of the included Nodes (and, when sel is not NULL,
 * matching sel), whatever their order. Two sets have the same digest when
 * they hold the same names with the same providerIDs. */
uint64_t serviceview_nodes_digest(const struct kube_node *const *nodes, size_t n,
    const struct labelsel *sel);

/* serviceview_status_equal tells whether s's status.loadBalancer.ingress is
 * st's, in order (an IP entry's absent ipMode is the API server's VIP). */
int serviceview_status_equal(const struct kube_service *s, const struct cloud_lb_status *st);

/* servicectl_check_result checks a provider's answer for s before anything
 * of it is written: at most CLOUD_LB_INGRESS_MAX entries, each an IP (and
 * an ipMode of "", VIP or Proxy) or a DNS hostname that is not an IP; at
 * most CLOUD_LB_ANNOTATIONS_MAX annotations with qualified-name keys.
 * ERR_INVALID naming the Service and the field. */
int servicectl_check_result(const struct kube_service *s, const struct cloud_lb_result *r,
    struct errbuf *e);

/* serviceview_status_patch builds {"status":{"loadBalancer":{"ingress":...}}}
 * (ingress null when st has none; an IP entry's ipMode VIP unless given). */
json_object *serviceview_status_patch(const struct cloud_lb_status *st);

/* serviceview_meta_patch builds the merge patch of s's metadata: the
 * finalizer added (finalizer 1) or removed (-1) or left (0), and r's
 * annotations (NULL: none) where they differ from s's. Returns NULL when
 * nothing differs. */
json_object *serviceview_meta_patch(const struct kube_service *s, int finalizer,
    const struct cloud_lb_result *r);

#endif
