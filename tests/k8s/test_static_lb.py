"""The static provider's LoadBalancer Services on the real control plane:
bootccm --cloud-provider=static with a cloud-config of one pool of one
address, as system:cloud-controller-manager under static-pod/rbac.yaml as
shipped, and one Node kwok keeps Ready as the Services' backend. What it wrote is read from the real audit log; what a user sees
from the Service and its Events. The tests run in order on one control
plane and one pool:

1. a new Service gets the finalizer, then the address, in exactly two
   writes, with the Events the real API server accepted;
2. a restart writes nothing at all;
3. a second Service waits for the pool's only address; deleting the first
   cleans it up (bootccm removes the finalizer, the Service goes) and the
   waiting one gets the address."""

import re

import pytest
import yaml

from harness import Daemon, free_port, https_get
from nodes import create_lb_service, metrics_reader_token, poll

USER = "system:cloud-controller-manager"
FIN = "service.kubernetes.io/load-balancer-cleanup"
NS = "default"
ADDRESS = "192.0.2.10"  # the pool's only address
POOLS = [{"name": "one", "addresses": [ADDRESS + "/32"]}]
TIMEOUT_S = 30
NODE = "lb-backend-1"
REVIEWS = ("authentication.k8s.io", "authorization.k8s.io")  # /metrics' delegated checks


def service_path(name=""):
    return "/api/v1/namespaces/%s/services%s" % (NS, "/" + name if name else "")


class StaticLB(object):
    """bootccm --cloud-provider=static on POOLS against cp, a Ready Node,
    and what a user and the audit log see of it."""

    def __init__(self, cp):
        self.cp = cp
        self.admin = cp.client("admin")
        self.cfg = cp.path("static-cloud.yaml")
        with open(self.cfg, "w") as f:
            yaml.safe_dump({"static": {"pools": POOLS}}, f)
        self.token = metrics_reader_token(cp, "lb-scraper")
        self.d = None
        self.port = None
        self.ready_node(NODE)

    def ready_node(self, name):
        """A Node kwok keeps Ready, initialized (no uninitialized taint, a
        static providerID), so the Service has a backend."""
        self.cp.start_kwok()
        obj = {"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": name, "labels": {"type": "kwok"}},
               "spec": {"providerID": "static://" + name}}
        status, body = self.admin.request("POST", "/api/v1/nodes", obj)
        assert status == 201, body

        def ready():
            status, body = self.admin.request("GET", "/api/v1/nodes/" + name)
            assert status == 200, body
            return any(c["type"] == "Ready" and c["status"] == "True"
                       for c in body["status"].get("conditions") or [])
        self.wait(ready, "Node %s Ready" % name, lambda: self.cp.log("kwok")[-3000:])

    def start(self):
        self.port = free_port()
        self.d = Daemon(["--kubeconfig", self.cp.kubeconfig("cloud-controller-manager"),
                         "--cloud-provider=static", "--cloud-config", self.cfg,
                         "--node-name", "cp-1", "--leader-elect=false",
                         "--secure-port=%d" % self.port, "--bind-address=127.0.0.1", "-v=2"])
        self.d.wait_for("Service controller started", timeout=TIMEOUT_S)

    def stop(self):
        rc, out = self.d.stop()
        assert rc == 0, out
        assert "forbidden" not in out.lower(), out
        return out

    def service(self, name):
        return create_lb_service(self.admin, name, NS)

    def get(self, name):
        status, body = self.admin.request("GET", service_path(name))
        if status == 404:
            return None
        assert status == 200, body
        return body

    def ips(self, name):
        s = self.get(name) or {}
        return [i.get("ip") for i in
                s.get("status", {}).get("loadBalancer", {}).get("ingress") or []]

    def events(self, name, reason=None):
        status, body = self.admin.request("GET", "/api/v1/namespaces/%s/events" % NS)
        assert status == 200, body
        return [e for e in body["items"] if e["involvedObject"].get("kind") == "Service"
                and e["involvedObject"].get("name") == name
                and (reason is None or e["reason"] == reason)]

    def wait(self, pred, what, log=None):
        return poll(pred, what, self.d, TIMEOUT_S, log)

    def syncs(self, result):
        """bootccm_service_syncs_total{result} from /metrics."""
        code, body = https_get(self.port, "/metrics", self.token)
        assert code == 200, body
        m = re.search(r'^bootccm_service_syncs_total\{result="%s"\} (\S+)$' % result, body, re.M)
        return int(float(m.group(1))) if m else 0

    def writes(self, since=0):
        """bootccm's writes after the first SINCE, /metrics' reviews left out,
        once it has written nothing new for a while."""
        return [e for e in self.cp.quiet_writes(USER)[since:]
                if e["objectRef"].get("apiGroup") not in REVIEWS]

    def mark(self):
        return len(self.cp.writes(USER))


