/* nodelifecycle.c - the cloud-node-lifecycle controller: a periodic pass over
 * the cached Nodes that deletes those whose instance is definitively gone
 * and keeps the shutdown taint in step with the instances' state. */
#include "controllers/nodelifecycle.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "base/clock.h"
#include "controllers/nodeview.h"
#include "kube/client.h"
#include "kube/node.h"
#include "kube/runner.h"
#include "kube/store.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/xalloc.h"

#define NODELIFECYCLE_SYNC_POLL_NS (200 * NS_PER_MS) /* stop checks while the cache syncs */
#define NODELIFECYCLE_STACK_SIZE (256 * 1024)        /* bytes */
#define NODELIFECYCLE_TAINT_EFFECT "NoSchedule"

struct nodelifecycle {
	struct nodelifecycle_config cfg;  /* user_agent points at user_agent */
	char *user_agent;
	struct kube_client client;        /* the thread's own */
	struct runner *run;
	struct stop stop;                 /* the sleeps between passes; the client's too */
	/* the controller thread's alone */
	int told_not_implemented;         /* logged once: the provider cannot tell */
	int warned_errors;                /* warned for the current run of failing passes */
};

/* What one pass saw, for its summary log lines. */
struct nodelifecycle_pass {
	int errors;                       /* nodes whose existence the provider could not tell */
	char first_node[EVENTS_NAME_MAX + 1];
	char first_err[ERRBUF_MAX];
};

/* bootccm_node_lifecycle_deletions_refused_total's reason label, by verdict. */
static const char *const nodelifecycle_refusals[] = {
	[NODELIFECYCLE_REFUSE_ERROR] = "error",
	[NODELIFECYCLE_REFUSE_NOT_IMPLEMENTED] = "not-implemented",
	[NODELIFECYCLE_REFUSE_NOT_DEFINITIVE] = "not-definitive",
	[NODELIFECYCLE_REFUSE_GRACE] = "grace-period",
};

static struct metric *nodelifecycle_m_deletions;
static struct metric *nodelifecycle_m_refused;
static struct metric *nodelifecycle_m_pass;
static pthread_once_t nodelifecycle_metrics_once = PTHREAD_ONCE_INIT;

static void
nodelifecycle_metrics_init(void)
{
	nodelifecycle_m_deletions = metrics_counter("bootccm_node_lifecycle_deletions_total",
	    "Nodes deleted because the provider said definitively that their instance "
	    "does not exist.", NULL);
	nodelifecycle_m_refused = metrics_counter(
	    "bootccm_node_lifecycle_deletions_refused_total",
	    "Checks of a not-Ready Node that did not delete it, by reason: the provider "
	    "failed (error), cannot tell (not-implemented), is not definitive "
	    "(not-definitive), or the Node is younger than the grace period (grace-period).",
	    "reason");
	nodelifecycle_m_pass = metrics_histogram("bootccm_node_lifecycle_pass_duration_seconds",
	    "Time one pass of the node lifecycle controller over every Node took.", NULL,
	    metrics_buckets_latency, metrics_buckets_latency_n);
}

static int
nodelifecycle_stopping(struct nodelifecycle *c)
{
	return stop_requested(&c->stop);
}

/* nodelifecycle_sleep waits ns (nothing when ns <= 0) unless asked to stop;
 * returns 1 when stopping. */
static int
nodelifecycle_sleep(struct nodelifecycle *c, int64_t ns)
{
	return stop_sleep(&c->stop, ns);
}

/* nodelifecycle_wait_synced waits for the Node cache, noticing a stop.
 * Returns 1 once synced, 0 when stopping. */
