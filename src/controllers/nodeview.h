/* nodeview.h - a cached Node seen through the provider interface: the
 * struct cloud_node a provider operation takes, built from a struct
 * kube_node of the reflector's cache.
 *
 * Contract: the view borrows the kube_node's strings (the caller keeps its
 * reference for as long as the view is used) and owns only the arrays it
 * allocates; addresses of a type the provider interface does not know are
 * left out (cloud_addr_type_parse). Out of memory is fatal. Never logs. */
#ifndef BOOTCCM_CONTROLLERS_NODEVIEW_H
#define BOOTCCM_CONTROLLERS_NODEVIEW_H

#include "cloud.h"
#include "kube/node.h"

struct nodeview {
	struct cloud_node node;
	struct cloud_kv *kv;            /* labels, then annotations */
	struct cloud_address *addrs;
};

/* nodeview_init fills v from n; nodeview_free releases it. */
void nodeview_init(struct nodeview *v, const struct kube_node *n);
void nodeview_free(struct nodeview *v);

#endif
