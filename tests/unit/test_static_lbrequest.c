/* test_static_lbrequest.c - what a Service asks of the static provider: the
 * precedence of the requested addresses, pools and sharing keys over
 * bootccm's, MetalLB's two generations and kube-vip's annotations and
 * spec.loadBalancerIP; kube-vip's annotation as output; the families from
 * ipFamilies and ipFamilyPolicy; the holdings, ports, policy and selector;
 * malformed requests named by Service and field. */
#include <stdio.h>
#include <string.h>

#include "../../providers/static/lbrequest.h"
#include "cloud.h"
#include "base/err.h"
#include "harness.h"

struct tsvc {
	struct cloud_service s;
	struct cloud_kv ann[8];
	struct cloud_kv sel[4];
	struct cloud_lb_port ports[4];
	struct cloud_lb_status status;
	const char *families[2];
};

static void
tsvc_init(struct tsvc *t)
{
	memset(t, 0, sizeof(*t));
	t->s.namespace_ = "web";
	t->s.name = "front";
	t->s.creation_timestamp = 1700000000;
	t->s.annotations = t->ann;
	t->s.selector = t->sel;
	t->s.ports = t->ports;
	t->s.status = &t->status;
	t->s.ip_families = t->families;
	t->s.type = "LoadBalancer";
	t->s.served = 1;
}

static void
ann(struct tsvc *t, const char *k, const char *v)
{
	t->ann[t->s.n_annotations].key = k;
	t->ann[t->s.n_annotations++].value = v;
}

/* build returns the first requested address ("" for none) after building. */
static int
build(struct tsvc *t, int kube_vip, struct lbrequest *r, struct errbuf *e)
{
	e->msg[0] = '\0';
	return lbrequest_build(&t->s, kube_vip, r, e);
}

TEST(requested_addresses_by_precedence)
{
	static const char *const keys[] = {
		"bootccm.io/load-balancer-ips",
		"metallb.io/loadBalancerIPs",
		"metallb.universe.tf/loadBalancerIPs",
		"kube-vip.io/loadbalancerIPs",
	};
	struct lbrequest r;
	struct errbuf e;
	struct tsvc t;

	/* each source in turn is the first set; the ones after it lose */
	for (size_t first = 0; first < 4; first++) {
		char want[32];
		tsvc_init(&t);
		t.s.load_balancer_ip = "192.0.2.99";
		for (size_t i = 4; i-- > first;) {
			static char vals[4][32];
			snprintf(vals[i], sizeof(vals[i]), "192.0.2.%zu", i + 1);
			ann(&t, keys[i], vals[i]);
		}
		CHECK(build(&t, 0, &r, &e) == 0);
		snprintf(want, sizeof(want), "192.0.2.%zu", first + 1);
		CHECK(r.svc.n_requested == 1);
		CHECK_STR(r.svc.requested[0], want);
		CHECK(strstr(r.ips_from, keys[first]) != NULL);
		lbrequest_free(&r);
	}
	/* spec.loadBalancerIP last */
	tsvc_init(&t);
	t.s.load_balancer_ip = "192.0.2.99";
	ann(&t, "example.com/other", "192.0.2.1");
	CHECK(build(&t, 0, &r, &e) == 0);
	CHECK_STR(r.svc.requested[0], "192.0.2.99");
	CHECK_STR(r.ips_from, "spec.loadBalancerIP");
	lbrequest_free(&r);
	/* an empty annotation asks for nothing: the next one counts */
	tsvc_init(&t);
	ann(&t, "bootccm.io/load-balancer-ips", " ");
	ann(&t, "metallb.io/loadBalancerIPs", "192.0.2.2");
	CHECK(build(&t, 0, &r, &e) == 0);
	CHECK_STR(r.svc.requested[0], "192.0.2.2");
	lbrequest_free(&r);
	/* nothing asked */
	tsvc_init(&t);
	CHECK(build(&t, 0, &r, &e) == 0);
	CHECK(r.svc.n_requested == 0 && r.ips_from[0] == '\0');
	lbrequest_free(&r);
}

/* With kubeVipAnnotation the annotation is the provider's output: never a
 * request, so spec.loadBalancerIP (or nothing) counts instead. */
TEST(kube_vip_annotation_is_output_when_written)
{
	struct lbrequest r;
	struct errbuf e;
	struct tsvc t;

	tsvc_init(&t);
	ann(&t, "kube-vip.io/loadbalancerIPs", "192.0.2.4");
	CHECK(build(&t, 1, &r, &e) == 0);
	CHECK(r.svc.n_requested == 0);
	lbrequest_free(&r);
	t.s.load_balancer_ip = "192.0.2.5";
	CHECK(build(&t, 1, &r, &e) == 0);
	CHECK_STR(r.svc.requested[0], "192.0.2.5");
	lbrequest_free(&r);
	CHECK(build(&t, 0, &r, &e) == 0);  /* read, for migration, when not written */
	CHECK_STR(r.svc.requested[0], "192.0.2.4");
	lbrequest_free(&r);
	CHECK(lbrequest_annotation(&t.s, "kube-vip.io/loadbalancerIPs") != NULL);
	CHECK(lbrequest_annotation(&t.s, "kube-vip.io/other") == NULL);
}

