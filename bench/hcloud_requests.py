#!/usr/bin/python3
"""hcloud_requests.py - what the hcloud provider costs in Hetzner Cloud API
requests: per periodic node sync, per load balancer creation, per Node
joining load balancers, per idle route reconcile, and in an hour of steady
state. The project's budget is about 3,600 requests an hour.

    bench/hcloud_requests.py                       every scenario, default sizes
    bench/hcloud_requests.py --scenario nodesync --nodes 1000,5000
    bench/hcloud_requests.py --scenario lb --nodes 10,100
    bench/hcloud_requests.py --scenario routes
    bench/hcloud_requests.py --scenario hour --nodes 1000 --services 50

Everything runs on loopback in one Python process: the fake API server
(tests/fakes, static-pod/rbac.yaml loaded) and the fake Hetzner Cloud API
(tests/fakes/hcloud). bootccm (--bootccm, default build/bootccm) runs with
--cloud-provider=hcloud as the static pod runs it. Nodes are stored already
initialized (providerID hcloud://<id>, Ready), as in a running cluster.
Requests are read from the fake's request log; every scenario waits for
bootccm's start-up requests to end first. One JSON line per measurement on
stdout (and in --json OUT). Method and figures: bench/RESULTS.md."""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "fakes"))
sys.path.insert(0, os.path.join(ROOT, "tests", "fakes", "hcloud"))

import yaml  # noqa: E402  (python3-yaml)

import apiserver  # noqa: E402
import fakehcloud  # noqa: E402

USER = "system:cloud-controller-manager"
A = "load-balancer.hetzner.cloud/"


def say(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


class Env(object):
    """The two fakes, n servers in network k8s, their Nodes (initialized,
    Ready), the files bootccm needs, and bootccm once started."""

    def __init__(self, args, n, node_labels=None, pod_cidrs=False):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="hcloud-bench-")
        self.api = apiserver.FakeAPIServer().start()
        # the project's budget as the real one, but never in the way here
        self.hc = fakehcloud.FakeHcloud(rate_limit=10 ** 7, rate_refill=10 ** 5).start()
        with open(os.path.join(ROOT, "static-pod", "rbac.yaml")) as f:
            for o in yaml.safe_load_all(f):
                if o:
                    self.api.create_object(o)
        self.net = self.hc.add_network(name="k8s", ip_range="10.0.0.0/8", subnets=[
            {"ip_range": "10.0.0.0/16", "type": "cloud", "network_zone": "eu-central"}])
        self.servers = []
        for i in range(n):
            self.add_node(i, (node_labels or {}).get(i), pod_cidrs)
        with open(os.path.join(self.tmp, "token"), "w") as f:
            f.write(self.hc.token + "\n")
        with open(os.path.join(self.tmp, "cloud.yaml"), "w") as f:
            f.write("hcloud:\n  tokenFile: token\n  endpoint: %s\n  network: k8s\n"
                    "  loadBalancers:\n    location: fsn1\n" % self.hc.endpoint)
        self.kc = self.api.write_kubeconfig(os.path.join(self.tmp, "kc"), user=USER,
                                            tls_server_name="kubernetes")
        self.proc = None

    def name(self, i):
        return "cp-1" if i == 0 else "node-%05d" % i

    def add_node(self, i, labels=None, pod_cidr=False):
        name = self.name(i)
        s = self.hc.add_server(name=name, private_net=[self.net["id"]])
        self.servers.append(s)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        lab = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
        lab.update(labels or {})
        spec = {"providerID": "hcloud://%d" % s["id"]}
        if pod_cidr:
            spec["podCIDR"] = "10.244.%d.0/24" % i
            spec["podCIDRs"] = [spec["podCIDR"]]
        self.api.create_object({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": lab},
            "spec": spec,
            "status": {
                "addresses": [{"type": "Hostname", "address": name},
                              {"type": "ExternalIP",
                               "address": s["public_net"]["ipv4"]["ip"]},
                              {"type": "InternalIP", "address": s["private_net"][0]["ip"]}],
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                "lastHeartbeatTime": now, "lastTransitionTime": now}]}})
        return s

    def start(self, *flags):
        self.log_path = os.path.join(self.tmp, "bootccm.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [self.args.bootccm, "--kubeconfig", self.kc, "--cloud-provider=hcloud",
             "--cloud-config", os.path.join(self.tmp, "cloud.yaml"), "--node-name", "cp-1",
             "--secure-port=0", "--leader-elect=false", "-v=2"] + list(flags),
            stdout=self.log, stderr=subprocess.STDOUT)

    def log_count(self, text):
        with open(self.log_path) as f:
            return f.read().count(text)

    def wait(self, pred, timeout, what):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred():
                return
            if self.proc is not None and self.proc.poll() is not None:
                raise SystemExit("bootccm exited while waiting for %s" % what)
            time.sleep(0.05)
        raise SystemExit("timed out waiting for %s" % what)

    def quiet(self, quiet_s=1.0, timeout=120):
        """Waits until the fake Hetzner API saw no request for quiet_s."""
        end = time.monotonic() + timeout
        last, since = self.hc.log_seq(), time.monotonic()
        while time.monotonic() < end:
            time.sleep(0.05)
            s = self.hc.log_seq()
            if s != last:
                last, since = s, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                return
        raise SystemExit("the fake never went quiet")

    def requests(self, since):
        return self.hc.request_log(since)

    def service(self, name, annotations=None):
        return self.api.create_object({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "default",
                         "annotations": dict(annotations or {})},
            "spec": {"type": "LoadBalancer", "selector": {"app": name},
                     "ports": [{"port": 80, "protocol": "TCP"}]}})

    def served(self, name):
        o = self.api.get_object("services", name, namespace="default")
        return bool(((o or {}).get("status") or {}).get("loadBalancer", {}).get("ingress"))

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)
        self.hc.stop()
        self.api.stop()


