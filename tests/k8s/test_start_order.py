"""Start orders on the real control plane: bootccm started before the API
server exists, then kept waiting while its RBAC does not exist yet, neither
crashes nor gives up, and initializes the Node once static-pod/rbac.yaml is
applied (design invariant 2, issue scenario 1)."""

import os
import time

from controlplane import ROOT, ControlPlane
from harness import Daemon, free_port, https_get as probe
from nodes import NODE, NODE_IP, fake_metadata, kubelet_node, metadata_daemon_args, tainted

BEFORE_APISERVER_S = 5
BEFORE_RBAC_S = 5
INIT_AFTER_RBAC_TIMEOUT_S = 40


def wait_probe(port, path, code, timeout):
    deadline = time.monotonic() + timeout
    while probe(port, path)[0] != code:
        assert time.monotonic() < deadline, "%s never answered %d" % (path, code)
        time.sleep(0.1)


def test_bootccm_before_the_apiserver_and_before_its_rbac():
    cp = ControlPlane().prepare()
    md = fake_metadata().FakeMetadata("ec2").start()
    port = free_port()
    d = Daemon(metadata_daemon_args(cp, md, extra=["--secure-port=%d" % port,
                                                  "--bind-address=127.0.0.1"]))
    try:
        # no API server: alive, not ready
        wait_probe(port, "/healthz", 200, timeout=10)
        time.sleep(BEFORE_APISERVER_S)
        assert d.alive(), d.output()
        assert probe(port, "/readyz")[0] != 200

        # the API server, but no RBAC for bootccm yet: 403s, no crash
        cp.start()
        status, obj = cp.node_client(NODE).request("POST", "/api/v1/nodes",
                                                    kubelet_node(NODE, NODE_IP))
        assert status == 201, obj
        time.sleep(BEFORE_RBAC_S)
        assert d.alive(), d.output()
        status, node = cp.client("admin").request("GET", "/api/v1/nodes/" + NODE)
        assert tainted(node)

        cp.kubectl("apply", "-f", os.path.join(ROOT, "static-pod", "rbac.yaml"))
        applied = time.monotonic()
        while tainted(node):
            assert time.monotonic() - applied < INIT_AFTER_RBAC_TIMEOUT_S, d.output()[-3000:]
            time.sleep(0.1)
            status, node = cp.client("admin").request("GET", "/api/v1/nodes/" + NODE)
        took = time.monotonic() - applied
        assert {"type": "InternalIP", "address": NODE_IP} in node["status"]["addresses"]
        wait_probe(port, "/readyz", 200, timeout=10)
        assert d.alive(), d.output()
        print("initialized %.1f s after the RBAC was applied" % took)
    finally:
        d.stop()
        md.stop()
        cp.stop()
