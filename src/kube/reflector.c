/* reflector.c - LIST and WATCH one resource into a store, client-go style. */
#include "kube/reflector.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/hmap.h"
#include "kube/client.h"
#include "kube/node.h"
#include "kube/watch.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/urlesc.h"
#include "base/xalloc.h"

#define REFLECTOR_LIST_TIMEOUT_MS 60000  /* one LIST page */
#define REFLECTOR_WATCH_SLACK_S 60       /* client-side deadline past timeoutSeconds,
                                            for a connection gone silent */
#define REFLECTOR_SHORT_WATCH_NS NS_PER_S /* a watch that ends sooner, empty, is
                                            a failure (client-go's "very short watch") */
#define REFLECTOR_LOGGED_MAX 64          /* bad objects remembered as logged */
#define REFLECTOR_STACK_SIZE (1024 * 1024) /* bytes: the thread's stack */

/* What one watch came to. */
enum {
	REFLECTOR_W_ENDED = 1,  /* the stream ended or dropped after working: re-watch */
	REFLECTOR_W_SHORT,      /* it ended at once, empty: back off, re-watch */
	REFLECTOR_W_FAILED,     /* no stream: back off, re-watch */
	REFLECTOR_W_RELIST,     /* 410 or a lost event: back off, re-list */
	REFLECTOR_W_STOPPED,
};

struct reflector {
	struct reflector_config cfg;   /* strings point at copies we own */
	struct reflector_handlers handlers[REFLECTOR_HANDLERS_MAX];
	size_t nhandlers;
	struct kubeconfig *kc;
	struct kube_client client;
	struct store *store;
	char *selectors;               /* "&labelSelector=...&fieldSelector=..." */

	pthread_t thread;
	int started;                   /* owner side only */
	pthread_mutex_t lock;          /* synced (for waiters), rv */
	pthread_cond_t cond;           /* synced or stopping, for waiters */
	struct stop stop;              /* also the client's (its retries) */
	int synced;                    /* atomic */
	char rv[KUBE_WATCH_RV_MAX];    /* written by the thread under lock */

	/* the thread's own state */
	struct backoff backoff;        /* between failures; its draws also pick
	                                  the watches' timeoutSeconds */
	int64_t next_resync_ns;
	struct kube_watch_lines lines;
	struct kube_watch_list list;
	struct errbuf werr;            /* why a stream callback ended the stream */
	int outcome;                   /* set by the callbacks: REFLECTOR_W_RELIST */
	int stop_abort;                /* a callback aborted the stream to stop */
	int expired;                   /* the stream ended with a 410 ERROR event */
	size_t events, bytes;
	const struct store_obj **objs; /* a LIST's decoded objects */
	size_t nobjs, objs_alloc;
	char **keep;                   /* a LIST's keys that failed to decode */
	size_t nkeep, keep_alloc;
	size_t unkeyed;                /* a LIST's items without a usable key */
	uint64_t logged[REFLECTOR_LOGGED_MAX]; /* hmap_hash of "key\nrv" */
	size_t nlogged;
};

static pthread_once_t reflector_metrics_once = PTHREAD_ONCE_INIT;
static struct metric *reflector_m_lists, *reflector_m_relists, *reflector_m_watches,
    *reflector_m_errors, *reflector_m_events, *reflector_m_resyncs,
    *reflector_m_objects, *reflector_m_bytes, *reflector_m_synced;

static void
reflector_metrics_init(void)
{
	reflector_m_lists = metrics_counter("bootccm_reflector_lists_total",
	    "Complete LISTs started (first list and re-lists).", "resource");
	reflector_m_relists = metrics_counter("bootccm_reflector_relists_total",
	    "LISTs after the first: after a 410, a lost event or a failed list.",
	    "resource");
	reflector_m_watches = metrics_counter("bootccm_reflector_watches_total",
	    "WATCH requests made.", "resource");
	reflector_m_errors = metrics_counter("bootccm_reflector_errors_total",
	    "Failures by kind: list, watch (request), stream (a broken or oversized "
	    "event), expired (410), object (an object that cannot be decoded).",
	    "resource,kind");
	reflector_m_events = metrics_counter("bootccm_reflector_events_total",
	    "Watch events received, by type.", "resource,type");
	reflector_m_resyncs = metrics_counter("bootccm_reflector_resyncs_total",
	    "Periodic re-deliveries of every object.", "resource");
	reflector_m_objects = metrics_gauge("bootccm_reflector_store_objects",
	    "Objects in the cache.", "resource");
	reflector_m_bytes = metrics_gauge("bootccm_reflector_store_bytes",
	    "Bytes the cached objects take.", "resource");
	reflector_m_synced = metrics_gauge("bootccm_reflector_synced",
	    "1 once the first complete LIST has been delivered.", "resource");
}

static int
reflector_stopping(struct reflector *r)
{
	return stop_requested(&r->stop);
}

/* reflector_sleep waits ns unless asked to stop; returns 1 when stopping. */
static int
reflector_sleep(struct reflector *r, int64_t ns)
{
	return stop_sleep(&r->stop, ns);
}

/* reflector_backoff sleeps before the next retry: exponential from
 * backoff_min, capped at backoff_max, minus up to a quarter of jitter so
 * replicas spread out (r->backoff). Returns 1 when stopping. */
static int
reflector_backoff(struct reflector *r)
{
	return reflector_sleep(r, backoff_next(&r->backoff));
}

static void
reflector_set_rv(struct reflector *r, const char *rv)
{
	size_t n = strlen(rv);

	if (n >= sizeof(r->rv))
		return;  /* the decoders refuse longer ones */
	pthread_mutex_lock(&r->lock);
	memcpy(r->rv, rv, n + 1);
	pthread_mutex_unlock(&r->lock);
}

static void
reflector_gauges(struct reflector *r)
{
	metric_set(reflector_m_objects, (double)store_len(r->store), r->cfg.resource);
	metric_set(reflector_m_bytes, (double)store_bytes(r->store), r->cfg.resource);
}

/* reflector_json_key writes the key of an object's JSON ("ns/name" or
 * "name") into buf; returns 0, or -1 when it has none that fits. */
static int
reflector_json_key(struct reflector *r, json_object *o, char *buf, size_t len)
{
	json_object *md, *nm, *ns = NULL;
	int n;

	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "metadata", &md) ||
	    !json_object_is_type(md, json_type_object) ||
	    !json_object_object_get_ex(md, "name", &nm) ||
	    !json_object_is_type(nm, json_type_string) ||
	    json_object_get_string_len(nm) == 0)
		return -1;
	if (r->cfg.namespaced) {
		if (!json_object_object_get_ex(md, "namespace", &ns) ||
		    !json_object_is_type(ns, json_type_string) ||
		    json_object_get_string_len(ns) == 0)
			return -1;
		n = snprintf(buf, len, "%s/%s", json_object_get_string(ns),
		    json_object_get_string(nm));
	} else {
		n = snprintf(buf, len, "%s", json_object_get_string(nm));
	}
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* reflector_bad_object counts an object the decoder refused and logs it
 * once per key and resourceVersion. */
