/* test_noderace.c - the local node's provider and metadata fallback raced,
 * without a network: a fake provider whose call blocks until the test
 * releases it, and a fake fallback. The fallback's valid answer wins while
 * the provider hangs, a second round waits on the same call (one call
 * outstanding, never more), the late answer reaches the late callback; a
 * provider failing fast loses to the fallback, an invalid fallback answer
 * waits for the provider, a provider that answered first wins, a provider
 * answering wins while the fallback hangs (and a failing one waits for it),
 * both failing is an error naming both, and a cancel ends a wait. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/noderace.h"
#include "harness.h"
#include "base/jsonx.h"

/* The fakes' script and what they saw (fake_mu). */
static pthread_mutex_t fake_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fake_cv = PTHREAD_COND_INITIALIZER;
static int prov_block;          /* the provider's call waits for prov_release */
static int prov_release;
static int prov_r;              /* what it returns */
static const char *prov_id;     /* its answer's providerID */
static int prov_calls, prov_returned;
static int fb_r;                /* what the fallback returns */
static int fb_block;            /* the fallback's call waits for fb_release */
static int fb_release;
static int fb_calls, fb_returned;
static int fb_addrs;            /* its answer has an address */
static int fb_after_provider;   /* the fallback answers once the race has the
                                   provider's answer (fake_rc) */
static int late_calls, late_r;
static char late_id[CLOUD_ID_MAX], late_won[CLOUD_ID_MAX], late_err[ERRBUF_MAX];

static void
fake_reset(void)
{
	pthread_mutex_lock(&fake_mu);
	prov_block = prov_release = prov_r = prov_calls = prov_returned = 0;
	prov_id = "p://api";
	fb_r = fb_block = fb_release = fb_calls = fb_returned = 0;
	fb_addrs = 1;
	fb_after_provider = 0;
	late_calls = late_r = 0;
	late_id[0] = late_won[0] = late_err[0] = '\0';
	pthread_mutex_unlock(&fake_mu);
}

static void
fake_answer(struct cloud_instance_metadata *m, const char *id, int addrs, const char *src)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->source, sizeof(m->source), "%s", src);
	snprintf(m->provider_id, sizeof(m->provider_id), "%s", id);
	if (addrs) {
		m->n_addresses = 1;
		m->addresses[0].type = CLOUD_ADDR_INTERNAL_IP;
		snprintf(m->addresses[0].address, sizeof(m->addresses[0].address), "10.0.0.9");
	}
}

static int
prov_metadata(void *state, const struct cloud_node *node, struct cloud_instance_metadata *ret,
    struct errbuf *e)
{
	int r;

	(void)state;
	pthread_mutex_lock(&fake_mu);
	prov_calls++;
	pthread_cond_broadcast(&fake_cv);
	while (prov_block && !prov_release)
		pthread_cond_wait(&fake_cv, &fake_mu);
	r = prov_r;
	if (r == 0)
		fake_answer(ret, prov_id, 1, CLOUD_SOURCE_API);
	else
		errbuf_set(e, r, "fake provider: no answer for %s", node->name);
	prov_returned++;
	pthread_cond_broadcast(&fake_cv);
	pthread_mutex_unlock(&fake_mu);
	return r;
}

static struct noderace *fake_rc;   /* the race fb_wait_provider looks at */

/* fb_wait_provider returns once the race has the provider's answer: its
 * call started and no longer outstanding (polled: the race's own state). */
static void
fb_wait_provider(void)
{
	struct timespec ts = { 0, 1000000 };
	int running;

	while (noderace_provider_calls(fake_rc, &running) == 0 || running)
		nanosleep(&ts, NULL);
}

static int
fb_metadata(void *state, const struct cloud_node *node, struct cloud_instance_metadata *ret,
    struct errbuf *e)
{
	int r;

