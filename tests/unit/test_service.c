/* test_service.c - the Service decoder: a LoadBalancer Service with every
 * kept field, a plain ClusterIP one, absent and null fields, IntOrString
 * target ports, and broken input named by service and field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kube/service.h"
#include "kube/watch.h"

#define LB_SERVICE \
	"{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"annotations\":{" \
	"\"load-balancer.hetzner.cloud/location\":\"fsn1\"},\"creationTimestamp\":" \
	"\"2026-11-21T08:00:00Z\",\"finalizers\":[\"service.kubernetes.io/load-balancer-cleanup\"]," \
	"\"managedFields\":[{\"manager\":\"kubectl\",\"operation\":\"Update\"}]," \
	"\"name\":\"web\",\"namespace\":\"shop\",\"resourceVersion\":\"2001\"," \
	"\"uid\":\"5f4dcc3b-5aa7-4d3b-8c8e-2f1b0c9d8e7f\"},\"spec\":{\"allocateLoadBalancerNodePorts\":true," \
	"\"clusterIP\":\"10.96.12.34\",\"clusterIPs\":[\"10.96.12.34\",\"fd00::1234\"]," \
	"\"externalIPs\":[\"192.0.2.10\"],\"externalTrafficPolicy\":\"Local\"," \
	"\"healthCheckNodePort\":32000,\"internalTrafficPolicy\":\"Cluster\"," \
	"\"ipFamilies\":[\"IPv4\",\"IPv6\"],\"ipFamilyPolicy\":\"PreferDualStack\"," \
	"\"loadBalancerClass\":\"bootccm.io/lb\",\"loadBalancerIP\":\"203.0.113.7\"," \
	"\"loadBalancerSourceRanges\":[\"10.0.0.0/8\",\"192.168.0.0/16\"]," \
	"\"ports\":[{\"appProtocol\":\"http\",\"name\":\"http\",\"nodePort\":30080,\"port\":80," \
	"\"protocol\":\"TCP\",\"targetPort\":8080},{\"name\":\"https\",\"nodePort\":30443," \
	"\"port\":443,\"protocol\":\"TCP\",\"targetPort\":\"https\"}]," \
	"\"selector\":{\"app\":\"web\"},\"sessionAffinity\":\"ClientIP\"," \
	"\"sessionAffinityConfig\":{\"clientIP\":{\"timeoutSeconds\":10800}},\"type\":\"LoadBalancer\"}," \
	"\"status\":{\"loadBalancer\":{\"ingress\":[{\"ip\":\"203.0.113.7\",\"ipMode\":\"VIP\"}," \
	"{\"hostname\":\"lb.example.com\"}]}}}"

static int
t_decode(const char *text, const struct kube_service **ret, struct errbuf *e)
{
	json_object *j;
	int r;

	if (kube_watch_parse(text, strlen(text), &j, e) < 0)
		abort();
	r = kube_service_decode(j, ret, e);
	json_object_put(j);
	return r;
}

TEST(load_balancer)
{
	const struct kube_service *s;
	struct errbuf e;

	CHECK(t_decode(LB_SERVICE, &s, &e) == 0);
	CHECK_STR(s->obj.key, "shop/web");
	CHECK_STR(s->namespace, "shop");
	CHECK_STR(s->name, "web");
	CHECK_STR(s->obj.uid, "5f4dcc3b-5aa7-4d3b-8c8e-2f1b0c9d8e7f");
	CHECK_STR(s->obj.resource_version, "2001");
	CHECK_STR(kube_service_annotation(s, "load-balancer.hetzner.cloud/location"), "fsn1");
	CHECK(kube_service_has_finalizer(s, "service.kubernetes.io/load-balancer-cleanup"));
	CHECK(!kube_service_has_finalizer(s, "x"));
	CHECK(s->deletion_timestamp == 0);
	CHECK_STR(s->type, "LoadBalancer");
	CHECK_STR(s->load_balancer_class, "bootccm.io/lb");
	CHECK(s->nports == 2);
	CHECK_STR(s->ports[0].name, "http");
	CHECK_STR(s->ports[0].protocol, "TCP");
	CHECK(s->ports[0].port == 80 && s->ports[0].node_port == 30080);
	CHECK(s->ports[0].target_port == 8080 && s->ports[0].target_port_name == NULL);
	CHECK_STR(s->ports[0].app_protocol, "http");
	CHECK(s->ports[1].target_port == 0);
	CHECK_STR(s->ports[1].target_port_name, "https");
	CHECK(s->ports[1].app_protocol == NULL);
	CHECK_STR(s->external_traffic_policy, "Local");
	CHECK(s->health_check_node_port == 32000);
	CHECK_STR(s->load_balancer_ip, "203.0.113.7");
	CHECK(s->nload_balancer_source_ranges == 2);
	CHECK_STR(s->load_balancer_source_ranges[1], "192.168.0.0/16");
	CHECK(s->nexternal_ips == 1);
	CHECK_STR(s->external_ips[0], "192.0.2.10");
	CHECK_STR(s->session_affinity, "ClientIP");
	CHECK(s->nip_families == 2);
	CHECK_STR(s->ip_families[0], "IPv4");
	CHECK_STR(s->ip_families[1], "IPv6");
	CHECK_STR(s->ip_family_policy, "PreferDualStack");
	CHECK(s->nselector == 1);
	CHECK_STR(s->selector[0].key, "app");
	CHECK_STR(s->selector[0].value, "web");
	CHECK(s->creation_timestamp == 1795248000);
	CHECK(s->session_affinity_timeout == 10800);
	CHECK(s->ningress == 2);
	CHECK_STR(s->ingress[0].ip, "203.0.113.7");
	CHECK_STR(s->ingress[0].ip_mode, "VIP");
	CHECK(s->ingress[1].ip == NULL);
	CHECK_STR(s->ingress[1].hostname, "lb.example.com");
	CHECK(s->obj.size < strlen(LB_SERVICE));
	store_obj_unref(&s->obj);
}

TEST(cluster_ip_and_nulls)
{
	const struct kube_service *s;
	struct errbuf e;

	CHECK(t_decode("{\"metadata\":{\"name\":\"kubernetes\",\"namespace\":\"default\","
	    "\"deletionTimestamp\":\"2026-11-21T09:00:00Z\",\"finalizers\":null},"
	    "\"spec\":{\"type\":\"ClusterIP\",\"loadBalancerClass\":null,"
	    "\"ports\":[{\"name\":\"https\",\"port\":443,\"protocol\":\"TCP\","
	    "\"targetPort\":6443}]},\"status\":{\"loadBalancer\":{}}}", &s, &e) == 0);
	CHECK_STR(s->obj.key, "default/kubernetes");
	CHECK(s->deletion_timestamp == 1795251600);
	CHECK(s->nfinalizers == 0);
	CHECK(s->load_balancer_class == NULL);
	CHECK(s->nports == 1 && s->ports[0].target_port == 6443 && s->ports[0].node_port == 0);
	CHECK(s->ningress == 0 && s->ingress == NULL);
	CHECK(s->external_traffic_policy == NULL && s->nip_families == 0);
	CHECK(s->ip_family_policy == NULL && s->nselector == 0 && s->creation_timestamp == 0);
	store_obj_unref(&s->obj);

	CHECK(t_decode("{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"}}", &s, &e) == 0);
	CHECK(s->type == NULL && s->nports == 0);
	store_obj_unref(&s->obj);
}

/* An annotation's value may hold a NUL (JSON and Go strings do): the
 * Service decodes, the annotation is left out of the map and named in
 * nul_annotations, so the controller still serves and cleans it up, and a
 * provider that reads that key refuses it naming the annotation. Before, the
 * whole Service was "expected a string" and invisible. */
