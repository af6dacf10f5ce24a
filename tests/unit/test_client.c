/* test_client.c - the API client: token bucket arithmetic, verb and resource
 * derivation, path escaping, Status decoding, the retry decision table, and
 * the retry loop, preconditioned writes and the conflict loop against a
 * scripted loopback HTTP server. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "harness.h"
#include "base/log.h"
#include "kube/client.h"
#include "kube/flowcontrol.h"
#include "base/metrics.h"
#include "base/stop.h"

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
near(double got, double want)
{
	return got > want - 0.002 && got < want + 0.002;
}

/* --- token bucket ------------------------------------------------------------ */

TEST(ratelimit_events_have_their_own_bucket)
{
	/* draining the controllers' bucket leaves the Events' full, and the
	 * other way round, each with the same qps and burst */
	flowcontrol_init(10, 2);
	CHECK(flowcontrol_reserve(FLOWCONTROL_CONTROLLERS) == 0);
	CHECK(flowcontrol_reserve(FLOWCONTROL_CONTROLLERS) == 0);
	CHECK(near(flowcontrol_reserve(FLOWCONTROL_CONTROLLERS), 0.1));
	CHECK(flowcontrol_reserve(FLOWCONTROL_EVENTS) == 0);
	CHECK(flowcontrol_reserve(FLOWCONTROL_EVENTS) == 0);
	CHECK(near(flowcontrol_reserve(FLOWCONTROL_EVENTS), 0.1));
	CHECK(near(flowcontrol_reserve(FLOWCONTROL_CONTROLLERS), 0.2));
	flowcontrol_init(0, 1);
}

TEST(ratelimit_burst_then_steady_rate)
{
	/* 10 tokens a second, 5 at most: five are there, then every
	 * reservation is 0.1 s after the previous one */
	flowcontrol_init(10, 5);
	for (int i = 0; i < 5; i++)
		CHECK(flowcontrol_reserve(FLOWCONTROL_CONTROLLERS) == 0);
	CHECK(near(flowcontrol_reserve(FLOWCONTROL_CONTROLLERS), 0.1));
	CHECK(near(flowcontrol_reserve(FLOWCONTROL_CONTROLLERS), 0.2));
	CHECK(near(flowcontrol_reserve(FLOWCONTROL_CONTROLLERS), 0.3));
	/* time refills the debt first: after 0.35 s one reservation is due
	 * in about 0.3 - 0.35 + 0.1 = 0.05 s */
	struct timespec ts = { 0, 350000000 };
	nanosleep(&ts, NULL);
	double w = flowcontrol_reserve(FLOWCONTROL_CONTROLLERS);
	CHECK(w > 0.03 && w < 0.06);
	/* an idle bucket refills to the burst, never beyond */
	flowcontrol_init(100, 2);
	ts.tv_nsec = 100000000;
	nanosleep(&ts, NULL);
	CHECK(flowcontrol_reserve(FLOWCONTROL_CONTROLLERS) == 0);
	CHECK(flowcontrol_reserve(FLOWCONTROL_CONTROLLERS) == 0);
	CHECK(near(flowcontrol_reserve(FLOWCONTROL_CONTROLLERS), 0.01));
	/* a burst below 1 still lets one request through */
	flowcontrol_init(1, 0);
	CHECK(flowcontrol_reserve(FLOWCONTROL_CONTROLLERS) == 0);
	CHECK(near(flowcontrol_reserve(FLOWCONTROL_CONTROLLERS), 1.0));
	/* qps 0: unlimited */
	flowcontrol_init(0, 1);
	for (int i = 0; i < 100; i++)
		CHECK(flowcontrol_reserve(FLOWCONTROL_CONTROLLERS) == 0);
}

/* --- verbs and resources ---------------------------------------------------- */

TEST(request_info_from_paths)
{
	static const struct {
		const char *method, *path, *verb, *resource;
	} t[] = {
		{ "GET", "/api/v1/nodes", "list", "nodes" },
		{ "GET", "/api/v1/nodes?labelSelector=a%3Db&limit=500", "list", "nodes" },
		{ "GET", "/api/v1/nodes?watch=1&resourceVersion=5", "watch", "nodes" },
		{ "GET", "/api/v1/nodes?watch=true", "watch", "nodes" },
		{ "GET", "/api/v1/nodes?watch=false", "list", "nodes" },
		{ "GET", "/api/v1/nodes?watch=0&x=1", "list", "nodes" },
		{ "GET", "/api/v1/watch/nodes", "watch", "nodes" },
		{ "GET", "/api/v1/nodes/n1", "get", "nodes" },
		{ "GET", "/api/v1/nodes/n1?watch=1", "get", "nodes" },
		{ "HEAD", "/api/v1/nodes/n1", "get", "nodes" },
		{ "PATCH", "/api/v1/nodes/n1/status", "patch", "nodes/status" },
		{ "PUT", "/api/v1/nodes/n1/status?fieldManager=x", "update", "nodes/status" },
		{ "DELETE", "/api/v1/nodes/n1", "delete", "nodes" },
		{ "DELETE", "/api/v1/nodes", "deletecollection", "nodes" },
		{ "POST", "/api/v1/namespaces/default/events", "create", "events" },
		{ "GET", "/api/v1/namespaces/kube-system/services", "list", "services" },
		{ "PATCH", "/api/v1/namespaces/ns/services/lb/status", "patch", "services/status" },
		{ "GET", "/api/v1/namespaces", "list", "namespaces" },
		{ "GET", "/api/v1/namespaces/kube-system", "get", "namespaces" },
		{ "PUT", "/api/v1/namespaces/ns/status", "update", "namespaces/status" },
		{ "PUT", "/api/v1/namespaces/ns/finalize", "update", "namespaces/finalize" },
		{ "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/"
		  "cloud-controller-manager", "update", "leases" },
		{ "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
		  "create", "leases" },
		{ "GET", "/apis/coordination.k8s.io/v1/watch/namespaces/kube-system/leases",
		  "watch", "leases" },
		{ "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", "create",
		  "selfsubjectreviews" },
		{ "GET", "/api/v1/namespaces/a/pods/p/log", "get", "pods/log" },
		{ "GET", "/api/v1/namespaces/a/pods/p/proxy/x/y", "get", "pods/proxy/x/y" },
		{ "GET", "//api//v1//nodes//n1", "get", "nodes" },
		/* non-resource paths: the method, no resource */
		{ "GET", "/version", "get", "" },
		{ "GET", "/healthz?verbose", "get", "" },
		{ "GET", "/api", "get", "" },
		{ "GET", "/api/v1", "get", "" },
		{ "GET", "/apis/coordination.k8s.io", "get", "" },
		{ "GET", "/apis/coordination.k8s.io/v1", "get", "" },
		{ "GET", "", "get", "" },
		{ "POST", "/", "post", "" },
	};
	char verb[KUBE_VERB_MAX], resource[KUBE_RESOURCE_MAX];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		kube_request_info(t[i].method, t[i].path, verb, resource);
		if (strcmp(verb, t[i].verb) != 0 || strcmp(resource, t[i].resource) != 0)
			fprintf(stderr, "  %s %s: got %s %s\n", t[i].method, t[i].path, verb,
			    resource);
		CHECK_STR(verb, t[i].verb);
		CHECK_STR(resource, t[i].resource);
	}
	/* a resource label never overflows its buffer */
	char longpath[600] = "/api/v1/nodes/n/";
	memset(longpath + strlen(longpath), 'x', 500);
	longpath[599] = '\0';
	kube_request_info("GET", longpath, verb, resource);
	CHECK(strlen(resource) == KUBE_RESOURCE_MAX - 1);
	CHECK(strncmp(resource, "nodes/xxx", 9) == 0);
}

/* --- paths -------------------------------------------------------------------- */

