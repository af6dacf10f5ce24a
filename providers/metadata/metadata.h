/* metadata.h - the `metadata` provider, for clouds without API access: the
 * local node's facts from the instance metadata service (src/metadata), a
 * remote node's from what its kubelet reported at registration.
 *
 * Contract: never logs; see cloud.h. Not CLOUD_DEFINITIVE: it cannot know
 * whether an instance exists, so exists and shutdown answer
 * ERR_NOT_IMPLEMENTED and nothing it says ever deletes a Node. No list, no
 * load balancers, no routes.
 *
 * Cloud-config (--cloud-config, optional; `{}` or empty means defaults):
 *   metadata:
 *     cloud: auto|ec2|gce|azure|openstack|digitalocean|hetzner
 *     endpoint: http://host[:port]
 *     dmiDir: /sys/class/dmi/id
 *     configDrive: /path/of/config-2
 * The --metadata-* flags win over these keys when set.
 * Registered in providers/table/table.c; the metadata layer's md_* answers
 * are converted into cloud.h's types here, so nothing above sees them. */
#ifndef BOOTCCM_PROVIDER_METADATA_H
#define BOOTCCM_PROVIDER_METADATA_H

#include "cloud.h"
#include "metadata/metadata.h"

extern const struct cloud_provider metadata_provider;

/* The local instance's facts: md_fetch in production. */
typedef int (*metadata_fetch_fn)(const struct md_config *cfg, struct md_instance *ret,
    struct errbuf *e);

/* metadata_set_fetch replaces the fetch function of a state made by
 * metadata_provider.init (tests use a fake: the metadata services are not
 * reachable from unit tests). Not thread-safe: call before any operation. */
void metadata_set_fetch(void *state, metadata_fetch_fn fetch);

/* metadata_md_config returns the state's merged metadata-layer config. */
const struct md_config *metadata_md_config(const void *state);

#endif
