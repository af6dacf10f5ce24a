"""The failover matrix: three replicas of bootccm on the static provider
(each its own user, so the fake's request log tells them apart), short
lease timings (3 s lease, 2 s renew deadline, 500 ms retry), churn all
along; the leader is stopped by SIGSTOP, SIGKILL, SIGTERM, or partitioned
from the API server (its requests black-holed through the fake's fault
API). From the request log:

1. never two actors: the windows in which each replica wrote Nodes and
   Services (first to last answered write) do not overlap;
2. another replica takes over within the lease duration plus two retry
   periods of the fault (the lease holder's last renewal may be up to a
   retry period old, and a candidate looks once per retry period), and
   within 2 s of a SIGTERM (the leader gives the Lease up);
3. a SIGSTOPped leader woken after losing the Lease, and a partitioned one
   whose network comes back, write no Node or Service: the first thing
   they do is find out that they lost;
4. the invariants of tests/e2e/invariants.py hold after it.

BOOTCCM_FAILOVER_JSON=FILE appends each run's measured takeover to FILE."""

import datetime
import json
import os
import signal
import threading
import time

import pytest

pytest.register_assert_rewrite("invariants")

from conftest import wait_until  # noqa: E402
from invariants import LEASE_FLAGS, Watcher, soak, wait_started  # noqa: E402

pytest_plugins = ("invariants",)  # the cluster fixture

LEASE_S, RETRY_S = 3.0, 0.5
SHARED = ("nodes", "services")


def wall(e):
    return datetime.datetime.strptime(e["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def shared_writes(api, since, user=None, excused=()):
    """Answered (2xx) writes of Nodes and Services by bootccm's replicas,
    but those whose seq is in excused."""
    return [e for e in api.writes(since) if e.get("resource") in SHARED
            and e["user"].startswith("ccm-") and 200 <= e["code"] < 300
            and (user is None or e["user"] == user) and e["seq"] not in excused]


def lease_takes(api, since):
    """(time, user) of every answered Lease write that changed its holder
    (a create, or an update whose holderIdentity differs from the one
    before), oldest first."""
    out, holder = [], None
    for e in api.request_log(since):
        if e.get("resource") != "leases" or e["verb"] not in ("create", "update") or \
                not 200 <= e["code"] < 300 or not isinstance(e.get("body"), dict):
            continue
        h = (e["body"].get("spec") or {}).get("holderIdentity")
        if h and h != holder:
            out.append((wall(e), e["user"]))
        holder = h
    return out


def check_one_actor(api, since, excused=()):
    """Each replica's window of shared writes, [first, last], overlaps no
    other's; returns the windows by user."""
    windows = {}
    for e in shared_writes(api, since, excused=excused):
        t = wall(e)
        lo, hi = windows.get(e["user"], (t, t))
        windows[e["user"]] = (min(lo, t), max(hi, t))
    ws = sorted(windows.items(), key=lambda kv: kv[1][0])
    for (u1, (_, end1)), (u2, (start2, _)) in zip(ws, ws[1:]):
        assert end1 < start2, "%s wrote until %.3f, %s from %.3f: two actors" % (
            u1, end1, u2, start2)
    return windows


class Churn(object):
    """The cluster's churn in a thread, two steps a second."""

    def __init__(self, cluster):
        self.cluster = cluster
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self.error = None

    def _run(self):
        try:
            while not self._stop.wait(0.5):
                self.cluster.churn_step()
        except Exception as e:  # noqa: BLE001 - reported by stop()
            self.error = e

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *a):
        self._stop.set()
        self._t.join(10)
        assert self.error is None, self.error


def record(mode, took):
    path = os.environ.get("BOOTCCM_FAILOVER_JSON")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"mode": mode, "takeover_s": round(took, 3)}) + "\n")


# A leader frozen by SIGSTOP in the middle of a node (or Service) sync
# resumes that sync when woken, before its elector has noticed the Lease is
# lost; its writes of shared objects ask lease_is_leader() first (the
# controllers' write gate, src/kube/client.h), so none is sent.

