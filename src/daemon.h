/* daemon.h - the long-running cloud-controller-manager and the one-shot
 * check-kubeconfig command.
 *
 * Contract: daemon_run returns the process exit status: 0 after SIGTERM or
 * SIGINT (daemon_stop, requested by main's signal thread), 1 when the
 * configuration cannot be loaded. An API server that is down is never a
 * reason to return. */
#ifndef BOOTCCM_DAEMON_H
#define BOOTCCM_DAEMON_H

#include "err.h"
#include "kube/lease.h"
#include "kubeconfig.h"
#include "options.h"
#include "stop.h"

/* daemon_stop is the process's stop: SIGTERM and SIGINT request it (main
 * starts stop_on_signals before anything else); every loop and client the
 * daemon starts watches it. */
extern struct stop daemon_stop;

/* daemon_lease_config fills cfg from the --leader-elect-* options
 * (callbacks and identity left NULL). */
void daemon_lease_config(const struct options *o, struct lease_config *cfg);

/* daemon_connect_config loads --kubeconfig (or the in-cluster configuration),
 * applies --master, and registers the credentials with the logger as secrets. */
int daemon_connect_config(const struct options *o, struct kubeconfig *kc,
    struct errbuf *e);

int daemon_run(const struct options *o);
int daemon_check_kubeconfig(const struct options *o);

#endif
