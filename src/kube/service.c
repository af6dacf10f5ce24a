/* service.c - decode a Service's JSON into the compact struct the cache keeps. */
#include "kube/service.h"

#include <stdio.h>
#include <string.h>

#include "base/jsonx.h"

#define KUBE_PORT_MAX 65535

/* kube_service_ports reads spec.ports. */
static int
kube_service_ports(struct store_bld *b, json_object *spec, struct kube_service *s,
    struct errbuf *e)
{
	struct kube_service_port *ports;
	json_object *a;
	char path[64];
	size_t cnt;
	int64_t v;
	int r;

	if ((r = jsonx_array(spec, "spec", "ports", 0, &a, &cnt, e)) < 0 || cnt == 0)
		return r;
	ports = store_bld_alloc(b, cnt * sizeof(*ports));
	for (size_t i = 0; i < cnt; i++) {
		json_object *p = json_object_array_get_idx(a, i), *tp;
		struct kube_service_port *sp = &ports[i];
		snprintf(path, sizeof(path), "spec.ports[%zu]", i);
		if (!json_object_is_type(p, json_type_object))
			return errbuf_set(e, ERR_INVALID, "%s: expected an object", path);
		if ((r = store_json_str(b, p, path, "name", &sp->name, e)) < 0 ||
		    (r = store_json_str(b, p, path, "protocol", &sp->protocol, e)) < 0 ||
		    (r = store_json_str(b, p, path, "appProtocol", &sp->app_protocol, e)) < 0)
			return r;
		if ((r = jsonx_int(p, path, "port", 0, KUBE_PORT_MAX, 0, &v, e)) < 0)
			return r;
		sp->port = (int32_t)v;
		if ((r = jsonx_int(p, path, "nodePort", 0, KUBE_PORT_MAX, 0, &v, e)) < 0)
			return r;
		sp->node_port = (int32_t)v;
		/* targetPort is an IntOrString */
		if (json_object_object_get_ex(p, "targetPort", &tp) && tp != NULL &&
		    json_object_is_type(tp, json_type_string)) {
			if ((r = store_json_str(b, p, path, "targetPort",
			    &sp->target_port_name, e)) < 0)
				return r;
		} else {
			if ((r = jsonx_int(p, path, "targetPort", 0, KUBE_PORT_MAX, 0, &v, e)) < 0)
				return errbuf_set(e, r, "%s.targetPort: expected a port number or name",
				    path);
			sp->target_port = (int32_t)v;
		}
	}
	s->ports = ports;
	s->nports = cnt;
	return 0;
}

/* kube_service_affinity reads spec.sessionAffinityConfig.clientIP.timeoutSeconds. */
static int
kube_service_affinity(json_object *spec, struct kube_service *s, struct errbuf *e)
{
	json_object *cfg, *ip;
	int64_t v;
	int r;

	if ((r = jsonx_object(spec, "spec", "sessionAffinityConfig", 0, &cfg, e)) < 0 ||
	    cfg == NULL ||
	    (r = jsonx_object(cfg, "spec.sessionAffinityConfig", "clientIP", 0, &ip, e)) < 0 ||
	    ip == NULL)
		return r;
	if ((r = jsonx_int(ip, "spec.sessionAffinityConfig.clientIP", "timeoutSeconds", 0,
	    86400, 0, &v, e)) < 0)
		return r;
	s->session_affinity_timeout = (int32_t)v;
	return 0;
}

/* kube_service_ingress reads status.loadBalancer.ingress. */
static int
kube_service_ingress(struct store_bld *b, json_object *root, struct kube_service *s,
    struct errbuf *e)
{
	struct kube_lb_ingress *ing;
	json_object *status, *lb, *a;
	char path[64];
	size_t cnt;
	int r;

	if ((r = jsonx_object(root, "", "status", 0, &status, e)) < 0 || status == NULL)
		return r;
	if ((r = jsonx_object(status, "status", "loadBalancer", 0, &lb, e)) < 0 || lb == NULL)
		return r;
	if ((r = jsonx_array(lb, "status.loadBalancer", "ingress", 0, &a, &cnt, e)) < 0 ||
	    cnt == 0)
		return r;
	ing = store_bld_alloc(b, cnt * sizeof(*ing));
	for (size_t i = 0; i < cnt; i++) {
		json_object *x = json_object_array_get_idx(a, i);
		snprintf(path, sizeof(path), "status.loadBalancer.ingress[%zu]", i);
		if (!json_object_is_type(x, json_type_object))
			return errbuf_set(e, ERR_INVALID, "%s: expected an object", path);
		if ((r = store_json_str(b, x, path, "ip", &ing[i].ip, e)) < 0 ||
		    (r = store_json_str(b, x, path, "hostname", &ing[i].hostname, e)) < 0 ||
		    (r = store_json_str(b, x, path, "ipMode", &ing[i].ip_mode, e)) < 0)
			return r;
	}
	s->ingress = ing;
	s->ningress = cnt;
	return 0;
}

/* kube_service_key stores "namespace/name" as the object's key. */
static void
kube_service_key(struct store_bld *b, json_object *ns, json_object *nm,
    struct kube_service *s)
{
	size_t nl = (size_t)json_object_get_string_len(ns);
	size_t ml = (size_t)json_object_get_string_len(nm);
	char *k;

	k = store_bld_alloc(b, nl + ml + 2);
	memcpy(k, json_object_get_string(ns), nl);
	k[nl] = '/';
	memcpy(k + nl + 1, json_object_get_string(nm), ml);
	k[nl + 1 + ml] = '\0';
	s->obj.key = k;
}

