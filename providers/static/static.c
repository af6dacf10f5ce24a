/* static.c - the `static` provider: the cloud-config's static: section,
 * instances from the inventory, load balancers from the address pools. */
#include "static.h"

#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cloudconfig.h"
#include "base/err.h"
#include "inventory.h"
#include "ipam.h"
#include "base/labelsel.h"
#include "lbrequest.h"
#include "base/metrics.h"
#include "base/xalloc.h"

#define STATIC_KEY_MAX 320  /* bytes: "namespace/name" (63 + 1 + 253) and the NUL */

/* --- the cloud-config's static: section ----------------------------------------- */

struct static_pool_file {
	char *name;
	struct cloudconfig_list addresses;
	struct cloudconfig_list namespaces;
	int auto_assign;
};

struct static_file {
	char *inventory;
	int authoritative;
	struct cloudconfig_sections pools;   /* struct static_pool_file */
	int kube_vip;
};

static int
static_check_pool_name(const char *v, struct errbuf *e)
{
	/* it is a metric label and an annotation's value: keep it plain */
	if (*v == '\0' || !labelsel_value_ok(v))
		return errbuf_set(e, ERR_INVALID, "\"%.64s\" is not a pool name (1 to %d letters, "
		    "digits, '-', '_' and '.', alphanumeric at both ends)", v,
		    STATIC_POOL_NAME_MAX);
	return 0;
}

static int
static_check_range(const char *v, struct errbuf *e)
{
	struct ipam_range r;

	return ipam_range_parse(v, &r, e);
}

static int
static_check_namespace(const char *v, struct errbuf *e)
{
	/* a namespace is a DNS-1123 label */
	if (!labelsel_dns_label_ok(v))
		return errbuf_set(e, ERR_INVALID, "\"%.64s\" is not a namespace name", v);
	return 0;
}

static const struct cloudconfig_key static_pool_schema[] = {
	{ .key = "name", .type = CLOUDCONFIG_STRING, .required = 1,
	  .check = static_check_pool_name, .offset = offsetof(struct static_pool_file, name) },
	{ .key = "addresses", .type = CLOUDCONFIG_STRING_LIST, .required = 1,
	  .check = static_check_range, .max_items = STATIC_POOL_ENTRIES_MAX,
	  .offset = offsetof(struct static_pool_file, addresses) },
	{ .key = "namespaces", .type = CLOUDCONFIG_STRING_LIST, .check = static_check_namespace,
	  .offset = offsetof(struct static_pool_file, namespaces) },
	{ .key = "autoAssign", .type = CLOUDCONFIG_BOOL, .def = "true",
	  .offset = offsetof(struct static_pool_file, auto_assign) },
	{ .key = NULL },
};

static const struct cloudconfig_key static_section_schema[] = {
	{ .key = "inventory", .type = CLOUDCONFIG_STRING,
	  .offset = offsetof(struct static_file, inventory) },
	{ .key = "authoritative", .type = CLOUDCONFIG_BOOL, .def = "false",
	  .offset = offsetof(struct static_file, authoritative) },
	{ .key = "pools", .type = CLOUDCONFIG_SECTION_LIST, .section = static_pool_schema,
	  .elem_size = sizeof(struct static_pool_file), .max_items = STATIC_POOLS_MAX,
	  .offset = offsetof(struct static_file, pools) },
	{ .key = "kubeVipAnnotation", .type = CLOUDCONFIG_BOOL, .def = "false",
	  .offset = offsetof(struct static_file, kube_vip) },
	{ .key = NULL },
};

static const struct cloudconfig_key static_schema[] = {
	{ .key = "static", .type = CLOUDCONFIG_SECTION, .section = static_section_schema },
	{ .key = NULL },
};

/* --- the state ---------------------------------------------------------------------- */

/* What the metrics show of one pool. */
struct static_shown {
	int valid;
	uint64_t used[IPAM_FAMILIES];
	double size[IPAM_FAMILIES];
};

struct static_state {
	int authoritative;
	int kube_vip;
	char *inventory_path;              /* NULL: no inventory */
	struct inventory_watch *inv;       /* NULL: no inventory */
	pthread_mutex_t lock;              /* ipam and shown */
	struct ipam *ipam;                 /* NULL: no pools */
	size_t n_pools;
	struct static_shown *shown;        /* n_pools */
};

