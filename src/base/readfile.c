/* readfile.c - whole files under a cap, wiping what it lets go of. */
#include "base/readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xalloc.h"

#define READFILE_FIRST 4096  /* bytes: the first buffer when the size is unknown */

void
readfile_free(char *p, size_t len)
{
	if (p == NULL)
		return;
	explicit_bzero(p, len);
	free(p);
}

int
readfile_fd(int fd, const char *name, size_t max, char **ret, size_t *ret_len,
    struct errbuf *e)
{
	struct stat st;
	char *buf;
	size_t len = 0, alloc = READFILE_FIRST, limit;
	int r;

	/* room for one byte past the cap (to tell "too large" from "full")
	 * and the NUL */
	limit = max < SIZE_MAX - 2 ? max + 2 : SIZE_MAX;
	/* a regular file says its size: one buffer, unless it grows meanwhile */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 &&
	    (uintmax_t)st.st_size < limit - 1)
		alloc = (size_t)st.st_size + 2;
	if (alloc > limit)
		alloc = limit;
	buf = xmalloc(alloc);
	for (;;) {
		ssize_t n;
		if (len + 1 >= alloc) {
			size_t na = alloc > limit / 2 ? limit : alloc * 2;
			/* not realloc: the old buffer may hold a secret, and must be
			 * wiped before it is freed */
			char *nb = xmalloc(na);
			memcpy(nb, buf, len);
			readfile_free(buf, alloc);
			buf = nb;
			alloc = na;
		}
		n = read(fd, buf + len, alloc - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = errbuf_set(e, ERR_IO, "%s: %s", name, strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			r = errbuf_set(e, ERR_TOO_LARGE, "%s: larger than %zu bytes", name, max);
			goto fail;
		}
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
fail:
	readfile_free(buf, alloc);
	return r;
}

/* readfile_kind names a file type that is not a regular file. */
static const char *
readfile_kind(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISSOCK(m))
		return "a socket";
	return "of an unknown type";
}

int
readfile_open(const char *path, struct stat *ret_st, struct errbuf *e)
{
	struct stat st;
	int fd, fl, saved;

	/* O_NONBLOCK: opening a FIFO for reading waits for a writer, forever;
	 * a regular file ignores the flag, so it is cleared only for the
	 * record */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		saved = errno;
		/* a socket cannot be opened at all (ENXIO): say what it is */
		if (saved == ENXIO && stat(path, &st) == 0 && !S_ISREG(st.st_mode))
			errbuf_set(e, ERR_IO, "%s: is %s, not a regular file", path,
			    readfile_kind(st.st_mode));
		else
			errbuf_set(e, ERR_IO, "%s: %s", path, strerror(saved));
		errno = saved;
		return ERR_IO;
	}
	if (fstat(fd, &st) < 0) {
		errbuf_set(e, ERR_IO, "%s: %s", path, strerror(errno));
		close(fd);
		return ERR_IO;
	}
	if (!S_ISREG(st.st_mode)) {
		errbuf_set(e, ERR_IO, "%s: is %s, not a regular file", path,
		    readfile_kind(st.st_mode));
		close(fd);
		return ERR_IO;
	}
	if ((fl = fcntl(fd, F_GETFL)) >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	*ret_st = st;
	return fd;
}

int
readfile(const char *path, size_t max, char **ret, size_t *ret_len, struct errbuf *e)
{
	struct stat st;
	int fd, r;

	if ((fd = readfile_open(path, &st, e)) < 0)
		return fd;
	r = readfile_fd(fd, path, max, ret, ret_len, e);
	close(fd);
	return r;
}
