/* options.c - the flag table: upstream cloud-controller-manager names and
 * defaults (k8s.io/cloud-provider, k8s.io/controller-manager), then bootccm's. */
#include "options.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flags.h"
#include "cloud.h"
#include "controllers/servicectl.h"
#include "controllers/routectl.h"
#include "log.h"
#include "metadata/cmd.h"
#include "metadata/metadata.h"
#include "xalloc.h"

/* The table points into the struct being parsed, so it is built per call. */
#define O(field) ((void *)&o->field)

static size_t
options_table(struct options *o, struct flag *t, size_t cap)
{
	const struct flag table[] = {
	{ "kubeconfig", FLAG_STRING, O(kubeconfig), NULL,
	  "Path to a kubeconfig file with authorization and API server location; in-cluster configuration when empty.", 0 },
	{ "context", FLAG_STRING, O(context), NULL,
	  "The kubeconfig context to use instead of its current-context.", 0 },
	{ "master", FLAG_STRING, O(master), NULL,
	  "The address of the Kubernetes API server (overrides any value in kubeconfig).", 0 },
	{ "kube-api-qps", FLAG_FLOAT, O(kube_api_qps), "20",
	  "QPS to use while talking with the Kubernetes API server.", 0 },
	{ "kube-api-burst", FLAG_INT, O(kube_api_burst), "30",
	  "Burst to use while talking with the Kubernetes API server.", 0 },
	{ "cloud-provider", FLAG_STRING, O(cloud_provider), NULL,
	  "The provider for cloud services (metadata).", 0 },
	{ "cloud-config", FLAG_STRING, O(cloud_config), NULL,
	  "The path to the cloud provider configuration file (YAML). Empty string for no configuration file.", 0 },
	{ "controllers", FLAG_STRING, O(controllers), "*",
	  "Comma-separated controllers to enable: '*' enables all on-by-default controllers, 'foo' enables foo, '-foo' disables foo. All: cloud-node, cloud-node-lifecycle, route, service.", 0 },
	{ "cluster-name", FLAG_STRING, O(cluster_name), "kubernetes",
	  "The instance prefix for the cluster (used in load-balancer names).", 0 },
	{ "cluster-cidr", FLAG_STRING, O(cluster_cidr), NULL,
	  "CIDR range for Pods in the cluster (at most two, comma-separated, one per IP family).", 0 },
	{ "allocate-node-cidrs", FLAG_BOOL, O(allocate_node_cidrs), "false",
	  "Should CIDRs for Pods be allocated and set on the cloud provider.", 0 },
	{ "configure-cloud-routes", FLAG_BOOL, O(configure_cloud_routes), "true",
	  "Should CIDRs allocated by allocate-node-cidrs be configured on the cloud provider.", 0 },
	{ "node-name", FLAG_STRING, O(node_name), NULL,
	  "The node this replica runs on, initialized from the local metadata service when the cloud API cannot answer (default the host name).", 0 },
	MD_FLAGS(O(metadata_cloud), O(metadata_endpoint), O(metadata_dmi_dir),
	    O(metadata_config_drive)),
	{ "concurrent-node-syncs", FLAG_INT, O(concurrent_node_syncs), "1",
	  "Number of workers concurrently synchronizing nodes.", 0 },
	{ "concurrent-service-syncs", FLAG_INT, O(concurrent_service_syncs), "1",
	  "Number of services that are allowed to sync concurrently.", 0 },
	{ "node-monitor-period", FLAG_DURATION, O(node_monitor_period_ns), "5s",
	  "The period for syncing NodeStatus in the cloud-node-lifecycle controller.", 0 },
	{ "node-deletion-grace-period", FLAG_DURATION, O(node_deletion_grace_period_ns), "5m0s",
	  "Nodes younger than this (since their creation) are never deleted by the cloud-node-lifecycle controller; 0 for no grace.", 0 },
	{ "node-status-update-frequency", FLAG_DURATION, O(node_status_update_frequency_ns), "5m0s",
	  "Specifies how often the controller updates nodes' status (addresses).", 0 },
	{ "route-reconciliation-period", FLAG_DURATION, O(route_reconciliation_period_ns), "10s",
	  "The period for reconciling routes created for Nodes by the cloud provider.", 0 },
	{ "concurrent-route-syncs", FLAG_INT, O(concurrent_route_syncs), "200",
	  "Number of route operations (creates, deletes) the route controller asks of the cloud provider at once; a rate-limited cloud API wants fewer.", 0 },
	{ "min-resync-period", FLAG_DURATION, O(min_resync_period_ns), "12h0m0s",
	  "The resync period in reflectors will be random between MinResyncPeriod and 2*MinResyncPeriod.", 0 },
	{ "load-balancer-class", FLAG_STRINGS, O(load_balancer_classes), NULL,
	  "A spec.loadBalancerClass whose Services the service controller serves, besides those without a class (repeatable).", 0 },
	{ "load-balancer-class-only", FLAG_BOOL, O(load_balancer_class_only), "false",
	  "Serve only the Services of the --load-balancer-class classes, not those without a class.", 0 },
	{ "service-sync-period", FLAG_DURATION, O(service_sync_period_ns), "5m0s",
	  "How often the service controller checks every load balancer with the provider and ensures again those that drifted.", 0 },
	{ "leader-elect", FLAG_BOOL, O(leader_elect), "true",
	  "Start a leader election client and gain leadership before executing the main loop.", 0 },
	{ "leader-elect-lease-duration", FLAG_DURATION, O(leader_elect_lease_duration_ns), "15s",
	  "The duration that non-leader candidates will wait after observing a leadership renewal before attempting to acquire leadership.", 0 },
	{ "leader-elect-renew-deadline", FLAG_DURATION, O(leader_elect_renew_deadline_ns), "10s",
	  "The interval between attempts by the acting leader to renew a leadership slot before it stops leading.", 0 },
	{ "leader-elect-retry-period", FLAG_DURATION, O(leader_elect_retry_period_ns), "2s",
	  "The duration the clients should wait between attempting acquisition and renewal of a leadership.", 0 },
	{ "leader-elect-resource-lock", FLAG_STRING, O(leader_elect_resource_lock), "leases",
	  "The type of resource object that is used for locking during leader election. Supported: 'leases'.", 0 },
	{ "leader-elect-resource-name", FLAG_STRING, O(leader_elect_resource_name), "cloud-controller-manager",
	  "The name of resource object that is used for locking during leader election.", 0 },
	{ "leader-elect-resource-namespace", FLAG_STRING, O(leader_elect_resource_namespace), "kube-system",
	  "The namespace of resource object that is used for locking during leader election.", 0 },
	{ "bind-address", FLAG_STRING, O(bind_address), "0.0.0.0",
	  "The IP address on which to listen for the --secure-port port.", 0 },
	{ "secure-port", FLAG_INT, O(secure_port), "10258",
	  "The port on which to serve HTTPS with authentication and authorization. If 0, don't serve HTTPS at all.", 0 },
	{ "tls-cert-file", FLAG_STRING, O(tls_cert_file), NULL,
	  "File containing the default x509 certificate for HTTPS; a self-signed certificate is generated in memory when empty.", 0 },
	{ "tls-private-key-file", FLAG_STRING, O(tls_private_key_file), NULL,
	  "File containing the default x509 private key matching --tls-cert-file.", 0 },
	{ "authorization-always-allow-paths", FLAG_STRING, O(authorization_always_allow_paths), "/healthz,/readyz,/livez",
	  "Comma-separated HTTP paths to skip during authorization.", 0 },
	{ "v", FLAG_INT, O(verbosity), "0",
	  "Number for the log level verbosity.", 0 },
	{ "logging-format", FLAG_STRING, O(logging_format), "text",
	  "Sets the log format. Permitted formats: \"json\", \"text\".", 0 },
	{ "help", FLAG_BOOL, O(help), "false", "Help for bootccm.", 0 },
	{ "version", FLAG_BOOL, O(version), "false", "Print version information and quit.", 0 },
	};
	size_t n = sizeof(table) / sizeof(table[0]);
	if (n > cap)
		log_fatal("options: the flag table outgrew OPTIONS_MAX", NULL);
	memcpy(t, table, sizeof(table));
	return n;
}

