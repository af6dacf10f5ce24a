/* cmd.c - `bootccm metadata [--format=json|env|kubelet-flags] [--detect]
 * [--metadata-* flags]`: one fetch, printed whole or not at all. */
#include "metadata/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flags.h"
#include "http.h"
#include "log.h"
#include "metadata/format.h"
#include "metadata/metadata.h"
#include "xalloc.h"

#define MD_CMD_PROG "bootccm metadata"

struct md_cmd_opts {
	char *format;
	int detect;
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
	    "4 a metadata service was found but failed.\n\n"
	    "Flags:\n");
	flags_usage(t, n, out);
}

/* md_cmd_warn_labels tells on stderr which facts were not valid label values. */
static void
md_cmd_warn_labels(const struct md_instance *in)
{
	struct md_label l[MD_LABELS];

	md_format_labels(in, l);
	for (size_t i = 0; i < MD_LABELS; i++) {
		if (l[i].status == MD_LABEL_SANITIZED)
			fprintf(stderr, MD_CMD_PROG ": warning: \"%s\" is not a valid label value; "
			    "%s=%s instead\n", l[i].raw, l[i].key, l[i].value);
		else if (l[i].status == MD_LABEL_OMITTED)
			fprintf(stderr, MD_CMD_PROG ": warning: \"%s\" is not a valid label value; "
			    "no %s label\n", l[i].raw, l[i].key);
	}
	if (in->addresses_dropped)
		fprintf(stderr, MD_CMD_PROG ": warning: %zu more addresses than the %d kept\n",
		    in->addresses_dropped, MD_ADDRS_MAX);
}

int
md_cmd(int argc, char **argv)
{
	struct md_cmd_opts o;
	struct flag t[16];
	struct md_config cfg;
	struct md_instance in;
	struct errbuf e = { "" };
	enum md_format fmt;
	enum md_cloud cloud;
	char *out = NULL;
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
			fprintf(stderr, MD_CMD_PROG ": %s\n", e.msg);
			rc = MD_CMD_EXIT_NOT_FOUND;
			goto out;
		}
		printf("%s\n", md_cloud_name(cloud));
		rc = fflush(stdout) == 0 ? MD_CMD_EXIT_OK : MD_CMD_EXIT_OUTPUT;
		goto out;
	}
	if (http_global_init(&e) < 0) {
		fprintf(stderr, MD_CMD_PROG ": %s\n", e.msg);
		rc = MD_CMD_EXIT_FAILED;
		goto out;
	}
	if ((r = md_fetch(&cfg, &in, &e)) < 0) {
		fprintf(stderr, MD_CMD_PROG ": %s\n", e.msg);
		rc = r == ERR_NOT_FOUND ? MD_CMD_EXIT_NOT_FOUND : MD_CMD_EXIT_FAILED;
		goto out;
	}
	out = xmalloc(MD_FORMAT_OUT_MAX);
	if ((r = md_format_write(&in, fmt, out, MD_FORMAT_OUT_MAX, &e)) < 0) {
		fprintf(stderr, MD_CMD_PROG ": %s\n", e.msg);
		rc = MD_CMD_EXIT_FAILED;
		goto out;
	}
	md_cmd_warn_labels(&in);
	if (fwrite(out, 1, (size_t)r, stdout) != (size_t)r || fflush(stdout) != 0) {
		fprintf(stderr, MD_CMD_PROG ": cannot write the output\n");
		rc = MD_CMD_EXIT_OUTPUT;
		goto out;
	}
	rc = MD_CMD_EXIT_OK;
	goto out;
usage:
	fprintf(stderr, MD_CMD_PROG ": %s\nRun '" MD_CMD_PROG " --help' for usage.\n", e.msg);
	rc = MD_CMD_EXIT_USAGE;
out:
	free(out);
	flags_free(t, n);
	return rc;
}
