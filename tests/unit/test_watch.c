/* test_watch.c - the watch line splitter (lines across chunks, CRLF, empty
 * lines, the cap, a last line without newline), watch event decoding, and
 * the LIST item splitter (chunk boundaries, strings holding brackets, member
 * order, oversized items, caps, truncated and garbage bodies). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kube/watch.h"

/* Collected lines or items, joined with '|'. */
static char t_out[65536];
static int t_count;
static int t_fail_at = -1;

static int
t_collect(const char *p, size_t len, void *arg)
{
	size_t n = strlen(t_out);

	(void)arg;
	if (t_count++ == t_fail_at)
		return ERR_INVALID;
	if (n + len + 2 < sizeof(t_out)) {
		memcpy(t_out + n, p, len);
		t_out[n + len] = '|';
		t_out[n + len + 1] = '\0';
	}
	return 0;
}

static void
t_reset(void)
{
	t_out[0] = '\0';
	t_count = 0;
	t_fail_at = -1;
}

/* t_lines feeds text in chunks of size step (0: all at once). */
static int
t_lines(struct kube_watch_lines *s, const char *text, size_t step, struct errbuf *e)
{
	size_t len = strlen(text), off = 0;
	int r;

	while (off < len) {
		size_t n = step && step < len - off ? step : len - off;
		if ((r = kube_watch_lines_feed(s, text + off, n, t_collect, NULL, e)) < 0)
			return r;
		off += n;
	}
	return kube_watch_lines_finish(s, t_collect, NULL, e);
}

TEST(lines_across_chunks)
{
	static const char text[] = "{\"a\":1}\n{\"b\":2}\r\n\n\r\n{\"c\":3}\n";
	struct kube_watch_lines s;
	struct errbuf e;

	for (size_t step = 0; step < sizeof(text); step++) {
		kube_watch_lines_init(&s, 0);
		t_reset();
		CHECK(t_lines(&s, text, step, &e) == 0);
		CHECK_STR(t_out, "{\"a\":1}|{\"b\":2}|{\"c\":3}|");
		CHECK(s.line.p == NULL);
	}
}

TEST(lines_last_without_newline)
{
	struct kube_watch_lines s;
	struct errbuf e;

	kube_watch_lines_init(&s, 0);
	t_reset();
	CHECK(t_lines(&s, "x\ny", 1, &e) == 0);
	CHECK_STR(t_out, "x|y|");
}

TEST(lines_cap)
{
	struct kube_watch_lines s;
	struct errbuf e;
	char big[64];

	memset(big, 'x', 16);
	big[16] = '\n';
	big[17] = '\0';
	/* exactly the cap: fine, whole or in pieces */
	for (size_t step = 0; step < 4; step++) {
		kube_watch_lines_init(&s, 16);
		t_reset();
		CHECK(t_lines(&s, big, step, &e) == 0);
		CHECK(t_count == 1);
	}
	/* one byte more: a clean error, whole or in pieces, newline or not */
	memset(big, 'x', 17);
	big[17] = '\n';
	big[18] = '\0';
	for (size_t step = 0; step < 4; step++) {
		kube_watch_lines_init(&s, 16);
		t_reset();
		e.msg[0] = '\0';
		CHECK(t_lines(&s, big, step, &e) == ERR_TOO_LARGE);
		CHECK_STR(e.msg, "a watch event longer than 16 bytes");
		CHECK(t_count == 0);
		/* the cap holds the buffer too (dynbuf adds its NUL) */
		CHECK(dynbuf_len(&s.line) <= 16 && s.line.alloc <= 16 + 1);
		kube_watch_lines_reset(&s);
	}
	big[17] = '\0';
	kube_watch_lines_init(&s, 16);
	CHECK(kube_watch_lines_feed(&s, big, 17, t_collect, NULL, &e) == ERR_TOO_LARGE);
	kube_watch_lines_reset(&s);
}

