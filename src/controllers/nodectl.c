/* nodectl.c - the cloud-node controller (contract in nodectl.h). */
#include "controllers/nodectl.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "controllers/noderace.h"
#include "controllers/nodeview.h"
#include "base/dynbuf.h"
#include "base/hmap.h"
#include "base/jsonx.h"
#include "kube/client.h"
#include "kube/node.h"
#include "kube/runner.h"
#include "kube/workqueue.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/xalloc.h"

#define NODECTL_QUEUE "cloud-node"
#define NODECTL_CONFLICT_TRIES 5        /* fresh reads after a conflict, per sync */
#define NODECTL_PERMANENT_FAST_TRIES 3  /* backoff retries of a permanent failure */
#define NODECTL_PERMANENT_RETRY_NS (60LL * NS_PER_S) /* then this often */
/* the local node's retries: the workqueue's default first delay, doubling
 * up to NODECTL_LOCAL_RETRY_MAX_NS, no jitter (one key, nobody to spread) */
#define NODECTL_LOCAL_RETRY_BASE_NS RATELIMITER_DEFAULT_BASE_NS

/* Labels upstream sets from the instance metadata: GA and beta. */
static const struct {
	const char *ga;
	const char *beta;
} nodectl_topology[] = {
	{ CLOUD_LABEL_INSTANCE_TYPE, "beta.kubernetes.io/instance-type" },
	{ CLOUD_LABEL_ZONE, "failure-domain.beta.kubernetes.io/zone" },
	{ CLOUD_LABEL_REGION, "failure-domain.beta.kubernetes.io/region" },
};
#define NODECTL_TOPOLOGY_N (sizeof(nodectl_topology) / sizeof(nodectl_topology[0]))

#define NODECTL_RV_MAX 64
#define NODECTL_DISAGREE_MAX 2048   /* bytes: the fields a late answer disagrees on */

/* A Node this replica initialized, by name in struct nodectl's marks. */
struct nodectl_mark {
	char rv[2][NODECTL_RV_MAX];     /* the version we started from, and the
	                                   one between our two writes */
};

struct nodectl {
	struct nodectl_config cfg;      /* strings below are the copies */
	char *local_node;
	char *user_agent;
	struct wq *q;
	struct runner *run;             /* the workers and the refresher */
	struct kube_client *refresh_kc; /* the refresher's */
	pthread_mutex_t mu;
	pthread_cond_t cv;              /* remote_inflight dropped to 0 */
	int leading;                    /* under mu; read atomically by handlers */
	int remote_inflight;            /* syncs of other nodes in progress (mu) */
	/* the local node's retry delays: only the worker holding its key uses
	 * it, and the queue hands a key to one worker at a time */
	struct backoff local_backoff;
	struct hmap marks;              /* node name -> struct nodectl_mark (mu) */
	struct stop stop;               /* the refresher's sleep; the clients
	                                   abandon retries */
	struct noderace *race;          /* the local node's provider and fallback
	                                   raced; NULL: no fallback */
};

static struct metric *m_delay, *m_inits, *m_failures;
static pthread_once_t nodectl_metrics_once = PTHREAD_ONCE_INIT;

static void
nodectl_metrics_init(void)
{
	static const double buckets[] = {
		0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600,
	};

	m_delay = metrics_histogram("node_controller_cloud_provider_taint_removal_delay_seconds",
	    "Seconds from a Node's creation to the removal of its uninitialized taint.",
	    NULL, buckets, sizeof(buckets) / sizeof(buckets[0]));
	m_inits = metrics_counter("bootccm_node_initializations_total",
	    "Nodes initialized, by the source of their instance metadata.", "source");
	m_failures = metrics_counter("bootccm_node_initialization_failures_total",
	    "Failed node initialization attempts, by reason.", "reason");
}

/* --- the wanted state: pure functions of a Node and its instance ---------- */

/* nodectl_provided_ips parses the provided-node-ip annotation: how many
 * node IPs (0 when absent) or ERR_INVALID. */
static int
nodectl_provided_ips(const struct kube_node *n, struct cloud_node_ip ips[2], struct errbuf *e)
{
	const char *v = kube_node_annotation(n, CLOUD_PROVIDED_NODE_IP);

	return v == NULL || *v == '\0' ? 0 : cloud_provided_node_ips(n->name, v, ips, e);
}

int
nodectl_addresses(const struct kube_node *n, const struct cloud_instance_metadata *m,
    struct cloud_address *out, size_t *ret_n, struct errbuf *e)
{
	struct cloud_node_ip ips[2];
	unsigned matched_types = 0;
	size_t k = 0, i;
	int nips, j, hostname = 0;

	if ((nips = nodectl_provided_ips(n, ips, e)) < 0)
		return nips;
	for (j = 0; j < nips; j++) {
		for (i = 0; i < m->n_addresses; i++)
			if (cloud_node_ip_equal(&ips[j], m->addresses[i].address))
				break;
		if (i == m->n_addresses)
			return errbuf_set(e, ERR_PERMANENT, "node %s: provided node IP %s (annotation "
			    "%s) is not among the instance's %zu addresses", n->name, ips[j].text,
			    CLOUD_PROVIDED_NODE_IP, m->n_addresses);
		out[k++] = m->addresses[i];
		matched_types |= 1u << m->addresses[i].type;
	}
	for (i = 0; i < m->n_addresses && k < CLOUD_ADDRS_MAX; i++)
		if (!(matched_types & (1u << m->addresses[i].type)))
			out[k++] = m->addresses[i];
	for (i = 0; i < k; i++)
		hostname |= out[i].type == CLOUD_ADDR_HOSTNAME;
	for (i = 0; !hostname && i < n->naddresses && k < CLOUD_ADDRS_MAX + 1; i++) {
		const char *a = n->addresses[i].address;
		if (n->addresses[i].type && strcmp(n->addresses[i].type, "Hostname") == 0 &&
		    a != NULL && strlen(a) < sizeof(out[k].address)) {
			out[k].type = CLOUD_ADDR_HOSTNAME;
			memcpy(out[k].address, a, strlen(a) + 1);
			k++;
		}
	}
	*ret_n = k;
	return 0;
}

