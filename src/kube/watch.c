/* watch.c - split streamed watch and list bodies; decode watch events. */
#include "kube/watch.h"

#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "base/xalloc.h"

int
kube_watch_parse(const char *buf, size_t len, json_object **ret, struct errbuf *e)
{
	return jsonx_parse(buf, len, KUBE_JSON_DEPTH, ret, e);
}

int
kube_watch_parse_keep(const char *buf, size_t len, const struct jsonx_keep *fields,
    json_object **ret, struct errbuf *e)
{
	return jsonx_parse_keep(buf, len, KUBE_JSON_DEPTH, fields, ret, e);
}

/* Lines. */

void
kube_watch_lines_init(struct kube_watch_lines *s, size_t max)
{
	dynbuf_init(&s->line, max ? max : KUBE_WATCH_LINE_MAX);
}

void
kube_watch_lines_reset(struct kube_watch_lines *s)
{
	dynbuf_free(&s->line);
}

static int
kube_watch_lines_too_large(struct kube_watch_lines *s, struct errbuf *e)
{
	return errbuf_set(e, ERR_TOO_LARGE, "a watch event longer than %zu bytes", s->line.cap);
}

/* kube_watch_lines_emit hands one line (without its "\n") to fn. */
static int
kube_watch_lines_emit(struct kube_watch_lines *s, const char *line, size_t n,
    kube_watch_line_fn fn, void *arg)
{
	int r = 0;

	if (n && line[n - 1] == '\r')
		n--;
	if (n)
		r = fn(line, n, arg);
	dynbuf_reset(&s->line);
	/* one huge event must not pin its buffer for the life of the watch */
	if (s->line.alloc > KUBE_WATCH_KEEP)
		kube_watch_lines_reset(s);
	return r;
}

int
kube_watch_lines_feed(struct kube_watch_lines *s, const char *data, size_t len,
    kube_watch_line_fn fn, void *arg, struct errbuf *e)
{
	int r;

	while (len > 0) {
		const char *nl = memchr(data, '\n', len);
		size_t n = nl ? (size_t)(nl - data) : len;
		if (nl == NULL) {
			if (dynbuf_add(&s->line, data, n) < 0)
				return kube_watch_lines_too_large(s, e);
			return 0;
		}
		if (dynbuf_len(&s->line) == 0) {
			/* a whole line in the chunk goes out without a copy */
			if (n > s->line.cap)
				return kube_watch_lines_too_large(s, e);
			r = kube_watch_lines_emit(s, data, n, fn, arg);
		} else {
			if (dynbuf_add(&s->line, data, n) < 0)
				return kube_watch_lines_too_large(s, e);
			r = kube_watch_lines_emit(s, dynbuf_ptr(&s->line), dynbuf_len(&s->line),
			    fn, arg);
		}
		if (r < 0)
			return r;
		data += n + 1;
		len -= n + 1;
	}
	return 0;
}

int
kube_watch_lines_finish(struct kube_watch_lines *s, kube_watch_line_fn fn,
    void *arg, struct errbuf *e)
{
	int r = 0;

	(void)e;
	if (dynbuf_len(&s->line))
		r = kube_watch_lines_emit(s, dynbuf_ptr(&s->line), dynbuf_len(&s->line), fn,
		    arg);
	kube_watch_lines_reset(s);
	return r;
}

/* Events. */

const char *
kube_watch_type_str(enum kube_watch_type t)
{
	switch (t) {
	case KUBE_WATCH_ADDED: return "ADDED";
	case KUBE_WATCH_MODIFIED: return "MODIFIED";
	case KUBE_WATCH_DELETED: return "DELETED";
	case KUBE_WATCH_BOOKMARK: return "BOOKMARK";
	case KUBE_WATCH_ERROR: return "ERROR";
	}
	return "?";
}

void
kube_watch_event_free(struct kube_watch_event *ev)
{
	if (ev == NULL)
		return;
	json_object_put(ev->root);
	memset(ev, 0, sizeof(*ev));
}

/* kube_watch_str returns a member's string value, "" when absent, NULL when
 * it is not a string. */
