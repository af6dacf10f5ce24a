/* ec2.h - AWS EC2 instance metadata (IMDSv2): the session-token flow and the
 * facts the AWS cloud provider reads for its own node.
 *
 * Contract: never logs. md_ec2_fetch PUTs /latest/api/token (TTL 21600 s),
 * sends the token with every GET, and on a 401 fetches a fresh token and
 * repeats the GET once. It never falls back to tokenless IMDSv1: a token
 * PUT answered 403/404/405 is an error (an EC2-compatible service without
 * tokens, like OpenStack's, is not EC2). The providerID is
 * aws:///<availability-zone>/<instance-id>. Addresses as the AWS provider's:
 * every interface's local-ipv4s in device-number order (InternalIP; the
 * primary interface's ipv6s only on an instance without IPv4), public-ipv4
 * (ExternalIP), local-hostname (Hostname, InternalDNS), public-hostname
 * (ExternalDNS). */
#ifndef BOOTCCM_MD_EC2_H
#define BOOTCCM_MD_EC2_H

#include "base/err.h"
#include "metadata/metadata.h"
#include "metadata/session.h"

#define MD_EC2_TOKEN_TTL "21600"  /* seconds a session token lives (cloud-init's choice) */
#define MD_EC2_TOKEN_MAX 1024     /* bytes of a token (AWS's are 56) */
#define MD_EC2_RETOKENS_MAX 3     /* fresh tokens per fetch after a 401 */
#define MD_EC2_MACS_MAX 32        /* network interfaces read */

/* md_ec2_build reads the facts through g (paths like
 * /latest/meta-data/instance-id) into in, which must be zeroed. */
int md_ec2_build(const struct md_getter *g, struct md_instance *in, struct errbuf *e);

/* md_ec2_fetch reads the facts from the service at cfg's endpoint (else
 * MD_ENDPOINT_DEFAULT, then MD_ENDPOINT_EC2_IPV6 when nothing listens there). */
int md_ec2_fetch(const struct md_config *cfg, struct md_instance *in, struct errbuf *e);

#endif
