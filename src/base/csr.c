/* csr.c - PKCS#10 requests: PEM, a strict DER reader for the structure, and
 * wolfCrypt for the key decode and the signature check. The static wolfSSL
 * is built without WOLFSSL_CERT_REQ, so its certificate parser cannot read
 * requests; the structure is small and fixed, and reading it here keeps the
 * glibc and static builds on one code path. */
#include "base/csr.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/hash.h>
#include <wolfssl/wolfcrypt/rsa.h>
#ifdef HAVE_ED25519
#include <wolfssl/wolfcrypt/ed25519.h>
#endif

#include "base/base64.h"
#include "base/xalloc.h"

#define PEM_BEGIN "-----BEGIN CERTIFICATE REQUEST-----"
#define PEM_END "-----END CERTIFICATE REQUEST-----"

/* DER tags (universal, and the context tags the structure uses). */
#define TAG_BOOLEAN 0x01
#define TAG_INTEGER 0x02
#define TAG_BIT_STRING 0x03
#define TAG_OCTET_STRING 0x04
#define TAG_NULL 0x05
#define TAG_OID 0x06
#define TAG_UTF8 0x0c
#define TAG_PRINTABLE 0x13
#define TAG_IA5 0x16
#define TAG_SEQUENCE 0x30
#define TAG_SET 0x31
#define TAG_ATTRIBUTES 0xa0 /* [0] IMPLICIT SET OF Attribute */
#define TAG_SAN_EMAIL 0x81  /* [1] IMPLICIT IA5String */
#define TAG_SAN_DNS 0x82    /* [2] IMPLICIT IA5String */
#define TAG_SAN_URI 0x86    /* [6] IMPLICIT IA5String */
#define TAG_SAN_IP 0x87     /* [7] IMPLICIT OCTET STRING */

#define DIGEST_MAX 64 /* bytes: SHA-512 */

/* One DER element's content, or a cursor over a constructed one. */
struct der {
	const unsigned char *p;
	size_t len;
};

static const unsigned char OID_CN[] = { 0x55, 0x04, 0x03 };
static const unsigned char OID_O[] = { 0x55, 0x04, 0x0a };
static const unsigned char OID_EC_PUBLIC_KEY[] = { 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01 };
static const unsigned char OID_P256[] = { 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07 };
static const unsigned char OID_P384[] = { 0x2b, 0x81, 0x04, 0x00, 0x22 };
static const unsigned char OID_RSA[] = { 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01 };
static const unsigned char OID_ED25519[] = { 0x2b, 0x65, 0x70 };
static const unsigned char OID_EXTENSION_REQUEST[] =
	{ 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x0e };
static const unsigned char OID_SAN[] = { 0x55, 0x1d, 0x11 };

enum sig_kind { SIG_ECDSA = 1, SIG_RSA, SIG_ED25519 };
enum hash_kind { HASH_NONE = 0, HASH_SHA256, HASH_SHA384, HASH_SHA512 };

/* The signature algorithms accepted, and the DigestInfo prefix PKCS#1 v1.5
 * puts before the digest (RFC 8017 section 9.2, note 1). */
static const struct csr_sigalg {
	const char *name;
	unsigned char oid[9];
	size_t oid_len;
	int kind;
	int hash;
	unsigned char prefix[19];
} csr_sigalgs[] = {
	{ "ECDSA-SHA256", { 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02 }, 8, SIG_ECDSA, HASH_SHA256, { 0 } },
	{ "ECDSA-SHA384", { 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03 }, 8, SIG_ECDSA, HASH_SHA384, { 0 } },
	{ "ECDSA-SHA512", { 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x04 }, 8, SIG_ECDSA, HASH_SHA512, { 0 } },
	{ "SHA256-RSA", { 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b }, 9, SIG_RSA, HASH_SHA256,
	  { 0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20 } },
	{ "SHA384-RSA", { 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0c }, 9, SIG_RSA, HASH_SHA384,
	  { 0x30, 0x41, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02, 0x05, 0x00, 0x04, 0x30 } },
	{ "SHA512-RSA", { 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0d }, 9, SIG_RSA, HASH_SHA512,
	  { 0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03, 0x05, 0x00, 0x04, 0x40 } },
	{ "Ed25519", { 0x2b, 0x65, 0x70 }, 3, SIG_ED25519, HASH_NONE, { 0 } },
};

/* The decoded public key, before it is handed to wolfCrypt. */
struct csr_pubkey {
	int type;                  /* enum csr_key_type */
	int bits;
	struct der point;          /* EC: the uncompressed point; Ed25519: 32 bytes */
	struct der n, exp;         /* RSA: modulus and exponent, no leading zero */
};

