/* hclb.c - Services' load balancers on the Hetzner Cloud API: find by the
 * uid label, create in one request, plan and apply changes to what is
 * bootccm's only, label servers for node selectors, verify in one listing. */
#include "hclb.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "base/hmap.h"
#include "base/jsonx.h"
#include "base/labelsel.h"
#include "base/xalloc.h"

#define HCLB_SVC_MAX 320            /* bytes of "namespace/name" */
#define HCLB_LABELED_MAX_AGE_NS (5 * 60 * NS_PER_S) /* a selector's labelled servers,
	                                  as known, serve Node churn this long */

struct hclb {
	struct hcclient *c;
	struct hcserver *servers;
	struct hcnet *net;
	char *location, *network_zone, *type, *algorithm;
	int use_private_ip, disable_private_ingress, disable_ipv6;
	pthread_mutex_t mu;             /* types, shortfalls, selecting */
	struct hmap types;              /* type name -> int64_t * (max_targets) */
	struct hmap shortfalls;         /* Service uid -> the shortfall reported */
	struct hmap selecting;          /* Service uid -> its selector key, while its
	                                   balancer is known good (a sync succeeded) */
	/* server labels are read, changed and written whole (PUT): two
	 * balancers labelling one server at once would lose a label */
	pthread_mutex_t label_mu;
	struct hmap labeled;            /* selector key -> struct hclb_set: the
	                                   servers carrying it (label_mu) */
};

/* The servers that carry a selector's label, as last listed and changed. */
struct hclb_set {
	int64_t *ids;
	size_t n;
	int64_t listed_ns;
};

static void
hclb_set_free(void *v)
{
	struct hclb_set *set = v;

	free(set->ids);
	free(set);
}

/* Everything one call works with. */
struct hclb_ctx {
	struct hclb *l;
	const struct cloud_service *svc;
	char name[HCLB_SVC_MAX];        /* namespace/name */
	char cv[HCLBSPEC_LABEL_VALUE_MAX + 1];
	const char *cluster;
	struct hclbspec spec;
	int have_spec;
};

static char *
hclb_dup(const char *s)
{
	return s != NULL && *s != '\0' ? xstrdup(s) : NULL;
}

struct hclb *
hclb_new(struct hcclient *c, struct hcserver *servers, struct hcnet *net,
    const struct hclbspec_defaults *d)
{
	struct hclb *l = xcalloc(1, sizeof(*l));

	l->c = c;
	l->servers = servers;
	l->net = net;
	l->location = hclb_dup(d->location);
	l->network_zone = hclb_dup(d->network_zone);
	l->type = hclb_dup(d->type);
	l->algorithm = hclb_dup(d->algorithm);
	l->use_private_ip = d->use_private_ip;
	l->disable_private_ingress = d->disable_private_ingress;
	l->disable_ipv6 = d->disable_ipv6;
	pthread_mutex_init(&l->mu, NULL);
	pthread_mutex_init(&l->label_mu, NULL);
	hmap_init(&l->types, HMAP_COPY_KEYS);
	hmap_init(&l->shortfalls, HMAP_COPY_KEYS);
	hmap_init(&l->selecting, HMAP_COPY_KEYS);
	hmap_init(&l->labeled, HMAP_COPY_KEYS);
	return l;
}

void
hclb_free(struct hclb *l)
{
	if (l == NULL)
		return;
	hmap_free(&l->types, free);
	hmap_free(&l->shortfalls, free);
	hmap_free(&l->selecting, free);
	hmap_free(&l->labeled, hclb_set_free);
	pthread_mutex_destroy(&l->mu);
	pthread_mutex_destroy(&l->label_mu);
	free(l->location);
	free(l->network_zone);
	free(l->type);
	free(l->algorithm);
	free(l);
}

const char *
hclb_node_selector(const struct cloud_service *svc)
{
	for (size_t i = 0; i < svc->n_annotations; i++)
		if (svc->annotations[i].key != NULL && strcmp(svc->annotations[i].key,
		    HCLBSPEC_PREFIX "node-selector") == 0)
			return svc->annotations[i].value && *svc->annotations[i].value ?
			    svc->annotations[i].value : NULL;
	return NULL;
}

/* hclb_ctx_init reads the defaults, the network and the Service's spec. */
static int
hclb_ctx_init(struct hclb_ctx *x, struct hclb *l, const char *cluster,
    const struct cloud_service *svc, struct errbuf *e)
{
	struct hclbspec_defaults d = {
		.location = l->location, .network_zone = l->network_zone, .type = l->type,
		.algorithm = l->algorithm, .use_private_ip = l->use_private_ip,
		.disable_private_ingress = l->disable_private_ingress,
		.disable_ipv6 = l->disable_ipv6,
	};
	int r;

	memset(x, 0, sizeof(*x));
	x->l = l;
	x->svc = svc;
	x->cluster = cluster;
	snprintf(x->name, sizeof(x->name), "%s/%s", svc->namespace_ ? svc->namespace_ : "",
	    svc->name ? svc->name : "");
	hclbspec_cluster_value(cluster, x->cv);
	if ((r = hcnet_id(l->net, &d.network, e)) < 0)
		return errbuf_prefix(e, r, "Service %s", x->name);
	if ((r = hclbspec_parse(svc, &d, cluster, &x->spec, e)) < 0)
		return r;
	x->have_spec = 1;
	return 0;
}

static void
hclb_ctx_free(struct hclb_ctx *x)
{
	if (x->have_spec)
		hclbspec_free(&x->spec);
}

/* --- requests -------------------------------------------------------------------- */

struct hclb_found {
	const char *uid, *cv;
	struct hcapi_lb ours;          /* the one with our labels */
	int n_ours;
	char foreign[HCAPI_NAME_MAX];  /* one without the cluster label */
	int64_t foreign_id;
};

