/* session.c - one metadata service: a TCP probe that tells "absent" from
 * "failing", then plain-HTTP requests with short timeouts and retries. */
#include "metadata/session.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "http/http.h"
#include "base/stop.h"
#include "base/xalloc.h"

#define MD_SESSION_HEADERS_MAX 8   /* session headers plus per-request ones */
#define MD_SESSION_EXCERPT 80      /* bytes of an error body quoted in messages */

void
md_session_answer_free(struct md_answer *a)
{
	if (a == NULL)
		return;
	free(a->body);
	a->body = NULL;
	a->len = 0;
}

int
md_session_parse_url(const char *url, char *host, size_t host_len, char *port,
    size_t port_len, struct errbuf *e)
{
	const char *p, *h, *he, *pe;
	size_t n, j;

	if (url == NULL || strncmp(url, "http://", 7) != 0)
		goto bad;
	p = url + 7;
	if (*p == '[') {
		h = p + 1;
		if ((he = strchr(h, ']')) == NULL)
			goto bad;
		p = he + 1;
	} else {
		h = p;
		while (*p && *p != ':' && *p != '/')
			p++;
		he = p;
	}
	if (he == h)
		goto bad;
	/* host: copy, decoding a "%25" zone separator (fe80::1%25eth0) */
	for (j = 0, n = 0; h + n < he; n++) {
		char c = h[n];
		if (c <= ' ' || c == 0x7f || c == '/' || c == '?' || c == '#' ||
		    c == '@' || c == '[')
			goto bad;
		if (c == '%') {
			if (he - (h + n) < 3 || h[n + 1] != '2' || h[n + 2] != '5')
				goto bad;
			n += 2;
		}
		if (j + 1 >= host_len)
			goto bad;
		host[j++] = c;
	}
	host[j] = '\0';
	if (*p == ':') {
		long v = 0;
		pe = ++p;
		while (*pe >= '0' && *pe <= '9' && pe - p < 6)
			v = v * 10 + (*pe++ - '0');
		if (pe == p || v < 1 || v > 65535 || (size_t)(pe - p) >= port_len)
			goto bad;
		memcpy(port, p, (size_t)(pe - p));
		port[pe - p] = '\0';
		p = pe;
	} else {
		if (port_len < 3)
			goto bad;
		memcpy(port, "80", 3);
	}
	if (*p == '/')
		p++;
	if (*p != '\0')
		goto bad;
	return 0;
bad:
	return errbuf_set(e, ERR_INVALID,
	    "\"%s\" is not a metadata endpoint: want http://HOST[:PORT]", url ? url : "");
}

/* md_session_connect tries one address: 1 connected, 0 not. */
static int
md_session_connect(const struct addrinfo *ai, long deadline_ms)
{
	int fd, ok = 0, err = 0;
	socklen_t len = sizeof(err);

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    ai->ai_protocol);
	if (fd < 0)
		return 0;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
		ok = 1;
	} else if (errno == EINPROGRESS) {
		for (;;) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			long left = deadline_ms - (long)(clock_mono_ns() / NS_PER_MS);
			int pr;
			if (left <= 0)
				break;
			pr = poll(&pfd, 1, (int)left);
			if (pr < 0 && errno == EINTR)
				continue;
			if (pr > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
			    err == 0)
				ok = 1;
			break;
		}
	}
	close(fd);
	return ok;
}

int
md_session_probe(const char *url, long timeout_ms, struct errbuf *e)
{
	char host[256], port[8];
	struct addrinfo hints, *res = NULL;
	long deadline;
	int r, found = 0;

	if ((r = md_session_parse_url(url, host, sizeof(host), port, sizeof(port), e)) < 0)
		return r;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	deadline = (long)(clock_mono_ns() / NS_PER_MS) + timeout_ms;
	if (getaddrinfo(host, port, &hints, &res) != 0)
		return 0; /* a name that does not resolve: no service there */
	for (struct addrinfo *ai = res; ai && !found; ai = ai->ai_next)
		found = md_session_connect(ai, deadline);
	freeaddrinfo(res);
	return found;
}

int
md_session_open(struct md_session *s, const struct md_config *cfg, const char *base,
    const char *const *headers, struct errbuf *e)
{
	size_t n = strlen(base);
	int r;

	memset(s, 0, sizeof(*s));
	while (n > 0 && base[n - 1] == '/')
		n--;
	if (n >= sizeof(s->base))
		return errbuf_set(e, ERR_INVALID, "metadata endpoint longer than %zu bytes",
		    sizeof(s->base) - 1);
	memcpy(s->base, base, n);
	s->base[n] = '\0';
	r = md_session_probe(s->base, cfg->connect_timeout_ms, e);
	if (r < 0)
		return r;
	if (r == 0)
		return errbuf_set(e, ERR_NOT_FOUND,
		    "no metadata service at %s: nothing accepts connections there", s->base);
	s->http = http_client_new();
	http_client_set_stop(s->http, cfg->stop);
	s->cfg = cfg;
	s->headers = headers;
	return 0;
}

void
md_session_close(struct md_session *s)
{
	http_client_free(s->http);
	s->http = NULL;
}

static int
md_session_retryable_status(long status)
{
	return status >= 500 || status == 410 || status == 429;
}