TEST(paths_escape_segments_and_query_values)
{
	char *p = NULL;

	CHECK(kube_path(&p, "/api/v1", NULL, "nodes", NULL, NULL, NULL) == 0);
	CHECK_STR(p, "/api/v1/nodes");
	free(p);
	CHECK(kube_path(&p, "/api/v1", NULL, "nodes", "ip-10-0-0-1.ec2.internal", "status",
	    NULL) == 0);
	CHECK_STR(p, "/api/v1/nodes/ip-10-0-0-1.ec2.internal/status");
	free(p);
	CHECK(kube_path(&p, "/apis/coordination.k8s.io/v1", "kube-system", "leases",
	    "cloud-controller-manager", NULL, NULL) == 0);
	CHECK_STR(p, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/"
	    "cloud-controller-manager");
	free(p);
	/* like Go's url.PathEscape: ':' '@' '=' '+' '&' '$' stay; '/', '?', '#',
	 * '%', ';', ',', ' ' and non-ASCII are escaped */
	CHECK(kube_path(&p, "/apis/rbac.authorization.k8s.io/v1", NULL, "clusterroles",
	    "system:a b/c?d#e%f;g,h@i=j+k&l$m\xc3\xa9", NULL, NULL) == 0);
	CHECK_STR(p, "/apis/rbac.authorization.k8s.io/v1/clusterroles/"
	    "system:a%20b%2Fc%3Fd%23e%25f%3Bg%2Ch@i=j+k&l$m%C3%A9");
	free(p);
	/* like url.QueryEscape: selectors' '=', ',', '!' escaped, ' ' as '+' */
	CHECK(kube_path(&p, "/api/v1", NULL, "nodes", NULL, NULL,
	    "labelSelector", "a=b,c!=d,!e,f in (x, y)", "limit", "500",
	    "continue", NULL, "fieldSelector", "metadata.name=n/1", NULL) == 0);
	CHECK_STR(p, "/api/v1/nodes?labelSelector=a%3Db%2Cc%21%3Dd%2C%21e%2Cf+in+%28x%2C+y%29"
	    "&limit=500&fieldSelector=metadata.name%3Dn%2F1");
	free(p);
	CHECK(kube_path(&p, "/api/v1", "default", "events", NULL, NULL, "watch", "1",
	    "resourceVersion", "10", "allowWatchBookmarks", "true", NULL) == 0);
	CHECK_STR(p, "/api/v1/namespaces/default/events?watch=1&resourceVersion=10"
	    "&allowWatchBookmarks=true");
	free(p);
	/* an empty value is sent (resourceVersion=""), a NULL one is not */
	CHECK(kube_path(&p, "/api/v1", NULL, "nodes", NULL, NULL, "resourceVersion", "",
	    NULL) == 0);
	CHECK_STR(p, "/api/v1/nodes?resourceVersion=");
	free(p);
	p = NULL;
	/* segments that would change the path are refused */
	CHECK(kube_path(&p, "/api/v1", NULL, "nodes", "..", NULL, NULL) == ERR_INVALID);
	CHECK(kube_path(&p, "/api/v1", NULL, "nodes", ".", NULL, NULL) == ERR_INVALID);
	CHECK(kube_path(&p, "/api/v1", NULL, "nodes", "", NULL, NULL) == ERR_INVALID);
	CHECK(kube_path(&p, "/api/v1", "", "pods", "x", NULL, NULL) == ERR_INVALID);
	CHECK(kube_path(&p, "/api/v1", NULL, "", "x", NULL, NULL) == ERR_INVALID);
	CHECK(kube_path(&p, "/api/v1", NULL, "nodes", NULL, "status", NULL) == ERR_INVALID);
	CHECK(kube_path(&p, "api/v1", NULL, "nodes", NULL, NULL, NULL) == ERR_INVALID);
	CHECK(kube_path(&p, NULL, NULL, "nodes", NULL, NULL, NULL) == ERR_INVALID);
	CHECK(p == NULL);
	/* the resource of an escaped path is still found */
	char verb[KUBE_VERB_MAX], resource[KUBE_RESOURCE_MAX];
	CHECK(kube_path(&p, "/api/v1", "a b", "services", "x?y", "status", NULL) == 0);
	kube_request_info("PATCH", p, verb, resource);
	CHECK_STR(resource, "services/status");
	free(p);
	/* a path past KUBE_PATH_MAX is a clean error */
	char *big = malloc(KUBE_PATH_MAX + 1);
	memset(big, 'a', KUBE_PATH_MAX);
	big[KUBE_PATH_MAX] = '\0';
	p = NULL;
	CHECK(kube_path(&p, "/api/v1", NULL, "nodes", NULL, NULL, "labelSelector", big,
	    NULL) == ERR_TOO_LARGE);
	CHECK(p == NULL);
	big[KUBE_PATH_MAX - 100] = '\0';
	CHECK(kube_path(&p, "/api/v1", NULL, "nodes", NULL, NULL, "labelSelector", big,
	    NULL) == 0);
	CHECK(p != NULL && strlen(p) < KUBE_PATH_MAX);
	free(p);
	free(big);
}

/* --- Status bodies ---------------------------------------------------------- */

TEST(status_decoding)
{
	struct errbuf e;
	const char *conflict = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
	    "\"status\":\"Failure\",\"message\":\"Operation cannot be fulfilled on nodes "
	    "\\\"n\\\": the object has been modified; please apply your changes to the "
	    "latest version and try again\",\"reason\":\"Conflict\",\"details\":{\"name\":"
	    "\"n\",\"kind\":\"nodes\"},\"code\":409}";
	CHECK(kube_status_decode(409, conflict, strlen(conflict), &e) == ERR_CONFLICT);
	CHECK_CONTAINS(e.msg, "the object has been modified");
	CHECK_CONTAINS(e.msg, "(HTTP 409, Conflict)");
	const char *exists = "{\"kind\":\"Status\",\"message\":\"leases.coordination.k8s.io "
	    "\\\"x\\\" already exists\",\"reason\":\"AlreadyExists\",\"code\":409}";
	CHECK(kube_status_decode(409, exists, strlen(exists), &e) == ERR_EXISTS);
	/* a failed JSON patch test is a stale precondition */
	const char *test = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
	    "\"status\":\"Failure\",\"message\":\"the server rejected our request due to an "
	    "error in our request\",\"reason\":\"Invalid\",\"details\":{\"causes\":[{"
	    "\"reason\":\"UnexpectedServerResponse\",\"message\":\"testing value "
	    "/metadata/resourceVersion failed: test failed\"}]},\"code\":422}";
	CHECK(kube_status_decode(422, test, strlen(test), &e) == ERR_CONFLICT);
	CHECK_CONTAINS(e.msg, "the object has changed");
	/* other 422s are bad input */
	const char *invalid = "{\"kind\":\"Status\",\"message\":\"Node \\\"n\\\" is invalid: "
	    "metadata.taints[0].effect: Unsupported value\",\"reason\":\"Invalid\","
	    "\"details\":{\"causes\":[{\"reason\":\"FieldValueNotSupported\",\"message\":"
	    "\"Unsupported value\",\"field\":\"metadata.taints[0].effect\"}]},\"code\":422}";
	CHECK(kube_status_decode(422, invalid, strlen(invalid), &e) == ERR_INVALID);
	CHECK_STR(e.msg, "Node \"n\" is invalid: metadata.taints[0].effect: Unsupported "
	    "value (HTTP 422, Invalid)");
	const char *tmr = "{\"kind\":\"Status\",\"message\":\"Too many requests, please try "
	    "again later.\",\"reason\":\"TooManyRequests\",\"details\":{"
	    "\"retryAfterSeconds\":1},\"code\":429}";
	CHECK(kube_status_decode(429, tmr, strlen(tmr), &e) == ERR_TOO_MANY_REQUESTS);
	CHECK(kube_status_decode(403, "{}", 2, &e) == ERR_FORBIDDEN);
	CHECK_STR(e.msg, "HTTP 403");
	CHECK(kube_status_decode(410, "not json", 8, &e) == ERR_GONE);
	CHECK(kube_status_decode(502, NULL, 0, &e) == ERR_TRANSIENT);
	/* causes of the wrong type are ignored, not trusted */
	const char *odd = "{\"message\":\"m\",\"details\":{\"causes\":{\"message\":\"test failed\"}}}";
	CHECK(kube_status_decode(422, odd, strlen(odd), &e) == ERR_INVALID);
	CHECK(kube_status_decode(422, odd, strlen(odd), NULL) == ERR_INVALID);
	/* a body only lenient JSON takes is no Status: its code, no message */
	const char *lenient = "{\"message\":\"m\",\"reason\":\"Conflict\",\"code\":NaN}";
	CHECK(kube_status_decode(409, lenient, strlen(lenient), &e) == ERR_CONFLICT);
	CHECK_STR(e.msg, "HTTP 409");
	/* a member of the wrong type is left out */
	const char *typed = "{\"message\":5,\"reason\":\"AlreadyExists\"}";
	CHECK(kube_status_decode(409, typed, strlen(typed), &e) == ERR_EXISTS);
	CHECK_STR(e.msg, "HTTP 409");
}

/* --- the retry decision table ------------------------------------------------- */

