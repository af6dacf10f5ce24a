/* test_hcloud_lbspec.c - a Service's Hetzner Cloud load balancer from its
 * annotations (clear errors naming the annotation), bootccm's ownership
 * record in a balancer's labels, the Service's status, and the plan from a
 * balancer as the API shows it to what the Service asks: only recorded
 * services and targets are changed or removed, removes before adds, the
 * type's max_targets counted with everything the balancer keeps. */
#include "harness.h"

#include <stdarg.h>
#include <stdlib.h>

#include "base/jsonx.h"
#include "../../providers/hcloud/hclbplan.h"
#include "../../providers/hcloud/hclbspec.h"

#define UID "1b2c3d4e-5f60-4718-9a0b-1c2d3e4f5a6b"

/* A Service with annotations (NULL-terminated key, value pairs). */
struct svc {
	struct cloud_kv ann[32];
	struct cloud_lb_port ports[4];
	struct cloud_service s;
};

static void
svc_init(struct svc *v, ...)
{
	va_list ap;
	size_t n = 0;
	const char *k;

	memset(v, 0, sizeof(*v));
	va_start(ap, v);
	while ((k = va_arg(ap, const char *)) != NULL) {
		v->ann[n].key = k;
		v->ann[n].value = va_arg(ap, const char *);
		n++;
	}
	va_end(ap);
	v->ports[0] = (struct cloud_lb_port){ "http", "TCP", 80, 30080, NULL };
	v->ports[1] = (struct cloud_lb_port){ "https", "TCP", 443, 30443, NULL };
	v->ports[2] = (struct cloud_lb_port){ "dns", "UDP", 53, 30053, NULL };
	v->s.namespace_ = "web";
	v->s.name = "front";
	v->s.uid = UID;
	v->s.annotations = v->ann;
	v->s.n_annotations = n;
	v->s.ports = v->ports;
	v->s.n_ports = 3;
	v->s.type = "LoadBalancer";
}

static const struct hclbspec_defaults defaults = { .location = "fsn1", .network = 42 };

TEST(defaults_and_ports)
{
	struct svc v;
	struct hclbspec s;
	struct errbuf e;

	svc_init(&v, NULL);
	CHECK(hclbspec_parse(&v.s, &defaults, "kubernetes", &s, &e) == 0);
	/* upstream's DefaultLoadBalancerName: "a" + uid without dashes, 32 */
	CHECK_STR(s.name, "a1b2c3d4e5f6047189a0b1c2d3e4f5a6");
	CHECK(strlen(s.name) == 32 && !s.name_set);
	CHECK_STR(s.type, "lb11");
	CHECK(!s.type_set);
	CHECK_STR(s.location, "fsn1");
	CHECK_STR(s.network_zone, "");
	CHECK_STR(s.protocol, "tcp");
	CHECK(!s.use_private_ip && s.disable_public == -1 && !s.proxyprotocol);
	CHECK(!s.hc.set);
	CHECK(s.node_selector == NULL);
	/* TCP ports only (no UDP on the balancers), to the nodePorts */
	CHECK(s.n_ports == 2);
	CHECK(s.ports[0].listen == 80 && s.ports[0].dest == 30080);
	CHECK(s.ports[1].listen == 443 && s.ports[1].dest == 30443);
	hclbspec_free(&s);
}

