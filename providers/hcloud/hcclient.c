/* hcclient.c - requests to the Hetzner Cloud API: token, endpoint, paging,
 * error mapping, the rate-limit bucket and the batched action poll. */
#include "hcclient.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "base/backoff.h"
#include "hcbucket.h"
#include "http/http.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/numparse.h"
#include "base/readfile.h"
#include "base/urlesc.h"
#include "base/xalloc.h"

#define HCCLIENT_PATH_MAX 256         /* bytes of a request path in messages */
#define HCCLIENT_POLL_FIRST_NS (250 * NS_PER_MS) /* first look at a new action */
#define HCCLIENT_POLL_MAX_NS (2 * NS_PER_S)      /* then doubling up to this */
#define HCCLIENT_CONFLICT_BASE_NS (500 * NS_PER_MS)
#define HCCLIENT_CONFLICT_CAP_NS (4 * NS_PER_S)

/* An action someone waits for; shared by every waiter of the same id. */
struct hcclient_pending {
	int64_t id;
	int refs;
	int done;
	int err;                          /* 0 or the ERR_* it ended with */
	char msg[ERRBUF_MAX];
	struct hcclient_pending *next;
};

struct hcclient {
	char *endpoint;                   /* no trailing '/' */
	char *token_file;
	char *ca_file;                    /* NULL for plain http */
	char *user_agent_header;
	long timeout_ms;
	int plain;
	struct stop *stop;
	struct http_tls tls;

	pthread_mutex_t token_mu;         /* the token and what it was read from */
	char *token;                      /* NULL: none readable */
	struct stat token_st;
	int token_have_st;
	char token_err[ERRBUF_MAX];       /* why there is none */
	int token_refused;                /* the last answer was 401 */
	uint64_t token_gen;               /* counts the tokens put in force that
	                                     differ from the one before (or
	                                     follow none) */

	pthread_mutex_t pool_mu;          /* idle http clients */
	struct http_client **pool;
	size_t npool, cappool;

	pthread_mutex_t bucket_mu;
	struct hcbucket bucket;

	pthread_mutex_t act_mu;           /* the actions waited for */
	pthread_cond_t act_cv;
	struct hcclient_pending *pending;
	int polling;                      /* a waiter is polling for everyone */

	uint64_t requests;                /* atomic */
};

static struct metric *hcclient_m_requests, *hcclient_m_remaining, *hcclient_m_waits;
static pthread_once_t hcclient_metrics_once = PTHREAD_ONCE_INIT;

static void
hcclient_metrics_init(void)
{
	hcclient_m_requests = metrics_counter("bootccm_hcloud_requests_total",
	    "Requests to the Hetzner Cloud API, by method and HTTP status (0: no answer).",
	    "method,code");
	hcclient_m_remaining = metrics_gauge("bootccm_hcloud_ratelimit_remaining",
	    "Requests left in the Hetzner Cloud project's rate limit, by the client's model.",
	    NULL);
	hcclient_m_waits = metrics_counter("bootccm_hcloud_ratelimit_waits_total",
	    "Requests the client-side rate limit held back (waited) or refused.", "result");
}

/* --- the endpoint -------------------------------------------------------------- */

/* hcclient_loopback tells whether host (bracketed for IPv6) is loopback. */
static int
hcclient_loopback(const char *host, size_t len)
{
	char h[64];
	unsigned char a[16];

	if (len == 0 || len >= sizeof(h))
		return 0;
	memcpy(h, host, len);
	h[len] = '\0';
	if (strcasecmp(h, "localhost") == 0)
		return 1;
	if (inet_pton(AF_INET, h, a) == 1)
		return a[0] == 127;
	if (h[0] == '[' && h[len - 1] == ']') {
		static const unsigned char lo[16] = { [15] = 1 };
		h[len - 1] = '\0';
		return inet_pton(AF_INET6, h + 1, a) == 1 && memcmp(a, lo, 16) == 0;
	}
	return 0;
}

/* hcclient_endpoint_show copies url into out fit for a message: the user
 * part of its authority ("user:pass@", which may hold a password) replaced
 * by LOG_REDACTED, control bytes escaped (log_escape), at most 200 bytes. */
