/* hcapi.c - decoders of the Hetzner Cloud API's answers. */
#include "hcapi.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "base/jsonx.h"
#include "base/xalloc.h"

#define HCAPI_PATH_MAX 160   /* bytes of a field's path in messages */
#define HCAPI_VALUE_MAX 4096 /* bytes of a string kept on the heap */
#define HCAPI_ID_MAX ((int64_t)1 << 53) /* ids are JSON numbers: exact in a double */

const char *
hcapi_label(const struct hcapi_labels *l, const char *key)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->kv[i].key, key) == 0)
			return l->kv[i].value;
	return NULL;
}

/* hcapi_sub writes "path.field" (or "field" at the top) into buf. */
static const char *
hcapi_sub(char buf[HCAPI_PATH_MAX], const char *path, const char *field)
{
	snprintf(buf, HCAPI_PATH_MAX, "%s%s%s", path, *path ? "." : "", field);
	return buf;
}

/* hcapi_idx writes "path.field[i]" into buf. */
static const char *
hcapi_idx(char buf[HCAPI_PATH_MAX], const char *path, const char *field, size_t i)
{
	snprintf(buf, HCAPI_PATH_MAX, "%s%s%s[%zu]", path, *path && *field ? "." : "",
	    field, i);
	return buf;
}

/* hcapi_str copies field's string into dst (size bytes with the NUL);
 * absent is "". */
static int
hcapi_str(json_object *o, const char *path, const char *field, int flags, char *dst,
    size_t size, struct errbuf *e)
{
	const char *v = NULL;
	size_t len = 0;
	char p[HCAPI_PATH_MAX];
	int r;

	if ((r = jsonx_str(o, path, field, flags, &v, &len, e)) < 0)
		return r;
	if (v == NULL) {
		dst[0] = '\0';
		return 0;
	}
	if (len >= size)
		return errbuf_set(e, ERR_INVALID, "%s: longer than %zu bytes",
		    hcapi_sub(p, path, field), size - 1);
	memcpy(dst, v, len + 1);
	return 0;
}

/* hcapi_dup copies field's string to the heap (NULL when absent). */
static int
hcapi_dup(json_object *o, const char *path, const char *field, int flags, size_t max,
    char **ret, struct errbuf *e)
{
	const char *v = NULL;
	size_t len = 0;
	char p[HCAPI_PATH_MAX];
	int r;

	if ((r = jsonx_str(o, path, field, flags, &v, &len, e)) < 0)
		return r;
	if (v != NULL && len >= max)
		return errbuf_set(e, ERR_INVALID, "%s: longer than %zu bytes",
		    hcapi_sub(p, path, field), max - 1);
	*ret = v != NULL ? xstrndup(v, len) : NULL;
	return 0;
}

#define HCAPI_CIDR 1   /* hcapi_addr's kind: a CIDR, not an address */

/* hcapi_addr reads field as an IP address of family kind (4, 6, or 0:
 * either), or with HCAPI_CIDR as a CIDR, into dst (NETPREFIX_TEXT_MAX
 * bytes for a CIDR) in canonical form; absent is "". */
static int
hcapi_addr(json_object *o, const char *path, const char *field, int flags, int kind,
    char *dst, struct errbuf *e)
{
	const char *v = NULL, *what;
	struct netprefix pf;
	char p[HCAPI_PATH_MAX];
	int r, ok;

	if ((r = jsonx_str(o, path, field, flags, &v, NULL, e)) < 0)
		return r;
	if (v == NULL) {
		dst[0] = '\0';
		return 0;
	}
	if (kind == HCAPI_CIDR) {
		ok = netprefix_parse(v, 0, &pf) == 0;
		what = "a CIDR";
	} else {
		ok = netaddr_parse(v, &pf.addr) == 0 && (kind == 0 || pf.addr.family == kind);
		what = kind == 6 ? "an IPv6 address" : kind == 4 ? "an IPv4 address" :
		    "an IP address";
	}
	if (!ok)
		return errbuf_set(e, ERR_INVALID, "%s: \"%.64s\" is not %s",
		    hcapi_sub(p, path, field), v, what);
	if (kind == HCAPI_CIDR)
		netprefix_format(&pf, dst);
	else
		netaddr_format(&pf.addr, dst);
	return 0;
}