TEST(lines_callback_error_and_big_buffer_freed)
{
	struct kube_watch_lines s;
	struct errbuf e;
	char *big = malloc(200001);

	kube_watch_lines_init(&s, 0);
	t_reset();
	t_fail_at = 1;
	CHECK(kube_watch_lines_feed(&s, "a\nb\nc\n", 6, t_collect, NULL, &e) == ERR_INVALID);
	CHECK_STR(t_out, "a|");
	kube_watch_lines_reset(&s);

	/* a line far above KUBE_WATCH_KEEP does not pin its buffer */
	memset(big, 'y', 200000);
	big[200000] = '\n';
	t_reset();
	kube_watch_lines_init(&s, 0);
	CHECK(kube_watch_lines_feed(&s, big, 100000, t_collect, NULL, &e) == 0);
	CHECK(s.line.alloc >= 100000);
	CHECK(kube_watch_lines_feed(&s, big + 100000, 100001, t_collect, NULL, &e) == 0);
	CHECK(t_count == 1);
	CHECK(s.line.p == NULL && s.line.alloc == 0);
	free(big);
}

static int
t_event(const char *line, struct kube_watch_event *ev, struct errbuf *e)
{
	return kube_watch_event_decode(line, strlen(line), NULL, ev, e);
}

TEST(events)
{
	struct kube_watch_event ev;
	struct errbuf e;

	CHECK(t_event("{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\",\"metadata\":"
	    "{\"name\":\"n\",\"resourceVersion\":\"12\"}}}", &ev, &e) == 0);
	CHECK(ev.type == KUBE_WATCH_ADDED);
	CHECK_STR(ev.resource_version, "12");
	CHECK(json_object_is_type(ev.object, json_type_object));
	kube_watch_event_free(&ev);

	CHECK(t_event("{\"type\":\"MODIFIED\",\"object\":{}}  \r\n", &ev, &e) == 0);
	CHECK(ev.type == KUBE_WATCH_MODIFIED && ev.resource_version == NULL);
	kube_watch_event_free(&ev);

	CHECK(t_event("{\"type\":\"DELETED\",\"object\":{\"metadata\":{}}}", &ev, &e) == 0);
	CHECK(ev.type == KUBE_WATCH_DELETED);
	kube_watch_event_free(&ev);

	CHECK(t_event("{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Node\",\"apiVersion\":\"v1\","
	    "\"metadata\":{\"resourceVersion\":\"1500\",\"creationTimestamp\":null}}}", &ev,
	    &e) == 0);
	CHECK(ev.type == KUBE_WATCH_BOOKMARK);
	CHECK_STR(ev.resource_version, "1500");
	CHECK_STR(kube_watch_type_str(ev.type), "BOOKMARK");
	kube_watch_event_free(&ev);

	CHECK(t_event("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
	    "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version: "
	    "1000 (1200)\",\"reason\":\"Expired\",\"code\":410}}", &ev, &e) == 0);
	CHECK(ev.type == KUBE_WATCH_ERROR && ev.code == 410);
	CHECK_STR(ev.reason, "Expired");
	CHECK_STR(ev.message, "too old resource version: 1000 (1200)");
	kube_watch_event_free(&ev);

	CHECK(t_event("{\"type\":\"ERROR\",\"object\":{}}", &ev, &e) == 0);
	CHECK(ev.code == 0);
	CHECK_STR(ev.reason, "");
	kube_watch_event_free(&ev);
}

