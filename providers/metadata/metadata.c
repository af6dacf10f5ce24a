/* metadata.c - the `metadata` provider: instance metadata for the local node,
 * what the kubelet reported at registration for the others; the metadata
 * layer's md_* answers are converted into the provider interface's types. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloud.h"
#include "config/cloudconfig.h"
#include "base/err.h"
#include "base/labelsel.h"
#include "metadata.h"
#include "metadata/metadata.h"
#include "metadata/session.h"
#include "base/xalloc.h"

/* The interface's fields hold whatever the metadata layer's do. */
_Static_assert(MD_ID_MAX <= CLOUD_ID_MAX, "providerID does not fit");
_Static_assert(MD_SHORT_MAX <= CLOUD_SHORT_MAX, "instance type, zone or region does not fit");
_Static_assert(MD_NAME_MAX <= CLOUD_ADDR_MAX, "an address does not fit");

/* The state: the merged metadata-layer config and the strings it borrows. */
struct metadata_state {
	char *node_name;
	char *cloud, *endpoint, *dmi_dir, *config_drive;
	struct md_config md;
	metadata_fetch_fn fetch;
};

/* The cloud-config file's keys. */
struct metadata_file {
	char *cloud, *endpoint, *dmi_dir, *config_drive;
};

/* The file's values are checked where they are written (FILE:LINE:COL),
 * as md_config_set checks the --metadata-* flags. */
static int
metadata_check_cloud(const char *v, struct errbuf *e)
{
	enum md_cloud c;

	if (*v == '\0' || strcmp(v, "auto") == 0 || md_cloud_parse(v, &c) == 0)
		return 0;
	return errbuf_set(e, ERR_INVALID, "\"%s\": want auto, ec2, gce, azure, openstack, "
	    "digitalocean or hetzner", v);
}

static int
metadata_check_endpoint(const char *v, struct errbuf *e)
{
	char host[256], port[8];

	if (*v == '\0')
		return 0;
	if (strlen(v) >= MD_URL_MAX - 64)
		return errbuf_set(e, ERR_INVALID, "longer than %d bytes", MD_URL_MAX - 65);
	return md_session_parse_url(v, host, sizeof(host), port, sizeof(port), e);
}

static int
metadata_check_path(const char *v, struct errbuf *e)
{
	if (strlen(v) >= MD_URL_MAX - 64)
		return errbuf_set(e, ERR_INVALID, "longer than %d bytes", MD_URL_MAX - 65);
	return 0;
}

static const struct cloudconfig_key metadata_section_schema[] = {
	{ .key = "cloud", .type = CLOUDCONFIG_STRING, .check = metadata_check_cloud,
	  .offset = offsetof(struct metadata_file, cloud) },
	{ .key = "endpoint", .type = CLOUDCONFIG_STRING, .check = metadata_check_endpoint,
	  .offset = offsetof(struct metadata_file, endpoint) },
	{ .key = "dmiDir", .type = CLOUDCONFIG_STRING, .check = metadata_check_path,
	  .offset = offsetof(struct metadata_file, dmi_dir) },
	{ .key = "configDrive", .type = CLOUDCONFIG_STRING, .check = metadata_check_path,
	  .offset = offsetof(struct metadata_file, config_drive) },
	{ .key = NULL },
};

static const struct cloudconfig_key metadata_schema[] = {
	{ .key = "metadata", .type = CLOUDCONFIG_SECTION, .section = metadata_section_schema },
	{ .key = NULL },
};

/* metadata_flag_set tells whether a --metadata-* flag was given: the
 * daemon's option parser fills in the flag's default, which must not
 * override the file. */
static int
metadata_flag_set(const char *v, const char *def)
{
	return v != NULL && *v != '\0' && (def == NULL || strcmp(v, def) != 0);
}

/* metadata_pick copies the flag when it was given, else the file's key (or
 * nothing). */
static char *
metadata_pick(const char *flag, const char *def, const char *file)
{
	const char *v = metadata_flag_set(flag, def) ? flag : file;

	return v != NULL ? xstrdup(v) : NULL;
}

static void
metadata_free(void *state)
{
	struct metadata_state *st = state;

	if (st == NULL)
		return;
	free(st->node_name);
	free(st->cloud);
	free(st->endpoint);
	free(st->dmi_dir);
	free(st->config_drive);
	free(st);
}

static int
metadata_init(const struct cloud_config *cfg, void **ret_state, struct errbuf *e)
{
	struct metadata_file file;
	struct metadata_state *st;
	int r;

	if (cfg->node_name == NULL || *cfg->node_name == '\0')
		return errbuf_set(e, ERR_INVALID, "metadata provider: --node-name is empty");
	memset(&file, 0, sizeof(file));
	if ((r = cloudconfig_load(cfg->config_path, metadata_schema, &file, sizeof(file),
	    e)) < 0)
		return r;
	st = xcalloc(1, sizeof(*st));
	st->node_name = xstrdup(cfg->node_name);
	st->cloud = metadata_pick(cfg->md_cloud, "auto", file.cloud);
	st->endpoint = metadata_pick(cfg->md_endpoint, NULL, file.endpoint);
	st->dmi_dir = metadata_pick(cfg->md_dmi_dir, MD_DMI_DIR_DEFAULT, file.dmi_dir);
	st->config_drive = metadata_pick(cfg->md_config_drive, NULL, file.config_drive);
	md_config_init(&st->md);
	if ((r = md_config_set(&st->md, st->cloud, st->endpoint, st->dmi_dir,
	    st->config_drive, e)) < 0) {
		errbuf_prefix(e, r, "metadata provider (flags or %s metadata:)",
		    cfg->config_path && *cfg->config_path ? cfg->config_path : "cloud-config");
		goto out;
	}
	st->md.stop = cfg->stop;
	st->fetch = md_fetch;
	*ret_state = st;
	st = NULL;
	r = 0;
out:
	metadata_free(st);
	cloudconfig_free(metadata_schema, &file);
	return r;
}

