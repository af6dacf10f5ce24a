"""Targeted checks of the strict behaviours: RBAC, writes, patches,
validation, list/watch, Status bodies."""

import ipaddress
import json
import time

import pytest

import apiserver
from conftest import Client

MERGE = "application/merge-patch+json"
JSONP = "application/json-patch+json"
SMP = "application/strategic-merge-patch+json"
NODES = "/api/v1/nodes"


def node(name, **kw):
    o = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
    o.update(kw)
    return o


def status_keys(body):
    assert body["kind"] == "Status" and body["apiVersion"] == "v1"
    assert body["metadata"] == {} or "continue" in body["metadata"]
    assert body["status"] == "Failure"
    return body["reason"], body["code"]


@pytest.fixture
def mk(admin):
    """Create a node as admin and return it."""
    def make(name, **kw):
        code, _, body = admin.request("POST", NODES, node(name, **kw))
        assert code == 201, body
        return body
    return make


# ------------------------------------------------------------------ RBAC

def test_rbac_rules_and_denial_messages(srv, admin, client_for):
    user = "system:cloud-controller-manager"
    cr = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
          "metadata": {"name": "system:cloud-controller-manager"},
          "rules": [{"apiGroups": [""], "resources": ["nodes"],
                     "verbs": ["get", "list", "watch"]},
                    {"apiGroups": [""], "resources": ["services/status"],
                     "verbs": ["patch"]},
                    {"apiGroups": [""], "resources": ["configmaps"],
                     "resourceNames": ["allowed"], "verbs": ["get"]},
                    {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}
    crb = {"apiVersion": "rbac.authorization.k8s.io/v1",
           "kind": "ClusterRoleBinding", "metadata": {"name": "system:cloud-controller-manager"},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                       "kind": "ClusterRole", "name": "system:cloud-controller-manager"},
           "subjects": [{"kind": "User", "name": user}]}
    assert admin.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", cr)[0] == 201
    assert admin.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", crb)[0] == 201
    bad = dict(cr, metadata={"name": "a/b"})
    code, _, body = admin.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", bad)
    assert code == 422 and body["message"] == (
        'ClusterRole.rbac.authorization.k8s.io "a/b" is invalid: metadata.name: '
        'Invalid value: "a/b": may not contain \'/\'')
    srv.create_object(node("rb1"))
    c = client_for(user)
    assert c.get(NODES)[0] == 200
    assert c.get(NODES + "/rb1")[0] == 200
    code, _, body = c.request("PATCH", NODES + "/rb1/status",
                              {"status": {}}, ctype=MERGE)
    assert code == 403
    assert body["message"] == (
        'nodes "rb1" is forbidden: User "system:cloud-controller-manager" cannot '
        'patch resource "nodes/status" in API group "" at the cluster scope')
    assert body["details"] == {"name": "rb1", "kind": "nodes"}
    assert status_keys(body) == ("Forbidden", 403)
    code, _, body = c.request("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
                              {"metadata": {"name": "x"}})
    assert code == 403
    assert body["message"] == (
        'leases.coordination.k8s.io is forbidden: User "system:cloud-controller-manager" '
        'cannot create resource "leases" in API group "coordination.k8s.io" in the '
        'namespace "kube-system"')
    assert body["details"] == {"group": "coordination.k8s.io", "kind": "leases"}
    assert c.get("/api/v1/namespaces/default/configmaps/allowed")[0] == 404
    assert c.get("/api/v1/namespaces/default/configmaps/other")[0] == 403
    assert c.get("/api/v1/namespaces/default/configmaps")[0] == 403
    code, _, body = c.get("/metrics")
    assert code == 404   # allowed, but the fake has no such path
    assert c.get("/logs")[0] == 403

    # a Role + RoleBinding grants in its namespace only
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "le", "namespace": "kube-system"},
            "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                       "verbs": ["*"]}]}
    rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
          "metadata": {"name": "le", "namespace": "kube-system"},
          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                      "name": "le"},
          "subjects": [{"kind": "User", "name": user}]}
    srv.create_object(role)
    srv.create_object(rb)
    lease = {"metadata": {"name": "cloud-controller-manager"}, "spec": {}}
    assert c.request("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", lease)[0] == 201
    assert c.request("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", lease)[0] == 403

    # a binding to a missing role says so
    crb2 = dict(crb, metadata={"name": "ghost"},
                roleRef={"apiGroup": "rbac.authorization.k8s.io",
                         "kind": "ClusterRole", "name": "ghost"})
    srv.create_object(crb2)
    code, _, body = c.request("DELETE", NODES + "/rb1")
    assert body["message"].endswith(
        ': RBAC: clusterrole.rbac.authorization.k8s.io "ghost" not found')


def test_rbac_subresource_wildcards_and_groups(srv, client_for):
    cr = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
          "metadata": {"name": "status-writer"},
          "rules": [{"apiGroups": ["*"], "resources": ["*/status"],
                     "verbs": ["update", "patch"]}]}
    crb = {"apiVersion": "rbac.authorization.k8s.io/v1",
           "kind": "ClusterRoleBinding", "metadata": {"name": "status-writer"},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                       "kind": "ClusterRole", "name": "status-writer"},
           "subjects": [{"kind": "Group", "name": "writers"}]}
    srv.create_object(cr)
    srv.create_object(crb)
    srv.create_object(node("rb2"))
    c = client_for("someone", ["writers"])
    assert c.request("PATCH", NODES + "/rb2/status", {"status": {}}, ctype=MERGE)[0] == 200
    assert c.request("PATCH", NODES + "/rb2", {"spec": {}}, ctype=MERGE)[0] == 403
    sar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
           "spec": {"user": "x", "groups": ["writers"],
                    "resourceAttributes": {"verb": "patch", "resource": "nodes",
                                           "subresource": "status"}}}
    admin = client_for("kubernetes-admin", ["system:masters"])
    code, _, body = admin.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar)
    assert code == 201 and body["status"]["allowed"] is True
    sar["spec"]["resourceAttributes"]["subresource"] = ""
    code, _, body = admin.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar)
    assert body["status"]["allowed"] is False


def test_token_review(srv, client_for):
    srv.add_token("tr-token", "bob", ["g1"])
    admin = client_for("kubernetes-admin", ["system:masters"])
    code, _, body = admin.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                                  {"apiVersion": "authentication.k8s.io/v1",
                                   "kind": "TokenReview", "spec": {"token": "tr-token"}})
    assert code == 201
    assert body["status"]["authenticated"] is True
    assert body["status"]["user"]["username"] == "bob"
    assert body["status"]["user"]["groups"] == ["g1", "system:authenticated"]
    code, _, body = admin.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                                  {"spec": {"token": "bad"}})
    assert body["status"]["authenticated"] is False


