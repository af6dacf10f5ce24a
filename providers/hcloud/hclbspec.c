/* hclbspec.c - a Service's load balancer from its annotations, bootccm's
 * ownership record on a balancer, its status and the API bodies (the plan
 * from what is to what is wanted: hclbplan.c). */
#include "hclbspec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/clock.h"
#include "base/duration.h"
#include "base/dynbuf.h"
#include "base/hmap.h"
#include "base/labelsel.h"
#include "base/netaddr.h"
#include "base/numparse.h"
#include "base/xalloc.h"

#define HCLBSPEC_HC_INTERVAL 15        /* the API's health check defaults (s) */
#define HCLBSPEC_HC_TIMEOUT 10
#define HCLBSPEC_HC_RETRIES 3
#define HCLBSPEC_VALUE_MAX 1024        /* bytes of an annotation value read */
#define HCLBSPEC_RECORD_LABELS 64      /* labels one record may span */

/* --- annotations -------------------------------------------------------------- */

static const char *
hclbspec_annot(const struct cloud_service *svc, const char *name)
{
	size_t pl = strlen(HCLBSPEC_PREFIX);

	for (size_t i = 0; i < svc->n_annotations; i++) {
		const char *k = svc->annotations[i].key;
		if (k != NULL && strncmp(k, HCLBSPEC_PREFIX, pl) == 0 && strcmp(k + pl, name) == 0)
			return svc->annotations[i].value ? svc->annotations[i].value : "";
	}
	return NULL;
}

/* hclbspec_bad formats the error about annotation name's value v. */
static int
hclbspec_bad(const struct cloud_service *svc, const char *name, const char *v,
    const char *why, struct errbuf *e)
{
	return errbuf_set(e, ERR_INVALID, "Service %s/%s: annotation %s%s \"%.100s\": %s",
	    svc->namespace_ ? svc->namespace_ : "", svc->name ? svc->name : "", HCLBSPEC_PREFIX,
	    name, v, why);
}

/* hclbspec_bool reads a Go strconv.ParseBool value: 1/0, -1 when absent. */
static int
hclbspec_bool(const struct cloud_service *svc, const char *name, int *ret, struct errbuf *e)
{
	static const char *const yes[] = { "1", "t", "T", "TRUE", "true", "True", NULL };
	static const char *const no[] = { "0", "f", "F", "FALSE", "false", "False", NULL };
	const char *v = hclbspec_annot(svc, name);

	*ret = -1;
	if (v == NULL)
		return 0;
	for (int i = 0; yes[i]; i++)
		if (strcmp(v, yes[i]) == 0)
			return *ret = 1, 0;
	for (int i = 0; no[i]; i++)
		if (strcmp(v, no[i]) == 0)
			return *ret = 0, 0;
	return hclbspec_bad(svc, name, v, "not a boolean (true or false)", e);
}

/* hclbspec_int reads a decimal integer in [min, max]; -1 when absent. */
static int
hclbspec_int(const struct cloud_service *svc, const char *name, int64_t min, int64_t max,
    int64_t *ret, struct errbuf *e)
{
	const char *v = hclbspec_annot(svc, name);
	char why[64];
	int64_t n;

	*ret = -1;
	if (v == NULL)
		return 0;
	if (numparse(v, NUMPARSE_SIGN, min, max, &n, NULL) < 0) {
		snprintf(why, sizeof(why), "not an integer from %" PRId64 " to %" PRId64, min, max);
		return hclbspec_bad(svc, name, v, why, e);
	}
	*ret = n;
	return 0;
}

/* hclbspec_seconds reads a Go duration as whole seconds in [min, max]
 * (hcloud-go sends Duration.Seconds() cut to an int); -1 when absent. */
static int
hclbspec_seconds(const struct cloud_service *svc, const char *name, int64_t min, int64_t max,
    int64_t *ret, struct errbuf *e)
{
	const char *v = hclbspec_annot(svc, name);
	char why[80];
	int64_t ns;

	*ret = -1;
	if (v == NULL)
		return 0;
	if (duration_parse(v, &ns) < 0)
		return hclbspec_bad(svc, name, v, "not a duration (\"15s\", \"1m\")", e);
	if (ns / NS_PER_S < min || ns / NS_PER_S > max) {
		snprintf(why, sizeof(why), "must be from %" PRId64 "s to %" PRId64 "s", min, max);
		return hclbspec_bad(svc, name, v, why, e);
	}
	*ret = ns / NS_PER_S;
	return 0;
}