static const struct {
	const char *line, *msg;
} broken_events[] = {
	{ "garbage", "watch event: not valid JSON" },
	{ "{\"type\":\"ADDED\",\"object\":{}", "watch event: JSON text cut short" },
	{ "{\"type\":\"ADDED\",\"object\":{}} {}", "watch event: not valid JSON" },
	{ "[1,2]", "watch event: expected a JSON object" },
	{ "{\"object\":{}}", "watch event: no type" },
	{ "{\"type\":3,\"object\":{}}", "watch event: no type" },
	{ "{\"type\":\"RENAMED\",\"object\":{}}", "watch event: unknown type \"RENAMED\"" },
	{ "{\"type\":\"ADDED\"}", "watch event ADDED: no object" },
	{ "{\"type\":\"ADDED\",\"object\":[]}", "watch event ADDED: no object" },
	{ "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{}}}",
	  "watch event BOOKMARK: no resourceVersion" },
	{ "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":5}}}",
	  "watch event ADDED: bad metadata.resourceVersion" },
	{ "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":"
	  "\"123456789012345678901234567890123456789012345678901234567890123456789\"}}}",
	  "watch event ADDED: bad metadata.resourceVersion" },
	{ "{\"type\":\"ERROR\",\"object\":{\"code\":\"410\"}}",
	  "watch event ERROR: code is not an integer" },
	{ "{\"type\":\"ERROR\",\"object\":{\"reason\":[]}}", "watch event ERROR: not a Status" },
};

TEST(events_broken)
{
	struct kube_watch_event ev;
	struct errbuf e;

	for (size_t i = 0; i < sizeof(broken_events) / sizeof(broken_events[0]); i++) {
		e.msg[0] = '\0';
		if (t_event(broken_events[i].line, &ev, &e) != ERR_INVALID) {
			fprintf(stderr, "  case %zu accepted\n", i);
			CHECK(0);
		}
		CHECK_CONTAINS(e.msg, broken_events[i].msg);
	}
}

/* A decoder's fields: the event keeps only those of its object, decides
 * and fails exactly as without them, and reads an ERROR's Status whole. */
static const struct jsonx_keep t_md[] = {
	{ "name", NULL }, { "resourceVersion", NULL }, { NULL, NULL },
};
static const struct jsonx_keep t_fields[] = {
	{ "metadata", t_md }, { NULL, NULL },
};

TEST(events_with_fields)
{
	static const char *good[] = {
		"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\",\"metadata\":"
		"{\"name\":\"n\",\"resourceVersion\":\"12\",\"managedFields\":[{}]},"
		"\"status\":{\"images\":[]}}}",
		"{\"type\":\"MODIFIED\",\"object\":{}}  \r\n",
		"{\"object\":{\"metadata\":{\"resourceVersion\":\"1500\"}},\"type\":\"BOOKMARK\"}",
		"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"metadata\":{},"
		"\"message\":\"too old resource version: 1000 (1200)\",\"reason\":\"Expired\","
		"\"code\":410}}",
	};
	struct kube_watch_event a, b;
	struct errbuf e, e2;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		CHECK(t_event(good[i], &a, &e) == 0);
		CHECK(kube_watch_event_decode(good[i], strlen(good[i]), t_fields, &b, &e) == 0);
		CHECK(a.type == b.type && a.code == b.code);
		CHECK((a.resource_version == NULL) == (b.resource_version == NULL));
		if (a.resource_version)
			CHECK_STR(a.resource_version, b.resource_version);
		if (a.type == KUBE_WATCH_ERROR) {
			CHECK_STR(a.reason, b.reason);
			CHECK_STR(a.message, b.message);
		}
		kube_watch_event_free(&a);
		kube_watch_event_free(&b);
	}
	CHECK(kube_watch_event_decode(good[0], strlen(good[0]), t_fields, &b, &e) == 0);
	CHECK_STR(json_object_to_json_string_ext(b.object, JSON_C_TO_STRING_PLAIN),
	    "{\"metadata\":{\"name\":\"n\",\"resourceVersion\":\"12\"}}");
	kube_watch_event_free(&b);
	for (size_t i = 0; i < sizeof(broken_events) / sizeof(broken_events[0]); i++) {
		const char *l = broken_events[i].line;
		CHECK(t_event(l, &a, &e) == ERR_INVALID);
		CHECK(kube_watch_event_decode(l, strlen(l), t_fields, &b, &e2) == ERR_INVALID);
		CHECK_STR(e2.msg, e.msg);
	}
}

