/* drv_client.c - runs the API client against the fake API server for
 * tests/integration/test_client.py: one request, stream, write or conflict loop per
 * run (or a burst of requests from threads), reported as JSON lines on
 * stdout. Logs (with -v) go to stderr.
 *
 * Usage: drv_client KUBECONFIG [options] COMMAND [ARGS...]
 *   --kube-api-qps Q --kube-api-burst B   the process-wide rate limit
 *   --retries N                  retries per request (default KUBE_RETRY_MAX)
 *   --backoff-ms BASE,CAP        retry backoff (default the client's)
 *   --stop-after-ms N            set the clients' stop flag after N ms
 *   --metrics                    print the client metrics' lines at the end
 *   -v N                         log verbosity
 * Commands:
 *   request METHOD PATH [BODY [CONTENT-TYPE]]
 *   stream PATH TIMEOUT_MS       a watch; counts the bytes and lines received
 *   patch-merge PATH RV JSON     kube_patch_merge
 *   patch-json PATH RV JSON      kube_patch_json
 *   create PATH JSON             kube_create
 *   update PATH JSON             kube_update
 *   label PATH KEY VALUE merge|json [pause]
 *                                kube_patch_retry setting metadata.labels[KEY];
 *                                with pause, the first build prints
 *                                {"event":"read",...} and waits for a line on
 *                                stdin before it returns its patch
 *   path API NS RESOURCE NAME [KEY=VALUE...]
 *                                GET the path kube_path builds ("-" = none)
 *   burst N THREADS PATH         N GETs of PATH from THREADS threads, each
 *                                with its own client, connected (a GET of
 *                                /version) before the rate limit starts */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "http/http.h"
#include "kube/client.h"
#include "kube/flowcontrol.h"
#include "config/kubeconfig.h"
#include "base/log.h"
#include "base/stop.h"
#include "base/metrics.h"

static struct kubeconfig kc;
static int opt_retries = -1;
static long opt_base_ms, opt_cap_ms, opt_stop_after_ms;
static struct stop drv_stop, drv_done;

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
emit(json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	fflush(stdout);
	json_object_put(o);
}

static json_object *
result(const char *op, int rc, long status, const struct errbuf *e, double t0)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "op", json_object_new_string(op));
	json_object_object_add(o, "rc", json_object_new_int(rc));
	json_object_object_add(o, "code", json_object_new_string(rc < 0 ? err_str(rc) : "ok"));
	json_object_object_add(o, "status", json_object_new_int64(status));
	json_object_object_add(o, "err", json_object_new_string(rc < 0 ? e->msg : ""));
	json_object_object_add(o, "seconds", json_object_new_double(now_s() - t0));
	return o;
}

static int
client_new(struct kube_client *c)
{
	kube_client_init(c, &kc, "drv_client/1");
	kube_client_set_stop(c, &drv_stop);
	if (opt_retries >= 0 || opt_base_ms || opt_cap_ms)
		kube_client_set_retries(c, opt_retries >= 0 ? opt_retries : KUBE_RETRY_MAX,
		    opt_base_ms, opt_cap_ms);
	return 0;
}

static json_object *
parse(const char *s)
{
	json_object *o = json_tokener_parse(s);

	if (o == NULL) {
		fprintf(stderr, "drv_client: not JSON: %s\n", s);
		exit(2);
	}
	return o;
}

/* --- stream -------------------------------------------------------------------- */

struct counted {
	size_t bytes, lines;
};

static int
count_cb(const char *buf, size_t len, void *arg)
{
	struct counted *n = arg;

	if (n->bytes == 0) {
		/* tell the test the stream is open and delivering */
		json_object *ev = json_object_new_object();
		json_object_object_add(ev, "event", json_object_new_string("data"));
		emit(ev);
	}
	n->bytes += len;
	for (size_t i = 0; i < len; i++)
		n->lines += buf[i] == '\n';
	return 0;
}

/* --- label: the conflict loop ---------------------------------------------- */

struct label_job {
	const char *key, *value;
	int json, pause, builds;
};