void
metadata_set_fetch(void *state, metadata_fetch_fn fetch)
{
	((struct metadata_state *)state)->fetch = fetch;
}

const struct md_config *
metadata_md_config(const void *state)
{
	return &((const struct metadata_state *)state)->md;
}

static int
metadata_local(struct metadata_state *st, const struct cloud_node *node,
    struct cloud_instance_metadata *m, struct errbuf *e)
{
	struct md_instance *in;
	size_t i;
	int r;

	/* struct md_instance is several kilobytes: keep it off worker stacks */
	in = xcalloc(1, sizeof(*in));
	if ((r = st->fetch(&st->md, in, e)) < 0) {
		/* the metadata layer's ERR_NOT_FOUND means "no metadata service",
		 * not "no such instance": it must never reach a caller as the
		 * instance-not-found sentinel */
		if (r == ERR_NOT_FOUND)
			r = ERR_PERMANENT;
		errbuf_prefix(e, r, "node %s (local): instance metadata", node->name);
		goto out;
	}
	if (!cloud_provider_id_valid(in->provider_id) ||
	    !labelsel_value_ok(in->zone) || !labelsel_value_ok(in->region) ||
	    !labelsel_value_ok(in->instance_type) || in->n_addresses > CLOUD_ADDRS_MAX) {
		r = errbuf_set(e, ERR_INVALID, "node %s (local): instance metadata: unusable "
		    "providerID \"%.200s\", zone, region or instance type", node->name,
		    in->provider_id);
		goto out;
	}
	for (i = 0; i < in->n_addresses; i++) {
		/* the two layers name address types as the API does */
		if (cloud_addr_type_parse(md_addr_type_name(in->addresses[i].type),
		    &m->addresses[i].type) < 0) {
			r = errbuf_set(e, ERR_INVALID, "node %s (local): instance metadata: "
			    "address %s has an unknown type", node->name,
			    in->addresses[i].address);
			goto out;
		}
		memcpy(m->addresses[i].address, in->addresses[i].address,
		    sizeof(in->addresses[i].address));
	}
	snprintf(m->source, sizeof(m->source), "%s", CLOUD_SOURCE_METADATA);
	memcpy(m->provider_id, in->provider_id, sizeof(in->provider_id));
	memcpy(m->instance_type, in->instance_type, sizeof(in->instance_type));
	memcpy(m->zone, in->zone, sizeof(in->zone));
	memcpy(m->region, in->region, sizeof(in->region));
	m->n_addresses = in->n_addresses;
	r = 0;
out:
	free(in);
	return r;
}

static int
metadata_metadata(void *state, const struct cloud_node *node,
    struct cloud_instance_metadata *ret, struct errbuf *e)
{
	struct metadata_state *st = state;
	struct cloud_instance_metadata *m;
	int r;

	if (node == NULL || node->name == NULL || *node->name == '\0')
		return errbuf_set(e, ERR_INVALID, "metadata provider: a node without a name");
	m = xcalloc(1, sizeof(*m));
	if (strcmp(node->name, st->node_name) == 0)
		r = metadata_local(st, node, m, e);
	else
		r = cloud_kubelet_reported(node, m, e);
	if (r == 0)
		memcpy(ret, m, sizeof(*ret));
	free(m);
	return r;
}

static int
metadata_exists(void *state, const struct cloud_node *node, int *ret_exists,
    struct errbuf *e)
{
	(void)state;
	(void)ret_exists;
	return errbuf_set(e, ERR_NOT_IMPLEMENTED, "node %s: the metadata provider cannot tell "
	    "whether an instance exists", node && node->name ? node->name : "");
}

static int
metadata_shutdown(void *state, const struct cloud_node *node, int *ret_shutdown,
    struct errbuf *e)
{
	(void)state;
	(void)ret_shutdown;
	return errbuf_set(e, ERR_NOT_IMPLEMENTED, "node %s: the metadata provider cannot tell "
	    "whether an instance is shut down", node && node->name ? node->name : "");
}

static const struct cloud_instances_ops metadata_instances = {
	.exists = metadata_exists,
	.shutdown = metadata_shutdown,
	.metadata = metadata_metadata,
	.list = NULL,
};

const struct cloud_provider metadata_provider = {
	.name = "metadata",
	.flags = 0, /* not CLOUD_DEFINITIVE: its answers never delete a Node */
	.init = metadata_init,
	.free = metadata_free,
	.instances = &metadata_instances,
	.load_balancers = NULL,
	.routes = NULL,
};
