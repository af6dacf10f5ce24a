/* test_events.c - the Event recorder: references and caps, client-go's
 * correlation keys, the aggregation window, the spam filter's bucket and the
 * similar-event aggregation on an injected clock, the JSON sent, the bounded
 * queue, and a recorder whose API server is down. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "harness.h"
#include "kube/events.h"
#include "config/kubeconfig.h"
#include "base/log.h"
#include "base/metrics.h"

#define S NS_PER_S

static const int64_t T0 = 1795248000LL * NS_PER_S; /* 2026-11-21T08:00:00Z */

static const struct events_ref node1 = {
	.kind = "Node", .name = "node-1", .uid = "6f1b3d2e-0000-4000-8000-000000000001",
	.api_version = "v1",
};
static const struct events_ref svc = {
	.kind = "Service", .namespace = "shop", .name = "web",
	.uid = "6f1b3d2e-0000-4000-8000-000000000002", .api_version = "v1",
	.resource_version = "812",
};

/* occur fills ev for ref at T0 + at_s seconds and correlates it. */
static enum events_verdict
occur(struct events_correlator *c, struct events_event *ev, const struct events_ref *ref,
    const char *type, const char *reason, const char *msg, int64_t at_ns)
{
	if (events_fill(ev, ref, type, reason, msg, T0 + at_ns) < 0)
		return (enum events_verdict)-1;
	return events_correlate(c, ev);
}

/* answer plays the server: the Event now has rv and the count sent. */
static void
answer(struct events_correlator *c, const struct events_event *ev, const char *rv)
{
	events_correlator_update(c, ev, ev->name, rv, ev->count, ev->first_s);
}

TEST(fill_namespaces_and_checks)
{
	struct events_event ev;
	struct events_ref r = node1;

	CHECK(events_fill(&ev, &node1, EVENTS_NORMAL, "Synced", "ok", T0) == 0);
	CHECK_STR(ev.namespace, "default");          /* cluster-scoped: "default" */
	CHECK_STR(ev.obj_namespace, "");
	CHECK(events_fill(&ev, &svc, EVENTS_WARNING, "SyncLoadBalancerFailed", "x", T0) == 0);
	CHECK_STR(ev.namespace, "shop");
	CHECK_STR(ev.resource_version, "812");

	CHECK(events_fill(&ev, &node1, "Error", "R", "m", T0) == ERR_INVALID);
	CHECK(events_fill(&ev, &node1, NULL, "R", "m", T0) == ERR_INVALID);
	CHECK(events_fill(&ev, NULL, EVENTS_NORMAL, "R", "m", T0) == ERR_INVALID);
	r.name = "a/b";
	CHECK(events_fill(&ev, &r, EVENTS_NORMAL, "R", "m", T0) == ERR_INVALID);
	r.name = "..";
	CHECK(events_fill(&ev, &r, EVENTS_NORMAL, "R", "m", T0) == ERR_INVALID);
	r.name = "";
	CHECK(events_fill(&ev, &r, EVENTS_NORMAL, "R", "m", T0) == ERR_INVALID);
	r = node1;
	r.kind = NULL;
	CHECK(events_fill(&ev, &r, EVENTS_NORMAL, "R", "m", T0) == ERR_INVALID);
	r = svc;
	r.namespace = "shop?x=1";
	CHECK(events_fill(&ev, &r, EVENTS_NORMAL, "R", "m", T0) == ERR_INVALID);
	r = node1;
	char uid[EVENTS_UID_MAX + 2];
	memset(uid, 'u', sizeof(uid) - 1);
	uid[sizeof(uid) - 1] = '\0';
	r.uid = uid;
	CHECK(events_fill(&ev, &r, EVENTS_NORMAL, "R", "m", T0) == ERR_INVALID);
}

