/* health.h - the endpoint's health checks: the registry of named checks
 * (/healthz, /readyz; /livez has "ping" alone) and the rendering of an
 * endpoint's answer as upstream's healthz handler writes it. serve.c routes
 * the probes here; see serve.h for what the endpoints answer. Thread-safe:
 * checks are registered from any thread, copied out under a lock, and run
 * without it. Never logs. */
#ifndef BOOTCCM_SERVE_HEALTH_H
#define BOOTCCM_SERVE_HEALTH_H

#include <stddef.h>

#include "base/err.h"

#define SERVE_CHECKS_MAX 16               /* checks of each kind */
#define SERVE_CHECK_NAME_MAX 64           /* bytes, including the NUL */
#define SERVE_EXCLUDES_MAX 16             /* ?exclude= values honoured */

/* serve_check_fn returns 0 when healthy, else a negative ERR_* code with the
 * reason in e (logged at -v=2, shown only on /healthz/NAME to authorized
 * clients). */
typedef int (*serve_check_fn)(void *arg, struct errbuf *e);

/* serve_add_healthz and serve_add_readyz register a check under name
 * (letters, digits, '-', '_', '.'; "ping" is built in). arg is passed to fn.
 * Returns 0, ERR_INVALID (bad name), ERR_EXISTS or ERR_TOO_LARGE (more than
 * SERVE_CHECKS_MAX). */
int serve_add_healthz(const char *name, serve_check_fn fn, void *arg);
int serve_add_readyz(const char *name, serve_check_fn fn, void *arg);

struct serve_check {
	char name[SERVE_CHECK_NAME_MAX];
	serve_check_fn fn;
	void *arg;
};

enum serve_kind { SERVE_LIVEZ, SERVE_HEALTHZ, SERVE_READYZ };

/* serve_health_checks copies the checks an endpoint of kind runs into out
 * (which holds 1 + 2 * SERVE_CHECKS_MAX): "ping", then the health checks
 * (not for livez), then the readiness checks (readyz). Returns how many. */
size_t serve_health_checks(enum serve_kind kind, struct serve_check *out);

/* serve_health_render runs checks for the endpoint called name ("healthz")
 * as upstream's handler does, with the request's raw query ("verbose",
 * "exclude=NAME"). Fills *ret with a malloc'd body and returns 200 or 500.
 * The failed checks' reasons, for the log, go into failed ("name: reason;
 * ..."; may be NULL). */
int serve_health_render(const char *name, const struct serve_check *checks,
    size_t n, const char *query, char **ret, size_t *ret_len, char *failed,
    size_t failed_len);

#endif
