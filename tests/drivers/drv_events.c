/* drv_events.c - runs the Event recorder against an API server, driven by
 * commands on stdin, reporting as JSON lines on stdout, for
 * tests/integration/test_events.py.
 *
 *   drv_events KUBECONFIG [--retry-interval D] [--queue-max N] [--max-tries N]
 *       [--host H] [--component C] [-v N]
 *
 * Commands, one a line, fields separated by tabs (an empty namespace means a
 * cluster-scoped object):
 *   record KIND NAMESPACE NAME UID TYPE REASON MESSAGE
 *   repeat N KIND NAMESPACE NAME UID TYPE REASON MESSAGE
 *   metrics
 *   stop FLUSH-DURATION
 * record and repeat answer {"event":"recorded","n":N,"max_us":..,"total_us":..}
 * (how long the events_record calls took); metrics and stop answer with the
 * recorder's counters. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/flags.h"
#include "http/http.h"
#include "kube/events.h"
#include "config/kubeconfig.h"
#include "base/log.h"
#include "base/metrics.h"

#define DRV_LINE_MAX 8192 /* bytes: one command */

static int64_t
drv_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* drv_metric reads one series' value from the rendered registry. */
static double
drv_metric(const char *text, const char *series)
{
	char line[256];
	const char *p;

	snprintf(line, sizeof(line), "\n%s ", series);
	if ((p = strstr(text, line)) == NULL)
		return 0;
	return strtod(p + strlen(line), NULL);
}

static void
drv_metrics(const char *event, struct events *ev)
{
	static const char *reasons[] = { "queue_full", "spam", "rejected", "retries",
	    "shutdown", "invalid" };
	char *text, series[128];
	size_t len;

	if (metrics_render(&text, &len) < 0)
		return;
	printf("{\"event\":\"%s\",\"sent\":%.0f,\"aggregated\":%.0f,\"queue\":%zu", event,
	    drv_metric(text, "bootccm_events_sent_total"),
	    drv_metric(text, "bootccm_events_aggregated_total"), events_queue_length(ev));
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
		snprintf(series, sizeof(series), "bootccm_events_dropped_total{reason=\"%s\"}",
		    reasons[i]);
		printf(",\"dropped_%s\":%.0f", reasons[i], drv_metric(text, series));
	}
	printf("}\n");
	fflush(stdout);
	free(text);
}

/* drv_split cuts line at tabs into at most max fields. */
static int
drv_split(char *line, char **f, int max)
{
	int n = 0;

	while (n < max) {
		f[n++] = line;
		char *tab = strchr(line, '\t');
		if (tab == NULL)
			break;
		*tab = '\0';
		line = tab + 1;
	}
	return n;
}

static int
drv_record(struct events *ev, char **f, long times)
{
	struct events_ref ref = { .kind = f[0], .namespace = f[1], .name = f[2], .uid = f[3],
	    .api_version = "v1" };
	int64_t worst = 0, total = 0;

	for (long i = 0; i < times; i++) {
		int64_t t0 = drv_mono_us();
		events_record(ev, &ref, f[4], f[5], f[6]);
		int64_t d = drv_mono_us() - t0;
		total += d;
		if (d > worst)
			worst = d;
	}
	printf("{\"event\":\"recorded\",\"n\":%ld,\"max_us\":%" PRId64 ",\"total_us\":%" PRId64 "}\n",
	    times, worst, total);
	fflush(stdout);
	return 0;
}

int
main(int argc, char **argv)
{
	struct kubeconfig kc;
	struct events_config cfg = { .host = NULL };
	struct events *ev;
	struct errbuf e = { "" };
	char line[DRV_LINE_MAX], *f[9];
	int v = 2;

	if (argc < 2) {
		fprintf(stderr, "usage: drv_events KUBECONFIG [options]\n");
		return 2;
	}
	for (int i = 2; i < argc; i += 2) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		char *end = NULL;
		if (val == NULL) {
			fprintf(stderr, "drv_events: %s needs a value\n", a);
			return 2;
		}
		if (strcmp(a, "--retry-interval") == 0) {
			if (duration_parse(val, &cfg.retry_interval_ns) < 0)
				return 2;
		} else if (strcmp(a, "--queue-max") == 0) {
			cfg.queue_max = (size_t)strtoul(val, &end, 10);
		} else if (strcmp(a, "--max-tries") == 0) {
			cfg.max_tries = (int)strtol(val, &end, 10);
		} else if (strcmp(a, "--host") == 0) {
			cfg.host = val;
		} else if (strcmp(a, "--component") == 0) {
			cfg.component = val;
		} else if (strcmp(a, "-v") == 0) {
			v = (int)strtol(val, &end, 10);
		} else {
			fprintf(stderr, "drv_events: unknown option %s\n", a);
			return 2;
		}
		if (end && *end != '\0') {
			fprintf(stderr, "drv_events: bad number for %s\n", a);
			return 2;
		}
	}
	log_init(v, LOG_TEXT, 2);
	signal(SIGPIPE, SIG_IGN);
	if (http_global_init(&e) < 0 || kubeconfig_load(argv[1], NULL, &kc, &e) < 0 ||
	    events_new(&kc, &cfg, &ev, &e) < 0 || events_start(ev, &e) < 0) {
		fprintf(stderr, "drv_events: %s\n", e.msg);
		return 1;
	}
	printf("{\"event\":\"ready\"}\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		int n = drv_split(line, f, 9);
		if (strcmp(f[0], "record") == 0 && n == 8) {
			drv_record(ev, f + 1, 1);
		} else if (strcmp(f[0], "repeat") == 0 && n == 9) {
			char *end;
			long times = strtol(f[1], &end, 10);
			if (*end != '\0' || times < 1) {
				fprintf(stderr, "drv_events: bad count %s\n", f[1]);
				return 2;
			}
			drv_record(ev, f + 2, times);
		} else if (strcmp(f[0], "metrics") == 0) {
			drv_metrics("metrics", ev);
		} else if (strcmp(f[0], "stop") == 0 && n == 2) {
			int64_t flush, t0 = drv_mono_us();
			if (duration_parse(f[1], &flush) < 0)
				return 2;
			events_stop(ev, flush);
			printf("{\"event\":\"stop_took\",\"us\":%" PRId64 "}\n", drv_mono_us() - t0);
			drv_metrics("stopped", ev);
			break;
		} else {
			fprintf(stderr, "drv_events: bad command \"%s\" (%d fields)\n", f[0], n);
			return 2;
		}
	}
	events_free(ev);
	kubeconfig_free(&kc);
	return 0;
}