/* ---- DER ------------------------------------------------------------------ */

/* der_next takes the next element of d, which must carry tag, and returns
 * its content in *ret (and the whole element, header included, in *ret_all
 * when non-NULL). Only the low tag-number form, definite lengths in their
 * shortest form and lengths within d are accepted. */
static int
der_next(struct der *d, unsigned tag, struct der *ret, struct der *ret_all,
    const char *what, struct errbuf *e)
{
	size_t len, hdr = 2, i, n;

	if (d->len < 2)
		return errbuf_set(e, ERR_INVALID, "%s: truncated", what);
	if (d->p[0] != tag)
		return errbuf_set(e, ERR_INVALID, "%s: tag 0x%02x, expected 0x%02x",
		    what, d->p[0], tag);
	len = d->p[1];
	if (len & 0x80) {
		n = len & 0x7f;
		if (n == 0 || n > 3)
			return errbuf_set(e, ERR_INVALID, "%s: unsupported length form", what);
		if (d->len < 2 + n)
			return errbuf_set(e, ERR_INVALID, "%s: truncated", what);
		if (d->p[2] == 0)
			return errbuf_set(e, ERR_INVALID, "%s: length not minimally encoded", what);
		len = 0;
		for (i = 0; i < n; i++)
			len = (len << 8) | d->p[2 + i];
		if (len < 0x80)
			return errbuf_set(e, ERR_INVALID, "%s: length not minimally encoded", what);
		hdr += n;
	}
	if (len > d->len - hdr)
		return errbuf_set(e, ERR_INVALID, "%s: truncated", what);
	ret->p = d->p + hdr;
	ret->len = len;
	if (ret_all != NULL) {
		ret_all->p = d->p;
		ret_all->len = hdr + len;
	}
	d->p += hdr + len;
	d->len -= hdr + len;
	return 0;
}

static int
der_peek(const struct der *d)
{
	return d->len > 0 ? d->p[0] : -1;
}

static int
der_end(const struct der *d, const char *what, struct errbuf *e)
{
	if (d->len != 0)
		return errbuf_set(e, ERR_INVALID, "%s: %zu unexpected trailing bytes", what, d->len);
	return 0;
}

static int
der_oid_is(const struct der *oid, const unsigned char *want, size_t want_len)
{
	return oid->len == want_len && memcmp(oid->p, want, want_len) == 0;
}

/* der_uint checks a positive INTEGER's content and strips its sign byte. */
static int
der_uint(struct der *v, const char *what, struct errbuf *e)
{
	if (v->len == 0)
		return errbuf_set(e, ERR_INVALID, "%s: empty integer", what);
	if (v->p[0] & 0x80)
		return errbuf_set(e, ERR_INVALID, "%s: negative integer", what);
	if (v->len > 1 && v->p[0] == 0 && !(v->p[1] & 0x80))
		return errbuf_set(e, ERR_INVALID, "%s: integer not minimally encoded", what);
	if (v->p[0] == 0 && v->len > 1) {
		v->p++;
		v->len--;
	}
	if (v->len == 1 && v->p[0] == 0)
		return errbuf_set(e, ERR_INVALID, "%s: zero", what);
	return 0;
}

/* der_bits takes a BIT STRING with no unused bits and returns its bytes. */
static int
der_bits(struct der *d, struct der *ret, const char *what, struct errbuf *e)
{
	struct der v;
	int r;

	r = der_next(d, TAG_BIT_STRING, &v, NULL, what, e);
	if (r < 0)
		return r;
	if (v.len < 1 || v.p[0] != 0)
		return errbuf_set(e, ERR_INVALID, "%s: bit string with unused bits", what);
	ret->p = v.p + 1;
	ret->len = v.len - 1;
	return 0;
}

/* ---- values ---------------------------------------------------------------- */

/* csr_text copies a string value: printable ASCII only (no NUL, no control
 * characters), not empty, at most CSR_VALUE_MAX bytes. */
static int
csr_text(const struct der *v, char **ret, const char *what, struct errbuf *e)
{
	size_t i;

	if (v->len == 0)
		return errbuf_set(e, ERR_INVALID, "%s: empty", what);
	if (v->len > CSR_VALUE_MAX)
		return errbuf_set(e, ERR_TOO_LARGE, "%s: longer than %d bytes", what, CSR_VALUE_MAX);
	for (i = 0; i < v->len; i++)
		if (v->p[i] < 0x20 || v->p[i] > 0x7e)
			return errbuf_set(e, ERR_INVALID, "%s: byte 0x%02x is not printable ASCII",
			    what, v->p[i]);
	*ret = xstrndup((const char *)v->p, v->len);
	return 0;
}

