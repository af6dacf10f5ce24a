/* test_yamltree.c - unit tests for the YAML tree: shapes, positions, typed
 * scalars, error messages, and the caps against hostile input. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "harness.h"
#include "base/yamltree.h"

static int
parse(const char *s, struct ynode **ret, struct errbuf *e)
{
	*ret = NULL;
	memset(e->msg, 0, sizeof(e->msg));
	return yamltree_parse(s, strlen(s), "t.yaml", ret, e);
}

/* grow_doc builds documents too big to write out by hand. */
struct grow {
	char *buf;
	size_t len, cap;
};

static void
grow_add(struct grow *g, const char *s)
{
	size_t n = strlen(s);

	if (g->len + n + 1 > g->cap) {
		g->cap = (g->len + n + 1) * 2;
		g->buf = realloc(g->buf, g->cap);
		if (g->buf == NULL)
			abort();
	}
	memcpy(g->buf + g->len, s, n + 1);
	g->len += n;
}

TEST(map_seq_scalars)
{
	struct ynode *root;
	struct errbuf e;
	const struct ynode *n;

	CHECK(parse("a: 1\nb:\n  - x\n  - 'y'\n  - \"z\"\nc: {d: e}\n", &root,
	    &e) == 0);
	CHECK(root != NULL && root->kind == YNODE_MAP && root->n == 3);
	n = yamltree_get(root, "a");
	CHECK(n != NULL && n->kind == YNODE_SCALAR);
	CHECK_STR(n->scalar, "1");
	CHECK(n->scalar_len == 1 && n->plain == 1);
	n = yamltree_get(root, "b");
	CHECK(n != NULL && n->kind == YNODE_SEQ && n->n == 3);
	CHECK_STR(n->items[0]->scalar, "x");
	CHECK(n->items[0]->plain == 1);
	CHECK_STR(n->items[1]->scalar, "y");
	CHECK(n->items[1]->plain == 0);
	CHECK_STR(n->items[2]->scalar, "z");
	CHECK(n->items[2]->plain == 0);
	n = yamltree_get(yamltree_get(root, "c"), "d");
	CHECK(n != NULL);
	CHECK_STR(n->scalar, "e");
	CHECK(yamltree_get(root, "missing") == NULL);
	CHECK(yamltree_get(n, "d") == NULL); /* not a map */
	CHECK(yamltree_get(NULL, "d") == NULL);
	yamltree_free(root);
}

TEST(positions_are_one_based)
{
	struct ynode *root;
	struct errbuf e;
	const struct ynode *n;

	CHECK(parse("top:\n  inner: value\n  list:\n    - item\n", &root,
	    &e) == 0);
	CHECK(root->line == 1 && root->col == 1);
	CHECK(root->keys[0]->line == 1 && root->keys[0]->col == 1);
	n = yamltree_get(root, "top");
	CHECK(n->line == 2 && n->col == 3);
	n = yamltree_get(n, "inner");
	CHECK(n->line == 2 && n->col == 10);
	n = yamltree_get(yamltree_get(root, "top"), "list");
	CHECK(n->kind == YNODE_SEQ);
	CHECK(n->items[0]->line == 4 && n->items[0]->col == 7);
	yamltree_free(root);
}

TEST(block_scalars_and_escapes)
{
	struct ynode *root;
	struct errbuf e;
	const struct ynode *n;

	CHECK(parse("lit: |\n  a\n  b\nfold: >\n  a\n  b\nesc: \"t\\tx\\u00e9\"\n",
	    &root, &e) == 0);
	CHECK_STR(yamltree_get(root, "lit")->scalar, "a\nb\n");
	CHECK_STR(yamltree_get(root, "fold")->scalar, "a b\n");
	CHECK_STR(yamltree_get(root, "esc")->scalar, "t\tx\xc3\xa9");
	CHECK(yamltree_get(root, "lit")->plain == 0);
	yamltree_free(root);

	/* a NUL in a double-quoted scalar is kept, and visible in the length */
	CHECK(parse("k: \"a\\0b\"\n", &root, &e) == 0);
	n = yamltree_get(root, "k");
	CHECK(n->scalar_len == 3 && strlen(n->scalar) == 1);
	CHECK(yamltree_bool(n) == ERR_INVALID);
	yamltree_free(root);
}

