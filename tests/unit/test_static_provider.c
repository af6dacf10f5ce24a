/* test_static_provider.c - the `static` provider through the provider
 * interface, as the daemon and the controllers call it: its cloud-config
 * (every fault as FILE:line:col, overlapping pools naming both), instances
 * with and without authoritative (what may and may not delete a Node), the
 * inventory re-read with health reports, load balancers driven through
 * observe / ensure / ensure_deleted / get / verify exactly as the service
 * controller will (a quiet restart, exhaustion then freeing, the kube-vip
 * annotation, drift, families, the contract's messages), the pool metrics,
 * and threads at once. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../providers/static/static.h"
#include "cloud.h"
#include "base/err.h"
#include "harness.h"
#include "base/metrics.h"
#include "base/netaddr.h"

static char dir[] = "/tmp/test_static_provider.XXXXXX";
static char cfg_path[sizeof(dir) + 32], inv_path[sizeof(dir) + 32];

/* put writes name in the test directory (a new file renamed over the old
 * one, as an installer should) and returns its path. */
static const char *
put(const char *name, const char *text)
{
	static char p[sizeof(dir) + 64];
	char tmp[sizeof(p) + 8];
	FILE *f;

	if (cfg_path[0] == '\0') {
		if (mkdtemp(dir) == NULL)
			abort();
		snprintf(cfg_path, sizeof(cfg_path), "%s/cloud.yaml", dir);
		snprintf(inv_path, sizeof(inv_path), "%s/inventory.yaml", dir);
	}
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	if ((f = fopen(tmp, "w")) == NULL)
		abort();
	fputs(text, f);
	fclose(f);
	if (rename(tmp, p) < 0)
		abort();
	return p;
}

/* start writes the cloud-config and inits the provider. */
static int
start(const char *config, void **ret, struct errbuf *e)
{
	struct cloud_config cc = { .node_name = "cp-1", .config_path = put("cloud.yaml", config) };

	e->msg[0] = '\0';
	*ret = NULL;
	return static_provider.init(&cc, ret, e);
}

/* --- the cloud-config --------------------------------------------------------- */

static const char inventory[] =
    "instances:\n"
    "  - name: worker-1\n"
    "    addresses: [{type: InternalIP, address: 10.0.0.11}]\n"
    "    zone: rack-1\n"
    "    region: dc-1\n"
    "    instanceType: r640\n"
    "    labels: {example.com/pool: gpu}\n"
    "  - name: worker-2\n"
    "    shutdown: true\n";

TEST(config_faults_name_file_line_col)
{
	static const struct {
		const char *yaml;
		const char *msg;      /* after "CONFIG:" */
	} bad[] = {
		{ "static:\n  pool: []\n", "2:3: unknown key \"pool\" in static" },
		{ "static:\n  pools:\n    - name: a\n      addresses: [192.0.2.1/28]\n",
		  "4:19: key \"addresses\" in static.pools[0]: \"192.0.2.1/28\" is not a network "
		  "in CIDR notation (host bits must be zero)" },
		{ "static:\n  pools:\n    - name: a\n      addresses:\n        - 10.0.0.0/24\n"
		  "        - 10.1.0.9-10.1.0.1\n", "6:11: key \"addresses\" in static.pools[0]: "
		  "\"10.1.0.9-10.1.0.1\" ends before it starts" },
		{ "static:\n  pools:\n    - name: a\n      addresses: [192.0.2.7]\n",
		  "4:19: key \"addresses\" in static.pools[0]: \"192.0.2.7\" is one address: "
		  "write it as 192.0.2.7/32" },
		{ "static:\n  pools:\n    - name: public\n      addresses: [192.0.2.0/28]\n"
		  "    - name: private\n      addresses: [10.0.0.0/8, 192.0.2.10-192.0.2.20]\n",
		  "5:7: static.pools[1]: pools \"public\" and \"private\" overlap" },
		{ "static:\n  pools:\n    - name: a\n      addresses: [10.0.0.0/24]\n"
		  "    - name: a\n      addresses: [10.1.0.0/24]\n",
		  "5:7: static.pools[1]: two pools are named \"a\"" },
		{ "static:\n  pools:\n    - name: a\n      addresses: []\n",
		  "3:7: static.pools[0]: no addresses" },
		{ "static:\n  pools:\n    - addresses: [10.0.0.0/24]\n",
		  "3:7: missing required key \"name\" in static.pools[0]" },
		{ "static:\n  pools:\n    - name: \"my pool\"\n      addresses: [10.0.0.0/24]\n",
		  "3:13: key \"name\" in static.pools[0]: \"my pool\" is not a pool name" },
		{ "static:\n  pools:\n    - name: a\n      addresses: [10.0.0.0/24]\n"
		  "      namespaces: [Team-A]\n", "5:20: key \"namespaces\" in static.pools[0]: "
		  "\"Team-A\" is not a namespace name" },
		{ "static:\n  pools:\n    - name: a\n      addresses: [10.0.0.0/24]\n"
		  "      autoAssign: sometimes\n", "5:19: key \"autoAssign\" in static.pools[0]: "
		  "want a boolean" },
		{ "static:\n  kubeVipAnnotation: 1\n", "2:22: key \"kubeVipAnnotation\" in "
		  "static: want a boolean" },
		{ "static:\n  authoritative: true\n", " static.authoritative is true without "
		  "static.inventory" },
		{ "static: [a]\n", "1:9: key \"static\" in the top level: want a map" },
	};
	struct errbuf e;
	char want[ERRBUF_MAX];
	void *st;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = start(bad[i].yaml, &st, &e);
		snprintf(want, sizeof(want), "%s:%s", cfg_path, bad[i].msg);
		if (r != ERR_INVALID || strncmp(e.msg, want, strlen(want)) != 0)
			fprintf(stderr, "  case %zu: %d %s\n", i, r, e.msg);
		CHECK(r == ERR_INVALID);
		CHECK(strncmp(e.msg, want, strlen(want)) == 0);
		CHECK(st == NULL);
	}
}

