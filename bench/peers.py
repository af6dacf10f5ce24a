#!/usr/bin/python3
"""peers.py - bootccm measured against its peers on the real control plane
(tests/k8s/controlplane.py: etcd, kube-apiserver, kube-controller-manager
v1.37.2, kwok), one controller at a time with the same inputs, the median of
--runs runs, one table with the ratio bootccm : peer.

    bench/peers.py                          100 Services, 100 Nodes, 3 runs
    bench/peers.py --services 1000 --nodes 5000 --json build/bench/peers.jsonl

Figures so far (issue "Measured against the peers"; the official Hetzner
Cloud CCM cannot be built here, docs/build.md "The peers"):

- the static provider against kube-vip-cloud-provider: N LoadBalancer
  Services created at once (8 clients in parallel) with M Nodes (kwok keeps
  them Ready): time from the first create until every Service has an
  address, duplicate addresses,
  CPU seconds and peak RSS of the controller over the burst.

An address is what each controller writes: bootccm the Service's
status.loadBalancer.ingress; kube-vip-cloud-provider its annotation
kube-vip.io/loadbalancerIPs (its node daemon, not measured, writes the
status once it announces the address). Each run has a control plane of its
own; the controller starts, has listed the Nodes and runs its service
controller before the first Service is created. bootccm runs as the static
pod runs it (static-pod/rbac.yaml), the peer under its own upstream RBAC.
Times are wall clock seen by polling the Services every 0.1 s; CPU is
utime+stime from /proc/PID/stat, peak RSS VmHWM, read once all are
assigned.

Needs BOOTCCM (default build/bootccm) and the upstream programs and peers of
scripts/k8s-build.sh (make k8s)."""

import argparse
import concurrent.futures
import ipaddress
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "k8s"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import yaml  # noqa: E402  (python3-yaml)

from controlplane import ControlPlane  # noqa: E402
from node_burst import proc_cpu_s, proc_status_kib, say  # noqa: E402
from nodes import create_lb_service  # noqa: E402
from peerrun import KUBE_VIP, KUBE_VIP_IPS, KUBE_VIP_MARKER, start_kube_vip  # noqa: E402

POOL = ("198.18.0.1", "198.18.7.254")   # 2,046 addresses (RFC 2544's benchmarking range)
NS = "default"
BUDGET_S = 600
CREATORS = 8  # parallel clients creating the burst (each request is a TLS handshake)


def bootccm_path():
    return os.path.abspath(os.environ.get("BOOTCCM") or os.path.join(ROOT, "build", "bootccm"))


def kwok_nodes(cp, n):
    """N Nodes kwok keeps Ready, initialized as the static provider leaves
    them (providerID static://NAME, no taint), created by the admin."""
    cp.start_kwok()
    admin = cp.client("admin")
    for i in range(n):
        name = "worker-%d" % i
        obj = {"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": name, "labels": {"type": "kwok"}},
               "spec": {"providerID": "static://" + name}}
        status, body = admin.request("POST", "/api/v1/nodes", obj)
        assert status == 201, body


def wait_log(cp, name, marker, proc, timeout=120):
    deadline = time.monotonic() + timeout
    while marker not in cp.log(name):
        if proc.poll() is not None:
            raise RuntimeError("%s exited:\n%s" % (name, cp.log(name)[-3000:]))
        if time.monotonic() > deadline:
            raise RuntimeError("no %r from %s in %ss" % (marker, name, timeout))
        time.sleep(0.05)


def start_bootccm(cp):
    cp.kubectl("apply", "-f", os.path.join(ROOT, "static-pod", "rbac.yaml"))
    cfg = cp.path("static-cloud.yaml")
    with open(cfg, "w") as f:
        yaml.safe_dump({"static": {"pools": [{"name": "bench",
                                              "addresses": ["%s-%s" % POOL]}]}}, f)
    proc = cp.spawn("bootccm", [bootccm_path(), "--kubeconfig",
                                cp.kubeconfig("cloud-controller-manager"),
                                "--cloud-provider=static", "--cloud-config", cfg,
                                "--node-name", "cp-1", "--secure-port=0", "-v=2"])
    wait_log(cp, "bootccm", "Service controller started", proc)
    return proc


