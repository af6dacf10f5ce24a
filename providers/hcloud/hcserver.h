/* hcserver.h - the hcloud provider's instances: Nodes found as Hetzner
 * Cloud servers, by providerID hcloud://<server id> or by name, through one
 * shared listing of all servers.
 *
 * The listing (GET /servers, HCCLIENT_PER_PAGE a page) is shared by every
 * caller for a short max age: the periodic address refresh of N Nodes
 * costs ceil(N / 50) requests, and a burst of lookups while the listing is
 * stale refreshes it once (callers wait for the listing in flight instead
 * of starting their own). A lookup not answered by a listing young enough
 * asks for the one server (GET /servers/{id}, or ?name=) unless the
 * listing is small (HCSERVER_CHEAP_PAGES) or as many single lookups have
 * been made since it as it has pages: then the listing is refreshed.
 * exists and shutdown accept older answers (HCSERVER_LIFECYCLE_MAX_AGE_NS):
 * the lifecycle controller asks every few seconds about every NotReady
 * Node, and a minute changes nothing there.
 *
 * "Does not exist" (ERR_NOT_FOUND) is said only when the API itself
 * answered not_found for the server's id, or no server has the Node's name
 * (GET /servers?name= answered an empty list): never from a server's
 * absence in a listing (a listing is confirmed by a lookup of that one
 * server), never on an error, a timeout or a rate limit. A providerID that
 * is not hcloud://<id> (a Robot server's hrobot://) is ERR_PERMANENT: not
 * this provider's to judge.
 *
 * Metadata is what the official CCM sets (HCCM hcloud/instances.go):
 * providerID hcloud://<id>, instance type server_type.name, region the
 * location's name, zone the location's legacy datacenter name
 * (hcserver_zone), addresses Hostname, ExternalIP (the IPv4 and/or the
 * IPv6 <prefix>::1 by the address family) and InternalIP (the private IP in
 * the configured network), and the label instance.hetzner.cloud/provided-by
 * = cloud.
 *
 * Contract: never logs. Thread-safe: one lock around the cache, never held
 * across a request. Out of memory is fatal. */
#ifndef BOOTCCM_PROVIDER_HCLOUD_HCSERVER_H
#define BOOTCCM_PROVIDER_HCLOUD_HCSERVER_H

#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "cloud.h"
#include "hcapi.h"
#include "hcclient.h"
#include "hcnet.h"

#define HCSERVER_MAX_AGE_NS (10 * NS_PER_S)          /* metadata and the listing (HCCM's) */
#define HCSERVER_LIFECYCLE_MAX_AGE_NS (60 * NS_PER_S) /* exists and shutdown */
#define HCSERVER_CHEAP_PAGES 2       /* a listing this short is refreshed rather than
	                                 one server looked up */
#define HCSERVER_PROVIDED_BY "instance.hetzner.cloud/provided-by"

/* Address families for ExternalIPs (cloud-config addressFamily). */
#define HCSERVER_IPV4 0x1
#define HCSERVER_IPV6 0x2

struct hcserver;

struct hcserver *hcserver_new(struct hcclient *c, struct hcnet *net, int family);
void hcserver_free(struct hcserver *s);

/* The instance operations of cloud.h (see there and above). */
int hcserver_exists(struct hcserver *s, const struct cloud_node *node, int *ret_exists,
    struct errbuf *e);
int hcserver_shutdown(struct hcserver *s, const struct cloud_node *node, int *ret_shutdown,
    struct errbuf *e);
int hcserver_metadata(struct hcserver *s, const struct cloud_node *node,
    struct cloud_instance_metadata *ret, struct errbuf *e);
int hcserver_list(struct hcserver *s, cloud_instance_cb cb, void *arg, struct errbuf *e);

/* hcserver_fn sees a server under the cache's lock: quick, no requests. */
typedef void (*hcserver_fn)(const struct hcapi_server *srv, void *arg);

/* hcserver_with finds node's server with an answer at most max_age_ns old
 * and calls fn with it. Errors as for exists. */
int hcserver_with(struct hcserver *s, const struct cloud_node *node, int64_t max_age_ns,
    hcserver_fn fn, void *arg, struct errbuf *e);

/* hcserver_by_private_ip finds the server whose IP in network is ip, in the
 * last listing (refreshing it first when refresh is set): 1 with its id and
 * the name of its Node (the server's name unless a lookup by Node said
 * otherwise) in name, 0 when no server has it. */
int hcserver_by_private_ip(struct hcserver *s, int64_t network, const char *ip, int refresh,
    int64_t *ret_id, char *name, size_t name_size, struct errbuf *e);

/* hcserver_forget drops what the cache knows of server id (it was changed:
 * the next lookup asks the API). */
void hcserver_forget(struct hcserver *s, int64_t id);

/* --- the pure parts, for tests -------------------------------------------- */

/* hcserver_provider_id parses a providerID: 1 with *ret_id for
 * hcloud://<id>, 0 for one of another scheme (hrobot://, aws://),
 * ERR_INVALID for a malformed hcloud:// one. */
int hcserver_provider_id(const char *pid, int64_t *ret_id);

/* hcserver_zone returns the zone the official CCM sets for a location
 * today: the location's legacy datacenter name (fsn1 -> fsn1-dc14, nbg1 ->
 * nbg1-dc3, hel1 -> hel1-dc2, ash -> ash-dc1, hil -> hil-dc1, sin ->
 * sin-dc1), else the location's own name (HCCM
 * internal/legacydatacenter/datacenter.go). */
const char *hcserver_zone(const char *location);

/* hcserver_fill fills *m from srv: providerID, type, zone, region, the
 * addresses for family and the private IPs in network (0: none), the
 * provided-by label; source CLOUD_SOURCE_API. */
void hcserver_fill(const struct hcapi_server *srv, int family, int64_t network,
    struct cloud_instance_metadata *m);

#endif
