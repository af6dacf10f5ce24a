/* fuzz_static_config.c - libFuzzer harness: the static provider's
 * cloud-config (its static: section, the pools) through the provider's init
 * on arbitrary bytes, then one dual-stack Service allocated from what
 * loaded. A failure must name the problem and hand out no state; a provider
 * must allocate only addresses, or fail with a message. The inventory key
 * is kept out (it names a file to read; the inventory has its own
 * harness). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../providers/static/static.h"
#include "base/netaddr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The config file: a memory file named by its /proc path (a file on disk,
 * truncated and written again each run, costs milliseconds). */
static int fd = -1;
static char path[64];

static void
fuzz_ensure(void *st)
{
	static const char *const families[] = { "IPv6", "IPv4" };
	static const struct cloud_lb_port ports[] = { { "http", "TCP", 80, 30080, NULL } };
	struct cloud_service svc = {
		.namespace_ = "ns", .name = "svc", .uid = "u", .creation_timestamp = 1,
		.type = "LoadBalancer", .ip_families = families, .n_ip_families = 2,
		.ip_family_policy = "PreferDualStack", .ports = ports, .n_ports = 1, .served = 1,
	};
	struct cloud_lb_result res;
	struct errbuf e;
	struct netaddr a;
	int r;

	svc.status = &res.status;
	memset(&res, 0, sizeof(res));
	(void)static_provider.load_balancers->observe(st, "ns/svc", &svc);
	memset(&e, 0, sizeof(e));
	r = static_provider.load_balancers->ensure(st, "k", &svc, NULL, 0, &res, &e);
	if (r < 0) {
		if (e.msg[0] == '\0')
			abort();
		return;
	}
	if (res.status.n_ingress == 0 || res.status.n_ingress > 2)
		abort();
	for (size_t i = 0; i < res.status.n_ingress; i++)
		if (netaddr_parse(res.status.ingress[i].ip, &a) < 0)
			abort();
	if (static_provider.load_balancers->ensure_deleted(st, "k", &svc, &res, &e) < 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cloud_config cc = { .node_name = "fuzz" };
	struct errbuf e;
	void *st = NULL;
	int r;

	/* without the word, no key can name the inventory file (escapes and
	 * folding need a backslash or a space) */
	if (memmem(data, size, "inventory", 9) != NULL || memchr(data, '\\', size) != NULL)
		return 0;
	if (fd < 0) {
		if ((fd = memfd_create("fuzz_static_config.yaml", MFD_CLOEXEC)) < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	cc.config_path = path;
	memset(&e, 0, sizeof(e));
	r = static_provider.init(&cc, &st, &e);
	if (r < 0) {
		if (e.msg[0] == '\0' || st != NULL)
			abort();
		return 0;
	}
	fuzz_ensure(st);
	static_provider.free(st);
	return 0;
}
