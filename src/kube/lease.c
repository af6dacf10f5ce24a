/* lease.c - leader election on a Lease, the client-go way. */
#include "kube/lease.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/jsonx.h"
#include "kube/client.h"
#include "kube/flowcontrol.h"
#include "base/labelsel.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/rfc3339.h"
#include "base/stop.h"
#include "base/uuid.h"
#include "base/xalloc.h"

#define LEASE_PATH_MAX 512          /* bytes: an API path for the Lease */
#define LEASE_DESC_MAX 320          /* bytes: "namespace/name" */
#define LEASE_NAME_MAX 253          /* a DNS-1123 subdomain */
#define LEASE_NAMESPACE_MAX 63      /* a DNS-1123 label */
#define LEASE_EXPIRY_SLACK_NS (10LL * NS_PER_MS) /* wake this long after an
                                       observed lease expires, so the GET that
                                       follows finds it expired */

struct lease {
	char namespace[LEASE_NAMESPACE_MAX + 1];
	char name[LEASE_NAME_MAX + 1];
	char identity[LEASE_HOLDER_MAX];
	char desc[LEASE_DESC_MAX];         /* "namespace/name" for logs */
	char path[LEASE_PATH_MAX];         /* .../leases/NAME */
	char collection[LEASE_PATH_MAX];   /* .../leases */
	int64_t lease_duration_ns;
	int64_t renew_deadline_ns;
	int64_t retry_period_ns;
	int duration_s;                    /* leaseDurationSeconds written */
	void (*on_started_leading)(void *arg);
	void (*on_stopped_leading)(void *arg);
	void *arg;

	/* elector thread only */
	struct kube_client client;
	json_object *obj;                  /* the Lease as last read or written:
	                                      updates PUT it back with a new spec,
	                                      keeping metadata like client-go */
	struct lease_observed obs;
	char last_err[ERRBUF_MAX];         /* to log a repeated failure once */

	pthread_t thread;
	int started;
	struct stop stop;                  /* lease_stop: ends the elector's sleeps */
	pthread_mutex_t lock;
	/* guarded by lock */
	int leading;                       /* renewing; is_leader also checks time */
	int acting;                        /* between the two callbacks */
	int64_t renewed_ns;                /* when the last successful acquire or
	                                      renew request was sent */
};

static struct metric *lease_m_status, *lease_m_transitions;
static pthread_once_t lease_metrics_once = PTHREAD_ONCE_INIT;

static void
lease_metrics_init(void)
{
	lease_m_status = metrics_gauge("leader_election_master_status",
	    "Gauge of if the reporting system is master of the relevant lease, 0 "
	    "indicates backup, 1 indicates master. 'name' is the string used to "
	    "identify the lease.", "name");
	lease_m_transitions = metrics_counter("bootccm_leader_election_transitions_total",
	    "Times this replica started or stopped leading.", "name,transition");
}

/* --- the record ------------------------------------------------------------ */

/* lease_get_time reads a MicroTime (any RFC 3339 time) into Unix ns; 0 when
 * absent. */
static int
lease_get_time(json_object *spec, const char *field, int64_t *ret, struct errbuf *e)
{
	const char *s;
	int r;

	if ((r = jsonx_str(spec, "Lease spec", field, 0, &s, NULL, e)) < 0)
		return r;
	*ret = 0;
	if (s && rfc3339_parse_ns(s, ret) < 0)
		return errbuf_set(e, ERR_INVALID, "Lease spec.%s: not an RFC 3339 time", field);
	return 0;
}

