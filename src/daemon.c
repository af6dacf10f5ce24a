/* daemon.c - the long-running cloud-controller-manager: connect, wait for the
 * API server in any start order, run until SIGTERM; and check-kubeconfig. */
#include "daemon.h"

#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "cloud.h"
#include "base/duration.h"
#include "controllers/nodectl.h"
#include "controllers/nodelifecycle.h"
#include "controllers/servicectl.h"
#include "controllers/routectl.h"
#include "controllers/csrctl.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "kube/client.h"
#include "kube/events.h"
#include "kube/flowcontrol.h"
#include "kube/lease.h"
#include "kube/node.h"
#include "kube/reflector.h"
#include "kube/service.h"
#include "config/kubeconfig.h"
#include "base/log.h"
#include "serve/serve.h"
#include "version.h" /* generated: build/gen/version.h */
#include "base/xalloc.h"

/* The provider that initializes the local node from its instance metadata
 * when --cloud-provider cannot answer for it (invariant 4). */
#define DAEMON_FALLBACK_PROVIDER "metadata"

#define WAIT_BACKOFF_MIN_NS (50 * NS_PER_MS)  /* first retry while the API server is down */
#define WAIT_BACKOFF_MAX_NS (200 * NS_PER_MS) /* cap: an API server that comes up is seen
                                                 at once (a refused connection costs
                                                 next to nothing) */
#define WAIT_REPORT_NS (30 * NS_PER_S)        /* repeat "still waiting" this often */
/* the reflectors' retry cap: a missing RBAC binding (403) that appears, or an
 * API server back from an outage, is seen within this */
#define DAEMON_REFLECTOR_BACKOFF_MAX_NS (4 * NS_PER_S)
/* On SIGTERM the queued Events are sent until this long after the stop
 * began (at most DAEMON_EVENTS_FLUSH_MAX_NS): what the Lease release and the
 * controllers' ends took comes off the Events' share, so the process exits
 * within about 5 s whatever the API server does (a request in flight ends
 * within a second of its stop). */
#define DAEMON_STOP_EVENTS_BY_NS (2500 * NS_PER_MS)
#define DAEMON_EVENTS_FLUSH_MAX_NS (2 * NS_PER_S)

struct stop daemon_stop;

/* The controllers --controllers names and what each needs of the
 * provider. */
static const struct daemon_controller {
	unsigned ctrl;          /* OPTIONS_CTRL_* */
	const char *name;
	size_t ops;             /* offset of the operation group it needs in
	                           struct cloud_provider */
	const char *group;      /* that group, for messages */
} daemon_controllers[] = {
	{ OPTIONS_CTRL_CLOUD_NODE, "cloud-node",
	  offsetof(struct cloud_provider, instances), "instances" },
	{ OPTIONS_CTRL_CLOUD_NODE_LIFECYCLE, "cloud-node-lifecycle",
	  offsetof(struct cloud_provider, instances), "instances" },
	{ OPTIONS_CTRL_ROUTE, "route",
	  offsetof(struct cloud_provider, routes), "routes" },
	{ OPTIONS_CTRL_SERVICE, "service",
	  offsetof(struct cloud_provider, load_balancers), "load balancers" },
};
#define DAEMON_CONTROLLERS_N (sizeof(daemon_controllers) / sizeof(daemon_controllers[0]))

const char *
daemon_controller_off(const struct cloud_provider *p, unsigned ctrl, char *buf, size_t len)
{
	for (size_t i = 0; i < DAEMON_CONTROLLERS_N; i++) {
		const struct daemon_controller *c = &daemon_controllers[i];
		if (c->ctrl != ctrl)
			continue;
		if (p == NULL)
			snprintf(buf, len, "no --cloud-provider");
		else if (*(const void *const *)((const char *)p + c->ops) == NULL)
			snprintf(buf, len, "provider \"%s\" has no %s", p->name, c->group);
		else
			return NULL;
		return buf;
	}
	snprintf(buf, len, "unknown controller");
	return buf;
}

/* daemon_warn_config says once, at warning level, what of the command line
 * will not happen: each upstream flag given without effect, each
 * controller --controllers enables that does not run, a server that needs
 * DNS, TLS verification turned off. */
static void
daemon_warn_config(const struct options *o, const struct kubeconfig *kc,
    const struct cloud_provider *p)
{
	const char *flag, *why;
	size_t it = 0;
	char reason[128], name[72];

	while ((why = options_ignored(o, &it, &flag)) != NULL) {
		snprintf(name, sizeof(name), "--%s", flag);
		log_warn("Upstream flag has no effect", "flag", name, "reason", why, NULL);
	}
	/* with no provider, "No --cloud-provider" says it for all of them */
	for (size_t i = 0; p != NULL && i < DAEMON_CONTROLLERS_N; i++) {
		const struct daemon_controller *c = &daemon_controllers[i];
		if (options_controller_enabled(o, c->ctrl) &&
		    (why = daemon_controller_off(p, c->ctrl, reason, sizeof(reason))) != NULL)
			log_warn("Controller does not run", "controller", c->name, "reason", why,
			    NULL);
	}
	if (kc->server_dns)
		log_warn("The API server is named by a DNS name: bootccm reaches it only once "
		    "DNS answers (the installed kubeconfig uses https://127.0.0.1:6443)",
		    "server", kc->server, NULL);
	if (kc->insecure_skip_tls_verify)
		log_warn("TLS verification of the API server is off: the kubeconfig sets "
		    "insecure-skip-tls-verify", "kubeconfig", kc->source, NULL);
}

