#!/usr/bin/python3
"""node_burst.py - how fast does bootccm initialize a burst of new Nodes, and
what does it cost: creation-to-untaint latency, total time against the client
QPS budget, API writes per node, metadata calls, CPU and peak RSS.

    bench/node_burst.py                          1,000 nodes, both modes, 1 run
    bench/node_burst.py --nodes 5000 --runs 3 --json build/bench/node_burst.jsonl
    bench/node_burst.py --nodes 2000 --qps 100000 --workers 8 --mode burst
                                                 (no client limit: the fake's capacity)

Everything runs on loopback in one Python process: the fake API server
(tests/fakes, with static-pod/rbac.yaml loaded) and a fake EC2 metadata
service for the local node. Nodes are registered the way kubelet
--cloud-provider=external does since Kubernetes 1.29 (no addresses, the
bootstrap taints) with what `bootccm metadata` tells a kubelet to report
(--provider-id, --node-ip, --node-labels), so the `metadata` provider
initializes them without a cloud API. bootccm runs as the static pod runs it,
as User system:cloud-controller-manager.

Modes:
  burst   bootccm is running and has initialized its own node; then N nodes
          are created as fast as the fake takes them (kubelets joining at once)
  before  N nodes exist when bootccm starts (initial LIST, then all at once)

Times come from the fake's storage: the bench wraps its commit function and
stamps every Node change (wall clock), so "created" is when the Node was
stored and "untainted" is when the write that removed
node.cloudprovider.kubernetes.io/uninitialized was stored. Writes are read
from the fake's request log. CPU is utime+stime from /proc/PID/stat, peak RSS
VmHWM from /proc/PID/status, both read just before SIGTERM.

--apiserver real runs the same burst against the real control plane of
tests/k8s/ (bench/realcp.py: etcd, kube-apiserver, kube-controller-manager,
static-pod/rbac.yaml applied, bootccm with the cloud-controller-manager
kubeconfig) with kwok keeping the Nodes alive (label type=kwok; the
project's stages, which write no address). The Nodes carry a kubelet's
fields but are created by the admin, 8 at a time; times are stamped as a
watch of the real API delivers the events, writes come from its audit log,
and the CPU of the control plane's processes during the burst is recorded
beside bootccm's.

    bench/node_burst.py --apiserver real --mode burst --runs 3

One JSON line per run on stdout (and in --json OUT), then medians per mode.
Method and figures: bench/RESULTS.md."""

