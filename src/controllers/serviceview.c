/* serviceview.c - a cached Service and the Nodes seen through the provider
 * interface (contract in serviceview.h). */
#include "controllers/serviceview.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"
#include "base/jsonx.h"
#include "kube/client.h"
#include "kube/store.h"
#include "base/log.h"
#include "base/xalloc.h"

/* --- comparisons ----------------------------------------------------------- */

int
serviceview_streq(const char *a, const char *b)
{
	return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

/* serviceview_strs_equal compares two string lists in order. */
static int
serviceview_strs_equal(const char *const *a, size_t na, const char *const *b, size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++)
		if (!serviceview_streq(a[i], b[i]))
			return 0;
	return 1;
}

int
serviceview_wants(const struct serviceview_classes *cls, const struct kube_service *s)
{
	if (!serviceview_streq(s->type, "LoadBalancer"))
		return 0;
	if (s->load_balancer_class == NULL)
		return !cls->only;
	for (size_t i = 0; i < cls->n; i++)
		if (strcmp(cls->names[i], s->load_balancer_class) == 0)
			return 1;
	return 0;
}

int
serviceview_needs_cleanup(const struct serviceview_classes *cls, const struct kube_service *s)
{
	return kube_service_has_finalizer(s, SERVICEVIEW_FINALIZER) &&
	    (s->deletion_timestamp != 0 || !serviceview_wants(cls, s));
}

static int
serviceview_port_equal(const struct kube_service_port *x, const struct kube_service_port *y)
{
	return serviceview_streq(x->name, y->name) && serviceview_streq(x->protocol, y->protocol) &&
	    x->port == y->port && x->node_port == y->node_port &&
	    x->target_port == y->target_port &&
	    serviceview_streq(x->target_port_name, y->target_port_name) &&
	    serviceview_streq(x->app_protocol, y->app_protocol);
}

/* serviceview_own_key: one of the keys the provider writes itself. */
static int
serviceview_own_key(const char *key, const char *const *own, size_t n_own)
{
	for (size_t i = 0; i < n_own; i++)
		if (strcmp(own[i], key) == 0)
			return 1;
	return 0;
}

/* serviceview_annotations_equal compares the maps, order aside, leaving out
 * the keys in own. */
static int
serviceview_annotations_equal(const struct kube_service *a, const struct kube_service *b,
    const char *const *own, size_t n_own)
{
	size_t i, na = 0, nb = 0;

	for (i = 0; i < a->nannotations; i++) {
		const struct store_kv *kv = &a->annotations[i];
		if (serviceview_own_key(kv->key, own, n_own))
			continue;
		na++;
		if (!serviceview_streq(kube_service_annotation(b, kv->key), kv->value))
			return 0;
	}
	for (i = 0; i < b->nannotations; i++)
		nb += !serviceview_own_key(b->annotations[i].key, own, n_own);
	return na == nb;
}

/* serviceview_needs_update_except is needsUpdate with the annotations the
 * provider writes left out of the comparison (its output, not a change). */
const char *
serviceview_needs_update_except(const struct serviceview_classes *cls,
    const struct kube_service *old, const struct kube_service *s,
    const char *const *own, size_t n_own)
{
	int wo = serviceview_wants(cls, old), wn = serviceview_wants(cls, s);
	size_t i;

	if (!wo && !wn)
		return NULL;
	if (wo != wn)
		return "type";
	if (!serviceview_strs_equal(old->load_balancer_source_ranges,
	    old->nload_balancer_source_ranges, s->load_balancer_source_ranges,
	    s->nload_balancer_source_ranges))
		return "loadBalancerSourceRanges";
	if (old->nports != s->nports)
		return "ports";
	for (i = 0; i < s->nports; i++)
		if (!serviceview_port_equal(&old->ports[i], &s->ports[i]))
			return "ports";
	if (!serviceview_streq(old->session_affinity, s->session_affinity))
		return "sessionAffinity";
	if (old->session_affinity_timeout != s->session_affinity_timeout)
		return "sessionAffinityConfig";
	if (!serviceview_streq(old->load_balancer_ip, s->load_balancer_ip))
		return "loadBalancerIP";
	if (!serviceview_strs_equal(old->external_ips, old->nexternal_ips, s->external_ips,
	    s->nexternal_ips))
		return "externalIPs";
	if (!serviceview_annotations_equal(old, s, own, n_own))
		return "annotations";
	if (!serviceview_streq(old->obj.uid, s->obj.uid))
		return "uid";
	if (!serviceview_streq(old->external_traffic_policy, s->external_traffic_policy))
		return "externalTrafficPolicy";
	if (old->health_check_node_port != s->health_check_node_port)
		return "healthCheckNodePort";
	if (old->nip_families != s->nip_families)
		return "ipFamilies";
	return NULL;
}

