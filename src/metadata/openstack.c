/* openstack.c - OpenStack: config drive files or the Nova metadata service,
 * tried in cfg->openstack_order. */
#include "metadata/openstack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metadata/build.h"
#include "base/readfile.h"
#include "base/xalloc.h"

int
md_openstack_drive_get(void *arg, const char *path, int optional, struct md_answer *ret,
    struct errbuf *e)
{
	const char *dir = arg;
	struct md_answer a;
	struct stat st;
	int fd, r;

	memset(&a, 0, sizeof(a));
	if ((size_t)snprintf(a.where, sizeof(a.where), "%s%s", dir, path) >= sizeof(a.where))
		return errbuf_set(e, ERR_INVALID, "%s%s: path too long", dir, path);
	if ((fd = readfile_open(a.where, &st, e)) < 0) {
		if (errno == ENOENT && optional) {
			a.body = xstrdup("");
			a.status = 404;
			*ret = a;
			return 0;
		}
		/* a config drive's file absent or not a file: a broken drive */
		return ERR_INVALID;
	}
	r = readfile_fd(fd, a.where, MD_BODY_MAX, &a.body, &a.len, e);
	close(fd);
	if (r < 0)
		return r;
	a.status = 200;
	*ret = a;
	return 0;
}

/* md_openstack_ec2 adds the facts of the EC2-compatible tree: the flavor and
 * the primary fixed IPv4 (InternalIP), then, when last is set, public-ipv4. */
static int
md_openstack_ec2_service(const struct md_getter *g, struct md_instance *in, int last,
    struct errbuf *e)
{
	char ip[MD_NAME_MAX];
	const char *path = last ? "/latest/meta-data/public-ipv4" :
	    "/latest/meta-data/local-ipv4";
	int r;

	if (!last && (r = md_build_leaf(g, "/latest/meta-data/instance-type", 1,
	    "instance-type", in->instance_type, sizeof(in->instance_type), MD_V_WORD, e)) < 0)
		return r;
	if ((r = md_build_leaf(g, path, 1, path + 18, ip, sizeof(ip), MD_V_WORD, e)) < 0)
		return r;
	{
		struct md_answer where;
		memset(&where, 0, sizeof(where));
		snprintf(where.where, sizeof(where.where), "GET %s", path);
		return md_build_addr(in, &where, path + 18,
		    last ? MD_ADDR_EXTERNAL_IP : MD_ADDR_INTERNAL_IP, ip, strlen(ip), e);
	}
}

static int
md_openstack_ec2_drive(const struct md_getter *g, struct md_instance *in,
    struct json_object **ret_doc, struct md_answer *a, struct errbuf *e)
{
	const char *v;
	size_t len;
	int r;

	*ret_doc = NULL;
	if ((r = g->get(g->arg, MD_OPENSTACK_DRIVE_EC2, 1, a, e)) < 0)
		return r;
	if (a->status == 404)
		return 0;
	if ((r = md_build_json(a, ret_doc, e)) < 0 ||
	    (r = md_build_json_str(a, *ret_doc, "", "instance-type", 0, &v, &len,
	    e)) < 0 ||
	    (r = md_build_set(a, "instance-type", in->instance_type, sizeof(in->instance_type),
	    v, len, MD_V_WORD, e)) < 0 ||
	    (r = md_build_json_str(a, *ret_doc, "", "local-ipv4", 0, &v, &len,
	    e)) < 0)
		return r;
	return md_build_addr(in, a, "local-ipv4", MD_ADDR_INTERNAL_IP, v, len, e);
}

/* md_openstack_networks adds the static addresses of network_data.json. */
static int
md_openstack_networks(const struct md_getter *g, struct md_instance *in, struct errbuf *e)
{
	struct md_answer a;
	struct json_object *doc = NULL, *nets;
	const char *v;
	size_t len;
	int r;

	memset(&a, 0, sizeof(a));
	if ((r = g->get(g->arg, MD_OPENSTACK_NETWORK, 1, &a, e)) < 0)
		return r;
	if (a.status == 404)
		goto out;
	if ((r = md_build_json(&a, &doc, e)) < 0 ||
	    (r = md_build_json_child(&a, doc, "", "networks", json_type_array, 0, &nets,
	    e)) < 0)
		goto out;
	if (nets && json_object_array_length(nets) > MD_OPENSTACK_NETWORKS_MAX) {
		r = errbuf_set(e, ERR_INVALID, "%s: more than %d networks", a.where,
		    MD_OPENSTACK_NETWORKS_MAX);
		goto out;
	}
	for (size_t i = 0; nets && i < json_object_array_length(nets); i++) {
		struct json_object *n = json_object_array_get_idx(nets, i);
		if (!json_object_is_type(n, json_type_object)) {
			r = errbuf_set(e, ERR_INVALID, "%s: networks[%zu] is not an object", a.where,
			    i);
			goto out;
		}
		if ((r = md_build_json_str(&a, n, "networks[]", "type", 1, &v, &len, e)) < 0)
			goto out;
		/* ipv4_dhcp and ipv6_dhcp(stateless) networks carry no address */
		if (!((len == 4 && memcmp(v, "ipv4", 4) == 0) ||
		    (len == 4 && memcmp(v, "ipv6", 4) == 0)))
			continue;
		if ((r = md_build_json_str(&a, n, "networks[]", "ip_address", 1, &v,
		    &len, e)) < 0 ||
		    (r = md_build_addr(in, &a, "networks[].ip_address", MD_ADDR_INTERNAL_IP, v, len,
		    e)) < 0)
			goto out;
	}
out:
	json_object_put(doc);
	md_session_answer_free(&a);
	return r;
}