TEST(long_messages_are_cut_on_a_character_boundary)
{
	struct events_event ev;
	char msg[EVENTS_MESSAGE_MAX + 16];

	/* 1023 ASCII bytes then "é" (2 bytes): the cut must not split it */
	memset(msg, 'a', EVENTS_MESSAGE_MAX - 1);
	memcpy(msg + EVENTS_MESSAGE_MAX - 1, "\xc3\xa9zz", 5);
	CHECK(events_fill(&ev, &node1, EVENTS_NORMAL, "R", msg, T0) == 0);
	CHECK(strlen(ev.message) == EVENTS_MESSAGE_MAX - 1);
	memcpy(msg + EVENTS_MESSAGE_MAX - 2, "\xc3\xa9zz", 5);
	CHECK(events_fill(&ev, &node1, EVENTS_NORMAL, "R", msg, T0) == 0);
	CHECK(strlen(ev.message) == EVENTS_MESSAGE_MAX);
	CHECK(memcmp(ev.message + EVENTS_MESSAGE_MAX - 2, "\xc3\xa9", 2) == 0);
	CHECK(events_fill(&ev, &node1, EVENTS_NORMAL, NULL, NULL, T0) == 0);
	CHECK_STR(ev.message, "");
}

TEST(first_occurrence_is_created_with_client_go_name)
{
	struct events_correlator *c = events_correlator_new(NULL, NULL);
	struct events_event ev;
	char want[64];

	CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, "Synced", "Node synced successfully",
	    123456789) == EVENTS_CREATE);
	snprintf(want, sizeof(want), "node-1.%llx", (unsigned long long)(T0 + 123456789));
	CHECK_STR(ev.name, want);
	CHECK(strlen(ev.name) == strlen("node-1.") + 16); /* 16 hex digits */
	CHECK(ev.count == 1);
	CHECK(ev.first_s == T0 / S);
	events_correlator_free(c);
}

TEST(identical_repeats_patch_the_same_event)
{
	struct events_correlator *c = events_correlator_new(NULL, "cp-1");
	struct events_event ev;
	char name[EVENTS_EVENT_NAME_MAX + 1];

	CHECK(occur(c, &ev, &svc, EVENTS_NORMAL, "EnsuredLoadBalancer", "Ensured", 0) ==
	    EVENTS_CREATE);
	snprintf(name, sizeof(name), "%s", ev.name);
	answer(c, &ev, "9001");
	for (int i = 2; i <= 5; i++) {
		CHECK(occur(c, &ev, &svc, EVENTS_NORMAL, "EnsuredLoadBalancer", "Ensured",
		    (int64_t)i * 30 * S) == EVENTS_PATCH);
		CHECK_STR(ev.name, name);
		CHECK(ev.count == i);
		CHECK(ev.first_s == T0 / S);        /* firstTimestamp stays */
		CHECK_STR(ev.rv, i == 2 ? "9001" : "");
		answer(c, &ev, "");
	}
	/* the server's count is the one continued from */
	ev.count = 40;
	answer(c, &ev, "9100");
	CHECK(occur(c, &ev, &svc, EVENTS_NORMAL, "EnsuredLoadBalancer", "Ensured", 200 * S) ==
	    EVENTS_PATCH);
	CHECK(ev.count == 41);
	CHECK_STR(ev.rv, "9100");
	events_correlator_free(c);
}

