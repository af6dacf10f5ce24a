/* fuzz_lease.c - libFuzzer harness: a Lease answer from the API server
 * through lease_record_decode, and the same bytes as an RFC 3339 time through
 * lease_time_parse; whatever decodes must encode back to itself. */
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/client.h"
#include "kube/lease.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lease_record r, back;
	struct errbuf e;
	json_tokener *tok;
	json_object *o, *lease, *spec;
	char *s, buf[LEASE_TIME_LEN];
	int64_t t, t2;

	if (size > 65536)
		return 0;
	/* as a time */
	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (lease_time_parse(s, &t) == 0 && lease_time_format(t, buf, sizeof(buf)) == 0) {
		/* the six-digit form parses back to the time cut to microseconds */
		if (strlen(buf) != 27 || lease_time_parse(buf, &t2) < 0 || t2 > t ||
		    t - t2 >= 1000)
			abort();
	}
	free(s);

	/* as a Lease */
	if ((tok = json_tokener_new_ex(KUBE_JSON_DEPTH)) == NULL)
		return 0;
	o = json_tokener_parse_ex(tok, (const char *)data, (int)size);
	json_tokener_free(tok);
	if (o == NULL)
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