/* nodectl_addresses_equal: the Node already has exactly these, in order. */
static int
nodectl_addresses_equal(const struct kube_node *n, const struct cloud_address *a, size_t k)
{
	if (n->naddresses != k)
		return 0;
	for (size_t i = 0; i < k; i++)
		if (n->addresses[i].type == NULL || n->addresses[i].address == NULL ||
		    strcmp(n->addresses[i].type, cloud_addr_type_name(a[i].type)) != 0 ||
		    strcmp(n->addresses[i].address, a[i].address) != 0)
			return 0;
	return 1;
}

/* nodectl_label_reserved: additional labels under kubernetes.io/ or k8s.io/
 * (or a subdomain of either) are dropped, like upstream. */
static int
nodectl_label_reserved(const char *key)
{
	const char *slash = strchr(key, '/');
	static const char *const dom[] = { "kubernetes.io", "k8s.io" };

	if (slash == NULL)
		return 0;
	for (size_t i = 0; i < 2; i++) {
		size_t dl = strlen(dom[i]), pl = (size_t)(slash - key);
		if (pl == dl && strncmp(key, dom[i], dl) == 0)
			return 1;
		if (pl > dl && key[pl - dl - 1] == '.' && strncmp(key + pl - dl, dom[i], dl) == 0)
			return 1;
	}
	return 0;
}

/* JSON Pointer escaping of one reference token (RFC 6901). */
static json_object *
nodectl_pointer(const char *prefix, const char *token)
{
	char buf[CLOUD_LABEL_KEY_MAX * 2 + 64];
	size_t o = (size_t)snprintf(buf, sizeof(buf), "%s", prefix);

	for (const char *p = token; *p && o + 3 < sizeof(buf); p++) {
		if (*p == '~' || *p == '/') {
			buf[o++] = '~';
			buf[o++] = *p == '~' ? '0' : '1';
		} else {
			buf[o++] = *p;
		}
	}
	buf[o] = '\0';
	return json_object_new_string(buf);
}

static void
nodectl_op(json_object *ops, const char *op, json_object *path, json_object *value)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "op", json_object_new_string(op));
	json_object_object_add(o, "path", path);
	if (value != NULL)
		json_object_object_add(o, "value", value);
	json_object_array_add(ops, o);
}

/* nodectl_label_ops adds one label unless the Node has it with that value. */
static void
nodectl_label_op(json_object *ops, json_object *all, const struct kube_node *n,
    const char *key, const char *value, int overwrite)
{
	const char *cur = kube_node_label(n, key);

	if (value == NULL || *value == '\0' || (cur != NULL && (!overwrite || strcmp(cur, value) == 0)))
		return;
	if (all != NULL)
		json_object_object_add(all, key, json_object_new_string(value));
	else
		nodectl_op(ops, "add", nodectl_pointer("/metadata/labels/", key),
		    json_object_new_string(value));
}

/* nodectl_source is the provided-by annotation's value for m: its
 * source, the cloud's API when the provider names none. */
static const char *
nodectl_source(const struct cloud_instance_metadata *m)
{
	return m->source[0] ? m->source : CLOUD_SOURCE_API;
}

json_object *
nodectl_node_ops(const struct kube_node *n, const struct cloud_instance_metadata *m)
{
	json_object *ops = json_object_new_array();
	json_object *all = n->nlabels == 0 ? json_object_new_object() : NULL;
	size_t i;

	for (i = 0; i < NODECTL_TOPOLOGY_N; i++) {
		const char *v;
		if (m == NULL) {
			v = kube_node_label(n, nodectl_topology[i].beta);
			nodectl_label_op(ops, all, n, nodectl_topology[i].ga, v, 0);
			continue;
		}
		v = i == 0 ? m->instance_type : i == 1 ? m->zone : m->region;
		nodectl_label_op(ops, all, n, nodectl_topology[i].ga, v, 1);
		nodectl_label_op(ops, all, n, nodectl_topology[i].beta, v, 1);
	}
	for (i = 0; m != NULL && i < m->n_labels; i++)
		if (!nodectl_label_reserved(m->labels[i].key))
			nodectl_label_op(ops, all, n, m->labels[i].key, m->labels[i].value, 0);
	if (all != NULL) {
		if (json_object_object_length(all) > 0)
			nodectl_op(ops, "add", json_object_new_string("/metadata/labels"), all);
		else
			json_object_put(all);
	}
	if (m != NULL) {
		const char *src = nodectl_source(m);
		const char *cur = kube_node_annotation(n, KUBE_ANNOTATION_ADDRESS_SOURCE);

		if (n->nannotations == 0) {
			json_object *a = json_object_new_object();
			json_object_object_add(a, KUBE_ANNOTATION_ADDRESS_SOURCE, json_object_new_string(src));
			nodectl_op(ops, "add", json_object_new_string("/metadata/annotations"), a);
		} else if (cur == NULL || strcmp(cur, src) != 0) {
			nodectl_op(ops, "add", nodectl_pointer("/metadata/annotations/",
			    KUBE_ANNOTATION_ADDRESS_SOURCE), json_object_new_string(src));
		}
	}
	if (m != NULL && (n->provider_id == NULL || *n->provider_id == '\0') &&
	    m->provider_id[0] != '\0')
		nodectl_op(ops, "add", json_object_new_string("/spec/providerID"),
		    json_object_new_string(m->provider_id));
	for (i = 0; m != NULL && i < n->ntaints; i++) {
		if (strcmp(n->taints[i].key, KUBE_TAINT_UNINITIALIZED) != 0)
			continue;
		char path[64];
		snprintf(path, sizeof(path), "/spec/taints/%zu/key", i);
		nodectl_op(ops, "test", json_object_new_string(path),
		    json_object_new_string(KUBE_TAINT_UNINITIALIZED));
		snprintf(path, sizeof(path), "/spec/taints/%zu", i);
		nodectl_op(ops, "remove", json_object_new_string(path), NULL);
		break;  /* indexes after it moved: one taint per write */
	}
	return ops;
}

