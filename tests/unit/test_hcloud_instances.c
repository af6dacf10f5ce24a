/* test_hcloud_instances.c - the hcloud provider's pure instance parts: the
 * zone the official CCM sets today (the location's legacy datacenter
 * name), providerIDs, and the metadata of a server: addresses in HCCM's
 * order for each address family, the private IP only in the configured
 * network, the IPv6 host address ::1 of the server's /64. */
#include "harness.h"

#include <stdlib.h>

#include "../../providers/hcloud/hcserver.h"

TEST(zone_is_the_legacy_datacenter_name)
{
	CHECK_STR(hcserver_zone("fsn1"), "fsn1-dc14");
	CHECK_STR(hcserver_zone("nbg1"), "nbg1-dc3");
	CHECK_STR(hcserver_zone("hel1"), "hel1-dc2");
	CHECK_STR(hcserver_zone("ash"), "ash-dc1");
	CHECK_STR(hcserver_zone("hil"), "hil-dc1");
	CHECK_STR(hcserver_zone("sin"), "sin-dc1");
	/* a location newer than the datacenters: its own name */
	CHECK_STR(hcserver_zone("xyz9"), "xyz9");
}

TEST(provider_ids)
{
	int64_t id = 0;

	CHECK(hcserver_provider_id("hcloud://4711", &id) == 1 && id == 4711);
	CHECK(hcserver_provider_id("hcloud://9007199254740991", &id) == 1);
	CHECK(hcserver_provider_id("hrobot://123", &id) == 0);
	CHECK(hcserver_provider_id("hcloud://bm-123", &id) == 0);   /* legacy Robot */
	CHECK(hcserver_provider_id("aws:///us-east-2b/i-0a", &id) == 0);
	CHECK(hcserver_provider_id(NULL, &id) == 0);
	CHECK(hcserver_provider_id("hcloud://", &id) == ERR_INVALID);
	CHECK(hcserver_provider_id("hcloud://0", &id) == ERR_INVALID);
	CHECK(hcserver_provider_id("hcloud://012", &id) == ERR_INVALID);
	CHECK(hcserver_provider_id("hcloud://12x", &id) == ERR_INVALID);
	CHECK(hcserver_provider_id("hcloud://-1", &id) == ERR_INVALID);
	CHECK(hcserver_provider_id("hcloud://99999999999999999999", &id) == ERR_INVALID);
}

static void
server(struct hcapi_server *s)
{
	static struct hcapi_privnet nets[2] = {
		{ 42, "10.0.0.2" }, { 77, "192.168.5.9" },
	};

	memset(s, 0, sizeof(*s));
	s->id = 4711;
	s->name = "node-a";
	snprintf(s->status, sizeof(s->status), "running");
	snprintf(s->ipv4, sizeof(s->ipv4), "203.0.113.10");
	snprintf(s->ipv6, sizeof(s->ipv6), "2001:db8:1234::/64");
	s->n_private = 2;
	s->private_net = nets;
	snprintf(s->server_type, sizeof(s->server_type), "cx22");
	snprintf(s->location, sizeof(s->location), "fsn1");
}

static const char *
addrs(const struct cloud_instance_metadata *m)
{
	static char buf[1024];
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < m->n_addresses; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s=%s", i ? " " : "",
		    cloud_addr_type_name(m->addresses[i].type), m->addresses[i].address);
	return buf;
}

TEST(metadata_as_the_official_ccm_sets_it)
{
	struct cloud_instance_metadata *m = malloc(sizeof(*m));
	struct hcapi_server s;

	server(&s);
	hcserver_fill(&s, HCSERVER_IPV4, 42, m);
	CHECK_STR(m->source, CLOUD_SOURCE_API);
	CHECK_STR(m->provider_id, "hcloud://4711");
	CHECK_STR(m->instance_type, "cx22");
	CHECK_STR(m->region, "fsn1");
	CHECK_STR(m->zone, "fsn1-dc14");
	CHECK_STR(addrs(m), "Hostname=node-a ExternalIP=203.0.113.10 InternalIP=10.0.0.2");
	CHECK(m->n_labels == 1);
	CHECK_STR(m->labels[0].key, "instance.hetzner.cloud/provided-by");
	CHECK_STR(m->labels[0].value, "cloud");
	/* IPv6: the host address of the /64 is its ::1 */
	hcserver_fill(&s, HCSERVER_IPV6, 42, m);
	CHECK_STR(addrs(m), "Hostname=node-a ExternalIP=2001:db8:1234::1 InternalIP=10.0.0.2");
	hcserver_fill(&s, HCSERVER_IPV4 | HCSERVER_IPV6, 77, m);
	CHECK_STR(addrs(m), "Hostname=node-a ExternalIP=203.0.113.10 ExternalIP=2001:db8:1234::1 "
	    "InternalIP=192.168.5.9");
	/* no network configured: no InternalIP */
	hcserver_fill(&s, HCSERVER_IPV4, 0, m);
	CHECK_STR(addrs(m), "Hostname=node-a ExternalIP=203.0.113.10");
	/* a server without public addresses */
	s.ipv4[0] = s.ipv6[0] = '\0';
	hcserver_fill(&s, HCSERVER_IPV4 | HCSERVER_IPV6, 42, m);
	CHECK_STR(addrs(m), "Hostname=node-a InternalIP=10.0.0.2");
	free(m);
}

TEST_MAIN()
