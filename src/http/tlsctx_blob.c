/* tlsctx_blob.c - in-memory TLS material through curl's *_BLOB options, for
 * backends that honour them (OpenSSL: the glibc debug build). */
#include "http/tlsctx.h"

#include <stdint.h>
#include <string.h>

int
tlsctx_check(struct errbuf *e)
{
	const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);

	if (v->ssl_version == NULL)
		return errbuf_set(e, ERR_UNSUPPORTED, "libcurl %s has no TLS support",
		    v->version);
	if (strncmp(v->ssl_version, "wolfSSL", 7) == 0)
		return errbuf_set(e, ERR_UNSUPPORTED,
		    "libcurl %s uses %s, whose backend ignores in-memory client "
		    "certificates: this binary must be built with tlsctx_wolfssl.c",
		    v->version, v->ssl_version);
	return 0;
}

static int
tlsctx_blob(CURL *h, CURLoption opt, const char *pem, size_t len,
    const char *what, struct errbuf *e)
{
	struct curl_blob b = { (void *)(uintptr_t)pem, len, CURL_BLOB_COPY };
	CURLcode rc = curl_easy_setopt(h, opt, &b);

	if (rc != CURLE_OK)
		return errbuf_set(e, ERR_UNSUPPORTED, "cannot use the %s from memory: %s",
		    what, curl_easy_strerror(rc));
	return 0;
}

int
tlsctx_apply(CURL *h, const struct http_tls *tls, struct errbuf *e)
{
	int r;

	if (tls->ca_pem) {
		/* trust only the configured CAs, as client-go does */
		curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
		curl_easy_setopt(h, CURLOPT_CAINFO, NULL);
		if ((r = tlsctx_blob(h, CURLOPT_CAINFO_BLOB, tls->ca_pem, tls->ca_pem_len,
		    "certificate authority", e)) < 0)
			return r;
	} else if (tls->ca_file) {
		curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
		curl_easy_setopt(h, CURLOPT_CAINFO, tls->ca_file);
	}
	if (tls->cert_pem) {
		curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
		if ((r = tlsctx_blob(h, CURLOPT_SSLCERT_BLOB, tls->cert_pem,
		    tls->cert_pem_len, "client certificate", e)) < 0)
			return r;
	}
	if (tls->key_pem) {
		curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
		if ((r = tlsctx_blob(h, CURLOPT_SSLKEY_BLOB, tls->key_pem,
		    tls->key_pem_len, "client key", e)) < 0)
			return r;
	}
	return 0;
}
