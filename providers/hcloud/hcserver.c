/* hcserver.c - Nodes as Hetzner Cloud servers: the shared listing, lookups,
 * and the metadata the official CCM sets. */
#include "hcserver.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/dynbuf.h"
#include "base/hmap.h"
#include "base/netaddr.h"
#include "base/numparse.h"
#include "base/xalloc.h"

#define HCSERVER_KEY_MAX 24            /* bytes of a decimal id and its NUL */

struct hcserver_entry {
	struct hcapi_server srv;
	int64_t fetched_ns;            /* when the API said this */
};

struct hcserver {
	struct hcclient *c;
	struct hcnet *net;
	int family;
	pthread_mutex_t mu;
	pthread_cond_t cv;             /* a listing ended */
	struct hmap by_id;             /* decimal id -> entry (keys copied) */
	struct hmap by_name;           /* server name -> entry (keys: the entry's name) */
	struct hmap node_names;        /* decimal id -> the Node's name, when it is not
	                                  the server's (keys copied, values owned) */
	int listing;                   /* a listing is in flight */
	int list_err;                  /* the last listing's result */
	char list_msg[ERRBUF_MAX];
	int64_t listed_ns;             /* the last good listing's time; 0: none yet */
	size_t list_n;                 /* servers in it */
	int64_t singles;               /* single lookups since */
};

static void
hcserver_key(char key[HCSERVER_KEY_MAX], int64_t id)
{
	snprintf(key, HCSERVER_KEY_MAX, "%" PRId64, id);
}

static void
hcserver_entry_free(void *v)
{
	struct hcserver_entry *en = v;

	hcapi_server_free(&en->srv);
	free(en);
}

struct hcserver *
hcserver_new(struct hcclient *c, struct hcnet *net, int family)
{
	struct hcserver *s = xcalloc(1, sizeof(*s));
	pthread_condattr_t a;

	s->c = c;
	s->net = net;
	s->family = family;
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv, &a);
	pthread_condattr_destroy(&a);
	hmap_init(&s->by_id, HMAP_COPY_KEYS);
	hmap_init(&s->by_name, 0);
	hmap_init(&s->node_names, HMAP_COPY_KEYS);
	return s;
}

void
hcserver_free(struct hcserver *s)
{
	if (s == NULL)
		return;
	hmap_free(&s->by_name, NULL);
	hmap_free(&s->by_id, hcserver_entry_free);
	hmap_free(&s->node_names, free);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
}

/* --- pure parts ------------------------------------------------------------------ */

int
hcserver_provider_id(const char *pid, int64_t *ret_id)
{
	const char *p;
	int64_t v;

	if (pid == NULL || strncmp(pid, "hcloud://", 9) != 0)
		return 0;
	p = pid + 9;
	/* the official CCM's legacy form for Robot servers */
	if (strncmp(p, "bm-", 3) == 0)
		return 0;
	if (*p < '1' || *p > '9' || numparse(p, 0, 1, INT64_MAX, &v, NULL) < 0)
		return ERR_INVALID;
	*ret_id = v;
	return 1;
}

const char *
hcserver_zone(const char *location)
{
	static const char *const legacy[][2] = {
		{ "nbg1", "nbg1-dc3" }, { "hel1", "hel1-dc2" }, { "fsn1", "fsn1-dc14" },
		{ "ash", "ash-dc1" }, { "hil", "hil-dc1" }, { "sin", "sin-dc1" },
	};

	for (size_t i = 0; i < sizeof(legacy) / sizeof(legacy[0]); i++)
		if (strcmp(location, legacy[i][0]) == 0)
			return legacy[i][1];
	return location;
}

static void
hcserver_addr(struct cloud_instance_metadata *m, enum cloud_addr_type t, const char *a)
{
	if (m->n_addresses >= CLOUD_ADDRS_MAX || strlen(a) >= sizeof(m->addresses[0].address))
		return;
	m->addresses[m->n_addresses].type = t;
	memcpy(m->addresses[m->n_addresses].address, a, strlen(a) + 1);
	m->n_addresses++;
}