/* hclbspec_word reads one of words (case-insensitive, stored lower-case). */
static int
hclbspec_word(const struct cloud_service *svc, const char *name, const char *const *words,
    const char *why, char *ret, size_t size, int *ret_set, struct errbuf *e)
{
	const char *v = hclbspec_annot(svc, name);

	if (ret_set != NULL)
		*ret_set = 0;
	if (v == NULL)
		return 0;
	for (int i = 0; words[i]; i++)
		if (strcasecmp(v, words[i]) == 0) {
			snprintf(ret, size, "%s", words[i]);
			if (ret_set != NULL)
				*ret_set = 1;
			return 0;
		}
	return hclbspec_bad(svc, name, v, why, e);
}

/* hclbspec_plain reads a short printable value without spaces into ret;
 * "" when absent (and *ret_set 0). */
static int
hclbspec_plain(const struct cloud_service *svc, const char *name, char *ret, size_t size,
    int *ret_set, struct errbuf *e)
{
	const char *v = hclbspec_annot(svc, name);

	if (ret_set != NULL)
		*ret_set = v != NULL;
	ret[0] = '\0';
	if (v == NULL)
		return 0;
	if (strlen(v) >= size)
		return hclbspec_bad(svc, name, v, "too long", e);
	for (const char *p = v; *p; p++)
		if (*p <= ' ' || *p >= 0x7f)
			return hclbspec_bad(svc, name, v, "no spaces or control characters allowed", e);
	memcpy(ret, v, strlen(v) + 1);
	return 0;
}

/* hclbspec_dup copies a printable value to the heap (NULL when absent). */
static int
hclbspec_dup(const struct cloud_service *svc, const char *name, char **ret, struct errbuf *e)
{
	char buf[HCLBSPEC_VALUE_MAX];
	int set, r;

	if ((r = hclbspec_plain(svc, name, buf, sizeof(buf), &set, e)) < 0)
		return r;
	*ret = set ? xstrdup(buf) : NULL;
	return 0;
}

/* hclbspec_dns_name checks a DNS name (a DNS-1123 subdomain). */
static int
hclbspec_dns_name(const char *s)
{
	return strlen(s) < CLOUD_ADDR_MAX && labelsel_dns_subdomain_ok(s);
}

static const char *const hclbspec_protocols[] = { "tcp", "http", "https", NULL };

/* hclbspec_health reads the health-check-* family. */
static int
hclbspec_health(const struct cloud_service *svc, struct hclbspec *s, struct errbuf *e)
{
	struct hclbspec_hc *hc = &s->hc;
	int set, tls, r;
	const char *v;

	if ((r = hclbspec_word(svc, "health-check-protocol", hclbspec_protocols,
	    "not tcp, http or https", hc->protocol, sizeof(hc->protocol), &set, e)) < 0 ||
	    (r = hclbspec_int(svc, "health-check-port", 1, 65535, &hc->port, e)) < 0 ||
	    (r = hclbspec_seconds(svc, "health-check-interval", 3, 60, &hc->interval, e)) < 0 ||
	    (r = hclbspec_seconds(svc, "health-check-timeout", 1, 60, &hc->timeout, e)) < 0 ||
	    (r = hclbspec_int(svc, "health-check-retries", 0, 5, &hc->retries, e)) < 0 ||
	    (r = hclbspec_dup(svc, "health-check-http-domain", &hc->domain, e)) < 0 ||
	    (r = hclbspec_dup(svc, "health-check-http-path", &hc->path, e)) < 0 ||
	    (r = hclbspec_bool(svc, "health-check-http-validate-certificate", &tls, e)) < 0 ||
	    (r = hclbspec_dup(svc, "http-status-codes", &hc->status_codes, e)) < 0)
		return r;
	hc->tls = tls;
	/* as the official CCM: the check follows the service's protocol, and is
	 * configured only when some health-check annotation is given */
	hc->set = set || hc->port >= 0 || hc->interval >= 0 || hc->timeout >= 0 ||
	    hc->retries >= 0;
	if (!set)
		snprintf(hc->protocol, sizeof(hc->protocol), "%s", s->protocol);
	if (hc->port < 0)
		hc->port = 0;
	if (hc->path != NULL && hc->path[0] != '/')
		return hclbspec_bad(svc, "health-check-http-path", hc->path, "must start with /", e);
	if (hc->domain != NULL && !hclbspec_dns_name(hc->domain))
		return hclbspec_bad(svc, "health-check-http-domain", hc->domain, "not a DNS name", e);
	if ((v = hc->status_codes) != NULL)
		for (const char *p = v; *p; p++)
			if (!((*p >= '0' && *p <= '9') || *p == '?' || *p == ','))
				return hclbspec_bad(svc, "http-status-codes", v, "not a list of status "
				    "codes (\"2??,301\")", e);
	return 0;
}

