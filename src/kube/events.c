/* events.c - the Event recorder: a bounded queue, one sending thread, and
 * the Event objects it writes (the correlation is kube/eventcorr.c). */
#include "kube/events.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "kube/client.h"
#include "kube/eventcorr.h"
#include "kube/flowcontrol.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/rfc3339.h"
#include "base/stop.h"
#include "base/uuid.h"
#include "base/xalloc.h"

#define EVENTS_PATH_MAX 512          /* bytes: an API path for an Event */

/* --- the recorder -------------------------------------------------------------- */

struct events {
	struct events_correlator *corr;       /* events thread only */
	struct kube_client client;            /* events thread only */
	size_t queue_max;
	int64_t retry_interval_ns;
	int max_tries;
	int failing;                          /* events thread: last write failed */

	pthread_t thread;
	int started;
	struct stop stop;                     /* events_stop; requested under lock */
	struct stop abort;                    /* the client's: past the flush
	                                         deadline, a write in flight ends */
	struct stop finished;                 /* the thread is about to return */
	pthread_mutex_t lock;
	pthread_cond_t cond;                  /* the queue: an event, or the stop */
	/* guarded by lock */
	struct events_event *head, **tail;
	size_t len;
	int64_t flush_deadline_ns;            /* monotonic, set before the stop */
	int overflowing;                      /* dropping for a full queue */
};

static struct metric *events_m_sent, *events_m_aggregated, *events_m_dropped, *events_m_queue;
static pthread_once_t events_metrics_once = PTHREAD_ONCE_INIT;

static void
events_metrics_init(void)
{
	events_m_sent = metrics_counter("bootccm_events_sent_total",
	    "Events written to the API server (created or, when aggregated, patched).", NULL);
	events_m_aggregated = metrics_counter("bootccm_events_aggregated_total",
	    "Events written as a count increment of an existing Event.", NULL);
	events_m_dropped = metrics_counter("bootccm_events_dropped_total",
	    "Events not written, by reason: queue_full, spam, rejected, retries, "
	    "shutdown, invalid.", "reason");
	events_m_queue = metrics_gauge("bootccm_events_queue_length",
	    "Events waiting to be sent.", NULL);
}

/* events_copy copies s into a field of cap bytes (with the NUL); a string
 * that does not fit is an error. */
static int
events_copy(char *dst, size_t cap, const char *s)
{
	size_t l = s ? strlen(s) : 0;

	if (l >= cap)
		return ERR_INVALID;
	if (l)
		memcpy(dst, s, l);
	dst[l] = '\0';
	return 0;
}

/* events_cut copies s, cut to at most max bytes at a UTF-8 character
 * boundary (never inside a multi-byte sequence). */
static void
events_cut(char *dst, size_t max, const char *s)
{
	size_t l = s ? strlen(s) : 0;

	if (l > max) {
		l = max;
		while (l > 0 && ((unsigned char)s[l] & 0xc0) == 0x80)
			l--;
	}
	if (l)
		memcpy(dst, s, l);
	dst[l] = '\0';
}

/* events_segment_ok tells whether s can go into a URL path segment as is:
 * object names and namespaces never need escaping. */
static int
events_segment_ok(const char *s)
{
	if (*s == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || *s == '-' || *s == '.' || *s == '_' || *s == ':'))
			return 0;
	return 1;
}

int
events_fill(struct events_event *ev, const struct events_ref *ref, const char *type,
    const char *reason, const char *message, int64_t time_ns)
{
	memset(ev, 0, sizeof(*ev));
	if (ref == NULL || ref->kind == NULL || *ref->kind == '\0' || ref->name == NULL ||
	    !events_segment_ok(ref->name))
		return ERR_INVALID;
	if (type == NULL || (strcmp(type, EVENTS_NORMAL) != 0 && strcmp(type, EVENTS_WARNING) != 0))
		return ERR_INVALID;
	if (ref->namespace && *ref->namespace && !events_segment_ok(ref->namespace))
		return ERR_INVALID;
	if (events_copy(ev->kind, sizeof(ev->kind), ref->kind) < 0 ||
	    events_copy(ev->obj_namespace, sizeof(ev->obj_namespace), ref->namespace) < 0 ||
	    events_copy(ev->obj_name, sizeof(ev->obj_name), ref->name) < 0 ||
	    events_copy(ev->uid, sizeof(ev->uid), ref->uid) < 0 ||
	    events_copy(ev->api_version, sizeof(ev->api_version), ref->api_version) < 0 ||
	    events_copy(ev->resource_version, sizeof(ev->resource_version),
	    ref->resource_version) < 0 ||
	    events_copy(ev->field_path, sizeof(ev->field_path), ref->field_path) < 0)
		return ERR_INVALID;
	snprintf(ev->type, sizeof(ev->type), "%s", type);
	events_cut(ev->reason, EVENTS_REASON_MAX, reason);
	events_cut(ev->message, EVENTS_MESSAGE_MAX, message);
	ev->time_ns = time_ns;
	/* cluster-scoped objects' events live in "default", like client-go's */
	snprintf(ev->namespace, sizeof(ev->namespace), "%s",
	    ev->obj_namespace[0] ? ev->obj_namespace : "default");
	return 0;
}