static int
nodelifecycle_wait_synced(struct nodelifecycle *c)
{
	while (!nodelifecycle_stopping(c)) {
		int64_t t0 = clock_mono_ns();
		if (reflector_wait_synced(c->cfg.nodes, NODELIFECYCLE_SYNC_POLL_NS))
			return 1;
		/* a stopped reflector answers at once: do not spin */
		if (nodelifecycle_sleep(c, NODELIFECYCLE_SYNC_POLL_NS - (clock_mono_ns() - t0)))
			return 0;
	}
	return 0;
}

enum nodelifecycle_verdict
nodelifecycle_decide(const struct cloud_provider *p, int64_t grace_ns,
    const struct nodelifecycle_facts *f)
{
	int rc;

	/* only Ready=True is ready: no condition yet counts as Unknown */
	if (f->ready == KUBE_NODE_READY_TRUE)
		return NODELIFECYCLE_READY;
	if (f->deleting)
		return NODELIFECYCLE_SKIP;  /* on its way out already */
	if (!f->exists_asked)
		return NODELIFECYCLE_ASK_EXISTS;
	if (f->exists_rc == 0 && f->exists) {
		if (p == NULL || p->instances == NULL || p->instances->shutdown == NULL)
			return NODELIFECYCLE_KEEP;
		if (!f->shutdown_asked)
			return NODELIFECYCLE_ASK_SHUTDOWN;
		return f->shutdown_rc == 0 && f->shutdown ? NODELIFECYCLE_SHUTDOWN :
		    NODELIFECYCLE_KEEP;
	}
	/* "false" is upstream's InstanceNotFound */
	rc = f->exists_rc == 0 ? ERR_NOT_FOUND : f->exists_rc;
	if (rc == ERR_NOT_IMPLEMENTED)
		return NODELIFECYCLE_REFUSE_NOT_IMPLEMENTED;
	if (rc != ERR_NOT_FOUND)
		return NODELIFECYCLE_REFUSE_ERROR;
	if (!cloud_err_allows_delete(rc, p))
		return NODELIFECYCLE_REFUSE_NOT_DEFINITIVE;
	if (f->age_ns < 0 || f->age_ns < grace_ns)
		return NODELIFECYCLE_REFUSE_GRACE;
	return NODELIFECYCLE_DELETE;
}

/* nodelifecycle_age_ns returns how long ago n was created, or -1 when it
 * does not say. creationTimestamp has whole seconds, cut down: the Node may
 * be up to a second younger than it says, so that second is not counted. */
static int64_t
nodelifecycle_age_ns(const struct kube_node *n)
{
	int64_t age;

	if (n->creation_timestamp <= 0)
		return -1;
	age = clock_real_ns() - (n->creation_timestamp + 1) * NS_PER_S;
	return age > 0 ? age : 0;
}

static void
nodelifecycle_ref(const struct kube_node *n, struct events_ref *ref)
{
	memset(ref, 0, sizeof(*ref));
	ref->kind = "Node";
	ref->name = n->name;
	ref->uid = n->obj.uid;
	ref->api_version = "v1";
}

/* nodelifecycle_taint_json is upstream's ShutdownTaint: no value, no
 * timeAdded. */
static json_object *
nodelifecycle_taint_json(void)
{
	json_object *t = xcheck(json_object_new_object());

	json_object_object_add(t, "key", xcheck(json_object_new_string(
	    NODELIFECYCLE_SHUTDOWN_TAINT)));
	json_object_object_add(t, "effect", xcheck(json_object_new_string(
	    NODELIFECYCLE_TAINT_EFFECT)));
	return t;
}

/* nodelifecycle_ops is a JSON patch of one operation (value NULL: none). */
static json_object *
nodelifecycle_ops(const char *op, const char *path, json_object *value)
{
	json_object *ops = xcheck(json_object_new_array());
	json_object *o = xcheck(json_object_new_object());

	json_object_object_add(o, "op", xcheck(json_object_new_string(op)));
	json_object_object_add(o, "path", xcheck(json_object_new_string(path)));
	if (value != NULL)
		json_object_object_add(o, "value", value);
	json_object_array_add(ops, o);
	return ops;
}

