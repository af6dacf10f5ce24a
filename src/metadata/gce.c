/* gce.c - GCE: the recursive instance document (one request, camelCase
 * keys) and the project id; addresses as the GCE provider walks them: each
 * interface's ip, its access configs' external IPs, then the full host name
 * as InternalDNS and Hostname. */
#include "metadata/gce.h"

#include <string.h>

#include "metadata/build.h"

/* md_gce_last takes the last part of "projects/<n>/<kind>/<value>", which
 * must have exactly four non-empty parts with kind as the third. */
static int
md_gce_last(const struct md_answer *a, const char *field, const char *kind,
    const char *v, size_t len, const char **ret, size_t *ret_len, struct errbuf *e)
{
	const char *part[4];
	size_t plen[4], n = 0, start = 0;

	for (size_t i = 0; i <= len; i++) {
		if (i < len && v[i] != '/')
			continue;
		if (n == 4)
			goto bad;
		part[n] = v + start;
		plen[n] = i - start;
		if (plen[n] == 0)
			goto bad;
		n++;
		start = i + 1;
	}
	if (n != 4 || plen[0] != 8 || memcmp(part[0], "projects", 8) != 0 ||
	    plen[2] != strlen(kind) || memcmp(part[2], kind, plen[2]) != 0)
		goto bad;
	*ret = part[3];
	*ret_len = plen[3];
	return 0;
bad:
	return errbuf_set(e, ERR_INVALID, "%s: %s \"%.*s\" is not projects/<number>/%s/<name>",
	    a->where, field, (int)(len > 96 ? 96 : len), v, kind);
}

static int
md_gce_nic(const struct md_answer *a, struct json_object *nic, struct md_instance *in,
    struct errbuf *e)
{
	struct json_object *acs, *v6;
	const char *v;
	size_t len;
	int r;

	if (!json_object_is_type(nic, json_type_object))
		return errbuf_set(e, ERR_INVALID, "%s: a networkInterfaces item is not an object",
		    a->where);
	if ((r = md_build_json_str(a, nic, "networkInterfaces[]", "ip", 0, &v, &len,
	    e)) < 0 ||
	    (r = md_build_addr(in, a, "networkInterfaces[].ip", MD_ADDR_INTERNAL_IP, v, len,
	    e)) < 0)
		return r;
	if ((r = md_build_json_child(a, nic, "networkInterfaces[]", "accessConfigs",
	    json_type_array, 0, &acs, e)) < 0)
		return r;
	for (size_t i = 0; acs && i < json_object_array_length(acs); i++) {
		struct json_object *ac = json_object_array_get_idx(acs, i);
		if (!json_object_is_type(ac, json_type_object))
			return errbuf_set(e, ERR_INVALID, "%s: an accessConfigs item is not an object",
			    a->where);
		/* an access config without an external IP has "" (GCE provider skips it) */
		if ((r = md_build_json_str(a, ac, "accessConfigs[]", "externalIp", 0,
		    &v, &len, e)) < 0 ||
		    (r = md_build_addr(in, a, "accessConfigs[].externalIp", MD_ADDR_EXTERNAL_IP,
		    v, len, e)) < 0)
			return r;
	}
	if ((r = md_build_json_child(a, nic, "networkInterfaces[]", "ipv6s",
	    json_type_array, 0, &v6, e)) < 0)
		return r;
	for (size_t i = 0; v6 && i < json_object_array_length(v6); i++) {
		struct json_object *s = json_object_array_get_idx(v6, i);
		if (!json_object_is_type(s, json_type_string))
			return errbuf_set(e, ERR_INVALID, "%s: an ipv6s item is not a string",
			    a->where);
		if ((r = md_build_addr(in, a, "networkInterfaces[].ipv6s", MD_ADDR_INTERNAL_IP,
		    json_object_get_string(s), (size_t)json_object_get_string_len(s), e)) < 0)
			return r;
	}
	return 0;
}

