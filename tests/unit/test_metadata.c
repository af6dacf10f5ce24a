/* test_metadata.c - the metadata layer without a network: each dialect's
 * parsing of canned answers, providerID formats, DMI detection, endpoint
 * parsing, address caps, label sanitizing, shell quoting and the printed
 * formats. */
#include <arpa/inet.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "metadata/azure.h"
#include "metadata/build.h"
#include "metadata/digitalocean.h"
#include "metadata/ec2.h"
#include "metadata/format.h"
#include "metadata/gce.h"
#include "metadata/hetzner.h"
#include "metadata/metadata.h"
#include "metadata/openstack.h"
#include "metadata/session.h"

/* A getter over a table of canned answers; a path not in it is a 404. */
struct tanswer {
	const char *path;
	long status;
	const char *body;
};

struct table {
	const struct tanswer *a;
	size_t n;
	int requests;
};

static int
table_get(void *arg, const char *path, int optional, struct md_answer *ret,
    struct errbuf *e)
{
	struct table *t = arg;
	struct md_answer a;
	const char *body = NULL;
	long status = 404;

	t->requests++;
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->a[i].path, path) == 0) {
			status = t->a[i].status;
			body = t->a[i].body;
		}
	memset(&a, 0, sizeof(a));
	snprintf(a.where, sizeof(a.where), "GET %s", path);
	if (status == 404 && !optional)
		return errbuf_set(e, ERR_INVALID, "%s: HTTP 404 (no such item)", a.where);
	if (status != 200 && status != 404)
		return errbuf_set(e, ERR_TRANSIENT, "%s: HTTP %ld", a.where, status);
	a.status = status;
	a.body = strdup(status == 200 ? body : "");
	a.len = strlen(a.body);
	*ret = a;
	return 0;
}

#define TABLE(arr) { arr, sizeof(arr) / sizeof(arr[0]), 0 }

static const char *
addr_of(const struct md_instance *in, enum md_addr_type t, int nth)
{
	for (size_t i = 0; i < in->n_addresses; i++)
		if (in->addresses[i].type == t && nth-- == 0)
			return in->addresses[i].address;
	return NULL;
}

/* ---- EC2 -------------------------------------------------------------- */

#define EC2_MD "/latest/meta-data/"
#define EC2_MACS EC2_MD "network/interfaces/macs/"

static const struct tanswer ec2_answers[] = {
	{ EC2_MD "instance-id", 200, "i-0a33f80f09c96477f" },
	{ EC2_MD "instance-type", 200, "t3.small\n" },
	{ EC2_MD "placement/availability-zone", 200, "us-east-2b" },
	{ EC2_MD "placement/region", 200, "us-east-2" },
	{ EC2_MACS, 200, "06:17:04:d7:26:08/\n06:17:04:d7:26:09/\n" },
	{ EC2_MACS "06:17:04:d7:26:08/device-number", 200, "1" },
	{ EC2_MACS "06:17:04:d7:26:09/device-number", 200, "0" },
	{ EC2_MACS "06:17:04:d7:26:08/local-ipv4s", 200, "172.31.7.201\n172.31.7.202" },
	{ EC2_MACS "06:17:04:d7:26:09/local-ipv4s", 200, "172.31.3.15" },
	{ EC2_MACS "06:17:04:d7:26:09/ipv6s", 200, "2600:1f16:8c5:b902::1" },
	{ EC2_MD "public-ipv4", 200, "3.14.15.92" },
	{ EC2_MD "local-hostname", 200, "ip-172-31-3-15.us-east-2.compute.internal corp.example" },
	{ EC2_MD "public-hostname", 200, "ec2-3-14-15-92.us-east-2.compute.amazonaws.com" },
};

TEST(ec2_facts_in_aws_provider_order)
{
	struct table t = TABLE(ec2_answers);
	struct md_getter g = { table_get, &t };
	struct md_instance in;
	struct errbuf e = { "" };

	memset(&in, 0, sizeof(in));
	CHECK(md_ec2_build(&g, &in, &e) == 0);
	CHECK_STR(in.provider_id, "aws:///us-east-2b/i-0a33f80f09c96477f");
	CHECK_STR(in.instance_type, "t3.small");
	CHECK_STR(in.zone, "us-east-2b");
	CHECK_STR(in.region, "us-east-2");
	CHECK_STR(in.hostname, "ip-172-31-3-15.us-east-2.compute.internal");
	/* device 0 first although its MAC sorts second; no IPv6 beside IPv4 */
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_IP, 0), "172.31.3.15");
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_IP, 1), "172.31.7.201");
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_IP, 2), "172.31.7.202");
	CHECK(addr_of(&in, MD_ADDR_INTERNAL_IP, 3) == NULL);
	CHECK_STR(addr_of(&in, MD_ADDR_EXTERNAL_IP, 0), "3.14.15.92");
	CHECK_STR(addr_of(&in, MD_ADDR_HOSTNAME, 0), "ip-172-31-3-15.us-east-2.compute.internal");
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_DNS, 0), "ip-172-31-3-15.us-east-2.compute.internal");
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_DNS, 1), "ip-172-31-3-15.corp.example");
	CHECK_STR(addr_of(&in, MD_ADDR_EXTERNAL_DNS, 0),
	    "ec2-3-14-15-92.us-east-2.compute.amazonaws.com");
	CHECK(in.addresses[0].type == MD_ADDR_INTERNAL_IP);
}

TEST(ec2_region_from_identity_document_on_old_services)
{
	struct tanswer a[] = {
		{ EC2_MD "instance-id", 200, "i-1" },
		{ EC2_MD "instance-type", 200, "m5.large" },
		{ EC2_MD "placement/availability-zone", 200, "eu-west-1a" },
		{ EC2_MD "placement/region", 404, "" },
		{ "/latest/dynamic/instance-identity/document", 200,
		  "{\n  \"region\" : \"eu-west-1\",\n  \"instanceId\" : \"i-1\"\n}" },
		{ EC2_MACS, 200, "0a:00:00:00:00:01/\n" },
		{ EC2_MACS "0a:00:00:00:00:01/device-number", 200, "0" },
		{ EC2_MACS "0a:00:00:00:00:01/ipv6s", 200, "2a05:d018::5\n2a05:d018::6\n" },
	};
	struct table t = TABLE(a);
	struct md_getter g = { table_get, &t };
	struct md_instance in;
	struct errbuf e = { "" };

	memset(&in, 0, sizeof(in));
	CHECK(md_ec2_build(&g, &in, &e) == 0);
	CHECK_STR(in.region, "eu-west-1");
	CHECK_STR(in.provider_id, "aws:///eu-west-1a/i-1");
	/* an IPv6-only instance: its IPv6 addresses are its InternalIPs */
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_IP, 0), "2a05:d018::5");
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_IP, 1), "2a05:d018::6");
	CHECK(in.n_addresses == 2);
}

