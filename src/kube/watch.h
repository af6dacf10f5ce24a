/* watch.h - the API server's streamed answers: a watch body split into event
 * lines and decoded, and a LIST body split into its items as it arrives, so
 * neither a whole page nor a whole stream is ever held in memory.
 *
 * Contract: the splitters are fed the body chunk by chunk as the transport
 * delivers it, hold at most one line or item (bounded by a declared cap),
 * and hand each complete one to a callback; a callback's negative return
 * ends the feed with that code. Exceeding a cap or malformed framing is a
 * clean error (ERR_TOO_LARGE, ERR_INVALID) with a message, never a crash or
 * unbounded growth. Never logs. */
#ifndef BOOTCCM_KUBE_WATCH_H
#define BOOTCCM_KUBE_WATCH_H

#include <stddef.h>

#include <json-c/json.h>

#include "base/dynbuf.h"
#include "base/err.h"
#include "base/jsonx.h"

#define KUBE_JSON_DEPTH 128           /* nesting levels of the API's JSON (managedFields nest deep) */
#define KUBE_WATCH_LINE_MAX (4 * 1024 * 1024) /* bytes: one watch event line or
                                                 list item (etcd keeps objects
                                                 under 1.5 MiB by default) */
#define KUBE_WATCH_KEEP (64 * 1024)   /* bytes: a line buffer larger than this
                                         is freed once its line is handled */
#define KUBE_LIST_META_MAX (64 * 1024) /* bytes: a list's metadata */
#define KUBE_WATCH_RV_MAX 64          /* bytes: a resourceVersion, NUL included */

/* kube_watch_parse is jsonx_parse with the API machinery's nesting cap,
 * KUBE_JSON_DEPTH: one complete JSON value, whitespace around it. *ret is
 * the caller's. */
int kube_watch_parse(const char *buf, size_t len, json_object **ret,
    struct errbuf *e);

/* kube_watch_parse_keep is kube_watch_parse building only what fields
 * names (jsonx_parse_keep; NULL: everything). */
int kube_watch_parse_keep(const char *buf, size_t len, const struct jsonx_keep *fields,
    json_object **ret, struct errbuf *e);

/* The line splitter of a watch body. */
struct kube_watch_lines {
	struct dynbuf line;  /* the partial line so far; its cap is the line cap
	                        (bytes per line, the newline excluded) */
};

typedef int (*kube_watch_line_fn)(const char *line, size_t len, void *arg);

/* kube_watch_lines_init readies s for lines of at most max bytes (0:
 * KUBE_WATCH_LINE_MAX); needed before first use. */
void kube_watch_lines_init(struct kube_watch_lines *s, size_t max);

/* kube_watch_lines_feed splits data into lines ending in "\n" (a "\r" before
 * it is dropped; empty lines are skipped) and calls fn for each complete
 * one. A line longer than max is ERR_TOO_LARGE; the splitter must then be
 * reset. Returns 0, fn's negative code or ERR_TOO_LARGE. */
int kube_watch_lines_feed(struct kube_watch_lines *s, const char *data,
    size_t len, kube_watch_line_fn fn, void *arg, struct errbuf *e);

/* kube_watch_lines_finish hands a last line without a newline to fn (a
 * stream may end without one) and resets the splitter. */
int kube_watch_lines_finish(struct kube_watch_lines *s, kube_watch_line_fn fn,
    void *arg, struct errbuf *e);

/* kube_watch_lines_reset drops a partial line and frees the buffer (the cap
 * is kept). */
void kube_watch_lines_reset(struct kube_watch_lines *s);

enum kube_watch_type {
	KUBE_WATCH_ADDED,
	KUBE_WATCH_MODIFIED,
	KUBE_WATCH_DELETED,
	KUBE_WATCH_BOOKMARK,
	KUBE_WATCH_ERROR,
};

struct kube_watch_event {
	enum kube_watch_type type;
	json_object *root;         /* the whole line, owned */
	json_object *object;       /* "object", borrowed from root */
	const char *resource_version; /* the object's metadata.resourceVersion,
	                              borrowed; NULL if it has none */
	long code;                 /* ERROR: the Status code (0 if absent) */
	const char *reason;        /* ERROR: the Status reason or "" */
	const char *message;       /* ERROR: the Status message or "" */
};

/* kube_watch_event_decode decodes one line {"type":...,"object":{...}}. The
 * object must be a JSON object; a BOOKMARK must carry a resourceVersion; a
 * resourceVersion must be a string shorter than KUBE_WATCH_RV_MAX. fields
 * names what the caller reads of the object (a decoder's list, such as
 * kube_node_fields; NULL: all of it), and must name metadata.resourceVersion:
 * the rest of the line is checked but not built, and ev->object holds only
 * those members. An ERROR event's Status is always read whole. On 0 the
 * caller frees *ret with kube_watch_event_free. */
int kube_watch_event_decode(const char *line, size_t len,
    const struct jsonx_keep *fields, struct kube_watch_event *ret,
    struct errbuf *e);
void kube_watch_event_free(struct kube_watch_event *ev);

const char *kube_watch_type_str(enum kube_watch_type t);

/* The item splitter of a LIST body ({"items":[{...},...],"metadata":{...}},
 * any member order). Items are handed out raw, one by one; the list's
 * metadata is kept (up to KUBE_LIST_META_MAX) for kube_watch_list_finish.
 * An item longer than max is skipped and counted in oversized: the caller
 * then knows the list is incomplete. Zero max means KUBE_WATCH_LINE_MAX. */
struct kube_watch_list {
	size_t max;
	size_t items;         /* items handed out */
	size_t oversized;     /* items skipped for exceeding max */
	/* scanner state */
	int state;
	int member;           /* the top-level member being read */
	int seen_items, seen_meta;
	char key[16];         /* the current top-level member's name (prefix) */
	size_t key_len;
	int capture;          /* 1: item, 2: metadata, 0: skip */
	int in_str, esc, scalar, skipping_item;
	int depth;
	char stack[KUBE_JSON_DEPTH]; /* open brackets of the value being scanned */
	size_t pos;           /* bytes fed so far, for messages */
	struct dynbuf item;   /* the item being captured (cap: max) */
	struct dynbuf meta;   /* the list's metadata (cap: KUBE_LIST_META_MAX) */
};

typedef int (*kube_watch_item_fn)(const char *item, size_t len, void *arg);

/* kube_watch_list_init readies l (needed before first use). */
void kube_watch_list_init(struct kube_watch_list *l, size_t max);

/* kube_watch_list_feed scans data and calls fn for each complete item. */
int kube_watch_list_feed(struct kube_watch_list *l, const char *data, size_t len,
    kube_watch_item_fn fn, void *arg, struct errbuf *e);

/* kube_watch_list_finish checks that the body was one complete list object
 * and copies its metadata.resourceVersion into rv (rv_len bytes) and its
 * metadata.continue (or "") into a malloc'd *ret_continue. ERR_INVALID when
 * the body was cut short or has no resourceVersion. */
int kube_watch_list_finish(struct kube_watch_list *l, char *rv, size_t rv_len,
    char **ret_continue, struct errbuf *e);

/* kube_watch_list_reset frees the buffers and makes l ready for a new body
 * (max is kept). */
void kube_watch_list_reset(struct kube_watch_list *l);

#endif