/* hcapi_ip and hcapi_prefix name hcapi_addr's two uses. */
static int
hcapi_ip(json_object *o, const char *path, const char *field, int flags, int family,
    char dst[NETADDR_TEXT_MAX], struct errbuf *e)
{
	return hcapi_addr(o, path, field, flags, family, dst, e);
}

static int
hcapi_prefix(json_object *o, const char *path, const char *field, int flags,
    char dst[NETPREFIX_TEXT_MAX], struct errbuf *e)
{
	return hcapi_addr(o, path, field, flags, HCAPI_CIDR, dst, e);
}

/* hcapi_message copies an error message, cut to the buffer, without control
 * characters (it is shown in Events and logs). */
static void
hcapi_message(char *dst, size_t size, const char *msg, size_t len)
{
	if (msg == NULL)
		len = 0;
	if (len >= size)
		len = size - 1;
	for (size_t i = 0; i < len; i++)
		dst[i] = (unsigned char)msg[i] < 0x20 || msg[i] == 0x7f ? ' ' : msg[i];
	dst[len] = '\0';
}

static int
hcapi_id(json_object *o, const char *path, const char *field, int flags, int64_t *ret,
    struct errbuf *e)
{
	return jsonx_int(o, path, field, 0, HCAPI_ID_MAX, flags, ret, e);
}

/* hcapi_array reads field as an array of at most max items. */
static int
hcapi_array(json_object *o, const char *path, const char *field, int flags, size_t max,
    json_object **ret, size_t *ret_n, struct errbuf *e)
{
	char p[HCAPI_PATH_MAX];
	int r;

	if ((r = jsonx_array(o, path, field, flags, ret, ret_n, e)) < 0)
		return r;
	if (*ret_n > max)
		return errbuf_set(e, ERR_TOO_LARGE, "%s: more than %zu items",
		    hcapi_sub(p, path, field), max);
	return 0;
}

/* hcapi_elem returns the i-th element of a, which must be an object. */
static int
hcapi_elem(json_object *a, const char *path, const char *field, size_t i,
    json_object **ret, char p[HCAPI_PATH_MAX], struct errbuf *e)
{
	json_object *v = json_object_array_get_idx(a, i);

	hcapi_idx(p, path, field, i);
	if (!json_object_is_type(v, json_type_object))
		return errbuf_set(e, ERR_INVALID, "%s: expected an object, not %s", p,
		    jsonx_type_name(json_object_get_type(v)));
	*ret = v;
	return 0;
}

void
hcapi_labels_copy(struct hcapi_labels *dst, const struct hcapi_labels *src)
{
	dst->n = src->n;
	dst->kv = xcalloc(src->n ? src->n : 1, sizeof(*dst->kv));
	for (size_t i = 0; i < src->n; i++) {
		dst->kv[i].key = xstrdup(src->kv[i].key);
		dst->kv[i].value = xstrdup(src->kv[i].value);
	}
}

void
hcapi_labels_free(struct hcapi_labels *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->kv[i].key);
		free(l->kv[i].value);
	}
	free(l->kv);
	memset(l, 0, sizeof(*l));
}

static int
hcapi_labels_parse(json_object *o, const char *path, struct hcapi_labels *ret,
    struct errbuf *e)
{
	json_object *m = NULL;
	char p[HCAPI_PATH_MAX];
	size_t n;
	int r;

	if ((r = jsonx_object(o, path, "labels", 0, &m, e)) < 0)
		return r;
	if (m == NULL)
		return 0;
	hcapi_sub(p, path, "labels");
	n = (size_t)json_object_object_length(m);
	if (n > HCAPI_LABELS_MAX)
		return errbuf_set(e, ERR_TOO_LARGE, "%s: more than %d labels", p,
		    HCAPI_LABELS_MAX);
	ret->kv = xcalloc(n ? n : 1, sizeof(*ret->kv));
	json_object_object_foreach(m, k, v) {
		if (!json_object_is_type(v, json_type_string) || !jsonx_string_ok(v) ||
		    strlen(k) >= HCAPI_NAME_MAX + 64 ||
		    (size_t)json_object_get_string_len(v) >= HCAPI_NAME_MAX) {
			r = errbuf_set(e, ERR_INVALID, "%s.%.64s: expected a label value (a short "
			    "string)", p, k);
			hcapi_labels_free(ret);
			return r;
		}
		ret->kv[ret->n].key = xstrdup(k);
		ret->kv[ret->n].value = xstrdup(json_object_get_string(v));
		ret->n++;
	}
	return 0;
}