int
lease_record_decode(json_object *lease, struct lease_record *ret, struct errbuf *e)
{
	struct lease_record r;
	json_object *spec;
	const char *holder;
	int64_t duration, transitions;
	size_t len;
	int rc;

	memset(&r, 0, sizeof(r));
	if (!json_object_is_type(lease, json_type_object))
		return errbuf_set(e, ERR_INVALID, "Lease: not a JSON object");
	if ((rc = jsonx_object(lease, "Lease", "spec", 0, &spec, e)) < 0)
		return rc;
	if (spec) {
		if ((rc = jsonx_str(spec, "Lease spec", "holderIdentity", 0, &holder, &len,
		    e)) < 0)
			return rc;
		if (holder) {
			if (len >= sizeof(r.holder))
				return errbuf_set(e, ERR_INVALID,
				    "Lease spec.holderIdentity: longer than %d bytes",
				    LEASE_HOLDER_MAX - 1);
			memcpy(r.holder, holder, len + 1);
		}
		if ((rc = jsonx_int(spec, "Lease spec", "leaseDurationSeconds", INT32_MIN,
		    INT32_MAX, 0, &duration, e)) < 0 ||
		    (rc = jsonx_int(spec, "Lease spec", "leaseTransitions", INT32_MIN,
		    INT32_MAX, 0, &transitions, e)) < 0 ||
		    (rc = lease_get_time(spec, "acquireTime", &r.acquire_ns, e)) < 0 ||
		    (rc = lease_get_time(spec, "renewTime", &r.renew_ns, e)) < 0)
			return rc;
		r.duration_s = (int)duration;
		r.transitions = (int)transitions;
	}
	*ret = r;
	return 0;
}

/* lease_add_time adds unix_ns as a MicroTime; ERR_INVALID for a time one
 * cannot say (outside the years 0-9999). */
static int
lease_add_time(json_object *spec, const char *key, int64_t unix_ns)
{
	char buf[RFC3339_MAX];

	if (rfc3339_format_micro(unix_ns, buf, sizeof(buf)) < 0)
		return ERR_INVALID;
	json_object_object_add(spec, key, xcheck(json_object_new_string(buf)));
	return 0;
}

json_object *
lease_record_spec(const struct lease_record *r)
{
	json_object *spec = xcheck(json_object_new_object());

	/* the five fields of client-go's LeaderElectionRecordToLeaseSpec, all
	 * always present (holderIdentity "" on release) */
	json_object_object_add(spec, "holderIdentity", xcheck(json_object_new_string(r->holder)));
	json_object_object_add(spec, "leaseDurationSeconds",
	    xcheck(json_object_new_int(r->duration_s)));
	if (lease_add_time(spec, "acquireTime", r->acquire_ns) < 0 ||
	    lease_add_time(spec, "renewTime", r->renew_ns) < 0) {
		json_object_put(spec);
		return NULL;
	}
	json_object_object_add(spec, "leaseTransitions",
	    xcheck(json_object_new_int(r->transitions)));
	/* json-c's adds fail only when out of memory */
	if (json_object_object_length(spec) != 5)
		xalloc_fatal(__FILE__, __LINE__);
	return spec;
}

/* --- the decision ------------------------------------------------------------ */

static int
lease_record_equal(const struct lease_record *a, const struct lease_record *b)
{
	return strcmp(a->holder, b->holder) == 0 && a->duration_s == b->duration_s &&
	    a->acquire_ns == b->acquire_ns && a->renew_ns == b->renew_ns &&
	    a->transitions == b->transitions;
}

void
lease_observe(struct lease_observed *o, const struct lease_record *r, int64_t now_ns)
{
	if (o->have && lease_record_equal(&o->rec, r))
		return;
	o->rec = *r;
	o->time_ns = now_ns;
	o->have = 1;
}

int
lease_valid(const struct lease_observed *o, int64_t now_ns)
{
	return o->have && clock_add_ns(o->time_ns, (int64_t)o->rec.duration_s * NS_PER_S) > now_ns;
}

