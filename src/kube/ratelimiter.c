/* ratelimiter.c - per-key exponential backoff, token bucket and max-of. */
#include "kube/ratelimiter.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/hmap.h"
#include "base/tokenbucket.h"
#include "base/xalloc.h"

enum ratelimiter_kind { RATELIMITER_EXPONENTIAL, RATELIMITER_BUCKET, RATELIMITER_MAX_OF };

/* One failing key of an exponential limiter. */
struct ratelimiter_entry {
	int failures;
	char key[];
};

struct ratelimiter {
	enum ratelimiter_kind kind;
	pthread_mutex_t lock;

	/* exponential: failing keys (the map borrows each entry's key) */
	int64_t base_ns, max_ns;
	struct hmap failing;

	/* bucket */
	struct tokenbucket bucket;
	int64_t (*now_ns)(void *arg);
	void *now_arg;

	/* max-of */
	struct ratelimiter **children;
	size_t nchildren;
};

static int64_t
ratelimiter_monotonic_ns(void *arg)
{
	(void)arg;
	return clock_mono_ns();
}

static struct ratelimiter *
ratelimiter_alloc(enum ratelimiter_kind kind)
{
	struct ratelimiter *rl = xcalloc(1, sizeof(*rl));

	pthread_mutex_init(&rl->lock, NULL);
	rl->kind = kind;
	rl->now_ns = ratelimiter_monotonic_ns;
	hmap_init(&rl->failing, 0);
	return rl;
}

int
ratelimiter_exponential_new(int64_t base_ns, int64_t max_ns, struct ratelimiter **ret)
{
	struct ratelimiter *rl;

	if (base_ns < 1 || max_ns < base_ns)
		return ERR_INVALID;
	rl = ratelimiter_alloc(RATELIMITER_EXPONENTIAL);
	rl->base_ns = base_ns;
	rl->max_ns = max_ns;
	*ret = rl;
	return 0;
}

int
ratelimiter_bucket_new(double qps, int burst, struct ratelimiter **ret)
{
	struct ratelimiter *rl;

	if (!(qps > 0) || isinf(qps) || burst < 1)
		return ERR_INVALID;
	rl = ratelimiter_alloc(RATELIMITER_BUCKET);
	/* the time is set by the first try, from whichever clock */
	tokenbucket_init(&rl->bucket, qps, burst, TOKENBUCKET_NO_TIME);
	*ret = rl;
	return 0;
}

int
ratelimiter_max_of_new(struct ratelimiter **limiters, size_t n, struct ratelimiter **ret)
{
	struct ratelimiter *rl;

	if (n == 0)
		goto invalid;
	for (size_t i = 0; i < n; i++)
		if (limiters[i] == NULL)
			goto invalid;
	rl = ratelimiter_alloc(RATELIMITER_MAX_OF);
	rl->children = xcalloc(n, sizeof(*rl->children));
	memcpy(rl->children, limiters, n * sizeof(*limiters));
	rl->nchildren = n;
	*ret = rl;
	return 0;
invalid:
	for (size_t i = 0; i < n; i++)
		ratelimiter_free(limiters[i]);
	return ERR_INVALID;
}

int
ratelimiter_controller_new(int64_t base_ns, int64_t max_ns, struct ratelimiter **ret)
{
	struct ratelimiter *parts[2] = { NULL, NULL };
	int r;

	if ((r = ratelimiter_exponential_new(base_ns, max_ns, &parts[0])) < 0)
		return r;
	if ((r = ratelimiter_bucket_new(RATELIMITER_DEFAULT_QPS,
	    RATELIMITER_DEFAULT_BURST, &parts[1])) < 0) {
		ratelimiter_free(parts[0]);
		return r;
	}
	return ratelimiter_max_of_new(parts, 2, ret);
}

void
ratelimiter_set_clock(struct ratelimiter *rl, int64_t (*now_ns)(void *arg), void *arg)
{
	pthread_mutex_lock(&rl->lock);
	rl->now_ns = now_ns ? now_ns : ratelimiter_monotonic_ns;
	rl->now_arg = now_ns ? arg : NULL;
	pthread_mutex_unlock(&rl->lock);
	for (size_t i = 0; i < rl->nchildren; i++)
		ratelimiter_set_clock(rl->children[i], now_ns, arg);
}