static int
hcapi_privnets_parse(json_object *o, const char *path, size_t *ret_n,
    struct hcapi_privnet **ret, struct errbuf *e)
{
	json_object *a = NULL, *it;
	char p[HCAPI_PATH_MAX];
	size_t n = 0;
	int r;

	if ((r = hcapi_array(o, path, "private_net", 0, HCAPI_PRIVNETS_MAX, &a, &n, e)) < 0)
		return r;
	if (n == 0)
		return 0;
	*ret = xcalloc(n, sizeof(**ret));
	for (size_t i = 0; i < n; i++) {
		if ((r = hcapi_elem(a, path, "private_net", i, &it, p, e)) < 0 ||
		    (r = hcapi_id(it, p, "network", JSONX_REQUIRED, &(*ret)[i].network, e)) < 0 ||
		    (r = hcapi_ip(it, p, "ip", 0, 0, (*ret)[i].ip, e)) < 0) {
			free(*ret);
			*ret = NULL;
			return r;
		}
	}
	*ret_n = n;
	return 0;
}

int
hcapi_parse(const char *buf, size_t len, json_object **ret, struct errbuf *e)
{
	json_object *o;
	int r;

	if ((r = jsonx_parse(buf, len, HCAPI_JSON_DEPTH, &o, e)) < 0)
		return r;
	if (!json_object_is_type(o, json_type_object)) {
		r = errbuf_set(e, ERR_INVALID, "the answer is %s, not an object",
		    jsonx_type_name(json_object_get_type(o)));
		json_object_put(o);
		return r;
	}
	*ret = o;
	return 0;
}

int
hcapi_error_parse(const char *buf, size_t len, struct hcapi_error *ret)
{
	json_object *root = NULL, *err = NULL;
	struct errbuf e;
	const char *code = NULL, *msg = NULL;
	size_t clen = 0, mlen = 0;
	int r = ERR_INVALID;

	if (buf == NULL || hcapi_parse(buf, len, &root, &e) < 0)
		return ERR_INVALID;
	if (jsonx_object(root, "", "error", JSONX_REQUIRED, &err, &e) < 0 ||
	    jsonx_str(err, "error", "code", JSONX_REQUIRED, &code, &clen, &e) < 0 ||
	    jsonx_str(err, "error", "message", 0, &msg, &mlen, &e) < 0 ||
	    clen == 0 || clen >= sizeof(ret->code))
		goto out;
	memcpy(ret->code, code, clen + 1);
	hcapi_message(ret->message, sizeof(ret->message), msg, mlen);
	r = 0;
out:
	json_object_put(root);
	return r;
}

int
hcapi_page_parse(json_object *root, struct hcapi_page *ret, struct errbuf *e)
{
	json_object *meta, *pag;
	struct hcapi_page pg;
	int r;

	if ((r = jsonx_object(root, "", "meta", JSONX_REQUIRED, &meta, e)) < 0 ||
	    (r = jsonx_object(meta, "meta", "pagination", JSONX_REQUIRED, &pag, e)) < 0 ||
	    (r = jsonx_int(pag, "meta.pagination", "page", 1, INT32_MAX, JSONX_REQUIRED,
	    &pg.page, e)) < 0 ||
	    (r = jsonx_int(pag, "meta.pagination", "next_page", 0, INT32_MAX, 0,
	    &pg.next_page, e)) < 0 ||
	    (r = jsonx_int(pag, "meta.pagination", "last_page", 0, INT32_MAX, 0,
	    &pg.last_page, e)) < 0 ||
	    (r = jsonx_int(pag, "meta.pagination", "total_entries", 0, INT32_MAX, 0,
	    &pg.total_entries, e)) < 0)
		return r;
	if (pg.next_page != 0 && pg.next_page <= pg.page)
		return errbuf_set(e, ERR_INVALID, "meta.pagination.next_page %" PRId64 " does not "
		    "follow page %" PRId64, pg.next_page, pg.page);
	*ret = pg;
	return 0;
}

int
hcapi_items(json_object *root, const char *key, json_object **ret, size_t *ret_n,
    struct errbuf *e)
{
	return hcapi_array(root, "", key, JSONX_REQUIRED, HCAPI_ITEMS_MAX, ret, ret_n, e);
}

int
hcapi_member(json_object *root, const char *key, json_object **ret, struct errbuf *e)
{
	return jsonx_object(root, "", key, JSONX_REQUIRED, ret, e);
}

/* --- servers ----------------------------------------------------------------- */

