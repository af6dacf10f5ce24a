/* drv_reflector.c - runs one reflector against the fake API server for
 * tests/integration/test_reflector.py and reports on stdout, as JSON lines, every
 * handler call, the moment it has synced, and at the end (SIGTERM or
 * SIGINT) its final store and metrics. Logs go to stderr.
 *
 * Usage: drv_reflector KUBECONFIG [options]
 *   --resource nodes|services      (default nodes)
 *   --limit N                      LIST page size
 *   --line-max BYTES               watch line / list item cap
 *   --resync DURATION              re-deliver every object this often
 *   --backoff-min DURATION --backoff-max DURATION
 *   --watch-timeout SECONDS        timeoutSeconds of every watch
 *   --label-selector S --field-selector S
 *   -v N                           log verbosity
 * Lines:
 *   {"event":"add","object":{...}}
 *   {"event":"update","old":{"key":..,"rv":..},"object":{...}}
 *   {"event":"delete","object":{...}}
 *   {"event":"synced","objects":N}
 *   {"event":"store","items":[{...},...],"bytes":N,
 *    "counts":{"add":N,"update":N,"delete":N}}  (from a second handler set)
 *   {"event":"metrics","lines":["bootccm_reflector_...",...]}
 *   {"event":"exit","stopSeconds":S} */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "config/flags.h"
#include "http/http.h"
#include "kube/node.h"
#include "kube/reflector.h"
#include "kube/service.h"
#include "config/kubeconfig.h"
#include "base/log.h"
#include "base/stop.h"
#include "base/metrics.h"

static struct stop drv_stop;
static long drv_counts[3];  /* a second handler set's tally: add, update, delete */
static pthread_mutex_t drv_out_lock = PTHREAD_MUTEX_INITIALIZER;
static int drv_services;


static double
drv_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
drv_emit(json_object *o)
{
	pthread_mutex_lock(&drv_out_lock);
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	fflush(stdout);
	pthread_mutex_unlock(&drv_out_lock);
	json_object_put(o);
}

