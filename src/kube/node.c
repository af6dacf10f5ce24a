/* node.c - decode a Node's JSON into the compact struct the cache keeps. */
#include "kube/node.h"

#include <stdio.h>
#include <string.h>

#include "base/jsonx.h"

/* What kube_node_fill reads, member by member; a test decodes Nodes both
 * ways and compares (tests/unit/test_node.c). */
static const struct jsonx_keep kube_node_metadata_fields[] = {
	{ "name", NULL }, { "uid", NULL }, { "resourceVersion", NULL },
	{ "labels", NULL }, { "annotations", NULL },
	{ "creationTimestamp", NULL }, { "deletionTimestamp", NULL },
	{ NULL, NULL },
};
static const struct jsonx_keep kube_node_taint_fields[] = {
	{ "key", NULL }, { "value", NULL }, { "effect", NULL },
	{ NULL, NULL },
};
static const struct jsonx_keep kube_node_spec_fields[] = {
	{ "providerID", NULL }, { "podCIDRs", NULL }, { "taints", kube_node_taint_fields },
	{ NULL, NULL },
};
static const struct jsonx_keep kube_node_address_fields[] = {
	{ "type", NULL }, { "address", NULL },
	{ NULL, NULL },
};
static const struct jsonx_keep kube_node_condition_fields[] = {
	{ "type", NULL }, { "status", NULL }, { "reason", NULL },
	{ NULL, NULL },
};
static const struct jsonx_keep kube_node_status_fields[] = {
	{ "addresses", kube_node_address_fields }, { "conditions", kube_node_condition_fields },
	{ NULL, NULL },
};
const struct jsonx_keep kube_node_fields[] = {
	{ "metadata", kube_node_metadata_fields }, { "spec", kube_node_spec_fields },
	{ "status", kube_node_status_fields },
	{ NULL, NULL },
};

/* kube_node_cond reads a condition's status. */
static enum kube_node_ready
kube_node_cond(const char *st)
{
	return st && strcmp(st, "True") == 0 ? KUBE_NODE_READY_TRUE :
	    st && strcmp(st, "False") == 0 ? KUBE_NODE_READY_FALSE : KUBE_NODE_READY_UNKNOWN;
}

/* kube_node_fill reads the kept fields of the Node at src into n. It runs
 * twice per object (see store_obj_build) and must do the same both times. */
static int
kube_node_fill(struct store_bld *b, struct store_obj *o, const void *src,
    struct errbuf *e)
{
	struct kube_node *n = (struct kube_node *)o;
	json_object *root = (json_object *)src, *md, *nm, *spec, *status, *a;
	struct kube_taint *taints;
	struct kube_node_address *addrs;
	char path[64];
	size_t cnt;
	int r, nul;

	if (!json_object_is_type(root, json_type_object))
		return errbuf_set(e, ERR_INVALID, "node: expected a JSON object");
	if ((r = jsonx_object(root, "", "metadata", 0, &md, e)) < 0)
		return errbuf_prefix(e, r, "node");
	if (md == NULL || !json_object_object_get_ex(md, "name", &nm) ||
	    !json_object_is_type(nm, json_type_string) ||
	    json_object_get_string_len(nm) == 0)
		return errbuf_set(e, ERR_INVALID, "node without a metadata.name");
	if ((r = store_json_str(b, md, "metadata", "name", &n->name, e)) < 0)
		return errbuf_prefix(e, r, "node");
	n->obj.key = n->name;
	if ((r = store_json_str(b, md, "metadata", "uid", &n->obj.uid, e)) < 0 ||
	    (r = store_json_str(b, md, "metadata", "resourceVersion",
	    &n->obj.resource_version, e)) < 0 ||
	    (r = store_json_kv(b, md, "metadata", "labels", &n->labels, &n->nlabels, NULL,
	    NULL, e)) < 0 ||
	    (r = store_json_kv(b, md, "metadata", "annotations", &n->annotations,
	    &n->nannotations, &n->nul_annotations, &n->nnul_annotations, e)) < 0 ||
	    (r = jsonx_time(md, "metadata", "creationTimestamp", 0,
	    &n->creation_timestamp, e)) < 0 ||
	    (r = jsonx_time(md, "metadata", "deletionTimestamp", 0,
	    &n->deletion_timestamp, e)) < 0)
		goto fail;

