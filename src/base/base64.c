/* base64.c - RFC 4648 base64 (standard alphabet) decoding and encoding. */
#include "base/base64.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/xalloc.h"

static const char base64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* base64_value maps one character to its 6-bit value, or -1. */
static int
base64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

static int
base64_is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int
base64_decode(const char *in, size_t len, char **ret, size_t *ret_len)
{
	unsigned char *out;
	uint32_t acc = 0;
	size_t i, o = 0, nchars = 0, npad = 0;
	int v;

	/* Every 4 characters give 3 bytes, so len / 4 * 3 + 3 is enough. */
	out = xmalloc(len / 4 * 3 + 4);

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];

		if (base64_is_space(c))
			continue;
		if (c == '=') {
			/* Padding only completes a group of 2 or 3 characters. */
			if (nchars % 4 < 2 || nchars % 4 + npad >= 4)
				goto invalid;
			npad++;
			continue;
		}
		if (npad > 0)
			goto invalid; /* data after padding */
		v = base64_value(c);
		if (v < 0)
			goto invalid;
		acc = acc << 6 | (uint32_t)v;
		nchars++;
		if (nchars % 4 == 0) {
			out[o++] = (unsigned char)(acc >> 16);
			out[o++] = (unsigned char)(acc >> 8);
			out[o++] = (unsigned char)acc;
			acc = 0;
		}
	}

	switch (nchars % 4) {
	case 0:
		if (npad > 0)
			goto invalid;
		break;
	case 1:
		goto invalid; /* 6 bits cannot make a byte */
	case 2:
		if (npad != 0 && npad != 2)
			goto invalid;
		out[o++] = (unsigned char)(acc >> 4);
		break;
	case 3:
		if (npad != 0 && npad != 1)
			goto invalid;
		out[o++] = (unsigned char)(acc >> 10);
		out[o++] = (unsigned char)(acc >> 2);
		break;
	}
	out[o] = '\0';
	*ret = (char *)out;
	*ret_len = o;
	return 0;

invalid:
	/* The input may be key material: leave no partial copy behind. */
	explicit_bzero(out, len / 4 * 3 + 4);
	free(out);
	return ERR_INVALID;
}

char *
base64_encode(const void *in, size_t len)
{
	const unsigned char *p = in;
	char *out;
	size_t i, o = 0;
	uint32_t acc;

	/* (len + 2) / 3 * 4 + 1 bytes, without overflowing on the way */
	out = xreallocarray(NULL, len / 3 + 2, 4);

	for (i = 0; i + 2 < len; i += 3) {
		acc = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		out[o++] = base64_alphabet[acc >> 18 & 0x3f];
		out[o++] = base64_alphabet[acc >> 12 & 0x3f];
		out[o++] = base64_alphabet[acc >> 6 & 0x3f];
		out[o++] = base64_alphabet[acc & 0x3f];
	}
	if (len - i == 1) {
		acc = (uint32_t)p[i] << 16;
		out[o++] = base64_alphabet[acc >> 18 & 0x3f];
		out[o++] = base64_alphabet[acc >> 12 & 0x3f];
		out[o++] = '=';
		out[o++] = '=';
	} else if (len - i == 2) {
		acc = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
		out[o++] = base64_alphabet[acc >> 18 & 0x3f];
		out[o++] = base64_alphabet[acc >> 12 & 0x3f];
		out[o++] = base64_alphabet[acc >> 6 & 0x3f];
		out[o++] = '=';
	}
	out[o] = '\0';
	return out;
}
