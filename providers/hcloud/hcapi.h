/* hcapi.h - the Hetzner Cloud API's answers decoded: servers, load
 * balancers, networks, actions, pagination and the error envelope
 * (hcloud-api.md B2-B8), into compact structs the provider keeps.
 *
 * Contract: pure decoders of outside input, never log. Every field is
 * checked (types, IP addresses in canonical form, lengths against the
 * caps below) and a fault is ERR_INVALID naming it ("servers[3].public_net.
 * ipv4.ip: not an IP address"), or ERR_TOO_LARGE for an array past its cap.
 * A struct filled by a *_parse owns heap memory released by its *_free
 * (which also accepts a zeroed struct); on failure nothing is left to free
 * and the struct is zeroed. Out of memory is fatal (xalloc). */
#ifndef BOOTCCM_PROVIDER_HCLOUD_HCAPI_H
#define BOOTCCM_PROVIDER_HCLOUD_HCAPI_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "base/err.h"
#include "base/netaddr.h"

#define HCAPI_JSON_DEPTH 32          /* nesting of any answer */
#define HCAPI_NAME_MAX 256           /* bytes of a name (servers: RFC 1123 hostnames) */
#define HCAPI_SHORT_MAX 32           /* bytes: status, type, location, zone, protocol */
#define HCAPI_CODE_MAX 64            /* bytes of an error code or action command */
#define HCAPI_MESSAGE_MAX 256        /* bytes of an error message (longer ones are cut) */
#define HCAPI_SELECTOR_MAX 512       /* bytes of a target's label selector */
#define HCAPI_ITEMS_MAX 1000         /* items of one listed page */
#define HCAPI_LABELS_MAX 256         /* labels of one object */
#define HCAPI_PRIVNETS_MAX 64        /* private networks of one server or balancer */
#define HCAPI_SERVICES_MAX 256       /* services of one balancer */
#define HCAPI_TARGETS_MAX 10000      /* targets of one balancer, and servers a selector resolves */
#define HCAPI_ROUTES_MAX 10000       /* routes of one network */
#define HCAPI_STATUS_CODES_MAX 32    /* an http health check's status codes */

struct hcapi_kv {
	char *key;
	char *value;
};

/* An object's labels, in the answer's order. */
struct hcapi_labels {
	size_t n;
	struct hcapi_kv *kv;
};

/* hcapi_label returns the value of key, or NULL. */
const char *hcapi_label(const struct hcapi_labels *l, const char *key);

/* hcapi_labels_copy makes dst a copy of src; hcapi_labels_free releases
 * labels (and leaves them empty). */
void hcapi_labels_copy(struct hcapi_labels *dst, const struct hcapi_labels *src);
void hcapi_labels_free(struct hcapi_labels *l);

struct hcapi_privnet {
	int64_t network;
	char ip[NETADDR_TEXT_MAX];          /* canonical */
};

struct hcapi_server {
	int64_t id;
	char *name;
	char status[HCAPI_SHORT_MAX];
	char ipv4[NETADDR_TEXT_MAX];        /* canonical; "" when none */
	char ipv6[NETPREFIX_TEXT_MAX];      /* the /64 network, canonical; "" when none */
	size_t n_private;
	struct hcapi_privnet *private_net;
	char server_type[HCAPI_SHORT_MAX];
	char location[HCAPI_SHORT_MAX];     /* location.name, else datacenter.location.name */
	char network_zone[HCAPI_SHORT_MAX];
	struct hcapi_labels labels;
};

/* A balancer service's health check. */
struct hcapi_lb_hc {
	char protocol[HCAPI_SHORT_MAX];     /* tcp, http */
	int64_t port, interval, timeout, retries;
	int has_http;
	char *domain;                       /* NULL: none */
	char *path;
	char *response;
	char *status_codes;                 /* ","-joined, in order */
	int tls;
};

struct hcapi_lb_service {
	int64_t listen_port, destination_port;
	char protocol[HCAPI_SHORT_MAX];     /* tcp, http, https */
	int proxyprotocol;
	struct hcapi_lb_hc hc;
	int has_http;
	char *cookie_name;
	int64_t cookie_lifetime;
	char *certificates;                 /* certificate ids, ","-joined, in order */
	int redirect_http, sticky_sessions;
};

