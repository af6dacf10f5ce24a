/* metadata.c - the metadata layer's front: configuration, cloud detection
 * from DMI files (cloud-init's signals, no network), and md_fetch, which
 * dispatches to the cloud's dialect and checks the answer against DMI. */
#include "metadata/metadata.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metadata/azure.h"
#include "metadata/digitalocean.h"
#include "metadata/ec2.h"
#include "metadata/gce.h"
#include "metadata/hetzner.h"
#include "metadata/openstack.h"
#include "base/readfile.h"

#define MD_DMI_VALUE_MAX 256 /* bytes of one DMI attribute read */
#define MD_DMI_SUFFIX "/sys/class/dmi/id"
#define MD_AZURE_ASSET_TAG "7783-7084-3265-9085-8269-3286-77"

static const char *const md_cloud_names[] = {
	[MD_CLOUD_UNKNOWN] = "unknown",
	[MD_CLOUD_EC2] = "ec2",
	[MD_CLOUD_GCE] = "gce",
	[MD_CLOUD_AZURE] = "azure",
	[MD_CLOUD_OPENSTACK] = "openstack",
	[MD_CLOUD_DIGITALOCEAN] = "digitalocean",
	[MD_CLOUD_HETZNER] = "hetzner",
};

const char *
md_cloud_name(enum md_cloud c)
{
	if ((size_t)c >= sizeof(md_cloud_names) / sizeof(md_cloud_names[0]))
		return "unknown";
	return md_cloud_names[c];
}

int
md_cloud_parse(const char *s, enum md_cloud *ret)
{
	for (size_t i = 1; s && i < sizeof(md_cloud_names) / sizeof(md_cloud_names[0]); i++)
		if (strcmp(s, md_cloud_names[i]) == 0) {
			*ret = (enum md_cloud)i;
			return 0;
		}
	return ERR_INVALID;
}

const char *
md_addr_type_name(enum md_addr_type t)
{
	switch (t) {
	case MD_ADDR_INTERNAL_IP: return "InternalIP";
	case MD_ADDR_EXTERNAL_IP: return "ExternalIP";
	case MD_ADDR_HOSTNAME: return "Hostname";
	case MD_ADDR_INTERNAL_DNS: return "InternalDNS";
	case MD_ADDR_EXTERNAL_DNS: return "ExternalDNS";
	}
	return "Unknown";
}

const char *
md_source_name(enum md_source s)
{
	return s == MD_SOURCE_CONFIG_DRIVE ? "config-drive" : "metadata-service";
}

void
md_config_init(struct md_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->cloud = MD_CLOUD_UNKNOWN;
	cfg->dmi_dir = MD_DMI_DIR_DEFAULT;
	/* the OpenStack provider's default search order */
	cfg->openstack_order[0] = MD_SOURCE_CONFIG_DRIVE;
	cfg->openstack_order[1] = MD_SOURCE_SERVICE;
	cfg->openstack_order_n = 2;
	cfg->connect_timeout_ms = MD_CONNECT_TIMEOUT_MS;
	cfg->timeout_ms = MD_TIMEOUT_MS;
	cfg->retries = MD_RETRIES;
}

int
md_config_set(struct md_config *cfg, const char *cloud, const char *endpoint,
    const char *dmi_dir, const char *config_drive, struct errbuf *e)
{
	char host[256], port[8];
	enum md_cloud c = MD_CLOUD_UNKNOWN;
	int r;

	if (cloud && *cloud && strcmp(cloud, "auto") != 0 && md_cloud_parse(cloud, &c) < 0)
		return errbuf_set(e, ERR_INVALID, "--metadata-cloud \"%s\": want auto, ec2, gce, "
		    "azure, openstack, digitalocean or hetzner", cloud);
	if (endpoint && *endpoint) {
		if ((r = md_session_parse_url(endpoint, host, sizeof(host), port, sizeof(port),
		    e)) < 0)
			return errbuf_prefix(e, r, "--metadata-endpoint");
		if (strlen(endpoint) >= MD_URL_MAX - 64)
			return errbuf_set(e, ERR_INVALID, "--metadata-endpoint is too long");
	}
	if (dmi_dir && strlen(dmi_dir) >= MD_URL_MAX - 64)
		return errbuf_set(e, ERR_INVALID, "--metadata-dmi-dir is too long");
	if (config_drive && strlen(config_drive) >= MD_URL_MAX - 64)
		return errbuf_set(e, ERR_INVALID, "--metadata-config-drive is too long");
	cfg->cloud = c;
	if (endpoint && *endpoint)
		cfg->endpoint = endpoint;
	if (dmi_dir && *dmi_dir)
		cfg->dmi_dir = dmi_dir;
	if (config_drive && *config_drive)
		cfg->config_drive = config_drive;
	return 0;
}