TEST(config_inventory_faults_at_start)
{
	struct errbuf e;
	void *st;

	/* relative to the cloud-config's directory; missing */
	unlink(inv_path);
	CHECK(start("static:\n  inventory: inventory.yaml\n", &st, &e) == ERR_IO);
	CHECK_CONTAINS(e.msg, "cloud.yaml: static.inventory: ");
	CHECK_CONTAINS(e.msg, "/inventory.yaml: No such file or directory");
	/* broken: nothing good to keep yet, so init fails naming its line */
	put("inventory.yaml", "instances:\n  - name: a\n  - name: A\n");
	CHECK(start("static:\n  inventory: inventory.yaml\n", &st, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "inventory.yaml:3:11: key \"name\" in instances[1]");
	CHECK(st == NULL);
}

/* No pools: the provider serves no Service (another implementation may);
 * no inventory: every node is known only by what its kubelet reported. */
TEST(empty_config_serves_no_load_balancer)
{
	static const struct cloud_kv labels[] = { { CLOUD_LABEL_ZONE, "z1" } };
	struct cloud_node node = { .name = "w", .labels = labels, .n_labels = 1 };
	struct cloud_instance_metadata m;
	struct cloud_service svc = { .namespace_ = "ns", .name = "s", .served = 1 };
	struct cloud_lb_result res;
	struct cloud_lb_status status;
	struct errbuf e;
	int exists = 7;
	void *st;

	CHECK(start("", &st, &e) == 0);
	CHECK(static_provider.instances->exists(st, &node, &exists, &e) == ERR_NOT_IMPLEMENTED);
	CHECK(exists == 7);
	CHECK(static_provider.instances->metadata(st, &node, &m, &e) == 0);
	CHECK_STR(m.source, CLOUD_SOURCE_KUBELET);
	CHECK_STR(m.zone, "z1");
	CHECK(static_provider.load_balancers->observe(st, "ns/s", &svc) == 0);
	CHECK(static_provider.load_balancers->ensure(st, "kubernetes", &svc, NULL, 0, &res,
	    &e) == ERR_IMPLEMENTED_ELSEWHERE);
	CHECK_CONTAINS(e.msg, "service ns/s: the static provider has no pools");
	CHECK(static_provider.load_balancers->get(st, "kubernetes", &svc, &status, &exists,
	    &e) == 0);
	CHECK(exists == 0);
	CHECK(static_provider.load_balancers->ensure_deleted(st, "kubernetes", &svc, &res,
	    &e) == 0);
	CHECK(res.n_annotations == 0);
	CHECK(static_provider.health(st, &e) == 0);
	static_provider.free(st);
}

/* --- instances -------------------------------------------------------------------- */

TEST(instances_from_the_inventory)
{
	struct cloud_node w1 = { .name = "worker-1" };
	struct cloud_node w2 = { .name = "w2.example", .provider_id = "static://worker-2" };
	struct cloud_instance_metadata m;
	struct errbuf e;
	int v = -1;
	void *st;

	put("inventory.yaml", inventory);
	CHECK(start("static:\n  inventory: inventory.yaml\n", &st, &e) == 0);
	CHECK(static_provider.instances->exists(st, &w1, &v, &e) == 0 && v == 1);
	CHECK(static_provider.instances->shutdown(st, &w1, &v, &e) == 0 && v == 0);
	CHECK(static_provider.instances->shutdown(st, &w2, &v, &e) == 0 && v == 1);
	CHECK(static_provider.instances->metadata(st, &w1, &m, &e) == 0);
	CHECK_STR(m.source, CLOUD_SOURCE_INVENTORY);
	CHECK_STR(m.provider_id, "static://worker-1");
	CHECK_STR(m.zone, "rack-1");
	CHECK_STR(m.region, "dc-1");
	CHECK_STR(m.instance_type, "r640");
	CHECK(m.n_addresses == 1 && m.addresses[0].type == CLOUD_ADDR_INTERNAL_IP);
	CHECK_STR(m.addresses[0].address, "10.0.0.11");
	CHECK(m.n_labels == 1);
	CHECK_STR(m.labels[0].key, "example.com/pool");
	CHECK(static_provider.instances->metadata(st, &w2, &m, &e) == 0);
	CHECK_STR(m.provider_id, "static://worker-2");
	CHECK(m.n_addresses == 0);
	/* an entry without addresses takes those its kubelet reported */
	static const struct cloud_kv ip[] = { { CLOUD_PROVIDED_NODE_IP, "10.0.0.12,fd00::12" } };
	w2.annotations = ip;
	w2.n_annotations = 1;
	CHECK(static_provider.instances->metadata(st, &w2, &m, &e) == 0);
	CHECK_STR(m.source, CLOUD_SOURCE_INVENTORY);
	CHECK(m.n_addresses == 2 && m.addresses[1].type == CLOUD_ADDR_INTERNAL_IP);
	CHECK_STR(m.addresses[1].address, "fd00::12");
	static const struct cloud_kv bad[] = { { CLOUD_PROVIDED_NODE_IP, "10.0.0.300" } };
	w2.annotations = bad;
	CHECK(static_provider.instances->metadata(st, &w2, &m, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "node w2.example: annotation alpha.kubernetes.io/provided-node-ip");
	/* ... but one with addresses keeps its own */
	w1.annotations = ip;
	w1.n_annotations = 1;
	CHECK(static_provider.instances->metadata(st, &w1, &m, &e) == 0);
	CHECK(m.n_addresses == 1);
	CHECK_STR(m.addresses[0].address, "10.0.0.11");
	static_provider.free(st);
}

struct listed {
	char ids[4][CLOUD_ID_MAX];
	size_t n;
};

static int
list_cb(const struct cloud_instance_metadata *m, void *arg)
{
	struct listed *l = arg;

	if (l->n == 4)
		return ERR_TOO_LARGE;
	snprintf(l->ids[l->n++], sizeof(l->ids[0]), "%s", m->provider_id);
	return 0;
}

static int
stop_cb(const struct cloud_instance_metadata *m, void *arg)
{
	(void)m;
	(void)arg;
	return ERR_CANCELED;
}

TEST(list_walks_the_inventory)
{
	struct listed l = { .n = 0 };
	struct errbuf e;
	void *st;

	put("inventory.yaml", inventory);
	CHECK(start("static:\n  inventory: inventory.yaml\n", &st, &e) == 0);
	CHECK(static_provider.instances->list(st, list_cb, &l, &e) == 0);
	CHECK(l.n == 2);
	CHECK_STR(l.ids[0], "static://worker-1");
	CHECK_STR(l.ids[1], "static://worker-2");
	CHECK(static_provider.instances->list(st, stop_cb, NULL, &e) == ERR_CANCELED);
	static_provider.free(st);
}

/* Without authoritative, absence is no answer: nothing the provider says
 * about an absent node may delete it, and its metadata is what its kubelet
 * reported. With it, absence is "not found", which may. */
TEST(authoritative_or_not)
{
	static const struct cloud_kv ann[] = { { CLOUD_PROVIDED_NODE_IP, "10.0.0.99" } };
	struct cloud_node gone = { .name = "worker-9", .annotations = ann, .n_annotations = 1 };
	struct cloud_instance_metadata m;
	struct errbuf e;
	int v = -1, r;
	void *st;

	put("inventory.yaml", inventory);
	CHECK(start("static:\n  inventory: inventory.yaml\n", &st, &e) == 0);
	r = static_provider.instances->exists(st, &gone, &v, &e);
	CHECK(r == ERR_NOT_IMPLEMENTED && v == -1);
	CHECK_CONTAINS(e.msg, "node worker-9: not in the inventory");
	CHECK(!cloud_err_allows_delete(r, &static_provider));
	CHECK(static_provider.instances->shutdown(st, &gone, &v, &e) == ERR_NOT_IMPLEMENTED);
	CHECK(static_provider.instances->metadata(st, &gone, &m, &e) == 0);
	CHECK_STR(m.source, CLOUD_SOURCE_KUBELET);
	CHECK(m.n_addresses == 1);
	CHECK_STR(m.addresses[0].address, "10.0.0.99");
	static_provider.free(st);

	CHECK(start("static:\n  inventory: inventory.yaml\n  authoritative: true\n", &st,
	    &e) == 0);
	r = static_provider.instances->exists(st, &gone, &v, &e);
	CHECK(r == ERR_NOT_FOUND && v == -1);
	CHECK_CONTAINS(e.msg, "node worker-9: not in the inventory ");
	CHECK_CONTAINS(e.msg, "inventory.yaml, which is authoritative");
	CHECK(cloud_err_allows_delete(r, &static_provider));
	CHECK(static_provider.instances->shutdown(st, &gone, &v, &e) == ERR_NOT_FOUND);
	CHECK(static_provider.instances->metadata(st, &gone, &m, &e) == ERR_NOT_FOUND);
	struct cloud_node w1 = { .name = "worker-1" };
	CHECK(static_provider.instances->exists(st, &w1, &v, &e) == 0 && v == 1);
	static_provider.free(st);
}

/* The inventory re-read through the provider: health names the broken
 * file's line while the last good one answers, then recovers. */
TEST(inventory_reload_and_health)
{
	struct cloud_node w1 = { .name = "worker-1" }, w3 = { .name = "worker-3" };
	struct cloud_instance_metadata m;
	struct errbuf e;
	int v = -1;
	void *st;

	put("inventory.yaml", inventory);
	CHECK(start("static:\n  inventory: inventory.yaml\n  authoritative: true\n", &st,
	    &e) == 0);
	static_set_inventory_interval(st, 0);
	CHECK(static_provider.health(st, &e) == 0);
	put("inventory.yaml", "instances:\n  - name: worker-1\n    zone: [x]\n");
	CHECK(static_provider.health(st, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "inventory.yaml:3:11: key \"zone\" in instances[0]: want a "
	    "string");
	/* the last good inventory answers, authoritative as before */
	CHECK(static_provider.instances->metadata(st, &w1, &m, &e) == 0);
	CHECK_STR(m.zone, "rack-1");
	CHECK(static_provider.instances->exists(st, &w3, &v, &e) == ERR_NOT_FOUND);
	put("inventory.yaml", "instances:\n  - name: worker-3\n    zone: rack-3\n");
	CHECK(static_provider.health(st, &e) == 0);
	CHECK(static_provider.instances->exists(st, &w3, &v, &e) == 0 && v == 1);
	CHECK(static_provider.instances->exists(st, &w1, &v, &e) == ERR_NOT_FOUND);
	static_provider.free(st);
}

/* --- load balancers, driven as the service controller drives them ---------------- */

struct tsvc {
	struct cloud_service s;
	char ns[64], name[64], key[160];
	struct cloud_kv ann[6];
	struct cloud_lb_port ports[2];
	struct cloud_lb_status status;
	const char *families[2];
};

static void
tsvc_init(struct tsvc *t, const char *ns, const char *name, int64_t created)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->ns, sizeof(t->ns), "%s", ns);
	snprintf(t->name, sizeof(t->name), "%s", name);
	snprintf(t->key, sizeof(t->key), "%s/%s", ns, name);
	t->s.namespace_ = t->ns;
	t->s.name = t->name;
	t->s.creation_timestamp = created;
	t->s.annotations = t->ann;
	t->s.type = "LoadBalancer";
	t->s.ports = t->ports;
	t->ports[0] = (struct cloud_lb_port){ "http", "TCP", 80, 30080, NULL };
	t->s.n_ports = 1;
	t->s.status = &t->status;
	t->families[0] = "IPv4";
	t->s.ip_families = t->families;
	t->s.n_ip_families = 1;
	t->s.ip_family_policy = "SingleStack";
	t->s.served = 1;
}

static void
tsvc_ann(struct tsvc *t, const char *k, const char *v)
{
	t->ann[t->s.n_annotations].key = k;
	t->ann[t->s.n_annotations++].value = v;
}

/* tsvc_apply writes a result into the Service as the controller does (the
 * status; the annotations, here only kube-vip's). */
static void
tsvc_apply(struct tsvc *t, const struct cloud_lb_result *r)
{
	static char vip[64][CLOUD_LB_ANNOTATION_VALUE_MAX];
	static int n;

	t->status = r->status;
	for (size_t i = 0; i < r->n_annotations; i++) {
		size_t j;
		for (j = 0; j < t->s.n_annotations && strcmp(t->ann[j].key, r->annotations[i].key);
		    j++)
			;
		if (r->annotations[i].remove) {
			if (j < t->s.n_annotations)
				t->ann[j] = t->ann[--t->s.n_annotations];
			continue;
		}
		snprintf(vip[n % 64], sizeof(vip[0]), "%s", r->annotations[i].value);
		t->ann[j].key = "kube-vip.io/loadbalancerIPs";
		t->ann[j].value = vip[n++ % 64];
		if (j == t->s.n_annotations)
			t->s.n_annotations++;
	}
}

static int
ensure(void *st, struct tsvc *t, struct cloud_lb_result *r, struct errbuf *e)
{
	e->msg[0] = '\0';
	memset(r, 0, sizeof(*r));
	return static_provider.load_balancers->ensure(st, "kubernetes", &t->s, NULL, 0, r, e);
}

/* verify: the provider's verify of the first n of svcs (an array, seen
 * through cloud_services_of). */
static int
verify(void *st, const struct cloud_service *const *svcs, size_t n, unsigned char *drifted,
    struct errbuf *e)
{
	struct cloud_services s = cloud_services_of(svcs, n);

	return static_provider.load_balancers->verify(st, "kubernetes", &s, NULL, 0, drifted, e);
}

static int
observe(void *st, struct tsvc *t)
{
	return static_provider.load_balancers->observe(st, t->key, t ? &t->s : NULL);
}

/* metric reads bootccm_lb_pool_addresses{pool,family,state} from the
 * rendered registry; -1 when the series is not there. */
static double
metric(const char *pool, const char *family, const char *state)
{
	char want[256], *out = NULL, *p;
	size_t len;
	double v = -1;

	snprintf(want, sizeof(want), "bootccm_lb_pool_addresses{pool=\"%s\",family=\"%s\","
	    "state=\"%s\"} ", pool, family, state);
	if (metrics_render(&out, &len) < 0)
		return -2;
	if ((p = strstr(out, want)) != NULL)
		v = strtod(p + strlen(want), NULL);
	free(out);
	return v;
}

static char warned[4][512];
static size_t n_warned;

static void
warn_cb(const char *msg)
{
	if (n_warned < 4)
		snprintf(warned[n_warned], sizeof(warned[0]), "%s", msg);
	n_warned++;
}

/* A pool of a whole family is allowed (the contract does not refuse it), with
 * a warning at load naming the file, the pool and the entry; its free count
 * is what it holds (2^32 - 2, 2^128), not a saturated 2^64 - 1. */
TEST(huge_pools_are_accepted_with_a_warning_and_counted)
{
	struct cloud_config cc = { .node_name = "cp-1", .warn = warn_cb };
	struct cloud_service svc = { .namespace_ = "ns", .name = "big", .uid = "u-big",
	    .served = 1 };
	struct cloud_lb_result res;
	struct errbuf e = { "" };
	void *st = NULL;

	cc.config_path = put("cloud.yaml",
	    "static:\n"
	    "  pools:\n"
	    "    - name: all4\n"
	    "      addresses: [0.0.0.0/0]\n"
	    "    - name: fine6\n"
	    "      addresses: [\"2001:db8::/64\"]\n");
	n_warned = 0;
	if (static_provider.init(&cc, &st, &e) < 0)
		fprintf(stderr, "  %s\n", e.msg);
	CHECK(st != NULL);
	CHECK(n_warned == 1);
	CHECK_CONTAINS(warned[0], "cloud.yaml:3:7: static.pools[0] \"all4\": 0.0.0.0/0 holds "
	    "half or more of all IPv4 addresses");
	CHECK(static_provider.load_balancers->observe(st, "ns/big", &svc) == 0);
	CHECK(static_provider.load_balancers->ensure(st, "kubernetes", &svc, NULL, 0, &res,
	    &e) == 0);
	CHECK(metric("all4", "IPv4", "used") == 1);
	CHECK(metric("all4", "IPv4", "free") == 4294967293.0);
	CHECK(metric("fine6", "IPv6", "free") == 18446744073709551616.0);  /* 2^64 */
	static_provider.free(st);
	st = NULL;
	cc.config_path = put("cloud.yaml",
	    "static:\n"
	    "  pools:\n"
	    "    - name: fine4\n"
	    "      addresses: [192.0.2.0/24]\n"
	    "    - name: all6\n"
	    "      addresses: [\"::/0\"]\n");
	n_warned = 0;
	CHECK(static_provider.init(&cc, &st, &e) == 0);
	CHECK(n_warned == 1);
	CHECK_CONTAINS(warned[0], "static.pools[1] \"all6\": ::/0 holds half or more of all "
	    "IPv6");
	CHECK(metric("all6", "IPv6", "free") == 340282366920938463463374607431768211456.0);
	CHECK(metric("fine4", "IPv4", "free") == 254);
	static_provider.free(st);
	/* no callback: accepted all the same */
	cc.warn = NULL;
	CHECK(static_provider.init(&cc, &st, &e) == 0);
	static_provider.free(st);
}

static const char pools2[] =
    "static:\n"
    "  pools:\n"
    "    - name: small\n"
    "      addresses: [192.0.2.0/30]\n"   /* .1 and .2 */
    "    - name: v6\n"
    "      addresses: [\"2001:db8::10-2001:db8::11\"]\n"
    "    - name: manual\n"
    "      addresses: [203.0.113.5-203.0.113.6]\n"
    "      autoAssign: false\n";

/* A restart: every Service observed first, from its status, then ensured:
 * the same addresses, and the statuses the controller would compare equal
 * (ipMode VIP, the API server's default), so nothing is written. A foreign
 * class's address counts as taken. */
TEST(restart_is_quiet_and_foreign_addresses_are_taken)
{
	struct tsvc a, b, foreign, c;
	struct cloud_lb_result r;
	struct errbuf e;
	void *st;

	CHECK(start(pools2, &st, &e) == 0);
	tsvc_init(&a, "ns", "a", 100);
	snprintf(a.status.ingress[0].ip, sizeof(a.status.ingress[0].ip), "192.0.2.2");
	a.status.n_ingress = 1;
	tsvc_init(&foreign, "other", "lb", 50);
	foreign.s.served = 0;
	foreign.s.load_balancer_class = "example.com/other";
	snprintf(foreign.status.ingress[0].ip, sizeof(foreign.status.ingress[0].ip),
	    "192.0.2.1");
	foreign.status.n_ingress = 1;
	tsvc_init(&b, "ns", "b", 200);
	CHECK(observe(st, &a) == 0);
	CHECK(observe(st, &foreign) == 0);
	CHECK(observe(st, &b) == 0);
	CHECK(metric("small", "IPv4", "used") == 2);
	CHECK(metric("small", "IPv4", "free") == 0);
	CHECK(ensure(st, &a, &r, &e) == 0);
	CHECK(r.status.n_ingress == 1);
	CHECK_STR(r.status.ingress[0].ip, "192.0.2.2");
	CHECK_STR(r.status.ingress[0].ip_mode, "VIP");
	CHECK(r.n_annotations == 0);
	/* b finds the pool full: .1 is the foreign Service's */
	CHECK(ensure(st, &b, &r, &e) == ERR_UNAVAILABLE);
	CHECK_STR(e.msg, "service ns/b: every pool this Service may use is exhausted (IPv4)");
	/* asking for the foreign address names its holder */
	tsvc_init(&c, "ns", "c", 300);
	tsvc_ann(&c, "bootccm.io/load-balancer-ips", "192.0.2.1");
	CHECK(ensure(st, &c, &r, &e) == ERR_UNAVAILABLE);
	CHECK_STR(e.msg, "service ns/c: address 192.0.2.1 is taken by other/lb");
	/* ... and an address in no pool says so */
	c.ann[0].value = "198.51.100.1";
	CHECK(ensure(st, &c, &r, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "service ns/c: requested address 198.51.100.1 is in no pool");
	/* the foreign Service goes: its address is freed (observe says so), and
	 * b, waiting, gets it */
	CHECK(observe(st, &foreign) == 0);
	CHECK(static_provider.load_balancers->observe(st, "other/lb", NULL) == 1);
	CHECK(metric("small", "IPv4", "used") == 1);
	CHECK(ensure(st, &b, &r, &e) == 0);
	CHECK_STR(r.status.ingress[0].ip, "192.0.2.1");
	CHECK(metric("small", "IPv4", "used") == 2);
	static_provider.free(st);
}

/* Deleting a Service the controller's way: ensure_deleted releases, the
 * status cleared by the controller frees the address for a waiting one. */
TEST(cleanup_frees_for_a_waiting_service)
{
	struct tsvc a, b;
	struct cloud_lb_result r;
	struct cloud_lb_status status;
	struct errbuf e;
	int exists;
	void *st;

	CHECK(start("static:\n  pools:\n    - name: one\n      addresses: [192.0.2.9/32]\n",
	    &st, &e) == 0);
	tsvc_init(&a, "ns", "a", 1);
	tsvc_init(&b, "ns", "b", 2);
	CHECK(observe(st, &a) == 0 && observe(st, &b) == 0);
	CHECK(ensure(st, &a, &r, &e) == 0);
	tsvc_apply(&a, &r);
	CHECK(observe(st, &a) == 0);
	CHECK(ensure(st, &b, &r, &e) == ERR_UNAVAILABLE);
	CHECK_CONTAINS(e.msg, "exhausted");
	CHECK(static_provider.load_balancers->get(st, "kubernetes", &a.s, &status, &exists,
	    &e) == 0);
	CHECK(exists == 1 && status.n_ingress == 1);
	CHECK_STR(status.ingress[0].ip, "192.0.2.9");
	/* LoadBalancer -> ClusterIP: cleanup */
	a.s.type = "ClusterIP";
	a.s.served = 0;
	CHECK(observe(st, &a) == 0);   /* its status still holds the address */
	CHECK(static_provider.load_balancers->ensure_deleted(st, "kubernetes", &a.s, &r,
	    &e) == 0);
	CHECK(r.n_annotations == 0);
	CHECK(ensure(st, &b, &r, &e) == ERR_UNAVAILABLE);
	a.status.n_ingress = 0;        /* the controller clears it */
	CHECK(observe(st, &a) == 1);   /* freed: the waiting Service is woken */
	CHECK(static_provider.load_balancers->get(st, "kubernetes", &a.s, &status, &exists,
	    &e) == 0);
	CHECK(exists == 0);
	CHECK(ensure(st, &b, &r, &e) == 0);
	CHECK_STR(r.status.ingress[0].ip, "192.0.2.9");
	/* ensure_deleted of what is already gone is fine */
	CHECK(static_provider.load_balancers->ensure_deleted(st, "kubernetes", &a.s, &r,
	    &e) == 0);
	static_provider.free(st);
}

/* kubeVipAnnotation: the annotation is written from the allocation (never
 * read as a request), repaired when edited, and removed at cleanup. */
TEST(kube_vip_annotation_written_and_removed)
{
	struct tsvc a;
	struct cloud_lb_result r;
	struct errbuf e;
	unsigned char drifted[1];
	const struct cloud_service *svcs[1];
	void *st;

	CHECK(start("static:\n  kubeVipAnnotation: true\n  pools:\n    - name: p\n"
	    "      addresses: [192.0.2.0/29, \"2001:db8::/126\"]\n", &st, &e) == 0);
	tsvc_init(&a, "ns", "a", 1);
	a.families[1] = "IPv6";
	a.s.n_ip_families = 2;
	a.s.ip_family_policy = "RequireDualStack";
	tsvc_ann(&a, "kube-vip.io/loadbalancerIPs", "192.0.2.6");  /* not a request */
	CHECK(observe(st, &a) == 0);
	CHECK(ensure(st, &a, &r, &e) == 0);
	CHECK(r.status.n_ingress == 2);
	CHECK_STR(r.status.ingress[0].ip, "192.0.2.1");
	CHECK_STR(r.status.ingress[1].ip, "2001:db8::");
	CHECK(r.n_annotations == 1);
	CHECK_STR(r.annotations[0].key, "kube-vip.io/loadbalancerIPs");
	CHECK_STR(r.annotations[0].value, "192.0.2.1,2001:db8::");
	CHECK(r.annotations[0].remove == 0);
	tsvc_apply(&a, &r);
	CHECK_STR(a.ann[0].value, "192.0.2.1,2001:db8::");
	svcs[0] = &a.s;
	CHECK(verify(st, svcs, 1, drifted, &e) == 0);
	CHECK(drifted[0] == 0);
	/* someone edits the annotation: drift */
	a.ann[0].value = "192.0.2.1";
	CHECK(verify(st, svcs, 1, drifted, &e) == 0);
	CHECK(drifted[0] == 1);
	/* the same again: the allocation does not move */
	CHECK(ensure(st, &a, &r, &e) == 0);
	CHECK_STR(r.annotations[0].value, "192.0.2.1,2001:db8::");
	tsvc_apply(&a, &r);
	CHECK(static_provider.load_balancers->ensure_deleted(st, "kubernetes", &a.s, &r,
	    &e) == 0);
	CHECK(r.n_annotations == 1 && r.annotations[0].remove == 1);
	CHECK_STR(r.annotations[0].key, "kube-vip.io/loadbalancerIPs");
	tsvc_apply(&a, &r);
	CHECK(a.s.n_annotations == 0);
	static_provider.free(st);
}

/* verify compares each allocation with its Service's status: the same
 * addresses (any order, any spelling), ipMode VIP or the default; no
 * allocation (not ensured since the start) counts as drifted. */
TEST(verify_finds_drift)
{
	struct tsvc a, b;
	struct cloud_lb_result r;
	struct errbuf e;
	unsigned char drifted[2];
	const struct cloud_service *svcs[2] = { &a.s, &b.s };
	void *st;

	CHECK(start("static:\n  pools:\n    - name: p\n      addresses: [\"2001:db8::/120\"]\n",
	    &st, &e) == 0);
	tsvc_init(&a, "ns", "a", 1);
	tsvc_init(&b, "ns", "b", 2);
	a.families[0] = b.families[0] = "IPv6";
	CHECK(ensure(st, &a, &r, &e) == 0);
	tsvc_apply(&a, &r);
	CHECK(verify(st, svcs, 2, drifted, &e) == 0);
	CHECK(drifted[0] == 0 && drifted[1] == 1);
	a.status.ingress[0].ip_mode[0] = '\0';            /* the API server's default */
	snprintf(a.status.ingress[0].ip, sizeof(a.status.ingress[0].ip), "2001:DB8:0::");
	CHECK(verify(st, svcs, 1, drifted, &e) == 0);
	CHECK(drifted[0] == 0);
	snprintf(a.status.ingress[0].ip_mode, sizeof(a.status.ingress[0].ip_mode), "Proxy");
	CHECK(verify(st, svcs, 1, drifted, &e) == 0);
	CHECK(drifted[0] == 1);
	a.status.n_ingress = 0;                           /* status lost */
	CHECK(verify(st, svcs, 1, drifted, &e) == 0);
	CHECK(drifted[0] == 1);
	tsvc_apply(&a, &r);
	snprintf(a.status.ingress[0].ip, sizeof(a.status.ingress[0].ip), "2001:db8::77");
	CHECK(verify(st, svcs, 1, drifted, &e) == 0);
	CHECK(drifted[0] == 1);
	static_provider.free(st);
}

TEST(families_require_and_prefer)
{
	struct tsvc req, pref;
	struct cloud_lb_result r;
	struct errbuf e;
	void *st;

	CHECK(start("static:\n  pools:\n    - name: v4\n      addresses: [192.0.2.0/29]\n",
	    &st, &e) == 0);
	tsvc_init(&req, "ns", "req", 1);
	req.families[1] = "IPv6";
	req.s.n_ip_families = 2;
	req.s.ip_family_policy = "RequireDualStack";
	CHECK(ensure(st, &req, &r, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "service ns/req: RequireDualStack: no pool gives IPv6 addresses to "
	    "namespace ns automatically");
	tsvc_init(&pref, "ns", "pref", 2);
	pref.families[0] = "IPv6";
	pref.families[1] = "IPv4";
	pref.s.n_ip_families = 2;
	pref.s.ip_family_policy = "PreferDualStack";
	CHECK(ensure(st, &pref, &r, &e) == 0);
	CHECK(r.status.n_ingress == 1);
	CHECK_STR(r.status.ingress[0].ip, "192.0.2.1");
	/* a malformed request is refused before allocating, naming the field */
	tsvc_ann(&req, "metallb.universe.tf/loadBalancerIPs", "192.0.2.1,192.0.2.2");
	CHECK(ensure(st, &req, &r, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "service ns/req: annotation metallb.universe.tf/loadBalancerIPs "
	    "\"192.0.2.1,192.0.2.2\": more than one address per family");
	static_provider.free(st);
}

/* Sharing by key through the MetalLB annotation, refused on overlapping
 * ports with the message naming the other Service; a pool by annotation,
 * autoAssign: false honoured. */
TEST(sharing_and_pools_by_annotation)
{
	struct tsvc web, dns, web2, m;
	struct cloud_lb_result r;
	struct errbuf e;
	void *st;

	CHECK(start(pools2, &st, &e) == 0);
	tsvc_init(&web, "ns", "web", 1);
	tsvc_init(&dns, "ns", "dns", 2);
	tsvc_init(&web2, "ns", "web2", 3);
	tsvc_ann(&web, "metallb.io/allow-shared-ip", "k");
	tsvc_ann(&dns, "metallb.universe.tf/allow-shared-ip", "k");
	tsvc_ann(&web2, "bootccm.io/allow-shared-ip", "k");
	dns.ports[0] = (struct cloud_lb_port){ "dns", "UDP", 53, 30053, NULL };
	CHECK(ensure(st, &web, &r, &e) == 0);
	CHECK_STR(r.status.ingress[0].ip, "192.0.2.1");
	CHECK(ensure(st, &dns, &r, &e) == 0);
	CHECK_STR(r.status.ingress[0].ip, "192.0.2.1");
	CHECK(metric("small", "IPv4", "used") == 1);  /* shared: counted once */
	tsvc_ann(&web2, "bootccm.io/load-balancer-ips", "192.0.2.1");
	CHECK(ensure(st, &web2, &r, &e) == ERR_UNAVAILABLE);
	CHECK_STR(e.msg, "service ns/web2: address 192.0.2.1: ports overlap with the sharing "
	    "Service ns/web");
	/* autoAssign: false - only by pool annotation */
	tsvc_init(&m, "ns", "m", 4);
	tsvc_ann(&m, "metallb.io/address-pool", "manual");
	CHECK(ensure(st, &m, &r, &e) == 0);
	CHECK_STR(r.status.ingress[0].ip, "203.0.113.5");
	CHECK(metric("manual", "IPv4", "used") == 1);
	CHECK(metric("manual", "IPv4", "free") == 1);
	CHECK(metric("v6", "IPv6", "free") == 2);
	CHECK(metric("v6", "IPv4", "used") == -1);  /* no such family in the pool */
	tsvc_ann(&m, "bootccm.io/pool", "nope");
	CHECK(ensure(st, &m, &r, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "service ns/m: requested pool nope does not exist");
	static_provider.free(st);
}

/* MetalLB's duplicates when a pool changes: a restart with the pools
 * shrunk, moved and renamed hands out no address twice and moves no
 * Service (an address outside every pool stays with its holder). */
TEST(pool_change_at_restart_duplicates_nothing)
{
	static struct tsvc s[5];
	struct cloud_lb_result r;
	struct errbuf e;
	char seen[5][NETADDR_TEXT_MAX];
	void *st;

	CHECK(start("static:\n  pools:\n    - name: a\n      addresses: [192.0.2.0/29]\n",
	    &st, &e) == 0);
	for (int i = 0; i < 4; i++) {
		char name[8];
		snprintf(name, sizeof(name), "s%d", i);
		tsvc_init(&s[i], "ns", name, i);
		CHECK(ensure(st, &s[i], &r, &e) == 0);
		tsvc_apply(&s[i], &r);
		CHECK(observe(st, &s[i]) == 0);
	}
	static_provider.free(st);
	CHECK(start("static:\n  pools:\n    - name: b\n      addresses: [198.51.100.0/30]\n"
	    "    - name: a2\n      addresses: [192.0.2.2-192.0.2.3]\n", &st, &e) == 0);
	for (int i = 0; i < 4; i++)
		CHECK(observe(st, &s[i]) == 0);
	for (int i = 0; i < 4; i++) {
		CHECK(ensure(st, &s[i], &r, &e) == 0);
		CHECK(memcmp(&r.status, &s[i].status, sizeof(r.status)) == 0);
		snprintf(seen[i], sizeof(seen[i]), "%s", r.status.ingress[0].ip);
	}
	tsvc_init(&s[4], "ns", "new", 9);
	CHECK(ensure(st, &s[4], &r, &e) == 0);
	snprintf(seen[4], sizeof(seen[4]), "%s", r.status.ingress[0].ip);
	CHECK_STR(seen[4], "198.51.100.1");
	for (int i = 0; i < 5; i++)
		for (int j = 0; j < i; j++)
			CHECK(strcmp(seen[i], seen[j]) != 0);
	static_provider.free(st);
}

/* --- threads ---------------------------------------------------------------------- */

struct worker {
	void *st;
	int id;
	int failures;
};

static void *
worker_run(void *arg)
{
	struct worker *w = arg;
	struct cloud_node n = { .name = "worker-1" };
	struct cloud_instance_metadata *m = malloc(sizeof(*m));
	struct errbuf e;

	for (int i = 0; i < 50 && m != NULL; i++) {
		struct tsvc t;
		struct cloud_lb_result r;
		char name[32];

		snprintf(name, sizeof(name), "s-%d-%d", w->id, i);
		tsvc_init(&t, "ns", name, i);
		if (observe(w->st, &t) < 0 || ensure(w->st, &t, &r, &e) < 0)
			w->failures++;
		tsvc_apply(&t, &r);
		(void)observe(w->st, &t);
		if (static_provider.instances->metadata(w->st, &n, m, &e) < 0)
			w->failures++;
		(void)static_provider.health(w->st, &e);
		if (i % 2 == 0) {
			(void)static_provider.load_balancers->ensure_deleted(w->st, "k", &t.s, &r,
			    &e);
			(void)static_provider.load_balancers->observe(w->st, t.key, NULL);
		}
	}
	free(m);
	return NULL;
}

/* Workers at once on one state (TSan run): every allocation succeeds
 * (the pool is large enough) and no address goes to two Services. */
TEST(workers_at_once)
{
	struct worker w[4];
	pthread_t t[4];
	struct errbuf e;
	void *st;

	put("inventory.yaml", inventory);
	CHECK(start("static:\n  inventory: inventory.yaml\n  pools:\n    - name: big\n"
	    "      addresses: [10.0.0.0/24]\n", &st, &e) == 0);
	static_set_inventory_interval(st, 0);
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ st, i, 0 };
		CHECK(pthread_create(&t[i], NULL, worker_run, &w[i]) == 0);
	}
	for (int i = 0; i < 20; i++)
		put("inventory.yaml", inventory);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 4; i++)
		CHECK(w[i].failures == 0);
	CHECK(metric("big", "IPv4", "used") == 100);  /* 4 x 25 kept */
	static_provider.free(st);
}

TEST(cleanup)
{
	char p[sizeof(dir) + 64];

	unlink(cfg_path);
	unlink(inv_path);
	snprintf(p, sizeof(p), "%s.tmp", inv_path);
	unlink(p);
	CHECK(rmdir(dir) == 0);
}

TEST_MAIN()
