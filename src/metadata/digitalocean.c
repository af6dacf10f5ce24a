/* digitalocean.c - DigitalOcean: one JSON document with the droplet id,
 * host name, region and interfaces. */
#include "metadata/digitalocean.h"

#include <stdio.h>
#include <string.h>

#include "metadata/build.h"

/* md_digitalocean_ip adds interfaces.<kind>[0].<family>.ip_address. */
static int
md_digitalocean_ip(const struct md_answer *a, struct json_object *ifaces, const char *kind,
    const char *family, enum md_addr_type type, struct md_instance *in, struct errbuf *e)
{
	struct json_object *list, *nic, *fam;
	const char *v;
	size_t len;
	char path[64], field[80];
	int r;

	if ((r = md_build_json_child(a, ifaces, "interfaces", kind, json_type_array, 0, &list,
	    e)) < 0)
		return r;
	if (list == NULL || json_object_array_length(list) == 0)
		return 0;
	nic = json_object_array_get_idx(list, 0);
	if (!json_object_is_type(nic, json_type_object))
		return errbuf_set(e, ERR_INVALID, "%s: interfaces.%s[0] is not an object",
		    a->where, kind);
	snprintf(path, sizeof(path), "interfaces.%s[0]", kind);
	if ((r = md_build_json_child(a, nic, path, family, json_type_object, 0, &fam, e)) < 0)
		return r;
	snprintf(path, sizeof(path), "interfaces.%s[0].%s", kind, family);
	if ((r = md_build_json_str(a, fam, path, "ip_address", 0, &v, &len, e)) < 0)
		return r;
	snprintf(field, sizeof(field), "%s.ip_address", path);
	return md_build_addr(in, a, field, type, v, len, e);
}

int
md_digitalocean_build(const struct md_getter *g, struct md_instance *in,
    struct errbuf *e)
{
	struct md_answer a;
	struct json_object *doc = NULL, *ifaces;
	const char *v;
	size_t len;
	int r;

	in->cloud = MD_CLOUD_DIGITALOCEAN;
	in->source = MD_SOURCE_SERVICE;
	memset(&a, 0, sizeof(a));
	if ((r = g->get(g->arg, MD_DIGITALOCEAN_DOC, 0, &a, e)) < 0)
		return r;
	if ((r = md_build_json(&a, &doc, e)) < 0 ||
	    (r = md_build_json_id(&a, doc, "", "droplet_id", in->instance_id,
	    sizeof(in->instance_id), e)) < 0 ||
	    (r = md_build_provider_id(in, &a, e, "digitalocean://%s", in->instance_id)) < 0 ||
	    (r = md_build_json_str(&a, doc, "", "hostname", 0, &v, &len, e)) < 0 ||
	    (r = md_build_set(&a, "hostname", in->hostname, sizeof(in->hostname), v, len,
	    MD_V_WORD, e)) < 0 ||
	    (r = md_build_json_str(&a, doc, "", "region", 1, &v, &len, e)) < 0 ||
	    (r = md_build_set(&a, "region", in->region, sizeof(in->region), v, len,
	    MD_V_WORD | MD_V_REQUIRED, e)) < 0)
		goto out;
	/* the droplet's name is its host name */
	memcpy(in->name, in->hostname, strlen(in->hostname) + 1);
	if ((r = md_build_addr(in, &a, "hostname", MD_ADDR_HOSTNAME, in->hostname,
	    strlen(in->hostname), e)) < 0)
		goto out;
	if ((r = md_build_json_child(&a, doc, "", "interfaces", json_type_object, 0,
	    &ifaces, e)) < 0)
		goto out;
	if (ifaces &&
	    ((r = md_digitalocean_ip(&a, ifaces, "private", "ipv4", MD_ADDR_INTERNAL_IP, in,
	    e)) < 0 ||
	    (r = md_digitalocean_ip(&a, ifaces, "public", "ipv4", MD_ADDR_EXTERNAL_IP, in,
	    e)) < 0 ||
	    (r = md_digitalocean_ip(&a, ifaces, "public", "ipv6", MD_ADDR_EXTERNAL_IP, in,
	    e)) < 0))
		goto out;
out:
	json_object_put(doc);
	md_session_answer_free(&a);
	return r;
}

int
md_digitalocean_fetch(const struct md_config *cfg, struct md_instance *in, struct errbuf *e)
{
	return md_session_fetch(cfg, NULL, md_digitalocean_build, in, e);
}
