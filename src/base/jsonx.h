/* jsonx.h - strict JSON for every parser of outside input, and the typed
 * getters that read a parsed tree with messages naming the field.
 *
 * jsonx_parse holds every answer to one standard, the grammar of RFC 8259 as
 * Go's encoding/json enforces it: one value; no comments, trailing commas,
 * single quotes, bare words, NaN or Infinity; numbers without leading zeros
 * or a bare '.'; no raw control bytes in strings; valid UTF-8; nesting
 * capped; only whitespace after it.
 *
 * The getters read parent's member field. A member that is absent or JSON
 * null is "absent", as Go's encoding/json treats it: *ret becomes NULL / 0 /
 * an empty array, unless JSONX_REQUIRED is given. A member of another type
 * is ERR_INVALID naming it: "spec.taints[2].key: expected a string" (path
 * names parent, "" at the top level). Strings holding a NUL are refused.
 *
 * Contract: never logs; returned strings and objects are borrowed from the
 * tree; outputs are untouched on failure. */
#ifndef BOOTCCM_JSONX_H
#define BOOTCCM_JSONX_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "base/err.h"

#define JSONX_REQUIRED 1   /* getter flag: absent or null is an error */
#define JSONX_DEPTH_MAX 128 /* the deepest nesting any parser may allow */

/* jsonx_parse parses buf[0..len) with at most depth levels of nesting.
 * *ret is the caller's (json_object_put). ERR_INVALID with the byte offset
 * of the fault, ERR_TOO_LARGE for a text past INT_MAX bytes. */
int jsonx_parse(const char *buf, size_t len, int depth, json_object **ret,
    struct errbuf *e);

/* What a parse keeps of an object: the members named here, each whole
 * (members NULL) or filtered by its own list: of an object value only the
 * members the list names, of an array value every element, the objects
 * among them filtered by that same list. A list ends with a NULL name. */
struct jsonx_keep {
	const char *name;
	const struct jsonx_keep *members;
};

/* jsonx_parse_keep is jsonx_parse building only what keep names of a
 * top-level object: the whole text is held to the same standard, with the
 * same errors, but the members keep does not name never become objects,
 * which is most of the work for a decoder that reads a few fields of a
 * large document (a Node's managedFields and images). A filtered member
 * whose value is neither an object nor an array, or whose key is written
 * with an escape, is kept whole, so a getter sees what a full parse would
 * give it; so is a top-level value that is not an object. keep NULL keeps
 * everything. */
int jsonx_parse_keep(const char *buf, size_t len, int depth,
    const struct jsonx_keep *keep, json_object **ret, struct errbuf *e);

/* jsonx_type_name names a JSON type for messages ("a string", "an object"). */
const char *jsonx_type_name(enum json_type t);

/* jsonx_get returns field's value when present, of type t. */
int jsonx_get(json_object *parent, const char *path, const char *field,
    enum json_type t, int flags, json_object **ret, struct errbuf *e);

/* jsonx_str: a string and its length (*ret_len may be NULL). */
int jsonx_str(json_object *parent, const char *path, const char *field, int flags,
    const char **ret, size_t *ret_len, struct errbuf *e);

/* jsonx_str_nul is jsonx_str (not required) for free text the API server
 * lets hold a NUL byte (an annotation, spec.providerID): such a string reads
 * as absent (*ret NULL) with *ret_nul set, instead of failing, so the caller
 * can name the field and go on with the rest of the object. */
int jsonx_str_nul(json_object *parent, const char *path, const char *field,
    const char **ret, int *ret_nul, struct errbuf *e);

/* jsonx_int: a JSON integer (not a float, not a string) in [min, max];
 * absent is 0. */
int jsonx_int(json_object *parent, const char *path, const char *field,
    int64_t min, int64_t max, int flags, int64_t *ret, struct errbuf *e);

/* jsonx_bool: true or false; absent is 0. */
int jsonx_bool(json_object *parent, const char *path, const char *field, int flags,
    int *ret, struct errbuf *e);

/* jsonx_object: an object, or NULL when absent. */
int jsonx_object(json_object *parent, const char *path, const char *field, int flags,
    json_object **ret, struct errbuf *e);

/* jsonx_array: an array (NULL when absent) and its length. */
int jsonx_array(json_object *parent, const char *path, const char *field, int flags,
    json_object **ret, size_t *ret_n, struct errbuf *e);

/* jsonx_time: an RFC 3339 time (rfc3339_parse) as seconds since the epoch;
 * absent is 0. */
int jsonx_time(json_object *parent, const char *path, const char *field, int flags,
    int64_t *ret_sec, struct errbuf *e);

/* jsonx_string_ok tells whether a JSON string holds no NUL byte. */
int jsonx_string_ok(json_object *s);

#endif
