/* cache_memory.c - how much memory the Node cache takes: N realistic Node
 * objects (managedFields, conditions, addresses, labels, annotations and,
 * unless --images 0, an image list in status.images) are streamed as LIST
 * pages through the same path the reflector uses (the list item splitter,
 * the JSON parser, the Node decoder, the store), then once more as watch
 * MODIFIED events (the line splitter and event decoder). Prints one JSON
 * line: the store's own bytes, the process's RSS and peak RSS (VmHWM), and
 * the wall and CPU seconds of the LIST and of the watch events (which
 * include generating the JSON: generate_cpu_seconds is that alone, for one
 * pass over the nodes).
 *
 * Usage: cache_memory [--nodes N] [--images K] [--page P] [--chunk BYTES]
 *        cache_memory --dump [--nodes N] [--images K]
 *            print the generated nodes, one JSON object a line
 *        cache_memory --kubeconfig FILE   (built with -DBENCH_REFLECTOR)
 *            run the real reflector (HTTPS, paging, decoding) against an API
 *            server until it has synced, and report the whole process
 * Build and run: bench/cache_memory.sh (see bench/RESULTS.md). */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/allocator.h"
#include "benchclock.h"
#include "kube/node.h"
#include "kube/store.h"
#include "kube/watch.h"
#ifdef BENCH_REFLECTOR
#include "http/http.h"
#include "kube/reflector.h"
#include "config/kubeconfig.h"
#include "base/log.h"
#endif

#define BENCH_NODE_MAX (256 * 1024)  /* bytes: one generated Node */

struct bench {
	int nodes, images, page;
	size_t chunk;
	struct store *store;
	char *buf;                /* one generated node */
	size_t len;
	char *out;                /* the body being streamed, one chunk at most */
	size_t out_len;
	struct kube_watch_list list;
	struct kube_watch_lines lines;
	size_t json_bytes, decoded, failed;
	int rv;
};

static void
bench_die(const char *what)
{
	fprintf(stderr, "cache_memory: %s\n", what);
	exit(1);
}

/* bench_put appends formatted text to the node buffer. */
static void __attribute__((format(printf, 2, 3)))
bench_put(struct bench *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b->buf + b->len, BENCH_NODE_MAX - b->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= BENCH_NODE_MAX - b->len)
		bench_die("a generated node is too large");
	b->len += (size_t)n;
}

/* bench_node writes node i as kube-apiserver would send it (keys sorted,
 * compact), like a kubeadm worker on a cloud after the CCM initialized it. */
