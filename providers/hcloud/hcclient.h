/* hcclient.h - the Hetzner Cloud API client: every request the hcloud
 * provider makes goes through it.
 *
 * - The bearer token comes from a file (tokenFile), looked at before every
 *   request and read again when it changed (a rotated Secret or file is
 *   picked up without a restart); every value read is registered with
 *   log_add_secret. It is sent only to the configured endpoint: https:// with
 *   the peer verified (http.h), or plain http:// to a loopback address (tests;
 *   hcclient_plain_http says so, the provider reports it). No redirects.
 * - Answers: the error envelope is mapped by hcclient_error_map; listings are
 *   read page by page (per_page=HCCLIENT_PER_PAGE, following next_page).
 * - One process-wide token bucket (hcbucket.h) fed by every answer's
 *   RateLimit-* headers paces requests before the project's limit; a request
 *   that would wait longer than HCCLIENT_BUCKET_WAIT_MAX_NS fails at once with
 *   ERR_TOO_MANY_REQUESTS (a caller with a fallback does not wait).
 * - conflict and locked answers (a concurrent change of the same resource)
 *   are retried HCCLIENT_CONFLICT_TRIES times with backoff.
 * - Actions: hcclient_wait_actions waits for actions to end; whatever thread
 *   waits, every pending action of the process is polled with one
 *   GET /actions?id=..&id=.. per HCCLIENT_ACTIONS_PER_POLL ids.
 *
 * Contract: never logs; messages name the request ("POST /load_balancers:
 * uniqueness_error: name is already used (HTTP 409)") and never hold the
 * token. Thread-safe: any thread may use one client (each request takes an
 * http client of its own from a pool). Out of memory is fatal. */
#ifndef BOOTCCM_PROVIDER_HCLOUD_HCCLIENT_H
#define BOOTCCM_PROVIDER_HCLOUD_HCCLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "base/clock.h"
#include "base/dynbuf.h"
#include "base/err.h"
#include "hcapi.h"
#include "base/stop.h"

#define HCCLIENT_ENDPOINT_DEFAULT "https://api.hetzner.cloud/v1"
#define HCCLIENT_CA_FILE_DEFAULT "/etc/ssl/certs/ca-certificates.crt"
#define HCCLIENT_PER_PAGE 50                    /* items per listed page (the API's most) */
#define HCCLIENT_PAGES_MAX 10000                /* pages of one listing */
#define HCCLIENT_TOKEN_MAX 4096                 /* bytes of the token file */
#define HCCLIENT_BODY_MAX (8 * 1024 * 1024)     /* bytes of one answer */
#define HCCLIENT_CONNECT_TIMEOUT_MS 5000
#define HCCLIENT_TIMEOUT_MS 15000               /* one request, whole */
#define HCCLIENT_BUCKET_WAIT_MAX_NS (5 * NS_PER_S) /* longest wait for the bucket */
#define HCCLIENT_CONFLICT_TRIES 5               /* tries of a request answered conflict/locked */
#define HCCLIENT_ACTIONS_PER_POLL 25            /* ids in one GET /actions (hcloud-go's) */
#define HCCLIENT_ACTION_TIMEOUT_NS (300 * NS_PER_S) /* longest wait for an action */
#define HCCLIENT_ENDPOINT_MAX 512               /* bytes of the endpoint URL */

struct hcclient_config {
	const char *endpoint;          /* NULL or "": HCCLIENT_ENDPOINT_DEFAULT */
	const char *token_file;        /* required */
	const char *ca_file;           /* https: trusted CAs; NULL: HCCLIENT_CA_FILE_DEFAULT */
	const char *user_agent;        /* NULL: "bootccm" */
	struct stop *stop;             /* abandons waits once stopped; NULL: never */
	int64_t timeout_ns;            /* one request, whole; 0: HCCLIENT_TIMEOUT_MS */
};

/* What an error answer said, for callers that act on the API's code. */
struct hcclient_answer {
	long status;                   /* HTTP status; 0: no answer */
	char code[HCAPI_CODE_MAX];     /* the envelope's code; "" when none */
};

