/* workqueue.c - dedup FIFO, held-key tracking, timer heap and metrics. */
#include "kube/workqueue.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/hmap.h"
#include "base/metrics.h"
#include "base/xalloc.h"

/* One distinct key. It exists while it is dirty (added and not yet handed
 * out), held by a worker, or waiting in the timer heap, and is freed as soon
 * as it is none of these, so memory follows the number of live keys. A dirty
 * key that is not held is in the FIFO; a dirty held key goes there at its
 * wq_done (that is what keeps one key from reaching two workers). */
struct wq_item {
	struct wq_item *qnext;          /* FIFO of ready keys */
	struct wq_item *pprev, *pnext;  /* held keys, oldest first */
	size_t heap_idx;                /* index in the timer heap while waiting */
	int64_t ready_ns;               /* when a waiting key is due */
	int64_t added_ns;               /* first add since the last get; 0 = none */
	int64_t started_ns;             /* when a worker got it */
	unsigned dirty : 1, processing : 1, waiting : 1;
	char key[];
};

struct wq {
	char name[WQ_NAME_MAX + 1];
	struct ratelimiter *rl;

	pthread_mutex_t lock;
	pthread_cond_t cond;        /* getters and drain waiters */
	pthread_cond_t timer_cond;  /* the timer thread */
	pthread_t timer;
	int timer_started;

	struct hmap items;          /* key -> struct wq_item (borrows its key) */

	struct wq_item *qhead, **qtail;
	size_t qlen;

	struct wq_item *phead, *ptail;
	size_t nprocessing;
	size_t nredo;               /* held keys added again meanwhile */
	size_t ndirty;              /* workqueue_depth, as client-go counts it */

	struct wq_item **heap;
	size_t heap_len, heap_cap;

	int64_t next_tick_ns;       /* next in-progress gauge update */
	int shutting_down;
};

static pthread_once_t wq_metrics_once = PTHREAD_ONCE_INIT;
static struct metric *wq_m_depth, *wq_m_adds, *wq_m_queue_duration,
    *wq_m_work_duration, *wq_m_unfinished, *wq_m_longest, *wq_m_retries;

/* client-go's buckets: ExponentialBuckets(10e-9, 10, 10), seconds */
static const double wq_buckets[] = {
	1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10,
};

/* The registry has one entry per metric name; every queue shares these and
 * tells itself apart with the name label, as in client-go. */
static void
wq_metrics_register(void)
{
	size_t nb = sizeof(wq_buckets) / sizeof(wq_buckets[0]);

	wq_m_depth = metrics_gauge("workqueue_depth",
	    "Current depth of workqueue", "name");
	wq_m_adds = metrics_counter("workqueue_adds_total",
	    "Total number of adds handled by workqueue", "name");
	wq_m_queue_duration = metrics_histogram("workqueue_queue_duration_seconds",
	    "How long in seconds an item stays in workqueue before being requested.",
	    "name", wq_buckets, nb);
	wq_m_work_duration = metrics_histogram("workqueue_work_duration_seconds",
	    "How long in seconds processing an item from workqueue takes.",
	    "name", wq_buckets, nb);
	wq_m_unfinished = metrics_gauge("workqueue_unfinished_work_seconds",
	    "How many seconds of work has done that is in progress and hasn't been "
	    "observed by work_duration. Large values indicate stuck threads. One can "
	    "deduce the number of stuck threads by observing the rate at which this "
	    "increases.", "name");
	wq_m_longest = metrics_gauge("workqueue_longest_running_processor_seconds",
	    "How many seconds has the longest running processor for workqueue been "
	    "running.", "name");
	wq_m_retries = metrics_counter("workqueue_retries_total",
	    "Total number of retries handled by workqueue", "name");
}

static double
wq_seconds(int64_t ns)
{
	return (double)ns / (double)NS_PER_S;
}

static int
wq_check_key(const char *key)
{
	if (key == NULL || *key == '\0')
		return ERR_INVALID;
	if (strnlen(key, WQ_KEY_MAX + 1) > WQ_KEY_MAX)
		return ERR_TOO_LARGE;
	return 0;
}

