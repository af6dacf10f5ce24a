/* store.c - the informer cache and the one-allocation object builder. */
#include "kube/store.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/xalloc.h"

#define STORE_BLD_ALIGN 8       /* bytes: alignment of builder arrays */

/* Label and annotation keys repeat across objects (kubernetes.io/hostname
 * on every Node): each distinct one is kept once, for the life of the
 * process, and objects point at it. Entries are never removed, so a key
 * found here in a build's measuring pass is still here in its filling pass,
 * and one refused for lack of room (past STORE_INTERN_MAX) stays refused:
 * the two passes agree. */
static pthread_mutex_t store_intern_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hmap store_intern_map;  /* key -> its shared copy (the map
                                         borrows it as its key); zeroed, it
                                         is empty, as hmap_init makes it */

struct store {
	pthread_mutex_t lock;
	struct hmap objs;               /* key -> object; borrows the object's key */
	size_t bytes;
};

/* Scratch memory of the measuring pass: a list of zeroed blocks. */
union store_scratch {
	union store_scratch *next;
	max_align_t align;
};

struct store_bld {
	int measuring;
	size_t used;                  /* bytes handed out, alignment included */
	char *base;                   /* filling: the object's arena */
	size_t cap;                   /* filling: its size */
	union store_scratch *scratch; /* measuring */
};

const struct store_obj *
store_obj_ref(const struct store_obj *o)
{
	/* refs is the one mutable part of an immutable object */
	__atomic_add_fetch(&((struct store_obj *)o)->refs, 1, __ATOMIC_RELAXED);
	return o;
}

