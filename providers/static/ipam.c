/* ipam.c - pools, holdings and the allocation rules of the static provider. */
#include "ipam.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"
#include "base/xalloc.h"

struct ipam_pool {
	char *name;
	struct ipam_range *ranges;
	size_t n_ranges;
	char **namespaces;
	size_t n_namespaces;
	int auto_assign;
	uint64_t used[IPAM_FAMILIES];  /* held addresses, each counted once */
	/* per range: every address from its first up to (not including)
	 * first + hint is held or asked for, so automatic assignment starts
	 * there; lowered when one of them is freed (ipam_hint_lower) */
	uint64_t *hint;
};

/* What the allocator knows of one Service. */
struct ipam_svc {
	char *key;
	char *namespace;
	int64_t created;
	int served;
	struct netaddr held[IPAM_HELD_MAX];          /* from its status */
	size_t n_held;
	struct netaddr requested[IPAM_REQUESTS_MAX];
	size_t n_requested;
	int bad_request;                             /* a requested value is no address */
	char *pool;
	char *sharing_key;
	struct ipam_port *ports;
	size_t n_ports;
	int etp_local;
	char *selector;
	struct netaddr alloc[IPAM_FAMILIES];         /* ipam_assign's answer */
	size_t n_alloc;
};

/* The Services holding one address (by status or allocation). */
struct ipam_hold {
	char text[NETADDR_TEXT_MAX];                 /* the map's key */
	struct netaddr addr;
	struct ipam_pool *pool;                      /* the pool it is in, or NULL */
	struct ipam_svc **holders;
	size_t n, cap;
};

/* How many served Services ask for one address. */
struct ipam_req {
	char text[NETADDR_TEXT_MAX];                 /* the map's key */
	size_t n;
};

struct ipam {
	struct ipam_pool *pools;
	size_t n_pools;
	struct hmap svcs;    /* key -> struct ipam_svc */
	struct hmap holds;   /* address text -> struct ipam_hold */
	struct hmap reqs;    /* address text -> struct ipam_req */
};

/* --- ranges and pools ---------------------------------------------------- */

int
ipam_range_parse(const char *s, struct ipam_range *ret, struct errbuf *e)
{
	struct ipam_range r;
	const char *dash;

	if (strchr(s, '/') != NULL) {
		struct netprefix p;
		if (netprefix_parse(s, 1, &p) < 0)
			return errbuf_set(e, ERR_INVALID, "\"%s\" is not a network in CIDR "
			    "notation (host bits must be zero)", s);
		r.first = p.addr;
		netprefix_last(&p, &r.last);
		/* no network or broadcast address from an IPv4 prefix below /31;
		 * the broadcast address's host bits are all ones, so stepping back
		 * from it never borrows from the byte before */
		if (p.addr.family == 4 && p.bits < 31) {
			netaddr_add(&r.first, 1);
			r.last.b[3]--;
		}
	} else if ((dash = strchr(s, '-')) != NULL) {
		char a[NETADDR_TEXT_MAX], b[NETADDR_TEXT_MAX];
		size_t la = (size_t)(dash - s), lb = strlen(dash + 1);
		if (la == 0 || la >= sizeof(a) || lb == 0 || lb >= sizeof(b))
			return errbuf_set(e, ERR_INVALID, "\"%s\" is not a range FIRST-LAST", s);
		memcpy(a, s, la);
		a[la] = '\0';
		memcpy(b, dash + 1, lb + 1);
		if (netaddr_parse(a, &r.first) < 0 || netaddr_parse(b, &r.last) < 0)
			return errbuf_set(e, ERR_INVALID, "\"%s\" is not a range of two IP "
			    "addresses", s);
		if (r.first.family != r.last.family)
			return errbuf_set(e, ERR_INVALID, "\"%s\" mixes IPv4 and IPv6", s);
		if (netaddr_cmp(&r.first, &r.last) > 0)
			return errbuf_set(e, ERR_INVALID, "\"%s\" ends before it starts", s);
	} else {
		struct netaddr a;
		if (netaddr_parse(s, &a) == 0)
			return errbuf_set(e, ERR_INVALID, "\"%s\" is one address: write it as "
			    "%s/%d", s, s, netaddr_bits(&a));
		return errbuf_set(e, ERR_INVALID, "\"%s\" is neither a CIDR nor a range "
		    "FIRST-LAST", s);
	}
	*ret = r;
	return 0;
}

static int
ipam_range_contains(const struct ipam_range *r, const struct netaddr *a)
{
	return a->family == r->first.family && netaddr_cmp(&r->first, a) <= 0 &&
	    netaddr_cmp(a, &r->last) <= 0;
}

