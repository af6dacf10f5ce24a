/* routectl.c - the route controller (contract in routectl.h). */
#include "controllers/routectl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "controllers/nodeview.h"
#include "base/hmap.h"
#include "base/jsonx.h"
#include "kube/client.h"
#include "kube/runner.h"
#include "kube/store.h"
#include "kube/workqueue.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/rfc3339.h"
#include "base/stop.h"
#include "base/xalloc.h"

#define ROUTECTL_QUEUE "route"
#define ROUTECTL_KEY "routes"                   /* the queue's one key: "a pass" */
#define ROUTECTL_SYNC_POLL_NS (200 * NS_PER_MS) /* stop checks while the cache syncs */
#define ROUTECTL_STACK_SIZE (256 * 1024)        /* bytes: the pass and operation threads */
/* bytes: a "node|cidr" key; a route's target is under CLOUD_ADDR_MAX */
#define ROUTECTL_KEY_MAX (CLOUD_ADDR_MAX + NETPREFIX_TEXT_MAX + 2)
#define ROUTECTL_RV_MAX 64                      /* bytes: a resourceVersion remembered */

#define ROUTECTL_EVENT_OUTSIDE "PodCIDROutsideClusterCIDR"
#define ROUTECTL_EVENT_CREATE_FAILED "FailedToCreateRoute"   /* upstream's */
#define ROUTECTL_MESSAGE_CREATED "RouteController created a route"   /* upstream's */
#define ROUTECTL_MESSAGE_NOT_CREATED "RouteController failed to create a route"
/* route_controller_route_sync_total's label values (upstream's) */
#define ROUTECTL_TRIGGER_NODE "node_change"
#define ROUTECTL_TRIGGER_PERIODIC "periodic"
#define ROUTECTL_OUTCOME_CHANGED "changed"
#define ROUTECTL_OUTCOME_NOOP "noop"
#define ROUTECTL_OUTCOME_ERROR "error"

/* A condition this controller wrote, by Node name, until the cache shows
 * a version of the Node other than those the write went over: the cached
 * one the pass saw, and the one it read fresh (the same on the cached way). */
struct routectl_written {
	char rv[2][ROUTECTL_RV_MAX];
	int routed;
};

struct routectl {
	struct routectl_config cfg;     /* strings point at the copies below */
	char *cluster_name;
	char *cluster_cidr;
	char *user_agent;
	struct netprefix cidrs[ROUTECTL_CIDRS_MAX];
	size_t ncidrs;

	/* the schedule, shared with the reflector's handlers */
	pthread_mutex_t mu;
	struct wq *q;                   /* while running (mu); NULL otherwise */
	int armed;                      /* the first pass is under way: events count (mu) */
	int in_pass;                    /* (mu) */
	int event_pending;              /* an event asked for a pass (mu) */
	int node_change;                /* a Node's event among them (mu) */
	int64_t event_after_ns;         /* no event-triggered pass before (mu) */
	int64_t next_pass_ns;           /* the periodic pass is due (mu) */

	/* one run, from routectl_start to routectl_stop */
	struct wq *run_q;               /* the pass thread's view of q */
	struct runner *run;             /* the pass thread; NULL when stopped */
	struct stop stop;               /* aborts the client's retries, ends the
	                                   operations not yet begun */
	struct kube_client client;      /* the pass thread's */

	/* the pass thread's alone */
	struct hmap warned;             /* "node|podCIDR" warned as never routed */
	struct hmap written;            /* node -> struct routectl_written */
	int warned_list;                /* warned for the current run of failed lists */
	int first;                      /* the run's first pass is yet to come */
};

static struct metric *routectl_m_syncs;
static struct metric *routectl_m_ops;
static struct metric *routectl_m_pass;
static pthread_once_t routectl_metrics_once = PTHREAD_ONCE_INIT;
static char routectl_mark[] = "";   /* a non-NULL value for set-like maps */

static void
routectl_metrics_init(void)
{
	routectl_m_syncs = metrics_counter("route_controller_route_sync_total",
	    "Passes of the route controller (routes synced with the cloud provider), by what "
	    "asked for the pass (node_change: a Node added, deleted, or its podCIDRs or "
	    "addresses changed; periodic: the reconciliation period) and by outcome (error: "
	    "the routes could not be listed; changed: a route was created or deleted; noop: "
	    "neither).", "outcome,trigger");
	routectl_m_ops = metrics_counter("bootccm_route_operations_total",
	    "Route operations asked of the cloud provider, by operation (create, delete) "
	    "and result (success, error).", "operation,result");
	routectl_m_pass = metrics_histogram("bootccm_route_pass_duration_seconds",
	    "Time one completed pass of the route controller took (listing, deletes, "
	    "creates and Node conditions).", NULL, metrics_buckets_latency,
	    metrics_buckets_latency_n);
}

/* --- the pure parts -------------------------------------------------------- */

/* routectl_trim narrows [*b, *b + *len) to its text without spaces around. */
static void
routectl_trim(const char **b, size_t *len)
{
	while (*len > 0 && (**b == ' ' || **b == '\t')) {
		(*b)++;
		(*len)--;
	}
	while (*len > 0 && ((*b)[*len - 1] == ' ' || (*b)[*len - 1] == '\t'))
		(*len)--;
}

int
routectl_cidrs_parse(const char *s, struct netprefix out[ROUTECTL_CIDRS_MAX],
    size_t *ret_n, struct errbuf *e)
{
	struct netprefix p[ROUTECTL_CIDRS_MAX];
	char one[NETPREFIX_TEXT_MAX + 8];
	const char *b = s ? s : "";
	size_t n = 0, len = strlen(b);

	routectl_trim(&b, &len);
	if (len == 0)
		return errbuf_set(e, ERR_INVALID, "--cluster-cidr is empty: the route controller "
		    "needs the cluster's pod CIDRs");
	for (;;) {
		const char *comma = memchr(b, ',', len), *item = b;
		size_t l = comma ? (size_t)(comma - b) : len;

		if (n == ROUTECTL_CIDRS_MAX)
			return errbuf_set(e, ERR_INVALID, "--cluster-cidr \"%.200s\": at most %d "
			    "CIDRs, one per IP family", s, ROUTECTL_CIDRS_MAX);
		b += comma ? l + 1 : l;
		len -= comma ? l + 1 : l;
		routectl_trim(&item, &l);
		if (l == 0 || l >= sizeof(one))
			return errbuf_set(e, ERR_INVALID, "--cluster-cidr \"%.200s\": \"%.*s\" is "
			    "not a CIDR", s, (int)(l < 64 ? l : 64), item);
		memcpy(one, item, l);
		one[l] = '\0';
		if (netprefix_parse(one, 0, &p[n]) < 0)
			return errbuf_set(e, ERR_INVALID, "--cluster-cidr \"%.200s\": \"%s\" is not "
			    "a CIDR", s, one);
		n++;
		if (comma == NULL)
			break;
	}
	if (n == 2 && p[0].addr.family == p[1].addr.family)
		return errbuf_set(e, ERR_INVALID, "--cluster-cidr \"%.200s\": two CIDRs must be "
		    "one IPv4 and one IPv6 (dual-stack)", s);
	memcpy(out, p, n * sizeof(p[0]));
	*ret_n = n;
	return 0;
}

