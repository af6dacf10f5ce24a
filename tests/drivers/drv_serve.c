/* drv_serve.c - runs the serving endpoint for tests/integration/test_serve.py with
 * bootccm's own flags, a health check and a readiness check, and reports on
 * stdout as JSON lines: {"event":"serving","port":N} (port 0 when
 * --secure-port=0), {"event":"error","err":"..."} when serve_start fails, and
 * {"event":"stopped"} after SIGTERM, SIGINT or end of stdin. Logs go to
 * stderr.
 *
 * Usage: drv_serve KUBECONFIG [driver options] [bootccm flags...]
 *   --ready-after=SECONDS   the readiness check "informer-sync" fails until
 *                           this long after start (default 0: passes)
 *   --unhealthy             the health check "leaderElection" fails
 *
 * SIGPIPE keeps its default action on purpose (bootccm's main ignores it):
 * a write to a client that went away must not raise it in the first place.
 * SIGTERM and SIGINT become a stop as in bootccm (stop_on_signals); a thread
 * turns the end of stdin into the same stop. */
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/err.h"
#include "http/http.h"
#include "config/kubeconfig.h"
#include "base/log.h"
#include "config/options.h"
#include "serve/serve.h"
#include "base/stop.h"

static struct stop drv_stop;
static double drv_ready_at;
static int drv_unhealthy;

static double
drv_now_s(void)
{
	return (double)clock_mono_ns() / NS_PER_S;
}

/* drv_stdin reads stdin to its end, then stops the driver. */
static void *
drv_stdin(void *arg)
{
	char buf[64];

	(void)arg;
	for (;;) {
		ssize_t n = read(0, buf, sizeof(buf));
		if (n == 0 || (n < 0 && errno != EINTR))
			break;
	}
	stop_request(&drv_stop);
	return NULL;
}

static int
drv_informer_sync(void *arg, struct errbuf *e)
{
	(void)arg;
	if (drv_now_s() < drv_ready_at)
		return errbuf_set(e, ERR_TRANSIENT, "caches not synced yet");
	return 0;
}

static int
drv_leader_election(void *arg, struct errbuf *e)
{
	(void)arg;
	if (drv_unhealthy)
		return errbuf_set(e, ERR_TRANSIENT, "the lease was not renewed in time");
	return 0;
}

/* drv_error prints the error event: {"event":"error","code":...,"err":...}. */
static void
drv_error(int r, const char *msg)
{
	json_object *err = json_object_new_object();

	json_object_object_add(err, "event", json_object_new_string("error"));
	json_object_object_add(err, "code", json_object_new_string(err_str(r)));
	json_object_object_add(err, "err", json_object_new_string(msg));
	printf("%s\n", json_object_to_json_string_ext(err, JSON_C_TO_STRING_PLAIN));
	json_object_put(err);
}

int
main(int argc, char **argv)
{
	struct kubeconfig kc;
	struct options o;
	struct serve_config sc;
	struct errbuf e = { "" };
	pthread_t reader;
	double ready_after = 0;
	int first = 2, r;

	if (argc < 2) {
		fprintf(stderr, "usage: drv_serve KUBECONFIG [--ready-after=S] [--unhealthy] "
		    "[bootccm flags]\n");
		return 2;
	}
	for (; first < argc; first++) {
		if (strncmp(argv[first], "--ready-after=", 14) == 0) {
			char *end;
			ready_after = strtod(argv[first] + 14, &end);
			if (*end != '\0' || end == argv[first] + 14 || ready_after < 0) {
				fprintf(stderr, "drv_serve: bad %s\n", argv[first]);
				return 2;
			}
		} else if (strcmp(argv[first], "--unhealthy") == 0) {
			drv_unhealthy = 1;
		} else {
			break;
		}
	}
	stop_init(&drv_stop);
	if (stop_on_signals(&drv_stop) < 0) {
		fprintf(stderr, "drv_serve: cannot wait for signals\n");
		return 1;
	}

	/* a flag serve_start would refuse is refused here now (an address
	 * that does not parse): the same error event either way */
	if ((r = options_parse(&o, argc, argv, first, &e)) != 0) {
		drv_error(r, e.msg);
		options_free(&o);
		return 2;
	}
	log_init(o.verbosity, LOG_TEXT, 2);
	if (http_global_init(&e) < 0 || kubeconfig_load(argv[1], NULL, &kc, &e) < 0) {
		fprintf(stderr, "drv_serve: %s\n", e.msg);
		options_free(&o);
		return 1;
	}
	log_add_secret(kc.token);
	log_add_secret(kc.client_key_pem);
	drv_ready_at = drv_now_s() + ready_after;
	if (serve_add_healthz("leaderElection", drv_leader_election, NULL) < 0 ||
	    serve_add_readyz("informer-sync", drv_informer_sync, NULL) < 0) {
		fprintf(stderr, "drv_serve: cannot register the checks\n");
		return 1;
	}
	options_serve_config(&o, &sc);
	if ((r = serve_start(&sc, &kc, &kc, &e)) < 0) {
		drv_error(r, e.msg);
		kubeconfig_free(&kc);
		options_free(&o);
		return 1;
	}
	printf("{\"event\":\"serving\",\"port\":%d}\n", serve_port());
	fflush(stdout);
	/* until a signal or the end of stdin */
	if (pthread_create(&reader, NULL, drv_stdin, NULL) != 0 ||
	    pthread_detach(reader) != 0) {
		fprintf(stderr, "drv_serve: cannot start the stdin reader\n");
		return 1;
	}
	while (!stop_sleep(&drv_stop, NS_PER_S))
		;
	serve_stop();
	printf("{\"event\":\"stopped\"}\n");
	fflush(stdout);
	kubeconfig_free(&kc);
	options_free(&o);
	log_clear_secrets();
	return 0;
}
