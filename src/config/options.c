/* options.c - the flag table: upstream cloud-controller-manager names and
 * defaults (k8s.io/cloud-provider, k8s.io/controller-manager), then bootccm's. */
#include "config/options.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/flags.h"
#include "cloud.h"
#include "controllers/servicectl.h"
#include "controllers/routectl.h"
#include "base/clock.h"
#include "base/duration.h"
#include "config/featuregate.h"
#include "kube/lease.h"
#include "config/kubeconfig.h"
#include "base/labelsel.h"
#include "base/log.h"
#include "cmd/metadata.h"
#include "metadata/metadata.h"
#include "base/netaddr.h"
#include "base/numparse.h"
#include "serve/serve.h"
#include "serve/servetls.h"
#include "base/xalloc.h"

#define OPTIONS_MAX 128

/* What bootccm does with an upstream flag it does not act on. */
enum options_compat_kind {
	OPTIONS_NO_EFFECT,  /* accepted; logged at start when given a value in no "same" */
	OPTIONS_REFUSED,    /* a value in no "same" exits 2 with the reason */
};

/* The upstream cloud-controller-manager's flags (Kubernetes 1.32 to 1.37:
 * k8s.io/cloud-provider options, k8s.io/controller-manager's generic and
 * debugging options, k8s.io/apiserver's secure serving and delegated
 * authentication and authorization, component-base's logging and feature
 * gates) that bootccm does not implement. same lists the values,
 * '|'-separated, that ask for what bootccm does anyway (NULL: every value):
 * those are honoured, and only other values are logged or refused. */
struct options_compat {
	const char *name;
	enum flag_type type;
	enum options_compat_kind kind;
	const char *same;
	const char *usage;  /* the reason, in --help and in the messages */
};

