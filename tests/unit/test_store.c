/* test_store.c - the informer cache: put/get/delete, table growth and
 * deletion, sorted lists, the LIST diff (adds, updates, synthesized
 * deletions, kept and incomplete lists), references, concurrent readers,
 * the one-allocation builder, the JSON field helpers and RFC 3339 times. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "base/jsonx.h"
#include "kube/store.h"

/* A test object: a key, a resourceVersion and a payload string. */
struct t_obj {
	struct store_obj obj;
	const char *payload;
};

struct t_src {
	const char *key, *rv, *payload;
};

static int
t_fill(struct store_bld *b, struct store_obj *o, const void *src, struct errbuf *e)
{
	const struct t_src *s = src;
	struct t_obj *t = (struct t_obj *)o;

	(void)e;
	o->key = store_bld_str(b, s->key, strlen(s->key));
	o->resource_version = store_bld_str(b, s->rv, strlen(s->rv));
	if (s->payload)
		t->payload = store_bld_str(b, s->payload, strlen(s->payload));
	return 0;
}

static const struct store_obj *
t_new(const char *key, const char *rv)
{
	struct t_src s = { key, rv, "payload" };
	const struct store_obj *o = NULL;
	struct errbuf e;

	if (store_obj_build(sizeof(struct t_obj), t_fill, &s, &o, &e) < 0)
		abort();
	return o;
}

TEST(build_one_allocation)
{
	struct t_src s = { "ns/name", "42", "hello" };
	const struct store_obj *o;
	struct errbuf e;

	CHECK(store_obj_build(sizeof(struct t_obj), t_fill, &s, &o, &e) == 0);
	CHECK_STR(o->key, "ns/name");
	CHECK_STR(o->resource_version, "42");
	CHECK_STR(o->uid, "");
	CHECK_STR(((const struct t_obj *)o)->payload, "hello");
	/* every string lives inside the object's own block */
	CHECK((const char *)o->key > (const char *)o &&
	    (const char *)o->key < (const char *)o + o->size);
	CHECK((const char *)((const struct t_obj *)o)->payload < (const char *)o + o->size);
	/* the struct, then the three strings packed */
	CHECK(o->size == ((sizeof(struct t_obj) + 7) & ~(size_t)7) + 8 + 3 + 6);
	store_obj_unref(o);
}

static int
t_fill_fail(struct store_bld *b, struct store_obj *o, const void *src, struct errbuf *e)
{
	(void)b;
	(void)o;
	(void)src;
	return errbuf_set(e, ERR_INVALID, "refused");
}

TEST(build_failure_leaves_ret)
{
	const struct store_obj *o = (const struct store_obj *)1;
	struct errbuf e;

	CHECK(store_obj_build(sizeof(struct t_obj), t_fill_fail, NULL, &o, &e) == ERR_INVALID);
	CHECK(o == (const struct store_obj *)1);
	CHECK_STR(e.msg, "refused");
}

TEST(put_get_delete)
{
	struct store *s = store_new();
	const struct store_obj *a = t_new("a", "1"), *a2 = t_new("a", "2"), *old = NULL, *g;
	size_t asize = a->size;

	CHECK(s != NULL);
	CHECK(store_get(s, "a") == NULL);
	CHECK(store_put(s, a, &old) == 0 && old == NULL);
	CHECK(store_len(s) == 1 && store_bytes(s) == asize);
	g = store_get(s, "a");
	CHECK(g == a);
	store_obj_unref(g);
	CHECK(store_put(s, a2, &old) == 0 && old == a);
	/* a reference outlives the object's removal from the store */
	CHECK_STR(old->resource_version, "1");
	store_obj_unref(old);
	CHECK(store_len(s) == 1);
	CHECK(store_delete(s, "a", &old) == 0 && old == a2);
	store_obj_unref(old);
	CHECK(store_delete(s, "a", &old) == ERR_NOT_FOUND);
	CHECK(store_len(s) == 0 && store_bytes(s) == 0);
	store_free(s);
}

TEST(many_keys_grow_and_delete)
{
	struct store *s = store_new();
	char key[32];
	int i;

	for (i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "node-%d", i);
		CHECK(store_put(s, t_new(key, "1"), NULL) == 0);
	}
	CHECK(store_len(s) == 5000);
	/* delete every third: the probe clusters must stay findable */
	for (i = 0; i < 5000; i += 3) {
		snprintf(key, sizeof(key), "node-%d", i);
		CHECK(store_delete(s, key, NULL) == 0);
	}
	for (i = 0; i < 5000; i++) {
		const struct store_obj *o;
		snprintf(key, sizeof(key), "node-%d", i);
		o = store_get(s, key);
		CHECK((o != NULL) == (i % 3 != 0));
		if (o)
			CHECK_STR(o->key, key);
		store_obj_unref(o);
	}
	CHECK(store_len(s) == 5000 - 1667);
	store_free(s);
}

