/* test_lease.c - leader election pieces: MicroTime, the Lease record's
 * decoding and encoding, expiry judged on the local clock, client-go's
 * acquire/renew decision, the health rule, configuration checks. */
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "harness.h"
#include "kube/lease.h"
#include "base/rfc3339.h"

#define S NS_PER_S

static const int64_t NOV21 = 1795248000LL; /* 2026-11-21T08:00:00Z */

TEST(microtime_has_exactly_six_digits)
{
	char b[RFC3339_MAX];

	CHECK(rfc3339_format_micro(NOV21 * S, b, sizeof(b)) == 0);
	CHECK_STR(b, "2026-11-21T08:00:00.000000Z");
	CHECK(rfc3339_format_micro(NOV21 * S + 123456789, b, sizeof(b)) == 0);
	CHECK_STR(b, "2026-11-21T08:00:00.123456Z"); /* truncated, not rounded */
	CHECK(rfc3339_format_micro(NOV21 * S + 1000, b, sizeof(b)) == 0);
	CHECK_STR(b, "2026-11-21T08:00:00.000001Z");
	CHECK(rfc3339_format_micro(0, b, sizeof(b)) == 0);
	CHECK_STR(b, "1970-01-01T00:00:00.000000Z");
	CHECK(rfc3339_format_micro(1709251199LL * S + 999999999, b, sizeof(b)) == 0);
	CHECK_STR(b, "2024-02-29T23:59:59.999999Z");
	CHECK(rfc3339_format_micro(-1, b, sizeof(b)) == 0); /* 1 ns before the epoch */
	CHECK_STR(b, "1969-12-31T23:59:59.999999Z");
	CHECK(rfc3339_format_micro(INT64_MAX, b, sizeof(b)) == 0); /* the last representable */
	CHECK_STR(b, "2262-04-11T23:47:16.854775Z");
	CHECK(rfc3339_format_micro(NOV21 * S, b, 27) == ERR_INVALID); /* no room for the NUL */
}

TEST(microtime_parse)
{
	int64_t t;

	CHECK(rfc3339_parse_ns("2026-11-21T08:00:00.000000Z", &t) == 0 && t == NOV21 * S);
	CHECK(rfc3339_parse_ns("2026-11-21T08:00:00Z", &t) == 0 && t == NOV21 * S);
	CHECK(rfc3339_parse_ns("2026-11-21T10:00:00.5+02:00", &t) == 0 &&
	    t == NOV21 * S + 500000000);
	CHECK(rfc3339_parse_ns("2026-11-21T07:30:00.123456789-00:30", &t) == 0 &&
	    t == NOV21 * S + 123456789);
	CHECK(rfc3339_parse_ns("2024-02-29T23:59:59.999999Z", &t) == 0 &&
	    t == 1709251199LL * S + 999999000);
	CHECK(rfc3339_parse_ns("2023-02-29T00:00:00Z", &t) == ERR_INVALID);
	CHECK(rfc3339_parse_ns("2026-11-21 08:00:00Z", &t) == ERR_INVALID);
	CHECK(rfc3339_parse_ns("2026-11-21T08:00:00", &t) == ERR_INVALID);
	CHECK(rfc3339_parse_ns("2026-11-21T08:00:00.Z", &t) == ERR_INVALID);
	CHECK(rfc3339_parse_ns("2026-13-21T08:00:00Z", &t) == ERR_INVALID);
	CHECK(rfc3339_parse_ns("2026-11-21T24:00:00Z", &t) == ERR_INVALID);
	CHECK(rfc3339_parse_ns("2026-11-21T08:00:00Zjunk", &t) == ERR_INVALID);
	CHECK(rfc3339_parse_ns("", &t) == ERR_INVALID);
	CHECK(rfc3339_parse_ns(NULL, &t) == ERR_INVALID);
	/* Go's time.Parse(RFC3339), which the API server uses, refuses a
	 * lowercase 't' or 'z'; the elector once took them, no more */
	CHECK(rfc3339_parse_ns("2026-11-21t08:00:00.000000Z", &t) == ERR_INVALID);
	CHECK(rfc3339_parse_ns("2026-11-21T08:00:00.000000z", &t) == ERR_INVALID);
}

