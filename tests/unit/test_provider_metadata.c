/* test_provider_metadata.c - the `metadata` provider: remote nodes from what
 * their kubelet reported, the local node through a fake metadata fetch,
 * exists/shutdown never definitive, and the cloud-config metadata: keys. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "cloud.h"
#include "base/err.h"
#include "http/http.h"
#include "metadata/metadata.h"
#include "../../providers/metadata/metadata.h"

static int fake_calls;
static int fake_result;
static struct md_instance fake_instance;

static int
fake_fetch(const struct md_config *cfg, struct md_instance *ret, struct errbuf *e)
{
	(void)cfg;
	fake_calls++;
	if (fake_result < 0)
		return errbuf_set(e, fake_result, "http://169.254.169.254/x: fake failure");
	memcpy(ret, &fake_instance, sizeof(*ret));
	return 0;
}

static void *
provider_new(const char *config_path)
{
	struct cloud_config cfg = { .node_name = "local-1", .config_path = config_path };
	struct errbuf e = { "" };
	void *st = NULL;

	if (metadata_provider.init(&cfg, &st, &e) < 0)
		return NULL;
	metadata_set_fetch(st, fake_fetch);
	fake_calls = 0;
	return st;
}

static int
meta(void *st, const struct cloud_node *n, struct cloud_instance_metadata *m,
    struct errbuf *e)
{
	e->msg[0] = '\0';
	return metadata_provider.instances->metadata(st, n, m, e);
}

static const struct cloud_kv all_labels[] = {
	{ "kubernetes.io/hostname", "w1" },
	{ CLOUD_LABEL_ZONE, "fsn1-dc14" },
	{ CLOUD_LABEL_REGION, "fsn1" },
	{ CLOUD_LABEL_INSTANCE_TYPE, "cx22" },
};

TEST(remote_provider_id_only)
{
	void *st = provider_new(NULL);
	struct cloud_node n = { .name = "w1", .provider_id = "hcloud://123" };
	struct cloud_instance_metadata m;
	struct errbuf e;

	CHECK(st != NULL);
	memset(&m, 0, sizeof(m));
	CHECK(meta(st, &n, &m, &e) == 0);
	CHECK_STR(m.provider_id, "hcloud://123");
	CHECK_STR(m.zone, "");
	CHECK_STR(m.region, "");
	CHECK_STR(m.instance_type, "");
	CHECK(m.n_addresses == 0 && m.n_labels == 0);
	CHECK(fake_calls == 0);
	metadata_provider.free(st);
}

TEST(remote_labels_only)
{
	void *st = provider_new(NULL);
	struct cloud_node n = { .name = "w1", .labels = all_labels, .n_labels = 4 };
	struct cloud_instance_metadata m;
	struct errbuf e;

	CHECK(st != NULL);
	CHECK(meta(st, &n, &m, &e) == 0);
	CHECK_STR(m.provider_id, "");
	CHECK_STR(m.zone, "fsn1-dc14");
	CHECK_STR(m.region, "fsn1");
	CHECK_STR(m.instance_type, "cx22");
	CHECK(m.n_addresses == 0);
	metadata_provider.free(st);
}

TEST(remote_everything)
{
	void *st = provider_new(NULL);
	static const struct cloud_kv ann[] = {
		{ "node.alpha.kubernetes.io/ttl", "0" },
		{ CLOUD_PROVIDED_NODE_IP, "10.0.0.5" },
	};
	struct cloud_node n = { .name = "w1", .provider_id = "aws:///us-east-2b/i-0abc",
		.labels = all_labels, .n_labels = 4, .annotations = ann, .n_annotations = 2 };
	struct cloud_instance_metadata m;
	struct errbuf e;

	CHECK(st != NULL);
	CHECK(meta(st, &n, &m, &e) == 0);
	CHECK_STR(m.provider_id, "aws:///us-east-2b/i-0abc");
	CHECK_STR(m.zone, "fsn1-dc14");
	CHECK(m.n_addresses == 1);
	CHECK(m.addresses[0].type == CLOUD_ADDR_INTERNAL_IP);
	CHECK_STR(m.addresses[0].address, "10.0.0.5");
	metadata_provider.free(st);
}

TEST(remote_provided_ip_dual_stack)
{
	void *st = provider_new(NULL);
	struct cloud_kv ann = { CLOUD_PROVIDED_NODE_IP, "10.0.0.5,2001:DB8:0:0::1" };
	struct cloud_node n = { .name = "w1", .annotations = &ann, .n_annotations = 1 };
	struct cloud_instance_metadata m;
	struct errbuf e;

	CHECK(st != NULL);
	CHECK(meta(st, &n, &m, &e) == 0);
	CHECK(m.n_addresses == 2);
	CHECK(m.addresses[0].type == CLOUD_ADDR_INTERNAL_IP);
	CHECK(m.addresses[1].type == CLOUD_ADDR_INTERNAL_IP);
	CHECK_STR(m.addresses[0].address, "10.0.0.5");
	CHECK_STR(m.addresses[1].address, "2001:db8::1"); /* canonical */
	ann.value = "fd00::5,192.168.1.1";
	CHECK(meta(st, &n, &m, &e) == 0);
	CHECK(m.n_addresses == 2);
	CHECK_STR(m.addresses[0].address, "fd00::5");
	CHECK_STR(m.addresses[1].address, "192.168.1.1");
	ann.value = "fd00::5";
	CHECK(meta(st, &n, &m, &e) == 0);
	CHECK(m.n_addresses == 1);
	CHECK_STR(m.addresses[0].address, "fd00::5");
	metadata_provider.free(st);
}

