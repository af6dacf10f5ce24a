/* options.h - bootccm's command-line options: the upstream
 * cloud-controller-manager's flag names and defaults, plus bootccm's own.
 *
 * Contract: options_parse fills a struct options from argv (defaults first),
 * validates it, and returns 0, OPTIONS_EXIT_HELP / OPTIONS_EXIT_VERSION when
 * the user asked for those, or ERR_INVALID with a message naming the flag. */
#ifndef BOOTCCM_OPTIONS_H
#define BOOTCCM_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

#include "err.h"

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

	/* instance metadata (src/metadata/cmd.h MD_FLAGS) */
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
	char *authorization_always_allow_paths;

	/* logging */
	int verbosity;
	char *logging_format;

	int help;
	int version;
};

/* --controllers bits (options_controller_enabled). */
#define OPTIONS_CTRL_CLOUD_NODE 0x1
#define OPTIONS_CTRL_CLOUD_NODE_LIFECYCLE 0x2
#define OPTIONS_CTRL_ROUTE 0x4
#define OPTIONS_CTRL_SERVICE 0x8

/* options_controller_enabled tells whether --controllers turns ctrl (one
 * OPTIONS_CTRL_* bit) on. options_parse has already refused a bad list. */
int options_controller_enabled(const struct options *o, unsigned ctrl);

#define OPTIONS_EXIT_HELP 1
#define OPTIONS_EXIT_VERSION 2

/* options_parse parses argv[first..argc) into o. */
int options_parse(struct options *o, int argc, char **argv, int first,
    struct errbuf *e);

/* options_usage writes the --help text. */
void options_usage(FILE *out, const char *prog);

void options_free(struct options *o);

#endif