static const struct options_compat options_compat[] = {
	{ "profiling", FLAG_BOOL, OPTIONS_NO_EFFECT, "false",
	  "No effect: bootccm serves no /debug/pprof." },
	{ "contention-profiling", FLAG_BOOL, OPTIONS_NO_EFFECT, "false",
	  "No effect: bootccm serves no /debug/pprof." },
	{ "kube-api-content-type", FLAG_STRING, OPTIONS_NO_EFFECT, "application/json",
	  "No effect: bootccm sends and reads JSON, never protobuf." },
	{ "controller-start-interval", FLAG_DURATION, OPTIONS_NO_EFFECT, "0s",
	  "No effect: the controllers start at once." },
	{ "use-service-account-credentials", FLAG_BOOL, OPTIONS_NO_EFFECT, "false",
	  "No effect: every controller acts as the --kubeconfig user (static-pod/rbac.yaml grants it what they need)." },
	{ "external-cloud-volume-plugin", FLAG_STRING, OPTIONS_NO_EFFECT, "",
	  "No effect: volume plugins are kube-controller-manager's." },
	{ "allow-untagged-cloud", FLAG_BOOL, OPTIONS_NO_EFFECT, "false",
	  "No effect: deprecated upstream; no provider here reads a cluster tag." },
	{ "cidr-allocator-type", FLAG_STRING, OPTIONS_NO_EFFECT, "RangeAllocator",
	  "No effect: bootccm allocates no Pod CIDRs." },
	{ "node-sync-period", FLAG_DURATION, OPTIONS_NO_EFFECT, "0s",
	  "No effect: deprecated and without effect upstream too." },
	{ "cert-dir", FLAG_STRING, OPTIONS_NO_EFFECT, "",
	  "No effect: the self-signed serving certificate stays in memory." },
	{ "http2-max-streams-per-connection", FLAG_INT, OPTIONS_NO_EFFECT, "0",
	  "No effect: bootccm serves HTTP/1.1." },
	{ "permit-port-sharing", FLAG_BOOL, OPTIONS_NO_EFFECT, "false",
	  "No effect: the serving port is bound without SO_REUSEPORT." },
	{ "permit-address-sharing", FLAG_BOOL, OPTIONS_NO_EFFECT, "true",
	  "No effect: the serving port is always bound with SO_REUSEADDR." },
	{ "authentication-skip-lookup", FLAG_BOOL, OPTIONS_NO_EFFECT, "true",
	  "No effect: bootccm never reads the extension-apiserver-authentication ConfigMap." },
	{ "authentication-tolerate-lookup-failure", FLAG_BOOL, OPTIONS_NO_EFFECT, NULL,
	  "Accepted: nothing is looked up, so no lookup can fail." },
	{ "client-ca-file", FLAG_STRING, OPTIONS_NO_EFFECT, "",
	  "No effect: client certificates are not authenticated; /metrics needs a bearer token." },
	{ "requestheader-client-ca-file", FLAG_STRING, OPTIONS_NO_EFFECT, "",
	  "No effect: request-header authentication is not done; those headers are never trusted." },
	{ "requestheader-allowed-names", FLAG_STRING, OPTIONS_NO_EFFECT, "",
	  "No effect: request-header authentication is not done; those headers are never trusted." },
	{ "requestheader-username-headers", FLAG_STRING, OPTIONS_NO_EFFECT, "|x-remote-user|X-Remote-User",
	  "No effect: request-header authentication is not done; those headers are never trusted." },
	{ "requestheader-group-headers", FLAG_STRING, OPTIONS_NO_EFFECT, "|x-remote-group|X-Remote-Group",
	  "No effect: request-header authentication is not done; those headers are never trusted." },
	{ "requestheader-extra-headers-prefix", FLAG_STRING, OPTIONS_NO_EFFECT, "|x-remote-extra-|X-Remote-Extra-",
	  "No effect: request-header authentication is not done; those headers are never trusted." },
	{ "requestheader-uid-headers", FLAG_STRING, OPTIONS_NO_EFFECT, "",
	  "No effect: request-header authentication is not done; those headers are never trusted." },
	{ "feature-gates", FLAG_STRING, OPTIONS_NO_EFFECT, "",
	  "No effect: no gate changes what bootccm does; the names are checked against the upstream manager's gates (an unknown gate, or a locked one set the other way, is refused as upstream refuses it). CloudControllerManagerWatchBasedRoutesReconciliation: the route controller is event-driven already." },
	{ "vmodule", FLAG_STRING, OPTIONS_NO_EFFECT, "",
	  "No effect: no per-file verbosity; use -v (the pattern=N list is checked)." },
	{ "log-flush-frequency", FLAG_DURATION, OPTIONS_NO_EFFECT, NULL,
	  "Accepted: every log line is written at once." },
	{ "log-json-info-buffer-size", FLAG_STRING, OPTIONS_NO_EFFECT, "|0",
	  "No effect: log lines are not buffered." },
	{ "log-json-split-stream", FLAG_BOOL, OPTIONS_NO_EFFECT, "false",
	  "No effect: every log line goes to standard error." },
	{ "log-text-info-buffer-size", FLAG_STRING, OPTIONS_NO_EFFECT, "|0",
	  "No effect: log lines are not buffered." },
	{ "log-text-split-stream", FLAG_BOOL, OPTIONS_NO_EFFECT, "false",
	  "No effect: every log line goes to standard error." },
	{ "logtostderr", FLAG_BOOL, OPTIONS_NO_EFFECT, "true",
	  "No effect: removed upstream in 1.26; bootccm always logs to standard error." },
	{ "validation-webhook-config-file", FLAG_STRING, OPTIONS_NO_EFFECT, "",
	  "No effect: bootccm serves no webhooks." },
	{ "webhook-bind-address", FLAG_STRING, OPTIONS_NO_EFFECT, NULL,
	  "Accepted: no webhook is served (upstream serves none without --webhooks either)." },
	{ "webhook-secure-port", FLAG_INT, OPTIONS_NO_EFFECT, NULL,
	  "Accepted: no webhook is served (upstream serves none without --webhooks either)." },
	{ "webhook-cert-dir", FLAG_STRING, OPTIONS_NO_EFFECT, NULL,
	  "Accepted: no webhook is served (upstream serves none without --webhooks either)." },
	{ "webhook-tls-cert-file", FLAG_STRING, OPTIONS_NO_EFFECT, NULL,
	  "Accepted: no webhook is served (upstream serves none without --webhooks either)." },
	{ "webhook-tls-private-key-file", FLAG_STRING, OPTIONS_NO_EFFECT, NULL,
	  "Accepted: no webhook is served (upstream serves none without --webhooks either)." },
	{ "webhook-ca-cert-file", FLAG_STRING, OPTIONS_NO_EFFECT, NULL,
	  "Accepted: no webhook is served (upstream serves none without --webhooks either)." },
	{ "webhook-disable-http2-serving", FLAG_BOOL, OPTIONS_NO_EFFECT, NULL,
	  "Accepted: no webhook is served (upstream serves none without --webhooks either)." },
	{ "webhook-tls-cipher-suites", FLAG_STRING, OPTIONS_NO_EFFECT, NULL,
	  "Accepted: no webhook is served (upstream serves none without --webhooks either)." },
	{ "webhook-tls-curve-preferences", FLAG_STRING, OPTIONS_NO_EFFECT, NULL,
	  "Accepted: no webhook is served (upstream serves none without --webhooks either)." },
	{ "webhook-tls-min-version", FLAG_STRING, OPTIONS_NO_EFFECT, NULL,
	  "Accepted: no webhook is served (upstream serves none without --webhooks either)." },
	{ "webhook-tls-sni-cert-key", FLAG_STRING, OPTIONS_NO_EFFECT, NULL,
	  "Accepted: no webhook is served (upstream serves none without --webhooks either)." },
	{ "enable-leader-migration", FLAG_BOOL, OPTIONS_REFUSED, "false",
	  "Refused: leader migration is not supported; bootccm and an upstream cloud-controller-manager exclude each other through the Lease kube-system/cloud-controller-manager (operator guide: Migrating)." },
	{ "leader-migration-config", FLAG_STRING, OPTIONS_REFUSED, "",
	  "Refused: leader migration is not supported; bootccm and an upstream cloud-controller-manager exclude each other through the Lease kube-system/cloud-controller-manager (operator guide: Migrating)." },
	{ "webhooks", FLAG_STRING, OPTIONS_REFUSED, "",
	  "Refused: bootccm serves no webhooks; remove the flag." },
	{ "tls-cipher-suites", FLAG_STRING, OPTIONS_REFUSED, "",
	  "Refused: the serving cipher suites are wolfSSL's own for TLS 1.2 and 1.3 and cannot be chosen; remove the flag." },
	{ "tls-min-version", FLAG_STRING, OPTIONS_REFUSED, "|VersionTLS12",
	  "Refused: bootccm serves TLS 1.2 and later and cannot require more; use VersionTLS12 or remove the flag." },
	{ "tls-sni-cert-key", FLAG_STRING, OPTIONS_REFUSED, "",
	  "Refused: one serving certificate only; use --tls-cert-file and --tls-private-key-file." },
};
#define OPTIONS_COMPAT_N (sizeof(options_compat) / sizeof(options_compat[0]))
_Static_assert(OPTIONS_COMPAT_N <= OPTIONS_COMPAT_MAX, "raise OPTIONS_COMPAT_MAX");
_Static_assert(OPTIONS_COMPAT_MAX <= 64, "compat_ignored has 64 bits");

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
	  "Comma-separated controllers to enable: '*' enables all on-by-default controllers, 'foo' enables foo, '-foo' disables foo; csr-approver is off by default. All: cloud-node, cloud-node-lifecycle, route, service, csr-approver.", 0 },
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
	{ "csr-trust-kubelet-addresses", FLAG_BOOL, O(csr_trust_kubelet_addresses), "false",
	  "csr-approver: also approve kubelet serving certificates for nodes whose addresses came only from their own kubelet.", 0 },
	{ "csr-deny", FLAG_BOOL, O(csr_deny), "false",
	  "csr-approver: deny a kubelet serving certificate request that fails a check instead of leaving it pending.", 0 },
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
	{ "tls-curve-preferences", FLAG_STRING, O(tls_curve_preferences), "",
	  "Comma-separated list of numeric Go crypto/tls CurveID values, as the allowed key exchange mechanisms for the server: 23 (P-256), 24 (P-384), 25 (P-521), 29 (X25519); the ML-KEM hybrids 4587, 4588 and 4589 are refused. The order of the list is ignored. If omitted, the TLS library's default groups are used.", 0 },
	{ "authorization-always-allow-paths", FLAG_STRING, O(authorization_always_allow_paths), "/healthz,/readyz,/livez",
	  "Comma-separated HTTP paths to skip during authorization.", 0 },
	{ "authentication-kubeconfig", FLAG_STRING, O(authentication_kubeconfig), NULL,
	  "kubeconfig file pointing at the 'core' kubernetes server with enough rights to create tokenreviews.authentication.k8s.io; the --kubeconfig identity when empty.", 0 },
	{ "authentication-token-webhook-cache-ttl", FLAG_DURATION, O(authentication_token_webhook_cache_ttl_ns), "10s",
	  "The duration to cache responses from the webhook token authenticator.", 0 },
	{ "authorization-kubeconfig", FLAG_STRING, O(authorization_kubeconfig), NULL,
	  "kubeconfig file pointing at the 'core' kubernetes server with enough rights to create subjectaccessreviews.authorization.k8s.io; the --kubeconfig identity when empty.", 0 },
	{ "authorization-webhook-cache-authorized-ttl", FLAG_DURATION, O(authorization_webhook_cache_authorized_ttl_ns), "10s",
	  "The duration to cache 'authorized' responses from the webhook authorizer.", 0 },
	{ "authorization-webhook-cache-unauthorized-ttl", FLAG_DURATION, O(authorization_webhook_cache_unauthorized_ttl_ns), "10s",
	  "The duration to cache 'unauthorized' responses from the webhook authorizer.", 0 },
	{ "v", FLAG_INT, O(verbosity), "0",
	  "Number for the log level verbosity.", 0 },
	{ "logging-format", FLAG_STRING, O(logging_format), "text",
	  "Sets the log format. Permitted formats: \"json\", \"text\".", 0 },
	{ "validate", FLAG_BOOL, O(validate), "false",
	  "Check the flags, the kubeconfig and the cloud config, then exit (0 valid, 2 not) without starting anything or connecting anywhere.", 0 },
	{ "timeout", FLAG_DURATION, O(timeout_ns), "10s",
	  "check-kubeconfig only: the whole command's time limit (connect once, no retries).", 0 },
	{ "help", FLAG_BOOL, O(help), "false", "Help for bootccm.", 0 },
	{ "version", FLAG_BOOL, O(version), "false", "Print version information and quit.", 0 },
	};
	size_t n = sizeof(table) / sizeof(table[0]), i;
	if (n + OPTIONS_COMPAT_N > cap)
		log_fatal("options: the flag table outgrew OPTIONS_MAX", NULL);
	memcpy(t, table, sizeof(table));
	for (i = 0; i < OPTIONS_COMPAT_N; i++) {
		const struct options_compat *c = &options_compat[i];
		union options_compat_value *v = &o->compat[i];
		t[n + i] = (struct flag){ c->name, c->type, NULL, NULL, c->usage, 0 };
		t[n + i].ptr = c->type == FLAG_BOOL ? (void *)&v->b : c->type == FLAG_INT ?
		    (void *)&v->i : c->type == FLAG_DURATION ? (void *)&v->ns : (void *)&v->s;
	}
	return n + OPTIONS_COMPAT_N;
}

