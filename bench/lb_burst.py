#!/usr/bin/python3
"""lb_burst.py - how fast does bootccm give a burst of new LoadBalancer
Services their addresses on the static provider, and what does it cost:
time until all are assigned, creation-to-address latency, API writes per
Service, CPU and the peak RSS of the whole process with the Nodes and the
Services cached.

    bench/lb_burst.py                            1,000 Services, 5,000 Nodes, both modes, 1 run
    bench/lb_burst.py --runs 3 --json build/bench/lb_burst.jsonl
    bench/lb_burst.py --services 200 --nodes 100 --mode plain

Everything runs on loopback in one Python process: the fake API server
(tests/fakes, with static-pod/rbac.yaml loaded), holding N Nodes as a
kubeadm cluster's workers look once initialized (bench/node_burst.py's
kubelet registration, then providerID, addresses and Ready; no images).
bootccm runs as the static pod runs it, as User
system:cloud-controller-manager, with --cloud-provider=static and a
cloud-config of one pool of 2,046 addresses (kubeVipAnnotation false in
mode plain, true in mode kube-vip).

Once bootccm has listed the Nodes and its service controller runs (and the
API server has been quiet for a second), the Services are created as fast
as the fake takes them, each with one TCP port. Times come from the fake's
storage: the bench wraps its commit function and stamps every Service
change (wall clock), so "created" is when a Service was stored and
"assigned" is when a status with its address was stored. Writes are read
from the fake's request log (bootccm's user only). CPU is utime+stime from
/proc/PID/stat, peak RSS VmHWM from /proc/PID/status, read once every
Service is assigned and bootccm has made no request for 1 s.

--apiserver real runs the same burst against the real control plane of
tests/k8s/ (bench/realcp.py, as bench/node_burst.py --apiserver real):
1,000 Nodes by default, created Ready by the admin and kept alive by kwok,
the Services created by the admin, times stamped from a watch of the
Services, writes from the audit log.

One JSON line per run on stdout (and in --json OUT), then medians per mode.
Method and figures: bench/RESULTS.md."""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "fakes"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import yaml  # noqa: E402  (python3-yaml)

import apiserver  # noqa: E402
import realcp  # noqa: E402
from node_burst import (FakeServer, RealServer, add_apiserver_args,  # noqa: E402
                        control_plane_cpu, field,
                        kubelet_node, parse_time, percentile, proc_cpu_s, proc_status_kib,
                        say, say_real, uptime)

USER = "system:cloud-controller-manager"
NS = "default"
POOL = "198.18.0.0/21"     # 2,046 addresses (RFC 2544's benchmarking range)
KUBE_VIP = "kube-vip.io/loadbalancerIPs"
LOCAL = "cp-1"


def ready_node(i):
    """A worker as the API server holds it once kubelet registered it and a
    CCM initialized it: bench/node_burst.py's registration, without the
    bootstrap taints, with its providerID, addresses and Ready."""
    name = LOCAL if i < 0 else "node-%05d" % i
    n = kubelet_node(name, max(i, 0), local=i < 0)
    n["spec"] = {"providerID": "static://" + name}
    ip = "10.%d.%d.%d" % (1 + i // 62500, (i // 250) % 250, 1 + i % 250) if i >= 0 \
        else "10.0.0.1"
    n["status"]["addresses"] = [{"type": "InternalIP", "address": ip},
                                {"type": "Hostname", "address": name}]
    n["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                  "message": "kubelet is posting ready status",
                                  "lastHeartbeatTime": "2026-11-21T08:00:00Z",
                                  "lastTransitionTime": "2026-11-21T08:00:00Z"}]
    return n


def lb_service(name):
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": NS, "labels": {"app": name}},
            "spec": {"type": "LoadBalancer", "selector": {"app": name},
                     "ports": [{"name": "http", "port": 80, "protocol": "TCP",
                                "targetPort": 8080}]}}


def ingress_ips(obj):
    return [i.get("ip") for i in
            ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []]


class ServiceClock(object):
    """Wraps the fake store's commit so that each Service change is stamped
    as it is stored: when it was created, when its status first showed an
    address (and which)."""

    def __init__(self, store=None):
        self.lock = threading.Lock()
        self.created = {}
        self.assigned = {}
        self.address = {}
        if store is None:   # stamped by the caller (a watch of the real API)
            return
        orig = store._commit

        def commit(etype, rkey, ns, name, obj, prev):
            rv = orig(etype, rkey, ns, name, obj, prev)
            if rkey[1] == "services" and obj is not None:
                self._stamp(time.time(), etype, name, obj)
            return rv

        store._commit = commit

    def _stamp(self, t, etype, name, obj):
        ips = ingress_ips(obj)
        with self.lock:
            if etype == "ADDED":
                self.created.setdefault(name, t)
            if ips and name in self.created and name not in self.assigned:
                self.assigned[name] = t
                self.address[name] = tuple(ips)

    def count_assigned(self, names):
        with self.lock:
            return sum(1 for n in names if n in self.assigned)


