/* fuzz_jsonx.c - libFuzzer harness: the strict JSON parser and the RFC 3339
 * parser on arbitrary bytes. What jsonx_parse accepts must be a tree json-c
 * can print and jsonx_parse accept again, unchanged; what it refuses must
 * come with a message; the time parser must never read past the string or
 * accept what formats back differently. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "rfc3339.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_time(const uint8_t *data, size_t size)
{
	char s[64], out[RFC3339_MAX];
	int64_t sec, again;
	int32_t ns, ns2;

	if (size >= sizeof(s))
		return;
	memcpy(s, data, size);
	s[size] = '\0';
	if (rfc3339_parse(s, &sec, &ns) < 0)
		return;
	if (ns < 0 || ns > 999999999)
		abort();
	/* its UTC rendering parses to the same instant */
	if (rfc3339_format(sec, out, sizeof(out)) == 0 &&
	    (rfc3339_parse(out, &again, &ns2) < 0 || again != sec || ns2 != 0))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_object *o = NULL, *o2 = NULL;
	struct errbuf e = { "" };
	const char *text;

	fuzz_time(data, size);
	if (jsonx_parse((const char *)data, size, 16, &o, &e) < 0) {
		if (e.msg[0] == '\0')
			abort();
		return 0;
	}
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	if (text == NULL || jsonx_parse(text, strlen(text), 16, &o2, &e) < 0)
		abort();
	if (!json_object_equal(o, o2))
		abort();
	json_object_put(o);
	json_object_put(o2);
	return 0;
}