/* The controllers --controllers names, in OPTIONS_CTRL_* bit order. */
static const char *const options_ctrl_names[] = {
	"cloud-node", "cloud-node-lifecycle", "route", "service", "csr-approver",
};

/* options_controllers parses --controllers like the upstream CCM: "*" turns
 * on every on-by-default controller (not csr-approver), "name" one, "-name" turns one off (and wins over
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
			on |= OPTIONS_CTRL_DEFAULT;
		} else if (nlen > 0) {
			for (i = 0; i < n; i++)
				if (strlen(options_ctrl_names[i]) == nlen &&
				    strncmp(options_ctrl_names[i], name, nlen) == 0)
					break;
			if (i == n)
				return errbuf_set(e, ERR_INVALID, "--controllers \"%.*s\": unknown "
				    "controller \"%.*s\"; known: *, cloud-node, cloud-node-lifecycle, "
				    "route, service, csr-approver", (int)strlen(list), list, (int)nlen, name);
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
	return servicectl_classes_check(o->load_balancer_classes, o->load_balancer_class_only, e);
}

/* options_pairs checks a "key=value,..." list (--feature-gates: value a
 * boolean; --vmodule: a verbosity). Empty is fine. */
static int
options_pairs(const char *flag, const char *list, int verbosity, struct errbuf *e)
{
	const char *p = list;

	if (list == NULL || *list == '\0')
		return 0;
	for (;;) {
		size_t len = strcspn(p, ","), klen = strcspn(p, "=,");
		char v[16];
		size_t vlen = len > klen ? len - klen - 1 : 0;
		int ok = klen > 0 && klen < len && vlen > 0 && vlen < sizeof(v);

		if (ok) {
			memcpy(v, p + klen + 1, vlen);
			v[vlen] = '\0';
			if (verbosity)
				ok = strspn(v, "0123456789") == vlen;
			else
				ok = flags_parse_bool(v) >= 0;
		}
		if (!ok)
			return errbuf_set(e, ERR_INVALID, "--%s \"%s\": \"%.*s\" is not %s", flag,
			    list, (int)len, p, verbosity ? "pattern=N" : "key=true or key=false");
		if (p[len] == '\0')
			return 0;
		p += len + 1;
	}
}

