/* test_node.c - the Node decoder: every kept field of a realistic Node (with
 * managedFields and an image list), absent and null fields, broken input
 * named by node and field, that dropped fields cost nothing, and that a
 * parse building only kube_node_fields decodes to the same Node or the same
 * error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "base/jsonx.h"
#include "kube/client.h"
#include "kube/node.h"
#include "kube/watch.h"

/* A Node as kube-apiserver sends it (kubeadm control plane, after the CCM
 * initialized it), with IMAGES standing for status.images. */
#define NODE_HEAD \
	"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"annotations\":{" \
	"\"kubeadm.alpha.kubernetes.io/cri-socket\":\"unix:///var/run/containerd/containerd.sock\"," \
	"\"node.alpha.kubernetes.io/ttl\":\"0\"," \
	"\"volumes.kubernetes.io/controller-managed-attach-detach\":\"true\"}," \
	"\"creationTimestamp\":\"2026-11-21T08:00:00Z\"," \
	"\"labels\":{\"beta.kubernetes.io/arch\":\"amd64\",\"kubernetes.io/hostname\":\"cp-1\"," \
	"\"node-role.kubernetes.io/control-plane\":\"\"," \
	"\"topology.kubernetes.io/zone\":\"fsn1-dc14\"}," \
	"\"managedFields\":[{\"apiVersion\":\"v1\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":" \
	"{\"f:status\":{\"f:addresses\":{\"k:{\\\"type\\\":\\\"InternalIP\\\"}\":{\".\":{}," \
	"\"f:address\":{},\"f:type\":{}}}}},\"manager\":\"kubelet\",\"operation\":\"Update\"," \
	"\"time\":\"2026-11-21T08:00:00Z\"}]," \
	"\"name\":\"cp-1\",\"resourceVersion\":\"1234\"," \
	"\"uid\":\"0b6f1c2e-8f1a-4c1e-9a51-0c1f2b9a7d11\"}," \
	"\"spec\":{\"podCIDR\":\"10.244.0.0/24\",\"podCIDRs\":[\"10.244.0.0/24\",\"fd00:10:244::/64\"]," \
	"\"providerID\":\"hcloud://123456\"," \
	"\"taints\":[{\"effect\":\"NoSchedule\",\"key\":\"node-role.kubernetes.io/control-plane\"}," \
	"{\"effect\":\"NoExecute\",\"key\":\"k\",\"timeAdded\":\"2026-11-21T08:00:01Z\",\"value\":\"v\"}]}," \
	"\"status\":{\"addresses\":[{\"address\":\"10.0.0.2\",\"type\":\"InternalIP\"}," \
	"{\"address\":\"10.0.0.3\",\"type\":\"InternalIP\"},{\"address\":\"cp-1\",\"type\":\"Hostname\"}]," \
	"\"allocatable\":{\"cpu\":\"2\",\"memory\":\"3922Mi\"}," \
	"\"conditions\":[{\"lastHeartbeatTime\":\"2026-11-21T08:05:00Z\",\"lastTransitionTime\":" \
	"\"2026-11-21T08:00:00Z\",\"message\":\"kubelet has sufficient memory available\"," \
	"\"reason\":\"KubeletHasSufficientMemory\",\"status\":\"False\",\"type\":\"MemoryPressure\"}," \
	"{\"lastHeartbeatTime\":\"2026-11-21T08:05:00Z\",\"lastTransitionTime\":\"2026-11-21T08:01:00Z\"," \
	"\"message\":\"kubelet is posting ready status\",\"reason\":\"KubeletReady\"," \
	"\"status\":\"True\",\"type\":\"Ready\"}]," \
	"\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":10250}},"
#define NODE_IMAGES \
	"\"images\":[{\"names\":[\"registry.k8s.io/etcd@sha256:0123456789abcdef\"," \
	"\"registry.k8s.io/etcd:3.5.16-0\"],\"sizeBytes\":57680541}," \
	"{\"names\":[\"registry.k8s.io/kube-apiserver@sha256:fedcba9876543210\"," \
	"\"registry.k8s.io/kube-apiserver:v1.32.0\"],\"sizeBytes\":28924484}],"
#define NODE_TAIL \
	"\"nodeInfo\":{\"architecture\":\"amd64\",\"kubeletVersion\":\"v1.32.0\"}}}"

static int
t_decode(const char *text, const struct kube_node **ret, struct errbuf *e)
{
	json_object *j;
	int r;

	if (kube_watch_parse(text, strlen(text), &j, e) < 0)
		abort();
	r = kube_node_decode(j, ret, e);
	json_object_put(j);
	return r;
}

