/* http.c - libcurl requests: verification on, caps on answers, no logging. */
#include "http/http.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/dynbuf.h"
#include "base/numparse.h"
#include "base/stop.h"
#include "http/tlsctx.h"
#include "base/xalloc.h"

#define HTTP_SOCKETS_MAX 4  /* sockets of one client tracked for an abort */

struct http_client {
	CURL *h;
	char curl_err[CURL_ERROR_SIZE];
	int aborted;           /* set by http_client_abort from any thread */
	struct stop *stop;     /* http_client_set_stop; NULL: none */
	/* the client's open sockets, so an abort can shut them down and wake a
	 * transfer blocked in them at once; opened and closed through curl's
	 * socket callbacks under the lock, so a number is never reused while an
	 * abort looks at it */
	pthread_mutex_t sock_lock;
	curl_socket_t socks[HTTP_SOCKETS_MAX];
};

/* The state of one transfer, shared with curl's callbacks. */
struct http_xfer {
	const struct http_request *req;
	CURL *h;
	int streaming;         /* 1: 2xx, chunks go to on_data; 0: buffered; -1: unknown yet */
	struct dynbuf body;    /* capped at the request's max_body */
	int too_large;
	int cb_err;            /* a streaming callback's abort code */
	char *content_type;
	char *warning;
	long retry_after_s;
	char *captured[HTTP_CAPTURE_MAX];
	int refused;           /* may_send said 0: nothing was sent */
};

/* A one-shot command's deadline; 0: none. Written once before requests. */
static int64_t http_deadline_ns;

void
http_set_deadline(int64_t deadline_ns)
{
	__atomic_store_n(&http_deadline_ns, deadline_ns, __ATOMIC_RELEASE);
}

int
http_global_init(struct errbuf *e)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return errbuf_set(e, ERR_INTERNAL, "curl_global_init failed");
	return tlsctx_check(e);
}

const char *
http_backend(void)
{
	const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
	return v && v->ssl_version ? v->ssl_version : "none";
}

struct http_client *
http_client_new(void)
{
	struct http_client *c = xcalloc(1, sizeof(*c));

	c->h = xcheck(curl_easy_init());
	pthread_mutex_init(&c->sock_lock, NULL);
	for (int i = 0; i < HTTP_SOCKETS_MAX; i++)
		c->socks[i] = CURL_SOCKET_BAD;
	return c;
}

void
http_client_free(struct http_client *c)
{
	if (c == NULL)
		return;
	curl_easy_cleanup(c->h);  /* closes cached connections through the callback */
	pthread_mutex_destroy(&c->sock_lock);
	free(c);
}

void
http_client_set_stop(struct http_client *c, struct stop *stop)
{
	c->stop = stop;
}

/* http_canceled tells whether c's transfers are to end: aborted, or its
 * stop requested. */
static int
http_canceled(const struct http_client *c)
{
	return __atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE) || stop_requested(c->stop);
}

/* http_shutdown_sockets wakes a transfer blocked in c's sockets at once:
 * http_client_abort's, and the stop's hook while a transfer runs. */
static void
http_shutdown_sockets(void *arg)
{
	struct http_client *c = arg;

	pthread_mutex_lock(&c->sock_lock);
	for (int i = 0; i < HTTP_SOCKETS_MAX; i++)
		if (c->socks[i] != CURL_SOCKET_BAD)
			shutdown(c->socks[i], SHUT_RDWR);
	pthread_mutex_unlock(&c->sock_lock);
}

void
http_client_abort(struct http_client *c)
{
	__atomic_store_n(&c->aborted, 1, __ATOMIC_RELEASE);
	http_shutdown_sockets(c);
}

static curl_socket_t
http_open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct http_client *c = arg;
	curl_socket_t fd;

	(void)purpose;
	pthread_mutex_lock(&c->sock_lock);
	if (http_canceled(c)) {
		pthread_mutex_unlock(&c->sock_lock);
		return CURL_SOCKET_BAD;
	}
	fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
	for (int i = 0; fd >= 0 && i < HTTP_SOCKETS_MAX; i++)
		if (c->socks[i] == CURL_SOCKET_BAD) {
			c->socks[i] = fd;
			break;
		}
	pthread_mutex_unlock(&c->sock_lock);
	return fd < 0 ? CURL_SOCKET_BAD : fd;
}

static int
http_close_socket(void *arg, curl_socket_t fd)
{
	struct http_client *c = arg;
	int r;

	pthread_mutex_lock(&c->sock_lock);
	for (int i = 0; i < HTTP_SOCKETS_MAX; i++)
		if (c->socks[i] == fd)
			c->socks[i] = CURL_SOCKET_BAD;
	r = close(fd);
	pthread_mutex_unlock(&c->sock_lock);
	return r;
}