/* daemon_connect_config loads --kubeconfig (or the in-cluster configuration)
 * and applies --master (kubeconfig registers the credentials as secrets). */
int
daemon_connect_config(const struct options *o, struct kubeconfig *kc, struct errbuf *e)
{
	int r;

	if (o->kubeconfig && *o->kubeconfig)
		r = kubeconfig_load(o->kubeconfig, o->context, kc, e);
	else
		r = kubeconfig_in_cluster(NULL, kc, e);
	if (r < 0)
		return r;
	if (o->master && *o->master &&
	    (r = kubeconfig_set_server(kc, o->master, "--master", e)) < 0) {
		kubeconfig_free(kc);
		return r;
	}
	return 0;
}

/* daemon_review_config loads the kubeconfig of the serving endpoint's
 * TokenReviews or SubjectAccessReviews (--authentication-kubeconfig,
 * --authorization-kubeconfig) into kc and returns it, or main when path is
 * empty (the --kubeconfig identity reviews then, as before those flags) or
 * nothing is served (--secure-port=0: upstream reads them only to serve). */
static struct kubeconfig *
daemon_review_config(const struct options *o, const char *path, struct kubeconfig *main,
    struct kubeconfig *kc, const char *flag, struct errbuf *e)
{
	int r;

	if (path == NULL || *path == '\0' || o->secure_port == 0)
		return main;
	if ((r = kubeconfig_load(path, NULL, kc, e)) < 0) {
		errbuf_prefix(e, r, "%s", flag);
		return NULL;
	}
	return kc;
}

/* daemon_whoami asks the API server who we are (SelfSubjectReview). */
static int
daemon_whoami(struct kube_client *c, char *user, size_t ulen, char *groups,
    size_t glen, struct errbuf *e)
{
	static const char body[] =
	    "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}";
	json_object *o = NULL, *st, *ui, *gs;
	const char *name;
	size_t ng, off = 0;
	int r;

	r = kube_request(c, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
	    "application/json", body, &o, NULL, e);
	if (r < 0)
		return r;
	if ((r = jsonx_object(o, "", "status", JSONX_REQUIRED, &st, e)) < 0 ||
	    (r = jsonx_object(st, "status", "userInfo", JSONX_REQUIRED, &ui, e)) < 0 ||
	    (r = jsonx_str(ui, "status.userInfo", "username", JSONX_REQUIRED, &name, NULL,
	    e)) < 0 ||
	    (r = jsonx_array(ui, "status.userInfo", "groups", 0, &gs, &ng, e)) < 0)
		goto out;
	if (*name == '\0') {
		r = errbuf_set(e, ERR_INVALID, "status.userInfo.username is empty");
		goto out;
	}
	groups[0] = '\0';
	for (size_t i = 0; i < ng && off < glen; i++) {
		json_object *g = json_object_array_get_idx(gs, i);
		int n;
		if (!json_object_is_type(g, json_type_string)) {
			r = errbuf_set(e, ERR_INVALID, "status.userInfo.groups[%zu]: expected a "
			    "string", i);
			goto out;
		}
		if ((n = snprintf(groups + off, glen - off, "%s%s", i ? "," : "",
		    json_object_get_string(g))) < 0)
			break;
		off += (size_t)n;
	}
	snprintf(user, ulen, "%s", name);
out:
	json_object_put(o);
	if (r < 0)
		errbuf_prefix(e, r, "SelfSubjectReview answer");
	return r;
}

/* daemon_server_version GETs /version and copies gitVersion into buf. */
static int
daemon_server_version(struct kube_client *c, char *buf, size_t len, struct errbuf *e)
{
	json_object *o = NULL;
	const char *v;
	int r;

	if ((r = kube_request(c, "GET", "/version", NULL, NULL, &o, NULL, e)) < 0)
		return r;
	if ((r = jsonx_str(o, "", "gitVersion", JSONX_REQUIRED, &v, NULL, e)) < 0)
		errbuf_prefix(e, r, "GET /version");
	else
		snprintf(buf, len, "%s", v);
	json_object_put(o);
	return r;
}

/* daemon_client loads the configuration and prepares a client for it. */
static int
daemon_client(const struct options *o, struct kubeconfig *kc, struct kube_client *c,
    struct errbuf *e)
{
	int r;

	if ((r = daemon_connect_config(o, kc, e)) < 0)
		return r;
	kube_client_init(c, kc, "bootccm/" BOOTCCM_VERSION);
	kube_client_set_stop(c, &daemon_stop);
	return 0;
}

/* check-kubeconfig: connect once, within --timeout, and tell what the API
 * server says. Everything printed goes through the logger's redaction: an
 * answer may echo the credentials. */
