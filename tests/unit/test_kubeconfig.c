/* test_kubeconfig.c - unit tests for the kubeconfig loader: every field,
 * context resolution, each error message, hostile YAML, token file rotation,
 * the in-cluster configuration, and that no message leaks a secret.
 * Fixtures are written into mkdtemp directories. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/err.h"
#include "harness.h"
#include "config/kubeconfig.h"

#define TOKEN "s3cr3t-T0KEN-value"
#define PASSWORD "hunter2-S3CR3T"
#define CA_PEM "-----BEGIN CERTIFICATE-----\nCAMATERIAL\n-----END CERTIFICATE-----\n"
#define CERT_PEM "-----BEGIN CERTIFICATE-----\nS3CR3TCERTMATERIAL\n-----END CERTIFICATE-----\n"
#define KEY_PEM "-----BEGIN PRIVATE KEY-----\nS3CR3TKEYMATERIAL\n-----END PRIVATE KEY-----\n"
#define NOT_PEM "S3CR3TNOTPEMATALL"

static char *ca_b64, *cert_b64, *key_b64, *notpem_b64;

/* Every directory made, removed at exit even when a CHECK fails. */
static char fx_dirs[64][64];
static int fx_ndirs;
static char fx_dir[64];       /* the current test's directory */
static char fx_buf[16384];    /* the current config text */
static char fx_pathbuf[4][PATH_MAX];
static int fx_pathnext;

static int
fx_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void
fx_cleanup(void)
{
	int i;

	for (i = 0; i < fx_ndirs; i++)
		nftw(fx_dirs[i], fx_rm, 16, FTW_DEPTH | FTW_PHYS);
	free(ca_b64);
	free(cert_b64);
	free(key_b64);
	free(notpem_b64);
}

__attribute__((constructor)) static void
fx_init(void)
{
	ca_b64 = base64_encode(CA_PEM, strlen(CA_PEM));
	cert_b64 = base64_encode(CERT_PEM, strlen(CERT_PEM));
	key_b64 = base64_encode(KEY_PEM, strlen(KEY_PEM));
	notpem_b64 = base64_encode(NOT_PEM, strlen(NOT_PEM));
	atexit(fx_cleanup);
}

static void
fx_setup(void)
{
	snprintf(fx_dir, sizeof(fx_dir), "/tmp/kubeconfig-test.XXXXXX");
	if (mkdtemp(fx_dir) == NULL || fx_ndirs == 64)
		abort();
	memcpy(fx_dirs[fx_ndirs++], fx_dir, sizeof(fx_dir));
}

/* fx_path names a file in the current directory (a few stay valid). */
static const char *
fx_path(const char *name)
{
	char *p = fx_pathbuf[fx_pathnext++ % 4];

	snprintf(p, PATH_MAX, "%s/%s", fx_dir, name);
	return p;
}

static void
fx_write(const char *name, const char *content)
{
	FILE *f = fopen(fx_path(name), "w");

	if (f == NULL || fputs(content, f) < 0 || fclose(f) != 0)
		abort();
}

static void
fx_mtime(const char *name, time_t sec)
{
	struct timespec ts[2] = { { sec, 0 }, { sec, 0 } };

	if (utimensat(AT_FDCWD, fx_path(name), ts, 0) != 0)
		abort();
}

static const char *
fx_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static const char *
fx_fmt(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fx_buf, sizeof(fx_buf), fmt, ap);
	va_end(ap);
	return fx_buf;
}

/* fx_leaks tells whether a message holds any secret of the fixtures. */
static int
fx_leaks(const char *msg)
{
	return strstr(msg, "S3CR3T") != NULL || strstr(msg, "s3cr3t") != NULL ||
	    strstr(msg, "hunter2") != NULL || strstr(msg, cert_b64) != NULL ||
	    strstr(msg, key_b64) != NULL || strstr(msg, notpem_b64) != NULL ||
	    strstr(msg, "MATERIAL") != NULL;
}

static int
fx_load(const char *yaml, const char *context, struct kubeconfig *kc,
    struct errbuf *e)
{
	memset(e, 0, sizeof(*e));
	fx_write("config", yaml);
	return kubeconfig_load(fx_path("config"), context, kc, e);
}

/* fx_fail loads yaml expecting the error code; it checks that the output was
 * left alone and that the message names the file and leaks nothing. */
static int
fx_fail(const char *yaml, const char *context, int code, struct errbuf *e)
{
	struct kubeconfig kc, pristine;
	int r;

	memset(&kc, 0xa5, sizeof(kc));
	memset(&pristine, 0xa5, sizeof(pristine));
	r = fx_load(yaml, context, &kc, e);
	if (r != code) {
		fprintf(stderr, "  got %d (%s), want %d\n", r, e->msg, code);
		if (r == 0)
			kubeconfig_free(&kc);
		return 0;
	}
	if (memcmp(&kc, &pristine, sizeof(kc)) != 0) {
		fprintf(stderr, "  output touched on failure\n");
		return 0;
	}
	if (strncmp(e->msg, fx_path("config"), strlen(fx_path("config"))) != 0) {
		fprintf(stderr, "  message does not start with the file: %s\n",
		    e->msg);
		return 0;
	}
	if (fx_leaks(e->msg)) {
		fprintf(stderr, "  message leaks a secret: %s\n", e->msg);
		return 0;
	}
	return 1;
}

/* fx_msg is the expected message: the config path, then text. */
static const char *
fx_msg(const char *text)
{
	static char msg[ERRBUF_MAX];

	snprintf(msg, sizeof(msg), "%s%s", fx_path("config"), text);
	return msg;
}

static const char *
fx_full(void)
{
	return fx_fmt(
	    "apiVersion: v1\n"
	    "kind: Config\n"
	    "preferences: {colors: true}\n"
	    "current-context: main\n"
	    "clusters:\n"
	    "- name: prod\n"
	    "  cluster:\n"
	    "    server: https://api.example.com:6443/\n"
	    "    certificate-authority-data: %s\n"
	    "    tls-server-name: kubernetes.default\n"
	    "    disable-compression: true\n"
	    "    extensions:\n"
	    "    - name: x\n"
	    "      extension: {a: b}\n"
	    "- name: other\n"
	    "  cluster:\n"
	    "    server: https://10.0.0.1\n"
	    "    insecure-skip-tls-verify: true\n"
	    "contexts:\n"
	    "- name: main\n"
	    "  context: {cluster: prod, user: admin, namespace: kube-system}\n"
	    "- name: second\n"
	    "  context: {cluster: other, user: bot}\n"
	    "users:\n"
	    "- name: admin\n"
	    "  user:\n"
	    "    client-certificate-data: %s\n"
	    "    client-key-data: %s\n"
	    "    some-future-field: ignored\n"
	    "- name: bot\n"
	    "  user:\n"
	    "    token: " TOKEN "\n"
	    "- name: plugin\n"
	    "  user:\n"
	    "    exec: {command: never-run}\n"
	    "extensions: []\n",
	    ca_b64, cert_b64, key_b64);
}

