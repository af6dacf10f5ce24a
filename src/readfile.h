/* readfile.h - read a whole file into memory under a size cap, the one way
 * bootccm reads its input files (kubeconfig, certificates, keys, tokens,
 * configuration, config-drive files).
 *
 * Contract: never logs; messages name the file ("PATH: No such file or
 * directory", "PATH: larger than N bytes"). Out of memory is fatal
 * (xalloc). Files may hold secrets, so every buffer dropped on the way
 * (grown past, or failed) is wiped first, and readfile_free wipes the one
 * handed out. The content is NUL-terminated, the NUL not counted. Outputs are
 * untouched on failure. */
#ifndef BOOTCCM_READFILE_H
#define BOOTCCM_READFILE_H

#include <stddef.h>

#include "err.h"

#define READFILE_REGULAR 1  /* flag: anything but a regular file is ERR_IO */

/* readfile reads path whole. Returns 0 with the content in *ret and its
 * length in *ret_len, ERR_IO (with strerror, or "not a regular file") or
 * ERR_TOO_LARGE (more than max bytes). */
int readfile(const char *path, size_t max, int flags, char **ret, size_t *ret_len,
    struct errbuf *e);

/* readfile_fd is readfile on an open descriptor, read to its end; name is
 * the file's name for messages. fd stays open. */
int readfile_fd(int fd, const char *name, size_t max, char **ret, size_t *ret_len,
    struct errbuf *e);

/* readfile_free wipes len bytes of p and frees it (p may be NULL). */
void readfile_free(char *p, size_t len);

#endif
