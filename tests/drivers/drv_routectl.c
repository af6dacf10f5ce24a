/* drv_routectl.c - runs the route controller against the fake API server
 * for tests/integration/test_route_controller.py, with a scripted route
 * provider: an in-memory route table the test seeds and reads, failures
 * injected per call, calls held at a gate, and every call reported.
 *
 *   drv_routectl KUBECONFIG [--cluster-cidr CIDRS] [--period D]
 *       [--concurrency N] [--cluster-name NAME] [--seed FILE] [-v N]
 *
 * --seed FILE is the cloud as it starts: {"routes": [...] as for "seed",
 * "fails": [...] as many "fail" commands, "gate": true to start closed}.
 * Commands on stdin, one JSON object a line, each answered by a line
 * {"event":"ok","cmd":...} (or {"event":"table",...} for "table"):
 *   {"cmd":"seed","routes":[{"name":N,"target":NODE,"cidr":C,"blackhole":B}]}
 *                                    replace the table
 *   {"cmd":"blackhole","cidr":C,"value":true}   flag the routes to C
 *   {"cmd":"fail","op":"list"|"create"|"delete","code":"transient"|
 *        "rate-limited"|"permanent","count":N,"cidr":C}
 *                                    the next N calls of op (-1: every one;
 *                                    for cidr C only, when given) fail
 *   {"cmd":"clear"}                  no more failures
 *   {"cmd":"gate","closed":true|false}  creates wait while it is closed
 *   {"cmd":"table"}                  {"event":"table","routes":[...]}
 *   {"cmd":"stop"} / {"cmd":"start"} routectl_stop / routectl_start
 *                                    (leadership lost and won)
 * Lines on stdout (JSON; "t" is CLOCK_MONOTONIC seconds, Python's
 * time.monotonic()):
 *   {"event":"ready"}                the controller was started
 *   {"event":"call","op":"list","rc":"ok"|CODE,"routes":N,"t":T}
 *   {"event":"call","op":"create","phase":"begin","name":"","cidr":C,
 *    "node":NODE,"hint":UID,"target":NODE,"targetCIDRs":[...],"inflight":K,"t":T}
 *   {"event":"call","op":"create","phase":"end","name":"","cidr":C,"node":NODE,
 *    "rc":..,"t":T}
 *   {"event":"call","op":"delete","name":N,"cidr":C,"node":NODE,"rc":..,"t":T}
 *   {"event":"pass","passes":N,"syncs":{"OUTCOME/TRIGGER":K,...},"t":T}
 *                                    a pass has completed (passes: those the
 *                                    duration histogram observed; syncs:
 *                                    route_controller_route_sync_total's
 *                                    series), on a change of either
 *   {"event":"exit","maxInflight":K,"stopSeconds":S} on SIGTERM */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "base/clock.h"
#include "cloud.h"
#include "controllers/routectl.h"
#include "base/duration.h"
#include "http/http.h"
#include "kube/events.h"
#include "kube/node.h"
#include "kube/reflector.h"
#include "config/kubeconfig.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/stop.h"
#include "base/xalloc.h"

#define DRV_LINE_MAX (256 * 1024)  /* bytes: one command line */
#define DRV_FAILS_MAX 64
#define DRV_PASSES "bootccm_route_pass_duration_seconds_count "
#define DRV_SYNCS "\nroute_controller_route_sync_total{outcome=\""

static struct stop drv_stop;
static pthread_mutex_t drv_out_lock = PTHREAD_MUTEX_INITIALIZER;

struct drv_fail {
	char op[16];
	char cidr[CLOUD_CIDR_MAX];     /* "" = any */
	int code;
	long count;                    /* -1: for ever */
};

/* The scripted cloud: its route table and its behaviour (lock). */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t gate_cv;
	struct cloud_route *routes;
	size_t n, cap;
	struct drv_fail fails[DRV_FAILS_MAX];
	size_t nfails;
	int gate_closed;
	int inflight, max_inflight;    /* creates */
	unsigned long seq;             /* names of created routes */
} drv = {
	.lock = PTHREAD_MUTEX_INITIALIZER, .gate_cv = PTHREAD_COND_INITIALIZER,
};

static void
drv_emit(json_object *o)
{
	json_object_object_add(o, "t", json_object_new_double((double)clock_mono_ns() /
	    NS_PER_S));
	pthread_mutex_lock(&drv_out_lock);
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	fflush(stdout);
	pthread_mutex_unlock(&drv_out_lock);
	json_object_put(o);
}

static json_object *
drv_event(const char *name)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "event", json_object_new_string(name));
	return o;
}

