"""The resource types the fake API server serves, and their discovery data."""

import collections

Resource = collections.namedtuple(
    "Resource",
    "group version name singular kind namespaced subresources verbs short "
    "status_sub create_on_update unconditional_update storage")

RW = ["create", "delete", "deletecollection", "get", "list", "patch", "update",
      "watch"]


def _r(group, version, name, singular, kind, namespaced, short=(),
       status=False, create_on_update=False, unconditional=True, verbs=RW,
       storage=True, subresources=()):
    subs = list(subresources)
    if status:
        subs.append("status")
    return Resource(group, version, name, singular, kind, namespaced,
                    tuple(subs), list(verbs), list(short), status,
                    create_on_update, unconditional, storage)


RESOURCES = [
    _r("", "v1", "namespaces", "namespace", "Namespace", False, ["ns"],
       status=True),
    _r("", "v1", "nodes", "node", "Node", False, ["no"], status=True),
    _r("", "v1", "services", "service", "Service", True, ["svc"], status=True),
    _r("", "v1", "events", "event", "Event", True, ["ev"],
       create_on_update=True),
    _r("", "v1", "configmaps", "configmap", "ConfigMap", True, ["cm"]),
    _r("", "v1", "pods", "pod", "Pod", True, ["po"], status=True),
    _r("", "v1", "secrets", "secret", "Secret", True),
    _r("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", True,
       ["sa"]),
    _r("", "v1", "endpoints", "endpoints", "Endpoints", True, ["ep"],
       create_on_update=True),
    _r("coordination.k8s.io", "v1", "leases", "lease", "Lease", True,
       create_on_update=True, unconditional=False),
    _r("events.k8s.io", "v1", "events", "event", "Event", True, ["ev"],
       create_on_update=True),
    _r("rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole",
       "ClusterRole", False, create_on_update=True),
    _r("rbac.authorization.k8s.io", "v1", "clusterrolebindings",
       "clusterrolebinding", "ClusterRoleBinding", False,
       create_on_update=True),
    _r("rbac.authorization.k8s.io", "v1", "roles", "role", "Role", True,
       create_on_update=True),
    _r("rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding",
       "RoleBinding", True, create_on_update=True),
    _r("certificates.k8s.io", "v1", "certificatesigningrequests",
       "certificatesigningrequest", "CertificateSigningRequest", False, ["csr"],
       status=True, subresources=("approval",)),
    _r("authorization.k8s.io", "v1", "subjectaccessreviews",
       "subjectaccessreview", "SubjectAccessReview", False, verbs=["create"],
       storage=False),
    _r("authorization.k8s.io", "v1", "selfsubjectaccessreviews",
       "selfsubjectaccessreview", "SelfSubjectAccessReview", False,
       verbs=["create"], storage=False),
    _r("authentication.k8s.io", "v1", "tokenreviews", "tokenreview",
       "TokenReview", False, verbs=["create"], storage=False),
    _r("authentication.k8s.io", "v1", "selfsubjectreviews",
       "selfsubjectreview", "SelfSubjectReview", False, verbs=["create"],
       storage=False),
]

BY_PATH = {(r.group, r.version, r.name): r for r in RESOURCES}
BY_KIND = {}
for _res in RESOURCES:
    BY_KIND.setdefault((_res.group, _res.kind), _res)
# kind -> resource for objects without a group in apiVersion lookups
GROUP_VERSIONS = collections.OrderedDict()
for _res in RESOURCES:
    GROUP_VERSIONS.setdefault(_res.group, [])
    if _res.version not in GROUP_VERSIONS[_res.group]:
        GROUP_VERSIONS[_res.group].append(_res.version)


def api_version(res):
    return res.version if not res.group else "%s/%s" % (res.group, res.version)


def lookup(group, version, name):
    return BY_PATH.get((group, version, name))


def for_object(obj):
    """The Resource of an object by its apiVersion and kind, or None."""
    av = obj.get("apiVersion", "")
    kind = obj.get("kind", "")
    group, _, version = av.rpartition("/")
    r = BY_KIND.get((group, kind))
    if r is not None and r.version == version:
        return r
    return None


