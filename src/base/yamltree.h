/* yamltree.h - a YAML document (libyaml) as a small tree with line numbers,
 * for configuration files: kubeconfig, cloud-config, inventories.
 *
 * Contract: never logs; out of memory is fatal (xalloc). Parse errors and
 * cap violations return ERR_INVALID or ERR_TOO_LARGE with "name:line:col:
 * problem" in the errbuf. Aliases are expanded with a node-count cap, so a
 * billion-laughs file is an error, not an explosion; scalar bytes are capped
 * the same way. A map that repeats a key
 * is an error (YAML forbids it; libraries disagree on which value wins).
 * Mapping keys must be scalars. An alias is a copy: its top node carries the
 * alias's position, the nodes below it their anchor's. Only the first
 * document of a stream is used (later ones are not even parsed); an empty
 * file or document yields a NULL root and 0. Scalars are NUL-terminated but
 * may hold a NUL ("\0" in double quotes): callers wanting a C string compare
 * strlen with scalar_len. The tree's scalar text is wiped when freed, since
 * configuration files hold tokens and keys. */
#ifndef BOOTCCM_YAMLTREE_H
#define BOOTCCM_YAMLTREE_H

#include <stddef.h>

#include "base/err.h"

#define YAMLTREE_NODES_MAX 100000 /* nodes per document */
#define YAMLTREE_DEPTH_MAX 64     /* nesting levels of sequences and maps */
#define YAMLTREE_BYTES_MAX (32 * 1024 * 1024) /* bytes of scalar text per document */

enum ynode_kind { YNODE_SCALAR, YNODE_SEQ, YNODE_MAP };

struct ynode {
	enum ynode_kind kind;
	int line, col;          /* 1-based position in the source */
	char *scalar;           /* YNODE_SCALAR: value, NUL-terminated */
	size_t scalar_len;
	int plain;              /* YNODE_SCALAR: 1 if unquoted and not tagged !!str
	                         * (so "null"/"true" are typed) */
	size_t n;               /* items in a sequence, pairs in a map */
	struct ynode **items;   /* YNODE_SEQ items, YNODE_MAP values */
	struct ynode **keys;    /* YNODE_MAP keys (scalars) */
};

/* yamltree_parse parses len bytes of buf; name is used in messages. The tree
 * in *ret is the caller's, to release with yamltree_free. */
int yamltree_parse(const char *buf, size_t len, const char *name,
    struct ynode **ret, struct errbuf *e);

/* yamltree_parse_file reads at most max_bytes of path (more is ERR_TOO_LARGE). */
int yamltree_parse_file(const char *path, size_t max_bytes,
    struct ynode **ret, struct errbuf *e);

/* yamltree_get returns the value for key in a map node, or NULL. */
const struct ynode *yamltree_get(const struct ynode *map, const char *key);

/* yamltree_bool parses a scalar as a YAML 1.1/1.2 boolean, with the words
 * go-yaml and so Kubernetes accept: y, yes, true, on and n, no, false, off, each
 * in lower, Capitalized or UPPER case: 0 or 1, or ERR_INVALID. Quoted scalars
 * are strings, not booleans, as in Kubernetes. */
int yamltree_bool(const struct ynode *n);

/* yamltree_is_null tells whether n is absent or a plain null/~/empty scalar. */
int yamltree_is_null(const struct ynode *n);

void yamltree_free(struct ynode *root);

#endif