static json_object *
drv_str(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

static json_object *
drv_kv(const struct store_kv *kv, size_t n)
{
	json_object *o = json_object_new_object();

	for (size_t i = 0; i < n; i++)
		json_object_object_add(o, kv[i].key, json_object_new_string(kv[i].value));
	return o;
}

static json_object *
drv_strs(const char *const *v, size_t n)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

static json_object *
drv_node(const struct kube_node *n)
{
	static const char *const ready[] = { "", "True", "False", "Unknown" };
	json_object *o = json_object_new_object(), *a;

	json_object_object_add(o, "key", drv_str(n->obj.key));
	json_object_object_add(o, "name", drv_str(n->name));
	json_object_object_add(o, "uid", drv_str(n->obj.uid));
	json_object_object_add(o, "rv", drv_str(n->obj.resource_version));
	json_object_object_add(o, "labels", drv_kv(n->labels, n->nlabels));
	json_object_object_add(o, "annotations", drv_kv(n->annotations, n->nannotations));
	a = json_object_new_array();
	for (size_t i = 0; i < n->ntaints; i++) {
		json_object *t = json_object_new_object();
		json_object_object_add(t, "key", drv_str(n->taints[i].key));
		json_object_object_add(t, "value", drv_str(n->taints[i].value));
		json_object_object_add(t, "effect", drv_str(n->taints[i].effect));
		json_object_array_add(a, t);
	}
	json_object_object_add(o, "taints", a);
	json_object_object_add(o, "providerID", drv_str(n->provider_id));
	json_object_object_add(o, "podCIDRs", drv_strs(n->pod_cidrs, n->npod_cidrs));
	a = json_object_new_array();
	for (size_t i = 0; i < n->naddresses; i++) {
		json_object *t = json_object_new_object();
		json_object_object_add(t, "type", drv_str(n->addresses[i].type));
		json_object_object_add(t, "address", drv_str(n->addresses[i].address));
		json_object_array_add(a, t);
	}
	json_object_object_add(o, "addresses", a);
	json_object_object_add(o, "ready", drv_str(ready[n->ready]));
	json_object_object_add(o, "created", json_object_new_int64(n->creation_timestamp));
	json_object_object_add(o, "deleting", json_object_new_int64(n->deletion_timestamp));
	json_object_object_add(o, "size", json_object_new_int64((int64_t)n->obj.size));
	return o;
}

static json_object *
drv_service(const struct kube_service *s)
{
	json_object *o = json_object_new_object(), *a;

	json_object_object_add(o, "key", drv_str(s->obj.key));
	json_object_object_add(o, "uid", drv_str(s->obj.uid));
	json_object_object_add(o, "rv", drv_str(s->obj.resource_version));
	json_object_object_add(o, "type", drv_str(s->type));
	json_object_object_add(o, "loadBalancerClass", drv_str(s->load_balancer_class));
	json_object_object_add(o, "annotations", drv_kv(s->annotations, s->nannotations));
	json_object_object_add(o, "finalizers", drv_strs(s->finalizers, s->nfinalizers));
	a = json_object_new_array();
	for (size_t i = 0; i < s->nports; i++) {
		const struct kube_service_port *p = &s->ports[i];
		json_object *t = json_object_new_object();
		json_object_object_add(t, "name", drv_str(p->name));
		json_object_object_add(t, "protocol", drv_str(p->protocol));
		json_object_object_add(t, "port", json_object_new_int(p->port));
		json_object_object_add(t, "nodePort", json_object_new_int(p->node_port));
		if (p->target_port_name)
			json_object_object_add(t, "targetPort", drv_str(p->target_port_name));
		else
			json_object_object_add(t, "targetPort", json_object_new_int(p->target_port));
		json_object_array_add(a, t);
	}
	json_object_object_add(o, "ports", a);
	json_object_object_add(o, "externalTrafficPolicy", drv_str(s->external_traffic_policy));
	json_object_object_add(o, "healthCheckNodePort",
	    json_object_new_int(s->health_check_node_port));
	json_object_object_add(o, "ipFamilies", json_object_new_int((int)s->nip_families));
	a = json_object_new_array();
	for (size_t i = 0; i < s->ningress; i++) {
		json_object *t = json_object_new_object();
		json_object_object_add(t, "ip", drv_str(s->ingress[i].ip));
		json_object_object_add(t, "hostname", drv_str(s->ingress[i].hostname));
		json_object_object_add(t, "ipMode", drv_str(s->ingress[i].ip_mode));
		json_object_array_add(a, t);
	}
	json_object_object_add(o, "ingress", a);
	json_object_object_add(o, "deleting", json_object_new_int64(s->deletion_timestamp));
	return o;
}

static json_object *
drv_obj(const struct store_obj *o)
{
	return drv_services ? drv_service(kube_service_of(o)) : drv_node(kube_node_of(o));
}

static void
drv_event(const char *what, const struct store_obj *old, const struct store_obj *o)
{
	json_object *ev = json_object_new_object();

	json_object_object_add(ev, "event", json_object_new_string(what));
	if (old) {
		json_object *j = json_object_new_object();
		json_object_object_add(j, "key", drv_str(old->key));
		json_object_object_add(j, "rv", drv_str(old->resource_version));
		json_object_object_add(ev, "old", j);
	}
	json_object_object_add(ev, "object", drv_obj(o));
	drv_emit(ev);
}

static void
drv_on_add(const struct store_obj *o, void *arg)
{
	(void)arg;
	drv_event("add", NULL, o);
}

static void
drv_on_update(const struct store_obj *old, const struct store_obj *o, void *arg)
{
	(void)arg;
	drv_event("update", old, o);
}

static void
drv_on_delete(const struct store_obj *o, void *arg)
{
	(void)arg;
	drv_event("delete", NULL, o);
}

static void
drv_count_add(const struct store_obj *o, void *arg)
{
	(void)o;
	(void)arg;
	__atomic_add_fetch(&drv_counts[0], 1, __ATOMIC_RELAXED);
}

static void
drv_count_update(const struct store_obj *old, const struct store_obj *o, void *arg)
{
	(void)old;
	(void)o;
	(void)arg;
	__atomic_add_fetch(&drv_counts[1], 1, __ATOMIC_RELAXED);
}

static void
drv_count_delete(const struct store_obj *o, void *arg)
{
	(void)o;
	(void)arg;
	__atomic_add_fetch(&drv_counts[2], 1, __ATOMIC_RELAXED);
}

static void
drv_final(struct reflector *r, double stop_s)
{
	const struct store_obj **v;
	json_object *ev, *a;
	char *text = NULL, *line, *nl = NULL;
	size_t n, len;

	ev = json_object_new_object();
	json_object_object_add(ev, "event", json_object_new_string("store"));
	a = json_object_new_array();
	store_list(reflector_store(r), &v, &n);
	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, drv_obj(v[i]));
	store_list_free(v, n);
	json_object_object_add(ev, "items", a);
	json_object_object_add(ev, "bytes", json_object_new_int64(
	    (int64_t)store_bytes(reflector_store(r))));
	a = json_object_new_object();
	json_object_object_add(a, "add", json_object_new_int64(drv_counts[0]));
	json_object_object_add(a, "update", json_object_new_int64(drv_counts[1]));
	json_object_object_add(a, "delete", json_object_new_int64(drv_counts[2]));
	json_object_object_add(ev, "counts", a);
	drv_emit(ev);

	ev = json_object_new_object();
	json_object_object_add(ev, "event", json_object_new_string("metrics"));
	a = json_object_new_array();
	if (metrics_render(&text, &len) == 0) {
		for (line = text; line && *line; line = nl ? nl + 1 : NULL) {
			nl = strchr(line, '\n');
			if (nl)
				*nl = '\0';
			if (strncmp(line, "bootccm_reflector_", 18) == 0)
				json_object_array_add(a, json_object_new_string(line));
		}
		free(text);
	}
	json_object_object_add(ev, "lines", a);
	drv_emit(ev);

	ev = json_object_new_object();
	json_object_object_add(ev, "event", json_object_new_string("exit"));
	json_object_object_add(ev, "stopSeconds", json_object_new_double(stop_s));
	drv_emit(ev);
}

