/* drv_servicectl.c - runs the service controller against an API server with
 * a scripted load-balancer provider, for
 * tests/integration/test_service_controller.py.
 *
 *   drv_servicectl KUBECONFIG SCRIPT [--workers N] [--class NAME]...
 *       [--class-only 0|1] [--sync-period D] [--update-hosts 0|1]
 *       [--verify 0|1] [--leading 0|1] [-v N]
 *
 * SCRIPT (JSON, re-read at every provider call, so a test can change it);
 * each per-Service table is looked up by "namespace/name", then "*":
 *   {"ensure": {"ns/name": {"status": [{"ip": "192.0.2.1", "ipMode": "Proxy"},
 *                                      {"hostname": "lb.example.com"}],
 *                           "annotations": {"key": "value", "gone": null},
 *                           "error": null | ERROR, "delay": SECONDS}},
 *    "ensure_deleted": {"ns/name": {"error": ..., "annotations": {...}}},
 *    "update_hosts": {"ns/name": {"error": ...}},
 *    "get": {"ns/name": {"exists": true, "status": [...], "error": ...}},
 *    "verify": {"drifted": ["ns/name", ...], "error": ...},
 *    "node_selector": {"ns/name": "pool=gpu"},
 *    "observe_frees": ["ns/name", ...]}
 * ERROR is "transient", "permanent", "unavailable" (ERR_UNAVAILABLE),
 * "elsewhere" (ERR_IMPLEMENTED_ELSEWHERE) or "not-implemented". get without
 * an entry answers that the balancer exists with the Service's own status.
 * observe returns 1 (freed) when a Service listed in observe_frees is
 * deleted. --update-hosts 0 / --verify 0 leave those operations out.
 *
 * Every provider call is printed on stdout as a JSON line, {"call": "ensure",
 * "key": "ns/name", "t": MONOTONIC-SECONDS, "nodes": ["n1", ...],
 * "snapshot": "0x...", "served": 1} ("snapshot": where the nodes array is;
 * an ensure with a "delay" answers that many seconds later)
 * (ensure, update_hosts, ensure_deleted, get, observe with "deleted", and
 * verify with "keys"; "wall" is the real time, to compare with the fake API
 * server's request log), so tests assert the exact calls. Lines on stdin:
 * "stop" stops the controller (as when leadership is lost) and prints
 * {"event":"stopped-leading"}; "start" starts it and prints
 * {"event":"started-leading"}. Prints {"event":"ready"} once running and,
 * on SIGTERM, {"event":"stopped"}. */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "controllers/servicectl.h"
#include "base/duration.h"
#include "http/http.h"
#include "kube/events.h"
#include "kube/node.h"
#include "kube/reflector.h"
#include "kube/service.h"
#include "config/kubeconfig.h"
#include "base/log.h"
#include "base/stop.h"

static struct stop drv_stop;
static const char *drv_script;
static pthread_mutex_t drv_out = PTHREAD_MUTEX_INITIALIZER;
static struct servicectl *drv_ctl;

/* drv_print writes one line on stdout, whole. */
static void drv_print(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
drv_print(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&drv_out);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	pthread_mutex_unlock(&drv_out);
}

/* drv_call prints a provider call: its name, the Service, and extra JSON. */
static void
drv_call(const char *call, const struct cloud_service *svc, const char *key,
    json_object *extra)
{
	json_object *o = extra ? extra : json_object_new_object();
	char k[512];

	if (svc != NULL)
		snprintf(k, sizeof(k), "%s/%s", svc->namespace_, svc->name);
	else
		snprintf(k, sizeof(k), "%s", key);
	json_object_object_add(o, "call", json_object_new_string(call));
	json_object_object_add(o, "key", json_object_new_string(k));
	json_object_object_add(o, "t", json_object_new_double((double)clock_mono_ns() / NS_PER_S));
	json_object_object_add(o, "wall", json_object_new_double((double)clock_real_ns() / NS_PER_S));
	if (svc != NULL) {
		json_object_object_add(o, "served", json_object_new_int(svc->served));
		json_object_object_add(o, "uid", json_object_new_string(svc->uid ? svc->uid : ""));
	}
	drv_print("%s", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static json_object *
drv_nodes(const struct cloud_node *nodes, size_t n)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();
	char at[32];

	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(nodes[i].name));
	json_object_object_add(o, "nodes", a);
	snprintf(at, sizeof(at), "%p", (const void *)nodes);
	json_object_object_add(o, "snapshot", json_object_new_string(at));
	return o;
}

