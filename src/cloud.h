/* cloud.h - the provider interface: a provider is a const struct of operation
 * groups (instances, load balancers, routes) found by name in a static table
 * (cloud_providers, defined with the providers in providers/table/).
 *
 * Contract: providers are library-like and never log; every operation returns
 * 0 or a negative ERR_* code (err.h) with a message naming the node or object
 * in the caller's errbuf, and leaves its ret_* outputs untouched on failure.
 * The upstream cloud-provider sentinels map to:
 *   ERR_NOT_FOUND              cloudprovider.InstanceNotFound: the cloud says
 *                              the instance does not exist. The ONLY answer
 *                              that may lead to a Node's deletion, and only
 *                              from a provider flagged CLOUD_DEFINITIVE (see
 *                              cloud_err_allows_delete);
 *   ERR_NOT_IMPLEMENTED        cloudprovider.NotImplemented: this provider
 *                              cannot answer; the caller skips the step;
 *   ERR_IMPLEMENTED_ELSEWHERE  cloudprovider.ImplementedElsewhere: another
 *                              component does this (no retry, no Event);
 *   retryable codes            transient failures (err_retryable: 5xx, 429,
 *                              timeouts, connection errors): retry with backoff;
 *   anything else              permanent for this input (bad reported data,
 *                              unusable answers): keep the taint, record why,
 *                              retry only with the controller's long backoff.
 * A NULL operation group means "not supported": its controller does not start.
 * Thread-safety: operations may be called from several worker threads at once
 * on the same state; a provider protects whatever state it mutates.
 * The interface owns its types: a provider built on another layer (the
 * metadata layer's md_* types) converts into these. */
#ifndef BOOTCCM_CLOUD_H
#define BOOTCCM_CLOUD_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/stop.h"

#define CLOUD_ID_MAX 512                /* bytes: providerID (Azure resource ids are long) */
#define CLOUD_SHORT_MAX 128             /* bytes: instance type, zone, region */
#define CLOUD_ADDR_MAX 256              /* bytes: one address (IP or DNS name, 253) */
#define CLOUD_ADDRS_MAX 32              /* addresses per instance */
#define CLOUD_LABELS_MAX 16             /* additional labels per instance */
#define CLOUD_LABEL_KEY_MAX 320         /* bytes: prefix (253) + "/" + name (63) + NUL */
#define CLOUD_LABEL_VALUE_MAX 64        /* bytes: a label value (63) + NUL */

/* Annotation a kubelet started with --node-ip sets: one IP or "a,b". */
#define CLOUD_PROVIDED_NODE_IP "alpha.kubernetes.io/provided-node-ip"
#define CLOUD_LABEL_ZONE "topology.kubernetes.io/zone"
#define CLOUD_LABEL_REGION "topology.kubernetes.io/region"
#define CLOUD_LABEL_INSTANCE_TYPE "node.kubernetes.io/instance-type"

/* Sources of instance metadata (struct cloud_instance_metadata.source). */
#define CLOUD_SOURCE_API "cloud-api"                 /* the cloud's own API */
#define CLOUD_SOURCE_METADATA "instance-metadata"    /* the local metadata service or config drive */
#define CLOUD_SOURCE_KUBELET "kubelet-reported"      /* what the Node's kubelet registered */
#define CLOUD_SOURCE_INVENTORY "inventory"           /* an inventory file (static provider) */

/* Provider capabilities (struct cloud_provider.flags). */
#define CLOUD_DEFINITIVE 0x1  /* instances.exists's ERR_NOT_FOUND / false comes
                                 from the cloud's own inventory, so it may lead
                                 to a Node's deletion. Without it, no answer of
                                 the provider ever deletes a Node. */

/* A key/value pair of the Node as the controller knows it (borrowed). */
struct cloud_kv {
	const char *key;
	const char *value;
};

/* Node address types, as in a Node's status.addresses. */
enum cloud_addr_type {
	CLOUD_ADDR_INTERNAL_IP,
	CLOUD_ADDR_EXTERNAL_IP,
	CLOUD_ADDR_HOSTNAME,
	CLOUD_ADDR_INTERNAL_DNS,
	CLOUD_ADDR_EXTERNAL_DNS,
};

struct cloud_address {
	enum cloud_addr_type type;
	char address[CLOUD_ADDR_MAX];
};