json_object *
nodectl_status_patch(const struct cloud_address *a, size_t k)
{
	json_object *p = json_object_new_object(), *st = json_object_new_object();
	json_object *arr = json_object_new_array();

	for (size_t i = 0; i < k; i++) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "type", json_object_new_string(cloud_addr_type_name(a[i].type)));
		json_object_object_add(o, "address", json_object_new_string(a[i].address));
		json_object_array_add(arr, o);
	}
	json_object_object_add(st, "addresses", arr);
	json_object_object_add(p, "status", st);
	return p;
}

/* nodectl_addrs_text appends a's k addresses ("[InternalIP 10.0.0.2, ...]"). */
static void
nodectl_addrs_text(struct dynbuf *b, const struct cloud_address *a, size_t k)
{
	dynbuf_addstr(b, "[");
	for (size_t i = 0; i < k; i++)
		dynbuf_addf(b, "%s%s %s", i ? ", " : "", cloud_addr_type_name(a[i].type),
		    a[i].address);
	dynbuf_addstr(b, "]");
}

static int
nodectl_addr_lists_equal(const struct cloud_address *a, size_t ka,
    const struct cloud_address *b, size_t kb)
{
	if (ka != kb)
		return 0;
	for (size_t i = 0; i < ka; i++)
		if (a[i].type != b[i].type || strcmp(a[i].address, b[i].address) != 0)
			return 0;
	return 1;
}

int
nodectl_disagreement(const struct kube_node *n, const struct cloud_instance_metadata *won,
    const struct cloud_instance_metadata *late, struct dynbuf *out)
{
	static const struct {
		const char *name;
		size_t off;
	} fields[] = {
		{ "providerID", offsetof(struct cloud_instance_metadata, provider_id) },
		{ "instance type", offsetof(struct cloud_instance_metadata, instance_type) },
		{ "zone", offsetof(struct cloud_instance_metadata, zone) },
		{ "region", offsetof(struct cloud_instance_metadata, region) },
	};
	struct cloud_address *a = xcalloc(2 * (CLOUD_ADDRS_MAX + 1), sizeof(*a));
	struct cloud_address *b = a + CLOUD_ADDRS_MAX + 1;
	struct errbuf e;
	size_t ka = 0, kb = 0;
	int diff = 0, ra, rb;

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const char *x = (const char *)won + fields[i].off;
		const char *y = (const char *)late + fields[i].off;
		if (*x == '\0' || *y == '\0' || strcmp(x, y) == 0)
			continue;   /* one of them does not say */
		dynbuf_addf(out, "%s%s (%s: %s, provider: %s)", diff++ ? "; " : "",
		    fields[i].name, nodectl_source(won), x, y);
	}
	/* the addresses each answer would have written */
	ra = nodectl_addresses(n, won, a, &ka, &e);
	rb = nodectl_addresses(n, late, b, &kb, &e);
	if (ra == 0 && (rb < 0 || !nodectl_addr_lists_equal(a, ka, b, kb))) {
		dynbuf_addf(out, "%saddresses (%s: ", diff++ ? "; " : "", nodectl_source(won));
		nodectl_addrs_text(out, a, ka);
		dynbuf_addstr(out, ", provider: ");
		if (rb < 0)
			dynbuf_addstr(out, e.msg);
		else
			nodectl_addrs_text(out, b, kb);
		dynbuf_addstr(out, ")");
	}
	free(a);
	return diff;
}

/* --- the controller ------------------------------------------------------- */

static int
nodectl_is_local(const struct nodectl *c, const char *name)
{
	return c->local_node != NULL && strcmp(name, c->local_node) == 0;
}

/* nodectl_write_gate lets every write of the local node through (every
 * replica initializes its own node) and asks the configured gate (is this
 * replica still the leader?) of the others'. */
static int
nodectl_write_gate(void *arg, const char *method, const char *path)
{
	const struct nodectl *c = arg;
	const char *name = strncmp(path, "/api/v1/nodes/", 14) == 0 ? path + 14 : NULL;
	size_t len = name ? strcspn(name, "/?") : 0;

	if (name != NULL && c->local_node != NULL && strlen(c->local_node) == len &&
	    strncmp(name, c->local_node, len) == 0)
		return 1;
	return c->cfg.write_gate == NULL || c->cfg.write_gate(c->cfg.write_gate_arg, method, path);
}

/* Nodes this replica initialized whose cached version may still be one it
 * has already written over: the version it started from (the local node
 * initialized from a direct read before the cache had it), or the one
 * between its two writes (the status write's resourceVersion). A sync of
 * either would repeat writes into a conflict. The entry goes when any other
 * version of the Node arrives from the watch. */
static void
nodectl_mark(struct nodectl *c, const char *name, const char *start_rv, const char *rv)
{
	struct nodectl_mark *m = xcalloc(1, sizeof(*m)), *old;

	snprintf(m->rv[0], sizeof(m->rv[0]), "%s", start_rv);
	snprintf(m->rv[1], sizeof(m->rv[1]), "%s", rv);
	pthread_mutex_lock(&c->mu);
	old = hmap_put(&c->marks, name, m);
	pthread_mutex_unlock(&c->mu);
	free(old);
}

/* nodectl_mark_stale tells whether n's version is one its mark names, and
 * returns the mark or NULL (c->mu held). */
static struct nodectl_mark *
nodectl_mark_stale(struct nodectl *c, const struct kube_node *n, int *ret_stale)
{
	const char *rv = n->obj.resource_version;
	struct nodectl_mark *m = hmap_get(&c->marks, n->name);

	*ret_stale = m != NULL && (strcmp(m->rv[0], rv) == 0 || strcmp(m->rv[1], rv) == 0);
	return m;
}