TEST(microtime_round_trip)
{
	char b[RFC3339_MAX];
	int64_t t;

	static const int64_t neg[] = { -1, -999, -1000, -1001, -5 * S - 7, -86400 * S };

	for (size_t i = 0; i < sizeof(neg) / sizeof(neg[0]); i++) {
		CHECK(rfc3339_format_micro(neg[i], b, sizeof(b)) == 0);
		CHECK(rfc3339_parse_ns(b, &t) == 0);
		CHECK(t == -((-neg[i] + 999) / 1000) * 1000);
	}
	for (int64_t x = 0; x < 3000000000LL * S; x = x * 3 + 987654321) {
		CHECK(rfc3339_format_micro(x, b, sizeof(b)) == 0);
		CHECK(strlen(b) == 27 && b[19] == '.' && b[26] == 'Z');
		CHECK(rfc3339_parse_ns(b, &t) == 0);
		int64_t us = x >= 0 ? x / 1000 * 1000 : -((-x + 999) / 1000) * 1000;
		CHECK(t == us);
	}
}

static json_object *
parse(const char *s)
{
	return json_tokener_parse(s);
}

TEST(record_decode_from_a_server_answer)
{
	struct lease_record r;
	struct errbuf e = { "" };
	json_object *o = parse("{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
	    "\"metadata\":{\"name\":\"cloud-controller-manager\",\"namespace\":\"kube-system\","
	    "\"resourceVersion\":\"1042\",\"managedFields\":[{\"manager\":\"x\"}]},"
	    "\"spec\":{\"acquireTime\":\"2026-11-21T08:00:00.000000Z\",\"holderIdentity\":"
	    "\"cp-1_0b9c8a3e-5f1d-4c2b-9a7e-3d2f1e0c4b5a\",\"leaseDurationSeconds\":15,"
	    "\"leaseTransitions\":3,\"renewTime\":\"2026-11-21T08:00:10.250000Z\"}}");

	CHECK(o != NULL);
	CHECK(lease_record_decode(o, &r, &e) == 0);
	json_object_put(o);
	CHECK_STR(r.holder, "cp-1_0b9c8a3e-5f1d-4c2b-9a7e-3d2f1e0c4b5a");
	CHECK(r.duration_s == 15);
	CHECK(r.transitions == 3);
	CHECK(r.acquire_ns == NOV21 * S);
	CHECK(r.renew_ns == NOV21 * S + 10250000000LL);
}

TEST(record_decode_absent_fields_are_zero)
{
	struct lease_record r;
	struct errbuf e = { "" };
	json_object *o = parse("{\"metadata\":{\"name\":\"x\"}}");

	memset(&r, 0x55, sizeof(r));
	CHECK(lease_record_decode(o, &r, &e) == 0);
	json_object_put(o);
	CHECK_STR(r.holder, "");
	CHECK(r.duration_s == 0 && r.transitions == 0 && r.acquire_ns == 0 && r.renew_ns == 0);

	o = parse("{\"spec\":{\"holderIdentity\":null,\"renewTime\":null}}");
	CHECK(lease_record_decode(o, &r, &e) == 0);
	json_object_put(o);
	CHECK_STR(r.holder, "");
}

TEST(record_decode_refuses_bad_fields)
{
	static const char *bad[] = {
		"{\"spec\":{\"holderIdentity\":5}}",
		"{\"spec\":{\"leaseDurationSeconds\":\"15\"}}",
		"{\"spec\":{\"leaseDurationSeconds\":1.5}}",
		"{\"spec\":{\"leaseTransitions\":9999999999}}",
		"{\"spec\":{\"renewTime\":\"yesterday\"}}",
		"{\"spec\":{\"acquireTime\":17}}",
		"{\"spec\":{\"renewTime\":\"2026-11-21t08:00:00.000000Z\"}}",
		"{\"spec\":{\"holderIdentity\":\"a\\u0000b\"}}",
		"{\"spec\":[]}",
		"[]",
	};
	struct lease_record r;
	struct errbuf e = { "" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_object *o = parse(bad[i]);
		CHECK(o != NULL);
		snprintf(r.holder, sizeof(r.holder), "untouched");
		int rc = lease_record_decode(o, &r, &e);
		json_object_put(o);
		CHECK(rc == ERR_INVALID);
		CHECK_STR(r.holder, "untouched");
		CHECK(e.msg[0] != '\0');
	}
	char big[LEASE_HOLDER_MAX + 64];
	snprintf(big, sizeof(big), "{\"spec\":{\"holderIdentity\":\"%0*d\"}}", LEASE_HOLDER_MAX, 7);
	json_object *o = parse(big);
	CHECK(lease_record_decode(o, &r, &e) == ERR_INVALID);
	json_object_put(o);
	CHECK_CONTAINS(e.msg, "holderIdentity");
}

