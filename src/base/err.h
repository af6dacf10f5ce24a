/* err.h - the project-wide error codes and the caller-supplied message buffer.
 *
 * Contract: functions return 0 (or a non-negative value) on success and one of
 * the negative ERR_* codes on failure. Library-like modules never log; they
 * describe the failure in a struct errbuf supplied by the caller, naming the
 * file, field or object concerned. Output parameters (ret_*) are left untouched
 * on failure. */
#ifndef BOOTCCM_ERR_H
#define BOOTCCM_ERR_H

#include <stddef.h>

enum {
	ERR_INVALID = -2,             /* bad input: malformed file, field, answer; HTTP 400/422 */
	ERR_NOT_FOUND = -3,           /* HTTP 404; cloud: instance not found */
	ERR_EXISTS = -4,              /* HTTP 409 AlreadyExists */
	ERR_CONFLICT = -5,            /* HTTP 409 Conflict: stale resourceVersion */
	ERR_FORBIDDEN = -6,           /* HTTP 403 */
	ERR_UNAUTHORIZED = -7,        /* HTTP 401 */
	ERR_GONE = -8,                /* HTTP 410: expired resourceVersion or continue token */
	ERR_TOO_MANY_REQUESTS = -9,   /* HTTP 429, cloud rate limits */
	ERR_TRANSIENT = -10,          /* 5xx, connection refused/reset, DNS: retry with backoff */
	ERR_TIMEOUT = -11,            /* a deadline passed; retryable */
	ERR_TLS = -12,                /* TLS handshake or peer verification failed */
	ERR_TOO_LARGE = -13,          /* outside input exceeded a declared cap */
	ERR_IO = -14,                 /* local file or socket I/O failed */
	ERR_PERMANENT = -15,          /* a failure retrying cannot fix */
	ERR_NOT_IMPLEMENTED = -16,    /* cloud-provider sentinel: NotImplemented */
	ERR_IMPLEMENTED_ELSEWHERE = -17, /* cloud-provider sentinel: ImplementedElsewhere */
	ERR_UNSUPPORTED = -18,        /* valid but unsupported input (exec plugins, ...) */
	ERR_INTERNAL = -19,           /* broken internal invariant */
	ERR_CANCELED = -20,           /* the caller asked the operation to stop */
	ERR_UNAVAILABLE = -21,        /* a resource is exhausted or held by another: retry
	                                 once one is freed (an address pool) */
};

#define ERRBUF_MAX 512 /* bytes, including the NUL */

struct errbuf {
	char msg[ERRBUF_MAX];
};

/* err_str returns a short constant name for an ERR_* code ("not found"). */
const char *err_str(int code);

/* err_retryable tells whether an ERR_* code is worth retrying with backoff. */
int err_retryable(int code);

/* errbuf_set formats a message into e (if e is non-NULL) and returns code, so
 * callers can write: return errbuf_set(e, ERR_INVALID, "%s: ...", path); */
int errbuf_set(struct errbuf *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* errbuf_prefix prepends "prefix: " to the message already in e. Returns code. */
int errbuf_prefix(struct errbuf *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
