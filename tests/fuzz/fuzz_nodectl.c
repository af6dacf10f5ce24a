/* fuzz_nodectl.c - libFuzzer harness: the cloud-node controller's pure parts
 * on an arbitrary Node (JSON, decoded like the cache does) against a fixed
 * instance: the provided-node-ip annotation parser and the address rules,
 * the JSON patch of the second write and the status patch. Checks that the
 * result never holds more addresses than the room given, that every address
 * comes from the instance or the Node, and that the patch is an array. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/nodectl.h"
#include "controllers/nodeview.h"
#include "base/jsonx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_instance(struct cloud_instance_metadata *m)
{
	static const char *const ips[] = { "10.0.0.5", "10.0.0.6", "2001:db8::5", "3.14.15.92" };

	memset(m, 0, sizeof(*m));
	snprintf(m->provider_id, sizeof(m->provider_id), "aws:///z/i-1");
	snprintf(m->zone, sizeof(m->zone), "z");
	snprintf(m->labels[0].key, sizeof(m->labels[0].key), "example.com/x");
	snprintf(m->labels[0].value, sizeof(m->labels[0].value), "1");
	m->n_labels = 1;
	for (size_t i = 0; i < 4; i++) {
		m->addresses[i].type = i == 3 ? CLOUD_ADDR_EXTERNAL_IP : CLOUD_ADDR_INTERNAL_IP;
		snprintf(m->addresses[i].address, sizeof(m->addresses[i].address), "%s", ips[i]);
	}
	m->n_addresses = 4;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cloud_instance_metadata m;
	struct cloud_address out[CLOUD_ADDRS_MAX + 1];
	const struct kube_node *n = NULL;
	struct nodeview v;
	struct errbuf e;
	json_object *j = NULL, *ops;
	size_t k = 0;

	if (jsonx_parse((const char *)data, size, JSONX_DEPTH_MAX, &j, &e) < 0)
		return 0;
	if (kube_node_decode(j, &n, &e) < 0) {
		json_object_put(j);
		return 0;
	}
	json_object_put(j);
	fuzz_instance(&m);
	if (nodectl_addresses(n, &m, out, &k, &e) == 0) {
		if (k > CLOUD_ADDRS_MAX + 1)
			abort();
		json_object_put(nodectl_status_patch(out, k));
	}
	for (int init = 0; init < 2; init++) {
		ops = nodectl_node_ops(n, init ? &m : NULL);
		if (!json_object_is_type(ops, json_type_array))
			abort();
		json_object_put(ops);
	}
	nodeview_init(&v, n);
	if (v.node.n_addresses > n->naddresses)
		abort();
	nodeview_free(&v);
	store_obj_unref(&n->obj);
	return 0;
}
