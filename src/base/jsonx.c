/* jsonx.c - the strict parser and the typed getters. */
#include "base/jsonx.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rfc3339.h"
#include "base/xalloc.h"

/* The grammar check. json-c's strict mode still takes single-quoted keys,
 * NaN, Infinity, "1." and raw control bytes in strings, all of which Go's
 * encoding/json (the API server's, and every cloud's) refuses; this one pass
 * over the text refuses them first, so one standard holds. It also checks
 * the UTF-8 of strings, with json-c's rules (a lead byte and as many
 * continuation bytes as it announces), so json-c need not check every byte
 * again, and it is where a parse that keeps only some members (struct
 * jsonx_keep) writes the text json-c then builds its tree from. */

enum jsonx_state {
	JSONX_VALUE,         /* a value must come */
	JSONX_VALUE_OR_END,  /* just after '[' */
	JSONX_KEY_OR_END,    /* just after '{' */
	JSONX_KEY,           /* after ',' in an object */
	JSONX_COLON,         /* after a key */
	JSONX_AFTER,         /* after a value */
};

static int
jsonx_is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int
jsonx_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int
jsonx_is_hex(char c)
{
	return jsonx_is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The bytes a string scan must stop at: the quote, the backslash, control
 * bytes and the start of a UTF-8 sequence; most bytes of a document are
 * none of them. */
static const unsigned char jsonx_str_stop[256] = {
	[0x00 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0x80 ... 0xff] = 1,
};

/* jsonx_scan_string checks the string whose '"' is at s[*i], and moves *i
 * past its closing quote. *ret_esc tells whether it holds an escape.
 * Returns 0, -1 with *i at the fault, or -2 for bad UTF-8 at *i. */
static int
jsonx_scan_string(const char *s, size_t len, size_t *i, int *ret_esc)
{
	size_t p = *i + 1;
	int esc = 0;

	for (; p < len; p++) {
		unsigned char c;
		while (p < len && !jsonx_str_stop[(unsigned char)s[p]])
			p++;
		if (p == len)
			break;
		c = (unsigned char)s[p];
		if (c == '"') {
			*i = p + 1;
			*ret_esc = esc;
			return 0;
		}
		if (c < 0x20)
			break;
		if (c >= 0x80) {
			/* json-c's rules: the lead byte's count of continuation
			 * bytes, each 10xxxxxx */
			size_t n = (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 :
			    (c & 0xf8) == 0xf0 ? 3 : 0;
			if (n == 0 || len - p <= n) {
				*i = p;
				return -2;
			}
			for (size_t k = 1; k <= n; k++)
				if (((unsigned char)s[p + k] & 0xc0) != 0x80) {
					*i = p + k;
					return -2;
				}
			p += n;
			continue;
		}
		if (c != '\\')
			continue;
		esc = 1;
		if (++p >= len)
			break;
		if (s[p] == 'u') {
			if (len - p < 5 || !jsonx_is_hex(s[p + 1]) || !jsonx_is_hex(s[p + 2]) ||
			    !jsonx_is_hex(s[p + 3]) || !jsonx_is_hex(s[p + 4]))
				break;
			p += 4;
		} else if (strchr("\"\\/bfnrt", s[p]) == NULL || s[p] == '\0') {
			break;
		}
	}
	*i = p;
	return -1;
}

/* jsonx_scan_number checks a number at s[*i] (RFC 8259: no leading zeros,
 * digits on both sides of '.', digits after an exponent). */
static int
jsonx_scan_number(const char *s, size_t len, size_t *i)
{
	size_t p = *i;

	if (p < len && s[p] == '-')
		p++;
	if (p < len && s[p] == '0') {
		p++;
	} else if (p < len && jsonx_is_digit(s[p])) {
		while (p < len && jsonx_is_digit(s[p]))
			p++;
	} else {
		goto bad;
	}
	if (p < len && s[p] == '.') {
		if (++p >= len || !jsonx_is_digit(s[p]))
			goto bad;
		while (p < len && jsonx_is_digit(s[p]))
			p++;
	}
	if (p < len && (s[p] == 'e' || s[p] == 'E')) {
		p++;
		if (p < len && (s[p] == '+' || s[p] == '-'))
			p++;
		if (p >= len || !jsonx_is_digit(s[p]))
			goto bad;
		while (p < len && jsonx_is_digit(s[p]))
			p++;
	}
	*i = p;
	return 0;
bad:
	*i = p;
	return -1;
}

/* The text a parse with a keep list builds its tree from: the kept members
 * of each filtered object, copied. It is never longer than the input: every
 * comma written stands for one the input had before that member. */
struct jsonx_out {
	char *buf;
	size_t len;
	int filtered;            /* the top-level object was filtered */
};

static void
jsonx_emit(struct jsonx_out *o, const char *p, size_t n)
{
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

/* What a filtered object does with the member whose key was just read. */
enum { JSONX_DROP, JSONX_WHOLE, JSONX_FILTER };

/* jsonx_keep_find: the keep entry naming the key s[0..n) (no escapes in
 * it), or NULL. */
static const struct jsonx_keep *
jsonx_keep_find(const struct jsonx_keep *k, const char *s, size_t n)
{
	for (; k->name != NULL; k++)
		if (strncmp(k->name, s, n) == 0 && k->name[n] == '\0')
			return k;
	return NULL;
}

/* jsonx_scan checks that s[0..len) is one JSON value, nested at most depth
 * levels, with only whitespace around it. With out (and keep), a top-level
 * object is also written to out->buf with only the members keep names:
 * filtered further where keep says so (an object value, or the objects of
 * an array value), copied whole otherwise. A key with an escape in it is
 * kept whole: the tree json-c builds then holds whatever a full parse would
 * have for it. "Filtered" containers are written piece by piece; any other
 * kept value is a region copied in one go when it ends, and a dropped one
 * a region skipped. */
static int
jsonx_scan(const char *s, size_t len, int depth, const struct jsonx_keep *keep,
    struct jsonx_out *out, struct errbuf *e)
{
	char stack[JSONX_DEPTH_MAX];
	const struct jsonx_keep *fk[JSONX_DEPTH_MAX]; /* a filtered container's list */
	int emitted[JSONX_DEPTH_MAX];                 /* its members (elements) written */
	enum jsonx_state st = JSONX_VALUE;
	int top = 0, region = 0, region_top = 0, mode = JSONX_DROP, esc, r = 0;
	const struct jsonx_keep *member = NULL, *list = NULL;
	size_t i = 0, region_start = 0, key_start = 0, key_end = 0;

	if (depth > JSONX_DEPTH_MAX)
		depth = JSONX_DEPTH_MAX;
	if (keep == NULL)
		out = NULL;
	for (;;) {
		while (i < len && jsonx_is_ws(s[i]))
			i++;
		if (i == len) {
			if (st == JSONX_AFTER && top == 0)
				return 0;
			return errbuf_set(e, ERR_INVALID, "JSON text cut short (%zu bytes)", len);
		}
		char c = s[i];
		switch (st) {
		case JSONX_VALUE_OR_END:
			if (c == ']') {
				top--;
				i++;
				st = JSONX_AFTER;
				if (out != NULL && region == 0)
					jsonx_emit(out, "]", 1);  /* an empty filtered array */
				goto value_done;
			}
			/* FALLTHROUGH */
		case JSONX_VALUE:
			if (out != NULL && region == 0) {
				/* a value where the filter decides (no region open) */
				list = NULL;
				if (top == 0) {
					if (c == '{') {
						out->filtered = 1;
						list = keep;
					} else {
						out = NULL;  /* not an object: kept whole */
					}
				} else if (stack[top - 1] == '[') {
					/* an element of a filtered array: all are kept */
					if (emitted[top - 1]++)
						jsonx_emit(out, ",", 1);
					if (c == '{')
						list = fk[top - 1];
					else
						region = 1;
				} else if (mode == JSONX_DROP) {
					region = 2;
				} else {
					if (emitted[top - 1]++)
						jsonx_emit(out, ",", 1);
					jsonx_emit(out, s + key_start, key_end - key_start);
					jsonx_emit(out, ":", 1);
					if (mode == JSONX_FILTER && (c == '{' || c == '['))
						list = member->members;
					else
						region = 1;
				}
				if (region) {
					region_top = top;
					region_start = i;
				} else if (out != NULL) {
					jsonx_emit(out, &c, 1);  /* a filtered container opens */
				}
			}
			if (c == '{' || c == '[') {
				if (top >= depth)
					return errbuf_set(e, ERR_INVALID, "not valid JSON: "
					    "nested deeper than %d levels (at byte %zu)", depth, i);
				if (out != NULL) {
					fk[top] = region == 0 ? list : NULL;
					emitted[top] = 0;
				}
				stack[top++] = c;
				i++;
				st = c == '{' ? JSONX_KEY_OR_END : JSONX_VALUE_OR_END;
				continue;
			}
			if (c == '"') {
				if ((r = jsonx_scan_string(s, len, &i, &esc)) < 0)
					goto bad_string;
			} else if (c == '-' || jsonx_is_digit(c)) {
				if (jsonx_scan_number(s, len, &i) < 0)
					goto bad;
			} else if (len - i >= 4 && memcmp(s + i, "true", 4) == 0) {
				i += 4;
			} else if (len - i >= 5 && memcmp(s + i, "false", 5) == 0) {
				i += 5;
			} else if (len - i >= 4 && memcmp(s + i, "null", 4) == 0) {
				i += 4;
			} else {
				goto bad;
			}
			st = JSONX_AFTER;
			goto value_done;
		case JSONX_KEY_OR_END:
			if (c == '}') {
				top--;
				i++;
				st = JSONX_AFTER;
				if (out != NULL && region == 0)
					jsonx_emit(out, "}", 1);
				goto value_done;
			}
			/* FALLTHROUGH */
		case JSONX_KEY:
			if (c != '"')
				goto bad;
			key_start = i;
			if ((r = jsonx_scan_string(s, len, &i, &esc)) < 0)
				goto bad_string;
			key_end = i;
			if (out != NULL && region == 0) {
				member = esc ? NULL : jsonx_keep_find(fk[top - 1], s + key_start + 1,
				    key_end - key_start - 2);
				mode = esc ? JSONX_WHOLE : member == NULL ? JSONX_DROP :
				    member->members == NULL ? JSONX_WHOLE : JSONX_FILTER;
			}
			st = JSONX_COLON;
			continue;
		case JSONX_COLON:
			if (c != ':')
				goto bad;
			i++;
			st = JSONX_VALUE;
			continue;
		case JSONX_AFTER:
			if (top == 0)
				return errbuf_set(e, ERR_INVALID,
				    "not valid JSON: data after the value (at byte %zu)", i);
			if (c == ',') {
				st = stack[top - 1] == '{' ? JSONX_KEY : JSONX_VALUE;
				i++;
				continue;
			}
			if ((c == '}' && stack[top - 1] == '{') ||
			    (c == ']' && stack[top - 1] == '[')) {
				top--;
				i++;
				if (out != NULL && region == 0)
					jsonx_emit(out, &c, 1);  /* a filtered container ends */
				goto value_done;
			}
			goto bad;
		}
value_done:
		/* a value ended at i: the copied or skipped one, if it is that */
		if (region != 0 && top == region_top) {
			if (region == 1)
				jsonx_emit(out, s + region_start, i - region_start);
			region = 0;
		}
	}
bad_string:
	if (r == -2)
		return errbuf_set(e, ERR_INVALID, "not valid JSON: invalid utf-8 string "
		    "(at byte %zu)", i);
bad:
	if (i >= len)
		return errbuf_set(e, ERR_INVALID, "JSON text cut short (%zu bytes)", len);
	if ((unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f)
		return errbuf_set(e, ERR_INVALID, "not valid JSON: unexpected '%c' (at byte %zu)",
		    s[i], i);
	return errbuf_set(e, ERR_INVALID, "not valid JSON: unexpected byte 0x%02x (at byte %zu)",
	    (unsigned char)s[i], i);
}

int
jsonx_parse_keep(const char *buf, size_t len, int depth, const struct jsonx_keep *keep,
    json_object **ret, struct errbuf *e)
{
	struct jsonx_out out = { NULL, 0, 0 };
	json_tokener *tok;
	json_object *o;
	enum json_tokener_error err;
	size_t end;
	int r = ERR_INVALID;

	if (len > INT_MAX)
		return errbuf_set(e, ERR_TOO_LARGE, "JSON text of %zu bytes", len);
	if (depth < 1 || depth > JSONX_DEPTH_MAX)
		return errbuf_set(e, ERR_INVALID, "JSON nesting depth %d is not allowed", depth);
	if (keep != NULL)
		out.buf = xmalloc(len ? len : 1);
	if (jsonx_scan(buf, len, depth, keep, &out, e) < 0)
		goto out;
	if (out.filtered) {
		buf = out.buf;
		len = out.len;
	}
	/* json-c counts the top level too */
	tok = xcheck(json_tokener_new_ex(depth + 1));
	/* the scan checked the grammar and the UTF-8 already: strict mode
	 * is a second opinion, per-byte UTF-8 checks would be a second pass */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, buf, (int)len);
	/* a bare number at the end waits for a terminator: the NUL is one */
	if (o == NULL && json_tokener_get_error(tok) == json_tokener_continue)
		o = json_tokener_parse_ex(tok, "", 1);
	err = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (o == NULL || err != json_tokener_success) {
		json_object_put(o);
		if (err == json_tokener_continue || err == json_tokener_success)
			errbuf_set(e, ERR_INVALID, "JSON text cut short (%zu bytes)", len);
		else
			errbuf_set(e, ERR_INVALID, "not valid JSON: %s (at byte %zu)",
			    json_tokener_error_desc(err), end);
		goto out;
	}
	/* the scan saw one value and only whitespace after it */
	*ret = o;
	r = 0;
out:
	free(out.buf);
	return r;
}

int
jsonx_parse(const char *buf, size_t len, int depth, json_object **ret,
    struct errbuf *e)
{
	return jsonx_parse_keep(buf, len, depth, NULL, ret, e);
}

const char *
jsonx_type_name(enum json_type t)
{
	switch (t) {
	case json_type_null: return "null";
	case json_type_boolean: return "a boolean";
	case json_type_double: return "a number";
	case json_type_int: return "an integer";
	case json_type_object: return "an object";
	case json_type_array: return "an array";
	case json_type_string: return "a string";
	}
	return "unknown";
}

static int
jsonx_bad(struct errbuf *e, const char *path, const char *field, const char *what)
{
	return errbuf_set(e, ERR_INVALID, "%s%s%s: %s", path, *path ? "." : "", field, what);
}

int
jsonx_string_ok(json_object *s)
{
	return memchr(json_object_get_string(s), '\0',
	    (size_t)json_object_get_string_len(s)) == NULL;
}

int
jsonx_get(json_object *parent, const char *path, const char *field, enum json_type t,
    int flags, json_object **ret, struct errbuf *e)
{
	json_object *v = NULL;
	char what[48];

	if (parent == NULL || !json_object_object_get_ex(parent, field, &v) || v == NULL) {
		if (flags & JSONX_REQUIRED)
			return jsonx_bad(e, path, field, "missing");
		*ret = NULL;
		return 0;
	}
	if (!json_object_is_type(v, t)) {
		snprintf(what, sizeof(what), "expected %s", jsonx_type_name(t));
		return jsonx_bad(e, path, field, what);
	}
	if (t == json_type_string && !jsonx_string_ok(v))
		return jsonx_bad(e, path, field, "holds a NUL character");
	*ret = v;
	return 0;
}

int
jsonx_str(json_object *parent, const char *path, const char *field, int flags,
    const char **ret, size_t *ret_len, struct errbuf *e)
{
	json_object *v;
	int r;

	if ((r = jsonx_get(parent, path, field, json_type_string, flags, &v, e)) < 0)
		return r;
	*ret = v ? json_object_get_string(v) : NULL;
	if (ret_len)
		*ret_len = v ? (size_t)json_object_get_string_len(v) : 0;
	return 0;
}

int
jsonx_str_nul(json_object *parent, const char *path, const char *field,
    const char **ret, int *ret_nul, struct errbuf *e)
{
	json_object *v;

	if (parent != NULL && json_object_object_get_ex(parent, field, &v) && v != NULL &&
	    json_object_is_type(v, json_type_string) && !jsonx_string_ok(v)) {
		*ret = NULL;
		*ret_nul = 1;
		return 0;
	}
	*ret_nul = 0;
	return jsonx_str(parent, path, field, 0, ret, NULL, e);
}

/* jsonx_int_exact tells whether x is the integer the text held: json-c
 * saturates integers past 64 bits, so the edges are no proof. */
static int
jsonx_int_exact(json_object *v, int64_t x)
{
	const char *s;

	if (x != INT64_MAX && x != INT64_MIN)
		return 1;
	s = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
	return strcmp(s, x == INT64_MAX ? "9223372036854775807" : "-9223372036854775808") == 0;
}

int
jsonx_int(json_object *parent, const char *path, const char *field, int64_t min,
    int64_t max, int flags, int64_t *ret, struct errbuf *e)
{
	json_object *v;
	int64_t x;
	int r;

	if ((r = jsonx_get(parent, path, field, json_type_int, flags, &v, e)) < 0)
		return r;
	if (v == NULL) {
		*ret = 0;
		return 0;
	}
	x = json_object_get_int64(v);
	if (x < min || x > max || !jsonx_int_exact(v, x))
		return jsonx_bad(e, path, field, "out of range");
	*ret = x;
	return 0;
}

int
jsonx_bool(json_object *parent, const char *path, const char *field, int flags,
    int *ret, struct errbuf *e)
{
	json_object *v;
	int r;

	if ((r = jsonx_get(parent, path, field, json_type_boolean, flags, &v, e)) < 0)
		return r;
	*ret = v ? json_object_get_boolean(v) : 0;
	return 0;
}

int
jsonx_object(json_object *parent, const char *path, const char *field, int flags,
    json_object **ret, struct errbuf *e)
{
	return jsonx_get(parent, path, field, json_type_object, flags, ret, e);
}

int
jsonx_array(json_object *parent, const char *path, const char *field, int flags,
    json_object **ret, size_t *ret_n, struct errbuf *e)
{
	json_object *v;
	int r;

	if ((r = jsonx_get(parent, path, field, json_type_array, flags, &v, e)) < 0)
		return r;
	*ret = v;
	*ret_n = v ? json_object_array_length(v) : 0;
	return 0;
}

int
jsonx_time(json_object *parent, const char *path, const char *field, int flags,
    int64_t *ret_sec, struct errbuf *e)
{
	const char *s;
	int64_t sec;
	int32_t ns;
	int r;

	if ((r = jsonx_str(parent, path, field, flags, &s, NULL, e)) < 0)
		return r;
	if (s == NULL) {
		*ret_sec = 0;
		return 0;
	}
	if (rfc3339_parse(s, &sec, &ns) < 0)
		return jsonx_bad(e, path, field, "not an RFC 3339 time");
	*ret_sec = sec;
	return 0;
}
