/* serve.h - the HTTPS serving endpoint: /healthz, /livez, /readyz and
 * /metrics on --bind-address:--secure-port, like upstream controller-managers
 * serve them. Requests are parsed by httpreq.h, TLS is set up by servetls.h.
 *
 * Contract: serve_start binds the port, prepares TLS (the files given by
 * --tls-cert-file/--tls-private-key-file, or a self-signed certificate made in
 * memory) and starts the one serving thread; serve_stop ends it. One server
 * per process. Paths in --authorization-always-allow-paths are served to
 * anyone; every other path needs a bearer token that the API server
 * authenticates (TokenReview) and authorizes for "get" on that path
 * (SubjectAccessReview), see authn.h. The serving thread never waits for a
 * client: connections are multiplexed with bounded timeouts and caps, so a
 * slow or silent client cannot hold the probes up. It waits only for the API
 * server to review credentials it has not cached, at most AUTHN_TIMEOUT_MS,
 * and not again for AUTHN_PAUSE_NS after a review went unanswered. It logs
 * (it is a boundary, like a controller) user names, never a token.
 *
 * Checks: serve_add_healthz and serve_add_readyz register named callbacks,
 * before or after serve_start, from any thread. /healthz runs the health
 * checks, /readyz the health and readiness checks, /livez only "ping"; each
 * answers 200 "ok" when all pass, else 500 listing them ("[-]name failed:
 * reason withheld"), and ?verbose lists them on success too; ?exclude=NAME
 * skips one; /healthz/NAME (and /readyz/NAME, /livez/ping) runs one. A check
 * runs on the serving thread for every probe: it must be quick, must not
 * block, and must be thread-safe. Register readiness checks before
 * serve_start: /readyz is ready as soon as the checks registered pass. */
#ifndef BOOTCCM_SERVE_H
#define BOOTCCM_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "config/kubeconfig.h"
#include "serve/health.h"  /* serve_add_healthz, serve_add_readyz */

#define SERVE_CONN_MAX 32                 /* client connections at once */
#define SERVE_REQUEST_TIMEOUT_MS 10000    /* accept to a complete request (TLS
                                             handshake included), and first
                                             byte to a complete request after */
#define SERVE_WRITE_TIMEOUT_MS 10000      /* to write one response */
#define SERVE_IDLE_TIMEOUT_MS 60000       /* keep-alive between requests */
#define SERVE_ALLOW_PATHS_MAX 32          /* --authorization-always-allow-paths */


/* What the endpoint serves with (the daemon fills it from the flags its
 * messages name: options_serve_config). Strings are borrowed. */
struct serve_config {
	const char *bind_address;          /* --bind-address */
	int secure_port;                   /* --secure-port; 0: do not serve */
	const char *tls_cert_file;         /* --tls-cert-file; NULL or "": self-signed */
	const char *tls_private_key_file;  /* --tls-private-key-file */
	const char *tls_curve_preferences; /* --tls-curve-preferences; NULL: the defaults */
	const char *always_allow_paths;    /* --authorization-always-allow-paths */
	int64_t token_ttl_ns;              /* the TokenReview cache */
	int64_t allow_ttl_ns, deny_ttl_ns; /* the SubjectAccessReview cache */
};

/* serve_start binds cfg's address and port (secure_port 0: does not serve,
 * returns 0) with cfg's certificate, key and always-allowed paths, and
 * starts the serving thread, which
 * sends TokenReviews with authn_kc's identity and SubjectAccessReviews with
 * authz_kc's (both borrowed until serve_stop; they may be the same). Returns 0 or
 * ERR_INVALID (bad flag value), ERR_IO (bind, unreadable file), ERR_TOO_LARGE
 * (a file past SERVETLS_FILE_MAX), ERR_TLS (bad certificate or key) or
 * ERR_INTERNAL (no thread), with a message naming the flag or file.
 * Needs no API server: probes answer from the start. */
int serve_start(const struct serve_config *cfg, struct kubeconfig *authn_kc,
    struct kubeconfig *authz_kc, struct errbuf *e);

/* serve_preflight checks, without binding or starting anything, what
 * serve_start would refuse of the flags: the port's range, the always-allowed
 * paths, and the certificate and key files, loaded and matched by the same
 * code (servetls_new). 0 when --secure-port is 0. The daemon runs it before
 * it starts, and --validate with it. Returns as serve_start. */
int serve_preflight(const struct serve_config *cfg, struct errbuf *e);

/* serve_stop ends the serving thread, closes every connection and the
 * listener. Safe to call when serve_start failed or did not serve. */
void serve_stop(void);

/* serve_port returns the port listened on, or 0 when not serving. */
int serve_port(void);

/* The pieces below are exposed for unit tests and fuzzing. */

struct serve_paths {
	char *paths[SERVE_ALLOW_PATHS_MAX];  /* "/healthz"; a trailing star: a prefix */
	size_t n;
};

/* serve_paths_parse parses a comma-separated path list the way upstream's
 * path authorizer reads --authorization-always-allow-paths: the leading '/'
 * is optional ("healthz" is "/healthz"), a trailing '*' makes what comes
 * before it a prefix to match (a lone '*' matches every path) and no other
 * '*' is allowed. Entries
 * are trimmed and empty ones skipped. Returns 0, ERR_INVALID or
 * ERR_TOO_LARGE (more than SERVE_ALLOW_PATHS_MAX). */
int serve_paths_parse(const char *list, struct serve_paths *ret, struct errbuf *e);
int serve_paths_match(const struct serve_paths *p, const char *path);
void serve_paths_free(struct serve_paths *p);


#endif