TEST(key_fields_separate_events)
{
	struct events_correlator *c = events_correlator_new(NULL, NULL);
	struct events_event ev;
	struct events_ref r;
	int64_t t = 0;

	CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, "R", "m", t) == EVENTS_CREATE);
	CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, "R", "m2", t += S) == EVENTS_CREATE);
	CHECK(occur(c, &ev, &node1, EVENTS_WARNING, "R", "m", t += S) == EVENTS_CREATE);
	CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, "R2", "m", t += S) == EVENTS_CREATE);
	r = node1;
	r.uid = "another-uid";                       /* a re-created node */
	CHECK(occur(c, &ev, &r, EVENTS_NORMAL, "R", "m", t += S) == EVENTS_CREATE);
	r = node1;
	r.field_path = "spec";
	CHECK(occur(c, &ev, &r, EVENTS_NORMAL, "R", "m", t += S) == EVENTS_CREATE);
	r = node1;
	r.resource_version = "5";                    /* not part of the key */
	CHECK(occur(c, &ev, &r, EVENTS_NORMAL, "R", "m", t += S) == EVENTS_PATCH);
	CHECK(ev.count == 2);
	/* fields are joined with a separator: "ab"+"c" is not "a"+"bc" */
	CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, "ab", "c", t += S) == EVENTS_CREATE);
	CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, "a", "bc", t += S) == EVENTS_CREATE);
	events_correlator_free(c);
}

TEST(aggregation_window_is_ten_minutes_since_the_last_repeat)
{
	struct events_correlator *c = events_correlator_new(NULL, NULL);
	struct events_event ev;
	char first[EVENTS_EVENT_NAME_MAX + 1];

	CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, "R", "m", 0) == EVENTS_CREATE);
	snprintf(first, sizeof(first), "%s", ev.name);
	/* exactly 10 minutes later: still the same Event */
	CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, "R", "m", 600 * S) == EVENTS_PATCH);
	CHECK_STR(ev.name, first);
	/* the window slides with each repeat */
	CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, "R", "m", 1200 * S) == EVENTS_PATCH);
	CHECK(ev.count == 3);
	/* quiet for longer than the window: a new Event, count 1 */
	CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, "R", "m", 1800 * S + 1) == EVENTS_CREATE);
	CHECK(strcmp(ev.name, first) != 0);
	CHECK(ev.count == 1);
	CHECK(ev.first_s == (T0 + 1800 * S) / S);
	events_correlator_free(c);
}

TEST(spam_filter_bucket)
{
	struct events_correlator *c = events_correlator_new(NULL, NULL);
	struct events_event ev;
	char reason[32];
	int64_t t = 0;
	int i;

	/* distinct reasons, so neither counting nor aggregation applies */
	for (i = 0; i < EVENTS_SPAM_BURST; i++) {
		snprintf(reason, sizeof(reason), "Reason%d", i);
		CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, reason, "m", t += NS_PER_MS) ==
		    EVENTS_CREATE);
	}
	CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, "Over", "m", t += NS_PER_MS) == EVENTS_SKIP);
	/* another object has its own bucket */
	CHECK(occur(c, &ev, &svc, EVENTS_NORMAL, "Over", "m", t += NS_PER_MS) == EVENTS_CREATE);
	/* one token back after five minutes, not before */
	CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, "Later", "m", t + 299 * S) == EVENTS_SKIP);
	t += 300 * S + NS_PER_MS;
	CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, "Later2", "m", t) == EVENTS_CREATE);
	CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, "Later3", "m", t + NS_PER_MS) == EVENTS_SKIP);
	/* a skipped repeat still counts (client-go filters after counting):
	 * Reason3 was written once at the start; its repeat now is dropped,
	 * and the next one that gets a token carries count 3 */
	CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, "Reason3", "m", t + 2 * NS_PER_MS) ==
	    EVENTS_SKIP);
	CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, "Reason3", "m", t + 301 * S) == EVENTS_PATCH);
	CHECK(ev.count == 3);
	events_correlator_free(c);
}

