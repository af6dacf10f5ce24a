/* cloudconfig.c - the --cloud-config YAML loader: a schema-driven walk of a
 * yamltree document that rejects what the schema does not know. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cloudconfig.h"
#include "base/duration.h"
#include "base/err.h"
#include "base/numparse.h"
#include "base/readfile.h"
#include "base/xalloc.h"
#include "base/yamltree.h"

#define CLOUDCONFIG_PATH_MAX 128 /* bytes: "a.b.c" section path in messages */

/* The position of a problem: the file name and a node, or the file alone. */
struct cloudconfig_ctx {
	const char *name;
	struct errbuf *e;
};

static int
cloudconfig_err(const struct cloudconfig_ctx *c, const struct ynode *at, int code,
    const char *what, const char *section)
{
	if (at != NULL)
		return errbuf_set(c->e, code, "%s:%d:%d: %s in %s", c->name, at->line, at->col,
		    what, section);
	return errbuf_set(c->e, code, "%s: %s in %s", c->name, what, section);
}

static int
cloudconfig_kind_err(const struct cloudconfig_ctx *c, const struct ynode *at,
    const char *key, const char *want, const char *section)
{
	return errbuf_set(c->e, ERR_INVALID, "%s:%d:%d: key \"%s\" in %s: want %s", c->name,
	    at->line, at->col, key, section, want);
}

/* cloudconfig_cstring tells whether a scalar is a usable C string. */
static int
cloudconfig_cstring(const struct ynode *n)
{
	return n->kind == YNODE_SCALAR && strlen(n->scalar) == n->scalar_len &&
	    n->scalar_len < CLOUDCONFIG_STRING_MAX;
}

static int
cloudconfig_int(const char *s, long long min, long long max, long long *ret)
{
	int64_t v;

	if (min == 0 && max == 0) {
		min = INT64_MIN;
		max = INT64_MAX;
	}
	if (numparse(s, NUMPARSE_SIGN, min, max, &v, NULL) < 0)
		return ERR_INVALID;
	*ret = v;
	return 0;
}

static int
cloudconfig_bool_text(const char *s)
{
	if (strcmp(s, "true") == 0)
		return 1;
	if (strcmp(s, "false") == 0)
		return 0;
	return ERR_INVALID;
}

/* cloudconfig_default stores k's default (or the empty value) at field.
 * Returns 0 or ERR_INTERNAL (a default the schema's own type refuses). */
static int
cloudconfig_default(const struct cloudconfig_key *k, char *field, struct errbuf *e)
{
	long long v;
	int64_t ns;
	int b;

	if (k->def == NULL)
		return 0;
	switch (k->type) {
	case CLOUDCONFIG_STRING:
		*(char **)field = xstrdup(k->def);
		return 0;
	case CLOUDCONFIG_BOOL:
		if ((b = cloudconfig_bool_text(k->def)) < 0)
			break;
		*(int *)field = b;
		return 0;
	case CLOUDCONFIG_INT:
		if (cloudconfig_int(k->def, k->min, k->max, &v) < 0)
			break;
		*(long long *)field = v;
		return 0;
	case CLOUDCONFIG_DURATION:
		if (duration_parse(k->def, &ns) < 0)
			break;
		*(int64_t *)field = ns;
		return 0;
	default:
		break;
	}
	return errbuf_set(e, ERR_INTERNAL, "cloud-config schema: bad default \"%s\" for \"%s\"",
	    k->def, k->key);
}

/* cloudconfig_too_many checks v, a list or map, against k's cap on items. */
static int
cloudconfig_too_many(const struct cloudconfig_ctx *c, const struct cloudconfig_key *k,
    const struct ynode *v, const char *section)
{
	char what[64];

	if (k->max_items == 0 && v->n > CLOUDCONFIG_ITEMS_MAX)
		return cloudconfig_err(c, v, ERR_TOO_LARGE, "too many items", section);
	if (k->max_items != 0 && v->n > k->max_items) {
		snprintf(what, sizeof(what), "more than %zu items", k->max_items);
		return cloudconfig_err(c, v, ERR_TOO_LARGE, what, section);
	}
	return 0;
}

/* cloudconfig_check runs check (a key's check or check_key) on v's text and
 * reports its verdict at v. */
static int
cloudconfig_check(const struct cloudconfig_ctx *c, int (*check)(const char *, struct errbuf *),
    const struct cloudconfig_key *k, const struct ynode *v, const char *section)
{
	struct errbuf ce = { "" };
	int r;

	if (check == NULL || (r = check(v->scalar, &ce)) >= 0)
		return 0;
	return errbuf_set(c->e, r, "%s:%d:%d: key \"%s\" in %s: %s", c->name, v->line, v->col,
	    k->key, section, ce.msg);
}

