/* test_labelsel.c - label selectors as kubectl writes them: every operator,
 * whitespace, absent keys under != and notin, the API server's key and value
 * rules, and malformed selectors refused with the offset. */
#include <string.h>

#include "base/err.h"
#include "harness.h"
#include "base/labelsel.h"

/* labels as "k=v" strings, NULL-terminated */
static const char *
get(const void *labels, const char *key)
{
	for (const char *const *l = labels; *l; l++) {
		size_t n = strlen(key);
		if (strncmp(*l, key, n) == 0 && (*l)[n] == '=')
			return *l + n + 1;
	}
	return NULL;
}

static int
match(const char *sel, const char *const *labels)
{
	struct labelsel s;
	struct errbuf e;
	int m;

	if (labelsel_parse(sel, &s, &e) < 0) {
		fprintf(stderr, "  %s\n", e.msg);
		return -1;
	}
	m = labelsel_matches(&s, get, labels);
	labelsel_free(&s);
	return m;
}

TEST(operators)
{
	static const char *const node[] = { "node.kubernetes.io/instance-type=cx22",
	    "topology.kubernetes.io/zone=fsn1-dc14", "lb=yes", "empty=", NULL };

	CHECK(match("", node) == 1);
	CHECK(match("lb=yes", node) == 1);
	CHECK(match("lb==yes", node) == 1);
	CHECK(match("lb=no", node) == 0);
	CHECK(match("lb!=no", node) == 1);
	CHECK(match("missing!=x", node) == 1);
	CHECK(match("lb", node) == 1);
	CHECK(match("!lb", node) == 0);
	CHECK(match("!missing", node) == 1);
	CHECK(match("topology.kubernetes.io/zone in (fsn1-dc14, nbg1-dc3)", node) == 1);
	CHECK(match("topology.kubernetes.io/zone notin (fsn1-dc14)", node) == 0);
	CHECK(match("missing notin (a)", node) == 1);
	CHECK(match("missing in (a)", node) == 0);
	CHECK(match(" lb = yes , node.kubernetes.io/instance-type in (cx22,cx32) ", node) == 1);
	CHECK(match("lb=yes,!gpu,empty=", node) == 1);
	CHECK(match("lb=yes,gpu", node) == 0);
}

TEST(refuses_malformed)
{
	static const char *bad[] = {
		"lb=yes,", ",lb", "lb=(x)", "lb in a", "lb in (a", "lb in (a b)", "lb ~ x",
		"-lb=x", "lb=-x-", "Example.com/x=y", "a/b/c=d", "lb=yes lb2=no", "!lb=x",
		"lb!x", "x=012345678901234567890123456789012345678901234567890123456789abcd",
	};
	struct labelsel s;
	struct errbuf e;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = labelsel_parse(bad[i], &s, &e);
		if (r != ERR_INVALID)
			fprintf(stderr, "  accepted \"%s\"\n", bad[i]);
		CHECK(r == ERR_INVALID);
	}
	CHECK(labelsel_parse("lb in a", &s, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "label selector \"lb in a\": '(' expected at byte 6");
	CHECK(labelsel_key_ok("example.com/name"));
	CHECK(!labelsel_key_ok("example.com/"));
	CHECK(!labelsel_key_ok("/name"));
	CHECK(labelsel_value_ok(""));
	CHECK(!labelsel_value_ok("a b"));
}

TEST_MAIN()