static const char *
hcclient_endpoint_show(const char *url, char *out, size_t cap)
{
	char buf[HCCLIENT_ENDPOINT_MAX + 16];
	const char *auth = strstr(url, "://"), *at = NULL;

	if (auth != NULL) {
		auth += 3;
		for (const char *p = auth; *p && *p != '/' && *p != '?' && *p != '#'; p++)
			if (*p == '@')
				at = p;
	}
	if (at != NULL)
		snprintf(buf, sizeof(buf), "%.*s%s%.200s", (int)(auth - url), url, LOG_REDACTED, at);
	else
		snprintf(buf, sizeof(buf), "%.200s", url);
	return log_escape(buf, out, cap < 256 ? cap : 256);
}

int
hcclient_endpoint_check(const char *url, int *ret_plain, struct errbuf *e)
{
	char show[256];
	const char *host, *end, *p;
	int plain;

	hcclient_endpoint_show(url, show, sizeof(show));
	if (strncmp(url, "https://", 8) == 0) {
		plain = 0;
		host = url + 8;
	} else if (strncmp(url, "http://", 7) == 0) {
		plain = 1;
		host = url + 7;
	} else {
		return errbuf_set(e, ERR_INVALID, "\"%s\": not an http:// or https:// URL", show);
	}
	if (strlen(url) >= HCCLIENT_ENDPOINT_MAX)
		return errbuf_set(e, ERR_INVALID, "longer than %d bytes", HCCLIENT_ENDPOINT_MAX - 1);
	for (p = url; *p; p++)
		if (*p <= ' ' || *p >= 0x7f || *p == '?' || *p == '#' || *p == '@' || *p == '\\')
			return errbuf_set(e, ERR_INVALID, "\"%s\": no spaces, query, fragment or user "
			    "part allowed", show);
	if (*host == '[') {
		end = strchr(host, ']');
		if (end == NULL)
			return errbuf_set(e, ERR_INVALID, "\"%s\": unclosed '['", show);
		end++;
	} else {
		end = host + strcspn(host, ":/");
	}
	if (end == host)
		return errbuf_set(e, ERR_INVALID, "\"%s\": no host", show);
	if (*end != '\0' && *end != ':' && *end != '/')
		return errbuf_set(e, ERR_INVALID, "\"%s\": bad host", show);
	if (plain && !hcclient_loopback(host, (size_t)(end - host)))
		return errbuf_set(e, ERR_INVALID, "\"%s\": plain http:// is allowed only to a "
		    "loopback address (the token must not cross a network in the clear); use "
		    "https://", show);
	*ret_plain = plain;
	return 0;
}

int
hcclient_new(const struct hcclient_config *cfg, struct hcclient **ret, struct errbuf *e)
{
	const char *ep = cfg->endpoint && *cfg->endpoint ? cfg->endpoint :
	    HCCLIENT_ENDPOINT_DEFAULT;
	struct hcclient *c;
	size_t len;
	int plain = 0, r;

	pthread_once(&hcclient_metrics_once, hcclient_metrics_init);
	if (cfg->token_file == NULL || *cfg->token_file == '\0')
		return errbuf_set(e, ERR_INVALID, "tokenFile is required");
	if ((r = hcclient_endpoint_check(ep, &plain, e)) < 0)
		return errbuf_prefix(e, r, "endpoint");
	c = xcalloc(1, sizeof(*c));
	c->endpoint = xstrdup(ep);
	len = strlen(c->endpoint);
	while (len > 0 && c->endpoint[len - 1] == '/')
		c->endpoint[--len] = '\0';
	c->token_file = xstrdup(cfg->token_file);
	c->plain = plain;
	if (!plain) {
		c->ca_file = xstrdup(cfg->ca_file && *cfg->ca_file ? cfg->ca_file :
		    HCCLIENT_CA_FILE_DEFAULT);
		c->tls.ca_file = c->ca_file;
	}
	c->user_agent_header = xasprintf("User-Agent: %s", cfg->user_agent && *cfg->user_agent ?
	    cfg->user_agent : "bootccm");
	c->stop = cfg->stop;
	c->timeout_ms = cfg->timeout_ns > 0 ? (long)(cfg->timeout_ns / NS_PER_MS) :
	    HCCLIENT_TIMEOUT_MS;
	if (c->timeout_ms < 1)
		c->timeout_ms = 1;
	pthread_mutex_init(&c->token_mu, NULL);
	pthread_mutex_init(&c->pool_mu, NULL);
	pthread_mutex_init(&c->bucket_mu, NULL);
	pthread_mutex_init(&c->act_mu, NULL);
	{
		pthread_condattr_t a;
		pthread_condattr_init(&a);
		pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
		pthread_cond_init(&c->act_cv, &a);
		pthread_condattr_destroy(&a);
	}
	snprintf(c->token_err, sizeof(c->token_err), "tokenFile %s: not read yet",
	    c->token_file);
	hcbucket_init(&c->bucket, HCBUCKET_DEFAULT_LIMIT, HCBUCKET_DEFAULT_RATE,
	    clock_mono_ns());
	*ret = c;
	return 0;
}

