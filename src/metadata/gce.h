/* gce.h - Google Compute Engine metadata server: the facts the GCE cloud
 * provider reads for its own node.
 *
 * Contract: never logs. Every request carries Metadata-Flavor: Google (the
 * server refuses others with 403). The providerID is
 * gce://<project-id>/<zone>/<instance-name>; the zone and machine type come
 * as projects/<number>/zones/<zone> and projects/<number>/machineTypes/<type>
 * and must have those four parts; the region is the zone without its last
 * "-x". */
#ifndef BOOTCCM_MD_GCE_H
#define BOOTCCM_MD_GCE_H

#include "base/err.h"
#include "metadata/metadata.h"
#include "metadata/session.h"

#define MD_GCE_INSTANCE "/computeMetadata/v1/instance/?recursive=true"
#define MD_GCE_PROJECT_ID "/computeMetadata/v1/project/project-id"
#define MD_GCE_NICS_MAX 16   /* network interfaces read (GCE allows 8) */

/* md_gce_build reads MD_GCE_INSTANCE (JSON) and MD_GCE_PROJECT_ID (text)
 * through g into in, which must be zeroed. */
int md_gce_build(const struct md_getter *g, struct md_instance *in, struct errbuf *e);

int md_gce_fetch(const struct md_config *cfg, struct md_instance *in, struct errbuf *e);

#endif
