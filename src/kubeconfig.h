/* kubeconfig.h - load a kubeconfig file, or the in-cluster configuration, into
 * the connection facts the HTTP layer needs.
 *
 * Contract: never logs. Every failure returns a negative ERR_* code and a
 * message in the caller's errbuf that names the file and what is wrong
 * ("/etc/kubernetes/bootccm.conf: context \"x\" not found"). Certificate and
 * key material given as files is read into memory at load time (relative paths
 * resolve against the kubeconfig's directory, as client-go does), so the HTTP
 * layer only ever handles PEM in memory. A token file is re-read whenever it
 * changes (projected service-account tokens rotate). Secrets are never copied
 * into error messages. */
#ifndef BOOTCCM_KUBECONFIG_H
#define BOOTCCM_KUBECONFIG_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "err.h"

#define KUBECONFIG_FILE_MAX (1024 * 1024)  /* bytes: kubeconfig, cert, key, CA files */
#define KUBECONFIG_TOKEN_MAX (64 * 1024)   /* bytes: a bearer token */

#define KUBECONFIG_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct kubeconfig {
	char *source;          /* the file read, or "in-cluster" */
	char *context;         /* name of the context used (NULL in-cluster) */
	char *cluster;         /* name of the cluster entry (NULL in-cluster) */
	char *user;            /* name of the user entry (NULL in-cluster) */
	char *server;          /* "https://host:port", no trailing slash */
	char *tls_server_name; /* NULL when unset */
	int insecure_skip_tls_verify; /* 1 only when the file says true explicitly */

	char *ca_pem;          /* CA bundle (PEM), NULL = none given */
	size_t ca_pem_len;
	char *client_cert_pem; /* client certificate chain (PEM) or NULL */
	size_t client_cert_pem_len;
	char *client_key_pem;  /* client private key (PEM) or NULL; a secret */
	size_t client_key_pem_len;

	char *token;           /* static bearer token or NULL; a secret */
	char *token_file;      /* tokenFile path or NULL */

	/* token file cache; guarded by token_lock */
	pthread_mutex_t token_lock;
	char *token_cached;
	dev_t token_dev;
	ino_t token_ino;
	off_t token_size;
	struct timespec token_mtime;
};

/* kubeconfig_load reads path and resolves context (NULL = current-context)
 * into ret. On failure ret is untouched and e names the file and the problem.
 * Refuses exec and auth-provider credential plugins (ERR_UNSUPPORTED). */
int kubeconfig_load(const char *path, const char *context,
    struct kubeconfig *ret, struct errbuf *e);

/* kubeconfig_in_cluster builds the configuration a pod gets: the server from
 * KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, the CA and token file
 * from sa_dir (NULL = KUBECONFIG_SA_DIR). */
int kubeconfig_in_cluster(const char *sa_dir, struct kubeconfig *ret,
    struct errbuf *e);

/* kubeconfig_token returns a malloc'd copy of the current bearer token in
 * *ret (NULL when the config has none): the static token, or the token
 * file's content, re-read when its inode, size or mtime changed, trailing
 * whitespace trimmed. Thread-safe. A file that cannot be read keeps the last
 * good token if there is one, else fails. */
int kubeconfig_token(struct kubeconfig *kc, char **ret, struct errbuf *e);

/* kubeconfig_free releases everything kc owns (wiping secrets) and zeroes it. */
void kubeconfig_free(struct kubeconfig *kc);

#endif
