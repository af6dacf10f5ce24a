/* hcroute.c - routes in the configured Hetzner Cloud network. */
#include "hcroute.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"
#include "base/netaddr.h"
#include "base/xalloc.h"

struct hcroute {
	struct hcclient *c;
	struct hcserver *servers;
	struct hcnet *net;
	int64_t max_routes;
	/* a network takes one change at a time (others answer conflict): the
	 * route controller's parallel creates queue here instead of spending
	 * requests on conflicts */
	pthread_mutex_t change_mu;
	pthread_mutex_t mu;
	struct hcapi_route *routes;     /* the network's routes as last seen */
	size_t n_routes;
	int have;                       /* routes were listed */
	size_t full;                    /* the API refused a route at this many
	                                   (resource_limit_exceeded); 0: not */
	struct hmap gateways;           /* gateway IP -> the Node create routed to it */
};

struct hcroute *
hcroute_new(struct hcclient *c, struct hcserver *servers, struct hcnet *net,
    int64_t max_routes)
{
	struct hcroute *r = xcalloc(1, sizeof(*r));

	r->c = c;
	r->servers = servers;
	r->net = net;
	r->max_routes = max_routes > 0 ? max_routes : HCROUTE_MAX_ROUTES;
	pthread_mutex_init(&r->mu, NULL);
	pthread_mutex_init(&r->change_mu, NULL);
	hmap_init(&r->gateways, HMAP_COPY_KEYS);
	return r;
}

void
hcroute_free(struct hcroute *r)
{
	if (r == NULL)
		return;
	hmap_free(&r->gateways, free);
	pthread_mutex_destroy(&r->mu);
	pthread_mutex_destroy(&r->change_mu);
	free(r->routes);
	free(r);
}

/* hcroute_target finds the Node behind gateway gw: 1 with its name, 0 when
 * no server has gw (refresh: after a fresh listing). */
static int
hcroute_target(struct hcroute *r, int64_t network, const char *gw, int refresh, char *name,
    size_t size, struct errbuf *e)
{
	const char *known;
	int64_t id;

	pthread_mutex_lock(&r->mu);
	known = hmap_get(&r->gateways, gw);
	if (known != NULL)
		snprintf(name, size, "%s", known);
	pthread_mutex_unlock(&r->mu);
	if (known != NULL && !refresh)
		return 1;
	return hcserver_by_private_ip(r->servers, network, gw, refresh, &id, name, size, e);
}

int
hcroute_list(struct hcroute *r, cloud_route_cb cb, void *arg, struct errbuf *e)
{
	struct hcapi_network nw;
	struct cloud_route *out;
	size_t n;
	int refreshed = 0, rc;

	if ((rc = hcnet_get(r->net, &nw, e)) < 0)
		return rc;
	n = nw.n_routes;
	out = xcalloc(nw.n_routes ? nw.n_routes : 1, sizeof(*out));
	for (size_t i = 0; i < nw.n_routes; i++) {
		const struct hcapi_route *rt = &nw.routes[i];
		struct cloud_route *o = &out[i];
		int found;

		snprintf(o->name, sizeof(o->name), "%s-%s", rt->gateway, rt->destination);
		snprintf(o->destination_cidr, sizeof(o->destination_cidr), "%s", rt->destination);
		found = hcroute_target(r, nw.id, rt->gateway, 0, o->target_node,
		    sizeof(o->target_node), e);
		if (found == 0 && !refreshed) {
			/* a gateway nobody knows: look at today's servers once */
			refreshed = 1;
			found = hcroute_target(r, nw.id, rt->gateway, 1, o->target_node,
			    sizeof(o->target_node), e);
		}
		if (found < 0) {
			rc = errbuf_prefix(e, found, "routes of network %s", hcnet_name(r->net));
			goto out;
		}
		if (found == 0) {
			o->target_node[0] = '\0';
			o->blackhole = 1;   /* no server has this gateway any more */
		}
	}
	pthread_mutex_lock(&r->mu);
	free(r->routes);
	r->routes = nw.routes;
	r->n_routes = nw.n_routes;
	r->have = 1;
	if (r->full > 0 && nw.n_routes < r->full)
		r->full = 0;   /* room again: try */
	nw.routes = NULL;
	nw.n_routes = 0;
	pthread_mutex_unlock(&r->mu);
	rc = 0;
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = cb(&out[i], arg);
out:
	free(out);
	hcapi_network_free(&nw);
	return rc;
}

struct hcroute_gw {
	int64_t network;
	char ip[NETADDR_TEXT_MAX];
};

