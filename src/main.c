/* main.c - bootccm's entry point: signals, subcommands, flags, logging. */
#include <curl/curl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "daemon.h"
#include "err.h"
#include "http.h"
#include "log.h"
#include "metadata/cmd.h"
#include "options.h"
#include "stop.h"
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

static int
main_usage_error(const char *prog, const struct errbuf *e)
{
	fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", prog, e->msg, prog);
	return 2;
}

int
main(int argc, char **argv)
{
	struct options o;
	struct errbuf e = { "" };
	const char *prog = "bootccm";
	int first = 1, check = 0, r, rc;

	/* wolfSSL writes with send(): a peer that aborts must not kill us */
	signal(SIGPIPE, SIG_IGN);
	/* before any other thread: they inherit the blocked SIGTERM and SIGINT,
	 * which only the signal thread takes, as a stop */
	stop_init(&daemon_stop);
	if (stop_on_signals(&daemon_stop) < 0) {
		fprintf(stderr, "%s: cannot start the signal thread\n", prog);
		return 1;
	}

	if (argc > 1 && strcmp(argv[1], "metadata") == 0)
		return md_cmd(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "check-kubeconfig") == 0) {
		check = 1;
		first = 2;
	} else if (argc > 1 && strcmp(argv[1], "version") == 0) {
		main_print_version(stdout);
		return 0;
	}
	r = options_parse(&o, argc, argv, first, &e);
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
	rc = check ? daemon_check_kubeconfig(&o) : daemon_run(&o);
	options_free(&o);
	log_clear_secrets();
	curl_global_cleanup();
	return rc;
}
