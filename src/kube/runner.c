/* runner.c - a controller's threads (runner.h). */
#include <pthread.h>
#include <stdlib.h>

#include "base/err.h"
#include "base/xalloc.h"
#include "kube/runner.h"

struct runner {
	struct runner_config cfg;
	pthread_t *threads;
	int nthreads;
	int stopped;
};

static void *
runner_worker(void *arg)
{
	struct runner *r = arg;
	const struct runner_config *c = &r->cfg;
	void *ctx = NULL;
	const char *key;

	if (c->wait != NULL && !c->wait(c->arg))
		return NULL;
	if (c->kc != NULL)
		ctx = kube_client_new(c->kc, c->user_agent, c->stop, c->gate, c->gate_arg);
	else if (c->worker_init != NULL && c->worker_init(c->arg, &ctx) < 0)
		return NULL;
	while (wq_get(c->q, &key) > 0) {
		int rc = c->sync(c->arg, ctx, key);

		if (rc < 0)
			wq_add_rate_limited(c->q, key);
		else if (rc != RUNNER_HANDLED)
			wq_forget(c->q, key);
		wq_done(c->q, key);
		if (c->after != NULL)
			c->after(c->arg, rc);
	}
	if (c->kc != NULL)
		kube_client_free(ctx);
	else if (c->worker_cleanup != NULL)
		c->worker_cleanup(c->arg, ctx);
	return NULL;
}

static void *
runner_periodic(void *arg)
{
	struct runner *r = arg;
	const struct runner_config *c = &r->cfg;

	if (c->wait != NULL && !c->wait(c->arg))
		return NULL;
	if (c->every_begin != NULL)
		c->every_begin(c->arg);
	if (c->every_first)
		c->every(c->arg);
	while (!stop_sleep(c->stop, c->period_ns))
		c->every(c->arg);
	if (c->every_end != NULL)
		c->every_end(c->arg);
	return NULL;
}

int
runner_start(const struct runner_config *cfg, struct runner **ret)
{
	struct runner *r;
	pthread_attr_t attr;
	int n = cfg->workers + (cfg->every != NULL), ok = 1;

	*ret = NULL;
	if (cfg->stop == NULL || cfg->workers < 0 ||
	    (cfg->workers > 0 && (cfg->q == NULL || cfg->sync == NULL)) ||
	    (cfg->every != NULL && cfg->period_ns <= 0))
		return ERR_INVALID;
	r = xcalloc(1, sizeof(*r));
	r->cfg = *cfg;
	r->threads = xcalloc((size_t)(n ? n : 1), sizeof(*r->threads));
	pthread_attr_init(&attr);
	if (cfg->stack_size > 0)
		pthread_attr_setstacksize(&attr, cfg->stack_size);
	for (int i = 0; ok && i < n; i++) {
		void *(*fn)(void *) = i < cfg->workers ? runner_worker : runner_periodic;
		if (pthread_create(&r->threads[r->nthreads], &attr, fn, r) != 0)
			ok = 0;
		else
			r->nthreads++;
	}
	pthread_attr_destroy(&attr);
	if (!ok) {
		runner_free(r);
		return ERR_INTERNAL;
	}
	*ret = r;
	return 0;
}

void
runner_stop(struct runner *r)
{
	if (r == NULL || r->stopped)
		return;
	r->stopped = 1;
	stop_request(r->cfg.stop);
	if (r->cfg.q != NULL)
		wq_shutdown(r->cfg.q);
	if (r->cfg.on_stop != NULL)
		r->cfg.on_stop(r->cfg.arg);
	for (int i = 0; i < r->nthreads; i++)
		pthread_join(r->threads[i], NULL);
	r->nthreads = 0;
}

void
runner_free(struct runner *r)
{
	if (r == NULL)
		return;
	runner_stop(r);
	free(r->threads);
	free(r);
}
