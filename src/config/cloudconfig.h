/* cloudconfig.h - the --cloud-config YAML file, loaded against a provider's
 * schema into a provider-defined struct.
 *
 * Contract: never logs. A schema is an array of struct cloudconfig_key ended
 * by an entry with key NULL; each key names a field of the caller's output
 * struct by offset. Unknown keys, wrong types, values a key's check refuses
 * and missing required keys are ERR_INVALID with "FILE:LINE:COL: problem"
 * (LINE:COL of the offending node, or of the section for a missing key), so
 * a bad value is reported where it is written. The file is read with
 * readfile (a directory says so). An empty file, an empty document or
 * `{}` yields the defaults. Size and shape are capped by yamltree's caps and
 * CLOUDCONFIG_FILE_MAX. On failure the output struct is untouched; on success
 * it owns heap memory released by cloudconfig_free. Out of memory is fatal. */
#ifndef BOOTCCM_CLOUDCONFIG_H
#define BOOTCCM_CLOUDCONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define CLOUDCONFIG_FILE_MAX (1024 * 1024)  /* bytes of a --cloud-config file */
#define CLOUDCONFIG_ITEMS_MAX 1024          /* items of one list or map */
#define CLOUDCONFIG_STRING_MAX 4096         /* bytes of one string value, with the NUL;
                                               lists and maps: each item */

enum cloudconfig_type {
	CLOUDCONFIG_STRING,     /* char *; "" allowed; NULL when absent with no default */
	CLOUDCONFIG_BOOL,       /* int 0/1 */
	CLOUDCONFIG_INT,        /* long long, within [min, max] */
	CLOUDCONFIG_DURATION,   /* int64_t nanoseconds, a Go duration ("30s"), >= 0 */
	CLOUDCONFIG_STRING_LIST,/* struct cloudconfig_list */
	CLOUDCONFIG_MAP,        /* struct cloudconfig_map: string to string */
	CLOUDCONFIG_SECTION,    /* a nested map with its own schema (no field) */
	CLOUDCONFIG_SECTION_LIST, /* struct cloudconfig_sections: a list of maps, each
	                           loaded against .section into an element of
	                           .elem_size bytes (the section's offsets are
	                           into the element) */
};

struct cloudconfig_list {
	size_t n;
	char **items;
};

struct cloudconfig_map {
	size_t n;
	char **keys;
	char **values;
};

/* Where a node of the file starts (1-based), for the caller's own checks
 * across values ("pools a and b overlap"). */
struct cloudconfig_pos {
	int line, col;
};

struct cloudconfig_sections {
	size_t n;
	void *items;                   /* n elements of the key's elem_size bytes */
	struct cloudconfig_pos *pos;   /* where each element starts */
};

struct cloudconfig_key {
	const char *key;
	enum cloudconfig_type type;
	int required;           /* absent or null is an error; in a section: only
	                           when the section is given (or itself required) */
	const char *def;        /* default, written as in the file ("30s", "true");
	                           lists and maps: none (empty); NULL: none */
	size_t offset;          /* of the field in the output struct */
	long long min, max;     /* CLOUDCONFIG_INT bounds, CLOUDCONFIG_DURATION's in
	                           nanoseconds; both 0: any */
	const struct cloudconfig_key *section; /* CLOUDCONFIG_SECTION's schema, and
	                           CLOUDCONFIG_SECTION_LIST's for each element */
	size_t elem_size;       /* CLOUDCONFIG_SECTION_LIST: bytes of one element */
	size_t max_items;       /* lists, maps, section lists: most items; 0 means
	                           CLOUDCONFIG_ITEMS_MAX */
	/* check (optional) vets a STRING value, each STRING_LIST item and each
	 * MAP value; check_key each MAP key. They return 0 or an ERR_* code
	 * with a message (no position): the loader reports it as
	 * "FILE:LINE:COL: key \"K\" in SECTION: message" at the value. */
	int (*check)(const char *value, struct errbuf *e);
	int (*check_key)(const char *key, struct errbuf *e);
};

/* cloudconfig_parse loads len bytes of buf (name in messages) into out, a
 * struct of out_size bytes the schema describes. */
int cloudconfig_parse(const char *buf, size_t len, const char *name,
    const struct cloudconfig_key *schema, void *out, size_t out_size, struct errbuf *e);

/* cloudconfig_load is cloudconfig_parse on a file; path NULL or "" yields the
 * defaults. */
int cloudconfig_load(const char *path, const struct cloudconfig_key *schema,
    void *out, size_t out_size, struct errbuf *e);

/* cloudconfig_free releases what cloudconfig_parse stored in out and zeroes
 * those fields. */
void cloudconfig_free(const struct cloudconfig_key *schema, void *out);

#endif
