/* test_nodectl.c - the cloud-node controller's pure parts: upstream's
 * address rules (provided node IPs first, types they match narrowed, the
 * kubelet's Hostname kept), the JSON patch of the second write (GA + beta
 * labels, reserved additional labels dropped, providerID only when empty,
 * the taint removed by index behind a test, other taints untouched) and the
 * status patch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/nodectl.h"
#include "controllers/nodeview.h"
#include "harness.h"
#include "base/jsonx.h"

static const struct kube_node *
node(const char *json)
{
	const struct kube_node *n = NULL;
	struct errbuf e;
	json_object *j;

	if (jsonx_parse(json, strlen(json), JSONX_DEPTH_MAX, &j, &e) < 0 || kube_node_decode(j, &n, &e) < 0) {
		fprintf(stderr, "bad test node: %s\n", e.msg);
		abort();
	}
	json_object_put(j);
	return n;
}

static void
add_addr(struct cloud_instance_metadata *m, enum cloud_addr_type t, const char *a)
{
	m->addresses[m->n_addresses].type = t;
	snprintf(m->addresses[m->n_addresses].address, sizeof(m->addresses[0].address), "%s", a);
	m->n_addresses++;
}

/* An instance with two InternalIPs (v4), one IPv6 InternalIP, an ExternalIP
 * and no Hostname. */
static void
instance(struct cloud_instance_metadata *m)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->provider_id, sizeof(m->provider_id), "aws:///us-east-2b/i-0abc");
	snprintf(m->instance_type, sizeof(m->instance_type), "t3.small");
	snprintf(m->zone, sizeof(m->zone), "us-east-2b");
	snprintf(m->region, sizeof(m->region), "us-east-2");
	add_addr(m, CLOUD_ADDR_INTERNAL_IP, "10.0.0.5");
	add_addr(m, CLOUD_ADDR_INTERNAL_IP, "10.0.0.6");
	add_addr(m, CLOUD_ADDR_INTERNAL_IP, "2001:db8::5");
	add_addr(m, CLOUD_ADDR_EXTERNAL_IP, "3.14.15.92");
}

#define NODE_WITH(meta, spec, status) \
	"{\"metadata\":{\"name\":\"n1\",\"uid\":\"u1\",\"resourceVersion\":\"7\"" meta "}," \
	"\"spec\":{" spec "},\"status\":{" status "}}"

static const char *
addrs_str(const struct cloud_address *a, size_t k)
{
	static char buf[1024];
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < k && o < sizeof(buf); i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s=%s", i ? " " : "",
		    cloud_addr_type_name(a[i].type), a[i].address);
	return buf;
}

TEST(addresses_without_node_ip_are_the_instances_plus_kubelet_hostname)
{
	const struct kube_node *n = node(NODE_WITH("", "",
	    "\"addresses\":[{\"type\":\"Hostname\",\"address\":\"n1\"}]"));
	struct cloud_instance_metadata m;
	struct cloud_address out[CLOUD_ADDRS_MAX + 1];
	struct errbuf e;
	size_t k = 0;

	instance(&m);
	CHECK(nodectl_addresses(n, &m, out, &k, &e) == 0);
	CHECK_STR(addrs_str(out, k), "InternalIP=10.0.0.5 InternalIP=10.0.0.6 "
	    "InternalIP=2001:db8::5 ExternalIP=3.14.15.92 Hostname=n1");
	/* the cloud's Hostname wins over the kubelet's */
	add_addr(&m, CLOUD_ADDR_HOSTNAME, "ip-10-0-0-5");
	CHECK(nodectl_addresses(n, &m, out, &k, &e) == 0);
	CHECK_STR(addrs_str(out, k), "InternalIP=10.0.0.5 InternalIP=10.0.0.6 "
	    "InternalIP=2001:db8::5 ExternalIP=3.14.15.92 Hostname=ip-10-0-0-5");
	store_obj_unref(&n->obj);
}

TEST(addresses_provided_node_ip_first_and_narrows_its_type)
{
	const struct kube_node *n = node(NODE_WITH(
	    ",\"annotations\":{\"alpha.kubernetes.io/provided-node-ip\":\"10.0.0.6\"}", "", ""));
	struct cloud_instance_metadata m;
	struct cloud_address out[CLOUD_ADDRS_MAX + 1];
	struct errbuf e;
	size_t k = 0;

	instance(&m);
	CHECK(nodectl_addresses(n, &m, out, &k, &e) == 0);
	/* only the matching InternalIP survives; ExternalIP follows */
	CHECK_STR(addrs_str(out, k), "InternalIP=10.0.0.6 ExternalIP=3.14.15.92");
	store_obj_unref(&n->obj);
}

