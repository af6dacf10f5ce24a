/* lbrequest.c - a Service's annotations and fields as an allocator request. */
#include "lbrequest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "base/xalloc.h"

#define LBREQUEST_SELECTOR_MAX (256 * 1024) /* bytes: a selector's text (annotations'
                                               own cap: the API server's 256 KiB) */

static const char *const lbrequest_ips_keys[] = {
	LBREQUEST_IPS,
	"metallb.io/loadBalancerIPs",
	"metallb.universe.tf/loadBalancerIPs",
	LBREQUEST_KUBE_VIP_IPS,
	NULL,
};

static const char *const lbrequest_pool_keys[] = {
	LBREQUEST_POOL,
	"metallb.io/address-pool",
	"metallb.universe.tf/address-pool",
	NULL,
};

static const char *const lbrequest_shared_keys[] = {
	LBREQUEST_SHARED,
	"metallb.io/allow-shared-ip",
	"metallb.universe.tf/allow-shared-ip",
	NULL,
};

const char *
lbrequest_annotation(const struct cloud_service *svc, const char *key)
{
	for (size_t i = 0; i < svc->n_annotations; i++)
		if (svc->annotations[i].key != NULL && strcmp(svc->annotations[i].key, key) == 0)
			return svc->annotations[i].value;
	return NULL;
}

/* lbrequest_blank tells whether v is absent, empty or only spaces: such an
 * annotation asks for nothing. */
static int
lbrequest_blank(const char *v)
{
	if (v == NULL)
		return 1;
	while (*v == ' ' || *v == '\t')
		v++;
	return *v == '\0';
}

/* lbrequest_first returns the first non-blank annotation of keys (its key
 * in *ret_key), skipping skip; or NULL. */
static const char *
lbrequest_first(const struct cloud_service *svc, const char *const *keys, const char *skip,
    const char **ret_key)
{
	for (size_t i = 0; keys[i] != NULL; i++) {
		const char *v;
		if (skip != NULL && strcmp(keys[i], skip) == 0)
			continue;
		if (!lbrequest_blank(v = lbrequest_annotation(svc, keys[i]))) {
			*ret_key = keys[i];
			return v;
		}
	}
	return NULL;
}

/* lbrequest_ips parses the requested addresses v (from r->ips_from): one
 * per family, comma-separated. */
static int
lbrequest_ips(struct lbrequest *r, const char *v, struct errbuf *e)
{
	const char *where = r->ips_from;
	const char *p = v;
	struct netaddr got[IPAM_REQUESTS_MAX];
	size_t n = 0;

	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char one[NETADDR_TEXT_MAX];

		while (len > 0 && (*p == ' ' || *p == '\t')) {
			p++;
			len--;
		}
		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len == 0 || len >= sizeof(one))
			goto bad;
		memcpy(one, p, len);
		one[len] = '\0';
		if (n == IPAM_REQUESTS_MAX)
			return errbuf_set(e, ERR_INVALID, "service %s: %s \"%.200s\": more than one "
			    "address per family", r->key, where, v);
		if (netaddr_parse(one, &got[n]) < 0)
			return errbuf_set(e, ERR_INVALID, "service %s: %s \"%.200s\": \"%s\" is not "
			    "an IP address", r->key, where, v, one);
		if (n == 1 && got[0].family == got[1].family)
			return errbuf_set(e, ERR_INVALID, "service %s: %s \"%.200s\": more than one "
			    "address per family", r->key, where, v);
		n++;
		if (end == NULL)
			break;
		p = end + 1;
	}
	for (size_t i = 0; i < n; i++) {
		netaddr_format(&got[i], r->requested_text[i]);
		r->requested[i] = r->requested_text[i];
	}
	r->svc.n_requested = n;
	return 0;
bad:
	return errbuf_set(e, ERR_INVALID, "service %s: %s \"%.200s\": want IP addresses, "
	    "comma-separated, one per family", r->key, where, v);
}

static int
lbrequest_families(struct lbrequest *r, const struct cloud_service *svc, struct errbuf *e)
{
	const char *pol = svc->ip_family_policy;
	size_t n = 0;

	if (pol == NULL || *pol == '\0' || strcmp(pol, "SingleStack") == 0)
		r->svc.policy = IPAM_SINGLE_STACK;
	else if (strcmp(pol, "PreferDualStack") == 0)
		r->svc.policy = IPAM_PREFER_DUAL_STACK;
	else if (strcmp(pol, "RequireDualStack") == 0)
		r->svc.policy = IPAM_REQUIRE_DUAL_STACK;
	else
		return errbuf_set(e, ERR_INVALID, "service %s: spec.ipFamilyPolicy \"%.64s\": want "
		    "SingleStack, PreferDualStack or RequireDualStack", r->key, pol);
	if (svc->n_ip_families > IPAM_FAMILIES)
		return errbuf_set(e, ERR_INVALID, "service %s: spec.ipFamilies: more than two",
		    r->key);
	for (size_t i = 0; i < svc->n_ip_families; i++) {
		const char *f = svc->ip_families[i] ? svc->ip_families[i] : "";
		int fam = strcmp(f, "IPv4") == 0 ? 4 : strcmp(f, "IPv6") == 0 ? 6 : 0;
		if (fam == 0)
			return errbuf_set(e, ERR_INVALID, "service %s: spec.ipFamilies[%zu] \"%.64s\": "
			    "want IPv4 or IPv6", r->key, i, f);
		if (n == 1 && r->svc.families[0] == fam)
			return errbuf_set(e, ERR_INVALID, "service %s: spec.ipFamilies lists %s twice",
			    r->key, f);
		r->svc.families[n++] = fam;
	}
	/* the API server always sets ipFamilies; without them, the families of
	 * the requested addresses (one each), else IPv4 */
	if (n == 0) {
		for (size_t i = 0; i < r->svc.n_requested; i++) {
			struct netaddr a = { .family = 4 };
			(void)netaddr_parse(r->requested[i], &a);  /* parsed before */
			r->svc.families[n++] = a.family;
		}
		if (n == 0)
			r->svc.families[n++] = 4;
	}
	r->svc.n_families = n;
	return 0;
}