static void
reflector_bad_object(struct reflector *r, const char *key, json_object *o,
    const struct errbuf *e)
{
	json_object *md, *v;
	const char *rv = "";
	uint64_t h;
	char *id;
	size_t i;

	metric_add(reflector_m_errors, 1, r->cfg.resource, "object");
	if (o && json_object_object_get_ex(o, "metadata", &md) &&
	    json_object_object_get_ex(md, "resourceVersion", &v) &&
	    json_object_is_type(v, json_type_string))
		rv = json_object_get_string(v);
	/* a name holds no newline: key and rv cannot run into each other */
	id = xasprintf("%s\n%s", key, rv);
	h = hmap_hash(id);
	free(id);
	for (i = 0; i < r->nlogged && i < REFLECTOR_LOGGED_MAX; i++)
		if (r->logged[i] == h)
			break;
	if (i < r->nlogged && i < REFLECTOR_LOGGED_MAX) {
		log_info(4, "Skipping an object that cannot be decoded", "resource",
		    r->cfg.resource, "object", key, "err", e->msg, NULL);
		return;
	}
	r->logged[r->nlogged++ % REFLECTOR_LOGGED_MAX] = h;
	log_warn("Skipping an object that cannot be decoded", "resource", r->cfg.resource,
	    "object", *key ? key : "(no name)", "resourceVersion", rv, "err", e->msg, NULL);
}

