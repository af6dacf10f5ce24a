/* fuzz_log.c - libFuzzer harness: the redactor and the escaper on arbitrary
 * secrets and text. Input: one byte n, then n & 7 secrets each ended by a
 * NUL, then the text. Checks that no LOG_SECRET_GRAM bytes of a secret (a
 * shorter secret: none whole) survive redaction, that a mark never breaks
 * valid UTF-8, and that escaped text holds no control byte, is valid UTF-8
 * and does not change when escaped again. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_SECRETS 7

/* fuzz_utf8_ok tells whether s is valid UTF-8. */
static int
fuzz_utf8_ok(const char *s)
{
	size_t n = strlen(s), u;

	for (size_t i = 0; i < n; i += u ? u : 1) {
		u = 0;
		if ((unsigned char)s[i] >= 0x80 && (u = log_utf8_len(s + i, n - i)) == 0)
			return 0;
	}
	return 1;
}

/* fuzz_found tells whether text holds a piece of sec the redactor promises
 * to remove. */
static int
fuzz_found(const char *text, const char *sec)
{
	size_t n = strlen(sec), k = n < LOG_SECRET_GRAM ? n : LOG_SECRET_GRAM;
	char piece[LOG_SECRET_GRAM + 1];

	for (size_t i = 0; i + k <= n; i++) {
		memcpy(piece, sec + i, k);
		piece[k] = '\0';
		if (strstr(text, piece) != NULL)
			return 1;
	}
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *secrets[FUZZ_SECRETS], *text, *clean, *esc, *esc2;
	size_t off = 1, ns = 0, cap;

	if (size == 0)
		return 0;
	log_clear_secrets();
	for (int i = 0; i < (data[0] & 7) && off < size; i++) {
		const uint8_t *end = memchr(data + off, '\0', size - off);
		size_t len = end ? (size_t)(end - data - off) : size - off;
		char *s = malloc(len + 1);
		/* none of the mark's bytes, so a piece found after redaction
		 * cannot be made of a mark and its neighbours */
		for (size_t j = 0; j < len; j++)
			s[j] = strchr("[redact]", data[off + j]) ? 'x' : (char)data[off + j];
		s[len] = '\0';
		off += len + 1;
		/* PEM blocks are indexed by their body lines only */
		if (strlen(s) < LOG_SECRET_MIN || strncmp(s, "-----BEGIN ", 11) == 0) {
			free(s);
			continue;
		}
		log_add_secret(s);
		secrets[ns++] = s;
	}
	text = malloc(size - (off < size ? off : size) + 1);
	memcpy(text, data + (off < size ? off : size), size - (off < size ? off : size));
	text[size - (off < size ? off : size)] = '\0';

	clean = log_redact_str(text);
	for (size_t i = 0; i < ns; i++)
		if (fuzz_found(clean ? clean : text, secrets[i]))
			abort();
	if (clean != NULL && fuzz_utf8_ok(text) && !fuzz_utf8_ok(clean))
		abort();

	cap = 4 * strlen(text) + 4;
	esc = malloc(cap);
	esc2 = malloc(cap);
	log_escape(text, esc, cap);
	for (const char *p = esc; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			abort();
	if (!fuzz_utf8_ok(esc) || strcmp(log_escape(esc, esc2, cap), esc) != 0)
		abort();
	/* a small buffer: cut, terminated, within it */
	if (strlen(log_escape(text, esc2, 16)) >= 16)
		abort();

	free(esc);
	free(esc2);
	free(clean);
	free(text);
	for (size_t i = 0; i < ns; i++)
		free(secrets[i]);
	log_clear_secrets();
	return 0;
}