def kinds(reqs):
    out = {}
    for e in reqs:
        k = "%s %s" % (e["method"], "/".join(
            "{id}" if p.isdigit() else p for p in e["path"].split("/")))
        out[k] = out.get(k, 0) + 1
    return out


def emit(args, rec):
    line = json.dumps(rec, sort_keys=True)
    print(line)
    sys.stdout.flush()
    if args.json:
        with open(args.json, "a") as f:
            f.write(line + "\n")


# -- scenarios ---------------------------------------------------------------------

def nodesync(args, n):
    """Requests per periodic node address refresh (bootccm: one shared
    listing; the goal ceil(N/50) + 2). The period is longer than the
    listing's 10 s max age, as the default 5 min is: every pass lists."""
    period = 12
    env = Env(args, n)
    try:
        env.start("--node-status-update-frequency=%ds" % period)
        env.wait(lambda: env.log_count("Refreshed node addresses") >= 1, 120 + n / 50,
                 "the first refresh")
        env.quiet(0.5)
        seq, done = env.hc.log_seq(), env.log_count("Refreshed node addresses")
        passes = 3
        env.wait(lambda: env.log_count("Refreshed node addresses") >= done + passes,
                 passes * period + 60 + n / 25, "%d refreshes" % passes)
        env.quiet(0.5)
        reqs = env.requests(seq)
        per = len(reqs) / float(passes)
        emit(args, {"scenario": "nodesync", "nodes": n, "passes": passes,
                    "requests": len(reqs), "per_pass": per,
                    "goal": math.ceil(n / 50.0) + 2, "kinds": kinds(reqs)})
    finally:
        env.close()


def lb(args, n):
    """Requests per load balancer creation (server targets in the create's
    body; node-selector: the first balancer of a selector labels the
    servers, the next ones do not), and per Node joining two balancers."""
    everyone = {i: {"pool": "all"} for i in range(n)}
    env = Env(args, n, node_labels=everyone)
    try:
        env.start()
        env.quiet(1.0)
        for name, ann in (("plain", {A + "type": "lb31"}),
                          ("plain-2", {A + "type": "lb31"}),
                          ("selector", {A + "node-selector": "pool=all"}),
                          ("selector-2", {A + "node-selector": "pool=all"})):
            seq = env.hc.log_seq()
            env.service(name, ann)
            env.wait(lambda: env.served(name), 120, "Service %s served" % name)
            env.quiet(1.0)
            reqs = env.requests(seq)
            emit(args, {"scenario": "lb-create", "nodes": n, "service": name,
                        "requests": len(reqs), "kinds": kinds(reqs)})
        # a Node joins: plain (and plain-2) add a target each; the selector
        # balancers follow one server label
        seq = env.hc.log_seq()
        env.add_node(n, {"pool": "all"})
        env.quiet(1.5)
        reqs = env.requests(seq)
        emit(args, {"scenario": "lb-node-joins", "nodes": n, "balancers": 4,
                    "requests": len(reqs), "kinds": kinds(reqs)})
    finally:
        env.close()


