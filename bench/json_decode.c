/* json_decode.c - what one Node's JSON costs to decode: the 12.4 KB Node of
 * bench/testdata/node-12k.json (50 images, 13 labels, 4 managedFields
 * entries) decoded N times in a row, through each step of the reflector's
 * path. Prints one JSON line per step: microseconds per decode, MB/s, and
 * the CPU seconds of the whole loop (user + system).
 *
 * Steps:
 *   json-c      json_tokener_parse, the library alone (default flags)
 *   jsonx       jsonx_parse: the strict parse every answer goes through,
 *               building the whole tree
 *   node-full   jsonx_parse + kube_node_decode: a Node into the cache from
 *               the whole tree (the reflector's path before the kept-fields
 *               parse)
 *   node        jsonx_parse_keep(kube_node_fields) + kube_node_decode: the
 *               reflector's path now, which checks the whole text but builds
 *               only the members the decoder reads
 *
 * Usage: json_decode [--file F] [--iterations N] [--step NAME]
 * Build and run: bench/json_decode.sh (bench/RESULTS.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "base/allocator.h"
#include "benchclock.h"
#include "base/jsonx.h"
#include "kube/client.h"
#include "kube/node.h"
#include "kube/watch.h"

static void
jd_die(const char *what)
{
	fprintf(stderr, "json_decode: %s\n", what);
	exit(1);
}

static void
jd_json_c(const char *buf, size_t len)
{
	json_object *o = json_tokener_parse(buf);

	(void)len;
	if (o == NULL)
		jd_die("json-c refused the document");
	json_object_put(o);
}

static void
jd_jsonx(const char *buf, size_t len)
{
	json_object *o;
	struct errbuf e;

	if (jsonx_parse(buf, len, KUBE_JSON_DEPTH, &o, &e) < 0)
		jd_die(e.msg);
	json_object_put(o);
}

static void
jd_node_full(const char *buf, size_t len)
{
	const struct kube_node *n;
	json_object *o;
	struct errbuf e;

	if (jsonx_parse(buf, len, KUBE_JSON_DEPTH, &o, &e) < 0 ||
	    kube_node_decode(o, &n, &e) < 0)
		jd_die(e.msg);
	json_object_put(o);
	store_obj_unref(&n->obj);
}

static void
jd_node(const char *buf, size_t len)
{
	const struct kube_node *n;
	json_object *o;
	struct errbuf e;

	if (jsonx_parse_keep(buf, len, KUBE_JSON_DEPTH, kube_node_fields, &o, &e) < 0 ||
	    kube_node_decode(o, &n, &e) < 0)
		jd_die(e.msg);
	json_object_put(o);
	store_obj_unref(&n->obj);
}

static const struct {
	const char *name;
	void (*fn)(const char *buf, size_t len);
} jd_steps[] = {
	{ "json-c", jd_json_c },
	{ "jsonx", jd_jsonx },
	{ "node-full", jd_node_full },
	{ "node", jd_node },
};
#define JD_STEPS (sizeof(jd_steps) / sizeof(jd_steps[0]))

int
main(int argc, char **argv)
{
	const char *file = "bench/testdata/node-12k.json", *only = NULL;
	long iterations = 20000;
	char *buf;
	size_t len;
	FILE *f;

#ifdef BOOTCCM_MIMALLOC
	allocator_init();   /* linked with mimalloc: the shipped binary's options */
#endif
	for (int i = 1; i < argc; i += 2) {
		if (i + 1 >= argc)
			jd_die("usage: json_decode [--file F] [--iterations N] [--step NAME]");
		if (strcmp(argv[i], "--file") == 0)
			file = argv[i + 1];
		else if (strcmp(argv[i], "--iterations") == 0)
			iterations = strtol(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--step") == 0)
			only = argv[i + 1];
		else
			jd_die("usage: json_decode [--file F] [--iterations N] [--step NAME]");
	}
	if (iterations < 1)
		jd_die("--iterations must be positive");
	if ((f = fopen(file, "rb")) == NULL)
		jd_die("cannot open the document");
	if ((buf = malloc(1 << 20)) == NULL)
		jd_die("out of memory");
	len = fread(buf, 1, (1 << 20) - 1, f);
	fclose(f);
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	buf[len] = '\0';
	for (size_t s = 0; s < JD_STEPS; s++) {
		if (only && strcmp(only, jd_steps[s].name) != 0)
			continue;
		for (long i = 0; i < iterations / 10 + 1; i++)  /* warm up */
			jd_steps[s].fn(buf, len);
		double c0 = benchclock_cpu(), t0 = benchclock_now();
		for (long i = 0; i < iterations; i++)
			jd_steps[s].fn(buf, len);
		double t = benchclock_now() - t0, c = benchclock_cpu() - c0;
		printf("{\"step\":\"%s\",\"bytes\":%zu,\"iterations\":%ld,\"us_per_decode\":%.2f,"
		    "\"mb_per_s\":%.1f,\"cpu_s\":%.3f,\"wall_s\":%.3f}\n", jd_steps[s].name, len,
		    iterations, t / (double)iterations * 1e6,
		    (double)len * (double)iterations / t / 1e6, c, t);
		fflush(stdout);
	}
	free(buf);
	return 0;
}
