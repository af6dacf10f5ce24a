/* test_servicectl.c - the service controller's pure parts, table driven:
 * which Services it serves (with --load-balancer-class and -only), when one
 * needs cleanup, upstream's needsUpdate field by field (and the changes it
 * ignores), the stable node set predicates and shouldSyncUpdatedNode, the
 * backend set comparison, the status comparison, the check of a provider's
 * answer, and the patches. */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "controllers/servicectl.h"
#include "harness.h"
#include "base/jsonx.h"

/* decode builds a cached object from JSON text with the cache's decoder. */
static const struct store_obj *
decode(const char *text, reflector_decode_fn fn)
{
	struct errbuf e = { "" };
	const struct store_obj *obj = NULL;
	json_object *o = NULL;

	if (jsonx_parse(text, strlen(text), 64, &o, &e) < 0 || fn(o, &obj, &e) < 0) {
		fprintf(stderr, "  bad fixture: %s\n%s\n", e.msg, text);
		abort();
	}
	json_object_put(o);
	return obj;
}

static const struct kube_service *
svc(const char *text)
{
	return kube_service_of(decode(text, kube_service_decode_obj));
}

static const struct kube_node *
node(const char *text)
{
	return kube_node_of(decode(text, kube_node_decode_obj));
}

static void
put_svc(const struct kube_service *s)
{
	store_obj_unref(&s->obj);
}

static void
put_node(const struct kube_node *n)
{
	store_obj_unref(&n->obj);
}

static const char *const served_names[] = { "example.com/lb", "other.io/x" };
static const struct serviceview_classes plain = { NULL, 0, 0 };
static const struct serviceview_classes classes = { served_names, 2, 0 };
static const struct serviceview_classes classes_only = { served_names, 2, 1 };

#define META "\"metadata\":{\"namespace\":\"ns\",\"name\":\"web\",\"uid\":\"u1\"," \
	"\"resourceVersion\":\"7\""

TEST(wants_by_type_and_class)
{
	static const struct {
		const char *spec;
		int plain, classes, only;
	} rows[] = {
		{ "{\"type\":\"LoadBalancer\"}", 1, 1, 0 },
		{ "{\"type\":\"LoadBalancer\",\"loadBalancerClass\":\"example.com/lb\"}", 0, 1, 1 },
		{ "{\"type\":\"LoadBalancer\",\"loadBalancerClass\":\"other.io/x\"}", 0, 1, 1 },
		{ "{\"type\":\"LoadBalancer\",\"loadBalancerClass\":\"foreign.io/lb\"}", 0, 0, 0 },
		{ "{\"type\":\"ClusterIP\"}", 0, 0, 0 },
		{ "{\"type\":\"NodePort\",\"loadBalancerClass\":\"example.com/lb\"}", 0, 0, 0 },
		{ "{}", 0, 0, 0 },
	};
	char buf[512];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(buf, sizeof(buf), "{" META "},\"spec\":%s}", rows[i].spec);
		const struct kube_service *s = svc(buf);
		int a = serviceview_wants(&plain, s), b = serviceview_wants(&classes, s);
		int c = serviceview_wants(&classes_only, s);
		put_svc(s);
		if (a != rows[i].plain || b != rows[i].classes || c != rows[i].only)
			fprintf(stderr, "  row %zu: %s: %d %d %d\n", i, rows[i].spec, a, b, c);
		CHECK(a == rows[i].plain && b == rows[i].classes && c == rows[i].only);
	}
}

