/* hcloud.h - the `hcloud` provider: Hetzner Cloud's servers, load balancers
 * and network routes through its API (hcloud-api.md), with the official
 * CCM's names and semantics where it has them and bootccm's answers to its
 * known problems (a shared server listing, a client-side rate limit, owner
 * safety on load balancers, no failure loops on the API's limits).
 *
 * Cloud-config (--cloud-config):
 *   hcloud:
 *     tokenFile: /etc/kubernetes/hcloud/token  # required; re-read when it changes
 *     endpoint: https://api.hetzner.cloud/v1   # http:// only to a loopback address
 *     caFile: /etc/ssl/certs/ca-certificates.crt  # CAs for an https endpoint
 *     network: k8s-private      # name or id: InternalIPs, routes, private targets
 *     addressFamily: ipv4       # ipv4 | ipv6 | dualstack: the ExternalIPs
 *     maxRoutes: 100            # the network's route limit
 *     requestTimeout: 15s       # one API request, whole
 *     loadBalancers:            # defaults; the Services' annotations win
 *       location: fsn1          # or networkZone: eu-central
 *       type: lb11
 *       algorithm: round_robin  # or least_connections
 *       usePrivateIP: false
 *       disablePrivateIngress: false
 *       disableIPv6: false
 * Relative paths are the cloud-config's directory's. A token file that is
 * missing, empty or refused is no start-up error: the provider answers
 * every request with an error naming it (the local node then initializes
 * from the metadata service) and health reports it, until it is fixed;
 * with cloud_config.validate (--validate) it is an error.
 *
 * The provider is CLOUD_DEFINITIVE: a Node is deleted only when the API
 * answered not_found for its server (hcserver.h). Modules: hcclient (the
 * API client), hcserver (instances), hclb/hclbspec (load balancers),
 * hcroute (routes), hcnet (the network), hcapi (answers), hcbucket (the
 * rate limit). health reports a missing or refused token and a plain-HTTP
 * endpoint (tests only).
 *
 * Contract: never logs; see cloud.h. */
#ifndef BOOTCCM_PROVIDER_HCLOUD_H
#define BOOTCCM_PROVIDER_HCLOUD_H

#define HCLOUD_TIMEOUT_MAX_NS (3600LL * 1000000000LL) /* requestTimeout: an hour */

#include "cloud.h"

extern const struct cloud_provider hcloud_provider;

#endif
