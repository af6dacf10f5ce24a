"""The Python stand-in (tests/fakes/apiserver.py) against the real
kube-apiserver: the requests bootccm makes, and the ways they fail, sent to
both in the same order; the answers must agree (status code, Status reason,
message and causes, and the object, leaving out what each server makes up:
uids, resourceVersions, timestamps, managedFields, allocated cluster IPs
and node ports). A disagreement is the stand-in's fault: fix it there and
list it in tests/fakes/README.md."""

import json
import os
import sys

import pytest

from controlplane import KCM_CONTROLLERS, ROOT, Client, ControlPlane

sys.path.insert(0, os.path.join(ROOT, "tests", "fakes"))

from apiserver import FakeAPIServer  # noqa: E402

MERGE = "application/merge-patch+json"
JSONP = "application/json-patch+json"
SMP = "application/strategic-merge-patch+json"
MADE_UP = {"uid", "resourceVersion", "creationTimestamp", "managedFields", "clusterIP",
           "clusterIPs", "nodePort", "lastHeartbeatTime", "lastTransitionTime",
           "deletionTimestamp", "renewTime", "acquireTime"}
# kube-controller-manager without the controllers that write Nodes whenever
# they get to it (node IPAM's ranges, the ttl annotation, the node lifecycle
# controller's NoSchedule taints): the answers are the API server's alone
CONTROLLERS = KCM_CONTROLLERS + \
    ",-node-lifecycle-controller,-ttl-controller,-node-ipam-controller"
UNINITIALIZED = {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true",
                 "effect": "NoSchedule"}
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
NODE = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"},
                     "annotations": {"alpha.kubernetes.io/provided-node-ip": "10.0.0.1"}},
        "spec": {"taints": [UNINITIALIZED, NOT_READY]}}
SVC = {"apiVersion": "v1", "kind": "Service",
       "metadata": {"name": "web", "namespace": "default"},
       "spec": {"type": "LoadBalancer", "ports": [{"port": 80}], "selector": {"app": "web"}}}
FIN = "service.kubernetes.io/load-balancer-cleanup"
SVC_PATH = "/api/v1/namespaces/default/services/web"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"


def rv_of(o):
    return o["metadata"]["resourceVersion"]


def event(name, **over):
    e = {"metadata": {"name": name, "namespace": "default"},
         "involvedObject": {"kind": "Node", "name": "n1", "apiVersion": "v1", "uid": "n1"},
         "reason": "Synced", "message": "m", "type": "Normal",
         "source": {"component": "cloud-node-controller"},
         "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
         "count": 1}
    e.update(over)
    return e