TEST(similar_events_are_combined_at_the_tenth_message)
{
	struct events_correlator *c = events_correlator_new(NULL, NULL);
	struct events_event ev;
	char msg[32], combined[EVENTS_EVENT_NAME_MAX + 1];
	int64_t t = 0;

	for (int i = 1; i < EVENTS_SIMILAR_MAX; i++) {
		snprintf(msg, sizeof(msg), "error %d", i);
		CHECK(occur(c, &ev, &svc, EVENTS_WARNING, "SyncLoadBalancerFailed", msg,
		    t += S) == EVENTS_CREATE);
		CHECK_STR(ev.message, msg);
	}
	CHECK(occur(c, &ev, &svc, EVENTS_WARNING, "SyncLoadBalancerFailed", "error 10", t += S) ==
	    EVENTS_CREATE);
	CHECK_STR(ev.message, "(combined from similar events): error 10");
	snprintf(combined, sizeof(combined), "%s", ev.name);
	answer(c, &ev, "77");
	CHECK(occur(c, &ev, &svc, EVENTS_WARNING, "SyncLoadBalancerFailed", "error 11", t += S) ==
	    EVENTS_PATCH);
	CHECK_STR(ev.name, combined);
	CHECK_STR(ev.message, "(combined from similar events): error 11");
	CHECK(ev.count == 2);
	/* another reason is not combined with these */
	CHECK(occur(c, &ev, &svc, EVENTS_WARNING, "Other", "error 12", t += S) == EVENTS_CREATE);
	CHECK_STR(ev.message, "error 12");
	/* ten quiet minutes reset the similar-message set */
	t += 601 * S;
	CHECK(occur(c, &ev, &svc, EVENTS_WARNING, "SyncLoadBalancerFailed", "error 13", t) ==
	    EVENTS_CREATE);
	CHECK_STR(ev.message, "error 13");
	events_correlator_free(c);
}

TEST(cache_is_bounded_and_evicts_the_oldest)
{
	struct events_correlator *c = events_correlator_new(NULL, NULL);
	struct events_event ev;
	struct events_ref r = node1;
	char name[32];

	/* EVENTS_CACHE_MAX + 1 objects: the first one's count is forgotten */
	for (int i = 0; i <= EVENTS_CACHE_MAX; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		r.name = name;
		CHECK(occur(c, &ev, &r, EVENTS_NORMAL, "R", "m", (int64_t)i * NS_PER_MS) ==
		    EVENTS_CREATE);
	}
	r.name = "n0";
	CHECK(occur(c, &ev, &r, EVENTS_NORMAL, "R", "m", 5 * S) == EVENTS_CREATE);
	r.name = "n4096";
	CHECK(occur(c, &ev, &r, EVENTS_NORMAL, "R", "m", 5 * S) == EVENTS_PATCH);
	events_correlator_free(c);
}

TEST(create_body_for_a_node)
{
	struct events_correlator *c = events_correlator_new(NULL, "cp-1");
	struct events_event ev;
	char *body, want[1024];

	CHECK(occur(c, &ev, &node1, EVENTS_NORMAL, "Synced", "Node synced successfully",
	    1500 * NS_PER_MS) == EVENTS_CREATE);
	body = events_body(c, &ev, EVENTS_CREATE);
	CHECK(body != NULL);
	snprintf(want, sizeof(want),
	    "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"%s\","
	    "\"namespace\":\"default\"},\"involvedObject\":{\"kind\":\"Node\",\"name\":\"node-1\","
	    "\"uid\":\"6f1b3d2e-0000-4000-8000-000000000001\",\"apiVersion\":\"v1\"},"
	    "\"reason\":\"Synced\",\"message\":\"Node synced successfully\",\"source\":"
	    "{\"component\":\"cloud-controller-manager\",\"host\":\"cp-1\"},"
	    "\"firstTimestamp\":\"2026-11-21T08:00:01Z\",\"lastTimestamp\":\"2026-11-21T08:00:01Z\","
	    "\"count\":1,\"type\":\"Normal\",\"reportingComponent\":\"cloud-controller-manager\","
	    "\"reportingInstance\":\"cp-1\"}", ev.name);
	CHECK_STR(body, want);
	free(body);
	events_correlator_free(c);
}