static const char *
kube_watch_str(json_object *o, const char *field)
{
	json_object *v;

	if (!json_object_object_get_ex(o, field, &v) || v == NULL)
		return "";
	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

int
kube_watch_event_decode(const char *line, size_t len, const struct jsonx_keep *fields,
    struct kube_watch_event *ret, struct errbuf *e)
{
	static const char *const types[] = {
		[KUBE_WATCH_ADDED] = "ADDED", [KUBE_WATCH_MODIFIED] = "MODIFIED",
		[KUBE_WATCH_DELETED] = "DELETED", [KUBE_WATCH_BOOKMARK] = "BOOKMARK",
		[KUBE_WATCH_ERROR] = "ERROR",
	};
	const struct jsonx_keep keep[] = {
		{ "type", NULL }, { "object", fields }, { NULL, NULL },
	};
	struct kube_watch_event ev;
	json_object *t, *md, *v;
	const char *ts;
	size_t i;
	int r;

	memset(&ev, 0, sizeof(ev));
	if ((r = kube_watch_parse_keep(line, len, fields ? keep : NULL, &ev.root, e)) < 0)
		return errbuf_prefix(e, r, "watch event");
	if (!json_object_is_type(ev.root, json_type_object)) {
		r = errbuf_set(e, ERR_INVALID, "watch event: expected a JSON object");
		goto fail;
	}
	if (!json_object_object_get_ex(ev.root, "type", &t) ||
	    !json_object_is_type(t, json_type_string)) {
		r = errbuf_set(e, ERR_INVALID, "watch event: no type");
		goto fail;
	}
	ts = json_object_get_string(t);
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(ts, types[i]) == 0)
			break;
	if (i == sizeof(types) / sizeof(types[0])) {
		r = errbuf_set(e, ERR_INVALID, "watch event: unknown type \"%.32s\"", ts);
		goto fail;
	}
	ev.type = (enum kube_watch_type)i;
	ts = types[i];  /* not the tree's string: the tree may be parsed again */
	if (ev.type == KUBE_WATCH_ERROR && fields != NULL) {
		/* a Status, not the caller's kind of object: read it whole */
		json_object_put(ev.root);
		ev.root = NULL;
		if ((r = kube_watch_parse(line, len, &ev.root, e)) < 0)
			return errbuf_prefix(e, r, "watch event");
	}
	if (!json_object_object_get_ex(ev.root, "object", &ev.object) ||
	    !json_object_is_type(ev.object, json_type_object)) {
		r = errbuf_set(e, ERR_INVALID, "watch event %s: no object", ts);
		goto fail;
	}
	if (json_object_object_get_ex(ev.object, "metadata", &md) &&
	    json_object_is_type(md, json_type_object) &&
	    json_object_object_get_ex(md, "resourceVersion", &v) && v != NULL) {
		if (!json_object_is_type(v, json_type_string) || !jsonx_string_ok(v) ||
		    json_object_get_string_len(v) == 0 ||
		    (size_t)json_object_get_string_len(v) >= KUBE_WATCH_RV_MAX) {
			r = errbuf_set(e, ERR_INVALID, "watch event %s: bad metadata.resourceVersion",
			    ts);
			goto fail;
		}
		ev.resource_version = json_object_get_string(v);
	}
	if (ev.type == KUBE_WATCH_BOOKMARK && ev.resource_version == NULL) {
		r = errbuf_set(e, ERR_INVALID, "watch event BOOKMARK: no resourceVersion");
		goto fail;
	}
	if (ev.type == KUBE_WATCH_ERROR) {
		ev.reason = kube_watch_str(ev.object, "reason");
		ev.message = kube_watch_str(ev.object, "message");
		if (json_object_object_get_ex(ev.object, "code", &v) && v != NULL) {
			if (!json_object_is_type(v, json_type_int)) {
				r = errbuf_set(e, ERR_INVALID, "watch event ERROR: code is not an integer");
				goto fail;
			}
			int64_t c = json_object_get_int64(v);
			ev.code = c < 0 || c > 999 ? 0 : (long)c;
		}
		if (ev.reason == NULL || ev.message == NULL) {
			r = errbuf_set(e, ERR_INVALID, "watch event ERROR: not a Status");
			goto fail;
		}
	}
	*ret = ev;
	return 0;
fail:
	json_object_put(ev.root);
	return r;
}