int
routectl_responsible(const struct netprefix *cidrs, size_t n, const struct netprefix *dest)
{
	struct netaddr last;

	netprefix_last(dest, &last);
	for (size_t i = 0; i < n; i++)
		if (netprefix_contains(&cidrs[i], &dest->addr) || netprefix_contains(&cidrs[i], &last))
			return 1;
	return 0;
}

/* routectl_key writes "node|cidr" with the CIDR in canonical form. */
static void
routectl_key(char buf[ROUTECTL_KEY_MAX], const char *node, const struct netprefix *p)
{
	char t[NETPREFIX_TEXT_MAX];

	netprefix_format(p, t);
	snprintf(buf, ROUTECTL_KEY_MAX, "%s|%s", node, t);
}

/* routectl_want_state classifies one podCIDR s of the Node called name;
 * *ret_p gets it parsed when it is routable. */
static enum routectl_want_state
routectl_want_state(const struct netprefix *cidrs, size_t ncidrs, const char *name,
    const char *s, struct netprefix *ret_p)
{
	if (s == NULL || strlen(s) >= CLOUD_CIDR_MAX || strlen(name) >= CLOUD_ADDR_MAX ||
	    netprefix_parse(s, 0, ret_p) < 0)
		return ROUTECTL_WANT_INVALID;
	return routectl_responsible(cidrs, ncidrs, ret_p) ? ROUTECTL_WANT_CREATE :
	    ROUTECTL_WANT_OUTSIDE;
}

void
routectl_plan(const struct netprefix *cidrs, size_t ncidrs,
    const struct kube_node *const *nodes, size_t n, const struct cloud_route *routes,
    size_t nroutes, struct routectl_plan *ret)
{
	struct hmap have, want, targets;
	struct netprefix *rp = xcalloc(nroutes ? nroutes : 1, sizeof(*rp));
	unsigned char *rok = xcalloc(nroutes ? nroutes : 1, 1);
	char key[ROUTECTL_KEY_MAX];
	size_t total = 0, i, k;

	memset(ret, 0, sizeof(*ret));
	hmap_init(&have, HMAP_COPY_KEYS);
	hmap_init(&want, HMAP_COPY_KEYS);
	hmap_init(&targets, HMAP_COPY_KEYS);
	/* the routes that exist: blackholed ones do not count */
	for (i = 0; i < nroutes; i++) {
		const struct cloud_route *r = &routes[i];
		hmap_put(&targets, r->target_node, routectl_mark);
		if (netprefix_parse(r->destination_cidr, 0, &rp[i]) < 0)
			continue;
		rok[i] = 1;
		if (!r->blackhole && r->target_node[0] != '\0') {
			routectl_key(key, r->target_node, &rp[i]);
			hmap_put(&have, key, routectl_mark);
		}
	}
	/* what every Node wants */
	for (i = 0; i < n; i++)
		total += nodes[i]->npod_cidrs;
	ret->nnodes = n;
	ret->wants = xcalloc(total ? total : 1, sizeof(*ret->wants));
	ret->node_first = xcalloc(n + 1, sizeof(*ret->node_first));
	ret->targeted = xcalloc(n ? n : 1, 1);
	for (i = 0; i < n; i++) {
		const struct kube_node *nd = nodes[i];
		ret->node_first[i] = ret->nwants;
		ret->targeted[i] = hmap_get(&targets, nd->name) != NULL;
		for (k = 0; k < nd->npod_cidrs; k++) {
			struct netprefix p;
			enum routectl_want_state st = routectl_want_state(cidrs, ncidrs, nd->name,
			    nd->pod_cidrs[k], &p);
			if (st == ROUTECTL_WANT_CREATE) {
				routectl_key(key, nd->name, &p);
				if (hmap_get(&want, key) != NULL)
					continue;  /* the same CIDR twice: one route */
				hmap_put(&want, key, routectl_mark);
				if (hmap_get(&have, key) != NULL)
					st = ROUTECTL_WANT_EXISTS;
			}
			ret->wants[ret->nwants].node = i;
			ret->wants[ret->nwants].cidr = k;
			ret->wants[ret->nwants].state = st;
			ret->nwants++;
		}
	}
	ret->node_first[n] = ret->nwants;
	/* what becomes of each route */
	ret->verdicts = xcalloc(nroutes ? nroutes : 1, sizeof(*ret->verdicts));
	for (i = 0; i < nroutes; i++) {
		enum routectl_route_verdict v = ROUTECTL_ROUTE_DELETE;
		if (!rok[i]) {
			v = ROUTECTL_ROUTE_UNPARSABLE;
		} else if (!routectl_responsible(cidrs, ncidrs, &rp[i])) {
			v = ROUTECTL_ROUTE_FOREIGN;
		} else if (!routes[i].blackhole) {
			routectl_key(key, routes[i].target_node, &rp[i]);
			if (hmap_get(&want, key) != NULL)
				v = ROUTECTL_ROUTE_KEEP;
		}
		ret->verdicts[i] = v;
	}
	hmap_free(&have, NULL);
	hmap_free(&want, NULL);
	hmap_free(&targets, NULL);
	free(rp);
	free(rok);
}

void
routectl_plan_free(struct routectl_plan *p)
{
	free(p->wants);
	free(p->node_first);
	free(p->verdicts);
	free(p->targeted);
	memset(p, 0, sizeof(*p));
}

