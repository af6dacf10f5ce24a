/* test_csrctl.c - the kubelet-serving CSR approver's checks, on requests
 * made by `openssl req` (csr_fixtures.h: node-a with DNS:node-a,
 * IP:10.0.0.5, IP:fd00::5) and Nodes decoded from JSON. */
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "controllers/csrctl.h"
#include "harness.h"
#include "base/jsonx.h"
#include "kube/node.h"
#include "base/xalloc.h"

#include "csr_fixtures.h"

static json_object *
json(const char *s)
{
	json_object *o = NULL;

	if (jsonx_parse(s, strlen(s), 64, &o, NULL) < 0)
		abort();
	return o;
}

/* request builds a CSR object and decodes it. */
static int
request(const char *pem, const char *signer, const char *user, const char *groups,
    const char *usages, const char *status, struct csrctl_request *ret)
{
	char *b64 = base64_encode(pem, strlen(pem));
	char *s = xasprintf("{\"metadata\":{\"name\":\"csr-1\"},\"spec\":{\"request\":\"%s\","
	    "\"signerName\":\"%s\",\"username\":\"%s\",\"groups\":%s,\"usages\":%s}%s%s}",
	    b64, signer, user, groups, usages, status ? ",\"status\":" : "", status ? status : "");
	json_object *o = json(s);
	struct errbuf e;
	int r = csrctl_request_decode(o, ret, &e);

	json_object_put(o);
	free(s);
	free(b64);
	return r;
}

#define GOOD_GROUPS "[\"system:nodes\",\"system:authenticated\"]"
#define GOOD_USAGES "[\"digital signature\",\"server auth\"]"

/* node_of decodes the Node s (freed). */
static const struct kube_node *
node_of(char *s)
{
	json_object *o = json(s);
	const struct kube_node *n = NULL;
	struct errbuf e;

	if (kube_node_decode(o, &n, &e) < 0)
		abort();
	json_object_put(o);
	free(s);
	return n;
}

static const struct kube_node *
node(const char *taints, const char *addresses)
{
	return node_of(xasprintf("{\"metadata\":{\"name\":\"node-a\"},\"spec\":{\"taints\":%s},"
	    "\"status\":{\"addresses\":%s}}", taints, addresses));
}

#define ADDRS "[{\"type\":\"InternalIP\",\"address\":\"10.0.0.5\"}," \
	"{\"type\":\"InternalIP\",\"address\":\"fd00:0::5\"}," \
	"{\"type\":\"Hostname\",\"address\":\"node-a\"}]"

/* check runs csrctl_check and returns the failed check's name, or "ok". */
static const char *
check(const struct csrctl_request *q, const struct kube_node *n, int source, int trust,
    struct errbuf *e)
{
	const char *what = NULL;

	memset(e, 0, sizeof(*e));
	if (csrctl_check(q, n, source, trust, &what, e) == 0)
		return "ok";
	return what;
}

/* annotated returns a Node whose annotations are the JSON object a. */
static const struct kube_node *
annotated(const char *a)
{
	return node_of(xasprintf("{\"metadata\":{\"name\":\"node-a\",\"annotations\":%s}}", a));
}

TEST(source_is_the_annotation_the_cloud_node_controller_wrote)
{
	static const struct {
		const char *annotations;
		enum csrctl_source want;
	} t[] = {
		{ "{\"bootccm.io/address-source\":\"cloud-api\"}", CSRCTL_SOURCE_CLOUD },
		{ "{\"bootccm.io/address-source\":\"instance-metadata\"}", CSRCTL_SOURCE_CLOUD },
		{ "{\"bootccm.io/address-source\":\"inventory\"}", CSRCTL_SOURCE_CLOUD },
		{ "{\"bootccm.io/address-source\":\"kubelet-reported\"}", CSRCTL_SOURCE_KUBELET },
		/* initialized by another controller, or a value we never write */
		{ "{}", CSRCTL_SOURCE_UNKNOWN },
		{ "{\"bootccm.io/address-source\":\"\"}", CSRCTL_SOURCE_UNKNOWN },
		{ "{\"bootccm.io/address-source\":\"Cloud-API\"}", CSRCTL_SOURCE_UNKNOWN },
		{ "{\"example.com/address-source\":\"cloud-api\"}", CSRCTL_SOURCE_UNKNOWN },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		const struct kube_node *n = annotated(t[i].annotations);
		CHECK(csrctl_node_source(n) == t[i].want);
		store_obj_unref(&n->obj);
	}
}

TEST(only_checks_time_settles_are_transient)
{
	static const char *const transient[] = { "node", "initialized" };
	static const char *const permanent[] = { "signer", "requester", "request", "subject",
	    "usages", "san-kind", "source", "ip-san", "dns-san" };

	for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++)
		CHECK(csrctl_check_transient(transient[i]));
	for (size_t i = 0; i < sizeof(permanent) / sizeof(permanent[0]); i++)
		CHECK(!csrctl_check_transient(permanent[i]));
}

