/* test_cloudconfig.c - the --cloud-config loader: every schema type, nested
 * sections, positions of unknown keys and wrong types, required keys,
 * defaults from `{}` and empty files, malformed YAML and caps. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "config/cloudconfig.h"
#include "base/err.h"
#include "base/clock.h"

struct cfg {
	char *token;
	char *region;
	int debug;
	long long workers;
	int64_t timeout_ns;
	struct cloudconfig_list networks;
	struct cloudconfig_map tags;
	char *lb_type;
	int lb_ipv6;
	char *inner_name;
};

static const struct cloudconfig_key inner_schema[] = {
	{ .key = "name", .type = CLOUDCONFIG_STRING, .required = 1,
	  .offset = offsetof(struct cfg, inner_name) },
	{ .key = NULL },
};

static const struct cloudconfig_key lb_schema[] = {
	{ .key = "type", .type = CLOUDCONFIG_STRING, .def = "lb11",
	  .offset = offsetof(struct cfg, lb_type) },
	{ .key = "ipv6", .type = CLOUDCONFIG_BOOL, .def = "true",
	  .offset = offsetof(struct cfg, lb_ipv6) },
	{ .key = "inner", .type = CLOUDCONFIG_SECTION, .section = inner_schema },
	{ .key = NULL },
};

static const struct cloudconfig_key schema[] = {
	{ .key = "token", .type = CLOUDCONFIG_STRING, .offset = offsetof(struct cfg, token) },
	{ .key = "region", .type = CLOUDCONFIG_STRING, .def = "fsn1",
	  .offset = offsetof(struct cfg, region) },
	{ .key = "debug", .type = CLOUDCONFIG_BOOL, .def = "false",
	  .offset = offsetof(struct cfg, debug) },
	{ .key = "workers", .type = CLOUDCONFIG_INT, .def = "4", .min = 1, .max = 64,
	  .offset = offsetof(struct cfg, workers) },
	{ .key = "timeout", .type = CLOUDCONFIG_DURATION, .def = "30s",
	  .min = 0, .max = 3600 * NS_PER_S, .offset = offsetof(struct cfg, timeout_ns) },
	{ .key = "networks", .type = CLOUDCONFIG_STRING_LIST,
	  .offset = offsetof(struct cfg, networks) },
	{ .key = "tags", .type = CLOUDCONFIG_MAP, .offset = offsetof(struct cfg, tags) },
	{ .key = "loadBalancer", .type = CLOUDCONFIG_SECTION, .section = lb_schema },
	{ .key = NULL },
};

/* a schema with a required top-level key */
struct req {
	char *token;
};

static const struct cloudconfig_key req_schema[] = {
	{ .key = "token", .type = CLOUDCONFIG_STRING, .required = 1,
	  .offset = offsetof(struct req, token) },
	{ .key = NULL },
};

static int
parse(const char *yaml, struct cfg *c, struct errbuf *e)
{
	memset(c, 0, sizeof(*c));
	e->msg[0] = '\0';
	return cloudconfig_parse(yaml, strlen(yaml), "cc.yaml", schema, c, sizeof(*c), e);
}

static void
check_defaults(const struct cfg *c, int *harness_failed)
{
	CHECK(c->token == NULL);
	CHECK_STR(c->region, "fsn1");
	CHECK(c->debug == 0);
	CHECK(c->workers == 4);
	CHECK(c->timeout_ns == 30 * NS_PER_S);
	CHECK(c->networks.n == 0 && c->networks.items == NULL);
	CHECK(c->tags.n == 0);
	CHECK_STR(c->lb_type, "lb11");
	CHECK(c->lb_ipv6 == 1);
	CHECK(c->inner_name == NULL);
}

TEST(empty_means_defaults)
{
	static const char *docs[] = { "", "{}", "{}\n", "# nothing\n", "---\n", "~\n" };
	struct errbuf e;
	struct cfg c;
	size_t i;

	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		CHECK(parse(docs[i], &c, &e) == 0);
		check_defaults(&c, harness_failed);
		if (*harness_failed)
			return;
		cloudconfig_free(schema, &c);
	}
}