TEST(ec2_rejects_bad_answers_naming_the_path)
{
	struct tanswer a[] = {
		{ EC2_MD "instance-id", 200, "i-1" },
		{ EC2_MD "instance-type", 200, "m5.large" },
		{ EC2_MD "placement/availability-zone", 200, "eu-west-1a" },
		{ EC2_MD "placement/region", 200, "eu-west-1" },
		{ EC2_MACS, 200, "../../etc/" },
	};
	struct table t = TABLE(a);
	struct md_getter g = { table_get, &t };
	struct md_instance in;
	struct errbuf e = { "" };

	memset(&in, 0, sizeof(in));
	CHECK(md_ec2_build(&g, &in, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "network/interfaces/macs/");
	CHECK_CONTAINS(e.msg, "not a MAC address");

	struct tanswer b[] = {
		{ EC2_MD "instance-id", 200, "i-1/../x" },
	};
	struct table tb = TABLE(b);
	g.arg = &tb;
	memset(&in, 0, sizeof(in));
	CHECK(md_ec2_build(&g, &in, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "instance-id");

	struct tanswer c[] = {
		{ EC2_MD "instance-id", 200, "i-1" },
		{ EC2_MD "instance-type", 200, "m5.large" },
		{ EC2_MD "placement/availability-zone", 200, "eu-west-1a" },
		{ EC2_MD "placement/region", 200, "eu-west-1" },
		{ EC2_MACS, 200, "0a:00:00:00:00:01/\n" },
		{ EC2_MACS "0a:00:00:00:00:01/device-number", 200, "zero" },
	};
	struct table tc = TABLE(c);
	g.arg = &tc;
	memset(&in, 0, sizeof(in));
	CHECK(md_ec2_build(&g, &in, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "device-number");

	struct tanswer d[] = {
		{ EC2_MD "instance-id", 200, "i-1" },
		{ EC2_MD "instance-type", 200, "m5.large" },
		{ EC2_MD "placement/availability-zone", 200, "eu-west-1a" },
		{ EC2_MD "placement/region", 404, "" },
		{ "/latest/dynamic/instance-identity/document", 200, "{\"region\":\"eu-we" },
	};
	struct table td = TABLE(d);
	g.arg = &td;
	memset(&in, 0, sizeof(in));
	CHECK(md_ec2_build(&g, &in, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "/latest/dynamic/instance-identity/document: JSON text cut short");
}

/* ---- GCE -------------------------------------------------------------- */

static const char gce_instance[] =
    "{\"hostname\":\"node-a.c.demo-proj.internal\",\"id\":7397947137517811906,"
    "\"machineType\":\"projects/911957843158/machineTypes/e2-medium\",\"name\":\"node-a\","
    "\"zone\":\"projects/911957843158/zones/us-central1-a\","
    "\"networkInterfaces\":[{\"accessConfigs\":[{\"externalIp\":\"34.1.2.3\","
    "\"type\":\"ONE_TO_ONE_NAT\"}],\"ip\":\"10.128.0.2\",\"ipv6s\":[\"2600:1900:4000::2\"]},"
    "{\"accessConfigs\":[{\"externalIp\":\"\"}],\"ip\":\"10.130.0.7\"}],"
    "\"attributes\":{},\"tags\":[]}";

TEST(gce_facts_and_provider_id)
{
	struct tanswer a[] = {
		{ MD_GCE_INSTANCE, 200, gce_instance },
		{ MD_GCE_PROJECT_ID, 200, "demo-proj" },
	};
	struct table t = TABLE(a);
	struct md_getter g = { table_get, &t };
	struct md_instance in;
	struct errbuf e = { "" };

	memset(&in, 0, sizeof(in));
	CHECK(md_gce_build(&g, &in, &e) == 0);
	CHECK_STR(in.provider_id, "gce://demo-proj/us-central1-a/node-a");
	CHECK_STR(in.instance_id, "7397947137517811906"); /* beyond 2^53, exact */
	CHECK_STR(in.instance_type, "e2-medium");
	CHECK_STR(in.region, "us-central1");
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_IP, 0), "10.128.0.2");
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_IP, 1), "2600:1900:4000::2");
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_IP, 2), "10.130.0.7");
	CHECK_STR(addr_of(&in, MD_ADDR_EXTERNAL_IP, 0), "34.1.2.3");
	CHECK(addr_of(&in, MD_ADDR_EXTERNAL_IP, 1) == NULL); /* "" skipped */
	CHECK_STR(addr_of(&in, MD_ADDR_HOSTNAME, 0), "node-a.c.demo-proj.internal");
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_DNS, 0), "node-a.c.demo-proj.internal");
}

TEST(gce_zone_and_machine_type_need_four_parts)
{
	const char *bad[] = {
		"{\"id\":1,\"name\":\"n\",\"zone\":\"us-central1-a\","
		"\"machineType\":\"projects/1/machineTypes/e2\",\"networkInterfaces\":[]}",
		"{\"id\":1,\"name\":\"n\",\"zone\":\"projects/1/zones/us-central1-a/x\","
		"\"machineType\":\"projects/1/machineTypes/e2\",\"networkInterfaces\":[]}",
		"{\"id\":1,\"name\":\"n\",\"zone\":\"projects/1/zones/us-central1-a\","
		"\"machineType\":\"projects/1/zones/e2\",\"networkInterfaces\":[]}",
		"{\"id\":1,\"name\":\"n\",\"zone\":\"projects/1/zones/uscentral\","
		"\"machineType\":\"projects/1/machineTypes/e2\",\"networkInterfaces\":[]}",
		"{\"id\":18446744073709551616,\"name\":\"n\",\"zone\":\"projects/1/zones/a-b\","
		"\"machineType\":\"projects/1/machineTypes/e2\",\"networkInterfaces\":[]}",
		"{\"id\":-4,\"name\":\"n\",\"zone\":\"projects/1/zones/a-b\","
		"\"machineType\":\"projects/1/machineTypes/e2\",\"networkInterfaces\":[]}",
		"{\"id\":1,\"name\":\"n/m\",\"zone\":\"projects/1/zones/a-b\","
		"\"machineType\":\"projects/1/machineTypes/e2\",\"networkInterfaces\":[]}",
		"{\"id\":1,\"name\":\"n\",\"zone\":\"projects/1/zones/a-b\","
		"\"machineType\":\"projects/1/machineTypes/e2\",\"networkInterfaces\":{}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tanswer a[] = {
			{ MD_GCE_INSTANCE, 200, bad[i] },
			{ MD_GCE_PROJECT_ID, 200, "p" },
		};
		struct table t = TABLE(a);
		struct md_getter g = { table_get, &t };
		struct md_instance in;
		struct errbuf e = { "" };
		memset(&in, 0, sizeof(in));
		CHECK(md_gce_build(&g, &in, &e) == ERR_INVALID);
		CHECK_CONTAINS(e.msg, MD_GCE_INSTANCE);
	}
}