/* hclbspec_http reads the http-* options of http and https services. */
static int
hclbspec_http(const struct cloud_service *svc, struct hclbspec *s, struct errbuf *e)
{
	const char *v;
	int r;

	if ((r = hclbspec_dup(svc, "http-cookie-name", &s->cookie_name, e)) < 0 ||
	    (r = hclbspec_seconds(svc, "http-cookie-lifetime", 1, INT32_MAX, &s->cookie_lifetime,
	    e)) < 0 ||
	    (r = hclbspec_bool(svc, "http-redirect-http", &s->redirect_http, e)) < 0 ||
	    (r = hclbspec_bool(svc, "http-sticky-sessions", &s->sticky_sessions, e)) < 0 ||
	    (r = hclbspec_dup(svc, "http-certificates", &s->certificates, e)) < 0)
		return r;
	if ((v = s->certificates) != NULL) {
		/* certificates by id only: names need the certificates API */
		for (const char *p = v; *p; p++)
			if (!((*p >= '0' && *p <= '9') || (*p == ',' && p != v && p[1] && p[1] != ',')))
				return hclbspec_bad(svc, "http-certificates", v, "not a list of "
				    "certificate ids (\"7,9\"; names are not supported)", e);
	}
	s->http_set = s->cookie_name != NULL || s->cookie_lifetime >= 0 || s->certificates ||
	    s->redirect_http >= 0 || s->sticky_sessions >= 0;
	if (strcmp(s->protocol, "https") == 0 && s->certificates == NULL)
		return hclbspec_bad(svc, "protocol", "https", "needs the annotation " HCLBSPEC_PREFIX
		    "http-certificates", e);
	return 0;
}

/* hclbspec_ports takes the Service's TCP ports (the balancers carry no UDP
 * or SCTP, as the official CCM). */
static int
hclbspec_ports(const struct cloud_service *svc, struct hclbspec *s, struct errbuf *e)
{
	for (size_t i = 0; i < svc->n_ports; i++) {
		const struct cloud_lb_port *p = &svc->ports[i];
		if (p->protocol != NULL && strcmp(p->protocol, "TCP") != 0)
			continue;
		if (p->port < 1 || p->port > 65535 || p->node_port < 1 || p->node_port > 65535)
			return errbuf_set(e, ERR_INVALID, "Service %s/%s: port %d has no nodePort: "
			    "the balancer forwards to the nodes' ports", svc->namespace_, svc->name,
			    p->port);
		for (size_t j = 0; j < s->n_ports; j++)
			if (s->ports[j].listen == p->port)
				return errbuf_set(e, ERR_INVALID, "Service %s/%s: port %d twice",
				    svc->namespace_, svc->name, p->port);
		if (s->n_ports == HCLBSPEC_PORTS_MAX)
			return errbuf_set(e, ERR_INVALID, "Service %s/%s: more than %d ports",
			    svc->namespace_, svc->name, HCLBSPEC_PORTS_MAX);
		s->ports[s->n_ports].listen = p->port;
		s->ports[s->n_ports].dest = p->node_port;
		s->n_ports++;
	}
	return 0;
}

void
hclbspec_free(struct hclbspec *s)
{
	if (s == NULL)
		return;
	free(s->hc.domain);
	free(s->hc.path);
	free(s->hc.status_codes);
	free(s->cookie_name);
	free(s->certificates);
	memset(s, 0, sizeof(*s));
}

