/* test_static_inventory.c - the static provider's inventory file: what an
 * entry yields, every fault named as FILE:line:col, and the file followed as
 * it changes (the last good inventory kept while a broken one is reported,
 * recovery, the look interval, references across a reload, readers in
 * threads). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../providers/static/inventory.h"
#include "base/clock.h"
#include "cloud.h"
#include "base/err.h"
#include "harness.h"

static char dir[] = "/tmp/test_static_inventory.XXXXXX";
static char path[sizeof(dir) + 32];

/* put writes the inventory as an installer should: a new file renamed over
 * the old one. */
static void
put(const char *yaml)
{
	char tmp[sizeof(path) + 8];
	FILE *f;

	if (path[0] == '\0') {
		if (mkdtemp(dir) == NULL)
			abort();
		snprintf(path, sizeof(path), "%s/inventory.yaml", dir);
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((f = fopen(tmp, "w")) == NULL)
		abort();
	fputs(yaml, f);
	fclose(f);
	if (rename(tmp, path) < 0)
		abort();
}

static int
load(const char *yaml, struct inventory **ret, struct errbuf *e)
{
	put(yaml);
	e->msg[0] = '\0';
	return inventory_load(path, ret, e);
}

static const char full[] =
    "instances:\n"
    "  - name: worker-1\n"
    "    addresses:\n"
    "      - {type: InternalIP, address: 10.0.0.11}\n"
    "      - {type: ExternalIP, address: \"2001:DB8::0:50\"}\n"
    "      - {type: Hostname, address: worker-1.example.net}\n"
    "    zone: rack-1\n"
    "    region: dc-1\n"
    "    instanceType: r640\n"
    "    labels: {example.com/pool: gpu, tier: \"\"}\n"
    "  - name: worker-2\n"
    "    providerID: metal://rack-2/u17\n"
    "    shutdown: true\n";

TEST(an_entry_yields_its_metadata)
{
	struct cloud_instance_metadata m;
	const struct inventory_instance *in;
	struct inventory *inv = NULL;
	struct errbuf e;

	CHECK(load(full, &inv, &e) == 0);
	CHECK(inventory_count(inv) == 2);
	CHECK((in = inventory_find(inv, "worker-1", NULL)) == inventory_at(inv, 0));
	CHECK(in->shutdown == 0);
	inventory_metadata(in, &m);
	CHECK_STR(m.source, CLOUD_SOURCE_INVENTORY);
	CHECK_STR(m.provider_id, "static://worker-1");  /* the default */
	CHECK_STR(m.zone, "rack-1");
	CHECK_STR(m.region, "dc-1");
	CHECK_STR(m.instance_type, "r640");
	CHECK(m.n_addresses == 3);
	CHECK(m.addresses[0].type == CLOUD_ADDR_INTERNAL_IP);
	CHECK_STR(m.addresses[0].address, "10.0.0.11");
	CHECK(m.addresses[1].type == CLOUD_ADDR_EXTERNAL_IP);
	CHECK_STR(m.addresses[1].address, "2001:db8::50");  /* canonical */
	CHECK(m.addresses[2].type == CLOUD_ADDR_HOSTNAME);
	CHECK(m.n_labels == 2);
	CHECK_STR(m.labels[0].key, "example.com/pool");
	CHECK_STR(m.labels[0].value, "gpu");
	CHECK_STR(m.labels[1].value, "");
	/* by providerID when the name does not match */
	CHECK((in = inventory_find(inv, "w2.example", "metal://rack-2/u17")) != NULL);
	CHECK_STR(in->name, "worker-2");
	CHECK(in->shutdown == 1);
	inventory_metadata(in, &m);
	CHECK_STR(m.provider_id, "metal://rack-2/u17");
	CHECK(m.n_addresses == 0 && m.zone[0] == '\0' && m.n_labels == 0);
	CHECK(inventory_find(inv, "worker-3", "static://worker-3") == NULL);
	CHECK(inventory_find(inv, NULL, NULL) == NULL);
	CHECK(inventory_at(inv, 2) == NULL);
	inventory_unref(inv);
	/* no instances is an inventory too */
	CHECK(load("instances: []\n", &inv, &e) == 0);
	CHECK(inventory_count(inv) == 0);
	inventory_unref(inv);
}

/* Every fault: ERR_INVALID (or the cap's ERR_TOO_LARGE) with the position
 * of the value at fault, and nothing loaded. */
TEST(every_fault_names_file_line_col)
{
	static const struct {
		const char *yaml;
		const char *msg;      /* after "PATH:" */
	} bad[] = {
		{ "", " missing required key \"instances\" in the top level" },
		{ "# emptied by an editor\n{}\n", "2:1: missing required key \"instances\"" },
		{ "instances: {name: a}\n", "1:12: key \"instances\" in the top level: want a "
		  "list of maps" },
		{ "instances:\n  - nmae: a\n", "2:5: unknown key \"nmae\" in instances[0]" },
		{ "instances:\n  - zone: a\n", "2:5: missing required key \"name\" in "
		  "instances[0]" },
		{ "instances:\n  - name: Worker_1\n", "2:11: key \"name\" in instances[0]: "
		  "\"Worker_1\" is not a Node name" },
		{ "instances:\n  - name: a\n    providerID: a\n", "3:17: key \"providerID\" in "
		  "instances[0]: \"a\" is not a providerID" },
		{ "instances:\n  - name: a\n    addresses:\n      - {type: PublicIP, address: "
		  "10.0.0.1}\n", "4:16: key \"type\" in instances[0].addresses[0]: \"PublicIP\" "
		  "is not an address type" },
		{ "instances:\n  - name: a\n    addresses:\n      - {type: InternalIP}\n",
		  "4:9: missing required key \"address\" in instances[0].addresses[0]" },
		{ "instances:\n  - name: a\n    addresses:\n      - {type: InternalIP, "
		  "address: 10.0.0.300}\n", "4:9: instances[0].addresses[0]: \"10.0.0.300\" is "
		  "not an IP address (type InternalIP)" },
		{ "instances:\n  - name: a\n    addresses:\n      - {type: Hostname, "
		  "address: \"a b\"}\n", "4:9: instances[0].addresses[0]: \"a b\" is not a DNS "
		  "name (type Hostname)" },
		{ "instances:\n  - name: a\n    zone: rack 1\n", "3:11: key \"zone\" in "
		  "instances[0]: \"rack 1\" is not a label value" },
		{ "instances:\n  - name: a\n    labels: {\"bad key/x\": y}\n", "3:14: key "
		  "\"labels\" in instances[0]: \"bad key/x\" is not a label key" },
		{ "instances:\n  - name: a\n    labels: {k: \"-v\"}\n", "3:17: key \"labels\" in "
		  "instances[0]: \"-v\" is not a label value" },
		{ "instances:\n  - name: a\n    shutdown: perhaps\n", "3:15: key \"shutdown\" in "
		  "instances[0]: want a boolean" },
		{ "instances:\n  - name: a\n  - name: b\n  - name: a\n", "4:5: instances[2]: name "
		  "\"a\" is also instances[0]'s" },
		{ "instances:\n  - name: a\n  - name: b\n    providerID: static://a\n", "3:5: "
		  "instances[1]: providerID \"static://a\" is also instances[0]'s" },
		{ "instances:\n  - name: a\n  - [b]\n", "3:5: key \"instances\" in the top level: "
		  "want a list of maps" },
		{ "instances:\n  - name: a\n   bad: indent\n", "" },  /* libyaml's own position */
	};
	struct inventory *inv = NULL;
	struct errbuf e;
	char want[ERRBUF_MAX];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = load(bad[i].yaml, &inv, &e);
		if (r != ERR_INVALID)
			fprintf(stderr, "  case %zu: %d %s\n", i, r, e.msg);
		CHECK(r == ERR_INVALID);
		CHECK(inv == NULL);
		snprintf(want, sizeof(want), "%s:%s", path, bad[i].msg);
		if (strncmp(e.msg, want, strlen(want)) != 0)
			fprintf(stderr, "  case %zu: got %s\n", i, e.msg);
		CHECK(strncmp(e.msg, want, strlen(want)) == 0);
	}
}

