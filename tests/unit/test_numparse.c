/* test_numparse.c - the strict integer parser: the whole string, signs only
 * when allowed, Go's base prefixes, the bounds, 64-bit overflow, and the
 * reasons. */
#include <stdint.h>

#include "base/err.h"
#include "harness.h"
#include "base/numparse.h"

static int
np(const char *s, int flags, int64_t min, int64_t max, int64_t *v, const char **why)
{
	*v = 12345;
	*why = "";
	return numparse(s, flags, min, max, v, why);
}

TEST(decimal)
{
	int64_t v;
	const char *why;

	CHECK(np("0", 0, 0, 10, &v, &why) == 0 && v == 0);
	CHECK(np("10", 0, 0, 10, &v, &why) == 0 && v == 10);
	CHECK(np("007", 0, 0, 10, &v, &why) == 0 && v == 7);  /* decimal: zeros lead */
	CHECK(np("9223372036854775807", 0, INT64_MIN, INT64_MAX, &v, &why) == 0 &&
	    v == INT64_MAX);
}

TEST(not_numbers)
{
	int64_t v;
	const char *why;

	CHECK(np("", 0, 0, 10, &v, &why) == ERR_INVALID);
	CHECK_STR(why, "empty");
	CHECK(v == 12345);
	CHECK(numparse(NULL, 0, 0, 10, &v, NULL) == ERR_INVALID);
	const char *bad[] = { " 1", "1 ", "\t1", "1x", "x", "+1", "-1", "1.0", "1e3",
	    "0x10", "1_000", "+", "-" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(np(bad[i], 0, INT64_MIN, INT64_MAX, &v, &why) == ERR_INVALID);
		CHECK_STR(why, "not a number");
		CHECK(v == 12345);
	}
}

TEST(signs)
{
	int64_t v;
	const char *why;

	CHECK(np("-5", NUMPARSE_SIGN, -10, 10, &v, &why) == 0 && v == -5);
	CHECK(np("+5", NUMPARSE_SIGN, -10, 10, &v, &why) == 0 && v == 5);
	CHECK(np("-0", NUMPARSE_SIGN, 0, 0, &v, &why) == 0 && v == 0);
	CHECK(np("--5", NUMPARSE_SIGN, -10, 10, &v, &why) == ERR_INVALID);
	CHECK(np("+-5", NUMPARSE_SIGN, -10, 10, &v, &why) == ERR_INVALID);
	CHECK(np("-", NUMPARSE_SIGN, -10, 10, &v, &why) == ERR_INVALID);
	CHECK_STR(why, "not a number");
	CHECK(np("- 5", NUMPARSE_SIGN, -10, 10, &v, &why) == ERR_INVALID);
	CHECK(np("-9223372036854775808", NUMPARSE_SIGN, INT64_MIN, 0, &v, &why) == 0 &&
	    v == INT64_MIN);
}

TEST(bounds_and_overflow)
{
	int64_t v;
	const char *why;

	CHECK(np("11", 0, 0, 10, &v, &why) == ERR_INVALID);
	CHECK_STR(why, "out of range");
	CHECK(np("0", 0, 1, 10, &v, &why) == ERR_INVALID);
	CHECK_STR(why, "out of range");
	CHECK(np("-11", NUMPARSE_SIGN, -10, 10, &v, &why) == ERR_INVALID);
	CHECK_STR(why, "out of range");
	CHECK(np("9223372036854775808", 0, INT64_MIN, INT64_MAX, &v, &why) == ERR_INVALID);
	CHECK_STR(why, "out of range");
	CHECK(np("-9223372036854775809", NUMPARSE_SIGN, INT64_MIN, INT64_MAX, &v, &why) ==
	    ERR_INVALID);
	CHECK_STR(why, "out of range");
	CHECK(np("99999999999999999999999999", 0, 0, INT64_MAX, &v, &why) == ERR_INVALID);
	CHECK_STR(why, "out of range");
	/* past 64 bits, but not a number after all */
	CHECK(np("99999999999999999999999999x", 0, 0, INT64_MAX, &v, &why) == ERR_INVALID);
	CHECK_STR(why, "not a number");
	CHECK(v == 12345);
}

TEST(go_base_prefixes)
{
	int64_t v;
	const char *why;
	int f = NUMPARSE_SIGN | NUMPARSE_PREFIX;

	CHECK(np("0x1F", f, INT32_MIN, INT32_MAX, &v, &why) == 0 && v == 31);
	CHECK(np("0X1f", f, INT32_MIN, INT32_MAX, &v, &why) == 0 && v == 31);
	CHECK(np("0o17", f, INT32_MIN, INT32_MAX, &v, &why) == 0 && v == 15);
	CHECK(np("017", f, INT32_MIN, INT32_MAX, &v, &why) == 0 && v == 15);
	CHECK(np("0b101", f, INT32_MIN, INT32_MAX, &v, &why) == 0 && v == 5);
	CHECK(np("-0x10", f, INT32_MIN, INT32_MAX, &v, &why) == 0 && v == -16);
	CHECK(np("0", f, INT32_MIN, INT32_MAX, &v, &why) == 0 && v == 0);
	CHECK(np("-2147483648", f, INT32_MIN, INT32_MAX, &v, &why) == 0 && v == INT32_MIN);
	CHECK(np("2147483648", f, INT32_MIN, INT32_MAX, &v, &why) == ERR_INVALID);
	CHECK_STR(why, "out of range");
	const char *bad[] = { "0x", "0b", "0o", "08", "0b2", "0xg", "0x-1", "0x+1", "00x1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(np(bad[i], f, INT32_MIN, INT32_MAX, &v, &why) == ERR_INVALID);
		CHECK_STR(why, "not a number");
	}
	CHECK(np("0xffffffffffffffff", f, INT64_MIN, INT64_MAX, &v, &why) == ERR_INVALID);
	CHECK_STR(why, "out of range");
	CHECK(np("0x7fffffffffffffff", f, INT64_MIN, INT64_MAX, &v, &why) == 0 &&
	    v == INT64_MAX);
}

TEST_MAIN()