/* options_int32_list checks a comma-separated list of numbers as pflag's
 * int32 slice parses it (strconv.ParseInt base 0: decimal, 0x, 0o or 0
 * octal, 0b). Empty is fine. */
static int
options_int32_list(const char *flag, const char *list, struct errbuf *e)
{
	const char *p = list ? list : "";

	if (*p == '\0')
		return 0;
	for (;;) {
		size_t len = strcspn(p, ",");
		char item[32];
		int64_t v;
		int ok = len > 0 && len < sizeof(item);

		if (ok) {
			memcpy(item, p, len);
			item[len] = '\0';
			ok = numparse(item, NUMPARSE_SIGN | NUMPARSE_PREFIX, INT32_MIN, INT32_MAX,
			    &v, NULL) == 0;
		}
		if (!ok)
			return errbuf_set(e, ERR_INVALID, "--%s \"%s\": \"%.*s\" is not a 32-bit "
			    "number", flag, list, (int)len, p);
		if (p[len] == '\0')
			return 0;
		p += len + 1;
	}
}

/* options_compat_why is an upstream flag's reason without its "No effect:"
 * or "Refused:" lead. */
static const char *
options_compat_why(const struct options_compat *c)
{
	const char *w = strstr(c->usage, ": ");

	return w ? w + 2 : c->usage;
}