/* drv_entry returns the script's entry for svc in table (a new reference),
 * or NULL. */
static json_object *
drv_entry(const char *table, const struct cloud_service *svc)
{
	json_object *o = json_object_from_file(drv_script), *t, *v = NULL;
	char key[512];

	if (o == NULL)
		return NULL;
	snprintf(key, sizeof(key), "%s/%s", svc->namespace_, svc->name);
	if (json_object_object_get_ex(o, table, &t) &&
	    (json_object_object_get_ex(t, key, &v) || json_object_object_get_ex(t, "*", &v)))
		json_object_get(v);
	else
		v = NULL;
	json_object_put(o);
	return v;
}

/* drv_error returns the entry's scripted error, or 0. */
static int
drv_error(json_object *entry, const char *call, const struct cloud_service *svc,
    struct errbuf *e)
{
	json_object *v;
	const char *s;
	int code;

	if (entry == NULL || !json_object_object_get_ex(entry, "error", &v) ||
	    !json_object_is_type(v, json_type_string))
		return 0;
	s = json_object_get_string(v);
	if (strcmp(s, "transient") == 0)
		code = ERR_TRANSIENT;
	else if (strcmp(s, "unavailable") == 0)
		code = ERR_UNAVAILABLE;
	else if (strcmp(s, "elsewhere") == 0)
		code = ERR_IMPLEMENTED_ELSEWHERE;
	else if (strcmp(s, "not-implemented") == 0)
		code = ERR_NOT_IMPLEMENTED;
	else
		code = ERR_PERMANENT;
	return errbuf_set(e, code, "scripted: %s of %s/%s answers %s", call, svc->namespace_,
	    svc->name, s);
}

static void
drv_status(json_object *entry, struct cloud_lb_status *st)
{
	json_object *a, *x, *v;

	memset(st, 0, sizeof(*st));
	if (entry == NULL || !json_object_object_get_ex(entry, "status", &a))
		return;
	for (size_t i = 0; i < json_object_array_length(a) && i < CLOUD_LB_INGRESS_MAX; i++) {
		struct cloud_lb_ingress *g = &st->ingress[st->n_ingress++];
		x = json_object_array_get_idx(a, i);
		if (json_object_object_get_ex(x, "ip", &v))
			snprintf(g->ip, sizeof(g->ip), "%s", json_object_get_string(v));
		if (json_object_object_get_ex(x, "hostname", &v))
			snprintf(g->hostname, sizeof(g->hostname), "%s", json_object_get_string(v));
		if (json_object_object_get_ex(x, "ipMode", &v))
			snprintf(g->ip_mode, sizeof(g->ip_mode), "%s", json_object_get_string(v));
	}
}

static void
drv_annotations(json_object *entry, struct cloud_lb_result *ret)
{
	json_object *a;

	if (entry == NULL || !json_object_object_get_ex(entry, "annotations", &a))
		return;
	json_object_object_foreach(a, k, v) {
		struct cloud_lb_annotation *an;
		if (ret->n_annotations == CLOUD_LB_ANNOTATIONS_MAX)
			break;
		an = &ret->annotations[ret->n_annotations++];
		snprintf(an->key, sizeof(an->key), "%s", k);
		if (v == NULL)
			an->remove = 1;
		else
			snprintf(an->value, sizeof(an->value), "%s", json_object_get_string(v));
	}
}

