"""The hcloud provider's routes on the real control plane: bootccm with
--cloud-provider=hcloud against the fake Hetzner Cloud API
(tests/fakes/hcloud), the real kube-apiserver, and the real
kube-controller-manager, whose node IPAM allocates every Node's podCIDRs
(--allocate-node-cidrs, --cluster-cidr). The Nodes register with their own
identity, as kubelets with --provider-id do, for servers the fake has.

1. Every podCIDR the allocator gave gets exactly one route in the network,
   via its Node's private IP; the Node's NetworkUnavailable is False with
   upstream's reason RouteCreated.
2. A Node whose NetworkUnavailable the CNI wrote (reason CalicoIsUp) gets
   its route and keeps the condition exactly as the CNI wrote it: bootccm
   never writes that Node's conditions (upstream's route controller
   overwrites it since v1.36).
3. A Node that joins while bootccm runs gets its route; a Node deleted
   loses it.
No write of bootccm's is forbidden by the real server, and none of the
route controller's is refused with 409."""

import json
import os
import sys
import tempfile
import time

import pytest

from controlplane import POD_CIDR, ROOT
from harness import Daemon, wait_until
from nodes import kubelet_node

sys.path.insert(0, os.path.join(ROOT, "tests", "fakes", "hcloud"))
import fakehcloud  # noqa: E402

CCM = "system:cloud-controller-manager"
NETWORK = "k8s"
NODES = ("cp-1", "worker-1", "worker-2")
CNI_NODE = "worker-calico"
JOINING = "worker-3"
PERIOD_S = 2  # --route-reconciliation-period
WAIT_S = 60   # generous: two cores shared with other work
# the condition as Calico's node agent writes it (its reason and message)
CNI_CONDITION = {"type": "NetworkUnavailable", "status": "False", "reason": "CalicoIsUp",
                 "message": "Calico is running on this node",
                 "lastHeartbeatTime": "2026-11-28T00:00:00Z",
                 "lastTransitionTime": "2026-11-28T00:00:00Z"}


def private_ip(server):
    return server["private_net"][0]["ip"]


class Cluster(object):
    """The fake cloud, its servers and their Nodes, and bootccm."""

    def __init__(self, cp, hc, tmp):
        self.cp, self.hc, self.tmp = cp, hc, tmp
        self.admin = cp.client("admin")
        self.net = hc.add_network(name=NETWORK, ip_range="10.0.0.0/8")
        self.servers = {}
        self.daemon = None

    def register(self, name):
        """A server in the network and its Node, registered by its kubelet."""
        s = self.hc.add_server(name=name, private_net=[self.net["id"]])
        self.servers[name] = s
        status, obj = self.cp.node_client(name).request(
            "POST", "/api/v1/nodes",
            kubelet_node(name, private_ip(s), provider_id="hcloud://%d" % s["id"]))
        assert status == 201, obj

    def node(self, name):
        status, obj = self.admin.request("GET", "/api/v1/nodes/" + name)
        assert status == 200, obj
        return obj

    def pod_cidr(self, name):
        """The Node's podCIDR once the allocator gave it one."""
        cidrs = wait_until(lambda: self.node(name)["spec"].get("podCIDRs"), timeout=WAIT_S,
                           what="a podCIDR for %s" % name)
        assert len(cidrs) == 1, cidrs
        return cidrs[0]

    def routes(self):
        return sorted((r["destination"], r["gateway"])
                      for r in self.hc.network(self.net["id"])["routes"])

    def want(self, names):
        return sorted((self.pod_cidr(n), private_ip(self.servers[n])) for n in names)

    def wait_routes(self, names=None, want=None):
        """Waits until the network's routes are exactly want, or those of
        the Nodes names."""
        want = self.want(names) if want is None else want
        deadline = time.monotonic() + WAIT_S
        while self.routes() != want:
            assert self.daemon.alive(), self.daemon.output()[-3000:]
            assert time.monotonic() < deadline, "routes %s, not %s\n%s" % (
                self.routes(), want, self.daemon.output()[-3000:])
            time.sleep(0.1)

    def network_unavailable(self, name):
        for c in self.node(name)["status"].get("conditions") or []:
            if c["type"] == "NetworkUnavailable":
                return c
        return None

    def wait_route_created(self, name):
        def routed():
            c = self.network_unavailable(name)
            return c if c and (c["status"], c["reason"]) == ("False", "RouteCreated") else None
        return wait_until(routed, timeout=WAIT_S, what="%s's NetworkUnavailable" % name)

    def passes(self, since):
        """bootccm's route passes since log sequence number since: each
        lists the routes with one GET of the network."""
        path = "/v1/networks/%d" % self.net["id"]
        return [e for e in self.hc.request_log(since)
                if (e["method"], e["path"]) == ("GET", path)]

    def start(self):
        token = os.path.join(self.tmp, "token")
        with open(token, "w") as f:
            f.write(self.hc.token + "\n")
        cfg = os.path.join(self.tmp, "cloud.yaml")
        with open(cfg, "w") as f:
            f.write("hcloud:\n  tokenFile: %s\n  endpoint: %s\n  network: %s\n"
                    "  requestTimeout: 5s\n" % (token, self.hc.endpoint, NETWORK))
        self.daemon = Daemon([
            "--kubeconfig", self.cp.kubeconfig("cloud-controller-manager"),
            "--cloud-provider=hcloud", "--cloud-config", cfg, "--node-name", NODES[0],
            "--secure-port=0", "--allocate-node-cidrs=false", "--configure-cloud-routes=true",
            "--cluster-cidr=" + POD_CIDR, "--route-reconciliation-period=%ds" % PERIOD_S])

    def refused(self):
        """bootccm's writes the real server refused as forbidden, or in
        conflict: all but the initialization's write of a joining Node's
        addresses, a merge patch behind the cached resourceVersion, which
        kube-controller-manager's IPAM (patching the podCIDR within
        milliseconds of the registration) can beat; bootccm reads the Node
        again and writes once more."""
        def initialization(e):
            body = e.get("requestObject")
            return (e["objectRef"].get("subresource") == "status" and
                    isinstance(body, dict) and set(body.get("status") or {}) == {"addresses"})
        return [(e["verb"], e["objectRef"].get("resource"), e["objectRef"].get("name"),
                 e["objectRef"].get("subresource"), e["responseStatus"]["code"])
                for e in self.cp.writes(CCM) if e["responseStatus"]["code"] == 403 or
                (e["responseStatus"]["code"] == 409 and not initialization(e))]


