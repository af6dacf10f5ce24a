/* test_nodelifecycle.c - the node lifecycle controller's policy,
 * nodelifecycle_decide (design invariant 6, "never delete on doubt"), table
 * driven over every input class: the Ready condition, a Node being deleted,
 * instances.exists's answers (exists, gone, InstanceNotFound, each error
 * code, not implemented) from a definitive and a non-definitive provider and
 * from the real metadata provider, instances.shutdown's answers, and the
 * Node's age against the grace period; then a sweep that no other input
 * deletes a Node. */
#include <stdint.h>
#include <string.h>

#include "base/clock.h"
#include "cloud.h"
#include "controllers/nodelifecycle.h"
#include "base/err.h"
#include "harness.h"

#define MIN (60 * NS_PER_S)
#define GRACE (5 * MIN)

static int
fake_exists(void *state, const struct cloud_node *node, int *ret, struct errbuf *e)
{
	(void)state, (void)node, (void)ret, (void)e;
	return 0;
}

static int
fake_metadata(void *state, const struct cloud_node *node,
    struct cloud_instance_metadata *ret, struct errbuf *e)
{
	(void)state, (void)node, (void)ret, (void)e;
	return 0;
}

static const struct cloud_instances_ops with_shutdown = {
	.exists = fake_exists, .shutdown = fake_exists, .metadata = fake_metadata,
};
static const struct cloud_instances_ops without_shutdown = {
	.exists = fake_exists, .metadata = fake_metadata,
};

/* A cloud's own inventory, with and without instances.shutdown. */
static const struct cloud_provider definitive = {
	.name = "definitive", .flags = CLOUD_DEFINITIVE, .instances = &with_shutdown,
};
static const struct cloud_provider definitive_no_shutdown = {
	.name = "definitive-no-shutdown", .flags = CLOUD_DEFINITIVE,
	.instances = &without_shutdown,
};
/* A provider that cannot know whether an instance is gone. */
static const struct cloud_provider guessing = {
	.name = "guessing", .flags = 0, .instances = &with_shutdown,
};

#define NOT_READY KUBE_NODE_READY_FALSE
#define OLD (10 * MIN)   /* past the grace period */
#define YOUNG (1 * MIN)  /* within it */

struct row {
	const char *what;
	const struct cloud_provider *p;  /* NULL: the metadata provider */
	int64_t grace_ns;
	struct nodelifecycle_facts f;
	enum nodelifecycle_verdict want;
};

/* exists asked and answered rc/exists; shutdown not asked */
#define EXISTS(rc, ex) .exists_asked = 1, .exists_rc = (rc), .exists = (ex)
/* exists answered 1, shutdown asked and answered rc/sd */
#define SHUT(rc, sd) EXISTS(0, 1), .shutdown_asked = 1, .shutdown_rc = (rc), .shutdown = (sd)

