"""bench/node_burst.py at N=20, both modes, against the binary under test:
its figures are checked against what the fake API server recorded, read
back here from each run's request log (requests.log in the state directory
--keep leaves) and from bootccm's own log, not recomputed the bench's way.
The bench stamps a node "initialized" when its storage sees the taint go
and counts writes from the fake's in-memory log; here a node counts as
initialized when the log holds a write of it that removes the uninitialized
taint, its addresses must come from a status write logged before that one
and carry the node IP its kubelet reported, and every Node write, refused
write and Event is counted from the file. A binary that initializes nothing
makes the bench fail instead of reporting figures. (The bound of two writes
per node is measured by the bench and recorded in bench/RESULTS.md.)

bench/lb_burst.py at 20 Services and 50 Nodes, both modes, likewise: each
Service's writes are read back from the run's requests.log (the finalizer
first, the annotation kube-vip announces in mode kube-vip, then the status
with an address no other Service shows) and compared with the bench's
counts."""

import json
import os
import re
import subprocess

from conftest import ROOT, bootccm_path

BENCH = os.path.join(ROOT, "bench", "node_burst.py")
LB_BENCH = os.path.join(ROOT, "bench", "lb_burst.py")
N = 20
USER = "system:cloud-controller-manager"
TAINT = "node.cloudprovider.kubernetes.io/uninitialized"


def bench(tmp, *args, timeout=300, script=BENCH):
    out = os.path.join(tmp, os.path.basename(script) + ".jsonl")
    # each run's state directory (kept, or left by a failed run) goes to tmp
    env = dict(os.environ, TMPDIR=tmp)
    r = subprocess.run(["/usr/bin/python3", script, "--json", out] + list(args),
                       capture_output=True, text=True, timeout=timeout, env=env)
    with open(out) as f:
        lines = [json.loads(line) for line in f]
    assert r.stdout.splitlines() == [json.dumps(x, sort_keys=True) for x in lines]
    return r, lines


