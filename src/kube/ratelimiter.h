/* ratelimiter.h - per-item rate limiters for the workqueue, with client-go's
 * semantics: per-key exponential backoff, an overall token bucket, and the
 * maximum of several.
 *
 * Contract: a limiter answers "how long should this key wait before its next
 * try" (ratelimiter_when, which also counts the try), forgets a key once it
 * succeeded (ratelimiter_forget), and tells how often a key was retried
 * (ratelimiter_num_requeues). Any thread may call any function; each limiter
 * has its own lock, held only for the update. Keys are copied in; a limiter
 * keeps an entry only for keys that failed and were not forgotten, so its
 * memory is bounded by the number of distinct failing keys. Out of memory
 * is fatal (xalloc). Never logs.
 *
 * Not to be confused with kube/flowcontrol.h, the API client's request
 * budget (--kube-api-qps/--kube-api-burst): that one decides when a request
 * may go out; these decide when a controller retries a key. */
#ifndef BOOTCCM_KUBE_RATELIMITER_H
#define BOOTCCM_KUBE_RATELIMITER_H

#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/err.h"

/* client-go's DefaultControllerRateLimiter, which the upstream node
 * controllers use: 5 ms doubling to 1000 s per key, at most 10 retries a
 * second overall with bursts of 100. */
#define RATELIMITER_DEFAULT_BASE_NS (5 * NS_PER_MS)
#define RATELIMITER_DEFAULT_MAX_NS (1000 * NS_PER_S)
#define RATELIMITER_DEFAULT_QPS 10.0  /* retries per second, all keys */
#define RATELIMITER_DEFAULT_BURST 100 /* retries */

/* The upstream service controller's per-key backoff (no overall bucket). */
#define RATELIMITER_SERVICE_BASE_NS (5 * NS_PER_S)
#define RATELIMITER_SERVICE_MAX_NS (300 * NS_PER_S)

struct ratelimiter;

/* ratelimiter_exponential_new: a key's n-th failure since it was forgotten
 * waits base_ns * 2^(n-1), capped at max_ns. Returns 0 or ERR_INVALID
 * (base_ns < 1 or max_ns < base_ns). */
int ratelimiter_exponential_new(int64_t base_ns, int64_t max_ns,
    struct ratelimiter **ret);

/* ratelimiter_bucket_new: a token bucket over all keys, like Go's
 * rate.Limiter's Reserve: qps tokens a second, at most burst stored, starting
 * full; a try with no token waits until its own token is due. Keys are not
 * tracked: forget does nothing and num_requeues is 0. Returns 0 or
 * ERR_INVALID (qps <= 0, burst < 1). */
int ratelimiter_bucket_new(double qps, int burst, struct ratelimiter **ret);

/* ratelimiter_max_of_new: the longest wait any of the n limiters asks for
 * (each one counts the try), the highest num_requeues, and forget forwards
 * to all. Takes ownership of the n limiters, also on failure. Returns 0 or
 * ERR_INVALID (n == 0 or a NULL limiter). */
int ratelimiter_max_of_new(struct ratelimiter **limiters, size_t n,
    struct ratelimiter **ret);

/* ratelimiter_controller_new: max-of an exponential(base_ns, max_ns) and a
 * bucket(RATELIMITER_DEFAULT_QPS, RATELIMITER_DEFAULT_BURST); with the
 * RATELIMITER_DEFAULT_* durations it is client-go's
 * DefaultControllerRateLimiter. Returns 0 or ERR_INVALID. */
int ratelimiter_controller_new(int64_t base_ns, int64_t max_ns,
    struct ratelimiter **ret);

/* ratelimiter_set_clock replaces the monotonic clock (nanoseconds) of rl and
 * of every limiter inside it; for tests. Call it before any other use. */
void ratelimiter_set_clock(struct ratelimiter *rl, int64_t (*now_ns)(void *arg),
    void *arg);

/* ratelimiter_when counts a failure of key and returns how long it should
 * wait before its next try, in nanoseconds (>= 0). */
int64_t ratelimiter_when(struct ratelimiter *rl, const char *key);

/* ratelimiter_forget drops key's failure count (the key succeeded). */
void ratelimiter_forget(struct ratelimiter *rl, const char *key);

/* ratelimiter_num_requeues returns key's failures since it was forgotten. */
int ratelimiter_num_requeues(struct ratelimiter *rl, const char *key);

/* ratelimiter_len returns how many keys rl (and the limiters inside it)
 * track; for tests and memory accounting. */
size_t ratelimiter_len(struct ratelimiter *rl);

/* ratelimiter_free frees rl and the limiters it owns. NULL is fine. */
void ratelimiter_free(struct ratelimiter *rl);

#endif
