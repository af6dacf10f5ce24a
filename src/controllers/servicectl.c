/* servicectl.c - the service (load balancer) controller (contract in
 * servicectl.h). */
#include "controllers/servicectl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/hmap.h"
#include "base/jsonx.h"
#include "kube/client.h"
#include "kube/ratelimiter.h"
#include "kube/runner.h"
#include "kube/store.h"
#include "kube/workqueue.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/netaddr.h"
#include "base/xalloc.h"

#define SERVICECTL_QUEUE "service"
#define SERVICECTL_SYNC_POLL_NS (200 * NS_PER_MS) /* stop checks while the caches sync */
#define SERVICECTL_DNS_MAX 253                    /* bytes of an ingress hostname */
/* Node changes re-check the Services' backends in passes, at most one pass
 * per SERVICECTL_NODE_PASS_NS: the first change at once, the changes that
 * follow within the period together at its end. Its queue key cannot be a
 * Service's (namespace/name). */
#define SERVICECTL_NODE_PASS_NS NS_PER_S
#define SERVICECTL_NODE_PASS_KEY "#nodes"

/* What the controller knows of one Service, in c->states under c->mu.
 * ensure, changed, drifted, waiting and recheck are set by the handlers and
 * the drift checker and taken by the key's worker; the other fields are
 * written only by the worker that holds the key (under c->mu), so it reads
 * them without the lock. */
struct svcstate {
	int ensure;                     /* a full ensure is due */
	int changed;                    /* ...for a change of the Service: not quiet */
	int drifted;                    /* ...because the provider says it drifted */
	int waiting;                    /* the last ensure answered ERR_UNAVAILABLE */
	int recheck;                    /* a write met a conflict: sync at the next version */
	char behind[SERVICEVIEW_RV_MAX]; /* the version our last write replaced: a
	                                   cache still at it has not seen the write */
	int ensured;                    /* ensure succeeded this term: digest, last set */
	int elsewhere;                  /* the provider said ERR_IMPLEMENTED_ELSEWHERE */
	uint64_t digest;                /* the backend set at the last ensure or update */
	int has_sel;                    /* sel holds the provider's node_selector */
	struct labelsel sel;
	size_t n_own;                   /* annotation keys the provider sets or removes */
	char *own[CLOUD_LB_ANNOTATIONS_MAX];
	const struct store_obj *last;   /* the Service as last ensured (a reference) */
};

/* One leadership term's threads and queue. */
struct servicectl_term {
	struct wq *q;
	struct stop stop;               /* the sleeps; the clients abandon retries */
	struct runner *run;             /* the workers; the start-up sweep, then
	                                 * drift checks */
};

struct servicectl {
	struct servicectl_config cfg;   /* the strings below are the copies */
	char *cluster_name;
	char *user_agent;
	char *classes_buf;              /* cls.names point into it */
	const char *class_names[SERVICECTL_CLASSES_MAX];
	struct serviceview_classes cls;
	const struct cloud_lb_ops *lb;
	pthread_mutex_t mu;
	int running;                    /* (mu) a term is on: handlers queue keys */
	struct servicectl_term term;    /* term.q is read under mu by the handlers */
	struct hmap states;             /* (mu) key -> struct svcstate */
	uint64_t nodes_gen;             /* (mu) bumped at every Node change */
	int node_pass_queued;           /* (mu) SERVICECTL_NODE_PASS_KEY is queued */
	uint64_t pass_gen;              /* (mu) the oldest Node generation a host
	                                 * sync may use: the last pass's, or a
	                                 * selector's Node change */
	int64_t node_pass_ns;           /* (mu) when the last pass ran */
	struct serviceview_cache bkc;   /* the latest Node snapshot (under mu) */
};

/* --- metrics -------------------------------------------------------------- */

static struct metric *m_lb_syncs, *m_nodesync_errors, *m_hosts_latency;
static struct metric *m_syncs, *m_drifted;
static pthread_once_t servicectl_metrics_once = PTHREAD_ONCE_INIT;

static void
servicectl_metrics_init(void)
{
	/* upstream's: ExponentialBuckets(1, 2, 15) */
	static const double buckets[] = {
		1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384,
	};

	m_lb_syncs = metrics_counter("service_controller_loadbalancer_sync_total",
	    "A metric counting the amount of times any load balancer has been configured, "
	    "as an effect of service/node changes on the cluster", NULL);
	m_nodesync_errors = metrics_counter("service_controller_nodesync_error_total",
	    "A metric counting the amount of times any load balancer has been configured "
	    "and errored, as an effect of node changes on the cluster", NULL);
	m_hosts_latency = metrics_histogram(
	    "service_controller_update_loadbalancer_host_latency_seconds",
	    "A metric measuring the latency for updating each load balancer hosts.", NULL,
	    buckets, sizeof(buckets) / sizeof(buckets[0]));
	m_syncs = metrics_counter("bootccm_service_syncs_total",
	    "Service syncs by result: ensured, unchanged, hosts-updated, deleted, "
	    "implemented-elsewhere, unavailable, failed, conflict.", "result");
	m_drifted = metrics_counter("bootccm_service_drifted_total",
	    "Load balancers the periodic check found missing or changed, ensured again.",
	    NULL);
}

/* --- the provider's answer --------------------------------------------- */

/* servicectl_terminated: the array holds a NUL. */
#define servicectl_terminated(a) (memchr((a), '\0', sizeof(a)) != NULL)

static int
servicectl_hostname_ok(const char *h)
{
	struct netaddr a;

	return strlen(h) <= SERVICECTL_DNS_MAX && netaddr_parse(h, &a) != 0 &&
	    labelsel_dns_subdomain_ok(h);
}

int
servicectl_check_result(const struct kube_service *s, const struct cloud_lb_result *r,
    struct errbuf *e)
{
	const char *ns = s->namespace, *nm = s->name;
	size_t i;

