/* test_authn.c - review answer decoding, the SubjectAccessReview request,
 * and the expiring answer caches of delegated authentication. */
#include <stdlib.h>
#include <string.h>

#include "serve/authn.h"
#include "harness.h"

static void
key_of(unsigned char *key, int n)
{
	memset(key, 0, AUTHN_KEY_LEN);
	key[0] = (unsigned char)n;
	key[1] = (unsigned char)(n >> 8);
}

static struct authn_cache cache;

TEST(cache_hit_and_expiry)
{
	unsigned char k[AUTHN_KEY_LEN];
	char *v = NULL;
	int result = -1;

	authn_cache_clear(&cache);
	key_of(k, 1);
	CHECK(authn_cache_get(&cache, k, 0, &result, &v) == 0);
	authn_cache_put(&cache, k, 1, "{\"username\":\"bob\"}", 10 * NS_PER_S, 0);
	CHECK(authn_cache_get(&cache, k, 0, &result, &v) == 1);
	CHECK(result == 1);
	CHECK_STR(v, "{\"username\":\"bob\"}");
	free(v);
	v = NULL;
	/* alive until just before its expiry, gone at it */
	CHECK(authn_cache_get(&cache, k, 10 * NS_PER_S - 1, &result, NULL) == 1);
	CHECK(authn_cache_get(&cache, k, 10 * NS_PER_S, &result, &v) == 0);
	CHECK(v == NULL);
	CHECK(cache.n == 0);
	/* a different key misses */
	authn_cache_put(&cache, k, 0, NULL, 5, 0);
	key_of(k, 2);
	CHECK(authn_cache_get(&cache, k, 0, &result, &v) == 0);
	authn_cache_clear(&cache);
}

TEST(cache_denials_and_replacement)
{
	unsigned char k[AUTHN_KEY_LEN];
	char *v = NULL;
	int result = -1;

	authn_cache_clear(&cache);
	key_of(k, 7);
	authn_cache_put(&cache, k, 0, "no RBAC rule", AUTHZ_DENY_TTL_NS, 0);
	CHECK(authn_cache_get(&cache, k, 1, &result, &v) == 1);
	CHECK(result == 0);
	CHECK_STR(v, "no RBAC rule");
	free(v);
	v = NULL;
	/* the same question answered again replaces the entry */
	authn_cache_put(&cache, k, 1, NULL, 2 * AUTHZ_DENY_TTL_NS, 1);
	CHECK(cache.n == 1);
	CHECK(authn_cache_get(&cache, k, AUTHZ_DENY_TTL_NS + 1, &result, &v) == 1);
	CHECK(result == 1);
	CHECK(v == NULL);
	authn_cache_clear(&cache);
}

TEST(cache_is_bounded)
{
	unsigned char k[AUTHN_KEY_LEN];
	int result;

	authn_cache_clear(&cache);
	/* key i expires at 100 + i, except key 5 which expires first */
	for (int i = 0; i < AUTHN_CACHE_MAX; i++) {
		key_of(k, i);
		authn_cache_put(&cache, k, 1, "v", i == 5 ? 50 : 100 + i, 0);
	}
	CHECK(cache.n == AUTHN_CACHE_MAX);
	key_of(k, 1000);
	authn_cache_put(&cache, k, 1, "new", 1000, 0);
	CHECK(cache.n == AUTHN_CACHE_MAX);
	/* the entry closest to expiry made room */
	key_of(k, 5);
	CHECK(authn_cache_get(&cache, k, 0, &result, NULL) == 0);
	key_of(k, 1000);
	CHECK(authn_cache_get(&cache, k, 0, &result, NULL) == 1);
	key_of(k, 4);
	CHECK(authn_cache_get(&cache, k, 0, &result, NULL) == 1);
	/* expired entries go first: at 200, keys 0..99 have expired */
	key_of(k, 2000);
	authn_cache_put(&cache, k, 1, "later", 5000, 200);
	CHECK(cache.n == AUTHN_CACHE_MAX - 100 + 1);
	key_of(k, 150);
	CHECK(authn_cache_get(&cache, k, 200, &result, NULL) == 1);
	authn_cache_clear(&cache);
	CHECK(cache.n == 0);
}

