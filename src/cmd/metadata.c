/* metadata.c - `bootccm metadata [--format=json|env|kubelet-flags] [--detect]
 * [--metadata-* flags]`: one fetch, printed whole or not at all. */
#include "cmd/metadata.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/duration.h"
#include "config/flags.h"
#include "http/http.h"
#include "base/log.h"
#include "metadata/format.h"
#include "metadata/metadata.h"
#include "base/xalloc.h"

#define MD_CMD_PROG "bootccm metadata"

struct md_cmd_opts {
	char *format;
	int detect;
	int64_t timeout_ns;
	int help;
	char *cloud;
	char *endpoint;
	char *dmi_dir;
	char *config_drive;
};

static size_t
md_cmd_table(struct md_cmd_opts *o, struct flag *t, size_t cap)
{
	const struct flag table[] = {
		{ "format", FLAG_STRING, &o->format, "json",
		  "Output: json (an object), env (shell assignments) or kubelet-flags "
		  "(--provider-id, --node-ip, --node-labels).", 0 },
		{ "detect", FLAG_BOOL, &o->detect, "false",
		  "Only print the cloud detected from DMI data; no network.", 0 },
		{ "timeout", FLAG_DURATION, &o->timeout_ns, MD_CMD_TIMEOUT,
		  "The whole command's time limit: a request still running then ends, and "
		  "nothing is retried after it.", 0 },
		MD_FLAGS(&o->cloud, &o->endpoint, &o->dmi_dir, &o->config_drive),
		{ "help", FLAG_BOOL, &o->help, "false", "Help for bootccm metadata.", 0 },
	};
	size_t n = sizeof(table) / sizeof(table[0]);

	if (n > cap)
		log_fatal("internal: md_cmd_table: the caller's array is too small", NULL);
	memcpy(t, table, sizeof(table));
	return n;
}

static void
md_cmd_usage(FILE *out, const struct flag *t, size_t n)
{
	fprintf(out,
	    "Usage: " MD_CMD_PROG " [flags]\n\n"
	    "Print the local instance's facts from the cloud's instance metadata service:\n"
	    "providerID, instance type, zone, region and addresses.\n"
	    "Exit status: 0 printed, 2 usage error, 3 no metadata service found,\n"
	    "4 a metadata service was found but failed (or did not answer within --timeout),\n"
	    "1 standard output could not be written.\n\n"
	    "Flags:\n");
	flags_usage(t, n, out);
}

/* md_cmd_warn_labels tells on stderr which facts were not valid label values. */
static void
md_cmd_warn_labels(const struct md_instance *in)
{
	struct md_label l[MD_LABELS];
	char esc[LOG_ESCAPED_MAX];

	md_format_labels(in, l);
	for (size_t i = 0; i < MD_LABELS; i++) {
		if (l[i].status == MD_LABEL_SANITIZED)
			log_print(STDERR_FILENO, MD_CMD_PROG ": warning: \"%s\" is not a valid "
			    "label value; %s=%s instead\n", log_escape(l[i].raw, esc, sizeof(esc)),
			    l[i].key, l[i].value);
		else if (l[i].status == MD_LABEL_OMITTED)
			log_print(STDERR_FILENO, MD_CMD_PROG ": warning: \"%s\" is not a valid "
			    "label value; no %s label\n", log_escape(l[i].raw, esc, sizeof(esc)),
			    l[i].key);
	}
	if (in->addresses_dropped)
		log_print(STDERR_FILENO, MD_CMD_PROG ": warning: %zu more addresses than the "
		    "%d kept\n", in->addresses_dropped, MD_ADDRS_MAX);
}

/* The --timeout of one run: at it the process's stop is requested, which
 * ends the pauses between retries at once (http_set_deadline ends the
 * request in flight), unless a signal requested the stop first. */
struct md_cmd_deadline {
	struct stop *stop;
	int64_t at_ns;
	int expired;
};

static void *
md_cmd_deadline_thread(void *arg)
{
	struct md_cmd_deadline *d = arg;

	if (!stop_sleep_until(d->stop, d->at_ns)) {
		__atomic_store_n(&d->expired, 1, __ATOMIC_RELEASE);
		stop_request(d->stop);
	}
	return NULL;
}

/* md_cmd_fetch is md_fetch within o->timeout_ns: 0, or the error with a
 * message that names the time limit when it ran out. */
static int
md_cmd_fetch(struct md_config *cfg, const struct md_cmd_opts *o, struct stop *stop,
    struct md_instance *in, struct errbuf *e)
{
	struct md_cmd_deadline d = { stop, clock_add_ns(clock_mono_ns(), o->timeout_ns), 0 };
	pthread_t t;
	char limit[32];
	int r, watching;