TEST(record_spec_is_what_client_go_writes)
{
	struct lease_record r = { .duration_s = 15, .transitions = 2 };
	json_object *spec;

	snprintf(r.holder, sizeof(r.holder), "cp-1_abc");
	r.acquire_ns = NOV21 * S + 1500;
	r.renew_ns = NOV21 * S + 2 * S + 999999999;
	spec = lease_record_spec(&r);
	CHECK(spec != NULL);
	CHECK_STR(json_object_to_json_string_ext(spec, JSON_C_TO_STRING_PLAIN),
	    "{\"holderIdentity\":\"cp-1_abc\",\"leaseDurationSeconds\":15,"
	    "\"acquireTime\":\"2026-11-21T08:00:00.000001Z\","
	    "\"renewTime\":\"2026-11-21T08:00:02.999999Z\",\"leaseTransitions\":2}");
	json_object_put(spec);

	/* a release: holderIdentity present and empty */
	memset(&r, 0, sizeof(r));
	r.duration_s = 1;
	r.acquire_ns = r.renew_ns = NOV21 * S;
	r.transitions = 4;
	spec = lease_record_spec(&r);
	CHECK(spec != NULL);
	CHECK_STR(json_object_to_json_string_ext(spec, JSON_C_TO_STRING_PLAIN),
	    "{\"holderIdentity\":\"\",\"leaseDurationSeconds\":1,"
	    "\"acquireTime\":\"2026-11-21T08:00:00.000000Z\","
	    "\"renewTime\":\"2026-11-21T08:00:00.000000Z\",\"leaseTransitions\":4}");
	json_object_put(spec);
}

TEST(record_decode_encode_round_trip)
{
	struct lease_record a = { .duration_s = 40, .transitions = 7 }, b;
	struct errbuf e = { "" };
	json_object *lease = json_object_new_object(), *spec;

	snprintf(a.holder, sizeof(a.holder), "node-a_1234");
	a.acquire_ns = NOV21 * S + 123456000;
	a.renew_ns = NOV21 * S + 654321000;
	spec = lease_record_spec(&a);
	json_object_object_add(lease, "spec", spec);
	CHECK(lease_record_decode(lease, &b, &e) == 0);
	json_object_put(lease);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0);
}

static struct lease_record
rec(const char *holder, int duration, int64_t renew_unix, int transitions)
{
	struct lease_record r;

	memset(&r, 0, sizeof(r));
	snprintf(r.holder, sizeof(r.holder), "%s", holder);
	r.duration_s = duration;
	r.acquire_ns = NOV21 * S;
	r.renew_ns = renew_unix;
	r.transitions = transitions;
	return r;
}

TEST(expiry_counts_from_the_local_observation)
{
	struct lease_observed o = { .have = 0 };
	struct lease_record r = rec("other", 15, NOV21 * S, 0);
	int64_t t0 = 1000 * S; /* the elector's own clock, unrelated to Unix time */

	CHECK(!lease_valid(&o, t0));
	lease_observe(&o, &r, t0);
	CHECK(lease_valid(&o, t0));
	CHECK(lease_valid(&o, t0 + 15 * S - 1));
	CHECK(!lease_valid(&o, t0 + 15 * S));

	/* the same record read again does not move the observed time */
	lease_observe(&o, &r, t0 + 10 * S);
	CHECK(o.time_ns == t0);
	CHECK(!lease_valid(&o, t0 + 15 * S));

	/* a renewal (any change) restarts the clock at the time it is seen */
	r.renew_ns += 2 * S;
	lease_observe(&o, &r, t0 + 12 * S);
	CHECK(o.time_ns == t0 + 12 * S);
	CHECK(lease_valid(&o, t0 + 26 * S));
	CHECK(!lease_valid(&o, t0 + 27 * S));
}

