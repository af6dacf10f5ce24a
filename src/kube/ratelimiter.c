/* ratelimiter.c - per-key exponential backoff, token bucket and max-of. */
#include "kube/ratelimiter.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

#define RATELIMITER_TABLE_MIN 16 /* hash buckets; a power of two */

enum ratelimiter_kind { RATELIMITER_EXPONENTIAL, RATELIMITER_BUCKET, RATELIMITER_MAX_OF };

/* One failing key of an exponential limiter. */
struct ratelimiter_entry {
	struct ratelimiter_entry *next;
	int failures;
	char key[];
};

struct ratelimiter {
	enum ratelimiter_kind kind;
	pthread_mutex_t lock;

	/* exponential: failing keys in a chained hash table */
	int64_t base_ns, max_ns;
	struct ratelimiter_entry **table;
	size_t nbuckets, nentries;

	/* bucket */
	double qps, tokens;
	int burst;
	int64_t last_ns;
	int64_t (*now_ns)(void *arg);
	void *now_arg;

	/* max-of */
	struct ratelimiter **children;
	size_t nchildren;
};

#define ratelimiter_xalloc(p) ratelimiter_xalloc_at((p), __FILE__, __LINE__)

static void *
ratelimiter_xalloc_at(void *p, const char *file, int line)
{
	if (p == NULL) {
		fprintf(stderr, "bootccm: %s:%d: out of memory\n", file, line);
		abort();
	}
	return p;
}

static int64_t
ratelimiter_monotonic_ns(void *arg)
{
	(void)arg;
	return clock_mono_ns();
}

static int
ratelimiter_alloc(enum ratelimiter_kind kind, struct ratelimiter **ret)
{
	struct ratelimiter *rl = calloc(1, sizeof(*rl));

	if (rl == NULL)
		return ERR_NOMEM;
	if (pthread_mutex_init(&rl->lock, NULL) != 0) {
		free(rl);
		return ERR_NOMEM;
	}
	rl->kind = kind;
	rl->now_ns = ratelimiter_monotonic_ns;
	*ret = rl;
	return 0;
}

int
ratelimiter_exponential_new(int64_t base_ns, int64_t max_ns, struct ratelimiter **ret)
{
	struct ratelimiter *rl;
	int r;

	if (base_ns < 1 || max_ns < base_ns)
		return ERR_INVALID;
	if ((r = ratelimiter_alloc(RATELIMITER_EXPONENTIAL, &rl)) < 0)
		return r;
	rl->base_ns = base_ns;
	rl->max_ns = max_ns;
	rl->nbuckets = RATELIMITER_TABLE_MIN;
	if ((rl->table = calloc(rl->nbuckets, sizeof(*rl->table))) == NULL) {
		ratelimiter_free(rl);
		return ERR_NOMEM;
	}
	*ret = rl;
	return 0;
}

int
ratelimiter_bucket_new(double qps, int burst, struct ratelimiter **ret)
{
	struct ratelimiter *rl;
	int r;

	if (!(qps > 0) || isinf(qps) || burst < 1)
		return ERR_INVALID;
	if ((r = ratelimiter_alloc(RATELIMITER_BUCKET, &rl)) < 0)
		return r;
	rl->qps = qps;
	rl->burst = burst;
	rl->tokens = burst;
	rl->last_ns = INT64_MIN; /* set by the first try, from whichever clock */
	*ret = rl;
	return 0;
}

int
ratelimiter_max_of_new(struct ratelimiter **limiters, size_t n, struct ratelimiter **ret)
{
	struct ratelimiter *rl = NULL;
	int r = ERR_INVALID;

	if (n == 0)
		goto fail;
	for (size_t i = 0; i < n; i++)
		if (limiters[i] == NULL)
			goto fail;
	if ((r = ratelimiter_alloc(RATELIMITER_MAX_OF, &rl)) < 0)
		goto fail;
	if ((rl->children = calloc(n, sizeof(*rl->children))) == NULL) {
		r = ERR_NOMEM;
		goto fail;
	}
	memcpy(rl->children, limiters, n * sizeof(*limiters));
	rl->nchildren = n;
	*ret = rl;
	return 0;
fail:
	ratelimiter_free(rl);
	for (size_t i = 0; i < n; i++)
		ratelimiter_free(limiters[i]);
	return r;
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

/* FNV-1a: keys are short and this table is private, so no need for more. */
static size_t
ratelimiter_hash(const char *key)
{
	uint64_t h = 14695981039346656037ULL;

	for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
		h ^= *p;
		h *= 1099511628211ULL;
	}
	return (size_t)h;
}

