/* runner.h - a controller's threads: N workers on a work queue and an
 * optional periodic thread, started, stopped and freed in one place.
 *
 * Contract: runner_start starts cfg->workers threads that each take keys
 * from cfg->q and run cfg->sync on them, client-go's processNextWorkItem: a
 * sync that returns 0 forgets the key's backoff, one that fails (< 0) puts
 * the key back rate-limited, and RUNNER_HANDLED leaves the key's requeue to
 * the sync itself (which queued, delayed or forgot it); the key is done in
 * every case. With cfg->every, one more thread runs every(arg) each
 * period_ns until the stop (wait.Until: the period runs from the end of a
 * run). Every thread first calls cfg->wait, if set, and ends when it returns
 * 0. runner_stop requests cfg->stop, shuts the queue down, calls on_stop
 * (to abort what no stop reaches), and joins every thread. The runner owns
 * neither the queue nor the stop. Never logs. */
#ifndef BOOTCCM_KUBE_RUNNER_H
#define BOOTCCM_KUBE_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include "base/stop.h"
#include "kube/client.h"
#include "kube/workqueue.h"

/* A sync's answer: the sync settled the key's requeue itself. */
#define RUNNER_HANDLED 1

struct runner_config {
	struct stop *stop;            /* requested by runner_stop; the periodic sleeps */
	void *arg;                    /* every hook's first argument */
	size_t stack_size;            /* 0: the default */
	int (*wait)(void *arg);       /* optional: before any work; 0 ends the thread */

	/* the workers, when workers > 0 */
	struct wq *q;
	int workers;
	/* with kc, each worker's context is an API client of its own
	 * (kube_client_new with stop and the gate), freed when it ends */
	struct kubeconfig *kc;
	const char *user_agent;
	kube_write_gate gate;
	void *gate_arg;
	/* optional: a worker's own context otherwise; < 0 ends the worker */
	int (*worker_init)(void *arg, void **ctx);
	int (*sync)(void *arg, void *ctx, const char *key);
	/* optional: after each key is done, with what its sync returned */
	void (*after)(void *arg, int rc);
	void (*worker_cleanup)(void *arg, void *ctx);

	/* the periodic thread, when every != NULL */
	void (*every)(void *arg);
	int64_t period_ns;
	void (*every_begin)(void *arg); /* optional: once, after wait */
	int every_first;              /* run once before the first sleep */
	void (*every_end)(void *arg); /* optional: when the loop ends on the stop */

	void (*on_stop)(void *arg);   /* optional: in runner_stop, before the joins */
};

struct runner;

/* runner_start starts the threads of cfg (copied). Returns 0, ERR_INVALID
 * (workers without a queue or sync, no stop, a periodic thread without a
 * period) or ERR_INTERNAL (a thread could not start: those started are
 * stopped and joined, and cfg->stop is left requested). */
int runner_start(const struct runner_config *cfg, struct runner **ret);

/* runner_stop stops and joins the threads (see the contract). Idempotent;
 * NULL is fine. */
void runner_stop(struct runner *r);

/* runner_free stops r if needed and frees it. NULL is fine. */
void runner_free(struct runner *r);

#endif