TEST(needs_cleanup_only_with_the_finalizer)
{
	static const struct {
		const char *meta, *spec;
		int want;
	} rows[] = {
		/* ours, being deleted */
		{ ",\"finalizers\":[\"service.kubernetes.io/load-balancer-cleanup\"],"
		  "\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"", "{\"type\":\"LoadBalancer\"}", 1 },
		/* ours, no longer a LoadBalancer */
		{ ",\"finalizers\":[\"a.io/x\",\"service.kubernetes.io/load-balancer-cleanup\"]",
		  "{\"type\":\"ClusterIP\"}", 1 },
		/* ours, a class no longer served */
		{ ",\"finalizers\":[\"service.kubernetes.io/load-balancer-cleanup\"]",
		  "{\"type\":\"LoadBalancer\",\"loadBalancerClass\":\"gone.io/lb\"}", 1 },
		/* ours, still wanted */
		{ ",\"finalizers\":[\"service.kubernetes.io/load-balancer-cleanup\"]",
		  "{\"type\":\"LoadBalancer\"}", 0 },
		/* not ours */
		{ ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"", "{\"type\":\"LoadBalancer\"}", 0 },
		{ ",\"finalizers\":[\"a.io/x\"]", "{\"type\":\"ClusterIP\"}", 0 },
	};
	char buf[512];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(buf, sizeof(buf), "{" META "%s},\"spec\":%s}", rows[i].meta, rows[i].spec);
		const struct kube_service *s = svc(buf);
		int got = serviceview_needs_cleanup(&plain, s);
		put_svc(s);
		CHECK(got == rows[i].want);
	}
}

/* The base Service of the needsUpdate table, and one change per row. */
#define BASE_META "\"namespace\":\"ns\",\"name\":\"web\",\"uid\":\"u1\",\"resourceVersion\":\"7\""
#define BASE_ANN "\"annotations\":{\"a.io/x\":\"1\",\"b.io/y\":\"2\"}"
#define BASE_PORTS "\"ports\":[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":80," \
	"\"nodePort\":30080,\"targetPort\":8080},{\"name\":\"dns\",\"protocol\":\"UDP\"," \
	"\"port\":53,\"nodePort\":30053,\"targetPort\":\"dns\",\"appProtocol\":\"dns\"}]"
#define BASE_SPEC "\"type\":\"LoadBalancer\",\"externalTrafficPolicy\":\"Cluster\"," \
	"\"sessionAffinity\":\"None\",\"ipFamilies\":[\"IPv4\"],\"loadBalancerIP\":\"\"," \
	"\"externalIPs\":[\"192.0.2.1\",\"192.0.2.2\"]," \
	"\"loadBalancerSourceRanges\":[\"10.0.0.0/8\"],\"selector\":{\"app\":\"web\"}"

static const struct kube_service *
variant(const char *meta_extra, const char *ann, const char *ports, const char *spec_extra,
    const char *status)
{
	char buf[4096];

	snprintf(buf, sizeof(buf), "{\"metadata\":{" BASE_META "%s,%s},\"spec\":{%s,%s%s},"
	    "\"status\":%s}", meta_extra, ann, BASE_SPEC, ports, spec_extra,
	    status ? status : "{}");
	return svc(buf);
}

