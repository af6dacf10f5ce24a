/* test_hcloud_bucket.c - the hcloud client's rate-limit model: requests go
 * at once above the reserve, are paced at the refill rate below it, wait
 * for a token when none is left; the answers' RateLimit-* headers correct
 * the model and teach it the refill rate; a 429 empties it. */
#include "harness.h"

#include "base/clock.h"
#include "../../providers/hcloud/hcbucket.h"

#define T0 (1000 * NS_PER_S)

TEST(fresh_bucket_goes_at_once_down_to_the_reserve)
{
	struct hcbucket b;
	int n = 0;

	hcbucket_init(&b, 3600, 1.0, T0);
	CHECK(hcbucket_reserve(&b) == 180);
	while (hcbucket_take(&b, T0) == 0)
		n++;
	/* everything above the reserve, then one paced request */
	CHECK(n == 3600 - 180 + 1);
	CHECK(b.inflight == n);
}

TEST(below_the_reserve_requests_are_paced_at_the_refill_rate)
{
	struct hcbucket b;
	int64_t w;

	hcbucket_init(&b, 3600, 1.0, T0);
	b.tb.tokens = 100;      /* below the reserve of 180 */
	CHECK(hcbucket_take(&b, T0) == 0);
	w = hcbucket_take(&b, T0);
	CHECK(w > 999 * NS_PER_MS && w <= 1001 * NS_PER_MS);
	/* half a second later: still waiting, for the other half */
	w = hcbucket_take(&b, T0 + NS_PER_S / 2);
	CHECK(w > 499 * NS_PER_MS && w <= 501 * NS_PER_MS);
	CHECK(hcbucket_take(&b, T0 + NS_PER_S + 1) == 0);
	/* two requests in one second, one token refilled */
	CHECK(b.tb.tokens > 98.9 && b.tb.tokens < 99.1);
}

TEST(an_empty_bucket_waits_for_a_token)
{
	struct hcbucket b;
	int64_t w;

	hcbucket_init(&b, 3600, 2.0, T0);
	b.tb.tokens = 0.25;
	w = hcbucket_take(&b, T0);
	/* 0.75 tokens at 2 per second */
	CHECK(w > 374 * NS_PER_MS && w <= 376 * NS_PER_MS);
	CHECK(hcbucket_take(&b, T0 + w) == 0);
}

TEST(headers_correct_the_model)
{
	struct hcbucket b;

	hcbucket_init(&b, 3600, 1.0, T0);
	for (int i = 0; i < 3; i++)
		CHECK(hcbucket_take(&b, T0) == 0);
	/* another client spent most of the project: the server's count wins,
	 * less the two requests still in flight that it has not seen */
	hcbucket_answer(&b, T0, 5000, 200, 3600, 500, 5000 + 3100);
	CHECK(b.inflight == 2);
	CHECK(b.tb.tokens == 498);
	/* the rate: 3100 missing, full again in 3100 s */
	CHECK(b.tb.rate > 0.999 && b.tb.rate < 1.001);
	CHECK(b.rate_learned);
	hcbucket_answer(&b, T0, 5000, 200, 3600, 499, 5000 + 3101);
	CHECK(b.tb.tokens == 498);
	hcbucket_failed(&b);
	CHECK(b.inflight == 0);
	CHECK(b.tb.tokens == 498);
}

TEST(the_rate_is_learned_only_from_a_distant_reset)
{
	struct hcbucket b;

	hcbucket_init(&b, 3600, 1.0, T0);
	CHECK(hcbucket_take(&b, T0) == 0);
	/* full again in 3 s: rounding and skew make it no measure */
	hcbucket_answer(&b, T0, 5000, 200, 7200, 7197, 5003);
	CHECK(!b.rate_learned);
	CHECK(b.tb.rate == 2.0);        /* 7200 an hour until learned */
	CHECK(b.tb.burst == 7200);
	CHECK(hcbucket_take(&b, T0) == 0);
	/* a project refilling 10 per second */
	hcbucket_answer(&b, T0, 5000, 200, 7200, 6200, 5100);
	CHECK(b.tb.rate > 9.99 && b.tb.rate < 10.01);
}

TEST(a_429_empties_the_bucket_whatever_the_headers_say)
{
	struct hcbucket b;
	int64_t w;

	hcbucket_init(&b, 3600, 1.0, T0);
	CHECK(hcbucket_take(&b, T0) == 0);
	hcbucket_answer(&b, T0, 5000, 429, 3600, 40, 5000 + 3560);
	CHECK(b.tb.tokens == 0);
	w = hcbucket_take(&b, T0);
	CHECK(w > 999 * NS_PER_MS && w <= 1001 * NS_PER_MS);
	/* then one a second, paced */
	CHECK(hcbucket_take(&b, T0 + NS_PER_S + 1) == 0);
	CHECK(hcbucket_take(&b, T0 + NS_PER_S + 2) > 0);
}

TEST(answers_without_headers_keep_the_model)
{
	struct hcbucket b;

	hcbucket_init(&b, 3600, 1.0, T0);
	CHECK(hcbucket_take(&b, T0) == 0);
	hcbucket_answer(&b, T0, 5000, 200, -1, -1, -1);
	CHECK(b.tb.tokens == 3599);
	CHECK(b.tb.burst == 3600 && b.tb.rate == 1.0 && b.inflight == 0);
	/* refilled, never above the limit */
	CHECK(hcbucket_take(&b, T0 + 100 * NS_PER_S) == 0);
	CHECK(b.tb.tokens == 3599);
}

TEST(a_tiny_limit_still_lets_requests_through)
{
	struct hcbucket b;

	hcbucket_init(&b, 2, 1.0, T0);
	CHECK(hcbucket_reserve(&b) == 1);
	CHECK(hcbucket_take(&b, T0) == 0);
	/* one token left, which is the reserve: paced */
	CHECK(hcbucket_take(&b, T0) == 0);
	CHECK(hcbucket_take(&b, T0) > 0);
}

TEST_MAIN()