void
hcclient_free(struct hcclient *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->npool; i++)
		http_client_free(c->pool[i]);
	free(c->pool);
	if (c->token != NULL) {
		explicit_bzero(c->token, strlen(c->token));
		free(c->token);
	}
	while (c->pending != NULL) {
		struct hcclient_pending *p = c->pending;
		c->pending = p->next;
		free(p);
	}
	pthread_mutex_destroy(&c->token_mu);
	pthread_mutex_destroy(&c->pool_mu);
	pthread_mutex_destroy(&c->bucket_mu);
	pthread_mutex_destroy(&c->act_mu);
	pthread_cond_destroy(&c->act_cv);
	free(c->endpoint);
	free(c->token_file);
	free(c->ca_file);
	free(c->user_agent_header);
	free(c);
}

int
hcclient_plain_http(const struct hcclient *c)
{
	return c->plain;
}

const char *
hcclient_endpoint(const struct hcclient *c)
{
	return c->endpoint;
}

uint64_t
hcclient_requests(const struct hcclient *c)
{
	return __atomic_load_n(&c->requests, __ATOMIC_RELAXED);
}

/* --- the token ------------------------------------------------------------------ */

static int
hcclient_same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	    a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	    a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* hcclient_token_load reads the token file again when it changed. Called
 * with token_mu held. */
static void
hcclient_token_load(struct hcclient *c)
{
	struct stat st;
	struct errbuf e;
	char *buf = NULL;
	size_t len = 0, a, b;

	if (stat(c->token_file, &st) < 0) {
		snprintf(c->token_err, sizeof(c->token_err), "tokenFile %s: %s", c->token_file,
		    strerror(errno));
		goto none;
	}
	if (c->token_have_st && hcclient_same_file(&st, &c->token_st) &&
	    (c->token != NULL || c->token_err[0]))
		return;
	if (readfile(c->token_file, HCCLIENT_TOKEN_MAX, &buf, &len, &e) < 0) {
		snprintf(c->token_err, sizeof(c->token_err), "tokenFile %s", e.msg);
		goto none;
	}
	c->token_st = st;
	c->token_have_st = 1;
	/* one line: surrounding whitespace and the newline are dropped */
	for (a = 0; a < len && (buf[a] == ' ' || buf[a] == '\t' || buf[a] == '\n' ||
	    buf[a] == '\r'); a++)
		;
	for (b = len; b > a && (buf[b - 1] == ' ' || buf[b - 1] == '\t' || buf[b - 1] == '\n' ||
	    buf[b - 1] == '\r'); b--)
		;
	if (a == b) {
		snprintf(c->token_err, sizeof(c->token_err), "tokenFile %s: empty", c->token_file);
		goto drop;
	}
	for (size_t i = a; i < b; i++)
		if (buf[i] <= ' ' || buf[i] >= 0x7f) {
			snprintf(c->token_err, sizeof(c->token_err), "tokenFile %s: not one line of "
			    "printable characters", c->token_file);
			goto drop;
		}
	if (c->token == NULL || strlen(c->token) != b - a ||
	    memcmp(c->token, buf + a, b - a) != 0)
		c->token_gen++;
	if (c->token != NULL) {
		explicit_bzero(c->token, strlen(c->token));
		free(c->token);
	}
	c->token = xstrndup(buf + a, b - a);
	log_add_secret(c->token);
	c->token_err[0] = '\0';
	c->token_refused = 0;
	readfile_free(buf, len);
	return;
drop:
	readfile_free(buf, len);
none:
	if (c->token != NULL) {
		explicit_bzero(c->token, strlen(c->token));
		free(c->token);
		c->token = NULL;
	}
	if (c->token_err[0] == '\0')
		snprintf(c->token_err, sizeof(c->token_err), "tokenFile %s: unusable",
		    c->token_file);
	c->token_have_st = 0;
}