TEST(annotations)
{
	struct svc v;
	struct hclbspec s;
	struct errbuf e;

	svc_init(&v,
	    "load-balancer.hetzner.cloud/name", "front-lb",
	    "load-balancer.hetzner.cloud/network-zone", "eu-central",
	    "load-balancer.hetzner.cloud/type", "lb21",
	    "load-balancer.hetzner.cloud/algorithm-type", "Least_Connections",
	    "load-balancer.hetzner.cloud/use-private-ip", "true",
	    "load-balancer.hetzner.cloud/disable-public-network", "T",
	    "load-balancer.hetzner.cloud/disable-private-ingress", "1",
	    "load-balancer.hetzner.cloud/ipv6-disabled", "True",
	    "load-balancer.hetzner.cloud/uses-proxyprotocol", "true",
	    "load-balancer.hetzner.cloud/protocol", "HTTP",
	    "load-balancer.hetzner.cloud/health-check-protocol", "http",
	    "load-balancer.hetzner.cloud/health-check-port", "8080",
	    "load-balancer.hetzner.cloud/health-check-interval", "20s",
	    "load-balancer.hetzner.cloud/health-check-timeout", "5s",
	    "load-balancer.hetzner.cloud/health-check-retries", "2",
	    "load-balancer.hetzner.cloud/health-check-http-domain", "example.com",
	    "load-balancer.hetzner.cloud/health-check-http-path", "/healthz",
	    "load-balancer.hetzner.cloud/health-check-http-validate-certificate", "false",
	    "load-balancer.hetzner.cloud/http-status-codes", "2??,301",
	    "load-balancer.hetzner.cloud/http-sticky-sessions", "true",
	    "load-balancer.hetzner.cloud/http-cookie-lifetime", "5m",
	    "load-balancer.hetzner.cloud/node-selector", "pool=ingress",
	    "load-balancer.hetzner.cloud/hostname", "lb.example.com",
	    "load-balancer.hetzner.cloud/private-ipv4", "10.0.0.99",
	    "load-balancer.hetzner.cloud/some-future-key", "ignored",
	    NULL);
	CHECK(hclbspec_parse(&v.s, &defaults, "kubernetes", &s, &e) == 0);
	CHECK_STR(s.name, "front-lb");
	CHECK(s.name_set);
	/* the Service's zone wins over the default location */
	CHECK_STR(s.location, "");
	CHECK_STR(s.network_zone, "eu-central");
	CHECK_STR(s.type, "lb21");
	CHECK(s.type_set);
	CHECK_STR(s.algorithm, "least_connections");
	CHECK(s.use_private_ip && s.disable_public == 1 && s.disable_private_ingress &&
	    s.ipv6_disabled && s.proxyprotocol);
	CHECK_STR(s.protocol, "http");
	CHECK(s.hc.set);
	CHECK_STR(s.hc.protocol, "http");
	CHECK(s.hc.port == 8080 && s.hc.interval == 20 && s.hc.timeout == 5 && s.hc.retries == 2);
	CHECK_STR(s.hc.domain, "example.com");
	CHECK_STR(s.hc.path, "/healthz");
	CHECK(s.hc.tls == 0);
	CHECK_STR(s.hc.status_codes, "2??,301");
	CHECK(s.http_set && s.sticky_sessions == 1 && s.cookie_lifetime == 300);
	CHECK_STR(s.node_selector, "pool=ingress");
	CHECK(strncmp(s.selector_key, "bootccm.io/lb-", 14) == 0 && strlen(s.selector_key) == 26);
	CHECK_STR(s.hostname, "lb.example.com");
	CHECK_STR(s.private_ipv4, "10.0.0.99");
	hclbspec_free(&s);
}

/* bad checks that annotation name with value v is refused naming both. */
static int
bad(const char *name, const char *v, const char *why)
{
	char key[128];
	struct svc sv;
	struct hclbspec s;
	struct errbuf e;

	snprintf(key, sizeof(key), "load-balancer.hetzner.cloud/%s", name);
	svc_init(&sv, key, v, NULL);
	if (hclbspec_parse(&sv.s, &defaults, "kubernetes", &s, &e) != ERR_INVALID) {
		hclbspec_free(&s);
		fprintf(stderr, "  %s=%s accepted\n", name, v);
		return 0;
	}
	if (strstr(e.msg, "Service web/front: annotation ") == NULL || strstr(e.msg, key) == NULL ||
	    strstr(e.msg, why) == NULL) {
		fprintf(stderr, "  %s=%s: %s\n", name, v, e.msg);
		return 0;
	}
	return 1;
}