static void
drv_str(json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, json_object_new_string(v ? v : ""));
}

/* drv_call starts a "call" line of op about route r (NULL: none). */
static json_object *
drv_call(const char *op, const char *phase, const struct cloud_route *r)
{
	json_object *o = drv_event("call");

	drv_str(o, "op", op);
	if (phase != NULL)
		drv_str(o, "phase", phase);
	if (r != NULL) {
		drv_str(o, "name", r->name);
		drv_str(o, "cidr", r->destination_cidr);
		drv_str(o, "node", r->target_node);
	}
	return o;
}

static const char *
drv_rc(int rc)
{
	return rc == 0 ? "ok" : err_str(rc);
}

/* drv_failure returns the injected failure for one call of op, or 0
 * (drv.lock held). */
static int
drv_failure(const char *op, const char *cidr)
{
	for (size_t i = 0; i < drv.nfails; i++) {
		struct drv_fail *f = &drv.fails[i];
		if (f->count == 0 || strcmp(f->op, op) != 0 ||
		    (f->cidr[0] && (cidr == NULL || strcmp(f->cidr, cidr) != 0)))
			continue;
		if (f->count > 0)
			f->count--;
		return f->code;
	}
	return 0;
}

static json_object *
drv_route_json(const struct cloud_route *r)
{
	json_object *o = json_object_new_object();

	drv_str(o, "name", r->name);
	drv_str(o, "target", r->target_node);
	drv_str(o, "cidr", r->destination_cidr);
	json_object_object_add(o, "blackhole", json_object_new_boolean(r->blackhole));
	return o;
}

static int
drv_list(void *state, const char *cluster, cloud_route_cb cb, void *arg, struct errbuf *e)
{
	struct cloud_route *copy;
	size_t n;
	int rc, r = 0;
	json_object *o = drv_call("list", NULL, NULL);

	(void)state;
	(void)cluster;
	pthread_mutex_lock(&drv.lock);
	rc = drv_failure("list", NULL);
	n = drv.n;
	copy = xcalloc(n ? n : 1, sizeof(*copy));
	if (n > 0)
		memcpy(copy, drv.routes, n * sizeof(*copy));
	pthread_mutex_unlock(&drv.lock);
	drv_str(o, "rc", drv_rc(rc));
	json_object_object_add(o, "routes", json_object_new_int64(rc ? 0 : (int64_t)n));
	drv_emit(o);
	if (rc < 0) {
		free(copy);
		return errbuf_set(e, rc, "scripted: listing routes: %s", err_str(rc));
	}
	for (size_t i = 0; i < n && r == 0; i++)
		r = cb(&copy[i], arg);
	free(copy);
	return r;
}

static int
drv_create(void *state, const char *cluster, const char *name_hint,
    const struct cloud_route *route, const struct cloud_node *target, struct errbuf *e)
{
	json_object *o = drv_call("create", "begin", route), *cidrs = json_object_new_array();
	size_t i;
	int rc, stopping = 0;

	(void)state;
	(void)cluster;
	for (i = 0; i < target->n_pod_cidrs; i++)
		json_object_array_add(cidrs, json_object_new_string(target->pod_cidrs[i]));
	pthread_mutex_lock(&drv.lock);
	drv.inflight++;
	if (drv.inflight > drv.max_inflight)
		drv.max_inflight = drv.inflight;
	drv_str(o, "hint", name_hint);
	drv_str(o, "target", target->name);
	json_object_object_add(o, "targetCIDRs", cidrs);
	json_object_object_add(o, "inflight", json_object_new_int(drv.inflight));
	drv_emit(o);
	while (drv.gate_closed && !(stopping = stop_requested(&drv_stop)))
		pthread_cond_wait(&drv.gate_cv, &drv.lock);
	rc = stopping ? ERR_CANCELED : drv_failure("create", route->destination_cidr);
	for (i = 0; rc == 0 && i < drv.n; i++)
		if (strcmp(drv.routes[i].destination_cidr, route->destination_cidr) == 0 &&
		    strcmp(drv.routes[i].target_node, route->target_node) == 0 &&
		    !drv.routes[i].blackhole)
			break;  /* idempotent */
	if (rc == 0 && i == drv.n) {
		struct cloud_route *r;
		if (drv.n == drv.cap) {
			drv.cap = drv.cap ? drv.cap * 2 : 16;
			drv.routes = xreallocarray(drv.routes, drv.cap, sizeof(*drv.routes));
		}
		r = &drv.routes[drv.n++];
		*r = *route;
		snprintf(r->name, sizeof(r->name), "route-%lu", ++drv.seq);
		r->blackhole = 0;
	}
	drv.inflight--;
	o = drv_call("create", "end", route);
	drv_str(o, "rc", drv_rc(rc));
	drv_emit(o);
	pthread_mutex_unlock(&drv.lock);
	if (rc < 0)
		return errbuf_set(e, rc, "scripted: creating route %s to %s: %s",
		    route->destination_cidr, route->target_node, err_str(rc));
	return 0;
}