static void
bench_node(struct bench *b, int i, int rv)
{
	static const char *const conds[][3] = {
		{ "MemoryPressure", "False", "KubeletHasSufficientMemory" },
		{ "DiskPressure", "False", "KubeletHasNoDiskPressure" },
		{ "PIDPressure", "False", "KubeletHasSufficientPID" },
		{ "Ready", "True", "KubeletReady" },
	};
	unsigned h = (unsigned)i * 2654435761u;

	b->len = 0;
	bench_put(b, "{\"metadata\":{\"annotations\":{"
	    "\"alpha.kubernetes.io/provided-node-ip\":\"10.0.%d.%d\","
	    "\"csi.volume.kubernetes.io/nodeid\":\"{\\\"csi.hetzner.cloud\\\":\\\"%u\\\"}\","
	    "\"kubeadm.alpha.kubernetes.io/cri-socket\":\"unix:///var/run/containerd/containerd.sock\","
	    "\"node.alpha.kubernetes.io/ttl\":\"0\","
	    "\"volumes.kubernetes.io/controller-managed-attach-detach\":\"true\"},"
	    "\"creationTimestamp\":\"2026-11-21T08:%02d:%02dZ\",",
	    i / 250, i % 250, 40000000 + i, (i / 60) % 60, i % 60);
	bench_put(b, "\"labels\":{\"beta.kubernetes.io/arch\":\"amd64\","
	    "\"beta.kubernetes.io/instance-type\":\"cpx31\",\"beta.kubernetes.io/os\":\"linux\","
	    "\"csi.hetzner.cloud/location\":\"fsn1\","
	    "\"failure-domain.beta.kubernetes.io/region\":\"fsn1\","
	    "\"failure-domain.beta.kubernetes.io/zone\":\"fsn1-dc14\","
	    "\"instance.hetzner.cloud/provided-by\":\"cloud\",\"kubernetes.io/arch\":\"amd64\","
	    "\"kubernetes.io/hostname\":\"worker-%05d\",\"kubernetes.io/os\":\"linux\","
	    "\"node.kubernetes.io/instance-type\":\"cpx31\","
	    "\"topology.kubernetes.io/region\":\"fsn1\","
	    "\"topology.kubernetes.io/zone\":\"fsn1-dc14\"},", i);
	/* managedFields: kubeadm, kubelet (status), the CCM and kube-controller-manager */
	bench_put(b, "\"managedFields\":["
	    "{\"apiVersion\":\"v1\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":"
	    "{\"f:annotations\":{\".\":{},\"f:kubeadm.alpha.kubernetes.io/cri-socket\":{},"
	    "\"f:node.alpha.kubernetes.io/ttl\":{},"
	    "\"f:volumes.kubernetes.io/controller-managed-attach-detach\":{}},\"f:labels\":{\".\":{},"
	    "\"f:beta.kubernetes.io/arch\":{},\"f:beta.kubernetes.io/os\":{},"
	    "\"f:kubernetes.io/arch\":{},\"f:kubernetes.io/hostname\":{},\"f:kubernetes.io/os\":{}}}},"
	    "\"manager\":\"kubelet\",\"operation\":\"Update\",\"time\":\"2026-11-21T08:00:00Z\"},"
	    "{\"apiVersion\":\"v1\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":"
	    "{\"f:podCIDR\":{},\"f:podCIDRs\":{\".\":{},\"v:\\\"10.%d.%d.0/24\\\"\":{}}}},"
	    "\"manager\":\"kube-controller-manager\",\"operation\":\"Update\","
	    "\"time\":\"2026-11-21T08:00:01Z\"},"
	    "{\"apiVersion\":\"v1\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":"
	    "{\"f:labels\":{\"f:beta.kubernetes.io/instance-type\":{},"
	    "\"f:failure-domain.beta.kubernetes.io/region\":{},"
	    "\"f:failure-domain.beta.kubernetes.io/zone\":{},"
	    "\"f:node.kubernetes.io/instance-type\":{},\"f:topology.kubernetes.io/region\":{},"
	    "\"f:topology.kubernetes.io/zone\":{}}},\"f:spec\":{\"f:providerID\":{}}},"
	    "\"manager\":\"bootccm\",\"operation\":\"Update\",\"time\":\"2026-11-21T08:00:02Z\"},"
	    "{\"apiVersion\":\"v1\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:status\":"
	    "{\"f:addresses\":{\"k:{\\\"type\\\":\\\"ExternalIP\\\"}\":{\".\":{},\"f:address\":{},"
	    "\"f:type\":{}},\"k:{\\\"type\\\":\\\"Hostname\\\"}\":{\".\":{},\"f:address\":{},"
	    "\"f:type\":{}},\"k:{\\\"type\\\":\\\"InternalIP\\\"}\":{\".\":{},\"f:address\":{},"
	    "\"f:type\":{}}},\"f:allocatable\":{\"f:cpu\":{},\"f:ephemeral-storage\":{},"
	    "\"f:memory\":{}},\"f:capacity\":{\"f:cpu\":{},\"f:ephemeral-storage\":{},"
	    "\"f:memory\":{}},\"f:conditions\":{\"k:{\\\"type\\\":\\\"DiskPressure\\\"}\":"
	    "{\"f:lastHeartbeatTime\":{}},\"k:{\\\"type\\\":\\\"MemoryPressure\\\"}\":"
	    "{\"f:lastHeartbeatTime\":{}},\"k:{\\\"type\\\":\\\"PIDPressure\\\"}\":"
	    "{\"f:lastHeartbeatTime\":{}},\"k:{\\\"type\\\":\\\"Ready\\\"}\":"
	    "{\"f:lastHeartbeatTime\":{},\"f:lastTransitionTime\":{},\"f:message\":{},"
	    "\"f:reason\":{},\"f:status\":{}}},\"f:images\":{},\"f:nodeInfo\":"
	    "{\"f:bootID\":{}}}},\"manager\":\"kubelet\",\"operation\":\"Update\","
	    "\"subresource\":\"status\",\"time\":\"2026-11-21T08:30:00Z\"}],",
	    i / 256, i % 256);
	bench_put(b, "\"name\":\"worker-%05d\",\"resourceVersion\":\"%d\","
	    "\"uid\":\"%08x-%04x-4%03x-8%03x-%08x%04x\"},", i, rv, h, h & 0xffff,
	    (unsigned)i & 0xfff, (h >> 4) & 0xfff, h ^ 0x5bd1e995u, (unsigned)i & 0xffff);
	bench_put(b, "\"spec\":{\"podCIDR\":\"10.%d.%d.0/24\",\"podCIDRs\":[\"10.%d.%d.0/24\"],"
	    "\"providerID\":\"hcloud://%d\"},", i / 256, i % 256, i / 256, i % 256,
	    40000000 + i);
	bench_put(b, "\"status\":{\"addresses\":[{\"address\":\"10.0.%d.%d\",\"type\":\"InternalIP\"},"
	    "{\"address\":\"203.0.%d.%d\",\"type\":\"ExternalIP\"},"
	    "{\"address\":\"worker-%05d\",\"type\":\"Hostname\"}],"
	    "\"allocatable\":{\"cpu\":\"4\",\"ephemeral-storage\":\"150566324844\","
	    "\"hugepages-1Gi\":\"0\",\"hugepages-2Mi\":\"0\",\"memory\":\"7935160Ki\",\"pods\":\"110\"},"
	    "\"capacity\":{\"cpu\":\"4\",\"ephemeral-storage\":\"163375708Ki\",\"hugepages-1Gi\":\"0\","
	    "\"hugepages-2Mi\":\"0\",\"memory\":\"8037560Ki\",\"pods\":\"110\"},\"conditions\":[",
	    i / 250, i % 250, i / 250, i % 250, i);
	for (size_t c = 0; c < sizeof(conds) / sizeof(conds[0]); c++)
		bench_put(b, "%s{\"lastHeartbeatTime\":\"2026-11-21T09:%02d:%02dZ\","
		    "\"lastTransitionTime\":\"2026-11-21T08:01:00Z\",\"message\":\"%s\","
		    "\"reason\":\"%s\",\"status\":\"%s\",\"type\":\"%s\"}", c ? "," : "",
		    (i / 60) % 60, i % 60,
		    c == 3 ? "kubelet is posting ready status" : "kubelet has no pressure",
		    conds[c][2], conds[c][1], conds[c][0]);
	bench_put(b, "],\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":10250}},");
	if (b->images) {
		bench_put(b, "\"images\":[");
		for (int k = 0; k < b->images; k++)
			bench_put(b, "%s{\"names\":[\"registry.example.com/team-%02d/service-%02d@sha256:"
			    "%08x%08x%08x%08x%08x%08x%08x%08x\",\"registry.example.com/team-%02d/"
			    "service-%02d:v1.%d.%d\"],\"sizeBytes\":%u}", k ? "," : "", k % 7, k,
			    h ^ (unsigned)k, 0x9e3779b9u * (unsigned)k, h + 17, (unsigned)k * 31u,
			    h >> 3, 0xdeadbeefu ^ (unsigned)k, h * 7u, (unsigned)k, k % 7, k, k % 9,
			    k % 13, 10000000u + (unsigned)k * 1234567u);
		bench_put(b, "],");
	}
	bench_put(b, "\"nodeInfo\":{\"architecture\":\"amd64\",\"bootID\":\"%08x-0000-4000-8000-"
	    "%012x\",\"containerRuntimeVersion\":\"containerd://1.7.24\","
	    "\"kernelVersion\":\"6.1.0-28-amd64\",\"kubeProxyVersion\":\"v1.32.0\","
	    "\"kubeletVersion\":\"v1.32.0\",\"machineID\":\"%032x\",\"operatingSystem\":\"linux\","
	    "\"osImage\":\"Debian GNU/Linux 12 (bookworm)\",\"systemUUID\":\"%08x-0000-4000-8000-"
	    "%012x\"}}}", h, (unsigned)i, h, h ^ 1, (unsigned)i);
}

