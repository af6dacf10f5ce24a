/* build.c - validation and conversion of metadata answers into instance
 * fields: every outside string is checked against its cap and character set
 * before it is stored. */
#include "metadata/build.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/jsonx.h"
#include "base/log.h"

#define MD_BUILD_DNS_MAX 253  /* bytes in a DNS name */
#define MD_BUILD_FIELD_MAX 128 /* bytes: a field's path in messages */

int
md_build_check(const struct md_answer *a, const char *field, const char *value,
    size_t len, int flags, struct errbuf *e)
{
	if (value == NULL)
		len = 0;
	if (len == 0 && (flags & MD_V_REQUIRED))
		return errbuf_set(e, ERR_INVALID, "%s: %s is empty", a->where, field);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)value[i];
		size_t n;
		if (c >= 0x80 && (flags & MD_V_UTF8) && (n = log_utf8_len(value + i,
		    len - i)) > 0) {
			i += n - 1;
			continue;
		}
		if (c < 0x20 || c >= 0x7f)
			return errbuf_set(e, ERR_INVALID,
			    "%s: %s has a control or non-ASCII byte (0x%02x at %zu)",
			    a->where, field, c, i);
		/* the value is quoted only up to here: the rest is unchecked */
		if (c == ' ' && (flags & (MD_V_WORD | MD_V_SEGMENT)))
			return errbuf_set(e, ERR_INVALID, "%s: %s \"%.*s \"... has a space",
			    a->where, field, (int)(i > 64 ? 64 : i), value);
		if ((flags & MD_V_SEGMENT) && strchr("/\"'\\$`*?[]{}", c) != NULL)
			return errbuf_set(e, ERR_INVALID,
			    "%s: %s \"%.*s%c\"... has a '%c', which a providerID segment must not have",
			    a->where, field, (int)(i > 64 ? 64 : i), value, c, c);
	}
	return 0;
}

int
md_build_set(const struct md_answer *a, const char *field, char *dst, size_t cap,
    const char *value, size_t len, int flags, struct errbuf *e)
{
	int r;

	if (value == NULL)
		len = 0;
	if (len >= cap)
		return errbuf_set(e, ERR_INVALID, "%s: %s is longer than %zu bytes",
		    a->where, field, cap - 1);
	if ((r = md_build_check(a, field, value, len, flags, e)) < 0)
		return r;
	if (len)
		memcpy(dst, value, len);
	dst[len] = '\0';
	return 0;
}

static int
md_build_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

void
md_build_trim(const char *s, size_t len, const char **ret, size_t *ret_len)
{
	while (len > 0 && md_build_space(*s))
		s++, len--;
	while (len > 0 && md_build_space(s[len - 1]))
		len--;
	*ret = s;
	*ret_len = len;
}

int
md_build_line(const char **pos, const char *end, const char **ret, size_t *ret_len)
{
	const char *p = *pos, *nl;

	if (p >= end)
		return 0;
	nl = memchr(p, '\n', (size_t)(end - p));
	if (nl == NULL)
		nl = end;
	*pos = nl < end ? nl + 1 : end;
	md_build_trim(p, (size_t)(nl - p), ret, ret_len);
	return 1;
}

int
md_build_ip_family(const char *addr)
{
	unsigned char buf[16];

	if (inet_pton(AF_INET, addr, buf) == 1)
		return 4;
	if (inet_pton(AF_INET6, addr, buf) == 1)
		return 6;
	return 0;
}

/* md_build_dns checks a host name: labels of letters, digits, '-' and '_'
 * separated by dots, at most 253 bytes (a trailing dot allowed). */
static int
md_build_dns(const char *s, size_t len)
{
	size_t label = 0;

	if (len == 0 || len > MD_BUILD_DNS_MAX + 1)
		return 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '.') {
			if (label == 0)
				return 0;
			label = 0;
		} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_') {
			if (++label > 63)
				return 0;
		} else {
			return 0;
		}
	}
	return 1;
}

int
md_build_addr(struct md_instance *in, const struct md_answer *a, const char *field,
    enum md_addr_type type, const char *value, size_t len, struct errbuf *e)
{
	char addr[MD_NAME_MAX];

	int r;

	if (value == NULL || len == 0)
		return 0;
	if ((r = md_build_check(a, field, value, len, MD_V_WORD, e)) < 0)
		return r;
	if (len >= sizeof(addr))
		return errbuf_set(e, ERR_INVALID, "%s: %s is longer than %zu bytes",
		    a->where, field, sizeof(addr) - 1);
	memcpy(addr, value, len);
	addr[len] = '\0';
	if (strlen(addr) != len)
		return errbuf_set(e, ERR_INVALID, "%s: %s has a NUL byte", a->where, field);
	if (type == MD_ADDR_INTERNAL_IP || type == MD_ADDR_EXTERNAL_IP) {
		unsigned char bin[16];
		int af = AF_INET;
		if (inet_pton(AF_INET, addr, bin) != 1) {
			af = AF_INET6;
			if (inet_pton(AF_INET6, addr, bin) != 1)
				return errbuf_set(e, ERR_INVALID,
				    "%s: %s \"%.64s\" is not an IP address", a->where, field,
				    addr);
		}
		if (inet_ntop(af, bin, addr, sizeof(addr)) == NULL)
			return errbuf_set(e, ERR_INTERNAL, "inet_ntop failed");
	} else if (!md_build_dns(addr, len)) {
		return errbuf_set(e, ERR_INVALID, "%s: %s \"%.64s\" is not a host name",
		    a->where, field, addr);
	}
	for (size_t i = 0; i < in->n_addresses; i++)
		if (in->addresses[i].type == type &&
		    strcmp(in->addresses[i].address, addr) == 0)
			return 0;
	if (in->n_addresses >= MD_ADDRS_MAX) {
		in->addresses_dropped++;
		return 0;
	}
	in->addresses[in->n_addresses].type = type;
	memcpy(in->addresses[in->n_addresses].address, addr, strlen(addr) + 1);
	in->n_addresses++;
	return 0;
}

