/* servetls.c - the serving endpoint's wolfSSL context: PEM files, or an EC
 * P-256 certificate signed by itself. */
#include "serve/servetls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <wolfssl/options.h>
#include <wolfssl/ssl.h>
#include <wolfssl/wolfcrypt/asn_public.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/error-crypt.h>
#include <wolfssl/wolfcrypt/random.h>

#include "base/log.h"
#include "base/numparse.h"
#include "base/readfile.h"
#include "base/xalloc.h"

#if !defined(WOLFSSL_CERT_GEN) || !defined(WOLFSSL_ALT_NAMES)
#error "servetls.c needs wolfSSL with --enable-certgen and WOLFSSL_ALT_NAMES (scripts/deps.sh)"
#endif

_Static_assert(SERVETLS_ERR_MAX >= WOLFSSL_MAX_ERROR_SZ, "SERVETLS_ERR_MAX is too small");

#define SERVETLS_CERT_DER_MAX 4096    /* bytes: the self-signed certificate */
#define SERVETLS_SAN_MAX 1024         /* bytes: its subjectAltName */

const char *
servetls_err(int code, char *buf, size_t len)
{
	if (code >= 0)
		snprintf(buf, len, "rejected");
	else
		wolfSSL_ERR_error_string_n((unsigned long)code, buf, (unsigned long)len);
	return buf;
}

/* servetls_selftest runs one handshake against ctx over a socket pair and
 * returns 0 when it succeeds, else wolfSSL's error. wolfSSL's own key check
 * does not compare an EC private key with the certificate's public key
 * (unless built with WOLFSSL_VALIDATE_ECC_IMPORT), and a mismatch would
 * otherwise only show as every client's handshake failing. */
static int
servetls_selftest(WOLFSSL_CTX *ctx)
{
	WOLFSSL_CTX *cctx = NULL;
	WOLFSSL *cl = NULL, *sv = NULL;
	int fds[2] = { -1, -1 }, cdone = 0, sdone = 0, r = WOLFSSL_FATAL_ERROR;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) < 0)
		return WOLFSSL_FATAL_ERROR;
	if ((cctx = wolfSSL_CTX_new(wolfSSLv23_client_method())) == NULL ||
	    (cl = wolfSSL_new(cctx)) == NULL || (sv = wolfSSL_new(ctx)) == NULL)
		goto out;
	wolfSSL_set_verify(cl, WOLFSSL_VERIFY_NONE, NULL);
	if (wolfSSL_set_fd(cl, fds[0]) != WOLFSSL_SUCCESS ||
	    wolfSSL_set_fd(sv, fds[1]) != WOLFSSL_SUCCESS)
		goto out;
	wolfSSL_SetIOWriteFlags(cl, MSG_NOSIGNAL);
	wolfSSL_SetIOWriteFlags(sv, MSG_NOSIGNAL);
	/* each side runs until it waits for the other; a handshake takes a
	 * handful of turns */
	for (int turn = 0; turn < 32 && !(cdone && sdone); turn++) {
		if (!cdone) {
			int x = wolfSSL_connect(cl), err = wolfSSL_get_error(cl, x);
			if (x == WOLFSSL_SUCCESS)
				cdone = 1;
			else if (err != WOLFSSL_ERROR_WANT_READ && err != WOLFSSL_ERROR_WANT_WRITE) {
				r = err;
				goto out;
			}
		}
		if (!sdone) {
			int x = wolfSSL_accept(sv), err = wolfSSL_get_error(sv, x);
			if (x == WOLFSSL_SUCCESS)
				sdone = 1;
			else if (err != WOLFSSL_ERROR_WANT_READ && err != WOLFSSL_ERROR_WANT_WRITE) {
				r = err;
				goto out;
			}
		}
	}
	r = cdone && sdone ? 0 : WOLFSSL_FATAL_ERROR;