TEST(addresses_dual_stack_pair_and_canonical_ipv6)
{
	const struct kube_node *n = node(NODE_WITH(
	    ",\"annotations\":{\"alpha.kubernetes.io/provided-node-ip\":"
	    "\"2001:DB8:0:0::5,10.0.0.5\"}", "", ""));
	struct cloud_instance_metadata m;
	struct cloud_address out[CLOUD_ADDRS_MAX + 1];
	struct errbuf e;
	size_t k = 0;

	instance(&m);
	CHECK(nodectl_addresses(n, &m, out, &k, &e) == 0);
	CHECK_STR(addrs_str(out, k), "InternalIP=2001:db8::5 InternalIP=10.0.0.5 "
	    "ExternalIP=3.14.15.92");
	store_obj_unref(&n->obj);
}

TEST(addresses_unknown_or_bad_node_ip_refused)
{
	const struct kube_node *n1 = node(NODE_WITH(
	    ",\"annotations\":{\"alpha.kubernetes.io/provided-node-ip\":\"10.9.9.9\"}", "", ""));
	const struct kube_node *n2 = node(NODE_WITH(
	    ",\"annotations\":{\"alpha.kubernetes.io/provided-node-ip\":\"10.0.0.5,10.0.0.6\"}",
	    "", ""));
	const struct kube_node *n3 = node(NODE_WITH(
	    ",\"annotations\":{\"alpha.kubernetes.io/provided-node-ip\":\"not-an-ip\"}", "", ""));
	struct cloud_instance_metadata m;
	struct cloud_address out[CLOUD_ADDRS_MAX + 1];
	struct errbuf e;
	size_t k = 0;

	instance(&m);
	CHECK(nodectl_addresses(n1, &m, out, &k, &e) == ERR_PERMANENT);
	CHECK_CONTAINS(e.msg, "10.9.9.9");
	CHECK_CONTAINS(e.msg, "not among");
	CHECK(nodectl_addresses(n2, &m, out, &k, &e) == ERR_INVALID);
	CHECK(nodectl_addresses(n3, &m, out, &k, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "node n1: annotation alpha.kubernetes.io/provided-node-ip");
	store_obj_unref(&n1->obj);
	store_obj_unref(&n2->obj);
	store_obj_unref(&n3->obj);
}

static const char *
ops_str(json_object *ops)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf), "%s",
	    json_object_to_json_string_ext(ops, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(ops);
	return buf;
}

#define TAINTS \
	"\"taints\":[{\"key\":\"node-role.kubernetes.io/control-plane\",\"effect\":\"NoSchedule\"}," \
	"{\"key\":\"node.cloudprovider.kubernetes.io/uninitialized\",\"value\":\"true\"," \
	"\"effect\":\"NoSchedule\"},{\"key\":\"node.kubernetes.io/not-ready\"," \
	"\"effect\":\"NoExecute\",\"timeAdded\":\"2026-11-21T08:00:01Z\"}]"

