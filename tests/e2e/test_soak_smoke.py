"""bench/soak.py, very small (50 Nodes, 10 LoadBalancer Services, 9 s of
churn, 2 s steady), against the binary under test, so that make soak and
make valgrind do not rot: it runs to the end, its figures are there, and
its counts agree with the run's requests.log (--keep leaves it): every
request it reports as bootccm's churn requests is in the file, the
addresses the churn asked for were written to the Services' status, and in
the steady window bootccm wrote nothing."""

import json
import os
import subprocess

from conftest import ROOT, bootccm_path

SOAK = os.path.join(ROOT, "bench", "soak.py")
USER = "system:cloud-controller-manager"


def test_soak_smoke(tmp):
    out = os.path.join(tmp, "soak.jsonl")
    env = dict(os.environ, TMPDIR=tmp)
    r = subprocess.run(["/usr/bin/python3", SOAK, "--bootccm", bootccm_path(), "--nodes", "50",
                        "--services", "10", "--minutes", "0.15", "--steady-s", "2",
                        "--sample-s", "3", "--keep", "--json", out],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(out) as f:
        res = json.loads(f.read().splitlines()[-1])
    assert res["exit"] == 0
    for k in ("start_s", "cpu_per_event_ms", "rss_start_mib", "peak_rss_mib",
              "steady_requests_per_node_hour", "workqueue_queue_duration", "samples",
              "cloud_calls_per_period"):
        assert k in res, k
    assert res["churn_events"] > 0 and len(res["samples"]) >= 3
    assert res["churn_address_changes"] >= 10
    assert res["requested_address_not_held"] == [] and res["addresses_held_twice"] == []
    assert sum(s["lb_syncs"] for s in res["samples"]) > 0
    assert res["steady_writes_bootccm"] == 0, res["steady_writes"]
    with open(os.path.join(res["state_dir"], "requests.log")) as f:
        mine = [json.loads(line) for line in f]
    mine = [e for e in mine if e["user"] == USER]
    # every Service got an address from bootccm (a status write), and the
    # churn's requests are a part of what the file holds
    assert len([e for e in mine if e.get("resource") == "services"
                and e.get("subresource") == "status" and 200 <= e["code"] < 300]) >= 10
    assert res["churn_requests_bootccm"] <= len(mine)
    # the Services that asked for another address got it from bootccm
    moved = {e["name"] for e in mine if e.get("resource") == "services"
             and e.get("subresource") == "status" and 200 <= e["code"] < 300
             and "198.18.40." in json.dumps(e.get("body"))}
    assert len(moved) >= 5, moved
