/* flowcontrol.h - the API client's request budget (client-go's flowcontrol
 * token bucket, --kube-api-qps/--kube-api-burst): how many requests a second
 * bootccm sends to the API server.
 *
 * Not to be confused with kube/ratelimiter.h, the workqueue's per-key retry
 * limiter: that one decides when a controller retries a key; this one
 * decides when a request may go out.
 *
 * Contract: process-wide, one token bucket per class, each behind its own
 * lock held only for the arithmetic. A caller that finds its bucket empty
 * reserves the next token and sleeps until it is due, so waiters are served
 * in arrival order. Before flowcontrol_init, nothing is limited. Never logs. */
#ifndef BOOTCCM_KUBE_FLOWCONTROL_H
#define BOOTCCM_KUBE_FLOWCONTROL_H

/* Classes: every request (watches and retries included) takes a token of
 * its client's class. Events have a bucket of their own, as the upstream
 * CCM's event recorder has a client of its own; leader election takes none,
 * so no other traffic ever delays a renewal. */
#define FLOWCONTROL_CONTROLLERS 0
#define FLOWCONTROL_EVENTS 1
#define FLOWCONTROL_NONE 2        /* never limited */
#define FLOWCONTROL_CLASSES 3

/* flowcontrol_init sets every limited class to qps tokens a second, burst
 * at most (burst < 1 counts as 1; qps 0 = unlimited), each bucket full. */
void flowcontrol_init(double qps, int burst);

/* flowcontrol_reserve takes the next token of class cls and returns how many
 * seconds the caller must wait before using it (0 when one was there). An
 * unknown class counts as FLOWCONTROL_CONTROLLERS. */
double flowcontrol_reserve(int cls);

/* flowcontrol_wait takes a token of class cls, sleeping until it is due. The
 * sleep is not interruptible: the token is taken, and a request made while
 * stopping (a Lease release) must still go out. */
void flowcontrol_wait(int cls);

#endif