#define TR_OK "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\"," \
	"\"spec\":{\"token\":\"secret-token\"},\"status\":{\"authenticated\":true," \
	"\"user\":{\"username\":\"system:serviceaccount:monitoring:prometheus\"," \
	"\"uid\":\"u-1\",\"groups\":[\"system:serviceaccounts\",\"system:authenticated\"]," \
	"\"extra\":{\"authentication.kubernetes.io/pod-name\":[\"prom-0\"]}}," \
	"\"audiences\":[\"https://kubernetes.default.svc\"]}}"

TEST(token_review_authenticated)
{
	struct authn_user u = { NULL, NULL };
	struct errbuf e = { "" };

	CHECK(authn_token_review_decode(TR_OK, strlen(TR_OK), &u, &e) == 1);
	CHECK_STR(u.name, "system:serviceaccount:monitoring:prometheus");
	CHECK_STR(u.info, "{\"username\":\"system:serviceaccount:monitoring:prometheus\","
	    "\"uid\":\"u-1\",\"groups\":[\"system:serviceaccounts\",\"system:authenticated\"],"
	    "\"extra\":{\"authentication.kubernetes.io/pod-name\":[\"prom-0\"]}}");
	/* the token echoed in spec is not kept */
	CHECK(strstr(u.info, "secret-token") == NULL);
	authn_user_free(&u);
	CHECK(u.name == NULL && u.info == NULL);
}

TEST(token_review_rejected)
{
	static const char no[] = "{\"status\":{\"authenticated\":false,\"user\":{},"
	    "\"error\":\"invalid bearer token\"}}";
	static const char bare[] = "{\"status\":{}}";
	struct authn_user u = { NULL, NULL };
	struct errbuf e = { "" };

	CHECK(authn_token_review_decode(no, strlen(no), &u, &e) == 0);
	CHECK_STR(e.msg, "invalid bearer token");
	CHECK(u.name == NULL);
	CHECK(authn_token_review_decode(bare, strlen(bare), &u, &e) == 0);
	CHECK_STR(e.msg, "");
}

TEST(token_review_malformed)
{
	static const char *const bad[] = {
		"",
		"[]",
		"{\"status\":",
		"{} x",
		"{\"kind\":\"TokenReview\"}",
		"{\"status\":[]}",
		"{\"status\":{\"authenticated\":true}}",
		"{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"\"}}}",
		"{\"status\":{\"authenticated\":true,\"user\":{\"username\":7}}}",
		"{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"a\",\"groups\":\"g\"}}}",
		"{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"a\",\"groups\":[1]}}}",
		"{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"a\",\"extra\":[]}}}",
		"{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"a\",\"extra\":{\"k\":\"v\"}}}}",
		/* one strict parser: what Go's encoding/json refuses is refused */
		"{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"a\"}},}",
		"{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"a\x01\"}}}",
		"{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"\xff\"}}}",
		"{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"a\\u0000b\"}}}",
		"{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"a\",\"uid\":01}}}",
	};
	struct authn_user u = { NULL, NULL };
	struct errbuf e;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e.msg[0] = '\0';
		CHECK(authn_token_review_decode(bad[i], strlen(bad[i]), &u, &e) == ERR_INVALID);
		CHECK(e.msg[0] != '\0');
		CHECK(u.name == NULL);
	}
}