/* ratelimiter_find returns the slot that points (or would point) at key's
 * entry; called with rl->lock held. */
static struct ratelimiter_entry **
ratelimiter_find(struct ratelimiter *rl, const char *key)
{
	struct ratelimiter_entry **pp = &rl->table[ratelimiter_hash(key) & (rl->nbuckets - 1)];

	while (*pp && strcmp((*pp)->key, key) != 0)
		pp = &(*pp)->next;
	return pp;
}

/* ratelimiter_resize rehashes into nbuckets buckets; a failed allocation
 * keeps the old table, which stays correct, only slower. */
static void
ratelimiter_resize(struct ratelimiter *rl, size_t nbuckets)
{
	struct ratelimiter_entry **table = calloc(nbuckets, sizeof(*table)), *e, *next;

	if (table == NULL)
		return;
	for (size_t i = 0; i < rl->nbuckets; i++)
		for (e = rl->table[i]; e; e = next) {
			size_t b = ratelimiter_hash(e->key) & (nbuckets - 1);
			next = e->next;
			e->next = table[b];
			table[b] = e;
		}
	free(rl->table);
	rl->table = table;
	rl->nbuckets = nbuckets;
}

static int64_t
ratelimiter_exponential_when(struct ratelimiter *rl, const char *key)
{
	struct ratelimiter_entry **pp, *e;
	int64_t d;
	int exp;

	pthread_mutex_lock(&rl->lock);
	pp = ratelimiter_find(rl, key);
	if ((e = *pp) == NULL) {
		size_t len = strlen(key);
		e = ratelimiter_xalloc(malloc(sizeof(*e) + len + 1));
		memcpy(e->key, key, len + 1);
		e->failures = 0;
		e->next = NULL;
		*pp = e;
		if (++rl->nentries > rl->nbuckets)
			ratelimiter_resize(rl, rl->nbuckets * 2);
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
	double wait_s = 0;
	int64_t now;

	pthread_mutex_lock(&rl->lock);
	now = rl->now_ns(rl->now_arg);
	/* a clock that went backwards adds nothing, like rate.Limiter */
	if (rl->last_ns != INT64_MIN && now > rl->last_ns) {
		rl->tokens += (double)(now - rl->last_ns) / (double)NS_PER_S * rl->qps;
		if (rl->tokens > rl->burst)
			rl->tokens = rl->burst;
	}
	if (rl->last_ns == INT64_MIN || now > rl->last_ns)
		rl->last_ns = now;
	rl->tokens -= 1;
	if (rl->tokens < 0)
		wait_s = -rl->tokens / rl->qps;
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
	struct ratelimiter_entry **pp, *e;

	switch (rl->kind) {
	case RATELIMITER_EXPONENTIAL:
		pthread_mutex_lock(&rl->lock);
		pp = ratelimiter_find(rl, key);
		if ((e = *pp) != NULL) {
			*pp = e->next;
			free(e);
			rl->nentries--;
			/* give the table back too once most keys are gone */
			if (rl->nbuckets > RATELIMITER_TABLE_MIN &&
			    rl->nentries < rl->nbuckets / 8)
				ratelimiter_resize(rl, rl->nbuckets / 2);
		}
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
		if ((e = *ratelimiter_find(rl, key)) != NULL)
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
	n = rl->nentries;
	pthread_mutex_unlock(&rl->lock);
	for (size_t i = 0; i < rl->nchildren; i++)
		n += ratelimiter_len(rl->children[i]);
	return n;
}

void
ratelimiter_free(struct ratelimiter *rl)
{
	struct ratelimiter_entry *e, *next;

	if (rl == NULL)
		return;
	for (size_t i = 0; rl->table && i < rl->nbuckets; i++)
		for (e = rl->table[i]; e; e = next) {
			next = e->next;
			free(e);
		}
	free(rl->table);
	for (size_t i = 0; i < rl->nchildren; i++)
		ratelimiter_free(rl->children[i]);
	free(rl->children);
	pthread_mutex_destroy(&rl->lock);
	free(rl);
}
