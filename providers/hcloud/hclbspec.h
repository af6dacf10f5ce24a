/* hclbspec.h - what a Service asks of its Hetzner Cloud load balancer (the
 * official CCM's annotations, load-balancer.hetzner.cloud/..., over the
 * cloud-config's defaults), how bootccm marks what it owns on a balancer,
 * and the plan that brings a balancer from what the API shows to what the
 * Service asks: the pure half of the load balancers, for tests.
 *
 * Ownership. A balancer is bootccm's when it carries both
 * hcloud-ccm/service-uid=<Service uid> and bootccm.io/cluster=<cluster>
 * (hclbspec_cluster_value). On such a balancer, the services (listen ports)
 * and server targets bootccm made are recorded in its labels
 * (bootccm.io/ports, bootccm.io/targets, continued in -1, -2... when longer
 * than a label value): a listen port or a target that is not recorded was
 * added by someone else and is never changed or removed (hcloud-ccm #249).
 * Adds are recorded before they are made and removes forgotten after, so a
 * crash between the two leaves a record of something absent (dropped by the
 * next plan), never something of ours unrecorded.
 *
 * Contract: pure; never logs. Messages name the Service and the annotation
 * ("Service web/front: annotation load-balancer.hetzner.cloud/health-check-
 * interval \"x\": not a duration"). Structs filled here own heap memory
 * released by their *_free. Out of memory is fatal. */
#ifndef BOOTCCM_PROVIDER_HCLOUD_HCLBSPEC_H
#define BOOTCCM_PROVIDER_HCLOUD_HCLBSPEC_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "cloud.h"
#include "base/err.h"
#include "hcapi.h"

#define HCLBSPEC_PREFIX "load-balancer.hetzner.cloud/"
#define HCLBSPEC_LABEL_UID "hcloud-ccm/service-uid"   /* the official CCM's */
#define HCLBSPEC_LABEL_CLUSTER "bootccm.io/cluster"
#define HCLBSPEC_LABEL_PORTS "bootccm.io/ports"
#define HCLBSPEC_LABEL_TARGETS "bootccm.io/targets"
#define HCLBSPEC_SELECTOR_PREFIX "bootccm.io/lb-"      /* server labels for node-selector */
#define HCLBSPEC_NAME_MAX 64           /* bytes of a balancer's name and its NUL */
#define HCLBSPEC_LABEL_VALUE_MAX 63    /* characters of a label value */
#define HCLBSPEC_PORTS_MAX 256         /* ports of one Service */
#define HCLBSPEC_SELECTOR_KEY_MAX 32   /* bytes of a selector label key and its NUL */

/* The cloud-config's load balancer defaults and the network. */
struct hclbspec_defaults {
	const char *location;          /* NULL or "": none */
	const char *network_zone;
	const char *type;              /* NULL or "": lb11 */
	const char *algorithm;         /* NULL or "": the API's (round_robin) */
	int use_private_ip;
	int disable_private_ingress;
	int disable_ipv6;
	int64_t network;               /* the configured network's id; 0: none */
};

struct hclbspec_hc {
	int set;                       /* some health-check annotation is given */
	char protocol[HCAPI_SHORT_MAX];
	int64_t port;                  /* 0: the destination port */
	int64_t interval, timeout, retries; /* seconds; -1: the API's default */
	char *domain, *path, *status_codes; /* NULL: not given */
	int tls;                       /* -1: not given */
};

struct hclbspec_port {
	int64_t listen, dest;          /* port, nodePort */
};

struct hclbspec {
	char name[HCLBSPEC_NAME_MAX];
	int name_set;                  /* from the annotation (renames) */
	char type[HCAPI_SHORT_MAX];
	int type_set;                  /* from the annotation (changes the type) */
	char location[HCAPI_SHORT_MAX];     /* "" with network_zone, or neither */
	char network_zone[HCAPI_SHORT_MAX];
	char algorithm[HCAPI_SHORT_MAX];    /* "" : the API's */
	int algorithm_set;
	int use_private_ip;
	int disable_public;            /* -1: not given (the interface is left alone) */
	int disable_private_ingress;
	int ipv6_disabled;
	int proxyprotocol;
	char hostname[CLOUD_ADDR_MAX];      /* "" : none */
	char private_ipv4[NETADDR_TEXT_MAX]; /* "" : any */
	const char *node_selector;     /* borrowed from the Service; NULL: none */
	char selector_key[HCLBSPEC_SELECTOR_KEY_MAX]; /* with node_selector */
	char protocol[HCAPI_SHORT_MAX];     /* tcp, http, https */
	struct hclbspec_hc hc;
	int http_set;
	char *cookie_name;
	int64_t cookie_lifetime;       /* seconds; -1: not given */
	char *certificates;            /* ids, ","-joined; NULL: not given */
	int redirect_http, sticky_sessions; /* -1: not given */
	int64_t network;               /* the configured network; 0: none */
	size_t n_ports;
	struct hclbspec_port ports[HCLBSPEC_PORTS_MAX];
};

