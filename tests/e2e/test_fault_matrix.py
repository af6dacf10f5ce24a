"""The fault matrix: the real binary on the static provider (nodes from an
inventory, LoadBalancer addresses from a pool) under churn (nodes registered
and deleted, LoadBalancer Services created and deleted) while the API
server misbehaves. After each fault, and sampled every 50 ms while it goes
on, the invariants of tests/e2e/invariants.py hold: no node untainted
without addresses and none left tainted, no deletion by bootccm, no address
held twice, a finalizer on every Service with an address, every deleted
Service gone.

1. Watches dropped every second (alternately ended cleanly and reset).
2. 410 storms: the history compacted and every watch ended each second.
3. API outages, refused and black-holed (3 s here, 30 s and 120 s under
   make soak).
4. 429 with Retry-After, and bursts of 500/503.
5. Responses slowed: every Lease request held past the renew deadline
   (leadership lost and taken again), and under make soak one write of a
   Node held past the client's 30 s timeout, then applied late.
6. The metadata service flapping while the local node is initialized from
   it (the metadata provider).

The kill -9 part of the matrix is test_fault_kill.py."""

import os
import time

import pytest

pytest.register_assert_rewrite("invariants")

from conftest import Daemon  # noqa: E402
from invariants import LEASE_FLAGS, Watcher, soak, wait_started  # noqa: E402

pytest_plugins = ("invariants",)  # the cluster fixture


def run_fault(cluster, fault, seconds, churn_rate=2.0, converge_s=60.0, flags=()):
    """bootccm (leader election on, short lease timings) under churn: churn
    before the fault, fault(t) called each churn step for `seconds`, then
    churn without it; then the invariants."""
    api = cluster.api
    seq = api.log_seq()
    d = cluster.start(extra=list(LEASE_FLAGS) + list(flags))
    wait_started(d)
    with Watcher(cluster) as w:
        cluster.churn(2.0, churn_rate)
        cluster.churn(seconds, churn_rate, during=fault)
        api.clear_faults()
        api.end_outage()
        cluster.churn(2.0, churn_rate)
        cluster.converge(converge_s)
    w.check()
    cluster.check(seq)
    assert d.alive(), d.output()[-4000:]
    return d


def every(seconds, action):
    """A fault for run_fault that calls action(n) every `seconds`, n = 1,
    2, ...; its .count says how many times it did."""
    state = {"next": 0.0}

    def fault(t):
        if t >= state["next"]:
            state["next"] = t + seconds
            fault.count += 1
            action(fault.count)
    fault.count = 0
    return fault


def test_watches_dropped_every_second(cluster):
    api = cluster.api
    fault = every(1.0, lambda n: api.end_watches() if n % 2 else api.reset_connections())
    run_fault(cluster, fault, soak(6, 120))
    assert fault.count >= 3


def test_410_storm(cluster):
    api = cluster.api
    seq = api.log_seq()

    def storm(n):
        api.compact()
        api.end_watches()
    run_fault(cluster, every(1.0, storm), soak(6, 120))
    # the reflectors re-listed after their watches expired
    relists = [e for e in api.request_log(seq) if e["verb"] == "list"
               and e.get("resource") in ("nodes", "services") and e["user"] == "ccm-a"]
    assert len(relists) >= 4, len(relists)


@pytest.mark.parametrize("mode", ["refuse", "blackhole"])
def test_api_outage(cluster, mode):
    api = cluster.api
    seconds = soak(3, int(os.environ.get("BOOTCCM_FAULT_OUTAGE_S", "30")))
    state = {"done": False}

    def fault(t):
        if not state["done"]:
            state["done"] = True
            api.outage(seconds, mode)
    seq = api.log_seq()
    # the churn goes on for the whole outage; bootccm catches up after it
    run_fault(cluster, fault, seconds + 0.5, converge_s=soak(60, 240))
    if mode == "blackhole":
        # bootccm's requests (its watches at least) were held unanswered
        held = [e for e in api.request_log(seq) if e["user"] == "ccm-a" and e.get("aborted")]
        assert held, "no request of bootccm went unanswered"


def test_429_with_retry_after_and_5xx_bursts(cluster):
    api = cluster.api

    def burst(n):
        if n % 2:
            api.inject_fault("/", status=429, retry_after=1, count=6)
        else:
            api.inject_fault("/api/v1", status=503 if n % 4 else 500, count=8)
    seq = api.log_seq()
    run_fault(cluster, every(1.0, burst), soak(6, 120))
    faulted = [e["code"] for e in api.request_log(seq) if e.get("fault")]
    assert 429 in faulted and (500 in faulted or 503 in faulted), faulted


def test_slow_responses_past_the_deadlines(cluster):
    api = cluster.api
    state = {"done": False}
    seq = api.log_seq()

    def fault(t):
        if not state["done"]:
            state["done"] = True
            # every Lease request held past the 2 s renew deadline for a while
            api.inject_fault("/apis/coordination.k8s.io", delay=2.5, count=soak(4, 20))
            if soak(False, True):
                # one Node write held past the client's 30 s timeout: it is
                # applied after bootccm gave up on it
                api.inject_fault("/api/v1/nodes", method="PATCH", delay=31, count=1)
    d = run_fault(cluster, fault, soak(8, 40), converge_s=soak(60, 120))
    lease = [e for e in api.request_log(seq) if e.get("resource") == "leases" and e.get("fault")]
    assert lease, "no Lease request was slowed"
    d.wait_for("Stopped leading", timeout=1)


def test_metadata_flapping(api, tmp):
    """The metadata provider initializes the local node from the metadata
    service, which goes down and up every 300 ms while bootccm starts: the
    node keeps its taint until the facts are complete, then is initialized
    with every address; nothing partial is written."""
    import test_bootstrap as tb
    tb.load_rbac(api)
    tb.register(api, "node-a", control_plane=True)
    kc = tb.ccm_kubeconfig(api, tmp)
    with tb.mdserver.FakeMetadata("ec2") as md:
        md.flap(0.3, 0.3)
        seq = api.log_seq()
        d = Daemon(tb.daemon_args(kc, "node-a", md, extra=["--leader-elect=false"]))
        try:
            deadline = time.monotonic() + soak(4, 30)
            while time.monotonic() < deadline:
                n = api.get_object("nodes", "node-a")
                assert tb.tainted(n) or n["status"].get("addresses") == tb.EC2_A["addresses"], n
                time.sleep(0.05)
            md.stop_flapping()
            tb.wait_initialized(api, "node-a", timeout=30)
            tb.check_initialized(api.get_object("nodes", "node-a"), tb.EC2_A,
                                 control_plane=True)
            for e in tb.node_writes(api, "node-a", seq):
                tb.check_guarded(e)
        finally:
            rc, out = d.stop()
        assert rc == 0 and "Sanitizer" not in out and "runtime error:" not in out, out[-4000:]