static const struct row rows[] = {
	/* the Ready condition: only True is ready, whatever else is known */
	{ "Ready=True: untaint", &definitive, GRACE,
	  { .ready = KUBE_NODE_READY_TRUE, .age_ns = OLD }, NODELIFECYCLE_READY },
	{ "Ready=True, gone in the cloud: still only untaint", &definitive, GRACE,
	  { .ready = KUBE_NODE_READY_TRUE, .age_ns = OLD, EXISTS(ERR_NOT_FOUND, 0) },
	  NODELIFECYCLE_READY },
	{ "Ready=True, being deleted: untaint", &definitive, GRACE,
	  { .ready = KUBE_NODE_READY_TRUE, .deleting = 1, .age_ns = OLD }, NODELIFECYCLE_READY },
	{ "Ready=False: ask exists", &definitive, GRACE,
	  { .ready = KUBE_NODE_READY_FALSE, .age_ns = OLD }, NODELIFECYCLE_ASK_EXISTS },
	{ "Ready=Unknown: ask exists", &definitive, GRACE,
	  { .ready = KUBE_NODE_READY_UNKNOWN, .age_ns = OLD }, NODELIFECYCLE_ASK_EXISTS },
	{ "no Ready condition yet: not ready, ask exists", &definitive, GRACE,
	  { .ready = KUBE_NODE_READY_NONE, .age_ns = OLD }, NODELIFECYCLE_ASK_EXISTS },
	{ "not Ready, being deleted: skip", &definitive, GRACE,
	  { .ready = NOT_READY, .deleting = 1, .age_ns = OLD }, NODELIFECYCLE_SKIP },
	{ "Unknown, being deleted, gone: skip", &definitive, GRACE,
	  { .ready = KUBE_NODE_READY_UNKNOWN, .deleting = 1, .age_ns = OLD,
	    EXISTS(ERR_NOT_FOUND, 0) }, NODELIFECYCLE_SKIP },

	/* the instance exists: shutdown decides the taint */
	{ "exists: ask shutdown", &definitive, GRACE,
	  { .ready = NOT_READY, .age_ns = OLD, EXISTS(0, 1) }, NODELIFECYCLE_ASK_SHUTDOWN },
	{ "exists, young: ask shutdown (grace is for deletion)", &definitive, GRACE,
	  { .ready = NOT_READY, .age_ns = YOUNG, EXISTS(0, 1) }, NODELIFECYCLE_ASK_SHUTDOWN },
	{ "exists, non-definitive provider: ask shutdown", &guessing, GRACE,
	  { .ready = KUBE_NODE_READY_UNKNOWN, .age_ns = OLD, EXISTS(0, 1) },
	  NODELIFECYCLE_ASK_SHUTDOWN },
	{ "exists, no shutdown operation: keep", &definitive_no_shutdown, GRACE,
	  { .ready = NOT_READY, .age_ns = OLD, EXISTS(0, 1) }, NODELIFECYCLE_KEEP },
	{ "shut down: taint", &definitive, GRACE,
	  { .ready = NOT_READY, .age_ns = OLD, SHUT(0, 1) }, NODELIFECYCLE_SHUTDOWN },
	{ "shut down, Unknown, young: taint", &guessing, GRACE,
	  { .ready = KUBE_NODE_READY_UNKNOWN, .age_ns = YOUNG, SHUT(0, 1) },
	  NODELIFECYCLE_SHUTDOWN },
	{ "running: keep", &definitive, GRACE,
	  { .ready = NOT_READY, .age_ns = OLD, SHUT(0, 0) }, NODELIFECYCLE_KEEP },
	{ "shutdown failed: keep", &definitive, GRACE,
	  { .ready = NOT_READY, .age_ns = OLD, SHUT(ERR_TRANSIENT, 1) }, NODELIFECYCLE_KEEP },
	{ "shutdown timed out: keep", &definitive, GRACE,
	  { .ready = NOT_READY, .age_ns = OLD, SHUT(ERR_TIMEOUT, 0) }, NODELIFECYCLE_KEEP },
	{ "shutdown not implemented: keep", &definitive, GRACE,
	  { .ready = NOT_READY, .age_ns = OLD, SHUT(ERR_NOT_IMPLEMENTED, 0) },
	  NODELIFECYCLE_KEEP },
	{ "shutdown says instance not found: keep (only exists may delete)", &definitive, GRACE,
	  { .ready = NOT_READY, .age_ns = OLD, SHUT(ERR_NOT_FOUND, 0) }, NODELIFECYCLE_KEEP },

	/* gone, from a definitive provider: the grace period decides */
	{ "exists false, old: delete", &definitive, GRACE,
	  { .ready = NOT_READY, .age_ns = OLD, EXISTS(0, 0) }, NODELIFECYCLE_DELETE },
	{ "InstanceNotFound, old: delete", &definitive, GRACE,
	  { .ready = KUBE_NODE_READY_UNKNOWN, .age_ns = OLD, EXISTS(ERR_NOT_FOUND, 0) },
	  NODELIFECYCLE_DELETE },
	{ "InstanceNotFound, no Ready condition, old: delete", &definitive_no_shutdown, GRACE,
	  { .ready = KUBE_NODE_READY_NONE, .age_ns = OLD, EXISTS(ERR_NOT_FOUND, 0) },
	  NODELIFECYCLE_DELETE },
	{ "gone, exactly the grace period old: delete", &definitive, GRACE,
	  { .ready = NOT_READY, .age_ns = GRACE, EXISTS(ERR_NOT_FOUND, 0) },
	  NODELIFECYCLE_DELETE },
	{ "gone, a nanosecond short of the grace period: refuse", &definitive, GRACE,
	  { .ready = NOT_READY, .age_ns = GRACE - 1, EXISTS(ERR_NOT_FOUND, 0) },
	  NODELIFECYCLE_REFUSE_GRACE },
	{ "exists false, young: refuse", &definitive, GRACE,
	  { .ready = NOT_READY, .age_ns = YOUNG, EXISTS(0, 0) }, NODELIFECYCLE_REFUSE_GRACE },
	{ "gone, age unknown: refuse", &definitive, GRACE,
	  { .ready = NOT_READY, .age_ns = -1, EXISTS(ERR_NOT_FOUND, 0) },
	  NODELIFECYCLE_REFUSE_GRACE },
	{ "gone, age unknown, no grace period: refuse", &definitive, 0,
	  { .ready = NOT_READY, .age_ns = -1, EXISTS(0, 0) }, NODELIFECYCLE_REFUSE_GRACE },
	{ "gone, just created, no grace period: delete", &definitive, 0,
	  { .ready = NOT_READY, .age_ns = 0, EXISTS(ERR_NOT_FOUND, 0) }, NODELIFECYCLE_DELETE },

	/* gone, from a provider that cannot know: never */
	{ "non-definitive exists false, old: refuse", &guessing, GRACE,
	  { .ready = NOT_READY, .age_ns = OLD, EXISTS(0, 0) },
	  NODELIFECYCLE_REFUSE_NOT_DEFINITIVE },
	{ "non-definitive InstanceNotFound, old: refuse", &guessing, GRACE,
	  { .ready = KUBE_NODE_READY_UNKNOWN, .age_ns = OLD, EXISTS(ERR_NOT_FOUND, 0) },
	  NODELIFECYCLE_REFUSE_NOT_DEFINITIVE },
	{ "non-definitive InstanceNotFound, young: refuse", &guessing, GRACE,
	  { .ready = NOT_READY, .age_ns = YOUNG, EXISTS(ERR_NOT_FOUND, 0) },
	  NODELIFECYCLE_REFUSE_NOT_DEFINITIVE },
	{ "non-definitive, no grace period: refuse", &guessing, 0,
	  { .ready = NOT_READY, .age_ns = OLD, EXISTS(ERR_NOT_FOUND, 0) },
	  NODELIFECYCLE_REFUSE_NOT_DEFINITIVE },

	/* the provider cannot tell */
	{ "exists not implemented: refuse", &definitive, GRACE,
	  { .ready = NOT_READY, .age_ns = OLD, EXISTS(ERR_NOT_IMPLEMENTED, 0) },
	  NODELIFECYCLE_REFUSE_NOT_IMPLEMENTED },
	{ "exists not implemented, non-definitive: refuse", &guessing, 0,
	  { .ready = KUBE_NODE_READY_UNKNOWN, .age_ns = OLD, EXISTS(ERR_NOT_IMPLEMENTED, 0) },
	  NODELIFECYCLE_REFUSE_NOT_IMPLEMENTED },

	/* provider errors: no decision, even when exists was left at 0 or 1 */
	{ "5xx: refuse", &definitive, GRACE,
	  { .ready = NOT_READY, .age_ns = OLD, EXISTS(ERR_TRANSIENT, 0) },
	  NODELIFECYCLE_REFUSE_ERROR },
	{ "timeout: refuse", &definitive, 0,
	  { .ready = NOT_READY, .age_ns = OLD, EXISTS(ERR_TIMEOUT, 0) },
	  NODELIFECYCLE_REFUSE_ERROR },
	{ "429: refuse", &definitive, 0,
	  { .ready = KUBE_NODE_READY_UNKNOWN, .age_ns = OLD, EXISTS(ERR_TOO_MANY_REQUESTS, 0) },
	  NODELIFECYCLE_REFUSE_ERROR },
	{ "error with exists 1 left over: refuse, not keep", &definitive, GRACE,
	  { .ready = NOT_READY, .age_ns = OLD, EXISTS(ERR_TRANSIENT, 1) },
	  NODELIFECYCLE_REFUSE_ERROR },
	{ "permanent error: refuse", &definitive, 0,
	  { .ready = NOT_READY, .age_ns = OLD, EXISTS(ERR_PERMANENT, 0) },
	  NODELIFECYCLE_REFUSE_ERROR },
	{ "unauthorized: refuse", &definitive, 0,
	  { .ready = NOT_READY, .age_ns = OLD, EXISTS(ERR_UNAUTHORIZED, 0) },
	  NODELIFECYCLE_REFUSE_ERROR },
	{ "implemented elsewhere: refuse", &definitive, 0,
	  { .ready = NOT_READY, .age_ns = OLD, EXISTS(ERR_IMPLEMENTED_ELSEWHERE, 0) },
	  NODELIFECYCLE_REFUSE_ERROR },
	{ "stopped mid-call: refuse", &definitive, 0,
	  { .ready = NOT_READY, .age_ns = OLD, EXISTS(ERR_CANCELED, 0) },
	  NODELIFECYCLE_REFUSE_ERROR },

	/* the metadata provider (p NULL here: looked up by name below) */
	{ "metadata provider, old: not implemented", NULL, 0,
	  { .ready = NOT_READY, .age_ns = OLD, EXISTS(ERR_NOT_IMPLEMENTED, 0) },
	  NODELIFECYCLE_REFUSE_NOT_IMPLEMENTED },
	{ "metadata provider saying not found: not definitive", NULL, 0,
	  { .ready = NOT_READY, .age_ns = OLD, EXISTS(ERR_NOT_FOUND, 0) },
	  NODELIFECYCLE_REFUSE_NOT_DEFINITIVE },
	{ "metadata provider saying false: not definitive", NULL, 0,
	  { .ready = KUBE_NODE_READY_UNKNOWN, .age_ns = OLD, EXISTS(0, 0) },
	  NODELIFECYCLE_REFUSE_NOT_DEFINITIVE },
	{ "metadata provider, Ready: untaint", NULL, 0,
	  { .ready = KUBE_NODE_READY_TRUE, .age_ns = OLD }, NODELIFECYCLE_READY },
};