enum lease_action
lease_decide(const struct lease_observed *o, const char *identity, int duration_s,
    int64_t now_ns, int64_t now_unix_ns, struct lease_record *ret)
{
	struct lease_record r;
	int ours = o->have && strcmp(o->rec.holder, identity) == 0;

	if (o->have && o->rec.holder[0] != '\0' && !ours && lease_valid(o, now_ns))
		return LEASE_HELD;
	memset(&r, 0, sizeof(r));
	snprintf(r.holder, sizeof(r.holder), "%s", identity);
	r.duration_s = duration_s;
	r.renew_ns = now_unix_ns;
	if (ours) {
		r.acquire_ns = o->rec.acquire_ns;
		r.transitions = o->rec.transitions;
	} else {
		r.acquire_ns = now_unix_ns;
		r.transitions = o->have ? o->rec.transitions + 1 : 0;
	}
	*ret = r;
	return ours ? LEASE_RENEW : LEASE_ACQUIRE;
}

int
lease_health(int acting, int64_t renewed_ns, int64_t lease_duration_ns, int64_t now_ns)
{
	return !acting ||
	    now_ns - renewed_ns <= clock_add_ns(lease_duration_ns, LEASE_HEALTH_TIMEOUT_NS);
}

/* --- configuration ------------------------------------------------------------ */

int
lease_config_check(const struct lease_config *cfg, struct errbuf *e)
{
	if (cfg->namespace == NULL || !labelsel_dns_label_ok(cfg->namespace))
		return errbuf_set(e, ERR_INVALID, "leader election: namespace \"%.*s\" is not "
		    "a valid namespace name (a DNS-1123 label: at most 63 lowercase letters, "
		    "digits and '-', starting and ending with a letter or digit)",
		    LEASE_NAME_MAX, cfg->namespace ? cfg->namespace : "");
	if (cfg->name == NULL || !labelsel_dns_subdomain_ok(cfg->name))
		return errbuf_set(e, ERR_INVALID, "leader election: lease name \"%.*s\" is not "
		    "a valid object name (a DNS-1123 subdomain: at most 253 bytes of "
		    "lowercase letters, digits, '-' and '.')", LEASE_NAME_MAX,
		    cfg->name ? cfg->name : "");
	if (cfg->lease_duration_ns < NS_PER_S)
		return errbuf_set(e, ERR_INVALID,
		    "leader election: the lease duration must be at least 1s");
	if (cfg->retry_period_ns <= 0 || cfg->renew_deadline_ns <= 0)
		return errbuf_set(e, ERR_INVALID,
		    "leader election: renew deadline and retry period must be greater than zero");
	/* others judge expiry by the whole seconds in leaseDurationSeconds, so
	 * that is what the renew deadline must stay under */
	if (cfg->renew_deadline_ns >= cfg->lease_duration_ns / NS_PER_S * NS_PER_S)
		return errbuf_set(e, ERR_INVALID, "leader election: the renew deadline must be "
		    "shorter than the lease duration in whole seconds (%" PRId64 "s)",
		    (int64_t)(cfg->lease_duration_ns / NS_PER_S));
	if ((double)cfg->renew_deadline_ns <= LEASE_JITTER * (double)cfg->retry_period_ns)
		return errbuf_set(e, ERR_INVALID, "leader election: the renew deadline must be "
		    "greater than 1.2 x the retry period");
	if (cfg->lease_duration_ns / NS_PER_S > INT32_MAX)
		return errbuf_set(e, ERR_INVALID, "leader election: lease duration too long");
	return 0;
}

int
lease_new(struct kubeconfig *kc, const struct lease_config *cfg, struct lease **ret,
    struct errbuf *e)
{
	struct lease *l;
	char host[256], uuid[UUID_STR_LEN];
	int r;

	if ((r = lease_config_check(cfg, e)) < 0)
		return r;
	if (cfg->on_started_leading == NULL || cfg->on_stopped_leading == NULL)
		return errbuf_set(e, ERR_INVALID, "leader election: both callbacks are required");