void
hcserver_fill(const struct hcapi_server *srv, int family, int64_t network,
    struct cloud_instance_metadata *m)
{
	struct netprefix v6;

	memset(m, 0, sizeof(*m));
	snprintf(m->source, sizeof(m->source), "%s", CLOUD_SOURCE_API);
	snprintf(m->provider_id, sizeof(m->provider_id), "hcloud://%" PRId64, srv->id);
	snprintf(m->instance_type, sizeof(m->instance_type), "%s", srv->server_type);
	snprintf(m->region, sizeof(m->region), "%s", srv->location);
	snprintf(m->zone, sizeof(m->zone), "%s", hcserver_zone(srv->location));
	hcserver_addr(m, CLOUD_ADDR_HOSTNAME, srv->name);
	if ((family & HCSERVER_IPV4) && srv->ipv4[0])
		hcserver_addr(m, CLOUD_ADDR_EXTERNAL_IP, srv->ipv4);
	if ((family & HCSERVER_IPV6) && srv->ipv6[0] && netprefix_parse(srv->ipv6, 0, &v6) == 0 &&
	    v6.addr.family == 6) {
		/* the server's address in its /64 is <prefix>::1 */
		char a[NETADDR_TEXT_MAX];
		v6.addr.b[15] |= 1;
		netaddr_format(&v6.addr, a);
		hcserver_addr(m, CLOUD_ADDR_EXTERNAL_IP, a);
	}
	for (size_t i = 0; network > 0 && i < srv->n_private; i++)
		if (srv->private_net[i].network == network && srv->private_net[i].ip[0])
			hcserver_addr(m, CLOUD_ADDR_INTERNAL_IP, srv->private_net[i].ip);
	snprintf(m->labels[0].key, sizeof(m->labels[0].key), "%s", HCSERVER_PROVIDED_BY);
	snprintf(m->labels[0].value, sizeof(m->labels[0].value), "cloud");
	m->n_labels = 1;
}

/* --- the cache ------------------------------------------------------------------- */

/* hcserver_put stores srv (taken over) as fetched at now (mu held). */
static struct hcserver_entry *
hcserver_put(struct hcserver *s, struct hcapi_server *srv, int64_t now)
{
	struct hcserver_entry *en, *old;
	char key[HCSERVER_KEY_MAX];

	hcserver_key(key, srv->id);
	if ((old = hmap_get(&s->by_id, key)) != NULL) {
		if (hmap_get(&s->by_name, old->srv.name) == old)
			hmap_delete(&s->by_name, old->srv.name);
		hmap_delete(&s->by_id, key);
		hcserver_entry_free(old);
	}
	en = xcalloc(1, sizeof(*en));
	en->srv = *srv;
	memset(srv, 0, sizeof(*srv));
	en->fetched_ns = now;
	hmap_put(&s->by_id, key, en);
	hmap_put(&s->by_name, en->srv.name, en);
	return en;
}

void
hcserver_forget(struct hcserver *s, int64_t id)
{
	struct hcserver_entry *en;
	char key[HCSERVER_KEY_MAX];

	hcserver_key(key, id);
	pthread_mutex_lock(&s->mu);
	if ((en = hmap_get(&s->by_id, key)) != NULL)
		en->fetched_ns = 0;
	pthread_mutex_unlock(&s->mu);
}

struct hcserver_acc {
	struct hcapi_server *v;
	size_t n, cap;
};

static int
hcserver_collect(json_object *item, const char *path, void *arg, struct errbuf *e)
{
	struct hcserver_acc *a = arg;

	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->v = xreallocarray(a->v, a->cap, sizeof(*a->v));
	}
	if (hcapi_server_parse(item, path, &a->v[a->n], e) < 0)
		return ERR_INVALID;
	a->n++;
	return 0;
}

/* hcserver_refresh makes the listing at most max_age_ns old: it waits for a
 * listing in flight and takes its result, or lists. Called and returns with
 * mu held (released while listing). */