static int
label_build(json_object *cur, json_object **ret_patch, void *arg, struct errbuf *e)
{
	struct label_job *j = arg;
	json_object *md = NULL, *labels = NULL, *v, *rv = NULL;
	char line[64];

	(void)e;
	j->builds++;
	json_object_object_get_ex(cur, "metadata", &md);
	json_object_object_get_ex(md, "resourceVersion", &rv);
	if (j->pause && j->builds == 1) {
		json_object *ev = json_object_new_object();
		json_object_object_add(ev, "event", json_object_new_string("read"));
		json_object_object_add(ev, "rv", json_object_get(rv));
		emit(ev);
		if (fgets(line, sizeof(line), stdin) == NULL)
			return errbuf_set(e, ERR_IO, "stdin closed");
	}
	if (json_object_object_get_ex(md, "labels", &labels) &&
	    json_object_object_get_ex(labels, j->key, &v) &&
	    strcmp(json_object_get_string(v), j->value) == 0)
		return KUBE_PATCH_NOOP;
	if (j->json) {
		/* JSON patch cannot add into a missing map: set the whole map then */
		json_object *op = json_object_new_object(), *ops = json_object_new_array();
		char path[256];
		json_object_object_add(op, "op", json_object_new_string("add"));
		if (labels) {
			/* RFC 6901: '/' is "~1", '~' is "~0"; keys here have neither */
			snprintf(path, sizeof(path), "/metadata/labels/%s", j->key);
			json_object_object_add(op, "path", json_object_new_string(path));
			json_object_object_add(op, "value", json_object_new_string(j->value));
		} else {
			json_object *m = json_object_new_object();
			json_object_object_add(m, j->key, json_object_new_string(j->value));
			json_object_object_add(op, "path", json_object_new_string("/metadata/labels"));
			json_object_object_add(op, "value", m);
		}
		json_object_array_add(ops, op);
		*ret_patch = ops;
		return KUBE_PATCH_JSON;
	}
	json_object *p = json_object_new_object(), *pm = json_object_new_object(),
	    *pl = json_object_new_object();
	json_object_object_add(pl, j->key, json_object_new_string(j->value));
	json_object_object_add(pm, "labels", pl);
	json_object_object_add(p, "metadata", pm);
	*ret_patch = p;
	return KUBE_PATCH_MERGE;
}

/* --- burst: the shared token bucket ----------------------------------------- */

struct burst {
	pthread_mutex_t lock;
	pthread_barrier_t warm, go;
	int left, ok, failed;
	const char *path;
};

static void *
burst_thread(void *arg)
{
	struct burst *b = arg;
	struct kube_client c;
	struct errbuf e;

	if (client_new(&c) < 0)
		abort();
	/* connect (TCP, TLS) before the clock starts: a handshake would delay
	 * a request's arrival and bunch it up with later ones in the log */
	if (kube_request(&c, "GET", "/version", NULL, NULL, NULL, NULL, &e) < 0)
		fprintf(stderr, "drv_client: warm-up: %s\n", e.msg);
	pthread_barrier_wait(&b->warm);
	pthread_barrier_wait(&b->go);
	for (;;) {
		pthread_mutex_lock(&b->lock);
		int go = b->left > 0;
		if (go)
			b->left--;
		pthread_mutex_unlock(&b->lock);
		if (!go)
			break;
		int r = kube_request(&c, "GET", b->path, NULL, NULL, NULL, NULL, &e);
		pthread_mutex_lock(&b->lock);
		if (r == 0)
			b->ok++;
		else
			b->failed++;
		pthread_mutex_unlock(&b->lock);
	}
	kube_client_cleanup(&c);
	return NULL;
}

static void *
stopper(void *arg)
{
	(void)arg;
	if (!stop_sleep(&drv_done, opt_stop_after_ms * NS_PER_MS))
		stop_request(&drv_stop);
	return NULL;
}