TEST(pools_and_sharing_keys_by_precedence)
{
	struct lbrequest r;
	struct errbuf e;
	struct tsvc t;

	tsvc_init(&t);
	ann(&t, "metallb.universe.tf/address-pool", "old");
	ann(&t, "metallb.universe.tf/allow-shared-ip", "k-old");
	CHECK(build(&t, 0, &r, &e) == 0);
	CHECK_STR(r.svc.pool, "old");
	CHECK_STR(r.svc.sharing_key, "k-old");
	lbrequest_free(&r);
	ann(&t, "metallb.io/address-pool", "new");
	ann(&t, "metallb.io/allow-shared-ip", "k-new");
	CHECK(build(&t, 0, &r, &e) == 0);
	CHECK_STR(r.svc.pool, "new");
	CHECK_STR(r.svc.sharing_key, "k-new");
	lbrequest_free(&r);
	ann(&t, "bootccm.io/pool", "ours");
	ann(&t, "bootccm.io/allow-shared-ip", "k-ours");
	CHECK(build(&t, 0, &r, &e) == 0);
	CHECK_STR(r.svc.pool, "ours");
	CHECK_STR(r.svc.sharing_key, "k-ours");
	lbrequest_free(&r);
	tsvc_init(&t);
	CHECK(build(&t, 0, &r, &e) == 0);
	CHECK(r.svc.pool == NULL && r.svc.sharing_key == NULL);
	lbrequest_free(&r);
}