/* nodelifecycle_patch sends patch (a merge patch object or an array of JSON
 * patch operations; consumed) to n with its cached resourceVersion as the
 * precondition. A conflict (the Node changed since the cache saw it) is
 * left to the next pass. */
static void
nodelifecycle_patch(struct nodelifecycle *c, const struct kube_node *n,
    json_object *patch, const char *what)
{
	struct errbuf e = { "" };
	char *path = NULL;
	int r;

	if ((r = kube_path(&path, "/api/v1", NULL, "nodes", n->name, NULL, NULL)) < 0)
		errbuf_set(&e, r, "node %s: cannot build its path", n->name);
	else if (json_object_is_type(patch, json_type_array))
		r = kube_patch_json(&c->client, path, patch, n->obj.resource_version, NULL, NULL,
		    &e);
	else
		r = kube_patch_merge(&c->client, path, patch, n->obj.resource_version, NULL, NULL,
		    &e);
	if (r == 0)
		log_info(2, what, "node", n->name, "taint", NODELIFECYCLE_SHUTDOWN_TAINT, NULL);
	else if (r == ERR_CONFLICT || r == ERR_NOT_FOUND)
		log_info(2, "Node changed since it was cached; next pass", "node", n->name,
		    "err", e.msg, NULL);
	else if (!nodelifecycle_stopping(c))
		log_error("Error patching node taints", "node", n->name, "err", e.msg, NULL);
	free(path);
	json_object_put(patch);
}

/* nodelifecycle_shutdown_taint returns the index of n's shutdown taint, or -1. */
static long
nodelifecycle_shutdown_taint(const struct kube_node *n)
{
	const struct kube_taint *t = kube_node_taint(n, NODELIFECYCLE_SHUTDOWN_TAINT,
	    NODELIFECYCLE_TAINT_EFFECT);

	return t ? (long)(t - n->taints) : -1;
}

static void
nodelifecycle_untaint(struct nodelifecycle *c, const struct kube_node *n)
{
	char path[64];
	long i = nodelifecycle_shutdown_taint(n);

	if (i < 0)
		return;
	/* the index is the cached Node's; the resourceVersion test makes sure
	 * the server's list is that one */
	snprintf(path, sizeof(path), "/spec/taints/%ld", i);
	nodelifecycle_patch(c, n, nodelifecycle_ops("remove", path, NULL),
	    "Removed the shutdown taint from a Ready node");
}

static void
nodelifecycle_taint(struct nodelifecycle *c, const struct kube_node *n)
{
	json_object *patch, *spec, *taints;

	if (nodelifecycle_shutdown_taint(n) >= 0)
		return;
	/* appending keeps the other taints' timeAdded, which the cache does not
	 * hold; a Node without taints may lack spec.taints (or spec): merge */
	if (n->ntaints > 0) {
		patch = nodelifecycle_ops("add", "/spec/taints/-", nodelifecycle_taint_json());
	} else {
		patch = xcheck(json_object_new_object());
		spec = xcheck(json_object_new_object());
		taints = xcheck(json_object_new_array());
		json_object_array_add(taints, nodelifecycle_taint_json());
		json_object_object_add(spec, "taints", taints);
		json_object_object_add(patch, "spec", spec);
	}
	nodelifecycle_patch(c, n, patch, "Added the shutdown taint");
}

/* nodelifecycle_delete_body is DeleteOptions with preconditions on the
 * cached uid and resourceVersion: a Node registered again under the name,
 * or changed since the decision, is not deleted. */
