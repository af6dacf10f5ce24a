/* base64.h - RFC 4648 base64 decoding (standard alphabet), as kubeconfig
 * "*-data" fields use it. Never logs; out of memory is fatal (xalloc). */
#ifndef BOOTCCM_BASE64_H
#define BOOTCCM_BASE64_H

#include <stddef.h>

/* base64_decode decodes len bytes of in into a malloc'd, NUL-terminated buffer
 * (*ret, *ret_len). Whitespace (space, tab, CR, LF) is skipped; padding is
 * optional. Returns 0, or ERR_INVALID on a bad character or length (nothing
 * of the input is left in memory then: it may be key material). */
int base64_decode(const char *in, size_t len, char **ret, size_t *ret_len);

/* base64_encode encodes len bytes into a malloc'd NUL-terminated string. */
char *base64_encode(const void *in, size_t len);

#endif
