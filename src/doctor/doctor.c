/* doctor.c - the findings of `bootccm doctor` (see doctor.h). */
#include "doctor/doctor.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/netaddr.h"
#include "base/xalloc.h"

/* What a finding's summary says of a count: "1 node", "3 nodes". */
#define DOC_PLURAL(n) ((n) == 1 ? "" : "s")

/* Pods whose names tell that they are the network or DNS add-on, the ones
 * that make a bootstrap loop when they cannot be scheduled. */
static const char *const doc_addon_prefixes[] = {
	"calico-", "cilium", "flannel", "kube-flannel", "canal-", "weave-net",
	"antrea-", "kube-router", "kube-ovn", "coredns", "kube-dns", "cilium-operator",
};

struct doc_node {
	const char *name;
	int64_t created;
	int uninitialized;          /* carries the uninitialized taint */
	const char *provider_id;
	size_t n_addresses;
	const char *provided_ip;    /* the kubelet's --node-ip annotation */
	const char *unreadable;     /* a field read here that holds a NUL byte, or NULL */
	int network_unavailable;    /* condition NetworkUnavailable=True */
	const char *net_reason, *net_message;
};

struct doc_lease {
	const char *holder;         /* "" when released */
	int64_t renew;              /* seconds since the epoch; 0: never */
	int64_t duration;           /* seconds */
	int fresh;                  /* a holder renewing within its duration */
};