def one_run(args, mode, run_no):
    n = args.services
    names = ["svc-%04d" % i for i in range(n)]
    state = tempfile.mkdtemp(prefix="lb-burst-")
    kube_vip = mode == "kube-vip"
    res = {"mode": mode, "run": run_no, "services": n, "nodes": args.nodes, "qps": args.qps,
           "burst": args.burst, "workers": args.workers}
    real = args.apiserver == "real"
    if real:
        res["apiserver"] = "real"
    server = realcp.RealAPI(args.k8s_bin) if real else apiserver.FakeAPIServer(state_dir=state)
    with server as srv:
        if real:
            be = RealServer(srv, ServiceClock(), "/api/v1/services")
        else:
            be = FakeServer(srv, state, lambda store: None)
        t = time.time()
        be.create([ready_node(i) for i in range(-1, args.nodes - 1)])
        res["nodes_create_s"] = round(time.time() - t, 3)
        if not real:
            be.clock = ServiceClock(srv.store)
        clock = be.clock
        cfg = os.path.join(state, "cloud-config.yaml")
        with open(cfg, "w") as f:
            yaml.safe_dump({"static": {"pools": [{"name": "bench", "addresses": [POOL]}],
                                       "kubeVipAnnotation": kube_vip}}, f)
        cmd = [args.bootccm, "--kubeconfig", be.kubeconfig(), "--cloud-provider=static",
               "--cloud-config", cfg, "--node-name", LOCAL,
               "--kube-api-qps=%g" % args.qps, "--kube-api-burst=%d" % args.burst,
               "--concurrent-service-syncs=%d" % args.workers,
               "--leader-elect=false", "--secure-port=0", "-v=2"]
        log_path = os.path.join(state, "bootccm.log")
        log = open(log_path, "w")
        t_start = time.time()
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            # the Node and Service caches synced: the controller runs
            end = time.time() + 120
            while True:
                with open(log_path) as f:
                    if "Service controller started" in f.read():
                        break
                if p.poll() is not None or time.time() > end:
                    raise RuntimeError("bootccm's service controller did not start (exit %s); "
                                       "log %s" % (p.poll(), log_path))
                time.sleep(0.05)
            res["caches_synced_s"] = round(time.time() - t_start, 3)
            be.wait_quiet(1.0, 30)
            res["rss_idle_mib"] = round(proc_status_kib(p.pid, "VmRSS") / 1024.0, 2)
            res["peak_rss_idle_mib"] = round(proc_status_kib(p.pid, "VmHWM") / 1024.0, 2)
            services = [lb_service(name) for name in names] if real else \
                (lb_service(name) for name in names)
            seq_burst = be.seq()
            cpu0 = proc_cpu_s(p.pid)
            cp_cpu0 = control_plane_cpu(be, p) if real else None
            t0 = time.time()
            be.create(services, path="/api/v1/namespaces/%s/services" % NS)
            res["create_s"] = round(time.time() - t0, 3)
            budget = args.timeout or (60 + 10.0 * n / args.qps)
            res["complete"] = wait_assigned(p, clock, names, budget, log_path, be.check)
            res["quiet"] = be.wait_quiet(1.0, budget)
            read_process(res, p.pid, cpu0)
            if real:
                res["cpu_per_service_ms"] = round(1000.0 * res["cpu_burst_s"] / n, 3)
                be.record(res, p, cp_cpu0)
        finally:
            stop(p)
            log.close()
        res["exit"] = p.returncode
        requests = be.log(seq_burst)
        analyse(res, requests, clock, names, t0, kube_vip)
        if real:
            res["apiserver_write_ms"] = realcp.write_latency_ms(requests, parse_time,
                                                                percentile)
    if res.get("complete") and res["exit"] == 0 and not args.keep:
        shutil.rmtree(state, ignore_errors=True)
    else:
        res["state_dir"] = state
    return res


