/* lease.h - leader election on a coordination.k8s.io/v1 Lease with client-go's
 * leaderelection and resourcelock.LeaseLock semantics, so bootccm and an
 * upstream cloud-controller-manager exclude each other on the same Lease.
 *
 * Contract: one elector thread per struct lease. It campaigns until it holds
 * the Lease, calls on_started_leading, renews every retry period, and when
 * renewals have failed for the renew deadline (or it sees another holder)
 * calls on_stopped_leading and campaigns again; the process never exits for
 * it. Both callbacks run on the elector thread: on_started_leading must start
 * the controllers and return; on_stopped_leading must stop them (join their
 * threads) and return, and it is called early enough that it can finish before
 * any other replica may take the Lease (renew deadline < lease duration; the
 * difference is its time budget). Expiry is judged like client-go: from the
 * local time at which this replica last saw the record change, never from the
 * remote renewTime. A contender polls every retry period (client-go: 1 to 2.2
 * periods) and again right as an observed lease expires, so a dead leader is
 * replaced within the lease duration + one retry period. lease_stop stops
 * leading (callback first) and releases the Lease (holderIdentity "",
 * leaseDurationSeconds 1) so a successor takes over at once: a request in
 * flight is canceled within a second, and the release is one attempt of at
 * most LEASE_RELEASE_TIMEOUT_NS, so a stop never hangs on the API server. lease_is_leader and lease_healthz may be called from any thread.
 * Logs (klog-style, like client-go) with the lease and identity. Metrics:
 * leader_election_master_status{name}, bootccm_leader_election_transitions_total.
 *
 * Wiring in the daemon:
 *   struct lease_config lc = { namespace, name, durations... };
 *   lc.on_started_leading = start_controllers; lc.on_stopped_leading =
 *   stop_controllers; lc.arg = ctx;
 *   if (lease_new(&kc, &lc, &l, &e) < 0 || lease_start(l, &e) < 0) fail;
 *   ... on SIGTERM: lease_stop(l); lease_free(l);
 * and /healthz adds lease_healthz(l, &e). */
#ifndef BOOTCCM_KUBE_LEASE_H
#define BOOTCCM_KUBE_LEASE_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "config/kubeconfig.h"

#define LEASE_HOLDER_MAX 256       /* bytes with the NUL: a holderIdentity we accept */
#define LEASE_JITTER 1.2           /* client-go's JitterFactor: the renew deadline
                                      must exceed this many retry periods */
#define LEASE_POLL_JITTER 0.1      /* a contender polls every retry period less
                                      up to this fraction of it */
#define LEASE_HEALTH_TIMEOUT_NS (20LL * 1000000000LL) /* healthz tolerance past the lease duration */
#define LEASE_RELEASE_TIMEOUT_NS (1500LL * 1000000LL) /* the release at lease_stop: at
                                      most this long (or the renew deadline) */

struct lease_config {
	const char *namespace;      /* --leader-elect-resource-namespace */
	const char *name;           /* --leader-elect-resource-name */
	const char *identity;       /* NULL: "<hostname>_<uuid v4>", like upstream */
	int64_t lease_duration_ns;  /* --leader-elect-lease-duration (whole seconds
	                               are written to the Lease) */
	int64_t renew_deadline_ns;  /* --leader-elect-renew-deadline */
	int64_t retry_period_ns;    /* --leader-elect-retry-period */
	void (*on_started_leading)(void *arg);
	void (*on_stopped_leading)(void *arg);
	void *arg;
};

/* What a Lease's spec says, as client-go's LeaderElectionRecord. */
struct lease_record {
	char holder[LEASE_HOLDER_MAX]; /* spec.holderIdentity; "" = free */
	int duration_s;                /* spec.leaseDurationSeconds */
	int64_t acquire_ns;            /* spec.acquireTime, Unix ns; 0 = absent */
	int64_t renew_ns;              /* spec.renewTime, Unix ns; 0 = absent */
	int transitions;               /* spec.leaseTransitions */
};

/* The last record this replica saw, and when (local clock) it last changed. */
struct lease_observed {
	struct lease_record rec;
	int64_t time_ns;               /* elector clock (CLOCK_BOOTTIME) */
	int have;
};