TEST(current_context_every_field)
{
	struct kubeconfig kc;
	struct errbuf e;
	char *tok = (char *)"x";

	fx_setup();
	CHECK(fx_load(fx_full(), NULL, &kc, &e) == 0);
	CHECK_STR(kc.source, fx_path("config"));
	CHECK_STR(kc.context, "main");
	CHECK_STR(kc.cluster, "prod");
	CHECK_STR(kc.user, "admin");
	CHECK_STR(kc.server, "https://api.example.com:6443");
	CHECK(kc.plain_http == 0);
	CHECK_STR(kc.tls_server_name, "kubernetes.default");
	CHECK(kc.insecure_skip_tls_verify == 0);
	CHECK(kc.disable_compression == 1);
	CHECK_STR(kc.ca_pem, CA_PEM);
	CHECK(kc.ca_pem_len == strlen(CA_PEM));
	CHECK_STR(kc.client_cert_pem, CERT_PEM);
	CHECK(kc.client_cert_pem_len == strlen(CERT_PEM));
	CHECK_STR(kc.client_key_pem, KEY_PEM);
	CHECK(kc.client_key_pem_len == strlen(KEY_PEM));
	CHECK(kc.token == NULL && kc.token_file == NULL);
	CHECK(kubeconfig_token(&kc, &tok, &e) == 0);
	CHECK(tok == NULL);
	kubeconfig_free(&kc);
	CHECK(kc.server == NULL && kc.client_key_pem == NULL);
	kubeconfig_free(&kc); /* twice is harmless */
}

TEST(explicit_context)
{
	struct kubeconfig kc;
	struct errbuf e;
	char *tok = NULL;

	fx_setup();
	CHECK(fx_load(fx_full(), "second", &kc, &e) == 0);
	CHECK_STR(kc.context, "second");
	CHECK_STR(kc.cluster, "other");
	CHECK_STR(kc.user, "bot");
	CHECK_STR(kc.server, "https://10.0.0.1");
	CHECK(kc.insecure_skip_tls_verify == 1);
	CHECK(kc.disable_compression == 0);
	CHECK(kc.ca_pem == NULL && kc.client_cert_pem == NULL);
	CHECK(kc.tls_server_name == NULL);
	CHECK_STR(kc.token, TOKEN);
	CHECK(kubeconfig_token(&kc, &tok, &e) == 0);
	CHECK_STR(tok, TOKEN);
	free(tok);
	kubeconfig_free(&kc);

	/* "" means the current context, like an unset --context */
	CHECK(fx_load(fx_full(), "", &kc, &e) == 0);
	CHECK_STR(kc.context, "main");
	kubeconfig_free(&kc);
}

TEST(load_buffer)
{
	struct kubeconfig kc;
	struct errbuf e;
	const char *yaml;

	fx_setup();
	fx_write("ca.crt", CA_PEM);
	yaml = "current-context: c\n"
	    "contexts: [{name: c, context: {cluster: k}}]\n"
	    "clusters: [{name: k, cluster: {server: 'https://h', "
	    "certificate-authority: ca.crt}}]\n";
	CHECK(kubeconfig_load_buffer(yaml, strlen(yaml), "mem.conf", fx_dir,
	    NULL, &kc, &e) == 0);
	CHECK_STR(kc.source, "mem.conf");
	CHECK_STR(kc.ca_pem, CA_PEM);
	CHECK(kc.user == NULL);
	kubeconfig_free(&kc);
	CHECK(kubeconfig_load_buffer(yaml, strlen(yaml), "mem.conf", "/nonexistent",
	    NULL, &kc, &e) == ERR_IO);
	CHECK_STR(e.msg, "mem.conf:3:76: clusters[0].cluster.certificate-authority: "
	    "/nonexistent/ca.crt: No such file or directory");
}

