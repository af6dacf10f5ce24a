/* client.h - requests to the Kubernetes API server: the kubeconfig's TLS and
 * credentials, JSON in and out, Status bodies decoded into ERR_* codes,
 * retries with backoff, writes with resourceVersion preconditions, and
 * client-go's request metrics.
 *
 * Contract: one struct kube_client per thread (it owns an HTTP client and its
 * retry state). The kubeconfig is borrowed and must outlive the client. Like
 * client-go, it logs requests at -v=6 (line), 8 (headers, credentials masked)
 * and 9 (bodies), and each retry once at -v=2 with its reason; credentials
 * never appear in a line. Every object written (kube_patch_*, kube_create,
 * kube_update) has each of its string values passed through the log
 * redactor first (log_redact_str, on a copy): a condition's message or an
 * annotation quoting a server's echo of a secret is written redacted.
 *
 * Retries (inside kube_request, and kube_request_stream until its answer
 * begins): a 429 always (the server did not process it) and a 5xx other than
 * 501, waiting Retry-After seconds (at most KUBE_RETRY_AFTER_MAX_S) when the
 * answer names it, else the client's backoff; a failure with no answer when
 * the request provably never reached the server (connect refused, name or
 * connect timeout, a TLS handshake cut off) for every verb; a connection
 * reset or empty reply after the request went out only for GET and HEAD
 * (a write may have been processed). Never a 4xx other than 429. At most
 * c->max_retries retries (KUBE_RETRY_MAX by default, like client-go's 10).
 * Every attempt waits for a token of its flowcontrol class. A stream (a
 * reflector's LIST or WATCH) is not retried when the server cannot be
 * reached at all: its caller runs its own backoff and must see the API
 * server go away (client-go's reflector sees connection refused likewise).
 *
 * Shutdown: kube_client_set_stop(c, &stop) makes the client abandon retries
 * (and wakes its backoff sleeps at once) once stop is requested: the call
 * then fails with the last attempt's error; an attempt in flight ends
 * within a second and a new one is not sent (ERR_CANCELED, http.h's
 * http_client_set_stop). A write at shutdown (a Lease release) clears its
 * client's stop and bounds itself with a deadline instead. The daemon
 * passes its SIGTERM stop to every client it creates.
 *
 * Callers with their own schedule opt out or bound the retries: a loop that
 * already retries on a period (the wait for the API server, a one-shot
 * command) sets kube_client_set_retries(c, 0, 0, 0); a caller with a deadline
 * (leader election's renew deadline) sets kube_client_set_deadline, which
 * bounds every attempt's timeout and forgoes retries that would end past it,
 * like a Go context deadline. */
#ifndef BOOTCCM_KUBE_CLIENT_H
#define BOOTCCM_KUBE_CLIENT_H

#include <stdint.h>
#include <json-c/json.h>

#include "base/backoff.h"
#include "base/err.h"
#include "http/http.h"
#include "base/jsonx.h"
#include "config/kubeconfig.h"
#include "base/stop.h"
#include "kube/watch.h"   /* KUBE_JSON_DEPTH */

#define KUBE_REQUEST_TIMEOUT_MS 30000 /* a non-watch request */
#define KUBE_BODY_MAX (3 * 1024 * 1024) /* bytes: the API server's request body limit */
#define KUBE_PATH_MAX (64 * 1024)     /* bytes: a path kube_path builds, query included */
#define KUBE_RETRY_MAX 10             /* retries after the first attempt (client-go: 10) */
#define KUBE_RETRY_BASE_MS 100        /* first retry delay without Retry-After */
#define KUBE_RETRY_CAP_MS 500         /* longest: a restarted API server is seen within it */
#define KUBE_RETRY_FACTOR 2.0
#define KUBE_RETRY_JITTER 0.2
#define KUBE_RETRY_AFTER_MAX_S 10     /* cap on a server's Retry-After (seconds) */
#define KUBE_CONFLICT_RETRIES 5       /* re-reads after a conflict in kube_patch_retry */
#define KUBE_CONFLICT_BASE_MS 10      /* pause before a re-read, doubling (client-go's DefaultRetry) */
#define KUBE_CONFLICT_CAP_MS 160

/* A write gate: asked before every request that is not a GET, with its
 * method and path; 0 means the request must not be sent. */
typedef int (*kube_write_gate)(void *arg, const char *method, const char *path);