#define OPTIONS_MAX 64

/* The controllers --controllers names, in OPTIONS_CTRL_* bit order. */
static const char *const options_ctrl_names[] = {
	"cloud-node", "cloud-node-lifecycle", "route", "service",
};

/* options_controllers parses --controllers like the upstream CCM: "*" turns
 * on every controller, "name" one, "-name" turns one off (and wins over
 * "*"); an unknown name is an error naming it. */
static int
options_controllers(const char *list, unsigned *ret, struct errbuf *e)
{
	unsigned on = 0, off = 0;
	const char *p = list ? list : "";
	size_t n = sizeof(options_ctrl_names) / sizeof(options_ctrl_names[0]);

	while (*p != '\0') {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int neg = len > 0 && p[0] == '-';
		const char *name = p + neg;
		size_t nlen = len - (size_t)neg, i;

		if (nlen == 1 && name[0] == '*' && !neg) {
			on |= (1u << n) - 1;
		} else if (nlen > 0) {
			for (i = 0; i < n; i++)
				if (strlen(options_ctrl_names[i]) == nlen &&
				    strncmp(options_ctrl_names[i], name, nlen) == 0)
					break;
			if (i == n)
				return errbuf_set(e, ERR_INVALID, "--controllers \"%.*s\": unknown "
				    "controller \"%.*s\"; known: *, cloud-node, cloud-node-lifecycle, "
				    "route, service", (int)strlen(list), list, (int)nlen, name);
			if (neg)
				off |= 1u << i;
			else
				on |= 1u << i;
		}
		p += len + (end != NULL);
	}
	*ret = on & ~off;
	return 0;
}