void
hcapi_server_free(struct hcapi_server *s)
{
	if (s == NULL)
		return;
	free(s->name);
	free(s->private_net);
	hcapi_labels_free(&s->labels);
	memset(s, 0, sizeof(*s));
}

/* hcapi_server_location reads location.{name,network_zone}, else (an answer
 * from before the API dropped datacenter) datacenter.location. */
static int
hcapi_server_location(json_object *o, const char *path, struct hcapi_server *s,
    struct errbuf *e)
{
	json_object *loc = NULL, *dc = NULL;
	char p[HCAPI_PATH_MAX], q[HCAPI_PATH_MAX];
	int r;

	if ((r = jsonx_object(o, path, "location", 0, &loc, e)) < 0)
		return r;
	if (loc == NULL) {
		if ((r = jsonx_object(o, path, "datacenter", 0, &dc, e)) < 0)
			return r;
		if (dc != NULL && (r = jsonx_object(dc, hcapi_sub(p, path, "datacenter"),
		    "location", 0, &loc, e)) < 0)
			return r;
		if (loc != NULL)
			hcapi_sub(q, p, "location");
	} else {
		hcapi_sub(q, path, "location");
	}
	if (loc == NULL)
		return errbuf_set(e, ERR_INVALID, "%s%sserver %" PRId64 ": no location", path,
		    *path ? ": " : "", s->id);
	if ((r = hcapi_str(loc, q, "name", JSONX_REQUIRED, s->location, sizeof(s->location),
	    e)) < 0 ||
	    (r = hcapi_str(loc, q, "network_zone", 0, s->network_zone,
	    sizeof(s->network_zone), e)) < 0)
		return r;
	return 0;
}

int
hcapi_server_parse(json_object *o, const char *path, struct hcapi_server *ret,
    struct errbuf *e)
{
	struct hcapi_server s;
	json_object *pub = NULL, *v4 = NULL, *v6 = NULL, *st = NULL;
	char p[HCAPI_PATH_MAX], q[HCAPI_PATH_MAX];
	int r;

	memset(&s, 0, sizeof(s));
	if ((r = hcapi_id(o, path, "id", JSONX_REQUIRED, &s.id, e)) < 0 ||
	    (r = hcapi_dup(o, path, "name", JSONX_REQUIRED, HCAPI_NAME_MAX, &s.name, e)) < 0 ||
	    (r = hcapi_str(o, path, "status", JSONX_REQUIRED, s.status, sizeof(s.status),
	    e)) < 0 ||
	    (r = jsonx_object(o, path, "public_net", 0, &pub, e)) < 0)
		goto fail;
	if (pub != NULL) {
		hcapi_sub(p, path, "public_net");
		if ((r = jsonx_object(pub, p, "ipv4", 0, &v4, e)) < 0 ||
		    (r = jsonx_object(pub, p, "ipv6", 0, &v6, e)) < 0 ||
		    (v4 && (r = hcapi_ip(v4, hcapi_sub(q, p, "ipv4"), "ip", 0, 4, s.ipv4, e)) < 0) ||
		    (v6 && (r = hcapi_prefix(v6, hcapi_sub(q, p, "ipv6"), "ip", 0, s.ipv6, e)) < 0))
			goto fail;
		if (s.ipv6[0] && strchr(s.ipv6, ':') == NULL) {
			r = errbuf_set(e, ERR_INVALID, "%s.ipv6.ip: \"%s\" is not an IPv6 network", p,
			    s.ipv6);
			goto fail;
		}
	}
	if ((r = hcapi_privnets_parse(o, path, &s.n_private, &s.private_net, e)) < 0 ||
	    (r = jsonx_object(o, path, "server_type", 0, &st, e)) < 0 ||
	    (st && (r = hcapi_str(st, hcapi_sub(p, path, "server_type"), "name", JSONX_REQUIRED,
	    s.server_type, sizeof(s.server_type), e)) < 0) ||
	    (r = hcapi_server_location(o, path, &s, e)) < 0 ||
	    (r = hcapi_labels_parse(o, path, &s.labels, e)) < 0)
		goto fail;
	*ret = s;
	return 0;
fail:
	hcapi_server_free(&s);
	memset(ret, 0, sizeof(*ret));
	return r;
}

/* --- load balancers ------------------------------------------------------------ */

