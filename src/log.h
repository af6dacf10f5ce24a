/* log.h - leveled logging in klog's text format or as JSON lines.
 *
 * Contract: log_init once at start; after that any thread may log. A line is
 * written with one write(2), so lines from threads never interleave. Values
 * registered with log_add_secret (tokens, keys) are replaced by "[redacted]"
 * in every line, whatever the verbosity, and in everything a command prints
 * with log_print: one redaction for every output path, as a last line of
 * defence (code must not pass secrets to the logger in the first place, but
 * an answer may echo one).
 *
 * Messages take key/value pairs after the format arguments' end marker:
 *   log_info(0, "Initialized node", "node", name, "source", "metadata", NULL);
 * The message is a plain string; keys and values are strings. */
#ifndef BOOTCCM_LOG_H
#define BOOTCCM_LOG_H

#include <stdarg.h>

enum log_format { LOG_TEXT, LOG_JSON };

#define LOG_LINE_MAX 16384   /* bytes per line; key/value pairs that do not fit are dropped */
#define LOG_VALUE_MAX 2048   /* bytes per message or value; longer ones are cut with "..." */
#define LOG_SECRET_MIN 4     /* bytes: shorter values are not registered */
#define LOG_SECRETS_MAX 64   /* registered secrets */
#define LOG_PRINT_MAX (4 * 1024 * 1024) /* bytes: one log_print text */

/* log_init sets verbosity, format and the output file descriptor (2). */
void log_init(int verbosity, enum log_format format, int fd);

/* log_enabled tells whether level v would be written. */
int log_enabled(int v);

/* log_add_secret registers a value to redact (copied; NULL and values
 * shorter than LOG_SECRET_MIN are ignored). */
void log_add_secret(const char *value);

/* log_clear_secrets forgets every registered secret (wiping the copies). */
void log_clear_secrets(void);

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
