/* drv_nodectl.c - runs the cloud-node controller against an API server with
 * a scripted cloud provider, for tests/integration/test_node_controller.py.
 *
 *   drv_nodectl KUBECONFIG SCRIPT NODE-NAME [--leading 0|1] [--refresh D]
 *       [--page N] [--workers N] [--list 0|1] [--metadata-cloud C]
 *       [--metadata-endpoint URL] [--hold-reads 0|1] [-v N]
 *
 * SCRIPT (JSON, re-read at every provider call, so a test can change it):
 *   {"fail": null | "transient" | "permanent",
 *    "instances": {"NODE": {"providerID": "...", "zone": "...", "region": "...",
 *                           "instanceType": "...",
 *                           "addresses": [["InternalIP", "10.0.0.1"], ...]}}}
 * The provider is named "scripted", is not CLOUD_DEFINITIVE, answers
 * instances.metadata by node name, and (with --list 1) lists every instance
 * in pages of --page. The `metadata` provider (--metadata-* flags) is the
 * local node's fallback, as in the daemon. With --hold-reads 1, the
 * reflector, once it has handed a version of a Node to the controller,
 * waits until a worker has read that version from the cache, and the worker
 * then waits until the reflector has handed over another version before it
 * acts on its copy (each wait up to DRV_HOLD_NS): a copy read just before a
 * newer version arrives, made to happen every time; it prints
 * {"event":"superseded","read":["NODE","RV READ","RV DELIVERED"]} when a
 * newer version overtook a held read and {"event":"done","node":"NODE",
 * "rv":"RV READ","r":R} once the worker is done with its copy (these may
 * come before "ready"). Prints {"event":"ready"} once the
 * controller runs and, on SIGTERM, {"event":"stopped","metadata_calls":N,
 * "list_calls":N,"list_pages":N,"superseded_reads":[["NODE","RV READ",
 * "RV DELIVERED"],...]} (the held reads a newer version overtook). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pthread.h>
#include <time.h>

#include "base/clock.h"
#include "../../providers/metadata/metadata.h"
#include "controllers/nodectl.h"
#include "base/duration.h"
#include "http/http.h"
#include "kube/events.h"
#include "kube/node.h"
#include "kube/reflector.h"
#include "config/kubeconfig.h"
#include "base/log.h"
#include "base/stop.h"

static struct stop drv_stop;
static const char *drv_script;
static long drv_page = 100;
static long drv_metadata_calls, drv_list_calls, drv_list_pages; /* atomic */

/* --hold-reads: the versions the controller was last handed, by node. */
#define DRV_HOLD_NS (2 * NS_PER_S)
#define DRV_HOLD_NODES 16
static pthread_mutex_t drv_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t drv_cv;
static struct {
	char name[64];
	char rv[64];         /* the version last delivered */
	unsigned long n;     /* deliveries */
	char read_rv[64];    /* the version a worker last read */
} drv_seen[DRV_HOLD_NODES];
static int drv_holding;  /* --hold-reads */
static json_object *drv_superseded;  /* [[name, rv read, rv delivered]] (drv_mu) */

/* drv_slot returns key's entry in drv_seen, made if needed (drv_mu held). */
static int
drv_slot(const char *key)
{
	int i;

	for (i = 0; i < DRV_HOLD_NODES - 1; i++)
		if (drv_seen[i].name[0] == '\0' || strcmp(drv_seen[i].name, key) == 0)
			break;
	snprintf(drv_seen[i].name, sizeof(drv_seen[i].name), "%s", key);
	return i;
}

/* drv_timeout is a CLOCK_MONOTONIC deadline DRV_HOLD_NS from now. */
static struct timespec
drv_timeout(void)
{
	int64_t deadline = clock_mono_ns() + DRV_HOLD_NS;
	struct timespec ts = { (time_t)(deadline / NS_PER_S), (long)(deadline % NS_PER_S) };

	return ts;
}

/* drv_delivered runs after the controller's handlers: the version each
 * node's handlers were last given; with --hold-reads, it then waits for a
 * worker to read that version from the cache. */
