/* routectl.h - the route controller: a route in the cloud for every entry of
 * every Node's spec.podCIDRs inside the cluster CIDRs, stale and blackholed
 * routes inside them deleted, and each Node's NetworkUnavailable condition
 * saying whether its routes exist; upstream's semantics, with the
 * differences docs/internals.md ("The route controller") lists, and the
 * metrics it names. Contract: leader only; routectl_new registers the Node
 * handlers before the reflector starts, routectl_start and routectl_stop
 * follow leadership any number of times; one pass thread, event-driven with
 * a period; nothing is written after routectl_stop returns. */
#ifndef BOOTCCM_CONTROLLERS_ROUTECTL_H
#define BOOTCCM_CONTROLLERS_ROUTECTL_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "cloud.h"
#include "base/err.h"
#include "kube/client.h"
#include "kube/events.h"
#include "kube/node.h"
#include "kube/reflector.h"
#include "config/kubeconfig.h"
#include "base/netaddr.h"

#define ROUTECTL_CIDRS_MAX 2            /* cluster CIDRs: one per IP family */
#define ROUTECTL_ROUTES_MAX 100000      /* routes one listing may return */
#define ROUTECTL_CONDITION "NetworkUnavailable"
#define ROUTECTL_REASON_CREATED "RouteCreated"      /* upstream's reasons */
#define ROUTECTL_REASON_NOT_CREATED "NoRouteCreated"

struct routectl_config {
	struct kubeconfig *kc;          /* borrowed; outlives the controller */
	struct reflector *nodes;        /* not started yet: handlers are added */
	const struct cloud_provider *provider;
	void *provider_state;
	struct events *events;          /* NULL: no Events */
	const char *cluster_name;       /* --cluster-name (NULL: "kubernetes") */
	const char *cluster_cidr;       /* --cluster-cidr: one or two CIDRs */
	int64_t period_ns;              /* --route-reconciliation-period */
	int concurrency;                /* --concurrent-route-syncs */
	const char *user_agent;         /* NULL: "bootccm" */
	/* asked before each write that needs the leader Lease (the daemon:
	 * lease_is_leader); see kube_client_set_write_gate. NULL: always sent */
	kube_write_gate write_gate;
	void *write_gate_arg;
};

struct routectl;

/* routectl_new parses cfg->cluster_cidr, copies cfg and registers the
 * controller's handlers on cfg->nodes (which must not be started yet).
 * Returns 0, ERR_NOT_IMPLEMENTED (the provider has no routes group, or
 * one without list, create or delete: nothing registered, *ret untouched),
 * ERR_INVALID (no or a bad cluster CIDR, a concurrency below 1, a period
 * not above 0, no kubeconfig or cache) or the reflector's error. */
int routectl_new(const struct routectl_config *cfg, struct routectl **ret,
    struct errbuf *e);

/* routectl_start starts a pass thread (the first pass waits for the Node
 * cache to sync). Nothing when already started. Returns 0, or ERR_INTERNAL
 * (the queue or the thread did not start: not started). */
int routectl_start(struct routectl *c, struct errbuf *e);

/* routectl_stop ends the pass in progress (its API requests aborted, no
 * further provider call begun; calls in flight are waited for) and joins
 * the thread: nothing is written after it returns. Idempotent; the
 * controller may be started again. */
void routectl_stop(struct routectl *c);

/* routectl_retry_now runs a pass at once (or right after the one under
 * way), not waiting for the period: called when the provider's credentials
 * changed. Nothing when not running; NULL is fine. */
void routectl_retry_now(struct routectl *c);

/* routectl_free stops c if needed and frees it. NULL is fine. Its
 * handlers stay registered on the reflector: stop or free the reflector
 * first. */
void routectl_free(struct routectl *c);

/* --- the pure parts, for tests -------------------------------------------- */

/* routectl_cidrs_parse parses a --cluster-cidr value as upstream's
 * processCIDRs: comma-separated CIDRs (surrounding spaces trimmed, host bits
 * allowed and cleared, as Go's net.ParseCIDR), at most two, and two only
 * when one is IPv4 and the other IPv6. Returns 0 with *ret_n set, or
 * ERR_INVALID with a message naming --cluster-cidr (an empty value too). */
int routectl_cidrs_parse(const char *s, struct netprefix out[ROUTECTL_CIDRS_MAX],
    size_t *ret_n, struct errbuf *e);

/* routectl_responsible is upstream's isResponsibleForRoute: whether dest's
 * first or last address lies in one of the n cluster CIDRs. The same test
 * decides which podCIDRs get routes, so no route is ever created that a
 * later pass would not consider its own. */
