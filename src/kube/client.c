/* client.c - JSON requests to the API server with kubeconfig credentials:
 * retries, preconditioned writes, escaped paths, request metrics. */
#include "kube/client.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <time.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/dynbuf.h"
#include "base/jsonx.h"
#include "kube/flowcontrol.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/urlesc.h"
#include "base/xalloc.h"

#define KUBE_STATUS_MAX 65536  /* bytes: a longer error body is not decoded */
#define KUBE_RV_MAX 64         /* bytes of a resourceVersion kept for a re-read */

/* --- metrics ------------------------------------------------------------------ */

/* client-go's buckets (k8s.io/client-go/tools/metrics users in component-base) */
static const double kube_latency_buckets[] = {
	0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60,
};
#define KUBE_LATENCY_BUCKETS_N (sizeof(kube_latency_buckets) / sizeof(kube_latency_buckets[0]))

static pthread_once_t kube_metrics_once = PTHREAD_ONCE_INIT;
static struct metric *kube_m_requests;   /* rest_client_requests_total */
static struct metric *kube_m_duration;   /* rest_client_request_duration_seconds */
static struct metric *kube_m_ratelimit;  /* rest_client_rate_limiter_duration_seconds */
static struct metric *kube_m_api;        /* bootccm_api_requests_total */

static void
kube_metrics_register(void)
{
	kube_m_requests = metrics_counter("rest_client_requests_total",
	    "Number of HTTP requests, partitioned by status code, method, and host.",
	    "code,host,method");
	kube_m_duration = metrics_histogram("rest_client_request_duration_seconds",
	    "Request latency in seconds. Broken down by verb, and host.",
	    "verb,host", kube_latency_buckets, KUBE_LATENCY_BUCKETS_N);
	kube_m_ratelimit = metrics_histogram("rest_client_rate_limiter_duration_seconds",
	    "Client side rate limiter latency in seconds. Broken down by verb, and host.",
	    "verb,host", kube_latency_buckets, KUBE_LATENCY_BUCKETS_N);
	kube_m_api = metrics_counter("bootccm_api_requests_total",
	    "API server requests by Kubernetes verb, resource and HTTP status code "
	    "(\"<error>\" when no answer arrived); retries count once each.",
	    "verb,resource,code");
}

void
kube_client_metrics_init(void)
{
	pthread_once(&kube_metrics_once, kube_metrics_register);
}

/* --- client ------------------------------------------------------------------- */

void
kube_client_init(struct kube_client *c, struct kubeconfig *kc, const char *user_agent)
{
	const char *h;
	size_t n;

	kube_client_metrics_init();
	memset(c, 0, sizeof(*c));
	c->http = http_client_new();
	c->kc = kc;
	c->tls.ca_pem = kc->ca_pem;
	c->tls.ca_pem_len = kc->ca_pem_len;
	c->tls.cert_pem = kc->client_cert_pem;
	c->tls.cert_pem_len = kc->client_cert_pem_len;
	c->tls.key_pem = kc->client_key_pem;
	c->tls.key_pem_len = kc->client_key_pem_len;
	c->tls.server_name = kc->tls_server_name;
	c->tls.insecure = kc->insecure_skip_tls_verify;
	snprintf(c->user_agent, sizeof(c->user_agent), "User-Agent: %s", user_agent);
	/* the metrics' host label is the URL's host[:port], as client-go's */
	h = kc->server ? kc->server : "";
	if (strstr(h, "://"))
		h = strstr(h, "://") + 3;
	n = strcspn(h, "/");
	if (n >= sizeof(c->host))
		n = sizeof(c->host) - 1;
	memcpy(c->host, h, n);
	c->host[n] = '\0';
	c->max_retries = KUBE_RETRY_MAX;
	backoff_init(&c->retry, KUBE_RETRY_BASE_MS * NS_PER_MS,
	    KUBE_RETRY_CAP_MS * NS_PER_MS, KUBE_RETRY_FACTOR, KUBE_RETRY_JITTER);
}

void
kube_client_set_write_gate(struct kube_client *c, kube_write_gate gate, void *arg)
{
	c->write_gate = gate;
	c->write_gate_arg = arg;
}

struct kube_client *
kube_client_new(struct kubeconfig *kc, const char *user_agent, struct stop *stop,
    kube_write_gate gate, void *gate_arg)
{
	struct kube_client *c = xmalloc(sizeof(*c));

	kube_client_init(c, kc, user_agent);
	kube_client_set_stop(c, stop);
	kube_client_set_write_gate(c, gate, gate_arg);
	return c;
}

void
kube_client_free(struct kube_client *c)
{
	if (c == NULL)
		return;
	kube_client_cleanup(c);
	free(c);
}

void
kube_client_cleanup(struct kube_client *c)
{
	http_client_free(c->http);
	memset(c, 0, sizeof(*c));
}

void
kube_client_set_stop(struct kube_client *c, struct stop *stop)
{
	c->stop = stop;
	http_client_set_stop(c->http, stop);
}

void
kube_client_set_deadline(struct kube_client *c, int64_t deadline_ns)
{
	c->deadline_ns = deadline_ns;
}

void
kube_client_set_ratelimit_class(struct kube_client *c, int cls)
{
	c->rl_class = cls >= 0 && cls < FLOWCONTROL_CLASSES ? cls : FLOWCONTROL_CONTROLLERS;
}

void
kube_client_set_retries(struct kube_client *c, int max_retries, long base_ms,
    long cap_ms)
{
	c->max_retries = max_retries < 0 ? 0 : max_retries;
	backoff_init(&c->retry,
	    (base_ms > 0 ? base_ms : KUBE_RETRY_BASE_MS) * NS_PER_MS,
	    (cap_ms > 0 ? cap_ms : KUBE_RETRY_CAP_MS) * NS_PER_MS,
	    KUBE_RETRY_FACTOR, KUBE_RETRY_JITTER);
}