static void
nodectl_unmark(struct nodectl *c, const struct kube_node *n)
{
	struct nodectl_mark *m = NULL;
	int stale;

	pthread_mutex_lock(&c->mu);
	if (nodectl_mark_stale(c, n, &stale) != NULL && !stale)
		m = hmap_delete(&c->marks, n->name);
	pthread_mutex_unlock(&c->mu);
	free(m);
}

static int
nodectl_stale(struct nodectl *c, const struct kube_node *n)
{
	int stale;

	pthread_mutex_lock(&c->mu);
	nodectl_mark_stale(c, n, &stale);
	pthread_mutex_unlock(&c->mu);
	return stale;
}

/* nodectl_needs_work: tainted, or (for the leader) a beta label to copy. */
static int
nodectl_needs_work(const struct kube_node *n, int leading)
{
	if (n->deletion_timestamp != 0)
		return 0;
	if (kube_node_taint(n, KUBE_TAINT_UNINITIALIZED, NULL) != NULL)
		return 1;
	for (size_t i = 0; leading && i < NODECTL_TOPOLOGY_N; i++)
		if (kube_node_label(n, nodectl_topology[i].beta) != NULL &&
		    kube_node_label(n, nodectl_topology[i].ga) == NULL)
			return 1;
	return 0;
}

static void
nodectl_enqueue(struct nodectl *c, const struct store_obj *o)
{
	const struct kube_node *n = kube_node_of(o);
	int leading = __atomic_load_n(&c->leading, __ATOMIC_ACQUIRE);

	nodectl_unmark(c, n);
	if ((leading || nodectl_is_local(c, n->name)) && nodectl_needs_work(n, leading))
		wq_add(c->q, n->name);
}

static void
nodectl_on_add(const struct store_obj *o, void *arg)
{
	nodectl_enqueue(arg, o);
}

static void
nodectl_on_update(const struct store_obj *old, const struct store_obj *o, void *arg)
{
	(void)old;
	nodectl_enqueue(arg, o);
}

static void
nodectl_event(struct nodectl *c, const struct kube_node *n, const char *type,
    const char *reason, const char *msg)
{
	struct events_ref ref = {
		.kind = "Node", .name = n->name, .uid = n->obj.uid, .api_version = "v1",
	};

	events_record(c->cfg.events, &ref, type, reason, msg);
}

static const char *nodectl_source_phrase(const char *source);

/* nodectl_late hears the provider's answer about the local node after the
 * metadata fallback's won (noderace.h): compared, never written. */
static void
nodectl_late(const struct kube_node *n, const struct cloud_instance_metadata *won, int r,
    const struct cloud_instance_metadata *m, const char *err, void *arg)
{
	struct nodectl *c = arg;
	struct dynbuf d;

	if (r < 0) {
		log_info(2, "The cloud provider's late answer for the local node failed",
		    "node", n->name, "provider", c->cfg.provider->name, "err", err, NULL);
		return;
	}
	dynbuf_init(&d, NODECTL_DISAGREE_MAX);
	if (nodectl_disagreement(n, won, m, &d) == 0) {
		log_info(1, "The cloud provider's late answer agrees with the instance metadata "
		    "service", "node", n->name, "provider", c->cfg.provider->name, NULL);
	} else {
		char msg[NODECTL_DISAGREE_MAX + 256];
		snprintf(msg, sizeof(msg), "The cloud provider %s answered after the node was "
		    "initialized from %s, and disagrees on %s. Nothing was changed: check the "
		    "node's instance", c->cfg.provider->name, nodectl_source_phrase(
		    nodectl_source(won)), dynbuf_ptr(&d));
		log_warn("The cloud provider disagrees with the instance metadata service",
		    "node", n->name, "provider", c->cfg.provider->name, "fields", dynbuf_ptr(&d),
		    NULL);
		nodectl_event(c, n, EVENTS_WARNING, "ProviderDisagrees", msg);
	}
	dynbuf_free(&d);
}

/* nodectl_instance asks the provider about n; for the local node with a
 * metadata fallback, the provider and the fallback at once (noderace.h):
 * the first valid answer wins, and fallback_err then says what the
 * provider had done (not answered yet, or its error). */
static int
nodectl_instance(struct nodectl *c, const struct kube_node *n,
    struct cloud_instance_metadata *m, char *fallback_err, size_t flen, struct errbuf *e)
{
	struct nodeview v;
	int r, fb;

	fallback_err[0] = '\0';
	if (c->race != NULL && nodectl_is_local(c, n->name)) {
		if ((r = noderace_ask(c->race, n, m, &fb, fallback_err, flen, e)) == 0 && !fb)
			fallback_err[0] = '\0';
		return r;
	}
	nodeview_init(&v, n);
	memset(m, 0, sizeof(*m));
	r = c->cfg.provider->instances->metadata(c->cfg.provider_state, &v.node, m, e);
	nodeview_free(&v);
	return r;
}

static const char *
nodectl_source_phrase(const char *source)
{
	if (strcmp(source, CLOUD_SOURCE_METADATA) == 0)
		return "the instance metadata service";
	if (strcmp(source, CLOUD_SOURCE_KUBELET) == 0)
		return "what its kubelet reported at registration";
	if (strcmp(source, CLOUD_SOURCE_INVENTORY) == 0)
		return "the provider's inventory file";
	return "the cloud provider API";
}

static const char *
nodectl_failure_reason(int r)
{
	switch (r) {
	case ERR_CONFLICT:
		return "conflict";
	case ERR_INVALID:
		return "invalid";
	default:
		return err_retryable(r) ? "transient" : "permanent";
	}
}

/* nodectl_get reads the Node from the API server: after a conflict, and the
 * local node before the cache has it. */
static int
nodectl_get(struct kube_client *kc, const char *name, const struct kube_node **ret,
    struct errbuf *e)
{
	json_object *o = NULL;
	char *path = NULL;
	int r;

