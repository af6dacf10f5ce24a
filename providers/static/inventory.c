/* inventory.c - the inventory file: loaded through the cloud-config schema
 * loader, checked across instances, indexed, and followed as it changes. */
#include "inventory.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "base/hmap.h"
#include "base/labelsel.h"
#include "base/netaddr.h"
#include "base/readfile.h"
#include "base/xalloc.h"

struct inventory_file {
	struct cloudconfig_sections instances;  /* struct inventory_instance */
};

struct inventory {
	int refs;                    /* atomic */
	struct inventory_file f;
	struct hmap by_name;         /* name -> struct inventory_instance */
	struct hmap by_id;           /* providerID -> struct inventory_instance */
};

/* --- value checks, reported by the loader at the value --------------------- */

static int
inventory_check_name(const char *v, struct errbuf *e)
{
	if (!labelsel_dns_subdomain_ok(v))
		return errbuf_set(e, ERR_INVALID, "\"%.64s\" is not a Node name (a DNS subdomain: "
		    "lower-case letters, digits, '-' and '.')", v);
	return 0;
}

static int
inventory_check_provider_id(const char *v, struct errbuf *e)
{
	if (!cloud_provider_id_valid(v))
		return errbuf_set(e, ERR_INVALID, "\"%.200s\" is not a providerID "
		    "(\"<scheme>://<id>\", printable, at most %d bytes)", v, CLOUD_ID_MAX - 1);
	return 0;
}

static int
inventory_check_type(const char *v, struct errbuf *e)
{
	enum cloud_addr_type t;

	if (cloud_addr_type_parse(v, &t) < 0)
		return errbuf_set(e, ERR_INVALID, "\"%.64s\" is not an address type (InternalIP, "
		    "ExternalIP, Hostname, InternalDNS, ExternalDNS)", v);
	return 0;
}

static int
inventory_check_label_value(const char *v, struct errbuf *e)
{
	if (!labelsel_value_ok(v))
		return errbuf_set(e, ERR_INVALID, "\"%.64s\" is not a label value (at most 63 "
		    "letters, digits, '-', '_' and '.', alphanumeric at both ends)", v);
	return 0;
}

static int
inventory_check_label_key(const char *v, struct errbuf *e)
{
	if (!labelsel_key_ok(v))
		return errbuf_set(e, ERR_INVALID, "\"%.100s\" is not a label key", v);
	return 0;
}

static const struct cloudconfig_key inventory_address_schema[] = {
	{ .key = "type", .type = CLOUDCONFIG_STRING, .required = 1,
	  .check = inventory_check_type, .offset = offsetof(struct inventory_address, type) },
	{ .key = "address", .type = CLOUDCONFIG_STRING, .required = 1,
	  .offset = offsetof(struct inventory_address, address) },
	{ .key = NULL },
};

static const struct cloudconfig_key inventory_instance_schema[] = {
	{ .key = "name", .type = CLOUDCONFIG_STRING, .required = 1,
	  .check = inventory_check_name, .offset = offsetof(struct inventory_instance, name) },
	{ .key = "providerID", .type = CLOUDCONFIG_STRING, .check = inventory_check_provider_id,
	  .offset = offsetof(struct inventory_instance, provider_id) },
	{ .key = "addresses", .type = CLOUDCONFIG_SECTION_LIST,
	  .section = inventory_address_schema, .elem_size = sizeof(struct inventory_address),
	  .max_items = CLOUD_ADDRS_MAX,
	  .offset = offsetof(struct inventory_instance, addresses) },
	{ .key = "zone", .type = CLOUDCONFIG_STRING, .check = inventory_check_label_value,
	  .offset = offsetof(struct inventory_instance, zone) },
	{ .key = "region", .type = CLOUDCONFIG_STRING, .check = inventory_check_label_value,
	  .offset = offsetof(struct inventory_instance, region) },
	{ .key = "instanceType", .type = CLOUDCONFIG_STRING,
	  .check = inventory_check_label_value,
	  .offset = offsetof(struct inventory_instance, instance_type) },
	{ .key = "labels", .type = CLOUDCONFIG_MAP, .max_items = CLOUD_LABELS_MAX,
	  .check = inventory_check_label_value, .check_key = inventory_check_label_key,
	  .offset = offsetof(struct inventory_instance, labels) },
	{ .key = "shutdown", .type = CLOUDCONFIG_BOOL, .def = "false",
	  .offset = offsetof(struct inventory_instance, shutdown) },
	{ .key = NULL },
};