/* --- Status bodies ------------------------------------------------------------ */

/* kube_status_test_failed tells whether a Status's details.causes name a
 * failed JSON patch test ("testing value /metadata/resourceVersion failed:
 * test failed", from the API server's json-patch library). */
static int
kube_status_test_failed(json_object *o)
{
	json_object *details, *causes;
	size_t n;

	if (jsonx_object(o, "", "details", 0, &details, NULL) < 0 ||
	    jsonx_array(details, "details", "causes", 0, &causes, &n, NULL) < 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const char *msg = NULL;
		if (jsonx_str(json_object_array_get_idx(causes, i), "", "message", 0, &msg,
		    NULL, NULL) == 0 && msg && strstr(msg, "test failed") != NULL)
			return 1;
	}
	return 0;
}

int
kube_status_decode(long status, const char *body, size_t len, struct errbuf *e)
{
	int code = http_status_err(status);
	json_object *o = NULL;
	const char *msg = NULL, *reason = NULL;

	/* the message is a nicety: an answer that is no Status still has its code */
	if (body && len && len <= KUBE_STATUS_MAX &&
	    jsonx_parse(body, len, KUBE_JSON_DEPTH, &o, NULL) < 0)
		o = NULL;
	if (o && json_object_is_type(o, json_type_object)) {
		/* a member of the wrong type is left out, as if absent */
		jsonx_str(o, "", "message", 0, &msg, NULL, NULL);
		jsonx_str(o, "", "reason", 0, &reason, NULL, NULL);
		/* a failed test is a stale precondition, not bad input */
		if (status == 422 && kube_status_test_failed(o))
			code = ERR_CONFLICT;
	}
	if (status == 409 && reason && strcmp(reason, "AlreadyExists") == 0)
		code = ERR_EXISTS;
	if (msg)
		errbuf_set(e, code, "%s (HTTP %ld%s%s)%s", msg, status,
		    reason ? ", " : "", reason ? reason : "",
		    code == ERR_CONFLICT && status == 422 ? ": the object has changed" : "");
	else
		errbuf_set(e, code, "HTTP %ld", status);
	json_object_put(o);
	return code;
}

/* --- request info ------------------------------------------------------------- */

#define KUBE_SEGS_MAX 12

/* kube_go_true tells whether a query value is true for Go's strconv.ParseBool. */
static int
kube_go_true(const char *v, size_t n)
{
	static const char *const t[] = { "1", "t", "T", "true", "TRUE", "True" };

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strlen(t[i]) == n && memcmp(v, t[i], n) == 0)
			return 1;
	return 0;
}

/* kube_query_watch tells whether query (after '?') has watch=<true>. */
static int
kube_query_watch(const char *q)
{
	while (q && *q) {
		size_t n = strcspn(q, "&");
		if (n > 6 && strncmp(q, "watch=", 6) == 0 && kube_go_true(q + 6, n - 6))
			return 1;
		q += n;
		if (*q == '&')
			q++;
	}
	return 0;
}

static void
kube_lower(char *dst, size_t len, const char *s)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++)
		dst[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
	dst[i] = '\0';
}

void
kube_request_info(const char *method, const char *path, char verb[KUBE_VERB_MAX],
    char resource[KUBE_RESOURCE_MAX])
{
	const char *seg[KUBE_SEGS_MAX];
	size_t segl[KUBE_SEGS_MAX], n = 0, i = 0, end;
	const char *p = path ? path : "", *q = strchr(p, '?'), *v;
	const char *name = NULL;

	kube_lower(verb, KUBE_VERB_MAX, method ? method : "");
	resource[0] = '\0';
	end = q ? (size_t)(q - p) : strlen(p);
	for (size_t off = 0; off < end && n < KUBE_SEGS_MAX;) {
		size_t l;
		while (off < end && p[off] == '/')
			off++;
		for (l = 0; off + l < end && p[off + l] != '/'; l++)
			;
		if (l) {
			seg[n] = p + off;
			segl[n++] = l;
		}
		off += l;
	}
#define SEG_IS(k, s) (segl[k] == strlen(s) && memcmp(seg[k], s, segl[k]) == 0)
	/* /api/VERSION/... or /apis/GROUP/VERSION/...; anything else is a
	 * non-resource path such as /version or /healthz */
	if (n >= 1 && SEG_IS(0, "api"))
		i = 2;
	else if (n >= 1 && SEG_IS(0, "apis"))
		i = 3;
	else
		return;
	if (n <= i)
		return;
	if (!strcmp(method, "POST"))
		v = "create";
	else if (!strcmp(method, "GET") || !strcmp(method, "HEAD"))
		v = "get";
	else if (!strcmp(method, "PUT"))
		v = "update";
	else if (!strcmp(method, "PATCH"))
		v = "patch";
	else if (!strcmp(method, "DELETE"))
		v = "delete";
	else
		v = "";
	if (SEG_IS(i, "watch")) {
		v = "watch";
		i++;
	}
	/* namespaces/NS/RESOURCE...; but namespaces/NS/status and /finalize are
	 * the namespace's own subresources */
	if (n > i + 1 && SEG_IS(i, "namespaces") &&
	    n > i + 2 && !SEG_IS(i + 2, "status") && !SEG_IS(i + 2, "finalize"))
		i += 2;
	if (n <= i)
		return;
	if (n > i + 1)
		name = seg[i + 1];
	if (name == NULL) {
		if (!strcmp(v, "get"))
			v = "list";
		else if (!strcmp(v, "delete"))
			v = "deletecollection";
	}
	if (!strcmp(v, "list") && q && kube_query_watch(q + 1))
		v = "watch";
	snprintf(verb, KUBE_VERB_MAX, "%s", v);
	snprintf(resource, KUBE_RESOURCE_MAX, "%.*s", (int)segl[i], seg[i]);
	if (n > i + 2) {
		/* the subresource: everything after the name */
		size_t off = strlen(resource);
		size_t sl = (size_t)(p + end - seg[i + 2]);
		snprintf(resource + off, KUBE_RESOURCE_MAX - off, "/%.*s", (int)sl, seg[i + 2]);
	}
#undef SEG_IS
}