# ---------------------------------------------------------------- writes

def test_create_semantics(admin, mk):
    n = mk("w1")
    md = n["metadata"]
    assert md["uid"] and md["creationTimestamp"].endswith("Z")
    assert len(md["creationTimestamp"]) == 20
    assert md["managedFields"][0]["manager"]
    assert "generation" not in md
    code, _, body = admin.request("POST", NODES, node("w1"))
    assert code == 409 and status_keys(body) == ("AlreadyExists", 409)
    assert body["message"] == 'nodes "w1" already exists'
    assert body["details"] == {"name": "w1", "kind": "nodes"}
    bad = node("w2")
    bad["metadata"]["resourceVersion"] = "5"
    code, _, body = admin.request("POST", NODES, bad)
    assert code == 500 and body["reason"] == "InternalError"
    assert "resourceVersion should not be set on objects to be created" in body["message"]
    code, _, body = admin.request("POST", "/api/v1/namespaces/default/configmaps",
                                  {"metadata": {"generateName": "gen-"}})
    assert code == 201 and body["metadata"]["name"].startswith("gen-")
    assert len(body["metadata"]["name"]) == 9


def test_put_conflict_and_unconditional(admin, mk):
    n = mk("w3")
    old_rv = n["metadata"]["resourceVersion"]
    n["metadata"]["labels"] = {"a": "1"}
    code, _, n2 = admin.request("PUT", NODES + "/w3", n)
    assert code == 200 and int(n2["metadata"]["resourceVersion"]) > int(old_rv)
    n["metadata"]["labels"] = {"a": "2"}
    code, _, body = admin.request("PUT", NODES + "/w3", n)
    assert code == 409 and status_keys(body) == ("Conflict", 409)
    assert body["message"] == (
        'Operation cannot be fulfilled on nodes "w3": the object has been '
        'modified; please apply your changes to the latest version and try again')
    del n["metadata"]["resourceVersion"]
    code, _, body = admin.request("PUT", NODES + "/w3", n)
    assert code == 200 and body["metadata"]["labels"] == {"a": "2"}


def test_lease_update_requires_resource_version(admin):
    base = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "l1"},
             "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                      "acquireTime": "2026-11-21T08:00:00.000000Z",
                      "renewTime": "2026-11-21T08:00:00.000000Z"}}
    code, _, body = admin.request("POST", base, lease)
    assert code == 201, body
    lease["spec"]["holderIdentity"] = "b"
    code, _, body = admin.request("PUT", base + "/l1", lease)
    assert code == 422 and status_keys(body) == ("Invalid", 422)
    assert body["message"] == ('Lease.coordination.k8s.io "l1" is invalid: '
                               'metadata.resourceVersion: Invalid value: 0x0: '
                               'must be specified for an update')
    assert body["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "metadata.resourceVersion",
        "message": "Invalid value: 0x0: must be specified for an update"}]
    for bad in ("2026-11-21T08:00:00Z", "2026-11-21T08:00:00.123Z",
                "2026-11-21T08:00:00.1234567Z"):
        l2 = json.loads(json.dumps(lease))
        l2["metadata"]["name"] = "l2"
        l2["spec"]["renewTime"] = bad
        code, _, body = admin.request("POST", base, l2)
        assert code == 400 and body["reason"] == "BadRequest", bad
        assert body["message"].startswith(
            'Lease in version "v1" cannot be handled as a Lease: parsing time "%s" '
            'as "2006-01-02T15:04:05.000000Z07:00"' % bad)


def test_noop_write_keeps_rv_and_sends_no_event(srv, admin, mk):
    n = mk("w4", spec={"providerID": ""})
    rv = n["metadata"]["resourceVersion"]
    code, _, body = admin.request("PATCH", NODES + "/w4", {"metadata": {"labels": None}},
                                  ctype=MERGE)
    assert code == 200 and body["metadata"]["resourceVersion"] == rv
    code, _, body = admin.request("PUT", NODES + "/w4", n)
    assert body["metadata"]["resourceVersion"] == rv
    code, _, body = admin.get(NODES + "?watch=1&resourceVersion=%s&timeoutSeconds=1"
                              "&fieldSelector=metadata.name%%3Dw4" % rv)
    assert body is None or body == ""


def test_main_keeps_status_and_status_keeps_spec(admin, mk):
    mk("w5", spec={"podCIDRs": ["10.244.1.0/24"]},
       status={"addresses": [{"type": "Hostname", "address": "w5"}]})
    code, _, body = admin.request("PATCH", NODES + "/w5",
                                  {"spec": {"unschedulable": True},
                                   "status": {"addresses": []}}, ctype=MERGE)
    assert body["spec"]["unschedulable"] is True
    assert body["status"]["addresses"] == [{"type": "Hostname", "address": "w5"}]
    code, _, body = admin.request("PATCH", NODES + "/w5/status",
                                  {"spec": {"unschedulable": False},
                                   "status": {"addresses": [{"type": "InternalIP",
                                                             "address": "10.0.0.1"}]}},
                                  ctype=MERGE)
    assert body["spec"]["unschedulable"] is True
    assert body["status"]["addresses"] == [{"type": "InternalIP", "address": "10.0.0.1"}]