/* events_time formats Unix seconds as a metav1.Time (RFC 3339, UTC, seconds),
 * the epoch for a time outside the years 0-9999. */
static void
events_time(int64_t s, char *buf, size_t len)
{
	if (rfc3339_format(s, buf, len) < 0)
		snprintf(buf, len, "1970-01-01T00:00:00Z");
}

/* events_add_str adds member key with v, redacted (log_redact_str): every
 * text of an Event goes through here, so a secret a server echoed into an
 * error message never reaches an object anyone with the view role reads. */
static void
events_add_str(json_object *o, const char *key, const char *v, int omitempty)
{
	char *clean;

	if (omitempty && (v == NULL || *v == '\0'))
		return;
	clean = log_redact_str(v);
	json_object_object_add(o, key, xcheck(json_object_new_string(clean ? clean :
	    v ? v : "")));
	free(clean);
}

char *
events_body(const struct events_correlator *c, const struct events_event *ev,
    enum events_verdict v)
{
	json_object *o = xcheck(json_object_new_object()), *md, *io, *src;
	char last[RFC3339_MAX], first[RFC3339_MAX];
	const char *s;
	char *out;

	events_time(events_floor_s(ev->time_ns), last, sizeof(last));
	if (v == EVENTS_PATCH) {
		/* what client-go's two-way merge patch holds for a repeat */
		json_object_object_add(o, "count", xcheck(json_object_new_int(ev->count)));
		events_add_str(o, "lastTimestamp", last, 0);
		events_add_str(o, "message", ev->message, 0);
	} else {
		events_time(ev->first_s, first, sizeof(first));
		md = xcheck(json_object_new_object());
		io = xcheck(json_object_new_object());
		src = xcheck(json_object_new_object());
		events_add_str(o, "apiVersion", "v1", 0);
		events_add_str(o, "kind", "Event", 0);
		events_add_str(md, "name", ev->name, 0);
		events_add_str(md, "namespace", ev->namespace, 0);
		json_object_object_add(o, "metadata", md);
		/* ObjectReference: every field omitempty */
		events_add_str(io, "kind", ev->kind, 1);
		events_add_str(io, "namespace", ev->obj_namespace, 1);
		events_add_str(io, "name", ev->obj_name, 1);
		events_add_str(io, "uid", ev->uid, 1);
		events_add_str(io, "apiVersion", ev->api_version, 1);
		events_add_str(io, "resourceVersion", ev->resource_version, 1);
		events_add_str(io, "fieldPath", ev->field_path, 1);
		json_object_object_add(o, "involvedObject", io);
		events_add_str(o, "reason", ev->reason, 1);
		events_add_str(o, "message", ev->message, 1);
		events_add_str(src, "component", events_correlator_component(c), 1);
		events_add_str(src, "host", events_correlator_host(c), 1);
		json_object_object_add(o, "source", src);
		events_add_str(o, "firstTimestamp", first, 0);
		events_add_str(o, "lastTimestamp", last, 0);
		json_object_object_add(o, "count", xcheck(json_object_new_int(ev->count)));
		events_add_str(o, "type", ev->type, 1);
		/* set by client-go's recorder from the source; no eventTime, so
		 * the server validates this as an old-style event */
		events_add_str(o, "reportingComponent", events_correlator_component(c), 0);
		events_add_str(o, "reportingInstance", events_correlator_host(c), 0);
	}
	if ((s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE)) == NULL)
		xalloc_fatal(__FILE__, __LINE__);  /* json-c fails only out of memory */
	out = xstrdup(s);
	json_object_put(o);
	return out;
}

/* --- recorder ------------------------------------------------------------------------ */

