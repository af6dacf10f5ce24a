/* httpreq.c - the request head parser: RFC 9112's request line and header
 * fields, with Go's net/http server's strictness and a cap on every part. */
#include "serve/httpreq.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* httpreq_tchar: RFC 9110 token characters (methods, header names). */
static int
httpreq_tchar(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9') || (ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

static int
httpreq_hex(unsigned char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* httpreq_unescape percent-decodes s[0..n) into out (NUL-terminated), '+' as a
 * space when plus is set (query strings). Returns the length, ERR_INVALID for
 * a bad escape or a NUL, ERR_TOO_LARGE when out is too small. */
static int
httpreq_unescape(const char *s, size_t n, int plus, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int ch = (unsigned char)s[i];
		if (ch == '%') {
			int hi, lo;
			if (i + 2 >= n)
				return ERR_INVALID;
			if ((hi = httpreq_hex((unsigned char)s[i + 1])) < 0 ||
			    (lo = httpreq_hex((unsigned char)s[i + 2])) < 0)
				return ERR_INVALID;
			ch = hi * 16 + lo;
			i += 2;
			if (ch == 0)
				return ERR_INVALID;
		} else if (ch == '+' && plus) {
			ch = ' ';
		}
		if (o + 1 >= outlen)
			return ERR_TOO_LARGE;
		out[o++] = (char)ch;
	}
	if (outlen == 0)
		return ERR_TOO_LARGE;
	out[o] = '\0';
	return (int)o;
}

static int
httpreq_token_eq(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

/* httpreq_request_line parses "METHOD TARGET HTTP/1.x" into rq. */
static int
httpreq_request_line(const char *line, size_t n, struct httpreq *rq,
    struct errbuf *e)
{
	const char *sp1 = memchr(line, ' ', n), *target, *sp2, *ver, *q, *path;
	size_t tlen, vlen, plen;
	int r;

	if (sp1 == NULL)
		return errbuf_set(e, ERR_INVALID, "malformed HTTP request");
	target = sp1 + 1;
	if ((sp2 = memchr(target, ' ', (size_t)(line + n - target))) == NULL)
		return errbuf_set(e, ERR_INVALID, "malformed HTTP request");
	ver = sp2 + 1;
	tlen = (size_t)(sp2 - target);
	vlen = (size_t)(line + n - ver);
	if (sp1 == line || (size_t)(sp1 - line) >= sizeof(rq->method))
		return errbuf_set(e, ERR_INVALID, "invalid method");
	for (const char *p = line; p < sp1; p++)
		if (!httpreq_tchar((unsigned char)*p))
			return errbuf_set(e, ERR_INVALID, "invalid method");
	memcpy(rq->method, line, (size_t)(sp1 - line));
	rq->method[sp1 - line] = '\0';

	if (vlen == 8 && memcmp(ver, "HTTP/1.1", 8) == 0) {
		rq->http_minor = 1;
	} else if (vlen == 8 && memcmp(ver, "HTTP/1.0", 8) == 0) {
		rq->http_minor = 0;
	} else if (vlen == 8 && memcmp(ver, "HTTP/", 5) == 0 && ver[5] >= '0' &&
	    ver[5] <= '9' && ver[6] == '.' && ver[7] >= '0' && ver[7] <= '9') {
		return errbuf_set(e, ERR_UNSUPPORTED, "unsupported protocol version");
	} else {
		return errbuf_set(e, ERR_INVALID, "malformed HTTP version");
	}

	if (tlen == 0)
		return errbuf_set(e, ERR_INVALID, "missing request target");
	for (size_t i = 0; i < tlen; i++)
		if ((unsigned char)target[i] <= 0x20 || target[i] == 0x7f)
			return errbuf_set(e, ERR_INVALID, "invalid character in request target");
	path = target;
	if (target[0] != '/') {
		/* absolute-form (RFC 9112 3.2.2): servers must accept it */
		size_t skip;
		if (tlen > 8 && strncasecmp(target, "https://", 8) == 0)
			skip = 8;
		else if (tlen > 7 && strncasecmp(target, "http://", 7) == 0)
			skip = 7;
		else
			return errbuf_set(e, ERR_INVALID, "invalid request target");
		path = target + skip;
		while (path < target + tlen && *path != '/' && *path != '?')
			path++;
	}
	q = memchr(path, '?', (size_t)(target + tlen - path));
	plen = (size_t)((q ? q : target + tlen) - path);
	if (plen == 0) {
		snprintf(rq->path, sizeof(rq->path), "/");
	} else if ((r = httpreq_unescape(path, plen, 0, rq->path, sizeof(rq->path))) < 0) {
		return errbuf_set(e, r, r == ERR_TOO_LARGE ? "request path too long" :
		    "invalid URL escape in the path");
	} else if (rq->path[0] != '/') {
		return errbuf_set(e, ERR_INVALID, "invalid request target");
	}
	if (q) {
		size_t qlen = (size_t)(target + tlen - q - 1);
		if (qlen >= sizeof(rq->query))
			return errbuf_set(e, ERR_TOO_LARGE, "query string too long");
		memcpy(rq->query, q + 1, qlen);
		rq->query[qlen] = '\0';
	}
	return 0;
}

int
httpreq_parse(const char *buf, size_t len, struct httpreq *ret, struct errbuf *e)
{
	/* the scratch copy holds the Authorization header: wiped at the end */
	struct httpreq scratch, *rq = &scratch;
	const char *p = buf, *lim = NULL;
	size_t ls = 0, nheaders = 0;
	int r = 0, hosts = 0, close_tok = 0, keep_tok = 0, first = 1;
	long long clen = -1;

	/* the head ends at the first empty line (CRLF or a bare LF, as Go's
	 * server accepts) */
	for (size_t i = 0; i < len && i < HTTPREQ_MAX; i++) {
		size_t ll;
		if (buf[i] != '\n')
			continue;
		ll = i - ls;
		if (ll > 0 && buf[i - 1] == '\r')
			ll--;
		if (ll == 0) {
			if (ls == 0)
				return errbuf_set(e, ERR_INVALID, "malformed HTTP request");
			lim = buf + i + 1;
			break;
		}
		ls = i + 1;
	}
	if (lim == NULL) {
		if (len >= HTTPREQ_MAX)
			return errbuf_set(e, ERR_TOO_LARGE, "request header too large");
		return 0;
	}
	memset(rq, 0, sizeof(*rq));
	while (p < lim) {
		const char *nl = memchr(p, '\n', (size_t)(lim - p)), *colon, *v, *vend;
		size_t ll = (size_t)(nl - p);
		if (ll > 0 && p[ll - 1] == '\r')
			ll--;
		if (ll == 0)
			break;
		for (size_t i = 0; i < ll; i++) {
			unsigned char ch = (unsigned char)p[i];
			if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
				r = errbuf_set(e, ERR_INVALID, "invalid control character in the header");
				goto out;
			}
		}
		if (first) {
			first = 0;
			if ((r = httpreq_request_line(p, ll, rq, e)) < 0)
				goto out;
			p = nl + 1;
			continue;
		}
		if (++nheaders > HTTPREQ_HEADERS_MAX) {
			r = errbuf_set(e, ERR_TOO_LARGE, "too many header lines");
			goto out;
		}
		if (p[0] == ' ' || p[0] == '\t') {
			r = errbuf_set(e, ERR_INVALID, "obsolete line folding in the header");
			goto out;
		}
		colon = memchr(p, ':', ll);
		if (colon == NULL || colon == p) {
			r = errbuf_set(e, ERR_INVALID, "malformed header line");
			goto out;
		}
		for (const char *c = p; c < colon; c++)
			if (!httpreq_tchar((unsigned char)*c)) {
				r = errbuf_set(e, ERR_INVALID, "invalid header name");
				goto out;
			}
		v = colon + 1;
		vend = p + ll;
		while (v < vend && (*v == ' ' || *v == '\t'))
			v++;
		while (vend > v && (vend[-1] == ' ' || vend[-1] == '\t'))
			vend--;
		size_t nlen = (size_t)(colon - p), vlen = (size_t)(vend - v);
		if (httpreq_token_eq(p, nlen, "Host")) {
			if (++hosts > 1) {
				r = errbuf_set(e, ERR_INVALID, "too many Host headers");
				goto out;
			}
		} else if (httpreq_token_eq(p, nlen, "Authorization")) {
			/* two would leave which one counts to chance */
			if (rq->has_authorization) {
				r = errbuf_set(e, ERR_INVALID, "more than one Authorization header");
				goto out;
			}
			if (vlen >= sizeof(rq->authorization)) {
				r = errbuf_set(e, ERR_TOO_LARGE, "Authorization header too large");
				goto out;
			}
			memcpy(rq->authorization, v, vlen);
			rq->authorization[vlen] = '\0';
			rq->has_authorization = 1;
		} else if (httpreq_token_eq(p, nlen, "Connection")) {
			const char *t = v;
			while (t < vend) {
				const char *c = memchr(t, ',', (size_t)(vend - t)), *te;
				te = c ? c : vend;
				while (t < te && (*t == ' ' || *t == '\t'))
					t++;
				const char *tb = te;
				while (tb > t && (tb[-1] == ' ' || tb[-1] == '\t'))
					tb--;
				if (httpreq_token_eq(t, (size_t)(tb - t), "close"))
					close_tok = 1;
				else if (httpreq_token_eq(t, (size_t)(tb - t), "keep-alive"))
					keep_tok = 1;
				t = c ? c + 1 : vend;
			}
		} else if (httpreq_token_eq(p, nlen, "Content-Length")) {
			long long n = 0;
			if (vlen == 0 || vlen > 18) {
				r = errbuf_set(e, ERR_INVALID, "bad Content-Length");
				goto out;
			}
			for (const char *c = v; c < vend; c++) {
				if (*c < '0' || *c > '9') {
					r = errbuf_set(e, ERR_INVALID, "bad Content-Length");
					goto out;
				}
				n = n * 10 + (*c - '0');
			}
			if (clen >= 0 && clen != n) {
				r = errbuf_set(e, ERR_INVALID, "conflicting Content-Length headers");
				goto out;
			}
			clen = n;
			if (n > 0)
				rq->has_body = 1;
		} else if (httpreq_token_eq(p, nlen, "Transfer-Encoding")) {
			rq->has_body = 1;
		}
		p = nl + 1;
	}
	if (rq->http_minor == 1 && hosts == 0) {
		r = errbuf_set(e, ERR_INVALID, "missing required Host header");
		goto out;
	}
	/* bodies are never read: a request that has one ends the connection */
	rq->keep_alive = !rq->has_body && !close_tok && (rq->http_minor == 1 || keep_tok);
	memcpy(ret, rq, sizeof(*rq));
	r = (int)(lim - buf);
out:
	explicit_bzero(rq, sizeof(*rq));
	return r;
}

const char *
httpreq_bearer_token(const char *authorization)
{
	const char *t;

	if (authorization == NULL || strncasecmp(authorization, "bearer ", 7) != 0)
		return NULL;
	t = authorization + 7;
	if (*t == '\0')
		return NULL;
	for (const char *c = t; *c; c++)
		if ((unsigned char)*c <= 0x20 || *c == 0x7f)
			return NULL;
	return t;
}

int
httpreq_query_next(const char **q, char *key, size_t klen, char *val, size_t vlen)
{
	while (**q) {
		const char *amp = strchr(*q, '&'), *end, *eq;
		end = amp ? amp : *q + strlen(*q);
		eq = memchr(*q, '=', (size_t)(end - *q));
		const char *kend = eq ? eq : end;
		int ok = httpreq_unescape(*q, (size_t)(kend - *q), 1, key, klen) >= 0;
		if (ok && eq)
			ok = httpreq_unescape(eq + 1, (size_t)(end - eq - 1), 1, val, vlen) >= 0;
		else if (ok)
			val[0] = '\0';
		*q = amp ? amp + 1 : end;
		if (ok && key[0])
			return 1;
	}
	return 0;
}