def test_finalizers_and_deletion(srv, admin):
    base = "/api/v1/namespaces/default/services"
    svc = {"metadata": {"name": "fin", "finalizers": ["service.kubernetes.io/load-balancer-cleanup"]},
           "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}}
    assert admin.request("POST", base, svc)[0] == 201
    code, _, body = admin.request("DELETE", base + "/fin")
    assert code == 200
    assert body["metadata"]["deletionTimestamp"]
    assert srv.get_object("services", "fin", "default") is not None
    code, _, body = admin.request("PATCH", base + "/fin",
                                  {"metadata": {"finalizers": ["x.io/new", "service.kubernetes.io/load-balancer-cleanup"]}},
                                  ctype=MERGE)
    assert code == 422
    code, _, body = admin.request("PATCH", base + "/fin",
                                  {"metadata": {"finalizers": None}}, ctype=MERGE)
    assert code == 200
    assert srv.wait_for_object("services", "fin", lambda o: o is None,
                               "default", timeout=1) is None


def test_delete_preconditions_and_status(admin, mk):
    n = mk("w6")
    code, _, body = admin.request("DELETE", NODES + "/w6",
                                  {"preconditions": {"resourceVersion": "1"}})
    assert code == 409 and "Precondition failed" in body["message"]
    code, _, body = admin.request("DELETE", NODES + "/w6",
                                  {"preconditions": {"uid": n["metadata"]["uid"]}})
    assert code == 200
    assert body["status"] == "Success"
    assert body["details"] == {"name": "w6", "kind": "nodes",
                               "uid": n["metadata"]["uid"]}
    code, _, body = admin.request("DELETE", NODES + "/w6")
    assert code == 404 and body["message"] == 'nodes "w6" not found'
    assert body["details"] == {"name": "w6", "kind": "nodes"}


# --------------------------------------------------------------- patches

def test_strategic_merge_collapses_internal_ips(admin, mk):
    mk("p1", status={"addresses": [{"type": "Hostname", "address": "p1"}]})
    patch = {"status": {"addresses": [
        {"type": "InternalIP", "address": "10.0.0.1"},
        {"type": "InternalIP", "address": "10.0.0.2"},
        {"type": "Hostname", "address": "p1"}]}}
    code, _, body = admin.request("PATCH", NODES + "/p1/status", patch, ctype=SMP)
    assert code == 200
    assert body["status"]["addresses"] == [
        {"type": "InternalIP", "address": "10.0.0.2"},
        {"type": "Hostname", "address": "p1"}]
    # a merge patch replaces the list whole: both stay
    code, _, body = admin.request("PATCH", NODES + "/p1/status", patch, ctype=MERGE)
    assert body["status"]["addresses"] == patch["status"]["addresses"]
    # merge by type updates in place and keeps the others
    code, _, body = admin.request("PATCH", NODES + "/p1/status", {"status": {"addresses": [
        {"type": "ExternalIP", "address": "192.0.2.9"}]}}, ctype=SMP)
    # (patch items not in the live list go before the server-only ones)
    assert [a["type"] for a in body["status"]["addresses"]] == [
        "ExternalIP", "InternalIP", "InternalIP", "Hostname"]
    # $patch: delete removes every element with the key
    code, _, body = admin.request("PATCH", NODES + "/p1/status", {"status": {"addresses": [
        {"type": "InternalIP", "$patch": "delete"}]}}, ctype=SMP)
    assert [a["type"] for a in body["status"]["addresses"]] == ["ExternalIP", "Hostname"]


def test_strategic_merge_field_strategies(admin, mk):
    mk("p2", metadata={"name": "p2", "finalizers": ["a.io/x"], "labels": {"k": "v"}},
       spec={"podCIDRs": ["10.244.0.0/24"],
             "taints": [{"key": "a", "effect": "NoSchedule"},
                        {"key": "b", "effect": "NoSchedule"}]},
       status={"conditions": [{"type": "Ready", "status": "False"},
                              {"type": "NetworkUnavailable", "status": "True"}]})
    code, _, body = admin.request("PATCH", NODES + "/p2", {
        "metadata": {"finalizers": ["b.io/y"], "labels": {"n": "1"}},
        "spec": {"taints": [{"key": "c", "effect": "NoExecute"}]}}, ctype=SMP)
    assert code == 200, body
    # normalizeElementOrder puts patch items before server-only ones
    assert body["metadata"]["finalizers"] == ["b.io/y", "a.io/x"]
    assert body["metadata"]["labels"] == {"k": "v", "n": "1"}
    assert body["spec"]["taints"] == [{"key": "c", "effect": "NoExecute"}]
    code, _, body = admin.request("PATCH", NODES + "/p2/status", {"status": {"conditions": [
        {"type": "NetworkUnavailable", "status": "False", "reason": "RouteCreated"}]}},
        ctype=SMP)
    assert body["status"]["conditions"] == [
        {"type": "Ready", "status": "False"},
        {"type": "NetworkUnavailable", "status": "False", "reason": "RouteCreated"}]
    code, _, body = admin.request("PATCH", NODES + "/p2", {
        "$deleteFromPrimitiveList/finalizers": ["a.io/x"],
        "metadata": {"$deleteFromPrimitiveList/finalizers": ["a.io/x"]}}, ctype=SMP)
    assert body["metadata"]["finalizers"] == ["b.io/y"]
    # not in the original: the patch value is taken as it is
    mk("p2b")
    code, _, body = admin.request("PATCH", NODES + "/p2b/status", {"status": {"addresses": [
        {"type": "InternalIP", "address": "10.0.0.1"},
        {"type": "InternalIP", "address": "10.0.0.2"}]}}, ctype=SMP)
    assert len(body["status"]["addresses"]) == 2


def test_strategic_merge_service_ingress_replaced(admin):
    base = "/api/v1/namespaces/default/services"
    admin.request("POST", base, {"metadata": {"name": "ing"},
                                 "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}})
    p = {"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}, {"ip": "192.0.2.2"}]}}}
    code, _, body = admin.request("PATCH", base + "/ing/status", p, ctype=SMP)
    assert code == 200, body
    assert body["status"]["loadBalancer"]["ingress"] == [
        {"ip": "192.0.2.1", "ipMode": "VIP"}, {"ip": "192.0.2.2", "ipMode": "VIP"}]
    p = {"status": {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}]}}}
    code, _, body = admin.request("PATCH", base + "/ing/status", p, ctype=SMP)
    assert body["status"]["loadBalancer"]["ingress"] == [{"hostname": "lb.example.com"}]


def test_json_patch_test_and_failures(admin, mk):
    n = mk("p3")
    rv = n["metadata"]["resourceVersion"]
    ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": rv},
           {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]
    code, _, body = admin.request("PATCH", NODES + "/p3", ops, ctype=JSONP)
    assert code == 200 and body["metadata"]["labels"] == {"a": "b"}
    code, _, body = admin.request("PATCH", NODES + "/p3", ops, ctype=JSONP)
    assert code == 422 and status_keys(body) == ("Invalid", 422)
    assert body["message"] == "the server rejected our request due to an error in our request"
    # kube-apiserver 1.37 names no cause for a failed test (details: {})
    assert body["details"] == {}
    code, _, body = admin.request("PATCH", NODES + "/p3",
                                  [{"op": "remove", "path": "/spec/nothing"}], ctype=JSONP)
    assert code == 422


def test_patch_resource_version_precondition(admin, mk):
    n = mk("p4")
    rv = n["metadata"]["resourceVersion"]
    code, _, body = admin.request("PATCH", NODES + "/p4", {
        "metadata": {"resourceVersion": rv, "labels": {"x": "1"}}}, ctype=MERGE)
    assert code == 200
    code, _, body = admin.request("PATCH", NODES + "/p4", {
        "metadata": {"resourceVersion": rv, "labels": {"x": "2"}}}, ctype=MERGE)
    assert code == 409 and body["reason"] == "Conflict"
    code, _, body = admin.request("PATCH", NODES + "/p4", {
        "metadata": {"uid": "other", "labels": {"x": "2"}}}, ctype=SMP)
    assert code == 409 and "Precondition failed: UID in precondition: other" in body["message"]


def test_patch_media_types(admin, mk):
    mk("p5")
    code, _, body = admin.request("PATCH", NODES + "/p5", b"metadata: {}",
                                  ctype="application/apply-patch+yaml")
    assert code == 415 and status_keys(body) == ("UnsupportedMediaType", 415)
    code, _, body = admin.request("PATCH", NODES + "/p5", {}, ctype="application/json")
    assert code == 415


# ------------------------------------------------------------ validation

def test_label_and_annotation_validation(admin):
    code, _, body = admin.request("POST", NODES, node("v1", metadata={
        "name": "v1", "labels": {"bad key!": "x", "ok": "bad value!"}}))
    assert code == 422
    fields = [(c["field"], c["message"]) for c in body["details"]["causes"]]
    assert ("metadata.labels", 'Invalid value: "bad key!": name part must consist '
            "of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')") in fields
    assert any(f == "metadata.labels" and m.startswith('Invalid value: "bad value!": a valid label')
               for f, m in fields)
    big = {"a": "x" * (256 * 1024)}
    code, _, body = admin.request("POST", NODES, node("v1", metadata={
        "name": "v1", "annotations": big}))
    assert code == 422
    assert body["details"]["causes"][0] == {
        "reason": "FieldValueTooLong", "field": "metadata.annotations",
        "message": "Too long: may not be more than 262144 bytes"}


def test_taint_validation_paths(admin, mk):
    code, _, body = admin.request("POST", NODES, node("v2", spec={"taints": [
        {"key": "a", "effect": "Bogus"}, {"key": "b", "effect": "NoSchedule"},
        {"key": "b", "effect": "NoSchedule"}]}))
    assert code == 422
    causes = body["details"]["causes"]
    assert causes[0] == {
        "reason": "FieldValueNotSupported", "field": "metadata.taints[0].effect",
        "message": 'Unsupported value: "Bogus": supported values: "NoSchedule", '
                   '"PreferNoSchedule", "NoExecute"'}
    assert causes[1]["field"] == "metadata.taints[2]"
    assert causes[1]["reason"] == "FieldValueDuplicate"
    assert causes[1]["message"].endswith("taints must be unique by key and effect pair")
    assert body["message"].startswith('Node "v2" is invalid: [metadata.taints[0].effect: ')


def test_node_immutable_fields(admin, mk):
    mk("v3", spec={"podCIDRs": ["10.244.3.0/24"]})
    code, _, body = admin.request("PATCH", NODES + "/v3", {"spec": {"providerID": "aws:///i-1"}},
                                  ctype=MERGE)
    assert code == 200
    code, _, body = admin.request("PATCH", NODES + "/v3", {"spec": {"providerID": "aws:///i-2"}},
                                  ctype=MERGE)
    assert code == 422
    assert body["message"] == ('Node "v3" is invalid: spec.providerID: Invalid value: null: '
                               'field cannot be modified once set')
    assert body["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.providerID",
        "message": "Invalid value: null: field cannot be modified once set"}]
    code, _, body = admin.request("PATCH", NODES + "/v3", {"spec": {"providerID": None}},
                                  ctype=MERGE)
    assert code == 422
    assert body["message"] == ('Node "v3" is invalid: spec.providerID: Invalid value: null: '
                               'field cannot be cleared once set')
    code, _, body = admin.request("PATCH", NODES + "/v3", {"spec": {"podCIDRs": ["10.244.9.0/24"]}},
                                  ctype=MERGE)
    assert code == 422
    assert body["details"]["causes"][0]["field"] == "spec.podCIDRs"


