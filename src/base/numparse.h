/* numparse.h - the one strict integer parser (OpenBSD's strtonum, with Go's
 * strconv.ParseInt rules): the whole string is the number, no white space,
 * no sign unless asked for, an explicit [min, max], overflow detected, and a
 * reason when it is not a number.
 *
 * Contract: pure; never logs. The caller words its own error message and may
 * use the reason in it. */
#ifndef BOOTCCM_NUMPARSE_H
#define BOOTCCM_NUMPARSE_H

#include <stdint.h>

#define NUMPARSE_SIGN 1     /* a leading '+' or '-' is allowed */
#define NUMPARSE_PREFIX 2   /* Go's base 0: 0x/0X hex, 0o/0O or a leading 0 octal, 0b/0B binary */

/* numparse reads s (flags: 0 = decimal digits only, or NUMPARSE_*) into
 * *ret when it lies in [min, max]. Returns 0, or ERR_INVALID with *why (if
 * why is not NULL) "empty", "not a number" or "out of range" (also for a
 * value past 64 bits); *ret is untouched then. */
int numparse(const char *s, int flags, int64_t min, int64_t max, int64_t *ret,
    const char **why);

#endif
