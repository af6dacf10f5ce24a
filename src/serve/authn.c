/* authn.c - TokenReview and SubjectAccessReview for the serving endpoint,
 * with small expiring caches. */
#include "serve/authn.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/hash.h>

#include "base/clock.h"
#include "http/http.h"
#include "base/jsonx.h"
#include "base/xalloc.h"

#define AUTHN_JSON_DEPTH 32  /* nesting levels accepted in a review's answer */

#define AUTHN_TOKEN_REVIEWS "/apis/authentication.k8s.io/v1/tokenreviews"
#define AUTHN_SARS "/apis/authorization.k8s.io/v1/subjectaccessreviews"

int
authn_init(struct authn *a, const struct authn_config *cfg, struct errbuf *e)
{
	size_t got = 0;

	memset(a, 0, sizeof(*a));
	while (got < sizeof(a->salt)) {
		ssize_t n = getrandom(a->salt + got, sizeof(a->salt) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errbuf_set(e, ERR_IO, "getrandom: %s", strerror(errno));
		got += (size_t)n;
	}
	kube_client_init(&a->client, cfg->authn_kc, "bootccm/serve");
	kube_client_init(&a->authz_client, cfg->authz_kc, "bootccm/serve");
	a->token_ttl_ns = cfg->token_ttl_ns;
	a->allow_ttl_ns = cfg->allow_ttl_ns;
	a->deny_ttl_ns = cfg->deny_ttl_ns;
	return 0;
}

void
authn_cleanup(struct authn *a)
{
	authn_cache_clear(&a->tokens);
	authn_cache_clear(&a->decisions);
	if (a->client.http)
		kube_client_cleanup(&a->client);
	if (a->authz_client.http)
		kube_client_cleanup(&a->authz_client);
	explicit_bzero(a->salt, sizeof(a->salt));
}

void
authn_user_free(struct authn_user *u)
{
	free(u->name);
	free(u->info);
	u->name = u->info = NULL;
}

/* --- cache ------------------------------------------------------------------ */

static struct authn_cache_entry *
authn_cache_find(struct authn_cache *c, const unsigned char *key)
{
	for (size_t i = 0; i < c->n; i++)
		if (memcmp(c->entries[i].key, key, AUTHN_KEY_LEN) == 0)
			return &c->entries[i];
	return NULL;
}

static void
authn_cache_remove(struct authn_cache *c, struct authn_cache_entry *ent)
{
	free(ent->value);
	*ent = c->entries[--c->n];
	memset(&c->entries[c->n], 0, sizeof(c->entries[c->n]));
}

int
authn_cache_get(struct authn_cache *c, const unsigned char *key, int64_t now_ns,
    int *ret_result, char **ret_value)
{
	struct authn_cache_entry *ent = authn_cache_find(c, key);

	if (ent == NULL)
		return 0;
	if (ent->expires_ns <= now_ns) {
		authn_cache_remove(c, ent);
		return 0;
	}
	if (ret_value)
		*ret_value = ent->value ? xstrdup(ent->value) : NULL;
	*ret_result = ent->result;
	return 1;
}

void
authn_cache_put(struct authn_cache *c, const unsigned char *key, int result,
    const char *value, int64_t expires_ns, int64_t now_ns)
{
	struct authn_cache_entry *ent;
	char *copy = value ? xstrdup(value) : NULL;

	if ((ent = authn_cache_find(c, key)) != NULL) {
		free(ent->value);
	} else {
		for (size_t i = 0; i < c->n;) {
			if (c->entries[i].expires_ns <= now_ns)
				authn_cache_remove(c, &c->entries[i]);
			else
				i++;
		}
		if (c->n < AUTHN_CACHE_MAX) {
			ent = &c->entries[c->n++];
		} else {
			/* full of live answers: forget the one closest to expiry,
			 * which loses the least cached time */
			ent = &c->entries[0];
			for (size_t i = 1; i < c->n; i++)
				if (c->entries[i].expires_ns < ent->expires_ns)
					ent = &c->entries[i];
			free(ent->value);
		}
	}
	memcpy(ent->key, key, AUTHN_KEY_LEN);
	ent->expires_ns = expires_ns;
	ent->result = result;
	ent->value = copy;
}

void
authn_cache_clear(struct authn_cache *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->entries[i].value);
	memset(c, 0, sizeof(*c));
}

/* authn_key hashes a question (a token, a review body) with the process's
 * random salt, so the cache never holds a token or anything that could be
 * checked against a guessed one offline. */