@pytest.fixture(scope="module")
def cluster(ccm_cp):
    """The Nodes of NODES and CNI_NODE registered, the CNI's condition on
    CNI_NODE written with that Node's identity, then bootccm started."""
    with fakehcloud.FakeHcloud() as hc, tempfile.TemporaryDirectory() as tmp:
        c = Cluster(ccm_cp, hc, tmp)
        for n in NODES + (CNI_NODE,):
            c.register(n)
        status, obj = ccm_cp.node_client(CNI_NODE).request(
            "PATCH", "/api/v1/nodes/%s/status" % CNI_NODE,
            {"status": {"conditions": [CNI_CONDITION]}},
            content_type="application/strategic-merge-patch+json")
        assert status == 200, obj
        c.start()
        try:
            yield c
        finally:
            rc, out = c.daemon.stop()
            assert "forbidden" not in out.lower(), out


def test_every_allocated_pod_cidr_gets_one_route_via_its_nodes_private_ip(cluster):
    # the allocator's CIDRs, distinct, inside the cluster CIDR
    cidrs = [cluster.pod_cidr(n) for n in NODES + (CNI_NODE,)]
    assert len(set(cidrs)) == len(cidrs) and all(c.startswith("10.244.") for c in cidrs)
    cluster.wait_routes(NODES + (CNI_NODE,))
    for n in NODES:
        c = cluster.wait_route_created(n)
        assert c["message"] == "RouteController created a route", c
    # a few passes more: still exactly one route per podCIDR
    seq = cluster.hc.log_seq()
    wait_until(lambda: len(cluster.passes(seq)) >= 2, timeout=WAIT_S, what="two more passes")
    cluster.wait_routes(NODES + (CNI_NODE,))
    assert cluster.refused() == []


def test_a_cni_network_unavailable_is_left_as_the_cni_wrote_it(cluster):
    cluster.wait_routes(NODES + (CNI_NODE,))
    # the pass that created the route went on to the conditions; two more
    # passes end after this one
    seq = cluster.hc.log_seq()
    wait_until(lambda: len(cluster.passes(seq)) >= 2, timeout=WAIT_S, what="two more passes")
    for n in NODES:
        cluster.wait_route_created(n)
    got = dict(cluster.network_unavailable(CNI_NODE))
    assert got == CNI_CONDITION
    # bootccm wrote the Node's status (its addresses), never its conditions
    mine = [json.dumps(e.get("requestObject")) for e in cluster.cp.writes(CCM)
            if e["objectRef"].get("resource") == "nodes" and
            e["objectRef"].get("name") == CNI_NODE and
            e["objectRef"].get("subresource") == "status"]
    assert mine and not [w for w in mine if "conditions" in w], mine
    assert cluster.refused() == []


def test_a_joining_node_gets_its_route(cluster):
    cluster.register(JOINING)
    cluster.wait_routes(NODES + (CNI_NODE, JOINING))
    cluster.wait_route_created(JOINING)
    assert cluster.refused() == []


def test_a_deleted_node_loses_its_route(cluster):
    left = tuple(n for n in NODES + (CNI_NODE, JOINING) if n != "worker-2")
    want = cluster.want(left)
    cluster.wait_routes(NODES + (CNI_NODE, JOINING))
    status, obj = cluster.admin.request("DELETE", "/api/v1/nodes/worker-2")
    assert status == 200, obj
    cluster.wait_routes(want=want)
    assert cluster.refused() == []
