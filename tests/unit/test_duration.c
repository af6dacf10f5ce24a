/* test_duration.c - Go durations: parsing as time.ParseDuration, printing
 * as time.Duration.String. */
#include <stdint.h>

#include "base/clock.h"
#include "base/duration.h"
#include "base/err.h"
#include "harness.h"

TEST(durations)
{
	int64_t ns;
	CHECK(duration_parse("15s", &ns) == 0 && ns == 15 * NS_PER_S);
	CHECK(duration_parse("5m", &ns) == 0 && ns == 300 * NS_PER_S);
	CHECK(duration_parse("1h30m", &ns) == 0 && ns == 5400 * NS_PER_S);
	CHECK(duration_parse("1.5h", &ns) == 0 && ns == 5400 * NS_PER_S);
	CHECK(duration_parse("300ms", &ns) == 0 && ns == 300 * NS_PER_MS);
	CHECK(duration_parse("2us", &ns) == 0 && ns == 2000);
	CHECK(duration_parse("2\xc2\xb5s", &ns) == 0 && ns == 2000);
	CHECK(duration_parse("7ns", &ns) == 0 && ns == 7);
	CHECK(duration_parse("0", &ns) == 0 && ns == 0);
	CHECK(duration_parse("-2s", &ns) == 0 && ns == -2 * NS_PER_S);
	CHECK(duration_parse("1h2m3s4ms", &ns) == 0 &&
	    ns == 3723 * NS_PER_S + 4 * NS_PER_MS);
	CHECK(duration_parse("", &ns) == ERR_INVALID);
	CHECK(duration_parse("15", &ns) == ERR_INVALID);
	CHECK(duration_parse("s", &ns) == ERR_INVALID);
	CHECK(duration_parse("1d", &ns) == ERR_INVALID);
	CHECK(duration_parse("1.s", &ns) == 0 && ns == NS_PER_S);
	CHECK(duration_parse(".", &ns) == ERR_INVALID);
	CHECK(duration_parse("3000000h", &ns) == ERR_INVALID); /* overflows int64 ns */
	CHECK(duration_parse("9999999999999999999999s", &ns) == ERR_INVALID);
}

TEST(duration_format_like_go)
{
	char b[64];
	duration_format(15 * NS_PER_S, b, sizeof(b)); CHECK_STR(b, "15s");
	duration_format(300 * NS_PER_S, b, sizeof(b)); CHECK_STR(b, "5m0s");
	duration_format(5400 * NS_PER_S, b, sizeof(b)); CHECK_STR(b, "1h30m0s");
	duration_format(1500 * NS_PER_MS, b, sizeof(b)); CHECK_STR(b, "1.5s");
	duration_format(300 * NS_PER_MS, b, sizeof(b)); CHECK_STR(b, "300ms");
	duration_format(0, b, sizeof(b)); CHECK_STR(b, "0s");
	duration_format(-2 * NS_PER_S, b, sizeof(b)); CHECK_STR(b, "-2s");
	duration_format(12, b, sizeof(b)); CHECK_STR(b, "12ns");
}

/* duration_check: the bounds inclusive, the message naming the flag, the
 * value and the bounds, at the 64-bit extremes too. */
TEST(check_names_the_flag_and_bounds)
{
	struct errbuf e;
	const int64_t h = 3600LL * 1000000000LL;

	CHECK(duration_check("p", 1, 1, h, &e) == 0 && duration_check("p", h, 1, h, &e) == 0);
	CHECK(duration_check("p", h + 1, 1, h, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "--p 1h0m0.000000001s: must be greater than zero and at most 1h0m0s");
	CHECK(duration_check("p", 0, 1, h, &e) == ERR_INVALID);
	CHECK(duration_check("p", 0, 0, h, &e) == 0);
	CHECK(duration_check("p", INT64_MAX, 0, h, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "--p 2562047h47m16.854775807s: must be zero or more and at most 1h0m0s");
	CHECK(duration_check("p", INT64_MIN, 0, h, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "--p -2562047h47m16.854775808s: must be zero or more");
	CHECK(duration_check("p", 1000, 2000000000LL, h, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "--p 1\xc2\xb5s: must be at least 2s and at most 1h0m0s");
}

TEST_MAIN()
