/* log.c - klog text format and JSON lines, secret redaction, escaping for a
 * terminal. */
#include "base/log.h"

#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/dynbuf.h"
#include "base/xalloc.h"

static int log_verbosity;
static enum log_format log_fmt = LOG_TEXT;
static int log_fd = 2;

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

/* --- secrets ---------------------------------------------------------------------
 * A registered secret is redacted wherever any LOG_SECRET_GRAM-byte piece
 * of it appears (a server may echo a token cut short or split), and a secret
 * shorter than that wherever it appears whole. Every such match of a text
 * contains a window of LOG_SECRET_GRAM bytes (or the short secret's length)
 * equal to one taken from a secret, and every such window is itself a
 * match: so the index holds each secret's windows (at most 8 bytes, packed
 * into a uint64_t: exact, no second comparison), and redaction looks up the
 * window starting at each byte of the text, once per window length in use
 * (at most LOG_SECRET_GRAM - LOG_SECRET_MIN + 1 of them). The union of the
 * matched windows is what gets replaced, one mark per run. Cost: O(n) for a
 * text of n bytes (a bounded number of hash lookups a byte), O(m) time and
 * memory to index secrets of m bytes in all. */

_Static_assert(LOG_SECRET_GRAM <= 8 && LOG_SECRET_MIN <= LOG_SECRET_GRAM,
    "a window must fit a uint64_t");

struct log_gram {
	uint64_t v;                /* the window's bytes, the first in the low byte */
	unsigned char len;         /* 0: a free slot */
};

struct log_index {
	struct log_gram *slots;    /* open addressing, linear probing */
	size_t mask;               /* slots - 1 (a power of two) */
	unsigned lens;             /* bit k: windows of k bytes are indexed */
};

struct log_secret {
	char *value;
	size_t len;
};

/* Writers (add, clear) are serialized by log_secret_lock and own the list;
 * readers use only the index, swapped in under log_index_lock. */
static pthread_mutex_t log_secret_lock = PTHREAD_MUTEX_INITIALIZER;
static struct log_secret log_secrets[LOG_SECRETS_MAX];
static int log_nsecrets;
static pthread_rwlock_t log_index_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct log_index *log_idx;

static uint64_t
log_gram_pack(const char *p, size_t len)
{
	uint64_t v = 0;

	for (size_t i = 0; i < len; i++)
		v |= (uint64_t)(unsigned char)p[i] << (8 * i);
	return v;
}

static size_t
log_gram_hash(uint64_t v, unsigned len)
{
	/* splitmix64's finalizer */
	v ^= (uint64_t)len << 59;
	v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ULL;
	v = (v ^ (v >> 27)) * 0x94d049bb133111ebULL;
	return (size_t)(v ^ (v >> 31));
}

static int
log_index_has(const struct log_index *x, uint64_t v, unsigned len)
{
	for (size_t i = log_gram_hash(v, len) & x->mask;; i = (i + 1) & x->mask) {
		if (x->slots[i].len == 0)
			return 0;
		if (x->slots[i].len == len && x->slots[i].v == v)
			return 1;
	}
}

static void
log_index_put(struct log_index *x, const char *p, size_t len)
{
	uint64_t v = log_gram_pack(p, len);
	size_t i;

	for (i = log_gram_hash(v, (unsigned)len) & x->mask; x->slots[i].len != 0;
	    i = (i + 1) & x->mask)
		if (x->slots[i].len == len && x->slots[i].v == v)
			return;
	x->slots[i].v = v;
	x->slots[i].len = (unsigned char)len;
	x->lens |= 1u << len;
}

/* log_pieces calls fn for each piece of secret s to index: the whole value,
 * or for a PEM block (a private key) each line of its base64 body, so the
 * armor ("-----BEGIN PRIVATE KEY-----"), which every PEM file shares, and
 * the line breaks, which a server may re-encode, are not part of it. */
