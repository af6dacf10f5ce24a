/* digitalocean.h - DigitalOcean droplet metadata (/metadata/v1.json): the
 * facts the DigitalOcean cloud provider reports for a droplet.
 *
 * Contract: never logs. The providerID is digitalocean://<droplet_id>
 * (droplet_id a JSON number, or a string of digits as in cloud-init's tests);
 * the region is the droplet's region; DigitalOcean has no zones, and the
 * metadata does not name the droplet size. Addresses: Hostname, the first
 * private IPv4 (InternalIP), the first public IPv4 and IPv6 (ExternalIP). */
#ifndef BOOTCCM_MD_DIGITALOCEAN_H
#define BOOTCCM_MD_DIGITALOCEAN_H

#include "base/err.h"
#include "metadata/metadata.h"
#include "metadata/session.h"

#define MD_DIGITALOCEAN_DOC "/metadata/v1.json"

int md_digitalocean_build(const struct md_getter *g, struct md_instance *in,
    struct errbuf *e);
int md_digitalocean_fetch(const struct md_config *cfg, struct md_instance *in,
    struct errbuf *e);

#endif