/* ---- Azure ------------------------------------------------------------ */

TEST(azure_provider_id_zone_and_addresses)
{
	const char *doc =
	    "{\"compute\":{\"location\":\"WestEurope\",\"name\":\"Node-A\",\"zone\":\"2\","
	    "\"vmSize\":\"Standard_D2s_v5\",\"vmId\":\"0b6c1a52-4c1e-4a53-9f10-6f2b3c6d7e8f\","
	    "\"platformFaultDomain\":\"0\",\"resourceGroupName\":\"RG-K8s\","
	    "\"subscriptionId\":\"11111111-2222-3333-4444-555555555555\",\"vmScaleSetName\":\"\","
	    "\"resourceId\":\"/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/"
	    "RG-K8s/providers/Microsoft.Compute/virtualMachines/Node-A\"},"
	    "\"network\":{\"interface\":[{\"macAddress\":\"000D3A047598\",\"ipv4\":{\"ipAddress\":"
	    "[{\"privateIpAddress\":\"10.0.0.4\",\"publicIpAddress\":\"\"}],\"subnet\":[]},"
	    "\"ipv6\":{\"ipAddress\":[{\"privateIpAddress\":\"fd00::4\"}]}},"
	    "{\"ipv4\":{\"ipAddress\":[{\"privateIpAddress\":\"10.1.0.4\"}]}}]}}";
	struct tanswer a[] = {
		{ MD_AZURE_INSTANCE, 200, doc },
		{ MD_AZURE_LOADBALANCER, 200, "{\"loadbalancer\":{\"publicIpAddresses\":["
		  "{\"frontendIpAddress\":\"20.9.9.9\",\"privateIpAddress\":\"10.9.9.9\"},"
		  "{\"frontendIpAddress\":\"20.1.2.3\",\"privateIpAddress\":\"10.0.0.4\"}]}}" },
	};
	struct table t = TABLE(a);
	struct md_getter g = { table_get, &t };
	struct md_instance in;
	struct errbuf e = { "" };

	memset(&in, 0, sizeof(in));
	CHECK(md_azure_build(&g, &in, &e) == 0);
	CHECK_STR(in.provider_id, "azure:///subscriptions/11111111-2222-3333-4444-555555555555/"
	    "resourceGroups/rg-k8s/providers/Microsoft.Compute/virtualMachines/Node-A");
	CHECK_STR(in.zone, "westeurope-2");
	CHECK_STR(in.region, "westeurope");
	CHECK_STR(in.instance_type, "Standard_D2s_v5");
	CHECK_STR(addr_of(&in, MD_ADDR_HOSTNAME, 0), "node-a");
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_IP, 0), "10.0.0.4");
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_IP, 1), "fd00::4");
	CHECK(addr_of(&in, MD_ADDR_INTERNAL_IP, 2) == NULL); /* only the primary interface */
	CHECK_STR(addr_of(&in, MD_ADDR_EXTERNAL_IP, 0), "20.1.2.3"); /* our frontend only */
	CHECK(addr_of(&in, MD_ADDR_EXTERNAL_IP, 1) == NULL);
	CHECK(t.requests == 2);
}

TEST(azure_composes_ids_without_resource_id)
{
	const char *vm =
	    "{\"compute\":{\"location\":\"eastus\",\"name\":\"vm1\",\"zone\":\"\","
	    "\"vmSize\":\"B2s\",\"vmId\":\"x-1\",\"platformFaultDomain\":\"1\","
	    "\"resourceGroupName\":\"MyRG\",\"subscriptionId\":\"SUB\",\"vmScaleSetName\":\"\"},"
	    "\"network\":{\"interface\":[{\"ipv4\":{\"ipAddress\":[{\"privateIpAddress\":"
	    "\"10.0.0.5\",\"publicIpAddress\":\"52.1.1.1\"}]}}]}}";
	const char *vmss =
	    "{\"compute\":{\"location\":\"eastus\",\"name\":\"pool_7\",\"zone\":\"1\","
	    "\"vmSize\":\"B2s\",\"vmId\":\"x-2\",\"resourceGroupName\":\"MyRG\","
	    "\"subscriptionId\":\"sub\",\"vmScaleSetName\":\"pool\"},"
	    "\"network\":{\"interface\":[]}}";
	struct tanswer a[] = { { MD_AZURE_INSTANCE, 200, vm } };
	struct table t = TABLE(a);
	struct md_getter g = { table_get, &t };
	struct md_instance in;
	struct errbuf e = { "" };

	memset(&in, 0, sizeof(in));
	CHECK(md_azure_build(&g, &in, &e) == 0);
	CHECK_STR(in.provider_id, "azure:///subscriptions/sub/resourceGroups/myrg/providers/"
	    "Microsoft.Compute/virtualMachines/vm1");
	CHECK_STR(in.zone, "1"); /* no zone: the fault domain */
	CHECK(t.requests == 1);  /* a public IP: no load balancer question */

	struct tanswer b[] = { { MD_AZURE_INSTANCE, 200, vmss } };
	struct table tb = TABLE(b);
	g.arg = &tb;
	memset(&in, 0, sizeof(in));
	CHECK(md_azure_build(&g, &in, &e) == 0);
	CHECK_STR(in.provider_id, "azure:///subscriptions/sub/resourceGroups/myrg/providers/"
	    "Microsoft.Compute/virtualMachineScaleSets/pool/virtualMachines/7");
	CHECK_STR(in.zone, "eastus-1");

	struct tanswer c[] = { { MD_AZURE_INSTANCE, 200,
	    "{\"compute\":{\"location\":\"eastus\",\"name\":\"vm\",\"vmSize\":\"B2s\","
	    "\"vmId\":\"x\",\"resourceId\":\"/subscriptions/s/virtualMachines/vm\"},"
	    "\"network\":{\"interface\":[]}}" } };
	struct table tc = TABLE(c);
	g.arg = &tc;
	memset(&in, 0, sizeof(in));
	CHECK(md_azure_build(&g, &in, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "compute.resourceId");
}

/* ---- OpenStack --------------------------------------------------------- */

static const char os_meta[] =
    "{\"uuid\":\"b0fa911b-69d4-4476-bbe2-1c92bff6535c\",\"name\":\"n\\u00f6de a\","
    "\"hostname\":\"node-a.novalocal\",\"availability_zone\":\"nova\",\"launch_index\":0,"
    "\"meta\":{},\"public_keys\":{},\"devices\":[]}\n";
static const char os_net[] =
    "{\"links\":[],\"networks\":[{\"id\":\"network0\",\"type\":\"ipv4_dhcp\"},"
    "{\"id\":\"network1\",\"type\":\"ipv4\",\"ip_address\":\"10.0.1.5\"},"
    "{\"id\":\"network2\",\"type\":\"ipv6\",\"ip_address\":\"2001:DB8::0005\"}],"
    "\"services\":[]}";

TEST(openstack_service_and_drive)
{
	struct tanswer a[] = {
		{ MD_OPENSTACK_META, 200, os_meta },
		{ MD_OPENSTACK_NETWORK, 200, os_net },
		{ "/latest/meta-data/instance-type", 200, "m1.small" },
		{ "/latest/meta-data/local-ipv4", 200, "10.0.0.12" },
		{ "/latest/meta-data/public-ipv4", 200, "" },
	};
	struct table t = TABLE(a);
	struct md_getter g = { table_get, &t };
	struct md_instance in;
	struct errbuf e = { "" };

	memset(&in, 0, sizeof(in));
	CHECK(md_openstack_build(&g, MD_SOURCE_SERVICE, &in, &e) == 0);
	CHECK_STR(in.provider_id, "openstack:///b0fa911b-69d4-4476-bbe2-1c92bff6535c");
	CHECK_STR(in.name, "n\xc3\xb6" "de a");
	CHECK_STR(in.zone, "nova");
	CHECK_STR(in.region, "");
	CHECK_STR(in.instance_type, "m1.small");
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_IP, 0), "10.0.0.12");
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_IP, 1), "10.0.1.5");
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_IP, 2), "2001:db8::5");
	CHECK(addr_of(&in, MD_ADDR_EXTERNAL_IP, 0) == NULL);
	CHECK(in.source == MD_SOURCE_SERVICE);

	struct tanswer d[] = {
		{ MD_OPENSTACK_META, 200, os_meta },
		{ MD_OPENSTACK_DRIVE_EC2, 200, "{\"instance-type\":\"m1.large\",\"local-ipv4\":"
		  "\"10.0.0.13\",\"public-ipv4\":\"172.24.4.11\"}" },
	};
	struct table td = TABLE(d);
	g.arg = &td;
	memset(&in, 0, sizeof(in));
	CHECK(md_openstack_build(&g, MD_SOURCE_CONFIG_DRIVE, &in, &e) == 0);
	CHECK(in.source == MD_SOURCE_CONFIG_DRIVE);
	CHECK_STR(in.instance_type, "m1.large");
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_IP, 0), "10.0.0.13");
	CHECK_STR(addr_of(&in, MD_ADDR_EXTERNAL_IP, 0), "172.24.4.11");

	struct tanswer m[] = { { MD_OPENSTACK_META, 200, "{\"name\":\"x\"}" } };
	struct table tm = TABLE(m);
	g.arg = &tm;
	memset(&in, 0, sizeof(in));
	CHECK(md_openstack_build(&g, MD_SOURCE_SERVICE, &in, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "uuid: missing");
}

