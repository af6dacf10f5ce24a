/* test_routectl.c - the route controller's pure parts: --cluster-cidr
 * parsing, responsibility for a route (upstream's isResponsibleForRoute),
 * the plan of a pass (create, keep, delete, leave alone; dual-stack;
 * blackholes; podCIDRs outside the cluster CIDRs), whether a Node's routes
 * all exist, the NetworkUnavailable decision (a CNI's condition is never
 * ours) and its JSON patch, and which Node changes trigger a pass. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "cloud.h"
#include "controllers/routectl.h"
#include "base/err.h"
#include "harness.h"
#include "kube/client.h"
#include "kube/node.h"
#include "base/netaddr.h"

/* --- --cluster-cidr -------------------------------------------------------- */

static int
parse(const char *s, struct netprefix out[ROUTECTL_CIDRS_MAX], size_t *n, struct errbuf *e)
{
	e->msg[0] = '\0';
	return routectl_cidrs_parse(s, out, n, e);
}

static const char *
text(const struct netprefix *p, char buf[NETPREFIX_TEXT_MAX])
{
	netprefix_format(p, buf);
	return buf;
}

TEST(cidrs_one_per_family)
{
	struct netprefix p[ROUTECTL_CIDRS_MAX];
	struct errbuf e;
	char b[NETPREFIX_TEXT_MAX];
	size_t n = 0;

	CHECK(parse("10.244.0.0/16", p, &n, &e) == 0);
	CHECK(n == 1);
	CHECK_STR(text(&p[0], b), "10.244.0.0/16");
	CHECK(parse("fd00:10:244::/56", p, &n, &e) == 0);
	CHECK(n == 1 && p[0].addr.family == 6);
	/* dual-stack in either order, spaces around the list and the items */
	CHECK(parse(" 10.244.0.0/16, fd00:10:244::/56 ", p, &n, &e) == 0);
	CHECK(n == 2);
	CHECK_STR(text(&p[1], b), "fd00:10:244::/56");
	CHECK(parse("fd00::/48,10.0.0.0/8", p, &n, &e) == 0);
	CHECK(n == 2 && p[0].addr.family == 6 && p[1].addr.family == 4);
	/* host bits are cleared, as Go's net.ParseCIDR does */
	CHECK(parse("10.244.3.7/16", p, &n, &e) == 0);
	CHECK_STR(text(&p[0], b), "10.244.0.0/16");
}

TEST(cidrs_refused_with_the_flag_named)
{
	static const char *const bad[] = {
		"", "   ", "10.244.0.0", "10.244.0.0/33", "banana", "10.0.0.0/8,",
		",10.0.0.0/8", "10.0.0.0/8,,fd00::/8", "10.0.0.0/8,10.1.0.0/16",
		"fd00::/8,fd01::/16", "10.0.0.0/8,fd00::/8,192.168.0.0/16", "010.0.0.0/8",
	};
	struct netprefix p[ROUTECTL_CIDRS_MAX];
	struct errbuf e;
	size_t n = 77;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i], p, &n, &e) != ERR_INVALID) {
			fprintf(stderr, "  accepted \"%s\"\n", bad[i]);
			CHECK(0);
		}
		CHECK_CONTAINS(e.msg, "--cluster-cidr");
		CHECK(n == 77);  /* untouched */
	}
	CHECK(parse(NULL, p, &n, &e) == ERR_INVALID);
	CHECK(parse("10.0.0.0/8,10.1.0.0/16", p, &n, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "one IPv4 and one IPv6");
}

/* --- responsibility -------------------------------------------------------- */

static struct netprefix
pfx(const char *s)
{
	struct netprefix p;

	memset(&p, 0, sizeof(p));
	if (netprefix_parse(s, 0, &p) < 0)
		fprintf(stderr, "  bad test prefix %s\n", s);
	return p;
}