static int
drv_delete(void *state, const char *cluster, const struct cloud_route *route,
    struct errbuf *e)
{
	json_object *o = drv_call("delete", NULL, route);
	int rc;

	(void)state;
	(void)cluster;
	pthread_mutex_lock(&drv.lock);
	rc = drv_failure("delete", route->destination_cidr);
	for (size_t i = 0; rc == 0 && i < drv.n; i++)
		if (strcmp(drv.routes[i].name, route->name) == 0) {
			memmove(&drv.routes[i], &drv.routes[i + 1],
			    (drv.n - i - 1) * sizeof(drv.routes[0]));
			drv.n--;
			break;
		}
	drv_str(o, "rc", drv_rc(rc));
	drv_emit(o);
	pthread_mutex_unlock(&drv.lock);
	if (rc < 0)
		return errbuf_set(e, rc, "scripted: deleting route %s: %s", route->name,
		    err_str(rc));
	return 0;
}

static const struct cloud_routes_ops drv_routes = {
	.list = drv_list, .create = drv_create, .delete_ = drv_delete,
};

static const struct cloud_provider drv_provider = {
	.name = "scripted-routes",
	.routes = &drv_routes,
};

static const char *
drv_get(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : NULL;
}

static int
drv_code(const char *s)
{
	if (s != NULL && strcmp(s, "rate-limited") == 0)
		return ERR_TOO_MANY_REQUESTS;
	if (s != NULL && strcmp(s, "permanent") == 0)
		return ERR_PERMANENT;
	return ERR_TRANSIENT;
}

/* drv_seed replaces the table with cmd's routes (drv.lock held). */
static void
drv_seed(json_object *cmd)
{
	json_object *rs;
	size_t n;

	drv.n = 0;
	if (!json_object_object_get_ex(cmd, "routes", &rs))
		return;
	n = json_object_array_length(rs);
	if (n > drv.cap) {
		drv.cap = n;
		drv.routes = xreallocarray(drv.routes, drv.cap, sizeof(*drv.routes));
	}
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(rs, i), *b;
		struct cloud_route *d = &drv.routes[drv.n++];
		memset(d, 0, sizeof(*d));
		snprintf(d->name, sizeof(d->name), "%s", drv_get(r, "name") ? drv_get(r, "name") : "");
		snprintf(d->target_node, sizeof(d->target_node), "%s",
		    drv_get(r, "target") ? drv_get(r, "target") : "");
		snprintf(d->destination_cidr, sizeof(d->destination_cidr), "%s",
		    drv_get(r, "cidr") ? drv_get(r, "cidr") : "");
		d->blackhole = json_object_object_get_ex(r, "blackhole", &b) &&
		    json_object_get_boolean(b);
	}
}

/* The controller, started and stopped by commands and by the exit. */
/* drv_fail_add adds a "fail" command's failure (drv.lock held). */
static void
drv_fail_add(json_object *cmd)
{
	struct drv_fail *f;
	json_object *v;

	if (drv.nfails == DRV_FAILS_MAX)
		return;
	f = &drv.fails[drv.nfails++];
	memset(f, 0, sizeof(*f));
	snprintf(f->op, sizeof(f->op), "%s", drv_get(cmd, "op") ? drv_get(cmd, "op") : "");
	snprintf(f->cidr, sizeof(f->cidr), "%s", drv_get(cmd, "cidr") ? drv_get(cmd, "cidr") : "");
	f->code = drv_code(drv_get(cmd, "code"));
	f->count = json_object_object_get_ex(cmd, "count", &v) ? json_object_get_int64(v) : 1;
}

struct drv_ctl {
	pthread_mutex_t lock;
	struct routectl *c;
	int exiting;                   /* no more commands (lock) */
};