	(void)state;
	if (fb_after_provider)
		fb_wait_provider();
	pthread_mutex_lock(&fake_mu);
	fb_calls++;
	pthread_cond_broadcast(&fake_cv);
	while (fb_block && !fb_release)
		pthread_cond_wait(&fake_cv, &fake_mu);
	r = fb_r;
	if (r == 0)
		fake_answer(ret, "p://metadata", fb_addrs, CLOUD_SOURCE_METADATA);
	else
		errbuf_set(e, r, "fake metadata service: nothing for %s", node->name);
	fb_returned++;
	pthread_cond_broadcast(&fake_cv);
	pthread_mutex_unlock(&fake_mu);
	return r;
}

static const struct cloud_instances_ops prov_ops = { .metadata = prov_metadata };
static const struct cloud_instances_ops fb_ops = { .metadata = fb_metadata };
static const struct cloud_provider prov = { .name = "fakecloud", .instances = &prov_ops };
static const struct cloud_provider fb = { .name = "metadata", .instances = &fb_ops };

static int
valid(const struct kube_node *n, const struct cloud_instance_metadata *m, struct errbuf *e)
{
	if (m->n_addresses == 0)
		return errbuf_set(e, ERR_PERMANENT, "node %s: no addresses", n->name);
	return 0;
}

static void
late(const struct kube_node *n, const struct cloud_instance_metadata *won, int r,
    const struct cloud_instance_metadata *m, const char *err, void *arg)
{
	(void)n;
	(void)arg;
	pthread_mutex_lock(&fake_mu);
	late_calls++;
	late_r = r;
	snprintf(late_won, sizeof(late_won), "%s", won->provider_id);
	snprintf(late_id, sizeof(late_id), "%s", m ? m->provider_id : "");
	snprintf(late_err, sizeof(late_err), "%s", err);
	pthread_cond_broadcast(&fake_cv);
	pthread_mutex_unlock(&fake_mu);
}

static const struct kube_node *
node(void)
{
	static const char *json = "{\"metadata\":{\"name\":\"cp-1\",\"uid\":\"u1\","
	    "\"resourceVersion\":\"3\"},\"spec\":{},\"status\":{}}";
	const struct kube_node *n = NULL;
	struct errbuf e;
	json_object *j;

	if (jsonx_parse(json, strlen(json), JSONX_DEPTH_MAX, &j, &e) < 0 ||
	    kube_node_decode(j, &n, &e) < 0) {
		fprintf(stderr, "bad test node: %s\n", e.msg);
		abort();
	}
	json_object_put(j);
	return n;
}

static struct noderace *
race(void)
{
	struct noderace_config cfg = {
		.provider = &prov, .fallback = &fb, .valid = valid, .late = late,
	};

	return noderace_new(&cfg);
}

static void
release_fallback(void)
{
	pthread_mutex_lock(&fake_mu);
	fb_release = 1;
	pthread_cond_broadcast(&fake_cv);
	pthread_mutex_unlock(&fake_mu);
}

static void
release_provider(void)
{
	pthread_mutex_lock(&fake_mu);
	prov_release = 1;
	pthread_cond_broadcast(&fake_cv);
	pthread_mutex_unlock(&fake_mu);
}

/* wait_count waits for *v to reach want (fake_mu). */
static void
wait_count(const int *v, int want)
{
	pthread_mutex_lock(&fake_mu);
	while (*v < want)
		pthread_cond_wait(&fake_cv, &fake_mu);
	pthread_mutex_unlock(&fake_mu);
}

static int
get(const int *v)
{
	int x;

	pthread_mutex_lock(&fake_mu);
	x = *v;
	pthread_mutex_unlock(&fake_mu);
	return x;
}

/* One race about one node, and the last round's outcome. */
struct asker {
	struct noderace *rc;
	const struct kube_node *n;
	struct cloud_instance_metadata m;
	struct errbuf e;
	char why[ERRBUF_MAX];
	int fb, r, done;
};