/* hcclient_token_get copies the token into a new buffer (the caller wipes
 * and frees it), or fails naming the file. */
static int
hcclient_token_get(struct hcclient *c, char **ret, struct errbuf *e)
{
	int r = 0;

	pthread_mutex_lock(&c->token_mu);
	hcclient_token_load(c);
	if (c->token == NULL)
		r = errbuf_set(e, ERR_PERMANENT, "%s", c->token_err);
	else
		*ret = xstrdup(c->token);
	pthread_mutex_unlock(&c->token_mu);
	return r;
}

uint64_t
hcclient_token_generation(struct hcclient *c)
{
	uint64_t gen;

	pthread_mutex_lock(&c->token_mu);
	hcclient_token_load(c);
	gen = c->token_gen;
	pthread_mutex_unlock(&c->token_mu);
	return gen;
}

int
hcclient_token_check(struct hcclient *c, struct errbuf *e)
{
	int r = 0;

	pthread_mutex_lock(&c->token_mu);
	hcclient_token_load(c);
	if (c->token == NULL)
		r = errbuf_set(e, ERR_PERMANENT, "%s", c->token_err);
	else if (c->token_refused)
		r = errbuf_set(e, ERR_PERMANENT, "tokenFile %s: the API refuses the token "
		    "(unauthorized)", c->token_file);
	pthread_mutex_unlock(&c->token_mu);
	return r;
}

/* --- mapping and helpers ------------------------------------------------------------ */

int
hcclient_error_map(long status, const char *code)
{
	static const char *const transient[] = {
		"conflict", "locked", "maintenance", "resource_unavailable", "unavailable",
		"server_error", "bad_gateway", NULL,
	};

	if (code != NULL && *code != '\0') {
		if (strcmp(code, "not_found") == 0)
			return ERR_NOT_FOUND;
		if (strcmp(code, "rate_limit_exceeded") == 0)
			return ERR_TOO_MANY_REQUESTS;
		if (strcmp(code, "timeout") == 0)
			return ERR_TIMEOUT;
		for (size_t i = 0; transient[i] != NULL; i++)
			if (strcmp(code, transient[i]) == 0)
				return ERR_TRANSIENT;
		if (status >= 500)
			return status == 504 ? ERR_TIMEOUT : ERR_TRANSIENT;
		return ERR_PERMANENT;
	}
	if (status == 429)
		return ERR_TOO_MANY_REQUESTS;
	if (status == 504 || status == 408)
		return ERR_TIMEOUT;
	if (status >= 500)
		return ERR_TRANSIENT;
	return ERR_PERMANENT;
}

int
hcclient_escape(struct dynbuf *b, const char *s)
{
	return urlesc(b, s, URLESC_UNRESERVED);
}

static struct http_client *
hcclient_http_get(struct hcclient *c)
{
	struct http_client *h = NULL;

	pthread_mutex_lock(&c->pool_mu);
	if (c->npool > 0)
		h = c->pool[--c->npool];
	pthread_mutex_unlock(&c->pool_mu);
	if (h == NULL) {
		/* a stop ends a request in flight within a second (a black-holed
		 * API would otherwise hold the stop for the request timeout) */
		h = http_client_new();
		http_client_set_stop(h, c->stop);
	}
	return h;
}