TEST(full_node)
{
	const struct kube_node *n;
	struct errbuf e;

	CHECK(t_decode(NODE_HEAD NODE_IMAGES NODE_TAIL, &n, &e) == 0);
	CHECK_STR(n->name, "cp-1");
	CHECK_STR(n->obj.key, "cp-1");
	CHECK_STR(n->obj.uid, "0b6f1c2e-8f1a-4c1e-9a51-0c1f2b9a7d11");
	CHECK_STR(n->obj.resource_version, "1234");
	CHECK(n->nlabels == 4);
	CHECK_STR(kube_node_label(n, "kubernetes.io/hostname"), "cp-1");
	CHECK_STR(kube_node_label(n, "node-role.kubernetes.io/control-plane"), "");
	CHECK(kube_node_label(n, "nope") == NULL);
	CHECK(n->nannotations == 3);
	CHECK_STR(kube_node_annotation(n, "node.alpha.kubernetes.io/ttl"), "0");
	CHECK(n->ntaints == 2);
	CHECK_STR(n->taints[0].key, "node-role.kubernetes.io/control-plane");
	CHECK(n->taints[0].value == NULL);
	CHECK_STR(n->taints[0].effect, "NoSchedule");
	CHECK_STR(n->taints[1].value, "v");
	CHECK(kube_node_taint(n, "k", "NoExecute") == &n->taints[1]);
	CHECK(kube_node_taint(n, "k", "NoSchedule") == NULL);
	CHECK(kube_node_taint(n, "k", NULL) == &n->taints[1]);
	CHECK_STR(n->provider_id, "hcloud://123456");
	CHECK(n->npod_cidrs == 2);
	CHECK_STR(n->pod_cidrs[1], "fd00:10:244::/64");
	CHECK(n->naddresses == 3);
	/* two InternalIPs stay two */
	CHECK_STR(n->addresses[0].address, "10.0.0.2");
	CHECK_STR(n->addresses[1].address, "10.0.0.3");
	CHECK_STR(n->addresses[1].type, "InternalIP");
	CHECK_STR(n->addresses[2].type, "Hostname");
	CHECK(n->ready == KUBE_NODE_READY_TRUE);
	CHECK(n->creation_timestamp == 1795248000);
	CHECK(n->deletion_timestamp == 0);
	store_obj_unref(&n->obj);
}

TEST(dropped_fields_cost_nothing)
{
	const struct kube_node *a, *b;
	struct errbuf e;
	size_t json_len = strlen(NODE_HEAD NODE_IMAGES NODE_TAIL);

	CHECK(t_decode(NODE_HEAD NODE_IMAGES NODE_TAIL, &a, &e) == 0);
	CHECK(t_decode(NODE_HEAD NODE_TAIL, &b, &e) == 0);
	CHECK(a->obj.size == b->obj.size);
	CHECK(a->obj.size < json_len / 2);
	store_obj_unref(&a->obj);
	store_obj_unref(&b->obj);
}

TEST(minimal_and_null)
{
	const struct kube_node *n;
	struct errbuf e;

	CHECK(t_decode("{\"metadata\":{\"name\":\"n\"}}", &n, &e) == 0);
	CHECK_STR(n->name, "n");
	CHECK_STR(n->obj.uid, "");
	CHECK_STR(n->obj.resource_version, "");
	CHECK(n->nlabels == 0 && n->ntaints == 0 && n->naddresses == 0 && n->npod_cidrs == 0);
	CHECK(n->provider_id == NULL);
	CHECK(n->ready == KUBE_NODE_READY_NONE);
	store_obj_unref(&n->obj);

	CHECK(t_decode("{\"metadata\":{\"name\":\"n\",\"labels\":null,\"deletionTimestamp\":"
	    "\"2026-11-21T09:00:00Z\"},\"spec\":{\"taints\":null,\"providerID\":null},"
	    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"Unknown\"}]}}", &n,
	    &e) == 0);
	CHECK(n->nlabels == 0 && n->provider_id == NULL);
	CHECK(n->deletion_timestamp == 1795251600);
	CHECK(n->ready == KUBE_NODE_READY_UNKNOWN);
	store_obj_unref(&n->obj);

	CHECK(t_decode("{\"metadata\":{\"name\":\"n\"},\"status\":{\"conditions\":["
	    "{\"type\":\"Ready\",\"status\":\"False\"},{\"type\":\"X\"}]}}", &n, &e) == 0);
	CHECK(n->ready == KUBE_NODE_READY_FALSE);
	CHECK(n->network_unavailable == KUBE_NODE_READY_NONE);
	CHECK(n->network_unavailable_reason == NULL);
	store_obj_unref(&n->obj);

	/* the route controller's condition, and a CNI's reason for it */
	CHECK(t_decode("{\"metadata\":{\"name\":\"n\"},\"status\":{\"conditions\":["
	    "{\"type\":\"NetworkUnavailable\",\"status\":\"False\",\"reason\":"
	    "\"CalicoIsUp\"}]}}", &n, &e) == 0);
	CHECK(n->network_unavailable == KUBE_NODE_READY_FALSE);
	CHECK_STR(n->network_unavailable_reason, "CalicoIsUp");
	CHECK(n->ready == KUBE_NODE_READY_NONE);
	store_obj_unref(&n->obj);
	CHECK(t_decode("{\"metadata\":{\"name\":\"n\"},\"status\":{\"conditions\":["
	    "{\"type\":\"NetworkUnavailable\",\"status\":\"True\",\"reason\":7}]}}", &n,
	    &e) == ERR_INVALID);
	CHECK_STR(e.msg, "node \"n\": status.conditions[0].reason: expected a string");
}

