/* clock.h - the clocks and the time units every timeout, backoff and deadline
 * uses: monotonic for intervals, boot time where suspended time must count
 * (leader election), real time for timestamps written to the API server.
 *
 * Contract: pure reads of the system clocks; never fail, never log. */
#ifndef BOOTCCM_CLOCK_H
#define BOOTCCM_CLOCK_H

#include <stdint.h>

#define NS_PER_US 1000LL
#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL

/* clock_mono_ns returns CLOCK_MONOTONIC in nanoseconds. */
int64_t clock_mono_ns(void);

/* clock_boot_ns returns CLOCK_BOOTTIME in nanoseconds: like the monotonic
 * clock, but it keeps counting while the machine is suspended. */
int64_t clock_boot_ns(void);

/* clock_real_ns returns CLOCK_REALTIME (nanoseconds since the Unix epoch). */
int64_t clock_real_ns(void);

/* clock_add_ns returns t + d saturated to [INT64_MIN, INT64_MAX]: every
 * deadline made of a clock reading and a duration goes through it, so a
 * duration near the 64-bit maximum is a deadline that never comes, not one
 * in the past (which made loops spin). Pure. */
int64_t clock_add_ns(int64_t t, int64_t d);

#endif