/* md_read_small reads a small text file (a DMI attribute), trimmed. Returns 0,
 * or -1 when it is absent or unreadable (root-only attributes for a
 * non-root process, anything but a regular file): such a signal is simply
 * missing. */
static int
md_read_small(const char *path, char *buf, size_t cap)
{
	struct errbuf e;
	struct stat st;
	ssize_t n;
	size_t len, start = 0;
	int fd;

	buf[0] = '\0';
	if ((fd = readfile_open(path, &st, &e)) < 0)
		return -1;
	do {
		n = read(fd, buf, cap - 1);
	} while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0)
		return -1;
	len = (size_t)n;
	buf[len] = '\0';
	len = strlen(buf); /* a NUL ends the value */
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ' ||
	    buf[len - 1] == '\t' || buf[len - 1] == '\r'))
		buf[--len] = '\0';
	while (buf[start] == ' ' || buf[start] == '\t')
		start++;
	memmove(buf, buf + start, len - start + 1);
	return 0;
}

static int
md_dmi(const char *dir, const char *name, char *buf, size_t cap)
{
	char path[MD_URL_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path)) {
		buf[0] = '\0';
		return -1;
	}
	return md_read_small(path, buf, cap);
}

/* md_ec2_uuid tells whether a system UUID is EC2's: it starts with "ec2",
 * or does once its first group is byte-swapped (little-endian SMBIOS). */
static int
md_ec2_uuid(const char *u)
{
	static const char hex[] = "0123456789abcdefABCDEF";
	char sw[9];

	if (strncasecmp(u, "ec2", 3) == 0)
		return 1;
	if (strlen(u) != 36 || u[8] != '-' || u[13] != '-' || u[18] != '-' || u[23] != '-')
		return 0;
	for (size_t i = 0; i < 36; i++)
		if (i != 8 && i != 13 && i != 18 && i != 23 && strchr(hex, u[i]) == NULL)
			return 0;
	for (size_t i = 0; i < 4; i++) {
		sw[2 * i] = u[6 - 2 * i];
		sw[2 * i + 1] = u[7 - 2 * i];
	}
	sw[8] = '\0';
	return strncasecmp(sw, "ec2", 3) == 0;
}

/* md_hypervisor_path is where the Xen hypervisor UUID lives next to the DMI
 * directory: /sys/hypervisor/uuid, or <root>/sys/hypervisor/uuid when the
 * host's /sys is mounted at <root>/sys (a pod). */
static int
md_hypervisor_path(const struct md_config *cfg, char *buf, size_t cap)
{
	size_t n, sl = strlen(MD_DMI_SUFFIX);
	const char *dir = cfg->dmi_dir ? cfg->dmi_dir : MD_DMI_DIR_DEFAULT;

	if (cfg->hypervisor_uuid)
		return (size_t)snprintf(buf, cap, "%s", cfg->hypervisor_uuid) < cap ? 0 : -1;
	n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n < sl || strncmp(dir + n - sl, MD_DMI_SUFFIX, sl) != 0)
		return -1;
	return (size_t)snprintf(buf, cap, "%.*s/sys/hypervisor/uuid", (int)(n - sl), dir) < cap ?
	    0 : -1;
}

static int
md_in(const char *v, const char *const *set)
{
	for (; *set; set++)
		if (strcmp(v, *set) == 0)
			return 1;
	return 0;
}

