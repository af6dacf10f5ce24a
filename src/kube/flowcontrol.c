/* flowcontrol.c - per-class token buckets for API requests. */
#include "kube/flowcontrol.h"

#include <pthread.h>

#include "clock.h"
#include "stop.h"

struct flowcontrol_bucket {
	pthread_mutex_t lock;
	double qps;      /* 0: unlimited */
	double burst;
	double tokens;
	double last;     /* monotonic seconds of the last refill */
};

static struct flowcontrol_bucket flowcontrol_buckets[FLOWCONTROL_CLASSES] = {
	{ .lock = PTHREAD_MUTEX_INITIALIZER },
	{ .lock = PTHREAD_MUTEX_INITIALIZER },
	{ .lock = PTHREAD_MUTEX_INITIALIZER },  /* FLOWCONTROL_NONE: qps 0, never waits */
};

static double
flowcontrol_now_s(void)
{
	return (double)clock_mono_ns() / (double)NS_PER_S;
}

void
flowcontrol_init(double qps, int burst)
{
	for (int i = 0; i < FLOWCONTROL_CLASSES; i++) {
		struct flowcontrol_bucket *b = &flowcontrol_buckets[i];
		if (i == FLOWCONTROL_NONE)
			continue;
		pthread_mutex_lock(&b->lock);
		b->qps = qps;
		b->burst = burst < 1 ? 1 : burst;
		b->tokens = b->burst;
		b->last = flowcontrol_now_s();
		pthread_mutex_unlock(&b->lock);
	}
}

double
flowcontrol_reserve(int cls)
{
	struct flowcontrol_bucket *b = &flowcontrol_buckets[cls >= 0 &&
	    cls < FLOWCONTROL_CLASSES ? cls : FLOWCONTROL_CONTROLLERS];
	double now, wait = 0;

	pthread_mutex_lock(&b->lock);
	if (b->qps > 0) {
		now = flowcontrol_now_s();
		b->tokens += (now - b->last) * b->qps;
		if (b->tokens > b->burst)
			b->tokens = b->burst;
		b->last = now;
		b->tokens -= 1;
		if (b->tokens < 0)
			wait = -b->tokens / b->qps;
	}
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