	l = xcalloc(1, sizeof(*l));
	snprintf(l->namespace, sizeof(l->namespace), "%s", cfg->namespace);
	snprintf(l->name, sizeof(l->name), "%s", cfg->name);
	if (cfg->identity && *cfg->identity) {
		if (strlen(cfg->identity) >= sizeof(l->identity)) {
			free(l);
			return errbuf_set(e, ERR_INVALID, "leader election: identity longer than "
			    "%d bytes", LEASE_HOLDER_MAX - 1);
		}
		snprintf(l->identity, sizeof(l->identity), "%s", cfg->identity);
	} else {
		/* upstream: os.Hostname() + "_" + a random UUID, so two replicas
		 * on one host (or a restarted one) never share an identity */
		if (gethostname(host, sizeof(host)) < 0)
			snprintf(host, sizeof(host), "unknown");
		host[sizeof(host) - 1] = '\0';
		if (uuid_v4(uuid) < 0) {
			free(l);
			return errbuf_set(e, ERR_IO, "leader election: no randomness for the "
			    "identity's UUID");
		}
		snprintf(l->identity, sizeof(l->identity), "%s_%s", host, uuid);
	}
	snprintf(l->desc, sizeof(l->desc), "%s/%s", l->namespace, l->name);
	snprintf(l->collection, sizeof(l->collection),
	    "/apis/coordination.k8s.io/v1/namespaces/%s/leases", l->namespace);
	snprintf(l->path, sizeof(l->path), "%s/%s", l->collection, l->name);
	l->lease_duration_ns = cfg->lease_duration_ns;
	l->renew_deadline_ns = cfg->renew_deadline_ns;
	l->retry_period_ns = cfg->retry_period_ns;
	l->duration_s = (int)(cfg->lease_duration_ns / NS_PER_S);
	l->on_started_leading = cfg->on_started_leading;
	l->on_stopped_leading = cfg->on_stopped_leading;
	l->arg = cfg->arg;
	kube_client_init(&l->client, kc, "bootccm/leader-election");
	kube_client_set_retries(&l->client, 0, 0, 0);
	kube_client_set_ratelimit_class(&l->client, FLOWCONTROL_NONE);
	stop_init(&l->stop);
	/* a request in flight when lease_stop comes (a renewal to an API
	 * server that never answers) ends within a second */
	kube_client_set_stop(&l->client, &l->stop);
	pthread_mutex_init(&l->lock, NULL);
	pthread_once(&lease_metrics_once, lease_metrics_init);
	metric_set(lease_m_status, 0, l->name);
	*ret = l;
	return 0;
}

const char *
lease_identity(const struct lease *l)
{
	return l->identity;
}

/* --- requests ------------------------------------------------------------ */

/* lease_request is kube_request with a deadline: like client-go's renew
 * context, no request may outlive the renew deadline, or a hung API server
 * would keep the elector from stopping before the lease expires for others.
 * deadline_ns is on the elector's clock (clock_boot_ns); the client's is
 * CLOCK_MONOTONIC. The client makes no retries (the elector's loop is the
 * retry) and takes no rate-limit token: upstream's leader election has its
 * own client, so controller traffic never delays a renewal. */
static int
lease_request(struct lease *l, const char *method, const char *path, const char *body,
    int64_t deadline_ns, json_object **ret, struct errbuf *e)
{
	int64_t left = deadline_ns - clock_boot_ns();
	int r;

	if (left < NS_PER_MS)
		return errbuf_set(e, ERR_TIMEOUT, "%s %s: no time left before the renew deadline",
		    method, path);
	kube_client_set_deadline(&l->client, clock_add_ns(clock_mono_ns(), left));
	r = kube_request(&l->client, method, path, body ? "application/json" : NULL, body,
	    ret, NULL, e);
	kube_client_set_deadline(&l->client, 0);
	return r;
}

/* lease_adopt makes an answer the Lease to PUT back next time. */
static void
lease_adopt(struct lease *l, json_object *o)
{
	json_object_put(l->obj);
	l->obj = o;
}

/* lease_get reads the Lease into *ret (and l->obj). */
static int
lease_get(struct lease *l, int64_t deadline_ns, struct lease_record *ret, struct errbuf *e)
{
	json_object *o = NULL;
	int r;

	if ((r = lease_request(l, "GET", l->path, NULL, deadline_ns, &o, e)) < 0)
		return r;
	if ((r = lease_record_decode(o, ret, e)) < 0) {
		errbuf_prefix(e, r, "Lease %s", l->desc);
		json_object_put(o);
		return r;
	}
	lease_adopt(l, o);
	return 0;
}