static void
log_pieces(const struct log_secret *s, void (*fn)(void *, const char *, size_t), void *arg)
{
	const char *p = s->value, *end = s->value + s->len;

	if (strncmp(p, "-----BEGIN ", 11) != 0) {
		fn(arg, p, s->len);
		return;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		/* armor lines and headers ("Proc-Type: 4,ENCRYPTED") are public */
		if (n >= LOG_SECRET_GRAM && strncmp(p, "-----", 5) != 0 &&
		    memchr(p, ':', n) == NULL)
			fn(arg, p, n);
		p = nl ? nl + 1 : end;
	}
}

static void
log_piece_count(void *arg, const char *p, size_t len)
{
	(void)p;
	*(size_t *)arg += len >= LOG_SECRET_GRAM ? len - LOG_SECRET_GRAM + 1 : 1;
}

static void
log_piece_index(void *arg, const char *p, size_t len)
{
	struct log_index *x = arg;

	if (len < LOG_SECRET_GRAM) {
		log_index_put(x, p, len);
		return;
	}
	for (size_t i = 0; i + LOG_SECRET_GRAM <= len; i++)
		log_index_put(x, p + i, LOG_SECRET_GRAM);
}

static void
log_index_free(struct log_index *x)
{
	if (x == NULL)
		return;
	explicit_bzero(x->slots, (x->mask + 1) * sizeof(x->slots[0]));
	free(x->slots);
	free(x);
}

/* log_reindex builds the index of the registered secrets and swaps it in.
 * Called with log_secret_lock held, never log_index_lock: out of memory
 * logs, and logging reads the index. */
static void
log_reindex(void)
{
	struct log_index *x = NULL, *old;
	size_t n = 0, cap = 16;

	for (int i = 0; i < log_nsecrets; i++)
		log_pieces(&log_secrets[i], log_piece_count, &n);
	if (n > 0) {
		while (cap < 2 * n)
			cap *= 2;
		x = xcalloc(1, sizeof(*x));
		x->slots = xcalloc(cap, sizeof(x->slots[0]));
		x->mask = cap - 1;
		for (int i = 0; i < log_nsecrets; i++)
			log_pieces(&log_secrets[i], log_piece_index, x);
	}
	pthread_rwlock_wrlock(&log_index_lock);
	old = log_idx;
	log_idx = x;
	pthread_rwlock_unlock(&log_index_lock);
	log_index_free(old);
}

static void
log_secret_wipe(struct log_secret *s)
{
	explicit_bzero(s->value, s->len);
	free(s->value);
	s->value = NULL;
	s->len = 0;
}

void
log_add_secret_len(const char *value, size_t len)
{
	int i;

	if (value == NULL || len < LOG_SECRET_MIN)
		return;
	if (len > LOG_SECRET_MAX)
		len = LOG_SECRET_MAX;
	pthread_mutex_lock(&log_secret_lock);
	for (i = 0; i < log_nsecrets; i++)
		if (log_secrets[i].len == len && memcmp(log_secrets[i].value, value, len) == 0)
			goto out;
	if (log_nsecrets == LOG_SECRETS_MAX) {
		/* forget the oldest: rotated tokens make old ones harmless */
		log_secret_wipe(&log_secrets[0]);
		memmove(log_secrets, log_secrets + 1,
		    sizeof(log_secrets[0]) * (LOG_SECRETS_MAX - 1));
		log_nsecrets--;
	}
	log_secrets[log_nsecrets].value = xmemdup(value, len);
	log_secrets[log_nsecrets].len = len;
	log_nsecrets++;
	log_reindex();
out:
	pthread_mutex_unlock(&log_secret_lock);
}

void
log_add_secret(const char *value)
{
	if (value != NULL)
		log_add_secret_len(value, strlen(value));
}

void
log_clear_secrets(void)
{
	pthread_mutex_lock(&log_secret_lock);
	for (int i = 0; i < log_nsecrets; i++)
		log_secret_wipe(&log_secrets[i]);
	log_nsecrets = 0;
	log_reindex();
	pthread_mutex_unlock(&log_secret_lock);
}

/* log_match_end returns where the longest indexed window starting at in + i
 * ends (in + n is the text's end), or 0 when none starts there. */