int
md_gce_build(const struct md_getter *g, struct md_instance *in, struct errbuf *e)
{
	struct md_answer a;
	struct json_object *doc = NULL, *nics;
	char project[MD_SHORT_MAX];
	const char *v, *last;
	size_t len, llen;
	int r;

	in->cloud = MD_CLOUD_GCE;
	in->source = MD_SOURCE_SERVICE;
	memset(&a, 0, sizeof(a));
	if ((r = g->get(g->arg, MD_GCE_INSTANCE, 0, &a, e)) < 0)
		return r;
	if ((r = md_build_json(&a, &doc, e)) < 0)
		goto out;
	if ((r = md_build_json_id(&a, doc, "", "id", in->instance_id,
	    sizeof(in->instance_id), e)) < 0)
		goto out;
	if ((r = md_build_json_str(&a, doc, "", "name", 1, &v, &len, e)) < 0 ||
	    (r = md_build_set(&a, "name", in->name, sizeof(in->name), v, len,
	    MD_V_SEGMENT | MD_V_REQUIRED, e)) < 0)
		goto out;
	if ((r = md_build_json_str(&a, doc, "", "hostname", 0, &v, &len, e)) < 0 ||
	    (r = md_build_set(&a, "hostname", in->hostname, sizeof(in->hostname), v, len,
	    MD_V_WORD, e)) < 0)
		goto out;
	if ((r = md_build_json_str(&a, doc, "", "zone", 1, &v, &len, e)) < 0 ||
	    (r = md_gce_last(&a, "zone", "zones", v, len, &last, &llen, e)) < 0 ||
	    (r = md_build_set(&a, "zone", in->zone, sizeof(in->zone), last, llen,
	    MD_V_SEGMENT | MD_V_REQUIRED, e)) < 0)
		goto out;
	{
		/* GetGCERegion: the zone up to its last '-' */
		char *dash = strrchr(in->zone, '-');
		if (dash == NULL || dash == in->zone) {
			r = errbuf_set(e, ERR_INVALID, "%s: zone \"%s\" has no region part",
			    a.where, in->zone);
			goto out;
		}
		memcpy(in->region, in->zone, (size_t)(dash - in->zone));
		in->region[dash - in->zone] = '\0';
	}
	if ((r = md_build_json_str(&a, doc, "", "machineType", 1, &v, &len,
	    e)) < 0 ||
	    (r = md_gce_last(&a, "machineType", "machineTypes", v, len, &last, &llen, e)) < 0 ||
	    (r = md_build_set(&a, "machineType", in->instance_type, sizeof(in->instance_type),
	    last, llen, MD_V_WORD | MD_V_REQUIRED, e)) < 0)
		goto out;
	if ((r = md_build_json_child(&a, doc, "", "networkInterfaces",
	    json_type_array, 1, &nics, e)) < 0)
		goto out;
	if (json_object_array_length(nics) > MD_GCE_NICS_MAX) {
		r = errbuf_set(e, ERR_INVALID, "%s: more than %d network interfaces", a.where,
		    MD_GCE_NICS_MAX);
		goto out;
	}
	for (size_t i = 0; i < json_object_array_length(nics); i++)
		if ((r = md_gce_nic(&a, json_object_array_get_idx(nics, i), in, e)) < 0)
			goto out;
	if (in->hostname[0] &&
	    ((r = md_build_addr(in, &a, "hostname", MD_ADDR_INTERNAL_DNS, in->hostname,
	    strlen(in->hostname), e)) < 0 ||
	    (r = md_build_addr(in, &a, "hostname", MD_ADDR_HOSTNAME, in->hostname,
	    strlen(in->hostname), e)) < 0))
		goto out;
	json_object_put(doc);
	doc = NULL;
	md_session_answer_free(&a);

	if ((r = md_build_leaf(g, MD_GCE_PROJECT_ID, 0, "project-id", project,
	    sizeof(project), MD_V_SEGMENT | MD_V_REQUIRED, e)) < 0)
		return r;
	{
		struct md_answer where = { .where = "GET " MD_GCE_PROJECT_ID };
		return md_build_provider_id(in, &where, e, "gce://%s/%s/%s", project, in->zone,
		    in->name);
	}
out:
	json_object_put(doc);
	md_session_answer_free(&a);
	return r;
}

int
md_gce_fetch(const struct md_config *cfg, struct md_instance *in, struct errbuf *e)
{
	static const char *const hdrs[] = { "Metadata-Flavor: Google", NULL };

	return md_session_fetch(cfg, hdrs, md_gce_build, in, e);
}
