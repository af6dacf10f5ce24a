/* hcnet.c - the configured private network: its id and its state. */
#include "hcnet.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "base/numparse.h"
#include "base/xalloc.h"

struct hcnet {
	struct hcclient *c;
	char *name;                   /* NULL: none configured */
	pthread_mutex_t mu;
	int64_t id;                   /* 0 until resolved */
};

struct hcnet *
hcnet_new(struct hcclient *c, const char *name_or_id)
{
	struct hcnet *n = xcalloc(1, sizeof(*n));

	n->c = c;
	pthread_mutex_init(&n->mu, NULL);
	if (name_or_id != NULL && *name_or_id != '\0') {
		int64_t v;
		n->name = xstrdup(name_or_id);
		if (numparse(name_or_id, 0, 1, INT64_MAX, &v, NULL) == 0)
			n->id = v;
	}
	return n;
}

void
hcnet_free(struct hcnet *n)
{
	if (n == NULL)
		return;
	pthread_mutex_destroy(&n->mu);
	free(n->name);
	free(n);
}

int
hcnet_configured(const struct hcnet *n)
{
	return n->name != NULL;
}

const char *
hcnet_name(const struct hcnet *n)
{
	return n->name ? n->name : "";
}

struct hcnet_found {
	int64_t id;
	int n;
};

static int
hcnet_found(json_object *item, const char *path, void *arg, struct errbuf *e)
{
	struct hcnet_found *f = arg;
	struct hcapi_network nw;
	int r;

	if ((r = hcapi_network_parse(item, path, &nw, e)) < 0)
		return r;
	f->id = nw.id;
	f->n++;
	hcapi_network_free(&nw);
	return 0;
}

int
hcnet_id(struct hcnet *n, int64_t *ret, struct errbuf *e)
{
	struct hcnet_found f = { 0, 0 };
	struct dynbuf path;
	int64_t id;
	int r;

	if (n->name == NULL) {
		*ret = 0;
		return 0;
	}
	pthread_mutex_lock(&n->mu);
	id = n->id;
	pthread_mutex_unlock(&n->mu);
	if (id != 0) {
		*ret = id;
		return 0;
	}
	dynbuf_init(&path, 1024);
	dynbuf_addstr(&path, "/networks?name=");
	hcclient_escape(&path, n->name);
	r = hcclient_list(n->c, dynbuf_ptr(&path), "networks", hcnet_found, &f, e);
	dynbuf_free(&path);
	if (r < 0)
		return errbuf_prefix(e, r, "network %s", n->name);
	if (f.n != 1)
		return errbuf_set(e, ERR_PERMANENT, "network %s: %s", n->name, f.n == 0 ?
		    "no network has this name (cloud-config network: is a name or an id)" :
		    "several networks have this name: give its id");
	pthread_mutex_lock(&n->mu);
	n->id = f.id;
	pthread_mutex_unlock(&n->mu);
	*ret = f.id;
	return 0;
}

int
hcnet_get(struct hcnet *n, struct hcapi_network *ret, struct errbuf *e)
{
	json_object *root = NULL, *o;
	char path[64];
	int64_t id;
	int r;

	if (n->name == NULL)
		return errbuf_set(e, ERR_PERMANENT, "no network configured (cloud-config network:)");
	if ((r = hcnet_id(n, &id, e)) < 0)
		return r;
	snprintf(path, sizeof(path), "/networks/%" PRId64, id);
	if ((r = hcclient_do(n->c, "GET", path, NULL, &root, NULL, e)) < 0) {
		/* a network that is gone is the configuration's fault, not an
		 * instance's: never "not found" */
		if (r == ERR_NOT_FOUND)
			r = ERR_PERMANENT;
		return errbuf_prefix(e, r, "network %s", n->name);
	}
	if ((r = hcapi_member(root, "network", &o, e)) == 0)
		r = hcapi_network_parse(o, "network", ret, e);
	json_object_put(root);
	if (r < 0)
		return errbuf_prefix(e, r, "GET %s", path);
	return 0;
}