int
md_session_request(struct md_session *s, const char *method, const char *path,
    const char *const *extra, long *ret_status, struct md_answer *ret, struct errbuf *e)
{
	const char *hdrs[MD_SESSION_HEADERS_MAX + 1];
	char url[MD_URL_MAX];
	struct http_request req;
	struct http_response resp;
	struct errbuf last = { "" };
	struct backoff pause;
	size_t nh = 0;
	int attempt, r = 0;

	if ((size_t)snprintf(url, sizeof(url), "%s%s", s->base, path) >= sizeof(url))
		return errbuf_set(e, ERR_INVALID, "%s %s%s: URL longer than %zu bytes",
		    method, s->base, path, sizeof(url) - 1);
	for (const char *const *h = s->headers; h && *h && nh < MD_SESSION_HEADERS_MAX; h++)
		hdrs[nh++] = *h;
	for (const char *const *h = extra; h && *h && nh < MD_SESSION_HEADERS_MAX; h++)
		hdrs[nh++] = *h;
	hdrs[nh] = NULL;

	memset(&req, 0, sizeof(req));
	req.method = method;
	req.url = url;
	req.headers = hdrs;
	req.connect_timeout_ms = s->cfg->connect_timeout_ms;
	req.timeout_ms = s->cfg->timeout_ms;
	req.max_body = MD_BODY_MAX;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		req.body = "";
		req.body_len = 0;
	}

	/* doubling pauses without jitter: one client, one service */
	backoff_init(&pause, MD_BACKOFF_BASE_MS * NS_PER_MS, MD_BACKOFF_CAP_MS * NS_PER_MS,
	    2.0, 0.0);
	for (attempt = 0;; attempt++) {
		int64_t wait = backoff_next(&pause);
		r = http_do(s->http, &req, &resp, &last);
		if (r == 0) {
			if (!md_session_retryable_status(resp.status) || attempt >= s->cfg->retries)
				break;
			long status = resp.status;
			/* Retry-After replaces the pause, under the same cap */
			if (resp.retry_after_s >= 0)
				wait = resp.retry_after_s <= pause.cap_ns / NS_PER_S ?
				    resp.retry_after_s * NS_PER_S : pause.cap_ns;
			http_response_free(&resp);
			errbuf_set(&last, ERR_TRANSIENT, "%s %s: HTTP %ld", method, url, status);
		} else if (r == ERR_INVALID || r == ERR_UNSUPPORTED || attempt >= s->cfg->retries) {
			if (attempt > 0)
				return errbuf_set(e, r, "%s (%d attempts)", last.msg, attempt + 1);
			return errbuf_set(e, r, "%s", last.msg);
		}
		if (stop_sleep(s->cfg->stop, wait))
			return errbuf_set(e, ERR_TRANSIENT, "%s (stopping)", last.msg);
	}
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->where, sizeof(ret->where), "%s %s", method, url);
	ret->body = resp.body;
	ret->len = resp.body_len;
	resp.body = NULL;
	*ret_status = resp.status;
	http_response_free(&resp);
	if (ret->body == NULL)
		ret->body = xstrdup("");
	return 0;
}

int
md_session_status_err(const struct md_answer *a, long status, struct errbuf *e)
{
	char excerpt[MD_SESSION_EXCERPT + 1];
	size_t n = 0;
	int code;

	for (size_t i = 0; a->body && i < a->len && n < MD_SESSION_EXCERPT; i++) {
		unsigned char c = (unsigned char)a->body[i];
		if (c == '\n' || c == '\r' || c == '\t')
			c = ' ';
		excerpt[n++] = (c < ' ' || c >= 0x7f) ? '?' : (char)c;
	}
	while (n > 0 && excerpt[n - 1] == ' ')
		n--;
	excerpt[n] = '\0';
	switch (status) {
	case 404:
		code = ERR_INVALID; /* the service exists but lacks a fact */
		break;
	case 401:
		code = ERR_UNAUTHORIZED;
		break;
	case 403:
		code = ERR_FORBIDDEN;
		break;
	case 429:
		code = ERR_TOO_MANY_REQUESTS;
		break;
	default:
		code = status >= 500 ? ERR_TRANSIENT : ERR_INVALID;
	}
	return errbuf_set(e, code, "%s: HTTP %ld%s%s%s", a->where, status,
	    status == 404 ? " (no such item)" : "", n ? ": " : "", excerpt);
}

int
md_session_get(void *arg, const char *path, int optional, struct md_answer *ret,
    struct errbuf *e)
{
	struct md_session *s = arg;
	struct md_answer a;
	long status = 0;
	int r;

	if ((r = md_session_request(s, "GET", path, NULL, &status, &a, e)) < 0)
		return r;
	if (status >= 200 && status < 300) {
		a.status = 200;
	} else if (status == 404 && optional) {
		a.status = 404;
		a.body[0] = '\0';
		a.len = 0;
	} else {
		r = md_session_status_err(&a, status, e);
		md_session_answer_free(&a);
		return r;
	}
	*ret = a;
	return 0;
}

int
md_session_fetch(const struct md_config *cfg, const char *const *headers,
    md_build_fn build, struct md_instance *in, struct errbuf *e)
{
	struct md_session s;
	struct md_getter g = { md_session_get, &s };
	int r;

	if ((r = md_session_open(&s, cfg, cfg->endpoint ? cfg->endpoint : MD_ENDPOINT_DEFAULT,
	    headers, e)) < 0)
		return r;
	r = build(&g, in, e);
	md_session_close(&s);
	return r;
}
