/* tokenbucket.c - the token bucket arithmetic. */
#include "base/tokenbucket.h"

#include "base/clock.h"

void
tokenbucket_init(struct tokenbucket *b, double rate, double burst, int64_t now_ns)
{
	b->rate = rate;
	b->burst = burst;
	b->tokens = burst;
	b->last_ns = now_ns;
}

void
tokenbucket_refill(struct tokenbucket *b, int64_t now_ns)
{
	if (b->last_ns == TOKENBUCKET_NO_TIME) {
		b->last_ns = now_ns;
		return;
	}
	if (now_ns > b->last_ns) {
		b->tokens += (double)(now_ns - b->last_ns) / (double)NS_PER_S * b->rate;
		if (b->tokens > b->burst)
			b->tokens = b->burst;
		b->last_ns = now_ns;
	}
}

int64_t
tokenbucket_ns(const struct tokenbucket *b, double n)
{
	return (int64_t)(n / b->rate * (double)NS_PER_S) + 1;
}

int64_t
tokenbucket_take(struct tokenbucket *b, double n, int64_t now_ns)
{
	tokenbucket_refill(b, now_ns);
	if (b->tokens < n)
		return tokenbucket_ns(b, n - b->tokens);
	b->tokens -= n;
	return 0;
}

double
tokenbucket_reserve(struct tokenbucket *b, double n, int64_t now_ns)
{
	tokenbucket_refill(b, now_ns);
	b->tokens -= n;
	return b->tokens < 0 ? -b->tokens / b->rate : 0;
}