TEST(responsible_first_or_last_address_inside)
{
	struct netprefix c[2] = { pfx("10.244.0.0/16"), pfx("fd00:10:244::/56") };
	struct netprefix d;

	d = pfx("10.244.3.0/24");
	CHECK(routectl_responsible(c, 2, &d));
	d = pfx("10.245.3.0/24");
	CHECK(!routectl_responsible(c, 2, &d));
	d = pfx("fd00:10:244:1::/64");
	CHECK(routectl_responsible(c, 2, &d));
	d = pfx("fd00:10:245:1::/64");
	CHECK(!routectl_responsible(c, 2, &d));
	/* the whole cluster CIDR, or one straddling its start or end */
	d = pfx("10.244.0.0/16");
	CHECK(routectl_responsible(c, 2, &d));
	d = pfx("10.244.0.0/15");          /* first address inside */
	CHECK(routectl_responsible(c, 2, &d));
	c[0] = pfx("10.245.0.0/16");
	CHECK(routectl_responsible(c, 2, &d));  /* last address inside */
	c[0] = pfx("10.244.0.0/16");
	/* wider than the cluster CIDR on both sides: neither end inside */
	d = pfx("10.0.0.0/8");
	CHECK(!routectl_responsible(c, 2, &d));
	/* a family without a cluster CIDR */
	d = pfx("fd00:10:244::/64");
	CHECK(!routectl_responsible(c, 1, &d));
	CHECK(!routectl_responsible(c, 0, &d));
}

/* --- the plan --------------------------------------------------------------- */

struct tnode {
	struct kube_node n;
	const char *cidrs[2];
};

static void
tnode(struct tnode *t, const char *name, const char *c0, const char *c1)
{
	memset(t, 0, sizeof(*t));
	t->n.name = name;
	t->n.obj.key = name;
	t->n.obj.uid = "";
	t->n.obj.resource_version = "1";
	t->cidrs[0] = c0;
	t->cidrs[1] = c1;
	t->n.pod_cidrs = t->cidrs;
	t->n.npod_cidrs = c1 ? 2 : c0 ? 1 : 0;
}

static struct cloud_route
route(const char *target, const char *cidr, int blackhole)
{
	struct cloud_route r;

	memset(&r, 0, sizeof(r));
	snprintf(r.name, sizeof(r.name), "r-%s-%s", target, cidr);
	snprintf(r.target_node, sizeof(r.target_node), "%s", target);
	snprintf(r.destination_cidr, sizeof(r.destination_cidr), "%s", cidr);
	r.blackhole = blackhole;
	return r;
}

/* want returns the state of node i's k-th podCIDR in p, or -1. */
static int
want(const struct routectl_plan *p, size_t i, size_t k)
{
	for (size_t a = p->node_first[i]; a < p->node_first[i + 1]; a++)
		if (p->wants[a].cidr == k && p->wants[a].node == i)
			return (int)p->wants[a].state;
	return -1;
}

TEST(plan_creates_keeps_deletes_and_leaves_alone)
{
	struct netprefix c[1] = { pfx("10.244.0.0/16") };
	struct tnode a, b, nocidr;
	const struct kube_node *nodes[3];
	struct cloud_route routes[] = {
		route("a", "10.244.0.0/24", 0),      /* a's: keep */
		route("gone", "10.244.9.0/24", 0),   /* no such Node: stale */
		route("b", "10.244.7.0/24", 0),      /* b's old CIDR: stale */
		route("x", "192.168.0.0/24", 0),     /* outside: not ours */
		route("y", "not-a-cidr", 0),         /* unreadable: left alone */
		route("", "10.244.8.0/24", 0),       /* no target: stale */
	};
	struct routectl_plan p;

	tnode(&a, "a", "10.244.0.0/24", NULL);
	tnode(&b, "b", "10.244.1.0/24", NULL);
	tnode(&nocidr, "c", NULL, NULL);
	nodes[0] = &a.n;
	nodes[1] = &b.n;
	nodes[2] = &nocidr.n;
	routectl_plan(c, 1, nodes, 3, routes, 6, &p);
	CHECK(p.nwants == 2);
	CHECK(want(&p, 0, 0) == ROUTECTL_WANT_EXISTS);
	CHECK(want(&p, 1, 0) == ROUTECTL_WANT_CREATE);
	CHECK(p.verdicts[0] == ROUTECTL_ROUTE_KEEP);
	CHECK(p.verdicts[1] == ROUTECTL_ROUTE_DELETE);
	CHECK(p.verdicts[2] == ROUTECTL_ROUTE_DELETE);
	CHECK(p.verdicts[3] == ROUTECTL_ROUTE_FOREIGN);
	CHECK(p.verdicts[4] == ROUTECTL_ROUTE_UNPARSABLE);
	CHECK(p.verdicts[5] == ROUTECTL_ROUTE_DELETE);
	/* routed: a yes; b not until its create succeeds; c has nothing */
	CHECK(routectl_node_routed(&p, 0) == 1);
	CHECK(routectl_node_routed(&p, 1) == 0);
	CHECK(routectl_node_routed(&p, 2) == -1);
	p.wants[p.node_first[1]].state = ROUTECTL_WANT_CREATED;
	CHECK(routectl_node_routed(&p, 1) == 1);
	p.wants[p.node_first[1]].state = ROUTECTL_WANT_FAILED;
	CHECK(routectl_node_routed(&p, 1) == 0);
	routectl_plan_free(&p);
}

