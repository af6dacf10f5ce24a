/* test_workqueue.c - dedup, held keys, delays, rate limits, shutdown, metrics,
 * and an 8-worker stress run that checks no key is ever held twice. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "kube/workqueue.h"
#include "base/metrics.h"

#define MS NS_PER_MS

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

static struct wq *
new_queue(const char *name, struct ratelimiter *rl)
{
	struct wq *q = NULL;

	if (wq_new(name, rl, &q) != 0)
		abort();
	return q;
}

static struct ratelimiter *
exponential(int64_t base, int64_t max)
{
	struct ratelimiter *rl = NULL;

	if (ratelimiter_exponential_new(base, max, &rl) != 0)
		abort();
	return rl;
}

/* metric_text returns the value of one rendered series, e.g.
 * "workqueue_depth{name=\"q\"}", or -1 when it is absent. */
static double
metric_text(const char *series)
{
	char *out, *p, *end;
	size_t len, n = strlen(series);
	double v = -1;

	if (metrics_render(&out, &len) != 0)
		return -1;
	for (p = out; (p = strstr(p, series)) != NULL; p += n)
		if ((p == out || p[-1] == '\n') && p[n] == ' ') {
			v = strtod(p + n + 1, &end);
			break;
		}
	free(out);
	return v;
}

TEST(dedup_and_fifo_order)
{
	struct wq *q = new_queue("t_dedup", NULL);
	const char *k;

	CHECK(wq_add(q, "ns/c") == 0);
	CHECK(wq_add(q, "ns/a") == 0);
	CHECK(wq_add(q, "ns/c") == 0);
	CHECK(wq_add(q, "b") == 0);
	CHECK(wq_add(q, "ns/a") == 0);
	CHECK(wq_len(q) == 3);
	CHECK(wq_get(q, &k) == 1);
	CHECK_STR(k, "ns/c");
	CHECK(wq_done(q, k) == 0);
	CHECK(wq_get(q, &k) == 1);
	CHECK_STR(k, "ns/a");
	CHECK(wq_done(q, k) == 0);
	CHECK(wq_get(q, &k) == 1);
	CHECK_STR(k, "b");
	CHECK(wq_done(q, "b") == 0);
	CHECK(wq_len(q) == 0);
	wq_free(q);
}

TEST(readd_while_held_requeues_once_after_done)
{
	struct wq *q = new_queue("t_readd", NULL);
	const char *k, *k2;

	CHECK(wq_add(q, "ns/a") == 0);
	CHECK(wq_get(q, &k) == 1);
	CHECK_STR(k, "ns/a");
	/* held: re-adds are remembered, not queued for another worker */
	CHECK(wq_add(q, "ns/a") == 0);
	CHECK(wq_add(q, "ns/a") == 0);
	CHECK(wq_add(q, "ns/a") == 0);
	CHECK(wq_len(q) == 0);
	CHECK(wq_add(q, "ns/b") == 0);
	CHECK(wq_get(q, &k2) == 1);
	CHECK_STR(k2, "ns/b");
	CHECK(wq_done(q, k2) == 0);
	CHECK(wq_len(q) == 0);
	CHECK(wq_done(q, k) == 0);
	CHECK(wq_len(q) == 1);
	CHECK(wq_get(q, &k) == 1);
	CHECK_STR(k, "ns/a");
	CHECK(wq_done(q, k) == 0);
	CHECK(wq_len(q) == 0);
	/* done twice, or on a key never got, is refused */
	CHECK(wq_done(q, "ns/a") == ERR_NOT_FOUND);
	CHECK(wq_done(q, "ns/zzz") == ERR_NOT_FOUND);
	CHECK(wq_add(q, "ns/q") == 0);
	CHECK(wq_done(q, "ns/q") == ERR_NOT_FOUND); /* queued, not held */
	CHECK(wq_len(q) == 1);
	wq_free(q);
}

