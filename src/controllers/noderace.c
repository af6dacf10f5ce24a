/* noderace.c - the provider and the metadata fallback raced for the local
 * node (contract in noderace.h). */
#include "controllers/noderace.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "controllers/nodeview.h"
#include "xalloc.h"

struct noderace {
	struct noderace_config cfg;
	pthread_mutex_t mu;
	pthread_cond_t cv;              /* the provider call ended, or canceled */
	pthread_t thread;
	int joinable;                   /* thread was started and not joined yet */
	int running;                    /* the provider call is outstanding */
	int canceled;
	unsigned long calls;            /* provider calls started */
	int64_t started_ns;             /* when the outstanding call started */
	const struct kube_node *node;   /* the call's Node: the thread's reference */
	/* the last call's answer, once it ended (running 0) */
	int r;
	struct cloud_instance_metadata m;
	struct errbuf e;
	/* the fallback's answer that won while the call ran: to compare */
	int compare;
	struct cloud_instance_metadata won;
};

/* noderace_call is the provider call's thread: it asks, keeps the answer
 * in rc, and tells the late callback when the fallback has won meanwhile. */
static void *
noderace_call(void *arg)
{
	struct noderace *rc = arg;
	struct cloud_instance_metadata *m = xcalloc(1, sizeof(*m)), *won = NULL;
	const struct kube_node *n;
	struct errbuf e = { "" };
	struct nodeview v;
	int r;

	pthread_mutex_lock(&rc->mu);
	n = rc->node;
	rc->node = NULL;
	pthread_mutex_unlock(&rc->mu);
	nodeview_init(&v, n);
	r = rc->cfg.provider->instances->metadata(rc->cfg.provider_state, &v.node, m, &e);
	nodeview_free(&v);

	pthread_mutex_lock(&rc->mu);
	rc->r = r;
	if (r == 0)
		rc->m = *m;
	rc->e = e;
	rc->running = 0;
	if (rc->compare) {
		won = xmalloc(sizeof(*won));
		*won = rc->won;
		rc->compare = 0;
	}
	pthread_cond_broadcast(&rc->cv);
	pthread_mutex_unlock(&rc->mu);
	if (won != NULL && rc->cfg.late != NULL)
		rc->cfg.late(n, won, r, r == 0 ? m : NULL, e.msg, rc->cfg.arg);
	store_obj_unref(&n->obj);
	free(won);
	free(m);
	return NULL;
}

/* noderace_start starts a provider call about n unless one is running
 * (rc->mu held). The thread of an ended call is joined first: it has
 * nothing left to do but its late callback. */
static void
noderace_start(struct noderace *rc, const struct kube_node *n)
{
	if (rc->running)
		return;
	if (rc->joinable)
		pthread_join(rc->thread, NULL);
	rc->joinable = 0;
	rc->node = kube_node_of(store_obj_ref(&n->obj));
	rc->running = 1;
	rc->started_ns = clock_mono_ns();
	rc->calls++;
	if (pthread_create(&rc->thread, NULL, noderace_call, rc) != 0) {
		store_obj_unref(&n->obj);
		rc->node = NULL;
		rc->running = 0;
		rc->r = errbuf_set(&rc->e, ERR_INTERNAL, "cannot start a thread for the "
		    "provider's call");
		return;
	}
	rc->joinable = 1;
}

struct noderace *
noderace_new(const struct noderace_config *cfg)
{
	struct noderace *rc = xcalloc(1, sizeof(*rc));

	rc->cfg = *cfg;
	pthread_mutex_init(&rc->mu, NULL);
	pthread_cond_init(&rc->cv, NULL);
	return rc;
}

int
noderace_ask(struct noderace *rc, const struct kube_node *n,
    struct cloud_instance_metadata *ret, int *ret_fallback, char *why, size_t why_len,
    struct errbuf *e)
{
	struct cloud_instance_metadata *fm = xcalloc(1, sizeof(*fm)), *pm = xcalloc(1, sizeof(*pm));
	struct errbuf fe = { "" }, pe = { "" };
	const char *pname = rc->cfg.provider->name;
	struct nodeview v;
	int fr, pr, r;

	why[0] = '\0';
	pthread_mutex_lock(&rc->mu);
	if (rc->canceled) {
		pthread_mutex_unlock(&rc->mu);
		r = errbuf_set(e, ERR_CANCELED, "node %s: canceled", n->name);
		goto out;
	}
	noderace_start(rc, n);
	rc->compare = 0;  /* this round decides what is compared */
	pthread_mutex_unlock(&rc->mu);

	/* the fallback here, meanwhile */
	nodeview_init(&v, n);
	fr = rc->cfg.fallback->instances->metadata(rc->cfg.fallback_state, &v.node, fm, &fe);
	nodeview_free(&v);
	if (fr == 0 && (fr = rc->cfg.valid(n, fm, &fe)) < 0)
		errbuf_prefix(&fe, fr, "its answer cannot initialize the node");

	pthread_mutex_lock(&rc->mu);
	while (rc->running) {
		if (fr == 0) {
			/* first: the call is abandoned, its answer only compared */
			double s = (double)(clock_mono_ns() - rc->started_ns) / NS_PER_S;
			rc->compare = 1;
			rc->won = *fm;
			pthread_mutex_unlock(&rc->mu);
			snprintf(why, why_len, "provider %s had not answered yet, %.2f s after it "
			    "was asked", pname, s);
			goto fallback;
		}
		if (rc->canceled) {
			pthread_mutex_unlock(&rc->mu);
			r = errbuf_set(e, ERR_CANCELED, "node %s: canceled while waiting for "
			    "provider %s", n->name, pname);
			goto out;
		}
		pthread_cond_wait(&rc->cv, &rc->mu);
	}
	pr = rc->r;
	if (pr == 0)
		*pm = rc->m;
	pe = rc->e;
	pthread_mutex_unlock(&rc->mu);

	/* the provider's answer is in: it wins when valid, whoever came first */
	if (pr == 0 && (pr = rc->cfg.valid(n, pm, &pe)) == 0) {
		*ret = *pm;
		*ret_fallback = 0;
		r = 0;
		goto out;
	}
	if (fr == 0) {
		snprintf(why, why_len, "provider %s: %s", pname, pe.msg);
		goto fallback;
	}
	r = errbuf_set(e, pr, "%s; metadata fallback: %s", pe.msg, fe.msg);
	goto out;
fallback:
	*ret = *fm;
	*ret_fallback = 1;
	r = 0;
out:
	free(pm);
	free(fm);
	return r;
}

void
noderace_cancel(struct noderace *rc)
{
	pthread_mutex_lock(&rc->mu);
	rc->canceled = 1;
	pthread_cond_broadcast(&rc->cv);
	pthread_mutex_unlock(&rc->mu);
}

unsigned long
noderace_provider_calls(struct noderace *rc, int *ret_running)
{
	unsigned long n;

	pthread_mutex_lock(&rc->mu);
	n = rc->calls;
	if (ret_running != NULL)
		*ret_running = rc->running;
	pthread_mutex_unlock(&rc->mu);
	return n;
}

void
noderace_free(struct noderace *rc)
{
	if (rc == NULL)
		return;
	noderace_cancel(rc);
	if (rc->joinable)
		pthread_join(rc->thread, NULL);
	pthread_mutex_destroy(&rc->mu);
	pthread_cond_destroy(&rc->cv);
	free(rc);
}
