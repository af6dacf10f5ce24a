"""bootccm against the real control plane, first contact: a Node registered
with a kubelet's own identity (NodeRestriction applies) is initialized by
bootccm as system:cloud-controller-manager under static-pod/rbac.yaml as
shipped, with the metadata provider and the fake EC2 metadata service; the
real audit log shows what it wrote and in which order."""

import importlib.util
import os
import time

import pytest

from controlplane import ROOT
from harness import Daemon

FAKES = os.path.join(ROOT, "tests", "fakes", "metadata")
EC2_DMI = os.path.join(FAKES, "dmi", "ec2")
NODE = "worker-a"
# the InternalIP of the fake's default EC2 identity (identities/ec2.json)
NODE_IP = "172.31.3.15"
UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized"
INIT_TIMEOUT_S = 20


def _fake_metadata():
    spec = importlib.util.spec_from_file_location("fake_metadata_server",
                                                  os.path.join(FAKES, "server.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def kubelet_node(name, node_ip):
    """A Node as kubelet --cloud-provider=external --node-ip registers it."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                    "kubernetes.io/arch": "amd64"},
                         "annotations": {"alpha.kubernetes.io/provided-node-ip": node_ip}},
            "spec": {"taints": [
                {"key": UNINITIALIZED, "value": "true", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}}


def tainted(node):
    return any(t["key"] == UNINITIALIZED for t in node["spec"].get("taints") or [])


@pytest.mark.usefixtures("ccm_cp")  # static-pod/rbac.yaml applied
def test_metadata_provider_initializes_a_kubelet_registered_node(cp):
    status, obj = cp.node_client(NODE).request("POST", "/api/v1/nodes",
                                                kubelet_node(NODE, NODE_IP))
    assert status == 201, obj
    md = _fake_metadata().FakeMetadata("ec2").start()
    d = Daemon(["--kubeconfig", cp.kubeconfig("cloud-controller-manager"),
                "--cloud-provider=metadata", "--node-name", NODE, "--secure-port=0",
                "--metadata-cloud=ec2", "--metadata-endpoint=" + md.url,
                "--metadata-dmi-dir=" + EC2_DMI])
    try:
        admin = cp.client("admin")
        deadline = time.monotonic() + INIT_TIMEOUT_S
        while True:
            status, node = admin.request("GET", "/api/v1/nodes/" + NODE)
            assert status == 200, node
            if not tainted(node):
                break
            assert d.alive(), d.output()
            assert time.monotonic() < deadline, "still tainted:\n" + d.output()[-3000:]
            time.sleep(0.1)
    finally:
        rc, out = d.stop()
        md.stop()
    assert {"type": "InternalIP", "address": NODE_IP} in node["status"]["addresses"]
    assert node["spec"]["providerID"].startswith("aws:///")
    forbidden = [e for e in cp.writes("system:cloud-controller-manager")
                 if e["responseStatus"]["code"] == 403]
    assert not forbidden, forbidden
    writes = [e for e in cp.writes("system:cloud-controller-manager")
              if e["objectRef"]["resource"] == "nodes" and e["objectRef"].get("name") == NODE]
    # addresses before untaint: the write that drops the taint comes after
    # the one that sets the addresses
    subs = [e["objectRef"].get("subresource") for e in writes]
    assert "status" in subs and subs.index("status") < subs.index(None), subs
    assert len(writes) == 2, [(e["verb"], e["objectRef"].get("subresource"),
                               e["responseStatus"]["code"]) for e in writes]