static int
hclbspec_parse_into(const struct cloud_service *svc, const struct hclbspec_defaults *d,
    const char *cluster, struct hclbspec *s, struct errbuf *e)
{
	static const char *const algorithms[] = { "round_robin", "least_connections", NULL };
	struct labelsel sel;
	struct netaddr a;
	const char *v;
	int set, b, r;

	/* name */
	if ((r = hclbspec_plain(svc, "name", s->name, sizeof(s->name), &s->name_set, e)) < 0)
		return r;
	if (s->name_set && s->name[0] == '\0')
		return hclbspec_bad(svc, "name", "", "empty", e);
	if (!s->name_set)
		hclbspec_default_name(svc->uid, s->name);
	/* where and what */
	snprintf(s->type, sizeof(s->type), "%s", d->type && *d->type ? d->type : "lb11");
	if ((r = hclbspec_plain(svc, "type", s->type, sizeof(s->type), &s->type_set, e)) < 0)
		return r;
	if (!s->type_set)
		snprintf(s->type, sizeof(s->type), "%s", d->type && *d->type ? d->type : "lb11");
	else if (s->type[0] == '\0')
		return hclbspec_bad(svc, "type", "", "empty", e);
	snprintf(s->location, sizeof(s->location), "%s", d->location ? d->location : "");
	snprintf(s->network_zone, sizeof(s->network_zone), "%s",
	    d->network_zone ? d->network_zone : "");
	if ((v = hclbspec_annot(svc, "location")) != NULL &&
	    (r = hclbspec_plain(svc, "location", s->location, sizeof(s->location), NULL, e)) < 0)
		return r;
	if ((v = hclbspec_annot(svc, "network-zone")) != NULL) {
		if ((r = hclbspec_plain(svc, "network-zone", s->network_zone,
		    sizeof(s->network_zone), NULL, e)) < 0)
			return r;
		if (hclbspec_annot(svc, "location") == NULL)
			s->location[0] = '\0';   /* the Service's zone over the default location */
	}
	if (s->location[0] && s->network_zone[0])
		s->network_zone[0] = '\0';   /* a location implies its zone (HCCM) */
	snprintf(s->algorithm, sizeof(s->algorithm), "%s", d->algorithm ? d->algorithm : "");
	if ((r = hclbspec_word(svc, "algorithm-type", algorithms,
	    "not round_robin or least_connections", s->algorithm, sizeof(s->algorithm),
	    &s->algorithm_set, e)) < 0)
		return r;
	/* networks and addresses */
	s->network = d->network;
	s->use_private_ip = d->use_private_ip;
	if ((r = hclbspec_bool(svc, "use-private-ip", &b, e)) < 0)
		return r;
	if (b >= 0)
		s->use_private_ip = b;
	if (s->use_private_ip && d->network <= 0)
		return hclbspec_bad(svc, "use-private-ip", "true", "needs a network (the "
		    "cloud-config's hcloud.network)", e);
	if ((r = hclbspec_bool(svc, "disable-public-network", &s->disable_public, e)) < 0)
		return r;
	if (s->disable_public == 1 && !s->use_private_ip)
		return hclbspec_bad(svc, "disable-public-network", "true", "needs private targets "
		    "(use-private-ip)", e);
	s->disable_private_ingress = d->disable_private_ingress;
	if ((r = hclbspec_bool(svc, "disable-private-ingress", &b, e)) < 0)
		return r;
	if (b >= 0)
		s->disable_private_ingress = b;
	s->ipv6_disabled = d->disable_ipv6;
	if ((r = hclbspec_bool(svc, "ipv6-disabled", &b, e)) < 0)
		return r;
	if (b >= 0)
		s->ipv6_disabled = b;
	if ((r = hclbspec_bool(svc, "uses-proxyprotocol", &b, e)) < 0)
		return r;
	s->proxyprotocol = b == 1;
	if ((r = hclbspec_plain(svc, "hostname", s->hostname, sizeof(s->hostname), &set, e)) < 0)
		return r;
	if (set && !hclbspec_dns_name(s->hostname))
		return hclbspec_bad(svc, "hostname", s->hostname, "not a DNS name", e);
	if ((r = hclbspec_plain(svc, "private-ipv4", s->private_ipv4, sizeof(s->private_ipv4),
	    &set, e)) < 0)
		return r;
	if (set) {
		if (netaddr_parse(s->private_ipv4, &a) < 0 || a.family != 4)
			return hclbspec_bad(svc, "private-ipv4", s->private_ipv4, "not an IPv4 address",
			    e);
		if (d->network <= 0)
			return hclbspec_bad(svc, "private-ipv4", s->private_ipv4, "needs a network "
			    "(the cloud-config's hcloud.network)", e);
		netaddr_format(&a, s->private_ipv4);
	}
	if ((v = hclbspec_annot(svc, "node-selector")) != NULL && *v != '\0') {
		if (labelsel_parse(v, &sel, e) < 0) {
			char why[ERRBUF_MAX];
			snprintf(why, sizeof(why), "not a label selector: %s", e->msg);
			return hclbspec_bad(svc, "node-selector", v, why, e);
		}
		labelsel_free(&sel);
		s->node_selector = v;
		hclbspec_selector_key(cluster, v, s->selector_key);
	}
	/* services */
	snprintf(s->protocol, sizeof(s->protocol), "tcp");
	if ((r = hclbspec_word(svc, "protocol", hclbspec_protocols, "not tcp, http or https",
	    s->protocol, sizeof(s->protocol), NULL, e)) < 0 ||
	    (r = hclbspec_health(svc, s, e)) < 0 ||
	    (r = hclbspec_http(svc, s, e)) < 0 ||
	    (r = hclbspec_ports(svc, s, e)) < 0)
		return r;
	return 0;
}

