/* options.h - bootccm's command-line options: the upstream
 * cloud-controller-manager's flag names and defaults, plus bootccm's own.
 *
 * Contract: options_parse fills a struct options from argv (defaults first),
 * validates every value it can without touching a file or the network
 * (addresses, CIDRs, URLs, durations, combinations), and returns 0,
 * OPTIONS_EXIT_HELP / OPTIONS_EXIT_VERSION when the user asked for those, or
 * ERR_INVALID with a message naming the flag. Every flag of the upstream
 * cloud-controller-manager (Kubernetes 1.32 to 1.34) is known: implemented,
 * accepted without effect (options_ignored lists those given), or refused
 * with the reason and what to use instead (docs/operator-guide.md has the
 * table). */
#ifndef BOOTCCM_OPTIONS_H
#define BOOTCCM_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/err.h"

#define OPTIONS_COMPAT_MAX 56  /* upstream flags accepted or refused, not acted on */

/* The value of one of those flags (options.c's table says which member). */
union options_compat_value {
	int b;
	int i;
	int64_t ns;
	char *s;
};

struct options {
	/* API server connection */
	char *kubeconfig;
	char *context;
	char *master;
	double kube_api_qps;
	int kube_api_burst;

	/* cloud */
	char *cloud_provider;
	char *cloud_config;
	char *controllers;
	char *cluster_name;
	char *cluster_cidr;
	int allocate_node_cidrs;
	int configure_cloud_routes;
	char *node_name;

	/* instance metadata (src/cmd/metadata.h MD_FLAGS) */
	char *metadata_cloud;
	char *metadata_endpoint;
	char *metadata_dmi_dir;
	char *metadata_config_drive;

	/* controllers */
	int concurrent_node_syncs;
	int concurrent_service_syncs;
	int64_t node_monitor_period_ns;
	int64_t node_status_update_frequency_ns;
	int64_t node_deletion_grace_period_ns;
	int64_t route_reconciliation_period_ns;
	int concurrent_route_syncs;
	int64_t min_resync_period_ns;

	/* service controller */
	char *load_balancer_classes;    /* --load-balancer-class values, ","-joined */
	int load_balancer_class_only;
	int csr_trust_kubelet_addresses;  /* csr-approver: approve on kubelet-reported addresses */
	int csr_deny;                     /* csr-approver: deny what fails a check */
	int64_t service_sync_period_ns;

	/* leader election */
	int leader_elect;
	int64_t leader_elect_lease_duration_ns;
	int64_t leader_elect_renew_deadline_ns;
	int64_t leader_elect_retry_period_ns;
	char *leader_elect_resource_lock;
	char *leader_elect_resource_name;
	char *leader_elect_resource_namespace;

	/* serving */
	char *bind_address;
	int secure_port;
	char *tls_cert_file;
	char *tls_private_key_file;
	char *tls_curve_preferences;
	char *authorization_always_allow_paths;
	char *authentication_kubeconfig;    /* TokenReviews; "": --kubeconfig's */
	char *authorization_kubeconfig;     /* SubjectAccessReviews; "": --kubeconfig's */
	int64_t authentication_token_webhook_cache_ttl_ns;
	int64_t authorization_webhook_cache_authorized_ttl_ns;
	int64_t authorization_webhook_cache_unauthorized_ttl_ns;

	/* logging */
	int verbosity;
	char *logging_format;

	/* one-shot commands */
	int64_t timeout_ns;        /* check-kubeconfig's total time limit */
	int timeout_set;           /* --timeout was given */
	int validate;              /* --validate: check the configuration, start nothing */

	int help;
	int version;

	/* upstream flags not acted on, and which of them were given with a
	 * value bootccm does not honour (bit i: the table's entry i) */
	union options_compat_value compat[OPTIONS_COMPAT_MAX];
	uint64_t compat_ignored;
};