/* Handlers. */

static void
reflector_deliver(struct reflector *r, const struct store_obj *old_obj,
    const struct store_obj *new_obj)
{
	if (reflector_stopping(r))
		return;
	for (size_t i = 0; i < r->nhandlers; i++) {
		const struct reflector_handlers *h = &r->handlers[i];
		if (old_obj == NULL) {
			if (h->on_add)
				h->on_add(new_obj, h->arg);
		} else if (new_obj == NULL) {
			if (h->on_delete)
				h->on_delete(old_obj, h->arg);
		} else if (h->on_update) {
			h->on_update(old_obj, new_obj, h->arg);
		}
	}
}

static void
reflector_on_change(const struct store_obj *old_obj, const struct store_obj *new_obj,
    void *arg)
{
	reflector_deliver(arg, old_obj, new_obj);
}

/* reflector_resync re-delivers every object as an update when it is due. */
static void
reflector_resync(struct reflector *r)
{
	const struct store_obj **v;
	size_t n;
	int64_t now;

	if (r->cfg.resync_ns <= 0 || !__atomic_load_n(&r->synced, __ATOMIC_ACQUIRE))
		return;
	now = clock_mono_ns();
	if (now < r->next_resync_ns)
		return;
	r->next_resync_ns = clock_add_ns(now, r->cfg.resync_ns);
	store_list(r->store, &v, &n);
	metric_add(reflector_m_resyncs, 1, r->cfg.resource);
	log_info(4, "Resyncing", "resource", r->cfg.resource, NULL);
	for (size_t i = 0; i < n; i++)
		reflector_deliver(r, v[i], v[i]);
	store_list_free(v, n);
}

/* LIST. */

static void
reflector_list_clear(struct reflector *r)
{
	for (size_t i = 0; i < r->nobjs; i++)
		store_obj_unref(r->objs[i]);
	for (size_t i = 0; i < r->nkeep; i++)
		free(r->keep[i]);
	free(r->objs);
	free(r->keep);
	r->objs = NULL;
	r->keep = NULL;
	r->nobjs = r->objs_alloc = r->nkeep = r->keep_alloc = 0;
	r->unkeyed = 0;
}

/* reflector_grow makes room for one more element in *v. */
static void
reflector_grow(void *v, size_t n, size_t *alloc, size_t elem)
{
	void **pv = v;

	if (n < *alloc)
		return;
	*alloc = *alloc ? *alloc * 2 : 64;
	*pv = xreallocarray(*pv, *alloc, elem);
}

/* reflector_on_list_item decodes one LIST item into the fresh list. */
static int
reflector_on_list_item(const char *item, size_t len, void *arg)
{
	struct reflector *r = arg;
	const struct store_obj *o;
	json_object *j = NULL;
	struct errbuf e;
	char key[512];

	if (reflector_stopping(r))
		return ERR_TIMEOUT;
	if (kube_watch_parse_keep(item, len, r->cfg.fields, &j, &e) < 0) {
		r->unkeyed++;
		reflector_bad_object(r, "", NULL, &e);
		return 0;
	}
	if (r->cfg.decode(j, &o, &e) < 0) {
		if (reflector_json_key(r, j, key, sizeof(key)) < 0) {
			r->unkeyed++;
			reflector_bad_object(r, "", j, &e);
		} else {
			reflector_grow(&r->keep, r->nkeep, &r->keep_alloc, sizeof(*r->keep));
			r->keep[r->nkeep++] = xstrdup(key);
			reflector_bad_object(r, key, j, &e);
		}
		json_object_put(j);
		return 0;
	}
	json_object_put(j);
	reflector_grow(&r->objs, r->nobjs, &r->objs_alloc, sizeof(*r->objs));
	r->objs[r->nobjs++] = o;
	return 0;
}

static int
reflector_on_list_data(const char *buf, size_t len, void *arg)
{
	struct reflector *r = arg;
	int rc;

	if (reflector_stopping(r)) {
		r->stop_abort = 1;
		return ERR_TIMEOUT;
	}
	rc = kube_watch_list_feed(&r->list, buf, len, reflector_on_list_item, r, &r->werr);
	if (rc < 0 && reflector_stopping(r))
		r->stop_abort = 1;
	return rc;
}

