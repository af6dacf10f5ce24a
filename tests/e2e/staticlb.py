"""What the static provider's LoadBalancer tests (tests/e2e/test_static_lb*.py)
share; they load it with pytest_plugins. The fixture lb is a StaticLB: the
fake API server with the shipped RBAC (static-pod/rbac.yaml), two Nodes and
a token allowed to read /metrics, and bootccm --cloud-provider=static
started on a cloud-config of address pools, running as
system:cloud-controller-manager. Its helpers read what a user sees (the
Service, its Events, /metrics) and what bootccm wrote (the fake's request
log)."""

import datetime
import os
import re
import time

import pytest
import yaml

from conftest import free_port, https_get, load_rbac, metrics_reader, wait_until
from conftest import events_about

USER = "system:cloud-controller-manager"
FIN = "service.kubernetes.io/load-balancer-cleanup"
KUBE_VIP = "kube-vip.io/loadbalancerIPs"
IPS = "bootccm.io/load-balancer-ips"
POOL = "bootccm.io/pool"
SHARED = "bootccm.io/allow-shared-ip"
EXCLUDE = "node.kubernetes.io/exclude-from-external-load-balancers"
METRICS_TOKEN = "lb-metrics-reader-token-0123456789"
NS = "default"
HTTP = [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]


def wall(entry):
    """A request log entry's time, in seconds since the epoch."""
    return datetime.datetime.strptime(entry["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


class StaticLB(object):
    """The fake API server with the shipped RBAC, two Nodes (already
    initialized), a token allowed to read /metrics, and bootccm
    --cloud-provider=static started on a cloud-config of pools."""

    def __init__(self, api, tmp, daemon):
        self.api, self.tmp, self._daemon = api, tmp, daemon
        self.d = None
        self.port = None
        load_rbac(api)
        metrics_reader(api, METRICS_TOKEN, "lb-metrics-reader")
        for n in ("n1", "n2"):
            self.node(n)
        self.kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user=USER, groups=(),
                                       tls_server_name="kubernetes")

    # -- the daemon -------------------------------------------------------------

    def configure(self, pools, kube_vip=False, name="cloud.yaml"):
        """Writes the cloud-config (a new file renamed over the old)."""
        path = os.path.join(self.tmp, name)
        with open(path + ".tmp", "w") as f:
            yaml.safe_dump({"static": {"pools": pools, "kubeVipAnnotation": kube_vip}}, f)
        os.rename(path + ".tmp", path)
        return path

    def start(self, pools, *flags, kube_vip=False):
        """bootccm on a cloud-config of these pools, its service controller
        started; returns the Daemon (the fixture stops it and fails the test
        on a sanitizer report or a bad exit)."""
        cfg = self.configure(pools, kube_vip)
        self.port = free_port()
        self.d = self._daemon(["--kubeconfig", self.kc, "--cloud-provider=static",
                               "--cloud-config", cfg, "--node-name", "n1",
                               "--leader-elect=false", "--secure-port=%d" % self.port,
                               "--bind-address=127.0.0.1", "-v=2"] + list(flags))
        self.d.wait_for("Service controller started", timeout=15)
        return self.d

    def stop(self):
        """Stops bootccm (SIGTERM): exit 0, no sanitizer report."""
        rc, out = self.d.stop()
        assert rc == 0, out
        assert "Sanitizer" not in out and "runtime error:" not in out, out
        return out

    # -- objects ----------------------------------------------------------------

    def node(self, name, labels=None):
        return self.api.create_object({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {"providerID": "static://" + name},
            "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.%d" %
                                      (len(self.api.list_objects("nodes")) + 10)}],
                       "conditions": [{"type": "Ready", "status": "True"}]}})

    def service(self, name, ns=NS, ports=None, annotations=None, **spec):
        o = {"apiVersion": "v1", "kind": "Service",
             "metadata": {"name": name, "namespace": ns},
             "spec": dict({"type": "LoadBalancer", "selector": {"app": name},
                           "ports": ports or HTTP}, **spec)}
        if annotations:
            o["metadata"]["annotations"] = dict(annotations)
        return self.api.create_object(o)

    def get(self, name, ns=NS):
        return self.api.get_object("services", name, namespace=ns)

    def update(self, name, change, ns=NS):
        """Reads the Service, applies change(obj) and writes it back (PUT)."""
        o = self.get(name, ns)
        change(o)
        return self.api.update_object(o)

    def ips(self, name, ns=NS):
        s = self.get(name, ns)
        if s is None:
            return None
        return [i.get("ip") for i in
                (s.get("status") or {}).get("loadBalancer", {}).get("ingress") or []]

    def wait_ips(self, name, ns=NS, n=1, timeout=15.0):
        return wait_until(lambda: len(self.ips(name, ns) or ()) == n and self.ips(name, ns),
                          timeout=timeout, what="%d address(es) for %s/%s" % (n, ns, name))

    def has_finalizer(self, name, ns=NS):
        s = self.get(name, ns)
        return s is not None and FIN in (s["metadata"].get("finalizers") or [])

    # -- what bootccm did ----------------------------------------------------------

    def writes(self, since=0, name=None, ns=NS):
        """bootccm's writes of Services (of one, when named), oldest first."""
        return [e for e in self.api.request_log(since)
                if e["user"] == USER and e.get("resource") == "services"
                and e["verb"] in ("create", "update", "patch", "delete")
                and (name is None or (e.get("name") == name and e.get("namespace") == ns))]

    def wait_writes(self, since, n, name=None, ns=NS, timeout=10.0):
        """Waits until the request log holds n of bootccm's writes of
        Services since `since` (the fake logs a request once it answered,
        so a change shows in the object before its write is logged)."""
        return wait_until(lambda: len(self.writes(since, name, ns)) >= n and
                          self.writes(since, name, ns), timeout=timeout,
                          what="%d write(s) of Services in the request log" % n)

    def events(self, name, reason=None, ns=NS):
        return events_about(self.api, "Service", name, reason, ns)

    def wait_event(self, name, reason, ns=NS, pred=lambda e: True, timeout=15.0):
        return wait_until(lambda: [e for e in self.events(name, reason, ns) if pred(e)],
                          timeout=timeout, what="%s Event for %s/%s" % (reason, ns, name))[0]

    def event_count(self, name, reason, ns=NS):
        return sum(e.get("count", 1) for e in self.events(name, reason, ns))

    def quiesce(self, seconds=1.0, timeout=30.0):
        """Waits until the API server has logged nothing new for `seconds`:
        the controller has nothing left to do."""
        deadline = time.monotonic() + timeout
        last, t = self.api.log_seq(), time.monotonic()
        while time.monotonic() - t < seconds:
            assert time.monotonic() < deadline, "the API server never went quiet"
            time.sleep(0.05)
            now = self.api.log_seq()
            if now != last:
                last, t = now, time.monotonic()

    def metrics(self):
        """bootccm_lb_pool_addresses from /metrics: {(pool, family, state): n}."""
        code, body = https_get(self.port, "/metrics", METRICS_TOKEN)
        assert code == 200, body
        return {(m.group(1), m.group(2), m.group(3)): int(float(m.group(4)))
                for m in re.finditer(r'^bootccm_lb_pool_addresses\{pool="([^"]*)",'
                                     r'family="([^"]*)",state="([^"]*)"\} (\S+)$', body, re.M)}

    def syncs(self, result):
        """bootccm_service_syncs_total{result} from /metrics."""
        code, body = https_get(self.port, "/metrics", METRICS_TOKEN)
        assert code == 200, body
        m = re.search(r'^bootccm_service_syncs_total\{result="%s"\} (\S+)$' % re.escape(result),
                      body, re.M)
        return int(float(m.group(1))) if m else 0


