/* main.c - bootccm's entry point: signals, subcommands, flags, logging, the
 * build-info metric. */
#include <curl/curl.h>
#include <json-c/json.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <wolfssl/options.h>
#include <wolfssl/ssl.h>
#include <yaml.h>

#include "base/allocator.h"
#include "daemon.h"
#include "cmd/doctor.h"
#include "base/err.h"
#include "http/http.h"
#include "base/log.h"
#include "cmd/metadata.h"
#include "base/metrics.h"
#include "config/options.h"
#include "base/stop.h"
#include "version.h" /* generated: build/gen/version.h */

static void
main_print_version(FILE *out)
{
	const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);

	fprintf(out, "bootccm %s (commit %s)\n", BOOTCCM_VERSION, BOOTCCM_COMMIT);
	fprintf(out, "libcurl %s (%s), json-c %s, libyaml %s\n", cv->version,
	    cv->ssl_version ? cv->ssl_version : "no TLS", json_c_version(),
	    yaml_get_version_string());
}

/* main_build_info registers bootccm_build_info, the constant 1 labeled with
 * what this binary was built from and the libraries it runs with, as the
 * Kubernetes components' *_build_info. */
static void
main_build_info(void)
{
	const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);
	struct metric *info;

	info = metrics_gauge("bootccm_build_info",
	    "A metric with a constant '1' value labeled by the version and commit bootccm "
	    "was built from and the libcurl and wolfSSL versions it runs with.",
	    "version,commit,libcurl,wolfssl");
	metric_set(info, 1, BOOTCCM_VERSION, BOOTCCM_COMMIT, cv->version,
	    wolfSSL_lib_version());
}

static int
main_usage_error(const char *prog, const struct errbuf *e)
{
	char esc[LOG_ESCAPED_MAX];

	log_print(STDERR_FILENO, "%s: %s\nRun '%s --help' for usage.\n", prog,
	    log_escape(e->msg, esc, sizeof(esc)), prog);
	return 2;
}

int
main(int argc, char **argv)
{
	struct options o;
	struct errbuf e = { "" };
	const char *prog = "bootccm";
	const struct options_cmd *cmd;
	int first = 1, check = 0, r, rc;

	/* no core dump, no ptrace by another process of the same user, /proc
	 * files root's: the memory holds tokens and keys. Before anything is
	 * read, for the daemon and every subcommand alike. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
		fprintf(stderr, "%s: cannot turn core dumps off\n", prog);
		return 1;
	}
	allocator_init();
	/* wolfSSL writes with send(): a peer that aborts must not kill us */
	signal(SIGPIPE, SIG_IGN);
	/* before any other thread: they inherit the blocked SIGTERM and SIGINT,
	 * which only the signal thread takes, as a stop */
	stop_init(&daemon_stop);
	if (stop_on_signals(&daemon_stop) < 0) {
		fprintf(stderr, "%s: cannot start the signal thread\n", prog);
		return 1;
	}

	cmd = argc > 1 ? options_cmd_find(argv[1]) : NULL;
	if (cmd != NULL) {
		switch (cmd->id) {
		case OPTIONS_CMD_METADATA:
			return md_cmd(argc - 1, argv + 1, &daemon_stop);
		case OPTIONS_CMD_DOCTOR:
			return doctor_cmd(argc - 1, argv + 1, &daemon_stop);
		case OPTIONS_CMD_CHECK_KUBECONFIG:
			check = 1;
			first = 2;
			break;
		case OPTIONS_CMD_VERSION:
			main_print_version(stdout);
			return 0;
		case OPTIONS_CMD_HELP:
			/* "help" with more after it is a bad command line */
			if (argc == 2) {
				options_usage(stdout, prog);
				return 0;
			}
			break;
		}
	}
	r = options_parse(&o, argc, argv, first, &e);
	if (r == 0 && o.timeout_set && !check) {
		/* the daemon waits for the API server however long it takes */
		errbuf_set(&e, ERR_INVALID, "--timeout is for check-kubeconfig only");
		r = ERR_INVALID;
	}
	if (r == OPTIONS_EXIT_HELP) {
		options_usage(stdout, prog);
		options_free(&o);
		return 0;
	}
	if (r == OPTIONS_EXIT_VERSION) {
		main_print_version(stdout);
		options_free(&o);
		return 0;
	}
	if (r < 0) {
		options_free(&o);
		return main_usage_error(prog, &e);
	}
	log_init(o.verbosity, strcmp(o.logging_format, "json") == 0 ? LOG_JSON : LOG_TEXT, 2);
	if (http_global_init(&e) < 0) {
		fprintf(stderr, "%s: %s\n", prog, e.msg);
		options_free(&o);
		return 1;
	}
	if (o.validate) {
		rc = daemon_validate(&o);
	} else if (check) {
		rc = daemon_check_kubeconfig(&o);
	} else {
		main_build_info();  /* before the daemon serves /metrics */
		rc = daemon_run(&o);
	}
	options_free(&o);
	log_clear_secrets();
	curl_global_cleanup();
	return rc;
}