TEST(list_sorted)
{
	struct store *s = store_new();
	const struct store_obj **v;
	size_t n;

	store_put(s, t_new("b", "1"), NULL);
	store_put(s, t_new("c", "1"), NULL);
	store_put(s, t_new("a", "1"), NULL);
	store_list(s, &v, &n);
	CHECK(n == 3);
	CHECK_STR(v[0]->key, "a");
	CHECK_STR(v[1]->key, "b");
	CHECK_STR(v[2]->key, "c");
	store_list_free(v, n);
	store_free(s);
}

/* A record of store_replace's changes. */
static char t_log[1024];

static void
t_change(const struct store_obj *old, const struct store_obj *new_obj, void *arg)
{
	size_t n = strlen(t_log);

	(void)arg;
	if (old == NULL)
		snprintf(t_log + n, sizeof(t_log) - n, "add %s@%s;", new_obj->key,
		    new_obj->resource_version);
	else if (new_obj == NULL)
		snprintf(t_log + n, sizeof(t_log) - n, "del %s@%s;", old->key,
		    old->resource_version);
	else
		snprintf(t_log + n, sizeof(t_log) - n, "upd %s@%s->%s;", new_obj->key,
		    old->resource_version, new_obj->resource_version);
}

TEST(replace_diff)
{
	struct store *s = store_new();
	const struct store_obj *objs[4];
	const char *keep[] = { "k" };

	store_put(s, t_new("same", "1"), NULL);
	store_put(s, t_new("changed", "1"), NULL);
	store_put(s, t_new("gone", "1"), NULL);
	store_put(s, t_new("k", "1"), NULL);
	objs[0] = t_new("new", "5");
	objs[1] = t_new("same", "1");
	objs[2] = t_new("changed", "4");
	t_log[0] = '\0';
	CHECK(store_replace(s, objs, 3, keep, 1, 1, t_change, NULL) == 0);
	CHECK_STR(t_log, "del gone@1;upd changed@1->4;add new@5;");
	CHECK(store_len(s) == 4);
	const struct store_obj *k = store_get(s, "k");
	CHECK(k != NULL);
	store_obj_unref(k);

	/* an incomplete list deletes nothing */
	objs[0] = t_new("new", "6");
	t_log[0] = '\0';
	CHECK(store_replace(s, objs, 1, NULL, 0, 0, t_change, NULL) == 0);
	CHECK_STR(t_log, "upd new@5->6;");
	CHECK(store_len(s) == 4);

	/* a complete empty list deletes everything; duplicates: the last wins */
	t_log[0] = '\0';
	objs[0] = t_new("x", "1");
	objs[1] = t_new("x", "2");
	CHECK(store_replace(s, objs, 2, NULL, 0, 1, t_change, NULL) == 0);
	CHECK_CONTAINS(t_log, "del changed@4;");
	CHECK_CONTAINS(t_log, "del k@1;");
	CHECK_CONTAINS(t_log, "del new@6;");
	CHECK_CONTAINS(t_log, "del same@1;");
	CHECK_CONTAINS(t_log, "add x@2;");
	CHECK(strstr(t_log, "x@1") == NULL);
	CHECK(store_len(s) == 1);
	store_free(s);
}

static struct store *t_shared;
static volatile int t_done;

static void *
t_reader(void *arg)
{
	unsigned long found = 0;

	(void)arg;
	while (!__atomic_load_n(&t_done, __ATOMIC_ACQUIRE)) {
		const struct store_obj *o = store_get(t_shared, "node-7"), **v;
		size_t n;
		if (o) {
			found += o->key[0] == 'n';
			store_obj_unref(o);
		}
		store_list(t_shared, &v, &n);
		{
			for (size_t i = 0; i < n; i++)
				found += strlen(v[i]->resource_version) > 0;
			store_list_free(v, n);
		}
	}
	return (void *)found;
}

TEST(concurrent_readers)
{
	pthread_t th[2];
	char key[32], rv[16];

	t_shared = store_new();
	t_done = 0;
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, t_reader, NULL);
	for (int round = 0; round < 200; round++) {
		for (int i = 0; i < 20; i++) {
			snprintf(key, sizeof(key), "node-%d", i);
			snprintf(rv, sizeof(rv), "%d", round);
			store_put(t_shared, t_new(key, rv), NULL);
		}
		if (round % 2)
			store_delete(t_shared, "node-7", NULL);
	}
	__atomic_store_n(&t_done, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	CHECK(store_len(t_shared) == 19);
	store_free(t_shared);
}

