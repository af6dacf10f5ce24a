/* ipam.h - the static provider's LoadBalancer address allocator: pools of
 * IPv4 and IPv6 ranges, every Service's held and requested addresses, and the
 * rules of ../shared static-provider contract (sharing keys, namespaces,
 * autoAssign, families, the older requester wins, no preemption).
 *
 * State is rebuilt, never stored: ipam_observe is told every Service the
 * cluster has (of any class, whoever wrote its status), and an address in a
 * Service's status counts as held by it. ipam_assign computes one served
 * Service's addresses and remembers them as its allocation until
 * ipam_release, so an address handed out is held from that moment, before
 * the status that shows it is written. An allocation never moves unless the
 * Service's own request changes or it conflicts with an older holder.
 *
 * Contract: not thread-safe (the provider serializes calls); strings in the
 * argument structs are copied; messages name Services as namespace/name.
 * ERR_UNAVAILABLE: no address now (exhausted, taken, requested by an older
 * Service) - may succeed once one is freed; ERR_INVALID: the request can
 * never be met as it stands (an address in no usable pool, a pool that does
 * not exist). Never logs. Out of memory is fatal. */
#ifndef BOOTCCM_PROVIDERS_STATIC_IPAM_H
#define BOOTCCM_PROVIDERS_STATIC_IPAM_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/netaddr.h"

#define IPAM_FAMILIES 2        /* index 0: IPv4, 1: IPv6 */
#define IPAM_REQUESTS_MAX 2    /* requested addresses: one per family */
#define IPAM_HELD_MAX 8        /* status addresses looked at per Service */

/* One entry of a pool's addresses: a CIDR or an inclusive range. */
struct ipam_range {
	struct netaddr first, last;  /* usable addresses, inclusive */
};

/* ipam_range_parse parses "192.0.2.0/28", "198.51.100.10-198.51.100.20" or
 * "2001:db8:1::/124". An IPv4 CIDR shorter than /31 loses its network and
 * broadcast addresses; a range keeps every address. */
int ipam_range_parse(const char *s, struct ipam_range *ret, struct errbuf *e);

struct ipam_pool_config {
	const char *name;
	const struct ipam_range *ranges;
	size_t n_ranges;
	const char *const *namespaces;   /* none: any namespace */
	size_t n_namespaces;
	int auto_assign;
};

enum ipam_policy { IPAM_SINGLE_STACK, IPAM_PREFER_DUAL_STACK, IPAM_REQUIRE_DUAL_STACK };

struct ipam_port {
	int32_t port;
	char protocol[8];            /* TCP, UDP, SCTP */
};

/* A Service as the allocator sees it. */
struct ipam_service {
	const char *key;             /* namespace/name */
	const char *namespace;
	int64_t created;             /* creationTimestamp, seconds */
	int served;                  /* ours to allocate for (type LoadBalancer, our class) */
	const char *const *held;     /* status.loadBalancer.ingress[].ip */
	size_t n_held;
	const char *const *requested; /* requested addresses, precedence applied */
	size_t n_requested;
	const char *pool;            /* requested pool, or NULL */
	const char *sharing_key;     /* or NULL: shares with nobody */
	const struct ipam_port *ports;
	size_t n_ports;
	int etp_local;               /* externalTrafficPolicy: Local */
	const char *selector;        /* spec.selector in a canonical text form */
	int families[IPAM_FAMILIES]; /* wanted, in spec.ipFamilies order: 4, 6 */
	size_t n_families;
	enum ipam_policy policy;
};

struct ipam;

/* ipam_pools_check checks pools: names unique, non-empty and short enough,
 * no two ranges overlapping (naming both pools). On failure *ret_bad is the
 * index of the pool at fault (of two that overlap, the later). */
int ipam_pools_check(const struct ipam_pool_config *pools, size_t n, size_t *ret_bad,
    struct errbuf *e);

/* ipam_new builds an allocator over pools, checked by ipam_pools_check. */
int ipam_new(const struct ipam_pool_config *pools, size_t n, struct ipam **ret,
    struct errbuf *e);
void ipam_free(struct ipam *m);

/* ipam_observe records svc as the cluster has it now (NULL svc with key:
 * gone). Returns how many addresses became free as a result (a waiting
 * Service may now get one). */
size_t ipam_observe(struct ipam *m, const char *key, const struct ipam_service *svc);

/* The outcome of ipam_assign: the Service's addresses in family order. */
struct ipam_result {
	size_t n;
	char addresses[IPAM_FAMILIES][NETADDR_TEXT_MAX];
	char pools[IPAM_FAMILIES][64];  /* the pool of each, "" when in none */
	int changed;                 /* differs from what the Service held before */
};

/* ipam_assign observes svc (which must be served) and gives it its
 * addresses. ERR_UNAVAILABLE / ERR_INVALID as above, with a message; the
 * previous allocation stays then. */
int ipam_assign(struct ipam *m, const struct ipam_service *svc, struct ipam_result *ret,
    struct errbuf *e);

/* ipam_release drops key's allocation (its status may still hold addresses
 * until observed otherwise). Returns how many addresses became free. */
size_t ipam_release(struct ipam *m, const char *key);

/* ipam_allocation tells key's allocation (what ipam_assign last gave it,
 * until ipam_release or it stops being served): 1 with *ret filled
 * (changed 0), or 0 when it has none (ret untouched). */
int ipam_allocation(const struct ipam *m, const char *key, struct ipam_result *ret);

/* ipam_pool_named_of returns the name of the pool holding the address
 * text addr, or NULL (no pool, or not an address). */
const char *ipam_pool_named_of(const struct ipam *m, const char *addr);

/* ipam_pool_usage reports a pool's addresses per family: used (an address
 * shared by several Services counts once) and the pool's size, a double as
 * the metric shows it (netaddr_count: exact up to 2^53, never saturated, so
 * ::/0's 2^128 shows as such). O(ranges of the pool). Returns 0, or
 * ERR_NOT_FOUND past the last pool. */
int ipam_pool_usage(const struct ipam *m, size_t pool, const char **ret_name,
    uint64_t used[IPAM_FAMILIES], double size[IPAM_FAMILIES]);

/* ipam_range_huge tells whether r holds half or more of its family's
 * addresses (0.0.0.0/0, 0.0.0.0/1, ::/0, ::/1): allowed, but a pool that
 * hands out other networks' addresses is almost surely a mistake. */
int ipam_range_huge(const struct ipam_range *r);

#endif