	if ((r = kube_path(&path, "/api/v1", NULL, "nodes", name, NULL, NULL)) < 0)
		return errbuf_set(e, r, "node %s: bad name", name);
	r = kube_request_keep(kc, "GET", path, NULL, NULL, kube_node_fields, &o, NULL, e);
	free(path);
	if (r == 0) {
		r = kube_node_decode(o, ret, e);
		json_object_put(o);
	}
	return r;
}

/* nodectl_patch_node sends ops (nodectl_node_ops) to the Node behind a test
 * of rv; nothing when there are none. */
static int
nodectl_patch_node(struct kube_client *kc, const char *name, json_object *ops,
    const char *rv, struct errbuf *e)
{
	char *path = NULL;
	int r;

	if (json_object_array_length(ops) == 0)
		return 0;
	if ((r = kube_path(&path, "/api/v1", NULL, "nodes", name, NULL, NULL)) < 0)
		return errbuf_set(e, r, "node %s: bad name", name);
	r = kube_patch_json(kc, path, ops, rv, NULL, NULL, e);
	free(path);
	return r;
}

/* nodectl_answer computes n's addresses from m into addrs (room for
 * CLOUD_ADDRS_MAX + 1) and, to initialize n, checks that m is complete:
 * a providerID (unless the Node has one) and at least one address. */
static int
nodectl_answer(const struct kube_node *n, const struct cloud_instance_metadata *m,
    int initialize, struct cloud_address *addrs, size_t *ret_k, struct errbuf *e)
{
	int r;

	if ((r = nodectl_addresses(n, m, addrs, ret_k, e)) < 0)
		return r;
	if (initialize && (n->provider_id == NULL || *n->provider_id == '\0') &&
	    m->provider_id[0] == '\0')
		return errbuf_set(e, ERR_PERMANENT, "node %s: the provider gave no providerID and "
		    "the Node has none", n->name);
	if (*ret_k == 0 && initialize)
		return errbuf_set(e, ERR_PERMANENT, "node %s: no addresses for it (the provider "
		    "knows none and the Node has none); the taint stays until it has some", n->name);
	return 0;
}

/* nodectl_answer_valid is the race's test of an answer (noderace.h): what
 * the initialization's writes need. */
static int
nodectl_answer_valid(const struct kube_node *n, const struct cloud_instance_metadata *m,
    struct errbuf *e)
{
	struct cloud_address *addrs = xcalloc(CLOUD_ADDRS_MAX + 1, sizeof(*addrs));
	size_t k;
	int r = nodectl_answer(n, m, 1, addrs, &k, e);

	free(addrs);
	return r;
}

/* nodectl_write makes the Node match m in at most two writes: the status's
 * addresses (skipped when equal), then labels, providerID and the taint.
 * Returns 0, ERR_CONFLICT (the Node changed: re-read and retry), or another
 * error. */
static int
nodectl_write(struct kube_client *kc, const struct kube_node *n,
    const struct cloud_instance_metadata *m, int initialize, char *ret_mid_rv,
    size_t mid_len, struct errbuf *e)
{
	struct cloud_address *addrs;
	json_object *patch = NULL, *ops = NULL;
	const char *rv = n->obj.resource_version;
	char *path = NULL, mid[NODECTL_RV_MAX];
	size_t k = 0;
	int r;

	addrs = xcalloc(CLOUD_ADDRS_MAX + 1, sizeof(*addrs));
	if ((r = nodectl_answer(n, m, initialize, addrs, &k, e)) < 0)
		goto out;
	if (k > 0 && !nodectl_addresses_equal(n, addrs, k)) {
		if ((r = kube_path(&path, "/api/v1", NULL, "nodes", n->name, "status", NULL)) < 0)
			goto out;
		patch = nodectl_status_patch(addrs, k);
		/* the second write is conditional on the first's result: only
		 * its resourceVersion is read from the answer */
		r = kube_patch_merge_rv(kc, path, patch, rv, mid, sizeof(mid), e);
		free(path);
		path = NULL;
		if (r < 0)
			goto out;
		rv = mid;
		if (ret_mid_rv != NULL)
			snprintf(ret_mid_rv, mid_len, "%s", rv);
	}
	ops = nodectl_node_ops(n, initialize ? m : NULL);
	r = nodectl_patch_node(kc, n->name, ops, rv, e);
out:
	json_object_put(patch);
	json_object_put(ops);
	free(addrs);
	return r;
}

/* nodectl_unreadable refuses a Node whose fields the initialization reads
 * hold a NUL byte (legal in JSON and in the API server, not in a C string):
 * its providerID, or its provided-node-ip annotation. Left out of the
 * cache, they would read as absent, and the node be initialized as some
 * other node or with the wrong addresses. Returns 0 or ERR_INVALID naming
 * the field. */
static int
nodectl_unreadable(const struct kube_node *n, struct errbuf *e)
{
	if (n->provider_id_nul)
		return errbuf_set(e, ERR_INVALID, "node %s: spec.providerID holds a NUL "
		    "character, which bootccm cannot read", n->name);
	for (size_t i = 0; i < n->nnul_annotations; i++)
		if (strcmp(n->nul_annotations[i], CLOUD_PROVIDED_NODE_IP) == 0)
			return errbuf_set(e, ERR_INVALID, "node %s: annotation %s holds a NUL "
			    "character, which bootccm cannot read", n->name,
			    CLOUD_PROVIDED_NODE_IP);
	return 0;
}

/* nodectl_sync_node brings one Node where it should be; the caller has
 * made sure it is not a version this replica has written over. */
static int
nodectl_sync_node(struct nodectl *c, struct kube_client *kc, const struct kube_node *n,
    struct errbuf *e)
{
	const struct kube_node *fresh = NULL;
	struct cloud_instance_metadata *m = NULL;
	char fallback_err[ERRBUF_MAX], mid_rv[NODECTL_RV_MAX] = "";
	int r = 0, tries, initialize;