struct kube_client {
	struct kubeconfig *kc;
	struct http_client *http;
	struct http_tls tls;
	char user_agent[128];
	char host[256];                   /* server host[:port], the metrics' host label */
	struct stop *stop;                /* abandon retries once stopped; NULL: never */
	int max_retries;                  /* KUBE_RETRY_MAX unless changed */
	int64_t deadline_ns;              /* CLOCK_MONOTONIC; 0: none */
	struct backoff retry;             /* delays between retries without Retry-After */
	int rl_class;                     /* a flowcontrol class */
	kube_write_gate write_gate;       /* NULL: every write is sent */
	void *write_gate_arg;
};

/* kube_client_init prepares c for kc with KUBE_RETRY_MAX retries and the
 * KUBE_RETRY_* backoff, and registers the client metrics (once per process).
 * It cannot fail (out of memory is fatal). */
void kube_client_init(struct kube_client *c, struct kubeconfig *kc,
    const char *user_agent);
void kube_client_cleanup(struct kube_client *c);

/* kube_client_set_stop makes c abandon retries, and cancel the attempt in
 * flight, once stop is requested (NULL: never). */
void kube_client_set_stop(struct kube_client *c, struct stop *stop);

/* kube_client_set_deadline bounds every later call on c (until changed) by
 * deadline_ns, a CLOCK_MONOTONIC time in nanoseconds (0: no deadline): an
 * attempt's timeout ends at it, no retry is made that would sleep past it,
 * and a call after it fails at once with ERR_TIMEOUT, sending nothing. */
void kube_client_set_deadline(struct kube_client *c, int64_t deadline_ns);

/* kube_client_set_write_gate makes every later request of c that is not a
 * GET ask gate(arg, method, path) before each attempt is sent, on its open
 * connection after the rate limiter's wait (http_request.may_send): 0
 * sends nothing and fails with ERR_CANCELED ("not sent: this replica does
 * not hold the leader Lease"), and no retry follows. For controllers whose
 * writes need the Lease: a process resumed after SIGSTOP runs a write
 * before its elector has noticed the Lease is lost, unless the write asks
 * lease_is_leader itself. NULL: none. */
void kube_client_set_write_gate(struct kube_client *c, kube_write_gate gate, void *arg);

/* kube_client_new is kube_client_init, set_stop and set_write_gate (gate
 * may be NULL) on a client of its own: a controller worker's. Free it with
 * kube_client_free (NULL is fine). */
struct kube_client *kube_client_new(struct kubeconfig *kc, const char *user_agent,
    struct stop *stop, kube_write_gate gate, void *gate_arg);
void kube_client_free(struct kube_client *c);

/* kube_client_set_retries sets how many times a request is retried (0: never)
 * and the backoff between retries (base_ms, cap_ms; 0 keeps the default). */
void kube_client_set_retries(struct kube_client *c, int max_retries,
    long base_ms, long cap_ms);

/* kube_client_metrics_init registers rest_client_requests_total,
 * rest_client_request_duration_seconds, rest_client_rate_limiter_duration_seconds
 * and bootccm_api_requests_total; idempotent and thread-safe (kube_client_init
 * calls it). */
void kube_client_metrics_init(void);

/* kube_request sends method path (e.g. "/api/v1/nodes") with an optional JSON
 * body of content_type, retrying as described above, and parses a 2xx answer
 * with jsonx_parse (KUBE_JSON_DEPTH levels) into *ret (may be NULL to
 * discard; an answer that is not valid JSON is ERR_INVALID). A non-2xx
 * answer returns its ERR_* code with the Status message ("nodes \"x\" not
 * found") in e; *ret_status (if non-NULL) gets the last HTTP status either
 * way, or 0 when no answer arrived. */
int kube_request(struct kube_client *c, const char *method, const char *path,
    const char *content_type, const char *body, json_object **ret,
    long *ret_status, struct errbuf *e);

/* kube_request_keep is kube_request building only the members of the answer
 * fields names (jsonx_parse_keep; NULL: all): the whole answer is still
 * checked, but a caller reading a few fields of a Node (kube_node_fields)
 * does not pay for its images and managedFields. */
int kube_request_keep(struct kube_client *c, const char *method, const char *path,
    const char *content_type, const char *body, const struct jsonx_keep *fields,
    json_object **ret, long *ret_status, struct errbuf *e);

/* kube_request_stream GETs path (a watch: "...?watch=1&resourceVersion=N")
 * and hands a 2xx answer's body to on_data chunk by chunk as it arrives (the
 * callback may return a negative ERR_* code to end the stream with it). A
 * non-2xx answer is decoded like kube_request's. Failures before any chunk
 * was delivered are retried like a GET; after that, never (the caller
 * re-watches from what it saw). timeout_ms 0 = no limit. Returns 0 when the
 * server ended the stream cleanly. */