int
daemon_check_kubeconfig(const struct options *o)
{
	struct kubeconfig kc;
	struct kube_client c;
	struct errbuf e = { "" };
	char version[128], user[256], groups[1024], limit[32];
	char esc[LOG_ESCAPED_MAX], esc2[LOG_ESCAPED_MAX];
	int64_t deadline = clock_add_ns(clock_mono_ns(), o->timeout_ns);
	int r;

	if ((r = daemon_client(o, &kc, &c, &e)) < 0) {
		log_print(STDERR_FILENO, "bootccm: check-kubeconfig: %s\n",
		    log_escape(e.msg, esc, sizeof(esc)));
		return 1;
	}
	/* one attempt per request, all of them within the one deadline of a
	 * one-shot command */
	kube_client_set_retries(&c, 0, 0, 0);
	http_set_deadline(deadline);
	/* the server's texts are printed escaped: CR, LF or a terminal's
	 * control sequence in an answer must not forge or hide a line */
	log_print(STDOUT_FILENO, "server: %s\n", log_escape(kc.server, esc, sizeof(esc)));
	if ((r = daemon_server_version(&c, version, sizeof(version), &e)) < 0)
		goto fail;
	log_print(STDOUT_FILENO, "version: %s\n", log_escape(version, esc, sizeof(esc)));
	if ((r = daemon_whoami(&c, user, sizeof(user), groups, sizeof(groups), &e)) < 0)
		goto fail;
	log_print(STDOUT_FILENO, "user: %s\ngroups: %s\n", log_escape(user, esc, sizeof(esc)),
	    log_escape(groups, esc2, sizeof(esc2)));
	kube_client_cleanup(&c);
	kubeconfig_free(&kc);
	return 0;
fail:
	if (clock_mono_ns() >= deadline) {
		duration_format(o->timeout_ns, limit, sizeof(limit));
		errbuf_prefix(&e, r, "no answer within --timeout %s", limit);
	}
	log_print(STDERR_FILENO, "bootccm: check-kubeconfig: %s\n",
	    log_escape(e.msg, esc, sizeof(esc)));
	kube_client_cleanup(&c);
	kubeconfig_free(&kc);
	return 1;
}

/* daemon_wait_apiserver polls /version with capped backoff until the API server
 * answers (invariant 2: any start order; never exit for that). */
static int
daemon_wait_apiserver(struct kube_client *c, char *version, size_t len)
{
	struct errbuf e;
	struct backoff b;
	int64_t first_fail = 0, last_report = 0;

	backoff_init(&b, WAIT_BACKOFF_MIN_NS, WAIT_BACKOFF_MAX_NS, 2.0, 0);
	while (!stop_requested(&daemon_stop)) {
		if (daemon_server_version(c, version, len, &e) == 0)
			return 0;
		int64_t now = clock_mono_ns();
		if (first_fail == 0) {
			first_fail = last_report = now;
			log_warn("Waiting for the API server", "server", c->kc->server,
			    "err", e.msg, NULL);
		} else if (now - last_report >= WAIT_REPORT_NS) {
			char waited[32];
			snprintf(waited, sizeof(waited), "%llds",
			    (long long)((now - first_fail) / NS_PER_S));
			last_report = now;
			log_warn("Still waiting for the API server", "server", c->kc->server,
			    "waited", waited, "err", e.msg, NULL);
		} else {
			log_info(4, "API server not answering yet", "err", e.msg, NULL);
		}
		if (stop_sleep(&daemon_stop, backoff_next(&b)))
			break;
	}
	return ERR_TIMEOUT;
}

/* The running daemon's parts, shared with the leader-election callbacks. */
struct daemon {
	const struct options *o;
	struct kubeconfig kc;
	struct kubeconfig authn_kc;  /* --authentication-kubeconfig's, or zeroed */
	struct kubeconfig authz_kc;  /* --authorization-kubeconfig's, or zeroed */
	struct kubeconfig *authn;    /* the TokenReviews' identity: &kc or &authn_kc */
	struct kubeconfig *authz;    /* the SubjectAccessReviews': &kc or &authz_kc */
	struct reflector *nodes;     /* every replica: its own node (metadata fallback) */
	struct reflector *services;  /* the service controller's cache */
	struct lease *lease;         /* NULL with --leader-elect=false */
	struct events *events;
	const struct cloud_provider *provider;   /* NULL: no --cloud-provider */
	void *provider_state;
	const struct cloud_provider *fallback;   /* the local node's; NULL: none */
	void *fallback_state;
	struct nodectl *nodectl;     /* cloud-node: every replica (local node) */
	struct nodelifecycle *lifecycle; /* cloud-node-lifecycle: the leader only */
	struct servicectl *servicectl; /* service: its handlers on both caches,
	                                  its workers on the leader only */
	struct routectl *routectl;   /* route: handlers always, passes on the leader */
	struct csrctl *csrctl;       /* csr-approver: the leader only */
};

/* daemon_leader_gate is the controllers' write gate for the writes that
 * need the Lease: with --leader-elect=false always open, else open while
 * lease_is_leader says this replica holds it right now, so a replica
 * resumed after SIGSTOP writes nothing before its elector has noticed the
 * loss. */