/* reflector_list LISTs every page and replaces the store's content with the
 * result, delivering the differences. Returns 0, 1 when stopping, or an
 * ERR_* code (already logged). */
static int
reflector_list(struct reflector *r, int relist)
{
	char *cont = NULL, *next = NULL, *path = NULL, *econt = NULL;
	char rv[KUBE_WATCH_RV_MAX];
	struct errbuf e = { "" };
	size_t oversized = 0, pages = 0;
	int rc, restarted = 0;
	long status;

	metric_add(reflector_m_lists, 1, r->cfg.resource);
	if (relist)
		metric_add(reflector_m_relists, 1, r->cfg.resource);
	reflector_list_clear(r);
	for (;;) {
		free(path);
		free(econt);
		econt = cont ? urlesc_dup(cont, URLESC_UNRESERVED) : NULL;
		path = xasprintf("%s?limit=%ld%s%s%s", r->cfg.path, r->cfg.page_limit,
		    econt ? "&continue=" : "", econt ? econt : "", r->selectors);
		kube_watch_list_reset(&r->list);
		r->werr.msg[0] = '\0';
		r->stop_abort = 0;
		rc = kube_request_stream(&r->client, path, reflector_on_list_data, r,
		    REFLECTOR_LIST_TIMEOUT_MS, &status, &e);
		if (r->stop_abort || reflector_stopping(r)) {
			rc = 1;
			goto out;
		}
		if (rc < 0 && r->werr.msg[0])
			e = r->werr;
		if (rc == 0)
			rc = kube_watch_list_finish(&r->list, rv, sizeof(rv), &next, &e);
		if (rc == ERR_GONE && cont && !restarted) {
			/* the continue token expired between pages: start over from
			 * a fresh snapshot, as client-go's pager does */
			log_info(1, "List continuation expired; listing again from the start",
			    "resource", r->cfg.resource, NULL);
			metric_add(reflector_m_errors, 1, r->cfg.resource, "expired");
			restarted = 1;
			free(cont);
			cont = NULL;
			oversized = 0;
			pages = 0;
			reflector_list_clear(r);
			continue;
		}
		if (rc < 0)
			goto out;
		pages++;
		oversized += r->list.oversized;
		free(cont);
		cont = next;
		next = NULL;
		if (*cont == '\0')
			break;
	}
	kube_watch_list_reset(&r->list);
	if (oversized || r->unkeyed) {
		char cnt[32];
		snprintf(cnt, sizeof(cnt), "%zu", oversized + r->unkeyed);
		log_warn("The list held objects that cannot be read: cached objects missing "
		    "from it are not taken as deleted this time", "resource", r->cfg.resource,
		    "unreadable", cnt, NULL);
	}
	{
		size_t n = r->nobjs;
		rc = store_replace(r->store, r->objs, r->nobjs, (const char *const *)r->keep,
		    r->nkeep, oversized == 0 && r->unkeyed == 0, reflector_on_change, r);
		/* store_replace took the objects' references */
		r->nobjs = 0;
		if (rc < 0) {
			errbuf_set(&e, rc, "cannot store the list: %s", err_str(rc));
			goto out;
		}
		reflector_set_rv(r, rv);
		reflector_gauges(r);
		if (!__atomic_load_n(&r->synced, __ATOMIC_ACQUIRE)) {
			pthread_mutex_lock(&r->lock);
			__atomic_store_n(&r->synced, 1, __ATOMIC_RELEASE);
			pthread_cond_broadcast(&r->cond);
			pthread_mutex_unlock(&r->lock);
			metric_set(reflector_m_synced, 1, r->cfg.resource);
			r->next_resync_ns = clock_add_ns(clock_mono_ns(), r->cfg.resync_ns);
		}
		char cnt[32], np[32];
		snprintf(cnt, sizeof(cnt), "%zu", n);
		snprintf(np, sizeof(np), "%zu", pages);
		log_info(2, "Listed", "resource", r->cfg.resource, "objects", cnt, "pages", np,
		    "resourceVersion", rv, NULL);
	}
out:
	if (rc < 0) {
		metric_add(reflector_m_errors, 1, r->cfg.resource, "list");
		log_warn("Failed to list", "resource", r->cfg.resource, "err", e.msg, NULL);
	}
	kube_watch_list_reset(&r->list);
	reflector_list_clear(r);
	free(cont);
	free(next);
	free(econt);
	free(path);
	return rc;
}