TEST(key_limits)
{
	struct wq *q = new_queue("t_keys", NULL);
	char *big = malloc(WQ_KEY_MAX + 2);
	const char *k;

	CHECK(big != NULL);
	memset(big, 'x', WQ_KEY_MAX + 1);
	big[WQ_KEY_MAX + 1] = '\0';
	CHECK(wq_add(q, "") == ERR_INVALID);
	CHECK(wq_add(q, NULL) == ERR_INVALID);
	CHECK(wq_add(q, big) == ERR_TOO_LARGE);
	CHECK(wq_add_after(q, big, MS) == ERR_TOO_LARGE);
	CHECK(wq_add_rate_limited(q, big) == ERR_TOO_LARGE);
	CHECK(wq_num_requeues(q, big) == 0);
	CHECK(wq_len(q) == 0);
	big[WQ_KEY_MAX] = '\0';
	CHECK(wq_add(q, big) == 0);
	CHECK(wq_get(q, &k) == 1);
	CHECK(strlen(k) == WQ_KEY_MAX);
	CHECK(wq_done(q, k) == 0);
	free(big);

	struct wq *bad = NULL;
	CHECK(wq_new("", NULL, &bad) == ERR_INVALID);
	CHECK(wq_new(NULL, NULL, &bad) == ERR_INVALID);
	CHECK(bad == NULL);
	wq_free(q);
}

TEST(add_after_orders_by_time)
{
	struct wq *q = new_queue("t_after", NULL);
	const char *k;
	int64_t t0 = now_ns(), t;

	CHECK(wq_add_after(q, "a", 60 * MS) == 0);
	CHECK(wq_add_after(q, "b", 20 * MS) == 0);
	CHECK(wq_add_after(q, "c", 40 * MS) == 0);
	CHECK(wq_len(q) == 0);
	CHECK(wq_get(q, &k) == 1);
	t = now_ns() - t0;
	CHECK_STR(k, "b");
	CHECK(t >= 20 * MS);
	CHECK(wq_done(q, k) == 0);
	CHECK(wq_get(q, &k) == 1);
	CHECK_STR(k, "c");
	CHECK(now_ns() - t0 >= 40 * MS);
	CHECK(wq_done(q, k) == 0);
	CHECK(wq_get(q, &k) == 1);
	CHECK_STR(k, "a");
	CHECK(now_ns() - t0 >= 60 * MS);
	CHECK(wq_done(q, k) == 0);
	/* no delay, or a negative one: queued at once */
	CHECK(wq_add_after(q, "now", 0) == 0);
	CHECK(wq_add_after(q, "past", -5 * MS) == 0);
	CHECK(wq_len(q) == 2);
	wq_free(q);
}

/* Delays near the 64-bit maximum wait forever instead of wrapping into the
 * past (UBSan: no overflow); a sooner add still wins, and a shutdown with
 * a drain timeout of INT64_MAX returns once nothing is held. */
TEST(add_after_the_extremes)
{
	struct wq *q = new_queue("t_after_max", NULL);
	const char *k;

	CHECK(wq_add_after(q, "max", INT64_MAX) == 0);
	CHECK(wq_add_after(q, "near", INT64_MAX - 1) == 0);
	CHECK(wq_add_after(q, "big", 7686143364045646500LL) == 0);
	CHECK(wq_add_after(q, "min", INT64_MIN) == 0);      /* the past: at once */
	CHECK(wq_len(q) == 1);
	CHECK(wq_get(q, &k) == 1);
	CHECK_STR(k, "min");
	CHECK(wq_done(q, k) == 0);
	usleep(20000);
	CHECK(wq_len(q) == 0);                              /* the others still wait */
	CHECK(wq_add_after(q, "near", 1 * MS) == 0);        /* sooner wins */
	CHECK(wq_get(q, &k) == 1);
	CHECK_STR(k, "near");
	CHECK(wq_done(q, k) == 0);
	CHECK(wq_len(q) == 0);
	CHECK(wq_shutdown_with_drain(q, INT64_MAX) == 0);
	wq_free(q);
}