/* What the controller knows of a Node (all borrowed, valid during the call;
 * NULL or "" strings mean absent). */
struct cloud_node {
	const char *name;
	const char *provider_id;            /* spec.providerID */
	const struct cloud_kv *labels;
	size_t n_labels;
	const struct cloud_kv *annotations;
	size_t n_annotations;
	const struct cloud_address *addresses; /* status.addresses */
	size_t n_addresses;
	const char *const *pod_cidrs;       /* spec.podCIDRs */
	size_t n_pod_cidrs;
	const char *uid;                    /* metadata.uid */
};

struct cloud_label {
	char key[CLOUD_LABEL_KEY_MAX];
	char value[CLOUD_LABEL_VALUE_MAX];
};

/* cloudprovider.InstanceMetadata. Empty strings mean "the cloud does not
 * say"; the caller applies upstream's rules (providerID only when the Node has
 * none, labels never overwritten, kubernetes.io/ and k8s.io/ labels dropped). */
struct cloud_instance_metadata {
	/* where the answer came from, for Events, logs and the metrics' source
	 * label: CLOUD_SOURCE_*; "" means CLOUD_SOURCE_API */
	char source[24];
	char provider_id[CLOUD_ID_MAX];
	char instance_type[CLOUD_SHORT_MAX];
	char zone[CLOUD_SHORT_MAX];
	char region[CLOUD_SHORT_MAX];
	size_t n_addresses;
	struct cloud_address addresses[CLOUD_ADDRS_MAX];
	size_t n_labels;
	struct cloud_label labels[CLOUD_LABELS_MAX];
};

/* Called by instances.list once per instance; a negative return stops the
 * listing and is returned by list. */
typedef int (*cloud_instance_cb)(const struct cloud_instance_metadata *m, void *arg);

struct cloud_instances_ops {
	/* exists sets *ret_exists (1/0): 0 only from a CLOUD_DEFINITIVE provider. */
	int (*exists)(void *state, const struct cloud_node *node, int *ret_exists,
	    struct errbuf *e);
	/* shutdown sets *ret_shutdown: the instance exists but is stopped. */
	int (*shutdown)(void *state, const struct cloud_node *node, int *ret_shutdown,
	    struct errbuf *e);
	/* metadata fills *ret completely, or fails leaving it untouched. */
	int (*metadata)(void *state, const struct cloud_node *node,
	    struct cloud_instance_metadata *ret, struct errbuf *e);
	/* list (optional, NULL: absent) calls cb for every instance the cloud
	 * has, in pages, so a periodic sync costs O(N / page size) cloud calls. */
	int (*list)(void *state, cloud_instance_cb cb, void *arg, struct errbuf *e);
};

/* --- load balancers ---------------------------------------------------------
 *
 * The service controller calls these for the Services it serves (type
 * LoadBalancer, a class it serves), with the backend Nodes it selected
 * (upstream's predicates: not being deleted, not excluded by label, not
 * tainted ToBeDeletedByClusterAutoscaler). The contracts are upstream's
 * LoadBalancer interface, plus what upstream lacks: a batched drift check,
 * the node labels a balancer selects on, and a view of every Service for
 * providers that allocate from shared state (the static provider's pools).
 * ERR_UNAVAILABLE means "no capacity now" (an exhausted pool): the
 * controller retries, and at once when observe reports something freed. */

#define CLOUD_LB_INGRESS_MAX 8          /* status.loadBalancer.ingress entries */
#define CLOUD_LB_ANNOTATIONS_MAX 4      /* annotations a provider writes on a Service */
#define CLOUD_LB_ANNOTATION_VALUE_MAX 512 /* bytes of one such value */
#define CLOUD_IP_MODE_MAX 8             /* "VIP", "Proxy" */

struct cloud_lb_port {
	const char *name;              /* or NULL */
	const char *protocol;          /* TCP, UDP, SCTP */
	int32_t port;
	int32_t node_port;             /* 0 when none is allocated */
	const char *app_protocol;      /* or NULL */
};

struct cloud_lb_ingress {
	char ip[CLOUD_ADDR_MAX];       /* "" for a hostname entry */
	char hostname[CLOUD_ADDR_MAX]; /* "" for an IP entry */
	char ip_mode[CLOUD_IP_MODE_MAX]; /* "VIP", "Proxy", or "" (the API server's default, VIP) */
};