def test_service_ingress_validation(admin):
    base = "/api/v1/namespaces/default/services"
    admin.request("POST", base, {"metadata": {"name": "iv"},
                                 "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}})
    admin.request("POST", base, {"metadata": {"name": "civ"},
                                 "spec": {"ports": [{"port": 80}]}})
    cases = [
        ("iv", {"ip": "not-an-ip"}, "status.loadBalancer.ingress[0].ip"),
        ("iv", {"hostname": "192.0.2.1"}, "status.loadBalancer.ingress[0].hostname"),
        ("iv", {"hostname": "Bad_Name"}, "status.loadBalancer.ingress[0].hostname"),
        ("iv", {"ip": "192.0.2.1", "ipMode": "Other"}, "status.loadBalancer.ingress[0].ipMode"),
        ("civ", {"ip": "192.0.2.1"}, "status.loadBalancer.ingress"),
    ]
    for name, ing, field in cases:
        code, _, body = admin.request("PATCH", base + "/%s/status" % name,
                                      {"status": {"loadBalancer": {"ingress": [ing]}}},
                                      ctype=MERGE)
        assert code == 422, (ing, body)
        assert body["details"]["causes"][0]["field"] == field
    code, _, body = admin.request("PATCH", base + "/civ/status",
                                  {"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}},
                                  ctype=MERGE)
    assert body["details"]["causes"][0]["message"] == \
        "Forbidden: may only be used when `spec.type` is 'LoadBalancer'"


def test_unknown_fields_and_types(admin):
    code, r, body = admin.request("POST", NODES, node("v4", spec={"x": 1, "taints": [
        {"key": "k", "effect": "NoSchedule", "y": 2}]}))
    assert code == 201
    warnings = r.msg.get_all("Warning")
    assert '299 - "unknown field \\"spec.taints[0].y\\""' in warnings
    assert '299 - "unknown field \\"spec.x\\""' in warnings
    assert "x" not in body["spec"]
    code, _, body = admin.request("POST", NODES + "?fieldValidation=Strict",
                                  node("v5", spec={"x": 1}))
    assert code == 400 and 'unknown field "spec.x"' in body["message"]
    code, _, body = admin.request("POST", "/api/v1/namespaces/default/services", {
        "metadata": {"name": "t1"}, "spec": {"ports": [{"port": "80"}]}})
    assert code == 400
    assert body["message"] == (
        'Service in version "v1" cannot be handled as a Service: json: cannot '
        'unmarshal string into Go struct field ServicePort.spec.ports.port of type int32')


def test_time_normalized(admin):
    code, _, body = admin.request("POST", NODES, node("v6", status={"conditions": [
        {"type": "Ready", "status": "True",
         "lastHeartbeatTime": "2026-11-21T09:00:00.123+01:00"}]}))
    assert body["status"]["conditions"][0]["lastHeartbeatTime"] == "2026-11-21T08:00:00Z"


def test_events_k8s_io_require_microtime(admin):
    base = "/apis/events.k8s.io/v1/namespaces/default/events"
    ev = {"metadata": {"name": "e1"}, "eventTime": "2026-11-21T08:00:00.000000Z",
          "reportingController": "bootccm", "reportingInstance": "bootccm-x",
          "action": "Sync", "reason": "Synced", "type": "Normal",
          "regarding": {"kind": "Node", "name": "n"}, "note": "hi"}
    code, _, body = admin.request("POST", base, ev)
    assert code == 201, body
    ev["metadata"]["name"] = "e2"
    ev["eventTime"] = "2026-11-21T08:00:00Z"
    code, _, body = admin.request("POST", base, ev)
    assert code == 400
    code, _, body = admin.request("POST", "/api/v1/namespaces/default/events", {
        "metadata": {"name": "ce1"}, "involvedObject": {"kind": "Node", "name": "n"},
        "reason": "X", "message": "m", "type": "Normal",
        "firstTimestamp": "2026-11-21T08:00:00Z", "count": 1,
        "source": {"component": "bootccm"}})
    assert code == 201, body
    # one storage, two views
    code, _, body = admin.get("/api/v1/namespaces/default/events/e1")
    assert body["apiVersion"] == "v1" and body["message"] == "hi"
    assert body["involvedObject"] == {"kind": "Node", "name": "n"}
    assert body["reportingComponent"] == "bootccm"
    code, _, body = admin.get("/apis/events.k8s.io/v1/namespaces/default/events/ce1")
    assert body["apiVersion"] == "events.k8s.io/v1" and body["note"] == "m"
    assert body["regarding"]["name"] == "n" and body["deprecatedCount"] == 1
    code, _, body = admin.get("/api/v1/events?fieldSelector=involvedObject.name%3Dn")
    assert sorted(i["metadata"]["name"] for i in body["items"]) == ["ce1", "e1"]
    code, _, body = admin.get("/apis/events.k8s.io/v1/events?fieldSelector=regarding.name%3Dn")
    assert sorted(i["metadata"]["name"] for i in body["items"]) == ["ce1", "e1"]


# ------------------------------------------------------------ list/watch

def test_list_shape_and_resource_version_zero(srv, admin):
    for i in range(4):
        srv.create_object({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "l%d" % i, "namespace": "kube-public"}})
    code, _, body = admin.get("/api/v1/namespaces/kube-public/configmaps?limit=2")
    assert body["kind"] == "ConfigMapList" and body["apiVersion"] == "v1"
    assert len(body["items"]) == 2 and body["metadata"]["continue"]
    assert body["metadata"]["remainingItemCount"] == 2
    assert "kind" not in body["items"][0] and "apiVersion" not in body["items"][0]
    code, _, body = admin.get("/api/v1/namespaces/kube-public/configmaps?limit=2&resourceVersion=0")
    assert len(body["items"]) == 4 and "continue" not in body["metadata"]


def test_continue_is_consistent_then_expires(srv, admin):
    for i in range(3):
        srv.create_object({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "c%d" % i, "namespace": "kube-node-lease"}})
    path = "/api/v1/namespaces/kube-node-lease/configmaps?limit=1"
    code, _, p1 = admin.get(path)
    srv.create_object({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "c11", "namespace": "kube-node-lease"}})
    srv.delete_object("configmaps", "c2", "kube-node-lease")
    tok = p1["metadata"]["continue"]
    code, _, p2 = admin.get(path + "&continue=" + tok)
    assert [i["metadata"]["name"] for i in p2["items"]] == ["c1"]
    assert p2["metadata"]["resourceVersion"] == p1["metadata"]["resourceVersion"]
    code, _, p3 = admin.get(path + "&continue=" + p2["metadata"]["continue"])
    assert [i["metadata"]["name"] for i in p3["items"]] == ["c2"]  # as of page 1
    assert "continue" not in p3["metadata"]
    srv.compact()
    code, _, body = admin.get(path + "&continue=" + p2["metadata"]["continue"])
    assert code == 410 and body["reason"] == "Expired"
    assert body["message"].startswith("The provided continue parameter is too old")
    fresh = body["metadata"]["continue"]
    code, _, body = admin.get(path + "&continue=" + fresh)
    assert code == 200


