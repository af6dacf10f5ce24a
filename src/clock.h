/* clock.h - the monotonic clock every timeout, backoff and deadline uses.
 * (Leader election measures with CLOCK_BOOTTIME instead: see kube/lease.c.) */
#ifndef BOOTCCM_CLOCK_H
#define BOOTCCM_CLOCK_H

#include <stdint.h>

/* clock_mono_ns returns CLOCK_MONOTONIC in nanoseconds. */
int64_t clock_mono_ns(void);

#endif
