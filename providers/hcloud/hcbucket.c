/* hcbucket.c - the client-side model of the project's rate limit. */
#include "hcbucket.h"


void
hcbucket_init(struct hcbucket *b, double limit, double rate, int64_t now_ns)
{
	limit = limit >= 1 ? limit : 1;
	tokenbucket_init(&b->tb, rate > 0 ? rate : HCBUCKET_DEFAULT_RATE, limit, now_ns);
	b->inflight = 0;
	b->paced_ns = 0;
	b->rate_learned = 0;
}

double
hcbucket_reserve(const struct hcbucket *b)
{
	double r = (double)(int64_t)(b->tb.burst * HCBUCKET_RESERVE_SHARE);

	return r >= 1 ? r : 1;
}

int64_t
hcbucket_take(struct hcbucket *b, int64_t now_ns)
{
	int64_t wait;

	tokenbucket_refill(&b->tb, now_ns);
	if (b->tb.tokens >= 1 && b->tb.tokens < hcbucket_reserve(b) + 1) {
		/* below the reserve: one request per refilled token */
		if (now_ns < b->paced_ns)
			return b->paced_ns - now_ns;
		b->paced_ns = now_ns + tokenbucket_ns(&b->tb, 1);
	}
	if ((wait = tokenbucket_take(&b->tb, 1, now_ns)) > 0)
		return wait;
	b->inflight++;
	return 0;
}

void
hcbucket_answer(struct hcbucket *b, int64_t now_ns, int64_t now_unix_s, long status,
    int64_t limit, int64_t remaining, int64_t reset_unix_s)
{
	struct tokenbucket *tb = &b->tb;

	if (b->inflight > 0)
		b->inflight--;
	tokenbucket_refill(tb, now_ns);
	if (limit >= 1) {
		tb->burst = (double)limit;
		if (!b->rate_learned)
			tb->rate = tb->burst / 3600;
	}
	if (remaining >= 0 && limit >= 1 && remaining < limit &&
	    reset_unix_s - now_unix_s >= HCBUCKET_LEARN_MIN_S) {
		/* the project is full again at reset: that is its refill rate
		 * (learned from a distant reset only, where a second of clock
		 * skew or rounding hardly matters) */
		tb->rate = (double)(limit - remaining) / (double)(reset_unix_s - now_unix_s);
		b->rate_learned = 1;
	}
	if (remaining >= 0) {
		/* the server's count, less what it has not seen yet */
		double t = (double)remaining - (double)b->inflight;
		tb->tokens = t > 0 ? t : 0;
	}
	if (tb->tokens > tb->burst)
		tb->tokens = tb->burst;
	if (status == 429)
		tb->tokens = 0;
	tb->last_ns = now_ns;
}

void
hcbucket_failed(struct hcbucket *b)
{
	if (b->inflight > 0)
		b->inflight--;
}