/* curl calls this at least once a second, even while a watch sits idle or
 * a server accepted the connection and never answers: a stop ends any
 * transfer within a second */
static int
http_progress_cb(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
    curl_off_t ulnow)
{
	struct http_client *c = arg;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return http_canceled(c);
}

void
http_response_free(struct http_response *r)
{
	if (r == NULL)
		return;
	free(r->body);
	free(r->content_type);
	free(r->warning);
	for (int i = 0; i < HTTP_CAPTURE_MAX; i++)
		free(r->captured[i]);
	memset(r, 0, sizeof(*r));
}

int
http_status_err(long status)
{
	if (status >= 200 && status < 300)
		return 0;
	switch (status) {
	case 400: case 405: case 415: case 422: return ERR_INVALID;
	case 401: return ERR_UNAUTHORIZED;
	case 403: return ERR_FORBIDDEN;
	case 404: return ERR_NOT_FOUND;
	case 409: return ERR_CONFLICT;
	case 410: return ERR_GONE;
	case 413: return ERR_TOO_LARGE;
	case 429: return ERR_TOO_MANY_REQUESTS;
	case 501: return ERR_NOT_IMPLEMENTED;
	case 504: return ERR_TIMEOUT;
	}
	if (status >= 500 && status < 600)
		return ERR_TRANSIENT;
	return ERR_INVALID;
}

int
http_host_is_local(const char *url)
{
	CURLU *u = xcheck(curl_url());
	char *host = NULL;
	int local = 0;
	unsigned char a[16];

	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
		goto out;
	if (strcasecmp(host, "localhost") == 0) {
		local = 1;
	} else if (inet_pton(AF_INET, host, a) == 1) {
		local = a[0] == 127 || (a[0] == 169 && a[1] == 254);
	} else if (host[0] == '[') {
		char h6[64];
		size_t l = strlen(host);
		if (l < 3 || l - 2 >= sizeof(h6))
			goto out;
		memcpy(h6, host + 1, l - 2);
		h6[l - 2] = '\0';
		if (inet_pton(AF_INET6, h6, a) == 1) {
			static const unsigned char lo[16] = { [15] = 1 };
			static const unsigned char ec2[16] = { 0xfd, 0x00, 0x0e, 0xc2,
			    [15] = 0x54, [14] = 0x02 };
			local = memcmp(a, lo, 16) == 0 || memcmp(a, ec2, 16) == 0 ||
			    (a[0] == 0xfe && (a[1] & 0xc0) == 0x80);
		}
	}
out:
	curl_free(host);
	curl_url_cleanup(u);
	return local;
}

static size_t
http_write_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct http_xfer *x = arg;
	size_t n = size * nmemb;

	if (x->streaming < 0) {
		/* stream only successful answers: an error's Status body is kept */
		long status = 0;
		curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
		x->streaming = x->req->on_data && status >= 200 && status < 300;
	}
	if (x->streaming) {
		int r = x->req->on_data(ptr, n, x->req->on_data_arg);
		if (r < 0) {
			x->cb_err = r;
			return 0;
		}
		return n;
	}
	if (dynbuf_add(&x->body, ptr, n) < 0) {
		x->too_large = 1;
		return 0;
	}
	return n;
}

/* http_header_value returns a malloc'd copy of a header's value if line is
 * "name: value", else NULL. */
static char *
http_header_value(const char *line, size_t n, const char *name)
{
	size_t nl = strlen(name);

	if (n <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return NULL;
	line += nl + 1;
	n -= nl + 1;
	while (n && (*line == ' ' || *line == '\t'))
		line++, n--;
	while (n && (line[n - 1] == '\r' || line[n - 1] == '\n' || line[n - 1] == ' '))
		n--;
	if (n > HTTP_HEADER_MAX)
		n = HTTP_HEADER_MAX;
	return xstrndup(line, n);
}

static size_t
http_header_cb(char *line, size_t size, size_t nmemb, void *arg)
{
	struct http_xfer *x = arg;
	size_t n = size * nmemb;
	char *v;

	if (n >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		/* a new response (after 100 Continue): forget what came before */
		free(x->content_type);
		free(x->warning);
		x->content_type = x->warning = NULL;
		x->retry_after_s = -1;
		for (int i = 0; i < HTTP_CAPTURE_MAX; i++) {
			free(x->captured[i]);
			x->captured[i] = NULL;
		}
		return n;
	}
	for (int i = 0; x->req->capture && x->req->capture[i] && i < HTTP_CAPTURE_MAX; i++)
		if ((v = http_header_value(line, n, x->req->capture[i])) != NULL) {
			free(x->captured[i]);
			x->captured[i] = v;
			break;
		}
	if ((v = http_header_value(line, n, "Content-Type")) != NULL) {
		free(x->content_type);
		x->content_type = v;
	} else if ((v = http_header_value(line, n, "Warning")) != NULL) {
		if (x->warning == NULL)
			x->warning = v;
		else
			free(v);
	} else if ((v = http_header_value(line, n, "Retry-After")) != NULL) {
		int64_t s;
		if (numparse(v, 0, 0, LONG_MAX, &s, NULL) == 0)
			x->retry_after_s = (long)s;
		free(v);
	}
	return n;
}

static int
http_curl_err(CURLcode rc)
{
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		return ERR_TIMEOUT;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_SSL_ENGINE_INITFAILED:
		return ERR_TLS;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_BAD_FUNCTION_ARGUMENT:
		return ERR_INVALID;
	case CURLE_NOT_BUILT_IN:
		return ERR_UNSUPPORTED;
	default:
		return ERR_TRANSIENT;
	}
}

