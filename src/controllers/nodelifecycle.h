/* nodelifecycle.h - the cloud-node-lifecycle controller: every
 * --node-monitor-period, over the cached Nodes, remove the shutdown taint
 * from Ready nodes, add it to NotReady ones whose instance is shut down, and
 * delete the Node of an instance the provider definitively says is gone.
 *
 * Contract (design.md invariant 6, "never delete on doubt"): a Node is
 * deleted only when instances.exists of a CLOUD_DEFINITIVE provider answers
 * 0 (or ERR_NOT_FOUND, see cloud_err_allows_delete), never on an error, a
 * timeout, a rate limit, ERR_NOT_IMPLEMENTED or metadata-only knowledge, and
 * never while the Node is younger than grace_period_ns (since its
 * metadata.creationTimestamp). Runs only on the leader: the daemon starts it
 * when it starts leading and stops it (nodelifecycle_stop returns only when
 * no write can follow) when it stops. Does not start when the provider has
 * no instances group or no exists operation. Events DeletingNode and
 * DeletingNodeFailed like upstream.
 *
 * A pass, over a snapshot of the cache (store_list), node by node, as
 * nodelifecycle_decide (the whole policy, a pure function) says:
 * - Ready=True: remove the shutdown taint (NoSchedule) if present. Only
 *   True counts as ready: a Node without a Ready condition yet is Unknown,
 *   as upstream defaults it;
 * - otherwise (a Node being deleted is skipped) instances.exists: an error,
 *   ERR_NOT_IMPLEMENTED or a non-definitive "gone" leaves the Node alone; a
 *   definitive "gone" (0 or ERR_NOT_FOUND) past the grace period records
 *   DeletingNode and DELETEs the Node with DeleteOptions preconditions on
 *   the cached uid and resourceVersion (a Node registered again under the
 *   name, or changed since, is not deleted; the next pass looks again);
 *   an existing instance is asked instances.shutdown (when the provider
 *   has it): 1 adds the shutdown taint (no value, NoSchedule) if missing.
 * Taint writes are JSON patches (or a merge patch for a Node without
 * taints) with the cached resourceVersion as precondition: a conflict waits
 * for the next pass. The creationTimestamp's lost fraction is not counted
 * in a Node's age, so a Node is never deleted early.
 * Logs: the first ERR_NOT_IMPLEMENTED once per controller; a pass with
 * provider errors warns once per run of failing passes (each node's error
 * at -v=2). Metrics: bootccm_node_lifecycle_deletions_total,
 * bootccm_node_lifecycle_deletions_refused_total{reason} (error,
 * not-implemented, not-definitive, grace-period; one per Node and pass),
 * bootccm_node_lifecycle_pass_duration_seconds (completed passes only). */
#ifndef BOOTCCM_CONTROLLERS_NODELIFECYCLE_H
#define BOOTCCM_CONTROLLERS_NODELIFECYCLE_H

#include <stdint.h>

#include "cloud.h"
#include "base/err.h"
#include "kube/client.h"
#include "kube/events.h"
#include "kube/node.h"
#include "kube/reflector.h"
#include "config/kubeconfig.h"

#define NODELIFECYCLE_SHUTDOWN_TAINT "node.cloudprovider.kubernetes.io/shutdown"

/* What a pass does with one Node, or what it must ask the provider first
 * (nodelifecycle_decide). */