static struct metric *static_m_pool;
static pthread_once_t static_metrics_once = PTHREAD_ONCE_INIT;

static void
static_metrics_init(void)
{
	static_m_pool = metrics_gauge("bootccm_lb_pool_addresses",
	    "Addresses of the static provider's LoadBalancer pools: used (held by at least "
	    "one Service; a shared address counts once) and free.", "pool,family,state");
}

/* static_show brings the pool metrics in line with the allocator. Called
 * with st->lock held, after every change. */
static void
static_show(struct static_state *st)
{
	for (size_t i = 0; i < st->n_pools; i++) {
		struct static_shown now = { 1, { 0, 0 }, { 0, 0 } }, *was = &st->shown[i];
		const char *name;

		if (ipam_pool_usage(st->ipam, i, &name, now.used, now.size) < 0)
			continue;
		if (was->valid && memcmp(was->used, now.used, sizeof(now.used)) == 0 &&
		    memcmp(was->size, now.size, sizeof(now.size)) == 0)
			continue;
		for (int f = 0; f < IPAM_FAMILIES; f++) {
			const char *fam = f == 0 ? "IPv4" : "IPv6";
			if (now.size[f] == 0)
				continue;
			metric_set(static_m_pool, (double)now.used[f], name, fam, "used");
			metric_set(static_m_pool, now.size[f] - (double)now.used[f], name, fam,
			    "free");
		}
		*was = now;
	}
}

static void
static_free(void *state)
{
	struct static_state *st = state;

	if (st == NULL)
		return;
	inventory_watch_free(st->inv);
	ipam_free(st->ipam);
	pthread_mutex_destroy(&st->lock);
	free(st->shown);
	free(st->inventory_path);
	free(st);
}

void
static_set_inventory_interval(void *state, int64_t interval_ns)
{
	struct static_state *st = state;

	if (st->inv != NULL)
		inventory_watch_set_interval(st->inv, interval_ns);
}

/* static_pools builds the allocator over the configured pools. */
static int
static_pools(struct static_state *st, const struct static_file *f, const char *file,
    void (*warn)(const char *msg), struct errbuf *e)
{
	const struct static_pool_file *pf = f->pools.items;
	struct ipam_pool_config *pc;
	struct ipam_range **ranges;
	size_t n = f->pools.n, bad;
	int r = 0;

	if (n == 0)
		return 0;
	pc = xcalloc(n, sizeof(*pc));
	ranges = xcalloc(n, sizeof(*ranges));
	for (size_t i = 0; i < n; i++) {
		if (pf[i].addresses.n == 0) {
			r = errbuf_set(e, ERR_INVALID, "%s:%d:%d: static.pools[%zu]: no addresses",
			    file, f->pools.pos[i].line, f->pools.pos[i].col, i);
			goto out;
		}
		ranges[i] = xcalloc(pf[i].addresses.n, sizeof(*ranges[i]));
		for (size_t j = 0; j < pf[i].addresses.n; j++) {
			char msg[ERRBUF_MAX];
			if ((r = ipam_range_parse(pf[i].addresses.items[j], &ranges[i][j], e)) < 0)
				goto out;  /* the loader's check let it through: cannot happen */
			if (warn == NULL || !ipam_range_huge(&ranges[i][j]))
				continue;
			snprintf(msg, sizeof(msg), "%s:%d:%d: static.pools[%zu] \"%s\": %s holds half "
			    "or more of all IPv%d addresses: the pool hands out other networks' "
			    "addresses", file, f->pools.pos[i].line, f->pools.pos[i].col, i,
			    pf[i].name, pf[i].addresses.items[j],
			    ranges[i][j].first.family == 4 ? 4 : 6);
			warn(msg);
		}
		pc[i].name = pf[i].name;
		pc[i].ranges = ranges[i];
		pc[i].n_ranges = pf[i].addresses.n;
		pc[i].namespaces = (const char *const *)pf[i].namespaces.items;
		pc[i].n_namespaces = pf[i].namespaces.n;
		pc[i].auto_assign = pf[i].auto_assign;
	}
	if ((r = ipam_pools_check(pc, n, &bad, e)) < 0) {
		errbuf_prefix(e, r, "%s:%d:%d: static.pools[%zu]", file, f->pools.pos[bad].line,
		    f->pools.pos[bad].col, bad);
		goto out;
	}
	if ((r = ipam_new(pc, n, &st->ipam, e)) < 0)
		goto out;
	st->n_pools = n;
	st->shown = xcalloc(n, sizeof(*st->shown));
out:
	for (size_t i = 0; i < n; i++)
		free(ranges[i]);
	free(ranges);
	free(pc);
	return r;
}

