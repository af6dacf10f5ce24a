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

#include "err.h"

#define SERVETLS_FILE_MAX (1024 * 1024)  /* bytes: certificate or key file */
#define SERVETLS_CERT_DAYS 365           /* self-signed certificate validity */
#define SERVETLS_ERR_MAX 80              /* bytes: a wolfSSL error text */

struct WOLFSSL_CTX;

/* servetls_new makes a server context accepting TLS 1.2 and later, without
 * client certificates. cert_file and key_file (both or neither, NULL or ""
 * for neither) are PEM files; the key must match the certificate (checked by
 * a handshake with itself). Without them the certificate is self-signed for
 * the host name, localhost, 127.0.0.1, ::1 and bind_address when it names
 * one address. Returns 0 and *ret, or ERR_INVALID (one file without the
 * other), ERR_IO, ERR_TOO_LARGE (a file past SERVETLS_FILE_MAX), ERR_TLS. */
int servetls_new(const char *cert_file, const char *key_file, const char *bind_address,
    struct WOLFSSL_CTX **ret, struct errbuf *e);

/* servetls_free frees ctx (NULL is fine) and what servetls_new initialized. */
void servetls_free(struct WOLFSSL_CTX *ctx);

/* servetls_err describes what a wolfSSL call returned (an error code, or
 * "rejected" for a refusal without one) in buf, and returns buf. */
const char *servetls_err(int code, char *buf, size_t len);

#endif
