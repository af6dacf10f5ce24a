/* dynbuf.c - the capped growable buffer. */
#include "base/dynbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/xalloc.h"

#define DYNBUF_MIN 64  /* bytes: the first allocation */

void
dynbuf_init(struct dynbuf *b, size_t cap)
{
	b->p = NULL;
	b->len = b->alloc = 0;
	b->cap = cap;
}

/* dynbuf_reserve makes room for n more bytes and the NUL. */
static int
dynbuf_reserve(struct dynbuf *b, size_t n)
{
	size_t need, a;

	if (n > b->cap || b->len > b->cap - n)
		return ERR_TOO_LARGE;
	need = b->len + n + 1;
	if (need <= b->alloc)
		return 0;
	a = b->alloc ? b->alloc : DYNBUF_MIN;
	while (a < need)
		a = a > SIZE_MAX / 2 ? need : a * 2;
	if (a > b->cap + 1)
		a = b->cap + 1;  /* need <= cap + 1 here */
	b->p = xrealloc(b->p, a);
	b->alloc = a;
	return 0;
}

int
dynbuf_add(struct dynbuf *b, const void *p, size_t n)
{
	int r;

	if ((r = dynbuf_reserve(b, n)) < 0)
		return r;
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int
dynbuf_addstr(struct dynbuf *b, const char *s)
{
	return dynbuf_add(b, s, strlen(s));
}

int
dynbuf_vaddf(struct dynbuf *b, const char *fmt, va_list ap)
{
	va_list aq;
	int n, r;

	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		return ERR_INVALID;
	if ((r = dynbuf_reserve(b, (size_t)n)) < 0)
		return r;
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int
dynbuf_addf(struct dynbuf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = dynbuf_vaddf(b, fmt, ap);
	va_end(ap);
	return r;
}

const char *
dynbuf_ptr(const struct dynbuf *b)
{
	return b->p ? b->p : "";
}

size_t
dynbuf_len(const struct dynbuf *b)
{
	return b->len;
}

void
dynbuf_truncate(struct dynbuf *b, size_t n)
{
	if (n >= b->len)
		return;
	b->len = n;
	b->p[n] = '\0';
}

void
dynbuf_reset(struct dynbuf *b)
{
	dynbuf_truncate(b, 0);
}

char *
dynbuf_take(struct dynbuf *b, size_t *ret_len)
{
	char *p = b->p ? b->p : xstrdup("");

	if (ret_len)
		*ret_len = b->len;
	b->p = NULL;
	b->len = b->alloc = 0;
	return p;
}

void
dynbuf_free(struct dynbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->alloc = 0;
}
