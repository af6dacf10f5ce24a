/* test_hcloud_client.c - the Hetzner Cloud API client against a scripted
 * loopback server: the error mapping (a bare 404 is never "not found"), the
 * endpoint rules (plain http only to loopback), the token file (missing,
 * then read, redacted in logs, rotated without a restart), the rate-limit
 * headers pacing requests and refusing what would wait too long, paging
 * with per_page=50, conflict retries, and actions of several threads
 * polled together in one GET /actions?id=..&id=... */
#include "harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "../../providers/hcloud/hcclient.h"

/* --- a scripted server ---------------------------------------------------------- */

#define SRV_REQS_MAX 256

struct srv_req {
	char method[8];
	char path[1024];
	char auth[256];
	int64_t at_ns;
};

struct srv;
typedef void (*srv_handler)(struct srv *s, const struct srv_req *rq, int n,
    char *reply, size_t size);

struct srv {
	int fd, port, stop;
	pthread_t t;
	pthread_mutex_t mu;
	struct srv_req reqs[SRV_REQS_MAX];
	int nreq;
	srv_handler handler;
	void *arg;
};

/* srv_reply formats an answer with a JSON body and extra header lines. */
static void
srv_reply(char *reply, size_t size, int status, const char *ctype, const char *headers,
    const char *body)
{
	snprintf(reply, size, "HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n%s\r\n%s", status, ctype, strlen(body), headers ? headers : "",
	    body);
}

static void *
srv_serve(void *arg)
{
	struct srv *s = arg;
	static char reply[65536];

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		char buf[16384], *end, *p;
		size_t got = 0, clen = 0;
		struct srv_req rq;
		int c = accept(s->fd, NULL, NULL), n;

		if (c < 0)
			continue;
		memset(&rq, 0, sizeof(rq));
		for (;;) {
			ssize_t k = read(c, buf + got, sizeof(buf) - 1 - got);
			if (k <= 0)
				break;
			got += (size_t)k;
			buf[got] = '\0';
			if ((end = strstr(buf, "\r\n\r\n")) != NULL) {
				if ((p = strcasestr(buf, "\r\nContent-Length:")) != NULL && p < end)
					clen = strtoul(p + 17, NULL, 10);
				if (got >= (size_t)(end + 4 - buf) + clen)
					break;
			}
		}
		sscanf(buf, "%7s %1023s", rq.method, rq.path);
		if ((p = strcasestr(buf, "\r\nAuthorization: ")) != NULL)
			sscanf(p + 17, "%255[^\r]", rq.auth);
		rq.at_ns = clock_mono_ns();
		pthread_mutex_lock(&s->mu);
		n = s->nreq;
		if (s->nreq < SRV_REQS_MAX)
			s->reqs[s->nreq++] = rq;
		s->handler(s, &rq, n, reply, sizeof(reply));
		pthread_mutex_unlock(&s->mu);
		(void)!write(c, reply, strlen(reply));
		close(c);
	}
	return NULL;
}

static int
srv_start(struct srv *s, srv_handler h, void *arg)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	struct timeval tv = { 0, 200000 };

	memset(s, 0, sizeof(*s));
	s->handler = h;
	s->arg = arg;
	pthread_mutex_init(&s->mu, NULL);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(s->fd, 16) < 0 || getsockname(s->fd, (struct sockaddr *)&a, &al) < 0)
		return -1;
	/* accept wakes up now and then to see whether to stop */
	setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	s->port = ntohs(a.sin_port);
	return pthread_create(&s->t, NULL, srv_serve, s);
}

static void
srv_stop(struct srv *s)
{
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	pthread_join(s->t, NULL);
	close(s->fd);
	pthread_mutex_destroy(&s->mu);
}

