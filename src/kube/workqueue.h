/* workqueue.h - the controllers' work queue, with client-go's semantics:
 * deduplicated string keys, never held by two workers at once, delayed and
 * rate-limited adds, and client-go's workqueue_* metrics.
 *
 * Contract:
 * - Keys are "namespace/name" or "name" strings, copied in (at most
 *   WQ_KEY_MAX bytes). A key already waiting in the queue is not queued
 *   twice; a key added while a worker holds it is queued again when that
 *   worker calls wq_done, so no two workers ever hold the same key.
 * - wq_get hands out keys in the order they became ready and blocks while
 *   there are none. The key it returns is borrowed from the queue and valid
 *   until the matching wq_done; pass that same string to wq_add_rate_limited,
 *   wq_forget and wq_done.
 * - Delayed keys (wq_add_after, wq_add_rate_limited) sit in a timer heap until
 *   due; a key already waiting keeps the sooner of its two times. One timer
 *   thread per queue sleeps until the next due key; while a key is held it
 *   also wakes every WQ_METRICS_PERIOD_NS to update the in-progress gauges
 *   (which every wq_done updates too). No polling otherwise.
 * - After wq_shutdown or wq_shutdown_with_drain, adds are ignored and delayed
 *   keys are dropped.
 * - Memory: one entry per distinct key that is queued, held or waiting, and
 *   one per key the rate limiter tracks until wq_forget.
 * - Any thread may call any function except wq_free. One lock per queue,
 *   never held across a caller's code. Out of memory is fatal (xalloc).
 *   Never logs.
 *
 * A controller worker, client-go style:
 *
 *	const char *key;
 *	while (wq_get(q, &key) > 0) {
 *		int r = sync(key);
 *		if (r < 0 && err_retryable(r))
 *			wq_add_rate_limited(q, key);
 *		else
 *			wq_forget(q, key);
 *		wq_done(q, key);
 *	}
 *
 * Start: wq_new, then the workers. Stop: wq_shutdown (or
 * wq_shutdown_with_drain to let held and queued keys finish), join the
 * workers, wq_free. */
#ifndef BOOTCCM_KUBE_WORKQUEUE_H
#define BOOTCCM_KUBE_WORKQUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/err.h"
#include "kube/ratelimiter.h"

#define WQ_KEY_MAX 1024                       /* bytes, without the NUL */
#define WQ_NAME_MAX 128                       /* bytes: the metrics' name label */
#define WQ_METRICS_PERIOD_NS (500 * NS_PER_MS) /* in-progress gauges, like client-go */

struct wq;

/* wq_new creates a queue called name (the `name` label of its metrics; one
 * queue per name) that retries with rl, or with client-go's default
 * controller limiter when rl is NULL, and starts its timer thread. Takes
 * ownership of rl, also on failure. Returns 0, ERR_INVALID (empty or too long
 * name) or ERR_INTERNAL (the timer thread could not start). */
int wq_new(const char *name, struct ratelimiter *rl, struct wq **ret);

/* wq_add queues key unless it is already queued; a held key is queued again
 * at its wq_done. Returns 0 (also when shutting down: the key is dropped),
 * ERR_INVALID (empty key) or ERR_TOO_LARGE (longer than WQ_KEY_MAX). */
int wq_add(struct wq *q, const char *key);

/* wq_add_after adds key once delay_ns has passed (at once if delay_ns <= 0).
 * If key is already waiting, the sooner time wins. Counts a retry in
 * workqueue_retries_total, like client-go. Returns as wq_add. */
int wq_add_after(struct wq *q, const char *key, int64_t delay_ns);

/* wq_add_rate_limited adds key after the limiter's delay for it (which
 * counts the failure). Returns as wq_add. */
int wq_add_rate_limited(struct wq *q, const char *key);

/* wq_forget tells the limiter key succeeded: its backoff starts over. It
 * does not remove key from the queue. */
void wq_forget(struct wq *q, const char *key);

/* wq_retry_now makes every key waiting in the timer heap ready at once and
 * forgets its backoff, as if it had never failed: for when the cause of the
 * failures went away (the cloud's credentials changed), so keys do not sit
 * out a backoff earned against the old state. Keys held by a worker are
 * left alone. Returns how many keys it made ready. */
size_t wq_retry_now(struct wq *q);

/* wq_num_requeues returns how often key was rate-limited since its forget. */
int wq_num_requeues(struct wq *q, const char *key);

/* wq_get waits for a key, marks it held and points *ret_key at it (borrowed
 * until wq_done). Returns 1 with a key, or 0 when the queue is shutting down
 * and has nothing more to hand out (*ret_key untouched). */
int wq_get(struct wq *q, const char **ret_key);

/* wq_done releases a key from wq_get and queues it again if it was added
 * meanwhile. key may be the borrowed string itself: it is not used after
 * being freed. Returns 0, or ERR_NOT_FOUND if key is not held. */
int wq_done(struct wq *q, const char *key);

/* wq_len returns how many keys are queued and ready (held and waiting keys
 * are not counted). */
size_t wq_len(struct wq *q);

/* wq_shutdown stops the queue at once: queued and waiting keys are dropped,
 * adds are ignored, and every wq_get, blocked or future, returns 0. Held
 * keys stay valid until their wq_done. Idempotent. */
void wq_shutdown(struct wq *q);

/* wq_shutdown_with_drain stops taking adds and drops waiting keys, lets the
 * workers finish the keys already queued (and those re-added while held),
 * and waits until no key is queued or held; wq_get returns 0 once there is
 * nothing left. timeout_ns 0 waits for as long as it takes; otherwise after
 * timeout_ns the queue is shut down as by wq_shutdown. Returns 0 when
 * drained, or ERR_TIMEOUT. Needs running workers to make progress. */
int wq_shutdown_with_drain(struct wq *q, int64_t timeout_ns);

/* wq_shutting_down tells whether a shutdown has begun. */
int wq_shutting_down(struct wq *q);

/* wq_free shuts q down if needed, stops its timer thread and frees it with
 * its limiter. No worker may still be using q. NULL is fine. */
void wq_free(struct wq *q);

#endif
