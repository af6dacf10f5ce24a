/* metrics.c - counters, gauges and histograms, Prometheus text format. */
#include "base/metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "base/err.h"
#include "base/log.h"
#include "base/xalloc.h"

#define METRICS_TEXT_MAX (SIZE_MAX / 2) /* bytes: the rendered text (ours: no real cap) */

enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

struct metric_series {
	struct metric_series *next;
	char *labels;            /* rendered: name="value",... (escaped) */
	double value;            /* counter/gauge; histogram: sum */
	unsigned long long count; /* histogram */
	unsigned long long *bucket_counts; /* histogram, cumulative at render */
};

struct metric {
	struct metric *next;
	enum metric_type type;
	char *name, *help;
	char *label_names[METRICS_LABELS_MAX];
	int nlabels;
	const double *buckets;
	size_t nbuckets;
	struct metric_series *series;
	size_t nseries;
};

const double metrics_buckets_latency[] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
};
const size_t metrics_buckets_latency_n =
    sizeof(metrics_buckets_latency) / sizeof(metrics_buckets_latency[0]);

static pthread_mutex_t metrics_lock = PTHREAD_MUTEX_INITIALIZER;
static struct metric *metrics_head, **metrics_tail = &metrics_head;
static unsigned long long metrics_dropped;

static struct metric *
metrics_register(enum metric_type type, const char *name, const char *help,
    const char *labels, const double *buckets, size_t nbuckets)
{
	struct metric *m = xcalloc(1, sizeof(*m));

	m->type = type;
	m->name = xstrdup(name);
	m->help = xstrdup(help);
	m->buckets = buckets;
	m->nbuckets = nbuckets;
	if (labels && *labels) {
		char *copy = xstrdup(labels), *p = copy, *comma;
		do {
			comma = strchr(p, ',');
			if (comma)
				*comma = '\0';
			if (m->nlabels == METRICS_LABELS_MAX)
				log_fatal("internal: too many label names", "metric", name, NULL);
			m->label_names[m->nlabels++] = xstrdup(p);
			p = comma + 1;
		} while (comma);
		free(copy);
	}
	pthread_mutex_lock(&metrics_lock);
	*metrics_tail = m;
	metrics_tail = &m->next;
	pthread_mutex_unlock(&metrics_lock);
	return m;
}

struct metric *
metrics_counter(const char *name, const char *help, const char *labels)
{
	return metrics_register(METRIC_COUNTER, name, help, labels, NULL, 0);
}

struct metric *
metrics_gauge(const char *name, const char *help, const char *labels)
{
	return metrics_register(METRIC_GAUGE, name, help, labels, NULL, 0);
}

struct metric *
metrics_histogram(const char *name, const char *help, const char *labels,
    const double *buckets, size_t nbuckets)
{
	return metrics_register(METRIC_HISTOGRAM, name, help, labels, buckets, nbuckets);
}

/* metrics_labels renders the label set of one update into buf. */
static int
metrics_labels(struct metric *m, va_list ap, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < m->nlabels; i++) {
		const char *v = va_arg(ap, const char *);
		int n = snprintf(buf + off, len - off, "%s%s=\"", i ? "," : "",
		    m->label_names[i]);
		if (n < 0 || (size_t)n >= len - off)
			return ERR_TOO_LARGE;
		off += (size_t)n;
		for (const char *p = v ? v : ""; *p; p++) {
			const char *esc = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" :
			    *p == '\n' ? "\\n" : NULL;
			size_t need = esc ? strlen(esc) : 1;
			if (off + need + 2 >= len)
				return ERR_TOO_LARGE;
			if (esc) {
				memcpy(buf + off, esc, need);
			} else {
				buf[off] = *p;
			}
			off += need;
		}
		buf[off++] = '"';
		buf[off] = '\0';
	}
	return 0;
}

/* metrics_find returns the series for labels, creating it when create is set;
 * called with metrics_lock held. */
static struct metric_series *
metrics_find(struct metric *m, const char *labels, int create)
{
	struct metric_series *s;

	for (s = m->series; s; s = s->next)
		if (strcmp(s->labels, labels) == 0)
			return s;
	if (!create)
		return NULL;
	if (m->nseries >= METRICS_SERIES_MAX) {
		metrics_dropped++;
		return NULL;
	}
	s = xcalloc(1, sizeof(*s));
	s->labels = xstrdup(labels);
	if (m->type == METRIC_HISTOGRAM)
		s->bucket_counts = xcalloc(m->nbuckets, sizeof(*s->bucket_counts));
	s->next = m->series;
	m->series = s;
	m->nseries++;
	return s;
}

