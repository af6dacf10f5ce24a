"""What the fault and failover matrices (tests/e2e/test_fault_*.py,
tests/e2e/test_failover.py) share: a cluster on the static provider (the
fake API server with the shipped RBAC, an inventory of nodes, a pool of
LoadBalancer addresses), churn (nodes registered the way kubelet
--cloud-provider=external does and deleted, LoadBalancer Services created
and deleted, straight into the fake's storage, so the churn goes on while
the API server is faulted for bootccm), and the invariants that must hold
during and after every fault:

1. no Node without the uninitialized taint lacks its addresses (addresses
   before untaint), and once the fault is over no Node is left tainted;
2. no wrong deletion: bootccm deletes no Node (every Node here is in the
   inventory, which is not authoritative) and no Service;
3. no address is held twice on the static provider (no sharing here);
4. every Service that has an address (cloud resources) carries the cleanup
   finalizer, and once the fault is over every deleted Service is gone
   (its finalizer removed) and every other one has its address.

The Watcher samples 1, 3 and 4 every 50 ms while the fault goes on;
converge() and check() check everything once the fault is over.

Tests load it with pytest_plugins = ("invariants",) for the fixture
cluster. The long versions (make soak) set BOOTCCM_FAULT_SOAK=1: soak(short, long)
picks the figure."""

import os
import random
import threading
import time

import pytest
import yaml

from conftest import Daemon, free_port, load_rbac, wait_until

USER = "system:cloud-controller-manager"
UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized"
FIN = "service.kubernetes.io/load-balancer-cleanup"
NS = "default"
POOL = "192.0.2.0/24"          # 254 addresses
NODES_MAX = 400                 # names w-000 .. w-399 are in the inventory
LEASE_FLAGS = ["--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s",
               "--leader-elect-retry-period=500ms"]


def soak(short, long):
    """short in make check, long under make soak (BOOTCCM_FAULT_SOAK=1)."""
    return long if os.environ.get("BOOTCCM_FAULT_SOAK") == "1" else short