TEST(needs_update_is_upstreams_field_list)
{
	static const struct {
		const char *meta, *ann, *ports, *spec, *status;
		const char *want;
	} rows[] = {
		{ "", BASE_ANN, BASE_PORTS, "", NULL, NULL },
		/* ignored: labels, finalizers, status, the selector, the resourceVersion */
		{ ",\"labels\":{\"x\":\"y\"},\"finalizers\":[\"service.kubernetes.io/"
		  "load-balancer-cleanup\"]", BASE_ANN, BASE_PORTS, ",\"selector\":{\"app\":\"api\"}",
		  "{\"loadBalancer\":{\"ingress\":[{\"ip\":\"192.0.2.9\"}]}}", NULL },
		/* annotations compare as a map */
		{ "", "\"annotations\":{\"b.io/y\":\"2\",\"a.io/x\":\"1\"}", BASE_PORTS, "", NULL, NULL },
		/* a second ipFamily counts; upstream compares the count only */
		{ "", BASE_ANN, BASE_PORTS, ",\"ipFamilies\":[\"IPv6\"]", NULL, NULL },
		{ "", BASE_ANN, BASE_PORTS, ",\"ipFamilies\":[\"IPv4\",\"IPv6\"]", NULL, "ipFamilies" },
		{ "", BASE_ANN, BASE_PORTS, ",\"type\":\"ClusterIP\"", NULL, "type" },
		{ "", BASE_ANN, BASE_PORTS, ",\"loadBalancerClass\":\"foreign.io/lb\"", NULL, "type" },
		{ "", BASE_ANN, BASE_PORTS, ",\"loadBalancerSourceRanges\":[\"10.0.0.0/16\"]", NULL,
		  "loadBalancerSourceRanges" },
		{ "", BASE_ANN, BASE_PORTS, ",\"loadBalancerSourceRanges\":[]", NULL,
		  "loadBalancerSourceRanges" },
		{ "", BASE_ANN, "\"ports\":[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":81,"
		  "\"nodePort\":30080,\"targetPort\":8080}]", "", NULL, "ports" },
		{ "", BASE_ANN, "\"ports\":[{\"name\":\"dns\",\"protocol\":\"UDP\",\"port\":53,"
		  "\"nodePort\":30053,\"targetPort\":\"dns\",\"appProtocol\":\"dns\"},{\"name\":"
		  "\"http\",\"protocol\":\"TCP\",\"port\":80,\"nodePort\":30080,\"targetPort\":8080}]",
		  "", NULL, "ports" },
		{ "", BASE_ANN, "\"ports\":[{\"name\":\"web\",\"protocol\":\"TCP\",\"port\":80,"
		  "\"nodePort\":30080,\"targetPort\":8080},{\"name\":\"dns\",\"protocol\":\"UDP\","
		  "\"port\":53,\"nodePort\":30053,\"targetPort\":\"dns\",\"appProtocol\":\"dns\"}]",
		  "", NULL, "ports" },
		{ "", BASE_ANN, "\"ports\":[{\"name\":\"http\",\"protocol\":\"UDP\",\"port\":80,"
		  "\"nodePort\":30080,\"targetPort\":8080},{\"name\":\"dns\",\"protocol\":\"UDP\","
		  "\"port\":53,\"nodePort\":30053,\"targetPort\":\"dns\",\"appProtocol\":\"dns\"}]",
		  "", NULL, "ports" },
		{ "", BASE_ANN, "\"ports\":[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":80,"
		  "\"nodePort\":30081,\"targetPort\":8080},{\"name\":\"dns\",\"protocol\":\"UDP\","
		  "\"port\":53,\"nodePort\":30053,\"targetPort\":\"dns\",\"appProtocol\":\"dns\"}]",
		  "", NULL, "ports" },
		{ "", BASE_ANN, "\"ports\":[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":80,"
		  "\"nodePort\":30080,\"targetPort\":\"http\"},{\"name\":\"dns\",\"protocol\":\"UDP\","
		  "\"port\":53,\"nodePort\":30053,\"targetPort\":\"dns\",\"appProtocol\":\"dns\"}]",
		  "", NULL, "ports" },
		{ "", BASE_ANN, "\"ports\":[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":80,"
		  "\"nodePort\":30080,\"targetPort\":8080},{\"name\":\"dns\",\"protocol\":\"UDP\","
		  "\"port\":53,\"nodePort\":30053,\"targetPort\":\"dns\"}]", "", NULL, "ports" },
		{ "", BASE_ANN, BASE_PORTS, ",\"sessionAffinity\":\"ClientIP\"", NULL,
		  "sessionAffinity" },
		{ "", BASE_ANN, BASE_PORTS, ",\"sessionAffinityConfig\":{\"clientIP\":"
		  "{\"timeoutSeconds\":60}}", NULL, "sessionAffinityConfig" },
		{ "", BASE_ANN, BASE_PORTS, ",\"loadBalancerIP\":\"192.0.2.10\"", NULL,
		  "loadBalancerIP" },
		{ "", BASE_ANN, BASE_PORTS, ",\"externalIPs\":[\"192.0.2.2\",\"192.0.2.1\"]", NULL,
		  "externalIPs" },
		{ "", BASE_ANN, BASE_PORTS, ",\"externalIPs\":[\"192.0.2.1\"]", NULL, "externalIPs" },
		{ "", "\"annotations\":{\"a.io/x\":\"1\",\"b.io/y\":\"3\"}", BASE_PORTS, "", NULL,
		  "annotations" },
		{ "", "\"annotations\":{\"a.io/x\":\"1\"}", BASE_PORTS, "", NULL, "annotations" },
		{ ",\"uid\":\"u2\"", BASE_ANN, BASE_PORTS, "", NULL, "uid" },
		{ "", BASE_ANN, BASE_PORTS, ",\"externalTrafficPolicy\":\"Local\"", NULL,
		  "externalTrafficPolicy" },
		{ "", BASE_ANN, BASE_PORTS, ",\"healthCheckNodePort\":31000", NULL,
		  "healthCheckNodePort" },
	};
	const struct kube_service *base = variant("", BASE_ANN, BASE_PORTS, "", NULL);

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		/* a later duplicate key wins in json-c, like a real change */
		const struct kube_service *s = variant(rows[i].meta, rows[i].ann, rows[i].ports,
		    rows[i].spec, rows[i].status);
		const char *got = serviceview_needs_update(&plain, base, s);
		const char *back = serviceview_needs_update(&plain, s, base);
		put_svc(s);
		if (!(got == NULL ? rows[i].want == NULL :
		    rows[i].want != NULL && strcmp(got, rows[i].want) == 0))
			fprintf(stderr, "  row %zu: got %s, want %s\n", i, got ? got : "NULL",
			    rows[i].want ? rows[i].want : "NULL");
		CHECK_STR(got, rows[i].want);
		CHECK_STR(back, rows[i].want);
	}
	put_svc(base);
}