TEST(add_after_sooner_wins)
{
	struct wq *q = new_queue("t_sooner", NULL);
	const char *k;
	int64_t t0 = now_ns(), t;

	/* a later time does not replace an earlier one ... */
	CHECK(wq_add_after(q, "x", 20 * MS) == 0);
	CHECK(wq_add_after(q, "x", 300 * MS) == 0);
	CHECK(wq_get(q, &k) == 1);
	t = now_ns() - t0;
	CHECK_STR(k, "x");
	CHECK(t >= 20 * MS && t < 300 * MS);
	CHECK(wq_done(q, k) == 0);
	/* ... and an earlier one replaces a later one */
	t0 = now_ns();
	CHECK(wq_add_after(q, "y", 400 * MS) == 0);
	CHECK(wq_add_after(q, "y", 20 * MS) == 0);
	CHECK(wq_get(q, &k) == 1);
	t = now_ns() - t0;
	CHECK_STR(k, "y");
	CHECK(t >= 20 * MS && t < 400 * MS);
	CHECK(wq_done(q, k) == 0);
	/* neither key comes back at the later time: there was one entry each */
	sleep_ms(330);
	CHECK(wq_len(q) == 0);
	/* a waiting key that is added directly is queued now, and again when
	 * due (client-go keeps the two apart) */
	CHECK(wq_add_after(q, "z", 30 * MS) == 0);
	CHECK(wq_add(q, "z") == 0);
	CHECK(wq_get(q, &k) == 1);
	CHECK_STR(k, "z");
	CHECK(wq_done(q, k) == 0);
	CHECK(wq_get(q, &k) == 1);
	CHECK_STR(k, "z");
	CHECK(wq_done(q, k) == 0);
	wq_free(q);
}

TEST(rate_limited_backoff_sequence)
{
	static const int64_t want[] = { 5 * MS, 10 * MS, 20 * MS, 20 * MS, 20 * MS,
		20 * MS, 20 * MS, 20 * MS };
	struct wq *q = new_queue("t_backoff", exponential(5 * MS, 20 * MS));
	const char *k;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		int64_t t0 = now_ns(), t;
		CHECK(wq_add_rate_limited(q, "ns/svc") == 0);
		CHECK(wq_get(q, &k) == 1);
		t = now_ns() - t0;
		CHECK_STR(k, "ns/svc");
		CHECK(t >= want[i]);
		/* uncapped, the 8th wait would be 640 ms */
		CHECK(t < want[i] + 400 * MS);
		CHECK(wq_num_requeues(q, k) == (int)i + 1);
		CHECK(wq_done(q, k) == 0);
	}
	wq_free(q);
}

TEST(forget_resets_backoff)
{
	struct wq *q = new_queue("t_forget", exponential(5 * MS, 10 * NS_PER_S));
	const char *k;
	int64_t t0, t, wait = 5 * MS;

	for (int i = 0; i < 6; i++, wait *= 2) {
		t0 = now_ns();
		CHECK(wq_add_rate_limited(q, "n1") == 0);
		CHECK(wq_get(q, &k) == 1);
		CHECK(now_ns() - t0 >= wait);
		/* the failure stays counted across the worker's wq_done */
		CHECK(wq_done(q, k) == 0);
	}
	CHECK(wq_num_requeues(q, "n1") == 6);
	/* without the forget the next wait would be 320 ms */
	wq_forget(q, "n1");
	CHECK(wq_num_requeues(q, "n1") == 0);
	t0 = now_ns();
	CHECK(wq_add_rate_limited(q, "n1") == 0);
	CHECK(wq_get(q, &k) == 1);
	t = now_ns() - t0;
	CHECK(t >= 5 * MS && t < 300 * MS);
	CHECK(wq_num_requeues(q, k) == 1);
	CHECK(wq_done(q, k) == 0);
	wq_free(q);
}

/* wq_retry_now: keys sitting out a long backoff are handed out at once,
 * their failure count is gone, and a key held meanwhile is left alone. */
TEST(retry_now_ends_backoffs)
{
	struct wq *q = new_queue("t_retry_now", exponential(20 * NS_PER_S, 60 * NS_PER_S));
	const char *k, *held;
	int64_t t0;
	int seen_a = 0, seen_b = 0;

	CHECK(wq_retry_now(q) == 0);
	CHECK(wq_add_rate_limited(q, "a") == 0);
	CHECK(wq_add_rate_limited(q, "b") == 0);
	CHECK(wq_add(q, "h") == 0);
	CHECK(wq_get(q, &held) == 1);
	CHECK(strcmp(held, "h") == 0);
	CHECK(wq_num_requeues(q, "a") == 1);
	CHECK(wq_len(q) == 0);
	t0 = now_ns();
	CHECK(wq_retry_now(q) == 2);
	CHECK(wq_num_requeues(q, "a") == 0);
	CHECK(wq_num_requeues(q, "b") == 0);
	for (int i = 0; i < 2; i++) {
		CHECK(wq_get(q, &k) == 1);
		seen_a += strcmp(k, "a") == 0;
		seen_b += strcmp(k, "b") == 0;
		CHECK(wq_done(q, k) == 0);
	}
	CHECK(seen_a == 1 && seen_b == 1);
	/* not the 20 s backoff */
	CHECK(now_ns() - t0 < 5 * NS_PER_S);
	CHECK(wq_done(q, held) == 0);
	CHECK(wq_len(q) == 0);
	/* a failure after it starts from the first delay again */
	CHECK(wq_add_rate_limited(q, "a") == 0);
	CHECK(wq_num_requeues(q, "a") == 1);
	wq_shutdown(q);
	CHECK(wq_retry_now(q) == 0);
	wq_free(q);
}