static int
bench_store_obj(struct bench *b, json_object *o)
{
	const struct store_obj *obj;
	struct errbuf e;

	if (kube_node_decode_obj(o, &obj, &e) < 0) {
		b->failed++;
		fprintf(stderr, "cache_memory: %s\n", e.msg);
		return 0;
	}
	b->decoded++;
	if (store_put(b->store, obj, NULL) < 0)
		bench_die("store_put failed");
	return 0;
}

static int
bench_on_item(const char *item, size_t len, void *arg)
{
	struct bench *b = arg;
	json_object *o;
	struct errbuf e;

	if (kube_watch_parse_keep(item, len, kube_node_fields, &o, &e) < 0)
		bench_die(e.msg);
	bench_store_obj(b, o);
	json_object_put(o);
	return 0;
}

static int
bench_on_line(const char *line, size_t len, void *arg)
{
	struct bench *b = arg;
	struct kube_watch_event ev;
	struct errbuf e;

	if (kube_watch_event_decode(line, len, kube_node_fields, &ev, &e) < 0)
		bench_die(e.msg);
	bench_store_obj(b, ev.object);
	kube_watch_event_free(&ev);
	return 0;
}

/* bench_emit streams text to the splitter in chunks of b->chunk bytes, as
 * the transport would hand them over. */