def read_events(admin, path):
    code, r, body = admin.get(path)
    assert code == 200
    if not body:
        return []
    if isinstance(body, dict):
        return [body]
    return [json.loads(x) for x in body.splitlines() if x.strip()]


def test_watch_events_selectors_and_bookmarks(srv, admin):
    srv.create_object(node("wa", metadata={"name": "wa", "labels": {"role": "x"}}))
    rv = admin.get(NODES)[2]["metadata"]["resourceVersion"]
    admin.request("PATCH", NODES + "/wa", {"metadata": {"labels": {"role": "y"}}}, ctype=MERGE)
    admin.request("PATCH", NODES + "/wa", {"metadata": {"labels": {"role": "x"}}}, ctype=MERGE)
    admin.request("DELETE", NODES + "/wa")
    evs = read_events(admin, NODES + "?watch=true&resourceVersion=%s&labelSelector=role%%3Dx"
                      "&timeoutSeconds=1&allowWatchBookmarks=true" % rv)
    kinds = [(e["type"], e["object"]["metadata"].get("labels")) for e in evs
             if e["type"] != "BOOKMARK"]
    assert kinds == [("DELETED", {"role": "x"}), ("ADDED", {"role": "x"}),
                     ("DELETED", {"role": "x"})]
    assert all(e["object"]["kind"] == "Node" and e["object"]["apiVersion"] == "v1"
               for e in evs)
    bms = [e for e in evs if e["type"] == "BOOKMARK"]
    assert bms and set(bms[0]["object"]["metadata"]) <= {"resourceVersion", "creationTimestamp"}
    assert int(bms[-1]["object"]["metadata"]["resourceVersion"]) >= int(evs[2]["object"]["metadata"]["resourceVersion"])


def test_watch_without_rv_starts_with_state(srv, admin):
    srv.create_object(node("wb"))
    evs = read_events(admin, NODES + "?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Dwb")
    assert [e["type"] for e in evs] == ["ADDED"]


def test_watch_too_old_gives_error_event(srv, admin):
    rv = int(admin.get(NODES)[2]["metadata"]["resourceVersion"])
    srv.create_object(node("wc"))
    c = srv.compact()
    t = time.time()
    evs = read_events(admin, NODES + "?watch=1&resourceVersion=%d&timeoutSeconds=5" % rv)
    assert time.time() - t < 2
    assert evs == [{"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "too old resource version: %d (%d)" % (rv, c),
        "reason": "Expired", "code": 410}}]


def test_field_selector_unsupported(admin):
    code, _, body = admin.get(NODES + "?fieldSelector=spec.providerID%3Dx")
    assert code == 400 and body["message"] == "field label not supported: spec.providerID"


def test_watch_ends_on_stop_and_outage(srv, admin):
    import threading
    out = {}

    def run():
        try:
            out["evs"] = read_events(admin, NODES + "?watch=1&timeoutSeconds=30&resourceVersion=%d"
                                     % srv.resource_version)
        except Exception as e:  # noqa: BLE001
            out["err"] = e
    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.2)
    srv.outage(0.2, "reset")
    t.join(5)
    assert not t.is_alive()
    assert "err" in out
    time.sleep(0.3)