static int
lbrequest_kv_cmp(const void *a, const void *b)
{
	const struct cloud_kv *x = *(const struct cloud_kv *const *)a;
	const struct cloud_kv *y = *(const struct cloud_kv *const *)b;

	return strcmp(x->key ? x->key : "", y->key ? y->key : "");
}

/* lbrequest_selector writes spec.selector sorted by key, so two Services
 * with the same selector compare equal whatever order the API gave. */
static char *
lbrequest_selector(const struct cloud_service *svc)
{
	const struct cloud_kv **kv = xcalloc(svc->n_selector + 1, sizeof(*kv));
	struct dynbuf b;
	char *out;

	for (size_t i = 0; i < svc->n_selector; i++)
		kv[i] = &svc->selector[i];
	qsort(kv, svc->n_selector, sizeof(*kv), lbrequest_kv_cmp);
	dynbuf_init(&b, LBREQUEST_SELECTOR_MAX);
	for (size_t i = 0; i < svc->n_selector; i++)
		if (dynbuf_addf(&b, "%s%s=%s", i ? "," : "", kv[i]->key ? kv[i]->key : "",
		    kv[i]->value ? kv[i]->value : "") < 0)
			break;  /* past any valid object's size: compares unequal enough */
	out = dynbuf_take(&b, NULL);
	free(kv);
	return out;
}

int
lbrequest_build(const struct cloud_service *svc, int kube_vip_output, struct lbrequest *ret,
    struct errbuf *e)
{
	struct lbrequest *r = ret;
	const char *where = NULL, *v;
	int rc = 0, fr;

	memset(r, 0, sizeof(*r));
	r->key = xasprintf("%s/%s", svc->namespace_ ? svc->namespace_ : "",
	    svc->name ? svc->name : "");
	r->svc.key = r->key;
	r->svc.namespace = svc->namespace_ ? svc->namespace_ : "";
	r->svc.created = svc->creation_timestamp;
	r->svc.served = svc->served;
	for (size_t i = 0; svc->status != NULL && i < svc->status->n_ingress &&
	    r->svc.n_held < CLOUD_LB_INGRESS_MAX; i++)
		if (svc->status->ingress[i].ip[0] != '\0')
			r->held[r->svc.n_held++] = svc->status->ingress[i].ip;
	r->svc.held = r->held;
	r->svc.requested = r->requested;
	if ((v = lbrequest_first(svc, lbrequest_ips_keys,
	    kube_vip_output ? LBREQUEST_KUBE_VIP_IPS : NULL, &where)) != NULL) {
		snprintf(r->ips_from, sizeof(r->ips_from), "annotation %s", where);
		rc = lbrequest_ips(r, v, e);
	} else if (!lbrequest_blank(svc->load_balancer_ip)) {
		snprintf(r->ips_from, sizeof(r->ips_from), "spec.loadBalancerIP");
		rc = lbrequest_ips(r, svc->load_balancer_ip, e);
	}
	r->svc.pool = lbrequest_first(svc, lbrequest_pool_keys, NULL, &where);
	r->svc.sharing_key = lbrequest_first(svc, lbrequest_shared_keys, NULL, &where);
	if (svc->n_ports > 0) {
		r->ports = xcalloc(svc->n_ports, sizeof(*r->ports));
		for (size_t i = 0; i < svc->n_ports; i++) {
			r->ports[i].port = svc->ports[i].port;
			snprintf(r->ports[i].protocol, sizeof(r->ports[i].protocol), "%s",
			    svc->ports[i].protocol ? svc->ports[i].protocol : "TCP");
		}
	}
	r->svc.ports = r->ports;
	r->svc.n_ports = svc->n_ports;
	r->svc.etp_local = svc->external_traffic_policy != NULL &&
	    strcmp(svc->external_traffic_policy, "Local") == 0;
	r->selector = lbrequest_selector(svc);
	r->svc.selector = r->selector;
	fr = lbrequest_families(r, svc, rc < 0 ? NULL : e);
	if (rc == 0)
		rc = fr;
	if (fr < 0 && r->svc.n_families == 0) {
		r->svc.families[0] = 4;
		r->svc.n_families = 1;
	}
	/* an annotation read here that holds a NUL counts as absent above; the
	 * request is refused naming it, first of all faults */
	if ((fr = cloud_service_nul_check(svc, lbrequest_ips_keys, NULL, e)) < 0 ||
	    (fr = cloud_service_nul_check(svc, lbrequest_pool_keys, NULL, e)) < 0 ||
	    (fr = cloud_service_nul_check(svc, lbrequest_shared_keys, NULL, e)) < 0)
		rc = fr;
	return rc;
}

void
lbrequest_free(struct lbrequest *r)
{
	free(r->key);
	free(r->ports);
	free(r->selector);
	r->key = NULL;
	r->ports = NULL;
	r->selector = NULL;
}
