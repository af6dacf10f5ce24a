/* ec2.c - EC2 IMDSv2: token, then the leaves the AWS cloud provider reads
 * (instance-id, instance-type, placement, each interface's local-ipv4s in
 * device-number order, public-ipv4, local-hostname, public-hostname). */
#include "metadata/ec2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "metadata/build.h"
#include "base/numparse.h"

#define MD_EC2_MD "/latest/meta-data/"
#define MD_EC2_MAC_MAX 18          /* "06:17:04:d7:26:09" and the NUL */
#define MD_EC2_DEVICE_MAX 9999     /* a device-number beyond this is nonsense */

struct md_ec2 {
	struct md_session s;
	char token[MD_EC2_TOKEN_MAX];
	int have_token;
	int retokens;
};

struct md_ec2_nic {
	char mac[MD_EC2_MAC_MAX];
	long device;
};

static int
md_ec2_token(struct md_ec2 *x, struct errbuf *e)
{
	static const char *const ttl[] = {
		"X-aws-ec2-metadata-token-ttl-seconds: " MD_EC2_TOKEN_TTL, NULL };
	struct md_answer a;
	const char *v;
	size_t len;
	long status;
	int r;

	x->have_token = 0;
	if ((r = md_session_request(&x->s, "PUT", "/latest/api/token", ttl, &status, &a,
	    e)) < 0)
		return r;
	if (status != 200) {
		r = md_session_status_err(&a, status, e);
		if (status == 403 || status == 404 || status == 405)
			errbuf_prefix(e, r, "no IMDSv2 session token (IMDSv1 is not used)");
		goto out;
	}
	md_build_trim(a.body, a.len, &v, &len);
	/* the whole answer is the secret, registered before it is checked: a
	 * refusal quotes what comes before a bad byte, and a service may echo
	 * it later; no output path prints any of it */
	log_add_secret_len(v, len);
	/* the token goes into a request header: no spaces, no CR or LF */
	if ((r = md_build_set(&a, "the session token", x->token, sizeof(x->token), v, len,
	    MD_V_WORD | MD_V_REQUIRED, e)) < 0)
		goto out;
	x->have_token = 1;
out:
	explicit_bzero(a.body, a.len);
	md_session_answer_free(&a);
	return r;
}

/* md_ec2_get is the getter: every GET carries the token; a 401 gets one
 * fresh token and one more try. */
static int
md_ec2_get(void *arg, const char *path, int optional, struct md_answer *ret,
    struct errbuf *e)
{
	struct md_ec2 *x = arg;
	char hdr[MD_EC2_TOKEN_MAX + 40];
	const char *extra[] = { hdr, NULL };
	struct md_answer a;
	long status;
	int r, fresh = 0;

	for (;;) {
		if (!x->have_token) {
			if ((r = md_ec2_token(x, e)) < 0)
				goto out;
			fresh = 1;
		}
		snprintf(hdr, sizeof(hdr), "X-aws-ec2-metadata-token: %s", x->token);
		if ((r = md_session_request(&x->s, "GET", path, extra, &status, &a, e)) < 0)
			goto out;
		if (status != 401 || fresh || x->retokens >= MD_EC2_RETOKENS_MAX)
			break;
		/* the token expired or the service restarted: one fresh token */
		md_session_answer_free(&a);
		x->have_token = 0;
		x->retokens++;
	}
	if (status >= 200 && status < 300) {
		a.status = 200;
	} else if (status == 404 && optional) {
		a.status = 404;
		a.body[0] = '\0';
		a.len = 0;
	} else {
		r = md_session_status_err(&a, status, e);
		if (status == 401)
			errbuf_prefix(e, r, "the session token was refused");
		md_session_answer_free(&a);
		goto out;
	}
	*ret = a;
	r = 0;
out:
	explicit_bzero(hdr, sizeof(hdr));
	return r;
}

/* md_ec2_mac checks one entry of network/interfaces/macs/ ("mac/") and
 * stores the MAC: it becomes part of later paths, so only hex and colons. */
