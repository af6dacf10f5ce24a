/* flags.h - command-line flags with pflag's syntax (the Kubernetes
 * components' parser); FLAG_DURATION takes Go durations (duration.h).
 *
 * Syntax: --name=value, --name value, -name=value for one-letter names
 * (-v=2, -v 2, -v2), -h for a flag called "help" (cobra's shorthand),
 * booleans as --name or
 * --name=false (a boolean never takes the next argument), "--" ends the
 * flags. Contract: never logs;
 * failures return ERR_INVALID with a message naming the flag; out of memory
 * is fatal. */
#ifndef BOOTCCM_FLAGS_H
#define BOOTCCM_FLAGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/clock.h" /* NS_PER_S, for the durations */
#include "base/duration.h" /* what a flag user parses durations with */
#include "base/err.h"

enum flag_type {
	FLAG_BOOL,      /* int * */
	FLAG_INT,       /* int * */
	FLAG_FLOAT,     /* double * */
	FLAG_STRING,    /* char ** (malloc'd; owned by the flag set) */
	FLAG_DURATION,  /* int64_t * in nanoseconds */
	FLAG_STRINGS,   /* char ** like FLAG_STRING: repeatable (pflag's
	                   stringSlice), the values joined with ',' in the
	                   order given; the first one on the command line
	                   replaces the default */
};

struct flag {
	const char *name;   /* without dashes: "kube-api-qps" */
	enum flag_type type;
	void *ptr;
	const char *def;    /* default as text; NULL for "" / false / 0 */
	const char *usage;
	int set;            /* given on the command line */
};

/* flags_defaults stores every flag's default. Returns 0 or ERR_*. */
int flags_defaults(struct flag *flags, size_t n, struct errbuf *e);

/* flags_parse parses argv[first..argc). Positional arguments are refused
 * unless ret_rest is non-NULL, which then receives the index of the first one
 * (or argc). */
int flags_parse(struct flag *flags, size_t n, int argc, char **argv,
    int first, int *ret_rest, struct errbuf *e);

/* flags_find returns the flag called name, or NULL. */
struct flag *flags_find(struct flag *flags, size_t n, const char *name);

/* flags_value_is tells whether text, parsed as f's type, is f's value now
 * (1 yes, 0 no or not parsable): "false" for a boolean that is 0, "0s" for
 * a zero duration. */
int flags_value_is(const struct flag *f, const char *text);

/* flags_usage writes one entry per flag with its type and default. */
void flags_usage(const struct flag *flags, size_t n, FILE *out);

/* flags_free frees the strings the flag set owns. */
void flags_free(struct flag *flags, size_t n);

/* flags_parse_bool parses like Go's strconv.ParseBool: 0 or 1, or ERR_INVALID. */
int flags_parse_bool(const char *s);

#endif