/* Lists. */

enum {
	KUBE_LS_START,      /* before the list's "{" */
	KUBE_LS_OBJ_FIRST,  /* after "{": a member name or "}" */
	KUBE_LS_OBJ_NEXT,   /* after ",": a member name */
	KUBE_LS_KEY,        /* in a member name */
	KUBE_LS_COLON,
	KUBE_LS_VALUE,      /* before a member's value */
	KUBE_LS_VALUE_SCAN, /* in a member's value other than items */
	KUBE_LS_AFTER_VALUE,
	KUBE_LS_ITEMS_FIRST, /* after "items":[ */
	KUBE_LS_ITEMS_NEXT,  /* after an item's "," */
	KUBE_LS_ITEM_SCAN,   /* in an item */
	KUBE_LS_ITEMS_AFTER, /* after an item */
	KUBE_LS_END,         /* after the list's "}" */
};

enum { KUBE_LM_OTHER, KUBE_LM_ITEMS, KUBE_LM_META };
enum { KUBE_LC_SKIP, KUBE_LC_ITEM, KUBE_LC_META };

void
kube_watch_list_init(struct kube_watch_list *l, size_t max)
{
	memset(l, 0, sizeof(*l));
	l->max = max;
	dynbuf_init(&l->item, max ? max : KUBE_WATCH_LINE_MAX);
	dynbuf_init(&l->meta, KUBE_LIST_META_MAX);
}

void
kube_watch_list_reset(struct kube_watch_list *l)
{
	dynbuf_free(&l->item);
	dynbuf_free(&l->meta);
	kube_watch_list_init(l, l->max);
}

static int
kube_watch_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int
kube_watch_scalar_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' ||
	    c == '+' || c == '.' || c == 'E';
}

/* kube_watch_scan takes the next byte of a value being scanned (first: its
 * first byte). Returns 1 when the value ends with this byte, 2 when it ended
 * just before it (a number or literal ends at a delimiter that is not part
 * of it), 0 to go on, or ERR_INVALID. */
static int
kube_watch_scan(struct kube_watch_list *l, char c, int first)
{
	if (first) {
		l->in_str = l->esc = l->scalar = 0;
		l->depth = 0;
		if (c == '{' || c == '[') {
			l->stack[l->depth++] = c;
			return 0;
		}
		if (c == '"') {
			l->in_str = 1;
			return 0;
		}
		if (kube_watch_scalar_char(c)) {
			l->scalar = 1;
			return 0;
		}
		return ERR_INVALID;
	}
	if (l->in_str) {
		if (l->esc)
			l->esc = 0;
		else if (c == '\\')
			l->esc = 1;
		else if (c == '"') {
			l->in_str = 0;
			return l->depth == 0;
		}
		return 0;
	}
	if (l->scalar) {
		if (kube_watch_scalar_char(c))
			return 0;
		l->scalar = 0;
		return 2;
	}
	switch (c) {
	case '"':
		l->in_str = 1;
		return 0;
	case '{':
	case '[':
		if ((size_t)l->depth == sizeof(l->stack))
			return ERR_INVALID;
		l->stack[l->depth++] = c;
		return 0;
	case '}':
	case ']':
		if (l->stack[l->depth - 1] != (c == '}' ? '{' : '['))
			return ERR_INVALID;
		return --l->depth == 0;
	default:
		return 0;
	}
}

/* kube_watch_list_keep appends a span of the value being captured. */
static int
kube_watch_list_keep(struct kube_watch_list *l, const char *p, size_t n,
    struct errbuf *e)
{
	struct dynbuf *b = l->capture == KUBE_LC_META ? &l->meta : &l->item;

