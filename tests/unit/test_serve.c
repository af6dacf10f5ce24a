/* test_serve.c - the serving endpoint's request parser, always-allowed path
 * list, bearer tokens, check registry and health output. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "serve.h"

static struct serve_request rq;

/* parse runs serve_parse_request on a string. */
static int
parse(const char *s, struct errbuf *e)
{
	memset(&rq, 0, sizeof(rq));
	return serve_parse_request(s, strlen(s), &rq, e);
}

TEST(parse_simple_get)
{
	struct errbuf e = { "" };
	const char *s = "GET /healthz?verbose HTTP/1.1\r\nHost: x\r\nUser-Agent: kube-probe/1.32\r\n\r\n";

	CHECK(parse(s, &e) == (int)strlen(s));
	CHECK_STR(rq.method, "GET");
	CHECK_STR(rq.path, "/healthz");
	CHECK_STR(rq.query, "verbose");
	CHECK(rq.http_minor == 1);
	CHECK(rq.keep_alive == 1);
	CHECK(rq.has_body == 0);
	CHECK(rq.has_authorization == 0);
}

TEST(parse_needs_more_bytes)
{
	struct errbuf e = { "" };

	CHECK(parse("", &e) == 0);
	CHECK(parse("GET / HTTP/1.1\r\nHost: x\r\n", &e) == 0);
	CHECK(parse("GET / HTTP/1.1\r\nHost: x\r\n\r", &e) == 0);
	CHECK(parse("GET /metr", &e) == 0);
}

TEST(parse_bare_lf_and_pipelining)
{
	struct errbuf e = { "" };
	const char *first = "GET /a HTTP/1.1\nHost: x\n\n";
	char two[256];

	CHECK(parse(first, &e) == (int)strlen(first));
	CHECK_STR(rq.path, "/a");
	snprintf(two, sizeof(two), "%sGET /b HTTP/1.1\r\nHost: x\r\n\r\n", first);
	/* only the first request is consumed */
	CHECK(parse(two, &e) == (int)strlen(first));
	CHECK_STR(rq.path, "/a");
	CHECK(parse(two + strlen(first), &e) > 0);
	CHECK_STR(rq.path, "/b");
}

TEST(parse_keep_alive_rules)
{
	struct errbuf e = { "" };

	CHECK(parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &e) > 0);
	CHECK(rq.keep_alive == 0);
	CHECK(parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade , CLOSE\r\n\r\n", &e) > 0);
	CHECK(rq.keep_alive == 0);
	CHECK(parse("GET / HTTP/1.0\r\n\r\n", &e) > 0);
	CHECK(rq.http_minor == 0);
	CHECK(rq.keep_alive == 0);
	CHECK(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", &e) > 0);
	CHECK(rq.keep_alive == 1);
	/* a body is never read, so its connection cannot serve another request */
	CHECK(parse("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n", &e) > 0);
	CHECK(rq.has_body == 1);
	CHECK(rq.keep_alive == 0);
	CHECK(parse("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", &e) > 0);
	CHECK(rq.has_body == 0);
	CHECK(rq.keep_alive == 1);
	CHECK(parse("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", &e) > 0);
	CHECK(rq.has_body == 1);
	CHECK(rq.keep_alive == 0);
}

TEST(parse_path_escapes_and_forms)
{
	struct errbuf e = { "" };

	CHECK(parse("GET /%6detrics HTTP/1.1\r\nHost: x\r\n\r\n", &e) > 0);
	CHECK_STR(rq.path, "/metrics");
	CHECK(parse("GET /a%2Fb?x=%41 HTTP/1.1\r\nHost: x\r\n\r\n", &e) > 0);
	CHECK_STR(rq.path, "/a/b");
	CHECK_STR(rq.query, "x=%41");   /* the query stays raw */
	CHECK(parse("GET https://10.0.0.1:10258/readyz?verbose HTTP/1.1\r\nHost: x\r\n\r\n",
	    &e) > 0);
	CHECK_STR(rq.path, "/readyz");
	CHECK_STR(rq.query, "verbose");
	CHECK(parse("GET http://host HTTP/1.1\r\nHost: x\r\n\r\n", &e) > 0);
	CHECK_STR(rq.path, "/");
	CHECK(parse("GET /? HTTP/1.1\r\nHost: x\r\n\r\n", &e) > 0);
	CHECK_STR(rq.path, "/");
	CHECK_STR(rq.query, "");
}

TEST(parse_malformed)
{
	static const char *const bad[] = {
		"\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",           /* empty request line */
		"GET / HTTP/1.1 \r\nHost: x\r\n\r\n",             /* extra space */
		"GET  / HTTP/1.1\r\nHost: x\r\n\r\n",             /* empty target */
		"GET\r\nHost: x\r\n\r\n",
		"GET /\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\n",                          /* no Host in 1.1 */
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\r\nHost : x\r\n\r\n",              /* space before colon */
		"GET / HTTP/1.1\r\nHost: x\r\nnocolon\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n: empty\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX: a\001b\r\n\r\n", /* control character */
		"GET / HTTP/1.1\r\nHost: x\rY: z\r\n\r\n",         /* bare CR */
		"GE(T / HTTP/1.1\r\nHost: x\r\n\r\n",              /* not a token */
		"GETGETGETGETGETGET / HTTP/1.1\r\nHost: x\r\n\r\n", /* method too long */
		"GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /%4 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /a%00b HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET healthz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET ftp://x/ HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / http/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1x\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n",
	};
	struct errbuf e;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e.msg[0] = '\0';
		if (parse(bad[i], &e) != ERR_INVALID)
			fprintf(stderr, "  case %zu: %s\n", i, bad[i]);
		CHECK(parse(bad[i], &e) == ERR_INVALID);
		CHECK(e.msg[0] != '\0');
	}
}