TEST(families_from_ip_families_and_policy)
{
	struct lbrequest r;
	struct errbuf e;
	struct tsvc t;

	tsvc_init(&t);
	t.families[0] = "IPv6";
	t.families[1] = "IPv4";
	t.s.n_ip_families = 2;
	t.s.ip_family_policy = "RequireDualStack";
	CHECK(build(&t, 0, &r, &e) == 0);
	CHECK(r.svc.n_families == 2 && r.svc.families[0] == 6 && r.svc.families[1] == 4);
	CHECK(r.svc.policy == IPAM_REQUIRE_DUAL_STACK);
	lbrequest_free(&r);
	t.s.ip_family_policy = "PreferDualStack";
	CHECK(build(&t, 0, &r, &e) == 0);
	CHECK(r.svc.policy == IPAM_PREFER_DUAL_STACK);
	lbrequest_free(&r);
	t.s.ip_family_policy = NULL;  /* the API server's default */
	CHECK(build(&t, 0, &r, &e) == 0);
	CHECK(r.svc.policy == IPAM_SINGLE_STACK);
	lbrequest_free(&r);
	/* without ipFamilies: the requested addresses', else IPv4 */
	t.s.n_ip_families = 0;
	ann(&t, "bootccm.io/load-balancer-ips", "2001:db8::5, 192.0.2.5");
	CHECK(build(&t, 0, &r, &e) == 0);
	CHECK(r.svc.n_requested == 2);
	CHECK_STR(r.svc.requested[0], "2001:db8::5");
	CHECK_STR(r.svc.requested[1], "192.0.2.5");
	CHECK(r.svc.n_families == 2 && r.svc.families[0] == 6 && r.svc.families[1] == 4);
	lbrequest_free(&r);
	tsvc_init(&t);
	CHECK(build(&t, 0, &r, &e) == 0);
	CHECK(r.svc.n_families == 1 && r.svc.families[0] == 4);
	lbrequest_free(&r);
	/* faults */
	t.s.ip_family_policy = "DualStack";
	CHECK(build(&t, 0, &r, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "service web/front: spec.ipFamilyPolicy \"DualStack\": want "
	    "SingleStack, PreferDualStack or RequireDualStack");
	lbrequest_free(&r);
	t.s.ip_family_policy = NULL;
	t.families[0] = "IPv5";
	t.s.n_ip_families = 1;
	CHECK(build(&t, 0, &r, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "service web/front: spec.ipFamilies[0] \"IPv5\": want IPv4 or IPv6");
	CHECK(r.svc.n_families == 1);  /* still usable for observing */
	lbrequest_free(&r);
	t.families[0] = t.families[1] = "IPv4";
	t.s.n_ip_families = 2;
	CHECK(build(&t, 0, &r, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "lists IPv4 twice");
	lbrequest_free(&r);
}

/* A malformed request is named with its Service and source; the Service's
 * holdings are still read, so they keep counting as taken. */
TEST(malformed_requests)
{
	static const struct {
		const char *v;
		const char *msg;
	} bad[] = {
		{ "192.0.2.300", "service web/front: annotation bootccm.io/load-balancer-ips "
		  "\"192.0.2.300\": \"192.0.2.300\" is not an IP address" },
		{ "192.0.2.1,192.0.2.2", "service web/front: annotation "
		  "bootccm.io/load-balancer-ips \"192.0.2.1,192.0.2.2\": more than one address "
		  "per family" },
		{ "192.0.2.1,2001:db8::1,192.0.2.3", "more than one address per family" },
		{ "192.0.2.1,", "want IP addresses, comma-separated, one per family" },
		{ "192.0.2.1/32", "\"192.0.2.1/32\" is not an IP address" },
	};
	struct lbrequest r;
	struct errbuf e;
	struct tsvc t;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tsvc_init(&t);
		snprintf(t.status.ingress[0].ip, sizeof(t.status.ingress[0].ip), "192.0.2.7");
		t.status.n_ingress = 1;
		ann(&t, "bootccm.io/load-balancer-ips", bad[i].v);
		CHECK(build(&t, 0, &r, &e) == ERR_INVALID);
		CHECK_CONTAINS(e.msg, bad[i].msg);
		CHECK(r.svc.n_requested == 0);
		CHECK(r.svc.n_held == 1);
		CHECK_STR(r.svc.held[0], "192.0.2.7");
		lbrequest_free(&r);
	}
	tsvc_init(&t);
	t.s.load_balancer_ip = "nope";
	CHECK(build(&t, 0, &r, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "service web/front: spec.loadBalancerIP \"nope\": \"nope\" is not an "
	    "IP address");
	lbrequest_free(&r);
}

TEST(holdings_ports_policy_and_selector)
{
	struct lbrequest r, r2;
	struct errbuf e;
	struct tsvc t;

	tsvc_init(&t);
	snprintf(t.status.ingress[0].hostname, sizeof(t.status.ingress[0].hostname), "lb.example");
	snprintf(t.status.ingress[1].ip, sizeof(t.status.ingress[1].ip), "192.0.2.8");
	snprintf(t.status.ingress[2].ip, sizeof(t.status.ingress[2].ip), "2001:db8::8");
	t.status.n_ingress = 3;
	t.ports[0] = (struct cloud_lb_port){ "http", "TCP", 80, 30080, NULL };
	t.ports[1] = (struct cloud_lb_port){ "dns", "UDP", 53, 30053, NULL };
	t.ports[2] = (struct cloud_lb_port){ "x", NULL, 8080, 0, NULL };
	t.s.n_ports = 3;
	t.s.external_traffic_policy = "Local";
	t.sel[0] = (struct cloud_kv){ "tier", "web" };
	t.sel[1] = (struct cloud_kv){ "app", "shop" };
	t.s.n_selector = 2;
	CHECK(build(&t, 0, &r, &e) == 0);
	CHECK_STR(r.svc.key, "web/front");
	CHECK_STR(r.svc.namespace, "web");
	CHECK(r.svc.created == 1700000000 && r.svc.served == 1);
	CHECK(r.svc.n_held == 2);  /* hostnames are no addresses */
	CHECK_STR(r.svc.held[0], "192.0.2.8");
	CHECK_STR(r.svc.held[1], "2001:db8::8");
	CHECK(r.svc.n_ports == 3);
	CHECK(r.svc.ports[1].port == 53);
	CHECK_STR(r.svc.ports[1].protocol, "UDP");
	CHECK_STR(r.svc.ports[2].protocol, "TCP");  /* the API server's default */
	CHECK(r.svc.etp_local == 1);
	CHECK_STR(r.svc.selector, "app=shop,tier=web");
	/* the same selector in another order reads the same */
	t.sel[0] = (struct cloud_kv){ "app", "shop" };
	t.sel[1] = (struct cloud_kv){ "tier", "web" };
	t.s.external_traffic_policy = "Cluster";
	CHECK(build(&t, 0, &r2, &e) == 0);
	CHECK_STR(r2.svc.selector, r.svc.selector);
	CHECK(r2.svc.etp_local == 0);
	lbrequest_free(&r);
	lbrequest_free(&r2);
}

/* An annotation left out for a NUL: the request is refused naming it when
 * it is one the static provider reads (addresses, pool, sharing key), and
 * built as usual (its key and holdings filled) when it is not. */
TEST(nul_annotations)
{
	static const char *const read[] = { "metallb.io/address-pool" };
	static const char *const unread[] = { "example.com/note" };
	struct tsvc t;
	struct lbrequest r;
	struct errbuf e;

	tsvc_init(&t);
	t.s.nul_annotations = unread;
	t.s.n_nul_annotations = 1;
	CHECK(build(&t, 0, &r, &e) == 0);
	lbrequest_free(&r);
	t.s.nul_annotations = read;
	CHECK(build(&t, 0, &r, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "Service web/front: annotation metallb.io/address-pool holds a NUL "
	    "character, which bootccm cannot read");
	CHECK_STR(r.key, "web/front");
	lbrequest_free(&r);
}

TEST_MAIN()
