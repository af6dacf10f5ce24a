/* eventcorr.c - client-go's EventCorrelator: the aggregator (similar
 * messages into one "combined" Event), the logger (a repeat counted into the
 * Event it repeats) and the spam filter (a token bucket per source and
 * object), each an LRU cache of EVENTS_CACHE_MAX entries. */
#include "kube/eventcorr.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/hmap.h"
#include "base/tokenbucket.h"
#include "base/uuid.h"
#include "base/xalloc.h"

#define EVENTS_KEY_MAX 4096          /* bytes: a correlation key before hashing */
#define EVENTS_COMBINED_PREFIX "(combined from similar events): "
#define EVENTS_HEX_KEY 17            /* a 64-bit key in hex, with the NUL */

/* --- correlation caches --------------------------------------------------------
 * Keys are SipHash-2-4 values of the client-go key strings under a random
 * key: 8 bytes an entry instead of the strings (a message may be 1 KiB), and
 * nobody who cannot read the process's memory can make two keys collide.
 * Each cache is an hmap of the keys in hex and a list, most recent first. */

enum events_cache_kind { EVENTS_CACHE_AGG, EVENTS_CACHE_LOG, EVENTS_CACHE_SPAM };

struct events_entry {
	char key[EVENTS_HEX_KEY];              /* the hmap's key: the hash in hex */
	struct events_entry *prev, *next;     /* LRU list, most recent first */
	int64_t last_ns;                      /* last occurrence seen */
	union {
		struct {
			uint64_t msgs[EVENTS_SIMILAR_MAX]; /* distinct message hashes */
			int n;
		} agg;
		struct {
			int count;
			int64_t first_s;
			char *name;
			char *rv;
		} log;
		struct tokenbucket spam;
	} u;
};

struct events_cache {
	enum events_cache_kind kind;
	struct hmap map;                      /* key -> entry (borrows entry->key) */
	struct events_entry lru;              /* sentinel */
};

struct events_correlator {
	char component[EVENTS_HOST_MAX + 1];
	char host[EVENTS_HOST_MAX + 1];
	uint64_t k0, k1;                      /* SipHash key */
	struct events_cache agg, log, spam;
};

/* --- SipHash-2-4 (Aumasson and Bernstein) ---------------------------------------- */

#define EVENTS_ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define EVENTS_SIPROUND do { \
	v0 += v1; v1 = EVENTS_ROTL(v1, 13); v1 ^= v0; v0 = EVENTS_ROTL(v0, 32); \
	v2 += v3; v3 = EVENTS_ROTL(v3, 16); v3 ^= v2; \
	v0 += v3; v3 = EVENTS_ROTL(v3, 21); v3 ^= v0; \
	v2 += v1; v1 = EVENTS_ROTL(v1, 17); v1 ^= v2; v2 = EVENTS_ROTL(v2, 32); \
} while (0)

static uint64_t
events_siphash(uint64_t k0, uint64_t k1, const unsigned char *in, size_t len)
{
	uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
	uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
	uint64_t b = (uint64_t)len << 56, m;
	size_t i, left = len & 7;
	const unsigned char *end = in + len - left;

	for (; in != end; in += 8) {
		m = 0;
		for (i = 0; i < 8; i++)
			m |= (uint64_t)in[i] << (8 * i);
		v3 ^= m;
		EVENTS_SIPROUND;
		EVENTS_SIPROUND;
		v0 ^= m;
	}
	for (i = 0; i < left; i++)
		b |= (uint64_t)in[i] << (8 * i);
	v3 ^= b;
	EVENTS_SIPROUND;
	EVENTS_SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	EVENTS_SIPROUND;
	EVENTS_SIPROUND;
	EVENTS_SIPROUND;
	EVENTS_SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

/* events_key hashes the given strings joined with NULs (client-go joins them
 * with nothing, which lets "ab"+"c" equal "a"+"bc"; the separator cannot). */
static uint64_t
events_key(const struct events_correlator *c, const char *const *parts, size_t n)
{
	unsigned char buf[EVENTS_KEY_MAX];
	size_t off = 0;

	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(parts[i]);
		if (off + l + 1 > sizeof(buf))
			l = sizeof(buf) - off - 1; /* unreachable with the field caps */
		memcpy(buf + off, parts[i], l);
		off += l;
		buf[off++] = '\0';
	}
	return events_siphash(c->k0, c->k1, buf, off);
}

/* --- LRU caches -------------------------------------------------------------------- */

static void
events_cache_init(struct events_cache *c, enum events_cache_kind kind)
{
	hmap_init(&c->map, 0);
	c->kind = kind;
	c->lru.next = c->lru.prev = &c->lru;
}

