/* test_ratelimiter.c - exponential backoff, token bucket and max-of, on a
 * fake clock. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "kube/ratelimiter.h"

#define MS NS_PER_MS

static int64_t
fake_now(void *arg)
{
	return *(int64_t *)arg;
}

TEST(exponential_sequence_and_cap)
{
	struct ratelimiter *rl;
	static const int64_t want[] = { 5 * MS, 10 * MS, 20 * MS, 40 * MS, 80 * MS,
		100 * MS, 100 * MS };

	CHECK(ratelimiter_exponential_new(5 * MS, 100 * MS, &rl) == 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		CHECK(ratelimiter_when(rl, "default/a") == want[i]);
		CHECK(ratelimiter_num_requeues(rl, "default/a") == (int)i + 1);
	}
	/* another key has its own count */
	CHECK(ratelimiter_num_requeues(rl, "default/b") == 0);
	CHECK(ratelimiter_when(rl, "default/b") == 5 * MS);
	CHECK(ratelimiter_len(rl) == 2);
	ratelimiter_free(rl);
}

TEST(exponential_upstream_defaults)
{
	struct ratelimiter *rl;
	int64_t d = 0;

	/* 5 ms doubling: 1000 s is reached at the 19th failure (5 ms * 2^18 =
	 * 1310.72 s), and stays there */
	CHECK(ratelimiter_exponential_new(RATELIMITER_DEFAULT_BASE_NS,
	    RATELIMITER_DEFAULT_MAX_NS, &rl) == 0);
	for (int i = 0; i < 18; i++)
		d = ratelimiter_when(rl, "node-1");
	CHECK(d == 5 * MS * (1LL << 17));
	CHECK(ratelimiter_when(rl, "node-1") == 1000 * NS_PER_S);
	for (int i = 0; i < 200; i++)
		d = ratelimiter_when(rl, "node-1");
	CHECK(d == 1000 * NS_PER_S);
	CHECK(ratelimiter_num_requeues(rl, "node-1") == 219);
	ratelimiter_free(rl);

	CHECK(ratelimiter_exponential_new(RATELIMITER_SERVICE_BASE_NS,
	    RATELIMITER_SERVICE_MAX_NS, &rl) == 0);
	CHECK(ratelimiter_when(rl, "kube-system/lb") == 5 * NS_PER_S);
	CHECK(ratelimiter_when(rl, "kube-system/lb") == 10 * NS_PER_S);
	for (int i = 0; i < 4; i++)
		d = ratelimiter_when(rl, "kube-system/lb");
	CHECK(d == 160 * NS_PER_S);
	CHECK(ratelimiter_when(rl, "kube-system/lb") == 300 * NS_PER_S);
	ratelimiter_free(rl);
}

TEST(exponential_no_overflow)
{
	struct ratelimiter *rl;
	int64_t prev = 0, d;

	CHECK(ratelimiter_exponential_new(1, INT64_MAX, &rl) == 0);
	for (int i = 0; i < 200; i++) {
		d = ratelimiter_when(rl, "k");
		CHECK(d >= prev);
		prev = d;
	}
	CHECK(prev == INT64_MAX);
	ratelimiter_free(rl);
}

TEST(forget_resets_and_frees)
{
	struct ratelimiter *rl;
	char key[32];

	CHECK(ratelimiter_exponential_new(5 * MS, 1000 * NS_PER_S, &rl) == 0);
	for (int i = 0; i < 4; i++)
		ratelimiter_when(rl, "a");
	CHECK(ratelimiter_num_requeues(rl, "a") == 4);
	ratelimiter_forget(rl, "a");
	CHECK(ratelimiter_num_requeues(rl, "a") == 0);
	CHECK(ratelimiter_when(rl, "a") == 5 * MS);
	ratelimiter_forget(rl, "a");
	ratelimiter_forget(rl, "never-seen");
	CHECK(ratelimiter_len(rl) == 0);

	/* the table follows the live keys: it grows and gives everything back */
	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "ns/obj-%d", i);
		CHECK(ratelimiter_when(rl, key) == 5 * MS);
	}
	CHECK(ratelimiter_len(rl) == 5000);
	snprintf(key, sizeof(key), "ns/obj-%d", 4321);
	CHECK(ratelimiter_when(rl, key) == 10 * MS);
	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "ns/obj-%d", i);
		ratelimiter_forget(rl, key);
	}
	CHECK(ratelimiter_len(rl) == 0);
	CHECK(ratelimiter_when(rl, "ns/obj-7") == 5 * MS);
	ratelimiter_free(rl);
}

