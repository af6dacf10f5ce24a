/* kubeconfig.c - resolve a kubeconfig context (or the in-cluster setup) into
 * a server, TLS material and credentials, with client-go's semantics. */
#include "config/kubeconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/log.h"
#include "base/netaddr.h"
#include "base/readfile.h"
#include "base/xalloc.h"
#include "base/yamltree.h"

#define KUBECONFIG_PATH_MAX 128   /* bytes of a field path like "users[3].user.token" */
#define KUBECONFIG_ECHO_MAX 256   /* bytes of a server URL quoted in a message */
#define KUBECONFIG_HOST_MAX 255   /* bytes of KUBERNETES_SERVICE_HOST */

struct kubeconfig_loader {
	const char *name;     /* the file, for messages */
	const char *dir;      /* relative paths resolve against this */
	struct errbuf *e;
};

static void
kubeconfig_release(struct kubeconfig *kc)
{
	free(kc->source);
	free(kc->credential);
	free(kc->context);
	free(kc->cluster);
	free(kc->user);
	free(kc->server);
	free(kc->tls_server_name);
	readfile_free(kc->ca_pem, kc->ca_pem_len);
	readfile_free(kc->client_cert_pem, kc->client_cert_pem_len);
	readfile_free(kc->client_key_pem, kc->client_key_pem_len);
	if (kc->token != NULL)
		readfile_free(kc->token, strlen(kc->token));
	free(kc->token_file);
	if (kc->token_cached != NULL)
		readfile_free(kc->token_cached, strlen(kc->token_cached));
}

void
kubeconfig_free(struct kubeconfig *kc)
{
	if (kc == NULL)
		return;
	kubeconfig_release(kc);
	pthread_mutex_destroy(&kc->token_lock);
	memset(kc, 0, sizeof(*kc));
}

/* kubeconfig_join resolves file against dir, as client-go resolves the paths
 * in a kubeconfig against the file's own directory. */
static char *
kubeconfig_join(const char *dir, const char *file)
{
	size_t dlen;

	if (file[0] == '/' || dir == NULL || dir[0] == '\0')
		return xstrdup(file);
	dlen = strlen(dir);
	while (dlen > 1 && dir[dlen - 1] == '/')
		dlen--;
	if (dlen == 1 && dir[0] == '/')
		return xasprintf("/%s", file);
	return xasprintf("%.*s/%s", (int)dlen, dir, file);
}

static int
kubeconfig_is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
	    c == '\f';
}

/* kubeconfig_token_ok refuses what cannot go into an HTTP header verbatim. */
static int
kubeconfig_token_ok(const char *t, size_t len)
{
	size_t i;

	if (len == 0)
		return 0;
	for (i = 0; i < len; i++)
		if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] == 0x7f)
			return 0;
	return 1;
}

/* kubeconfig_token_refresh re-reads kc->token_file when it changed. The
 * caller holds token_lock (or owns kc alone). Keeps the cache on failure. */
static int
kubeconfig_token_refresh(struct kubeconfig *kc, struct errbuf *e)
{
	struct stat st;
	char *buf = NULL, *tok, *start;
	size_t len = 0, size = 0;
	int fd, r;

	if ((fd = readfile_open(kc->token_file, &st, e)) < 0)
		return fd;
	if (kc->token_cached != NULL && st.st_dev == kc->token_dev &&
	    st.st_ino == kc->token_ino && st.st_size == kc->token_size &&
	    st.st_mtim.tv_sec == kc->token_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == kc->token_mtime.tv_nsec) {
		r = 0;
		goto out;
	}
	r = readfile_fd(fd, kc->token_file, KUBECONFIG_TOKEN_MAX, &buf, &size, e);
	if (r < 0)
		goto out;
	len = size;
	start = buf;
	while (len > 0 && kubeconfig_is_space((unsigned char)start[len - 1]))
		len--;
	while (len > 0 && kubeconfig_is_space((unsigned char)*start)) {
		start++;
		len--;
	}
	if (len == 0) {
		r = errbuf_set(e, ERR_INVALID, "%s: the token file is empty",
		    kc->token_file);
		goto out;
	}
	if (!kubeconfig_token_ok(start, len)) {
		r = errbuf_set(e, ERR_INVALID,
		    "%s: the token holds whitespace or control characters",
		    kc->token_file);
		goto out;
	}
	tok = xmemdup(start, len);
	log_add_secret(tok);
	if (kc->token_cached == NULL || strcmp(kc->token_cached, tok) != 0)
		kc->token_gen++;
	if (kc->token_cached != NULL)
		readfile_free(kc->token_cached, strlen(kc->token_cached));
	kc->token_cached = tok;
	kc->token_dev = st.st_dev;
	kc->token_ino = st.st_ino;
	kc->token_size = st.st_size;
	kc->token_mtime = st.st_mtim;
	r = 0;
out:
	readfile_free(buf, size);
	close(fd);
	return r;
}

