/* fuzz_metadata.c - libFuzzer harness for every metadata answer parser. The
 * first byte picks the dialect (EC2, GCE, Azure, OpenStack service,
 * OpenStack config drive, DigitalOcean, Hetzner); the rest, split at NUL
 * bytes, is the sequence of answers: the n-th request gets the n-th part (a
 * part starting with 0x04 is a 404), and requests past the last part fail.
 * A success must yield a usable instance; a failure a message and no
 * instance. */
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "metadata/azure.h"
#include "metadata/build.h"
#include "metadata/digitalocean.h"
#include "metadata/ec2.h"
#include "metadata/format.h"
#include "metadata/gce.h"
#include "metadata/hetzner.h"
#include "metadata/openstack.h"
#include "base/xalloc.h"

#define FUZZ_PARTS_MAX 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_answers {
	const char *part[FUZZ_PARTS_MAX];
	size_t len[FUZZ_PARTS_MAX];
	size_t n, next;
};

static int
fuzz_get(void *arg, const char *path, int optional, struct md_answer *ret,
    struct errbuf *e)
{
	struct fuzz_answers *f = arg;
	struct md_answer a;
	const char *p;
	size_t len;

	if (f->next >= f->n)
		return errbuf_set(e, ERR_TRANSIENT, "GET %s: no answer", path);
	p = f->part[f->next];
	len = f->len[f->next];
	f->next++;
	memset(&a, 0, sizeof(a));
	snprintf(a.where, sizeof(a.where), "GET %s", path);
	if (len > 0 && p[0] == 0x04) {
		if (!optional)
			return errbuf_set(e, ERR_INVALID, "%s: HTTP 404", a.where);
		a.status = 404;
		len = 0;
	} else {
		a.status = 200;
	}
	a.body = xmemdup(p, len);
	a.len = len;
	*ret = a;
	return 0;
}

static void
fuzz_check_field(const char *s, size_t cap)
{
	if (memchr(s, '\0', cap) == NULL)
		abort();
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			abort();
}

static void
fuzz_check(const struct md_instance *in)
{
	static const char *const schemes[] = { "", "aws:///", "gce://", "azure:///subscriptions/",
		"openstack:///", "digitalocean://", "hcloud://" };
	struct errbuf e;
	char *out = xmalloc(MD_FORMAT_OUT_MAX);
	struct json_object *o;
	int n;

	if (in->cloud <= MD_CLOUD_UNKNOWN || in->cloud > MD_CLOUD_HETZNER ||
	    strncmp(in->provider_id, schemes[in->cloud], strlen(schemes[in->cloud])) != 0 ||
	    in->instance_id[0] == '\0' || in->n_addresses > MD_ADDRS_MAX)
		abort();
	fuzz_check_field(in->provider_id, sizeof(in->provider_id));
	fuzz_check_field(in->instance_id, sizeof(in->instance_id));
	fuzz_check_field(in->name, sizeof(in->name));
	fuzz_check_field(in->hostname, sizeof(in->hostname));
	fuzz_check_field(in->instance_type, sizeof(in->instance_type));
	fuzz_check_field(in->zone, sizeof(in->zone));
	fuzz_check_field(in->region, sizeof(in->region));
	for (const char *c = in->provider_id; *c; c++)
		if (*c == ' ' || *c == '*' || *c == '?' || *c == '[' || *c == '\'' || *c == '"')
			abort();
	for (size_t i = 0; i < in->n_addresses; i++) {
		fuzz_check_field(in->addresses[i].address, sizeof(in->addresses[i].address));
		if ((in->addresses[i].type == MD_ADDR_INTERNAL_IP ||
		    in->addresses[i].type == MD_ADDR_EXTERNAL_IP) &&
		    md_build_ip_family(in->addresses[i].address) == 0)
			abort();
	}
	if ((n = md_format_write(in, MD_FORMAT_JSON, out, MD_FORMAT_OUT_MAX, &e)) < 0)
		abort();
	/* what bootccm metadata prints is JSON by the strict standard */
	if (jsonx_parse(out, (size_t)n, JSONX_DEPTH_MAX, &o, NULL) < 0)
		abort();
	json_object_put(o);
	if (md_format_write(in, MD_FORMAT_ENV, out, MD_FORMAT_OUT_MAX, &e) < 0)
		abort();
	if ((n = md_format_write(in, MD_FORMAT_KUBELET_FLAGS, out, MD_FORMAT_OUT_MAX, &e)) < 0)
		abort();
	/* one line of words: blanks only between flags */
	for (int i = 0; i < n - 1; i++)
		if (out[i] == '\n' || out[i] == '\t' || out[i] == '\'' || out[i] == '"' ||
		    (out[i] == ' ' && strncmp(out + i + 1, "--", 2) != 0))
			abort();
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_answers f;
	struct md_getter g = { fuzz_get, &f };
	struct md_instance in;
	struct errbuf e;
	const char *p, *end;
	int r;

	if (size < 1)
		return 0;
	memset(&f, 0, sizeof(f));
	p = (const char *)data + 1;
	end = (const char *)data + size;
	while (p <= end && f.n < FUZZ_PARTS_MAX) {
		const char *z = memchr(p, '\0', (size_t)(end - p));
		if (z == NULL)
			z = end;
		f.part[f.n] = p;
		f.len[f.n] = (size_t)(z - p);
		f.n++;
		p = z + 1;
	}
	memset(&in, 0, sizeof(in));
	e.msg[0] = '\0';
	switch (data[0] % 7) {
	case 0: r = md_ec2_build(&g, &in, &e); break;
	case 1: r = md_gce_build(&g, &in, &e); break;
	case 2: r = md_azure_build(&g, &in, &e); break;
	case 3: r = md_openstack_build(&g, MD_SOURCE_SERVICE, &in, &e); break;
	case 4: r = md_openstack_build(&g, MD_SOURCE_CONFIG_DRIVE, &in, &e); break;
	case 5: r = md_digitalocean_build(&g, &in, &e); break;
	default: r = md_hetzner_build(&g, &in, &e); break;
	}
	if (r < 0) {
		if (e.msg[0] == '\0')
			abort();
		return 0;
	}
	fuzz_check(&in);
	return 0;
}
