/* fuzz_client.c - libFuzzer harness for what the API client parses from the
 * outside: Status bodies (kube_status_decode), request paths
 * (kube_request_info) and transport messages (kube_retry_reason). The first
 * two bytes pick the HTTP status; the rest is the input. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = { "GET", "HEAD", "POST", "PUT", "PATCH",
	    "DELETE" };
	char verb[KUBE_VERB_MAX], resource[KUBE_RESOURCE_MAX];
	struct errbuf e;
	long status;
	char *s;
	int r;

	if (size < 2)
		return 0;
	status = 100 + (long)((data[0] << 8 | data[1]) % 500);
	data += 2;
	size -= 2;
	r = kube_status_decode(status, (const char *)data, size, &e);
	if (r > 0 || strlen(e.msg) >= sizeof(e.msg))
		abort();
	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		kube_request_info(methods[i], s, verb, resource);
		if (strlen(verb) >= KUBE_VERB_MAX || strlen(resource) >= KUBE_RESOURCE_MAX)
			abort();
		(void)kube_retry_reason(methods[i], 0, ERR_TRANSIENT, s, 0);
		(void)kube_retry_reason(methods[i], 0, ERR_TLS, s, 1);
		(void)kube_retry_reason(methods[i], 0, ERR_TIMEOUT, s, (int)(i & 1));
	}
	free(s);
	return 0;
}