TEST(plan_dual_stack_two_routes_per_node)
{
	struct netprefix c[2] = { pfx("10.244.0.0/16"), pfx("fd00:10:244::/56") };
	struct tnode a;
	const struct kube_node *nodes[1] = { &a.n };
	/* the provider writes the IPv6 CIDR its own way: same prefix */
	struct cloud_route routes[] = { route("a", "fd00:10:244:0:0::/64", 0) };
	struct routectl_plan p;

	tnode(&a, "a", "10.244.0.0/24", "fd00:10:244::/64");
	routectl_plan(c, 2, nodes, 1, routes, 1, &p);
	CHECK(p.nwants == 2);
	CHECK(want(&p, 0, 0) == ROUTECTL_WANT_CREATE);
	CHECK(want(&p, 0, 1) == ROUTECTL_WANT_EXISTS);
	CHECK(p.verdicts[0] == ROUTECTL_ROUTE_KEEP);
	CHECK(routectl_node_routed(&p, 0) == 0);
	routectl_plan_free(&p);
	/* only the IPv4 cluster CIDR given: the IPv6 podCIDR is outside */
	routectl_plan(c, 1, nodes, 1, routes, 1, &p);
	CHECK(want(&p, 0, 1) == ROUTECTL_WANT_OUTSIDE);
	CHECK(p.verdicts[0] == ROUTECTL_ROUTE_FOREIGN);
	routectl_plan_free(&p);
}

TEST(plan_blackhole_is_replaced_not_counted)
{
	struct netprefix c[1] = { pfx("10.244.0.0/16") };
	struct tnode a;
	const struct kube_node *nodes[1] = { &a.n };
	struct cloud_route routes[] = { route("a", "10.244.0.0/24", 1) };
	struct routectl_plan p;

	tnode(&a, "a", "10.244.0.0/24", NULL);
	routectl_plan(c, 1, nodes, 1, routes, 1, &p);
	CHECK(p.verdicts[0] == ROUTECTL_ROUTE_DELETE);
	CHECK(want(&p, 0, 0) == ROUTECTL_WANT_CREATE);
	CHECK(routectl_node_routed(&p, 0) == 0);
	routectl_plan_free(&p);
}

TEST(plan_outside_podcidr_gets_no_route_and_is_never_deleted)
{
	struct netprefix c[1] = { pfx("10.244.0.0/16") };
	struct tnode a, bad;
	const struct kube_node *nodes[2] = { &a.n, &bad.n };
	/* a route someone made for it (an older CCM) stays: not ours */
	struct cloud_route routes[] = { route("a", "10.42.0.0/24", 0) };
	struct routectl_plan p;

	tnode(&a, "a", "10.42.0.0/24", NULL);
	tnode(&bad, "bad", "10.244.300.0/24", NULL);
	routectl_plan(c, 1, nodes, 2, routes, 1, &p);
	CHECK(want(&p, 0, 0) == ROUTECTL_WANT_OUTSIDE);
	CHECK(want(&p, 1, 0) == ROUTECTL_WANT_INVALID);
	CHECK(p.verdicts[0] == ROUTECTL_ROUTE_FOREIGN);
	CHECK(routectl_node_routed(&p, 0) == 0);
	CHECK(routectl_node_routed(&p, 1) == 0);
	routectl_plan_free(&p);
}