/* JSON helpers, through a fill function that reads one of each. */
struct t_json {
	struct store_obj obj;
	const char *s;
	int64_t i, t;
	const struct store_kv *kv;
	size_t nkv;
	const char *const *strs;
	size_t nstrs;
};

static int
t_fill_json(struct store_bld *b, struct store_obj *o, const void *src, struct errbuf *e)
{
	struct t_json *t = (struct t_json *)o;
	json_object *j = (json_object *)src;
	int r;

	o->key = store_bld_str(b, "k", 1);
	if ((r = store_json_str(b, j, "spec", "s", &t->s, e)) < 0 ||
	    (r = jsonx_int(j, "spec", "i", 0, 65535, 0, &t->i, e)) < 0 ||
	    (r = jsonx_time(j, "spec", "t", 0, &t->t, e)) < 0 ||
	    (r = store_json_kv(b, j, "spec", "kv", &t->kv, &t->nkv, NULL, NULL, e)) < 0 ||
	    (r = store_json_strs(b, j, "spec", "strs", &t->strs, &t->nstrs, e)) < 0)
		return r;
	return 0;
}

static int
t_json(const char *text, const struct t_json **ret, struct errbuf *e)
{
	json_object *j = json_tokener_parse(text);
	const struct store_obj *o;
	int r;

	if (j == NULL)
		abort();
	r = store_obj_build(sizeof(struct t_json), t_fill_json, j, &o, e);
	json_object_put(j);
	if (r == 0)
		*ret = (const struct t_json *)o;
	return r;
}