static int
daemon_leader_gate(void *arg, const char *method, const char *path)
{
	struct daemon *d = arg;
	struct lease *l;

	(void)method;
	(void)path;
	if (!d->o->leader_elect)
		return 1;
	l = __atomic_load_n(&d->lease, __ATOMIC_ACQUIRE);
	return l != NULL && lease_is_leader(l);
}

/* /readyz: ready once every reflector's first LIST has been delivered. The
 * pointers are published by the main thread after the serving thread runs. */
static int
daemon_ready_informers(void *arg, struct errbuf *e)
{
	struct daemon *d = arg;
	struct reflector *n = __atomic_load_n(&d->nodes, __ATOMIC_ACQUIRE);
	struct reflector *s = __atomic_load_n(&d->services, __ATOMIC_ACQUIRE);

	if (n == NULL || s == NULL)
		return errbuf_set(e, ERR_TRANSIENT, "the API server has not answered yet");
	if (!reflector_has_synced(n) || !reflector_has_synced(s))
		return errbuf_set(e, ERR_TRANSIENT, "caches are not synced yet");
	return 0;
}

/* /healthz: the leader-election check (client-go's rule: unhealthy only when
 * leading without renewals for too long). */
static int
daemon_health_lease(void *arg, struct errbuf *e)
{
	struct daemon *d = arg;
	struct lease *l = __atomic_load_n(&d->lease, __ATOMIC_ACQUIRE);

	return l ? lease_healthz(l, e) : 0;
}

static void
daemon_started_leading(void *arg)
{
	struct daemon *d = arg;
	struct errbuf e = { "" };

	log_info(0, "Started leading: the shared controllers run on this replica",
	    "node", d->o->node_name, NULL);
	if (d->nodectl)
		nodectl_set_leading(d->nodectl, 1);
	if (d->provider && options_controller_enabled(d->o, OPTIONS_CTRL_CLOUD_NODE_LIFECYCLE)) {
		struct nodelifecycle_config lc = {
			.kc = &d->kc,
			.nodes = d->nodes,
			.provider = d->provider,
			.provider_state = d->provider_state,
			.events = d->events,
			.monitor_period_ns = d->o->node_monitor_period_ns,
			.grace_period_ns = d->o->node_deletion_grace_period_ns,
			.user_agent = "bootccm/" BOOTCCM_VERSION,
			.write_gate = daemon_leader_gate,
			.write_gate_arg = d,
		};
		int r = nodelifecycle_start(&lc, &d->lifecycle, &e);
		if (r == ERR_NOT_IMPLEMENTED)
			log_info(1, "cloud-node-lifecycle does not run", "reason", e.msg, NULL);
		else if (r < 0)
			log_error("Cannot start cloud-node-lifecycle", "err", e.msg, NULL);
	}
	/* the service controller waits for the Service and Node caches itself */
	if (d->servicectl && servicectl_start(d->servicectl, &e) < 0)
		log_error("Cannot start the service controller", "err", e.msg, NULL);
	if (d->routectl && routectl_start(d->routectl, &e) < 0)
		log_error("Cannot start route", "err", e.msg, NULL);
	if (d->nodes && options_controller_enabled(d->o, OPTIONS_CTRL_CSR_APPROVER)) {
		struct csrctl_config cc = {
			.kc = &d->kc,
			.nodes = d->nodes,
			.events = d->events,
			.trust_kubelet = d->o->csr_trust_kubelet_addresses,
			.deny = d->o->csr_deny,
			.user_agent = "bootccm/" BOOTCCM_VERSION,
		};
		if (csrctl_start(&cc, &d->csrctl, &e) < 0)
			log_error("Cannot start csr-approver", "err", e.msg, NULL);
	}
}

/* daemon_stopped_leading returns once the shared controllers have stopped
 * writing: before the Lease can pass to another replica (invariant 7). */
static void
daemon_stopped_leading(void *arg)
{
	struct daemon *d = arg;

	log_info(0, "Stopped leading: the shared controllers stop on this replica",
	    "node", d->o->node_name, NULL);
	nodelifecycle_free(d->lifecycle);
	d->lifecycle = NULL;
	csrctl_free(d->csrctl);
	d->csrctl = NULL;
	servicectl_stop(d->servicectl);
	routectl_stop(d->routectl);
	if (d->nodectl)
		nodectl_set_leading(d->nodectl, 0);
}

/* daemon_provider_warn logs what a provider's init says of input it
 * accepts (cloud_config.warn). */
static void
daemon_provider_warn(const char *msg)
{
	log_warn("The cloud config is accepted with a warning", "warning", msg, NULL);
}

/* daemon_provider initializes --cloud-provider and, when it is not the
 * fallback provider itself, DAEMON_FALLBACK_PROVIDER for the local node. No
 * --cloud-provider: no cloud controllers. */