int
kubeconfig_token(struct kubeconfig *kc, char **ret, struct errbuf *e)
{
	char *t = NULL;
	int r = 0;

	if (kc->token != NULL) {
		*ret = xstrdup(kc->token);
		return 0;
	}
	if (kc->token_file == NULL) {
		*ret = NULL;
		return 0;
	}
	pthread_mutex_lock(&kc->token_lock);
	r = kubeconfig_token_refresh(kc, e);
	if (r < 0 && kc->token_cached != NULL)
		r = 0; /* keep the last good token while the file is away */
	if (r == 0)
		t = xstrdup(kc->token_cached);
	pthread_mutex_unlock(&kc->token_lock);
	if (r == 0)
		*ret = t;
	return r;
}

uint64_t
kubeconfig_token_generation(struct kubeconfig *kc)
{
	struct errbuf e;
	uint64_t gen;

	if (kc->token_file == NULL)
		return 0;
	pthread_mutex_lock(&kc->token_lock);
	(void)kubeconfig_token_refresh(kc, &e);   /* a bad file keeps the last token */
	gen = kc->token_gen;
	pthread_mutex_unlock(&kc->token_lock);
	return gen;
}

/* Field access. Paths in messages are the YAML path of the field, e.g.
 * "clusters[0].cluster.server", after the position of the offending node:
 * "FILE:LINE:COL: clusters[0].cluster.server: ...". */

#define KUBECONFIG_AT_MAX ERRBUF_MAX /* bytes of "FILE:LINE:COL" */

/* kubeconfig_at writes where node n is, "FILE:LINE:COL", into buf, or
 * "FILE" when n is NULL (a problem of the file as a whole, or of a node
 * that is not there); returns buf. */
static const char *
kubeconfig_at(const struct kubeconfig_loader *l, const struct ynode *n, char *buf,
    size_t cap)
{
	if (n != NULL)
		snprintf(buf, cap, "%s:%d:%d", l->name, n->line, n->col);
	else
		snprintf(buf, cap, "%s", l->name);
	return buf;
}

