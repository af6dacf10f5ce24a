/* tlsctx.h - give a curl handle in-memory CA, client certificate and key in
 * the way the linked curl's TLS backend really honours.
 *
 * curl 7.88.1's wolfSSL backend accepts CURLOPT_SSLCERT_BLOB and
 * CURLOPT_SSLKEY_BLOB but silently ignores them (no client certificate is
 * sent), and refuses CURLOPT_CAINFO_BLOB; so with wolfSSL the PEM is loaded
 * into the SSL context from CURLOPT_SSL_CTX_FUNCTION. Other backends take the
 * blobs. Exactly one implementation is linked: tlsctx_wolfssl.c in the static
 * build, tlsctx_blob.c in the glibc build; each checks at run time that curl
 * really uses the backend it was written for. Never logs. */
#ifndef BOOTCCM_TLSCTX_H
#define BOOTCCM_TLSCTX_H

#include <curl/curl.h>

#include "base/err.h"
#include "http/http.h"

/* tlsctx_check verifies that the running curl's TLS backend is the one this
 * implementation serves. Returns 0 or ERR_UNSUPPORTED with a message. */
int tlsctx_check(struct errbuf *e);

/* tlsctx_apply sets up h for tls (CA, client certificate and key). tls must
 * outlive the transfer. Returns 0 or ERR_* with a message. */
int tlsctx_apply(CURL *h, const struct http_tls *tls, struct errbuf *e);

#endif
