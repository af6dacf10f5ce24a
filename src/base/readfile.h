/* readfile.h - read a whole file into memory under a size cap, the one way
 * bootccm reads its input files (kubeconfig, certificates, keys, tokens,
 * configuration, config-drive files).
 *
 * Contract: never logs; only regular files are read, and opening one
 * never blocks (a FIFO, a device, a directory or a socket is refused at
 * once); messages name the file ("PATH: No such file or directory", "PATH:
 * is a FIFO, not a regular file", "PATH: larger than N bytes"). Out of
 * memory is fatal (xalloc). Files may hold secrets, so every buffer dropped
 * on the way (grown past, or failed) is wiped first, and readfile_free
 * wipes the one handed out. The content is NUL-terminated, the NUL not
 * counted. Outputs are untouched on failure. */
#ifndef BOOTCCM_READFILE_H
#define BOOTCCM_READFILE_H

#include <stddef.h>

#include "base/err.h"

struct stat;

/* readfile_open opens path for reading without ever blocking and refuses
 * anything but a regular file (symbolic links followed): a FIFO with no
 * writer cannot hang the open (O_NONBLOCK), a terminal never becomes the
 * controlling one (O_NOCTTY), and the descriptor does not leak into a child
 * (O_CLOEXEC). Returns the descriptor (the caller closes it) with its fstat
 * in *ret_st, or ERR_IO: "PATH: No such file or directory" (errno is then
 * open's), "PATH: is a FIFO, not a regular file" (a directory, a character
 * device, a block device, a socket). */
int readfile_open(const char *path, struct stat *ret_st, struct errbuf *e);

/* readfile reads the regular file at path whole (readfile_open, then
 * readfile_fd). Returns 0 with the content in *ret and its length in
 * *ret_len, ERR_IO (as readfile_open, or a failed read) or ERR_TOO_LARGE
 * (more than max bytes). */
int readfile(const char *path, size_t max, char **ret, size_t *ret_len, struct errbuf *e);

/* readfile_fd is readfile on an open descriptor, read to its end and never
 * past max + 1 bytes; name is the file's name for messages. fd stays open.
 * It does not check the file's type: give it a descriptor from
 * readfile_open, or one the caller knows (a pipe it made). */
int readfile_fd(int fd, const char *name, size_t max, char **ret, size_t *ret_len,
    struct errbuf *e);

/* readfile_free wipes len bytes of p and frees it (p may be NULL). */
void readfile_free(char *p, size_t len);

#endif
