/* duration.h - Go durations as text ("15s", "1h30m", "300ms"), the syntax of
 * the Kubernetes components' duration flags and of cloud-config settings.
 *
 * Contract: pure functions; never log, never allocate. */
#ifndef BOOTCCM_DURATION_H
#define BOOTCCM_DURATION_H

#include <stddef.h>
#include <stdint.h>

struct errbuf;

/* duration_parse parses a Go duration ("15s", "1h30m", "1.5h", "300ms", "0")
 * into nanoseconds. Returns 0 or ERR_INVALID (syntax, unit, overflow);
 * *ret_ns is untouched on failure. */
int duration_parse(const char *s, int64_t *ret_ns);

/* duration_format writes ns the way Go prints a time.Duration ("5m0s"). */
void duration_format(int64_t ns, char *buf, size_t len);

/* duration_check checks a duration flag's value against its inclusive
 * bounds: 0, or ERR_INVALID with "--FLAG VALUE: must be greater than zero
 * and at most MAX" (or "zero or more", "at least MIN") in e. */
int duration_check(const char *flag, int64_t ns, int64_t min_ns, int64_t max_ns,
    struct errbuf *e);

#endif