static int
ipam_ranges_overlap(const struct ipam_range *a, const struct ipam_range *b)
{
	return a->first.family == b->first.family && netaddr_cmp(&a->first, &b->last) <= 0 &&
	    netaddr_cmp(&b->first, &a->last) <= 0;
}

static void
ipam_pool_clear(struct ipam_pool *p)
{
	free(p->name);
	free(p->ranges);
	free(p->hint);
	for (size_t i = 0; i < p->n_namespaces; i++)
		free(p->namespaces[i]);
	free(p->namespaces);
}

/* A pool's range, for the overlap check. */
struct ipam_rref {
	const struct ipam_range *r;
	size_t pool;
};

static int
ipam_rref_cmp(const void *a, const void *b)
{
	const struct ipam_rref *x = a, *y = b;
	int c = netaddr_cmp(&x->r->first, &y->r->first);

	if (c != 0)
		return c;
	return x->pool < y->pool ? -1 : x->pool > y->pool;
}

/* ipam_overlaps finds two overlapping ranges among all the pools' in
 * O(n log n): sorted by first address, a range overlaps an earlier one iff
 * it starts at or before the furthest end seen so far in its family. */
static int
ipam_overlaps(const struct ipam_pool_config *pools, size_t n, size_t *ret_a, size_t *ret_b)
{
	struct ipam_rref *v, *far = NULL;
	size_t k = 0, total = 0;
	int found = 0;

	for (size_t i = 0; i < n; i++)
		total += pools[i].n_ranges;
	v = xcalloc(total ? total : 1, sizeof(*v));
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < pools[i].n_ranges; j++)
			v[k++] = (struct ipam_rref){ &pools[i].ranges[j], i };
	qsort(v, total, sizeof(*v), ipam_rref_cmp);
	for (k = 0; k < total && !found; k++) {
		if (far != NULL && ipam_ranges_overlap(far->r, v[k].r)) {
			*ret_a = far->pool < v[k].pool ? far->pool : v[k].pool;
			*ret_b = far->pool < v[k].pool ? v[k].pool : far->pool;
			found = 1;
		} else if (far == NULL || far->r->first.family != v[k].r->first.family ||
		    netaddr_cmp(&v[k].r->last, &far->r->last) > 0) {
			far = &v[k];
		}
	}
	free(v);
	return found;
}

int
ipam_pools_check(const struct ipam_pool_config *pools, size_t n, size_t *ret_bad,
    struct errbuf *e)
{
	size_t a, b;

	for (size_t i = 0; i < n; i++) {
		*ret_bad = i;
		if (pools[i].name == NULL || *pools[i].name == '\0')
			return errbuf_set(e, ERR_INVALID, "pool %zu has no name", i + 1);
		if (strlen(pools[i].name) >= sizeof(((struct ipam_result *)0)->pools[0]))
			return errbuf_set(e, ERR_INVALID, "pool name \"%.32s...\" is too long",
			    pools[i].name);
		for (size_t j = 0; j < i; j++)
			if (strcmp(pools[i].name, pools[j].name) == 0)
				return errbuf_set(e, ERR_INVALID, "two pools are named \"%s\"",
				    pools[i].name);
	}
	if (ipam_overlaps(pools, n, &a, &b)) {
		*ret_bad = b;
		if (a == b)
			return errbuf_set(e, ERR_INVALID, "pool \"%s\" lists overlapping addresses",
			    pools[a].name);
		return errbuf_set(e, ERR_INVALID, "pools \"%s\" and \"%s\" overlap",
		    pools[a].name, pools[b].name);
	}
	return 0;
}

int
ipam_new(const struct ipam_pool_config *pools, size_t n, struct ipam **ret,
    struct errbuf *e)
{
	struct ipam *m;
	size_t bad;
	int r;

	if ((r = ipam_pools_check(pools, n, &bad, e)) < 0)
		return r;
	m = xcalloc(1, sizeof(*m));
	m->pools = xcalloc(n, sizeof(*m->pools));
	m->n_pools = n;
	for (size_t i = 0; i < n; i++) {
		struct ipam_pool *p = &m->pools[i];
		p->name = xstrdup(pools[i].name);
		p->ranges = xmemdup(pools[i].ranges, pools[i].n_ranges * sizeof(*p->ranges));
		p->n_ranges = pools[i].n_ranges;
		p->hint = xcalloc(p->n_ranges ? p->n_ranges : 1, sizeof(*p->hint));
		p->namespaces = xcalloc(pools[i].n_namespaces, sizeof(*p->namespaces));
		for (size_t j = 0; j < pools[i].n_namespaces; j++)
			p->namespaces[j] = xstrdup(pools[i].namespaces[j]);
		p->n_namespaces = pools[i].n_namespaces;
		p->auto_assign = pools[i].auto_assign;
	}
	hmap_init(&m->svcs, 0);
	hmap_init(&m->holds, 0);
	hmap_init(&m->reqs, 0);
	*ret = m;
	return 0;
}

