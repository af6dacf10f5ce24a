/* tlsctx_wolfssl.c - in-memory TLS material loaded into wolfSSL's context
 * from curl's SSL_CTX callback (the static build: curl 7.88.1 ignores the
 * *_BLOB options with wolfSSL). */
#include "http/tlsctx.h"

#include <stdint.h>
#include <string.h>
#include <wolfssl/options.h>
#include <wolfssl/ssl.h>

int
tlsctx_check(struct errbuf *e)
{
	const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);

	if (v->ssl_version == NULL || strncmp(v->ssl_version, "wolfSSL", 7) != 0)
		return errbuf_set(e, ERR_UNSUPPORTED,
		    "libcurl %s uses %s, not wolfSSL: this binary must be built with "
		    "tlsctx_blob.c", v->version, v->ssl_version ? v->ssl_version : "no TLS");
	return 0;
}

static CURLcode
tlsctx_cb(CURL *curl, void *sslctx, void *arg)
{
	const struct http_tls *tls = arg;
	WOLFSSL_CTX *ctx = sslctx;

	(void)curl;
	if (tls->ca_pem && wolfSSL_CTX_load_verify_buffer(ctx,
	    (const unsigned char *)tls->ca_pem, (long)tls->ca_pem_len,
	    WOLFSSL_FILETYPE_PEM) != WOLFSSL_SUCCESS)
		return CURLE_SSL_CACERT_BADFILE;
	if (tls->cert_pem && wolfSSL_CTX_use_certificate_chain_buffer(ctx,
	    (const unsigned char *)tls->cert_pem, (long)tls->cert_pem_len) !=
	    WOLFSSL_SUCCESS)
		return CURLE_SSL_CERTPROBLEM;
	if (tls->key_pem && wolfSSL_CTX_use_PrivateKey_buffer(ctx,
	    (const unsigned char *)tls->key_pem, (long)tls->key_pem_len,
	    WOLFSSL_FILETYPE_PEM) != WOLFSSL_SUCCESS)
		return CURLE_SSL_CERTPROBLEM;
	return CURLE_OK;
}

int
tlsctx_apply(CURL *h, const struct http_tls *tls, struct errbuf *e)
{
	if (tls->ca_pem == NULL && tls->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, tls->ca_file);
	if (tls->ca_pem || tls->cert_pem || tls->key_pem) {
		if (curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, tlsctx_cb) != CURLE_OK)
			return errbuf_set(e, ERR_UNSUPPORTED,
			    "libcurl cannot hand out its TLS context");
		curl_easy_setopt(h, CURLOPT_SSL_CTX_DATA, (void *)(uintptr_t)tls);
	}
	return 0;
}
