/* nodectl.h - the cloud-node controller: initialize Nodes registered with the
 * node.cloudprovider.kubernetes.io/uninitialized taint from the provider
 * (and, for the local node, from the instance metadata service when the
 * provider cannot answer), and refresh initialized Nodes' addresses.
 *
 * Upstream semantics (upstream-ccm.md) with bootccm's differences:
 * - addresses go to nodes/NAME/status FIRST (a merge patch with a
 *   resourceVersion precondition, only when they change), then one JSON
 *   patch of the Node behind a test of the resourceVersion the status write
 *   returned (labels GA + beta, providerID when empty, the taint removed by
 *   index behind a test of its key, so the other taints keep their
 *   timeAdded): at most two
 *   writes per initialization, and no Node is ever untainted without its
 *   addresses. A conflict re-reads the Node and rebuilds both;
 * - scope: every replica initializes its own node (local_node): its key is
 *   queued at start, and its sync reads it from the API server (GET) while
 *   the cache does not have it yet, so it never waits for the initial LIST;
 *   the leader (nodectl_set_leading) handles every Node. One way in: every
 *   sync goes through the work queue, which never hands a key to two
 *   workers. resourceVersion preconditions make a leader and the local
 *   replica racing on one Node harmless; a cached version this replica has
 *   already written over (the one it started from, or the one between its
 *   two writes) is not synced again, however late the watch brings it (a
 *   worker reads a cached copy and its mark in one step);
 * - the local node asks the provider and the `fallback` provider (the
 *   metadata provider) at once (noderace.h), and the first complete, valid
 *   answer initializes it: a black-holed or slow cloud API costs nothing.
 *   The Synced Event and the bootccm_node_initializations_total{source}
 *   label say which source answered, and when the fallback did, what the
 *   provider had done (not answered yet, or its error). A provider answer
 *   that comes after the fallback's won is only compared: when it disagrees
 *   (providerID, addresses, instance type, zone, region), a Warning Event
 *   (reason ProviderDisagrees) names the fields; nothing is rewritten.
 *   Remote nodes wait for the provider;
 * - the periodic address refresh (leader only) uses instances.list when the
 *   provider has it: O(N / page size) cloud calls per period.
 * Failures keep the taint, record a Warning Event (reason InitializationFailed)
 * saying why, and retry with per-key backoff (the local node's capped at
 * NODECTL_LOCAL_RETRY_MAX_NS so a metadata service that comes up late, or a
 * Node not registered or an RBAC binding not created yet, is seen soon).
 *
 * Metrics: node_controller_cloud_provider_taint_removal_delay_seconds
 * (upstream's name: seconds from the Node's creation to the taint's removal),
 * bootccm_node_initializations_total{source},
 * bootccm_node_initialization_failures_total{reason}. */
#ifndef BOOTCCM_CONTROLLERS_NODECTL_H
#define BOOTCCM_CONTROLLERS_NODECTL_H

#include <stdint.h>
#include <json-c/json.h>

#include "base/clock.h"
#include "cloud.h"
#include "base/dynbuf.h"
#include "base/err.h"
#include "kube/client.h"
#include "kube/events.h"
#include "kube/node.h"
#include "kube/reflector.h"
#include "config/kubeconfig.h"

#define NODECTL_LOCAL_RETRY_MAX_NS (2 * NS_PER_S) /* the local node's longest retry delay */

struct nodectl_config {
	struct kubeconfig *kc;          /* borrowed; outlives the controller */
	struct reflector *nodes;        /* not started yet: handlers are added */
	const struct cloud_provider *provider;
	void *provider_state;
	const struct cloud_provider *fallback; /* local node only; NULL: none */
	void *fallback_state;
	struct events *events;          /* NULL: no Events */
	const char *local_node;         /* --node-name */
	int workers;                    /* --concurrent-node-syncs */
	int64_t refresh_period_ns;      /* --node-status-update-frequency */
	const char *user_agent;         /* NULL: "bootccm" */
	/* asked before each write that needs the leader Lease (the daemon:
	 * lease_is_leader); see kube_client_set_write_gate. NULL: always sent */
	kube_write_gate write_gate;
	void *write_gate_arg;
	/* tests only (NULL in the daemon): called by a worker once it has read
	 * a Node from the cache, and whether this replica wrote over that
	 * version, before it acts on its copy n; a test makes the watch deliver
	 * a newer version at that point */
	void (*cached_read_hook)(const struct kube_node *n, void *arg);
	/* tests only: called by that worker once it is done with n (r: what
	 * its sync returned), so a test knows that whatever it wrote from n
	 * has been answered */
	void (*cached_done_hook)(const struct kube_node *n, int r, void *arg);
	void *hook_arg;
};