TEST(overall_bucket_limits_bursts)
{
	struct ratelimiter *rl = NULL;
	struct wq *q;
	const char *k;
	char key[8];
	int64_t t0;

	CHECK(ratelimiter_bucket_new(50, 3, &rl) == 0);
	q = new_queue("t_bucket", rl);
	t0 = now_ns();
	for (int i = 0; i < 6; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK(wq_add_rate_limited(q, key) == 0);
	}
	/* the burst is there at once, the rest come 20 ms apart */
	CHECK(wq_len(q) == 3);
	for (int i = 0; i < 6; i++) {
		CHECK(wq_get(q, &k) == 1);
		snprintf(key, sizeof(key), "k%d", i);
		CHECK_STR(k, key);
		if (i >= 3)
			CHECK(now_ns() - t0 >= (i - 2) * 20 * MS);
		CHECK(wq_done(q, k) == 0);
	}
	wq_free(q);
}

TEST(default_limiter)
{
	struct wq *q = new_queue("t_default", NULL);
	const char *k;
	int64_t t0 = now_ns();

	CHECK(wq_add_rate_limited(q, "node-1") == 0);
	CHECK(wq_add_rate_limited(q, "node-1") == 0);
	CHECK(wq_num_requeues(q, "node-1") == 2);
	/* the sooner of 5 ms and 10 ms */
	CHECK(wq_get(q, &k) == 1);
	CHECK(now_ns() - t0 >= 5 * MS);
	CHECK(wq_done(q, k) == 0);
	wq_free(q);
}

struct getter {
	struct wq *q;
	int got;
	atomic_int returned;
};

static void *
getter_run(void *arg)
{
	struct getter *g = arg;
	const char *k;

	g->got = wq_get(g->q, &k);
	atomic_store(&g->returned, 1);
	return NULL;
}

TEST(shutdown_wakes_blocked_getters)
{
	struct wq *q = new_queue("t_shutdown", NULL);
	struct getter g[4];
	pthread_t t[4];
	const char *k;

	for (int i = 0; i < 4; i++) {
		g[i].q = q;
		g[i].got = -1;
		atomic_init(&g[i].returned, 0);
		CHECK(pthread_create(&t[i], NULL, getter_run, &g[i]) == 0);
	}
	sleep_ms(30);
	for (int i = 0; i < 4; i++)
		CHECK(atomic_load(&g[i].returned) == 0);
	CHECK(wq_shutting_down(q) == 0);
	wq_shutdown(q);
	CHECK(wq_shutting_down(q) == 1);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CHECK(g[i].got == 0);
	}
	/* adds are ignored, gets return at once */
	CHECK(wq_add(q, "late") == 0);
	CHECK(wq_add_after(q, "later", MS) == 0);
	CHECK(wq_len(q) == 0);
	CHECK(wq_get(q, &k) == 0);
	wq_shutdown(q);
	wq_free(q);
}

TEST(shutdown_drops_queued_and_delayed)
{
	struct wq *q = new_queue("t_drop", NULL);
	const char *k, *held;

	CHECK(wq_add(q, "held") == 0);
	CHECK(wq_get(q, &held) == 1);
	CHECK(wq_add(q, "held") == 0);
	CHECK(wq_add(q, "a") == 0);
	CHECK(wq_add(q, "b") == 0);
	CHECK(wq_add_after(q, "c", 10 * MS) == 0);
	CHECK(metric_text("workqueue_depth{name=\"t_drop\"}") == 3);
	wq_shutdown(q);
	CHECK(wq_len(q) == 0);
	CHECK(wq_get(q, &k) == 0);
	CHECK(metric_text("workqueue_depth{name=\"t_drop\"}") == 0);
	/* the held key stays valid until its done, and is not queued again */
	CHECK_STR(held, "held");
	CHECK(wq_done(q, held) == 0);
	sleep_ms(30);
	CHECK(wq_len(q) == 0);
	CHECK(wq_get(q, &k) == 0);
	wq_free(q);
}