static void
bench_emit(struct bench *b, const char *text, size_t len, int watch)
{
	struct errbuf e;

	b->json_bytes += len;
	while (len) {
		size_t n = b->chunk - b->out_len < len ? b->chunk - b->out_len : len;
		memcpy(b->out + b->out_len, text, n);
		b->out_len += n;
		text += n;
		len -= n;
		if (b->out_len == b->chunk) {
			int r = watch ? kube_watch_lines_feed(&b->lines, b->out, b->out_len,
			    bench_on_line, b, &e) : kube_watch_list_feed(&b->list, b->out, b->out_len,
			    bench_on_item, b, &e);
			if (r < 0)
				bench_die(e.msg);
			b->out_len = 0;
		}
	}
}

static void
bench_emits(struct bench *b, const char *text, int watch)
{
	bench_emit(b, text, strlen(text), watch);
}

static void
bench_flush(struct bench *b, int watch)
{
	struct errbuf e;
	int r;

	if (b->out_len == 0)
		return;
	r = watch ? kube_watch_lines_feed(&b->lines, b->out, b->out_len, bench_on_line, b, &e) :
	    kube_watch_list_feed(&b->list, b->out, b->out_len, bench_on_item, b, &e);
	if (r < 0)
		bench_die(e.msg);
	b->out_len = 0;
}

/* bench_status reads a "VmRSS:"-style line of /proc/self/status in KiB. */
static long
bench_status(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, strlen(key)) == 0) {
			char *end;
			v = strtol(line + strlen(key), &end, 10);
			break;
		}
	fclose(f);
	return v;
}

#ifdef BENCH_REFLECTOR
/* bench_reflector lists and watches nodes through the real client until the
 * store has synced, then reports like the synthetic run. */