/* asker_new resets the fakes and makes a race. */
static struct asker *
asker_new(void)
{
	struct asker *a = calloc(1, sizeof(*a));

	fake_reset();
	a->rc = fake_rc = race();
	a->n = node();
	return a;
}

/* ask runs one round; returns what noderace_ask returned. */
static int
ask(struct asker *a)
{
	a->fb = -1;
	return a->r = noderace_ask(a->rc, a->n, &a->m, &a->fb, a->why, sizeof(a->why), &a->e);
}

/* asker_free frees the race (joining its call) and a. */
static void
asker_free(struct asker *a)
{
	noderace_free(a->rc);
	store_obj_unref(&a->n->obj);
	free(a);
}

static void *
asker_run(void *arg)
{
	struct asker *a = arg;
	int r = ask(a);

	pthread_mutex_lock(&fake_mu);
	a->r = r;
	a->done = 1;
	pthread_cond_broadcast(&fake_cv);
	pthread_mutex_unlock(&fake_mu);
	return NULL;
}

TEST(fallback_wins_while_the_provider_hangs_and_its_late_answer_is_compared)
{
	struct asker *a = asker_new();

	prov_block = 1;
	prov_id = "p://other";
	CHECK(ask(a) == 0);
	CHECK(a->fb == 1);
	CHECK_STR(a->m.provider_id, "p://metadata");
	CHECK_CONTAINS(a->why, "provider fakecloud had not answered yet");
	/* the node is retried while the cloud still hangs: no second call */
	wait_count(&prov_calls, 1);
	CHECK(ask(a) == 0 && a->fb == 1);
	CHECK(noderace_provider_calls(a->rc, NULL) == 1);
	CHECK(get(&prov_calls) == 1);
	CHECK(get(&late_calls) == 0);
	/* the cloud answers at last: compared, once */
	release_provider();
	asker_free(a);
	CHECK(get(&late_calls) == 1);
	CHECK(late_r == 0);
	CHECK_STR(late_id, "p://other");
	CHECK_STR(late_won, "p://metadata");
}

TEST(a_late_failure_is_reported_too_and_a_new_round_starts_a_new_call)
{
	struct asker *a = asker_new();

	prov_block = 1;
	prov_r = ERR_TIMEOUT;
	CHECK(ask(a) == 0 && a->fb == 1);
	release_provider();
	wait_count(&late_calls, 1);   /* told after the call has ended */
	pthread_mutex_lock(&fake_mu);
	prov_release = 0;
	pthread_mutex_unlock(&fake_mu);
	/* the call has ended: the next round asks the provider again */
	CHECK(ask(a) == 0 && a->fb == 1);
	CHECK(noderace_provider_calls(a->rc, NULL) == 2);
	release_provider();
	asker_free(a);
	CHECK(get(&late_calls) == 2);
	CHECK(late_r == ERR_TIMEOUT);
	CHECK_CONTAINS(late_err, "fake provider: no answer for cp-1");
}

TEST(a_provider_failing_fast_loses_to_the_fallback_with_its_reason)
{
	struct asker *a = asker_new();

	prov_r = ERR_UNAUTHORIZED;
	fb_after_provider = 1;
	CHECK(ask(a) == 0);
	CHECK(a->fb == 1);
	CHECK_STR(a->m.provider_id, "p://metadata");
	CHECK_STR(a->why, "provider fakecloud: fake provider: no answer for cp-1");
	asker_free(a);
	CHECK(get(&late_calls) == 0);   /* it had answered: nothing late */
}

TEST(a_provider_that_answered_first_wins)
{
	struct asker *a = asker_new();

	fb_after_provider = 1;
	CHECK(ask(a) == 0);
	CHECK(a->fb == 0);
	CHECK_STR(a->m.provider_id, "p://api");
	CHECK_STR(a->why, "");
	asker_free(a);
	CHECK(get(&late_calls) == 0);
}