const char *
serviceview_needs_update(const struct serviceview_classes *cls,
    const struct kube_service *old, const struct kube_service *s)
{
	return serviceview_needs_update_except(cls, old, s, NULL, 0);
}

int
serviceview_node_label_excludes(const struct kube_node *n)
{
	/* upstream parses the value with strconv.ParseBool: false includes the
	 * Node, true or anything unparsable excludes it */
	static const char *const no[] = { "0", "f", "F", "FALSE", "false", "False" };
	const char *v = kube_node_label(n, SERVICEVIEW_LABEL_EXCLUDE);

	if (v == NULL)
		return 0;
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (strcmp(v, no[i]) == 0)
			return 0;
	return 1;
}

int
serviceview_node_included(const struct kube_node *n)
{
	return n->deletion_timestamp == 0 && !serviceview_node_label_excludes(n) &&
	    kube_node_taint(n, SERVICEVIEW_TAINT_TO_BE_DELETED, NULL) == NULL;
}

int
serviceview_node_update_matters(const struct kube_node *old, const struct kube_node *n)
{
	return serviceview_node_label_excludes(old) != serviceview_node_label_excludes(n) ||
	    !serviceview_streq(old->provider_id ? old->provider_id : "",
	    n->provider_id ? n->provider_id : "");
}

int
serviceview_node_labels_changed(const struct kube_node *old, const struct kube_node *n)
{
	if (old->nlabels != n->nlabels)
		return 1;
	for (size_t i = 0; i < n->nlabels; i++)
		if (!serviceview_streq(kube_node_label(old, n->labels[i].key), n->labels[i].value))
			return 1;
	return 0;
}

static const char *
serviceview_label_get(const void *labels, const char *key)
{
	return kube_node_label(labels, key);
}

int
serviceview_node_matches(const struct labelsel *sel, const struct kube_node *n)
{
	return labelsel_matches(sel, serviceview_label_get, n);
}

/* serviceview_mix is splitmix64's finalizer: spreads a hash over 64 bits. */
static uint64_t
serviceview_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t
serviceview_nodes_digest(const struct kube_node *const *nodes, size_t n,
    const struct labelsel *sel)
{
	uint64_t sum = 0, count = 0;

	/* a sum of per-Node hashes: the same set in any order sums the same */
	for (size_t i = 0; i < n; i++) {
		const struct kube_node *k = nodes[i];
		if (!serviceview_node_included(k) || (sel && !serviceview_node_matches(sel, k)))
			continue;
		sum += serviceview_mix(hmap_hash(k->name) ^
		    serviceview_mix(hmap_hash(k->provider_id ? k->provider_id : "")));
		count++;
	}
	return serviceview_mix(sum ^ serviceview_mix(count));
}

/* serviceview_ip_mode is an ingress entry's ipMode as the API server keeps
 * it: VIP by default for an IP, none for a hostname. */
const char *
serviceview_ip_mode(const char *ip, const char *mode)
{
	if (ip == NULL || *ip == '\0')
		return "";
	return mode == NULL || *mode == '\0' ? "VIP" : mode;
}

int
serviceview_status_equal(const struct kube_service *s, const struct cloud_lb_status *st)
{
	if (s->ningress != st->n_ingress)
		return 0;
	for (size_t i = 0; i < st->n_ingress; i++) {
		const struct kube_lb_ingress *a = &s->ingress[i];
		const struct cloud_lb_ingress *b = &st->ingress[i];
		if (strcmp(a->ip ? a->ip : "", b->ip) != 0 ||
		    strcmp(a->hostname ? a->hostname : "", b->hostname) != 0 ||
		    strcmp(serviceview_ip_mode(a->ip, a->ip_mode),
		    serviceview_ip_mode(b->ip, b->ip_mode)) != 0)
			return 0;
	}
	return 1;
}


/* --- patches --------------------------------------------------------------- */