	if (l->capture == KUBE_LC_SKIP || n == 0 || l->skipping_item)
		return 0;
	if (dynbuf_add(b, p, n) < 0) {
		if (l->capture == KUBE_LC_META)
			return errbuf_set(e, ERR_TOO_LARGE, "list metadata longer than %zu bytes",
			    b->cap);
		/* skip the rest of this item: the caller learns of it */
		l->skipping_item = 1;
		dynbuf_reset(&l->item);
	}
	return 0;
}

/* kube_watch_list_item hands a complete item to fn. */
static int
kube_watch_list_item(struct kube_watch_list *l, kube_watch_item_fn fn, void *arg)
{
	int r = 0;

	if (l->skipping_item) {
		l->oversized++;
	} else {
		l->items++;
		r = fn(dynbuf_ptr(&l->item), dynbuf_len(&l->item), arg);
	}
	l->skipping_item = 0;
	dynbuf_reset(&l->item);
	if (l->item.alloc > KUBE_WATCH_KEEP)
		dynbuf_free(&l->item);
	return r;
}

int
kube_watch_list_feed(struct kube_watch_list *l, const char *data, size_t len,
    kube_watch_item_fn fn, void *arg, struct errbuf *e)
{
	size_t i = 0, start = 0;
	int r;

	while (i < len) {
		char c = data[i];
		switch (l->state) {
		case KUBE_LS_START:
		case KUBE_LS_OBJ_FIRST:
		case KUBE_LS_OBJ_NEXT:
		case KUBE_LS_COLON:
		case KUBE_LS_AFTER_VALUE:
		case KUBE_LS_ITEMS_FIRST:
		case KUBE_LS_ITEMS_NEXT:
		case KUBE_LS_ITEMS_AFTER:
		case KUBE_LS_END:
		case KUBE_LS_VALUE:
			if (kube_watch_ws(c)) {
				i++;
				continue;
			}
			break;
		default:
			break;
		}
		switch (l->state) {
		case KUBE_LS_START:
			if (c != '{')
				goto bad;
			l->state = KUBE_LS_OBJ_FIRST;
			break;
		case KUBE_LS_OBJ_FIRST:
		case KUBE_LS_OBJ_NEXT:
			if (c == '}' && l->state == KUBE_LS_OBJ_FIRST) {
				l->state = KUBE_LS_END;
				break;
			}
			if (c != '"')
				goto bad;
			l->key_len = 0;
			l->esc = 0;
			l->state = KUBE_LS_KEY;
			break;
		case KUBE_LS_KEY:
			if (!l->esc && c == '"') {
				l->state = KUBE_LS_COLON;
				break;
			}
			l->esc = !l->esc && c == '\\';
			/* a longer name is none of ours: keep it unmatched */
			if (l->key_len < sizeof(l->key))
				l->key[l->key_len] = c;
			if (l->key_len <= sizeof(l->key))
				l->key_len++;
			break;
		case KUBE_LS_COLON:
			if (c != ':')
				goto bad;
			l->state = KUBE_LS_VALUE;
			l->member = l->key_len == 5 && memcmp(l->key, "items", 5) == 0 ?
			    KUBE_LM_ITEMS : l->key_len == 8 && memcmp(l->key, "metadata", 8) == 0 ?
			    KUBE_LM_META : KUBE_LM_OTHER;
			break;
		case KUBE_LS_VALUE:
			l->capture = KUBE_LC_SKIP;
			if (l->member == KUBE_LM_ITEMS) {
				if (l->seen_items++)
					goto bad;
				if (c == '[') {
					l->state = KUBE_LS_ITEMS_FIRST;
					break;
				}
				if (c != 'n')  /* "items": null is an empty list */
					goto bad;
			} else if (l->member == KUBE_LM_META) {
				if (l->seen_meta++ || c != '{')
					goto bad;
				l->capture = KUBE_LC_META;
				dynbuf_reset(&l->meta);
				start = i;
			}
			if (kube_watch_scan(l, c, 1) < 0)
				goto bad;
			l->state = KUBE_LS_VALUE_SCAN;
			break;
		case KUBE_LS_VALUE_SCAN:
		case KUBE_LS_ITEM_SCAN:
			if (l->in_str && !l->esc) {
				/* most bytes are inside strings: skip to the next one
				 * that matters */
				while (i < len && data[i] != '"' && data[i] != '\\')
					i++;
				if (i == len)
					continue;
				c = data[i];
			}
			if ((r = kube_watch_scan(l, c, 0)) < 0)
				goto bad;
			if (r == 0)
				break;
			if (r == 1)
				i++;
			if ((r = kube_watch_list_keep(l, data + start, i - start, e)) < 0)
				return r;
			if (l->state == KUBE_LS_ITEM_SCAN) {
				if ((r = kube_watch_list_item(l, fn, arg)) < 0)
					return r;
				l->state = KUBE_LS_ITEMS_AFTER;
			} else {
				l->state = KUBE_LS_AFTER_VALUE;
			}
			l->capture = KUBE_LC_SKIP;
			continue;
		case KUBE_LS_AFTER_VALUE:
			if (c == ',')
				l->state = KUBE_LS_OBJ_NEXT;
			else if (c == '}')
				l->state = KUBE_LS_END;
			else
				goto bad;
			break;
		case KUBE_LS_ITEMS_FIRST:
		case KUBE_LS_ITEMS_NEXT:
			if (c == ']' && l->state == KUBE_LS_ITEMS_FIRST) {
				l->state = KUBE_LS_AFTER_VALUE;
				break;
			}
			if (c != '{')
				goto bad;
			l->capture = KUBE_LC_ITEM;
			dynbuf_reset(&l->item);
			l->skipping_item = 0;
			start = i;
			kube_watch_scan(l, c, 1);
			l->state = KUBE_LS_ITEM_SCAN;
			break;
		case KUBE_LS_ITEMS_AFTER:
			if (c == ',')
				l->state = KUBE_LS_ITEMS_NEXT;
			else if (c == ']')
				l->state = KUBE_LS_AFTER_VALUE;
			else
				goto bad;
			break;
		case KUBE_LS_END:
			goto bad;
		}
		i++;
	}
	/* keep what this chunk holds of a value being captured */
	if ((l->state == KUBE_LS_VALUE_SCAN || l->state == KUBE_LS_ITEM_SCAN) &&
	    (r = kube_watch_list_keep(l, data + start, len - start, e)) < 0)
		return r;
	l->pos += len;
	return 0;
bad:
	return errbuf_set(e, ERR_INVALID, "the answer is not a JSON list (at byte %zu)",
	    l->pos + i);
}

