/* test_stop.c - the stop signal: sleeps run to their deadline, a stop from
 * another thread ends them at once (not at a poll interval), a stop before
 * the sleep returns at once, and signals become a stop. */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "base/clock.h"
#include "harness.h"
#include "base/stop.h"

TEST(sleeps_to_the_deadline)
{
	struct stop s;
	int64_t t0;

	stop_init(&s);
	t0 = clock_mono_ns();
	CHECK(stop_sleep(&s, 50 * NS_PER_MS) == 0);
	CHECK(clock_mono_ns() - t0 >= 50 * NS_PER_MS);
	CHECK(stop_sleep(&s, 0) == 0);
	CHECK(stop_sleep(&s, -5) == 0);
	CHECK(stop_sleep_until(&s, clock_mono_ns() - NS_PER_S) == 0);  /* past */
	t0 = clock_mono_ns();
	CHECK(stop_sleep(NULL, 20 * NS_PER_MS) == 0);  /* a plain sleep */
	CHECK(clock_mono_ns() - t0 >= 20 * NS_PER_MS);
	CHECK(!stop_requested(NULL));
	stop_destroy(&s);
}

struct waker {
	struct stop *s;
	int64_t at_ns;  /* when it asked to stop */
};

static void *
waker_run(void *arg)
{
	struct waker *w = arg;

	stop_sleep(NULL, 100 * NS_PER_MS);
	__atomic_store_n(&w->at_ns, clock_mono_ns(), __ATOMIC_RELEASE);
	stop_request(w->s);
	return NULL;
}

TEST(a_stop_wakes_a_sleeper_at_once)
{
	struct stop s;
	struct waker w = { &s, 0 };
	pthread_t t;
	int64_t woke;

	stop_init(&s);
	pthread_create(&t, NULL, waker_run, &w);
	CHECK(stop_sleep(&s, 60 * NS_PER_S) == 1);
	woke = clock_mono_ns();
	pthread_join(t, NULL);
	CHECK(stop_requested(&s));
	/* woken by the request, not by a timer: well under a poll interval of
	 * any sleep-and-check loop, even on a loaded machine */
	CHECK(woke - __atomic_load_n(&w.at_ns, __ATOMIC_ACQUIRE) < 2 * NS_PER_S);
	/* once stopped, every sleep returns at once */
	int64_t t0 = clock_mono_ns();
	CHECK(stop_sleep(&s, 60 * NS_PER_S) == 1);
	CHECK(clock_mono_ns() - t0 < NS_PER_S);
	stop_request(&s);  /* idempotent */
	CHECK(stop_requested(&s));
	stop_destroy(&s);
}

static void
count_hook(void *arg)
{
	(*(int *)arg)++;
}

/* Hooks run once, at the first stop_request, with the flag already set;
 * a removed hook never runs; adding to a stopped stop says so instead. */
TEST(hooks_run_once_at_the_stop)
{
	struct stop s;
	int a = 0, b = 0, c = 0;
	struct stop_hook ha = { count_hook, &a, NULL }, hb = { count_hook, &b, NULL },
	    hc = { count_hook, &c, NULL };

	stop_init(&s);
	CHECK(stop_hook_add(&s, &ha) == 0);
	CHECK(stop_hook_add(&s, &hb) == 0);
	stop_hook_remove(&s, &hb);
	stop_hook_remove(&s, &hb);      /* twice: harmless */
	stop_request(&s);
	stop_request(&s);
	CHECK(a == 1 && b == 0);
	CHECK(stop_hook_add(&s, &hc) == 1);
	CHECK(c == 0);
	stop_hook_remove(&s, &ha);
	stop_destroy(&s);
	CHECK(stop_hook_add(NULL, &hc) == 0);
	stop_hook_remove(NULL, &hc);
}

TEST(signals_become_a_stop)
{
	static struct stop s;

	stop_init(&s);
	CHECK(stop_on_signals(&s) == 0);
	CHECK(!stop_requested(&s));
	kill(getpid(), SIGTERM);  /* blocked here, taken by the signal thread */
	CHECK(stop_sleep(&s, 30 * NS_PER_S) == 1);
	CHECK(stop_requested(&s));
	/* a repeat changes nothing and does not end the process */
	kill(getpid(), SIGINT);
	stop_sleep(NULL, 20 * NS_PER_MS);
	CHECK(stop_requested(&s));
}

TEST_MAIN()

/* A sleep near the 64-bit maximum lasts until the stop: its deadline
 * saturates instead of wrapping into the past (which returned at once, and a
 * loop around it spun). Run under UBSan: no signed overflow on the way. */
TEST(a_sleep_past_the_clock_lasts_until_the_stop)
{
	struct stop s;
	struct waker w = { &s, 0 };
	pthread_t t;
	int64_t t0 = clock_mono_ns();

	CHECK(clock_add_ns(INT64_MAX, 1) == INT64_MAX);
	CHECK(clock_add_ns(1, INT64_MAX) == INT64_MAX);
	CHECK(clock_add_ns(t0, INT64_MAX - 1) == INT64_MAX);
	CHECK(clock_add_ns(INT64_MIN, -1) == INT64_MIN);
	CHECK(clock_add_ns(-5, INT64_MIN) == INT64_MIN);
	CHECK(clock_add_ns(INT64_MAX, INT64_MIN) == -1);
	CHECK(clock_add_ns(10, -3) == 7);
	stop_init(&s);
	pthread_create(&t, NULL, waker_run, &w);
	CHECK(stop_sleep(&s, INT64_MAX) == 1);
	pthread_join(t, NULL);
	/* it slept until the waker's request (100 ms), not a moment */
	CHECK(clock_mono_ns() - t0 >= 100 * NS_PER_MS);
	CHECK(stop_sleep(&s, INT64_MAX - 1) == 1);  /* stopped: returns at once */
	stop_destroy(&s);
	stop_init(&s);
	w.at_ns = 0;
	t0 = clock_mono_ns();
	pthread_create(&t, NULL, waker_run, &w);
	CHECK(stop_sleep_until(&s, INT64_MAX) == 1);
	pthread_join(t, NULL);
	CHECK(clock_mono_ns() - t0 >= 100 * NS_PER_MS);
	stop_destroy(&s);
}