/* WATCH. */

/* reflector_upsert applies an ADDED or MODIFIED event. */
static void
reflector_upsert(struct reflector *r, json_object *obj)
{
	const struct store_obj *o, *old = NULL;
	struct errbuf e;
	char key[512];
	int rc;

	if ((rc = r->cfg.decode(obj, &o, &e)) < 0) {
		if (reflector_json_key(r, obj, key, sizeof(key)) < 0)
			key[0] = '\0';
		reflector_bad_object(r, key, obj, &e);
		return;
	}
	store_obj_ref(o);  /* the handlers borrow it after the store took ours */
	if ((rc = store_put(r->store, o, &old)) < 0) {
		metric_add(reflector_m_errors, 1, r->cfg.resource, "object");
		log_error("Cannot cache an object", "resource", r->cfg.resource,
		    "object", o->key, "err", err_str(rc), NULL);
		store_obj_unref(o);
		return;
	}
	reflector_deliver(r, old, o);
	store_obj_unref(old);
	store_obj_unref(o);
}

/* reflector_remove applies a DELETED event: the event's object (its final
 * state) goes to the handlers, or the cached one if it cannot be decoded. */
static void
reflector_remove(struct reflector *r, json_object *obj)
{
	const struct store_obj *o = NULL, *old = NULL;
	struct errbuf e;
	char key[512];

	if (r->cfg.decode(obj, &o, &e) < 0) {
		if (reflector_json_key(r, obj, key, sizeof(key)) < 0) {
			reflector_bad_object(r, "", obj, &e);
			return;
		}
		reflector_bad_object(r, key, obj, &e);
	} else {
		snprintf(key, sizeof(key), "%s", o->key);
	}
	if (store_delete(r->store, key, &old) == 0 || o != NULL)
		reflector_deliver(r, o ? o : old, NULL);
	store_obj_unref(old);
	store_obj_unref(o);
}

static int
reflector_on_line(const char *line, size_t len, void *arg)
{
	struct reflector *r = arg;
	struct kube_watch_event ev;
	int rc;

	if (reflector_stopping(r)) {
		r->stop_abort = 1;
		return ERR_TIMEOUT;
	}
	if ((rc = kube_watch_event_decode(line, len, r->cfg.fields, &ev, &r->werr)) < 0) {
		/* an event we cannot read is an event lost: only a re-list
		 * makes the store whole again */
		r->outcome = REFLECTOR_W_RELIST;
		metric_add(reflector_m_errors, 1, r->cfg.resource, "stream");
		return rc;
	}
	r->events++;
	metric_add(reflector_m_events, 1, r->cfg.resource, kube_watch_type_str(ev.type));
	switch (ev.type) {
	case KUBE_WATCH_ADDED:
	case KUBE_WATCH_MODIFIED:
		reflector_upsert(r, ev.object);
		break;
	case KUBE_WATCH_DELETED:
		reflector_remove(r, ev.object);
		break;
	case KUBE_WATCH_BOOKMARK:
		break;
	case KUBE_WATCH_ERROR:
		r->outcome = REFLECTOR_W_RELIST;
		r->expired = ev.code == 410;
		rc = ev.code == 410 ? ERR_GONE : ERR_TRANSIENT;
		errbuf_set(&r->werr, rc, "%s (%ld %s)", ev.message, ev.code, ev.reason);
		metric_add(reflector_m_errors, 1, r->cfg.resource,
		    ev.code == 410 ? "expired" : "watch");
		kube_watch_event_free(&ev);
		return rc;
	}
	if (ev.resource_version)
		reflector_set_rv(r, ev.resource_version);
	if (ev.type != KUBE_WATCH_BOOKMARK)
		reflector_gauges(r);
	kube_watch_event_free(&ev);
	return 0;
}