	if (r->status.n_ingress > CLOUD_LB_INGRESS_MAX)
		return errbuf_set(e, ERR_INVALID, "service %s/%s: the provider answered %zu "
		    "status.loadBalancer.ingress entries (at most %d)", ns, nm,
		    r->status.n_ingress, CLOUD_LB_INGRESS_MAX);
	for (i = 0; i < r->status.n_ingress; i++) {
		const struct cloud_lb_ingress *g = &r->status.ingress[i];
		struct netaddr a;
		if (!servicectl_terminated(g->ip) || !servicectl_terminated(g->hostname) ||
		    !servicectl_terminated(g->ip_mode))
			return errbuf_set(e, ERR_INVALID, "service %s/%s: the provider's "
			    "status.loadBalancer.ingress[%zu]: a field is not terminated", ns, nm, i);
		if ((g->ip[0] == '\0') == (g->hostname[0] == '\0'))
			return errbuf_set(e, ERR_INVALID, "service %s/%s: the provider's "
			    "status.loadBalancer.ingress[%zu]: expected an ip or a hostname, not %s",
			    ns, nm, i, g->ip[0] ? "both" : "neither");
		if (g->ip[0] != '\0' && netaddr_parse(g->ip, &a) < 0)
			return errbuf_set(e, ERR_INVALID, "service %s/%s: the provider's "
			    "status.loadBalancer.ingress[%zu].ip \"%.64s\": not an IP address",
			    ns, nm, i, g->ip);
		if (g->hostname[0] != '\0' && !servicectl_hostname_ok(g->hostname))
			return errbuf_set(e, ERR_INVALID, "service %s/%s: the provider's "
			    "status.loadBalancer.ingress[%zu].hostname \"%.64s\": not a DNS name "
			    "(or an IP address)", ns, nm, i, g->hostname);
		if (g->ip_mode[0] != '\0' && (g->ip[0] == '\0' ||
		    (strcmp(g->ip_mode, "VIP") != 0 && strcmp(g->ip_mode, "Proxy") != 0)))
			return errbuf_set(e, ERR_INVALID, "service %s/%s: the provider's "
			    "status.loadBalancer.ingress[%zu].ipMode \"%s\": expected VIP or Proxy, "
			    "with an ip", ns, nm, i, g->ip_mode);
	}
	if (r->n_annotations > CLOUD_LB_ANNOTATIONS_MAX)
		return errbuf_set(e, ERR_INVALID, "service %s/%s: the provider asked for %zu "
		    "annotations (at most %d)", ns, nm, r->n_annotations, CLOUD_LB_ANNOTATIONS_MAX);
	for (i = 0; i < r->n_annotations; i++) {
		const struct cloud_lb_annotation *a = &r->annotations[i];
		if (!servicectl_terminated(a->key) || !servicectl_terminated(a->value) ||
		    !labelsel_key_ok(a->key))
			return errbuf_set(e, ERR_INVALID, "service %s/%s: the provider's annotation "
			    "[%zu] \"%.64s\": not a qualified name", ns, nm, i,
			    servicectl_terminated(a->key) ? a->key : "");
	}
	return 0;
}

/* servicectl_digest: b's backend set as st's balancer selects it. */
static uint64_t
servicectl_digest(const struct serviceview_nodes *b, const struct svcstate *st)
{
	return st->has_sel ? serviceview_nodes_digest(b->incl, b->n, &st->sel) : b->digest;
}

/* --- per-Service state (c->mu held) --------------------------------------- */

static struct svcstate *
servicectl_state(struct servicectl *c, const char *key)
{
	struct svcstate *st = hmap_get(&c->states, key);

	if (st == NULL) {
		st = xcalloc(1, sizeof(*st));
		hmap_put(&c->states, key, st);
	}
	return st;
}

static void
servicectl_own_free(struct svcstate *st)
{
	for (size_t i = 0; i < st->n_own; i++)
		free(st->own[i]);
	st->n_own = 0;
}

static void
servicectl_state_free(void *p)
{
	struct svcstate *st = p;

	if (st == NULL)
		return;
	servicectl_own_free(st);
	if (st->has_sel)
		labelsel_free(&st->sel);
	store_obj_unref(st->last);
	free(st);
}

/* servicectl_queue adds key to the term's queue (c->mu held, running). */
static void
servicectl_queue(struct servicectl *c, const char *key)
{
	(void)wq_add(c->term.q, key);
}

/* servicectl_requeue_waiting syncs at once every Service whose last ensure
 * answered ERR_UNAVAILABLE: something was freed (c->mu held). */
static void
servicectl_requeue_waiting(struct servicectl *c)
{
	struct hmap_iter it;
	const char *key;
	void *v;

	if (!c->running)
		return;
	hmap_iter_init(&it, &c->states);
	while (hmap_iter_next(&it, &key, &v)) {
		struct svcstate *st = v;
		if (st->waiting) {
			st->ensure = 1;
			servicectl_queue(c, key);
		}
	}
}

/* servicectl_node_pass_run is the node pass (a worker holding
 * SERVICECTL_NODE_PASS_KEY, c->mu held): it re-checks the backends of every
 * ensured Service, and the changes from now on make the next pass. */
static void
servicectl_node_pass_run(struct servicectl *c)
{
	struct hmap_iter it;
	const char *key;
	void *v;

	c->node_pass_queued = 0;
	c->node_pass_ns = clock_mono_ns();
	c->pass_gen = c->nodes_gen;
	if (!c->running)
		return;
	hmap_iter_init(&it, &c->states);
	while (hmap_iter_next(&it, &key, &v))
		if (((struct svcstate *)v)->ensured)
			servicectl_queue(c, key);
}

/* servicectl_node_pass asks for a node pass: at once when the last one is
 * a period old, else at the end of its period; one pass serves every
 * change asked before it starts (c->mu held, running). Under Node churn
 * this is what keeps 2,000 Services from being synced (with a Node
 * snapshot and an Event each) at every one of ten Node changes a second. */
static void
servicectl_node_pass(struct servicectl *c)
{
	if (c->node_pass_queued)
		return;
	c->node_pass_queued = 1;
	(void)wq_add_after(c->term.q, SERVICECTL_NODE_PASS_KEY,
	    c->node_pass_ns + SERVICECTL_NODE_PASS_NS - clock_mono_ns());
}

/* --- the cache's handlers (reflector threads) ----------------------------- */

/* servicectl_observe tells the provider about the Service at key (s NULL:
 * deleted). Returns 1 when it freed something. */
static int
servicectl_observe(struct servicectl *c, const char *key, const struct kube_service *s)
{
	struct serviceview v;
	int r;

	if (c->lb->observe == NULL)
		return 0;
	if (s == NULL)
		return c->lb->observe(c->cfg.provider_state, key, NULL) > 0;
	serviceview_init(&v, s, serviceview_wants(&c->cls, s));
	r = c->lb->observe(c->cfg.provider_state, key, &v.svc);
	serviceview_free(&v);
	return r > 0;
}

