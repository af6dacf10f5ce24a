/* hcloud.c - the `hcloud` provider: its cloud-config, its state and the
 * operations table over hcserver, hclb and hcroute. */
#include "hcloud.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cloudconfig.h"
#include "hcclient.h"
#include "hclb.h"
#include "hcnet.h"
#include "hcroute.h"
#include "hcserver.h"
#include "base/xalloc.h"

struct hcloud_lb_file {
	char *location, *network_zone, *type, *algorithm;
	int use_private_ip, disable_private_ingress, disable_ipv6;
};

struct hcloud_file {
	char *token_file, *endpoint, *ca_file, *network, *address_family;
	long long max_routes;
	int64_t timeout_ns;
	struct hcloud_lb_file lb;
};

static int
hcloud_check_family(const char *v, struct errbuf *e)
{
	if (strcmp(v, "ipv4") != 0 && strcmp(v, "ipv6") != 0 && strcmp(v, "dualstack") != 0)
		return errbuf_set(e, ERR_INVALID, "\"%.32s\" is not ipv4, ipv6 or dualstack", v);
	return 0;
}

/* hcloud_check_endpoint vets the endpoint where the file is read, so an
 * error names its line and column; "" means the default. */
static int
hcloud_check_endpoint(const char *v, struct errbuf *e)
{
	int plain;

	return *v ? hcclient_endpoint_check(v, &plain, e) : 0;
}

static int
hcloud_check_algorithm(const char *v, struct errbuf *e)
{
	if (strcmp(v, "round_robin") != 0 && strcmp(v, "least_connections") != 0)
		return errbuf_set(e, ERR_INVALID, "\"%.32s\" is not round_robin or least_connections",
		    v);
	return 0;
}

static const struct cloudconfig_key hcloud_lb_schema[] = {
	{ .key = "location", .type = CLOUDCONFIG_STRING,
	  .offset = offsetof(struct hcloud_file, lb.location) },
	{ .key = "networkZone", .type = CLOUDCONFIG_STRING,
	  .offset = offsetof(struct hcloud_file, lb.network_zone) },
	{ .key = "type", .type = CLOUDCONFIG_STRING,
	  .offset = offsetof(struct hcloud_file, lb.type) },
	{ .key = "algorithm", .type = CLOUDCONFIG_STRING, .check = hcloud_check_algorithm,
	  .offset = offsetof(struct hcloud_file, lb.algorithm) },
	{ .key = "usePrivateIP", .type = CLOUDCONFIG_BOOL, .def = "false",
	  .offset = offsetof(struct hcloud_file, lb.use_private_ip) },
	{ .key = "disablePrivateIngress", .type = CLOUDCONFIG_BOOL, .def = "false",
	  .offset = offsetof(struct hcloud_file, lb.disable_private_ingress) },
	{ .key = "disableIPv6", .type = CLOUDCONFIG_BOOL, .def = "false",
	  .offset = offsetof(struct hcloud_file, lb.disable_ipv6) },
	{ .key = NULL },
};

static const struct cloudconfig_key hcloud_section_schema[] = {
	{ .key = "tokenFile", .type = CLOUDCONFIG_STRING, .required = 1,
	  .offset = offsetof(struct hcloud_file, token_file) },
	{ .key = "endpoint", .type = CLOUDCONFIG_STRING, .check = hcloud_check_endpoint,
	  .offset = offsetof(struct hcloud_file, endpoint) },
	{ .key = "caFile", .type = CLOUDCONFIG_STRING,
	  .offset = offsetof(struct hcloud_file, ca_file) },
	{ .key = "network", .type = CLOUDCONFIG_STRING,
	  .offset = offsetof(struct hcloud_file, network) },
	{ .key = "addressFamily", .type = CLOUDCONFIG_STRING, .def = "ipv4",
	  .check = hcloud_check_family, .offset = offsetof(struct hcloud_file, address_family) },
	{ .key = "requestTimeout", .type = CLOUDCONFIG_DURATION, .def = "15s",
	  .min = 0, .max = HCLOUD_TIMEOUT_MAX_NS,
	  .offset = offsetof(struct hcloud_file, timeout_ns) },
	{ .key = "maxRoutes", .type = CLOUDCONFIG_INT, .def = "100", .min = 1, .max = 100000,
	  .offset = offsetof(struct hcloud_file, max_routes) },
	{ .key = "loadBalancers", .type = CLOUDCONFIG_SECTION, .section = hcloud_lb_schema },
	{ .key = NULL },
};

static const struct cloudconfig_key hcloud_schema[] = {
	{ .key = "hcloud", .type = CLOUDCONFIG_SECTION, .required = 1,
	  .section = hcloud_section_schema },
	{ .key = NULL },
};

struct hcloud_state {
	struct hcclient *client;
	struct hcnet *net;
	struct hcserver *servers;
	struct hclb *lbs;
	struct hcroute *routes;
};

static void
hcloud_free(void *state)
{
	struct hcloud_state *st = state;

	if (st == NULL)
		return;
	hcroute_free(st->routes);
	hclb_free(st->lbs);
	hcserver_free(st->servers);
	hcnet_free(st->net);
	hcclient_free(st->client);
	free(st);
}

