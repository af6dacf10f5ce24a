/* fuzz_static_inventory.c - libFuzzer harness: the static provider's
 * inventory (inventory_parse) on arbitrary bytes. A failure must name the
 * problem and hand out nothing; an inventory must hold only checked
 * values: unique names and providerIDs found again by lookup, metadata that
 * fits the provider interface, IP addresses in canonical form. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../providers/static/inventory.h"
#include "base/netaddr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cloud_instance_metadata m;
	struct inventory *inv = NULL;
	struct errbuf e;
	int r;

	memset(&e, 0, sizeof(e));
	r = inventory_parse((const char *)data, size, "fuzz.yaml", &inv, &e);
	if (r < 0) {
		if (e.msg[0] == '\0' || inv != NULL)
			abort();
		return 0;
	}
	for (size_t i = 0; i < inventory_count(inv); i++) {
		const struct inventory_instance *in = inventory_at(inv, i);
		char canon[NETADDR_TEXT_MAX];

		if (in == NULL || inventory_find(inv, in->name, NULL) != in ||
		    inventory_find(inv, NULL, in->provider_id) != in)
			abort();
		inventory_metadata(in, &m);
		if (m.provider_id[0] == '\0' || strcmp(m.provider_id, in->provider_id) != 0 ||
		    m.n_addresses > CLOUD_ADDRS_MAX || m.n_labels > CLOUD_LABELS_MAX)
			abort();
		for (size_t j = 0; j < m.n_addresses; j++) {
			enum cloud_addr_type t = m.addresses[j].type;
			if ((t == CLOUD_ADDR_INTERNAL_IP || t == CLOUD_ADDR_EXTERNAL_IP) &&
			    (netaddr_canonical(m.addresses[j].address, canon) < 0 ||
			    strcmp(canon, m.addresses[j].address) != 0))
				abort();
		}
	}
	inventory_unref(inv);
	return 0;
}