static void
servicectl_on_svc_add(const struct store_obj *o, void *arg)
{
	struct servicectl *c = arg;
	const struct kube_service *s = kube_service_of(o);
	int freed = servicectl_observe(c, o->key, s);

	pthread_mutex_lock(&c->mu);
	if (c->running && (serviceview_wants(&c->cls, s) || serviceview_needs_cleanup(&c->cls, s))) {
		servicectl_state(c, o->key)->ensure = 1;
		servicectl_queue(c, o->key);
	}
	if (freed)
		servicectl_requeue_waiting(c);
	pthread_mutex_unlock(&c->mu);
}

static void
servicectl_on_svc_update(const struct store_obj *oo, const struct store_obj *o, void *arg)
{
	struct servicectl *c = arg;
	const struct kube_service *old = kube_service_of(oo), *s = kube_service_of(o);
	int freed = servicectl_observe(c, o->key, s);
	const char *own[CLOUD_LB_ANNOTATIONS_MAX], *why = NULL;
	struct svcstate *st;
	size_t n_own = 0;

	pthread_mutex_lock(&c->mu);
	if (c->running) {
		st = hmap_get(&c->states, o->key);
		for (size_t i = 0; st != NULL && i < st->n_own; i++)
			own[n_own++] = st->own[i];
		why = serviceview_needs_update_except(&c->cls, old, s, own, n_own);
		if (why != NULL) {
			st = servicectl_state(c, o->key);
			st->ensure = st->changed = 1;
			servicectl_queue(c, o->key);
		} else if (serviceview_needs_cleanup(&c->cls, s)) {
			servicectl_queue(c, o->key);
		}
		if (st != NULL && st->recheck) {
			st->recheck = 0;
			servicectl_queue(c, o->key);
		}
	}
	if (freed)
		servicectl_requeue_waiting(c);
	pthread_mutex_unlock(&c->mu);
	if (why != NULL)
		log_info(2, "Service changed: ensuring its load balancer", "service", o->key,
		    "field", why, NULL);
}

static void
servicectl_on_svc_delete(const struct store_obj *o, void *arg)
{
	struct servicectl *c = arg;
	int freed = servicectl_observe(c, o->key, NULL);

	pthread_mutex_lock(&c->mu);
	/* a Service we know of: its sync drops the state (and deletes a
	 * balancer whose cleanup someone else cut short) */
	if (c->running && hmap_get(&c->states, o->key) != NULL)
		servicectl_queue(c, o->key);
	if (freed)
		servicectl_requeue_waiting(c);
	pthread_mutex_unlock(&c->mu);
}

static void
servicectl_on_node_add(const struct store_obj *o, void *arg)
{
	struct servicectl *c = arg;

	(void)o;
	pthread_mutex_lock(&c->mu);
	c->nodes_gen++;
	if (c->running)
		servicectl_node_pass(c);
	pthread_mutex_unlock(&c->mu);
}

static void
servicectl_on_node_update(const struct store_obj *oo, const struct store_obj *o, void *arg)
{
	struct servicectl *c = arg;
	const struct kube_node *old = kube_node_of(oo), *n = kube_node_of(o);
	struct hmap_iter it;
	const char *key;
	void *v;

	pthread_mutex_lock(&c->mu);
	c->nodes_gen++;
	if (c->running && serviceview_node_update_matters(old, n)) {
		servicectl_node_pass(c);
	} else if (c->running && serviceview_node_labels_changed(old, n)) {
		/* only the Services whose node selector it starts or stops matching */
		hmap_iter_init(&it, &c->states);
		while (hmap_iter_next(&it, &key, &v)) {
			struct svcstate *st = v;
			if (st->ensured && st->has_sel && serviceview_node_matches(&st->sel, old) !=
			    serviceview_node_matches(&st->sel, n)) {
				servicectl_queue(c, key);
				c->pass_gen = c->nodes_gen;  /* their syncs must see it */
			}
		}
	}
	pthread_mutex_unlock(&c->mu);
}

/* --- writes --------------------------------------------------------------- */

/* --- syncs ---------------------------------------------------------------- */

/* What a sync of the ensure kind is for. */
enum servicectl_mode {
	SERVICECTL_ENSURE,   /* the Service's own sync: Ensuring/Ensured */
	SERVICECTL_HOSTS,    /* the backends changed, no update_hosts: Updated */
};

/* servicectl_hosts_failed records UpdateLoadBalancerFailed, upstream's words. */
static void
servicectl_hosts_failed(struct servicectl *c, const struct kube_service *s,
    const struct serviceview_nodes *b, const char *err)
{
	char names[512];

	serviceview_node_names(b, names, sizeof(names));
	serviceview_event(c->cfg.events, s, EVENTS_WARNING, "UpdateLoadBalancerFailed",
	    "Error updating load balancer with new hosts [%s] [node names limited, total "
	    "number of nodes: %zu], error: %s", names, b->n, err);
}

static void
servicectl_hosts_updated(struct servicectl *c, const struct kube_service *s, size_t n)
{
	if (n == 0)
		serviceview_event(c->cfg.events, s, EVENTS_WARNING, "UnAvailableLoadBalancer",
		    "There are no available nodes for LoadBalancer");
	else
		serviceview_event(c->cfg.events, s, EVENTS_NORMAL, "UpdatedLoadBalancer",
		    "Updated load balancer with new hosts");
}

/* servicectl_ensured records what a successful ensure leaves in st: the
 * backends it used, the provider's node selector, the Service (c->mu is
 * taken here), and queues the Service again when the Nodes changed since
 * those backends were taken. */
static void
servicectl_ensured(struct servicectl *c, const struct store_obj *o, struct svcstate *st,
    const struct serviceview_nodes *b, const struct serviceview *v)
{
	const char *sel = c->lb->node_selector ? c->lb->node_selector(c->cfg.provider_state,
	    &v->svc) : NULL;
	struct labelsel parsed;
	struct errbuf e = { "" };
	int has = 0;

	if (sel != NULL && *sel != '\0') {
		if (labelsel_parse(sel, &parsed, &e) == 0)
			has = 1;
		else
			log_warn("The provider's node selector for the Service's balancer does not "
			    "parse; its label changes are not followed", "service", o->key,
			    "selector", sel, "err", e.msg, NULL);
	}
	pthread_mutex_lock(&c->mu);
	if (st->has_sel)
		labelsel_free(&st->sel);
	st->has_sel = has;
	if (has)
		st->sel = parsed;
	st->digest = servicectl_digest(b, st);
	st->ensured = 1;
	st->waiting = 0;
	store_obj_unref(st->last);
	st->last = store_obj_ref(o);
	/* a Node changed after b was taken: its handler's pass may have
	 * skipped this Service (not ensured yet); the next pass takes it */
	if (c->running && b->gen != c->nodes_gen)
		servicectl_node_pass(c);
	pthread_mutex_unlock(&c->mu);
}