static int
srv_count(struct srv *s)
{
	int n;

	pthread_mutex_lock(&s->mu);
	n = s->nreq;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* A token file in a directory of its own. */
struct tokdir {
	char dir[64];
	char path[96];
};

static void
tok_write(struct tokdir *t, const char *token)
{
	char tmp[128];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/token.tmp", t->dir);
	f = fopen(tmp, "w");
	fputs(token, f);
	fclose(f);
	rename(tmp, t->path);   /* as an installer or the kubelet replaces it */
}

static int
tok_init(struct tokdir *t)
{
	snprintf(t->dir, sizeof(t->dir), "/tmp/test-hcloud-XXXXXX");
	if (mkdtemp(t->dir) == NULL)
		return -1;
	snprintf(t->path, sizeof(t->path), "%s/token", t->dir);
	return 0;
}

static void
tok_done(struct tokdir *t)
{
	unlink(t->path);
	rmdir(t->dir);
}

static struct hcclient *
client_for(struct srv *s, struct tokdir *t)
{
	struct hcclient_config cfg = { .token_file = t->path, .user_agent = "test" };
	struct hcclient *c = NULL;
	struct errbuf e;
	char ep[64];

	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d/v1", s->port);
	cfg.endpoint = ep;
	if (hcclient_new(&cfg, &c, &e) < 0)
		return NULL;
	return c;
}

/* --- pure parts ------------------------------------------------------------------- */

TEST(error_mapping)
{
	CHECK(hcclient_error_map(404, "not_found") == ERR_NOT_FOUND);
	CHECK(hcclient_error_map(429, "rate_limit_exceeded") == ERR_TOO_MANY_REQUESTS);
	CHECK(hcclient_error_map(409, "conflict") == ERR_TRANSIENT);
	CHECK(hcclient_error_map(423, "locked") == ERR_TRANSIENT);
	CHECK(hcclient_error_map(504, "timeout") == ERR_TIMEOUT);
	CHECK(hcclient_error_map(500, "server_error") == ERR_TRANSIENT);
	CHECK(hcclient_error_map(503, "unavailable") == ERR_TRANSIENT);
	CHECK(hcclient_error_map(502, "bad_gateway") == ERR_TRANSIENT);
	CHECK(hcclient_error_map(503, "something_new") == ERR_TRANSIENT);
	CHECK(hcclient_error_map(401, "unauthorized") == ERR_PERMANENT);
	CHECK(hcclient_error_map(401, "token_readonly") == ERR_PERMANENT);
	CHECK(hcclient_error_map(403, "forbidden") == ERR_PERMANENT);
	CHECK(hcclient_error_map(422, "invalid_input") == ERR_PERMANENT);
	CHECK(hcclient_error_map(409, "uniqueness_error") == ERR_PERMANENT);
	CHECK(hcclient_error_map(403, "resource_limit_exceeded") == ERR_PERMANENT);
	/* without the envelope, a 404 is a proxy's or a wrong endpoint's */
	CHECK(hcclient_error_map(404, NULL) == ERR_PERMANENT);
	CHECK(hcclient_error_map(404, "") == ERR_PERMANENT);
	CHECK(hcclient_error_map(429, NULL) == ERR_TOO_MANY_REQUESTS);
	CHECK(hcclient_error_map(502, NULL) == ERR_TRANSIENT);
	CHECK(hcclient_error_map(504, NULL) == ERR_TIMEOUT);
	/* what the controllers retry */
	CHECK(err_retryable(hcclient_error_map(409, "conflict")));
	CHECK(err_retryable(hcclient_error_map(429, NULL)));
	CHECK(!err_retryable(hcclient_error_map(401, "unauthorized")));
}

TEST(endpoint_rules)
{
	static const char *const good[] = {
		"https://api.hetzner.cloud/v1", "https://api.hetzner.cloud/v1/",
		"http://127.0.0.1:8080/v1", "http://localhost/v1", "http://[::1]:9/v1",
		"http://127.8.9.10/v1", "https://[2001:db8::1]:443/v1", NULL,
	};
	static const char *const bad[] = {
		"http://api.hetzner.cloud/v1", "http://10.0.0.1/v1", "http://[::2]/v1",
		"http://169.254.169.254/v1", "ftp://x/v1", "https://x/v1?x=1",
		"https://user@x/v1", "https:///v1", "https://x y/v1", "api.hetzner.cloud",
		"http://127.0.0.1.example.com/v1", NULL,
	};
	struct hcclient_config cfg = { .token_file = "/nonexistent" };
	struct hcclient *c;
	struct errbuf e;

	for (int i = 0; good[i]; i++) {
		cfg.endpoint = good[i];
		CHECK(hcclient_new(&cfg, &c, &e) == 0);
		CHECK(hcclient_plain_http(c) == (strncmp(good[i], "http:", 5) == 0));
		if (i == 1)
			CHECK_STR(hcclient_endpoint(c), "https://api.hetzner.cloud/v1");
		hcclient_free(c);
	}
	for (int i = 0; bad[i]; i++) {
		cfg.endpoint = bad[i];
		CHECK(hcclient_new(&cfg, &c, &e) == ERR_INVALID);
		CHECK_CONTAINS(e.msg, "endpoint");
	}
	cfg.endpoint = "http://10.0.0.1/v1";
	CHECK(hcclient_new(&cfg, &c, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "only to a loopback address");
	cfg.endpoint = NULL;
	CHECK(hcclient_new(&cfg, &c, &e) == 0);
	CHECK_STR(hcclient_endpoint(c), HCCLIENT_ENDPOINT_DEFAULT);
	hcclient_free(c);
	cfg.token_file = "";
	CHECK(hcclient_new(&cfg, &c, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "tokenFile is required");
}

TEST(endpoint_errors_show_no_user_part_and_no_control_bytes)
{
	struct errbuf e;
	int plain;

	/* a password in the URL is never echoed, whatever else is wrong */
	CHECK(hcclient_endpoint_check("https://admin:hunter2pass@api.example/v1", &plain,
	    &e) == ERR_INVALID);
	CHECK_STR(e.msg, "\"https://[redacted]@api.example/v1\": no spaces, query, fragment "
	    "or user part allowed");
	CHECK(hcclient_endpoint_check("http://u:p4ss@10.0.0.1/v1?x", &plain, &e) == ERR_INVALID);
	CHECK(strstr(e.msg, "p4ss") == NULL && strstr(e.msg, "u:") == NULL);
	CHECK(hcclient_endpoint_check("ftp://me:pw@x", &plain, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "\"ftp://[redacted]@x\": not an http:// or https:// URL");
	/* an '@' in the path is not a user part */
	CHECK(hcclient_endpoint_check("https://x/v1/a@b c", &plain, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "\"https://x/v1/a@b c\"");
	/* control bytes are shown escaped */
	CHECK(hcclient_endpoint_check("https://x\r\nFAKE/v1", &plain, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "\"https://x\\r\\nFAKE/v1\"");
	CHECK(strchr(e.msg, '\r') == NULL && strchr(e.msg, '\n') == NULL);
}

TEST(escape)
{
	struct dynbuf b;

	dynbuf_init(&b, 256);
	CHECK(hcclient_escape(&b, "hcloud-ccm/service-uid=1b2c,a in (x y)") == 0);
	CHECK_STR(dynbuf_ptr(&b), "hcloud-ccm%2Fservice-uid%3D1b2c%2Ca%20in%20%28x%20y%29");
	dynbuf_free(&b);
}

/* --- the token -------------------------------------------------------------------- */

static void
ok_handler(struct srv *s, const struct srv_req *rq, int n, char *reply, size_t size)
{
	(void)s, (void)rq, (void)n;
	srv_reply(reply, size, 200, "application/json", "RateLimit-Limit: 3600\r\n"
	    "RateLimit-Remaining: 3599\r\nRateLimit-Reset: 1\r\n", "{\"ok\":true}");
}

static int
format_line(char *buf, int len, const char *msg, ...)
{
	va_list ap;
	int n;

	va_start(ap, msg);
	n = log_format_line(buf, len, 'I', 0, "x.c", 1, msg, ap);
	va_end(ap);
	return n;
}

TEST(token_file_read_redacted_and_rotated)
{
	struct srv s;
	struct tokdir t;
	struct hcclient *c;
	struct errbuf e;
	json_object *o = NULL;
	char line[512];

	CHECK(tok_init(&t) == 0);
	CHECK(srv_start(&s, ok_handler, NULL) == 0);
	CHECK((c = client_for(&s, &t)) != NULL);
	/* no file yet: nothing is sent, the error names the file */
	CHECK(hcclient_do(c, "GET", "/servers", NULL, &o, NULL, &e) == ERR_PERMANENT);
	CHECK_CONTAINS(e.msg, t.path);
	CHECK_CONTAINS(e.msg, "No such file or directory");
	CHECK(hcclient_token_check(c, &e) == ERR_PERMANENT);
	CHECK(srv_count(&s) == 0);
	tok_write(&t, "");
	CHECK(hcclient_token_check(c, &e) == ERR_PERMANENT);
	CHECK_CONTAINS(e.msg, "empty");
	tok_write(&t, "tok-0001-first\n");
	CHECK(hcclient_token_check(c, &e) == 0);
	CHECK(hcclient_do(c, "GET", "/servers", NULL, &o, NULL, &e) == 0);
	json_object_put(o);
	CHECK_STR(s.reqs[0].auth, "Bearer tok-0001-first");
	/* every token read is a secret the logger hides */
	format_line(line, sizeof(line), "x", "value", "a tok-0001-first b", NULL);
	CHECK(strstr(line, "tok-0001-first") == NULL);
	CHECK_CONTAINS(line, "[redacted]");
	/* rotated: the next request carries the new one */
	tok_write(&t, "tok-0002-second");
	CHECK(hcclient_do(c, "GET", "/servers", NULL, &o, NULL, &e) == 0);
	json_object_put(o);
	CHECK_STR(s.reqs[1].auth, "Bearer tok-0002-second");
	format_line(line, sizeof(line), "x", "value", "tok-0002-second", NULL);
	CHECK(strstr(line, "tok-0002-second") == NULL);
	/* a token with a space inside is refused, not sent */
	tok_write(&t, "tok one\n");
	CHECK(hcclient_do(c, "GET", "/servers", NULL, &o, NULL, &e) == ERR_PERMANENT);
	CHECK_CONTAINS(e.msg, "not one line of printable characters");
	CHECK(srv_count(&s) == 2);
	hcclient_free(c);
	srv_stop(&s);
	tok_done(&t);
}

/* The credentials' generation: it moves when a different token is read,
 * whether the file is replaced by a rename or written in place (same size,
 * same inode), and only then; it needs no request to notice. */
TEST(token_generation_tells_a_changed_token)
{
	struct srv s;
	struct tokdir t;
	struct hcclient *c;
	struct errbuf e;
	uint64_t g0, g1, g2;
	FILE *f;

	CHECK(tok_init(&t) == 0);
	CHECK(srv_start(&s, ok_handler, NULL) == 0);
	CHECK((c = client_for(&s, &t)) != NULL);
	g0 = hcclient_token_generation(c);
	CHECK(hcclient_token_generation(c) == g0);      /* no file: no change */
	tok_write(&t, "tok-AAAA-wrong\n");
	CHECK((g1 = hcclient_token_generation(c)) != g0);
	CHECK(hcclient_token_generation(c) == g1);
	/* the same token written again (a rename, or whitespace only) */
	tok_write(&t, "tok-AAAA-wrong");
	CHECK(hcclient_token_generation(c) == g1);
	/* written in place: same inode, same size */
	CHECK((f = fopen(t.path, "r+")) != NULL);
	fputs("tok-BBBB-right", f);
	fclose(f);
	CHECK((g2 = hcclient_token_generation(c)) != g1);
	/* gone: no token to retry with; back: one in force again, retry */
	unlink(t.path);
	CHECK(hcclient_token_generation(c) == g2);
	tok_write(&t, "tok-BBBB-right\n");
	CHECK((g1 = hcclient_token_generation(c)) != g2);
	tok_write(&t, "tok-CCCC-third\n");
	CHECK((g2 = hcclient_token_generation(c)) != g1);
	/* a FIFO in its place is refused without being opened (an open would
	 * wait for a writer for ever) */
	unlink(t.path);
	CHECK(mkfifo(t.path, 0600) == 0);
	CHECK(hcclient_token_generation(c) == g2);
	CHECK(hcclient_token_check(c, &e) == ERR_PERMANENT);
	CHECK_CONTAINS(e.msg, "not a regular file");
	CHECK(srv_count(&s) == 0);
	hcclient_free(c);
	srv_stop(&s);
	tok_done(&t);
}

/* --- errors -------------------------------------------------------------------- */

static void
error_handler(struct srv *s, const struct srv_req *rq, int n, char *reply, size_t size)
{
	(void)s, (void)n;
	if (strcmp(rq->path, "/v1/servers/99") == 0)
		srv_reply(reply, size, 404, "application/json", NULL, "{\"error\":{\"code\":"
		    "\"not_found\",\"message\":\"server with ID '99' not found\",\"details\":null}}");
	else if (strcmp(rq->path, "/v1/servers/98") == 0)
		srv_reply(reply, size, 404, "text/html", NULL, "{\"error\":{\"code\":"
		    "\"not_found\",\"message\":\"x\"}}");
	else if (strcmp(rq->path, "/v1/servers/97") == 0)
		srv_reply(reply, size, 404, "application/json", NULL, "{\"message\":\"nope\"}");
	else if (strcmp(rq->path, "/v1/servers/96") == 0)
		srv_reply(reply, size, 401, "application/json", NULL, "{\"error\":{\"code\":"
		    "\"unauthorized\",\"message\":\"unable to authenticate\",\"details\":null}}");
	else if (strcmp(rq->path, "/v1/servers/95") == 0)
		srv_reply(reply, size, 200, "application/json", NULL, "[1,2]");
	else
		srv_reply(reply, size, 503, "text/html", NULL, "<html>busy</html>");
}

TEST(errors_and_the_envelope)
{
	struct srv s;
	struct tokdir t;
	struct hcclient *c;
	struct hcclient_answer a;
	struct errbuf e;
	json_object *o = NULL;

	CHECK(tok_init(&t) == 0);
	tok_write(&t, "tok-errors");
	CHECK(srv_start(&s, error_handler, NULL) == 0);
	CHECK((c = client_for(&s, &t)) != NULL);
	CHECK(hcclient_do(c, "GET", "/servers/99", NULL, &o, &a, &e) == ERR_NOT_FOUND);
	CHECK_STR(e.msg, "GET /servers/99: not_found: server with ID '99' not found (HTTP 404)");
	CHECK(a.status == 404);
	CHECK_STR(a.code, "not_found");
	/* the envelope counts only as application/json */
	CHECK(hcclient_do(c, "GET", "/servers/98", NULL, &o, &a, &e) == ERR_PERMANENT);
	CHECK_STR(e.msg, "GET /servers/98: HTTP 404 without the API's error envelope");
	CHECK_STR(a.code, "");
	CHECK(hcclient_do(c, "GET", "/servers/97", NULL, &o, NULL, &e) == ERR_PERMANENT);
	CHECK(hcclient_do(c, "GET", "/servers/96", NULL, &o, NULL, &e) == ERR_PERMANENT);
	CHECK_CONTAINS(e.msg, "unable to authenticate");
	CHECK(hcclient_token_check(c, &e) == ERR_PERMANENT);
	CHECK_CONTAINS(e.msg, "the API refuses the token");
	CHECK(hcclient_do(c, "GET", "/servers/95", NULL, &o, NULL, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "GET /servers/95: the answer");
	/* a good answer clears the refusal */
	CHECK(hcclient_token_check(c, &e) == 0);
	CHECK(hcclient_do(c, "GET", "/other", NULL, &o, NULL, &e) == ERR_TRANSIENT);
	CHECK(o == NULL);
	hcclient_free(c);
	srv_stop(&s);
	/* nobody listens any more: a transient error naming the request */
	CHECK((c = client_for(&s, &t)) != NULL);
	CHECK(hcclient_do(c, "GET", "/servers", NULL, &o, NULL, &e) == ERR_TRANSIENT);
	CHECK(strncmp(e.msg, "GET /servers: ", 14) == 0);
	CHECK(strstr(e.msg, "127.0.0.1") == NULL || strstr(e.msg, "http://") == NULL);
	hcclient_free(c);
	tok_done(&t);
}

/* --- the rate limit ------------------------------------------------------------- */

struct rl {
	int64_t reset_in;      /* seconds */
	int remaining;
	int status;
};

static void
rl_handler(struct srv *s, const struct srv_req *rq, int n, char *reply, size_t size)
{
	struct rl *r = s->arg;
	char h[256];

	(void)rq, (void)n;
	snprintf(h, sizeof(h), "RateLimit-Limit: 3600\r\nRateLimit-Remaining: %d\r\n"
	    "RateLimit-Reset: %lld\r\n", r->remaining,
	    (long long)(clock_real_ns() / NS_PER_S + r->reset_in));
	if (r->status == 429)
		srv_reply(reply, size, 429, "application/json", h, "{\"error\":{\"code\":"
		    "\"rate_limit_exceeded\",\"message\":\"limit reached\",\"details\":null}}");
	else
		srv_reply(reply, size, 200, "application/json", h, "{}");
}

TEST(rate_limit_headers_pace_and_refuse)
{
	struct rl rl = { 3600, 0, 429 };
	struct srv s;
	struct tokdir t;
	struct hcclient *c;
	struct errbuf e;
	json_object *o = NULL;
	int64_t gap;

	CHECK(tok_init(&t) == 0);
	tok_write(&t, "tok-rate");
	CHECK(srv_start(&s, rl_handler, &rl) == 0);
	CHECK((c = client_for(&s, &t)) != NULL);
	CHECK(hcclient_do(c, "GET", "/servers", NULL, &o, NULL, &e) == ERR_TOO_MANY_REQUESTS);
	CHECK_CONTAINS(e.msg, "rate_limit_exceeded");
	/* the project refills one a second: the next request waits for it */
	rl.status = 200;
	rl.remaining = 0;
	CHECK(hcclient_do(c, "GET", "/servers", NULL, &o, NULL, &e) == 0);
	json_object_put(o);
	CHECK(srv_count(&s) == 2);
	gap = s.reqs[1].at_ns - s.reqs[0].at_ns;
	CHECK(gap >= 900 * NS_PER_MS);
	/* a project that refills one every 100 s: waiting is no use, the
	 * request is refused without being sent */
	rl.reset_in = 360000;
	CHECK(hcclient_do(c, "GET", "/servers", NULL, &o, NULL, &e) == 0);
	json_object_put(o);
	CHECK(srv_count(&s) == 3);
	CHECK(hcclient_do(c, "GET", "/servers", NULL, &o, NULL, &e) == ERR_TOO_MANY_REQUESTS);
	CHECK_CONTAINS(e.msg, "rate limit is used up");
	CHECK(srv_count(&s) == 3);
	hcclient_free(c);
	srv_stop(&s);
	tok_done(&t);
}

/* --- paging and retries ------------------------------------------------------------ */

static void
page_handler(struct srv *s, const struct srv_req *rq, int n, char *reply, size_t size)
{
	const char *p = strstr(rq->path, "page=");
	int page = p ? atoi(p + 5) : 1, first = (page - 1) * 50, count;
	char body[16384];
	size_t off;

	(void)s, (void)n;
	count = page < 3 ? 50 : 20;
	off = (size_t)snprintf(body, sizeof(body), "{\"things\":[");
	for (int i = 0; i < count; i++)
		off += (size_t)snprintf(body + off, sizeof(body) - off, "%s{\"id\":%d}",
		    i ? "," : "", first + i + 1);
	snprintf(body + off, sizeof(body) - off, "],\"meta\":{\"pagination\":{\"page\":%d,"
	    "\"per_page\":50,\"previous_page\":null,\"next_page\":%s,\"last_page\":3,"
	    "\"total_entries\":120}}}", page, page == 1 ? "2" : page == 2 ? "3" : "null");
	srv_reply(reply, size, 200, "application/json", NULL, body);
}

struct seen {
	int n;
	int64_t sum;
	char last_path[64];
};

static int
seen_item(json_object *item, const char *path, void *arg, struct errbuf *e)
{
	struct seen *s = arg;
	int64_t id;
	int r;

	if ((r = jsonx_int(item, path, "id", 0, 1000, JSONX_REQUIRED, &id, e)) < 0)
		return r;
	s->n++;
	s->sum += id;
	snprintf(s->last_path, sizeof(s->last_path), "%s", path);
	return 0;
}

TEST(listings_follow_every_page_fifty_at_a_time)
{
	struct seen seen = { 0, 0, "" };
	struct srv s;
	struct tokdir t;
	struct hcclient *c;
	struct errbuf e;

	CHECK(tok_init(&t) == 0);
	tok_write(&t, "tok-pages");
	CHECK(srv_start(&s, page_handler, NULL) == 0);
	CHECK((c = client_for(&s, &t)) != NULL);
	CHECK(hcclient_list(c, "/things?label_selector=a%3Db", "things", seen_item, &seen,
	    &e) == 0);
	CHECK(seen.n == 120 && seen.sum == 120 * 121 / 2);
	CHECK_STR(seen.last_path, "things[119]");
	CHECK(srv_count(&s) == 3);
	CHECK_STR(s.reqs[0].path, "/v1/things?label_selector=a%3Db&page=1&per_page=50");
	CHECK_STR(s.reqs[2].path, "/v1/things?label_selector=a%3Db&page=3&per_page=50");
	CHECK(hcclient_requests(c) == 3);
	hcclient_free(c);
	srv_stop(&s);
	tok_done(&t);
}

static void
conflict_handler(struct srv *s, const struct srv_req *rq, int n, char *reply, size_t size)
{
	(void)s, (void)rq;
	if (n == 0)
		srv_reply(reply, size, 409, "application/json", NULL, "{\"error\":{\"code\":"
		    "\"conflict\",\"message\":\"another change is running\",\"details\":null}}");
	else
		srv_reply(reply, size, 201, "application/json", NULL, "{\"action\":{\"id\":5,"
		    "\"command\":\"add_route\",\"status\":\"success\"}}");
}

TEST(conflicts_are_retried)
{
	struct srv s;
	struct tokdir t;
	struct hcclient *c;
	struct errbuf e;
	json_object *o = NULL, *body = json_object_new_object();

	json_object_object_add(body, "destination", json_object_new_string("10.244.1.0/24"));
	CHECK(tok_init(&t) == 0);
	tok_write(&t, "tok-conflict");
	CHECK(srv_start(&s, conflict_handler, NULL) == 0);
	CHECK((c = client_for(&s, &t)) != NULL);
	CHECK(hcclient_do(c, "POST", "/networks/1/actions/add_route", body, &o, NULL, &e) == 0);
	CHECK(o != NULL);
	json_object_put(o);
	json_object_put(body);
	CHECK(srv_count(&s) == 2);
	CHECK_STR(s.reqs[1].method, "POST");
	hcclient_free(c);
	srv_stop(&s);
	tok_done(&t);
}

/* --- actions ----------------------------------------------------------------------- */

static void
action_handler(struct srv *s, const struct srv_req *rq, int n, char *reply, size_t size)
{
	int *both = s->arg;

	(void)n;
	if (strstr(rq->path, "id=1&id=2") != NULL)
		*both = 1;
	if (strncmp(rq->path, "/v1/actions?", 12) != 0) {
		srv_reply(reply, size, 404, "application/json", NULL, "{}");
		return;
	}
	/* the actions run until someone asked for both at once */
	srv_reply(reply, size, 200, "application/json", NULL, *both ?
	    "{\"actions\":[{\"id\":1,\"command\":\"add_target\",\"status\":\"success\"},"
	    "{\"id\":2,\"command\":\"add_target\",\"status\":\"success\"},"
	    "{\"id\":3,\"command\":\"add_service\",\"status\":\"error\",\"error\":"
	    "{\"code\":\"action_failed\",\"message\":\"Action failed\"}}],"
	    "\"meta\":{\"pagination\":{\"page\":1}}}" :
	    "{\"actions\":[{\"id\":1,\"command\":\"add_target\",\"status\":\"running\"},"
	    "{\"id\":2,\"command\":\"add_target\",\"status\":\"running\"}],"
	    "\"meta\":{\"pagination\":{\"page\":1}}}");
}

struct waiter {
	struct hcclient *c;
	int64_t id;
	int r;
};

static void *
wait_one(void *arg)
{
	struct waiter *w = arg;
	struct errbuf e;

	w->r = hcclient_wait_actions(w->c, &w->id, 1, &e);
	return NULL;
}

TEST(actions_of_several_threads_are_polled_together)
{
	struct srv s;
	struct tokdir t;
	struct hcclient *c;
	struct errbuf e;
	struct waiter w1, w2;
	pthread_t t1, t2;
	int both = 0, n;
	int64_t three = 3;

	CHECK(tok_init(&t) == 0);
	tok_write(&t, "tok-actions");
	CHECK(srv_start(&s, action_handler, &both) == 0);
	CHECK((c = client_for(&s, &t)) != NULL);
	w1 = (struct waiter){ c, 1, -100 };
	w2 = (struct waiter){ c, 2, -100 };
	CHECK(pthread_create(&t1, NULL, wait_one, &w1) == 0);
	CHECK(pthread_create(&t2, NULL, wait_one, &w2) == 0);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	CHECK(w1.r == 0 && w2.r == 0);
	CHECK(both);
	/* every poll was one request, each for every action pending then */
	n = srv_count(&s);
	for (int i = 0; i < n; i++)
		CHECK(strncmp(s.reqs[i].path, "/v1/actions?id=", 15) == 0);
	CHECK(n >= 1);
	/* an action that failed is a transient error naming it */
	CHECK(hcclient_wait_actions(c, &three, 1, &e) == ERR_TRANSIENT);
	CHECK_STR(e.msg, "action 3 (add_service) failed: action_failed: Action failed");
	hcclient_free(c);
	srv_stop(&s);
	tok_done(&t);
}

TEST_MAIN()