static int
authn_key(const struct authn *a, char kind, const char *data, size_t len,
    unsigned char *key)
{
	size_t n = sizeof(a->salt) + 1 + len;
	unsigned char *buf;
	int r;

	if (len > UINT32_MAX - sizeof(a->salt) - 1)
		return ERR_TOO_LARGE;
	buf = xmalloc(n);
	memcpy(buf, a->salt, sizeof(a->salt));
	buf[sizeof(a->salt)] = (unsigned char)kind;
	memcpy(buf + sizeof(a->salt) + 1, data, len);
	/* the one-shot form: wolfCrypt allocates its own state, whatever size
	 * the library was built with */
	r = wc_Sha256Hash(buf, (unsigned int)n, key) == 0 ? 0 : ERR_INTERNAL;
	explicit_bzero(buf, n);
	free(buf);
	return r;
}

/* --- JSON ------------------------------------------------------------------- */

/* authn_parse parses a review's answer (or a user's info) as one JSON object
 * with jsonx_parse; what names the document in messages. */
static int
authn_parse(const char *what, const char *body, size_t len, json_object **ret,
    struct errbuf *e)
{
	json_object *o;
	int r;

	if (len > AUTHN_ANSWER_MAX)
		return errbuf_set(e, ERR_TOO_LARGE, "%s: the answer exceeds %d bytes", what,
		    AUTHN_ANSWER_MAX);
	if ((r = jsonx_parse(body ? body : "", body ? len : 0, AUTHN_JSON_DEPTH, &o, e)) < 0)
		return errbuf_prefix(e, r, "%s", what);
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return errbuf_set(e, ERR_INVALID, "%s: the answer is not a JSON object", what);
	}
	*ret = o;
	return 0;
}

/* authn_get returns o's member key when it is of type, else NULL: the
 * members whose absence or wrong type only mean "no" (authenticated,
 * allowed) or "nothing to say" (error, reason, uid). */
static json_object *
authn_get(json_object *o, const char *key, json_type type)
{
	json_object *v = NULL;

	if (o == NULL || jsonx_get(o, "", key, type, 0, &v, NULL) < 0)
		return NULL;
	return v;
}

/* authn_string_array tells whether v is an array of strings. */
static int
authn_string_array(json_object *v)
{
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		json_object *s = json_object_array_get_idx(v, i);
		if (!json_object_is_type(s, json_type_string) || !jsonx_string_ok(s))
			return 0;
	}
	return 1;
}

/* authn_wipe_token overwrites spec.token in a parsed review: the API server
 * echoes the spec, and json-c frees its strings without clearing them. */
static void
authn_wipe_token(json_object *o)
{
	json_object *tok = authn_get(authn_get(o, "spec", json_type_object), "token",
	    json_type_string);

	if (tok)
		explicit_bzero((char *)json_object_get_string(tok),
		    (size_t)json_object_get_string_len(tok));
}

/* authn_skip_ws returns the first position from p that is not JSON
 * whitespace. */
static size_t
authn_skip_ws(const char *s, size_t p, size_t len)
{
	while (p < len && (s[p] == ' ' || s[p] == '\t' || s[p] == '\r' || s[p] == '\n'))
		p++;
	return p;
}

void
authn_scrub_tokens(char *body, size_t len)
{
	static const char key[] = "\"token\"";
	const size_t klen = sizeof(key) - 1;

	for (size_t i = 0; i + klen <= len; i++) {
		size_t p;
		/* a key: its opening quote is not escaped (in valid JSON a quote
		 * inside a string always is) */
		if (memcmp(body + i, key, klen) != 0 || (i > 0 && body[i - 1] == '\\'))
			continue;
		p = authn_skip_ws(body, i + klen, len);
		if (p >= len || body[p] != ':')
			continue;
		p = authn_skip_ws(body, p + 1, len);
		if (p >= len || body[p++] != '"')
			continue;
		/* the value's bytes up to its closing quote become 'x': still a
		 * valid JSON string, of the same length, holding nothing */
		for (; p < len && body[p] != '"'; p++) {
			if (body[p] == '\\' && p + 1 < len)
				body[p++] = 'x';
			body[p] = 'x';
		}
		i = p;
	}
}

