/* azure.h - Azure Instance Metadata Service: the facts the Azure cloud
 * provider reads for its own node.
 *
 * Contract: never logs. Every request carries Metadata: true and
 * api-version=MD_AZURE_API_VERSION (the Azure provider's). The providerID is
 * azure:// + the VM's ARM resource id, with the resource group in lower case
 * as the Azure provider writes it (composed from subscriptionId,
 * resourceGroupName and name, or the scale set's "<set>_<n>" name, when the
 * service has no resourceId). The zone label is <location>-<zone>, or the
 * fault domain when the VM has no zone; the region is the location, both
 * lower case. When the primary interface has no public IPv4, the load
 * balancer's frontend address for its private IP is the ExternalIP. */
#ifndef BOOTCCM_MD_AZURE_H
#define BOOTCCM_MD_AZURE_H

#include "base/err.h"
#include "metadata/metadata.h"
#include "metadata/session.h"

#define MD_AZURE_API_VERSION "2021-10-01"
#define MD_AZURE_INSTANCE "/metadata/instance?api-version=" MD_AZURE_API_VERSION "&format=json"
#define MD_AZURE_LOADBALANCER "/metadata/loadbalancer?api-version=" MD_AZURE_API_VERSION \
	"&format=json"

/* md_azure_build reads MD_AZURE_INSTANCE (and MD_AZURE_LOADBALANCER, which
 * may be 404) through g into in, which must be zeroed. */
int md_azure_build(const struct md_getter *g, struct md_instance *in, struct errbuf *e);

int md_azure_fetch(const struct md_config *cfg, struct md_instance *in, struct errbuf *e);

#endif
