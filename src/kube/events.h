/* events.h - core/v1 Events about API objects, recorded like client-go's
 * EventRecorder + EventCorrelator: identical events aggregate into one Event
 * with a count, floods are rate-limited per object, and the caller never waits.
 *
 * Contract: events_record copies what it is given into a bounded queue and
 * returns at once, from any thread; when the queue is full the event is
 * dropped and counted. One events thread drains the queue: it correlates each
 * event (client-go's aggregator, logger and spam filter), then creates the
 * Event or PATCHes (strategic merge) the existing one with count+1 and a new
 * lastTimestamp; a PATCH that finds the Event gone (404) creates it again.
 * Failures to reach the API server (no answer, 5xx, 429, timeouts) are
 * retried every retry interval, at most max_tries times; an answer refusing
 * the event (4xx) drops it. Events about cluster-scoped objects (no
 * namespace: Nodes) go to namespace "default". Every text field of an
 * Event, created or patched, passes the log redactor (log_redact_str) as
 * the JSON is built. Logs failures (the recorder is
 * a component, not a library); event messages appear only at -v=4 and up.
 * Metrics: bootccm_events_sent_total, bootccm_events_aggregated_total,
 * bootccm_events_dropped_total{reason}, bootccm_events_queue_length.
 *
 * Wiring in the daemon:
 *   struct events_config ec = { .host = o.node_name };
 *   if (events_new(&kc, &ec, &rec, &e) < 0 || events_start(rec, &e) < 0) fail;
 *   controllers: events_record(rec, &ref, EVENTS_NORMAL, "Synced", "...");
 *   at exit, after the controllers stopped: events_stop(rec, 2 * NS_PER_S);
 *   events_free(rec); */
#ifndef BOOTCCM_KUBE_EVENTS_H
#define BOOTCCM_KUBE_EVENTS_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "config/kubeconfig.h"

#define EVENTS_NORMAL "Normal"
#define EVENTS_WARNING "Warning"

#define EVENTS_COMPONENT "cloud-controller-manager" /* upstream CCM's source.component */
#define EVENTS_QUEUE_MAX 1000          /* queued events (client-go's maxQueuedEvents) */
#define EVENTS_RETRY_INTERVAL_NS (10LL * 1000000000LL) /* client-go's sleepDuration */
#define EVENTS_MAX_TRIES 12            /* client-go's maxTriesPerEvent */
#define EVENTS_CACHE_MAX 4096          /* entries per correlation cache (client-go's LRU) */
#define EVENTS_WINDOW_S 600            /* aggregation window: 10 minutes */
#define EVENTS_SIMILAR_MAX 10          /* distinct messages before "combined" */
#define EVENTS_SPAM_BURST 25           /* events per source and object at once */
#define EVENTS_SPAM_REFILL_S 300       /* then one more every 5 minutes */

/* Caps on what an event carries (bytes, without the NUL). Longer messages
 * and reasons are cut at a UTF-8 character boundary; longer object fields
 * cannot come from a valid object, so such an event is dropped. */
#define EVENTS_KIND_MAX 63
#define EVENTS_NAMESPACE_MAX 63
#define EVENTS_NAME_MAX 253
#define EVENTS_UID_MAX 63
#define EVENTS_APIVERSION_MAX 127
#define EVENTS_RV_MAX 63
#define EVENTS_FIELDPATH_MAX 255
#define EVENTS_REASON_MAX 128
#define EVENTS_MESSAGE_MAX 1024
#define EVENTS_HOST_MAX 253
#define EVENTS_EVENT_NAME_MAX 253      /* the Event's own name (a DNS subdomain) */

/* The object an event is about (core/v1 ObjectReference). kind and name are
 * required; the others may be NULL or "". */
struct events_ref {
	const char *kind;
	const char *namespace;     /* NULL/"" for cluster-scoped objects */
	const char *name;
	const char *uid;
	const char *api_version;
	const char *resource_version;
	const char *field_path;
};

struct events_config {
	const char *component;     /* source.component and reportingComponent;
	                              NULL = EVENTS_COMPONENT */
	const char *host;          /* source.host and reportingInstance; NULL = "" */
	size_t queue_max;          /* 0 = EVENTS_QUEUE_MAX */
	int64_t retry_interval_ns; /* 0 = EVENTS_RETRY_INTERVAL_NS */
	int max_tries;             /* 0 = EVENTS_MAX_TRIES */
};

struct events;