/* authn_user_from_info fills u from a user's info (JSON). */
static int
authn_user_from_info(const char *info, struct authn_user *u, struct errbuf *e)
{
	json_object *o, *name;
	int r;

	if ((r = authn_parse("user information", info, strlen(info), &o, e)) < 0)
		return r;
	if ((name = authn_get(o, "username", json_type_string)) == NULL) {
		r = errbuf_set(e, ERR_INVALID, "user information has no username");
	} else {
		u->name = xstrdup(json_object_get_string(name));
		u->info = xstrdup(info);
	}
	json_object_put(o);
	return r;
}

int
authn_token_review_decode(const char *body, size_t len, struct authn_user *ret,
    struct errbuf *e)
{
	json_object *o, *st, *user, *v, *info = NULL;
	struct authn_user u = { NULL, NULL };
	const char *s;
	size_t n;
	int r, yes;

	if ((r = authn_parse("TokenReview", body, len, &o, e)) < 0)
		return r;
	authn_wipe_token(o);
	if ((r = jsonx_object(o, "", "status", JSONX_REQUIRED, &st, e)) < 0) {
		errbuf_prefix(e, r, "TokenReview");
		goto out;
	}
	yes = (v = authn_get(st, "authenticated", json_type_boolean)) != NULL &&
	    json_object_get_boolean(v);
	if (!yes) {
		v = authn_get(st, "error", json_type_string);
		r = errbuf_set(e, 0, "%s", v ? json_object_get_string(v) : "");
		goto out;
	}
	if ((r = jsonx_object(st, "status", "user", JSONX_REQUIRED, &user, e)) < 0 ||
	    (r = jsonx_str(user, "status.user", "username", JSONX_REQUIRED, &s, &n, e)) < 0) {
		errbuf_prefix(e, r, "TokenReview: authenticated, but");
		goto out;
	}
	if (n == 0) {
		r = errbuf_set(e, ERR_INVALID,
		    "TokenReview: authenticated, but status.user.username is empty");
		goto out;
	}
	/* keep only what a SubjectAccessReview carries, type-checked */
	info = xcheck(json_object_new_object());
	json_object_object_add(info, "username",
	    json_object_get(authn_get(user, "username", json_type_string)));
	if ((v = authn_get(user, "uid", json_type_string)) != NULL)
		json_object_object_add(info, "uid", json_object_get(v));
	if (jsonx_array(user, "status.user", "groups", 0, &v, &n, NULL) < 0 ||
	    (v && !authn_string_array(v))) {
		r = errbuf_set(e, ERR_INVALID,
		    "TokenReview: status.user.groups is not a list of strings");
		goto out;
	}
	if (v)
		json_object_object_add(info, "groups", json_object_get(v));
	if (jsonx_object(user, "status.user", "extra", 0, &v, NULL) < 0) {
		r = errbuf_set(e, ERR_INVALID,
		    "TokenReview: status.user.extra is not a map of string lists");
		goto out;
	}
	if (v) {
		json_object_object_foreach(v, key, val) {
			(void)key;
			if (val && (!json_object_is_type(val, json_type_array) ||
			    !authn_string_array(val))) {
				r = errbuf_set(e, ERR_INVALID,
				    "TokenReview: status.user.extra is not a map of string lists");
				goto out;
			}
		}
		json_object_object_add(info, "extra", json_object_get(v));
	}
	s = json_object_to_json_string_ext(info,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (s == NULL)
		xalloc_fatal(__FILE__, __LINE__);
	if (strlen(s) > AUTHN_USER_MAX) {
		r = errbuf_set(e, ERR_TOO_LARGE,
		    "TokenReview: the user's information exceeds %d bytes", AUTHN_USER_MAX);
		goto out;
	}
	if ((r = authn_user_from_info(s, &u, e)) < 0)
		goto out;
	*ret = u;
	r = 1;
out:
	json_object_put(info);
	json_object_put(o);
	return r;
}

int
authn_sar_decode(const char *body, size_t len, struct errbuf *e)
{
	json_object *o, *st, *v;
	int r;

	if ((r = authn_parse("SubjectAccessReview", body, len, &o, e)) < 0)
		return r;
	if ((r = jsonx_object(o, "", "status", JSONX_REQUIRED, &st, e)) < 0) {
		errbuf_prefix(e, r, "SubjectAccessReview");
	} else if ((v = authn_get(st, "allowed", json_type_boolean)) != NULL &&
	    json_object_get_boolean(v)) {
		r = 1;
	} else {
		v = authn_get(st, "reason", json_type_string);
		r = errbuf_set(e, 0, "%s", v ? json_object_get_string(v) : "");
	}
	json_object_put(o);
	return r;
}

int
authn_sar_body(const struct authn_user *u, const char *verb, const char *path,
    char **ret, struct errbuf *e)
{
	json_object *info = NULL, *top = NULL, *spec, *nra, *v;
	const char *s;

	if (u->info == NULL ||
	    authn_parse("user information", u->info, strlen(u->info), &info, NULL) < 0 ||
	    authn_get(info, "username", json_type_string) == NULL) {
		json_object_put(info);
		return errbuf_set(e, ERR_INVALID, "user information is not valid");
	}
	top = xcheck(json_object_new_object());
	spec = xcheck(json_object_new_object());
	nra = xcheck(json_object_new_object());
	json_object_object_add(top, "apiVersion",
	    xcheck(json_object_new_string("authorization.k8s.io/v1")));
	json_object_object_add(top, "kind", xcheck(json_object_new_string("SubjectAccessReview")));
	json_object_object_add(top, "spec", spec);
	json_object_object_add(spec, "nonResourceAttributes", nra);
	json_object_object_add(nra, "path", xcheck(json_object_new_string(path)));
	json_object_object_add(nra, "verb", xcheck(json_object_new_string(verb)));
	json_object_object_add(spec, "user",
	    json_object_get(authn_get(info, "username", json_type_string)));
	if ((v = authn_get(info, "groups", json_type_array)) != NULL)
		json_object_object_add(spec, "groups", json_object_get(v));
	if ((v = authn_get(info, "uid", json_type_string)) != NULL &&
	    json_object_get_string_len(v) > 0)
		json_object_object_add(spec, "uid", json_object_get(v));
	if ((v = authn_get(info, "extra", json_type_object)) != NULL)
		json_object_object_add(spec, "extra", json_object_get(v));
	s = json_object_to_json_string_ext(top,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (s == NULL)
		xalloc_fatal(__FILE__, __LINE__);
	*ret = xstrdup(s);
	json_object_put(top);
	json_object_put(info);
	return 0;
}

/* --- requests --------------------------------------------------------------- */

/* authn_post sends one review with c's credentials (a's TokenReview or
 * SubjectAccessReview client). It does not go
 * through kube_request on purpose: like upstream's delegated authenticator,
 * which gets its own client with high QPS limits, a review must neither wait
 * behind the controllers in the process-wide rate limit nor hold the single
 * serving thread for a whole API request timeout, or the health probes
 * queued behind it would fail while the API server is slow. On 0 the answer
 * was 2xx and *ret holds it. */
static int
authn_post(struct authn *a, struct kube_client *c, const char *path, const char *body,
    int64_t now_ns, struct http_response *ret, struct errbuf *e)
{
	const char *headers[] = { "Accept: application/json", c->user_agent, NULL };
	struct http_request req = {
		.method = "POST",
		.headers = headers,
		.content_type = "application/json",
		.body = body,
		.body_len = strlen(body),
		.connect_timeout_ms = AUTHN_CONNECT_TIMEOUT_MS,
		.timeout_ms = AUTHN_TIMEOUT_MS,
		.max_body = AUTHN_ANSWER_MAX,
	};
	struct http_response resp;
	char *url = NULL, *token = NULL;
	int r;

	if (now_ns < a->paused_until_ns)
		return errbuf_set(e, ERR_TRANSIENT, "POST %s: not sent: the API server did "
		    "not answer a review less than %lld s ago", path,
		    (long long)(AUTHN_PAUSE_NS / NS_PER_S));
	if ((r = kube_client_target(c, path, &req, &url, &token, e)) < 0)
		goto out;
	if ((r = http_do(c->http, &req, &resp, e)) < 0) {
		/* from when the failure is known: a timeout took its time */
		a->paused_until_ns = clock_mono_ns() + AUTHN_PAUSE_NS;
		errbuf_prefix(e, r, "POST %s", path);
		goto out;
	}
	/* a TokenReview's answer echoes the token: gone before anything parses
	 * the answer, so no parser's buffer ever holds a copy */
	if (resp.body)
		authn_scrub_tokens(resp.body, resp.body_len);
	if (resp.status < 200 || resp.status > 299) {
		r = kube_status_decode(resp.status, resp.body, resp.body_len, e);
		errbuf_prefix(e, r, "POST %s", path);
		if (resp.body)
			explicit_bzero(resp.body, resp.body_len);
		http_response_free(&resp);
		goto out;
	}
	*ret = resp;
out:
	kube_client_target_free(url, token);
	return r;
}

/* authn_review_body writes the TokenReview request for token into a malloc'd
 * buffer the caller wipes. The token is escaped by hand rather than through
 * json-c so that no copy of it is left behind in memory json-c frees. */
static int
authn_review_body(const char *token, char **ret, size_t *ret_len)
{
	static const char head[] = "{\"apiVersion\":\"authentication.k8s.io/v1\","
	    "\"kind\":\"TokenReview\",\"spec\":{\"token\":\"";
	static const char tail[] = "\"}}";
	size_t tlen = strlen(token), cap = sizeof(head) + 2 * tlen + sizeof(tail), off;
	char *b;

	for (size_t i = 0; i < tlen; i++)
		if ((unsigned char)token[i] < 0x20 || token[i] == 0x7f)
			return ERR_INVALID;
	b = xmalloc(cap);
	memcpy(b, head, sizeof(head) - 1);
	off = sizeof(head) - 1;
	for (size_t i = 0; i < tlen; i++) {
		if (token[i] == '"' || token[i] == '\\')
			b[off++] = '\\';
		b[off++] = token[i];
	}
	memcpy(b + off, tail, sizeof(tail));
	*ret = b;
	*ret_len = cap;
	return 0;
}

int
authn_authenticate(struct authn *a, const char *token, int64_t now_ns,
    struct authn_user *ret, struct errbuf *e)
{
	unsigned char key[AUTHN_KEY_LEN];
	struct http_response resp;
	struct authn_user u = { NULL, NULL };
	char *body = NULL, *value = NULL;
	size_t body_len = 0;
	int r, result;

	if ((r = authn_key(a, 't', token, strlen(token), key)) < 0)
		return errbuf_set(e, r, "cannot hash the token");
	if (authn_cache_get(&a->tokens, key, now_ns, &result, &value) == 1) {
		if (result == 1) {
			r = value ? authn_user_from_info(value, &u, e) : ERR_INTERNAL;
			if (r == 0) {
				*ret = u;
				r = 1;
			} else {
				errbuf_set(e, r, "cached user information is not valid");
			}
		} else {
			r = errbuf_set(e, 0, "%s", value ? value : "");
		}
		free(value);
		return r;
	}
	if ((r = authn_review_body(token, &body, &body_len)) < 0)
		return errbuf_set(e, r, "the token cannot be sent for review");
	r = authn_post(a, &a->client, AUTHN_TOKEN_REVIEWS, body, now_ns, &resp, e);
	explicit_bzero(body, body_len);
	free(body);
	if (r < 0)
		return r;
	r = authn_token_review_decode(resp.body, resp.body_len, &u, e);
	if (resp.body)
		explicit_bzero(resp.body, resp.body_len);
	http_response_free(&resp);
	if (r < 0)
		return r;
	authn_cache_put(&a->tokens, key, r, r == 1 ? u.info : e->msg,
	    clock_add_ns(now_ns, a->token_ttl_ns), now_ns);
	if (r == 1)
		*ret = u;
	return r;
}

int
authn_authorize(struct authn *a, const struct authn_user *u, const char *verb,
    const char *path, int64_t now_ns, struct errbuf *e)
{
	unsigned char key[AUTHN_KEY_LEN];
	struct http_response resp;
	char *body = NULL, *value = NULL;
	int r, result;

	if ((r = authn_sar_body(u, verb, path, &body, e)) < 0)
		return r;
	/* the whole review is the key, as upstream's webhook authorizer does:
	 * user, groups, uid, extra, verb and path */
	if ((r = authn_key(a, 'd', body, strlen(body), key)) < 0) {
		r = errbuf_set(e, r, "cannot hash the review");
		goto out;
	}
	if (authn_cache_get(&a->decisions, key, now_ns, &result, &value) == 1) {
		r = result == 1 ? 1 : errbuf_set(e, 0, "%s", value ? value : "");
		goto out;
	}
	if ((r = authn_post(a, &a->authz_client, AUTHN_SARS, body, now_ns, &resp, e)) < 0)
		goto out;
	r = authn_sar_decode(resp.body, resp.body_len, e);
	http_response_free(&resp);
	if (r < 0)
		goto out;
	authn_cache_put(&a->decisions, key, r, r == 1 ? NULL : e->msg,
	    clock_add_ns(now_ns, r == 1 ? a->allow_ttl_ns : a->deny_ttl_ns), now_ns);
out:
	free(value);
	free(body);
	return r;
}
