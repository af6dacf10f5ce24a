/* fuzz_csrctl.c - libFuzzer harness: a CertificateSigningRequest object as
 * the API server lists it, on arbitrary bytes, through the approver's
 * decoder and its checks against one fixed, initialized Node (node-a,
 * 10.0.0.5, fd00::5, Hostname node-a). Whatever comes in, the decision is
 * 0 or ERR_INVALID with the failed check named and a message; a decode
 * failure leaves nothing behind. Seed corpus: tests/fuzz/corpus/csrctl
 * (list items around requests of tests/unit/csr_fixtures.h). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/csrctl.h"
#include "base/csr.h"
#include "base/jsonx.h"
#include "kube/node.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char NODE_JSON[] =
	"{\"metadata\":{\"name\":\"node-a\"},\"spec\":{},\"status\":{\"addresses\":["
	"{\"type\":\"InternalIP\",\"address\":\"10.0.0.5\"},"
	"{\"type\":\"InternalIP\",\"address\":\"fd00::5\"},"
	"{\"type\":\"Hostname\",\"address\":\"node-a\"}]}}";

static const struct kube_node *
fuzz_node(void)
{
	static const struct kube_node *n;
	json_object *o = NULL;

	if (n != NULL)
		return n;
	if (jsonx_parse(NODE_JSON, sizeof(NODE_JSON) - 1, 16, &o, NULL) < 0 ||
	    kube_node_decode(o, &n, NULL) < 0)
		abort();
	json_object_put(o);
	return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct csrctl_request q;
	json_object *o = NULL;
	struct errbuf e;
	const char *check = NULL;
	int r;

	memset(&e, 0, sizeof(e));
	if (jsonx_parse((const char *)data, size, 32, &o, &e) < 0)
		return 0;
	memset(&q, 0, sizeof(q));
	r = csrctl_request_decode(o, &q, &e);
	if (r < 0) {
		if ((r != ERR_INVALID && r != ERR_TOO_LARGE) || e.msg[0] == '\0' || q.name != NULL)
			abort();
		json_object_put(o);
		return 0;
	}
	memset(&e, 0, sizeof(e));
	r = csrctl_check(&q, fuzz_node(), CSRCTL_SOURCE_CLOUD, 0, &check, &e);
	if (r != 0 && (r != ERR_INVALID || check == NULL || e.msg[0] == '\0'))
		abort();
	csrctl_request_free(&q);
	json_object_put(o);
	csr_thread_done();
	return 0;
}