static int
hclb_found_item(json_object *item, const char *path, void *arg, struct errbuf *e)
{
	struct hclb_found *f = arg;
	struct hcapi_lb lb;
	int r;

	if ((r = hcapi_lb_parse(item, path, &lb, e)) < 0)
		return r;
	if (hclbspec_ours(&lb, f->uid, f->cv)) {
		if (f->n_ours++ == 0) {
			f->ours = lb;
			return 0;
		}
	} else if (f->foreign_id == 0) {
		snprintf(f->foreign, sizeof(f->foreign), "%s", lb.name);
		f->foreign_id = lb.id;
	}
	hcapi_lb_free(&lb);
	return 0;
}

/* hclb_find finds the Service's balancer by its uid label: 0 with *ret
 * (bootccm's), 1 when there is none, or an error (one that is someone
 * else's: ERR_PERMANENT naming it when strict). */
static int
hclb_find(struct hclb_ctx *x, int strict, struct hcapi_lb *ret, struct errbuf *e)
{
	struct hclb_found f;
	struct dynbuf path;
	int r;

	memset(&f, 0, sizeof(f));
	f.uid = x->svc->uid;
	f.cv = x->cv;
	dynbuf_init(&path, 1024);
	dynbuf_addstr(&path, "/load_balancers?label_selector=");
	hcclient_escape(&path, HCLBSPEC_LABEL_UID "=");
	hcclient_escape(&path, x->svc->uid);
	r = hcclient_list(x->l->c, dynbuf_ptr(&path), "load_balancers", hclb_found_item, &f, e);
	dynbuf_free(&path);
	if (r < 0) {
		if (f.n_ours)
			hcapi_lb_free(&f.ours);
		return errbuf_prefix(e, r, "Service %s: looking up its load balancer", x->name);
	}
	if (f.n_ours > 1) {
		hcapi_lb_free(&f.ours);
		return errbuf_set(e, ERR_PERMANENT, "Service %s: %d load balancers carry its labels "
		    "%s=%s and %s=%s: delete all but one", x->name, f.n_ours, HCLBSPEC_LABEL_UID,
		    x->svc->uid, HCLBSPEC_LABEL_CLUSTER, x->cv);
	}
	if (f.n_ours == 1) {
		*ret = f.ours;
		return 0;
	}
	if (f.foreign_id != 0 && strict)
		return errbuf_set(e, ERR_PERMANENT, "Service %s: load balancer %s (%" PRId64 ") "
		    "carries the Service's %s label but not %s=%s: another controller (the "
		    "official CCM?) made it, so bootccm leaves it alone; to hand it over, add "
		    "that label to it", x->name, f.foreign, f.foreign_id, HCLBSPEC_LABEL_UID,
		    HCLBSPEC_LABEL_CLUSTER, x->cv);
	return 1;
}

static int
hclb_reload(struct hclb_ctx *x, int64_t id, struct hcapi_lb *ret, struct errbuf *e)
{
	json_object *root = NULL, *o;
	char path[64];
	int r;

	snprintf(path, sizeof(path), "/load_balancers/%" PRId64, id);
	if ((r = hcclient_do(x->l->c, "GET", path, NULL, &root, NULL, e)) == 0 &&
	    (r = hcapi_member(root, "load_balancer", &o, e)) == 0)
		r = hcapi_lb_parse(o, "load_balancer", ret, e);
	json_object_put(root);
	if (r == ERR_NOT_FOUND)
		r = ERR_TRANSIENT;   /* deleted meanwhile: the next sync sees it */
	if (r < 0)
		return errbuf_prefix(e, r, "Service %s", x->name);
	return 0;
}

/* hclb_started waits for the action an answer started, if still running. */
static int
hclb_started(struct hclb_ctx *x, json_object *root, struct errbuf *e)
{
	struct hcapi_action a;
	json_object *o;
	int r;

	if ((r = hcapi_member(root, "action", &o, e)) < 0 ||
	    (r = hcapi_action_parse(o, "action", &a, e)) < 0)
		return r;
	if (strcmp(a.status, "error") == 0)
		return errbuf_set(e, ERR_TRANSIENT, "action %" PRId64 " (%s) failed: %s: %s", a.id,
		    a.command, a.error_code, a.error_message);
	if (strcmp(a.status, "running") == 0)
		return hcclient_wait_actions(x->l->c, &a.id, 1, e);
	return 0;
}

/* hclb_action runs one action on balancer id and waits for it. body is
 * taken (NULL: {}). */
static int
hclb_action(struct hclb_ctx *x, const struct hcapi_lb *lb, const char *cmd, json_object *body,
    struct hcclient_answer *ans, struct errbuf *e)
{
	json_object *root = NULL;
	char path[128];
	int r;

	if (body == NULL)
		body = xcheck(json_object_new_object());
	snprintf(path, sizeof(path), "/load_balancers/%" PRId64 "/actions/%s", lb->id, cmd);
	r = hcclient_do(x->l->c, "POST", path, body, &root, ans, e);
	json_object_put(body);
	if (r == 0)
		r = hclb_started(x, root, e);
	json_object_put(root);
	if (r < 0)
		return errbuf_prefix(e, r, "Service %s: load balancer %s: %s", x->name, lb->name, cmd);
	return 0;
}

/* hclb_put changes the balancer's name (NULL: kept) and labels. */
static int
hclb_put(struct hclb_ctx *x, const struct hcapi_lb *lb, const char *name,
    const struct hclbspec_owned *record, struct errbuf *e)
{
	json_object *body = xcheck(json_object_new_object()), *root = NULL;
	char path[64];
	int r;

	if (name != NULL)
		json_object_object_add(body, "name", xcheck(json_object_new_string(name)));
	json_object_object_add(body, "labels", hclbspec_labels(&lb->labels, x->svc->uid, x->cv,
	    record));
	snprintf(path, sizeof(path), "/load_balancers/%" PRId64, lb->id);
	r = hcclient_do(x->l->c, "PUT", path, body, &root, NULL, e);
	json_object_put(body);
	json_object_put(root);
	if (r < 0)
		return errbuf_prefix(e, r, "Service %s: load balancer %s: updating its %s", x->name,
		    lb->name, name ? "name and labels" : "labels");
	return 0;
}

