/* csrctl.c - the kubelet-serving CSR approver: its checks and its periodic
 * pass (csrctl.h). */
#include "controllers/csrctl.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/clock.h"
#include "cloud.h"
#include "base/csr.h"
#include "base/hmap.h"
#include "http/http.h"
#include "base/jsonx.h"
#include "kube/client.h"
#include "kube/runner.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/netaddr.h"
#include "base/stop.h"
#include "base/xalloc.h"

static const char *const csrctl_allowed_usages[] = {
	"digital signature", "key encipherment", "server auth",
};

/* csrctl_strings copies an array of strings (absent: empty). */
static int
csrctl_strings(json_object *parent, const char *path, const char *field, size_t max,
    char ***ret, size_t *ret_n, struct errbuf *e)
{
	json_object *a = NULL;
	char **v = NULL;
	size_t n = 0, i;
	int r;

	r = jsonx_array(parent, path, field, 0, &a, &n, e);
	if (r < 0)
		return r;
	if (n > max)
		return errbuf_set(e, ERR_TOO_LARGE, "%s.%s: more than %zu entries", path, field, max);
	if (n > 0)
		v = xcalloc(n, sizeof(*v));
	for (i = 0; i < n; i++) {
		json_object *s = json_object_array_get_idx(a, i);

		if (s == NULL || !json_object_is_type(s, json_type_string) || !jsonx_string_ok(s)) {
			size_t bad = i;

			while (i > 0)
				free(v[--i]);
			free(v);
			return errbuf_set(e, ERR_INVALID, "%s.%s[%zu]: expected a string", path, field, bad);
		}
		v[i] = xstrdup(json_object_get_string(s));
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

int
csrctl_request_decode(json_object *o, struct csrctl_request *ret, struct errbuf *e)
{
	struct csrctl_request q;
	json_object *md = NULL, *spec = NULL, *st = NULL, *conds = NULL;
	const char *name = NULL, *signer = NULL, *user = NULL, *req = NULL;
	size_t req_len = 0, nconds = 0, i;
	int r;

	memset(&q, 0, sizeof(q));
	if ((r = jsonx_object(o, "", "metadata", JSONX_REQUIRED, &md, e)) < 0 ||
	    (r = jsonx_str(md, "metadata", "name", JSONX_REQUIRED, &name, NULL, e)) < 0 ||
	    (r = jsonx_object(o, "", "spec", JSONX_REQUIRED, &spec, e)) < 0 ||
	    (r = jsonx_str(spec, "spec", "signerName", 0, &signer, NULL, e)) < 0 ||
	    (r = jsonx_str(spec, "spec", "username", 0, &user, NULL, e)) < 0 ||
	    (r = jsonx_str(spec, "spec", "request", JSONX_REQUIRED, &req, &req_len, e)) < 0 ||
	    (r = jsonx_object(o, "", "status", 0, &st, e)) < 0)
		goto fail;
	if (st != NULL && (r = jsonx_array(st, "status", "conditions", 0, &conds, &nconds, e)) < 0)
		goto fail;
	if (req_len > CSR_PEM_MAX * 2) {
		r = errbuf_set(e, ERR_TOO_LARGE, "spec.request: longer than %d bytes", CSR_PEM_MAX * 2);
		goto fail;
	}
	q.name = xstrdup(name);
	q.signer = xstrdup(signer ? signer : "");
	q.username = xstrdup(user ? user : "");
	if ((r = csrctl_strings(spec, "spec", "groups", CSRCTL_GROUPS_MAX, &q.groups,
	    &q.ngroups, e)) < 0 ||
	    (r = csrctl_strings(spec, "spec", "usages", CSRCTL_USAGES_MAX, &q.usages,
	    &q.nusages, e)) < 0)
		goto fail;
	if (base64_decode(req, req_len, &q.pem, &q.pem_len) < 0) {
		r = errbuf_set(e, ERR_INVALID, "spec.request: not base64");
		goto fail;
	}
	for (i = 0; i < nconds; i++) {
		json_object *c = json_object_array_get_idx(conds, i);
		const char *type = NULL;

		if (c == NULL || !json_object_is_type(c, json_type_object)) {
			r = errbuf_set(e, ERR_INVALID, "status.conditions[%zu]: expected an object", i);
			goto fail;
		}
		if ((r = jsonx_str(c, "status.conditions[]", "type", 0, &type, NULL, e)) < 0)
			goto fail;
		if (type != NULL && (strcmp(type, "Approved") == 0 || strcmp(type, "Denied") == 0))
			q.decided = 1;
	}
	*ret = q;
	return 0;
fail:
	if (name != NULL)
		errbuf_prefix(e, r, "certificatesigningrequest %s", name);
	csrctl_request_free(&q);
	return r;
}

void
csrctl_request_free(struct csrctl_request *r)
{
	size_t i;

	if (r == NULL)
		return;
	free(r->name);
	free(r->signer);
	free(r->username);
	for (i = 0; i < r->ngroups; i++)
		free(r->groups[i]);
	free(r->groups);
	for (i = 0; i < r->nusages; i++)
		free(r->usages[i]);
	free(r->usages);
	if (r->pem != NULL)
		explicit_bzero(r->pem, r->pem_len);
	free(r->pem);
	memset(r, 0, sizeof(*r));
}

const char *
csrctl_node_name(const struct csrctl_request *r)
{
	size_t n = sizeof(CSRCTL_NODE_USER_PREFIX) - 1;

	if (strncmp(r->username, CSRCTL_NODE_USER_PREFIX, n) != 0 || r->username[n] == '\0')
		return NULL;
	return r->username + n;
}

static int
csrctl_usages_ok(const struct csrctl_request *r, struct errbuf *e)
{
	size_t i, j;
	int server = 0;

	for (i = 0; i < r->nusages; i++) {
		int ok = 0;

		for (j = 0; j < sizeof(csrctl_allowed_usages) / sizeof(csrctl_allowed_usages[0]); j++)
			if (strcmp(r->usages[i], csrctl_allowed_usages[j]) == 0)
				ok = 1;
		if (!ok)
			return errbuf_set(e, ERR_INVALID, "usage \"%s\" is not one of digital "
			    "signature, key encipherment, server auth", r->usages[i]);
		if (strcmp(r->usages[i], "server auth") == 0)
			server = 1;
	}
	if (!server)
		return errbuf_set(e, ERR_INVALID, "usages do not include server auth");
	return 0;
}

/* csrctl_node_has reports whether node has an address equal to value among
 * the given types (NULL: any type); IPs compare as addresses. */
static int
csrctl_node_has(const struct kube_node *node, const struct csr_san *san)
{
	size_t i;

	for (i = 0; i < node->naddresses; i++) {
		const struct kube_node_address *a = &node->addresses[i];

		if (san->type == CSR_SAN_IP) {
			struct netaddr ip;

			if (netaddr_parse(a->address, &ip) == 0 && netaddr_cmp(&ip, &san->ip) == 0)
				return 1;
		} else if ((strcmp(a->type, "Hostname") == 0 || strcmp(a->type, "InternalDNS") == 0 ||
		    strcmp(a->type, "ExternalDNS") == 0) && strcmp(a->address, san->value) == 0) {
			return 1;
		}
	}
	return 0;
}

int
csrctl_check(const struct csrctl_request *r, const struct kube_node *node,
    enum csrctl_source source, int trust_kubelet, const char **ret_check,
    struct errbuf *e)
{
	struct csr c;
	const char *name, *check;
	size_t i;
	int r2 = ERR_INVALID, in_group = 0;

	memset(&c, 0, sizeof(c));
	check = "signer";
	if (strcmp(r->signer, CSRCTL_SIGNER) != 0) {
		errbuf_set(e, ERR_INVALID, "signer %s is not %s", r->signer, CSRCTL_SIGNER);
		goto out;
	}
	check = "requester";
	for (i = 0; i < r->ngroups; i++)
		if (strcmp(r->groups[i], CSRCTL_NODES_GROUP) == 0)
			in_group = 1;
	if ((name = csrctl_node_name(r)) == NULL || !in_group) {
		errbuf_set(e, ERR_INVALID, "requested by %s, not a node (system:node:NAME in %s)",
		    r->username[0] ? r->username : "nobody", CSRCTL_NODES_GROUP);
		goto out;
	}
	check = "request";
	if (csr_parse(r->pem, r->pem_len, &c, e) < 0)
		goto out;
	check = "subject";
	if (csr_check_node_subject(&c, name, e) < 0)
		goto out;
	check = "usages";
	if (csrctl_usages_ok(r, e) < 0)
		goto out;
	check = "san-kind";
	for (i = 0; i < c.n_sans; i++)
		if (c.sans[i].type == CSR_SAN_EMAIL || c.sans[i].type == CSR_SAN_URI) {
			errbuf_set(e, ERR_INVALID, "%s SAN %s: a serving certificate names no %s",
			    csr_san_type_name(c.sans[i].type), c.sans[i].value,
			    c.sans[i].type == CSR_SAN_EMAIL ? "email address" : "URI");
			goto out;
		}
	if (c.n_sans == 0) {
		/* The API server's own rule for this signer (ValidateKubeletServingCSR). */
		errbuf_set(e, ERR_INVALID, "no DNS or IP SAN");
		goto out;
	}
	check = "node";
	if (node == NULL) {
		errbuf_set(e, ERR_INVALID, "node %s does not exist", name);
		goto out;
	}
	check = "initialized";
	if (kube_node_taint(node, KUBE_TAINT_UNINITIALIZED, NULL) != NULL) {
		errbuf_set(e, ERR_INVALID, "node %s is not initialized yet (%s)", name,
		    KUBE_TAINT_UNINITIALIZED);
		goto out;
	}
	if (node->naddresses == 0) {
		errbuf_set(e, ERR_INVALID, "node %s has no addresses", name);
		goto out;
	}
	check = "source";
	if (source == CSRCTL_SOURCE_UNKNOWN ||
	    (source == CSRCTL_SOURCE_KUBELET && !trust_kubelet)) {
		errbuf_set(e, ERR_INVALID, "node %s: %s; its addresses are not proof "
		    "(--csr-trust-kubelet-addresses accepts them)", name,
		    source == CSRCTL_SOURCE_KUBELET ? "its addresses came only from its own kubelet" :
		    "no " KUBE_ANNOTATION_ADDRESS_SOURCE " annotation says where its addresses came from");
		goto out;
	}
	for (i = 0; i < c.n_sans; i++) {
		const struct csr_san *s = &c.sans[i];

		check = s->type == CSR_SAN_IP ? "ip-san" : "dns-san";
		if (!csrctl_node_has(node, s)) {
			errbuf_set(e, ERR_INVALID, "%s SAN %s is not %s of node %s", csr_san_type_name(s->type),
			    s->value, s->type == CSR_SAN_IP ? "among the addresses" :
			    "a Hostname, InternalDNS or ExternalDNS address", name);
			goto out;
		}
	}
	r2 = 0;
out:
	csr_free(&c);
	if (r2 < 0) {
		errbuf_prefix(e, ERR_INVALID, "certificatesigningrequest %s: not approved (check %s)",
		    r->name, check);
		*ret_check = check;
	}
	return r2;
}

/* ---- the controller ---------------------------------------------------- */

struct csrctl {
	struct csrctl_config cfg;    /* user_agent points at user_agent */
	char *user_agent;
	struct kube_client client;   /* the thread's own */
	struct runner *run;
	struct stop stop;
	struct hmap reported;        /* "name/resourceVersion" already refused: the thread's */
};

static struct metric *csrctl_m_decisions;
static pthread_once_t csrctl_metrics_once = PTHREAD_ONCE_INIT;

static void
csrctl_metrics_init(void)
{
	csrctl_m_decisions = metrics_counter("bootccm_csr_approver_decisions_total",
	    "Kubelet serving CSRs decided by the approver, by outcome (approved, denied, "
	    "pending) and the check that failed (none when approved).", "outcome,check");
}

enum csrctl_source
csrctl_node_source(const struct kube_node *n)
{
	const char *v = kube_node_annotation(n, KUBE_ANNOTATION_ADDRESS_SOURCE);

	if (v == NULL)
		return CSRCTL_SOURCE_UNKNOWN;
	if (strcmp(v, CLOUD_SOURCE_KUBELET) == 0)
		return CSRCTL_SOURCE_KUBELET;
	if (strcmp(v, CLOUD_SOURCE_API) == 0 || strcmp(v, CLOUD_SOURCE_METADATA) == 0 ||
	    strcmp(v, CLOUD_SOURCE_INVENTORY) == 0)
		return CSRCTL_SOURCE_CLOUD;
	return CSRCTL_SOURCE_UNKNOWN;
}

int
csrctl_check_transient(const char *check)
{
	return strcmp(check, "node") == 0 || strcmp(check, "initialized") == 0;
}

/* csrctl_decide PUTs obj (the listed request, borrowed) to /approval with
 * one more condition. */
static int
csrctl_decide(struct csrctl *c, json_object *obj, const char *name, const char *type,
    const char *reason, const char *message, struct errbuf *e)
{
	json_object *st = NULL, *conds = NULL, *cond;
	char *path = NULL;
	int r;

	if (!json_object_object_get_ex(obj, "status", &st) ||
	    !json_object_is_type(st, json_type_object)) {
		st = xcheck(json_object_new_object());
		json_object_object_add(obj, "status", st);
	}
	if (!json_object_object_get_ex(st, "conditions", &conds) ||
	    !json_object_is_type(conds, json_type_array)) {
		conds = xcheck(json_object_new_array());
		json_object_object_add(st, "conditions", conds);
	}
	/* list items carry no kind: say what the body is */
	json_object_object_add(obj, "apiVersion",
	    xcheck(json_object_new_string("certificates.k8s.io/v1")));
	json_object_object_add(obj, "kind",
	    xcheck(json_object_new_string("CertificateSigningRequest")));
	cond = xcheck(json_object_new_object());
	json_object_object_add(cond, "type", xcheck(json_object_new_string(type)));
	json_object_object_add(cond, "status", xcheck(json_object_new_string("True")));
	json_object_object_add(cond, "reason", xcheck(json_object_new_string(reason)));
	json_object_object_add(cond, "message", xcheck(json_object_new_string(message)));
	json_object_array_add(conds, cond);
	r = kube_path(&path, "/apis/certificates.k8s.io/v1", NULL, "certificatesigningrequests",
	    name, "approval", NULL);
	if (r == 0)
		r = kube_update(&c->client, path, obj, NULL, e);
	free(path);
	return r;
}

static void
csrctl_ref(const char *name, const char *uid, struct events_ref *ref)
{
	memset(ref, 0, sizeof(*ref));
	ref->kind = "CertificateSigningRequest";
	ref->api_version = "certificates.k8s.io/v1";
	ref->name = name;
	ref->uid = uid;
}

/* csrctl_first_time remembers key and tells whether it is new: what is
 * reported once per version of a request. */
static int
csrctl_first_time(struct csrctl *c, const char *key)
{
	if (hmap_get(&c->reported, key) != NULL)
		return 0;
	if (hmap_len(&c->reported) >= CSRCTL_SEEN_MAX) {
		/* forgetting only means reporting some requests once more */
		hmap_free(&c->reported, NULL);
		hmap_init(&c->reported, HMAP_COPY_KEYS);
	}
	hmap_put(&c->reported, key, (void *)1);
	return 1;
}

/* csrctl_one checks one listed request and acts on it. */
static void
csrctl_one(struct csrctl *c, json_object *obj)
{
	struct csrctl_request q;
	struct events_ref ref;
	struct errbuf e = { "" }, we = { "" };
	const struct store_obj *no = NULL;
	const char *check = NULL, *node, *uid = NULL, *rv = NULL;
	json_object *md = NULL;
	char *key = NULL;
	int r;

	memset(&q, 0, sizeof(q));
	if (csrctl_request_decode(obj, &q, &e) < 0) {
		log_info(2, "Skipping a CertificateSigningRequest", "err", e.msg, NULL);
		return;
	}
	if (q.decided || strcmp(q.signer, CSRCTL_SIGNER) != 0)
		goto out;
	if (jsonx_object(obj, "", "metadata", 0, &md, NULL) == 0 && md != NULL) {
		jsonx_str(md, "metadata", "uid", 0, &uid, NULL, NULL);
		jsonx_str(md, "metadata", "resourceVersion", 0, &rv, NULL, NULL);
	}
	node = csrctl_node_name(&q);
	if (node != NULL)
		no = store_get(reflector_store(c->cfg.nodes), node);
	r = csrctl_check(&q, no ? kube_node_of(no) : NULL,
	    no ? csrctl_node_source(kube_node_of(no)) : CSRCTL_SOURCE_UNKNOWN,
	    c->cfg.trust_kubelet, &check, &e);
	csrctl_ref(q.name, uid, &ref);
	if (r == 0) {
		char *msg = xasprintf("every address the request names is node %s's, as the "
		    "cloud-node controller verified", node);

		r = csrctl_decide(c, obj, q.name, "Approved", CSRCTL_REASON_APPROVED, msg, &we);
		if (r == 0) {
			log_info(0, "Approved kubelet serving certificate request", "csr", q.name,
			    "node", node, NULL);
			metric_add(csrctl_m_decisions, 1, "approved", "none");
		} else if (r == ERR_CONFLICT || r == ERR_NOT_FOUND) {
			log_info(2, "Kubelet serving certificate request changed since listed; "
			    "next pass", "csr", q.name, "err", we.msg, NULL);
		} else if (!stop_requested(&c->stop)) {
			/* a 403 (RBAC not applied yet) would repeat every pass: once */
			key = xasprintf("approve/%s/%s", q.name, rv ? rv : "");
			if (csrctl_first_time(c, key))
				log_warn("Cannot approve a kubelet serving certificate request; "
				    "trying again every pass", "csr", q.name, "err", we.msg, NULL);
		}
		free(msg);
		goto out;
	}
	key = xasprintf("%s/%s", q.name, rv ? rv : "");
	/* a Node not registered or not initialized yet is a matter of time (a
	 * kubelet asks at boot): pending, never denied */
	if (c->cfg.deny && !csrctl_check_transient(check)) {
		r = csrctl_decide(c, obj, q.name, "Denied", CSRCTL_REASON_DENIED, e.msg, &we);
		if (r == 0) {
			log_info(0, "Denied kubelet serving certificate request", "csr", q.name,
			    "check", check, "reason", e.msg, NULL);
			metric_add(csrctl_m_decisions, 1, "denied", check);
			if (c->cfg.events)
				events_record(c->cfg.events, &ref, EVENTS_WARNING, CSRCTL_REASON_DENIED,
				    e.msg);
		} else if (!stop_requested(&c->stop)) {
			log_info(2, "Cannot deny a kubelet serving certificate request; next pass",
			    "csr", q.name, "err", we.msg, NULL);
		}
		goto out;
	}
	if (!csrctl_first_time(c, key))
		goto out;
	log_warn("Kubelet serving certificate request left pending", "csr", q.name,
	    "check", check, "reason", e.msg, NULL);
	metric_add(csrctl_m_decisions, 1, "pending", check);
	if (c->cfg.events)
		events_record(c->cfg.events, &ref, EVENTS_WARNING, CSRCTL_REASON_REFUSED, e.msg);
out:
	free(key);
	store_obj_unref(no);
	csrctl_request_free(&q);
}

/* csrctl_page checks one page of requests; a stop ends the listing. */
static int
csrctl_page(json_object *items, size_t n, void *arg, struct errbuf *e)
{
	struct csrctl *c = arg;

	(void)e;
	for (size_t i = 0; i < n && !stop_requested(&c->stop); i++)
		csrctl_one(c, json_object_array_get_idx(items, i));
	return stop_requested(&c->stop) ? ERR_CANCELED : 0;
}

/* csrctl_pass lists the kubelet-serving requests page by page. */
static void
csrctl_pass(struct csrctl *c)
{
	struct errbuf e = { "" };
	char limit[16];

	snprintf(limit, sizeof(limit), "%d", CSRCTL_PAGE_LIMIT);
	if (kube_list_pages(&c->client, "/apis/certificates.k8s.io/v1", NULL,
	    "certificatesigningrequests", "spec.signerName=" CSRCTL_SIGNER, limit, 0,
	    csrctl_page, c, &e) < 0 && !stop_requested(&c->stop))
		log_warn("Cannot list kubelet serving certificate requests; next pass",
		    "err", e.msg, NULL);
}

static int
csrctl_wait(void *arg)
{
	struct csrctl *c = arg;

	while (!reflector_wait_synced(c->cfg.nodes, 200 * NS_PER_MS))
		if (stop_sleep(&c->stop, 200 * NS_PER_MS))
			return 0;
	return 1;
}

static void
csrctl_begin(void *arg)
{
	struct csrctl *c = arg;

	log_info(2, "Kubelet serving CSR approver started", "deny", c->cfg.deny ? "true" : "false",
	    "trust-kubelet-addresses", c->cfg.trust_kubelet ? "true" : "false", NULL);
}

static void
csrctl_every(void *arg)
{
	csrctl_pass(arg);
}

static void
csrctl_end(void *arg)
{
	(void)arg;
	csr_thread_done();
}

static void
csrctl_abort(void *arg)
{
	struct csrctl *c = arg;

	if (c->client.http)
		http_client_abort(c->client.http);
}

int
csrctl_start(const struct csrctl_config *cfg, struct csrctl **ret, struct errbuf *e)
{
	struct csrctl *c;

	if (cfg->kc == NULL || cfg->nodes == NULL)
		return errbuf_set(e, ERR_INTERNAL, "csr-approver: no kubeconfig or Node cache");
	pthread_once(&csrctl_metrics_once, csrctl_metrics_init);
	c = xcalloc(1, sizeof(*c));
	c->cfg = *cfg;
	if (c->cfg.period_ns <= 0)
		c->cfg.period_ns = CSRCTL_PERIOD_NS;
	stop_init(&c->stop);
	hmap_init(&c->reported, HMAP_COPY_KEYS);
	c->user_agent = xstrdup(cfg->user_agent ? cfg->user_agent : "bootccm");
	c->cfg.user_agent = c->user_agent;
	kube_client_init(&c->client, cfg->kc, c->user_agent);
	kube_client_set_stop(&c->client, &c->stop);
	struct runner_config rcfg = {
		.stop = &c->stop, .arg = c, .wait = csrctl_wait,
		.every = csrctl_every, .period_ns = c->cfg.period_ns, .every_begin = csrctl_begin,
		.every_first = 1, .every_end = csrctl_end, .on_stop = csrctl_abort,
	};
	if (runner_start(&rcfg, &c->run) < 0) {
		csrctl_free(c);
		return errbuf_set(e, ERR_INTERNAL, "csr-approver: cannot start a thread");
	}
	*ret = c;
	return 0;
}

void
csrctl_stop(struct csrctl *c)
{
	if (c == NULL)
		return;
	stop_request(&c->stop);
	runner_stop(c->run);
}

void
csrctl_free(struct csrctl *c)
{
	if (c == NULL)
		return;
	csrctl_stop(c);
	runner_free(c->run);
	if (c->client.http)
		kube_client_cleanup(&c->client);
	hmap_free(&c->reported, NULL);
	free(c->user_agent);
	stop_destroy(&c->stop);
	free(c);
}