def wait_assigned(p, clock, names, budget_s, log_path, check=lambda: None):
    """Waits until every Service has its address (True), or the budget is
    spent (False); fails if bootccm exits (or check() raises)."""
    end = time.time() + budget_s
    while clock.count_assigned(names) < len(names):
        check()
        if p.poll() is not None:
            raise RuntimeError("bootccm exited %s; log %s" % (p.returncode, log_path))
        if time.time() > end:
            return False
        time.sleep(0.05)
    return True


def read_process(res, pid, cpu0):
    """CPU, RSS and peak RSS of the process, and the machine's load."""
    res["cpu_s"] = round(proc_cpu_s(pid), 3)
    res["cpu_burst_s"] = round(res["cpu_s"] - cpu0, 3)
    res["peak_rss_mib"] = round(proc_status_kib(pid, "VmHWM") / 1024.0, 2)
    res["rss_mib"] = round(proc_status_kib(pid, "VmRSS") / 1024.0, 2)
    with open("/proc/loadavg") as f:   # the machine's other work, for the record
        res["loadavg_1m"] = float(f.read().split()[0])


def stop(p):
    """SIGTERM, then SIGKILL after 30 s."""
    if p.poll() is not None:
        return
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def analyse(res, requests, clock, names, t0, kube_vip):
    n = len(names)
    done = [x for x in names if x in clock.assigned]
    lat = [clock.assigned[x] - clock.created[x] for x in done]
    res["assigned"] = len(done)
    res["latency_s"] = {k: (round(v, 3) if v is not None else None) for k, v in
                        (("p50", percentile(lat, 50)), ("p99", percentile(lat, 99)),
                         ("max", max(lat) if lat else None))}
    last = max((clock.assigned[x] for x in done), default=None)
    res["total_s"] = round(last - t0, 3) if last else None
    # no address shown by two Services (none share here)
    held = {}
    for x in done:
        for a in clock.address[x]:
            held[a] = held.get(a, 0) + 1
    res["duplicate_addresses"] = sum(1 for c in held.values() if c > 1)

    wanted = set(names)
    w = {"metadata": 0, "status": 0, "event": 0, "other": 0}
    per_svc = {}
    codes = {}
    finalizer_first = 0
    for e in requests:
        if e["user"] != USER or e["verb"] not in ("create", "update", "patch", "delete"):
            continue
        codes[str(e["code"])] = codes.get(str(e["code"]), 0) + 1
        if e.get("resource") == "services" and e.get("name") in wanted:
            kind = "status" if e.get("subresource") == "status" else "metadata"
            w[kind] += 1
            if per_svc.get(e["name"]) is None and kind == "metadata" and \
                    ((e.get("body") or {}).get("metadata") or {}).get("finalizers"):
                finalizer_first += 1
            per_svc[e["name"]] = per_svc.get(e["name"], 0) + 1
        elif e.get("resource") == "events":
            w["event"] += 1
        else:
            w["other"] += 1
    res["writes"] = w
    res["writes_per_service"] = round((w["metadata"] + w["status"]) / n, 3) if n else None
    res["writes_per_service_goal"] = 3 if kube_vip else 2
    res["finalizer_written_first"] = finalizer_first
    hist = {}
    for x in names:
        k = str(per_svc.get(x, 0))
        hist[k] = hist.get(k, 0) + 1
    res["services_by_write_count"] = hist
    res["write_codes"] = codes
    res["failed_writes"] = sum(v for k, v in codes.items() if not k.startswith("2"))
    q = res["qps"]
    res["bound_s"] = round(res["writes_per_service_goal"] * n / q + 1, 3)
    log = [e for e in requests if e["user"] == USER and
           e.get("resource") == "services" and e.get("name") in wanted]
    if log and res["total_s"]:
        res["service_writes_per_s"] = round(
            (w["metadata"] + w["status"]) /
            max(parse_time(log[-1]["time"]) - parse_time(log[0]["time"]), 1e-9), 1)


SUMMARY = ("latency_s.p50", "latency_s.p99", "latency_s.max", "total_s", "bound_s",
           "create_s", "caches_synced_s", "writes_per_service", "writes.event",
           "failed_writes", "duplicate_addresses", "cpu_s", "cpu_burst_s", "rss_idle_mib",
           "peak_rss_idle_mib", "peak_rss_mib", "rss_mib", "service_writes_per_s", "loadavg_1m")
# the real control plane's runs also have these
SUMMARY_REAL = ("cpu_per_service_ms", "apiserver_write_ms.p50", "apiserver_write_ms.p99",
                "control_plane_cpu_s.kube-apiserver",
                "control_plane_cpu_s.etcd", "control_plane_cpu_s.kube-controller-manager",
                "control_plane_cpu_s.kwok")