TEST(patch_body_and_escaping)
{
	struct events_correlator *c = events_correlator_new("my-ccm", NULL);
	struct events_event ev;
	char *body;

	CHECK(occur(c, &ev, &svc, EVENTS_WARNING, "R", "a \"quoted\" </path>\n", 0) ==
	    EVENTS_CREATE);
	answer(c, &ev, "1");
	CHECK(occur(c, &ev, &svc, EVENTS_WARNING, "R", "a \"quoted\" </path>\n", 61 * S) ==
	    EVENTS_PATCH);
	body = events_body(c, &ev, EVENTS_PATCH);
	CHECK_STR(body, "{\"count\":2,\"lastTimestamp\":\"2026-11-21T08:01:01Z\","
	    "\"message\":\"a \\\"quoted\\\" </path>\\n\"}");
	free(body);
	ev.count = 1;
	body = events_body(c, &ev, EVENTS_CREATE);
	json_object *o = json_tokener_parse(body);
	free(body);
	CHECK(o != NULL);
	json_object *v, *src;
	CHECK(json_object_object_get_ex(o, "source", &src));
	CHECK(json_object_object_get_ex(src, "component", &v));
	CHECK_STR(json_object_get_string(v), "my-ccm");
	CHECK(!json_object_object_get_ex(src, "host", NULL));      /* omitempty */
	CHECK(json_object_object_get_ex(o, "reportingInstance", &v));
	CHECK_STR(json_object_get_string(v), "");
	CHECK(json_object_object_get_ex(o, "involvedObject", &v));
	CHECK(json_object_object_get_ex(v, "namespace", &v));
	CHECK_STR(json_object_get_string(v), "shop");
	CHECK(!json_object_object_get_ex(o, "eventTime", NULL));
	json_object_put(o);
	events_correlator_free(c);
}

TEST(bodies_carry_no_secret_a_server_echoed)
{
	static const char tok[] = "kq7Zr0NUTzv8pX2mWc4bLd9sYa6eHf3j";
	struct events_correlator *c = events_correlator_new(NULL, "cp-1");
	struct events_event ev;
	char *body;

	log_clear_secrets();
	log_add_secret(tok);
	/* the whole token, and a piece of it (a server cutting its echo short) */
	CHECK(occur(c, &ev, &node1, EVENTS_WARNING, "InitializationFailed",
	    "PATCH nodes/node-1: Internal error: Authorization: Bearer "
	    "kq7Zr0NUTzv8pX2mWc4bLd9sYa6eHf3j; retry with pX2mWc4bLd9s", 0) == EVENTS_CREATE);
	body = events_body(c, &ev, EVENTS_CREATE);
	CHECK(strstr(body, "pX2mWc4b") == NULL && strstr(body, "kq7Zr0NU") == NULL);
	CHECK_CONTAINS(body, "Authorization: Bearer [redacted]; retry with [redacted]\"");
	free(body);
	answer(c, &ev, "1");
	/* the repeat's patch carries the message too */
	CHECK(occur(c, &ev, &node1, EVENTS_WARNING, "InitializationFailed",
	    "PATCH nodes/node-1: Internal error: Authorization: Bearer "
	    "kq7Zr0NUTzv8pX2mWc4bLd9sYa6eHf3j; retry with pX2mWc4bLd9s", 5 * S) == EVENTS_PATCH);
	body = events_body(c, &ev, EVENTS_PATCH);
	CHECK(strstr(body, "pX2mWc4b") == NULL);
	CHECK_CONTAINS(body, "Bearer [redacted]");
	free(body);
	log_clear_secrets();
	events_correlator_free(c);
}

static double
metric_line(const char *series)
{
	char *text, *p, line[256];
	size_t len;
	double v = 0;

	/* at the start of a line, not in the # HELP text */
	snprintf(line, sizeof(line), "\n%s", series);
	if (metrics_render(&text, &len) < 0)
		return -1;
	if ((p = strstr(text, line)) != NULL)
		v = strtod(p + strlen(line), NULL);
	free(text);
	return v;
}