TEST(parse_versions)
{
	struct errbuf e = { "" };

	CHECK(parse("GET / HTTP/2.0\r\nHost: x\r\n\r\n", &e) == ERR_UNSUPPORTED);
	CHECK(parse("GET / HTTP/0.9\r\n\r\n", &e) == ERR_UNSUPPORTED);
	/* the HTTP/2 preface, as Go answers it */
	CHECK(parse("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", &e) == ERR_UNSUPPORTED);
}

TEST(parse_caps)
{
	struct errbuf e = { "" };
	size_t cap = SERVE_REQUEST_MAX + 64;
	char *big = malloc(cap);
	int r;

	CHECK(big != NULL);
	/* no end of the head within SERVE_REQUEST_MAX bytes */
	memset(big, 'a', cap);
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	CHECK(serve_parse_request(big, SERVE_REQUEST_MAX - 1, &rq, &e) == 0);
	CHECK(serve_parse_request(big, SERVE_REQUEST_MAX, &rq, &e) == ERR_TOO_LARGE);
	CHECK(serve_parse_request(big, cap, &rq, &e) == ERR_TOO_LARGE);

	/* path, query and Authorization each have a cap */
	snprintf(big, cap, "GET /%0*d HTTP/1.1\r\nHost: x\r\n\r\n", SERVE_PATH_MAX, 0);
	CHECK(parse(big, &e) == ERR_TOO_LARGE);
	snprintf(big, cap, "GET /%0*d HTTP/1.1\r\nHost: x\r\n\r\n", SERVE_PATH_MAX - 2, 0);
	CHECK(parse(big, &e) > 0);
	CHECK(strlen(rq.path) == SERVE_PATH_MAX - 1);
	snprintf(big, cap, "GET /?%0*d HTTP/1.1\r\nHost: x\r\n\r\n", SERVE_QUERY_MAX, 0);
	CHECK(parse(big, &e) == ERR_TOO_LARGE);
	snprintf(big, cap, "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %0*d\r\n\r\n",
	    SERVE_AUTH_MAX, 0);
	CHECK(parse(big, &e) == ERR_TOO_LARGE);

	/* header lines */
	size_t off = (size_t)snprintf(big, cap, "GET / HTTP/1.1\r\nHost: x\r\n");
	for (int i = 1; i < SERVE_HEADERS_MAX; i++)
		off += (size_t)snprintf(big + off, cap - off, "X-%d: y\r\n", i);
	snprintf(big + off, cap - off, "\r\n");
	r = parse(big, &e);
	CHECK(r == (int)strlen(big));
	snprintf(big + off, cap - off, "X-Last: y\r\n\r\n");
	CHECK(parse(big, &e) == ERR_TOO_LARGE);
	free(big);
}

TEST(parse_failure_leaves_output)
{
	struct errbuf e = { "" };

	CHECK(parse("GET /kept HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n", &e) > 0);
	CHECK(serve_parse_request("GET /x HTTP/1.1\r\n\r\n", 19, &rq, &e) == ERR_INVALID);
	CHECK_STR(rq.path, "/kept");
	CHECK_STR(rq.authorization, "Bearer t");
}

TEST(parse_authorization)
{
	struct errbuf e = { "" };

	CHECK(parse("GET /metrics HTTP/1.1\r\nHost: x\r\nauthorization:   Bearer abc.def  \r\n\r\n",
	    &e) > 0);
	CHECK(rq.has_authorization == 1);
	CHECK_STR(rq.authorization, "Bearer abc.def");
	CHECK_STR(serve_bearer_token(rq.authorization), "abc.def");
}