/* print_metrics writes the client metrics' series as one JSON line. */
static void
print_metrics(void)
{
	json_object *o = json_object_new_object(), *lines = json_object_new_array();
	char *text = NULL, *p, *nl;
	size_t len;

	if (metrics_render(&text, &len) == 0) {
		for (p = text; *p; p = nl + 1) {
			if ((nl = strchr(p, '\n')) == NULL)
				break;
			if (*p != '#' && (strncmp(p, "rest_client_", 12) == 0 ||
			    strncmp(p, "bootccm_api_", 12) == 0))
				json_object_array_add(lines,
				    json_object_new_string_len(p, (int)(nl - p)));
		}
	}
	free(text);
	json_object_object_add(o, "op", json_object_new_string("metrics"));
	json_object_object_add(o, "lines", lines);
	emit(o);
}

static void
usage(void)
{
	fprintf(stderr, "usage: drv_client KUBECONFIG [options] COMMAND [ARGS...]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	struct kube_client c;
	struct errbuf e = { "" };
	pthread_t stop_thread;
	int i = 2, rc = 0, metrics = 0, verbosity = 0;
	double qps = 0;
	int burst = 0;

	if (argc < 3)
		usage();
	stop_init(&drv_stop);
	stop_init(&drv_done);
	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--metrics") == 0) {
			metrics = 1;
			continue;
		}
		if (v == NULL)
			usage();
		i++;
		if (strcmp(a, "--kube-api-qps") == 0)
			qps = strtod(v, NULL);
		else if (strcmp(a, "--kube-api-burst") == 0)
			burst = (int)strtol(v, NULL, 10);
		else if (strcmp(a, "--retries") == 0)
			opt_retries = (int)strtol(v, NULL, 10);
		else if (strcmp(a, "--backoff-ms") == 0)
			sscanf(v, "%ld,%ld", &opt_base_ms, &opt_cap_ms);
		else if (strcmp(a, "--stop-after-ms") == 0)
			opt_stop_after_ms = strtol(v, NULL, 10);
		else if (strcmp(a, "-v") == 0)
			verbosity = (int)strtol(v, NULL, 10);
		else
			usage();
	}
	if (i >= argc)
		usage();
	log_init(verbosity, LOG_TEXT, 2);
	if (http_global_init(&e) < 0 || kubeconfig_load(argv[1], NULL, &kc, &e) < 0) {
		fprintf(stderr, "drv_client: %s\n", e.msg);
		return 1;
	}
	log_add_secret(kc.token);
	const char *cmd = argv[i++];
	int nargs = argc - i;
	char **args = argv + i;
	/* burst starts its limit after its clients connected */
	if (qps > 0 && strcmp(cmd, "burst") != 0)
		flowcontrol_init(qps, burst);
	if (opt_stop_after_ms > 0)
		pthread_create(&stop_thread, NULL, stopper, NULL);
	if (client_new(&c) < 0)
		return 1;
	{
		json_object *info = json_object_new_object();
		json_object_object_add(info, "op", json_object_new_string("info"));
		json_object_object_add(info, "retry_max", json_object_new_int(KUBE_RETRY_MAX));
		json_object_object_add(info, "conflict_retries",
		    json_object_new_int(KUBE_CONFLICT_RETRIES));
		json_object_object_add(info, "host", json_object_new_string(c.host));
		emit(info);
	}

	double t0 = now_s();
	long status = 0;
	json_object *out = NULL, *res;

	if (strcmp(cmd, "request") == 0 && nargs >= 2) {
		rc = kube_request(&c, args[0], args[1], nargs > 3 ? args[3] : "application/json",
		    nargs > 2 ? args[2] : NULL, &out, &status, &e);
		res = result(cmd, rc, status, &e, t0);
	} else if (strcmp(cmd, "stream") == 0 && nargs == 2) {
		struct counted n = { 0, 0 };
		rc = kube_request_stream(&c, args[0], count_cb, &n, strtol(args[1], NULL, 10),
		    &status, &e);
		res = result(cmd, rc, status, &e, t0);
		json_object_object_add(res, "bytes", json_object_new_int64((int64_t)n.bytes));
		json_object_object_add(res, "lines", json_object_new_int64((int64_t)n.lines));
	} else if ((strcmp(cmd, "patch-merge") == 0 || strcmp(cmd, "patch-json") == 0) &&
	    nargs == 3) {
		json_object *p = parse(args[2]);
		if (strcmp(cmd, "patch-merge") == 0)
			rc = kube_patch_merge(&c, args[0], p, args[1], &out, &status, &e);
		else
			rc = kube_patch_json(&c, args[0], p, args[1], &out, &status, &e);
		json_object_put(p);
		res = result(cmd, rc, status, &e, t0);
	} else if ((strcmp(cmd, "create") == 0 || strcmp(cmd, "update") == 0) && nargs == 2) {
		json_object *o = parse(args[1]);
		if (strcmp(cmd, "create") == 0)
			rc = kube_create(&c, args[0], o, &out, &e);
		else
			rc = kube_update(&c, args[0], o, &out, &e);
		json_object_put(o);
		res = result(cmd, rc, 0, &e, t0);
	} else if (strcmp(cmd, "label") == 0 && nargs >= 4) {
		struct label_job j = { .key = args[1], .value = args[2],
		    .json = strcmp(args[3], "json") == 0,
		    .pause = nargs > 4 && strcmp(args[4], "pause") == 0 };
		rc = kube_patch_retry(&c, args[0], label_build, &j, &out, &e);
		res = result(cmd, rc, 0, &e, t0);
		json_object_object_add(res, "builds", json_object_new_int(j.builds));
	} else if (strcmp(cmd, "path") == 0 && nargs >= 4) {
		const char *q[8] = { NULL };
		char *path = NULL;
		int nq = 0;
		for (int k = 4; k < nargs && nq < 6; k++) {
			char *eq = strchr(args[k], '=');
			if (eq == NULL)
				usage();
			*eq = '\0';
			q[nq++] = args[k];
			q[nq++] = eq + 1;
		}
#define OPT(s) (strcmp(s, "-") == 0 ? NULL : (s))
		rc = kube_path(&path, args[0], OPT(args[1]), args[2], OPT(args[3]), NULL,
		    q[0], q[1], q[2], q[3], q[4], q[5], NULL);
#undef OPT
		if (rc == 0)
			rc = kube_request(&c, "GET", path, NULL, NULL, &out, &status, &e);
		else
			errbuf_set(&e, rc, "kube_path failed");
		res = result(cmd, rc, status, &e, t0);
		json_object_object_add(res, "path", json_object_new_string(path ? path : ""));
		free(path);
	} else if (strcmp(cmd, "burst") == 0 && nargs == 3) {
		struct burst b = { .lock = PTHREAD_MUTEX_INITIALIZER,
		    .left = (int)strtol(args[0], NULL, 10), .path = args[2] };
		int nt = (int)strtol(args[1], NULL, 10);
		pthread_t t[32];
		if (nt < 1 || nt > 32)
			usage();
		pthread_barrier_init(&b.warm, NULL, (unsigned)nt + 1);
		pthread_barrier_init(&b.go, NULL, (unsigned)nt + 1);
		for (int k = 0; k < nt; k++)
			pthread_create(&t[k], NULL, burst_thread, &b);
		pthread_barrier_wait(&b.warm);
		if (qps > 0)
			flowcontrol_init(qps, burst);
		t0 = now_s();
		pthread_barrier_wait(&b.go);
		for (int k = 0; k < nt; k++)
			pthread_join(t[k], NULL);
		pthread_barrier_destroy(&b.warm);
		pthread_barrier_destroy(&b.go);
		res = result(cmd, b.failed ? ERR_TRANSIENT : 0, 0, &e, t0);
		json_object_object_add(res, "ok", json_object_new_int(b.ok));
		json_object_object_add(res, "failed", json_object_new_int(b.failed));
	} else {
		usage();
	}
	if (out)
		json_object_object_add(res, "object", out);
	emit(res);
	if (metrics)
		print_metrics();
	if (opt_stop_after_ms > 0) {
		stop_request(&drv_done);
		pthread_join(stop_thread, NULL);
	}
	kube_client_cleanup(&c);
	kubeconfig_free(&kc);
	return rc < 0 ? 3 : 0;
}