/* static_inventory_path resolves the inventory's path: a relative one is
 * relative to the cloud-config's directory, as kubeconfig paths are. */
static char *
static_inventory_path(const char *inventory, const char *config_path)
{
	char *dir, *out;

	if (inventory[0] == '/' || config_path == NULL || *config_path == '\0')
		return xstrdup(inventory);
	dir = xstrdup(config_path);
	out = xasprintf("%s/%s", dirname(dir), inventory);
	free(dir);
	return out;
}

static int
static_init(const struct cloud_config *cfg, void **ret_state, struct errbuf *e)
{
	const char *file = cfg->config_path && *cfg->config_path ? cfg->config_path :
	    "cloud-config";
	struct static_file f;
	struct static_state *st;
	int r;

	pthread_once(&static_metrics_once, static_metrics_init);
	memset(&f, 0, sizeof(f));
	if ((r = cloudconfig_load(cfg->config_path, static_schema, &f, sizeof(f), e)) < 0)
		return r;
	st = xcalloc(1, sizeof(*st));
	pthread_mutex_init(&st->lock, NULL);
	st->authoritative = f.authoritative;
	st->kube_vip = f.kube_vip;
	if (f.authoritative && (f.inventory == NULL || *f.inventory == '\0')) {
		r = errbuf_set(e, ERR_INVALID, "%s: static.authoritative is true without "
		    "static.inventory: every node would be absent, so deleted", file);
		goto out;
	}
	if ((r = static_pools(st, &f, file, cfg->warn, e)) < 0)
		goto out;
	if (f.inventory != NULL && *f.inventory != '\0') {
		st->inventory_path = static_inventory_path(f.inventory, cfg->config_path);
		if ((r = inventory_watch_new(st->inventory_path, STATIC_INVENTORY_INTERVAL_NS,
		    &st->inv, e)) < 0) {
			errbuf_prefix(e, r, "%s: static.inventory", file);
			goto out;
		}
	}
	pthread_mutex_lock(&st->lock);
	static_show(st);
	pthread_mutex_unlock(&st->lock);
	*ret_state = st;
	st = NULL;
	r = 0;
out:
	static_free(st);
	cloudconfig_free(static_schema, &f);
	return r;
}

static int
static_health(void *state, struct errbuf *e)
{
	struct static_state *st = state;
	struct errbuf he;
	int r;

	if (st->inv == NULL || (r = inventory_watch_health(st->inv, &he)) == 0)
		return 0;
	return errbuf_set(e, r, "%s (the last good inventory stays in force)", he.msg);
}

/* --- instances -------------------------------------------------------------------- */

/* static_find looks node up in the inventory in force: the instance, with a
 * reference to its inventory in *ret_inv (drop it with inventory_unref), or
 * NULL. */
static const struct inventory_instance *
static_find(struct static_state *st, const struct cloud_node *node,
    struct inventory **ret_inv)
{
	*ret_inv = st->inv ? inventory_watch_get(st->inv) : NULL;
	if (*ret_inv == NULL)
		return NULL;
	return inventory_find(*ret_inv, node->name, node->provider_id);
}

/* static_absent answers for a node the inventory does not list. */
static int
static_absent(const struct static_state *st, const struct cloud_node *node, const char *what,
    struct errbuf *e)
{
	if (st->authoritative)
		return errbuf_set(e, ERR_NOT_FOUND, "node %s: not in the inventory %s, which is "
		    "authoritative", node->name, st->inventory_path);
	return errbuf_set(e, ERR_NOT_IMPLEMENTED, "node %s: %s: the static provider cannot tell "
	    "whether its instance %s", node->name, st->inv ? "not in the inventory" :
	    "no inventory", what);
}

static int
static_exists(void *state, const struct cloud_node *node, int *ret_exists, struct errbuf *e)
{
	struct static_state *st = state;
	struct inventory *inv;
	int r = 0;

	if (static_find(st, node, &inv) != NULL)
		*ret_exists = 1;
	else
		r = static_absent(st, node, "exists", e);
	inventory_unref(inv);
	return r;
}