/* hclbspec_parse reads svc's annotations over d into *ret (free with
 * hclbspec_free). ERR_INVALID naming the Service and the annotation or
 * port; on failure nothing is left to free. */
int hclbspec_parse(const struct cloud_service *svc, const struct hclbspec_defaults *d,
    const char *cluster, struct hclbspec *ret, struct errbuf *e);
void hclbspec_free(struct hclbspec *s);

/* hclbspec_default_name writes upstream's DefaultLoadBalancerName: "a" and
 * the uid without dashes, at most 32 characters. */
void hclbspec_default_name(const char *uid, char buf[HCLBSPEC_NAME_MAX]);

/* hclbspec_cluster_value writes the bootccm.io/cluster label's value for a
 * --cluster-name: the name when it is a valid label value, else "h-" and
 * a hash of it. */
void hclbspec_cluster_value(const char *cluster, char buf[HCLBSPEC_LABEL_VALUE_MAX + 1]);

/* hclbspec_selector_key writes the server label that stands for node
 * selector sel in cluster: "bootccm.io/lb-" and 12 hex digits of a hash. */
void hclbspec_selector_key(const char *cluster, const char *sel,
    char buf[HCLBSPEC_SELECTOR_KEY_MAX]);

/* hclbspec_ours tells whether lb carries this Service's uid and cluster
 * labels. */
int hclbspec_ours(const struct hcapi_lb *lb, const char *uid, const char *cluster_value);

/* What bootccm recorded on a balancer: listen ports and server targets,
 * sorted, unique. */
struct hclbspec_owned {
	size_t n_ports, n_targets;
	int64_t *ports, *targets;
};

/* hclbspec_owned_read reads the record from lb's labels (a malformed one
 * reads as empty: what cannot be read was not made by bootccm). */
void hclbspec_owned_read(const struct hcapi_lb *lb, struct hclbspec_owned *ret);
void hclbspec_owned_free(struct hclbspec_owned *o);

/* hclbspec_labels returns the labels object for lb (PUT or create): labels
 * (lb's when not NULL, else none) without any record of bootccm's, then the
 * uid and cluster labels and the record o. The caller's. */
json_object *hclbspec_labels(const struct hcapi_labels *labels, const char *uid,
    const char *cluster_value, const struct hclbspec_owned *o);

/* hclbspec_status computes the Service's status from spec and lb: the
 * hostname annotation's name alone, else the public IPv4 and (unless
 * disabled) IPv6 unless the public network is disabled, then the private
 * IPs unless private ingress is disabled; ipMode Proxy with proxy protocol,
 * else VIP. */
void hclbspec_status(const struct hclbspec *spec, const struct hcapi_lb *lb,
    struct cloud_lb_status *ret);

/* hclbspec_service_json returns the body of add_service (or update_service
 * with update, or one item of a create's services) for port p of spec. */
json_object *hclbspec_service_json(const struct hclbspec *spec, const struct hclbspec_port *p,
    int update);

/* For the plan (hclbplan.c): the health check a port of spec wants, whether
 * a protocol is http or https, the ownership record's copy and comparison,
 * and sets of ids (sorted, no repeats). */
void hclbspec_hc_want(const struct hclbspec *spec, const struct hclbspec_port *p,
    struct hcapi_lb_hc *w);
int hclbspec_is_http(const char *protocol);
void hclbspec_owned_copy(struct hclbspec_owned *dst, const struct hclbspec_owned *src);
int hclbspec_owned_eq(const struct hclbspec_owned *a, const struct hclbspec_owned *b);
size_t hclbspec_set_norm(int64_t *v, size_t n);
int hclbspec_set_has(const int64_t *v, size_t n, int64_t x);
void hclbspec_set_add(int64_t **v, size_t *n, int64_t x);
void hclbspec_set_del(int64_t *v, size_t *n, int64_t x);

#endif
