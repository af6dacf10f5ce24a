/* xalloc.c - malloc and friends, fatal on failure. */
#include "base/xalloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

void
xalloc_fatal(const char *file, int line)
{
	/* log_fatal_at formats on the stack: it needs no memory to report this */
	log_fatal_at(file, line, "out of memory", NULL);
}

void *
xcheck_at(void *p, const char *file, int line)
{
	if (p == NULL)
		xalloc_fatal(file, line);
	return p;
}

void *
xmalloc_at(size_t n, const char *file, int line)
{
	return xcheck_at(malloc(n ? n : 1), file, line);
}

void *
xcalloc_at(size_t n, size_t size, const char *file, int line)
{
	if (n == 0 || size == 0)
		n = size = 1;
	return xcheck_at(calloc(n, size), file, line);
}

void *
xrealloc_at(void *p, size_t n, const char *file, int line)
{
	return xcheck_at(realloc(p, n ? n : 1), file, line);
}

void *
xreallocarray_at(void *p, size_t n, size_t size, const char *file, int line)
{
	if (size != 0 && n > SIZE_MAX / size)
		xalloc_fatal(file, line);
	return xrealloc_at(p, n * size, file, line);
}

char *
xstrdup_at(const char *s, const char *file, int line)
{
	return xmemdup_at(s, strlen(s), file, line);
}

char *
xstrndup_at(const char *s, size_t n, const char *file, int line)
{
	return xmemdup_at(s, strnlen(s, n), file, line);
}

void *
xmemdup_at(const void *p, size_t n, const char *file, int line)
{
	char *d;

	if (n == SIZE_MAX)
		xalloc_fatal(file, line);
	d = xmalloc_at(n + 1, file, line);
	if (n)
		memcpy(d, p, n);
	d[n] = '\0';
	return d;
}

char *
xasprintf_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		xalloc_fatal(file, line);
	s = xmalloc_at((size_t)n + 1, file, line);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}
