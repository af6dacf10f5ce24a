/* log.c - klog text format and JSON lines, with secret redaction. */
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dynbuf.h"
#include "xalloc.h"

static int log_verbosity;
static enum log_format log_fmt = LOG_TEXT;
static int log_fd = 2;

static pthread_mutex_t log_secret_lock = PTHREAD_MUTEX_INITIALIZER;
static char *log_secrets[LOG_SECRETS_MAX];
static int log_nsecrets;

void
log_init(int verbosity, enum log_format format, int fd)
{
	log_verbosity = verbosity;
	log_fmt = format;
	log_fd = fd;
}

int
log_enabled(int v)
{
	return v <= log_verbosity;
}

void
log_add_secret(const char *value)
{
	char *copy;
	int i;

	if (value == NULL || strlen(value) < LOG_SECRET_MIN)
		return;
	/* copied before the lock: out of memory logs, and logging takes it */
	copy = xstrdup(value);
	pthread_mutex_lock(&log_secret_lock);
	for (i = 0; i < log_nsecrets; i++)
		if (strcmp(log_secrets[i], value) == 0)
			break;
	if (i < log_nsecrets) {
		explicit_bzero(copy, strlen(copy));
		free(copy);
		goto out;
	}
	if (log_nsecrets == LOG_SECRETS_MAX) {
		/* forget the oldest: rotated tokens make old ones harmless */
		explicit_bzero(log_secrets[0], strlen(log_secrets[0]));
		free(log_secrets[0]);
		memmove(log_secrets, log_secrets + 1,
		    sizeof(log_secrets[0]) * (LOG_SECRETS_MAX - 1));
		log_nsecrets--;
	}
	log_secrets[log_nsecrets++] = copy;
out:
	pthread_mutex_unlock(&log_secret_lock);
}

void
log_clear_secrets(void)
{
	pthread_mutex_lock(&log_secret_lock);
	for (int i = 0; i < log_nsecrets; i++) {
		explicit_bzero(log_secrets[i], strlen(log_secrets[i]));
		free(log_secrets[i]);
	}
	log_nsecrets = 0;
	pthread_mutex_unlock(&log_secret_lock);
}

/* A bounded append buffer: never overflows, remembers truncation. */
struct lbuf {
	char *p;
	int len, cap;
};

static void
lb_putc(struct lbuf *b, char c)
{
	if (b->len < b->cap - 1)
		b->p[b->len++] = c;
}

static void
lb_puts(struct lbuf *b, const char *s)
{
	while (*s)
		lb_putc(b, *s++);
}