/* events_new prepares a recorder (kc is borrowed and must outlive it).
 * Returns 0 or ERR_INVALID (a component or host too long). */
int events_new(struct kubeconfig *kc, const struct events_config *cfg,
    struct events **ret, struct errbuf *e);

/* events_start starts the events thread. Returns 0 or ERR_INTERNAL. */
int events_start(struct events *ev, struct errbuf *e);

/* events_record queues one event (type EVENTS_NORMAL or EVENTS_WARNING) and
 * returns at once; never fails from the caller's point of view: a full queue,
 * a bad type or an impossible reference drop the event (counted). ev NULL is
 * a no-op, so code can run without a recorder. */
void events_record(struct events *ev, const struct events_ref *ref,
    const char *type, const char *reason, const char *message);

/* events_recordf is events_record with a printf-style message. */
void events_recordf(struct events *ev, const struct events_ref *ref,
    const char *type, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* events_queue_length returns how many events wait to be sent. */
size_t events_queue_length(struct events *ev);

/* events_stop stops accepting events, gives the thread until flush_ns to send
 * what is queued (retries included), drops the rest (counted) and joins it.
 * A request still in flight at that deadline is canceled (it ends within a
 * second), so events_stop returns within about flush_ns + 1 s whatever the
 * API server does. */
void events_stop(struct events *ev, int64_t flush_ns);

/* events_free releases ev (stopping it without a flush if needed). */
void events_free(struct events *ev);

/* --- the correlator, exported for tests -------------------------------------
 * client-go's EventCorrelator with an explicit clock: every decision uses the
 * event's own time. Owned by one thread; not locked. */

struct events_event {
	/* the occurrence */
	char kind[EVENTS_KIND_MAX + 1];
	char obj_namespace[EVENTS_NAMESPACE_MAX + 1];
	char obj_name[EVENTS_NAME_MAX + 1];
	char uid[EVENTS_UID_MAX + 1];
	char api_version[EVENTS_APIVERSION_MAX + 1];
	char resource_version[EVENTS_RV_MAX + 1];
	char field_path[EVENTS_FIELDPATH_MAX + 1];
	char type[8];
	char reason[EVENTS_REASON_MAX + 1];
	/* room for the "(combined from similar events): " prefix */
	char message[EVENTS_MESSAGE_MAX + 64];
	int64_t time_ns;           /* Unix ns of the occurrence */

	/* the Event object, filled by events_correlate */
	char namespace[EVENTS_NAMESPACE_MAX + 1];
	char name[EVENTS_EVENT_NAME_MAX + 1];
	char rv[EVENTS_RV_MAX + 1];    /* of the existing Event, when patching */
	int count;
	int64_t first_s;           /* firstTimestamp, Unix seconds */
	uint64_t key;              /* the correlation key used (hash), for
	                              events_correlator_update */
	struct events_event *next; /* queue link */
};

enum events_verdict {
	EVENTS_CREATE,   /* POST a new Event */
	EVENTS_PATCH,    /* PATCH the existing Event (count, lastTimestamp, message) */
	EVENTS_SKIP,     /* over the per-object rate limit: drop */
};

struct events_correlator;

/* events_correlator_new returns a correlator for one source (component, host). */
struct events_correlator *events_correlator_new(const char *component,
    const char *host);
void events_correlator_free(struct events_correlator *c);

/* events_fill copies ref/type/reason/message into ev with time_ns. Returns 0,
 * or ERR_INVALID (kind or name missing, a bad type, a field over its cap, a
 * namespace or name unfit for a URL path). */
int events_fill(struct events_event *ev, const struct events_ref *ref,
    const char *type, const char *reason, const char *message, int64_t time_ns);

/* events_correlate decides what to send for ev and fills its Event fields. */
enum events_verdict events_correlate(struct events_correlator *c,
    struct events_event *ev);

/* events_correlator_update records what the server answered for an Event
 * sent for ev (its name, resourceVersion, count, firstTimestamp), so the next
 * repeat patches that object. */
void events_correlator_update(struct events_correlator *c,
    const struct events_event *ev, const char *name, const char *rv, int count,
    int64_t first_s);

/* events_body returns the JSON to send for ev (the whole Event for
 * EVENTS_CREATE, the strategic merge patch for EVENTS_PATCH) as a malloc'd
 * string, every registered secret redacted from its texts; times are
 * metav1.Time (rfc3339_format). */
char *events_body(const struct events_correlator *c, const struct events_event *ev,
    enum events_verdict v);

#endif
