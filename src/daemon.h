/* daemon.h - the long-running cloud-controller-manager and the one-shot
 * check-kubeconfig command.
 *
 * Contract: daemon_run returns the process exit status: 0 after SIGTERM or
 * SIGINT (daemon_stop set by main's handler), 1 when the configuration
 * cannot be loaded. An API server that is down is never a reason to return. */
#ifndef BOOTCCM_DAEMON_H
#define BOOTCCM_DAEMON_H

#include <signal.h>

#include "err.h"
#include "kubeconfig.h"
#include "options.h"

/* daemon_stop is set by the signal handler; every loop checks it. */
extern volatile sig_atomic_t daemon_stop;

/* daemon_sleep_ms sleeps unless a stop is requested; returns 1 if stopping. */
int daemon_sleep_ms(long ms);

/* daemon_connect_config loads --kubeconfig (or the in-cluster configuration),
 * applies --master, and registers the credentials with the logger as secrets. */
int daemon_connect_config(const struct options *o, struct kubeconfig *kc,
    struct errbuf *e);

int daemon_run(const struct options *o);
int daemon_check_kubeconfig(const struct options *o);

#endif