TEST(retry_decisions)
{
	static const char *const verbs[] = { "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE" };
	/* curl's words, as http_do reports them for the dev (OpenSSL) and the
	 * static (wolfSSL) build */
	const char *refused = "GET https://127.0.0.1:6443/version: transient failure: Failed "
	    "to connect to 127.0.0.1 port 6443 after 0 ms: Couldn't connect to server";
	const char *resolve = "GET https://api.example:6443/x: transient failure: Could not "
	    "resolve host: api.example";
	const char *ctimeout = "GET https://10.0.0.1:6443/x: timeout: Connection timed out "
	    "after 5001 milliseconds";
	const char *otimeout = "GET https://10.0.0.1:6443/x: timeout: Operation timed out "
	    "after 30000 milliseconds with 0 bytes received";
	const char *empty = "POST https://127.0.0.1:6443/x: transient failure: Empty reply "
	    "from server";
	const char *recv_reset = "PATCH https://127.0.0.1:6443/x: transient failure: Recv "
	    "failure: Connection reset by peer";
	const char *ssl_read = "GET https://127.0.0.1:6443/x: transient failure: SSL read: "
	    "Peer closed underlying transport Error, errno 0";
	const char *tls_reset_ossl = "GET https://127.0.0.1:6443/x: tls failure: Send "
	    "failure: Connection reset by peer";
	const char *tls_reset_wolf = "GET https://127.0.0.1:6443/x: tls failure: SSL_connect "
	    "failed with error -308: error state on socket";
	const char *tls_name_ossl = "GET https://127.0.0.1:6443/x: tls failure: SSL: no "
	    "alternative certificate subject name matches target host name 'x'";
	const char *tls_name_wolf = "GET https://127.0.0.1:6443/x: tls failure:  subject alt "
	    "name(s) or common name do not match \"wrongname\"";
	const char *tls_ca = "GET https://127.0.0.1:6443/x: tls failure: SSL certificate "
	    "problem: unable to get local issuer certificate";
	/* an object's name must not steer the decision */
	const char *named = "GET https://127.0.0.1:6443/api/v1/nodes/Connection-refused-reset"
	    "-by-peer: tls failure: SSL certificate problem: self-signed certificate";

	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		const char *v = verbs[i];
		int reads = i < 2;
		/* answers: 429 and 5xx (but 501) always, never another 4xx */
		CHECK_STR(kube_retry_reason(v, 429, 0, NULL, 0), "HTTP 429");
		CHECK_STR(kube_retry_reason(v, 500, 0, NULL, 0), "HTTP 500");
		CHECK_STR(kube_retry_reason(v, 502, 0, NULL, 0), "HTTP 502");
		CHECK_STR(kube_retry_reason(v, 503, 0, NULL, 0), "HTTP 503");
		CHECK_STR(kube_retry_reason(v, 504, 0, NULL, 0), "HTTP 504");
		CHECK_STR(kube_retry_reason(v, 599, 0, NULL, 0), "HTTP 5xx");
		CHECK(kube_retry_reason(v, 501, 0, NULL, 0) == NULL);
		static const long no[] = { 200, 201, 301, 400, 401, 403, 404, 405, 409, 410,
		    413, 415, 422 };
		for (size_t k = 0; k < sizeof(no) / sizeof(no[0]); k++)
			CHECK(kube_retry_reason(v, no[k], 0, NULL, 0) == NULL);
		/* nothing reached the server: every verb */
		CHECK_STR(kube_retry_reason(v, 0, ERR_TRANSIENT, refused, 0), "connection refused");
		CHECK_STR(kube_retry_reason(v, 0, ERR_TRANSIENT, resolve, 0), "host name not resolved");
		CHECK_STR(kube_retry_reason(v, 0, ERR_TIMEOUT, ctimeout, 0), "connect timeout");
		CHECK_STR(kube_retry_reason(v, 0, ERR_TLS, tls_reset_ossl, 0), "TLS handshake cut off");
		CHECK_STR(kube_retry_reason(v, 0, ERR_TLS, tls_reset_wolf, 0), "TLS handshake cut off");
		/* the request may have been processed: reads only */
		CHECK((kube_retry_reason(v, 0, ERR_TRANSIENT, empty, 0) != NULL) == reads);
		CHECK((kube_retry_reason(v, 0, ERR_TRANSIENT, recv_reset, 0) != NULL) == reads);
		CHECK((kube_retry_reason(v, 0, ERR_TRANSIENT, ssl_read, 0) != NULL) == reads);
		CHECK((kube_retry_reason(v, 0, ERR_TRANSIENT, "", 0) != NULL) == reads);
		/* never: a request timeout, certificates, local failures */
		CHECK(kube_retry_reason(v, 0, ERR_TIMEOUT, otimeout, 0) == NULL);
		CHECK(kube_retry_reason(v, 0, ERR_TLS, tls_name_ossl, 0) == NULL);
		CHECK(kube_retry_reason(v, 0, ERR_TLS, tls_name_wolf, 0) == NULL);
		CHECK(kube_retry_reason(v, 0, ERR_TLS, tls_ca, 0) == NULL);
		CHECK(kube_retry_reason(v, 0, ERR_TLS, named, 0) == NULL);
		CHECK(kube_retry_reason(v, 0, ERR_TOO_LARGE, "GET x: answer larger", 0) == NULL);
		CHECK(kube_retry_reason(v, 0, ERR_INTERNAL, "internal error", 0) == NULL);
		CHECK(kube_retry_reason(v, 0, ERR_INVALID, refused, 0) == NULL);
		CHECK(kube_retry_reason(v, 0, ERR_IO, NULL, 0) == NULL);
	}
	CHECK_STR(kube_retry_reason("GET", 0, ERR_TRANSIENT, recv_reset, 0), "connection reset");
	/* a stream (LIST or WATCH before any data): what an answer asks for and
	 * a cut read, but a server that cannot be reached is the caller's */
	CHECK_STR(kube_retry_reason("GET", 429, 0, NULL, 1), "HTTP 429");
	CHECK_STR(kube_retry_reason("GET", 503, 0, NULL, 1), "HTTP 503");
	CHECK(kube_retry_reason("GET", 410, 0, NULL, 1) == NULL);
	CHECK(kube_retry_reason("GET", 403, 0, NULL, 1) == NULL);
	CHECK_STR(kube_retry_reason("GET", 0, ERR_TRANSIENT, recv_reset, 1), "connection reset");
	CHECK_STR(kube_retry_reason("GET", 0, ERR_TRANSIENT, empty, 1), "connection reset");
	CHECK(kube_retry_reason("GET", 0, ERR_TRANSIENT, refused, 1) == NULL);
	CHECK(kube_retry_reason("GET", 0, ERR_TRANSIENT, resolve, 1) == NULL);
	CHECK(kube_retry_reason("GET", 0, ERR_TIMEOUT, ctimeout, 1) == NULL);
	CHECK(kube_retry_reason("GET", 0, ERR_TLS, tls_reset_ossl, 1) == NULL);
	CHECK(kube_retry_reason("GET", 0, ERR_TLS, tls_reset_wolf, 1) == NULL);
}

/* --- a scripted loopback HTTP server ---------------------------------------- */

#define SCRIPT_MAX 16

/* Answers connection i with replies[i] (NULL: close without an answer) after
 * reading the whole request, which it keeps. */
struct script {
	int fd, port, n, served;
	const char *replies[SCRIPT_MAX];
	char req[SCRIPT_MAX][4096];
};

static void
script_read_request(int c, char *buf, size_t cap)
{
	size_t got = 0, need = 0;
	char *end = NULL;

	buf[0] = '\0';
	while (got < cap - 1) {
		ssize_t n = read(c, buf + got, cap - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
		if (end == NULL && (end = strstr(buf, "\r\n\r\n")) != NULL) {
			const char *cl = strcasestr(buf, "\r\nContent-Length:");
			need = (size_t)(end + 4 - buf) + (cl && cl < end ?
			    strtoul(cl + 17, NULL, 10) : 0);
		}
		if (end && got >= need)
			break;
	}
}

static void *
script_serve(void *arg)
{
	struct script *s = arg;

	for (int i = 0; i < s->n; i++) {
		int c = accept(s->fd, NULL, NULL);
		if (c < 0)
			return NULL;
		script_read_request(c, s->req[i], sizeof(s->req[i]));
		s->served = i + 1;
		for (size_t off = 0, len = s->replies[i] ? strlen(s->replies[i]) : 0; off < len;) {
			ssize_t w = write(c, s->replies[i] + off, len - off);
			if (w <= 0)
				break;
			off += (size_t)w;
		}
		close(c);
	}
	return NULL;
}

static int
script_start(struct script *s, pthread_t *t)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	struct timeval tv = { 3, 0 };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(s->fd, 8) < 0 || getsockname(s->fd, (struct sockaddr *)&a, &al) < 0)
		return -1;
	s->port = ntohs(a.sin_port);
	/* accept gives up after a while: a test expecting fewer requests ends */
	setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return pthread_create(t, NULL, script_serve, s);
}

