/* static.h - the `static` provider, for bare metal and air-gapped sites: no
 * cloud API. Instances come from an inventory file (inventory.h);
 * LoadBalancer Services get addresses from pools (ipam.h), which an
 * announcer (kube-vip, a router's configuration) makes reachable.
 *
 * Cloud-config (--cloud-config; every key optional):
 *   static:
 *     inventory: /etc/bootccm/inventory.yaml  # relative: to the cloud-config's directory
 *     authoritative: false      # true: a node absent from the inventory does not exist
 *     pools:                    # tried in this order
 *       - name: public          # required, unique, at most 63 bytes
 *         addresses: [192.0.2.0/28, 198.51.100.10-198.51.100.20, 2001:db8:1::/124]
 *         namespaces: []        # none: any namespace
 *         autoAssign: true      # false: only for Services asking for it
 *     kubeVipAnnotation: false  # true: write kube-vip.io/loadbalancerIPs
 * Faults are refused at init with FILE:LINE:COL (overlapping pools name both).
 *
 * Instances: an inventory node answers from its entry (source
 * CLOUD_SOURCE_INVENTORY; an entry without addresses takes those its kubelet
 * reported with --node-ip); the inventory is re-read when it changes (at most
 * one look per STATIC_INVENTORY_INTERVAL_NS) and a broken file keeps the last
 * good one in force, reported by health. A node absent from the inventory:
 * with authoritative, ERR_NOT_FOUND (the provider is CLOUD_DEFINITIVE);
 * without, exists and shutdown answer ERR_NOT_IMPLEMENTED and its metadata is
 * what its kubelet reported (cloud_kubelet_reported, source
 * CLOUD_SOURCE_KUBELET). No inventory configured: every node is absent.
 *
 * Load balancers: observe feeds every Service to the allocator (an address
 * in any Service's status is held); ensure allocates (status ingress with
 * ipMode VIP, and with kubeVipAnnotation the annotation
 * kube-vip.io/loadbalancerIPs, comma-separated); ensure_deleted releases
 * (and asks to remove that annotation); get and verify compare the
 * allocation with the Service's status; update_hosts has nothing to do (the
 * announcer follows the nodes). ERR_UNAVAILABLE: no address now (exhausted,
 * taken, asked for by an older Service); ERR_INVALID: not as the request
 * stands. Without pools the provider serves no Service: ensure answers
 * ERR_IMPLEMENTED_ELSEWHERE (MetalLB or kube-vip-cloud-provider may). One
 * lock around the allocator.
 *
 * Metrics: bootccm_lb_pool_addresses{pool,family,state="used|free"}, a
 * shared address counted once, kept current with every change.
 *
 * Contract: never logs; see cloud.h. */
#ifndef BOOTCCM_PROVIDER_STATIC_H
#define BOOTCCM_PROVIDER_STATIC_H

#include <stdint.h>

#include "base/clock.h"
#include "cloud.h"

#define STATIC_INVENTORY_INTERVAL_NS (1 * NS_PER_S) /* the inventory file's stat, at most */
#define STATIC_POOL_NAME_MAX 63         /* bytes of a pool's name (a metric label) */
#define STATIC_POOLS_MAX 256            /* pools in the cloud-config */
#define STATIC_POOL_ENTRIES_MAX 256     /* CIDRs and ranges of one pool */

extern const struct cloud_provider static_provider;

/* static_set_inventory_interval changes how often the inventory file is
 * looked at (tests: 0, every use). Call before any operation. */
void static_set_inventory_interval(void *state, int64_t interval_ns);

#endif