@pytest.mark.parametrize("mode", ["sigstop", "sigkill", "sigterm", "partition"])
def test_leader_lost(cluster, mode):
    api = cluster.api
    seq = api.log_seq()
    a = cluster.start("ccm-a", node="cp-a", extra=LEASE_FLAGS)
    a.wait_for("Started leading", timeout=20)
    wait_started(a)
    others = [cluster.start(u, node="cp-" + u[-1], extra=LEASE_FLAGS)
              for u in ("ccm-b", "ccm-c")]
    for d in others:
        d.wait_for("Attempting to acquire leader lease", timeout=20)
    procs = {"ccm-a": a, "ccm-b": others[0], "ccm-c": others[1]}
    with Watcher(cluster) as w, Churn(cluster):
        wait_until(lambda: shared_writes(api, seq, "ccm-a"), timeout=10,
                   what="the leader's first writes")
        time.sleep(soak(2, 20))
        # the replica to stop is the one that leads now: with a 3 s Lease a
        # busy machine may already have handed it over once, as it should
        lead = lease_takes(api, seq)[-1][1]
        a = procs[lead]
        if mode == "sigstop":
            # frozen at the worst point: inside a node write, between the
            # addresses and the untaint (the fake holds the write 0.3 s, so
            # its answer waits in the socket while the leader is frozen)
            # (w-399: in the inventory, beyond what the churn registers)
            f = api.inject_fault("/api/v1/nodes/w-399/status", method="PATCH", user=lead,
                                 delay=0.3)
            cluster.register("w-399")
            wait_until(lambda: [x for x in api.faults() if x["id"] == f and x["hits"]],
                       timeout=10, interval=0.005,
                       what="a node write of %s held (Lease holders: %s; writes of w-399: %s)" % (
                           lead, lease_takes(api, seq),
                           [(e["user"], e["verb"], e["code"]) for e in api.writes(seq)
                            if "/nodes/w-399" in e["path"]]))
        t_fault = time.time()
        if mode == "sigstop":
            a.proc.send_signal(signal.SIGSTOP)
        elif mode == "sigkill":
            a.proc.send_signal(signal.SIGKILL)
        elif mode == "sigterm":
            a.proc.send_signal(signal.SIGTERM)
        else:
            fid = api.inject_fault("/", count=None, user=lead, blackhole=True)
        takes = wait_until(lambda: [t for t in lease_takes(api, seq) if t[0] > t_fault],
                           timeout=LEASE_S + 10, what="another replica taking the Lease")
        took = takes[0][0] - t_fault
        new = takes[0][1]
        assert new != lead, takes
        record(mode, took)
        if mode == "sigterm":
            assert took <= 2.0, took
        else:
            assert took <= LEASE_S + 2 * RETRY_S, took
        wait_until(lambda: shared_writes(api, seq, new), timeout=10,
                   what="the new leader's first writes")
        time.sleep(soak(2, 20))
        t_back = time.time()
        if mode == "sigstop":
            a.proc.send_signal(signal.SIGCONT)
        elif mode == "partition":
            api.clear_faults(fid)
        if mode in ("sigstop", "partition"):
            a.wait_for("Stopped leading", timeout=10)
            time.sleep(2)  # it would act now, if it still thought it led
    cluster.converge(soak(60, 120))
    w.check()
    cluster.check(seq)
    woke = []
    if mode in ("sigstop", "partition"):
        woke = [e for e in api.request_log(seq) if e["user"] == lead and wall(e) > t_back]
        assert woke, "the old leader sent nothing after it came back"
    # once woken (or reconnected), before and after it knew it lost, it
    # sends no write of a shared object at all: every such write asks
    # lease_is_leader first (the controllers' write gate)
    firsts = [e for e in woke if e["verb"] not in ("get", "list", "watch")]
    assert not [(e["verb"], e["path"], e["code"]) for e in firsts
                if e.get("resource") in SHARED], "the old leader wrote after it lost"
    windows = check_one_actor(api, seq)
    assert lead in windows and new in windows, windows
    # the old leader wrote nothing after the fault: a partitioned one,
    # nothing that arrived; a SIGSTOPped one, nothing once woken (a stopped
    # process sends nothing: what the fake read while it was stopped was
    # sent before, while it led, and may be read late on a loaded machine)
    t_late = t_back if mode == "sigstop" else t_fault
    late = [(e["verb"], e["path"], e["time"]) for e in shared_writes(api, seq, lead)
            if wall(e) > t_late]
    assert late == [], late