def start_peer(cp):
    proc = start_kube_vip(cp, POOL)
    wait_log(cp, KUBE_VIP, KUBE_VIP_MARKER, proc)
    return proc


CONTROLLERS = {
    # name: (start, the address a Service shows)
    "bootccm": (start_bootccm, lambda s: [i.get("ip") for i in
                                          s.get("status", {}).get("loadBalancer", {})
                                          .get("ingress") or []]),
    KUBE_VIP: (start_peer, lambda s: [a for a in (s["metadata"].get("annotations", {})
                                                  .get(KUBE_VIP_IPS) or "").split(",") if a]),
}


def lb_burst(name, services, nodes):
    start, address = CONTROLLERS[name]
    with ControlPlane() as cp:
        kwok_nodes(cp, nodes)
        proc = start(cp)
        time.sleep(1)  # the controller's own start-up writes settle
        cpu0 = proc_cpu_s(proc.pid)
        admin = cp.client("admin")
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(CREATORS) as pool:
            list(pool.map(lambda i: create_lb_service(admin, "lb-%d" % i, NS), range(services)))
        created = time.monotonic() - t0
        deadline = t0 + BUDGET_S
        while True:
            status, body = admin.request("GET", "/api/v1/namespaces/%s/services" % NS)
            assert status == 200, body
            got = {s["metadata"]["name"]: address(s) for s in body["items"]
                   if s["spec"]["type"] == "LoadBalancer"}
            done = sum(1 for v in got.values() if v)
            if done == services or time.monotonic() > deadline or proc.poll() is not None:
                break
            time.sleep(0.1)
        t_all = time.monotonic() - t0
        ips = [ip for v in got.values() for ip in v]
        first, last = (ipaddress.ip_address(a) for a in POOL)
        res = {"controller": name, "services": services, "nodes": nodes,
               "assigned": done, "created_s": round(created, 3),
               "all_assigned_s": round(t_all, 3) if done == services else None,
               "after_last_create_s": round(t_all - created, 3) if done == services else None,
               "duplicates": len(ips) - len(set(ips)),
               "outside_pool": sum(1 for ip in ips
                                   if not first <= ipaddress.ip_address(ip) <= last),
               "cpu_s": round(proc_cpu_s(proc.pid) - cpu0, 3),
               "peak_rss_mib": round(proc_status_kib(proc.pid, "VmHWM") / 1024.0, 1)}
        res["forbidden_in_log"] = "forbidden" in cp.log(name).lower()
        return res


FIGURES = [("all_assigned_s", "LB burst: time until all have an address (s)"),
           ("after_last_create_s", "LB burst: the same, from the last create (s)"),
           ("cpu_s", "LB burst: CPU seconds"),
           ("peak_rss_mib", "LB burst: peak RSS (MiB)"),
           ("duplicates", "LB burst: duplicate addresses")]


def median(runs, key):
    xs = [r[key] for r in runs if r[key] is not None]
    return statistics.median(xs) if len(xs) == len(runs) else None


def table(results, peer):
    rows = ["| figure | bootccm | %s | bootccm : %s |" % (peer, peer), "|---|---|---|---|"]
    for key, title in FIGURES:
        a, b = median(results["bootccm"], key), median(results[peer], key)
        ratio = "%.2f" % (a / b) if a is not None and b else "-"
        rows.append("| %s | %s | %s | %s |" % (title, a if a is not None else "never",
                                               b if b is not None else "never", ratio))
    return "\n".join(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--services", type=int, default=100)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", help="append one JSON line per run to this file")
    a = ap.parse_args(argv)
    results = {name: [] for name in CONTROLLERS}
    for run in range(a.runs):
        for name in CONTROLLERS:  # one controller at a time, alternating
            say("peers: run %d/%d: %s, %d Services, %d Nodes" % (
                run + 1, a.runs, name, a.services, a.nodes))
            r = lb_burst(name, a.services, a.nodes)
            r["run"] = run + 1
            print(json.dumps(r, sort_keys=True))
            sys.stdout.flush()
            if a.json:
                with open(a.json, "a") as f:
                    f.write(json.dumps(r, sort_keys=True) + "\n")
            results[name].append(r)
    print()
    print(table(results, KUBE_VIP))
    return 0


if __name__ == "__main__":
    sys.exit(main())