TEST(decide_table)
{
	const struct cloud_provider *md = cloud_provider_find("metadata");

	CHECK(md != NULL);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		enum nodelifecycle_verdict got = nodelifecycle_decide(r->p ? r->p : md,
		    r->grace_ns, &r->f);
		if (got != r->want)
			fprintf(stderr, "  row %zu \"%s\": got %d, want %d\n", i, r->what,
			    (int)got, (int)r->want);
		CHECK(got == r->want);
	}
}

/* Every error code but the two sentinels is "no decision", from any
 * provider, for any age. */
TEST(every_error_code_refuses)
{
	const struct cloud_provider *ps[] = { &definitive, &definitive_no_shutdown, &guessing,
		cloud_provider_find("metadata") };

	for (int rc = ERR_UNAVAILABLE; rc <= ERR_INVALID; rc++) {
		if (rc == ERR_NOT_FOUND || rc == ERR_NOT_IMPLEMENTED)
			continue;
		for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
			for (int ex = 0; ex < 2; ex++) {
				struct nodelifecycle_facts f = {
					.ready = KUBE_NODE_READY_UNKNOWN, .age_ns = OLD,
					EXISTS(rc, ex),
				};
				CHECK(ps[i] != NULL);
				CHECK(nodelifecycle_decide(ps[i], 0, &f) ==
				    NODELIFECYCLE_REFUSE_ERROR);
			}
		}
	}
	/* the retryable ones are in that set: no retry policy sneaks a delete */
	CHECK(err_retryable(ERR_TRANSIENT) && err_retryable(ERR_TIMEOUT) &&
	    err_retryable(ERR_TOO_MANY_REQUESTS));
}