/* servicectl_ensure is upstream's ensure flow for the Service o (see the
 * header): finalizer, ensure, annotations, status; quiet when nothing of
 * the Service changed and nothing is to be written. In SERVICECTL_HOSTS
 * mode (backends changed, the provider has no update_hosts) its Events are
 * the host update's. */
static int
servicectl_ensure(struct servicectl *c, struct kube_client *kc, const struct store_obj *o,
    struct svcstate *st, enum servicectl_mode mode, int changed, int drifted,
    char rv[SERVICEVIEW_RV_MAX], const char **ret_result, struct errbuf *e)
{
	const struct kube_service *s = kube_service_of(o);
	int has_fin = kube_service_has_finalizer(s, SERVICEVIEW_FINALIZER);
	int quiet = mode == SERVICECTL_HOSTS || (!changed && has_fin && s->ningress > 0);
	struct cloud_lb_result *res = xcalloc(1, sizeof(*res));
	struct serviceview_nodes *b = serviceview_cache_get(&c->bkc, mode != SERVICECTL_HOSTS);
	const char *step = "ensure load balancer";
	json_object *patch;
	struct serviceview v;
	int r, wrote = 0;

	serviceview_init(&v, s, 1);
	if (!quiet) {
		serviceview_event(c->cfg.events, s, EVENTS_NORMAL, "EnsuringLoadBalancer", "%s", drifted ?
		    "Ensuring load balancer: the provider reports it missing or changed" :
		    "Ensuring load balancer");
		if (b->n == 0)
			serviceview_event(c->cfg.events, s, EVENTS_WARNING, "UnAvailableLoadBalancer",
			    "There are no available nodes for LoadBalancer");
	}
	/* the finalizer before anything exists that would need cleaning up */
	if ((patch = serviceview_meta_patch(s, 1, NULL)) != NULL) {
		step = "add load balancer cleanup finalizer";
		if ((r = serviceview_patch(kc, s, 0, patch, rv, e)) < 0)
			goto fail;
		wrote = 1;
		step = "ensure load balancer";
	}
	r = c->lb->ensure(c->cfg.provider_state, c->cluster_name, &v.svc, b->nodes, b->n, res, e);
	if (r == ERR_IMPLEMENTED_ELSEWHERE) {
		log_info(4, "The Service's load balancer is implemented by another controller",
		    "service", o->key, "provider", c->cfg.provider->name, NULL);
		servicectl_ensured(c, o, st, b, &v);
		pthread_mutex_lock(&c->mu);
		st->elsewhere = 1;
		pthread_mutex_unlock(&c->mu);
		*ret_result = "implemented-elsewhere";
		r = 0;
		goto out;
	}
	if (r < 0 || (r = servicectl_check_result(s, res, e)) < 0)
		goto fail;
	/* the keys the provider writes are its output, not a change of the
	 * Service: known before the write, so its watch event finds them */
	pthread_mutex_lock(&c->mu);
	st->elsewhere = 0;
	servicectl_own_free(st);
	for (size_t i = 0; i < res->n_annotations; i++)
		st->own[st->n_own++] = xstrdup(res->annotations[i].key);
	pthread_mutex_unlock(&c->mu);
	if ((patch = serviceview_meta_patch(s, 0, res)) != NULL) {
		step = "write the load balancer's annotations";
		if ((r = serviceview_patch(kc, s, 0, patch, rv, e)) < 0)
			goto fail;
		wrote = 1;
	}
	if (!serviceview_status_equal(s, &res->status)) {
		step = "update load balancer status";
		r = serviceview_patch(kc, s, 1, serviceview_status_patch(&res->status), rv, e);
		if (r < 0 && r != ERR_NOT_FOUND)  /* gone meanwhile: nothing to update */
			goto fail;
		wrote = 1;
	}
	servicectl_ensured(c, o, st, b, &v);
	if (mode == SERVICECTL_HOSTS) {
		servicectl_hosts_updated(c, s, b->n);
		*ret_result = "hosts-updated";
	} else if (quiet && !wrote) {
		log_info(4, "Load balancer unchanged", "service", o->key, NULL);
		*ret_result = "unchanged";
	} else {
		if (quiet) {
			/* a quiet sync that found something to change says so */
			serviceview_event(c->cfg.events, s, EVENTS_NORMAL, "EnsuringLoadBalancer",
			    "Ensuring load balancer");
			if (b->n == 0)
				serviceview_event(c->cfg.events, s, EVENTS_WARNING, "UnAvailableLoadBalancer",
				    "There are no available nodes for LoadBalancer");
		}
		serviceview_event(c->cfg.events, s, EVENTS_NORMAL, "EnsuredLoadBalancer", "Ensured load balancer");
		log_info(2, "Ensured load balancer", "service", o->key, NULL);
		*ret_result = "ensured";
	}
	r = 0;
	goto out;
fail:
	if (r == ERR_CONFLICT || r == ERR_CANCELED) {
		/* not a failure: the cache is behind, or the leadership ended */
		*ret_result = r == ERR_CONFLICT ? "conflict" : NULL;
	} else {
		*ret_result = r == ERR_UNAVAILABLE ? "unavailable" : "failed";
		if (mode == SERVICECTL_HOSTS)
			servicectl_hosts_failed(c, s, b, e->msg);
		else
			serviceview_event(c->cfg.events, s, EVENTS_WARNING, "SyncLoadBalancerFailed",
			    "Error syncing load balancer: failed to %s: %s", step, e->msg);
	}
	errbuf_prefix(e, r, "failed to %s", step);
	pthread_mutex_lock(&c->mu);
	st->waiting = r == ERR_UNAVAILABLE;
	if (mode == SERVICECTL_HOSTS)
		st->ensure = 1;  /* the retry ensures the whole balancer */
	pthread_mutex_unlock(&c->mu);
out:
	serviceview_free(&v);
	serviceview_cache_put(&c->bkc, b);
	free(res);
	return r;
}

/* servicectl_hosts brings the Service's backends up to date when the set
 * it selects changed since its last ensure or update. */
static int
servicectl_hosts(struct servicectl *c, struct kube_client *kc, const struct store_obj *o,
    struct svcstate *st, char rv[SERVICEVIEW_RV_MAX], const char **ret_result,
    struct errbuf *e)
{
	const struct kube_service *s = kube_service_of(o);
	struct serviceview_nodes *b = serviceview_cache_get(&c->bkc, 0);
	uint64_t d = servicectl_digest(b, st);
	struct serviceview v;
	int64_t t0;
	int r;

