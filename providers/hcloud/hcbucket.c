/* hcbucket.c - the client-side model of the project's rate limit. */
#include "hcbucket.h"

#include "clock.h"

void
hcbucket_init(struct hcbucket *b, double limit, double rate, int64_t now_ns)
{
	b->limit = limit >= 1 ? limit : 1;
	b->rate = rate > 0 ? rate : HCBUCKET_DEFAULT_RATE;
	b->tokens = b->limit;
	b->at_ns = now_ns;
	b->inflight = 0;
	b->paced_ns = 0;
	b->rate_learned = 0;
}

double
hcbucket_reserve(const struct hcbucket *b)
{
	double r = (double)(int64_t)(b->limit * HCBUCKET_RESERVE_SHARE);

	return r >= 1 ? r : 1;
}

/* hcbucket_refill brings tokens up to now_ns. */
static void
hcbucket_refill(struct hcbucket *b, int64_t now_ns)
{
	if (now_ns > b->at_ns) {
		b->tokens += (double)(now_ns - b->at_ns) / NS_PER_S * b->rate;
		if (b->tokens > b->limit)
			b->tokens = b->limit;
		b->at_ns = now_ns;
	}
}

/* hcbucket_ns converts a number of tokens into the time they take to
 * refill, rounded up. */
static int64_t
hcbucket_ns(const struct hcbucket *b, double tokens)
{
	return (int64_t)(tokens / b->rate * NS_PER_S) + 1;
}

int64_t
hcbucket_take(struct hcbucket *b, int64_t now_ns)
{
	hcbucket_refill(b, now_ns);
	if (b->tokens < 1)
		return hcbucket_ns(b, 1 - b->tokens);
	if (b->tokens < hcbucket_reserve(b) + 1) {
		/* below the reserve: one request per refilled token */
		if (now_ns < b->paced_ns)
			return b->paced_ns - now_ns;
		b->paced_ns = now_ns + hcbucket_ns(b, 1);
	}
	b->tokens -= 1;
	b->inflight++;
	return 0;
}

void
hcbucket_answer(struct hcbucket *b, int64_t now_ns, int64_t now_unix_s, long status,
    int64_t limit, int64_t remaining, int64_t reset_unix_s)
{
	if (b->inflight > 0)
		b->inflight--;
	hcbucket_refill(b, now_ns);
	if (limit >= 1) {
		b->limit = (double)limit;
		if (!b->rate_learned)
			b->rate = b->limit / 3600;
	}
	if (remaining >= 0 && limit >= 1 && remaining < limit &&
	    reset_unix_s - now_unix_s >= HCBUCKET_LEARN_MIN_S) {
		/* the project is full again at reset: that is its refill rate
		 * (learned from a distant reset only, where a second of clock
		 * skew or rounding hardly matters) */
		b->rate = (double)(limit - remaining) / (double)(reset_unix_s - now_unix_s);
		b->rate_learned = 1;
	}
	if (remaining >= 0) {
		/* the server's count, less what it has not seen yet */
		double t = (double)remaining - (double)b->inflight;
		b->tokens = t > 0 ? t : 0;
	}
	if (b->tokens > b->limit)
		b->tokens = b->limit;
	if (status == 429)
		b->tokens = 0;
	b->at_ns = now_ns;
}

void
hcbucket_failed(struct hcbucket *b)
{
	if (b->inflight > 0)
		b->inflight--;
}
