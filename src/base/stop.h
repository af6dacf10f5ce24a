/* stop.h - a stop signal: a flag that threads poll cheaply, and sleeps that a
 * stop ends at once.
 *
 * Contract: stop_init before use; any thread may stop_request (idempotent)
 * and the flag never clears. Sleepers block on a condition variable of the
 * monotonic clock, so a stop wakes them at once instead of at the next poll.
 * A signal handler may not take the lock: the process's signals are turned
 * into a stop by stop_on_signals (a thread that sigwaits), so handlers are
 * never needed. Never logs. */
#ifndef BOOTCCM_STOP_H
#define BOOTCCM_STOP_H

#include <pthread.h>
#include <stdint.h>

/* A call stop_request makes, for a thread blocked where no sleep of the
 * stop's reaches it (a transfer waiting on a socket). The caller owns it. */
struct stop_hook {
	void (*fn)(void *arg);
	void *arg;
	struct stop_hook *next;
};

struct stop {
	pthread_mutex_t lock;
	pthread_cond_t cond;  /* CLOCK_MONOTONIC */
	int flag;             /* atomic; set once */
	struct stop_hook *hooks; /* under lock */
};

/* stop_init makes s ready, not stopped. */
void stop_init(struct stop *s);

/* stop_destroy frees what stop_init made; nobody may use s afterwards. */
void stop_destroy(struct stop *s);

/* stop_request sets the flag and wakes every sleeper. */
void stop_request(struct stop *s);

/* stop_requested tells whether a stop was requested. NULL: never. */
int stop_requested(const struct stop *s);

/* stop_sleep_until sleeps until the monotonic clock reaches deadline_ns
 * (clock_mono_ns) or s is stopped. Returns 1 when stopped (before or during
 * the sleep), 0 when the deadline passed. NULL s: a plain sleep. */
int stop_sleep_until(struct stop *s, int64_t deadline_ns);

/* stop_sleep sleeps ns nanoseconds; as stop_sleep_until. A sleep past the
 * clock's range (ns near INT64_MAX) lasts until the stop. */
int stop_sleep(struct stop *s, int64_t ns);

/* stop_hook_add registers h until stop_hook_remove: stop_request calls
 * h->fn(h->arg) once, under s's lock (so fn must be quick and call nothing
 * of s's). Returns 0, or 1 when s is stopped already (h is not registered:
 * the caller acts at once). NULL s: 0, never called. */
int stop_hook_add(struct stop *s, struct stop_hook *h);

/* stop_hook_remove unregisters h (if it is); once it returns, h->fn is not
 * running and will not be called. NULL s is fine. */
void stop_hook_remove(struct stop *s, struct stop_hook *h);

/* stop_on_signals blocks SIGTERM and SIGINT in the calling thread (threads
 * created after it inherit the mask) and starts a detached thread that turns
 * them into stop_request(s). Call it from
 * main before any other thread starts. Returns 0 or ERR_INTERNAL. */
int stop_on_signals(struct stop *s);

#endif