struct hcclient;

/* hcclient_endpoint_check checks url as an endpoint: scheme http or
 * https, a host, no query, fragment or user part, http only to loopback;
 * *ret_plain tells which scheme. Returns 0 or ERR_INVALID with a message
 * that shows the URL without its user part (a password) and escaped. */
int hcclient_endpoint_check(const char *url, int *ret_plain, struct errbuf *e);

/* hcclient_new checks cfg (ERR_INVALID "endpoint: ...": see
 * hcclient_endpoint_check) and makes a client. The token file is not read
 * yet: a missing file is an error of each request (and of
 * hcclient_token_check), not of start-up. */
int hcclient_new(const struct hcclient_config *cfg, struct hcclient **ret,
    struct errbuf *e);
void hcclient_free(struct hcclient *c);

/* hcclient_plain_http tells whether the endpoint is plain http:// (allowed
 * for loopback only). */
int hcclient_plain_http(const struct hcclient *c);

/* hcclient_endpoint returns the endpoint's URL (without a trailing '/'). */
const char *hcclient_endpoint(const struct hcclient *c);

/* hcclient_error_map maps an error answer to an ERR_* code: the envelope's
 * code when there is one (code NULL or "": none), else the status.
 * not_found with an envelope is the only ERR_NOT_FOUND: a bare 404 (a proxy,
 * a wrong endpoint) never says an instance does not exist. Pure. */
int hcclient_error_map(long status, const char *code);

/* hcclient_do sends one request: method, path (under the endpoint, with its
 * query, already escaped), body (NULL: none; borrowed). On 0, *ret (when not
 * NULL) holds the parsed answer (NULL for 204), the caller's. On failure the
 * mapped ERR_* code with a message, and *ans (when not NULL) says what the
 * API answered. */
int hcclient_do(struct hcclient *c, const char *method, const char *path, json_object *body,
    json_object **ret, struct hcclient_answer *ans, struct errbuf *e);

/* hcclient_item_fn receives one item of a listing (path names it:
 * "servers[3]"); a negative return stops the listing and is returned. */
typedef int (*hcclient_item_fn)(json_object *item, const char *path, void *arg,
    struct errbuf *e);

/* hcclient_list GETs every page of path (with its query, if any) and hands
 * each item of the array key to fn. Returns 0, or the first failure (a
 * failed page fails the whole listing: nobody acts on half of one). */
int hcclient_list(struct hcclient *c, const char *path, const char *key, hcclient_item_fn fn,
    void *arg, struct errbuf *e);

/* hcclient_wait_actions waits until the n actions ended: 0 when all
 * succeeded, else the first failure (an action that ended in error is
 * ERR_TRANSIENT naming its command and error; no answer for
 * HCCLIENT_ACTION_TIMEOUT_NS is ERR_TIMEOUT; a stop ERR_CANCELED). An
 * action already known to have ended (status given by its POST) need not
 * be passed. */
int hcclient_wait_actions(struct hcclient *c, const int64_t *ids, size_t n, struct errbuf *e);

/* hcclient_token_check reads the token file (if it changed) and reports
 * its problem: 0, or ERR_PERMANENT naming the file (missing, unreadable,
 * empty, not one line of printable characters) or the API's refusal of the
 * token (the last answer to any request was 401). */
int hcclient_token_check(struct hcclient *c, struct errbuf *e);

/* hcclient_token_generation looks at the token file (a stat; a read when
 * it changed) and returns a number that grows each time a token different
 * from the last one is read: the caller compares two answers to tell that
 * the credentials changed. Cheap enough to call every second. */
uint64_t hcclient_token_generation(struct hcclient *c);

/* hcclient_escape appends s to b, percent-encoded for a query value. */
int hcclient_escape(struct dynbuf *b, const char *s);

/* hcclient_requests returns how many requests were sent (for tests and
 * the bench). */
uint64_t hcclient_requests(const struct hcclient *c);

#endif