def api_resource_list(group, version):
    out = []
    for r in RESOURCES:
        if r.group != group or r.version != version:
            continue
        e = {"name": r.name, "singularName": r.singular,
             "namespaced": r.namespaced, "kind": r.kind, "verbs": r.verbs}
        if r.short:
            e["shortNames"] = r.short
        if r.storage:
            e["storageVersionHash"] = _hash(r)
        out.append(e)
        for s in r.subresources:
            out.append({"name": "%s/%s" % (r.name, s), "singularName": "",
                        "namespaced": r.namespaced, "kind": r.kind,
                        "verbs": ["get", "patch", "update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": api_version_of(group, version), "resources": out}


def api_version_of(group, version):
    return version if not group else "%s/%s" % (group, version)


def _hash(r):
    import hashlib
    import base64
    h = hashlib.sha256(("%s/%s/%s" % (r.group, r.version, r.kind)).encode())
    return base64.b64encode(h.digest()[:8]).decode()


def api_group_list():
    groups = []
    for g, versions in GROUP_VERSIONS.items():
        if not g:
            continue
        vs = [{"groupVersion": "%s/%s" % (g, v), "version": v} for v in versions]
        groups.append({"name": g, "versions": vs, "preferredVersion": vs[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(group):
    versions = GROUP_VERSIONS.get(group)
    if not versions or not group:
        return None
    vs = [{"groupVersion": "%s/%s" % (group, v), "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group,
            "versions": vs, "preferredVersion": vs[0]}


def openapi_v3_root():
    """/openapi/v3: one entry per group version."""
    paths = {}
    for g, versions in GROUP_VERSIONS.items():
        for v in versions:
            key = "api/v1" if not g else "apis/%s/%s" % (g, v)
            paths[key] = {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (
                key, _hash(_r(g, v, "x", "x", key, False)).rstrip("=").replace("/", "_").replace("+", "-"))}
    return {"paths": paths}


def openapi_v3_gv(group, version):
    """A minimal OpenAPI v3 document: the PATCH operations with their
    x-kubernetes-group-version-kind and query parameters, which is what
    kubectl looks at to decide on server-side field validation."""
    paths = {}
    params = [{"name": n, "in": "query", "schema": {"type": "string"},
               "uniqueItems": True}
              for n in ("dryRun", "fieldManager", "fieldValidation", "force")]
    for r in RESOURCES:
        if r.group != group or r.version != version:
            continue
        prefix = "/api/v1" if not group else "/apis/%s/%s" % (group, version)
        base = prefix + ("/namespaces/{namespace}/" if r.namespaced else "/") + r.name
        gvk = {"group": group, "version": version, "kind": r.kind}
        item = {"x-kubernetes-group-version-kind": gvk,
                "x-kubernetes-action": "patch", "parameters": params,
                "operationId": "patch" + r.kind,
                "responses": {"200": {"description": "OK"}}}
        if "patch" in r.verbs:
            paths[base + "/{name}"] = {"patch": item}
            for s in r.subresources:
                paths[base + "/{name}/" + s] = {"patch": dict(item)}
        post = {"x-kubernetes-group-version-kind": gvk,
                "x-kubernetes-action": "post", "parameters": params,
                "operationId": "create" + r.kind,
                "responses": {"201": {"description": "Created"}}}
        paths[base] = {"post": post}
    return {"openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": paths, "components": {"schemas": {}}}


# events.k8s.io/v1 Events are core/v1 Events in storage (one object, two
# views), as in the real server.
STORAGE_ALIAS = {("events.k8s.io", "events"): ("", "events")}

_EVENT_RENAMES = [  # (core/v1 name, events.k8s.io/v1 name)
    ("involvedObject", "regarding"), ("message", "note"),
    ("source", "deprecatedSource"), ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"), ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
]


def storage_key(res):
    k = (res.group, res.name)
    return STORAGE_ALIAS.get(k, k)


def event_to_v1(o):
    """core/v1 Event -> events.k8s.io/v1 Event (a new top-level dict)."""
    out = dict(o)
    for core, v1 in _EVENT_RENAMES:
        if core in out:
            v = out.pop(core)
            if v not in (None, "", {}, 0) or core in ("source", "firstTimestamp", "lastTimestamp"):
                out[v1] = v
    out["apiVersion"] = "events.k8s.io/v1"
    out["kind"] = "Event"
    return out


def event_from_v1(o):
    """events.k8s.io/v1 Event -> core/v1 Event (a new top-level dict)."""
    out = dict(o)
    for core, v1 in _EVENT_RENAMES:
        if v1 in out:
            out[core] = out.pop(v1)
    out["apiVersion"] = "v1"
    out["kind"] = "Event"
    return out