def node_address(i):
    return "10.1.%d.%d" % (i // 250, i % 250 + 1)


def inventory_text():
    inst = [{"name": "cp-1", "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
             "zone": "rack-1", "region": "dc-1"}]
    for i in range(NODES_MAX):
        inst.append({"name": "w-%03d" % i, "zone": "rack-%d" % (i % 4), "region": "dc-1",
                     "addresses": [{"type": "InternalIP", "address": node_address(i)}]})
    return yaml.safe_dump({"instances": inst})


def tainted(node):
    return any(t.get("key") == UNINITIALIZED for t in node["spec"].get("taints") or [])


def ingress_ips(svc):
    return [i.get("ip") for i in
            ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []]


def has_finalizer(svc):
    return FIN in (svc["metadata"].get("finalizers") or [])


class Cluster(object):
    """The fake API server api as a cluster on the static provider; bootccm
    replicas started with start() (each its own user, so the request log
    tells them apart) and churn with the methods below."""

    def __init__(self, api, tmp):
        self.api, self.tmp = api, tmp
        load_rbac(api)
        # one user per replica, bound like the shipped system:cloud-controller-manager
        for kind, ref in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
            o = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
                 "metadata": {"name": "bootccm-replicas"},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": ref,
                             "name": USER},
                 "subjects": [{"kind": "Group", "name": "bootccm:replicas",
                               "apiGroup": "rbac.authorization.k8s.io"}]}
            if kind == "RoleBinding":
                o["metadata"]["namespace"] = "kube-system"
            api.create_object(o)
        self.put("inventory.yaml", inventory_text())
        self.cfg = self.put("cloud.yaml", yaml.safe_dump({"static": {
            "inventory": "inventory.yaml", "authoritative": False,
            "pools": [{"name": "public", "addresses": [POOL]}]}}))
        self.daemons = []
        self.next_node = 0
        self.next_svc = 0
        self.deleted_nodes = set()
        self.deleted_svcs = set()
        self.rng = random.Random(int(os.environ.get("BOOTCCM_FAULT_SEED", "0")) or None)
        self.register("cp-1", control_plane=True)

    def put(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.rename(path + ".tmp", path)
        return path

    # -- bootccm ---------------------------------------------------------------

    def kubeconfig(self, user):
        path = os.path.join(self.tmp, "kc-" + user)
        if not os.path.exists(path):
            self.api.write_kubeconfig(path, user=user, groups=("bootccm:replicas",),
                                      tls_server_name="kubernetes")
        return path

    def args(self, user="ccm-a", node="cp-1", leader_elect=True, extra=()):
        return (["--kubeconfig", self.kubeconfig(user), "--cloud-provider=static",
                 "--cloud-config", self.cfg, "--node-name", node, "--secure-port=0",
                 "--leader-elect=%s" % ("true" if leader_elect else "false"),
                 "--concurrent-node-syncs=2", "--concurrent-service-syncs=2", "-v=2"]
                + list(extra))

    def start(self, user="ccm-a", node="cp-1", leader_elect=True, extra=()):
        """A bootccm replica as user; stopped (and checked) by stop_all()."""
        d = Daemon(self.args(user, node, leader_elect, extra))
        d.user = user
        self.daemons.append(d)
        return d

    def stop_all(self):
        """SIGTERM every replica still running; fails on a sanitizer report or
        an exit other than 0 (a replica killed by the test is not checked for
        its exit, only for a report)."""
        bad = []
        for d in self.daemons:
            killed = d.proc.poll() is not None and d.proc.returncode < 0
            rc, out = d.stop()
            if "Sanitizer" in out or "runtime error:" in out:
                bad.append("%s: sanitizer report:\n%s" % (d.user, out[-6000:]))
            elif not killed and rc not in (0, -15):
                bad.append("%s: exit %s:\n%s" % (d.user, rc, out[-6000:]))
        self.daemons = []
        assert not bad, "\n".join(bad)

    # -- churn -----------------------------------------------------------------

    def register(self, name, control_plane=False):
        taints = [{"key": UNINITIALIZED, "value": "true", "effect": "NoSchedule"},
                  {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]
        labels = {"kubernetes.io/hostname": name}
        if control_plane:
            labels["node-role.kubernetes.io/control-plane"] = ""
        return self.api.create_object({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}})

    def add_node(self):
        assert self.next_node < NODES_MAX, "more nodes than the inventory lists"
        name = "w-%03d" % self.next_node
        self.next_node += 1
        self.register(name)
        return name

    def delete_node(self):
        live = [n for n in self.node_names() if n != "cp-1"]
        if not live:
            return None
        name = self.rng.choice(live)
        self.deleted_nodes.add(name)
        self.api.delete_object("nodes", name)
        return name

    def add_service(self):
        name = "svc-%03d" % self.next_svc
        self.next_svc += 1
        self.api.create_object({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"type": "LoadBalancer", "selector": {"app": name},
                     "ports": [{"name": "http", "port": 80, "protocol": "TCP",
                                "targetPort": 8080}]}})
        return name

    def delete_service(self):
        live = [s["metadata"]["name"] for s in self.services()
                if s["metadata"]["name"] not in self.deleted_svcs]
        if not live:
            return None
        name = self.rng.choice(live)
        self.deleted_svcs.add(name)
        self.api.delete_object("services", name, namespace=NS)
        return name

    def churn_step(self):
        """One step: a node registered, sometimes one deleted; a Service
        created, sometimes one deleted."""
        self.add_node()
        if self.rng.random() < 0.3:
            self.delete_node()
        self.add_service()
        if self.rng.random() < 0.3:
            self.delete_service()

    def churn(self, seconds, per_second=2.0, during=None):
        """churn_step per_second times a second for seconds; during(t), when
        given, is called before each step with the seconds elapsed."""
        t0 = time.monotonic()
        while True:
            t = time.monotonic() - t0
            if t >= seconds:
                break
            if during:
                during(t)
            self.churn_step()
            time.sleep(max(0.0, 1.0 / per_second - (time.monotonic() - t0 - t)))

    # -- state -----------------------------------------------------------------

    def nodes(self):
        return self.api.list_objects("nodes")

    def node_names(self):
        return [n["metadata"]["name"] for n in self.nodes()]

    def services(self):
        return [s for s in self.api.list_objects("services", namespace=NS)
                if s["spec"].get("type") == "LoadBalancer"]

    def violations(self):
        """What breaks invariants 1, 3 and 4 at this moment (a list of
        strings; empty when they hold)."""
        bad = []
        for n in self.nodes():
            if not tainted(n) and not n["status"].get("addresses"):
                bad.append("node %s untainted without addresses" % n["metadata"]["name"])
        held = {}
        for s in self.services():
            name = s["metadata"]["name"]
            ips = ingress_ips(s)
            if ips and not has_finalizer(s):
                bad.append("service %s has %s but no finalizer" % (name, ips))
            for ip in ips:
                if ip in held:
                    bad.append("address %s held by %s and %s" % (ip, held[ip], name))
                held[ip] = name
        return bad

    def converged(self):
        """Nothing left to do: every node initialized, every live Service with
        one address, every deleted Service gone."""
        for n in self.nodes():
            if tainted(n) or not n["status"].get("addresses") or \
                    not n["spec"].get("providerID"):
                return False
        for s in self.services():
            name = s["metadata"]["name"]
            if name in self.deleted_svcs:
                return False
            if len(ingress_ips(s)) != 1 or not has_finalizer(s):
                return False
        return True

    def converge(self, timeout=60.0):
        try:
            wait_until(self.converged, timeout=timeout, interval=0.2,
                       what="the cluster to converge after the fault")
        except AssertionError:
            raise AssertionError("not converged after %ss: %s" % (timeout, self.pending()))

    def pending(self):
        out = []
        for n in self.nodes():
            if tainted(n) or not n["status"].get("addresses"):
                out.append("node %s" % n["metadata"]["name"])
        for s in self.services():
            name = s["metadata"]["name"]
            if name in self.deleted_svcs or len(ingress_ips(s)) != 1 or not has_finalizer(s):
                out.append("service %s %s fin=%s deleted=%s" % (
                    name, ingress_ips(s), has_finalizer(s), name in self.deleted_svcs))
        return out[:20]

    def check(self, since=0):
        """Every invariant, after the fault: nothing pending, nothing broken,
        and in the request log no deletion by bootccm and no node untainted
        before its addresses were written."""
        assert self.violations() == [], self.violations()
        assert self.converged(), self.pending()
        log = self.api.request_log(since)
        ours = [e for e in log if e["user"] != "kubernetes-admin" and
                e["user"] != "fake-test" and e.get("resource") in ("nodes", "services")]
        deletes = [(e["user"], e["path"]) for e in ours if e["verb"] == "delete"]
        assert deletes == [], deletes
        # addresses before untaint, from the writes that were answered 2xx
        addressed = set()
        for e in ours:
            if e.get("resource") != "nodes" or not 200 <= e["code"] < 300 or \
                    e["verb"] not in ("patch", "update"):
                continue
            body = e.get("body")
            if e.get("subresource") == "status" and isinstance(body, dict) and \
                    (body.get("status") or {}).get("addresses"):
                addressed.add(e["name"])
            elif e.get("subresource") == "" and _untaints(body):
                assert e["name"] in addressed, \
                    "node %s untainted before its addresses were written" % e["name"]
        for n in self.nodes():
            assert n["metadata"]["name"] not in self.deleted_nodes, n["metadata"]["name"]