static int
hcserver_refresh(struct hcserver *s, int64_t max_age_ns, struct errbuf *e)
{
	struct hcserver_acc acc = { NULL, 0, 0 };
	int64_t now;
	int r;

	if (s->listing) {
		while (s->listing)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->list_err < 0)
			return errbuf_set(e, s->list_err, "%s", s->list_msg);
		return 0;
	}
	if (s->listed_ns != 0 && clock_mono_ns() - s->listed_ns <= max_age_ns)
		return 0;
	s->listing = 1;
	pthread_mutex_unlock(&s->mu);
	now = clock_mono_ns();
	r = hcclient_list(s->c, "/servers", "servers", hcserver_collect, &acc, e);
	pthread_mutex_lock(&s->mu);
	if (r == 0) {
		hmap_free(&s->by_name, NULL);
		hmap_free(&s->by_id, hcserver_entry_free);
		for (size_t i = 0; i < acc.n; i++)
			hcserver_put(s, &acc.v[i], now);
		s->listed_ns = now;
		s->list_n = acc.n;
		s->singles = 0;
	} else {
		errbuf_prefix(e, r, "listing the servers");
		for (size_t i = 0; i < acc.n; i++)
			hcapi_server_free(&acc.v[i]);
	}
	free(acc.v);
	s->list_err = r;
	snprintf(s->list_msg, sizeof(s->list_msg), "%s", r < 0 ? e->msg : "");
	s->listing = 0;
	pthread_cond_broadcast(&s->cv);
	return r;
}

/* hcserver_want says which server node is: by id (*ret_id > 0) or by name. */
static int
hcserver_want(const struct cloud_node *node, int64_t *ret_id, struct errbuf *e)
{
	const char *pid = node->provider_id;
	int r;

	*ret_id = 0;
	if (pid == NULL || *pid == '\0') {
		if (node->name == NULL || *node->name == '\0')
			return errbuf_set(e, ERR_INVALID, "a node without a name or providerID");
		return 0;
	}
	if ((r = hcserver_provider_id(pid, ret_id)) == 1)
		return 0;
	if (r == 0)
		return errbuf_set(e, ERR_PERMANENT, "node %s: providerID \"%.200s\" is not a Hetzner "
		    "Cloud server's (hcloud://<server id>)", node->name, pid);
	return errbuf_set(e, ERR_INVALID, "node %s: providerID \"%.200s\" is not "
	    "hcloud://<server id>", node->name, pid);
}

static struct hcserver_entry *
hcserver_cached(struct hcserver *s, int64_t id, const char *name)
{
	char key[HCSERVER_KEY_MAX];

	if (id > 0) {
		hcserver_key(key, id);
		return hmap_get(&s->by_id, key);
	}
	return hmap_get(&s->by_name, name);
}

/* hcserver_one asks the API for the one server (mu held, released while
 * asking): ERR_NOT_FOUND only when the API says there is none. */
static int
hcserver_one(struct hcserver *s, const struct cloud_node *node, int64_t id,
    struct hcserver_entry **ret, struct errbuf *e)
{
	json_object *root = NULL, *o, *items;
	struct hcapi_server srv;
	struct dynbuf path;
	size_t n = 0;
	int64_t now;
	int r;