/* csr_subject reads the subject Name: a SEQUENCE of RDN SETs of
 * (type, value); CN at most once. */
static int
csr_subject(struct der name, struct csr *c, struct errbuf *e)
{
	struct der rdn, atv, oid, val;
	char *s;
	int r, tag;

	while (name.len > 0) {
		r = der_next(&name, TAG_SET, &rdn, NULL, "subject", e);
		if (r < 0)
			return r;
		if (rdn.len == 0)
			return errbuf_set(e, ERR_INVALID, "subject: empty relative name");
		while (rdn.len > 0) {
			if (c->n_subject_attrs >= CSR_SUBJECT_ATTRS_MAX)
				return errbuf_set(e, ERR_TOO_LARGE, "subject: more than %d attributes",
				    CSR_SUBJECT_ATTRS_MAX);
			r = der_next(&rdn, TAG_SEQUENCE, &atv, NULL, "subject attribute", e);
			if (r < 0)
				return r;
			r = der_next(&atv, TAG_OID, &oid, NULL, "subject attribute type", e);
			if (r < 0)
				return r;
			tag = der_peek(&atv);
			if (tag != TAG_UTF8 && tag != TAG_PRINTABLE && tag != TAG_IA5)
				return errbuf_set(e, ERR_INVALID,
				    "subject attribute: value of unsupported string type 0x%02x", tag);
			r = der_next(&atv, (unsigned)tag, &val, NULL, "subject attribute value", e);
			if (r < 0)
				return r;
			r = der_end(&atv, "subject attribute", e);
			if (r < 0)
				return r;
			c->n_subject_attrs++;
			if (der_oid_is(&oid, OID_CN, sizeof(OID_CN))) {
				if (c->cn != NULL)
					return errbuf_set(e, ERR_INVALID, "subject: more than one CN");
				r = csr_text(&val, &c->cn, "subject CN", e);
				if (r < 0)
					return r;
			} else if (der_oid_is(&oid, OID_O, sizeof(OID_O))) {
				r = csr_text(&val, &s, "subject O", e);
				if (r < 0)
					return r;
				c->orgs = xreallocarray(c->orgs, c->n_orgs + 1, sizeof(*c->orgs));
				c->orgs[c->n_orgs++] = s;
			}
		}
	}
	return 0;
}

