"""The real control plane of tests/k8s/controlplane.py: the release it runs,
the identities it hands out, NodeRestriction and node IPAM as kubeadm's
flags configure them, the cluster signer, kwok's stand-in kubelets, and
bootccm's identity under static-pod/rbac.yaml as shipped. One control plane
serves the whole module."""

import base64
import ipaddress
import json
import os
import subprocess
import time

from controlplane import ROOT, pinned_version

PODCIDR_TIMEOUT_S = 30
SIGN_TIMEOUT_S = 30
KWOK_TIMEOUT_S = 20


def node(name, labels=None):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"taints": [{"key": "node.cloudprovider.kubernetes.io/uninitialized",
                                 "value": "true", "effect": "NoSchedule"}]}}


def test_version_is_the_pinned_release(cp):
    want = pinned_version()
    status, v = cp.client("admin").request("GET", "/version")
    assert status == 200, v
    assert v["gitVersion"] == want
    assert (v["major"], v["minor"]) == tuple(want[1:].split(".")[:2])
    assert v["gitTreeState"] == "clean"
    out = json.loads(cp.kubectl("version", "--output=json").stdout)
    assert out["clientVersion"]["gitVersion"] == want
    assert out["serverVersion"]["gitVersion"] == want


def test_admin_creates_a_node_and_the_write_is_audited(cp):
    status, obj = cp.client("admin").request("POST", "/api/v1/nodes", node("admin-made"))
    assert status == 201, obj
    creates = [e for e in cp.writes("kubernetes-admin")
               if e["verb"] == "create" and e["objectRef"].get("name") == "admin-made"]
    assert len(creates) == 1
    assert creates[0]["objectRef"]["resource"] == "nodes"
    assert creates[0]["responseStatus"]["code"] == 201


def test_node_registers_itself_but_no_other_node(cp):
    kubelet = cp.node_client("worker-1")
    status, obj = kubelet.request("POST", "/api/v1/nodes", node("worker-1"))
    assert status == 201, obj
    status, obj = kubelet.request("POST", "/api/v1/nodes", node("worker-2"))
    assert status == 403, obj
    assert "worker-2" in obj["message"]
    # a kubelet may not change its own taints once registered (NodeRestriction)
    patch = {"spec": {"taints": []}}
    status, obj = kubelet.request("PATCH", "/api/v1/nodes/worker-1", patch,
                                  content_type="application/merge-patch+json")
    assert status == 403, obj
    assert "taints" in obj["message"]


def test_controller_manager_allocates_a_podcidr(cp):
    status, obj = cp.client("admin").request("POST", "/api/v1/nodes", node("ipam-1"))
    assert status == 201, obj
    deadline = time.monotonic() + PODCIDR_TIMEOUT_S
    cidr = None
    while time.monotonic() < deadline and not cidr:
        status, obj = cp.client("admin").request("GET", "/api/v1/nodes/ipam-1")
        assert status == 200, obj
        cidr = obj["spec"].get("podCIDR")
        if not cidr:
            time.sleep(0.2)
    assert cidr, "no podCIDR within %ss:\n%s" % (PODCIDR_TIMEOUT_S,
                                               cp.log("kube-controller-manager")[-3000:])
    net = ipaddress.ip_network(cidr)
    assert net.subnet_of(ipaddress.ip_network(cp.pod_cidr))
    assert net.prefixlen == cp.node_cidr_mask
    assert obj["spec"]["podCIDRs"] == [cidr]


def test_cloud_controller_manager_identity_under_the_shipped_rbac(cp):
    ccm = cp.client("cloud-controller-manager")
    status, obj = ccm.request("GET", "/api/v1/nodes")
    assert status == 403, obj
    cp.kubectl("apply", "-f", os.path.join(ROOT, "static-pod", "rbac.yaml"))
    # RBAC is read from the authorizer's watch cache: allow a moment
    deadline = time.monotonic() + 10
    while status == 403 and time.monotonic() < deadline:
        time.sleep(0.1)
        status, obj = ccm.request("GET", "/api/v1/nodes")
    assert status == 200, obj
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "cloud-controller-manager", "namespace": "kube-system"},
             "spec": {"holderIdentity": "test", "leaseDurationSeconds": 15}}
    path = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    status, obj = ccm.request("POST", path, lease)
    assert status == 201, obj
    # a Secret is none of its business
    status, obj = ccm.request("GET", "/api/v1/namespaces/kube-system/secrets")
    assert status == 403, obj


def test_cluster_signer_signs_an_approved_kubelet_serving_request(cp, tmp_path):
    node_name = "worker-1"
    key, csr = str(tmp_path / "k.key"), str(tmp_path / "k.csr")
    subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", csr,
                    "-subj", "/O=system:nodes/CN=system:node:" + node_name,
                    "-addext", "subjectAltName=DNS:%s,IP:10.0.0.5" % node_name],
                   check=True, capture_output=True, timeout=30)
    with open(csr, "rb") as f:
        request = base64.b64encode(f.read()).decode()
    name = "csr-" + node_name
    obj = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
           "metadata": {"name": name},
           "spec": {"request": request, "signerName": "kubernetes.io/kubelet-serving",
                    "usages": ["digital signature", "server auth"]}}
    path = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
    status, body = cp.node_client(node_name).request("POST", path, obj)
    assert status == 201, body
    body["status"] = {"conditions": [{"type": "Approved", "status": "True",
                                      "reason": "TestApproved", "message": "test"}]}
    status, body = cp.client("admin").request("PUT", "%s/%s/approval" % (path, name), body)
    assert status == 200, body
    deadline = time.monotonic() + SIGN_TIMEOUT_S
    while not body.get("status", {}).get("certificate"):
        assert time.monotonic() < deadline, body
        time.sleep(0.2)
        status, body = cp.client("admin").request("GET", "%s/%s" % (path, name))
    pem = base64.b64decode(body["status"]["certificate"])
    r = subprocess.run(["openssl", "verify", "-CAfile", cp.pki.path("ca.crt")],
                       input=pem, capture_output=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr


def test_kwok_keeps_a_node_ready_and_writes_no_address(cp):
    cp.start_kwok()
    name = "kwok-1"
    obj = node(name, labels={"type": "kwok"})
    status, body = cp.client("admin").request("POST", "/api/v1/nodes", obj)
    assert status == 201, body
    deadline = time.monotonic() + KWOK_TIMEOUT_S
    while True:
        status, body = cp.client("admin").request("GET", "/api/v1/nodes/" + name)
        assert status == 200, body
        conditions = {c["type"]: c["status"] for c in body["status"].get("conditions") or []}
        status, lease = cp.client("admin").request(
            "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + name)
        if conditions.get("Ready") == "True" and status == 200:
            break
        assert time.monotonic() < deadline, (body, lease, cp.log("kwok")[-3000:])
        time.sleep(0.2)
    assert "NetworkUnavailable" not in conditions, conditions
    assert not body["status"].get("addresses"), body["status"]
    # kwok is no cloud controller: the uninitialized taint stays (beside the
    # not-ready taint node-lifecycle may have added before kwok's first patch)
    assert "node.cloudprovider.kubernetes.io/uninitialized" in [
        t["key"] for t in body["spec"]["taints"]]