int
options_controller_enabled(const struct options *o, unsigned ctrl)
{
	unsigned mask = 0;
	struct errbuf e;

	return options_controllers(o->controllers, &mask, &e) == 0 && (mask & ctrl) != 0;
}

/* options_validate_service checks the service controller's flags. */
static int
options_validate_service(const struct options *o, struct errbuf *e)
{
	if (o->service_sync_period_ns <= 0)
		return errbuf_set(e, ERR_INVALID, "--service-sync-period must be greater than zero");
	return servicectl_classes_check(o->load_balancer_classes, o->load_balancer_class_only, e);
}

static int
options_validate(const struct options *o, struct errbuf *e)
{
	struct md_config md;
	unsigned mask;
	int r;

	md_config_init(&md);
	if (o->kube_api_qps <= 0)
		return errbuf_set(e, ERR_INVALID, "--kube-api-qps must be greater than 0");
	if (o->kube_api_burst < 1)
		return errbuf_set(e, ERR_INVALID, "--kube-api-burst must be at least 1");
	if (o->secure_port < 0 || o->secure_port > 65535)
		return errbuf_set(e, ERR_INVALID, "--secure-port %d must be between 0 and 65535",
		    o->secure_port);
	if (o->concurrent_node_syncs < 1)
		return errbuf_set(e, ERR_INVALID, "--concurrent-node-syncs must be at least 1");
	if (o->concurrent_service_syncs < 1)
		return errbuf_set(e, ERR_INVALID, "--concurrent-service-syncs must be at least 1");
	if (md_config_set(&md, o->metadata_cloud, o->metadata_endpoint, o->metadata_dmi_dir,
	    o->metadata_config_drive, e) < 0)
		return ERR_INVALID;
	if (o->verbosity < 0)
		return errbuf_set(e, ERR_INVALID, "-v must not be negative");
	if (strcmp(o->logging_format, "text") != 0 && strcmp(o->logging_format, "json") != 0)
		return errbuf_set(e, ERR_INVALID,
		    "--logging-format \"%s\": permitted formats are \"json\" and \"text\"",
		    o->logging_format);
	if (o->cloud_provider && *o->cloud_provider) {
		const struct cloud_provider *p;
		r = cloud_provider_lookup(o->cloud_provider, &p, e);
		if (r < 0)
			return r;
	}
	/* the route controller's flags (an empty --cluster-cidr: it does not
	 * run, which the daemon says) */
	if (o->concurrent_route_syncs < 1)
		return errbuf_set(e, ERR_INVALID, "--concurrent-route-syncs must be at least 1");
	if (o->cluster_cidr && strspn(o->cluster_cidr, " \t") < strlen(o->cluster_cidr)) {
		struct netprefix cidrs[ROUTECTL_CIDRS_MAX];
		size_t ncidrs;
		if ((r = routectl_cidrs_parse(o->cluster_cidr, cidrs, &ncidrs, e)) < 0)
			return r;
	}
	if (o->node_deletion_grace_period_ns < 0)
		return errbuf_set(e, ERR_INVALID, "--node-deletion-grace-period must not be negative");
	if ((r = options_controllers(o->controllers, &mask, e)) < 0)
		return r;
	if ((r = options_validate_service(o, e)) < 0)
		return r;
	if (strcmp(o->leader_elect_resource_lock, "leases") != 0)
		return errbuf_set(e, ERR_INVALID,
		    "--leader-elect-resource-lock \"%s\": only \"leases\" is supported",
		    o->leader_elect_resource_lock);
	struct { const char *name; int64_t v; } d[] = {
		{ "node-monitor-period", o->node_monitor_period_ns },
		{ "node-status-update-frequency", o->node_status_update_frequency_ns },
		{ "route-reconciliation-period", o->route_reconciliation_period_ns },
		{ "min-resync-period", o->min_resync_period_ns },
		{ "leader-elect-lease-duration", o->leader_elect_lease_duration_ns },
		{ "leader-elect-renew-deadline", o->leader_elect_renew_deadline_ns },
		{ "leader-elect-retry-period", o->leader_elect_retry_period_ns },
	};
	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++)
		if (d[i].v <= 0)
			return errbuf_set(e, ERR_INVALID, "--%s must be greater than zero",
			    d[i].name);
	if (o->leader_elect) {
		/* client-go's leaderelection.NewLeaderElector checks */
		if (o->leader_elect_lease_duration_ns <= o->leader_elect_renew_deadline_ns)
			return errbuf_set(e, ERR_INVALID,
			    "--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline");
		if (o->leader_elect_renew_deadline_ns * 10 <= o->leader_elect_retry_period_ns * 12)
			return errbuf_set(e, ERR_INVALID,
			    "--leader-elect-renew-deadline must be greater than 1.2 x --leader-elect-retry-period");
	}
	return 0;
}