static const struct cloudconfig_key inventory_schema[] = {
	{ .key = "instances", .type = CLOUDCONFIG_SECTION_LIST, .required = 1,
	  .section = inventory_instance_schema, .elem_size = sizeof(struct inventory_instance),
	  .max_items = INVENTORY_INSTANCES_MAX,
	  .offset = offsetof(struct inventory_file, instances) },
	{ .key = NULL },
};

/* --- checks across values ---------------------------------------------------- */

static struct inventory_instance *
inventory_instance(const struct inventory *inv, size_t i)
{
	return (struct inventory_instance *)inv->f.instances.items + i;
}

/* inventory_address_fix checks an address against its type and writes IPs
 * in canonical form (what the API server and nodectl compare). */
static int
inventory_address_fix(const char *path, const struct cloudconfig_pos *pos, size_t i,
    size_t j, struct inventory_address *a, struct errbuf *e)
{
	char canon[NETADDR_TEXT_MAX];
	enum cloud_addr_type t;

	(void)cloud_addr_type_parse(a->type, &t);  /* checked by the loader */
	if (t == CLOUD_ADDR_INTERNAL_IP || t == CLOUD_ADDR_EXTERNAL_IP) {
		if (netaddr_canonical(a->address, canon) < 0)
			return errbuf_set(e, ERR_INVALID, "%s:%d:%d: instances[%zu].addresses[%zu]: "
			    "\"%.64s\" is not an IP address (type %s)", path, pos->line, pos->col, i,
			    j, a->address, a->type);
		free(a->address);
		a->address = xstrdup(canon);
		return 0;
	}
	if (!labelsel_dns_subdomain_ok(a->address))
		return errbuf_set(e, ERR_INVALID, "%s:%d:%d: instances[%zu].addresses[%zu]: "
		    "\"%.64s\" is not a DNS name (type %s)", path, pos->line, pos->col, i, j,
		    a->address, a->type);
	return 0;
}

/* inventory_index fills in default providerIDs, checks addresses and that
 * names and providerIDs are unique, and builds the two maps. */
static int
inventory_index(struct inventory *inv, const char *path, struct errbuf *e)
{
	const struct cloudconfig_sections *l = &inv->f.instances;
	int r;

	for (size_t i = 0; i < l->n; i++) {
		struct inventory_instance *in = inventory_instance(inv, i), *other;
		const struct cloudconfig_pos *pos = &l->pos[i];

		if (in->provider_id == NULL)
			in->provider_id = xasprintf(INVENTORY_PROVIDER_ID_PREFIX "%s", in->name);
		for (size_t j = 0; j < in->addresses.n; j++)
			if ((r = inventory_address_fix(path, &in->addresses.pos[j], i, j,
			    (struct inventory_address *)in->addresses.items + j, e)) < 0)
				return r;
		if ((other = hmap_get(&inv->by_name, in->name)) != NULL)
			return errbuf_set(e, ERR_INVALID, "%s:%d:%d: instances[%zu]: name \"%s\" is "
			    "also instances[%zu]'s", path, pos->line, pos->col, i, in->name,
			    (size_t)(other - inventory_instance(inv, 0)));
		if ((other = hmap_get(&inv->by_id, in->provider_id)) != NULL)
			return errbuf_set(e, ERR_INVALID, "%s:%d:%d: instances[%zu]: providerID "
			    "\"%.200s\" is also instances[%zu]'s", path, pos->line, pos->col, i,
			    in->provider_id, (size_t)(other - inventory_instance(inv, 0)));
		hmap_put(&inv->by_name, in->name, in);
		hmap_put(&inv->by_id, in->provider_id, in);
	}
	return 0;
}

