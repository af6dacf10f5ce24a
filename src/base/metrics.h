/* metrics.h - a process-wide Prometheus registry: counters, gauges and
 * histograms with labels, rendered in the text exposition format (0.0.4).
 *
 * Contract: register metrics once at start-up (metrics_counter & co. return a
 * handle that lives for the process); update them from any thread (one lock,
 * held only for the update). Label values are passed as const char *
 * arguments, exactly as many as label names were registered. Each metric
 * keeps at most METRICS_SERIES_MAX label combinations; updates past that are
 * counted in bootccm_metrics_series_dropped_total instead of growing memory.
 * Never logs; out of memory is fatal (xalloc). */
#ifndef BOOTCCM_METRICS_H
#define BOOTCCM_METRICS_H

#include <stddef.h>

#define METRICS_SERIES_MAX 2000 /* label combinations per metric */
#define METRICS_LABELS_MAX 6    /* label names per metric */

struct metric;

/* labels: comma-separated label names ("verb,resource,code") or NULL. */
struct metric *metrics_counter(const char *name, const char *help,
    const char *labels);
struct metric *metrics_gauge(const char *name, const char *help,
    const char *labels);
/* buckets: ascending upper bounds; +Inf is implied. */
struct metric *metrics_histogram(const char *name, const char *help,
    const char *labels, const double *buckets, size_t nbuckets);

void metric_add(struct metric *m, double v, ...);     /* counters, gauges */
void metric_set(struct metric *m, double v, ...);     /* gauges */
void metric_observe(struct metric *m, double v, ...); /* histograms */

/* metric_value returns a series' current value (a histogram's count), or -1
 * when the series does not exist; for tests. */
double metric_value(struct metric *m, ...);

/* metrics_render writes every metric in the text format into a malloc'd
 * buffer. It cannot fail: it returns 0. */
int metrics_render(char **ret, size_t *ret_len);

/* Common bucket sets (seconds). */
extern const double metrics_buckets_latency[];   /* 1 ms .. 60 s */
extern const size_t metrics_buckets_latency_n;

#endif