/* hcloud_path makes a relative path the cloud-config directory's. */
static char *
hcloud_path(const char *config, const char *p)
{
	char *copy, *dir, *out;

	if (p == NULL || *p == '\0' || p[0] == '/' || config == NULL || *config == '\0')
		return p ? xstrdup(p) : NULL;
	copy = xstrdup(config);
	dir = dirname(copy);
	out = xasprintf("%s/%s", dir, p);
	free(copy);
	return out;
}

static int
hcloud_init(const struct cloud_config *cfg, void **ret_state, struct errbuf *e)
{
	const char *file = cfg->config_path && *cfg->config_path ? cfg->config_path : NULL;
	struct hcloud_file f;
	struct hcclient_config cc;
	struct hclbspec_defaults d;
	struct hcloud_state *st = NULL;
	char *token = NULL, *ca = NULL;
	int family, r;

	if (file == NULL)
		return errbuf_set(e, ERR_INVALID, "hcloud provider: --cloud-config is required (its "
		    "hcloud.tokenFile names the API token)");
	memset(&f, 0, sizeof(f));
	if ((r = cloudconfig_load(file, hcloud_schema, &f, sizeof(f), e)) < 0)
		return r;
	if (f.token_file == NULL || *f.token_file == '\0') {
		r = errbuf_set(e, ERR_INVALID, "%s: hcloud.tokenFile is empty", file);
		goto out;
	}
	if (f.lb.location && *f.lb.location && f.lb.network_zone && *f.lb.network_zone) {
		r = errbuf_set(e, ERR_INVALID, "%s: hcloud.loadBalancers: location and networkZone "
		    "exclude each other", file);
		goto out;
	}
	token = hcloud_path(file, f.token_file);
	ca = hcloud_path(file, f.ca_file);
	memset(&cc, 0, sizeof(cc));
	cc.endpoint = f.endpoint;
	cc.token_file = token;
	cc.ca_file = ca;
	cc.user_agent = "bootccm (hcloud provider)";
	cc.stop = cfg->stop;
	cc.timeout_ns = f.timeout_ns;
	st = xcalloc(1, sizeof(*st));
	if ((r = hcclient_new(&cc, &st->client, e)) < 0) {
		errbuf_prefix(e, r, "%s: hcloud", file);
		goto out;
	}
	/* the daemon starts without a token (the local node comes from the
	 * metadata service) and reads it once written; --validate wants it now,
	 * read as every request reads it */
	if (cfg->validate && (r = hcclient_token_check(st->client, e)) < 0) {
		r = errbuf_prefix(e, ERR_INVALID, "%s: hcloud.tokenFile", file);
		goto out;
	}
	family = strcmp(f.address_family, "dualstack") == 0 ? HCSERVER_IPV4 | HCSERVER_IPV6 :
	    strcmp(f.address_family, "ipv6") == 0 ? HCSERVER_IPV6 : HCSERVER_IPV4;
	st->net = hcnet_new(st->client, f.network);
	st->servers = hcserver_new(st->client, st->net, family);
	memset(&d, 0, sizeof(d));
	d.location = f.lb.location;
	d.network_zone = f.lb.network_zone;
	d.type = f.lb.type;
	d.algorithm = f.lb.algorithm;
	d.use_private_ip = f.lb.use_private_ip;
	d.disable_private_ingress = f.lb.disable_private_ingress;
	d.disable_ipv6 = f.lb.disable_ipv6;
	if (d.use_private_ip && !hcnet_configured(st->net)) {
		r = errbuf_set(e, ERR_INVALID, "%s: hcloud.loadBalancers.usePrivateIP needs "
		    "hcloud.network", file);
		goto out;
	}
	st->lbs = hclb_new(st->client, st->servers, st->net, &d);
	st->routes = hcroute_new(st->client, st->servers, st->net, f.max_routes);
	*ret_state = st;
	st = NULL;
	r = 0;
out:
	hcloud_free(st);
	free(token);
	free(ca);
	cloudconfig_free(hcloud_schema, &f);
	return r;
}

static int
hcloud_health(void *state, struct errbuf *e)
{
	struct hcloud_state *st = state;
	int r;

	if ((r = hcclient_token_check(st->client, e)) < 0)
		return r;
	if (hcclient_plain_http(st->client))
		return errbuf_set(e, ERR_PERMANENT, "endpoint %s is plain HTTP (allowed to loopback "
		    "only, for tests): the API token travels unencrypted",
		    hcclient_endpoint(st->client));
	return 0;
}

/* hcloud_credentials: the token file's generation (hcclient_token_generation). */
static uint64_t
hcloud_credentials(void *state)
{
	struct hcloud_state *st = state;

	return hcclient_token_generation(st->client);
}

/* --- instances ------------------------------------------------------------------ */

static int
hcloud_exists(void *state, const struct cloud_node *node, int *ret_exists, struct errbuf *e)
{
	return hcserver_exists(((struct hcloud_state *)state)->servers, node, ret_exists, e);
}