TEST(caps_on_labels_addresses_and_the_file)
{
	struct inventory *inv = NULL;
	struct errbuf e;
	char yaml[8192];
	size_t n = 0;

	n += (size_t)snprintf(yaml + n, sizeof(yaml) - n, "instances:\n  - name: a\n"
	    "    labels:\n");
	for (int i = 0; i <= CLOUD_LABELS_MAX; i++)
		n += (size_t)snprintf(yaml + n, sizeof(yaml) - n, "      k%d: v\n", i);
	CHECK(load(yaml, &inv, &e) == ERR_TOO_LARGE);
	CHECK_CONTAINS(e.msg, ":4:7: more than 16 items in instances[0]");
	n = (size_t)snprintf(yaml, sizeof(yaml), "instances:\n  - name: a\n    addresses:\n");
	for (int i = 0; i <= CLOUD_ADDRS_MAX; i++)
		n += (size_t)snprintf(yaml + n, sizeof(yaml) - n, "      - {type: InternalIP, "
		    "address: 10.0.0.%d}\n", i + 1);
	CHECK(load(yaml, &inv, &e) == ERR_TOO_LARGE);
	CHECK_CONTAINS(e.msg, ":4:7: more than 32 items in instances[0]");
	CHECK(inventory_load("/nonexistent/inventory.yaml", &inv, &e) == ERR_IO);
	CHECK_STR(e.msg, "/nonexistent/inventory.yaml: No such file or directory");
	CHECK(inventory_load(dir, &inv, &e) == ERR_IO);
	CHECK_CONTAINS(e.msg, "not a regular file");
	CHECK(inv == NULL);
	/* past the cloud-config's cap */
	static char big[CLOUDCONFIG_FILE_MAX + 64];
	memset(big, '#', sizeof(big) - 1);
	CHECK(load(big, &inv, &e) == ERR_TOO_LARGE);
	CHECK_CONTAINS(e.msg, "larger than");
}