int
routectl_node_routed(const struct routectl_plan *p, size_t i)
{
	size_t a = p->node_first[i], b = p->node_first[i + 1];

	if (a == b)
		return p->targeted[i] ? 0 : -1;
	for (; a < b; a++)
		if (p->wants[a].state != ROUTECTL_WANT_EXISTS &&
		    p->wants[a].state != ROUTECTL_WANT_CREATED)
			return 0;
	return 1;
}

enum routectl_cond
routectl_condition_decide(enum kube_node_ready status, const char *reason, int routed)
{
	const char *want = routed ? ROUTECTL_REASON_CREATED : ROUTECTL_REASON_NOT_CREATED;

	if (status == KUBE_NODE_READY_NONE)
		return ROUTECTL_COND_SET;
	if (reason == NULL || (strcmp(reason, ROUTECTL_REASON_CREATED) != 0 &&
	    strcmp(reason, ROUTECTL_REASON_NOT_CREATED) != 0))
		return ROUTECTL_COND_FOREIGN;
	if (status == (routed ? KUBE_NODE_READY_FALSE : KUBE_NODE_READY_TRUE) &&
	    strcmp(reason, want) == 0)
		return ROUTECTL_COND_KEEP;
	return ROUTECTL_COND_SET;
}

/* routectl_condition_json is the condition for routed at now_s; the
 * transition time is transition (borrowed) or now. */
static json_object *
routectl_condition_json(int routed, int64_t now_s, const char *transition)
{
	json_object *o = xcheck(json_object_new_object());
	char now[RFC3339_MAX] = "";

	rfc3339_format(now_s, now, sizeof(now));
	json_object_object_add(o, "type", xcheck(json_object_new_string(ROUTECTL_CONDITION)));
	json_object_object_add(o, "status", xcheck(json_object_new_string(routed ? "False" :
	    "True")));
	json_object_object_add(o, "reason", xcheck(json_object_new_string(routed ?
	    ROUTECTL_REASON_CREATED : ROUTECTL_REASON_NOT_CREATED)));
	json_object_object_add(o, "message", xcheck(json_object_new_string(routed ?
	    ROUTECTL_MESSAGE_CREATED : ROUTECTL_MESSAGE_NOT_CREATED)));
	json_object_object_add(o, "lastTransitionTime", xcheck(json_object_new_string(
	    transition ? transition : now)));
	json_object_object_add(o, "lastHeartbeatTime", xcheck(json_object_new_string(now)));
	return o;
}

/* routectl_op appends one JSON patch operation to ops. */
static void
routectl_op(json_object *ops, const char *op, const char *path, json_object *value)
{
	json_object *o = xcheck(json_object_new_object());

	json_object_object_add(o, "op", xcheck(json_object_new_string(op)));
	json_object_object_add(o, "path", xcheck(json_object_new_string(path)));
	json_object_object_add(o, "value", value);
	json_object_array_add(ops, o);
}

/* routectl_status_of reads a condition's status like the Node cache does. */
static enum kube_node_ready
routectl_status_of(const char *st)
{
	if (st == NULL)
		return KUBE_NODE_READY_UNKNOWN;
	return strcmp(st, "True") == 0 ? KUBE_NODE_READY_TRUE :
	    strcmp(st, "False") == 0 ? KUBE_NODE_READY_FALSE : KUBE_NODE_READY_UNKNOWN;
}

int
routectl_condition_patch(json_object *node, int routed, int64_t now_s,
    json_object **ret_ops, struct errbuf *e)
{
	json_object *md = NULL, *status = NULL, *conds = NULL, *ops, *value;
	const char *name = NULL, *st = NULL, *reason = NULL, *ltt = NULL;
	size_t n = 0, i, at = (size_t)-1;
	char path[64];
	int r;

	if ((r = jsonx_object(node, "", "metadata", 0, &md, e)) < 0 ||
	    (md && (r = jsonx_str(md, "metadata", "name", 0, &name, NULL, e)) < 0))
		return errbuf_prefix(e, r, "node");
	if ((r = jsonx_object(node, "", "status", 0, &status, e)) < 0 ||
	    (status && (r = jsonx_array(status, "status", "conditions", 0, &conds, &n, e)) < 0))
		goto fail;
	for (i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(conds, i);
		const char *type;
		snprintf(path, sizeof(path), "status.conditions[%zu]", i);
		if (!json_object_is_type(c, json_type_object)) {
			r = errbuf_set(e, ERR_INVALID, "%s: expected an object", path);
			goto fail;
		}
		if ((r = jsonx_str(c, path, "type", 0, &type, NULL, e)) < 0)
			goto fail;
		if (type == NULL || strcmp(type, ROUTECTL_CONDITION) != 0)
			continue;
		if ((r = jsonx_str(c, path, "status", 0, &st, NULL, e)) < 0 ||
		    (r = jsonx_str(c, path, "reason", 0, &reason, NULL, e)) < 0 ||
		    (r = jsonx_str(c, path, "lastTransitionTime", 0, &ltt, NULL, e)) < 0)
			goto fail;
		at = i;
		break;
	}
	if (routectl_condition_decide(at == (size_t)-1 ? KUBE_NODE_READY_NONE :
	    routectl_status_of(st), reason, routed) != ROUTECTL_COND_SET)
		return KUBE_PATCH_NOOP;
	/* the transition time moves only with the status */
	if (at == (size_t)-1 || st == NULL || strcmp(st, routed ? "False" : "True") != 0)
		ltt = NULL;
	value = routectl_condition_json(routed, now_s, ltt);
	ops = xcheck(json_object_new_array());
	if (at != (size_t)-1) {
		snprintf(path, sizeof(path), "/status/conditions/%zu", at);
		routectl_op(ops, "replace", path, value);
	} else if (conds != NULL) {
		routectl_op(ops, "add", "/status/conditions/-", value);
	} else {
		json_object *arr = xcheck(json_object_new_array());
		json_object_array_add(arr, value);
		if (status != NULL) {
			routectl_op(ops, "add", "/status/conditions", arr);
		} else {
			json_object *s = xcheck(json_object_new_object());
			json_object_object_add(s, "conditions", arr);
			routectl_op(ops, "add", "/status", s);
		}
	}
	*ret_ops = ops;
	return KUBE_PATCH_JSON;
fail:
	return errbuf_prefix(e, r, "node \"%.253s\"", name ? name : "");
}