TEST(plan_cidr_moved_between_nodes)
{
	struct netprefix c[1] = { pfx("10.244.0.0/16") };
	struct tnode a, b;
	const struct kube_node *nodes[2] = { &a.n, &b.n };
	/* a's old route now belongs to b; a has a new CIDR */
	struct cloud_route routes[] = { route("a", "10.244.5.0/24", 0) };
	struct routectl_plan p;

	tnode(&a, "a", "10.244.6.0/24", NULL);
	tnode(&b, "b", "10.244.5.0/24", NULL);
	routectl_plan(c, 1, nodes, 2, routes, 1, &p);
	CHECK(p.verdicts[0] == ROUTECTL_ROUTE_DELETE);
	CHECK(want(&p, 0, 0) == ROUTECTL_WANT_CREATE);
	CHECK(want(&p, 1, 0) == ROUTECTL_WANT_CREATE);
	routectl_plan_free(&p);
}

TEST(plan_repeated_podcidr_counts_once_and_targeted_node_without_cidrs)
{
	struct netprefix c[1] = { pfx("10.244.0.0/16") };
	struct tnode a, b;
	const struct kube_node *nodes[2] = { &a.n, &b.n };
	struct cloud_route routes[] = { route("b", "10.244.9.0/24", 0) };
	struct routectl_plan p;

	tnode(&a, "a", "10.244.1.0/24", "10.244.1.0/24");
	tnode(&b, "b", NULL, NULL);
	routectl_plan(c, 1, nodes, 2, routes, 1, &p);
	CHECK(p.nwants == 1);
	/* b: no podCIDRs, but a route targets it: upstream marks it unrouted */
	CHECK(routectl_node_routed(&p, 1) == 0);
	CHECK(p.verdicts[0] == ROUTECTL_ROUTE_DELETE);
	routectl_plan_free(&p);
	/* nothing at all */
	routectl_plan(c, 1, NULL, 0, NULL, 0, &p);
	CHECK(p.nwants == 0 && p.nnodes == 0);
	routectl_plan_free(&p);
}

/* --- the condition ---------------------------------------------------------- */

TEST(condition_decide)
{
	static const struct {
		enum kube_node_ready st;
		const char *reason;
		int routed;
		enum routectl_cond want;
	} rows[] = {
		{ KUBE_NODE_READY_NONE, NULL, 1, ROUTECTL_COND_SET },
		{ KUBE_NODE_READY_NONE, NULL, 0, ROUTECTL_COND_SET },
		{ KUBE_NODE_READY_FALSE, "RouteCreated", 1, ROUTECTL_COND_KEEP },
		{ KUBE_NODE_READY_TRUE, "NoRouteCreated", 0, ROUTECTL_COND_KEEP },
		{ KUBE_NODE_READY_TRUE, "NoRouteCreated", 1, ROUTECTL_COND_SET },
		{ KUBE_NODE_READY_FALSE, "RouteCreated", 0, ROUTECTL_COND_SET },
		/* ours with the other reason, or an odd status: put right */
		{ KUBE_NODE_READY_FALSE, "NoRouteCreated", 1, ROUTECTL_COND_SET },
		{ KUBE_NODE_READY_UNKNOWN, "RouteCreated", 1, ROUTECTL_COND_SET },
		/* a CNI's, whatever its status and ours: never touched */
		{ KUBE_NODE_READY_FALSE, "CalicoIsUp", 0, ROUTECTL_COND_FOREIGN },
		{ KUBE_NODE_READY_FALSE, "CiliumIsUp", 1, ROUTECTL_COND_FOREIGN },
		{ KUBE_NODE_READY_TRUE, "FlannelIsDown", 1, ROUTECTL_COND_FOREIGN },
		{ KUBE_NODE_READY_TRUE, NULL, 1, ROUTECTL_COND_FOREIGN },
		{ KUBE_NODE_READY_FALSE, "", 0, ROUTECTL_COND_FOREIGN },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (routectl_condition_decide(rows[i].st, rows[i].reason, rows[i].routed) !=
		    rows[i].want) {
			fprintf(stderr, "  row %zu\n", i);
			CHECK(0);
		}
	}
}

