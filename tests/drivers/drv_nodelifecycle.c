/* drv_nodelifecycle.c - runs the node lifecycle controller against the fake
 * API server for tests/integration/test_nodelifecycle.py, with a scripted provider
 * whose answers the test can change while it runs, until SIGTERM.
 *
 * Usage: drv_nodelifecycle KUBECONFIG ANSWERS [options]
 *   --provider scripted|metadata   scripted (default) or the real `metadata`
 *   --definitive                   the scripted provider is CLOUD_DEFINITIVE
 *   --no-exists                    the scripted provider has no exists
 *   --monitor-period DURATION      (default 200ms)
 *   --grace-period DURATION        (default 0)
 *   --delay DURATION               every scripted provider call takes this long
 *   -v N                           log verbosity (stderr)
 * ANSWERS is re-read on every provider call: one "NODE ANSWER" a line ("*"
 * for every node not named; a node not matched at all: exists; "#"
 * comments). ANSWER is one of
 *   exists              exists 1, shutdown 0
 *   shutdown            exists 1, shutdown 1
 *   not-found           exists 0 (a "false" answer)
 *   instance-not-found  ERR_NOT_FOUND (upstream's InstanceNotFound)
 *   error-transient     ERR_TRANSIENT
 *   rate-limited        ERR_TOO_MANY_REQUESTS
 *   timeout             ERR_TIMEOUT
 *   not-implemented     ERR_NOT_IMPLEMENTED
 * for both exists and shutdown (an error answers both alike).
 * Lines on stdout (JSON):
 *   {"event":"started"} or {"event":"refused","code":"not implemented","err":..}
 *   {"event":"call","op":"exists"|"shutdown","node":N,"answer":A}
 *   {"event":"pass","passes":N}        each time a pass has completed
 *   {"event":"exit","stopSeconds":S,"metrics":["bootccm_node_lifecycle_...",...]} */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "cloud.h"
#include "base/clock.h"
#include "controllers/nodelifecycle.h"
#include "base/duration.h"
#include "http/http.h"
#include "kube/events.h"
#include "kube/node.h"
#include "kube/reflector.h"
#include "config/kubeconfig.h"
#include "base/log.h"
#include "base/stop.h"
#include "base/metrics.h"

#define DRV_LINE_MAX 512 /* bytes: one line of the answers file */
#define DRV_METRIC_PREFIX "bootccm_node_lifecycle_"
#define DRV_PASSES "bootccm_node_lifecycle_pass_duration_seconds_count "

static struct stop drv_stop;
static pthread_mutex_t drv_out_lock = PTHREAD_MUTEX_INITIALIZER;

struct drv_state {
	const char *answers;       /* the file's path */
	int64_t delay_ns;
};

struct drv_answer {
	const char *name;
	int code;                  /* what the operation returns */
	int exists, shutdown;      /* on 0 */
};

static const struct drv_answer drv_answers[] = {
	{ "exists", 0, 1, 0 },
	{ "shutdown", 0, 1, 1 },
	{ "not-found", 0, 0, 0 },
	{ "instance-not-found", ERR_NOT_FOUND, 0, 0 },
	{ "error-transient", ERR_TRANSIENT, 0, 0 },
	{ "rate-limited", ERR_TOO_MANY_REQUESTS, 0, 0 },
	{ "timeout", ERR_TIMEOUT, 0, 0 },
	{ "not-implemented", ERR_NOT_IMPLEMENTED, 0, 0 },
};


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
drv_event(const char *name)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "event", json_object_new_string(name));
	return o;
}

/* drv_lookup finds node's answer in the answers file (re-read each time). */
static const struct drv_answer *
drv_lookup(const struct drv_state *st, const char *node)
{
	char line[DRV_LINE_MAX], word[DRV_LINE_MAX], name[DRV_LINE_MAX];
	char fallback[DRV_LINE_MAX] = "exists";
	const char *pick = NULL;
	FILE *f = fopen(st->answers, "r");

	while (f != NULL && pick == NULL && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%511s %511s", name, word) != 2 || name[0] == '#')
			continue;
		if (strcmp(name, node) == 0)
			pick = word;
		else if (strcmp(name, "*") == 0)
			memcpy(fallback, word, sizeof(fallback));
	}
	if (f != NULL)
		fclose(f);
	if (pick == NULL)
		pick = fallback;
	for (size_t i = 0; i < sizeof(drv_answers) / sizeof(drv_answers[0]); i++)
		if (strcmp(drv_answers[i].name, pick) == 0)
			return &drv_answers[i];
	fprintf(stderr, "drv_nodelifecycle: unknown answer \"%s\" for %s\n", pick, node);
	abort();
}