struct hcapi_lb_target {
	char type[HCAPI_SHORT_MAX];         /* server, label_selector, ip */
	int64_t server_id;                  /* type server */
	char selector[HCAPI_SELECTOR_MAX];  /* type label_selector */
	char ip[NETADDR_TEXT_MAX];          /* type ip */
	int use_private_ip;
	size_t n_resolved;                  /* label_selector: the servers it selects */
	int64_t *resolved;
};

struct hcapi_lb {
	int64_t id;
	char *name;
	struct hcapi_labels labels;
	char type[HCAPI_SHORT_MAX];         /* load_balancer_type.name */
	int64_t max_targets;                /* load_balancer_type.max_targets; 0: unknown */
	char location[HCAPI_SHORT_MAX];
	char network_zone[HCAPI_SHORT_MAX];
	int public_enabled;
	char ipv4[NETADDR_TEXT_MAX];        /* "" when none */
	char ipv6[NETADDR_TEXT_MAX];
	size_t n_private;
	struct hcapi_privnet *private_net;
	size_t n_services;
	struct hcapi_lb_service *services;
	size_t n_targets;
	struct hcapi_lb_target *targets;
	char algorithm[HCAPI_SHORT_MAX];
	int protection_delete;
};

struct hcapi_route {
	char destination[NETPREFIX_TEXT_MAX]; /* canonical */
	char gateway[NETADDR_TEXT_MAX];       /* canonical */
};

struct hcapi_network {
	int64_t id;
	char *name;
	char ip_range[NETPREFIX_TEXT_MAX];
	size_t n_routes;
	struct hcapi_route *routes;
};

struct hcapi_action {
	int64_t id;
	char command[HCAPI_CODE_MAX];
	char status[HCAPI_SHORT_MAX];        /* running, success, error */
	char error_code[HCAPI_CODE_MAX];     /* "" unless status is error */
	char error_message[HCAPI_MESSAGE_MAX];
};

/* meta.pagination; a null next_page is 0. */
struct hcapi_page {
	int64_t page, next_page, last_page, total_entries;
};

/* The error envelope {"error":{"code","message","details"}}. */
struct hcapi_error {
	char code[HCAPI_CODE_MAX];
	char message[HCAPI_MESSAGE_MAX];
};

/* hcapi_parse parses an answer's body (jsonx_parse, HCAPI_JSON_DEPTH); it
 * must be a JSON object. *ret is the caller's (json_object_put). */
int hcapi_parse(const char *buf, size_t len, json_object **ret, struct errbuf *e);

/* hcapi_error_parse reads the error envelope from an error answer's body:
 * 0 with *ret filled (a message longer than the cap is cut), or ERR_INVALID
 * when the body is not one (the caller then knows only the status). */
int hcapi_error_parse(const char *buf, size_t len, struct hcapi_error *ret);

/* hcapi_page_parse reads root's meta.pagination (required in a listing). */
int hcapi_page_parse(json_object *root, struct hcapi_page *ret, struct errbuf *e);

/* The object decoders: o is the object, path names it in messages. */
int hcapi_server_parse(json_object *o, const char *path, struct hcapi_server *ret,
    struct errbuf *e);
void hcapi_server_free(struct hcapi_server *s);

int hcapi_lb_parse(json_object *o, const char *path, struct hcapi_lb *ret,
    struct errbuf *e);
void hcapi_lb_free(struct hcapi_lb *lb);

int hcapi_network_parse(json_object *o, const char *path, struct hcapi_network *ret,
    struct errbuf *e);
void hcapi_network_free(struct hcapi_network *n);

int hcapi_action_parse(json_object *o, const char *path, struct hcapi_action *ret,
    struct errbuf *e);

/* hcapi_items returns root's array key (a listing's items): 0 with the
 * array and its length, ERR_INVALID when absent or not an array,
 * ERR_TOO_LARGE past HCAPI_ITEMS_MAX. */
int hcapi_items(json_object *root, const char *key, json_object **ret, size_t *ret_n,
    struct errbuf *e);

/* hcapi_member returns root's object key ("server" of {"server":{...}}),
 * required. */
int hcapi_member(json_object *root, const char *key, json_object **ret, struct errbuf *e);

#endif
