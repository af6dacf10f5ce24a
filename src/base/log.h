/* log.h - leveled logging in klog's text format or as JSON lines.
 *
 * Contract: log_init once at start; after that any thread may log. A line is
 * written with one write(2), so lines from threads never interleave. Values
 * registered with log_add_secret (tokens, keys) are replaced by "[redacted]"
 * in every line, whatever the verbosity, in everything a command prints
 * with log_print, and in what log_redact_str returns (the Events recorder
 * and the API client's writes use it): one redaction for every text that
 * leaves the process, as a last line of defence (code must not pass secrets
 * on in the first place, but an answer may echo one). Not only a secret
 * whole is redacted: any LOG_SECRET_GRAM bytes of it in a row are (a server
 * may echo a token cut short or split), and a secret shorter than that
 * wherever it appears whole; overlapping and adjacent matches become one
 * mark. The cost is linear in the text's length (see log.c).
 *
 * Messages take key/value pairs after the format arguments' end marker:
 *   log_info(0, "Initialized node", "node", name, "source", "metadata", NULL);
 * The message is a plain string; keys and values are strings. */
#ifndef BOOTCCM_LOG_H
#define BOOTCCM_LOG_H

#include <stdarg.h>
#include <stddef.h>

enum log_format { LOG_TEXT, LOG_JSON };

#define LOG_LINE_MAX 16384   /* bytes per line; key/value pairs that do not fit are dropped */
#define LOG_VALUE_MAX 2048   /* bytes per message or value; longer ones are cut with "..." */
#define LOG_SECRET_MIN 4     /* bytes: shorter values are not registered */
#define LOG_SECRET_GRAM 8    /* bytes: any piece this long of a secret is redacted */
#define LOG_SECRET_MAX (64 * 1024) /* bytes of one secret; the rest is not indexed */
#define LOG_SECRETS_MAX 64   /* registered secrets; the oldest goes first */
#define LOG_REDACTED "[redacted]"
#define LOG_PRINT_MAX (4 * 1024 * 1024) /* bytes: one log_print text */

/* log_init sets verbosity, format and the output file descriptor (2). */
void log_init(int verbosity, enum log_format format, int fd);

/* log_enabled tells whether level v would be written. */
int log_enabled(int v);

/* log_add_secret registers a value to redact (copied; NULL and values
 * shorter than LOG_SECRET_MIN are ignored). A PEM block (a private key) is
 * indexed by the lines of its base64 body: its armor and headers are the
 * same in every PEM file and stay readable. log_add_secret_len takes a value
 * that is not NUL-terminated. Thread-safe; costs O(total secret bytes). */
void log_add_secret(const char *value);
void log_add_secret_len(const char *value, size_t len);

/* log_clear_secrets forgets every registered secret (wiping the copies). */
void log_clear_secrets(void);

/* log_redact_str returns a malloc'd copy of s with every registered secret
 * replaced by LOG_REDACTED, or NULL when s holds none (nothing to copy).
 * A mark never splits a UTF-8 sequence. For texts that leave the process
 * other than through log lines and log_print. */
char *log_redact_str(const char *s);

/* log_escape copies the text of a server, a file or a device (an error
 * message quoting an answer, DMI data) into out (cap bytes, the NUL
 * included) fit for a terminal: CR, LF and tab become \r, \n and \t,
 * other control bytes (C0, DEL, and C1 as UTF-8) and bytes that are not
 * valid UTF-8 \xNN; valid UTF-8 stays as it is. Backslashes are kept, so
 * escaping twice changes nothing. A text that does not fit is cut at a
 * character with "...". Returns out. */
const char *log_escape(const char *in, char *out, size_t cap);
#define LOG_ESCAPED_MAX 4096 /* bytes: a log_escape buffer for one message */

/* log_utf8_len returns the length of the valid UTF-8 sequence of two to
 * four bytes at s (len bytes available; no overlongs, surrogates or values
 * past U+10FFFF), or 0. */
size_t log_utf8_len(const char *s, size_t len);

/* log_print writes text formatted from fmt to fd as it is, not as a log
 * line: a command's own output (check-kubeconfig's answers, the facts of
 * `bootccm metadata`, their error messages). Every registered secret is
 * replaced by "[redacted]" exactly as in log lines, nothing is cut, and the
 * text goes out in one write(2) unless the descriptor takes less. Returns 0,
 * or -1 when the text is longer than LOG_PRINT_MAX or fd could not be
 * written. */
int log_print(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* log_emit writes one line; sev is 'I', 'W', 'E' or 'F'. The variadic part is
 * key, value pairs (const char *) ending with NULL. Use the macros below. */
void log_emit(char sev, int v, const char *file, int line, const char *msg, ...);
void log_vemit(char sev, int v, const char *file, int line, const char *msg,
    va_list kv);

/* log_format_line renders one line into buf (for tests); returns its length. */
int log_format_line(char *buf, int len, char sev, int v, const char *file,
    int line, const char *msg, va_list kv);

#define log_info(v, ...) do { if (log_enabled(v)) \
	log_emit('I', (v), __FILE__, __LINE__, __VA_ARGS__); } while (0)
#define log_warn(...) log_emit('W', 0, __FILE__, __LINE__, __VA_ARGS__)
#define log_error(...) log_emit('E', 0, __FILE__, __LINE__, __VA_ARGS__)
/* log_fatal logs and exits 255, like klog.Fatal. */
#define log_fatal(...) log_fatal_at(__FILE__, __LINE__, __VA_ARGS__)
void log_fatal_at(const char *file, int line, const char *msg, ...)
	__attribute__((noreturn));

#endif
