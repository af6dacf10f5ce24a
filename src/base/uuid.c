/* uuid.c - version 4 UUIDs from getrandom(2). */
#include "base/uuid.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/random.h>

#include "base/err.h"

#ifndef GRND_INSECURE
#define GRND_INSECURE 0x0004 /* Linux 5.6; older headers lack it */
#endif

/* uuid_getrandom fills buf with one flag set, riding out EINTR and short
 * reads. Returns 0 or the failing errno. */
static int
uuid_getrandom(unsigned char *buf, size_t len, unsigned int flags)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = getrandom(buf + off, len - off, flags);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		off += (size_t)n;
	}
	return 0;
}

int
uuid_random(void *buf, size_t len)
{
	int r;

	/* The pool is ready on any running system; when it is not (first
	 * seconds of boot), GRND_INSECURE answers at once on Linux >= 5.6, and
	 * only older kernels are left to wait for it. */
	r = uuid_getrandom(buf, len, GRND_NONBLOCK);
	if (r == EAGAIN)
		r = uuid_getrandom(buf, len, GRND_INSECURE);
	if (r == EINVAL)
		r = uuid_getrandom(buf, len, 0);
	return r == 0 ? 0 : ERR_IO;
}

int
uuid_v4(char buf[UUID_STR_LEN])
{
	unsigned char b[16];

	if (uuid_random(b, sizeof(b)) < 0)
		return ERR_IO;
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* variant 10 (RFC 9562) */
	snprintf(buf, UUID_STR_LEN,
	    "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	    b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
	    b[11], b[12], b[13], b[14], b[15]);
	return 0;
}