/* options_compat_same tells whether f, an upstream flag that was given,
 * asks for what bootccm does anyway: its value is one of c->same's. */
static int
options_compat_same(const struct options_compat *c, const struct flag *f)
{
	const char *p = c->same;
	char alt[64];

	if (p == NULL)
		return 1;
	for (;;) {
		size_t len = strcspn(p, "|");
		if (len < sizeof(alt)) {
			memcpy(alt, p, len);
			alt[len] = '\0';
			if (flags_value_is(f, alt))
				return 1;
		}
		if (p[len] == '\0')
			return 0;
		p += len + 1;
	}
}

/* options_compat_check refuses the upstream flags given with a value
 * bootccm cannot honour and remembers the others for options_ignored. t
 * holds the compat flags from index first on. */
static int
options_compat_check(struct options *o, const struct flag *t, size_t first,
    struct errbuf *e)
{
	int r;

	for (size_t i = 0; i < OPTIONS_COMPAT_N; i++) {
		const struct options_compat *c = &options_compat[i];
		const struct flag *f = &t[first + i];

		if (!f->set || options_compat_same(c, f))
			continue;
		if (c->kind == OPTIONS_REFUSED)
			return errbuf_set(e, ERR_INVALID, "--%s: refused: %s", c->name,
			    options_compat_why(c));
		o->compat_ignored |= 1ull << i;
	}
	for (size_t i = 0; i < OPTIONS_COMPAT_N; i++) {
		const char *name = options_compat[i].name;
		const union options_compat_value *v = &o->compat[i];
		struct netaddr a;
		if (!t[first + i].set)
			continue;
		/* what the upstream manager refuses at start even with no webhook
		 * served: a port out of range or the --secure-port one, an address
		 * that is no IP, curve IDs that are not numbers */
		if (strcmp(name, "webhook-secure-port") == 0 && (v->i < 0 || v->i > 65535))
			return errbuf_set(e, ERR_INVALID, "--webhook-secure-port %d must be between 0 "
			    "and 65535 (0: no webhook endpoint)", v->i);
		if (strcmp(name, "webhook-secure-port") == 0 && v->i != 0 && v->i == o->secure_port)
			return errbuf_set(e, ERR_INVALID, "--webhook-secure-port %d cannot be the same "
			    "value as --secure-port", v->i);
		if (strcmp(name, "webhook-bind-address") == 0 && netaddr_parse(v->s, &a) < 0)
			return errbuf_set(e, ERR_INVALID, "--webhook-bind-address \"%s\" is not an "
			    "IP address", v->s);
		if (strcmp(name, "webhook-tls-curve-preferences") == 0 &&
		    (r = options_int32_list(name, v->s, e)) < 0)
			return r;
		if (strcmp(name, "feature-gates") == 0 &&
		    ((r = options_pairs(name, o->compat[i].s, 0, e)) < 0 ||
		    (r = featuregate_check(o->compat[i].s, e)) < 0))
			return r;
		if (strcmp(name, "vmodule") == 0 &&
		    (r = options_pairs(name, o->compat[i].s, 1, e)) < 0)
			return r;
	}
	return 0;
}

