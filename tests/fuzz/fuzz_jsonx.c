/* fuzz_jsonx.c - libFuzzer harness: the strict JSON parser and the RFC 3339
 * parser on arbitrary bytes. What jsonx_parse accepts must be a tree json-c
 * can print and jsonx_parse accept again, unchanged, and json-c's own UTF-8
 * check must accept too; what it refuses must come with a message; a parse
 * keeping some members must succeed or fail exactly as the full parse does,
 * with the same message, and build the full tree less the members it does
 * not keep; the time parser must never read past the string or accept what
 * formats back differently. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "base/rfc3339.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* a keep list with each kind of entry; names short enough to be hit */
static const struct jsonx_keep fuzz_keep_b[] = {
	{ "c", NULL }, { "", NULL }, { NULL, NULL },
};
static const struct jsonx_keep fuzz_keep[] = {
	{ "a", NULL }, { "b", fuzz_keep_b }, { "metadata", fuzz_keep_b }, { NULL, NULL },
};

/* fuzz_pruned is full with only what keep names (jsonx_parse_keep's
 * contract), a new reference. */
static json_object *
fuzz_pruned(json_object *full, const struct jsonx_keep *keep)
{
	json_object *o;

	if (keep != NULL && json_object_is_type(full, json_type_array)) {
		/* every element, its objects filtered by the same list */
		o = json_object_new_array();
		for (size_t i = 0; i < json_object_array_length(full); i++) {
			json_object *el = json_object_array_get_idx(full, i);
			json_object_array_add(o, json_object_is_type(el, json_type_object) ?
			    fuzz_pruned(el, keep) : json_object_get(el));
		}
		return o;
	}
	if (keep == NULL || !json_object_is_type(full, json_type_object))
		return json_object_get(full);
	o = json_object_new_object();
	json_object_object_foreach(full, k, v) {
		const struct jsonx_keep *m = keep;
		while (m->name && strcmp(m->name, k) != 0)
			m++;
		if (m->name)
			json_object_object_add(o, k, fuzz_pruned(v, m->members));
	}
	return o;
}

static void
fuzz_keep_check(const uint8_t *data, size_t size, int full_r, json_object *full,
    const struct errbuf *full_e)
{
	json_object *o = NULL, *want;
	struct errbuf e = { "" };
	int r = jsonx_parse_keep((const char *)data, size, 16, fuzz_keep, &o, &e);

	if (r != full_r)
		abort();
	if (r < 0) {
		if (strcmp(e.msg, full_e->msg) != 0)
			abort();
		return;
	}
	/* a key written with an escape is kept whole: only compare texts
	 * without escapes in keys, which the pruning above models exactly */
	if (memchr(data, '\\', size) == NULL) {
		/* only a top-level object is filtered */
		want = json_object_is_type(full, json_type_object) ?
		    fuzz_pruned(full, fuzz_keep) : json_object_get(full);
		if (!json_object_equal(o, want))
			abort();
		json_object_put(want);
	}
	json_object_put(o);
}

/* fuzz_utf8 checks that json-c's own UTF-8 check accepts what jsonx did. */
static void
fuzz_utf8(const uint8_t *data, size_t size)
{
	json_tokener *tok = json_tokener_new_ex(17);
	json_object *o;

	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, (const char *)data, (int)size);
	if (o == NULL && json_tokener_get_error(tok) == json_tokener_continue)
		o = json_tokener_parse_ex(tok, "", 1);
	if (json_tokener_get_error(tok) == json_tokener_error_parse_utf8_string)
		abort();
	json_object_put(o);
	json_tokener_free(tok);
}

static void
fuzz_time(const uint8_t *data, size_t size)
{
	char s[64], out[RFC3339_MAX];
	int64_t sec, again;
	int32_t ns, ns2;

	if (size >= sizeof(s))
		return;
	memcpy(s, data, size);
	s[size] = '\0';
	if (rfc3339_parse(s, &sec, &ns) < 0)
		return;
	if (ns < 0 || ns > 999999999)
		abort();
	/* its UTC rendering parses to the same instant */
	if (rfc3339_format(sec, out, sizeof(out)) == 0 &&
	    (rfc3339_parse(out, &again, &ns2) < 0 || again != sec || ns2 != 0))
		abort();
}

/* fuzz_getters checks the string getters on each member of a top-level
 * object: jsonx_str refuses exactly the strings holding a NUL, which
 * jsonx_str_nul reads as absent and flags; the others both give whole. */
static void
fuzz_getters(json_object *o)
{
	struct json_object_iterator it, end;
	struct errbuf e;

	if (!json_object_is_type(o, json_type_object))
		return;
	end = json_object_iter_end(o);
	for (it = json_object_iter_begin(o); !json_object_iter_equal(&it, &end);
	    json_object_iter_next(&it)) {
		const char *k = json_object_iter_peek_name(&it), *s = NULL, *s2 = NULL;
		json_object *v = json_object_iter_peek_value(&it), *got;
		size_t len = 0;
		int r, r2, nul = -1;
		if (!json_object_object_get_ex(o, k, &got) || got != v)
			continue;  /* a duplicate key: the last one is the member */
		r = jsonx_str(o, "", k, 0, &s, &len, &e);
		r2 = jsonx_str_nul(o, "", k, &s2, &nul, &e);
		if (v == NULL || !json_object_is_type(v, json_type_string)) {
			if ((v != NULL && (r == 0 || r2 == 0)) || (v == NULL && (r || r2 || s ||
			    s2 || nul)))
				abort();
		} else if (!jsonx_string_ok(v)) {
			if (r != ERR_INVALID || r2 != 0 || s2 != NULL || nul != 1)
				abort();
		} else if (r != 0 || r2 != 0 || nul != 0 || s != s2 || strlen(s) != len) {
			abort();
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_object *o = NULL, *o2 = NULL;
	struct errbuf e = { "" };
	const char *text;

	fuzz_time(data, size);
	if (jsonx_parse((const char *)data, size, 16, &o, &e) < 0) {
		if (e.msg[0] == '\0')
			abort();
		fuzz_keep_check(data, size, ERR_INVALID, NULL, &e);
		return 0;
	}
	fuzz_keep_check(data, size, 0, o, &e);
	fuzz_getters(o);
	fuzz_utf8(data, size);
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	if (text == NULL || jsonx_parse(text, strlen(text), 16, &o2, &e) < 0)
		abort();
	if (!json_object_equal(o, o2))
		abort();
	json_object_put(o);
	json_object_put(o2);
	return 0;
}