static void
lb_printf(struct lbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
lb_printf(struct lbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n, room = b->cap - 1 - b->len;

	if (room <= 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, (size_t)room + 1, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len += n < room ? n : room;
}

/* lb_quoted writes s as a quoted string; JSON and Go's %q agree on the
 * escapes used here (\" \\ \n \t \r, \u00XX for other control bytes). */
static void
lb_quoted(struct lbuf *b, const char *s)
{
	lb_putc(b, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		switch (c) {
		case '"': lb_puts(b, "\\\""); break;
		case '\\': lb_puts(b, "\\\\"); break;
		case '\n': lb_puts(b, "\\n"); break;
		case '\t': lb_puts(b, "\\t"); break;
		case '\r': lb_puts(b, "\\r"); break;
		default:
			if (c < 0x20 || c == 0x7f)
				lb_printf(b, "\\u%04x", c);
			else
				lb_putc(b, (char)c);
		}
	}
	lb_putc(b, '"');
}

static const char *
log_basename(const char *file)
{
	const char *s = strrchr(file, '/');
	return s ? s + 1 : file;
}

/* log_redact copies in to out (cap bytes, the NUL included) with every
 * registered secret replaced by "[redacted]", until out is full. Returns the
 * length written and, in *ret_rest, where in stopped ("" when all of it was
 * copied). Secrets are matched on in as given, so a copy cut short holds no
 * part of one. The one redaction of every output path. */
static size_t
log_redact(const char *in, char *out, size_t cap, const char **ret_rest)
{
	static const char mark[] = "[redacted]";
	size_t o = 0;
	const char *p = in ? in : "";

	pthread_mutex_lock(&log_secret_lock);
	while (*p && o < cap - 1) {
		int matched = 0;
		for (int i = 0; i < log_nsecrets; i++) {
			const char *sec = log_secrets[i];
			size_t slen = strlen(sec);
			if (*p == sec[0] && strncmp(p, sec, slen) == 0) {
				for (size_t j = 0; j < sizeof(mark) - 1 && o < cap - 1; j++)
					out[o++] = mark[j];
				p += slen;
				matched = 1;
				break;
			}
		}
		if (!matched)
			out[o++] = *p++;
	}
	pthread_mutex_unlock(&log_secret_lock);
	out[o] = '\0';
	*ret_rest = p;
	return o;
}

/* log_clean is log_redact for a log value: cut at cap bytes with "...". */
static const char *
log_clean(const char *in, char *out, size_t cap)
{
	const char *rest;
	size_t o = log_redact(in, out, cap, &rest);

	if (*rest && cap > 4) {
		/* cut: say so */
		o = o > cap - 4 ? cap - 4 : o;
		memcpy(out + o, "...", 4);
	}
	return out;
}

int
log_print(int fd, const char *fmt, ...)
{
	struct dynbuf in;
	const char *rest;
	char *out;
	size_t cap, n, off = 0;
	va_list ap;
	int r;

	dynbuf_init(&in, LOG_PRINT_MAX);
	va_start(ap, fmt);
	r = dynbuf_vaddf(&in, fmt, ap);
	va_end(ap);
	if (r < 0) {
		dynbuf_free(&in);
		return -1;
	}
	/* a secret is at least LOG_SECRET_MIN bytes and its mark 10: the text
	 * grows by less than 10 / LOG_SECRET_MIN */
	cap = dynbuf_len(&in) * 3 + 1;
	out = xmalloc(cap);
	n = log_redact(dynbuf_ptr(&in), out, cap, &rest);
	dynbuf_free(&in);
	while (off < n) {
		ssize_t w = write(fd, out + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	free(out);
	return off == n ? 0 : -1;
}

int
log_format_line(char *buf, int len, char sev, int v, const char *file, int line,
    const char *msg, va_list kv)
{
	struct lbuf b = { buf, 0, len };
	struct timespec ts;
	struct tm tm;
	const char *k, *val;
	char clean[LOG_VALUE_MAX], ckey[128];
	int json = log_fmt == LOG_JSON;

	if (len <= 64)
		return 0;
	b.cap = len - 8; /* room for the line's end */
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	if (json) {
		char caller[256];
		snprintf(caller, sizeof(caller), "%s:%d", log_basename(file), line);
		lb_printf(&b, "{\"ts\":%lld.%06ld,\"caller\":", (long long)ts.tv_sec,
		    ts.tv_nsec / 1000);
		lb_quoted(&b, caller);
		lb_puts(&b, ",\"msg\":");
		lb_quoted(&b, log_clean(msg, clean, sizeof(clean)));
		if (sev == 'I')
			lb_printf(&b, ",\"v\":%d", v);
	} else {
		lb_printf(&b, "%c%02d%02d %02d:%02d:%02d.%06ld %7ld %s:%d] ", sev,
		    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		    ts.tv_nsec / 1000, (long)syscall(SYS_gettid), log_basename(file),
		    line);
		lb_quoted(&b, log_clean(msg, clean, sizeof(clean)));
	}
	while ((k = va_arg(kv, const char *)) != NULL) {
		val = va_arg(kv, const char *);
		log_clean(k, ckey, sizeof(ckey));
		log_clean(val, clean, sizeof(clean));
		/* worst case of quoting is 6 bytes a byte: add the pair only whole */
		if (b.len + 6 * (strlen(ckey) + strlen(clean)) + 8 > (size_t)b.cap)
			break;
		if (json) {
			lb_putc(&b, ',');
			lb_quoted(&b, ckey);
			lb_putc(&b, ':');
		} else {
			lb_putc(&b, ' ');
			lb_puts(&b, ckey);
			lb_putc(&b, '=');
		}
		lb_quoted(&b, clean);
	}
	b.cap = len;
	if (json)
		lb_putc(&b, '}');
	lb_putc(&b, '\n');
	b.p[b.len] = '\0';
	return b.len;
}

void
log_vemit(char sev, int v, const char *file, int line, const char *msg, va_list kv)
{
	char buf[LOG_LINE_MAX];
	int n, off = 0;

	n = log_format_line(buf, (int)sizeof(buf), sev, v, file, line, msg, kv);
	while (off < n) {
		ssize_t w = write(log_fd, buf + off, (size_t)(n - off));
		if (w <= 0)
			break;
		off += (int)w;
	}
}

void
log_emit(char sev, int v, const char *file, int line, const char *msg, ...)
{
	va_list ap;

	va_start(ap, msg);
	log_vemit(sev, v, file, line, msg, ap);
	va_end(ap);
}

void
log_fatal_at(const char *file, int line, const char *msg, ...)
{
	va_list ap;

	va_start(ap, msg);
	log_vemit('F', 0, file, line, msg, ap);
	va_end(ap);
	exit(255);
}