/* A client of the scripted server with fast retries. */
struct fixture {
	struct script s;
	pthread_t t;
	struct kubeconfig kc;
	struct kube_client c;
	char server[64], host[64];
};

static int
fixture_start(struct fixture *f, int n, const char *const *replies)
{
	memset(f, 0, sizeof(*f));
	f->s.n = n;
	for (int i = 0; i < n; i++)
		f->s.replies[i] = replies[i];
	if (script_start(&f->s, &f->t) != 0)
		return -1;
	snprintf(f->server, sizeof(f->server), "http://127.0.0.1:%d", f->s.port);
	snprintf(f->host, sizeof(f->host), "127.0.0.1:%d", f->s.port);
	f->kc.server = f->server;
	kube_client_init(&f->c, &f->kc, "test_client/1");
	kube_client_set_retries(&f->c, KUBE_RETRY_MAX, 1, 5);
	return 0;
}

/* fixture_stop shuts the listener so the server thread ends, and joins it. */
static void
fixture_stop(struct fixture *f)
{
	shutdown(f->s.fd, SHUT_RDWR);
	pthread_join(f->t, NULL);
	close(f->s.fd);
	kube_client_cleanup(&f->c);
}

static char *
status_reply(long code, const char *reason, const char *extra)
{
	char body[256], *out = NULL;
	int n = snprintf(body, sizeof(body), "{\"kind\":\"Status\",\"message\":\"m %ld\","
	    "\"reason\":\"%s\",\"code\":%ld}", code, reason, code);
	if (asprintf(&out, "HTTP/1.1 %ld X\r\nContent-Type: application/json\r\n%s"
	    "Connection: close\r\nContent-Length: %d\r\n\r\n%s", code, extra ? extra : "",
	    n, body) < 0)
		return NULL;
	return out;
}

static char *
ok_reply(const char *body)
{
	char *out = NULL;
	if (asprintf(&out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	    "Connection: close\r\nContent-Length: %zu\r\n\r\n%s", strlen(body), body) < 0)
		return NULL;
	return out;
}

/* metric_text returns the value of one series ("name{labels}") from the
 * rendered registry, or -1 when it is not there. */
static double
metric_text(const char *series)
{
	char *out = NULL, *p;
	size_t len, n = strlen(series);
	double v = -1;

	if (metrics_render(&out, &len) != 0)
		return -2;
	for (p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, series, n) == 0 && p[n] == ' ') {
			v = strtod(p + n + 1, NULL);
			break;
		}
	free(out);
	return v;
}