TEST(needs_update_ignores_services_it_does_not_serve)
{
	const struct kube_service *a = svc("{" META "},\"spec\":{\"type\":\"ClusterIP\","
	    "\"ports\":[{\"port\":80}]}}");
	const struct kube_service *b = svc("{" META "},\"spec\":{\"type\":\"NodePort\","
	    "\"ports\":[{\"port\":81}]}}");
	const struct kube_service *f1 = svc("{" META "},\"spec\":{\"type\":\"LoadBalancer\","
	    "\"loadBalancerClass\":\"foreign.io/lb\",\"ports\":[{\"port\":80}]}}");
	const struct kube_service *f2 = svc("{" META "},\"spec\":{\"type\":\"LoadBalancer\","
	    "\"loadBalancerClass\":\"foreign.io/lb\",\"ports\":[{\"port\":81}]}}");
	const struct kube_service *c1 = svc("{" META "},\"spec\":{\"type\":\"LoadBalancer\","
	    "\"loadBalancerClass\":\"example.com/lb\",\"ports\":[{\"port\":80}]}}");
	const struct kube_service *c2 = svc("{" META "},\"spec\":{\"type\":\"LoadBalancer\","
	    "\"loadBalancerClass\":\"example.com/lb\",\"ports\":[{\"port\":81}]}}");

	CHECK(serviceview_needs_update(&plain, a, b) == NULL);
	CHECK(serviceview_needs_update(&classes, f1, f2) == NULL);
	/* a served class is compared like a class-less Service upstream */
	CHECK(serviceview_needs_update(&plain, c1, c2) == NULL);
	CHECK_STR(serviceview_needs_update(&classes, c1, c2), "ports");
	put_svc(a);
	put_svc(b);
	put_svc(f1);
	put_svc(f2);
	put_svc(c1);
	put_svc(c2);
}

#define NODE(extra) "{\"metadata\":{\"name\":\"n1\"" extra "}}"