/* ---- DigitalOcean and Hetzner ------------------------------------------ */

TEST(digitalocean_ids_as_number_or_string)
{
	const char *docs[] = {
		"{\"droplet_id\":22532410,\"hostname\":\"node-a\",\"region\":\"fra1\","
		"\"interfaces\":{\"public\":[{\"ipv4\":{\"ip_address\":\"164.90.1.2\"},"
		"\"ipv6\":{\"ip_address\":\"2A03:B0C0:0003:00D0:0000:0000:0001:0001\"}}],"
		"\"private\":[{\"ipv4\":{\"ip_address\":\"10.114.0.2\"}}]}}",
		"{\"droplet_id\":\"22532410\",\"hostname\":\"node-a\",\"region\":\"fra1\"}",
	};
	for (size_t i = 0; i < 2; i++) {
		struct tanswer a[] = { { MD_DIGITALOCEAN_DOC, 200, docs[i] } };
		struct table t = TABLE(a);
		struct md_getter g = { table_get, &t };
		struct md_instance in;
		struct errbuf e = { "" };
		memset(&in, 0, sizeof(in));
		CHECK(md_digitalocean_build(&g, &in, &e) == 0);
		CHECK_STR(in.provider_id, "digitalocean://22532410");
		CHECK_STR(in.region, "fra1");
		CHECK_STR(in.zone, "");
		CHECK_STR(addr_of(&in, MD_ADDR_HOSTNAME, 0), "node-a");
		if (i == 0) {
			CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_IP, 0), "10.114.0.2");
			CHECK_STR(addr_of(&in, MD_ADDR_EXTERNAL_IP, 0), "164.90.1.2");
			CHECK_STR(addr_of(&in, MD_ADDR_EXTERNAL_IP, 1), "2a03:b0c0:3:d0::1:1");
		}
	}
	const char *bad[] = {
		"{\"droplet_id\":0,\"region\":\"fra1\"}",
		"{\"droplet_id\":\"12a\",\"region\":\"fra1\"}",
		"{\"droplet_id\":1.5,\"region\":\"fra1\"}",
		"{\"droplet_id\":12}",
		"{\"droplet_id\":12,\"region\":\"fra1\",\"interfaces\":{\"private\":[{\"ipv4\":"
		"{\"ip_address\":\"10.114.0.256\"}}]}}",
		"[1,2]",
		"{\"droplet_id\":12,\"region\":\"fra1\"} {}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tanswer a[] = { { MD_DIGITALOCEAN_DOC, 200, bad[i] } };
		struct table t = TABLE(a);
		struct md_getter g = { table_get, &t };
		struct md_instance in;
		struct errbuf e = { "" };
		memset(&in, 0, sizeof(in));
		CHECK(md_digitalocean_build(&g, &in, &e) == ERR_INVALID);
		CHECK_CONTAINS(e.msg, MD_DIGITALOCEAN_DOC);
	}
}