	*ret_result = NULL;
	if (d == st->digest) {
		serviceview_cache_put(&c->bkc, b);
		return 0;
	}
	if (c->lb->update_hosts == NULL) {
		serviceview_cache_put(&c->bkc, b);
		return servicectl_ensure(c, kc, o, st, SERVICECTL_HOSTS, 0, 0, rv, ret_result,
		    e);
	}
	log_info(2, "Updating the load balancer's backends", "service", o->key, NULL);
	serviceview_init(&v, s, 1);
	t0 = clock_mono_ns();
	r = c->lb->update_hosts(c->cfg.provider_state, c->cluster_name, &v.svc, b->nodes, b->n,
	    e);
	metric_add(m_lb_syncs, 1);
	metric_observe(m_hosts_latency, (double)(clock_mono_ns() - t0) / NS_PER_S);
	if (r == 0 || r == ERR_IMPLEMENTED_ELSEWHERE) {
		if (r == 0)
			servicectl_hosts_updated(c, s, b->n);
		pthread_mutex_lock(&c->mu);
		st->digest = d;
		pthread_mutex_unlock(&c->mu);
		*ret_result = "hosts-updated";
		r = 0;
	} else {
		metric_add(m_nodesync_errors, 1);
		servicectl_hosts_failed(c, s, b, e->msg);
		errbuf_prefix(e, r, "failed to update load balancer hosts");
		/* the retry ensures the whole balancer, as upstream's does */
		pthread_mutex_lock(&c->mu);
		st->ensure = 1;
		pthread_mutex_unlock(&c->mu);
		*ret_result = "failed";
	}
	serviceview_free(&v);
	serviceview_cache_put(&c->bkc, b);
	return r;
}

/* servicectl_delete_lb asks the provider to delete s's balancer, with
 * upstream's Events; res gets the annotations to remove. */
static int
servicectl_delete_lb(struct servicectl *c, const struct kube_service *s,
    struct cloud_lb_result *res, struct errbuf *e)
{
	struct serviceview v;
	int r;

	serviceview_event(c->cfg.events, s, EVENTS_NORMAL, "DeletingLoadBalancer", "Deleting load balancer");
	serviceview_init(&v, s, 0);
	r = c->lb->ensure_deleted(c->cfg.provider_state, c->cluster_name, &v.svc, res, e);
	serviceview_free(&v);
	if (r == ERR_IMPLEMENTED_ELSEWHERE) {
		memset(res, 0, sizeof(*res));
		r = 0;
	}
	if (r == 0) {
		res->status.n_ingress = 0;
		r = servicectl_check_result(s, res, e);
	}
	if (r < 0) {
		serviceview_event(c->cfg.events, s, EVENTS_WARNING, "DeleteLoadBalancerFailed",
		    "Error deleting load balancer: %s", e->msg);
		errbuf_prefix(e, r, "failed to delete load balancer");
	}
	return r;
}

/* servicectl_cleanup deletes the balancer of a Service that carries the
 * finalizer and is being deleted or no longer served; the finalizer goes
 * only after the provider confirmed. */
static int
servicectl_cleanup(struct servicectl *c, struct kube_client *kc, const struct store_obj *o,
    char rv[SERVICEVIEW_RV_MAX], const char **ret_result, struct errbuf *e)
{
	const struct kube_service *s = kube_service_of(o);
	struct cloud_lb_result *res = xcalloc(1, sizeof(*res));
	struct cloud_lb_status none = { .n_ingress = 0 };
	const char *step;
	json_object *patch;
	int r;

	log_info(2, "Deleting the Service's load balancer", "service", o->key, NULL);
	*ret_result = "failed";
	if ((r = servicectl_delete_lb(c, s, res, e)) < 0)
		goto out;
	/* the status first: with the finalizer gone, a failure here would not
	 * be retried. Not for a Service that goes away with the finalizer. */
	if (s->ningress > 0 && (s->deletion_timestamp == 0 || s->nfinalizers > 1)) {
		r = serviceview_patch(kc, s, 1, serviceview_status_patch(&none), rv, e);
		if (r == ERR_NOT_FOUND)
			goto done;
		if (r < 0) {
			step = "update load balancer status";
			goto write_failed;
		}
	}
	if ((patch = serviceview_meta_patch(s, -1, res)) != NULL) {
		r = serviceview_patch(kc, s, 0, patch, rv, e);
		if (r < 0 && r != ERR_NOT_FOUND) {
			step = "remove load balancer cleanup finalizer";
			goto write_failed;
		}
	}
done:
	serviceview_event(c->cfg.events, s, EVENTS_NORMAL, "DeletedLoadBalancer", "Deleted load balancer");
	log_info(2, "Deleted load balancer", "service", o->key, NULL);
	*ret_result = "deleted";
	r = 0;
	/* what it held may let a waiting Service have it */
	pthread_mutex_lock(&c->mu);
	servicectl_requeue_waiting(c);
	pthread_mutex_unlock(&c->mu);
	goto out;
write_failed:
	if (r == ERR_CONFLICT || r == ERR_CANCELED)
		*ret_result = r == ERR_CONFLICT ? "conflict" : NULL;
	else
		serviceview_event(c->cfg.events, s, EVENTS_WARNING, "SyncLoadBalancerFailed",
		    "Error syncing load balancer: failed to %s: %s", step, e->msg);
	errbuf_prefix(e, r, "failed to %s", step);
out:
	free(res);
	return r;
}

/* servicectl_forget deletes the balancer last ensured for a Service that
 * vanished without its cleanup, or came back under another uid. */
static int
servicectl_forget(struct servicectl *c, const struct store_obj *last, const char **ret_result,
    struct errbuf *e)
{
	struct cloud_lb_result *res = xcalloc(1, sizeof(*res));
	int r;

	log_info(2, "The Service went without its load balancer's cleanup; deleting it",
	    "service", last->key, "uid", last->uid, NULL);
	r = servicectl_delete_lb(c, kube_service_of(last), res, e);
	free(res);
	if (r < 0) {
		*ret_result = "failed";
		return r;
	}
	serviceview_event(c->cfg.events, kube_service_of(last), EVENTS_NORMAL, "DeletedLoadBalancer",
	    "Deleted load balancer");
	*ret_result = "deleted";
	pthread_mutex_lock(&c->mu);
	servicectl_requeue_waiting(c);
	pthread_mutex_unlock(&c->mu);
	return 0;
}