TEST(nul_in_an_annotation)
{
	const struct kube_service *s;
	struct errbuf e = { "" };

	CHECK(t_decode("{\"metadata\":{\"name\":\"web\",\"namespace\":\"shop\","
	    "\"annotations\":{\"example.com/note\":\"a\\u0000b\",\"bootccm.io/pool\":\"blue\","
	    "\"example.com/tail\":\"\\u0000\"},\"deletionTimestamp\":\"2024-05-01T10:00:00Z\","
	    "\"finalizers\":[\"service.kubernetes.io/load-balancer-cleanup\"]},"
	    "\"spec\":{\"type\":\"LoadBalancer\"}}", &s, &e) == 0);
	CHECK_STR(s->obj.key, "shop/web");
	CHECK(s->nannotations == 1);
	CHECK_STR(kube_service_annotation(s, "bootccm.io/pool"), "blue");
	CHECK(kube_service_annotation(s, "example.com/note") == NULL);
	CHECK(s->nnul_annotations == 2);
	CHECK_STR(s->nul_annotations[0], "example.com/note");
	CHECK_STR(s->nul_annotations[1], "example.com/tail");
	CHECK(s->deletion_timestamp != 0);
	CHECK(kube_service_has_finalizer(s, "service.kubernetes.io/load-balancer-cleanup"));
	CHECK_STR(s->type, "LoadBalancer");
	store_obj_unref(&s->obj);

	/* only NULs: an empty map */
	CHECK(t_decode("{\"metadata\":{\"name\":\"web\",\"namespace\":\"shop\","
	    "\"annotations\":{\"example.com/note\":\"\\u0000\"}}}", &s, &e) == 0);
	CHECK(s->nannotations == 0 && s->annotations == NULL);
	CHECK(s->nnul_annotations == 1);
	store_obj_unref(&s->obj);
	CHECK(t_decode(LB_SERVICE, &s, &e) == 0);
	CHECK(s->nnul_annotations == 0 && s->nul_annotations == NULL);
	store_obj_unref(&s->obj);
}