	if ((r = jsonx_object(root, "", "spec", 0, &spec, e)) < 0)
		goto fail;
	if (spec) {
		if ((r = store_json_str_nul(b, spec, "spec", "providerID", &n->provider_id,
		    &n->provider_id_nul, e)) < 0 ||
		    (r = store_json_strs(b, spec, "spec", "podCIDRs", &n->pod_cidrs,
		    &n->npod_cidrs, e)) < 0 ||
		    (r = jsonx_array(spec, "spec", "taints", 0, &a, &cnt, e)) < 0)
			goto fail;
		if (cnt) {
			taints = store_bld_alloc(b, cnt * sizeof(*taints));
			for (size_t i = 0; i < cnt; i++) {
				json_object *t = json_object_array_get_idx(a, i);
				snprintf(path, sizeof(path), "spec.taints[%zu]", i);
				if (!json_object_is_type(t, json_type_object)) {
					r = errbuf_set(e, ERR_INVALID, "%s: expected an object", path);
					goto fail;
				}
				if ((r = store_json_str(b, t, path, "key", &taints[i].key, e)) < 0 ||
				    (r = store_json_str(b, t, path, "value", &taints[i].value, e)) < 0 ||
				    (r = store_json_str(b, t, path, "effect", &taints[i].effect, e)) < 0)
					goto fail;
				if (taints[i].key == NULL || taints[i].effect == NULL) {
					r = errbuf_set(e, ERR_INVALID, "%s: a taint needs a key and an effect",
					    path);
					goto fail;
				}
			}
			n->taints = taints;
			n->ntaints = cnt;
		}
	}

	if ((r = jsonx_object(root, "", "status", 0, &status, e)) < 0)
		goto fail;
	if (status) {
		if ((r = jsonx_array(status, "status", "addresses", 0, &a, &cnt, e)) < 0)
			goto fail;
		if (cnt) {
			size_t k = 0;
			addrs = store_bld_alloc(b, cnt * sizeof(*addrs));
			for (size_t i = 0; i < cnt; i++) {
				json_object *ad = json_object_array_get_idx(a, i);
				snprintf(path, sizeof(path), "status.addresses[%zu]", i);
				if (!json_object_is_type(ad, json_type_object)) {
					r = errbuf_set(e, ERR_INVALID, "%s: expected an object", path);
					goto fail;
				}
				/* an address holding a NUL is no address bootccm could
				 * use (a backend, a CSR's SAN): left out, not fatal */
				if ((r = store_json_str(b, ad, path, "type", &addrs[k].type, e)) < 0 ||
				    (r = store_json_str_nul(b, ad, path, "address", &addrs[k].address,
				    &nul, e)) < 0)
					goto fail;
				if (addrs[k].type == NULL || (addrs[k].address == NULL && !nul)) {
					r = errbuf_set(e, ERR_INVALID, "%s: an address needs a type and an address",
					    path);
					goto fail;
				}
				if (!nul)
					k++;
			}
			n->addresses = addrs;
			n->naddresses = k;
		}
		if ((r = jsonx_array(status, "status", "conditions", 0, &a, &cnt, e)) < 0)
			goto fail;
		for (size_t i = 0; i < cnt; i++) {
			json_object *c = json_object_array_get_idx(a, i);
			const char *type, *st;
			snprintf(path, sizeof(path), "status.conditions[%zu]", i);
			if (!json_object_is_type(c, json_type_object)) {
				r = errbuf_set(e, ERR_INVALID, "%s: expected an object", path);
				goto fail;
			}
			if ((r = jsonx_str(c, path, "type", 0, &type, NULL, e)) < 0 ||
			    (r = jsonx_str(c, path, "status", 0, &st, NULL, e)) < 0)
				goto fail;
			if (type == NULL)
				continue;
			if (strcmp(type, "Ready") == 0) {
				n->ready = kube_node_cond(st);
			} else if (strcmp(type, "NetworkUnavailable") == 0) {
				n->network_unavailable = kube_node_cond(st);
				/* free text: one holding a NUL reads as absent, which
				 * the route controller leaves alone as another's */
				if ((r = store_json_str_nul(b, c, path, "reason",
				    &n->network_unavailable_reason, &nul, e)) < 0)
					goto fail;
			}
		}
	}
	return 0;
fail:
	return errbuf_prefix(e, r, "node \"%.253s\"", json_object_get_string(nm));
}

int
kube_node_decode(json_object *o, const struct kube_node **ret, struct errbuf *e)
{
	const struct store_obj *obj;
	int r;

	if ((r = store_obj_build(sizeof(struct kube_node), kube_node_fill, o, &obj, e)) < 0)
		return r;
	*ret = kube_node_of(obj);
	return 0;
}

int
kube_node_decode_obj(json_object *o, const struct store_obj **ret, struct errbuf *e)
{
	return store_obj_build(sizeof(struct kube_node), kube_node_fill, o, ret, e);
}

const char *
kube_node_label(const struct kube_node *n, const char *key)
{
	return store_kv_get(n->labels, n->nlabels, key);
}

const char *
kube_node_annotation(const struct kube_node *n, const char *key)
{
	return store_kv_get(n->annotations, n->nannotations, key);
}

const struct kube_taint *
kube_node_taint(const struct kube_node *n, const char *key, const char *effect)
{
	for (size_t i = 0; i < n->ntaints; i++)
		if (strcmp(n->taints[i].key, key) == 0 &&
		    (effect == NULL || strcmp(n->taints[i].effect, effect) == 0))
			return &n->taints[i];
	return NULL;
}
