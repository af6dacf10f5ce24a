/* hmap.c - chained hash map with string keys. */
#include "base/hmap.h"

#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

#define HMAP_MIN 16  /* buckets of a new table; a power of two */

struct hmap_entry {
	struct hmap_entry *next;
	uint64_t hash;
	const char *key;
	void *value;
};

uint64_t
hmap_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		h ^= *p;
		h *= 1099511628211ULL;
	}
	return h;
}

void
hmap_init(struct hmap *m, int flags)
{
	m->buckets = NULL;
	m->nbuckets = m->len = 0;
	m->flags = flags;
}

void
hmap_free(struct hmap *m, void (*free_value)(void *))
{
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct hmap_entry *e = m->buckets[i], *next;
		for (; e; e = next) {
			next = e->next;
			if (free_value)
				free_value(e->value);
			if (m->flags & HMAP_COPY_KEYS)
				free((char *)e->key);
			free(e);
		}
	}
	free(m->buckets);
	m->buckets = NULL;
	m->nbuckets = m->len = 0;
}

/* hmap_slot returns the link that points at key's entry, or the NULL link at
 * the end of its chain. The table must exist. */
static struct hmap_entry **
hmap_slot(const struct hmap *m, const char *key, uint64_t h)
{
	struct hmap_entry **pp = &m->buckets[h & (m->nbuckets - 1)];

	while (*pp && ((*pp)->hash != h || strcmp((*pp)->key, key) != 0))
		pp = &(*pp)->next;
	return pp;
}

static void
hmap_resize(struct hmap *m, size_t n)
{
	struct hmap_entry **b = xcalloc(n, sizeof(*b)), *e, *next;

	for (size_t i = 0; i < m->nbuckets; i++)
		for (e = m->buckets[i]; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	free(m->buckets);
	m->buckets = b;
	m->nbuckets = n;
}

void *
hmap_get(const struct hmap *m, const char *key)
{
	struct hmap_entry *e;

	if (m->len == 0)
		return NULL;
	e = *hmap_slot(m, key, hmap_hash(key));
	return e ? e->value : NULL;
}

void *
hmap_put(struct hmap *m, const char *key, void *value)
{
	uint64_t h = hmap_hash(key);
	struct hmap_entry **pp, *e;
	void *old;

	if (m->nbuckets == 0)
		hmap_resize(m, HMAP_MIN);
	pp = hmap_slot(m, key, h);
	if ((e = *pp) != NULL) {
		old = e->value;
		e->value = value;
		if (!(m->flags & HMAP_COPY_KEYS))
			e->key = key;  /* the new value may own the key */
		return old;
	}
	e = xmalloc(sizeof(*e));
	e->next = NULL;
	e->hash = h;
	e->key = m->flags & HMAP_COPY_KEYS ? xstrdup(key) : key;
	e->value = value;
	*pp = e;
	if (++m->len > m->nbuckets)
		hmap_resize(m, m->nbuckets * 2);
	return NULL;
}

void *
hmap_delete(struct hmap *m, const char *key)
{
	struct hmap_entry **pp, *e;
	void *value;

	if (m->len == 0)
		return NULL;
	pp = hmap_slot(m, key, hmap_hash(key));
	if ((e = *pp) == NULL)
		return NULL;
	*pp = e->next;
	value = e->value;
	if (m->flags & HMAP_COPY_KEYS)
		free((char *)e->key);
	free(e);
	m->len--;
	/* memory follows the live entries: a burst of keys does not pin a table */
	if (m->nbuckets > HMAP_MIN && m->len < m->nbuckets / 8)
		hmap_resize(m, m->nbuckets / 2);
	return value;
}

size_t
hmap_len(const struct hmap *m)
{
	return m->len;
}

void
hmap_iter_init(struct hmap_iter *it, const struct hmap *m)
{
	it->m = m;
	it->bucket = 0;
	it->next = NULL;
}

int
hmap_iter_next(struct hmap_iter *it, const char **ret_key, void **ret_value)
{
	struct hmap_entry *e = it->next;

	while (e == NULL && it->bucket < it->m->nbuckets)
		e = it->m->buckets[it->bucket++];
	if (e == NULL)
		return 0;
	it->next = e->next;
	if (ret_key)
		*ret_key = e->key;
	if (ret_value)
		*ret_value = e->value;
	return 1;
}