static void
hcroute_gw_fn(const struct hcapi_server *srv, void *arg)
{
	struct hcroute_gw *g = arg;

	for (size_t i = 0; i < srv->n_private; i++)
		if (srv->private_net[i].network == g->network) {
			snprintf(g->ip, sizeof(g->ip), "%s", srv->private_net[i].ip);
			return;
		}
}

/* hcroute_change posts add_route or delete_route and waits for it (the
 * caller holds change_mu). */
static int
hcroute_change(struct hcroute *r, int64_t network, const char *cmd, const char *dest,
    const char *gw, struct hcclient_answer *ans, struct errbuf *e)
{
	json_object *body = xcheck(json_object_new_object()), *root = NULL, *o;
	struct hcapi_action a;
	char path[96];
	int rc;

	json_object_object_add(body, "destination", xcheck(json_object_new_string(dest)));
	json_object_object_add(body, "gateway", xcheck(json_object_new_string(gw)));
	snprintf(path, sizeof(path), "/networks/%" PRId64 "/actions/%s", network, cmd);
	rc = hcclient_do(r->c, "POST", path, body, &root, ans, e);
	json_object_put(body);
	if (rc == 0 && (rc = hcapi_member(root, "action", &o, e)) == 0 &&
	    (rc = hcapi_action_parse(o, "action", &a, e)) == 0) {
		if (strcmp(a.status, "running") == 0)
			rc = hcclient_wait_actions(r->c, &a.id, 1, e);
		else if (strcmp(a.status, "error") == 0)
			rc = errbuf_set(e, ERR_TRANSIENT, "action %" PRId64 " (%s) failed: %s: %s",
			    a.id, a.command, a.error_code, a.error_message);
	}
	json_object_put(root);
	return rc;
}

/* hcroute_forget drops the last state's route to dest (mu held). */
static void
hcroute_forget(struct hcroute *r, const char *dest)
{
	size_t k = 0;

	for (size_t i = 0; i < r->n_routes; i++)
		if (strcmp(r->routes[i].destination, dest) != 0)
			r->routes[k++] = r->routes[i];
	r->n_routes = k;
}

/* hcroute_add routes d to the gateway g, replacing a route of d to
 * another gateway, within the network's limit (change_mu held). */
static int
hcroute_add(struct hcroute *r, const struct hcroute_gw *g, const char *d, const char *node,
    struct hcclient_answer *ans, struct errbuf *e)
{
	char old_gw[NETADDR_TEXT_MAX] = "";
	size_t count, limit;
	int rc, listed, seen = 0;

	pthread_mutex_lock(&r->mu);
	listed = r->have;
	count = r->n_routes;
	for (size_t i = 0; i < r->n_routes; i++)
		if (strcmp(r->routes[i].destination, d) == 0) {
			snprintf(old_gw, sizeof(old_gw), "%s", r->routes[i].gateway);
			seen = 1;
		}
	limit = r->full > 0 && (int64_t)r->full < r->max_routes ? r->full :
	    (size_t)r->max_routes;
	pthread_mutex_unlock(&r->mu);
	if (seen && strcmp(old_gw, g->ip) == 0)
		return 0;
	if (listed && !seen && count >= limit)
		return errbuf_set(e, ERR_PERMANENT, "node %s: no route for its podCIDR %s: network "
		    "%s has %zu routes, the most it takes (%zu)", node, d, hcnet_name(r->net),
		    count, limit);
	if (seen) {
		/* the destination goes elsewhere: replace the route */
		if ((rc = hcroute_change(r, g->network, "delete_route", d, old_gw, ans, e)) < 0)
			return errbuf_prefix(e, rc, "node %s: replacing the route of %s via %s", node,
			    d, old_gw);
		pthread_mutex_lock(&r->mu);
		hcroute_forget(r, d);
		pthread_mutex_unlock(&r->mu);
	}
	rc = hcroute_change(r, g->network, "add_route", d, g->ip, ans, e);
	if (rc < 0 && strcmp(ans->code, "resource_limit_exceeded") == 0) {
		/* full: no request again until the network has fewer routes */
		pthread_mutex_lock(&r->mu);
		r->full = r->n_routes > 0 ? r->n_routes : 1;
		count = r->full;
		pthread_mutex_unlock(&r->mu);
		return errbuf_set(e, ERR_PERMANENT, "node %s: no route for its podCIDR %s: network "
		    "%s has %zu routes, the most it takes (resource_limit_exceeded)", node, d,
		    hcnet_name(r->net), count);
	}
	if (rc < 0)
		return errbuf_prefix(e, rc, "node %s: route %s via %s", node, d, g->ip);
	pthread_mutex_lock(&r->mu);
	r->routes = xreallocarray(r->routes, r->n_routes + 1, sizeof(*r->routes));
	snprintf(r->routes[r->n_routes].destination, sizeof(r->routes[0].destination), "%s", d);
	snprintf(r->routes[r->n_routes].gateway, sizeof(r->routes[0].gateway), "%s", g->ip);
	r->n_routes++;
	pthread_mutex_unlock(&r->mu);
	return 0;
}