static const struct {
	const char *json, *msg;
} broken[] = {
	{ "[]", "node: expected a JSON object" },
	{ "{}", "node without a metadata.name" },
	{ "{\"metadata\":[]}", "node: metadata: expected an object" },
	{ "{\"metadata\":{\"name\":\"\"}}", "node without a metadata.name" },
	{ "{\"metadata\":{\"name\":5}}", "node without a metadata.name" },
	{ "{\"metadata\":{\"name\":\"n\",\"labels\":[\"a\"]}}",
	  "node \"n\": metadata.labels: expected an object" },
	{ "{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":true}}}",
	  "node \"n\": metadata.labels[\"a\"]: expected a string" },
	{ "{\"metadata\":{\"name\":\"n\",\"resourceVersion\":12}}",
	  "node \"n\": metadata.resourceVersion: expected a string" },
	{ "{\"metadata\":{\"name\":\"n\",\"creationTimestamp\":\"today\"}}",
	  "node \"n\": metadata.creationTimestamp: not an RFC 3339 time" },
	{ "{\"metadata\":{\"name\":\"n\"},\"spec\":\"x\"}",
	  "node \"n\": spec: expected an object" },
	{ "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":{}}}",
	  "node \"n\": spec.taints: expected an array" },
	{ "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":[{\"key\":\"k\",\"effect\":5}]}}",
	  "node \"n\": spec.taints[0].effect: expected a string" },
	{ "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":[1]}}",
	  "node \"n\": spec.taints[0]: expected an object" },
	{ "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":[{\"key\":\"k\"}]}}",
	  "node \"n\": spec.taints[0]: a taint needs a key and an effect" },
	{ "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"podCIDRs\":[1]}}",
	  "node \"n\": spec.podCIDRs[0]: expected a string" },
	{ "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"providerID\":{}}}",
	  "node \"n\": spec.providerID: expected a string" },
	{ "{\"metadata\":{\"name\":\"n\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\"}]}}",
	  "node \"n\": status.addresses[0]: an address needs a type and an address" },
	{ "{\"metadata\":{\"name\":\"n\"},\"status\":{\"addresses\":\"10.0.0.1\"}}",
	  "node \"n\": status.addresses: expected an array" },
	{ "{\"metadata\":{\"name\":\"n\"},\"status\":{\"conditions\":[{\"type\":\"Ready\","
	  "\"status\":true}]}}",
	  "node \"n\": status.conditions[0].status: expected a string" },
	{ "{\"metadata\":{\"name\":\"n\"},\"status\":[]}",
	  "node \"n\": status: expected an object" },
};

TEST(broken)
{
	const struct kube_node *n = NULL;
	struct errbuf e;

	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
		e.msg[0] = '\0';
		if (t_decode(broken[i].json, &n, &e) != ERR_INVALID) {
			fprintf(stderr, "  case %zu: accepted\n", i);
			CHECK(0);
		}
		CHECK_STR(e.msg, broken[i].msg);
		CHECK(n == NULL);
	}
}

