/* nodeview.c - a cached Node as the provider interface's struct cloud_node. */
#include "controllers/nodeview.h"

#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

void
nodeview_init(struct nodeview *v, const struct kube_node *n)
{
	size_t i, na = 0;

	memset(v, 0, sizeof(*v));
	v->kv = xcalloc(n->nlabels + n->nannotations, sizeof(*v->kv));
	v->addrs = xcalloc(n->naddresses, sizeof(*v->addrs));
	for (i = 0; i < n->nlabels; i++) {
		v->kv[i].key = n->labels[i].key;
		v->kv[i].value = n->labels[i].value;
	}
	for (i = 0; i < n->nannotations; i++) {
		v->kv[n->nlabels + i].key = n->annotations[i].key;
		v->kv[n->nlabels + i].value = n->annotations[i].value;
	}
	for (i = 0; i < n->naddresses; i++) {
		const char *a = n->addresses[i].address;
		if (a == NULL || strlen(a) >= sizeof(v->addrs[na].address) ||
		    cloud_addr_type_parse(n->addresses[i].type, &v->addrs[na].type) < 0)
			continue;
		memcpy(v->addrs[na].address, a, strlen(a) + 1);
		na++;
	}
	v->node.name = n->name;
	v->node.provider_id = n->provider_id;
	v->node.labels = v->kv;
	v->node.n_labels = n->nlabels;
	v->node.annotations = v->kv + n->nlabels;
	v->node.n_annotations = n->nannotations;
	v->node.addresses = v->addrs;
	v->node.n_addresses = na;
	v->node.pod_cidrs = n->pod_cidrs;
	v->node.n_pod_cidrs = n->npod_cidrs;
	v->node.uid = n->obj.uid;
}

void
nodeview_free(struct nodeview *v)
{
	free(v->kv);
	free(v->addrs);
	v->kv = NULL;
	v->addrs = NULL;
}
