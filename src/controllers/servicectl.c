/* servicectl.c - the service (load balancer) controller (contract in
 * servicectl.h). */
#include "controllers/servicectl.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "controllers/nodeview.h"
#include "hmap.h"
#include "jsonx.h"
#include "kube/client.h"
#include "kube/ratelimiter.h"
#include "kube/store.h"
#include "kube/workqueue.h"
#include "log.h"
#include "metrics.h"
#include "netaddr.h"
#include "xalloc.h"

#define SERVICECTL_QUEUE "service"
#define SERVICECTL_RV_MAX 64
#define SERVICECTL_SYNC_POLL_NS (200 * NS_PER_MS) /* stop checks while the caches sync */
#define SERVICECTL_EVENT_NODES_MAX 20             /* node names an Event lists (upstream's) */
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
	char behind[SERVICECTL_RV_MAX]; /* the version our last write replaced: a
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

/* A snapshot of the Node cache for a sync: the included Nodes as the
 * provider sees them. Shared by the syncs of one cache generation. */
struct backends {
	unsigned refs;                  /* under c->mu */
	uint64_t gen;
	const struct store_obj **objs;  /* every Node (references) */
	size_t nobjs;
	const struct kube_node **incl;  /* the included ones */
	uint64_t digest;                /* the digest of all included ones */
	struct nodeview *views;
	struct cloud_node *nodes;
	size_t n;
};

/* One leadership term's threads and queue. */
struct servicectl_term {
	struct wq *q;
	struct stop stop;               /* the sleeps; the clients abandon retries */
	pthread_t *workers;
	int nworkers;
	pthread_t main;                 /* the start-up sweep, then drift checks */
	int main_started;
};

