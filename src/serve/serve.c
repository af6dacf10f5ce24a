/* serve.c - HTTPS health, readiness and metrics endpoint: routing and the
 * one thread multiplexing TLS connections with wolfSSL in non-blocking mode
 * (checks: health.c; requests: httpreq.c; TLS setup: servetls.c). */
#include "serve/serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <wolfssl/options.h>
#include <wolfssl/ssl.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/error-crypt.h>

#include "serve/authn.h"
#include "base/clock.h"
#include "base/dynbuf.h"
#include "serve/health.h"
#include "serve/httpreq.h"
#include "base/log.h"
#include "base/metrics.h"
#include "serve/servetls.h"
#include "base/stop.h"
#include "base/xalloc.h"

#define SERVE_BACKLOG 64           /* pending connections in the kernel */
#define SERVE_ACCEPT_BURST 16      /* connections accepted per wake-up */
#define SERVE_REQUESTS_PER_TURN 8  /* pipelined requests served before others get a turn */
#define SERVE_ACCEPT_PAUSE_MS 100  /* out of file descriptors: stop accepting this long */
#define SERVE_FAILED_MAX 1024      /* bytes: failed checks' reasons for the log */
#define SERVE_USER_MAX 256         /* bytes: a user name in logs and messages */
#define SERVE_DRAIN_READS 16       /* 4 KiB reads of unread input before a close */
#define SERVE_BODY_MAX (64 * 1024) /* bytes: a Status body; ours, so never reached */

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
		} else {
			p.paths[p.n++] = xasprintf("/%.*s", (int)(b - a), a);
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
	char *in;               /* HTTPREQ_MAX bytes; holds tokens: wiped */
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
	struct httpreq req;
	struct serve_check checks[1 + 2 * SERVE_CHECKS_MAX];
};

static struct serve serve_g = { .listen_fd = -1, .wake = { -1, -1 } };
static pthread_once_t serve_metrics_once = PTHREAD_ONCE_INIT;
static struct metric *serve_requests;

static void
serve_metrics_init(void)
{
	serve_requests = metrics_counter("bootccm_http_requests_total",
	    "HTTP requests answered on the secure port, by path and status code.",
	    "path,code");
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
 * in CRLF, or NULL. Returns 0, or ERR_INTERNAL when the head does not fit. */
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
	c->out = xmalloc((size_t)n + body_len);
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
	/* a check's message may quote a server's echo of a secret */
	char *clean = log_redact_str(text);
	int r;

	if (clean != NULL)
		text = clean;
	r = serve_reply(c, method, code, "text/plain; charset=utf-8", text, strlen(text),
	    extra);
	free(clean);
	return r;
}

/* serve_reply_status answers with a Kubernetes Status body, as the API
 * server's filters do for authentication and authorization failures. */
static int
serve_reply_status(struct serve_conn *c, const char *method, int code,
    const char *reason, const char *message)
{
	json_object *o = xcheck(json_object_new_object());
	char *clean = log_redact_str(message);  /* a review's message may echo one */
	const char *text;
	struct dynbuf b;
	int r;

	json_object_object_add(o, "kind", xcheck(json_object_new_string("Status")));
	json_object_object_add(o, "apiVersion", xcheck(json_object_new_string("v1")));
	json_object_object_add(o, "metadata", xcheck(json_object_new_object()));
	json_object_object_add(o, "status", xcheck(json_object_new_string("Failure")));
	json_object_object_add(o, "message", xcheck(json_object_new_string(clean ? clean :
	    message)));
	free(clean);
	json_object_object_add(o, "reason", xcheck(json_object_new_string(reason)));
	if (code == 403)
		json_object_object_add(o, "details", xcheck(json_object_new_object()));
	json_object_object_add(o, "code", xcheck(json_object_new_int(code)));
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
	if (text == NULL)
		xalloc_fatal(__FILE__, __LINE__);
	dynbuf_init(&b, SERVE_BODY_MAX);
	dynbuf_addf(&b, "%s\n", text);
	r = serve_reply(c, method, code, "application/json", dynbuf_ptr(&b), dynbuf_len(&b),
	    NULL);
	dynbuf_free(&b);
	json_object_put(o);
	return r;
}

/* serve_authorize authenticates and authorizes rq for its path. Returns 1
 * to go on, or 0 when it queued the refusal (401, 403, 5xx) on c; user gets
 * the user name for the log. */