static void
hcclient_http_put(struct hcclient *c, struct http_client *h)
{
	pthread_mutex_lock(&c->pool_mu);
	if (c->npool == c->cappool) {
		c->cappool = c->cappool ? c->cappool * 2 : 8;
		c->pool = xreallocarray(c->pool, c->cappool, sizeof(*c->pool));
	}
	c->pool[c->npool++] = h;
	pthread_mutex_unlock(&c->pool_mu);
}

/* hcclient_header_num parses a RateLimit-* value; -1 when absent or bad. */
static int64_t
hcclient_header_num(const char *v)
{
	int64_t n;

	if (numparse(v, 0, 0, INT64_MAX, &n, NULL) < 0)
		return -1;
	return n;
}

/* hcclient_bucket_take waits for the bucket's permission to send. */
static int
hcclient_bucket_take(struct hcclient *c, const char *what, struct errbuf *e)
{
	int waited = 0;

	for (;;) {
		int64_t wait;

		pthread_mutex_lock(&c->bucket_mu);
		wait = hcbucket_take(&c->bucket, clock_mono_ns());
		pthread_mutex_unlock(&c->bucket_mu);
		if (wait == 0)
			break;
		if (wait > HCCLIENT_BUCKET_WAIT_MAX_NS) {
			metric_add(hcclient_m_waits, 1, "refused");
			return errbuf_set(e, ERR_TOO_MANY_REQUESTS, "%s: the project's API rate "
			    "limit is used up (next request in %lld s): not sent", what,
			    (long long)((wait + NS_PER_S - 1) / NS_PER_S));
		}
		if (!waited)
			metric_add(hcclient_m_waits, 1, "waited");
		waited = 1;
		if (stop_sleep(c->stop, wait))
			return errbuf_set(e, ERR_CANCELED, "%s: canceled", what);
	}
	return 0;
}

