/* fuzz_node.c - libFuzzer harness: the Node and Service decoders on
 * arbitrary JSON (the first byte picks the decoder), checking that a decoded
 * object is whole: its key set and every kept string inside its one
 * allocation (label keys, shared by all objects, aside); that a value left
 * out for a NUL (an annotation, spec.providerID) is flagged and absent;
 * and that a Node decoded from a parse of kube_node_fields only is the
 * same Node, or the same error, as one decoded from the whole tree. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "kube/client.h"
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
	if (n->provider_id_nul && n->provider_id != NULL)
		abort();
	for (size_t i = 0; i < n->nnul_annotations; i++)
		if (n->nul_annotations[i] == NULL ||
		    kube_node_annotation(n, n->nul_annotations[i]) != NULL)
			abort();
	for (size_t i = 0; i < n->nlabels; i++) {
		/* keys are shared by every object (store_bld_key) */
		if (n->labels[i].key == NULL)
			abort();
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

static int
fuzz_same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* fuzz_same_node aborts unless a and b hold the same fields. */
static void
fuzz_same_node(const struct kube_node *a, const struct kube_node *b)
{
	if (a->obj.size != b->obj.size || !fuzz_same_str(a->obj.key, b->obj.key) ||
	    !fuzz_same_str(a->obj.uid, b->obj.uid) ||
	    !fuzz_same_str(a->obj.resource_version, b->obj.resource_version) ||
	    !fuzz_same_str(a->provider_id, b->provider_id) ||
	    a->nlabels != b->nlabels || a->nannotations != b->nannotations ||
	    a->ntaints != b->ntaints || a->npod_cidrs != b->npod_cidrs ||
	    a->naddresses != b->naddresses || a->ready != b->ready ||
	    a->network_unavailable != b->network_unavailable ||
	    !fuzz_same_str(a->network_unavailable_reason, b->network_unavailable_reason) ||
	    a->creation_timestamp != b->creation_timestamp ||
	    a->deletion_timestamp != b->deletion_timestamp ||
	    a->provider_id_nul != b->provider_id_nul || a->nnul_annotations != b->nnul_annotations)
		abort();
	for (size_t i = 0; i < a->nnul_annotations; i++)
		if (!fuzz_same_str(a->nul_annotations[i], b->nul_annotations[i]))
			abort();
	for (size_t i = 0; i < a->nlabels; i++)
		if (!fuzz_same_str(a->labels[i].key, b->labels[i].key) ||
		    !fuzz_same_str(a->labels[i].value, b->labels[i].value))
			abort();
	for (size_t i = 0; i < a->nannotations; i++)
		if (!fuzz_same_str(a->annotations[i].key, b->annotations[i].key) ||
		    !fuzz_same_str(a->annotations[i].value, b->annotations[i].value))
			abort();
	for (size_t i = 0; i < a->ntaints; i++)
		if (!fuzz_same_str(a->taints[i].key, b->taints[i].key) ||
		    !fuzz_same_str(a->taints[i].value, b->taints[i].value) ||
		    !fuzz_same_str(a->taints[i].effect, b->taints[i].effect))
			abort();
	for (size_t i = 0; i < a->npod_cidrs; i++)
		if (!fuzz_same_str(a->pod_cidrs[i], b->pod_cidrs[i]))
			abort();
	for (size_t i = 0; i < a->naddresses; i++)
		if (!fuzz_same_str(a->addresses[i].type, b->addresses[i].type) ||
		    !fuzz_same_str(a->addresses[i].address, b->addresses[i].address))
			abort();
}

/* fuzz_node_kept decodes the text again from its kept fields only. */
static void
fuzz_node_kept(const uint8_t *data, size_t size, int r, const struct kube_node *full,
    const struct errbuf *full_e)
{
	const struct kube_node *n = NULL;
	struct errbuf e = { "" };
	json_object *j;

	if (jsonx_parse_keep((const char *)data, size, KUBE_JSON_DEPTH, kube_node_fields, &j,
	    &e) < 0)
		abort();  /* the full parse took it */
	if (kube_node_decode(j, &n, &e) != r)
		abort();
	if (r == 0) {
		fuzz_same_node(full, n);
		store_obj_unref(&n->obj);
	} else if (strcmp(e.msg, full_e->msg) != 0) {
		abort();
	}
	json_object_put(j);
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
	for (size_t i = 0; i < s->nannotations; i++)
		fuzz_in(o, s->annotations[i].value);
	for (size_t i = 0; i < s->nnul_annotations; i++)
		if (s->nul_annotations[i] == NULL ||
		    kube_service_annotation(s, s->nul_annotations[i]) != NULL)
			abort();
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
		int r = kube_node_decode(j, &n, &e);
		if (r == 0) {
			fuzz_node(n);
			fuzz_node_kept(data + 1, size - 1, 0, n, &e);
			store_obj_unref(&n->obj);
		} else if (e.msg[0] == '\0' || n != NULL) {
			abort();
		} else {
			fuzz_node_kept(data + 1, size - 1, r, NULL, &e);
		}
	}
	json_object_put(j);
	return 0;
}