int kube_request_stream(struct kube_client *c, const char *path,
    http_on_data on_data, void *arg, long timeout_ms, long *ret_status,
    struct errbuf *e);

/* kube_retry_reason is the retry decision for one attempt of method (stream:
 * 1 for kube_request_stream before any data arrived): status is the answer's
 * HTTP status, or 0 with err (http_do's code) and msg (its message) when no
 * answer arrived. Returns a short reason for the log ("HTTP 503",
 * "connection refused", "connection reset") or NULL when the attempt must
 * not be retried. Pure; the table is in the header comment. */
const char *kube_retry_reason(const char *method, long status, int err,
    const char *msg, int stream);

/* --- writes with preconditions --------------------------------------------- */

/* kube_patch_merge PATCHes path with patch (a JSON object, borrowed and left
 * unchanged) as application/merge-patch+json, with metadata.resourceVersion
 * set to rv in the body: the server answers 409 Conflict when the object has
 * changed since rv. kube_patch_json sends ops (a JSON array of RFC 6902
 * operations, borrowed) as application/json-patch+json behind a leading
 * {"op":"test","path":"/metadata/resourceVersion","value":rv}: a changed
 * object fails the test (422, returned as ERR_CONFLICT). rv must be non-empty
 * (ERR_INVALID otherwise, nothing sent). ret, ret_status as kube_request. */
int kube_patch_merge(struct kube_client *c, const char *path, json_object *patch,
    const char *rv, json_object **ret, long *ret_status, struct errbuf *e);
int kube_patch_json(struct kube_client *c, const char *path, json_object *ops,
    const char *rv, json_object **ret, long *ret_status, struct errbuf *e);

/* kube_patch_merge_rv is kube_patch_merge for a caller that needs only the
 * written object's metadata.resourceVersion (a second write conditional on
 * the first): it is copied into ret_rv (rv_len bytes, NUL included), and
 * nothing else of the answer is built. An answer without a non-empty one
 * that fits is ERR_INVALID. */
int kube_patch_merge_rv(struct kube_client *c, const char *path, json_object *patch,
    const char *rv, char *ret_rv, size_t rv_len, struct errbuf *e);

enum kube_patch_type {
	KUBE_PATCH_NOOP = 0,  /* the object is as wanted: write nothing */
	KUBE_PATCH_MERGE = 1, /* *ret_patch is a merge patch object */
	KUBE_PATCH_JSON = 2,  /* *ret_patch is an array of JSON patch operations */
};

/* kube_attempt_fn is one try of a read-modify-write (attempt counts from
 * 0): read the object afresh, apply the change, write it behind the version
 * read. ERR_CONFLICT asks for another try. */
typedef int (*kube_attempt_fn)(int attempt, void *arg, struct errbuf *e);

/* kube_retry_on_conflict is client-go's RetryOnConflict with DefaultRetry:
 * it calls fn until fn returns anything but ERR_CONFLICT, at most
 * 1 + KUBE_CONFLICT_RETRIES times, pausing KUBE_CONFLICT_BASE_MS doubling
 * to KUBE_CONFLICT_CAP_MS (10% jitter) between tries; a stop during a
 * pause ends it with the last answer. With log_path, each re-read is
 * logged at -v=2 with fn's message. Returns fn's last answer. */
int kube_retry_on_conflict(struct stop *stop, const char *log_path, kube_attempt_fn fn,
    void *arg, struct errbuf *e);

/* kube_list_fn gets one page of a list: its items (borrowed; n of them).
 * A negative answer ends the listing with it. */
typedef int (*kube_list_fn)(json_object *items, size_t n, void *arg, struct errbuf *e);

/* kube_list_pages GETs every page of a list, client-go's ListPager: api,
 * ns (NULL: every namespace), resource, an optional field selector, limit
 * items a page, following metadata.continue until it is empty, at most
 * max_pages pages (0: no bound; more is ERR_TOO_LARGE). Each page's items
 * go to fn before its continue token is read. Returns 0, the request's
 * error, ERR_INVALID for an answer that is not a list (e names the
 * resource), or fn's. */
int kube_list_pages(struct kube_client *c, const char *api, const char *ns,
    const char *resource, const char *field_selector, const char *limit, int max_pages,
    kube_list_fn fn, void *arg, struct errbuf *e);

