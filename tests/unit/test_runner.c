/* test_runner.c - a controller's threads: every key reaches sync once per
 * add, a failure comes back rate-limited, RUNNER_HANDLED leaves the requeue
 * to the sync, each worker gets its own context, the periodic thread runs
 * until the stop, and stop joins everything (also while a wait blocks). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "harness.h"
#include "kube/ratelimiter.h"
#include "kube/runner.h"
#include "kube/workqueue.h"
#include "base/stop.h"

struct fake {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct stop stop;
	struct wq *q;
	int syncs, fails_left, handled, inits, cleanups, afters, periods, begun, ended;
	int aborted;
	int after_handled;
	int wait_blocks;           /* wait sleeps until the stop */
};

static void
fake_init(struct fake *f, const char *name)
{
	struct ratelimiter *rl = NULL;

	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	stop_init(&f->stop);
	if (ratelimiter_exponential_new(NS_PER_MS, 10 * NS_PER_MS, &rl) < 0 ||
	    wq_new(name, rl, &f->q) < 0)
		abort();
}

static void
fake_done(struct fake *f)
{
	wq_free(f->q);
	stop_destroy(&f->stop);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
}

static int
fake_wait(void *arg)
{
	struct fake *f = arg;

	if (f->wait_blocks)
		return !stop_sleep(&f->stop, INT64_MAX);
	return 1;
}

static int
fake_worker_init(void *arg, void **ctx)
{
	struct fake *f = arg;
	int *mine = malloc(sizeof(*mine));

	*mine = 0;
	pthread_mutex_lock(&f->mu);
	f->inits++;
	pthread_mutex_unlock(&f->mu);
	*ctx = mine;
	return 0;
}

static void
fake_worker_cleanup(void *arg, void *ctx)
{
	struct fake *f = arg;

	pthread_mutex_lock(&f->mu);
	f->cleanups++;
	pthread_mutex_unlock(&f->mu);
	free(ctx);
}

static int
fake_sync(void *arg, void *ctx, const char *key)
{
	struct fake *f = arg;
	int r = 0;

	(*(int *)ctx)++;
	pthread_mutex_lock(&f->mu);
	f->syncs++;
	if (strcmp(key, "fail") == 0 && f->fails_left > 0) {
		f->fails_left--;
		r = ERR_TRANSIENT;
	} else if (strcmp(key, "handled") == 0) {
		f->handled++;
		r = RUNNER_HANDLED;
	}
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return r;
}

