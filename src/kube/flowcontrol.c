/* flowcontrol.c - per-class token buckets for API requests. */
#include "kube/flowcontrol.h"

#include <pthread.h>

#include "base/clock.h"
#include "base/stop.h"
#include "base/tokenbucket.h"

struct flowcontrol_bucket {
	pthread_mutex_t lock;
	int limited;               /* 0: qps 0, unlimited */
	struct tokenbucket tb;
};

static struct flowcontrol_bucket flowcontrol_buckets[FLOWCONTROL_CLASSES] = {
	{ .lock = PTHREAD_MUTEX_INITIALIZER },
	{ .lock = PTHREAD_MUTEX_INITIALIZER },
	{ .lock = PTHREAD_MUTEX_INITIALIZER },  /* FLOWCONTROL_NONE: never limited */
};

void
flowcontrol_init(double qps, int burst)
{
	for (int i = 0; i < FLOWCONTROL_CLASSES; i++) {
		struct flowcontrol_bucket *b = &flowcontrol_buckets[i];
		if (i == FLOWCONTROL_NONE)
			continue;
		pthread_mutex_lock(&b->lock);
		b->limited = qps > 0;
		tokenbucket_init(&b->tb, qps, burst < 1 ? 1 : burst, clock_mono_ns());
		pthread_mutex_unlock(&b->lock);
	}
}

double
flowcontrol_reserve(int cls)
{
	struct flowcontrol_bucket *b = &flowcontrol_buckets[cls >= 0 &&
	    cls < FLOWCONTROL_CLASSES ? cls : FLOWCONTROL_CONTROLLERS];
	double wait = 0;

	pthread_mutex_lock(&b->lock);
	if (b->limited)
		wait = tokenbucket_reserve(&b->tb, 1, clock_mono_ns());
	pthread_mutex_unlock(&b->lock);
	return wait;
}

void
flowcontrol_wait(int cls)
{
	double wait = flowcontrol_reserve(cls);

	if (wait > 0)
		stop_sleep(NULL, (int64_t)(wait * (double)NS_PER_S));
}
