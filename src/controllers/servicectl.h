/* servicectl.h - the service (load balancer) controller: a load balancer from
 * the provider for every Service of type LoadBalancer it serves, its address
 * in status.loadBalancer, and its cleanup behind a finalizer.
 *
 * Upstream semantics (k8s.io/cloud-provider controllers/service, see
 * upstream-ccm.md) with bootccm's differences, each tested:
 * - which Services: type LoadBalancer with no spec.loadBalancerClass (unless
 *   class_only) or one of the configured classes (--load-balancer-class,
 *   repeatable). Upstream treats every class as "not ours";
 * - a sync (level-triggered, from the Service cache; one worker per key):
 *   Event EnsuringLoadBalancer, the finalizer
 *   service.kubernetes.io/load-balancer-cleanup added BEFORE the provider's
 *   ensure, ensure with the backend Nodes, the annotations the provider asks
 *   for (only those that differ), then services/NS/NAME/status
 *   (status.loadBalancer with ipMode) only when it differs, Event
 *   EnsuredLoadBalancer. Every write is a JSON merge patch behind the
 *   resourceVersion the sync read (or the previous write returned): a
 *   conflict waits for the cache's newer version. A provider failure is a
 *   SyncLoadBalancerFailed Event with its message and a retry on the key's
 *   backoff (RATELIMITER_SERVICE_*: 5 s doubling to 300 s); the provider's
 *   answer is checked before anything is written (ingress IPs, hostnames,
 *   ipMode, annotation keys): a bad one is refused naming the field.
 *   ERR_IMPLEMENTED_ELSEWHERE is a no-op. The annotations the provider sets
 *   or removes are its output: their change alone is no change of the
 *   Service (the controller's own write would re-sync it otherwise);
 * - a quiet sync: a Service that already carries the finalizer and a status,
 *   synced for no change of its own (the controller started, or leadership
 *   moved), records no Event and writes nothing when the provider's answer
 *   matches what it has: a restart writes nothing;
 * - cleanup (the Service has the finalizer and is being deleted or no longer
 *   served): DeletingLoadBalancer, ensure_deleted (idempotent, so no get
 *   first), the status cleared when anything is left to clear (not for a
 *   Service that goes away with the finalizer), then the finalizer removed
 *   with the provider's annotations, DeletedLoadBalancer. A provider
 *   failure is a DeleteLoadBalancerFailed Event (upstream says
 *   SyncLoadBalancerFailed) and the finalizer stays: no provider error ever
 *   loses it. A Service that vanished without its cleanup (its
 *   finalizer removed by someone else) or came back under a new uid has its
 *   last ensured balancer deleted;
 * - backends: the Nodes not being deleted, without the label
 *   node.kubernetes.io/exclude-from-external-load-balancers (a value Go's
 *   ParseBool reads as false includes them), without the taint
 *   ToBeDeletedByClusterAutoscaler; readiness is not a filter, Nodes without
 *   a providerID are included. A Node added or deleted, or one whose
 *   exclusion label result or providerID changed, re-checks every served
 *   Service: where the set of backend names and providerIDs changed since
 *   its last ensure or update, update_hosts (ensure when the provider has
 *   none), with UpdatedLoadBalancer / UpdateLoadBalancerFailed (then a full
 *   ensure on the key's backoff) / UnAvailableLoadBalancer (no Nodes);
 * - node-label selectors: when the provider's node_selector names one for a
 *   Service, a Node whose labels start or stop matching it re-checks that
 *   Service, whose backend set is compared as the matching Nodes (the
 *   provider still gets every backend Node, and picks; upstream ignores
 *   label changes: hcloud-ccm #519);
 * - drift repair: every sync_period one verify call for every served Service
 *   (or, without verify, a get each: existence and status compared), and a
 *   full ensure of what drifted;
 * - observe: the provider hears of every Service (served or not) from the
 *   cache's handlers, leader or not, so its view is complete before the
 *   first ensure; when it reports something freed, or a cleanup succeeded,
 *   every Service whose last ensure answered ERR_UNAVAILABLE is synced at
 *   once instead of after its backoff.
 * Leader only: servicectl_new registers the handlers before the reflectors
 * start; servicectl_start (leading) waits for the Service and Node caches,
 * queues every served Service and starts the workers; servicectl_stop
 * returns once no sync is in progress. Thread-safe: one lock for the
 * per-Service state, never held across I/O or a provider call, and one
 * that lets one sync at a time build the snapshot of the Node cache the
 * syncs of a Node generation share.
 *
 * Metrics: the work queue's (name="service"), upstream's
 * service_controller_loadbalancer_sync_total (update_hosts calls),
 * service_controller_nodesync_error_total and
 * service_controller_update_loadbalancer_host_latency_seconds, and
 * bootccm_service_syncs_total{result} (ensured, unchanged, hosts-updated,
 * deleted, implemented-elsewhere, unavailable, failed, conflict),
 * bootccm_service_drifted_total. */
