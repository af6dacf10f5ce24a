/* build.h - checked steps from metadata answers to a struct md_instance:
 * field validation with caps, canonical addresses, strict JSON (jsonx).
 *
 * Contract: never logs. Every function that fails returns ERR_INVALID (or
 * ERR_TOO_LARGE) with a message naming the answer's origin (a->where) and
 * the field ("GET URL: compute.vmId: missing"); nothing is written to the
 * destination field on failure. */
#ifndef BOOTCCM_MD_BUILD_H
#define BOOTCCM_MD_BUILD_H

#include <json-c/json.h>
#include <stddef.h>

#include "base/err.h"
#include "metadata/metadata.h"
#include "metadata/session.h"

#define MD_JSON_DEPTH 32   /* nesting levels of a metadata document */

/* Validation flags for md_build_set. Every field is printable: ASCII
 * without control bytes, or UTF-8 with MD_V_UTF8. */
#define MD_V_TEXT 0        /* spaces allowed */
#define MD_V_WORD 1        /* no spaces */
#define MD_V_SEGMENT 2     /* a providerID segment: a word without '/', quotes,
                              backslashes, '$', '`' or glob characters, so the
                              kubelet flags survive an unquoted shell expansion */
#define MD_V_REQUIRED 4    /* must not be empty */
#define MD_V_UTF8 8        /* also valid UTF-8 beyond ASCII (display names) */

/* md_build_set copies value[0..len) into dst (cap bytes with the NUL) after
 * checking it against flags. */
int md_build_set(const struct md_answer *a, const char *field, char *dst, size_t cap,
    const char *value, size_t len, int flags, struct errbuf *e);

/* md_build_check is md_build_set without the copy: 0 or ERR_INVALID. */
int md_build_check(const struct md_answer *a, const char *field, const char *value,
    size_t len, int flags, struct errbuf *e);

/* md_build_trim returns the body without surrounding whitespace (a text
 * leaf) in *ret and *ret_len. */
void md_build_trim(const char *s, size_t len, const char **ret, size_t *ret_len);

/* md_build_line takes the next line of [*pos, end) (LF-separated, a CR
 * before the LF dropped, surrounding blanks trimmed) into *ret and *ret_len, and
 * advances *pos. Returns 1 while there is a line, 0 at the end. */
int md_build_line(const char **pos, const char *end, const char **ret, size_t *ret_len);

/* md_build_addr appends an address to in: IP types must parse as IPv4 or
 * IPv6 and are stored canonically, DNS types must be host names. An empty
 * value adds nothing; a duplicate (same type and address) adds nothing; past
 * MD_ADDRS_MAX the address is only counted in in->addresses_dropped. */
int md_build_addr(struct md_instance *in, const struct md_answer *a, const char *field,
    enum md_addr_type type, const char *value, size_t len, struct errbuf *e);

/* md_build_ip_family returns 4 or 6 for a canonical address, 0 otherwise. */
int md_build_ip_family(const char *addr);

/* md_build_provider_id formats in->provider_id. Returns 0 or ERR_INVALID
 * when it does not fit. */
int md_build_provider_id(struct md_instance *in, const struct md_answer *a,
    struct errbuf *e, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* md_build_json parses a's whole body as one JSON object with jsonx_parse
 * (MD_JSON_DEPTH levels). The object in *ret is the caller's
 * (json_object_put). */
int md_build_json(const struct md_answer *a, struct json_object **ret, struct errbuf *e);

/* md_build_json_child is jsonx_get of key in obj (obj NULL: absent) with the
 * answer's origin before the message: 0 and *ret (borrowed) or NULL when
 * absent or null and !required; ERR_INVALID when required and absent, or of
 * another type. path names obj in messages ("compute", "" at the top). */
int md_build_json_child(const struct md_answer *a, struct json_object *obj,
    const char *path, const char *key, enum json_type type, int required,
    struct json_object **ret, struct errbuf *e);

/* md_build_json_str is md_build_json_child for strings (jsonx_str): *ret and
 * *ret_len (NULL and 0 when absent and optional); a NUL inside is refused. */
int md_build_json_str(const struct md_answer *a, struct json_object *obj,
    const char *path, const char *key, int required, const char **ret,
    size_t *ret_len, struct errbuf *e);

/* md_build_json_id reads a positive decimal id that is a JSON integer (any
 * size up to 2^64-2, exact) or a string of digits into dst. */
int md_build_json_id(const struct md_answer *a, struct json_object *obj,
    const char *path, const char *key, char *dst, size_t cap, struct errbuf *e);

/* md_build_leaf gets path through g and stores its text, trimmed, in dst
 * (checked against flags; field names it). Returns 0, 1 when optional and
 * the answer was 404 (dst is then ""), or an error. */
int md_build_leaf(const struct md_getter *g, const char *path, int optional,
    const char *field, char *dst, size_t cap, int flags, struct errbuf *e);

/* md_build_digits tells whether s[0..len) is a positive decimal number
 * without sign or leading zeros. */
int md_build_digits(const char *s, size_t len);

#endif
