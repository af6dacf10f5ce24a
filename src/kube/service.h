/* service.h - a Service as the cache keeps it: the fields the service
 * (load balancer) controller reads, decoded into one compact allocation.
 *
 * Contract: as node.h's. The key is "namespace/name"; a Service without a
 * namespace or a name is refused. Absent optional strings are NULL (so an
 * unset spec.loadBalancerClass is NULL, not ""), absent lists empty, absent
 * numbers 0. */
#ifndef BOOTCCM_KUBE_SERVICE_H
#define BOOTCCM_KUBE_SERVICE_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "base/err.h"
#include "kube/store.h"

#define KUBE_SERVICE_PATH "/api/v1/services"  /* every namespace */

struct kube_service_port {
	const char *name;
	const char *protocol;          /* TCP, UDP, SCTP */
	int32_t port;
	int32_t node_port;             /* 0 when none */
	int32_t target_port;           /* 0 when absent or a name */
	const char *target_port_name;  /* a named target port, else NULL */
	const char *app_protocol;
};

struct kube_lb_ingress {
	const char *ip;
	const char *hostname;
	const char *ip_mode;           /* VIP, Proxy */
};

struct kube_service {
	struct store_obj obj;          /* key: "namespace/name" */
	const char *namespace;
	const char *name;
	const struct store_kv *annotations;
	size_t nannotations;
	const char *const *nul_annotations; /* keys of annotations whose value holds a
	                                     * NUL byte (legal, and free to anyone who
	                                     * may patch the Service): left out of
	                                     * annotations */
	size_t nnul_annotations;
	const char *const *finalizers;
	size_t nfinalizers;
	int64_t deletion_timestamp;    /* 0 when not being deleted */
	const char *type;              /* ClusterIP, NodePort, LoadBalancer, ExternalName */
	const char *load_balancer_class;
	const struct kube_service_port *ports;
	size_t nports;
	const char *external_traffic_policy; /* Cluster, Local */
	int32_t health_check_node_port;
	const char *load_balancer_ip;
	const char *const *load_balancer_source_ranges;
	size_t nload_balancer_source_ranges;
	const char *const *external_ips;
	size_t nexternal_ips;
	const char *session_affinity;
	int32_t session_affinity_timeout; /* spec.sessionAffinityConfig.clientIP.timeoutSeconds */
	const char *const *ip_families;   /* spec.ipFamilies: IPv4, IPv6 */
	size_t nip_families;
	const char *ip_family_policy;     /* SingleStack, PreferDualStack, RequireDualStack */
	const struct store_kv *selector;  /* spec.selector */
	size_t nselector;
	int64_t creation_timestamp;       /* seconds since the epoch; 0 when absent */
	const struct kube_lb_ingress *ingress; /* status.loadBalancer.ingress */
	size_t ningress;
};

/* kube_service_decode builds a compact Service from a Service object; *ret
 * gets one reference. */
int kube_service_decode(json_object *o, const struct kube_service **ret,
    struct errbuf *e);

/* kube_service_decode_obj is kube_service_decode for the reflector. */
int kube_service_decode_obj(json_object *o, const struct store_obj **ret,
    struct errbuf *e);

static inline const struct kube_service *
kube_service_of(const struct store_obj *o)
{
	return (const struct kube_service *)o;
}

/* kube_service_annotation returns a value or NULL. */
const char *kube_service_annotation(const struct kube_service *s,
    const char *key);

/* kube_service_has_finalizer tells whether metadata.finalizers holds f. */
int kube_service_has_finalizer(const struct kube_service *s, const char *f);

#endif
