#!/usr/bin/python3
"""soak.py - bootccm on the static provider holding many Nodes and
LoadBalancer Services under steady churn for minutes: is its RSS flat,
what does an event cost in CPU, how many API requests does it make per
node per hour once nothing changes (the goal: no write for an unchanged
object), how deep and how slow are its workqueues.

    bench/soak.py                               5,000 Nodes, 2,000 Services, 10 min churn
    bench/soak.py --minutes 2 --json build/bench/soak.jsonl
    bench/soak.py --nodes 200 --services 50 --minutes 5 --node-rate 2 --svc-rate 1 \\
        --wrapper "valgrind --leak-check=full --log-file=build/valgrind/bootccm.%p.log"

Everything runs on loopback in one Python process: the fake API server
(tests/fakes) with static-pod/rbac.yaml, N Nodes as initialized workers
look (bench/lb_burst.py's ready_node) and S LoadBalancer Services, bootccm
as User system:cloud-controller-manager with --cloud-provider=static and
one pool of 16,382 addresses. Phases:

1. start: bootccm lists everything and assigns the S Services their
   addresses; the bench waits until all have one and the API server has
   been quiet for 2 s.
2. churn, --minutes: each second --node-rate ready Nodes are added and as
   many of the churn's oldest deleted, --svc-rate Services created and as
   many of the churn's oldest deleted, and --addr-rate address changes of
   each kind: a Service of the first S asks for another address
   (spec.loadBalancerIP, from a part of the pool the first-free allocation
   does not reach) and a Node of the first N gets another InternalIP, as
   its kubelet would report it. Every --sample-s: RSS (VmRSS), CPU
   (utime+stime from /proc/PID/stat), the requests the fake served
   (bootccm's and all), workqueue depth and the load balancer syncs (the
   provider's ensure and host-update calls: the cloud calls) from /metrics.
3. steady, --steady-s with no change at all: bootccm's requests and writes,
   scaled to requests per node per hour.

Figures: RSS over time (and its growth after the first minute of churn),
CPU per event (CPU of the churn phase over the Node and Service adds and
deletes it made), requests per node per hour in steady state, workqueue
queue-duration percentiles (from the histogram's buckets: an upper bound),
cloud calls per sample period, and whether the fake kept up: bootccm's
request rate against its --kube-api-qps (the client's budget is the limit
when the rate sits at the QPS while work is queued). At the end every
Service must hold the address it asked for and no address may be held
twice.

SIGUSR1 prints every thread's Python stack to stderr (a bench that seems
stuck says where).

One JSON object on stdout (and appended to --json OUT). Method and
figures: bench/RESULTS.md, section Soak."""

import argparse
import faulthandler
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "fakes"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "common"))

import yaml  # noqa: E402

import apiserver  # noqa: E402
from harness import metrics_reader  # noqa: E402
from lb_burst import USER, NS, ingress_ips, lb_service, ready_node, stop  # noqa: E402
from node_burst import proc_cpu_s, proc_status_kib, say, wait_quiet  # noqa: E402