/* servicectl_drop forgets key's state (the Service is gone or not ours). */
static void
servicectl_drop(struct servicectl *c, const char *key)
{
	struct svcstate *st;

	pthread_mutex_lock(&c->mu);
	st = hmap_delete(&c->states, key);
	pthread_mutex_unlock(&c->mu);
	servicectl_state_free(st);
}

/* servicectl_conflict: a write met a newer version of the Service than the
 * cache's. Sync again as soon as the cache has it (now, if it already
 * does), else at its watch event. */
static void
servicectl_conflict(struct servicectl *c, const char *key, const char *used_rv)
{
	const struct store_obj *o;

	pthread_mutex_lock(&c->mu);
	if (c->running)
		servicectl_state(c, key)->recheck = 1;
	pthread_mutex_unlock(&c->mu);
	o = store_get(reflector_store(c->cfg.services), key);
	if (o == NULL || strcmp(o->resource_version, used_rv) != 0) {
		pthread_mutex_lock(&c->mu);
		if (c->running)
			servicectl_queue(c, key);
		pthread_mutex_unlock(&c->mu);
	}
	store_obj_unref(o);
}

/* servicectl_putback: a sync that did not do its work leaves it due. */
static void
servicectl_putback(struct servicectl *c, const char *key, int ensure, int changed, int drifted)
{
	struct svcstate *st;

	if (!ensure && !changed && !drifted)
		return;
	pthread_mutex_lock(&c->mu);
	if ((st = hmap_get(&c->states, key)) != NULL) {
		st->ensure |= ensure;
		st->changed |= changed;
		st->drifted |= drifted;
	}
	pthread_mutex_unlock(&c->mu);
}

/* servicectl_wrote: a sync that began at the version used_rv and left the
 * Service at rv. When it wrote (they differ), the next sync that finds
 * the cache still at used_rv waits for the write's watch event. */
static void
servicectl_wrote(struct servicectl *c, const char *key, const char *used_rv, const char *rv)
{
	struct svcstate *st;

	if (strcmp(used_rv, rv) == 0)
		return;
	pthread_mutex_lock(&c->mu);
	if ((st = hmap_get(&c->states, key)) != NULL)
		snprintf(st->behind, sizeof(st->behind), "%s", used_rv);
	pthread_mutex_unlock(&c->mu);
}

/* servicectl_sync brings the Service at key where it should be, as the
 * cache has it. *ret_result names what happened (NULL: nothing). */
static int
servicectl_sync(struct servicectl *c, struct kube_client *kc, const char *key,
    const char **ret_result, struct errbuf *e)
{
	const struct store_obj *o = store_get(reflector_store(c->cfg.services), key);
	const struct kube_service *s = o ? kube_service_of(o) : NULL;
	struct svcstate *st;
	int ensure = 0, changed = 0, drifted = 0, r = 0;
	char used_rv[SERVICEVIEW_RV_MAX] = "", rv[SERVICEVIEW_RV_MAX];

	*ret_result = NULL;
	pthread_mutex_lock(&c->mu);
	if ((st = hmap_get(&c->states, key)) != NULL) {
		ensure = st->ensure;
		changed = st->changed;
		drifted = st->drifted;
		st->ensure = st->changed = st->drifted = 0;
	}
	pthread_mutex_unlock(&c->mu);

	if (st != NULL && st->last != NULL &&
	    (o == NULL || strcmp(st->last->uid, o->uid) != 0)) {
		if ((r = servicectl_forget(c, st->last, ret_result, e)) < 0)
			goto fail;
		pthread_mutex_lock(&c->mu);
		store_obj_unref(st->last);
		st->last = NULL;
		st->ensured = 0;
		pthread_mutex_unlock(&c->mu);
	}
	if (o == NULL) {
		servicectl_drop(c, key);
		return 0;
	}
	snprintf(used_rv, sizeof(used_rv), "%s", o->resource_version);
	memcpy(rv, used_rv, sizeof(rv));
	if (st != NULL && st->behind[0] != '\0') {
		if (strcmp(st->behind, used_rv) == 0) {
			/* the cache has not seen our last write yet: acting on it
			 * would write again what is written, and meet a conflict.
			 * The write's watch event brings the sync. */
			log_info(4, "The cache is behind the Service's last write; syncing at its "
			    "next version", "service", key, "resourceVersion", used_rv, NULL);
			servicectl_putback(c, key, ensure, changed, drifted);
			servicectl_conflict(c, key, used_rv);
			store_obj_unref(o);
			return 0;
		}
		st->behind[0] = '\0';
	}
	if (!serviceview_wants(&c->cls, s) || serviceview_needs_cleanup(&c->cls, s) ||
	    s->deletion_timestamp != 0) {
		if (kube_service_has_finalizer(s, SERVICEVIEW_FINALIZER))
			r = servicectl_cleanup(c, kc, o, rv, ret_result, e);
		else if (st != NULL && st->last != NULL)
			/* ensured by us, and our finalizer removed by someone else */
			r = servicectl_forget(c, st->last, ret_result, e);
		if (r < 0)
			goto fail;
		/* not ours (any more): nothing left to know of it */
		servicectl_drop(c, key);
		store_obj_unref(o);
		return 0;
	}
	if (st == NULL) {
		pthread_mutex_lock(&c->mu);
		st = servicectl_state(c, key);
		pthread_mutex_unlock(&c->mu);
	}
	if (ensure || !st->ensured)
		r = servicectl_ensure(c, kc, o, st, SERVICECTL_ENSURE, changed, drifted, rv,
		    ret_result, e);
	else
		r = servicectl_hosts(c, kc, o, st, rv, ret_result, e);
	if (r < 0)
		goto fail;
	servicectl_wrote(c, key, used_rv, rv);
	store_obj_unref(o);
	return 0;
fail:
	/* the work is still due: the retry does it */
	if (st != NULL)
		servicectl_putback(c, key, ensure, changed, drifted);
	servicectl_wrote(c, key, used_rv, rv);
	if (r == ERR_CONFLICT)
		servicectl_conflict(c, key, used_rv);
	store_obj_unref(o);
	return r;
}

/* servicectl_wait_synced waits for the Service and Node caches, noticing a
 * stop. Returns 1 once both synced, 0 when stopping. */
static int
servicectl_wait_synced(void *arg)
{
	struct servicectl *c = arg;

	while (!stop_requested(&c->term.stop)) {
		int64_t t0 = clock_mono_ns();
		if (reflector_wait_synced(c->cfg.services, SERVICECTL_SYNC_POLL_NS) &&
		    reflector_wait_synced(c->cfg.nodes, SERVICECTL_SYNC_POLL_NS))
			return 1;
		/* a stopped reflector answers at once: do not spin */
		if (stop_sleep(&c->term.stop, SERVICECTL_SYNC_POLL_NS - (clock_mono_ns() - t0)))
			return 0;
	}
	return 0;
}