static int
hcloud_shutdown(void *state, const struct cloud_node *node, int *ret_shutdown,
    struct errbuf *e)
{
	return hcserver_shutdown(((struct hcloud_state *)state)->servers, node, ret_shutdown, e);
}

static int
hcloud_metadata(void *state, const struct cloud_node *node, struct cloud_instance_metadata *ret,
    struct errbuf *e)
{
	return hcserver_metadata(((struct hcloud_state *)state)->servers, node, ret, e);
}

static int
hcloud_list(void *state, cloud_instance_cb cb, void *arg, struct errbuf *e)
{
	return hcserver_list(((struct hcloud_state *)state)->servers, cb, arg, e);
}

static const struct cloud_instances_ops hcloud_instances = {
	.exists = hcloud_exists,
	.shutdown = hcloud_shutdown,
	.metadata = hcloud_metadata,
	.list = hcloud_list,
};

/* --- load balancers ------------------------------------------------------------- */

static int
hcloud_lb_get(void *state, const char *cluster, const struct cloud_service *svc,
    struct cloud_lb_status *ret_status, int *ret_exists, struct errbuf *e)
{
	return hclb_get(((struct hcloud_state *)state)->lbs, cluster, svc, ret_status, ret_exists,
	    e);
}

static int
hcloud_lb_ensure(void *state, const char *cluster, const struct cloud_service *svc,
    const struct cloud_node *nodes, size_t n_nodes, struct cloud_lb_result *ret,
    struct errbuf *e)
{
	return hclb_ensure(((struct hcloud_state *)state)->lbs, cluster, svc, nodes, n_nodes, ret,
	    e);
}

static int
hcloud_lb_update_hosts(void *state, const char *cluster, const struct cloud_service *svc,
    const struct cloud_node *nodes, size_t n_nodes, struct errbuf *e)
{
	return hclb_update_hosts(((struct hcloud_state *)state)->lbs, cluster, svc, nodes,
	    n_nodes, e);
}

static int
hcloud_lb_ensure_deleted(void *state, const char *cluster, const struct cloud_service *svc,
    struct cloud_lb_result *ret, struct errbuf *e)
{
	return hclb_ensure_deleted(((struct hcloud_state *)state)->lbs, cluster, svc, ret, e);
}

static int
hcloud_lb_verify(void *state, const char *cluster, const struct cloud_services *svcs,
    const struct cloud_node *nodes, size_t n_nodes, unsigned char *drifted, struct errbuf *e)
{
	return hclb_verify(((struct hcloud_state *)state)->lbs, cluster, svcs, nodes, n_nodes,
	    drifted, e);
}

static const char *
hcloud_lb_node_selector(void *state, const struct cloud_service *svc)
{
	(void)state;
	return hclb_node_selector(svc);
}

static const struct cloud_lb_ops hcloud_lbs = {
	.get = hcloud_lb_get,
	.ensure = hcloud_lb_ensure,
	.update_hosts = hcloud_lb_update_hosts,
	.ensure_deleted = hcloud_lb_ensure_deleted,
	.verify = hcloud_lb_verify,
	.node_selector = hcloud_lb_node_selector,
	.observe = NULL,
};

/* --- routes ---------------------------------------------------------------------- */

static int
hcloud_no_network(const struct hcloud_state *st, struct errbuf *e)
{
	if (hcnet_configured(st->net))
		return 0;
	return errbuf_set(e, ERR_PERMANENT, "routes need a network: set hcloud.network in the "
	    "cloud-config, or run with --configure-cloud-routes=false");
}

static int
hcloud_routes_list(void *state, const char *cluster, cloud_route_cb cb, void *arg,
    struct errbuf *e)
{
	struct hcloud_state *st = state;
	int r;

	(void)cluster;
	if ((r = hcloud_no_network(st, e)) < 0)
		return r;
	return hcroute_list(st->routes, cb, arg, e);
}

static int
hcloud_routes_create(void *state, const char *cluster, const char *name_hint,
    const struct cloud_route *route, const struct cloud_node *target, struct errbuf *e)
{
	struct hcloud_state *st = state;
	int r;

	(void)cluster, (void)name_hint;
	if ((r = hcloud_no_network(st, e)) < 0)
		return r;
	return hcroute_create(st->routes, route, target, e);
}

static int
hcloud_routes_delete(void *state, const char *cluster, const struct cloud_route *route,
    struct errbuf *e)
{
	struct hcloud_state *st = state;
	int r;

	(void)cluster;
	if ((r = hcloud_no_network(st, e)) < 0)
		return r;
	return hcroute_delete(st->routes, route, e);
}

static const struct cloud_routes_ops hcloud_routes = {
	.list = hcloud_routes_list,
	.create = hcloud_routes_create,
	.delete_ = hcloud_routes_delete,
};

const struct cloud_provider hcloud_provider = {
	.name = "hcloud",
	.flags = CLOUD_DEFINITIVE,   /* exists answers from the API's own not_found */
	.init = hcloud_init,
	.free = hcloud_free,
	.instances = &hcloud_instances,
	.load_balancers = &hcloud_lbs,
	.routes = &hcloud_routes,
	.health = hcloud_health,
	.credentials = hcloud_credentials,
};