out:
	wolfSSL_free(cl);
	wolfSSL_free(sv);
	wolfSSL_CTX_free(cctx);
	close(fds[0]);
	close(fds[1]);
	return r;
}

/* servetls_read reads one of the two files, with the flag in messages. */
static int
servetls_read(const char *flag, const char *path, char **ret, size_t *ret_len,
    struct errbuf *e)
{
	struct errbuf why = { "" };
	int r;

	if ((r = readfile(path, SERVETLS_FILE_MAX, ret, ret_len, &why)) < 0)
		return errbuf_set(e, r, "--%s %s", flag, why.msg);
	return 0;
}

static int
servetls_files(WOLFSSL_CTX *ctx, const char *cert_file, const char *key_file,
    struct errbuf *e)
{
	char *cert = NULL, *key = NULL, text[SERVETLS_ERR_MAX];
	size_t cert_len = 0, key_len = 0;
	int r, w;

	if ((r = servetls_read("tls-cert-file", cert_file, &cert, &cert_len, e)) < 0)
		return r;
	if ((r = servetls_read("tls-private-key-file", key_file, &key, &key_len, e)) < 0)
		goto out;
	/* the serving key is a secret in use like the client's */
	log_add_secret_len(key, key_len);
	w = wolfSSL_CTX_use_certificate_chain_buffer(ctx, (const unsigned char *)cert,
	    (long)cert_len);
	if (w != WOLFSSL_SUCCESS) {
		r = errbuf_set(e, ERR_TLS, "--tls-cert-file %s: no usable PEM certificate: %s",
		    cert_file, servetls_err(w, text, sizeof(text)));
		goto out;
	}
	w = wolfSSL_CTX_use_PrivateKey_buffer(ctx, (const unsigned char *)key, (long)key_len,
	    WOLFSSL_FILETYPE_PEM);
	if (w != WOLFSSL_SUCCESS) {
		r = errbuf_set(e, ERR_TLS, "--tls-private-key-file %s: no usable PEM private "
		    "key: %s", key_file, servetls_err(w, text, sizeof(text)));
		goto out;
	}
	if (wolfSSL_CTX_check_private_key(ctx) != WOLFSSL_SUCCESS ||
	    (w = servetls_selftest(ctx)) != 0)
		r = errbuf_set(e, ERR_TLS, "--tls-private-key-file %s does not match the "
		    "certificate in --tls-cert-file %s%s%s", key_file, cert_file,
		    w < 0 ? ": " : "", w < 0 ? servetls_err(w, text, sizeof(text)) : "");
out:
	readfile_free(key, key_len);
	free(cert);
	return r;
}

/* Go crypto/tls CurveID values (Go 1.26, which builds Kubernetes v1.37) and
 * the wolfSSL group each names; NULL: Go knows it, wolfSSL here does not. */
static const struct { long id; const char *go, *wolfssl; } servetls_groups[] = {
	{ 23, "CurveP256", "P-256" },
	{ 24, "CurveP384", "P-384" },
	{ 25, "CurveP521", "P-521" },
	{ 29, "X25519", "X25519" },
	{ 4587, "SecP256r1MLKEM768", NULL },
	{ 4588, "X25519MLKEM768", NULL },
	{ 4589, "SecP384r1MLKEM1024", NULL },
};
#define SERVETLS_NGROUPS (sizeof(servetls_groups) / sizeof(servetls_groups[0]))

