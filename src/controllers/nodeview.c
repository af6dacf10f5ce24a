/* nodeview.c - a cached Node as the provider interface's struct cloud_node. */
#include "controllers/nodeview.h"

#include <stdlib.h>
#include <string.h>

int
nodeview_addr_type(const char *s, enum md_addr_type *ret)
{
	static const enum md_addr_type types[] = {
		MD_ADDR_INTERNAL_IP, MD_ADDR_EXTERNAL_IP, MD_ADDR_HOSTNAME,
		MD_ADDR_INTERNAL_DNS, MD_ADDR_EXTERNAL_DNS,
	};

	for (size_t i = 0; s != NULL && i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(s, md_addr_type_name(types[i])) == 0) {
			*ret = types[i];
			return 0;
		}
	return ERR_INVALID;
}

int
nodeview_init(struct nodeview *v, const struct kube_node *n, struct errbuf *e)
{
	size_t i, na = 0, nkv = n->nlabels + n->nannotations;

	memset(v, 0, sizeof(*v));
	v->kv = calloc(nkv ? nkv : 1, sizeof(*v->kv));
	v->addrs = calloc(n->naddresses ? n->naddresses : 1, sizeof(*v->addrs));
	if (v->kv == NULL || v->addrs == NULL) {
		nodeview_free(v);
		return errbuf_set(e, ERR_NOMEM, "node %s: out of memory", n->name);
	}
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
		    nodeview_addr_type(n->addresses[i].type, &v->addrs[na].type) < 0)
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
	return 0;
}

void
nodeview_free(struct nodeview *v)
{
	free(v->kv);
	free(v->addrs);
	v->kv = NULL;
	v->addrs = NULL;
}
