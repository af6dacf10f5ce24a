/* noderace.c - the provider and the metadata fallback raced for the local
 * node (contract in noderace.h). */
#include "controllers/noderace.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "controllers/nodeview.h"
#include "base/xalloc.h"

struct noderace;

/* One of the two sources and its call: at most one outstanding. */
struct noderace_leg {
	struct noderace *rc;
	const struct cloud_provider *p;
	void *state;
	pthread_t thread;
	int joinable;                   /* thread was started and not joined yet */
	int running;                    /* the call is outstanding */
	unsigned long calls;            /* calls started */
	int64_t started_ns;             /* when the outstanding call started */
	const struct kube_node *node;   /* the call's Node: the thread's reference */
	/* the last call's answer, once it ended (running 0) */
	int r;
	struct cloud_instance_metadata m;
	struct errbuf e;
};

struct noderace {
	struct noderace_config cfg;
	pthread_mutex_t mu;
	pthread_cond_t cv;              /* a call ended, or canceled */
	struct noderace_leg prov, fb;
	int canceled;
	/* the fallback's answer that won while the provider's call ran: to
	 * compare with the provider's when it ends */
	int compare;
	struct cloud_instance_metadata won;
};

/* noderace_call is a leg's thread: it asks, keeps the answer in the leg,
 * and for the provider's call tells the late callback when the fallback
 * has won meanwhile. */
static void *
noderace_call(void *arg)
{
	struct noderace_leg *leg = arg;
	struct noderace *rc = leg->rc;
	struct cloud_instance_metadata *m = xcalloc(1, sizeof(*m)), *won = NULL;
	const struct kube_node *n;
	struct errbuf e = { "" };
	struct nodeview v;
	int r;

	pthread_mutex_lock(&rc->mu);
	n = leg->node;
	leg->node = NULL;
	pthread_mutex_unlock(&rc->mu);
	nodeview_init(&v, n);
	r = leg->p->instances->metadata(leg->state, &v.node, m, &e);
	nodeview_free(&v);

	pthread_mutex_lock(&rc->mu);
	leg->r = r;
	if (r == 0)
		leg->m = *m;
	leg->e = e;
	leg->running = 0;
	if (leg == &rc->prov && rc->compare) {
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

/* noderace_start starts a leg's call about n unless one is running
 * (rc->mu held). The thread of an ended call is joined first: it has
 * nothing left to do but its late callback. */
static void
noderace_start(struct noderace_leg *leg, const struct kube_node *n)
{
	if (leg->running)
		return;
	if (leg->joinable)
		pthread_join(leg->thread, NULL);
	leg->joinable = 0;
	leg->node = kube_node_of(store_obj_ref(&n->obj));
	leg->running = 1;
	leg->started_ns = clock_mono_ns();
	leg->calls++;
	if (pthread_create(&leg->thread, NULL, noderace_call, leg) != 0) {
		store_obj_unref(&n->obj);
		leg->node = NULL;
		leg->running = 0;
		leg->r = errbuf_set(&leg->e, ERR_INTERNAL, "cannot start a thread for the "
		    "%s call", leg->p->name);
		return;
	}
	leg->joinable = 1;
}

/* noderace_verdict is a leg's outcome for this round (rc->mu held): 1 a
 * valid answer, 0 still running, -1 failed or an answer that cannot
 * initialize n (the reason in the leg's e). */
static int
noderace_verdict(struct noderace *rc, struct noderace_leg *leg, const struct kube_node *n,
    const char *what)
{
	int r;

	if (leg->running)
		return 0;
	if (leg->r < 0)
		return -1;
	if ((r = rc->cfg.valid(n, &leg->m, &leg->e)) < 0) {
		leg->r = errbuf_prefix(&leg->e, r, "%s", what);
		return -1;
	}
	return 1;
}

struct noderace *
noderace_new(const struct noderace_config *cfg)
{
	struct noderace *rc = xcalloc(1, sizeof(*rc));

	rc->cfg = *cfg;
	rc->prov.rc = rc->fb.rc = rc;
	rc->prov.p = cfg->provider;
	rc->prov.state = cfg->provider_state;
	rc->fb.p = cfg->fallback;
	rc->fb.state = cfg->fallback_state;
	pthread_mutex_init(&rc->mu, NULL);
	pthread_cond_init(&rc->cv, NULL);
	return rc;
}

int
noderace_ask(struct noderace *rc, const struct kube_node *n,
    struct cloud_instance_metadata *ret, int *ret_fallback, char *why, size_t why_len,
    struct errbuf *e)
{
	const char *pname = rc->cfg.provider->name;
	int pv, fv, r;

	why[0] = '\0';
	pthread_mutex_lock(&rc->mu);
	if (rc->canceled) {
		pthread_mutex_unlock(&rc->mu);
		return errbuf_set(e, ERR_CANCELED, "node %s: canceled", n->name);
	}
	/* a leg whose call still runs (abandoned in an earlier round) is
	 * waited on; the other asked anew */
	noderace_start(&rc->prov, n);
	noderace_start(&rc->fb, n);
	rc->compare = 0;  /* this round decides what is compared */
	for (;;) {
		if (rc->canceled) {
			r = errbuf_set(e, ERR_CANCELED, "node %s: canceled while waiting for "
			    "provider %s and the metadata fallback", n->name, pname);
			break;
		}
		pv = noderace_verdict(rc, &rc->prov, n, "its answer cannot initialize the node");
		fv = noderace_verdict(rc, &rc->fb, n, "its answer cannot initialize the node");
		if (pv == 1) {
			/* the provider's valid answer wins, whoever came first */
			*ret = rc->prov.m;
			*ret_fallback = 0;
			r = 0;
			break;
		}
		if (fv == 1) {
			if (pv == 0) {
				/* first: the call is abandoned, its answer only compared */
				double s = (double)(clock_mono_ns() - rc->prov.started_ns) / NS_PER_S;
				rc->compare = 1;
				rc->won = rc->fb.m;
				snprintf(why, why_len, "provider %s had not answered yet, %.2f s "
				    "after it was asked", pname, s);
			} else {
				snprintf(why, why_len, "provider %s: %s", pname, rc->prov.e.msg);
			}
			*ret = rc->fb.m;
			*ret_fallback = 1;
			r = 0;
			break;
		}
		if (pv < 0 && fv < 0) {
			r = errbuf_set(e, rc->prov.r, "%s; metadata fallback: %s", rc->prov.e.msg,
			    rc->fb.e.msg);
			break;
		}
		pthread_cond_wait(&rc->cv, &rc->mu);
	}
	pthread_mutex_unlock(&rc->mu);
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
	n = rc->prov.calls;
	if (ret_running != NULL)
		*ret_running = rc->prov.running;
	pthread_mutex_unlock(&rc->mu);
	return n;
}

void
noderace_free(struct noderace *rc)
{
	if (rc == NULL)
		return;
	noderace_cancel(rc);
	if (rc->prov.joinable)
		pthread_join(rc->prov.thread, NULL);
	if (rc->fb.joinable)
		pthread_join(rc->fb.thread, NULL);
	pthread_mutex_destroy(&rc->mu);
	pthread_cond_destroy(&rc->cv);
	free(rc);
}