static int
static_shutdown(void *state, const struct cloud_node *node, int *ret_shutdown,
    struct errbuf *e)
{
	struct static_state *st = state;
	const struct inventory_instance *in;
	struct inventory *inv;
	int r = 0;

	if ((in = static_find(st, node, &inv)) != NULL)
		*ret_shutdown = in->shutdown;
	else
		r = static_absent(st, node, "is shut down", e);
	inventory_unref(inv);
	return r;
}

/* static_inventory_metadata answers from an inventory entry; one without
 * addresses takes those its kubelet reported (--node-ip), so an inventory
 * may hold only the topology. */
static int
static_inventory_metadata(const struct inventory_instance *in, const struct cloud_node *node,
    struct cloud_instance_metadata *m, struct errbuf *e)
{
	struct cloud_instance_metadata *k;
	int r = 0;

	inventory_metadata(in, m);
	if (m->n_addresses > 0)
		return 0;
	k = xcalloc(1, sizeof(*k));
	r = cloud_kubelet_reported(node, k, e);
	if (r == 0) {
		memcpy(m->addresses, k->addresses, k->n_addresses * sizeof(k->addresses[0]));
		m->n_addresses = k->n_addresses;
	} else if (r == ERR_PERMANENT) {
		r = 0;  /* it reported nothing: the node controller says what is missing */
	}
	free(k);
	return r;
}

static int
static_metadata(void *state, const struct cloud_node *node,
    struct cloud_instance_metadata *ret, struct errbuf *e)
{
	struct static_state *st = state;
	const struct inventory_instance *in;
	struct cloud_instance_metadata *m;
	struct inventory *inv;
	int r = 0;

	if (node == NULL || node->name == NULL || *node->name == '\0')
		return errbuf_set(e, ERR_INVALID, "static provider: a node without a name");
	/* struct cloud_instance_metadata is some 15 KB: off the worker's stack */
	m = xcalloc(1, sizeof(*m));
	if ((in = static_find(st, node, &inv)) != NULL)
		r = static_inventory_metadata(in, node, m, e);
	else if (st->authoritative)
		r = static_absent(st, node, "exists", e);
	else
		r = cloud_kubelet_reported(node, m, e);
	inventory_unref(inv);
	if (r == 0)
		memcpy(ret, m, sizeof(*ret));
	free(m);
	return r;
}

static int
static_list(void *state, cloud_instance_cb cb, void *arg, struct errbuf *e)
{
	struct static_state *st = state;
	struct cloud_instance_metadata *m;
	struct inventory *inv;
	int r = 0;

	(void)e;
	if (st->inv == NULL)
		return 0;
	inv = inventory_watch_get(st->inv);
	m = xmalloc(sizeof(*m));
	for (size_t i = 0; r >= 0 && i < inventory_count(inv); i++) {
		inventory_metadata(inventory_at(inv, i), m);
		r = cb(m, arg);
	}
	free(m);
	inventory_unref(inv);
	return r < 0 ? r : 0;
}

static const struct cloud_instances_ops static_instances = {
	.exists = static_exists,
	.shutdown = static_shutdown,
	.metadata = static_metadata,
	.list = static_list,
};

/* --- load balancers ----------------------------------------------------------------- */

static void
static_key(const struct cloud_service *svc, char key[STATIC_KEY_MAX])
{
	snprintf(key, STATIC_KEY_MAX, "%s/%s", svc->namespace_ ? svc->namespace_ : "",
	    svc->name ? svc->name : "");
}

/* static_status writes an allocation as the Service's status. */
static void
static_status(const struct ipam_result *res, struct cloud_lb_status *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < res->n; i++) {
		snprintf(ret->ingress[i].ip, sizeof(ret->ingress[i].ip), "%s", res->addresses[i]);
		snprintf(ret->ingress[i].ip_mode, sizeof(ret->ingress[i].ip_mode), "VIP");
	}
	ret->n_ingress = res->n;
}

/* static_kube_vip_value writes the kube-vip annotation's value for an
 * allocation: its addresses, comma-separated, in family order. */