static int
md_ec2_mac(const struct md_answer *a, const char *v, size_t len, char *dst,
    struct errbuf *e)
{
	int r;

	if (len > 0 && v[len - 1] == '/')
		len--;
	if ((r = md_build_check(a, "a network interface", v, len, MD_V_WORD, e)) < 0)
		return r;
	if (len == 0 || len >= MD_EC2_MAC_MAX)
		goto bad;
	for (size_t i = 0; i < len; i++) {
		char c = v[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
		    (c >= 'A' && c <= 'F') || c == ':'))
			goto bad;
	}
	memcpy(dst, v, len);
	dst[len] = '\0';
	return 0;
bad:
	return errbuf_set(e, ERR_INVALID, "%s: \"%.*s\" is not a MAC address", a->where,
	    (int)(len > 40 ? 40 : len), v);
}

static int
md_ec2_region(const struct md_getter *g, struct md_instance *in, struct errbuf *e)
{
	struct md_answer a;
	struct json_object *doc = NULL;
	const char *v;
	size_t len;
	int r;

	r = md_build_leaf(g, MD_EC2_MD "placement/region", 1, "placement/region",
	    in->region, sizeof(in->region), MD_V_WORD | MD_V_REQUIRED, e);
	if (r <= 0)
		return r;
	/* placement/region is newer (2020-08-24) than the identity document */
	memset(&a, 0, sizeof(a));
	if ((r = g->get(g->arg, "/latest/dynamic/instance-identity/document", 0, &a, e)) < 0)
		return r;
	if ((r = md_build_json(&a, &doc, e)) < 0)
		goto out;
	if ((r = md_build_json_str(&a, doc, "", "region", 1, &v, &len, e)) < 0)
		goto out;
	r = md_build_set(&a, "region", in->region, sizeof(in->region), v, len,
	    MD_V_WORD | MD_V_REQUIRED, e);
out:
	json_object_put(doc);
	md_session_answer_free(&a);
	return r;
}

static int
md_ec2_nic_cmp(const void *pa, const void *pb)
{
	const struct md_ec2_nic *a = pa, *b = pb;

	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	return strcmp(a->mac, b->mac);
}

/* md_ec2_nics lists the interfaces and orders them by device-number (the
 * listing is in MAC order, not device order). */
static int
md_ec2_nics(const struct md_getter *g, struct md_ec2_nic *nics, size_t *ret_n,
    struct errbuf *e)
{
	struct md_answer a;
	const char *pos, *end, *v;
	char path[128], num[16];
	size_t len, n = 0;
	int64_t device;
	int r;

	memset(&a, 0, sizeof(a));
	if ((r = g->get(g->arg, MD_EC2_MD "network/interfaces/macs/", 0, &a, e)) < 0)
		return r;
	pos = a.body;
	end = a.body + a.len;
	while (md_build_line(&pos, end, &v, &len)) {
		if (len == 0)
			continue;
		if (n >= MD_EC2_MACS_MAX) {
			r = errbuf_set(e, ERR_INVALID, "%s: more than %d interfaces", a.where,
			    MD_EC2_MACS_MAX);
			goto out;
		}
		if ((r = md_ec2_mac(&a, v, len, nics[n].mac, e)) < 0)
			goto out;
		n++;
	}
	if (n == 0) {
		r = errbuf_set(e, ERR_INVALID, "%s: no network interfaces", a.where);
		goto out;
	}
	md_session_answer_free(&a);
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), MD_EC2_MD "network/interfaces/macs/%s/device-number",
		    nics[i].mac);
		if ((r = md_build_leaf(g, path, 0, "device-number", num, sizeof(num),
		    MD_V_WORD | MD_V_REQUIRED, e)) < 0)
			return r;
		if ((num[0] == '0' && num[1] != '\0') ||
		    numparse(num, 0, 0, MD_EC2_DEVICE_MAX, &device, NULL) < 0)
			return errbuf_set(e, ERR_INVALID, "%s: device-number \"%s\" is not a number"
			    " from 0 to %d", path, num, MD_EC2_DEVICE_MAX);
		nics[i].device = (int)device;
	}
	qsort(nics, n, sizeof(nics[0]), md_ec2_nic_cmp);
	*ret_n = n;
	return 0;