#ifndef BOOTCCM_CONTROLLERS_SERVICECTL_H
#define BOOTCCM_CONTROLLERS_SERVICECTL_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "cloud.h"
#include "err.h"
#include "kube/client.h"
#include "kube/events.h"
#include "kube/node.h"
#include "kube/reflector.h"
#include "kube/service.h"
#include "kubeconfig.h"
#include "labelsel.h"

#define SERVICECTL_FINALIZER "service.kubernetes.io/load-balancer-cleanup"
#define SERVICECTL_LABEL_EXCLUDE "node.kubernetes.io/exclude-from-external-load-balancers"
#define SERVICECTL_TAINT_TO_BE_DELETED "ToBeDeletedByClusterAutoscaler"
#define SERVICECTL_CLASSES_MAX 16       /* --load-balancer-class values */

/* Which Services the controller serves, besides their type. */
struct servicectl_classes {
	const char *const *names;       /* spec.loadBalancerClass values served */
	size_t n;
	int only;                       /* class-less Services are not served */
};

struct servicectl_config {
	struct kubeconfig *kc;          /* borrowed; outlives the controller */
	struct reflector *services;     /* not started yet: handlers are added */
	struct reflector *nodes;        /* likewise */
	const struct cloud_provider *provider;
	void *provider_state;
	struct events *events;          /* NULL: no Events */
	const char *cluster_name;       /* --cluster-name */
	const char *classes;            /* --load-balancer-class: ","-separated, or NULL */
	int class_only;                 /* --load-balancer-class-only */
	int workers;                    /* --concurrent-service-syncs */
	int64_t sync_period_ns;         /* --service-sync-period: drift checks */
	const char *user_agent;         /* NULL: "bootccm" */
	/* asked before each write that needs the leader Lease (the daemon:
	 * lease_is_leader); see kube_client_set_write_gate. NULL: always sent */
	kube_write_gate write_gate;
	void *write_gate_arg;
};

struct servicectl;

/* servicectl_new checks and copies cfg and registers the controller's
 * handlers on cfg->services and cfg->nodes (neither started yet). Returns 0,
 * ERR_NOT_IMPLEMENTED (the provider has no load balancers, no ensure or
 * ensure_deleted, or neither get nor verify), ERR_INVALID (an incomplete
 * configuration, or classes servicectl_classes_check refuses), or the
 * reflector's error. */
int servicectl_new(const struct servicectl_config *cfg, struct servicectl **ret,
    struct errbuf *e);

/* servicectl_classes_check checks --load-balancer-class's values (list,
 * ","-joined, or NULL) and --load-balancer-class-only (only): qualified
 * names, at most SERVICECTL_CLASSES_MAX, and at least one when only is set.
 * ERR_INVALID naming the flag. */
int servicectl_classes_check(const char *list, int only, struct errbuf *e);

/* servicectl_start starts the controller's workers and its drift checker
 * (the leader's part): they wait for both caches, then every Service served
 * or needing cleanup is synced. Returns 0, or ERR_INTERNAL (a thread did not
 * start: the controller is stopped again). Starting a started controller
 * does nothing. */
int servicectl_start(struct servicectl *c, struct errbuf *e);

/* servicectl_stop stops it: no sync is in progress and none starts once it
 * returns (a request in flight ends first; its retries are abandoned). The
 * per-Service state is dropped: the next start syncs every Service again,
 * quietly. Idempotent; servicectl_start may follow. */
void servicectl_stop(struct servicectl *c);