int
hclbspec_parse(const struct cloud_service *svc, const struct hclbspec_defaults *d,
    const char *cluster, struct hclbspec *ret, struct errbuf *e)
{
	int r;

	memset(ret, 0, sizeof(*ret));
	if (svc->uid == NULL || *svc->uid == '\0')
		return errbuf_set(e, ERR_INVALID, "Service %s/%s: no uid", svc->namespace_,
		    svc->name);
	if ((r = cloud_service_nul_check(svc, NULL, HCLBSPEC_PREFIX, e)) < 0)
		return r;
	if ((r = hclbspec_parse_into(svc, d, cluster, ret, e)) < 0)
		hclbspec_free(ret);
	return r;
}

/* --- names and labels --------------------------------------------------------- */

void
hclbspec_default_name(const char *uid, char buf[HCLBSPEC_NAME_MAX])
{
	size_t n = 0;

	buf[n++] = 'a';
	for (const char *p = uid; *p && n < 32; p++)
		if (*p != '-')
			buf[n++] = *p;
	buf[n] = '\0';
}

void
hclbspec_cluster_value(const char *cluster, char buf[HCLBSPEC_LABEL_VALUE_MAX + 1])
{
	if (cluster == NULL || *cluster == '\0')
		cluster = "kubernetes";
	if (strlen(cluster) <= HCLBSPEC_LABEL_VALUE_MAX && labelsel_value_ok(cluster))
		snprintf(buf, HCLBSPEC_LABEL_VALUE_MAX + 1, "%s", cluster);
	else
		snprintf(buf, HCLBSPEC_LABEL_VALUE_MAX + 1, "h-%016" PRIx64, hmap_hash(cluster));
}

void
hclbspec_selector_key(const char *cluster, const char *sel, char buf[HCLBSPEC_SELECTOR_KEY_MAX])
{
	char *both = xasprintf("%s\n%s", cluster ? cluster : "", sel);

	snprintf(buf, HCLBSPEC_SELECTOR_KEY_MAX, "%s%012" PRIx64, HCLBSPEC_SELECTOR_PREFIX,
	    (uint64_t)(hmap_hash(both) & 0xffffffffffffULL));
	free(both);
}

int
hclbspec_ours(const struct hcapi_lb *lb, const char *uid, const char *cluster_value)
{
	const char *u = hcapi_label(&lb->labels, HCLBSPEC_LABEL_UID);
	const char *c = hcapi_label(&lb->labels, HCLBSPEC_LABEL_CLUSTER);

	return u != NULL && c != NULL && strcmp(u, uid) == 0 && strcmp(c, cluster_value) == 0;
}

static int
hclbspec_cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* hclbspec_set_norm sorts v and drops repeats. */
size_t
hclbspec_set_norm(int64_t *v, size_t n)
{
	size_t k = 0;

	qsort(v, n, sizeof(*v), hclbspec_cmp64);
	for (size_t i = 0; i < n; i++)
		if (k == 0 || v[k - 1] != v[i])
			v[k++] = v[i];
	return k;
}

int
hclbspec_set_has(const int64_t *v, size_t n, int64_t x)
{
	return n > 0 && bsearch(&x, v, n, sizeof(*v), hclbspec_cmp64) != NULL;
}