static int
daemon_provider(struct daemon *d, int validate, struct errbuf *e)
{
	const struct options *o = d->o;
	struct cloud_config cc = {
		.node_name = o->node_name,
		.config_path = o->cloud_config,
		.md_cloud = o->metadata_cloud,
		.md_endpoint = o->metadata_endpoint,
		.md_dmi_dir = o->metadata_dmi_dir,
		.md_config_drive = o->metadata_config_drive,
		.stop = &daemon_stop,
		.cluster_name = o->cluster_name,
		.warn = daemon_provider_warn,
		.validate = validate,
	};
	const struct cloud_provider *fb;
	struct errbuf fe = { "" };
	int r;

	if (o->cloud_provider == NULL || *o->cloud_provider == '\0') {
		log_warn("No --cloud-provider: the cloud controllers do not run", NULL);
		return 0;
	}
	if ((r = cloud_provider_lookup(o->cloud_provider, &d->provider, e)) < 0 ||
	    (r = d->provider->init(&cc, &d->provider_state, e)) < 0) {
		d->provider = NULL;
		return r;
	}
	if (cloud_provider_lookup(DAEMON_FALLBACK_PROVIDER, &fb, &fe) < 0) {
		log_warn("No instance metadata fallback for the local node", "err", fe.msg, NULL);
	} else if (fb != d->provider) {
		cc.config_path = NULL;
		cc.warn = NULL;
		if (fb->init(&cc, &d->fallback_state, &fe) < 0)
			log_warn("No instance metadata fallback for the local node", "err", fe.msg,
			    NULL);
		else
			d->fallback = fb;
	}
	return 0;
}

/* daemon_nodectl creates the cloud-node controller on the node reflector
 * (before it starts: the controller adds its handlers). */
static int
daemon_nodectl(struct daemon *d, struct reflector *nodes, struct errbuf *e)
{
	struct nodectl_config nc = {
		.kc = &d->kc,
		.nodes = nodes,
		.provider = d->provider,
		.provider_state = d->provider_state,
		.fallback = d->fallback,
		.fallback_state = d->fallback_state,
		.events = d->events,
		.local_node = d->o->node_name,
		.workers = d->o->concurrent_node_syncs,
		.refresh_period_ns = d->o->node_status_update_frequency_ns,
		.user_agent = "bootccm/" BOOTCCM_VERSION,
		.write_gate = daemon_leader_gate,
		.write_gate_arg = d,
	};
	int r;

	if (d->provider == NULL || !options_controller_enabled(d->o, OPTIONS_CTRL_CLOUD_NODE))
		return 0;
	r = nodectl_new(&nc, &d->nodectl, e);
	if (r == ERR_NOT_IMPLEMENTED) {
		log_info(1, "cloud-node does not run", "reason", e->msg, NULL);
		return 0;
	}
	return r;
}

/* daemon_servicectl creates the service controller on the Service and Node
 * reflectors (before they start: it adds its handlers, and its provider
 * hears of every Service from the first LIST on); it runs on the leader. */
static int
daemon_servicectl(struct daemon *d, struct reflector *services, struct reflector *nodes,
    struct errbuf *e)
{
	struct servicectl_config sc = {
		.kc = &d->kc,
		.services = services,
		.nodes = nodes,
		.provider = d->provider,
		.provider_state = d->provider_state,
		.events = d->events,
		.cluster_name = d->o->cluster_name,
		.classes = d->o->load_balancer_classes,
		.class_only = d->o->load_balancer_class_only,
		.workers = d->o->concurrent_service_syncs,
		.sync_period_ns = d->o->service_sync_period_ns,
		.user_agent = "bootccm/" BOOTCCM_VERSION,
		.write_gate = daemon_leader_gate,
		.write_gate_arg = d,
	};
	int r;

	if (d->provider == NULL || !options_controller_enabled(d->o, OPTIONS_CTRL_SERVICE))
		return 0;
	r = servicectl_new(&sc, &d->servicectl, e);
	if (r == ERR_NOT_IMPLEMENTED) {
		log_info(1, "service does not run", "reason", e->msg, NULL);
		return 0;
	}
	return r;
}

/* daemon_routectl creates the route controller on the node reflector
 * (before it starts: the controller adds its handlers); it runs passes only
 * while leading. Like upstream: not without --configure-cloud-routes or a
 * provider with routes, and, said once, not without --cluster-cidr. */
static int
daemon_routectl(struct daemon *d, struct reflector *nodes, struct errbuf *e)
{
	const struct options *o = d->o;
	struct routectl_config rc = {
		.kc = &d->kc,
		.nodes = nodes,
		.provider = d->provider,
		.provider_state = d->provider_state,
		.events = d->events,
		.cluster_name = o->cluster_name,
		.cluster_cidr = o->cluster_cidr,
		.period_ns = o->route_reconciliation_period_ns,
		.concurrency = o->concurrent_route_syncs,
		.user_agent = "bootccm/" BOOTCCM_VERSION,
		.write_gate = daemon_leader_gate,
		.write_gate_arg = d,
	};
	int r;

	if (d->provider == NULL || !options_controller_enabled(o, OPTIONS_CTRL_ROUTE))
		return 0;
	if (!o->configure_cloud_routes) {
		log_info(1, "route does not run", "reason", "--configure-cloud-routes=false", NULL);
		return 0;
	}
	if (d->provider->routes == NULL) {
		log_info(1, "route does not run", "reason", "the cloud provider does not support "
		    "routes", "provider", d->provider->name, NULL);
		return 0;
	}
	if (o->cluster_cidr == NULL || strspn(o->cluster_cidr, " \t") == strlen(o->cluster_cidr)) {
		log_warn("--configure-cloud-routes is set and the cloud provider supports routes, "
		    "but --cluster-cidr is empty: the route controller does not run", "provider",
		    d->provider->name, NULL);
		return 0;
	}
	r = routectl_new(&rc, &d->routectl, e);
	if (r == ERR_NOT_IMPLEMENTED) {
		log_info(1, "route does not run", "reason", e->msg, NULL);
		return 0;
	}
	return r;
}

