/* stop.c - the stop flag, its interruptible sleeps and the signal thread. */
#include "base/stop.h"

#include <errno.h>
#include <signal.h>
#include <time.h>

#include "base/clock.h"
#include "base/err.h"

void
stop_init(struct stop *s)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	s->flag = 0;
	s->hooks = NULL;
}

void
stop_destroy(struct stop *s)
{
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
}

void
stop_request(struct stop *s)
{
	int was;

	pthread_mutex_lock(&s->lock);
	was = s->flag;
	/* the flag first: whatever a hook wakes sees it set */
	__atomic_store_n(&s->flag, 1, __ATOMIC_RELEASE);
	if (!was)
		for (struct stop_hook *h = s->hooks; h != NULL; h = h->next)
			h->fn(h->arg);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

int
stop_hook_add(struct stop *s, struct stop_hook *h)
{
	int stopped;

	if (s == NULL)
		return 0;
	pthread_mutex_lock(&s->lock);
	stopped = s->flag;
	if (!stopped) {
		h->next = s->hooks;
		s->hooks = h;
	}
	pthread_mutex_unlock(&s->lock);
	return stopped;
}

void
stop_hook_remove(struct stop *s, struct stop_hook *h)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->lock);
	for (struct stop_hook **p = &s->hooks; *p != NULL; p = &(*p)->next)
		if (*p == h) {
			*p = h->next;
			break;
		}
	pthread_mutex_unlock(&s->lock);
}

int
stop_requested(const struct stop *s)
{
	return s != NULL && __atomic_load_n(&s->flag, __ATOMIC_ACQUIRE);
}

int
stop_sleep_until(struct stop *s, int64_t deadline_ns)
{
	struct timespec ts;
	int stopped;

	if (deadline_ns < 0)
		deadline_ns = 0;
	ts.tv_sec = (time_t)(deadline_ns / NS_PER_S);
	ts.tv_nsec = (long)(deadline_ns % NS_PER_S);
	if (s == NULL) {
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		return 0;
	}
	pthread_mutex_lock(&s->lock);
	while (!s->flag && clock_mono_ns() < deadline_ns)
		pthread_cond_timedwait(&s->cond, &s->lock, &ts);
	stopped = s->flag;
	pthread_mutex_unlock(&s->lock);
	return stopped;
}

int
stop_sleep(struct stop *s, int64_t ns)
{
	if (ns <= 0)
		return stop_requested(s);
	return stop_sleep_until(s, clock_add_ns(clock_mono_ns(), ns));
}

static void *
stop_signal_thread(void *arg)
{
	struct stop *s = arg;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	for (;;)
		if (sigwait(&set, &sig) == 0)
			stop_request(s);  /* again for a repeat: harmless */
	return NULL;
}

int
stop_on_signals(struct stop *s)
{
	pthread_attr_t a;
	pthread_t t;
	sigset_t set;
	int r;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
		return ERR_INTERNAL;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 64 * 1024);
	r = pthread_create(&t, &a, stop_signal_thread, s);
	pthread_attr_destroy(&a);
	return r == 0 ? 0 : ERR_INTERNAL;
}
