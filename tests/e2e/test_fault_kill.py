"""The fault matrix's kill -9 part: bootccm on the static provider killed
(SIGKILL) at a random point while it initializes nodes, or while it creates
LoadBalancers, and restarted each time, as a static pod's kubelet does;
after the last restart the invariants of tests/e2e/invariants.py hold (no
node untainted without addresses, none left tainted, no deletion by
bootccm, no address held twice however many times the allocator's state
was rebuilt from the Services, a finalizer on every Service with an
address). A few iterations here; 50 each under make soak
(BOOTCCM_FAULT_SOAK=1). BOOTCCM_FAULT_SEED makes the kill points
repeatable."""

import signal
import time

import pytest

pytest.register_assert_rewrite("invariants")

from conftest import wait_until  # noqa: E402
from invariants import LEASE_FLAGS, Watcher, soak, wait_started  # noqa: E402

pytest_plugins = ("invariants",)  # the cluster fixture

WRITE_DELAY = 0.05


def kill_loop(cluster, work, writes, iterations):
    """iterations times: start bootccm, work(), and SIGKILL it at a random
    point of the writes the work needs (`writes`: the fewest it can need):
    once the fake answered k of them (k drawn from 1..writes-1, or all
    work is done), after 0-5 ms more; then start it once more and check
    the invariants. bootccm's PATCHes are each held WRITE_DELAY s before
    the fake serves them, so that the kill lands between the k-th write
    and the last however slowly this test polls on a loaded machine: a
    write in flight at the kill is then served after bootccm died, as a
    request already sent can be. Each replica runs with leader election
    (a 3 s Lease), as the shipped static pod does: the successor writes
    only once the killed replica's Lease ran out, and that is what keeps
    the dead one's last writes from landing after the successor listed
    the Services (without it, a held status write served after the LIST
    gave its address to a second Service). Returns how many kills found work
    pending (a node tainted, a Service without its address or a deleted
    one not gone)."""
    api = cluster.api
    seq = cluster.api.log_seq()
    interrupted = 0
    with Watcher(cluster) as w:
        fid = api.inject_fault("/", method="PATCH", user="ccm-a", delay=WRITE_DELAY, count=None)
        for i in range(iterations):
            start = api.log_seq()
            d = cluster.start(extra=LEASE_FLAGS)
            assert d.user == "ccm-a"
            work(i)
            k = cluster.rng.randint(1, writes - 1)
            wait_until(lambda: len([e for e in api.writes(start) if e["user"] == d.user
                                    and e.get("resource") in ("nodes", "services")])
                       >= k or cluster.converged() or d.proc.poll() is not None,
                       timeout=20, interval=0.001,
                       what="%d writes of bootccm" % k)
            time.sleep(cluster.rng.uniform(0, 0.005))
            if d.proc.poll() is None:
                d.proc.send_signal(signal.SIGKILL)
                interrupted += not cluster.converged()
            d.proc.wait(10)
            rc, out = d.stop()
            assert "Sanitizer" not in out and "runtime error:" not in out, out[-6000:]
            assert rc == -signal.SIGKILL, "bootccm exited %s before the kill:\n%s" % (
                rc, out[-6000:])
        api.clear_faults(fid)
        d = cluster.start(extra=LEASE_FLAGS)
        wait_started(d)
        cluster.converge(soak(60, 180))
    w.check()
    cluster.check(seq)
    return interrupted


def test_kill_9_during_node_initialization(cluster):
    def work(i):
        for _ in range(5):
            cluster.add_node()
        if i % 3 == 2:
            cluster.delete_node()
    # two writes a node (addresses, then the taint): 8 when a node is deleted
    # before bootccm wrote it; nearly every kill lands before the last of them
    assert kill_loop(cluster, work, 8, soak(4, 50)) >= soak(4, 50) // 2


def test_kill_9_during_load_balancer_creation(cluster):
    for _ in range(3):
        cluster.add_node()

    def work(i):
        for _ in range(4):
            cluster.add_service()
        cluster.delete_service()
    # two writes a new Service (finalizer, then address), two a deleted one
    # (none when it is one of the new, deleted before bootccm wrote it);
    # nearly every kill lands before the last of them
    assert kill_loop(cluster, work, 8, soak(4, 50)) >= soak(4, 50) // 2
    held = [ip for s in cluster.services() for ip in
            ((s.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []]
    assert len(held) == len(cluster.services())