TEST(good_request_for_a_verified_node)
{
	struct csrctl_request q;
	const struct kube_node *n = node("[]", ADDRS);
	struct errbuf e;

	CHECK(request(CSR_P256, CSRCTL_SIGNER, "system:node:node-a", GOOD_GROUPS, GOOD_USAGES,
	    NULL, &q) == 0);
	CHECK(!q.decided);
	CHECK_STR(csrctl_node_name(&q), "node-a");
	/* fd00::5 matches the Node's "fd00:0::5": addresses compare as addresses */
	CHECK_STR(check(&q, n, CSRCTL_SOURCE_CLOUD, 0, &e), "ok");
	/* RSA too, with key encipherment */
	csrctl_request_free(&q);
	CHECK(request(CSR_RSA, CSRCTL_SIGNER, "system:node:node-a", GOOD_GROUPS,
	    "[\"digital signature\",\"key encipherment\",\"server auth\"]", NULL, &q) == 0);
	CHECK_STR(check(&q, n, CSRCTL_SOURCE_CLOUD, 0, &e), "ok");
	csrctl_request_free(&q);
	store_obj_unref(&n->obj);
}

TEST(each_check_fails_alone)
{
	struct csrctl_request q;
	const struct kube_node *n = node("[]", ADDRS);
	const struct kube_node *other = node("[]",
	    "[{\"type\":\"InternalIP\",\"address\":\"10.0.0.6\"},"
	    "{\"type\":\"InternalIP\",\"address\":\"fd00::5\"},{\"type\":\"Hostname\",\"address\":\"node-a\"}]");
	const struct kube_node *nodns = node("[]",
	    "[{\"type\":\"InternalIP\",\"address\":\"10.0.0.5\"},"
	    "{\"type\":\"InternalIP\",\"address\":\"fd00::5\"},{\"type\":\"InternalIP\",\"address\":\"node-a\"}]");
	const struct kube_node *tainted = node(
	    "[{\"key\":\"node.cloudprovider.kubernetes.io/uninitialized\",\"value\":\"true\","
	    "\"effect\":\"NoSchedule\"}]", ADDRS);
	const struct kube_node *bare = node("[]", "[]");
	struct errbuf e;

	CHECK(request(CSR_P256, "kubernetes.io/kube-apiserver-client-kubelet", "system:node:node-a",
	    GOOD_GROUPS, GOOD_USAGES, NULL, &q) == 0);
	CHECK_STR(check(&q, n, CSRCTL_SOURCE_CLOUD, 0, &e), "signer");
	CHECK_CONTAINS(e.msg, "certificatesigningrequest csr-1: not approved (check signer): signer "
	    "kubernetes.io/kube-apiserver-client-kubelet is not kubernetes.io/kubelet-serving");
	csrctl_request_free(&q);

	CHECK(request(CSR_P256, CSRCTL_SIGNER, "system:node:node-b", GOOD_GROUPS, GOOD_USAGES,
	    NULL, &q) == 0);
	/* node-b asking for node-a's name: the subject does not match the requester */
	CHECK_STR(check(&q, n, CSRCTL_SOURCE_CLOUD, 0, &e), "subject");
	csrctl_request_free(&q);

	CHECK(request(CSR_P256, CSRCTL_SIGNER, "alice", GOOD_GROUPS, GOOD_USAGES, NULL, &q) == 0);
	CHECK_STR(check(&q, n, CSRCTL_SOURCE_CLOUD, 0, &e), "requester");
	csrctl_request_free(&q);
	CHECK(request(CSR_P256, CSRCTL_SIGNER, "system:node:node-a", "[\"system:authenticated\"]",
	    GOOD_USAGES, NULL, &q) == 0);
	CHECK_STR(check(&q, n, CSRCTL_SOURCE_CLOUD, 0, &e), "requester");
	csrctl_request_free(&q);

	CHECK(request("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n",
	    CSRCTL_SIGNER, "system:node:node-a", GOOD_GROUPS, GOOD_USAGES, NULL, &q) == 0);
	CHECK_STR(check(&q, n, CSRCTL_SOURCE_CLOUD, 0, &e), "request");
	csrctl_request_free(&q);

	CHECK(request(CSR_FORGED_CN, CSRCTL_SIGNER, "system:node:node-a", GOOD_GROUPS, GOOD_USAGES,
	    NULL, &q) == 0);
	CHECK_STR(check(&q, n, CSRCTL_SOURCE_CLOUD, 0, &e), "subject");
	csrctl_request_free(&q);
	CHECK(request(CSR_EXTRA_O, CSRCTL_SIGNER, "system:node:node-a", GOOD_GROUPS, GOOD_USAGES,
	    NULL, &q) == 0);
	CHECK_STR(check(&q, n, CSRCTL_SOURCE_CLOUD, 0, &e), "subject");
	csrctl_request_free(&q);

	CHECK(request(CSR_P256, CSRCTL_SIGNER, "system:node:node-a", GOOD_GROUPS,
	    "[\"digital signature\",\"server auth\",\"client auth\"]", NULL, &q) == 0);
	CHECK_STR(check(&q, n, CSRCTL_SOURCE_CLOUD, 0, &e), "usages");
	csrctl_request_free(&q);
	CHECK(request(CSR_P256, CSRCTL_SIGNER, "system:node:node-a", GOOD_GROUPS,
	    "[\"digital signature\"]", NULL, &q) == 0);
	CHECK_STR(check(&q, n, CSRCTL_SOURCE_CLOUD, 0, &e), "usages");
	CHECK_CONTAINS(e.msg, "do not include server auth");
	csrctl_request_free(&q);

	CHECK(request(CSR_EMAIL_URI, CSRCTL_SIGNER, "system:node:node-a", GOOD_GROUPS, GOOD_USAGES,
	    NULL, &q) == 0);
	CHECK_STR(check(&q, n, CSRCTL_SOURCE_CLOUD, 0, &e), "san-kind");
	csrctl_request_free(&q);
	CHECK(request(CSR_NO_SAN, CSRCTL_SIGNER, "system:node:node-a", GOOD_GROUPS, GOOD_USAGES,
	    NULL, &q) == 0);
	CHECK_STR(check(&q, n, CSRCTL_SOURCE_CLOUD, 0, &e), "san-kind");
	csrctl_request_free(&q);

	CHECK(request(CSR_P256, CSRCTL_SIGNER, "system:node:node-a", GOOD_GROUPS, GOOD_USAGES,
	    NULL, &q) == 0);
	CHECK_STR(check(&q, NULL, CSRCTL_SOURCE_CLOUD, 0, &e), "node");
	CHECK_STR(check(&q, tainted, CSRCTL_SOURCE_CLOUD, 0, &e), "initialized");
	CHECK_STR(check(&q, bare, CSRCTL_SOURCE_CLOUD, 0, &e), "initialized");
	CHECK_STR(check(&q, n, CSRCTL_SOURCE_KUBELET, 0, &e), "source");
	CHECK_CONTAINS(e.msg, "came only from its own kubelet");
	CHECK_STR(check(&q, n, CSRCTL_SOURCE_KUBELET, 1, &e), "ok");
	CHECK_STR(check(&q, n, CSRCTL_SOURCE_UNKNOWN, 1, &e), "source");
	/* 10.0.0.5 belongs to another node's addresses, not this one's */
	CHECK_STR(check(&q, other, CSRCTL_SOURCE_CLOUD, 0, &e), "ip-san");
	CHECK_CONTAINS(e.msg, "IP SAN 10.0.0.5 is not among the addresses of node node-a");
	/* "node-a" only as an InternalIP's text is no DNS name of the node */
	CHECK_STR(check(&q, nodns, CSRCTL_SOURCE_CLOUD, 0, &e), "dns-san");
	csrctl_request_free(&q);

	CHECK(request(CSR_P384, CSRCTL_SIGNER, "system:node:node-a", GOOD_GROUPS, GOOD_USAGES,
	    NULL, &q) == 0);
	/* DNS:node-a.example.com is not one of the node's names */
	CHECK_STR(check(&q, n, CSRCTL_SOURCE_CLOUD, 0, &e), "dns-san");
	csrctl_request_free(&q);

	store_obj_unref(&n->obj);
	store_obj_unref(&other->obj);
	store_obj_unref(&nodns->obj);
	store_obj_unref(&tainted->obj);
	store_obj_unref(&bare->obj);
}

