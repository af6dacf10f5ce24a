/* main.c - bootccm's entry point: subcommands, start-up, the wait for the API
 * server, and shutdown on SIGTERM. */
#include <curl/curl.h>
#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yaml.h>

#include "err.h"
#include "http.h"
#include "kube/client.h"
#include "kubeconfig.h"
#include "log.h"
#include "options.h"
#include "version.h" /* generated: build/gen/version.h */

#ifndef BOOTCCM_VERSION
#define BOOTCCM_VERSION "0.0.0-dev"
#endif
#ifndef BOOTCCM_COMMIT
#define BOOTCCM_COMMIT "unknown"
#endif

#define WAIT_BACKOFF_MIN_MS 50     /* first retry while the API server is down */
#define WAIT_BACKOFF_MAX_MS 400    /* cap: an API server that comes up is seen at once */
#define WAIT_REPORT_S 30           /* repeat "still waiting" this often */
#define HEALTH_PERIOD_MS 10000     /* API server reachability check once running */

static volatile sig_atomic_t main_stop;

static void
main_on_signal(int sig)
{
	(void)sig;
	main_stop = 1;
}

/* main_sleep_ms sleeps unless a stop signal arrives; returns 1 if stopping. */
static int
main_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (!main_stop && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	return main_stop;
}

static double
main_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
main_print_version(FILE *out)
{
	const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);

	fprintf(out, "bootccm %s (commit %s)\n", BOOTCCM_VERSION, BOOTCCM_COMMIT);
	fprintf(out, "libcurl %s (%s), json-c %s, libyaml %s\n", cv->version,
	    cv->ssl_version ? cv->ssl_version : "no TLS", json_c_version(),
	    yaml_get_version_string());
}

/* main_load_kubeconfig loads --kubeconfig (or the in-cluster configuration),
 * applies --master, and registers the secrets with the logger. */
static int
main_load_kubeconfig(const struct options *o, struct kubeconfig *kc, struct errbuf *e)
{
	int r;

	if (o->kubeconfig && *o->kubeconfig)
		r = kubeconfig_load(o->kubeconfig, o->context, kc, e);
	else
		r = kubeconfig_in_cluster(NULL, kc, e);
	if (r < 0)
		return r;
	if (o->master && *o->master) {
		char *s = strdup(o->master);
		if (s == NULL) {
			kubeconfig_free(kc);
			return ERR_NOMEM;
		}
		size_t l = strlen(s);
		while (l > 0 && s[l - 1] == '/')
			s[--l] = '\0';
		free(kc->server);
		kc->server = s;
	}
	log_add_secret(kc->token);
	log_add_secret(kc->client_key_pem);
	return 0;
}

/* main_whoami asks the API server who we are (SelfSubjectReview). */
static int
main_whoami(struct kube_client *c, char *user, size_t ulen, char *groups,
    size_t glen, struct errbuf *e)
{
	static const char body[] =
	    "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}";
	json_object *o = NULL, *st, *ui, *v;
	int r;

	r = kube_request(c, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
	    "application/json", body, &o, NULL, e);
	if (r < 0)
		return r;
	user[0] = groups[0] = '\0';
	if (json_object_object_get_ex(o, "status", &st) &&
	    json_object_object_get_ex(st, "userInfo", &ui)) {
		if (json_object_object_get_ex(ui, "username", &v))
			snprintf(user, ulen, "%s", json_object_get_string(v));
		if (json_object_object_get_ex(ui, "groups", &v) &&
		    json_object_is_type(v, json_type_array)) {
			size_t off = 0;
			for (size_t i = 0; i < json_object_array_length(v) && off < glen; i++) {
				int n = snprintf(groups + off, glen - off, "%s%s", i ? "," : "",
				    json_object_get_string(json_object_array_get_idx(v, i)));
				if (n < 0)
					break;
				off += (size_t)n;
			}
		}
	}
	json_object_put(o);
	if (user[0] == '\0')
		return errbuf_set(e, ERR_INVALID,
		    "SelfSubjectReview answer has no status.userInfo.username");
	return 0;
}