struct drainer {
	struct wq *q;
	atomic_int holding;     /* a worker holds "a" */
	atomic_int release;     /* let it go */
	atomic_int processed[3];
};

static void *
drain_worker(void *arg)
{
	struct drainer *d = arg;
	const char *k;

	while (wq_get(d->q, &k) > 0) {
		int i = k[0] - 'a';
		if (i == 0) {
			atomic_store(&d->holding, 1);
			while (!atomic_load(&d->release))
				sleep_ms(1);
		} else {
			sleep_ms(5);
		}
		atomic_fetch_add(&d->processed[i], 1);
		wq_done(d->q, k);
	}
	return NULL;
}

static void *
drain_release_later(void *arg)
{
	struct drainer *d = arg;

	sleep_ms(50);
	atomic_store(&d->release, 1);
	return NULL;
}

static int
drain_wait_holding(struct drainer *d)
{
	for (int i = 0; i < 5000 && !atomic_load(&d->holding); i++)
		sleep_ms(1);
	return atomic_load(&d->holding);
}

TEST(shutdown_with_drain_waits_for_held_keys)
{
	struct drainer d = { .q = new_queue("t_drain", NULL) };
	pthread_t t[2], rel;
	const char *k;
	int64_t t0;

	CHECK(wq_add(d.q, "a") == 0);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, drain_worker, &d) == 0);
	CHECK(drain_wait_holding(&d));
	/* re-added while held, queued, and delayed (which the drain drops) */
	CHECK(wq_add(d.q, "a") == 0);
	CHECK(wq_add(d.q, "b") == 0);
	CHECK(wq_add(d.q, "c") == 0);
	CHECK(wq_add_after(d.q, "b", 10 * NS_PER_S) == 0);
	CHECK(wq_add_after(d.q, "c", 10 * NS_PER_S) == 0);
	t0 = now_ns();
	CHECK(pthread_create(&rel, NULL, drain_release_later, &d) == 0);
	CHECK(wq_shutdown_with_drain(d.q, 0) == 0);
	/* it returned only after the held key was done and done again */
	CHECK(now_ns() - t0 >= 50 * MS);
	CHECK(atomic_load(&d.processed[0]) == 2);
	CHECK(atomic_load(&d.processed[1]) == 1);
	CHECK(atomic_load(&d.processed[2]) == 1);
	CHECK(wq_len(d.q) == 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_join(rel, NULL);
	CHECK(wq_get(d.q, &k) == 0);
	wq_free(d.q);
}

TEST(shutdown_with_drain_timeout)
{
	struct drainer d = { .q = new_queue("t_drain_timeout", NULL) };
	pthread_t t;
	int64_t t0;

	CHECK(wq_add(d.q, "a") == 0);
	CHECK(wq_add(d.q, "b") == 0);
	CHECK(pthread_create(&t, NULL, drain_worker, &d) == 0);
	CHECK(drain_wait_holding(&d));
	t0 = now_ns();
	CHECK(wq_shutdown_with_drain(d.q, 30 * MS) == ERR_TIMEOUT);
	CHECK(now_ns() - t0 >= 30 * MS);
	/* out of time: what was still queued is dropped */
	CHECK(wq_len(d.q) == 0);
	atomic_store(&d.release, 1);
	pthread_join(t, NULL);
	CHECK(atomic_load(&d.processed[0]) == 1);
	CHECK(atomic_load(&d.processed[1]) == 0);
	/* nothing left: a second drain returns at once */
	CHECK(wq_shutdown_with_drain(d.q, 0) == 0);
	wq_free(d.q);
}

