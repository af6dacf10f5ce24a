/* noderace.h - the local node's instance metadata, asked of the provider and
 * of the metadata fallback at once: the first complete, valid answer wins.
 *
 * Contract: each source's blocking call runs on a thread of its own, and
 * the caller waits for the first valid answer: a hanging metadata service
 * never delays a provider that answers, nor a hanging provider the metadata
 * service. At most one call per source is outstanding at a time (a caller
 * that finds one running waits on that one instead of starting another, so
 * a black-holed cloud never piles up threads). When both have answered, the
 * provider's valid answer is preferred. A call that lost is abandoned:
 * nobody waits for it; when the provider's call ends after the fallback's
 * answer won, the late callback hears what it answered (to compare, never
 * to rewrite). A call's thread owns a reference to the Node it was asked
 * about and writes only into the race's own state, which lives until
 * noderace_free has joined the threads: the caller's stack is never touched
 * once it has returned. noderace_free therefore waits for both sources to
 * give up, which they do on the stop given to them in struct cloud_config;
 * free the race before the providers' state. Never logs. Out of memory is
 * fatal. */
#ifndef BOOTCCM_CONTROLLERS_NODERACE_H
#define BOOTCCM_CONTROLLERS_NODERACE_H

#include <stddef.h>

#include "cloud.h"
#include "base/err.h"
#include "kube/node.h"

struct noderace_config {
	const struct cloud_provider *provider;  /* with instances->metadata */
	void *provider_state;
	const struct cloud_provider *fallback;  /* with instances->metadata */
	void *fallback_state;
	/* valid tells whether m is an answer that can initialize n: 0, or a
	 * negative ERR_* code with the reason (an incomplete answer never wins) */
	int (*valid)(const struct kube_node *n, const struct cloud_instance_metadata *m,
	    struct errbuf *e);
	/* late hears of a provider call abandoned for the fallback's answer
	 * won: r is what the provider returned, m its answer (NULL on failure,
	 * err its message then). Called on the call's thread, without any lock
	 * of the race held, before noderace_free returns. NULL: not told. */
	void (*late)(const struct kube_node *n, const struct cloud_instance_metadata *won,
	    int r, const struct cloud_instance_metadata *m, const char *err, void *arg);
	void *arg;
};

struct noderace;

/* noderace_new copies cfg (its pointers borrowed: they outlive the race). */
struct noderace *noderace_new(const struct noderace_config *cfg);

/* noderace_ask asks the provider and the fallback about n (or waits on a
 * call of theirs already running), and fills *ret with the first valid answer.
 * Returns 0 with *ret_fallback 0 (the provider's answer) or 1 (the
 * fallback's; why then says what the provider had done: not answered yet,
 * or its error); ERR_CANCELED once noderace_cancel was called; else the
 * provider's error, with both sources' reasons in e. *ret untouched on
 * failure. */
int noderace_ask(struct noderace *rc, const struct kube_node *n,
    struct cloud_instance_metadata *ret, int *ret_fallback, char *why, size_t why_len,
    struct errbuf *e);

/* noderace_cancel makes every noderace_ask waiting for the provider, and
 * every later one, return ERR_CANCELED at once. The provider call itself
 * goes on until the provider gives up. */
void noderace_cancel(struct noderace *rc);

/* noderace_provider_calls returns how many provider calls were started,
 * and sets *ret_running (may be NULL) to 1 while one is outstanding. */
unsigned long noderace_provider_calls(struct noderace *rc, int *ret_running);

/* noderace_free cancels, joins the outstanding provider call's thread (see
 * above) and frees rc. NULL is fine. */
void noderace_free(struct noderace *rc);

#endif