static int
drv_get(void *state, const char *cluster, const struct cloud_service *svc,
    struct cloud_lb_status *ret_status, int *ret_exists, struct errbuf *e)
{
	json_object *entry = drv_entry("get", svc), *v;
	int r;

	(void)state, (void)cluster;
	drv_call("get", svc, NULL, NULL);
	if ((r = drv_error(entry, "get", svc, e)) == 0) {
		*ret_exists = 1;
		if (entry != NULL && json_object_object_get_ex(entry, "exists", &v))
			*ret_exists = json_object_get_boolean(v);
		if (entry != NULL && json_object_object_get_ex(entry, "status", &v))
			drv_status(entry, ret_status);
		else
			*ret_status = *svc->status;
	}
	json_object_put(entry);
	return r;
}

static int
drv_ensure(void *state, const char *cluster, const struct cloud_service *svc,
    const struct cloud_node *nodes, size_t n_nodes, struct cloud_lb_result *ret,
    struct errbuf *e)
{
	json_object *entry = drv_entry("ensure", svc), *v;
	int r;

	(void)state, (void)cluster;
	drv_call("ensure", svc, NULL, drv_nodes(nodes, n_nodes));
	if (entry != NULL && json_object_object_get_ex(entry, "delay", &v))
		stop_sleep(&drv_stop, (int64_t)(json_object_get_double(v) * NS_PER_S));
	if ((r = drv_error(entry, "ensure", svc, e)) == 0) {
		memset(ret, 0, sizeof(*ret));
		drv_status(entry, &ret->status);
		drv_annotations(entry, ret);
	}
	json_object_put(entry);
	return r;
}

static int
drv_update_hosts(void *state, const char *cluster, const struct cloud_service *svc,
    const struct cloud_node *nodes, size_t n_nodes, struct errbuf *e)
{
	json_object *entry = drv_entry("update_hosts", svc);
	int r;

	(void)state, (void)cluster;
	drv_call("update_hosts", svc, NULL, drv_nodes(nodes, n_nodes));
	r = drv_error(entry, "update_hosts", svc, e);
	json_object_put(entry);
	return r;
}

static int
drv_ensure_deleted(void *state, const char *cluster, const struct cloud_service *svc,
    struct cloud_lb_result *ret, struct errbuf *e)
{
	json_object *entry = drv_entry("ensure_deleted", svc);
	int r;

	(void)state, (void)cluster;
	drv_call("ensure_deleted", svc, NULL, NULL);
	if ((r = drv_error(entry, "ensure_deleted", svc, e)) == 0) {
		memset(ret, 0, sizeof(*ret));
		drv_annotations(entry, ret);
	}
	json_object_put(entry);
	return r;
}

/* drv_verify_key writes the i-th Service's namespace/name into key. */
static void
drv_verify_key(const struct cloud_services *svcs, size_t i, char *key, size_t size)
{
	const struct cloud_service *svc = svcs->at(svcs->arg, i);

	snprintf(key, size, "%s/%s", svc->namespace_, svc->name);
}

static int
drv_verify(void *state, const char *cluster, const struct cloud_services *svcs,
    const struct cloud_node *nodes, size_t n_nodes, unsigned char *drifted, struct errbuf *e)
{
	json_object *o = json_object_from_file(drv_script), *v, *d = NULL, *keys;
	char key[512];
	int r = 0;

	(void)state, (void)cluster, (void)nodes, (void)n_nodes;
	keys = json_object_new_array();
	for (size_t i = 0; i < svcs->n; i++) {
		drv_verify_key(svcs, i, key, sizeof(key));
		json_object_array_add(keys, json_object_new_string(key));
	}
	v = json_object_new_object();
	json_object_object_add(v, "keys", keys);
	drv_call("verify", NULL, "", v);
	if (o != NULL && json_object_object_get_ex(o, "verify", &v)) {
		json_object *err;
		if (json_object_object_get_ex(v, "error", &err) && err != NULL)
			r = errbuf_set(e, ERR_TRANSIENT, "scripted: verify answers %s",
			    json_object_get_string(err));
		json_object_object_get_ex(v, "drifted", &d);
	}
	for (size_t i = 0; r == 0 && i < svcs->n; i++) {
		drifted[i] = 0;
		drv_verify_key(svcs, i, key, sizeof(key));
		for (size_t j = 0; d != NULL && j < json_object_array_length(d); j++)
			if (strcmp(json_object_get_string(json_object_array_get_idx(d, j)), key) == 0)
				drifted[i] = 1;
	}
	json_object_put(o);
	return r;
}

