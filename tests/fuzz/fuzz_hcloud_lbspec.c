/* fuzz_hcloud_lbspec.c - libFuzzer harness: a Service's load balancer
 * annotations (load-balancer.hetzner.cloud/...) on arbitrary bytes, one
 * "name=value" a line, read by hclbspec_parse. A refusal must name the
 * Service; an accepted spec must have sane values and make sane service
 * bodies. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../providers/hcloud/hclbspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ANNOTATIONS 16

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct cloud_lb_port ports[] = {
		{ "http", "TCP", 80, 30080, NULL }, { "dns", "UDP", 53, 30053, NULL },
		{ "https", "TCP", 443, 30443, NULL },
	};
	static const struct hclbspec_defaults d = { .location = "fsn1", .network = 42 };
	char *text = malloc(size + 1), *line, *next;
	char *keys[FUZZ_ANNOTATIONS];
	struct cloud_kv kv[FUZZ_ANNOTATIONS];
	struct cloud_service svc = { .namespace_ = "ns", .name = "svc", .uid = "u-1",
	    .ports = ports, .n_ports = 3, .annotations = kv };
	struct hclbspec spec;
	struct errbuf e;
	size_t n = 0;

	memcpy(text, data, size);
	text[size] = '\0';
	for (line = text; line != NULL && n < FUZZ_ANNOTATIONS; line = next) {
		char *eq;
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		if ((eq = strchr(line, '=')) == NULL)
			continue;
		*eq = '\0';
		keys[n] = malloc(strlen(HCLBSPEC_PREFIX) + strlen(line) + 1);
		snprintf(keys[n], strlen(HCLBSPEC_PREFIX) + strlen(line) + 1, "%s%s",
		    HCLBSPEC_PREFIX, line);
		kv[n].key = keys[n];
		kv[n].value = eq + 1;
		n++;
	}
	svc.n_annotations = n;
	memset(&e, 0, sizeof(e));
	if (hclbspec_parse(&svc, &d, "kubernetes", &spec, &e) < 0) {
		if (strncmp(e.msg, "Service ns/svc", 14) != 0)
			abort();
	} else {
		if (spec.n_ports != 2 || spec.name[0] == '\0' ||
		    (spec.use_private_ip && spec.network <= 0) ||
		    (spec.node_selector != NULL && strncmp(spec.selector_key,
		    HCLBSPEC_SELECTOR_PREFIX, strlen(HCLBSPEC_SELECTOR_PREFIX)) != 0))
			abort();
		for (size_t i = 0; i < spec.n_ports; i++)
			json_object_put(hclbspec_service_json(&spec, &spec.ports[i], 0));
		hclbspec_free(&spec);
	}
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(text);
	return 0;
}