static void
hcapi_lb_service_free(struct hcapi_lb_service *s)
{
	free(s->hc.domain);
	free(s->hc.path);
	free(s->hc.response);
	free(s->hc.status_codes);
	free(s->cookie_name);
	free(s->certificates);
}

void
hcapi_lb_free(struct hcapi_lb *lb)
{
	if (lb == NULL)
		return;
	free(lb->name);
	hcapi_labels_free(&lb->labels);
	free(lb->private_net);
	for (size_t i = 0; i < lb->n_services; i++)
		hcapi_lb_service_free(&lb->services[i]);
	free(lb->services);
	for (size_t i = 0; i < lb->n_targets; i++)
		free(lb->targets[i].resolved);
	free(lb->targets);
	memset(lb, 0, sizeof(*lb));
}

/* hcapi_join reads field, an array of strings (or, with numbers, of
 * integers), as one ","-joined string (NULL when absent). */
static int
hcapi_join(json_object *o, const char *path, const char *field, int numbers, size_t max,
    char **ret, struct errbuf *e)
{
	json_object *a = NULL;
	struct dynbuf b;
	char p[HCAPI_PATH_MAX];
	size_t n = 0;
	int r;

	if ((r = hcapi_array(o, path, field, 0, max, &a, &n, e)) < 0)
		return r;
	if (a == NULL)
		return 0;
	dynbuf_init(&b, HCAPI_VALUE_MAX);
	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(a, i);
		if (numbers ? !json_object_is_type(v, json_type_int) :
		    (!json_object_is_type(v, json_type_string) || !jsonx_string_ok(v) ||
		    strchr(json_object_get_string(v), ',') != NULL)) {
			dynbuf_free(&b);
			return errbuf_set(e, ERR_INVALID, "%s: expected %s",
			    hcapi_idx(p, path, field, i), numbers ? "an integer" :
			    "a string without commas");
		}
		if ((i && dynbuf_addstr(&b, ",") < 0) ||
		    (numbers ? dynbuf_addf(&b, "%" PRId64, json_object_get_int64(v)) :
		    dynbuf_addstr(&b, json_object_get_string(v))) < 0) {
			dynbuf_free(&b);
			return errbuf_set(e, ERR_TOO_LARGE, "%s: longer than %d bytes",
			    hcapi_sub(p, path, field), HCAPI_VALUE_MAX);
		}
	}
	*ret = dynbuf_take(&b, NULL);
	return 0;
}

static int
hcapi_lb_hc_parse(json_object *o, const char *path, struct hcapi_lb_hc *hc,
    struct errbuf *e)
{
	json_object *h = NULL, *http = NULL;
	char p[HCAPI_PATH_MAX], q[HCAPI_PATH_MAX];
	int r;

	if ((r = jsonx_object(o, path, "health_check", 0, &h, e)) < 0 || h == NULL)
		return r;
	hcapi_sub(p, path, "health_check");
	if ((r = hcapi_str(h, p, "protocol", JSONX_REQUIRED, hc->protocol,
	    sizeof(hc->protocol), e)) < 0 ||
	    (r = jsonx_int(h, p, "port", 0, 65535, 0, &hc->port, e)) < 0 ||
	    (r = jsonx_int(h, p, "interval", 0, 86400, 0, &hc->interval, e)) < 0 ||
	    (r = jsonx_int(h, p, "timeout", 0, 86400, 0, &hc->timeout, e)) < 0 ||
	    (r = jsonx_int(h, p, "retries", 0, 1000, 0, &hc->retries, e)) < 0 ||
	    (r = jsonx_object(h, p, "http", 0, &http, e)) < 0)
		return r;
	if (http == NULL)
		return 0;
	hc->has_http = 1;
	hcapi_sub(q, p, "http");
	if ((r = hcapi_dup(http, q, "domain", 0, HCAPI_NAME_MAX, &hc->domain, e)) < 0 ||
	    (r = hcapi_dup(http, q, "path", 0, HCAPI_VALUE_MAX, &hc->path, e)) < 0 ||
	    (r = hcapi_dup(http, q, "response", 0, HCAPI_VALUE_MAX, &hc->response, e)) < 0 ||
	    (r = hcapi_join(http, q, "status_codes", 0, HCAPI_STATUS_CODES_MAX,
	    &hc->status_codes, e)) < 0 ||
	    (r = jsonx_bool(http, q, "tls", 0, &hc->tls, e)) < 0)
		return r;
	return 0;
}

