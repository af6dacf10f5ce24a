/* tokenbucket.h - the one token bucket (Go's rate.Limiter arithmetic): rate
 * tokens a second, at most burst stored, starting full.
 *
 * Contract: pure arithmetic on a caller-owned struct, no clock of its own
 * (every call is given the time, in nanoseconds of the caller's clock; a
 * clock that went backwards adds nothing) and no lock (the owner
 * serializes). What the tokens stand for, and any policy on top (per-key
 * buckets, pacing, server feedback), belongs to the owner, which may also
 * set the fields directly. Never logs. */
#ifndef BOOTCCM_TOKENBUCKET_H
#define BOOTCCM_TOKENBUCKET_H

#include <stdint.h>

#define TOKENBUCKET_NO_TIME INT64_MIN  /* tokenbucket_init: the first use sets the time */

struct tokenbucket {
	double rate;     /* tokens a second, > 0 */
	double burst;    /* the most stored */
	double tokens;   /* stored now (negative: reserved ahead) */
	int64_t last_ns; /* when tokens was true, or TOKENBUCKET_NO_TIME */
};

/* tokenbucket_init sets a full bucket as of now_ns (TOKENBUCKET_NO_TIME:
 * as of the first refill). */
void tokenbucket_init(struct tokenbucket *b, double rate, double burst, int64_t now_ns);

/* tokenbucket_refill brings tokens up to now_ns, capped at burst. */
void tokenbucket_refill(struct tokenbucket *b, int64_t now_ns);

/* tokenbucket_ns returns how long n tokens take to refill, in nanoseconds
 * rounded up (at least 1). */
int64_t tokenbucket_ns(const struct tokenbucket *b, double n);

/* tokenbucket_take takes n tokens at now_ns when there are that many and
 * returns 0; else it takes nothing and returns the nanoseconds until there
 * would be (tokenbucket_ns). */
int64_t tokenbucket_take(struct tokenbucket *b, double n, int64_t now_ns);

/* tokenbucket_reserve takes n tokens at now_ns even when they are not there
 * yet (the bucket goes into debt, so later callers queue behind) and returns
 * the seconds until they are due, 0 when they were there. */
double tokenbucket_reserve(struct tokenbucket *b, double n, int64_t now_ns);

#endif