/* The metadata provider's real answer: it cannot tell, so nothing it says
 * deletes a Node. */
TEST(metadata_provider_answer_never_deletes)
{
	const struct cloud_provider *md = cloud_provider_find("metadata");
	struct cloud_config cfg = { .node_name = "cp-1" };
	struct cloud_node n = { .name = "w-1", .provider_id = "aws:///z/i-1" };
	struct errbuf e = { "" };
	void *st = NULL;

	CHECK(md != NULL && md->init(&cfg, &st, &e) == 0);
	struct nodelifecycle_facts f = { .ready = KUBE_NODE_READY_UNKNOWN, .age_ns = OLD };
	CHECK(nodelifecycle_decide(md, 0, &f) == NODELIFECYCLE_ASK_EXISTS);
	f.exists_rc = md->instances->exists(st, &n, &f.exists, &e);
	f.exists_asked = 1;
	CHECK(f.exists_rc == ERR_NOT_IMPLEMENTED);
	CHECK(nodelifecycle_decide(md, 0, &f) == NODELIFECYCLE_REFUSE_NOT_IMPLEMENTED);
	md->free(st);
}

/* A sweep over every combination: DELETE exactly when a definitive provider
 * says gone about a not-Ready Node not being deleted, of known age at least
 * the grace period. */