int
events_new(struct kubeconfig *kc, const struct events_config *cfg, struct events **ret,
    struct errbuf *e)
{
	struct events *ev;
	const char *component = cfg && cfg->component ? cfg->component : EVENTS_COMPONENT;
	const char *host = cfg && cfg->host ? cfg->host : "";

	if (strlen(component) > EVENTS_HOST_MAX || *component == '\0')
		return errbuf_set(e, ERR_INVALID, "events: bad source component \"%.64s\"",
		    component);
	if (strlen(host) > EVENTS_HOST_MAX)
		return errbuf_set(e, ERR_INVALID, "events: source host longer than %d bytes",
		    EVENTS_HOST_MAX);
	ev = xcalloc(1, sizeof(*ev));
	ev->corr = events_correlator_new(component, host);
	kube_client_init(&ev->client, kc, "bootccm/events");
	kube_client_set_ratelimit_class(&ev->client, FLOWCONTROL_EVENTS);
	stop_init(&ev->abort);
	stop_init(&ev->finished);
	kube_client_set_stop(&ev->client, &ev->abort);
	ev->queue_max = cfg && cfg->queue_max ? cfg->queue_max : EVENTS_QUEUE_MAX;
	ev->retry_interval_ns = cfg && cfg->retry_interval_ns > 0 ? cfg->retry_interval_ns :
	    EVENTS_RETRY_INTERVAL_NS;
	ev->max_tries = cfg && cfg->max_tries > 0 ? cfg->max_tries : EVENTS_MAX_TRIES;
	ev->tail = &ev->head;
	stop_init(&ev->stop);
	pthread_mutex_init(&ev->lock, NULL);
	pthread_cond_init(&ev->cond, NULL);
	pthread_once(&events_metrics_once, events_metrics_init);
	*ret = ev;
	return 0;
}

void
events_record(struct events *ev, const struct events_ref *ref, const char *type,
    const char *reason, const char *message)
{
	struct events_event *item;
	const char *drop = NULL;
	int first_overflow = 0;
	size_t len = 0;

	if (ev == NULL)
		return;
	item = xmalloc(sizeof(*item));
	if (events_fill(item, ref, type, reason, message, clock_real_ns()) < 0) {
		free(item);
		metric_add(events_m_dropped, 1, "invalid");
		log_error("Dropped an event that cannot be written", "kind",
		    ref && ref->kind ? ref->kind : "", "name", ref && ref->name ? ref->name : "",
		    "type", type ? type : "", "reason", reason ? reason : "", NULL);
		return;
	}
	item->next = NULL;
	pthread_mutex_lock(&ev->lock);
	if (stop_requested(&ev->stop)) {
		drop = "shutdown";
	} else if (ev->len >= ev->queue_max) {
		drop = "queue_full";
		first_overflow = !ev->overflowing;
		ev->overflowing = 1;
	} else {
		*ev->tail = item;
		ev->tail = &item->next;
		len = ++ev->len;
		pthread_cond_signal(&ev->cond);
	}
	pthread_mutex_unlock(&ev->lock);
	if (drop) {
		free(item);
		metric_add(events_m_dropped, 1, drop);
		if (first_overflow)
			log_warn("Unable to record event: too many queued events, dropping events",
			    "queued", "full", NULL);
		return;
	}
	metric_set(events_m_queue, (double)len);
}