	if (n->deletion_timestamp != 0)
		goto out;
	initialize = kube_node_taint(n, KUBE_TAINT_UNINITIALIZED, NULL) != NULL;
	if (!initialize) {
		/* initialized: only the beta labels to copy (leader) */
		json_object *ops = nodectl_node_ops(n, NULL);
		r = nodectl_patch_node(kc, n->name, ops, n->obj.resource_version, e);
		json_object_put(ops);
		goto out;
	}
	m = xmalloc(sizeof(*m));
	if ((r = nodectl_unreadable(n, e)) < 0 ||
	    (r = nodectl_instance(c, n, m, fallback_err, sizeof(fallback_err), e)) < 0)
		goto fail;
	for (tries = 0;; tries++) {
		r = nodectl_write(kc, fresh ? fresh : n, m, 1, mid_rv, sizeof(mid_rv), e);
		if (r != ERR_CONFLICT || tries >= NODECTL_CONFLICT_TRIES ||
		    stop_requested(&c->stop))
			break;
		metric_add(m_failures, 1, "conflict");
		if (fresh)
			store_obj_unref(&fresh->obj);
		fresh = NULL;
		if ((r = nodectl_get(kc, n->name, &fresh, e)) < 0)
			break;
		if (fresh->deletion_timestamp != 0 ||
		    kube_node_taint(fresh, KUBE_TAINT_UNINITIALIZED, NULL) == NULL)
			goto out;  /* someone else initialized it meanwhile */
	}
	if (r < 0)
		goto fail;
	if (mid_rv[0] != '\0')
		nodectl_mark(c, n->name, (fresh ? fresh : n)->obj.resource_version, mid_rv);
	{
		const char *src = nodectl_source(m);
		char msg[ERRBUF_MAX + 256];
		int64_t age = n->creation_timestamp ?
		    clock_real_ns() / NS_PER_S - n->creation_timestamp : -1;

		if (fallback_err[0])
			snprintf(msg, sizeof(msg), "Node synced successfully: initialized from %s "
			    "(fallback: %s)", nodectl_source_phrase(src), fallback_err);
		else
			snprintf(msg, sizeof(msg), "Node synced successfully: initialized from %s",
			    nodectl_source_phrase(src));
		nodectl_event(c, n, EVENTS_NORMAL, "Synced", msg);
		metric_add(m_inits, 1, src);
		if (age >= 0)
			metric_observe(m_delay, (double)age);
		log_info(0, "Initialized node", "node", n->name, "source", src,
		    "providerID", m->provider_id[0] ? m->provider_id : n->provider_id,
		    "fallback", fallback_err[0] ? "true" : "false", NULL);
	}
	goto out;
fail:
	metric_add(m_failures, 1, nodectl_failure_reason(r));
	log_warn("Cannot initialize node; the uninitialized taint stays", "node", n->name,
	    "err", e->msg, NULL);
	nodectl_event(c, n, EVENTS_WARNING, "InitializationFailed", e->msg);
out:
	if (fresh)
		store_obj_unref(&fresh->obj);
	free(m);
	return r;
}

/* nodectl_cached returns a new reference to key's Node in the cache (NULL
 * when absent) and whether this replica has written over that version. The
 * two are read together under c->mu: a newer version drops the mark only
 * after the cache holds it (the reflector stores, then calls the handlers,
 * and nodectl_unmark takes c->mu), so the copy read here is either that
 * newer version or one whose mark is still there. Read one after the other,
 * the version between this replica's two writes could lose its mark to the
 * untaint's arriving in between and be taken for fresh: the same JSON
 * patch again, refused by its test (422), then a GET. */
static const struct kube_node *
nodectl_cached(struct nodectl *c, const char *key, int *ret_stale)
{
	const struct store_obj *o;

	pthread_mutex_lock(&c->mu);
	o = store_get(reflector_store(c->cfg.nodes), key);
	*ret_stale = 0;
	if (o != NULL)
		nodectl_mark_stale(c, kube_node_of(o), ret_stale);
	pthread_mutex_unlock(&c->mu);
	return o ? kube_node_of(o) : NULL;
}

/* nodectl_sync brings the Node called key where it should be, as the cache
 * has it. The local node is read from the API server while the cache does
 * not have it yet: the first LIST of thousands of Nodes takes seconds, and
 * the node bootccm runs on must not wait for it (invariant 2). Not found
 * there (not registered yet) or forbidden (no RBAC yet) is an error, so the
 * worker retries it soon. */
static int
nodectl_sync(struct nodectl *c, struct kube_client *kc, const char *key, struct errbuf *e)
{
	const struct kube_node *n;
	int r, stale;

	if ((n = nodectl_cached(c, key, &stale)) != NULL) {
		if (c->cfg.cached_read_hook != NULL)
			c->cfg.cached_read_hook(n, c->cfg.hook_arg);
		r = stale ? 0 : nodectl_sync_node(c, kc, n, e);
		if (c->cfg.cached_done_hook != NULL)
			c->cfg.cached_done_hook(n, r, c->cfg.hook_arg);
		store_obj_unref(&n->obj);
		return r;
	}
	/* gone, or not registered: the watch queues it when it comes */
	if (!nodectl_is_local(c, key) || reflector_has_synced(c->cfg.nodes))
		return 0;
	if ((r = nodectl_get(kc, key, &n, e)) < 0) {
		log_info(4, "Local node not readable yet", "node", key, "err", e->msg, NULL);
		return r;
	}
	r = 0;
	if (nodectl_needs_work(n, __atomic_load_n(&c->leading, __ATOMIC_ACQUIRE)) &&
	    !nodectl_stale(c, n))
		r = nodectl_sync_node(c, kc, n, e);
	store_obj_unref(&n->obj);
	return r;
}

/* nodectl_leading_enter counts a remote sync or refresh in progress while
 * leading: 1 when leading (end it with nodectl_leading_leave), else 0. */
static int
nodectl_leading_enter(struct nodectl *c)
{
	pthread_mutex_lock(&c->mu);
	int leading = c->leading;
	if (leading)
		c->remote_inflight++;
	pthread_mutex_unlock(&c->mu);
	return leading;
}