TEST(remote_renew_time_is_not_trusted)
{
	/* a holder whose clock is an hour behind, or a day ahead: both valid
	 * for exactly leaseDurationSeconds after we first saw them */
	int64_t t0 = 50 * S;
	struct lease_record past = rec("slow-clock", 10, NOV21 * S - 3600 * S, 0);
	struct lease_record future = rec("fast-clock", 10, NOV21 * S + 86400 * S, 0);
	struct lease_observed a = { .have = 0 }, b = { .have = 0 };
	struct lease_record w;

	lease_observe(&a, &past, t0);
	lease_observe(&b, &future, t0);
	CHECK(lease_decide(&a, "me", 15, t0 + 9 * S, NOV21 * S, &w) == LEASE_HELD);
	CHECK(lease_decide(&b, "me", 15, t0 + 9 * S, NOV21 * S, &w) == LEASE_HELD);
	CHECK(lease_decide(&a, "me", 15, t0 + 10 * S, NOV21 * S, &w) == LEASE_ACQUIRE);
	CHECK(lease_decide(&b, "me", 15, t0 + 10 * S, NOV21 * S, &w) == LEASE_ACQUIRE);
}

TEST(decide_like_try_acquire_or_renew)
{
	struct lease_observed o = { .have = 0 };
	struct lease_record r = rec("other", 15, NOV21 * S, 4), w;
	int64_t now_unix = NOV21 * S + 77 * S;

	lease_observe(&o, &r, 0);
	/* held and valid */
	CHECK(lease_decide(&o, "me", 15, 14 * S, now_unix, &w) == LEASE_HELD);
	/* expired: take it, one more transition, acquireTime = renewTime = now */
	CHECK(lease_decide(&o, "me", 30, 15 * S, now_unix, &w) == LEASE_ACQUIRE);
	CHECK_STR(w.holder, "me");
	CHECK(w.duration_s == 30);
	CHECK(w.transitions == 5);
	CHECK(w.acquire_ns == now_unix && w.renew_ns == now_unix);

	/* released (holderIdentity ""): taken at once although "valid" */
	struct lease_record rel = rec("", 1, NOV21 * S, 5);
	lease_observe(&o, &rel, 20 * S);
	CHECK(lease_valid(&o, 20 * S));
	CHECK(lease_decide(&o, "me", 15, 20 * S, now_unix, &w) == LEASE_ACQUIRE);
	CHECK(w.transitions == 6);

	/* ours: renew, keeping acquireTime and transitions, even when our own
	 * lease lapsed (another would have changed the record) */
	struct lease_record mine = rec("me", 15, NOV21 * S, 9);
	mine.acquire_ns = NOV21 * S - 500 * S;
	lease_observe(&o, &mine, 30 * S);
	CHECK(lease_decide(&o, "me", 15, 31 * S, now_unix, &w) == LEASE_RENEW);
	CHECK(w.acquire_ns == NOV21 * S - 500 * S);
	CHECK(w.transitions == 9);
	CHECK(w.renew_ns == now_unix);
	CHECK(lease_decide(&o, "me", 15, 100 * S, now_unix, &w) == LEASE_RENEW);
	CHECK(w.transitions == 9);

	/* identities compare exactly */
	CHECK(lease_decide(&o, "me2", 15, 31 * S, now_unix, &w) == LEASE_HELD);
}

TEST(health_rule)
{
	int64_t d = 15 * S;

	CHECK(lease_health(0, 0, d, 1000 * S));               /* standby: always healthy */
	CHECK(lease_health(1, 100 * S, d, 100 * S + d + LEASE_HEALTH_TIMEOUT_NS));
	CHECK(!lease_health(1, 100 * S, d, 100 * S + d + LEASE_HEALTH_TIMEOUT_NS + 1));
}

static void
noop(void *arg)
{
	(void)arg;
}