/* servicectl_retry_now retries at once, their backoff forgotten, the
 * Services waiting on a failure (wq_retry_now): called when the provider's
 * credentials changed. Nothing when not running; NULL is fine. */
void servicectl_retry_now(struct servicectl *c);

/* servicectl_free stops c and frees it. Only once neither reflector runs
 * any more (their handlers use c). NULL is fine. */
void servicectl_free(struct servicectl *c);

/* --- the pure parts, for tests -------------------------------------------- */

/* servicectl_wants is upstream's wantsLoadBalancer with the served classes:
 * type LoadBalancer and a class cls serves. */
int servicectl_wants(const struct servicectl_classes *cls, const struct kube_service *s);

/* servicectl_needs_cleanup: s carries the finalizer and is being deleted or
 * no longer wanted. */
int servicectl_needs_cleanup(const struct servicectl_classes *cls,
    const struct kube_service *s);

/* servicectl_needs_update is upstream's needsUpdate: NULL when the change
 * from old to s does not concern the balancer, else the field that does
 * ("type", "loadBalancerSourceRanges", "ports", "sessionAffinity",
 * "sessionAffinityConfig", "loadBalancerIP", "externalIPs", "annotations",
 * "uid", "externalTrafficPolicy", "healthCheckNodePort", "ipFamilies").
 * Ports compare name, protocol, port, nodePort, targetPort and appProtocol,
 * in order. */
const char *servicectl_needs_update(const struct servicectl_classes *cls,
    const struct kube_service *old, const struct kube_service *s);

/* servicectl_node_included is the stable node set predicate: not being
 * deleted, not excluded by label, not tainted ToBeDeletedByClusterAutoscaler. */
int servicectl_node_included(const struct kube_node *n);

/* servicectl_node_label_excludes: the exclusion label is present with a
 * value Go's strconv.ParseBool does not read as false. */
int servicectl_node_label_excludes(const struct kube_node *n);

/* servicectl_node_update_matters is upstream's shouldSyncUpdatedNode: the
 * exclusion label's verdict or the providerID changed. */
int servicectl_node_update_matters(const struct kube_node *old, const struct kube_node *n);

/* servicectl_node_labels_changed: the label sets differ (order aside). */
int servicectl_node_labels_changed(const struct kube_node *old, const struct kube_node *n);

/* servicectl_node_matches tells whether n's labels satisfy sel. */
int servicectl_node_matches(const struct labelsel *sel, const struct kube_node *n);

/* servicectl_backends_digest sums up the backend set of nodes[0..n): the
 * names and providerIDs of the included Nodes (and, when sel is not NULL,
 * matching sel), whatever their order. Two sets have the same digest when
 * they hold the same names with the same providerIDs. */
uint64_t servicectl_backends_digest(const struct kube_node *const *nodes, size_t n,
    const struct labelsel *sel);

/* servicectl_status_equal tells whether s's status.loadBalancer.ingress is
 * st's, in order (an IP entry's absent ipMode is the API server's VIP). */
int servicectl_status_equal(const struct kube_service *s, const struct cloud_lb_status *st);

/* servicectl_check_result checks a provider's answer for s before anything
 * of it is written: at most CLOUD_LB_INGRESS_MAX entries, each an IP (and
 * an ipMode of "", VIP or Proxy) or a DNS hostname that is not an IP; at
 * most CLOUD_LB_ANNOTATIONS_MAX annotations with qualified-name keys.
 * ERR_INVALID naming the Service and the field. */
int servicectl_check_result(const struct kube_service *s, const struct cloud_lb_result *r,
    struct errbuf *e);

/* servicectl_status_patch builds {"status":{"loadBalancer":{"ingress":...}}}
 * (ingress null when st has none; an IP entry's ipMode VIP unless given). */
json_object *servicectl_status_patch(const struct cloud_lb_status *st);

/* servicectl_meta_patch builds the merge patch of s's metadata: the
 * finalizer added (finalizer 1) or removed (-1) or left (0), and r's
 * annotations (NULL: none) where they differ from s's. Returns NULL when
 * nothing differs. */
json_object *servicectl_meta_patch(const struct kube_service *s, int finalizer,
    const struct cloud_lb_result *r);

#endif
