/* hcbucket.h - the client side of the Hetzner Cloud API's rate limit: one
 * token bucket for the whole process, a model of the project's own (B4:
 * RateLimit-Limit requests, refilled over time, RateLimit-Remaining left,
 * full again at RateLimit-Reset), corrected by every answer's headers, so
 * that bootccm slows down BEFORE the project runs dry instead of after the
 * 429s (the official CCM has no limiter: hcloud-ccm #308, #661).
 *
 * Above a reserve (HCBUCKET_RESERVE_SHARE of the limit, at least one
 * request) requests go at once; below it they are paced at the refill rate,
 * one per refilled token, so bootccm alone never drains the project and
 * what is left stays for whatever else uses it (Terraform, the CSI driver);
 * with no token left at all a request waits for the next one. The caller
 * decides how long it is willing to wait (hcbucket_take tells how long it
 * would have to).
 *
 * Contract: pure arithmetic on a caller-owned struct, no clock of its own
 * (every call is given the time) and no lock (the owner serializes). Never
 * logs. */
#ifndef BOOTCCM_PROVIDER_HCLOUD_HCBUCKET_H
#define BOOTCCM_PROVIDER_HCLOUD_HCBUCKET_H

#include <stdint.h>

#include "base/tokenbucket.h"

#define HCBUCKET_DEFAULT_LIMIT 3600      /* requests per hour (B4) */
#define HCBUCKET_DEFAULT_RATE (1.0)      /* refill per second (B4) */
#define HCBUCKET_RESERVE_SHARE 0.05      /* of the limit, kept back */
#define HCBUCKET_LEARN_MIN_S 10          /* the rate is learned from resets this far off */

struct hcbucket {
	/* burst: RateLimit-Limit; rate: the refill, tokens per second;
	 * tokens: what is left now, by our model (as of tb.last_ns, the
	 * caller's clock) */
	struct tokenbucket tb;
	int64_t inflight;        /* requests sent, not answered yet */
	int64_t paced_ns;        /* below the reserve: the next request's time */
	int rate_learned;        /* rate came from the headers (else limit per hour) */
};

/* hcbucket_init sets a full bucket of limit requests refilled at rate per
 * second, as of now_ns. */
void hcbucket_init(struct hcbucket *b, double limit, double rate, int64_t now_ns);

/* hcbucket_reserve returns how many tokens the bucket keeps back. */
double hcbucket_reserve(const struct hcbucket *b);

/* hcbucket_take asks for one request at now_ns: 0 when it may go (a token
 * is taken and the request counted in flight), else the nanoseconds until
 * one may (nothing taken). */
int64_t hcbucket_take(struct hcbucket *b, int64_t now_ns);

/* hcbucket_answer accounts for an answer to a request hcbucket_take let
 * go, with its headers: limit, remaining (each < 0 when absent) and reset
 * (UNIX seconds, < 0 when absent), now_unix_s the wall clock at now_ns.
 * The server's count wins over the model (less the requests still in
 * flight, which it has not counted yet), and the refill rate is learned
 * from how long the project takes to fill up again (until then it is the
 * limit per hour). status 429 empties the
 * bucket whatever the headers say. */
void hcbucket_answer(struct hcbucket *b, int64_t now_ns, int64_t now_unix_s, long status,
    int64_t limit, int64_t remaining, int64_t reset_unix_s);

/* hcbucket_failed accounts for a request that got no answer (nothing
 * learned, no longer in flight). */
void hcbucket_failed(struct hcbucket *b);

#endif