class _Watcher(object):
    """Reads a watch line by line on a thread of its own, stamping each
    event with the time it arrived."""

    def __init__(self, admin, path):
        import threading
        self.events = []
        self.conn = type(admin)(admin.srv)  # a connection of its own
        self.conn.ctx = admin.ctx
        self.conn._connect()
        self.conn.conn.request("GET", path)
        self.resp = self.conn.conn.getresponse()
        assert self.resp.status == 200
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            line = self.resp.readline()
            if not line:
                return
            if line.strip():
                e = json.loads(line)
                self.events.append((time.monotonic(), e["type"],
                                    e["object"]["metadata"].get("name"),
                                    e["object"]["metadata"]["resourceVersion"]))

    def close(self):
        self.thread.join(10)
        self.conn.close()


def test_watch_hold_keeps_events_back_until_the_answer(srv, admin):
    """hold_watch: from the held object's next change on, a watch sends
    nothing (later changes of other objects queue behind it) until the named
    request has been answered; then everything goes out in order."""
    srv.create_object(node("wh"))
    rv = admin.get(NODES)[2]["metadata"]["resourceVersion"]
    hid = srv.hold_watch("nodes", "wh", until=("PATCH", NODES + "/wh"))
    w = _Watcher(admin, NODES + "?watch=1&timeoutSeconds=3&resourceVersion=%s" % rv)
    code, _, b = admin.request("PATCH", NODES + "/wh/status",
                               {"status": {"addresses": [{"type": "InternalIP",
                                                          "address": "10.0.0.1"}]}},
                               ctype=MERGE)
    assert code == 200
    srv.create_object(node("wh2"))
    time.sleep(0.5)
    assert w.events == []
    assert [h["id"] for h in srv.watch_holds() if h["holding"]] == [hid]
    # another request, even on the object, does not end the hold
    assert admin.request("PATCH", NODES + "/wh/status", {"metadata": {"labels": {"x": "1"}}},
                         ctype=MERGE)[0] == 200
    time.sleep(0.2)
    assert w.events == []
    t_answered = time.monotonic()
    code, _, c = admin.request("PATCH", NODES + "/wh", {"metadata": {"labels": {"a": "b"}}},
                               ctype=MERGE)
    assert code == 200
    w.close()
    assert [(t, n) for _, t, n, _ in w.events] == [
        ("MODIFIED", "wh"), ("ADDED", "wh2"), ("MODIFIED", "wh"), ("MODIFIED", "wh")]
    assert w.events[0][3] == b["metadata"]["resourceVersion"]
    assert w.events[-1][3] == c["metadata"]["resourceVersion"]
    assert all(t >= t_answered for t, _, _, _ in w.events)
    assert srv.watch_holds() == []


def test_watch_hold_by_hand_and_control_api(srv, admin):
    srv.create_object(node("wi"))
    rv = admin.get(NODES)[2]["metadata"]["resourceVersion"]
    code, _, body = admin.request("POST", "/_fake/watch-holds",
                                  {"resource": "nodes", "name": "wi"})
    assert code == 201
    w = _Watcher(admin, NODES + "?watch=1&timeoutSeconds=2&resourceVersion=%s" % rv)
    admin.request("PATCH", NODES + "/wi", {"metadata": {"labels": {"a": "b"}}}, ctype=MERGE)
    time.sleep(0.4)
    assert w.events == []
    holds = admin.get("/_fake/watch-holds")[2]["holds"]
    assert [(h["id"], h["resource"], h["name"], h["holding"]) for h in holds] == [
        (body["id"], "nodes", "wi", True)]
    assert admin.request("DELETE", "/_fake/watch-holds")[0] == 200
    w.close()
    assert [(t, n) for _, t, n, _ in w.events] == [("MODIFIED", "wi")]
    # clear_faults ends holds too
    srv.hold_watch("nodes", "wi")
    srv.clear_faults()
    assert srv.watch_holds() == []


def test_established_watch_survives_compaction(srv, admin):
    import threading
    out = {}
    rv = srv.resource_version

    def run():
        out["evs"] = read_events(admin, NODES + "?watch=1&timeoutSeconds=1&resourceVersion=%d"
                                 "&allowWatchBookmarks=true" % rv)
    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.3)
    srv.create_object({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "unrelated", "namespace": "default"}})
    srv.compact()
    srv.create_object(node("wd"))
    t.join(5)
    types = [e["type"] for e in out["evs"]]
    assert "ERROR" not in types and "ADDED" in types
    added = [e for e in out["evs"] if e["type"] == "ADDED"][0]
    later = [int(e["object"]["metadata"]["resourceVersion"]) for e in out["evs"]
             if e["type"] == "BOOKMARK"]
    assert later and max(later) >= int(added["object"]["metadata"]["resourceVersion"])


def test_go_json_escaping(admin):
    admin.request("POST", "/api/v1/namespaces/default/configmaps",
                  {"metadata": {"name": "esc"}, "data": {"k": "<a&b> é"}})
    admin.request("GET", "/version")
    admin.conn.request("GET", "/api/v1/namespaces/default/configmaps/esc")
    raw = admin.conn.getresponse().read()
    assert b'"k":"\\u003ca\\u0026b\\u003e \xc3\xa9"' in raw


def test_service_type_change_drops_lb_fields(admin):
    base = "/api/v1/namespaces/default/services"
    code, _, svc = admin.request("POST", base, {
        "metadata": {"name": "tc"},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}})
    assert code == 201
    code, _, svc = admin.request("PATCH", base + "/tc/status", {"status": {
        "loadBalancer": {"ingress": [{"ip": "192.0.2.7"}]}}}, ctype=MERGE)
    assert code == 200
    code, _, svc = admin.request("PATCH", base + "/tc", {"spec": {"type": "ClusterIP"}},
                                 ctype=MERGE)
    assert code == 200, svc
    assert svc["status"] == {"loadBalancer": {}}
    assert "nodePort" not in svc["spec"]["ports"][0]
    assert "allocateLoadBalancerNodePorts" not in svc["spec"]
    assert "externalTrafficPolicy" not in svc["spec"]