TEST(metrics_after_known_sequence)
{
	struct wq *q = new_queue("t_metrics", NULL);
	const char *k;
	char *out;
	size_t len;

#define SERIES(m) m "{name=\"t_metrics\"}"
	CHECK(metric_text(SERIES("workqueue_adds_total")) == 0);
	CHECK(metric_text(SERIES("workqueue_depth")) == 0);
	CHECK(metric_text(SERIES("workqueue_retries_total")) == 0);
	CHECK(wq_add(q, "a") == 0);
	CHECK(wq_add(q, "b") == 0);
	CHECK(wq_add(q, "a") == 0);
	CHECK(metric_text(SERIES("workqueue_adds_total")) == 2);
	CHECK(metric_text(SERIES("workqueue_depth")) == 2);

	sleep_ms(10);
	CHECK(wq_get(q, &k) == 1);
	CHECK_STR(k, "a");
	CHECK(metric_text(SERIES("workqueue_depth")) == 1);
	CHECK(metric_text(SERIES("workqueue_queue_duration_seconds_count")) == 1);
	CHECK(metric_text(SERIES("workqueue_queue_duration_seconds_sum")) >= 0.010);
	CHECK(metric_text(SERIES("workqueue_queue_duration_seconds_sum")) < 5);
	sleep_ms(20);
	CHECK(wq_done(q, k) == 0);
	CHECK(metric_text(SERIES("workqueue_work_duration_seconds_count")) == 1);
	CHECK(metric_text(SERIES("workqueue_work_duration_seconds_sum")) >= 0.020);
	CHECK(metric_text(SERIES("workqueue_work_duration_seconds_sum")) < 5);
	CHECK(metric_text("workqueue_work_duration_seconds_bucket{name=\"t_metrics\",le=\"0.01\"}") == 0);
	CHECK(metric_text("workqueue_work_duration_seconds_bucket{name=\"t_metrics\",le=\"10\"}") == 1);
	CHECK(metric_text(SERIES("workqueue_unfinished_work_seconds")) == 0);
	CHECK(metric_text(SERIES("workqueue_longest_running_processor_seconds")) == 0);

	/* a held key: the in-progress gauges tick while it runs */
	CHECK(wq_get(q, &k) == 1);
	CHECK_STR(k, "b");
	CHECK(metric_text(SERIES("workqueue_depth")) == 0);
	for (int i = 0; i < 300 &&
	    metric_text(SERIES("workqueue_longest_running_processor_seconds")) < 0.4; i++)
		sleep_ms(10);
	CHECK(metric_text(SERIES("workqueue_longest_running_processor_seconds")) >= 0.4);
	CHECK(metric_text(SERIES("workqueue_unfinished_work_seconds")) >= 0.4);
	/* a re-add while held counts in the depth, as in client-go */
	CHECK(wq_add(q, "b") == 0);
	CHECK(metric_text(SERIES("workqueue_depth")) == 1);
	CHECK(wq_len(q) == 0);
	CHECK(wq_done(q, k) == 0);
	CHECK(metric_text(SERIES("workqueue_unfinished_work_seconds")) == 0);
	CHECK(metric_text(SERIES("workqueue_longest_running_processor_seconds")) == 0);
	CHECK(wq_get(q, &k) == 1);
	CHECK_STR(k, "b");
	CHECK(wq_done(q, k) == 0);
	CHECK(metric_text(SERIES("workqueue_adds_total")) == 3);

	/* every delayed add is a retry; it is an add when it comes due */
	CHECK(wq_add_after(q, "c", MS) == 0);
	CHECK(wq_add_rate_limited(q, "d") == 0);
	CHECK(wq_add_after(q, "e", 0) == 0);
	CHECK(metric_text(SERIES("workqueue_retries_total")) == 3);
	for (int i = 0; i < 3; i++) {
		CHECK(wq_get(q, &k) == 1);
		CHECK(wq_done(q, k) == 0);
	}
	CHECK(metric_text(SERIES("workqueue_adds_total")) == 6);
	CHECK(metric_text(SERIES("workqueue_queue_duration_seconds_count")) == 6);
	CHECK(metric_text(SERIES("workqueue_work_duration_seconds_count")) == 6);
	CHECK(metric_text(SERIES("workqueue_depth")) == 0);

	CHECK(metrics_render(&out, &len) == 0);
	CHECK_CONTAINS(out, "# HELP workqueue_depth Current depth of workqueue\n"
	    "# TYPE workqueue_depth gauge\n");
	CHECK_CONTAINS(out, "# TYPE workqueue_adds_total counter\n");
	CHECK_CONTAINS(out, "# TYPE workqueue_retries_total counter\n");
	CHECK_CONTAINS(out, "# TYPE workqueue_queue_duration_seconds histogram\n");
	CHECK_CONTAINS(out, "# TYPE workqueue_work_duration_seconds histogram\n");
	CHECK_CONTAINS(out, "# TYPE workqueue_unfinished_work_seconds gauge\n");
	CHECK_CONTAINS(out, "# TYPE workqueue_longest_running_processor_seconds gauge\n");
	CHECK_CONTAINS(out, "workqueue_queue_duration_seconds_bucket{name=\"t_metrics\",le=\"1e-08\"} ");
	CHECK_CONTAINS(out, "workqueue_queue_duration_seconds_bucket{name=\"t_metrics\",le=\"+Inf\"} 6\n");
	/* one registration shared by all queues */
	{
		int n = 0;
		for (const char *p = out; (p = strstr(p, "# TYPE workqueue_depth ")) != NULL; p++)
			n++;
		CHECK(n == 1);
	}
	free(out);
#undef SERIES
	wq_free(q);
}

