/* fuzz_kubeconfig.c - libFuzzer harness: kubeconfig_load_buffer on arbitrary
 * bytes, with relative paths resolving into a directory that does not exist. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kubeconfig kc;
	struct errbuf e;
	char *token = NULL;
	int r;

	/* Device and kernel files can block or never end; the loader reads
	 * what an operator names, so keep the fuzzer away from them. */
	if (memmem(data, size, "/dev", 4) != NULL ||
	    memmem(data, size, "/proc", 5) != NULL ||
	    memmem(data, size, "/sys", 4) != NULL)
		return 0;
	memset(&kc, 0, sizeof(kc));
	memset(&e, 0, sizeof(e));
	r = kubeconfig_load_buffer((const char *)data, size, "fuzz.conf",
	    "/nonexistent-fuzz-dir", NULL, &kc, &e);
	if (r < 0) {
		if (e.msg[0] == '\0' || kc.server != NULL)
			abort();
		return 0;
	}
	if (kc.server == NULL || strncmp(kc.server, "http", 4) != 0)
		abort();
	if (kubeconfig_token(&kc, &token, &e) == 0)
		free(token);
	kubeconfig_free(&kc);
	return 0;
}
