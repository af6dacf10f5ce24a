/* xalloc.h - allocation that cannot fail: out of memory is fatal.
 *
 * Contract: every function returns usable memory or does not return; on
 * failure the process exits through log_fatal with the caller's file:line,
 * as OpenBSD's daemons do. So no caller grows an error path for it, and no
 * ERR_NOMEM travels up the stack. Zero-size requests return a valid pointer
 * that must be freed. Bounds on outside input are checked before allocating
 * (dynbuf's cap, the parsers' caps), never by hoping an allocation fails. */
#ifndef BOOTCCM_XALLOC_H
#define BOOTCCM_XALLOC_H

#include <stddef.h>

#define xmalloc(n) xmalloc_at((n), __FILE__, __LINE__)
#define xcalloc(n, size) xcalloc_at((n), (size), __FILE__, __LINE__)
#define xrealloc(p, n) xrealloc_at((p), (n), __FILE__, __LINE__)
#define xreallocarray(p, n, size) xreallocarray_at((p), (n), (size), __FILE__, __LINE__)
#define xstrdup(s) xstrdup_at((s), __FILE__, __LINE__)
#define xstrndup(s, n) xstrndup_at((s), (n), __FILE__, __LINE__)
#define xmemdup(p, n) xmemdup_at((p), (n), __FILE__, __LINE__)
#define xasprintf(...) xasprintf_at(__FILE__, __LINE__, __VA_ARGS__)
/* xcheck: for a library that allocates on our behalf (json-c's constructors,
 * curl's handles): a NULL result is fatal. Returns p. */
#define xcheck(p) xcheck_at((p), __FILE__, __LINE__)

void *xmalloc_at(size_t n, const char *file, int line);
void *xcalloc_at(size_t n, size_t size, const char *file, int line);
void *xrealloc_at(void *p, size_t n, const char *file, int line);
/* xreallocarray is xrealloc(p, n * size) with the multiplication checked. */
void *xreallocarray_at(void *p, size_t n, size_t size, const char *file, int line);
char *xstrdup_at(const char *s, const char *file, int line);
/* xstrndup copies at most n bytes of s and a NUL. */
char *xstrndup_at(const char *s, size_t n, const char *file, int line);
/* xmemdup copies n bytes and appends a NUL (so a body can be used as a string;
 * for other data the extra byte is harmless). */
void *xmemdup_at(const void *p, size_t n, const char *file, int line);
char *xasprintf_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void *xcheck_at(void *p, const char *file, int line);

/* xalloc_fatal ends the process: "out of memory" with file:line. */
void xalloc_fatal(const char *file, int line) __attribute__((noreturn));

#endif
