/* test_hmap.c - the hash map: put/get/delete, replacement, borrowed and
 * copied keys, growth and shrinking across many keys, iteration, and the
 * FNV-1a reference values. */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "base/hmap.h"

TEST(fnv1a_reference_values)
{
	/* the published 64-bit FNV-1a test vectors */
	CHECK(hmap_hash("") == 0xcbf29ce484222325ULL);
	CHECK(hmap_hash("a") == 0xaf63dc4c8601ec8cULL);
	CHECK(hmap_hash("foobar") == 0x85944171f73967e8ULL);
}

TEST(put_get_delete)
{
	struct hmap m;
	int a = 1, b = 2;

	hmap_init(&m, 0);
	CHECK(hmap_get(&m, "x") == NULL);
	CHECK(hmap_delete(&m, "x") == NULL);
	CHECK(hmap_put(&m, "x", &a) == NULL);
	CHECK(hmap_put(&m, "y", &b) == NULL);
	CHECK(hmap_len(&m) == 2);
	CHECK(hmap_get(&m, "x") == &a);
	CHECK(hmap_get(&m, "y") == &b);
	CHECK(hmap_put(&m, "x", &b) == &a);  /* replaced: the old value back */
	CHECK(hmap_len(&m) == 2);
	CHECK(hmap_get(&m, "x") == &b);
	CHECK(hmap_delete(&m, "x") == &b);
	CHECK(hmap_get(&m, "x") == NULL);
	CHECK(hmap_len(&m) == 1);
	hmap_free(&m, NULL);
	CHECK(hmap_len(&m) == 0);
	CHECK(hmap_get(&m, "y") == NULL);
}

/* A value that owns its key, as the store's objects and the workqueue's
 * items do. */
struct owner {
	char key[16];
};

TEST(borrowed_key_follows_the_replacing_value)
{
	struct hmap m;
	struct owner *o1 = malloc(sizeof(*o1)), *o2 = malloc(sizeof(*o2));

	hmap_init(&m, 0);
	snprintf(o1->key, sizeof(o1->key), "node-a");
	snprintf(o2->key, sizeof(o2->key), "node-a");
	CHECK(hmap_put(&m, o1->key, o1) == NULL);
	CHECK(hmap_put(&m, o2->key, o2) == o1);
	free(o1);  /* the map must now hold o2's key, not o1's */
	CHECK(hmap_get(&m, "node-a") == o2);
	struct hmap_iter it;
	const char *k;
	hmap_iter_init(&it, &m);
	CHECK(hmap_iter_next(&it, &k, NULL) == 1);
	CHECK(k == o2->key);
	hmap_free(&m, free);
}

TEST(copied_keys)
{
	struct hmap m;
	char key[8] = "abc";
	int v = 7;

	hmap_init(&m, HMAP_COPY_KEYS);
	hmap_put(&m, key, &v);
	key[0] = 'z';  /* the caller's buffer may change */
	CHECK(hmap_get(&m, "abc") == &v);
	CHECK(hmap_get(&m, "zbc") == NULL);
	hmap_free(&m, NULL);
}

TEST(many_keys_grow_and_shrink)
{
	struct hmap m;
	char key[32];
	static int vals[20000];

	hmap_init(&m, HMAP_COPY_KEYS);
	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "ns-%d/svc-%d", i % 97, i);
		vals[i] = i;
		CHECK(hmap_put(&m, key, &vals[i]) == NULL);
	}
	CHECK(hmap_len(&m) == 20000);
	CHECK(m.nbuckets >= 20000);
	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "ns-%d/svc-%d", i % 97, i);
		int *p = hmap_get(&m, key);
		CHECK(p != NULL && *p == i);
	}
	for (int i = 0; i < 19990; i++) {
		snprintf(key, sizeof(key), "ns-%d/svc-%d", i % 97, i);
		CHECK(hmap_delete(&m, key) == &vals[i]);
	}
	CHECK(hmap_len(&m) == 10);
	CHECK(m.nbuckets <= 128);  /* memory follows the live entries */
	for (int i = 19990; i < 20000; i++) {
		snprintf(key, sizeof(key), "ns-%d/svc-%d", i % 97, i);
		CHECK(hmap_get(&m, key) == &vals[i]);
	}
	hmap_free(&m, NULL);
}

TEST(iteration_visits_each_entry_once)
{
	struct hmap m;
	struct hmap_iter it;
	static int vals[500];
	int seen[500] = { 0 }, n = 0;
	char key[16];
	void *v;

	hmap_init(&m, HMAP_COPY_KEYS);
	hmap_iter_init(&it, &m);
	CHECK(hmap_iter_next(&it, NULL, NULL) == 0);  /* empty map */
	for (int i = 0; i < 500; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		vals[i] = i;
		hmap_put(&m, key, &vals[i]);
	}
	hmap_iter_init(&it, &m);
	while (hmap_iter_next(&it, NULL, &v)) {
		seen[*(int *)v]++;
		n++;
	}
	CHECK(n == 500);
	for (int i = 0; i < 500; i++)
		CHECK(seen[i] == 1);
	hmap_free(&m, NULL);
}

TEST_MAIN()