TEST(booleans)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes",
	    "YES", "on", "On", "ON", "y", "Y" };
	static const char *const no[] = { "false", "False", "FALSE", "no", "No",
	    "NO", "off", "Off", "OFF", "n", "N" };
	static const char *const bad[] = { "tRUE", "1", "0", "truth", "\"true\"",
	    "'false'", "", "[true]", "!!str true" };
	char doc[64];
	struct ynode *root;
	struct errbuf e;
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		snprintf(doc, sizeof(doc), "b: %s\n", yes[i]);
		CHECK(parse(doc, &root, &e) == 0);
		CHECK(yamltree_bool(yamltree_get(root, "b")) == 1);
		yamltree_free(root);
	}
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		snprintf(doc, sizeof(doc), "b: %s\n", no[i]);
		CHECK(parse(doc, &root, &e) == 0);
		CHECK(yamltree_bool(yamltree_get(root, "b")) == 0);
		yamltree_free(root);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(doc, sizeof(doc), "b: %s\n", bad[i]);
		CHECK(parse(doc, &root, &e) == 0);
		CHECK(yamltree_bool(yamltree_get(root, "b")) == ERR_INVALID);
		yamltree_free(root);
	}
	CHECK(yamltree_bool(NULL) == ERR_INVALID);
}

TEST(nulls)
{
	struct ynode *root;
	struct errbuf e;

	CHECK(parse("a:\nb: ~\nc: null\nd: NULL\ne: Null\nf: ''\ng: \"null\"\n"
	    "h: nil\ni: []\n", &root, &e) == 0);
	CHECK(yamltree_is_null(yamltree_get(root, "a")));
	CHECK(yamltree_is_null(yamltree_get(root, "b")));
	CHECK(yamltree_is_null(yamltree_get(root, "c")));
	CHECK(yamltree_is_null(yamltree_get(root, "d")));
	CHECK(yamltree_is_null(yamltree_get(root, "e")));
	CHECK(yamltree_is_null(yamltree_get(root, "absent")));
	CHECK(!yamltree_is_null(yamltree_get(root, "f")));
	CHECK(!yamltree_is_null(yamltree_get(root, "g")));
	CHECK(!yamltree_is_null(yamltree_get(root, "h")));
	CHECK(!yamltree_is_null(yamltree_get(root, "i")));
	CHECK(yamltree_is_null(NULL));
	yamltree_free(root);
}

TEST(tagged_str_is_not_plain)
{
	struct ynode *root;
	struct errbuf e;

	CHECK(parse("a: !!str true\nb: !!str\n", &root, &e) == 0);
	CHECK(yamltree_get(root, "a")->plain == 0);
	CHECK(yamltree_bool(yamltree_get(root, "a")) == ERR_INVALID);
	CHECK(!yamltree_is_null(yamltree_get(root, "b")));
	yamltree_free(root);
}

TEST(empty_inputs)
{
	struct ynode *root = (struct ynode *)1;
	struct errbuf e;

	CHECK(yamltree_parse("", 0, "t.yaml", &root, &e) == 0);
	CHECK(root == NULL);
	CHECK(parse("# only a comment\n\n", &root, &e) == 0);
	CHECK(root == NULL);
	CHECK(parse("---\n", &root, &e) == 0);
	CHECK(root == NULL);
	CHECK(parse("--- ''\n", &root, &e) == 0);
	CHECK(root != NULL && root->kind == YNODE_SCALAR);
	yamltree_free(root);
	yamltree_free(NULL);
}