static struct doctor_finding *
doc_add(struct doctor_report *r, const char *id, enum doctor_severity sev, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static struct doctor_finding *
doc_add(struct doctor_report *r, const char *id, enum doctor_severity sev, const char *fmt, ...)
{
	struct doctor_finding *f;
	va_list ap;
	char buf[512];

	if (r->n == r->alloc) {
		r->alloc = r->alloc ? 2 * r->alloc : 8;
		r->findings = xreallocarray(r->findings, r->alloc, sizeof(*r->findings));
	}
	f = r->findings[r->n++] = xcalloc(1, sizeof(*f));
	f->id = xstrdup(id);
	f->severity = sev;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	f->summary = xstrdup(buf);
	if (sev > r->worst)
		r->worst = sev;
	return f;
}

static void
doc_obj(struct doctor_finding *f, const char *kind, const char *ns, const char *name)
{
	f->objects = xreallocarray(f->objects, f->n_objects + 1, sizeof(*f->objects));
	f->objects[f->n_objects++] = ns ? xasprintf("%s/%s/%s", kind, ns, name) :
	    xasprintf("%s/%s", kind, name);
}

static void
doc_set(char **field, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
doc_set(char **field, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		xalloc_fatal(__FILE__, __LINE__);
	va_end(ap);
	free(*field);
	*field = s;
}

/* doc_age formats seconds as "3d4h", "12m", "40s". */
static const char *
doc_age(int64_t s, char buf[32])
{
	if (s < 0)
		s = 0;
	if (s >= 86400)
		snprintf(buf, 32, "%lldd%lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
	else if (s >= 3600)
		snprintf(buf, 32, "%lldh%lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
	else if (s >= 60)
		snprintf(buf, 32, "%lldm", (long long)(s / 60));
	else
		snprintf(buf, 32, "%llds", (long long)s);
	return buf;
}

/* doc_meta reads an item's metadata.name (required), namespace and
 * creationTimestamp; kind names it in messages. */
static int
doc_meta(json_object *item, const char *kind, size_t i, const char **name, const char **ns,
    int64_t *created, struct errbuf *e)
{
	json_object *md;
	int r;

	if (!json_object_is_type(item, json_type_object))
		return errbuf_set(e, ERR_INVALID, "%s list item %zu: expected an object", kind, i);
	if ((r = jsonx_object(item, "", "metadata", JSONX_REQUIRED, &md, e)) < 0 ||
	    (r = jsonx_str(md, "metadata", "name", JSONX_REQUIRED, name, NULL, e)) < 0 ||
	    (r = jsonx_str(md, "metadata", "namespace", 0, ns, NULL, e)) < 0 ||
	    (r = jsonx_time(md, "metadata", "creationTimestamp", 0, created, e)) < 0)
		return errbuf_prefix(e, r, "%s list item %zu", kind, i);
	return 0;
}

static int
doc_node_read(json_object *item, size_t i, struct doc_node *n, struct errbuf *e)
{
	json_object *spec, *status, *taints, *addrs, *conds, *ann = NULL, *md;
	size_t nt, nc;
	const char *ns;
	int r, ip_nul, id_nul, nul;

	memset(n, 0, sizeof(*n));
	if ((r = doc_meta(item, "node", i, &n->name, &ns, &n->created, e)) < 0)
		return r;
	if ((r = jsonx_object(item, "", "metadata", 0, &md, e)) < 0 ||
	    (r = jsonx_object(md, "metadata", "annotations", 0, &ann, e)) < 0 ||
	    (r = jsonx_str_nul(ann, "metadata.annotations", DOCTOR_PROVIDED_NODE_IP,
	    &n->provided_ip, &ip_nul, e)) < 0 ||
	    (r = jsonx_object(item, "", "spec", 0, &spec, e)) < 0 ||
	    (r = jsonx_str_nul(spec, "spec", "providerID", &n->provider_id, &id_nul, e)) < 0 ||
	    (r = jsonx_array(spec, "spec", "taints", 0, &taints, &nt, e)) < 0 ||
	    (r = jsonx_object(item, "", "status", 0, &status, e)) < 0 ||
	    (r = jsonx_array(status, "status", "addresses", 0, &addrs, &n->n_addresses, e)) < 0 ||
	    (r = jsonx_array(status, "status", "conditions", 0, &conds, &nc, e)) < 0)
		return errbuf_prefix(e, r, "node %s", n->name);
	for (size_t k = 0; k < nt; k++) {
		json_object *t = json_object_array_get_idx(taints, k);
		const char *key;
		char path[48];
		snprintf(path, sizeof(path), "spec.taints[%zu]", k);
		if (!json_object_is_type(t, json_type_object))
			return errbuf_set(e, ERR_INVALID, "node %s: %s: expected an object", n->name,
			    path);
		if ((r = jsonx_str(t, path, "key", JSONX_REQUIRED, &key, NULL, e)) < 0)
			return errbuf_prefix(e, r, "node %s", n->name);
		if (strcmp(key, DOCTOR_TAINT_UNINITIALIZED) == 0)
			n->uninitialized = 1;
	}
	for (size_t k = 0; k < nc; k++) {
		json_object *c = json_object_array_get_idx(conds, k);
		const char *type, *st;
		char path[48];
		snprintf(path, sizeof(path), "status.conditions[%zu]", k);
		if (!json_object_is_type(c, json_type_object))
			return errbuf_set(e, ERR_INVALID, "node %s: %s: expected an object", n->name,
			    path);
		if ((r = jsonx_str(c, path, "type", JSONX_REQUIRED, &type, NULL, e)) < 0 ||
		    (r = jsonx_str(c, path, "status", JSONX_REQUIRED, &st, NULL, e)) < 0)
			return errbuf_prefix(e, r, "node %s", n->name);
		if (strcmp(type, "NetworkUnavailable") != 0 || strcmp(st, "True") != 0)
			continue;
		n->network_unavailable = 1;
		/* free text: one holding a NUL is left out, not fatal */
		if ((r = jsonx_str_nul(c, path, "reason", &n->net_reason, &nul, e)) < 0 ||
		    (r = jsonx_str_nul(c, path, "message", &n->net_message, &nul, e)) < 0)
			return errbuf_prefix(e, r, "node %s", n->name);
	}
	/* one Node's unreadable field is a finding about that Node, never a
	 * reason not to read the others */
	if (ip_nul)
		n->unreadable = "metadata.annotations[\"" DOCTOR_PROVIDED_NODE_IP "\"]";
	if (id_nul) {
		n->unreadable = "spec.providerID";
		n->provider_id = "?";  /* set, though unreadable */
	}
	if (n->provider_id == NULL)
		n->provider_id = "";
	return 0;
}

static int
doc_lease_read(json_object *lease, int64_t now, struct doc_lease *l, struct errbuf *e)
{
	json_object *spec;
	int64_t d;
	int r;

	memset(l, 0, sizeof(*l));
	l->holder = "";
	if ((r = jsonx_object(lease, "", "spec", 0, &spec, e)) < 0 ||
	    (r = jsonx_str(spec, "spec", "holderIdentity", 0, &l->holder, NULL, e)) < 0 ||
	    (r = jsonx_time(spec, "spec", "renewTime", 0, &l->renew, e)) < 0 ||
	    (r = jsonx_int(spec, "spec", "leaseDurationSeconds", 0, 1 << 30, 0, &d, e)) < 0)
		return errbuf_prefix(e, r, "lease kube-system/cloud-controller-manager");
	if (l->holder == NULL)
		l->holder = "";
	l->duration = d > 0 ? d : 15;
	l->fresh = *l->holder != '\0' && l->renew > 0 && l->renew + l->duration >= now;
	return 0;
}

/* doc_events maps each Node's name to the message of its latest
 * InitializationFailed Event (borrowed from in). */
static int
doc_events(json_object *events, struct hmap *msgs, struct errbuf *e)
{
	struct hmap when;
	size_t n = events ? json_object_array_length(events) : 0;
	int r = 0;

	hmap_init(&when, HMAP_COPY_KEYS);
	for (size_t i = 0; i < n && r == 0; i++) {
		json_object *ev = json_object_array_get_idx(events, i), *obj;
		const char *name, *ns, *msg, *node;
		int64_t created, last, *prev;

		if ((r = doc_meta(ev, "event", i, &name, &ns, &created, e)) < 0)
			break;
		if ((r = jsonx_object(ev, "", "involvedObject", JSONX_REQUIRED, &obj, e)) < 0 ||
		    (r = jsonx_str(obj, "involvedObject", "name", JSONX_REQUIRED, &node, NULL,
		    e)) < 0 ||
		    (r = jsonx_str(ev, "", "message", 0, &msg, NULL, e)) < 0 ||
		    (r = jsonx_time(ev, "", "lastTimestamp", 0, &last, e)) < 0) {
			r = errbuf_prefix(e, r, "event %s/%s", ns ? ns : "", name);
			break;
		}
		if (last == 0)
			last = created;
		prev = hmap_get(&when, node);
		if (prev != NULL && *prev > last)
			continue;
		if (prev == NULL) {
			prev = xcalloc(1, sizeof(*prev));
			hmap_put(&when, node, prev);
		}
		*prev = last;
		hmap_put(msgs, node, (void *)(msg ? msg : ""));
	}
	hmap_free(&when, free);
	return r;
}

/* doc_uninitialized: nodes that keep the uninitialized taint past the
 * threshold, with the cause. */
static void
doc_uninitialized(const struct doctor_input *in, const struct doc_node *nodes, size_t n,
    const struct doc_lease *lease, const struct hmap *failed, struct doctor_report *r)
{
	struct doctor_finding *f = NULL;
	int64_t oldest = 0;
	size_t stuck = 0;
	char age[32];

	for (size_t i = 0; i < n; i++)
		if (nodes[i].uninitialized && in->now - nodes[i].created >= in->threshold) {
			stuck++;
			if (oldest == 0 || nodes[i].created < oldest)
				oldest = nodes[i].created;
		}
	if (stuck == 0)
		return;
	if (lease == NULL || !lease->fresh) {
		/* nobody initializes: the cause is the same for every node */
		f = doc_add(r, lease == NULL ? "uninitialized-no-ccm" : "uninitialized-ccm-stopped",
		    DOCTOR_DEADLOCK, "%zu node%s keep %s and no cloud-controller-manager is leading",
		    stuck, DOC_PLURAL(stuck), DOCTOR_TAINT_UNINITIALIZED);
		for (size_t i = 0; i < n; i++)
			if (nodes[i].uninitialized && in->now - nodes[i].created >= in->threshold)
				doc_obj(f, "node", NULL, nodes[i].name);
		doc_obj(f, "lease", "kube-system", "cloud-controller-manager");
		if (lease == NULL)
			doc_set(&f->evidence, "no Lease kube-system/cloud-controller-manager exists: no "
			    "cloud-controller-manager has ever run; the oldest tainted node is %s old",
			    doc_age(in->now - oldest, age));
		else if (*lease->holder == '\0')
			doc_set(&f->evidence, "the Lease kube-system/cloud-controller-manager has no "
			    "holder (released, and nobody took it); the oldest tainted node is %s old",
			    doc_age(in->now - oldest, age));
		else
			doc_set(&f->evidence, "the Lease kube-system/cloud-controller-manager is held "
			    "by %s, which last renewed it %s ago (lease duration %llds)", lease->holder,
			    doc_age(in->now - lease->renew, age), (long long)lease->duration);
		doc_set(&f->fix, "Run the cloud-controller-manager where it needs nothing the "
		    "nodes are waiting for: as a static pod on the control-plane nodes, with "
		    "hostNetwork, reaching the API server on 127.0.0.1 (kubeadm/install-bootccm.sh "
		    "installs bootccm that way); a Deployment must tolerate %s and %s. Then check "
		    "its log: crictl logs $(crictl ps -q --name bootccm).", DOCTOR_TAINT_UNINITIALIZED,
		    DOCTOR_TAINT_NETWORK);
		return;
	}
	/* a CCM leads: each node's own cause */
	struct doctor_finding *noid = NULL, *other = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct doc_node *nd = &nodes[i];
		const char *msg;
		if (!nd->uninitialized || in->now - nd->created < in->threshold)
			continue;
		msg = hmap_get(failed, nd->name);
		if (msg != NULL && nd->provided_ip != NULL && strstr(msg, nd->provided_ip) != NULL &&
		    strstr(msg, "provided node IP") != NULL) {
			f = doc_add(r, "uninitialized-node-ip-mismatch", DOCTOR_DEADLOCK,
			    "node %s keeps %s: its kubelet's --node-ip is not the instance's",
			    nd->name, DOCTOR_TAINT_UNINITIALIZED);
			doc_obj(f, "node", NULL, nd->name);
			doc_set(&f->evidence, "annotation %s=%s; the cloud-controller-manager's last "
			    "InitializationFailed Event: %s", DOCTOR_PROVIDED_NODE_IP, nd->provided_ip,
			    msg);
			doc_set(&f->fix, "Start the kubelet of %s with --node-ip set to one of the "
			    "instance's addresses (or without --node-ip), then restart it: the "
			    "annotation follows the flag.", nd->name);
		} else if (msg != NULL) {
			f = doc_add(r, "uninitialized-init-failed", DOCTOR_DEADLOCK,
			    "node %s keeps %s: the cloud-controller-manager cannot initialize it",
			    nd->name, DOCTOR_TAINT_UNINITIALIZED);
			doc_obj(f, "node", NULL, nd->name);
			doc_set(&f->evidence, "the last InitializationFailed Event on node %s: %s",
			    nd->name, msg);
			doc_set(&f->fix, "Fix what the Event names (the cloud API's credentials or "
			    "reachability, the instance's metadata); bootccm retries on its own. "
			    "kubectl describe node %s shows the Events in order.", nd->name);
		} else if (*nd->provider_id == '\0') {
			if (noid == NULL) {
				noid = doc_add(r, "uninitialized-no-provider-id", DOCTOR_DEADLOCK,
				    "nodes keep %s without a providerID, and no failure is reported",
				    DOCTOR_TAINT_UNINITIALIZED);
				doc_set(&noid->evidence, "spec.providerID is empty and the Lease holder "
				    "%s is renewing: a cloud-controller-manager runs, yet these nodes get "
				    "no InitializationFailed Event, as when neither the cloud API nor "
				    "the metadata service can tell it about them", lease->holder);
				doc_set(&noid->fix, "On a machine whose instance the cloud API cannot "
				    "find, start the kubelet with the flags `bootccm metadata "
				    "--format=kubelet-flags` prints there (--provider-id, --node-ip, "
				    "--node-labels); on bare metal, list the node in the static "
				    "provider's inventory.");
			}
			doc_obj(noid, "node", NULL, nd->name);
		} else {
			if (other == NULL) {
				other = doc_add(r, "uninitialized-unexplained", DOCTOR_DEADLOCK,
				    "nodes keep %s although a cloud-controller-manager leads and "
				    "reports no failure", DOCTOR_TAINT_UNINITIALIZED);
				doc_set(&other->evidence, "the Lease holder %s is renewing; these nodes "
				    "have a providerID and no InitializationFailed Event", lease->holder);
				doc_set(&other->fix, "Check that the leading cloud-controller-manager runs "
				    "its cloud-node controller (--controllers) and read its log at -v=2.");
			}
			doc_obj(other, "node", NULL, nd->name);
		}
	}
	(void)f;
}

/* doc_unreadable reports each Node with a field doctor and the
 * cloud-controller-manager read that holds a NUL byte: bootccm refuses to
 * initialize such a node (a deadlock while it is tainted). */
static void
doc_unreadable(const struct doc_node *nodes, size_t n, struct doctor_report *r)
{
	for (size_t i = 0; i < n; i++) {
		const struct doc_node *d = &nodes[i];
		struct doctor_finding *f;
		if (d->unreadable == NULL)
			continue;
		f = doc_add(r, "node-field-unreadable", d->uninitialized ? DOCTOR_DEADLOCK :
		    DOCTOR_WARNING, "node %s: %s holds a NUL character", d->name, d->unreadable);
		doc_obj(f, "node", NULL, d->name);
		doc_set(&f->evidence, "%s of node %s holds a NUL character (\\u0000), which "
		    "bootccm cannot read; %s", d->unreadable, d->name, d->uninitialized ?
		    "the node keeps the uninitialized taint" : "the node is initialized");
		doc_set(&f->fix, "Write the field without the NUL character. spec.providerID "
		    "cannot be changed once set: delete the Node (kubectl delete node %s) and "
		    "restart its kubelet so that it registers again with a correct "
		    "--provider-id.", d->name);
	}
}

static void
doc_nodes_other(const struct doctor_input *in, const struct doc_node *nodes, size_t n,
    const struct doc_lease *lease, struct doctor_report *r)
{
	struct doctor_finding *noaddr = NULL, *notext = NULL, *route = NULL, *cni = NULL;

	for (size_t i = 0; i < n; i++) {
		const struct doc_node *nd = &nodes[i];
		if (!nd->uninitialized && nd->n_addresses == 0) {
			if (noaddr == NULL) {
				noaddr = doc_add(r, "initialized-without-addresses", DOCTOR_DEADLOCK,
				    "nodes have no addresses although nothing keeps them uninitialized");
				doc_set(&noaddr->evidence, "status.addresses is empty and the %s taint "
				    "is gone: network add-ons waiting for a node IP never start there",
				    DOCTOR_TAINT_UNINITIALIZED);
				doc_set(&noaddr->fix, "Something removed the taint before the "
				    "cloud-controller-manager wrote the addresses (a script, or a kubelet "
				    "without --cloud-provider=external): add the taint back (kubectl "
				    "taint node NAME %s=true:NoSchedule) and let the cloud-controller-"
				    "manager initialize the node.", DOCTOR_TAINT_UNINITIALIZED);
			}
			doc_obj(noaddr, "node", NULL, nd->name);
		}
		if (lease != NULL && lease->fresh && !nd->uninitialized && *nd->provider_id == '\0' &&
		    in->now - nd->created >= in->threshold) {
			if (notext == NULL) {
				notext = doc_add(r, "kubelet-not-external", DOCTOR_WARNING,
				    "nodes registered without --cloud-provider=external while a "
				    "cloud-controller-manager runs");
				doc_set(&notext->evidence, "no %s taint and no spec.providerID: the "
				    "kubelet did not ask to be initialized, so no cloud-controller-manager "
				    "will set the addresses, zone or providerID (Lease holder %s)",
				    DOCTOR_TAINT_UNINITIALIZED, lease->holder);
				doc_set(&notext->fix, "Start these kubelets with --cloud-provider=external "
				    "(kubeadm: nodeRegistration.kubeletExtraArgs), delete the Node objects "
				    "and let the kubelets register again.");
			}
			doc_obj(notext, "node", NULL, nd->name);
		}
		if (nd->network_unavailable && in->now - nd->created >= in->threshold) {
			int no_route = nd->net_reason && strcmp(nd->net_reason, "NoRouteCreated") == 0;
			struct doctor_finding **slot = no_route ? &route : &cni;
			if (*slot == NULL) {
				*slot = doc_add(r, no_route ? "network-unavailable-no-route" :
				    "network-unavailable", DOCTOR_WARNING, no_route ?
				    "nodes are NetworkUnavailable: the route controller created no route" :
				    "nodes are NetworkUnavailable");
				doc_set(&(*slot)->evidence, "condition NetworkUnavailable=True, reason %s: "
				    "%s", nd->net_reason ? nd->net_reason : "(none)",
				    nd->net_message ? nd->net_message : "(no message)");
				doc_set(&(*slot)->fix, no_route ?
				    "The route controller needs --cluster-cidr covering the nodes' "
				    "spec.podCIDRs, --configure-cloud-routes and a provider with routes; "
				    "its Events on the nodes say which route failed." :
				    "The network add-on clears this condition when it runs on the node: "
				    "check its pods there (kubectl -n kube-system get pods -o wide).");
			}
			doc_obj(*slot, "node", NULL, nd->name);
		}
	}
}

static int
doc_is_addon(const char *name)
{
	for (size_t i = 0; i < sizeof(doc_addon_prefixes) / sizeof(doc_addon_prefixes[0]); i++)
		if (strncmp(name, doc_addon_prefixes[i], strlen(doc_addon_prefixes[i])) == 0)
			return 1;
	return 0;
}

/* doc_pods: Pending pods the scheduler cannot place because of the
 * uninitialized or network-unavailable taint. */
static int
doc_pods(const struct doctor_input *in, struct doctor_report *r, struct errbuf *e)
{
	static const char *const taints[] = { DOCTOR_TAINT_UNINITIALIZED, DOCTOR_TAINT_NETWORK };
	size_t n = in->pending_pods ? json_object_array_length(in->pending_pods) : 0;
	struct doctor_finding *f[2] = { NULL, NULL };
	int addon[2] = { 0, 0 };
	const char *first_msg[2] = { NULL, NULL };
	int rc;

	r->pods += n;
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(in->pending_pods, i), *st, *conds;
		const char *name, *ns, *msg = NULL;
		int64_t created;
		size_t nc;

		if ((rc = doc_meta(p, "pod", i, &name, &ns, &created, e)) < 0)
			return rc;
		if ((rc = jsonx_object(p, "", "status", 0, &st, e)) < 0 ||
		    (rc = jsonx_array(st, "status", "conditions", 0, &conds, &nc, e)) < 0)
			return errbuf_prefix(e, rc, "pod %s/%s", ns ? ns : "", name);
		for (size_t k = 0; k < nc; k++) {
			json_object *c = json_object_array_get_idx(conds, k);
			const char *type, *reason;
			char path[48];
			snprintf(path, sizeof(path), "status.conditions[%zu]", k);
			if (!json_object_is_type(c, json_type_object))
				return errbuf_set(e, ERR_INVALID, "pod %s/%s: %s: expected an object",
				    ns ? ns : "", name, path);
			if ((rc = jsonx_str(c, path, "type", JSONX_REQUIRED, &type, NULL, e)) < 0 ||
			    (rc = jsonx_str(c, path, "reason", 0, &reason, NULL, e)) < 0 ||
			    (rc = jsonx_str(c, path, "message", 0, &msg, NULL, e)) < 0)
				return errbuf_prefix(e, rc, "pod %s/%s", ns ? ns : "", name);
			if (strcmp(type, "PodScheduled") == 0 && reason != NULL &&
			    strcmp(reason, "Unschedulable") == 0)
				break;
			msg = NULL;
		}
		if (msg == NULL)
			continue;
		for (int t = 0; t < 2; t++) {
			if (strstr(msg, taints[t]) == NULL)
				continue;
			if (f[t] == NULL) {
				f[t] = doc_add(r, t == 0 ? "pods-pending-uninitialized" :
				    "pods-pending-network-unavailable", DOCTOR_WARNING,
				    "pods cannot be scheduled because of the %s taint", taints[t]);
				first_msg[t] = msg;
			}
			doc_obj(f[t], "pod", ns ? ns : "", name);
			addon[t] |= doc_is_addon(name);
			break;
		}
	}
	for (int t = 0; t < 2; t++) {
		if (f[t] == NULL)
			continue;
		if (addon[t]) {
			/* the network or DNS add-on waits for the nodes, and the nodes
			 * for it: nothing moves on its own */
			f[t]->severity = DOCTOR_DEADLOCK;
			r->worst = DOCTOR_DEADLOCK;
		}
		doc_set(&f[t]->evidence, "the scheduler says: %s%s", first_msg[t], addon[t] ?
		    " (the network or DNS add-on is among them: the nodes wait for it and it "
		    "waits for the nodes)" : "");
		doc_set(&f[t]->fix, t == 0 ?
		    "Nodes lose this taint when the cloud-controller-manager initializes them: see "
		    "the uninitialized-* findings, and run the cloud-controller-manager as a static "
		    "pod with hostNetwork so that it needs none of these pods." :
		    "Nodes lose this taint when the network add-on runs on them: its DaemonSet "
		    "must tolerate node.kubernetes.io/network-unavailable and the node must have "
		    "its addresses (see the other findings).");
	}
	return 0;
}

/* doc_lease_holder: a renewing Lease held by an identity no running pod in
 * kube-system matches ("HOST_UUID": HOST is the pod's name, or the node
 * name of a pod on the host network). */
static int
doc_lease_holder(const struct doctor_input *in, const struct doc_lease *lease,
    struct doctor_report *r, struct errbuf *e)
{
	size_t n = in->system_pods ? json_object_array_length(in->system_pods) : 0;
	const char *us = lease ? strrchr(lease->holder, '_') : NULL;
	size_t hlen;
	struct doctor_finding *f;
	int rc;

	r->pods += n;
	if (lease == NULL || !lease->fresh || us == NULL || in->system_pods == NULL)
		return 0;
	hlen = (size_t)(us - lease->holder);
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(in->system_pods, i), *spec, *st;
		const char *name, *ns, *node = NULL, *phase = NULL;
		int64_t created;
		int hostnet = 0;

		if ((rc = doc_meta(p, "pod", i, &name, &ns, &created, e)) < 0)
			return rc;
		if ((rc = jsonx_object(p, "", "spec", 0, &spec, e)) < 0 ||
		    (rc = jsonx_str(spec, "spec", "nodeName", 0, &node, NULL, e)) < 0 ||
		    (rc = jsonx_bool(spec, "spec", "hostNetwork", 0, &hostnet, e)) < 0 ||
		    (rc = jsonx_object(p, "", "status", 0, &st, e)) < 0 ||
		    (rc = jsonx_str(st, "status", "phase", 0, &phase, NULL, e)) < 0)
			return errbuf_prefix(e, rc, "pod kube-system/%s", name);
		if (phase == NULL || strcmp(phase, "Running") != 0)
			continue;
		if ((strlen(name) == hlen && strncmp(name, lease->holder, hlen) == 0) ||
		    (hostnet && node && strlen(node) == hlen && strncmp(node, lease->holder, hlen) == 0))
			return 0;
	}
	f = doc_add(r, "lease-holder-unknown", DOCTOR_WARNING,
	    "the cloud-controller-manager Lease is held by %.*s, which no running pod matches",
	    (int)hlen, lease->holder);
	doc_obj(f, "lease", "kube-system", "cloud-controller-manager");
	doc_set(&f->evidence, "holderIdentity %s renews the Lease, but no running pod in "
	    "kube-system is named %.*s or runs on the host network of a node of that name",
	    lease->holder, (int)hlen, lease->holder);
	doc_set(&f->fix, "A cloud-controller-manager outside the cluster's pods holds the lock "
	    "(an old one on a machine of its own, or a second cluster using this one's "
	    "kubeconfig): stop it, and the cluster's own replicas take over within the lease "
	    "duration.");
	return 0;
}

static int
doc_services(const struct doctor_input *in, struct doctor_report *r, struct errbuf *e)
{
	size_t n = in->services ? json_object_array_length(in->services) : 0;
	struct doctor_finding *none = NULL, *pending = NULL;
	int rc;

	r->services = n;
	for (size_t i = 0; i < n; i++) {
		json_object *s = json_object_array_get_idx(in->services, i), *spec, *st, *lb,
		    *ingress, *md, *fin;
		const char *name, *ns, *type, *cls;
		size_t ni, nf;
		int64_t created;
		int has_fin = 0;
		char age[32];

		if ((rc = doc_meta(s, "service", i, &name, &ns, &created, e)) < 0)
			return rc;
		if ((rc = jsonx_object(s, "", "spec", 0, &spec, e)) < 0 ||
		    (rc = jsonx_str(spec, "spec", "type", 0, &type, NULL, e)) < 0 ||
		    (rc = jsonx_str(spec, "spec", "loadBalancerClass", 0, &cls, NULL, e)) < 0 ||
		    (rc = jsonx_object(s, "", "status", 0, &st, e)) < 0 ||
		    (rc = jsonx_object(st, "status", "loadBalancer", 0, &lb, e)) < 0 ||
		    (rc = jsonx_array(lb, "status.loadBalancer", "ingress", 0, &ingress, &ni, e)) < 0 ||
		    (rc = jsonx_object(s, "", "metadata", 0, &md, e)) < 0 ||
		    (rc = jsonx_array(md, "metadata", "finalizers", 0, &fin, &nf, e)) < 0)
			return errbuf_prefix(e, rc, "service %s/%s", ns ? ns : "", name);
		if (type == NULL || strcmp(type, "LoadBalancer") != 0 || ni > 0 ||
		    in->now - created < in->threshold)
			continue;
		for (size_t k = 0; k < nf; k++) {
			json_object *v = json_object_array_get_idx(fin, k);
			if (json_object_is_type(v, json_type_string) &&
			    strcmp(json_object_get_string(v), DOCTOR_LB_FINALIZER) == 0)
				has_fin = 1;
		}
		if (!has_fin && cls != NULL) {
			struct doctor_finding *f = doc_add(r, "lb-class-not-served", DOCTOR_WARNING,
			    "Service %s/%s asks for load-balancer class %s, which no controller serves",
			    ns ? ns : "", name, cls);
			doc_obj(f, "service", ns ? ns : "", name);
			doc_set(&f->evidence, "spec.loadBalancerClass %s; no %s finalizer and no "
			    "address after %s", cls, DOCTOR_LB_FINALIZER,
			    doc_age(in->now - created, age));
			doc_set(&f->fix, "Run the controller of class %s, or serve it with bootccm "
			    "--load-balancer-class=%s (the class cannot be changed on an existing "
			    "Service: recreate it without one to use the default).", cls, cls);
		} else if (!has_fin) {
			if (none == NULL) {
				none = doc_add(r, "lb-not-served", DOCTOR_WARNING,
				    "LoadBalancer Services have no address and no controller took them");
				doc_set(&none->evidence, "no %s finalizer: no service controller has "
				    "seen them (the oldest is %s old)", DOCTOR_LB_FINALIZER,
				    doc_age(in->now - created, age));
				doc_set(&none->fix, "Run a service controller: bootccm with a provider "
				    "that has load balancers (hcloud, or static with an address pool) "
				    "and the service controller enabled (--controllers).");
			}
			doc_obj(none, "service", ns ? ns : "", name);
		} else {
			if (pending == NULL) {
				pending = doc_add(r, "lb-pending", DOCTOR_WARNING,
				    "LoadBalancer Services were taken but have no address yet");
				doc_set(&pending->evidence, "the %s finalizer is set and "
				    "status.loadBalancer.ingress is empty after %s", DOCTOR_LB_FINALIZER,
				    doc_age(in->now - created, age));
				doc_set(&pending->fix, "kubectl describe service shows the controller's "
				    "Events (SyncLoadBalancerFailed names the cause: an exhausted pool, a "
				    "refused annotation, the cloud API).");
			}
			doc_obj(pending, "service", ns ? ns : "", name);
		}
	}
	return 0;
}

static int
doc_csrs(const struct doctor_input *in, struct doctor_report *r, struct errbuf *e)
{
	size_t n = in->csrs ? json_object_array_length(in->csrs) : 0;
	struct doctor_finding *f = NULL;
	int64_t oldest = 0;
	char age[32];
	int rc;

	r->csrs = n;
	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(in->csrs, i), *spec, *st, *conds;
		const char *name, *ns, *signer;
		int64_t created;
		size_t nc;

		if ((rc = doc_meta(c, "certificatesigningrequest", i, &name, &ns, &created, e)) < 0)
			return rc;
		if ((rc = jsonx_object(c, "", "spec", 0, &spec, e)) < 0 ||
		    (rc = jsonx_str(spec, "spec", "signerName", 0, &signer, NULL, e)) < 0 ||
		    (rc = jsonx_object(c, "", "status", 0, &st, e)) < 0 ||
		    (rc = jsonx_array(st, "status", "conditions", 0, &conds, &nc, e)) < 0)
			return errbuf_prefix(e, rc, "certificatesigningrequest %s", name);
		if (signer == NULL || strcmp(signer, DOCTOR_KUBELET_SERVING) != 0 || nc > 0 ||
		    in->now - created < in->threshold)
			continue;
		if (f == NULL)
			f = doc_add(r, "csr-pending", DOCTOR_WARNING,
			    "kubelet serving certificate requests wait for an approver");
		if (oldest == 0 || created < oldest)
			oldest = created;
		doc_obj(f, "certificatesigningrequest", NULL, name);
	}
	if (f != NULL) {
		doc_set(&f->evidence, "signer %s, no Approved or Denied condition; the oldest is "
		    "%s old. kube-controller-manager signs these but never approves them, so "
		    "kubectl logs and metrics-server fail on those kubelets' certificates",
		    DOCTOR_KUBELET_SERVING, doc_age(in->now - oldest, age));
		doc_set(&f->fix, "Check each request's addresses against its node (kubectl get csr "
		    "NAME -o yaml; openssl req -noout -text), then kubectl certificate approve NAME; "
		    "or let bootccm approve them against the addresses it verified: "
		    "--controllers=*,csr-approver (operator guide: Kubelet serving certificates).");
	}
	return 0;
}