static void
events_entry_free(struct events_cache *c, struct events_entry *en)
{
	if (c->kind == EVENTS_CACHE_LOG) {
		free(en->u.log.name);
		free(en->u.log.rv);
	}
	free(en);
}

static void
events_lru_unlink(struct events_entry *en)
{
	en->prev->next = en->next;
	en->next->prev = en->prev;
}

static void
events_lru_push(struct events_cache *c, struct events_entry *en)
{
	en->next = c->lru.next;
	en->prev = &c->lru;
	c->lru.next->prev = en;
	c->lru.next = en;
}

/* events_cache_get finds key and makes it the most recent entry. */
static struct events_entry *
events_cache_get(struct events_cache *c, uint64_t key)
{
	char hex[EVENTS_HEX_KEY];
	struct events_entry *en;

	snprintf(hex, sizeof(hex), "%016" PRIx64, key);
	if ((en = hmap_get(&c->map, hex)) != NULL) {
		events_lru_unlink(en);
		events_lru_push(c, en);
	}
	return en;
}

static void
events_cache_remove(struct events_cache *c, struct events_entry *en)
{
	hmap_delete(&c->map, en->key);
	events_lru_unlink(en);
	events_entry_free(c, en);
}

/* events_cache_add inserts a zeroed entry for key (absent), evicting the
 * least recently used one when full. */
static struct events_entry *
events_cache_add(struct events_cache *c, uint64_t key)
{
	struct events_entry *en;

	if (hmap_len(&c->map) >= EVENTS_CACHE_MAX)
		events_cache_remove(c, c->lru.prev);
	en = xcalloc(1, sizeof(*en));
	snprintf(en->key, sizeof(en->key), "%016" PRIx64, key);
	hmap_put(&c->map, en->key, en);
	events_lru_push(c, en);
	return en;
}

static void
events_cache_clear(struct events_cache *c)
{
	while (c->lru.next != &c->lru)
		events_cache_remove(c, c->lru.next);
	hmap_free(&c->map, NULL);
}

/* --- the correlator ------------------------------------------------------------------ */

struct events_correlator *
events_correlator_new(const char *component, const char *host)
{
	struct events_correlator *c = xcalloc(1, sizeof(*c));
	uint64_t k[2] = { 0, 0 };

	snprintf(c->component, sizeof(c->component), "%s", component ? component : EVENTS_COMPONENT);
	snprintf(c->host, sizeof(c->host), "%s", host ? host : "");
	/* without randomness the keys are still unique, only predictable */
	uuid_random(k, sizeof(k));
	c->k0 = k[0];
	c->k1 = k[1];
	events_cache_init(&c->agg, EVENTS_CACHE_AGG);
	events_cache_init(&c->log, EVENTS_CACHE_LOG);
	events_cache_init(&c->spam, EVENTS_CACHE_SPAM);
	return c;
}

void
events_correlator_free(struct events_correlator *c)
{
	if (c == NULL)
		return;
	events_cache_clear(&c->agg);
	events_cache_clear(&c->log);
	events_cache_clear(&c->spam);
	free(c);
}

const char *
events_correlator_component(const struct events_correlator *c)
{
	return c->component;
}

const char *
events_correlator_host(const struct events_correlator *c)
{
	return c->host;
}

/* events_name_at sets ev's Event name like client-go: "<object>.<Unix ns in
 * hex>", the object part cut so the whole stays a valid name. */
static void
events_name_at(struct events_event *ev, int64_t time_ns)
{
	char hex[24];
	size_t hl, ol = strlen(ev->obj_name);

	hl = (size_t)snprintf(hex, sizeof(hex), ".%" PRIx64, (uint64_t)time_ns);
	if (ol + hl > EVENTS_EVENT_NAME_MAX) {
		ol = EVENTS_EVENT_NAME_MAX - hl;
		while (ol > 0 && (ev->obj_name[ol - 1] == '.' || ev->obj_name[ol - 1] == '-'))
			ol--;
	}
	memcpy(ev->name, ev->obj_name, ol);
	memcpy(ev->name + ol, hex, hl + 1);
}

int64_t
events_floor_s(int64_t ns)
{
	return ns >= 0 ? ns / NS_PER_S : -((-ns + NS_PER_S - 1) / NS_PER_S);
}

/* events_aggregate is client-go's EventAggregator (by reason): returns the
 * key to count ev under, after turning ev into the "combined" event once a
 * tenth distinct message for the same object and reason arrived within the
 * window. */