/* csr_spki reads a SubjectPublicKeyInfo. */
static int
csr_spki(struct der spki, struct csr_pubkey *k, struct errbuf *e)
{
	struct der alg, oid, params, key, rsa, n, exp;
	int r;

	r = der_next(&spki, TAG_SEQUENCE, &alg, NULL, "public key algorithm", e);
	if (r < 0)
		return r;
	r = der_bits(&spki, &key, "public key", e);
	if (r < 0)
		return r;
	r = der_end(&spki, "public key info", e);
	if (r < 0)
		return r;
	r = der_next(&alg, TAG_OID, &oid, NULL, "public key algorithm", e);
	if (r < 0)
		return r;
	if (der_oid_is(&oid, OID_EC_PUBLIC_KEY, sizeof(OID_EC_PUBLIC_KEY))) {
		r = der_next(&alg, TAG_OID, &params, NULL, "public key curve", e);
		if (r < 0)
			return r;
		r = der_end(&alg, "public key algorithm", e);
		if (r < 0)
			return r;
		if (der_oid_is(&params, OID_P256, sizeof(OID_P256))) {
			k->type = CSR_KEY_ECDSA_P256;
			k->bits = 256;
		} else if (der_oid_is(&params, OID_P384, sizeof(OID_P384))) {
			k->type = CSR_KEY_ECDSA_P384;
			k->bits = 384;
		} else {
			return errbuf_set(e, ERR_INVALID,
			    "public key: unsupported elliptic curve (P-256 and P-384 are)");
		}
		/* Uncompressed points only, as Go's x509 reads them. */
		if (key.len != 1 + 2 * (size_t)(k->bits / 8) || key.p[0] != 0x04)
			return errbuf_set(e, ERR_INVALID, "public key: not an uncompressed %s point",
			    csr_key_name(k->type));
		k->point = key;
		return 0;
	}
	if (der_oid_is(&oid, OID_RSA, sizeof(OID_RSA))) {
		r = der_next(&alg, TAG_NULL, &params, NULL, "public key parameters", e);
		if (r < 0)
			return r;
		if (params.len != 0)
			return errbuf_set(e, ERR_INVALID, "public key parameters: NULL with content");
		r = der_end(&alg, "public key algorithm", e);
		if (r < 0)
			return r;
		r = der_next(&key, TAG_SEQUENCE, &rsa, NULL, "RSA public key", e);
		if (r < 0)
			return r;
		r = der_end(&key, "RSA public key", e);
		if (r < 0)
			return r;
		r = der_next(&rsa, TAG_INTEGER, &n, NULL, "RSA modulus", e);
		if (r < 0)
			return r;
		r = der_next(&rsa, TAG_INTEGER, &exp, NULL, "RSA exponent", e);
		if (r < 0)
			return r;
		r = der_end(&rsa, "RSA public key", e);
		if (r < 0)
			return r;
		r = der_uint(&n, "RSA modulus", e);
		if (r < 0)
			return r;
		r = der_uint(&exp, "RSA exponent", e);
		if (r < 0)
			return r;
		/* Go's limits on the exponent: above 1, below 2^31, odd. */
		if (exp.len > 4 || (exp.len == 4 && (exp.p[0] & 0x80)) ||
		    (exp.len == 1 && exp.p[0] < 3) || !(exp.p[exp.len - 1] & 1))
			return errbuf_set(e, ERR_INVALID, "RSA exponent: out of range");
		k->type = CSR_KEY_RSA;
		k->bits = (int)(n.len * 8);
		{
			unsigned char top = n.p[0];
			while (!(top & 0x80)) {
				k->bits--;
				top = (unsigned char)(top << 1);
			}
		}
		if (k->bits < CSR_RSA_BITS_MIN || k->bits > CSR_RSA_BITS_MAX)
			return errbuf_set(e, ERR_INVALID, "RSA public key: %d bits (%d to %d are accepted)",
			    k->bits, CSR_RSA_BITS_MIN, CSR_RSA_BITS_MAX);
		k->n = n;
		k->exp = exp;
		return 0;
	}
	if (der_oid_is(&oid, OID_ED25519, sizeof(OID_ED25519))) {
		r = der_end(&alg, "public key algorithm", e);
		if (r < 0)
			return r;
		if (key.len != 32)
			return errbuf_set(e, ERR_INVALID, "public key: Ed25519 key of %zu bytes", key.len);
		k->type = CSR_KEY_ED25519;
		k->bits = 256;
		k->point = key;
		return 0;
	}
	return errbuf_set(e, ERR_INVALID,
	    "public key: unsupported algorithm (ECDSA, RSA and Ed25519 are)");
}

/* csr_sans reads a subjectAltName extension's GeneralNames. */
static int
csr_sans(struct der v, struct csr *c, struct errbuf *e)
{
	struct der names, gn;
	struct csr_san *s;
	char *text;
	int r, tag;

	r = der_next(&v, TAG_SEQUENCE, &names, NULL, "subjectAltName", e);
	if (r < 0)
		return r;
	r = der_end(&v, "subjectAltName", e);
	if (r < 0)
		return r;
	if (names.len == 0)
		return errbuf_set(e, ERR_INVALID, "subjectAltName: empty");
	while (names.len > 0) {
		if (c->n_sans >= CSR_SAN_MAX)
			return errbuf_set(e, ERR_TOO_LARGE, "subjectAltName: more than %d names",
			    CSR_SAN_MAX);
		tag = der_peek(&names);
		if (tag != TAG_SAN_DNS && tag != TAG_SAN_IP && tag != TAG_SAN_EMAIL &&
		    tag != TAG_SAN_URI)
			return errbuf_set(e, ERR_INVALID,
			    "subjectAltName: unsupported name kind (tag 0x%02x)", tag);
		r = der_next(&names, (unsigned)tag, &gn, NULL, "subjectAltName", e);
		if (r < 0)
			return r;
		c->sans = xreallocarray(c->sans, c->n_sans + 1, sizeof(*c->sans));
		s = &c->sans[c->n_sans];
		memset(s, 0, sizeof(*s));
		if (tag == TAG_SAN_IP) {
			char buf[NETADDR_TEXT_MAX];

			if (gn.len == 4)
				s->ip.family = 4;
			else if (gn.len == 16)
				s->ip.family = 6;
			else
				return errbuf_set(e, ERR_INVALID,
				    "subjectAltName: IP address of %zu bytes", gn.len);
			memcpy(s->ip.b, gn.p, gn.len);
			netaddr_format(&s->ip, buf);
			s->type = CSR_SAN_IP;
			s->value = xstrdup(buf);
		} else {
			r = csr_text(&gn, &text, "subjectAltName", e);
			if (r < 0)
				return r;
			s->type = tag == TAG_SAN_DNS ? CSR_SAN_DNS :
			    tag == TAG_SAN_EMAIL ? CSR_SAN_EMAIL : CSR_SAN_URI;
			s->value = text;
		}
		c->n_sans++;
	}
	return 0;
}