/* http_server_name points the transfer at tls->server_name: the URL's host
 * becomes the name (so SNI and verification use it) and CONNECT_TO keeps the
 * connection on the original host and port. */
static int
http_server_name(CURL *h, const char *url, const char *name,
    struct curl_slist **connect_to, struct errbuf *e)
{
	CURLU *u = xcheck(curl_url());
	char *host = NULL, *port = NULL, *nurl = NULL, *entry = NULL;
	int r = 0;

	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
		r = errbuf_set(e, ERR_INVALID, "%s: not a valid URL", url);
		goto out;
	}
	if (strcasecmp(host, name) == 0)
		goto out;
	if (curl_url_set(u, CURLUPART_HOST, name, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_URL, &nurl, 0) != CURLUE_OK) {
		r = errbuf_set(e, ERR_INVALID, "tls-server-name \"%s\" is not a valid host name",
		    name);
		goto out;
	}
	entry = xasprintf("%s:%s:%s:%s", name, port, host, port);
	*connect_to = xcheck(curl_slist_append(NULL, entry));
	curl_easy_setopt(h, CURLOPT_URL, nurl);
	curl_easy_setopt(h, CURLOPT_CONNECT_TO, *connect_to);
out:
	free(entry);
	curl_free(nurl);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return r;
}

/* http_prereq_cb asks the request's may_send on the connection curl is
 * about to write the request to (CURLOPT_PREREQFUNCTION): the last moment
 * before anything is sent, after connection setup and rate limiting. */
static int
http_prereq_cb(void *arg, char *primary_ip, char *local_ip, int primary_port,
    int local_port)
{
	struct http_xfer *x = arg;

	(void)primary_ip;
	(void)local_ip;
	(void)primary_port;
	(void)local_port;
	if (x->req->may_send(x->req->may_send_arg))
		return CURL_PREREQFUNC_OK;
	x->refused = 1;
	return CURL_PREREQFUNC_ABORT;
}

int
http_do(struct http_client *c, const struct http_request *req,
    struct http_response *ret, struct errbuf *e)
{
	struct http_xfer x = { .req = req, .h = c->h, .streaming = -1, .retry_after_s = -1 };
	struct stop_hook hook = { http_shutdown_sockets, c, NULL };
	size_t cap = req->max_body ? req->max_body : HTTP_BODY_MAX;
	struct curl_slist *hdrs = NULL, *connect_to = NULL;
	char *auth = NULL, *ctype = NULL;
	const char *method = req->method ? req->method : "GET";
	CURL *h = c->h;
	CURLcode rc;
	long connect_ms = req->connect_timeout_ms ? req->connect_timeout_ms :
	    (long)HTTP_CONNECT_TIMEOUT_MS, timeout_ms = req->timeout_ms;
	int64_t deadline = __atomic_load_n(&http_deadline_ns, __ATOMIC_ACQUIRE);
	int r = 0;

