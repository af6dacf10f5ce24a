"""bench/node_burst.py --apiserver real, small: 20 Nodes kept alive by kwok
on this module's control plane, one burst. bootccm initializes every one
under static-pod/rbac.yaml as shipped, the addresses before the untaint,
with no write refused by the authorizer; the figures the bench reports are
there. (The figures themselves are bench/RESULTS.md's business.)"""

import json
import os
import sys

from controlplane import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench"))

import node_burst  # noqa: E402

NODES = 20


def test_node_burst_real_mode(cp, tmp_path):
    out = str(tmp_path / "runs.jsonl")
    bootccm = os.path.abspath(os.environ.get("BOOTCCM", os.path.join(ROOT, "build", "bootccm")))
    rc = node_burst.main(["--apiserver", "real", "--nodes", str(NODES), "--mode", "burst",
                          "--bootccm", bootccm, "--json", out, "--timeout", "60"],
                         control_plane=cp)
    with open(out) as f:
        run, median = [json.loads(line) for line in f]
    assert rc == 0, run
    assert run["apiserver"] == "real" and run["complete"] and run["exit"] == 0, run
    assert run["initialized"] == NODES
    assert run["untainted_before_addresses"] == 0
    assert "403" not in run["write_codes"], run["write_codes"]
    # every Node: its status (addresses) and its Node write, a conflict
    # with kwok's or kube-controller-manager's writes at most once again
    assert run["writes"]["node_status"] >= NODES and run["writes"]["node"] >= NODES, run
    assert set(run["nodes_by_write_count"]) <= {"2", "3", "4"}, run["nodes_by_write_count"]
    assert run["cpu_burst_s"] > 0 and run["peak_rss_mib"] > 0
    assert set(run["control_plane_cpu_s"]) >= {"bootccm", "kube-apiserver", "etcd", "kwok"}
    assert median["summary"] and median["apiserver"] == "real"