/* drv_call answers one scripted operation after the configured delay. */
static int
drv_call(void *state, const char *op, const struct cloud_node *node, int *ret,
    struct errbuf *e)
{
	const struct drv_state *st = state;
	const struct drv_answer *a = drv_lookup(st, node->name);
	struct timespec ts = { (time_t)(st->delay_ns / NS_PER_S),
	    (long)(st->delay_ns % NS_PER_S) };
	json_object *o = drv_event("call");

	json_object_object_add(o, "op", json_object_new_string(op));
	json_object_object_add(o, "node", json_object_new_string(node->name));
	json_object_object_add(o, "answer", json_object_new_string(a->name));
	drv_emit(o);
	if (st->delay_ns > 0)
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	if (a->code < 0)
		return errbuf_set(e, a->code, "node %s: scripted %s answer: %s", node->name, op,
		    a->name);
	*ret = strcmp(op, "exists") == 0 ? a->exists : a->shutdown;
	return 0;
}

static int
drv_exists(void *state, const struct cloud_node *node, int *ret, struct errbuf *e)
{
	return drv_call(state, "exists", node, ret, e);
}

static int
drv_shutdown(void *state, const struct cloud_node *node, int *ret, struct errbuf *e)
{
	return drv_call(state, "shutdown", node, ret, e);
}

static struct cloud_instances_ops drv_instances = {
	.exists = drv_exists,
	.shutdown = drv_shutdown,
};

static struct cloud_provider drv_provider = {
	.name = "scripted",
	.instances = &drv_instances,
};

/* drv_metrics returns the controller's metric lines, and the number of
 * completed passes in *ret_passes. */
static json_object *
drv_metrics(long *ret_passes)
{
	json_object *a = json_object_new_array();
	char *text = NULL, *line, *nl = NULL;
	size_t len;

	*ret_passes = 0;
	if (metrics_render(&text, &len) < 0)
		return a;
	for (line = text; line && *line; line = nl ? nl + 1 : NULL) {
		if ((nl = strchr(line, '\n')) != NULL)
			*nl = '\0';
		if (strncmp(line, DRV_PASSES, strlen(DRV_PASSES)) == 0)
			*ret_passes = strtol(line + strlen(DRV_PASSES), NULL, 10);
		if (strncmp(line, DRV_METRIC_PREFIX, strlen(DRV_METRIC_PREFIX)) == 0)
			json_object_array_add(a, json_object_new_string(line));
	}
	free(text);
	return a;
}

static int
drv_duration(const char *s, int64_t *ret)
{
	if (duration_parse(s, ret) < 0) {
		fprintf(stderr, "drv_nodelifecycle: bad duration %s\n", s);
		return -1;
	}
	return 0;
}

/* drv_run starts the controller and reports passes until SIGTERM. */
static int
drv_run(struct nodelifecycle_config *cfg)
{
	struct nodelifecycle *c = NULL;
	struct errbuf e = { "" };
	long passes = 0, seen = 0;
	json_object *o;
	int64_t t0;
	int r;

	if ((r = nodelifecycle_start(cfg, &c, &e)) < 0) {
		o = drv_event("refused");
		json_object_object_add(o, "code", json_object_new_string(err_str(r)));
		json_object_object_add(o, "err", json_object_new_string(e.msg));
		drv_emit(o);
		return r == ERR_NOT_IMPLEMENTED ? 0 : 1;
	}
	drv_emit(drv_event("started"));
	while (!stop_sleep(&drv_stop, 20 * NS_PER_MS)) {
		json_object_put(drv_metrics(&passes));
		if (passes != seen) {
			seen = passes;
			o = drv_event("pass");
			json_object_object_add(o, "passes", json_object_new_int64(passes));
			drv_emit(o);
		}
	}
	t0 = clock_mono_ns();
	nodelifecycle_stop(c);
	nodelifecycle_stop(c);  /* idempotent */
	o = drv_event("exit");
	json_object_object_add(o, "stopSeconds",
	    json_object_new_double((double)(clock_mono_ns() - t0) / NS_PER_S));
	json_object_object_add(o, "metrics", drv_metrics(&passes));
	drv_emit(o);
	nodelifecycle_free(c);
	return 0;
}