static void
fake_after(void *arg, int rc)
{
	struct fake *f = arg;

	pthread_mutex_lock(&f->mu);
	f->afters++;
	f->after_handled += rc == RUNNER_HANDLED;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

static void
fake_every(void *arg)
{
	struct fake *f = arg;

	pthread_mutex_lock(&f->mu);
	f->periods++;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

static void
fake_begin(void *arg)
{
	((struct fake *)arg)->begun++;
}

static void
fake_end(void *arg)
{
	((struct fake *)arg)->ended++;
}

static void
fake_abort(void *arg)
{
	((struct fake *)arg)->aborted++;
}

/* fake_wait_for waits (10 s at most) until *v reaches want. */
static int
fake_wait_for(struct fake *f, const int *v, int want)
{
	int64_t deadline = clock_mono_ns() + 10 * NS_PER_S;
	int ok;

	pthread_mutex_lock(&f->mu);
	while (*v < want && clock_mono_ns() < deadline) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10 * NS_PER_MS;
		if (ts.tv_nsec >= NS_PER_S) {
			ts.tv_sec++;
			ts.tv_nsec -= NS_PER_S;
		}
		pthread_cond_timedwait(&f->cv, &f->mu, &ts);
	}
	ok = *v >= want;
	pthread_mutex_unlock(&f->mu);
	return ok;
}

TEST(workers_sync_requeue_and_stop)
{
	struct fake f;
	struct runner *r = NULL;

	fake_init(&f, "runner_test_workers");
	f.fails_left = 2;
	struct runner_config cfg = {
		.stop = &f.stop, .arg = &f, .wait = fake_wait, .q = f.q, .workers = 3,
		.worker_init = fake_worker_init, .sync = fake_sync, .after = fake_after,
		.worker_cleanup = fake_worker_cleanup, .on_stop = fake_abort,
	};
	CHECK(runner_start(&cfg, &r) == 0);
	CHECK(wq_add(f.q, "a") == 0);
	CHECK(wq_add(f.q, "fail") == 0);
	CHECK(wq_add(f.q, "handled") == 0);
	/* a, handled, and fail three times: twice failed, once succeeded */
	CHECK(fake_wait_for(&f, &f.afters, 5));
	CHECK(f.fails_left == 0);
	CHECK(f.handled == 1);
	CHECK(f.after_handled == 1);
	CHECK(wq_num_requeues(f.q, "fail") == 0);   /* forgotten on success */
	CHECK(fake_wait_for(&f, &f.inits, 3));
	runner_stop(r);
	runner_stop(r);                             /* idempotent */
	CHECK(stop_requested(&f.stop));
	CHECK(wq_shutting_down(f.q));
	CHECK(f.aborted == 1);
	CHECK(f.cleanups == 3);
	CHECK(f.syncs == 5);
	runner_free(r);
	fake_done(&f);
}

TEST(handled_keeps_the_backoff)
{
	struct fake f;
	struct runner *r = NULL;

	fake_init(&f, "runner_test_handled");
	struct runner_config cfg = {
		.stop = &f.stop, .arg = &f, .q = f.q, .workers = 1,
		.worker_init = fake_worker_init, .sync = fake_sync, .after = fake_after,
		.worker_cleanup = fake_worker_cleanup,
	};
	CHECK(runner_start(&cfg, &r) == 0);
	CHECK(wq_add_rate_limited(f.q, "handled") == 0);
	CHECK(fake_wait_for(&f, &f.afters, 1));
	/* the runner neither forgot nor requeued it */
	CHECK(wq_num_requeues(f.q, "handled") == 1);
	CHECK(wq_len(f.q) == 0);
	runner_free(r);
	fake_done(&f);
}

TEST(periodic_runs_until_the_stop)
{
	struct fake f;
	struct runner *r = NULL;

	fake_init(&f, "runner_test_periodic");
	struct runner_config cfg = {
		.stop = &f.stop, .arg = &f, .every = fake_every, .period_ns = 5 * NS_PER_MS,
		.every_begin = fake_begin, .every_first = 1, .every_end = fake_end,
	};
	CHECK(runner_start(&cfg, &r) == 0);
	CHECK(fake_wait_for(&f, &f.periods, 3));
	runner_free(r);
	CHECK(f.begun == 1);
	CHECK(f.ended == 1);
	CHECK(f.syncs == 0);
	fake_done(&f);
}

TEST(stop_during_wait_runs_nothing)
{
	struct fake f;
	struct runner *r = NULL;
	int64_t t0;

	fake_init(&f, "runner_test_wait");
	f.wait_blocks = 1;
	struct runner_config cfg = {
		.stop = &f.stop, .arg = &f, .wait = fake_wait, .q = f.q, .workers = 2,
		.worker_init = fake_worker_init, .sync = fake_sync,
		.worker_cleanup = fake_worker_cleanup,
		.every = fake_every, .period_ns = NS_PER_MS, .every_first = 1,
		.every_end = fake_end,
	};
	CHECK(runner_start(&cfg, &r) == 0);
	CHECK(wq_add(f.q, "a") == 0);
	t0 = clock_mono_ns();
	runner_free(r);
	CHECK(clock_mono_ns() - t0 < 5 * NS_PER_S);
	CHECK(f.inits == 0 && f.cleanups == 0 && f.syncs == 0);
	CHECK(f.periods == 0 && f.ended == 0);
	fake_done(&f);
}

TEST(bad_configurations)
{
	struct stop s;
	struct runner *r = (struct runner *)&s;
	struct runner_config none = { 0 };
	struct runner_config noq = { .stop = &s, .workers = 1, .sync = fake_sync };
	struct runner_config noperiod = { .stop = &s, .every = fake_every };

	stop_init(&s);
	CHECK(runner_start(&none, &r) == ERR_INVALID);
	CHECK(r == NULL);
	CHECK(runner_start(&noq, &r) == ERR_INVALID);
	CHECK(runner_start(&noperiod, &r) == ERR_INVALID);
	runner_stop(NULL);
	runner_free(NULL);
	stop_destroy(&s);
}

TEST_MAIN()