TEST(an_invalid_fallback_answer_waits_for_the_provider)
{
	struct asker *a = asker_new();
	pthread_t t;

	prov_block = 1;
	fb_addrs = 0;   /* complete but for its addresses: it cannot win */
	CHECK(pthread_create(&t, NULL, asker_run, a) == 0);
	wait_count(&prov_calls, 1);
	/* the provider still hangs: the asker has nothing to return yet
	 * (it returns only on a valid answer, and the fallback's is not) */
	CHECK(get(&a->done) == 0);
	release_provider();
	pthread_join(t, NULL);
	CHECK(a->r == 0);
	CHECK(a->fb == 0);
	CHECK_STR(a->m.provider_id, "p://api");
	asker_free(a);
	CHECK(get(&late_calls) == 0);
}

TEST(both_failing_is_an_error_naming_both)
{
	struct asker *a = asker_new();

	prov_r = ERR_TRANSIENT;
	fb_r = ERR_TIMEOUT;
	CHECK(ask(a) == ERR_TRANSIENT);
	CHECK_STR(a->e.msg, "fake provider: no answer for cp-1; metadata fallback: fake "
	    "metadata service: nothing for cp-1");
	/* an invalid fallback answer is named as such */
	fb_r = 0;
	fb_addrs = 0;
	CHECK(ask(a) == ERR_TRANSIENT);
	CHECK_CONTAINS(a->e.msg, "metadata fallback: its answer cannot initialize the node: "
	    "node cp-1: no addresses");
	asker_free(a);
}

TEST(a_cancel_ends_a_wait_for_the_provider)
{
	struct asker *a = asker_new();
	pthread_t t;

	prov_block = 1;
	fb_r = ERR_TIMEOUT;
	CHECK(pthread_create(&t, NULL, asker_run, a) == 0);
	wait_count(&prov_calls, 1);
	noderace_cancel(a->rc);
	wait_count(&a->done, 1);
	pthread_join(t, NULL);
	CHECK(a->r == ERR_CANCELED);
	CHECK(ask(a) == ERR_CANCELED);
	CHECK(get(&prov_returned) == 0);   /* the call itself still runs */
	release_provider();
	asker_free(a);
	CHECK(get(&prov_returned) == 1);
}

TEST(a_provider_answering_wins_while_the_fallback_hangs)
{
	struct asker *a = asker_new();

	fb_block = 1;
	/* returns on the provider's answer, the metadata service still hung */
	CHECK(ask(a) == 0);
	CHECK(a->fb == 0);
	CHECK_STR(a->m.provider_id, "p://api");
	CHECK(get(&fb_returned) == 0);
	/* a second round waits on the same fallback call: never a second one */
	CHECK(ask(a) == 0 && a->fb == 0);
	wait_count(&fb_calls, 1);
	CHECK(get(&fb_calls) == 1);
	CHECK(get(&prov_calls) == 2);
	release_fallback();
	asker_free(a);
	CHECK(get(&fb_returned) == 1);
	CHECK(get(&late_calls) == 0);   /* only the provider's late answers are compared */
}

TEST(a_provider_failing_waits_for_a_hanging_fallback)
{
	struct asker *a = asker_new();
	pthread_t t;

	fb_block = 1;
	prov_r = ERR_UNAUTHORIZED;
	CHECK(pthread_create(&t, NULL, asker_run, a) == 0);
	/* the race has the provider's failure (its own state, not the fake's
	 * return: the leg records the answer after the call returns) */
	fb_wait_provider();
	CHECK(get(&a->done) == 0);
	release_fallback();
	pthread_join(t, NULL);
	CHECK(a->r == 0);
	CHECK(a->fb == 1);
	CHECK_STR(a->m.provider_id, "p://metadata");
	CHECK_STR(a->why, "provider fakecloud: fake provider: no answer for cp-1");
	asker_free(a);
}

TEST_MAIN()