struct hclb_type_found {
	int64_t max_targets;
	int n;
};

static int
hclb_type_item(json_object *item, const char *path, void *arg, struct errbuf *e)
{
	struct hclb_type_found *f = arg;
	int r;

	if ((r = jsonx_int(item, path, "max_targets", 0, INT32_MAX, 0, &f->max_targets, e)) < 0)
		return r;
	f->n++;
	return 0;
}

/* hclb_type_max learns a balancer type's max_targets (once per type). */
static int
hclb_type_max(struct hclb_ctx *x, const char *type, int64_t *ret, struct errbuf *e)
{
	struct hclb_type_found f = { 0, 0 };
	struct dynbuf path;
	int64_t *v;
	int r;

	pthread_mutex_lock(&x->l->mu);
	v = hmap_get(&x->l->types, type);
	if (v != NULL)
		*ret = *v;
	pthread_mutex_unlock(&x->l->mu);
	if (v != NULL)
		return 0;
	dynbuf_init(&path, 256);
	dynbuf_addstr(&path, "/load_balancer_types?name=");
	hcclient_escape(&path, type);
	r = hcclient_list(x->l->c, dynbuf_ptr(&path), "load_balancer_types", hclb_type_item, &f,
	    e);
	dynbuf_free(&path);
	if (r < 0)
		return errbuf_prefix(e, r, "Service %s: load balancer type %s", x->name, type);
	if (f.n != 1)
		return errbuf_set(e, ERR_PERMANENT, "Service %s: there is no load balancer type %s "
		    "(annotation %stype)", x->name, type, HCLBSPEC_PREFIX);
	pthread_mutex_lock(&x->l->mu);
	if (hmap_get(&x->l->types, type) == NULL)
		hmap_put(&x->l->types, type, xmemdup(&f.max_targets, sizeof(f.max_targets)));
	pthread_mutex_unlock(&x->l->mu);
	*ret = f.max_targets;
	return 0;
}

/* --- targets ----------------------------------------------------------------------- */

static const char *
hclb_node_label(const void *labels, const char *key)
{
	const struct cloud_node *n = labels;

	for (size_t i = 0; i < n->n_labels; i++)
		if (n->labels[i].key != NULL && strcmp(n->labels[i].key, key) == 0)
			return n->labels[i].value ? n->labels[i].value : "";
	return NULL;
}

/* hclb_want collects the server ids of the backend Nodes (those matching
 * the node selector, if any): Nodes without an hcloud:// providerID are
 * not servers yet (or not Hetzner Cloud's) and are left out. */
static void
hclb_want(const struct hclbspec *spec, const struct cloud_node *nodes, size_t n,
    int64_t **ret, size_t *ret_n)
{
	struct labelsel sel;
	struct errbuf e;
	int have_sel = spec->node_selector != NULL &&
	    labelsel_parse(spec->node_selector, &sel, &e) == 0;
	int64_t *v = n ? xcalloc(n, sizeof(*v)) : NULL;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t id;
		if (hcserver_provider_id(nodes[i].provider_id, &id) != 1)
			continue;
		if (have_sel && !labelsel_matches(&sel, hclb_node_label, &nodes[i]))
			continue;
		v[k++] = id;
	}
	if (have_sel)
		labelsel_free(&sel);
	*ret = v;
	*ret_n = k;
}

struct hclb_labeled {
	int64_t *ids;
	size_t n;
	struct hcapi_labels *labels;   /* each server's, for the PUT */
};

static int
hclb_labeled_item(json_object *item, const char *path, void *arg, struct errbuf *e)
{
	struct hclb_labeled *l = arg;
	struct hcapi_server s;
	int r;

	if ((r = hcapi_server_parse(item, path, &s, e)) < 0)
		return r;
	l->ids = xreallocarray(l->ids, l->n + 1, sizeof(*l->ids));
	l->labels = xreallocarray(l->labels, l->n + 1, sizeof(*l->labels));
	l->ids[l->n] = s.id;
	l->labels[l->n] = s.labels;
	memset(&s.labels, 0, sizeof(s.labels));
	l->n++;
	hcapi_server_free(&s);
	return 0;
}

/* hclb_server_labels writes server id's labels: labels with key set to
 * value (value NULL: without key). */
static int
hclb_server_labels(struct hclb_ctx *x, int64_t id, const struct hcapi_labels *labels,
    const char *key, const char *value, struct errbuf *e)
{
	json_object *body = xcheck(json_object_new_object()), *lab, *root = NULL;
	char path[64];
	int r;

	lab = xcheck(json_object_new_object());
	for (size_t i = 0; i < labels->n; i++)
		if (strcmp(labels->kv[i].key, key) != 0)
			json_object_object_add(lab, labels->kv[i].key,
			    xcheck(json_object_new_string(labels->kv[i].value)));
	if (value != NULL)
		json_object_object_add(lab, key, xcheck(json_object_new_string(value)));
	json_object_object_add(body, "labels", lab);
	snprintf(path, sizeof(path), "/servers/%" PRId64, id);
	r = hcclient_do(x->l->c, "PUT", path, body, &root, NULL, e);
	json_object_put(body);
	json_object_put(root);
	hcserver_forget(x->l->servers, id);
	if (r < 0)
		return errbuf_prefix(e, r == ERR_NOT_FOUND ? ERR_TRANSIENT : r, "Service %s: server "
		    "%" PRId64 ": %s label %s", x->name, id, value ? "setting" : "removing", key);
	return 0;
}

static void
hclb_copy_labels(const struct hcapi_server *srv, void *arg)
{
	hcapi_labels_copy(arg, &srv->labels);
}

