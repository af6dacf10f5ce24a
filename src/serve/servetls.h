/* servetls.h - the serving endpoint's TLS: a wolfSSL server context with
 * the certificate and key from --tls-cert-file/--tls-private-key-file, or a
 * self-signed certificate made in memory, like upstream's.
 *
 * Contract: never logs. servetls_new initializes wolfSSL and servetls_free
 * releases it, in pairs. Key material read from files is wiped once wolfSSL
 * holds it; the self-signed key never leaves memory. Messages name the flag
 * and file. */
#ifndef BOOTCCM_SERVETLS_H
#define BOOTCCM_SERVETLS_H

#include <stddef.h>

#include "base/err.h"

#define SERVETLS_FILE_MAX (1024 * 1024)  /* bytes: certificate or key file */
#define SERVETLS_CERT_DAYS 365           /* self-signed certificate validity */
#define SERVETLS_ERR_MAX 80              /* bytes: a wolfSSL error text */
#define SERVETLS_GROUPS_MAX 64           /* bytes: wolfSSL's group list, "P-256:..." */

struct WOLFSSL_CTX;

/* servetls_curves checks list, the value of --tls-curve-preferences (flag
 * names it in messages): numeric Go crypto/tls CurveID values, comma-separated,
 * parsed as upstream does (each 1 to 65535, no duplicates, a curve Go knows).
 * Go's classical groups map to wolfSSL's: 23 P-256, 24 P-384, 25 P-521,
 * 29 X25519; Go's ML-KEM hybrids (4587, 4588, 4589) are refused, wolfSSL
 * here has none. Fills ret (SERVETLS_GROUPS_MAX bytes) with the wolfSSL
 * list, "" for an empty list. Returns 0 or ERR_INVALID. */
int servetls_curves(const char *flag, const char *list, char *ret, struct errbuf *e);

/* servetls_new makes a server context accepting TLS 1.2 and later, without
 * client certificates. cert_file and key_file (both or neither, NULL or ""
 * for neither) are PEM files; the key must match the certificate (checked by
 * a handshake with itself). Without them the certificate is self-signed for
 * the host name, localhost, 127.0.0.1, ::1 and bind_address when it names
 * one address. curves (NULL or "" for wolfSSL's own) is a
 * --tls-curve-preferences value: the key exchange groups the context accepts;
 * with a list the context serves TLS 1.3 only (wolfSSL applies the list to
 * TLS 1.3 key shares, not to its TLS 1.2 curve choice). Returns 0 and *ret, or ERR_INVALID (one file without the
 * other), ERR_IO, ERR_TOO_LARGE (a file past SERVETLS_FILE_MAX), ERR_TLS. */
int servetls_new(const char *cert_file, const char *key_file, const char *bind_address,
    const char *curves, struct WOLFSSL_CTX **ret, struct errbuf *e);

/* servetls_free frees ctx (NULL is fine) and what servetls_new initialized. */
void servetls_free(struct WOLFSSL_CTX *ctx);

/* servetls_err describes what a wolfSSL call returned (an error code, or
 * "rejected" for a refusal without one) in buf, and returns buf. */
const char *servetls_err(int code, char *buf, size_t len);

#endif
