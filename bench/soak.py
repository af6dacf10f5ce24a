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
   many of the churn's oldest deleted. Every --sample-s: RSS (VmRSS),
   CPU (utime+stime from /proc/PID/stat), the requests the fake served
   (bootccm's and all), workqueue depth from /metrics.
3. steady, --steady-s with no change at all: bootccm's requests and writes,
   scaled to requests per node per hour.

Figures: RSS over time (and its growth after the first minute of churn),
CPU per event (CPU of the churn phase over the Node and Service adds and
deletes it made), requests per node per hour in steady state, workqueue
queue-duration percentiles (from the histogram's buckets: an upper bound),
and whether the fake kept up: bootccm's request rate against its
--kube-api-qps (the client's budget is the limit when the rate sits at the
QPS while work is queued). Address changes are not part of the churn.

One JSON object on stdout (and appended to --json OUT). Method and
figures: bench/RESULTS.md, section Soak."""

import argparse
import json
import os
import re
import shlex
import shutil
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

    state = tempfile.mkdtemp(prefix="soak-")
    res = {"nodes": args.nodes, "services": args.services, "minutes": args.minutes,
           "node_rate": args.node_rate, "svc_rate": args.svc_rate, "qps": args.qps,
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
            next_node, next_svc = args.nodes, args.services
            churn_nodes, churn_svcs = [], []
            node_acc = svc_acc = 0.0
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
                    samples.append({"t_s": round(tick - t0, 1),
                                    "rss_mib": round(proc_status_kib(p.pid, "VmRSS") / 1024.0, 2),
                                    "cpu_s": round(proc_cpu_s(p.pid) - cpu0, 2),
                                    "requests": srv.log_seq() - seq0,
                                    "workqueue_depth": metric_sum(m, "workqueue_depth")})
                if p.poll() is not None:
                    raise RuntimeError("bootccm exited %s; log %s" % (p.returncode, log_path))
                time.sleep(max(0.0, 1.0 - (time.time() - tick)))
            churn_s = time.time() - t0
            cpu_churn = proc_cpu_s(p.pid) - cpu0
            total, mine, writes = ours(srv, seq0)
            m = metrics(port)
            res.update({
                "churn_s": round(churn_s, 1), "churn_events": events,
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
            res.update({
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
    return 0 if res["exit"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