/* csr_attributes reads the [0] attributes: the extensionRequest's
 * subjectAltName is kept; other non-critical extensions and other
 * attributes (a challengePassword) are ignored, as Go's x509 does; an
 * unknown critical extension is refused. */
static int
csr_attributes(struct der attrs, struct csr *c, struct errbuf *e)
{
	struct der attr, oid, values, exts, ext, extid, crit, val;
	int r, seen_exts = 0, seen_san = 0, critical;

	while (attrs.len > 0) {
		r = der_next(&attrs, TAG_SEQUENCE, &attr, NULL, "attribute", e);
		if (r < 0)
			return r;
		r = der_next(&attr, TAG_OID, &oid, NULL, "attribute type", e);
		if (r < 0)
			return r;
		r = der_next(&attr, TAG_SET, &values, NULL, "attribute values", e);
		if (r < 0)
			return r;
		r = der_end(&attr, "attribute", e);
		if (r < 0)
			return r;
		if (!der_oid_is(&oid, OID_EXTENSION_REQUEST, sizeof(OID_EXTENSION_REQUEST)))
			continue;
		if (seen_exts++)
			return errbuf_set(e, ERR_INVALID, "extensionRequest: more than once");
		r = der_next(&values, TAG_SEQUENCE, &exts, NULL, "extensionRequest", e);
		if (r < 0)
			return r;
		r = der_end(&values, "extensionRequest values", e);
		if (r < 0)
			return r;
		while (exts.len > 0) {
			r = der_next(&exts, TAG_SEQUENCE, &ext, NULL, "extension", e);
			if (r < 0)
				return r;
			r = der_next(&ext, TAG_OID, &extid, NULL, "extension id", e);
			if (r < 0)
				return r;
			critical = 0;
			if (der_peek(&ext) == TAG_BOOLEAN) {
				r = der_next(&ext, TAG_BOOLEAN, &crit, NULL, "extension critical", e);
				if (r < 0)
					return r;
				/* DER: the default FALSE is never encoded, TRUE is 0xff. */
				if (crit.len != 1 || crit.p[0] != 0xff)
					return errbuf_set(e, ERR_INVALID, "extension critical: not DER TRUE");
				critical = 1;
			}
			r = der_next(&ext, TAG_OCTET_STRING, &val, NULL, "extension value", e);
			if (r < 0)
				return r;
			r = der_end(&ext, "extension", e);
			if (r < 0)
				return r;
			if (der_oid_is(&extid, OID_SAN, sizeof(OID_SAN))) {
				if (seen_san++)
					return errbuf_set(e, ERR_INVALID, "subjectAltName: more than once");
				r = csr_sans(val, c, e);
				if (r < 0)
					return r;
			} else if (critical) {
				return errbuf_set(e, ERR_INVALID, "extensionRequest: unknown critical extension");
			}
		}
	}
	return 0;
}

/* ---- PEM ------------------------------------------------------------------ */

static int
csr_is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/* csr_pem_decode finds the one CERTIFICATE REQUEST block (only whitespace
 * around it) and decodes its base64 body into *ret. */
static int
csr_pem_decode(const char *pem, size_t len, unsigned char **ret, size_t *ret_len,
    struct errbuf *e)
{
	const char *p = pem, *end = pem + len, *body, *body_end;
	char *der;
	size_t der_len;
	int r;