int
kube_watch_list_finish(struct kube_watch_list *l, char *rv, size_t rv_len,
    char **ret_continue, struct errbuf *e)
{
	json_object *md = NULL, *v;
	const char *s;
	char *cont = NULL;
	int r;

	if (l->state != KUBE_LS_END)
		return errbuf_set(e, ERR_INVALID, "the list answer ended early (after %zu bytes)",
		    l->pos);
	if (!l->seen_meta)
		return errbuf_set(e, ERR_INVALID, "the list answer has no metadata");
	if ((r = kube_watch_parse(dynbuf_ptr(&l->meta), dynbuf_len(&l->meta), &md, e)) < 0)
		return errbuf_prefix(e, r, "list metadata");
	if (!json_object_object_get_ex(md, "resourceVersion", &v) ||
	    !json_object_is_type(v, json_type_string) || !jsonx_string_ok(v) ||
	    json_object_get_string_len(v) == 0 ||
	    (size_t)json_object_get_string_len(v) >= rv_len) {
		r = errbuf_set(e, ERR_INVALID, "the list answer has no valid "
		    "metadata.resourceVersion");
		goto out;
	}
	s = json_object_get_string(v);
	if (json_object_object_get_ex(md, "continue", &v) && v != NULL) {
		if (!json_object_is_type(v, json_type_string)) {
			r = errbuf_set(e, ERR_INVALID, "the list answer's metadata.continue is "
			    "not a string");
			goto out;
		}
		cont = xstrdup(json_object_get_string(v));
	} else {
		cont = xstrdup("");
	}
	memcpy(rv, s, strlen(s) + 1);
	*ret_continue = cont;
out:
	json_object_put(md);
	return r;
}
