/* test_readfile.c - whole files under a cap: regular files, pipes (no size
 * known), the cap's edge, and the errors' messages. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "readfile.h"

/* fx_file writes len bytes of c into a new temporary file. */
static int
fx_file(char *path, size_t cap, char c, size_t len)
{
	char buf[4096];
	int fd;

	snprintf(path, cap, "/tmp/readfile-test.XXXXXX");
	if ((fd = mkstemp(path)) < 0)
		return -1;
	memset(buf, c, sizeof(buf));
	while (len > 0) {
		size_t n = len < sizeof(buf) ? len : sizeof(buf);
		if (write(fd, buf, n) != (ssize_t)n) {
			close(fd);
			return -1;
		}
		len -= n;
	}
	close(fd);
	return 0;
}

TEST(regular_file_and_cap)
{
	struct errbuf e = { "" };
	char path[64], *buf = NULL;
	size_t len = 0;

	CHECK(fx_file(path, sizeof(path), 'x', 10000) == 0);
	CHECK(readfile(path, 10000, READFILE_REGULAR, &buf, &len, &e) == 0);
	CHECK(len == 10000);
	CHECK(buf[0] == 'x' && buf[9999] == 'x' && buf[10000] == '\0');
	readfile_free(buf, len);
	buf = NULL;
	len = 7;
	/* one byte past the cap */
	CHECK(readfile(path, 9999, 0, &buf, &len, &e) == ERR_TOO_LARGE);
	CHECK_CONTAINS(e.msg, path);
	CHECK_CONTAINS(e.msg, ": larger than 9999 bytes");
	CHECK(buf == NULL && len == 7);
	unlink(path);

	CHECK(fx_file(path, sizeof(path), 'x', 0) == 0);
	CHECK(readfile(path, 0, 0, &buf, &len, &e) == 0);
	CHECK(len == 0);
	CHECK_STR(buf, "");
	readfile_free(buf, len);
	unlink(path);
}

TEST(pipe_grows_to_the_end)
{
	struct errbuf e = { "" };
	char chunk[1000], *buf = NULL;
	size_t len = 0;
	int p[2];

	CHECK(pipe(p) == 0);
	memset(chunk, 'p', sizeof(chunk));
	/* less than a pipe's buffer: written whole before the read */
	for (int i = 0; i < 20; i++)
		CHECK(write(p[1], chunk, sizeof(chunk)) == (ssize_t)sizeof(chunk));
	close(p[1]);
	CHECK(readfile_fd(p[0], "pipe", 1 << 20, &buf, &len, &e) == 0);
	CHECK(len == 20000);
	CHECK(buf[19999] == 'p' && buf[20000] == '\0');
	readfile_free(buf, len);
	close(p[0]);

	CHECK(pipe(p) == 0);
	for (int i = 0; i < 20; i++)
		CHECK(write(p[1], chunk, sizeof(chunk)) == (ssize_t)sizeof(chunk));
	close(p[1]);
	CHECK(readfile_fd(p[0], "pipe", 19999, &buf, &len, &e) == ERR_TOO_LARGE);
	CHECK_STR(e.msg, "pipe: larger than 19999 bytes");
	close(p[0]);
}

TEST(errors)
{
	struct errbuf e = { "" };
	char *buf = NULL;
	size_t len = 0;

	CHECK(readfile("/nonexistent/file", 100, 0, &buf, &len, &e) == ERR_IO);
	CHECK_STR(e.msg, "/nonexistent/file: No such file or directory");
	CHECK(readfile("/tmp", 100, READFILE_REGULAR, &buf, &len, &e) == ERR_IO);
	CHECK_STR(e.msg, "/tmp: not a regular file");
	CHECK(readfile("/dev/null", 100, READFILE_REGULAR, &buf, &len, &e) == ERR_IO);
	CHECK(buf == NULL);
	/* without the flag a device is read like a pipe */
	CHECK(readfile("/dev/null", 100, 0, &buf, &len, &e) == 0);
	CHECK(len == 0);
	readfile_free(buf, len);
	readfile_free(NULL, 0);
}

TEST_MAIN()