TEST(bad_annotations_are_named)
{
	CHECK(bad("use-private-ip", "yes", "not a boolean"));
	CHECK(bad("uses-proxyprotocol", "", "not a boolean"));
	CHECK(bad("health-check-interval", "15", "not a duration"));
	CHECK(bad("health-check-interval", "2s", "must be from 3s to 60s"));
	CHECK(bad("health-check-timeout", "-1s", "must be from 1s to 60s"));
	CHECK(bad("health-check-port", "0", "not an integer from 1 to 65535"));
	CHECK(bad("health-check-port", "80x", "not an integer"));
	CHECK(bad("health-check-retries", "9", "not an integer from 0 to 5"));
	CHECK(bad("health-check-protocol", "udp", "not tcp, http or https"));
	CHECK(bad("health-check-http-path", "healthz", "must start with /"));
	CHECK(bad("health-check-http-domain", "not a name", "no spaces"));
	CHECK(bad("http-status-codes", "2xx", "not a list of status codes"));
	CHECK(bad("protocol", "udp", "not tcp, http or https"));
	CHECK(bad("protocol", "https", "needs the annotation"));
	CHECK(bad("algorithm-type", "random", "not round_robin or least_connections"));
	CHECK(bad("node-selector", "a in (", "not a label selector"));
	CHECK(bad("hostname", "-bad-.example", "not a DNS name"));
	CHECK(bad("private-ipv4", "2001:db8::1", "not an IPv4 address"));
	CHECK(bad("disable-public-network", "true", "needs private targets"));
	CHECK(bad("http-certificates", "my-cert", "names are not supported"));
	CHECK(bad("http-cookie-lifetime", "soon", "not a duration"));
	CHECK(bad("name", "", "empty"));
	CHECK(bad("name", "two words", "no spaces"));
}

/* An annotation left out for a NUL: refused when it is one of
 * load-balancer.hetzner.cloud/..., ignored otherwise. */