TEST(hetzner_yaml_zone_region_and_ipv6_only_servers)
{
	const char *meta =
	    "availability-zone: fsn1-dc14\nhostname: node-a\ninstance-id: 4711\n"
	    "local-ipv4: ''\nnetwork-config:\n  config:\n  - mac_address: 96:00:01:23:45:6a\n"
	    "    name: eth0\n    subnets:\n    - ipv4: true\n      type: dhcp\n"
	    "    - address: 2001:db8:4711::1/64\n      gateway: fe80::1\n      ipv6: true\n"
	    "      type: static\n    type: physical\n  version: 1\n"
	    "public-ipv4: 203.0.113.10\nregion: eu-central\n";
	struct tanswer a[] = {
		{ MD_HETZNER_META, 200, meta },
		{ MD_HETZNER_NETWORKS, 200, "- ip: 10.0.0.2\n  alias_ips: []\n  interface_num: 1\n" },
	};
	struct table t = TABLE(a);
	struct md_getter g = { table_get, &t };
	struct md_instance in;
	struct errbuf e = { "" };

	memset(&in, 0, sizeof(in));
	CHECK(md_hetzner_build(&g, &in, &e) == 0);
	CHECK_STR(in.provider_id, "hcloud://4711");
	CHECK_STR(in.zone, "fsn1-dc14");
	CHECK_STR(in.region, "fsn1");
	CHECK_STR(addr_of(&in, MD_ADDR_HOSTNAME, 0), "node-a");
	CHECK_STR(addr_of(&in, MD_ADDR_EXTERNAL_IP, 0), "203.0.113.10");
	CHECK_STR(addr_of(&in, MD_ADDR_INTERNAL_IP, 0), "10.0.0.2");
	CHECK(addr_of(&in, MD_ADDR_EXTERNAL_IP, 1) == NULL); /* IPv4 exists: no IPv6 */

	const char *v6only =
	    "availability-zone: hel1-dc2\nhostname: node-b\ninstance-id: 42\n"
	    "network-config:\n  config:\n  - subnets:\n    - address: 2a01:4f9::1/64\n"
	    "      ipv6: true\n      type: static\n  version: 1\npublic-ipv4: ''\n";
	struct tanswer b[] = { { MD_HETZNER_META, 200, v6only },
	    { MD_HETZNER_NETWORKS, 200, "[]\n" } };
	struct table tb = TABLE(b);
	g.arg = &tb;
	memset(&in, 0, sizeof(in));
	CHECK(md_hetzner_build(&g, &in, &e) == 0);
	CHECK_STR(in.region, "hel1");
	CHECK_STR(addr_of(&in, MD_ADDR_EXTERNAL_IP, 0), "2a01:4f9::1");

	const char *bad[] = {
		"instance-id: 0x12\n",
		"instance-id: [1]\n",
		"hostname: a\n",
		"- a\n- b\n",
		"instance-id: 1\nhostname: {\n",
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tanswer c[] = { { MD_HETZNER_META, 200, bad[i] } };
		struct table tc = TABLE(c);
		g.arg = &tc;
		memset(&in, 0, sizeof(in));
		CHECK(md_hetzner_build(&g, &in, &e) == ERR_INVALID);
		CHECK_CONTAINS(e.msg, MD_HETZNER_META);
	}
}

/* ---- building blocks --------------------------------------------------- */

TEST(addresses_are_validated_deduplicated_and_capped)
{
	struct md_instance in;
	struct md_answer a = { .where = "GET /x" };
	struct errbuf e = { "" };
	char ip[32];

	memset(&in, 0, sizeof(in));
	CHECK(md_build_addr(&in, &a, "ip", MD_ADDR_INTERNAL_IP, "10.0.0.1", 8, &e) == 0);
	CHECK(md_build_addr(&in, &a, "ip", MD_ADDR_INTERNAL_IP, "10.0.0.1", 8, &e) == 0);
	CHECK(md_build_addr(&in, &a, "ip", MD_ADDR_EXTERNAL_IP, "10.0.0.1", 8, &e) == 0);
	CHECK(in.n_addresses == 2);
	CHECK(md_build_addr(&in, &a, "ip", MD_ADDR_INTERNAL_IP, "10.0.0.1 ", 9, &e) == ERR_INVALID);
	CHECK(md_build_addr(&in, &a, "ip", MD_ADDR_INTERNAL_IP, "fe80::1%eth0", 12, &e) ==
	    ERR_INVALID);
	CHECK(md_build_addr(&in, &a, "ip", MD_ADDR_INTERNAL_IP, "1.2.3", 5, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "GET /x: ip \"1.2.3\" is not an IP address");
	CHECK(md_build_addr(&in, &a, "dns", MD_ADDR_HOSTNAME, "bad..name", 9, &e) == ERR_INVALID);
	CHECK(md_build_addr(&in, &a, "dns", MD_ADDR_HOSTNAME, "a\x1b[0m", 6, &e) == ERR_INVALID);
	CHECK(md_build_addr(&in, &a, "ip", MD_ADDR_INTERNAL_IP, "", 0, &e) == 0);
	CHECK(in.n_addresses == 2);
	for (int i = 0; i < 40; i++) {
		snprintf(ip, sizeof(ip), "10.1.0.%d", i);
		CHECK(md_build_addr(&in, &a, "ip", MD_ADDR_INTERNAL_IP, ip, strlen(ip), &e) == 0);
	}
	CHECK(in.n_addresses == MD_ADDRS_MAX);
	CHECK(in.addresses_dropped == 42 - MD_ADDRS_MAX);
}

TEST(fields_are_capped_and_checked)
{
	struct md_answer a = { .where = "GET /y" };
	struct errbuf e = { "" };
	char dst[8], big[64];

	CHECK(md_build_set(&a, "f", dst, sizeof(dst), "1234567", 7, MD_V_WORD, &e) == 0);
	CHECK_STR(dst, "1234567");
	CHECK(md_build_set(&a, "f", dst, sizeof(dst), "12345678", 8, MD_V_WORD, &e) ==
	    ERR_INVALID);
	CHECK_CONTAINS(e.msg, "longer than 7 bytes");
	CHECK_STR(dst, "1234567"); /* untouched on failure */
	CHECK(md_build_set(&a, "f", dst, sizeof(dst), "a b", 3, MD_V_WORD, &e) == ERR_INVALID);
	CHECK(md_build_set(&a, "f", dst, sizeof(dst), "a b", 3, MD_V_TEXT, &e) == 0);
	CHECK(md_build_set(&a, "f", dst, sizeof(dst), "a*b", 3, MD_V_SEGMENT, &e) == ERR_INVALID);
	CHECK(md_build_set(&a, "f", dst, sizeof(dst), "a/b", 3, MD_V_SEGMENT, &e) == ERR_INVALID);
	CHECK(md_build_set(&a, "f", dst, sizeof(dst), "", 0, MD_V_REQUIRED, &e) == ERR_INVALID);
	CHECK(md_build_set(&a, "f", big, sizeof(big), "\xc3\xb6", 2, MD_V_TEXT, &e) ==
	    ERR_INVALID);
	CHECK(md_build_set(&a, "f", big, sizeof(big), "\xc3\xb6", 2, MD_V_UTF8, &e) == 0);
	CHECK(md_build_set(&a, "f", big, sizeof(big), "\xc3", 1, MD_V_UTF8, &e) == ERR_INVALID);
	CHECK(md_build_set(&a, "f", big, sizeof(big), "\xed\xa0\x80", 3, MD_V_UTF8, &e) ==
	    ERR_INVALID); /* a surrogate */
	CHECK(md_build_set(&a, "f", big, sizeof(big), "\xc0\xaf", 2, MD_V_UTF8, &e) ==
	    ERR_INVALID); /* overlong */
}

TEST(endpoints_parse_strictly)
{
	char host[64], port[8];
	struct errbuf e = { "" };

	CHECK(md_session_parse_url("http://169.254.169.254", host, sizeof(host), port,
	    sizeof(port), &e) == 0);
	CHECK_STR(host, "169.254.169.254");
	CHECK_STR(port, "80");
	CHECK(md_session_parse_url("http://[fd00:ec2::254]/", host, sizeof(host), port,
	    sizeof(port), &e) == 0);
	CHECK_STR(host, "fd00:ec2::254");
	CHECK(md_session_parse_url("http://[fe80::a9fe:a9fe%25eth0]:8080", host, sizeof(host),
	    port, sizeof(port), &e) == 0);
	CHECK_STR(host, "fe80::a9fe:a9fe%eth0");
	CHECK_STR(port, "8080");
	CHECK(md_session_parse_url("http://127.0.0.1:41234", host, sizeof(host), port,
	    sizeof(port), &e) == 0);
	CHECK_STR(port, "41234");
	const char *bad[] = { "https://169.254.169.254", "169.254.169.254", "http://",
		"http://h:0", "http://h:65536", "http://h/path", "http://h:80x", "http://u@h",
		"http://[::1", "http://h?x", "ftp://h" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(md_session_parse_url(bad[i], host, sizeof(host), port, sizeof(port), &e) ==
		    ERR_INVALID);
		CHECK_CONTAINS(e.msg, "is not a metadata endpoint");
	}

	struct md_config cfg;
	md_config_init(&cfg);
	CHECK(md_config_set(&cfg, "gce", "http://10.0.0.1:81", "/d", "/cd", &e) == 0);
	CHECK(cfg.cloud == MD_CLOUD_GCE);
	CHECK_STR(cfg.endpoint, "http://10.0.0.1:81");
	CHECK(md_config_set(&cfg, "auto", "", "", "", &e) == 0);
	CHECK(cfg.cloud == MD_CLOUD_UNKNOWN);
	CHECK(md_config_set(&cfg, "aws", NULL, NULL, NULL, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "--metadata-cloud \"aws\"");
	CHECK(md_config_set(&cfg, NULL, "http://x/y", NULL, NULL, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "--metadata-endpoint");
}

TEST(cloud_names_round_trip)
{
	enum md_cloud c;
	for (int i = MD_CLOUD_EC2; i <= MD_CLOUD_HETZNER; i++) {
		CHECK(md_cloud_parse(md_cloud_name((enum md_cloud)i), &c) == 0);
		CHECK((int)c == i);
	}
	CHECK(md_cloud_parse("unknown", &c) == ERR_INVALID);
	CHECK_STR(md_addr_type_name(MD_ADDR_INTERNAL_DNS), "InternalDNS");
}

/* ---- DMI detection ------------------------------------------------------ */

static void
write_file(const char *dir, const char *name, const char *value)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "w")) != NULL) {
		fputs(value, f);
		fclose(f);
	}
}

