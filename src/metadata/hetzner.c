/* hetzner.c - Hetzner Cloud: the root metadata map and the private
 * networks list, both YAML. */
#include "metadata/hetzner.h"

#include <string.h>

#include "metadata/build.h"
#include "base/yamltree.h"

/* md_hetzner_yaml parses a's body; an empty document is an error. */
static int
md_hetzner_yaml(const struct md_answer *a, enum ynode_kind kind, struct ynode **ret,
    struct errbuf *e)
{
	struct ynode *root = NULL;
	int r;

	if ((r = yamltree_parse(a->body, a->len, a->where, &root, e)) < 0)
		return r;
	if (root == NULL || root->kind != kind) {
		yamltree_free(root);
		return errbuf_set(e, ERR_INVALID, "%s: not a YAML %s", a->where,
		    kind == YNODE_MAP ? "map" : "list");
	}
	*ret = root;
	return 0;
}

/* md_hetzner_scalar returns a scalar value of map (NULL and 0 when absent or
 * null and !required). */
static int
md_hetzner_scalar(const struct md_answer *a, const struct ynode *map, const char *key,
    int required, const char **ret, size_t *ret_len, struct errbuf *e)
{
	const struct ynode *n = map ? yamltree_get(map, key) : NULL;

	*ret = NULL;
	*ret_len = 0;
	if (n == NULL || (n->kind == YNODE_SCALAR && yamltree_is_null(n) && n->plain)) {
		if (required)
			return errbuf_set(e, ERR_INVALID, "%s: no %s", a->where, key);
		return 0;
	}
	if (n->kind != YNODE_SCALAR)
		return errbuf_set(e, ERR_INVALID, "%s:%d: %s is not a scalar", a->where, n->line,
		    key);
	if (strlen(n->scalar) != n->scalar_len)
		return errbuf_set(e, ERR_INVALID, "%s:%d: %s has a NUL byte", a->where, n->line,
		    key);
	*ret = n->scalar;
	*ret_len = n->scalar_len;
	return 0;
}

/* md_hetzner_ipv6 adds the static IPv6 subnets of network-config (version
 * 1): their address is the server's own, with its prefix length. */
static int
md_hetzner_ipv6(const struct md_answer *a, const struct ynode *root,
    struct md_instance *in, struct errbuf *e)
{
	const struct ynode *nc = yamltree_get(root, "network-config"), *cfg;
	const char *v;
	size_t len;
	int r;

	if (nc == NULL || nc->kind != YNODE_MAP)
		return 0;
	if ((cfg = yamltree_get(nc, "config")) == NULL || cfg->kind != YNODE_SEQ)
		return 0;
	if (cfg->n > MD_HETZNER_LIST_MAX)
		return errbuf_set(e, ERR_INVALID, "%s: network-config has more than %d interfaces",
		    a->where, MD_HETZNER_LIST_MAX);
	for (size_t i = 0; i < cfg->n; i++) {
		const struct ynode *subs = cfg->items[i]->kind == YNODE_MAP ?
		    yamltree_get(cfg->items[i], "subnets") : NULL;
		if (subs == NULL || subs->kind != YNODE_SEQ)
			continue;
		if (subs->n > MD_HETZNER_LIST_MAX)
			return errbuf_set(e, ERR_INVALID, "%s: network-config has more than %d subnets",
			    a->where, MD_HETZNER_LIST_MAX);
		for (size_t j = 0; j < subs->n; j++) {
			const struct ynode *sn = subs->items[j], *flag;
			const char *slash;
			if (sn->kind != YNODE_MAP ||
			    (flag = yamltree_get(sn, "ipv6")) == NULL || yamltree_bool(flag) != 1)
				continue;
			if ((r = md_hetzner_scalar(a, sn, "address", 0, &v, &len, e)) < 0)
				return r;
			if (v == NULL)
				continue;
			if ((slash = memchr(v, '/', len)) != NULL)
				len = (size_t)(slash - v);
			if ((r = md_build_addr(in, a, "network-config subnets[].address",
			    MD_ADDR_EXTERNAL_IP, v, len, e)) < 0)
				return r;
		}
	}
	return 0;
}