static int
bench_reflector(const char *kubeconfig)
{
	struct reflector_config cfg = {
		.resource = "nodes", .path = KUBE_NODE_PATH, .decode = kube_node_decode_obj,
		.user_agent = "cache_memory",
	};
	struct kubeconfig kc;
	struct reflector *r = NULL;
	struct errbuf e = { "" };
	long rss0 = bench_status("VmRSS:");
	double t0 = benchclock_now();

	/* as bootccm's main: a connection the fake closes while a request is
	 * written is an error of that request, not the end of the process */
	signal(SIGPIPE, SIG_IGN);
	log_init(0, LOG_TEXT, 2);
	if (http_global_init(&e) < 0 || kubeconfig_load(kubeconfig, NULL, &kc, &e) < 0 ||
	    reflector_new(&kc, &cfg, &r, &e) < 0 || reflector_start(r, &e) < 0)
		bench_die(e.msg);
	while (!reflector_has_synced(r)) {
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
		if (benchclock_now() - t0 > 900)
			bench_die("no sync within 900 s");
	}
	double t_sync = benchclock_now() - t0, cpu_sync = benchclock_cpu();
	struct store *s = reflector_store(r);
	size_t sb = store_bytes(s), n = store_len(s);
	long rss = bench_status("VmRSS:"), hwm = bench_status("VmHWM:");
	reflector_stop(r);
	printf("{\"mode\":\"reflector\",\"nodes\":%zu,\"store_bytes\":%zu,"
	    "\"store_bytes_per_node\":%.0f,\"rss_start_kib\":%ld,\"rss_kib\":%ld,"
	    "\"hwm_kib\":%ld,\"sync_seconds\":%.3f,\"sync_cpu_seconds\":%.3f}\n", n, sb,
	    (double)sb / (double)n, rss0, rss, hwm, t_sync, cpu_sync);
	reflector_free(r);
	kubeconfig_free(&kc);
	return 0;
}
#endif

