/* csr.h - PKCS#10 certificate signing requests (RFC 2986) as a
 * CertificateSigningRequest's spec.request carries them: exactly one PEM
 * "CERTIFICATE REQUEST" block, read by a strict DER reader (definite minimal
 * lengths, nothing trailing), its subject, subjectAltNames and public key
 * decoded, and its self-signature verified with wolfCrypt: ECDSA P-256/P-384
 * and RSA PKCS#1 v1.5 (2048 to 4096 bits) with SHA-256/384/512, and Ed25519
 * when the wolfSSL build has it.
 *
 * Contract: pure, never logs. csr_parse fills *ret only when the whole
 * request parses and its signature verifies, and describes any failure in e
 * ("subject: ...", "signature: does not verify"); the caller frees *ret with
 * csr_free. Sizes of outside input are capped below (ERR_TOO_LARGE). */
#ifndef BOOTCCM_CSR_H
#define BOOTCCM_CSR_H

#include <stddef.h>

#include "base/err.h"
#include "base/netaddr.h"

#define CSR_PEM_MAX 16384        /* bytes of PEM text */
#define CSR_DER_MAX 8192         /* bytes of the decoded request */
#define CSR_SAN_MAX 64           /* subjectAltName entries */
#define CSR_SUBJECT_ATTRS_MAX 16 /* attributes of the subject name */
#define CSR_VALUE_MAX 1024       /* bytes of one name or SAN value */
#define CSR_RSA_BITS_MIN 2048
#define CSR_RSA_BITS_MAX 4096

enum csr_key_type {
	CSR_KEY_ECDSA_P256 = 1,
	CSR_KEY_ECDSA_P384,
	CSR_KEY_RSA,
	CSR_KEY_ED25519,
};

enum csr_san_type {
	CSR_SAN_DNS = 1,   /* dNSName */
	CSR_SAN_IP,        /* iPAddress */
	CSR_SAN_EMAIL,     /* rfc822Name */
	CSR_SAN_URI,       /* uniformResourceIdentifier */
};

struct csr_san {
	int type;                  /* enum csr_san_type */
	char *value;               /* the text; an IP in canonical form */
	struct netaddr ip;         /* CSR_SAN_IP only */
};

struct csr {
	char *cn;                  /* subject commonName, NULL when absent */
	char **orgs;               /* subject organizationName values, in order */
	size_t n_orgs;
	size_t n_subject_attrs;    /* every subject attribute, CN and O included */
	struct csr_san *sans;      /* subjectAltName entries, in order */
	size_t n_sans;
	int key_type;              /* enum csr_key_type */
	int key_bits;              /* 256, 384, the RSA modulus size, 256 (Ed25519) */
	const char *sig_alg;       /* "ECDSA-SHA256", "SHA256-RSA", "Ed25519"... */
};

/* csr_parse parses len bytes of PEM text into *ret and verifies the request's
 * self-signature. Returns 0; ERR_INVALID (malformed, more than one block,
 * unsupported algorithm, a SAN kind other than DNS/IP/email/URI, a signature
 * that does not verify); ERR_TOO_LARGE past a cap. */
int csr_parse(const char *pem, size_t len, struct csr *ret, struct errbuf *e);

/* csr_free releases what csr_parse filled in c (c itself is the caller's). */
void csr_free(struct csr *c);

/* csr_check_node_subject returns 0 when the subject is exactly
 * CN=system:node:<node>, O=system:nodes (no other attribute), else
 * ERR_INVALID with the reason in e. */
int csr_check_node_subject(const struct csr *c, const char *node, struct errbuf *e);

/* csr_thread_done releases what signature checks left cached for the calling
 * thread (wolfCrypt's ECC fixed-point cache, when the library has one: a
 * few MiB, thread-local). A thread that called csr_parse calls it before it
 * ends. */
void csr_thread_done(void);

/* csr_key_name names a key type: "ECDSA P-256", "RSA", "Ed25519". */
const char *csr_key_name(int key_type);

/* csr_san_type_name names a SAN kind: "DNS", "IP", "email", "URI". */
const char *csr_san_type_name(int type);

#endif