static void
static_kube_vip_value(const struct ipam_result *res, char out[CLOUD_LB_ANNOTATION_VALUE_MAX])
{
	out[0] = '\0';
	for (size_t i = 0; i < res->n; i++)
		snprintf(out + strlen(out), CLOUD_LB_ANNOTATION_VALUE_MAX - strlen(out), "%s%s",
		    i ? "," : "", res->addresses[i]);
}

static int
static_get(void *state, const char *cluster, const struct cloud_service *svc,
    struct cloud_lb_status *ret_status, int *ret_exists, struct errbuf *e)
{
	struct static_state *st = state;
	struct ipam_result res;
	char key[STATIC_KEY_MAX];

	(void)cluster;
	(void)e;
	if (st->ipam == NULL) {
		*ret_exists = 0;
		return 0;
	}
	static_key(svc, key);
	memset(&res, 0, sizeof(res));
	pthread_mutex_lock(&st->lock);
	/* its allocation; before the first ensure after a start, the addresses
	 * of its status that are the pools' */
	if (ipam_allocation(st->ipam, key, &res) == 0)
		for (size_t i = 0; svc->status && i < svc->status->n_ingress &&
		    res.n < IPAM_FAMILIES; i++)
			if (ipam_pool_named_of(st->ipam, svc->status->ingress[i].ip) != NULL)
				snprintf(res.addresses[res.n++], sizeof(res.addresses[0]), "%s",
				    svc->status->ingress[i].ip);
	pthread_mutex_unlock(&st->lock);
	*ret_exists = res.n > 0 ||
	    (st->kube_vip && lbrequest_annotation(svc, LBREQUEST_KUBE_VIP_IPS) != NULL);
	if (*ret_exists)
		static_status(&res, ret_status);
	return 0;
}

static int
static_ensure(void *state, const char *cluster, const struct cloud_service *svc,
    const struct cloud_node *nodes, size_t n_nodes, struct cloud_lb_result *ret,
    struct errbuf *e)
{
	struct static_state *st = state;
	struct lbrequest req;
	struct ipam_result res;
	int r;

	(void)cluster;
	(void)nodes;
	(void)n_nodes;
	if (st->ipam == NULL)
		return errbuf_set(e, ERR_IMPLEMENTED_ELSEWHERE, "service %s/%s: the static provider "
		    "has no pools: its LoadBalancer addresses come from elsewhere",
		    svc->namespace_ ? svc->namespace_ : "", svc->name ? svc->name : "");
	r = lbrequest_build(svc, st->kube_vip, &req, e);
	req.svc.served = 1;  /* the controller serves it: that is why it asks */
	pthread_mutex_lock(&st->lock);
	if (r < 0)
		ipam_observe(st->ipam, req.key, &req.svc);  /* what it holds still counts */
	else if ((r = ipam_assign(st->ipam, &req.svc, &res, e)) < 0)
		errbuf_prefix(e, r, "service %s", req.key);
	static_show(st);
	pthread_mutex_unlock(&st->lock);
	if (r == 0) {
		memset(ret, 0, sizeof(*ret));
		static_status(&res, &ret->status);
		if (st->kube_vip) {
			struct cloud_lb_annotation *a = &ret->annotations[ret->n_annotations++];
			snprintf(a->key, sizeof(a->key), "%s", LBREQUEST_KUBE_VIP_IPS);
			static_kube_vip_value(&res, a->value);
		}
	}
	lbrequest_free(&req);
	return r;
}

static int
static_update_hosts(void *state, const char *cluster, const struct cloud_service *svc,
    const struct cloud_node *nodes, size_t n_nodes, struct errbuf *e)
{
	/* the addresses do not depend on the nodes: an announcer follows them */
	(void)state;
	(void)cluster;
	(void)svc;
	(void)nodes;
	(void)n_nodes;
	(void)e;
	return 0;
}

static int
static_ensure_deleted(void *state, const char *cluster, const struct cloud_service *svc,
    struct cloud_lb_result *ret, struct errbuf *e)
{
	struct static_state *st = state;
	char key[STATIC_KEY_MAX];

	(void)cluster;
	(void)e;
	memset(ret, 0, sizeof(*ret));
	if (st->ipam == NULL)
		return 0;
	static_key(svc, key);
	pthread_mutex_lock(&st->lock);
	ipam_release(st->ipam, key);
	static_show(st);
	pthread_mutex_unlock(&st->lock);
	if (st->kube_vip && lbrequest_annotation(svc, LBREQUEST_KUBE_VIP_IPS) != NULL) {
		struct cloud_lb_annotation *a = &ret->annotations[ret->n_annotations++];
		snprintf(a->key, sizeof(a->key), "%s", LBREQUEST_KUBE_VIP_IPS);
		a->remove = 1;
	}
	return 0;
}