/* main_server_version GETs /version and copies gitVersion into buf. */
static int
main_server_version(struct kube_client *c, char *buf, size_t len, struct errbuf *e)
{
	json_object *o = NULL, *v;
	int r;

	if ((r = kube_request(c, "GET", "/version", NULL, NULL, &o, NULL, e)) < 0)
		return r;
	if (!json_object_object_get_ex(o, "gitVersion", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		json_object_put(o);
		return errbuf_set(e, ERR_INVALID, "GET /version: no gitVersion in the answer");
	}
	snprintf(buf, len, "%s", json_object_get_string(v));
	json_object_put(o);
	return 0;
}

static int
main_usage_error(const char *prog, const struct errbuf *e)
{
	fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", prog, e->msg, prog);
	return 2;
}

/* check-kubeconfig: connect once and tell what the API server says. */
static int
cmd_check_kubeconfig(const struct options *o)
{
	struct kubeconfig kc;
	struct kube_client c;
	struct errbuf e = { "" };
	char version[128], user[256], groups[1024];
	int r;

	if ((r = main_load_kubeconfig(o, &kc, &e)) < 0) {
		fprintf(stderr, "bootccm: check-kubeconfig: %s\n", e.msg);
		return 1;
	}
	if (kube_client_init(&c, &kc, "bootccm/" BOOTCCM_VERSION) < 0) {
		kubeconfig_free(&kc);
		return 1;
	}
	printf("server: %s\n", kc.server);
	fflush(stdout);
	if ((r = main_server_version(&c, version, sizeof(version), &e)) < 0)
		goto fail;
	printf("version: %s\n", version);
	fflush(stdout);
	if ((r = main_whoami(&c, user, sizeof(user), groups, sizeof(groups), &e)) < 0)
		goto fail;
	printf("user: %s\ngroups: %s\n", user, groups);
	kube_client_cleanup(&c);
	kubeconfig_free(&kc);
	return 0;
fail:
	fprintf(stderr, "bootccm: check-kubeconfig: %s\n", e.msg);
	kube_client_cleanup(&c);
	kubeconfig_free(&kc);
	return 1;
}

/* main_wait_apiserver polls /version with capped backoff until the API server
 * answers (invariant 2: any start order; never exit for that). */
static int
main_wait_apiserver(struct kube_client *c, char *version, size_t len)
{
	struct errbuf e;
	long backoff = WAIT_BACKOFF_MIN_MS;
	double first_fail = 0, last_report = 0;
	int r;

	while (!main_stop) {
		if ((r = main_server_version(c, version, len, &e)) == 0)
			return 0;
		double now = main_now_s();
		if (first_fail == 0) {
			first_fail = last_report = now;
			log_warn("Waiting for the API server", "server", c->kc->server,
			    "err", e.msg, NULL);
		} else if (now - last_report >= WAIT_REPORT_S) {
			char waited[32];
			snprintf(waited, sizeof(waited), "%.0fs", now - first_fail);
			last_report = now;
			log_warn("Still waiting for the API server", "server", c->kc->server,
			    "waited", waited, "err", e.msg, NULL);
		} else {
			log_info(4, "API server not answering yet", "err", e.msg, NULL);
		}
		if (main_sleep_ms(backoff))
			break;
		backoff = backoff * 2 > WAIT_BACKOFF_MAX_MS ? WAIT_BACKOFF_MAX_MS : backoff * 2;
	}
	return ERR_TIMEOUT;
}

static int
cmd_run(const struct options *o)
{
	struct kubeconfig kc;
	struct kube_client c;
	struct errbuf e = { "" };
	char version[128], user[256], groups[1024];
	int r, healthy = 1;

	if ((r = main_load_kubeconfig(o, &kc, &e)) < 0) {
		log_error("Cannot load the API server configuration", "err", e.msg, NULL);
		return 1;
	}
	if (kc.insecure_skip_tls_verify)
		log_warn("TLS verification of the API server is off: the kubeconfig sets "
		    "insecure-skip-tls-verify", "kubeconfig", kc.source, NULL);
	if (kube_client_init(&c, &kc, "bootccm/" BOOTCCM_VERSION) < 0)
		log_fatal("Out of memory", NULL);
	log_info(0, "Starting bootccm", "version", BOOTCCM_VERSION, "commit", BOOTCCM_COMMIT,
	    "kubeconfig", kc.source, "server", kc.server, "node", o->node_name,
	    "cloudProvider", o->cloud_provider ? o->cloud_provider : "", NULL);

	if (main_wait_apiserver(&c, version, sizeof(version)) < 0)
		goto stop;
	log_info(0, "API server answered", "server", kc.server, "version", version, NULL);
	if (main_whoami(&c, user, sizeof(user), groups, sizeof(groups), &e) == 0)
		log_info(0, "Authenticated", "user", user, "groups", groups, NULL);
	else
		log_warn("Cannot tell who the API server thinks we are", "err", e.msg, NULL);
	log_info(0, "No controllers are built into this version yet; watching the API "
	    "server's health until stopped", NULL);

	while (!main_sleep_ms(HEALTH_PERIOD_MS)) {
		r = main_server_version(&c, version, sizeof(version), &e);
		if (r < 0 && healthy)
			log_warn("Lost the API server", "server", kc.server, "err", e.msg, NULL);
		else if (r == 0 && !healthy)
			log_info(0, "API server answering again", "server", kc.server, NULL);
		healthy = r == 0;
	}
stop:
	log_info(0, "Stopping on signal", NULL);
	kube_client_cleanup(&c);
	kubeconfig_free(&kc);
	return 0;
}

int
main(int argc, char **argv)
{
	struct options o;
	struct errbuf e = { "" };
	struct sigaction sa;
	const char *prog = "bootccm";
	int first = 1, check = 0, r, rc;

	/* wolfSSL writes with send(): a peer that aborts must not kill us */
	signal(SIGPIPE, SIG_IGN);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = main_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

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
	rc = check ? cmd_check_kubeconfig(&o) : cmd_run(&o);
	options_free(&o);
	log_clear_secrets();
	curl_global_cleanup();
	return rc;
}