enum nodelifecycle_verdict {
	NODELIFECYCLE_READY,              /* Ready=True: remove the shutdown taint if present */
	NODELIFECYCLE_SKIP,               /* being deleted already */
	NODELIFECYCLE_ASK_EXISTS,         /* not Ready: ask instances.exists */
	NODELIFECYCLE_ASK_SHUTDOWN,       /* the instance exists: ask instances.shutdown */
	NODELIFECYCLE_KEEP,               /* exists, running or cannot tell: nothing */
	NODELIFECYCLE_SHUTDOWN,           /* exists, shut down: add the shutdown taint if missing */
	NODELIFECYCLE_DELETE,             /* definitively gone, past the grace period */
	NODELIFECYCLE_REFUSE_ERROR,       /* exists failed: no decision */
	NODELIFECYCLE_REFUSE_NOT_IMPLEMENTED, /* the provider cannot tell */
	NODELIFECYCLE_REFUSE_NOT_DEFINITIVE,  /* "gone" from a provider that cannot know */
	NODELIFECYCLE_REFUSE_GRACE,       /* gone, but the Node is too young (or its age unknown) */
};

/* What is known of one Node when deciding: its own state, and the
 * provider's answers once asked. */
struct nodelifecycle_facts {
	enum kube_node_ready ready;       /* only KUBE_NODE_READY_TRUE is ready */
	int deleting;                     /* metadata.deletionTimestamp is set */
	int64_t age_ns;                   /* since its creation; < 0: unknown */
	int exists_asked;                 /* exists_rc and exists hold instances.exists's answer */
	int exists_rc;
	int exists;
	int shutdown_asked;               /* shutdown_rc and shutdown hold instances.shutdown's */
	int shutdown_rc;
	int shutdown;
};

struct nodelifecycle_config {
	struct kubeconfig *kc;          /* borrowed; outlives the controller */
	struct reflector *nodes;        /* the Node cache (synced or not yet) */
	const struct cloud_provider *provider;
	void *provider_state;
	struct events *events;          /* NULL: no Events */
	int64_t monitor_period_ns;      /* --node-monitor-period */
	int64_t grace_period_ns;        /* --node-deletion-grace-period */
	const char *user_agent;         /* NULL: "bootccm" */
	/* asked before each write that needs the leader Lease (the daemon:
	 * lease_is_leader); see kube_client_set_write_gate. NULL: always sent */
	kube_write_gate write_gate;
	void *write_gate_arg;
};

struct nodelifecycle;

/* nodelifecycle_decide is the whole policy for one Node of a pass, design
 * invariant 6 ("never delete on doubt"): a Ready Node is READY; a Node being
 * deleted is skipped; otherwise the provider is asked whether the instance
 * exists (ASK_EXISTS until f says it was). An existing instance is asked
 * whether it is shut down when p has the operation (ASK_SHUTDOWN), and is
 * SHUTDOWN only on a clean "yes"; any error there is KEEP. Only 0 with
 * exists false or ERR_NOT_FOUND (upstream's InstanceNotFound), from a
 * CLOUD_DEFINITIVE provider (cloud_err_allows_delete), for a Node whose
 * known age is at least grace_ns, is DELETE; ERR_NOT_IMPLEMENTED, any other
 * error (retryable or not: timeouts, 429, 5xx, permanent) and a
 * non-definitive "gone" are refusals. Pure: no I/O, no clock. */
enum nodelifecycle_verdict nodelifecycle_decide(const struct cloud_provider *p,
    int64_t grace_ns, const struct nodelifecycle_facts *f);

/* nodelifecycle_start copies cfg and starts the controller's thread; its
 * first pass waits for the Node cache to sync. Returns 0,
 * ERR_NOT_IMPLEMENTED (the provider cannot tell whether instances exist:
 * nothing is started, *ret is NULL), ERR_INTERNAL (no kubeconfig or cache,
 * or a thread that did not start) or the API client's error. */
int nodelifecycle_start(const struct nodelifecycle_config *cfg,
    struct nodelifecycle **ret, struct errbuf *e);

/* nodelifecycle_stop ends the pass in progress (abandoning its retries) and
 * joins the thread: no write is sent after it returns. Idempotent. */
void nodelifecycle_stop(struct nodelifecycle *c);

/* nodelifecycle_free stops c if needed and frees it. NULL is fine. */
void nodelifecycle_free(struct nodelifecycle *c);

#endif