int
md_openstack_build(const struct md_getter *g, enum md_source source,
    struct md_instance *in, struct errbuf *e)
{
	struct md_answer a, ea;
	struct json_object *doc = NULL, *ec2 = NULL;
	const char *v;
	size_t len;
	int r;

	in->cloud = MD_CLOUD_OPENSTACK;
	in->source = source;
	memset(&a, 0, sizeof(a));
	memset(&ea, 0, sizeof(ea));
	if ((r = g->get(g->arg, MD_OPENSTACK_META, 0, &a, e)) < 0)
		return r;
	if ((r = md_build_json(&a, &doc, e)) < 0 ||
	    (r = md_build_json_str(&a, doc, "", "uuid", 1, &v, &len, e)) < 0 ||
	    (r = md_build_set(&a, "uuid", in->instance_id, sizeof(in->instance_id), v, len,
	    MD_V_SEGMENT | MD_V_REQUIRED, e)) < 0 ||
	    (r = md_build_json_str(&a, doc, "", "name", 0, &v, &len, e)) < 0 ||
	    (r = md_build_set(&a, "name", in->name, sizeof(in->name), v, len,
	    MD_V_TEXT | MD_V_UTF8, e)) < 0 ||
	    (r = md_build_json_str(&a, doc, "", "hostname", 0, &v, &len, e)) < 0 ||
	    (r = md_build_set(&a, "hostname", in->hostname, sizeof(in->hostname), v, len,
	    MD_V_WORD, e)) < 0 ||
	    (r = md_build_json_str(&a, doc, "", "availability_zone", 0, &v,
	    &len, e)) < 0 ||
	    (r = md_build_set(&a, "availability_zone", in->zone, sizeof(in->zone), v, len,
	    MD_V_TEXT | MD_V_UTF8, e)) < 0 ||
	    (r = md_build_provider_id(in, &a, e, "openstack:///%s", in->instance_id)) < 0)
		goto out;
	json_object_put(doc);
	doc = NULL;
	md_session_answer_free(&a);

	if (source == MD_SOURCE_SERVICE)
		r = md_openstack_ec2_service(g, in, 0, e);
	else
		r = md_openstack_ec2_drive(g, in, &ec2, &ea, e);
	if (r < 0 || (r = md_openstack_networks(g, in, e)) < 0)
		goto out;
	if (source == MD_SOURCE_SERVICE) {
		r = md_openstack_ec2_service(g, in, 1, e);
	} else if (ec2) {
		if ((r = md_build_json_str(&ea, ec2, "", "public-ipv4", 0, &v, &len,
		    e)) == 0)
			r = md_build_addr(in, &ea, "public-ipv4", MD_ADDR_EXTERNAL_IP, v, len, e);
	}
out:
	json_object_put(doc);
	json_object_put(ec2);
	md_session_answer_free(&a);
	md_session_answer_free(&ea);
	return r;
}

/* md_openstack_from_drive reads the config drive: ERR_NOT_FOUND when there
 * is none (nothing configured, or no meta_data.json in it). */
static int
md_openstack_from_drive(const struct md_config *cfg, struct md_instance *in,
    struct errbuf *e)
{
	char path[MD_URL_MAX];
	struct md_getter g = { md_openstack_drive_get, (void *)cfg->config_drive };
	struct stat st;

	if (cfg->config_drive == NULL || cfg->config_drive[0] == '\0')
		return errbuf_set(e, ERR_NOT_FOUND, "no config drive configured");
	if ((size_t)snprintf(path, sizeof(path), "%s%s", cfg->config_drive, MD_OPENSTACK_META) >=
	    sizeof(path))
		return errbuf_set(e, ERR_INVALID, "%s: path too long", cfg->config_drive);
	if (stat(path, &st) < 0 && errno == ENOENT)
		return errbuf_set(e, ERR_NOT_FOUND, "no config drive at %s (no %s)",
		    cfg->config_drive, &MD_OPENSTACK_META[1]);
	return md_openstack_build(&g, MD_SOURCE_CONFIG_DRIVE, in, e);
}

static int
md_openstack_from_service(const struct md_config *cfg, struct md_instance *in,
    struct errbuf *e)
{
	struct md_session s;
	struct md_getter g = { md_session_get, &s };
	int r;

	if ((r = md_session_open(&s, cfg, cfg->endpoint ? cfg->endpoint : MD_ENDPOINT_DEFAULT,
	    NULL, e)) < 0)
		return r;
	r = md_openstack_build(&g, MD_SOURCE_SERVICE, in, e);
	md_session_close(&s);
	return r;
}

int
md_openstack_fetch(const struct md_config *cfg, struct md_instance *in, struct errbuf *e)
{
	char tried[ERRBUF_MAX] = "";
	size_t used = 0;
	int r = ERR_NOT_FOUND;

	for (size_t i = 0; i < cfg->openstack_order_n && i < 2; i++) {
		if (cfg->openstack_order[i] == MD_SOURCE_CONFIG_DRIVE)
			r = md_openstack_from_drive(cfg, in, e);
		else
			r = md_openstack_from_service(cfg, in, e);
		if (r != ERR_NOT_FOUND)
			return r;
		/* absent: remember why, try the next source */
		used += (size_t)snprintf(tried + used, sizeof(tried) - used, "%s%s",
		    used ? "; " : "", e ? e->msg : "");
		if (used >= sizeof(tried))
			used = sizeof(tried) - 1;
	}
	return errbuf_set(e, ERR_NOT_FOUND, "%s", used ? tried : "no OpenStack metadata source");
}
