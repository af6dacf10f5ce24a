/* openstack.h - OpenStack instance metadata from a config drive or the Nova
 * metadata service, in the configured order.
 *
 * Contract: never logs. meta_data.json gives the server uuid (providerID
 * openstack:///<uuid>, as the OpenStack provider writes it without regional
 * ids), name, hostname and availability zone; network_data.json the static
 * addresses; the EC2-compatible tree (service: /latest/meta-data/, drive:
 * ec2/latest/meta-data.json when present) the flavor, local-ipv4 and
 * public-ipv4. OpenStack metadata has no region. A config drive that is
 * absent (no openstack/latest/meta_data.json) passes to the next source; one
 * that is present but broken is an error, as is a broken service. */
#ifndef BOOTCCM_MD_OPENSTACK_H
#define BOOTCCM_MD_OPENSTACK_H

#include "base/err.h"
#include "metadata/metadata.h"
#include "metadata/session.h"

#define MD_OPENSTACK_META "/openstack/latest/meta_data.json"
#define MD_OPENSTACK_NETWORK "/openstack/latest/network_data.json"
#define MD_OPENSTACK_DRIVE_EC2 "/ec2/latest/meta-data.json"
#define MD_OPENSTACK_NETWORKS_MAX 64  /* network_data.json networks read */

/* md_openstack_build reads the documents through g (paths above, and
 * /latest/meta-data/... for the service) into in, which must be zeroed. */
int md_openstack_build(const struct md_getter *g, enum md_source source,
    struct md_instance *in, struct errbuf *e);

/* md_openstack_drive_get is a getter over a mounted config drive: arg is its
 * directory; a path is a file below it (ENOENT is a 404). */
int md_openstack_drive_get(void *arg, const char *path, int optional,
    struct md_answer *ret, struct errbuf *e);

int md_openstack_fetch(const struct md_config *cfg, struct md_instance *in,
    struct errbuf *e);

#endif