	s->singles++;
	pthread_mutex_unlock(&s->mu);
	dynbuf_init(&path, 1024);
	if (id > 0) {
		dynbuf_addf(&path, "/servers/%" PRId64, id);
	} else {
		dynbuf_addstr(&path, "/servers?name=");
		hcclient_escape(&path, node->name);
	}
	now = clock_mono_ns();
	r = hcclient_do(s->c, "GET", dynbuf_ptr(&path), NULL, &root, NULL, e);
	if (r == 0 && id > 0) {
		if ((r = hcapi_member(root, "server", &o, e)) == 0)
			r = hcapi_server_parse(o, "server", &srv, e);
	} else if (r == 0) {
		if ((r = hcapi_items(root, "servers", &items, &n, e)) == 0 && n > 0)
			r = hcapi_server_parse(json_object_array_get_idx(items, 0), "servers[0]", &srv,
			    e);
	}
	if (r < 0 && r != ERR_NOT_FOUND)
		errbuf_prefix(e, r, "GET %s", id > 0 ? dynbuf_ptr(&path) : "/servers?name=...");
	dynbuf_free(&path);
	json_object_put(root);
	pthread_mutex_lock(&s->mu);
	if (r == ERR_NOT_FOUND && id > 0)
		return errbuf_set(e, ERR_NOT_FOUND, "node %s: server %" PRId64 " does not exist "
		    "(the API answered not_found)", node->name, id);
	if (r == 0 && id == 0 && n == 0)
		return errbuf_set(e, ERR_NOT_FOUND, "node %s: no server has this name",
		    node->name);
	if (r == ERR_NOT_FOUND)   /* a listing of servers is never "not found" */
		r = ERR_PERMANENT;
	if (r < 0)
		return r;
	*ret = hcserver_put(s, &srv, now);
	return 0;
}

/* hcserver_find finds node's server with an answer at most max_age_ns old
 * (mu held; released while asking the API). */
static int
hcserver_find(struct hcserver *s, const struct cloud_node *node, int64_t max_age_ns,
    struct hcserver_entry **ret, struct errbuf *e)
{
	struct hcserver_entry *en;
	int64_t id, pages;
	int r;

	if ((r = hcserver_want(node, &id, e)) < 0)
		return r;
	en = hcserver_cached(s, id, node->name);
	if (en != NULL && clock_mono_ns() - en->fetched_ns <= max_age_ns) {
		*ret = en;
		return 0;
	}
	pages = (int64_t)((s->list_n + HCCLIENT_PER_PAGE - 1) / HCCLIENT_PER_PAGE);
	if (s->listing || s->listed_ns == 0 || pages <= HCSERVER_CHEAP_PAGES ||
	    s->singles >= pages) {
		/* a listing costs no more than the lookups it saves */
		if ((r = hcserver_refresh(s, max_age_ns < HCSERVER_MAX_AGE_NS ? max_age_ns :
		    HCSERVER_MAX_AGE_NS, e)) < 0)
			return errbuf_prefix(e, r, "node %s", node->name);
		en = hcserver_cached(s, id, node->name);
		if (en != NULL && clock_mono_ns() - en->fetched_ns <= max_age_ns) {
			*ret = en;
			return 0;
		}
		/* absent from a listing: only the server's own lookup may say
		 * it does not exist */
	}
	return hcserver_one(s, node, id, ret, e);
}

/* hcserver_learn remembers the Node's name for its server, when they
 * differ (mu held). */
static void
hcserver_learn(struct hcserver *s, const struct cloud_node *node,
    const struct hcserver_entry *en)
{
	char key[HCSERVER_KEY_MAX];
	char *old;

	if (node->name == NULL || strcmp(node->name, en->srv.name) == 0)
		return;
	hcserver_key(key, en->srv.id);
	old = hmap_get(&s->node_names, key);
	if (old != NULL && strcmp(old, node->name) == 0)
		return;
	free(hmap_put(&s->node_names, key, xstrdup(node->name)));
}

int
hcserver_with(struct hcserver *s, const struct cloud_node *node, int64_t max_age_ns,
    hcserver_fn fn, void *arg, struct errbuf *e)
{
	struct hcserver_entry *en;
	int r;

	pthread_mutex_lock(&s->mu);
	if ((r = hcserver_find(s, node, max_age_ns, &en, e)) == 0) {
		hcserver_learn(s, node, en);
		fn(&en->srv, arg);
	}
	pthread_mutex_unlock(&s->mu);
	return r;
}

/* --- the operations ------------------------------------------------------------ */

static void
hcserver_nothing(const struct hcapi_server *srv, void *arg)
{
	(void)srv, (void)arg;
}