const char *
options_ignored(const struct options *o, size_t *iter, const char **ret_flag)
{
	for (; *iter < OPTIONS_COMPAT_N; (*iter)++) {
		if (o->compat_ignored & (1ull << *iter)) {
			const struct options_compat *c = &options_compat[(*iter)++];
			*ret_flag = c->name;
			return options_compat_why(c);
		}
	}
	return NULL;
}

/* options_durations checks every duration flag against its bounds, naming
 * the flag and the bounds. */
static int
options_durations(const struct options *o, struct errbuf *e)
{
	const struct { const char *name; int64_t v, min, max; } d[] = {
		{ "node-monitor-period", o->node_monitor_period_ns, 1, OPTIONS_PERIOD_MAX_S * NS_PER_S },
		{ "node-status-update-frequency", o->node_status_update_frequency_ns, 1,
		  OPTIONS_PERIOD_MAX_S * NS_PER_S },
		{ "route-reconciliation-period", o->route_reconciliation_period_ns, 1,
		  OPTIONS_PERIOD_MAX_S * NS_PER_S },
		{ "service-sync-period", o->service_sync_period_ns, 1, OPTIONS_PERIOD_MAX_S * NS_PER_S },
		{ "min-resync-period", o->min_resync_period_ns, 1, OPTIONS_WEEK_S * NS_PER_S },
		{ "node-deletion-grace-period", o->node_deletion_grace_period_ns, 0,
		  OPTIONS_WEEK_S * NS_PER_S },
		{ "leader-elect-lease-duration", o->leader_elect_lease_duration_ns, 1,
		  OPTIONS_LEASE_MAX_S * NS_PER_S },
		{ "leader-elect-renew-deadline", o->leader_elect_renew_deadline_ns, 1,
		  OPTIONS_LEASE_MAX_S * NS_PER_S },
		{ "leader-elect-retry-period", o->leader_elect_retry_period_ns, 1,
		  OPTIONS_LEASE_MAX_S * NS_PER_S },
		{ "authentication-token-webhook-cache-ttl",
		  o->authentication_token_webhook_cache_ttl_ns, 0, OPTIONS_TTL_MAX_S * NS_PER_S },
		{ "authorization-webhook-cache-authorized-ttl",
		  o->authorization_webhook_cache_authorized_ttl_ns, 0, OPTIONS_TTL_MAX_S * NS_PER_S },
		{ "authorization-webhook-cache-unauthorized-ttl",
		  o->authorization_webhook_cache_unauthorized_ttl_ns, 0, OPTIONS_TTL_MAX_S * NS_PER_S },
		{ "timeout", o->timeout_ns, 1, OPTIONS_TIMEOUT_MAX_S * NS_PER_S },
	};
	int r;

	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++)
		if ((r = duration_check(d[i].name, d[i].v, d[i].min, d[i].max, e)) < 0)
			return r;
	return 0;
}

/* options_names checks the names bootccm sends to the API server or the
 * cloud: --node-name (a Node's name, a DNS-1123 subdomain) and --cluster-name
 * (a label value on the cloud's objects, OPTIONS_CLUSTER_NAME_MAX). */
static int
options_names(const struct options *o, struct errbuf *e)
{
	const char *n = o->node_name ? o->node_name : "";
	const char *c = o->cluster_name ? o->cluster_name : "";

	if (strlen(n) > OPTIONS_OBJECT_NAME_MAX || !labelsel_dns_subdomain_ok(n))
		return errbuf_set(e, ERR_INVALID, "--node-name \"%.64s%s\" (%zu bytes): not a Node "
		    "name (a DNS-1123 subdomain: at most 253 bytes of lowercase letters, digits, "
		    "'-' and '.'; without the flag, the host name in lowercase)", n,
		    strlen(n) > 64 ? "..." : "", strlen(n));
	if (*c == '\0' || strlen(c) > OPTIONS_CLUSTER_NAME_MAX || !labelsel_value_ok(c))
		return errbuf_set(e, ERR_INVALID, "--cluster-name \"%.64s%s\" (%zu bytes): want 1 to "
		    "%d letters, digits, '-', '_' or '.', starting and ending with a letter or "
		    "digit (it labels the cloud's load balancers)", c, strlen(c) > 64 ? "..." : "",
		    strlen(c), OPTIONS_CLUSTER_NAME_MAX);
	return 0;
}