/* routectl_strs_equal compares two string lists. */
static int
routectl_strs_equal(const char *const *a, size_t na, const char *const *b, size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++)
		if ((a[i] == NULL) != (b[i] == NULL) || (a[i] && strcmp(a[i], b[i]) != 0))
			return 0;
	return 1;
}

int
routectl_node_triggers(const struct kube_node *old_node, const struct kube_node *new_node)
{
	const struct kube_node *o = old_node, *n = new_node;

	if ((o == NULL || o->npod_cidrs == 0) && (n == NULL || n->npod_cidrs == 0))
		return 0;
	if (o == NULL || n == NULL)
		return 1;
	if (!routectl_strs_equal(o->pod_cidrs, o->npod_cidrs, n->pod_cidrs, n->npod_cidrs) ||
	    o->naddresses != n->naddresses)
		return 1;
	for (size_t i = 0; i < o->naddresses; i++) {
		const char *a[2] = { o->addresses[i].type, o->addresses[i].address };
		const char *b[2] = { n->addresses[i].type, n->addresses[i].address };
		if (!routectl_strs_equal(a, 2, b, 2))
			return 1;
	}
	return 0;
}

/* --- one pass -------------------------------------------------------------- */

static int
routectl_stopping(struct routectl *c)
{
	return stop_requested(&c->stop);
}

/* The provider's listing, copied. */
struct routectl_listing {
	struct cloud_route *v;
	size_t n, cap;
	int too_many;
};

static int
routectl_list_cb(const struct cloud_route *route, void *arg)
{
	struct routectl_listing *l = arg;
	struct cloud_route *r;

	if (l->n == ROUTECTL_ROUTES_MAX) {
		l->too_many = 1;
		return ERR_TOO_LARGE;
	}
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
	}
	r = &l->v[l->n++];
	*r = *route;
	/* a provider's unterminated field ends here, not past the struct */
	r->name[sizeof(r->name) - 1] = '\0';
	r->target_node[sizeof(r->target_node) - 1] = '\0';
	r->destination_cidr[sizeof(r->destination_cidr) - 1] = '\0';
	return 0;
}

/* One phase of provider calls (deletes or creates), shared by its threads. */
struct routectl_phase {
	struct routectl *c;
	void (*fn)(struct routectl_phase *ph, size_t i);
	size_t n;                       /* operations */
	size_t next;                    /* the next operation to start (atomic) */
	size_t *idx;                    /* operation i: routes[idx[i]] or wants[idx[i]] */
	const struct cloud_route *routes;
	struct routectl_plan *plan;
	const struct kube_node *const *nodes;
	struct nodeview *views;         /* per Node (creates) */
	size_t done;                    /* operations that succeeded (atomic) */
};

static void *
routectl_phase_thread(void *arg)
{
	struct routectl_phase *ph = arg;
	size_t i;

	while (!routectl_stopping(ph->c) &&
	    (i = __atomic_fetch_add(&ph->next, 1, __ATOMIC_RELAXED)) < ph->n)
		ph->fn(ph, i);
	return NULL;
}

/* routectl_phase_run runs ph's operations on at most cfg.concurrency
 * threads at once (each takes the next operation when it is done with
 * one), and returns when all have ended. */
static void
routectl_phase_run(struct routectl_phase *ph)
{
	size_t want = (size_t)ph->c->cfg.concurrency, started = 0, i;
	pthread_attr_t attr;
	pthread_t *t;

	if (ph->n == 0)
		return;
	if (want > ph->n)
		want = ph->n;
	t = xcalloc(want, sizeof(*t));
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, ROUTECTL_STACK_SIZE);
	for (; started < want; started++)
		if (pthread_create(&t[started], &attr, routectl_phase_thread, ph) != 0)
			break;
	pthread_attr_destroy(&attr);
	if (started == 0)
		routectl_phase_thread(ph);  /* no thread to be had: one at a time */
	for (i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	free(t);
}

static void
routectl_node_ref(const struct kube_node *n, struct events_ref *ref)
{
	memset(ref, 0, sizeof(*ref));
	ref->kind = "Node";
	ref->name = n->name;
	ref->uid = n->obj.uid;
	ref->api_version = "v1";
}

static void
routectl_delete_one(struct routectl_phase *ph, size_t i)
{
	struct routectl *c = ph->c;
	const struct cloud_route *r = &ph->routes[ph->idx[i]];
	struct errbuf e = { "" };
	int rc;

	rc = c->cfg.provider->routes->delete_(c->cfg.provider_state, c->cluster_name, r, &e);
	metric_add(routectl_m_ops, 1, "delete", rc < 0 ? "error" : "success");
	if (rc < 0) {
		log_warn("Could not delete route", "route", r->name, "cidr", r->destination_cidr,
		    "node", r->target_node, "err", e.msg, NULL);
		return;
	}
	__atomic_fetch_add(&ph->done, 1, __ATOMIC_RELAXED);
	log_info(0, "Deleted route", "route", r->name, "cidr", r->destination_cidr,
	    "node", r->target_node, "blackhole", r->blackhole ? "true" : "false", NULL);
}

static void
routectl_create_one(struct routectl_phase *ph, size_t i)
{
	struct routectl *c = ph->c;
	struct routectl_want *w = &ph->plan->wants[ph->idx[i]];
	const struct kube_node *n = ph->nodes[w->node];
	const char *cidr = n->pod_cidrs[w->cidr];
	struct cloud_route r;
	struct events_ref ref;
	struct errbuf e = { "" };
	int rc;

	/* both fit: routectl_want_state checked them */
	memset(&r, 0, sizeof(r));
	memcpy(r.target_node, n->name, strlen(n->name) + 1);
	memcpy(r.destination_cidr, cidr, strlen(cidr) + 1);
	rc = c->cfg.provider->routes->create(c->cfg.provider_state, c->cluster_name,
	    n->obj.uid, &r, &ph->views[w->node].node, &e);
	metric_add(routectl_m_ops, 1, "create", rc < 0 ? "error" : "success");
	if (rc == 0) {
		w->state = ROUTECTL_WANT_CREATED;
		__atomic_fetch_add(&ph->done, 1, __ATOMIC_RELAXED);
		log_info(0, "Created route", "node", n->name, "cidr", cidr, NULL);
		return;
	}
	w->state = ROUTECTL_WANT_FAILED;
	log_warn("Could not create route", "node", n->name, "cidr", cidr, "err", e.msg, NULL);
	routectl_node_ref(n, &ref);
	events_recordf(c->cfg.events, &ref, EVENTS_WARNING, ROUTECTL_EVENT_CREATE_FAILED,
	    "Could not create route %s for node %s: %s", cidr, n->name, e.msg);
}

