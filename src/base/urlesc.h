/* urlesc.h - the one URL escaper: percent-encoding of a path segment or a
 * query value, as Go's net/url does it (upper-case hex).
 *
 * Contract: pure apart from the buffer it appends to; never logs. */
#ifndef BOOTCCM_URLESC_H
#define BOOTCCM_URLESC_H

#include "base/dynbuf.h"

#define URLESC_UNRESERVED 0 /* RFC 3986 unreserved bytes stay, every other one is %XX */
#define URLESC_SEGMENT 1    /* Go's url.PathEscape: "$&+:=@" stay as well */
#define URLESC_QUERY 2      /* Go's url.QueryEscape: ' ' becomes '+' */

/* urlesc appends s escaped (how: URLESC_*) to b. Returns 0 or
 * ERR_TOO_LARGE (b's cap; b then holds a part). */
int urlesc(struct dynbuf *b, const char *s, int how);

/* urlesc_dup returns s escaped in a new string (malloc'd). */
char *urlesc_dup(const char *s, int how);

#endif