TEST(config_checks)
{
	struct kubeconfig kc;
	struct lease_config c = {
		.namespace = "kube-system", .name = "cloud-controller-manager",
		.lease_duration_ns = 15 * S, .renew_deadline_ns = 10 * S,
		.retry_period_ns = 2 * S, .on_started_leading = noop,
		.on_stopped_leading = noop,
	}, bad;
	struct lease *l = NULL;
	struct errbuf e = { "" };
	char host[256];

	memset(&kc, 0, sizeof(kc));
	CHECK(lease_new(&kc, &c, &l, &e) == 0);
	/* "<hostname>_<uuid>" */
	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = '\0';
	const char *id = lease_identity(l);
	CHECK(strncmp(id, host, strlen(host)) == 0 && id[strlen(host)] == '_');
	CHECK(strlen(id + strlen(host) + 1) == 36 && id[strlen(host) + 1 + 14] == '4');
	CHECK(!lease_is_leader(l));
	CHECK(lease_healthz(l, &e) == 0);
	lease_free(l);

	bad = c;
	bad.identity = "fixed-id";
	CHECK(lease_new(&kc, &bad, &l, &e) == 0);
	CHECK_STR(lease_identity(l), "fixed-id");
	lease_free(l);

	bad = c;
	bad.renew_deadline_ns = 15 * S;
	CHECK(lease_new(&kc, &bad, &l, &e) == ERR_INVALID);
	/* 2.5 s is written as leaseDurationSeconds 2: a 2.2 s deadline is too long */
	bad = c;
	bad.lease_duration_ns = 2500 * NS_PER_MS;
	bad.renew_deadline_ns = 2200 * NS_PER_MS;
	bad.retry_period_ns = 500 * NS_PER_MS;
	CHECK(lease_new(&kc, &bad, &l, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "whole seconds");
	bad.renew_deadline_ns = 1500 * NS_PER_MS;
	CHECK(lease_new(&kc, &bad, &l, &e) == 0);
	lease_free(l);
	bad = c;
	bad.retry_period_ns = 9 * S; /* 10 <= 1.2 x 9 */
	CHECK(lease_new(&kc, &bad, &l, &e) == ERR_INVALID);
	bad = c;
	bad.lease_duration_ns = 900 * NS_PER_MS;
	CHECK(lease_new(&kc, &bad, &l, &e) == ERR_INVALID);
	bad = c;
	bad.namespace = "Kube_System";
	CHECK(lease_new(&kc, &bad, &l, &e) == ERR_INVALID);
	bad = c;
	bad.name = "a/b";
	CHECK(lease_new(&kc, &bad, &l, &e) == ERR_INVALID);
	bad = c;
	bad.name = "ccm.example-1.io";
	CHECK(lease_new(&kc, &bad, &l, &e) == 0);
	lease_free(l);
	bad = c;
	bad.on_stopped_leading = NULL;
	CHECK(lease_new(&kc, &bad, &l, &e) == ERR_INVALID);
}


/* lease_config_check: what the daemon runs at parse, with the extremes of
 * the 64-bit range (UBSan: no overflow in its arithmetic). */
TEST(config_check_extremes)
{
	struct lease_config c = { .namespace = "kube-system", .name = "cloud-controller-manager",
	    .lease_duration_ns = 15 * NS_PER_S, .renew_deadline_ns = 10 * NS_PER_S,
	    .retry_period_ns = 2 * NS_PER_S };
	struct errbuf e;

	CHECK(lease_config_check(&c, &e) == 0);
	c.lease_duration_ns = INT64_MAX;
	CHECK(lease_config_check(&c, &e) == ERR_INVALID);  /* past int32 seconds */
	c.lease_duration_ns = 15 * NS_PER_S;
	c.retry_period_ns = 7686143364045646500LL;
	CHECK(lease_config_check(&c, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "1.2 x the retry period");
	c.retry_period_ns = INT64_MAX;
	c.renew_deadline_ns = INT64_MAX;
	CHECK(lease_config_check(&c, &e) == ERR_INVALID);
	c.retry_period_ns = INT64_MIN;
	CHECK(lease_config_check(&c, &e) == ERR_INVALID);
	c.retry_period_ns = 2 * NS_PER_S;
	c.renew_deadline_ns = 10 * NS_PER_S;
	c.name = "../x%y";
	CHECK(lease_config_check(&c, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "lease name \"../x%y\"");
	c.name = "a.b-c";
	c.namespace = "a.b";
	CHECK(lease_config_check(&c, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "namespace");
	c.namespace = "kube-system";
	CHECK(lease_config_check(&c, &e) == 0);
}

TEST_MAIN()
