/* test_rfc3339.c - the time parser against Go's time.Parse(time.RFC3339),
 * and the two formats the API server accepts. */
#include <stdint.h>

#include "base/err.h"
#include "harness.h"
#include "base/rfc3339.h"

/* What Go's time.Parse(time.RFC3339, s) answered for each input (Go 1.19,
 * whose parser is the general one every later version falls back to), as
 * Unix seconds and nanoseconds; ok = 0 where it returned an error. */
static const struct {
	const char *s;
	int ok;
	int64_t sec;
	int32_t nsec;
} go_cases[] = {
	{ "2026-11-21T08:00:00Z", 1, 1795248000LL, 0 },
	{ "2026-11-21T08:00:00.000000Z", 1, 1795248000LL, 0 },
	{ "2026-11-21T08:00:00.123456789Z", 1, 1795248000LL, 123456789 },
	{ "2026-11-21T08:00:00.1234567891234Z", 1, 1795248000LL, 123456789 },
	{ "2026-11-21T08:00:00.5Z", 1, 1795248000LL, 500000000 },
	{ "2026-11-21T08:00:00,5Z", 1, 1795248000LL, 500000000 },
	{ "2026-11-21T08:00:00.Z", 0, 0, 0 },
	{ "2026-11-21T08:00:00.5", 0, 0, 0 },
	{ "2026-11-21t08:00:00Z", 0, 0, 0 },
	{ "2026-11-21T08:00:00z", 0, 0, 0 },
	{ "2026-11-21 08:00:00Z", 0, 0, 0 },
	{ "2026-11-21T8:00:00Z", 1, 1795248000LL, 0 },
	{ "2026-11-21T08:0:00Z", 0, 0, 0 },
	{ "2026-11-21T08:00:0Z", 0, 0, 0 },
	{ "2026-1-21T08:00:00Z", 0, 0, 0 },
	{ "2026-11-1T08:00:00Z", 0, 0, 0 },
	{ "26-11-21T08:00:00Z", 0, 0, 0 },
	{ "02026-11-21T08:00:00Z", 0, 0, 0 },
	{ "2026-11-21T24:00:00Z", 0, 0, 0 },
	{ "2026-11-21T23:60:00Z", 0, 0, 0 },
	{ "2026-11-21T23:59:60Z", 0, 0, 0 },
	{ "2026-11-21T23:59:59Z", 1, 1795305599LL, 0 },
	{ "2026-02-29T00:00:00Z", 0, 0, 0 },
	{ "2024-02-29T00:00:00Z", 1, 1709164800LL, 0 },
	{ "2000-02-29T00:00:00Z", 1, 951782400LL, 0 },
	{ "1900-02-29T00:00:00Z", 0, 0, 0 },
	{ "2026-04-31T00:00:00Z", 0, 0, 0 },
	{ "2026-13-01T00:00:00Z", 0, 0, 0 },
	{ "2026-00-01T00:00:00Z", 0, 0, 0 },
	{ "2026-01-00T00:00:00Z", 0, 0, 0 },
	{ "2026-11-21T08:00:00+01:00", 1, 1795244400LL, 0 },
	{ "2026-11-21T08:00:00-07:30", 1, 1795275000LL, 0 },
	{ "2026-11-21T08:00:00+0100", 0, 0, 0 },
	{ "2026-11-21T08:00:00+01", 0, 0, 0 },
	{ "2026-11-21T08:00:00+1:00", 0, 0, 0 },
	{ "2026-11-21T08:00:00 +01:00", 0, 0, 0 },
	{ "2026-11-21T08:00:00+23:59", 1, 1795161660LL, 0 },
	{ "2026-11-21T08:00:00Z ", 0, 0, 0 },
	{ " 2026-11-21T08:00:00Z", 0, 0, 0 },
	{ "2026-11-21T08:00:00ZZ", 0, 0, 0 },
	{ "2026-11-21T08:00:00.123+02:00", 1, 1795240800LL, 123000000 },
	{ "0000-01-01T00:00:00Z", 1, -62167219200LL, 0 },
	{ "9999-12-31T23:59:59Z", 1, 253402300799LL, 0 },
	{ "1970-01-01T00:00:00Z", 1, 0LL, 0 },
	{ "1969-12-31T23:59:59.999999999Z", 1, -1LL, 999999999 },
	{ "2026-11-21T08:00:00", 0, 0, 0 },
	{ "2026-11-21", 0, 0, 0 },
	{ "-2026-11-21T08:00:00Z", 0, 0, 0 },
	{ "+026-11-21T08:00:00Z", 0, 0, 0 },
	{ "2026-11-21T08:00:00.-5Z", 0, 0, 0 },
	{ "2026-11-21T08:00:00.5.5Z", 0, 0, 0 },
	{ "2026-11-21T08:00:00Z07:00", 0, 0, 0 },
	{ "\xef\xbc\x92" "026-11-21T08:00:00Z", 0, 0, 0 },
	{ "2026-11-21T08:00:00.000000000000000000000000001Z", 1, 1795248000LL, 0 },
	{ "2026-11-21T08:00:00-00:00", 1, 1795248000LL, 0 },
	{ "2026-11-21T08:00:00+00:00", 1, 1795248000LL, 0 },
	/* offsets: Go 1.20 and later refuse an hour past 24 and a minute past
	 * 60 and allow those two edges ("some people do write offsets of 24
	 * hours or 60 minutes") */
	{ "2026-11-21T08:00:00+24:00", 1, 1795161600LL, 0 },
	{ "2026-11-21T08:00:00+25:00", 0, 0, 0 },
	{ "2026-11-21T08:00:00-00:60", 1, 1795251600LL, 0 },
	{ "2026-11-21T08:00:00-00:61", 0, 0, 0 },
};