def remote_nodes():
    """The nodes the bench registers and the node IP each one's kubelet
    reports (bench/node_burst.py's kubelet_node)."""
    return {"node-%05d" % i: "10.%d.%d.%d" % (1 + i // 62500, (i // 250) % 250, 1 + i % 250)
            for i in range(N)}


def removes_taint(body):
    """Whether a Node write's body removes the uninitialized taint: a JSON
    patch that tests /spec/taints/K/key for it and removes /spec/taints/K,
    or a merge patch whose spec.taints leaves it out."""
    if isinstance(body, list):
        tested = {op["path"][:-len("/key")] for op in body
                  if op.get("op") == "test" and op.get("value") == TAINT
                  and op.get("path", "").startswith("/spec/taints/")
                  and op["path"].endswith("/key")}
        return any(op.get("op") == "remove" and op.get("path") in tested for op in body)
    if isinstance(body, dict) and "taints" in (body.get("spec") or {}):
        return all(t.get("key") != TAINT for t in body["spec"]["taints"] or ())
    return False


def addresses(body):
    if isinstance(body, dict):
        return (body.get("status") or {}).get("addresses") or []
    return []


def recorded(state_dir):
    """What the fake API server's request log and bootccm's log of one run
    say about the remote nodes."""
    nodes = remote_nodes()
    with open(os.path.join(state_dir, "requests.log")) as f:
        log = [json.loads(line) for line in f]
    log = [e for e in log if e["user"] == USER]
    ok = lambda e: 200 <= e["code"] < 300  # noqa: E731
    rec = {"node_status": 0, "node": 0, "event": 0, "failed_node": 0,
           "per_node": {n: 0 for n in nodes}, "evented": set(),
           "untaint_seq": {}, "address_seq": {}, "addresses": {}}
    for e in log:
        if e["verb"] not in ("create", "update", "patch"):
            continue
        if e.get("resource") == "nodes" and e.get("name") in nodes:
            name = e["name"]
            rec["per_node"][name] += 1
            if e.get("subresource") == "status":
                rec["node_status"] += 1
                if ok(e) and addresses(e["body"]):
                    rec["address_seq"].setdefault(name, e["seq"])
                    rec["addresses"].setdefault(name, addresses(e["body"]))
            else:
                rec["node"] += 1
                if not ok(e):
                    rec["failed_node"] += 1
                elif removes_taint(e["body"]):
                    rec["untaint_seq"].setdefault(name, e["seq"])
        elif e.get("resource") == "events":
            about = ((e.get("body") or {}).get("involvedObject") or {}).get("name")
            if about in nodes:
                rec["event"] += 1
                if ok(e):
                    rec["evented"].add(about)
    with open(os.path.join(state_dir, "bootccm.log")) as f:
        rec["logged_initialized"] = [n for n in re.findall(r'"Initialized node" node="([^"]+)"',
                                                           f.read()) if n in nodes]
    return rec


def test_bench_figures_match_the_request_log(tmp):
    r, lines = bench(tmp, "--nodes", str(N), "--qps", "50", "--workers", "2", "--keep",
                     "--bootccm", bootccm_path())
    assert r.returncode == 0, r.stdout + r.stderr
    runs = [x for x in lines if not x.get("summary")]
    medians = [x for x in lines if x.get("summary")]
    assert [x["mode"] for x in runs] == ["burst", "before"]
    assert [x["mode"] for x in medians] == ["burst", "before"]
    nodes = remote_nodes()
    for x in runs:
        assert x["complete"] and x["exit"] == 0, x
        rec = recorded(x["state_dir"])
        # initialized: every node has a logged write that removed the taint,
        # and bootccm logged each one's initialization once
        assert sorted(rec["untaint_seq"]) == sorted(nodes), rec["untaint_seq"]
        assert x["initialized"] == len(rec["untaint_seq"]) == N, x
        assert sorted(rec["logged_initialized"]) == sorted(nodes)
        # addresses before the untaint: a status write with the kubelet's
        # node IP, logged before the write that removed the taint
        for name, ip in nodes.items():
            assert {"type": "InternalIP", "address": ip} in rec["addresses"].get(name, []), \
                (name, rec["addresses"].get(name))
            assert rec["address_seq"][name] < rec["untaint_seq"][name], name
        assert x["untainted_before_addresses"] == 0, x
        # the write counts, refused writes and Events, as logged
        assert x["writes"]["node_status"] == rec["node_status"], (x["writes"], rec)
        assert x["writes"]["node"] == rec["node"], (x["writes"], rec)
        assert x["writes"]["event"] == rec["event"], (x["writes"], rec)
        assert x["failed_node_writes"] == rec["failed_node"], (x, rec)
        assert x["nodes_without_event"] == N - len(rec["evented"]), (x, rec["evented"])
        hist = {}
        for count in rec["per_node"].values():
            hist[str(count)] = hist.get(str(count), 0) + 1
        assert x["nodes_by_write_count"] == hist, (x["nodes_by_write_count"], hist)
        assert x["writes_per_node"] == round((rec["node_status"] + rec["node"]) / N, 3), x
    for m in medians:
        assert m["runs"] == 1 and m["complete"], m


def test_bench_fails_without_initialization(tmp):
    r, lines = bench(tmp, "--nodes", str(N), "--mode", "burst", "--bootccm", "/bin/false")
    assert r.returncode == 1, r.stdout + r.stderr
    assert len(lines) == 1 and "did not initialize" in lines[0]["error"], lines


FIN = "service.kubernetes.io/load-balancer-cleanup"
KUBE_VIP = "kube-vip.io/loadbalancerIPs"


def lb_recorded(state_dir, names):
    """Each Service's writes by bootccm, in the order of the run's
    requests.log: ("finalizer" | "annotation" | "status" | "other",
    code, the address written), and the Event writes."""
    with open(os.path.join(state_dir, "requests.log")) as f:
        log = [json.loads(line) for line in f]
    per = {n: [] for n in names}
    events = 0
    for e in sorted(log, key=lambda e: e["seq"]):
        if e["user"] != USER or e["verb"] not in ("create", "update", "patch"):
            continue
        if e.get("resource") == "events":
            events += 1
        elif e.get("resource") == "services" and e.get("name") in per:
            md = (e.get("body") or {}).get("metadata") or {}
            ingress = (((e.get("body") or {}).get("status") or {}).get("loadBalancer")
                       or {}).get("ingress") or []
            if e.get("subresource") == "status" and len(ingress) == 1:
                what, addr = "status", ingress[0].get("ip")
            elif md.get("finalizers") == [FIN] and set(md) <= {"finalizers", "resourceVersion"}:
                what, addr = "finalizer", None
            elif set((md.get("annotations") or {})) == {KUBE_VIP}:
                what, addr = "annotation", md["annotations"][KUBE_VIP]
            else:
                what, addr = "other", None
            per[e["name"]].append((what, e["code"], addr))
    return per, events


def test_lb_bench_figures_match_the_request_log(tmp):
    n = 20
    r, lines = bench(tmp, "--services", str(n), "--nodes", "50", "--qps", "50", "--keep",
                     "--bootccm", bootccm_path(), script=LB_BENCH)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = [x for x in lines if not x.get("summary")]
    medians = [x for x in lines if x.get("summary")]
    assert [x["mode"] for x in runs] == ["plain", "kube-vip"]
    assert [x["mode"] for x in medians] == ["plain", "kube-vip"]
    names = ["svc-%04d" % i for i in range(n)]
    for x in runs:
        assert x["complete"] and x["exit"] == 0 and x["assigned"] == n, x
        per, events = lb_recorded(x["state_dir"], names)
        addresses = []
        for name in names:
            w = per[name]
            kinds = [k for k, _, _ in w]
            if x["mode"] == "kube-vip":
                assert kinds == ["finalizer", "annotation", "status"], (name, w)
                assert w[1][2] == w[2][2], (name, w)
            else:
                assert kinds == ["finalizer", "status"], (name, w)
            assert all(code == 200 for _, code, _ in w), (name, w)
            addresses.append(w[-1][2])
        assert len(set(addresses)) == n and x["duplicate_addresses"] == 0, addresses
        goal = 3 if x["mode"] == "kube-vip" else 2
        assert x["writes_per_service_goal"] == goal and x["writes_per_service"] == goal, x
        assert x["services_by_write_count"] == {str(goal): n}, x
        assert x["writes"]["metadata"] + x["writes"]["status"] == sum(len(w) for w in
                                                                      per.values()), x
        assert x["writes"]["event"] == events, (x, events)
        assert x["failed_writes"] == 0 and x["finalizer_written_first"] == n, x
        assert 0 < x["rss_idle_mib"] <= x["peak_rss_mib"], x
    for m in medians:
        assert m["runs"] == 1 and m["complete"], m


def test_lb_bench_fails_without_a_service_controller(tmp):
    r, lines = bench(tmp, "--services", "5", "--nodes", "10", "--mode", "plain",
                     "--bootccm", "/bin/false", script=LB_BENCH)
    assert r.returncode == 1, r.stdout + r.stderr
    assert len(lines) == 1 and "did not start" in lines[0]["error"], lines
