/* test_hcloud_api.c - the decoders of the Hetzner Cloud API's answers:
 * servers (today's location and the older datacenter.location), load
 * balancers with services, targets and resolved selectors, networks and
 * routes, actions, pagination and the error envelope; every fault names
 * the field. */
#include "harness.h"

#include <stdlib.h>

#include "../../providers/hcloud/hcapi.h"

/* hcloud-api.md B5's example, with an older datacenter block removed. */
static const char server_json[] =
    "{\"server\":{\"id\":4711,\"name\":\"node-a\",\"status\":\"running\","
    "\"created\":\"2026-01-30T23:55:00Z\","
    "\"public_net\":{\"ipv4\":{\"id\":101,\"ip\":\"203.0.113.10\",\"blocked\":false,"
    "\"dns_ptr\":\"static.10.113.0.203.clients.your-server.de\"},"
    "\"ipv6\":{\"id\":102,\"ip\":\"2001:db8:1234::/64\",\"blocked\":false,\"dns_ptr\":[]},"
    "\"floating_ips\":[],\"firewalls\":[]},"
    "\"private_net\":[{\"network\":42,\"ip\":\"10.0.0.2\",\"alias_ips\":[],"
    "\"mac_address\":\"86:00:00:2a:7d:e0\"}],"
    "\"server_type\":{\"id\":22,\"name\":\"cx22\",\"cores\":2,\"memory\":4.0,\"disk\":40,"
    "\"architecture\":\"x86\"},"
    "\"location\":{\"id\":1,\"name\":\"fsn1\",\"description\":\"Falkenstein DC Park 1\","
    "\"country\":\"DE\",\"city\":\"Falkenstein\",\"latitude\":50.47612,"
    "\"longitude\":12.370071,\"network_zone\":\"eu-central\"},"
    "\"labels\":{\"pool\":\"a\"},\"locked\":false,\"protection\":{\"delete\":false,"
    "\"rebuild\":false},\"load_balancers\":[],\"volumes\":[],\"primary_disk_size\":40}}";

static int
parse_server(const char *text, struct hcapi_server *s, struct errbuf *e)
{
	json_object *root, *o;
	int r;

	if ((r = hcapi_parse(text, strlen(text), &root, e)) < 0)
		return r;
	r = hcapi_member(root, "server", &o, e);
	if (r == 0)
		r = hcapi_server_parse(o, "server", s, e);
	json_object_put(root);
	return r;
}

TEST(server_fields)
{
	struct hcapi_server s;
	struct errbuf e;

	CHECK(parse_server(server_json, &s, &e) == 0);
	CHECK(s.id == 4711);
	CHECK_STR(s.name, "node-a");
	CHECK_STR(s.status, "running");
	CHECK_STR(s.ipv4, "203.0.113.10");
	CHECK_STR(s.ipv6, "2001:db8:1234::/64");
	CHECK(s.n_private == 1 && s.private_net[0].network == 42);
	CHECK_STR(s.private_net[0].ip, "10.0.0.2");
	CHECK_STR(s.server_type, "cx22");
	CHECK_STR(s.location, "fsn1");
	CHECK_STR(s.network_zone, "eu-central");
	CHECK(s.labels.n == 1);
	CHECK_STR(hcapi_label(&s.labels, "pool"), "a");
	CHECK(hcapi_label(&s.labels, "nope") == NULL);
	hcapi_server_free(&s);
}

TEST(server_without_public_addresses_and_with_legacy_datacenter)
{
	struct hcapi_server s;
	struct errbuf e;
	const char *j = "{\"server\":{\"id\":7,\"name\":\"x\",\"status\":\"off\","
	    "\"public_net\":{\"ipv4\":null,\"ipv6\":null},\"private_net\":[],"
	    "\"server_type\":{\"name\":\"cpx11\"},"
	    "\"datacenter\":{\"id\":4,\"name\":\"fsn1-dc14\",\"location\":{\"name\":\"fsn1\","
	    "\"network_zone\":\"eu-central\"}}}}";

	CHECK(parse_server(j, &s, &e) == 0);
	CHECK_STR(s.ipv4, "");
	CHECK_STR(s.ipv6, "");
	CHECK(s.n_private == 0);
	CHECK_STR(s.location, "fsn1");
	CHECK_STR(s.status, "off");
	hcapi_server_free(&s);
}

