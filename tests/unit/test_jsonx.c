/* test_jsonx.c - one standard for every answer: strict JSON, UTF-8, depth,
 * nothing after the value; a parse that keeps some members holds the whole
 * text to that same standard; and the typed getters' absent/null/wrong-type
 * rules and messages. */
#include <stdint.h>
#include <string.h>

#include "base/err.h"
#include "harness.h"
#include "base/jsonx.h"

static int
parse(const char *s, json_object **o, struct errbuf *e)
{
	return jsonx_parse(s, strlen(s), 8, o, e);
}

TEST(accepts_one_value_with_whitespace_after)
{
	json_object *o = NULL;
	struct errbuf e;

	CHECK(parse("{\"a\":1}", &o, &e) == 0);
	json_object_put(o);
	CHECK(parse("  [1, 2, \"x\"] \r\n\t", &o, &e) == 0);
	json_object_put(o);
	CHECK(parse("\"caf\xc3\xa9\"", &o, &e) == 0);
	json_object_put(o);
	static const char *good[] = {
		"-0.5e-3", "0", "[-0, 1E+2, 2e9, 1.25]", "\"\\ud800\"",
		"{\"a\":{\"b\":[true,false,null,\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\"]}}",
		"{}", "[]", "[[],{}]", "{\"a\":1,\"a\":2}",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int r = parse(good[i], &o, &e);
		if (r != 0)
			fprintf(stderr, "  refused: %s: %s\n", good[i], e.msg);
		CHECK(r == 0);
		json_object_put(o);
	}
	/* depth: exactly the limit is fine */
	CHECK(parse("[[[[[[[[1]]]]]]]]", &o, &e) == 0);
	json_object_put(o);
	CHECK(parse("[[[[[[[[[1]]]]]]]]]", &o, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "deeper than 8");
}

TEST(refuses_what_go_refuses)
{
	static const char *bad[] = {
		"{'a':1}",            /* single quotes */
		"{\"a\":1,}",         /* trailing comma */
		"[1,]",
		"{a:1}",              /* bare word */
		"/* c */ {}",         /* comment */
		"{\"a\":1} x",        /* data after the value */
		"{\"a\":1}{}",
		"{\"a\":",            /* cut short */
		"",
		"\"\xff\"",           /* not UTF-8 */
		"\"\xc3\"",
		"[[[[[[[[[[1]]]]]]]]]]", /* deeper than 8 */
		"NaN",
		"01",
		"[NaN]",              /* json-c's strict mode takes these four */
		"[Infinity]",
		"[1.]",
		"\"a\tb\"",            /* a raw control byte in a string */
		"\"\\x41\"",           /* not an escape */
		"\"\\u12\"",
		"[1 2]",
		"{\"a\" 1}",
		"{\"a\":1]",          /* mismatched */
		"[-]",
		"[1e]",
		"[.5]",
		"[+1]",
		"[tru]",
		"[nul]",
		"True",
		"[\"a\",]",
		"{,}",
		"]",
	};
	json_object *o = (json_object *)1;
	struct errbuf e;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = parse(bad[i], &o, &e);
		if (r != ERR_INVALID)
			fprintf(stderr, "  accepted: %s\n", bad[i]);
		CHECK(r == ERR_INVALID);
	}
	CHECK(o == (json_object *)1);  /* untouched */
	CHECK(parse("{\"a\":1} x", &o, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "data after the value (at byte 8)");
	CHECK(parse("{\"a\":", &o, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "cut short");
	CHECK(parse("[NaN]", &o, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "not valid JSON: unexpected 'N' (at byte 1)");
	CHECK(jsonx_parse("{}", 2, 0, &o, &e) == ERR_INVALID);
	CHECK(jsonx_parse("{}", 2, JSONX_DEPTH_MAX + 1, &o, &e) == ERR_INVALID);
}

/* what a parse keeping K builds, printed */
static const struct jsonx_keep keep_spec[] = {
	{ "name", NULL },
	{ "addresses", NULL },
	{ NULL, NULL },
};
static const struct jsonx_keep keep_status[] = {
	{ "addresses", NULL },
	{ "conditions", NULL },
	{ NULL, NULL },
};
static const struct jsonx_keep keep_top[] = {
	{ "metadata", keep_spec },
	{ "status", keep_status },
	{ "kind", NULL },
	{ NULL, NULL },
};

static const char *
kept(const char *s, json_object **o, struct errbuf *e)
{
	if (jsonx_parse_keep(s, strlen(s), 8, keep_top, o, e) < 0)
		return NULL;
	return json_object_to_json_string_ext(*o, JSON_C_TO_STRING_PLAIN);
}

TEST(keep_builds_only_the_named_members)
{
	json_object *o = NULL;
	struct errbuf e;

	CHECK_STR(kept("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"managedFields\":"
	    "[{\"f:a\":{}}],\"labels\":{\"a\":\"b\"}},\"spec\":{\"x\":1},\"status\":"
	    "{\"images\":[{\"names\":[\"i\"]}],\"addresses\":[{\"type\":\"InternalIP\"}],"
	    "\"conditions\":[]}}", &o, &e),
	    "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":"
	    "{\"addresses\":[{\"type\":\"InternalIP\"}],\"conditions\":[]}}");
	json_object_put(o);
	/* first members dropped, whitespace, an empty filtered object */
	CHECK_STR(kept(" { \"a\" : 1 , \"status\" : { \"x\" : [ 1 ] } , \"metadata\" : "
	    "{ } } ", &o, &e), "{\"status\":{},\"metadata\":{}}");
	json_object_put(o);
	CHECK_STR(kept("{}", &o, &e), "{}");
	json_object_put(o);
	/* a filtered member that is neither an object nor an array is kept
	 * whole: the getter still says what it is */
	CHECK_STR(kept("{\"metadata\":\"x\",\"status\":7}", &o, &e),
	    "{\"metadata\":\"x\",\"status\":7}");
	json_object_put(o);
	/* of an array, every element is kept, its objects filtered */
	CHECK_STR(kept("{\"metadata\":[1,{\"a\":2,\"name\":\"n\"},[{\"a\":3}],{},null],"
	    "\"status\":[]}", &o, &e),
	    "{\"metadata\":[1,{\"name\":\"n\"},[{\"a\":3}],{},null],\"status\":[]}");
	json_object_put(o);
	/* a key written with an escape is kept whole, so the tree holds what a
	 * full parse gives for it */
	CHECK_STR(kept("{\"met\\u0061data\":{\"x\":1,\"name\":\"n\"},\"z\\u0041\":2}", &o, &e),
	    "{\"metadata\":{\"x\":1,\"name\":\"n\"},\"zA\":2}");
	json_object_put(o);
	/* a later duplicate wins, as in a full parse */
	CHECK_STR(kept("{\"kind\":\"a\",\"kind\":\"b\"}", &o, &e), "{\"kind\":\"b\"}");
	json_object_put(o);
	/* not an object at the top: kept whole */
	CHECK_STR(kept("[{\"a\":1}]", &o, &e), "[{\"a\":1}]");
	json_object_put(o);
	CHECK_STR(kept("\"caf\xc3\xa9\"", &o, &e), "\"caf\xc3\xa9\"");
	json_object_put(o);
	/* NULL keeps everything */
	CHECK(jsonx_parse_keep("{\"a\":{\"b\":1}}", 13, 8, NULL, &o, &e) == 0);
	CHECK_STR(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "{\"a\":{\"b\":1}}");
	json_object_put(o);
}

TEST(keep_holds_the_dropped_parts_to_the_same_standard)
{
	/* each fault sits in a member the parse does not keep */
	static const char *bad[] = {
		"{\"spec\":{'a':1}}",
		"{\"spec\":[1,]}",
		"{\"spec\":\"\xff\"}",
		"{\"spec\":\"\xc3\"}",
		"{\"spec\":\"\xe2\x82\"}",
		"{\"spec\":\"a\tb\"}",
		"{\"spec\":[NaN]}",
		"{\"spec\":[1.]}",
		"{\"spec\":01}",
		"{\"spec\":{\"a\" 1}}",
		"{\"spec\":{\"a\":1]}",
		"{\"spec\":[[[[[[[[1]]]]]]]]}",  /* deeper than 8 */
		"{\"spec\":1",
		"{\"spec\":1} x",
		"{\"metadata\":{\"managedFields\":[tru]}}",
		"{\"status\":{\"images\":\"\\x41\"}}",
		"{\"\xff\":1}",
	};
	json_object *o = (json_object *)1;
	struct errbuf e, e2;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = jsonx_parse_keep(bad[i], strlen(bad[i]), 8, keep_top, &o, &e);
		int r2 = parse(bad[i], &o, &e2);
		if (r != ERR_INVALID || strcmp(e.msg, e2.msg) != 0)
			fprintf(stderr, "  %s: kept %d \"%s\", full %d \"%s\"\n", bad[i], r, e.msg,
			    r2, e2.msg);
		CHECK(r == ERR_INVALID && r2 == ERR_INVALID);
		CHECK_STR(e.msg, e2.msg);
	}
	CHECK(o == (json_object *)1);  /* untouched */
}

TEST(utf8_is_checked_in_strings_with_json_c_rules)
{
	json_object *o = NULL;
	struct errbuf e;

	/* two-, three- and four-byte sequences */
	CHECK(parse("[\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]", &o, &e) == 0);
	json_object_put(o);
	CHECK(parse("{\"k\xc3\xa9y\":1}", &o, &e) == 0);
	json_object_put(o);
	/* a continuation byte without a lead, a lead without enough */
	CHECK(parse("[\"a\x80\"]", &o, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "not valid JSON: invalid utf-8 string (at byte 3)");
	CHECK(parse("[\"\xe2\x82\"]", &o, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "not valid JSON: invalid utf-8 string (at byte 4)");
	CHECK(parse("\"\xf0\x9f\x98", &o, &e) == ERR_INVALID);
	CHECK(parse("[\"\xf8\x80\x80\x80\x80\"]", &o, &e) == ERR_INVALID);
	/* outside a string any byte past ASCII is refused as before */
	CHECK(parse("[1,\xc3\xa9]", &o, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "not valid JSON: unexpected byte 0xc3 (at byte 3)");
}

TEST(getters_absent_null_and_types)
{
	json_object *o, *v;
	struct errbuf e;
	const char *s;
	size_t n, len;
	int64_t i;
	int b;

	CHECK(parse("{\"s\":\"x\",\"n\":null,\"i\":5,\"f\":1.5,\"b\":true,"
	    "\"o\":{},\"a\":[1,2],\"nul\":\"a\\u0000b\",\"big\":99999999999999999999,"
	    "\"max\":9223372036854775807,\"t\":\"2026-11-21T08:00:00Z\"}", &o, &e) == 0);
	CHECK(jsonx_str(o, "", "s", 0, &s, &len, &e) == 0);
	CHECK_STR(s, "x");
	CHECK(len == 1);
	CHECK(jsonx_str(o, "", "n", 0, &s, NULL, &e) == 0);  /* null = absent */
	CHECK(s == NULL);
	CHECK(jsonx_str(o, "", "missing", 0, &s, NULL, &e) == 0);
	CHECK(s == NULL);
	CHECK(jsonx_str(o, "spec", "missing", JSONX_REQUIRED, &s, NULL, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "spec.missing: missing");
	CHECK(jsonx_str(o, "spec", "n", JSONX_REQUIRED, &s, NULL, &e) == ERR_INVALID);
	CHECK(jsonx_str(o, "", "i", 0, &s, NULL, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "i: expected a string");
	CHECK(jsonx_str(o, "metadata", "nul", 0, &s, NULL, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "metadata.nul: holds a NUL character");
	/* the length is kept: the NUL is in the string, not its end */
	CHECK(json_object_object_get_ex(o, "nul", &v) && json_object_get_string_len(v) == 3);
	/* free text with a NUL reads as absent, flagged, where the caller allows it */
	b = 0;
	CHECK(jsonx_str_nul(o, "metadata", "nul", &s, &b, &e) == 0);
	CHECK(s == NULL && b == 1);
	CHECK(jsonx_str_nul(o, "metadata", "s", &s, &b, &e) == 0);
	CHECK_STR(s, "x");
	CHECK(b == 0);
	CHECK(jsonx_str_nul(o, "metadata", "missing", &s, &b, &e) == 0);
	CHECK(s == NULL && b == 0);
	CHECK(jsonx_str_nul(o, "metadata", "i", &s, &b, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "metadata.i: expected a string");

	CHECK(jsonx_int(o, "", "i", 0, 10, 0, &i, &e) == 0);
	CHECK(i == 5);
	CHECK(jsonx_int(o, "", "i", 6, 10, 0, &i, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "i: out of range");
	CHECK(jsonx_int(o, "", "f", 0, 10, 0, &i, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "f: expected an integer");
	CHECK(jsonx_int(o, "", "s", 0, 10, 0, &i, &e) == ERR_INVALID);
	CHECK(jsonx_int(o, "", "big", INT64_MIN, INT64_MAX, 0, &i, &e) == ERR_INVALID);
	CHECK(jsonx_int(o, "", "max", INT64_MIN, INT64_MAX, 0, &i, &e) == 0);
	CHECK(i == INT64_MAX);
	i = 9;
	CHECK(jsonx_int(o, "", "n", 0, 10, 0, &i, &e) == 0);
	CHECK(i == 0);

	CHECK(jsonx_bool(o, "", "b", 0, &b, &e) == 0);
	CHECK(b == 1);
	CHECK(jsonx_bool(o, "", "i", 0, &b, &e) == ERR_INVALID);
	CHECK(jsonx_object(o, "", "o", 0, &v, &e) == 0);
	CHECK(v != NULL);
	CHECK(jsonx_object(o, "", "a", 0, &v, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "a: expected an object");
	CHECK(jsonx_array(o, "", "a", 0, &v, &n, &e) == 0);
	CHECK(n == 2);
	CHECK(jsonx_array(o, "", "n", 0, &v, &n, &e) == 0);
	CHECK(v == NULL && n == 0);

	CHECK(jsonx_time(o, "", "t", 0, &i, &e) == 0);
	CHECK(i == 1795248000LL);
	CHECK(jsonx_time(o, "status", "s", 0, &i, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "status.s: not an RFC 3339 time");
	CHECK(jsonx_get(NULL, "", "x", json_type_string, 0, &v, &e) == 0);
	CHECK(v == NULL);
	json_object_put(o);
}

TEST_MAIN()