/* cloudconfig_subpath names key's value inside section in messages. */
static void
cloudconfig_subpath(char sub[CLOUDCONFIG_PATH_MAX], const char *section, const char *key)
{
	if (strcmp(section, "the top level") == 0)
		snprintf(sub, CLOUDCONFIG_PATH_MAX, "%s", key);
	else
		snprintf(sub, CLOUDCONFIG_PATH_MAX, "%s.%s", section, key);
}

static int
cloudconfig_list(const struct cloudconfig_ctx *c, const struct cloudconfig_key *k,
    const struct ynode *v, const char *section, struct cloudconfig_list *ret)
{
	size_t i;
	int r;

	if (v->kind != YNODE_SEQ)
		return cloudconfig_kind_err(c, v, k->key, "a list of strings", section);
	if ((r = cloudconfig_too_many(c, k, v, section)) < 0)
		return r;
	if (v->n == 0)
		return 0;
	ret->items = xcalloc(v->n, sizeof(*ret->items));
	for (i = 0; i < v->n; i++) {
		if (!cloudconfig_cstring(v->items[i]))
			return cloudconfig_kind_err(c, v->items[i], k->key,
			    "a list of strings", section);
		if ((r = cloudconfig_check(c, k->check, k, v->items[i], section)) < 0)
			return r;
		ret->items[i] = xstrdup(v->items[i]->scalar);
		ret->n++;
	}
	return 0;
}

static int
cloudconfig_map(const struct cloudconfig_ctx *c, const struct cloudconfig_key *k,
    const struct ynode *v, const char *section, struct cloudconfig_map *ret)
{
	size_t i;
	int r;

	if (v->kind != YNODE_MAP)
		return cloudconfig_kind_err(c, v, k->key, "a map of strings", section);
	if ((r = cloudconfig_too_many(c, k, v, section)) < 0)
		return r;
	if (v->n == 0)
		return 0;
	ret->keys = xcalloc(v->n, sizeof(*ret->keys));
	ret->values = xcalloc(v->n, sizeof(*ret->values));
	for (i = 0; i < v->n; i++) {
		if (!cloudconfig_cstring(v->keys[i]))
			return cloudconfig_kind_err(c, v->keys[i], k->key,
			    "a map of strings", section);
		if (!cloudconfig_cstring(v->items[i]))
			return cloudconfig_kind_err(c, v->items[i], k->key,
			    "a map of strings", section);
		if ((r = cloudconfig_check(c, k->check_key, k, v->keys[i], section)) < 0 ||
		    (r = cloudconfig_check(c, k->check, k, v->items[i], section)) < 0)
			return r;
		ret->keys[i] = xstrdup(v->keys[i]->scalar);
		ret->values[i] = xstrdup(v->items[i]->scalar);
		ret->n++;
	}
	return 0;
}

static int cloudconfig_section(const struct cloudconfig_ctx *c, const struct ynode *map,
    const char *section, const struct cloudconfig_key *schema, int absent_ok, char *out);

/* cloudconfig_sections loads a list of maps, each into its own element. */
static int
cloudconfig_sections(const struct cloudconfig_ctx *c, const struct cloudconfig_key *k,
    const struct ynode *v, const char *section, struct cloudconfig_sections *ret)
{
	char path[CLOUDCONFIG_PATH_MAX], sub[CLOUDCONFIG_PATH_MAX];
	size_t i;
	int r;

	if (v->kind != YNODE_SEQ)
		return cloudconfig_kind_err(c, v, k->key, "a list of maps", section);
	if ((r = cloudconfig_too_many(c, k, v, section)) < 0)
		return r;
	if (v->n == 0)
		return 0;
	ret->items = xcalloc(v->n, k->elem_size);
	ret->pos = xcalloc(v->n, sizeof(*ret->pos));
	cloudconfig_subpath(path, section, k->key);
	for (i = 0; i < v->n; i++) {
		const struct ynode *item = v->items[i];

		if (item->kind != YNODE_MAP)
			return cloudconfig_kind_err(c, item, k->key, "a list of maps", section);
		snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
		ret->pos[i].line = item->line;
		ret->pos[i].col = item->col;
		/* counted before it is loaded: a failure frees what it got */
		ret->n++;
		if ((r = cloudconfig_section(c, item, sub, k->section, 0,
		    (char *)ret->items + i * k->elem_size)) < 0)
			return r;
	}
	return 0;
}