TEST(sar_body)
{
	struct authn_user u = { NULL, NULL };
	struct errbuf e = { "" };
	char *body = NULL;

	CHECK(authn_token_review_decode(TR_OK, strlen(TR_OK), &u, &e) == 1);
	CHECK(authn_sar_body(&u, "get", "/metrics", &body, &e) == 0);
	CHECK_STR(body, "{\"apiVersion\":\"authorization.k8s.io/v1\","
	    "\"kind\":\"SubjectAccessReview\",\"spec\":{\"nonResourceAttributes\":"
	    "{\"path\":\"/metrics\",\"verb\":\"get\"},"
	    "\"user\":\"system:serviceaccount:monitoring:prometheus\","
	    "\"groups\":[\"system:serviceaccounts\",\"system:authenticated\"],"
	    "\"uid\":\"u-1\","
	    "\"extra\":{\"authentication.kubernetes.io/pod-name\":[\"prom-0\"]}}}");
	free(body);
	authn_user_free(&u);

	/* a user with a name only; quotes in the path are escaped */
	u.name = strdup("bob");
	u.info = strdup("{\"username\":\"bob\"}");
	CHECK(authn_sar_body(&u, "head", "/a\"b", &body, &e) == 0);
	CHECK_STR(body, "{\"apiVersion\":\"authorization.k8s.io/v1\","
	    "\"kind\":\"SubjectAccessReview\",\"spec\":{\"nonResourceAttributes\":"
	    "{\"path\":\"/a\\\"b\",\"verb\":\"head\"},\"user\":\"bob\"}}");
	free(body);
	authn_user_free(&u);

	u.info = strdup("{\"groups\":[]}");
	body = NULL;
	CHECK(authn_sar_body(&u, "get", "/metrics", &body, &e) == ERR_INVALID);
	CHECK(body == NULL);
	authn_user_free(&u);
}

TEST(sar_decode)
{
	static const char yes[] = "{\"status\":{\"allowed\":true,\"reason\":"
	    "\"RBAC: allowed by ClusterRoleBinding\"}}";
	static const char no[] = "{\"status\":{\"allowed\":false,\"reason\":\"nope\"}}";
	static const char denied[] = "{\"status\":{\"allowed\":false,\"denied\":true}}";
	static const char bad[] = "{\"spec\":{}}";
	struct errbuf e = { "" };

	CHECK(authn_sar_decode(yes, strlen(yes), &e) == 1);
	CHECK(authn_sar_decode(no, strlen(no), &e) == 0);
	CHECK_STR(e.msg, "nope");
	CHECK(authn_sar_decode(denied, strlen(denied), &e) == 0);
	CHECK_STR(e.msg, "");
	CHECK(authn_sar_decode(bad, strlen(bad), &e) == ERR_INVALID);
	CHECK(authn_sar_decode("{\"status\":{\"allowed\":\"true\"}}", 29, &e) == 0);
	CHECK(authn_sar_decode("nope", 4, &e) == ERR_INVALID);
	/* one strict parser: what Go's encoding/json refuses is refused */
	CHECK(authn_sar_decode("{\"status\":{\"allowed\":true,}}", 28, &e) == ERR_INVALID);
	CHECK(authn_sar_decode("{'status':{}}", 13, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "SubjectAccessReview: not valid JSON");
}

TEST(scrub_tokens)
{
	char body[] = "{\"spec\":{\"token\": \"ab\\\"c\\\\d\",\"x\":\"token\"},"
	    "\"note\":\"say \\\"token\\\":\\\"no\\\"\",\"status\":{\"user\":"
	    "{\"username\":\"bob\",\"extra\":{\"token\":[\"kept\"]}}}}";
	char want[] = "{\"spec\":{\"token\": \"xxxxxxxx\",\"x\":\"token\"},"
	    "\"note\":\"say \\\"token\\\":\\\"no\\\"\",\"status\":{\"user\":"
	    "{\"username\":\"bob\",\"extra\":{\"token\":[\"kept\"]}}}}";
	struct authn_user u = { NULL, NULL };
	struct errbuf e = { "" };
	char tr[] = TR_OK;

	authn_scrub_tokens(body, strlen(body));
	CHECK_STR(body, want);
	/* a scrubbed answer still decodes, without the token anywhere */
	authn_scrub_tokens(tr, strlen(tr));
	CHECK(strstr(tr, "secret-token") == NULL);
	CHECK(authn_token_review_decode(tr, strlen(tr), &u, &e) == 1);
	CHECK_STR(u.name, "system:serviceaccount:monitoring:prometheus");
	authn_user_free(&u);
	/* cut short: nothing past the end is touched */
	char cut[] = "{\"token\":\"abc";
	authn_scrub_tokens(cut, 12);
	CHECK_STR(cut, "{\"token\":\"xxc");
}

TEST_MAIN()