static char *
nodelifecycle_delete_body(const struct kube_node *n)
{
	json_object *o = xcheck(json_object_new_object());
	json_object *pre = xcheck(json_object_new_object());
	char *s;

	if (n->obj.uid[0])
		json_object_object_add(pre, "uid", xcheck(json_object_new_string(n->obj.uid)));
	if (n->obj.resource_version[0])
		json_object_object_add(pre, "resourceVersion",
		    xcheck(json_object_new_string(n->obj.resource_version)));
	json_object_object_add(o, "apiVersion", xcheck(json_object_new_string("v1")));
	json_object_object_add(o, "kind", xcheck(json_object_new_string("DeleteOptions")));
	json_object_object_add(o, "preconditions", pre);
	s = xstrdup(xcheck((void *)json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)));
	json_object_put(o);
	return s;
}

static void
nodelifecycle_delete(struct nodelifecycle *c, const struct kube_node *n)
{
	struct events_ref ref;
	struct errbuf e = { "" };
	char *path = NULL, *body = nodelifecycle_delete_body(n);
	int r;

	nodelifecycle_ref(n, &ref);
	log_info(2, "Deleting node since it is no longer present in cloud provider",
	    "node", n->name, NULL);
	events_recordf(c->cfg.events, &ref, EVENTS_NORMAL, "DeletingNode",
	    "Deleting node %s because it does not exist in the cloud provider", n->name);
	if ((r = kube_path(&path, "/api/v1", NULL, "nodes", n->name, NULL, NULL)) < 0)
		errbuf_set(&e, r, "node %s: cannot build its path", n->name);
	else
		r = kube_request(&c->client, "DELETE", path, "application/json", body, NULL,
		    NULL, &e);
	if (r == 0) {
		metric_add(nodelifecycle_m_deletions, 1);
		log_info(0, "Deleted node whose instance does not exist", "node", n->name, NULL);
	} else if (r == ERR_NOT_FOUND) {
		log_info(2, "Node already deleted", "node", n->name, NULL);
	} else if (nodelifecycle_stopping(c)) {
		/* aborted by the stop: the next leader looks at it again */
		log_info(2, "Stopped while deleting node", "node", n->name, "err", e.msg, NULL);
	} else {
		/* a failed precondition (409) is a Node re-registered or changed
		 * since the cache saw it: the next pass looks at it again */
		log_error("Unable to delete node", "node", n->name, "err", e.msg, NULL);
		events_recordf(c->cfg.events, &ref, EVENTS_WARNING, "DeletingNodeFailed",
		    "Failed deleting node %s: %s", n->name, e.msg);
	}
	free(body);
	free(path);
}

/* nodelifecycle_refused counts and logs a not-Ready Node left in place. */
static void
nodelifecycle_refused(struct nodelifecycle *c, const struct kube_node *n,
    enum nodelifecycle_verdict v, const struct errbuf *e, struct nodelifecycle_pass *p)
{
	metric_add(nodelifecycle_m_refused, 1, nodelifecycle_refusals[v]);
	switch (v) {
	case NODELIFECYCLE_REFUSE_NOT_IMPLEMENTED:
		/* the metadata provider answers this for every Node, every pass */
		if (!c->told_not_implemented)
			log_info(0, "The cloud provider cannot tell whether instances exist: "
			    "no Node is deleted or tainted as shut down", "provider",
			    c->cfg.provider->name, "node", n->name, "err", e->msg, NULL);
		c->told_not_implemented = 1;
		break;
	case NODELIFECYCLE_REFUSE_ERROR:
		if (p->errors++ == 0) {
			snprintf(p->first_node, sizeof(p->first_node), "%s", n->name);
			snprintf(p->first_err, sizeof(p->first_err), "%s", e->msg);
		}
		log_info(2, "Error checking if node exists; not deleting it", "node", n->name,
		    "err", e->msg, NULL);
		break;
	case NODELIFECYCLE_REFUSE_NOT_DEFINITIVE:
		log_info(2, "The cloud provider says the instance does not exist, but its "
		    "answers are not definitive; not deleting the node", "node", n->name,
		    "provider", c->cfg.provider->name, NULL);
		break;
	case NODELIFECYCLE_REFUSE_GRACE:
		log_info(2, "The instance does not exist, but the node is younger than the "
		    "deletion grace period; not deleting it yet", "node", n->name, NULL);
		break;
	default:
		break;
	}
}

