/* store.c - the informer cache and the one-allocation object builder. */
#include "kube/store.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STORE_TABLE_MIN 16      /* slots in a new table (a power of two) */
#define STORE_BLD_ALIGN 8       /* bytes: alignment of builder arrays */

struct store {
	pthread_mutex_t lock;
	const struct store_obj **slots; /* open addressing, linear probing */
	size_t cap;                     /* slots: a power of two */
	size_t len;
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

/* A broken internal invariant is fatal, with file:line. */
#define STORE_BUG(what) store_bug(__FILE__, __LINE__, what)

static void __attribute__((noreturn))
store_bug(const char *file, int line, const char *what)
{
	fprintf(stderr, "bootccm: %s:%d: internal error: %s\n", file, line, what);
	abort();
}

static uint32_t
store_hash(const char *key)
{
	uint32_t h = 2166136261u;  /* FNV-1a */

	for (; *key; key++) {
		h ^= (unsigned char)*key;
		h *= 16777619u;
	}
	return h;
}

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
	struct store *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	if ((s->slots = calloc(STORE_TABLE_MIN, sizeof(*s->slots))) == NULL) {
		free(s);
		return NULL;
	}
	s->cap = STORE_TABLE_MIN;
	pthread_mutex_init(&s->lock, NULL);
	return s;
}

void
store_free(struct store *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->cap; i++)
		store_obj_unref(s->slots[i]);
	free(s->slots);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* store_find returns the slot holding key, or the empty slot where it would
 * go. Called with the lock held. */
static size_t
store_find(const struct store *s, const char *key, uint32_t hash)
{
	size_t mask = s->cap - 1, i = hash & mask;

	while (s->slots[i] != NULL &&
	    (s->slots[i]->hash != hash || strcmp(s->slots[i]->key, key) != 0))
		i = (i + 1) & mask;
	return i;
}

/* store_grow doubles the table. Called with the lock held. */
static int
store_grow(struct store *s)
{
	size_t ncap = s->cap * 2, mask = ncap - 1;
	const struct store_obj **n = calloc(ncap, sizeof(*n));

	if (n == NULL)
		return ERR_NOMEM;
	for (size_t i = 0; i < s->cap; i++) {
		const struct store_obj *o = s->slots[i];
		if (o == NULL)
			continue;
		size_t j = o->hash & mask;
		while (n[j] != NULL)
			j = (j + 1) & mask;
		n[j] = o;
	}
	free(s->slots);
	s->slots = n;
	s->cap = ncap;
	return 0;
}

int
store_put(struct store *s, const struct store_obj *o, const struct store_obj **ret_old)
{
	const struct store_obj *old = NULL;
	size_t i;
	int r = 0;

	pthread_mutex_lock(&s->lock);
	i = store_find(s, o->key, o->hash);
	if (s->slots[i] == NULL) {
		if (s->len >= STORE_OBJECTS_MAX) {
			r = ERR_TOO_LARGE;
			goto out;
		}
		/* keep the load under 3/4 so probes stay short */
		if ((s->len + 1) * 4 > s->cap * 3) {
			if ((r = store_grow(s)) < 0)
				goto out;
			i = store_find(s, o->key, o->hash);
		}
		s->len++;
	} else {
		old = s->slots[i];
		s->bytes -= old->size;
	}
	s->slots[i] = o;
	s->bytes += o->size;
out:
	pthread_mutex_unlock(&s->lock);
	if (r < 0) {
		store_obj_unref(o);
		return r;
	}
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
	size_t i, j, k, mask;

	pthread_mutex_lock(&s->lock);
	mask = s->cap - 1;
	i = store_find(s, key, store_hash(key));
	if ((old = s->slots[i]) == NULL) {
		pthread_mutex_unlock(&s->lock);
		return ERR_NOT_FOUND;
	}
	s->slots[i] = NULL;
	s->len--;
	s->bytes -= old->size;
	/* backward-shift deletion: move up every entry of the cluster that
	 * would no longer be found past the hole */
	for (j = (i + 1) & mask; s->slots[j] != NULL; j = (j + 1) & mask) {
		k = s->slots[j]->hash & mask;
		if (i <= j ? (k <= i || k > j) : (k <= i && k > j)) {
			s->slots[i] = s->slots[j];
			s->slots[j] = NULL;
			i = j;
		}
	}
	pthread_mutex_unlock(&s->lock);
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
	o = s->slots[store_find(s, key, store_hash(key))];
	if (o)
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

int
store_list(struct store *s, const struct store_obj ***ret, size_t *ret_n)
{
	const struct store_obj **v;
	size_t n = 0;

	pthread_mutex_lock(&s->lock);
	if ((v = malloc((s->len ? s->len : 1) * sizeof(*v))) == NULL) {
		pthread_mutex_unlock(&s->lock);
		return ERR_NOMEM;
	}
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i])
			v[n++] = store_obj_ref(s->slots[i]);
	pthread_mutex_unlock(&s->lock);
	qsort(v, n, sizeof(*v), store_cmp_obj);
	*ret = v;
	*ret_n = n;
	return 0;
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
	n = s->len;
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
		if ((r = store_list(s, &old, &nold)) < 0)
			goto out;
		if (nkeep && (keys = malloc(nkeep * sizeof(*keys))) == NULL) {
			r = ERR_NOMEM;
			goto out;
		}
		if (nkeep) {
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
		union store_scratch *sc = calloc(1, sizeof(*sc) + (n ? n : 1));
		if (sc == NULL)
			return NULL;
		sc->next = b->scratch;
		b->scratch = sc;
		b->used += n;
		return sc + 1;
	}
	if (n > b->cap - b->used)
		STORE_BUG("the filling pass asked for more than the measuring pass");
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
		STORE_BUG("the filling pass asked for more than the measuring pass");
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

	if ((o = calloc(1, size)) == NULL)
		return errbuf_set(e, ERR_NOMEM, "out of memory");
	r = fill(&b, o, src, e);
	free(o);
	while (b.scratch) {
		union store_scratch *next = b.scratch->next;
		free(b.scratch);
		b.scratch = next;
	}
	if (r < 0)
		return r;
	if ((blk = calloc(1, head + b.used)) == NULL)
		return errbuf_set(e, ERR_NOMEM, "out of memory");
	struct store_bld f = { .base = blk + head, .cap = b.used };
	o = (struct store_obj *)blk;
	if (fill(&f, o, src, e) < 0 || f.used != b.used)
		STORE_BUG("the filling pass differs from the measuring pass");
	if (o->key == NULL)
		STORE_BUG("a fill function set no key");
	if (o->uid == NULL)
		o->uid = "";
	if (o->resource_version == NULL)
		o->resource_version = "";
	o->refs = 1;
	o->size = head + b.used;
	o->hash = store_hash(o->key);
	*ret = o;
	return 0;
}