def _untaints(body):
    """Whether a logged node patch body writes spec.taints without the
    uninitialized taint (a merge patch or a JSON patch)."""
    if isinstance(body, dict):
        t = (body.get("spec") or {}).get("taints")
        return t is not None and not any(x.get("key") == UNINITIALIZED for x in t)
    if isinstance(body, list):
        for op in body:
            if op.get("path", "").startswith("/spec/taints") and op.get("op") in (
                    "replace", "remove", "add"):
                v = op.get("value")
                if op.get("op") == "remove" or (isinstance(v, list) and not any(
                        x.get("key") == UNINITIALIZED for x in v)):
                    return True
    return False


class Watcher(object):
    """Samples Cluster.violations() every 50 ms in a thread between start()
    and stop(); stop() returns the first violations seen (empty if none)."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.seen = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            v = self.cluster.violations()
            if v and not self.seen:
                self.seen = v
            self._stop.wait(0.05)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *a):
        self._stop.set()
        self._t.join(5)

    def check(self):
        assert self.seen == [], "an invariant broke during the fault: %s" % self.seen


@pytest.fixture
def cluster(api, tmp):
    """A Cluster on the fake API server; its replicas are stopped and
    checked at the end."""
    c = Cluster(api, tmp)
    yield c
    c.stop_all()


def wait_started(d, timeout=20.0):
    """Waits until replica d runs its controllers (it leads, or runs without
    leader election)."""
    d.wait_for("Service controller started", timeout=timeout)