/* routectl_deletes deletes the routes the plan condemns; returns how many
 * it deleted. */
static size_t
routectl_deletes(struct routectl *c, struct routectl_plan *plan,
    const struct cloud_route *routes, size_t nroutes)
{
	struct routectl_phase ph = {
		.c = c, .fn = routectl_delete_one, .routes = routes, .plan = plan,
	};

	ph.idx = xcalloc(nroutes ? nroutes : 1, sizeof(*ph.idx));
	for (size_t i = 0; i < nroutes; i++)
		if (plan->verdicts[i] == ROUTECTL_ROUTE_DELETE)
			ph.idx[ph.n++] = i;
	routectl_phase_run(&ph);
	free(ph.idx);
	return ph.done;
}

/* routectl_creates creates the missing routes, each with its target Node;
 * returns how many it created. */
static size_t
routectl_creates(struct routectl *c, struct routectl_plan *plan,
    const struct kube_node *const *nodes, size_t n)
{
	struct routectl_phase ph = {
		.c = c, .fn = routectl_create_one, .plan = plan, .nodes = nodes,
	};
	unsigned char *viewed = xcalloc(n ? n : 1, 1);
	size_t i;

	ph.idx = xcalloc(plan->nwants ? plan->nwants : 1, sizeof(*ph.idx));
	ph.views = xcalloc(n ? n : 1, sizeof(*ph.views));
	for (i = 0; i < plan->nwants; i++) {
		size_t nd = plan->wants[i].node;
		if (plan->wants[i].state != ROUTECTL_WANT_CREATE)
			continue;
		ph.idx[ph.n++] = i;
		if (!viewed[nd])
			nodeview_init(&ph.views[nd], nodes[nd]);
		viewed[nd] = 1;
	}
	routectl_phase_run(&ph);
	/* a stop left some not begun: they did not happen */
	for (i = 0; i < ph.n; i++)
		if (plan->wants[ph.idx[i]].state == ROUTECTL_WANT_CREATE)
			plan->wants[ph.idx[i]].state = ROUTECTL_WANT_FAILED;
	for (i = 0; i < n; i++)
		if (viewed[i])
			nodeview_free(&ph.views[i]);
	free(ph.views);
	free(ph.idx);
	free(viewed);
	return ph.done;
}

/* routectl_report logs the routes left alone for an unreadable destination,
 * and warns once per Node and podCIDR that is never routed (an Event for
 * one outside the cluster CIDRs). The warned set keeps only what this pass
 * saw, so a podCIDR that comes back is warned of again. */
static void
routectl_report(struct routectl *c, const struct routectl_plan *plan,
    const struct kube_node *const *nodes, const struct cloud_route *routes, size_t nroutes)
{
	struct hmap seen;
	char key[ROUTECTL_KEY_MAX + CLOUD_CIDR_MAX];

	for (size_t i = 0; i < nroutes; i++)
		if (plan->verdicts[i] == ROUTECTL_ROUTE_UNPARSABLE)
			log_info(2, "Ignoring route: its destination is not a CIDR", "route",
			    routes[i].name, "cidr", routes[i].destination_cidr, NULL);
	hmap_init(&seen, HMAP_COPY_KEYS);
	for (size_t i = 0; i < plan->nwants; i++) {
		const struct routectl_want *w = &plan->wants[i];
		const struct kube_node *n = nodes[w->node];
		const char *cidr = n->pod_cidrs[w->cidr] ? n->pod_cidrs[w->cidr] : "";
		struct events_ref ref;

		if (w->state != ROUTECTL_WANT_OUTSIDE && w->state != ROUTECTL_WANT_INVALID)
			continue;
		snprintf(key, sizeof(key), "%s|%s", n->name, cidr);
		if (hmap_get(&seen, key) != NULL)
			continue;
		hmap_put(&seen, key, routectl_mark);
		if (hmap_get(&c->warned, key) != NULL)
			continue;
		if (w->state == ROUTECTL_WANT_INVALID) {
			log_warn("Node podCIDR is not a usable CIDR: no route for it", "node", n->name,
			    "podCIDR", cidr, NULL);
			continue;
		}
		log_warn("Node podCIDR is outside every cluster CIDR: no route for it; correct "
		    "--cluster-cidr or the podCIDR", "node", n->name, "podCIDR", cidr,
		    "clusterCIDR", c->cluster_cidr, NULL);
		routectl_node_ref(n, &ref);
		events_recordf(c->cfg.events, &ref, EVENTS_WARNING, ROUTECTL_EVENT_OUTSIDE,
		    "podCIDR %s of node %s is outside every cluster CIDR (--cluster-cidr %s): no "
		    "route is created for it; correct --cluster-cidr or the node's podCIDR",
		    cidr, n->name, c->cluster_cidr);
	}
	hmap_free(&c->warned, NULL);
	c->warned = seen;
}

/* One routectl_condition_fresh: its arguments and the version read. */
struct routectl_fresh {
	struct routectl *c;
	const char *name, *path, *status_path;
	int routed;
	int64_t now_s;
	char *ret_rv;
};

/* routectl_fresh_attempt reads the Node and patches its condition behind
 * the version read. */
