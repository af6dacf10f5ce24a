/* serve.c - HTTPS health, readiness and metrics endpoint: one thread
 * multiplexing TLS connections with wolfSSL in non-blocking mode. */
#include "serve.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <wolfssl/options.h>
#include <wolfssl/ssl.h>
#include <wolfssl/wolfcrypt/asn_public.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/error-crypt.h>
#include <wolfssl/wolfcrypt/random.h>

#include "authn.h"
#include "clock.h"
#include "flags.h"
#include "log.h"
#include "metrics.h"
#include "version.h" /* generated: build/gen/version.h */

#ifndef BOOTCCM_VERSION
#define BOOTCCM_VERSION "0.0.0-dev"
#endif
#ifndef BOOTCCM_COMMIT
#define BOOTCCM_COMMIT "unknown"
#endif

#if !defined(WOLFSSL_CERT_GEN) || !defined(WOLFSSL_ALT_NAMES)
#error "serve.c needs wolfSSL with --enable-certgen and WOLFSSL_ALT_NAMES (scripts/deps.sh)"
#endif

#define SERVE_BACKLOG 64           /* pending connections in the kernel */
#define SERVE_ACCEPT_BURST 16      /* connections accepted per wake-up */
#define SERVE_REQUESTS_PER_TURN 8  /* pipelined requests served before others get a turn */
#define SERVE_ACCEPT_PAUSE_MS 100  /* out of file descriptors: stop accepting this long */
#define SERVE_EXCLUDES_MAX 16      /* ?exclude= values honoured */
#define SERVE_CERT_DER_MAX 4096    /* bytes: the self-signed certificate */
#define SERVE_SAN_MAX 1024         /* bytes: its subjectAltName */
#define SERVE_FAILED_MAX 1024      /* bytes: failed checks' reasons for the log */
#define SERVE_USER_MAX 256         /* bytes: a user name in logs and messages */
#define SERVE_DRAIN_READS 16       /* 4 KiB reads of unread input before a close */

static const char *serve_tls_err(int code, char *buf, size_t len);

/* --- checks ----------------------------------------------------------------- */

enum serve_kind { SERVE_LIVEZ, SERVE_HEALTHZ, SERVE_READYZ };

static pthread_mutex_t serve_checks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct serve_check serve_healthz_checks[SERVE_CHECKS_MAX];
static struct serve_check serve_readyz_checks[SERVE_CHECKS_MAX];
static size_t serve_healthz_n, serve_readyz_n;

static int
serve_ping(void *arg, struct errbuf *e)
{
	(void)arg;
	(void)e;
	return 0;
}

static int
serve_check_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n >= SERVE_CHECK_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.'))
			return 0;
	}
	return 1;
}

static int
serve_add(struct serve_check *list, size_t *n, const char *name, serve_check_fn fn,
    void *arg)
{
	int r = 0;

	if (!serve_check_name_ok(name) || fn == NULL)
		return ERR_INVALID;
	if (strcmp(name, "ping") == 0)
		return ERR_EXISTS;
	pthread_mutex_lock(&serve_checks_lock);
	/* /readyz runs both kinds, so a name must be unique across both */
	for (size_t i = 0; i < serve_healthz_n && r == 0; i++)
		if (strcmp(serve_healthz_checks[i].name, name) == 0)
			r = ERR_EXISTS;
	for (size_t i = 0; i < serve_readyz_n && r == 0; i++)
		if (strcmp(serve_readyz_checks[i].name, name) == 0)
			r = ERR_EXISTS;
	if (r == 0 && *n == SERVE_CHECKS_MAX)
		r = ERR_TOO_LARGE;
	if (r == 0) {
		snprintf(list[*n].name, sizeof(list[*n].name), "%s", name);
		list[*n].fn = fn;
		list[*n].arg = arg;
		(*n)++;
	}
	pthread_mutex_unlock(&serve_checks_lock);
	return r;
}

int
serve_add_healthz(const char *name, serve_check_fn fn, void *arg)
{
	return serve_add(serve_healthz_checks, &serve_healthz_n, name, fn, arg);
}

int
serve_add_readyz(const char *name, serve_check_fn fn, void *arg)
{
	return serve_add(serve_readyz_checks, &serve_readyz_n, name, fn, arg);
}

/* serve_checks copies the checks an endpoint runs into out (which holds
 * 1 + 2 * SERVE_CHECKS_MAX), so they run without the lock held. */
static size_t
serve_checks(enum serve_kind kind, struct serve_check *out)
{
	size_t n = 0;

	snprintf(out[n].name, sizeof(out[n].name), "ping");
	out[n].fn = serve_ping;
	out[n++].arg = NULL;
	pthread_mutex_lock(&serve_checks_lock);
	if (kind != SERVE_LIVEZ)
		for (size_t i = 0; i < serve_healthz_n; i++)
			out[n++] = serve_healthz_checks[i];
	if (kind == SERVE_READYZ)
		for (size_t i = 0; i < serve_readyz_n; i++)
			out[n++] = serve_readyz_checks[i];
	pthread_mutex_unlock(&serve_checks_lock);
	return n;
}

/* --- a growing buffer ---------------------------------------------------------- */

struct serve_buf {
	char *p;
	size_t len, cap;
	int oom;
};

