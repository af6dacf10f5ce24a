/* test_httpreq.c - the serving endpoint's request head parser, bearer
 * tokens and query parameters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "serve/httpreq.h"

static struct httpreq rq;

/* parse runs httpreq_parse on a string. */
static int
parse(const char *s, struct errbuf *e)
{
	memset(&rq, 0, sizeof(rq));
	return httpreq_parse(s, strlen(s), &rq, e);
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
	size_t cap = HTTPREQ_MAX + 64;
	char *big = malloc(cap);
	int r;

	CHECK(big != NULL);
	/* no end of the head within HTTPREQ_MAX bytes */
	memset(big, 'a', cap);
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	CHECK(httpreq_parse(big, HTTPREQ_MAX - 1, &rq, &e) == 0);
	CHECK(httpreq_parse(big, HTTPREQ_MAX, &rq, &e) == ERR_TOO_LARGE);
	CHECK(httpreq_parse(big, cap, &rq, &e) == ERR_TOO_LARGE);

	/* path, query and Authorization each have a cap */
	snprintf(big, cap, "GET /%0*d HTTP/1.1\r\nHost: x\r\n\r\n", HTTPREQ_PATH_MAX, 0);
	CHECK(parse(big, &e) == ERR_TOO_LARGE);
	snprintf(big, cap, "GET /%0*d HTTP/1.1\r\nHost: x\r\n\r\n", HTTPREQ_PATH_MAX - 2, 0);
	CHECK(parse(big, &e) > 0);
	CHECK(strlen(rq.path) == HTTPREQ_PATH_MAX - 1);
	snprintf(big, cap, "GET /?%0*d HTTP/1.1\r\nHost: x\r\n\r\n", HTTPREQ_QUERY_MAX, 0);
	CHECK(parse(big, &e) == ERR_TOO_LARGE);
	snprintf(big, cap, "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %0*d\r\n\r\n",
	    HTTPREQ_AUTH_MAX, 0);
	CHECK(parse(big, &e) == ERR_TOO_LARGE);

	/* header lines */
	size_t off = (size_t)snprintf(big, cap, "GET / HTTP/1.1\r\nHost: x\r\n");
	for (int i = 1; i < HTTPREQ_HEADERS_MAX; i++)
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
	CHECK(httpreq_parse("GET /x HTTP/1.1\r\n\r\n", 19, &rq, &e) == ERR_INVALID);
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
	CHECK_STR(httpreq_bearer_token(rq.authorization), "abc.def");
}

TEST(bearer_token)
{
	CHECK_STR(httpreq_bearer_token("Bearer abc"), "abc");
	CHECK_STR(httpreq_bearer_token("bEaReR abc"), "abc");
	CHECK(httpreq_bearer_token("Bearer ") == NULL);
	CHECK(httpreq_bearer_token("Bearer") == NULL);
	CHECK(httpreq_bearer_token("Bearerabc") == NULL);
	CHECK(httpreq_bearer_token("Bearer  abc") == NULL);
	CHECK(httpreq_bearer_token("Bearer a b") == NULL);
	CHECK(httpreq_bearer_token("Basic YWxhZGRpbjpvcGVuc2VzYW1l") == NULL);
	CHECK(httpreq_bearer_token("") == NULL);
	CHECK(httpreq_bearer_token(NULL) == NULL);
}

TEST(query_pairs)
{
	const char *q = "verbose&exclude=a%2Db&=skipped&bad=%zz&x=a+b&exclude=";
	char key[16], val[16];

	CHECK(httpreq_query_next(&q, key, sizeof(key), val, sizeof(val)) == 1);
	CHECK_STR(key, "verbose");
	CHECK_STR(val, "");
	CHECK(httpreq_query_next(&q, key, sizeof(key), val, sizeof(val)) == 1);
	CHECK_STR(key, "exclude");
	CHECK_STR(val, "a-b");
	/* an empty key and a bad escape are skipped */
	CHECK(httpreq_query_next(&q, key, sizeof(key), val, sizeof(val)) == 1);
	CHECK_STR(key, "x");
	CHECK_STR(val, "a b");
	CHECK(httpreq_query_next(&q, key, sizeof(key), val, sizeof(val)) == 1);
	CHECK_STR(key, "exclude");
	CHECK_STR(val, "");
	CHECK(httpreq_query_next(&q, key, sizeof(key), val, sizeof(val)) == 0);
	/* a value that does not fit is skipped */
	q = "k=0123456789abcdefXYZ&v=1";
	CHECK(httpreq_query_next(&q, key, sizeof(key), val, sizeof(val)) == 1);
	CHECK_STR(key, "v");
	CHECK_STR(val, "1");
}

TEST_MAIN()