TEST(parses_what_go_parses)
{
	for (size_t i = 0; i < sizeof(go_cases) / sizeof(go_cases[0]); i++) {
		int64_t sec = 42;
		int32_t ns = 42;
		int r = rfc3339_parse(go_cases[i].s, &sec, &ns);
		if (go_cases[i].ok != (r == 0))
			fprintf(stderr, "  case \"%s\": got %d\n", go_cases[i].s, r);
		CHECK(go_cases[i].ok == (r == 0));
		if (r == 0) {
			if (sec != go_cases[i].sec || ns != go_cases[i].nsec)
				fprintf(stderr, "  case \"%s\": got %lld %d\n", go_cases[i].s,
				    (long long)sec, (int)ns);
			CHECK(sec == go_cases[i].sec);
			CHECK(ns == go_cases[i].nsec);
		} else {
			CHECK(r == ERR_INVALID);
			CHECK(sec == 42 && ns == 42);  /* untouched */
		}
	}
	CHECK(rfc3339_parse(NULL, NULL, NULL) == ERR_INVALID);
}

TEST(parse_ns_range)
{
	int64_t ns = 7;

	CHECK(rfc3339_parse_ns("2026-11-21T08:00:00.5Z", &ns) == 0);
	CHECK(ns == 1795248000LL * 1000000000LL + 500000000);
	CHECK(rfc3339_parse_ns("1969-12-31T23:59:59.999999999Z", &ns) == 0);
	CHECK(ns == -1);
	CHECK(rfc3339_parse_ns("2262-04-11T23:47:16.854775807Z", &ns) == 0);
	CHECK(ns == INT64_MAX);
	ns = 7;
	CHECK(rfc3339_parse_ns("2262-04-11T23:47:16.854775808Z", &ns) == ERR_INVALID);
	CHECK(rfc3339_parse_ns("9999-12-31T23:59:59Z", &ns) == ERR_INVALID);
	CHECK(rfc3339_parse_ns("1600-01-01T00:00:00Z", &ns) == ERR_INVALID);
	CHECK(ns == 7);
}

TEST(formats_metav1_time)
{
	char buf[RFC3339_MAX];

	CHECK(rfc3339_format(1795248000LL, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "2026-11-21T08:00:00Z");
	CHECK(rfc3339_format(0, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "1970-01-01T00:00:00Z");
	CHECK(rfc3339_format(-1, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "1969-12-31T23:59:59Z");
	CHECK(rfc3339_format(951782400LL, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "2000-02-29T00:00:00Z");
	CHECK(rfc3339_format(253402300799LL, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "9999-12-31T23:59:59Z");
	CHECK(rfc3339_format(253402300800LL, buf, sizeof(buf)) == ERR_INVALID);
	CHECK_STR(buf, "9999-12-31T23:59:59Z");  /* untouched */
	CHECK(rfc3339_format(0, buf, 20) == ERR_INVALID);
	CHECK(rfc3339_format(0, buf, 21) == 0);
}

TEST(formats_microtime_with_six_digits)
{
	char buf[RFC3339_MAX];
	int64_t back;

	CHECK(rfc3339_format_micro(1795248000LL * 1000000000LL, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "2026-11-21T08:00:00.000000Z");
	CHECK(rfc3339_format_micro(1795248000LL * 1000000000LL + 123456789, buf,
	    sizeof(buf)) == 0);
	CHECK_STR(buf, "2026-11-21T08:00:00.123456Z");  /* truncated, not rounded */
	CHECK(rfc3339_format_micro(-1, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "1969-12-31T23:59:59.999999Z");
	/* round trip at microsecond precision */
	CHECK(rfc3339_parse_ns(buf, &back) == 0);
	CHECK(back == -1000);
	CHECK(rfc3339_format_micro(0, buf, 27) == ERR_INVALID);
	CHECK(rfc3339_format_micro(0, buf, 28) == 0);
}

TEST_MAIN()
