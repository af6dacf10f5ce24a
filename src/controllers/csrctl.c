/* csrctl.c - the kubelet-serving CSR approver's checks (csrctl.h). */
#include "controllers/csrctl.h"

#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "controllers/nodectl.h"
#include "csr.h"
#include "jsonx.h"
#include "netaddr.h"
#include "xalloc.h"

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
	if (kube_node_taint(node, NODECTL_TAINT_UNINITIALIZED, NULL) != NULL) {
		errbuf_set(e, ERR_INVALID, "node %s is not initialized yet (%s)", name,
		    NODECTL_TAINT_UNINITIALIZED);
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
		    "nothing says where its addresses came from");
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
		errbuf_prefix(e, ERR_INVALID, "certificatesigningrequest %s: check %s", r->name, check);
		*ret_check = check;
	}
	return r2;
}