static void
rm_tree(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "  could not remove %s\n", dir);
}

static int
detect_with(const char *name1, const char *v1, const char *name2, const char *v2,
    enum md_cloud *ret)
{
	char dir[] = "/tmp/test_metadata_dmiXXXXXX";
	struct md_config cfg;
	struct errbuf e = { "" };
	int r;

	if (mkdtemp(dir) == NULL)
		return -100;
	write_file(dir, "sys_vendor", "QEMU\n");
	write_file(dir, "product_name", "Standard PC (Q35 + ICH9, 2009)\n");
	if (name1)
		write_file(dir, name1, v1);
	if (name2)
		write_file(dir, name2, v2);
	md_config_init(&cfg);
	cfg.dmi_dir = dir;
	r = md_detect(&cfg, ret, &e);
	rm_tree(dir);
	return r;
}

TEST(detection_from_dmi_signals)
{
	struct { const char *n1, *v1, *n2, *v2; enum md_cloud want; } cases[] = {
		{ "chassis_asset_tag", "7783-7084-3265-9085-8269-3286-77\n", NULL, NULL,
		  MD_CLOUD_AZURE },
		{ "product_name", "Google Compute Engine\n", NULL, NULL, MD_CLOUD_GCE },
		{ "product_name", "Google\n", NULL, NULL, MD_CLOUD_GCE },
		{ "product_serial", "GoogleCloud-ABC\n", NULL, NULL, MD_CLOUD_GCE },
		{ "sys_vendor", "DigitalOcean\n", NULL, NULL, MD_CLOUD_DIGITALOCEAN },
		{ "sys_vendor", "Hetzner\n", NULL, NULL, MD_CLOUD_HETZNER },
		{ "product_name", "OpenStack Nova\n", NULL, NULL, MD_CLOUD_OPENSTACK },
		{ "product_name", "OpenStack Compute\n", NULL, NULL, MD_CLOUD_OPENSTACK },
		{ "chassis_asset_tag", "OpenTelekomCloud\n", NULL, NULL, MD_CLOUD_OPENSTACK },
		{ "chassis_asset_tag", "HUAWEICLOUD\n", NULL, NULL, MD_CLOUD_OPENSTACK },
		{ "product_uuid", "ec2d4c7a-1f3b-8e2a-5c6d-0a1b2c3d4e5f\n", NULL, NULL,
		  MD_CLOUD_EC2 },
		{ "product_uuid", "EC2E1916-9099-7CAA-FD21-012345ABCDEF\n", NULL, NULL,
		  MD_CLOUD_EC2 },
		{ "product_uuid", "45E12AEC-DCD1-B213-94ED-012345ABCDEF\n", NULL, NULL,
		  MD_CLOUD_EC2 }, /* byte-swapped first group */
		{ "sys_vendor", "Amazon EC2\n", NULL, NULL, MD_CLOUD_EC2 },
		{ "product_uuid", "45E12AED-DCD1-B213-94ED-012345ABCDEF\n", NULL, NULL,
		  MD_CLOUD_UNKNOWN },
		{ "product_uuid", "6b1f0e4a-2c3d-4e5f-a6b7-c8d9e0f1a2b3\n", NULL, NULL,
		  MD_CLOUD_UNKNOWN },
		{ "chassis_asset_tag", "7783-7084-3265-9085-8269-3286-78\n", NULL, NULL,
		  MD_CLOUD_UNKNOWN },
		{ "sys_vendor", "Hetzner Online\n", NULL, NULL, MD_CLOUD_UNKNOWN },
		{ NULL, NULL, NULL, NULL, MD_CLOUD_UNKNOWN },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum md_cloud c = MD_CLOUD_UNKNOWN;
		int r = detect_with(cases[i].n1, cases[i].v1, cases[i].n2, cases[i].v2, &c);
		if (cases[i].want == MD_CLOUD_UNKNOWN) {
			CHECK(r == ERR_NOT_FOUND);
		} else {
			if (r != 0 || c != cases[i].want)
				fprintf(stderr, "  case %zu: r=%d cloud=%s\n", i, r, md_cloud_name(c));
			CHECK(r == 0 && c == cases[i].want);
		}
	}
}

