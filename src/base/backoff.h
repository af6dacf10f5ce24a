/* backoff.h - exponential backoff with jitter: a base delay that grows by a
 * factor per step up to a cap (stop_sleep in stop.h sleeps one out).
 *
 * Contract: a struct backoff belongs to one thread (it carries its own random
 * state, so no lock is needed); never logs. Jitter only shortens a delay:
 * step n's delay d = min(cap, base * factor^n) is drawn uniformly from
 * [d * (1 - jitter), d], so the cap is a hard bound (a client that waits for
 * a server coming back sees it within cap) while many clients still spread
 * out. Used for the API client's retries, the wait for the API server and the
 * controllers' requeues. */
#ifndef BOOTCCM_BACKOFF_H
#define BOOTCCM_BACKOFF_H

#include <stdint.h>

struct backoff {
	int64_t base_ns;  /* the first delay */
	int64_t cap_ns;   /* no delay is longer */
	double factor;    /* growth per step, >= 1 */
	double jitter;    /* 0..1: the share a delay may be shortened by */
	unsigned steps;   /* delays handed out since the last reset */
	uint64_t rng;     /* xorshift64* state, never 0 */
};

/* backoff_init sets the parameters, clamping nonsense into range (base >= 0,
 * cap >= base, factor >= 1, jitter in [0, 1]), and seeds the random state
 * from the clock and b's address. */
void backoff_init(struct backoff *b, int64_t base_ns, int64_t cap_ns,
    double factor, double jitter);

/* backoff_reset starts over at the base delay (after a success). */
void backoff_reset(struct backoff *b);

/* backoff_next returns the next delay in nanoseconds and advances a step. */
int64_t backoff_next(struct backoff *b);

/* backoff_rand returns a uniform draw in [0, 1) from b's generator
 * (xorshift64*), for a caller that spreads something else out the same way
 * (a reflector's watch timeouts). */
double backoff_rand(struct backoff *b);

/* backoff_delay returns step's delay for a random draw u in [0, 1): u = 0
 * gives the full delay, u -> 1 the shortest. Pure; for tests and for callers
 * that keep the step count themselves (per-key requeues). */
int64_t backoff_delay(const struct backoff *b, unsigned step, double u);

#endif