/* nodelifecycle_node handles one Node as nodelifecycle_decide says, asking
 * the provider what it needs to know. */
static void
nodelifecycle_node(struct nodelifecycle *c, const struct kube_node *n,
    struct nodelifecycle_pass *p)
{
	const struct cloud_instances_ops *ops = c->cfg.provider->instances;
	struct nodelifecycle_facts f = {
		.ready = n->ready, .deleting = n->deletion_timestamp != 0, .age_ns = -1,
	};
	enum nodelifecycle_verdict v;
	struct nodeview view;
	struct errbuf e = { "" };
	int viewed = 0;

	/* a providerID bootccm cannot read names no instance it could ask
	 * about: never delete on doubt (the node controller reports it) */
	if (n->provider_id_nul)
		return;
	for (;;) {
		v = nodelifecycle_decide(c->cfg.provider, c->cfg.grace_period_ns, &f);
		if (v == NODELIFECYCLE_ASK_EXISTS) {
			nodeview_init(&view, n);
			viewed = 1;
			f.exists_rc = ops->exists(c->cfg.provider_state, &view.node, &f.exists, &e);
			f.exists_asked = 1;
			f.age_ns = nodelifecycle_age_ns(n);
		} else if (v == NODELIFECYCLE_ASK_SHUTDOWN) {
			e.msg[0] = '\0';
			f.shutdown_rc = ops->shutdown(c->cfg.provider_state, &view.node, &f.shutdown,
			    &e);
			f.shutdown_asked = 1;
		} else {
			break;
		}
	}
	switch (v) {
	case NODELIFECYCLE_READY:
		nodelifecycle_untaint(c, n);
		break;
	case NODELIFECYCLE_SHUTDOWN:
		nodelifecycle_taint(c, n);
		break;
	case NODELIFECYCLE_KEEP:
		if (f.shutdown_asked && f.shutdown_rc < 0 && f.shutdown_rc != ERR_NOT_IMPLEMENTED)
			log_info(2, "Error checking if node is shutdown", "node", n->name,
			    "err", e.msg, NULL);
		break;
	case NODELIFECYCLE_DELETE:
		nodelifecycle_delete(c, n);
		break;
	case NODELIFECYCLE_REFUSE_ERROR:
	case NODELIFECYCLE_REFUSE_NOT_IMPLEMENTED:
	case NODELIFECYCLE_REFUSE_NOT_DEFINITIVE:
	case NODELIFECYCLE_REFUSE_GRACE:
		nodelifecycle_refused(c, n, v, &e, p);
		break;
	default:
		break;  /* SKIP */
	}
	if (viewed)
		nodeview_free(&view);
}

/* nodelifecycle_summary warns once for a run of passes in which the
 * provider failed, and says when it answers again. */
static void
nodelifecycle_summary(struct nodelifecycle *c, const struct nodelifecycle_pass *p)
{
	char count[24];

	if (p->errors > 0 && !c->warned_errors) {
		snprintf(count, sizeof(count), "%d", p->errors);
		log_warn("The cloud provider could not tell whether instances exist; their "
		    "Nodes are not deleted (repeats at -v=2)", "nodes", count, "firstNode",
		    p->first_node, "err", p->first_err, NULL);
		c->warned_errors = 1;
	} else if (p->errors == 0 && c->warned_errors) {
		log_info(0, "The cloud provider answers again whether instances exist", NULL);
		c->warned_errors = 0;
	}
}