static void
ipam_svc_free(void *v)
{
	struct ipam_svc *s = v;

	free(s->key);
	free(s->namespace);
	free(s->pool);
	free(s->sharing_key);
	free(s->ports);
	free(s->selector);
	free(s);
}

static void
ipam_hold_free(void *v)
{
	struct ipam_hold *h = v;

	free(h->holders);
	free(h);
}

void
ipam_free(struct ipam *m)
{
	if (m == NULL)
		return;
	hmap_free(&m->holds, ipam_hold_free);
	hmap_free(&m->reqs, free);
	hmap_free(&m->svcs, ipam_svc_free);
	for (size_t i = 0; i < m->n_pools; i++)
		ipam_pool_clear(&m->pools[i]);
	free(m->pools);
	free(m);
}

/* ipam_pool_of returns the pool holding a, or NULL. */
static struct ipam_pool *
ipam_pool_of(const struct ipam *m, const struct netaddr *a)
{
	for (size_t i = 0; i < m->n_pools; i++)
		for (size_t j = 0; j < m->pools[i].n_ranges; j++)
			if (ipam_range_contains(&m->pools[i].ranges[j], a))
				return &m->pools[i];
	return NULL;
}

static const struct ipam_pool *
ipam_pool_named(const struct ipam *m, const char *name)
{
	for (size_t i = 0; i < m->n_pools; i++)
		if (strcmp(m->pools[i].name, name) == 0)
			return &m->pools[i];
	return NULL;
}

static int
ipam_pool_allows(const struct ipam_pool *p, const char *ns)
{
	if (p->n_namespaces == 0)
		return 1;
	for (size_t i = 0; i < p->n_namespaces; i++)
		if (strcmp(p->namespaces[i], ns) == 0)
			return 1;
	return 0;
}

static int
ipam_pool_has_family(const struct ipam_pool *p, int family)
{
	for (size_t i = 0; i < p->n_ranges; i++)
		if (p->ranges[i].first.family == family)
			return 1;
	return 0;
}

/* ipam_hint_lower notes that a may have become free for automatic
 * assignment: its range's search starts no later than a. */
static void
ipam_hint_lower(struct ipam *m, const struct netaddr *a)
{
	for (size_t i = 0; i < m->n_pools; i++)
		for (size_t j = 0; j < m->pools[i].n_ranges; j++) {
			const struct ipam_range *r = &m->pools[i].ranges[j];
			uint64_t off;
			if (!ipam_range_contains(r, a))
				continue;
			off = netaddr_distance(&r->first, a) - 1;
			if (off < m->pools[i].hint[j])
				m->pools[i].hint[j] = off;
			return;
		}
}

/* --- holdings ---------------------------------------------------------------- */

static struct ipam_hold *
ipam_hold_get(const struct ipam *m, const struct netaddr *a)
{
	char text[NETADDR_TEXT_MAX];

	netaddr_format(a, text);
	return hmap_get(&m->holds, text);
}

static int
ipam_holds(const struct ipam_hold *h, const struct ipam_svc *s)
{
	for (size_t i = 0; h && i < h->n; i++)
		if (h->holders[i] == s)
			return 1;
	return 0;
}

static void
ipam_hold_add(struct ipam *m, const struct netaddr *a, struct ipam_svc *s)
{
	struct ipam_hold *h = ipam_hold_get(m, a);

	if (h == NULL) {
		h = xcalloc(1, sizeof(*h));
		h->addr = *a;
		netaddr_format(a, h->text);
		hmap_put(&m->holds, h->text, h);
		if ((h->pool = ipam_pool_of(m, a)) != NULL)
			h->pool->used[a->family == 4 ? 0 : 1]++;
	}
	if (ipam_holds(h, s))
		return;
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 2;
		h->holders = xreallocarray(h->holders, h->cap, sizeof(*h->holders));
	}
	h->holders[h->n++] = s;
}

