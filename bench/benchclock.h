/* benchclock.h - the benchmarks' clocks, in seconds as doubles.
 *
 * benchclock_now: CLOCK_MONOTONIC; benchclock_cpu: the process's user +
 * system CPU time so far (getrusage). Header-only: each benchmark is one
 * program built by its script. */
#ifndef BENCHCLOCK_H
#define BENCHCLOCK_H

#include <sys/resource.h>
#include <time.h>

static inline double
benchclock_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline double
benchclock_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

#endif
