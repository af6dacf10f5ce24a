"""static-pod/rbac.yaml grants exactly the API verbs bootccm uses, no more."""

import pytest

from helpers import CCM_USER, STATIC_POD, load_yaml_docs

# (apiGroup, resource, verb, resourceName or None): what bootccm uses.
CLUSTER_EXPECTED = (
    {("", "nodes", v, None) for v in ("get", "list", "watch", "patch", "delete")}
    | {("", "nodes/status", "patch", None)}
    | {("", "services", v, None) for v in ("list", "watch", "patch")}
    | {("", "services/status", "patch", None)}
    | {("", "events", v, None) for v in ("create", "patch")}
    | {("certificates.k8s.io", "certificatesigningrequests", v, None)
       for v in ("get", "list", "watch")}
    | {("certificates.k8s.io", "certificatesigningrequests/approval", "update", None)}
    | {("certificates.k8s.io", "signers", "approve", "kubernetes.io/kubelet-serving")}
    | {("authentication.k8s.io", "tokenreviews", "create", None)}
    | {("authorization.k8s.io", "subjectaccessreviews", "create", None)}
)
# In kube-system only.
LEASE_EXPECTED = {
    ("coordination.k8s.io", "leases", "create", None),
    ("coordination.k8s.io", "leases", "get", "cloud-controller-manager"),
    ("coordination.k8s.io", "leases", "update", "cloud-controller-manager"),
}


def grants(rules):
    """Flatten RBAC rules to (group, resource, verb, resourceName) tuples."""
    out = set()
    for r in rules:
        assert set(r) <= {"apiGroups", "resources", "verbs", "resourceNames"}, r
        names = r.get("resourceNames") or [None]
        for g in r["apiGroups"]:
            for res in r["resources"]:
                for v in r["verbs"]:
                    for n in names:
                        out.add((g, res, v, n))
    return out


@pytest.fixture(scope="module")
def docs():
    return load_yaml_docs(STATIC_POD / "rbac.yaml")


def test_documented_layout(docs):
    assert [(d["kind"], d["metadata"]["name"], d["metadata"].get("namespace")) for d in docs] == [
        ("ClusterRole", CCM_USER, None),
        ("ClusterRoleBinding", CCM_USER, None),
        ("Role", CCM_USER, "kube-system"),
        ("RoleBinding", CCM_USER, "kube-system"),
    ]


def test_cluster_role_grants_exactly_the_expected_table(docs):
    got = grants(docs[0]["rules"])
    assert got - CLUSTER_EXPECTED == set(), "granted but not used"
    assert CLUSTER_EXPECTED - got == set(), "used but not granted"


def test_lease_role_grants_exactly_the_expected_table(docs):
    got = grants(docs[2]["rules"])
    assert got == LEASE_EXPECTED


def test_no_wildcards_and_no_duplicate_rules(docs):
    for d in (docs[0], docs[2]):
        for r in d["rules"]:
            for key in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert "*" not in r.get(key, []), (d["kind"], r)
                assert len(set(r.get(key, []))) == len(r.get(key, []))
        flat = [t for r in d["rules"] for t in grants([r])]
        assert len(flat) == len(set(flat)), "a grant appears twice"


def test_leases_only_in_kube_system(docs):
    assert not any(g[1] == "leases" for g in grants(docs[0]["rules"]))


def test_bindings_bind_the_ccm_user(docs):
    user = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": CCM_USER}]
    assert docs[1]["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CCM_USER}
    assert docs[1]["subjects"] == user
    assert docs[3]["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": CCM_USER}
    assert docs[3]["subjects"] == user


def test_every_rule_says_what_uses_it():
    """Each rule is preceded by a comment line (the one place that says why)."""
    lines = (STATIC_POD / "rbac.yaml").read_text().splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("- apiGroups:"):
            assert lines[i - 1].strip().startswith("#"), f"rule at line {i + 1} has no comment"