/* t_same tells whether two Nodes hold the same fields. */
static int
t_same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static int
t_same(const struct kube_node *a, const struct kube_node *b)
{
	if (a->obj.size != b->obj.size || !t_same_str(a->obj.key, b->obj.key) ||
	    !t_same_str(a->obj.uid, b->obj.uid) ||
	    !t_same_str(a->obj.resource_version, b->obj.resource_version) ||
	    !t_same_str(a->name, b->name) || !t_same_str(a->provider_id, b->provider_id) ||
	    a->nlabels != b->nlabels || a->nannotations != b->nannotations ||
	    a->ntaints != b->ntaints || a->npod_cidrs != b->npod_cidrs ||
	    a->naddresses != b->naddresses || a->ready != b->ready ||
	    a->network_unavailable != b->network_unavailable ||
	    !t_same_str(a->network_unavailable_reason, b->network_unavailable_reason) ||
	    a->creation_timestamp != b->creation_timestamp ||
	    a->deletion_timestamp != b->deletion_timestamp ||
	    a->provider_id_nul != b->provider_id_nul || a->nnul_annotations != b->nnul_annotations)
		return 0;
	for (size_t i = 0; i < a->nnul_annotations; i++)
		if (!t_same_str(a->nul_annotations[i], b->nul_annotations[i]))
			return 0;
	for (size_t i = 0; i < a->nlabels; i++)
		if (!t_same_str(a->labels[i].key, b->labels[i].key) ||
		    !t_same_str(a->labels[i].value, b->labels[i].value))
			return 0;
	for (size_t i = 0; i < a->nannotations; i++)
		if (!t_same_str(a->annotations[i].key, b->annotations[i].key) ||
		    !t_same_str(a->annotations[i].value, b->annotations[i].value))
			return 0;
	for (size_t i = 0; i < a->ntaints; i++)
		if (!t_same_str(a->taints[i].key, b->taints[i].key) ||
		    !t_same_str(a->taints[i].value, b->taints[i].value) ||
		    !t_same_str(a->taints[i].effect, b->taints[i].effect))
			return 0;
	for (size_t i = 0; i < a->npod_cidrs; i++)
		if (!t_same_str(a->pod_cidrs[i], b->pod_cidrs[i]))
			return 0;
	for (size_t i = 0; i < a->naddresses; i++)
		if (!t_same_str(a->addresses[i].type, b->addresses[i].type) ||
		    !t_same_str(a->addresses[i].address, b->addresses[i].address))
			return 0;
	return 1;
}

TEST(kept_fields_decode_the_same)
{
	static const char *good[] = {
		NODE_HEAD NODE_IMAGES NODE_TAIL,
		NODE_HEAD NODE_TAIL,
		"{\"metadata\":{\"name\":\"n\"}}",
		"{\"metadata\":{\"name\":\"n\",\"labels\":null,\"deletionTimestamp\":"
		"\"2026-11-21T09:00:00Z\"},\"spec\":{\"taints\":null,\"providerID\":null},"
		"\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"Unknown\"}]}}",
		"{\"metadata\":{\"name\":\"n\"},\"status\":{\"conditions\":["
		"{\"type\":\"NetworkUnavailable\",\"status\":\"False\",\"reason\":"
		"\"CalicoIsUp\",\"message\":\"m\"},{\"type\":\"X\"}]}}",
		/* NULs where the API server allows them */
		"{\"metadata\":{\"name\":\"n\",\"annotations\":{\"a\":\"x\\u0000\",\"b\":\"y\"}},"
		"\"spec\":{\"providerID\":\"metal://\\u0000\"},\"status\":{\"addresses\":["
		"{\"type\":\"Hostname\",\"address\":\"\\u0000\"},{\"type\":\"InternalIP\","
		"\"address\":\"10.0.0.9\"}],\"conditions\":[{\"type\":\"NetworkUnavailable\","
		"\"status\":\"True\",\"reason\":\"\\u0000\"}]}}",
		/* keys written with escapes are read either way */
		"{\"met\\u0061data\":{\"name\":\"n\",\"l\\u0061bels\":{\"a\":\"b\"}},"
		"\"spec\":{\"t\\u0061ints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"}]}}",
		/* a later duplicate wins either way */
		"{\"metadata\":{\"name\":\"a\",\"name\":\"b\",\"labels\":{\"x\":\"1\",\"x\":\"2\"}}}",
	};
	const struct kube_node *a, *b;
	struct errbuf e, e2;
	json_object *j;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		CHECK(t_decode(good[i], &a, &e) == 0);
		CHECK(jsonx_parse_keep(good[i], strlen(good[i]), KUBE_JSON_DEPTH,
		    kube_node_fields, &j, &e) == 0);
		CHECK(kube_node_decode(j, &b, &e) == 0);
		json_object_put(j);
		if (!t_same(a, b))
			fprintf(stderr, "  good[%zu] decodes differently\n", i);
		CHECK(t_same(a, b));
		store_obj_unref(&a->obj);
		store_obj_unref(&b->obj);
	}
	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
		const char *s = broken[i].json;
		b = NULL;
		CHECK(t_decode(s, &a, &e) == ERR_INVALID);
		CHECK(jsonx_parse_keep(s, strlen(s), KUBE_JSON_DEPTH, kube_node_fields, &j,
		    &e2) == 0);
		CHECK(kube_node_decode(j, &b, &e2) == ERR_INVALID);
		json_object_put(j);
		CHECK_STR(e2.msg, e.msg);
		CHECK(b == NULL);
	}
}