static int
hcapi_lb_service_parse(json_object *o, const char *path, struct hcapi_lb_service *s,
    struct errbuf *e)
{
	json_object *http = NULL;
	char p[HCAPI_PATH_MAX];
	int r;

	if ((r = jsonx_int(o, path, "listen_port", 1, 65535, JSONX_REQUIRED, &s->listen_port,
	    e)) < 0 ||
	    (r = jsonx_int(o, path, "destination_port", 0, 65535, 0, &s->destination_port,
	    e)) < 0 ||
	    (r = hcapi_str(o, path, "protocol", JSONX_REQUIRED, s->protocol,
	    sizeof(s->protocol), e)) < 0 ||
	    (r = jsonx_bool(o, path, "proxyprotocol", 0, &s->proxyprotocol, e)) < 0 ||
	    (r = hcapi_lb_hc_parse(o, path, &s->hc, e)) < 0 ||
	    (r = jsonx_object(o, path, "http", 0, &http, e)) < 0)
		return r;
	if (http == NULL)
		return 0;
	s->has_http = 1;
	hcapi_sub(p, path, "http");
	if ((r = hcapi_dup(http, p, "cookie_name", 0, HCAPI_NAME_MAX, &s->cookie_name, e)) < 0 ||
	    (r = jsonx_int(http, p, "cookie_lifetime", 0, INT32_MAX, 0, &s->cookie_lifetime,
	    e)) < 0 ||
	    (r = hcapi_join(http, p, "certificates", 1, HCAPI_SERVICES_MAX, &s->certificates,
	    e)) < 0 ||
	    (r = jsonx_bool(http, p, "redirect_http", 0, &s->redirect_http, e)) < 0 ||
	    (r = jsonx_bool(http, p, "sticky_sessions", 0, &s->sticky_sessions, e)) < 0)
		return r;
	return 0;
}

/* hcapi_lb_resolved reads a label_selector target's targets[] (the servers
 * it selects now). */
static int
hcapi_lb_resolved(json_object *o, const char *path, struct hcapi_lb_target *t,
    struct errbuf *e)
{
	json_object *a = NULL, *it, *srv;
	char p[HCAPI_PATH_MAX], q[HCAPI_PATH_MAX];
	size_t n = 0;
	int r;

	if ((r = hcapi_array(o, path, "targets", 0, HCAPI_TARGETS_MAX, &a, &n, e)) < 0 ||
	    n == 0)
		return r;
	t->resolved = xcalloc(n, sizeof(*t->resolved));
	for (size_t i = 0; i < n; i++) {
		if ((r = hcapi_elem(a, path, "targets", i, &it, p, e)) < 0 ||
		    (r = jsonx_object(it, p, "server", 0, &srv, e)) < 0)
			return r;
		if (srv == NULL)
			continue;   /* not a server: nothing of ours */
		if ((r = hcapi_id(srv, hcapi_sub(q, p, "server"), "id", JSONX_REQUIRED,
		    &t->resolved[t->n_resolved], e)) < 0)
			return r;
		t->n_resolved++;
	}
	return 0;
}

static int
hcapi_lb_target_parse(json_object *o, const char *path, struct hcapi_lb_target *t,
    struct errbuf *e)
{
	json_object *v = NULL;
	char p[HCAPI_PATH_MAX];
	int r;

	if ((r = hcapi_str(o, path, "type", JSONX_REQUIRED, t->type, sizeof(t->type), e)) < 0 ||
	    (r = jsonx_bool(o, path, "use_private_ip", 0, &t->use_private_ip, e)) < 0)
		return r;
	if (strcmp(t->type, "server") == 0) {
		if ((r = jsonx_object(o, path, "server", JSONX_REQUIRED, &v, e)) < 0 ||
		    (r = hcapi_id(v, hcapi_sub(p, path, "server"), "id", JSONX_REQUIRED,
		    &t->server_id, e)) < 0)
			return r;
	} else if (strcmp(t->type, "label_selector") == 0) {
		if ((r = jsonx_object(o, path, "label_selector", JSONX_REQUIRED, &v, e)) < 0 ||
		    (r = hcapi_str(v, hcapi_sub(p, path, "label_selector"), "selector",
		    JSONX_REQUIRED, t->selector, sizeof(t->selector), e)) < 0 ||
		    (r = hcapi_lb_resolved(o, path, t, e)) < 0)
			return r;
	} else if (strcmp(t->type, "ip") == 0) {
		if ((r = jsonx_object(o, path, "ip", JSONX_REQUIRED, &v, e)) < 0 ||
		    (r = hcapi_ip(v, hcapi_sub(p, path, "ip"), "ip", JSONX_REQUIRED, 0, t->ip,
		    e)) < 0)
			return r;
	}
	/* another type: kept by its name, never touched */
	return 0;
}

