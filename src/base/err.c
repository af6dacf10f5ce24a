/* err.c - names for the project-wide error codes and the message buffer. */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *
err_str(int code)
{
	switch (code) {
	case 0: return "ok";
	case ERR_INVALID: return "invalid";
	case ERR_NOT_FOUND: return "not found";
	case ERR_EXISTS: return "already exists";
	case ERR_CONFLICT: return "conflict";
	case ERR_FORBIDDEN: return "forbidden";
	case ERR_UNAUTHORIZED: return "unauthorized";
	case ERR_GONE: return "gone";
	case ERR_TOO_MANY_REQUESTS: return "too many requests";
	case ERR_TRANSIENT: return "transient failure";
	case ERR_TIMEOUT: return "timeout";
	case ERR_TLS: return "tls failure";
	case ERR_TOO_LARGE: return "too large";
	case ERR_IO: return "i/o error";
	case ERR_PERMANENT: return "permanent failure";
	case ERR_NOT_IMPLEMENTED: return "not implemented";
	case ERR_IMPLEMENTED_ELSEWHERE: return "implemented elsewhere";
	case ERR_UNSUPPORTED: return "unsupported";
	case ERR_INTERNAL: return "internal error";
	case ERR_CANCELED: return "canceled";
	case ERR_UNAVAILABLE: return "unavailable";
	default: return "unknown error";
	}
}

int
err_retryable(int code)
{
	switch (code) {
	case ERR_TRANSIENT:
	case ERR_TIMEOUT:
	case ERR_TOO_MANY_REQUESTS:
	case ERR_CONFLICT:
	case ERR_GONE:
	case ERR_UNAVAILABLE:
		return 1;
	default:
		return 0;
	}
}

int
errbuf_set(struct errbuf *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return code;
}

int
errbuf_prefix(struct errbuf *e, int code, const char *fmt, ...)
{
	char prefix[ERRBUF_MAX], old[ERRBUF_MAX];
	va_list ap;

	if (e == NULL)
		return code;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof(old));
	/* truncation is fine: the message stays NUL-terminated and bounded */
	size_t pl = strnlen(prefix, sizeof(e->msg) - 1);
	memcpy(e->msg, prefix, pl);
	if (pl + 2 < sizeof(e->msg)) {
		memcpy(e->msg + pl, ": ", 2);
		pl += 2;
		size_t ol = strnlen(old, sizeof(e->msg) - 1 - pl);
		memcpy(e->msg + pl, old, ol);
		pl += ol;
	}
	e->msg[pl] = '\0';
	return code;
}