TEST(context_errors)
{
	struct errbuf e;

	fx_setup();
	CHECK(fx_fail(fx_full(), "nope", ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(": context \"nope\" not found"));

	CHECK(fx_fail("current-context: x\ncontexts: []\n", NULL, ERR_INVALID,
	    &e));
	CHECK_STR(e.msg, fx_msg(":1:18: context \"x\" not found"));

	CHECK(fx_fail("current-context: x\n"
	    "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
	    "clusters: [{name: d, cluster: {server: 'https://h'}}]\n",
	    NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":2:41: cluster \"c\" (context \"x\") not found"));

	CHECK(fx_fail("current-context: x\n"
	    "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
	    "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
	    "users: [{name: v, user: {token: " TOKEN "}}]\n",
	    NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":2:50: user \"u\" not found"));

	CHECK(fx_fail("clusters: []\ncontexts: []\n", NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(": no current-context and no --context given"));
	CHECK(fx_fail("current-context: ''\n", NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(": no current-context and no --context given"));

	CHECK(fx_fail("current-context: x\ncontexts: [{name: x, context: {}}]\n",
	    NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":2:31: context \"x\" names no cluster"));
	CHECK(fx_fail("current-context: x\ncontexts: [{name: x}]\n",
	    NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":2:12: context \"x\" names no cluster"));

	CHECK(fx_fail("current-context: x\n"
	    "contexts: [{name: x, context: {cluster: c}},\n"
	    "           {name: x, context: {cluster: d}}]\n",
	    NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":3:12: contexts[1]: duplicate name \"x\""));
}

TEST(context_without_user_is_anonymous)
{
	struct kubeconfig kc;
	struct errbuf e;

	fx_setup();
	CHECK(fx_load("current-context: x\n"
	    "contexts: [{name: x, context: {cluster: c}}]\n"
	    "clusters: [{name: c, cluster: {server: 'https://h'}}]\n",
	    NULL, &kc, &e) == 0);
	CHECK(kc.user == NULL && kc.token == NULL && kc.client_key_pem == NULL);
	kubeconfig_free(&kc);
}

TEST(relative_paths)
{
	struct kubeconfig kc;
	struct errbuf e;
	char sub[PATH_MAX], cfg[PATH_MAX], abs_ca[PATH_MAX];
	char *tok = NULL;
	FILE *f;

	fx_setup();
	snprintf(sub, sizeof(sub), "%s/sub", fx_dir);
	CHECK(mkdir(sub, 0700) == 0);
	CHECK(mkdir(fx_path("sub/pki"), 0700) == 0);
	fx_write("sub/pki/client.crt", CERT_PEM);
	fx_write("sub/pki/client.key", KEY_PEM);
	fx_write("sub/token", "  " TOKEN "\n\n");
	fx_write("ca-elsewhere.crt", CA_PEM);
	snprintf(abs_ca, sizeof(abs_ca), "%s/ca-elsewhere.crt", fx_dir);
	snprintf(cfg, sizeof(cfg), "%s/sub/kubeconfig", fx_dir);
	f = fopen(cfg, "w");
	CHECK(f != NULL);
	fprintf(f, "current-context: x\n"
	    "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
	    "clusters:\n"
	    "- name: c\n"
	    "  cluster:\n"
	    "    server: https://h\n"
	    "    certificate-authority: %s\n"
	    "users:\n"
	    "- name: u\n"
	    "  user:\n"
	    "    client-certificate: pki/client.crt\n"
	    "    client-key: ./pki/client.key\n"
	    "    tokenFile: token\n", abs_ca);
	fclose(f);
	/* run from elsewhere: relative means relative to the file */
	CHECK(chdir("/") == 0);
	CHECK(kubeconfig_load(cfg, NULL, &kc, &e) == 0);
	CHECK_STR(kc.ca_pem, CA_PEM);
	CHECK_STR(kc.client_cert_pem, CERT_PEM);
	CHECK_STR(kc.client_key_pem, KEY_PEM);
	CHECK(kc.token == NULL);
	CHECK_STR(kc.token_file, fx_path("sub/token"));
	CHECK(kubeconfig_token(&kc, &tok, &e) == 0);
	CHECK_STR(tok, TOKEN);
	free(tok);
	kubeconfig_free(&kc);

	/* a kubeconfig named relative to the working directory */
	CHECK(chdir(fx_dir) == 0);
	CHECK(kubeconfig_load("sub/kubeconfig", NULL, &kc, &e) == 0);
	CHECK_STR(kc.client_key_pem, KEY_PEM);
	CHECK_STR(kc.token_file, "sub/token");
	kubeconfig_free(&kc);
	CHECK(chdir("sub") == 0);
	CHECK(kubeconfig_load("kubeconfig", NULL, &kc, &e) == 0);
	CHECK_STR(kc.token_file, "./token");
	kubeconfig_free(&kc);
	CHECK(chdir("/") == 0);
}

TEST(data_wins_over_file)
{
	struct kubeconfig kc;
	struct errbuf e;

	fx_setup();
	CHECK(fx_load(fx_fmt("current-context: x\n"
	    "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
	    "clusters:\n"
	    "- name: c\n"
	    "  cluster:\n"
	    "    server: https://h\n"
	    "    certificate-authority: missing-ca.crt\n"
	    "    certificate-authority-data: %s\n"
	    "users:\n"
	    "- name: u\n"
	    "  user:\n"
	    "    client-certificate: missing.crt\n"
	    "    client-certificate-data: %s\n"
	    "    client-key: missing.key\n"
	    "    client-key-data: %s\n", ca_b64, cert_b64, key_b64),
	    NULL, &kc, &e) == 0);
	CHECK_STR(kc.ca_pem, CA_PEM);
	CHECK_STR(kc.client_cert_pem, CERT_PEM);
	CHECK_STR(kc.client_key_pem, KEY_PEM);
	kubeconfig_free(&kc);
}

/* fx_user and fx_cluster wrap a body (which may come from fx_fmt) in a
 * config of their own buffer. */
static char fx_wrap[16384];

static const char *
fx_user(const char *user_body)
{
	snprintf(fx_wrap, sizeof(fx_wrap), "current-context: x\n"
	    "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
	    "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
	    "users:\n"
	    "- name: u\n"
	    "  user:\n"
	    "%s", user_body);
	return fx_wrap;
}

static const char *
fx_cluster(const char *cluster_body)
{
	snprintf(fx_wrap, sizeof(fx_wrap), "current-context: x\n"
	    "contexts: [{name: x, context: {cluster: c}}]\n"
	    "clusters:\n"
	    "- name: c\n"
	    "  cluster:\n"
	    "%s", cluster_body);
	return fx_wrap;
}

TEST(missing_referenced_files)
{
	struct errbuf e;
	char want[ERRBUF_MAX];

	fx_setup();
	CHECK(fx_fail(fx_cluster("    server: https://h\n"
	    "    certificate-authority: nope/ca.crt\n"), NULL, ERR_IO, &e));
	snprintf(want, sizeof(want), "%s:7:28: clusters[0].cluster."
	    "certificate-authority: %s: No such file or directory",
	    fx_path("config"), fx_path("nope/ca.crt"));
	CHECK_STR(e.msg, want);

	fx_write("c.crt", CERT_PEM);
	CHECK(fx_fail(fx_user("    client-certificate: c.crt\n"
	    "    client-key: k.key\n"), NULL, ERR_IO, &e));
	snprintf(want, sizeof(want), "%s:8:17: users[0].user.client-key: %s: "
	    "No such file or directory", fx_path("config"), fx_path("k.key"));
	CHECK_STR(e.msg, want);

	CHECK(fx_fail(fx_user("    tokenFile: /nonexistent/token\n"), NULL,
	    ERR_IO, &e));
	CHECK_STR(e.msg, fx_msg(":7:16: users[0].user.tokenFile: /nonexistent/token: "
	    "No such file or directory"));

	/* a directory is not a file */
	CHECK(fx_fail(fx_cluster("    server: https://h\n"
	    "    certificate-authority: /\n"), NULL, ERR_IO, &e));
	CHECK_CONTAINS(e.msg, "is a directory, not a regular file");
}

TEST(missing_and_large_kubeconfig)
{
	struct kubeconfig kc;
	struct errbuf e;
	char *big;

	fx_setup();
	memset(&e, 0, sizeof(e));
	CHECK(kubeconfig_load(fx_path("absent"), NULL, &kc, &e) == ERR_IO);
	CHECK_STR(e.msg, fx_fmt("%s: No such file or directory",
	    fx_path("absent")));

	big = malloc(KUBECONFIG_FILE_MAX + 2);
	CHECK(big != NULL);
	memset(big, '#', KUBECONFIG_FILE_MAX + 1);
	big[KUBECONFIG_FILE_MAX + 1] = '\0';
	fx_write("config", big);
	free(big);
	CHECK(kubeconfig_load(fx_path("config"), NULL, &kc, &e) ==
	    ERR_TOO_LARGE);
	CHECK_STR(e.msg, fx_msg(": larger than 1048576 bytes"));

	/* a key file over the cap */
	big = malloc(KUBECONFIG_FILE_MAX + 100);
	CHECK(big != NULL);
	memset(big, 'A', KUBECONFIG_FILE_MAX + 99);
	memcpy(big, "-----BEGIN X-----\n", 18);
	big[KUBECONFIG_FILE_MAX + 99] = '\0';
	fx_write("big.crt", big);
	free(big);
	CHECK(fx_fail(fx_cluster("    server: https://h\n"
	    "    certificate-authority: big.crt\n"), NULL, ERR_TOO_LARGE, &e));
	CHECK_CONTAINS(e.msg, "certificate-authority: ");
	CHECK_CONTAINS(e.msg, "larger than 1048576 bytes");
}

TEST(invalid_base64)
{
	struct errbuf e;

	fx_setup();
	CHECK(fx_fail(fx_user(fx_fmt("    client-certificate-data: %s\n"
	    "    client-key-data: '!!S3CR3T-not-base64'\n", cert_b64)), NULL,
	    ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":8:22: users[0].user.client-key-data is not valid "
	    "base64"));

	CHECK(fx_fail(fx_user("    client-certificate-data: S3CR3T=x\n"), NULL,
	    ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":7:30: users[0].user.client-certificate-data is not "
	    "valid base64"));

	CHECK(fx_fail(fx_cluster("    server: https://h\n"
	    "    certificate-authority-data: Q\n"), NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":7:33: clusters[0].cluster.certificate-authority-data "
	    "is not valid base64"));
}

TEST(not_pem)
{
	struct errbuf e;

	fx_setup();
	CHECK(fx_fail(fx_user(fx_fmt("    client-certificate-data: %s\n"
	    "    client-key-data: %s\n", cert_b64, notpem_b64)), NULL,
	    ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":8:22: users[0].user.client-key-data does not hold "
	    "PEM data (no \"-----BEGIN\" line after base64 decoding)"));

	fx_write("key.der", NOT_PEM);
	fx_write("c.crt", CERT_PEM);
	CHECK(fx_fail(fx_user("    client-certificate: c.crt\n"
	    "    client-key: key.der\n"), NULL, ERR_INVALID, &e));
	CHECK_CONTAINS(e.msg, "users[0].user.client-key: ");
	CHECK_CONTAINS(e.msg, "key.der does not hold PEM data");

	CHECK(fx_fail(fx_cluster("    server: https://h\n"
	    "    certificate-authority: key.der\n"), NULL, ERR_INVALID, &e));
	CHECK_CONTAINS(e.msg, "clusters[0].cluster.certificate-authority: ");
}

TEST(cert_and_key_go_together)
{
	struct errbuf e;

	fx_setup();
	CHECK(fx_fail(fx_user(fx_fmt("    client-certificate-data: %s\n",
	    cert_b64)), NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":7:30: user \"u\": client-certificate given without "
	    "client-key (or client-key-data)"));
	CHECK(fx_fail(fx_user(fx_fmt("    client-key-data: %s\n", key_b64)),
	    NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":7:22: user \"u\": client-key given without "
	    "client-certificate (or client-certificate-data)"));
}

TEST(server_checks)
{
	struct kubeconfig kc;
	struct errbuf e;

	fx_setup();
	CHECK(fx_fail(fx_cluster("    certificate-authority-data: Zm9v\n"), NULL,
	    ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":6:5: cluster \"c\" has no server"));
	CHECK(fx_fail(fx_cluster("    server: ''\n"), NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":6:5: cluster \"c\" has no server"));
	CHECK(fx_fail("current-context: x\n"
	    "contexts: [{name: x, context: {cluster: c}}]\n"
	    "clusters: [{name: c}]\n", NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":3:12: cluster \"c\" has no server"));

	CHECK(fx_fail(fx_cluster("    server: ftp://x\n"), NULL, ERR_INVALID,
	    &e));
	CHECK_STR(e.msg, fx_msg(":6:13: cluster \"c\": server \"ftp://x\" must be an "
	    "https:// URL"));
	CHECK(fx_fail(fx_cluster("    server: api.example.com:6443\n"), NULL,
	    ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":6:13: cluster \"c\": server \"api.example.com:6443\" "
	    "must be an https:// URL"));
	CHECK(fx_fail(fx_cluster("    server: https://\n"), NULL, ERR_INVALID,
	    &e));
	CHECK_STR(e.msg, fx_msg(":6:13: cluster \"c\": server \"https://\" has no host"));
	CHECK(fx_fail(fx_cluster("    server: https://h/?x=1\n"), NULL,
	    ERR_INVALID, &e));
	CHECK_CONTAINS(e.msg, "must not have a query");
	CHECK(fx_fail(fx_cluster("    server: https://admin:" PASSWORD "@h\n"),
	    NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":6:13: cluster \"c\": the server URL must not hold "
	    "user information"));
	CHECK(fx_fail(fx_cluster("    server: \"https://h\\r\\nX: y\"\n"), NULL,
	    ERR_INVALID, &e));
	CHECK_CONTAINS(e.msg, "space or control character");
	CHECK(fx_fail(fx_cluster("    server: \"https://h\\0.evil\"\n"), NULL,
	    ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":6:13: clusters[0].cluster.server: expected a "
	    "string without NUL bytes"));

	/* ports in 1..65535, nothing else after the colon */
	CHECK(fx_fail(fx_cluster("    server: https://127.0.0.1:99999\n"), NULL,
	    ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":6:13: cluster \"c\": server \"https://127.0.0.1:99999\": "
	    "port \"99999\" is not a number in 1..65535"));
	CHECK(fx_fail(fx_cluster("    server: https://h:0/x\n"), NULL, ERR_INVALID, &e));
	CHECK_CONTAINS(e.msg, "port \"0\"");
	CHECK(fx_fail(fx_cluster("    server: 'https://h:'\n"), NULL, ERR_INVALID, &e));
	CHECK_CONTAINS(e.msg, "port \"\"");
	CHECK(fx_fail(fx_cluster("    server: https://h:64x\n"), NULL, ERR_INVALID, &e));
	CHECK(fx_fail(fx_cluster("    server: https://h:0006443\n"), NULL, ERR_INVALID,
	    &e));
	CHECK(fx_fail(fx_cluster("    server: 'https://[::1]:70000'\n"), NULL,
	    ERR_INVALID, &e));
	CHECK_CONTAINS(e.msg, "port \"70000\"");
	/* hosts: names and addresses, an IPv6 one bracketed */
	CHECK(fx_fail(fx_cluster("    server: 'https://[fe80::1'\n"), NULL, ERR_INVALID,
	    &e));
	CHECK_CONTAINS(e.msg, "host: missing ']'");
	CHECK(fx_fail(fx_cluster("    server: 'https://[10.0.0.1]:6443'\n"), NULL,
	    ERR_INVALID, &e));
	CHECK_CONTAINS(e.msg, "host \"[10.0.0.1]\" is not a host name or IP address");
	CHECK(fx_fail(fx_cluster("    server: 'https://[::1]x'\n"), NULL, ERR_INVALID,
	    &e));
	CHECK(fx_fail(fx_cluster("    server: 'https://k8s%41pi:6443'\n"), NULL,
	    ERR_INVALID, &e));
	CHECK(fx_fail(fx_cluster("    server: 'https://:6443'\n"), NULL, ERR_INVALID, &e));

	/* http:// is allowed without credentials, as client-go allows it,
	 * and flagged */
	CHECK(fx_load(fx_cluster("    server: http://127.0.0.1:8080\n"), NULL,
	    &kc, &e) == 0);
	CHECK_STR(kc.server, "http://127.0.0.1:8080");
	CHECK(kc.plain_http == 1 && kc.server_dns == 0 && kc.credential == NULL);
	kubeconfig_free(&kc);

	/* scheme case folded, path kept, trailing slashes dropped */
	CHECK(fx_load(fx_cluster("    server: HTTPS://h.example:443/prefix//\n"),
	    NULL, &kc, &e) == 0);
	CHECK_STR(kc.server, "https://h.example:443/prefix");
	CHECK(kc.plain_http == 0 && kc.server_dns == 1);
	kubeconfig_free(&kc);
	CHECK(fx_load(fx_cluster("    server: 'https://[fd00::1]:6443'\n"),
	    NULL, &kc, &e) == 0);
	CHECK_STR(kc.server, "https://[fd00::1]:6443");
	CHECK(kc.server_dns == 0);
	kubeconfig_free(&kc);
	CHECK(fx_load(fx_cluster("    server: 'https://LocalHost:6443'\n"),
	    NULL, &kc, &e) == 0);
	CHECK(kc.server_dns == 0);
	kubeconfig_free(&kc);
}

/* fx_http_user is a kubeconfig whose server is http:// for a user. */
static const char *
fx_http_user(const char *user_body)
{
	snprintf(fx_wrap, sizeof(fx_wrap), "current-context: x\n"
	    "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
	    "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:8080'}}]\n"
	    "users:\n"
	    "- name: u\n"
	    "  user:\n"
	    "%s", user_body);
	return fx_wrap;
}

TEST(credentials_never_over_plain_http)
{
	struct kubeconfig kc;
	struct errbuf e;
	char want[ERRBUF_MAX];

	fx_setup();
	CHECK(fx_fail(fx_http_user("    token: " TOKEN "\n"), NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":3:40: server \"http://127.0.0.1:8080\" is plain HTTP: the "
	    "credentials in users[0].user.token (user \"u\") would go out in clear; "
	    "they are sent only over verified TLS: use an https:// server"));
	fx_write("token", TOKEN "\n");
	CHECK(fx_fail(fx_http_user("    tokenFile: token\n"), NULL, ERR_INVALID, &e));
	CHECK_CONTAINS(e.msg, "users[0].user.tokenFile");
	CHECK(fx_fail(fx_http_user(fx_fmt("    client-certificate-data: %s\n"
	    "    client-key-data: %s\n", cert_b64, key_b64)), NULL, ERR_INVALID, &e));
	CHECK_CONTAINS(e.msg, "users[0].user.client-certificate-data");

	/* --master: the same checks, and kc unchanged when refused */
	CHECK(fx_load(fx_user("    token: " TOKEN "\n"), NULL, &kc, &e) == 0);
	CHECK_STR(kc.credential, "users[0].user.token");
	CHECK(kubeconfig_set_server(&kc, "http://127.0.0.1:1", "--master", &e) ==
	    ERR_INVALID);
	snprintf(want, sizeof(want), "%s: --master \"http://127.0.0.1:1\" is plain HTTP",
	    fx_path("config"));
	CHECK(strncmp(e.msg, want, strlen(want)) == 0);
	CHECK_STR(kc.server, "https://h");
	CHECK(kubeconfig_set_server(&kc, "127.0.0.1:6443", "--master", &e) == ERR_INVALID);
	CHECK_STR(e.msg, "--master: server \"127.0.0.1:6443\" must be an https:// URL");
	CHECK(kubeconfig_set_server(&kc, "https://u:" PASSWORD "@h", "--master", &e) ==
	    ERR_INVALID);
	CHECK(!fx_leaks(e.msg));
	CHECK(kubeconfig_set_server(&kc, "HTTPS://10.0.0.1:6443/", "--master", &e) == 0);
	CHECK_STR(kc.server, "https://10.0.0.1:6443");
	CHECK(kc.server_dns == 0 && kc.plain_http == 0);
	kubeconfig_free(&kc);
	/* an anonymous user may use http:// */
	CHECK(fx_load(fx_cluster("    server: https://h\n"), NULL, &kc, &e) == 0);
	CHECK(kubeconfig_set_server(&kc, "http://h.example:8080", "--master", &e) == 0);
	CHECK(kc.plain_http == 1 && kc.server_dns == 1);
	kubeconfig_free(&kc);
}

TEST(insecure_skip_tls_verify)
{
	struct kubeconfig kc;
	struct errbuf e;

	fx_setup();
	CHECK(fx_load(fx_cluster("    server: https://h\n"
	    "    insecure-skip-tls-verify: false\n"), NULL, &kc, &e) == 0);
	CHECK(kc.insecure_skip_tls_verify == 0);
	kubeconfig_free(&kc);
	CHECK(fx_load(fx_cluster("    server: https://h\n"
	    "    insecure-skip-tls-verify: ~\n"), NULL, &kc, &e) == 0);
	CHECK(kc.insecure_skip_tls_verify == 0);
	kubeconfig_free(&kc);
	CHECK(fx_load(fx_cluster("    server: https://h\n"
	    "    insecure-skip-tls-verify: True\n"), NULL, &kc, &e) == 0);
	CHECK(kc.insecure_skip_tls_verify == 1);
	kubeconfig_free(&kc);

	/* a quoted "true" is a string, as client-go's decoder sees it */
	CHECK(fx_fail(fx_cluster("    server: https://h\n"
	    "    insecure-skip-tls-verify: \"true\"\n"), NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":7:31: clusters[0].cluster.insecure-skip-tls-verify"
	    ": expected a boolean (true or false)"));
	CHECK(fx_fail(fx_cluster("    server: https://h\n"
	    "    disable-compression: [1]\n"), NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":7:26: clusters[0].cluster.disable-compression"
	    ": expected a boolean (true or false)"));

	CHECK(fx_fail(fx_cluster(fx_fmt("    server: https://h\n"
	    "    insecure-skip-tls-verify: true\n"
	    "    certificate-authority-data: %s\n", ca_b64)), NULL, ERR_INVALID,
	    &e));
	CHECK_STR(e.msg, fx_msg(":7:31: cluster \"c\": specifying a root certificates "
	    "file with the insecure flag is not allowed"));
	fx_write("ca.crt", CA_PEM);
	CHECK(fx_fail(fx_cluster("    server: https://h\n"
	    "    insecure-skip-tls-verify: yes\n"
	    "    certificate-authority: ca.crt\n"), NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":7:31: cluster \"c\": specifying a root certificates "
	    "file with the insecure flag is not allowed"));
}

TEST(proxy_url_unsupported)
{
	struct kubeconfig kc;
	struct errbuf e;

	fx_setup();
	CHECK(fx_fail(fx_cluster("    server: https://h\n"
	    "    proxy-url: http://proxy:3128\n"), NULL, ERR_UNSUPPORTED, &e));
	CHECK_STR(e.msg, fx_msg(":7:16: clusters[0].cluster.proxy-url: proxies are "
	    "not supported; bootccm connects to the server directly"));
	CHECK(fx_load(fx_cluster("    server: https://h\n"
	    "    proxy-url: ''\n"), NULL, &kc, &e) == 0);
	kubeconfig_free(&kc);
}

TEST(unsupported_auth)
{
	struct errbuf e;

	fx_setup();
	CHECK(fx_fail(fx_user("    exec:\n"
	    "      apiVersion: client.authentication.k8s.io/v1\n"
	    "      command: aws\n"
	    "      args: [eks, get-token]\n"), NULL, ERR_UNSUPPORTED, &e));
	CHECK_STR(e.msg, fx_msg(":8:7: user \"u\": exec credential plugins are not "
	    "supported; use a client certificate or token"));
	CHECK(fx_fail(fx_user("    auth-provider:\n"
	    "      name: oidc\n"
	    "      config: {id-token: S3CR3T}\n"), NULL, ERR_UNSUPPORTED, &e));
	CHECK_STR(e.msg, fx_msg(":8:7: user \"u\": auth-provider plugins are not "
	    "supported; use a client certificate or token"));
	CHECK(fx_fail(fx_user("    username: admin\n"
	    "    password: " PASSWORD "\n"), NULL, ERR_UNSUPPORTED, &e));
	CHECK_STR(e.msg, fx_msg(":7:15: user \"u\": basic authentication is not "
	    "supported; use a client certificate or token"));
	CHECK(fx_fail(fx_user("    password: " PASSWORD "\n"), NULL,
	    ERR_UNSUPPORTED, &e));
	CHECK_CONTAINS(e.msg, "basic authentication is not supported");
	CHECK(fx_fail(fx_user("    token: " TOKEN "\n    as: someone\n"), NULL,
	    ERR_UNSUPPORTED, &e));
	CHECK_STR(e.msg, fx_msg(":8:9: user \"u\": impersonation (as) is not "
	    "supported"));
	CHECK(fx_fail(fx_user("    token: " TOKEN "\n    as-groups: [a]\n"), NULL,
	    ERR_UNSUPPORTED, &e));
	CHECK_STR(e.msg, fx_msg(":8:16: user \"u\": impersonation (as-groups) is not "
	    "supported"));
	CHECK(fx_fail(fx_user("    token: " TOKEN "\n"
	    "    as-user-extra: {k: [v]}\n"), NULL, ERR_UNSUPPORTED, &e));
	CHECK_CONTAINS(e.msg, "impersonation (as-user-extra)");
}

TEST(empty_unsupported_fields_are_unset)
{
	struct kubeconfig kc;
	struct errbuf e;

	fx_setup();
	CHECK(fx_load(fx_user("    token: " TOKEN "\n"
	    "    username: ''\n    as: ''\n    as-groups: []\n"
	    "    exec: null\n    auth-provider: ~\n"), NULL, &kc, &e) == 0);
	CHECK_STR(kc.token, TOKEN);
	kubeconfig_free(&kc);
}

TEST(token_wins_over_token_file)
{
	struct kubeconfig kc;
	struct errbuf e;
	char *tok = NULL;

	fx_setup();
	fx_write("token", "from-file\n");
	CHECK(fx_load(fx_user("    token: " TOKEN "\n    tokenFile: token\n"),
	    NULL, &kc, &e) == 0);
	CHECK_STR(kc.token, TOKEN);
	CHECK(kc.token_file == NULL);
	CHECK(kubeconfig_token(&kc, &tok, &e) == 0);
	CHECK_STR(tok, TOKEN);
	free(tok);
	kubeconfig_free(&kc);

	/* token and client certificate together are fine */
	CHECK(fx_load(fx_user(fx_fmt("    token: " TOKEN "\n"
	    "    client-certificate-data: %s\n    client-key-data: %s\n",
	    cert_b64, key_b64)), NULL, &kc, &e) == 0);
	CHECK_STR(kc.token, TOKEN);
	CHECK_STR(kc.client_key_pem, KEY_PEM);
	kubeconfig_free(&kc);
}

TEST(bad_tokens)
{
	struct errbuf e;

	fx_setup();
	CHECK(fx_fail(fx_user("    token: \"S3CR3T\\r\\nX-Evil: 1\"\n"), NULL,
	    ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":7:12: users[0].user.token: holds whitespace or "
	    "control characters"));
	fx_write("token", "S3CR3T\nsecond line\n");
	CHECK(fx_fail(fx_user("    tokenFile: token\n"), NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(fx_fmt(":7:16: users[0].user.tokenFile: %s: the token "
	    "holds whitespace or control characters", fx_path("token"))));
	fx_write("token", " \n\t\n");
	CHECK(fx_fail(fx_user("    tokenFile: token\n"), NULL, ERR_INVALID, &e));
	CHECK_CONTAINS(e.msg, "the token file is empty");
	CHECK(fx_fail(fx_user("    token: [S3CR3T]\n"), NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":7:12: users[0].user.token: expected a string"));
}

TEST(token_file_rotation)
{
	struct kubeconfig kc;
	struct errbuf e;
	char *tok = NULL;
	char *big;

	fx_setup();
	fx_write("token", "first-token\n");
	fx_mtime("token", 1000000000);
	CHECK(fx_load(fx_user("    tokenFile: token\n"), NULL, &kc, &e) == 0);
	CHECK(kc.token == NULL);
	CHECK_STR(kc.token_file, fx_path("token"));
	CHECK(kubeconfig_token(&kc, &tok, &e) == 0);
	CHECK_STR(tok, "first-token");
	free(tok);
	/* unchanged: the same answer */
	CHECK(kubeconfig_token(&kc, &tok, &e) == 0);
	CHECK_STR(tok, "first-token");
	free(tok);

	/* rotated in place: new content, new mtime */
	fx_write("token", "second-token-longer\n");
	fx_mtime("token", 1000000100);
	CHECK(kubeconfig_token(&kc, &tok, &e) == 0);
	CHECK_STR(tok, "second-token-longer");
	free(tok);

	/* rotated by rename, the way the kubelet swaps projected tokens */
	fx_write("token.new", "third-token\n");
	CHECK(rename(fx_path("token.new"), fx_path("token")) == 0);
	CHECK(kubeconfig_token(&kc, &tok, &e) == 0);
	CHECK_STR(tok, "third-token");
	free(tok);

	/* gone or broken: the last good token stays */
	CHECK(unlink(fx_path("token")) == 0);
	CHECK(kubeconfig_token(&kc, &tok, &e) == 0);
	CHECK_STR(tok, "third-token");
	free(tok);
	fx_write("token", "\n");
	CHECK(kubeconfig_token(&kc, &tok, &e) == 0);
	CHECK_STR(tok, "third-token");
	free(tok);
	big = malloc(KUBECONFIG_TOKEN_MAX + 2);
	CHECK(big != NULL);
	memset(big, 'a', KUBECONFIG_TOKEN_MAX + 1);
	big[KUBECONFIG_TOKEN_MAX + 1] = '\0';
	fx_write("token", big);
	free(big);
	CHECK(kubeconfig_token(&kc, &tok, &e) == 0);
	CHECK_STR(tok, "third-token");
	free(tok);
	fx_write("token", "fourth\n");
	fx_mtime("token", 1000000200);
	CHECK(kubeconfig_token(&kc, &tok, &e) == 0);
	CHECK_STR(tok, "fourth");
	free(tok);
	kubeconfig_free(&kc);
}

/* The token's generation moves when a different token is read (rename or
 * in place), not for the same token written again nor for a broken file. */
TEST(token_generation_tells_a_rotation)
{
	struct kubeconfig kc;
	struct errbuf e;
	uint64_t g1, g2;

	fx_setup();
	fx_write("token", "first-token\n");
	fx_mtime("token", 1000000000);
	CHECK(fx_load(fx_user("    tokenFile: token\n"), NULL, &kc, &e) == 0);
	g1 = kubeconfig_token_generation(&kc);
	CHECK(kubeconfig_token_generation(&kc) == g1);
	fx_write("token", "first-token\n");
	fx_mtime("token", 1000000050);
	CHECK(kubeconfig_token_generation(&kc) == g1);
	fx_write("token", "second-token\n");
	fx_mtime("token", 1000000100);
	CHECK((g2 = kubeconfig_token_generation(&kc)) != g1);
	fx_write("token", "\n");
	fx_mtime("token", 1000000150);
	CHECK(kubeconfig_token_generation(&kc) == g2);
	fx_write("token.new", "third-token\n");
	CHECK(rename(fx_path("token.new"), fx_path("token")) == 0);
	CHECK(kubeconfig_token_generation(&kc) != g2);
	kubeconfig_free(&kc);
	/* a static token: nothing to look at */
	CHECK(fx_load(fx_user("    token: static-token\n"), NULL, &kc, &e) == 0);
	CHECK(kubeconfig_token_generation(&kc) == 0);
	kubeconfig_free(&kc);
}

TEST(token_file_without_cache_fails)
{
	struct kubeconfig kc;
	struct errbuf e;
	char *tok = (char *)"untouched";

	fx_setup();
	memset(&kc, 0, sizeof(kc));
	kc.token_file = strdup(fx_path("never"));
	CHECK(kc.token_file != NULL);
	CHECK(kubeconfig_token(&kc, &tok, &e) == ERR_IO);
	CHECK_STR(tok, "untouched");
	CHECK_STR(e.msg, fx_fmt("%s: No such file or directory",
	    fx_path("never")));
	kubeconfig_free(&kc);
}

struct fx_thread {
	struct kubeconfig *kc;
	int bad;
};

static void *
fx_token_reader(void *arg)
{
	struct fx_thread *t = arg;
	struct errbuf e;
	char *tok;
	int i;

	for (i = 0; i < 300; i++) {
		tok = NULL;
		if (kubeconfig_token(t->kc, &tok, &e) != 0 || tok == NULL ||
		    (strcmp(tok, "token-a") != 0 && strcmp(tok, "token-bb") != 0))
			t->bad++;
		free(tok);
	}
	return NULL;
}

TEST(token_threads)
{
	struct kubeconfig kc;
	struct errbuf e;
	struct fx_thread t[4];
	pthread_t th[4];
	int i;

	fx_setup();
	fx_write("token", "token-a\n");
	CHECK(fx_load(fx_user("    tokenFile: token\n"), NULL, &kc, &e) == 0);
	for (i = 0; i < 4; i++) {
		t[i].kc = &kc;
		t[i].bad = 0;
		CHECK(pthread_create(&th[i], NULL, fx_token_reader, &t[i]) == 0);
	}
	for (i = 0; i < 50; i++) {
		fx_write("token.new", i % 2 ? "token-a\n" : "token-bb\n");
		rename(fx_path("token.new"), fx_path("token"));
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK(t[i].bad == 0);
	}
	kubeconfig_free(&kc);
}

TEST(wrong_types)
{
	struct errbuf e;

	fx_setup();
	CHECK(fx_fail("current-context: x\n"
	    "contexts: [{name: x, context: {cluster: c}}]\n"
	    "clusters:\n"
	    "- name: c\n"
	    "  cluster:\n"
	    "    certificate-authority-data: Zm9v\n"
	    "    tls-server-name: a\n"
	    "    insecure-skip-tls-verify: false\n"
	    "    proxy-url: ''\n"
	    "    disable-compression: false\n"
	    "    extensions: []\n"
	    "    server: {host: h}\n", NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":12:13: clusters[0].cluster.server: expected a "
	    "string"));

	CHECK(fx_fail("current-context: [x]\n", NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":1:18: current-context: expected a string"));
	CHECK(fx_fail("current-context: x\ncontexts: {x: y}\n", NULL,
	    ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":2:11: contexts: expected a list"));
	CHECK(fx_fail("current-context: x\ncontexts: [x]\n", NULL, ERR_INVALID,
	    &e));
	CHECK_STR(e.msg, fx_msg(":2:12: contexts[0]: expected a map"));
	CHECK(fx_fail("current-context: x\ncontexts: [{name: [x]}]\n", NULL,
	    ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":2:19: contexts[0].name: expected a string"));
	CHECK(fx_fail("current-context: x\ncontexts: [{name: x, context: c}]\n",
	    NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":2:31: contexts[0].context: expected a map"));
	CHECK(fx_fail("current-context: x\n"
	    "contexts: [{name: x, context: {cluster: {a: b}}}]\n", NULL,
	    ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":2:41: contexts[0].context.cluster: expected a "
	    "string"));
	CHECK(fx_fail(fx_cluster("    server: https://h\n"
	    "    tls-server-name: [a, b]\n"), NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":7:22: clusters[0].cluster.tls-server-name: "
	    "expected a string"));
	CHECK(fx_fail(fx_user("    client-key-data: {a: b}\n"), NULL,
	    ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":7:22: users[0].user.client-key-data: expected a "
	    "string"));
	CHECK(fx_fail(fx_user("    tokenFile: [a]\n"), NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":7:16: users[0].user.tokenFile: expected a "
	    "string"));
	CHECK(fx_fail("current-context: x\n"
	    "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
	    "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
	    "users: [{name: u, user: [token]}]\n", NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":4:25: users[0].user: expected a map"));
}

TEST(plain_scalars_as_strings)
{
	struct kubeconfig kc;
	struct errbuf e;

	fx_setup();
	/* names and tokens that look like numbers or booleans are strings */
	CHECK(fx_load("current-context: 1\n"
	    "contexts: [{name: 1, context: {cluster: true, user: 007}}]\n"
	    "clusters: [{name: true, cluster: {server: 'https://h'}}]\n"
	    "users: [{name: 007, user: {token: 12345}}]\n", NULL, &kc,
	    &e) == 0);
	CHECK_STR(kc.context, "1");
	CHECK_STR(kc.cluster, "true");
	CHECK_STR(kc.user, "007");
	CHECK_STR(kc.token, "12345");
	kubeconfig_free(&kc);
}

TEST(broken_yaml)
{
	static const char junk[] = "\x7f" "ELF\x02\x01\x01\x00\xff\xfe\x80garbage";
	struct errbuf e;
	FILE *f;

	fx_setup();
	CHECK(fx_fail("clusters:\n\t- name: c\n", NULL, ERR_INVALID, &e));
	CHECK_CONTAINS(e.msg, fx_msg(":2:1: "));
	CHECK_CONTAINS(e.msg, "tab");
	CHECK(fx_fail("current-context: \"x\nclusters: []\n", NULL, ERR_INVALID,
	    &e));
	CHECK_CONTAINS(e.msg, "while scanning a quoted scalar at 1:18");
	CHECK(fx_fail("- a\n- b\n", NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":1:1: expected a map at the top level (with "
	    "clusters, users, contexts)"));
	CHECK(fx_fail("just a string\n", NULL, ERR_INVALID, &e));
	CHECK_CONTAINS(e.msg, "expected a map at the top level");
	CHECK(fx_fail("", NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(": no configuration (the file is empty)"));
	CHECK(fx_fail("# nothing\n", NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(": no configuration (the file is empty)"));
	CHECK(fx_fail("a: 1\na: 2\n", NULL, ERR_INVALID, &e));
	CHECK_STR(e.msg, fx_msg(":2:1: duplicate key \"a\""));

	f = fopen(fx_path("config"), "w");
	CHECK(f != NULL);
	fwrite(junk, 1, sizeof(junk) - 1, f);
	fclose(f);
	memset(&e, 0, sizeof(e));
	{
		struct kubeconfig kc;

		CHECK(kubeconfig_load(fx_path("config"), NULL, &kc, &e) ==
		    ERR_INVALID);
	}
	CHECK_CONTAINS(e.msg, fx_msg(":1:"));
}

TEST(hostile_yaml)
{
	static const char laughs[] =
	    "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
	    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
	    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
	    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
	    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
	    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
	    "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
	    "current-context: x\n";
	struct errbuf e;
	char *deep;
	size_t i;

	fx_setup();
	CHECK(fx_fail(laughs, NULL, ERR_TOO_LARGE, &e));
	CHECK_CONTAINS(e.msg, "more than 100000 nodes (aliases expanded)");

	deep = malloc(20000 + 32);
	CHECK(deep != NULL);
	memcpy(deep, "clusters: ", 10);
	for (i = 0; i < 20000; i++)
		deep[10 + i] = '[';
	deep[10 + i] = '\0';
	CHECK(fx_fail(deep, NULL, ERR_TOO_LARGE, &e));
	free(deep);
	CHECK_CONTAINS(e.msg, fx_msg(":1:74: nested deeper than 64 levels"));
}

TEST(aliases_are_followed)
{
	struct kubeconfig kc;
	struct errbuf e;

	fx_setup();
	CHECK(fx_load("current-context: x\n"
	    "clusters:\n"
	    "- name: c\n"
	    "  cluster: &k {server: 'https://h', tls-server-name: n}\n"
	    "- name: d\n"
	    "  cluster: *k\n"
	    "contexts: [{name: x, context: {cluster: d}}]\n", NULL, &kc,
	    &e) == 0);
	CHECK_STR(kc.server, "https://h");
	CHECK_STR(kc.tls_server_name, "n");
	kubeconfig_free(&kc);
}

static void
fx_unsetenv(void)
{
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
}

TEST(in_cluster)
{
	struct kubeconfig kc, pristine;
	struct errbuf e;
	char *tok = NULL;

	fx_setup();
	fx_write("ca.crt", CA_PEM);
	fx_write("token", TOKEN "\n");
	fx_write("namespace", "kube-system");

	fx_unsetenv();
	memset(&kc, 0xa5, sizeof(kc));
	memset(&pristine, 0xa5, sizeof(pristine));
	CHECK(kubeconfig_in_cluster(fx_dir, &kc, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "unable to load in-cluster configuration, "
	    "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be "
	    "defined");
	CHECK(memcmp(&kc, &pristine, sizeof(kc)) == 0);
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	CHECK(kubeconfig_in_cluster(fx_dir, &kc, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "must be defined");
	setenv("KUBERNETES_SERVICE_PORT", "", 1);
	CHECK(kubeconfig_in_cluster(fx_dir, &kc, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "must be defined");
	unsetenv("KUBERNETES_SERVICE_HOST");
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	CHECK(kubeconfig_in_cluster(fx_dir, &kc, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "must be defined");

	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	CHECK(kubeconfig_in_cluster(fx_dir, &kc, &e) == 0);
	CHECK_STR(kc.source, "in-cluster");
	CHECK(kc.context == NULL && kc.cluster == NULL && kc.user == NULL);
	CHECK_STR(kc.server, "https://10.96.0.1:443");
	CHECK(kc.plain_http == 0 && kc.insecure_skip_tls_verify == 0);
	CHECK_STR(kc.ca_pem, CA_PEM);
	CHECK(kc.token == NULL);
	CHECK_STR(kc.token_file, fx_path("token"));
	CHECK(kubeconfig_token(&kc, &tok, &e) == 0);
	CHECK_STR(tok, TOKEN);
	free(tok);
	kubeconfig_free(&kc);

	setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
	CHECK(kubeconfig_in_cluster(fx_dir, &kc, &e) == 0);
	CHECK_STR(kc.server, "https://[fd00:10:96::1]:443");
	kubeconfig_free(&kc);
	setenv("KUBERNETES_SERVICE_HOST", "[fd00::1]", 1);
	CHECK(kubeconfig_in_cluster(fx_dir, &kc, &e) == 0);
	CHECK_STR(kc.server, "https://[fd00::1]:443");
	kubeconfig_free(&kc);
	setenv("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc", 1);
	setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
	CHECK(kubeconfig_in_cluster(fx_dir, &kc, &e) == 0);
	CHECK_STR(kc.server, "https://kubernetes.default.svc:6443");
	kubeconfig_free(&kc);

	setenv("KUBERNETES_SERVICE_PORT", "https", 1);
	CHECK(kubeconfig_in_cluster(fx_dir, &kc, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "KUBERNETES_SERVICE_PORT is not a port number");
	setenv("KUBERNETES_SERVICE_PORT", "65536", 1);
	CHECK(kubeconfig_in_cluster(fx_dir, &kc, &e) == ERR_INVALID);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	setenv("KUBERNETES_SERVICE_HOST", "evil/path?x", 1);
	CHECK(kubeconfig_in_cluster(fx_dir, &kc, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "KUBERNETES_SERVICE_HOST is not a host name");
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);

	/* the CA and the token must be there */
	memset(&kc, 0xa5, sizeof(kc));
	CHECK(unlink(fx_path("token")) == 0);
	CHECK(kubeconfig_in_cluster(fx_dir, &kc, &e) == ERR_IO);
	CHECK_STR(e.msg, fx_fmt("in-cluster: %s: No such file or directory",
	    fx_path("token")));
	fx_write("token", TOKEN "\n");
	fx_write("ca.crt", "not a certificate\n");
	CHECK(kubeconfig_in_cluster(fx_dir, &kc, &e) == ERR_INVALID);
	CHECK_STR(e.msg, fx_fmt("in-cluster: %s does not hold PEM data (no "
	    "\"-----BEGIN\" line)", fx_path("ca.crt")));
	CHECK(unlink(fx_path("ca.crt")) == 0);
	CHECK(kubeconfig_in_cluster(fx_dir, &kc, &e) == ERR_IO);
	CHECK_STR(e.msg, fx_fmt("in-cluster: %s: No such file or directory",
	    fx_path("ca.crt")));
	CHECK(memcmp(&kc, &pristine, sizeof(kc)) == 0);
	CHECK(!fx_leaks(e.msg));
	fx_unsetenv();
}

TEST(free_wipes_and_zeroes)
{
	struct kubeconfig kc;
	struct errbuf e;

	fx_setup();
	CHECK(fx_load(fx_full(), "second", &kc, &e) == 0);
	kubeconfig_free(&kc);
	CHECK(kc.token == NULL && kc.server == NULL && kc.source == NULL);
	kubeconfig_free(NULL);
}

/* Every error about a field of the file names where it is, FILE:LINE:COL;
 * only the file as a whole (empty, no current context) goes without. */
TEST(field_errors_name_line_and_column)
{
	static const char *const bodies[] = {
		"    client-certificate-data: '!!'\n    client-key-data: '!!'\n",
		"    client-certificate: /nonexistent/c.crt\n    client-key: k\n",
		"    exec: {command: x}\n",
		"    username: u\n",
		"    as: admin\n",
		"    token: [x]\n",
		"    tokenFile: /nonexistent/token\n",
	};
	static const char *const clusters[] = {
		"    insecure-skip-tls-verify: true\n    certificate-authority-data: Zm9v\n",
		"    server: ftp://x\n",
		"    server: https://h\n    proxy-url: http://p\n",
		"    server: https://h\n    certificate-authority: /nonexistent/ca\n",
		"    tls-server-name: x\n",
	};
	char prefix[300];
	struct errbuf e;

	fx_setup();
	snprintf(prefix, sizeof(prefix), "%s:", fx_path("config"));
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]) +
	    sizeof(clusters) / sizeof(clusters[0]); i++) {
		const char *yaml = i < sizeof(bodies) / sizeof(bodies[0]) ? fx_user(bodies[i]) :
		    fx_cluster(clusters[i - sizeof(bodies) / sizeof(bodies[0])]);
		struct kubeconfig kc;
		const char *p;
		int line = 0, col = 0, n = 0;

		e.msg[0] = '\0';
		CHECK(fx_load(yaml, NULL, &kc, &e) < 0);
		CHECK(strncmp(e.msg, prefix, strlen(prefix)) == 0);
		p = e.msg + strlen(prefix);
		if (sscanf(p, "%d:%d: %n", &line, &col, &n) != 2 || n == 0 || line < 1 ||
		    col < 1) {
			fprintf(stderr, "  case %zu: no LINE:COL in \"%s\"\n", i, e.msg);
			CHECK(0);
		}
	}
}

TEST_MAIN()