struct cloud_lb_status {
	size_t n_ingress;
	struct cloud_lb_ingress ingress[CLOUD_LB_INGRESS_MAX];
};

/* A Service as the controller knows it (all borrowed, valid during the call;
 * NULL strings mean absent). */
struct cloud_service {
	const char *namespace_;
	const char *name;
	const char *uid;
	int64_t creation_timestamp;        /* seconds since the epoch */
	const struct cloud_kv *annotations;
	size_t n_annotations;
	const char *const *nul_annotations; /* keys of annotations whose value holds a
	                                      NUL byte, left out of annotations: a
	                                      provider that reads one refuses the
	                                      Service (cloud_service_nul_check) */
	size_t n_nul_annotations;
	const struct cloud_kv *selector;   /* spec.selector */
	size_t n_selector;
	const char *type;                  /* spec.type */
	const char *load_balancer_class;   /* spec.loadBalancerClass */
	const char *load_balancer_ip;      /* spec.loadBalancerIP (deprecated upstream) */
	const char *external_traffic_policy; /* Cluster, Local */
	int32_t health_check_node_port;
	const char *const *ip_families;    /* spec.ipFamilies: "IPv4", "IPv6" */
	size_t n_ip_families;
	const char *ip_family_policy;      /* SingleStack, PreferDualStack, RequireDualStack */
	const char *const *source_ranges;  /* spec.loadBalancerSourceRanges */
	size_t n_source_ranges;
	const char *session_affinity;
	const struct cloud_lb_port *ports;
	size_t n_ports;
	const struct cloud_lb_status *status; /* status.loadBalancer as it is now */
	int served;                        /* the service controller serves it: type
	                                      LoadBalancer and a class it serves */
};

/* The Services of a verify call: at(arg, i) returns the i-th of n (i < n,
 * any order, any number of times), valid until the next call of at: the
 * controller builds them one at a time instead of holding n at once (a
 * Service's status alone is some 4 KiB: 8 MiB for 2,000). */
struct cloud_services {
	size_t n;
	const struct cloud_service *(*at)(void *arg, size_t i);
	void *arg;
};

/* An annotation a provider asks the controller to write on the Service
 * (kube-vip.io/loadbalancerIPs for an announcer); remove drops it. */
struct cloud_lb_annotation {
	char key[CLOUD_LABEL_KEY_MAX];
	char value[CLOUD_LB_ANNOTATION_VALUE_MAX];
	int remove;
};

struct cloud_lb_result {
	struct cloud_lb_status status;
	size_t n_annotations;
	struct cloud_lb_annotation annotations[CLOUD_LB_ANNOTATIONS_MAX];
};

struct cloud_lb_ops {
	/* get sets *ret_exists and, when it exists, *ret_status (upstream's
	 * GetLoadBalancer). */
	int (*get)(void *state, const char *cluster, const struct cloud_service *svc,
	    struct cloud_lb_status *ret_status, int *ret_exists, struct errbuf *e);
	/* ensure creates or updates the balancer to match svc and nodes;
	 * idempotent. Fills *ret (status, annotations to write). */
	int (*ensure)(void *state, const char *cluster, const struct cloud_service *svc,
	    const struct cloud_node *nodes, size_t n_nodes, struct cloud_lb_result *ret,
	    struct errbuf *e);
	/* update_hosts changes only the backend nodes of an existing balancer
	 * (NULL: the controller calls ensure instead). */
	int (*update_hosts)(void *state, const char *cluster, const struct cloud_service *svc,
	    const struct cloud_node *nodes, size_t n_nodes, struct errbuf *e);
	/* ensure_deleted deletes it; 0 when it is already gone. Fills *ret with
	 * the annotations to remove from the Service (the status is cleared by
	 * the controller). */
	int (*ensure_deleted)(void *state, const char *cluster,
	    const struct cloud_service *svc, struct cloud_lb_result *ret, struct errbuf *e);
	/* verify (optional) tells, with as few cloud calls as it can (one batched
	 * listing), which of the served Services svcs' balancers drifted from
	 * what ensure made of them: missing, changed, or not what their status
	 * says. Sets drifted[i] to 1 or 0 for each i < svcs->n. NULL: the
	 * controller calls get for each and compares existence and status. */
	int (*verify)(void *state, const char *cluster, const struct cloud_services *svcs,
	    const struct cloud_node *nodes, size_t n_nodes, unsigned char *drifted,
	    struct errbuf *e);
	/* node_selector (optional) returns the label selector (labelsel.h
	 * syntax) by which svc's balancer picks its backends among nodes, or
	 * NULL: the controller re-syncs svc when a Node's labels start or stop
	 * matching it. */
	const char *(*node_selector)(void *state, const struct cloud_service *svc);
	/* observe (optional) hears of every Service the cluster has, served or
	 * not, as it is now (svc NULL: deleted; key is namespace/name), before
	 * the controller's first ensure; for providers whose answers depend on
	 * all Services (an address held by any of them is taken). Quick, no I/O.
	 * Returns 1 when something was freed (a waiting Service may now get
	 * it), else 0. */
	int (*observe)(void *state, const char *key, const struct cloud_service *svc);
};