/* hclb_server_of finds server id's labels: as the listing knows them, or
 * from the API. */
static int
hclb_server_of(struct hclb_ctx *x, int64_t id, const struct cloud_node *nodes, size_t n_nodes,
    struct hcapi_labels *ret, struct errbuf *e)
{
	struct cloud_node who = { .name = x->name };
	char pid[40];

	for (size_t j = 0; j < n_nodes; j++) {
		int64_t nid;
		if (hcserver_provider_id(nodes[j].provider_id, &nid) == 1 && nid == id)
			return hcserver_with(x->l->servers, &nodes[j], HCSERVER_MAX_AGE_NS,
			    hclb_copy_labels, ret, e);
	}
	/* a server no backend Node names any more (its Node is gone) */
	snprintf(pid, sizeof(pid), "hcloud://%" PRId64, id);
	who.provider_id = pid;
	return hcserver_with(x->l->servers, &who, HCSERVER_MAX_AGE_NS, hclb_copy_labels, ret, e);
}

static int
hclb_set_has(const struct hclb_set *set, int64_t id)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->ids[i] == id)
			return 1;
	return 0;
}

/* hclb_select labels the selected Nodes' servers with the selector's key
 * and takes it from the servers no longer selected: one server label
 * change per Node that joins or leaves, for every balancer selecting it.
 * Which servers carry the key is listed, unless fresh says the set known
 * (from the last listing and the changes since) may serve. */
static int
hclb_select(struct hclb_ctx *x, const struct cloud_node *nodes, size_t n_nodes, int fresh,
    struct errbuf *e)
{
	struct hclb_labeled have = { NULL, 0, NULL };
	struct hclb_set *set;
	struct dynbuf path;
	int64_t *want = NULL;
	size_t n_want = 0, k;
	int r = 0;

	hclb_want(&x->spec, nodes, n_nodes, &want, &n_want);
	pthread_mutex_lock(&x->l->label_mu);
	set = hmap_get(&x->l->labeled, x->spec.selector_key);
	if (set == NULL || !fresh || clock_mono_ns() - set->listed_ns > HCLB_LABELED_MAX_AGE_NS) {
		dynbuf_init(&path, 256);
		dynbuf_addstr(&path, "/servers?label_selector=");
		hcclient_escape(&path, x->spec.selector_key);
		r = hcclient_list(x->l->c, dynbuf_ptr(&path), "servers", hclb_labeled_item, &have,
		    e);
		dynbuf_free(&path);
		if (r < 0) {
			errbuf_prefix(e, r, "Service %s: the servers of its node selector", x->name);
			goto out;
		}
		if (set == NULL) {
			set = xcalloc(1, sizeof(*set));
			hmap_put(&x->l->labeled, x->spec.selector_key, set);
		}
		free(set->ids);
		set->ids = have.ids;
		set->n = have.n;
		set->listed_ns = clock_mono_ns();
		have.ids = NULL;
	}
	for (size_t i = 0; r == 0 && i < n_want; i++) {
		struct hcapi_labels cur = { 0, NULL };
		if (hclb_set_has(set, want[i]))
			continue;
		r = hclb_server_of(x, want[i], nodes, n_nodes, &cur, e);
		if (r == 0 && (r = hclb_server_labels(x, want[i], &cur, x->spec.selector_key, x->cv,
		    e)) == 0) {
			set->ids = xreallocarray(set->ids, set->n + 1, sizeof(*set->ids));
			set->ids[set->n++] = want[i];
		} else if (r == ERR_NOT_FOUND) {
			r = 0;   /* the server is gone: nothing to label */
		}
		hcapi_labels_free(&cur);
	}
	for (size_t j = 0; r == 0 && j < set->n; j++) {
		struct hcapi_labels cur = { 0, NULL };
		int wanted = 0;
		for (size_t i = 0; i < n_want; i++)
			wanted |= set->ids[j] == want[i];
		if (wanted)
			continue;
		r = hclb_server_of(x, set->ids[j], nodes, n_nodes, &cur, e);
		if (r == 0)
			r = hclb_server_labels(x, set->ids[j], &cur, x->spec.selector_key, NULL, e);
		if (r == 0 || r == ERR_NOT_FOUND) {
			set->ids[j] = 0;   /* forgotten below */
			r = 0;
		}
		hcapi_labels_free(&cur);
	}
	for (size_t j = k = 0; j < set->n; j++)
		if (set->ids[j] != 0)
			set->ids[k++] = set->ids[j];
	set->n = k;
out:
	pthread_mutex_unlock(&x->l->label_mu);
	for (size_t j = 0; j < have.n; j++)
		hcapi_labels_free(&have.labels[j]);
	free(have.labels);
	free(have.ids);
	free(want);
	return r;
}

/* hclb_selecting records whether uid's balancer is known good with its
 * selector key (NULL: forget it), or tells (key given, known NULL) whether
 * it is. */
static int
hclb_selecting(struct hclb *l, const char *uid, const char *key, int set)
{
	char *v;
	int r = 0;

	pthread_mutex_lock(&l->mu);
	if (set)
		free(hmap_put(&l->selecting, uid, xstrdup(key)));
	else if (key == NULL)
		free(hmap_delete(&l->selecting, uid));
	else
		r = (v = hmap_get(&l->selecting, uid)) != NULL && strcmp(v, key) == 0;
	pthread_mutex_unlock(&l->mu);
	return r;
}

/* --- create, plan, apply ------------------------------------------------------- */

static json_object *
hclb_target_json(const char *type, int64_t server, const char *selector, int private_ip)
{
	json_object *t = xcheck(json_object_new_object()), *v = xcheck(json_object_new_object());

	json_object_object_add(t, "type", xcheck(json_object_new_string(type)));
	if (selector != NULL) {
		json_object_object_add(v, "selector", xcheck(json_object_new_string(selector)));
		json_object_object_add(t, "label_selector", v);
	} else {
		json_object_object_add(v, "id", json_object_new_int64(server));
		json_object_object_add(t, "server", v);
	}
	json_object_object_add(t, "use_private_ip", json_object_new_boolean(private_ip));
	return t;
}