int
md_detect(const struct md_config *cfg, enum md_cloud *ret_cloud, struct errbuf *e)
{
	static const char *const os_products[] = { "OpenStack Nova", "OpenStack Compute", NULL };
	static const char *const os_tags[] = { "OpenStack Nova", "OpenStack Compute",
		"OpenTelekomCloud", "SAP CCloud VM", "HUAWEICLOUD", "Samsung Cloud Platform",
		NULL };
	char vendor[MD_DMI_VALUE_MAX], product[MD_DMI_VALUE_MAX], chassis[MD_DMI_VALUE_MAX];
	char serial[MD_DMI_VALUE_MAX], uuid[MD_DMI_VALUE_MAX], hv[MD_DMI_VALUE_MAX];
	char path[MD_URL_MAX];
	const char *dir = cfg->dmi_dir ? cfg->dmi_dir : MD_DMI_DIR_DEFAULT;
	struct stat st;
	enum md_cloud c = MD_CLOUD_UNKNOWN;

	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return errbuf_set(e, ERR_NOT_FOUND, "no DMI data at %s: the cloud is unknown; "
		    "name it with --metadata-cloud", dir);
	md_dmi(dir, "sys_vendor", vendor, sizeof(vendor));
	md_dmi(dir, "product_name", product, sizeof(product));
	md_dmi(dir, "chassis_asset_tag", chassis, sizeof(chassis));
	md_dmi(dir, "product_serial", serial, sizeof(serial));   /* root only */
	md_dmi(dir, "product_uuid", uuid, sizeof(uuid));         /* root only */
	hv[0] = '\0';
	if (md_hypervisor_path(cfg, path, sizeof(path)) == 0)
		md_read_small(path, hv, sizeof(hv));

	if (strcmp(chassis, MD_AZURE_ASSET_TAG) == 0)
		c = MD_CLOUD_AZURE;
	else if (strcmp(product, "Google Compute Engine") == 0 || strcmp(product, "Google") == 0 ||
	    strncmp(serial, "GoogleCloud-", 12) == 0)
		c = MD_CLOUD_GCE;
	else if (strcmp(vendor, "DigitalOcean") == 0)
		c = MD_CLOUD_DIGITALOCEAN;
	else if (strcmp(vendor, "Hetzner") == 0)
		c = MD_CLOUD_HETZNER;
	else if (md_in(product, os_products) || md_in(chassis, os_tags))
		c = MD_CLOUD_OPENSTACK;
	/* Nitro's sys_vendor is readable without root, unlike the UUID */
	else if (strncasecmp(hv, "ec2", 3) == 0 || md_ec2_uuid(uuid) ||
	    strcmp(vendor, "Amazon EC2") == 0)
		c = MD_CLOUD_EC2;
	if (c == MD_CLOUD_UNKNOWN)
		return errbuf_set(e, ERR_NOT_FOUND, "no known cloud in the DMI data at %s "
		    "(sys_vendor \"%.64s\", product_name \"%.64s\"): name it with --metadata-cloud",
		    dir, vendor, product);
	*ret_cloud = c;
	return 0;
}

/* md_check_serial compares the instance id with the DMI product_serial
 * where cloud-init says they are equal (DigitalOcean, Hetzner): another
 * machine's metadata must not name this one. An unreadable serial (not
 * root) proves nothing. */
static int
md_check_serial(const struct md_config *cfg, const struct md_instance *in,
    struct errbuf *e)
{
	char serial[MD_DMI_VALUE_MAX];

	if (in->cloud != MD_CLOUD_DIGITALOCEAN && in->cloud != MD_CLOUD_HETZNER)
		return 0;
	if (md_dmi(cfg->dmi_dir ? cfg->dmi_dir : MD_DMI_DIR_DEFAULT, "product_serial", serial,
	    sizeof(serial)) < 0 || serial[0] == '\0')
		return 0;
	if (strcmp(serial, in->instance_id) != 0)
		return errbuf_set(e, ERR_INVALID, "the metadata service names instance %s, but "
		    "this machine's DMI product_serial is \"%.64s\"", in->instance_id, serial);
	return 0;
}

int
md_fetch(const struct md_config *cfg, struct md_instance *ret, struct errbuf *e)
{
	struct md_instance in;
	enum md_cloud cloud = cfg->cloud;
	int r, detected = 0;

	if (cloud == MD_CLOUD_UNKNOWN) {
		if ((r = md_detect(cfg, &cloud, e)) < 0)
			return r;
		detected = 1;
	}
	memset(&in, 0, sizeof(in));
	switch (cloud) {
	case MD_CLOUD_EC2:
		r = md_ec2_fetch(cfg, &in, e);
		break;
	case MD_CLOUD_GCE:
		r = md_gce_fetch(cfg, &in, e);
		break;
	case MD_CLOUD_AZURE:
		r = md_azure_fetch(cfg, &in, e);
		break;
	case MD_CLOUD_OPENSTACK:
		r = md_openstack_fetch(cfg, &in, e);
		break;
	case MD_CLOUD_DIGITALOCEAN:
		r = md_digitalocean_fetch(cfg, &in, e);
		break;
	case MD_CLOUD_HETZNER:
		r = md_hetzner_fetch(cfg, &in, e);
		break;
	default:
		return errbuf_set(e, ERR_INVALID, "no metadata dialect for cloud %d", (int)cloud);
	}
	if (r < 0)
		return r;
	in.cloud = cloud;
	if (detected && (r = md_check_serial(cfg, &in, e)) < 0)
		return r;
	*ret = in;
	return 0;
}