int
md_build_provider_id(struct md_instance *in, const struct md_answer *a, struct errbuf *e,
    const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(in->provider_id, sizeof(in->provider_id), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(in->provider_id)) {
		in->provider_id[0] = '\0';
		return errbuf_set(e, ERR_INVALID, "%s: the providerID would be longer than %zu bytes",
		    a->where, sizeof(in->provider_id) - 1);
	}
	return 0;
}

int
md_build_json(const struct md_answer *a, struct json_object **ret, struct errbuf *e)
{
	struct json_object *o;
	int r;

	if (a->len > MD_BODY_MAX)
		return errbuf_set(e, ERR_TOO_LARGE, "%s: larger than %d bytes", a->where,
		    MD_BODY_MAX);
	if ((r = jsonx_parse(a->body, a->len, MD_JSON_DEPTH, &o, e)) < 0)
		return errbuf_prefix(e, r, "%s", a->where);
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return errbuf_set(e, ERR_INVALID, "%s: not a JSON object", a->where);
	}
	*ret = o;
	return 0;
}

int
md_build_json_child(const struct md_answer *a, struct json_object *obj, const char *path,
    const char *key, enum json_type type, int required, struct json_object **ret,
    struct errbuf *e)
{
	int r;

	if ((r = jsonx_get(obj, path, key, type, required ? JSONX_REQUIRED : 0, ret, e)) < 0)
		return errbuf_prefix(e, r, "%s", a->where);
	return 0;
}

int
md_build_json_str(const struct md_answer *a, struct json_object *obj, const char *path,
    const char *key, int required, const char **ret, size_t *ret_len, struct errbuf *e)
{
	int r;

	if ((r = jsonx_str(obj, path, key, required ? JSONX_REQUIRED : 0, ret, ret_len,
	    e)) < 0)
		return errbuf_prefix(e, r, "%s", a->where);
	return 0;
}

int
md_build_digits(const char *s, size_t len)
{
	if (len == 0 || s[0] == '0')
		return 0;
	for (size_t i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

int
md_build_json_id(const struct md_answer *a, struct json_object *obj, const char *path,
    const char *key, char *dst, size_t cap, struct errbuf *e)
{
	struct json_object *v = NULL;
	char field[MD_BUILD_FIELD_MAX];
	const char *s;
	size_t len;

	snprintf(field, sizeof(field), "%s%s%s", path, *path ? "." : "", key);
	if (obj == NULL || !json_object_object_get_ex(obj, key, &v) ||
	    json_object_is_type(v, json_type_null))
		return errbuf_set(e, ERR_INVALID, "%s: %s: missing", a->where, field);
	if (json_object_is_type(v, json_type_int)) {
		s = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
		/* json-c saturates integers beyond 64 bits: the top value is no
		 * proof of the number the service sent */
		if (s == NULL || strcmp(s, "18446744073709551615") == 0)
			return errbuf_set(e, ERR_INVALID, "%s: %s: out of range", a->where,
			    field);
	} else if (json_object_is_type(v, json_type_string)) {
		s = json_object_get_string(v);
		if (!jsonx_string_ok(v))
			return errbuf_set(e, ERR_INVALID, "%s: %s: holds a NUL character",
			    a->where, field);
	} else {
		return errbuf_set(e, ERR_INVALID, "%s: %s: expected an integer, not %s",
		    a->where, field, jsonx_type_name(json_object_get_type(v)));
	}
	len = strlen(s);
	if (!md_build_digits(s, len))
		return errbuf_set(e, ERR_INVALID, "%s: %s \"%.32s\" is not a positive decimal id",
		    a->where, field, s);
	return md_build_set(a, field, dst, cap, s, len, MD_V_SEGMENT | MD_V_REQUIRED, e);
}

int
md_build_leaf(const struct md_getter *g, const char *path, int optional,
    const char *field, char *dst, size_t cap, int flags, struct errbuf *e)
{
	struct md_answer a;
	const char *v;
	size_t len;
	int r;

	memset(&a, 0, sizeof(a));
	if ((r = g->get(g->arg, path, optional, &a, e)) < 0)
		return r;
	if (a.status == 404) {
		dst[0] = '\0';
		md_session_answer_free(&a);
		return 1;
	}
	md_build_trim(a.body, a.len, &v, &len);
	r = md_build_set(&a, field, dst, cap, v, len, flags, e);
	md_session_answer_free(&a);
	return r;
}