/* servicectl_work is the runner's sync: upstream's processNextServiceItem,
 * every failure retried on the key's backoff. SERVICECTL_NODE_PASS_KEY
 * runs the Node pass instead. */
static int
servicectl_work(void *arg, void *ctx, const char *key)
{
	struct servicectl *c = arg;
	struct errbuf e = { "" };
	const char *result = NULL;
	int r;

	if (strcmp(key, SERVICECTL_NODE_PASS_KEY) == 0) {
		pthread_mutex_lock(&c->mu);
		servicectl_node_pass_run(c);
		pthread_mutex_unlock(&c->mu);
		return RUNNER_HANDLED;
	}
	r = servicectl_sync(c, ctx, key, &result, &e);
	if (result != NULL)
		metric_add(m_syncs, 1, result);
	if (r < 0) {
		if (r == ERR_CONFLICT)
			log_info(2, "The Service changed during its sync; syncing it again",
			    "service", key, "err", e.msg, NULL);
		else if (!stop_requested(&c->term.stop))
			log_warn("Error processing service (will retry)", "service", key,
			    "err", e.msg, NULL);
		return r;
	}
	return 0;
}

/* servicectl_after lets the backends go once a Service's sync leaves the
 * queue idle. */
static void
servicectl_after(void *arg, int rc)
{
	struct servicectl *c = arg;

	if (rc != RUNNER_HANDLED && wq_len(c->term.q) == 0)
		serviceview_cache_trim(&c->bkc);
}

/* --- the start-up sweep and the drift checks ------------------------------ */

/* servicectl_drift_once asks the provider whether the balancers of the
 * served, ensured Services still are what ensure made of them, and queues
 * a full ensure of those that drifted. */
static void
servicectl_drift_once(struct servicectl *c)
{
	const struct store_obj **objs = NULL, **chk;
	struct serviceview_nodes *b;
	unsigned char *drifted;
	size_t nobjs = 0, n = 0, i, ndrift = 0;
	struct errbuf e = { "" };

	store_list(reflector_store(c->cfg.services), &objs, &nobjs);
	chk = xcalloc(nobjs, sizeof(*chk));
	drifted = xcalloc(nobjs ? nobjs : 1, 1);
	pthread_mutex_lock(&c->mu);
	for (i = 0; i < nobjs; i++) {
		const struct kube_service *s = kube_service_of(objs[i]);
		struct svcstate *st = hmap_get(&c->states, objs[i]->key);
		if (st != NULL && st->ensured && !st->ensure && !st->elsewhere &&
		    st->last != NULL && strcmp(st->last->uid, objs[i]->uid) == 0 &&
		    s->deletion_timestamp == 0 && serviceview_wants(&c->cls, s))
			chk[n++] = objs[i];
	}
	pthread_mutex_unlock(&c->mu);
	if (n == 0)
		goto out;
	b = serviceview_cache_get(&c->bkc, 0);
	if (serviceview_drift(c->lb, c->cfg.provider_state, c->cluster_name, chk, n, b,
	    &c->term.stop, drifted, &e) < 0)
		log_warn("Cannot check the load balancers for drift; next period",
		    "err", e.msg, NULL);
	for (i = 0; i < n; i++) {
		if (!drifted[i])
			continue;
		ndrift++;
		metric_add(m_drifted, 1);
		log_info(0, "The load balancer drifted from what was ensured; ensuring it again",
		    "service", chk[i]->key, NULL);
		pthread_mutex_lock(&c->mu);
		struct svcstate *st = hmap_get(&c->states, chk[i]->key);
		if (st != NULL && c->running) {
			st->ensure = st->changed = st->drifted = 1;
			servicectl_queue(c, chk[i]->key);
		}
		pthread_mutex_unlock(&c->mu);
	}
	serviceview_cache_put(&c->bkc, b);
	if (wq_len(c->term.q) == 0)
		serviceview_cache_trim(&c->bkc);
	if (log_enabled(2)) {
		char nc[24], nd[24];
		snprintf(nc, sizeof(nc), "%zu", n);
		snprintf(nd, sizeof(nd), "%zu", ndrift);
		log_info(2, "Checked the load balancers for drift", "checked", nc, "drifted", nd,
		    "verify", c->lb->verify ? "true" : "false", NULL);
	}
out:
	free(drifted);
	free(chk);
	store_list_free(objs, nobjs);
}

/* servicectl_sweep queues, once the caches have synced, every Service
 * served or in need of cleanup (upstream's informer adds at start); the
 * drift checks follow every sync period. */
static void
servicectl_sweep(void *arg)
{
	struct servicectl *c = arg;
	const struct store_obj **objs = NULL;
	size_t n = 0;

	store_list(reflector_store(c->cfg.services), &objs, &n);
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < n && c->running; i++) {
		const struct kube_service *s = kube_service_of(objs[i]);
		/* a Service with a state was queued by a handler already */
		if (hmap_get(&c->states, objs[i]->key) == NULL &&
		    (serviceview_wants(&c->cls, s) || serviceview_needs_cleanup(&c->cls, s))) {
			servicectl_state(c, objs[i]->key)->ensure = 1;
			servicectl_queue(c, objs[i]->key);
		}
	}
	pthread_mutex_unlock(&c->mu);
	store_list_free(objs, n);
	log_info(2, "Service controller started", "provider", c->cfg.provider->name, NULL);
}

static void
servicectl_drift(void *arg)
{
	servicectl_drift_once(arg);
}

/* --- life cycle ----------------------------------------------------------- */

/* servicectl_classes_split splits buf (--load-balancer-class's values,
 * ","-joined) in place into names (SERVICECTL_CLASSES_MAX entries), checking
 * each. */
static int
servicectl_classes_split(char *buf, const char **names, size_t *ret_n, struct errbuf *e)
{
	char *p, *next;
	size_t n = 0;

	for (p = buf; p != NULL; p = next) {
		if ((next = strchr(p, ',')) != NULL)
			*next++ = '\0';
		if (*p == '\0')
			continue;
		if (!labelsel_key_ok(p))
			return errbuf_set(e, ERR_INVALID, "--load-balancer-class \"%.64s\": not a "
			    "qualified name (like example.com/lb)", p);
		if (n == SERVICECTL_CLASSES_MAX)
			return errbuf_set(e, ERR_INVALID, "--load-balancer-class: at most %d classes",
			    SERVICECTL_CLASSES_MAX);
		names[n++] = p;
	}
	*ret_n = n;
	return 0;
}