json_object *
serviceview_status_patch(const struct cloud_lb_status *st)
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
				    serviceview_ip_mode(g->ip, g->ip_mode))));
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
serviceview_meta_patch(const struct kube_service *s, int finalizer,
    const struct cloud_lb_result *r)
{
	json_object *md = xcheck(json_object_new_object()), *p;
	int has = kube_service_has_finalizer(s, SERVICEVIEW_FINALIZER);
	size_t i;

	if ((finalizer > 0 && !has) || (finalizer < 0 && has)) {
		json_object *fs = xcheck(json_object_new_array());
		for (i = 0; i < s->nfinalizers; i++)
			if (strcmp(s->finalizers[i], SERVICEVIEW_FINALIZER) != 0)
				json_object_array_add(fs, xcheck(json_object_new_string(
				    s->finalizers[i])));
		if (finalizer > 0)
			json_object_array_add(fs, xcheck(json_object_new_string(
			    SERVICEVIEW_FINALIZER)));
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
			else if (!a->remove && !serviceview_streq(cur, a->value))
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

/* --- writes -------------------------------------------------------------- */

/* servicectl_patch sends patch (consumed) to s's main resource (status 0)
 * or its status, behind the resourceVersion in rv, which then holds the
 * answer's. A Service gone meanwhile is ERR_NOT_FOUND. */
int
serviceview_patch(struct kube_client *kc, const struct kube_service *s, int status,
    json_object *patch, char rv[SERVICEVIEW_RV_MAX], struct errbuf *e)
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
	    strlen(nrv) >= SERVICEVIEW_RV_MAX))
		r = errbuf_set(e, ERR_INVALID, "service %s/%s: the answer to a write has no "
		    "usable metadata.resourceVersion", s->namespace, s->name);
	if (r == 0)
		memcpy(rv, nrv, strlen(nrv) + 1);
	json_object_put(ret);
	json_object_put(patch);
	free(path);
	return r;
}

void
serviceview_event(struct events *ev, const struct kube_service *s, const char *type,
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
	events_record(ev, &ref, type, reason, msg);
}

/* --- the Service view ----------------------------------------------------- */

void
serviceview_init(struct serviceview *v, const struct kube_service *s, int served)
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

void
serviceview_free(struct serviceview *v)
{
	free(v->kv);
	free(v->ports);
	v->kv = NULL;
	v->ports = NULL;
}

/* --- Node snapshots ------------------------------------------------------- */

void
serviceview_nodes_free(struct serviceview_nodes *b)
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

struct serviceview_nodes *
serviceview_nodes_build(struct reflector *nodes, uint64_t gen)
{
	struct serviceview_nodes *b = xcalloc(1, sizeof(*b));

	b->refs = 1;
	b->gen = gen;
	store_list(reflector_store(nodes), &b->objs, &b->nobjs);
	b->incl = xcalloc(b->nobjs, sizeof(*b->incl));
	b->views = xcalloc(b->nobjs, sizeof(*b->views));
	b->nodes = xcalloc(b->nobjs, sizeof(*b->nodes));
	for (size_t i = 0; i < b->nobjs; i++) {
		const struct kube_node *n = kube_node_of(b->objs[i]);
		if (!serviceview_node_included(n))
			continue;
		b->incl[b->n] = n;
		nodeview_init(&b->views[b->n], n);
		b->nodes[b->n] = b->views[b->n].node;
		b->n++;
	}
	/* what every Service without a node selector compares: once per
	 * snapshot, not once per Service (2,000 Services x 5,000 Nodes) */
	b->digest = serviceview_nodes_digest(b->incl, b->n, NULL);
	return b;
}

void
serviceview_cache_init(struct serviceview_cache *k, pthread_mutex_t *mu, const uint64_t *gen,
    const uint64_t *pass_gen, struct reflector *nodes)
{
	memset(k, 0, sizeof(*k));
	k->mu = mu;
	k->gen = gen;
	k->pass_gen = pass_gen;
	k->nodes = nodes;
	pthread_mutex_init(&k->build, NULL);
}

void
serviceview_cache_destroy(struct serviceview_cache *k)
{
	serviceview_cache_trim(k);
	pthread_mutex_destroy(&k->build);
}

/* serviceview_cache_ref returns a reference to the latest snapshot if it is
 * of the current Node generation (*ret_gen), or (fresh 0) no older than the
 * last node pass, else NULL. */