int
servetls_curves(const char *flag, const char *list, char *ret, struct errbuf *e)
{
	const char *p = list ? list : "";
	char item[32];
	unsigned long seen = 0;  /* bit i: servetls_groups[i] listed */
	size_t out = 0;

	_Static_assert(SERVETLS_NGROUPS <= 32, "seen has 32 bits");
	ret[0] = '\0';
	if (*p == '\0')
		return 0;
	for (;;) {
		size_t len = strcspn(p, ","), i;
		int64_t v;

		if (len == 0 || len >= sizeof(item))
			return errbuf_set(e, ERR_INVALID, "--%s \"%s\": \"%.*s\" is not a number",
			    flag, list, (int)(len < sizeof(item) ? len : sizeof(item)), p);
		memcpy(item, p, len);
		item[len] = '\0';
		/* pflag's int32 slice: strconv.ParseInt(s, 0, 32) */
		if (numparse(item, NUMPARSE_SIGN | NUMPARSE_PREFIX, INT32_MIN, INT32_MAX, &v,
		    NULL) < 0)
			return errbuf_set(e, ERR_INVALID, "--%s \"%s\": \"%s\" is not a 32-bit "
			    "number", flag, list, item);
		if (v <= 0 || v > 65535)
			return errbuf_set(e, ERR_INVALID, "--%s: curve preference %ld is out of "
			    "range (must be 1-65535)", flag, v);
		for (i = 0; i < SERVETLS_NGROUPS && servetls_groups[i].id != v; i++)
			;
		if (i == SERVETLS_NGROUPS)
			return errbuf_set(e, ERR_INVALID, "--%s: curve preference %ld is not a "
			    "Go crypto/tls CurveID (known: 23 CurveP256, 24 CurveP384, 25 CurveP521, "
			    "29 X25519, 4587, 4588, 4589)", flag, v);
		if (seen & (1ul << i))
			return errbuf_set(e, ERR_INVALID, "--%s: duplicate curve preference %ld",
			    flag, v);
		seen |= 1ul << i;
		if (servetls_groups[i].wolfssl == NULL)
			return errbuf_set(e, ERR_INVALID, "--%s: curve preference %ld (%s) is not "
			    "supported: bootccm's TLS library has no ML-KEM key exchange; use 23 "
			    "CurveP256, 24 CurveP384, 25 CurveP521 or 29 X25519", flag, v,
			    servetls_groups[i].go);
		out += (size_t)snprintf(ret + out, SERVETLS_GROUPS_MAX - out, "%s%s",
		    out ? ":" : "", servetls_groups[i].wolfssl);
		if (p[len] == '\0')
			return 0;
		p += len + 1;
	}
}

/* servetls_der_name appends one GeneralName (context tag, value) to a DER
 * buffer. Returns 0 or ERR_TOO_LARGE. */
static int
servetls_der_name(unsigned char *buf, size_t cap, size_t *off, unsigned char tag,
    const void *data, size_t len)
{
	if (len > 255 || *off + 3 + len > cap)
		return ERR_TOO_LARGE;
	buf[(*off)++] = tag;
	if (len >= 128)
		buf[(*off)++] = 0x81;
	buf[(*off)++] = (unsigned char)len;
	memcpy(buf + *off, data, len);
	*off += len;
	return 0;
}

/* servetls_san_ip appends an iPAddress name unless ips already holds it. */
static int
servetls_san_ip(unsigned char *buf, size_t cap, size_t *off, const char *text,
    unsigned char (*ips)[17], size_t *nips)
{
	unsigned char a[17];

	memset(a, 0, sizeof(a));
	if (inet_pton(AF_INET, text, a + 1) == 1)
		a[0] = 4;
	else if (inet_pton(AF_INET6, text, a + 1) == 1)
		a[0] = 16;
	else
		return 0;
	for (size_t i = 0; i < *nips; i++)
		if (memcmp(ips[i], a, sizeof(a)) == 0)
			return 0;
	memcpy(ips[(*nips)++], a, sizeof(a));
	return servetls_der_name(buf, cap, off, 0x87, a + 1, a[0]);
}

/* serve_san encodes the subjectAltName GeneralNames: the host name and
 * localhost, 127.0.0.1 and ::1, and the bind address when it names one. */