static void
serve_buf_add(struct serve_buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;
		while (cap < b->len + n + 1)
			cap *= 2;
		if ((p = realloc(b->p, cap)) == NULL) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void serve_buf_printf(struct serve_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
serve_buf_printf(struct serve_buf *b, const char *fmt, ...)
{
	char small[512], *big = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = 1;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		serve_buf_add(b, small, (size_t)n);
		return;
	}
	if ((big = malloc((size_t)n + 1)) == NULL) {
		b->oom = 1;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	serve_buf_add(b, big, (size_t)n);
	free(big);
}

/* --- request parsing ------------------------------------------------------------- */

/* serve_tchar: RFC 9110 token characters (methods, header names). */
static int
serve_tchar(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9') || (ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

static int
serve_hex(unsigned char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* serve_unescape percent-decodes s[0..n) into out (NUL-terminated), '+' as a
 * space when plus is set (query strings). Returns the length, ERR_INVALID for
 * a bad escape or a NUL, ERR_TOO_LARGE when out is too small. */
static int
serve_unescape(const char *s, size_t n, int plus, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int ch = (unsigned char)s[i];
		if (ch == '%') {
			int hi, lo;
			if (i + 2 >= n)
				return ERR_INVALID;
			if ((hi = serve_hex((unsigned char)s[i + 1])) < 0 ||
			    (lo = serve_hex((unsigned char)s[i + 2])) < 0)
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
serve_token_eq(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

/* serve_request_line parses "METHOD TARGET HTTP/1.x" into rq. */
static int
serve_request_line(const char *line, size_t n, struct serve_request *rq,
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
		if (!serve_tchar((unsigned char)*p))
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
	} else if ((r = serve_unescape(path, plen, 0, rq->path, sizeof(rq->path))) < 0) {
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
serve_parse_request(const char *buf, size_t len, struct serve_request *ret,
    struct errbuf *e)
{
	struct serve_request *rq;
	const char *p = buf, *lim = NULL;
	size_t ls = 0, nheaders = 0;
	int r = 0, hosts = 0, close_tok = 0, keep_tok = 0, first = 1;
	long long clen = -1;

	/* the head ends at the first empty line (CRLF or a bare LF, as Go's
	 * server accepts) */
	for (size_t i = 0; i < len && i < SERVE_REQUEST_MAX; i++) {
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
		if (len >= SERVE_REQUEST_MAX)
			return errbuf_set(e, ERR_TOO_LARGE, "request header too large");
		return 0;
	}
	if ((rq = calloc(1, sizeof(*rq))) == NULL)
		return errbuf_set(e, ERR_NOMEM, "out of memory");
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
			if ((r = serve_request_line(p, ll, rq, e)) < 0)
				goto out;
			p = nl + 1;
			continue;
		}
		if (++nheaders > SERVE_HEADERS_MAX) {
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
			if (!serve_tchar((unsigned char)*c)) {
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
		if (serve_token_eq(p, nlen, "Host")) {
			if (++hosts > 1) {
				r = errbuf_set(e, ERR_INVALID, "too many Host headers");
				goto out;
			}
		} else if (serve_token_eq(p, nlen, "Authorization")) {
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
		} else if (serve_token_eq(p, nlen, "Connection")) {
			const char *t = v;
			while (t < vend) {
				const char *c = memchr(t, ',', (size_t)(vend - t)), *te;
				te = c ? c : vend;
				while (t < te && (*t == ' ' || *t == '\t'))
					t++;
				const char *tb = te;
				while (tb > t && (tb[-1] == ' ' || tb[-1] == '\t'))
					tb--;
				if (serve_token_eq(t, (size_t)(tb - t), "close"))
					close_tok = 1;
				else if (serve_token_eq(t, (size_t)(tb - t), "keep-alive"))
					keep_tok = 1;
				t = c ? c + 1 : vend;
			}
		} else if (serve_token_eq(p, nlen, "Content-Length")) {
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
		} else if (serve_token_eq(p, nlen, "Transfer-Encoding")) {
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
	free(rq);
	return r;
}

const char *
serve_bearer_token(const char *authorization)
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

/* --- always-allowed paths --------------------------------------------------------- */

int
serve_paths_parse(const char *list, struct serve_paths *ret, struct errbuf *e)
{
	struct serve_paths p;
	const char *s = list ? list : "";
	int r = 0;

	memset(&p, 0, sizeof(p));
	while (*s && r == 0) {
		const char *comma = strchr(s, ','), *a = s, *b;
		b = comma ? comma : s + strlen(s);
		s = comma ? comma + 1 : b;
		while (a < b && (*a == ' ' || *a == '\t'))
			a++;
		while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
			b--;
		if (a == b)
			continue;
		/* upstream trims one leading '/', so "healthz" means "/healthz" */
		if (*a == '/')
			a++;
		const char *star = memchr(a, '*', (size_t)(b - a));
		if (star && star != b - 1) {
			r = errbuf_set(e, ERR_INVALID, "--authorization-always-allow-paths: only a "
			    "trailing * is allowed in \"%.*s\"", (int)(b - a), a);
		} else if (p.n == SERVE_ALLOW_PATHS_MAX) {
			r = errbuf_set(e, ERR_TOO_LARGE, "--authorization-always-allow-paths: more "
			    "than %d paths", SERVE_ALLOW_PATHS_MAX);
		} else if (asprintf(&p.paths[p.n], "/%.*s", (int)(b - a), a) < 0) {
			p.paths[p.n] = NULL;
			r = errbuf_set(e, ERR_NOMEM, "out of memory");
		} else {
			p.n++;
		}
	}
	if (r < 0) {
		serve_paths_free(&p);
		return r;
	}
	*ret = p;
	return 0;
}

int
serve_paths_match(const struct serve_paths *p, const char *path)
{
	for (size_t i = 0; i < p->n; i++) {
		size_t n = strlen(p->paths[i]);
		if (p->paths[i][n - 1] == '*' ? strncmp(path, p->paths[i], n - 1) == 0 :
		    strcmp(path, p->paths[i]) == 0)
			return 1;
	}
	return 0;
}

void
serve_paths_free(struct serve_paths *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->paths[i]);
	memset(p, 0, sizeof(*p));
}

/* --- health checks ------------------------------------------------------------------- */

/* serve_query_next takes the next key=value pair off *q (both decoded;
 * pairs that do not decode or do not fit are skipped). Returns 1, or 0 at
 * the end. */
static int
serve_query_next(const char **q, char *key, size_t klen, char *val, size_t vlen)
{
	while (**q) {
		const char *amp = strchr(*q, '&'), *end, *eq;
		end = amp ? amp : *q + strlen(*q);
		eq = memchr(*q, '=', (size_t)(end - *q));
		const char *kend = eq ? eq : end;
		int ok = serve_unescape(*q, (size_t)(kend - *q), 1, key, klen) >= 0;
		if (ok && eq)
			ok = serve_unescape(eq + 1, (size_t)(end - eq - 1), 1, val, vlen) >= 0;
		else if (ok)
			val[0] = '\0';
		*q = amp ? amp + 1 : end;
		if (ok && key[0])
			return 1;
	}
	return 0;
}

int
serve_health_render(const char *name, const struct serve_check *checks, size_t n,
    const char *query, char **ret, size_t *ret_len, char *failed, size_t failed_len)
{
	char excl[SERVE_EXCLUDES_MAX][SERVE_CHECK_NAME_MAX];
	int used[SERVE_EXCLUDES_MAX] = { 0 };
	char key[64], val[SERVE_CHECK_NAME_MAX];
	struct serve_buf out = { NULL, 0, 0, 0 }, log = { NULL, 0, 0, 0 };
	size_t nexcl = 0, nfailed = 0;
	const char *q = query ? query : "";
	int verbose = 0, code;

	while (serve_query_next(&q, key, sizeof(key), val, sizeof(val))) {
		if (strcmp(key, "verbose") == 0)
			verbose = 1;
		else if (strcmp(key, "exclude") == 0 && nexcl < SERVE_EXCLUDES_MAX && val[0])
			snprintf(excl[nexcl++], sizeof(excl[0]), "%s", val);
	}
	for (size_t i = 0; i < n; i++) {
		struct errbuf e = { "" };
		size_t j;
		for (j = 0; j < nexcl; j++)
			if (strcmp(excl[j], checks[i].name) == 0)
				break;
		if (j < nexcl) {
			used[j] = 1;
			serve_buf_printf(&out, "[+]%s excluded: ok\n", checks[i].name);
			continue;
		}
		if (checks[i].fn(checks[i].arg, &e) < 0) {
			/* the reason is not for anonymous clients: it goes to the log */
			serve_buf_printf(&out, "[-]%s failed: reason withheld\n", checks[i].name);
			serve_buf_printf(&log, "%s%s: %s", nfailed ? "; " : "", checks[i].name,
			    e.msg[0] ? e.msg : "failed");
			nfailed++;
		} else {
			serve_buf_printf(&out, "[+]%s ok\n", checks[i].name);
		}
	}
	for (size_t j = 0, warned = 0; j < nexcl; j++) {
		if (used[j])
			continue;
		serve_buf_printf(&out, "%s\"%s\"", warned++ ? "," :
		    "warn: some health checks cannot be excluded: no matches for ", excl[j]);
	}
	for (size_t j = 0; j < nexcl; j++)
		if (!used[j]) {
			serve_buf_add(&out, "\n", 1);
			break;
		}
	if (nfailed) {
		serve_buf_printf(&out, "%s check failed\n", name);
		code = 500;
	} else if (!verbose) {
		out.len = 0;
		serve_buf_add(&out, "ok", 2);
		code = 200;
	} else {
		serve_buf_printf(&out, "%s check passed\n", name);
		code = 200;
	}
	if (failed && failed_len)
		snprintf(failed, failed_len, "%s", log.p ? log.p : "");
	free(log.p);
	if (out.oom || out.p == NULL) {
		free(out.p);
		return ERR_NOMEM;
	}
	*ret = out.p;
	*ret_len = out.len;
	return code;
}

/* --- the server ---------------------------------------------------------------- */

enum serve_state { CONN_HANDSHAKE, CONN_READ, CONN_WRITE };

struct serve_conn {
	int fd;                 /* -1: free slot */
	WOLFSSL *ssl;
	enum serve_state state;
	int want_write;         /* wolfSSL waits for POLLOUT rather than POLLIN */
	int again;              /* stopped with work left: step again without poll */
	int idle;               /* between requests, nothing received yet */
	int keep_alive;         /* serve another request after this response */
	int status;             /* of the response being written */
	int64_t accepted_ns;
	int64_t deadline_ns;
	char *in;               /* SERVE_REQUEST_MAX bytes; holds tokens: wiped */
	size_t in_len;
	char *out;
	size_t out_len, out_off;
	char peer[64];
};

struct serve {
	int running;
	int listen_fd;
	int wake[2];
	int port;
	char addr[INET6_ADDRSTRLEN + 8];
	WOLFSSL_CTX *ctx;
	pthread_t thread;
	struct serve_paths allow;
	struct authn *authn;
	struct serve_conn conns[SERVE_CONN_MAX];
	size_t nconns;
	int64_t accept_paused_until_ns;
	struct serve_request req;
	struct serve_check checks[1 + 2 * SERVE_CHECKS_MAX];
};

static struct serve serve_g = { .listen_fd = -1, .wake = { -1, -1 } };
static pthread_once_t serve_metrics_once = PTHREAD_ONCE_INIT;
static struct metric *serve_requests;

static void
serve_metrics_init(void)
{
	const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);
	struct metric *info;

	serve_requests = metrics_counter("bootccm_http_requests_total",
	    "HTTP requests answered on the secure port, by path and status code.",
	    "path,code");
	info = metrics_gauge("bootccm_build_info",
	    "A metric with a constant '1' value labeled by the version and commit bootccm "
	    "was built from and the libcurl and wolfSSL versions it runs with.",
	    "version,commit,libcurl,wolfssl");
	metric_set(info, 1, BOOTCCM_VERSION, BOOTCCM_COMMIT, cv->version,
	    wolfSSL_lib_version());
}

static const char *
serve_reason_phrase(int code)
{
	switch (code) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Unknown";
	}
}

/* serve_reply queues a response on c. extra: more header lines, each ending
 * in CRLF, or NULL. Returns 0 or ERR_NOMEM. */
static int
serve_reply(struct serve_conn *c, const char *method, int code, const char *ctype,
    const char *body, size_t body_len, const char *extra)
{
	char head[512], date[64];
	struct tm tm;
	time_t now = time(NULL);
	int head_only = method && strcmp(method, "HEAD") == 0, n;

	if (gmtime_r(&now, &tm) == NULL ||
	    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm) == 0)
		date[0] = '\0';
	n = snprintf(head, sizeof(head),
	    "HTTP/1.1 %d %s\r\n"
	    "Content-Type: %s\r\n"
	    "Content-Length: %zu\r\n"
	    "Date: %s\r\n"
	    "X-Content-Type-Options: nosniff\r\n"
	    "%s%s\r\n",
	    code, serve_reason_phrase(code), ctype, body_len, date,
	    c->keep_alive ? "" : "Connection: close\r\n", extra ? extra : "");
	if (n < 0 || (size_t)n >= sizeof(head))
		return ERR_INTERNAL;
	if (head_only)
		body_len = 0;
	free(c->out);
	if ((c->out = malloc((size_t)n + body_len)) == NULL)
		return ERR_NOMEM;
	memcpy(c->out, head, (size_t)n);
	if (body_len)
		memcpy(c->out + n, body, body_len);
	c->out_len = (size_t)n + body_len;
	c->out_off = 0;
	c->status = code;
	return 0;
}

static int
serve_reply_text(struct serve_conn *c, const char *method, int code, const char *text,
    const char *extra)
{
	return serve_reply(c, method, code, "text/plain; charset=utf-8", text, strlen(text),
	    extra);
}

/* serve_reply_status answers with a Kubernetes Status body, as the API
 * server's filters do for authentication and authorization failures. */
static int
serve_reply_status(struct serve_conn *c, const char *method, int code,
    const char *reason, const char *message)
{
	json_object *o = json_object_new_object();
	const char *s;
	int r = ERR_NOMEM;

	if (o == NULL)
		return ERR_NOMEM;
	json_object_object_add(o, "kind", json_object_new_string("Status"));
	json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
	json_object_object_add(o, "metadata", json_object_new_object());
	json_object_object_add(o, "status", json_object_new_string("Failure"));
	json_object_object_add(o, "message", json_object_new_string(message));
	json_object_object_add(o, "reason", json_object_new_string(reason));
	if (code == 403)
		json_object_object_add(o, "details", json_object_new_object());
	json_object_object_add(o, "code", json_object_new_int(code));
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
	if (s) {
		struct serve_buf b = { NULL, 0, 0, 0 };
		serve_buf_printf(&b, "%s\n", s);
		r = b.oom ? ERR_NOMEM :
		    serve_reply(c, method, code, "application/json", b.p, b.len, NULL);
		free(b.p);
	}
	json_object_put(o);
	return r;
}

/* serve_authorize authenticates and authorizes rq for its path. Returns 1
 * to go on, or 0 when it queued the refusal (401, 403, 5xx) on c; user gets
 * the user name for the log. */
static int
serve_authorize(struct serve *s, struct serve_conn *c, struct serve_request *rq,
    char *user, size_t ulen, int *ret_err)
{
	struct authn_user u = { NULL, NULL };
	struct errbuf e = { "" };
	char verb[SERVE_METHOD_MAX], msg[SERVE_USER_MAX + SERVE_PATH_MAX + ERRBUF_MAX + 64];
	const char *token = rq->has_authorization ? serve_bearer_token(rq->authorization) : NULL;
	int r;

	*ret_err = 0;
	if (token == NULL) {
		log_info(2, "Unauthorized request: no bearer token", "path", rq->path,
		    "peer", c->peer, NULL);
		*ret_err = serve_reply_status(c, rq->method, 401, "Unauthorized", "Unauthorized");
		return 0;
	}
	r = authn_authenticate(s->authn, token, clock_mono_ns(), &u, &e);
	if (r == 0) {
		log_info(2, "Unauthorized request: the token is not valid", "path", rq->path,
		    "peer", c->peer, "reason", e.msg, NULL);
		*ret_err = serve_reply_status(c, rq->method, 401, "Unauthorized", "Unauthorized");
		return 0;
	}
	if (r < 0) {
		log_warn("Cannot authenticate a request", "path", rq->path, "peer", c->peer,
		    "err", e.msg, NULL);
		*ret_err = err_retryable(r) ?
		    serve_reply_status(c, rq->method, 503, "ServiceUnavailable",
		    "the API server cannot review the request's credentials now") :
		    serve_reply_status(c, rq->method, 500, "InternalError",
		    "Internal error occurred: the request's credentials cannot be reviewed");
		return 0;
	}
	snprintf(user, ulen, "%s", u.name);
	/* a non-resource request's verb is its method in lower case */
	for (size_t i = 0; i < sizeof(verb); i++) {
		char ch = rq->method[i];
		verb[i] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
		if (ch == '\0')
			break;
	}
	r = authn_authorize(s->authn, &u, verb, rq->path, clock_mono_ns(), &e);
	if (r == 0) {
		log_info(2, "Forbidden request", "user", user, "verb", verb, "path", rq->path,
		    "peer", c->peer, "reason", e.msg, NULL);
		snprintf(msg, sizeof(msg), "forbidden: User \"%s\" cannot %s path \"%s\"%s%s",
		    user, verb, rq->path, e.msg[0] ? ": " : "", e.msg);
		*ret_err = serve_reply_status(c, rq->method, 403, "Forbidden", msg);
	} else if (r < 0) {
		log_warn("Cannot authorize a request", "user", user, "path", rq->path,
		    "peer", c->peer, "err", e.msg, NULL);
		*ret_err = err_retryable(r) ?
		    serve_reply_status(c, rq->method, 503, "ServiceUnavailable",
		    "the API server cannot authorize the request now") :
		    serve_reply_status(c, rq->method, 500, "InternalError",
		    "Internal error occurred: the request cannot be authorized");
	}
	authn_user_free(&u);
	return r == 1;
}

/* serve_route_label names a path for the requests metric without letting
 * clients grow its label set. */
static const char *
serve_route_label(const char *path)
{
	static const char *const exact[] = { "/healthz", "/livez", "/readyz", "/metrics" };
	static const char *const prefix[] = { "/healthz/", "/livez/", "/readyz/" };
	static const char *const label[] = { "/healthz/*", "/livez/*", "/readyz/*" };

	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (strcmp(path, exact[i]) == 0)
			return exact[i];
	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (strncmp(path, prefix[i], strlen(prefix[i])) == 0)
			return label[i];
	return "other";
}

/* serve_health answers /healthz, /livez, /readyz (name == NULL) or one of
 * their checks. */
static int
serve_health(struct serve *s, struct serve_conn *c, struct serve_request *rq,
    enum serve_kind kind, const char *endpoint, const char *check)
{
	char failed[SERVE_FAILED_MAX], *body = NULL;
	size_t n = serve_checks(kind, s->checks), len;
	int code, r;

	if (check) {
		struct errbuf e = { "" };
		char text[ERRBUF_MAX + 64];
		for (size_t i = 0; i < n; i++) {
			if (strcmp(s->checks[i].name, check) != 0)
				continue;
			if (s->checks[i].fn(s->checks[i].arg, &e) < 0) {
				snprintf(text, sizeof(text), "internal server error: %s\n",
				    e.msg[0] ? e.msg : "failed");
				return serve_reply_text(c, rq->method, 500, text, NULL);
			}
			return serve_reply_text(c, rq->method, 200, "ok", NULL);
		}
		return serve_reply_text(c, rq->method, 404, "404 page not found\n", NULL);
	}
	code = serve_health_render(endpoint, s->checks, n, rq->query, &body, &len, failed,
	    sizeof(failed));
	if (code < 0)
		return code;
	if (code != 200)
		log_info(2, "Check failed", "endpoint", endpoint, "checks", failed, NULL);
	r = serve_reply(c, rq->method, code, "text/plain; charset=utf-8", body, len, NULL);
	free(body);
	return r;
}

/* serve_handle answers one parsed request: authorization, then routing. */
static int
serve_handle(struct serve *s, struct serve_conn *c, struct serve_request *rq)
{
	static const struct { const char *path; enum serve_kind kind; const char *name; }
	    health[] = {
		{ "/healthz", SERVE_HEALTHZ, "healthz" },
		{ "/livez", SERVE_LIVEZ, "livez" },
		{ "/readyz", SERVE_READYZ, "readyz" },
	};
	char user[SERVE_USER_MAX] = "", code[16];
	int r = 0;

	c->keep_alive = rq->keep_alive;
	if (!serve_paths_match(&s->allow, rq->path) &&
	    !serve_authorize(s, c, rq, user, sizeof(user), &r))
		goto done;
	if (strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "HEAD") != 0) {
		r = serve_reply_text(c, rq->method, 405, "Method Not Allowed\n",
		    "Allow: GET, HEAD\r\n");
		goto done;
	}
	for (size_t i = 0; i < sizeof(health) / sizeof(health[0]); i++) {
		size_t n = strlen(health[i].path);
		if (strcmp(rq->path, health[i].path) == 0) {
			r = serve_health(s, c, rq, health[i].kind, health[i].name, NULL);
			goto done;
		}
		if (strncmp(rq->path, health[i].path, n) == 0 && rq->path[n] == '/') {
			r = serve_health(s, c, rq, health[i].kind, health[i].name,
			    rq->path + n + 1);
			goto done;
		}
	}
	if (strcmp(rq->path, "/metrics") == 0) {
		char *body = NULL;
		size_t len = 0;
		if ((r = metrics_render(&body, &len)) == 0)
			r = serve_reply(c, rq->method, 200,
			    "text/plain; version=0.0.4; charset=utf-8", body, len, NULL);
		free(body);
		goto done;
	}
	r = serve_reply_text(c, rq->method, 404, "404 page not found\n", NULL);
done:
	if (r < 0)
		return r;
	snprintf(code, sizeof(code), "%d", c->status);
	metric_add(serve_requests, 1, serve_route_label(rq->path), code);
	log_info(5, "HTTP", "verb", rq->method, "path", rq->path, "code", code,
	    "user", user, "peer", c->peer, NULL);
	return 0;
}

/* serve_reply_bad answers a request that did not parse, and ends the
 * connection after it, as Go's server does. */
static int
serve_reply_bad(struct serve_conn *c, int err, const struct errbuf *e)
{
	char text[ERRBUF_MAX + 64], code[16];
	int status = err == ERR_TOO_LARGE ? 431 : err == ERR_UNSUPPORTED ? 505 : 400;

	c->keep_alive = 0;
	snprintf(text, sizeof(text), "%d %s: %s", status, serve_reason_phrase(status),
	    e->msg);
	snprintf(code, sizeof(code), "%d", status);
	metric_add(serve_requests, 1, "other", code);
	log_info(4, "Bad request", "peer", c->peer, "code", code, "err", e->msg, NULL);
	return serve_reply_text(c, NULL, status, text, NULL);
}

/* --- connections --------------------------------------------------------------- */

static void
serve_conn_close(struct serve *s, struct serve_conn *c)
{
	char drain[4096];

	if (c->fd < 0)
		return;
	if (c->ssl) {
		if (c->state != CONN_HANDSHAKE)
			wolfSSL_shutdown(c->ssl); /* close_notify, best effort */
		wolfSSL_free(c->ssl);
	}
	/* what the client sent and we did not read would make close() send a
	 * reset, which can destroy the response before the client reads it;
	 * bounded, as a client can send as fast as we read */
	for (int i = 0; i < SERVE_DRAIN_READS; i++)
		if (recv(c->fd, drain, sizeof(drain), MSG_DONTWAIT) <= 0)
			break;
	close(c->fd);
	if (c->in) {
		explicit_bzero(c->in, SERVE_REQUEST_MAX);
		free(c->in);
	}
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	s->nconns--;
}

/* serve_conn_wait records what wolfSSL waits for after ret; returns 0 when
 * that is I/O (poll and step again), or -1 when the connection is done. */
static int
serve_conn_wait(struct serve_conn *c, int ret)
{
	int err = wolfSSL_get_error(c->ssl, ret);

	if (err == WOLFSSL_ERROR_WANT_READ) {
		c->want_write = 0;
		return 0;
	}
	if (err == WOLFSSL_ERROR_WANT_WRITE) {
		c->want_write = 1;
		return 0;
	}
	if (err != WOLFSSL_ERROR_ZERO_RETURN && err != SOCKET_PEER_CLOSED_E &&
	    err != SOCKET_ERROR_E && log_enabled(4)) {
		char code[16], text[WOLFSSL_MAX_ERROR_SZ];
		snprintf(code, sizeof(code), "%d", err);
		log_info(4, "TLS connection failed", "peer", c->peer, "code", code,
		    "err", serve_tls_err(err, text, sizeof(text)), NULL);
	}
	return -1;
}

/* serve_conn_step drives c as far as it can go without waiting. */
static void
serve_conn_step(struct serve *s, struct serve_conn *c)
{
	unsigned long turn = 0;
	struct errbuf e;
	int r;

	c->again = 0;
	for (;;) {
		switch (c->state) {
		case CONN_HANDSHAKE:
			if ((r = wolfSSL_accept(c->ssl)) != WOLFSSL_SUCCESS) {
				if (serve_conn_wait(c, r) < 0)
					serve_conn_close(s, c);
				return;
			}
			c->state = CONN_READ;
			break;
		case CONN_READ:
			e.msg[0] = '\0';
			r = serve_parse_request(c->in, c->in_len, &s->req, &e);
			if (r != 0) {
				size_t used = r > 0 ? (size_t)r : c->in_len;
				int rr = r > 0 ? serve_handle(s, c, &s->req) :
				    r == ERR_NOMEM ? r : serve_reply_bad(c, r, &e);
				explicit_bzero(&s->req, sizeof(s->req));
				explicit_bzero(c->in, used);
				memmove(c->in, c->in + used, c->in_len - used);
				c->in_len -= used;
				if (rr < 0) {
					serve_conn_close(s, c);
					return;
				}
				c->state = CONN_WRITE;
				c->deadline_ns = clock_mono_ns() + SERVE_WRITE_TIMEOUT_MS * NS_PER_MS;
				break;
			}
			r = wolfSSL_read(c->ssl, c->in + c->in_len,
			    (int)(SERVE_REQUEST_MAX - c->in_len));
			if (r <= 0) {
				if (serve_conn_wait(c, r) < 0)
					serve_conn_close(s, c);
				return;
			}
			if (c->idle) {
				c->idle = 0;
				c->deadline_ns = clock_mono_ns() + SERVE_REQUEST_TIMEOUT_MS * NS_PER_MS;
			}
			c->in_len += (size_t)r;
			break;
		case CONN_WRITE:
			r = wolfSSL_write(c->ssl, c->out + c->out_off,
			    (int)(c->out_len - c->out_off));
			if (r <= 0) {
				if (serve_conn_wait(c, r) < 0)
					serve_conn_close(s, c);
				return;
			}
			c->out_off += (size_t)r;
			if (c->out_off < c->out_len)
				break;
			free(c->out);
			c->out = NULL;
			c->out_len = c->out_off = 0;
			if (!c->keep_alive) {
				serve_conn_close(s, c);
				return;
			}
			c->state = CONN_READ;
			c->idle = c->in_len == 0;
			c->deadline_ns = clock_mono_ns() + (c->idle ? SERVE_IDLE_TIMEOUT_MS :
			    SERVE_REQUEST_TIMEOUT_MS) * NS_PER_MS;
			if (++turn == SERVE_REQUESTS_PER_TURN) {
				/* pipelined requests wait for the next loop, so one
				 * client cannot keep the others waiting */
				c->again = 1;
				return;
			}
			break;
		}
	}
}

/* serve_evict makes room for a new connection: an idle keep-alive
 * connection if there is one, else the oldest. */
static void
serve_evict(struct serve *s)
{
	struct serve_conn *victim = NULL;

	for (size_t i = 0; i < SERVE_CONN_MAX; i++) {
		struct serve_conn *c = &s->conns[i];
		if (c->fd < 0)
			continue;
		if (victim == NULL || (c->idle && !victim->idle) ||
		    (c->idle == victim->idle && c->accepted_ns < victim->accepted_ns))
			victim = c;
	}
	if (victim) {
		log_info(4, "Too many connections: closing one", "peer", victim->peer, NULL);
		serve_conn_close(s, victim);
	}
}

static void
serve_accept(struct serve *s)
{
	for (int i = 0; i < SERVE_ACCEPT_BURST; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct serve_conn *c = NULL;
		char host[INET6_ADDRSTRLEN] = "?";
		int fd, one = 1;

		fd = accept4(s->listen_fd, (struct sockaddr *)&ss, &sl,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* the listener would stay readable: back off instead of
				 * spinning */
				log_warn("Cannot accept connections", "err", strerror(errno), NULL);
				s->accept_paused_until_ns = clock_mono_ns() +
				    SERVE_ACCEPT_PAUSE_MS * NS_PER_MS;
			}
			return;
		}
		if (s->nconns == SERVE_CONN_MAX)
			serve_evict(s);
		for (size_t j = 0; j < SERVE_CONN_MAX; j++)
			if (s->conns[j].fd < 0) {
				c = &s->conns[j];
				break;
			}
		if (c == NULL) {
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
			snprintf(c->peer, sizeof(c->peer), "[%s]:%u", host, ntohs(a->sin6_port));
		} else if (ss.ss_family == AF_INET) {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
			snprintf(c->peer, sizeof(c->peer), "%s:%u", host, ntohs(a->sin_port));
		}
		c->accepted_ns = clock_mono_ns();
		c->deadline_ns = c->accepted_ns + SERVE_REQUEST_TIMEOUT_MS * NS_PER_MS;
		c->state = CONN_HANDSHAKE;
		s->nconns++;
		if ((c->in = malloc(SERVE_REQUEST_MAX)) == NULL ||
		    (c->ssl = wolfSSL_new(s->ctx)) == NULL ||
		    wolfSSL_set_fd(c->ssl, fd) != WOLFSSL_SUCCESS) {
			log_warn("Cannot set up a connection: out of memory", "peer", c->peer, NULL);
			serve_conn_close(s, c);
			continue;
		}
		/* a client that goes away must not raise SIGPIPE */
		wolfSSL_SetIOWriteFlags(c->ssl, MSG_NOSIGNAL);
		serve_conn_step(s, c);
	}
}

static void *
serve_thread(void *arg)
{
	struct serve *s = arg;
	struct pollfd pfd[2 + SERVE_CONN_MAX];
	struct serve_conn *pc[2 + SERVE_CONN_MAX];

	for (;;) {
		int64_t now = clock_mono_ns(), wait = INT64_MAX;
		int paused = now < s->accept_paused_until_ns, n = 0, r, again = 0, timeout_ms;

		pfd[n].fd = s->wake[0];
		pfd[n].events = POLLIN;
		pc[n++] = NULL;
		if (!paused) {
			pfd[n].fd = s->listen_fd;
			pfd[n].events = POLLIN;
			pc[n++] = NULL;
		} else {
			wait = s->accept_paused_until_ns - now;
		}
		for (size_t i = 0; i < SERVE_CONN_MAX; i++) {
			struct serve_conn *c = &s->conns[i];
			if (c->fd < 0)
				continue;
			again |= c->again;
			pfd[n].fd = c->fd;
			pfd[n].events = c->want_write ? POLLOUT : POLLIN;
			pc[n++] = c;
			if (c->deadline_ns - now < wait)
				wait = c->deadline_ns - now;
		}
		if (again || wait <= 0)
			timeout_ms = 0;
		else if (wait == INT64_MAX)
			timeout_ms = -1;
		else
			timeout_ms = (int)((wait + NS_PER_MS - 1) / NS_PER_MS);
		r = poll(pfd, (nfds_t)n, timeout_ms);
		if (r < 0 && errno != EINTR) {
			/* ENOMEM: the kernel may have memory again soon */
			struct timespec pause = { 0, SERVE_ACCEPT_PAUSE_MS * NS_PER_MS };
			log_warn("poll failed", "err", strerror(errno), NULL);
			nanosleep(&pause, NULL);
			continue;
		}
		if (r > 0 && pfd[0].revents)
			break;
		for (int i = 1; r >= 0 && i < n; i++) {
			struct serve_conn *c = pc[i];
			if (c && c->fd == pfd[i].fd && (pfd[i].revents || c->again))
				serve_conn_step(s, c);
		}
		now = clock_mono_ns();
		for (size_t i = 0; i < SERVE_CONN_MAX; i++) {
			struct serve_conn *c = &s->conns[i];
			if (c->fd >= 0 && c->deadline_ns <= now) {
				if (!c->idle)
					log_info(4, "Closing a connection that timed out", "peer", c->peer,
					    "state", c->state == CONN_HANDSHAKE ? "handshake" :
					    c->state == CONN_READ ? "request" : "response", NULL);
				serve_conn_close(s, c);
			}
		}
		if (!paused && r > 0 && pfd[1].revents)
			serve_accept(s);
	}
	for (size_t i = 0; i < SERVE_CONN_MAX; i++)
		serve_conn_close(s, &s->conns[i]);
#ifdef FP_ECC
	/* wolfSSL's fixed-point ECC cache is per thread: free this one's */
	wc_ecc_fp_free();
#endif
	return NULL;
}

/* --- TLS ---------------------------------------------------------------------- */

static int
serve_read_file(const char *flag, const char *path, char **ret, size_t *ret_len,
    struct errbuf *e)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int fd, r = 0;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errbuf_set(e, ERR_IO, "--%s %s: %s", flag, path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		r = errbuf_set(e, ERR_IO, "--%s %s: not a regular file", flag, path);
		goto out;
	}
	if ((buf = malloc(SERVE_TLS_FILE_MAX + 1)) == NULL) {
		r = errbuf_set(e, ERR_NOMEM, "out of memory");
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, SERVE_TLS_FILE_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = errbuf_set(e, ERR_IO, "--%s %s: %s", flag, path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > SERVE_TLS_FILE_MAX) {
			r = errbuf_set(e, ERR_TOO_LARGE, "--%s %s: larger than %d bytes", flag,
			    path, SERVE_TLS_FILE_MAX);
			goto out;
		}
	}
	*ret = buf;
	*ret_len = len;
	buf = NULL;
out:
	if (buf) {
		explicit_bzero(buf, SERVE_TLS_FILE_MAX + 1);
		free(buf);
	}
	close(fd);
	return r;
}

/* serve_tls_err describes what a wolfSSL call returned, in buf. */
static const char *
serve_tls_err(int code, char *buf, size_t len)
{
	if (code >= 0)
		snprintf(buf, len, "rejected");
	else
		wolfSSL_ERR_error_string_n((unsigned long)code, buf, (unsigned long)len);
	return buf;
}

/* serve_tls_selftest runs one handshake against ctx over a socket pair and
 * returns 0 when it succeeds, else wolfSSL's error. wolfSSL's own key check
 * does not compare an EC private key with the certificate's public key
 * (unless built with WOLFSSL_VALIDATE_ECC_IMPORT), and a mismatch would
 * otherwise only show as every client's handshake failing. */
static int
serve_tls_selftest(WOLFSSL_CTX *ctx)
{
	WOLFSSL_CTX *cctx = NULL;
	WOLFSSL *cl = NULL, *sv = NULL;
	int fds[2] = { -1, -1 }, cdone = 0, sdone = 0, r = WOLFSSL_FATAL_ERROR;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) < 0)
		return WOLFSSL_FATAL_ERROR;
	if ((cctx = wolfSSL_CTX_new(wolfSSLv23_client_method())) == NULL ||
	    (cl = wolfSSL_new(cctx)) == NULL || (sv = wolfSSL_new(ctx)) == NULL)
		goto out;
	wolfSSL_set_verify(cl, WOLFSSL_VERIFY_NONE, NULL);
	if (wolfSSL_set_fd(cl, fds[0]) != WOLFSSL_SUCCESS ||
	    wolfSSL_set_fd(sv, fds[1]) != WOLFSSL_SUCCESS)
		goto out;
	wolfSSL_SetIOWriteFlags(cl, MSG_NOSIGNAL);
	wolfSSL_SetIOWriteFlags(sv, MSG_NOSIGNAL);
	/* each side runs until it waits for the other; a handshake takes a
	 * handful of turns */
	for (int turn = 0; turn < 32 && !(cdone && sdone); turn++) {
		if (!cdone) {
			int x = wolfSSL_connect(cl), err = wolfSSL_get_error(cl, x);
			if (x == WOLFSSL_SUCCESS)
				cdone = 1;
			else if (err != WOLFSSL_ERROR_WANT_READ && err != WOLFSSL_ERROR_WANT_WRITE) {
				r = err;
				goto out;
			}
		}
		if (!sdone) {
			int x = wolfSSL_accept(sv), err = wolfSSL_get_error(sv, x);
			if (x == WOLFSSL_SUCCESS)
				sdone = 1;
			else if (err != WOLFSSL_ERROR_WANT_READ && err != WOLFSSL_ERROR_WANT_WRITE) {
				r = err;
				goto out;
			}
		}
	}
	r = cdone && sdone ? 0 : WOLFSSL_FATAL_ERROR;
out:
	wolfSSL_free(cl);
	wolfSSL_free(sv);
	wolfSSL_CTX_free(cctx);
	close(fds[0]);
	close(fds[1]);
	return r;
}

static int
serve_tls_files(WOLFSSL_CTX *ctx, const char *cert_file, const char *key_file,
    struct errbuf *e)
{
	char *cert = NULL, *key = NULL, text[WOLFSSL_MAX_ERROR_SZ];
	size_t cert_len = 0, key_len = 0;
	int r, w;

	if ((r = serve_read_file("tls-cert-file", cert_file, &cert, &cert_len, e)) < 0)
		return r;
	if ((r = serve_read_file("tls-private-key-file", key_file, &key, &key_len, e)) < 0)
		goto out;
	w = wolfSSL_CTX_use_certificate_chain_buffer(ctx, (const unsigned char *)cert,
	    (long)cert_len);
	if (w != WOLFSSL_SUCCESS) {
		r = errbuf_set(e, ERR_TLS, "--tls-cert-file %s: no usable PEM certificate: %s",
		    cert_file, serve_tls_err(w, text, sizeof(text)));
		goto out;
	}
	w = wolfSSL_CTX_use_PrivateKey_buffer(ctx, (const unsigned char *)key, (long)key_len,
	    WOLFSSL_FILETYPE_PEM);
	if (w != WOLFSSL_SUCCESS) {
		r = errbuf_set(e, ERR_TLS, "--tls-private-key-file %s: no usable PEM private "
		    "key: %s", key_file, serve_tls_err(w, text, sizeof(text)));
		goto out;
	}
	if (wolfSSL_CTX_check_private_key(ctx) != WOLFSSL_SUCCESS ||
	    (w = serve_tls_selftest(ctx)) != 0)
		r = errbuf_set(e, ERR_TLS, "--tls-private-key-file %s does not match the "
		    "certificate in --tls-cert-file %s%s%s", key_file, cert_file,
		    w < 0 ? ": " : "", w < 0 ? serve_tls_err(w, text, sizeof(text)) : "");
out:
	if (key) {
		explicit_bzero(key, key_len);
		free(key);
	}
	free(cert);
	return r;
}

/* serve_der_name appends one GeneralName (context tag, value) to a DER
 * buffer. Returns 0 or ERR_TOO_LARGE. */
static int
serve_der_name(unsigned char *buf, size_t cap, size_t *off, unsigned char tag,
    const void *data, size_t len)
{
	if (len > 255 || *off + 3 + len > cap)
		return ERR_TOO_LARGE;
	buf[(*off)++] = tag;
	if (len >= 128)
		buf[(*off)++] = 0x81;
	buf[(*off)++] = (unsigned char)len;
	memcpy(buf + *off, data, len);
	*off += len;
	return 0;
}

/* serve_san_ip appends an iPAddress name unless ips already holds it. */
static int
serve_san_ip(unsigned char *buf, size_t cap, size_t *off, const char *text,
    unsigned char (*ips)[17], size_t *nips)
{
	unsigned char a[17];

	memset(a, 0, sizeof(a));
	if (inet_pton(AF_INET, text, a + 1) == 1)
		a[0] = 4;
	else if (inet_pton(AF_INET6, text, a + 1) == 1)
		a[0] = 16;
	else
		return 0;
	for (size_t i = 0; i < *nips; i++)
		if (memcmp(ips[i], a, sizeof(a)) == 0)
			return 0;
	memcpy(ips[(*nips)++], a, sizeof(a));
	return serve_der_name(buf, cap, off, 0x87, a + 1, a[0]);
}

/* serve_san encodes the subjectAltName GeneralNames: the host name and
 * localhost, 127.0.0.1 and ::1, and the bind address when it names one. */
static int
serve_san(const char *host, const char *bind, unsigned char *out, size_t cap,
    size_t *ret_len)
{
	unsigned char names[SERVE_SAN_MAX], ips[4][17];
	size_t off = 0, nips = 0, hdr;
	unsigned char probe[16];
	int r = 0;

	if (inet_pton(AF_INET, host, probe) == 1 || inet_pton(AF_INET6, host, probe) == 1)
		r = serve_san_ip(names, sizeof(names), &off, host, ips, &nips);
	else if (strcmp(host, "localhost") != 0)
		r = serve_der_name(names, sizeof(names), &off, 0x82, host, strlen(host));
	if (r == 0)
		r = serve_der_name(names, sizeof(names), &off, 0x82, "localhost", 9);
	if (r == 0)
		r = serve_san_ip(names, sizeof(names), &off, "127.0.0.1", ips, &nips);
	if (r == 0)
		r = serve_san_ip(names, sizeof(names), &off, "::1", ips, &nips);
	if (r == 0 && bind && strcmp(bind, "0.0.0.0") != 0 && strcmp(bind, "::") != 0)
		r = serve_san_ip(names, sizeof(names), &off, bind, ips, &nips);
	if (r < 0)
		return r;
	hdr = off < 128 ? 2 : off < 256 ? 3 : 4;
	if (hdr + off > cap)
		return ERR_TOO_LARGE;
	out[0] = 0x30; /* SEQUENCE */
	if (off < 128) {
		out[1] = (unsigned char)off;
	} else if (off < 256) {
		out[1] = 0x81;
		out[2] = (unsigned char)off;
	} else {
		out[1] = 0x82;
		out[2] = (unsigned char)(off >> 8);
		out[3] = (unsigned char)off;
	}
	memcpy(out + hdr, names, off);
	*ret_len = hdr + off;
	return 0;
}

/* serve_selfsigned makes an EC P-256 key and a certificate for it, signed by
 * itself, like upstream's self-signed serving certificate; nothing is
 * written to disk. The key and random generator are allocated by wolfCrypt
 * itself: the static wolfSSL's options.h does not carry every macro its
 * big-number sizes depend on, so an ecc_key declared here would be smaller
 * than the library's. */
static int
serve_selfsigned(WOLFSSL_CTX *ctx, const char *bind, struct errbuf *e)
{
	unsigned char *der = NULL, key_der[256];
	char host[256], text[WOLFSSL_MAX_ERROR_SZ];
	size_t san_len = 0;
	int r = 0, w, der_len = 0, key_len = 0;
	Cert *cert = NULL;
	WC_RNG *rng = NULL;
	ecc_key *key = NULL;

	if (gethostname(host, sizeof(host)) < 0 || host[0] == '\0')
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	if ((der = malloc(SERVE_CERT_DER_MAX)) == NULL || (cert = wc_CertNew(NULL)) == NULL ||
	    (key = wc_ecc_key_new(NULL)) == NULL) {
		r = errbuf_set(e, ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((rng = wc_rng_new(NULL, 0, NULL)) == NULL) {
		r = errbuf_set(e, ERR_TLS, "self-signed certificate: no random numbers");
		goto out;
	}
	if ((w = wc_ecc_make_key_ex(rng, 32, key, ECC_SECP256R1)) != 0) {
		r = errbuf_set(e, ERR_TLS, "self-signed certificate: %s", wc_GetErrorString(w));
		goto out;
	}
	cert->daysValid = SERVE_CERT_DAYS;
	cert->sigType = CTC_SHA256wECDSA;
	cert->isCA = 0;
	snprintf(cert->subject.commonName, sizeof(cert->subject.commonName), "%s", host);
	if (serve_san(host, bind, cert->altNames, sizeof(cert->altNames), &san_len) < 0) {
		r = errbuf_set(e, ERR_INVALID, "self-signed certificate: host name \"%s\" too "
		    "long for a certificate", host);
		goto out;
	}
	cert->altNamesSz = (int)san_len;
	if ((w = wc_MakeCert_ex(cert, der, SERVE_CERT_DER_MAX, ECC_TYPE, key, rng)) < 0 ||
	    (w = wc_SignCert_ex(cert->bodySz, cert->sigType, der, SERVE_CERT_DER_MAX,
	    ECC_TYPE, key, rng)) < 0) {
		r = errbuf_set(e, ERR_TLS, "self-signed certificate: %s", wc_GetErrorString(w));
		goto out;
	}
	der_len = w;
	if ((key_len = wc_EccKeyToDer(key, key_der, sizeof(key_der))) < 0) {
		r = errbuf_set(e, ERR_TLS, "self-signed certificate: key: %s",
		    wc_GetErrorString(key_len));
		goto out;
	}
	if ((w = wolfSSL_CTX_use_certificate_buffer(ctx, der, der_len,
	    WOLFSSL_FILETYPE_ASN1)) != WOLFSSL_SUCCESS ||
	    (w = wolfSSL_CTX_use_PrivateKey_buffer(ctx, key_der, key_len,
	    WOLFSSL_FILETYPE_ASN1)) != WOLFSSL_SUCCESS)
		r = errbuf_set(e, ERR_TLS, "self-signed certificate: %s",
		    serve_tls_err(w, text, sizeof(text)));
out:
	explicit_bzero(key_der, sizeof(key_der));
	wc_ecc_key_free(key);
	wc_rng_free(rng);
	wc_CertFree(cert);
	free(der);
	return r;
}

static int
serve_tls(struct serve *s, const struct options *o, struct errbuf *e)
{
	int have_cert = o->tls_cert_file && *o->tls_cert_file;
	int have_key = o->tls_private_key_file && *o->tls_private_key_file;

	if (have_cert != have_key)
		return errbuf_set(e, ERR_INVALID, "--tls-cert-file and --tls-private-key-file "
		    "must be given together");
	if ((s->ctx = wolfSSL_CTX_new(wolfSSLv23_server_method())) == NULL)
		return errbuf_set(e, ERR_NOMEM, "out of memory");
	if (wolfSSL_CTX_SetMinVersion(s->ctx, WOLFSSL_TLSV1_2) != WOLFSSL_SUCCESS)
		return errbuf_set(e, ERR_TLS, "cannot require TLS 1.2 or later");
	wolfSSL_CTX_set_verify(s->ctx, WOLFSSL_VERIFY_NONE, NULL);
	if (have_cert)
		return serve_tls_files(s->ctx, o->tls_cert_file, o->tls_private_key_file, e);
	return serve_selfsigned(s->ctx, o->bind_address, e);
}

/* --- listener ----------------------------------------------------------------- */

/* serve_listen binds --bind-address:--secure-port. An unspecified address
 * (empty, 0.0.0.0 or ::) listens on every address of both families, as
 * upstream's does, on a dual-stack socket where IPv6 exists. */
static int
serve_listen(struct serve *s, const char *addr, int port, struct errbuf *e)
{
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct sockaddr *sa;
	socklen_t sl;
	int wildcard = addr == NULL || *addr == '\0' || strcmp(addr, "0.0.0.0") == 0 ||
	    strcmp(addr, "::") == 0;
	int fd = -1, one = 1, zero = 0, family;

	memset(&sin, 0, sizeof(sin));
	memset(&sin6, 0, sizeof(sin6));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin6.sin6_family = AF_INET6;
	sin6.sin6_port = htons((uint16_t)port);
	if (wildcard) {
		sin6.sin6_addr = in6addr_any;
		sin.sin_addr.s_addr = htonl(INADDR_ANY);
		family = AF_INET6;
	} else if (inet_pton(AF_INET, addr, &sin.sin_addr) == 1) {
		family = AF_INET;
	} else if (inet_pton(AF_INET6, addr, &sin6.sin6_addr) == 1) {
		family = AF_INET6;
	} else {
		return errbuf_set(e, ERR_INVALID, "--bind-address \"%s\" is not an IP address",
		    addr);
	}
	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 && wildcard && errno == EAFNOSUPPORT) {
		family = AF_INET;
		fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	}
	if (fd < 0)
		return errbuf_set(e, ERR_IO, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, wildcard ? &zero : &one, sizeof(int));
	sa = family == AF_INET6 ? (struct sockaddr *)&sin6 : (struct sockaddr *)&sin;
	sl = family == AF_INET6 ? sizeof(sin6) : sizeof(sin);
	snprintf(s->addr, sizeof(s->addr), family == AF_INET6 ? "[%s]" : "%s",
	    wildcard ? (family == AF_INET6 ? "::" : "0.0.0.0") : addr);
	if (bind(fd, sa, sl) < 0 || listen(fd, SERVE_BACKLOG) < 0) {
		int err = errno;
		close(fd);
		return errbuf_set(e, ERR_IO, "cannot listen on %s:%d: %s", s->addr, port,
		    strerror(err));
	}
	s->listen_fd = fd;
	s->port = port;
	return 0;
}

/* --- start and stop ------------------------------------------------------------ */

static void
serve_release(struct serve *s)
{
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	for (int i = 0; i < 2; i++)
		if (s->wake[i] >= 0)
			close(s->wake[i]);
	if (s->ctx) {
		wolfSSL_CTX_free(s->ctx);
		wolfSSL_Cleanup();
	}
	if (s->authn) {
		authn_cleanup(s->authn);
		free(s->authn);
	}
	serve_paths_free(&s->allow);
	memset(s, 0, sizeof(*s));
	s->listen_fd = -1;
	s->wake[0] = s->wake[1] = -1;
	for (size_t i = 0; i < SERVE_CONN_MAX; i++)
		s->conns[i].fd = -1;
}

int
serve_start(const struct options *o, struct kubeconfig *kc, struct errbuf *e)
{
	struct serve *s = &serve_g;
	sigset_t all, old;
	char port[16];
	int r;

	if (s->running)
		return errbuf_set(e, ERR_INTERNAL, "serve_start: already serving");
	if (o->secure_port == 0)
		return 0;
	serve_release(s);
	if (o->secure_port < 0 || o->secure_port > 65535)
		return errbuf_set(e, ERR_INVALID, "--secure-port %d must be between 0 and 65535",
		    o->secure_port);
	if ((r = serve_paths_parse(o->authorization_always_allow_paths, &s->allow, e)) < 0)
		return r;
	if (wolfSSL_Init() != WOLFSSL_SUCCESS) {
		r = errbuf_set(e, ERR_TLS, "wolfSSL_Init failed");
		goto fail;
	}
	if ((r = serve_tls(s, o, e)) < 0) {
		if (s->ctx == NULL)
			wolfSSL_Cleanup();
		goto fail;
	}
	if ((s->authn = malloc(sizeof(*s->authn))) == NULL) {
		r = errbuf_set(e, ERR_NOMEM, "out of memory");
		goto fail;
	}
	if ((r = authn_init(s->authn, kc, e)) < 0) {
		free(s->authn);
		s->authn = NULL;
		goto fail;
	}
	if ((r = serve_listen(s, o->bind_address, o->secure_port, e)) < 0)
		goto fail;
	if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = errbuf_set(e, ERR_IO, "pipe: %s", strerror(errno));
		goto fail;
	}
	pthread_once(&serve_metrics_once, serve_metrics_init);
	/* the serving thread takes no signals: SIGTERM must reach the thread
	 * that waits for it */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&s->thread, NULL, serve_thread, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		r = errbuf_set(e, ERR_NOMEM, "cannot start the serving thread: %s", strerror(r));
		goto fail;
	}
	s->running = 1;
	snprintf(port, sizeof(port), "%d", s->port);
	log_info(0, "Serving securely", "address", s->addr, "port", port, "certificate",
	    o->tls_cert_file && *o->tls_cert_file ? o->tls_cert_file : "self-signed", NULL);
	return 0;
fail:
	serve_release(s);
	return r;
}

void
serve_stop(void)
{
	struct serve *s = &serve_g;

	if (s->running) {
		ssize_t n;
		do
			n = write(s->wake[1], "x", 1);
		while (n < 0 && errno == EINTR);
		pthread_join(s->thread, NULL);
		s->running = 0;
	}
	serve_release(s);
}

int
serve_port(void)
{
	return serve_g.running ? serve_g.port : 0;
}
