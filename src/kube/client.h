/* client.h - requests to the Kubernetes API server: the kubeconfig's TLS and
 * credentials, JSON in and out, Status bodies decoded into ERR_* codes.
 *
 * Contract: one struct kube_client per thread (it owns an HTTP client). The
 * kubeconfig is borrowed and must outlive the client. Like client-go, it logs
 * requests at -v=6 (line), 8 (headers, credentials masked) and 9 (bodies). */
#ifndef BOOTCCM_KUBE_CLIENT_H
#define BOOTCCM_KUBE_CLIENT_H

#include <json-c/json.h>

#include "err.h"
#include "http.h"
#include "kubeconfig.h"

#define KUBE_REQUEST_TIMEOUT_MS 30000 /* a non-watch request */
#define KUBE_JSON_DEPTH 128           /* nesting levels (managedFields nest deep) */

struct kube_client {
	struct kubeconfig *kc;
	struct http_client *http;
	struct http_tls tls;
	char user_agent[128];
};

/* kube_client_init prepares c for kc. Returns 0 or ERR_NOMEM. */
int kube_client_init(struct kube_client *c, struct kubeconfig *kc,
    const char *user_agent);
void kube_client_cleanup(struct kube_client *c);

/* kube_request sends method path (e.g. "/api/v1/nodes") with an optional JSON
 * body of content_type, and parses a 2xx answer into *ret (may be NULL to
 * discard). A non-2xx answer returns its ERR_* code with the Status message
 * ("nodes \"x\" not found") in e; *ret_status (if non-NULL) gets the HTTP
 * status either way, or 0 when no answer arrived. */
int kube_request(struct kube_client *c, const char *method, const char *path,
    const char *content_type, const char *body, json_object **ret,
    long *ret_status, struct errbuf *e);

/* kube_request_stream GETs path (a watch: "...?watch=1&resourceVersion=N")
 * and hands a 2xx answer's body to on_data chunk by chunk as it arrives (the
 * callback may return a negative ERR_* code to end the stream with it). A
 * non-2xx answer is decoded like kube_request's. timeout_ms 0 = no limit.
 * Returns 0 when the server ended the stream cleanly. */
int kube_request_stream(struct kube_client *c, const char *path,
    http_on_data on_data, void *arg, long timeout_ms, long *ret_status,
    struct errbuf *e);

/* kube_ratelimit_init sets the process-wide client-side rate limit every
 * request (watches included) waits for: qps tokens a second, burst at most.
 * Before it is called, requests are not limited. */
void kube_ratelimit_init(double qps, int burst);

/* kube_ratelimit_reserve takes the next token and returns how many seconds
 * the caller must wait before using it (0 when one was there). */
double kube_ratelimit_reserve(void);

/* kube_ratelimit_wait takes a token, sleeping until it is due. */
void kube_ratelimit_wait(void);

/* kube_status_decode fills e from a Status body and returns the ERR_* code for
 * status (a 409 with reason AlreadyExists is ERR_EXISTS). */
int kube_status_decode(long status, const char *body, size_t len,
    struct errbuf *e);

#endif
