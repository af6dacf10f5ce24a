/* test_uuid.c - version 4 UUIDs: format, version and variant bits, uniqueness. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "base/uuid.h"

static int
uuid_shape_ok(const char *u)
{
	if (strlen(u) != 36)
		return 0;
	for (int i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (u[i] != '-')
				return 0;
		} else if (!((u[i] >= '0' && u[i] <= '9') || (u[i] >= 'a' && u[i] <= 'f'))) {
			return 0;
		}
	}
	return 1;
}

TEST(canonical_form_version_and_variant)
{
	char u[UUID_STR_LEN];

	for (int i = 0; i < 1000; i++) {
		CHECK(uuid_v4(u) == 0);
		CHECK(uuid_shape_ok(u));
		CHECK(u[14] == '4');
		CHECK(strchr("89ab", u[19]) != NULL);
	}
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(a, b);
}

TEST(ten_thousand_are_distinct)
{
	enum { N = 10000 };
	char (*u)[UUID_STR_LEN] = calloc(N, UUID_STR_LEN);

	CHECK(u != NULL);
	for (int i = 0; i < N; i++)
		if (uuid_v4(u[i]) < 0) {
			free(u);
			CHECK(0);
		}
	qsort(u, N, UUID_STR_LEN, cmp_str);
	int dup = 0;
	for (int i = 1; i < N; i++)
		dup |= strcmp(u[i - 1], u[i]) == 0;
	free(u);
	CHECK(!dup);
}

TEST(random_bits_are_spread)
{
	/* every bit position of the random part is set in some and clear in
	 * others: catches a constant or stuck source */
	unsigned char b[16], or_[16] = { 0 }, and_[16];

	memset(and_, 0xff, sizeof(and_));
	for (int i = 0; i < 200; i++) {
		CHECK(uuid_random(b, sizeof(b)) == 0);
		for (int j = 0; j < 16; j++) {
			or_[j] |= b[j];
			and_[j] &= b[j];
		}
	}
	for (int j = 0; j < 16; j++) {
		CHECK(or_[j] == 0xff);
		CHECK(and_[j] == 0);
	}
}

TEST_MAIN()