TEST(decode)
{
	struct csrctl_request q;
	json_object *o;
	struct errbuf e;

	CHECK(request(CSR_P256, CSRCTL_SIGNER, "system:node:node-a", GOOD_GROUPS, GOOD_USAGES,
	    "{\"conditions\":[{\"type\":\"Approved\",\"status\":\"True\"}]}", &q) == 0);
	CHECK(q.decided);
	CHECK(q.ngroups == 2 && q.nusages == 2);
	CHECK(q.pem_len == strlen(CSR_P256) && memcmp(q.pem, CSR_P256, q.pem_len) == 0);
	csrctl_request_free(&q);
	CHECK(request(CSR_P256, CSRCTL_SIGNER, "system:node:node-a", GOOD_GROUPS, GOOD_USAGES,
	    "{\"conditions\":[{\"type\":\"Failed\",\"status\":\"True\"}]}", &q) == 0);
	CHECK(!q.decided);
	csrctl_request_free(&q);

	o = json("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"request\":\"!!\"}}");
	memset(&q, 0, sizeof(q));
	CHECK(csrctl_request_decode(o, &q, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "certificatesigningrequest x: spec.request: not base64");
	CHECK(q.name == NULL);
	json_object_put(o);
	o = json("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"request\":\"\",\"groups\":[\"a\",1]}}");
	CHECK(csrctl_request_decode(o, &q, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "spec.groups[1]: expected a string");
	json_object_put(o);
	o = json("{\"metadata\":{},\"spec\":{}}");
	CHECK(csrctl_request_decode(o, &q, &e) == ERR_INVALID);
	json_object_put(o);
}

TEST_MAIN()