POOL = "198.18.0.0/18"     # 16,382 addresses
# the addresses Services ask for: the pool's upper half, which first-free
# allocation of a few thousand Services never reaches
REQUESTED = ["198.18.%d.%d" % (40 + k // 256, k % 256) for k in range(16 * 256)]
TOKEN = "soak-metrics-reader-token-0123456789"


def metrics(port):
    """bootccm's /metrics text ("" when it does not answer)."""
    import ssl
    import urllib.request
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request("https://127.0.0.1:%d/metrics" % port,
                                 headers={"Authorization": "Bearer " + TOKEN})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.read().decode()
    except OSError:
        return ""


def metric_sum(text, name):
    return sum(float(m.group(1)) for m in
               re.finditer(r"^%s(?:\{[^}]*\})? (\S+)$" % re.escape(name), text, re.M))


def queue_percentiles(text, ps=(50, 90, 99)):
    """Upper bounds of the percentiles of workqueue_queue_duration_seconds,
    all queues together, from the cumulative bucket counts."""
    buckets = {}
    for m in re.finditer(r'^workqueue_queue_duration_seconds_bucket\{[^}]*le="([^"]+)"\} (\S+)$',
                         text, re.M):
        le = float("inf") if m.group(1) == "+Inf" else float(m.group(1))
        buckets[le] = buckets.get(le, 0.0) + float(m.group(2))
    if not buckets:
        return {}
    total = buckets[max(buckets)]
    out = {}
    for p in ps:
        want = p / 100.0 * total
        out["p%d_s" % p] = next((le for le in sorted(buckets) if buckets[le] >= want), None)
    out["count"] = int(total)
    return out


def change_address(srv, kind, name, value):
    """Set a Service's spec.loadBalancerIP or a Node's InternalIP (its
    status, as its kubelet writes it) as an admin; a write that meets
    bootccm's (409) is done again on the new version."""
    for _ in range(5):
        if kind == "services":
            o = srv.get_object("services", name, namespace=NS)
            o["spec"]["loadBalancerIP"] = value
            sub = ""
        else:
            o = srv.get_object("nodes", name)
            o["status"]["addresses"] = [a if a.get("type") != "InternalIP" else
                                        {"type": "InternalIP", "address": value}
                                        for a in o["status"].get("addresses") or []]
            sub = "status"
        try:
            srv.update_object(o, sub)
            return
        except Exception as e:  # a conflict: the object moved meanwhile
            if getattr(e, "code", None) != 409:
                raise
    raise RuntimeError("%s %s: five conflicts in a row" % (kind, name))


def served_addresses(srv):
    """Services whose requested address is not the one they hold, and
    addresses held by more than one Service."""
    held, wrong = {}, []
    for o in srv.list_objects("services", namespace=NS):
        ips = ingress_ips(o)
        for ip in ips:
            held.setdefault(ip, []).append(o["metadata"]["name"])
        want = (o.get("spec") or {}).get("loadBalancerIP")
        if want and ips != [want]:
            wrong.append("%s wants %s holds %s" % (o["metadata"]["name"], want, ips))
    return wrong, sorted(ip for ip, who in held.items() if len(who) > 1)


def ours(srv, since):
    log = srv.request_log(since)
    mine = [e for e in log if e["user"] == USER]
    writes = [e for e in mine if e["verb"] in ("create", "update", "patch", "delete")]
    return len(log), len(mine), writes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootccm", default=os.path.join(ROOT, "build", "bootccm"))
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--services", type=int, default=2000)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--node-rate", type=float, default=10.0,
                    help="nodes added (and deleted) a second")
    ap.add_argument("--svc-rate", type=float, default=2.0,
                    help="Services created (and deleted) a second")
    ap.add_argument("--addr-rate", type=float, default=1.0,
                    help="Service and Node address changes a second (each)")
    ap.add_argument("--steady-s", type=float, default=60.0)
    ap.add_argument("--sample-s", type=float, default=10.0)
    ap.add_argument("--qps", type=float, default=100.0)
    ap.add_argument("--burst", type=int, default=200)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--wrapper", default="", help="command bootccm runs under (valgrind ...)")
    ap.add_argument("--start-timeout", type=float, default=600.0)
    ap.add_argument("--json", help="append the result here")
    ap.add_argument("--keep", action="store_true", help="keep the state directory")
    args = ap.parse_args(argv)
    faulthandler.register(signal.SIGUSR1, all_threads=True)

    state = tempfile.mkdtemp(prefix="soak-")
    res = {"nodes": args.nodes, "services": args.services, "minutes": args.minutes,
           "node_rate": args.node_rate, "svc_rate": args.svc_rate,
           "addr_rate": args.addr_rate, "qps": args.qps,
           "burst": args.burst, "workers": args.workers, "wrapper": args.wrapper or None}
    with apiserver.FakeAPIServer(state_dir=state) as srv:
        with open(os.path.join(ROOT, "static-pod", "rbac.yaml")) as f:
            for obj in yaml.safe_load_all(f):
                if obj:
                    srv.create_object(obj)
        metrics_reader(srv, TOKEN, "soak-metrics")
        srv.create_object(ready_node(-1))
        for i in range(args.nodes - 1):
            srv.create_object(ready_node(i))
        for i in range(args.services):
            srv.create_object(lb_service("svc-%05d" % i))
        cfg = os.path.join(state, "cloud-config.yaml")
        with open(cfg, "w") as f:
            yaml.safe_dump({"static": {"pools": [{"name": "soak", "addresses": [POOL]}]}}, f)
        kc = srv.write_kubeconfig(os.path.join(state, "ccm.kubeconfig"), user=USER,
                                  groups=(), tls_server_name="kubernetes")
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        cmd = shlex.split(args.wrapper) + [
            args.bootccm, "--kubeconfig", kc, "--cloud-provider=static", "--cloud-config", cfg,
            "--node-name", "cp-1", "--kube-api-qps=%g" % args.qps,
            "--kube-api-burst=%d" % args.burst, "--concurrent-service-syncs=%d" % args.workers,
            "--concurrent-node-syncs=%d" % args.workers, "--leader-elect=false",
            "--secure-port=%d" % port, "--bind-address=127.0.0.1", "-v=1"]
        log_path = os.path.join(state, "bootccm.log")
        log = open(log_path, "w")
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            t0 = time.time()
            say("soak: waiting for the %d Services' addresses" % args.services)
            while True:
                svcs = srv.list_objects("services", namespace=NS)
                done = sum(1 for o in svcs if ingress_ips(o))
                if done >= args.services:
                    break
                if p.poll() is not None or time.time() - t0 > args.start_timeout:
                    raise RuntimeError("bootccm did not assign every Service (%d/%d, exit %s); "
                                       "log %s" % (done, args.services, p.poll(), log_path))
                time.sleep(1.0)
            wait_quiet(srv, 2.0, 120)
            res["start_s"] = round(time.time() - t0, 1)
            res["rss_start_mib"] = round(proc_status_kib(p.pid, "VmRSS") / 1024.0, 2)

            # churn
            say("soak: %.1f minutes of churn" % args.minutes)
            samples, events = [], 0
            cpu0, seq0, t0 = proc_cpu_s(p.pid), srv.log_seq(), time.time()
            lb0 = metric_sum(metrics(port), "service_controller_loadbalancer_sync_total")
            next_node, next_svc = args.nodes, args.services
            churn_nodes, churn_svcs = [], []
            node_acc = svc_acc = addr_acc = 0.0
            addr_changes = 0
            next_sample = t0
            end = t0 + args.minutes * 60
            while time.time() < end:
                tick = time.time()
                node_acc += args.node_rate
                svc_acc += args.svc_rate
                while node_acc >= 1:
                    node_acc -= 1
                    srv.create_object(ready_node(next_node))
                    churn_nodes.append("node-%05d" % next_node)
                    next_node += 1
                    events += 1
                    if len(churn_nodes) > args.node_rate * 5:
                        srv.delete_object("nodes", churn_nodes.pop(0))
                        events += 1
                addr_acc += args.addr_rate
                while addr_acc >= 1:
                    addr_acc -= 1
                    k = addr_changes
                    change_address(srv, "services", "svc-%05d" % (k % args.services),
                                   REQUESTED[k % len(REQUESTED)])
                    i = k % (args.nodes - 1)
                    change_address(srv, "nodes", "node-%05d" % i, "10.%d.%d.%d" % (
                        201 + (k // 62500) % 50, (k // 250) % 250, 1 + k % 250))
                    addr_changes += 1
                    events += 2
                while svc_acc >= 1:
                    svc_acc -= 1
                    name = "svc-%05d" % next_svc
                    srv.create_object(lb_service(name))
                    churn_svcs.append(name)
                    next_svc += 1
                    events += 1
                    if len(churn_svcs) > args.svc_rate * 5:
                        srv.delete_object("services", churn_svcs.pop(0), namespace=NS)
                        events += 1
                if tick >= next_sample:
                    next_sample += args.sample_s
                    m = metrics(port)
                    lb = metric_sum(m, "service_controller_loadbalancer_sync_total")
                    samples.append({"t_s": round(tick - t0, 1),
                                    "lb_syncs": lb - lb0,
                                    "rss_mib": round(proc_status_kib(p.pid, "VmRSS") / 1024.0, 2),
                                    "cpu_s": round(proc_cpu_s(p.pid) - cpu0, 2),
                                    "requests": srv.log_seq() - seq0,
                                    "workqueue_depth": metric_sum(m, "workqueue_depth")})
                    lb0 = lb
                if p.poll() is not None:
                    raise RuntimeError("bootccm exited %s; log %s" % (p.returncode, log_path))
                time.sleep(max(0.0, 1.0 - (time.time() - tick)))
            churn_s = time.time() - t0
            cpu_churn = proc_cpu_s(p.pid) - cpu0
            total, mine, writes = ours(srv, seq0)
            m = metrics(port)
            res.update({
                "churn_s": round(churn_s, 1), "churn_events": events,
                "churn_address_changes": 2 * addr_changes,
                "cpu_churn_s": round(cpu_churn, 2),
                "cpu_per_event_ms": round(1000.0 * cpu_churn / max(events, 1), 3),
                "churn_requests_bootccm": mine, "churn_requests_all": total,
                "churn_writes_bootccm": len(writes),
                "churn_bootccm_rps": round(mine / churn_s, 1),
                "workqueue_queue_duration": queue_percentiles(m),
                "samples": samples})
            after1 = [s["rss_mib"] for s in samples if s["t_s"] >= 60]
            if after1:
                res["rss_first_min_mib"] = after1[0]
                res["rss_max_after_first_min_mib"] = max(after1)
                res["rss_end_mib"] = after1[-1]
                res["rss_growth_after_first_min_mib"] = round(after1[-1] - after1[0], 2)

            # steady state: nothing changes
            wait_quiet(srv, 2.0, 300)
            say("soak: %.0f s of steady state" % args.steady_s)
            seq1, t1 = srv.log_seq(), time.time()
            time.sleep(args.steady_s)
            steady_s = time.time() - t1
            total, mine, writes = ours(srv, seq1)
            live_nodes = len(srv.list_objects("nodes"))
            wrong, twice = served_addresses(srv)
            lbs = sorted(s["lb_syncs"] for s in samples[1:])
            res.update({
                "cloud_calls_per_period": {"period_s": args.sample_s,
                                           "median": lbs[len(lbs) // 2] if lbs else None,
                                           "max": lbs[-1] if lbs else None},
                "requested_address_not_held": wrong[:20],
                "addresses_held_twice": twice[:20],
                "steady_s": round(steady_s, 1), "steady_requests_bootccm": mine,
                "steady_writes_bootccm": len(writes),
                "steady_writes": sorted({"%s %s" % (e["verb"], e["path"]) for e in writes})[:20],
                "steady_requests_per_node_hour": round(mine * 3600.0 / steady_s / live_nodes, 4),
                "rss_final_mib": round(proc_status_kib(p.pid, "VmRSS") / 1024.0, 2),
                "peak_rss_mib": round(proc_status_kib(p.pid, "VmHWM") / 1024.0, 2)})
            with open("/proc/loadavg") as f:
                res["loadavg_1m"] = float(f.read().split()[0])
        finally:
            stop(p)
            log.close()
        res["exit"] = p.returncode
    if res["exit"] == 0 and not args.keep:
        shutil.rmtree(state, ignore_errors=True)
    else:
        res["state_dir"] = state
    line = json.dumps(res, sort_keys=True)
    print(line)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "a") as f:
            f.write(line + "\n")
    if res.get("requested_address_not_held") or res.get("addresses_held_twice"):
        say("soak: a Service does not hold the address it asked for, or an address "
            "is held twice (see the result)")
        return 1
    return 0 if res["exit"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