static int
routectl_fresh_attempt(int attempt, void *arg, struct errbuf *e)
{
	struct routectl_fresh *f = arg;
	json_object *cur = NULL, *md, *ops = NULL;
	const char *rv = NULL;
	int r;

	(void)attempt;
	if ((r = kube_request(&f->c->client, "GET", f->path, NULL, NULL, &cur, NULL, e)) < 0)
		return r;
	if ((r = jsonx_object(cur, "", "metadata", JSONX_REQUIRED, &md, e)) < 0 ||
	    (r = jsonx_str(md, "metadata", "resourceVersion", JSONX_REQUIRED, &rv, NULL,
	    e)) < 0) {
		errbuf_prefix(e, r, "node %s", f->name);
	} else if (strlen(rv) >= ROUTECTL_RV_MAX) {
		r = errbuf_set(e, ERR_INVALID, "node %s: metadata.resourceVersion is longer "
		    "than %d bytes", f->name, ROUTECTL_RV_MAX - 1);
	} else if ((r = routectl_condition_patch(cur, f->routed, f->now_s, &ops, e)) ==
	    KUBE_PATCH_JSON) {
		r = kube_patch_json(&f->c->client, f->status_path, ops, rv, NULL, NULL, e);
	} else if (r == KUBE_PATCH_NOOP) {
		r = 0;  /* as wanted already, or another component's now */
	}
	if (r == 0)
		memcpy(f->ret_rv, rv, strlen(rv) + 1);
	json_object_put(ops);
	json_object_put(cur);
	return r;
}

/* routectl_condition_fresh writes the condition from a fresh read of the
 * Node: GET nodes/NAME (the status subresource's GET would need a grant
 * the role does not otherwise use), then the JSON patch of nodes/NAME/status
 * behind the resourceVersion read; a conflict reads again
 * (kube_retry_on_conflict, without its log line). On 0 (written, or nothing
 * to write), ret_rv gets the version read. */
static int
routectl_condition_fresh(struct routectl *c, const char *name, const char *status_path,
    int routed, int64_t now_s, char ret_rv[ROUTECTL_RV_MAX], struct errbuf *e)
{
	struct routectl_fresh f = {
		.c = c, .name = name, .status_path = status_path, .routed = routed,
		.now_s = now_s, .ret_rv = ret_rv,
	};
	char *path = NULL;
	int r;

	if ((r = kube_path(&path, "/api/v1", NULL, "nodes", name, NULL, NULL)) < 0)
		return errbuf_set(e, r, "node %s: no path for it", name);
	f.path = path;
	r = kube_retry_on_conflict(&c->stop, NULL, routectl_fresh_attempt, &f, e);
	free(path);
	return r;
}

/* routectl_condition writes n's NetworkUnavailable condition when it is
 * absent or ours and not as routed says. A condition this controller wrote
 * that the cache does not show yet (c->written: the cached version is one
 * the write went over) counts as written, so a pass that runs before the
 * watch delivers the write neither repeats it nor sends a patch bound to
 * fail its precondition. kept gets the marks still needed. */
static void
routectl_condition(struct routectl *c, const struct kube_node *n, int routed,
    struct hmap *kept)
{
	struct routectl_written *m = hmap_delete(&c->written, n->name);
	const char *rv = n->obj.resource_version;
	int64_t now_s = clock_real_ns() / NS_PER_S;
	char fresh_rv[ROUTECTL_RV_MAX] = "";
	struct errbuf e = { "" };
	enum routectl_cond d;
	char *path = NULL;
	int r, behind;

	if (m != NULL && strcmp(m->rv[0], rv) != 0 && strcmp(m->rv[1], rv) != 0) {
		free(m);   /* the cache has caught up */
		m = NULL;
	}
	if (m != NULL && m->routed == routed) {
		hmap_put(kept, n->name, m);
		return;
	}
	behind = m != NULL;
	free(m);
	d = behind ? ROUTECTL_COND_SET : routectl_condition_decide(n->network_unavailable,
	    n->network_unavailable_reason, routed);
	if (d == ROUTECTL_COND_FOREIGN)
		log_info(4, "NetworkUnavailable is another component's: left alone", "node",
		    n->name, "reason", n->network_unavailable_reason ?
		    n->network_unavailable_reason : "", NULL);
	if (d != ROUTECTL_COND_SET)
		return;
	if ((r = kube_path(&path, "/api/v1", NULL, "nodes", n->name, "status", NULL)) < 0) {
		log_warn("Cannot update NetworkUnavailable: no path for the node", "node", n->name,
		    NULL);
		return;
	}
	/* no condition yet (a new Node): append it behind the cached version,
	 * no read needed; a conflict, or no conditions list at all, takes the
	 * read-and-patch way */
	r = ERR_CONFLICT;
	if (!behind && n->network_unavailable == KUBE_NODE_READY_NONE && rv[0] != '\0' &&
	    strlen(rv) < sizeof(fresh_rv)) {
		json_object *ops = xcheck(json_object_new_array());
		routectl_op(ops, "add", "/status/conditions/-",
		    routectl_condition_json(routed, now_s, NULL));
		r = kube_patch_json(&c->client, path, ops, rv, NULL, NULL, &e);
		json_object_put(ops);
		if (r == 0)
			memcpy(fresh_rv, rv, strlen(rv) + 1);
	}
	if (r == ERR_CONFLICT || r == ERR_INVALID)
		r = routectl_condition_fresh(c, n->name, path, routed, now_s, fresh_rv, &e);
	if (r == 0) {
		m = xcalloc(1, sizeof(*m));
		snprintf(m->rv[0], sizeof(m->rv[0]), "%s", rv);
		memcpy(m->rv[1], fresh_rv, sizeof(m->rv[1]));
		m->routed = routed;
		free(hmap_put(kept, n->name, m));
		log_info(2, "Set NetworkUnavailable", "node", n->name, "status", routed ? "False" :
		    "True", "reason", routed ? ROUTECTL_REASON_CREATED :
		    ROUTECTL_REASON_NOT_CREATED, NULL);
	} else if (r == ERR_NOT_FOUND) {
		log_info(2, "Node gone before its condition was written", "node", n->name, NULL);
	} else if (!routectl_stopping(c)) {
		log_warn("Cannot update NetworkUnavailable", "node", n->name, "err", e.msg, NULL);
	}
	free(path);
}

/* routectl_list_failed warns once for a run of passes whose listing
 * failed: nothing was created, deleted or written. */
static void
routectl_list_failed(struct routectl *c, const struct errbuf *e)
{
	if (c->warned_list) {
		log_info(2, "Cannot list routes; nothing changed this pass", "err", e->msg, NULL);
		return;
	}
	log_warn("Cannot list routes: no route is created or deleted until the cloud "
	    "provider lists them again (repeats at -v=2)", "err", e->msg, NULL);
	c->warned_list = 1;
}

/* routectl_pass runs one pass; trigger is what asked for it (a
 * route_controller_route_sync_total label value). */
