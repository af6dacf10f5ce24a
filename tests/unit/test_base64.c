/* test_base64.c - unit tests for base64 decoding and encoding. */
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/err.h"
#include "harness.h"

static int
decodes_to(const char *in, const char *want, size_t want_len)
{
	char *out = NULL;
	size_t len = 0;
	int ok;

	if (base64_decode(in, strlen(in), &out, &len) != 0)
		return 0;
	ok = len == want_len && memcmp(out, want, len) == 0 &&
	    out[len] == '\0';
	free(out);
	return ok;
}

static int
rejects(const char *in)
{
	char *out = (char *)"untouched";
	size_t len = 7;
	int r;

	r = base64_decode(in, strlen(in), &out, &len);
	return r == ERR_INVALID && len == 7 &&
	    strcmp(out, "untouched") == 0;
}

TEST(rfc4648_vectors)
{
	CHECK(decodes_to("", "", 0));
	CHECK(decodes_to("Zg==", "f", 1));
	CHECK(decodes_to("Zm8=", "fo", 2));
	CHECK(decodes_to("Zm9v", "foo", 3));
	CHECK(decodes_to("Zm9vYg==", "foob", 4));
	CHECK(decodes_to("Zm9vYmE=", "fooba", 5));
	CHECK(decodes_to("Zm9vYmFy", "foobar", 6));
}

TEST(padding_optional)
{
	CHECK(decodes_to("Zg", "f", 1));
	CHECK(decodes_to("Zm8", "fo", 2));
	CHECK(decodes_to("Zm9vYg", "foob", 4));
}

TEST(whitespace_skipped)
{
	CHECK(decodes_to(" Zm9v\nYmFy\r\n", "foobar", 6));
	CHECK(decodes_to("Zm\t9v YmE =\n", "fooba", 5));
	CHECK(decodes_to("Zg=\n=", "f", 1));
}

TEST(binary_and_nul)
{
	CHECK(decodes_to("AP8A", "\0\377\0", 3));
	CHECK(decodes_to("+/+/", "\373\377\277", 3));
}

TEST(invalid_input)
{
	CHECK(rejects("Z"));          /* 6 bits cannot make a byte */
	CHECK(rejects("Zm9vY"));
	CHECK(rejects("Zg==="));      /* too much padding */
	CHECK(rejects("Zm8=="));
	CHECK(rejects("="));
	CHECK(rejects("Zm9v===="));
	CHECK(rejects("Zg==Zg=="));   /* data after padding */
	CHECK(rejects("Zm9v!"));
	CHECK(rejects("Zm9-"));       /* URL alphabet is not standard */
	CHECK(rejects("Zm9_"));
	CHECK(rejects("\xc3\xa9\xc3\xa9"));
}

TEST(embedded_nul_is_invalid)
{
	char *out = NULL;
	size_t len = 0;

	CHECK(base64_decode("Zm\0v", 4, &out, &len) == ERR_INVALID);
	CHECK(out == NULL);
}

TEST(encode_vectors)
{
	static const char *const plain[] = {
		"", "f", "fo", "foo", "foob", "fooba", "foobar",
	};
	static const char *const enc[] = {
		"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy",
	};
	size_t i;

	for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		char *out = base64_encode(plain[i], strlen(plain[i]));

		CHECK_STR(out, enc[i]);
		free(out);
	}
}

TEST(roundtrip_all_bytes)
{
	unsigned char in[256 * 3 + 2];
	char *enc = NULL, *dec = NULL;
	size_t i, n, len = 0;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(i * 7 + 3);
	for (n = 0; n <= sizeof(in); n += 37) {
		enc = base64_encode(in, n);
		CHECK(strlen(enc) == (n + 2) / 3 * 4);
		CHECK(base64_decode(enc, strlen(enc), &dec, &len) == 0);
		CHECK(len == n);
		CHECK(memcmp(dec, in, n) == 0);
		free(enc);
		free(dec);
	}
}

TEST_MAIN()