TEST(bearer_token)
{
	CHECK_STR(serve_bearer_token("Bearer abc"), "abc");
	CHECK_STR(serve_bearer_token("bEaReR abc"), "abc");
	CHECK(serve_bearer_token("Bearer ") == NULL);
	CHECK(serve_bearer_token("Bearer") == NULL);
	CHECK(serve_bearer_token("Bearerabc") == NULL);
	CHECK(serve_bearer_token("Bearer  abc") == NULL);
	CHECK(serve_bearer_token("Bearer a b") == NULL);
	CHECK(serve_bearer_token("Basic YWxhZGRpbjpvcGVuc2VzYW1l") == NULL);
	CHECK(serve_bearer_token("") == NULL);
	CHECK(serve_bearer_token(NULL) == NULL);
}

TEST(paths_default_list)
{
	struct serve_paths p;
	struct errbuf e = { "" };

	CHECK(serve_paths_parse("/healthz,/readyz,/livez", &p, &e) == 0);
	CHECK(p.n == 3);
	CHECK(serve_paths_match(&p, "/healthz"));
	CHECK(serve_paths_match(&p, "/readyz"));
	CHECK(serve_paths_match(&p, "/livez"));
	CHECK(!serve_paths_match(&p, "/metrics"));
	CHECK(!serve_paths_match(&p, "/healthz/leaderElection"));
	CHECK(!serve_paths_match(&p, "/healthz/"));
	CHECK(!serve_paths_match(&p, "/healthzz"));
	CHECK(!serve_paths_match(&p, "/"));
	serve_paths_free(&p);
	CHECK(p.n == 0);
}

TEST(paths_forms)
{
	struct serve_paths p;
	struct errbuf e = { "" };

	/* spaces and empty entries are skipped; the leading '/' is optional, as
	 * upstream trims it */
	CHECK(serve_paths_parse(" healthz , ,/debug/*,,/", &p, &e) == 0);
	CHECK(p.n == 3);
	CHECK_STR(p.paths[0], "/healthz");
	CHECK_STR(p.paths[1], "/debug/*");
	CHECK_STR(p.paths[2], "/");
	CHECK(serve_paths_match(&p, "/healthz"));
	CHECK(serve_paths_match(&p, "/debug/"));
	CHECK(serve_paths_match(&p, "/debug/pprof/heap"));
	CHECK(!serve_paths_match(&p, "/debug"));
	CHECK(serve_paths_match(&p, "/"));
	CHECK(!serve_paths_match(&p, "/metrics"));
	serve_paths_free(&p);

	CHECK(serve_paths_parse("*", &p, &e) == 0);
	CHECK(serve_paths_match(&p, "/metrics"));
	CHECK(serve_paths_match(&p, "/"));
	serve_paths_free(&p);

	CHECK(serve_paths_parse("", &p, &e) == 0);
	CHECK(p.n == 0);
	CHECK(!serve_paths_match(&p, "/healthz"));
	serve_paths_free(&p);
	CHECK(serve_paths_parse(NULL, &p, &e) == 0);
	CHECK(p.n == 0);
}