static int
drv_duration(const char *s, int64_t *ret)
{
	if (duration_parse(s, ret) < 0) {
		fprintf(stderr, "drv_reflector: bad duration %s\n", s);
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct reflector_config cfg = {
		.resource = "nodes",
		.path = KUBE_NODE_PATH,
		.decode = kube_node_decode_obj,
		.user_agent = "drv_reflector",
		.handlers = { drv_on_add, drv_on_update, drv_on_delete, NULL },
	};
	static const struct reflector_handlers counters = {
		drv_count_add, drv_count_update, drv_count_delete, NULL,
	};
	struct kubeconfig kc;
	struct reflector *r = NULL;
	struct errbuf e = { "" };
	int verbosity = 0, synced = 0;
	double t0;

	if (argc < 2) {
		fprintf(stderr, "usage: drv_reflector KUBECONFIG [options]\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (v == NULL) {
			fprintf(stderr, "drv_reflector: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (strcmp(a, "--resource") == 0) {
			if (strcmp(v, "services") == 0) {
				drv_services = 1;
				cfg.resource = "services";
				cfg.path = KUBE_SERVICE_PATH;
				cfg.namespaced = 1;
				cfg.decode = kube_service_decode_obj;
			}
		} else if (strcmp(a, "--limit") == 0) {
			cfg.page_limit = strtol(v, NULL, 10);
		} else if (strcmp(a, "--line-max") == 0) {
			cfg.line_max = (size_t)strtoul(v, NULL, 10);
		} else if (strcmp(a, "--resync") == 0) {
			if (drv_duration(v, &cfg.resync_ns) < 0)
				return 2;
		} else if (strcmp(a, "--backoff-min") == 0) {
			if (drv_duration(v, &cfg.backoff_min_ns) < 0)
				return 2;
		} else if (strcmp(a, "--backoff-max") == 0) {
			if (drv_duration(v, &cfg.backoff_max_ns) < 0)
				return 2;
		} else if (strcmp(a, "--watch-timeout") == 0) {
			cfg.watch_timeout_min_s = cfg.watch_timeout_max_s = (int)strtol(v, NULL, 10);
		} else if (strcmp(a, "--label-selector") == 0) {
			cfg.label_selector = v;
		} else if (strcmp(a, "--field-selector") == 0) {
			cfg.field_selector = v;
		} else if (strcmp(a, "-v") == 0) {
			verbosity = (int)strtol(v, NULL, 10);
		} else {
			fprintf(stderr, "drv_reflector: unknown option %s\n", a);
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	stop_init(&drv_stop);
	stop_on_signals(&drv_stop);
	log_init(verbosity, LOG_TEXT, 2);
	if (http_global_init(&e) < 0 || kubeconfig_load(argv[1], NULL, &kc, &e) < 0) {
		fprintf(stderr, "drv_reflector: %s\n", e.msg);
		return 1;
	}
	if (reflector_new(&kc, &cfg, &r, &e) < 0 ||
	    reflector_add_handlers(r, &counters, &e) < 0 || reflector_start(r, &e) < 0 ||
	    reflector_add_handlers(r, &counters, &e) != ERR_INVALID) {
		fprintf(stderr, "drv_reflector: %s\n", e.msg);
		reflector_free(r);
		kubeconfig_free(&kc);
		return 1;
	}
	while (!stop_requested(&drv_stop)) {
		if (!synced && reflector_wait_synced(r, 10 * 1000000LL)) {
			if (!reflector_has_synced(r))
				abort();
			json_object *ev = json_object_new_object();
			synced = 1;
			json_object_object_add(ev, "event", json_object_new_string("synced"));
			json_object_object_add(ev, "objects", json_object_new_int64(
			    (int64_t)store_len(reflector_store(r))));
			drv_emit(ev);
		}
		if (synced)
			stop_sleep(&drv_stop, 10 * NS_PER_MS);
	}
	t0 = drv_now();
	reflector_stop(r);
	drv_final(r, drv_now() - t0);
	reflector_free(r);
	kubeconfig_free(&kc);
	return 0;
}
