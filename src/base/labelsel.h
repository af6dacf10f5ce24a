/* labelsel.h - Kubernetes label selectors in their string form
 * ("app=web,tier!=db,zone in (a,b),!legacy,gpu"), as kubectl and the
 * apimachinery labels package parse them: parsing and matching a set of
 * labels.
 *
 * Contract: labelsel_parse copies what it keeps; an empty string selects
 * everything. ERR_INVALID names the fault and its byte offset. Label keys and
 * values are checked with the API server's rules (qualified names, values of
 * at most 63 characters). Never logs. Out of memory is fatal. */
#ifndef BOOTCCM_LABELSEL_H
#define BOOTCCM_LABELSEL_H

#include <stddef.h>

#include "base/err.h"

#define LABELSEL_REQS_MAX 32     /* requirements in one selector */
#define LABELSEL_VALUES_MAX 32   /* values in one in/notin set */

enum labelsel_op {
	LABELSEL_EQ,        /* key=value, key==value */
	LABELSEL_NE,        /* key!=value (true when the key is absent) */
	LABELSEL_IN,        /* key in (a,b) */
	LABELSEL_NOTIN,     /* key notin (a,b) (true when absent) */
	LABELSEL_EXISTS,    /* key */
	LABELSEL_NOTEXISTS, /* !key */
};

struct labelsel_req {
	enum labelsel_op op;
	char *key;
	char **values;
	size_t n_values;
};

struct labelsel {
	struct labelsel_req *reqs;
	size_t n;
};

/* labelsel_parse parses s into *ret (free with labelsel_free). */
int labelsel_parse(const char *s, struct labelsel *ret, struct errbuf *e);
void labelsel_free(struct labelsel *sel);

/* labelsel_get looks a label up: returns its value or NULL. */
typedef const char *(*labelsel_get_fn)(const void *labels, const char *key);

/* labelsel_matches tells whether the labels get reads satisfy every
 * requirement of sel. */
int labelsel_matches(const struct labelsel *sel, labelsel_get_fn get, const void *labels);

/* labelsel_dns_subdomain_ok tells whether s is a DNS-1123 subdomain (lowercase
 * alphanumeric labels with inner '-', joined by '.', at most 253 bytes: the
 * API server's rule for most object names, a Node's or a Lease's);
 * labelsel_dns_label_ok whether it is a DNS-1123 label (one such label, at
 * most 63 bytes: a namespace's name). */
int labelsel_dns_subdomain_ok(const char *s);
int labelsel_dns_label_ok(const char *s);

/* labelsel_key_ok and labelsel_value_ok apply the API server's label rules. */
int labelsel_key_ok(const char *key);
int labelsel_value_ok(const char *value);

#endif