def brief(entries):
    return [(e["verb"], e["objectRef"]["resource"], e["objectRef"].get("name"),
             e["objectRef"].get("subresource"), e["responseStatus"]["code"]) for e in entries]


@pytest.fixture(scope="module")
def lb(ccm_cp):
    s = StaticLB(ccm_cp)
    s.start()
    yield s
    if s.d.result is None:
        s.stop()


def test_a_new_service_gets_the_finalizer_then_the_address(lb):
    mark = lb.mark()
    lb.service("web")
    assert lb.wait(lambda: lb.ips("web"), "address for web") == [ADDRESS]
    lb.wait(lambda: lb.events("web", "EnsuredLoadBalancer"), "EnsuredLoadBalancer Event")
    s = lb.get("web")
    assert s["metadata"]["finalizers"] == [FIN]
    assert s["status"]["loadBalancer"]["ingress"] == [{"ip": ADDRESS, "ipMode": "VIP"}]
    w = lb.writes(mark)
    services = [e for e in w if e["objectRef"]["resource"] == "services"]
    # the finalizer first (before any address), then the status, each
    # taking effect the first time: no 403, no 409
    assert brief(services) == [("patch", "services", "web", None, 200),
                               ("patch", "services", "web", "status", 200)], brief(w)
    assert services[0]["requestObject"]["metadata"]["finalizers"] == [FIN]
    # the Events the real API server accepted: core v1 Events, one each
    events = [e for e in w if e["objectRef"]["resource"] == "events"]
    assert [(e["verb"], e["objectRef"].get("apiGroup", ""), e["responseStatus"]["code"])
            for e in events] == [("create", "", 201)] * 2, brief(w)
    assert len(w) == 4, brief(w)
    for reason, message in (("EnsuringLoadBalancer", "Ensuring load balancer"),
                            ("EnsuredLoadBalancer", "Ensured load balancer")):
        [ev] = lb.events("web", reason)
        assert (ev["type"], ev["message"], ev["count"]) == ("Normal", message, 1), ev
        assert ev["involvedObject"]["uid"] == s["metadata"]["uid"]
    assert lb.events("web", "SyncLoadBalancerFailed") == []


def test_a_restart_writes_nothing(lb):
    lb.stop()
    mark = lb.mark()
    lb.start()
    lb.wait(lambda: lb.syncs("unchanged") >= 1, "quiet sync of web after the restart")
    assert lb.writes(mark) == []
    assert lb.syncs("unchanged") == 1 and lb.syncs("ensured") == 0
    assert lb.ips("web") == [ADDRESS]


def test_deleting_a_service_cleans_up_and_frees_its_address(lb):
    lb.service("waiter")
    ev = lb.wait(lambda: lb.events("waiter", "SyncLoadBalancerFailed"),
                 "SyncLoadBalancerFailed for waiter")[0]
    assert ev["type"] == "Warning" and "exhausted" in ev["message"], ev
    # the finalizer comes before the address, so a waiting Service has it
    assert lb.get("waiter")["metadata"]["finalizers"] == [FIN]
    assert lb.ips("waiter") == []
    mark = lb.mark()
    status, body = lb.admin.request("DELETE", service_path("web"))
    assert status == 200, body
    lb.wait(lambda: lb.get("web") is None, "web gone")
    assert lb.wait(lambda: lb.ips("waiter"), "address for waiter") == [ADDRESS]
    lb.wait(lambda: lb.events("waiter", "EnsuredLoadBalancer"), "EnsuredLoadBalancer for waiter")
    w = lb.writes(mark)
    # web: bootccm took its finalizer off, nothing else; waiter: its status
    services = [e for e in w if e["objectRef"]["resource"] == "services"]
    assert brief(services) == [("patch", "services", "web", None, 200),
                               ("patch", "services", "waiter", "status", 200)], brief(w)
    assert services[0]["requestObject"]["metadata"]["finalizers"] is None
    assert not [e for e in w if e["responseStatus"]["code"] >= 300], brief(w)
    for reason in ("DeletingLoadBalancer", "DeletedLoadBalancer"):
        assert len(lb.events("web", reason)) == 1, lb.events("web")
    out = lb.stop()
    assert "Sanitizer" not in out and "runtime error:" not in out, out
