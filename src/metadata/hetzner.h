/* hetzner.h - Hetzner Cloud server metadata (/hetzner/v1/metadata, YAML):
 * the facts the hcloud cloud provider reports for a server.
 *
 * Contract: never logs. The providerID is hcloud://<instance-id>. The zone
 * label is the availability zone (the datacenter, fsn1-dc14) and the region
 * label its location (fsn1), as the hcloud provider sets them; the
 * metadata's own "region" is the network zone (eu-central) and is not a
 * label. The metadata does not name the server type. Addresses: Hostname,
 * the public IPv4 (ExternalIP), the private networks' IPs (InternalIP), and
 * on a server without IPv4 the public IPv6 of network-config (ExternalIP). */
#ifndef BOOTCCM_MD_HETZNER_H
#define BOOTCCM_MD_HETZNER_H

#include "base/err.h"
#include "metadata/metadata.h"
#include "metadata/session.h"

#define MD_HETZNER_META "/hetzner/v1/metadata"
#define MD_HETZNER_NETWORKS "/hetzner/v1/metadata/private-networks"
#define MD_HETZNER_LIST_MAX 64 /* private networks, interfaces, subnets read */

int md_hetzner_build(const struct md_getter *g, struct md_instance *in, struct errbuf *e);
int md_hetzner_fetch(const struct md_config *cfg, struct md_instance *in,
    struct errbuf *e);

#endif
