/* hcroute.h - the hcloud provider's routes (cloud.h's route operations): the
 * routes of the configured private network, destination = a Node's
 * podCIDR, gateway = its server's IP in that network (HCCM hcloud/
 * routes.go).
 *
 * - list is one GET of the network. A route's target Node is found from
 *   its gateway: what create learned, else the shared server listing
 *   (hcserver.h) as it is; only a gateway nobody knows refreshes the listing,
 *   and one no server has after that is a blackhole (its server is gone).
 *   An idle reconcile costs one request (the official CCM lists every
 *   server as well, each pass).
 * - create adds destination -> gateway (add_route; conflict and locked are
 *   retried by the client), replacing a route of the same destination to
 *   another gateway as the official CCM does; the network's route limit
 *   (max_routes, 100 by default; or the number at which the API answered
 *   resource_limit_exceeded, until the network has fewer routes) is an
 *   error naming the limit, decided without a request while the network is
 *   full, so the controller's Event repeats but no request does.
 * - delete removes it; 0 when it is already gone.
 * - Changes to the network go one at a time (the API answers conflict to
 *   a change while another runs): the controller's parallel calls wait
 *   their turn here instead of spending requests on conflicts.
 * Hetzner Cloud networks carry IPv4 only: an IPv6 podCIDR is ERR_PERMANENT.
 *
 * Contract: never logs. Thread-safe: one lock around the network's last
 * state, never held across a request, and one that orders the changes. */
#ifndef BOOTCCM_PROVIDER_HCLOUD_HCROUTE_H
#define BOOTCCM_PROVIDER_HCLOUD_HCROUTE_H

#include <stdint.h>

#include "cloud.h"
#include "hcclient.h"
#include "hcnet.h"
#include "hcserver.h"

#define HCROUTE_MAX_ROUTES 100          /* routes a network takes (the API's limit) */

struct hcroute;

struct hcroute *hcroute_new(struct hcclient *c, struct hcserver *servers, struct hcnet *net,
    int64_t max_routes);
void hcroute_free(struct hcroute *r);

int hcroute_list(struct hcroute *r, cloud_route_cb cb, void *arg, struct errbuf *e);
int hcroute_create(struct hcroute *r, const struct cloud_route *route,
    const struct cloud_node *target, struct errbuf *e);
int hcroute_delete(struct hcroute *r, const struct cloud_route *route, struct errbuf *e);

#endif