TEST(parse_depth_capped)
{
	char deep[600];
	json_object *o;
	struct errbuf e;
	size_t i;

	for (i = 0; i < 200; i++)
		deep[i] = '[';
	for (; i < 400; i++)
		deep[i] = ']';
	CHECK(kube_watch_parse(deep, 400, &o, &e) == ERR_INVALID);
	CHECK(kube_watch_parse(deep + 100, 200, &o, &e) == 0);
	json_object_put(o);
}

/* t_list feeds a list body in chunks of size step (0: all at once) and
 * finishes it. */
static int
t_list(struct kube_watch_list *l, const char *text, size_t step, char *rv,
    char **cont, struct errbuf *e)
{
	size_t len = strlen(text), off = 0;
	int r;

	while (off < len) {
		size_t n = step && step < len - off ? step : len - off;
		if ((r = kube_watch_list_feed(l, text + off, n, t_collect, NULL, e)) < 0)
			return r;
		off += n;
	}
	return kube_watch_list_finish(l, rv, KUBE_WATCH_RV_MAX, cont, e);
}

TEST(list_items_across_chunks)
{
	static const char text[] =
	    " {\"apiVersion\":\"v1\",\"items\":[{\"metadata\":{\"name\":\"a\"},"
	    "\"x\":\"tricky } ] \\\" { [ string\",\"n\":[1,2.5e3,true,null,{}]} ,\n"
	    "{\"metadata\":{\"name\":\"b\"}}],\"kind\":\"NodeList\",\"metadata\":"
	    "{\"continue\":\"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTAwMH0\","
	    "\"remainingItemCount\":3,\"resourceVersion\":\"1000\"},\"z\":-1.5} \n";
	struct kube_watch_list l;
	struct errbuf e;
	char rv[KUBE_WATCH_RV_MAX], *cont = NULL;

	for (size_t step = 0; step < sizeof(text); step++) {
		kube_watch_list_init(&l, 0);
		t_reset();
		CHECK(t_list(&l, text, step, rv, &cont, &e) == 0);
		CHECK_STR(t_out, "{\"metadata\":{\"name\":\"a\"},\"x\":\"tricky } ] \\\" { [ string\","
		    "\"n\":[1,2.5e3,true,null,{}]}|{\"metadata\":{\"name\":\"b\"}}|");
		CHECK(l.items == 2 && l.oversized == 0);
		CHECK_STR(rv, "1000");
		CHECK_STR(cont, "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTAwMH0");
		free(cont);
		kube_watch_list_reset(&l);
	}
}

TEST(list_metadata_first_empty_and_null)
{
	struct kube_watch_list l;
	struct errbuf e;
	char rv[KUBE_WATCH_RV_MAX], *cont = NULL;

	kube_watch_list_init(&l, 0);
	t_reset();
	CHECK(t_list(&l, "{\"metadata\":{\"resourceVersion\":\"7\"},\"items\":[{\"a\":1}]}", 3,
	    rv, &cont, &e) == 0);
	CHECK_STR(t_out, "{\"a\":1}|");
	CHECK_STR(cont, "");
	free(cont);
	kube_watch_list_reset(&l);

	t_reset();
	CHECK(t_list(&l, "{\"items\":[],\"metadata\":{\"resourceVersion\":\"8\"}}", 0, rv,
	    &cont, &e) == 0);
	CHECK(t_count == 0);
	CHECK_STR(rv, "8");
	free(cont);
	kube_watch_list_reset(&l);

	t_reset();
	CHECK(t_list(&l, "{\"items\":null,\"metadata\":{\"resourceVersion\":\"9\"}}", 1, rv,
	    &cont, &e) == 0);
	CHECK(t_count == 0);
	free(cont);
	kube_watch_list_reset(&l);
}

TEST(list_oversized_item_skipped)
{
	static const char text[] = "{\"items\":[{\"a\":\"0123456789012345678901234567890\"},"
	    "{\"b\":1}],\"metadata\":{\"resourceVersion\":\"5\"}}";
	struct kube_watch_list l;
	struct errbuf e;
	char rv[KUBE_WATCH_RV_MAX], *cont = NULL;

	for (size_t step = 0; step < 8; step++) {
		kube_watch_list_init(&l, 20);
		t_reset();
		CHECK(t_list(&l, text, step, rv, &cont, &e) == 0);
		CHECK_STR(t_out, "{\"b\":1}|");
		CHECK(l.items == 1 && l.oversized == 1);
		CHECK(l.item.alloc <= 20 + 1);
		free(cont);
		kube_watch_list_reset(&l);
	}
}