static struct serviceview_nodes *
serviceview_cache_ref(struct serviceview_cache *k, int fresh, uint64_t *ret_gen)
{
	struct serviceview_nodes *b;

	pthread_mutex_lock(k->mu);
	*ret_gen = *k->gen;
	if ((b = k->latest) != NULL && b->gen >= (fresh ? *ret_gen : *k->pass_gen))
		b->refs++;
	else
		b = NULL;
	pthread_mutex_unlock(k->mu);
	return b;
}

struct serviceview_nodes *
serviceview_cache_get(struct serviceview_cache *k, int fresh)
{
	struct serviceview_nodes *b, *old = NULL;
	uint64_t gen;

	if ((b = serviceview_cache_ref(k, fresh, &gen)) != NULL)
		return b;
	/* one build at a time: syncs that start together wait for it and share
	 * it instead of building a copy each (some 5 MiB at 5,000 Nodes) */
	pthread_mutex_lock(&k->build);
	if ((b = serviceview_cache_ref(k, fresh, &gen)) != NULL) {
		pthread_mutex_unlock(&k->build);
		return b;
	}
	/* listed after gen was read: the snapshot is at least that recent */
	b = serviceview_nodes_build(k->nodes, gen);
	pthread_mutex_lock(k->mu);
	if (k->latest == NULL || k->latest->gen < gen) {
		old = k->latest;
		k->latest = b;
		b->refs++;
		if (old != NULL && --old->refs > 0)
			old = NULL;
	}
	pthread_mutex_unlock(k->mu);
	pthread_mutex_unlock(&k->build);
	serviceview_nodes_free(old);
	return b;
}

void
serviceview_cache_put(struct serviceview_cache *k, struct serviceview_nodes *b)
{
	int last;

	pthread_mutex_lock(k->mu);
	last = --b->refs == 0;
	pthread_mutex_unlock(k->mu);
	if (last)
		serviceview_nodes_free(b);
}

void
serviceview_cache_trim(struct serviceview_cache *k)
{
	struct serviceview_nodes *b;

	pthread_mutex_lock(k->mu);
	if ((b = k->latest) != NULL && --b->refs > 0)
		b = NULL;
	k->latest = NULL;
	pthread_mutex_unlock(k->mu);
	serviceview_nodes_free(b);
}

void
serviceview_node_names(const struct serviceview_nodes *b, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < b->n && i < SERVICEVIEW_EVENT_NODES_MAX && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? " " : "", b->incl[i]->name);
}

/* The Services of a drift check as the provider sees them: one view at a
 * time, built when asked for (2,000 views at once would be some 9 MiB). */
struct serviceview_checking {
	const struct store_obj *const *objs;
	struct serviceview v;
	size_t cur;
	int have;
};

static const struct cloud_service *
serviceview_checking_at(void *arg, size_t i)
{
	struct serviceview_checking *k = arg;

	if (k->have && k->cur == i)
		return &k->v.svc;
	if (k->have)
		serviceview_free(&k->v);
	serviceview_init(&k->v, kube_service_of(k->objs[i]), 1);
	k->cur = i;
	k->have = 1;
	return &k->v.svc;
}

int
serviceview_drift(const struct cloud_lb_ops *lb, void *state, const char *cluster,
    const struct store_obj *const *objs, size_t n, const struct serviceview_nodes *b,
    struct stop *stop, unsigned char *drifted, struct errbuf *e)
{
	struct serviceview_checking k = { .objs = objs };
	struct cloud_services svcs = { .n = n, .at = serviceview_checking_at, .arg = &k };
	int r = 0;
	size_t i;

	if (lb->verify != NULL) {
		unsigned char *got = xcalloc(n, 1);
		if ((r = lb->verify(state, cluster, &svcs, b->nodes, b->n, got, e)) >= 0) {
			r = 0;
			for (i = 0; i < n; i++)
				drifted[i] = got[i] != 0;
		}
		free(got);
	} else {
		for (i = 0; i < n && !stop_requested(stop); i++) {
			struct cloud_lb_status *st = xcalloc(1, sizeof(*st));
			int exists = 0;
			if (lb->get(state, cluster, serviceview_checking_at(&k, i), st, &exists,
			    e) < 0)
				log_info(2, "Cannot check the load balancer for drift", "service",
				    objs[i]->key, "err", e->msg, NULL);
			else
				drifted[i] = !exists ||
				    !serviceview_status_equal(kube_service_of(objs[i]), st);
			free(st);
		}
	}
	if (k.have)
		serviceview_free(&k.v);
	return r;
}