TEST(first_document_only)
{
	struct ynode *root;
	struct errbuf e;

	CHECK(parse("a: 1\n---\nb: 2\n", &root, &e) == 0);
	CHECK(yamltree_get(root, "a") != NULL);
	CHECK(yamltree_get(root, "b") == NULL);
	yamltree_free(root);
	CHECK(parse("--- [1]\n...\n--- {\n", &root, &e) == 0);
	CHECK(root->kind == YNODE_SEQ);
	yamltree_free(root);
}

TEST(scalar_and_seq_roots)
{
	struct ynode *root;
	struct errbuf e;

	CHECK(parse("just text\n", &root, &e) == 0);
	CHECK(root->kind == YNODE_SCALAR);
	CHECK_STR(root->scalar, "just text");
	yamltree_free(root);
	CHECK(parse("- 1\n- 2\n", &root, &e) == 0);
	CHECK(root->kind == YNODE_SEQ && root->n == 2);
	yamltree_free(root);
}

TEST(tab_indentation)
{
	struct ynode *root;
	struct errbuf e;

	CHECK(parse("a:\n\tb: 1\n", &root, &e) == ERR_INVALID);
	CHECK(root == NULL);
	CHECK_CONTAINS(e.msg, "t.yaml:2:1: ");
	CHECK_CONTAINS(e.msg, "tab");
}

