/* yamltree.c - build a small tree with positions from libyaml's event stream,
 * expanding aliases under node, byte and depth caps. */
#include "base/yamltree.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "base/hmap.h"
#include "base/readfile.h"
#include "base/xalloc.h"

#define YAMLTREE_ECHO_MAX 64 /* bytes of a key or alias name quoted in a message */

struct yamltree_frame {
	struct ynode *node;   /* the open sequence or map, already attached */
	char *anchor;         /* registered when the collection ends, or NULL */
	int want_value;       /* map: a key was read, its value comes next */
};

struct yamltree_parser {
	const char *name;
	const char *buf;
	size_t len;
	struct errbuf *e;
	size_t nodes;         /* nodes created, copies included */
	size_t bytes;         /* scalar bytes held, copies included */
	struct ynode *root;
	struct yamltree_frame stack[YAMLTREE_DEPTH_MAX];
	size_t depth;         /* open collections */
	struct hmap anchors;  /* anchor name -> its complete node (borrowed) */
};

static int
yamltree_int(size_t v)
{
	return v >= INT_MAX ? INT_MAX : (int)v + 1;
}

static int
yamltree_err(struct yamltree_parser *p, int code, int line, int col,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int
yamltree_err(struct yamltree_parser *p, int code, int line, int col,
    const char *fmt, ...)
{
	char msg[ERRBUF_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return errbuf_set(p->e, code, "%s:%d:%d: %s", p->name, line, col, msg);
}

static void
yamltree_free_node(struct ynode *n)
{
	size_t i;

	if (n == NULL)
		return;
	if (n->scalar != NULL) {
		/* Configuration files hold tokens and keys. */
		explicit_bzero(n->scalar, n->scalar_len);
		free(n->scalar);
	}
	for (i = 0; i < n->n; i++) {
		if (n->items != NULL)
			yamltree_free_node(n->items[i]);
		if (n->keys != NULL)
			yamltree_free_node(n->keys[i]);
	}
	free(n->items);
	free(n->keys);
	free(n);
}

void
yamltree_free(struct ynode *root)
{
	yamltree_free_node(root);
}

static int
yamltree_new(struct yamltree_parser *p, enum ynode_kind kind, int line,
    int col, struct ynode **ret)
{
	struct ynode *n;

	if (p->nodes >= YAMLTREE_NODES_MAX)
		return yamltree_err(p, ERR_TOO_LARGE, line, col,
		    "more than %d nodes (aliases expanded)", YAMLTREE_NODES_MAX);
	n = xcalloc(1, sizeof(*n));
	p->nodes++;
	n->kind = kind;
	n->line = line;
	n->col = col;
	*ret = n;
	return 0;
}

static int
yamltree_set_scalar(struct yamltree_parser *p, struct ynode *n,
    const char *value, size_t len)
{
	if (len > YAMLTREE_BYTES_MAX - p->bytes)
		return yamltree_err(p, ERR_TOO_LARGE, n->line, n->col,
		    "more than %d bytes of scalars (aliases expanded)",
		    YAMLTREE_BYTES_MAX);
	n->scalar = xmemdup(value, len);
	n->scalar_len = len;
	p->bytes += len;
	return 0;
}

/* yamltree_grow makes room for one more item; capacity is implied by n:
 * 0, then 4, then each power of two. */
static void
yamltree_grow(struct ynode *n)
{
	size_t cap;

	if (n->n != 0 && (n->n < 4 || (n->n & (n->n - 1)) != 0))
		return;
	cap = n->n == 0 ? 4 : n->n * 2;
	n->items = xreallocarray(n->items, cap, sizeof(*n->items));
	if (n->kind == YNODE_MAP)
		n->keys = xreallocarray(n->keys, cap, sizeof(*n->keys));
}

/* yamltree_attach hangs n under the open collection (or makes it the root).
 * On failure the caller still owns n. */
static int
yamltree_attach(struct yamltree_parser *p, struct ynode *n)
{
	struct yamltree_frame *f;

	if (p->depth == 0) {
		p->root = n;
		return 0;
	}
	f = &p->stack[p->depth - 1];
	if (f->node->kind == YNODE_MAP && f->want_value) {
		f->node->items[f->node->n - 1] = n;
		f->want_value = 0;
		return 0;
	}
	if (f->node->kind == YNODE_MAP && n->kind != YNODE_SCALAR)
		return yamltree_err(p, ERR_INVALID, n->line, n->col,
		    "mapping keys must be scalars");
	yamltree_grow(f->node);
	if (f->node->kind == YNODE_MAP) {
		f->node->keys[f->node->n] = n;
		f->node->items[f->node->n] = NULL;
		f->want_value = 1;
	} else
		f->node->items[f->node->n] = n;
	f->node->n++;
	return 0;
}

/* yamltree_anchor_add records a complete node under name; a later anchor
 * of the same name shadows an earlier one, as YAML says. */
static void
yamltree_anchor_add(struct yamltree_parser *p, const char *name,
    const struct ynode *n)
{
	/* the map holds borrowed nodes: it never frees a value */
	hmap_put(&p->anchors, name, (void *)(uintptr_t)n);
}

static const struct ynode *
yamltree_anchor_find(struct yamltree_parser *p, const char *name)
{
	return hmap_get(&p->anchors, name);
}

/* yamltree_copy deep-copies src for an alias; depth is the number of
 * collections that will enclose the copy. */
static int
yamltree_copy(struct yamltree_parser *p, const struct ynode *src, size_t depth,
    int line, int col, struct ynode **ret)
{
	struct ynode *n = NULL, *child;
	size_t i;
	int r;

	if (src->kind != YNODE_SCALAR && depth >= YAMLTREE_DEPTH_MAX)
		return yamltree_err(p, ERR_TOO_LARGE, line, col,
		    "nested deeper than %d levels (aliases expanded)",
		    YAMLTREE_DEPTH_MAX);
	r = yamltree_new(p, src->kind, line, col, &n);
	if (r < 0)
		return r;
	n->plain = src->plain;
	if (src->kind == YNODE_SCALAR) {
		r = yamltree_set_scalar(p, n, src->scalar, src->scalar_len);
		if (r < 0)
			goto fail;
		*ret = n;
		return 0;
	}
	for (i = 0; i < src->n; i++) {
		yamltree_grow(n);
		n->items[i] = NULL;
		if (n->kind == YNODE_MAP) {
			n->keys[i] = NULL;
			n->n++;
			r = yamltree_copy(p, src->keys[i], depth + 1,
			    src->keys[i]->line, src->keys[i]->col, &child);
			if (r < 0)
				goto fail;
			n->keys[i] = child;
		} else
			n->n++;
		r = yamltree_copy(p, src->items[i], depth + 1,
		    src->items[i]->line, src->items[i]->col, &child);
		if (r < 0)
			goto fail;
		n->items[i] = child;
	}
	*ret = n;
	return 0;

fail:
	yamltree_free_node(n);
	return r;
}

static int
yamltree_key_cmp(const void *a, const void *b)
{
	const struct ynode *ka = *(const struct ynode *const *)a;
	const struct ynode *kb = *(const struct ynode *const *)b;
	size_t len = ka->scalar_len < kb->scalar_len ? ka->scalar_len :
	    kb->scalar_len;
	int c;

	c = memcmp(ka->scalar, kb->scalar, len);
	if (c != 0)
		return c;
	if (ka->scalar_len != kb->scalar_len)
		return ka->scalar_len < kb->scalar_len ? -1 : 1;
	/* Equal keys: order by position so the later one is reported. */
	if (ka->line != kb->line)
		return ka->line < kb->line ? -1 : 1;
	return (ka->col > kb->col) - (ka->col < kb->col);
}

/* yamltree_check_keys refuses a map that repeats a key: which one a reader
 * would use differs between YAML libraries, so a repeat is a mistake. */
static int
yamltree_check_keys(struct yamltree_parser *p, const struct ynode *map)
{
	const struct ynode **sorted, *dup = NULL;
	size_t i;

	if (map->n < 2)
		return 0;
	sorted = xreallocarray(NULL, map->n, sizeof(*sorted));
	memcpy(sorted, map->keys, map->n * sizeof(*sorted));
	qsort(sorted, map->n, sizeof(*sorted), yamltree_key_cmp);
	for (i = 1; i < map->n && dup == NULL; i++)
		if (sorted[i]->scalar_len == sorted[i - 1]->scalar_len &&
		    memcmp(sorted[i]->scalar, sorted[i - 1]->scalar,
		    sorted[i]->scalar_len) == 0)
			dup = sorted[i];
	free(sorted);
	if (dup != NULL)
		return yamltree_err(p, ERR_INVALID, dup->line, dup->col,
		    "duplicate key \"%.*s\"", YAMLTREE_ECHO_MAX, dup->scalar);
	return 0;
}

/* yamltree_byte_at finds the byte at a 0-based libyaml line and column
 * (columns count characters), or -1. Only used to explain an error. */
static int
yamltree_byte_at(const struct yamltree_parser *p, size_t line, size_t col)
{
	size_t i = 0;

	while (line > 0 && i < p->len) {
		if (p->buf[i++] == '\n')
			line--;
	}
	if (line > 0)
		return -1;
	for (;;) {
		if (i >= p->len)
			return -1;
		if (col == 0)
			return (unsigned char)p->buf[i];
		i++;
		/* skip UTF-8 continuation bytes */
		while (i < p->len && ((unsigned char)p->buf[i] & 0xc0) == 0x80)
			i++;
		col--;
	}
}

static int
yamltree_parser_error(struct yamltree_parser *p, const yaml_parser_t *yp)
{
	const char *problem = yp->problem ? yp->problem : "syntax error";
	const char *hint = "";
	size_t i, line = 1, col = 1;

	switch (yp->error) {
	case YAML_MEMORY_ERROR:
		xalloc_fatal(__FILE__, __LINE__);
	case YAML_READER_ERROR:
		/* The reader reports a byte offset: count lines up to it. */
		for (i = 0; i < yp->problem_offset && i < p->len; i++) {
			if (p->buf[i] == '\n') {
				line++;
				col = 1;
			} else
				col++;
		}
		return yamltree_err(p, ERR_INVALID, yamltree_int(line - 1),
		    yamltree_int(col - 1), "%s", problem);
	default:
		if (strstr(problem, "tab") == NULL &&
		    yamltree_byte_at(p, yp->problem_mark.line,
		    yp->problem_mark.column) == '\t')
			hint = ": a tab, and YAML indents with spaces only";
		if (yp->context != NULL)
			return yamltree_err(p, ERR_INVALID,
			    yamltree_int(yp->problem_mark.line),
			    yamltree_int(yp->problem_mark.column),
			    "%s%s (%s at %d:%d)", problem, hint, yp->context,
			    yamltree_int(yp->context_mark.line),
			    yamltree_int(yp->context_mark.column));
		return yamltree_err(p, ERR_INVALID,
		    yamltree_int(yp->problem_mark.line),
		    yamltree_int(yp->problem_mark.column), "%s%s", problem, hint);
	}
}

static int
yamltree_scalar_event(struct yamltree_parser *p, const yaml_event_t *ev)
{
	struct ynode *n = NULL;
	const char *tag = (const char *)ev->data.scalar.tag;
	const char *anchor = (const char *)ev->data.scalar.anchor;
	int r;

	r = yamltree_new(p, YNODE_SCALAR, yamltree_int(ev->start_mark.line),
	    yamltree_int(ev->start_mark.column), &n);
	if (r < 0)
		return r;
	r = yamltree_set_scalar(p, n, (const char *)ev->data.scalar.value,
	    ev->data.scalar.length);
	if (r < 0)
		goto fail;
	/* An explicit !!str makes a plain scalar a string, not null/bool. */
	n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	    (tag == NULL || strcmp(tag, "tag:yaml.org,2002:str") != 0);
	r = yamltree_attach(p, n);
	if (r < 0)
		goto fail;
	if (anchor != NULL)
		yamltree_anchor_add(p, anchor, n);
	return 0;

fail:
	yamltree_free_node(n);
	return r;
}

static int
yamltree_alias_event(struct yamltree_parser *p, const yaml_event_t *ev)
{
	const char *name = (const char *)ev->data.alias.anchor;
	const struct ynode *src;
	struct ynode *n = NULL;
	int line = yamltree_int(ev->start_mark.line);
	int col = yamltree_int(ev->start_mark.column);
	int r;

	/* Anchors are registered when their node is complete, so an alias
	 * inside its own anchor's node (a cycle) is unknown here. */
	src = yamltree_anchor_find(p, name);
	if (src == NULL)
		return yamltree_err(p, ERR_INVALID, line, col,
		    "unknown alias \"*%.*s\"", YAMLTREE_ECHO_MAX, name);
	r = yamltree_copy(p, src, p->depth, line, col, &n);
	if (r < 0)
		return r;
	r = yamltree_attach(p, n);
	if (r < 0)
		yamltree_free_node(n);
	return r;
}

static int
yamltree_start_event(struct yamltree_parser *p, const yaml_event_t *ev)
{
	struct yamltree_frame *f;
	struct ynode *n = NULL;
	enum ynode_kind kind;
	const char *anchor;
	int line = yamltree_int(ev->start_mark.line);
	int col = yamltree_int(ev->start_mark.column);
	int r;

	if (ev->type == YAML_SEQUENCE_START_EVENT) {
		kind = YNODE_SEQ;
		anchor = (const char *)ev->data.sequence_start.anchor;
	} else {
		kind = YNODE_MAP;
		anchor = (const char *)ev->data.mapping_start.anchor;
	}
	if (p->depth >= YAMLTREE_DEPTH_MAX)
		return yamltree_err(p, ERR_TOO_LARGE, line, col,
		    "nested deeper than %d levels", YAMLTREE_DEPTH_MAX);
	r = yamltree_new(p, kind, line, col, &n);
	if (r < 0)
		return r;
	r = yamltree_attach(p, n);
	if (r < 0) {
		yamltree_free_node(n);
		return r;
	}
	f = &p->stack[p->depth++];
	memset(f, 0, sizeof(*f));
	f->node = n;
	if (anchor != NULL)
		f->anchor = xstrdup(anchor);
	return 0;
}

static int
yamltree_end_event(struct yamltree_parser *p)
{
	struct yamltree_frame *f;
	int r = 0;

	if (p->depth == 0)
		return errbuf_set(p->e, ERR_INTERNAL,
		    "%s: unbalanced YAML events", p->name);
	f = &p->stack[--p->depth];
	if (f->node->kind == YNODE_MAP)
		r = yamltree_check_keys(p, f->node);
	if (r == 0 && f->anchor != NULL)
		yamltree_anchor_add(p, f->anchor, f->node);
	free(f->anchor);
	f->anchor = NULL;
	return r;
}

static void
yamltree_parser_release(struct yamltree_parser *p)
{
	size_t i;

	hmap_free(&p->anchors, NULL);
	for (i = 0; i < p->depth; i++)
		free(p->stack[i].anchor);
}

int
yamltree_parse(const char *buf, size_t len, const char *name,
    struct ynode **ret, struct errbuf *e)
{
	struct yamltree_parser *p;
	yaml_parser_t yp;
	yaml_event_t ev;
	int r = 0, done = 0;

	/* The parser state holds the depth stack and anchor table. */
	p = xcalloc(1, sizeof(*p));
	p->name = name;
	p->buf = buf;
	p->len = len;
	p->e = e;
	hmap_init(&p->anchors, HMAP_COPY_KEYS);
	if (!yaml_parser_initialize(&yp))
		xalloc_fatal(__FILE__, __LINE__);
	yaml_parser_set_input_string(&yp, (const unsigned char *)buf, len);

	while (!done && r == 0) {
		if (!yaml_parser_parse(&yp, &ev)) {
			r = yamltree_parser_error(p, &yp);
			break;
		}
		switch (ev.type) {
		case YAML_SCALAR_EVENT:
			r = yamltree_scalar_event(p, &ev);
			break;
		case YAML_ALIAS_EVENT:
			r = yamltree_alias_event(p, &ev);
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			r = yamltree_start_event(p, &ev);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			r = yamltree_end_event(p);
			break;
		case YAML_DOCUMENT_END_EVENT:
		case YAML_STREAM_END_EVENT:
			/* Only the first document counts. */
			done = 1;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&yp);
	yamltree_parser_release(p);

	if (r == 0 && p->root != NULL && p->root->kind == YNODE_SCALAR &&
	    p->root->plain && p->root->scalar_len == 0) {
		/* "---" alone: an empty document */
		yamltree_free_node(p->root);
		p->root = NULL;
	}
	if (r < 0)
		yamltree_free_node(p->root);
	else
		*ret = p->root;
	free(p);
	return r;
}

int
yamltree_parse_file(const char *path, size_t max_bytes, struct ynode **ret,
    struct errbuf *e)
{
	char *buf = NULL;
	size_t len = 0;
	int r;

	if ((r = readfile(path, max_bytes, &buf, &len, e)) < 0)
		return r;
	r = yamltree_parse(buf, len, path, ret, e);
	readfile_free(buf, len);
	return r;
}

const struct ynode *
yamltree_get(const struct ynode *map, const char *key)
{
	size_t i, len;

	if (map == NULL || map->kind != YNODE_MAP || key == NULL)
		return NULL;
	len = strlen(key);
	for (i = 0; i < map->n; i++) {
		const struct ynode *k = map->keys[i];

		if (k->scalar_len == len && memcmp(k->scalar, key, len) == 0)
			return map->items[i];
	}
	return NULL;
}

/* The words go-yaml (and so Kubernetes) resolves as booleans. */
static const char *const yamltree_true[] = {
	"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
};
static const char *const yamltree_false[] = {
	"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
};

int
yamltree_bool(const struct ynode *n)
{
	size_t i;

	if (n == NULL || n->kind != YNODE_SCALAR || !n->plain ||
	    strlen(n->scalar) != n->scalar_len)
		return ERR_INVALID;
	for (i = 0; i < sizeof(yamltree_true) / sizeof(yamltree_true[0]); i++)
		if (strcmp(n->scalar, yamltree_true[i]) == 0)
			return 1;
	for (i = 0; i < sizeof(yamltree_false) / sizeof(yamltree_false[0]); i++)
		if (strcmp(n->scalar, yamltree_false[i]) == 0)
			return 0;
	return ERR_INVALID;
}

int
yamltree_is_null(const struct ynode *n)
{
	if (n == NULL)
		return 1;
	if (n->kind != YNODE_SCALAR || !n->plain ||
	    strlen(n->scalar) != n->scalar_len)
		return 0;
	return n->scalar_len == 0 || strcmp(n->scalar, "~") == 0 ||
	    strcmp(n->scalar, "null") == 0 || strcmp(n->scalar, "Null") == 0 ||
	    strcmp(n->scalar, "NULL") == 0;
}
