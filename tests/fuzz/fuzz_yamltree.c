/* fuzz_yamltree.c - libFuzzer harness: yamltree_parse on arbitrary bytes,
 * then a walk of the tree checking its invariants. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/yamltree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_walk(const struct ynode *n, int depth)
{
	size_t i;

	if (depth > YAMLTREE_DEPTH_MAX + 1 || n->line < 1 || n->col < 1)
		abort();
	switch (n->kind) {
	case YNODE_SCALAR:
		if (n->scalar == NULL || n->scalar[n->scalar_len] != '\0')
			abort();
		(void)yamltree_bool(n);
		(void)yamltree_is_null(n);
		break;
	case YNODE_MAP:
		for (i = 0; i < n->n; i++) {
			if (n->keys[i] == NULL || n->items[i] == NULL ||
			    n->keys[i]->kind != YNODE_SCALAR)
				abort();
			if (yamltree_get(n, n->keys[i]->scalar) == NULL &&
			    strlen(n->keys[i]->scalar) == n->keys[i]->scalar_len)
				abort();
			fuzz_walk(n->items[i], depth + 1);
		}
		break;
	case YNODE_SEQ:
		for (i = 0; i < n->n; i++) {
			if (n->items[i] == NULL)
				abort();
			fuzz_walk(n->items[i], depth + 1);
		}
		break;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ynode *root = NULL;
	struct errbuf e;
	int r;

	memset(&e, 0, sizeof(e));
	r = yamltree_parse((const char *)data, size, "fuzz", &root, &e);
	if (r < 0) {
		if (root != NULL || e.msg[0] == '\0')
			abort();
		return 0;
	}
	if (root != NULL)
		fuzz_walk(root, 0);
	yamltree_free(root);
	return 0;
}
