/* fuzz_lease.c - libFuzzer harness: a Lease answer from the API server
 * (jsonx_parse, as kube_request reads it) through lease_record_decode, and
 * the same bytes as a MicroTime through rfc3339_parse_ns; whatever decodes
 * must encode back to itself. */
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "kube/client.h"
#include "kube/lease.h"
#include "base/rfc3339.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lease_record r, back;
	struct errbuf e;
	json_object *o, *lease, *spec;
	char *s, buf[RFC3339_MAX];
	int64_t t, t2;

	if (size > 65536)
		return 0;
	/* as a time */
	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (rfc3339_parse_ns(s, &t) == 0 && rfc3339_format_micro(t, buf, sizeof(buf)) == 0) {
		/* the six-digit form parses back to the time cut to microseconds */
		if (strlen(buf) != 27 || rfc3339_parse_ns(buf, &t2) < 0 || t2 > t ||
		    t - t2 >= 1000)
			abort();
	}
	free(s);

	/* as a Lease */
	if (jsonx_parse((const char *)data, size, KUBE_JSON_DEPTH, &o, &e) < 0)
		return 0;
	memset(&e, 0, sizeof(e));
	if (lease_record_decode(o, &r, &e) < 0) {
		if (e.msg[0] == '\0')
			abort();
	} else if ((spec = lease_record_spec(&r)) != NULL) {
		/* times outside what a MicroTime can say do not encode; all else
		 * must survive a round trip at microsecond precision */
		lease = json_object_new_object();
		json_object_object_add(lease, "spec", spec);
		if (lease_record_decode(lease, &back, &e) < 0 ||
		    strcmp(back.holder, r.holder) != 0 || back.duration_s != r.duration_s ||
		    back.transitions != r.transitions || back.renew_ns > r.renew_ns ||
		    r.renew_ns - back.renew_ns >= 1000)
			abort();
		json_object_put(lease);
	}
	json_object_put(o);
	return 0;
}