static int
hcapi_lb_public(json_object *o, const char *path, struct hcapi_lb *lb, struct errbuf *e)
{
	json_object *pub = NULL, *v4 = NULL, *v6 = NULL;
	char p[HCAPI_PATH_MAX], q[HCAPI_PATH_MAX];
	int r;

	if ((r = jsonx_object(o, path, "public_net", 0, &pub, e)) < 0 || pub == NULL)
		return r;
	hcapi_sub(p, path, "public_net");
	if ((r = jsonx_bool(pub, p, "enabled", 0, &lb->public_enabled, e)) < 0 ||
	    (r = jsonx_object(pub, p, "ipv4", 0, &v4, e)) < 0 ||
	    (r = jsonx_object(pub, p, "ipv6", 0, &v6, e)) < 0 ||
	    (v4 && (r = hcapi_ip(v4, hcapi_sub(q, p, "ipv4"), "ip", 0, 4, lb->ipv4, e)) < 0) ||
	    (v6 && (r = hcapi_ip(v6, hcapi_sub(q, p, "ipv6"), "ip", 0, 6, lb->ipv6, e)) < 0))
		return r;
	return 0;
}

int
hcapi_lb_parse(json_object *o, const char *path, struct hcapi_lb *ret, struct errbuf *e)
{
	struct hcapi_lb lb;
	json_object *t = NULL, *a = NULL, *it, *alg = NULL, *prot = NULL, *loc = NULL;
	char p[HCAPI_PATH_MAX];
	size_t n = 0;
	int r;

	memset(&lb, 0, sizeof(lb));
	if ((r = hcapi_id(o, path, "id", JSONX_REQUIRED, &lb.id, e)) < 0 ||
	    (r = hcapi_dup(o, path, "name", JSONX_REQUIRED, HCAPI_NAME_MAX, &lb.name, e)) < 0 ||
	    (r = hcapi_labels_parse(o, path, &lb.labels, e)) < 0 ||
	    (r = jsonx_object(o, path, "load_balancer_type", 0, &t, e)) < 0 ||
	    (t && ((r = hcapi_str(t, hcapi_sub(p, path, "load_balancer_type"), "name",
	    JSONX_REQUIRED, lb.type, sizeof(lb.type), e)) < 0 ||
	    (r = jsonx_int(t, p, "max_targets", 0, INT32_MAX, 0, &lb.max_targets, e)) < 0)) ||
	    (r = jsonx_object(o, path, "location", 0, &loc, e)) < 0 ||
	    (loc && ((r = hcapi_str(loc, hcapi_sub(p, path, "location"), "name", 0,
	    lb.location, sizeof(lb.location), e)) < 0 ||
	    (r = hcapi_str(loc, p, "network_zone", 0, lb.network_zone,
	    sizeof(lb.network_zone), e)) < 0)) ||
	    (r = hcapi_lb_public(o, path, &lb, e)) < 0 ||
	    (r = hcapi_privnets_parse(o, path, &lb.n_private, &lb.private_net, e)) < 0 ||
	    (r = jsonx_object(o, path, "algorithm", 0, &alg, e)) < 0 ||
	    (alg && (r = hcapi_str(alg, hcapi_sub(p, path, "algorithm"), "type", 0,
	    lb.algorithm, sizeof(lb.algorithm), e)) < 0) ||
	    (r = jsonx_object(o, path, "protection", 0, &prot, e)) < 0 ||
	    (prot && (r = jsonx_bool(prot, hcapi_sub(p, path, "protection"), "delete", 0,
	    &lb.protection_delete, e)) < 0))
		goto fail;
	if ((r = hcapi_array(o, path, "services", 0, HCAPI_SERVICES_MAX, &a, &n, e)) < 0)
		goto fail;
	if (n > 0)
		lb.services = xcalloc(n, sizeof(*lb.services));
	for (size_t i = 0; i < n; i++) {
		lb.n_services = i + 1;
		if ((r = hcapi_elem(a, path, "services", i, &it, p, e)) < 0 ||
		    (r = hcapi_lb_service_parse(it, p, &lb.services[i], e)) < 0)
			goto fail;
		for (size_t j = 0; j < i; j++)
			if (lb.services[j].listen_port == lb.services[i].listen_port) {
				r = errbuf_set(e, ERR_INVALID, "%s.listen_port: %" PRId64 " twice", p,
				    lb.services[i].listen_port);
				goto fail;
			}
	}
	n = 0;
	if ((r = hcapi_array(o, path, "targets", 0, HCAPI_TARGETS_MAX, &a, &n, e)) < 0)
		goto fail;
	if (n > 0)
		lb.targets = xcalloc(n, sizeof(*lb.targets));
	for (size_t i = 0; i < n; i++) {
		lb.n_targets = i + 1;
		if ((r = hcapi_elem(a, path, "targets", i, &it, p, e)) < 0 ||
		    (r = hcapi_lb_target_parse(it, p, &lb.targets[i], e)) < 0)
			goto fail;
	}
	*ret = lb;
	return 0;
fail:
	hcapi_lb_free(&lb);
	memset(ret, 0, sizeof(*ret));
	return r;
}

