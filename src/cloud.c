/* cloud.c - the static table of providers and the provider error policy. */
#include <arpa/inet.h>
#include <string.h>

#include "cloud.h"
#include "err.h"
#include "../providers/metadata/metadata.h"

/* No dlopen: the binary is static, so every provider is linked in and listed
 * here. Keep cloud_names in step with the table. */
static const struct cloud_provider *const cloud_table[] = {
	&metadata_provider,
};

static const char cloud_names[] = "metadata";

const struct cloud_provider *
cloud_provider_find(const char *name)
{
	size_t i;

	if (name == NULL)
		return NULL;
	for (i = 0; i < sizeof(cloud_table) / sizeof(cloud_table[0]); i++)
		if (strcmp(cloud_table[i]->name, name) == 0)
			return cloud_table[i];
	return NULL;
}

const char *
cloud_provider_names(void)
{
	return cloud_names;
}

int
cloud_provider_lookup(const char *name, const struct cloud_provider **ret,
    struct errbuf *e)
{
	const struct cloud_provider *p;

	if ((p = cloud_provider_find(name)) == NULL)
		return errbuf_set(e, ERR_INVALID, "--cloud-provider \"%.64s\": unknown provider; "
		    "known: %s", name ? name : "", cloud_names);
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