TEST(detection_reads_the_xen_hypervisor_uuid_beside_a_host_sys)
{
	char root[] = "/tmp/test_metadata_rootXXXXXX", dmi[256], hv[256], cmd[600];
	struct md_config cfg;
	struct errbuf e = { "" };
	enum md_cloud c = MD_CLOUD_UNKNOWN;

	CHECK(mkdtemp(root) != NULL);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/sys/class/dmi/id' '%s/sys/hypervisor'", root,
	    root);
	CHECK(system(cmd) == 0);
	snprintf(dmi, sizeof(dmi), "%s/sys/class/dmi/id", root);
	snprintf(hv, sizeof(hv), "%s/sys/hypervisor", root);
	write_file(dmi, "sys_vendor", "Xen\n");
	write_file(hv, "uuid", "ec2e1916-9099-7caa-fd21-012345abcdef\n");
	md_config_init(&cfg);
	cfg.dmi_dir = dmi;
	CHECK(md_detect(&cfg, &c, &e) == 0);
	CHECK(c == MD_CLOUD_EC2);
	cfg.dmi_dir = "/nonexistent/dmi";
	CHECK(md_detect(&cfg, &c, &e) == ERR_NOT_FOUND);
	CHECK_CONTAINS(e.msg, "no DMI data at /nonexistent/dmi");
	rm_tree(root);
}

/* ---- the service layer without a service -------------------------------- */

static int
closed_port_url(char *url, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0)
		return -1;
	close(fd); /* bound, never listened: connections are refused */
	snprintf(url, len, "http://127.0.0.1:%d", ntohs(sa.sin_port));
	return 0;
}

TEST(nothing_listening_is_not_found_and_leaves_the_instance_alone)
{
	char url[64];
	struct md_config cfg;
	struct md_instance in;
	struct errbuf e = { "" };
	struct timespec t0, t1;
	enum md_cloud clouds[] = { MD_CLOUD_EC2, MD_CLOUD_GCE, MD_CLOUD_AZURE,
		MD_CLOUD_OPENSTACK, MD_CLOUD_DIGITALOCEAN, MD_CLOUD_HETZNER };

	CHECK(closed_port_url(url, sizeof(url)) == 0);
	CHECK(md_session_probe(url, 500, &e) == 0);
	md_config_init(&cfg);
	cfg.endpoint = url;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < sizeof(clouds) / sizeof(clouds[0]); i++) {
		memset(&in, 0x5a, sizeof(in));
		cfg.cloud = clouds[i];
		CHECK(md_fetch(&cfg, &in, &e) == ERR_NOT_FOUND);
		CHECK_CONTAINS(e.msg, "no metadata service at http://127.0.0.1:");
		CHECK(in.provider_id[0] == 0x5a && in.n_addresses == (size_t)0x5a5a5a5a5a5a5a5aULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(t1.tv_sec - t0.tv_sec < 2); /* refused at once, no retries */

	/* unknown DMI: not found without touching the network */
	cfg.cloud = MD_CLOUD_UNKNOWN;
	cfg.dmi_dir = "/nonexistent";
	CHECK(md_fetch(&cfg, &in, &e) == ERR_NOT_FOUND);
}

TEST(a_listening_socket_is_a_service)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	char url[64];
	struct errbuf e = { "" };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(fd >= 0);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fd, 4) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)&sa, &sl) == 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", ntohs(sa.sin_port));
	CHECK(md_session_probe(url, 500, &e) == 1);
	close(fd);
}