int routectl_responsible(const struct netprefix *cidrs, size_t n,
    const struct netprefix *dest);

/* What a pass does with one podCIDR of one Node. */
enum routectl_want_state {
	ROUTECTL_WANT_EXISTS,     /* a route to this Node for it exists (not blackholed) */
	ROUTECTL_WANT_CREATE,     /* missing: to create */
	ROUTECTL_WANT_CREATED,    /* created by this pass */
	ROUTECTL_WANT_FAILED,     /* the create failed */
	ROUTECTL_WANT_OUTSIDE,    /* outside every cluster CIDR: never routed */
	ROUTECTL_WANT_INVALID,    /* not a CIDR: never routed */
};

/* What a pass does with one route of the listing. */
enum routectl_route_verdict {
	ROUTECTL_ROUTE_KEEP,      /* a Node wants it */
	ROUTECTL_ROUTE_DELETE,    /* inside the cluster CIDRs, blackholed or unwanted */
	ROUTECTL_ROUTE_FOREIGN,   /* outside the cluster CIDRs: not ours */
	ROUTECTL_ROUTE_UNPARSABLE, /* its destination is no CIDR: left alone */
};

struct routectl_want {
	size_t node;              /* index into the plan's nodes */
	size_t cidr;              /* index into that Node's podCIDRs */
	enum routectl_want_state state;
};

struct routectl_plan {
	struct routectl_want *wants;   /* grouped by Node, in the Nodes' order */
	size_t nwants;
	size_t *node_first;            /* Node i's wants: [node_first[i], node_first[i + 1]) */
	enum routectl_route_verdict *verdicts; /* one per listed route */
	unsigned char *targeted;       /* per Node: some listed route targets it */
	size_t nnodes;
};

/* routectl_plan compares n Nodes' podCIDRs with the listed routes inside
 * the cluster CIDRs (a repeated podCIDR of one Node counts once). Fills
 * *ret (free with routectl_plan_free). Out of memory is fatal. */
void routectl_plan(const struct netprefix *cidrs, size_t ncidrs,
    const struct kube_node *const *nodes, size_t n, const struct cloud_route *routes,
    size_t nroutes, struct routectl_plan *ret);
void routectl_plan_free(struct routectl_plan *p);

/* routectl_node_routed tells, once the plan's creates are done, whether
 * Node i's routes all exist: 1, 0 (one is missing, failed or never routed;
 * or the Node has no podCIDRs but a route targets it, as upstream), or -1
 * (no podCIDRs and no routes: its condition is none of our business). */
int routectl_node_routed(const struct routectl_plan *p, size_t i);

/* What the condition write does (routectl_condition_decide). */
enum routectl_cond {
	ROUTECTL_COND_KEEP,       /* ours and already as wanted: write nothing */
	ROUTECTL_COND_FOREIGN,    /* another component's (a CNI): never touched */
	ROUTECTL_COND_SET,        /* absent or ours and different: write it */
};

/* routectl_condition_decide decides from the Node's NetworkUnavailable
 * condition (status KUBE_NODE_READY_NONE: absent; reason NULL: none) and
 * whether its routes all exist. The condition is ours when its reason is
 * RouteCreated or NoRouteCreated; any other reason, none included, is
 * another component's. Pure. */
enum routectl_cond routectl_condition_decide(enum kube_node_ready status,
    const char *reason, int routed);

/* routectl_condition_patch builds, from a Node's JSON as the API server
 * has it (borrowed), the JSON patch (without the resourceVersion test)
 * that sets its NetworkUnavailable condition for routed, with now_s
 * (seconds since the epoch) as lastHeartbeatTime and, when the status
 * changes, lastTransitionTime. Returns KUBE_PATCH_JSON with *ret_ops (the
 * caller's), KUBE_PATCH_NOOP (nothing to write: as wanted, or another
 * component's), or ERR_INVALID naming node and field. */
int routectl_condition_patch(json_object *node, int routed, int64_t now_s,
    json_object **ret_ops, struct errbuf *e);

/* routectl_node_triggers tells whether a change to a Node (old NULL: it
 * was added; new_node NULL: deleted) calls for a pass: KEP-5237's triggers
 * (added, deleted, podCIDRs or addresses changed), for a Node that has or
 * had podCIDRs. A Node without any, before and after, has nothing to route:
 * its registration does not spend the rate limit that the podCIDR its
 * allocator writes a moment later needs. */
int routectl_node_triggers(const struct kube_node *old_node,
    const struct kube_node *new_node);

#endif