TEST(every_type)
{
	struct errbuf e;
	struct cfg c;

	CHECK(parse("token: \"abc\"\nregion: nbg1\ndebug: yes\nworkers: 8\ntimeout: 1m30s\n"
	    "networks: [a, \"b\"]\ntags:\n  team: infra\n  env: \"prod\"\n"
	    "loadBalancer:\n  type: lb21\n  ipv6: off\n  inner:\n    name: x\n", &c, &e) == 0);
	CHECK_STR(c.token, "abc");
	CHECK_STR(c.region, "nbg1");
	CHECK(c.debug == 1);
	CHECK(c.workers == 8);
	CHECK(c.timeout_ns == 90 * NS_PER_S);
	CHECK(c.networks.n == 2);
	CHECK_STR(c.networks.items[0], "a");
	CHECK_STR(c.networks.items[1], "b");
	CHECK(c.tags.n == 2);
	CHECK_STR(c.tags.keys[0], "team");
	CHECK_STR(c.tags.values[0], "infra");
	CHECK_STR(c.tags.keys[1], "env");
	CHECK_STR(c.tags.values[1], "prod");
	CHECK_STR(c.lb_type, "lb21");
	CHECK(c.lb_ipv6 == 0);
	CHECK_STR(c.inner_name, "x");
	cloudconfig_free(schema, &c);
	CHECK(c.token == NULL && c.networks.items == NULL && c.tags.keys == NULL);
}

TEST(null_values_take_defaults)
{
	struct errbuf e;
	struct cfg c;

	CHECK(parse("region:\nworkers: ~\nloadBalancer:\n", &c, &e) == 0);
	check_defaults(&c, harness_failed);
	cloudconfig_free(schema, &c);
}

