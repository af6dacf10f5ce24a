/* kubeconfig.h - load a kubeconfig file, or the in-cluster configuration, into
 * the connection facts the HTTP layer needs.
 *
 * Contract: never logs; out of memory is fatal (xalloc). Every credential it
 * loads (a token, a token file's content at every read, a client key) is
 * registered with log_add_secret, so no output path prints one. Every failure
 * returns a negative ERR_* code and a message in the caller's errbuf that
 * names the file and what is wrong ("/etc/kubernetes/bootccm.conf: context
 * \"x\" not found"). Certificate and key material given as files is read
 * into memory at load time (relative paths resolve against the kubeconfig's
 * directory, as client-go does), so the HTTP layer only ever handles PEM in
 * memory. A token file is re-read whenever it
 * changes (projected service-account tokens rotate). Secrets are never copied
 * into error messages.
 *
 * Semantics follow client-go's clientcmd: unknown keys are ignored; a field of
 * the wrong type is an error naming its path ("FILE:12: clusters[0].cluster.
 * server: expected a string"); "*-data" wins over the file of the same item;
 * token wins over tokenFile; a client certificate needs its key and the other
 * way round; insecure-skip-tls-verify with a CA is an error. What bootccm does
 * not do is refused with ERR_UNSUPPORTED rather than silently ignored:
 * proxy-url, basic authentication, exec and auth-provider plugins,
 * impersonation. Stricter than client-go: a server URL's port must be in
 * 1..65535 and its host a name or an IP address (checked, never looked up),
 * and an http:// server is refused for a user with credentials (a token,
 * token file or client certificate goes only over verified TLS); without
 * credentials http:// is allowed, as client-go allows it. */
#ifndef BOOTCCM_KUBECONFIG_H
#define BOOTCCM_KUBECONFIG_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "base/err.h"

#define KUBECONFIG_FILE_MAX (1024 * 1024)  /* bytes: kubeconfig, cert, key, CA files */
#define KUBECONFIG_TOKEN_MAX (64 * 1024)   /* bytes: a bearer token */

#define KUBECONFIG_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct kubeconfig {
	char *source;          /* the file read, or "in-cluster" */
	char *context;         /* name of the context used (NULL in-cluster) */
	char *cluster;         /* name of the cluster entry (NULL in-cluster) */
	char *user;            /* name of the user entry (NULL in-cluster) */
	char *server;          /* "https://host[:port][/path]" (or http://), scheme
	                        * in lower case, no trailing slash */
	int plain_http;        /* 1 when server is http:// (only for a user without
	                        * credentials: no TLS at all, callers should warn) */
	int server_dns;        /* 1 when the server's host is a DNS name (neither an
	                        * IP address nor localhost): reaching it needs DNS */
	char *credential;      /* the field holding the user's credentials, for
	                        * messages ("users[0].user.token"); NULL: none */
	char *tls_server_name; /* NULL when unset */
	int insecure_skip_tls_verify; /* 1 only when the file says true explicitly */
	int disable_compression; /* 1 when the file says true explicitly */

	char *ca_pem;          /* CA bundle (PEM), NULL = none given */
	size_t ca_pem_len;
	char *client_cert_pem; /* client certificate chain (PEM) or NULL */
	size_t client_cert_pem_len;
	char *client_key_pem;  /* client private key (PEM) or NULL; a secret */
	size_t client_key_pem_len;

	char *token;           /* static bearer token or NULL; a secret */
	char *token_file;      /* tokenFile path or NULL (NULL when token is set) */

	/* token file cache; guarded by token_lock */
	pthread_mutex_t token_lock;
	char *token_cached;
	dev_t token_dev;
	ino_t token_ino;
	off_t token_size;
	struct timespec token_mtime;
	uint64_t token_gen;    /* counts the tokens read that differ from the last */
};

/* kubeconfig_load reads path (at most KUBECONFIG_FILE_MAX bytes) and
 * resolves context (NULL or "" = current-context) into ret, which the caller
 * releases with kubeconfig_free. Files named in it are read now, and a
 * tokenFile once, so a broken reference fails here. On failure ret is
 * untouched and e names the file and the problem: ERR_IO (with strerror) for
 * a file that cannot be read, ERR_TOO_LARGE, ERR_INVALID, ERR_UNSUPPORTED for
 * exec and auth-provider credential plugins and the other refused features. */
int kubeconfig_load(const char *path, const char *context,
    struct kubeconfig *ret, struct errbuf *e);

/* kubeconfig_load_buffer is kubeconfig_load on len bytes already in memory:
 * name is the file name for messages and ret->source, dir the directory
 * relative paths resolve against. */
int kubeconfig_load_buffer(const char *buf, size_t len, const char *name,
    const char *dir, const char *context, struct kubeconfig *ret,
    struct errbuf *e);

/* kubeconfig_server_parse checks a server URL as kubeconfig_load does
 * (https:// or http://, a host, an optional port in 1..65535, an optional
 * path, no user information, query or fragment) without looking anything
 * up, and returns its normal form (scheme in lower case, no trailing slash)
 * in a malloc'd *ret, 1 in *ret_plain_http for http://, and 1 in *ret_dns
 * when the host is a DNS name. ERR_INVALID with a message quoting the URL
 * (never its user information) otherwise; outputs untouched. */
int kubeconfig_server_parse(const char *url, char **ret, int *ret_plain_http,
    int *ret_dns, struct errbuf *e);

/* kubeconfig_set_server points kc at url instead of its server (--master):
 * checked by kubeconfig_server_parse, and refused (ERR_INVALID) when it is
 * http:// and kc's user has credentials. what names the override in
 * messages ("--master"). On failure kc keeps its server. */
int kubeconfig_set_server(struct kubeconfig *kc, const char *url, const char *what,
    struct errbuf *e);

/* kubeconfig_in_cluster builds the configuration a pod gets: the server from
 * KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (an IPv6 host is
 * bracketed), the CA (sa_dir/ca.crt) and token file (sa_dir/token) from
 * sa_dir (NULL = KUBECONFIG_SA_DIR). Both files must be readable now. Same
 * failure contract as kubeconfig_load. */
int kubeconfig_in_cluster(const char *sa_dir, struct kubeconfig *ret,
    struct errbuf *e);

/* kubeconfig_token returns a malloc'd copy of the current bearer token in
 * *ret (NULL when the config has none), which the caller wipes and frees: the
 * static token, or the token file's content, re-read when its device, inode,
 * size or mtime changed, surrounding whitespace trimmed (as client-go does).
 * A token that is empty or holds control characters or spaces is refused, so
 * it cannot break an HTTP header. Thread-safe. A file that cannot be read
 * keeps the last good token if there is one, else fails (ERR_IO,
 * ERR_TOO_LARGE, ERR_INVALID). */
int kubeconfig_token(struct kubeconfig *kc, char **ret, struct errbuf *e);

/* kubeconfig_token_generation looks at the token file (a stat; a read when
 * it changed) and returns a number that grows each time a token different
 * from the last one is read; 0 without a token file. For a caller that
 * acts on a rotation (the daemon retries what failed at once). */
uint64_t kubeconfig_token_generation(struct kubeconfig *kc);

/* kubeconfig_free releases everything kc owns (wiping secrets) and zeroes it;
 * a zeroed kc (never loaded, or already freed) is fine. */
void kubeconfig_free(struct kubeconfig *kc);

#endif