/* --- networks and actions ---------------------------------------------------- */

void
hcapi_network_free(struct hcapi_network *n)
{
	if (n == NULL)
		return;
	free(n->name);
	free(n->routes);
	memset(n, 0, sizeof(*n));
}

int
hcapi_network_parse(json_object *o, const char *path, struct hcapi_network *ret,
    struct errbuf *e)
{
	struct hcapi_network nw;
	json_object *a = NULL, *it;
	char p[HCAPI_PATH_MAX];
	size_t n = 0;
	int r;

	memset(&nw, 0, sizeof(nw));
	if ((r = hcapi_id(o, path, "id", JSONX_REQUIRED, &nw.id, e)) < 0 ||
	    (r = hcapi_dup(o, path, "name", JSONX_REQUIRED, HCAPI_NAME_MAX, &nw.name, e)) < 0 ||
	    (r = hcapi_prefix(o, path, "ip_range", 0, nw.ip_range, e)) < 0 ||
	    (r = hcapi_array(o, path, "routes", 0, HCAPI_ROUTES_MAX, &a, &n, e)) < 0)
		goto fail;
	if (n > 0)
		nw.routes = xcalloc(n, sizeof(*nw.routes));
	for (size_t i = 0; i < n; i++) {
		if ((r = hcapi_elem(a, path, "routes", i, &it, p, e)) < 0 ||
		    (r = hcapi_prefix(it, p, "destination", JSONX_REQUIRED,
		    nw.routes[i].destination, e)) < 0 ||
		    (r = hcapi_ip(it, p, "gateway", JSONX_REQUIRED, 0, nw.routes[i].gateway,
		    e)) < 0)
			goto fail;
	}
	nw.n_routes = n;
	*ret = nw;
	return 0;
fail:
	hcapi_network_free(&nw);
	memset(ret, 0, sizeof(*ret));
	return r;
}

int
hcapi_action_parse(json_object *o, const char *path, struct hcapi_action *ret,
    struct errbuf *e)
{
	struct hcapi_action a;
	json_object *err = NULL;
	const char *msg = NULL;
	size_t mlen = 0;
	char p[HCAPI_PATH_MAX];
	int r;

	memset(&a, 0, sizeof(a));
	if ((r = hcapi_id(o, path, "id", JSONX_REQUIRED, &a.id, e)) < 0 ||
	    (r = hcapi_str(o, path, "command", 0, a.command, sizeof(a.command), e)) < 0 ||
	    (r = hcapi_str(o, path, "status", JSONX_REQUIRED, a.status, sizeof(a.status),
	    e)) < 0 ||
	    (r = jsonx_object(o, path, "error", 0, &err, e)) < 0)
		return r;
	if (strcmp(a.status, "running") != 0 && strcmp(a.status, "success") != 0 &&
	    strcmp(a.status, "error") != 0)
		return errbuf_set(e, ERR_INVALID, "%s: \"%s\" is not an action status",
		    hcapi_sub(p, path, "status"), a.status);
	if (err != NULL) {
		hcapi_sub(p, path, "error");
		if ((r = hcapi_str(err, p, "code", 0, a.error_code, sizeof(a.error_code), e)) < 0 ||
		    (r = jsonx_str(err, p, "message", 0, &msg, &mlen, e)) < 0)
			return r;
		hcapi_message(a.error_message, sizeof(a.error_message), msg, mlen);
	}
	*ret = a;
	return 0;
}