TEST(bucket_bursts_then_paces)
{
	struct ratelimiter *rl;
	int64_t now = 1000 * NS_PER_S;

	CHECK(ratelimiter_bucket_new(RATELIMITER_DEFAULT_QPS, RATELIMITER_DEFAULT_BURST,
	    &rl) == 0);
	ratelimiter_set_clock(rl, fake_now, &now);
	for (int i = 0; i < 100; i++)
		CHECK(ratelimiter_when(rl, "any") == 0);
	/* out of tokens: each try reserves the next one, 100 ms apart */
	CHECK(ratelimiter_when(rl, "a") == 100 * MS);
	CHECK(ratelimiter_when(rl, "b") == 200 * MS);
	CHECK(ratelimiter_when(rl, "c") == 300 * MS);
	/* 250 ms later 2.5 tokens came back: still 0.5 owed */
	now += 250 * MS;
	CHECK(ratelimiter_when(rl, "d") == 150 * MS);
	/* a second refills 10 */
	now += 1000 * MS;
	for (int i = 0; i < 8; i++)
		CHECK(ratelimiter_when(rl, "e") == 0);
	CHECK(ratelimiter_when(rl, "e") == 50 * MS);
	/* a long pause refills only up to the burst */
	now += 3600 * NS_PER_S;
	for (int i = 0; i < 100; i++)
		CHECK(ratelimiter_when(rl, "f") == 0);
	CHECK(ratelimiter_when(rl, "f") == 100 * MS);
	/* a clock that steps back refills nothing */
	now -= 10 * NS_PER_S;
	CHECK(ratelimiter_when(rl, "g") == 200 * MS);
	/* keys are not tracked */
	CHECK(ratelimiter_num_requeues(rl, "f") == 0);
	ratelimiter_forget(rl, "f");
	CHECK(ratelimiter_len(rl) == 0);
	ratelimiter_free(rl);
}

TEST(max_of_controller_default)
{
	struct ratelimiter *rl;
	int64_t now = 5 * NS_PER_S;
	char key[32];

	CHECK(ratelimiter_controller_new(RATELIMITER_DEFAULT_BASE_NS,
	    RATELIMITER_DEFAULT_MAX_NS, &rl) == 0);
	ratelimiter_set_clock(rl, fake_now, &now);
	/* a burst of 100 first failures: the per-key 5 ms wins */
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "node-%d", i);
		CHECK(ratelimiter_when(rl, key) == 5 * MS);
	}
	/* the 101st: the overall bucket wins */
	CHECK(ratelimiter_when(rl, "node-100") == 100 * MS);
	/* later, a key failing again and again: its own backoff wins */
	now += 3600 * NS_PER_S;
	for (int i = 0; i < 9; i++)
		ratelimiter_when(rl, "node-7");
	CHECK(ratelimiter_when(rl, "node-7") == 5 * MS * 1024);
	CHECK(ratelimiter_num_requeues(rl, "node-7") == 11);
	ratelimiter_forget(rl, "node-7");
	CHECK(ratelimiter_num_requeues(rl, "node-7") == 0);
	CHECK(ratelimiter_len(rl) == 100);
	ratelimiter_free(rl);
}