static void
routectl_pass(struct routectl *c, const char *trigger)
{
	const struct cloud_routes_ops *ops = c->cfg.provider->routes;
	struct routectl_listing l = { NULL, 0, 0, 0 };
	const struct store_obj **objs = NULL;
	const struct kube_node **nodes;
	struct routectl_plan plan;
	struct hmap kept;
	struct errbuf e = { "" };
	int64_t t0 = clock_mono_ns();
	size_t n = 0, i, changed;
	int r;

	r = ops->list(c->cfg.provider_state, c->cluster_name, routectl_list_cb, &l, &e);
	if (l.too_many)
		r = errbuf_set(&e, ERR_TOO_LARGE, "the provider lists more than %d routes",
		    ROUTECTL_ROUTES_MAX);
	if (r < 0) {
		/* a listing a stop aborted is no reconcile */
		if (!routectl_stopping(c)) {
			routectl_list_failed(c, &e);
			metric_add(routectl_m_syncs, 1, ROUTECTL_OUTCOME_ERROR, trigger);
		}
		free(l.v);
		return;
	}
	if (c->warned_list)
		log_info(0, "The cloud provider lists routes again", NULL);
	c->warned_list = 0;
	store_list(reflector_store(c->cfg.nodes), &objs, &n);
	nodes = xcalloc(n ? n : 1, sizeof(*nodes));
	for (i = 0; i < n; i++)
		nodes[i] = kube_node_of(objs[i]);
	routectl_plan(c->cidrs, c->ncidrs, nodes, n, l.v, l.n, &plan);
	routectl_report(c, &plan, nodes, l.v, l.n);
	/* deletes first: a CIDR that moved to another Node, or a blackholed
	 * route, is free for its create */
	changed = routectl_deletes(c, &plan, l.v, l.n);
	if (!routectl_stopping(c))
		changed += routectl_creates(c, &plan, nodes, n);
	hmap_init(&kept, HMAP_COPY_KEYS);
	for (i = 0; i < n && !routectl_stopping(c); i++) {
		int routed = routectl_node_routed(&plan, i);
		if (routed >= 0)
			routectl_condition(c, nodes[i], routed, &kept);
	}
	hmap_free(&c->written, free);
	c->written = kept;
	/* like upstream's: counted once the provider calls are done, whether
	 * or not the Node conditions were all written */
	metric_add(routectl_m_syncs, 1, changed ? ROUTECTL_OUTCOME_CHANGED : ROUTECTL_OUTCOME_NOOP,
	    trigger);
	if (!routectl_stopping(c))
		metric_observe(routectl_m_pass, (double)(clock_mono_ns() - t0) / NS_PER_S);
	routectl_plan_free(&plan);
	free(nodes);
	store_list_free(objs, n);
	free(l.v);
}

/* --- the schedule ----------------------------------------------------------- */

/* routectl_wait_synced waits for the Node cache, noticing a stop. Returns 1
 * once synced, 0 when stopping. */
static int
routectl_wait_synced(struct routectl *c)
{
	while (!routectl_stopping(c)) {
		int64_t t0 = clock_mono_ns();
		if (reflector_wait_synced(c->cfg.nodes, ROUTECTL_SYNC_POLL_NS))
			return 1;
		/* a stopped reflector answers at once: do not spin */
		if (stop_sleep(&c->stop, ROUTECTL_SYNC_POLL_NS - (clock_mono_ns() - t0)))
			return 0;
	}
	return 0;
}

/* routectl_due is when the next pass may start: the periodic time, or
 * sooner for a pending event once the last event-triggered pass is a
 * period old (c->mu held). */
static int64_t
routectl_due(const struct routectl *c)
{
	if (c->event_pending && c->event_after_ns < c->next_pass_ns)
		return c->event_after_ns;
	return c->next_pass_ns;
}

static int
routectl_wait(void *arg)
{
	return routectl_wait_synced(arg);
}

/* routectl_arm starts the passes once the cache has synced: the first
 * pass sees every Node the cache has now. */
static int
routectl_arm(void *arg, void **ctx)
{
	struct routectl *c = arg;

	(void)ctx;
	log_info(1, "Route controller started", "provider", c->cfg.provider->name,
	    "clusterCIDR", c->cluster_cidr, NULL);
	pthread_mutex_lock(&c->mu);
	c->armed = 1;
	pthread_mutex_unlock(&c->mu);
	c->first = 1;
	wq_add(c->run_q, ROUTECTL_KEY);
	return 0;
}

/* routectl_work is the runner's sync of the queue's one key, which only
 * wakes the pass thread: on each wake it runs a pass when one is due
 * (routectl_due), else re-arms the key for that time, so a wake asked for
 * by an older schedule (the queue never postpones a waiting key) is
 * harmless. */
static int
routectl_work(void *arg, void *ctx, const char *key)
{
	struct routectl *c = arg;
	struct wq *q = c->run_q;
	int64_t now = clock_mono_ns(), due;
	const char *trigger;
	int event;

	(void)ctx;
	(void)key;
	pthread_mutex_lock(&c->mu);
	if ((due = routectl_due(c)) > now) {
		wq_add_after(q, ROUTECTL_KEY, due - now);
		pthread_mutex_unlock(&c->mu);
		return 0;
	}
	/* ahead of the periodic time: an event's pass, which the next event's
	 * waits a period for; either kind serves every event seen so far */
	event = now < c->next_pass_ns;
	/* the first pass is for the Nodes the cache listed (upstream: their
	 * add events); a pass that serves a Node's event is that event's,
	 * whatever else was due */
	trigger = c->first || c->node_change ? ROUTECTL_TRIGGER_NODE : ROUTECTL_TRIGGER_PERIODIC;
	c->first = 0;
	c->event_pending = 0;
	c->node_change = 0;
	c->in_pass = 1;
	pthread_mutex_unlock(&c->mu);

	routectl_pass(c, trigger);

	now = clock_mono_ns();
	pthread_mutex_lock(&c->mu);
	c->in_pass = 0;
	if (event)
		c->event_after_ns = clock_add_ns(now, c->cfg.period_ns);
	c->next_pass_ns = clock_add_ns(now, c->cfg.period_ns);
	wq_add_after(q, ROUTECTL_KEY, routectl_due(c) - now);
	pthread_mutex_unlock(&c->mu);
	return 0;
}

