/* test_backoff.c - delay growth, the cap, the jitter range, clamping of bad
 * parameters. (The interruptible sleep is stop.c's: test_stop.c.) */
#include <stdint.h>

#include "base/backoff.h"
#include "harness.h"

#define MS 1000000LL

TEST(grows_by_factor_up_to_the_cap)
{
	struct backoff b;

	backoff_init(&b, 100 * MS, 800 * MS, 2.0, 0);
	CHECK(backoff_next(&b) == 100 * MS);
	CHECK(backoff_next(&b) == 200 * MS);
	CHECK(backoff_next(&b) == 400 * MS);
	CHECK(backoff_next(&b) == 800 * MS);
	CHECK(backoff_next(&b) == 800 * MS);
	for (int i = 0; i < 1000; i++)
		CHECK(backoff_next(&b) == 800 * MS);
	backoff_reset(&b);
	CHECK(backoff_next(&b) == 100 * MS);
	/* a step far past the cap neither overflows nor loops for long */
	CHECK(backoff_delay(&b, 4000000000U, 0) == 800 * MS);
}

TEST(jitter_only_shortens)
{
	struct backoff b;

	backoff_init(&b, 100 * MS, 1000 * MS, 3.0, 0.25);
	CHECK(backoff_delay(&b, 0, 0) == 100 * MS);
	CHECK(backoff_delay(&b, 1, 0) == 300 * MS);
	CHECK(backoff_delay(&b, 1, 0.5) == (int64_t)(300 * MS * (1 - 0.125)));
	CHECK(backoff_delay(&b, 2, 0) == 900 * MS);
	CHECK(backoff_delay(&b, 3, 0) == 1000 * MS);
	CHECK(backoff_delay(&b, 3, 0.999999) >= 750 * MS);
	/* draws outside [0, 1) count as 0: never longer than the cap */
	CHECK(backoff_delay(&b, 3, 1.5) == 1000 * MS);
	CHECK(backoff_delay(&b, 3, -1) == 1000 * MS);
}

TEST(jittered_draws_cover_the_range)
{
	struct backoff b;
	int64_t lo = INT64_MAX, hi = 0;
	int below_mid = 0;

	backoff_init(&b, 1000 * MS, 1000 * MS, 2.0, 0.5);
	for (int i = 0; i < 4000; i++) {
		int64_t d = backoff_next(&b);
		CHECK(d >= 500 * MS && d <= 1000 * MS);
		if (d < lo)
			lo = d;
		if (d > hi)
			hi = d;
		below_mid += d < 750 * MS;
	}
	/* uniform: both ends are approached and about half fall below the middle */
	CHECK(lo < 520 * MS);
	CHECK(hi > 980 * MS);
	CHECK(below_mid > 1700 && below_mid < 2300);
}

TEST(rand_draws_are_uniform_in_0_1)
{
	struct backoff b;
	int below_mid = 0, low = 0, high = 0;

	backoff_init(&b, 1000 * MS, 1000 * MS, 2.0, 0);
	for (int i = 0; i < 4000; i++) {
		double u = backoff_rand(&b);
		CHECK(u >= 0 && u < 1);
		below_mid += u < 0.5;
		low += u < 0.05;
		high += u >= 0.95;
	}
	CHECK(below_mid > 1700 && below_mid < 2300);
	CHECK(low > 100 && high > 100);
	/* drawing does not advance the steps */
	CHECK(backoff_next(&b) == 1000 * MS);
}

TEST(two_backoffs_draw_differently)
{
	struct backoff a, b;
	int same = 0;

	backoff_init(&a, 1000 * MS, 1000 * MS, 1, 1);
	backoff_init(&b, 1000 * MS, 1000 * MS, 1, 1);
	for (int i = 0; i < 20; i++)
		same += backoff_next(&a) == backoff_next(&b);
	CHECK(same < 20);
}

TEST(bad_parameters_are_clamped)
{
	struct backoff b;

	backoff_init(&b, -5, -10, 0.5, 7);
	CHECK(b.base_ns == 0 && b.cap_ns == 0 && b.factor == 1 && b.jitter == 1);
	CHECK(backoff_next(&b) == 0);
	backoff_init(&b, 50 * MS, 10 * MS, 2, -1);
	CHECK(b.cap_ns == 50 * MS && b.jitter == 0);
	CHECK(backoff_next(&b) == 50 * MS);
	CHECK(backoff_next(&b) == 50 * MS);
	backoff_init(&b, 10 * MS, 100 * MS, 1.0 / 0.0, 0.0 / 0.0);
	CHECK(b.factor == 1 && b.jitter == 0);
}

TEST_MAIN()

/* A cap at the 64-bit maximum: the delays grow to it and stay exact, with
 * and without jitter (no float-to-integer overflow: UBSan). */
TEST(a_cap_at_the_maximum_does_not_overflow)
{
	struct backoff b;

	backoff_init(&b, 1, INT64_MAX, 2.0, 0);
	CHECK(backoff_delay(&b, 0, 0) == 1);
	CHECK(backoff_delay(&b, 62, 0) == 4611686018427387904LL);
	CHECK(backoff_delay(&b, 63, 0) == INT64_MAX);
	CHECK(backoff_delay(&b, 1000, 0) == INT64_MAX);
	backoff_init(&b, INT64_MAX, INT64_MAX, 2.0, 0.5);
	for (int i = 0; i < 100; i++) {
		int64_t d = backoff_next(&b);
		CHECK(d > INT64_MAX / 2 - 1024 && d <= INT64_MAX);
	}
	CHECK(backoff_delay(&b, 3, 1e-18) == INT64_MAX);
}