/* --controllers bits (options_controller_enabled). */
#define OPTIONS_CTRL_CLOUD_NODE 0x1
#define OPTIONS_CTRL_CLOUD_NODE_LIFECYCLE 0x2
#define OPTIONS_CTRL_ROUTE 0x4
#define OPTIONS_CTRL_SERVICE 0x8
#define OPTIONS_CTRL_CSR_APPROVER 0x10     /* off by default: not in "*" */
#define OPTIONS_CTRL_DEFAULT 0xf           /* what "*" turns on */

/* options_controller_enabled tells whether --controllers turns ctrl (one
 * OPTIONS_CTRL_* bit) on. options_parse has already refused a bad list. */
int options_controller_enabled(const struct options *o, unsigned ctrl);

#define OPTIONS_EXIT_HELP 1
#define OPTIONS_EXIT_VERSION 2

/* Bounds checked by options_parse, so by the daemon and --validate alike
 * (the operator guide's input limits list them). A duration past its bound
 * is a typo, not a setting: one near the 64-bit maximum once made a loop
 * spin on a deadline that overflowed. Every upstream default is inside. */
#define OPTIONS_PERIOD_MAX_S (24 * 3600)   /* --node-monitor-period, --node-status-update-
                                              frequency, --route-reconciliation-period,
                                              --service-sync-period */
#define OPTIONS_WEEK_S (7 * 24 * 3600)     /* --min-resync-period, --node-deletion-grace-period */
#define OPTIONS_LEASE_MAX_S 3600           /* --leader-elect-lease-duration, -renew-deadline,
                                              -retry-period */
#define OPTIONS_TTL_MAX_S (24 * 3600)      /* the --authentication-* and --authorization-*
                                              cache TTLs */
#define OPTIONS_TIMEOUT_MAX_S 3600         /* check-kubeconfig's --timeout */
#define OPTIONS_OBJECT_NAME_MAX 253        /* bytes: --node-name, --leader-elect-resource-name
                                              (DNS-1123 subdomains) */
#define OPTIONS_NAMESPACE_MAX 63           /* bytes: --leader-elect-resource-namespace
                                              (a DNS-1123 label) */
#define OPTIONS_CLUSTER_NAME_MAX 63        /* bytes of --cluster-name: a label value */

struct lease_config;
struct serve_config;

/* options_lease_config fills cfg from the --leader-elect-* options
 * (callbacks and identity left NULL). */
void options_lease_config(const struct options *o, struct lease_config *cfg);

/* options_serve_config fills cfg from the serving flags (--bind-address,
 * --secure-port, --tls-*, --authorization-always-allow-paths, the review
 * cache TTLs); the strings stay o's. */
void options_serve_config(const struct options *o, struct serve_config *cfg);

/* options_parse parses argv[first..argc) into o. */
int options_parse(struct options *o, int argc, char **argv, int first,
    struct errbuf *e);

/* options_ignored walks the upstream flags given with a value bootccm does
 * not act on: call it with *iter = 0 until it returns NULL; each call
 * returns why the flag has no effect and its name in *ret_flag ("--profiling").
 * The daemon logs each one at start. */
const char *options_ignored(const struct options *o, size_t *iter, const char **ret_flag);

/* The subcommands, argv[1]: main dispatches through this table and --help's
 * usage lines are printed from it, so neither can miss one. */
enum options_cmd_id {
	OPTIONS_CMD_CHECK_KUBECONFIG,
	OPTIONS_CMD_METADATA,
	OPTIONS_CMD_DOCTOR,
	OPTIONS_CMD_VERSION,
	OPTIONS_CMD_HELP,
};

struct options_cmd {
	const char *name;       /* argv[1] */
	enum options_cmd_id id;
	const char *args;       /* after the name in the usage line */
	const char *purpose;    /* the usage line's explanation */
};

extern const struct options_cmd options_cmds[];
extern const size_t options_cmds_n;

/* options_cmd_find returns the subcommand named name, or NULL. */
const struct options_cmd *options_cmd_find(const char *name);

/* options_usage writes the --help text. */
void options_usage(FILE *out, const char *prog);

void options_free(struct options *o);

#endif