/* hclb_create makes the balancer in one request: services, labels and
 * targets (as many as the type takes) in the body. With a fixed private
 * IP, private targets wait for the attach (the plan adds them). */
static int
hclb_create(struct hclb_ctx *x, const int64_t *want, size_t n_want, struct hcapi_lb *ret,
    size_t *ret_shortfall, int64_t *ret_max, struct errbuf *e)
{
	const struct hclbspec *s = &x->spec;
	json_object *body, *services, *targets, *root = NULL, *o;
	struct hclbspec_owned record = { 0, 0, NULL, NULL };
	struct hcclient_answer ans;
	struct hcapi_lb lb;
	int targets_now = !(s->private_ipv4[0] && s->use_private_ip);
	int64_t max = 0;
	size_t shortfall = 0;
	int r;

	if (s->location[0] == '\0' && s->network_zone[0] == '\0')
		return errbuf_set(e, ERR_INVALID, "Service %s: no location for its load balancer: "
		    "set the annotation %slocation (or %snetwork-zone), or hcloud.loadBalancers."
		    "location in the cloud-config", x->name, HCLBSPEC_PREFIX, HCLBSPEC_PREFIX);
	if ((r = hclb_type_max(x, s->type, &max, e)) < 0)
		return r;
	body = xcheck(json_object_new_object());
	json_object_object_add(body, "name", xcheck(json_object_new_string(s->name)));
	json_object_object_add(body, "load_balancer_type", xcheck(json_object_new_string(s->type)));
	if (s->location[0])
		json_object_object_add(body, "location", xcheck(json_object_new_string(s->location)));
	else
		json_object_object_add(body, "network_zone",
		    xcheck(json_object_new_string(s->network_zone)));
	if (s->algorithm[0]) {
		o = xcheck(json_object_new_object());
		json_object_object_add(o, "type", xcheck(json_object_new_string(s->algorithm)));
		json_object_object_add(body, "algorithm", o);
	}
	if (s->network > 0 && s->private_ipv4[0] == '\0')
		json_object_object_add(body, "network", json_object_new_int64(s->network));
	if (s->disable_public == 1)
		json_object_object_add(body, "public_interface", json_object_new_boolean(0));
	services = xcheck(json_object_new_array());
	record.ports = xcalloc(s->n_ports + 1, sizeof(*record.ports));
	for (size_t i = 0; i < s->n_ports; i++) {
		json_object_array_add(services, hclbspec_service_json(s, &s->ports[i], 0));
		record.ports[record.n_ports++] = s->ports[i].listen;
	}
	json_object_object_add(body, "services", services);
	targets = xcheck(json_object_new_array());
	record.targets = xcalloc(n_want + 1, sizeof(*record.targets));
	if (s->node_selector != NULL && targets_now) {
		json_object_array_add(targets, hclb_target_json("label_selector", 0,
		    s->selector_key, s->use_private_ip));
	} else if (s->node_selector == NULL) {
		for (size_t i = 0; i < n_want && targets_now; i++) {
			if (max > 0 && (int64_t)record.n_targets >= max) {
				shortfall++;
				continue;
			}
			json_object_array_add(targets, hclb_target_json("server", want[i], NULL,
			    s->use_private_ip));
			record.targets[record.n_targets++] = want[i];
		}
	}
	json_object_object_add(body, "targets", targets);
	json_object_object_add(body, "labels", hclbspec_labels(NULL, x->svc->uid, x->cv,
	    &record));
	hclbspec_owned_free(&record);
	r = hcclient_do(x->l->c, "POST", "/load_balancers", body, &root, &ans, e);
	json_object_put(body);
	if (r < 0 && strcmp(ans.code, "uniqueness_error") == 0)
		return errbuf_set(e, ERR_PERMANENT, "Service %s: a load balancer named %s exists "
		    "and is not this Service's (no %s=%s label): bootccm leaves it alone; name "
		    "this Service's with the annotation %sname", x->name, s->name,
		    HCLBSPEC_LABEL_UID, x->svc->uid, HCLBSPEC_PREFIX);
	if (r < 0)
		return errbuf_prefix(e, r, "Service %s: creating its load balancer", x->name);
	if ((r = hcapi_member(root, "load_balancer", &o, e)) < 0 ||
	    (r = hcapi_lb_parse(o, "load_balancer", &lb, e)) < 0) {
		json_object_put(root);
		return errbuf_prefix(e, r, "Service %s: POST /load_balancers", x->name);
	}
	r = hclb_started(x, root, e);
	json_object_put(root);
	if (r < 0) {
		hcapi_lb_free(&lb);
		return errbuf_prefix(e, r, "Service %s: creating load balancer %s", x->name,
		    s->name);
	}
	/* the addresses (the private one comes with the network's attach) */
	r = hclb_reload(x, lb.id, ret, e);
	hcapi_lb_free(&lb);
	*ret_shortfall = shortfall;
	*ret_max = max;
	return r;
}

static json_object *
hclb_port_json(int64_t port)
{
	json_object *o = xcheck(json_object_new_object());

	json_object_object_add(o, "listen_port", json_object_new_int64(port));
	return o;
}

static const struct hclbspec_port *
hclb_spec_port(const struct hclbspec *s, int64_t listen)
{
	for (size_t i = 0; i < s->n_ports; i++)
		if (s->ports[i].listen == listen)
			return &s->ports[i];
	return NULL;
}

/* hclb_apply carries out plan p on *lb, then reads it again. A target the
 * API refuses for the type's limit ends the adds (the shortfall grows). */