TEST(nul_annotations)
{
	static const char *const hc[] = { "load-balancer.hetzner.cloud/location" };
	static const char *const other[] = { "example.com/note" };
	struct svc v;
	struct hclbspec s;
	struct errbuf e;

	svc_init(&v, NULL);
	v.s.nul_annotations = other;
	v.s.n_nul_annotations = 1;
	CHECK(hclbspec_parse(&v.s, &defaults, "kubernetes", &s, &e) == 0);
	hclbspec_free(&s);
	v.s.nul_annotations = hc;
	CHECK(hclbspec_parse(&v.s, &defaults, "kubernetes", &s, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "Service web/front: annotation load-balancer.hetzner.cloud/location "
	    "holds a NUL character, which bootccm cannot read");
}

TEST(private_targets_need_a_network)
{
	struct hclbspec_defaults none = { .location = "fsn1" };
	struct svc v;
	struct hclbspec s;
	struct errbuf e;

	svc_init(&v, "load-balancer.hetzner.cloud/use-private-ip", "true", NULL);
	CHECK(hclbspec_parse(&v.s, &none, "kubernetes", &s, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "needs a network");
	/* a port without its nodePort cannot be forwarded */
	svc_init(&v, NULL);
	v.ports[0].node_port = 0;
	CHECK(hclbspec_parse(&v.s, &defaults, "kubernetes", &s, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "Service web/front: port 80 has no nodePort: the balancer forwards to "
	    "the nodes' ports");
}

TEST(names_and_label_values)
{
	char buf[64], k1[HCLBSPEC_SELECTOR_KEY_MAX], k2[HCLBSPEC_SELECTOR_KEY_MAX];

	hclbspec_default_name("abc-def", buf);
	CHECK_STR(buf, "aabcdef");
	hclbspec_cluster_value("prod-eu", buf);
	CHECK_STR(buf, "prod-eu");
	hclbspec_cluster_value("", buf);
	CHECK_STR(buf, "kubernetes");
	/* not a label value: a stable hash of it */
	hclbspec_cluster_value("my cluster", buf);
	CHECK(strncmp(buf, "h-", 2) == 0 && strlen(buf) == 18);
	hclbspec_selector_key("a", "pool=x", k1);
	hclbspec_selector_key("b", "pool=x", k2);
	CHECK(strcmp(k1, k2) != 0);
	hclbspec_selector_key("a", "pool=x", k2);
	CHECK_STR(k1, k2);
}

/* --- balancers as the API shows them ------------------------------------------ */

struct lbb {
	struct hcapi_lb lb;
	struct hcapi_kv kv[64];
	struct hcapi_lb_service svc[8];
	struct hcapi_lb_target tgt[64];
	struct hcapi_privnet pn[1];
	char keys[64][64], vals[64][64];
};

static void
lb_label(struct lbb *b, const char *k, const char *v)
{
	size_t i = b->lb.labels.n++;

	snprintf(b->keys[i], sizeof(b->keys[i]), "%s", k);
	snprintf(b->vals[i], sizeof(b->vals[i]), "%s", v);
	b->kv[i].key = b->keys[i];
	b->kv[i].value = b->vals[i];
}

static void
lb_service(struct lbb *b, int64_t listen, int64_t dest)
{
	struct hcapi_lb_service *s = &b->svc[b->lb.n_services++];

	memset(s, 0, sizeof(*s));
	s->listen_port = listen;
	s->destination_port = dest;
	snprintf(s->protocol, sizeof(s->protocol), "tcp");
	snprintf(s->hc.protocol, sizeof(s->hc.protocol), "tcp");
	s->hc.port = dest;
	s->hc.interval = 15;
	s->hc.timeout = 10;
	s->hc.retries = 3;
}

static void
lb_target(struct lbb *b, int64_t id, int private_ip)
{
	struct hcapi_lb_target *t = &b->tgt[b->lb.n_targets++];

	memset(t, 0, sizeof(*t));
	snprintf(t->type, sizeof(t->type), "server");
	t->server_id = id;
	t->use_private_ip = private_ip;
}

/* lb_init: bootccm's balancer for the Service of svc_init, serving 80 and
 * 443, targeting servers 1 and 2, with the record saying so. */
static void
lb_init(struct lbb *b)
{
	memset(b, 0, sizeof(*b));
	b->lb.id = 7;
	b->lb.name = "a1b2c3d4e5f6047189a0b1c2d3e4f5a6";
	b->lb.labels.kv = b->kv;
	b->lb.services = b->svc;
	b->lb.targets = b->tgt;
	b->lb.private_net = b->pn;
	b->lb.n_private = 1;
	b->pn[0] = (struct hcapi_privnet){ 42, "10.0.0.5" };
	snprintf(b->lb.type, sizeof(b->lb.type), "lb11");
	b->lb.max_targets = 25;
	snprintf(b->lb.algorithm, sizeof(b->lb.algorithm), "round_robin");
	b->lb.public_enabled = 1;
	snprintf(b->lb.ipv4, sizeof(b->lb.ipv4), "198.19.0.1");
	snprintf(b->lb.ipv6, sizeof(b->lb.ipv6), "2001:db8:f000:1::1");
	lb_label(b, HCLBSPEC_LABEL_UID, UID);
	lb_label(b, HCLBSPEC_LABEL_CLUSTER, "kubernetes");
	lb_label(b, HCLBSPEC_LABEL_PORTS, "28.cb");        /* 80.443 in base 36 */
	lb_label(b, HCLBSPEC_LABEL_TARGETS, "1.2");
	lb_service(b, 80, 30080);
	lb_service(b, 443, 30443);
	lb_target(b, 1, 0);
	lb_target(b, 2, 0);
}

TEST(ownership_record)
{
	struct lbb b;
	struct hclbspec_owned o;

	lb_init(&b);
	CHECK(hclbspec_ours(&b.lb, UID, "kubernetes"));
	CHECK(!hclbspec_ours(&b.lb, UID, "other"));
	CHECK(!hclbspec_ours(&b.lb, "another-uid", "kubernetes"));
	hclbspec_owned_read(&b.lb, &o);
	CHECK(o.n_ports == 2 && o.ports[0] == 80 && o.ports[1] == 443);
	CHECK(o.n_targets == 2 && o.targets[1] == 2);
	hclbspec_owned_free(&o);
	/* what cannot be read was not made by bootccm */
	snprintf(b.vals[3], sizeof(b.vals[3]), "1..2");
	hclbspec_owned_read(&b.lb, &o);
	CHECK(o.n_targets == 0);
	hclbspec_owned_free(&o);
}

TEST(record_labels_round_trip_and_keep_foreign_labels)
{
	struct hclbspec_owned o = { 0, 0, NULL, NULL }, back;
	struct lbb b;
	json_object *labels;
	size_t parts = 0;

	lb_init(&b);
	lb_label(&b, "team", "payments");
	o.ports = calloc(3, sizeof(int64_t));
	o.targets = calloc(150, sizeof(int64_t));
	o.ports[0] = 80, o.ports[1] = 443, o.ports[2] = 65535;
	o.n_ports = 3;
	for (int i = 0; i < 150; i++)
		o.targets[o.n_targets++] = 100000000 + i * 7919;
	labels = hclbspec_labels(&b.lb.labels, UID, "kubernetes", &o);
	/* relabel b with the result, as the API would store it */
	b.lb.labels.n = 0;
	json_object_object_foreach(labels, k, v) {
		const char *s = json_object_get_string(v);
		CHECK(strlen(s) <= HCLBSPEC_LABEL_VALUE_MAX);
		if (strncmp(k, "bootccm.io/targets", 18) == 0)
			parts++;
		CHECK(b.lb.labels.n < 64);
		lb_label(&b, k, s);
	}
	CHECK(parts > 1);
	CHECK_STR(hcapi_label(&b.lb.labels, "team"), "payments");
	CHECK_STR(hcapi_label(&b.lb.labels, HCLBSPEC_LABEL_UID), UID);
	hclbspec_owned_read(&b.lb, &back);
	CHECK(back.n_ports == 3 && back.ports[2] == 65535);
	CHECK(back.n_targets == 150);
	for (int i = 0; i < 150; i++)
		CHECK(back.targets[i] == o.targets[i]);
	hclbspec_owned_free(&back);
	hclbspec_owned_free(&o);
	json_object_put(labels);
}

TEST(status)
{
	struct svc v;
	struct hclbspec s;
	struct cloud_lb_status st;
	struct lbb b;
	struct errbuf e;

	lb_init(&b);
	svc_init(&v, NULL);
	CHECK(hclbspec_parse(&v.s, &defaults, "kubernetes", &s, &e) == 0);
	hclbspec_status(&s, &b.lb, &st);
	CHECK(st.n_ingress == 3);
	CHECK_STR(st.ingress[0].ip, "198.19.0.1");
	CHECK_STR(st.ingress[1].ip, "2001:db8:f000:1::1");
	CHECK_STR(st.ingress[2].ip, "10.0.0.5");
	CHECK_STR(st.ingress[0].ip_mode, "VIP");
	hclbspec_free(&s);
	/* proxy protocol: ipMode Proxy; no IPv6, no private ingress */
	svc_init(&v, "load-balancer.hetzner.cloud/uses-proxyprotocol", "true",
	    "load-balancer.hetzner.cloud/ipv6-disabled", "true",
	    "load-balancer.hetzner.cloud/disable-private-ingress", "true", NULL);
	CHECK(hclbspec_parse(&v.s, &defaults, "kubernetes", &s, &e) == 0);
	hclbspec_status(&s, &b.lb, &st);
	CHECK(st.n_ingress == 1);
	CHECK_STR(st.ingress[0].ip_mode, "Proxy");
	hclbspec_free(&s);
	/* public network disabled: the private IP only */
	svc_init(&v, "load-balancer.hetzner.cloud/use-private-ip", "true",
	    "load-balancer.hetzner.cloud/disable-public-network", "true", NULL);
	CHECK(hclbspec_parse(&v.s, &defaults, "kubernetes", &s, &e) == 0);
	hclbspec_status(&s, &b.lb, &st);
	CHECK(st.n_ingress == 1);
	CHECK_STR(st.ingress[0].ip, "10.0.0.5");
	hclbspec_free(&s);
	/* a hostname alone */
	svc_init(&v, "load-balancer.hetzner.cloud/hostname", "lb.example.com", NULL);
	CHECK(hclbspec_parse(&v.s, &defaults, "kubernetes", &s, &e) == 0);
	hclbspec_status(&s, &b.lb, &st);
	CHECK(st.n_ingress == 1);
	CHECK_STR(st.ingress[0].hostname, "lb.example.com");
	CHECK_STR(st.ingress[0].ip, "");
	CHECK_STR(st.ingress[0].ip_mode, "");
	hclbspec_free(&s);
}

static int
plan(const char *first_key, const char *first_val, struct lbb *b, const int64_t *want,
    size_t n, struct hclbplan *p)
{
	struct svc v;
	struct hclbspec s;
	struct errbuf e;

	svc_init(&v, first_key, first_val, NULL);
	if (hclbspec_parse(&v.s, &defaults, "kubernetes", &s, &e) < 0)
		return -1;
	hclbplan_make(&s, &b->lb, want, n, p);
	hclbspec_free(&s);
	return 0;
}

TEST(plan_nothing_to_do)
{
	static const int64_t want[] = { 2, 1 };
	struct hclbplan p;
	struct lbb b;

	lb_init(&b);
	CHECK(plan(NULL, NULL, &b, want, 2, &p) == 0);
	CHECK(hclbplan_empty(&p));
	CHECK(p.shortfall == 0 && p.foreign_port == 0);
	hclbplan_free(&p);
}

TEST(plan_services_only_what_is_recorded)
{
	static const int64_t want[] = { 1, 2 };
	struct hclbplan p;
	struct lbb b;

	lb_init(&b);
	b.svc[1].destination_port = 31000;   /* 443's nodePort changed */
	lb_service(&b, 22, 30022);           /* someone's ssh: not recorded */
	lb_service(&b, 8080, 30808);         /* recorded, no longer in the Service */
	snprintf(b.vals[2], sizeof(b.vals[2]), "28.cb.68g");   /* 80.443.8080 */
	CHECK(plan(NULL, NULL, &b, want, 2, &p) == 0);
	CHECK(p.n_update == 1 && p.update[0] == 443);
	CHECK(p.n_delete == 1 && p.del[0] == 8080);
	CHECK(p.n_add == 0);
	CHECK(!p.record_before && p.record_after);
	CHECK(p.after.n_ports == 2);
	hclbplan_free(&p);
	/* the Service wants a port someone else's service holds */
	lb_init(&b);
	snprintf(b.vals[2], sizeof(b.vals[2]), "28");   /* 443 not recorded */
	CHECK(plan(NULL, NULL, &b, want, 2, &p) == 0);
	CHECK(p.foreign_port == 443);
	CHECK(p.n_update == 0 && p.n_delete == 0 && p.n_add == 0);
	hclbplan_free(&p);
	/* a recorded port that is gone: made again, the record as it was */
	lb_init(&b);
	b.lb.n_services = 1;
	CHECK(plan(NULL, NULL, &b, want, 2, &p) == 0);
	CHECK(p.n_add == 1 && p.add[0] == 443);
	CHECK(!p.record_before && !p.record_after);
	hclbplan_free(&p);
}

TEST(plan_targets_keep_foreign_ones_and_respect_max_targets)
{
	int64_t want[30];
	struct hclbplan p;
	struct lbb b;

	lb_init(&b);
	lb_target(&b, 900, 0);     /* someone's target */
	/* 30 wanted: 1..30; the balancer keeps 900 as well */
	for (int i = 0; i < 30; i++)
		want[i] = 30 - i;
	CHECK(plan(NULL, NULL, &b, want, 30, &p) == 0);
	CHECK(p.n_tremove == 0);
	/* 25 targets at most: 1, 2 and 900 are there, 22 more */
	CHECK(p.n_tadd == 22 && p.tadd[0] == 3 && p.tadd[21] == 24);
	CHECK(p.shortfall == 6);
	CHECK(p.record_before && !p.record_after);
	CHECK(p.before.n_targets == 24);
	hclbplan_free(&p);
	/* a node gone: its recorded target removed, the foreign one kept */
	want[0] = 1;
	CHECK(plan(NULL, NULL, &b, want, 1, &p) == 0);
	CHECK(p.n_tremove == 1 && p.tremove[0] == 2);
	CHECK(p.n_tadd == 0 && p.shortfall == 0);
	CHECK(p.after.n_targets == 1 && p.after.targets[0] == 1);
	hclbplan_free(&p);
}

TEST(plan_private_targets_are_made_again)
{
	static const int64_t want[] = { 1, 2 };
	struct hclbplan p;
	struct lbb b;

	lb_init(&b);
	CHECK(plan("load-balancer.hetzner.cloud/use-private-ip", "true", &b, want, 2, &p) == 0);
	CHECK(p.n_tremove == 2 && p.n_tadd == 2);
	hclbplan_free(&p);
}

TEST(plan_recorded_targets_that_are_gone_are_forgotten)
{
	static const int64_t want[] = { 1 };
	struct hclbplan p;
	struct lbb b;

	lb_init(&b);
	b.lb.n_targets = 1;        /* 2 was removed by hand */
	CHECK(plan(NULL, NULL, &b, want, 1, &p) == 0);
	CHECK(p.n_tremove == 0 && p.n_tadd == 0);
	CHECK(p.record_before);
	CHECK(p.before.n_targets == 1 && p.after.n_targets == 1);
	hclbplan_free(&p);
}

TEST(plan_node_selector_uses_one_selector_target)
{
	static const int64_t want[] = { 1, 2, 3 };
	struct hclbplan p;
	struct lbb b;

	lb_init(&b);
	CHECK(plan("load-balancer.hetzner.cloud/node-selector", "pool=ingress", &b, want, 3,
	    &p) == 0);
	CHECK(p.selector_add);
	CHECK(p.n_tremove == 2 && p.n_tadd == 0);
	CHECK(p.after.n_targets == 0);
	hclbplan_free(&p);
}

TEST(plan_balancer_changes)
{
	struct hclbplan p;
	struct lbb b;

	lb_init(&b);
	b.lb.n_private = 0;
	CHECK(plan("load-balancer.hetzner.cloud/type", "lb21", &b, NULL, 0, &p) == 0);
	CHECK(p.change_type && p.attach && !p.rename && !p.change_algorithm);
	hclbplan_free(&p);
	lb_init(&b);
	CHECK(plan("load-balancer.hetzner.cloud/name", "renamed", &b, NULL, 0, &p) == 0);
	CHECK(p.rename);
	hclbplan_free(&p);
	lb_init(&b);
	CHECK(plan("load-balancer.hetzner.cloud/algorithm-type", "least_connections", &b, NULL,
	    0, &p) == 0);
	CHECK(p.change_algorithm);
	hclbplan_free(&p);
}

TEST(service_bodies)
{
	struct svc v;
	struct hclbspec s;
	struct errbuf e;
	json_object *o, *hc;
	int64_t n;

	svc_init(&v, "load-balancer.hetzner.cloud/uses-proxyprotocol", "true", NULL);
	CHECK(hclbspec_parse(&v.s, &defaults, "kubernetes", &s, &e) == 0);
	o = hclbspec_service_json(&s, &s.ports[0], 0);
	CHECK(jsonx_int(o, "", "listen_port", 0, 65535, JSONX_REQUIRED, &n, &e) == 0 && n == 80);
	CHECK(jsonx_int(o, "", "destination_port", 0, 65535, JSONX_REQUIRED, &n, &e) == 0 &&
	    n == 30080);
	CHECK(json_object_get_boolean(json_object_object_get(o, "proxyprotocol")));
	/* without health-check annotations: TCP on the node port */
	hc = json_object_object_get(o, "health_check");
	CHECK_STR(json_object_get_string(json_object_object_get(hc, "protocol")), "tcp");
	CHECK(json_object_get_int64(json_object_object_get(hc, "port")) == 30080);
	CHECK(json_object_object_get(o, "http") == NULL);
	json_object_put(o);
	hclbspec_free(&s);
}

TEST_MAIN()