/* lease_write creates the Lease (l->obj NULL: no resourceVersion, which a
 * create must not carry) or PUTs l->obj back with rec as its spec: the
 * resourceVersion it carries makes the update conditional (409 when someone
 * wrote in between; a Lease update without one is a 422). */
static int
lease_write(struct lease *l, const struct lease_record *rec, int64_t deadline_ns,
    struct errbuf *e)
{
	json_object *body = NULL, *spec, *md, *answer = NULL;
	const char *text;
	int r, create = l->obj == NULL;

	if ((spec = lease_record_spec(rec)) == NULL)
		return errbuf_set(e, ERR_INVALID, "Lease %s: a time of the record cannot be "
		    "written as a MicroTime", l->desc);
	if (create) {
		body = xcheck(json_object_new_object());
		md = xcheck(json_object_new_object());
		json_object_object_add(md, "name", xcheck(json_object_new_string(l->name)));
		json_object_object_add(md, "namespace",
		    xcheck(json_object_new_string(l->namespace)));
		json_object_object_add(body, "apiVersion",
		    xcheck(json_object_new_string("coordination.k8s.io/v1")));
		json_object_object_add(body, "kind", xcheck(json_object_new_string("Lease")));
		json_object_object_add(body, "metadata", md);
	} else {
		body = json_object_get(l->obj);
		if (!json_object_object_get_ex(body, "kind", NULL))
			json_object_object_add(body, "kind",
			    xcheck(json_object_new_string("Lease")));
		if (!json_object_object_get_ex(body, "apiVersion", NULL))
			json_object_object_add(body, "apiVersion",
			    xcheck(json_object_new_string("coordination.k8s.io/v1")));
	}
	json_object_object_add(body, "spec", spec);
	if ((text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE)) == NULL)
		xalloc_fatal(__FILE__, __LINE__);
	r = lease_request(l, create ? "POST" : "PUT", create ? l->collection : l->path,
	    text, deadline_ns, &answer, e);
	json_object_put(body);
	if (r < 0) {
		/* l->obj now carries a spec that is not on the server; that is
		 * harmless (the next PUT replaces the spec), but the next round
		 * must re-read after a conflict, which lease_try does */
		return r;
	}
	lease_adopt(l, answer);
	return 0;
}

/* --- the elector ------------------------------------------------------------ */

static int
lease_stopping(struct lease *l)
{
	return stop_requested(&l->stop);
}

/* lease_sleep_until waits until the elector clock (CLOCK_BOOTTIME) reaches
 * until_ns or a stop is requested. The sleep runs on the monotonic clock,
 * which stands still while the machine is suspended, so it sleeps the time
 * left on the boot clock and looks again. Returns 1 when stopping. */
static int
lease_sleep_until(struct lease *l, int64_t until_ns)
{
	int64_t left;

	while ((left = until_ns - clock_boot_ns()) > 0)
		if (stop_sleep(&l->stop, left))
			return 1;
	return lease_stopping(l);
}

/* lease_log_failure logs a failure at error level once, and its repeats at
 * -v=4, so a long RBAC denial or outage does not flood the log. */
static void
lease_log_failure(struct lease *l, const char *msg, const struct errbuf *e)
{
	if (strcmp(l->last_err, e->msg) != 0) {
		snprintf(l->last_err, sizeof(l->last_err), "%s", e->msg);
		log_error(msg, "lease", l->desc, "identity", l->identity, "err", e->msg, NULL);
	} else {
		log_info(4, msg, "lease", l->desc, "identity", l->identity, "err", e->msg, NULL);
	}
}

/* lease_succeeded records a successful write of rec sent at sent_ns. The
 * send time, not the answer's, starts the renew deadline: the server may have
 * applied the write any time after it, so others may have seen it that
 * early. */
