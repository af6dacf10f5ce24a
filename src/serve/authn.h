/* authn.h - delegated authentication and authorization of requests to the
 * serving endpoint, the way upstream components delegate them: a bearer
 * token is reviewed by the API server (TokenReview), then the user it names
 * is authorized for a verb on a non-resource path (SubjectAccessReview).
 * Answers are cached briefly, with upstream's default lifetimes.
 *
 * Contract: one struct authn per thread (it owns two kube clients, one for
 * TokenReviews and one for SubjectAccessReviews, as upstream's
 * --authentication-kubeconfig and --authorization-kubeconfig, and its
 * caches; no locking). The kubeconfigs are borrowed and must outlive it. Never
 * logs; out of memory is fatal (xalloc). Answers are parsed with jsonx_parse.
 * Tokens never appear in messages, and the caches hold a salted SHA-256 of
 * each token, never the token; buffers that held a token are wiped, and the
 * token a TokenReview's answer echoes is scrubbed before it is parsed.
 * Functions return 1 for "yes", 0 for a definite "no" from the API server
 * (its reason in e), or a negative ERR_* code when no answer could be had
 * (unreachable, refused, malformed): the caller must not treat that as a
 * "no" for the client, and nothing is cached for it. */
#ifndef BOOTCCM_AUTHN_H
#define BOOTCCM_AUTHN_H

#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/err.h"
#include "kube/client.h"
#include "config/kubeconfig.h"

#define AUTHN_CACHE_MAX 256                  /* entries per cache */
#define AUTHN_TTL_NS (10 * NS_PER_S)         /* reviewed tokens, either answer (upstream's
                                                default; struct authn_config sets it) */
#define AUTHZ_ALLOW_TTL_NS (10 * NS_PER_S)   /* allowed decisions (the same) */
#define AUTHZ_DENY_TTL_NS (10 * NS_PER_S)    /* denied decisions (the same) */
#define AUTHN_TIMEOUT_MS 5000                /* one review, connect included */
#define AUTHN_CONNECT_TIMEOUT_MS 2000
#define AUTHN_PAUSE_NS (2 * NS_PER_S)        /* no reviews after one got no answer */
#define AUTHN_ANSWER_MAX (256 * 1024)        /* bytes: a review's answer */
#define AUTHN_USER_MAX (64 * 1024)           /* bytes: a user's info as JSON */
#define AUTHN_KEY_LEN 32                     /* bytes: SHA-256 */

/* A cache of review answers, keyed by a hash of the question. */
struct authn_cache_entry {
	unsigned char key[AUTHN_KEY_LEN];
	int64_t expires_ns;   /* CLOCK_MONOTONIC */
	int result;           /* 1 yes, 0 no */
	char *value;          /* the user's info (JSON) or the denial reason */
};

struct authn_cache {
	struct authn_cache_entry entries[AUTHN_CACHE_MAX];
	size_t n;
};

/* An authenticated user: the TokenReview's status.user. */
struct authn_user {
	char *name;           /* username */
	char *info;           /* status.user as JSON: username, uid, groups, extra */
};

/* Where the reviews go and how long their answers are kept. */
struct authn_config {
	struct kubeconfig *authn_kc;   /* TokenReviews (--authentication-kubeconfig) */
	struct kubeconfig *authz_kc;   /* SubjectAccessReviews (--authorization-kubeconfig) */
	int64_t token_ttl_ns;          /* reviewed tokens, either answer */
	int64_t allow_ttl_ns;          /* allowed decisions */
	int64_t deny_ttl_ns;           /* denied decisions */
};

struct authn {
	struct kube_client client;        /* TokenReviews */
	struct kube_client authz_client;  /* SubjectAccessReviews */
	int64_t token_ttl_ns, allow_ttl_ns, deny_ttl_ns;
	struct authn_cache tokens;
	struct authn_cache decisions;
	unsigned char salt[AUTHN_KEY_LEN];
	int64_t paused_until_ns;   /* CLOCK_MONOTONIC; see authn_authenticate */
};

/* authn_init prepares a for the API servers cfg names (the same kubeconfig
 * may serve both). Returns 0, or ERR_IO when no random salt can be had. */
int authn_init(struct authn *a, const struct authn_config *cfg, struct errbuf *e);
void authn_cleanup(struct authn *a);

/* authn_authenticate reviews token (now_ns: CLOCK_MONOTONIC). On 1, *ret
 * holds the user (release it with authn_user_free); on 0 the API server said
 * the token is not valid and e holds its reason. A review waits at most
 * AUTHN_TIMEOUT_MS; after one that got no answer at all (timeout, refused),
 * reviews fail at once with ERR_TRANSIENT for AUTHN_PAUSE_NS, so requests
 * queued behind a hung API server cannot hold the caller's thread one
 * timeout each. Cached answers are still used during the pause. */
int authn_authenticate(struct authn *a, const char *token, int64_t now_ns,
    struct authn_user *ret, struct errbuf *e);

/* authn_authorize asks whether u may do verb ("get") on the non-resource
 * path ("/metrics"). On 0, e holds the reason the API server gave ("" when
 * none). */
int authn_authorize(struct authn *a, const struct authn_user *u, const char *verb,
    const char *path, int64_t now_ns, struct errbuf *e);

void authn_user_free(struct authn_user *u);

/* The pieces below are exposed for unit tests and fuzzing. */

/* authn_cache_get looks key up: 1 with *ret_result and a malloc'd copy of the
 * value in *ret_value (may be NULL to skip), or 0 when absent or expired. */
int authn_cache_get(struct authn_cache *c, const unsigned char *key, int64_t now_ns,
    int *ret_result, char **ret_value);

/* authn_cache_put stores a copy of value (may be NULL) until expires_ns,
 * replacing an entry with the same key. When the cache is full, expired
 * entries go first, then the one that would expire soonest. */
void authn_cache_put(struct authn_cache *c, const unsigned char *key, int result,
    const char *value, int64_t expires_ns, int64_t now_ns);

void authn_cache_clear(struct authn_cache *c);

/* authn_scrub_tokens overwrites with 'x' the string value of every "token"
 * member of the JSON text body (a TokenReview echoes its spec.token), in
 * place and at the same length, so the text stays the same JSON otherwise. */
void authn_scrub_tokens(char *body, size_t len);

/* authn_token_review_decode reads a TokenReview answer: 1 with the user, 0
 * with status.error in e, ERR_INVALID for a malformed answer (ERR_TOO_LARGE
 * past AUTHN_ANSWER_MAX bytes, or a user's information past AUTHN_USER_MAX). */
int authn_token_review_decode(const char *body, size_t len, struct authn_user *ret,
    struct errbuf *e);

/* authn_sar_decode reads a SubjectAccessReview answer: 1 allowed, 0 denied
 * (status.reason in e), ERR_INVALID for a malformed answer. */
int authn_sar_decode(const char *body, size_t len, struct errbuf *e);

/* authn_sar_body builds the SubjectAccessReview request for u, verb and path
 * into a malloc'd string. Returns 0 or ERR_INVALID (bad user info). */
int authn_sar_body(const struct authn_user *u, const char *verb, const char *path,
    char **ret, struct errbuf *e);

#endif
