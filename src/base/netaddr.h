/* netaddr.h - IP addresses and prefixes as values: strict parsing (IPv4
 * without leading zeros, as Go's net.ParseIP since 1.17 and the API server's
 * validation), canonical text (RFC 5952 for IPv6), ordering, arithmetic and
 * containment. Used wherever an address is compared or counted: pools,
 * cluster CIDRs, podCIDRs, node IPs.
 *
 * Contract: pure functions on caller-owned values; parsers return 0 or
 * ERR_INVALID and leave *ret untouched on failure. Never logs. */
#ifndef BOOTCCM_NETADDR_H
#define BOOTCCM_NETADDR_H

#include <stddef.h>
#include <stdint.h>

#define NETADDR_TEXT_MAX 46   /* bytes: INET6_ADDRSTRLEN */
#define NETPREFIX_TEXT_MAX 50 /* bytes: an address, "/128" and the NUL */

struct netaddr {
	int family;               /* 4 or 6 */
	unsigned char b[16];      /* network order; IPv4 in b[0..3], the rest 0 */
};

struct netprefix {
	struct netaddr addr;      /* the network address (host bits zero) */
	int bits;                 /* prefix length */
};

/* netaddr_parse parses an IPv4 or IPv6 address (no zone, no brackets). */
int netaddr_parse(const char *s, struct netaddr *ret);

/* netaddr_format writes the canonical text of a. */
void netaddr_format(const struct netaddr *a, char buf[NETADDR_TEXT_MAX]);

/* netaddr_canonical rewrites s in canonical form into buf: 0, or ERR_INVALID
 * when s is no address. */
int netaddr_canonical(const char *s, char buf[NETADDR_TEXT_MAX]);

/* netaddr_cmp orders IPv4 before IPv6, then by value: <0, 0, >0. */
int netaddr_cmp(const struct netaddr *a, const struct netaddr *b);

/* netaddr_bits returns 32 or 128. */
int netaddr_bits(const struct netaddr *a);

/* netaddr_add adds n to a in place; -1 (a unchanged) when the result would
 * leave the family's address space, else 0. */
int netaddr_add(struct netaddr *a, uint64_t n);

/* netaddr_distance returns last - first + 1 for first <= last of one
 * family, saturated at UINT64_MAX (an IPv6 /64 has 2^64 addresses). */
uint64_t netaddr_distance(const struct netaddr *first, const struct netaddr *last);

/* netaddr_count returns last - first + 1 as a double, for first <= last of
 * one family: exact up to 2^53, rounded beyond, never saturated (::/0 is
 * 2^128). What a metric shows of a range's size. */
double netaddr_count(const struct netaddr *first, const struct netaddr *last);

/* netprefix_parse parses "addr/bits". With strict, host bits must be zero
 * (ERR_INVALID otherwise: "10.0.0.1/24" is not a network); without it they
 * are cleared, as Go's net.ParseCIDR does. */
int netprefix_parse(const char *s, int strict, struct netprefix *ret);

/* netprefix_format writes "addr/bits". */
void netprefix_format(const struct netprefix *p, char buf[NETPREFIX_TEXT_MAX]);

/* netprefix_contains tells whether a lies in p (same family). */
int netprefix_contains(const struct netprefix *p, const struct netaddr *a);

/* netprefix_covers tells whether inner lies wholly inside outer. */
int netprefix_covers(const struct netprefix *outer, const struct netprefix *inner);

/* netprefix_last sets *ret to the last address of p. */
void netprefix_last(const struct netprefix *p, struct netaddr *ret);

#endif
