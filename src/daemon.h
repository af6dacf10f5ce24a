/* daemon.h - the long-running cloud-controller-manager and the one-shot
 * check-kubeconfig command.
 *
 * Contract: daemon_run returns the process exit status: 0 after SIGTERM or
 * SIGINT (daemon_stop, requested by main's signal thread), 1 when the
 * configuration (a kubeconfig, the cloud config) cannot be loaded or the
 * endpoint cannot serve. An API server that is down is never a reason to
 * return. daemon_validate and daemon_check_kubeconfig are the one-shot
 * commands; everything they print goes through the logger's redaction
 * (log_print). */
#ifndef BOOTCCM_DAEMON_H
#define BOOTCCM_DAEMON_H

#include <stddef.h>

#include "cloud.h"
#include "base/err.h"
#include "kube/lease.h"
#include "config/kubeconfig.h"
#include "config/options.h"
#include "base/stop.h"

/* daemon_stop is the process's stop: SIGTERM and SIGINT request it (main
 * starts stop_on_signals before anything else); every loop and client the
 * daemon starts watches it. */
extern struct stop daemon_stop;

/* daemon_connect_config loads --kubeconfig (or the in-cluster configuration),
 * applies --master, and registers the credentials with the logger as secrets. */
int daemon_connect_config(const struct options *o, struct kubeconfig *kc,
    struct errbuf *e);

int daemon_run(const struct options *o);

/* daemon_check_kubeconfig (check-kubeconfig) loads the configuration as the
 * daemon would, then asks the API server its version and who we are: one
 * attempt per request, all within --timeout. Returns 0, or 1 with the
 * reason on standard error. */
int daemon_check_kubeconfig(const struct options *o);

/* daemon_validate (--validate) loads every kubeconfig and the cloud config
 * as the daemon would, says what will not happen (daemon_run's start-up
 * warnings) and returns 0, or 2 with the reason on standard error, without
 * connecting anywhere or starting anything. */
int daemon_validate(const struct options *o);

/* daemon_controller_off tells why the controller ctrl (one OPTIONS_CTRL_*
 * bit) does not run with provider p (NULL: no --cloud-provider): this
 * version does not have it yet, or p lacks the operation group it needs.
 * Returns the reason, written into buf, or NULL when it runs. Pure. */
const char *daemon_controller_off(const struct cloud_provider *p, unsigned ctrl,
    char *buf, size_t len);

#endif