TEST(json_helpers)
{
	const struct t_json *t;
	struct errbuf e;

	CHECK(t_json("{\"s\":\"x\",\"i\":80,\"t\":\"2026-11-21T08:00:00Z\","
	    "\"kv\":{\"a\":\"1\",\"b\":\"\",\"c\":null},\"strs\":[\"p\",\"q\"]}", &t, &e) == 0);
	CHECK_STR(t->s, "x");
	CHECK(t->i == 80);
	CHECK(t->t == 1795248000);
	CHECK(t->nkv == 3);
	CHECK_STR(t->kv[0].key, "a");
	CHECK_STR(t->kv[0].value, "1");
	CHECK_STR(t->kv[1].value, "");
	CHECK_STR(t->kv[2].value, "");
	CHECK_STR(store_kv_get(t->kv, t->nkv, "a"), "1");
	CHECK(store_kv_get(t->kv, t->nkv, "z") == NULL);
	CHECK(t->nstrs == 2);
	CHECK_STR(t->strs[1], "q");
	store_obj_unref(&t->obj);

	/* absent and null are the same */
	CHECK(t_json("{\"s\":null,\"kv\":null,\"strs\":null}", &t, &e) == 0);
	CHECK(t->s == NULL && t->i == 0 && t->t == 0 && t->nkv == 0 && t->kv == NULL);
	CHECK(t->nstrs == 0);
	store_obj_unref(&t->obj);

	CHECK(t_json("{\"s\":1}", &t, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "spec.s: expected a string");
	CHECK(t_json("{\"s\":\"a\\u0000b\"}", &t, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "spec.s: holds a NUL");
	CHECK(t_json("{\"i\":\"80\"}", &t, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "spec.i: expected an integer");
	CHECK(t_json("{\"i\":80.0}", &t, &e) == ERR_INVALID);
	CHECK(t_json("{\"i\":65536}", &t, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "spec.i: out of range");
	CHECK(t_json("{\"i\":-1}", &t, &e) == ERR_INVALID);
	CHECK(t_json("{\"t\":\"yesterday\"}", &t, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "spec.t: not an RFC 3339 time");
	CHECK(t_json("{\"kv\":[]}", &t, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "spec.kv: expected an object");
	CHECK(t_json("{\"kv\":{\"a\":1}}", &t, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "spec.kv[\"a\"]: expected a string");
	CHECK(t_json("{\"strs\":{}}", &t, &e) == ERR_INVALID);
	CHECK(t_json("{\"strs\":[\"a\",2]}", &t, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "spec.strs[1]: expected a string");
}

/* t_time reads a metav1.Time the way a fill does (jsonx_time, that is
 * rfc3339_parse); a bad one fails the build with the field's name. */
static int
t_time(const char *text, int64_t *ret)
{
	const struct t_json *t;
	struct errbuf e = { "" };
	char json[128];
	int r;

	snprintf(json, sizeof(json), "{\"t\":\"%s\"}", text);
	if ((r = t_json(json, &t, &e)) < 0) {
		if (strcmp(e.msg, "spec.t: not an RFC 3339 time") != 0)
			return ERR_INTERNAL;
		return r;
	}
	*ret = t->t;
	store_obj_unref(&t->obj);
	return 0;
}

TEST(label_keys_are_shared)
{
	const struct t_json *a, *b;
	struct errbuf e;
	char big[STORE_INTERN_LEN_MAX + 32], json[STORE_INTERN_LEN_MAX + 64];

	CHECK(t_json("{\"kv\":{\"kubernetes.io/hostname\":\"a\",\"x\":\"1\"}}", &a, &e) == 0);
	CHECK(t_json("{\"kv\":{\"x\":\"2\",\"kubernetes.io/hostname\":\"b\"}}", &b, &e) == 0);
	/* one copy of each key for both objects, outside their allocations */
	CHECK(a->kv[0].key == b->kv[1].key && a->kv[1].key == b->kv[0].key);
	CHECK_STR(a->kv[0].key, "kubernetes.io/hostname");
	CHECK(a->kv[0].key < (const char *)a || a->kv[0].key >= (const char *)a + a->obj.size);
	CHECK_STR(b->kv[1].value, "b");
	CHECK(a->obj.size == b->obj.size);
	store_obj_unref(&a->obj);
	/* the shared copy outlives every object */
	CHECK(t_json("{\"kv\":{\"kubernetes.io/hostname\":\"c\"}}", &a, &e) == 0);
	CHECK(a->kv[0].key == b->kv[1].key);
	store_obj_unref(&a->obj);
	store_obj_unref(&b->obj);
	/* a key past the length cap is the object's own */
	memset(big, 'k', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	snprintf(json, sizeof(json), "{\"kv\":{\"%s\":\"v\"}}", big);
	CHECK(t_json(json, &a, &e) == 0);
	CHECK_STR(a->kv[0].key, big);
	CHECK(a->kv[0].key >= (const char *)a && a->kv[0].key < (const char *)a + a->obj.size);
	store_obj_unref(&a->obj);
}

TEST(time_parse)
{
	int64_t t;

	CHECK(t_time("1970-01-01T00:00:00Z", &t) == 0 && t == 0);
	CHECK(t_time("2026-11-21T08:00:00Z", &t) == 0 && t == 1795248000);
	CHECK(t_time("2026-11-21T08:00:00.123456Z", &t) == 0 && t == 1795248000);
	CHECK(t_time("2026-11-21T10:00:00+02:00", &t) == 0 && t == 1795248000);
	CHECK(t_time("2026-11-21T07:30:00-00:30", &t) == 0 && t == 1795248000);
	CHECK(t_time("2024-02-29T00:00:00Z", &t) == 0);
	CHECK(t_time("1969-12-31T23:59:59Z", &t) == 0 && t == -1);
	CHECK(t_time("2023-02-29T00:00:00Z", &t) == ERR_INVALID);
	CHECK(t_time("2026-13-01T00:00:00Z", &t) == ERR_INVALID);
	CHECK(t_time("2026-11-21T24:00:00Z", &t) == ERR_INVALID);
	CHECK(t_time("2026-11-21T08:00:60Z", &t) == ERR_INVALID);
	CHECK(t_time("2026-11-21 08:00:00Z", &t) == ERR_INVALID);
	CHECK(t_time("2026-11-21T08:00:00", &t) == ERR_INVALID);
	CHECK(t_time("2026-11-21T08:00:00Zjunk", &t) == ERR_INVALID);
	CHECK(t_time("2026-11-21T08:00:00.Z", &t) == ERR_INVALID);
	CHECK(t_time("", &t) == ERR_INVALID);
}

/* Last: it fills the process's table of shared keys. */
TEST(shared_keys_are_capped)
{
	const struct t_json *a, *b;
	struct errbuf e;
	char json[64];

	CHECK(t_json("{\"kv\":{\"kubernetes.io/os\":\"linux\"}}", &b, &e) == 0);
	for (int i = 0; i < STORE_INTERN_MAX; i++) {
		snprintf(json, sizeof(json), "{\"kv\":{\"key-%d\":\"v\"}}", i);
		CHECK(t_json(json, &a, &e) == 0);
		store_obj_unref(&a->obj);
	}
	/* full: a new key is copied, a known one still shared */
	CHECK(t_json("{\"kv\":{\"a-new-key\":\"v\",\"kubernetes.io/os\":\"linux\"}}", &a,
	    &e) == 0);
	CHECK_STR(a->kv[0].key, "a-new-key");
	CHECK(a->kv[0].key >= (const char *)a && a->kv[0].key < (const char *)a + a->obj.size);
	CHECK(a->kv[1].key == b->kv[0].key);
	store_obj_unref(&a->obj);
	store_obj_unref(&b->obj);
}

TEST_MAIN()
