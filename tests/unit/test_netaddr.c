/* test_netaddr.c - address and prefix parsing as Go and the API server do
 * it, canonical text, ordering, arithmetic at the edges, containment. */
#include <stdint.h>

#include "base/err.h"
#include "harness.h"
#include "base/netaddr.h"

TEST(parses_and_canonicalizes)
{
	struct netaddr a;
	char buf[NETADDR_TEXT_MAX];

	CHECK(netaddr_parse("192.0.2.1", &a) == 0);
	CHECK(a.family == 4);
	netaddr_format(&a, buf);
	CHECK_STR(buf, "192.0.2.1");
	CHECK(netaddr_canonical("2001:DB8:0:0:0:0:0:1", buf) == 0);
	CHECK_STR(buf, "2001:db8::1");
	CHECK(netaddr_canonical("::ffff:192.0.2.1", buf) == 0);
	CHECK(netaddr_parse("0.0.0.0", &a) == 0);
	static const char *bad[] = {
		"", "1.2.3", "1.2.3.4.5", "010.0.0.1", "1.2.3.04", "256.0.0.1", "1.2.3.4 ",
		" 1.2.3.4", "1..2.3", "fe80::1%eth0", "[::1]", "::g", "1.2.3.-1", "0x1.2.3.4",
	};
	a.family = 99;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (netaddr_parse(bad[i], &a) != ERR_INVALID)
			fprintf(stderr, "  accepted \"%s\"\n", bad[i]);
		CHECK(netaddr_parse(bad[i], &a) == ERR_INVALID);
	}
	CHECK(a.family == 99);
	CHECK(netaddr_parse(NULL, &a) == ERR_INVALID);
}

TEST(orders_and_counts)
{
	struct netaddr a, b, c;

	CHECK(netaddr_parse("10.0.0.255", &a) == 0);
	CHECK(netaddr_parse("10.0.1.0", &b) == 0);
	CHECK(netaddr_cmp(&a, &b) < 0);
	c = a;
	CHECK(netaddr_add(&c, 1) == 0);
	CHECK(netaddr_cmp(&c, &b) == 0);
	CHECK(netaddr_distance(&a, &b) == 2);
	CHECK(netaddr_distance(&a, &a) == 1);
	CHECK(netaddr_parse("255.255.255.255", &c) == 0);
	CHECK(netaddr_add(&c, 1) == -1);
	CHECK(netaddr_parse("::1", &b) == 0);
	CHECK(netaddr_cmp(&a, &b) < 0);  /* IPv4 first */
	CHECK(netaddr_parse("2001:db8::", &a) == 0);
	CHECK(netaddr_parse("2001:db8::ffff:ffff:ffff:ffff", &b) == 0);
	CHECK(netaddr_distance(&a, &b) == UINT64_MAX);  /* 2^64 saturates */
	CHECK(netaddr_parse("2001:db8::ffff:ffff:ffff:fffe", &b) == 0);
	CHECK(netaddr_distance(&a, &b) == UINT64_MAX);  /* exactly 2^64 - 1 */
	CHECK(netaddr_parse("2001:db8::1:0:0:0:0", &b) == 0);
	CHECK(netaddr_distance(&a, &b) == UINT64_MAX);
	c = a;
	CHECK(netaddr_add(&c, UINT64_MAX) == 0);
	char buf[NETADDR_TEXT_MAX];
	netaddr_format(&c, buf);
	CHECK_STR(buf, "2001:db8::ffff:ffff:ffff:ffff");
	CHECK(netaddr_add(&c, 1) == 0);
	netaddr_format(&c, buf);
	CHECK_STR(buf, "2001:db8:0:1::");
}

/* netaddr_count: exact where a double is, never saturated. */
TEST(counts_as_doubles)
{
	struct netaddr a, b;

	CHECK(netaddr_parse("10.0.0.255", &a) == 0 && netaddr_parse("10.0.1.0", &b) == 0);
	CHECK(netaddr_count(&a, &b) == 2.0 && netaddr_count(&a, &a) == 1.0);
	CHECK(netaddr_parse("0.0.0.0", &a) == 0 && netaddr_parse("255.255.255.255", &b) == 0);
	CHECK(netaddr_count(&a, &b) == 4294967296.0);
	CHECK(netaddr_parse("::", &a) == 0 &&
	    netaddr_parse("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", &b) == 0);
	CHECK(netaddr_count(&a, &b) == 340282366920938463463374607431768211456.0);
	CHECK(netaddr_parse("2001:db8::", &a) == 0 &&
	    netaddr_parse("2001:db8::ffff:ffff:ffff:ffff", &b) == 0);
	CHECK(netaddr_count(&a, &b) == 18446744073709551616.0);
	CHECK(netaddr_parse("2001:db8::1f:ffff:ffff:ffff", &b) == 0);
	CHECK(netaddr_count(&a, &b) == 9007199254740992.0);  /* 2^53, exact */
}

TEST(prefixes)
{
	struct netprefix p, q;
	struct netaddr a;
	char buf[NETPREFIX_TEXT_MAX];

	CHECK(netprefix_parse("10.244.0.0/16", 1, &p) == 0);
	CHECK(p.bits == 16);
	CHECK(netprefix_parse("10.244.1.7/16", 1, &q) == ERR_INVALID);   /* host bits */
	CHECK(netprefix_parse("10.244.1.7/16", 0, &q) == 0);             /* Go clears them */
	netprefix_format(&q, buf);
	CHECK_STR(buf, "10.244.0.0/16");
	CHECK(netprefix_parse("10.244.3.0/24", 1, &q) == 0);
	CHECK(netprefix_covers(&p, &q));
	CHECK(!netprefix_covers(&q, &p));
	CHECK(netaddr_parse("10.244.255.255", &a) == 0);
	CHECK(netprefix_contains(&p, &a));
	CHECK(netaddr_parse("10.245.0.0", &a) == 0);
	CHECK(!netprefix_contains(&p, &a));
	netprefix_last(&p, &a);
	netaddr_format(&a, buf);
	CHECK_STR(buf, "10.244.255.255");
	CHECK(netprefix_parse("2001:db8:1::/124", 1, &p) == 0);
	netprefix_last(&p, &a);
	netaddr_format(&a, buf);
	CHECK_STR(buf, "2001:db8:1::f");
	CHECK(netprefix_parse("0.0.0.0/0", 1, &p) == 0);
	CHECK(netprefix_parse("::/0", 1, &p) == 0);
	static const char *bad[] = { "10.0.0.0", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/",
	    "10.0.0.0/08", "::/129", "10.0.0.0/24x", "/24", "10.0.0.0/ 24" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(netprefix_parse(bad[i], 0, &p) == ERR_INVALID);
	CHECK(netprefix_parse("10.0.0.0/8", 1, &p) == 0);
	CHECK(netprefix_parse("2001:db8::/32", 1, &q) == 0);
	CHECK(!netprefix_covers(&p, &q));   /* families differ */
}

TEST_MAIN()
