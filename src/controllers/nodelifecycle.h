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
 * DeletingNodeFailed like upstream. */
#ifndef BOOTCCM_CONTROLLERS_NODELIFECYCLE_H
#define BOOTCCM_CONTROLLERS_NODELIFECYCLE_H

#include <stdint.h>

#include "cloud.h"
#include "err.h"
#include "kube/events.h"
#include "kube/reflector.h"
#include "kubeconfig.h"

#define NODELIFECYCLE_SHUTDOWN_TAINT "node.cloudprovider.kubernetes.io/shutdown"

struct nodelifecycle_config {
	struct kubeconfig *kc;          /* borrowed; outlives the controller */
	struct reflector *nodes;        /* the Node cache (synced or not yet) */
	const struct cloud_provider *provider;
	void *provider_state;
	struct events *events;          /* NULL: no Events */
	int64_t monitor_period_ns;      /* --node-monitor-period */
	int64_t grace_period_ns;        /* --node-deletion-grace-period */
	const char *user_agent;         /* NULL: "bootccm" */
};

struct nodelifecycle;

/* nodelifecycle_start copies cfg and starts the controller's thread; its
 * first pass waits for the Node cache to sync. Returns 0,
 * ERR_NOT_IMPLEMENTED (the provider cannot tell whether instances exist:
 * nothing is started, *ret is NULL), ERR_NOMEM or ERR_INTERNAL. */
int nodelifecycle_start(const struct nodelifecycle_config *cfg,
    struct nodelifecycle **ret, struct errbuf *e);

/* nodelifecycle_stop ends the pass in progress (abandoning its retries) and
 * joins the thread: no write is sent after it returns. Idempotent. */
void nodelifecycle_stop(struct nodelifecycle *c);

/* nodelifecycle_free stops c if needed and frees it. NULL is fine. */
void nodelifecycle_free(struct nodelifecycle *c);

#endif