/* hcclient_once sends one request and maps its answer. */
static int
hcclient_once(struct hcclient *c, const char *method, const char *path, const char *body,
    size_t body_len, json_object **ret, struct hcclient_answer *ans, struct errbuf *e)
{
	static const char *const capture[] = { "RateLimit-Limit", "RateLimit-Remaining",
	    "RateLimit-Reset", NULL };
	const char *headers[] = { "Accept: application/json", c->user_agent_header, NULL };
	struct http_request req;
	struct http_response resp;
	struct http_client *h;
	struct hcapi_error env;
	char what[HCCLIENT_PATH_MAX + 16], code[16];
	char *url, *token = NULL;
	json_object *o = NULL;
	int r, has_env;

	snprintf(what, sizeof(what), "%s %.*s", method, HCCLIENT_PATH_MAX, path);
	if ((r = hcclient_token_get(c, &token, e)) < 0)
		return r;
	if ((r = hcclient_bucket_take(c, what, e)) < 0) {
		explicit_bzero(token, strlen(token));
		free(token);
		return r;
	}
	url = xasprintf("%s%s", c->endpoint, path);
	memset(&req, 0, sizeof(req));
	req.method = method;
	req.url = url;
	req.headers = headers;
	req.bearer_token = token;
	req.content_type = body ? "application/json" : NULL;
	req.body = body;
	req.body_len = body_len;
	req.tls = c->plain ? NULL : &c->tls;
	req.connect_timeout_ms = HCCLIENT_CONNECT_TIMEOUT_MS;
	req.timeout_ms = c->timeout_ms;
	if (req.connect_timeout_ms > c->timeout_ms)
		req.connect_timeout_ms = c->timeout_ms;
	req.max_body = HCCLIENT_BODY_MAX;
	req.capture = capture;
	h = hcclient_http_get(c);
	__atomic_add_fetch(&c->requests, 1, __ATOMIC_RELAXED);
	r = http_do(h, &req, &resp, e);
	hcclient_http_put(c, h);
	explicit_bzero(token, strlen(token));
	free(token);
	free(url);
	if (ans != NULL)
		memset(ans, 0, sizeof(*ans));
	if (r < 0) {
		pthread_mutex_lock(&c->bucket_mu);
		hcbucket_failed(&c->bucket);
		pthread_mutex_unlock(&c->bucket_mu);
		metric_add(hcclient_m_requests, 1, method, "0");
		/* http's message names the whole URL: say the request instead */
		{
			char why[ERRBUF_MAX];
			const char *p = strstr(e->msg, ": ");
			snprintf(why, sizeof(why), "%s", p ? p + 2 : e->msg);
			return errbuf_set(e, r, "%s: %s", what, why);
		}
	}
	snprintf(code, sizeof(code), "%ld", resp.status);
	metric_add(hcclient_m_requests, 1, method, code);
	pthread_mutex_lock(&c->bucket_mu);
	hcbucket_answer(&c->bucket, clock_mono_ns(), clock_real_ns() / NS_PER_S, resp.status,
	    hcclient_header_num(resp.captured[0]), hcclient_header_num(resp.captured[1]),
	    hcclient_header_num(resp.captured[2]));
	metric_set(hcclient_m_remaining, c->bucket.tb.tokens);
	pthread_mutex_unlock(&c->bucket_mu);
	if (ans != NULL)
		ans->status = resp.status;
	if (resp.status >= 200 && resp.status < 300) {
		pthread_mutex_lock(&c->token_mu);
		c->token_refused = 0;
		pthread_mutex_unlock(&c->token_mu);
		r = 0;
		if (ret != NULL && resp.status != 204 && (r = hcapi_parse(resp.body, resp.body_len, &o,
		    e)) < 0)
			errbuf_prefix(e, ERR_INVALID, "%s: the answer", what);
		else if (ret != NULL)
			*ret = o;
		http_response_free(&resp);
		return r < 0 ? ERR_INVALID : 0;
	}
	/* the envelope counts only with its content type (B3, hcloud-go) */
	has_env = resp.content_type != NULL &&
	    strncasecmp(resp.content_type, "application/json", 16) == 0 &&
	    hcapi_error_parse(resp.body, resp.body_len, &env) == 0;
	r = hcclient_error_map(resp.status, has_env ? env.code : NULL);
	if (has_env) {
		if (ans != NULL)
			snprintf(ans->code, sizeof(ans->code), "%s", env.code);
		errbuf_set(e, r, "%s: %s: %s (HTTP %ld)", what, env.code, env.message, resp.status);
	} else {
		errbuf_set(e, r, "%s: HTTP %ld without the API's error envelope", what,
		    resp.status);
	}
	if (resp.status == 401) {
		pthread_mutex_lock(&c->token_mu);
		c->token_refused = 1;
		pthread_mutex_unlock(&c->token_mu);
	}
	http_response_free(&resp);
	return r;
}

int
hcclient_do(struct hcclient *c, const char *method, const char *path, json_object *body,
    json_object **ret, struct hcclient_answer *ans, struct errbuf *e)
{
	const char *text = NULL;
	size_t len = 0;
	struct backoff bo;
	struct hcclient_answer a;
	int r;

	if (body != NULL) {
		text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN |
		    JSON_C_TO_STRING_NOSLASHESCAPE);
		len = strlen(text);
	}
	backoff_init(&bo, HCCLIENT_CONFLICT_BASE_NS, HCCLIENT_CONFLICT_CAP_NS, 2, 0.2);
	for (int try = 1;; try++) {
		r = hcclient_once(c, method, path, text, len, ret, &a, e);
		if (r == 0 || try >= HCCLIENT_CONFLICT_TRIES ||
		    (strcmp(a.code, "conflict") != 0 && strcmp(a.code, "locked") != 0))
			break;
		/* another change of the same resource is running: wait for it */
		if (stop_sleep(c->stop, backoff_next(&bo))) {
			r = errbuf_set(e, ERR_CANCELED, "%s %s: canceled", method, path);
			break;
		}
	}
	if (ans != NULL)
		*ans = a;
	return r;
}

/* --- listings ---------------------------------------------------------------------- */