int
hcserver_exists(struct hcserver *s, const struct cloud_node *node, int *ret_exists,
    struct errbuf *e)
{
	int r = hcserver_with(s, node, HCSERVER_LIFECYCLE_MAX_AGE_NS, hcserver_nothing, NULL, e);

	if (r == 0)
		*ret_exists = 1;
	return r;
}

static void
hcserver_off(const struct hcapi_server *srv, void *arg)
{
	*(int *)arg = strcmp(srv->status, "off") == 0;
}

int
hcserver_shutdown(struct hcserver *s, const struct cloud_node *node, int *ret_shutdown,
    struct errbuf *e)
{
	int off = 0;
	int r = hcserver_with(s, node, HCSERVER_LIFECYCLE_MAX_AGE_NS, hcserver_off, &off, e);

	if (r == 0)
		*ret_shutdown = off;
	return r;
}

struct hcserver_fill_arg {
	int family;
	int64_t network;
	struct cloud_instance_metadata *m;
};

static void
hcserver_fill_fn(const struct hcapi_server *srv, void *arg)
{
	struct hcserver_fill_arg *a = arg;

	hcserver_fill(srv, a->family, a->network, a->m);
}

int
hcserver_metadata(struct hcserver *s, const struct cloud_node *node,
    struct cloud_instance_metadata *ret, struct errbuf *e)
{
	struct hcserver_fill_arg a = { s->family, 0, NULL };
	int r;

	if ((r = hcnet_id(s->net, &a.network, e)) < 0)
		return errbuf_prefix(e, r, "node %s", node->name ? node->name : "");
	a.m = xmalloc(sizeof(*a.m));
	if ((r = hcserver_with(s, node, HCSERVER_MAX_AGE_NS, hcserver_fill_fn, &a, e)) == 0)
		memcpy(ret, a.m, sizeof(*ret));
	free(a.m);
	return r;
}

int
hcserver_list(struct hcserver *s, cloud_instance_cb cb, void *arg, struct errbuf *e)
{
	struct cloud_instance_metadata *m;
	struct hmap_iter it;
	void *v;
	int64_t network;
	int r;

	if ((r = hcnet_id(s->net, &network, e)) < 0)
		return r;
	pthread_mutex_lock(&s->mu);
	if ((r = hcserver_refresh(s, HCSERVER_MAX_AGE_NS, e)) < 0) {
		pthread_mutex_unlock(&s->mu);
		return r;
	}
	m = xmalloc(sizeof(*m));
	hmap_iter_init(&it, &s->by_id);
	while (r == 0 && hmap_iter_next(&it, NULL, &v)) {
		hcserver_fill(&((struct hcserver_entry *)v)->srv, s->family, network, m);
		r = cb(m, arg);
	}
	pthread_mutex_unlock(&s->mu);
	free(m);
	return r;
}

int
hcserver_by_private_ip(struct hcserver *s, int64_t network, const char *ip, int refresh,
    int64_t *ret_id, char *name, size_t name_size, struct errbuf *e)
{
	struct hmap_iter it;
	void *v;
	int r, found = 0;

	pthread_mutex_lock(&s->mu);
	if (refresh && (r = hcserver_refresh(s, 0, e)) < 0) {
		pthread_mutex_unlock(&s->mu);
		return r;
	}
	hmap_iter_init(&it, &s->by_id);
	while (!found && hmap_iter_next(&it, NULL, &v)) {
		const struct hcapi_server *srv = &((struct hcserver_entry *)v)->srv;
		for (size_t i = 0; i < srv->n_private && !found; i++) {
			char key[HCSERVER_KEY_MAX];
			const char *nn;
			if (srv->private_net[i].network != network ||
			    strcmp(srv->private_net[i].ip, ip) != 0)
				continue;
			hcserver_key(key, srv->id);
			nn = hmap_get(&s->node_names, key);
			snprintf(name, name_size, "%s", nn ? nn : srv->name);
			*ret_id = srv->id;
			found = 1;
		}
	}
	pthread_mutex_unlock(&s->mu);
	return found;
}
