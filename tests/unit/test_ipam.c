/* test_ipam.c - the static provider's allocator against its contract: pool
 * entries, overlap, first free, exhaustion and freeing, requested addresses
 * and the older requester, sharing keys and port overlap, namespaces and
 * autoAssign, families, no preemption, a quiet restart, and MetalLB's
 * recurring bugs (double assignment after a restart, an address that moves
 * when another Service goes). */
#include <stdio.h>
#include <string.h>

#include "../../providers/static/ipam.h"
#include "base/err.h"
#include "harness.h"

static struct ipam_range
rng(const char *s)
{
	struct ipam_range r;
	struct errbuf e;

	if (ipam_range_parse(s, &r, &e) < 0) {
		fprintf(stderr, "bad range %s: %s\n", s, e.msg);
		memset(&r, 0, sizeof(r));
	}
	return r;
}

/* A Service under test: defaults for everything, fields set per test. */
struct tsvc {
	struct ipam_service s;
	const char *held[4];
	const char *req[2];
	struct ipam_port ports[4];
};

static void
tsvc_init(struct tsvc *t, const char *key, int64_t created)
{
	static char ns[16][64];
	static int nsi;
	char *slash = strchr(key, '/');

	memset(t, 0, sizeof(*t));
	snprintf(ns[nsi % 16], sizeof(ns[0]), "%.*s", (int)(slash - key), key);
	t->s.key = key;
	t->s.namespace = ns[nsi++ % 16];
	t->s.created = created;
	t->s.served = 1;
	t->s.held = t->held;
	t->s.requested = t->req;
	t->s.ports = t->ports;
	t->ports[0].port = 80;
	snprintf(t->ports[0].protocol, sizeof(t->ports[0].protocol), "TCP");
	t->s.n_ports = 1;
	t->s.selector = "app=x";
	t->s.families[0] = 4;
	t->s.n_families = 1;
	t->s.policy = IPAM_SINGLE_STACK;
}

static struct ipam *
one_pool(const char *const *entries, size_t n)
{
	struct ipam_range r[8];
	struct ipam_pool_config p = { "public", r, n, NULL, 0, 1 };
	struct ipam *m = NULL;
	struct errbuf e;

	for (size_t i = 0; i < n; i++)
		r[i] = rng(entries[i]);
	if (ipam_new(&p, 1, &m, &e) < 0)
		fprintf(stderr, "ipam_new: %s\n", e.msg);
	return m;
}

TEST(pool_entries)
{
	struct ipam_range r;
	struct errbuf e;
	char a[NETADDR_TEXT_MAX], b[NETADDR_TEXT_MAX];

	CHECK(ipam_range_parse("192.0.2.0/28", &r, &e) == 0);
	netaddr_format(&r.first, a);
	netaddr_format(&r.last, b);
	CHECK_STR(a, "192.0.2.1");   /* no network address */
	CHECK_STR(b, "192.0.2.14");  /* no broadcast address */
	CHECK(ipam_range_parse("192.0.2.128/25", &r, &e) == 0);
	netaddr_format(&r.last, b);
	CHECK_STR(b, "192.0.2.254");
	CHECK(ipam_range_parse("192.0.2.4/31", &r, &e) == 0);
	netaddr_format(&r.first, a);
	netaddr_format(&r.last, b);
	CHECK_STR(a, "192.0.2.4");
	CHECK_STR(b, "192.0.2.5");
	CHECK(ipam_range_parse("192.0.2.9/32", &r, &e) == 0);
	CHECK(netaddr_cmp(&r.first, &r.last) == 0);
	CHECK(ipam_range_parse("198.51.100.10-198.51.100.20", &r, &e) == 0);
	netaddr_format(&r.first, a);
	CHECK_STR(a, "198.51.100.10");  /* every address of a range */
	CHECK(ipam_range_parse("2001:db8:1::/124", &r, &e) == 0);
	netaddr_format(&r.first, a);
	netaddr_format(&r.last, b);
	CHECK_STR(a, "2001:db8:1::");
	CHECK_STR(b, "2001:db8:1::f");
	CHECK(ipam_range_parse("192.0.2.5", &r, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "write it as 192.0.2.5/32");
	CHECK(ipam_range_parse("192.0.2.1/28", &r, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "host bits");
	CHECK(ipam_range_parse("10.0.0.9-10.0.0.1", &r, &e) == ERR_INVALID);
	CHECK(ipam_range_parse("10.0.0.1-2001:db8::1", &r, &e) == ERR_INVALID);
	CHECK(ipam_range_parse("10.0.0.1-", &r, &e) == ERR_INVALID);
	CHECK(ipam_range_parse("pool", &r, &e) == ERR_INVALID);
}

/* The ranges that hold half a family or more, which the provider warns of. */
TEST(huge_ranges)
{
	static const char *const huge[] = { "0.0.0.0/0", "0.0.0.0/1", "128.0.0.0/1", "::/0",
	    "::/1", "8000::/1", "0.0.0.0-255.255.255.255" };
	static const char *const fine[] = { "0.0.0.0/2", "10.0.0.0/8", "::/2", "2001:db8::/64",
	    "192.0.2.1-192.0.2.1" };
	struct ipam_range r;
	struct errbuf e;

	for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
		CHECK(ipam_range_parse(huge[i], &r, &e) == 0);
		CHECK(ipam_range_huge(&r));
	}
	for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		CHECK(ipam_range_parse(fine[i], &r, &e) == 0);
		CHECK(!ipam_range_huge(&r));
	}
}