void
events_recordf(struct events *ev, const struct events_ref *ref, const char *type,
    const char *reason, const char *fmt, ...)
{
	char msg[EVENTS_MESSAGE_MAX + 1];
	va_list ap;

	if (ev == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	events_record(ev, ref, type, reason, msg);
}

size_t
events_queue_length(struct events *ev)
{
	size_t n;

	pthread_mutex_lock(&ev->lock);
	n = ev->len;
	pthread_mutex_unlock(&ev->lock);
	return n;
}

/* events_answer reads what the server stored (name, resourceVersion, count,
 * firstTimestamp) into the correlator, so the next repeat patches it. */
static void
events_answer(struct events *ev, struct events_event *item, json_object *o)
{
	json_object *md, *v;
	const char *name = item->name, *rv = "";
	int count = item->count;

	if (json_object_object_get_ex(o, "metadata", &md)) {
		if (json_object_object_get_ex(md, "name", &v) && json_object_is_type(v, json_type_string) &&
		    json_object_get_string_len(v) <= EVENTS_EVENT_NAME_MAX)
			name = json_object_get_string(v);
		if (json_object_object_get_ex(md, "resourceVersion", &v) &&
		    json_object_is_type(v, json_type_string) &&
		    json_object_get_string_len(v) <= EVENTS_RV_MAX)
			rv = json_object_get_string(v);
	}
	if (json_object_object_get_ex(o, "count", &v) && json_object_is_type(v, json_type_int)) {
		int64_t c = json_object_get_int64(v);
		if (c >= 1 && c <= INT32_MAX)
			count = (int)c;
	}
	/* firstTimestamp stays ours: a patch never changes it */
	events_correlator_update(ev->corr, item, name, rv, count, item->first_s);
}

/* events_write sends one correlated event once. Returns 0 when done (written,
 * or refused for good: *ret_drop set), or a negative code worth retrying. */
static int
events_write(struct events *ev, struct events_event *item, enum events_verdict v,
    const char **ret_drop, struct errbuf *e)
{
	char path[EVENTS_PATH_MAX], *body = NULL;
	json_object *answer = NULL;
	long status = 0;
	int r, patched = 0;

	*ret_drop = NULL;
	if (v == EVENTS_PATCH) {
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events/%s", item->namespace,
		    item->name);
		body = events_body(ev->corr, item, EVENTS_PATCH);
		r = kube_request(&ev->client, "PATCH", path,
		    "application/strategic-merge-patch+json", body, &answer, &status, e);
		free(body);
		body = NULL;
		if (r == 0)
			patched = 1;
		else if (r != ERR_NOT_FOUND)
			goto out;
		/* the Event was garbage-collected: create it again, same name
		 * and count, without a resourceVersion */
	}
	if (!patched) {
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", item->namespace);
		item->rv[0] = '\0';
		body = events_body(ev->corr, item, EVENTS_CREATE);
		r = kube_request(&ev->client, "POST", path, "application/json", body, &answer,
		    &status, e);
		free(body);
	}
out:
	if (r == 0) {
		events_answer(ev, item, answer);
		json_object_put(answer);
		metric_add(events_m_sent, 1);
		if (patched)
			metric_add(events_m_aggregated, 1);
		return 0;
	}
	json_object_put(answer);
	/* like client-go: no answer (connection, TLS, timeout) is worth
	 * retrying; so are the answers that say "later" (429, 5xx); any other
	 * answer refuses this event for good */
	if (status == 0 || r == ERR_TRANSIENT || r == ERR_TIMEOUT || r == ERR_TOO_MANY_REQUESTS)
		return r;
	*ret_drop = r == ERR_EXISTS ? "" : "rejected";
	return 0;
}

/* events_wait sleeps delay_ns unless stopping past the flush deadline.
 * Returns 1 when the event in hand must be given up. */
static int
events_wait(struct events *ev, int64_t delay_ns)
{
	int64_t until = clock_add_ns(clock_mono_ns(), delay_ns), flush;

	if (!stop_sleep_until(&ev->stop, until))
		return 0;
	/* stopping: the retry may still go out if it is due before the flush
	 * deadline (set before the stop was requested) */
	pthread_mutex_lock(&ev->lock);
	flush = ev->flush_deadline_ns;
	pthread_mutex_unlock(&ev->lock);
	stop_sleep_until(NULL, until < flush ? until : flush);
	return clock_mono_ns() >= flush;
}

/* events_send correlates one event and writes it, retrying as client-go's
 * recordToSink does. */