def routes(args, n):
    """Requests per idle route reconcile (the goal: 1). 90 Nodes: a
    network holds at most 100 routes."""
    period = 2
    env = Env(args, n, pod_cidrs=True)
    try:
        env.start("--cluster-cidr=10.244.0.0/16", "--route-reconciliation-period=%ds" % period)
        env.wait(lambda: len(env.hc.network(env.net["id"])["routes"]) == n, 120,
                 "%d routes" % n)
        env.quiet(0.5)
        seq = env.hc.log_seq()
        passes = 5
        time.sleep(passes * period + 0.5)
        reqs = env.requests(seq)
        # a pass starts a period after the last one ended, so there are at
        # most `passes`; each lists the network once (and asks nothing
        # else): the requests are the passes
        net = "/v1/networks/%d" % env.net["id"]
        emit(args, {"scenario": "routes-idle", "nodes": n, "seconds": passes * period,
                    "period": period, "passes_at_most": passes, "requests": len(reqs),
                    "only_the_network_get": all(e["method"] == "GET" and e["path"] == net
                                                for e in reqs),
                    "kinds": kinds(reqs)})
    finally:
        env.close()


def hour(args, n):
    """Steady state at n nodes and args.services LoadBalancer Services (each
    on the 20 ingress nodes, by node selector): the periodic passes are run
    faster (10 s instead of 5 min) for args.seconds, the passes counted in
    bootccm's log, and the cost of a pass of each scaled to an hour of the
    default periods (12 passes of each). No routes: a Hetzner network holds
    100 routes, so a 1,000-node cluster does not route through it (the
    routes scenario measures a pass)."""
    ingress = {i: {"pool": "ingress"} for i in range(1, 21)}
    env = Env(args, n, node_labels=ingress)
    fast = 10
    refreshed, checked = "Refreshed node addresses", "Checked the load balancers for drift"
    try:
        env.start("--node-status-update-frequency=%ds" % fast,
                  "--service-sync-period=%ds" % fast)
        for k in range(args.services):
            env.service("svc-%02d" % k, {A + "node-selector": "pool=ingress"})
        env.wait(lambda: all(env.served("svc-%02d" % k) for k in range(args.services)),
                 300, "every Service served")
        # from the end of a pass of each: whole passes in the window
        env.wait(lambda: env.log_count(refreshed) >= 1 and env.log_count(checked) >= 1,
                 120, "a pass of each")
        env.quiet(1.0)
        seq, t0 = env.hc.log_seq(), time.monotonic()
        r0, c0 = env.log_count(refreshed), env.log_count(checked)
        time.sleep(args.seconds)
        r1, c1 = env.log_count(refreshed), env.log_count(checked)
        env.quiet(1.0)
        reqs = env.requests(seq)
        secs = time.monotonic() - t0
        servers = [e for e in reqs if e["path"].startswith("/v1/servers")]
        lbs = [e for e in reqs if e["path"].startswith("/v1/load_balancers")]
        other = len(reqs) - len(servers) - len(lbs)
        # requests of a pass, times 12 passes an hour (the default 5 min);
        # anything else as measured, per hour of this run
        per_sync = len(servers) / float(max(r1 - r0, 1))
        per_verify = len(lbs) / float(max(c1 - c0, 1))
        est = {"node-sync": per_sync * 12, "lb-verify": per_verify * 12,
               "other": other * 3600.0 / secs}
        emit(args, {"scenario": "hour", "nodes": n, "services": args.services,
                    "seconds": round(secs, 1), "requests": len(reqs),
                    "node_sync_passes": r1 - r0, "lb_verify_passes": c1 - c0,
                    "per_node_sync": round(per_sync, 2), "per_lb_verify": round(per_verify, 2),
                    "kinds": kinds(reqs), "per_hour": {k: round(v) for k, v in est.items()},
                    "per_hour_total": round(sum(est.values())),
                    "budget_share": round(sum(est.values()) / 3600.0, 4)})
    finally:
        env.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", default="all",
                    choices=("all", "nodesync", "lb", "routes", "hour"))
    ap.add_argument("--nodes", default=None, help="comma-separated sizes")
    ap.add_argument("--services", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--bootccm", default=os.path.join(ROOT, "build", "bootccm"))
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    # scenario, its function, its default sizes (nodes)
    for name, run_one, default in (("nodesync", nodesync, "1000,5000"), ("lb", lb, "10,100"),
                                   ("routes", routes, "90"), ("hour", hour, "1000")):
        if args.scenario not in ("all", name):
            continue
        for n in [int(x) for x in (args.nodes or default).split(",")]:
            say("%s %d" % (name, n))
            run_one(args, n)

if __name__ == "__main__":
    main()
