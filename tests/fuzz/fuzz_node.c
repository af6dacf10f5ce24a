/* fuzz_node.c - libFuzzer harness: the Node and Service decoders on
 * arbitrary JSON (the first byte picks the decoder), checking that a decoded
 * object is whole: its key set and every kept string inside its one
 * allocation. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/node.h"
#include "kube/service.h"
#include "kube/watch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* fuzz_in checks that s is NULL, "" (the default of uid and
 * resourceVersion), or a string inside o's allocation. */
static void
fuzz_in(const struct store_obj *o, const char *s)
{
	if (s == NULL || *s == '\0')
		return;
	if (s < (const char *)o || s + strlen(s) >= (const char *)o + o->size)
		abort();
}

static void
fuzz_node(const struct kube_node *n)
{
	const struct store_obj *o = &n->obj;

	if (n->name == NULL || *n->name == '\0' || strcmp(o->key, n->name) != 0)
		abort();
	fuzz_in(o, o->uid);
	fuzz_in(o, o->resource_version);
	fuzz_in(o, n->provider_id);
	for (size_t i = 0; i < n->nlabels; i++) {
		fuzz_in(o, n->labels[i].key);
		fuzz_in(o, n->labels[i].value);
	}
	for (size_t i = 0; i < n->nannotations; i++)
		fuzz_in(o, n->annotations[i].value);
	for (size_t i = 0; i < n->ntaints; i++) {
		if (n->taints[i].key == NULL || n->taints[i].effect == NULL)
			abort();
		fuzz_in(o, n->taints[i].value);
	}
	for (size_t i = 0; i < n->npod_cidrs; i++)
		fuzz_in(o, n->pod_cidrs[i]);
	for (size_t i = 0; i < n->naddresses; i++)
		if (n->addresses[i].type == NULL || n->addresses[i].address == NULL)
			abort();
	if (n->ready > KUBE_NODE_READY_UNKNOWN)
		abort();
}

static void
fuzz_service(const struct kube_service *s)
{
	const struct store_obj *o = &s->obj;

	if (s->name == NULL || s->namespace == NULL || strchr(o->key, '/') == NULL)
		abort();
	fuzz_in(o, o->key);
	fuzz_in(o, s->type);
	fuzz_in(o, s->load_balancer_class);
	for (size_t i = 0; i < s->nports; i++) {
		fuzz_in(o, s->ports[i].name);
		fuzz_in(o, s->ports[i].target_port_name);
		if (s->ports[i].port < 0 || s->ports[i].port > 65535)
			abort();
	}
	for (size_t i = 0; i < s->ningress; i++)
		fuzz_in(o, s->ingress[i].hostname);
	for (size_t i = 0; i < s->nfinalizers; i++)
		fuzz_in(o, s->finalizers[i]);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_object *j;
	struct errbuf e = { "" };

	if (size == 0)
		return 0;
	if (kube_watch_parse((const char *)data + 1, size - 1, &j, &e) < 0)
		return 0;
	if (data[0] & 1) {
		const struct kube_service *s = NULL;
		if (kube_service_decode(j, &s, &e) == 0) {
			fuzz_service(s);
			store_obj_unref(&s->obj);
		} else if (e.msg[0] == '\0' || s != NULL) {
			abort();
		}
	} else {
		const struct kube_node *n = NULL;
		if (kube_node_decode(j, &n, &e) == 0) {
			fuzz_node(n);
			store_obj_unref(&n->obj);
		} else if (e.msg[0] == '\0' || n != NULL) {
			abort();
		}
	}
	json_object_put(j);
	return 0;
}