TEST(list_broken)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{ "[]", "not a JSON list (at byte 0)" },
		{ "{\"items\":{}}", "not a JSON list (at byte 9)" },
		{ "{\"items\":[1]}", "not a JSON list (at byte 10)" },
		{ "{\"items\":[{]}", "not a JSON list (at byte 11)" },
		{ "{\"items\":[{}},", "not a JSON list" },
		{ "{\"items\":[],\"items\":[]}", "not a JSON list" },
		{ "{\"metadata\":\"x\"}", "not a JSON list" },
		{ "{\"items\":[]} x", "not a JSON list (at byte 13)" },
		{ "{\"a\" 1}", "not a JSON list" },
		{ "{\"a\":1,}", "not a JSON list" },
		{ "{\"items\":[{}]", "ended early" },
		{ "{\"items\":[{\"a\":\"}", "ended early" },
		{ "", "ended early" },
		{ "{\"items\":[]}", "has no metadata" },
		{ "{\"metadata\":{}}", "no valid metadata.resourceVersion" },
		{ "{\"metadata\":{\"resourceVersion\":\"1\",\"continue\":5}}", "not a string" },
		{ "{\"metadata\":{\"resourceVersion\":\"1\",}}", "list metadata: not valid JSON" },
	};
	struct kube_watch_list l;
	struct errbuf e;
	char rv[KUBE_WATCH_RV_MAX], *cont = NULL;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		kube_watch_list_init(&l, 0);
		t_reset();
		e.msg[0] = '\0';
		int r = t_list(&l, cases[i].text, 0, rv, &cont, &e);
		if (r != ERR_INVALID) {
			fprintf(stderr, "  case %zu: %d\n", i, r);
			CHECK(0);
		}
		CHECK_CONTAINS(e.msg, cases[i].msg);
		kube_watch_list_reset(&l);
	}
}

TEST(list_caps)
{
	struct kube_watch_list l;
	struct errbuf e;
	char *text = malloc(KUBE_LIST_META_MAX + 100), rv[KUBE_WATCH_RV_MAX], *cont = NULL;
	char deep[400];
	size_t n, i;

	/* metadata over its cap */
	n = (size_t)snprintf(text, 100, "{\"metadata\":{\"x\":\"");
	memset(text + n, 'a', KUBE_LIST_META_MAX);
	memcpy(text + n + KUBE_LIST_META_MAX, "\"}}", 4);
	kube_watch_list_init(&l, 0);
	CHECK(t_list(&l, text, 4096, rv, &cont, &e) == ERR_TOO_LARGE);
	kube_watch_list_reset(&l);
	free(text);

	/* nesting deeper than KUBE_JSON_DEPTH */
	n = (size_t)snprintf(deep, sizeof(deep), "{\"items\":[{\"a\":");
	for (i = 0; i < 150; i++)
		deep[n++] = '[';
	deep[n] = '\0';
	kube_watch_list_init(&l, 0);
	CHECK(t_list(&l, deep, 0, rv, &cont, &e) == ERR_INVALID);
	kube_watch_list_reset(&l);
}

TEST(list_callback_error)
{
	struct kube_watch_list l;
	struct errbuf e;
	char rv[KUBE_WATCH_RV_MAX], *cont = NULL;

	kube_watch_list_init(&l, 0);
	t_reset();
	t_fail_at = 0;
	CHECK(t_list(&l, "{\"items\":[{},{}],\"metadata\":{\"resourceVersion\":\"1\"}}", 0,
	    rv, &cont, &e) == ERR_INVALID);
	kube_watch_list_reset(&l);
}

TEST_MAIN()