/* daemon_informers creates and starts the reflectors every replica runs. */
static int
daemon_informers(struct daemon *d, struct errbuf *e)
{
	struct reflector_config nodes = {
		.resource = "nodes",
		.path = KUBE_NODE_PATH,
		.decode = kube_node_decode_obj,
		.user_agent = "bootccm/" BOOTCCM_VERSION,
		.resync_ns = d->o->min_resync_period_ns,
		.backoff_max_ns = DAEMON_REFLECTOR_BACKOFF_MAX_NS,
	};
	struct reflector_config services = {
		.resource = "services",
		.path = KUBE_SERVICE_PATH,
		.namespaced = 1,
		.decode = kube_service_decode_obj,
		.user_agent = "bootccm/" BOOTCCM_VERSION,
		.resync_ns = d->o->min_resync_period_ns,
		.backoff_max_ns = DAEMON_REFLECTOR_BACKOFF_MAX_NS,
	};
	int r;

	struct reflector *rn = NULL, *rs = NULL;

	if ((r = reflector_new(&d->kc, &nodes, &rn, e)) < 0 ||
	    (r = reflector_new(&d->kc, &services, &rs, e)) < 0 ||
	    (r = daemon_nodectl(d, rn, e)) < 0 ||
	    (r = daemon_servicectl(d, rs, rn, e)) < 0 ||
	    (r = daemon_routectl(d, rn, e)) < 0 ||
	    (r = reflector_start(rn, e)) < 0 ||
	    (r = reflector_start(rs, e)) < 0 ||
	    (d->nodectl && (r = nodectl_start(d->nodectl, e)) < 0)) {
		/* as at the end of daemon_run: handlers stop, then controllers */
		reflector_stop(rn);
		reflector_stop(rs);
		nodectl_free(d->nodectl);
		d->nodectl = NULL;
		routectl_free(d->routectl);
		d->routectl = NULL;
		servicectl_free(d->servicectl);
		d->servicectl = NULL;
		reflector_free(rn);
		reflector_free(rs);
		return r;
	}
	__atomic_store_n(&d->nodes, rn, __ATOMIC_RELEASE);
	__atomic_store_n(&d->services, rs, __ATOMIC_RELEASE);
	return 0;
}

/* --- the provider's health ----------------------------------------------------
 * A provider with a health operation works around a standing problem of its
 * own input (the static provider's inventory file that no longer parses:
 * the last good one stays in force). The main thread asks it every
 * DAEMON_HEALTH_POLL_NS and tells the operator: a log line and a Warning
 * Event on the local Node when the problem appears or changes, again every
 * DAEMON_HEALTH_REPEAT_NS while it stands, and a log line and a Normal Event
 * once it is fixed. */

#define DAEMON_HEALTH_POLL_NS (2 * NS_PER_S)
#define DAEMON_HEALTH_REPEAT_NS (10 * 60 * NS_PER_S)
#define DAEMON_HEALTH_BAD "ProviderInputInvalid"  /* Event reasons */
#define DAEMON_HEALTH_GOOD "ProviderInputValid"

struct daemon_health {
	int bad;                        /* the last answer was a problem */
	char msg[ERRBUF_MAX];           /* its message */
	int64_t reported_ns;            /* clock_mono_ns when last told */
};

static void
daemon_health_check(struct daemon *d, struct daemon_health *h)
{
	struct events_ref node = { .kind = "Node", .name = d->o->node_name, .api_version = "v1" };
	struct errbuf e = { "" };
	int64_t now = clock_mono_ns();

	if (d->provider == NULL || d->provider->health == NULL)
		return;
	if (d->provider->health(d->provider_state, &e) == 0) {
		if (h->bad) {
			log_info(0, "The cloud provider's input is good again", "provider",
			    d->provider->name, NULL);
			events_recordf(d->events, &node, EVENTS_NORMAL, DAEMON_HEALTH_GOOD,
			    "Cloud provider %s: its input is good again", d->provider->name);
		}
		h->bad = 0;
		return;
	}
	if (h->bad && strcmp(h->msg, e.msg) == 0 && now - h->reported_ns < DAEMON_HEALTH_REPEAT_NS)
		return;
	h->bad = 1;
	memcpy(h->msg, e.msg, sizeof(h->msg));
	h->reported_ns = now;
	log_warn("The cloud provider's input is broken", "provider", d->provider->name,
	    "err", e.msg, NULL);
	events_recordf(d->events, &node, EVENTS_WARNING, DAEMON_HEALTH_BAD,
	    "Cloud provider %s: %s", d->provider->name, e.msg);
}