static int
hclb_apply(struct hclb_ctx *x, struct hcapi_lb *lb, struct hclbplan *p, struct errbuf *e)
{
	const struct hclbspec *s = &x->spec;
	struct hcclient_answer ans;
	struct hcapi_lb fresh;
	json_object *b;
	int r = 0;

	if (p->rename || p->record_before)
		r = hclb_put(x, lb, p->rename ? s->name : NULL, &p->before, e);
	if (r == 0 && p->change_type) {
		b = xcheck(json_object_new_object());
		json_object_object_add(b, "load_balancer_type", xcheck(json_object_new_string(s->type)));
		r = hclb_action(x, lb, "change_type", b, NULL, e);
	}
	if (r == 0 && p->change_algorithm) {
		b = xcheck(json_object_new_object());
		json_object_object_add(b, "type", xcheck(json_object_new_string(s->algorithm)));
		r = hclb_action(x, lb, "change_algorithm", b, NULL, e);
	}
	if (r == 0 && p->attach) {
		b = xcheck(json_object_new_object());
		json_object_object_add(b, "network", json_object_new_int64(s->network));
		if (s->private_ipv4[0])
			json_object_object_add(b, "ip", xcheck(json_object_new_string(s->private_ipv4)));
		r = hclb_action(x, lb, "attach_to_network", b, NULL, e);
	}
	if (r == 0 && p->public_iface == 1)
		r = hclb_action(x, lb, "enable_public_interface", NULL, NULL, e);
	for (size_t i = 0; r == 0 && i < p->n_delete; i++)
		r = hclb_action(x, lb, "delete_service", hclb_port_json(p->del[i]), NULL, e);
	for (size_t i = 0; r == 0 && i < p->n_update; i++)
		r = hclb_action(x, lb, "update_service", hclbspec_service_json(s,
		    hclb_spec_port(s, p->update[i]), 1), NULL, e);
	for (size_t i = 0; r == 0 && i < p->n_add; i++)
		r = hclb_action(x, lb, "add_service", hclbspec_service_json(s,
		    hclb_spec_port(s, p->add[i]), 0), NULL, e);
	for (size_t i = 0; r == 0 && i < p->n_sremove; i++) {
		b = hclb_target_json("label_selector", 0, p->sremove[i], 0);
		json_object_object_del(b, "use_private_ip");
		r = hclb_action(x, lb, "remove_target", b, NULL, e);
	}
	for (size_t i = 0; r == 0 && i < p->n_tremove; i++) {
		b = hclb_target_json("server", p->tremove[i], NULL, 0);
		json_object_object_del(b, "use_private_ip");
		r = hclb_action(x, lb, "remove_target", b, NULL, e);
	}
	if (r == 0 && p->selector_add)
		r = hclb_action(x, lb, "add_target", hclb_target_json("label_selector", 0,
		    s->selector_key, s->use_private_ip), NULL, e);
	for (size_t i = 0; r == 0 && i < p->n_tadd; i++) {
		r = hclb_action(x, lb, "add_target", hclb_target_json("server", p->tadd[i], NULL,
		    s->use_private_ip), &ans, e);
		if (r < 0 && strcmp(ans.code, "resource_limit_exceeded") == 0) {
			/* the type's limit, reached sooner than the answer said: the
			 * rest are left out, and forgotten from the record */
			for (size_t j = i; j < p->n_tadd; j++) {
				size_t k = 0;
				for (size_t m = 0; m < p->after.n_targets; m++)
					if (p->after.targets[m] != p->tadd[j])
						p->after.targets[k++] = p->after.targets[m];
				p->after.n_targets = k;
			}
			p->shortfall += p->n_tadd - i;
			p->record_after = 1;
			r = 0;
			break;
		}
	}
	if (r == 0 && p->public_iface == -1)
		r = hclb_action(x, lb, "disable_public_interface", NULL, NULL, e);
	if (r == 0 && p->record_after)
		r = hclb_put(x, lb, NULL, &p->after, e);
	if (r < 0)
		return r;
	/* read it again only when what the status is made of changed (the
	 * addresses): services and targets are not part of it */
	if (!p->attach && !p->public_iface && !p->change_type)
		return 0;
	if ((r = hclb_reload(x, lb->id, &fresh, e)) < 0)
		return r;
	hcapi_lb_free(lb);
	*lb = fresh;
	return 0;
}

/* hclb_reconcile plans and applies the changes *lb needs. */
static int
hclb_reconcile(struct hclb_ctx *x, struct hcapi_lb *lb, const int64_t *want, size_t n_want,
    size_t *ret_shortfall, struct errbuf *e)
{
	struct hclbplan p;
	int r = 0;

	hclbplan_make(&x->spec, lb, want, n_want, &p);
	if (!hclbplan_empty(&p))
		r = hclb_apply(x, lb, &p, e);
	if (r == 0 && p.foreign_port != 0)
		r = errbuf_set(e, ERR_PERMANENT, "Service %s: port %d of load balancer %s is a "
		    "service someone else added: bootccm leaves it alone, and the Service's port "
		    "%d is not served", x->name, p.foreign_port, lb->name, p.foreign_port);
	*ret_shortfall = p.shortfall;
	hclbplan_free(&p);
	return r;
}

/* hclb_shortfall reports backends left out for the type's limit: an error
 * the first time (the controller's Warning Event names the limit), then 0
 * while the limit stays exceeded. */
