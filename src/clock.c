/* clock.c - the monotonic clock in nanoseconds. */
#include "clock.h"

#include <time.h>

int64_t
clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