static void
nodectl_leading_leave(struct nodectl *c)
{
	pthread_mutex_lock(&c->mu);
	if (--c->remote_inflight == 0)
		pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* nodectl_work is the runner's sync. A Node other than the local one waits
 * for leadership (dropped until then: nodectl_set_leading queues it). The
 * local node's failures retry on its own short backoff (a metadata service
 * or a registration that comes late is seen within
 * NODECTL_LOCAL_RETRY_MAX_NS); the others' on the queue's per-key limiter,
 * permanent failures slowly. */
static int
nodectl_work(void *arg, void *ctx, const char *key)
{
	struct nodectl *c = arg;
	struct errbuf e = { "" };
	int local = nodectl_is_local(c, key), r;

	if (!local && !nodectl_leading_enter(c))
		return 0;
	r = nodectl_sync(c, ctx, key, &e);
	if (!local)
		nodectl_leading_leave(c);
	if (local && r < 0) {
		wq_add_after(c->q, key, backoff_next(&c->local_backoff));
		return RUNNER_HANDLED;
	}
	if (local)
		backoff_reset(&c->local_backoff);
	if (r < 0 && (err_retryable(r) || r == ERR_CONFLICT ||
	    wq_num_requeues(c->q, key) < NODECTL_PERMANENT_FAST_TRIES))
		return r;
	if (r < 0) {
		/* bad reported data does not fix itself: retry slowly; a change
		 * to the Node queues it at once */
		wq_add_after(c->q, key, NODECTL_PERMANENT_RETRY_NS);
		return RUNNER_HANDLED;
	}
	return 0;
}

/* --- periodic address refresh (leader) ------------------------------------ */

struct nodectl_listed {
	char provider_id[CLOUD_ID_MAX];
	size_t n_addresses;
	struct cloud_address addresses[CLOUD_ADDRS_MAX];
};

struct nodectl_list_acc {
	struct nodectl_listed *v;
	size_t n, cap;
};

static int
nodectl_list_cb(const struct cloud_instance_metadata *m, void *arg)
{
	struct nodectl_list_acc *a = arg;

	if (m->provider_id[0] == '\0')
		return 0;
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->v = xreallocarray(a->v, a->cap, sizeof(*a->v));
	}
	struct nodectl_listed *l = &a->v[a->n++];
	memcpy(l->provider_id, m->provider_id, sizeof(l->provider_id));
	l->n_addresses = m->n_addresses;
	memcpy(l->addresses, m->addresses, m->n_addresses * sizeof(m->addresses[0]));
	return 0;
}

static int
nodectl_listed_cmp(const void *a, const void *b)
{
	return strcmp(((const struct nodectl_listed *)a)->provider_id,
	    ((const struct nodectl_listed *)b)->provider_id);
}

/* nodectl_refresh_once refreshes every initialized Node's addresses: from
 * one instances.list when the provider has it, else one call per Node. */
static void
nodectl_refresh_once(struct nodectl *c, struct kube_client *kc)
{
	const struct cloud_instances_ops *in = c->cfg.provider->instances;
	struct nodectl_list_acc acc = { NULL, 0, 0 };
	struct cloud_instance_metadata *m = xmalloc(sizeof(*m));
	const struct store_obj **objs = NULL;
	size_t nobjs = 0, checked = 0, failed = 0;
	struct errbuf e = { "" };
	int use_list = in->list != NULL;

	store_list(reflector_store(c->cfg.nodes), &objs, &nobjs);
	if (use_list) {
		if (in->list(c->cfg.provider_state, nodectl_list_cb, &acc, &e) < 0) {
			log_warn("Cannot list the cloud's instances; addresses not refreshed this period",
			    "err", e.msg, NULL);
			goto out;
		}
		qsort(acc.v, acc.n, sizeof(acc.v[0]), nodectl_listed_cmp);
	}
	for (size_t i = 0; i < nobjs && !stop_requested(&c->stop) &&
	    __atomic_load_n(&c->leading, __ATOMIC_ACQUIRE); i++) {
		const struct kube_node *n = kube_node_of(objs[i]);
		char ferr[ERRBUF_MAX];
		int r;

		if (n->deletion_timestamp != 0 ||
		    kube_node_taint(n, KUBE_TAINT_UNINITIALIZED, NULL) != NULL)
			continue;
		memset(m, 0, sizeof(*m));
		if (use_list) {
			struct nodectl_listed key, *l;
			if (n->provider_id == NULL || strlen(n->provider_id) >= sizeof(key.provider_id))
				continue;
			memcpy(key.provider_id, n->provider_id, strlen(n->provider_id) + 1);
			l = acc.n ? bsearch(&key, acc.v, acc.n, sizeof(acc.v[0]), nodectl_listed_cmp) : NULL;
			if (l == NULL)
				continue;  /* the lifecycle controller's business */
			m->n_addresses = l->n_addresses;
			memcpy(m->addresses, l->addresses, l->n_addresses * sizeof(l->addresses[0]));
		} else if (nodectl_instance(c, n, m, ferr, sizeof(ferr), &e) < 0) {
			failed++;
			log_info(2, "Cannot refresh node addresses", "node", n->name, "err", e.msg, NULL);
			continue;
		}
		if (m->n_addresses == 0)
			continue;
		r = nodectl_write(kc, n, m, 0, NULL, 0, &e);
		if (r < 0) {
			failed++;
			log_info(2, "Cannot refresh node addresses", "node", n->name, "err", e.msg, NULL);
		} else {
			checked++;
		}
	}
	if (log_enabled(2)) {
		char nc[24], nf[24];
		snprintf(nc, sizeof(nc), "%zu", checked);
		snprintf(nf, sizeof(nf), "%zu", failed);
		log_info(2, "Refreshed node addresses", "checked", nc, "failed", nf,
		    "list", use_list ? "true" : "false", NULL);
	}
out:
	store_list_free(objs, nobjs);
	free(acc.v);
	free(m);
}

