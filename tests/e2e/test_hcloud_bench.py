"""bench/hcloud_requests.py at small sizes against the binary under test:
every scenario runs and reports what bench/RESULTS.md records, with the
figures the provider's design gives at those sizes (one page of the server
listing per 50 servers, a balancer created in one request with its
look-ups, one network GET per idle route pass, the steady hour's passes at
a page and one balancer listing each), so the benchmark cannot rot
unnoticed."""

import json
import math
import os
import subprocess

from conftest import ROOT, bootccm_path

BENCH = os.path.join(ROOT, "bench", "hcloud_requests.py")


def bench(tmp, *args, timeout=600):
    out = os.path.join(tmp, "hcloud_requests.jsonl")
    if os.path.exists(out):
        os.unlink(out)   # the bench appends
    env = dict(os.environ, TMPDIR=tmp)
    r = subprocess.run(["/usr/bin/python3", BENCH, "--bootccm", bootccm_path(), "--json", out]
                       + list(args), capture_output=True, text=True, timeout=timeout, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    with open(out) as f:
        lines = [json.loads(line) for line in f]
    assert r.stdout.splitlines() == [json.dumps(x, sort_keys=True) for x in lines]
    return lines


def test_node_sync_and_idle_routes(tmp):
    (sync,) = bench(tmp, "--scenario", "nodesync", "--nodes", "120")
    assert sync["per_pass"] == math.ceil(120 / 50.0) <= sync["goal"], sync
    assert set(sync["kinds"]) == {"GET /v1/servers"}, sync
    (routes,) = bench(tmp, "--scenario", "routes", "--nodes", "4")
    assert routes["only_the_network_get"] and 1 <= routes["requests"] <= \
        routes["passes_at_most"], routes


def test_balancer_creation_and_a_joining_node(tmp):
    lines = bench(tmp, "--scenario", "lb", "--nodes", "6")
    creates = {x["service"]: x for x in lines if x["scenario"] == "lb-create"}
    assert set(creates) == {"plain", "plain-2", "selector", "selector-2"}
    for x in creates.values():
        assert x["kinds"]["POST /v1/load_balancers"] == 1, x
    # server targets in the create's body: no per-node request
    assert creates["plain-2"]["requests"] <= 4, creates["plain-2"]
    # a selector's first balancer labels each server once; the next none
    assert creates["selector"]["kinds"].get("PUT /v1/servers/{id}") == 6, creates["selector"]
    assert "PUT /v1/servers/{id}" not in creates["selector-2"]["kinds"], creates["selector-2"]
    (join,) = [x for x in lines if x["scenario"] == "lb-node-joins"]
    assert join["kinds"].get("PUT /v1/servers/{id}") == 1, join
    assert join["kinds"].get("POST /v1/load_balancers/{id}/actions/add_target") == 2, join


def test_steady_hour(tmp):
    (hour,) = bench(tmp, "--scenario", "hour", "--nodes", "60", "--services", "3",
                    "--seconds", "21")
    assert hour["node_sync_passes"] >= 1 and hour["lb_verify_passes"] >= 1, hour
    assert hour["per_node_sync"] == 2 and hour["per_lb_verify"] == 1, hour
    assert hour["per_hour"]["other"] == 0, hour