/* --- paths ---------------------------------------------------------------------- */

/* A path being built: the first append that fails sticks, so kube_path
 * checks once at the end. */
struct kube_path_buf {
	struct dynbuf b;
	int r;
};

static void
kube_path_add(struct kube_path_buf *p, const char *s, size_t n)
{
	if (p->r == 0)
		p->r = dynbuf_add(&p->b, s, n);
}

/* kube_path_escape appends s escaped like Go's url.PathEscape (segment) or
 * url.QueryEscape (query). */
static void
kube_path_escape(struct kube_path_buf *b, const char *s, int how)
{
	if (b->r == 0)
		b->r = urlesc(&b->b, s, how);
}

static int
kube_segment_ok(const char *s)
{
	return s && *s && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

int
kube_path(char **ret, const char *api, const char *ns, const char *resource,
    const char *name, const char *subresource, ...)
{
	struct kube_path_buf b = { .r = 0 };
	const char *key, *val;
	char sep = '?';
	va_list ap;

	if (api == NULL || strncmp(api, "/api", 4) != 0 || !kube_segment_ok(resource) ||
	    (ns && !kube_segment_ok(ns)) || (name && !kube_segment_ok(name)) ||
	    (subresource && !kube_segment_ok(subresource)) || (subresource && !name))
		return ERR_INVALID;
	dynbuf_init(&b.b, KUBE_PATH_MAX);
	kube_path_add(&b, api, strlen(api));
	if (ns) {
		kube_path_add(&b, "/namespaces/", 12);
		kube_path_escape(&b, ns, URLESC_SEGMENT);
	}
	kube_path_add(&b, "/", 1);
	kube_path_escape(&b, resource, URLESC_SEGMENT);
	if (name) {
		kube_path_add(&b, "/", 1);
		kube_path_escape(&b, name, URLESC_SEGMENT);
	}
	if (subresource) {
		kube_path_add(&b, "/", 1);
		kube_path_escape(&b, subresource, URLESC_SEGMENT);
	}
	va_start(ap, subresource);
	while ((key = va_arg(ap, const char *)) != NULL) {
		val = va_arg(ap, const char *);
		if (val == NULL)
			continue;
		kube_path_add(&b, &sep, 1);
		kube_path_escape(&b, key, URLESC_QUERY);
		kube_path_add(&b, "=", 1);
		kube_path_escape(&b, val, URLESC_QUERY);
		sep = '&';
	}
	va_end(ap);
	if (b.r < 0) {
		dynbuf_free(&b.b);
		return b.r;
	}
	*ret = dynbuf_take(&b.b, NULL);
	return 0;
}

/* --- retry decisions ------------------------------------------------------------ */

/* kube_curl_text returns the transport's own words in an http_do message
 * ("GET URL: err: TEXT"): a URL holds no spaces, so the first ": " after the
 * first space ends it. Matching there keeps an object name out of it. */
static const char *
kube_curl_text(const char *msg)
{
	const char *sp = msg ? strchr(msg, ' ') : NULL;
	const char *colon = sp ? strstr(sp, ": ") : NULL;

	return colon ? colon + 2 : msg ? msg : "";
}

const char *
kube_retry_reason(const char *method, long status, int err, const char *msg,
    int stream)
{
	int idempotent = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	const char *t;

	if (status == 429)
		return "HTTP 429";
	if (status >= 500 && status <= 599) {
		switch (status) {
		case 500: return "HTTP 500";
		case 501: return NULL;       /* not implemented: permanent */
		case 502: return "HTTP 502";
		case 503: return "HTTP 503";
		case 504: return "HTTP 504";
		default: return "HTTP 5xx";
		}
	}
	if (status != 0)
		return NULL;
	/* No answer. The transport (curl) reports failures as text only, so
	 * the phase is told from its wording, which is the same for every TLS
	 * backend up to the handshake. */
	t = kube_curl_text(msg);
	switch (err) {
	case ERR_TRANSIENT:
		/* connect(2) failed: nothing reached the server; a stream's
		 * caller waits for a server that is away with its own backoff */
		if (strstr(t, "Failed to connect") || strstr(t, "Couldn't connect") ||
		    strstr(t, "Connection refused"))
			return stream ? NULL : "connection refused";
		if (strstr(t, "resolve host") || strstr(t, "resolve proxy"))
			return stream ? NULL : "host name not resolved";
		/* reset, empty reply, cut transfer: the request may have been
		 * processed, so only a read is repeated */
		return idempotent ? "connection reset" : NULL;
	case ERR_TIMEOUT:
		/* a connect or name timeout sent nothing; a request that timed out
		 * after 30 s is the caller's to retry, not ours to multiply */
		if (strstr(t, "Connection timed out") || strstr(t, "Connection timeout") ||
		    strstr(t, "Resolving timed out"))
			return stream ? NULL : "connect timeout";
		return NULL;
	case ERR_TLS:
		/* the handshake comes before the request, so nothing was sent; a
		 * peer that went away during it is transient, a certificate that
		 * does not verify is not */
		if (strstr(t, "reset by peer") || strstr(t, "error state on socket") ||
		    strstr(t, "SSL_ERROR_SYSCALL") || strstr(t, "unexpected eof") ||
		    strstr(t, "Connection refused") || strstr(t, "transport closed") ||
		    strstr(t, "Peer closed") || strstr(t, "Broken pipe"))
			return stream ? NULL : "TLS handshake cut off";
		return NULL;
	default:
		return NULL;
	}
}

/* --- sending -------------------------------------------------------------------- */

/* kube_send performs one attempt (rate limited, with credentials), counts it
 * in the metrics and logs it at -v=6 and up. On 0, *resp holds the answer. */
int
kube_client_target(struct kube_client *c, const char *path, struct http_request *req,
    char **ret_url, char **ret_token, struct errbuf *e)
{
	char *token = NULL;
	int r;

	if ((r = kubeconfig_token(c->kc, &token, e)) < 0)
		return r;
	*ret_url = xasprintf("%s%s", c->kc->server, path);
	*ret_token = token;
	req->url = *ret_url;
	req->tls = strncmp(*ret_url, "https://", 8) == 0 ? &c->tls : NULL;
	req->bearer_token = token;
	return 0;
}

void
kube_client_target_free(char *url, char *token)
{
	if (token) {
		explicit_bzero(token, strlen(token));
		free(token);
	}
	free(url);
}

/* A write gate's question, as http_request.may_send asks it. */
struct kube_gate {
	struct kube_client *c;
	const char *method, *path;
};

static int
kube_gate_open(void *arg)
{
	struct kube_gate *g = arg;

	return g->c->write_gate(g->c->write_gate_arg, g->method, g->path);
}

static int
kube_send(struct kube_client *c, const char *method, const char *path,
    const char *content_type, const char *body, http_on_data on_data, void *arg,
    long timeout_ms, struct http_response *resp, struct errbuf *e)
{
	const char *headers[] = { "Accept: application/json", c->user_agent, NULL };
	struct http_request req = {
		.method = method,
		.headers = headers,
		.content_type = body ? content_type : NULL,
		.body = body,
		.body_len = body ? strlen(body) : 0,
		.timeout_ms = timeout_ms,
		.on_data = on_data,
		.on_data_arg = arg,
	};
	struct kube_gate gate = { c, method, path };
	char *url = NULL, *token = NULL;
	char verb[KUBE_VERB_MAX], resource[KUBE_RESOURCE_MAX], code[16];
	double t0, t1, wait;
	int r;

	if ((r = kube_client_target(c, path, &req, &url, &token, e)) < 0)
		goto out;
	if (c->write_gate != NULL && strcmp(method, "GET") != 0) {
		/* asked by each attempt on its connection, after the rate
		 * limiter's wait: a replica stopped and resumed anywhere before
		 * that point sends nothing */
		req.may_send = kube_gate_open;
		req.may_send_arg = &gate;
		req.refusal = "this replica does not hold the leader Lease";
	}
	t0 = ((double)clock_mono_ns() / 1e9);
	flowcontrol_wait(c->rl_class);
	t1 = ((double)clock_mono_ns() / 1e9);
	wait = t1 - t0;
	metric_observe(kube_m_ratelimit, wait, method, c->host);
	r = http_do(c->http, &req, resp, e);
	t0 = t1;
	t1 = ((double)clock_mono_ns() / 1e9);
	if (r < 0)
		snprintf(code, sizeof(code), "<error>");
	else
		snprintf(code, sizeof(code), "%ld", resp->status);
	kube_request_info(method, path, verb, resource);
	metric_add(kube_m_requests, 1, code, c->host, method);
	metric_add(kube_m_api, 1, verb, resource, code);
	/* a watch's length is the watch's, not the server's latency */
	if (on_data == NULL || r < 0 || resp->status < 200 || resp->status > 299)
		metric_observe(kube_m_duration, t1 - t0, method, c->host);
	if (log_enabled(6)) {
		/* like client-go's round trippers: the request line at 6, headers
		 * (credentials masked) at 8, bodies at 9 */
		char ms[32];
		snprintf(ms, sizeof(ms), "%.0f", (t1 - t0) * 1e3);
		if (r < 0)
			snprintf(code, sizeof(code), "0");
		log_info(6, "HTTP request", "verb", method, "url", url, "status", code,
		    "milliseconds", ms, NULL);
		log_info(8, "Request headers", "Accept", "application/json",
		    "User-Agent", c->user_agent + strlen("User-Agent: "),
		    "Authorization", token ? "Bearer <masked>" : "", NULL);
		if (body)
			log_info(9, "Request body", "body", body, NULL);
		if (r == 0 && resp->body)
			log_info(9, "Response body", "body", resp->body, NULL);
	}
out:
	kube_client_target_free(url, token);
	return r;
}

/* A stream's callback, wrapped to know whether anything was delivered. */
struct kube_stream {
	http_on_data fn;
	void *arg;
	int delivered;
};

static int
kube_stream_cb(const char *buf, size_t len, void *arg)
{
	struct kube_stream *s = arg;

	s->delivered = 1;
	return s->fn(buf, len, s->arg);
}

/* What kube_do tells its callers about the retries it made. */
struct kube_tries {
	int attempts;
	int stopped;   /* retries abandoned because the client is stopping */
	int deadline;  /* retries not made because the deadline would pass */
};

/* kube_do sends a request and retries it per kube_retry_reason. Returns 0
 * with the last answer in *resp (any status), or the last attempt's error
 * when no answer arrived. */
static int
kube_do(struct kube_client *c, const char *method, const char *path,
    const char *content_type, const char *body, http_on_data on_data, void *arg,
    long timeout_ms, struct http_response *resp, struct kube_tries *tries,
    struct errbuf *e)
{
	struct kube_stream st = { on_data, arg, 0 };
	struct errbuf le;
	int r;

	memset(tries, 0, sizeof(*tries));
	backoff_reset(&c->retry);
	for (;;) {
		const char *reason;
		long status = 0, attempt_ms = timeout_ms;
		int64_t delay, now = c->deadline_ns ? clock_mono_ns() : 0;
		char attempt[32], wait[32];

		if (c->deadline_ns) {
			/* like a Go context: a deadline bounds each attempt too */
			int64_t left_ms = (c->deadline_ns - now) / NS_PER_MS;
			if (left_ms <= 0)
				return errbuf_set(e, ERR_TIMEOUT, "%s %s: the deadline passed before "
				    "the request was sent", method, path);
			if (attempt_ms == 0 || left_ms < attempt_ms)
				attempt_ms = (long)left_ms;
		}
		le.msg[0] = '\0';
		r = kube_send(c, method, path, content_type, body,
		    on_data ? kube_stream_cb : NULL, &st, attempt_ms, resp, &le);
		tries->attempts++;
		if (r == 0)
			status = resp->status;
		if (st.delivered || (r == 0 && status >= 200 && status <= 299))
			reason = NULL;
		else
			reason = kube_retry_reason(method, status, r, le.msg, on_data != NULL);
		if (reason == NULL || tries->attempts > c->max_retries)
			break;
		if (stop_requested(c->stop)) {
			tries->stopped = 1;
			break;
		}
		if (r == 0 && resp->retry_after_s > 0)
			delay = (resp->retry_after_s > KUBE_RETRY_AFTER_MAX_S ?
			    KUBE_RETRY_AFTER_MAX_S : resp->retry_after_s) * NS_PER_S;
		else
			delay = backoff_next(&c->retry);
		if (c->deadline_ns && clock_add_ns(clock_mono_ns(), delay) >= c->deadline_ns) {
			tries->deadline = 1;
			break;
		}
		snprintf(attempt, sizeof(attempt), "%d", tries->attempts);
		snprintf(wait, sizeof(wait), "%.0fms", (double)delay / 1e6);
		if (r < 0)
			log_info(2, "Retrying API request", "verb", method, "path", path,
			    "reason", reason, "attempt", attempt, "delay", wait, "err", le.msg,
			    NULL);
		else
			log_info(2, "Retrying API request", "verb", method, "path", path,
			    "reason", reason, "attempt", attempt, "delay", wait, NULL);
		/* keep the answer through the sleep: a stop returns it */
		if (stop_sleep(c->stop, delay)) {
			tries->stopped = 1;
			break;
		}
		if (r == 0)
			http_response_free(resp);
	}
	if (r < 0)
		errbuf_set(e, r, "%s", le.msg);
	return r;
}

/* kube_tries_note appends how the retries ended to a failure's message. */
static void
kube_tries_note(struct errbuf *e, const struct kube_tries *t)
{
	size_t n;

	if (e == NULL || (t->attempts < 2 && !t->stopped && !t->deadline))
		return;
	n = strlen(e->msg);
	snprintf(e->msg + n, sizeof(e->msg) - n, " (%d attempt%s%s)", t->attempts,
	    t->attempts == 1 ? "" : "s", t->stopped ? "; retries abandoned: stopping" :
	    t->deadline ? "; no time left before the deadline" : "");
}

int
kube_request(struct kube_client *c, const char *method, const char *path,
    const char *content_type, const char *body, json_object **ret,
    long *ret_status, struct errbuf *e)
{
	return kube_request_keep(c, method, path, content_type, body, NULL, ret, ret_status,
	    e);
}

int
kube_request_keep(struct kube_client *c, const char *method, const char *path,
    const char *content_type, const char *body, const struct jsonx_keep *fields,
    json_object **ret, long *ret_status, struct errbuf *e)
{
	struct http_response resp;
	struct kube_tries tries;
	int r;

	if (ret_status)
		*ret_status = 0;
	if (body && strlen(body) > KUBE_BODY_MAX)
		return errbuf_set(e, ERR_TOO_LARGE, "%s %s: request body larger than %d bytes",
		    method, path, KUBE_BODY_MAX);
	r = kube_do(c, method, path, content_type, body, NULL, NULL,
	    KUBE_REQUEST_TIMEOUT_MS, &resp, &tries, e);
	if (r < 0) {
		kube_tries_note(e, &tries);
		return r;
	}
	if (ret_status)
		*ret_status = resp.status;
	if (resp.status < 200 || resp.status > 299) {
		r = kube_status_decode(resp.status, resp.body, resp.body_len, e);
		errbuf_prefix(e, r, "%s %s", method, path);
		kube_tries_note(e, &tries);
	} else if (ret) {
		json_object *o;
		if ((r = jsonx_parse_keep(resp.body ? resp.body : "", resp.body_len,
		    KUBE_JSON_DEPTH, fields, &o, e)) < 0)
			errbuf_prefix(e, r, "%s %s: the answer is not valid JSON", method, path);
		else
			*ret = o;
	}
	http_response_free(&resp);
	return r;
}

int
kube_request_stream(struct kube_client *c, const char *path, http_on_data on_data,
    void *arg, long timeout_ms, long *ret_status, struct errbuf *e)
{
	struct http_response resp;
	struct kube_tries tries;
	int r;

	if (ret_status)
		*ret_status = 0;
	r = kube_do(c, "GET", path, NULL, NULL, on_data, arg, timeout_ms, &resp,
	    &tries, e);
	if (r < 0) {
		kube_tries_note(e, &tries);
		return r;
	}
	if (ret_status)
		*ret_status = resp.status;
	if (resp.status < 200 || resp.status > 299) {
		r = kube_status_decode(resp.status, resp.body, resp.body_len, e);
		errbuf_prefix(e, r, "GET %s", path);
		kube_tries_note(e, &tries);
	}
	http_response_free(&resp);
	return r;
}

/* --- writes ------------------------------------------------------------------------- */

/* kube_redact_walk tells whether a string value under o holds a registered
 * secret; with apply, it replaces each such value by its redacted copy. */
static int
kube_redact_walk(json_object *o, int apply)
{
	int found = 0;

	switch (json_object_get_type(o)) {
	case json_type_object: {
		json_object_object_foreach(o, k, v) {
			(void)k;
			found |= kube_redact_walk(v, apply);
			if (found && !apply)
				return 1;
		}
		break;
	}
	case json_type_array:
		for (size_t i = 0, n = json_object_array_length(o); i < n; i++) {
			found |= kube_redact_walk(json_object_array_get_idx(o, i), apply);
			if (found && !apply)
				return 1;
		}
		break;
	case json_type_string: {
		char *clean = log_redact_str(json_object_get_string(o));
		if (clean == NULL)
			break;
		found = 1;
		if (apply && json_object_set_string(o, clean) == 0)
			xalloc_fatal(__FILE__, __LINE__);
		free(clean);
		break;
	}
	default:
		break;
	}
	return found;
}

/* kube_send_json serializes o (compact, '/' unescaped like Go) as the body.
 * Every write of an object goes through here, so this is where a secret a
 * server echoed into a text the controllers write back (a condition's
 * message, an annotation) is redacted: in a copy, o is left as it was. */
static int
kube_send_json(struct kube_client *c, const char *method, const char *path,
    const char *content_type, json_object *o, const struct jsonx_keep *fields,
    json_object **ret, long *ret_status, struct errbuf *e)
{
	json_object *copy = NULL;
	const char *s;
	int r;

	if (kube_redact_walk(o, 0)) {
		if (json_object_deep_copy(o, &copy, NULL) != 0)
			xalloc_fatal(__FILE__, __LINE__);
		kube_redact_walk(copy, 1);
		o = copy;
	}
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
	if (s == NULL)
		xalloc_fatal(__FILE__, __LINE__);  /* json-c fails only out of memory */
	r = kube_request_keep(c, method, path, content_type, s, fields, ret, ret_status, e);
	json_object_put(copy);
	return r;
}

/* kube_json_add adds v to o as member k (or to array o when k is NULL);
 * json-c fails only when out of memory. */
static void
kube_json_add(json_object *o, const char *k, json_object *v)
{
	if ((k ? json_object_object_add(o, k, v) : json_object_array_add(o, v)) < 0)
		xalloc_fatal(__FILE__, __LINE__);
}

/* kube_with_rv returns a new object sharing obj's members (references taken),
 * with a metadata of its own whose resourceVersion is rv, or absent when rv
 * is NULL. obj itself is left as it was. */
static json_object *
kube_with_rv(json_object *obj, const char *rv)
{
	json_object *out = xcheck(json_object_new_object());
	json_object *md = xcheck(json_object_new_object()), *omd = NULL;

	json_object_object_foreach(obj, k, v) {
		if (strcmp(k, "metadata") == 0) {
			omd = v;
			continue;
		}
		kube_json_add(out, k, json_object_get(v));
	}
	if (omd && json_object_is_type(omd, json_type_object)) {
		json_object_object_foreach(omd, mk, mv) {
			if (strcmp(mk, "resourceVersion") == 0)
				continue;
			kube_json_add(md, mk, json_object_get(mv));
		}
	}
	if (rv)
		kube_json_add(md, "resourceVersion", xcheck(json_object_new_string(rv)));
	/* a create without metadata stays without it */
	if (omd == NULL && json_object_object_length(md) == 0) {
		json_object_put(md);
		return out;
	}
	kube_json_add(out, "metadata", md);
	return out;
}

/* kube_patch_merge_keep is kube_patch_merge building fields of the answer. */
static int
kube_patch_merge_keep(struct kube_client *c, const char *path, json_object *patch,
    const char *rv, const struct jsonx_keep *fields, json_object **ret, long *ret_status,
    struct errbuf *e)
{
	json_object *body;
	int r;

	if (ret_status)
		*ret_status = 0;
	if (rv == NULL || *rv == '\0')
		return errbuf_set(e, ERR_INVALID, "PATCH %s: no resourceVersion for the precondition",
		    path);
	if (!json_object_is_type(patch, json_type_object))
		return errbuf_set(e, ERR_INVALID, "PATCH %s: a merge patch must be a JSON object",
		    path);
	body = kube_with_rv(patch, rv);
	r = kube_send_json(c, "PATCH", path, "application/merge-patch+json", body, fields, ret,
	    ret_status, e);
	json_object_put(body);
	return r;
}

static const char *kube_rv(json_object *obj);

/* What an answer is decoded for when only its resourceVersion matters. */
static const struct jsonx_keep kube_keep_rv_md[] = {
	{ "resourceVersion", NULL }, { NULL, NULL },
};
static const struct jsonx_keep kube_keep_rv[] = {
	{ "metadata", kube_keep_rv_md }, { NULL, NULL },
};

/* kube_patch_test_check: a JSON patch whose resourceVersion test failed is
 * answered 422 Invalid like one the object's validation refused, and
 * kube-apiserver names no cause for it (details: {}). One read tells them
 * apart: the object at another version is a conflict (ERR_CONFLICT), else
 * the 422 stands (r). The read is where the patch went (GET works on
 * /status too). */
static int
kube_patch_test_check(struct kube_client *c, const char *path, const char *rv, int r,
    struct errbuf *e)
{
	struct errbuf le = { "" };
	json_object *cur = NULL;
	char *get_path = xstrndup(path, strcspn(path, "?"));
	const char *now;

	if (kube_request_keep(c, "GET", get_path, NULL, NULL, kube_keep_rv, &cur, NULL, &le) == 0 &&
	    (now = kube_rv(cur)) != NULL && strcmp(now, rv) != 0)
		r = errbuf_set(e, ERR_CONFLICT, "PATCH %s: the object has changed "
		    "(resourceVersion %s tested, %s now)", path, rv, now);
	json_object_put(cur);
	free(get_path);
	return r;
}

/* kube_patch_json_do is kube_patch_json; with check 0 a bare 422 is left
 * for the caller to tell apart (kube_patch_retry reads the object anyway). */
static int
kube_patch_json_do(struct kube_client *c, const char *path, json_object *ops,
    const char *rv, int check, json_object **ret, long *ret_status, struct errbuf *e)
{
	json_object *body, *test;
	long status = 0;
	size_t n;
	int r;

	if (ret_status)
		*ret_status = 0;
	if (rv == NULL || *rv == '\0')
		return errbuf_set(e, ERR_INVALID, "PATCH %s: no resourceVersion for the precondition",
		    path);
	if (!json_object_is_type(ops, json_type_array))
		return errbuf_set(e, ERR_INVALID, "PATCH %s: a JSON patch must be an array",
		    path);
	n = json_object_array_length(ops);
	body = xcheck(json_object_new_array_ext((int)n + 1));
	test = xcheck(json_object_new_object());
	kube_json_add(test, "op", xcheck(json_object_new_string("test")));
	kube_json_add(test, "path", xcheck(json_object_new_string("/metadata/resourceVersion")));
	kube_json_add(test, "value", xcheck(json_object_new_string(rv)));
	kube_json_add(body, NULL, test);
	for (size_t i = 0; i < n; i++)
		kube_json_add(body, NULL, json_object_get(json_object_array_get_idx(ops, i)));
	r = kube_send_json(c, "PATCH", path, "application/json-patch+json", body, NULL, ret,
	    &status, e);
	json_object_put(body);
	if (check && r == ERR_INVALID && status == 422)
		r = kube_patch_test_check(c, path, rv, r, e);
	if (ret_status)
		*ret_status = status;
	return r;
}

int
kube_patch_json(struct kube_client *c, const char *path, json_object *ops,
    const char *rv, json_object **ret, long *ret_status, struct errbuf *e)
{
	return kube_patch_json_do(c, path, ops, rv, 1, ret, ret_status, e);
}

int
kube_patch_merge(struct kube_client *c, const char *path, json_object *patch,
    const char *rv, json_object **ret, long *ret_status, struct errbuf *e)
{
	return kube_patch_merge_keep(c, path, patch, rv, NULL, ret, ret_status, e);
}

int
kube_patch_merge_rv(struct kube_client *c, const char *path, json_object *patch,
    const char *rv, char *ret_rv, size_t rv_len, struct errbuf *e)
{
	json_object *o = NULL, *m;
	const char *v;
	size_t n;
	int r;

	if ((r = kube_patch_merge_keep(c, path, patch, rv, kube_keep_rv, &o, NULL, e)) < 0)
		return r;
	if (jsonx_object(o, "", "metadata", JSONX_REQUIRED, &m, e) < 0 ||
	    jsonx_str(m, "metadata", "resourceVersion", JSONX_REQUIRED, &v, &n, e) < 0 ||
	    n == 0 || n >= rv_len) {
		r = errbuf_set(e, ERR_INVALID, "PATCH %s: the answer has no usable "
		    "metadata.resourceVersion", path);
		goto out;
	}
	memcpy(ret_rv, v, n + 1);
out:
	json_object_put(o);
	return r;
}

/* kube_rv returns obj's metadata.resourceVersion or NULL. */
static const char *
kube_rv(json_object *obj)
{
	json_object *md, *rv;

	if (json_object_object_get_ex(obj, "metadata", &md) &&
	    json_object_object_get_ex(md, "resourceVersion", &rv) &&
	    json_object_is_type(rv, json_type_string) && *json_object_get_string(rv))
		return json_object_get_string(rv);
	return NULL;
}

int
kube_list_pages(struct kube_client *c, const char *api, const char *ns,
    const char *resource, const char *field_selector, const char *limit, int max_pages,
    kube_list_fn fn, void *arg, struct errbuf *e)
{
	char *cont = NULL;
	int r = 0;

	for (int page = 0; r == 0; page++) {
		json_object *ans = NULL, *items, *md;
		const char *next;
		char *path;
		size_t n;

		if (max_pages > 0 && page == max_pages) {
			r = errbuf_set(e, ERR_TOO_LARGE, "listing %s: more than %d pages", resource,
			    max_pages);
			break;
		}
		if ((r = kube_path(&path, api, ns, resource, NULL, NULL, "limit", limit,
		    "fieldSelector", field_selector, "continue", cont, NULL)) < 0) {
			errbuf_set(e, r, "listing %s: the continue token does not fit a path", resource);
			break;
		}
		r = kube_request(c, "GET", path, NULL, NULL, &ans, NULL, e);
		free(path);
		if (r < 0)
			break;
		if ((r = jsonx_array(ans, "", "items", 0, &items, &n, e)) < 0) {
			errbuf_prefix(e, r, "the %s list", resource);
			json_object_put(ans);
			break;
		}
		if ((r = fn(items, n, arg, e)) < 0) {
			json_object_put(ans);
			break;
		}
		if ((r = jsonx_object(ans, "", "metadata", 0, &md, e)) < 0 ||
		    (r = jsonx_str(md, "metadata", "continue", 0, &next, NULL, e)) < 0) {
			errbuf_prefix(e, r, "the %s list", resource);
			json_object_put(ans);
			break;
		}
		free(cont);
		cont = next && *next ? xstrdup(next) : NULL;
		json_object_put(ans);
		if (cont == NULL)
			break;
	}
	free(cont);
	return r;
}

int
kube_retry_on_conflict(struct stop *stop, const char *log_path, kube_attempt_fn fn,
    void *arg, struct errbuf *e)
{
	struct backoff b;
	int r;

	backoff_init(&b, KUBE_CONFLICT_BASE_MS * NS_PER_MS, KUBE_CONFLICT_CAP_MS * NS_PER_MS,
	    2.0, 0.1);
	for (int try = 0;; try++) {
		r = fn(try, arg, e);
		if (r != ERR_CONFLICT || try >= KUBE_CONFLICT_RETRIES)
			break;
		if (log_path != NULL) {
			char attempt[16];
			snprintf(attempt, sizeof(attempt), "%d", try + 1);
			log_info(2, "Object changed before the write, re-reading it", "path",
			    log_path, "attempt", attempt, "err", e->msg, NULL);
		}
		if (stop_sleep(stop, backoff_next(&b)))
			break;
	}
	return r;
}

/* One kube_patch_retry: its arguments and what one try tells the next. */
struct kube_patch_try {
	struct kube_client *c;
	const char *path, *get_path;
	kube_patch_fn build;
	void *arg;
	json_object **ret;
	char tested[KUBE_RV_MAX];   /* the version a 422'd JSON patch was tested at */
	struct errbuf refused;      /* that 422's message */
};

/* kube_patch_attempt reads the object, builds the patch and sends it. */
static int
kube_patch_attempt(int attempt, void *arg, struct errbuf *le)
{
	struct kube_patch_try *p = arg;
	json_object *cur = NULL, *patch = NULL, *out = NULL;
	const char *rv;
	int r, t;

	(void)attempt;
	if ((r = kube_request(p->c, "GET", p->get_path, NULL, NULL, &cur, NULL, le)) < 0)
		return r;
	if ((rv = kube_rv(cur)) == NULL) {
		json_object_put(cur);
		return errbuf_set(le, ERR_INVALID, "GET %s: the answer has no "
		    "metadata.resourceVersion", p->get_path);
	}
	if (p->tested[0] != '\0' && strcmp(rv, p->tested) == 0) {
		/* the bare 422 of a JSON patch, and the object did not move:
		 * its validation refused the patch */
		json_object_put(cur);
		*le = p->refused;
		return ERR_INVALID;
	}
	p->tested[0] = '\0';
	t = p->build(cur, &patch, p->arg, le);
	if (t == KUBE_PATCH_NOOP) {
		json_object_put(patch);
		if (p->ret)
			*p->ret = cur;
		else
			json_object_put(cur);
		return 0;
	}
	if (t < 0 || (t != KUBE_PATCH_MERGE && t != KUBE_PATCH_JSON) || patch == NULL) {
		r = t < 0 ? t : errbuf_set(le, ERR_INTERNAL,
		    "PATCH %s: the patch builder returned %d without a patch", p->path, t);
		json_object_put(patch);
		json_object_put(cur);
		return r;
	}
	if (t == KUBE_PATCH_MERGE) {
		r = kube_patch_merge(p->c, p->path, patch, rv, &out, NULL, le);
	} else {
		long status = 0;
		r = kube_patch_json_do(p->c, p->path, patch, rv, 0, &out, &status, le);
		if (r == ERR_INVALID && status == 422 && strlen(rv) < sizeof(p->tested)) {
			/* a failed test or a refused patch: the next read
			 * tells (kube_patch_test_check) */
			memcpy(p->tested, rv, strlen(rv) + 1);
			p->refused = *le;
			r = ERR_CONFLICT;
		}
	}
	json_object_put(patch);
	json_object_put(cur);
	if (r == 0) {
		if (p->ret)
			*p->ret = out;
		else
			json_object_put(out);
	}
	return r;
}

int
kube_patch_retry(struct kube_client *c, const char *path, kube_patch_fn build,
    void *arg, json_object **ret, struct errbuf *e)
{
	struct errbuf le = { "" };
	/* the object is read where it is written: GET works on /status too */
	char *get_path = xstrndup(path, strcspn(path, "?"));
	struct kube_patch_try p = {
		.c = c, .path = path, .get_path = get_path, .build = build, .arg = arg,
		.ret = ret,
	};
	int r = kube_retry_on_conflict(c->stop, path, kube_patch_attempt, &p, &le);

	free(get_path);
	if (r < 0)
		errbuf_set(e, r, "%s", le.msg);
	return r;
}

int
kube_create(struct kube_client *c, const char *path, json_object *obj,
    json_object **ret, struct errbuf *e)
{
	json_object *body;
	int r;

	if (!json_object_is_type(obj, json_type_object))
		return errbuf_set(e, ERR_INVALID, "POST %s: the object is not a JSON object", path);
	body = kube_with_rv(obj, NULL);
	r = kube_send_json(c, "POST", path, "application/json", body, NULL, ret, NULL, e);
	json_object_put(body);
	return r;
}

int
kube_update(struct kube_client *c, const char *path, json_object *obj,
    json_object **ret, struct errbuf *e)
{
	char verb[KUBE_VERB_MAX], resource[KUBE_RESOURCE_MAX];

	if (!json_object_is_type(obj, json_type_object))
		return errbuf_set(e, ERR_INVALID, "PUT %s: the object is not a JSON object", path);
	kube_request_info("PUT", path, verb, resource);
	if (kube_rv(obj) == NULL && strcmp(resource, "leases") == 0)
		return errbuf_set(e, ERR_INVALID, "PUT %s: a Lease update must carry "
		    "metadata.resourceVersion", path);
	return kube_send_json(c, "PUT", path, "application/json", obj, NULL, ret, NULL, e);
}