static void
inventory_free(struct inventory *inv)
{
	hmap_free(&inv->by_name, NULL);
	hmap_free(&inv->by_id, NULL);
	cloudconfig_free(inventory_schema, &inv->f);
	free(inv);
}

int
inventory_parse(const char *buf, size_t len, const char *name, struct inventory **ret,
    struct errbuf *e)
{
	struct inventory *inv = xcalloc(1, sizeof(*inv));
	int r;

	hmap_init(&inv->by_name, 0);
	hmap_init(&inv->by_id, 0);
	if ((r = cloudconfig_parse(buf, len, name, inventory_schema, &inv->f, sizeof(inv->f),
	    e)) < 0 || (r = inventory_index(inv, name, e)) < 0) {
		inventory_free(inv);
		return r;
	}
	inv->refs = 1;
	*ret = inv;
	return 0;
}

int
inventory_load(const char *path, struct inventory **ret, struct errbuf *e)
{
	char *buf;
	size_t len;
	int r;

	if ((r = readfile(path, CLOUDCONFIG_FILE_MAX, &buf, &len, e)) < 0)
		return r;
	r = inventory_parse(buf, len, path, ret, e);
	readfile_free(buf, len);
	return r;
}

struct inventory *
inventory_ref(struct inventory *inv)
{
	__atomic_add_fetch(&inv->refs, 1, __ATOMIC_RELAXED);
	return inv;
}

void
inventory_unref(struct inventory *inv)
{
	if (inv != NULL && __atomic_sub_fetch(&inv->refs, 1, __ATOMIC_ACQ_REL) == 0)
		inventory_free(inv);
}

const struct inventory_instance *
inventory_find(const struct inventory *inv, const char *name, const char *provider_id)
{
	const struct inventory_instance *in = NULL;

	if (name != NULL && *name != '\0')
		in = hmap_get(&inv->by_name, name);
	if (in == NULL && provider_id != NULL && *provider_id != '\0')
		in = hmap_get(&inv->by_id, provider_id);
	return in;
}

size_t
inventory_count(const struct inventory *inv)
{
	return inv->f.instances.n;
}

const struct inventory_instance *
inventory_at(const struct inventory *inv, size_t i)
{
	return i < inv->f.instances.n ? inventory_instance(inv, i) : NULL;
}

void
inventory_metadata(const struct inventory_instance *in, struct cloud_instance_metadata *ret)
{
	const struct inventory_address *a = in->addresses.items;

	/* every value was checked against these sizes when the file was loaded */
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->source, sizeof(ret->source), "%s", CLOUD_SOURCE_INVENTORY);
	snprintf(ret->provider_id, sizeof(ret->provider_id), "%s", in->provider_id);
	snprintf(ret->instance_type, sizeof(ret->instance_type), "%s",
	    in->instance_type ? in->instance_type : "");
	snprintf(ret->zone, sizeof(ret->zone), "%s", in->zone ? in->zone : "");
	snprintf(ret->region, sizeof(ret->region), "%s", in->region ? in->region : "");
	for (size_t i = 0; i < in->addresses.n; i++) {
		(void)cloud_addr_type_parse(a[i].type, &ret->addresses[i].type);
		snprintf(ret->addresses[i].address, sizeof(ret->addresses[i].address), "%s",
		    a[i].address);
	}
	ret->n_addresses = in->addresses.n;
	for (size_t i = 0; i < in->labels.n; i++) {
		snprintf(ret->labels[i].key, sizeof(ret->labels[i].key), "%s", in->labels.keys[i]);
		snprintf(ret->labels[i].value, sizeof(ret->labels[i].value), "%s",
		    in->labels.values[i]);
	}
	ret->n_labels = in->labels.n;
}

/* --- the file followed ------------------------------------------------------- */

/* What identifies one version of the file. */
struct inventory_stamp {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	int err;                       /* errno of a failed stat, else 0 */
};