static void
lease_succeeded(struct lease *l, const struct lease_record *rec, int64_t sent_ns)
{
	l->obs.rec = *rec;
	l->obs.time_ns = sent_ns;
	l->obs.have = 1;
	l->last_err[0] = '\0';
	pthread_mutex_lock(&l->lock);
	l->renewed_ns = sent_ns;
	pthread_mutex_unlock(&l->lock);
}

/* lease_try is client-go's tryAcquireOrRenew: 1 when this replica holds the
 * Lease afresh, 0 when not (held by another, or a request failed; failures
 * are logged). A leader that finds another holder (or none) in the record
 * has lost the Lease: 0, without taking it back, so it stops leading first.
 * No request outlives deadline_ns. */
static int
lease_try(struct lease *l, int64_t deadline_ns, int leading)
{
	struct lease_record cur, rec;
	struct errbuf e = { "" };
	int64_t now = clock_boot_ns(), unix_now = clock_real_ns();
	int r;

	/* fast path: the holder updates the record it wrote last, optimistically */
	if (l->obs.have && l->obj && strcmp(l->obs.rec.holder, l->identity) == 0 &&
	    lease_valid(&l->obs, now)) {
		rec = l->obs.rec;
		rec.duration_s = l->duration_s;
		rec.renew_ns = unix_now;
		if ((r = lease_write(l, &rec, deadline_ns, &e)) == 0) {
			lease_succeeded(l, &rec, now);
			return 1;
		}
		log_info(4, "Failed to update lock optimistically, falling back to slow path",
		    "lease", l->desc, "err", e.msg, NULL);
		now = clock_boot_ns();
		unix_now = clock_real_ns();
	}

	/* slow path: read, judge, write */
	r = lease_get(l, deadline_ns, &cur, &e);
	if (r == ERR_NOT_FOUND) {
		lease_adopt(l, NULL);
		memset(&rec, 0, sizeof(rec));
		snprintf(rec.holder, sizeof(rec.holder), "%s", l->identity);
		rec.duration_s = l->duration_s;
		rec.acquire_ns = rec.renew_ns = unix_now;
		now = clock_boot_ns();
		if ((r = lease_write(l, &rec, deadline_ns, &e)) < 0) {
			lease_log_failure(l, "Error initially creating leader election record", &e);
			return 0;
		}
		lease_succeeded(l, &rec, now);
		return 1;
	}
	if (r < 0) {
		lease_log_failure(l, "Error retrieving resource lock", &e);
		return 0;
	}
	/* the record counts as seen when the answer arrived: for a contender
	 * that is the later, safer choice */
	now = clock_boot_ns();
	unix_now = clock_real_ns();
	lease_observe(&l->obs, &cur, now);
	if (leading && strcmp(cur.holder, l->identity) != 0)
		return 0;
	switch (lease_decide(&l->obs, l->identity, l->duration_s, now, unix_now, &rec)) {
	case LEASE_HELD:
		log_info(4, "Lock is held by another and has not yet expired", "lease", l->desc,
		    "holder", l->obs.rec.holder, NULL);
		l->last_err[0] = '\0';
		return 0;
	case LEASE_RENEW:
	case LEASE_ACQUIRE:
		break;
	}
	if ((r = lease_write(l, &rec, deadline_ns, &e)) < 0) {
		lease_log_failure(l, "Failed to update lock", &e);
		return 0;
	}
	lease_succeeded(l, &rec, now);
	return 1;
}

/* lease_poll_ns is how long a contender waits between tries: the retry
 * period less up to LEASE_POLL_JITTER of it. client-go waits 1 to 2.2 retry
 * periods; never waiting longer than one is what bounds the takeover after a
 * leader dies to the lease duration + one retry period. */
static int64_t
lease_poll_ns(int64_t period_ns)
{
	uint32_t x = 0;

	uuid_random(&x, sizeof(x));
	return period_ns - (int64_t)((double)period_ns * LEASE_POLL_JITTER *
	    ((double)x / 4294967296.0));
}