TEST(unknown_key_top)
{
	struct errbuf e;
	struct cfg c;

	CHECK(parse("region: a\n  \nregoin: b\n", &c, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "cc.yaml:3:1: unknown key \"regoin\" in the top level");
	CHECK(c.region == NULL); /* untouched on failure */
}

TEST(unknown_key_nested)
{
	struct errbuf e;
	struct cfg c;

	CHECK(parse("loadBalancer:\n  type: a\n  inner:\n      nmae: x\n", &c, &e) ==
	    ERR_INVALID);
	CHECK_STR(e.msg, "cc.yaml:4:7: unknown key \"nmae\" in loadBalancer.inner");
	CHECK(parse("loadBalancer:\n  tpye: a\n", &c, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "cc.yaml:2:3: unknown key \"tpye\" in loadBalancer");
}

TEST(wrong_types)
{
	struct errbuf e;
	struct cfg c;

	CHECK(parse("debug: maybe\n", &c, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "cc.yaml:1:8: key \"debug\" in the top level: want a boolean");
	CHECK(parse("debug: \"true\"\n", &c, &e) == ERR_INVALID);
	CHECK(parse("workers: 4x\n", &c, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "cc.yaml:1:10: key \"workers\" in the top level: want an integer "
	    "in [1, 64]");
	CHECK(parse("workers: 65\n", &c, &e) == ERR_INVALID);
	CHECK(parse("workers: 0\n", &c, &e) == ERR_INVALID);
	CHECK(parse("workers: \"8\"\n", &c, &e) == ERR_INVALID);
	CHECK(parse("workers: 99999999999999999999999\n", &c, &e) == ERR_INVALID);
	CHECK(parse("timeout: -5s\n", &c, &e) == ERR_INVALID);
	CHECK(parse("timeout: 30\n", &c, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "cc.yaml:1:10: key \"timeout\"");
	/* a bounded duration: the extremes are refused at the value, the bound is not */
	CHECK(parse("timeout: 9223372036854775807ns\n", &c, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "cc.yaml:1:10: key \"timeout\" in the top level: "
	    "\"9223372036854775807ns\": want a duration from 0s to 1h0m0s");
	CHECK(parse("timeout: 1h0m0.000000001s\n", &c, &e) == ERR_INVALID);
	CHECK(parse("timeout: 1h\n", &c, &e) == 0 && c.timeout_ns == 3600 * NS_PER_S);
	cloudconfig_free(schema, &c);
	CHECK(parse("timeout: 0s\n", &c, &e) == 0 && c.timeout_ns == 0);
	cloudconfig_free(schema, &c);
	CHECK(parse("token: [a]\n", &c, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "cc.yaml:1:8: key \"token\" in the top level: want a string");
	CHECK(parse("token: \"a\\0b\"\n", &c, &e) == ERR_INVALID);
	CHECK(parse("networks: a\n", &c, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "cc.yaml:1:11: key \"networks\" in the top level: want a list of "
	    "strings");
	CHECK(parse("networks: [a, [b]]\n", &c, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "cc.yaml:1:15: key \"networks\" in the top level: want a list of "
	    "strings");
	CHECK(parse("tags: [a]\n", &c, &e) == ERR_INVALID);
	CHECK(parse("tags:\n  a: {b: c}\n", &c, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "cc.yaml:2:6: key \"tags\" in the top level: want a map of strings");
	CHECK(parse("loadBalancer: lb11\n", &c, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "cc.yaml:1:15: key \"loadBalancer\" in the top level: want a map");
	CHECK(parse("- a\n- b\n", &c, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "cc.yaml:1:1: want a map of settings at the top level");
	CHECK(parse("just text\n", &c, &e) == ERR_INVALID);
}

TEST(required_keys)
{
	struct errbuf e;
	struct req r;

	memset(&r, 0, sizeof(r));
	CHECK(cloudconfig_parse("{}", 2, "r.yaml", req_schema, &r, sizeof(r), &e) ==
	    ERR_INVALID);
	CHECK_STR(e.msg, "r.yaml:1:1: missing required key \"token\" in the top level");
	CHECK(cloudconfig_parse("", 0, "r.yaml", req_schema, &r, sizeof(r), &e) == ERR_INVALID);
	CHECK_STR(e.msg, "r.yaml: missing required key \"token\" in the top level");
	CHECK(cloudconfig_parse("token:\n", 7, "r.yaml", req_schema, &r, sizeof(r), &e) ==
	    ERR_INVALID);
	CHECK_STR(e.msg, "r.yaml:1:7: missing required key \"token\" in the top level");
	CHECK(cloudconfig_parse("token: t\n", 9, "r.yaml", req_schema, &r, sizeof(r), &e) == 0);
	CHECK_STR(r.token, "t");
	cloudconfig_free(req_schema, &r);
}

TEST(required_in_nested_section)
{
	struct errbuf e;
	struct cfg c;

	/* the section is optional but, once given, its required key is not */
	CHECK(parse("loadBalancer:\n  inner: {}\n", &c, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "cc.yaml:2:10: missing required key \"name\" in loadBalancer.inner");
	/* an optional section left out is not checked for its required keys */
	CHECK(parse("loadBalancer: {}\n", &c, &e) == 0);
	check_defaults(&c, harness_failed);
	cloudconfig_free(schema, &c);
}

TEST(malformed_yaml)
{
	struct errbuf e;
	struct cfg c;

	CHECK(parse("a: [\n", &c, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "cc.yaml:");
	CHECK(parse("region: a\nregion: b\n", &c, &e) == ERR_INVALID);
	CHECK(parse("\t- x: :\n", &c, &e) < 0);
	CHECK(c.region == NULL);
}

TEST(caps)
{
	struct errbuf e;
	struct cfg c;
	char *big;
	size_t i, n = 0, cap = 8 * (CLOUDCONFIG_ITEMS_MAX + 2) + 64;

	/* a list longer than CLOUDCONFIG_ITEMS_MAX */
	CHECK((big = malloc(cap)) != NULL);
	n += (size_t)snprintf(big + n, cap - n, "networks:\n");
	for (i = 0; i < CLOUDCONFIG_ITEMS_MAX + 1; i++)
		n += (size_t)snprintf(big + n, cap - n, "- n\n");
	memset(&c, 0, sizeof(c));
	CHECK(cloudconfig_parse(big, n, "cc.yaml", schema, &c, sizeof(c), &e) == ERR_TOO_LARGE);
	CHECK_CONTAINS(e.msg, "cc.yaml:2:1: too many items in the top level");
	free(big);
	/* a string longer than CLOUDCONFIG_STRING_MAX */
	cap = CLOUDCONFIG_STRING_MAX + 32;
	CHECK((big = malloc(cap)) != NULL);
	memcpy(big, "token: ", 7);
	memset(big + 7, 'a', CLOUDCONFIG_STRING_MAX);
	big[7 + CLOUDCONFIG_STRING_MAX] = '\n';
	CHECK(cloudconfig_parse(big, 8 + CLOUDCONFIG_STRING_MAX, "cc.yaml", schema, &c,
	    sizeof(c), &e) == ERR_TOO_LARGE);
	CHECK_STR(e.msg, "cc.yaml:1:8: key \"token\" in the top level: longer than 4095 bytes");
	/* one byte less fits */
	if (cloudconfig_parse(big, 6 + CLOUDCONFIG_STRING_MAX, "cc.yaml", schema, &c,
	    sizeof(c), &e) != 0) {
		free(big);
		CHECK(!"4095 bytes of string are refused");
	}
	free(big);
	CHECK(c.token != NULL && strlen(c.token) == CLOUDCONFIG_STRING_MAX - 1);
	cloudconfig_free(schema, &c);
	/* a file over CLOUDCONFIG_FILE_MAX */
	CHECK(cloudconfig_parse("", CLOUDCONFIG_FILE_MAX + 1, "cc.yaml", schema, &c,
	    sizeof(c), &e) == ERR_TOO_LARGE);
	/* billion laughs: yamltree's node cap */
	CHECK(parse("a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
	    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
	    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n",
	    &c, &e) < 0);
}

TEST(load_file)
{
	char path[] = "/tmp/test_cloudconfig.XXXXXX";
	struct errbuf e;
	struct cfg c;
	FILE *f;
	int fd;

	memset(&c, 0, sizeof(c));
	CHECK(cloudconfig_load(NULL, schema, &c, sizeof(c), &e) == 0);
	check_defaults(&c, harness_failed);
	cloudconfig_free(schema, &c);
	CHECK(cloudconfig_load("/nonexistent/cc.yaml", schema, &c, sizeof(c), &e) == ERR_IO);
	CHECK_CONTAINS(e.msg, "/nonexistent/cc.yaml");
	CHECK((fd = mkstemp(path)) >= 0);
	CHECK((f = fdopen(fd, "w")) != NULL);
	fputs("region: hel1\nbogus: 1\n", f);
	fclose(f);
	CHECK(cloudconfig_load(path, schema, &c, sizeof(c), &e) == ERR_INVALID);
	CHECK(strncmp(e.msg, path, strlen(path)) == 0);
	CHECK_CONTAINS(e.msg, ":2:1: unknown key \"bogus\" in the top level");
	CHECK((f = fopen(path, "w")) != NULL);
	fputs("{}\n", f);
	fclose(f);
	CHECK(cloudconfig_load(path, schema, &c, sizeof(c), &e) == 0);
	check_defaults(&c, harness_failed);
	cloudconfig_free(schema, &c);
	unlink(path);
	/* a directory says so */
	CHECK(cloudconfig_load("/tmp", schema, &c, sizeof(c), &e) == ERR_IO);
	CHECK_STR(e.msg, "/tmp: is a directory, not a regular file");
}

/* a provider's check: a region is one of two */
static int
check_region(const char *v, struct errbuf *e)
{
	if (strcmp(v, "fsn1") == 0 || strcmp(v, "hel1") == 0)
		return 0;
	return errbuf_set(e, ERR_INVALID, "\"%s\": want fsn1 or hel1", v);
}

struct checked {
	char *region;
};

static const struct cloudconfig_key checked_inner[] = {
	{ .key = "region", .type = CLOUDCONFIG_STRING, .check = check_region,
	  .offset = offsetof(struct checked, region) },
	{ .key = NULL },
};

static const struct cloudconfig_key checked_schema[] = {
	{ .key = "where", .type = CLOUDCONFIG_SECTION, .section = checked_inner },
	{ .key = NULL },
};

TEST(a_checked_value_is_reported_where_it_is_written)
{
	static const char bad[] = "# where we run\nwhere:\n  region: nbg1\n";
	static const char good[] = "where: {region: hel1}\n";
	struct checked c;
	struct errbuf e;

	memset(&c, 0, sizeof(c));
	CHECK(cloudconfig_parse(bad, strlen(bad), "cc.yaml", checked_schema, &c, sizeof(c),
	    &e) == ERR_INVALID);
	CHECK_STR(e.msg, "cc.yaml:3:11: key \"region\" in where: \"nbg1\": want fsn1 or hel1");
	CHECK(c.region == NULL);
	CHECK(cloudconfig_parse(good, strlen(good), "cc.yaml", checked_schema, &c, sizeof(c),
	    &e) == 0);
	CHECK_STR(c.region, "hel1");
	cloudconfig_free(checked_schema, &c);
}

/* --- lists of sections and value checks ------------------------------------ */

struct port {
	char *proto;
	long long number;
};

struct pool {
	char *name;
	struct cloudconfig_list cidrs;
	struct cloudconfig_map tags;
	int auto_assign;
	struct cloudconfig_sections ports;  /* struct port */
};

struct pools {
	struct cloudconfig_sections pools;  /* struct pool */
	char *owner;
};

static int
check_no_x(const char *v, struct errbuf *e)
{
	if (strchr(v, 'x') != NULL)
		return errbuf_set(e, ERR_INVALID, "\"%s\" has an x", v);
	return 0;
}

static int
check_lower(const char *v, struct errbuf *e)
{
	for (; *v; v++)
		if (*v >= 'A' && *v <= 'Z')
			return errbuf_set(e, ERR_INVALID, "not lower case");
	return 0;
}

static const struct cloudconfig_key port_schema[] = {
	{ .key = "proto", .type = CLOUDCONFIG_STRING, .def = "TCP",
	  .offset = offsetof(struct port, proto) },
	{ .key = "number", .type = CLOUDCONFIG_INT, .required = 1, .min = 1, .max = 65535,
	  .offset = offsetof(struct port, number) },
	{ .key = NULL },
};

static const struct cloudconfig_key pool_schema[] = {
	{ .key = "name", .type = CLOUDCONFIG_STRING, .required = 1, .check = check_no_x,
	  .offset = offsetof(struct pool, name) },
	{ .key = "cidrs", .type = CLOUDCONFIG_STRING_LIST, .check = check_no_x, .max_items = 3,
	  .offset = offsetof(struct pool, cidrs) },
	{ .key = "tags", .type = CLOUDCONFIG_MAP, .check = check_no_x, .check_key = check_lower,
	  .offset = offsetof(struct pool, tags) },
	{ .key = "autoAssign", .type = CLOUDCONFIG_BOOL, .def = "true",
	  .offset = offsetof(struct pool, auto_assign) },
	{ .key = "ports", .type = CLOUDCONFIG_SECTION_LIST, .section = port_schema,
	  .elem_size = sizeof(struct port), .offset = offsetof(struct pool, ports) },
	{ .key = NULL },
};

static const struct cloudconfig_key pools_inner[] = {
	{ .key = "pools", .type = CLOUDCONFIG_SECTION_LIST, .section = pool_schema,
	  .elem_size = sizeof(struct pool), .max_items = 4,
	  .offset = offsetof(struct pools, pools) },
	{ .key = "owner", .type = CLOUDCONFIG_STRING, .offset = offsetof(struct pools, owner) },
	{ .key = NULL },
};

static const struct cloudconfig_key pools_schema[] = {
	{ .key = "lb", .type = CLOUDCONFIG_SECTION, .section = pools_inner },
	{ .key = NULL },
};

static int
parse_pools(const char *yaml, struct pools *p, struct errbuf *e)
{
	memset(p, 0, sizeof(*p));
	e->msg[0] = '\0';
	return cloudconfig_parse(yaml, strlen(yaml), "lb.yaml", pools_schema, p, sizeof(*p), e);
}

TEST(section_list_loads_each_element_with_its_position)
{
	struct errbuf e;
	struct pools p;
	const struct pool *a, *b;
	const struct port *pt;

	CHECK(parse_pools("lb:\n  owner: me\n  pools:\n  - name: a\n    cidrs: [c1, c2]\n"
	    "    tags: {team: infra}\n    ports:\n    - {number: 80}\n"
	    "    - {proto: UDP, number: 53}\n"
	    "  - name: b\n    autoAssign: false\n", &p, &e) == 0);
	CHECK_STR(p.owner, "me");
	CHECK(p.pools.n == 2);
	a = (const struct pool *)p.pools.items;
	b = a + 1;
	CHECK_STR(a->name, "a");
	CHECK(a->cidrs.n == 2);
	CHECK_STR(a->cidrs.items[1], "c2");
	CHECK(a->tags.n == 1);
	CHECK_STR(a->tags.values[0], "infra");
	CHECK(a->auto_assign == 1);     /* each element gets its defaults */
	CHECK(a->ports.n == 2);
	pt = (const struct port *)a->ports.items;
	CHECK_STR(pt[0].proto, "TCP");
	CHECK(pt[0].number == 80);
	CHECK_STR(pt[1].proto, "UDP");
	CHECK(pt[1].number == 53);
	CHECK(a->ports.pos[1].line == 9 && a->ports.pos[1].col == 7);
	CHECK_STR(b->name, "b");
	CHECK(b->auto_assign == 0);
	CHECK(b->ports.n == 0 && b->ports.items == NULL);
	CHECK(p.pools.pos[0].line == 4 && p.pools.pos[0].col == 5);
	CHECK(p.pools.pos[1].line == 10 && p.pools.pos[1].col == 5);
	cloudconfig_free(pools_schema, &p);
	CHECK(p.pools.n == 0 && p.pools.items == NULL && p.pools.pos == NULL && p.owner == NULL);
	/* empty and absent lists */
	CHECK(parse_pools("lb:\n  pools: []\n", &p, &e) == 0);
	CHECK(p.pools.n == 0 && p.pools.items == NULL);
	cloudconfig_free(pools_schema, &p);
	CHECK(parse_pools("", &p, &e) == 0);
	CHECK(p.pools.n == 0);
	cloudconfig_free(pools_schema, &p);
}

TEST(section_list_errors_name_the_element)
{
	struct errbuf e;
	struct pools p;

	CHECK(parse_pools("lb:\n  pools:\n  - name: a\n  - name: b\n    bogus: 1\n", &p, &e) ==
	    ERR_INVALID);
	CHECK_STR(e.msg, "lb.yaml:5:5: unknown key \"bogus\" in lb.pools[1]");
	CHECK(p.pools.n == 0 && p.pools.items == NULL);  /* untouched on failure */
	CHECK(parse_pools("lb:\n  pools:\n  - name: a\n  - cidrs: []\n", &p, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "lb.yaml:4:5: missing required key \"name\" in lb.pools[1]");
	CHECK(parse_pools("lb:\n  pools:\n  - name: a\n    ports:\n    - {number: 0}\n", &p,
	    &e) == ERR_INVALID);
	CHECK_STR(e.msg, "lb.yaml:5:16: key \"number\" in lb.pools[0].ports[0]: want an "
	    "integer in [1, 65535]");
	CHECK(parse_pools("lb:\n  pools: {name: a}\n", &p, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "lb.yaml:2:10: key \"pools\" in lb: want a list of maps");
	CHECK(parse_pools("lb:\n  pools:\n  - a\n", &p, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "lb.yaml:3:5: key \"pools\" in lb: want a list of maps");
	CHECK(parse_pools("lb:\n  pools: [{name: a}, {name: b}, {name: c}, {name: d}, "
	    "{name: e}]\n", &p, &e) == ERR_TOO_LARGE);
	CHECK_STR(e.msg, "lb.yaml:2:10: more than 4 items in lb");
	CHECK(parse_pools("lb:\n  pools: [{name: a, cidrs: [a, b, c, d]}]\n", &p, &e) ==
	    ERR_TOO_LARGE);
	CHECK_STR(e.msg, "lb.yaml:2:28: more than 3 items in lb.pools[0]");
}

TEST(checks_report_at_the_value)
{
	struct errbuf e;
	struct pools p;

	CHECK(parse_pools("lb:\n  pools:\n  - name: box\n", &p, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "lb.yaml:3:11: key \"name\" in lb.pools[0]: \"box\" has an x");
	CHECK(parse_pools("lb:\n  pools:\n  - name: a\n    cidrs:\n    - ok\n    - sixty\n",
	    &p, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "lb.yaml:6:7: key \"cidrs\" in lb.pools[0]: \"sixty\" has an x");
	CHECK(parse_pools("lb:\n  pools:\n  - name: a\n    tags: {Team: a}\n", &p, &e) ==
	    ERR_INVALID);
	CHECK_STR(e.msg, "lb.yaml:4:12: key \"tags\" in lb.pools[0]: not lower case");
	CHECK(parse_pools("lb:\n  pools:\n  - name: a\n    tags: {team: xx}\n", &p, &e) ==
	    ERR_INVALID);
	CHECK_STR(e.msg, "lb.yaml:4:18: key \"tags\" in lb.pools[0]: \"xx\" has an x");
	CHECK(p.pools.n == 0);
}

TEST_MAIN()