void
options_lease_config(const struct options *o, struct lease_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->namespace = o->leader_elect_resource_namespace;
	cfg->name = o->leader_elect_resource_name;
	cfg->lease_duration_ns = o->leader_elect_lease_duration_ns;
	cfg->renew_deadline_ns = o->leader_elect_renew_deadline_ns;
	cfg->retry_period_ns = o->leader_elect_retry_period_ns;
}

void
options_serve_config(const struct options *o, struct serve_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->bind_address = o->bind_address;
	cfg->secure_port = o->secure_port;
	cfg->tls_cert_file = o->tls_cert_file;
	cfg->tls_private_key_file = o->tls_private_key_file;
	cfg->tls_curve_preferences = o->tls_curve_preferences;
	cfg->always_allow_paths = o->authorization_always_allow_paths;
	cfg->token_ttl_ns = o->authentication_token_webhook_cache_ttl_ns;
	cfg->allow_ttl_ns = o->authorization_webhook_cache_authorized_ttl_ns;
	cfg->deny_ttl_ns = o->authorization_webhook_cache_unauthorized_ttl_ns;
}

/* options_leader_elect checks the --leader-elect-* flags: client-go's
 * leaderelection.NewLeaderElector rules by flag name, then whatever else the
 * elector would refuse when it starts (lease_config_check). Runs after
 * options_durations, whose bounds keep the products below in range. */
static int
options_leader_elect(const struct options *o, struct errbuf *e)
{
	struct lease_config lc;
	int r;

	if (strcmp(o->leader_elect_resource_lock, "leases") != 0)
		return errbuf_set(e, ERR_INVALID,
		    "--leader-elect-resource-lock \"%s\": only \"leases\" is supported",
		    o->leader_elect_resource_lock);
	if (!o->leader_elect)
		return 0;
	if (strlen(o->leader_elect_resource_name) > OPTIONS_OBJECT_NAME_MAX ||
	    !labelsel_dns_subdomain_ok(o->leader_elect_resource_name))
		return errbuf_set(e, ERR_INVALID, "--leader-elect-resource-name \"%.64s\": not a "
		    "Lease name (a DNS-1123 subdomain: at most 253 bytes of lowercase letters, "
		    "digits, '-' and '.')", o->leader_elect_resource_name);
	if (strlen(o->leader_elect_resource_namespace) > OPTIONS_NAMESPACE_MAX ||
	    !labelsel_dns_label_ok(o->leader_elect_resource_namespace))
		return errbuf_set(e, ERR_INVALID, "--leader-elect-resource-namespace \"%.64s\": not "
		    "a namespace name (a DNS-1123 label: at most 63 lowercase letters, digits and "
		    "'-')", o->leader_elect_resource_namespace);
	if (o->leader_elect_lease_duration_ns <= o->leader_elect_renew_deadline_ns)
		return errbuf_set(e, ERR_INVALID,
		    "--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline");
	/* at most OPTIONS_LEASE_MAX_S each: 12 x an hour in ns fits */
	if (o->leader_elect_renew_deadline_ns * 10 <= o->leader_elect_retry_period_ns * 12)
		return errbuf_set(e, ERR_INVALID,
		    "--leader-elect-renew-deadline must be greater than 1.2 x --leader-elect-retry-period");
	options_lease_config(o, &lc);
	if ((r = lease_config_check(&lc, e)) < 0)
		return errbuf_prefix(e, r, "--leader-elect-*");
	return 0;
}