	if (len > CSR_PEM_MAX)
		return errbuf_set(e, ERR_TOO_LARGE, "PEM: longer than %d bytes", CSR_PEM_MAX);
	if (memchr(pem, '\0', len) != NULL)
		return errbuf_set(e, ERR_INVALID, "PEM: contains a NUL byte");
	while (p < end && csr_is_space(*p))
		p++;
	if ((size_t)(end - p) < sizeof(PEM_BEGIN) - 1 ||
	    memcmp(p, PEM_BEGIN, sizeof(PEM_BEGIN) - 1) != 0)
		return errbuf_set(e, ERR_INVALID, "PEM: no \"%s\" line at the start", PEM_BEGIN);
	body = p + sizeof(PEM_BEGIN) - 1;
	if (body < end && *body == '\r')
		body++;
	if (body >= end || *body != '\n')
		return errbuf_set(e, ERR_INVALID, "PEM: no line break after \"%s\"", PEM_BEGIN);
	body_end = memmem(body, (size_t)(end - body), PEM_END, sizeof(PEM_END) - 1);
	if (body_end == NULL)
		return errbuf_set(e, ERR_INVALID, "PEM: no \"%s\" line", PEM_END);
	if (memmem(body, (size_t)(body_end - body), "-----", 5) != NULL)
		return errbuf_set(e, ERR_INVALID, "PEM: a block inside the block");
	for (p = body_end + sizeof(PEM_END) - 1; p < end; p++)
		if (!csr_is_space(*p))
			return errbuf_set(e, ERR_INVALID,
			    "PEM: data after the request (exactly one block is accepted)");
	r = base64_decode(body, (size_t)(body_end - body), &der, &der_len);
	if (r < 0)
		return errbuf_set(e, ERR_INVALID, "PEM: body is not base64");
	if (der_len == 0 || der_len > CSR_DER_MAX) {
		free(der);
		if (der_len == 0)
			return errbuf_set(e, ERR_INVALID, "PEM: empty body");
		return errbuf_set(e, ERR_TOO_LARGE, "request: longer than %d bytes", CSR_DER_MAX);
	}
	*ret = (unsigned char *)der;
	*ret_len = der_len;
	return 0;
}

/* ---- signature ------------------------------------------------------------ */

static int
csr_digest(int hash, const struct der *msg, unsigned char out[DIGEST_MAX], size_t *ret_len)
{
	int w;

	switch (hash) {
	case HASH_SHA256:
		w = wc_Sha256Hash(msg->p, (word32)msg->len, out);
		*ret_len = 32;
		break;
	case HASH_SHA384:
		w = wc_Sha384Hash(msg->p, (word32)msg->len, out);
		*ret_len = 48;
		break;
	case HASH_SHA512:
		w = wc_Sha512Hash(msg->p, (word32)msg->len, out);
		*ret_len = 64;
		break;
	default:
		return ERR_INTERNAL;
	}
	return w == 0 ? 0 : ERR_INTERNAL;
}

static int
csr_verify_ecdsa(const struct csr_pubkey *k, const struct der *sig,
    const unsigned char *digest, size_t digest_len, struct errbuf *e)
{
	struct der d = *sig, seq, rr, ss;
	ecc_key *key;
	int r, w, ok = 0;

	/* ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }, strictly. */
	r = der_next(&d, TAG_SEQUENCE, &seq, NULL, "signature", e);
	if (r < 0)
		return r;
	r = der_end(&d, "signature", e);
	if (r < 0)
		return r;
	r = der_next(&seq, TAG_INTEGER, &rr, NULL, "signature r", e);
	if (r < 0)
		return r;
	r = der_next(&seq, TAG_INTEGER, &ss, NULL, "signature s", e);
	if (r < 0)
		return r;
	r = der_end(&seq, "signature", e);
	if (r < 0)
		return r;
	r = der_uint(&rr, "signature r", e);
	if (r < 0)
		return r;
	r = der_uint(&ss, "signature s", e);
	if (r < 0)
		return r;
	key = xcheck(wc_ecc_key_new(NULL));
	w = wc_ecc_import_x963_ex(k->point.p, (word32)k->point.len, key,
	    k->type == CSR_KEY_ECDSA_P256 ? ECC_SECP256R1 : ECC_SECP384R1);
	if (w != 0) {
		r = errbuf_set(e, ERR_INVALID, "public key: not a point of %s", csr_key_name(k->type));
		goto out;
	}
	w = wc_ecc_verify_hash(sig->p, (word32)sig->len, digest, (word32)digest_len, &ok, key);
	r = w == 0 && ok == 1 ? 0 : errbuf_set(e, ERR_INVALID, "signature: does not verify");
out:
	wc_ecc_key_free(key);
	return r;
}

static int
csr_verify_rsa(const struct csr_pubkey *k, const struct csr_sigalg *alg, const struct der *sig,
    const unsigned char *digest, size_t digest_len, struct errbuf *e)
{
	unsigned char *buf = NULL, *plain = NULL;
	RsaKey *key;
	int r, w;

	if (sig->len != k->n.len)
		return errbuf_set(e, ERR_INVALID, "signature: %zu bytes for a %d-bit key",
		    sig->len, k->bits);
	key = xcalloc(1, sizeof(*key));
	if (wc_InitRsaKey(key, NULL) != 0) {
		free(key);
		return errbuf_set(e, ERR_INTERNAL, "RSA: cannot initialize a key");
	}
	w = wc_RsaPublicKeyDecodeRaw(k->n.p, (word32)k->n.len, k->exp.p, (word32)k->exp.len, key);
	if (w != 0) {
		r = errbuf_set(e, ERR_INVALID, "RSA public key: not usable");
		goto out;
	}
	buf = xmemdup(sig->p, sig->len);
	w = wc_RsaSSL_VerifyInline(buf, (word32)sig->len, &plain, key);
	if (w < 0 || (size_t)w != sizeof(alg->prefix) + digest_len ||
	    memcmp(plain, alg->prefix, sizeof(alg->prefix)) != 0 ||
	    memcmp(plain + sizeof(alg->prefix), digest, digest_len) != 0) {
		r = errbuf_set(e, ERR_INVALID, "signature: does not verify");
		goto out;
	}
	r = 0;
out:
	free(buf);
	wc_FreeRsaKey(key);
	free(key);
	return r;
}