TEST(remote_provided_ip_invalid)
{
	static const char *bad[] = { "10.0.0", "10.0.0.256", "10.0.0.1,10.0.0.2",
		"fd00::1,fd00::2", "10.0.0.1,", ",10.0.0.1", "10.0.0.1,fd00::1,10.0.0.2",
		" 10.0.0.1", "10.0.0.1 ", "fe80::1%eth0", "host.example.com", "010.0.0.1x" };
	void *st = provider_new(NULL);
	struct cloud_kv ann = { CLOUD_PROVIDED_NODE_IP, NULL };
	struct cloud_node n = { .name = "w1", .provider_id = "hcloud://1",
		.annotations = &ann, .n_annotations = 1 };
	struct cloud_instance_metadata m;
	struct errbuf e;
	size_t i;

	CHECK(st != NULL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&m, 0x5a, sizeof(m));
		ann.value = bad[i];
		CHECK(meta(st, &n, &m, &e) == ERR_INVALID);
		CHECK_CONTAINS(e.msg, "node w1: annotation alpha.kubernetes.io/provided-node-ip");
		CHECK(m.provider_id[0] == 0x5a); /* untouched: no half-parsed data */
	}
	metadata_provider.free(st);
}

TEST(remote_nothing)
{
	void *st = provider_new(NULL);
	static const struct cloud_kv other = { "kubernetes.io/os", "linux" };
	struct cloud_node n = { .name = "w2", .provider_id = "", .labels = &other,
		.n_labels = 1 };
	struct cloud_instance_metadata m;
	struct errbuf e;

	CHECK(st != NULL);
	memset(&m, 0x5a, sizeof(m));
	CHECK(meta(st, &n, &m, &e) == ERR_PERMANENT);
	CHECK_CONTAINS(e.msg, "node w2: its kubelet reported nothing");
	CHECK_CONTAINS(e.msg, "--provider-id");
	CHECK(m.provider_id[0] == 0x5a);
	CHECK(!cloud_err_retryable(ERR_PERMANENT));
	CHECK(!cloud_err_allows_delete(ERR_PERMANENT, &metadata_provider));
	metadata_provider.free(st);
}

TEST(remote_invalid_provider_id)
{
	static const char *bad[] = { "123", "hcloud:/123", "hcloud://", "aws:///",
		"HCLOUD://1", "hcloud://1 2", "hcloud://1\n", "://x", "1cloud//x" };
	void *st = provider_new(NULL);
	struct cloud_node n = { .name = "w1", .labels = all_labels, .n_labels = 4 };
	struct cloud_instance_metadata m;
	struct errbuf e;
	size_t i;

	CHECK(st != NULL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n.provider_id = bad[i];
		CHECK(meta(st, &n, &m, &e) == ERR_INVALID);
		CHECK_CONTAINS(e.msg, "node w1: spec.providerID");
	}
	n.provider_id = "azure:///subscriptions/s/resourceGroups/rg/providers/"
	    "Microsoft.Compute/virtualMachines/vm-1";
	CHECK(meta(st, &n, &m, &e) == 0);
	n.provider_id = "gce://proj/europe-west1-b/vm-1";
	CHECK(meta(st, &n, &m, &e) == 0);
	n.provider_id = "digitalocean://4242";
	CHECK(meta(st, &n, &m, &e) == 0);
	metadata_provider.free(st);
}