void
store_obj_unref(const struct store_obj *o)
{
	if (o == NULL)
		return;
	if (__atomic_sub_fetch(&((struct store_obj *)o)->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free((void *)o);
}

const char *
store_kv_get(const struct store_kv *kv, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(kv[i].key, key) == 0)
			return kv[i].value;
	return NULL;
}

struct store *
store_new(void)
{
	struct store *s = xcalloc(1, sizeof(*s));

	pthread_mutex_init(&s->lock, NULL);
	hmap_init(&s->objs, 0);
	return s;
}

static void
store_unref_value(void *o)
{
	store_obj_unref(o);
}

void
store_free(struct store *s)
{
	if (s == NULL)
		return;
	hmap_free(&s->objs, store_unref_value);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int
store_put(struct store *s, const struct store_obj *o, const struct store_obj **ret_old)
{
	const struct store_obj *old;

	pthread_mutex_lock(&s->lock);
	old = hmap_get(&s->objs, o->key);
	if (old == NULL && hmap_len(&s->objs) >= STORE_OBJECTS_MAX) {
		pthread_mutex_unlock(&s->lock);
		store_obj_unref(o);
		return ERR_TOO_LARGE;
	}
	/* the map takes o's key in place of old's, which old takes along */
	hmap_put(&s->objs, o->key, (void *)o);
	if (old)
		s->bytes -= old->size;
	s->bytes += o->size;
	pthread_mutex_unlock(&s->lock);
	if (ret_old)
		*ret_old = old;
	else
		store_obj_unref(old);
	return 0;
}

int
store_delete(struct store *s, const char *key, const struct store_obj **ret_old)
{
	const struct store_obj *old;

	pthread_mutex_lock(&s->lock);
	if ((old = hmap_delete(&s->objs, key)) != NULL)
		s->bytes -= old->size;
	pthread_mutex_unlock(&s->lock);
	if (old == NULL)
		return ERR_NOT_FOUND;
	if (ret_old)
		*ret_old = old;
	else
		store_obj_unref(old);
	return 0;
}

const struct store_obj *
store_get(struct store *s, const char *key)
{
	const struct store_obj *o;

	pthread_mutex_lock(&s->lock);
	if ((o = hmap_get(&s->objs, key)) != NULL)
		store_obj_ref(o);
	pthread_mutex_unlock(&s->lock);
	return o;
}

static int
store_cmp_obj(const void *a, const void *b)
{
	const struct store_obj *x = *(const struct store_obj *const *)a;
	const struct store_obj *y = *(const struct store_obj *const *)b;
	return strcmp(x->key, y->key);
}

static int
store_cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void
store_list(struct store *s, const struct store_obj ***ret, size_t *ret_n)
{
	const struct store_obj **v;
	struct hmap_iter it;
	void *o;
	size_t n = 0;

	pthread_mutex_lock(&s->lock);
	v = xcalloc(hmap_len(&s->objs) ? hmap_len(&s->objs) : 1, sizeof(*v));
	hmap_iter_init(&it, &s->objs);
	while (hmap_iter_next(&it, NULL, &o))
		v[n++] = store_obj_ref(o);
	pthread_mutex_unlock(&s->lock);
	qsort(v, n, sizeof(*v), store_cmp_obj);
	*ret = v;
	*ret_n = n;
}

void
store_list_free(const struct store_obj **v, size_t n)
{
	if (v == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		store_obj_unref(v[i]);
	free(v);
}

size_t
store_len(struct store *s)
{
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = hmap_len(&s->objs);
	pthread_mutex_unlock(&s->lock);
	return n;
}

size_t
store_bytes(struct store *s)
{
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = s->bytes;
	pthread_mutex_unlock(&s->lock);
	return n;
}

/* store_bsearch_key tells whether key is among the n sorted objects. */
static int
store_bsearch_obj(const struct store_obj **v, size_t n, const char *key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(v[mid]->key, key);
		if (c == 0)
			return 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

int
store_replace(struct store *s, const struct store_obj **objs, size_t n,
    const char *const *keep, size_t nkeep, int complete, store_change_fn fn,
    void *arg)
{
	const struct store_obj **old = NULL;
	const char **keys = NULL;
	size_t nold = 0, i = 0;
	int r = 0;

	if (n > 0) /* an empty list may come as NULL, which qsort must not get */
		qsort(objs, n, sizeof(*objs), store_cmp_obj);
	if (complete) {
		store_list(s, &old, &nold);
		if (nkeep) {
			keys = xcalloc(nkeep, sizeof(*keys));
			memcpy(keys, keep, nkeep * sizeof(*keys));
			qsort(keys, nkeep, sizeof(*keys), store_cmp_str);
		}
		for (size_t j = 0; j < nold; j++) {
			const struct store_obj *gone = NULL;
			if (store_bsearch_obj(objs, n, old[j]->key) ||
			    (nkeep && bsearch(&old[j]->key, keys, nkeep, sizeof(*keys),
			    store_cmp_str) != NULL))
				continue;
			if (store_delete(s, old[j]->key, &gone) < 0)
				continue;
			if (fn)
				fn(gone, NULL, arg);
			store_obj_unref(gone);
		}
	}
	for (i = 0; i < n; i++) {
		const struct store_obj *o = objs[i], *prev = NULL;
		/* a later duplicate of the same key wins, as a later event would */
		if (i + 1 < n && strcmp(objs[i + 1]->key, o->key) == 0) {
			store_obj_unref(o);
			continue;
		}
		if ((prev = store_get(s, o->key)) != NULL &&
		    strcmp(prev->resource_version, o->resource_version) == 0) {
			store_obj_unref(prev);
			store_obj_unref(o);
			continue;
		}
		store_obj_unref(prev);
		prev = NULL;
		store_obj_ref(o);  /* fn borrows it after the store took ours */
		if ((r = store_put(s, o, &prev)) < 0) {
			store_obj_unref(o);
			i++;
			goto out;
		}
		if (fn)
			fn(prev, o, arg);
		store_obj_unref(prev);
		store_obj_unref(o);
	}
out:
	for (; i < n; i++)
		store_obj_unref(objs[i]);
	store_list_free(old, nold);
	free(keys);
	return r;
}

/* Building. */

static size_t
store_align(size_t n)
{
	return (n + STORE_BLD_ALIGN - 1) & ~(size_t)(STORE_BLD_ALIGN - 1);
}

void *
store_bld_alloc(struct store_bld *b, size_t n)
{
	void *p;

	b->used = store_align(b->used);
	if (b->measuring) {
		union store_scratch *sc = xcalloc(1, sizeof(*sc) + (n ? n : 1));
		sc->next = b->scratch;
		b->scratch = sc;
		b->used += n;
		return sc + 1;
	}
	if (n > b->cap - b->used)
		log_fatal("store: the filling pass asked for more than the measuring pass", NULL);
	p = b->base + b->used;
	b->used += n;
	return p;
}

const char *
store_bld_str(struct store_bld *b, const char *s, size_t len)
{
	char *p;

	if (b->measuring) {
		/* nothing reads a string back during a fill */
		b->used += len + 1;
		return "";
	}
	if (len + 1 > b->cap - b->used)
		log_fatal("store: the filling pass asked for more than the measuring pass", NULL);
	p = b->base + b->used;
	memcpy(p, s, len);
	p[len] = '\0';
	b->used += len + 1;
	return p;
}

int
store_obj_build(size_t size, store_fill_fn fill, const void *src,
    const struct store_obj **ret, struct errbuf *e)
{
	struct store_bld b = { .measuring = 1 };
	struct store_obj *o;
	size_t head = store_align(size);
	char *blk;
	int r;

	o = xcalloc(1, size);
	r = fill(&b, o, src, e);
	free(o);
	while (b.scratch) {
		union store_scratch *next = b.scratch->next;
		free(b.scratch);
		b.scratch = next;
	}
	if (r < 0)
		return r;
	blk = xcalloc(1, head + b.used);
	struct store_bld f = { .base = blk + head, .cap = b.used };
	o = (struct store_obj *)blk;
	if (fill(&f, o, src, e) < 0 || f.used != b.used)
		log_fatal("store: the filling pass differs from the measuring pass", NULL);
	if (o->key == NULL)
		log_fatal("store: a fill function set no key", NULL);
	if (o->uid == NULL)
		o->uid = "";
	if (o->resource_version == NULL)
		o->resource_version = "";
	o->refs = 1;
	o->size = head + b.used;
	*ret = o;
	return 0;
}

/* store_intern returns the shared copy of s (len bytes, no NUL in them),
 * made if there is room, or NULL. */
static const char *
store_intern(const char *s, size_t len)
{
	char *p;

	if (len > STORE_INTERN_LEN_MAX || strlen(s) != len)
		return NULL;
	pthread_mutex_lock(&store_intern_lock);
	if ((p = hmap_get(&store_intern_map, s)) == NULL &&
	    hmap_len(&store_intern_map) < STORE_INTERN_MAX) {
		p = xstrdup(s);
		hmap_put(&store_intern_map, p, p);
	}
	pthread_mutex_unlock(&store_intern_lock);
	return p;
}

const char *
store_bld_key(struct store_bld *b, const char *s, size_t len)
{
	const char *p = store_intern(s, len);

	return p ? p : store_bld_str(b, s, len);
}

/* JSON helpers: jsonx reads and checks, the builder keeps a copy. */

int
store_json_str(struct store_bld *b, json_object *parent, const char *path,
    const char *field, const char **ret, struct errbuf *e)
{
	const char *s;
	size_t len;
	int r;

	if ((r = jsonx_str(parent, path, field, 0, &s, &len, e)) < 0)
		return r;
	*ret = s ? store_bld_str(b, s, len) : NULL;
	return 0;
}

int
store_json_str_nul(struct store_bld *b, json_object *parent, const char *path,
    const char *field, const char **ret, int *ret_nul, struct errbuf *e)
{
	const char *s;
	size_t len;
	int r;

	if ((r = jsonx_str_nul(parent, path, field, &s, ret_nul, e)) < 0)
		return r;
	len = s ? strlen(s) : 0;
	*ret = s ? store_bld_str(b, s, len) : NULL;
	return 0;
}

int
store_json_kv(struct store_bld *b, json_object *parent, const char *path,
    const char *field, const struct store_kv **ret, size_t *ret_n,
    const char *const **ret_nul, size_t *ret_nnul, struct errbuf *e)
{
	json_object *m;
	struct json_object_iterator it, end;
	struct store_kv *kv;
	const char **nul = NULL;
	size_t n, i = 0, nn = 0;
	int r;

	if ((r = jsonx_object(parent, path, field, 0, &m, e)) < 0)
		return r;
	*ret = NULL;
	*ret_n = 0;
	if (ret_nul != NULL) {
		*ret_nul = NULL;
		*ret_nnul = 0;
	}
	if (m == NULL || (n = (size_t)json_object_object_length(m)) == 0)
		return 0;
	end = json_object_iter_end(m);
	for (it = json_object_iter_begin(m); !json_object_iter_equal(&it, &end);
	    json_object_iter_next(&it)) {
		const char *k = json_object_iter_peek_name(&it);
		json_object *v = json_object_iter_peek_value(&it);
		if (v != NULL && !json_object_is_type(v, json_type_string))
			return errbuf_set(e, ERR_INVALID, "%s%s%s[\"%.64s\"]: expected a string",
			    path, *path ? "." : "", field, k);
		if (v != NULL && !jsonx_string_ok(v)) {
			if (ret_nul == NULL)
				return errbuf_set(e, ERR_INVALID, "%s%s%s[\"%.64s\"]: holds a NUL "
				    "character", path, *path ? "." : "", field, k);
			nn++;
		}
	}
	if (nn > 0)
		nul = store_bld_alloc(b, nn * sizeof(*nul));
	kv = n > nn ? store_bld_alloc(b, (n - nn) * sizeof(*kv)) : NULL;
	nn = 0;
	for (it = json_object_iter_begin(m); !json_object_iter_equal(&it, &end);
	    json_object_iter_next(&it)) {
		const char *k = json_object_iter_peek_name(&it);
		json_object *v = json_object_iter_peek_value(&it);
		const char *vs = "";
		size_t vlen = 0;
		if (v != NULL && !jsonx_string_ok(v)) {
			nul[nn++] = store_bld_key(b, k, strlen(k));
			continue;
		}
		if (v != NULL) {
			vs = json_object_get_string(v);
			vlen = (size_t)json_object_get_string_len(v);
		}
		kv[i].key = store_bld_key(b, k, strlen(k));
		kv[i].value = store_bld_str(b, vs, vlen);
		i++;
	}
	*ret = kv;
	*ret_n = i;
	if (ret_nul != NULL) {
		*ret_nul = nul;
		*ret_nnul = nn;
	}
	return 0;
}

int
store_json_strs(struct store_bld *b, json_object *parent, const char *path,
    const char *field, const char *const **ret, size_t *ret_n,
    struct errbuf *e)
{
	json_object *a;
	const char **v;
	size_t n;
	int r;

	if ((r = jsonx_array(parent, path, field, 0, &a, &n, e)) < 0)
		return r;
	*ret = NULL;
	*ret_n = 0;
	if (n == 0)
		return 0;
	v = store_bld_alloc(b, n * sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		json_object *s = json_object_array_get_idx(a, i);
		if (s == NULL || !json_object_is_type(s, json_type_string) ||
		    !jsonx_string_ok(s))
			return errbuf_set(e, ERR_INVALID, "%s%s%s[%zu]: expected a string",
			    path, *path ? "." : "", field, i);
		v[i] = store_bld_str(b, json_object_get_string(s),
		    (size_t)json_object_get_string_len(s));
	}
	*ret = v;
	*ret_n = n;
	return 0;
}