/* hclbspec_set_add adds x (keeping the set sorted). */
void
hclbspec_set_add(int64_t **v, size_t *n, int64_t x)
{
	if (hclbspec_set_has(*v, *n, x))
		return;
	*v = xreallocarray(*v, *n + 1, sizeof(**v));
	(*v)[(*n)++] = x;
	hclbspec_set_norm(*v, *n);
}

void
hclbspec_set_del(int64_t *v, size_t *n, int64_t x)
{
	size_t k = 0;

	for (size_t i = 0; i < *n; i++)
		if (v[i] != x)
			v[k++] = v[i];
	*n = k;
}

static int
hclbspec_set_eq(const int64_t *a, size_t na, const int64_t *b, size_t nb)
{
	return na == nb && (na == 0 || memcmp(a, b, na * sizeof(*a)) == 0);
}

/* hclbspec_record_key tells whether key is one of record base's labels
 * (base, base-1, base-2, ...) and which (0 for base). */
static int
hclbspec_record_key(const char *key, const char *base, int *ret_i)
{
	size_t bl = strlen(base);
	int64_t i;

	if (strncmp(key, base, bl) != 0)
		return 0;
	if (key[bl] == '\0') {
		*ret_i = 0;
		return 1;
	}
	if (key[bl] != '-' || key[bl + 1] == '0' ||
	    numparse(key + bl + 1, 0, 1, HCLBSPEC_RECORD_LABELS - 1, &i, NULL) < 0)
		return 0;
	*ret_i = (int)i;
	return 1;
}

/* hclbspec_record_read parses the numbers (base 36, '.'-separated) of
 * record base's labels; 0, or -1 when malformed. */
static int
hclbspec_record_read(const struct hcapi_labels *l, const char *base, int64_t **ret,
    size_t *ret_n)
{
	int64_t *v = NULL;
	size_t n = 0;

	for (size_t i = 0; i < l->n; i++) {
		const char *p;
		int idx;
		if (!hclbspec_record_key(l->kv[i].key, base, &idx))
			continue;
		for (p = l->kv[i].value; *p;) {
			char *end;
			long long x;
			errno = 0;
			x = strtoll(p, &end, 36);
			if (end == p || errno != 0 || x <= 0 || (*end != '.' && *end != '\0') ||
			    *p == '-' || *p == '+' || *p == ' ') {
				free(v);
				return -1;
			}
			v = xreallocarray(v, n + 1, sizeof(*v));
			v[n++] = x;
			p = *end == '.' ? end + 1 : end;
		}
	}
	*ret = v;
	*ret_n = v ? hclbspec_set_norm(v, n) : 0;
	return 0;
}

void
hclbspec_owned_read(const struct hcapi_lb *lb, struct hclbspec_owned *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (hclbspec_record_read(&lb->labels, HCLBSPEC_LABEL_PORTS, &ret->ports,
	    &ret->n_ports) < 0)
		ret->n_ports = 0, ret->ports = NULL;
	if (hclbspec_record_read(&lb->labels, HCLBSPEC_LABEL_TARGETS, &ret->targets,
	    &ret->n_targets) < 0)
		ret->n_targets = 0, ret->targets = NULL;
}

void
hclbspec_owned_free(struct hclbspec_owned *o)
{
	free(o->ports);
	free(o->targets);
	memset(o, 0, sizeof(*o));
}

void
hclbspec_owned_copy(struct hclbspec_owned *dst, const struct hclbspec_owned *src)
{
	dst->n_ports = src->n_ports;
	dst->n_targets = src->n_targets;
	dst->ports = src->n_ports ? xmemdup(src->ports, src->n_ports * sizeof(int64_t)) : NULL;
	dst->targets = src->n_targets ? xmemdup(src->targets, src->n_targets * sizeof(int64_t)) :
	    NULL;
}

int
hclbspec_owned_eq(const struct hclbspec_owned *a, const struct hclbspec_owned *b)
{
	return hclbspec_set_eq(a->ports, a->n_ports, b->ports, b->n_ports) &&
	    hclbspec_set_eq(a->targets, a->n_targets, b->targets, b->n_targets);
}

