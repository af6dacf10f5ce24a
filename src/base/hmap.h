/* hmap.h - the string-keyed hash map behind every map in bootccm (redis's
 * dict: chained buckets, a power-of-two table that doubles when full and
 * halves when mostly empty), and its hash function (64-bit FNV-1a).
 *
 * Contract: keys are C strings; values are non-NULL pointers the map does
 * not own. With HMAP_COPY_KEYS the map keeps its own copy of each key;
 * otherwise it borrows the caller's, which must stay valid and unchanged
 * while the entry exists (hmap_put with an existing key takes the new
 * pointer, so a value that holds its own key can be replaced by another).
 * No locking: the owner serializes access. No puts or deletes during an
 * iteration. Out of memory is fatal (xalloc). Never logs. */
#ifndef BOOTCCM_HMAP_H
#define BOOTCCM_HMAP_H

#include <stddef.h>
#include <stdint.h>

#define HMAP_COPY_KEYS 1  /* hmap_init flag: the map copies and frees keys */

struct hmap_entry;

struct hmap {
	struct hmap_entry **buckets;  /* NULL until the first put */
	size_t nbuckets;              /* a power of two, or 0 */
	size_t len;
	int flags;
};

struct hmap_iter {
	const struct hmap *m;
	size_t bucket;
	struct hmap_entry *next;
};

/* hmap_hash is 64-bit FNV-1a of s. */
uint64_t hmap_hash(const char *s);

/* hmap_init makes m empty (flags: 0 or HMAP_COPY_KEYS). Allocates nothing. */
void hmap_init(struct hmap *m, int flags);

/* hmap_free frees the entries (and copied keys), calling free_value on each
 * value when it is not NULL; m is empty and reusable afterwards. */
void hmap_free(struct hmap *m, void (*free_value)(void *));

/* hmap_get returns key's value, or NULL. */
void *hmap_get(const struct hmap *m, const char *key);

/* hmap_put sets key's value (value must not be NULL). Returns the value it
 * replaced, or NULL when key was new. */
void *hmap_put(struct hmap *m, const char *key, void *value);

/* hmap_delete removes key and returns its value, or NULL when absent. */
void *hmap_delete(struct hmap *m, const char *key);

/* hmap_len returns the number of entries. */
size_t hmap_len(const struct hmap *m);

/* hmap_iter_init and hmap_iter_next walk every entry once, in no particular
 * order: hmap_iter_next returns 1 and sets *ret_key and *ret_value (either
 * may be NULL) while there is one, then 0. */
void hmap_iter_init(struct hmap_iter *it, const struct hmap *m);
int hmap_iter_next(struct hmap_iter *it, const char **ret_key, void **ret_value);

#endif