def test_service_ip_families_as_a_dual_stack_cluster(admin):
    """initIPFamilyFields on a cluster with IPv4 and IPv6 service CIDRs
    (IPv4 first): the policy and families defaulted, a cluster IP per
    family, single-stack with two families refused, a downgrade by
    SingleStack, the primary family fixed by its cluster IP."""
    base = "/api/v1/namespaces/default/services"

    def create(name, **spec):
        body = {"metadata": {"name": name},
                "spec": dict({"type": "LoadBalancer", "ports": [{"port": 80}]}, **spec)}
        return admin.request("POST", base, body)

    def fams(svc):
        s = svc["spec"]
        return (s["ipFamilyPolicy"], s["ipFamilies"],
                [ipaddress.ip_address(ip).version for ip in s["clusterIPs"]],
                s["clusterIP"] == s["clusterIPs"][0])

    cases = [
        ("plain", {}, ("SingleStack", ["IPv4"], [4], True)),
        ("v6", {"ipFamilies": ["IPv6"]}, ("SingleStack", ["IPv6"], [6], True)),
        ("req", {"ipFamilyPolicy": "RequireDualStack"},
         ("RequireDualStack", ["IPv4", "IPv6"], [4, 6], True)),
        ("pref", {"ipFamilyPolicy": "PreferDualStack"},
         ("PreferDualStack", ["IPv4", "IPv6"], [4, 6], True)),
        ("req6", {"ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv6"]},
         ("RequireDualStack", ["IPv6", "IPv4"], [6, 4], True)),
        ("pref64", {"ipFamilyPolicy": "PreferDualStack", "ipFamilies": ["IPv6", "IPv4"]},
         ("PreferDualStack", ["IPv6", "IPv4"], [6, 4], True)),
    ]
    for name, spec, want in cases:
        code, _, svc = create(name, **spec)
        assert code == 201, svc
        assert fams(svc) == want, (name, svc["spec"])
    code, _, body = create("two", ipFamilies=["IPv4", "IPv6"])
    assert code == 422
    assert body["message"] == (
        'Service "two" is invalid: spec.ipFamilyPolicy: Invalid value: "SingleStack": '
        "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are "
        "specified")
    code, _, body = create("bad", ipFamilyPolicy="Dual", ipFamilies=["IPv4", "IPv4"])
    assert code == 422
    assert [(c["field"], c["reason"]) for c in body["details"]["causes"]] == [
        ("spec.ipFamilies[1]", "FieldValueDuplicate"),
        ("spec.ipFamilyPolicy", "FieldValueNotSupported")]
    code, _, body = create("mism", ipFamilies=["IPv6"], clusterIP="10.96.200.200")
    assert code == 422
    assert body["details"]["causes"][0]["message"] == (
        'Invalid value: "10.96.200.200": expected an IPv6 value as indicated by '
        "`ipFamilies[0]`")
    # an update without a policy keeps the stored one; SingleStack drops
    # the secondary family and cluster IP
    code, _, svc = admin.request("PATCH", base + "/req", {"spec": {"type": "ClusterIP"}},
                                 ctype=MERGE)
    assert code == 200 and fams(svc) == ("RequireDualStack", ["IPv4", "IPv6"], [4, 6], True)
    code, _, svc = admin.request("PATCH", base + "/req",
                                 {"spec": {"ipFamilyPolicy": "SingleStack"}}, ctype=MERGE)
    assert code == 200 and fams(svc) == ("SingleStack", ["IPv4"], [4], True)
    # the primary family cannot change: its cluster IP no longer matches
    code, _, body = admin.request("PATCH", base + "/v6", {"spec": {"ipFamilies": ["IPv4"]}},
                                  ctype=MERGE)
    assert code == 422
    cause = body["details"]["causes"][0]
    assert cause["field"] == "spec.clusterIPs[0]" and \
        cause["message"].endswith("expected an IPv4 value as indicated by `ipFamilies[0]`")


def test_lease_create_on_update_and_conflict(admin):
    base = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "cou"},
             "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
    code, _, body = admin.request("PUT", base + "/cou", lease)
    assert code == 201, body
    lease["metadata"]["resourceVersion"] = body["metadata"]["resourceVersion"]
    lease["spec"]["holderIdentity"] = "b"
    code, _, body = admin.request("PUT", base + "/cou", lease)
    assert code == 200
    code, _, body = admin.request("PUT", base + "/cou", lease)
    assert code == 409
    assert body["details"] == {"name": "cou", "group": "coordination.k8s.io",
                               "kind": "leases"}
    code, _, body = admin.request("PATCH", base + "/cou", {"spec": {"leaseDurationSeconds": 0}},
                                  ctype=MERGE)
    assert code == 422
    assert body["details"]["causes"][0]["field"] == "spec.leaseDurationSeconds"


def test_deletecollection_with_selector(srv, admin):
    for i, role in enumerate(["a", "a", "b"]):
        srv.create_object({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "dc%d" % i, "namespace": "kube-public",
                                        "labels": {"role": role}}})
    code, _, body = admin.request("DELETE", "/api/v1/namespaces/kube-public/configmaps"
                                  "?labelSelector=role%3Da")
    assert code == 200
    left = [o["metadata"]["name"] for o in srv.list_objects("configmaps", "kube-public")
            if o["metadata"]["name"].startswith("dc")]
    assert left == ["dc2"]


def test_filtered_paging_may_return_empty_page(srv, admin):
    for i, role in enumerate(["a", "b", "b"]):
        srv.create_object({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "fp%d" % i, "namespace": "kube-system",
                                        "labels": {"role": role, "fp": "1"}}})
    path = "/api/v1/namespaces/kube-system/configmaps?limit=1&labelSelector=fp%3D1,role%3Da"
    code, _, p1 = admin.get(path)
    assert [i["metadata"]["name"] for i in p1["items"]] == ["fp0"]
    assert "remainingItemCount" not in p1["metadata"]
    code, _, p2 = admin.get(path + "&continue=" + p1["metadata"]["continue"])
    assert code == 200 and p2["items"] == [] and "continue" not in p2["metadata"]


def test_event_namespace_rules(admin):
    base = "/api/v1/namespaces/%s/events"
    ev = {"metadata": {"name": "nsr"}, "involvedObject": {"kind": "Node", "name": "n"},
          "reason": "X", "message": "m"}
    assert admin.request("POST", base % "default", ev)[0] == 201
    code, _, body = admin.request("POST", base % "kube-system", ev)
    assert code == 422
    assert body["details"]["causes"][0] == {
        "reason": "FieldValueInvalid", "field": "involvedObject.namespace",
        "message": 'Invalid value: "": does not match event.namespace'}
    v1 = {"metadata": {"name": "nsr1"}, "eventTime": "2026-11-21T08:00:00.000000Z",
          "reportingController": "bootccm", "reportingInstance": "x",
          "action": "A", "reason": "R", "type": "Bogus",
          "regarding": {"kind": "Node", "name": "n"}}
    code, _, body = admin.request("POST", "/apis/events.k8s.io/v1/namespaces/default/events", v1)
    assert code == 422
    assert body["message"] == ('Event.events.k8s.io "nsr1" is invalid: type: Invalid '
                               'value: "": has invalid value: Bogus')


