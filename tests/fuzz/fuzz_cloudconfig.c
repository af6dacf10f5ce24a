/* fuzz_cloudconfig.c - libFuzzer harness: cloudconfig_parse on arbitrary
 * bytes against a schema with every key type and a nested section; a failure
 * must leave the output zeroed and name the problem, a success must hold only
 * well-formed values. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/cloudconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_cfg {
	char *s;
	int b;
	long long i;
	int64_t d;
	int64_t bd;     /* a bounded duration: [1ms, 1h] */
	struct cloudconfig_list l;
	struct cloudconfig_map m;
	char *inner;
	int inner_b;
};

static const struct cloudconfig_key fuzz_inner[] = {
	{ .key = "name", .type = CLOUDCONFIG_STRING, .required = 1,
	  .offset = offsetof(struct fuzz_cfg, inner) },
	{ .key = "on", .type = CLOUDCONFIG_BOOL, .def = "true",
	  .offset = offsetof(struct fuzz_cfg, inner_b) },
	{ .key = NULL },
};

static const struct cloudconfig_key fuzz_schema[] = {
	{ .key = "s", .type = CLOUDCONFIG_STRING, .def = "x",
	  .offset = offsetof(struct fuzz_cfg, s) },
	{ .key = "b", .type = CLOUDCONFIG_BOOL, .offset = offsetof(struct fuzz_cfg, b) },
	{ .key = "i", .type = CLOUDCONFIG_INT, .min = -5, .max = 100,
	  .offset = offsetof(struct fuzz_cfg, i) },
	{ .key = "d", .type = CLOUDCONFIG_DURATION, .def = "1s",
	  .offset = offsetof(struct fuzz_cfg, d) },
	{ .key = "bd", .type = CLOUDCONFIG_DURATION, .def = "1s", .min = 1000000LL,
	  .max = 3600000000000LL, .offset = offsetof(struct fuzz_cfg, bd) },
	{ .key = "l", .type = CLOUDCONFIG_STRING_LIST, .offset = offsetof(struct fuzz_cfg, l) },
	{ .key = "m", .type = CLOUDCONFIG_MAP, .offset = offsetof(struct fuzz_cfg, m) },
	{ .key = "sec", .type = CLOUDCONFIG_SECTION, .section = fuzz_inner },
	{ .key = NULL },
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct fuzz_cfg zero;
	struct fuzz_cfg c;
	struct errbuf e;
	size_t k;
	int r;

	memset(&c, 0, sizeof(c));
	memset(&e, 0, sizeof(e));
	r = cloudconfig_parse((const char *)data, size, "fuzz", fuzz_schema, &c, sizeof(c), &e);
	if (r < 0) {
		if (e.msg[0] == '\0' || memcmp(&c, &zero, sizeof(c)) != 0)
			abort();
		return 0;
	}
	if (c.s == NULL || (c.b != 0 && c.b != 1) || c.i < -5 || c.i > 100 || c.d < 0 ||
	    c.bd < 1000000LL || c.bd > 3600000000000LL ||
	    (c.inner_b != 0 && c.inner_b != 1))
		abort();
	for (k = 0; k < c.l.n; k++)
		if (c.l.items[k] == NULL || strlen(c.l.items[k]) >= CLOUDCONFIG_STRING_MAX)
			abort();
	for (k = 0; k < c.m.n; k++)
		if (c.m.keys[k] == NULL || c.m.values[k] == NULL)
			abort();
	cloudconfig_free(fuzz_schema, &c);
	if (c.s != NULL || c.inner != NULL || c.l.items != NULL || c.m.keys != NULL)
		abort();
	return 0;
}
