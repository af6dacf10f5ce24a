/* uuid.h - random (version 4) UUIDs from the kernel's random source.
 *
 * Contract: never logs, never blocks for long. Randomness comes from
 * getrandom(2); before the kernel's pool is initialized (very early boot, the
 * moment a bootstrap component may start) it falls back to the kernel's
 * non-blocking source rather than waiting, since these values only have to be
 * unique, not secret. */
#ifndef BOOTCCM_UUID_H
#define BOOTCCM_UUID_H

#include <stddef.h>

#define UUID_STR_LEN 37 /* bytes: 36 characters and the NUL */

/* uuid_v4 writes a random RFC 9562 version 4 UUID in its canonical lower-case
 * form ("0b9c8a3e-5f1d-4c2b-9a7e-3d2f1e0c4b5a") into buf. Returns 0, or
 * ERR_IO when the kernel gives no randomness (buf untouched). */
int uuid_v4(char buf[UUID_STR_LEN]);

/* uuid_random fills buf with len random bytes from the same source. Returns 0
 * or ERR_IO. */
int uuid_random(void *buf, size_t len);

#endif
