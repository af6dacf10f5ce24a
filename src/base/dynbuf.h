/* dynbuf.h - a growable byte buffer with a size cap (curl's dynbuf).
 *
 * Contract: dynbuf_init sets the cap; every append that would take the
 * content past it fails with ERR_TOO_LARGE and leaves the content as it was,
 * so outside input can never grow a buffer without bound. The content is
 * always NUL-terminated (the NUL is not counted against the cap). Out of
 * memory is fatal (xalloc). A dynbuf belongs to one thread. Never logs. */
#ifndef BOOTCCM_DYNBUF_H
#define BOOTCCM_DYNBUF_H

#include <stdarg.h>
#include <stddef.h>

struct dynbuf {
	char *p;        /* NULL until the first append */
	size_t len;     /* content bytes, the NUL excluded */
	size_t alloc;   /* bytes allocated */
	size_t cap;     /* content bytes allowed */
};

/* dynbuf_init makes b empty with a cap of cap bytes. */
void dynbuf_init(struct dynbuf *b, size_t cap);

/* dynbuf_add appends n bytes. Returns 0 or ERR_TOO_LARGE. */
int dynbuf_add(struct dynbuf *b, const void *p, size_t n);

/* dynbuf_addstr appends a string. */
int dynbuf_addstr(struct dynbuf *b, const char *s);

/* dynbuf_addf appends printf-formatted text. */
int dynbuf_addf(struct dynbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int dynbuf_vaddf(struct dynbuf *b, const char *fmt, va_list ap);

/* dynbuf_ptr returns the content ("" when empty; never NULL). */
const char *dynbuf_ptr(const struct dynbuf *b);

/* dynbuf_len returns the content's length. */
size_t dynbuf_len(const struct dynbuf *b);

/* dynbuf_truncate shortens the content to n bytes (n <= len). */
void dynbuf_truncate(struct dynbuf *b, size_t n);

/* dynbuf_reset empties the content and keeps the memory for reuse. */
void dynbuf_reset(struct dynbuf *b);

/* dynbuf_take hands the content (malloc'd, NUL-terminated, never NULL) to
 * the caller, with its length in *ret_len (may be NULL), and empties b. */
char *dynbuf_take(struct dynbuf *b, size_t *ret_len);

/* dynbuf_free frees the memory; b is empty afterwards, with its cap kept. */
void dynbuf_free(struct dynbuf *b);

#endif