/* lease_acquire campaigns until the Lease is ours (1) or a stop (0). */
static int
lease_acquire(struct lease *l)
{
	log_info(0, "Attempting to acquire leader lease", "lease", l->desc,
	    "identity", l->identity, NULL);
	for (;;) {
		int64_t start = clock_boot_ns(), wake;
		if (lease_stopping(l))
			return 0;
		if (lease_try(l, start + l->renew_deadline_ns, 0))
			return 1;
		log_info(4, "Failed to acquire lease", "lease", l->desc, NULL);
		wake = clock_add_ns(clock_boot_ns(), lease_poll_ns(l->retry_period_ns));
		/* a held lease is tried again right as it expires, so a dead
		 * holder is replaced within the lease duration + one request */
		if (l->obs.have && l->obs.rec.holder[0] != '\0' &&
		    strcmp(l->obs.rec.holder, l->identity) != 0) {
			int64_t expiry = clock_add_ns(clock_add_ns(l->obs.time_ns,
			    (int64_t)l->obs.rec.duration_s * NS_PER_S), LEASE_EXPIRY_SLACK_NS);
			if (expiry > clock_boot_ns() && expiry < wake)
				wake = expiry;
		}
		if (lease_sleep_until(l, wake))
			return 0;
	}
}

static void
lease_set_leading(struct lease *l, int leading)
{
	pthread_mutex_lock(&l->lock);
	l->leading = leading;
	if (leading)
		l->acting = 1;
	pthread_mutex_unlock(&l->lock);
}

/* lease_lead runs while this replica leads: renews every retry period and
 * returns once it stopped leading (on_stopped_leading has returned). */
static void
lease_lead(struct lease *l)
{
	const char *why = "stopping";
	int64_t renewed, deadline, next, t0, t1;

	lease_set_leading(l, 1);
	metric_set(lease_m_status, 1, l->name);
	metric_add(lease_m_transitions, 1, l->name, "started_leading");
	log_info(0, "Successfully acquired lease", "lease", l->desc, "identity", l->identity, NULL);
	l->on_started_leading(l->arg);

	next = clock_add_ns(clock_boot_ns(), l->retry_period_ns);
	for (;;) {
		pthread_mutex_lock(&l->lock);
		renewed = l->renewed_ns;
		pthread_mutex_unlock(&l->lock);
		deadline = renewed + l->renew_deadline_ns;
		if (lease_sleep_until(l, next < deadline ? next : deadline))
			break;
		if (clock_boot_ns() >= deadline) {
			why = "renew deadline passed";
			log_error("Failed to renew lease", "lease", l->desc, "identity", l->identity,
			    "err", "the renew deadline passed", NULL);
			break;
		}
		if (lease_try(l, deadline, 1)) {
			log_info(5, "Successfully renewed lease", "lease", l->desc, NULL);
			next = clock_add_ns(clock_boot_ns(), l->retry_period_ns);
			continue;
		}
		if (l->obs.have && strcmp(l->obs.rec.holder, l->identity) != 0) {
			/* client-go would keep "leading" until the renew deadline;
			 * someone else holds the Lease now, so stop at once */
			why = "lease lost";
			log_error("Failed to renew lease", "lease", l->desc, "identity", l->identity,
			    "err", "the lease is no longer ours", "holder", l->obs.rec.holder, NULL);
			break;
		}
		log_warn("Failed to renew lease", "lease", l->desc, "identity", l->identity,
		    "err", l->last_err, NULL);
		next = clock_add_ns(clock_boot_ns(), l->retry_period_ns);
	}

	/* not the leader from here on, for every thread, before the callback */
	lease_set_leading(l, 0);
	metric_set(lease_m_status, 0, l->name);
	metric_add(lease_m_transitions, 1, l->name, "stopped_leading");
	log_info(0, "Stopped leading", "lease", l->desc, "identity", l->identity,
	    "reason", why, NULL);
	t0 = clock_boot_ns();
	l->on_stopped_leading(l->arg);
	t1 = clock_boot_ns();
	pthread_mutex_lock(&l->lock);
	l->acting = 0;
	renewed = l->renewed_ns;
	pthread_mutex_unlock(&l->lock);
	if (t1 >= renewed + l->lease_duration_ns) {
		char ms[32];
		snprintf(ms, sizeof(ms), "%" PRId64, (int64_t)((t1 - t0) / NS_PER_MS));
		log_error("Controllers stopped only after the lease could have expired: "
		    "another replica may have acted at the same time", "lease", l->desc,
		    "identity", l->identity, "stopMilliseconds", ms, NULL);
	}
}