/* drv_command carries out one command line. */
static void
drv_command(struct drv_ctl *ctl, json_object *cmd)
{
	const char *name = drv_get(cmd, "cmd");
	json_object *o, *v;
	struct errbuf e = { "" };

	if (name == NULL)
		name = "";
	if (strcmp(name, "start") == 0 || strcmp(name, "stop") == 0) {
		pthread_mutex_lock(&ctl->lock);
		if (ctl->exiting)
			;
		else if (strcmp(name, "stop") == 0)
			routectl_stop(ctl->c);
		else if (routectl_start(ctl->c, &e) < 0)
			fprintf(stderr, "drv_routectl: %s\n", e.msg);
		pthread_mutex_unlock(&ctl->lock);
	} else if (strcmp(name, "table") == 0) {
		o = drv_event("table");
		v = json_object_new_array();
		pthread_mutex_lock(&drv.lock);
		for (size_t i = 0; i < drv.n; i++)
			json_object_array_add(v, drv_route_json(&drv.routes[i]));
		pthread_mutex_unlock(&drv.lock);
		json_object_object_add(o, "routes", v);
		drv_emit(o);
		return;
	} else {
		pthread_mutex_lock(&drv.lock);
		if (strcmp(name, "seed") == 0) {
			drv_seed(cmd);
		} else if (strcmp(name, "blackhole") == 0) {
			const char *cidr = drv_get(cmd, "cidr");
			int on = !json_object_object_get_ex(cmd, "value", &v) ||
			    json_object_get_boolean(v);
			for (size_t i = 0; cidr && i < drv.n; i++)
				if (strcmp(drv.routes[i].destination_cidr, cidr) == 0)
					drv.routes[i].blackhole = on;
		} else if (strcmp(name, "fail") == 0) {
			drv_fail_add(cmd);
		} else if (strcmp(name, "clear") == 0) {
			drv.nfails = 0;
		} else if (strcmp(name, "gate") == 0) {
			drv.gate_closed = json_object_object_get_ex(cmd, "closed", &v) &&
			    json_object_get_boolean(v);
			pthread_cond_broadcast(&drv.gate_cv);
		} else {
			fprintf(stderr, "drv_routectl: unknown command %s\n", name);
		}
		pthread_mutex_unlock(&drv.lock);
	}
	o = drv_event("ok");
	drv_str(o, "cmd", name);
	drv_emit(o);
}

/* drv_reader carries out the commands on stdin until it ends. */
static void *
drv_reader(void *arg)
{
	char *line = xmalloc(DRV_LINE_MAX);

	while (fgets(line, DRV_LINE_MAX, stdin) != NULL) {
		json_object *cmd = json_tokener_parse(line);
		if (cmd == NULL) {
			fprintf(stderr, "drv_routectl: not JSON: %s", line);
			continue;
		}
		drv_command(arg, cmd);
		json_object_put(cmd);
	}
	free(line);
	return NULL;
}

/* drv_passes returns how many passes have completed, and in *syncs
 * (new) route_controller_route_sync_total's series as "OUTCOME/TRIGGER":
 * count. */
static long
drv_passes(json_object **syncs)
{
	char *text = NULL, *p, *q, *end;
	size_t len;
	long n = 0;

	*syncs = json_object_new_object();
	if (metrics_render(&text, &len) < 0)
		return 0;
	if ((p = strstr(text, DRV_PASSES)) != NULL)
		n = strtol(p + strlen(DRV_PASSES), NULL, 10);
	/* route_controller_route_sync_total{outcome="O",trigger="T"} K */
	for (p = text; (p = strstr(p, DRV_SYNCS)) != NULL; p = end) {
		char key[64];
		p += strlen(DRV_SYNCS);
		if ((q = strchr(p, '"')) == NULL || strncmp(q, "\",trigger=\"", 11) != 0 ||
		    (end = strchr(q + 11, '"')) == NULL)
			break;
		snprintf(key, sizeof(key), "%.*s/%.*s", (int)(q - p), p, (int)(end - q - 11),
		    q + 11);
		json_object_object_add(*syncs, key,
		    json_object_new_int64(strtol(end + 2, NULL, 10)));
	}
	free(text);
	return n;
}