TEST(overlapping_pools_are_refused_naming_both)
{
	struct ipam_range a[2] = { rng("192.0.2.0/28"), rng("10.0.0.1-10.0.0.5") };
	struct ipam_range b[1] = { rng("192.0.2.10-192.0.2.20") };
	struct ipam_range c[1] = { rng("192.0.2.16/28") };
	struct ipam_pool_config p[2] = { { "public", a, 2, NULL, 0, 1 },
	    { "private", b, 1, NULL, 0, 1 } };
	struct ipam *m = NULL;
	struct errbuf e;

	CHECK(ipam_new(p, 2, &m, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "pools \"public\" and \"private\" overlap");
	p[1].ranges = c;
	CHECK(ipam_new(p, 2, &m, &e) == 0);  /* .1-.14 and .17-.30 do not */
	ipam_free(m);
	p[1].name = "public";
	CHECK(ipam_new(p, 2, &m, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "two pools are named");
}

TEST(first_free_then_exhausted_then_freed)
{
	static const char *entries[] = { "192.0.2.0/30" };  /* .1 and .2 */
	struct ipam *m = one_pool(entries, 1);
	struct tsvc a, b, c;
	struct ipam_result r;
	struct errbuf e;

	CHECK(m != NULL);
	tsvc_init(&a, "ns/a", 100);
	tsvc_init(&b, "ns/b", 200);
	tsvc_init(&c, "ns/c", 300);
	CHECK(ipam_assign(m, &a.s, &r, &e) == 0);
	CHECK(r.n == 1 && r.changed);
	CHECK_STR(r.addresses[0], "192.0.2.1");
	CHECK_STR(r.pools[0], "public");
	CHECK(ipam_assign(m, &b.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.2");
	CHECK(ipam_assign(m, &c.s, &r, &e) == ERR_UNAVAILABLE);
	CHECK_CONTAINS(e.msg, "exhausted");
	/* the same Service again: the same answer, nothing moves */
	CHECK(ipam_assign(m, &a.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.1");
	/* a's status shows it; then a goes: its release frees nothing while the
	 * status still holds the address, the deletion frees it */
	a.held[0] = "192.0.2.1";
	a.s.n_held = 1;
	CHECK(ipam_observe(m, "ns/a", &a.s) == 0);
	CHECK(ipam_release(m, "ns/a") == 0);
	CHECK(ipam_assign(m, &c.s, &r, &e) == ERR_UNAVAILABLE);
	CHECK(ipam_observe(m, "ns/a", NULL) == 1);
	CHECK(ipam_assign(m, &c.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.1");
	ipam_free(m);
}

TEST(requested_address_and_the_older_requester)
{
	static const char *entries[] = { "192.0.2.0/28" };
	struct ipam *m = one_pool(entries, 1);
	struct tsvc old, young, other;
	struct ipam_result r;
	struct errbuf e;

	tsvc_init(&old, "ns/old", 100);
	tsvc_init(&young, "ns/young", 200);
	old.req[0] = young.req[0] = "192.0.2.7";
	old.s.n_requested = young.s.n_requested = 1;
	/* both known; the younger syncs first and is refused in favour of the
	 * older one, which has not taken it yet */
	ipam_observe(m, "ns/old", &old.s);
	CHECK(ipam_assign(m, &young.s, &r, &e) == ERR_UNAVAILABLE);
	CHECK_STR(e.msg, "requested address 192.0.2.7 is also requested by the older "
	    "Service ns/old");
	CHECK(ipam_assign(m, &old.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.7");
	CHECK(ipam_assign(m, &young.s, &r, &e) == ERR_UNAVAILABLE);
	CHECK_STR(e.msg, "address 192.0.2.7 is taken by ns/old");
	/* auto-assignment never hands out an address someone asked for */
	tsvc_init(&other, "ns/other", 50);
	CHECK(ipam_assign(m, &other.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.1");
	/* no preemption: an older Service asking later for a held address
	 * does not get it */
	struct tsvc oldest;
	tsvc_init(&oldest, "ns/oldest", 1);
	oldest.req[0] = "192.0.2.1";
	oldest.s.n_requested = 1;
	CHECK(ipam_assign(m, &oldest.s, &r, &e) == ERR_UNAVAILABLE);
	CHECK_STR(e.msg, "address 192.0.2.1 is taken by ns/other");
	/* outside every pool, or beside a bad value */
	oldest.req[0] = "203.0.113.1";
	CHECK(ipam_assign(m, &oldest.s, &r, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "requested address 203.0.113.1 is in no pool");
	oldest.req[0] = "not-an-ip";
	CHECK(ipam_assign(m, &oldest.s, &r, &e) == ERR_INVALID);
	ipam_free(m);
}

TEST(sharing_by_key_unless_ports_overlap)
{
	static const char *entries[] = { "192.0.2.0/28" };
	struct ipam *m = one_pool(entries, 1);
	struct tsvc web, dns, web2, udp, local;
	struct ipam_result r;
	struct errbuf e;

	tsvc_init(&web, "ns/web", 100);
	tsvc_init(&dns, "ns/dns", 200);
	web.s.sharing_key = dns.s.sharing_key = "k";
	dns.ports[0].port = 53;
	CHECK(ipam_assign(m, &web.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.1");
	CHECK(ipam_assign(m, &dns.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.1");  /* shared, as preferred */
	/* TCP/80 again: overlap; auto-assigned elsewhere */
	tsvc_init(&web2, "ns/web2", 300);
	web2.s.sharing_key = "k";
	CHECK(ipam_assign(m, &web2.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.2");
	/* asked for the shared address with an overlapping port: refused,
	 * naming the Service it overlaps */
	web2.req[0] = "192.0.2.1";
	web2.s.n_requested = 1;
	CHECK(ipam_assign(m, &web2.s, &r, &e) == ERR_UNAVAILABLE);
	CHECK_STR(e.msg, "address 192.0.2.1: ports overlap with the sharing Service ns/web");
	CHECK_STR(r.addresses[0], "192.0.2.2");  /* untouched on failure */
	/* UDP/80 does not overlap TCP/80 */
	tsvc_init(&udp, "ns/udp", 400);
	udp.s.sharing_key = "k";
	snprintf(udp.ports[0].protocol, sizeof(udp.ports[0].protocol), "UDP");
	udp.req[0] = "192.0.2.1";
	udp.s.n_requested = 1;
	CHECK(ipam_assign(m, &udp.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.1");
	/* externalTrafficPolicy: Local with another selector cannot share */
	tsvc_init(&local, "ns/local", 500);
	local.s.sharing_key = "k";
	local.s.etp_local = 1;
	local.s.selector = "app=y";
	local.ports[0].port = 8443;
	local.req[0] = "192.0.2.1";
	local.s.n_requested = 1;
	CHECK(ipam_assign(m, &local.s, &r, &e) == ERR_UNAVAILABLE);
	CHECK_CONTAINS(e.msg, "externalTrafficPolicy: Local");
	local.s.selector = "app=x";  /* the same selector: fine */
	CHECK(ipam_assign(m, &local.s, &r, &e) == 0);
	/* without a key nobody shares */
	struct tsvc nokey;
	tsvc_init(&nokey, "ns/nokey", 600);
	nokey.ports[0].port = 9999;
	nokey.req[0] = "192.0.2.1";
	nokey.s.n_requested = 1;
	CHECK(ipam_assign(m, &nokey.s, &r, &e) == ERR_UNAVAILABLE);
	/* a shared address counts once */
	const char *name;
	uint64_t used[2];
	double size[2];
	CHECK(ipam_pool_usage(m, 0, &name, used, size) == 0);
	CHECK_STR(name, "public");
	CHECK(used[0] == 2 && size[0] == 14 && used[1] == 0 && size[1] == 0);
	CHECK(ipam_pool_usage(m, 1, &name, used, size) == ERR_NOT_FOUND);
	ipam_free(m);
}

TEST(namespaces_autoassign_and_requested_pools)
{
	struct ipam_range pub[1] = { rng("192.0.2.0/29") };
	struct ipam_range team[1] = { rng("198.51.100.0/29") };
	struct ipam_range manual[1] = { rng("203.0.113.0/29") };
	const char *teams[] = { "team-a" };
	struct ipam_pool_config p[3] = {
		{ "team", team, 1, teams, 1, 1 },
		{ "public", pub, 1, NULL, 0, 1 },
		{ "manual", manual, 1, NULL, 0, 0 },
	};
	struct ipam *m = NULL;
	struct tsvc a, b, c;
	struct ipam_result r;
	struct errbuf e;

	CHECK(ipam_new(p, 3, &m, &e) == 0);
	tsvc_init(&a, "team-a/svc", 1);
	tsvc_init(&b, "team-b/svc", 2);
	CHECK(ipam_assign(m, &a.s, &r, &e) == 0);
	CHECK_STR(r.pools[0], "team");   /* the first pool it may use */
	CHECK(ipam_assign(m, &b.s, &r, &e) == 0);
	CHECK_STR(r.pools[0], "public"); /* team is not for team-b */
	b.s.pool = "team";
	CHECK(ipam_assign(m, &b.s, &r, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "requested pool team does not allow namespace team-b");
	b.s.pool = "nope";
	CHECK(ipam_assign(m, &b.s, &r, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "requested pool nope does not exist");
	/* autoAssign: false - only when asked for, by pool or by address */
	tsvc_init(&c, "team-b/c", 3);
	b.s.pool = "manual";
	CHECK(ipam_assign(m, &b.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "203.0.113.1");
	c.req[0] = "203.0.113.5";
	c.s.n_requested = 1;
	CHECK(ipam_assign(m, &c.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "203.0.113.5");
	c.s.pool = "public";
	CHECK(ipam_assign(m, &c.s, &r, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "requested address 203.0.113.5 is in pool manual, not in the "
	    "requested pool public");
	c.s.pool = NULL;
	c.req[0] = "198.51.100.3";
	CHECK(ipam_assign(m, &c.s, &r, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "which namespace team-b may not use");
	ipam_free(m);
}

TEST(families)
{
	struct ipam_range v4[1] = { rng("192.0.2.0/30") };
	struct ipam_range v6[1] = { rng("2001:db8::/126") };
	struct ipam_pool_config p4 = { "v4", v4, 1, NULL, 0, 1 };
	struct ipam_pool_config both[2] = { { "v4", v4, 1, NULL, 0, 1 },
	    { "v6", v6, 1, NULL, 0, 1 } };
	struct ipam *m = NULL;
	struct tsvc s;
	struct ipam_result r;
	struct errbuf e;

	CHECK(ipam_new(&p4, 1, &m, &e) == 0);
	tsvc_init(&s, "ns/s", 1);
	s.s.families[0] = 4;
	s.s.families[1] = 6;
	s.s.n_families = 2;
	s.s.policy = IPAM_REQUIRE_DUAL_STACK;
	CHECK(ipam_assign(m, &s.s, &r, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "RequireDualStack: no pool gives IPv6 addresses to namespace ns "
	    "automatically");
	s.s.policy = IPAM_PREFER_DUAL_STACK;
	CHECK(ipam_assign(m, &s.s, &r, &e) == 0);
	CHECK(r.n == 1);
	CHECK_STR(r.addresses[0], "192.0.2.1");
	ipam_free(m);

	CHECK(ipam_new(both, 2, &m, &e) == 0);
	s.s.families[0] = 6;  /* ipFamilies order decides the order */
	s.s.families[1] = 4;
	s.s.policy = IPAM_REQUIRE_DUAL_STACK;
	CHECK(ipam_assign(m, &s.s, &r, &e) == 0);
	CHECK(r.n == 2);
	CHECK_STR(r.addresses[0], "2001:db8::");
	CHECK_STR(r.addresses[1], "192.0.2.1");
	s.s.policy = IPAM_SINGLE_STACK;  /* the first family only */
	CHECK(ipam_assign(m, &s.s, &r, &e) == 0);
	CHECK(r.n == 1);
	CHECK_STR(r.addresses[0], "2001:db8::");
	/* a requested address covers its family; a missing one fails Require */
	struct tsvc q;
	tsvc_init(&q, "ns/q", 2);
	q.s.families[0] = 4;
	q.s.families[1] = 6;
	q.s.n_families = 2;
	q.s.policy = IPAM_REQUIRE_DUAL_STACK;
	q.req[0] = "192.0.2.2";
	q.s.n_requested = 1;
	CHECK(ipam_assign(m, &q.s, &r, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "no IPv6 address is requested");
	q.req[1] = "2001:db8::2";
	q.s.n_requested = 2;
	CHECK(ipam_assign(m, &q.s, &r, &e) == 0);
	CHECK_STR(r.addresses[1], "2001:db8::2");
	ipam_free(m);
}

TEST(taken_means_taken_whoever_wrote_it)
{
	static const char *entries[] = { "192.0.2.0/29" };
	struct ipam *m = one_pool(entries, 1);
	struct tsvc foreign, mine;
	struct ipam_result r;
	struct errbuf e;

	/* another class's Service shows .1 in its status */
	tsvc_init(&foreign, "other/lb", 1);
	foreign.s.served = 0;
	foreign.held[0] = "192.0.2.1";
	foreign.s.n_held = 1;
	ipam_observe(m, "other/lb", &foreign.s);
	tsvc_init(&mine, "ns/mine", 2);
	CHECK(ipam_assign(m, &mine.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.2");
	mine.req[0] = "192.0.2.1";
	mine.s.n_requested = 1;
	CHECK(ipam_assign(m, &mine.s, &r, &e) == ERR_UNAVAILABLE);
	CHECK_STR(e.msg, "address 192.0.2.1 is taken by other/lb");
	/* its status cleared: free */
	foreign.s.n_held = 0;
	CHECK(ipam_observe(m, "other/lb", &foreign.s) == 1);
	CHECK(ipam_assign(m, &mine.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.1");
	ipam_free(m);
}

/* MetalLB #1774, #2443, #2479: addresses assigned twice after a restart.
 * 200 Services whose statuses hold their addresses are observed first (the
 * initial LIST), then each is assigned: nothing changes, nothing repeats. */
TEST(restart_with_200_allocated_is_quiet)
{
	static const char *entries[] = { "10.0.0.0/23", "2001:db8::/120" };
	struct ipam *m = one_pool(entries, 2);
	static struct tsvc s[200];
	static char keys[200][32], addrs[200][NETADDR_TEXT_MAX];
	struct ipam_result r;
	struct errbuf e;

	for (int i = 0; i < 200; i++) {
		snprintf(keys[i], sizeof(keys[i]), "ns-%d/svc-%d", i % 7, i);
		/* scattered, not in pool order: what earlier runs left */
		snprintf(addrs[i], sizeof(addrs[i]), "10.0.%d.%d", (i * 37) % 2,
		    1 + (i * 53) % 250);
		tsvc_init(&s[i], keys[i], 1000 - i);
		s[i].held[0] = addrs[i];
		s[i].s.n_held = 1;
	}
	/* make the scattered addresses distinct */
	for (int i = 0; i < 200; i++)
		for (int j = 0; j < i; j++)
			CHECK(strcmp(addrs[i], addrs[j]) != 0);
	for (int i = 0; i < 200; i++)
		ipam_observe(m, keys[i], &s[i].s);
	for (int i = 199; i >= 0; i--) {
		CHECK(ipam_assign(m, &s[i].s, &r, &e) == 0);
		CHECK(r.changed == 0);
		CHECK_STR(r.addresses[0], addrs[i]);
	}
	/* a new one gets a free address, not one of theirs */
	struct tsvc n;
	tsvc_init(&n, "ns/new", 5000);
	CHECK(ipam_assign(m, &n.s, &r, &e) == 0);
	for (int i = 0; i < 200; i++)
		CHECK(strcmp(r.addresses[0], addrs[i]) != 0);
	/* MetalLB #2723: deleting one Service moves nobody else */
	CHECK(ipam_observe(m, keys[17], NULL) == 1);
	for (int i = 0; i < 200; i++) {
		if (i == 17)
			continue;
		CHECK(ipam_assign(m, &s[i].s, &r, &e) == 0);
		CHECK(r.changed == 0);
	}
	ipam_free(m);
}

/* Two Services that hold one address (written by something else): the
 * older keeps it, the younger served one moves. */
TEST(duplicate_in_status_resolved_for_the_older)
{
	static const char *entries[] = { "192.0.2.0/29" };
	struct ipam *m = one_pool(entries, 1);
	struct tsvc a, b;
	struct ipam_result r;
	struct errbuf e;

	tsvc_init(&a, "ns/a", 10);
	tsvc_init(&b, "ns/b", 20);
	a.held[0] = b.held[0] = "192.0.2.3";
	a.s.n_held = b.s.n_held = 1;
	ipam_observe(m, "ns/a", &a.s);
	ipam_observe(m, "ns/b", &b.s);
	CHECK(ipam_assign(m, &b.s, &r, &e) == 0);
	CHECK(r.changed);
	CHECK(strcmp(r.addresses[0], "192.0.2.3") != 0);
	CHECK(ipam_assign(m, &a.s, &r, &e) == 0);
	CHECK(!r.changed);
	CHECK_STR(r.addresses[0], "192.0.2.3");
	ipam_free(m);
}

TEST(pools_check_names_the_pool_at_fault)
{
	struct ipam_range a[1] = { rng("192.0.2.0/28") };
	struct ipam_range b[1] = { rng("198.51.100.0/28") };
	struct ipam_range c[2] = { rng("203.0.113.0/28"), rng("192.0.2.8-192.0.2.9") };
	struct ipam_pool_config p[3] = { { "a", a, 1, NULL, 0, 1 }, { "b", b, 1, NULL, 0, 1 },
	    { "c", c, 2, NULL, 0, 1 } };
	struct errbuf e;
	size_t bad = 99;

	CHECK(ipam_pools_check(p, 2, &bad, &e) == 0);
	CHECK(ipam_pools_check(p, 3, &bad, &e) == ERR_INVALID);
	CHECK(bad == 2);
	CHECK_STR(e.msg, "pools \"a\" and \"c\" overlap");
	p[1].name = "";
	CHECK(ipam_pools_check(p, 2, &bad, &e) == ERR_INVALID);
	CHECK(bad == 1);
	CHECK_STR(e.msg, "pool 2 has no name");
	/* within one pool; and ::c000:200 is no IPv4 address */
	struct ipam_range d[3] = { rng("::c000:200/120"), rng("10.0.0.0/24"),
	    rng("10.0.0.200-10.0.1.5") };
	struct ipam_pool_config q[2] = { { "a", a, 1, NULL, 0, 1 }, { "d", d, 2, NULL, 0, 1 } };
	CHECK(ipam_pools_check(q, 2, &bad, &e) == 0);
	q[1].n_ranges = 3;
	CHECK(ipam_pools_check(q, 2, &bad, &e) == ERR_INVALID);
	CHECK(bad == 1);
	CHECK_STR(e.msg, "pool \"d\" lists overlapping addresses");
}

/* Many ranges are checked for overlap by sorting, not pairwise: 64 pools
 * of 256 disjoint /32s each, then one more range that touches the last. */
TEST(pools_check_many_ranges)
{
	static struct ipam_range r[64][256];
	static char names[64][8];
	struct ipam_pool_config p[64];
	struct errbuf e;
	size_t bad = 0;

	for (int i = 0; i < 64; i++) {
		snprintf(names[i], sizeof(names[i]), "p%d", i);
		for (int j = 0; j < 256; j++) {
			char a[32];
			snprintf(a, sizeof(a), "10.%d.%d.%d/32", i, j, (i * 7 + j) % 256);
			r[i][j] = rng(a);
		}
		p[i] = (struct ipam_pool_config){ names[i], r[i], 256, NULL, 0, 1 };
	}
	CHECK(ipam_pools_check(p, 64, &bad, &e) == 0);
	r[63][255] = rng("10.0.3.0-10.0.3.255");  /* covers p0's 10.0.3.x */
	CHECK(ipam_pools_check(p, 64, &bad, &e) == ERR_INVALID);
	CHECK(bad == 63);
	CHECK_STR(e.msg, "pools \"p0\" and \"p63\" overlap");
}

/* The usage counts follow every change: allocations, statuses, releases,
 * deletions; a shared address counts once, and an address outside every
 * pool counts nowhere. */
TEST(usage_follows_every_change)
{
	static const char *entries[] = { "192.0.2.0/29", "2001:db8::/126" };
	struct ipam *m = one_pool(entries, 2);
	struct tsvc a, b, out;
	struct ipam_result r;
	struct errbuf e;
	const char *name;
	uint64_t used[2];
	double size[2];

	tsvc_init(&a, "ns/a", 1);
	tsvc_init(&b, "ns/b", 2);
	a.s.sharing_key = b.s.sharing_key = "k";
	b.ports[0].port = 443;
	a.s.families[1] = 6;
	a.s.n_families = 2;
	a.s.policy = IPAM_REQUIRE_DUAL_STACK;
	CHECK(ipam_assign(m, &a.s, &r, &e) == 0);
	CHECK(ipam_pool_usage(m, 0, &name, used, size) == 0);
	CHECK(used[0] == 1 && used[1] == 1 && size[0] == 6 && size[1] == 4);
	CHECK(ipam_assign(m, &b.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.1");  /* shared */
	CHECK(ipam_pool_usage(m, 0, &name, used, size) == 0);
	CHECK(used[0] == 1 && used[1] == 1);
	/* a status outside every pool */
	tsvc_init(&out, "ns/out", 3);
	out.s.served = 0;
	out.held[0] = "203.0.113.9";
	out.s.n_held = 1;
	CHECK(ipam_observe(m, "ns/out", &out.s) == 0);
	CHECK(ipam_pool_usage(m, 0, &name, used, size) == 0);
	CHECK(used[0] == 1 && used[1] == 1);
	/* a releases; b still holds the IPv4 address */
	CHECK(ipam_release(m, "ns/a") == 1);
	CHECK(ipam_pool_usage(m, 0, &name, used, size) == 0);
	CHECK(used[0] == 1 && used[1] == 0);
	CHECK(ipam_allocation(m, "ns/a", &r) == 0);
	CHECK(ipam_allocation(m, "ns/b", &r) == 1);
	CHECK(r.n == 1 && !r.changed);
	CHECK_STR(r.addresses[0], "192.0.2.1");
	CHECK_STR(r.pools[0], "public");
	CHECK(ipam_observe(m, "ns/b", NULL) == 1);
	CHECK(ipam_pool_usage(m, 0, &name, used, size) == 0);
	CHECK(used[0] == 0 && used[1] == 0);
	CHECK(ipam_allocation(m, "ns/b", &r) == 0);
	ipam_free(m);
}

/* An address a served Service asks for stays out of auto-assignment while
 * it asks, and comes back when it stops asking or stops being served. */
TEST(requests_keep_auto_assignment_off_until_withdrawn)
{
	static const char *entries[] = { "192.0.2.0/30" };  /* .1 and .2 */
	struct ipam *m = one_pool(entries, 1);
	struct tsvc asker, other;
	struct ipam_result r;
	struct errbuf e;

	tsvc_init(&asker, "ns/asker", 1);
	asker.req[0] = "192.0.2.1";
	asker.s.n_requested = 1;
	ipam_observe(m, "ns/asker", &asker.s);
	tsvc_init(&other, "ns/other", 2);
	CHECK(ipam_assign(m, &other.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.2");
	CHECK(ipam_observe(m, "ns/other", NULL) == 1);
	asker.s.served = 0;  /* another class now: its request no longer counts */
	ipam_observe(m, "ns/asker", &asker.s);
	CHECK(ipam_assign(m, &other.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.1");
	ipam_free(m);
}

/* A request that can never be met as it stands (an address in a pool the
 * Service's namespace may not use, or outside the pool it asked for) keeps
 * nobody off the address: another namespace cannot hold a pool's addresses
 * back from the namespaces it is for by asking for them. */
TEST(requests_that_cannot_be_met_keep_nobody_off)
{
	struct ipam_range team[1] = { rng("192.0.2.0/30") };       /* .1 and .2 */
	struct ipam_range pub[1] = { rng("198.51.100.0/30") };
	const char *teams[] = { "team-a" };
	struct ipam_pool_config p[2] = {
		{ "team", team, 1, teams, 1, 1 },
		{ "public", pub, 1, NULL, 0, 1 },
	};
	struct ipam *m = NULL;
	struct tsvc other_ns, wrong_pool, a, b;
	struct ipam_result r;
	struct errbuf e;

	CHECK(ipam_new(p, 2, &m, &e) == 0);
	tsvc_init(&other_ns, "team-b/asker", 1);
	other_ns.req[0] = "192.0.2.1";
	other_ns.s.n_requested = 1;
	CHECK(ipam_assign(m, &other_ns.s, &r, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "which namespace team-b may not use");
	tsvc_init(&wrong_pool, "team-a/asker", 2);
	wrong_pool.req[0] = "192.0.2.2";
	wrong_pool.s.n_requested = 1;
	wrong_pool.s.pool = "public";
	CHECK(ipam_assign(m, &wrong_pool.s, &r, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "not in the requested pool public");
	tsvc_init(&a, "team-a/a", 3);
	CHECK(ipam_assign(m, &a.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.1");
	tsvc_init(&b, "team-a/b", 4);
	CHECK(ipam_assign(m, &b.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.2");
	/* a request it may have still does: the asker's pool fixed */
	CHECK(ipam_observe(m, "team-a/b", NULL) == 1);
	wrong_pool.s.pool = "team";
	ipam_observe(m, "team-a/asker", &wrong_pool.s);
	tsvc_init(&b, "team-a/c", 5);
	CHECK(ipam_assign(m, &b.s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "198.51.100.1");
	ipam_free(m);
}

/* Automatic assignment remembers how far each range is taken, and a freed
 * address (a Service gone, a request withdrawn) is found again first. */
TEST(freed_addresses_are_found_again_first)
{
	static const char *entries[] = { "192.0.2.0/29", "198.51.100.7/32" };
	struct ipam *m = one_pool(entries, 2);
	static struct tsvc s[10];
	static char keys[10][16];
	struct ipam_result r;
	struct errbuf e;

	for (int i = 0; i < 10; i++) {
		snprintf(keys[i], sizeof(keys[i]), "ns/s%d", i);
		tsvc_init(&s[i], keys[i], i);
	}
	for (int i = 0; i < 7; i++) {
		char want[NETADDR_TEXT_MAX];
		snprintf(want, sizeof(want), i < 6 ? "192.0.2.%d" : "198.51.100.7", i + 1);
		CHECK(ipam_assign(m, &s[i].s, &r, &e) == 0);
		CHECK_STR(r.addresses[0], want);
	}
	CHECK(ipam_assign(m, &s[7].s, &r, &e) == ERR_UNAVAILABLE);
	CHECK(ipam_observe(m, keys[2], NULL) == 1);
	CHECK(ipam_assign(m, &s[7].s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.3");
	CHECK(ipam_observe(m, keys[6], NULL) == 1);   /* the second range's only one */
	CHECK(ipam_observe(m, keys[0], NULL) == 1);
	CHECK(ipam_assign(m, &s[8].s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.1");
	CHECK(ipam_assign(m, &s[9].s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "198.51.100.7");
	/* an address a Service moves away from is found again */
	CHECK(ipam_observe(m, keys[4], NULL) == 1);    /* .5 free */
	s[1].req[0] = "192.0.2.5";                    /* s1 asks to move from .2 to .5 */
	s[1].s.n_requested = 1;
	CHECK(ipam_assign(m, &s[1].s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.5");
	tsvc_init(&s[4], keys[4], 4);
	CHECK(ipam_assign(m, &s[4].s, &r, &e) == 0);
	CHECK_STR(r.addresses[0], "192.0.2.2");
	CHECK(ipam_assign(m, &s[0].s, &r, &e) == ERR_UNAVAILABLE);
	ipam_free(m);
}

TEST_MAIN()