TEST(memory_follows_live_keys)
{
	struct ratelimiter *rl = exponential(1, 2);
	struct wq *q = new_queue("t_memory", rl);
	const char *k;
	char key[32];

	/* 6000 distinct keys through the queue and the limiter; every entry
	 * is gone once done and forgotten (ASan reports anything left over) */
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 2000; i++) {
			snprintf(key, sizeof(key), "ns/obj-%d-%d", round, i);
			CHECK(wq_add(q, key) == 0);
		}
		CHECK(wq_len(q) == 2000);
		for (int i = 0; i < 2000; i++) {
			CHECK(wq_get(q, &k) == 1);
			CHECK(wq_add_rate_limited(q, k) == 0);
			CHECK(wq_done(q, k) == 0);
		}
		CHECK(ratelimiter_len(rl) == 2000);
		for (int i = 0; i < 2000; i++) {
			CHECK(wq_get(q, &k) == 1);
			wq_forget(q, k);
			CHECK(wq_done(q, k) == 0);
		}
		CHECK(ratelimiter_len(rl) == 0);
		CHECK(wq_len(q) == 0);
	}
	wq_free(q);
}

/* --- stress: 8 workers, 100k adds over 50 keys ---------------------------- */

#define STRESS_KEYS 50
#define STRESS_ADDS 100000
#define STRESS_WORKERS 8
#define STRESS_PRODUCERS 2

struct stress {
	struct wq *q;
	char keys[STRESS_KEYS][16];
	atomic_int held[STRESS_KEYS];     /* a worker holds the key */
	atomic_int pending[STRESS_KEYS];  /* added since its last get */
	atomic_long gets;
	atomic_int twice;                 /* a key held by two workers */
	atomic_int bad_key;
	int delayed;                      /* producers use delayed adds too */
};

struct stress_producer {
	struct stress *s;
	unsigned seed;
	int adds;
};

static int
stress_index(const char *k)
{
	/* keys are "ns/kNN" */
	if (strncmp(k, "ns/k", 4) != 0 || k[4] < '0' || k[4] > '9' ||
	    k[5] < '0' || k[5] > '9' || k[6] != '\0')
		return -1;
	return (k[4] - '0') * 10 + (k[5] - '0');
}

static void *
stress_worker(void *arg)
{
	struct stress *s = arg;
	const char *k;

	while (wq_get(s->q, &k) > 0) {
		int i = stress_index(k);
		if (i < 0 || i >= STRESS_KEYS) {
			atomic_fetch_add(&s->bad_key, 1);
			wq_done(s->q, k);
			continue;
		}
		if (atomic_exchange(&s->held[i], 1) != 0)
			atomic_fetch_add(&s->twice, 1);
		atomic_store(&s->pending[i], 0);
		/* stay a little while now and then, so re-adds land on held keys */
		if ((atomic_fetch_add(&s->gets, 1) & 7) == 0)
			sched_yield();
		if (s->delayed && (atomic_load(&s->gets) % 13) == 0)
			wq_add_rate_limited(s->q, k);
		else if (s->delayed)
			wq_forget(s->q, k);
		atomic_store(&s->held[i], 0);
		wq_done(s->q, k);
	}
	return NULL;
}