@pytest.fixture
def small_ports():
    """A server of its own whose node-port range has two ports."""
    s = apiserver.FakeAPIServer().start()
    s.registry.node_port_range = [30000, 30001]
    c = Client(s, cert=s.client_cert("kubernetes-admin", ["system:masters"]))
    yield c
    c.close()
    s.stop()


def test_node_ports_freed_and_a_full_range_is_an_error(small_ports):
    """The node-port allocator as the service REST's: a Service's ports are
    free again once it is gone (also when its last finalizer goes, or a
    write fails), and a full range is a 500 "range is full", never a wait."""
    admin = small_ports
    base = "/api/v1/namespaces/default/services"

    def lb(name, **md):
        return admin.request("POST", base, {
            "metadata": dict(name=name, **md),
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}})

    assert lb("a", finalizers=["service.kubernetes.io/load-balancer-cleanup"])[0] == 201
    # a failed create allocates nothing for good
    code, _, body = lb("a")
    assert code == 409, body
    assert lb("b")[0] == 201
    code, _, body = lb("c")
    assert code == 500, body
    assert body["reason"] == "InternalError"
    assert body["message"] == \
        "Internal error occurred: failed to allocate a nodePort: range is full"
    # deleting a Service with a finalizer keeps its port until the last
    # finalizer goes
    assert admin.request("DELETE", base + "/a")[0] == 200
    assert lb("c")[0] == 500
    code, _, body = admin.request("PATCH", base + "/a", {"metadata": {"finalizers": None}},
                                  ctype=MERGE)
    assert code == 200, body
    assert admin.request("GET", base + "/a")[0] == 404
    code, _, c = lb("c")
    assert code == 201, c
    # a type change drops the node port and frees it
    code, _, body = admin.request("PATCH", base + "/b", {"spec": {"type": "ClusterIP"}},
                                  ctype=MERGE)
    assert code == 200, body
    code, _, d = lb("d")
    assert code == 201, d
    assert {c["spec"]["ports"][0]["nodePort"], d["spec"]["ports"][0]["nodePort"]} == \
        {30000, 30001}


def test_a_requested_node_port_is_claimed_or_refused(small_ports):
    """A port that names its nodePort claims it, as the service REST does:
    one another Service holds, or one outside the range, is a 422 on that
    port's field and claims nothing (the other ports of the request
    included); an update keeps what the Service holds, by port name when
    the update omits it; a requested healthCheckNodePort is claimed too."""
    admin = small_ports
    base = "/api/v1/namespaces/default/services"

    def svc(name, *node_ports, **spec):
        ports = [{"name": "p%d" % i, "port": 80 + i} for i in range(len(node_ports))]
        for p, np in zip(ports, node_ports):
            if np:
                p["nodePort"] = np
        return admin.request("POST", base, {
            "metadata": {"name": name},
            "spec": dict({"type": "NodePort", "ports": ports}, **spec)})

    code, _, a = svc("a", 30001)
    assert code == 201, a
    assert a["spec"]["ports"][0]["nodePort"] == 30001
    code, _, body = svc("b", 30000, 30001)
    assert code == 422, body
    assert body["reason"] == "Invalid"
    assert body["message"] == ('Service "b" is invalid: spec.ports[1].nodePort: '
                               'Invalid value: 30001: provided port is already allocated')
    assert body["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.ports[1].nodePort",
        "message": "Invalid value: 30001: provided port is already allocated"}]
    code, _, body = svc("b", 31000)
    assert code == 422, body
    assert body["message"] == (
        'Service "b" is invalid: spec.ports[0].nodePort: Invalid value: 31000: provided '
        'port is not in the valid range. The range of valid ports is 30000-30001')
    # the refused request claimed nothing: 30000 is free, and the range
    # then full
    code, _, b = svc("b", 30000)
    assert code == 201, b
    code, _, body = svc("c", 0)
    assert code == 500, body
    # an update that omits the nodePort keeps the held one, by name; one
    # that names another Service's port is refused and changes nothing
    code, _, body = admin.request("PUT", base + "/a", dict(a, spec=dict(
        a["spec"], ports=[{"name": "p0", "port": 80}])))
    assert code == 200, body
    assert body["spec"]["ports"][0]["nodePort"] == 30001
    code, _, body = admin.request("PATCH", base + "/a", {"spec": {"ports": [
        {"name": "p0", "port": 80, "nodePort": 30000}]}}, ctype=MERGE)
    assert code == 422, body
    assert "spec.ports[0].nodePort: Invalid value: 30000: provided port is already " \
        "allocated" in body["message"]
    assert admin.request("GET", base + "/a")[2]["spec"]["ports"][0]["nodePort"] == 30001
    # two ports of one Service may share a nodePort (TCP and UDP)
    assert admin.request("DELETE", base + "/b")[0] == 200
    code, _, body = admin.request("POST", base, {
        "metadata": {"name": "dns"},
        "spec": {"type": "NodePort", "ports": [
            {"name": "tcp", "port": 53, "protocol": "TCP", "nodePort": 30000},
            {"name": "udp", "port": 53, "protocol": "UDP", "nodePort": 30000}]}})
    assert code == 201, body
    # a requested healthCheckNodePort is claimed as the REST does: a 500
    assert admin.request("DELETE", base + "/dns")[0] == 200
    code, _, body = svc("lb", 30000, type="LoadBalancer", externalTrafficPolicy="Local",
                        healthCheckNodePort=30001)
    assert code == 500, body
    assert body["message"] == ("Internal error occurred: failed to allocate requested "
                               "HealthCheck NodePort 30001: provided port is already allocated")
    # ... and claimed nothing: 30000 is still free
    code, _, body = svc("e", 30000)
    assert code == 201, body


def test_pod_status_on_create_and_status_update(admin):
    # as the real podStrategy: a new Pod is Pending with its QoS class,
    # whatever status the request held; a status update keeps the class
    pods = "/api/v1/namespaces/default/pods"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "x"}]},
           "status": {"phase": "Running"}}
    code, _, body = admin.request("POST", pods, pod)
    assert code == 201, body
    assert body["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    body["status"] = {"phase": "Running"}
    code, _, body = admin.request("PUT", pods + "/p/status", body)
    assert code == 200, body
    assert body["status"] == {"phase": "Running", "qosClass": "BestEffort"}
    for name, res, qos in (
            ("b", {"requests": {"cpu": "100m"}}, "Burstable"),
            ("g", {"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed")):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
               "spec": {"containers": [{"name": "c", "image": "x", "resources": res}]}}
        code, _, body = admin.request("POST", pods, pod)
        assert code == 201, body
        assert body["status"]["qosClass"] == qos, body["status"]