out:
	md_session_answer_free(&a);
	return r;
}

/* md_ec2_list adds each line of path (a multi-valued leaf) as an address. */
static int
md_ec2_list(const struct md_getter *g, const char *path, const char *field,
    enum md_addr_type type, struct md_instance *in, struct errbuf *e)
{
	struct md_answer a;
	const char *pos, *end, *v;
	size_t len;
	int r;

	memset(&a, 0, sizeof(a));
	if ((r = g->get(g->arg, path, 1, &a, e)) < 0)
		return r;
	pos = a.body;
	end = a.body + a.len;
	while (r == 0 && md_build_line(&pos, end, &v, &len))
		r = md_build_addr(in, &a, field, type, v, len, e);
	md_session_answer_free(&a);
	return r;
}

/* md_ec2_hostnames adds local-hostname the AWS provider's way: its first
 * word is the Hostname and an InternalDNS name; each further word (a DHCP
 * option set's extra domain) gives "<first label>.<word>" as InternalDNS. */
static int
md_ec2_hostnames(const struct md_getter *g, struct md_instance *in, struct errbuf *e)
{
	struct md_answer a;
	const char *p, *end, *w, *first = NULL;
	size_t flen = 0, label;
	int r;

	memset(&a, 0, sizeof(a));
	if ((r = g->get(g->arg, MD_EC2_MD "local-hostname", 1, &a, e)) < 0)
		return r;
	p = a.body;
	end = a.body + a.len;
	while (r == 0 && p < end) {
		char dns[MD_NAME_MAX];
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
			p++;
		w = p;
		while (p < end && !(*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
			p++;
		if (p == w)
			break;
		if (first == NULL) {
			first = w;
			flen = (size_t)(p - w);
			if ((r = md_build_set(&a, "local-hostname", in->hostname,
			    sizeof(in->hostname), w, flen, MD_V_WORD, e)) < 0)
				break;
			if ((r = md_build_addr(in, &a, "local-hostname", MD_ADDR_HOSTNAME, w,
			    flen, e)) < 0)
				break;
			r = md_build_addr(in, &a, "local-hostname", MD_ADDR_INTERNAL_DNS, w,
			    flen, e);
			continue;
		}
		for (label = 0; label < flen && first[label] != '.'; label++)
			;
		if ((size_t)snprintf(dns, sizeof(dns), "%.*s.%.*s", (int)label, first,
		    (int)(p - w), w) >= sizeof(dns)) {
			r = errbuf_set(e, ERR_INVALID, "%s: a host name is too long", a.where);
			break;
		}
		r = md_build_addr(in, &a, "local-hostname", MD_ADDR_INTERNAL_DNS, dns,
		    strlen(dns), e);
	}
	md_session_answer_free(&a);
	return r;
}

int
md_ec2_build(const struct md_getter *g, struct md_instance *in, struct errbuf *e)
{
	struct md_ec2_nic nics[MD_EC2_MACS_MAX];
	char path[128], ip[MD_NAME_MAX];
	size_t n = 0;
	int r;

	in->cloud = MD_CLOUD_EC2;
	in->source = MD_SOURCE_SERVICE;
	if ((r = md_build_leaf(g, MD_EC2_MD "instance-id", 0, "instance-id",
	    in->instance_id, sizeof(in->instance_id), MD_V_SEGMENT | MD_V_REQUIRED, e)) < 0 ||
	    (r = md_build_leaf(g, MD_EC2_MD "instance-type", 0, "instance-type",
	    in->instance_type, sizeof(in->instance_type), MD_V_WORD | MD_V_REQUIRED, e)) < 0 ||
	    (r = md_build_leaf(g, MD_EC2_MD "placement/availability-zone", 0,
	    "placement/availability-zone", in->zone, sizeof(in->zone),
	    MD_V_SEGMENT | MD_V_REQUIRED, e)) < 0 ||
	    (r = md_ec2_region(g, in, e)) < 0)
		return r;
	{
		struct md_answer where = { .where = "instance-id and availability zone" };
		if ((r = md_build_provider_id(in, &where, e, "aws:///%s/%s", in->zone,
		    in->instance_id)) < 0)
			return r;
	}
	if ((r = md_ec2_nics(g, nics, &n, e)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), MD_EC2_MD "network/interfaces/macs/%s/local-ipv4s",
		    nics[i].mac);
		if ((r = md_ec2_list(g, path, "local-ipv4s", MD_ADDR_INTERNAL_IP, in, e)) < 0)
			return r;
	}
	r = md_build_leaf(g, MD_EC2_MD "public-ipv4", 1, "public-ipv4", ip, sizeof(ip),
	    MD_V_WORD, e);
	if (r < 0)
		return r;
	/* The AWS provider reports IPv6 only when configured for it (its node IP
	 * families default to IPv4), and a kubelet's --node-ip must be among the
	 * provider's addresses: the primary interface's IPv6 addresses count
	 * only on an instance without IPv4. */
	if (in->n_addresses == 0 && ip[0] == '\0' && nics[0].device == 0) {
		snprintf(path, sizeof(path), MD_EC2_MD "network/interfaces/macs/%s/ipv6s",
		    nics[0].mac);
		if ((r = md_ec2_list(g, path, "ipv6s", MD_ADDR_INTERNAL_IP, in, e)) < 0)
			return r;
	}
	if (ip[0]) {
		struct md_answer where = { .where = "GET " MD_EC2_MD "public-ipv4" };
		if ((r = md_build_addr(in, &where, "public-ipv4", MD_ADDR_EXTERNAL_IP, ip,
		    strlen(ip), e)) < 0)
			return r;
	}
	if ((r = md_ec2_hostnames(g, in, e)) < 0)
		return r;
	r = md_build_leaf(g, MD_EC2_MD "public-hostname", 1, "public-hostname", ip,
	    sizeof(ip), MD_V_WORD, e);
	if (r < 0)
		return r;
	if (r == 0) {
		struct md_answer where = { .where = "GET " MD_EC2_MD "public-hostname" };
		if ((r = md_build_addr(in, &where, "public-hostname", MD_ADDR_EXTERNAL_DNS, ip,
		    strlen(ip), e)) < 0)
			return r;
	}
	return 0;
}

static int
md_ec2_fetch_at(const struct md_config *cfg, const char *base, struct md_instance *in,
    struct errbuf *e)
{
	struct md_ec2 x;
	struct md_getter g = { md_ec2_get, &x };
	int r;

	memset(&x, 0, sizeof(x));
	if ((r = md_session_open(&x.s, cfg, base, NULL, e)) < 0)
		return r;
	r = md_ec2_build(&g, in, e);
	md_session_close(&x.s);
	explicit_bzero(x.token, sizeof(x.token));
	return r;
}

int
md_ec2_fetch(const struct md_config *cfg, struct md_instance *in, struct errbuf *e)
{
	int r;

	if (cfg->endpoint)
		return md_ec2_fetch_at(cfg, cfg->endpoint, in, e);
	r = md_ec2_fetch_at(cfg, MD_ENDPOINT_DEFAULT, in, e);
	if (r != ERR_NOT_FOUND)
		return r;
	/* IPv6-only Nitro instances reach IMDS only at its IPv6 address */
	r = md_ec2_fetch_at(cfg, MD_ENDPOINT_EC2_IPV6, in, e);
	if (r == ERR_NOT_FOUND)
		errbuf_set(e, r, "no metadata service at %s or %s: nothing accepts connections there",
		    MD_ENDPOINT_DEFAULT, MD_ENDPOINT_EC2_IPV6);
	return r;
}