static void
metrics_update(struct metric *m, double v, int op, va_list ap)
{
	char labels[1024];
	struct metric_series *s;

	if (m == NULL || metrics_labels(m, ap, labels, sizeof(labels)) < 0)
		return;
	pthread_mutex_lock(&metrics_lock);
	if ((s = metrics_find(m, labels, 1)) != NULL) {
		switch (op) {
		case 'a': s->value += v; break;
		case 's': s->value = v; break;
		case 'o':
			s->value += v;
			s->count++;
			for (size_t i = 0; i < m->nbuckets; i++)
				if (v <= m->buckets[i]) {
					s->bucket_counts[i]++;
					break;
				}
			break;
		}
	}
	pthread_mutex_unlock(&metrics_lock);
}

void
metric_add(struct metric *m, double v, ...)
{
	va_list ap;
	va_start(ap, v);
	metrics_update(m, v, 'a', ap);
	va_end(ap);
}

void
metric_set(struct metric *m, double v, ...)
{
	va_list ap;
	va_start(ap, v);
	metrics_update(m, v, 's', ap);
	va_end(ap);
}

void
metric_observe(struct metric *m, double v, ...)
{
	va_list ap;
	va_start(ap, v);
	metrics_update(m, v, 'o', ap);
	va_end(ap);
}

double
metric_value(struct metric *m, ...)
{
	char labels[1024];
	struct metric_series *s;
	double v = -1;
	va_list ap;
	int r;

	va_start(ap, m);
	r = metrics_labels(m, ap, labels, sizeof(labels));
	va_end(ap);
	if (r < 0)
		return -1;
	pthread_mutex_lock(&metrics_lock);
	if ((s = metrics_find(m, labels, 0)) != NULL)
		v = m->type == METRIC_HISTOGRAM ? (double)s->count : s->value;
	pthread_mutex_unlock(&metrics_lock);
	return v;
}

static void
metrics_num(struct dynbuf *b, double v)
{
	if (isinf(v))
		dynbuf_addstr(b, v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 1e15)
		dynbuf_addf(b, "%.0f", v);
	else {
		/* the shortest form that reads back as v, like Go's 'g', -1 */
		char t[32];
		for (int prec = 15; prec <= 17; prec++) {
			snprintf(t, sizeof(t), "%.*g", prec, v);
			if (strtod(t, NULL) == v)
				break;
		}
		dynbuf_addstr(b, t);
	}
}

int
metrics_render(char **ret, size_t *ret_len)
{
	static const char *const types[] = { "counter", "gauge", "histogram" };
	struct dynbuf b;

	/* our own text, bounded by the series caps: no cap of its own */
	dynbuf_init(&b, METRICS_TEXT_MAX);
	pthread_mutex_lock(&metrics_lock);
	for (struct metric *m = metrics_head; m; m = m->next) {
		dynbuf_addf(&b, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name,
		    types[m->type]);
		for (struct metric_series *s = m->series; s; s = s->next) {
			const char *sep = *s->labels ? "," : "";
			if (m->type != METRIC_HISTOGRAM) {
				dynbuf_addf(&b, "%s%s%s%s ", m->name, *s->labels ? "{" : "",
				    s->labels, *s->labels ? "}" : "");
				metrics_num(&b, s->value);
				dynbuf_addstr(&b, "\n");
				continue;
			}
			unsigned long long cum = 0;
			for (size_t i = 0; i < m->nbuckets; i++) {
				cum += s->bucket_counts[i];
				dynbuf_addf(&b, "%s_bucket{%s%sle=\"", m->name, s->labels, sep);
				metrics_num(&b, m->buckets[i]);
				dynbuf_addf(&b, "\"} %llu\n", cum);
			}
			dynbuf_addf(&b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", m->name, s->labels,
			    sep, s->count);
			dynbuf_addf(&b, "%s_sum%s%s%s ", m->name, *s->labels ? "{" : "", s->labels,
			    *s->labels ? "}" : "");
			metrics_num(&b, s->value);
			dynbuf_addf(&b, "\n%s_count%s%s%s %llu\n", m->name, *s->labels ? "{" : "",
			    s->labels, *s->labels ? "}" : "", s->count);
		}
	}
	dynbuf_addf(&b, "# HELP bootccm_metrics_series_dropped_total Metric updates dropped "
	    "because a metric reached its series cap.\n"
	    "# TYPE bootccm_metrics_series_dropped_total counter\n"
	    "bootccm_metrics_series_dropped_total %llu\n", metrics_dropped);
	pthread_mutex_unlock(&metrics_lock);
	*ret = dynbuf_take(&b, ret_len);
	return 0;
}