TEST(paths_invalid)
{
	struct serve_paths p = { { NULL }, 0 };
	struct errbuf e = { "" };
	char list[4096];
	size_t off = 0;

	CHECK(serve_paths_parse("/healthz,/a*b", &p, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "only a trailing * is allowed in \"a*b\"");
	CHECK(p.n == 0);
	CHECK(serve_paths_parse("/**", &p, &e) == ERR_INVALID);
	for (int i = 0; i <= SERVE_ALLOW_PATHS_MAX; i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "/p%d,", i);
	CHECK(serve_paths_parse(list, &p, &e) == ERR_TOO_LARGE);
	CHECK(p.n == 0);
}

/* checks for the health output tests */
static int check_calls;

static int
check_ok(void *arg, struct errbuf *e)
{
	(void)arg;
	(void)e;
	check_calls++;
	return 0;
}

static int
check_fail(void *arg, struct errbuf *e)
{
	check_calls++;
	return errbuf_set(e, ERR_TRANSIENT, "%s", arg ? (const char *)arg : "broken");
}

static size_t
checks(struct serve_check *c, int fail_b)
{
	memset(c, 0, 3 * sizeof(*c));
	snprintf(c[0].name, sizeof(c[0].name), "ping");
	c[0].fn = check_ok;
	snprintf(c[1].name, sizeof(c[1].name), "leaderElection");
	c[1].fn = fail_b ? check_fail : check_ok;
	c[1].arg = "lease expired";
	snprintf(c[2].name, sizeof(c[2].name), "informer-sync");
	c[2].fn = check_ok;
	return 3;
}

TEST(health_all_pass)
{
	struct serve_check c[3];
	char *body = NULL, failed[256];
	size_t len = 0, n = checks(c, 0);

	check_calls = 0;
	CHECK(serve_health_render("healthz", c, n, "", &body, &len, failed,
	    sizeof(failed)) == 200);
	CHECK_STR(body, "ok");
	CHECK(len == 2);
	CHECK(check_calls == 3);
	CHECK_STR(failed, "");
	free(body);
	CHECK(serve_health_render("healthz", c, n, "verbose", &body, &len, NULL, 0) == 200);
	CHECK_STR(body, "[+]ping ok\n[+]leaderElection ok\n[+]informer-sync ok\n"
	    "healthz check passed\n");
	CHECK(len == strlen(body));
	free(body);
	/* ?verbose=1 and other parameters around it */
	CHECK(serve_health_render("readyz", c, n, "a=b&verbose=1", &body, &len, NULL, 0) == 200);
	CHECK_CONTAINS(body, "readyz check passed\n");
	free(body);
}

TEST(health_failure_is_always_verbose)
{
	struct serve_check c[3];
	char *body = NULL, failed[256];
	size_t len = 0, n = checks(c, 1);

	CHECK(serve_health_render("healthz", c, n, NULL, &body, &len, failed,
	    sizeof(failed)) == 500);
	CHECK_STR(body, "[+]ping ok\n[-]leaderElection failed: reason withheld\n"
	    "[+]informer-sync ok\nhealthz check failed\n");
	/* the reason is for the log, never for the client */
	CHECK(strstr(body, "lease expired") == NULL);
	CHECK_STR(failed, "leaderElection: lease expired");
	free(body);
}

TEST(health_exclude)
{
	struct serve_check c[3];
	char *body = NULL;
	size_t len = 0, n = checks(c, 1);

	check_calls = 0;
	CHECK(serve_health_render("healthz", c, n, "exclude=leaderElection", &body, &len,
	    NULL, 0) == 200);
	CHECK_STR(body, "ok");
	CHECK(check_calls == 2);
	free(body);
	CHECK(serve_health_render("healthz", c, n,
	    "verbose&exclude=leaderElection&exclude=nope&exclude=gone%2Dtoo", &body, &len,
	    NULL, 0) == 200);
	CHECK_STR(body, "[+]ping ok\n[+]leaderElection excluded: ok\n[+]informer-sync ok\n"
	    "warn: some health checks cannot be excluded: no matches for \"nope\",\"gone-too\"\n"
	    "healthz check passed\n");
	free(body);
	/* an unmatched exclude on failure keeps the warning in the listing */
	CHECK(serve_health_render("livez", c, n, "exclude=x", &body, &len, NULL, 0) == 500);
	CHECK_CONTAINS(body, "no matches for \"x\"\nlivez check failed\n");
	free(body);
}

TEST(registry)
{
	CHECK(serve_add_healthz("leaderElection", check_ok, NULL) == 0);
	CHECK(serve_add_healthz("leaderElection", check_ok, NULL) == ERR_EXISTS);
	CHECK(serve_add_readyz("leaderElection", check_ok, NULL) == ERR_EXISTS);
	CHECK(serve_add_readyz("ping", check_ok, NULL) == ERR_EXISTS);
	CHECK(serve_add_readyz("informer-sync", check_ok, NULL) == 0);
	CHECK(serve_add_readyz("", check_ok, NULL) == ERR_INVALID);
	CHECK(serve_add_readyz("a b", check_ok, NULL) == ERR_INVALID);
	CHECK(serve_add_readyz("a/b", check_ok, NULL) == ERR_INVALID);
	CHECK(serve_add_readyz(NULL, check_ok, NULL) == ERR_INVALID);
	CHECK(serve_add_readyz("x", NULL, NULL) == ERR_INVALID);
	for (int i = 1; i < SERVE_CHECKS_MAX; i++) {
		char name[16];
		snprintf(name, sizeof(name), "c%d", i);
		CHECK(serve_add_readyz(name, check_ok, NULL) == 0);
	}
	CHECK(serve_add_readyz("one-too-many", check_ok, NULL) == ERR_TOO_LARGE);
}

TEST(start_disabled_and_bad_flags)
{
	struct options o;
	struct errbuf e = { "" };

	memset(&o, 0, sizeof(o));
	o.secure_port = 0;
	CHECK(serve_start(&o, NULL, &e) == 0);
	CHECK(serve_port() == 0);
	serve_stop();
	o.secure_port = 10258;
	o.bind_address = "127.0.0.1";
	o.tls_cert_file = "/nonexistent.crt";
	CHECK(serve_start(&o, NULL, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "must be given together");
	o.tls_private_key_file = "/nonexistent.key";
	CHECK(serve_start(&o, NULL, &e) == ERR_IO);
	CHECK_CONTAINS(e.msg, "--tls-cert-file /nonexistent.crt");
	o.tls_cert_file = o.tls_private_key_file = NULL;
	o.authorization_always_allow_paths = "/a*b";
	CHECK(serve_start(&o, NULL, &e) == ERR_INVALID);
	CHECK(serve_port() == 0);
	serve_stop();
}

TEST_MAIN()