/* nodelifecycle_pass is upstream's MonitorNodes over the cache. */
static void
nodelifecycle_pass(struct nodelifecycle *c)
{
	struct nodelifecycle_pass p = { .errors = 0 };
	const struct store_obj **objs;
	int64_t t0 = clock_mono_ns();
	size_t n, i;

	store_list(reflector_store(c->cfg.nodes), &objs, &n);
	for (i = 0; i < n && !nodelifecycle_stopping(c); i++)
		nodelifecycle_node(c, kube_node_of(objs[i]), &p);
	store_list_free(objs, n);
	if (nodelifecycle_stopping(c))
		return;  /* an aborted pass is no measure */
	metric_observe(nodelifecycle_m_pass, (double)(clock_mono_ns() - t0) / NS_PER_S);
	nodelifecycle_summary(c, &p);
}

static int
nodelifecycle_wait(void *arg)
{
	return nodelifecycle_wait_synced(arg);
}

static void
nodelifecycle_begin(void *arg)
{
	struct nodelifecycle *c = arg;

	log_info(2, "Node lifecycle controller started", "provider", c->cfg.provider->name,
	    NULL);
}

static void
nodelifecycle_every(void *arg)
{
	nodelifecycle_pass(arg);
}

/* nodelifecycle_abort ends a request in flight (the API server slow to
 * answer) at once. */
static void
nodelifecycle_abort(void *arg)
{
	struct nodelifecycle *c = arg;

	if (c->client.http)
		http_client_abort(c->client.http);
}

int
nodelifecycle_start(const struct nodelifecycle_config *cfg, struct nodelifecycle **ret,
    struct errbuf *e)
{
	const struct cloud_provider *p = cfg->provider;
	struct nodelifecycle *c;

	if (p == NULL || p->instances == NULL || p->instances->exists == NULL) {
		*ret = NULL;
		return errbuf_set(e, ERR_NOT_IMPLEMENTED, "cloud provider %s cannot tell whether "
		    "instances exist: node lifecycle controller not started",
		    p && p->name ? p->name : "(none)");
	}
	if (cfg->kc == NULL || cfg->nodes == NULL)
		return errbuf_set(e, ERR_INTERNAL, "node lifecycle controller: no kubeconfig or "
		    "Node cache");
	pthread_once(&nodelifecycle_metrics_once, nodelifecycle_metrics_init);
	c = xcalloc(1, sizeof(*c));
	c->cfg = *cfg;
	if (c->cfg.monitor_period_ns <= 0)
		c->cfg.monitor_period_ns = NS_PER_S;
	stop_init(&c->stop);
	c->user_agent = xstrdup(cfg->user_agent ? cfg->user_agent : "bootccm");
	kube_client_init(&c->client, cfg->kc, c->user_agent);
	c->cfg.user_agent = c->user_agent;
	kube_client_set_stop(&c->client, &c->stop);
	kube_client_set_write_gate(&c->client, c->cfg.write_gate, c->cfg.write_gate_arg);
	/* like wait.Until: the period runs from the end of one pass */
	struct runner_config rcfg = {
		.stop = &c->stop, .arg = c, .stack_size = NODELIFECYCLE_STACK_SIZE,
		.wait = nodelifecycle_wait, .every = nodelifecycle_every,
		.period_ns = c->cfg.monitor_period_ns, .every_begin = nodelifecycle_begin,
		.every_first = 1, .on_stop = nodelifecycle_abort,
	};
	if (runner_start(&rcfg, &c->run) < 0) {
		nodelifecycle_free(c);
		return errbuf_set(e, ERR_INTERNAL,
		    "node lifecycle controller: cannot start a thread");
	}
	*ret = c;
	return 0;
}

void
nodelifecycle_stop(struct nodelifecycle *c)
{
	if (c == NULL)
		return;
	stop_request(&c->stop);
	runner_stop(c->run);
}

void
nodelifecycle_free(struct nodelifecycle *c)
{
	if (c == NULL)
		return;
	nodelifecycle_stop(c);
	runner_free(c->run);
	if (c->client.http)
		kube_client_cleanup(&c->client);
	free(c->user_agent);
	stop_destroy(&c->stop);
	free(c);
}
