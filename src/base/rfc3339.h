/* rfc3339.h - the one parser and the formatters of the API server's times:
 * metav1.Time ("2026-11-21T08:00:00Z", seconds) and metav1.MicroTime
 * ("2026-11-21T08:00:00.000000Z", exactly six digits).
 *
 * Parsing accepts exactly what Go's time.Parse(time.RFC3339, s) accepts (the
 * API server decodes both kinds with it, or with a fixed six-digit layout
 * that is a subset of it): "YYYY-MM-DDTHH:MM:SS", an optional fraction of
 * any length after '.' or ',' (digits past the ninth are ignored), then 'Z'
 * or "+hh:mm"/"-hh:mm". Case matters ('t' and 'z' are refused); the hour may
 * have one digit; ranges are checked (month, the day in its month and leap
 * years, hour < 24, minute and second < 60, offset hour <= 24 and minute
 * <= 60, as Go allows); nothing may follow. Formatting writes UTC.
 *
 * Contract: pure functions; ERR_INVALID on bad input or a year outside
 * 0..9999; outputs untouched on failure. Never logs. */
#ifndef BOOTCCM_RFC3339_H
#define BOOTCCM_RFC3339_H

#include <stddef.h>
#include <stdint.h>

#define RFC3339_MAX 32  /* bytes: a formatted time, NUL included */

/* rfc3339_parse parses s into seconds since the Unix epoch and the
 * nanoseconds within that second. */
int rfc3339_parse(const char *s, int64_t *ret_sec, int32_t *ret_nsec);

/* rfc3339_parse_ns is rfc3339_parse into nanoseconds since the epoch;
 * ERR_INVALID also for a time int64 nanoseconds cannot hold (before 1678 or
 * after 2262). */
int rfc3339_parse_ns(const char *s, int64_t *ret_unix_ns);

/* rfc3339_format writes sec as a metav1.Time ("...:SSZ") into buf. */
int rfc3339_format(int64_t sec, char *buf, size_t len);

/* rfc3339_format_micro writes unix_ns as a MicroTime: six fraction digits,
 * truncated, the only form the API server accepts for one. */
int rfc3339_format_micro(int64_t unix_ns, char *buf, size_t len);

#endif