int
main(int argc, char **argv)
{
	struct reflector_config rcfg = {
		.resource = "nodes",
		.path = KUBE_NODE_PATH,
		.decode = kube_node_decode_obj,
		.user_agent = "drv_nodelifecycle",
	};
	struct nodelifecycle_config cfg = {
		.monitor_period_ns = 200 * NS_PER_MS,
		.grace_period_ns = 0,
		.user_agent = "drv_nodelifecycle",
	};
	struct events_config ecfg = { .host = "drv" };
	struct cloud_config ccfg = { .node_name = "cp-1", .stop = &drv_stop };
	struct drv_state st = { .delay_ns = 0 };
	const char *provider = "scripted";
	struct kubeconfig kc;
	struct reflector *r = NULL;
	struct events *ev = NULL;
	struct errbuf e = { "" };
	int verbosity = 0, rc = 1;

	if (argc < 3) {
		fprintf(stderr, "usage: drv_nodelifecycle KUBECONFIG ANSWERS [options]\n");
		return 2;
	}
	st.answers = argv[2];
	for (int i = 3; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--definitive") == 0) {
			drv_provider.flags |= CLOUD_DEFINITIVE;
			continue;
		}
		if (strcmp(a, "--no-exists") == 0) {
			drv_instances.exists = NULL;
			continue;
		}
		if (v == NULL) {
			fprintf(stderr, "drv_nodelifecycle: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (strcmp(a, "--provider") == 0) {
			provider = v;
		} else if (strcmp(a, "--monitor-period") == 0) {
			if (drv_duration(v, &cfg.monitor_period_ns) < 0)
				return 2;
		} else if (strcmp(a, "--grace-period") == 0) {
			if (drv_duration(v, &cfg.grace_period_ns) < 0)
				return 2;
		} else if (strcmp(a, "--delay") == 0) {
			if (drv_duration(v, &st.delay_ns) < 0)
				return 2;
		} else if (strcmp(a, "-v") == 0) {
			verbosity = (int)strtol(v, NULL, 10);
		} else {
			fprintf(stderr, "drv_nodelifecycle: unknown option %s\n", a);
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	stop_init(&drv_stop);
	stop_on_signals(&drv_stop);
	log_init(verbosity, LOG_TEXT, 2);
	if (strcmp(provider, "scripted") == 0) {
		cfg.provider = &drv_provider;
		cfg.provider_state = &st;
	} else if ((cfg.provider = cloud_provider_find(provider)) == NULL) {
		fprintf(stderr, "drv_nodelifecycle: unknown provider %s\n", provider);
		return 2;
	}
	if (http_global_init(&e) < 0 || kubeconfig_load(argv[1], NULL, &kc, &e) < 0) {
		fprintf(stderr, "drv_nodelifecycle: %s\n", e.msg);
		return 1;
	}
	if ((cfg.provider != &drv_provider &&
	    cfg.provider->init(&ccfg, &cfg.provider_state, &e) < 0) ||
	    reflector_new(&kc, &rcfg, &r, &e) < 0 || reflector_start(r, &e) < 0 ||
	    events_new(&kc, &ecfg, &ev, &e) < 0 || events_start(ev, &e) < 0) {
		fprintf(stderr, "drv_nodelifecycle: %s\n", e.msg);
		goto out;
	}
	cfg.kc = &kc;
	cfg.nodes = r;
	cfg.events = ev;
	rc = drv_run(&cfg);
out:
	reflector_free(r);
	if (ev != NULL)
		events_stop(ev, NS_PER_S);
	events_free(ev);
	if (cfg.provider != &drv_provider && cfg.provider_state != NULL)
		cfg.provider->free(cfg.provider_state);
	kubeconfig_free(&kc);
	return rc;
}