/* --- keys ----------------------------------------------------------------- */

static struct wq_item *
wq_lookup(struct wq *q, const char *key)
{
	return hmap_get(&q->items, key);
}

static struct wq_item *
wq_intern(struct wq *q, const char *key)
{
	struct wq_item *it;
	size_t len;

	if ((it = hmap_get(&q->items, key)) != NULL)
		return it;
	len = strlen(key);
	it = xcalloc(1, sizeof(*it) + len + 1);
	memcpy(it->key, key, len + 1);
	hmap_put(&q->items, it->key, it);
	return it;
}

/* wq_release frees it once nothing refers to it any more. */
static void
wq_release(struct wq *q, struct wq_item *it)
{
	if (it->dirty || it->processing || it->waiting)
		return;
	hmap_delete(&q->items, it->key);
	free(it);
}

/* --- the timer heap: a binary min-heap on ready_ns ---------------------- */

static void
wq_heap_swap(struct wq *q, size_t i, size_t j)
{
	struct wq_item *t = q->heap[i];

	q->heap[i] = q->heap[j];
	q->heap[j] = t;
	q->heap[i]->heap_idx = i;
	q->heap[j]->heap_idx = j;
}

static void
wq_heap_up(struct wq *q, size_t i)
{
	while (i > 0 && q->heap[(i - 1) / 2]->ready_ns > q->heap[i]->ready_ns) {
		wq_heap_swap(q, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void
wq_heap_down(struct wq *q, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < q->heap_len && q->heap[l]->ready_ns < q->heap[m]->ready_ns)
			m = l;
		if (r < q->heap_len && q->heap[r]->ready_ns < q->heap[m]->ready_ns)
			m = r;
		if (m == i)
			return;
		wq_heap_swap(q, i, m);
		i = m;
	}
}

static void
wq_heap_push(struct wq *q, struct wq_item *it)
{
	if (q->heap_len == q->heap_cap) {
		size_t cap = q->heap_cap ? q->heap_cap * 2 : 16;
		q->heap = xreallocarray(q->heap, cap, sizeof(*q->heap));
		q->heap_cap = cap;
	}
	it->heap_idx = q->heap_len;
	q->heap[q->heap_len++] = it;
	it->waiting = 1;
	wq_heap_up(q, it->heap_idx);
}

static struct wq_item *
wq_heap_pop(struct wq *q)
{
	struct wq_item *it = q->heap[0];

	q->heap_len--;
	if (q->heap_len > 0) {
		q->heap[0] = q->heap[q->heap_len];
		q->heap[0]->heap_idx = 0;
		wq_heap_down(q, 0);
	}
	it->waiting = 0;
	return it;
}

/* --- core, called with q->lock held --------------------------------------- */

/* wq_update_progress sets the in-progress gauges from the held keys, whose
 * list is in the order they were got, so the oldest is first. */
static void
wq_update_progress(struct wq *q, int64_t now)
{
	double total = 0;

	for (struct wq_item *it = q->phead; it; it = it->pnext)
		total += wq_seconds(now - it->started_ns);
	metric_set(wq_m_unfinished, total, q->name);
	metric_set(wq_m_longest, q->phead ? wq_seconds(now - q->phead->started_ns) : 0,
	    q->name);
}

/* wq_add_locked returns 1 when the add counts (the key was not dirty yet)
 * for the caller to add to workqueue_adds_total. The depth gauge is set
 * here, under the lock, so its updates never land out of order. */
static int
wq_add_locked(struct wq *q, struct wq_item *it, int64_t now)
{
	if (it->dirty)
		return 0;
	it->dirty = 1;
	q->ndirty++;
	if (it->added_ns == 0)
		it->added_ns = now;
	metric_set(wq_m_depth, (double)q->ndirty, q->name);
	if (it->processing) {
		q->nredo++;
		return 1;
	}
	it->qnext = NULL;
	*q->qtail = it;
	q->qtail = &it->qnext;
	q->qlen++;
	pthread_cond_signal(&q->cond);
	return 1;
}

/* wq_drop empties the FIFO and the timer heap and forgets re-adds of held
 * keys: what wq_shutdown throws away. */
static void
wq_drop(struct wq *q, int queued)
{
	struct wq_item *it, *next;

	if (queued) {
		for (it = q->qhead; it; it = next) {
			next = it->qnext;
			it->qnext = NULL;
			it->dirty = 0;
			it->added_ns = 0;
			q->ndirty--;
			wq_release(q, it);
		}
		q->qhead = NULL;
		q->qtail = &q->qhead;
		q->qlen = 0;
		for (it = q->phead; it; it = it->pnext)
			if (it->dirty) {
				it->dirty = 0;
				it->added_ns = 0;
				q->ndirty--;
			}
		q->nredo = 0;
		metric_set(wq_m_depth, (double)q->ndirty, q->name);
	}
	while (q->heap_len > 0)
		wq_release(q, wq_heap_pop(q));
}

static void
wq_deadline(struct timespec *ts, int64_t ns)
{
	ts->tv_sec = (time_t)(ns / NS_PER_S);
	ts->tv_nsec = (long)(ns % NS_PER_S);
}

/* wq_timer moves due keys from the heap into the FIFO and ticks the
 * in-progress gauges while keys are held. It sleeps until whichever comes
 * first, and is woken when an earlier key arrives or a key is first held. */
static void *
wq_timer(void *arg)
{
	struct wq *q = arg;
	struct timespec ts;

	pthread_mutex_lock(&q->lock);
	while (!q->shutting_down) {
		int64_t now = clock_mono_ns(), deadline = INT64_MAX;
		int adds = 0;

		while (q->heap_len > 0 && q->heap[0]->ready_ns <= now)
			adds += wq_add_locked(q, wq_heap_pop(q), now);
		/* counted before any getter can see the keys (rare enough to
		 * do under the lock) */
		if (adds > 0)
			metric_add(wq_m_adds, adds, q->name);
		if (q->nprocessing > 0) {
			if (now >= q->next_tick_ns) {
				wq_update_progress(q, now);
				q->next_tick_ns = now + WQ_METRICS_PERIOD_NS;
			}
			deadline = q->next_tick_ns;
		}
		if (q->heap_len > 0 && q->heap[0]->ready_ns < deadline)
			deadline = q->heap[0]->ready_ns;
		if (deadline == INT64_MAX) {
			pthread_cond_wait(&q->timer_cond, &q->lock);
		} else {
			wq_deadline(&ts, deadline);
			pthread_cond_timedwait(&q->timer_cond, &q->lock, &ts);
		}
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* --- API ------------------------------------------------------------------ */

int
wq_new(const char *name, struct ratelimiter *rl, struct wq **ret)
{
	pthread_condattr_t ca;
	struct wq *q;
	size_t len = name ? strnlen(name, WQ_NAME_MAX + 1) : 0;
	int r;

	if (len == 0 || len > WQ_NAME_MAX) {
		ratelimiter_free(rl);
		return ERR_INVALID;
	}
	if (rl == NULL && (r = ratelimiter_controller_new(RATELIMITER_DEFAULT_BASE_NS,
	    RATELIMITER_DEFAULT_MAX_NS, &rl)) < 0)
		return r;
	q = xcalloc(1, sizeof(*q));
	memcpy(q->name, name, len);
	q->rl = rl;
	q->qtail = &q->qhead;
	hmap_init(&q->items, 0);
	pthread_mutex_init(&q->lock, NULL);
	/* deadlines are monotonic: a wall-clock step must not fire or stall
	 * every delayed key at once */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cond, &ca);
	pthread_cond_init(&q->timer_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_once(&wq_metrics_once, wq_metrics_register);
	/* series exist from the start, so dashboards show an idle queue as 0 */
	metric_add(wq_m_adds, 0, q->name);
	metric_add(wq_m_retries, 0, q->name);
	metric_set(wq_m_depth, 0, q->name);
	metric_set(wq_m_unfinished, 0, q->name);
	metric_set(wq_m_longest, 0, q->name);
	if (pthread_create(&q->timer, NULL, wq_timer, q) != 0) {
		wq_free(q);
		return ERR_INTERNAL;
	}
	q->timer_started = 1;
	*ret = q;
	return 0;
}

int
wq_add(struct wq *q, const char *key)
{
	int r, added = 0;

	if ((r = wq_check_key(key)) < 0)
		return r;
	pthread_mutex_lock(&q->lock);
	if (!q->shutting_down)
		added = wq_add_locked(q, wq_intern(q, key), clock_mono_ns());
	pthread_mutex_unlock(&q->lock);
	if (added)
		metric_add(wq_m_adds, 1, q->name);
	return 0;
}

int
wq_add_after(struct wq *q, const char *key, int64_t delay_ns)
{
	struct wq_item *it;
	int64_t now, ready;
	int r, retried = 0, added = 0;

	if ((r = wq_check_key(key)) < 0)
		return r;
	pthread_mutex_lock(&q->lock);
	if (q->shutting_down)
		goto out;
	retried = 1;
	now = clock_mono_ns();
	it = wq_intern(q, key);
	if (delay_ns <= 0) {
		added = wq_add_locked(q, it, now);
		goto out;
	}
	ready = clock_add_ns(now, delay_ns);
	if (!it->waiting) {
		it->ready_ns = ready;
		wq_heap_push(q, it);
	} else if (ready < it->ready_ns) {
		/* client-go's rule: an earlier time replaces a later one, never
		 * the other way round */
		it->ready_ns = ready;
		wq_heap_up(q, it->heap_idx);
	}
	if (it->heap_idx == 0)
		pthread_cond_signal(&q->timer_cond);
out:
	pthread_mutex_unlock(&q->lock);
	if (retried)
		metric_add(wq_m_retries, 1, q->name);
	if (added)
		metric_add(wq_m_adds, 1, q->name);
	return 0;
}

int
wq_add_rate_limited(struct wq *q, const char *key)
{
	int r;

	if ((r = wq_check_key(key)) < 0)
		return r;
	return wq_add_after(q, key, ratelimiter_when(q->rl, key));
}

void
wq_forget(struct wq *q, const char *key)
{
	ratelimiter_forget(q->rl, key);
}

size_t
wq_retry_now(struct wq *q)
{
	struct wq_item *it;
	int64_t now;
	size_t n = 0;
	int adds = 0;

	pthread_mutex_lock(&q->lock);
	now = clock_mono_ns();
	while (!q->shutting_down && q->heap_len > 0) {
		it = wq_heap_pop(q);
		/* the limiter has its own lock and never takes ours */
		ratelimiter_forget(q->rl, it->key);
		adds += wq_add_locked(q, it, now);
		n++;
	}
	pthread_mutex_unlock(&q->lock);
	if (adds > 0)
		metric_add(wq_m_adds, adds, q->name);
	return n;
}

int
wq_num_requeues(struct wq *q, const char *key)
{
	return ratelimiter_num_requeues(q->rl, key);
}

int
wq_get(struct wq *q, const char **ret_key)
{
	struct wq_item *it;
	int64_t now, waited;

	pthread_mutex_lock(&q->lock);
	/* while draining, a held key that was re-added still needs a worker,
	 * so getters stay until those are back in the FIFO */
	while (q->qhead == NULL && !(q->shutting_down && q->nredo == 0))
		pthread_cond_wait(&q->cond, &q->lock);
	if ((it = q->qhead) == NULL) {
		pthread_mutex_unlock(&q->lock);
		return 0;
	}
	if ((q->qhead = it->qnext) == NULL)
		q->qtail = &q->qhead;
	it->qnext = NULL;
	q->qlen--;
	it->dirty = 0;
	q->ndirty--;
	it->processing = 1;
	it->pprev = q->ptail;
	it->pnext = NULL;
	if (q->ptail)
		q->ptail->pnext = it;
	else
		q->phead = it;
	q->ptail = it;
	now = clock_mono_ns();
	it->started_ns = now;
	metric_set(wq_m_depth, (double)q->ndirty, q->name);
	waited = now - it->added_ns;
	it->added_ns = 0;
	if (q->nprocessing++ == 0) {
		q->next_tick_ns = now + WQ_METRICS_PERIOD_NS;
		pthread_cond_signal(&q->timer_cond);
	}
	/* the in-progress gauges need no update here: a key just got adds
	 * nothing to either; wq_done and the timer's tick move them */
	*ret_key = it->key;
	pthread_mutex_unlock(&q->lock);
	metric_observe(wq_m_queue_duration, wq_seconds(waited), q->name);
	return 1;
}

int
wq_done(struct wq *q, const char *key)
{
	struct wq_item *it;
	int64_t now, worked;

	pthread_mutex_lock(&q->lock);
	if ((it = wq_lookup(q, key)) == NULL || !it->processing) {
		pthread_mutex_unlock(&q->lock);
		return ERR_NOT_FOUND;
	}
	now = clock_mono_ns();
	worked = now - it->started_ns;
	if (it->pprev)
		it->pprev->pnext = it->pnext;
	else
		q->phead = it->pnext;
	if (it->pnext)
		it->pnext->pprev = it->pprev;
	else
		q->ptail = it->pprev;
	it->pprev = it->pnext = NULL;
	it->processing = 0;
	q->nprocessing--;
	wq_update_progress(q, now);
	if (it->dirty) {
		q->nredo--;
		it->qnext = NULL;
		*q->qtail = it;
		q->qtail = &it->qnext;
		q->qlen++;
		pthread_cond_signal(&q->cond);
	} else {
		wq_release(q, it); /* may free key's storage: key is not used below */
	}
	/* a drain waits for the last held key; getters wait for re-adds */
	if (q->shutting_down)
		pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
	metric_observe(wq_m_work_duration, wq_seconds(worked), q->name);
	return 0;
}

size_t
wq_len(struct wq *q)
{
	size_t n;

	pthread_mutex_lock(&q->lock);
	n = q->qlen;
	pthread_mutex_unlock(&q->lock);
	return n;
}

void
wq_shutdown(struct wq *q)
{
	pthread_mutex_lock(&q->lock);
	q->shutting_down = 1;
	wq_drop(q, 1);
	pthread_cond_broadcast(&q->cond);
	pthread_cond_signal(&q->timer_cond);
	pthread_mutex_unlock(&q->lock);
}

int
wq_shutdown_with_drain(struct wq *q, int64_t timeout_ns)
{
	struct timespec ts;
	int64_t deadline = 0;
	int r = 0;

	pthread_mutex_lock(&q->lock);
	q->shutting_down = 1;
	wq_drop(q, 0);
	pthread_cond_broadcast(&q->cond);
	pthread_cond_signal(&q->timer_cond);
	if (timeout_ns > 0) {
		int64_t now = clock_mono_ns();
		deadline = clock_add_ns(now, timeout_ns);
		wq_deadline(&ts, deadline);
	}
	while (q->qhead != NULL || q->nprocessing > 0) {
		if (timeout_ns <= 0) {
			pthread_cond_wait(&q->cond, &q->lock);
		} else if (pthread_cond_timedwait(&q->cond, &q->lock, &ts) == ETIMEDOUT &&
		    (q->qhead != NULL || q->nprocessing > 0)) {
			/* out of time: stop handing out keys; held ones finish */
			wq_drop(q, 1);
			pthread_cond_broadcast(&q->cond);
			r = ERR_TIMEOUT;
			break;
		}
	}
	pthread_mutex_unlock(&q->lock);
	return r;
}

int
wq_shutting_down(struct wq *q)
{
	int s;

	pthread_mutex_lock(&q->lock);
	s = q->shutting_down;
	pthread_mutex_unlock(&q->lock);
	return s;
}

void
wq_free(struct wq *q)
{
	if (q == NULL)
		return;
	wq_shutdown(q);
	if (q->timer_started)
		pthread_join(q->timer, NULL);
	hmap_free(&q->items, free);
	/* keys still held at free were never done: the gauges must not keep
	 * reporting them forever */
	metric_set(wq_m_unfinished, 0, q->name);
	metric_set(wq_m_longest, 0, q->name);
	free(q->heap);
	ratelimiter_free(q->rl);
	pthread_cond_destroy(&q->timer_cond);
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	free(q);
}