@pytest.fixture
def lb(api, tmp, daemon):
    return StaticLB(api, tmp, daemon)


def pool(name, *addresses, **kw):
    return dict({"name": name, "addresses": list(addresses)}, **kw)


PUBLIC = [pool("public", "192.0.2.0/29")]      # 192.0.2.1 to .6


def path_of(name, ns=NS, sub=""):
    return "/api/v1/namespaces/%s/services/%s%s" % (ns, name, "/" + sub if sub else "")


def one_held_one_waiting(lb, holder="old", waiter="new"):
    """bootccm on a pool of one address, 192.0.2.10, which holder holds and
    waiter waits for; returns waiter's SyncLoadBalancerFailed Event."""
    lb.start([pool("one", "192.0.2.10/32")])
    lb.service(holder)
    assert lb.wait_ips(holder) == ["192.0.2.10"]
    lb.service(waiter)
    return lb.wait_event(waiter, "SyncLoadBalancerFailed")


def failed(lb, name, ns=NS):
    """The message of name's SyncLoadBalancerFailed Event, once there is one."""
    ev = lb.wait_event(name, "SyncLoadBalancerFailed", ns)
    assert ev["type"] == "Warning"
    prefix = "Error syncing load balancer: failed to ensure load balancer: "
    assert ev["message"].startswith(prefix), ev["message"]
    return ev["message"][len(prefix):]


def created_after(lb, name):
    """Waits until the API server's clock has passed the second name was
    created in (creationTimestamp has seconds), so what is created next is
    younger."""
    stamp = lb.get(name)["metadata"]["creationTimestamp"]
    wait_until(lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) > stamp,
               what="a second after %s's creation" % name)