int
main(int argc, char **argv)
{
	struct bench b = { .nodes = 5000, .images = 50, .page = 500, .chunk = 16384, .rv = 1000 };
	struct errbuf e;
	char head[128], rv[KUBE_WATCH_RV_MAX], *cont = NULL;
	long rss0, hwm0;
	double t0, t_list, t_watch, c0, c_list, c_watch, c_gen;
	size_t list_json;

	int dump = 0;

#ifdef BOOTCCM_MIMALLOC
	allocator_init();   /* linked with mimalloc: the shipped binary's options */
#endif
	for (int i = 1; i < argc; i += 2) {
		if (strcmp(argv[i], "--dump") == 0) {
			dump = 1;
			i--;
			continue;
		}
#ifdef BENCH_REFLECTOR
		if (strcmp(argv[i], "--kubeconfig") == 0 && i + 1 < argc)
			return bench_reflector(argv[i + 1]);
#endif
		if (i + 1 >= argc)
			bench_die("usage: cache_memory [--nodes N] [--images K] [--page P] [--chunk B]");
		long v = strtol(argv[i + 1], NULL, 10);
		if (strcmp(argv[i], "--nodes") == 0)
			b.nodes = (int)v;
		else if (strcmp(argv[i], "--images") == 0)
			b.images = (int)v;
		else if (strcmp(argv[i], "--page") == 0)
			b.page = (int)v;
		else if (strcmp(argv[i], "--chunk") == 0)
			b.chunk = (size_t)v;
		else
			bench_die("usage: cache_memory [--nodes N] [--images K] [--page P] [--chunk B]");
	}
	if (b.nodes < 1 || b.page < 1 || b.images < 0 || b.chunk < 1)
		bench_die("bad arguments");
	if ((b.buf = malloc(BENCH_NODE_MAX)) == NULL || (b.out = malloc(b.chunk)) == NULL ||
	    (b.store = store_new()) == NULL)
		bench_die("out of memory");
	if (dump) {
		for (int i = 0; i < b.nodes; i++) {
			bench_node(&b, i, b.rv + i);
			fwrite(b.buf, 1, b.len, stdout);
			fputc('\n', stdout);
		}
		return 0;
	}
	kube_watch_list_init(&b.list, 0);
	kube_watch_lines_init(&b.lines, 0);
	rss0 = bench_status("VmRSS:");
	hwm0 = bench_status("VmHWM:");

	/* what generating the nodes costs alone, to tell it from the rest */
	c0 = benchclock_cpu();
	for (int i = 0; i < b.nodes; i++)
		bench_node(&b, i, b.rv + i);
	c_gen = benchclock_cpu() - c0;

	/* the initial LIST, page by page */
	t0 = benchclock_now();
	c0 = benchclock_cpu();
	for (int first = 0; first < b.nodes; first += b.page) {
		int last = first + b.page < b.nodes ? first + b.page : b.nodes;
		bench_emits(&b, "{\"apiVersion\":\"v1\",\"items\":[", 0);
		for (int i = first; i < last; i++) {
			bench_node(&b, i, b.rv + i);
			if (i > first)
				bench_emits(&b, ",", 0);
			bench_emit(&b, b.buf, b.len, 0);
		}
		int n = snprintf(head, sizeof(head), "],\"kind\":\"NodeList\",\"metadata\":"
		    "{\"continue\":\"%s\",\"resourceVersion\":\"%d\"}}\n",
		    last < b.nodes ? "next" : "", b.rv + b.nodes);
		bench_emit(&b, head, (size_t)n, 0);
		bench_flush(&b, 0);
		if (kube_watch_list_finish(&b.list, rv, sizeof(rv), &cont, &e) < 0)
			bench_die(e.msg);
		free(cont);
		kube_watch_list_reset(&b.list);
	}
	t_list = benchclock_now() - t0;
	c_list = benchclock_cpu() - c0;
	list_json = b.json_bytes;
	long rss_list = bench_status("VmRSS:"), hwm_list = bench_status("VmHWM:");
	size_t store_bytes_list = store_bytes(b.store);

	/* every node changes once: a MODIFIED event each */
	t0 = benchclock_now();
	c0 = benchclock_cpu();
	b.rv += b.nodes;
	for (int i = 0; i < b.nodes; i++) {
		bench_node(&b, i, b.rv + i);
		bench_emits(&b, "{\"type\":\"MODIFIED\",\"object\":", 1);
		bench_emit(&b, b.buf, b.len, 1);
		bench_emits(&b, "}\n", 1);
	}
	bench_flush(&b, 1);
	t_watch = benchclock_now() - t0;
	c_watch = benchclock_cpu() - c0;
	long rss = bench_status("VmRSS:"), hwm = bench_status("VmHWM:");
	size_t sb = store_bytes(b.store), n = store_len(b.store);

	printf("{\"nodes\":%zu,\"images\":%d,\"decoded\":%zu,\"failed\":%zu,"
	    "\"json_bytes_per_node\":%zu,\"store_bytes\":%zu,\"store_bytes_per_node\":%.0f,"
	    "\"store_bytes_after_list\":%zu,"
	    "\"rss_start_kib\":%ld,\"hwm_start_kib\":%ld,\"rss_after_list_kib\":%ld,"
	    "\"hwm_after_list_kib\":%ld,\"rss_kib\":%ld,\"hwm_kib\":%ld,"
	    "\"rss_per_node_bytes\":%.0f,\"list_seconds\":%.3f,\"watch_seconds\":%.3f,"
	    "\"list_cpu_seconds\":%.3f,\"watch_cpu_seconds\":%.3f,\"generate_cpu_seconds\":%.3f}\n",
	    n, b.images, b.decoded, b.failed, list_json / (size_t)b.nodes, sb,
	    (double)sb / (double)n, store_bytes_list, rss0, hwm0, rss_list, hwm_list, rss, hwm,
	    (double)(rss - rss0) * 1024.0 / (double)n, t_list, t_watch, c_list, c_watch, c_gen);
	kube_watch_lines_reset(&b.lines);
	store_free(b.store);
	free(b.buf);
	free(b.out);
	return b.failed ? 1 : 0;
}