static int
csr_verify_ed25519(const struct csr_pubkey *k, const struct der *sig, const struct der *msg,
    struct errbuf *e)
{
#ifdef HAVE_ED25519
	ed25519_key *key;
	int r, w, ok = 0;

	if (sig->len != ED25519_SIG_SIZE)
		return errbuf_set(e, ERR_INVALID, "signature: Ed25519 signature of %zu bytes", sig->len);
	key = xcalloc(1, sizeof(*key));
	if (wc_ed25519_init(key) != 0) {
		free(key);
		return errbuf_set(e, ERR_INTERNAL, "Ed25519: cannot initialize a key");
	}
	w = wc_ed25519_import_public(k->point.p, (word32)k->point.len, key);
	if (w != 0) {
		r = errbuf_set(e, ERR_INVALID, "public key: not an Ed25519 key");
		goto out;
	}
	w = wc_ed25519_verify_msg(sig->p, (word32)sig->len, msg->p, (word32)msg->len, &ok, key);
	r = w == 0 && ok == 1 ? 0 : errbuf_set(e, ERR_INVALID, "signature: does not verify");
out:
	wc_ed25519_free(key);
	free(key);
	return r;
#else
	(void)k;
	(void)sig;
	(void)msg;
	return errbuf_set(e, ERR_INVALID, "signature: Ed25519 is not supported by this build");
#endif
}

/* ---- the request ---------------------------------------------------------- */

static int
csr_parse_der(const unsigned char *der, size_t der_len, struct csr *c, struct errbuf *e)
{
	struct der d = { der, der_len }, req, info, info_all, alg, oid, params, sig,
	    version, name, spki, attrs;
	const struct csr_sigalg *sa = NULL;
	struct csr_pubkey k;
	unsigned char digest[DIGEST_MAX];
	size_t digest_len = 0, i;
	int r;

	memset(&k, 0, sizeof(k));
	r = der_next(&d, TAG_SEQUENCE, &req, NULL, "request", e);
	if (r < 0)
		return r;
	r = der_end(&d, "request", e);
	if (r < 0)
		return r;
	r = der_next(&req, TAG_SEQUENCE, &info, &info_all, "request info", e);
	if (r < 0)
		return r;
	r = der_next(&req, TAG_SEQUENCE, &alg, NULL, "signature algorithm", e);
	if (r < 0)
		return r;
	r = der_bits(&req, &sig, "signature", e);
	if (r < 0)
		return r;
	r = der_end(&req, "request", e);
	if (r < 0)
		return r;

	r = der_next(&info, TAG_INTEGER, &version, NULL, "version", e);
	if (r < 0)
		return r;
	if (version.len != 1 || version.p[0] != 0)
		return errbuf_set(e, ERR_INVALID, "version: not v1 (0)");
	r = der_next(&info, TAG_SEQUENCE, &name, NULL, "subject", e);
	if (r < 0)
		return r;
	r = der_next(&info, TAG_SEQUENCE, &spki, NULL, "public key info", e);
	if (r < 0)
		return r;
	r = der_next(&info, TAG_ATTRIBUTES, &attrs, NULL, "attributes", e);
	if (r < 0)
		return r;
	r = der_end(&info, "request info", e);
	if (r < 0)
		return r;
	r = csr_subject(name, c, e);
	if (r < 0)
		return r;
	r = csr_spki(spki, &k, e);
	if (r < 0)
		return r;
	r = csr_attributes(attrs, c, e);
	if (r < 0)
		return r;

	r = der_next(&alg, TAG_OID, &oid, NULL, "signature algorithm", e);
	if (r < 0)
		return r;
	for (i = 0; i < sizeof(csr_sigalgs) / sizeof(csr_sigalgs[0]); i++)
		if (der_oid_is(&oid, csr_sigalgs[i].oid, csr_sigalgs[i].oid_len))
			sa = &csr_sigalgs[i];
	if (sa == NULL)
		return errbuf_set(e, ERR_INVALID, "signature algorithm: unsupported");
	/* RSA's parameters are NULL (RFC 4055 lets them be absent too); the
	 * others have none (RFC 5758, RFC 8410). */
	if (sa->kind == SIG_RSA && alg.len > 0) {
		r = der_next(&alg, TAG_NULL, &params, NULL, "signature algorithm parameters", e);
		if (r < 0)
			return r;
		if (params.len != 0)
			return errbuf_set(e, ERR_INVALID, "signature algorithm parameters: NULL with content");
	}
	r = der_end(&alg, "signature algorithm", e);
	if (r < 0)
		return r;
	if ((sa->kind == SIG_ECDSA) != (k.type == CSR_KEY_ECDSA_P256 || k.type == CSR_KEY_ECDSA_P384) ||
	    (sa->kind == SIG_RSA) != (k.type == CSR_KEY_RSA) ||
	    (sa->kind == SIG_ED25519) != (k.type == CSR_KEY_ED25519))
		return errbuf_set(e, ERR_INVALID, "signature algorithm: %s with a %s key",
		    sa->name, csr_key_name(k.type));

	if (sa->kind == SIG_ED25519)
		r = csr_verify_ed25519(&k, &sig, &info_all, e);
	else if ((r = csr_digest(sa->hash, &info_all, digest, &digest_len)) < 0)
		r = errbuf_set(e, r, "signature: cannot hash the request");
	else if (sa->kind == SIG_ECDSA)
		r = csr_verify_ecdsa(&k, &sig, digest, digest_len, e);
	else
		r = csr_verify_rsa(&k, sa, &sig, digest, digest_len, e);
	if (r < 0)
		return r;
	c->key_type = k.type;
	c->key_bits = k.bits;
	c->sig_alg = sa->name;
	return 0;
}

