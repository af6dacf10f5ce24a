/* fuzz_csr.c - libFuzzer harness: the PKCS#10 parser on arbitrary bytes, as
 * the PEM text itself and wrapped in a PEM block (so the DER reader is
 * reached without valid base64 by chance). A request it accepts must be
 * whole (a key type, a signature algorithm, every SAN with text); one it
 * refuses must come with a message and leave nothing behind. Seed corpus:
 * tests/fuzz/corpus/csr (requests made by tests/unit/gen-csr-fixtures.sh). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/csr.h"
#include "base/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_one(const char *pem, size_t len)
{
	struct csr c;
	struct errbuf e;
	size_t i;
	int r;

	memset(&c, 0, sizeof(c));
	memset(&e, 0, sizeof(e));
	r = csr_parse(pem, len, &c, &e);
	if (r == 0) {
		if (c.key_type == 0 || c.sig_alg == NULL || c.key_bits <= 0)
			abort();
		for (i = 0; i < c.n_sans; i++)
			if (c.sans[i].value == NULL || c.sans[i].value[0] == '\0')
				abort();
		(void)csr_check_node_subject(&c, "node-a", &e);
		csr_free(&c);
	} else if (r == ERR_INVALID || r == ERR_TOO_LARGE) {
		if (e.msg[0] == '\0' || c.cn != NULL || c.sans != NULL || c.orgs != NULL)
			abort();
	} else {
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char begin[] = "-----BEGIN CERTIFICATE REQUEST-----\n",
	    end[] = "\n-----END CERTIFICATE REQUEST-----\n";
	char *b64, *pem;

	fuzz_one((const char *)data, size);
	if (size > CSR_DER_MAX + 16)
		return 0;
	b64 = base64_encode(data, size);
	pem = xasprintf("%s%s%s", begin, b64, end);
	fuzz_one(pem, strlen(pem));
	free(pem);
	free(b64);
	return 0;
}