int
hcclient_list(struct hcclient *c, const char *path, const char *key, hcclient_item_fn fn,
    void *arg, struct errbuf *e)
{
	int64_t page = 1;
	int r = 0;

	for (int n = 0; n < HCCLIENT_PAGES_MAX; n++) {
		json_object *root = NULL, *items;
		struct hcapi_page pg;
		size_t nitems;
		char *p, ipath[HCAPI_CODE_MAX + 24];

		p = xasprintf("%s%cpage=%" PRId64 "&per_page=%d", path,
		    strchr(path, '?') ? '&' : '?', page, HCCLIENT_PER_PAGE);
		r = hcclient_do(c, "GET", p, NULL, &root, NULL, e);
		if (r == 0 && ((r = hcapi_page_parse(root, &pg, e)) < 0 ||
		    (r = hcapi_items(root, key, &items, &nitems, e)) < 0))
			errbuf_prefix(e, r, "GET %.200s", p);
		free(p);
		for (size_t i = 0; r == 0 && i < nitems; i++) {
			snprintf(ipath, sizeof(ipath), "%.60s[%zu]", key, (size_t)(page - 1) *
			    HCCLIENT_PER_PAGE + i);
			r = fn(json_object_array_get_idx(items, i), ipath, arg, e);
		}
		json_object_put(root);
		if (r < 0 || pg.next_page == 0)
			return r;
		page = pg.next_page;
	}
	return errbuf_set(e, ERR_TOO_LARGE, "GET %.200s: more than %d pages", path,
	    HCCLIENT_PAGES_MAX);
}

/* --- actions ------------------------------------------------------------------------ */

/* hcclient_action_end records how action a ended (act_mu held). */
static void
hcclient_action_end(struct hcclient *c, const struct hcapi_action *a)
{
	for (struct hcclient_pending *p = c->pending; p != NULL; p = p->next) {
		if (p->id != a->id || p->done)
			continue;
		if (strcmp(a->status, "running") == 0)
			return;
		p->done = 1;
		if (strcmp(a->status, "error") == 0) {
			p->err = ERR_TRANSIENT;
			snprintf(p->msg, sizeof(p->msg), "action %" PRId64 " (%s) failed: %s: %s",
			    a->id, a->command, a->error_code[0] ? a->error_code : "action_failed",
			    a->error_message);
		}
		return;
	}
}

/* hcclient_poll asks for every pending action, HCCLIENT_ACTIONS_PER_POLL
 * ids a request. Called by the one polling waiter, without act_mu. */
static void
hcclient_poll(struct hcclient *c)
{
	int64_t ids[HCCLIENT_ACTIONS_PER_POLL];
	int64_t after = 0;

	for (;;) {
		struct dynbuf path;
		struct errbuf e;
		json_object *root = NULL, *items;
		size_t n = 0, nitems = 0;
		int r;

		/* the next batch: pending ids above the last batch's */
		pthread_mutex_lock(&c->act_mu);
		for (int64_t lo = after;;) {
			int64_t next = INT64_MAX;
			for (struct hcclient_pending *p = c->pending; p; p = p->next)
				if (!p->done && p->id > lo && p->id < next)
					next = p->id;
			if (next == INT64_MAX || n == HCCLIENT_ACTIONS_PER_POLL)
				break;
			ids[n++] = lo = next;
		}
		pthread_mutex_unlock(&c->act_mu);
		if (n == 0)
			return;
		after = ids[n - 1];
		dynbuf_init(&path, 4096);
		for (size_t i = 0; i < n; i++)
			dynbuf_addf(&path, "%sid=%" PRId64, i ? "&" : "/actions?", ids[i]);
		r = hcclient_do(c, "GET", dynbuf_ptr(&path), NULL, &root, NULL, &e);
		dynbuf_free(&path);
		if (r == 0)
			r = hcapi_items(root, "actions", &items, &nitems, &e);
		pthread_mutex_lock(&c->act_mu);
		for (size_t i = 0; r == 0 && i < nitems; i++) {
			struct hcapi_action a;
			char ap[32];
			snprintf(ap, sizeof(ap), "actions[%zu]", i);
			if ((r = hcapi_action_parse(json_object_array_get_idx(items, i), ap, &a,
			    &e)) == 0)
				hcclient_action_end(c, &a);
		}
		for (size_t i = 0; i < n; i++)
			for (struct hcclient_pending *p = c->pending; p; p = p->next) {
				if (p->id != ids[i] || p->done)
					continue;
				if (r < 0) {
					/* no answer about it: its waiters fail and retry
					 * their whole operation later */
					p->done = 1;
					p->err = r;
					snprintf(p->msg, sizeof(p->msg), "waiting for action %" PRId64
					    ": %s", p->id, e.msg);
				} else {
					int listed = 0;
					for (size_t j = 0; j < nitems; j++) {
						json_object *it = json_object_array_get_idx(items, j);
						int64_t id = 0;
						struct errbuf ie;
						if (jsonx_int(it, "", "id", 0, INT64_MAX, 0, &id, &ie) == 0 &&
						    id == p->id)
							listed = 1;
					}
					if (!listed)
						p->done = 1;   /* the API forgot it: it ended long ago */
				}
			}
		pthread_cond_broadcast(&c->act_cv);
		pthread_mutex_unlock(&c->act_mu);
		json_object_put(root);
	}
}