/* kube_patch_fn builds the patch that brings cur (the object as the server
 * has it now; borrowed) where the caller wants it. Returns a kube_patch_type,
 * with *ret_patch set (ownership passes to the caller) for MERGE and JSON, or
 * a negative ERR_* code with a message in e to give up. It must not add the
 * resourceVersion precondition itself. */
typedef int (*kube_patch_fn)(json_object *cur, json_object **ret_patch,
    void *arg, struct errbuf *e);

/* kube_patch_retry is the conflict loop: GET path (without its query), let
 * build make a patch from the fresh object, send it with cur's
 * resourceVersion as precondition (kube_patch_merge / kube_patch_json), and
 * on ERR_CONFLICT (409 Conflict, or a failed JSON patch test) re-read and
 * rebuild, at most KUBE_CONFLICT_RETRIES times. On 0, *ret (if non-NULL) gets
 * the written object, or the fresh one when build said KUBE_PATCH_NOOP. Fails
 * with ERR_CONFLICT when every try met a conflict, else with the first
 * other error (GET, build or PATCH). */
int kube_patch_retry(struct kube_client *c, const char *path, kube_patch_fn build,
    void *arg, json_object **ret, struct errbuf *e);

/* kube_create POSTs obj (borrowed, unchanged) to the collection path without
 * metadata.resourceVersion, which a create must not carry (the API server's
 * storage rejects it). ERR_EXISTS when the name is taken. */
int kube_create(struct kube_client *c, const char *path, json_object *obj,
    json_object **ret, struct errbuf *e);

/* kube_update PUTs obj (borrowed) to path with its metadata.resourceVersion
 * as the precondition (409 when stale). An obj without one is an
 * unconditional update, which the API server refuses for Leases: for a
 * leases path kube_update fails with ERR_INVALID without sending. */
int kube_update(struct kube_client *c, const char *path, json_object *obj,
    json_object **ret, struct errbuf *e);

/* --- paths ------------------------------------------------------------------ */

/* kube_path builds "API[/namespaces/NS]/RESOURCE[/NAME[/SUBRESOURCE]][?QUERY]"
 * into a malloc'd *ret. api is "/api/v1" or "/apis/GROUP/VERSION"; ns, name
 * and subresource may be NULL. Segments are escaped like Go's
 * url.PathEscape, query values like url.QueryEscape (selectors' '=', ',' and
 * '!' become %3D, %2C, %21). The variadic part is key, value pairs ending
 * with a NULL key; a pair with a NULL value is left out. Returns 0,
 * ERR_INVALID for an empty, "." or ".." segment, ERR_TOO_LARGE for a path
 * longer than KUBE_PATH_MAX. */
int kube_path(char **ret, const char *api, const char *ns, const char *resource,
    const char *name, const char *subresource, ...)
	__attribute__((sentinel));

#define KUBE_VERB_MAX 24
#define KUBE_RESOURCE_MAX 128

/* kube_request_info derives the Kubernetes verb (get, list, watch, create,
 * update, patch, delete, deletecollection; the lower-case method for
 * non-resource paths) and resource ("nodes", "nodes/status", "leases"; ""
 * for non-resource paths like /version) of a request the way the API
 * server's RequestInfoFactory does. Always fills verb and resource. */
void kube_request_info(const char *method, const char *path,
    char verb[KUBE_VERB_MAX], char resource[KUBE_RESOURCE_MAX]);

/* kube_client_target points req at path on c's server: the URL (*ret_url),
 * the TLS settings for an https:// server, and the bearer token
 * (*ret_token, read from the kubeconfig, a token file re-read). The caller
 * frees both with kube_client_target_free, which wipes the token. For a
 * request path of one's own (authn's reviews); kube_request uses it too. */
int kube_client_target(struct kube_client *c, const char *path, struct http_request *req,
    char **ret_url, char **ret_token, struct errbuf *e);
void kube_client_target_free(char *url, char *token);

/* kube_client_set_ratelimit_class makes c take its tokens from flowcontrol
 * class cls (FLOWCONTROL_CONTROLLERS unless changed). */
void kube_client_set_ratelimit_class(struct kube_client *c, int cls);

/* kube_status_decode fills e from a Status body (read with jsonx_parse; a body
 * that is not one, or is longer than 64 KiB, leaves just "HTTP <status>") and
 * returns the ERR_* code for status: a 409 with reason AlreadyExists is
 * ERR_EXISTS, a 422 caused by a failed JSON patch "test" operation is
 * ERR_CONFLICT (the object changed). */
int kube_status_decode(long status, const char *body, size_t len,
    struct errbuf *e);

#endif
