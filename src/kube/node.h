/* node.h - a Node as the cache keeps it: the few fields the CCM controllers
 * read, decoded from the API's JSON into one compact allocation.
 *
 * Contract: the decoders never keep the JSON tree and never log. An object
 * is decoded whole or not at all: a kept field of the wrong type, a missing
 * metadata.name or a malformed time is ERR_INVALID with a message naming
 * the node and the field ("node \"n1\": spec.taints[0].effect: expected a
 * string"). Fields that are not kept (managedFields, status.images, ...) are
 * not looked at. Absent optional strings are NULL, absent lists empty,
 * absent times 0. */
#ifndef BOOTCCM_KUBE_NODE_H
#define BOOTCCM_KUBE_NODE_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "kube/store.h"

#define KUBE_NODE_PATH "/api/v1/nodes"
/* The taint a kubelet started with --cloud-provider=external registers with,
 * until a cloud controller initializes the Node. */
#define KUBE_TAINT_UNINITIALIZED "node.cloudprovider.kubernetes.io/uninitialized"
/* The annotation the initialization writes: where the Node's addresses came
 * from, a CLOUD_SOURCE_* value (the csr-approver's trust anchor). */
#define KUBE_ANNOTATION_ADDRESS_SOURCE "bootccm.io/address-source"

struct kube_taint {
	const char *key;
	const char *value;    /* NULL when absent */
	const char *effect;   /* NoSchedule, PreferNoSchedule, NoExecute */
};

struct kube_node_address {
	const char *type;     /* InternalIP, ExternalIP, Hostname, ... */
	const char *address;
};

/* The status of a condition (Ready, NetworkUnavailable). */
enum kube_node_ready {
	KUBE_NODE_READY_NONE = 0,   /* no such condition (not reported yet) */
	KUBE_NODE_READY_TRUE,
	KUBE_NODE_READY_FALSE,
	KUBE_NODE_READY_UNKNOWN,    /* "Unknown" or any other value */
};

struct kube_node {
	struct store_obj obj;       /* key: the name */
	const char *name;
	const struct store_kv *labels;
	size_t nlabels;
	const struct store_kv *annotations;
	size_t nannotations;
	const char *const *nul_annotations; /* keys of annotations whose value holds a
	                                     * NUL byte: left out of annotations */
	size_t nnul_annotations;
	const struct kube_taint *taints;
	size_t ntaints;
	const char *provider_id;    /* spec.providerID */
	int provider_id_nul;        /* spec.providerID holds a NUL: provider_id is NULL
	                             * and the Node cannot be matched to an instance */
	const char *const *pod_cidrs;
	size_t npod_cidrs;
	const struct kube_node_address *addresses;
	size_t naddresses;
	enum kube_node_ready ready;
	enum kube_node_ready network_unavailable; /* the NetworkUnavailable condition */
	const char *network_unavailable_reason;   /* its reason (RouteCreated, a CNI's...) */
	int64_t creation_timestamp; /* seconds since the epoch; 0 when absent */
	int64_t deletion_timestamp; /* 0 when not being deleted */
};

/* kube_node_fields names every member kube_node_decode reads, for a parse
 * that builds nothing else (jsonx_parse_keep): decoding such a tree gives
 * the same Node, or the same error, as decoding the whole object. */
extern const struct jsonx_keep kube_node_fields[];

/* kube_node_decode builds a compact Node from a Node object (a list item or
 * a watch event's object); *ret gets one reference. */
int kube_node_decode(json_object *o, const struct kube_node **ret,
    struct errbuf *e);

/* kube_node_decode_obj is kube_node_decode for the reflector. */
int kube_node_decode_obj(json_object *o, const struct store_obj **ret,
    struct errbuf *e);

/* kube_node_of views a cached object as the Node it is. */
static inline const struct kube_node *
kube_node_of(const struct store_obj *o)
{
	return (const struct kube_node *)o;
}

/* kube_node_label and kube_node_annotation return a value or NULL. */
const char *kube_node_label(const struct kube_node *n, const char *key);
const char *kube_node_annotation(const struct kube_node *n, const char *key);

/* kube_node_taint returns the taint with key (and effect, unless NULL), or
 * NULL. */
const struct kube_taint *kube_node_taint(const struct kube_node *n,
    const char *key, const char *effect);

#endif
