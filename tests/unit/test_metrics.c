/* test_metrics.c - registry, labels, histograms, text format, threads. */
#include <pthread.h>
#include <stdlib.h>

#include "harness.h"
#include "base/metrics.h"

static struct metric *reqs, *depth, *lat, *plain;

__attribute__((constructor)) static void
reg(void)
{
	reqs = metrics_counter("t_requests_total", "Requests.", "verb,code");
	depth = metrics_gauge("t_depth", "Depth.", "name");
	static const double b[] = { 0.1, 1 };
	lat = metrics_histogram("t_latency_seconds", "Latency.", "name", b, 2);
	plain = metrics_counter("t_plain_total", "No labels.", NULL);
}

TEST(counters_and_gauges)
{
	metric_add(reqs, 1, "get", "200");
	metric_add(reqs, 2, "get", "200");
	metric_add(reqs, 1, "patch", "409");
	metric_set(depth, 5, "node");
	metric_set(depth, 3, "node");
	metric_add(plain, 1);
	CHECK(metric_value(reqs, "get", "200") == 3);
	CHECK(metric_value(reqs, "patch", "409") == 1);
	CHECK(metric_value(reqs, "put", "200") == -1);
	CHECK(metric_value(depth, "node") == 3);
	CHECK(metric_value(plain) == 1);
}

TEST(text_format)
{
	char *out;
	size_t len;
	metric_observe(lat, 0.05, "node");
	metric_observe(lat, 0.5, "node");
	metric_observe(lat, 7, "node");
	metric_add(reqs, 1, "list", "a\"b\\c\nd");
	CHECK(metrics_render(&out, &len) == 0);
	CHECK(len == strlen(out));
	CHECK_CONTAINS(out, "# HELP t_requests_total Requests.\n# TYPE t_requests_total counter\n");
	CHECK_CONTAINS(out, "t_requests_total{verb=\"get\",code=\"200\"} 3\n");
	CHECK_CONTAINS(out, "code=\"a\\\"b\\\\c\\nd\"");
	CHECK_CONTAINS(out, "# TYPE t_latency_seconds histogram\n");
	CHECK_CONTAINS(out, "t_latency_seconds_bucket{name=\"node\",le=\"0.1\"} 1\n");
	CHECK_CONTAINS(out, "t_latency_seconds_bucket{name=\"node\",le=\"1\"} 2\n");
	CHECK_CONTAINS(out, "t_latency_seconds_bucket{name=\"node\",le=\"+Inf\"} 3\n");
	CHECK_CONTAINS(out, "t_latency_seconds_sum{name=\"node\"} 7.55\n");
	CHECK_CONTAINS(out, "t_latency_seconds_count{name=\"node\"} 3\n");
	CHECK_CONTAINS(out, "t_plain_total 1\n");
	free(out);
}

TEST(series_cap)
{
	struct metric *many = metrics_counter("t_many_total", "Many.", "i");
	char v[16];
	for (int i = 0; i < METRICS_SERIES_MAX + 5; i++) {
		snprintf(v, sizeof(v), "%d", i);
		metric_add(many, 1, v);
	}
	snprintf(v, sizeof(v), "%d", METRICS_SERIES_MAX + 1);
	CHECK(metric_value(many, v) == -1);
	char *out;
	size_t len;
	CHECK(metrics_render(&out, &len) == 0);
	CHECK_CONTAINS(out, "bootccm_metrics_series_dropped_total 5\n");
	free(out);
}

static void *
hammer(void *arg)
{
	(void)arg;
	for (int i = 0; i < 10000; i++) {
		metric_add(reqs, 1, "watch", "200");
		metric_observe(lat, 0.2, "t");
	}
	return NULL;
}

TEST(threads)
{
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, hammer, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK(metric_value(reqs, "watch", "200") == 40000);
	CHECK(metric_value(lat, "t") == 40000);
}

TEST_MAIN()
