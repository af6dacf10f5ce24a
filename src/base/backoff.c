/* backoff.c - capped exponential delays with downward jitter. */
#include "base/backoff.h"

#include <math.h>
#include <stdint.h>

#include "base/clock.h"

void
backoff_init(struct backoff *b, int64_t base_ns, int64_t cap_ns, double factor,
    double jitter)
{
	uint64_t now = (uint64_t)clock_mono_ns();

	b->base_ns = base_ns < 0 ? 0 : base_ns;
	b->cap_ns = cap_ns < b->base_ns ? b->base_ns : cap_ns;
	b->factor = isfinite(factor) && factor >= 1 ? factor : 1;
	b->jitter = isfinite(jitter) && jitter > 0 ? (jitter > 1 ? 1 : jitter) : 0;
	b->steps = 0;
	/* the address tells apart threads that start in the same nanosecond */
	b->rng = ((now / NS_PER_S) * 1000000007ULL) ^ (now % NS_PER_S) ^
	    ((uint64_t)(uintptr_t)b << 17);
	if (b->rng == 0)
		b->rng = 0x9e3779b97f4a7c15ULL;
}

void
backoff_reset(struct backoff *b)
{
	b->steps = 0;
}

int64_t
backoff_delay(const struct backoff *b, unsigned step, double u)
{
	double d = (double)b->base_ns;

	/* grow in floating point and stop at the cap: no overflow for any step */
	if (d > 0 && b->factor > 1)
		for (unsigned i = 0; i < step && d < (double)b->cap_ns; i++)
			d *= b->factor;
	if (!(u >= 0) || u >= 1)
		u = 0;
	/* at the cap, in integers: (double)INT64_MAX is 2^63, which does not
	 * convert back */
	if (d >= (double)b->cap_ns) {
		if (b->jitter * u == 0)
			return b->cap_ns;
		d = (double)b->cap_ns;
	}
	d -= d * b->jitter * u;
	return d >= 9223372036854775807.0 ? b->cap_ns : (int64_t)d;
}

double
backoff_rand(struct backoff *b)
{
	uint64_t x = b->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	b->rng = x;
	return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

int64_t
backoff_next(struct backoff *b)
{
	int64_t d = backoff_delay(b, b->steps, b->jitter > 0 ? backoff_rand(b) : 0);

	if (b->steps < 64)
		b->steps++;
	return d;
}