static int
kubeconfig_err(struct kubeconfig_loader *l, const struct ynode *n, int code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* kubeconfig_err sets "FILE:LINE:COL: " (kubeconfig_at) and the message;
 * returns code. */
static int
kubeconfig_err(struct kubeconfig_loader *l, const struct ynode *n, int code,
    const char *fmt, ...)
{
	char at[KUBECONFIG_AT_MAX], msg[ERRBUF_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return errbuf_set(l->e, code, "%s: %s", kubeconfig_at(l, n, at, sizeof(at)), msg);
}

/* kubeconfig_prefix puts "FILE:LINE:COL: what" before the message a callee
 * left in l->e; returns code. */
static int
kubeconfig_prefix(struct kubeconfig_loader *l, const struct ynode *n, int code,
    const char *what)
{
	char at[KUBECONFIG_AT_MAX];

	return errbuf_prefix(l->e, code, "%s: %s", kubeconfig_at(l, n, at, sizeof(at)), what);
}

static int
kubeconfig_type_err(struct kubeconfig_loader *l, const struct ynode *n,
    const char *path, const char *key, const char *want)
{
	if (path != NULL && key != NULL)
		return kubeconfig_err(l, n, ERR_INVALID, "%s.%s: expected %s", path, key, want);
	return kubeconfig_err(l, n, ERR_INVALID, "%s: expected %s",
	    path != NULL ? path : key, want);
}

/* kubeconfig_string gets map[key] as a C string; absent, null and empty all
 * give NULL, as an empty Go string means "unset" to client-go. path is where
 * map sits (NULL for the top level). */
static int
kubeconfig_string(struct kubeconfig_loader *l, const struct ynode *map,
    const char *path, const char *key, const char **ret)
{
	const struct ynode *n = yamltree_get(map, key);

	*ret = NULL;
	if (yamltree_is_null(n))
		return 0;
	if (n->kind != YNODE_SCALAR)
		return kubeconfig_type_err(l, n, path, key, "a string");
	if (strlen(n->scalar) != n->scalar_len)
		return kubeconfig_type_err(l, n, path, key,
		    "a string without NUL bytes");
	if (n->scalar_len > 0)
		*ret = n->scalar;
	return 0;
}

static int
kubeconfig_bool(struct kubeconfig_loader *l, const struct ynode *map,
    const char *path, const char *key, int *ret)
{
	const struct ynode *n = yamltree_get(map, key);
	int b;

	*ret = 0;
	if (yamltree_is_null(n))
		return 0;
	b = yamltree_bool(n);
	if (b < 0)
		return kubeconfig_type_err(l, n, path, key,
		    "a boolean (true or false)");
	*ret = b;
	return 0;
}

/* kubeconfig_present tells whether map[key] says anything: not null, not an
 * empty string, list or map. */
static int
kubeconfig_present(const struct ynode *map, const char *key)
{
	const struct ynode *n = yamltree_get(map, key);

	if (yamltree_is_null(n))
		return 0;
	if (n->kind == YNODE_SCALAR)
		return n->scalar_len > 0;
	return n->n > 0;
}

/* kubeconfig_strdup copies s, or gives NULL for NULL. */
static char *
kubeconfig_strdup(const char *s)
{
	return s != NULL ? xstrdup(s) : NULL;
}

/* kubeconfig_find looks up the entry called want in the named list
 * ("clusters") and returns its body (entry[body_key], NULL when absent) and
 * index. The list's entries are checked for shape on the way. */
static int
kubeconfig_find(struct kubeconfig_loader *l, const struct ynode *root,
    const char *list, const char *body_key, const char *want,
    const struct ynode **ret_entry, const struct ynode **ret_body, size_t *ret_index,
    int *ret_found)
{
	const struct ynode *seq = yamltree_get(root, list), *entry, *body;
	char path[KUBECONFIG_PATH_MAX];
	const char *name;
	size_t i;
	int r;

	*ret_found = 0;
	if (yamltree_is_null(seq))
		return 0;
	if (seq->kind != YNODE_SEQ)
		return kubeconfig_type_err(l, seq, list, NULL, "a list");
	for (i = 0; i < seq->n; i++) {
		entry = seq->items[i];
		snprintf(path, sizeof(path), "%s[%zu]", list, i);
		if (yamltree_is_null(entry))
			continue;
		if (entry->kind != YNODE_MAP)
			return kubeconfig_type_err(l, entry, path, NULL, "a map");
		r = kubeconfig_string(l, entry, path, "name", &name);
		if (r < 0)
			return r;
		if (strcmp(name ? name : "", want) != 0)
			continue;
		if (*ret_found)
			return kubeconfig_err(l, entry, ERR_INVALID,
			    "%s: duplicate name \"%s\"", path, want);
		body = yamltree_get(entry, body_key);
		if (yamltree_is_null(body))
			body = NULL;
		else if (body->kind != YNODE_MAP)
			return kubeconfig_type_err(l, body, path, body_key,
			    "a map");
		*ret_entry = entry;
		*ret_body = body;
		*ret_index = i;
		*ret_found = 1;
	}
	return 0;
}

static int
kubeconfig_pem_ok(const char *buf, size_t len)
{
	return memmem(buf, len, "-----BEGIN", 10) != NULL;
}

/* kubeconfig_material_node is the node a PEM item was given by: key_data
 * when present (it wins), else key_file. */
static const struct ynode *
kubeconfig_material_node(const struct ynode *map, const char *key_data,
    const char *key_file)
{
	return kubeconfig_present(map, key_data) ? yamltree_get(map, key_data) :
	    yamltree_get(map, key_file);
}

/* kubeconfig_material reads one PEM item given as key_data (base64, wins)
 * or key_file (a path) in map at path. Absent: *ret = NULL. */
static int
kubeconfig_material(struct kubeconfig_loader *l, const struct ynode *map,
    const char *path, const char *key_data, const char *key_file, char **ret,
    size_t *ret_len)
{
	const struct ynode *dn = yamltree_get(map, key_data), *fn = yamltree_get(map, key_file);
	const char *data, *file;
	char *buf = NULL, *abs = NULL, what[KUBECONFIG_PATH_MAX + 32];
	size_t len = 0;
	int r;

	*ret = NULL;
	*ret_len = 0;
	r = kubeconfig_string(l, map, path, key_data, &data);
	if (r < 0)
		return r;
	r = kubeconfig_string(l, map, path, key_file, &file);
	if (r < 0)
		return r;
	if (data != NULL) {
		r = base64_decode(data, strlen(data), &buf, &len);
		if (r < 0)
			return kubeconfig_err(l, dn, ERR_INVALID,
			    "%s.%s is not valid base64", path, key_data);
		if (!kubeconfig_pem_ok(buf, len)) {
			readfile_free(buf, len);
			return kubeconfig_err(l, dn, ERR_INVALID,
			    "%s.%s does not hold PEM data "
			    "(no \"-----BEGIN\" line after base64 decoding)",
			    path, key_data);
		}
	} else if (file != NULL) {
		abs = kubeconfig_join(l->dir, file);
		r = readfile(abs, KUBECONFIG_FILE_MAX, &buf, &len, l->e);
		if (r < 0) {
			snprintf(what, sizeof(what), "%s.%s", path, key_file);
			kubeconfig_prefix(l, fn, r, what);
			goto out;
		}
		if (!kubeconfig_pem_ok(buf, len)) {
			readfile_free(buf, len);
			buf = NULL;
			r = kubeconfig_err(l, fn, ERR_INVALID,
			    "%s.%s: %s does not hold PEM data "
			    "(no \"-----BEGIN\" line)", path, key_file, abs);
			goto out;
		}
	}
	*ret = buf;
	*ret_len = len;
	r = 0;
out:
	free(abs);
	return r;
}

/* kubeconfig_host_ok checks a URL's host: a bracketed IPv6 address, or a
 * name or IPv4 address of letters, digits, '-', '.' and '_' (the syntax
 * only: nothing is looked up). Sets *ret_name when the host needs DNS. */
static int
kubeconfig_host_ok(const char *h, size_t n, int *ret_name)
{
	struct netaddr a;
	char buf[NETADDR_TEXT_MAX];
	size_t i;

	if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
		if (n - 2 >= sizeof(buf))
			return 0;
		memcpy(buf, h + 1, n - 2);
		buf[n - 2] = '\0';
		*ret_name = 0;
		return netaddr_parse(buf, &a) == 0 && a.family == 6;
	}
	if (n == 0 || n > KUBECONFIG_HOST_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)h[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_'))
			return 0;
	}
	memcpy(buf, h, n < sizeof(buf) ? n : sizeof(buf) - 1);
	buf[n < sizeof(buf) ? n : sizeof(buf) - 1] = '\0';
	*ret_name = !(n < sizeof(buf) && netaddr_parse(buf, &a) == 0) &&
	    !(n == 9 && strncasecmp(h, "localhost", 9) == 0);
	return 1;
}

int
kubeconfig_server_parse(const char *url, char **ret, int *ret_plain_http, int *ret_dns,
    struct errbuf *e)
{
	const char *p, *rest, *host, *colon;
	size_t len, authority, hlen;
	int http, dns = 0;

	/* Before anything echoes the URL: user information may be a secret. */
	p = strstr(url, "://");
	rest = p ? p + 3 : url;
	authority = strcspn(rest, "/?#");
	if (memchr(rest, '@', authority) != NULL)
		return errbuf_set(e, ERR_INVALID, "the server URL must not hold user "
		    "information");
	for (p = url; *p != '\0'; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p == 0x7f)
			return errbuf_set(e, ERR_INVALID, "the server URL holds a space or "
			    "control character");
	if (strncasecmp(url, "https://", 8) == 0)
		http = 0;
	else if (strncasecmp(url, "http://", 7) == 0)
		http = 1;
	else
		return errbuf_set(e, ERR_INVALID, "server \"%.*s\" must be an https:// URL",
		    KUBECONFIG_ECHO_MAX, url);
	if (authority == 0)
		return errbuf_set(e, ERR_INVALID, "server \"%.*s\" has no host",
		    KUBECONFIG_ECHO_MAX, url);
	if (strpbrk(rest, "?#") != NULL)
		return errbuf_set(e, ERR_INVALID, "server \"%.*s\" must not have a query or "
		    "fragment", KUBECONFIG_ECHO_MAX, url);
	/* host[:port]; an IPv6 host is bracketed, so its port follows ']' */
	host = rest;
	colon = NULL;
	if (host[0] == '[') {
		const char *close = memchr(host, ']', authority);
		if (close == NULL)
			return errbuf_set(e, ERR_INVALID, "server \"%.*s\": host: missing ']'",
			    KUBECONFIG_ECHO_MAX, url);
		if ((size_t)(close + 1 - host) < authority) {
			if (close[1] != ':')
				return errbuf_set(e, ERR_INVALID, "server \"%.*s\": host: "
				    "unexpected text after ']'", KUBECONFIG_ECHO_MAX, url);
			colon = close + 1;
		}
	} else {
		colon = memchr(host, ':', authority);
	}
	hlen = colon ? (size_t)(colon - host) : authority;
	if (!kubeconfig_host_ok(host, hlen, &dns))
		return errbuf_set(e, ERR_INVALID, "server \"%.*s\": host \"%.*s\" is not a "
		    "host name or IP address", KUBECONFIG_ECHO_MAX, url, (int)hlen, host);
	if (colon != NULL) {
		size_t plen = authority - hlen - 1, i;
		unsigned long v = 0;

		for (i = 0; i < plen && i < 6; i++) {
			if (colon[1 + i] < '0' || colon[1 + i] > '9')
				break;
			v = v * 10 + (unsigned long)(colon[1 + i] - '0');
		}
		if (plen == 0 || i != plen || v < 1 || v > 65535)
			return errbuf_set(e, ERR_INVALID, "server \"%.*s\": port \"%.*s\" is "
			    "not a number in 1..65535", KUBECONFIG_ECHO_MAX, url, (int)plen,
			    colon + 1);
	}
	len = strlen(rest);
	while (len > authority && rest[len - 1] == '/')
		len--;
	/* the scheme in lower case, the rest as given */
	*ret = xasprintf("%s%.*s", http ? "http://" : "https://", (int)len, rest);
	*ret_plain_http = http;
	*ret_dns = dns;
	return 0;
}

/* kubeconfig_transport_ok refuses server, a plain-HTTP one (http set),
 * for kc's user when it has credentials: a token or a client certificate
 * goes only over verified TLS. where opens the message (the file, or its
 * position of the server field), what names where the server came from. */
static int
kubeconfig_transport_ok(const struct kubeconfig *kc, const char *where, const char *what,
    const char *server, int http, struct errbuf *e)
{
	if (!http || kc->credential == NULL)
		return 0;
	return errbuf_set(e, ERR_INVALID, "%s: %s \"%.*s\" is plain HTTP: the credentials "
	    "in %s (user \"%s\") would go out in clear; they are sent only over verified "
	    "TLS: use an https:// server", where, what,
	    KUBECONFIG_ECHO_MAX, server, kc->credential, kc->user ? kc->user : "");
}

int
kubeconfig_set_server(struct kubeconfig *kc, const char *url, const char *what,
    struct errbuf *e)
{
	char *s = NULL;
	int http, dns, r;

	if ((r = kubeconfig_server_parse(url, &s, &http, &dns, e)) < 0)
		return errbuf_prefix(e, r, "%s", what);
	if ((r = kubeconfig_transport_ok(kc, kc->source ? kc->source : "kubeconfig", what, s,
	    http, e)) < 0) {
		free(s);
		return r;
	}
	free(kc->server);
	kc->server = s;
	kc->plain_http = http;
	kc->server_dns = dns;
	return 0;
}

/* kubeconfig_server checks and normalizes the cluster's server URL into kc. */
static int
kubeconfig_server(struct kubeconfig_loader *l, const struct ynode *at, const char *cluster,
    const char *server, struct kubeconfig *kc)
{
	char what[ERRBUF_MAX];
	int r = kubeconfig_server_parse(server, &kc->server, &kc->plain_http,
	    &kc->server_dns, l->e);

	if (r < 0) {
		snprintf(what, sizeof(what), "cluster \"%.200s\"", cluster);
		return kubeconfig_prefix(l, at, r, what);
	}
	return 0;
}

static int
kubeconfig_cluster(struct kubeconfig_loader *l, const struct ynode *entry,
    const struct ynode *body, size_t index, const char *name, struct kubeconfig *kc)
{
	char path[KUBECONFIG_PATH_MAX];
	const char *server, *tls_name, *proxy;
	int r;

	snprintf(path, sizeof(path), "clusters[%zu].cluster", index);
	r = kubeconfig_string(l, body, path, "server", &server);
	if (r < 0)
		return r;
	if (server == NULL)
		return kubeconfig_err(l, body ? body : entry, ERR_INVALID,
		    "cluster \"%s\" has no server", name);
	r = kubeconfig_string(l, body, path, "proxy-url", &proxy);
	if (r < 0)
		return r;
	if (proxy != NULL)
		return kubeconfig_err(l, yamltree_get(body, "proxy-url"), ERR_UNSUPPORTED,
		    "%s.proxy-url: proxies are not supported; bootccm "
		    "connects to the server directly", path);
	r = kubeconfig_server(l, yamltree_get(body, "server"), name, server, kc);
	if (r < 0)
		return r;
	r = kubeconfig_string(l, body, path, "tls-server-name", &tls_name);
	if (r < 0)
		return r;
	kc->tls_server_name = kubeconfig_strdup(tls_name);
	r = kubeconfig_bool(l, body, path, "insecure-skip-tls-verify",
	    &kc->insecure_skip_tls_verify);
	if (r < 0)
		return r;
	r = kubeconfig_bool(l, body, path, "disable-compression",
	    &kc->disable_compression);
	if (r < 0)
		return r;
	r = kubeconfig_material(l, body, path, "certificate-authority-data",
	    "certificate-authority", &kc->ca_pem, &kc->ca_pem_len);
	if (r < 0)
		return r;
	if (kc->insecure_skip_tls_verify && kc->ca_pem != NULL)
		return kubeconfig_err(l, yamltree_get(body, "insecure-skip-tls-verify"),
		    ERR_INVALID, "cluster \"%s\": specifying a root certificates file "
		    "with the insecure flag is not allowed", name);
	return 0;
}

static int
kubeconfig_user(struct kubeconfig_loader *l, const struct ynode *body, size_t index,
    const char *name, struct kubeconfig *kc)
{
	static const char *const impersonation[] = {
		"as", "as-uid", "as-groups", "as-user-extra",
	};
	char path[KUBECONFIG_PATH_MAX];
	const char *token, *token_file;
	const struct ynode *n;
	size_t i;
	int r;

	snprintf(path, sizeof(path), "users[%zu].user", index);
	if (!yamltree_is_null(n = yamltree_get(body, "exec")))
		return kubeconfig_err(l, n, ERR_UNSUPPORTED,
		    "user \"%s\": exec credential plugins are not supported; "
		    "use a client certificate or token", name);
	if (!yamltree_is_null(n = yamltree_get(body, "auth-provider")))
		return kubeconfig_err(l, n, ERR_UNSUPPORTED,
		    "user \"%s\": auth-provider plugins are not supported; "
		    "use a client certificate or token", name);
	if (kubeconfig_present(body, "username") ||
	    kubeconfig_present(body, "password"))
		return kubeconfig_err(l, kubeconfig_present(body, "username") ?
		    yamltree_get(body, "username") : yamltree_get(body, "password"),
		    ERR_UNSUPPORTED, "user \"%s\": basic authentication is not supported; "
		    "use a client certificate or token", name);
	for (i = 0; i < sizeof(impersonation) / sizeof(impersonation[0]); i++)
		if (kubeconfig_present(body, impersonation[i]))
			return kubeconfig_err(l, yamltree_get(body, impersonation[i]),
			    ERR_UNSUPPORTED, "user \"%s\": impersonation (%s) is not "
			    "supported", name, impersonation[i]);

	r = kubeconfig_material(l, body, path, "client-certificate-data",
	    "client-certificate", &kc->client_cert_pem,
	    &kc->client_cert_pem_len);
	if (r < 0)
		return r;
	r = kubeconfig_material(l, body, path, "client-key-data", "client-key",
	    &kc->client_key_pem, &kc->client_key_pem_len);
	if (r < 0)
		return r;
	if (kc->client_cert_pem != NULL && kc->client_key_pem == NULL)
		return kubeconfig_err(l, kubeconfig_material_node(body,
		    "client-certificate-data", "client-certificate"), ERR_INVALID,
		    "user \"%s\": client-certificate given without "
		    "client-key (or client-key-data)", name);
	if (kc->client_key_pem != NULL && kc->client_cert_pem == NULL)
		return kubeconfig_err(l, kubeconfig_material_node(body, "client-key-data",
		    "client-key"), ERR_INVALID, "user \"%s\": client-key given without "
		    "client-certificate (or client-certificate-data)", name);
	if (kc->client_cert_pem != NULL)
		kc->credential = xasprintf("%s.%s", path,
		    kubeconfig_present(body, "client-certificate-data") ?
		    "client-certificate-data" : "client-certificate");

	r = kubeconfig_string(l, body, path, "token", &token);
	if (r < 0)
		return r;
	r = kubeconfig_string(l, body, path, "tokenFile", &token_file);
	if (r < 0)
		return r;
	if (token != NULL) {
		n = yamltree_get(body, "token");
		if (!kubeconfig_token_ok(token, strlen(token)))
			return kubeconfig_err(l, n, ERR_INVALID,
			    "%s.token: holds whitespace or control "
			    "characters", path);
		kc->token = xstrdup(token);
		free(kc->credential);
		kc->credential = xasprintf("%s.token", path);
		return 0;
	}
	if (token_file != NULL) {
		free(kc->credential);
		kc->credential = xasprintf("%s.tokenFile", path);
		kc->token_file = kubeconfig_join(l->dir, token_file);
		/* Read it now so a wrong path fails at start-up. */
		r = kubeconfig_token_refresh(kc, l->e);
		if (r < 0) {
			char what[KUBECONFIG_PATH_MAX + 16];
			snprintf(what, sizeof(what), "%s.tokenFile", path);
			return kubeconfig_prefix(l, yamltree_get(body, "tokenFile"), r, what);
		}
	}
	return 0;
}

static int
kubeconfig_resolve(struct kubeconfig_loader *l, const struct ynode *root,
    const char *context, struct kubeconfig *kc)
{
	const struct ynode *ctx_body = NULL, *cluster_body = NULL, *user_body = NULL;
	const struct ynode *ctx_entry = NULL, *cluster_entry = NULL, *user_entry = NULL;
	/* (a user's errors all name one of its fields, not its entry) */
	const struct ynode *named_by = NULL;
	const char *current, *cluster = NULL, *user = NULL;
	char path[KUBECONFIG_PATH_MAX], at[KUBECONFIG_AT_MAX];
	size_t ctx_index = 0, cluster_index = 0, user_index = 0;
	int r, found;

	if (root == NULL)
		return errbuf_set(l->e, ERR_INVALID,
		    "%s: no configuration (the file is empty)", l->name);
	if (root->kind != YNODE_MAP)
		return kubeconfig_err(l, root, ERR_INVALID,
		    "expected a map at the top level (with clusters, users, contexts)");
	r = kubeconfig_string(l, root, NULL, "current-context",
	    &current);
	if (r < 0)
		return r;
	if (context == NULL || context[0] == '\0') {
		context = current;
		named_by = yamltree_get(root, "current-context");
	}
	if (context == NULL)
		return errbuf_set(l->e, ERR_INVALID,
		    "%s: no current-context and no --context given", l->name);

	r = kubeconfig_find(l, root, "contexts", "context", context, &ctx_entry, &ctx_body,
	    &ctx_index, &found);
	if (r < 0)
		return r;
	if (!found)
		return kubeconfig_err(l, named_by, ERR_INVALID, "context \"%s\" not found",
		    context);
	snprintf(path, sizeof(path), "contexts[%zu].context", ctx_index);
	r = kubeconfig_string(l, ctx_body, path, "cluster", &cluster);
	if (r < 0)
		return r;
	r = kubeconfig_string(l, ctx_body, path, "user", &user);
	if (r < 0)
		return r;
	if (cluster == NULL)
		return kubeconfig_err(l, ctx_body ? ctx_body : ctx_entry, ERR_INVALID,
		    "context \"%s\" names no cluster", context);

	r = kubeconfig_find(l, root, "clusters", "cluster", cluster, &cluster_entry,
	    &cluster_body, &cluster_index, &found);
	if (r < 0)
		return r;
	if (!found)
		return kubeconfig_err(l, yamltree_get(ctx_body, "cluster"), ERR_INVALID,
		    "cluster \"%s\" (context \"%s\") not found", cluster, context);
	r = kubeconfig_cluster(l, cluster_entry, cluster_body, cluster_index, cluster, kc);
	if (r < 0)
		return r;

	/* A context without a user is anonymous, as in client-go. */
	if (user != NULL) {
		r = kubeconfig_find(l, root, "users", "user", user, &user_entry, &user_body,
		    &user_index, &found);
		if (r < 0)
			return r;
		if (!found)
			return kubeconfig_err(l, yamltree_get(ctx_body, "user"), ERR_INVALID,
			    "user \"%s\" not found", user);
		r = kubeconfig_user(l, user_body, user_index, user, kc);
		if (r < 0)
			return r;
	}

	kc->source = kubeconfig_strdup(l->name);
	kc->context = kubeconfig_strdup(context);
	kc->cluster = kubeconfig_strdup(cluster);
	kc->user = kubeconfig_strdup(user);
	return kubeconfig_transport_ok(kc, kubeconfig_at(l, yamltree_get(cluster_body, "server"),
	    at, sizeof(at)), "server", kc->server, kc->plain_http, l->e);
}

/* kubeconfig_commit hands a fully built kc to the caller. The mutex is
 * initialized in place: a pthread mutex must not be copied. */
static void
kubeconfig_commit(struct kubeconfig *kc, struct kubeconfig *ret)
{
	log_add_secret(kc->token);
	log_add_secret(kc->client_key_pem);
	memcpy(ret, kc, sizeof(*ret));
	pthread_mutex_init(&ret->token_lock, NULL);
	explicit_bzero(kc, sizeof(*kc));
}

int
kubeconfig_load_buffer(const char *buf, size_t len, const char *name,
    const char *dir, const char *context, struct kubeconfig *ret,
    struct errbuf *e)
{
	struct kubeconfig_loader l = { name, dir, e };
	struct kubeconfig kc;
	struct ynode *root = NULL;
	int r;

	memset(&kc, 0, sizeof(kc));
	r = yamltree_parse(buf, len, name, &root, e);
	if (r < 0)
		return r;
	r = kubeconfig_resolve(&l, root, context, &kc);
	yamltree_free(root);
	if (r < 0) {
		kubeconfig_release(&kc);
		return r;
	}
	kubeconfig_commit(&kc, ret);
	return 0;
}

int
kubeconfig_load(const char *path, const char *context, struct kubeconfig *ret,
    struct errbuf *e)
{
	char *buf = NULL, *dir = NULL, *slash;
	size_t len = 0;
	int r;

	r = readfile(path, KUBECONFIG_FILE_MAX, &buf, &len, e);
	if (r < 0)
		return r;
	dir = xstrdup(path);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		snprintf(dir, strlen(dir) + 1, ".");
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	r = kubeconfig_load_buffer(buf, len, path, dir, context, ret, e);
	readfile_free(buf, len);
	free(dir);
	return r;
}

/* kubeconfig_in_cluster_host accepts a DNS name or an IP address. */
static int
kubeconfig_in_cluster_host(const char *host)
{
	size_t i, len = strlen(host);

	if (len == 0 || len > KUBECONFIG_HOST_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)host[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '-' ||
		    c == ':' || c == '[' || c == ']' || c == '%' || c == '_'))
			return 0;
	}
	return 1;
}

