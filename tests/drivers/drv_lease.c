/* drv_lease.c - runs the leader elector against an API server and reports
 * what happens as JSON lines on stdout, for tests/integration/test_lease.py.
 *
 *   drv_lease KUBECONFIG [--namespace NS] [--name NAME] [--identity ID]
 *       [--lease-duration D] [--renew-deadline D] [--retry-period D]
 *       [--act-period D] [--act-namespace NS] [--act-configmap NAME] [-v N]
 *
 * While leading it "acts": every act period, if lease_is_leader() still says
 * so, it PUTs the ConfigMap NS/NAME (which must exist) with data.holder = its
 * identity, so the API server's request log shows who acted when. Lines:
 * {"event":"ready"|"started_leading"|"act"|"stopped_leading"|"exit", "t": Unix
 * seconds, ...}. SIGTERM or SIGINT stops the elector (which releases the
 * Lease) and exits 0. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config/flags.h"
#include "http/http.h"
#include "kube/client.h"
#include "kube/lease.h"
#include "config/kubeconfig.h"
#include "base/log.h"
#include "base/stop.h"

#define DRV_ACT_TIMEOUT_MS 300 /* one act's PUT */

struct drv {
	struct kubeconfig kc;
	struct lease *lease;
	const char *act_ns, *act_cm;
	int64_t act_period_ns;

	pthread_t actor;
	int actor_running;
	struct stop actor_stop;  /* one per leadership term */
	int terms;               /* leadership terms so far (elector thread) */
};

static pthread_mutex_t drv_out_lock = PTHREAD_MUTEX_INITIALIZER;

static double
drv_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* drv_emit prints one JSON line: {"event":EVENT,"t":NOW<extra>}. */
static void
drv_emit(const char *event, const char *extra)
{
	pthread_mutex_lock(&drv_out_lock);
	printf("{\"event\":\"%s\",\"t\":%.6f%s}\n", event, drv_now(), extra ? extra : "");
	fflush(stdout);
	pthread_mutex_unlock(&drv_out_lock);
}

/* drv_put sends one PUT with a short timeout and no retries: an actor must
 * be quick to stop (the elector waits for it), so a write either happens at
 * once or not at all. Returns 0 or an ERR_* code. */
static int
drv_put(struct kube_client *c, const char *path, const char *body)
{
	const char *headers[] = { "Accept: application/json", c->user_agent, NULL };
	struct http_request req = {
		.method = "PUT", .headers = headers, .content_type = "application/json",
		.body = body, .body_len = strlen(body), .timeout_ms = DRV_ACT_TIMEOUT_MS,
	};
	struct http_response resp;
	struct errbuf e;
	char url[1024], *token = NULL;
	int r;

	snprintf(url, sizeof(url), "%s%s", c->kc->server, path);
	req.url = url;
	req.tls = strncmp(url, "https://", 8) == 0 ? &c->tls : NULL;
	if ((r = kubeconfig_token(c->kc, &token, &e)) < 0)
		return r;
	req.bearer_token = token;
	r = http_do(c->http, &req, &resp, &e);
	if (token) {
		explicit_bzero(token, strlen(token));
		free(token);
	}
	if (r < 0)
		return r;
	r = http_status_err(resp.status);
	http_response_free(&resp);
	return r;
}

static void *
drv_actor(void *arg)
{
	struct drv *d = arg;
	struct kube_client c;
	char path[512], body[1024], extra[600];
	int n = 0, skipped = 0;

	kube_client_init(&c, &d->kc, "bootccm-drv-lease/actor");
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/%s", d->act_ns, d->act_cm);
	while (!stop_requested(&d->actor_stop)) {
		/* the fence: never act once the lease may have passed on */
		if (lease_is_leader(d->lease)) {
			n++;
			snprintf(body, sizeof(body), "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
			    "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},\"data\":"
			    "{\"holder\":\"%s\",\"n\":\"%d\"}}", d->act_cm, d->act_ns,
			    lease_identity(d->lease), n);
			int r = drv_put(&c, path, body);
			snprintf(extra, sizeof(extra), ",\"n\":%d,\"err\":\"%s\"", n, err_str(r));
			drv_emit(r == 0 ? "act" : "act_failed", extra);
		} else if (!skipped) {
			skipped = 1;
			drv_emit("act_refused", NULL);
		}
		if (stop_sleep(&d->actor_stop, d->act_period_ns))
			break;
	}
	kube_client_cleanup(&c);
	return NULL;
}

