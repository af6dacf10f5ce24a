"""bench/node_burst.py at N=20: both modes run to the end against the binary
under test and report figures that add up (every node initialized with one
status write and one node write, an Event each, any further write counted as
a rejected one, addresses before the untaint, the process's CPU and peak
RSS), and a binary that initializes nothing makes the bench fail instead of
reporting figures. (The bound of two writes per node is measured by the
bench and recorded in bench/RESULTS.md.)"""

import json
import os
import subprocess

from conftest import ROOT, bootccm_path

BENCH = os.path.join(ROOT, "bench", "node_burst.py")
N = 20


def bench(tmp, *args, timeout=300):
    out = os.path.join(tmp, "node_burst.jsonl")
    # a failed run keeps its state directory for the post-mortem: in tmp
    env = dict(os.environ, TMPDIR=tmp)
    r = subprocess.run(["/usr/bin/python3", BENCH, "--json", out] + list(args),
                       capture_output=True, text=True, timeout=timeout, env=env)
    with open(out) as f:
        lines = [json.loads(line) for line in f]
    assert r.stdout.splitlines() == [json.dumps(x, sort_keys=True) for x in lines]
    return r, lines


def test_bench_smoke(tmp):
    r, lines = bench(tmp, "--nodes", str(N), "--qps", "50", "--workers", "2",
                     "--bootccm", bootccm_path())
    assert r.returncode == 0, r.stdout + r.stderr
    runs = [x for x in lines if not x.get("summary")]
    medians = [x for x in lines if x.get("summary")]
    assert [x["mode"] for x in runs] == ["burst", "before"]
    assert [x["mode"] for x in medians] == ["burst", "before"]
    for x in runs:
        assert x["complete"] and x["initialized"] == N and x["exit"] == 0, x
        # one status write and one node write each; a node written more
        # often got a rejected write (a precondition that failed), counted
        assert x["writes"]["node_status"] == N and x["writes"]["event"] == N, x
        assert x["nodes_without_event"] == 0, x
        extra = x["writes"]["node"] - N
        assert extra >= 0 and x["failed_node_writes"] == extra, x
        assert sum(x["nodes_by_write_count"].values()) == N, x
        assert sum(int(k) * v for k, v in x["nodes_by_write_count"].items()) == 2 * N + extra, x
        assert x["writes_per_node"] == (2 * N + extra) / N, x
        assert x["untainted_before_addresses"] == 0, x
        lat = x["latency_s"]
        assert 0 < lat["min"] <= lat["p50"] <= lat["p99"] <= lat["max"] <= x["total_s"] + 1, x
        assert x["metadata_calls"] >= 1, x    # the local node, from the fake EC2 service
        assert x["cpu_s"] > 0 and x["peak_rss_mib"] > 0, x
        assert x["bound_s"] == 2.0 * N / 50 + 1, x
    for m in medians:
        assert m["runs"] == 1 and m["complete"], m
        assert m["writes_per_node"] >= 2.0, m


def test_bench_fails_without_initialization(tmp):
    r, lines = bench(tmp, "--nodes", str(N), "--mode", "burst", "--bootccm", "/bin/false")
    assert r.returncode == 1, r.stdout + r.stderr
    assert len(lines) == 1 and "did not initialize" in lines[0]["error"], lines