/* kube_service_fill reads the kept fields of the Service at src into s. It
 * runs twice per object (see store_obj_build) and must do the same both
 * times. */
static int
kube_service_fill(struct store_bld *b, struct store_obj *o, const void *src,
    struct errbuf *e)
{
	struct kube_service *s = (struct kube_service *)o;
	json_object *root = (json_object *)src, *md, *ns = NULL, *nm = NULL, *spec;
	int64_t v;
	int r;

	if (!json_object_is_type(root, json_type_object))
		return errbuf_set(e, ERR_INVALID, "service: expected a JSON object");
	if ((r = jsonx_object(root, "", "metadata", 0, &md, e)) < 0)
		return errbuf_prefix(e, r, "service");
	if (md) {
		json_object_object_get_ex(md, "namespace", &ns);
		json_object_object_get_ex(md, "name", &nm);
	}
	if (nm == NULL || !json_object_is_type(nm, json_type_string) ||
	    json_object_get_string_len(nm) == 0)
		return errbuf_set(e, ERR_INVALID, "service without a metadata.name");
	if (ns == NULL || !json_object_is_type(ns, json_type_string) ||
	    json_object_get_string_len(ns) == 0)
		return errbuf_set(e, ERR_INVALID, "service \"%.253s\" without a metadata.namespace",
		    json_object_get_string(nm));
	if ((r = store_json_str(b, md, "metadata", "namespace", &s->namespace, e)) < 0 ||
	    (r = store_json_str(b, md, "metadata", "name", &s->name, e)) < 0)
		goto fail;
	kube_service_key(b, ns, nm, s);
	if ((r = store_json_str(b, md, "metadata", "uid", &s->obj.uid, e)) < 0 ||
	    (r = store_json_str(b, md, "metadata", "resourceVersion",
	    &s->obj.resource_version, e)) < 0 ||
	    (r = store_json_kv(b, md, "metadata", "annotations", &s->annotations,
	    &s->nannotations, &s->nul_annotations, &s->nnul_annotations, e)) < 0 ||
	    (r = store_json_strs(b, md, "metadata", "finalizers", &s->finalizers,
	    &s->nfinalizers, e)) < 0 ||
	    (r = jsonx_time(md, "metadata", "deletionTimestamp", 0,
	    &s->deletion_timestamp, e)) < 0 ||
	    (r = jsonx_time(md, "metadata", "creationTimestamp", 0,
	    &s->creation_timestamp, e)) < 0)
		goto fail;

	if ((r = jsonx_object(root, "", "spec", 0, &spec, e)) < 0)
		goto fail;
	if (spec) {
		if ((r = store_json_str(b, spec, "spec", "type", &s->type, e)) < 0 ||
		    (r = store_json_str(b, spec, "spec", "loadBalancerClass",
		    &s->load_balancer_class, e)) < 0 ||
		    (r = kube_service_ports(b, spec, s, e)) < 0 ||
		    (r = store_json_str(b, spec, "spec", "externalTrafficPolicy",
		    &s->external_traffic_policy, e)) < 0 ||
		    (r = jsonx_int(spec, "spec", "healthCheckNodePort", 0, KUBE_PORT_MAX,
		    0, &v, e)) < 0)
			goto fail;
		s->health_check_node_port = (int32_t)v;
		if ((r = store_json_str(b, spec, "spec", "loadBalancerIP",
		    &s->load_balancer_ip, e)) < 0 ||
		    (r = store_json_strs(b, spec, "spec", "loadBalancerSourceRanges",
		    &s->load_balancer_source_ranges, &s->nload_balancer_source_ranges, e)) < 0 ||
		    (r = store_json_strs(b, spec, "spec", "externalIPs", &s->external_ips,
		    &s->nexternal_ips, e)) < 0 ||
		    (r = store_json_str(b, spec, "spec", "sessionAffinity",
		    &s->session_affinity, e)) < 0 ||
		    (r = store_json_strs(b, spec, "spec", "ipFamilies", &s->ip_families,
		    &s->nip_families, e)) < 0 ||
		    (r = store_json_str(b, spec, "spec", "ipFamilyPolicy",
		    &s->ip_family_policy, e)) < 0 ||
		    (r = store_json_kv(b, spec, "spec", "selector", &s->selector,
		    &s->nselector, NULL, NULL, e)) < 0 ||
		    (r = kube_service_affinity(spec, s, e)) < 0)
			goto fail;
	}
	if ((r = kube_service_ingress(b, root, s, e)) < 0)
		goto fail;
	return 0;
fail:
	return errbuf_prefix(e, r, "service \"%.253s/%.253s\"", json_object_get_string(ns),
	    json_object_get_string(nm));
}

int
kube_service_decode(json_object *o, const struct kube_service **ret,
    struct errbuf *e)
{
	const struct store_obj *obj;
	int r;

	if ((r = store_obj_build(sizeof(struct kube_service), kube_service_fill, o, &obj,
	    e)) < 0)
		return r;
	*ret = kube_service_of(obj);
	return 0;
}

int
kube_service_decode_obj(json_object *o, const struct store_obj **ret,
    struct errbuf *e)
{
	return store_obj_build(sizeof(struct kube_service), kube_service_fill, o, ret, e);
}

const char *
kube_service_annotation(const struct kube_service *s, const char *key)
{
	return store_kv_get(s->annotations, s->nannotations, key);
}

int
kube_service_has_finalizer(const struct kube_service *s, const char *f)
{
	for (size_t i = 0; i < s->nfinalizers; i++)
		if (strcmp(s->finalizers[i], f) == 0)
			return 1;
	return 0;
}
