/* test_urlesc.c - the URL escaper: Go's PathEscape and QueryEscape, the
 * strict unreserved form, empty input, bytes past ASCII and the buffer's
 * cap. */
#include <stdlib.h>

#include "base/dynbuf.h"
#include "base/err.h"
#include "harness.h"
#include "base/urlesc.h"

static void
esc_check(int *harness_failed, const char *s, int how, const char *want)
{
	char *got = urlesc_dup(s, how);

	CHECK_STR(got, want);
	free(got);
}
#define ESC(s, how, want) esc_check(harness_failed, s, how, want)

TEST(unreserved_stay)
{
	const char *u = "AZaz09-_.~";

	ESC(u, URLESC_UNRESERVED, u);
	ESC(u, URLESC_SEGMENT, u);
	ESC(u, URLESC_QUERY, u);
	ESC("", URLESC_UNRESERVED, "");
	ESC("", URLESC_QUERY, "");
}

TEST(segment_like_go_path_escape)
{
	ESC("a b/c?d#e%f", URLESC_SEGMENT, "a%20b%2Fc%3Fd%23e%25f");
	ESC("$&+:=@", URLESC_SEGMENT, "$&+:=@");
	ESC(",;", URLESC_SEGMENT, "%2C%3B");
}

TEST(query_like_go_query_escape)
{
	ESC("app in (a, b)", URLESC_QUERY, "app+in+%28a%2C+b%29");
	ESC("$&+:=@/", URLESC_QUERY, "%24%26%2B%3A%3D%40%2F");
}

TEST(strict)
{
	ESC("a b+c=d", URLESC_UNRESERVED, "a%20b%2Bc%3Dd");
	ESC("\xc3\xa9\x01\x7f\xff", URLESC_UNRESERVED, "%C3%A9%01%7F%FF");
}

TEST(cap_reached)
{
	struct dynbuf b;

	dynbuf_init(&b, 5);
	CHECK(urlesc(&b, "ab", URLESC_QUERY) == 0);
	CHECK(urlesc(&b, " ", URLESC_QUERY) == 0);
	CHECK(urlesc(&b, "/", URLESC_QUERY) == ERR_TOO_LARGE);
	dynbuf_free(&b);
}

TEST_MAIN()
