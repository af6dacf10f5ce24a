/* http.h - HTTP(S) requests over libcurl with TLS verification always on.
 *
 * Contract: one struct http_client per thread (it owns a curl handle and so a
 * connection cache: requests on the same client reuse connections). Never
 * logs. http_do returns 0 when an HTTP answer arrived — whatever its status —
 * and a negative ERR_* code with a message when none did (connection, TLS,
 * timeout, cap). Map an answer's status with http_status_err. The TLS
 * configuration and bearer token are borrowed for the call only and never
 * appear in messages. Requests to loopback and link-local hosts (the metadata
 * services) never go through a proxy. Out of memory (ours or curl's) is fatal
 * (xalloc). */
#ifndef BOOTCCM_HTTP_H
#define BOOTCCM_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/stop.h"

#define HTTP_BODY_MAX (16 * 1024 * 1024)  /* bytes: default response cap */
#define HTTP_CONNECT_TIMEOUT_MS 5000      /* default connect timeout */
#define HTTP_HEADER_MAX 8192              /* bytes: a captured header value */
#define HTTP_CAPTURE_MAX 4                /* response headers one request may capture */

struct http_tls {
	const char *ca_pem;        /* trusted CAs (PEM) or NULL */
	size_t ca_pem_len;
	const char *ca_file;       /* trusted CAs from a file, when ca_pem is NULL */
	const char *cert_pem;      /* client certificate chain (PEM) or NULL */
	size_t cert_pem_len;
	const char *key_pem;       /* client private key (PEM) or NULL */
	size_t key_pem_len;
	const char *server_name;   /* verify the peer and send SNI for this name
	                              instead of the URL's host (tls-server-name) */
	int insecure;              /* skip peer verification: only when a user
	                              explicitly configured it */
};

/* http_on_data receives a streamed body chunk; return 0 to go on or a
 * negative ERR_* code to abort the transfer with that code. */
typedef int (*http_on_data)(const char *buf, size_t len, void *arg);

struct http_request {
	const char *method;              /* GET, POST, PUT, PATCH, DELETE */
	const char *url;
	const char *const *headers;      /* NULL-terminated "Name: value" or NULL */
	const char *bearer_token;        /* or NULL; a secret */
	const char *content_type;        /* of body, or NULL */
	const char *body;
	size_t body_len;
	const struct http_tls *tls;      /* NULL for plain http:// */
	long connect_timeout_ms;         /* 0 = HTTP_CONNECT_TIMEOUT_MS */
	long timeout_ms;                 /* whole request; 0 = no limit (watches) */
	long low_speed_time_s;           /* abort when nothing arrives for this long; 0 = off */
	size_t max_body;                 /* 0 = HTTP_BODY_MAX */
	http_on_data on_data;            /* stream a 2xx answer's body here instead of
	                                    buffering it; other answers are buffered */
	void *on_data_arg;
	const char *const *capture;      /* NULL-terminated names of response headers
	                                    to keep (at most HTTP_CAPTURE_MAX, the rest
	                                    ignored), or NULL */
	int (*may_send)(void *arg);      /* or NULL: asked on the open connection, after
	                                    any TLS handshake, just before the request's
	                                    first byte is written; 0 sends nothing and
	                                    fails the request with ERR_CANCELED */
	void *may_send_arg;
	const char *refusal;             /* the ERR_CANCELED message's reason when
	                                    may_send said 0 */
};

struct http_response {
	long status;
	char *body;                      /* NUL-terminated; NULL when streamed */
	size_t body_len;
	char *content_type;              /* or NULL */
	long retry_after_s;              /* Retry-After in seconds, -1 if absent */
	char *warning;                   /* first Warning header or NULL */
	char *captured[HTTP_CAPTURE_MAX]; /* the values of req->capture's headers, in
	                                    its order (the last one seen); NULL when
	                                    absent */
};

struct http_client;

/* http_client_new returns a client (never NULL). */
struct http_client *http_client_new(void);
void http_client_free(struct http_client *c);

/* http_client_abort makes c's transfer in progress (a watch) end at once (its
 * sockets are shut down), and every later request on c fail at once, with
 * ERR_CANCELED. Callable from any thread; used to stop a thread blocked in a
 * request. */
void http_client_abort(struct http_client *c);

/* http_client_set_stop makes c's transfers end with ERR_CANCELED once stop
 * is requested: a request not started yet fails at once, and so does one
 * in progress (connecting, waiting for an answer that never comes,
 * streaming): its sockets are shut down by a stop_hook, and curl's progress
 * callback, called at least once a second, sees the stop wherever the
 * transfer waits (a name being resolved). NULL: none. Set it before c's first request, from the thread
 * that uses c; stop must outlive c's requests. */
void http_client_set_stop(struct http_client *c, struct stop *stop);

/* http_do performs one request. On 0, *ret holds the answer (free it with
 * http_response_free); on failure *ret is untouched. */
int http_do(struct http_client *c, const struct http_request *req,
    struct http_response *ret, struct errbuf *e);

void http_response_free(struct http_response *r);

/* http_status_err maps an HTTP status to 0 (2xx) or an ERR_* code. */
int http_status_err(long status);

/* http_host_is_local tells whether a URL's host is loopback or link-local
 * (169.254.0.0/16, fe80::/10, fd00:ec2::254): such requests bypass proxies. */
int http_host_is_local(const char *url);

/* http_set_deadline gives the whole process a deadline (CLOCK_MONOTONIC
 * nanoseconds; 0: none), for a one-shot command's --timeout: from then on
 * every request's connect and transfer timeouts end at it, and a request
 * made after it (or less than a millisecond before it, curl's timers being
 * whole milliseconds) fails at once with ERR_TIMEOUT, sending nothing. Set it
 * before the requests start; any thread may then read it. */
void http_set_deadline(int64_t deadline_ns);

/* http_global_init once at start, before threads (curl_global_init). */
int http_global_init(struct errbuf *e);

/* http_backend returns the TLS library curl was built with ("wolfSSL/5.5.4"). */
const char *http_backend(void);

#endif