/* nodectl_refresh is the refresher's period: the leader's alone. */
static void
nodectl_refresh(void *arg)
{
	struct nodectl *c = arg;

	if (!nodectl_leading_enter(c))
		return;
	nodectl_refresh_once(c, c->refresh_kc);
	nodectl_leading_leave(c);
}

/* nodectl_abort wakes a worker waiting for the local node's provider call. */
static void
nodectl_abort(void *arg)
{
	struct nodectl *c = arg;

	if (c->race)
		noderace_cancel(c->race);
}

/* --- life cycle ----------------------------------------------------------- */

int
nodectl_new(const struct nodectl_config *cfg, struct nodectl **ret, struct errbuf *e)
{
	struct nodectl *c;
	struct reflector_handlers h = {
		.on_add = nodectl_on_add, .on_update = nodectl_on_update,
	};
	int r;

	if (cfg->provider == NULL || cfg->provider->instances == NULL ||
	    cfg->provider->instances->metadata == NULL)
		return errbuf_set(e, ERR_NOT_IMPLEMENTED, "cloud-node: provider %s cannot "
		    "describe instances", cfg->provider ? cfg->provider->name : "(none)");
	if (cfg->nodes == NULL || cfg->kc == NULL || cfg->workers < 1 ||
	    cfg->refresh_period_ns <= 0)
		return errbuf_set(e, ERR_INVALID, "cloud-node: incomplete configuration");
	c = xcalloc(1, sizeof(*c));
	c->cfg = *cfg;
	c->local_node = cfg->local_node ? xstrdup(cfg->local_node) : NULL;
	c->user_agent = xstrdup(cfg->user_agent ? cfg->user_agent : "bootccm");
	backoff_init(&c->local_backoff, NODECTL_LOCAL_RETRY_BASE_NS, NODECTL_LOCAL_RETRY_MAX_NS,
	    2.0, 0);
	hmap_init(&c->marks, HMAP_COPY_KEYS);
	stop_init(&c->stop);
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	if ((r = wq_new(NODECTL_QUEUE, NULL, &c->q)) < 0) {
		nodectl_free(c);
		return errbuf_set(e, r, "cloud-node: cannot create the work queue");
	}
	if (cfg->fallback != NULL && cfg->fallback->instances != NULL &&
	    cfg->fallback->instances->metadata != NULL && c->local_node != NULL) {
		struct noderace_config rc = {
			.provider = cfg->provider, .provider_state = cfg->provider_state,
			.fallback = cfg->fallback, .fallback_state = cfg->fallback_state,
			.valid = nodectl_answer_valid, .late = nodectl_late, .arg = c,
		};
		c->race = noderace_new(&rc);
	}
	h.arg = c;
	if ((r = reflector_add_handlers(cfg->nodes, &h, e)) < 0) {
		nodectl_free(c);
		return r;
	}
	pthread_once(&nodectl_metrics_once, nodectl_metrics_init);
	*ret = c;
	return 0;
}

int
nodectl_start(struct nodectl *c, struct errbuf *e)
{
	int r;

	/* the local node first, without waiting for the cache (nodectl_sync) */
	if (c->local_node != NULL && *c->local_node != '\0' &&
	    (r = wq_add(c->q, c->local_node)) < 0)
		return errbuf_set(e, r, "cloud-node: cannot queue the local node \"%.64s\"",
		    c->local_node);
	struct runner_config rcfg = {
		.stop = &c->stop, .arg = c, .q = c->q, .workers = c->cfg.workers,
		.kc = c->cfg.kc, .user_agent = c->user_agent, .gate = nodectl_write_gate,
		.gate_arg = c, .sync = nodectl_work,
		.every = nodectl_refresh, .period_ns = c->cfg.refresh_period_ns,
		.on_stop = nodectl_abort,
	};
	c->refresh_kc = kube_client_new(c->cfg.kc, c->user_agent, &c->stop, nodectl_write_gate,
	    c);
	if (runner_start(&rcfg, &c->run) < 0)
		return errbuf_set(e, ERR_INTERNAL, "cloud-node: cannot start a thread");
	return 0;
}

void
nodectl_set_leading(struct nodectl *c, int leading)
{
	const struct store_obj **objs = NULL;
	size_t n = 0;

	pthread_mutex_lock(&c->mu);
	__atomic_store_n(&c->leading, leading, __ATOMIC_RELEASE);
	if (!leading)
		while (c->remote_inflight > 0)
			pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
	if (!leading)
		return;
	/* every Node is ours now: queue those waiting for work */
	store_list(reflector_store(c->cfg.nodes), &objs, &n);
	for (size_t i = 0; i < n; i++)
		nodectl_enqueue(c, objs[i]);
	store_list_free(objs, n);
}

void
nodectl_retry_now(struct nodectl *c)
{
	char num[24];
	size_t n;

	if (c == NULL || c->q == NULL)
		return;
	if ((n = wq_retry_now(c->q)) > 0) {
		snprintf(num, sizeof(num), "%zu", n);
		log_info(2, "Retrying at once the nodes that wait on a failure", "nodes", num,
		    NULL);
	}
}

void
nodectl_stop(struct nodectl *c)
{
	if (c == NULL)
		return;
	if (c->run != NULL) {
		runner_stop(c->run);
	} else {
		stop_request(&c->stop);
		nodectl_abort(c);
	}
	/* the local node's provider call, abandoned or not, ends before the
	 * caller may free the provider's state; its late answer records an
	 * Event, so before the caller frees the recorder too */
	noderace_free(c->race);
	c->race = NULL;
}

void
nodectl_free(struct nodectl *c)
{
	if (c == NULL)
		return;
	nodectl_stop(c);
	runner_free(c->run);
	wq_free(c->q);
	kube_client_free(c->refresh_kc);
	hmap_free(&c->marks, free);
	free(c->local_node);
	free(c->user_agent);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	stop_destroy(&c->stop);
	free(c);
}