int
csr_parse(const char *pem, size_t len, struct csr *ret, struct errbuf *e)
{
	struct csr c;
	unsigned char *der = NULL;
	size_t der_len = 0;
	int r;

	memset(&c, 0, sizeof(c));
	r = csr_pem_decode(pem, len, &der, &der_len, e);
	if (r < 0)
		return r;
	r = csr_parse_der(der, der_len, &c, e);
	free(der);
	if (r < 0) {
		csr_free(&c);
		return r;
	}
	*ret = c;
	return 0;
}

void
csr_free(struct csr *c)
{
	size_t i;

	if (c == NULL)
		return;
	free(c->cn);
	for (i = 0; i < c->n_orgs; i++)
		free(c->orgs[i]);
	free(c->orgs);
	for (i = 0; i < c->n_sans; i++)
		free(c->sans[i].value);
	free(c->sans);
	memset(c, 0, sizeof(*c));
}

int
csr_check_node_subject(const struct csr *c, const char *node, struct errbuf *e)
{
	static const char prefix[] = "system:node:";

	if (c->cn == NULL)
		return errbuf_set(e, ERR_INVALID, "subject: no CN");
	if (strncmp(c->cn, prefix, sizeof(prefix) - 1) != 0 ||
	    strcmp(c->cn + sizeof(prefix) - 1, node) != 0)
		return errbuf_set(e, ERR_INVALID, "subject: CN %s is not system:node:%s", c->cn, node);
	if (c->n_orgs != 1 || strcmp(c->orgs[0], "system:nodes") != 0)
		return errbuf_set(e, ERR_INVALID, "subject: O is not exactly system:nodes");
	if (c->n_subject_attrs != 2)
		return errbuf_set(e, ERR_INVALID,
		    "subject: attributes other than CN and O (%zu in all)", c->n_subject_attrs);
	return 0;
}

void
csr_thread_done(void)
{
#ifdef FP_ECC
	wc_ecc_fp_free();
#endif
}

const char *
csr_key_name(int key_type)
{
	switch (key_type) {
	case CSR_KEY_ECDSA_P256: return "ECDSA P-256";
	case CSR_KEY_ECDSA_P384: return "ECDSA P-384";
	case CSR_KEY_RSA: return "RSA";
	case CSR_KEY_ED25519: return "Ed25519";
	}
	return "unknown";
}

const char *
csr_san_type_name(int type)
{
	switch (type) {
	case CSR_SAN_DNS: return "DNS";
	case CSR_SAN_IP: return "IP";
	case CSR_SAN_EMAIL: return "email";
	case CSR_SAN_URI: return "URI";
	}
	return "unknown";
}
