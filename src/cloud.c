/* cloud.c - the provider lookup over the providers' table, the provider
 * error policy and the interface's own types. */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cloud.h"
#include "base/err.h"
#include "base/labelsel.h"

#define CLOUD_NAMES_MAX 256 /* bytes: every provider's name, ", "-separated */

static char cloud_names[CLOUD_NAMES_MAX];
static pthread_once_t cloud_names_once = PTHREAD_ONCE_INIT;

/* The API's names, in enum cloud_addr_type order. */
static const char *const cloud_addr_types[] = {
	[CLOUD_ADDR_INTERNAL_IP] = "InternalIP",
	[CLOUD_ADDR_EXTERNAL_IP] = "ExternalIP",
	[CLOUD_ADDR_HOSTNAME] = "Hostname",
	[CLOUD_ADDR_INTERNAL_DNS] = "InternalDNS",
	[CLOUD_ADDR_EXTERNAL_DNS] = "ExternalDNS",
};
#define CLOUD_ADDR_TYPES_N (sizeof(cloud_addr_types) / sizeof(cloud_addr_types[0]))

const char *
cloud_addr_type_name(enum cloud_addr_type t)
{
	return (size_t)t < CLOUD_ADDR_TYPES_N ? cloud_addr_types[t] : "Unknown";
}

int
cloud_addr_type_parse(const char *s, enum cloud_addr_type *ret)
{
	for (size_t i = 0; s != NULL && i < CLOUD_ADDR_TYPES_N; i++)
		if (strcmp(s, cloud_addr_types[i]) == 0) {
			*ret = (enum cloud_addr_type)i;
			return 0;
		}
	return ERR_INVALID;
}

const struct cloud_provider *
cloud_provider_find(const char *name)
{
	if (name == NULL)
		return NULL;
	for (size_t i = 0; cloud_providers[i] != NULL; i++)
		if (strcmp(cloud_providers[i]->name, name) == 0)
			return cloud_providers[i];
	return NULL;
}

static void
cloud_names_init(void)
{
	size_t off = 0;

	for (size_t i = 0; cloud_providers[i] != NULL && off < sizeof(cloud_names); i++) {
		int n = snprintf(cloud_names + off, sizeof(cloud_names) - off, "%s%s",
		    i ? ", " : "", cloud_providers[i]->name);
		if (n < 0)
			break;
		off += (size_t)n;
	}
}

const char *
cloud_provider_names(void)
{
	pthread_once(&cloud_names_once, cloud_names_init);
	return cloud_names;
}

int
cloud_provider_lookup(const char *name, const struct cloud_provider **ret,
    struct errbuf *e)
{
	const struct cloud_provider *p;

	if ((p = cloud_provider_find(name)) == NULL)
		return errbuf_set(e, ERR_INVALID, "--cloud-provider \"%.64s\": unknown provider; "
		    "known: %s", name ? name : "", cloud_provider_names());
	*ret = p;
	return 0;
}

int
cloud_err_retryable(int code)
{
	switch (code) {
	case ERR_NOT_FOUND:
	case ERR_NOT_IMPLEMENTED:
	case ERR_IMPLEMENTED_ELSEWHERE:
		return 0;
	default:
		return err_retryable(code);
	}
}

int
cloud_err_allows_delete(int code, const struct cloud_provider *p)
{
	return code == ERR_NOT_FOUND && p != NULL && (p->flags & CLOUD_DEFINITIVE) != 0;
}

/* cloud_node_ip_parse parses len bytes of s as one IP, without a zone. */
static int
cloud_node_ip_parse(const char *s, size_t len, struct cloud_node_ip *ip)
{
	char tmp[sizeof(ip->text)];

	if (len == 0 || len >= sizeof(tmp))
		return ERR_INVALID;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	memset(ip, 0, sizeof(*ip));
	if (inet_pton(AF_INET, tmp, ip->bin) == 1)
		ip->family = AF_INET;
	else if (strchr(tmp, '%') == NULL && inet_pton(AF_INET6, tmp, ip->bin) == 1)
		ip->family = AF_INET6;
	else
		return ERR_INVALID;
	if (inet_ntop(ip->family, ip->bin, ip->text, sizeof(ip->text)) == NULL)
		return ERR_INVALID;
	return 0;
}

int
cloud_provided_node_ips(const char *node, const char *v, struct cloud_node_ip ips[2],
    struct errbuf *e)
{
	const char *comma = strchr(v, ',');

	if (cloud_node_ip_parse(v, comma ? (size_t)(comma - v) : strlen(v), &ips[0]) < 0 ||
	    (comma && cloud_node_ip_parse(comma + 1, strlen(comma + 1), &ips[1]) < 0))
		return errbuf_set(e, ERR_INVALID, "node %s: annotation %s \"%.100s\": want an IP "
		    "or a dual-stack pair \"IPv4,IPv6\"", node, CLOUD_PROVIDED_NODE_IP, v);
	if (comma && ips[0].family == ips[1].family)
		return errbuf_set(e, ERR_INVALID, "node %s: annotation %s \"%.100s\": a pair "
		    "must be one IPv4 and one IPv6 address", node, CLOUD_PROVIDED_NODE_IP, v);
	return comma ? 2 : 1;
}

int
cloud_node_ip_equal(const struct cloud_node_ip *ip, const char *s)
{
	struct cloud_node_ip b;

	return cloud_node_ip_parse(s, strlen(s), &b) == 0 && ip->family == b.family &&
	    memcmp(ip->bin, b.bin, sizeof(b.bin)) == 0;
}