TEST(stable_node_set_predicates)
{
	static const struct {
		const char *json;
		int included;
	} rows[] = {
		{ "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"providerID\":\"p://1\"}}", 1 },
		/* readiness is not a filter; no providerID is fine */
		{ "{\"metadata\":{\"name\":\"n1\"},\"status\":{\"conditions\":[{\"type\":\"Ready\","
		  "\"status\":\"False\"}]}}", 1 },
		{ "{\"metadata\":{\"name\":\"n1\",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"}}",
		  0 },
		{ "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"taints\":[{\"key\":"
		  "\"ToBeDeletedByClusterAutoscaler\",\"value\":\"1\",\"effect\":\"NoSchedule\"}]}}", 0 },
		{ "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"taints\":[{\"key\":"
		  "\"node.kubernetes.io/unschedulable\",\"effect\":\"NoSchedule\"}],"
		  "\"unschedulable\":true}}", 1 },
	};
	static const struct {
		const char *value;
		int included;
	} labels[] = {
		{ "false", 1 }, { "False", 1 }, { "FALSE", 1 }, { "f", 1 }, { "F", 1 }, { "0", 1 },
		{ "true", 0 }, { "True", 0 }, { "1", 0 }, { "t", 0 }, { "", 0 }, { "yes", 0 },
		{ "no", 0 }, { "fAlse", 0 },
	};
	char buf[512];
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct kube_node *n = node(rows[i].json);
		int got = serviceview_node_included(n);
		put_node(n);
		CHECK(got == rows[i].included);
	}
	for (i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
		snprintf(buf, sizeof(buf), NODE(",\"labels\":{\"" SERVICEVIEW_LABEL_EXCLUDE
		    "\":\"%s\"}"), labels[i].value);
		const struct kube_node *n = node(buf);
		int got = serviceview_node_included(n), ex = serviceview_node_label_excludes(n);
		put_node(n);
		if (got != labels[i].included)
			fprintf(stderr, "  label value \"%s\": included %d\n", labels[i].value, got);
		CHECK(got == labels[i].included && ex == !labels[i].included);
	}
}