struct inventory_watch {
	char *path;
	int64_t interval_ns;
	pthread_mutex_t lock;          /* the fields below; never held across I/O */
	struct inventory *current;
	struct inventory_stamp stamp;  /* of the last load attempt */
	int64_t last_look_ns;          /* clock_mono_ns of the last stat */
	int looking;                   /* a caller is re-reading */
	int health;                    /* 0 or the last attempt's error */
	struct errbuf health_msg;
};

static void
inventory_stamp_of(const char *path, struct inventory_stamp *s)
{
	struct stat st;

	memset(s, 0, sizeof(*s));
	if (stat(path, &st) < 0) {
		s->err = errno;
		return;
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->size = st.st_size;
	s->mtime = st.st_mtim;
	s->ctime = st.st_ctim;
}

static int
inventory_stamp_equal(const struct inventory_stamp *a, const struct inventory_stamp *b)
{
	return a->err == b->err && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	    a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
	    a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

int
inventory_watch_new(const char *path, int64_t interval_ns, struct inventory_watch **ret,
    struct errbuf *e)
{
	struct inventory_watch *w;
	struct inventory_stamp stamp;
	struct inventory *inv;
	int r;

	/* the stamp first: a change during the read is seen at the next look */
	inventory_stamp_of(path, &stamp);
	if ((r = inventory_load(path, &inv, e)) < 0)
		return r;
	w = xcalloc(1, sizeof(*w));
	w->path = xstrdup(path);
	w->interval_ns = interval_ns;
	pthread_mutex_init(&w->lock, NULL);
	w->current = inv;
	w->stamp = stamp;
	w->last_look_ns = clock_mono_ns();
	*ret = w;
	return 0;
}

void
inventory_watch_free(struct inventory_watch *w)
{
	if (w == NULL)
		return;
	inventory_unref(w->current);
	pthread_mutex_destroy(&w->lock);
	free(w->path);
	free(w);
}

void
inventory_watch_set_interval(struct inventory_watch *w, int64_t interval_ns)
{
	pthread_mutex_lock(&w->lock);
	w->interval_ns = interval_ns;
	pthread_mutex_unlock(&w->lock);
}

/* inventory_watch_look re-reads the file when its interval has passed and
 * it changed. One caller at a time looks; the file is read without the
 * lock. */
static void
inventory_watch_look(struct inventory_watch *w)
{
	struct inventory_stamp stamp;
	struct inventory *inv = NULL, *old = NULL;
	struct errbuf e = { "" };
	int64_t now = clock_mono_ns();
	int r;

	pthread_mutex_lock(&w->lock);
	if (w->looking || now - w->last_look_ns < w->interval_ns) {
		pthread_mutex_unlock(&w->lock);
		return;
	}
	w->looking = 1;
	w->last_look_ns = now;
	pthread_mutex_unlock(&w->lock);

	inventory_stamp_of(w->path, &stamp);
	pthread_mutex_lock(&w->lock);
	if (inventory_stamp_equal(&stamp, &w->stamp)) {
		w->looking = 0;
		pthread_mutex_unlock(&w->lock);
		return;
	}
	pthread_mutex_unlock(&w->lock);

	r = inventory_load(w->path, &inv, &e);

	pthread_mutex_lock(&w->lock);
	w->stamp = stamp;
	w->health = r < 0 ? r : 0;
	if (r < 0) {
		w->health_msg = e;
	} else {
		old = w->current;
		w->current = inv;
	}
	w->looking = 0;
	pthread_mutex_unlock(&w->lock);
	inventory_unref(old);
}

struct inventory *
inventory_watch_get(struct inventory_watch *w)
{
	struct inventory *inv;

	inventory_watch_look(w);
	pthread_mutex_lock(&w->lock);
	inv = inventory_ref(w->current);
	pthread_mutex_unlock(&w->lock);
	return inv;
}

int
inventory_watch_health(struct inventory_watch *w, struct errbuf *e)
{
	int r;

	inventory_watch_look(w);
	pthread_mutex_lock(&w->lock);
	if ((r = w->health) < 0 && e != NULL)
		*e = w->health_msg;
	pthread_mutex_unlock(&w->lock);
	return r;
}