# (label, method, path or a function of the earlier answers, body or a
# function of them, content type): the answers so far are passed by label
SCENARIO = [
    ("create a node", "POST", "/api/v1/nodes", NODE, None),
    ("create it again", "POST", "/api/v1/nodes", NODE, None),
    ("create a node without taints", "POST", "/api/v1/nodes",
     {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}}, None),
    ("delete it", "DELETE", "/api/v1/nodes/n2", None, None),
    ("get a missing node", "GET", "/api/v1/nodes/nope", None, None),
    ("status merge patch behind", "PATCH", "/api/v1/nodes/n1/status",
     {"metadata": {"resourceVersion": "1"},
      "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}, MERGE),
    ("status merge patch", "PATCH", "/api/v1/nodes/n1/status",
     lambda a: {"metadata": {"resourceVersion": rv_of(a["create a node"])},
                "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"},
                                         {"type": "Hostname", "address": "n1"}]}}, MERGE),
    ("json patch, failed test", "PATCH", "/api/v1/nodes/n1",
     lambda a: [{"op": "test", "path": "/metadata/resourceVersion",
                 "value": rv_of(a["create a node"])},
                {"op": "remove", "path": "/spec/taints/0"}], JSONP),
    ("json patch, missing path", "PATCH", "/api/v1/nodes/n1",
     [{"op": "remove", "path": "/spec/nothing"}], JSONP),
    ("json patch: untaint, providerID", "PATCH", "/api/v1/nodes/n1",
     lambda a: [{"op": "test", "path": "/metadata/resourceVersion",
                 "value": rv_of(a["status merge patch"])},
                {"op": "remove", "path": "/spec/taints/0"},
                {"op": "add", "path": "/spec/providerID", "value": "aws:///z/i-1"}], JSONP),
    ("providerID changed", "PATCH", "/api/v1/nodes/n1",
     {"spec": {"providerID": "aws:///z/i-2"}}, MERGE),
    ("providerID cleared", "PATCH", "/api/v1/nodes/n1", {"spec": {"providerID": None}}, MERGE),
    ("condition, strategic", "PATCH", "/api/v1/nodes/n1/status",
     {"status": {"conditions": [{"type": "NetworkUnavailable", "status": "False",
                                 "reason": "RouteCreated", "message": "m"}]}}, SMP),
    ("create a service", "POST", "/api/v1/namespaces/default/services", SVC, None),
    ("service finalizer", "PATCH", SVC_PATH,
     lambda a: {"metadata": {"resourceVersion": rv_of(a["create a service"]),
                             "finalizers": [FIN]}}, MERGE),
    ("service status", "PATCH", SVC_PATH + "/status",
     lambda a: {"metadata": {"resourceVersion": rv_of(a["service finalizer"])},
                "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1",
                                                         "ipMode": "VIP"}]}}}, MERGE),
    ("service status, behind", "PATCH", SVC_PATH + "/status",
     lambda a: {"metadata": {"resourceVersion": rv_of(a["service finalizer"])},
                "status": {"loadBalancer": {}}}, MERGE),
    ("service status, no address", "PATCH", SVC_PATH + "/status",
     {"status": {"loadBalancer": {"ingress": [{"ip": "nope"}]}}}, MERGE),
    ("service status, ipMode without ip", "PATCH", SVC_PATH + "/status",
     {"status": {"loadBalancer": {"ingress": [{"hostname": "lb.example",
                                               "ipMode": "VIP"}]}}}, MERGE),
    ("delete the service", "DELETE", SVC_PATH, None, None),
    ("remove the finalizer", "PATCH", SVC_PATH, {"metadata": {"finalizers": None}}, MERGE),
    ("get the deleted service", "GET", SVC_PATH, None, None),
    ("an event", "POST", "/api/v1/namespaces/default/events", event("n1.a"), None),
    ("an event in another namespace", "POST", "/api/v1/namespaces/default/events",
     event("n1.b", metadata={"name": "n1.b", "namespace": "kube-system"}), None),
    ("a lease", "POST", LEASES,
     {"metadata": {"name": "ccm"}, "spec": {"holderIdentity": "a",
                                            "leaseDurationSeconds": 15}}, None),
    ("a lease update, behind", "PUT", LEASES + "/ccm",
     {"metadata": {"name": "ccm", "resourceVersion": "1"},
      "spec": {"holderIdentity": "b", "leaseDurationSeconds": 15}}, None),
    ("list nodes", "GET", "/api/v1/nodes?resourceVersion=0&limit=500", None, None),
    ("a bad label selector", "GET", "/api/v1/nodes?labelSelector=a%3D%3D%3Db", None, None),
    ("a bad label value", "GET", "/api/v1/nodes?labelSelector=a%3Db%2Fc", None, None),
    ("delete the node", "DELETE", "/api/v1/nodes/n1", None, None),
    ("delete it again", "DELETE", "/api/v1/nodes/n1", None, None),
]


def made_up_removed(o):
    if isinstance(o, dict):
        return {k: made_up_removed(v) for k, v in o.items() if k not in MADE_UP}
    if isinstance(o, list):
        return [made_up_removed(v) for v in o]
    return o


def run(client):
    answers, out = {}, []
    for label, method, path, body, ctype in SCENARIO:
        if callable(body):
            body = body(answers)
        status, obj = client.request(method, path, None if body is None else json.dumps(body),
                                     content_type=ctype or "application/json")
        answers[label] = obj
        out.append((label, status, made_up_removed(obj)))
    return out


@pytest.fixture(scope="module")
def cp():
    with ControlPlane(controllers=CONTROLLERS) as c:
        yield c


@pytest.fixture(scope="module")
def answers(cp):
    real = run(cp.client("admin"))
    with FakeAPIServer(git_version=cp.version["gitVersion"]) as srv:
        pair = srv.client_cert("kubernetes-admin", ["system:masters"])
        fake = run(Client(srv.port, srv.ca_file, pair.cert, pair.key))
    return dict((r[0], (r, f)) for r, f in zip(real, fake))


@pytest.mark.parametrize("label", [s[0] for s in SCENARIO])
def test_the_stand_in_answers_like_kube_apiserver(answers, label):
    (_, real_status, real), (_, fake_status, fake) = answers[label]
    assert (fake_status, fake) == (real_status, real)