/* --- routes ---------------------------------------------------------------- */

#define CLOUD_CIDR_MAX 64               /* bytes: an IPv6 CIDR and its NUL */

struct cloud_route {
	char name[CLOUD_ID_MAX];
	char target_node[CLOUD_ADDR_MAX];  /* Node name */
	char destination_cidr[CLOUD_CIDR_MAX];
	int blackhole;                     /* the target instance is gone */
};

typedef int (*cloud_route_cb)(const struct cloud_route *route, void *arg);

struct cloud_routes_ops {
	/* list calls cb for each route of the cluster (one listing). */
	int (*list)(void *state, const char *cluster, cloud_route_cb cb, void *arg,
	    struct errbuf *e);
	/* create routes route->destination_cidr to the Node target (route's
	 * target_node); idempotent. name_hint is the Node's uid. */
	int (*create)(void *state, const char *cluster, const char *name_hint,
	    const struct cloud_route *route, const struct cloud_node *target,
	    struct errbuf *e);
	/* delete removes it; 0 when it is already gone. */
	int (*delete_)(void *state, const char *cluster, const struct cloud_route *route,
	    struct errbuf *e);
};

/* What the daemon passes to a provider's init (borrowed for the call only:
 * a provider copies what it keeps). */
struct cloud_config {
	const char *node_name;         /* --node-name: the local node */
	const char *config_path;       /* --cloud-config, or NULL/"": defaults */
	/* --metadata-* flags as given; NULL, "" or the flag's default value
	 * means "not set", so the cloud-config's metadata: section applies. */
	const char *md_cloud;
	const char *md_endpoint;
	const char *md_dmi_dir;
	const char *md_config_drive;
	struct stop *stop;                 /* abandon cloud retries once stopped */
	const char *cluster_name;          /* --cluster-name */
	void (*warn)(const char *msg);     /* NULL: none; init's warnings about input it
	                                      accepts (the daemon logs them, --validate
	                                      too); msg names the file and field */
	int validate;                      /* --validate: an input the daemon would start
	                                      without and wait for (a credential file
	                                      not written yet) is an error */
};

struct cloud_provider {
	const char *name;
	unsigned flags;                /* CLOUD_DEFINITIVE ... */
	/* init reads cfg (and the cloud-config file) into *ret_state. */
	int (*init)(const struct cloud_config *cfg, void **ret_state, struct errbuf *e);
	void (*free)(void *state);
	const struct cloud_instances_ops *instances;   /* NULL: not supported */
	const struct cloud_lb_ops *load_balancers;      /* NULL: not supported */
	const struct cloud_routes_ops *routes;          /* NULL: not supported */
	/* health (optional) reports a standing problem of the provider's own
	 * input that it works around (an inventory file that no longer parses:
	 * the last good one stays in force): 0, or an error naming FILE:line.
	 * The daemon polls it, logs a change and records a Warning Event. */
	int (*health)(void *state, struct errbuf *e);
	/* credentials (optional: a provider without credential files) looks
	 * at the provider's credential files (a stat each; a read when one
	 * changed) and returns a number that changes whenever the credentials
	 * in force changed. The daemon polls it every
	 * CLOUD_CREDENTIALS_POLL_NS; on a change the controllers retry at
	 * once, with their backoff forgotten, whatever waits on a failure
	 * (a refused token's nodes, Services, routes). Quick, never blocks on
	 * the network. */
	uint64_t (*credentials)(void *state);
};

/* How often the daemon asks a provider's credentials operation: a
 * replaced credential file is in force within this (and the retries it
 * starts). */