	cfg->stop = stop;
	http_set_deadline(d.at_ns);
	watching = pthread_create(&t, NULL, md_cmd_deadline_thread, &d) == 0;
	r = md_fetch(cfg, in, e);
	if (watching) {
		stop_request(stop);  /* the command is over: so is the wait */
		pthread_join(t, NULL);
	}
	if (r < 0 && (__atomic_load_n(&d.expired, __ATOMIC_ACQUIRE) ||
	    clock_mono_ns() >= d.at_ns)) {
		duration_format(o->timeout_ns, limit, sizeof(limit));
		errbuf_prefix(e, r, "no answer within --timeout %s", limit);
	}
	return r;
}

int
md_cmd(int argc, char **argv, struct stop *stop)
{
	struct md_cmd_opts o;
	struct flag t[16];
	struct md_config cfg;
	struct md_instance in;
	struct errbuf e = { "" };
	enum md_format fmt;
	enum md_cloud cloud;
	char *out = NULL, esc[LOG_ESCAPED_MAX];
	size_t n;
	int r, rc;

	memset(&o, 0, sizeof(o));
	n = md_cmd_table(&o, t, sizeof(t) / sizeof(t[0]));
	if ((r = flags_defaults(t, n, &e)) < 0 || (r = flags_parse(t, n, argc, argv, 1, NULL,
	    &e)) < 0)
		goto usage;
	if (o.help) {
		md_cmd_usage(stdout, t, n);
		rc = MD_CMD_EXIT_OK;
		goto out;
	}
	if (o.timeout_ns <= 0) {
		errbuf_set(&e, ERR_INVALID, "--timeout must be greater than zero");
		goto usage;
	}
	if (duration_check("timeout", o.timeout_ns, 1, MD_CMD_TIMEOUT_MAX_S * NS_PER_S, &e) < 0)
		goto usage;
	if (md_format_parse(o.format, &fmt) < 0) {
		errbuf_set(&e, ERR_INVALID, "--format \"%s\": want json, env or kubelet-flags",
		    o.format);
		goto usage;
	}
	md_config_init(&cfg);
	if (md_config_set(&cfg, o.cloud, o.endpoint, o.dmi_dir, o.config_drive, &e) < 0)
		goto usage;
	if (o.detect) {
		if ((r = md_detect(&cfg, &cloud, &e)) < 0) {
			log_print(STDERR_FILENO, MD_CMD_PROG ": %s\n",
		    log_escape(e.msg, esc, sizeof(esc)));
			rc = MD_CMD_EXIT_NOT_FOUND;
			goto out;
		}
		rc = log_print(STDOUT_FILENO, "%s\n", md_cloud_name(cloud)) == 0 ?
		    MD_CMD_EXIT_OK : MD_CMD_EXIT_OUTPUT;
		goto out;
	}
	if (http_global_init(&e) < 0) {
		log_print(STDERR_FILENO, MD_CMD_PROG ": %s\n",
		    log_escape(e.msg, esc, sizeof(esc)));
		rc = MD_CMD_EXIT_FAILED;
		goto out;
	}
	if ((r = md_cmd_fetch(&cfg, &o, stop, &in, &e)) < 0) {
		log_print(STDERR_FILENO, MD_CMD_PROG ": %s\n",
		    log_escape(e.msg, esc, sizeof(esc)));
		rc = r == ERR_NOT_FOUND ? MD_CMD_EXIT_NOT_FOUND : MD_CMD_EXIT_FAILED;
		goto out;
	}
	out = xmalloc(MD_FORMAT_OUT_MAX);
	if ((r = md_format_write(&in, fmt, out, MD_FORMAT_OUT_MAX, &e)) < 0) {
		log_print(STDERR_FILENO, MD_CMD_PROG ": %s\n",
		    log_escape(e.msg, esc, sizeof(esc)));
		rc = MD_CMD_EXIT_FAILED;
		goto out;
	}
	md_cmd_warn_labels(&in);
	/* the facts whole or nothing, through the same redaction as the logs */
	if (log_print(STDOUT_FILENO, "%.*s", r, out) < 0) {
		log_print(STDERR_FILENO, MD_CMD_PROG ": cannot write the output\n");
		rc = MD_CMD_EXIT_OUTPUT;
		goto out;
	}
	rc = MD_CMD_EXIT_OK;
	goto out;
usage:
	log_print(STDERR_FILENO, MD_CMD_PROG ": %s\nRun '" MD_CMD_PROG " --help' for usage.\n",
	    log_escape(e.msg, esc, sizeof(esc)));
	rc = MD_CMD_EXIT_USAGE;
out:
	free(out);
	flags_free(t, n);
	return rc;
}