int
options_parse(struct options *o, int argc, char **argv, int first, struct errbuf *e)
{
	struct flag t[OPTIONS_MAX];
	size_t n;
	int r;

	memset(o, 0, sizeof(*o));
	n = options_table(o, t, OPTIONS_MAX);
	if ((r = flags_defaults(t, n, e)) < 0)
		return r;
	if ((r = flags_parse(t, n, argc, argv, first, NULL, e)) < 0)
		return r;
	if (o->help)
		return OPTIONS_EXIT_HELP;
	if (o->version)
		return OPTIONS_EXIT_VERSION;
	if (o->node_name == NULL || *o->node_name == '\0') {
		char host[256];
		if (gethostname(host, sizeof(host)) == 0) {
			host[sizeof(host) - 1] = '\0';
			free(o->node_name);
			o->node_name = xstrdup(host);
		}
	}
	return options_validate(o, e);
}

void
options_usage(FILE *out, const char *prog)
{
	struct options o;
	struct flag t[OPTIONS_MAX];
	size_t n;

	memset(&o, 0, sizeof(o));
	n = options_table(&o, t, OPTIONS_MAX);
	fprintf(out,
	    "Usage: %s [flags]                  run the cloud-controller-manager\n"
	    "       %s check-kubeconfig [flags] connect once, print the server version and user\n"
	    "       %s metadata [flags]         print this instance's facts (see metadata --help)\n"
	    "       %s --version\n\n"
	    "Flags:\n", prog, prog, prog, prog);
	flags_usage(t, n, out);
}

void
options_free(struct options *o)
{
	struct flag t[OPTIONS_MAX];
	size_t n = options_table(o, t, OPTIONS_MAX);

	flags_free(t, n);
	memset(o, 0, sizeof(*o));
}