int
hcclient_wait_actions(struct hcclient *c, const int64_t *ids, size_t n, struct errbuf *e)
{
	struct hcclient_pending **mine;
	int64_t deadline = clock_mono_ns() + HCCLIENT_ACTION_TIMEOUT_NS;
	int64_t delay = HCCLIENT_POLL_FIRST_NS;
	int r = 0;

	if (n == 0)
		return 0;
	mine = xcalloc(n, sizeof(*mine));
	pthread_mutex_lock(&c->act_mu);
	for (size_t i = 0; i < n; i++) {
		struct hcclient_pending *p;
		for (p = c->pending; p != NULL && p->id != ids[i]; p = p->next)
			;
		if (p == NULL) {
			p = xcalloc(1, sizeof(*p));
			p->id = ids[i];
			p->next = c->pending;
			c->pending = p;
		}
		p->refs++;
		mine[i] = p;
	}
	for (;;) {
		size_t left = 0;
		for (size_t i = 0; i < n; i++)
			left += !mine[i]->done;
		if (left == 0)
			break;
		if (stop_requested(c->stop)) {
			r = errbuf_set(e, ERR_CANCELED, "waiting for action %" PRId64 ": canceled",
			    ids[0]);
			break;
		}
		if (clock_mono_ns() > deadline) {
			r = errbuf_set(e, ERR_TIMEOUT, "action %" PRId64 ": still running after %lld s",
			    ids[0], (long long)(HCCLIENT_ACTION_TIMEOUT_NS / NS_PER_S));
			break;
		}
		if (!c->polling) {
			/* this waiter polls, for everyone */
			c->polling = 1;
			pthread_mutex_unlock(&c->act_mu);
			if (!stop_sleep(c->stop, delay))
				hcclient_poll(c);
			delay = delay * 2 > HCCLIENT_POLL_MAX_NS ? HCCLIENT_POLL_MAX_NS : delay * 2;
			pthread_mutex_lock(&c->act_mu);
			c->polling = 0;
			pthread_cond_broadcast(&c->act_cv);
		} else {
			struct timespec ts;
			int64_t until = clock_mono_ns() + HCCLIENT_POLL_MAX_NS;
			ts.tv_sec = until / NS_PER_S;
			ts.tv_nsec = until % NS_PER_S;
			pthread_cond_timedwait(&c->act_cv, &c->act_mu, &ts);
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct hcclient_pending *p = mine[i], **pp;
		if (r == 0 && p->done && p->err < 0)
			r = errbuf_set(e, p->err, "%s", p->msg);
		if (--p->refs > 0)
			continue;
		for (pp = &c->pending; *pp != p; pp = &(*pp)->next)
			;
		*pp = p->next;
		free(p);
	}
	pthread_mutex_unlock(&c->act_mu);
	free(mine);
	return r;
}