/* daemon_credentials asks the provider's credentials operation and the
 * kubeconfig's token file for their generations (two separate counts). */
static void
daemon_credentials(struct daemon *d, uint64_t gen[2])
{
	gen[0] = d->provider && d->provider->credentials ?
	    d->provider->credentials(d->provider_state) : 0;
	gen[1] = kubeconfig_token_generation(&d->kc);
}

/* daemon_credentials_check tells whether the provider's credentials or the
 * kubeconfig's token changed since gen and, when they did, has the
 * controllers retry at once what waits on a failure: a node refused for
 * the old token does not sit out its backoff once the new one is in place. */
static void
daemon_credentials_check(struct daemon *d, uint64_t gen[2])
{
	uint64_t now[2];

	daemon_credentials(d, now);
	if (now[0] == gen[0] && now[1] == gen[1])
		return;
	if (now[0] != gen[0])
		log_info(0, "The cloud provider's credentials changed: retrying what failed",
		    "provider", d->provider->name, NULL);
	if (now[1] != gen[1])
		log_info(0, "The kubeconfig's token changed: retrying what failed",
		    "tokenFile", d->kc.token_file, NULL);
	gen[0] = now[0];
	gen[1] = now[1];
	nodectl_retry_now(d->nodectl);
	servicectl_retry_now(d->servicectl);
	routectl_retry_now(d->routectl);
}

/* daemon_watch_provider asks the provider for its health, and the
 * provider and the kubeconfig for their credentials, until stopped. */
static void
daemon_watch_provider(struct daemon *d)
{
	struct daemon_health h = { 0, "", 0 };
	uint64_t gen[2];
	int64_t next_health = 0;

	daemon_credentials(d, gen);
	do {
		int64_t now = clock_mono_ns();
		if (now >= next_health) {
			daemon_health_check(d, &h);
			next_health = now + DAEMON_HEALTH_POLL_NS;
		}
		daemon_credentials_check(d, gen);
	} while (!stop_sleep(&daemon_stop, CLOUD_CREDENTIALS_POLL_NS));
}

/* daemon_preflight runs every check the daemon makes before it starts,
 * loading what it will run with into d: the kubeconfigs (--kubeconfig, then
 * the review ones), the provider with its cloud config, and the serving
 * endpoint's flags and files (serve_preflight). daemon_run and --validate
 * both call it, so --validate cannot pass what the daemon then refuses; the
 * flags themselves were checked by options_parse. validate: the provider
 * also refuses what the daemon would start without (cloud_config.validate).
 * Returns 0, or an error with e and *ret_what, the log message saying which
 * step failed; what was loaded is freed by daemon_release. */
static int
daemon_preflight(struct daemon *d, int validate, const char **ret_what, struct errbuf *e)
{
	const struct options *o = d->o;
	struct serve_config sc;
	int r;

	*ret_what = "Cannot load the API server configuration";
	if ((r = daemon_connect_config(o, &d->kc, e)) < 0)
		return r;
	if ((d->authn = daemon_review_config(o, o->authentication_kubeconfig, &d->kc,
	    &d->authn_kc, "--authentication-kubeconfig", e)) == NULL ||
	    (d->authz = daemon_review_config(o, o->authorization_kubeconfig, &d->kc,
	    &d->authz_kc, "--authorization-kubeconfig", e)) == NULL)
		return ERR_INVALID;
	*ret_what = "Cannot start the cloud provider";
	if ((r = daemon_provider(d, validate, e)) < 0)
		return errbuf_prefix(e, r, "--cloud-provider %s", o->cloud_provider);
	*ret_what = "Cannot serve";
	options_serve_config(o, &sc);
	if ((r = serve_preflight(&sc, e)) < 0)
		return r;
	return 0;
}

/* daemon_release frees what daemon_preflight loaded. */
static void
daemon_release(struct daemon *d)
{
	if (d->provider)
		d->provider->free(d->provider_state);
	if (d->fallback)
		d->fallback->free(d->fallback_state);
	d->provider = d->fallback = NULL;
	kubeconfig_free(&d->authn_kc);
	kubeconfig_free(&d->authz_kc);
	kubeconfig_free(&d->kc);
}