TEST(node_ops_labels_provider_id_and_taint)
{
	const struct kube_node *n = node(NODE_WITH(
	    ",\"labels\":{\"kubernetes.io/hostname\":\"n1\",\"topology.kubernetes.io/zone\":\"old\"}",
	    TAINTS, ""));
	struct cloud_instance_metadata m;

	instance(&m);
	snprintf(m.labels[0].key, sizeof(m.labels[0].key), "example.com/pool");
	snprintf(m.labels[0].value, sizeof(m.labels[0].value), "a");
	snprintf(m.labels[1].key, sizeof(m.labels[1].key), "node.kubernetes.io/evil");
	snprintf(m.labels[1].value, sizeof(m.labels[1].value), "x");
	snprintf(m.labels[2].key, sizeof(m.labels[2].key), "kubernetes.io/hostname");
	snprintf(m.labels[2].value, sizeof(m.labels[2].value), "other");
	snprintf(m.labels[3].key, sizeof(m.labels[3].key), "k8s.io/x");
	snprintf(m.labels[3].value, sizeof(m.labels[3].value), "y");
	snprintf(m.labels[4].key, sizeof(m.labels[4].key), "notk8s.io/ok");
	snprintf(m.labels[4].value, sizeof(m.labels[4].value), "z");
	m.n_labels = 5;
	CHECK_STR(ops_str(nodectl_node_ops(n, &m)),
	    "[{\"op\":\"add\",\"path\":\"/metadata/labels/node.kubernetes.io~1instance-type\",\"value\":\"t3.small\"},"
	    "{\"op\":\"add\",\"path\":\"/metadata/labels/beta.kubernetes.io~1instance-type\",\"value\":\"t3.small\"},"
	    "{\"op\":\"add\",\"path\":\"/metadata/labels/topology.kubernetes.io~1zone\",\"value\":\"us-east-2b\"},"
	    "{\"op\":\"add\",\"path\":\"/metadata/labels/failure-domain.beta.kubernetes.io~1zone\",\"value\":\"us-east-2b\"},"
	    "{\"op\":\"add\",\"path\":\"/metadata/labels/topology.kubernetes.io~1region\",\"value\":\"us-east-2\"},"
	    "{\"op\":\"add\",\"path\":\"/metadata/labels/failure-domain.beta.kubernetes.io~1region\",\"value\":\"us-east-2\"},"
	    "{\"op\":\"add\",\"path\":\"/metadata/labels/example.com~1pool\",\"value\":\"a\"},"
	    "{\"op\":\"add\",\"path\":\"/metadata/labels/notk8s.io~1ok\",\"value\":\"z\"},"
	    "{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":{"
	    "\"bootccm.io/address-source\":\"cloud-api\"}},"
	    "{\"op\":\"add\",\"path\":\"/spec/providerID\",\"value\":\"aws:///us-east-2b/i-0abc\"},"
	    "{\"op\":\"test\",\"path\":\"/spec/taints/1/key\",\"value\":\"node.cloudprovider.kubernetes.io/uninitialized\"},"
	    "{\"op\":\"remove\",\"path\":\"/spec/taints/1\"}]");
	store_obj_unref(&n->obj);
}

TEST(node_ops_keeps_provider_id_and_creates_labels_map)
{
	const struct kube_node *n = node(NODE_WITH("",
	    "\"providerID\":\"aws:///z/i-1\"," TAINTS, ""));
	struct cloud_instance_metadata m;

	instance(&m);
	m.zone[0] = m.region[0] = '\0';
	CHECK_STR(ops_str(nodectl_node_ops(n, &m)),
	    "[{\"op\":\"add\",\"path\":\"/metadata/labels\",\"value\":{"
	    "\"node.kubernetes.io/instance-type\":\"t3.small\","
	    "\"beta.kubernetes.io/instance-type\":\"t3.small\"}},"
	    "{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":{"
	    "\"bootccm.io/address-source\":\"cloud-api\"}},"
	    "{\"op\":\"test\",\"path\":\"/spec/taints/1/key\",\"value\":\"node.cloudprovider.kubernetes.io/uninitialized\"},"
	    "{\"op\":\"remove\",\"path\":\"/spec/taints/1\"}]");
	store_obj_unref(&n->obj);
}

TEST(node_ops_record_the_address_source)
{
	/* other annotations: one key added beside them; the same value: nothing */
	const struct kube_node *n = node(NODE_WITH(",\"annotations\":{\"a\":\"b\"}",
	    "\"providerID\":\"x:///1\"", ""));
	const struct kube_node *same = node(NODE_WITH(
	    ",\"annotations\":{\"bootccm.io/address-source\":\"kubelet-reported\"}",
	    "\"providerID\":\"x:///1\"", ""));
	struct cloud_instance_metadata m;

	memset(&m, 0, sizeof(m));
	snprintf(m.source, sizeof(m.source), "%s", CLOUD_SOURCE_KUBELET);
	CHECK_STR(ops_str(nodectl_node_ops(n, &m)),
	    "[{\"op\":\"add\",\"path\":\"/metadata/annotations/bootccm.io~1address-source\","
	    "\"value\":\"kubelet-reported\"}]");
	CHECK_STR(ops_str(nodectl_node_ops(same, &m)), "[]");
	snprintf(m.source, sizeof(m.source), "%s", CLOUD_SOURCE_METADATA);
	CHECK_STR(ops_str(nodectl_node_ops(same, &m)),
	    "[{\"op\":\"add\",\"path\":\"/metadata/annotations/bootccm.io~1address-source\","
	    "\"value\":\"instance-metadata\"}]");
	/* initialized Nodes (no instance): never touched */
	CHECK_STR(ops_str(nodectl_node_ops(n, NULL)), "[]");
	store_obj_unref(&n->obj);
	store_obj_unref(&same->obj);
}

TEST(node_ops_initialized_copies_beta_labels_only_when_missing)
{
	const struct kube_node *n = node(NODE_WITH(
	    ",\"labels\":{\"failure-domain.beta.kubernetes.io/zone\":\"z1\","
	    "\"beta.kubernetes.io/instance-type\":\"big\",\"node.kubernetes.io/instance-type\":\"keep\"}",
	    "", ""));
	const struct kube_node *done = node(NODE_WITH(
	    ",\"labels\":{\"topology.kubernetes.io/zone\":\"z1\"}", "", ""));

	CHECK_STR(ops_str(nodectl_node_ops(n, NULL)),
	    "[{\"op\":\"add\",\"path\":\"/metadata/labels/topology.kubernetes.io~1zone\",\"value\":\"z1\"}]");
	CHECK_STR(ops_str(nodectl_node_ops(done, NULL)), "[]");
	store_obj_unref(&n->obj);
	store_obj_unref(&done->obj);
}

TEST(status_patch_keeps_every_address_in_order)
{
	struct cloud_address a[3] = {
		{ CLOUD_ADDR_INTERNAL_IP, "10.0.0.5" },
		{ CLOUD_ADDR_INTERNAL_IP, "10.0.0.6" },
		{ CLOUD_ADDR_HOSTNAME, "n1" },
	};

	CHECK_STR(ops_str(nodectl_status_patch(a, 3)),
	    "{\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.0.0.5\"},"
	    "{\"type\":\"InternalIP\",\"address\":\"10.0.0.6\"},"
	    "{\"type\":\"Hostname\",\"address\":\"n1\"}]}}");
}

TEST(nodeview_maps_labels_annotations_and_known_address_types)
{
	const struct kube_node *n = node(NODE_WITH(
	    ",\"labels\":{\"a\":\"1\"},\"annotations\":{\"b\":\"2\",\"c\":\"3\"}",
	    "\"providerID\":\"x://1\"",
	    "\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.0.0.1\"},"
	    "{\"type\":\"Weird\",\"address\":\"?\"},{\"type\":\"ExternalDNS\",\"address\":\"e.x\"}]"));
	struct nodeview v;

	nodeview_init(&v, n);
	CHECK_STR(v.node.name, "n1");
	CHECK_STR(v.node.provider_id, "x://1");
	CHECK(v.node.n_labels == 1 && strcmp(v.node.labels[0].key, "a") == 0);
	CHECK(v.node.n_annotations == 2 && strcmp(v.node.annotations[1].value, "3") == 0);
	CHECK(v.node.n_addresses == 2);
	CHECK(v.node.addresses[1].type == CLOUD_ADDR_EXTERNAL_DNS);
	nodeview_free(&v);
	store_obj_unref(&n->obj);
}

TEST(a_late_provider_answer_is_compared_field_by_field)
{
	const struct kube_node *n = node(NODE_WITH("", "",
	    "\"addresses\":[{\"type\":\"Hostname\",\"address\":\"n1\"}]"));
	struct cloud_instance_metadata won, late;
	struct dynbuf d;

	dynbuf_init(&d, 4096);
	instance(&won);
	snprintf(won.source, sizeof(won.source), "%s", CLOUD_SOURCE_METADATA);
	late = won;
	snprintf(late.source, sizeof(late.source), "%s", CLOUD_SOURCE_API);
	CHECK(nodectl_disagreement(n, &won, &late, &d) == 0);
	CHECK_STR(dynbuf_ptr(&d), "");
	/* a field one of them does not say is no disagreement */
	late.instance_type[0] = '\0';
	late.n_labels = 0;
	CHECK(nodectl_disagreement(n, &won, &late, &d) == 0);
	/* the same addresses in another order write other addresses */
	snprintf(late.provider_id, sizeof(late.provider_id), "aws:///us-east-2b/i-0def");
	snprintf(late.zone, sizeof(late.zone), "us-east-2c");
	late.addresses[0] = won.addresses[1];
	late.addresses[1] = won.addresses[0];
	CHECK(nodectl_disagreement(n, &won, &late, &d) == 3);
	CHECK_STR(dynbuf_ptr(&d), "providerID (instance-metadata: aws:///us-east-2b/i-0abc, "
	    "provider: aws:///us-east-2b/i-0def); zone (instance-metadata: us-east-2b, provider: "
	    "us-east-2c); addresses (instance-metadata: [InternalIP 10.0.0.5, InternalIP 10.0.0.6, "
	    "InternalIP 2001:db8::5, ExternalIP 3.14.15.92, Hostname n1], provider: [InternalIP "
	    "10.0.0.6, InternalIP 10.0.0.5, InternalIP 2001:db8::5, ExternalIP 3.14.15.92, "
	    "Hostname n1])");
	dynbuf_free(&d);
	store_obj_unref(&n->obj);
}

TEST_MAIN()
