/* clock.c - the system clocks in nanoseconds. */
#include "base/clock.h"

#include <time.h>

static int64_t
clock_read(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

int64_t
clock_mono_ns(void)
{
	return clock_read(CLOCK_MONOTONIC);
}

int64_t
clock_boot_ns(void)
{
	return clock_read(CLOCK_BOOTTIME);
}

int64_t
clock_real_ns(void)
{
	return clock_read(CLOCK_REALTIME);
}

int64_t
clock_add_ns(int64_t t, int64_t d)
{
	int64_t r;

	if (__builtin_add_overflow(t, d, &r))
		return d > 0 ? INT64_MAX : INT64_MIN;
	return r;
}