TEST(remote_invalid_labels)
{
	static const char *bad[] = { "-a", "a-", "a b", "a/b", "é",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" /* 64 */ };
	void *st = provider_new(NULL);
	struct cloud_kv l = { CLOUD_LABEL_REGION, NULL };
	struct cloud_node n = { .name = "w1", .provider_id = "hcloud://1", .labels = &l,
		.n_labels = 1 };
	struct cloud_instance_metadata m;
	struct errbuf e;
	size_t i;

	CHECK(st != NULL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		l.value = bad[i];
		CHECK(meta(st, &n, &m, &e) == ERR_INVALID);
		CHECK_CONTAINS(e.msg, "node w1: label topology.kubernetes.io/region");
	}
	l.value = "a.b_c-9";
	CHECK(meta(st, &n, &m, &e) == 0);
	CHECK_STR(m.region, "a.b_c-9");
	metadata_provider.free(st);
}

TEST(local_from_metadata_service)
{
	void *st = provider_new(NULL);
	/* what the kubelet reported is ignored for the local node */
	struct cloud_node n = { .name = "local-1", .provider_id = "hcloud://999",
		.labels = all_labels, .n_labels = 4 };
	struct cloud_instance_metadata m;
	struct errbuf e;

	CHECK(st != NULL);
	memset(&fake_instance, 0, sizeof(fake_instance));
	fake_result = 0;
	snprintf(fake_instance.provider_id, sizeof(fake_instance.provider_id),
	    "aws:///eu-west-1a/i-0123");
	snprintf(fake_instance.instance_type, sizeof(fake_instance.instance_type), "m5.large");
	snprintf(fake_instance.zone, sizeof(fake_instance.zone), "eu-west-1a");
	snprintf(fake_instance.region, sizeof(fake_instance.region), "eu-west-1");
	fake_instance.n_addresses = 2;
	fake_instance.addresses[0].type = MD_ADDR_INTERNAL_IP;
	snprintf(fake_instance.addresses[0].address, MD_NAME_MAX, "172.31.0.4");
	fake_instance.addresses[1].type = MD_ADDR_EXTERNAL_IP;
	snprintf(fake_instance.addresses[1].address, MD_NAME_MAX, "3.3.3.3");
	CHECK(meta(st, &n, &m, &e) == 0);
	CHECK(fake_calls == 1);
	CHECK_STR(m.provider_id, "aws:///eu-west-1a/i-0123");
	CHECK_STR(m.instance_type, "m5.large");
	CHECK_STR(m.zone, "eu-west-1a");
	CHECK_STR(m.region, "eu-west-1");
	CHECK(m.n_addresses == 2);
	CHECK(m.addresses[1].type == CLOUD_ADDR_EXTERNAL_IP);
	CHECK_STR(m.addresses[1].address, "3.3.3.3");
	metadata_provider.free(st);
}

TEST(local_errors)
{
	void *st = provider_new(NULL);
	struct cloud_node n = { .name = "local-1", .provider_id = "hcloud://999" };
	struct cloud_instance_metadata m;
	struct errbuf e;

	CHECK(st != NULL);
	memset(&m, 0x5a, sizeof(m));
	/* "no metadata service" is not "no such instance" */
	fake_result = ERR_NOT_FOUND;
	CHECK(meta(st, &n, &m, &e) == ERR_PERMANENT);
	CHECK_CONTAINS(e.msg, "node local-1 (local): instance metadata: http://169.254.169.254");
	fake_result = ERR_TRANSIENT;
	CHECK(meta(st, &n, &m, &e) == ERR_TRANSIENT);
	CHECK(cloud_err_retryable(ERR_TRANSIENT));
	fake_result = ERR_TIMEOUT;
	CHECK(meta(st, &n, &m, &e) == ERR_TIMEOUT);
	CHECK(m.provider_id[0] == 0x5a);
	/* an unusable answer is refused whole */
	fake_result = 0;
	memset(&fake_instance, 0, sizeof(fake_instance));
	snprintf(fake_instance.provider_id, sizeof(fake_instance.provider_id), "hcloud://7");
	snprintf(fake_instance.zone, sizeof(fake_instance.zone), "bad zone");
	CHECK(meta(st, &n, &m, &e) == ERR_INVALID);
	CHECK(m.provider_id[0] == 0x5a);
	fake_instance.zone[0] = '\0';
	fake_instance.provider_id[0] = '\0';
	CHECK(meta(st, &n, &m, &e) == ERR_INVALID);
	CHECK(fake_calls == 5);
	metadata_provider.free(st);
}

TEST(local_real_fetch_no_cloud)
{
	char dmi[] = "/tmp/test_provider_metadata_dmi.XXXXXX";
	struct cloud_config cfg = { .node_name = "local-1", .md_dmi_dir = dmi };
	struct cloud_node n = { .name = "local-1", .provider_id = "hcloud://1" };
	struct cloud_instance_metadata m;
	struct errbuf e = { "" };
	void *st = NULL;
	char path[sizeof(dmi) + 32];
	FILE *f;

	/* the production fetch on a machine whose DMI data names no cloud
	 * answers without touching the network; it must not read as
	 * "instance not found" */
	CHECK(http_global_init(&e) == 0);
	CHECK(mkdtemp(dmi) != NULL);
	snprintf(path, sizeof(path), "%s/sys_vendor", dmi);
	CHECK((f = fopen(path, "w")) != NULL);
	fputs("Nobody Computers Inc.\n", f);
	fclose(f);
	CHECK(metadata_provider.init(&cfg, &st, &e) == 0);
	CHECK(meta(st, &n, &m, &e) == ERR_PERMANENT);
	CHECK_CONTAINS(e.msg, "node local-1 (local): instance metadata: ");
	CHECK_CONTAINS(e.msg, dmi);
	metadata_provider.free(st);
	unlink(path);
	rmdir(dmi);
}

TEST(exists_shutdown_not_implemented)
{
	void *st = provider_new(NULL);
	struct cloud_node n = { .name = "w1", .provider_id = "hcloud://1" };
	struct errbuf e;
	int v = 7, r;

	CHECK(st != NULL);
	r = metadata_provider.instances->exists(st, &n, &v, &e);
	CHECK(r == ERR_NOT_IMPLEMENTED && v == 7);
	CHECK(!cloud_err_allows_delete(r, &metadata_provider));
	r = metadata_provider.instances->shutdown(st, &n, &v, &e);
	CHECK(r == ERR_NOT_IMPLEMENTED && v == 7);
	n.name = "local-1";
	CHECK(metadata_provider.instances->exists(st, &n, &v, &e) == ERR_NOT_IMPLEMENTED);
	CHECK(fake_calls == 0);
	metadata_provider.free(st);
}

static int
write_file(char *path, const char *text)
{
	FILE *f;
	int fd;

	if ((fd = mkstemp(path)) < 0 || (f = fdopen(fd, "w")) == NULL)
		return -1;
	fputs(text, f);
	fclose(f);
	return 0;
}

TEST(config_file_and_flags)
{
	char path[] = "/tmp/test_provider_metadata.XXXXXX";
	struct cloud_config cfg = { .node_name = "n", .config_path = path,
		.md_cloud = "auto", .md_dmi_dir = MD_DMI_DIR_DEFAULT };
	const struct md_config *md;
	struct errbuf e = { "" };
	void *st = NULL;

	CHECK(write_file(path, "metadata:\n  cloud: hetzner\n  endpoint: http://127.0.0.1:8099\n"
	    "  dmiDir: /tmp/dmi\n  configDrive: /mnt/cd\n") == 0);
	/* flags at their defaults: the file's keys apply */
	CHECK(metadata_provider.init(&cfg, &st, &e) == 0);
	md = metadata_md_config(st);
	CHECK(md->cloud == MD_CLOUD_HETZNER);
	CHECK_STR(md->endpoint, "http://127.0.0.1:8099");
	CHECK_STR(md->dmi_dir, "/tmp/dmi");
	CHECK_STR(md->config_drive, "/mnt/cd");
	metadata_provider.free(st);
	/* flags given: they win */
	cfg.md_cloud = "gce";
	cfg.md_endpoint = "http://127.0.0.1:9";
	cfg.md_dmi_dir = "/other/dmi";
	st = NULL;
	CHECK(metadata_provider.init(&cfg, &st, &e) == 0);
	md = metadata_md_config(st);
	CHECK(md->cloud == MD_CLOUD_GCE);
	CHECK_STR(md->endpoint, "http://127.0.0.1:9");
	CHECK_STR(md->dmi_dir, "/other/dmi");
	CHECK_STR(md->config_drive, "/mnt/cd");
	metadata_provider.free(st);
	unlink(path);
}

TEST(config_file_errors)
{
	char p1[] = "/tmp/test_provider_metadata.XXXXXX";
	char p2[] = "/tmp/test_provider_metadata.XXXXXX";
	char p3[] = "/tmp/test_provider_metadata.XXXXXX";
	struct cloud_config cfg = { .node_name = "n" };
	struct errbuf e = { "" };
	void *st = NULL;

	CHECK(write_file(p1, "metadata:\n  cloud: gce\n  endpoit: http://x\n") == 0);
	cfg.config_path = p1;
	CHECK(metadata_provider.init(&cfg, &st, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, ":3:3: unknown key \"endpoit\" in metadata");
	CHECK(st == NULL);
	CHECK(write_file(p2, "metadata:\n  cloud: vax\n") == 0);
	cfg.config_path = p2;
	CHECK(metadata_provider.init(&cfg, &st, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "vax");
	CHECK(st == NULL);
	CHECK(write_file(p3, "{}\n") == 0);
	cfg.config_path = p3;
	CHECK(metadata_provider.init(&cfg, &st, &e) == 0);
	CHECK(metadata_md_config(st)->cloud == MD_CLOUD_UNKNOWN);
	metadata_provider.free(st);
	st = NULL;
	cfg.node_name = "";
	CHECK(metadata_provider.init(&cfg, &st, &e) == ERR_INVALID);
	CHECK(st == NULL);
	unlink(p1);
	unlink(p2);
	unlink(p3);
}

TEST_MAIN()
