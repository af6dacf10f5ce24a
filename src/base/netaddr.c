/* netaddr.c - IP address and prefix values. */
#include "base/netaddr.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/numparse.h"

/* netaddr_v4_ok refuses what inet_pton might take but Go refuses: leading
 * zeros ("010.0.0.1"), and anything but four dot-separated decimal parts. */
static int
netaddr_v4_ok(const char *s)
{
	int parts = 0, digits = 0;

	for (const char *p = s;; p++) {
		if (*p >= '0' && *p <= '9') {
			if (digits == 1 && p[-1] == '0')
				return 0;
			if (++digits > 3)
				return 0;
		} else if (*p == '.' || *p == '\0') {
			if (digits == 0)
				return 0;
			parts++;
			digits = 0;
			if (*p == '\0')
				break;
		} else {
			return 0;
		}
	}
	return parts == 4;
}

int
netaddr_parse(const char *s, struct netaddr *ret)
{
	struct netaddr a;

	if (s == NULL || *s == '\0')
		return ERR_INVALID;
	memset(&a, 0, sizeof(a));
	if (strchr(s, ':') == NULL) {
		if (!netaddr_v4_ok(s) || inet_pton(AF_INET, s, a.b) != 1)
			return ERR_INVALID;
		a.family = 4;
	} else {
		if (inet_pton(AF_INET6, s, a.b) != 1)
			return ERR_INVALID;
		a.family = 6;
	}
	*ret = a;
	return 0;
}

void
netaddr_format(const struct netaddr *a, char buf[NETADDR_TEXT_MAX])
{
	if (inet_ntop(a->family == 4 ? AF_INET : AF_INET6, a->b, buf, NETADDR_TEXT_MAX) == NULL)
		snprintf(buf, NETADDR_TEXT_MAX, "?");
}

int
netaddr_canonical(const char *s, char buf[NETADDR_TEXT_MAX])
{
	struct netaddr a;

	if (netaddr_parse(s, &a) < 0)
		return ERR_INVALID;
	netaddr_format(&a, buf);
	return 0;
}

int
netaddr_cmp(const struct netaddr *a, const struct netaddr *b)
{
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	return memcmp(a->b, b->b, 16);
}

int
netaddr_bits(const struct netaddr *a)
{
	return a->family == 4 ? 32 : 128;
}

int
netaddr_add(struct netaddr *a, uint64_t n)
{
	struct netaddr r = *a;
	int len = a->family == 4 ? 4 : 16;
	unsigned carry = 0;

	for (int i = len - 1; i >= 0; i--) {
		unsigned v = r.b[i] + (unsigned)(n & 0xff) + carry;
		r.b[i] = (unsigned char)v;
		carry = v >> 8;
		n >>= 8;
	}
	if (carry || n)
		return -1;
	*a = r;
	return 0;
}

/* netaddr_sub writes last - first, big-endian, into d; returns its length
 * in bytes (4 or 16). */
static int
netaddr_sub(const struct netaddr *first, const struct netaddr *last, unsigned char d[16])
{
	int len = first->family == 4 ? 4 : 16;
	int borrow = 0;

	for (int i = len - 1; i >= 0; i--) {
		int x = last->b[i] - first->b[i] - borrow;
		borrow = x < 0;
		d[i] = (unsigned char)(x + (borrow ? 256 : 0));
	}
	return len;
}

double
netaddr_count(const struct netaddr *first, const struct netaddr *last)
{
	unsigned char d[16];
	int len = netaddr_sub(first, last, d);
	double v = 0;

	for (int i = 0; i < len; i++)
		v = v * 256 + d[i];
	return v + 1;
}

uint64_t
netaddr_distance(const struct netaddr *first, const struct netaddr *last)
{
	unsigned char d[16];
	int len = netaddr_sub(first, last, d);
	uint64_t v = 0;

	for (int i = 0; i < len; i++) {
		if (i < len - 8 && d[i] != 0)
			return UINT64_MAX;
		if (i >= len - 8)
			v = v << 8 | d[i];
	}
	return v == UINT64_MAX ? UINT64_MAX : v + 1;
}

/* netprefix_mask clears (or tests) the host bits of a beyond bits. Returns
 * 1 when some were set. */
static int
netprefix_mask(struct netaddr *a, int bits)
{
	int len = a->family == 4 ? 4 : 16, set = 0;

	for (int i = 0; i < len; i++) {
		int keep = bits - i * 8;
		unsigned char m = keep >= 8 ? 0xff : keep <= 0 ? 0 : (unsigned char)(0xff << (8 - keep));
		if (a->b[i] & ~m)
			set = 1;
		a->b[i] &= m;
	}
	return set;
}

int
netprefix_parse(const char *s, int strict, struct netprefix *ret)
{
	char addr[NETADDR_TEXT_MAX];
	const char *slash;
	struct netprefix p;
	int64_t bits;

	if (s == NULL || (slash = strchr(s, '/')) == NULL ||
	    (size_t)(slash - s) >= sizeof(addr))
		return ERR_INVALID;
	memcpy(addr, s, (size_t)(slash - s));
	addr[slash - s] = '\0';
	if (netaddr_parse(addr, &p.addr) < 0)
		return ERR_INVALID;
	if (slash[1] < '0' || slash[1] > '9' || (slash[1] == '0' && slash[2] != '\0'))
		return ERR_INVALID;
	if (numparse(slash + 1, 0, 0, netaddr_bits(&p.addr), &bits, NULL) < 0)
		return ERR_INVALID;
	p.bits = (int)bits;
	if (netprefix_mask(&p.addr, p.bits) && strict)
		return ERR_INVALID;
	*ret = p;
	return 0;
}

void
netprefix_format(const struct netprefix *p, char buf[NETPREFIX_TEXT_MAX])
{
	char a[NETADDR_TEXT_MAX];

	netaddr_format(&p->addr, a);
	snprintf(buf, NETPREFIX_TEXT_MAX, "%s/%d", a, p->bits);
}

int
netprefix_contains(const struct netprefix *p, const struct netaddr *a)
{
	struct netaddr m = *a;

	if (a->family != p->addr.family)
		return 0;
	netprefix_mask(&m, p->bits);
	return memcmp(m.b, p->addr.b, 16) == 0;
}

int
netprefix_covers(const struct netprefix *outer, const struct netprefix *inner)
{
	return inner->addr.family == outer->addr.family && inner->bits >= outer->bits &&
	    netprefix_contains(outer, &inner->addr);
}

void
netprefix_last(const struct netprefix *p, struct netaddr *ret)
{
	int len = p->addr.family == 4 ? 4 : 16;

	*ret = p->addr;
	for (int i = 0; i < len; i++) {
		int keep = p->bits - i * 8;
		unsigned char m = keep >= 8 ? 0xff : keep <= 0 ? 0 : (unsigned char)(0xff << (8 - keep));
		ret->b[i] |= (unsigned char)~m;
	}
}