/* cloudconfig_value stores v, the value of key k, at its field. */
static int
cloudconfig_value(const struct cloudconfig_ctx *c, const struct cloudconfig_key *k,
    const struct ynode *v, const char *section, char *out)
{
	char *field = out + k->offset, sub[CLOUDCONFIG_PATH_MAX];
	long long n;
	int64_t ns;
	int b, r;

	switch (k->type) {
	case CLOUDCONFIG_STRING:
		if (v->kind == YNODE_SCALAR && v->scalar_len >= CLOUDCONFIG_STRING_MAX)
			return errbuf_set(c->e, ERR_TOO_LARGE, "%s:%d:%d: key \"%s\" in %s: longer "
			    "than %d bytes", c->name, v->line, v->col, k->key, section,
			    CLOUDCONFIG_STRING_MAX - 1);
		if (!cloudconfig_cstring(v))
			return cloudconfig_kind_err(c, v, k->key, "a string", section);
		if ((r = cloudconfig_check(c, k->check, k, v, section)) < 0)
			return r;
		*(char **)field = xstrdup(v->scalar);
		return 0;
	case CLOUDCONFIG_BOOL:
		if (v->kind != YNODE_SCALAR || (b = yamltree_bool(v)) < 0)
			return cloudconfig_kind_err(c, v, k->key, "a boolean", section);
		*(int *)field = b;
		return 0;
	case CLOUDCONFIG_INT:
		if (v->kind != YNODE_SCALAR || !v->plain || !cloudconfig_cstring(v) ||
		    cloudconfig_int(v->scalar, k->min, k->max, &n) < 0) {
			if (k->min != 0 || k->max != 0) {
				return errbuf_set(c->e, ERR_INVALID, "%s:%d:%d: key \"%s\" in %s: "
				    "want an integer in [%lld, %lld]", c->name, v->line, v->col,
				    k->key, section, k->min, k->max);
			}
			return cloudconfig_kind_err(c, v, k->key, "an integer", section);
		}
		*(long long *)field = n;
		return 0;
	case CLOUDCONFIG_DURATION:
		/* no setting of a provider is a negative span of time */
		if (!cloudconfig_cstring(v) || duration_parse(v->scalar, &ns) < 0 || ns < 0)
			return cloudconfig_kind_err(c, v, k->key,
			    "a duration such as \"30s\" or \"5m\"", section);
		if ((k->min != 0 || k->max != 0) && (ns < k->min || ns > k->max)) {
			char lo[32], hi[32];
			duration_format(k->min, lo, sizeof(lo));
			duration_format(k->max, hi, sizeof(hi));
			return errbuf_set(c->e, ERR_INVALID, "%s:%d:%d: key \"%s\" in %s: \"%.64s\": "
			    "want a duration from %s to %s", c->name, v->line, v->col, k->key,
			    section, v->scalar, lo, hi);
		}
		*(int64_t *)field = ns;
		return 0;
	case CLOUDCONFIG_STRING_LIST:
		return cloudconfig_list(c, k, v, section, (struct cloudconfig_list *)(void *)field);
	case CLOUDCONFIG_MAP:
		return cloudconfig_map(c, k, v, section, (struct cloudconfig_map *)(void *)field);
	case CLOUDCONFIG_SECTION:
		if (v->kind != YNODE_MAP)
			return cloudconfig_kind_err(c, v, k->key, "a map", section);
		cloudconfig_subpath(sub, section, k->key);
		return cloudconfig_section(c, v, sub, k->section, 0, out);
	case CLOUDCONFIG_SECTION_LIST:
		return cloudconfig_sections(c, k, v, section,
		    (struct cloudconfig_sections *)(void *)field);
	}
	return errbuf_set(c->e, ERR_INTERNAL, "cloud-config schema: bad type for \"%s\"", k->key);
}

/* cloudconfig_section loads map (NULL: absent, all defaults) per schema.
 * absent_ok: map is an optional section left out, so the required keys
 * inside it are not required (a required section says so itself). */