/* ipam_hold_drop removes s from a's holders; 1 when a became free. */
static int
ipam_hold_drop(struct ipam *m, const struct netaddr *a, struct ipam_svc *s)
{
	struct ipam_hold *h = ipam_hold_get(m, a);

	if (h == NULL)
		return 0;
	for (size_t i = 0; i < h->n; i++)
		if (h->holders[i] == s) {
			h->holders[i] = h->holders[--h->n];
			break;
		}
	if (h->n > 0)
		return 0;
	if (h->pool != NULL) {
		h->pool->used[h->addr.family == 4 ? 0 : 1]--;
		ipam_hint_lower(m, &h->addr);
	}
	hmap_delete(&m->holds, h->text);
	ipam_hold_free(h);
	return 1;
}

/* ipam_svc_addrs lists what s holds: its status addresses and its
 * allocation, without repeats. */
static size_t
ipam_svc_addrs(const struct ipam_svc *s, struct netaddr out[IPAM_HELD_MAX + IPAM_FAMILIES])
{
	size_t n = 0;

	for (size_t i = 0; i < s->n_held + s->n_alloc; i++) {
		const struct netaddr *a = i < s->n_held ? &s->held[i] : &s->alloc[i - s->n_held];
		size_t j;
		for (j = 0; j < n && netaddr_cmp(&out[j], a) != 0; j++)
			;
		if (j == n)
			out[n++] = *a;
	}
	return n;
}

/* ipam_rehold brings the holdings in line with s's addresses before and
 * after a change; returns how many addresses became free. */
static size_t
ipam_rehold(struct ipam *m, struct ipam_svc *s, const struct netaddr *before, size_t nb)
{
	struct netaddr after[IPAM_HELD_MAX + IPAM_FAMILIES];
	size_t na = ipam_svc_addrs(s, after), freed = 0;

	for (size_t i = 0; i < na; i++)
		ipam_hold_add(m, &after[i], s);
	for (size_t i = 0; i < nb; i++) {
		size_t j;
		for (j = 0; j < na && netaddr_cmp(&after[j], &before[i]) != 0; j++)
			;
		if (j == na)
			freed += (size_t)ipam_hold_drop(m, &before[i], s);
	}
	return freed;
}

/* --- observing Services ------------------------------------------------------ */

static int ipam_pool_usable(const struct ipam_svc *s, const struct ipam_pool *p,
    int explicit);

/* ipam_reqs_count adds delta to the count of each address s asks for, when
 * s is served and may have it (only such requests keep auto-assignment off
 * an address: one in no pool, or in a pool s may not use, is refused and
 * must not keep an address from those who may). */
static void
ipam_reqs_count(struct ipam *m, const struct ipam_svc *s, int delta)
{
	for (size_t i = 0; s->served && i < s->n_requested; i++) {
		const struct ipam_pool *p = ipam_pool_of(m, &s->requested[i]);
		char text[NETADDR_TEXT_MAX];
		struct ipam_req *q;

		if (p == NULL || !ipam_pool_usable(s, p, 1))
			continue;
		netaddr_format(&s->requested[i], text);
		if ((q = hmap_get(&m->reqs, text)) == NULL) {
			q = xcalloc(1, sizeof(*q));
			memcpy(q->text, text, sizeof(text));
			hmap_put(&m->reqs, q->text, q);
		}
		q->n += (size_t)delta;  /* -1 wraps back: counts never go below 0 */
		if (q->n == 0) {
			hmap_delete(&m->reqs, q->text);
			free(q);
			ipam_hint_lower(m, &s->requested[i]);
		}
	}
}

static char *
ipam_dup(const char *s)
{
	return s && *s ? xstrdup(s) : NULL;
}

/* ipam_svc_update copies what the allocator needs of v into s (not its
 * allocation). */
static void
ipam_svc_update(struct ipam_svc *s, const struct ipam_service *v)
{
	free(s->namespace);
	free(s->pool);
	free(s->sharing_key);
	free(s->ports);
	free(s->selector);
	s->namespace = xstrdup(v->namespace ? v->namespace : "");
	s->created = v->created;
	s->served = v->served;
	s->n_held = 0;
	for (size_t i = 0; i < v->n_held && s->n_held < IPAM_HELD_MAX; i++)
		if (netaddr_parse(v->held[i], &s->held[s->n_held]) == 0)
			s->n_held++;
	s->n_requested = 0;
	s->bad_request = 0;
	for (size_t i = 0; i < v->n_requested; i++) {
		struct netaddr a;
		if (netaddr_parse(v->requested[i], &a) < 0 || s->n_requested == IPAM_REQUESTS_MAX)
			s->bad_request = 1;
		else
			s->requested[s->n_requested++] = a;
	}
	s->pool = ipam_dup(v->pool);
	s->sharing_key = ipam_dup(v->sharing_key);
	s->ports = v->n_ports ? xmemdup(v->ports, v->n_ports * sizeof(*v->ports)) : NULL;
	s->n_ports = v->n_ports;
	s->etp_local = v->etp_local;
	s->selector = xstrdup(v->selector ? v->selector : "");
}