/* hclbspec_record_write adds record base's labels for v to o. */
static void
hclbspec_record_write(json_object *o, const char *base, const int64_t *v, size_t n)
{
	char val[HCLBSPEC_LABEL_VALUE_MAX + 1], num[16], key[64];
	size_t len = 0;
	int idx = 0;

	val[0] = '\0';
	for (size_t i = 0; i <= n; i++) {
		size_t k = 0;
		if (i < n) {
			/* base 36: a server id in six or seven characters */
			char tmp[16];
			uint64_t x = (uint64_t)v[i];
			do {
				tmp[k++] = "0123456789abcdefghijklmnopqrstuvwxyz"[x % 36];
				x /= 36;
			} while (x);
			for (size_t j = 0; j < k; j++)
				num[j] = tmp[k - 1 - j];
			num[k] = '\0';
		}
		if (len > 0 && (i == n || len + 1 + k > HCLBSPEC_LABEL_VALUE_MAX)) {
			if (idx == 0)
				snprintf(key, sizeof(key), "%s", base);
			else
				snprintf(key, sizeof(key), "%s-%d", base, idx);
			json_object_object_add(o, key, xcheck(json_object_new_string(val)));
			idx++;
			len = 0;
			val[0] = '\0';
		}
		if (i < n) {
			if (len > 0)
				val[len++] = '.';
			memcpy(val + len, num, k + 1);
			len += k;
		}
	}
}

json_object *
hclbspec_labels(const struct hcapi_labels *labels, const char *uid, const char *cluster_value,
    const struct hclbspec_owned *o)
{
	json_object *out = xcheck(json_object_new_object());
	int idx;

	for (size_t i = 0; labels != NULL && i < labels->n; i++) {
		const char *k = labels->kv[i].key;
		if (hclbspec_record_key(k, HCLBSPEC_LABEL_PORTS, &idx) ||
		    hclbspec_record_key(k, HCLBSPEC_LABEL_TARGETS, &idx))
			continue;
		json_object_object_add(out, k, xcheck(json_object_new_string(labels->kv[i].value)));
	}
	json_object_object_add(out, HCLBSPEC_LABEL_UID, xcheck(json_object_new_string(uid)));
	json_object_object_add(out, HCLBSPEC_LABEL_CLUSTER,
	    xcheck(json_object_new_string(cluster_value)));
	if (o != NULL) {
		hclbspec_record_write(out, HCLBSPEC_LABEL_PORTS, o->ports, o->n_ports);
		hclbspec_record_write(out, HCLBSPEC_LABEL_TARGETS, o->targets, o->n_targets);
	}
	return out;
}

/* --- status and bodies ------------------------------------------------------------ */

static void
hclbspec_ingress(struct cloud_lb_status *st, const char *ip, const char *mode)
{
	if (st->n_ingress >= CLOUD_LB_INGRESS_MAX || ip[0] == '\0')
		return;
	snprintf(st->ingress[st->n_ingress].ip, sizeof(st->ingress[0].ip), "%s", ip);
	snprintf(st->ingress[st->n_ingress].ip_mode, sizeof(st->ingress[0].ip_mode), "%s", mode);
	st->n_ingress++;
}

void
hclbspec_status(const struct hclbspec *spec, const struct hcapi_lb *lb,
    struct cloud_lb_status *ret)
{
	/* KEP-1860: a balancer that proxies (the PROXY protocol) is not a VIP:
	 * kube-proxy must not short-cut traffic to it inside the cluster */
	const char *mode = spec->proxyprotocol ? "Proxy" : "VIP";

	memset(ret, 0, sizeof(*ret));
	if (spec->hostname[0]) {
		snprintf(ret->ingress[0].hostname, sizeof(ret->ingress[0].hostname), "%s",
		    spec->hostname);
		ret->n_ingress = 1;
		return;
	}
	if (spec->disable_public != 1) {
		hclbspec_ingress(ret, lb->ipv4, mode);
		if (!spec->ipv6_disabled)
			hclbspec_ingress(ret, lb->ipv6, mode);
	}
	if (!spec->disable_private_ingress)
		for (size_t i = 0; i < lb->n_private; i++)
			hclbspec_ingress(ret, lb->private_net[i].ip, mode);
}

