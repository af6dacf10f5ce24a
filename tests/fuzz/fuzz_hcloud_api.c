/* fuzz_hcloud_api.c - libFuzzer harness: every decoder of the Hetzner Cloud
 * API's answers on arbitrary bytes. The first byte picks the answer (the
 * error envelope, a server, a page of servers, a load balancer, a network,
 * a page of actions); the rest is the body. A failure must name the
 * problem and hand out nothing; what decodes must hold only checked values
 * (canonical addresses, unique listen ports) and go through what the
 * provider does with it: a server's metadata, a balancer's ownership
 * record, status and plan. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/netaddr.h"
#include "../../providers/hcloud/hcapi.h"
#include "../../providers/hcloud/hclbplan.h"
#include "../../providers/hcloud/hclbspec.h"
#include "../../providers/hcloud/hcserver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
canonical_or_empty(const char *s)
{
	char c[NETADDR_TEXT_MAX];

	if (s[0] != '\0' && (netaddr_canonical(s, c) < 0 || strcmp(c, s) != 0))
		abort();
}

/* object returns root's member key when it is there, else root. */
static json_object *
object(json_object *root, const char *key)
{
	json_object *o;

	return json_object_object_get_ex(root, key, &o) ? o : root;
}

static void
server(json_object *o)
{
	static struct cloud_instance_metadata m;
	struct hcapi_server s;
	struct errbuf e;

	memset(&e, 0, sizeof(e));
	if (hcapi_server_parse(o, "server", &s, &e) < 0) {
		if (e.msg[0] == '\0' || s.name != NULL || s.labels.n != 0)
			abort();
		return;
	}
	canonical_or_empty(s.ipv4);
	for (size_t i = 0; i < s.n_private; i++)
		canonical_or_empty(s.private_net[i].ip);
	hcserver_fill(&s, HCSERVER_IPV4 | HCSERVER_IPV6, 42, &m);
	if (m.n_addresses > CLOUD_ADDRS_MAX || strncmp(m.provider_id, "hcloud://", 9) != 0)
		abort();
	hcapi_server_free(&s);
}

static void
servers(json_object *root)
{
	struct hcapi_page pg;
	struct errbuf e;
	json_object *items;
	size_t n;

	if (hcapi_page_parse(root, &pg, &e) == 0 && pg.next_page != 0 && pg.next_page <= pg.page)
		abort();
	if (hcapi_items(root, "servers", &items, &n, &e) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		server(json_object_array_get_idx(items, i));
}

static void
balancer(json_object *o)
{
	static const struct cloud_lb_port ports[] = {
		{ "http", "TCP", 80, 30080, NULL }, { "https", "TCP", 443, 30443, NULL },
	};
	static const struct hclbspec_defaults d = { .location = "fsn1", .network = 42 };
	static const int64_t want[] = { 1, 2, 3, 100001 };
	struct cloud_service svc = { .namespace_ = "ns", .name = "svc", .uid = "u-1",
	    .ports = ports, .n_ports = 2 };
	struct cloud_lb_status st;
	struct hclbspec_owned own;
	struct hclbspec spec;
	struct hclbplan p;
	struct hcapi_lb lb;
	struct errbuf e;
	json_object *labels;

	memset(&e, 0, sizeof(e));
	if (hcapi_lb_parse(o, "load_balancer", &lb, &e) < 0) {
		if (e.msg[0] == '\0' || lb.name != NULL || lb.n_targets != 0)
			abort();
		return;
	}
	for (size_t i = 0; i < lb.n_services; i++)
		for (size_t j = 0; j < i; j++)
			if (lb.services[i].listen_port == lb.services[j].listen_port)
				abort();
	canonical_or_empty(lb.ipv4);
	canonical_or_empty(lb.ipv6);
	hclbspec_owned_read(&lb, &own);
	labels = hclbspec_labels(&lb.labels, "u-1", "kubernetes", &own);
	json_object_put(labels);
	hclbspec_owned_free(&own);
	if (hclbspec_parse(&svc, &d, "kubernetes", &spec, &e) < 0)
		abort();
	hclbspec_status(&spec, &lb, &st);
	if (st.n_ingress > CLOUD_LB_INGRESS_MAX)
		abort();
	hclbplan_make(&spec, &lb, want, 4, &p);
	if (lb.max_targets > 0 && p.n_tadd > (size_t)lb.max_targets)
		abort();
	hclbplan_free(&p);
	hclbspec_free(&spec);
	hcapi_lb_free(&lb);
}

static void
network(json_object *o)
{
	struct hcapi_network n;
	struct errbuf e;

	memset(&e, 0, sizeof(e));
	if (hcapi_network_parse(o, "network", &n, &e) < 0) {
		if (e.msg[0] == '\0' || n.name != NULL || n.n_routes != 0)
			abort();
		return;
	}
	for (size_t i = 0; i < n.n_routes; i++)
		canonical_or_empty(n.routes[i].gateway);
	hcapi_network_free(&n);
}

static void
actions(json_object *root)
{
	struct hcapi_action a;
	struct errbuf e;
	json_object *items;
	size_t n;

	if (hcapi_items(root, "actions", &items, &n, &e) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		memset(&e, 0, sizeof(e));
		if (hcapi_action_parse(json_object_array_get_idx(items, i), "actions[0]", &a, &e) < 0) {
			if (e.msg[0] == '\0')
				abort();
			continue;
		}
		if (strcmp(a.status, "running") && strcmp(a.status, "success") &&
		    strcmp(a.status, "error"))
			abort();
		for (const char *c = a.error_message; *c; c++)
			if ((unsigned char)*c < 0x20)
				abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hcapi_error env;
	struct errbuf e;
	json_object *root;

	if (size < 1)
		return 0;
	if (data[0] % 6 == 0) {
		if (hcapi_error_parse((const char *)data + 1, size - 1, &env) == 0 &&
		    (env.code[0] == '\0' || strlen(env.message) >= sizeof(env.message)))
			abort();
		return 0;
	}
	memset(&e, 0, sizeof(e));
	if (hcapi_parse((const char *)data + 1, size - 1, &root, &e) < 0) {
		if (e.msg[0] == '\0')
			abort();
		return 0;
	}
	switch (data[0] % 6) {
	case 1:
		server(object(root, "server"));
		break;
	case 2:
		servers(root);
		break;
	case 3:
		balancer(object(root, "load_balancer"));
		break;
	case 4:
		network(object(root, "network"));
		break;
	default:
		actions(root);
		break;
	}
	json_object_put(root);
	return 0;
}