def summary(runs):
    out = []
    for mode in ("plain", "kube-vip"):
        rs = [r for r in runs if r["mode"] == mode]
        if not rs:
            continue
        m = {"mode": mode, "runs": len(rs), "services": rs[0]["services"],
             "nodes": rs[0]["nodes"], "qps": rs[0]["qps"], "burst": rs[0]["burst"],
             "workers": rs[0]["workers"], "complete": all(r.get("complete") for r in rs),
             "writes_per_service_goal": rs[0]["writes_per_service_goal"]}
        if rs[0].get("apiserver") == "real":
            m["apiserver"] = "real"
        for k in SUMMARY + (SUMMARY_REAL if m.get("apiserver") else ()):
            vals = [field(r, k) for r in rs if field(r, k) is not None]
            m[k] = round(statistics.median(vals), 3) if vals else None
        out.append(m)
    return out


def emit(out, obj):
    """One JSON line on stdout and, when out is open, in it."""
    line = json.dumps(obj, sort_keys=True)
    print(line, flush=True)
    if out:
        out.write(line + "\n")
        out.flush()
    return obj


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--services", type=int, default=1000)
    ap.add_argument("--nodes", type=int, default=None,
                    help="Nodes in the cache, the one bootccm runs on included (default 5000; "
                    "1000 with --apiserver real)")
    ap.add_argument("--qps", type=float, default=100.0, help="--kube-api-qps (default 100)")
    ap.add_argument("--burst", type=int, default=None, help="--kube-api-burst (default = qps)")
    ap.add_argument("--workers", type=int, default=4,
                    help="--concurrent-service-syncs (default 4)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--mode", choices=("plain", "kube-vip", "both"), default="both",
                    help="kubeVipAnnotation false (plain), true (kube-vip), or each in turn")
    ap.add_argument("--bootccm", default=os.path.join(ROOT, "build", "bootccm"))
    ap.add_argument("--json", metavar="OUT", help="append every run's line and the medians")
    ap.add_argument("--timeout", type=float, default=0,
                    help="seconds to wait for all Services (default 60 + 10*N/qps)")
    ap.add_argument("--keep", action="store_true", help="keep each run's state directory")
    add_apiserver_args(ap)
    args = ap.parse_args(argv)
    if args.nodes is None:
        args.nodes = 1000 if args.apiserver == "real" else 5000
    if args.burst is None:
        args.burst = max(1, int(args.qps))
    if args.services < 1 or args.nodes < 1 or args.qps <= 0 or args.workers < 1 or \
            args.runs < 1:
        ap.error("--services, --nodes, --qps, --workers and --runs must be positive")
    args.bootccm = os.path.abspath(args.bootccm)
    if not os.access(args.bootccm, os.X_OK):
        ap.error("no bootccm binary at %s (run make)" % args.bootccm)
    modes = ("plain", "kube-vip") if args.mode == "both" else (args.mode,)
    out = open(args.json, "a") if args.json else None
    runs = []
    for mode in modes:
        for i in range(args.runs):
            say("lb_burst: %s run %d/%d, %d Services, %d Nodes, qps %g burst %d workers %d"
                % (mode, i + 1, args.runs, args.services, args.nodes, args.qps, args.burst,
                   args.workers))
            try:
                r = one_run(args, mode, i + 1)
            except RuntimeError as e:
                r = {"mode": mode, "run": i + 1, "services": args.services, "error": str(e)}
            runs.append(emit(out, r))
            if args.apiserver == "real":
                say("  " + r.get("uptime", uptime()))
    for m in summary([r for r in runs if "error" not in r]):
        emit(out, dict(m, summary=True))
        say("median %-8s N=%d nodes=%d qps=%g workers=%d runs=%d: all assigned in %ss "
            "(bound %s*N/QPS+1 = %ss); latency p50 %ss p99 %ss; writes/Service %s (goal %s); "
            "failed writes %s; duplicate addresses %s; CPU %ss; RSS idle %s MiB, peak %s MiB"
            % (m["mode"], m["services"], m["nodes"], m["qps"], m["workers"], m["runs"],
               m["total_s"], m["writes_per_service_goal"], m["bound_s"], m["latency_s.p50"],
               m["latency_s.p99"], m["writes_per_service"], m["writes_per_service_goal"],
               m["failed_writes"], m["duplicate_addresses"], m["cpu_s"], m["rss_idle_mib"],
               m["peak_rss_mib"]))
        say_real(m, "service")
    if out:
        out.close()
    ok = all(r.get("complete") and r.get("exit") == 0 and r.get("duplicate_addresses") == 0
             for r in runs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