/* patch parses js, builds the patch for routed at a fixed time and returns
 * its text (static) or the code as text. */
static const char *
patch(const char *js, int routed)
{
	static char out[2048];
	json_object *o = json_tokener_parse(js), *ops = NULL;
	struct errbuf e = { "" };
	int r = routectl_condition_patch(o, routed, 1700000000, &ops, &e);

	if (r == KUBE_PATCH_JSON)
		snprintf(out, sizeof(out), "%s", json_object_to_json_string_ext(ops,
		    JSON_C_TO_STRING_PLAIN));
	else if (r == KUBE_PATCH_NOOP)
		snprintf(out, sizeof(out), "noop");
	else
		snprintf(out, sizeof(out), "error %d: %s", r, e.msg);
	json_object_put(ops);
	json_object_put(o);
	return out;
}

#define NOW "2023-11-14T22:13:20Z"
#define COND_FALSE "{\"type\":\"NetworkUnavailable\",\"status\":\"False\",\"reason\":" \
	"\"RouteCreated\",\"message\":\"RouteController created a route\","             \
	"\"lastTransitionTime\":\"" NOW "\",\"lastHeartbeatTime\":\"" NOW "\"}"

TEST(condition_patch_adds_where_it_can)
{
	CHECK_STR(patch("{\"metadata\":{\"name\":\"a\"},\"status\":{\"conditions\":"
	    "[{\"type\":\"Ready\",\"status\":\"True\"}]}}", 1),
	    "[{\"op\":\"add\",\"path\":\"\\/status\\/conditions\\/-\",\"value\":" COND_FALSE "}]");
	CHECK_STR(patch("{\"metadata\":{\"name\":\"a\"},\"status\":{}}", 1),
	    "[{\"op\":\"add\",\"path\":\"\\/status\\/conditions\",\"value\":[" COND_FALSE "]}]");
	CHECK_STR(patch("{\"metadata\":{\"name\":\"a\"}}", 1),
	    "[{\"op\":\"add\",\"path\":\"\\/status\",\"value\":{\"conditions\":[" COND_FALSE
	    "]}}]");
}

TEST(condition_patch_replaces_ours_and_keeps_transition_time_with_the_status)
{
	const char *got;

	/* status changes: new transition time */
	got = patch("{\"metadata\":{\"name\":\"a\"},\"status\":{\"conditions\":["
	    "{\"type\":\"Ready\",\"status\":\"True\"},"
	    "{\"type\":\"NetworkUnavailable\",\"status\":\"True\",\"reason\":\"NoRouteCreated\","
	    "\"lastTransitionTime\":\"2020-01-01T00:00:00Z\"}]}}", 1);
	CHECK_STR(got, "[{\"op\":\"replace\",\"path\":\"\\/status\\/conditions\\/1\",\"value\":"
	    COND_FALSE "}]");
	/* same status, our other reason: the transition time stays */
	got = patch("{\"metadata\":{\"name\":\"a\"},\"status\":{\"conditions\":["
	    "{\"type\":\"NetworkUnavailable\",\"status\":\"False\",\"reason\":\"NoRouteCreated\","
	    "\"lastTransitionTime\":\"2020-01-01T00:00:00Z\"}]}}", 1);
	CHECK_CONTAINS(got, "\"op\":\"replace\",\"path\":\"\\/status\\/conditions\\/0\"");
	CHECK_CONTAINS(got, "\"lastTransitionTime\":\"2020-01-01T00:00:00Z\"");
	CHECK_CONTAINS(got, "\"lastHeartbeatTime\":\"" NOW "\"");
	CHECK_CONTAINS(got, "\"reason\":\"RouteCreated\"");
	/* not routed */
	got = patch("{\"metadata\":{\"name\":\"a\"},\"status\":{\"conditions\":["
	    "{\"type\":\"NetworkUnavailable\",\"status\":\"False\",\"reason\":\"RouteCreated\"}]}}",
	    0);
	CHECK_CONTAINS(got, "\"status\":\"True\",\"reason\":\"NoRouteCreated\",\"message\":"
	    "\"RouteController failed to create a route\",\"lastTransitionTime\":\"" NOW "\"");
}