static void
drv_delivered(const struct store_obj *o, void *arg)
{
	struct timespec ts = drv_timeout();
	int i;

	(void)arg;
	pthread_mutex_lock(&drv_mu);
	i = drv_slot(o->key);
	snprintf(drv_seen[i].rv, sizeof(drv_seen[i].rv), "%s", o->resource_version);
	drv_seen[i].n++;
	pthread_cond_broadcast(&drv_cv);
	while (drv_holding && strcmp(drv_seen[i].read_rv, o->resource_version) != 0 &&
	    pthread_cond_timedwait(&drv_cv, &drv_mu, &ts) == 0)
		;
	pthread_mutex_unlock(&drv_mu);
}

static void
drv_updated(const struct store_obj *old, const struct store_obj *o, void *arg)
{
	(void)old;
	drv_delivered(o, arg);
}


/* drv_hold_read: a worker has read node from the cache; say so, and wait
 * for the controller to be handed another version of it. */
static void
drv_hold_read(const struct kube_node *node, void *arg)
{
	const char *read_rv = node->obj.resource_version;
	struct timespec ts = drv_timeout();
	unsigned long n0;
	int i;

	(void)arg;
	pthread_mutex_lock(&drv_mu);
	i = drv_slot(node->obj.key);
	snprintf(drv_seen[i].read_rv, sizeof(drv_seen[i].read_rv), "%s", read_rv);
	pthread_cond_broadcast(&drv_cv);
	/* another version, delivered after this read (the copy read may be
	 * one whose own delivery is still on its way) */
	n0 = drv_seen[i].n;
	while ((drv_seen[i].n == n0 || strcmp(drv_seen[i].rv, read_rv) == 0) &&
	    pthread_cond_timedwait(&drv_cv, &drv_mu, &ts) == 0)
		;
	if (drv_seen[i].n != n0 && strcmp(drv_seen[i].rv, read_rv) != 0) {
		json_object *a = json_object_new_array();
		json_object_array_add(a, json_object_new_string(node->obj.key));
		json_object_array_add(a, json_object_new_string(read_rv));
		json_object_array_add(a, json_object_new_string(drv_seen[i].rv));
		json_object_array_add(drv_superseded, a);
		printf("{\"event\":\"superseded\",\"read\":%s}\n",
		    json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN));
		fflush(stdout);
	}
	pthread_mutex_unlock(&drv_mu);
}

/* drv_hold_done: the worker is done with the copy it read (--hold-reads). */
static void
drv_hold_done(const struct kube_node *node, int r, void *arg)
{
	(void)arg;
	pthread_mutex_lock(&drv_mu);
	printf("{\"event\":\"done\",\"node\":\"%s\",\"rv\":\"%s\",\"r\":%d}\n",
	    node->obj.key, node->obj.resource_version, r);
	fflush(stdout);
	pthread_mutex_unlock(&drv_mu);
}

static json_object *
drv_load(struct errbuf *e, int *ret_fail)
{
	json_object *o = json_object_from_file(drv_script), *f;

	if (o == NULL) {
		errbuf_set(e, ERR_TRANSIENT, "scripted: cannot read %s", drv_script);
		return NULL;
	}
	*ret_fail = 0;
	if (json_object_object_get_ex(o, "fail", &f) && json_object_is_type(f, json_type_string))
		*ret_fail = strcmp(json_object_get_string(f), "permanent") == 0 ?
		    ERR_PERMANENT : ERR_TRANSIENT;
	return o;
}

static void
drv_str(json_object *inst, const char *key, char *buf, size_t len)
{
	json_object *v;

	if (json_object_object_get_ex(inst, key, &v))
		snprintf(buf, len, "%s", json_object_get_string(v));
}

static int
drv_fill(json_object *inst, struct cloud_instance_metadata *m)
{
	json_object *addrs;

	memset(m, 0, sizeof(*m));
	drv_str(inst, "providerID", m->provider_id, sizeof(m->provider_id));
	drv_str(inst, "zone", m->zone, sizeof(m->zone));
	drv_str(inst, "region", m->region, sizeof(m->region));
	drv_str(inst, "instanceType", m->instance_type, sizeof(m->instance_type));
	if (json_object_object_get_ex(inst, "addresses", &addrs))
		for (size_t i = 0; i < json_object_array_length(addrs) && i < CLOUD_ADDRS_MAX; i++) {
			json_object *a = json_object_array_get_idx(addrs, i);
			if (cloud_addr_type_parse(json_object_get_string(json_object_array_get_idx(a, 0)),
			    &m->addresses[i].type) < 0)
				return ERR_INVALID;
			snprintf(m->addresses[i].address, sizeof(m->addresses[i].address), "%s",
			    json_object_get_string(json_object_array_get_idx(a, 1)));
			m->n_addresses++;
		}
	return 0;
}