import argparse
import datetime
import json
import math
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
sys.path.insert(0, os.path.join(ROOT, "tests", "fakes", "metadata"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import yaml  # noqa: E402  (python3-yaml)

import apiserver  # noqa: E402
import realcp  # noqa: E402
from server import FakeMetadata  # noqa: E402

USER = "system:cloud-controller-manager"
TAINT = "node.cloudprovider.kubernetes.io/uninitialized"
LOCAL = "cp-1"
ZONES = ("us-east-2a", "us-east-2b", "us-east-2c")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def say(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


# -- the Nodes as kubelets register them ----------------------------------------

def kubelet_node(name, i, local=False):
    """A Node as kubelet --cloud-provider=external (1.29+) registers it: no
    addresses, the uninitialized and not-ready taints. A remote node's
    kubelet also reports --provider-id, --node-ip and the topology labels."""
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
              "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
              "beta.kubernetes.io/arch": "amd64"}
    annotations = {"volumes.kubernetes.io/controller-managed-attach-detach": "true",
                   "node.alpha.kubernetes.io/ttl": "0"}
    spec = {"taints": [
        {"key": TAINT, "value": "true", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}
    if local:
        labels["node-role.kubernetes.io/control-plane"] = ""
        spec["taints"].append({"key": "node-role.kubernetes.io/control-plane",
                               "effect": "NoSchedule"})
    else:
        zone = ZONES[i % len(ZONES)]
        labels.update({"topology.kubernetes.io/zone": zone,
                       "topology.kubernetes.io/region": "us-east-2",
                       "node.kubernetes.io/instance-type": "m6i.large"})
        annotations["alpha.kubernetes.io/provided-node-ip"] = \
            "10.%d.%d.%d" % (1 + i // 62500, (i // 250) % 250, 1 + i % 250)
        spec["providerID"] = "aws:///%s/i-%017x" % (zone, 0x0b00000000000000 + i)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": spec,
        "status": {
            "capacity": {"cpu": "2", "memory": "8026152Ki", "pods": "110",
                         "ephemeral-storage": "20134592Ki"},
            "allocatable": {"cpu": "2", "memory": "7923752Ki", "pods": "110",
                            "ephemeral-storage": "18556039957"},
            "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux",
                         "kubeletVersion": "v1.32.0", "kubeProxyVersion": "v1.32.0",
                         "containerRuntimeVersion": "containerd://1.7.24",
                         "kernelVersion": "6.1.0-28-cloud-amd64",
                         "osImage": "Debian GNU/Linux 12 (bookworm)",
                         "machineID": "%032x" % i, "systemUUID": "ec2%029x" % i,
                         "bootID": "%032x" % (i + 1)},
        },
    }


def remote_name(i):
    return "node-%05d" % i


# -- stamping Node changes in the fake's storage ------------------------------------

class NodeClock(object):
    """Wraps the fake store's commit so that each Node change is stamped as
    it is stored: when it was created, when its addresses first appeared,
    when the uninitialized taint went."""

    def __init__(self, store=None):
        self.lock = threading.Lock()
        self.created = {}
        self.addressed = {}
        self.untainted = {}
        self.changes = 0
        if store is None:   # stamped by the caller (a watch of the real API)
            return
        orig = store._commit

        def commit(etype, rkey, ns, name, obj, prev):
            rv = orig(etype, rkey, ns, name, obj, prev)
            if rkey[1] == "nodes" and obj is not None:
                self._stamp(time.time(), etype, name, obj)
            return rv

        store._commit = commit

    def _stamp(self, t, etype, name, obj):
        tainted = any(x.get("key") == TAINT for x in
                      (obj.get("spec") or {}).get("taints") or ())
        has_addr = bool((obj.get("status") or {}).get("addresses"))
        with self.lock:
            self.changes += 1
            if etype == "ADDED":
                self.created.setdefault(name, t)
            if has_addr:
                self.addressed.setdefault(name, t)
            if not tainted and name in self.created:
                self.untainted.setdefault(name, t)

    def count_untainted(self, names):
        with self.lock:
            return sum(1 for n in names if n in self.untainted)


# -- the process under test ------------------------------------------------------

def proc_cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    fields = s[s.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK   # utime, stime


def proc_status_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def uptime():
    """uptime(1)'s line: the machine's load when a run ended."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def percentile(xs, p):
    """Nearest rank: the smallest value with at least p% of the values at or
    below it."""
    if not xs:
        return None
    s = sorted(xs)
    return s[max(0, math.ceil(p / 100.0 * len(s)) - 1)]


def parse_time(s):
    # "2026-11-21T12:00:00.123456Z"
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def wait_quiet(srv, quiet_s, timeout_s):
    """Wait until the fake has logged no request for quiet_s: bootccm's
    Events trail its untaint writes under the same QPS budget. (Only the
    log's sequence number is read: copying the log while bootccm works
    would slow the fake down.)"""
    end = time.time() + timeout_s
    last, last_change = srv.log_seq(), time.time()
    while time.time() < end:
        time.sleep(0.05)
        cur = srv.log_seq()
        if cur != last:
            last, last_change = cur, time.time()
        elif time.time() - last_change >= quiet_s:
            return True
    return False


class FakeServer(object):
    """The stand-in: the fake API server with static-pod/rbac.yaml loaded,
    a clock (NodeClock, or lb_burst's ServiceClock) wrapped around its
    store's commit, and bootccm's requests from its request log."""

    real = False

    def __init__(self, srv, state, make_clock=NodeClock):
        self.srv = srv
        self.state = state
        with open(os.path.join(ROOT, "static-pod", "rbac.yaml")) as f:
            for obj in yaml.safe_load_all(f):
                if obj:
                    srv.create_object(obj)
        self.clock = make_clock(srv.store)

    def create(self, objs, interval=0.0, path=None):
        t0 = time.time()
        for i, obj in enumerate(objs):
            if interval:
                time.sleep(max(0.0, t0 + i * interval - time.time()))
            self.srv.create_object(obj)

    def kubeconfig(self):
        return self.srv.write_kubeconfig(os.path.join(self.state, "ccm.kubeconfig"), user=USER,
                                         groups=(), tls_server_name="kubernetes")

    def seq(self):
        return self.srv.log_seq()

    def wait_quiet(self, quiet_s, timeout_s):
        return wait_quiet(self.srv, quiet_s, timeout_s)

    def log(self, seq):
        return [e for e in self.srv.request_log(seq) if e["user"] == USER]

    def pids(self):
        return {}

    def check(self):
        pass


class RealServer(object):
    """The real control plane (bench/realcp.py): the objects of WATCH (a
    collection path) stamped on the clock as its watch delivers them, Nodes
    labelled for kwok to keep alive, created as the admin; bootccm's writes
    from the audit log."""

    real = True

    def __init__(self, api, clock=None, watch="/api/v1/nodes"):
        self.api = api
        self.clock = clock or NodeClock()
        api.watch(watch, lambda t, etype, obj:
                  self.clock._stamp(t, etype, obj["metadata"]["name"], obj))

    def create(self, objs, interval=0.0, path="/api/v1/nodes"):
        objs = list(objs)
        for obj in objs:
            if obj["kind"] == "Node":
                obj["metadata"].setdefault("labels", {}).update(realcp.KWOK_LABELS)
        if interval:
            t0 = time.time()
            for i, obj in enumerate(objs):
                time.sleep(max(0.0, t0 + i * interval - time.time()))
                self.api.create(path, obj)
        else:
            self.api.create_all(path, objs)

    def kubeconfig(self):
        return self.api.kubeconfig()

    def seq(self):
        return self.api.writes_seen(USER)

    def wait_quiet(self, quiet_s, timeout_s):
        return self.api.wait_quiet(USER, quiet_s, timeout_s)

    def log(self, seq):
        return self.api.request_log(USER, seq)

    def pids(self):
        return self.api.proc_pids()

    def check(self):
        self.api.check()

    def record(self, res, p, cpu0):
        """What a run against the real control plane adds: the CPU of each
        of its processes since cpu0 (from control_plane_cpu), the machine's
        load, watch restarts."""
        res["control_plane_cpu_s"] = control_plane_cpu(self, p, cpu0)
        res["uptime"] = uptime()
        res["watch_restarts"] = self.api.watch_restarts()
        if hasattr(self.clock, "changes"):   # Node events the watch delivered, all writers'
            res["node_events"] = self.clock.changes


def control_plane_cpu(be, p, cpu0=None):
    """CPU s of bootccm (p) and of each control-plane process so far, less
    cpu0 (a result of this)."""
    now = {"bootccm": proc_cpu_s(p.pid)}
    now.update({k: proc_cpu_s(v) for k, v in be.pids().items()})
    return {k: round(v - (cpu0 or {}).get(k, 0.0), 3) for k, v in now.items()}


def one_run(args, mode, run_no):
    n = args.nodes
    names = [remote_name(i) for i in range(n)]
    state = tempfile.mkdtemp(prefix="node-burst-")
    res = {"mode": mode, "run": run_no, "nodes": n, "qps": args.qps,
           "burst": args.burst, "workers": args.workers}
    if args.apiserver == "real":
        res["apiserver"] = "real"
        server = realcp.RealAPI(args.k8s_bin, args.control_plane)
    else:
        server = apiserver.FakeAPIServer(state_dir=state)
    if mode == "burst" and args.interval:
        res["interval_s"] = args.interval
    with server as srv, FakeMetadata("ec2").start() as md:
        be = RealServer(srv) if args.apiserver == "real" else FakeServer(srv, state)
        clock = be.clock
        be.create([kubelet_node(LOCAL, 0, local=True)])
        if mode == "before":
            nodes = [kubelet_node(name, i) for i, name in enumerate(names)]
            t = time.time()
            be.create(nodes)
            res["create_s"] = round(time.time() - t, 3)
        cmd = [args.bootccm, "--kubeconfig", be.kubeconfig(), "--cloud-provider=metadata",
               "--node-name", LOCAL, "--metadata-cloud=ec2",
               "--metadata-endpoint=" + md.url,
               "--metadata-dmi-dir=" + os.path.join(ROOT, "tests", "fakes", "metadata",
                                                    "dmi", "ec2"),
               "--kube-api-qps=%g" % args.qps, "--kube-api-burst=%d" % args.burst,
               "--concurrent-node-syncs=%d" % args.workers,
               "--leader-elect=false", "--secure-port=0"]
        log_path = os.path.join(state, "bootccm.log")
        log = open(log_path, "w")
        seq0 = be.seq()
        t_start = time.time()
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            budget = args.timeout or (60 + 10.0 * n / args.qps)
            # the local node first: bootccm has listed, watches and works
            end = time.time() + 30
            while LOCAL not in clock.untainted:
                be.check()
                if p.poll() is not None or time.time() > end:
                    raise RuntimeError("bootccm did not initialize %s (exit %s); log %s"
                                       % (LOCAL, p.poll(), log_path))
                time.sleep(0.01)
            res["local_init_s"] = round(clock.untainted[LOCAL] - t_start, 3)
            if mode == "burst":
                # its own node's Synced Event too, so the burst starts idle
                be.wait_quiet(0.5, 10)
                nodes = [kubelet_node(name, i) for i, name in enumerate(names)] \
                    if be.real else (kubelet_node(name, i) for i, name in enumerate(names))
                seq_burst = be.seq()
                cpu0 = proc_cpu_s(p.pid)
                cp_cpu0 = control_plane_cpu(be, p)
                t0 = time.time()
                be.create(nodes, args.interval)
                res["create_s"] = round(time.time() - t0, 3)
            else:
                seq_burst, cpu0, t0 = seq0, 0.0, t_start
                cp_cpu0 = {}
            end = time.time() + budget
            while clock.count_untainted(names) < n:
                be.check()
                if p.poll() is not None:
                    raise RuntimeError("bootccm exited %s; log %s" % (p.returncode, log_path))
                if time.time() > end:
                    break
                time.sleep(0.05)
            res["complete"] = clock.count_untainted(names) == n
            res["quiet"] = be.wait_quiet(1.0, budget)
            res["cpu_s"] = round(proc_cpu_s(p.pid), 3)
            res["cpu_burst_s"] = round(res["cpu_s"] - cpu0, 3)
            res["peak_rss_mib"] = round(proc_status_kib(p.pid, "VmHWM") / 1024.0, 2)
            res["rss_mib"] = round(proc_status_kib(p.pid, "VmRSS") / 1024.0, 2)
            if be.real:
                res["cpu_per_node_ms"] = round(1000.0 * res["cpu_burst_s"] / n, 3)
                # what the control plane spent meanwhile, on the same 2 cores
                be.record(res, p, cp_cpu0)
            with open("/proc/loadavg") as f:   # the machine's other work, for the record
                res["loadavg_1m"] = float(f.read().split()[0])
        finally:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            log.close()
        res["exit"] = p.returncode
        requests = be.log(seq_burst)
        analyse(res, requests, len(md.request_log()), clock, names, t0)
        if be.real:
            res["apiserver_write_ms"] = realcp.write_latency_ms(requests, parse_time,
                                                                percentile)
    if res.get("complete") and res["exit"] == 0 and not args.keep:
        shutil.rmtree(state, ignore_errors=True)
    else:
        res["state_dir"] = state
    return res


def event_node(e):
    """The Node an Event write is about: involvedObject (core/v1) or
    regarding (events.k8s.io) in the body, else the name's prefix (Events
    are named NODE.SUFFIX)."""
    b = e.get("body") if isinstance(e.get("body"), dict) else {}
    ref = b.get("involvedObject") or b.get("regarding") or {}
    if ref.get("name"):
        return ref["name"]
    return (e.get("name") or "").split(".", 1)[0]


def analyse(res, log, metadata_calls, clock, names, t0):
    n = len(names)
    done = [x for x in names if x in clock.untainted]
    lat = [clock.untainted[x] - clock.created[x] for x in done]
    res["initialized"] = len(done)
    res["latency_s"] = {k: (round(v, 3) if v is not None else None) for k, v in
                        (("p50", percentile(lat, 50)), ("p99", percentile(lat, 99)),
                         ("max", max(lat) if lat else None),
                         ("min", min(lat) if lat else None))}
    last = max((clock.untainted[x] for x in done), default=None)
    res["total_s"] = round(last - t0, 3) if last else None
    # addresses are stored strictly before the untaint (design invariant 5)
    res["untainted_before_addresses"] = sum(
        1 for x in done if x not in clock.addressed or clock.addressed[x] > clock.untainted[x]
        or clock.addressed[x] == clock.untainted[x])

    wanted = set(names)
    w = {"node_status": 0, "node": 0, "event": 0, "other": 0}
    per_node = {}
    reads = {}
    codes = {}
    first_write = None
    last_write = None
    failed_node = 0
    evented = set()
    for e in log:
        verb = e["verb"]
        if verb in ("get", "list", "watch"):
            key = "%s %s" % (verb, e.get("resource", e["path"]))
            reads[key] = reads.get(key, 0) + 1
            continue
        if verb not in ("create", "update", "patch", "delete", "deletecollection"):
            continue
        codes[str(e["code"])] = codes.get(str(e["code"]), 0) + 1
        res_ = e.get("resource")
        if res_ == "nodes" and e.get("name") in wanted:
            kind = "node_status" if e.get("subresource") == "status" else "node"
            w[kind] += 1
            per_node[e["name"]] = per_node.get(e["name"], 0) + 1
            if not 200 <= e["code"] < 300:
                failed_node += 1
            t = parse_time(e["time"])
            first_write = t if first_write is None else min(first_write, t)
        elif res_ == "events" and event_node(e) in wanted:
            w["event"] += 1
            if 200 <= e["code"] < 300:
                evented.add(event_node(e))
        else:
            w["other"] += 1   # the local node's writes and Event, anything else
        last_write = parse_time(e["time"])
    res["writes"] = w
    # one Synced Event a node is the contract; bootccm's Event queue (1,000,
    # client-go's) drops what does not fit while node writes hold the budget
    res["nodes_without_event"] = n - len(evented & wanted)
    res["writes_per_node"] = round((w["node_status"] + w["node"]) / n, 3) if n else None
    res["writes_per_node_with_events"] = round(
        (w["node_status"] + w["node"] + w["event"]) / n, 3) if n else None
    hist = {}
    for x in names:
        k = str(per_node.get(x, 0))
        hist[k] = hist.get(k, 0) + 1
    res["nodes_by_write_count"] = hist
    res["write_codes"] = codes
    res["conflicts"] = codes.get("409", 0)
    res["failed_writes"] = sum(v for k, v in codes.items() if not k.startswith("2"))
    res["failed_node_writes"] = failed_node
    res["reads"] = reads
    res["metadata_calls"] = metadata_calls
    if first_write is not None and last:
        res["write_window_s"] = round(last - first_write, 3)
    if last_write is not None:
        res["all_writes_s"] = round(last_write - t0, 3)
    q = res["qps"]
    res["bound_s"] = round(2.0 * n / q + 1, 3)
    res["bound_with_events_s"] = round(3.0 * n / q + 1, 3)
    if res["total_s"]:
        res["node_writes_per_s"] = round((w["node_status"] + w["node"]) / res["total_s"], 1)
        res["all_writes_per_s"] = round(sum(w.values()) / max(res.get("all_writes_s") or
                                                               res["total_s"], 1e-9), 1)


# -- medians ------------------------------------------------------------------------

SUMMARY = ("latency_s.p50", "latency_s.p99", "latency_s.max", "total_s", "bound_s",
           "bound_with_events_s", "all_writes_s", "create_s", "writes_per_node",
           "writes_per_node_with_events", "writes.event", "nodes_without_event", "conflicts",
           "failed_writes", "failed_node_writes", "metadata_calls", "cpu_s", "cpu_burst_s",
           "peak_rss_mib", "local_init_s", "node_writes_per_s", "loadavg_1m")
# the real control plane's runs also have these
SUMMARY_REAL = ("cpu_per_node_ms", "apiserver_write_ms.p50", "apiserver_write_ms.p99",
                "control_plane_cpu_s.kube-apiserver",
                "control_plane_cpu_s.etcd", "control_plane_cpu_s.kube-controller-manager",
                "control_plane_cpu_s.kwok")


def field(r, path):
    for k in path.split("."):
        if not isinstance(r, dict) or r.get(k) is None:
            return None
        r = r[k]
    return r


def summary(runs):
    out = []
    for mode in ("burst", "before"):
        rs = [r for r in runs if r["mode"] == mode]
        if not rs:
            continue
        m = {"mode": mode, "runs": len(rs), "nodes": rs[0]["nodes"], "qps": rs[0]["qps"],
             "burst": rs[0]["burst"], "workers": rs[0]["workers"],
             "complete": all(r.get("complete") for r in rs),
             "untainted_before_addresses": sum(r.get("untainted_before_addresses", 0)
                                               for r in rs)}
        if rs[0].get("apiserver") == "real":
            m["apiserver"] = "real"
        for k in SUMMARY + (SUMMARY_REAL if m.get("apiserver") else ()):
            vals = [field(r, k) for r in rs if field(r, k) is not None]
            m[k] = round(statistics.median(vals), 3) if vals else None
        m["total_within_bound"] = m["total_s"] is not None and m["total_s"] <= m["bound_s"]
        m["all_writes_within_bound_with_events"] = m["all_writes_s"] is not None and \
            m["all_writes_s"] <= m["bound_with_events_s"]
        out.append(m)
    return out


def say_real(m, what):
    """The real control plane's medians: bootccm's CPU per WHAT and its
    processes' CPU during the burst."""
    if m.get("apiserver") != "real":
        return
    say("  real control plane: CPU per %s %s ms (burst); kube-apiserver answered bootccm's "
        "writes in p50 %s ms, p99 %s ms; CPU s meanwhile: "
        "kube-apiserver %s, etcd %s, kube-controller-manager %s, kwok %s"
        % (what, m["cpu_per_%s_ms" % what], m["apiserver_write_ms.p50"],
           m["apiserver_write_ms.p99"], m["control_plane_cpu_s.kube-apiserver"],
           m["control_plane_cpu_s.etcd"], m["control_plane_cpu_s.kube-controller-manager"],
           m["control_plane_cpu_s.kwok"]))


def add_apiserver_args(ap):
    ap.add_argument("--apiserver", choices=("fake", "real"), default="fake",
                    help="fake: the Python stand-in (default); real: etcd, kube-apiserver, "
                    "kube-controller-manager and kwok (bench/realcp.py)")
    ap.add_argument("--k8s-bin", default=None,
                    help="real: the upstream binaries (default BOOTCCM_K8S_BIN, else "
                    "scripts/k8s-build.sh bindir)")


def main(argv=None, control_plane=None):
    """control_plane: with --apiserver real, a started ControlPlane to run
    on instead of one per run (tests/k8s/test_bench_real.py's)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--qps", type=float, default=100.0, help="--kube-api-qps (default 100)")
    ap.add_argument("--burst", type=int, default=None, help="--kube-api-burst (default = qps)")
    ap.add_argument("--workers", type=int, default=4, help="--concurrent-node-syncs (default 4)")
    ap.add_argument("--interval", type=float, default=0.0,
                    help="burst mode: seconds between two creations (default 0: as fast "
                    "as the fake takes them); > 0 is a trickle of joining nodes")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--mode", choices=("burst", "before", "both"), default="both")
    ap.add_argument("--bootccm", default=os.path.join(ROOT, "build", "bootccm"))
    ap.add_argument("--json", metavar="OUT", help="append every run's line and the medians")
    ap.add_argument("--timeout", type=float, default=0,
                    help="seconds to wait for all nodes (default 60 + 10*N/qps)")
    ap.add_argument("--keep", action="store_true", help="keep each run's state directory")
    add_apiserver_args(ap)
    args = ap.parse_args(argv)
    args.control_plane = control_plane
    if args.burst is None:
        args.burst = max(1, int(args.qps))
    if args.nodes < 1 or args.qps <= 0 or args.workers < 1 or args.runs < 1:
        ap.error("--nodes, --qps, --workers and --runs must be positive")
    args.bootccm = os.path.abspath(args.bootccm)
    if not os.access(args.bootccm, os.X_OK):
        ap.error("no bootccm binary at %s (run make)" % args.bootccm)
    modes = ("burst", "before") if args.mode == "both" else (args.mode,)
    out = open(args.json, "a") if args.json else None
    runs = []
    for mode in modes:
        for i in range(args.runs):
            say("node_burst: %s run %d/%d, %d nodes, qps %g burst %d workers %d"
                % (mode, i + 1, args.runs, args.nodes, args.qps, args.burst, args.workers))
            try:
                r = one_run(args, mode, i + 1)
            except RuntimeError as e:
                r = {"mode": mode, "run": i + 1, "nodes": args.nodes, "error": str(e)}
            runs.append(r)
            if args.apiserver == "real":
                say("  " + r.get("uptime", uptime()))
            line = json.dumps(r, sort_keys=True)
            print(line, flush=True)
            if out:
                out.write(line + "\n")
                out.flush()
    for m in summary([r for r in runs if "error" not in r]):
        line = json.dumps(dict(m, summary=True), sort_keys=True)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
        say("median %-6s N=%d qps=%g workers=%d runs=%d: latency p50 %ss p99 %ss max %ss; "
            "total %ss (bound 2N/QPS+1 = %ss, 3N/QPS+1 = %ss); node writes/node %s "
            "(+events %s; %s nodes without Event); rejected node writes %s; metadata calls %s; "
            "CPU %ss; peak RSS %s MiB"
            % (m["mode"], m["nodes"], m["qps"], m["workers"], m["runs"],
               m["latency_s.p50"], m["latency_s.p99"], m["latency_s.max"], m["total_s"],
               m["bound_s"], m["bound_with_events_s"], m["writes_per_node"],
               m["writes_per_node_with_events"], m["nodes_without_event"],
               m["failed_node_writes"], m["metadata_calls"],
               m["cpu_s"], m["peak_rss_mib"]))
        say_real(m, "node")
    if out:
        out.close()
    ok = all(r.get("complete") and r.get("exit") == 0 for r in runs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