TEST(broken)
{
	static const struct {
		const char *json, *msg;
	} cases[] = {
		{ "\"x\"", "service: expected a JSON object" },
		{ "{\"metadata\":{\"namespace\":\"a\"}}", "service without a metadata.name" },
		{ "{\"metadata\":{\"name\":\"a\"}}", "service \"a\" without a metadata.namespace" },
		{ "{\"metadata\":{\"name\":\"a\",\"namespace\":\"\"}}",
		  "service \"a\" without a metadata.namespace" },
		{ "{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\",\"finalizers\":\"f\"}}",
		  "service \"b/a\": metadata.finalizers: expected an array" },
		{ "{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"},\"spec\":{\"ports\":[{\"port\":\"80\"}]}}",
		  "service \"b/a\": spec.ports[0].port: expected an integer" },
		{ "{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"},\"spec\":{\"ports\":[{\"port\":70000}]}}",
		  "service \"b/a\": spec.ports[0].port: out of range" },
		{ "{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"},\"spec\":{\"ports\":[{\"port\":80,"
		  "\"targetPort\":true}]}}",
		  "service \"b/a\": spec.ports[0].targetPort: expected a port number or name" },
		{ "{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"},\"spec\":{\"ports\":[\"80\"]}}",
		  "service \"b/a\": spec.ports[0]: expected an object" },
		{ "{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"},\"spec\":{\"type\":1}}",
		  "service \"b/a\": spec.type: expected a string" },
		{ "{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"},\"spec\":{\"healthCheckNodePort\":-5}}",
		  "service \"b/a\": spec.healthCheckNodePort: out of range" },
		{ "{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"},\"spec\":{\"ipFamilies\":\"IPv4\"}}",
		  "service \"b/a\": spec.ipFamilies: expected an array" },
		{ "{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"},\"status\":{\"loadBalancer\":"
		  "{\"ingress\":[{\"ip\":1}]}}}",
		  "service \"b/a\": status.loadBalancer.ingress[0].ip: expected a string" },
		{ "{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"},\"status\":{\"loadBalancer\":[]}}",
		  "service \"b/a\": status.loadBalancer: expected an object" },
		/* the API server validates these: a NUL in one is no Service of its */
		{ "{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"},\"spec\":{\"type\":"
		  "\"Load\\u0000Balancer\"}}",
		  "service \"b/a\": spec.type: holds a NUL character" },
		{ "{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"},\"spec\":{\"selector\":"
		  "{\"app\":\"w\\u0000\"}}}",
		  "service \"b/a\": spec.selector[\"app\"]: holds a NUL character" },
	};
	const struct kube_service *s = NULL;
	struct errbuf e;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		e.msg[0] = '\0';
		if (t_decode(cases[i].json, &s, &e) != ERR_INVALID) {
			fprintf(stderr, "  case %zu: accepted\n", i);
			CHECK(0);
		}
		CHECK_STR(e.msg, cases[i].msg);
		CHECK(s == NULL);
	}
}

TEST_MAIN()