static int
reflector_on_watch_data(const char *buf, size_t len, void *arg)
{
	struct reflector *r = arg;
	int rc;

	if (reflector_stopping(r)) {
		r->stop_abort = 1;
		return ERR_TIMEOUT;
	}
	r->bytes += len;
	rc = kube_watch_lines_feed(&r->lines, buf, len, reflector_on_line, r, &r->werr);
	if (rc < 0) {
		if (!r->stop_abort && r->outcome == 0) {
			/* an oversized line: that event is lost */
			r->outcome = REFLECTOR_W_RELIST;
			metric_add(reflector_m_errors, 1, r->cfg.resource, "stream");
		}
		return rc;
	}
	reflector_resync(r);
	return 0;
}

/* reflector_watch runs one WATCH and tells what it came to. */
static int
reflector_watch(struct reflector *r)
{
	struct errbuf e = { "" };
	char *path, *erv, rv[KUBE_WATCH_RV_MAX], secs[16];
	int timeout_s, rc;
	int64_t t0;
	long status;

	reflector_resource_version(r, rv, sizeof(rv));
	timeout_s = r->cfg.watch_timeout_min_s + (int)((double)(r->cfg.watch_timeout_max_s -
	    r->cfg.watch_timeout_min_s) * backoff_rand(&r->backoff));
	erv = urlesc_dup(rv, URLESC_UNRESERVED);
	path = xasprintf("%s?watch=true&allowWatchBookmarks=true&resourceVersion=%s"
	    "&timeoutSeconds=%d%s", r->cfg.path, erv, timeout_s, r->selectors);
	free(erv);
	r->events = r->bytes = 0;
	r->outcome = 0;
	r->expired = 0;
	r->stop_abort = 0;
	r->werr.msg[0] = '\0';
	metric_add(reflector_m_watches, 1, r->cfg.resource);
	snprintf(secs, sizeof(secs), "%d", timeout_s);
	log_info(4, "Watching", "resource", r->cfg.resource, "resourceVersion", rv,
	    "timeoutSeconds", secs, NULL);
	t0 = clock_mono_ns();
	rc = kube_request_stream(&r->client, path, reflector_on_watch_data, r,
	    (long)(timeout_s + REFLECTOR_WATCH_SLACK_S) * 1000, &status, &e);
	free(path);
	if (rc == 0 && r->outcome == 0 && !r->stop_abort)
		rc = kube_watch_lines_finish(&r->lines, reflector_on_line, r, &r->werr);
	kube_watch_lines_reset(&r->lines);
	if (r->stop_abort || reflector_stopping(r))
		return REFLECTOR_W_STOPPED;
	if (r->outcome == REFLECTOR_W_RELIST) {
		/* an expired resourceVersion is routine after compaction */
		if (r->expired)
			log_info(1, "Watch expired: re-listing", "resource", r->cfg.resource,
			    "resourceVersion", rv, "err", r->werr.msg, NULL);
		else
			log_warn("Watch ended: re-listing", "resource", r->cfg.resource,
			    "resourceVersion", rv, "err", r->werr.msg, NULL);
		return REFLECTOR_W_RELIST;
	}
	if (rc == ERR_GONE) {
		metric_add(reflector_m_errors, 1, r->cfg.resource, "expired");
		log_info(1, "Watch expired: re-listing", "resource", r->cfg.resource,
		    "resourceVersion", rv, "err", e.msg, NULL);
		return REFLECTOR_W_RELIST;
	}
	if (rc < 0 && r->bytes == 0) {
		metric_add(reflector_m_errors, 1, r->cfg.resource, "watch");
		log_warn("Failed to watch", "resource", r->cfg.resource, "resourceVersion", rv,
		    "err", e.msg, NULL);
		return REFLECTOR_W_FAILED;
	}
	if (r->events == 0 && clock_mono_ns() - t0 < REFLECTOR_SHORT_WATCH_NS) {
		log_info(2, "Very short watch", "resource", r->cfg.resource,
		    "resourceVersion", rv, NULL);
		return REFLECTOR_W_SHORT;
	}
	log_info(4, "Watch ended", "resource", r->cfg.resource, "resourceVersion", rv,
	    "err", rc < 0 ? e.msg : "", NULL);
	return REFLECTOR_W_ENDED;
}

