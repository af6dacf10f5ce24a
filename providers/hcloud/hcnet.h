/* hcnet.h - the private network the cloud-config names (network: a name or
 * an id): its id, resolved once by name through the API and kept, and its
 * current state (routes) for the route operations.
 *
 * Contract: never logs. Thread-safe (one lock, never held across a
 * request). A name that no network has is ERR_PERMANENT naming it; an API
 * failure is the client's error and is tried again at the next use. */
#ifndef BOOTCCM_PROVIDER_HCLOUD_HCNET_H
#define BOOTCCM_PROVIDER_HCLOUD_HCNET_H

#include <stdint.h>

#include "base/err.h"
#include "hcapi.h"
#include "hcclient.h"

struct hcnet;

/* hcnet_new keeps name_or_id (NULL or "": no network configured). A
 * decimal number is an id and needs no request. */
struct hcnet *hcnet_new(struct hcclient *c, const char *name_or_id);
void hcnet_free(struct hcnet *n);

/* hcnet_configured tells whether a network is configured. */
int hcnet_configured(const struct hcnet *n);

/* hcnet_name returns the configured name or id as written. */
const char *hcnet_name(const struct hcnet *n);

/* hcnet_id sets *ret to the network's id (0 when none is configured). */
int hcnet_id(struct hcnet *n, int64_t *ret, struct errbuf *e);

/* hcnet_get reads the network (GET /networks/{id}) into *ret (free with
 * hcapi_network_free). ERR_PERMANENT when none is configured or it is gone. */
int hcnet_get(struct hcnet *n, struct hcapi_network *ret, struct errbuf *e);

#endif
