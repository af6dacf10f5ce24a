"""bootccm against the real control plane, first contact: a Node registered
with a kubelet's own identity (NodeRestriction applies) is initialized by
bootccm as system:cloud-controller-manager under static-pod/rbac.yaml as
shipped, with the metadata provider and the fake EC2 metadata service; the
real audit log shows what it wrote and in which order."""

import time

import pytest

from harness import Daemon
from nodes import NODE, NODE_IP, fake_metadata, kubelet_node, metadata_daemon_args, tainted

INIT_TIMEOUT_S = 20


@pytest.mark.usefixtures("ccm_cp")  # static-pod/rbac.yaml applied
def test_metadata_provider_initializes_a_kubelet_registered_node(cp):
    status, obj = cp.node_client(NODE).request("POST", "/api/v1/nodes",
                                                kubelet_node(NODE, NODE_IP))
    assert status == 201, obj
    md = fake_metadata().FakeMetadata("ec2").start()
    d = Daemon(metadata_daemon_args(cp, md, extra=["--secure-port=0"]))
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