int
daemon_run(const struct options *o)
{
	struct daemon d = { .o = o };
	struct serve_config sc;
	struct kube_client c;
	struct errbuf e = { "" };
	char version[128], user[256], groups[1024];
	const char *what;
	int64_t stopping_ns;
	int rc = 0;

	if (daemon_preflight(&d, 0, &what, &e) < 0) {
		log_error(what, "err", e.msg, NULL);
		daemon_release(&d);
		return 1;
	}
	kube_client_init(&c, &d.kc, "bootccm/" BOOTCCM_VERSION);
	kube_client_set_stop(&c, &daemon_stop);
	/* the wait for the API server is a retry loop of its own: one attempt per
	 * call, so a server that comes up is seen at the next poll */
	kube_client_set_retries(&c, 0, 0, 0);
	log_info(0, "Starting bootccm", "version", BOOTCCM_VERSION, "commit", BOOTCCM_COMMIT,
	    "kubeconfig", d.kc.source, "server", d.kc.server, "node", o->node_name,
	    "cloudProvider", o->cloud_provider ? o->cloud_provider : "", NULL);
	flowcontrol_init(o->kube_api_qps, o->kube_api_burst);
	daemon_warn_config(o, &d.kc, d.provider);

	/* probes answer from the start: alive while waiting, not ready */
	options_serve_config(o, &sc);
	if (serve_add_readyz("informer-sync", daemon_ready_informers, &d) < 0 ||
	    serve_add_healthz("leaderElection", daemon_health_lease, &d) < 0 ||
	    serve_start(&sc, d.authn, d.authz, &e) < 0) {
		log_error("Cannot serve", "err", e.msg, NULL);
		serve_stop();
		rc = 1;
		goto out;
	}

	if (daemon_wait_apiserver(&c, version, sizeof(version)) < 0)
		goto stop;
	log_info(0, "API server answered", "server", d.kc.server, "version", version, NULL);
	if (daemon_whoami(&c, user, sizeof(user), groups, sizeof(groups), &e) == 0)
		log_info(0, "Authenticated", "user", user, "groups", groups, NULL);
	else
		log_warn("Cannot tell who the API server thinks we are", "err", e.msg, NULL);

	struct events_config ec = { .host = o->node_name };
	if (events_new(&d.kc, &ec, &d.events, &e) < 0 || events_start(d.events, &e) < 0 ||
	    daemon_informers(&d, &e) < 0) {
		log_error("Cannot start", "err", e.msg, NULL);
		rc = 1;
		goto stop;
	}
	if (o->leader_elect) {
		struct lease_config lc;
		options_lease_config(o, &lc);
		lc.on_started_leading = daemon_started_leading;
		lc.on_stopped_leading = daemon_stopped_leading;
		lc.arg = &d;
		struct lease *l = NULL;
		/* published before it starts: the write gate of the first
		 * leader callback's controllers reads it */
		if (lease_new(&d.kc, &lc, &l, &e) == 0)
			__atomic_store_n(&d.lease, l, __ATOMIC_RELEASE);
		if (l == NULL || lease_start(l, &e) < 0) {
			__atomic_store_n(&d.lease, NULL, __ATOMIC_RELEASE);
			lease_free(l);
			log_error("Cannot start leader election", "err", e.msg, NULL);
			rc = 1;
			goto stop;
		}
	} else {
		daemon_started_leading(&d);
	}
	daemon_watch_provider(&d);
stop:
	stopping_ns = clock_mono_ns();
	log_info(0, "Stopping on signal", NULL);
	/* the Lease first: a successor takes over at once, and the shared
	 * controllers stop before anything else goes away */
	if (d.lease) {
		lease_stop(d.lease);
	} else if (!rc && d.nodes) {
		daemon_stopped_leading(&d);
	}
	/* the serving thread reads the reflectors and the lease: it goes first */
	serve_stop();
	lease_free(d.lease);
	nodelifecycle_free(d.lifecycle);
	/* the reflectors' threads call the controllers' handlers: they stop
	 * first; the caches stay readable until they are freed, after the
	 * controllers whose workers read them */
	reflector_stop(d.nodes);
	reflector_stop(d.services);
	csrctl_free(d.csrctl);      /* it reads the node cache and records Events */
	nodectl_free(d.nodectl);
	routectl_free(d.routectl);
	servicectl_free(d.servicectl);
	reflector_free(d.nodes);
	reflector_free(d.services);
	if (d.events) {
		int64_t flush = stopping_ns + DAEMON_STOP_EVENTS_BY_NS - clock_mono_ns();
		events_stop(d.events, flush < 0 ? 0 : flush > DAEMON_EVENTS_FLUSH_MAX_NS ?
		    DAEMON_EVENTS_FLUSH_MAX_NS : flush);
	}
	events_free(d.events);
out:
	kube_client_cleanup(&c);
	daemon_release(&d);
	return rc;
}

int
daemon_validate(const struct options *o)
{
	struct daemon d = { .o = o };
	struct errbuf e = { "" };
	const char *what;
	char esc[LOG_ESCAPED_MAX];

	if (daemon_preflight(&d, 1, &what, &e) < 0) {
		log_print(STDERR_FILENO, "bootccm: --validate: %s\n",
		    log_escape(e.msg, esc, sizeof(esc)));
		daemon_release(&d);
		return 2;
	}
	daemon_warn_config(o, &d.kc, d.provider);
	log_print(STDOUT_FILENO, "valid: kubeconfig %s (server %s), cloud provider %s, "
	    "cloud config %s\n", d.kc.source, d.kc.server,
	    o->cloud_provider && *o->cloud_provider ? o->cloud_provider : "(none)",
	    o->cloud_config && *o->cloud_config ? o->cloud_config : "(none)");
	daemon_release(&d);
	return 0;
}
