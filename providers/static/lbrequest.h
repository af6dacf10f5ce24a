/* lbrequest.h - what a Service asks of the static provider's allocator: its
 * annotations and fields, read with the precedence of the static provider's
 * contract (bootccm's own annotations, then MetalLB's two generations, then
 * kube-vip's, then spec.loadBalancerIP), as a struct ipam_service.
 *
 * Requested addresses, first set (non-empty) wins:
 *   bootccm.io/load-balancer-ips, metallb.io/loadBalancerIPs,
 *   metallb.universe.tf/loadBalancerIPs, kube-vip.io/loadbalancerIPs (only
 *   while it is not the provider's output), spec.loadBalancerIP;
 *   comma-separated, spaces around each address ignored, one per family.
 * Pool: bootccm.io/pool, metallb.io/address-pool,
 *   metallb.universe.tf/address-pool.
 * Sharing key: bootccm.io/allow-shared-ip, metallb.io/allow-shared-ip,
 *   metallb.universe.tf/allow-shared-ip.
 * Families: spec.ipFamilies in order (none: the requested addresses'
 *   families, else IPv4), spec.ipFamilyPolicy (none: SingleStack).
 *
 * Contract: never logs; messages name the Service (namespace/name) and the
 * annotation or field. Out of memory is fatal. */
#ifndef BOOTCCM_PROVIDERS_STATIC_LBREQUEST_H
#define BOOTCCM_PROVIDERS_STATIC_LBREQUEST_H

#include "cloud.h"
#include "base/err.h"
#include "ipam.h"
#include "base/netaddr.h"

#define LBREQUEST_IPS "bootccm.io/load-balancer-ips"
#define LBREQUEST_POOL "bootccm.io/pool"
#define LBREQUEST_SHARED "bootccm.io/allow-shared-ip"
#define LBREQUEST_KUBE_VIP_IPS "kube-vip.io/loadbalancerIPs"

struct lbrequest {
	struct ipam_service svc;       /* borrows from the cloud_service and from here */
	char *key;                     /* namespace/name */
	char ips_from[CLOUD_LABEL_KEY_MAX + 16]; /* where the requested addresses came
	                                  from ("annotation K", "spec.loadBalancerIP"), or "" */
	const char *held[CLOUD_LB_INGRESS_MAX];
	char requested_text[IPAM_REQUESTS_MAX][NETADDR_TEXT_MAX];
	const char *requested[IPAM_REQUESTS_MAX];
	struct ipam_port *ports;
	char *selector;                /* spec.selector as "k=v,..." sorted by key */
};

/* lbrequest_build reads svc into *ret, which the caller releases with
 * lbrequest_free whatever the result. kube_vip_output: the provider writes
 * kube-vip.io/loadbalancerIPs, so it is no request. Returns 0, or
 * ERR_INVALID for a malformed request, family or policy; *ret is filled
 * even then, without the requested addresses, so the Service's holdings can
 * still be observed. */
int lbrequest_build(const struct cloud_service *svc, int kube_vip_output,
    struct lbrequest *ret, struct errbuf *e);
void lbrequest_free(struct lbrequest *r);

/* lbrequest_annotation returns svc's annotation key, or NULL. */
const char *lbrequest_annotation(const struct cloud_service *svc, const char *key);

#endif