static uint64_t
events_aggregate(struct events_correlator *c, struct events_event *ev)
{
	const char *akey[] = { c->component, c->host, ev->kind, ev->obj_namespace,
	    ev->obj_name, ev->uid, ev->api_version, ev->type, ev->reason,
	    c->component, c->host };
	const char *ekey[] = { c->component, c->host, ev->kind, ev->obj_namespace,
	    ev->obj_name, ev->field_path, ev->uid, ev->api_version, ev->type,
	    ev->reason, ev->message };
	uint64_t ak = events_key(c, akey, sizeof(akey) / sizeof(akey[0]));
	uint64_t ek = events_key(c, ekey, sizeof(ekey) / sizeof(ekey[0]));
	uint64_t mk = events_siphash(c->k0, c->k1, (const unsigned char *)ev->message,
	    strlen(ev->message));
	struct events_entry *en = events_cache_get(&c->agg, ak);
	int i, known = 0;

	if (en == NULL)
		en = events_cache_add(&c->agg, ak);
	if (en->u.agg.n > 0 && ev->time_ns - en->last_ns > (int64_t)EVENTS_WINDOW_S * NS_PER_S)
		en->u.agg.n = 0;
	en->last_ns = ev->time_ns;
	for (i = 0; i < en->u.agg.n; i++)
		if (en->u.agg.msgs[i] == mk)
			known = 1;
	if (!known && en->u.agg.n < EVENTS_SIMILAR_MAX)
		en->u.agg.msgs[en->u.agg.n++] = mk;
	if (en->u.agg.n < EVENTS_SIMILAR_MAX)
		return ek;
	/* keep the set from growing past the limit (client-go pops any one) */
	en->u.agg.n--;
	char msg[sizeof(ev->message)];
	snprintf(msg, sizeof(msg), "%s%s", EVENTS_COMBINED_PREFIX, ev->message);
	memcpy(ev->message, msg, sizeof(msg));
	return ak;
}

enum events_verdict
events_correlate(struct events_correlator *c, struct events_event *ev)
{
	const char *skey[] = { c->component, c->host, ev->kind, ev->obj_namespace,
	    ev->obj_name, ev->uid, ev->api_version };
	enum events_verdict v = EVENTS_CREATE;
	struct events_entry *en;
	uint64_t key = events_aggregate(c, ev);
	int64_t now = ev->time_ns;

	/* the logger: a repeat within the window counts into the same Event */
	ev->key = key;
	ev->rv[0] = '\0';
	en = events_cache_get(&c->log, key);
	if (en && en->u.log.count > 0 && en->u.log.name &&
	    now - en->last_ns <= (int64_t)EVENTS_WINDOW_S * NS_PER_S) {
		snprintf(ev->name, sizeof(ev->name), "%s", en->u.log.name);
		snprintf(ev->rv, sizeof(ev->rv), "%s", en->u.log.rv ? en->u.log.rv : "");
		ev->first_s = en->u.log.first_s;
		ev->count = en->u.log.count + 1;
		v = EVENTS_PATCH;
	} else {
		events_name_at(ev, now);
		ev->first_s = events_floor_s(now);
		ev->count = 1;
	}
	events_correlator_update(c, ev, ev->name, ev->rv, ev->count, ev->first_s);

	/* the spam filter, after counting like client-go's: a dropped repeat
	 * still raises the count the next written one carries */
	uint64_t sk = events_key(c, skey, sizeof(skey) / sizeof(skey[0]));
	if ((en = events_cache_get(&c->spam, sk)) == NULL) {
		en = events_cache_add(&c->spam, sk);
		tokenbucket_init(&en->u.spam, 1.0 / EVENTS_SPAM_REFILL_S, EVENTS_SPAM_BURST, now);
	}
	if (tokenbucket_take(&en->u.spam, 1, now) > 0)
		return EVENTS_SKIP;
	return v;
}

void
events_correlator_update(struct events_correlator *c, const struct events_event *ev,
    const char *name, const char *rv, int count, int64_t first_s)
{
	struct events_entry *en = events_cache_get(&c->log, ev->key);
	/* copied before the old ones go: name or rv may be one of them */
	char *n = xstrdup(name ? name : ""), *r = xstrdup(rv ? rv : "");

	if (en == NULL)
		en = events_cache_add(&c->log, ev->key);
	free(en->u.log.name);
	free(en->u.log.rv);
	en->u.log.name = n;
	en->u.log.rv = r;
	en->u.log.count = count;
	en->u.log.first_s = first_s;
	en->last_ns = ev->time_ns;
}
