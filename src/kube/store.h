/* store.h - the informer cache: a thread-safe keyed store of compact,
 * immutable, refcounted objects, and the builder that packs an object decoded
 * from JSON into one allocation holding only the fields a controller reads.
 *
 * Contract: an object is immutable once built; each reference keeps it alive.
 * The store holds one reference per object it contains; store_get and
 * store_list hand out new references that the caller drops with
 * store_obj_unref. One lock per store, held only for table operations: never
 * across I/O or a callback. One writer at a time (the reflector); any number
 * of readers. Out of memory, and a fill function that breaks the builder's
 * rules, are fatal. Never logs otherwise. */
#ifndef BOOTCCM_KUBE_STORE_H
#define BOOTCCM_KUBE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "base/err.h"

#define STORE_OBJECTS_MAX 500000  /* objects in one store */
#define STORE_INTERN_MAX 4096      /* distinct label and annotation keys shared
                                      by all objects (store_bld_key) */
#define STORE_INTERN_LEN_MAX 256   /* bytes: a longer key is not shared */

/* The head of every compact object (struct kube_node, struct kube_service
 * start with it). Strings point into the object's own allocation. */
struct store_obj {
	unsigned int refs;             /* atomic; managed by store_obj_ref/unref */
	size_t size;                   /* bytes of the object's one allocation */
	const char *key;               /* "name", or "namespace/name" */
	const char *uid;               /* "" when absent */
	const char *resource_version;  /* "" when absent */
};

/* A label or annotation. */
struct store_kv {
	const char *key;
	const char *value;
};

/* store_obj_ref takes one more reference to o and returns it. */
const struct store_obj *store_obj_ref(const struct store_obj *o);

/* store_obj_unref drops a reference; the last one frees o. NULL is fine. */
void store_obj_unref(const struct store_obj *o);

/* store_kv_get returns the value for key among n pairs, or NULL. */
const char *store_kv_get(const struct store_kv *kv, size_t n, const char *key);

struct store;

/* store_new returns an empty store. */
struct store *store_new(void);

/* store_free drops the store's references and frees it. NULL is fine. */
void store_free(struct store *s);

/* store_put inserts o under o->key, taking over the caller's reference. The
 * object it replaces (if any) goes to *ret_old (the caller then owns that
 * reference) or is dropped when ret_old is NULL. On failure (ERR_TOO_LARGE
 * past STORE_OBJECTS_MAX) the store is unchanged and the reference to o is
 * dropped. */
int store_put(struct store *s, const struct store_obj *o,
    const struct store_obj **ret_old);

/* store_delete removes key; its object goes to *ret_old (or is dropped when
 * ret_old is NULL). ERR_NOT_FOUND when absent. */
int store_delete(struct store *s, const char *key,
    const struct store_obj **ret_old);

/* store_get returns a new reference to key's object, or NULL. */
const struct store_obj *store_get(struct store *s, const char *key);

/* store_list returns a malloc'd array of new references to every object,
 * sorted by key; free it with store_list_free. */
void store_list(struct store *s, const struct store_obj ***ret, size_t *ret_n);
void store_list_free(const struct store_obj **v, size_t n);

/* store_len and store_bytes: the number of objects and the bytes their
 * allocations take (object memory only, not the table). */
size_t store_len(struct store *s);
size_t store_bytes(struct store *s);

/* store_change_fn hears of one change: old NULL for an add, new NULL for a
 * delete. The references are borrowed for the call. */
typedef void (*store_change_fn)(const struct store_obj *old,
    const struct store_obj *new_obj, void *arg);

/* store_replace makes the store hold objs (a fresh, complete LIST), calling
 * fn outside the lock after each change: an add for a new key, an update
 * when the resourceVersion differs (an object with the same resourceVersion
 * keeps the stored one and is not reported), and a delete for each stored
 * key that is neither in objs nor in keep (keys that were listed but could
 * not be decoded: their last good version stays). When complete is 0 (some
 * listed objects could not even be keyed) nothing is deleted: never delete
 * on doubt. Takes over the references in objs (all of them, whatever
 * happens). Returns 0, or ERR_TOO_LARGE with the changes made so far
 * reported and kept. */
int store_replace(struct store *s, const struct store_obj **objs, size_t n,
    const char *const *keep, size_t nkeep, int complete, store_change_fn fn,
    void *arg);

/* Building a compact object.
 *
 * store_obj_build calls fill twice on the same src: once to measure (the
 * arrays it allocates are scratch memory), once to fill one exact
 * allocation of size bytes (the object's struct, which starts with a struct
 * store_obj) plus every string and array fill asked for. fill must do the
 * same thing both times and set o->key (and may set uid and
 * resource_version; they default to ""). A fill error from the first pass
 * is returned with its message; *ret gets a new object with one reference. */
struct store_bld;
typedef int (*store_fill_fn)(struct store_bld *b, struct store_obj *o,
    const void *src, struct errbuf *e);
int store_obj_build(size_t size, store_fill_fn fill, const void *src,
    const struct store_obj **ret, struct errbuf *e);

/* store_bld_alloc returns n zeroed bytes, 8-aligned, living as long as the
 * object. */
void *store_bld_alloc(struct store_bld *b, size_t n);

/* store_bld_str copies len bytes and a NUL. */
const char *store_bld_str(struct store_bld *b, const char *s, size_t len);

/* store_bld_key is store_bld_str for a string that repeats across objects
 * (a label or annotation key): the first STORE_INTERN_MAX distinct ones of
 * at most STORE_INTERN_LEN_MAX bytes are kept once for the whole process
 * and shared by every object (never freed, not counted in an object's size
 * nor in store_bytes); the others are copied into the object. */
const char *store_bld_key(struct store_bld *b, const char *s, size_t len);

/* JSON field helpers for fill functions: what a fill keeps goes through
 * these, which read with jsonx's rules and messages (jsonx.h: absent or null
 * is "absent", a member of the wrong type is ERR_INVALID "path.field:
 * expected a string", strings holding a NUL are refused) and copy into the
 * object. Fields read without being kept use the jsonx getters directly. */

/* store_json_str: a string, copied; NULL when absent. */
int store_json_str(struct store_bld *b, json_object *parent, const char *path,
    const char *field, const char **ret, struct errbuf *e);
/* store_json_str_nul is store_json_str for free text the API server lets
 * hold a NUL byte (spec.providerID): such a value is left out (*ret NULL)
 * with *ret_nul set, instead of failing the whole object. */
int store_json_str_nul(struct store_bld *b, json_object *parent, const char *path,
    const char *field, const char **ret, int *ret_nul, struct errbuf *e);

/* store_json_kv: a map of strings (labels, annotations), in the answer's
 * order; its keys are shared (store_bld_key). With ret_nul, a value holding
 * a NUL byte (legal in an annotation) is left out of the map and its key
 * listed in *ret_nul instead of failing the object; without, it is
 * ERR_INVALID "path.field[\"key\"]: holds a NUL character". */
int store_json_kv(struct store_bld *b, json_object *parent, const char *path,
    const char *field, const struct store_kv **ret, size_t *ret_n,
    const char *const **ret_nul, size_t *ret_nnul, struct errbuf *e);
/* store_json_strs: an array of strings (podCIDRs, finalizers). */
int store_json_strs(struct store_bld *b, json_object *parent, const char *path,
    const char *field, const char *const **ret, size_t *ret_n,
    struct errbuf *e);

#endif