static int
hclb_shortfall(struct hclb_ctx *x, const struct hcapi_lb *lb, size_t shortfall,
    size_t wanted, struct errbuf *e)
{
	char sig[64], *old;
	int report = 0;

	/* once per limit: Nodes coming and going while it is exceeded are no
	 * news (a new type, or the limit met and exceeded again, are) */
	snprintf(sig, sizeof(sig), "%s/%" PRId64, lb->type, lb->max_targets);
	pthread_mutex_lock(&x->l->mu);
	old = hmap_get(&x->l->shortfalls, x->svc->uid);
	if (shortfall == 0) {
		free(hmap_delete(&x->l->shortfalls, x->svc->uid));
	} else if (old == NULL || strcmp(old, sig) != 0) {
		free(hmap_put(&x->l->shortfalls, x->svc->uid, xstrdup(sig)));
		report = 1;
	}
	pthread_mutex_unlock(&x->l->mu);
	if (!report)
		return 0;
	return errbuf_set(e, ERR_PERMANENT, "Service %s: load balancer %s (type %s) takes at "
	    "most %" PRId64 " targets: %zu of the Service's %zu backend servers are not its "
	    "targets; it serves with the others (a bigger type with the annotation %stype, or "
	    "fewer nodes with %snode-selector)", x->name, lb->name, lb->type, lb->max_targets,
	    shortfall, wanted, HCLBSPEC_PREFIX, HCLBSPEC_PREFIX);
}

/* hclb_sync brings the Service's balancer up to date: created when create
 * is set and there is none (*ret_exists 0 otherwise), its status in
 * *ret_status. */
static int
hclb_sync(struct hclb *l, const char *cluster, const struct cloud_service *svc,
    const struct cloud_node *nodes, size_t n_nodes, int create,
    struct cloud_lb_status *ret_status, int *ret_exists, struct errbuf *e)
{
	struct hclb_ctx x;
	struct hcapi_lb lb;
	int64_t *want = NULL, max = 0;
	size_t n_want = 0, shortfall = 0;
	int r;

	memset(&lb, 0, sizeof(lb));
	if ((r = hclb_ctx_init(&x, l, cluster, svc, e)) < 0)
		goto out;
	hclb_want(&x.spec, nodes, n_nodes, &want, &n_want);
	if ((r = hclb_find(&x, 1, &lb, e)) < 0)
		goto out;
	if (x.spec.node_selector != NULL && (r == 0 || create)) {
		int found = r;
		if ((r = hclb_select(&x, nodes, n_nodes, 0, e)) < 0)
			goto out;
		r = found;
	}
	if (r == 1 && !create) {
		*ret_exists = 0;
		r = 0;
		goto out;
	}
	if (r == 1) {
		if ((r = hclb_create(&x, want, n_want, &lb, &shortfall, &max, e)) < 0)
			goto out;
		if (x.spec.private_ipv4[0] && x.spec.use_private_ip)
			r = hclb_reconcile(&x, &lb, want, n_want, &shortfall, e);
	} else {
		r = hclb_reconcile(&x, &lb, want, n_want, &shortfall, e);
	}
	if (r < 0)
		goto out;
	if ((r = hclb_shortfall(&x, &lb, shortfall, n_want, e)) < 0)
		goto out;
	hclbspec_status(&x.spec, &lb, ret_status);
	*ret_exists = 1;
	if (x.spec.node_selector != NULL)
		hclb_selecting(l, svc->uid, x.spec.selector_key, 1);
out:
	if (r < 0 && x.have_spec)
		hclb_selecting(l, svc->uid, NULL, 0);
	hcapi_lb_free(&lb);
	free(want);
	hclb_ctx_free(&x);
	return r;
}

/* --- the operations ----------------------------------------------------------------- */

int
hclb_ensure(struct hclb *l, const char *cluster, const struct cloud_service *svc,
    const struct cloud_node *nodes, size_t n_nodes, struct cloud_lb_result *ret,
    struct errbuf *e)
{
	struct cloud_lb_status st;
	int exists = 0, r;

	if ((r = hclb_sync(l, cluster, svc, nodes, n_nodes, 1, &st, &exists, e)) < 0)
		return r;
	memset(ret, 0, sizeof(*ret));
	ret->status = st;
	return 0;
}

int
hclb_update_hosts(struct hclb *l, const char *cluster, const struct cloud_service *svc,
    const struct cloud_node *nodes, size_t n_nodes, struct errbuf *e)
{
	struct cloud_lb_status st;
	struct hclb_ctx x;
	int exists = 0, r;

	/* a node selector's balancer, known good: the Nodes are only the
	 * servers' labels (the drift check looks at the balancer itself) */
	if ((r = hclb_ctx_init(&x, l, cluster, svc, e)) == 0 && x.spec.node_selector != NULL &&
	    hclb_selecting(l, svc->uid, x.spec.selector_key, 0)) {
		r = hclb_select(&x, nodes, n_nodes, 1, e);
		if (r < 0)
			hclb_selecting(l, svc->uid, NULL, 0);
		hclb_ctx_free(&x);
		return r;
	}
	hclb_ctx_free(&x);
	if (r < 0)
		return r;
	/* a balancer that is gone is the drift check's to repair */
	return hclb_sync(l, cluster, svc, nodes, n_nodes, 0, &st, &exists, e);
}

int
hclb_get(struct hclb *l, const char *cluster, const struct cloud_service *svc,
    struct cloud_lb_status *ret_status, int *ret_exists, struct errbuf *e)
{
	struct hclb_ctx x;
	struct hcapi_lb lb;
	int r;

	if ((r = hclb_ctx_init(&x, l, cluster, svc, e)) < 0)
		goto out;
	if ((r = hclb_find(&x, 0, &lb, e)) < 0)
		goto out;
	if (r == 1) {
		*ret_exists = 0;
	} else {
		hclbspec_status(&x.spec, &lb, ret_status);
		*ret_exists = 1;
		hcapi_lb_free(&lb);
	}
	r = 0;
out:
	hclb_ctx_free(&x);
	return r;
}

int
hclb_ensure_deleted(struct hclb *l, const char *cluster, const struct cloud_service *svc,
    struct cloud_lb_result *ret, struct errbuf *e)
{
	struct hclb_ctx x;
	struct hcapi_lb lb;
	char path[64];
	int r;