static int
servetls_san(const char *host, const char *bind, unsigned char *out, size_t cap,
    size_t *ret_len)
{
	unsigned char names[SERVETLS_SAN_MAX], ips[4][17];
	size_t off = 0, nips = 0, hdr;
	unsigned char probe[16];
	int r = 0;

	if (inet_pton(AF_INET, host, probe) == 1 || inet_pton(AF_INET6, host, probe) == 1)
		r = servetls_san_ip(names, sizeof(names), &off, host, ips, &nips);
	else if (strcmp(host, "localhost") != 0)
		r = servetls_der_name(names, sizeof(names), &off, 0x82, host, strlen(host));
	if (r == 0)
		r = servetls_der_name(names, sizeof(names), &off, 0x82, "localhost", 9);
	if (r == 0)
		r = servetls_san_ip(names, sizeof(names), &off, "127.0.0.1", ips, &nips);
	if (r == 0)
		r = servetls_san_ip(names, sizeof(names), &off, "::1", ips, &nips);
	if (r == 0 && bind && strcmp(bind, "0.0.0.0") != 0 && strcmp(bind, "::") != 0)
		r = servetls_san_ip(names, sizeof(names), &off, bind, ips, &nips);
	if (r < 0)
		return r;
	hdr = off < 128 ? 2 : off < 256 ? 3 : 4;
	if (hdr + off > cap)
		return ERR_TOO_LARGE;
	out[0] = 0x30; /* SEQUENCE */
	if (off < 128) {
		out[1] = (unsigned char)off;
	} else if (off < 256) {
		out[1] = 0x81;
		out[2] = (unsigned char)off;
	} else {
		out[1] = 0x82;
		out[2] = (unsigned char)(off >> 8);
		out[3] = (unsigned char)off;
	}
	memcpy(out + hdr, names, off);
	*ret_len = hdr + off;
	return 0;
}

/* servetls_selfsigned makes an EC P-256 key and a certificate for it, signed by
 * itself, like upstream's self-signed serving certificate; nothing is
 * written to disk. The key and random generator are allocated by wolfCrypt
 * itself: the static wolfSSL's options.h does not carry every macro its
 * big-number sizes depend on, so an ecc_key declared here would be smaller
 * than the library's. */
static int
servetls_selfsigned(WOLFSSL_CTX *ctx, const char *bind, struct errbuf *e)
{
	unsigned char *der = NULL, key_der[256];
	char host[256], text[SERVETLS_ERR_MAX];
	size_t san_len = 0;
	int r = 0, w, der_len = 0, key_len = 0;
	Cert *cert = NULL;
	WC_RNG *rng = NULL;
	ecc_key *key = NULL;

	if (gethostname(host, sizeof(host)) < 0 || host[0] == '\0')
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	der = xmalloc(SERVETLS_CERT_DER_MAX);
	cert = xcheck(wc_CertNew(NULL));
	key = xcheck(wc_ecc_key_new(NULL));
	if ((rng = wc_rng_new(NULL, 0, NULL)) == NULL) {
		r = errbuf_set(e, ERR_TLS, "self-signed certificate: no random numbers");
		goto out;
	}
	if ((w = wc_ecc_make_key_ex(rng, 32, key, ECC_SECP256R1)) != 0) {
		r = errbuf_set(e, ERR_TLS, "self-signed certificate: %s", wc_GetErrorString(w));
		goto out;
	}
	cert->daysValid = SERVETLS_CERT_DAYS;
	cert->sigType = CTC_SHA256wECDSA;
	cert->isCA = 0;
	snprintf(cert->subject.commonName, sizeof(cert->subject.commonName), "%s", host);
	if (servetls_san(host, bind, cert->altNames, sizeof(cert->altNames), &san_len) < 0) {
		r = errbuf_set(e, ERR_INVALID, "self-signed certificate: host name \"%s\" too "
		    "long for a certificate", host);
		goto out;
	}
	cert->altNamesSz = (int)san_len;
	if ((w = wc_MakeCert_ex(cert, der, SERVETLS_CERT_DER_MAX, ECC_TYPE, key, rng)) < 0 ||
	    (w = wc_SignCert_ex(cert->bodySz, cert->sigType, der, SERVETLS_CERT_DER_MAX,
	    ECC_TYPE, key, rng)) < 0) {
		r = errbuf_set(e, ERR_TLS, "self-signed certificate: %s", wc_GetErrorString(w));
		goto out;
	}
	der_len = w;
	if ((key_len = wc_EccKeyToDer(key, key_der, sizeof(key_der))) < 0) {
		r = errbuf_set(e, ERR_TLS, "self-signed certificate: key: %s",
		    wc_GetErrorString(key_len));
		goto out;
	}
	if ((w = wolfSSL_CTX_use_certificate_buffer(ctx, der, der_len,
	    WOLFSSL_FILETYPE_ASN1)) != WOLFSSL_SUCCESS ||
	    (w = wolfSSL_CTX_use_PrivateKey_buffer(ctx, key_der, key_len,
	    WOLFSSL_FILETYPE_ASN1)) != WOLFSSL_SUCCESS)
		r = errbuf_set(e, ERR_TLS, "self-signed certificate: %s",
		    servetls_err(w, text, sizeof(text)));
out:
	explicit_bzero(key_der, sizeof(key_der));
	wc_ecc_key_free(key);
	wc_rng_free(rng);
	wc_CertFree(cert);
	free(der);
	return r;
}

