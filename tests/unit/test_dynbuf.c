/* test_dynbuf.c - the capped buffer: appends, the cap as a hard bound that
 * leaves the content intact, formatting, truncation and handing over. */
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "base/err.h"
#include "harness.h"

TEST(appends_and_terminates)
{
	struct dynbuf b;

	dynbuf_init(&b, 1024);
	CHECK_STR(dynbuf_ptr(&b), "");
	CHECK(dynbuf_len(&b) == 0);
	CHECK(dynbuf_add(&b, "ab", 2) == 0);
	CHECK(dynbuf_addstr(&b, "cd") == 0);
	CHECK(dynbuf_addf(&b, "-%d-%s", 42, "x") == 0);
	CHECK_STR(dynbuf_ptr(&b), "abcd-42-x");
	CHECK(dynbuf_len(&b) == 9);
	CHECK(dynbuf_add(&b, "\0z", 2) == 0);  /* binary content is fine */
	CHECK(dynbuf_len(&b) == 11);
	CHECK(memcmp(dynbuf_ptr(&b) + 9, "\0z", 3) == 0);
	dynbuf_free(&b);
	CHECK(dynbuf_len(&b) == 0);
	CHECK_STR(dynbuf_ptr(&b), "");
}

TEST(cap_is_a_hard_bound)
{
	struct dynbuf b;
	char big[100];

	memset(big, 'x', sizeof(big));
	dynbuf_init(&b, 10);
	CHECK(dynbuf_add(&b, big, 10) == 0);  /* exactly the cap */
	CHECK(dynbuf_add(&b, big, 1) == ERR_TOO_LARGE);
	CHECK(dynbuf_len(&b) == 10);         /* untouched */
	CHECK(dynbuf_addf(&b, "%s", "y") == ERR_TOO_LARGE);
	CHECK(dynbuf_len(&b) == 10);
	CHECK(b.alloc <= 11);                 /* never more than cap + NUL */
	dynbuf_reset(&b);
	CHECK(dynbuf_add(&b, big, 11) == ERR_TOO_LARGE);
	CHECK(dynbuf_len(&b) == 0);
	CHECK(dynbuf_add(&b, big, (size_t)-1) == ERR_TOO_LARGE);  /* no overflow */
	dynbuf_free(&b);
}

TEST(grows_across_many_appends)
{
	struct dynbuf b;

	dynbuf_init(&b, 1 << 20);
	for (int i = 0; i < 10000; i++)
		CHECK(dynbuf_addf(&b, "%04d", i % 10000) == 0);
	CHECK(dynbuf_len(&b) == 40000);
	CHECK(memcmp(dynbuf_ptr(&b) + 39996, "9999", 4) == 0);
	dynbuf_truncate(&b, 4);
	CHECK_STR(dynbuf_ptr(&b), "0000");
	dynbuf_truncate(&b, 100);  /* past the end: nothing */
	CHECK(dynbuf_len(&b) == 4);
	dynbuf_free(&b);
}

TEST(take_hands_over)
{
	struct dynbuf b;
	size_t n = 99;
	char *s;

	dynbuf_init(&b, 100);
	s = dynbuf_take(&b, &n);  /* empty: still a string */
	CHECK_STR(s, "");
	CHECK(n == 0);
	free(s);
	dynbuf_addstr(&b, "hello");
	s = dynbuf_take(&b, &n);
	CHECK_STR(s, "hello");
	CHECK(n == 5);
	CHECK(dynbuf_len(&b) == 0);
	CHECK(dynbuf_add(&b, "again", 5) == 0);  /* reusable, cap kept */
	CHECK(dynbuf_add(&b, s, 96) == ERR_TOO_LARGE);
	free(s);
	dynbuf_free(&b);
}

TEST_MAIN()