static double series(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static double
series(const char *fmt, ...)
{
	char name[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	return metric_text(name);
}

TEST(retries_5xx_and_429_then_succeeds)
{
	char *r503 = status_reply(503, "ServiceUnavailable", NULL);
	char *r429 = status_reply(429, "TooManyRequests", NULL);
	char *r500 = status_reply(500, "InternalError", NULL);
	char *ok = ok_reply("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\"}}");
	const char *replies[] = { r503, r429, r500, ok };
	struct fixture f;
	struct errbuf e;
	json_object *o = NULL;
	long status = -1;

	CHECK(fixture_start(&f, 4, replies) == 0);
	int r = kube_request(&f.c, "PATCH", "/api/v1/nodes/n", "application/merge-patch+json",
	    "{}", &o, &status, &e);
	fixture_stop(&f);
	CHECK(r == 0);
	CHECK(status == 200);
	CHECK(f.s.served == 4);
	CHECK(o != NULL);
	json_object_put(o);
	for (int i = 0; i < 4; i++)
		CHECK(strncmp(f.s.req[i], "PATCH /api/v1/nodes/n HTTP/1.1\r\n", 32) == 0);
	free(r503);
	free(r429);
	free(r500);
	free(ok);
	/* every attempt is counted, by status, and by Kubernetes verb and resource */
	CHECK(series("rest_client_requests_total{code=\"%s\",host=\"%s\",method=\"%s\"}",
	    "503", f.host, "PATCH") == 1);
	CHECK(series("rest_client_requests_total{code=\"%s\",host=\"%s\",method=\"%s\"}",
	    "200", f.host, "PATCH") == 1);
	CHECK(series("bootccm_api_requests_total{verb=\"%s\",resource=\"%s\",code=\"%s\"}",
	    "patch", "nodes", "429") >= 1);
	CHECK(series("rest_client_request_duration_seconds_count{verb=\"%s\",host=\"%s\"}",
	    "PATCH", f.host) == 4);
	CHECK(series("rest_client_rate_limiter_duration_seconds_count{verb=\"%s\",host=\"%s\"}",
	    "PATCH", f.host) == 4);
}

/* A write gate open for its first `open` questions, then closed. */
struct gate {
	int asked, open;
	char last[64];
};

static int
gate_ask(void *arg, const char *method, const char *path)
{
	struct gate *g = arg;

	snprintf(g->last, sizeof(g->last), "%s %s", method, path);
	return ++g->asked <= g->open;
}

TEST(write_gate_is_asked_before_each_attempt)
{
	char *r503 = status_reply(503, "ServiceUnavailable", NULL);
	char *ok = ok_reply("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\"}}");
	const char *replies[] = { r503, ok };
	struct gate g = { 0, 1, "" };
	struct fixture f;
	struct errbuf e;
	long status = 0;
	int r;

	/* the first attempt is let through and answered 503; the gate closes
	 * before the retry, which sends nothing and is not retried itself */
	CHECK(fixture_start(&f, 2, replies) == 0);
	kube_client_set_write_gate(&f.c, gate_ask, &g);
	r = kube_request(&f.c, "PATCH", "/api/v1/nodes/n", "application/merge-patch+json",
	    "{}", NULL, &status, &e);
	fixture_stop(&f);
	CHECK(r == ERR_CANCELED);
	CHECK(g.asked == 2);
	CHECK_STR(g.last, "PATCH /api/v1/nodes/n");
	CHECK(strncmp(f.s.req[0], "PATCH /api/v1/nodes/n HTTP/1.1\r\n", 32) == 0);
	CHECK_STR(f.s.req[1], "");
	CHECK_CONTAINS(e.msg, "not sent: this replica does not hold the leader Lease");

	/* reads are never gated */
	g = (struct gate){ 0, 0, "" };
	CHECK(fixture_start(&f, 1, (const char *const[]){ ok }) == 0);
	kube_client_set_write_gate(&f.c, gate_ask, &g);
	r = kube_request(&f.c, "GET", "/api/v1/nodes/n", NULL, NULL, NULL, &status, &e);
	fixture_stop(&f);
	CHECK(r == 0 && status == 200);
	CHECK(g.asked == 0);
	free(r503);
	free(ok);
}

TEST(client_errors_are_not_retried)
{
	static const struct {
		long code;
		const char *reason;
		int err;
	} t[] = {
		{ 400, "BadRequest", ERR_INVALID }, { 401, "Unauthorized", ERR_UNAUTHORIZED },
		{ 403, "Forbidden", ERR_FORBIDDEN }, { 404, "NotFound", ERR_NOT_FOUND },
		{ 409, "Conflict", ERR_CONFLICT }, { 409, "AlreadyExists", ERR_EXISTS },
		{ 410, "Expired", ERR_GONE }, { 422, "Invalid", ERR_INVALID },
		{ 501, "NotImplemented", ERR_NOT_IMPLEMENTED },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *rep = status_reply(t[i].code, t[i].reason, NULL);
		const char *replies[] = { rep, rep };
		struct fixture f;
		struct errbuf e;
		long status = 0;
		CHECK(fixture_start(&f, 2, replies) == 0);
		int r = kube_request(&f.c, "GET", "/api/v1/nodes/n", NULL, NULL, NULL, &status, &e);
		fixture_stop(&f);
		free(rep);
		CHECK(r == t[i].err);
		CHECK(status == t[i].code);
		CHECK(f.s.served == 1);
		CHECK_CONTAINS(e.msg, "GET /api/v1/nodes/n: m ");
	}
}

TEST(answers_are_strict_json)
{
	/* json-c alone takes these; the API server (Go) never sends them */
	static const char *const bad[] = {
		"{\"a\":NaN}", "{\"a\":1.}", "{'a':1}", "{\"a\":\"x\ty\"}", "{\"a\":1} x", "",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *ok = ok_reply(bad[i]);
		const char *replies[] = { ok };
		struct fixture f;
		struct errbuf e = { "" };
		json_object *o = NULL;
		CHECK(fixture_start(&f, 1, replies) == 0);
		int r = kube_request(&f.c, "GET", "/api/v1/nodes/n", NULL, NULL, &o, NULL, &e);
		fixture_stop(&f);
		free(ok);
		CHECK(r == ERR_INVALID);
		CHECK(o == NULL);
		CHECK_CONTAINS(e.msg, "GET /api/v1/nodes/n: the answer is not valid JSON");
	}
}

TEST(retry_after_is_honoured)
{
	char *r429 = status_reply(429, "TooManyRequests", "Retry-After: 1\r\n");
	char *ok = ok_reply("{}");
	const char *replies[] = { r429, ok };
	struct fixture f;
	struct errbuf e;

	CHECK(fixture_start(&f, 2, replies) == 0);
	double t0 = now_s();
	int r = kube_request(&f.c, "POST", "/api/v1/namespaces/default/events",
	    "application/json", "{}", NULL, NULL, &e);
	double dt = now_s() - t0;
	fixture_stop(&f);
	free(r429);
	free(ok);
	CHECK(r == 0);
	CHECK(f.s.served == 2);
	CHECK(dt >= 1.0 && dt < 2.0);
}

TEST(a_reset_write_is_not_retried_a_reset_read_is)
{
	char *ok = ok_reply("{\"items\":[]}");
	const char *replies[] = { NULL, NULL, ok };
	struct fixture f;
	struct errbuf e;

	CHECK(fixture_start(&f, 1, replies) == 0);
	int r = kube_request(&f.c, "POST", "/api/v1/namespaces/default/events",
	    "application/json", "{\"a\":1}", NULL, NULL, &e);
	fixture_stop(&f);
	CHECK(r == ERR_TRANSIENT);
	CHECK(f.s.served == 1);

	CHECK(fixture_start(&f, 3, replies) == 0);
	json_object *o = NULL;
	r = kube_request(&f.c, "GET", "/api/v1/nodes", NULL, NULL, &o, NULL, &e);
	fixture_stop(&f);
	free(ok);
	CHECK(r == 0);
	CHECK(f.s.served == 3);
	json_object_put(o);
}

/* a port nothing listens on */
static int
closed_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &al) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

TEST(refused_connections_are_retried_for_writes_up_to_the_limit)
{
	struct kubeconfig kc;
	struct kube_client c;
	struct errbuf e;
	char server[64], host[64];
	int port = closed_port();

	CHECK(port > 0);
	memset(&kc, 0, sizeof(kc));
	snprintf(server, sizeof(server), "http://127.0.0.1:%d", port);
	snprintf(host, sizeof(host), "127.0.0.1:%d", port);
	kc.server = server;
	kube_client_init(&c, &kc, "t");
	CHECK_STR(c.host, host);
	CHECK(c.max_retries == KUBE_RETRY_MAX);
	kube_client_set_retries(&c, 3, 1, 2);
	double t0 = now_s();
	int r = kube_request(&c, "POST", "/api/v1/namespaces/default/events",
	    "application/json", "{}", NULL, NULL, &e);
	CHECK(r == ERR_TRANSIENT);
	CHECK_CONTAINS(e.msg, "(4 attempts)");
	CHECK(now_s() - t0 < 1.0);
	CHECK(series("rest_client_requests_total{code=\"%s\",host=\"%s\",method=\"%s\"}",
	    "<error>", host, "POST") == 4);
	CHECK(series("bootccm_api_requests_total{verb=\"%s\",resource=\"%s\",code=\"%s\"}",
	    "create", "events", "<error>") >= 4);
	kube_client_cleanup(&c);
}

TEST(stop_abandons_retries)
{
	struct kubeconfig kc;
	struct kube_client c;
	struct errbuf e;
	char server[64];
	int port = closed_port();

	memset(&kc, 0, sizeof(kc));
	snprintf(server, sizeof(server), "http://127.0.0.1:%d", port);
	kc.server = server;
	kube_client_init(&c, &kc, "t");
	struct stop stopping;
	stop_init(&stopping);
	kube_client_set_stop(&c, &stopping);
	stop_request(&stopping);
	double t0 = now_s();
	/* a stopped client sends nothing (a stop during the backoff abandons
	 * the retries: tests/integration/test_client.py) */
	int r = kube_request(&c, "GET", "/version", NULL, NULL, NULL, NULL, &e);
	CHECK(r == ERR_CANCELED);
	CHECK(now_s() - t0 < 0.5);
	CHECK_CONTAINS(e.msg, "canceled");
	/* with no retries at all, the message is the attempt's own */
	kube_client_set_stop(&c, NULL);
	kube_client_set_retries(&c, 0, 0, 0);
	r = kube_request(&c, "GET", "/version", NULL, NULL, NULL, NULL, &e);
	CHECK(r == ERR_TRANSIENT);
	CHECK(strstr(e.msg, "attempts") == NULL);
	CHECK_CONTAINS(e.msg, "Failed to connect");
	kube_client_cleanup(&c);
	stop_destroy(&stopping);
}

static int64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

TEST(deadline_bounds_attempts_and_retries)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	struct kubeconfig kc;
	struct kube_client c;
	struct errbuf e;
	char server[64];
	int port = closed_port();

	memset(&kc, 0, sizeof(kc));
	snprintf(server, sizeof(server), "http://127.0.0.1:%d", port);
	kc.server = server;
	kube_client_init(&c, &kc, "t");
	/* refused with the default backoff (100, 200, 400 ms...): the retry
	 * that would end past the deadline is not made */
	kube_client_set_deadline(&c, mono_ns() + 250000000LL);
	double t0 = now_s();
	int r = kube_request(&c, "GET", "/version", NULL, NULL, NULL, NULL, &e);
	double dt = now_s() - t0;
	CHECK(r == ERR_TRANSIENT);
	CHECK(dt < 0.25);
	CHECK_CONTAINS(e.msg, "no time left before the deadline");
	/* past the deadline nothing is sent */
	kube_client_set_deadline(&c, mono_ns() - 1);
	r = kube_request(&c, "GET", "/version", NULL, NULL, NULL, NULL, &e);
	CHECK(r == ERR_TIMEOUT);
	CHECK_CONTAINS(e.msg, "the deadline passed before the request was sent");
	kube_client_cleanup(&c);

	/* a server that takes the connection and never answers: the attempt
	 * ends at the deadline, not after KUBE_REQUEST_TIMEOUT_MS */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    listen(fd, 4) == 0 && getsockname(fd, (struct sockaddr *)&a, &al) == 0);
	snprintf(server, sizeof(server), "http://127.0.0.1:%d", ntohs(a.sin_port));
	kube_client_init(&c, &kc, "t");
	kube_client_set_deadline(&c, mono_ns() + 300000000LL);
	t0 = now_s();
	r = kube_request(&c, "GET", "/version", NULL, NULL, NULL, NULL, &e);
	dt = now_s() - t0;
	close(fd);
	kube_client_cleanup(&c);
	CHECK(r == ERR_TIMEOUT);
	CHECK(dt >= 0.25 && dt < 1.0);
}

/* --- streams ------------------------------------------------------------------- */

struct collect {
	char buf[256];
	size_t len;
};

static int
collect_cb(const char *buf, size_t len, void *arg)
{
	struct collect *c = arg;
	if (len > sizeof(c->buf) - 1 - c->len)
		return ERR_TOO_LARGE;
	memcpy(c->buf + c->len, buf, len);
	c->len += len;
	c->buf[c->len] = '\0';
	return 0;
}

