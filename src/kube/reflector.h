/* reflector.h - keep a store in step with one resource on the API server,
 * the client-go way (reflector + informer), on a thread of its own.
 *
 * LIST in pages (limit, continue; an expired continue token restarts the
 * list), then WATCH from the list's resourceVersion with bookmarks and a
 * random 5-10 minute timeoutSeconds. A clean end or a dropped connection
 * re-watches from the last resourceVersion seen; a 410 (an ERROR event or an
 * answer), a lost event (a line over the cap, a broken line) or another
 * ERROR event re-lists and diffs the fresh list against the store: missing
 * objects are delivered as deletions, changed ones as updates, new ones as
 * adds. Failures back off exponentially and are retried forever. Objects the
 * decoder refuses are skipped, counted and logged once; their last good
 * version stays in the store.
 *
 * Contract: handlers run on the reflector's thread, after the store was
 * updated, with borrowed references (take one with store_obj_ref to keep an
 * object); they must be quick (enqueue a key) and must not stop or free the
 * reflector. Controllers read the store (reflector_store), never write it.
 * The kubeconfig is borrowed and must outlive the reflector. Logs failures
 * (it is daemon machinery, not a library); metrics are prefixed
 * bootccm_reflector_ and labelled with the resource. */
#ifndef BOOTCCM_KUBE_REFLECTOR_H
#define BOOTCCM_KUBE_REFLECTOR_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "kube/store.h"
#include "config/kubeconfig.h"

#define REFLECTOR_PAGE_LIMIT 500                    /* objects per LIST page */
#define REFLECTOR_WATCH_TIMEOUT_MIN_S 300           /* timeoutSeconds is drawn */
#define REFLECTOR_WATCH_TIMEOUT_MAX_S 600           /* from [min, max) */
#define REFLECTOR_BACKOFF_MIN_NS (800 * 1000000LL)  /* first retry delay */
#define REFLECTOR_BACKOFF_MAX_NS (30 * 1000000000LL) /* retry delay cap */
#define REFLECTOR_SELECTOR_MAX 4096                 /* bytes of a selector */
#define REFLECTOR_HANDLERS_MAX 8                    /* handler sets per reflector */

struct reflector_handlers {
	void (*on_add)(const struct store_obj *obj, void *arg);
	void (*on_update)(const struct store_obj *old_obj,
	    const struct store_obj *new_obj, void *arg);
	void (*on_delete)(const struct store_obj *obj, void *arg);
	void *arg;
};

/* reflector_decode_fn builds a compact object from one object's JSON
 * (kube_node_decode_obj, kube_service_decode_obj). */
typedef int (*reflector_decode_fn)(json_object *o, const struct store_obj **ret,
    struct errbuf *e);

struct reflector_config {
	const char *resource;        /* "nodes": metrics label and log lines */
	const char *path;            /* "/api/v1/nodes" (KUBE_NODE_PATH, ...) */
	int namespaced;              /* keys are "namespace/name" */
	reflector_decode_fn decode;
	const struct jsonx_keep *fields; /* the members of an object decode reads
	                                    (kube_node_fields): the rest of each
	                                    object is checked, never built. Must
	                                    name metadata.name, .resourceVersion
	                                    and, when namespaced, .namespace.
	                                    NULL: kube_node_fields when decode is
	                                    kube_node_decode_obj, else the whole
	                                    object */
	const char *label_selector;  /* NULL or "" = every object */
	const char *field_selector;
	const char *user_agent;      /* NULL = "bootccm" */
	long page_limit;             /* 0 = REFLECTOR_PAGE_LIMIT */
	size_t line_max;             /* 0 = KUBE_WATCH_LINE_MAX */
	int64_t resync_ns;           /* re-deliver every object as an update this
	                                often; 0 = never */
	int64_t backoff_min_ns;      /* 0 = REFLECTOR_BACKOFF_MIN_NS */
	int64_t backoff_max_ns;      /* 0 = REFLECTOR_BACKOFF_MAX_NS */
	int watch_timeout_min_s;     /* 0 = REFLECTOR_WATCH_TIMEOUT_MIN_S */
	int watch_timeout_max_s;     /* 0 = REFLECTOR_WATCH_TIMEOUT_MAX_S */
	struct reflector_handlers handlers;
};

struct reflector;

/* reflector_new copies cfg (its strings included) and makes an empty store.
 * ERR_INVALID for a config without resource, path or decode, or an
 * oversized selector. */
int reflector_new(struct kubeconfig *kc, const struct reflector_config *cfg,
    struct reflector **ret, struct errbuf *e);

/* reflector_add_handlers adds one more set of handlers (copied), for
 * another controller sharing this reflector's cache, like client-go's
 * shared informers; sets are called in the order they were added, the
 * config's first. Only before reflector_start: ERR_INVALID after it, or
 * past REFLECTOR_HANDLERS_MAX sets. */
int reflector_add_handlers(struct reflector *r, const struct reflector_handlers *h,
    struct errbuf *e);

/* reflector_start starts the thread. Returns 0 or ERR_INTERNAL (the thread
 * could not be created). */
int reflector_start(struct reflector *r, struct errbuf *e);

/* reflector_stop asks the thread to end and waits for it: the request in
 * progress is aborted at once (its socket is shut down) and the
 * client's retries and the backoff sleeps are abandoned. No handler runs
 * after it returns. Idempotent; a stopped reflector does not start again.
 * NULL is fine. */
void reflector_stop(struct reflector *r);

/* reflector_free stops the reflector if needed and frees it with its store.
 * NULL is fine. */
void reflector_free(struct reflector *r);

/* reflector_has_synced tells whether the first complete LIST has been
 * delivered to the handlers (for /readyz and for controllers to wait on). */
int reflector_has_synced(struct reflector *r);

/* reflector_wait_synced waits up to timeout_ns (< 0: for ever) for
 * reflector_has_synced, like client-go's WaitForCacheSync; returns 1 once
 * synced, 0 on timeout or when the reflector is stopped. */
int reflector_wait_synced(struct reflector *r, int64_t timeout_ns);

/* reflector_store returns the store (owned by the reflector). */
struct store *reflector_store(struct reflector *r);

/* reflector_resource_version copies the last resourceVersion seen into buf
 * ("" before the first list). */
void reflector_resource_version(struct reflector *r, char *buf, size_t len);

#endif