struct servicectl {
	struct servicectl_config cfg;   /* the strings below are the copies */
	char *cluster_name;
	char *user_agent;
	char *classes_buf;              /* cls.names point into it */
	const char *class_names[SERVICECTL_CLASSES_MAX];
	struct servicectl_classes cls;
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
	struct backends *bk;            /* (mu) the latest snapshot, or NULL */
	pthread_mutex_t bk_build;       /* one snapshot built at a time (before mu) */
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

/* --- the pure parts ------------------------------------------------------- */

static int
servicectl_streq(const char *a, const char *b)
{
	return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

/* servicectl_strs_equal compares two string lists in order. */
static int
servicectl_strs_equal(const char *const *a, size_t na, const char *const *b, size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++)
		if (!servicectl_streq(a[i], b[i]))
			return 0;
	return 1;
}

int
servicectl_wants(const struct servicectl_classes *cls, const struct kube_service *s)
{
	if (!servicectl_streq(s->type, "LoadBalancer"))
		return 0;
	if (s->load_balancer_class == NULL)
		return !cls->only;
	for (size_t i = 0; i < cls->n; i++)
		if (strcmp(cls->names[i], s->load_balancer_class) == 0)
			return 1;
	return 0;
}

int
servicectl_needs_cleanup(const struct servicectl_classes *cls, const struct kube_service *s)
{
	return kube_service_has_finalizer(s, SERVICECTL_FINALIZER) &&
	    (s->deletion_timestamp != 0 || !servicectl_wants(cls, s));
}

static int
servicectl_port_equal(const struct kube_service_port *x, const struct kube_service_port *y)
{
	return servicectl_streq(x->name, y->name) && servicectl_streq(x->protocol, y->protocol) &&
	    x->port == y->port && x->node_port == y->node_port &&
	    x->target_port == y->target_port &&
	    servicectl_streq(x->target_port_name, y->target_port_name) &&
	    servicectl_streq(x->app_protocol, y->app_protocol);
}

/* servicectl_own_key: one of the keys the provider writes itself. */
static int
servicectl_own_key(const char *key, const char *const *own, size_t n_own)
{
	for (size_t i = 0; i < n_own; i++)
		if (strcmp(own[i], key) == 0)
			return 1;
	return 0;
}

/* servicectl_annotations_equal compares the maps, order aside, leaving out
 * the keys in own. */
static int
servicectl_annotations_equal(const struct kube_service *a, const struct kube_service *b,
    const char *const *own, size_t n_own)
{
	size_t i, na = 0, nb = 0;

	for (i = 0; i < a->nannotations; i++) {
		const struct store_kv *kv = &a->annotations[i];
		if (servicectl_own_key(kv->key, own, n_own))
			continue;
		na++;
		if (!servicectl_streq(kube_service_annotation(b, kv->key), kv->value))
			return 0;
	}
	for (i = 0; i < b->nannotations; i++)
		nb += !servicectl_own_key(b->annotations[i].key, own, n_own);
	return na == nb;
}

/* servicectl_needs_update_except is needsUpdate with the annotations the
 * provider writes left out of the comparison (its output, not a change). */
static const char *
servicectl_needs_update_except(const struct servicectl_classes *cls,
    const struct kube_service *old, const struct kube_service *s,
    const char *const *own, size_t n_own)
{
	int wo = servicectl_wants(cls, old), wn = servicectl_wants(cls, s);
	size_t i;

	if (!wo && !wn)
		return NULL;
	if (wo != wn)
		return "type";
	if (!servicectl_strs_equal(old->load_balancer_source_ranges,
	    old->nload_balancer_source_ranges, s->load_balancer_source_ranges,
	    s->nload_balancer_source_ranges))
		return "loadBalancerSourceRanges";
	if (old->nports != s->nports)
		return "ports";
	for (i = 0; i < s->nports; i++)
		if (!servicectl_port_equal(&old->ports[i], &s->ports[i]))
			return "ports";
	if (!servicectl_streq(old->session_affinity, s->session_affinity))
		return "sessionAffinity";
	if (old->session_affinity_timeout != s->session_affinity_timeout)
		return "sessionAffinityConfig";
	if (!servicectl_streq(old->load_balancer_ip, s->load_balancer_ip))
		return "loadBalancerIP";
	if (!servicectl_strs_equal(old->external_ips, old->nexternal_ips, s->external_ips,
	    s->nexternal_ips))
		return "externalIPs";
	if (!servicectl_annotations_equal(old, s, own, n_own))
		return "annotations";
	if (!servicectl_streq(old->obj.uid, s->obj.uid))
		return "uid";
	if (!servicectl_streq(old->external_traffic_policy, s->external_traffic_policy))
		return "externalTrafficPolicy";
	if (old->health_check_node_port != s->health_check_node_port)
		return "healthCheckNodePort";
	if (old->nip_families != s->nip_families)
		return "ipFamilies";
	return NULL;
}

const char *
servicectl_needs_update(const struct servicectl_classes *cls,
    const struct kube_service *old, const struct kube_service *s)
{
	return servicectl_needs_update_except(cls, old, s, NULL, 0);
}

int
servicectl_node_label_excludes(const struct kube_node *n)
{
	/* upstream parses the value with strconv.ParseBool: false includes the
	 * Node, true or anything unparsable excludes it */
	static const char *const no[] = { "0", "f", "F", "FALSE", "false", "False" };
	const char *v = kube_node_label(n, SERVICECTL_LABEL_EXCLUDE);

	if (v == NULL)
		return 0;
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (strcmp(v, no[i]) == 0)
			return 0;
	return 1;
}

int
servicectl_node_included(const struct kube_node *n)
{
	return n->deletion_timestamp == 0 && !servicectl_node_label_excludes(n) &&
	    kube_node_taint(n, SERVICECTL_TAINT_TO_BE_DELETED, NULL) == NULL;
}

int
servicectl_node_update_matters(const struct kube_node *old, const struct kube_node *n)
{
	return servicectl_node_label_excludes(old) != servicectl_node_label_excludes(n) ||
	    !servicectl_streq(old->provider_id ? old->provider_id : "",
	    n->provider_id ? n->provider_id : "");
}

int
servicectl_node_labels_changed(const struct kube_node *old, const struct kube_node *n)
{
	if (old->nlabels != n->nlabels)
		return 1;
	for (size_t i = 0; i < n->nlabels; i++)
		if (!servicectl_streq(kube_node_label(old, n->labels[i].key), n->labels[i].value))
			return 1;
	return 0;
}

static const char *
servicectl_label_get(const void *labels, const char *key)
{
	return kube_node_label(labels, key);
}

int
servicectl_node_matches(const struct labelsel *sel, const struct kube_node *n)
{
	return labelsel_matches(sel, servicectl_label_get, n);
}

/* servicectl_mix is splitmix64's finalizer: spreads a hash over 64 bits. */
static uint64_t
servicectl_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t
servicectl_backends_digest(const struct kube_node *const *nodes, size_t n,
    const struct labelsel *sel)
{
	uint64_t sum = 0, count = 0;

	/* a sum of per-Node hashes: the same set in any order sums the same */
	for (size_t i = 0; i < n; i++) {
		const struct kube_node *k = nodes[i];
		if (!servicectl_node_included(k) || (sel && !servicectl_node_matches(sel, k)))
			continue;
		sum += servicectl_mix(hmap_hash(k->name) ^
		    servicectl_mix(hmap_hash(k->provider_id ? k->provider_id : "")));
		count++;
	}
	return servicectl_mix(sum ^ servicectl_mix(count));
}

/* servicectl_ip_mode is an ingress entry's ipMode as the API server keeps
 * it: VIP by default for an IP, none for a hostname. */
static const char *
servicectl_ip_mode(const char *ip, const char *mode)
{
	if (ip == NULL || *ip == '\0')
		return "";
	return mode == NULL || *mode == '\0' ? "VIP" : mode;
}

int
servicectl_status_equal(const struct kube_service *s, const struct cloud_lb_status *st)
{
	if (s->ningress != st->n_ingress)
		return 0;
	for (size_t i = 0; i < st->n_ingress; i++) {
		const struct kube_lb_ingress *a = &s->ingress[i];
		const struct cloud_lb_ingress *b = &st->ingress[i];
		if (strcmp(a->ip ? a->ip : "", b->ip) != 0 ||
		    strcmp(a->hostname ? a->hostname : "", b->hostname) != 0 ||
		    strcmp(servicectl_ip_mode(a->ip, a->ip_mode),
		    servicectl_ip_mode(b->ip, b->ip_mode)) != 0)
			return 0;
	}
	return 1;
}

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

json_object *
servicectl_status_patch(const struct cloud_lb_status *st)
{
	json_object *p = xcheck(json_object_new_object()), *status, *lb;
	json_object *ing = NULL;

	if (st->n_ingress > 0) {
		ing = xcheck(json_object_new_array());
		for (size_t i = 0; i < st->n_ingress; i++) {
			const struct cloud_lb_ingress *g = &st->ingress[i];
			json_object *o = xcheck(json_object_new_object());
			if (g->ip[0] != '\0') {
				json_object_object_add(o, "ip", xcheck(json_object_new_string(g->ip)));
				json_object_object_add(o, "ipMode", xcheck(json_object_new_string(
				    servicectl_ip_mode(g->ip, g->ip_mode))));
			} else {
				json_object_object_add(o, "hostname",
				    xcheck(json_object_new_string(g->hostname)));
			}
			json_object_array_add(ing, o);
		}
	}
	lb = xcheck(json_object_new_object());
	json_object_object_add(lb, "ingress", ing);
	status = xcheck(json_object_new_object());
	json_object_object_add(status, "loadBalancer", lb);
	json_object_object_add(p, "status", status);
	return p;
}

json_object *
servicectl_meta_patch(const struct kube_service *s, int finalizer,
    const struct cloud_lb_result *r)
{
	json_object *md = xcheck(json_object_new_object()), *p;
	int has = kube_service_has_finalizer(s, SERVICECTL_FINALIZER);
	size_t i;

	if ((finalizer > 0 && !has) || (finalizer < 0 && has)) {
		json_object *fs = xcheck(json_object_new_array());
		for (i = 0; i < s->nfinalizers; i++)
			if (strcmp(s->finalizers[i], SERVICECTL_FINALIZER) != 0)
				json_object_array_add(fs, xcheck(json_object_new_string(
				    s->finalizers[i])));
		if (finalizer > 0)
			json_object_array_add(fs, xcheck(json_object_new_string(
			    SERVICECTL_FINALIZER)));
		if (json_object_array_length(fs) == 0) {
			json_object_put(fs);
			fs = NULL;      /* merge patch null: drop the list */
		}
		json_object_object_add(md, "finalizers", fs);
	}
	if (r != NULL) {
		json_object *ann = xcheck(json_object_new_object());
		for (i = 0; i < r->n_annotations; i++) {
			const struct cloud_lb_annotation *a = &r->annotations[i];
			const char *cur = kube_service_annotation(s, a->key);
			if (a->remove && cur != NULL)
				json_object_object_add(ann, a->key, NULL);
			else if (!a->remove && !servicectl_streq(cur, a->value))
				json_object_object_add(ann, a->key,
				    xcheck(json_object_new_string(a->value)));
		}
		if (json_object_object_length(ann) > 0)
			json_object_object_add(md, "annotations", ann);
		else
			json_object_put(ann);
	}
	if (json_object_object_length(md) == 0) {
		json_object_put(md);
		return NULL;
	}
	p = xcheck(json_object_new_object());
	json_object_object_add(p, "metadata", md);
	return p;
}

/* --- a cached Service seen through the provider interface ----------------- */

struct svcview {
	struct cloud_service svc;
	struct cloud_kv *kv;            /* annotations, then the selector */
	struct cloud_lb_port *ports;
	struct cloud_lb_status status;
};

static void
svcview_init(struct svcview *v, const struct kube_service *s, int served)
{
	size_t i;

	memset(v, 0, sizeof(*v));
	v->kv = xcalloc(s->nannotations + s->nselector, sizeof(*v->kv));
	for (i = 0; i < s->nannotations; i++) {
		v->kv[i].key = s->annotations[i].key;
		v->kv[i].value = s->annotations[i].value;
	}
	for (i = 0; i < s->nselector; i++) {
		v->kv[s->nannotations + i].key = s->selector[i].key;
		v->kv[s->nannotations + i].value = s->selector[i].value;
	}
	v->ports = xcalloc(s->nports, sizeof(*v->ports));
	for (i = 0; i < s->nports; i++) {
		v->ports[i].name = s->ports[i].name;
		v->ports[i].protocol = s->ports[i].protocol;
		v->ports[i].port = s->ports[i].port;
		v->ports[i].node_port = s->ports[i].node_port;
		v->ports[i].app_protocol = s->ports[i].app_protocol;
	}
	for (i = 0; i < s->ningress && i < CLOUD_LB_INGRESS_MAX; i++) {
		struct cloud_lb_ingress *g = &v->status.ingress[i];
		snprintf(g->ip, sizeof(g->ip), "%s", s->ingress[i].ip ? s->ingress[i].ip : "");
		snprintf(g->hostname, sizeof(g->hostname), "%s",
		    s->ingress[i].hostname ? s->ingress[i].hostname : "");
		snprintf(g->ip_mode, sizeof(g->ip_mode), "%s",
		    s->ingress[i].ip_mode ? s->ingress[i].ip_mode : "");
		v->status.n_ingress++;
	}
	v->svc.namespace_ = s->namespace;
	v->svc.name = s->name;
	v->svc.uid = s->obj.uid;
	v->svc.creation_timestamp = s->creation_timestamp;
	v->svc.annotations = v->kv;
	v->svc.n_annotations = s->nannotations;
	v->svc.nul_annotations = s->nul_annotations;
	v->svc.n_nul_annotations = s->nnul_annotations;
	v->svc.selector = v->kv + s->nannotations;
	v->svc.n_selector = s->nselector;
	v->svc.type = s->type;
	v->svc.load_balancer_class = s->load_balancer_class;
	v->svc.load_balancer_ip = s->load_balancer_ip;
	v->svc.external_traffic_policy = s->external_traffic_policy;
	v->svc.health_check_node_port = s->health_check_node_port;
	v->svc.ip_families = s->ip_families;
	v->svc.n_ip_families = s->nip_families;
	v->svc.ip_family_policy = s->ip_family_policy;
	v->svc.source_ranges = s->load_balancer_source_ranges;
	v->svc.n_source_ranges = s->nload_balancer_source_ranges;
	v->svc.session_affinity = s->session_affinity;
	v->svc.ports = v->ports;
	v->svc.n_ports = s->nports;
	v->svc.status = &v->status;
	v->svc.served = served;
}

static void
svcview_free(struct svcview *v)
{
	free(v->kv);
	free(v->ports);
	v->kv = NULL;
	v->ports = NULL;
}

/* --- backend snapshots ---------------------------------------------------- */

static void
backends_free(struct backends *b)
{
	if (b == NULL)
		return;
	for (size_t i = 0; i < b->n; i++)
		nodeview_free(&b->views[i]);
	free(b->views);
	free(b->nodes);
	free(b->incl);
	store_list_free(b->objs, b->nobjs);
	free(b);
}

static struct backends *
backends_build(struct servicectl *c, uint64_t gen)
{
	struct backends *b = xcalloc(1, sizeof(*b));

	b->refs = 1;
	b->gen = gen;
	store_list(reflector_store(c->cfg.nodes), &b->objs, &b->nobjs);
	b->incl = xcalloc(b->nobjs, sizeof(*b->incl));
	b->views = xcalloc(b->nobjs, sizeof(*b->views));
	b->nodes = xcalloc(b->nobjs, sizeof(*b->nodes));
	for (size_t i = 0; i < b->nobjs; i++) {
		const struct kube_node *n = kube_node_of(b->objs[i]);
		if (!servicectl_node_included(n))
			continue;
		b->incl[b->n] = n;
		nodeview_init(&b->views[b->n], n);
		b->nodes[b->n] = b->views[b->n].node;
		b->n++;
	}
	/* what every Service without a node selector compares: once per
	 * snapshot, not once per Service (2,000 Services x 5,000 Nodes) */
	b->digest = servicectl_backends_digest(b->incl, b->n, NULL);
	return b;
}

/* servicectl_backends_ref returns a reference to the latest snapshot if it
 * is of the current Node generation (*ret_gen), or (fresh 0) no older than
 * the last node pass, else NULL. */
static struct backends *
servicectl_backends_ref(struct servicectl *c, int fresh, uint64_t *ret_gen)
{
	struct backends *b;

	pthread_mutex_lock(&c->mu);
	*ret_gen = c->nodes_gen;
	if ((b = c->bk) != NULL && b->gen >= (fresh ? *ret_gen : c->pass_gen))
		b->refs++;
	else
		b = NULL;
	pthread_mutex_unlock(&c->mu);
	return b;
}

/* servicectl_backends returns a snapshot of the Node cache (a reference:
 * servicectl_backends_put) no older than the last Node change seen, or,
 * with fresh 0, than the last node pass: the syncs of one pass share one
 * snapshot while Nodes go on changing (the changes since make the next
 * pass), instead of each building its own (some 5 MiB each at 5,000 Nodes,
 * several at once with several workers). */
static struct backends *
servicectl_backends(struct servicectl *c, int fresh)
{
	struct backends *b, *old = NULL;
	uint64_t gen;

	if ((b = servicectl_backends_ref(c, fresh, &gen)) != NULL)
		return b;
	/* one build at a time: syncs that start together wait for it and share
	 * it instead of building a copy each (some 5 MiB at 5,000 Nodes) */
	pthread_mutex_lock(&c->bk_build);
	if ((b = servicectl_backends_ref(c, fresh, &gen)) != NULL) {
		pthread_mutex_unlock(&c->bk_build);
		return b;
	}
	/* listed after gen was read: the snapshot is at least that recent */
	b = backends_build(c, gen);
	pthread_mutex_lock(&c->mu);
	if (c->bk == NULL || c->bk->gen < gen) {
		old = c->bk;
		c->bk = b;
		b->refs++;
		if (old != NULL && --old->refs > 0)
			old = NULL;
	}
	pthread_mutex_unlock(&c->mu);
	pthread_mutex_unlock(&c->bk_build);
	backends_free(old);
	return b;
}

static void
servicectl_backends_put(struct servicectl *c, struct backends *b)
{
	int last;

	pthread_mutex_lock(&c->mu);
	last = --b->refs == 0;
	pthread_mutex_unlock(&c->mu);
	if (last)
		backends_free(b);
}

/* servicectl_backends_trim lets the latest snapshot go once no sync needs
 * it: its Node views take about a KiB per Node, for nothing while idle. */
static void
servicectl_backends_trim(struct servicectl *c)
{
	struct backends *b;

	pthread_mutex_lock(&c->mu);
	if ((b = c->bk) != NULL && --b->refs > 0)
		b = NULL;
	c->bk = NULL;
	pthread_mutex_unlock(&c->mu);
	backends_free(b);
}

/* servicectl_digest: b's backend set as st's balancer selects it. */
static uint64_t
servicectl_digest(const struct backends *b, const struct svcstate *st)
{
	return st->has_sel ? servicectl_backends_digest(b->incl, b->n, &st->sel) : b->digest;
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
	struct svcview v;
	int r;

	if (c->lb->observe == NULL)
		return 0;
	if (s == NULL)
		return c->lb->observe(c->cfg.provider_state, key, NULL) > 0;
	svcview_init(&v, s, servicectl_wants(&c->cls, s));
	r = c->lb->observe(c->cfg.provider_state, key, &v.svc);
	svcview_free(&v);
	return r > 0;
}

static void
servicectl_on_svc_add(const struct store_obj *o, void *arg)
{
	struct servicectl *c = arg;
	const struct kube_service *s = kube_service_of(o);
	int freed = servicectl_observe(c, o->key, s);

	pthread_mutex_lock(&c->mu);
	if (c->running && (servicectl_wants(&c->cls, s) || servicectl_needs_cleanup(&c->cls, s))) {
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
		why = servicectl_needs_update_except(&c->cls, old, s, own, n_own);
		if (why != NULL) {
			st = servicectl_state(c, o->key);
			st->ensure = st->changed = 1;
			servicectl_queue(c, o->key);
		} else if (servicectl_needs_cleanup(&c->cls, s)) {
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
	if (c->running && servicectl_node_update_matters(old, n)) {
		servicectl_node_pass(c);
	} else if (c->running && servicectl_node_labels_changed(old, n)) {
		/* only the Services whose node selector it starts or stops matching */
		hmap_iter_init(&it, &c->states);
		while (hmap_iter_next(&it, &key, &v)) {
			struct svcstate *st = v;
			if (st->ensured && st->has_sel && servicectl_node_matches(&st->sel, old) !=
			    servicectl_node_matches(&st->sel, n)) {
				servicectl_queue(c, key);
				c->pass_gen = c->nodes_gen;  /* their syncs must see it */
			}
		}
	}
	pthread_mutex_unlock(&c->mu);
}

/* --- writes --------------------------------------------------------------- */

static void
servicectl_event(struct servicectl *c, const struct kube_service *s, const char *type,
    const char *reason, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void
servicectl_event(struct servicectl *c, const struct kube_service *s, const char *type,
    const char *reason, const char *fmt, ...)
{
	struct events_ref ref = {
		.kind = "Service", .namespace = s->namespace, .name = s->name,
		.uid = s->obj.uid, .api_version = "v1",
	};
	char msg[EVENTS_MESSAGE_MAX + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	events_record(c->cfg.events, &ref, type, reason, msg);
}

/* servicectl_patch sends patch (consumed) to s's main resource (status 0)
 * or its status, behind the resourceVersion in rv, which then holds the
 * answer's. A Service gone meanwhile is ERR_NOT_FOUND. */
static int
servicectl_patch(struct kube_client *kc, const struct kube_service *s, int status,
    json_object *patch, char rv[SERVICECTL_RV_MAX], struct errbuf *e)
{
	json_object *ret = NULL, *md = NULL;
	const char *nrv = NULL;
	char *path = NULL;
	int r;

	/* a sync that outlives the leadership writes nothing more */
	if (stop_requested(kc->stop)) {
		json_object_put(patch);
		return errbuf_set(e, ERR_CANCELED, "service %s/%s: stopped", s->namespace,
		    s->name);
	}
	if ((r = kube_path(&path, "/api/v1", s->namespace, "services", s->name,
	    status ? "status" : NULL, NULL)) < 0) {
		json_object_put(patch);
		return errbuf_set(e, r, "service %s/%s: cannot build its path", s->namespace,
		    s->name);
	}
	r = kube_patch_merge(kc, path, patch, rv, &ret, NULL, e);
	if (r == 0 && (jsonx_object(ret, "", "metadata", JSONX_REQUIRED, &md, NULL) < 0 ||
	    jsonx_str(md, "metadata", "resourceVersion", JSONX_REQUIRED, &nrv, NULL, NULL) < 0 ||
	    strlen(nrv) >= SERVICECTL_RV_MAX))
		r = errbuf_set(e, ERR_INVALID, "service %s/%s: the answer to a write has no "
		    "usable metadata.resourceVersion", s->namespace, s->name);
	if (r == 0)
		memcpy(rv, nrv, strlen(nrv) + 1);
	json_object_put(ret);
	json_object_put(patch);
	free(path);
	return r;
}

/* --- syncs ---------------------------------------------------------------- */

/* What a sync of the ensure kind is for. */
enum servicectl_mode {
	SERVICECTL_ENSURE,   /* the Service's own sync: Ensuring/Ensured */
	SERVICECTL_HOSTS,    /* the backends changed, no update_hosts: Updated */
};

static void
servicectl_node_names(const struct backends *b, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < b->n && i < SERVICECTL_EVENT_NODES_MAX && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? " " : "", b->incl[i]->name);
}

/* servicectl_hosts_failed records UpdateLoadBalancerFailed, upstream's words. */
static void
servicectl_hosts_failed(struct servicectl *c, const struct kube_service *s,
    const struct backends *b, const char *err)
{
	char names[512];

	servicectl_node_names(b, names, sizeof(names));
	servicectl_event(c, s, EVENTS_WARNING, "UpdateLoadBalancerFailed",
	    "Error updating load balancer with new hosts [%s] [node names limited, total "
	    "number of nodes: %zu], error: %s", names, b->n, err);
}

static void
servicectl_hosts_updated(struct servicectl *c, const struct kube_service *s, size_t n)
{
	if (n == 0)
		servicectl_event(c, s, EVENTS_WARNING, "UnAvailableLoadBalancer",
		    "There are no available nodes for LoadBalancer");
	else
		servicectl_event(c, s, EVENTS_NORMAL, "UpdatedLoadBalancer",
		    "Updated load balancer with new hosts");
}

/* servicectl_ensured records what a successful ensure leaves in st: the
 * backends it used, the provider's node selector, the Service (c->mu is
 * taken here), and queues the Service again when the Nodes changed since
 * those backends were taken. */
static void
servicectl_ensured(struct servicectl *c, const struct store_obj *o, struct svcstate *st,
    const struct backends *b, const struct svcview *v)
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
    char rv[SERVICECTL_RV_MAX], const char **ret_result, struct errbuf *e)
{
	const struct kube_service *s = kube_service_of(o);
	int has_fin = kube_service_has_finalizer(s, SERVICECTL_FINALIZER);
	int quiet = mode == SERVICECTL_HOSTS || (!changed && has_fin && s->ningress > 0);
	struct cloud_lb_result *res = xcalloc(1, sizeof(*res));
	struct backends *b = servicectl_backends(c, mode != SERVICECTL_HOSTS);
	const char *step = "ensure load balancer";
	json_object *patch;
	struct svcview v;
	int r, wrote = 0;

	svcview_init(&v, s, 1);
	if (!quiet) {
		servicectl_event(c, s, EVENTS_NORMAL, "EnsuringLoadBalancer", "%s", drifted ?
		    "Ensuring load balancer: the provider reports it missing or changed" :
		    "Ensuring load balancer");
		if (b->n == 0)
			servicectl_event(c, s, EVENTS_WARNING, "UnAvailableLoadBalancer",
			    "There are no available nodes for LoadBalancer");
	}
	/* the finalizer before anything exists that would need cleaning up */
	if ((patch = servicectl_meta_patch(s, 1, NULL)) != NULL) {
		step = "add load balancer cleanup finalizer";
		if ((r = servicectl_patch(kc, s, 0, patch, rv, e)) < 0)
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
	if ((patch = servicectl_meta_patch(s, 0, res)) != NULL) {
		step = "write the load balancer's annotations";
		if ((r = servicectl_patch(kc, s, 0, patch, rv, e)) < 0)
			goto fail;
		wrote = 1;
	}
	if (!servicectl_status_equal(s, &res->status)) {
		step = "update load balancer status";
		r = servicectl_patch(kc, s, 1, servicectl_status_patch(&res->status), rv, e);
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
			servicectl_event(c, s, EVENTS_NORMAL, "EnsuringLoadBalancer",
			    "Ensuring load balancer");
			if (b->n == 0)
				servicectl_event(c, s, EVENTS_WARNING, "UnAvailableLoadBalancer",
				    "There are no available nodes for LoadBalancer");
		}
		servicectl_event(c, s, EVENTS_NORMAL, "EnsuredLoadBalancer", "Ensured load balancer");
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
			servicectl_event(c, s, EVENTS_WARNING, "SyncLoadBalancerFailed",
			    "Error syncing load balancer: failed to %s: %s", step, e->msg);
	}
	errbuf_prefix(e, r, "failed to %s", step);
	pthread_mutex_lock(&c->mu);
	st->waiting = r == ERR_UNAVAILABLE;
	if (mode == SERVICECTL_HOSTS)
		st->ensure = 1;  /* the retry ensures the whole balancer */
	pthread_mutex_unlock(&c->mu);
out:
	svcview_free(&v);
	servicectl_backends_put(c, b);
	free(res);
	return r;
}

/* servicectl_hosts brings the Service's backends up to date when the set
 * it selects changed since its last ensure or update. */
static int
servicectl_hosts(struct servicectl *c, struct kube_client *kc, const struct store_obj *o,
    struct svcstate *st, char rv[SERVICECTL_RV_MAX], const char **ret_result,
    struct errbuf *e)
{
	const struct kube_service *s = kube_service_of(o);
	struct backends *b = servicectl_backends(c, 0);
	uint64_t d = servicectl_digest(b, st);
	struct svcview v;
	int64_t t0;
	int r;

	*ret_result = NULL;
	if (d == st->digest) {
		servicectl_backends_put(c, b);
		return 0;
	}
	if (c->lb->update_hosts == NULL) {
		servicectl_backends_put(c, b);
		return servicectl_ensure(c, kc, o, st, SERVICECTL_HOSTS, 0, 0, rv, ret_result,
		    e);
	}
	log_info(2, "Updating the load balancer's backends", "service", o->key, NULL);
	svcview_init(&v, s, 1);
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
	svcview_free(&v);
	servicectl_backends_put(c, b);
	return r;
}

/* servicectl_delete_lb asks the provider to delete s's balancer, with
 * upstream's Events; res gets the annotations to remove. */
static int
servicectl_delete_lb(struct servicectl *c, const struct kube_service *s,
    struct cloud_lb_result *res, struct errbuf *e)
{
	struct svcview v;
	int r;

	servicectl_event(c, s, EVENTS_NORMAL, "DeletingLoadBalancer", "Deleting load balancer");
	svcview_init(&v, s, 0);
	r = c->lb->ensure_deleted(c->cfg.provider_state, c->cluster_name, &v.svc, res, e);
	svcview_free(&v);
	if (r == ERR_IMPLEMENTED_ELSEWHERE) {
		memset(res, 0, sizeof(*res));
		r = 0;
	}
	if (r == 0) {
		res->status.n_ingress = 0;
		r = servicectl_check_result(s, res, e);
	}
	if (r < 0) {
		servicectl_event(c, s, EVENTS_WARNING, "DeleteLoadBalancerFailed",
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
    char rv[SERVICECTL_RV_MAX], const char **ret_result, struct errbuf *e)
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
		r = servicectl_patch(kc, s, 1, servicectl_status_patch(&none), rv, e);
		if (r == ERR_NOT_FOUND)
			goto done;
		if (r < 0) {
			step = "update load balancer status";
			goto write_failed;
		}
	}
	if ((patch = servicectl_meta_patch(s, -1, res)) != NULL) {
		r = servicectl_patch(kc, s, 0, patch, rv, e);
		if (r < 0 && r != ERR_NOT_FOUND) {
			step = "remove load balancer cleanup finalizer";
			goto write_failed;
		}
	}
done:
	servicectl_event(c, s, EVENTS_NORMAL, "DeletedLoadBalancer", "Deleted load balancer");
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
		servicectl_event(c, s, EVENTS_WARNING, "SyncLoadBalancerFailed",
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
	servicectl_event(c, kube_service_of(last), EVENTS_NORMAL, "DeletedLoadBalancer",
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
	char used_rv[SERVICECTL_RV_MAX] = "", rv[SERVICECTL_RV_MAX];

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
	if (!servicectl_wants(&c->cls, s) || servicectl_needs_cleanup(&c->cls, s) ||
	    s->deletion_timestamp != 0) {
		if (kube_service_has_finalizer(s, SERVICECTL_FINALIZER))
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
servicectl_wait_synced(struct servicectl *c)
{
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

/* servicectl_worker is the queue's loop: upstream's processNextServiceItem,
 * every failure retried on the key's backoff. */
static void *
servicectl_worker(void *arg)
{
	struct servicectl *c = arg;
	struct wq *q = c->term.q;
	struct kube_client kc;
	const char *key;

	if (!servicectl_wait_synced(c))
		return NULL;
	kube_client_init(&kc, c->cfg.kc, c->user_agent);
	kube_client_set_stop(&kc, &c->term.stop);
	kube_client_set_write_gate(&kc, c->cfg.write_gate, c->cfg.write_gate_arg);
	while (wq_get(q, &key) > 0) {
		struct errbuf e = { "" };
		const char *result = NULL;
		int r;

		if (strcmp(key, SERVICECTL_NODE_PASS_KEY) == 0) {
			pthread_mutex_lock(&c->mu);
			servicectl_node_pass_run(c);
			pthread_mutex_unlock(&c->mu);
			wq_done(q, key);
			continue;
		}
		r = servicectl_sync(c, &kc, key, &result, &e);

		if (result != NULL)
			metric_add(m_syncs, 1, result);
		if (r < 0) {
			if (r == ERR_CONFLICT)
				log_info(2, "The Service changed during its sync; syncing it again",
				    "service", key, "err", e.msg, NULL);
			else if (!stop_requested(&c->term.stop))
				log_warn("Error processing service (will retry)", "service", key,
				    "err", e.msg, NULL);
			wq_add_rate_limited(q, key);
		} else {
			wq_forget(q, key);
		}
		wq_done(q, key);
		if (wq_len(q) == 0)
			servicectl_backends_trim(c);
	}
	kube_client_cleanup(&kc);
	return NULL;
}

/* --- the start-up sweep and the drift checks ------------------------------ */

/* A served Service of a drift check. */
struct servicectl_checked {
	const struct store_obj *o;
	int drifted;
};

/* The Services of a drift check as the provider sees them: one view at a
 * time, built when asked for (2,000 views at once would be some 9 MiB). */
struct servicectl_checking {
	const struct servicectl_checked *chk;
	struct svcview v;
	size_t cur;
	int have;
};

static const struct cloud_service *
servicectl_checking_at(void *arg, size_t i)
{
	struct servicectl_checking *k = arg;

	if (k->have && k->cur == i)
		return &k->v.svc;
	if (k->have)
		svcview_free(&k->v);
	svcview_init(&k->v, kube_service_of(k->chk[i].o), 1);
	k->cur = i;
	k->have = 1;
	return &k->v.svc;
}

/* servicectl_drift_once asks the provider whether the balancers of the
 * served, ensured Services still are what ensure made of them, and queues
 * a full ensure of those that drifted. */
static void
servicectl_drift_once(struct servicectl *c)
{
	const struct store_obj **objs = NULL;
	struct servicectl_checked *chk;
	struct servicectl_checking k = { 0 };
	struct cloud_services svcs;
	struct backends *b;
	size_t nobjs = 0, n = 0, i, ndrift = 0;
	struct errbuf e = { "" };

	store_list(reflector_store(c->cfg.services), &objs, &nobjs);
	chk = xcalloc(nobjs, sizeof(*chk));
	pthread_mutex_lock(&c->mu);
	for (i = 0; i < nobjs; i++) {
		const struct kube_service *s = kube_service_of(objs[i]);
		struct svcstate *st = hmap_get(&c->states, objs[i]->key);
		if (st != NULL && st->ensured && !st->ensure && !st->elsewhere &&
		    st->last != NULL && strcmp(st->last->uid, objs[i]->uid) == 0 &&
		    s->deletion_timestamp == 0 && servicectl_wants(&c->cls, s))
			chk[n++].o = objs[i];
	}
	pthread_mutex_unlock(&c->mu);
	if (n == 0)
		goto out;
	b = servicectl_backends(c, 0);
	k.chk = chk;
	svcs.n = n;
	svcs.at = servicectl_checking_at;
	svcs.arg = &k;
	if (c->lb->verify != NULL) {
		unsigned char *drifted = xcalloc(n, 1);
		if (c->lb->verify(c->cfg.provider_state, c->cluster_name, &svcs, b->nodes, b->n,
		    drifted, &e) < 0)
			log_warn("Cannot check the load balancers for drift; next period",
			    "err", e.msg, NULL);
		else
			for (i = 0; i < n; i++)
				chk[i].drifted = drifted[i] != 0;
		free(drifted);
	} else {
		for (i = 0; i < n && !stop_requested(&c->term.stop); i++) {
			struct cloud_lb_status *st = xcalloc(1, sizeof(*st));
			int exists = 0;
			if (c->lb->get(c->cfg.provider_state, c->cluster_name,
			    servicectl_checking_at(&k, i), st, &exists, &e) < 0)
				log_info(2, "Cannot check the load balancer for drift", "service",
				    chk[i].o->key, "err", e.msg, NULL);
			else
				chk[i].drifted = !exists ||
				    !servicectl_status_equal(kube_service_of(chk[i].o), st);
			free(st);
		}
	}
	if (k.have)
		svcview_free(&k.v);
	for (i = 0; i < n; i++) {
		if (!chk[i].drifted)
			continue;
		ndrift++;
		metric_add(m_drifted, 1);
		log_info(0, "The load balancer drifted from what was ensured; ensuring it again",
		    "service", chk[i].o->key, NULL);
		pthread_mutex_lock(&c->mu);
		struct svcstate *st = hmap_get(&c->states, chk[i].o->key);
		if (st != NULL && c->running) {
			st->ensure = st->changed = st->drifted = 1;
			servicectl_queue(c, chk[i].o->key);
		}
		pthread_mutex_unlock(&c->mu);
	}
	servicectl_backends_put(c, b);
	if (wq_len(c->term.q) == 0)
		servicectl_backends_trim(c);
	if (log_enabled(2)) {
		char nc[24], nd[24];
		snprintf(nc, sizeof(nc), "%zu", n);
		snprintf(nd, sizeof(nd), "%zu", ndrift);
		log_info(2, "Checked the load balancers for drift", "checked", nc, "drifted", nd,
		    "verify", c->lb->verify ? "true" : "false", NULL);
	}
out:
	free(chk);
	store_list_free(objs, nobjs);
}

/* servicectl_main waits for the caches, queues every Service served or in
 * need of cleanup (upstream's informer adds at start), then checks for
 * drift every sync period. */
static void *
servicectl_main(void *arg)
{
	struct servicectl *c = arg;
	const struct store_obj **objs = NULL;
	size_t n = 0;

	if (!servicectl_wait_synced(c))
		return NULL;
	store_list(reflector_store(c->cfg.services), &objs, &n);
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < n && c->running; i++) {
		const struct kube_service *s = kube_service_of(objs[i]);
		/* a Service with a state was queued by a handler already */
		if (hmap_get(&c->states, objs[i]->key) == NULL &&
		    (servicectl_wants(&c->cls, s) || servicectl_needs_cleanup(&c->cls, s))) {
			servicectl_state(c, objs[i]->key)->ensure = 1;
			servicectl_queue(c, objs[i]->key);
		}
	}
	pthread_mutex_unlock(&c->mu);
	store_list_free(objs, n);
	log_info(2, "Service controller started", "provider", c->cfg.provider->name, NULL);
	while (!stop_sleep(&c->term.stop, c->cfg.sync_period_ns))
		servicectl_drift_once(c);
	return NULL;
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
	pthread_mutex_init(&c->bk_build, NULL);
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
	t->workers = xcalloc((size_t)c->cfg.workers, sizeof(*t->workers));
	for (; t->nworkers < c->cfg.workers; t->nworkers++)
		if (pthread_create(&t->workers[t->nworkers], NULL, servicectl_worker, c) != 0)
			goto fail;
	if (pthread_create(&t->main, NULL, servicectl_main, c) != 0)
		goto fail;
	t->main_started = 1;
	return 0;
fail:
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
	struct backends *b;

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
	stop_request(&t->stop);
	wq_shutdown(t->q);
	for (int i = 0; i < t->nworkers; i++)
		pthread_join(t->workers[i], NULL);
	if (t->main_started)
		pthread_join(t->main, NULL);
	wq_free(t->q);
	free(t->workers);
	stop_destroy(&t->stop);
	pthread_mutex_lock(&c->mu);
	hmap_free(&c->states, servicectl_state_free);
	b = c->bk;
	c->bk = NULL;
	t->q = NULL;
	pthread_mutex_unlock(&c->mu);
	backends_free(b);
	log_info(2, "Service controller stopped", NULL);
}

void
servicectl_free(struct servicectl *c)
{
	if (c == NULL)
		return;
	servicectl_stop(c);
	hmap_free(&c->states, servicectl_state_free);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->bk_build);
	free(c->classes_buf);
	free(c->cluster_name);
	free(c->user_agent);
	free(c);
}