static int
drv_metadata(void *state, const struct cloud_node *node,
    struct cloud_instance_metadata *ret, struct errbuf *e)
{
	json_object *o, *insts, *inst;
	int fail, r;

	(void)state;
	__atomic_add_fetch(&drv_metadata_calls, 1, __ATOMIC_RELAXED);
	if ((o = drv_load(e, &fail)) == NULL)
		return ERR_TRANSIENT;
	if (fail) {
		json_object_put(o);
		return errbuf_set(e, fail, "scripted: the cloud API answers %s for node %s",
		    fail == ERR_PERMANENT ? "a permanent error" : "503", node->name);
	}
	if (!json_object_object_get_ex(o, "instances", &insts) ||
	    !json_object_object_get_ex(insts, node->name, &inst)) {
		json_object_put(o);
		return errbuf_set(e, ERR_NOT_FOUND, "scripted: no instance for node %s", node->name);
	}
	struct cloud_instance_metadata m;
	if ((r = drv_fill(inst, &m)) == 0) {
		snprintf(m.source, sizeof(m.source), "%s", CLOUD_SOURCE_API);
		*ret = m;
	}
	json_object_put(o);
	return r;
}

static int
drv_list(void *state, cloud_instance_cb cb, void *arg, struct errbuf *e)
{
	json_object *o, *insts;
	int fail, r = 0;
	long n = 0;

	(void)state;
	__atomic_add_fetch(&drv_list_calls, 1, __ATOMIC_RELAXED);
	if ((o = drv_load(e, &fail)) == NULL)
		return ERR_TRANSIENT;
	if (fail) {
		json_object_put(o);
		return errbuf_set(e, fail, "scripted: the cloud API answers 503 to a listing");
	}
	if (json_object_object_get_ex(o, "instances", &insts)) {
		json_object_object_foreach(insts, name, inst) {
			struct cloud_instance_metadata m;
			(void)name;
			if (n++ % drv_page == 0)
				__atomic_add_fetch(&drv_list_pages, 1, __ATOMIC_RELAXED);
			if ((r = drv_fill(inst, &m)) < 0 || (r = cb(&m, arg)) < 0)
				break;
		}
	}
	json_object_put(o);
	return r;
}

static int
drv_init(const struct cloud_config *cfg, void **ret, struct errbuf *e)
{
	(void)cfg;
	(void)e;
	*ret = NULL;
	return 0;
}

static void
drv_free(void *state)
{
	(void)state;
}

static struct cloud_instances_ops drv_instances = {
	.metadata = drv_metadata,
};

static const struct cloud_provider drv_provider = {
	.name = "scripted",
	.init = drv_init,
	.free = drv_free,
	.instances = &drv_instances,
};