/* lease_release is client-go's ReleaseOnCancel: hand the Lease over at once. */
static void
lease_release(struct lease *l)
{
	struct lease_record rec;
	struct errbuf e = { "" };
	int64_t now = clock_boot_ns(), unix_now = clock_real_ns();

	if (!l->obs.have || l->obj == NULL || strcmp(l->obs.rec.holder, l->identity) != 0)
		return;
	memset(&rec, 0, sizeof(rec));
	rec.duration_s = 1;
	rec.acquire_ns = rec.renew_ns = unix_now;
	rec.transitions = l->obs.rec.transitions;
	/* the stop that ended the elector would cancel the release too: the
	 * release has a short deadline of its own instead, so a stop never
	 * waits long on an API server that does not answer */
	kube_client_set_stop(&l->client, NULL);
	if (lease_write(l, &rec, clock_add_ns(now, l->renew_deadline_ns < LEASE_RELEASE_TIMEOUT_NS ?
	    l->renew_deadline_ns : LEASE_RELEASE_TIMEOUT_NS), &e) < 0) {
		log_error("Failed to release lock", "lease", l->desc, "identity", l->identity,
		    "err", e.msg, NULL);
		return;
	}
	lease_observe(&l->obs, &rec, now);
	log_info(0, "Released lease", "lease", l->desc, "identity", l->identity, NULL);
}

static void *
lease_main(void *arg)
{
	struct lease *l = arg;

	while (lease_acquire(l)) {
		lease_lead(l);
		if (lease_stopping(l))
			break;
	}
	lease_release(l);
	return NULL;
}

int
lease_start(struct lease *l, struct errbuf *e)
{
	if (l->started)
		return errbuf_set(e, ERR_INTERNAL, "leader election: already started");
	if (pthread_create(&l->thread, NULL, lease_main, l) != 0)
		return errbuf_set(e, ERR_INTERNAL, "leader election: cannot start a thread");
	l->started = 1;
	return 0;
}

int
lease_is_leader(struct lease *l)
{
	int r;

	if (l == NULL)
		return 0;
	pthread_mutex_lock(&l->lock);
	r = l->leading && clock_boot_ns() < clock_add_ns(l->renewed_ns, l->renew_deadline_ns);
	pthread_mutex_unlock(&l->lock);
	return r;
}

int
lease_healthz(struct lease *l, struct errbuf *e)
{
	int ok;

	pthread_mutex_lock(&l->lock);
	ok = lease_health(l->acting, l->renewed_ns, l->lease_duration_ns, clock_boot_ns());
	pthread_mutex_unlock(&l->lock);
	if (!ok)
		return errbuf_set(e, ERR_TIMEOUT, "failed election to renew leadership on lease %s",
		    l->desc);
	return 0;
}

void
lease_stop(struct lease *l)
{
	if (l == NULL || !l->started)
		return;
	stop_request(&l->stop);
	pthread_join(l->thread, NULL);
	l->started = 0;
}

void
lease_free(struct lease *l)
{
	if (l == NULL)
		return;
	lease_stop(l);
	json_object_put(l->obj);
	kube_client_cleanup(&l->client);
	stop_destroy(&l->stop);
	pthread_mutex_destroy(&l->lock);
	free(l);
}
