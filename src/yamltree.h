/* yamltree.h - a YAML document (libyaml) as a small tree with line numbers,
 * for configuration files: kubeconfig, cloud-config, inventories.
 *
 * Contract: never logs. Parse errors and cap violations return ERR_INVALID or
 * ERR_TOO_LARGE with "name:line:col: problem" in the errbuf. Aliases are
 * expanded with a node-count cap, so a billion-laughs file is an error, not an
 * explosion. Only the first document of a stream is used; an empty document
 * yields a NULL root. */
#ifndef BOOTCCM_YAMLTREE_H
#define BOOTCCM_YAMLTREE_H

#include <stddef.h>

#include "err.h"

#define YAMLTREE_NODES_MAX 100000 /* nodes per document */
#define YAMLTREE_DEPTH_MAX 64     /* nesting levels */

enum ynode_kind { YNODE_SCALAR, YNODE_SEQ, YNODE_MAP };

struct ynode {
	enum ynode_kind kind;
	int line, col;          /* 1-based position in the source */
	char *scalar;           /* YNODE_SCALAR: value, NUL-terminated */
	size_t scalar_len;
	int plain;              /* YNODE_SCALAR: 1 if unquoted (so "null"/"true" are typed) */
	size_t n;               /* items in a sequence, pairs in a map */
	struct ynode **items;   /* YNODE_SEQ items, YNODE_MAP values */
	struct ynode **keys;    /* YNODE_MAP keys (scalars) */
};

/* yamltree_parse parses len bytes of buf; name is used in messages. */
int yamltree_parse(const char *buf, size_t len, const char *name,
    struct ynode **ret, struct errbuf *e);

/* yamltree_parse_file reads at most max_bytes of path (more is ERR_TOO_LARGE). */
int yamltree_parse_file(const char *path, size_t max_bytes,
    struct ynode **ret, struct errbuf *e);

/* yamltree_get returns the value for key in a map node, or NULL. */
const struct ynode *yamltree_get(const struct ynode *map, const char *key);

/* yamltree_bool parses a scalar as a YAML 1.1/1.2 boolean (true/false/yes/no/
 * on/off, any case as Kubernetes' YAML accepts): 0 or 1, or ERR_INVALID. */
int yamltree_bool(const struct ynode *n);

/* yamltree_is_null tells whether n is absent or a plain null/~/empty scalar. */
int yamltree_is_null(const struct ynode *n);

void yamltree_free(struct ynode *root);

#endif
