/* nodeview.h - a cached Node seen through the provider interface: the
 * struct cloud_node a provider operation takes, built from a struct
 * kube_node of the reflector's cache.
 *
 * Contract: the view borrows the kube_node's strings (the caller keeps its
 * reference for as long as the view is used) and owns only the arrays it
 * allocates; addresses of a type the provider interface does not know are
 * left out. Never logs. */
#ifndef BOOTCCM_CONTROLLERS_NODEVIEW_H
#define BOOTCCM_CONTROLLERS_NODEVIEW_H

#include "cloud.h"
#include "err.h"
#include "kube/node.h"

struct nodeview {
	struct cloud_node node;
	struct cloud_kv *kv;            /* labels, then annotations */
	struct cloud_address *addrs;
};

/* nodeview_init fills v from n. Returns 0 or ERR_NOMEM (v then needs no
 * nodeview_free). */
int nodeview_init(struct nodeview *v, const struct kube_node *n, struct errbuf *e);
void nodeview_free(struct nodeview *v);

/* nodeview_addr_type parses a Node address type ("InternalIP", ...);
 * returns 0 and sets *ret, or ERR_INVALID for a type it does not know. */
int nodeview_addr_type(const char *s, enum md_addr_type *ret);

#endif