TEST(stream_retries_until_the_answer_begins)
{
	char *r503 = status_reply(503, "ServiceUnavailable", NULL);
	static const char watch[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	    "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
	    "c\r\n{\"type\":\"A\"}\r\n0\r\n\r\n";
	const char *replies[] = { NULL, r503, watch };
	struct fixture f;
	struct collect col = { .len = 0 };
	struct errbuf e;
	long status = 0;

	CHECK(fixture_start(&f, 3, replies) == 0);
	int r = kube_request_stream(&f.c, "/api/v1/nodes?watch=1", collect_cb, &col, 5000,
	    &status, &e);
	fixture_stop(&f);
	free(r503);
	CHECK(r == 0);
	CHECK(status == 200);
	CHECK(f.s.served == 3);
	CHECK_STR(col.buf, "{\"type\":\"A\"}");
}

TEST(stream_to_an_unreachable_server_fails_at_once)
{
	struct kubeconfig kc;
	struct kube_client c;
	struct collect col = { .len = 0 };
	struct errbuf e;
	char server[64];

	memset(&kc, 0, sizeof(kc));
	snprintf(server, sizeof(server), "http://127.0.0.1:%d", closed_port());
	kc.server = server;
	kube_client_init(&c, &kc, "t");
	double t0 = now_s();
	int r = kube_request_stream(&c, "/api/v1/nodes?watch=1", collect_cb, &col, 5000,
	    NULL, &e);
	CHECK(r == ERR_TRANSIENT);
	CHECK(now_s() - t0 < 0.09); /* no retry: the first backoff is 100 ms */
	CHECK(strstr(e.msg, "attempts") == NULL);
	kube_client_cleanup(&c);
}

TEST(stream_cut_after_data_is_not_retried)
{
	static const char cut[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	    "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
	    "c\r\n{\"type\":\"B\"}\r\n";
	const char *replies[] = { cut, cut };
	struct fixture f;
	struct collect col = { .len = 0 };
	struct errbuf e;

	CHECK(fixture_start(&f, 2, replies) == 0);
	int r = kube_request_stream(&f.c, "/api/v1/nodes?watch=1", collect_cb, &col, 5000,
	    NULL, &e);
	fixture_stop(&f);
	CHECK(r == ERR_TRANSIENT);
	CHECK(f.s.served == 1);
	CHECK_STR(col.buf, "{\"type\":\"B\"}");
}

/* --- writes ---------------------------------------------------------------------- */

static const char *
body_of(const char *req)
{
	const char *b = strstr(req, "\r\n\r\n");
	return b ? b + 4 : "";
}

TEST(preconditioned_patches_and_creates)
{
	char *ok = ok_reply("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\","
	    "\"resourceVersion\":\"8\"}}");
	const char *replies[] = { ok, ok, ok, ok };
	struct fixture f;
	struct errbuf e;
	json_object *patch = json_tokener_parse("{\"metadata\":{\"labels\":{\"a\":\"b\"},"
	    "\"resourceVersion\":\"1\"},\"spec\":{\"providerID\":\"x://1/a\"}}");
	json_object *ops = json_tokener_parse("[{\"op\":\"add\",\"path\":\"/spec/taints\","
	    "\"value\":[]}]");
	json_object *obj = json_tokener_parse("{\"apiVersion\":\"v1\",\"kind\":\"Node\","
	    "\"metadata\":{\"name\":\"n\",\"resourceVersion\":\"5\",\"labels\":{}}}");
	json_object *out = NULL;
	const char *before = json_object_to_json_string(patch);
	char *saved = strdup(before);

	CHECK(fixture_start(&f, 4, replies) == 0);
	CHECK(kube_patch_merge(&f.c, "/api/v1/nodes/n", patch, "7", &out, NULL, &e) == 0);
	CHECK(kube_patch_json(&f.c, "/api/v1/nodes/n/status", ops, "7", NULL, NULL, &e) == 0);
	CHECK(kube_create(&f.c, "/api/v1/nodes", obj, NULL, &e) == 0);
	CHECK(kube_update(&f.c, "/api/v1/nodes/n", obj, NULL, &e) == 0);
	/* refused before anything is sent */
	CHECK(kube_patch_merge(&f.c, "/api/v1/nodes/n", patch, "", NULL, NULL, &e) == ERR_INVALID);
	CHECK(kube_patch_json(&f.c, "/api/v1/nodes/n", ops, NULL, NULL, NULL, &e) == ERR_INVALID);
	CHECK(kube_patch_json(&f.c, "/api/v1/nodes/n", patch, "1", NULL, NULL, &e) == ERR_INVALID);
	CHECK(kube_patch_merge(&f.c, "/api/v1/nodes/n", ops, "1", NULL, NULL, &e) == ERR_INVALID);
	fixture_stop(&f);
	CHECK(f.s.served == 4);
	CHECK(out != NULL);
	/* merge patch: the caller's fields and the precondition, caller's object
	 * untouched */
	CHECK_CONTAINS(f.s.req[0], "\r\nContent-Type: application/merge-patch+json\r\n");
	CHECK_STR(body_of(f.s.req[0]), "{\"spec\":{\"providerID\":\"x://1/a\"},\"metadata\":"
	    "{\"labels\":{\"a\":\"b\"},\"resourceVersion\":\"7\"}}");
	CHECK_STR(json_object_to_json_string(patch), saved);
	/* JSON patch: the test comes first */
	CHECK_CONTAINS(f.s.req[1], "PATCH /api/v1/nodes/n/status HTTP/1.1\r\n");
	CHECK_CONTAINS(f.s.req[1], "\r\nContent-Type: application/json-patch+json\r\n");
	CHECK_STR(body_of(f.s.req[1]), "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\","
	    "\"value\":\"7\"},{\"op\":\"add\",\"path\":\"/spec/taints\",\"value\":[]}]");
	/* create: no resourceVersion; update: with it */
	CHECK_CONTAINS(f.s.req[2], "POST /api/v1/nodes HTTP/1.1\r\n");
	CHECK_STR(body_of(f.s.req[2]), "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":"
	    "{\"name\":\"n\",\"labels\":{}}}");
	CHECK_CONTAINS(f.s.req[3], "PUT /api/v1/nodes/n HTTP/1.1\r\n");
	CHECK_CONTAINS(body_of(f.s.req[3]), "\"resourceVersion\":\"5\"");
	json_object_put(out);
	json_object_put(patch);
	json_object_put(ops);
	json_object_put(obj);
	free(saved);
	free(ok);
}

TEST(written_texts_carry_no_secret)
{
	char *ok = ok_reply("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\","
	    "\"resourceVersion\":\"8\"}}");
	const char *replies[] = { ok, ok, ok };
	struct fixture f;
	struct errbuf e;
	/* a condition whose message quotes a server's echo of the token, whole
	 * and in part, in a merge patch, a JSON patch and an update */
	json_object *patch = json_tokener_parse("{\"status\":{\"conditions\":[{\"type\":"
	    "\"NetworkUnavailable\",\"message\":\"HTTP 500: Bearer Zt8kq0RmWv3yXc5n"
	    "Lp2dQa7s\"}]}}");
	json_object *ops = json_tokener_parse("[{\"op\":\"add\",\"path\":\"/status/conditions/-\","
	    "\"value\":{\"message\":\"echo: Wv3yXc5nLp\"}}]");
	json_object *obj = json_tokener_parse("{\"metadata\":{\"name\":\"n\",\"resourceVersion\":"
	    "\"5\"},\"status\":{\"conditions\":[{\"reason\":\"Zt8kq0RmWv3y\"}]}}");
	char *saved = strdup(json_object_to_json_string(patch));

	log_clear_secrets();
	log_add_secret("Zt8kq0RmWv3yXc5nLp2dQa7s");
	CHECK(fixture_start(&f, 3, replies) == 0);
	CHECK(kube_patch_merge(&f.c, "/api/v1/nodes/n/status", patch, "7", NULL, NULL, &e) == 0);
	CHECK(kube_patch_json(&f.c, "/api/v1/nodes/n/status", ops, "7", NULL, NULL, &e) == 0);
	CHECK(kube_update(&f.c, "/api/v1/nodes/n/status", obj, NULL, &e) == 0);
	fixture_stop(&f);
	CHECK(f.s.served == 3);
	CHECK_CONTAINS(body_of(f.s.req[0]), "\"message\":\"HTTP 500: Bearer [redacted]\"");
	CHECK_CONTAINS(body_of(f.s.req[1]), "\"message\":\"echo: [redacted]\"");
	CHECK_CONTAINS(body_of(f.s.req[2]), "\"reason\":\"[redacted]\"");
	for (int i = 0; i < 3; i++)
		CHECK(strstr(f.s.req[i], "Wv3yXc5n") == NULL);
	/* the caller's objects are left as they were */
	CHECK_STR(json_object_to_json_string(patch), saved);
	log_clear_secrets();
	json_object_put(patch);
	json_object_put(ops);
	json_object_put(obj);
	free(saved);
	free(ok);
}

TEST(patch_answer_read_for_its_resource_version_only)
{
	char *ok = ok_reply("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\",\"managedFields\":"
	    "[{\"manager\":\"m\"}],\"resourceVersion\":\"8\"},\"status\":{\"images\":[]}}");
	char *no_rv = ok_reply("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\"}}");
	char *long_rv = ok_reply("{\"metadata\":{\"resourceVersion\":\"123456789\"}}");
	char *bad = ok_reply("{\"metadata\":{\"resourceVersion\":\"9\"},\"x\":[1,]}");
	char *node = ok_reply("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\",\"uid\":\"u\"},"
	    "\"spec\":{\"providerID\":\"p\"}}");
	const char *replies[] = { ok, no_rv, long_rv, bad, node };
	static const struct jsonx_keep md[] = { { "name", NULL }, { NULL, NULL } };
	static const struct jsonx_keep fields[] = { { "metadata", md }, { NULL, NULL } };
	json_object *patch = json_tokener_parse("{\"status\":{\"addresses\":[]}}");
	json_object *o = NULL;
	struct fixture f;
	struct errbuf e;
	char rv[8] = "x";

	CHECK(fixture_start(&f, 5, replies) == 0);
	CHECK(kube_patch_merge_rv(&f.c, "/api/v1/nodes/n/status", patch, "7", rv, sizeof(rv),
	    &e) == 0);
	CHECK_STR(rv, "8");
	strcpy(rv, "x");
	CHECK(kube_patch_merge_rv(&f.c, "/api/v1/nodes/n/status", patch, "7", rv, sizeof(rv),
	    &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "the answer has no usable metadata.resourceVersion");
	CHECK(kube_patch_merge_rv(&f.c, "/api/v1/nodes/n/status", patch, "7", rv, sizeof(rv),
	    &e) == ERR_INVALID);
	/* the rest of the answer is still held to the standard */
	CHECK(kube_patch_merge_rv(&f.c, "/api/v1/nodes/n/status", patch, "7", rv, sizeof(rv),
	    &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "the answer is not valid JSON");
	CHECK_STR(rv, "x");  /* untouched on failure */
	CHECK(kube_request_keep(&f.c, "GET", "/api/v1/nodes/n", NULL, NULL, fields, &o, NULL,
	    &e) == 0);
	fixture_stop(&f);
	CHECK_STR(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
	    "{\"metadata\":{\"name\":\"n\"}}");
	/* the merge patch went out as kube_patch_merge sends it */
	CHECK_CONTAINS(f.s.req[0], "PATCH /api/v1/nodes/n/status HTTP/1.1\r\n");
	CHECK_STR(body_of(f.s.req[0]), "{\"status\":{\"addresses\":[]},\"metadata\":"
	    "{\"resourceVersion\":\"7\"}}");
	json_object_put(o);
	json_object_put(patch);
	free(ok);
	free(no_rv);
	free(long_rv);
	free(bad);
	free(node);
}

TEST(lease_updates_need_a_resource_version)
{
	struct kubeconfig kc;
	struct kube_client c;
	struct errbuf e;
	json_object *lease = json_tokener_parse("{\"apiVersion\":\"coordination.k8s.io/v1\","
	    "\"kind\":\"Lease\",\"metadata\":{\"name\":\"l\",\"namespace\":\"kube-system\"}}");

	memset(&kc, 0, sizeof(kc));
	kc.server = "http://127.0.0.1:1";
	kube_client_init(&c, &kc, "t");
	kube_client_set_retries(&c, 0, 0, 0);
	CHECK(kube_update(&c, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l",
	    lease, NULL, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "a Lease update must carry metadata.resourceVersion");
	CHECK(kube_create(&c, "/api/v1/nodes", NULL, NULL, &e) == ERR_INVALID);
	kube_client_cleanup(&c);
	json_object_put(lease);
}

/* The conflict loop's callback: add label a=b unless it is there; records
 * the resourceVersions it saw. */
struct label_job {
	int calls;
	char seen[4][16];
	int json;
};

static int
label_build(json_object *cur, json_object **ret_patch, void *arg, struct errbuf *e)
{
	struct label_job *j = arg;
	json_object *md, *rv, *labels, *v;

	(void)e;
	json_object_object_get_ex(cur, "metadata", &md);
	json_object_object_get_ex(md, "resourceVersion", &rv);
	if (j->calls < 4)
		snprintf(j->seen[j->calls], sizeof(j->seen[0]), "%s", json_object_get_string(rv));
	j->calls++;
	if (json_object_object_get_ex(md, "labels", &labels) &&
	    json_object_object_get_ex(labels, "a", &v))
		return KUBE_PATCH_NOOP;
	if (j->json) {
		*ret_patch = json_tokener_parse("[{\"op\":\"add\",\"path\":\"/metadata/labels\","
		    "\"value\":{\"a\":\"b\"}}]");
		return KUBE_PATCH_JSON;
	}
	*ret_patch = json_tokener_parse("{\"metadata\":{\"labels\":{\"a\":\"b\"}}}");
	return KUBE_PATCH_MERGE;
}

static int
fail_build(json_object *cur, json_object **ret_patch, void *arg, struct errbuf *e)
{
	(void)cur;
	(void)ret_patch;
	(void)arg;
	return errbuf_set(e, ERR_PERMANENT, "no way");
}

TEST(conflict_loop_rereads_and_rebuilds)
{
	char *v1 = ok_reply("{\"metadata\":{\"name\":\"n\",\"resourceVersion\":\"1\"}}");
	char *v2 = ok_reply("{\"metadata\":{\"name\":\"n\",\"resourceVersion\":\"2\"}}");
	char *done = ok_reply("{\"metadata\":{\"name\":\"n\",\"resourceVersion\":\"3\","
	    "\"labels\":{\"a\":\"b\"}}}");
	char *c409 = status_reply(409, "Conflict", NULL);
	char *test422 = NULL;
	const char *body = "{\"kind\":\"Status\",\"message\":\"the server rejected our request "
	    "due to an error in our request\",\"reason\":\"Invalid\",\"details\":{\"causes\":"
	    "[{\"reason\":\"UnexpectedServerResponse\",\"message\":\"testing value "
	    "/metadata/resourceVersion failed: test failed\"}]},\"code\":422}";
	CHECK(asprintf(&test422, "HTTP/1.1 422 X\r\nContent-Type: application/json\r\n"
	    "Connection: close\r\nContent-Length: %zu\r\n\r\n%s", strlen(body), body) > 0);
	struct fixture f;
	struct errbuf e;
	json_object *out = NULL;

	/* merge patch: GET rv1, PATCH 409, GET rv2, PATCH ok */
	{
		const char *replies[] = { v1, c409, v2, done };
		struct label_job j = { 0 };
		CHECK(fixture_start(&f, 4, replies) == 0);
		int r = kube_patch_retry(&f.c, "/api/v1/nodes/n?fieldManager=bootccm", label_build,
		    &j, &out, &e);
		fixture_stop(&f);
		CHECK(r == 0);
		CHECK(f.s.served == 4);
		CHECK(j.calls == 2);
		CHECK_STR(j.seen[0], "1");
		CHECK_STR(j.seen[1], "2");
		CHECK(strncmp(f.s.req[0], "GET /api/v1/nodes/n HTTP/1.1", 28) == 0);
		CHECK(strncmp(f.s.req[1], "PATCH /api/v1/nodes/n?fieldManager=bootccm ", 43) == 0);
		CHECK_CONTAINS(body_of(f.s.req[1]), "\"resourceVersion\":\"1\"");
		CHECK_CONTAINS(body_of(f.s.req[3]), "\"resourceVersion\":\"2\"");
		CHECK_CONTAINS(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN), "\"resourceVersion\":\"3\"");
		json_object_put(out);
		out = NULL;
	}
	/* JSON patch: a failed test is a conflict too; then the re-read shows
	 * the label already there: nothing more is written */
	{
		const char *replies[] = { v1, test422, done };
		struct label_job j = { .json = 1 };
		CHECK(fixture_start(&f, 3, replies) == 0);
		int r = kube_patch_retry(&f.c, "/api/v1/nodes/n", label_build, &j, &out, &e);
		fixture_stop(&f);
		CHECK(r == 0);
		CHECK(f.s.served == 3);
		CHECK(j.calls == 2);
		CHECK_CONTAINS(body_of(f.s.req[1]), "{\"op\":\"test\",\"path\":"
		    "\"/metadata/resourceVersion\",\"value\":\"1\"}");
		CHECK_CONTAINS(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN), "\"resourceVersion\":\"3\"");
		json_object_put(out);
		out = NULL;
	}
	/* conflicts every time: gives up after KUBE_CONFLICT_RETRIES re-reads */
	{
		const char *replies[SCRIPT_MAX];
		struct label_job j = { 0 };
		int n = 2 * (KUBE_CONFLICT_RETRIES + 1);
		CHECK(n <= SCRIPT_MAX);
		for (int i = 0; i < n; i++)
			replies[i] = i % 2 ? c409 : v1;
		CHECK(fixture_start(&f, n, replies) == 0);
		int r = kube_patch_retry(&f.c, "/api/v1/nodes/n", label_build, &j, &out, &e);
		fixture_stop(&f);
		CHECK(r == ERR_CONFLICT);
		CHECK(f.s.served == n);
		CHECK(j.calls == KUBE_CONFLICT_RETRIES + 1);
		CHECK(out == NULL);
		CHECK_CONTAINS(e.msg, "PATCH /api/v1/nodes/n: m 409");
	}
	/* the builder's own error ends the loop with it, as does a GET's */
	{
		const char *replies[] = { v1 };
		CHECK(fixture_start(&f, 1, replies) == 0);
		int r = kube_patch_retry(&f.c, "/api/v1/nodes/n", fail_build, NULL, &out, &e);
		fixture_stop(&f);
		CHECK(r == ERR_PERMANENT);
		CHECK_STR(e.msg, "no way");
		CHECK(f.s.served == 1);
	}
	{
		char *nf = status_reply(404, "NotFound", NULL);
		const char *replies[] = { nf };
		struct label_job j = { 0 };
		CHECK(fixture_start(&f, 1, replies) == 0);
		int r = kube_patch_retry(&f.c, "/api/v1/nodes/n", label_build, &j, &out, &e);
		fixture_stop(&f);
		free(nf);
		CHECK(r == ERR_NOT_FOUND);
		CHECK(j.calls == 0);
	}
	free(v1);
	free(v2);
	free(done);
	free(c409);
	free(test422);
}

/* kube-apiserver (1.37) answers a failed JSON patch test with a bare 422
 * Invalid: no cause names the test. One read tells a stale precondition
 * (the object at another version: ERR_CONFLICT) from a patch the object's
 * validation refused (the same version: the 422 stands). */
TEST(bare_422_to_a_json_patch_is_told_apart_by_one_read)
{
	const char *bare = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
	    "\"status\":\"Failure\",\"message\":\"the server rejected our request due to an "
	    "error in our request\",\"reason\":\"Invalid\",\"details\":{},\"code\":422}";
	char *c422 = NULL;
	char *v1 = ok_reply("{\"metadata\":{\"name\":\"n\",\"resourceVersion\":\"1\"}}");
	char *v2 = ok_reply("{\"metadata\":{\"name\":\"n\",\"resourceVersion\":\"2\"}}");
	char *nf = status_reply(404, "NotFound", NULL);
	CHECK(asprintf(&c422, "HTTP/1.1 422 X\r\nContent-Type: application/json\r\n"
	    "Connection: close\r\nContent-Length: %zu\r\n\r\n%s", strlen(bare), bare) > 0);
	struct {
		const char *second;
		int want;
	} cases[] = {
		{ v2, ERR_CONFLICT },   /* moved on: the test failed */
		{ v1, ERR_INVALID },    /* still at the tested version: refused */
		{ nf, ERR_INVALID },    /* cannot tell: the 422 stands */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *replies[] = { c422, cases[i].second };
		json_object *ops = json_tokener_parse("[{\"op\":\"remove\",\"path\":"
		    "\"/spec/taints/0\"}]");
		struct fixture f;
		struct errbuf e = { "" };
		long status = 0;
		CHECK(fixture_start(&f, 2, replies) == 0);
		int r = kube_patch_json(&f.c, "/api/v1/nodes/n/status?fieldManager=x", ops, "1",
		    NULL, &status, &e);
		fixture_stop(&f);
		json_object_put(ops);
		CHECK(r == cases[i].want);
		CHECK(status == 422);
		CHECK(f.s.served == 2);
		CHECK(strncmp(f.s.req[1], "GET /api/v1/nodes/n/status HTTP/1.1", 35) == 0);
		if (r == ERR_CONFLICT)
			CHECK_CONTAINS(e.msg, "resourceVersion 1 tested, 2 now");
		else
			CHECK_CONTAINS(e.msg, "the server rejected our request");
	}
	free(c422);
	free(v1);
	free(v2);
	free(nf);
}

/* --- the list pager and the conflict retry ---------------------------------- */

struct pages_seen {
	int pages;
	size_t items;
	int fail_at;      /* the page fn fails on (1-based; 0: never) */
};

static int
pages_fn(json_object *items, size_t n, void *arg, struct errbuf *e)
{
	struct pages_seen *p = arg;

	(void)items;
	p->pages++;
	p->items += n;
	if (p->fail_at == p->pages)
		return errbuf_set(e, ERR_CANCELED, "enough");
	return 0;
}

TEST(list_pager_follows_continue)
{
	char *p1 = ok_reply("{\"items\":[{},{}],\"metadata\":{\"continue\":\"tok/1\"}}");
	char *p2 = ok_reply("{\"items\":[{}],\"metadata\":{\"continue\":\"\"}}");
	char *bad = ok_reply("{\"items\":{}}");
	struct fixture f;
	struct errbuf e = { "" };

	{
		const char *replies[] = { p1, p2 };
		struct pages_seen ps = { 0 };
		CHECK(fixture_start(&f, 2, replies) == 0);
		int r = kube_list_pages(&f.c, "/api/v1", NULL, "nodes", "a=b", "2", 0, pages_fn,
		    &ps, &e);
		fixture_stop(&f);
		CHECK(r == 0);
		CHECK(ps.pages == 2 && ps.items == 3);
		CHECK(strncmp(f.s.req[0], "GET /api/v1/nodes?limit=2&fieldSelector=a%3Db HTTP", 50) == 0);
		CHECK(strncmp(f.s.req[1], "GET /api/v1/nodes?limit=2&fieldSelector=a%3Db"
		    "&continue=tok%2F1 HTTP", 67) == 0);
	}
	{
		/* a bound on the pages */
		const char *replies[] = { p1 };
		struct pages_seen ps = { 0 };
		CHECK(fixture_start(&f, 1, replies) == 0);
		int r = kube_list_pages(&f.c, "/api/v1", NULL, "nodes", NULL, "2", 1, pages_fn,
		    &ps, &e);
		fixture_stop(&f);
		CHECK(r == ERR_TOO_LARGE);
		CHECK_CONTAINS(e.msg, "more than 1 pages");
		CHECK(ps.pages == 1);
	}
	{
		/* the page fn ends it */
		const char *replies[] = { p1 };
		struct pages_seen ps = { .fail_at = 1 };
		CHECK(fixture_start(&f, 1, replies) == 0);
		int r = kube_list_pages(&f.c, "/api/v1", NULL, "nodes", NULL, "2", 0, pages_fn,
		    &ps, &e);
		fixture_stop(&f);
		CHECK(r == ERR_CANCELED);
		CHECK(f.s.served == 1);
	}
	{
		/* not a list */
		const char *replies[] = { bad };
		struct pages_seen ps = { 0 };
		CHECK(fixture_start(&f, 1, replies) == 0);
		int r = kube_list_pages(&f.c, "/api/v1", NULL, "nodes", NULL, "2", 0, pages_fn,
		    &ps, &e);
		fixture_stop(&f);
		CHECK(r == ERR_INVALID);
		CHECK_CONTAINS(e.msg, "the nodes list");
		CHECK(ps.pages == 0);
	}
	free(p1);
	free(p2);
	free(bad);
}

struct conflicts {
	int calls, conflicts_left, last_attempt;
};

static int
conflicts_fn(int attempt, void *arg, struct errbuf *e)
{
	struct conflicts *k = arg;

	k->calls++;
	k->last_attempt = attempt;
	if (k->conflicts_left > 0) {
		k->conflicts_left--;
		return errbuf_set(e, ERR_CONFLICT, "changed");
	}
	return 0;
}

TEST(retry_on_conflict_is_bounded)
{
	struct stop s;
	struct errbuf e = { "" };
	int64_t t0;

	stop_init(&s);
	{
		struct conflicts k = { .conflicts_left = 2 };
		t0 = clock_mono_ns();
		CHECK(kube_retry_on_conflict(&s, "/x", conflicts_fn, &k, &e) == 0);
		CHECK(k.calls == 3 && k.last_attempt == 2);
		/* DefaultRetry: 10 ms then 20 ms, less 10% jitter at most */
		CHECK(clock_mono_ns() - t0 >= 27 * NS_PER_MS);
	}
	{
		struct conflicts k = { .conflicts_left = 100 };
		CHECK(kube_retry_on_conflict(&s, NULL, conflicts_fn, &k, &e) == ERR_CONFLICT);
		CHECK(k.calls == KUBE_CONFLICT_RETRIES + 1);
	}
	{
		/* a stop ends the pauses with the last answer */
		struct conflicts k = { .conflicts_left = 100 };
		stop_request(&s);
		CHECK(kube_retry_on_conflict(&s, NULL, conflicts_fn, &k, &e) == ERR_CONFLICT);
		CHECK(k.calls == 1);
	}
	stop_destroy(&s);
}

TEST_MAIN()