static const char *
drv_node_selector(void *state, const struct cloud_service *svc)
{
	static __thread char buf[512];
	json_object *o = json_object_from_file(drv_script), *t, *v;
	char key[512];
	const char *ret = NULL;

	(void)state;
	snprintf(key, sizeof(key), "%s/%s", svc->namespace_, svc->name);
	if (o != NULL && json_object_object_get_ex(o, "node_selector", &t) &&
	    json_object_object_get_ex(t, key, &v)) {
		snprintf(buf, sizeof(buf), "%s", json_object_get_string(v));
		ret = buf;
	}
	json_object_put(o);
	return ret;
}

static int
drv_observe(void *state, const char *key, const struct cloud_service *svc)
{
	json_object *o, *t, *x = json_object_new_object();
	int freed = 0;

	(void)state;
	json_object_object_add(x, "deleted", json_object_new_boolean(svc == NULL));
	drv_call("observe", svc, key, x);
	if (svc != NULL)
		return 0;
	o = json_object_from_file(drv_script);
	if (o != NULL && json_object_object_get_ex(o, "observe_frees", &t))
		for (size_t j = 0; j < json_object_array_length(t); j++)
			if (strcmp(json_object_get_string(json_object_array_get_idx(t, j)), key) == 0)
				freed = 1;
	json_object_put(o);
	return freed;
}

static struct cloud_lb_ops drv_lb = {
	.get = drv_get,
	.ensure = drv_ensure,
	.update_hosts = drv_update_hosts,
	.ensure_deleted = drv_ensure_deleted,
	.verify = drv_verify,
	.node_selector = drv_node_selector,
	.observe = drv_observe,
};

static const struct cloud_provider drv_provider = {
	.name = "scripted",
	.load_balancers = &drv_lb,
};

/* Leadership changes one at a time, as the lease's callbacks make them:
 * the command thread and the shutdown in main take drv_leading_mu, and no
 * command is obeyed once the shutdown began. */
static pthread_mutex_t drv_leading_mu = PTHREAD_MUTEX_INITIALIZER;
static int drv_shutting_down;