#define CLOUD_CREDENTIALS_POLL_NS (500LL * 1000 * 1000)

/* cloud_service_nul_check returns ERR_INVALID ("Service NS/NAME: annotation
 * KEY holds a NUL character, which bootccm cannot read") when an annotation
 * the provider reads (one of keys, NULL-terminated, or any whose key starts
 * with prefix; either may be NULL) is among svc's nul_annotations, else 0:
 * a Service is not served on a value bootccm could only read in part, and an
 * annotation it does not read never stops it. */
int cloud_service_nul_check(const struct cloud_service *svc, const char *const *keys,
    const char *prefix, struct errbuf *e);

/* A node IP from the provided-node-ip annotation: its family, its bytes
 * (IPv4 in the first 4) and its canonical text (RFC 5952 for IPv6). */
struct cloud_node_ip {
	int family;                    /* AF_INET or AF_INET6 */
	unsigned char bin[16];
	char text[46];                 /* INET6_ADDRSTRLEN */
};

/* cloud_provided_node_ips parses CLOUD_PROVIDED_NODE_IP's value v, as the
 * kubelet writes it: one IP, or an IPv4 and an IPv6 in either order.
 * Returns how many (1 or 2), or ERR_INVALID with a message naming node and
 * the annotation. */
int cloud_provided_node_ips(const char *node, const char *v,
    struct cloud_node_ip ips[2], struct errbuf *e);

/* cloud_kubelet_reported fills *m (zeroed by the caller) from what node's
 * kubelet registered: spec.providerID, the zone, region and instance-type
 * labels, the provided-node-ip annotation as InternalIP addresses; source
 * CLOUD_SOURCE_KUBELET. Every value is checked: ERR_INVALID names the node
 * and the field; ERR_PERMANENT when it reported none of them (the message
 * names the kubelet flags to add). For every provider that knows a node
 * only by what its kubelet said (the static provider's nodes outside its
 * inventory). */
int cloud_kubelet_reported(const struct cloud_node *node,
    struct cloud_instance_metadata *m, struct errbuf *e);

/* cloud_provider_id_valid checks "<scheme>://<rest>": a scheme as the
 * official CCMs use (aws, gce, azure, openstack, digitalocean, hcloud...),
 * then printable characters without spaces and not only slashes, shorter
 * than CLOUD_ID_MAX. */
int cloud_provider_id_valid(const char *s);

/* cloud_services_of returns the cloud_services of an array of n Services
 * (borrowed: valid as long as v and what it points to). */
struct cloud_services cloud_services_of(const struct cloud_service *const *v, size_t n);

/* cloud_node_ip_equal tells whether s is an IP equal to ip. */
int cloud_node_ip_equal(const struct cloud_node_ip *ip, const char *s);

/* cloud_providers is the static table of every provider linked in, NULL
 * terminated (no dlopen: the binary is static). Defined in
 * providers/table/table.c, so this layer names no provider. */
extern const struct cloud_provider *const cloud_providers[];

/* cloud_addr_type_name returns the API's name of t ("InternalIP"). */
const char *cloud_addr_type_name(enum cloud_addr_type t);

/* cloud_addr_type_parse parses a Node address type ("InternalIP", ...);
 * returns 0 and sets *ret, or ERR_INVALID for a type it does not know. */
int cloud_addr_type_parse(const char *s, enum cloud_addr_type *ret);

/* cloud_provider_find returns the provider registered as name, or NULL. */
const struct cloud_provider *cloud_provider_find(const char *name);

/* cloud_provider_names returns the registered names, ", "-separated, in
 * table order, for error messages. */
const char *cloud_provider_names(void);

/* cloud_provider_lookup is cloud_provider_find with the error message the
 * daemon prints: --cloud-provider "x": unknown provider; known: metadata. */
int cloud_provider_lookup(const char *name, const struct cloud_provider **ret,
    struct errbuf *e);

/* cloud_err_retryable tells whether a provider's error is worth retrying
 * with backoff (transient); the sentinels are not. */
int cloud_err_retryable(int code);

/* cloud_err_allows_delete tells whether code, answered by p for a Node,
 * allows deleting that Node: only ERR_NOT_FOUND from a CLOUD_DEFINITIVE
 * provider. */
int cloud_err_allows_delete(int code, const struct cloud_provider *p);

#endif