TEST(unclosed_quote)
{
	struct ynode *root;
	struct errbuf e;

	CHECK(parse("a: b\nc: \"open\n", &root, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "t.yaml:3:1: ");
	CHECK_CONTAINS(e.msg, "quoted scalar at 2:4");
	CHECK(parse("a: 'x\n", &root, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "t.yaml:");
}

TEST(syntax_errors)
{
	struct ynode *root;
	struct errbuf e;

	CHECK(parse("a: [1, 2\n", &root, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "t.yaml:");
	CHECK(parse("a: b: c\n", &root, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "t.yaml:1:5: ");
	CHECK(parse("a:\n  - 1\n b: 2\n", &root, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "t.yaml:3:");
	CHECK(parse("? [a]\n: b\n", &root, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "t.yaml:1:3: mapping keys must be scalars");
	CHECK(parse("{[a]: b}\n", &root, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "mapping keys must be scalars");
}

TEST(binary_junk)
{
	static const char junk[] = "\x7f" "ELF\x02\x01\x01\x00\x00\xff\xfe\x80";
	static const char bad_utf8[] = "a: \xc3\x28\n";
	static const char ctrl[] = "a: b\x01\n";
	struct ynode *root = NULL;
	struct errbuf e;

	CHECK(yamltree_parse(junk, sizeof(junk) - 1, "bin", &root, &e) ==
	    ERR_INVALID);
	CHECK(root == NULL);
	CHECK_CONTAINS(e.msg, "bin:1:");
	CHECK(yamltree_parse(bad_utf8, sizeof(bad_utf8) - 1, "u8", &root, &e) ==
	    ERR_INVALID);
	CHECK_CONTAINS(e.msg, "u8:1:5: invalid trailing UTF-8 octet");
	CHECK(yamltree_parse(ctrl, sizeof(ctrl) - 1, "c", &root, &e) ==
	    ERR_INVALID);
	CHECK_CONTAINS(e.msg, "c:1:5: ");
	CHECK(yamltree_parse("a\0b", 3, "nul", &root, &e) == ERR_INVALID);
}

TEST(aliases_expand)
{
	struct ynode *root;
	struct errbuf e;
	const struct ynode *a, *b;

	CHECK(parse("base: &b\n  k: v\n  l: [1, 2]\ncopy: *b\ns: &s str\n"
	    "t: *s\n", &root, &e) == 0);
	a = yamltree_get(root, "base");
	b = yamltree_get(root, "copy");
	CHECK(a != NULL && b != NULL && a != b);
	CHECK(b->kind == YNODE_MAP && b->n == 2);
	CHECK_STR(yamltree_get(b, "k")->scalar, "v");
	CHECK(yamltree_get(b, "l")->n == 2);
	CHECK(yamltree_get(b, "k") != yamltree_get(a, "k"));
	/* the copy sits where the alias is; its insides where the anchor is */
	CHECK(b->line == 4 && b->col == 7);
	CHECK(yamltree_get(b, "k")->line == 2);
	CHECK_STR(yamltree_get(root, "t")->scalar, "str");
	yamltree_free(root);
}

TEST(alias_errors)
{
	struct ynode *root;
	struct errbuf e;

	CHECK(parse("a: *nowhere\n", &root, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "t.yaml:1:4: unknown alias \"*nowhere\"");
	/* an alias inside its own anchor would be a cycle */
	CHECK(parse("a: &x [1, *x]\n", &root, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "unknown alias");
	CHECK(parse("k: &m {a: 1}\n*m : v\n", &root, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "mapping keys must be scalars");
	/* a redefined anchor: the later one counts */
	CHECK(parse("a: &x 1\nb: &x 2\nc: *x\n", &root, &e) == 0);
	CHECK_STR(yamltree_get(root, "c")->scalar, "2");
	yamltree_free(root);
}

TEST(billion_laughs)
{
	static const char doc[] =
	    "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
	    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
	    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
	    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
	    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
	    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
	    "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
	    "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
	struct ynode *root = NULL;
	struct errbuf e;

	CHECK(parse(doc, &root, &e) == ERR_TOO_LARGE);
	CHECK(root == NULL);
	CHECK_CONTAINS(e.msg, "t.yaml:");
	CHECK_CONTAINS(e.msg, "more than 100000 nodes");
}

TEST(alias_bytes_cap)
{
	struct grow g = { 0 };
	struct ynode *root = NULL;
	struct errbuf e;
	char *big;
	size_t i;

	/* 1 MB scalar, aliased 40 times: few nodes, many bytes */
	big = malloc(1024 * 1024 + 1);
	CHECK(big != NULL);
	memset(big, 'x', 1024 * 1024);
	big[1024 * 1024] = '\0';
	grow_add(&g, "a: &a ");
	grow_add(&g, big);
	grow_add(&g, "\nb: [");
	for (i = 0; i < 40; i++)
		grow_add(&g, "*a, ");
	grow_add(&g, "]\n");
	free(big);
	CHECK(yamltree_parse(g.buf, g.len, "t.yaml", &root, &e) ==
	    ERR_TOO_LARGE);
	free(g.buf);
	CHECK(root == NULL);
	CHECK_CONTAINS(e.msg, "bytes of scalars");
}

TEST(node_cap_without_aliases)
{
	struct grow g = { 0 };
	struct ynode *root = NULL;
	struct errbuf e;
	size_t i;

	grow_add(&g, "[");
	for (i = 0; i < YAMLTREE_NODES_MAX + 10; i++)
		grow_add(&g, "1,");
	grow_add(&g, "]");
	CHECK(yamltree_parse(g.buf, g.len, "t.yaml", &root, &e) ==
	    ERR_TOO_LARGE);
	free(g.buf);
	CHECK_CONTAINS(e.msg, "more than 100000 nodes");
}

TEST(deep_nesting)
{
	struct grow g = { 0 };
	struct ynode *root = NULL;
	struct errbuf e;
	size_t i;

	/* 64 levels are fine */
	for (i = 0; i < YAMLTREE_DEPTH_MAX; i++)
		grow_add(&g, "[");
	for (i = 0; i < YAMLTREE_DEPTH_MAX; i++)
		grow_add(&g, "]");
	CHECK(yamltree_parse(g.buf, g.len, "t.yaml", &root, &e) == 0);
	yamltree_free(root);
	root = NULL;
	free(g.buf);
	memset(&g, 0, sizeof(g));

	/* 100000 are not, and fail early */
	for (i = 0; i < 100000; i++)
		grow_add(&g, "[");
	CHECK(yamltree_parse(g.buf, g.len, "t.yaml", &root, &e) ==
	    ERR_TOO_LARGE);
	free(g.buf);
	memset(&g, 0, sizeof(g));
	CHECK(root == NULL);
	CHECK_CONTAINS(e.msg, "t.yaml:1:65: nested deeper than 64 levels");

	/* block style too */
	for (i = 0; i < 70; i++) {
		char line[200];

		snprintf(line, sizeof(line), "%*sk%zu:\n", (int)i, "", i);
		grow_add(&g, line);
	}
	CHECK(yamltree_parse(g.buf, g.len, "t.yaml", &root, &e) ==
	    ERR_TOO_LARGE);
	free(g.buf);
	CHECK_CONTAINS(e.msg, "nested deeper than 64 levels");
}

TEST(deep_through_aliases)
{
	struct grow g = { 0 };
	struct ynode *root = NULL;
	struct errbuf e;
	size_t i;

	/* 40 levels anchored, then used 40 levels deep: 80 in all */
	grow_add(&g, "a: &deep ");
	for (i = 0; i < 40; i++)
		grow_add(&g, "[");
	for (i = 0; i < 40; i++)
		grow_add(&g, "]");
	grow_add(&g, "\nb: ");
	for (i = 0; i < 40; i++)
		grow_add(&g, "[");
	grow_add(&g, "*deep");
	for (i = 0; i < 40; i++)
		grow_add(&g, "]");
	grow_add(&g, "\n");
	CHECK(yamltree_parse(g.buf, g.len, "t.yaml", &root, &e) ==
	    ERR_TOO_LARGE);
	free(g.buf);
	CHECK(root == NULL);
	CHECK_CONTAINS(e.msg, "nested deeper than 64 levels (aliases expanded)");
}

TEST(duplicate_keys)
{
	struct ynode *root = NULL;
	struct errbuf e;

	CHECK(parse("a: 1\nb: 2\na: 3\n", &root, &e) == ERR_INVALID);
	CHECK(root == NULL);
	CHECK_CONTAINS(e.msg, "t.yaml:3:1: duplicate key \"a\"");
	CHECK(parse("x:\n  k: 1\n  \"k\": 2\n", &root, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "t.yaml:3:3: duplicate key \"k\"");
	/* same text, different length is not a duplicate */
	CHECK(parse("\"a\\0\": 1\na: 2\n", &root, &e) == 0);
	yamltree_free(root);
}

TEST(parse_file)
{
	char dir[] = "/tmp/yamltree-test.XXXXXX", path[256];
	struct ynode *root = NULL;
	struct errbuf e;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/c.yaml", dir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	fputs("a: 1\nb: [\n", f);
	fclose(f);
	CHECK(yamltree_parse_file(path, 1024, &root, &e) == ERR_INVALID);
	CHECK(strncmp(e.msg, path, strlen(path)) == 0);
	CHECK(yamltree_parse_file(path, 5, &root, &e) == ERR_TOO_LARGE);
	CHECK_CONTAINS(e.msg, "larger than 5 bytes");
	f = fopen(path, "w");
	CHECK(f != NULL);
	fputs("a: 1\n", f);
	fclose(f);
	CHECK(yamltree_parse_file(path, 5, &root, &e) == 0);
	CHECK_STR(yamltree_get(root, "a")->scalar, "1");
	yamltree_free(root);
	unlink(path);
	CHECK(yamltree_parse_file(path, 1024, &root, &e) == ERR_IO);
	CHECK_CONTAINS(e.msg, "No such file or directory");
	CHECK(strncmp(e.msg, path, strlen(path)) == 0);
	rmdir(dir);
}

TEST(null_errbuf)
{
	struct ynode *root = NULL;

	CHECK(yamltree_parse("a: [", 4, "t", &root, NULL) == ERR_INVALID);
	CHECK(root == NULL);
}

TEST_MAIN()
