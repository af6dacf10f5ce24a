/* session.h - requests to one metadata service (probe, timeouts, retries),
 * and the getter interface the dialect parsers read their answers through.
 *
 * Contract: never logs. md_session_open first checks that something listens
 * at the endpoint (a TCP connect within the connect timeout): when nothing
 * does it returns ERR_NOT_FOUND ("no metadata service"), and from then on
 * every failure means a service was found but failed. Requests retry 5xx,
 * 410, 429 and transport failures (timeouts, resets, truncated bodies) up to
 * cfg->retries times with a capped doubling pause (struct backoff, no
 * jitter; Retry-After replaces a pause, under the same cap); the last answer
 * or error is returned. Messages name the method and URL. */
#ifndef BOOTCCM_MD_SESSION_H
#define BOOTCCM_MD_SESSION_H

#include <stddef.h>

#include "base/err.h"
#include "metadata/metadata.h"

struct http_client;

/* An answer a dialect parser reads: a 2xx body or a 404. */
struct md_answer {
	long status;                /* 200 (any 2xx) or 404 */
	char *body;                 /* NUL-terminated, "" for a 404; owned */
	size_t len;
	char where[MD_URL_MAX + 8]; /* "GET <url>" or a file path, for messages */
};

/* A getter fetches one path of a dialect's tree: the metadata service (a
 * session), a config drive (files), or a table (tests, fuzzers). It returns
 * 0 with a 2xx answer, or with a 404 when optional is set; any other answer
 * is an error (a 404 on a fact that must exist is ERR_INVALID, never
 * ERR_NOT_FOUND, since the service was found). */
struct md_getter {
	int (*get)(void *arg, const char *path, int optional, struct md_answer *ret,
	    struct errbuf *e);
	void *arg;
};

struct md_session {
	const struct md_config *cfg;
	struct http_client *http;
	char base[MD_URL_MAX];          /* "http://host[:port]", no trailing slash */
	const char *const *headers;     /* sent with every request, NULL-terminated, or NULL */
};

/* md_session_open connects to base (probe) and prepares s. headers are
 * borrowed. Returns 0, ERR_NOT_FOUND (nothing listens) or ERR_INVALID (bad
 * URL). */
int md_session_open(struct md_session *s, const struct md_config *cfg,
    const char *base, const char *const *headers, struct errbuf *e);
void md_session_close(struct md_session *s);

/* md_build_fn builds an instance from a dialect's answers (md_gce_build...). */
typedef int (*md_build_fn)(const struct md_getter *g, struct md_instance *in,
    struct errbuf *e);

/* md_session_fetch opens a session on cfg's endpoint (or the default one)
 * sending headers, runs build over it and closes it: the whole fetch of the
 * dialects that need no more than that. */
int md_session_fetch(const struct md_config *cfg, const char *const *headers,
    md_build_fn build, struct md_instance *in, struct errbuf *e);

/* md_session_request sends method path (with extra headers, NULL-terminated
 * or NULL) and returns 0 with the final answer whatever its status (the
 * caller maps it), or an error when no answer arrived after the retries. */
int md_session_request(struct md_session *s, const char *method, const char *path,
    const char *const *extra, long *ret_status, struct md_answer *ret,
    struct errbuf *e);

/* md_session_get is a getter over a session (arg is the struct md_session *):
 * GET with the session's headers. */
int md_session_get(void *arg, const char *path, int optional, struct md_answer *ret,
    struct errbuf *e);

/* md_session_status_err turns an unwanted status into an error naming the
 * request: 404 → ERR_INVALID ("no such item"), 401, 403 as themselves, 5xx
 * ERR_TRANSIENT, others ERR_INVALID; the start of the body is quoted. */
int md_session_status_err(const struct md_answer *a, long status, struct errbuf *e);

/* md_session_parse_url splits "http://host[:port][/]" (host a name, an IPv4
 * address or a bracketed IPv6 one, "%25" zone ids allowed) into host (no
 * brackets, zone "%" decoded) and port ("80" by default). Returns 0 or
 * ERR_INVALID naming the URL. */
int md_session_parse_url(const char *url, char *host, size_t host_len,
    char *port, size_t port_len, struct errbuf *e);

/* md_session_probe tells whether something accepts TCP connections at the
 * URL's host and port within timeout_ms: 1 yes, 0 no, ERR_INVALID bad URL. */
int md_session_probe(const char *url, long timeout_ms, struct errbuf *e);

/* md_session_answer_free releases a's body (a may be zeroed or freed twice). */
void md_session_answer_free(struct md_answer *a);

#endif