/* hclbspec_hc_want fills what the service's health check should be. */
void
hclbspec_hc_want(const struct hclbspec *spec, const struct hclbspec_port *p,
    struct hcapi_lb_hc *w)
{
	memset(w, 0, sizeof(*w));
	if (spec->hc.set) {
		snprintf(w->protocol, sizeof(w->protocol), "%s", spec->hc.protocol);
		w->port = spec->hc.port > 0 ? spec->hc.port : p->dest;
	} else {
		/* the official CCM's default: TCP on the node port */
		snprintf(w->protocol, sizeof(w->protocol), "tcp");
		w->port = p->dest;
	}
	w->interval = spec->hc.interval >= 0 ? spec->hc.interval : HCLBSPEC_HC_INTERVAL;
	w->timeout = spec->hc.timeout >= 0 ? spec->hc.timeout : HCLBSPEC_HC_TIMEOUT;
	w->retries = spec->hc.retries >= 0 ? spec->hc.retries : HCLBSPEC_HC_RETRIES;
}

int
hclbspec_is_http(const char *protocol)
{
	return strcmp(protocol, "http") == 0 || strcmp(protocol, "https") == 0;
}

static json_object *
hclbspec_strings(const char *joined)
{
	json_object *a = xcheck(json_object_new_array());
	char *copy = xstrdup(joined), *p = copy, *comma;

	for (;;) {
		comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		if (*p)
			json_object_array_add(a, xcheck(json_object_new_string(p)));
		if (!comma)
			break;
		p = comma + 1;
	}
	free(copy);
	return a;
}

json_object *
hclbspec_service_json(const struct hclbspec *spec, const struct hclbspec_port *p, int update)
{
	json_object *o = xcheck(json_object_new_object()), *hc, *h;
	struct hcapi_lb_hc w;

	(void)update;   /* update_service names the service by listen_port too */
	json_object_object_add(o, "listen_port", json_object_new_int64(p->listen));
	json_object_object_add(o, "destination_port", json_object_new_int64(p->dest));
	json_object_object_add(o, "protocol", xcheck(json_object_new_string(spec->protocol)));
	json_object_object_add(o, "proxyprotocol", json_object_new_boolean(spec->proxyprotocol));
	hclbspec_hc_want(spec, p, &w);
	hc = xcheck(json_object_new_object());
	json_object_object_add(hc, "protocol", xcheck(json_object_new_string(w.protocol)));
	json_object_object_add(hc, "port", json_object_new_int64(w.port));
	json_object_object_add(hc, "interval", json_object_new_int64(w.interval));
	json_object_object_add(hc, "timeout", json_object_new_int64(w.timeout));
	json_object_object_add(hc, "retries", json_object_new_int64(w.retries));
	if (hclbspec_is_http(w.protocol) && (spec->hc.domain || spec->hc.path ||
	    spec->hc.status_codes || spec->hc.tls >= 0)) {
		h = xcheck(json_object_new_object());
		if (spec->hc.domain)
			json_object_object_add(h, "domain", xcheck(json_object_new_string(spec->hc.domain)));
		if (spec->hc.path)
			json_object_object_add(h, "path", xcheck(json_object_new_string(spec->hc.path)));
		if (spec->hc.status_codes)
			json_object_object_add(h, "status_codes", hclbspec_strings(spec->hc.status_codes));
		if (spec->hc.tls >= 0)
			json_object_object_add(h, "tls", json_object_new_boolean(spec->hc.tls));
		json_object_object_add(hc, "http", h);
	}
	json_object_object_add(o, "health_check", hc);
	if (hclbspec_is_http(spec->protocol) && spec->http_set) {
		h = xcheck(json_object_new_object());
		if (spec->cookie_name)
			json_object_object_add(h, "cookie_name",
			    xcheck(json_object_new_string(spec->cookie_name)));
		if (spec->cookie_lifetime >= 0)
			json_object_object_add(h, "cookie_lifetime",
			    json_object_new_int64(spec->cookie_lifetime));
		if (spec->certificates) {
			json_object *ids = xcheck(json_object_new_array());
			for (const char *c = spec->certificates; *c;) {
				char *end;
				json_object_array_add(ids, json_object_new_int64(strtoll(c, &end, 10)));
				c = *end == ',' ? end + 1 : end;
			}
			json_object_object_add(h, "certificates", ids);
		}
		if (spec->redirect_http >= 0)
			json_object_object_add(h, "redirect_http",
			    json_object_new_boolean(spec->redirect_http));
		if (spec->sticky_sessions >= 0)
			json_object_object_add(h, "sticky_sessions",
			    json_object_new_boolean(spec->sticky_sessions));
		json_object_object_add(o, "http", h);
	}
	return o;
}