TEST(node_updates_that_matter_are_upstreams)
{
	static const struct {
		const char *old, *new_;
		int matters, labels;
	} rows[] = {
		{ NODE(""), NODE(",\"labels\":{\"" SERVICEVIEW_LABEL_EXCLUDE "\":\"\"}"), 1, 1 },
		{ NODE(",\"labels\":{\"" SERVICEVIEW_LABEL_EXCLUDE "\":\"true\"}"),
		  NODE(",\"labels\":{\"" SERVICEVIEW_LABEL_EXCLUDE "\":\"false\"}"), 1, 1 },
		/* both exclude: no change of the verdict */
		{ NODE(",\"labels\":{\"" SERVICEVIEW_LABEL_EXCLUDE "\":\"true\"}"),
		  NODE(",\"labels\":{\"" SERVICEVIEW_LABEL_EXCLUDE "\":\"yes\"}"), 0, 1 },
		{ NODE(",\"labels\":{\"a\":\"1\"}"), NODE(",\"labels\":{\"a\":\"2\"}"), 0, 1 },
		{ NODE(",\"labels\":{\"a\":\"1\",\"b\":\"2\"}"),
		  NODE(",\"labels\":{\"b\":\"2\",\"a\":\"1\"}"), 0, 0 },
		{ "{\"metadata\":{\"name\":\"n1\"}}",
		  "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"providerID\":\"p://1\"}}", 1, 0 },
		/* readiness, taints and deletion are not looked at (upstream) */
		{ "{\"metadata\":{\"name\":\"n1\"}}", "{\"metadata\":{\"name\":\"n1\"},\"status\":"
		  "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}", 0, 0 },
		{ "{\"metadata\":{\"name\":\"n1\"}}", "{\"metadata\":{\"name\":\"n1\"},\"spec\":"
		  "{\"taints\":[{\"key\":\"ToBeDeletedByClusterAutoscaler\",\"effect\":"
		  "\"NoSchedule\"}]}}", 0, 0 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct kube_node *a = node(rows[i].old), *b = node(rows[i].new_);
		int m = serviceview_node_update_matters(a, b), l = serviceview_node_labels_changed(a, b);
		int m2 = serviceview_node_update_matters(b, a);
		put_node(a);
		put_node(b);
		CHECK(m == rows[i].matters && m2 == rows[i].matters && l == rows[i].labels);
	}
}

TEST(backend_sets_compare_by_name_and_provider_id)
{
	const struct kube_node *a = node("{\"metadata\":{\"name\":\"a\",\"labels\":{\"pool\":"
	    "\"gpu\"}},\"spec\":{\"providerID\":\"p://a\"}}");
	const struct kube_node *b = node("{\"metadata\":{\"name\":\"b\"},\"spec\":"
	    "{\"providerID\":\"p://b\"}}");
	const struct kube_node *b2 = node("{\"metadata\":{\"name\":\"b\"},\"spec\":"
	    "{\"providerID\":\"p://b2\"}}");
	const struct kube_node *bready = node("{\"metadata\":{\"name\":\"b\",\"labels\":"
	    "{\"x\":\"y\"}},\"spec\":{\"providerID\":\"p://b\"},\"status\":{\"conditions\":"
	    "[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
	const struct kube_node *cx = node("{\"metadata\":{\"name\":\"c\",\"labels\":{\""
	    SERVICEVIEW_LABEL_EXCLUDE "\":\"true\"}}}");
	const struct kube_node *ab[] = { a, b }, *ba[] = { b, a }, *ab2[] = { a, b2 };
	const struct kube_node *abr[] = { a, bready }, *abc[] = { a, b, cx }, *only_a[] = { a };
	struct labelsel sel;
	struct errbuf e;

	CHECK(serviceview_nodes_digest(ab, 2, NULL) == serviceview_nodes_digest(ba, 2, NULL));
	CHECK(serviceview_nodes_digest(ab, 2, NULL) != serviceview_nodes_digest(ab2, 2, NULL));
	CHECK(serviceview_nodes_digest(ab, 2, NULL) != serviceview_nodes_digest(only_a, 1,
	    NULL));
	CHECK(serviceview_nodes_digest(only_a, 1, NULL) != serviceview_nodes_digest(NULL, 0,
	    NULL));
	/* other fields of a Node do not count; an excluded Node is not a backend */
	CHECK(serviceview_nodes_digest(ab, 2, NULL) == serviceview_nodes_digest(abr, 2, NULL));
	CHECK(serviceview_nodes_digest(ab, 2, NULL) == serviceview_nodes_digest(abc, 3, NULL));
	/* with a node selector: only the matching Nodes */
	CHECK(labelsel_parse("pool=gpu", &sel, &e) == 0);
	CHECK(serviceview_nodes_digest(ab, 2, &sel) == serviceview_nodes_digest(only_a, 1,
	    NULL));
	CHECK(serviceview_node_matches(&sel, a) && !serviceview_node_matches(&sel, b));
	labelsel_free(&sel);
	put_node(a);
	put_node(b);
	put_node(b2);
	put_node(bready);
	put_node(cx);
}

static struct cloud_lb_status
status1(const char *ip, const char *host, const char *mode)
{
	struct cloud_lb_status st;

	memset(&st, 0, sizeof(st));
	st.n_ingress = 1;
	snprintf(st.ingress[0].ip, sizeof(st.ingress[0].ip), "%s", ip);
	snprintf(st.ingress[0].hostname, sizeof(st.ingress[0].hostname), "%s", host);
	snprintf(st.ingress[0].ip_mode, sizeof(st.ingress[0].ip_mode), "%s", mode);
	return st;
}

TEST(status_compares_in_order_with_vip_by_default)
{
	const struct kube_service *s = svc("{" META "},\"spec\":{\"type\":\"LoadBalancer\"},"
	    "\"status\":{\"loadBalancer\":{\"ingress\":[{\"ip\":\"192.0.2.1\",\"ipMode\":\"VIP\"}]}}}");
	const struct kube_service *none = svc("{" META "},\"spec\":{\"type\":\"LoadBalancer\"}}");
	const struct kube_service *host = svc("{" META "},\"spec\":{\"type\":\"LoadBalancer\"},"
	    "\"status\":{\"loadBalancer\":{\"ingress\":[{\"hostname\":\"lb.example.com\"}]}}}");
	struct cloud_lb_status st = status1("192.0.2.1", "", ""), empty;

	memset(&empty, 0, sizeof(empty));
	CHECK(serviceview_status_equal(s, &st));
	st = status1("192.0.2.1", "", "VIP");
	CHECK(serviceview_status_equal(s, &st));
	st = status1("192.0.2.1", "", "Proxy");
	CHECK(!serviceview_status_equal(s, &st));
	st = status1("192.0.2.2", "", "");
	CHECK(!serviceview_status_equal(s, &st));
	CHECK(!serviceview_status_equal(s, &empty));
	CHECK(serviceview_status_equal(none, &empty));
	st = status1("", "lb.example.com", "");
	CHECK(serviceview_status_equal(host, &st));
	put_svc(s);
	put_svc(none);
	put_svc(host);
}

TEST(provider_answers_are_checked_before_any_write)
{
	static const struct {
		const char *ip, *host, *mode, *err;
	} rows[] = {
		{ "192.0.2.1", "", "", NULL },
		{ "2001:db8::1", "", "Proxy", NULL },
		{ "", "lb-1.example.com", "", NULL },
		{ "192.0.2.300", "", "", "ingress[0].ip \"192.0.2.300\": not an IP" },
		{ "", "192.0.2.1", "", "ingress[0].hostname \"192.0.2.1\": not a DNS name" },
		{ "", "Bad_Name.example", "", "not a DNS name" },
		{ "", "", "", "expected an ip or a hostname, not neither" },
		{ "192.0.2.1", "lb.example.com", "", "not both" },
		{ "192.0.2.1", "", "Direct", "ipMode \"Direct\"" },
		{ "", "lb.example.com", "VIP", "ipMode \"VIP\"" },
	};
	const struct kube_service *s = svc("{" META "},\"spec\":{\"type\":\"LoadBalancer\"}}");
	struct cloud_lb_result *r = calloc(1, sizeof(*r));
	struct errbuf e;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		memset(r, 0, sizeof(*r));
		r->status = status1(rows[i].ip, rows[i].host, rows[i].mode);
		e.msg[0] = '\0';
		int got = servicectl_check_result(s, r, &e);
		if (rows[i].err == NULL) {
			CHECK(got == 0);
		} else {
			CHECK(got == ERR_INVALID);
			CHECK_CONTAINS(e.msg, "service ns/web");
			CHECK_CONTAINS(e.msg, rows[i].err);
		}
	}
	memset(r, 0, sizeof(*r));
	r->status.n_ingress = CLOUD_LB_INGRESS_MAX + 1;
	CHECK(servicectl_check_result(s, r, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "ingress entries");
	memset(r, 0, sizeof(*r));
	r->n_annotations = 1;
	snprintf(r->annotations[0].key, sizeof(r->annotations[0].key), "not a key!");
	CHECK(servicectl_check_result(s, r, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "annotation [0] \"not a key!\": not a qualified name");
	memset(r->annotations[0].key, 'k', sizeof(r->annotations[0].key));
	CHECK(servicectl_check_result(s, r, &e) == ERR_INVALID);
	free(r);
	put_svc(s);
}

static int
json_is(json_object *o, const char *want)
{
	const char *got = json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	int ok = strcmp(got, want) == 0;

	if (!ok)
		fprintf(stderr, "  got  %s\n  want %s\n", got, want);
	return ok;
}

TEST(patches)
{
	const struct kube_service *s = svc("{" META ",\"finalizers\":[\"a.io/keep\"],"
	    "\"annotations\":{\"kube-vip.io/loadbalancerIPs\":\"192.0.2.1\",\"x.io/y\":\"z\"}},"
	    "\"spec\":{\"type\":\"LoadBalancer\"}}");
	const struct kube_service *mine = svc("{" META ",\"finalizers\":[\""
	    SERVICEVIEW_FINALIZER "\"]},\"spec\":{\"type\":\"LoadBalancer\"}}");
	struct cloud_lb_result *r = calloc(1, sizeof(*r));
	struct cloud_lb_status st;
	json_object *p;

	memset(&st, 0, sizeof(st));
	p = serviceview_status_patch(&st);
	CHECK(json_is(p, "{\"status\":{\"loadBalancer\":{\"ingress\":null}}}"));
	json_object_put(p);
	st = status1("192.0.2.1", "", "");
	st.n_ingress = 2;
	snprintf(st.ingress[1].hostname, sizeof(st.ingress[1].hostname), "lb.example.com");
	p = serviceview_status_patch(&st);
	CHECK(json_is(p, "{\"status\":{\"loadBalancer\":{\"ingress\":[{\"ip\":\"192.0.2.1\","
	    "\"ipMode\":\"VIP\"},{\"hostname\":\"lb.example.com\"}]}}}"));
	json_object_put(p);

	/* the finalizer joins the others; nothing to do is NULL */
	p = serviceview_meta_patch(s, 1, NULL);
	CHECK(json_is(p, "{\"metadata\":{\"finalizers\":[\"a.io/keep\",\""
	    SERVICEVIEW_FINALIZER "\"]}}"));
	json_object_put(p);
	CHECK(serviceview_meta_patch(s, -1, NULL) == NULL);
	CHECK(serviceview_meta_patch(mine, 1, NULL) == NULL);
	p = serviceview_meta_patch(mine, -1, NULL);
	CHECK(json_is(p, "{\"metadata\":{\"finalizers\":null}}"));
	json_object_put(p);

	/* annotations: only those that differ */
	r->n_annotations = 3;
	snprintf(r->annotations[0].key, sizeof(r->annotations[0].key), "kube-vip.io/loadbalancerIPs");
	snprintf(r->annotations[0].value, sizeof(r->annotations[0].value), "192.0.2.1");
	snprintf(r->annotations[1].key, sizeof(r->annotations[1].key), "x.io/y");
	r->annotations[1].remove = 1;
	snprintf(r->annotations[2].key, sizeof(r->annotations[2].key), "gone.io/g");
	r->annotations[2].remove = 1;
	p = serviceview_meta_patch(s, 0, r);
	CHECK(json_is(p, "{\"metadata\":{\"annotations\":{\"x.io/y\":null}}}"));
	json_object_put(p);
	snprintf(r->annotations[0].value, sizeof(r->annotations[0].value), "192.0.2.2");
	r->annotations[1].remove = 0;
	snprintf(r->annotations[1].value, sizeof(r->annotations[1].value), "z");
	p = serviceview_meta_patch(s, 0, r);
	CHECK(json_is(p, "{\"metadata\":{\"annotations\":{\"kube-vip.io/loadbalancerIPs\":"
	    "\"192.0.2.2\"}}}"));
	json_object_put(p);
	snprintf(r->annotations[0].value, sizeof(r->annotations[0].value), "192.0.2.1");
	CHECK(serviceview_meta_patch(s, 0, r) == NULL);
	/* cleanup: the finalizer and the provider's annotations in one patch */
	put_svc(mine);
	mine = svc("{" META ",\"finalizers\":[\"" SERVICEVIEW_FINALIZER "\"],\"annotations\":"
	    "{\"kube-vip.io/loadbalancerIPs\":\"192.0.2.1\"}},\"spec\":{\"type\":\"ClusterIP\"}}");
	r->n_annotations = 1;
	r->annotations[0].remove = 1;
	p = serviceview_meta_patch(mine, -1, r);
	CHECK(json_is(p, "{\"metadata\":{\"finalizers\":null,\"annotations\":"
	    "{\"kube-vip.io/loadbalancerIPs\":null}}}"));
	json_object_put(p);
	free(r);
	put_svc(s);
	put_svc(mine);
}

TEST(classes_are_checked)
{
	struct errbuf e;

	CHECK(servicectl_classes_check(NULL, 0, &e) == 0);
	CHECK(servicectl_classes_check("example.com/lb,other.io/x", 1, &e) == 0);
	CHECK(servicectl_classes_check("example.com/lb,,", 0, &e) == 0);
	CHECK(servicectl_classes_check("example.com/lb,bad class", 0, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "--load-balancer-class \"bad class\": not a qualified name");
	CHECK(servicectl_classes_check("", 1, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "--load-balancer-class-only needs at least one");
	CHECK(servicectl_classes_check("a/1,a/2,a/3,a/4,a/5,a/6,a/7,a/8,a/9,a/10,a/11,a/12,"
	    "a/13,a/14,a/15,a/16,a/17", 0, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "at most 16 classes");
}

TEST_MAIN()