int
hcroute_create(struct hcroute *r, const struct cloud_route *route,
    const struct cloud_node *target, struct errbuf *e)
{
	struct hcroute_gw g;
	struct netprefix dest;
	struct hcclient_answer ans;
	char d[NETPREFIX_TEXT_MAX];
	const char *node = target && target->name ? target->name : route->target_node;
	int rc;

	if (netprefix_parse(route->destination_cidr, 0, &dest) < 0)
		return errbuf_set(e, ERR_INVALID, "node %s: podCIDR \"%.64s\" is not a CIDR", node,
		    route->destination_cidr);
	if (dest.addr.family != 4)
		return errbuf_set(e, ERR_PERMANENT, "node %s: podCIDR %s: Hetzner Cloud networks "
		    "route IPv4 only", node, route->destination_cidr);
	netprefix_format(&dest, d);
	memset(&g, 0, sizeof(g));
	if ((rc = hcnet_id(r->net, &g.network, e)) < 0)
		return rc;
	if (g.network == 0)
		return errbuf_set(e, ERR_PERMANENT, "routes need a network (the cloud-config's "
		    "hcloud.network)");
	if (target == NULL)
		return errbuf_set(e, ERR_INVALID, "node %s: unknown", node);
	if ((rc = hcserver_with(r->servers, target, HCSERVER_LIFECYCLE_MAX_AGE_NS, hcroute_gw_fn,
	    &g, e)) < 0)
		/* a server that is gone is no reason to give up on anything */
		return errbuf_prefix(e, rc == ERR_NOT_FOUND ? ERR_PERMANENT : rc, "route %s", d);
	if (g.ip[0] == '\0')
		return errbuf_set(e, ERR_PERMANENT, "node %s: its server is not in network %s",
		    node, hcnet_name(r->net));
	/* as the official CCM: the gateway must be one of the Node's own
	 * InternalIPs, or traffic for its pods would go elsewhere */
	if (target->n_addresses > 0) {
		int ok = 0;
		for (size_t i = 0; i < target->n_addresses; i++)
			ok |= target->addresses[i].type == CLOUD_ADDR_INTERNAL_IP &&
			    strcmp(target->addresses[i].address, g.ip) == 0;
		if (!ok)
			return errbuf_set(e, ERR_PERMANENT, "node %s: its server's IP %s in network "
			    "%s is not one of its InternalIPs", node, g.ip, hcnet_name(r->net));
	}
	/* the count and the change under one turn: parallel creates see each
	 * other's routes */
	pthread_mutex_lock(&r->change_mu);
	rc = hcroute_add(r, &g, d, node, &ans, e);
	pthread_mutex_unlock(&r->change_mu);
	if (rc == 0) {
		pthread_mutex_lock(&r->mu);
		free(hmap_put(&r->gateways, g.ip, xstrdup(node)));
		pthread_mutex_unlock(&r->mu);
	}
	return rc;
}

int
hcroute_delete(struct hcroute *r, const struct cloud_route *route, struct errbuf *e)
{
	struct hcclient_answer ans;
	struct netprefix dest;
	char d[NETPREFIX_TEXT_MAX], gw[NETADDR_TEXT_MAX] = "";
	int64_t network;
	int rc;

	if (netprefix_parse(route->destination_cidr, 0, &dest) < 0)
		return errbuf_set(e, ERR_INVALID, "route %.64s: \"%.64s\" is not a CIDR", route->name,
		    route->destination_cidr);
	netprefix_format(&dest, d);
	if ((rc = hcnet_id(r->net, &network, e)) < 0)
		return rc;
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->n_routes; i++)
		if (strcmp(r->routes[i].destination, d) == 0)
			snprintf(gw, sizeof(gw), "%s", r->routes[i].gateway);
	pthread_mutex_unlock(&r->mu);
	if (gw[0] == '\0')
		return 0;   /* not in the network as last listed: gone */
	pthread_mutex_lock(&r->change_mu);
	rc = hcroute_change(r, network, "delete_route", d, gw, &ans, e);
	pthread_mutex_unlock(&r->change_mu);
	if (rc < 0 && strcmp(ans.code, "invalid_input") == 0) {
		/* the route went meanwhile: the next listing tells */
		rc = 0;
	}
	if (rc < 0)
		return errbuf_prefix(e, rc, "route %s via %s", d, gw);
	pthread_mutex_lock(&r->mu);
	hcroute_forget(r, d);
	pthread_mutex_unlock(&r->mu);
	return 0;
}