int
servicectl_classes_check(const char *list, int only, struct errbuf *e)
{
	const char *names[SERVICECTL_CLASSES_MAX];
	char *buf = xstrdup(list ? list : "");
	size_t n = 0;
	int r = servicectl_classes_split(buf, names, &n, e);

	free(buf);
	if (r == 0 && only && n == 0)
		r = errbuf_set(e, ERR_INVALID, "--load-balancer-class-only needs at least one "
		    "--load-balancer-class: it would serve no Service");
	return r;
}

int
servicectl_new(const struct servicectl_config *cfg, struct servicectl **ret,
    struct errbuf *e)
{
	const struct cloud_lb_ops *lb = cfg->provider ? cfg->provider->load_balancers : NULL;
	struct reflector_handlers hs = {
		.on_add = servicectl_on_svc_add, .on_update = servicectl_on_svc_update,
		.on_delete = servicectl_on_svc_delete,
	};
	struct reflector_handlers hn = {
		.on_add = servicectl_on_node_add, .on_update = servicectl_on_node_update,
		.on_delete = servicectl_on_node_add,
	};
	struct servicectl *c;
	int r;

	if (lb == NULL || lb->ensure == NULL || lb->ensure_deleted == NULL)
		return errbuf_set(e, ERR_NOT_IMPLEMENTED, "service: provider %s has no load "
		    "balancers", cfg->provider ? cfg->provider->name : "(none)");
	if (lb->verify == NULL && lb->get == NULL)
		return errbuf_set(e, ERR_NOT_IMPLEMENTED, "service: provider %s can neither get "
		    "nor verify load balancers", cfg->provider->name);
	if (cfg->kc == NULL || cfg->services == NULL || cfg->nodes == NULL || cfg->workers < 1 ||
	    cfg->sync_period_ns <= 0)
		return errbuf_set(e, ERR_INVALID, "service: incomplete configuration");
	c = xcalloc(1, sizeof(*c));
	c->cfg = *cfg;
	c->lb = lb;
	c->cluster_name = xstrdup(cfg->cluster_name && *cfg->cluster_name ?
	    cfg->cluster_name : "kubernetes");
	c->user_agent = xstrdup(cfg->user_agent ? cfg->user_agent : "bootccm");
	c->cfg.cluster_name = c->cluster_name;
	c->cfg.user_agent = c->user_agent;
	c->cfg.classes = NULL;
	pthread_mutex_init(&c->mu, NULL);
	serviceview_cache_init(&c->bkc, &c->mu, &c->nodes_gen, &c->pass_gen, cfg->nodes);
	hmap_init(&c->states, HMAP_COPY_KEYS);
	c->classes_buf = xstrdup(cfg->classes ? cfg->classes : "");
	c->cls.names = c->class_names;
	c->cls.only = cfg->class_only;
	if ((r = servicectl_classes_check(cfg->classes, cfg->class_only, e)) < 0 ||
	    (r = servicectl_classes_split(c->classes_buf, c->class_names, &c->cls.n, e)) < 0) {
		servicectl_free(c);
		return r;
	}
	hs.arg = hn.arg = c;
	if ((r = reflector_add_handlers(cfg->services, &hs, e)) < 0 ||
	    (r = reflector_add_handlers(cfg->nodes, &hn, e)) < 0) {
		servicectl_free(c);
		return r;
	}
	pthread_once(&servicectl_metrics_once, servicectl_metrics_init);
	*ret = c;
	return 0;
}

int
servicectl_start(struct servicectl *c, struct errbuf *e)
{
	struct servicectl_term *t = &c->term;
	struct ratelimiter *rl = NULL;
	int r;

	if (c->running)
		return 0;
	memset(t, 0, sizeof(*t));
	if ((r = ratelimiter_exponential_new(RATELIMITER_SERVICE_BASE_NS,
	    RATELIMITER_SERVICE_MAX_NS, &rl)) < 0 || (r = wq_new(SERVICECTL_QUEUE, rl, &t->q)) < 0)
		return errbuf_set(e, ERR_INTERNAL, "service: cannot create the work queue");
	stop_init(&t->stop);
	pthread_mutex_lock(&c->mu);
	c->running = 1;
	c->node_pass_queued = 0;  /* the last term's queue went with its key */
	pthread_mutex_unlock(&c->mu);
	struct runner_config rcfg = {
		.stop = &t->stop, .arg = c, .wait = servicectl_wait_synced, .q = t->q,
		.workers = c->cfg.workers, .kc = c->cfg.kc, .user_agent = c->user_agent,
		.gate = c->cfg.write_gate, .gate_arg = c->cfg.write_gate_arg,
		.sync = servicectl_work, .after = servicectl_after, .every_begin = servicectl_sweep,
		.every = servicectl_drift, .period_ns = c->cfg.sync_period_ns,
	};
	if (runner_start(&rcfg, &t->run) == 0)
		return 0;
	servicectl_stop(c);
	return errbuf_set(e, ERR_INTERNAL, "service: cannot start a thread");
}

void
servicectl_retry_now(struct servicectl *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	if (c->running && c->term.q != NULL)
		wq_retry_now(c->term.q);
	pthread_mutex_unlock(&c->mu);
}

void
servicectl_stop(struct servicectl *c)
{
	struct servicectl_term *t;

	if (c == NULL)
		return;
	t = &c->term;
	pthread_mutex_lock(&c->mu);
	if (!c->running) {
		pthread_mutex_unlock(&c->mu);
		return;
	}
	c->running = 0;         /* no handler queues anything from now on */
	pthread_mutex_unlock(&c->mu);
	runner_free(t->run);
	t->run = NULL;
	stop_request(&t->stop);   /* also when the runner did not start */
	wq_free(t->q);
	stop_destroy(&t->stop);
	pthread_mutex_lock(&c->mu);
	hmap_free(&c->states, servicectl_state_free);
	t->q = NULL;
	pthread_mutex_unlock(&c->mu);
	serviceview_cache_trim(&c->bkc);
	log_info(2, "Service controller stopped", NULL);
}

void
servicectl_free(struct servicectl *c)
{
	if (c == NULL)
		return;
	servicectl_stop(c);
	hmap_free(&c->states, servicectl_state_free);
	serviceview_cache_destroy(&c->bkc);
	pthread_mutex_destroy(&c->mu);
	free(c->classes_buf);
	free(c->cluster_name);
	free(c->user_agent);
	free(c);
}