enum lease_action {
	LEASE_HELD,     /* another holder's lease is still valid: wait */
	LEASE_ACQUIRE,  /* free, expired or never held: take it (transitions + 1) */
	LEASE_RENEW,    /* ours: renew, keeping acquireTime and transitions */
};

struct lease;

/* lease_config_check checks what lease_new checks of cfg but the callbacks:
 * the daemon runs it before it starts (and --validate with it), so a Lease
 * name or a set of durations the elector would refuse is refused before
 * anything runs. Returns 0 or ERR_INVALID with the reason in e. Pure. */
int lease_config_check(const struct lease_config *cfg, struct errbuf *e);

/* lease_new checks cfg (client-go's rules, plus: the renew deadline must be
 * shorter than the whole seconds written as leaseDurationSeconds; namespace and
 * name must be valid object names) and prepares an elector; kc is borrowed and
 * must outlive it. Returns 0 or ERR_INVALID, ERR_IO (no randomness for the
 * identity), with a message in e. */
int lease_new(struct kubeconfig *kc, const struct lease_config *cfg,
    struct lease **ret, struct errbuf *e);

/* lease_start starts the elector thread. Returns 0 or ERR_INTERNAL. */
int lease_start(struct lease *l, struct errbuf *e);

/* lease_is_leader tells whether this replica holds the Lease right now: it
 * leads and the renew deadline since its last successful renewal has not
 * passed, even when the elector thread has not run yet to notice (a process
 * resumed after SIGSTOP). Check it right before each write that needs the
 * Lease. */
int lease_is_leader(struct lease *l);

/* lease_healthz is client-go's leader-election health check: ERR_TIMEOUT with
 * a message when this replica is acting as leader (between the two callbacks)
 * but has not renewed for longer than the lease duration + 20 s (a stuck
 * elector or a callback that does not return); else 0. */
int lease_healthz(struct lease *l, struct errbuf *e);

/* lease_identity returns this replica's holderIdentity. */
const char *lease_identity(const struct lease *l);

/* lease_stop ends the elector: if leading, on_stopped_leading runs first, then
 * the Lease is released when this replica holds it. Blocks until the thread
 * ended (at most about the renew deadline when a request hangs). */
void lease_stop(struct lease *l);

/* lease_free releases l (stopping it first if needed). NULL is fine. */
void lease_free(struct lease *l);

/* --- the pieces the elector is made of, exported for tests --- */

/* lease_record_decode reads a Lease object's spec into ret (the times with
 * rfc3339_parse_ns, as the API server's MicroTime is Go's RFC 3339). Missing
 * fields are zero, as in client-go; wrong types, a holder longer than the
 * cap, or bad times are ERR_INVALID. */
int lease_record_decode(json_object *lease, struct lease_record *ret,
    struct errbuf *e);

/* lease_record_spec returns a new spec object exactly as client-go writes it
 * (holderIdentity, leaseDurationSeconds, acquireTime, renewTime,
 * leaseTransitions; the times as MicroTime, rfc3339_format_micro), or NULL
 * when a time cannot be written as one (outside the years 0-9999). */
json_object *lease_record_spec(const struct lease_record *r);

/* lease_observe records r as seen at now_ns; the observed time moves only when
 * the record differs from the one seen before. */
void lease_observe(struct lease_observed *o, const struct lease_record *r,
    int64_t now_ns);

/* lease_valid tells whether the observed record has not expired at now_ns:
 * observed time + its leaseDurationSeconds > now. */
int lease_valid(const struct lease_observed *o, int64_t now_ns);

/* lease_decide is client-go's tryAcquireOrRenew decision on the observed
 * record: what to do, and in ret the record to write for ACQUIRE or RENEW
 * (duration_s written, now_unix_ns as renewTime). */
enum lease_action lease_decide(const struct lease_observed *o,
    const char *identity, int duration_s, int64_t now_ns, int64_t now_unix_ns,
    struct lease_record *ret);

/* lease_health is lease_healthz's rule: 1 when healthy. */
int lease_health(int acting, int64_t renewed_ns, int64_t lease_duration_ns,
    int64_t now_ns);

#endif