size_t
ipam_observe(struct ipam *m, const char *key, const struct ipam_service *svc)
{
	struct ipam_svc *s = hmap_get(&m->svcs, key);
	struct netaddr before[IPAM_HELD_MAX + IPAM_FAMILIES];
	size_t nb = 0, freed;

	if (s != NULL)
		nb = ipam_svc_addrs(s, before);
	if (s != NULL)
		ipam_reqs_count(m, s, -1);
	if (svc == NULL) {
		if (s == NULL)
			return 0;
		/* gone: its allocation goes with it */
		s->n_held = s->n_alloc = 0;
		freed = ipam_rehold(m, s, before, nb);
		hmap_delete(&m->svcs, key);
		ipam_svc_free(s);
		return freed;
	}
	if (s == NULL) {
		s = xcalloc(1, sizeof(*s));
		s->key = xstrdup(key);
		hmap_put(&m->svcs, s->key, s);
	}
	ipam_svc_update(s, svc);
	ipam_reqs_count(m, s, 1);
	if (!s->served)
		s->n_alloc = 0;  /* no longer ours: only its status holds */
	return ipam_rehold(m, s, before, nb);
}

size_t
ipam_release(struct ipam *m, const char *key)
{
	struct ipam_svc *s = hmap_get(&m->svcs, key);
	struct netaddr before[IPAM_HELD_MAX + IPAM_FAMILIES];
	size_t nb;

	if (s == NULL || s->n_alloc == 0)
		return 0;
	nb = ipam_svc_addrs(s, before);
	s->n_alloc = 0;
	return ipam_rehold(m, s, before, nb);
}

/* --- the rules ------------------------------------------------------------------ */

/* ipam_older tells whether a was created before b (then by namespace/name):
 * the one that wins a contested address. */
static int
ipam_older(const struct ipam_svc *a, const struct ipam_svc *b)
{
	if (a->created != b->created)
		return a->created < b->created;
	return strcmp(a->key, b->key) < 0;
}

/* ipam_ports_overlap: the same port number with the same protocol. */
static int
ipam_ports_overlap(const struct ipam_svc *a, const struct ipam_svc *b)
{
	for (size_t i = 0; i < a->n_ports; i++)
		for (size_t j = 0; j < b->n_ports; j++)
			if (a->ports[i].port == b->ports[j].port &&
			    strcmp(a->ports[i].protocol, b->ports[j].protocol) == 0)
				return 1;
	return 0;
}

/* Why two Services may not share an address. */
enum ipam_clash { IPAM_SHARE_OK, IPAM_CLASH_KEY, IPAM_CLASH_PORTS, IPAM_CLASH_POLICY };

static enum ipam_clash
ipam_compatible(const struct ipam_svc *a, const struct ipam_svc *b)
{
	if (a->sharing_key == NULL || b->sharing_key == NULL ||
	    strcmp(a->sharing_key, b->sharing_key) != 0)
		return IPAM_CLASH_KEY;
	if (ipam_ports_overlap(a, b))
		return IPAM_CLASH_PORTS;
	/* as MetalLB: all Cluster, or the same selector */
	if ((a->etp_local || b->etp_local) && strcmp(a->selector, b->selector) != 0)
		return IPAM_CLASH_POLICY;
	return IPAM_SHARE_OK;
}

static int
ipam_clash_msg(struct errbuf *e, int code, const char *addr, const struct ipam_svc *other,
    enum ipam_clash why)
{
	switch (why) {
	case IPAM_CLASH_PORTS:
		return errbuf_set(e, code, "address %s: ports overlap with the sharing Service %s",
		    addr, other->key);
	case IPAM_CLASH_POLICY:
		return errbuf_set(e, code, "address %s: the sharing Service %s has another "
		    "selector and one of them uses externalTrafficPolicy: Local", addr, other->key);
	default:
		return errbuf_set(e, code, "address %s is taken by %s", addr, other->key);
	}
}

/* ipam_may_hold checks that s may hold a alongside the others holding it:
 * 0, or ERR_UNAVAILABLE naming the first it clashes with. With
 * only_older, only holders older than s count (s keeps an address it holds
 * unless an older holder was there first). */
