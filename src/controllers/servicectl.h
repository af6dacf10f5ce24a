/* servicectl.h - the service (load balancer) controller: a load balancer from
 * the provider for every Service of type LoadBalancer it serves (its class
 * one of --load-balancer-class's, or none unless class_only), its address in
 * status.loadBalancer, and its cleanup behind a finalizer; upstream's
 * semantics, with the differences docs/internals.md ("The service
 * controller") lists, and the metrics it names. Contract: leader only;
 * servicectl_new registers the handlers before the reflectors start,
 * servicectl_start waits for the caches and runs the workers and the drift
 * checks, servicectl_stop returns once no sync is in progress (then nothing
 * more is written); thread-safe, one lock never held across I/O or a
 * provider call. */
#ifndef BOOTCCM_CONTROLLERS_SERVICECTL_H
#define BOOTCCM_CONTROLLERS_SERVICECTL_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "cloud.h"
#include "controllers/serviceview.h"
#include "base/err.h"
#include "kube/client.h"
#include "kube/events.h"
#include "kube/node.h"
#include "kube/reflector.h"
#include "kube/service.h"
#include "config/kubeconfig.h"
#include "base/labelsel.h"

#define SERVICECTL_CLASSES_MAX 16       /* --load-balancer-class values */


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

#endif