static void *
reflector_main(void *arg)
{
	struct reflector *r = arg;
	int need_list = 1, listed = 0, failures = 0, w;

	while (!reflector_stopping(r)) {
		if (failures && reflector_backoff(r))
			break;
		if (need_list) {
			int rc = reflector_list(r, listed);
			if (rc == 1)
				break;
			listed = 1;
			if (rc < 0) {
				failures++;
				continue;
			}
			need_list = 0;
			failures = 0;
			backoff_reset(&r->backoff);
		}
		reflector_resync(r);
		w = reflector_watch(r);
		if (w == REFLECTOR_W_STOPPED)
			break;
		if (w == REFLECTOR_W_ENDED) {
			failures = 0;
			backoff_reset(&r->backoff);
			continue;
		}
		failures++;
		if (w == REFLECTOR_W_RELIST)
			need_list = 1;
	}
	return NULL;
}

/* Life cycle. */

/* reflector_dup copies s; NULL for NULL or "". */
static char *
reflector_dup(const char *s)
{
	return s && *s ? xstrdup(s) : NULL;
}

int
reflector_new(struct kubeconfig *kc, const struct reflector_config *cfg,
    struct reflector **ret, struct errbuf *e)
{
	struct reflector *r;
	char *ls = NULL, *fs = NULL;

	if (cfg->resource == NULL || !*cfg->resource || cfg->path == NULL ||
	    cfg->path[0] != '/' || cfg->decode == NULL)
		return errbuf_set(e, ERR_INVALID, "reflector: a resource, a path and a decoder "
		    "are needed");
	if ((cfg->label_selector && strlen(cfg->label_selector) > REFLECTOR_SELECTOR_MAX) ||
	    (cfg->field_selector && strlen(cfg->field_selector) > REFLECTOR_SELECTOR_MAX))
		return errbuf_set(e, ERR_INVALID, "reflector %s: a selector longer than %d bytes",
		    cfg->resource, REFLECTOR_SELECTOR_MAX);
	pthread_once(&reflector_metrics_once, reflector_metrics_init);
	r = xcalloc(1, sizeof(*r));
	r->cfg = *cfg;
	r->kc = kc;
	r->handlers[0] = cfg->handlers;
	r->nhandlers = 1;
	pthread_mutex_init(&r->lock, NULL);
	stop_init(&r->stop);
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&r->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	/* the Node informer's decoder reads only these: the daemon's config
	 * need not say so */
	if (r->cfg.fields == NULL && r->cfg.decode == kube_node_decode_obj)
		r->cfg.fields = kube_node_fields;
	r->cfg.resource = reflector_dup(cfg->resource);
	r->cfg.path = reflector_dup(cfg->path);
	r->cfg.label_selector = reflector_dup(cfg->label_selector);
	r->cfg.field_selector = reflector_dup(cfg->field_selector);
	r->cfg.user_agent = reflector_dup(cfg->user_agent ? cfg->user_agent : "bootccm");
	if (r->cfg.label_selector)
		ls = urlesc_dup(r->cfg.label_selector, URLESC_UNRESERVED);
	if (r->cfg.field_selector)
		fs = urlesc_dup(r->cfg.field_selector, URLESC_UNRESERVED);
	r->selectors = xasprintf("%s%s%s%s", ls ? "&labelSelector=" : "", ls ? ls : "",
	    fs ? "&fieldSelector=" : "", fs ? fs : "");
	free(ls);
	free(fs);
	if (r->cfg.page_limit <= 0)
		r->cfg.page_limit = REFLECTOR_PAGE_LIMIT;
	if (r->cfg.backoff_min_ns <= 0)
		r->cfg.backoff_min_ns = REFLECTOR_BACKOFF_MIN_NS;
	if (r->cfg.backoff_max_ns <= 0)
		r->cfg.backoff_max_ns = REFLECTOR_BACKOFF_MAX_NS;
	if (r->cfg.backoff_max_ns < r->cfg.backoff_min_ns)
		r->cfg.backoff_max_ns = r->cfg.backoff_min_ns;
	if (r->cfg.watch_timeout_min_s <= 0)
		r->cfg.watch_timeout_min_s = REFLECTOR_WATCH_TIMEOUT_MIN_S;
	if (r->cfg.watch_timeout_max_s <= 0)
		r->cfg.watch_timeout_max_s = REFLECTOR_WATCH_TIMEOUT_MAX_S;
	if (r->cfg.watch_timeout_max_s < r->cfg.watch_timeout_min_s)
		r->cfg.watch_timeout_max_s = r->cfg.watch_timeout_min_s;
	kube_watch_lines_init(&r->lines, r->cfg.line_max);
	kube_watch_list_init(&r->list, r->cfg.line_max);
	backoff_init(&r->backoff, r->cfg.backoff_min_ns, r->cfg.backoff_max_ns, 2.0, 0.25);
	r->store = store_new();
	kube_client_init(&r->client, kc, r->cfg.user_agent);
	kube_client_set_stop(&r->client, &r->stop);
	metric_set(reflector_m_synced, 0, r->cfg.resource);
	*ret = r;
	return 0;
}