	memset(&x, 0, sizeof(x));
	x.l = l;
	x.svc = svc;
	x.cluster = cluster;
	snprintf(x.name, sizeof(x.name), "%s/%s", svc->namespace_ ? svc->namespace_ : "",
	    svc->name ? svc->name : "");
	hclbspec_cluster_value(cluster, x.cv);
	memset(ret, 0, sizeof(*ret));
	if (svc->uid == NULL || *svc->uid == '\0')
		return 0;
	/* nothing of bootccm's: nothing to delete (someone else's stays) */
	if ((r = hclb_find(&x, 0, &lb, e)) != 0)
		return r > 0 ? 0 : r;
	pthread_mutex_lock(&l->mu);
	free(hmap_delete(&l->shortfalls, svc->uid));
	free(hmap_delete(&l->selecting, svc->uid));
	pthread_mutex_unlock(&l->mu);
	if (lb.protection_delete) {
		/* as the official CCM: a protected balancer is kept */
		hcapi_lb_free(&lb);
		return 0;
	}
	snprintf(path, sizeof(path), "/load_balancers/%" PRId64, lb.id);
	r = hcclient_do(l->c, "DELETE", path, NULL, NULL, NULL, e);
	if (r < 0 && r != ERR_NOT_FOUND)
		errbuf_prefix(e, r, "Service %s: deleting load balancer %s", x.name, lb.name);
	hcapi_lb_free(&lb);
	return r == ERR_NOT_FOUND ? 0 : r;
}

/* --- verify ------------------------------------------------------------------------- */

struct hclb_all {
	struct hcapi_lb *v;
	size_t n;
};

static int
hclb_all_item(json_object *item, const char *path, void *arg, struct errbuf *e)
{
	struct hclb_all *a = arg;
	int r;

	a->v = xreallocarray(a->v, a->n + 1, sizeof(*a->v));
	if ((r = hcapi_lb_parse(item, path, &a->v[a->n], e)) < 0)
		return r;
	a->n++;
	return 0;
}

static int
hclb_status_equal(const struct cloud_lb_status *a, const struct cloud_lb_status *b)
{
	if (b == NULL)
		return a->n_ingress == 0;
	if (a->n_ingress != b->n_ingress)
		return 0;
	for (size_t i = 0; i < a->n_ingress; i++) {
		const char *ma = a->ingress[i].ip_mode[0] ? a->ingress[i].ip_mode : "VIP";
		const char *mb = b->ingress[i].ip_mode[0] ? b->ingress[i].ip_mode : "VIP";
		if (strcmp(a->ingress[i].ip, b->ingress[i].ip) != 0 ||
		    strcmp(a->ingress[i].hostname, b->ingress[i].hostname) != 0 ||
		    (a->ingress[i].ip[0] && strcmp(ma, mb) != 0))
			return 0;
	}
	return 1;
}

/* hclb_selected_differ tells whether the selector target of lb resolves to
 * other servers than want (the server labels drifted). */
static int
hclb_selected_differ(const struct hclbspec *s, const struct hcapi_lb *lb, const int64_t *want,
    size_t n_want)
{
	for (size_t i = 0; i < lb->n_targets; i++) {
		const struct hcapi_lb_target *t = &lb->targets[i];
		size_t hit = 0;
		if (strcmp(t->type, "label_selector") != 0 || strcmp(t->selector, s->selector_key) != 0)
			continue;
		if (t->use_private_ip)   /* resolves only the servers in the network */
			return 0;
		for (size_t j = 0; j < n_want; j++)
			for (size_t k = 0; k < t->n_resolved; k++)
				hit += t->resolved[k] == want[j];
		return hit != n_want || t->n_resolved != n_want;
	}
	return 0;
}

int
hclb_verify(struct hclb *l, const char *cluster, const struct cloud_services *svcs,
    const struct cloud_node *nodes, size_t n_nodes, unsigned char *drifted, struct errbuf *e)
{
	char cv[HCLBSPEC_LABEL_VALUE_MAX + 1];
	struct hclb_all all = { NULL, 0 };
	struct dynbuf path;
	int r;

	hclbspec_cluster_value(cluster, cv);
	dynbuf_init(&path, 512);
	dynbuf_addstr(&path, "/load_balancers?label_selector=");
	hcclient_escape(&path, HCLBSPEC_LABEL_CLUSTER "=");
	hcclient_escape(&path, cv);
	r = hcclient_list(l->c, dynbuf_ptr(&path), "load_balancers", hclb_all_item, &all, e);
	dynbuf_free(&path);
	for (size_t i = 0; r == 0 && i < svcs->n; i++) {
		const struct cloud_service *svc = svcs->at(svcs->arg, i);
		struct hclb_ctx x;
		struct hcapi_lb *lb = NULL;
		struct cloud_lb_status st;
		struct hclbplan p;
		struct errbuf pe;
		int64_t *want = NULL;
		size_t n_want = 0;

		drifted[i] = 0;
		if (hclb_ctx_init(&x, l, cluster, svc, &pe) < 0) {
			/* the Service asks for nothing ensure could make */
			hclb_ctx_free(&x);
			continue;
		}
		for (size_t j = 0; j < all.n && lb == NULL; j++)
			if (hclbspec_ours(&all.v[j], svc->uid, cv))
				lb = &all.v[j];
		if (lb == NULL) {
			drifted[i] = 1;
			hclb_ctx_free(&x);
			continue;
		}
		hclb_want(&x.spec, nodes, n_nodes, &want, &n_want);
		hclbplan_make(&x.spec, lb, want, n_want, &p);
		hclbspec_status(&x.spec, lb, &st);
		drifted[i] = !hclbplan_empty(&p) || !hclb_status_equal(&st, svc->status) ||
		    (x.spec.node_selector != NULL && hclb_selected_differ(&x.spec, lb, want, n_want));
		hclbplan_free(&p);
		free(want);
		hclb_ctx_free(&x);
	}
	for (size_t j = 0; j < all.n; j++)
		hcapi_lb_free(&all.v[j]);
	free(all.v);
	if (r < 0)
		return errbuf_prefix(e, r, "verifying the load balancers");
	return 0;
}
