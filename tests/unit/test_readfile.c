/* test_readfile.c - whole files under a cap: regular files, pipes (no size
 * known), the cap's edge, anything but a regular file refused without
 * blocking (FIFOs, devices, directories, sockets), and the errors' messages. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"
#include "base/readfile.h"

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
	CHECK(readfile(path, 10000, &buf, &len, &e) == 0);
	CHECK(len == 10000);
	CHECK(buf[0] == 'x' && buf[9999] == 'x' && buf[10000] == '\0');
	readfile_free(buf, len);
	buf = NULL;
	len = 7;
	/* one byte past the cap */
	CHECK(readfile(path, 9999, &buf, &len, &e) == ERR_TOO_LARGE);
	CHECK_CONTAINS(e.msg, path);
	CHECK_CONTAINS(e.msg, ": larger than 9999 bytes");
	CHECK(buf == NULL && len == 7);
	unlink(path);

	CHECK(fx_file(path, sizeof(path), 'x', 0) == 0);
	CHECK(readfile(path, 0, &buf, &len, &e) == 0);
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

	CHECK(readfile("/nonexistent/file", 100, &buf, &len, &e) == ERR_IO);
	CHECK_STR(e.msg, "/nonexistent/file: No such file or directory");
	CHECK(readfile("/tmp", 100, &buf, &len, &e) == ERR_IO);
	CHECK_STR(e.msg, "/tmp: is a directory, not a regular file");
	CHECK(readfile("/dev/null", 100, &buf, &len, &e) == ERR_IO);
	CHECK_STR(e.msg, "/dev/null: is a character device, not a regular file");
	CHECK(buf == NULL && len == 0);
	readfile_free(NULL, 0);
}

/* Anything but a regular file is refused at once: a FIFO with no writer
 * would block open() and read() forever, so the alarm fails the test
 * instead of hanging it. */
TEST(hostile_files_refused_without_blocking)
{
	struct errbuf e = { "" };
	struct sockaddr_un sa;
	struct stat st;
	char dir[64], fifo[96], link[96], reg[96], sock[96], *buf = NULL;
	size_t len = 0;
	int fd, s;

	snprintf(dir, sizeof(dir), "/tmp/readfile-test.XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(reg, sizeof(reg), "%s/reg", dir);
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	CHECK(mkfifo(fifo, 0600) == 0);
	CHECK(symlink(fifo, link) == 0);
	alarm(10);
	CHECK(readfile(fifo, 100, &buf, &len, &e) == ERR_IO);
	CHECK_STR(e.msg + strlen(dir), "/fifo: is a FIFO, not a regular file");
	CHECK(readfile(link, 100, &buf, &len, &e) == ERR_IO);
	CHECK_STR(e.msg + strlen(dir), "/link: is a FIFO, not a regular file");
	CHECK(readfile_open(fifo, &st, &e) == ERR_IO);
	CHECK_CONTAINS(e.msg, "is a FIFO");
	alarm(0);
	CHECK(buf == NULL && len == 0);

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	CHECK((s = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0);
	CHECK(bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(readfile(sock, 100, &buf, &len, &e) == ERR_IO);
	CHECK_CONTAINS(e.msg, "/sock: is a socket, not a regular file");
	close(s);

	/* a symbolic link to a regular file is that file */
	CHECK((fd = open(reg, O_WRONLY | O_CREAT | O_EXCL, 0600)) >= 0);
	CHECK(write(fd, "ok\n", 3) == 3);
	close(fd);
	CHECK(unlink(link) == 0 && symlink(reg, link) == 0);
	CHECK(readfile(link, 100, &buf, &len, &e) == 0);
	CHECK(len == 3);
	CHECK_STR(buf, "ok\n");
	readfile_free(buf, len);
	buf = NULL;
	/* the descriptor it hands out reads blocking, and says what it is */
	CHECK((fd = readfile_open(reg, &st, &e)) >= 0);
	CHECK(S_ISREG(st.st_mode) && st.st_size == 3);
	CHECK((fcntl(fd, F_GETFL) & O_NONBLOCK) == 0);
	CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
	close(fd);

	unlink(link);
	unlink(reg);
	unlink(fifo);
	unlink(sock);
	rmdir(dir);
}

TEST_MAIN()