int
main(int argc, char **argv)
{
	struct kubeconfig kc;
	struct errbuf e = { "" };
	struct reflector *nodes = NULL;
	struct events *ev = NULL;
	struct events_config ec = { .host = "drv" };
	struct routectl_config cfg = {
		.provider = &drv_provider,
		.cluster_cidr = "10.244.0.0/16",
		.period_ns = 10 * NS_PER_S,
		.concurrency = 200,
		.user_agent = "drv_routectl",
	};
	struct reflector_config rc = {
		.resource = "nodes", .path = KUBE_NODE_PATH, .decode = kube_node_decode_obj,
		.user_agent = "drv_routectl",
	};
	struct drv_ctl ctl = { .lock = PTHREAD_MUTEX_INITIALIZER };
	pthread_t reader;
	long v = 0, passes = 0, seen = 0;
	json_object *syncs, *seen_syncs = json_object_new_object();
	int64_t t0;
	json_object *o, *seed = NULL;

	if (argc < 2) {
		fprintf(stderr, "usage: drv_routectl KUBECONFIG [options]\n");
		return 2;
	}
	for (int i = 2; i + 1 < argc; i += 2) {
		const char *a = argv[i], *val = argv[i + 1];
		if (strcmp(a, "--cluster-cidr") == 0)
			cfg.cluster_cidr = val;
		else if (strcmp(a, "--period") == 0 && duration_parse(val, &cfg.period_ns) == 0)
			;
		else if (strcmp(a, "--concurrency") == 0)
			cfg.concurrency = (int)strtol(val, NULL, 10);
		else if (strcmp(a, "--cluster-name") == 0)
			cfg.cluster_name = val;
		else if (strcmp(a, "--seed") == 0 && (seed = json_object_from_file(val)) != NULL)
			;
		else if (strcmp(a, "-v") == 0)
			v = strtol(val, NULL, 10);
		else {
			fprintf(stderr, "drv_routectl: bad option %s %s\n", a, val);
			return 2;
		}
	}
	if (seed != NULL) {
		json_object *fails, *gate;
		drv_seed(seed);
		if (json_object_object_get_ex(seed, "fails", &fails))
			for (size_t i = 0; i < json_object_array_length(fails); i++)
				drv_fail_add(json_object_array_get_idx(fails, i));
		drv.gate_closed = json_object_object_get_ex(seed, "gate", &gate) &&
		    json_object_get_boolean(gate);
		json_object_put(seed);
	}
	log_init((int)v, LOG_TEXT, 2);
	signal(SIGPIPE, SIG_IGN);
	stop_init(&drv_stop);
	stop_on_signals(&drv_stop);
	if (http_global_init(&e) < 0 || kubeconfig_load(argv[1], NULL, &kc, &e) < 0 ||
	    events_new(&kc, &ec, &ev, &e) < 0 || events_start(ev, &e) < 0 ||
	    reflector_new(&kc, &rc, &nodes, &e) < 0) {
		fprintf(stderr, "drv_routectl: %s\n", e.msg);
		return 1;
	}
	cfg.kc = &kc;
	cfg.nodes = nodes;
	cfg.events = ev;
	if (routectl_new(&cfg, &ctl.c, &e) < 0 || reflector_start(nodes, &e) < 0 ||
	    routectl_start(ctl.c, &e) < 0) {
		fprintf(stderr, "drv_routectl: %s\n", e.msg);
		return 1;
	}
	drv_emit(drv_event("ready"));
	if (pthread_create(&reader, NULL, drv_reader, &ctl) != 0)
		return 1;
	pthread_detach(reader);
	while (!stop_sleep(&drv_stop, 20 * NS_PER_MS)) {
		passes = drv_passes(&syncs);
		if (passes != seen || !json_object_equal(syncs, seen_syncs)) {
			seen = passes;
			json_object_put(seen_syncs);
			seen_syncs = json_object_get(syncs);
			o = drv_event("pass");
			json_object_object_add(o, "passes", json_object_new_int64(passes));
			json_object_object_add(o, "syncs", syncs);
			drv_emit(o);
		} else {
			json_object_put(syncs);
		}
	}
	json_object_put(seen_syncs);
	/* the gate opens for a stop: a held create ends */
	pthread_mutex_lock(&drv.lock);
	pthread_cond_broadcast(&drv.gate_cv);
	pthread_mutex_unlock(&drv.lock);
	t0 = clock_mono_ns();
	pthread_mutex_lock(&ctl.lock);
	ctl.exiting = 1;
	routectl_stop(ctl.c);
	pthread_mutex_unlock(&ctl.lock);
	o = drv_event("exit");
	pthread_mutex_lock(&drv.lock);
	json_object_object_add(o, "maxInflight", json_object_new_int(drv.max_inflight));
	pthread_mutex_unlock(&drv.lock);
	json_object_object_add(o, "stopSeconds",
	    json_object_new_double((double)(clock_mono_ns() - t0) / NS_PER_S));
	drv_emit(o);
	reflector_stop(nodes);  /* its thread calls the controller's handlers */
	routectl_free(ctl.c);
	reflector_free(nodes);
	events_stop(ev, NS_PER_S);
	events_free(ev);
	kubeconfig_free(&kc);
	free(drv.routes);
	return 0;
}