/* doc_local (--local): the CCM's kubeconfig should name the local API
 * server, which is up whenever this control-plane node is; a load balancer
 * address needs the other nodes, and DNS. */
static void
doc_local(const struct doctor_input *in, struct doctor_report *r)
{
	const char *h, *end;
	char host[256];
	struct netaddr a;
	size_t len;

	if (in->ccm_server == NULL)
		return;
	h = strstr(in->ccm_server, "://");
	h = h ? h + 3 : in->ccm_server;
	if (*h == '[') {
		h++;
		end = strchr(h, ']');
	} else {
		end = h + strcspn(h, ":/");
	}
	len = end ? (size_t)(end - h) : strlen(h);
	if (len >= sizeof(host))
		len = sizeof(host) - 1;
	memcpy(host, h, len);
	host[len] = '\0';
	if (strcmp(host, "localhost") == 0)
		return;
	if (netaddr_parse(host, &a) == 0) {
		char text[NETADDR_TEXT_MAX];
		netaddr_format(&a, text);
		if (strncmp(text, "127.", 4) == 0 || strcmp(text, "::1") == 0)
			return;
	}
	struct doctor_finding *f = doc_add(r, "ccm-kubeconfig-not-local", DOCTOR_WARNING,
	    "the cloud-controller-manager's kubeconfig names %s, not this node's API server",
	    in->ccm_server);
	doc_set(&f->evidence, "%s: server %s", in->ccm_kubeconfig ? in->ccm_kubeconfig : "",
	    in->ccm_server);
	doc_set(&f->fix, "On a control-plane node point it at the local API server "
	    "(server: https://127.0.0.1:6443, tls-server-name: kubernetes): a load-balancer "
	    "address may need the very nodes the cloud-controller-manager is to initialize, "
	    "and DNS, which is not up before the network add-on.");
}

