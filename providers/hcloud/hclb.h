/* hclb.h - the hcloud provider's load balancers (cloud.h's load balancer
 * operations) on the Hetzner Cloud Load Balancers API.
 *
 * - A Service's balancer is found by its label hcloud-ccm/service-uid=<uid>
 *   (one GET with a label selector), never by name: a crash between the
 *   create and the Service's status write finds the same balancer again.
 * - Owner safety (hclbspec.h): only a balancer with both the uid and the
 *   bootccm.io/cluster label is changed or deleted, and on it only the
 *   services and targets bootccm recorded. A balancer that holds the
 *   Service's name without its uid label (the create answers
 *   uniqueness_error), or carries the uid without the cluster label, is
 *   someone else's: left alone, and ensure fails naming it (the controller
 *   turns that into a SyncLoadBalancerFailed Warning Event).
 * - Creation is one POST with the services, the labels and the targets (up
 *   to the type's max_targets, learned once per type), whatever the number
 *   of nodes; later changes follow hclbplan_make: balancer changes, then
 *   services, then targets (#149: the ports are served before any target
 *   limit matters), each action waited for (hcclient's batched poll).
 * - Targets are the backend Nodes' servers by id; with the node-selector
 *   annotation, one label_selector target (hclbspec_selector_key) and the
 *   selected Nodes' servers carry that label, so a Node joining or leaving
 *   costs one server label change however many balancers select it.
 * - More backends than the type's max_targets: the balancer serves with as
 *   many as fit, and ensure fails ONCE with an error naming the limit (the
 *   controller's Warning Event), then succeeds while the limit stays
 *   exceeded: no loop of failing add_target calls (hcloud-ccm #149).
 * - Status: hclbspec_status (ipMode Proxy with the PROXY protocol).
 * - verify: one listing of the cluster's balancers for every Service.
 *
 * Contract: never logs; messages name the Service and the balancer.
 * Thread-safe. */
#ifndef BOOTCCM_PROVIDER_HCLOUD_HCLB_H
#define BOOTCCM_PROVIDER_HCLOUD_HCLB_H

#include <stddef.h>

#include "cloud.h"
#include "hcclient.h"
#include "hclbplan.h"
#include "hclbspec.h"
#include "hcnet.h"
#include "hcserver.h"

struct hclb;

/* hclb_new keeps d (its strings copied). */
struct hclb *hclb_new(struct hcclient *c, struct hcserver *servers, struct hcnet *net,
    const struct hclbspec_defaults *d);
void hclb_free(struct hclb *l);

int hclb_get(struct hclb *l, const char *cluster, const struct cloud_service *svc,
    struct cloud_lb_status *ret_status, int *ret_exists, struct errbuf *e);
int hclb_ensure(struct hclb *l, const char *cluster, const struct cloud_service *svc,
    const struct cloud_node *nodes, size_t n_nodes, struct cloud_lb_result *ret,
    struct errbuf *e);
int hclb_update_hosts(struct hclb *l, const char *cluster, const struct cloud_service *svc,
    const struct cloud_node *nodes, size_t n_nodes, struct errbuf *e);
int hclb_ensure_deleted(struct hclb *l, const char *cluster, const struct cloud_service *svc,
    struct cloud_lb_result *ret, struct errbuf *e);
int hclb_verify(struct hclb *l, const char *cluster, const struct cloud_services *svcs,
    const struct cloud_node *nodes, size_t n_nodes, unsigned char *drifted, struct errbuf *e);

/* hclb_node_selector returns svc's node-selector annotation (borrowed from
 * svc), or NULL. */
const char *hclb_node_selector(const struct cloud_service *svc);

#endif