TEST(server_faults_name_the_field)
{
	struct hcapi_server s;
	struct errbuf e;

	CHECK(parse_server("{\"server\":{\"id\":7,\"name\":\"x\",\"status\":\"running\","
	    "\"public_net\":{\"ipv4\":{\"ip\":\"203.0.113.010\"}},"
	    "\"location\":{\"name\":\"fsn1\"}}}", &s, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "server.public_net.ipv4.ip: \"203.0.113.010\" is not an IPv4 address");
	CHECK(parse_server("{\"server\":{\"id\":7,\"name\":\"x\",\"status\":\"running\","
	    "\"private_net\":[{\"network\":\"42\",\"ip\":\"10.0.0.2\"}],"
	    "\"location\":{\"name\":\"fsn1\"}}}", &s, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "server.private_net[0].network");
	CHECK(parse_server("{\"server\":{\"id\":7,\"name\":\"x\",\"status\":\"running\"}}", &s,
	    &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "server 7: no location");
	CHECK(parse_server("{\"server\":{\"id\":-1,\"name\":\"x\",\"status\":\"running\","
	    "\"location\":{\"name\":\"fsn1\"}}}", &s, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "server.id");
	CHECK(parse_server("{\"server\":{\"id\":7,\"status\":\"running\","
	    "\"location\":{\"name\":\"fsn1\"}}}", &s, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "server.name");
	CHECK(parse_server("{\"server\":{\"id\":7,\"name\":\"x\",\"status\":\"running\","
	    "\"labels\":{\"a\":1},\"location\":{\"name\":\"fsn1\"}}}", &s, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "server.labels.a");
	CHECK(parse_server("[1]", &s, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "not an object");
	CHECK(parse_server("{\"server\":", &s, &e) == ERR_INVALID);
}

static const char lb_json[] =
    "{\"load_balancer\":{\"id\":200001,\"name\":\"a1b2\",\"labels\":{"
    "\"hcloud-ccm/service-uid\":\"u-1\",\"bootccm.io/cluster\":\"kubernetes\"},"
    "\"load_balancer_type\":{\"id\":1,\"name\":\"lb11\",\"max_targets\":25,"
    "\"max_services\":5},"
    "\"location\":{\"name\":\"fsn1\",\"network_zone\":\"eu-central\"},"
    "\"public_net\":{\"enabled\":true,\"ipv4\":{\"ip\":\"198.19.0.1\",\"dns_ptr\":null},"
    "\"ipv6\":{\"ip\":\"2001:db8:f000:1::1\",\"dns_ptr\":null}},"
    "\"private_net\":[{\"network\":42,\"ip\":\"10.0.0.5\"}],"
    "\"protection\":{\"delete\":false},\"algorithm\":{\"type\":\"round_robin\"},"
    "\"services\":[{\"protocol\":\"tcp\",\"listen_port\":80,\"destination_port\":30080,"
    "\"proxyprotocol\":true,\"health_check\":{\"protocol\":\"http\",\"port\":30080,"
    "\"interval\":15,\"timeout\":10,\"retries\":3,\"http\":{\"domain\":null,\"path\":\"/\","
    "\"response\":\"\",\"status_codes\":[\"2??\",\"3??\"],\"tls\":false}}},"
    "{\"protocol\":\"https\",\"listen_port\":443,\"destination_port\":30443,"
    "\"proxyprotocol\":false,\"health_check\":{\"protocol\":\"tcp\",\"port\":30443,"
    "\"interval\":15,\"timeout\":10,\"retries\":3},\"http\":{\"cookie_name\":\"HCLBSTICKY\","
    "\"cookie_lifetime\":300,\"certificates\":[7,9],\"redirect_http\":false,"
    "\"sticky_sessions\":true,\"timeout_idle\":60}}],"
    "\"targets\":[{\"type\":\"server\",\"server\":{\"id\":4711},\"use_private_ip\":true,"
    "\"health_status\":[{\"listen_port\":80,\"status\":\"healthy\"}]},"
    "{\"type\":\"label_selector\",\"label_selector\":{\"selector\":\"bootccm.io/lb-x\"},"
    "\"use_private_ip\":false,\"targets\":[{\"type\":\"server\",\"server\":{\"id\":5},"
    "\"use_private_ip\":false},{\"type\":\"server\",\"server\":{\"id\":6}}]},"
    "{\"type\":\"ip\",\"ip\":{\"ip\":\"192.0.2.9\"}}],"
    "\"outgoing_traffic\":null,\"ingoing_traffic\":null,\"included_traffic\":0}}";

TEST(load_balancer_fields)
{
	json_object *root, *o;
	struct hcapi_lb lb;
	struct errbuf e;

	CHECK(hcapi_parse(lb_json, strlen(lb_json), &root, &e) == 0);
	CHECK(hcapi_member(root, "load_balancer", &o, &e) == 0);
	CHECK(hcapi_lb_parse(o, "load_balancer", &lb, &e) == 0);
	json_object_put(root);
	CHECK(lb.id == 200001);
	CHECK_STR(lb.name, "a1b2");
	CHECK_STR(hcapi_label(&lb.labels, "hcloud-ccm/service-uid"), "u-1");
	CHECK_STR(lb.type, "lb11");
	CHECK(lb.max_targets == 25);
	CHECK_STR(lb.location, "fsn1");
	CHECK(lb.public_enabled);
	CHECK_STR(lb.ipv4, "198.19.0.1");
	CHECK_STR(lb.ipv6, "2001:db8:f000:1::1");
	CHECK(lb.n_private == 1);
	CHECK_STR(lb.private_net[0].ip, "10.0.0.5");
	CHECK_STR(lb.algorithm, "round_robin");
	CHECK(lb.n_services == 2);
	CHECK(lb.services[0].listen_port == 80 && lb.services[0].destination_port == 30080);
	CHECK(lb.services[0].proxyprotocol);
	CHECK_STR(lb.services[0].hc.protocol, "http");
	CHECK(lb.services[0].hc.has_http);
	CHECK_STR(lb.services[0].hc.path, "/");
	CHECK(lb.services[0].hc.domain == NULL);
	CHECK_STR(lb.services[0].hc.status_codes, "2??,3??");
	CHECK(!lb.services[0].has_http);
	CHECK_STR(lb.services[1].protocol, "https");
	CHECK(lb.services[1].has_http && lb.services[1].sticky_sessions);
	CHECK_STR(lb.services[1].certificates, "7,9");
	CHECK_STR(lb.services[1].cookie_name, "HCLBSTICKY");
	CHECK(lb.n_targets == 3);
	CHECK_STR(lb.targets[0].type, "server");
	CHECK(lb.targets[0].server_id == 4711 && lb.targets[0].use_private_ip);
	CHECK_STR(lb.targets[1].selector, "bootccm.io/lb-x");
	CHECK(lb.targets[1].n_resolved == 2 && lb.targets[1].resolved[1] == 6);
	CHECK_STR(lb.targets[2].ip, "192.0.2.9");
	hcapi_lb_free(&lb);
}

TEST(load_balancer_faults)
{
	json_object *root;
	struct hcapi_lb lb;
	struct errbuf e;
	const char *twice = "{\"id\":1,\"name\":\"x\",\"services\":["
	    "{\"protocol\":\"tcp\",\"listen_port\":80},{\"protocol\":\"tcp\",\"listen_port\":80}]}";
	const char *port = "{\"id\":1,\"name\":\"x\",\"services\":["
	    "{\"protocol\":\"tcp\",\"listen_port\":70000}]}";
	const char *tgt = "{\"id\":1,\"name\":\"x\",\"targets\":[{\"type\":\"server\"}]}";

	CHECK(hcapi_parse(twice, strlen(twice), &root, &e) == 0);
	CHECK(hcapi_lb_parse(root, "load_balancer", &lb, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "load_balancer.services[1].listen_port: 80 twice");
	json_object_put(root);
	CHECK(hcapi_parse(port, strlen(port), &root, &e) == 0);
	CHECK(hcapi_lb_parse(root, "load_balancer", &lb, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "load_balancer.services[0].listen_port");
	json_object_put(root);
	CHECK(hcapi_parse(tgt, strlen(tgt), &root, &e) == 0);
	CHECK(hcapi_lb_parse(root, "load_balancer", &lb, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "load_balancer.targets[0].server");
	json_object_put(root);
}

TEST(network_routes)
{
	const char *j = "{\"network\":{\"id\":42,\"name\":\"k8s\",\"ip_range\":\"10.0.0.0/8\","
	    "\"subnets\":[],\"routes\":[{\"destination\":\"10.244.1.0/24\",\"gateway\":\"10.0.0.2\"},"
	    "{\"destination\":\"10.244.2.0/24\",\"gateway\":\"10.0.0.3\"}],\"servers\":[4711]}}";
	json_object *root, *o;
	struct hcapi_network n;
	struct errbuf e;

	CHECK(hcapi_parse(j, strlen(j), &root, &e) == 0);
	CHECK(hcapi_member(root, "network", &o, &e) == 0);
	CHECK(hcapi_network_parse(o, "network", &n, &e) == 0);
	json_object_put(root);
	CHECK(n.id == 42 && n.n_routes == 2);
	CHECK_STR(n.ip_range, "10.0.0.0/8");
	CHECK_STR(n.routes[1].destination, "10.244.2.0/24");
	CHECK_STR(n.routes[1].gateway, "10.0.0.3");
	hcapi_network_free(&n);

	j = "{\"id\":42,\"name\":\"k8s\",\"routes\":[{\"destination\":\"10.244.1.0/24\","
	    "\"gateway\":\"bogus\"}]}";
	CHECK(hcapi_parse(j, strlen(j), &root, &e) == 0);
	CHECK(hcapi_network_parse(root, "network", &n, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "network.routes[0].gateway: \"bogus\" is not an IP address");
	json_object_put(root);
}

TEST(actions)
{
	const char *j = "{\"actions\":[{\"id\":13,\"command\":\"add_target\",\"status\":\"error\","
	    "\"progress\":0,\"started\":\"2026-08-01T10:00:00Z\",\"finished\":null,"
	    "\"resources\":[],\"error\":{\"code\":\"action_failed\",\"message\":\"Action\\nfailed\"}},"
	    "{\"id\":14,\"command\":\"x\",\"status\":\"done\"}],\"meta\":{\"pagination\":{"
	    "\"page\":1,\"per_page\":25,\"previous_page\":null,\"next_page\":null,"
	    "\"last_page\":1,\"total_entries\":2}}}";
	json_object *root, *items;
	struct hcapi_action a;
	struct hcapi_page pg;
	struct errbuf e;
	size_t n;

	CHECK(hcapi_parse(j, strlen(j), &root, &e) == 0);
	CHECK(hcapi_page_parse(root, &pg, &e) == 0);
	CHECK(pg.page == 1 && pg.next_page == 0 && pg.total_entries == 2);
	CHECK(hcapi_items(root, "actions", &items, &n, &e) == 0 && n == 2);
	CHECK(hcapi_action_parse(json_object_array_get_idx(items, 0), "actions[0]", &a, &e) == 0);
	CHECK(a.id == 13);
	CHECK_STR(a.status, "error");
	CHECK_STR(a.error_code, "action_failed");
	CHECK_STR(a.error_message, "Action failed");
	CHECK(hcapi_action_parse(json_object_array_get_idx(items, 1), "actions[1]", &a, &e) ==
	    ERR_INVALID);
	CHECK_STR(e.msg, "actions[1].status: \"done\" is not an action status");
	CHECK(hcapi_items(root, "servers", &items, &n, &e) == ERR_INVALID);
	json_object_put(root);
}

TEST(pagination)
{
	const char *j = "{\"servers\":[],\"meta\":{\"pagination\":{\"page\":2,\"per_page\":50,"
	    "\"previous_page\":1,\"next_page\":3,\"last_page\":3,\"total_entries\":120}}}";
	const char *bad = "{\"meta\":{\"pagination\":{\"page\":2,\"next_page\":2}}}";
	json_object *root;
	struct hcapi_page pg;
	struct errbuf e;

	CHECK(hcapi_parse(j, strlen(j), &root, &e) == 0);
	CHECK(hcapi_page_parse(root, &pg, &e) == 0);
	CHECK(pg.next_page == 3 && pg.last_page == 3);
	json_object_put(root);
	/* a next page that does not move on would loop forever */
	CHECK(hcapi_parse(bad, strlen(bad), &root, &e) == 0);
	CHECK(hcapi_page_parse(root, &pg, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "does not follow page 2");
	json_object_put(root);
	CHECK(hcapi_parse("{\"servers\":[]}", 14, &root, &e) == 0);
	CHECK(hcapi_page_parse(root, &pg, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "meta: missing");
	json_object_put(root);
}

TEST(error_envelope)
{
	struct hcapi_error err;
	const char *j = "{\"error\":{\"code\":\"not_found\",\"message\":\"server with ID '99' "
	    "not found\",\"details\":null}}";

	CHECK(hcapi_error_parse(j, strlen(j), &err) == 0);
	CHECK_STR(err.code, "not_found");
	CHECK_STR(err.message, "server with ID '99' not found");
	CHECK(hcapi_error_parse("<html>404</html>", 16, &err) == ERR_INVALID);
	CHECK(hcapi_error_parse("{\"error\":{\"message\":\"x\"}}", 25, &err) == ERR_INVALID);
	CHECK(hcapi_error_parse("{\"error\":{\"code\":\"\"}}", 21, &err) == ERR_INVALID);
	CHECK(hcapi_error_parse(NULL, 0, &err) == ERR_INVALID);
}

TEST_MAIN()