/* drv_commands reads "start" / "stop" lines from stdin: leadership. */
static void *
drv_commands(void *arg)
{
	char line[64];
	struct errbuf e = { "" };

	(void)arg;
	while (fgets(line, sizeof(line), stdin) != NULL) {
		pthread_mutex_lock(&drv_leading_mu);
		if (drv_shutting_down) {
			pthread_mutex_unlock(&drv_leading_mu);
			break;
		}
		if (strncmp(line, "stop", 4) == 0) {
			servicectl_stop(drv_ctl);
			drv_print("{\"event\":\"stopped-leading\"}");
		} else if (strncmp(line, "start", 5) == 0) {
			if (servicectl_start(drv_ctl, &e) < 0)
				fprintf(stderr, "drv_servicectl: %s\n", e.msg);
			drv_print("{\"event\":\"started-leading\"}");
		}
		pthread_mutex_unlock(&drv_leading_mu);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	struct kubeconfig kc;
	struct errbuf e = { "" };
	struct reflector *nodes = NULL, *services = NULL;
	struct events *ev = NULL;
	struct events_config ec = { .host = "drv" };
	char classes[1024] = "";
	int64_t period = 300 * NS_PER_S;
	long workers = 1, class_only = 0, leading = 1, v = 0;
	pthread_t cmd;

	if (argc < 3) {
		fprintf(stderr, "usage: drv_servicectl KUBECONFIG SCRIPT [options]\n");
		return 2;
	}
	drv_script = argv[2];
	for (int i = 3; i + 1 < argc; i += 2) {
		const char *a = argv[i], *val = argv[i + 1];
		if (strcmp(a, "--workers") == 0)
			workers = atol(val);
		else if (strcmp(a, "--class") == 0)
			snprintf(classes + strlen(classes), sizeof(classes) - strlen(classes), "%s%s",
			    classes[0] ? "," : "", val);
		else if (strcmp(a, "--class-only") == 0)
			class_only = atol(val);
		else if (strcmp(a, "--sync-period") == 0 && duration_parse(val, &period) == 0)
			;
		else if (strcmp(a, "--update-hosts") == 0)
			drv_lb.update_hosts = atol(val) ? drv_update_hosts : NULL;
		else if (strcmp(a, "--verify") == 0)
			drv_lb.verify = atol(val) ? drv_verify : NULL;
		else if (strcmp(a, "--leading") == 0)
			leading = atol(val);
		else if (strcmp(a, "-v") == 0)
			v = atol(val);
		else {
			fprintf(stderr, "drv_servicectl: bad option %s %s\n", a, val);
			return 2;
		}
	}
	log_init((int)v, LOG_TEXT, 2);
	signal(SIGPIPE, SIG_IGN);
	stop_init(&drv_stop);
	stop_on_signals(&drv_stop);

	struct reflector_config rn = {
		.resource = "nodes", .path = KUBE_NODE_PATH, .decode = kube_node_decode_obj,
	};
	struct reflector_config rs = {
		.resource = "services", .path = KUBE_SERVICE_PATH, .namespaced = 1,
		.decode = kube_service_decode_obj,
	};
	if (http_global_init(&e) < 0 || kubeconfig_load(argv[1], NULL, &kc, &e) < 0 ||
	    events_new(&kc, &ec, &ev, &e) < 0 || events_start(ev, &e) < 0 ||
	    reflector_new(&kc, &rn, &nodes, &e) < 0 || reflector_new(&kc, &rs, &services, &e) < 0) {
		fprintf(stderr, "drv_servicectl: %s\n", e.msg);
		return 1;
	}
	struct servicectl_config sc = {
		.kc = &kc, .services = services, .nodes = nodes, .provider = &drv_provider,
		.events = ev, .cluster_name = "drv", .classes = classes[0] ? classes : NULL,
		.class_only = (int)class_only, .workers = (int)workers, .sync_period_ns = period,
	};
	if (servicectl_new(&sc, &drv_ctl, &e) < 0 || reflector_start(nodes, &e) < 0 ||
	    reflector_start(services, &e) < 0 || (leading && servicectl_start(drv_ctl, &e) < 0)) {
		fprintf(stderr, "drv_servicectl: %s\n", e.msg);
		return 1;
	}
	pthread_create(&cmd, NULL, drv_commands, NULL);
	pthread_detach(cmd);
	drv_print("{\"event\":\"ready\"}");
	stop_sleep_until(&drv_stop, INT64_MAX);
	pthread_mutex_lock(&drv_leading_mu);
	drv_shutting_down = 1;
	servicectl_stop(drv_ctl);
	pthread_mutex_unlock(&drv_leading_mu);
	reflector_stop(services);  /* their threads call the controller's handlers */
	reflector_stop(nodes);
	servicectl_free(drv_ctl);
	reflector_free(services);
	reflector_free(nodes);
	events_stop(ev, 2 * NS_PER_S);
	events_free(ev);
	kubeconfig_free(&kc);
	drv_print("{\"event\":\"stopped\"}");
	return 0;
}