static int
options_validate(const struct options *o, struct errbuf *e)
{
	struct md_config md;
	struct netaddr a;
	unsigned mask;
	int r;

	md_config_init(&md);
	if (o->bind_address && *o->bind_address && netaddr_parse(o->bind_address, &a) < 0)
		return errbuf_set(e, ERR_INVALID, "--bind-address \"%s\" is not an IP address",
		    o->bind_address);
	if (o->master && *o->master) {
		char *url = NULL;
		int http, dns;
		if ((r = kubeconfig_server_parse(o->master, &url, &http, &dns, e)) < 0)
			return errbuf_prefix(e, r, "--master");
		free(url);
	}
	if (o->kube_api_qps <= 0)
		return errbuf_set(e, ERR_INVALID, "--kube-api-qps must be greater than 0");
	if (o->kube_api_burst < 1)
		return errbuf_set(e, ERR_INVALID, "--kube-api-burst must be at least 1");
	if (o->secure_port < 0 || o->secure_port > 65535)
		return errbuf_set(e, ERR_INVALID, "--secure-port %d must be between 0 and 65535",
		    o->secure_port);
	if (o->secure_port != 0) {
		/* upstream parses the curves only when it serves */
		char groups[SERVETLS_GROUPS_MAX];
		if ((r = servetls_curves("tls-curve-preferences", o->tls_curve_preferences, groups,
		    e)) < 0)
			return r;
	}
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
	if ((r = options_controllers(o->controllers, &mask, e)) < 0)
		return r;
	if ((r = options_validate_service(o, e)) < 0)
		return r;
	if ((r = options_durations(o, e)) < 0 ||
	    (r = options_names(o, e)) < 0 ||
	    (r = options_leader_elect(o, e)) < 0)
		return r;
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
	o->timeout_set = flags_find(t, n, "timeout")->set;
	if ((r = options_compat_check(o, t, n - OPTIONS_COMPAT_N, e)) < 0)
		return r;
	if (o->node_name == NULL || *o->node_name == '\0') {
		char host[256];
		if (gethostname(host, sizeof(host)) == 0) {
			host[sizeof(host) - 1] = '\0';
			/* the kubelet's default Node name: the host name in lowercase */
			for (char *p = host; *p; p++)
				*p = (char)tolower((unsigned char)*p);
			free(o->node_name);
			o->node_name = xstrdup(host);
		}
	}
	return options_validate(o, e);
}

const struct options_cmd options_cmds[] = {
	{ "check-kubeconfig", OPTIONS_CMD_CHECK_KUBECONFIG, "[flags]",
	  "connect once, print the server version and user" },
	{ "metadata", OPTIONS_CMD_METADATA, "[flags]",
	  "print this instance's facts (see metadata --help)" },
	{ "doctor", OPTIONS_CMD_DOCTOR, "[flags]",
	  "name the bootstrap deadlocks of a live cluster (see doctor --help)" },
	{ "version", OPTIONS_CMD_VERSION, "| --version", "print the version" },
	{ "help", OPTIONS_CMD_HELP, "| -h | --help", "this text" },
};
const size_t options_cmds_n = sizeof(options_cmds) / sizeof(options_cmds[0]);

const struct options_cmd *
options_cmd_find(const char *name)
{
	for (size_t i = 0; i < options_cmds_n; i++)
		if (strcmp(options_cmds[i].name, name) == 0)
			return &options_cmds[i];
	return NULL;
}

void
options_usage(FILE *out, const char *prog)
{
	struct options o;
	struct flag t[OPTIONS_MAX];
	size_t n;
	char syn[64];

	memset(&o, 0, sizeof(o));
	n = options_table(&o, t, OPTIONS_MAX);
	fprintf(out, "Usage: %s %-24s run the cloud-controller-manager\n", prog, "[flags]");
	fprintf(out, "       %s %-24s check the configuration, start nothing\n", prog,
	    "--validate [flags]");
	for (size_t i = 0; i < options_cmds_n; i++) {
		snprintf(syn, sizeof(syn), "%s %s", options_cmds[i].name, options_cmds[i].args);
		fprintf(out, "       %s %-24s %s\n", prog, syn, options_cmds[i].purpose);
	}
	fprintf(out, "\nFlags:\n");
	flags_usage(t, n - OPTIONS_COMPAT_N, out);
	fprintf(out, "\nUpstream cloud-controller-manager flags bootccm accepts without "
	    "acting on them, or refuses\n(logged at start when given; the operator guide "
	    "has the table):\n");
	flags_usage(t + n - OPTIONS_COMPAT_N, OPTIONS_COMPAT_N, out);
}

void
options_free(struct options *o)
{
	struct flag t[OPTIONS_MAX];
	size_t n = options_table(o, t, OPTIONS_MAX);

	flags_free(t, n);
	memset(o, 0, sizeof(*o));
}