int
doctor_analyze(const struct doctor_input *in, struct doctor_report *r, struct errbuf *e)
{
	size_t n = in->nodes ? json_object_array_length(in->nodes) : 0;
	struct doc_node *nodes = xcalloc(n ? n : 1, sizeof(*nodes));
	struct doc_lease lease;
	struct hmap failed;
	int rc = 0;

	hmap_init(&failed, HMAP_COPY_KEYS);
	r->nodes = n;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = doc_node_read(json_object_array_get_idx(in->nodes, i), i, &nodes[i], e);
	if (rc == 0 && in->lease)
		rc = doc_lease_read(in->lease, in->now, &lease, e);
	if (rc == 0)
		rc = doc_events(in->init_events, &failed, e);
	if (rc == 0) {
		doc_unreadable(nodes, n, r);
		doc_uninitialized(in, nodes, n, in->lease ? &lease : NULL, &failed, r);
		doc_nodes_other(in, nodes, n, in->lease ? &lease : NULL, r);
		rc = doc_pods(in, r, e);
	}
	if (rc == 0)
		rc = doc_services(in, r, e);
	if (rc == 0)
		rc = doc_csrs(in, r, e);
	if (rc == 0)
		rc = doc_lease_holder(in, in->lease ? &lease : NULL, r, e);
	if (rc == 0)
		doc_local(in, r);
	else
		doctor_report_free(r);  /* nothing from half-read answers */
	hmap_free(&failed, NULL);
	free(nodes);
	return rc;
}