int
servetls_new(const char *cert_file, const char *key_file, const char *bind_address,
    const char *curves, WOLFSSL_CTX **ret, struct errbuf *e)
{
	int have_cert = cert_file && *cert_file, have_key = key_file && *key_file;
	char groups[SERVETLS_GROUPS_MAX];
	WOLFSSL_CTX *ctx;
	int r;

	if (have_cert != have_key)
		return errbuf_set(e, ERR_INVALID, "--tls-cert-file and --tls-private-key-file "
		    "must be given together");
	if ((r = servetls_curves("tls-curve-preferences", curves, groups, e)) < 0)
		return r;
	if (wolfSSL_Init() != WOLFSSL_SUCCESS)
		return errbuf_set(e, ERR_TLS, "wolfSSL_Init failed");
	ctx = xcheck(wolfSSL_CTX_new(wolfSSLv23_server_method()));
	if (wolfSSL_CTX_SetMinVersion(ctx, WOLFSSL_TLSV1_2) != WOLFSSL_SUCCESS) {
		r = errbuf_set(e, ERR_TLS, "cannot require TLS 1.2 or later");
		goto fail;
	}
	wolfSSL_CTX_set_verify(ctx, WOLFSSL_VERIFY_NONE, NULL);
	/* the groups a TLS 1.3 key share may use. wolfSSL's TLS 1.2 server
	 * picks its ECDHE curve without that list, so a list also means TLS 1.3
	 * only: no handshake ever uses a group outside it. */
	if (groups[0] != '\0' && (wolfSSL_CTX_set1_curves_list(ctx, groups) != WOLFSSL_SUCCESS ||
	    wolfSSL_CTX_SetMinVersion(ctx, WOLFSSL_TLSV1_3) != WOLFSSL_SUCCESS)) {
		r = errbuf_set(e, ERR_TLS, "--tls-curve-preferences: wolfSSL refused the "
		    "groups %s", groups);
		goto fail;
	}
	if (have_cert)
		r = servetls_files(ctx, cert_file, key_file, e);
	else
		r = servetls_selfsigned(ctx, bind_address, e);
	if (r < 0)
		goto fail;
	*ret = ctx;
	return 0;
fail:
	servetls_free(ctx);
	return r;
}

void
servetls_free(WOLFSSL_CTX *ctx)
{
	if (ctx == NULL)
		return;
	wolfSSL_CTX_free(ctx);
	wolfSSL_Cleanup();
}