int
main(int argc, char **argv)
{
	struct kubeconfig kc;
	struct errbuf e = { "" };
	struct reflector *nodes = NULL;
	struct events *ev = NULL;
	struct nodectl *c = NULL;
	struct events_config ec = { .host = "drv" };
	const char *md_cloud = NULL, *md_endpoint = NULL;
	int64_t refresh = 300 * NS_PER_S;
	long leading = 1, workers = 1, list = 0, v = 0, hold_reads = 0;
	void *fallback = NULL;

	if (argc < 4) {
		fprintf(stderr, "usage: drv_nodectl KUBECONFIG SCRIPT NODE-NAME [options]\n");
		return 2;
	}
	drv_script = argv[2];
	for (int i = 4; i + 1 < argc; i += 2) {
		const char *a = argv[i], *val = argv[i + 1];
		if (strcmp(a, "--leading") == 0)
			leading = atol(val);
		else if (strcmp(a, "--refresh") == 0 && duration_parse(val, &refresh) == 0)
			;
		else if (strcmp(a, "--page") == 0)
			drv_page = atol(val) > 0 ? atol(val) : 1;
		else if (strcmp(a, "--workers") == 0)
			workers = atol(val);
		else if (strcmp(a, "--list") == 0)
			list = atol(val);
		else if (strcmp(a, "--metadata-cloud") == 0)
			md_cloud = val;
		else if (strcmp(a, "--metadata-endpoint") == 0)
			md_endpoint = val;
		else if (strcmp(a, "--hold-reads") == 0)
			hold_reads = atol(val);
		else if (strcmp(a, "-v") == 0)
			v = atol(val);
		else {
			fprintf(stderr, "drv_nodectl: bad option %s %s\n", a, val);
			return 2;
		}
	}
	if (list)
		drv_instances.list = drv_list;
	log_init((int)v, LOG_TEXT, 2);
	signal(SIGPIPE, SIG_IGN);
	stop_init(&drv_stop);
	stop_on_signals(&drv_stop);

	struct cloud_config cc = {
		.node_name = argv[3], .md_cloud = md_cloud, .md_endpoint = md_endpoint,
		.stop = &drv_stop,
	};
	struct reflector_config rc = {
		.resource = "nodes", .path = KUBE_NODE_PATH, .decode = kube_node_decode_obj,
	};
	if (http_global_init(&e) < 0 || kubeconfig_load(argv[1], NULL, &kc, &e) < 0 ||
	    metadata_provider.init(&cc, &fallback, &e) < 0 ||
	    events_new(&kc, &ec, &ev, &e) < 0 || events_start(ev, &e) < 0 ||
	    reflector_new(&kc, &rc, &nodes, &e) < 0) {
		fprintf(stderr, "drv_nodectl: %s\n", e.msg);
		return 1;
	}
	struct nodectl_config nc = {
		.kc = &kc, .nodes = nodes, .provider = &drv_provider,
		.fallback = &metadata_provider, .fallback_state = fallback,
		.events = ev, .local_node = argv[3], .workers = (int)workers,
		.refresh_period_ns = refresh,
		.cached_read_hook = hold_reads ? drv_hold_read : NULL,
		.cached_done_hook = hold_reads ? drv_hold_done : NULL,
	};
	drv_holding = hold_reads != 0;
	struct reflector_handlers seen = { .on_add = drv_delivered, .on_update = drv_updated };
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&drv_cv, &ca);
	pthread_condattr_destroy(&ca);
	drv_superseded = json_object_new_array();
	/* the controller's handlers first, then ours: a version counts as
	 * delivered once the controller has been handed it */
	if (nodectl_new(&nc, &c, &e) < 0 || reflector_add_handlers(nodes, &seen, &e) < 0 ||
	    reflector_start(nodes, &e) < 0 || nodectl_start(c, &e) < 0) {
		fprintf(stderr, "drv_nodectl: %s\n", e.msg);
		return 1;
	}
	if (leading)
		nodectl_set_leading(c, 1);
	pthread_mutex_lock(&drv_mu);
	printf("{\"event\":\"ready\"}\n");
	fflush(stdout);
	pthread_mutex_unlock(&drv_mu);
	stop_sleep_until(&drv_stop, INT64_MAX);
	reflector_stop(nodes);  /* its thread calls the controller's handlers */
	nodectl_free(c);
	reflector_free(nodes);
	events_stop(ev, 2 * NS_PER_S);
	events_free(ev);
	metadata_provider.free(fallback);
	kubeconfig_free(&kc);
	printf("{\"event\":\"stopped\",\"metadata_calls\":%ld,\"list_calls\":%ld,"
	    "\"list_pages\":%ld,\"superseded_reads\":%s}\n",
	    __atomic_load_n(&drv_metadata_calls, __ATOMIC_RELAXED),
	    __atomic_load_n(&drv_list_calls, __ATOMIC_RELAXED),
	    __atomic_load_n(&drv_list_pages, __ATOMIC_RELAXED),
	    json_object_to_json_string_ext(drv_superseded, JSON_C_TO_STRING_PLAIN));
	json_object_put(drv_superseded);
	pthread_cond_destroy(&drv_cv);
	return 0;
}