const char *
doctor_severity_name(enum doctor_severity s)
{
	return s == DOCTOR_DEADLOCK ? "deadlock" : "warning";
}

static int
doc_render_json(const struct doctor_report *r, struct dynbuf *out)
{
	json_object *root = xcheck(json_object_new_object()), *list = xcheck(json_object_new_array()), *sum;
	size_t deadlocks = 0;
	int rc;

	for (size_t i = 0; i < r->n; i++) {
		const struct doctor_finding *f = r->findings[i];
		json_object *o = xcheck(json_object_new_object()), *objs = xcheck(json_object_new_array());
		deadlocks += f->severity == DOCTOR_DEADLOCK;
		json_object_object_add(o, "id", xcheck(json_object_new_string(f->id)));
		json_object_object_add(o, "severity",
		    xcheck(json_object_new_string(doctor_severity_name(f->severity))));
		json_object_object_add(o, "summary", xcheck(json_object_new_string(f->summary)));
		for (size_t k = 0; k < f->n_objects; k++)
			json_object_array_add(objs, xcheck(json_object_new_string(f->objects[k])));
		json_object_object_add(o, "objects", objs);
		json_object_object_add(o, "evidence", xcheck(json_object_new_string(f->evidence ?
		    f->evidence : "")));
		json_object_object_add(o, "fix", xcheck(json_object_new_string(f->fix ? f->fix : "")));
		json_object_array_add(list, o);
	}
	json_object_object_add(root, "findings", list);
	sum = xcheck(json_object_new_object());
	json_object_object_add(sum, "result", xcheck(json_object_new_string(r->worst == 0 ? "healthy" :
	    doctor_severity_name(r->worst))));
	json_object_object_add(sum, "deadlocks", xcheck(json_object_new_int64((int64_t)deadlocks)));
	json_object_object_add(sum, "warnings", xcheck(json_object_new_int64((int64_t)(r->n - deadlocks))));
	json_object_object_add(sum, "nodes", xcheck(json_object_new_int64((int64_t)r->nodes)));
	json_object_object_add(sum, "pods", xcheck(json_object_new_int64((int64_t)r->pods)));
	json_object_object_add(sum, "services", xcheck(json_object_new_int64((int64_t)r->services)));
	json_object_object_add(sum, "certificateSigningRequests",
	    xcheck(json_object_new_int64((int64_t)r->csrs)));
	json_object_object_add(root, "summary", sum);
	rc = dynbuf_addstr(out, json_object_to_json_string_ext(root,
	    JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE));
	if (rc == 0)
		rc = dynbuf_addstr(out, "\n");
	json_object_put(root);
	return rc;
}