TEST(condition_patch_writes_nothing_when_as_wanted_or_foreign)
{
	CHECK_STR(patch("{\"metadata\":{\"name\":\"a\"},\"status\":{\"conditions\":["
	    "{\"type\":\"NetworkUnavailable\",\"status\":\"False\",\"reason\":\"RouteCreated\"}]}}",
	    1), "noop");
	CHECK_STR(patch("{\"metadata\":{\"name\":\"a\"},\"status\":{\"conditions\":["
	    "{\"type\":\"NetworkUnavailable\",\"status\":\"False\",\"reason\":\"CalicoIsUp\"}]}}",
	    0), "noop");
	CHECK_STR(patch("{\"metadata\":{\"name\":\"a\"},\"status\":{\"conditions\":["
	    "{\"type\":\"NetworkUnavailable\",\"status\":\"True\"}]}}", 1), "noop");
}

TEST(condition_patch_refuses_malformed_nodes_naming_the_field)
{
	const char *got;

	got = patch("{\"metadata\":{\"name\":\"a\"},\"status\":{\"conditions\":[\"x\"]}}", 1);
	CHECK_CONTAINS(got, "error");
	CHECK_CONTAINS(got, "node \"a\": status.conditions[0]: expected an object");
	got = patch("{\"metadata\":{\"name\":\"a\"},\"status\":{\"conditions\":["
	    "{\"type\":\"NetworkUnavailable\",\"status\":true}]}}", 1);
	CHECK_CONTAINS(got, "status.conditions[0].status");
	got = patch("{\"metadata\":{\"name\":\"a\"},\"status\":{\"conditions\":{}}}", 1);
	CHECK_CONTAINS(got, "status.conditions");
	got = patch("{\"metadata\":{\"name\":\"a\"},\"status\":[]}", 1);
	CHECK_CONTAINS(got, "error");
}

/* --- triggers ---------------------------------------------------------------- */

TEST(node_triggers)
{
	struct tnode a, a2, bare, bare2;
	struct kube_node_address ad1[1] = { { "InternalIP", "10.0.0.1" } };
	struct kube_node_address ad2[1] = { { "InternalIP", "10.0.0.2" } };

	tnode(&a, "a", "10.244.1.0/24", NULL);
	tnode(&a2, "a", "10.244.1.0/24", NULL);
	tnode(&bare, "a", NULL, NULL);
	tnode(&bare2, "a", NULL, NULL);
	/* added or deleted with podCIDRs */
	CHECK(routectl_node_triggers(NULL, &a.n));
	CHECK(routectl_node_triggers(&a.n, NULL));
	/* nothing to route, before or after */
	CHECK(!routectl_node_triggers(NULL, &bare.n));
	CHECK(!routectl_node_triggers(&bare.n, NULL));
	bare2.n.addresses = ad1;
	bare2.n.naddresses = 1;
	CHECK(!routectl_node_triggers(&bare.n, &bare2.n));
	/* the podCIDR arrives, goes, changes */
	CHECK(routectl_node_triggers(&bare.n, &a.n));
	CHECK(routectl_node_triggers(&a.n, &bare.n));
	a2.cidrs[0] = "10.244.2.0/24";
	CHECK(routectl_node_triggers(&a.n, &a2.n));
	a2.cidrs[0] = "10.244.1.0/24";
	CHECK(!routectl_node_triggers(&a.n, &a2.n));
	/* addresses */
	a.n.addresses = ad1;
	a.n.naddresses = 1;
	CHECK(routectl_node_triggers(&a.n, &a2.n));
	a2.n.addresses = ad1;
	a2.n.naddresses = 1;
	CHECK(!routectl_node_triggers(&a.n, &a2.n));
	a2.n.addresses = ad2;
	CHECK(routectl_node_triggers(&a.n, &a2.n));
	/* anything else (labels, conditions): no */
	a2.n.addresses = ad1;
	a2.n.network_unavailable = KUBE_NODE_READY_FALSE;
	a2.n.obj.resource_version = "2";
	CHECK(!routectl_node_triggers(&a.n, &a2.n));
}

TEST_MAIN()
