/* metadata.h - the local instance's facts (providerID, instance type, zone,
 * region, addresses) from the cloud's instance metadata service or an
 * OpenStack config drive, and the cloud itself from DMI data.
 *
 * Contract: library-like, never logs; the prefix md_ stands for metadata.
 * md_detect reads DMI files only: no network, no waiting on timeouts.
 * md_fetch returns the whole instance or an error, never a partial one (a
 * truncated or malformed answer is an error). Its error codes say which of
 * two things happened:
 *   ERR_NOT_FOUND  no metadata service was found: DMI matches no cloud, or
 *                  nothing listens at the endpoint (connection refused, no
 *                  route, connect timeout) and there is no config drive;
 *   anything else  a service was found but its answers were unusable (HTTP
 *                  errors after retries, timeouts, truncated or malformed
 *                  bodies, missing facts); the message names the URL or file
 *                  and the problem.
 * Thread-safe: every md_fetch owns its HTTP client; a struct md_config is
 * only read. http_global_init must have run. */
#ifndef BOOTCCM_METADATA_H
#define BOOTCCM_METADATA_H

#include <stddef.h>

#include "base/err.h"
#include "base/stop.h"

enum md_cloud {
	MD_CLOUD_UNKNOWN = 0,   /* in a config: detect from DMI */
	MD_CLOUD_EC2,
	MD_CLOUD_GCE,
	MD_CLOUD_AZURE,
	MD_CLOUD_OPENSTACK,
	MD_CLOUD_DIGITALOCEAN,
	MD_CLOUD_HETZNER,
};

/* Where an instance's facts came from. */
enum md_source {
	MD_SOURCE_SERVICE,       /* the HTTP metadata service */
	MD_SOURCE_CONFIG_DRIVE,  /* an OpenStack config drive (mounted) */
};

/* Node address types, as in a Node's status.addresses. */
enum md_addr_type {
	MD_ADDR_INTERNAL_IP,
	MD_ADDR_EXTERNAL_IP,
	MD_ADDR_HOSTNAME,
	MD_ADDR_INTERNAL_DNS,
	MD_ADDR_EXTERNAL_DNS,
};

#define MD_ENDPOINT_DEFAULT "http://169.254.169.254"
#define MD_ENDPOINT_EC2_IPV6 "http://[fd00:ec2::254]" /* Nitro, tried when the IPv4 one is absent */
#define MD_DMI_DIR_DEFAULT "/sys/class/dmi/id"
#define MD_HYPERVISOR_UUID_DEFAULT "/sys/hypervisor/uuid" /* Xen EC2 */
#define MD_CONNECT_TIMEOUT_MS 2000  /* per request: a link-local service answers at once */
#define MD_TIMEOUT_MS 3000          /* per request, whole transfer */
#define MD_RETRIES 2                /* retries of a failed request, after the service was found */
#define MD_BACKOFF_BASE_MS 200      /* first pause before a retry, doubling */
#define MD_BACKOFF_CAP_MS 1000      /* longest pause, Retry-After included */
#define MD_BODY_MAX (1024 * 1024)   /* bytes: one answer or config-drive file */

/* Caps on every field (bytes, including the NUL). */
#define MD_ID_MAX 512          /* providerID, instance id (Azure resource ids are long) */
#define MD_NAME_MAX 256        /* names, host names, DNS names (253) and addresses */
#define MD_SHORT_MAX 128       /* instance type, zone, region */
#define MD_ADDRS_MAX 32        /* addresses kept; more are counted in addresses_dropped */
#define MD_URL_MAX 512         /* an endpoint, a request URL or a file path */

struct md_address {
	enum md_addr_type type;
	char address[MD_NAME_MAX];   /* IPs in canonical form (RFC 5952 for IPv6) */
};

struct md_instance {
	enum md_cloud cloud;
	enum md_source source;
	char provider_id[MD_ID_MAX];     /* the official CCM's format, e.g. aws:///us-east-2b/i-0abc */
	char instance_id[MD_ID_MAX];     /* the cloud's own id (EC2 i-..., GCE number, Azure vmId...) */
	char name[MD_NAME_MAX];          /* instance name, "" when the service has none (EC2) */
	char hostname[MD_NAME_MAX];      /* host name as the service reports it, or "" */
	char instance_type[MD_SHORT_MAX];/* "" when the service does not say (DigitalOcean, Hetzner) */
	char zone[MD_SHORT_MAX];         /* the zone label's value as the CCM sets it, or "" */
	char region[MD_SHORT_MAX];       /* the region label's value, or "" */
	size_t n_addresses;
	struct md_address addresses[MD_ADDRS_MAX]; /* in the official CCM's order */
	size_t addresses_dropped;        /* valid addresses beyond MD_ADDRS_MAX */
};

struct md_config {
	enum md_cloud cloud;        /* MD_CLOUD_UNKNOWN: detect from DMI */
	const char *endpoint;       /* base URL "http://host[:port]"; NULL: MD_ENDPOINT_DEFAULT
	                               (and MD_ENDPOINT_EC2_IPV6 after it on EC2) */
	const char *dmi_dir;        /* NULL: MD_DMI_DIR_DEFAULT */
	const char *hypervisor_uuid;/* NULL: derived from dmi_dir when it ends in
	                               /sys/class/dmi/id, else not read */
	const char *config_drive;   /* directory where an OpenStack config drive
	                               (label config-2) is mounted, or NULL */
	enum md_source openstack_order[2]; /* OpenStack sources, tried in order */
	size_t openstack_order_n;   /* default: config drive, then service (as OSCP) */
	long connect_timeout_ms;    /* per request */
	long timeout_ms;            /* per request */
	int retries;                /* per request, for 5xx, 410, 429 and transport errors */
	struct stop *stop;             /* abandon retries once stopped; or NULL */
};

/* md_config_init fills cfg with the defaults above. The strings in a
 * config are borrowed: they must outlive every call that uses it. */
void md_config_init(struct md_config *cfg);

/* md_config_set applies the --metadata-* flags: cloud is a name (see
 * md_cloud_parse), "auto" or "" to detect; endpoint, dmi_dir and config_drive
 * replace the defaults when non-empty. Returns 0 or ERR_INVALID naming the
 * flag (an unknown cloud, an endpoint that is not "http://host[:port]"). */
int md_config_set(struct md_config *cfg, const char *cloud, const char *endpoint,
    const char *dmi_dir, const char *config_drive, struct errbuf *e);

/* md_detect tells the cloud from DMI files in cfg->dmi_dir (cloud-init's
 * signals). Returns 0 and *ret_cloud, or ERR_NOT_FOUND when nothing matches
 * (the message names the directory and what it holds). */
int md_detect(const struct md_config *cfg, enum md_cloud *ret_cloud, struct errbuf *e);

/* md_fetch reads the local instance's facts: from cfg->cloud, else from the
 * detected cloud. On success *ret is complete; on failure it is untouched. */
int md_fetch(const struct md_config *cfg, struct md_instance *ret, struct errbuf *e);

/* md_cloud_name returns "ec2", "gce", "azure", "openstack", "digitalocean",
 * "hetzner" or "unknown". */
const char *md_cloud_name(enum md_cloud c);

/* md_cloud_parse parses one of md_cloud_name's names (not "unknown").
 * Returns 0 or ERR_INVALID. */
int md_cloud_parse(const char *s, enum md_cloud *ret);

/* md_addr_type_name returns the Node address type: "InternalIP", ... */
const char *md_addr_type_name(enum md_addr_type t);

/* md_source_name returns "metadata-service" or "config-drive". */
const char *md_source_name(enum md_source s);

#endif
