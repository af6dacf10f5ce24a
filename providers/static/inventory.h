/* inventory.h - the static provider's inventory file: the instances of a
 * site without a cloud API, by Node name and providerID, and the file
 * followed as it changes.
 *
 *   instances:
 *     - name: worker-1                 # the Node name (required, unique)
 *       providerID: static://worker-1  # default static://<name>; unique
 *       addresses:                     # at most CLOUD_ADDRS_MAX
 *         - {type: InternalIP, address: 10.0.0.11}
 *       zone: rack-1                   # label values
 *       region: dc-1
 *       instanceType: r640
 *       labels: {example.com/pool: gpu} # at most CLOUD_LABELS_MAX
 *       shutdown: false
 *
 * `instances` is required (`instances: []` for none), so an empty or
 * truncated file is an error, not an inventory without instances.
 *
 * Contract: never logs. Every fault is ERR_INVALID (or ERR_TOO_LARGE, ERR_IO)
 * with "FILE:LINE:COL: problem"; nothing of a file with a fault is used. A
 * loaded inventory is immutable and reference-counted, so readers use it
 * without a lock while a newer one replaces it. Out of memory is fatal. */
#ifndef BOOTCCM_PROVIDERS_STATIC_INVENTORY_H
#define BOOTCCM_PROVIDERS_STATIC_INVENTORY_H

#include <stddef.h>
#include <stdint.h>

#include "cloud.h"
#include "config/cloudconfig.h"
#include "base/err.h"

#define INVENTORY_INSTANCES_MAX 20000  /* instances in one file (yamltree's node
                                          cap and the 1 MiB file cap bind first
                                          for long entries) */
#define INVENTORY_PROVIDER_ID_PREFIX "static://"

struct inventory_address {
	char *type;                    /* as cloud_addr_type_name writes it */
	char *address;                 /* IPs in canonical form */
};

struct inventory_instance {
	char *name;
	char *provider_id;             /* as written, or static://<name> */
	struct cloudconfig_sections addresses; /* struct inventory_address */
	char *zone, *region, *instance_type;   /* NULL: not given */
	struct cloudconfig_map labels;
	int shutdown;
};

struct inventory;

/* inventory_parse checks len bytes of buf (name in messages) and returns
 * the inventory they hold, with one reference. */
int inventory_parse(const char *buf, size_t len, const char *name, struct inventory **ret,
    struct errbuf *e);

/* inventory_load is inventory_parse on the file at path, a regular file of
 * at most CLOUDCONFIG_FILE_MAX bytes. */
int inventory_load(const char *path, struct inventory **ret, struct errbuf *e);

/* inventory_ref takes one more reference; inventory_unref drops one and
 * frees the inventory with the last (NULL is a no-op). Thread-safe. */
struct inventory *inventory_ref(struct inventory *inv);
void inventory_unref(struct inventory *inv);

/* inventory_find returns the instance of the Node name, else the one with
 * providerID provider_id (either may be NULL), else NULL. */
const struct inventory_instance *inventory_find(const struct inventory *inv,
    const char *name, const char *provider_id);

/* inventory_count and inventory_at walk the instances in file order. */
size_t inventory_count(const struct inventory *inv);
const struct inventory_instance *inventory_at(const struct inventory *inv, size_t i);

/* inventory_metadata fills *ret (all of it) with in's metadata, source
 * CLOUD_SOURCE_INVENTORY. */
void inventory_metadata(const struct inventory_instance *in,
    struct cloud_instance_metadata *ret);

/* --- the file followed as it changes ----------------------------------------
 * The file is looked at (stat) when the inventory is asked for, at most once
 * per interval; a change of its identity, size, mtime or ctime re-reads it.
 * A file that fails to load keeps the last good inventory in force and is
 * reported by inventory_watch_health until a good one replaces it. */

struct inventory_watch;

/* inventory_watch_new loads path a first time (a fault is an error: there is
 * no last good inventory yet) and follows it, looking at most once per
 * interval_ns. */
int inventory_watch_new(const char *path, int64_t interval_ns,
    struct inventory_watch **ret, struct errbuf *e);
void inventory_watch_free(struct inventory_watch *w);

/* inventory_watch_set_interval changes how often the file is looked at
 * (tests: 0, at every use). Thread-safe. */
void inventory_watch_set_interval(struct inventory_watch *w, int64_t interval_ns);

/* inventory_watch_get returns a reference to the inventory in force (the
 * caller drops it with inventory_unref), after re-reading the file if it
 * changed and its interval has passed. Never fails. Thread-safe: one caller
 * re-reads, the others meanwhile get the inventory in force. */
struct inventory *inventory_watch_get(struct inventory_watch *w);

/* inventory_watch_health looks at the file as inventory_watch_get does and
 * returns 0, or the error of its last load attempt (the last good inventory
 * is still in force). Thread-safe. */
int inventory_watch_health(struct inventory_watch *w, struct errbuf *e);

#endif