static int
serve_authorize(struct serve *s, struct serve_conn *c, struct httpreq *rq,
    char *user, size_t ulen, int *ret_err)
{
	struct authn_user u = { NULL, NULL };
	struct errbuf e = { "" };
	char verb[HTTPREQ_METHOD_MAX], msg[SERVE_USER_MAX + HTTPREQ_PATH_MAX + ERRBUF_MAX + 64];
	const char *token = rq->has_authorization ? httpreq_bearer_token(rq->authorization) :
	    NULL;
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
serve_health(struct serve *s, struct serve_conn *c, struct httpreq *rq,
    enum serve_kind kind, const char *endpoint, const char *check)
{
	char failed[SERVE_FAILED_MAX], *body = NULL;
	size_t n = serve_health_checks(kind, s->checks), len;
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
	if (code != 200)
		log_info(2, "Check failed", "endpoint", endpoint, "checks", failed, NULL);
	r = serve_reply(c, rq->method, code, "text/plain; charset=utf-8", body, len, NULL);
	free(body);
	return r;
}

/* serve_handle answers one parsed request: authorization, then routing. */
static int
serve_handle(struct serve *s, struct serve_conn *c, struct httpreq *rq)
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
		metrics_render(&body, &len);
		r = serve_reply(c, rq->method, 200, "text/plain; version=0.0.4; charset=utf-8",
		    body, len, NULL);
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
		explicit_bzero(c->in, HTTPREQ_MAX);
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
		char code[16], text[SERVETLS_ERR_MAX];
		snprintf(code, sizeof(code), "%d", err);
		log_info(4, "TLS connection failed", "peer", c->peer, "code", code,
		    "err", servetls_err(err, text, sizeof(text)), NULL);
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
			r = httpreq_parse(c->in, c->in_len, &s->req, &e);
			if (r != 0) {
				size_t used = r > 0 ? (size_t)r : c->in_len;
				int rr = r > 0 ? serve_handle(s, c, &s->req) :
				    serve_reply_bad(c, r, &e);
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
			    (int)(HTTPREQ_MAX - c->in_len));
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
		c->in = xmalloc(HTTPREQ_MAX);
		c->ssl = xcheck(wolfSSL_new(s->ctx));
		if (wolfSSL_set_fd(c->ssl, fd) != WOLFSSL_SUCCESS) {
			log_warn("Cannot set up a connection", "peer", c->peer, NULL);
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
			/* ENOMEM: the kernel may have memory again soon (a stop
			 * comes through the wake pipe: a plain sleep) */
			log_warn("poll failed", "err", strerror(errno), NULL);
			stop_sleep(NULL, SERVE_ACCEPT_PAUSE_MS * NS_PER_MS);
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
	servetls_free(s->ctx);
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

/* serve_prepare checks and loads what serving needs: the always-allowed
 * paths into *allow and the TLS context (the certificate and key files,
 * matched) into *ctx; on failure neither is left allocated. */
static int
serve_prepare(const struct serve_config *c, struct serve_paths *allow, WOLFSSL_CTX **ctx,
    struct errbuf *e)
{
	int r;

	if (c->secure_port < 0 || c->secure_port > 65535)
		return errbuf_set(e, ERR_INVALID, "--secure-port %d must be between 0 and 65535",
		    c->secure_port);
	if ((r = serve_paths_parse(c->always_allow_paths, allow, e)) < 0)
		return r;
	if ((r = servetls_new(c->tls_cert_file, c->tls_private_key_file, c->bind_address,
	    c->tls_curve_preferences, ctx, e)) < 0) {
		serve_paths_free(allow);
		return r;
	}
	return 0;
}

int
serve_preflight(const struct serve_config *c, struct errbuf *e)
{
	struct serve_paths allow;
	WOLFSSL_CTX *ctx = NULL;
	int r;

	if (c->secure_port == 0)
		return 0;
	if ((r = serve_prepare(c, &allow, &ctx, e)) < 0)
		return r;
	servetls_free(ctx);
	serve_paths_free(&allow);
	return 0;
}

int
serve_start(const struct serve_config *c, struct kubeconfig *authn_kc,
    struct kubeconfig *authz_kc, struct errbuf *e)
{
	struct serve *s = &serve_g;
	struct authn_config ac = {
		.authn_kc = authn_kc,
		.authz_kc = authz_kc,
		.token_ttl_ns = c->token_ttl_ns,
		.allow_ttl_ns = c->allow_ttl_ns,
		.deny_ttl_ns = c->deny_ttl_ns,
	};
	sigset_t all, old;
	char port[16];
	int r;

	if (s->running)
		return errbuf_set(e, ERR_INTERNAL, "serve_start: already serving");
	if (c->secure_port == 0)
		return 0;
	serve_release(s);
	if ((r = serve_prepare(c, &s->allow, &s->ctx, e)) < 0)
		goto fail;
	s->authn = xmalloc(sizeof(*s->authn));
	if ((r = authn_init(s->authn, &ac, e)) < 0) {
		free(s->authn);
		s->authn = NULL;
		goto fail;
	}
	if ((r = serve_listen(s, c->bind_address, c->secure_port, e)) < 0)
		goto fail;
	if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = errbuf_set(e, ERR_IO, "pipe: %s", strerror(errno));
		goto fail;
	}
	pthread_once(&serve_metrics_once, serve_metrics_init);
	/* the serving thread takes no signals: SIGTERM and SIGINT belong to the
	 * thread that waits for them (stop_on_signals) */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&s->thread, NULL, serve_thread, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		r = errbuf_set(e, ERR_INTERNAL, "cannot start the serving thread: %s",
		    strerror(r));
		goto fail;
	}
	s->running = 1;
	snprintf(port, sizeof(port), "%d", s->port);
	log_info(0, "Serving securely", "address", s->addr, "port", port, "certificate",
	    c->tls_cert_file && *c->tls_cert_file ? c->tls_cert_file : "self-signed", NULL);
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