static void
drv_started(void *arg)
{
	struct drv *d = arg;
	char extra[400];

	d->terms++;
	snprintf(extra, sizeof(extra), ",\"identity\":\"%s\",\"term\":%d",
	    lease_identity(d->lease), d->terms);
	drv_emit("started_leading", extra);
	if (d->act_cm == NULL)
		return;
	stop_init(&d->actor_stop);
	if (pthread_create(&d->actor, NULL, drv_actor, d) == 0)
		d->actor_running = 1;
	else
		stop_destroy(&d->actor_stop);
}

static void
drv_stopped(void *arg)
{
	struct drv *d = arg;
	char extra[400];

	/* stop acting before returning: the elector relies on it */
	if (d->actor_running) {
		stop_request(&d->actor_stop);
		pthread_join(d->actor, NULL);
		d->actor_running = 0;
		stop_destroy(&d->actor_stop);
	}
	snprintf(extra, sizeof(extra), ",\"identity\":\"%s\",\"term\":%d",
	    lease_identity(d->lease), d->terms);
	drv_emit("stopped_leading", extra);
}

static int
drv_duration(const char *s, int64_t *ret)
{
	if (duration_parse(s, ret) < 0 || *ret <= 0) {
		fprintf(stderr, "drv_lease: bad duration \"%s\"\n", s);
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static struct drv d;
	struct lease_config cfg = {
		.namespace = "kube-system", .name = "cloud-controller-manager",
		.lease_duration_ns = 15 * NS_PER_S, .renew_deadline_ns = 10 * NS_PER_S,
		.retry_period_ns = 2 * NS_PER_S, .on_started_leading = drv_started,
		.on_stopped_leading = drv_stopped, .arg = &d,
	};
	struct errbuf e = { "" };
	sigset_t set;
	char extra[400];
	int sig, v = 2, i;

	if (argc < 2) {
		fprintf(stderr, "usage: drv_lease KUBECONFIG [options]\n");
		return 2;
	}
	d.act_period_ns = 200 * NS_PER_MS;
	d.act_ns = "kube-system";
	for (i = 2; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (val == NULL) {
			fprintf(stderr, "drv_lease: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (strcmp(a, "--namespace") == 0)
			cfg.namespace = val;
		else if (strcmp(a, "--name") == 0)
			cfg.name = val;
		else if (strcmp(a, "--identity") == 0)
			cfg.identity = val;
		else if (strcmp(a, "--lease-duration") == 0) {
			if (drv_duration(val, &cfg.lease_duration_ns) < 0)
				return 2;
		} else if (strcmp(a, "--renew-deadline") == 0) {
			if (drv_duration(val, &cfg.renew_deadline_ns) < 0)
				return 2;
		} else if (strcmp(a, "--retry-period") == 0) {
			if (drv_duration(val, &cfg.retry_period_ns) < 0)
				return 2;
		} else if (strcmp(a, "--act-period") == 0) {
			if (drv_duration(val, &d.act_period_ns) < 0)
				return 2;
		} else if (strcmp(a, "--act-namespace") == 0)
			d.act_ns = val;
		else if (strcmp(a, "--act-configmap") == 0)
			d.act_cm = val;
		else if (strcmp(a, "-v") == 0) {
			char *end;
			v = (int)strtol(val, &end, 10);
			if (*end != '\0') {
				fprintf(stderr, "drv_lease: bad -v\n");
				return 2;
			}
		} else {
			fprintf(stderr, "drv_lease: unknown option %s\n", a);
			return 2;
		}
	}
	log_init(v, LOG_TEXT, 2);
	if (http_global_init(&e) < 0 || kubeconfig_load(argv[1], NULL, &d.kc, &e) < 0) {
		fprintf(stderr, "drv_lease: %s\n", e.msg);
		return 1;
	}
	/* signals are taken by sigwait below, never by the other threads */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (lease_new(&d.kc, &cfg, &d.lease, &e) < 0) {
		fprintf(stderr, "drv_lease: %s\n", e.msg);
		return 1;
	}
	snprintf(extra, sizeof(extra), ",\"identity\":\"%s\",\"pid\":%ld", lease_identity(d.lease),
	    (long)getpid());
	drv_emit("ready", extra);
	if (lease_start(d.lease, &e) < 0) {
		fprintf(stderr, "drv_lease: %s\n", e.msg);
		return 1;
	}
	while (sigwait(&set, &sig) != 0)
		;
	lease_stop(d.lease);
	snprintf(extra, sizeof(extra), ",\"healthy\":%s", lease_healthz(d.lease, &e) == 0 ?
	    "true" : "false");
	lease_free(d.lease);
	drv_emit("exit", extra);
	kubeconfig_free(&d.kc);
	return 0;
}