static const struct cloud_service *
cloud_services_at(void *arg, size_t i)
{
	return ((const struct cloud_service *const *)arg)[i];
}

struct cloud_services
cloud_services_of(const struct cloud_service *const *v, size_t n)
{
	struct cloud_services s = { n, cloud_services_at, (void *)v };
	return s;
}

int
cloud_service_nul_check(const struct cloud_service *svc, const char *const *keys,
    const char *prefix, struct errbuf *e)
{
	for (size_t i = 0; i < svc->n_nul_annotations; i++) {
		const char *k = svc->nul_annotations[i];
		int read = prefix != NULL && strncmp(k, prefix, strlen(prefix)) == 0;
		for (size_t j = 0; !read && keys != NULL && keys[j] != NULL; j++)
			read = strcmp(k, keys[j]) == 0;
		if (read)
			return errbuf_set(e, ERR_INVALID, "Service %s/%s: annotation %s holds a "
			    "NUL character, which bootccm cannot read",
			    svc->namespace_ ? svc->namespace_ : "", svc->name ? svc->name : "", k);
	}
	return 0;
}

static const char *
cloud_kv_get(const struct cloud_kv *kv, size_t n, const char *key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (kv[i].key != NULL && strcmp(kv[i].key, key) == 0)
			return kv[i].value;
	return NULL;
}

int
cloud_provider_id_valid(const char *s)
{
	const char *p = s, *rest;
	int id = 0;

	if (strlen(s) >= CLOUD_ID_MAX || !(*p >= 'a' && *p <= 'z'))
		return 0;
	while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
	    *p == '.' || *p == '+')
		p++;
	if (strncmp(p, "://", 3) != 0)
		return 0;
	for (rest = p + 3; *rest != '\0'; rest++) {
		if (*rest <= ' ' || *rest >= 0x7f)
			return 0;
		if (*rest != '/')
			id = 1;
	}
	return id;
}

/* cloud_provided_ips turns the provided-node-ip annotation into
 * InternalIP addresses. */
static int
cloud_provided_ips(const char *node, const char *v, struct cloud_instance_metadata *m,
    struct errbuf *e)
{
	struct cloud_node_ip ips[2];
	int n = cloud_provided_node_ips(node, v, ips, e);

	for (int i = 0; i < n; i++) {
		m->addresses[i].type = CLOUD_ADDR_INTERNAL_IP;
		snprintf(m->addresses[i].address, sizeof(m->addresses[i].address), "%s",
		    ips[i].text);
	}
	if (n > 0)
		m->n_addresses = (size_t)n;
	return n < 0 ? n : 0;
}

/* cloud_label copies a reported label after checking its syntax. */
static int
cloud_label(const struct cloud_node *node, const char *key, char *ret, size_t ret_len,
    struct errbuf *e)
{
	const char *v = cloud_kv_get(node->labels, node->n_labels, key);

	if (v == NULL)
		return 0;
	if (!labelsel_value_ok(v) || strlen(v) >= ret_len)
		return errbuf_set(e, ERR_INVALID, "node %s: label %s \"%.100s\" is not a valid "
		    "label value", node->name, key, v);
	memcpy(ret, v, strlen(v) + 1);
	return 0;
}

int
cloud_kubelet_reported(const struct cloud_node *node, struct cloud_instance_metadata *m,
    struct errbuf *e)
{
	const char *ip;
	int r;

	snprintf(m->source, sizeof(m->source), "%s", CLOUD_SOURCE_KUBELET);
	if (node->provider_id != NULL && *node->provider_id != '\0') {
		if (!cloud_provider_id_valid(node->provider_id))
			return errbuf_set(e, ERR_INVALID, "node %s: spec.providerID \"%.200s\" is "
			    "not \"<cloud>://<id>\"", node->name, node->provider_id);
		memcpy(m->provider_id, node->provider_id, strlen(node->provider_id) + 1);
	}
	if ((r = cloud_label(node, CLOUD_LABEL_ZONE, m->zone, sizeof(m->zone), e)) < 0 ||
	    (r = cloud_label(node, CLOUD_LABEL_REGION, m->region, sizeof(m->region),
	    e)) < 0 ||
	    (r = cloud_label(node, CLOUD_LABEL_INSTANCE_TYPE, m->instance_type,
	    sizeof(m->instance_type), e)) < 0)
		return r;
	ip = cloud_kv_get(node->annotations, node->n_annotations, CLOUD_PROVIDED_NODE_IP);
	if (ip != NULL && *ip != '\0' && (r = cloud_provided_ips(node->name, ip, m, e)) < 0)
		return r;
	if (m->provider_id[0] == '\0' && m->zone[0] == '\0' && m->region[0] == '\0' &&
	    m->instance_type[0] == '\0' && m->n_addresses == 0)
		return errbuf_set(e, ERR_PERMANENT, "node %s: its kubelet reported nothing "
		    "bootccm can use (no spec.providerID, no %s, %s or %s label, no "
		    "%s annotation); start it with --provider-id, --node-ip and --node-labels "
		    "as `bootccm metadata` prints them", node->name, CLOUD_LABEL_ZONE,
		    CLOUD_LABEL_REGION, CLOUD_LABEL_INSTANCE_TYPE, CLOUD_PROVIDED_NODE_IP);
	return 0;
}
