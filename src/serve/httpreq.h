/* httpreq.h - the HTTP/1.1 request head parser of the serving endpoint:
 * request line, header lines, caps; and the pieces of a request the server
 * reads (bearer token, query parameters).
 *
 * Contract: pure functions over the bytes given (no I/O, no allocation,
 * never logs), so they can be fuzzed alone. Parsing is strict where Go's
 * net/http server is (one Host header in HTTP/1.1, no obsolete line
 * folding, header names are tokens, no control bytes) and every part has a
 * declared cap: exceeding one is ERR_TOO_LARGE (431), never a truncation.
 * Outputs are untouched on failure. The Authorization header is a secret:
 * the parser keeps no copy of it outside *ret and wipes its scratch copy. */
#ifndef BOOTCCM_HTTPREQ_H
#define BOOTCCM_HTTPREQ_H

#include <stddef.h>

#include "base/err.h"

#define HTTPREQ_MAX (16 * 1024)     /* bytes: request line and headers */
#define HTTPREQ_HEADERS_MAX 64      /* header lines in a request */
#define HTTPREQ_METHOD_MAX 16       /* bytes, including the NUL */
#define HTTPREQ_PATH_MAX 1024       /* bytes: decoded path, with the NUL */
#define HTTPREQ_QUERY_MAX 1024      /* bytes: raw query, with the NUL */
#define HTTPREQ_AUTH_MAX (8 * 1024) /* bytes: the Authorization header */

struct httpreq {
	char method[HTTPREQ_METHOD_MAX];
	char path[HTTPREQ_PATH_MAX];        /* percent-decoded, starts with '/' */
	char query[HTTPREQ_QUERY_MAX];      /* as sent, without the '?' */
	char authorization[HTTPREQ_AUTH_MAX]; /* a secret: wipe after use */
	int has_authorization;
	int http_minor;                     /* HTTP/1.<minor> */
	int keep_alive;                     /* the connection may serve another request */
	int has_body;                       /* Content-Length > 0 or Transfer-Encoding */
};

/* httpreq_parse parses the request head at the start of buf. Returns its
 * length when complete (the request fills *ret), 0 when more bytes are
 * needed, ERR_INVALID (400) for a malformed request, ERR_TOO_LARGE (431)
 * for one past a cap, ERR_UNSUPPORTED (505) for an HTTP version other than
 * 1.0 and 1.1; e says what is wrong. */
int httpreq_parse(const char *buf, size_t len, struct httpreq *ret, struct errbuf *e);

/* httpreq_bearer_token returns the token in an Authorization header value
 * ("Bearer TOKEN", the scheme in any case), or NULL when there is none. */
const char *httpreq_bearer_token(const char *authorization);

/* httpreq_query_next takes the next key=value pair off *q, a raw query
 * string, into key and val (both percent-decoded, '+' as a space; klen and
 * vlen bytes with the NUL). Pairs that do not decode or do not fit, and
 * empty keys, are skipped. Returns 1, or 0 at the end. */
int httpreq_query_next(const char **q, char *key, size_t klen, char *val, size_t vlen);

#endif
