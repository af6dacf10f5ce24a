/* azure.c - Azure IMDS: /metadata/instance (compute and the primary
 * interface's addresses, as the Azure provider reads them) and, without a
 * public IPv4 on the interface, /metadata/loadbalancer. */
#include "metadata/azure.h"

#include <stdio.h>
#include <string.h>

#include "metadata/build.h"

#define MD_AZURE_ARM_PREFIX "/subscriptions/"
#define MD_AZURE_RG "/resourceGroups/"
#define MD_AZURE_PROVIDERS "/providers/Microsoft.Compute/"

static void
md_azure_lower(char *s)
{
	for (; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

/* md_azure_resource_id checks an ARM id against the Azure provider's
 * providerID pattern and lowers its resource group, into dst. */
static int
md_azure_resource_id(const struct md_answer *a, const char *v, size_t len, char *dst,
    size_t cap, struct errbuf *e)
{
	char *rg, *end;
	int r;

	if ((r = md_build_set(a, "compute.resourceId", dst, cap, v, len,
	    MD_V_WORD | MD_V_REQUIRED, e)) < 0)
		return r;
	/* the Azure provider's pattern is case-sensitive */
	if (strncmp(dst, MD_AZURE_ARM_PREFIX, strlen(MD_AZURE_ARM_PREFIX)) != 0 ||
	    (rg = strstr(dst, MD_AZURE_RG)) == NULL || strstr(rg, MD_AZURE_PROVIDERS) == NULL)
		return errbuf_set(e, ERR_INVALID, "%s: compute.resourceId \"%.128s\" is not "
		    "/subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.Compute/...",
		    a->where, dst);
	for (const char *c = dst; *c; c++)
		if (strchr("\"'\\$`*?[]{}", *c) != NULL)
			return errbuf_set(e, ERR_INVALID,
			    "%s: compute.resourceId has a '%c'", a->where, *c);
	rg += strlen(MD_AZURE_RG);
	end = strchr(rg, '/');
	for (char *c = rg; c < end; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
	return 0;
}

/* md_azure_compose builds the ARM id the way the Azure provider does when
 * it has only the names (getStandardMachineID, getVmssMachineID). */
static int
md_azure_compose(const struct md_answer *a, struct json_object *compute, char *dst,
    size_t cap, struct errbuf *e)
{
	char sub[MD_SHORT_MAX], rg[MD_SHORT_MAX], set[MD_SHORT_MAX], name[MD_SHORT_MAX];
	const char *v;
	size_t len;
	int r, n;

	if ((r = md_build_json_str(a, compute, "compute", "subscriptionId", 1,
	    &v, &len, e)) < 0 ||
	    (r = md_build_set(a, "compute.subscriptionId", sub, sizeof(sub), v, len,
	    MD_V_SEGMENT | MD_V_REQUIRED, e)) < 0 ||
	    (r = md_build_json_str(a, compute, "compute", "resourceGroupName",
	    1, &v, &len, e)) < 0 ||
	    (r = md_build_set(a, "compute.resourceGroupName", rg, sizeof(rg), v, len,
	    MD_V_SEGMENT | MD_V_REQUIRED, e)) < 0 ||
	    (r = md_build_json_str(a, compute, "compute", "vmScaleSetName", 0,
	    &v, &len, e)) < 0 ||
	    (r = md_build_set(a, "compute.vmScaleSetName", set, sizeof(set), v, len,
	    MD_V_SEGMENT, e)) < 0 ||
	    (r = md_build_json_str(a, compute, "compute", "name", 1, &v, &len, e)) < 0 ||
	    (r = md_build_set(a, "compute.name", name, sizeof(name), v, len,
	    MD_V_SEGMENT | MD_V_REQUIRED, e)) < 0)
		return r;
	md_azure_lower(sub);
	md_azure_lower(rg);
	if (set[0] == '\0') {
		n = snprintf(dst, cap, MD_AZURE_ARM_PREFIX "%s" MD_AZURE_RG "%s"
		    MD_AZURE_PROVIDERS "virtualMachines/%s", sub, rg, name);
	} else {
		/* a scale set instance is named <set>_<instance id> */
		char *us = strrchr(name, '_');
		if (us == NULL || us == name || us[1] == '\0')
			return errbuf_set(e, ERR_INVALID, "%s: compute.name \"%s\" of a scale set "
			    "instance is not <set>_<instance>", a->where, name);
		*us = '\0';
		n = snprintf(dst, cap, MD_AZURE_ARM_PREFIX "%s" MD_AZURE_RG "%s"
		    MD_AZURE_PROVIDERS "virtualMachineScaleSets/%s/virtualMachines/%s",
		    sub, rg, name, us + 1);
	}
	if (n < 0 || (size_t)n >= cap)
		return errbuf_set(e, ERR_INVALID, "%s: the resource id is too long", a->where);
	return 0;
}

/* md_azure_ips adds one address family's ipAddress[] of an interface. */
static int
md_azure_ips(const struct md_answer *a, struct json_object *iface, const char *family,
    struct md_instance *in, int *ret_public, struct errbuf *e)
{
	struct json_object *fam, *ips;
	char path[64];
	const char *v;
	size_t len;
	int r;

	if ((r = md_build_json_child(a, iface, "network.interface[0]", family,
	    json_type_object, 0, &fam, e)) < 0)
		return r;
	snprintf(path, sizeof(path), "network.interface[0].%s", family);
	if ((r = md_build_json_child(a, fam, path, "ipAddress", json_type_array, 0, &ips,
	    e)) < 0)
		return r;
	for (size_t i = 0; ips && i < json_object_array_length(ips); i++) {
		struct json_object *ip = json_object_array_get_idx(ips, i);
		if (!json_object_is_type(ip, json_type_object))
			return errbuf_set(e, ERR_INVALID, "%s: %s.ipAddress[%zu] is not an object",
			    a->where, path, i);
		if ((r = md_build_json_str(a, ip, "", "privateIpAddress", 0, &v,
		    &len, e)) < 0 ||
		    (r = md_build_addr(in, a, "privateIpAddress", MD_ADDR_INTERNAL_IP, v, len,
		    e)) < 0 ||
		    (r = md_build_json_str(a, ip, "", "publicIpAddress", 0, &v,
		    &len, e)) < 0 ||
		    (r = md_build_addr(in, a, "publicIpAddress", MD_ADDR_EXTERNAL_IP, v, len,
		    e)) < 0)
			return r;
		if (len > 0 && strcmp(family, "ipv4") == 0)
			*ret_public = 1;
	}
	return 0;
}

/* md_azure_lb adds the load balancer's frontend IPv4 for one of our private
 * addresses as ExternalIP; a 404 means no (standard) load balancer. */
static int
md_azure_lb(const struct md_getter *g, struct md_instance *in, struct errbuf *e)
{
	struct md_answer a;
	struct json_object *doc = NULL, *lb, *list;
	const char *v;
	size_t len;
	int r;

	memset(&a, 0, sizeof(a));
	if ((r = g->get(g->arg, MD_AZURE_LOADBALANCER, 1, &a, e)) < 0)
		return r;
	if (a.status == 404)
		goto out;
	if ((r = md_build_json(&a, &doc, e)) < 0 ||
	    (r = md_build_json_child(&a, doc, "", "loadbalancer", json_type_object,
	    1, &lb, e)) < 0 ||
	    (r = md_build_json_child(&a, lb, "loadbalancer",
	    "publicIpAddresses", json_type_array, 0, &list, e)) < 0)
		goto out;
	for (size_t i = 0; list && i < json_object_array_length(list); i++) {
		struct json_object *it = json_object_array_get_idx(list, i);
		char priv[MD_NAME_MAX];
		int mine = 0;
		if (!json_object_is_type(it, json_type_object)) {
			r = errbuf_set(e, ERR_INVALID, "%s: publicIpAddresses[%zu] is not an object",
			    a.where, i);
			goto out;
		}
		if ((r = md_build_json_str(&a, it, "publicIpAddresses[]",
		    "privateIpAddress", 0, &v, &len, e)) < 0 ||
		    (r = md_build_set(&a, "publicIpAddresses[].privateIpAddress", priv,
		    sizeof(priv), v, len, MD_V_WORD, e)) < 0)
			goto out;
		for (size_t j = 0; j < in->n_addresses; j++)
			if (in->addresses[j].type == MD_ADDR_INTERNAL_IP &&
			    strcmp(in->addresses[j].address, priv) == 0)
				mine = 1;
		if (!mine)
			continue;
		if ((r = md_build_json_str(&a, it, "publicIpAddresses[]",
		    "frontendIpAddress", 0, &v, &len, e)) < 0 ||
		    (r = md_build_addr(in, &a, "frontendIpAddress", MD_ADDR_EXTERNAL_IP, v, len,
		    e)) < 0)
			goto out;
	}
out:
	json_object_put(doc);
	md_session_answer_free(&a);
	return r;
}

int
md_azure_build(const struct md_getter *g, struct md_instance *in, struct errbuf *e)
{
	struct md_answer a;
	struct json_object *doc = NULL, *compute, *net, *ifaces, *os;
	char zone[MD_SHORT_MAX], arm[MD_ID_MAX];
	const char *v;
	size_t len;
	int r, public = 0;

	in->cloud = MD_CLOUD_AZURE;
	in->source = MD_SOURCE_SERVICE;
	memset(&a, 0, sizeof(a));
	if ((r = g->get(g->arg, MD_AZURE_INSTANCE, 0, &a, e)) < 0)
		return r;
	if ((r = md_build_json(&a, &doc, e)) < 0 ||
	    (r = md_build_json_child(&a, doc, "", "compute", json_type_object, 1,
	    &compute, e)) < 0)
		goto out;
	if ((r = md_build_json_str(&a, compute, "compute", "vmId", 1, &v, &len, e)) < 0 ||
	    (r = md_build_set(&a, "compute.vmId", in->instance_id, sizeof(in->instance_id), v,
	    len, MD_V_SEGMENT | MD_V_REQUIRED, e)) < 0 ||
	    (r = md_build_json_str(&a, compute, "compute", "name", 1, &v, &len, e)) < 0 ||
	    (r = md_build_set(&a, "compute.name", in->name, sizeof(in->name), v, len,
	    MD_V_SEGMENT | MD_V_REQUIRED, e)) < 0 ||
	    (r = md_build_json_str(&a, compute, "compute", "vmSize", 1, &v, &len,
	    e)) < 0 ||
	    (r = md_build_set(&a, "compute.vmSize", in->instance_type,
	    sizeof(in->instance_type), v, len, MD_V_WORD | MD_V_REQUIRED, e)) < 0 ||
	    (r = md_build_json_str(&a, compute, "compute", "location", 1, &v, &len,
	    e)) < 0 ||
	    (r = md_build_set(&a, "compute.location", in->region, sizeof(in->region), v, len,
	    MD_V_WORD | MD_V_REQUIRED, e)) < 0)
		goto out;
	md_azure_lower(in->region);
	/* makeZone: <location>-<zone>; no zone: the fault domain */
	if ((r = md_build_json_str(&a, compute, "compute", "zone", 0, &v, &len, e)) < 0 ||
	    (r = md_build_set(&a, "compute.zone", zone, sizeof(zone), v, len, MD_V_WORD,
	    e)) < 0)
		goto out;
	if (zone[0]) {
		if ((size_t)snprintf(in->zone, sizeof(in->zone), "%s-%s", in->region, zone) >=
		    sizeof(in->zone)) {
			r = errbuf_set(e, ERR_INVALID, "%s: compute.zone is too long", a.where);
			goto out;
		}
		md_azure_lower(in->zone);
	} else if ((r = md_build_json_str(&a, compute, "compute",
	    "platformFaultDomain", 0, &v, &len, e)) < 0 ||
	    (r = md_build_set(&a, "compute.platformFaultDomain", in->zone, sizeof(in->zone), v,
	    len, MD_V_WORD, e)) < 0) {
		goto out;
	}
	if ((r = md_build_json_child(&a, compute, "compute", "osProfile",
	    json_type_object, 0, &os, e)) < 0 ||
	    (r = md_build_json_str(&a, os, "compute.osProfile", "computerName", 0,
	    &v, &len, e)) < 0 ||
	    (r = md_build_set(&a, "compute.osProfile.computerName", in->hostname,
	    sizeof(in->hostname), v, len, MD_V_WORD, e)) < 0)
		goto out;
	if (in->hostname[0] == '\0')
		memcpy(in->hostname, in->name, strlen(in->name) + 1);
	if ((r = md_build_json_str(&a, compute, "compute", "resourceId", 0, &v,
	    &len, e)) < 0)
		goto out;
	r = len ? md_azure_resource_id(&a, v, len, arm, sizeof(arm), e) :
	    md_azure_compose(&a, compute, arm, sizeof(arm), e);
	if (r < 0 || (r = md_build_provider_id(in, &a, e, "azure://%s", arm)) < 0)
		goto out;

	/* the node name (lower case) is the Hostname; then the primary
	 * interface's addresses, IPv4 then IPv6 */
	{
		char host[MD_NAME_MAX];
		memcpy(host, in->name, strlen(in->name) + 1);
		md_azure_lower(host);
		if ((r = md_build_addr(in, &a, "compute.name", MD_ADDR_HOSTNAME, host,
		    strlen(host), e)) < 0)
			goto out;
	}
	if ((r = md_build_json_child(&a, doc, "", "network", json_type_object, 1, &net,
	    e)) < 0 ||
	    (r = md_build_json_child(&a, net, "network", "interface", json_type_array,
	    1, &ifaces, e)) < 0)
		goto out;
	if (json_object_array_length(ifaces) > 0) {
		struct json_object *iface = json_object_array_get_idx(ifaces, 0);
		if (!json_object_is_type(iface, json_type_object)) {
			r = errbuf_set(e, ERR_INVALID, "%s: network.interface[0] is not an object",
			    a.where);
			goto out;
		}
		if ((r = md_azure_ips(&a, iface, "ipv4", in, &public, e)) < 0 ||
		    (r = md_azure_ips(&a, iface, "ipv6", in, &public, e)) < 0)
			goto out;
	}
	json_object_put(doc);
	doc = NULL;
	md_session_answer_free(&a);
	if (!public)
		return md_azure_lb(g, in, e);
	return 0;
out:
	json_object_put(doc);
	md_session_answer_free(&a);
	return r;
}

int
md_azure_fetch(const struct md_config *cfg, struct md_instance *in, struct errbuf *e)
{
	static const char *const hdrs[] = { "Metadata: true", NULL };

	return md_session_fetch(cfg, hdrs, md_azure_build, in, e);
}