static int
kubeconfig_in_cluster_port(const char *port)
{
	unsigned long v = 0;
	size_t i, len = strlen(port);

	if (len == 0 || len > 5)
		return 0;
	for (i = 0; i < len; i++) {
		if (port[i] < '0' || port[i] > '9')
			return 0;
		v = v * 10 + (unsigned long)(port[i] - '0');
	}
	return v >= 1 && v <= 65535;
}

int
kubeconfig_in_cluster(const char *sa_dir, struct kubeconfig *ret,
    struct errbuf *e)
{
	struct kubeconfig_loader l = { "in-cluster", NULL, e };
	struct kubeconfig kc;
	const char *host, *port;
	char *ca_path = NULL;
	int r;

	memset(&kc, 0, sizeof(kc));
	if (sa_dir == NULL)
		sa_dir = KUBECONFIG_SA_DIR;
	host = getenv("KUBERNETES_SERVICE_HOST");
	port = getenv("KUBERNETES_SERVICE_PORT");
	if (host == NULL || host[0] == '\0' || port == NULL || port[0] == '\0')
		return errbuf_set(e, ERR_INVALID,
		    "unable to load in-cluster configuration, "
		    "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must "
		    "be defined");
	if (!kubeconfig_in_cluster_host(host))
		return errbuf_set(e, ERR_INVALID,
		    "in-cluster: KUBERNETES_SERVICE_HOST is not a host name or "
		    "IP address");
	if (!kubeconfig_in_cluster_port(port))
		return errbuf_set(e, ERR_INVALID,
		    "in-cluster: KUBERNETES_SERVICE_PORT is not a port number "
		    "(1-65535)");

	if (strchr(host, ':') != NULL && host[0] != '[')
		kc.server = xasprintf("https://[%s]:%s", host, port);
	else
		kc.server = xasprintf("https://%s:%s", host, port);

	ca_path = kubeconfig_join(sa_dir, "ca.crt");
	kc.token_file = kubeconfig_join(sa_dir, "token");
	kc.source = xstrdup("in-cluster");
	r = readfile(ca_path, KUBECONFIG_FILE_MAX, &kc.ca_pem, &kc.ca_pem_len, e);
	if (r < 0) {
		errbuf_prefix(e, r, "%s", l.name);
		goto fail;
	}
	if (!kubeconfig_pem_ok(kc.ca_pem, kc.ca_pem_len)) {
		r = errbuf_set(e, ERR_INVALID,
		    "in-cluster: %s does not hold PEM data (no \"-----BEGIN\" "
		    "line)", ca_path);
		goto fail;
	}
	r = kubeconfig_token_refresh(&kc, e);
	if (r < 0) {
		errbuf_prefix(e, r, "%s", l.name);
		goto fail;
	}
	free(ca_path);
	kubeconfig_commit(&kc, ret);
	return 0;

fail:
	free(ca_path);
	kubeconfig_release(&kc);
	return r;
}