int
reflector_add_handlers(struct reflector *r, const struct reflector_handlers *h,
    struct errbuf *e)
{
	if (r->started || r->nhandlers == REFLECTOR_HANDLERS_MAX)
		return errbuf_set(e, ERR_INVALID, "reflector %s: handlers can only be added "
		    "before it starts, at most %d sets", r->cfg.resource, REFLECTOR_HANDLERS_MAX);
	r->handlers[r->nhandlers++] = *h;
	return 0;
}

int
reflector_start(struct reflector *r, struct errbuf *e)
{
	pthread_attr_t attr;
	int rc;

	if (r->started)
		return 0;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, REFLECTOR_STACK_SIZE);
	rc = pthread_create(&r->thread, &attr, reflector_main, r);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		return errbuf_set(e, ERR_INTERNAL, "reflector %s: cannot start a thread: %s",
		    r->cfg.resource, strerror(rc));
	r->started = 1;
	return 0;
}

void
reflector_stop(struct reflector *r)
{
	if (r == NULL)
		return;
	stop_request(&r->stop);
	pthread_mutex_lock(&r->lock);
	pthread_cond_broadcast(&r->cond);  /* reflector_wait_synced */
	pthread_mutex_unlock(&r->lock);
	/* a watch can sit idle for a minute between events: cut it short */
	if (r->client.http)
		http_client_abort(r->client.http);
	if (r->started) {
		pthread_join(r->thread, NULL);
		r->started = 0;
	}
}

void
reflector_free(struct reflector *r)
{
	if (r == NULL)
		return;
	reflector_stop(r);
	if (r->client.http)
		kube_client_cleanup(&r->client);
	reflector_list_clear(r);
	kube_watch_lines_reset(&r->lines);
	kube_watch_list_reset(&r->list);
	store_free(r->store);
	free((char *)r->cfg.resource);
	free((char *)r->cfg.path);
	free((char *)r->cfg.label_selector);
	free((char *)r->cfg.field_selector);
	free((char *)r->cfg.user_agent);
	free(r->selectors);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	stop_destroy(&r->stop);
	free(r);
}

int
reflector_has_synced(struct reflector *r)
{
	return __atomic_load_n(&r->synced, __ATOMIC_ACQUIRE);
}

int
reflector_wait_synced(struct reflector *r, int64_t timeout_ns)
{
	int64_t deadline = clock_add_ns(clock_mono_ns(), timeout_ns);
	struct timespec ts;
	int synced;

	ts.tv_sec = (time_t)(deadline / NS_PER_S);
	ts.tv_nsec = (long)(deadline % NS_PER_S);
	pthread_mutex_lock(&r->lock);
	while (!r->synced && !stop_requested(&r->stop)) {
		if (timeout_ns < 0)
			pthread_cond_wait(&r->cond, &r->lock);
		else if (pthread_cond_timedwait(&r->cond, &r->lock, &ts) == ETIMEDOUT)
			break;
	}
	synced = r->synced;
	pthread_mutex_unlock(&r->lock);
	return synced;
}

struct store *
reflector_store(struct reflector *r)
{
	return r->store;
}

void
reflector_resource_version(struct reflector *r, char *buf, size_t len)
{
	pthread_mutex_lock(&r->lock);
	snprintf(buf, len, "%s", r->rv);
	pthread_mutex_unlock(&r->lock);
}
