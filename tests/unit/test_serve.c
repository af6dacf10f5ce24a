/* test_serve.c - the serving endpoint's always-allowed path list, check
 * registry, health output and start-up checks (the request parser has
 * test_httpreq.c). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "serve/serve.h"

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
	struct serve_config o;
	struct errbuf e = { "" };

	memset(&o, 0, sizeof(o));
	o.secure_port = 0;
	CHECK(serve_start(&o, NULL, NULL, &e) == 0);
	CHECK(serve_port() == 0);
	serve_stop();
	o.secure_port = 10258;
	o.bind_address = "127.0.0.1";
	o.tls_cert_file = "/nonexistent.crt";
	CHECK(serve_start(&o, NULL, NULL, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "must be given together");
	o.tls_private_key_file = "/nonexistent.key";
	CHECK(serve_start(&o, NULL, NULL, &e) == ERR_IO);
	CHECK_CONTAINS(e.msg, "--tls-cert-file /nonexistent.crt");
	o.tls_cert_file = o.tls_private_key_file = NULL;
	o.always_allow_paths = "/a*b";
	CHECK(serve_start(&o, NULL, NULL, &e) == ERR_INVALID);
	CHECK(serve_port() == 0);
	serve_stop();
}

TEST_MAIN()
