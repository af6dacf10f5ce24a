/* client.c - JSON requests to the API server with kubeconfig credentials. */
#include "kube/client.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

int
kube_client_init(struct kube_client *c, struct kubeconfig *kc, const char *user_agent)
{
	memset(c, 0, sizeof(*c));
	if ((c->http = http_client_new()) == NULL)
		return ERR_NOMEM;
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
	return 0;
}

void
kube_client_cleanup(struct kube_client *c)
{
	http_client_free(c->http);
	memset(c, 0, sizeof(*c));
}

int
kube_status_decode(long status, const char *body, size_t len, struct errbuf *e)
{
	int code = http_status_err(status);
	json_tokener *tok;
	json_object *o = NULL, *v;
	const char *msg = NULL, *reason = NULL;

	if (body && len && (tok = json_tokener_new()) != NULL) {
		o = json_tokener_parse_ex(tok, body, (int)(len > 65536 ? 65536 : len));
		json_tokener_free(tok);
	}
	if (o && json_object_is_type(o, json_type_object)) {
		if (json_object_object_get_ex(o, "message", &v) &&
		    json_object_is_type(v, json_type_string))
			msg = json_object_get_string(v);
		if (json_object_object_get_ex(o, "reason", &v) &&
		    json_object_is_type(v, json_type_string))
			reason = json_object_get_string(v);
	}
	if (status == 409 && reason && strcmp(reason, "AlreadyExists") == 0)
		code = ERR_EXISTS;
	if (msg)
		errbuf_set(e, code, "%s (HTTP %ld%s%s)", msg, status,
		    reason ? ", " : "", reason ? reason : "");
	else
		errbuf_set(e, code, "HTTP %ld", status);
	json_object_put(o);
	return code;
}

/* The process-wide client-side rate limit (--kube-api-qps/--kube-api-burst):
 * a token bucket where a caller that finds it empty reserves the next token
 * and sleeps until it is due, so waiters are served in arrival order. */
static pthread_mutex_t kube_rl_lock = PTHREAD_MUTEX_INITIALIZER;
static double kube_rl_qps;      /* 0: unlimited */
static double kube_rl_burst;
static double kube_rl_tokens;
static double kube_rl_last;     /* monotonic seconds of the last refill */

static double
kube_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void
kube_ratelimit_init(double qps, int burst)
{
	pthread_mutex_lock(&kube_rl_lock);
	kube_rl_qps = qps;
	kube_rl_burst = burst < 1 ? 1 : burst;
	kube_rl_tokens = kube_rl_burst;
	kube_rl_last = kube_now_s();
	pthread_mutex_unlock(&kube_rl_lock);
}

double
kube_ratelimit_reserve(void)
{
	double now, wait = 0;

	pthread_mutex_lock(&kube_rl_lock);
	if (kube_rl_qps > 0) {
		now = kube_now_s();
		kube_rl_tokens += (now - kube_rl_last) * kube_rl_qps;
		if (kube_rl_tokens > kube_rl_burst)
			kube_rl_tokens = kube_rl_burst;
		kube_rl_last = now;
		kube_rl_tokens -= 1;
		if (kube_rl_tokens < 0)
			wait = -kube_rl_tokens / kube_rl_qps;
	}
	pthread_mutex_unlock(&kube_rl_lock);
	return wait;
}

void
kube_ratelimit_wait(void)
{
	double wait = kube_ratelimit_reserve();
	struct timespec ts;

	if (wait <= 0)
		return;
	ts.tv_sec = (time_t)wait;
	ts.tv_nsec = (long)((wait - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* kube_send performs one request (rate limited, with credentials) and logs it
 * at -v=6 and up. On 0, *resp holds the answer. */
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
	char *url = NULL, *token = NULL;
	struct timespec t0, t1;
	int r;

	if (asprintf(&url, "%s%s", c->kc->server, path) < 0)
		return ERR_NOMEM;
	req.url = url;
	if (strncmp(url, "https://", 8) == 0)
		req.tls = &c->tls;
	if ((r = kubeconfig_token(c->kc, &token, e)) < 0)
		goto out;
	req.bearer_token = token;
	kube_ratelimit_wait();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = http_do(c->http, &req, resp, e);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (log_enabled(6)) {
		/* like client-go's round trippers: the request line at 6, headers
		 * (credentials masked) at 8, bodies at 9 */
		char ms[32], code[16];
		snprintf(ms, sizeof(ms), "%.0f", (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
		    (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
		snprintf(code, sizeof(code), "%ld", r < 0 ? 0L : resp->status);
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
	if (token) {
		explicit_bzero(token, strlen(token));
		free(token);
	}
	free(url);
	return r;
}

int
kube_request(struct kube_client *c, const char *method, const char *path,
    const char *content_type, const char *body, json_object **ret,
    long *ret_status, struct errbuf *e)
{
	struct http_response resp;
	int r;

	if (ret_status)
		*ret_status = 0;
	r = kube_send(c, method, path, content_type, body, NULL, NULL,
	    KUBE_REQUEST_TIMEOUT_MS, &resp, e);
	if (r < 0)
		return r;
	if (ret_status)
		*ret_status = resp.status;
	if (resp.status < 200 || resp.status > 299) {
		r = kube_status_decode(resp.status, resp.body, resp.body_len, e);
		errbuf_prefix(e, r, "%s %s", method, path);
	} else if (ret) {
		json_tokener *tok = json_tokener_new_ex(KUBE_JSON_DEPTH);
		json_object *o = NULL;
		if (tok == NULL) {
			r = ERR_NOMEM;
		} else {
			o = json_tokener_parse_ex(tok, resp.body, (int)resp.body_len);
			if (o == NULL || json_tokener_get_error(tok) != json_tokener_success ||
			    json_tokener_get_parse_end(tok) != resp.body_len) {
				json_object_put(o);
				o = NULL;
				r = errbuf_set(e, ERR_INVALID, "%s %s: the answer is not valid JSON",
				    method, path);
			}
			json_tokener_free(tok);
		}
		if (o)
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
	int r;

	if (ret_status)
		*ret_status = 0;
	r = kube_send(c, "GET", path, NULL, NULL, on_data, arg, timeout_ms, &resp, e);
	if (r < 0)
		return r;
	if (ret_status)
		*ret_status = resp.status;
	if (resp.status < 200 || resp.status > 299) {
		r = kube_status_decode(resp.status, resp.body, resp.body_len, e);
		errbuf_prefix(e, r, "GET %s", path);
	}
	http_response_free(&resp);
	return r;
}