TEST(max_of_takes_the_longest)
{
	struct ratelimiter *parts[3], *rl;

	CHECK(ratelimiter_exponential_new(1 * MS, 1000 * MS, &parts[0]) == 0);
	CHECK(ratelimiter_exponential_new(3 * MS, 6 * MS, &parts[1]) == 0);
	CHECK(ratelimiter_exponential_new(2 * MS, 4 * MS, &parts[2]) == 0);
	CHECK(ratelimiter_max_of_new(parts, 3, &rl) == 0);
	CHECK(ratelimiter_when(rl, "k") == 3 * MS);   /* 1, 3, 2 */
	CHECK(ratelimiter_when(rl, "k") == 6 * MS);   /* 2, 6, 4 */
	CHECK(ratelimiter_when(rl, "k") == 6 * MS);   /* 4, 6, 4 */
	CHECK(ratelimiter_when(rl, "k") == 8 * MS);   /* 8, 6, 4 */
	CHECK(ratelimiter_num_requeues(rl, "k") == 4);
	CHECK(ratelimiter_len(rl) == 3);
	ratelimiter_forget(rl, "k");
	CHECK(ratelimiter_len(rl) == 0);
	CHECK(ratelimiter_when(rl, "k") == 3 * MS);
	ratelimiter_free(rl);
}

TEST(invalid_arguments)
{
	struct ratelimiter *rl = NULL, *parts[2];

	CHECK(ratelimiter_exponential_new(0, 10, &rl) == ERR_INVALID);
	CHECK(ratelimiter_exponential_new(10, 5, &rl) == ERR_INVALID);
	CHECK(ratelimiter_bucket_new(0, 10, &rl) == ERR_INVALID);
	CHECK(ratelimiter_bucket_new(-1, 10, &rl) == ERR_INVALID);
	CHECK(ratelimiter_bucket_new(10, 0, &rl) == ERR_INVALID);
	CHECK(ratelimiter_max_of_new(parts, 0, &rl) == ERR_INVALID);
	CHECK(rl == NULL);
	/* a NULL member: the others are still freed (ASan checks the leak) */
	CHECK(ratelimiter_exponential_new(1, 2, &parts[0]) == 0);
	parts[1] = NULL;
	CHECK(ratelimiter_max_of_new(parts, 2, &rl) == ERR_INVALID);
	CHECK(rl == NULL);
	ratelimiter_free(NULL);
}

struct hammer {
	struct ratelimiter *rl;
	unsigned seed;
	int bad;
};

static void *
hammer_run(void *arg)
{
	struct hammer *h = arg;
	char key[16];

	for (int i = 0; i < 20000; i++) {
		unsigned r = rand_r(&h->seed);
		snprintf(key, sizeof(key), "k%u", r % 64);
		if (r % 5 == 0) {
			ratelimiter_forget(h->rl, key);
		} else {
			int64_t d = ratelimiter_when(h->rl, key);
			if (d < MS || d > 50 * MS)
				h->bad++;
			if (ratelimiter_num_requeues(h->rl, key) < 0)
				h->bad++;
		}
	}
	return NULL;
}

TEST(concurrent_use)
{
	struct ratelimiter *parts[2], *rl;
	struct hammer h[4];
	pthread_t t[4];
	char key[16];

	/* a bucket fast enough that the per-key backoff always wins, so every
	 * answer must lie within its bounds */
	CHECK(ratelimiter_exponential_new(MS, 50 * MS, &parts[0]) == 0);
	CHECK(ratelimiter_bucket_new(1e9, 1, &parts[1]) == 0);
	CHECK(ratelimiter_max_of_new(parts, 2, &rl) == 0);
	for (int i = 0; i < 4; i++) {
		h[i] = (struct hammer){ rl, (unsigned)i * 7919u + 1, 0 };
		CHECK(pthread_create(&t[i], NULL, hammer_run, &h[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CHECK(h[i].bad == 0);
	}
	CHECK(ratelimiter_len(rl) <= 64);
	for (int i = 0; i < 64; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		ratelimiter_forget(rl, key);
	}
	CHECK(ratelimiter_len(rl) == 0);
	ratelimiter_free(rl);
}

TEST_MAIN()