/* doc_text is s escaped for a terminal (log_escape) in *tmp, which it
 * (re)allocates: an Event's, the scheduler's or an object's text may hold CR,
 * LF or a terminal's control sequence, which must not forge or hide a line
 * of the report. */
static const char *
doc_text(const char *s, char **tmp)
{
	size_t cap = 4 * strlen(s ? s : "") + 4;

	free(*tmp);
	*tmp = xmalloc(cap);
	return log_escape(s, *tmp, cap);
}

int
doctor_render(const struct doctor_report *r, int json, struct dynbuf *out)
{
	size_t deadlocks = 0;
	char *t1 = NULL, *t2 = NULL;
	int rc = 0;

	if (json)
		return doc_render_json(r, out);
	for (size_t i = 0; i < r->n && rc == 0; i++) {
		const struct doctor_finding *f = r->findings[i];
		size_t shown = f->n_objects < DOCTOR_TEXT_OBJECTS ? f->n_objects : DOCTOR_TEXT_OBJECTS;
		deadlocks += f->severity == DOCTOR_DEADLOCK;
		rc = dynbuf_addf(out, "%s %s: %s\n  objects:", f->severity == DOCTOR_DEADLOCK ?
		    "DEADLOCK" : "WARNING", f->id, doc_text(f->summary, &t1));
		for (size_t k = 0; k < shown && rc == 0; k++)
			rc = dynbuf_addf(out, "%s %s", k ? "," : "", doc_text(f->objects[k], &t1));
		if (rc == 0 && f->n_objects > shown)
			rc = dynbuf_addf(out, " and %zu more", f->n_objects - shown);
		if (rc == 0)
			rc = dynbuf_addf(out, "\n  evidence: %s\n  fix: %s\n\n",
			    doc_text(f->evidence, &t1), doc_text(f->fix, &t2));
	}
	free(t1);
	free(t2);
	if (rc == 0)
		rc = dynbuf_addf(out, "doctor: %s: %zu deadlock%s, %zu warning%s (objects read: "
		    "nodes %zu, pods %zu, services %zu, certificate signing requests %zu)\n",
		    r->worst == 0 ? "healthy" : doctor_severity_name(r->worst), deadlocks,
		    DOC_PLURAL(deadlocks), r->n - deadlocks, DOC_PLURAL(r->n - deadlocks), r->nodes,
		    r->pods, r->services, r->csrs);
	return rc;
}

void
doctor_report_free(struct doctor_report *r)
{
	for (size_t i = 0; i < r->n; i++) {
		struct doctor_finding *f = r->findings[i];
		for (size_t k = 0; k < f->n_objects; k++)
			free(f->objects[k]);
		free(f->objects);
		free(f->id);
		free(f->summary);
		free(f->evidence);
		free(f->fix);
		free(f);
	}
	free(r->findings);
	memset(r, 0, sizeof(*r));
}