/* static_drifted tells whether svc's status (and kube-vip annotation) shows
 * something other than its allocation res. */
static int
static_drifted(const struct static_state *st, const struct cloud_service *svc,
    const struct ipam_result *res)
{
	const struct cloud_lb_status *s = svc->status;
	size_t n = s ? s->n_ingress : 0;

	if (n != res->n)
		return 1;
	for (size_t i = 0; i < n; i++) {
		const struct cloud_lb_ingress *in = &s->ingress[i];
		char canon[NETADDR_TEXT_MAX];
		size_t j;

		if (in->hostname[0] != '\0' || (in->ip_mode[0] != '\0' &&
		    strcmp(in->ip_mode, "VIP") != 0) || netaddr_canonical(in->ip, canon) < 0)
			return 1;
		for (j = 0; j < res->n && strcmp(res->addresses[j], canon) != 0; j++)
			;
		if (j == res->n)
			return 1;
	}
	if (st->kube_vip) {
		const char *v = lbrequest_annotation(svc, LBREQUEST_KUBE_VIP_IPS);
		char want[CLOUD_LB_ANNOTATION_VALUE_MAX];

		static_kube_vip_value(res, want);
		if (v == NULL || strcmp(v, want) != 0)
			return 1;
	}
	return 0;
}

static int
static_verify(void *state, const char *cluster, const struct cloud_services *svcs,
    const struct cloud_node *nodes, size_t n_nodes, unsigned char *drifted, struct errbuf *e)
{
	struct static_state *st = state;

	(void)cluster;
	(void)nodes;
	(void)n_nodes;
	(void)e;
	if (st->ipam == NULL) {
		memset(drifted, 0, svcs->n);
		return 0;
	}
	pthread_mutex_lock(&st->lock);
	for (size_t i = 0; i < svcs->n; i++) {
		const struct cloud_service *svc = svcs->at(svcs->arg, i);
		struct ipam_result res;
		char key[STATIC_KEY_MAX];

		static_key(svc, key);
		/* no allocation: ensure has not made one since the start, or failed */
		drifted[i] = ipam_allocation(st->ipam, key, &res) == 0 ||
		    static_drifted(st, svc, &res);
	}
	pthread_mutex_unlock(&st->lock);
	return 0;
}

static int
static_shows_ip(const struct cloud_service *svc)
{
	for (size_t i = 0; svc->status != NULL && i < svc->status->n_ingress; i++)
		if (svc->status->ingress[i].ip[0] != '\0')
			return 1;
	return 0;
}

static int
static_observe(void *state, const char *key, const struct cloud_service *svc)
{
	struct static_state *st = state;
	struct lbrequest req;
	size_t freed;

	if (st->ipam == NULL)
		return 0;
	/* a Service that is not ours and shows no address holds nothing: the
	 * allocator need not keep it (most of a cluster's Services) */
	if (svc != NULL && !svc->served && !static_shows_ip(svc))
		svc = NULL;
	if (svc != NULL)
		(void)lbrequest_build(svc, st->kube_vip, &req, NULL);  /* ensure reports it */
	pthread_mutex_lock(&st->lock);
	freed = ipam_observe(st->ipam, key, svc ? &req.svc : NULL);
	static_show(st);
	pthread_mutex_unlock(&st->lock);
	if (svc != NULL)
		lbrequest_free(&req);
	return freed > 0;
}

static const struct cloud_lb_ops static_load_balancers = {
	.get = static_get,
	.ensure = static_ensure,
	.update_hosts = static_update_hosts,
	.ensure_deleted = static_ensure_deleted,
	.verify = static_verify,
	.node_selector = NULL,
	.observe = static_observe,
};

const struct cloud_provider static_provider = {
	.name = "static",
	/* an inventory node is known for sure; an absent one is "not found"
	 * only with authoritative: true (static_absent) */
	.flags = CLOUD_DEFINITIVE,
	.init = static_init,
	.free = static_free,
	.instances = &static_instances,
	.load_balancers = &static_load_balancers,
	.routes = NULL,
	.health = static_health,
};