	dynbuf_init(&x.body, cap);
	if (http_canceled(c))
		return errbuf_set(e, ERR_CANCELED, "%s %s: canceled", method, req->url);
	if (deadline != 0) {
		/* rounded up: curl's timer starts after this, so a transfer it
		 * times out has run to the deadline, not a hair short of it */
		int64_t left_ns = deadline - clock_mono_ns();
		int64_t left_ms = (left_ns + NS_PER_MS - 1) / NS_PER_MS;
		/* curl's timers count whole milliseconds on a clock of their own
		 * and may end a transfer up to one early: less than that left is
		 * no time to send a request in */
		if (left_ns < NS_PER_MS)
			return errbuf_set(e, ERR_TIMEOUT, "%s %s: not sent: the deadline passed",
			    method, req->url);
		if (timeout_ms == 0 || timeout_ms > left_ms)
			timeout_ms = (long)left_ms;
		if (connect_ms > left_ms)
			connect_ms = (long)left_ms;
	}
	curl_easy_reset(h);
	c->curl_err[0] = '\0';
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->curl_err);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_URL, req->url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, NULL);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	if (req->low_speed_time_s > 0) {
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, req->low_speed_time_s);
	}
	if (http_host_is_local(req->url))
		curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_write_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, http_header_cb);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, http_progress_cb);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, http_open_socket);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, c);
	curl_easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, http_close_socket);
	curl_easy_setopt(h, CURLOPT_CLOSESOCKETDATA, c);
	if (req->may_send != NULL) {
		curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, http_prereq_cb);
		curl_easy_setopt(h, CURLOPT_PREREQDATA, &x);
	}

	/* verification is on unless the user's configuration says otherwise */
	curl_easy_setopt(h, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	if (req->tls) {
		if ((r = tlsctx_apply(h, req->tls, e)) < 0)
			goto out;
		if (req->tls->insecure) {
			curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
			curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
		}
		if (req->tls->server_name && *req->tls->server_name &&
		    (r = http_server_name(h, req->url, req->tls->server_name,
		    &connect_to, e)) < 0)
			goto out;
	}

	if (strcmp(method, "GET") == 0) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else if (strcmp(method, "HEAD") == 0) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else {
		if (strcmp(method, "POST") != 0)
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body ? req->body : "");
	}

	/* no "Expect: 100-continue" round trip before bodies */
	hdrs = xcheck(curl_slist_append(hdrs, "Expect:"));
	if (req->content_type) {
		ctype = xasprintf("Content-Type: %s", req->content_type);
		xcheck(curl_slist_append(hdrs, ctype));
	}
	if (req->bearer_token) {
		auth = xasprintf("Authorization: Bearer %s", req->bearer_token);
		xcheck(curl_slist_append(hdrs, auth));
	}
	for (const char *const *hp = req->headers; hp && *hp; hp++)
		xcheck(curl_slist_append(hdrs, *hp));
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);

	/* a stop wakes the transfer at once (its sockets shut down), and
	 * the progress callback sees it within a second wherever it waits */
	if (stop_hook_add(c->stop, &hook)) {
		r = errbuf_set(e, ERR_CANCELED, "%s %s: canceled", method, req->url);
		goto out;
	}
	rc = curl_easy_perform(h);
	stop_hook_remove(c->stop, &hook);
	if (rc == CURLE_OUT_OF_MEMORY)
		xalloc_fatal(__FILE__, __LINE__);
	if (rc != CURLE_OK) {
		if (x.refused)
			r = errbuf_set(e, ERR_CANCELED, "%s %s: not sent: %s", method, req->url,
			    req->refusal ? req->refusal : "refused before sending");
		else if (rc == CURLE_ABORTED_BY_CALLBACK || http_canceled(c))
			r = errbuf_set(e, ERR_CANCELED, "%s %s: canceled", method, req->url);
		else if (x.too_large)
			r = errbuf_set(e, ERR_TOO_LARGE, "%s %s: answer larger than %zu bytes",
			    method, req->url, cap);
		else if (x.cb_err)
			r = errbuf_set(e, x.cb_err, "%s %s: aborted by the reader", method,
			    req->url);
		else
			r = errbuf_set(e, http_curl_err(rc), "%s %s: %s: %s", method, req->url,
			    err_str(http_curl_err(rc)),
			    c->curl_err[0] ? c->curl_err : curl_easy_strerror(rc));
		goto out;
	}
	memset(ret, 0, sizeof(*ret));
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &ret->status);
	/* a streamed answer has no body; any other has one, "" at least */
	ret->body = x.streaming == 1 ? NULL : dynbuf_take(&x.body, &ret->body_len);
	ret->content_type = x.content_type;
	ret->warning = x.warning;
	ret->retry_after_s = x.retry_after_s;
	x.content_type = x.warning = NULL;
	for (int i = 0; i < HTTP_CAPTURE_MAX; i++) {
		ret->captured[i] = x.captured[i];
		x.captured[i] = NULL;
	}
out:
	/* drop our pointers to borrowed state before the handle is reused */
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h, CURLOPT_CONNECT_TO, NULL);
	curl_slist_free_all(hdrs);
	curl_slist_free_all(connect_to);
	if (auth) {
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	free(ctype);
	dynbuf_free(&x.body);
	free(x.content_type);
	free(x.warning);
	for (int i = 0; i < HTTP_CAPTURE_MAX; i++)
		free(x.captured[i]);
	return r;
}