/* A NUL in spec.providerID or an annotation's value is legal: the Node
 * decodes with the field left out and flagged, so the node controller can
 * post an Event naming it, where before the Node was refused whole and never
 * seen. */
TEST(nul_in_provider_id_and_annotation)
{
	const struct kube_node *n;
	struct errbuf e = { "" };

	CHECK(t_decode("{\"metadata\":{\"name\":\"w1\",\"annotations\":{"
	    "\"alpha.kubernetes.io/provided-node-ip\":\"10.0.0.1\\u0000\",\"k\":\"v\"}},"
	    "\"spec\":{\"providerID\":\"metal://a\\u0000b\",\"taints\":[{\"key\":\"t\","
	    "\"effect\":\"NoSchedule\"}]}}", &n, &e) == 0);
	CHECK_STR(n->name, "w1");
	CHECK(n->provider_id == NULL && n->provider_id_nul == 1);
	CHECK(n->nannotations == 1);
	CHECK_STR(n->annotations[0].key, "k");
	CHECK(n->nnul_annotations == 1);
	CHECK_STR(n->nul_annotations[0], "alpha.kubernetes.io/provided-node-ip");
	CHECK(n->ntaints == 1);
	store_obj_unref(&n->obj);

	CHECK(t_decode("{\"metadata\":{\"name\":\"w2\"},\"spec\":{\"providerID\":\"metal://x\"}}",
	    &n, &e) == 0);
	CHECK_STR(n->provider_id, "metal://x");
	CHECK(n->provider_id_nul == 0 && n->nnul_annotations == 0);
	store_obj_unref(&n->obj);

	/* an address with a NUL is left out, the others kept */
	CHECK(t_decode("{\"metadata\":{\"name\":\"w5\"},\"status\":{\"addresses\":["
	    "{\"type\":\"InternalIP\",\"address\":\"10.0.0.1\\u0000\"},"
	    "{\"type\":\"InternalIP\",\"address\":\"10.0.0.2\"}]}}", &n, &e) == 0);
	CHECK(n->naddresses == 1);
	CHECK_STR(n->addresses[0].address, "10.0.0.2");
	store_obj_unref(&n->obj);

	/* a NetworkUnavailable reason with a NUL reads as absent */
	CHECK(t_decode("{\"metadata\":{\"name\":\"w4\"},\"status\":{\"conditions\":[{"
	    "\"type\":\"NetworkUnavailable\",\"status\":\"True\",\"reason\":\"Cni\\u0000\"}]}}",
	    &n, &e) == 0);
	CHECK(n->network_unavailable == KUBE_NODE_READY_TRUE);
	CHECK(n->network_unavailable_reason == NULL);
	store_obj_unref(&n->obj);

	/* labels are validated by the API server: a NUL there is refused */
	CHECK(t_decode("{\"metadata\":{\"name\":\"w3\",\"labels\":{\"k\":\"\\u0000\"}}}",
	    &n, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "node \"w3\": metadata.labels[\"k\"]: holds a NUL character");
}

TEST(decode_obj_for_reflector)
{
	json_object *j = NULL;
	const struct store_obj *o;
	struct errbuf e;

	CHECK(kube_watch_parse("{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"7\"}}", 47,
	    &j, &e) == 0);
	CHECK(kube_node_decode_obj(j, &o, &e) == 0);
	CHECK_STR(o->key, "x");
	CHECK_STR(kube_node_of(o)->name, "x");
	CHECK_STR(o->resource_version, "7");
	store_obj_unref(o);
	json_object_put(j);
}

TEST_MAIN()
