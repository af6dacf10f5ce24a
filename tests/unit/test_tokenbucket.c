/* test_tokenbucket.c - the token bucket: starts full, refills at its rate up
 * to the burst, take without debt and reserve with debt, a clock that goes
 * backwards, the first use setting the time, and waits rounded up. */
#include <stdint.h>

#include "base/clock.h"
#include "harness.h"
#include "base/tokenbucket.h"

TEST(starts_full_and_empties)
{
	struct tokenbucket b;

	tokenbucket_init(&b, 1.0, 3, 0);
	CHECK(tokenbucket_take(&b, 1, 0) == 0);
	CHECK(tokenbucket_take(&b, 1, 0) == 0);
	CHECK(tokenbucket_take(&b, 1, 0) == 0);
	/* empty: one token is a second away, rounded up; nothing taken */
	CHECK(tokenbucket_take(&b, 1, 0) == NS_PER_S + 1);
	CHECK(b.tokens == 0);
	CHECK(tokenbucket_take(&b, 1, NS_PER_S) == 0);
}

TEST(take_more_than_one)
{
	struct tokenbucket b;

	tokenbucket_init(&b, 2.0, 10, 0);
	CHECK(tokenbucket_take(&b, 10, 0) == 0);
	CHECK(tokenbucket_take(&b, 4, 0) == 2 * NS_PER_S + 1);
	CHECK(tokenbucket_take(&b, 4, 2 * NS_PER_S) == 0);
	CHECK(b.tokens == 0);
	/* more than the burst never comes */
	CHECK(tokenbucket_take(&b, 11, 100 * NS_PER_S) > 0);
	CHECK(b.tokens == 10);
}

TEST(refill_capped_at_burst)
{
	struct tokenbucket b;

	tokenbucket_init(&b, 100.0, 5, 0);
	CHECK(tokenbucket_take(&b, 5, 0) == 0);
	tokenbucket_refill(&b, 3600 * NS_PER_S);
	CHECK(b.tokens == 5);
	CHECK(b.last_ns == 3600 * NS_PER_S);
}

TEST(clock_backwards_adds_nothing)
{
	struct tokenbucket b;

	tokenbucket_init(&b, 1.0, 2, 10 * NS_PER_S);
	CHECK(tokenbucket_take(&b, 2, 10 * NS_PER_S) == 0);
	tokenbucket_refill(&b, 5 * NS_PER_S);
	CHECK(b.tokens == 0);
	CHECK(b.last_ns == 10 * NS_PER_S);
	tokenbucket_refill(&b, 11 * NS_PER_S);
	CHECK(b.tokens == 1);
}

TEST(reserve_goes_into_debt)
{
	struct tokenbucket b;

	tokenbucket_init(&b, 10.0, 2, 0);
	CHECK(tokenbucket_reserve(&b, 1, 0) == 0);
	CHECK(tokenbucket_reserve(&b, 1, 0) == 0);
	CHECK(tokenbucket_reserve(&b, 1, 0) > 0.0999 && tokenbucket_reserve(&b, 0, 0) < 0.1001);
	/* the next waits behind the first: two tokens in debt */
	double w = tokenbucket_reserve(&b, 1, 0);
	CHECK(w > 0.1999 && w < 0.2001);
	CHECK(b.tokens == -2);
	/* paid back by the refill */
	CHECK(tokenbucket_reserve(&b, 1, NS_PER_S) == 0);
}

TEST(no_time_set_by_first_use)
{
	struct tokenbucket b;

	tokenbucket_init(&b, 1.0, 1, TOKENBUCKET_NO_TIME);
	CHECK(tokenbucket_reserve(&b, 1, INT64_MAX / 2) == 0);
	CHECK(b.last_ns == INT64_MAX / 2);
	CHECK(b.tokens == 0);
}

TEST(tiny_rate_and_huge_gap)
{
	struct tokenbucket b;

	tokenbucket_init(&b, 1.0 / 300, 25, 0);
	for (int i = 0; i < 25; i++)
		CHECK(tokenbucket_take(&b, 1, 0) == 0);
	CHECK(tokenbucket_take(&b, 1, 299 * NS_PER_S) > 0);
	CHECK(tokenbucket_take(&b, 1, 300 * NS_PER_S) == 0);
	/* a gap of centuries fills it, no more */
	CHECK(tokenbucket_take(&b, 25, INT64_MAX) == 0);
	CHECK(tokenbucket_ns(&b, 0) == 1);
}

TEST_MAIN()