static int
ipam_may_hold(const struct ipam *m, const struct ipam_svc *s, const struct netaddr *a,
    int only_older, struct errbuf *e)
{
	const struct ipam_hold *h = ipam_hold_get(m, a);

	for (size_t i = 0; h && i < h->n; i++) {
		const struct ipam_svc *o = h->holders[i];
		enum ipam_clash why;
		if (o == s || (only_older && !ipam_older(o, s)))
			continue;
		if ((why = ipam_compatible(s, o)) != IPAM_SHARE_OK)
			return ipam_clash_msg(e, ERR_UNAVAILABLE, h->text, o, why);
	}
	return 0;
}

/* ipam_pool_usable tells whether s may take addresses from p: its
 * namespace, the pool it asked for, and autoAssign when it asked for no
 * pool and no address (explicit says so). */
static int
ipam_pool_usable(const struct ipam_svc *s, const struct ipam_pool *p, int explicit)
{
	if (!ipam_pool_allows(p, s->namespace))
		return 0;
	if (s->pool != NULL)
		return strcmp(s->pool, p->name) == 0;
	return explicit || p->auto_assign;
}

/* ipam_requested_by_older finds an older served Service that asks for a,
 * does not hold it, could use it, and cannot share it with s. */
static const struct ipam_svc *
ipam_requested_by_older(const struct ipam *m, const struct ipam_svc *s,
    const struct netaddr *a, const struct ipam_pool *p)
{
	struct hmap_iter it;
	void *v;

	hmap_iter_init(&it, &m->svcs);
	while (hmap_iter_next(&it, NULL, &v)) {
		const struct ipam_svc *o = v;
		if (o == s || !o->served || !ipam_older(o, s) || !ipam_pool_usable(o, p, 1) ||
		    ipam_compatible(s, o) == IPAM_SHARE_OK)
			continue;
		for (size_t i = 0; i < o->n_requested; i++)
			if (netaddr_cmp(&o->requested[i], a) == 0)
				return o;
	}
	return NULL;
}

/* ipam_requested_by_other tells whether another served Service asks for a
 * (auto-assignment leaves such addresses alone). */
static int
ipam_requested_by_other(const struct ipam *m, const struct ipam_svc *s,
    const struct netaddr *a)
{
	char text[NETADDR_TEXT_MAX];
	const struct ipam_req *q;
	size_t mine = 0;

	netaddr_format(a, text);
	if ((q = hmap_get(&m->reqs, text)) == NULL)
		return 0;
	for (size_t i = 0; s->served && i < s->n_requested; i++)
		if (netaddr_cmp(&s->requested[i], a) == 0)
			mine++;
	return q->n > mine;
}

static const char *
ipam_family_name(int family)
{
	return family == 4 ? "IPv4" : "IPv6";
}

/* ipam_choose_requested checks s's requested address of family. */
static int
ipam_choose_requested(const struct ipam *m, const struct ipam_svc *s,
    const struct netaddr *a, struct netaddr *ret, struct errbuf *e)
{
	const struct ipam_pool *p = ipam_pool_of(m, a);
	const struct ipam_svc *o;
	char text[NETADDR_TEXT_MAX];
	int r;

	netaddr_format(a, text);
	if (p == NULL)
		return errbuf_set(e, ERR_INVALID, "requested address %s is in no pool", text);
	if (s->pool != NULL && strcmp(s->pool, p->name) != 0)
		return errbuf_set(e, ERR_INVALID, "requested address %s is in pool %s, not in "
		    "the requested pool %s", text, p->name, s->pool);
	if (!ipam_pool_allows(p, s->namespace))
		return errbuf_set(e, ERR_INVALID, "requested address %s is in pool %s, which "
		    "namespace %s may not use", text, p->name, s->namespace);
	if ((r = ipam_may_hold(m, s, a, 0, e)) < 0)
		return r;
	if (!ipam_holds(ipam_hold_get(m, a), s) &&
	    (o = ipam_requested_by_older(m, s, a, p)) != NULL)
		return errbuf_set(e, ERR_UNAVAILABLE, "requested address %s is also requested "
		    "by the older Service %s", text, o->key);
	*ret = *a;
	return 0;
}

/* ipam_keep tells whether s may keep a, an address it holds, for its
 * current request (no preemption: only its own request or an older clashing
 * holder moves it). */
static int
ipam_keep(const struct ipam *m, const struct ipam_svc *s, const struct netaddr *a)
{
	const struct ipam_pool *p = ipam_pool_of(m, a);
	struct errbuf e;

	if (p != NULL && !ipam_pool_usable(s, p, 1))
		return 0;
	if (p == NULL && s->pool != NULL)
		return 0;
	return ipam_may_hold(m, s, a, 1, &e) == 0;
}