static int
load_kc(struct kubeconfig *kc, const char *server)
{
	char buf[512];
	struct errbuf e;
	int n = snprintf(buf, sizeof(buf),
	    "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\n"
	    "users:\n- name: u\n  user: {}\ncontexts:\n- name: x\n  context:\n    cluster: c\n"
	    "    user: u\ncurrent-context: x\n", server);
	return kubeconfig_load_buffer(buf, (size_t)n, "test", "/", NULL, kc, &e);
}

TEST(full_queue_drops_and_counts)
{
	struct kubeconfig kc;
	struct events *ev;
	struct events_config cfg = { .queue_max = 5 };
	struct errbuf e = { "" };
	double before;

	CHECK(load_kc(&kc, "http://127.0.0.1:9") == 0);
	CHECK(events_new(&kc, &cfg, &ev, &e) == 0);
	before = metric_line("bootccm_events_dropped_total{reason=\"queue_full\"} ");
	/* no thread started: nothing drains */
	for (int i = 0; i < 8; i++)
		events_recordf(ev, &node1, EVENTS_NORMAL, "R", "message %d", i);
	CHECK(events_queue_length(ev) == 5);
	CHECK(metric_line("bootccm_events_dropped_total{reason=\"queue_full\"} ") == before + 3);
	CHECK(metric_line("bootccm_events_queue_length ") == 5);
	/* bad input is dropped, not queued */
	events_record(ev, &node1, "Bogus", "R", "m");
	CHECK(metric_line("bootccm_events_dropped_total{reason=\"invalid\"} ") >= 1);
	events_free(ev);  /* frees the queued ones */
	CHECK(metric_line("bootccm_events_queue_length ") == 0);
	events_record(NULL, &node1, EVENTS_NORMAL, "R", "m"); /* no recorder: no-op */
	kubeconfig_free(&kc);
}

static int64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * S + ts.tv_nsec;
}

TEST(api_server_down_the_caller_never_waits)
{
	struct kubeconfig kc;
	struct events *ev;
	struct events_config cfg = { .retry_interval_ns = 20 * NS_PER_MS, .max_tries = 1 };
	struct errbuf e = { "" };
	int64_t worst = 0, t0;
	double retries_before = metric_line("bootccm_events_dropped_total{reason=\"retries\"} ");

	/* port 9 (discard) on loopback: connections are refused */
	CHECK(load_kc(&kc, "http://127.0.0.1:9") == 0);
	CHECK(events_new(&kc, &cfg, &ev, &e) == 0);
	CHECK(events_start(ev, &e) == 0);
	for (int i = 0; i < 200; i++) {
		t0 = mono_ns();
		events_recordf(ev, &node1, EVENTS_WARNING, "R", "failure %d", i % 3);
		if (mono_ns() - t0 > worst)
			worst = mono_ns() - t0;
	}
	CHECK(worst < 20 * NS_PER_MS);
	/* the first event is given up after its tries (however long the
	 * client itself retries a refused connection) */
	t0 = mono_ns();
	while (metric_line("bootccm_events_dropped_total{reason=\"retries\"} ") == retries_before &&
	    mono_ns() - t0 < 15 * S) {
		struct timespec ts = { 0, 10 * NS_PER_MS };
		nanosleep(&ts, NULL);
	}
	CHECK(metric_line("bootccm_events_dropped_total{reason=\"retries\"} ") > retries_before);
	/* stop drops what is queued at the flush deadline; it waits only for a
	 * request in flight */
	t0 = mono_ns();
	events_stop(ev, 100 * NS_PER_MS);
	CHECK(mono_ns() - t0 < 10 * S);
	CHECK(events_queue_length(ev) == 0);
	CHECK(metric_line("bootccm_events_queue_length ") == 0);
	events_free(ev);
	kubeconfig_free(&kc);
}

TEST_MAIN()