/* JSON helpers. */

static int
store_json_bad(struct errbuf *e, const char *path, const char *field,
    const char *what)
{
	return errbuf_set(e, ERR_INVALID, "%s%s%s: %s", path, *path ? "." : "",
	    field, what);
}

/* store_json_member returns 1 with *ret set when field is present and not
 * null, else 0. */
static int
store_json_member(json_object *parent, const char *field, json_object **ret)
{
	json_object *v;

	if (!json_object_object_get_ex(parent, field, &v) || v == NULL)
		return 0;
	*ret = v;
	return 1;
}

/* store_json_string_ok checks a string value for embedded NULs. */
static int
store_json_string_ok(json_object *v)
{
	const char *s = json_object_get_string(v);
	size_t len = (size_t)json_object_get_string_len(v);

	return memchr(s, '\0', len) == NULL;
}

int
store_json_str(struct store_bld *b, json_object *parent, const char *path,
    const char *field, const char **ret, struct errbuf *e)
{
	json_object *v;
	const char *s;

	if (!store_json_member(parent, field, &v)) {
		*ret = NULL;
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return store_json_bad(e, path, field, "expected a string");
	if (!store_json_string_ok(v))
		return store_json_bad(e, path, field, "holds a NUL character");
	if ((s = store_bld_str(b, json_object_get_string(v),
	    (size_t)json_object_get_string_len(v))) == NULL)
		return errbuf_set(e, ERR_NOMEM, "out of memory");
	*ret = s;
	return 0;
}

int
store_json_cstr(json_object *parent, const char *path, const char *field,
    const char **ret, struct errbuf *e)
{
	json_object *v;

	if (!store_json_member(parent, field, &v)) {
		*ret = NULL;
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return store_json_bad(e, path, field, "expected a string");
	if (!store_json_string_ok(v))
		return store_json_bad(e, path, field, "holds a NUL character");
	*ret = json_object_get_string(v);
	return 0;
}

int
store_json_int(json_object *parent, const char *path, const char *field,
    int64_t min, int64_t max, int64_t *ret, struct errbuf *e)
{
	json_object *v;
	int64_t x;

	if (!store_json_member(parent, field, &v)) {
		*ret = 0;
		return 0;
	}
	if (!json_object_is_type(v, json_type_int))
		return store_json_bad(e, path, field, "expected an integer");
	x = json_object_get_int64(v);
	if (x < min || x > max)
		return store_json_bad(e, path, field, "out of range");
	*ret = x;
	return 0;
}

int
store_json_object(json_object *parent, const char *path, const char *field,
    json_object **ret, struct errbuf *e)
{
	json_object *v;

	if (!store_json_member(parent, field, &v)) {
		*ret = NULL;
		return 0;
	}
	if (!json_object_is_type(v, json_type_object))
		return store_json_bad(e, path, field, "expected an object");
	*ret = v;
	return 0;
}

int
store_json_array(json_object *parent, const char *path, const char *field,
    json_object **ret, size_t *ret_n, struct errbuf *e)
{
	json_object *v;

	if (!store_json_member(parent, field, &v)) {
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	if (!json_object_is_type(v, json_type_array))
		return store_json_bad(e, path, field, "expected an array");
	*ret = v;
	*ret_n = json_object_array_length(v);
	return 0;
}

int
store_json_kv(struct store_bld *b, json_object *parent, const char *path,
    const char *field, const struct store_kv **ret, size_t *ret_n,
    struct errbuf *e)
{
	json_object *m;
	struct json_object_iterator it, end;
	struct store_kv *kv;
	size_t n, i = 0;
	int r;

	if ((r = store_json_object(parent, path, field, &m, e)) < 0)
		return r;
	*ret = NULL;
	*ret_n = 0;
	if (m == NULL || (n = (size_t)json_object_object_length(m)) == 0)
		return 0;
	if ((kv = store_bld_alloc(b, n * sizeof(*kv))) == NULL)
		return errbuf_set(e, ERR_NOMEM, "out of memory");
	it = json_object_iter_begin(m);
	end = json_object_iter_end(m);
	for (; !json_object_iter_equal(&it, &end) && i < n; json_object_iter_next(&it), i++) {
		const char *k = json_object_iter_peek_name(&it);
		json_object *v = json_object_iter_peek_value(&it);
		const char *vs = "";
		size_t vlen = 0;
		if (v != NULL) {
			if (!json_object_is_type(v, json_type_string) || !store_json_string_ok(v))
				return errbuf_set(e, ERR_INVALID, "%s%s%s[\"%.64s\"]: expected a string",
				    path, *path ? "." : "", field, k);
			vs = json_object_get_string(v);
			vlen = (size_t)json_object_get_string_len(v);
		}
		if ((kv[i].key = store_bld_str(b, k, strlen(k))) == NULL ||
		    (kv[i].value = store_bld_str(b, vs, vlen)) == NULL)
			return errbuf_set(e, ERR_NOMEM, "out of memory");
	}
	*ret = kv;
	*ret_n = i;
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

	if ((r = store_json_array(parent, path, field, &a, &n, e)) < 0)
		return r;
	*ret = NULL;
	*ret_n = 0;
	if (n == 0)
		return 0;
	if ((v = store_bld_alloc(b, n * sizeof(*v))) == NULL)
		return errbuf_set(e, ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_object *s = json_object_array_get_idx(a, i);
		if (s == NULL || !json_object_is_type(s, json_type_string) ||
		    !store_json_string_ok(s))
			return errbuf_set(e, ERR_INVALID, "%s%s%s[%zu]: expected a string",
			    path, *path ? "." : "", field, i);
		if ((v[i] = store_bld_str(b, json_object_get_string(s),
		    (size_t)json_object_get_string_len(s))) == NULL)
			return errbuf_set(e, ERR_NOMEM, "out of memory");
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

int
store_json_time(json_object *parent, const char *path, const char *field,
    int64_t *ret, struct errbuf *e)
{
	json_object *v;
	int64_t t;

	if (!store_json_member(parent, field, &v)) {
		*ret = 0;
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return store_json_bad(e, path, field, "expected a string");
	if (store_time_parse(json_object_get_string(v), &t) < 0)
		return store_json_bad(e, path, field, "not an RFC 3339 time");
	*ret = t;
	return 0;
}

/* store_digits parses exactly n decimal digits. */
static int
store_digits(const char *s, int n, int *ret)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*ret = v;
	return 0;
}

/* store_days_from_civil counts days from 1970-01-01 (proleptic Gregorian). */
static int64_t
store_days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int
store_time_parse(const char *s, int64_t *ret)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0, leap;
	const char *p;

	if (strlen(s) < 20 || store_digits(s, 4, &y) < 0 || s[4] != '-' ||
	    store_digits(s + 5, 2, &mo) < 0 || s[7] != '-' ||
	    store_digits(s + 8, 2, &d) < 0 || s[10] != 'T' ||
	    store_digits(s + 11, 2, &h) < 0 || s[13] != ':' ||
	    store_digits(s + 14, 2, &mi) < 0 || s[16] != ':' ||
	    store_digits(s + 17, 2, &sec) < 0)
		return ERR_INVALID;
	p = s + 19;
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return ERR_INVALID;
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	}
	if (*p == 'Z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p == '-' ? -1 : 1;
		if (store_digits(p + 1, 2, &oh) < 0 || p[3] != ':' ||
		    store_digits(p + 4, 2, &om) < 0 || oh > 23 || om > 59)
			return ERR_INVALID;
		p += 6;
	} else {
		return ERR_INVALID;
	}
	if (*p != '\0' || mo < 1 || mo > 12 || h > 23 || mi > 59 || sec > 59)
		return ERR_INVALID;
	leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (d < 1 || d > mdays[mo - 1] + (mo == 2 && leap))
		return ERR_INVALID;
	*ret = store_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
	    sign * (oh * 3600 + om * 60);
	return 0;
}