/* ipam_choose_auto picks an address of family for s: one it holds, else
 * one a compatible Service with its sharing key holds, else the first free
 * one, pools in their configured order. */
static int
ipam_choose_auto(struct ipam *m, const struct ipam_svc *s, int family,
    struct netaddr *ret, struct errbuf *e)
{
	struct netaddr mine[IPAM_HELD_MAX + IPAM_FAMILIES];
	size_t n = ipam_svc_addrs(s, mine), candidates = 0;

	for (size_t i = 0; i < n; i++)
		if (mine[i].family == family && ipam_keep(m, s, &mine[i])) {
			*ret = mine[i];
			return 0;
		}
	if (s->pool != NULL) {
		const struct ipam_pool *p = ipam_pool_named(m, s->pool);
		if (p == NULL)
			return errbuf_set(e, ERR_INVALID, "requested pool %s does not exist", s->pool);
		if (!ipam_pool_allows(p, s->namespace))
			return errbuf_set(e, ERR_INVALID, "requested pool %s does not allow namespace "
			    "%s", s->pool, s->namespace);
		if (!ipam_pool_has_family(p, family))
			return errbuf_set(e, ERR_INVALID, "requested pool %s has no %s addresses",
			    s->pool, ipam_family_name(family));
	}
	/* share first: an address a compatible Service with the key holds */
	if (s->sharing_key != NULL) {
		for (size_t pi = 0; pi < m->n_pools; pi++) {
			const struct ipam_pool *p = &m->pools[pi];
			struct hmap_iter it;
			const struct netaddr *best = NULL;
			void *v;
			if (!ipam_pool_usable(s, p, 0) || !ipam_pool_has_family(p, family))
				continue;
			hmap_iter_init(&it, &m->holds);
			while (hmap_iter_next(&it, NULL, &v)) {
				const struct ipam_hold *h = v;
				struct errbuf ignored;
				if (h->addr.family != family || h->pool != p ||
				    ipam_may_hold(m, s, &h->addr, 0, &ignored) < 0)
					continue;
				if (best == NULL || netaddr_cmp(&h->addr, best) < 0)
					best = &h->addr;
			}
			if (best != NULL) {
				*ret = *best;
				return 0;
			}
		}
	}
	for (size_t pi = 0; pi < m->n_pools; pi++) {
		struct ipam_pool *p = &m->pools[pi];
		if (!ipam_pool_usable(s, p, 0))
			continue;
		for (size_t ri = 0; ri < p->n_ranges; ri++) {
			const struct ipam_range *r = &p->ranges[ri];
			struct netaddr a = r->first;
			uint64_t off = p->hint[ri];
			if (a.family != family)
				continue;
			candidates++;
			if (netaddr_add(&a, off) < 0 || netaddr_cmp(&a, &r->last) > 0)
				continue;  /* every address of the range is taken */
			/* s asks for no address (or it would not be here), so "asked
			 * for by another" is "asked for": what the hint skips. Each
			 * step skips a held or asked-for address, and the hint keeps
			 * them from being walked again. */
			for (;;) {
				if (ipam_hold_get(m, &a) == NULL && !ipam_requested_by_other(m, s, &a)) {
					p->hint[ri] = off;
					*ret = a;
					return 0;
				}
				if (netaddr_cmp(&a, &r->last) >= 0 || netaddr_add(&a, 1) < 0) {
					p->hint[ri] = off + 1;
					break;
				}
				off++;
			}
		}
	}
	if (candidates == 0)
		return errbuf_set(e, ERR_INVALID, "no pool gives %s addresses to namespace %s "
		    "automatically", ipam_family_name(family), s->namespace);
	if (s->pool != NULL)
		return errbuf_set(e, ERR_UNAVAILABLE, "pool %s is exhausted (%s)", s->pool,
		    ipam_family_name(family));
	return errbuf_set(e, ERR_UNAVAILABLE, "every pool this Service may use is exhausted "
	    "(%s)", ipam_family_name(family));
}

int
ipam_assign(struct ipam *m, const struct ipam_service *svc, struct ipam_result *ret,
    struct errbuf *e)
{
	struct ipam_svc *s;
	struct netaddr got[IPAM_FAMILIES], before[IPAM_HELD_MAX + IPAM_FAMILIES];
	struct errbuf fe[IPAM_FAMILIES];
	int codes[IPAM_FAMILIES], ok = 0;
	size_t n = 0, want, nb;