static int64_t
ratelimiter_exponential_when(struct ratelimiter *rl, const char *key)
{
	struct ratelimiter_entry *e;
	int64_t d;
	int exp;

	pthread_mutex_lock(&rl->lock);
	if ((e = hmap_get(&rl->failing, key)) == NULL) {
		size_t len = strlen(key);
		e = xmalloc(sizeof(*e) + len + 1);
		memcpy(e->key, key, len + 1);
		e->failures = 0;
		hmap_put(&rl->failing, e->key, e);
	}
	exp = e->failures;
	if (e->failures < INT_MAX)
		e->failures++;
	pthread_mutex_unlock(&rl->lock);

	/* base * 2^exp without overflow: stop doubling once past the cap */
	d = rl->base_ns;
	for (int i = 0; i < exp && d < rl->max_ns; i++)
		d = d > INT64_MAX / 2 ? INT64_MAX : d * 2;
	return d > rl->max_ns ? rl->max_ns : d;
}

static int64_t
ratelimiter_bucket_when(struct ratelimiter *rl)
{
	double wait_s;

	pthread_mutex_lock(&rl->lock);
	wait_s = tokenbucket_reserve(&rl->bucket, 1, rl->now_ns(rl->now_arg));
	pthread_mutex_unlock(&rl->lock);
	/* rounded, not truncated, so 1/10 s comes out as exactly 100 ms */
	return wait_s > 0 ? (int64_t)llround(wait_s * (double)NS_PER_S) : 0;
}

int64_t
ratelimiter_when(struct ratelimiter *rl, const char *key)
{
	int64_t d = 0, c;

	switch (rl->kind) {
	case RATELIMITER_EXPONENTIAL:
		return ratelimiter_exponential_when(rl, key);
	case RATELIMITER_BUCKET:
		return ratelimiter_bucket_when(rl);
	case RATELIMITER_MAX_OF:
		for (size_t i = 0; i < rl->nchildren; i++)
			if ((c = ratelimiter_when(rl->children[i], key)) > d)
				d = c;
		return d;
	}
	return 0;
}

void
ratelimiter_forget(struct ratelimiter *rl, const char *key)
{
	switch (rl->kind) {
	case RATELIMITER_EXPONENTIAL:
		pthread_mutex_lock(&rl->lock);
		free(hmap_delete(&rl->failing, key));
		pthread_mutex_unlock(&rl->lock);
		break;
	case RATELIMITER_BUCKET:
		break;
	case RATELIMITER_MAX_OF:
		for (size_t i = 0; i < rl->nchildren; i++)
			ratelimiter_forget(rl->children[i], key);
		break;
	}
}

int
ratelimiter_num_requeues(struct ratelimiter *rl, const char *key)
{
	struct ratelimiter_entry *e;
	int n = 0, c;

	switch (rl->kind) {
	case RATELIMITER_EXPONENTIAL:
		pthread_mutex_lock(&rl->lock);
		if ((e = hmap_get(&rl->failing, key)) != NULL)
			n = e->failures;
		pthread_mutex_unlock(&rl->lock);
		break;
	case RATELIMITER_BUCKET:
		break;
	case RATELIMITER_MAX_OF:
		for (size_t i = 0; i < rl->nchildren; i++)
			if ((c = ratelimiter_num_requeues(rl->children[i], key)) > n)
				n = c;
		break;
	}
	return n;
}

size_t
ratelimiter_len(struct ratelimiter *rl)
{
	size_t n;

	pthread_mutex_lock(&rl->lock);
	n = hmap_len(&rl->failing);
	pthread_mutex_unlock(&rl->lock);
	for (size_t i = 0; i < rl->nchildren; i++)
		n += ratelimiter_len(rl->children[i]);
	return n;
}

void
ratelimiter_free(struct ratelimiter *rl)
{
	if (rl == NULL)
		return;
	hmap_free(&rl->failing, free);
	for (size_t i = 0; i < rl->nchildren; i++)
		ratelimiter_free(rl->children[i]);
	free(rl->children);
	pthread_mutex_destroy(&rl->lock);
	free(rl);
}