/* routectl_abort ends a request in flight (the API server slow to answer)
 * at once. */
static void
routectl_abort(void *arg)
{
	struct routectl *c = arg;

	http_client_abort(c->client.http);
}

/* routectl_trigger asks for a pass on an event (node: a Node's): at once,
 * or when the last event-triggered pass is a period old; during a pass,
 * the pass thread schedules it when the pass ends. */
static void
routectl_trigger(struct routectl *c, int node)
{
	pthread_mutex_lock(&c->mu);
	if (c->q != NULL && c->armed) {
		c->event_pending = 1;
		c->node_change |= node;
		if (!c->in_pass)
			wq_add_after(c->q, ROUTECTL_KEY, routectl_due(c) - clock_mono_ns());
	}
	pthread_mutex_unlock(&c->mu);
}

void
routectl_retry_now(struct routectl *c)
{
	if (c == NULL)
		return;
	/* an event's pass, due at once: the last one may have failed on what
	 * just changed */
	pthread_mutex_lock(&c->mu);
	c->event_after_ns = 0;
	pthread_mutex_unlock(&c->mu);
	routectl_trigger(c, 0);
}

static void
routectl_on_add(const struct store_obj *o, void *arg)
{
	if (routectl_node_triggers(NULL, kube_node_of(o)))
		routectl_trigger(arg, 1);
}

static void
routectl_on_update(const struct store_obj *old, const struct store_obj *o, void *arg)
{
	if (routectl_node_triggers(kube_node_of(old), kube_node_of(o)))
		routectl_trigger(arg, 1);
}

static void
routectl_on_delete(const struct store_obj *o, void *arg)
{
	if (routectl_node_triggers(kube_node_of(o), NULL))
		routectl_trigger(arg, 1);
}

/* --- life cycle ------------------------------------------------------------- */

int
routectl_new(const struct routectl_config *cfg, struct routectl **ret, struct errbuf *e)
{
	const struct cloud_provider *p = cfg->provider;
	struct reflector_handlers h = {
		.on_add = routectl_on_add, .on_update = routectl_on_update,
		.on_delete = routectl_on_delete,
	};
	struct routectl *c;
	int r;

	if (p == NULL || p->routes == NULL || p->routes->list == NULL ||
	    p->routes->create == NULL || p->routes->delete_ == NULL)
		return errbuf_set(e, ERR_NOT_IMPLEMENTED, "cloud provider %s does not support "
		    "routes", p && p->name ? p->name : "(none)");
	if (cfg->kc == NULL || cfg->nodes == NULL || cfg->concurrency < 1 ||
	    cfg->period_ns <= 0)
		return errbuf_set(e, ERR_INVALID, "route controller: incomplete configuration");
	c = xcalloc(1, sizeof(*c));
	if ((r = routectl_cidrs_parse(cfg->cluster_cidr, c->cidrs, &c->ncidrs, e)) < 0) {
		free(c);
		return r;
	}
	c->cfg = *cfg;
	c->cluster_name = xstrdup(cfg->cluster_name ? cfg->cluster_name : "kubernetes");
	c->cluster_cidr = xstrdup(cfg->cluster_cidr);
	c->user_agent = xstrdup(cfg->user_agent ? cfg->user_agent : "bootccm");
	c->cfg.cluster_name = c->cluster_name;
	c->cfg.cluster_cidr = c->cluster_cidr;
	c->cfg.user_agent = c->user_agent;
	pthread_mutex_init(&c->mu, NULL);
	hmap_init(&c->warned, HMAP_COPY_KEYS);
	hmap_init(&c->written, HMAP_COPY_KEYS);
	h.arg = c;
	if ((r = reflector_add_handlers(cfg->nodes, &h, e)) < 0) {
		routectl_free(c);
		return r;
	}
	pthread_once(&routectl_metrics_once, routectl_metrics_init);
	*ret = c;
	return 0;
}

/* routectl_run_end stops the pass thread and releases what routectl_start
 * made for one run. */
static void
routectl_run_end(struct routectl *c)
{
	pthread_mutex_lock(&c->mu);
	c->q = NULL;   /* the handlers queue nothing more */
	pthread_mutex_unlock(&c->mu);
	runner_free(c->run);
	c->run = NULL;
	wq_free(c->run_q);
	c->run_q = NULL;
	kube_client_cleanup(&c->client);
	stop_destroy(&c->stop);
}

int
routectl_start(struct routectl *c, struct errbuf *e)
{
	struct wq *q;

	if (c->run != NULL)
		return 0;
	if (wq_new(ROUTECTL_QUEUE, NULL, &q) < 0)
		return errbuf_set(e, ERR_INTERNAL, "route controller: cannot create its queue");
	stop_init(&c->stop);
	kube_client_init(&c->client, c->cfg.kc, c->user_agent);
	kube_client_set_stop(&c->client, &c->stop);
	kube_client_set_write_gate(&c->client, c->cfg.write_gate, c->cfg.write_gate_arg);
	c->run_q = q;
	c->warned_list = 0;
	pthread_mutex_lock(&c->mu);
	c->q = q;
	c->armed = 0;
	c->in_pass = 0;
	c->event_pending = 0;
	c->node_change = 0;
	c->event_after_ns = 0;
	c->next_pass_ns = 0;
	pthread_mutex_unlock(&c->mu);
	struct runner_config rcfg = {
		.stop = &c->stop, .arg = c, .stack_size = ROUTECTL_STACK_SIZE,
		.wait = routectl_wait, .q = q, .workers = 1, .worker_init = routectl_arm,
		.sync = routectl_work, .on_stop = routectl_abort,
	};
	if (runner_start(&rcfg, &c->run) < 0) {
		routectl_run_end(c);
		return errbuf_set(e, ERR_INTERNAL, "route controller: cannot start a thread");
	}
	return 0;
}

void
routectl_stop(struct routectl *c)
{
	if (c == NULL || c->run == NULL)
		return;
	routectl_run_end(c);
}

void
routectl_free(struct routectl *c)
{
	if (c == NULL)
		return;
	routectl_stop(c);
	hmap_free(&c->warned, NULL);
	hmap_free(&c->written, free);
	pthread_mutex_destroy(&c->mu);
	free(c->cluster_name);
	free(c->cluster_cidr);
	free(c->user_agent);
	free(c);
}