	ipam_observe(m, svc->key, svc);
	s = hmap_get(&m->svcs, svc->key);
	if (s == NULL || !s->served)
		return errbuf_set(e, ERR_INTERNAL, "%s: not a Service this allocator serves",
		    svc->key);
	if (s->bad_request)
		return errbuf_set(e, ERR_INVALID, "the requested addresses of %s are not one "
		    "IP address per family", s->key);
	if (svc->n_families == 0 || svc->n_families > IPAM_FAMILIES)
		return errbuf_set(e, ERR_INVALID, "%s has no IP family", s->key);
	want = svc->policy == IPAM_SINGLE_STACK ? 1 : svc->n_families;
	for (size_t i = 0; i < want; i++) {
		int family = svc->families[i], r = 0;
		size_t j;
		for (j = 0; j < s->n_requested && s->requested[j].family != family; j++)
			;
		if (s->n_requested > 0 && j == s->n_requested)
			r = errbuf_set(&fe[i], ERR_INVALID, "no %s address is requested",
			    ipam_family_name(family));
		else if (s->n_requested > 0)
			r = ipam_choose_requested(m, s, &s->requested[j], &got[n], &fe[i]);
		else
			r = ipam_choose_auto(m, s, family, &got[n], &fe[i]);
		codes[i] = r;
		if (r == 0) {
			n++;
			ok++;
		}
	}
	/* SingleStack and RequireDualStack need every family, Prefer one */
	if (ok == 0 || (svc->policy != IPAM_PREFER_DUAL_STACK && (size_t)ok < want)) {
		for (size_t i = 0; i < want; i++)
			if (codes[i] < 0) {
				if (svc->policy == IPAM_REQUIRE_DUAL_STACK && ok > 0)
					return errbuf_set(e, codes[i], "RequireDualStack: %s", fe[i].msg);
				return errbuf_set(e, codes[i], "%s", fe[i].msg);
			}
	}
	memset(ret, 0, sizeof(*ret));
	ret->changed = n != s->n_held;
	for (size_t i = 0; i < n; i++) {
		const struct ipam_pool *p = ipam_pool_of(m, &got[i]);
		netaddr_format(&got[i], ret->addresses[i]);
		snprintf(ret->pools[i], sizeof(ret->pools[i]), "%s", p ? p->name : "");
		if (i >= s->n_held || netaddr_cmp(&got[i], &s->held[i]) != 0)
			ret->changed = 1;
	}
	ret->n = n;
	nb = ipam_svc_addrs(s, before);
	memcpy(s->alloc, got, n * sizeof(got[0]));
	s->n_alloc = n;
	ipam_rehold(m, s, before, nb);
	return 0;
}

int
ipam_pool_usage(const struct ipam *m, size_t pool, const char **ret_name,
    uint64_t used[IPAM_FAMILIES], double size[IPAM_FAMILIES])
{
	const struct ipam_pool *p;

	if (pool >= m->n_pools)
		return ERR_NOT_FOUND;
	p = &m->pools[pool];
	size[0] = size[1] = 0;
	for (size_t i = 0; i < p->n_ranges; i++) {
		int f = p->ranges[i].first.family == 4 ? 0 : 1;
		size[f] += netaddr_count(&p->ranges[i].first, &p->ranges[i].last);
	}
	used[0] = p->used[0];
	used[1] = p->used[1];
	*ret_name = p->name;
	return 0;
}

const char *
ipam_pool_named_of(const struct ipam *m, const char *addr)
{
	const struct ipam_pool *p;
	struct netaddr a;

	if (netaddr_parse(addr, &a) < 0 || (p = ipam_pool_of(m, &a)) == NULL)
		return NULL;
	return p->name;
}

int
ipam_allocation(const struct ipam *m, const char *key, struct ipam_result *ret)
{
	const struct ipam_svc *s = hmap_get(&m->svcs, key);

	if (s == NULL || s->n_alloc == 0)
		return 0;
	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < s->n_alloc; i++) {
		const struct ipam_pool *p = ipam_pool_of(m, &s->alloc[i]);
		netaddr_format(&s->alloc[i], ret->addresses[i]);
		snprintf(ret->pools[i], sizeof(ret->pools[i]), "%s", p ? p->name : "");
	}
	ret->n = s->n_alloc;
	return 1;
}

int
ipam_range_huge(const struct ipam_range *r)
{
	/* half of 2^32 or of 2^128 */
	double half = r->first.family == 4 ? 2147483648.0 :
	    170141183460469231731687303715884105728.0;

	return netaddr_count(&r->first, &r->last) >= half - 2;
}