static int
cloudconfig_section(const struct cloudconfig_ctx *c, const struct ynode *map,
    const char *section, const struct cloudconfig_key *schema, int absent_ok, char *out)
{
	const struct cloudconfig_key *k;
	const struct ynode *v;
	char what[CLOUDCONFIG_PATH_MAX + 64], sub[CLOUDCONFIG_PATH_MAX];
	size_t i;
	int r;

	if (map != NULL) {
		for (i = 0; i < map->n; i++) {
			const struct ynode *key = map->keys[i];

			for (k = schema; k->key != NULL; k++)
				if (key->scalar_len == strlen(k->key) &&
				    strcmp(key->scalar, k->key) == 0)
					break;
			if (k->key == NULL) {
				snprintf(what, sizeof(what), "unknown key \"%.64s\"",
				    key->scalar);
				return cloudconfig_err(c, key, ERR_INVALID, what, section);
			}
		}
	}
	for (k = schema; k->key != NULL; k++) {
		v = map != NULL ? yamltree_get(map, k->key) : NULL;
		if (v != NULL && !yamltree_is_null(v)) {
			if ((r = cloudconfig_value(c, k, v, section, out)) < 0)
				return r;
			continue;
		}
		if (k->required && !absent_ok) {
			snprintf(what, sizeof(what), "missing required key \"%s\"", k->key);
			return cloudconfig_err(c, v != NULL ? v : map, ERR_INVALID, what, section);
		}
		if (k->type == CLOUDCONFIG_SECTION) {
			cloudconfig_subpath(sub, section, k->key);
			if ((r = cloudconfig_section(c, NULL, sub, k->section, 1, out)) < 0)
				return r;
			continue;
		}
		if ((r = cloudconfig_default(k, out + k->offset, c->e)) < 0)
			return r;
	}
	return 0;
}

int
cloudconfig_parse(const char *buf, size_t len, const char *name,
    const struct cloudconfig_key *schema, void *out, size_t out_size, struct errbuf *e)
{
	struct cloudconfig_ctx c = { name, e };
	struct ynode *root = NULL;
	char *tmp;
	int r;

	if (len > CLOUDCONFIG_FILE_MAX)
		return errbuf_set(e, ERR_TOO_LARGE, "%s: larger than %d bytes", name,
		    CLOUDCONFIG_FILE_MAX);
	tmp = xcalloc(1, out_size);
	if ((r = yamltree_parse(buf, len, name, &root, e)) < 0)
		goto out;
	if (root != NULL && yamltree_is_null(root)) {
		yamltree_free(root);
		root = NULL;
	}
	if (root != NULL && root->kind != YNODE_MAP) {
		r = errbuf_set(e, ERR_INVALID, "%s:%d:%d: want a map of settings at the top level",
		    name, root->line, root->col);
		goto out;
	}
	if ((r = cloudconfig_section(&c, root, "the top level", schema, 0, tmp)) < 0)
		goto out;
	memcpy(out, tmp, out_size);
out:
	if (r < 0)
		cloudconfig_free(schema, tmp);
	free(tmp);
	yamltree_free(root);
	return r;
}

int
cloudconfig_load(const char *path, const struct cloudconfig_key *schema,
    void *out, size_t out_size, struct errbuf *e)
{
	char *buf = NULL;
	size_t n = 0;
	int r;

	if (path == NULL || *path == '\0')
		return cloudconfig_parse("", 0, "cloud-config", schema, out, out_size, e);
	if ((r = readfile(path, CLOUDCONFIG_FILE_MAX, &buf, &n, e)) < 0)
		return r;
	r = cloudconfig_parse(buf, n, path, schema, out, out_size, e);
	/* cloud-configs hold credentials for API-backed providers */
	readfile_free(buf, n);
	return r;
}

void
cloudconfig_free(const struct cloudconfig_key *schema, void *out)
{
	const struct cloudconfig_key *k;
	char *field;
	size_t i;

	for (k = schema; k->key != NULL; k++) {
		field = (char *)out + k->offset;
		switch (k->type) {
		case CLOUDCONFIG_STRING:
			free(*(char **)field);
			*(char **)field = NULL;
			break;
		case CLOUDCONFIG_STRING_LIST: {
			struct cloudconfig_list *l = (struct cloudconfig_list *)(void *)field;

			for (i = 0; i < l->n; i++)
				free(l->items[i]);
			free(l->items);
			memset(l, 0, sizeof(*l));
			break;
		}
		case CLOUDCONFIG_MAP: {
			struct cloudconfig_map *m = (struct cloudconfig_map *)(void *)field;

			for (i = 0; i < m->n; i++) {
				free(m->keys[i]);
				free(m->values[i]);
			}
			free(m->keys);
			free(m->values);
			memset(m, 0, sizeof(*m));
			break;
		}
		case CLOUDCONFIG_SECTION:
			cloudconfig_free(k->section, out);
			break;
		case CLOUDCONFIG_SECTION_LIST: {
			struct cloudconfig_sections *l =
			    (struct cloudconfig_sections *)(void *)field;

			for (i = 0; i < l->n; i++)
				cloudconfig_free(k->section, (char *)l->items + i * k->elem_size);
			free(l->items);
			free(l->pos);
			memset(l, 0, sizeof(*l));
			break;
		}
		default:
			break;
		}
	}
}