TEST(delete_only_on_definitive_gone_past_grace)
{
	static const enum kube_node_ready readies[] = { KUBE_NODE_READY_NONE,
		KUBE_NODE_READY_TRUE, KUBE_NODE_READY_FALSE, KUBE_NODE_READY_UNKNOWN };
	static const int64_t ages[] = { -1, 0, YOUNG, GRACE - 1, GRACE, OLD };
	static const int64_t graces[] = { 0, GRACE };
	const struct cloud_provider *ps[] = { &definitive, &definitive_no_shutdown, &guessing,
		cloud_provider_find("metadata"), NULL };
	size_t deletes = 0;

	for (size_t pi = 0; pi < sizeof(ps) / sizeof(ps[0]); pi++)
	for (size_t ri = 0; ri < sizeof(readies) / sizeof(readies[0]); ri++)
	for (int del = 0; del < 2; del++)
	for (size_t ai = 0; ai < sizeof(ages) / sizeof(ages[0]); ai++)
	for (size_t gi = 0; gi < sizeof(graces) / sizeof(graces[0]); gi++)
	for (int rc = ERR_CANCELED; rc <= 0; rc++)
	for (int ex = 0; ex < 2; ex++)
	for (int sa = 0; sa < 2; sa++)
	for (int sd = 0; sd < 2; sd++) {
		const struct cloud_provider *p = ps[pi];
		struct nodelifecycle_facts f = {
			.ready = readies[ri], .deleting = del, .age_ns = ages[ai],
			EXISTS(rc, ex), .shutdown_asked = sa, .shutdown = sd,
		};
		int gone = (rc == 0 && !ex) || rc == ERR_NOT_FOUND;
		int want = p != NULL && (p->flags & CLOUD_DEFINITIVE) && gone &&
		    readies[ri] != KUBE_NODE_READY_TRUE && !del && ages[ai] >= 0 &&
		    ages[ai] >= graces[gi];
		enum nodelifecycle_verdict v = nodelifecycle_decide(p, graces[gi], &f);

		CHECK((v == NODELIFECYCLE_DELETE) == want);
		deletes += want;
	}
	CHECK(deletes > 0);
}

TEST_MAIN()