static void *
stress_producer(void *arg)
{
	struct stress_producer *p = arg;
	struct stress *s = p->s;

	for (int n = 0; n < p->adds; n++) {
		unsigned r = rand_r(&p->seed);
		int i = (int)(r % STRESS_KEYS);
		if (s->delayed && (r >> 8) % 4 == 0) {
			wq_add_after(s->q, s->keys[i], (int64_t)((r >> 12) % 2000) * 1000);
			continue;
		}
		atomic_store(&s->pending[i], 1);
		wq_add(s->q, s->keys[i]);
		/* let the workers keep up, or nearly every add is a duplicate
		 * and few land on held keys */
		if ((n & 63) == 0)
			sched_yield();
	}
	return NULL;
}

static void
stress_setup(struct stress *s, const char *name, struct ratelimiter *rl)
{
	memset(s, 0, sizeof(*s));
	s->q = new_queue(name, rl);
	for (int i = 0; i < STRESS_KEYS; i++) {
		snprintf(s->keys[i], sizeof(s->keys[i]), "ns/k%02d", i);
		atomic_init(&s->held[i], 0);
		atomic_init(&s->pending[i], 0);
	}
	atomic_init(&s->gets, 0);
	atomic_init(&s->twice, 0);
	atomic_init(&s->bad_key, 0);
}

TEST(stress_never_two_workers_on_one_key)
{
	static struct stress s;
	struct stress_producer p[STRESS_PRODUCERS];
	pthread_t w[STRESS_WORKERS], pt[STRESS_PRODUCERS];
	int64_t t0 = now_ns();

	stress_setup(&s, "t_stress", NULL);
	for (int i = 0; i < STRESS_WORKERS; i++)
		CHECK(pthread_create(&w[i], NULL, stress_worker, &s) == 0);
	for (int i = 0; i < STRESS_PRODUCERS; i++) {
		p[i] = (struct stress_producer){ &s, 12345u * (unsigned)(i + 1),
			STRESS_ADDS / STRESS_PRODUCERS };
		CHECK(pthread_create(&pt[i], NULL, stress_producer, &p[i]) == 0);
	}
	for (int i = 0; i < STRESS_PRODUCERS; i++)
		pthread_join(pt[i], NULL);
	CHECK(wq_shutdown_with_drain(s.q, 0) == 0);
	for (int i = 0; i < STRESS_WORKERS; i++)
		pthread_join(w[i], NULL);
	CHECK(atomic_load(&s.twice) == 0);
	CHECK(atomic_load(&s.bad_key) == 0);
	/* every add was followed by a get of its key */
	for (int i = 0; i < STRESS_KEYS; i++)
		CHECK(atomic_load(&s.pending[i]) == 0);
	CHECK(atomic_load(&s.gets) >= STRESS_KEYS);
	CHECK(atomic_load(&s.gets) <= STRESS_ADDS);
	CHECK(metric_text("workqueue_adds_total{name=\"t_stress\"}") == atomic_load(&s.gets));
	CHECK(metric_text("workqueue_depth{name=\"t_stress\"}") == 0);
	fprintf(stderr, "  stress: %d adds, %ld gets, %.0f ms\n", STRESS_ADDS,
	    (long)atomic_load(&s.gets), (double)(now_ns() - t0) / 1e6);
	wq_free(s.q);
}

TEST(stress_with_delays_and_rate_limits)
{
	static struct stress s;
	struct stress_producer p[STRESS_PRODUCERS];
	pthread_t w[4], pt[STRESS_PRODUCERS];

	stress_setup(&s, "t_stress_delayed", exponential(1000, 2 * MS));
	s.delayed = 1;
	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&w[i], NULL, stress_worker, &s) == 0);
	for (int i = 0; i < STRESS_PRODUCERS; i++) {
		p[i] = (struct stress_producer){ &s, 777u * (unsigned)(i + 3), 10000 };
		CHECK(pthread_create(&pt[i], NULL, stress_producer, &p[i]) == 0);
	}
	for (int i = 0; i < STRESS_PRODUCERS; i++)
		pthread_join(pt[i], NULL);
	CHECK(wq_shutdown_with_drain(s.q, 0) == 0);
	for (int i = 0; i < 4; i++)
		pthread_join(w[i], NULL);
	CHECK(atomic_load(&s.twice) == 0);
	CHECK(atomic_load(&s.bad_key) == 0);
	for (int i = 0; i < STRESS_KEYS; i++)
		CHECK(atomic_load(&s.pending[i]) == 0);
	CHECK(atomic_load(&s.gets) >= STRESS_KEYS);
	wq_free(s.q);
}

TEST_MAIN()