static size_t
log_match_end(const struct log_index *x, const char *in, size_t n, size_t i)
{
	size_t left = n - i, k = left < LOG_SECRET_GRAM ? left : LOG_SECRET_GRAM;
	uint64_t w = log_gram_pack(in + i, k);

	for (; k >= LOG_SECRET_MIN; k--) {
		uint64_t v = k == 8 ? w : w & ((1ULL << (8 * k)) - 1);  /* the first k bytes */
		if ((x->lens & (1u << k)) && log_index_has(x, v, (unsigned)k))
			return i + k;
	}
	return 0;
}

static int
log_utf8_cont(char c)
{
	return ((unsigned char)c & 0xc0) == 0x80;
}

/* log_redact_scan walks the n bytes of in and calls out(arg, p, len, mark)
 * for each run: copied text, or (mark 1) a run to replace; out returns
 * nonzero to end the walk. A run never
 * splits a UTF-8 sequence: one touching part of a character takes it whole.
 * Called with log_index_lock held for reading. */
static void
log_redact_scan(const struct log_index *x, const char *in, size_t n,
    int (*out)(void *, const char *, size_t, int), void *arg)
{
	size_t i, start = 0, cover = 0;
	int in_mark = 0;

	if (x == NULL) {
		if (n)
			out(arg, in, n, 0);
		return;
	}
	for (i = 0; i < n; i++) {
		size_t end = log_match_end(x, in, n, i);
		/* a window starting inside this character covers it from here */
		if (end <= i && i >= cover && ((unsigned char)in[i] & 0xc0) == 0xc0)
			for (size_t j = i + 1; j < n && j < i + 4 && log_utf8_cont(in[j]); j++)
				if ((end = log_match_end(x, in, n, j)) > 0)
					break;
		if (end > cover) {
			cover = end;
			while (cover < n && log_utf8_cont(in[cover]))
				cover++;
		}
		if ((i < cover) != in_mark) {
			if (i > start && out(arg, in + start, i - start, in_mark))
				return;
			start = i;
			in_mark = !in_mark;
		}
	}
	if (n > start)
		out(arg, in + start, n - start, in_mark);
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

/* The sink of log_redact: a buffer of cap bytes (the NUL included), and
 * where in the text the copy stopped. */
struct log_fixed {
	char *out;
	size_t o, cap;
	const char *rest;
};

static int
log_fixed_put(void *arg, const char *p, size_t len, int mark)
{
	struct log_fixed *f = arg;
	size_t room = f->cap - 1 - f->o;
	const char *src = mark ? LOG_REDACTED : p;
	size_t want = mark ? sizeof(LOG_REDACTED) - 1 : len;
	size_t n = want < room ? want : room;

	memcpy(f->out + f->o, src, n);
	f->o += n;
	if (n == want)
		return 0;
	f->rest = mark ? p : p + n;
	return 1;
}

/* log_redact copies in to out (cap bytes, the NUL included) with every
 * registered secret replaced by LOG_REDACTED, until out is full. Returns the
 * length written and, in *ret_rest, where in stopped ("" when all of it was
 * copied). Secrets are matched on in as given, so a copy cut short holds no
 * part of one. */
static size_t
log_redact(const char *in, char *out, size_t cap, const char **ret_rest)
{
	const char *p = in ? in : "";
	struct log_fixed f = { out, 0, cap, NULL };
	size_t n = strlen(p);

	pthread_rwlock_rdlock(&log_index_lock);
	log_redact_scan(log_idx, p, n, log_fixed_put, &f);
	pthread_rwlock_unlock(&log_index_lock);
	out[f.o] = '\0';
	*ret_rest = f.rest ? f.rest : p + n;
	return f.o;
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

/* The sink of log_redact_buf: a growing buffer, and whether a mark went in. */
struct log_grow {
	struct dynbuf *b;
	int marked;
};

static int
log_grow_put(void *arg, const char *p, size_t len, int mark)
{
	struct log_grow *g = arg;

	if (mark) {
		g->marked = 1;
		p = LOG_REDACTED;
		len = sizeof(LOG_REDACTED) - 1;
	}
	/* the buffer's cap is set for the worst case: cannot fail */
	return dynbuf_add(g->b, p, len) < 0;
}

/* log_redact_buf appends the n bytes of in, redacted, to b (whose cap must
 * allow LOG_REDACT_GROWTH(n) more bytes). Returns whether a secret was
 * found. */
static int
log_redact_buf(const char *in, size_t n, struct dynbuf *b)
{
	struct log_grow g = { b, 0 };

	pthread_rwlock_rdlock(&log_index_lock);
	log_redact_scan(log_idx, in, n, log_grow_put, &g);
	pthread_rwlock_unlock(&log_index_lock);
	return g.marked;
}

/* a run replaced is at least LOG_SECRET_MIN bytes; its mark is longer */
#define LOG_REDACT_GROWTH(n) \
	((n) + ((n) / LOG_SECRET_MIN + 1) * (sizeof(LOG_REDACTED) - 1))

char *
log_redact_str(const char *s)
{
	struct dynbuf b;
	size_t n = s ? strlen(s) : 0;

	if (n < LOG_SECRET_MIN)
		return NULL;
	dynbuf_init(&b, LOG_REDACT_GROWTH(n));
	if (!log_redact_buf(s, n, &b)) {
		dynbuf_free(&b);
		return NULL;
	}
	return dynbuf_take(&b, NULL);
}

int
log_print(int fd, const char *fmt, ...)
{
	struct dynbuf in, out;
	size_t n, off = 0;
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
	dynbuf_init(&out, LOG_REDACT_GROWTH(dynbuf_len(&in)));
	log_redact_buf(dynbuf_ptr(&in), dynbuf_len(&in), &out);
	dynbuf_free(&in);
	n = dynbuf_len(&out);
	while (off < n) {
		ssize_t w = write(fd, dynbuf_ptr(&out) + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	dynbuf_free(&out);
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

size_t
log_utf8_len(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned long cp;
	size_t n;

	if (len == 0 || u[0] < 0xc2 || u[0] > 0xf4)
		return 0;
	n = u[0] >= 0xf0 ? 4 : u[0] >= 0xe0 ? 3 : 2;
	cp = u[0] & (0x7f >> n);
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((u[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (u[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* log_escape_char escapes the character at in + i (n bytes in all) into
 * tmp; returns its length there, and in *ret_step the bytes it took. */
static size_t
log_escape_char(const char *in, size_t n, size_t i, char tmp[16], size_t *ret_step)
{
	unsigned char c = (unsigned char)in[i];
	size_t u = c >= 0x80 ? log_utf8_len(in + i, n - i) : 0;

	*ret_step = 1;
	if (c == '\n' || c == '\r' || c == '\t')
		return (size_t)snprintf(tmp, 16, "\\%c", c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
	if (c < 0x20 || c == 0x7f || (c >= 0x80 && u == 0))
		return (size_t)snprintf(tmp, 16, "\\x%02x", c);
	if (u == 2 && c == 0xc2 && (unsigned char)in[i + 1] < 0xa0) {
		/* U+0080-U+009F: C1 controls, CSI among them */
		*ret_step = 2;
		return (size_t)snprintf(tmp, 16, "\\xc2\\x%02x", (unsigned char)in[i + 1]);
	}
	*ret_step = u ? u : 1;
	memcpy(tmp, in + i, *ret_step);
	return *ret_step;
}

const char *
log_escape(const char *in, char *out, size_t cap)
{
	size_t o = 0, i, step, tl, total = 0, n = in ? strlen(in) : 0;
	char tmp[16];
	int fits;

	if (cap == 0)
		return out;
	for (i = 0; i < n; i += step)
		total += log_escape_char(in, n, i, tmp, &step);
	fits = total + 1 <= cap;
	for (i = 0; i < n; i += step) {
		tl = log_escape_char(in, n, i, tmp, &step);
		/* unless it all fits, room for "..." stays */
		if (o + tl + (fits ? 0 : 3) + 1 > cap) {
			if (o + 3 + 1 <= cap) {
				memcpy(out + o, "...", 3);
				o += 3;
			}
			break;
		}
		memcpy(out + o, tmp, tl);
		o += tl;
	}
	out[o] = '\0';
	return out;
}