static int
md_hetzner_networks(const struct md_getter *g, struct md_instance *in, struct errbuf *e)
{
	struct md_answer a;
	struct ynode *list = NULL;
	const char *v;
	size_t len;
	int r;

	memset(&a, 0, sizeof(a));
	if ((r = g->get(g->arg, MD_HETZNER_NETWORKS, 1, &a, e)) < 0)
		return r;
	if (a.status == 404)
		goto out;
	if ((r = md_hetzner_yaml(&a, YNODE_SEQ, &list, e)) < 0)
		goto out;
	if (list->n > MD_HETZNER_LIST_MAX) {
		r = errbuf_set(e, ERR_INVALID, "%s: more than %d private networks", a.where,
		    MD_HETZNER_LIST_MAX);
		goto out;
	}
	for (size_t i = 0; i < list->n; i++) {
		if (list->items[i]->kind != YNODE_MAP) {
			r = errbuf_set(e, ERR_INVALID, "%s:%d: a private network is not a map",
			    a.where, list->items[i]->line);
			goto out;
		}
		if ((r = md_hetzner_scalar(&a, list->items[i], "ip", 1, &v, &len, e)) < 0 ||
		    (r = md_build_addr(in, &a, "private-networks[].ip", MD_ADDR_INTERNAL_IP, v, len,
		    e)) < 0)
			goto out;
	}
out:
	yamltree_free(list);
	md_session_answer_free(&a);
	return r;
}

int
md_hetzner_build(const struct md_getter *g, struct md_instance *in, struct errbuf *e)
{
	struct md_answer a;
	struct ynode *root = NULL;
	const char *v;
	size_t len;
	int r;

	in->cloud = MD_CLOUD_HETZNER;
	in->source = MD_SOURCE_SERVICE;
	memset(&a, 0, sizeof(a));
	if ((r = g->get(g->arg, MD_HETZNER_META, 0, &a, e)) < 0)
		return r;
	if ((r = md_hetzner_yaml(&a, YNODE_MAP, &root, e)) < 0)
		goto out;
	if ((r = md_hetzner_scalar(&a, root, "instance-id", 1, &v, &len, e)) < 0)
		goto out;
	if (!md_build_digits(v, len)) {
		r = errbuf_set(e, ERR_INVALID, "%s: instance-id \"%.32s\" is not a positive "
		    "decimal id", a.where, v);
		goto out;
	}
	if ((r = md_build_set(&a, "instance-id", in->instance_id, sizeof(in->instance_id), v,
	    len, MD_V_SEGMENT | MD_V_REQUIRED, e)) < 0 ||
	    (r = md_build_provider_id(in, &a, e, "hcloud://%s", in->instance_id)) < 0 ||
	    (r = md_hetzner_scalar(&a, root, "hostname", 0, &v, &len, e)) < 0 ||
	    (r = md_build_set(&a, "hostname", in->hostname, sizeof(in->hostname), v, len,
	    MD_V_WORD, e)) < 0 ||
	    (r = md_hetzner_scalar(&a, root, "availability-zone", 0, &v, &len, e)) < 0 ||
	    (r = md_build_set(&a, "availability-zone", in->zone, sizeof(in->zone), v, len,
	    MD_V_WORD, e)) < 0)
		goto out;
	memcpy(in->name, in->hostname, strlen(in->hostname) + 1);
	{
		/* the location is the datacenter name without its "-dc<n>" */
		char *dc = strstr(in->zone, "-dc");
		if (dc && dc > in->zone && md_build_digits(dc + 3, strlen(dc + 3))) {
			memcpy(in->region, in->zone, (size_t)(dc - in->zone));
			in->region[dc - in->zone] = '\0';
		}
	}
	/* the hcloud provider's order: Hostname, public IP, then the private
	 * networks' IPs */
	if ((r = md_build_addr(in, &a, "hostname", MD_ADDR_HOSTNAME, in->hostname,
	    strlen(in->hostname), e)) < 0 ||
	    (r = md_hetzner_scalar(&a, root, "public-ipv4", 0, &v, &len, e)) < 0 ||
	    (r = md_build_addr(in, &a, "public-ipv4", MD_ADDR_EXTERNAL_IP, v, len, e)) < 0 ||
	    (r = md_hetzner_networks(g, in, e)) < 0)
		goto out;
	/* The hcloud provider reports the public IPv6 only when configured for
	 * it (its address family defaults to IPv4), and a kubelet's --node-ip
	 * must be among the provider's addresses: it counts only on a server
	 * without IPv4. */
	for (size_t i = 0; i < in->n_addresses; i++)
		if (md_build_ip_family(in->addresses[i].address) == 4)
			goto out;
	r = md_hetzner_ipv6(&a, root, in, e);
out:
	yamltree_free(root);
	md_session_answer_free(&a);
	return r;
}

int
md_hetzner_fetch(const struct md_config *cfg, struct md_instance *in, struct errbuf *e)
{
	return md_session_fetch(cfg, NULL, md_hetzner_build, in, e);
}
