"""RBAC authorization from stored (Cluster)Roles and (Cluster)RoleBindings.

Follows k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac: a request is allowed
when any rule reachable from a binding whose subjects match the user allows it;
system:masters bypasses everything.  The bootstrap policy holds the default
roles kube-apiserver creates that clients rely on (discovery, version,
self-subject reviews, cluster-admin).
"""

RBAC_GROUP = "rbac.authorization.k8s.io"


class Attributes(object):
    """What authorization looks at (authorizer.Attributes)."""

    def __init__(self, user, groups, verb, path, resource_request=False,
                 api_group="", api_version="", resource="", subresource="",
                 namespace="", name=""):
        self.user = user
        self.groups = list(groups)
        self.verb = verb
        self.path = path
        self.resource_request = resource_request
        self.api_group = api_group
        self.api_version = api_version
        self.resource = resource
        self.subresource = subresource
        self.namespace = namespace
        self.name = name


def forbidden_message(a):
    """responsewriters.forbiddenMessage."""
    if not a.resource_request:
        return 'User "%s" cannot %s path "%s"' % (a.user, a.verb, a.path)
    res = a.resource
    if a.subresource:
        res += "/" + a.subresource
    if a.namespace:
        return 'User "%s" cannot %s resource "%s" in API group "%s" in the namespace "%s"' % (
            a.user, a.verb, res, a.api_group, a.namespace)
    return 'User "%s" cannot %s resource "%s" in API group "%s" at the cluster scope' % (
        a.user, a.verb, res, a.api_group)


def _verb_matches(rule, verb):
    v = rule.get("verbs") or []
    return "*" in v or verb in v


def _group_matches(rule, group):
    g = rule.get("apiGroups") or []
    return "*" in g or group in g


def _resource_matches(rule, resource, subresource):
    combined = resource + ("/" + subresource if subresource else "")
    for r in rule.get("resources") or []:
        if r == "*" or r == combined:
            return True
        if subresource and r == "*/" + subresource:
            return True
    return False


def _name_matches(rule, name):
    names = rule.get("resourceNames") or []
    if not names:
        return True
    return name in names


def _nonresource_matches(rule, path):
    for u in rule.get("nonResourceURLs") or []:
        if u == "*" or u == path:
            return True
        if u.endswith("*") and path.startswith(u[:-1]):
            return True
    return False


def rule_allows(a, rule):
    if a.resource_request:
        return (_verb_matches(rule, a.verb) and _group_matches(rule, a.api_group)
                and _resource_matches(rule, a.resource, a.subresource)
                and _name_matches(rule, a.name))
    return _verb_matches(rule, a.verb) and _nonresource_matches(rule, a.path)


def subject_matches(subject, user, groups, binding_ns):
    kind = subject.get("kind")
    name = subject.get("name")
    if kind == "User":
        return name == user
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_ns
        return user == "system:serviceaccount:%s:%s" % (ns, name)
    return False


class Authorizer(object):
    """authorize(attrs) -> (allowed, reason) over a kstore.Store."""

    def __init__(self, store):
        self.store = store

    # The authorizer only reads the stored RBAC objects: it takes them
    # uncopied (on every request, copies were most of the fake's time).
    def _objs(self, res, ns=None):
        _, items = self.store.snapshot((RBAC_GROUP, res), ns, copied=False)
        return [o for _, o in items]

    def _role_rules(self, ref, ns, errors):
        kind = ref.get("kind")
        name = ref.get("name", "")
        if kind == "ClusterRole":
            o = self.store.get((RBAC_GROUP, "clusterroles"), "", name, copied=False)
            if o is None:
                errors.append('clusterrole.rbac.authorization.k8s.io "%s" not found' % name)
                return []
        elif kind == "Role":
            o = self.store.get((RBAC_GROUP, "roles"), ns, name, copied=False)
            if o is None:
                errors.append('role.rbac.authorization.k8s.io "%s" not found' % name)
                return []
        else:
            return []
        return o.get("rules") or []

    def authorize(self, a):
        if "system:masters" in a.groups:
            return True, ""
        errors = []
        for crb in self._objs("clusterrolebindings"):
            if not any(subject_matches(s, a.user, a.groups, "")
                       for s in crb.get("subjects") or []):
                continue
            for rule in self._role_rules(crb.get("roleRef", {}), "", errors):
                if rule_allows(a, rule):
                    return True, ""
        if a.resource_request and a.namespace:
            for rb in self._objs("rolebindings", a.namespace):
                if not any(subject_matches(s, a.user, a.groups, a.namespace)
                           for s in rb.get("subjects") or []):
                    continue
                for rule in self._role_rules(rb.get("roleRef", {}),
                                             a.namespace, errors):
                    if rule_allows(a, rule):
                        return True, ""
        reason = ""
        if errors:
            reason = "RBAC: " + (errors[0] if len(errors) == 1 else
                                 "[" + ", ".join(errors) + "]")
        return False, reason


def _cr(name, rules, labels=None):
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "labels": labels or
                         {"kubernetes.io/bootstrapping": "rbac-defaults"},
                         "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
            "rules": rules}


def _crb(name, role, groups=(), users=()):
    subjects = [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": g} for g in groups]
    subjects += [{"apiGroup": RBAC_GROUP, "kind": "User", "name": u} for u in users]
    return {"apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels":
                         {"kubernetes.io/bootstrapping": "rbac-defaults"},
                         "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
            "subjects": subjects}


def bootstrap_policy():
    """The default ClusterRoles/ClusterRoleBindings a fresh cluster has."""
    return [
        _cr("cluster-admin", [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
        _cr("system:discovery", [
            {"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*",
                                 "/healthz", "/livez", "/openapi", "/openapi/*",
                                 "/readyz", "/version", "/version/"],
             "verbs": ["get"]}]),
        _cr("system:public-info-viewer", [
            {"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version",
                                 "/version/"], "verbs": ["get"]}]),
        _cr("system:basic-user", [
            {"apiGroups": ["authorization.k8s.io"],
             "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
             "verbs": ["create"]},
            {"apiGroups": ["authentication.k8s.io"],
             "resources": ["selfsubjectreviews"], "verbs": ["create"]}]),
        _cr("system:auth-delegator", [
            {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"],
             "verbs": ["create"]},
            {"apiGroups": ["authorization.k8s.io"],
             "resources": ["subjectaccessreviews"], "verbs": ["create"]}]),
        _cr("view", [
            {"apiGroups": ["", "coordination.k8s.io", "events.k8s.io"],
             "resources": ["configmaps", "endpoints", "events", "namespaces",
                           "nodes", "services", "services/status", "leases"],
             "verbs": ["get", "list", "watch"]}],
            labels={"kubernetes.io/bootstrapping": "rbac-defaults",
                    "rbac.authorization.k8s.io/aggregate-to-view": "true"}),
        _crb("cluster-admin", "cluster-admin", groups=["system:masters"]),
        _crb("kubeadm:cluster-admins", "cluster-admin",
             groups=["kubeadm:cluster-admins"]),
        _crb("system:discovery", "system:discovery",
             groups=["system:authenticated"]),
        _crb("system:public-info-viewer", "system:public-info-viewer",
             groups=["system:authenticated", "system:unauthenticated"]),
        _crb("system:basic-user", "system:basic-user",
             groups=["system:authenticated"]),
    ]