struct nodectl;

/* nodectl_new registers the controller's handlers on cfg->nodes (which must
 * not be started yet) and copies cfg. Returns 0, ERR_NOT_IMPLEMENTED (the
 * provider has no instances.metadata), ERR_INVALID, or the work queue's or
 * the reflector's error. */
int nodectl_new(const struct nodectl_config *cfg, struct nodectl **ret,
    struct errbuf *e);

/* nodectl_start queues the local node and starts the workers and the
 * refresher at once: they do not wait for the Node cache to sync (the local
 * node is read directly until it has). Returns 0, ERR_INVALID (a local node
 * name the queue cannot hold) or ERR_INTERNAL (a thread did not start). */
int nodectl_start(struct nodectl *c, struct errbuf *e);

/* nodectl_set_leading widens the scope to every Node (1) or narrows it back
 * to the local node (0). Narrowing returns only when no sync of another
 * node is in progress, so nothing is written for it afterwards. */
void nodectl_set_leading(struct nodectl *c, int leading);

/* nodectl_retry_now retries at once, their backoff forgotten, the nodes
 * waiting on a failure (wq_retry_now): called when what they failed on
 * changed (the provider's credentials). NULL is fine. */
void nodectl_retry_now(struct nodectl *c);

/* nodectl_stop shuts the queue down, joins the workers, and joins the
 * local node's provider call when one is still running (abandoned for the
 * fallback's answer, or waited for): it returns once the provider gives up
 * on its struct cloud_config stop, so the provider's state may be freed
 * after it. Idempotent. */
void nodectl_stop(struct nodectl *c);

/* nodectl_free stops c and frees it. Only once the node reflector runs no
 * more (reflector_stop: its handlers use c); the cache may still be read by
 * the workers until they are joined here. NULL is fine. */
void nodectl_free(struct nodectl *c);

/* --- the pure parts, for tests -------------------------------------------- */

/* nodectl_addresses computes the Node's addresses from the instance's, with
 * upstream's rules: the addresses equal to the provided node IPs first, then
 * those of the types no node IP matched; the kubelet's Hostname kept when the
 * instance has none. out has room for CLOUD_ADDRS_MAX + 1. A provided node IP
 * the instance does not list is ERR_PERMANENT, a malformed one ERR_INVALID. */
int nodectl_addresses(const struct kube_node *n, const struct cloud_instance_metadata *m,
    struct cloud_address *out, size_t *ret_n, struct errbuf *e);

/* nodectl_node_ops builds the JSON patch (without the resourceVersion test)
 * of the second write: labels (GA and beta from the instance, overwritten
 * like upstream; additional labels only when absent and not under
 * kubernetes.io/ or k8s.io/), spec.providerID when the Node has none, the
 * KUBE_ANNOTATION_ADDRESS_SOURCE annotation (m->source, "" meaning
 * CLOUD_SOURCE_API), and the uninitialized taint removed (a test of its key
 * first; the other taints stay as they are, timeAdded included). m NULL:
 * only copy beta labels to missing GA ones (initialized nodes). Returns an
 * array, possibly empty. */
json_object *nodectl_node_ops(const struct kube_node *n,
    const struct cloud_instance_metadata *m);

/* nodectl_status_patch builds {"status":{"addresses":[...]}}. */
json_object *nodectl_status_patch(const struct cloud_address *a, size_t k);

/* nodectl_disagreement compares the provider's late answer with the one
 * that initialized n (won, the metadata fallback's): providerID, instance
 * type, zone and region where both say, and the addresses each would have
 * written (nodectl_addresses). Appends each field that differs, with both
 * values, to out ("zone (instance-metadata: a, provider: b); ...") and
 * returns how many differ: 0 when they agree. */
int nodectl_disagreement(const struct kube_node *n, const struct cloud_instance_metadata *won,
    const struct cloud_instance_metadata *late, struct dynbuf *out);

#endif