static void
events_send(struct events *ev, struct events_event *item)
{
	enum events_verdict v = events_correlate(ev->corr, item);
	struct errbuf e = { "" };
	const char *drop = NULL;
	char count[16];
	int tries = 0;

	if (v == EVENTS_SKIP) {
		metric_add(events_m_dropped, 1, "spam");
		log_info(4, "Event over the per-object rate limit, dropped", "kind", item->kind,
		    "namespace", item->obj_namespace, "name", item->obj_name, "reason", item->reason,
		    NULL);
		return;
	}
	snprintf(count, sizeof(count), "%d", item->count);
	log_info(4, "Event occurred", "object", item->obj_name, "kind", item->kind,
	    "type", item->type, "reason", item->reason, "message", item->message,
	    "count", count, NULL);
	for (;;) {
		int r = events_write(ev, item, v, &drop, &e);
		if (r == 0) {
			if (drop && *drop) {
				metric_add(events_m_dropped, 1, drop);
				log_warn("Server rejected event (will not retry!)", "event", item->name,
				    "namespace", item->namespace, "reason", item->reason, "err", e.msg, NULL);
			}
			ev->failing = 0;
			return;
		}
		if (!ev->failing)
			log_error("Unable to write event (may retry after sleeping)", "event",
			    item->name, "namespace", item->namespace, "err", e.msg, NULL);
		else
			log_info(4, "Unable to write event (may retry after sleeping)", "event",
			    item->name, "err", e.msg, NULL);
		ev->failing = 1;
		if (++tries >= ev->max_tries) {
			metric_add(events_m_dropped, 1, "retries");
			log_warn("Unable to write event (retry limit exceeded!)", "event", item->name,
			    "namespace", item->namespace, "reason", item->reason, NULL);
			return;
		}
		/* the first wait is random, so replicas do not retry in step
		 * after an API server restart */
		int64_t delay = ev->retry_interval_ns;
		if (tries == 1) {
			uint32_t x = 0;
			uuid_random(&x, sizeof(x));
			delay = (int64_t)((double)delay * ((double)x / 4294967296.0));
		}
		if (events_wait(ev, delay)) {
			metric_add(events_m_dropped, 1, "shutdown");
			return;
		}
	}
}

static void *
events_main(void *arg)
{
	struct events *ev = arg;
	struct events_event *item;
	size_t len;

	for (;;) {
		pthread_mutex_lock(&ev->lock);
		while (ev->head == NULL && !stop_requested(&ev->stop))
			pthread_cond_wait(&ev->cond, &ev->lock);
		if (ev->head == NULL || (stop_requested(&ev->stop) &&
		    clock_mono_ns() >= ev->flush_deadline_ns)) {
			pthread_mutex_unlock(&ev->lock);
			break;
		}
		item = ev->head;
		ev->head = item->next;
		if (ev->head == NULL)
			ev->tail = &ev->head;
		len = --ev->len;
		if (len <= ev->queue_max / 2)
			ev->overflowing = 0;
		pthread_mutex_unlock(&ev->lock);
		metric_set(events_m_queue, (double)len);
		events_send(ev, item);
		free(item);
	}
	stop_request(&ev->finished);
	return NULL;
}

int
events_start(struct events *ev, struct errbuf *e)
{
	if (ev->started)
		return errbuf_set(e, ERR_INTERNAL, "events: already started");
	if (pthread_create(&ev->thread, NULL, events_main, ev) != 0)
		return errbuf_set(e, ERR_INTERNAL, "events: cannot start a thread");
	ev->started = 1;
	return 0;
}

/* events_drain frees what is still queued, counting it as dropped. */
static void
events_drain(struct events *ev)
{
	struct events_event *item, *next;
	size_t n = 0;

	pthread_mutex_lock(&ev->lock);
	item = ev->head;
	ev->head = NULL;
	ev->tail = &ev->head;
	ev->len = 0;
	pthread_mutex_unlock(&ev->lock);
	for (; item; item = next) {
		next = item->next;
		free(item);
		n++;
	}
	if (n) {
		metric_add(events_m_dropped, (double)n, "shutdown");
		metric_set(events_m_queue, 0);
	}
}

void
events_stop(struct events *ev, int64_t flush_ns)
{
	if (ev == NULL)
		return;
	/* under the queue's lock, so a consumer about to wait cannot miss it */
	pthread_mutex_lock(&ev->lock);
	if (!stop_requested(&ev->stop)) {
		ev->flush_deadline_ns = clock_add_ns(clock_mono_ns(), flush_ns > 0 ? flush_ns : 0);
		stop_request(&ev->stop);
	}
	pthread_cond_broadcast(&ev->cond);
	pthread_mutex_unlock(&ev->lock);
	if (ev->started) {
		/* a write still in flight at the flush deadline (an API server
		 * that does not answer) is canceled: it ends within a second */
		if (!stop_sleep_until(&ev->finished, ev->flush_deadline_ns))
			stop_request(&ev->abort);
		pthread_join(ev->thread, NULL);
		ev->started = 0;
	}
	events_drain(ev);
}

void
events_free(struct events *ev)
{
	if (ev == NULL)
		return;
	events_stop(ev, 0);
	events_correlator_free(ev->corr);
	kube_client_cleanup(&ev->client);
	pthread_cond_destroy(&ev->cond);
	pthread_mutex_destroy(&ev->lock);
	stop_destroy(&ev->stop);
	stop_destroy(&ev->abort);
	stop_destroy(&ev->finished);
	free(ev);
}