TEST(config_drive_files_are_read_whole_and_capped)
{
	char dir[] = "/tmp/test_metadata_cdXXXXXX", sub[256], cmd[600];
	struct md_answer a;
	struct errbuf e = { "" };

	CHECK(mkdtemp(dir) != NULL);
	snprintf(sub, sizeof(sub), "%s/openstack/latest", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && truncate -s %d '%s/big'", sub,
	    MD_BODY_MAX + 1, dir);
	CHECK(system(cmd) == 0);
	write_file(sub, "meta_data.json", "{\"uuid\":\"u-1\"}\n");
	memset(&a, 0, sizeof(a));
	CHECK(md_openstack_drive_get(dir, MD_OPENSTACK_META, 0, &a, &e) == 0);
	CHECK(a.status == 200 && a.len == 15);
	CHECK_CONTAINS(a.where, "/openstack/latest/meta_data.json");
	md_session_answer_free(&a);
	CHECK(md_openstack_drive_get(dir, MD_OPENSTACK_NETWORK, 1, &a, &e) == 0);
	CHECK(a.status == 404);
	md_session_answer_free(&a);
	CHECK(md_openstack_drive_get(dir, MD_OPENSTACK_NETWORK, 0, &a, &e) == ERR_INVALID);
	CHECK(md_openstack_drive_get(dir, "/big", 0, &a, &e) == ERR_TOO_LARGE);
	CHECK(md_openstack_drive_get(dir, "/openstack", 0, &a, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "not a regular file");

	/* the order: an empty drive passes to the service, which is absent */
	struct md_config cfg;
	struct md_instance in;
	char url[64];
	md_config_init(&cfg);
	cfg.cloud = MD_CLOUD_OPENSTACK;
	CHECK(closed_port_url(url, sizeof(url)) == 0);
	cfg.endpoint = url;
	cfg.config_drive = "/nonexistent-drive";
	CHECK(md_fetch(&cfg, &in, &e) == ERR_NOT_FOUND);
	CHECK_CONTAINS(e.msg, "no config drive at /nonexistent-drive");
	CHECK_CONTAINS(e.msg, "no metadata service at");
	cfg.config_drive = dir;
	memset(&in, 0, sizeof(in));
	CHECK(md_fetch(&cfg, &in, &e) == 0);
	CHECK_STR(in.provider_id, "openstack:///u-1");
	CHECK(in.source == MD_SOURCE_CONFIG_DRIVE);
	write_file(sub, "meta_data.json", "{\"uuid\":");
	CHECK(md_fetch(&cfg, &in, &e) == ERR_INVALID); /* broken drive: no fall-through */
	CHECK_CONTAINS(e.msg, "meta_data.json: JSON text cut short");
	rm_tree(dir);
}

/* ---- output ----------------------------------------------------------------- */

TEST(label_values_are_sanitized_or_omitted)
{
	char out[MD_LABEL_VALUE_MAX];
	char long_in[200];

	CHECK(md_format_label_value("us-east-2b", out, sizeof(out)) == MD_LABEL_OK);
	CHECK_STR(out, "us-east-2b");
	CHECK(md_format_label_value("Standard_D2s_v5", out, sizeof(out)) == MD_LABEL_OK);
	CHECK(md_format_label_value("", out, sizeof(out)) == MD_LABEL_ABSENT);
	CHECK(md_format_label_value("az 1", out, sizeof(out)) == MD_LABEL_SANITIZED);
	CHECK_STR(out, "az-1");
	CHECK(md_format_label_value("-nova-", out, sizeof(out)) == MD_LABEL_SANITIZED);
	CHECK_STR(out, "nova");
	CHECK(md_format_label_value("z\xc3\xbcrich  west", out, sizeof(out)) ==
	    MD_LABEL_SANITIZED);
	CHECK_STR(out, "z-rich-west");
	CHECK(md_format_label_value("a,b=c", out, sizeof(out)) == MD_LABEL_SANITIZED);
	CHECK_STR(out, "a-b-c");
	CHECK(md_format_label_value("!!!", out, sizeof(out)) == MD_LABEL_OMITTED);
	CHECK_STR(out, "");
	memset(long_in, 'a', sizeof(long_in) - 1);
	long_in[sizeof(long_in) - 1] = '\0';
	long_in[62] = '.';
	CHECK(md_format_label_value(long_in, out, sizeof(out)) == MD_LABEL_SANITIZED);
	CHECK(strlen(out) == 62); /* cut at 63, then the '.' end */
}

TEST(shell_quoting)
{
	char out[64];

	CHECK(md_format_shell_quote("plain", out, sizeof(out)) == 0);
	CHECK_STR(out, "'plain'");
	CHECK(md_format_shell_quote("it's $HOME `x`", out, sizeof(out)) == 0);
	CHECK_STR(out, "'it'\\''s $HOME `x`'");
	CHECK(md_format_shell_quote("", out, sizeof(out)) == 0);
	CHECK_STR(out, "''");
	CHECK(md_format_shell_quote("0123456789", out, 8) == ERR_TOO_LARGE);
}

static void
sample_instance(struct md_instance *in)
{
	struct md_answer a = { .where = "test" };
	struct errbuf e;

	memset(in, 0, sizeof(*in));
	in->cloud = MD_CLOUD_OPENSTACK;
	in->source = MD_SOURCE_CONFIG_DRIVE;
	snprintf(in->provider_id, sizeof(in->provider_id), "%s", "openstack:///u-1");
	snprintf(in->instance_id, sizeof(in->instance_id), "%s", "u-1");
	snprintf(in->name, sizeof(in->name), "%s", "it's \"n\xc3\xb6" "de\"");
	snprintf(in->zone, sizeof(in->zone), "%s", "zone 1");
	snprintf(in->instance_type, sizeof(in->instance_type), "%s", "m1.small");
	md_build_addr(in, &a, "x", MD_ADDR_EXTERNAL_IP, "203.0.113.9", 11, &e);
	md_build_addr(in, &a, "x", MD_ADDR_EXTERNAL_IP, "2001:db8::9", 11, &e);
	md_build_addr(in, &a, "x", MD_ADDR_INTERNAL_IP, "10.0.0.9", 8, &e);
	md_build_addr(in, &a, "x", MD_ADDR_INTERNAL_DNS, "n.example", 9, &e);
}

TEST(node_ip_prefers_internal_ipv4_then_adds_ipv6)
{
	struct md_instance in;
	char buf[128];

	sample_instance(&in);
	md_format_node_ip(&in, buf, sizeof(buf));
	CHECK_STR(buf, "10.0.0.9,2001:db8::9");
	in.addresses[2].type = MD_ADDR_EXTERNAL_IP; /* no InternalIP left */
	md_format_node_ip(&in, buf, sizeof(buf));
	CHECK_STR(buf, "203.0.113.9,2001:db8::9");
	in.n_addresses = 0;
	md_format_node_ip(&in, buf, sizeof(buf));
	CHECK_STR(buf, "");
}

TEST(printed_formats)
{
	struct md_instance in;
	struct errbuf e = { "" };
	char out[4096];
	struct json_object *o, *v;
	int n;

	sample_instance(&in);
	n = md_format_write(&in, MD_FORMAT_KUBELET_FLAGS, out, sizeof(out), &e);
	CHECK(n > 0);
	CHECK_STR(out, "--provider-id=openstack:///u-1 --node-ip=10.0.0.9,2001:db8::9 "
	    "--node-labels=topology.kubernetes.io/zone=zone-1,"
	    "node.kubernetes.io/instance-type=m1.small\n");
	n = md_format_write(&in, MD_FORMAT_ENV, out, sizeof(out), &e);
	CHECK(n > 0);
	CHECK_CONTAINS(out, "BOOTCCM_CLOUD='openstack'\nBOOTCCM_SOURCE='config-drive'\n");
	CHECK_CONTAINS(out, "BOOTCCM_NAME='it'\\''s \"n\xc3\xb6" "de\"'\n");
	CHECK_CONTAINS(out, "BOOTCCM_REGION=''\n");
	CHECK_CONTAINS(out, "BOOTCCM_EXTERNAL_IPS='203.0.113.9,2001:db8::9'\n");
	CHECK_CONTAINS(out, "BOOTCCM_NODE_LABELS='topology.kubernetes.io/zone=zone-1,"
	    "node.kubernetes.io/instance-type=m1.small'\n");
	n = md_format_write(&in, MD_FORMAT_JSON, out, sizeof(out), &e);
	CHECK(n > 0);
	CHECK((o = json_tokener_parse(out)) != NULL);
	CHECK(json_object_object_get_ex(o, "name", &v));
	CHECK_STR(json_object_get_string(v), "it's \"n\xc3\xb6" "de\"");
	CHECK(json_object_object_get_ex(o, "addresses", &v));
	CHECK(json_object_array_length(v) == 4);
	CHECK(json_object_object_get_ex(o, "labels", &v));
	CHECK(json_object_object_length(v) == 2);
	CHECK(json_object_object_get_ex(o, "nodeIP", &v));
	CHECK_STR(json_object_get_string(v), "10.0.0.9,2001:db8::9");
	json_object_put(o);
	CHECK(md_format_write(&in, MD_FORMAT_JSON, out, 100, &e) == ERR_TOO_LARGE);

	/* nothing to say: no --node-ip, no --node-labels */
	in.n_addresses = 0;
	in.zone[0] = in.instance_type[0] = '\0';
	CHECK(md_format_write(&in, MD_FORMAT_KUBELET_FLAGS, out, sizeof(out), &e) > 0);
	CHECK_STR(out, "--provider-id=openstack:///u-1\n");
	enum md_format f;
	CHECK(md_format_parse("kubelet-flags", &f) == 0 && f == MD_FORMAT_KUBELET_FLAGS);
	CHECK(md_format_parse("yaml", &f) == ERR_INVALID);
}

TEST_MAIN()