static const char one[] = "instances:\n  - name: one\n    zone: z1\n";
static const char two[] = "instances:\n  - name: two\n  - name: three\n";

/* A broken edit keeps the last good inventory in force and is reported by
 * health, naming the file and the line, until a good file replaces it. */
TEST(reload_keeps_the_last_good_and_recovers)
{
	struct inventory_watch *w = NULL;
	struct inventory *inv;
	struct errbuf e;

	put(one);
	CHECK(inventory_watch_new(path, 0, &w, &e) == 0);
	CHECK(inventory_watch_health(w, &e) == 0);
	inv = inventory_watch_get(w);
	CHECK(inventory_find(inv, "one", NULL) != NULL);
	inventory_unref(inv);

	put("instances:\n  - name: two\n  - name: Three\n");
	CHECK(inventory_watch_health(w, &e) == ERR_INVALID);
	CHECK(strncmp(e.msg, path, strlen(path)) == 0);
	CHECK_CONTAINS(e.msg, ":3:11: key \"name\" in instances[1]");
	inv = inventory_watch_get(w);
	CHECK(inventory_find(inv, "one", NULL) != NULL);   /* still in force */
	CHECK(inventory_find(inv, "two", NULL) == NULL);
	inventory_unref(inv);
	/* asked again without a change: still reported */
	CHECK(inventory_watch_health(w, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, ":3:11:");

	/* the file removed: reported too, the last good still in force */
	CHECK(unlink(path) == 0);
	CHECK(inventory_watch_health(w, &e) == ERR_IO);
	CHECK_CONTAINS(e.msg, "No such file or directory");

	put(two);
	CHECK(inventory_watch_health(w, &e) == 0);
	inv = inventory_watch_get(w);
	CHECK(inventory_find(inv, "one", NULL) == NULL);
	CHECK(inventory_find(inv, "three", NULL) != NULL);
	inventory_unref(inv);
	inventory_watch_free(w);
	/* the first load has no last good to keep: it fails */
	put("instances:\n  - name: _\n");
	CHECK(inventory_watch_new(path, 0, &w, &e) == ERR_INVALID);
}

/* The file is looked at no more than once per interval, and a reference
 * taken before a reload stays valid after it. */
TEST(look_interval_and_references_across_a_reload)
{
	struct inventory_watch *w = NULL;
	struct inventory *old, *inv;
	struct errbuf e;

	put(one);
	CHECK(inventory_watch_new(path, 3600 * NS_PER_S, &w, &e) == 0);
	old = inventory_watch_get(w);
	put(two);
	inv = inventory_watch_get(w);
	CHECK(inv == old);  /* not looked at again within the hour */
	inventory_unref(inv);
	inventory_watch_set_interval(w, 0);
	inv = inventory_watch_get(w);
	CHECK(inv != old);
	CHECK(inventory_find(inv, "two", NULL) != NULL);
	/* the old one is the caller's until it lets go */
	CHECK(inventory_find(old, "one", NULL) != NULL);
	CHECK_STR(inventory_at(old, 0)->zone, "z1");
	inventory_unref(old);
	inventory_unref(inv);
	inventory_watch_free(w);
}

struct reader {
	struct inventory_watch *w;
	int stop;          /* atomic */
	int bad;
};

static void *
reader_run(void *arg)
{
	struct reader *r = arg;
	struct errbuf e;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		struct inventory *inv = inventory_watch_get(r->w);
		/* either file, whole: never a mix, never nothing */
		if (inventory_find(inv, "one", NULL) == NULL &&
		    inventory_find(inv, "three", NULL) == NULL)
			r->bad = 1;
		inventory_unref(inv);
		(void)inventory_watch_health(r->w, &e);
	}
	return NULL;
}

/* Readers in several threads while the file changes under them (run under
 * TSan too). */
TEST(readers_in_threads_while_it_changes)
{
	struct reader rd[3];
	pthread_t t[3];
	struct inventory_watch *w = NULL;
	struct errbuf e;

	put(one);
	CHECK(inventory_watch_new(path, 0, &w, &e) == 0);
	for (int i = 0; i < 3; i++) {
		rd[i] = (struct reader){ w, 0, 0 };
		CHECK(pthread_create(&t[i], NULL, reader_run, &rd[i]) == 0);
	}
	for (int i = 0; i < 200; i++)
		put(i % 3 == 0 ? "instances: [\n" : i % 2 ? one : two);
	for (int i = 0; i < 3; i++) {
		__atomic_store_n(&rd[i].stop, 1, __ATOMIC_RELEASE);
		pthread_join(t[i], NULL);
	}
	for (int i = 0; i < 3; i++)
		CHECK(!rd[i].bad);
	inventory_watch_free(w);
}

TEST(cleanup)
{
	char tmp[sizeof(path) + 8];

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	unlink(tmp);
	unlink(path);
	CHECK(rmdir(dir) == 0);
}

TEST_MAIN()
