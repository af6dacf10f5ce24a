"""Leader election of three bootccm replicas on the real Lease
kube-system/cloud-controller-manager: when the leader is killed, frozen or
stopped, another replica takes the Lease within its bounds, and a replica
that lost the Lease writes nothing afterwards. Each replica has a client
certificate of its own (CN system:cloud-controller-manager, so the shipped
RBAC applies, and an organization naming the replica), so the audit log
tells their writes apart."""

import calendar
import signal
import time

import pytest

from harness import Daemon

LEASE_S = 3
RETRY_S = 0.5
LEASE_FLAGS = ["--leader-elect-lease-duration=%ds" % LEASE_S, "--leader-elect-renew-deadline=2s",
               "--leader-elect-retry-period=500ms"]
LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cloud-controller-manager"
REPLICAS = ("a", "b", "c")
SLACK_S = 3  # a loaded 2-core machine


def holder(cp):
    status, lease = cp.client("admin").request("GET", LEASE_PATH)
    return lease["spec"].get("holderIdentity") if status == 200 else None


def identity_of(d):
    """The identity a replica logged when it tried for the Lease."""
    for line in d.output().splitlines():
        if "Attempting to acquire leader lease" in line and 'identity="' in line:
            return line.split('identity="', 1)[1].split('"', 1)[0]
    return None


@pytest.mark.usefixtures("ccm_cp")  # static-pod/rbac.yaml applied
@pytest.mark.parametrize("mode", ["sigterm", "sigkill", "sigstop"])
def test_another_replica_takes_over_and_the_old_leader_writes_nothing(cp, mode):
    replicas = {}
    try:
        for r in REPLICAS:
            kc = cp.write_kubeconfig("ccm-%s-%s" % (mode, r), "ccm-%s-%s" % (mode, r),
                                     "system:cloud-controller-manager",
                                     orgs=("bootccm-replica-" + r,))
            replicas[r] = Daemon(["--kubeconfig", kc, "--secure-port=0"] + LEASE_FLAGS)
        for d in replicas.values():
            d.wait_for("Attempting to acquire leader lease", timeout=20)
        ids = {identity_of(d): r for r, d in replicas.items()}
        deadline = time.monotonic() + 20
        while holder(cp) not in ids:
            assert time.monotonic() < deadline, "no replica holds the Lease"
            time.sleep(0.1)
        lead = ids[holder(cp)]
        old = replicas[lead]
        t_fault = time.monotonic()
        old.proc.send_signal({"sigterm": signal.SIGTERM, "sigkill": signal.SIGKILL,
                              "sigstop": signal.SIGSTOP}[mode])
        while ids.get(holder(cp), lead) == lead:
            assert time.monotonic() - t_fault < LEASE_S + 2 * RETRY_S + SLACK_S, \
                "the Lease stayed with the stopped leader"
            time.sleep(0.05)
        took = time.monotonic() - t_fault
        if mode == "sigterm":
            assert took <= 2.0 + SLACK_S, took  # released, not expired
        if mode == "sigstop":
            old.proc.send_signal(signal.SIGCONT)
            time.sleep(LEASE_S)
        # nothing the old leader sent was accepted once another replica held
        # the Lease
        status, lease = cp.client("admin").request("GET", LEASE_PATH)
        assert status == 200, lease
        taken = _time(lease["spec"]["acquireTime"])
        group = "bootccm-replica-" + lead
        own = [e for e in cp.writes("system:cloud-controller-manager")
               if group in e["user"].get("groups", [])]
        assert [e for e in own if e["objectRef"]["resource"] == "leases"
                and 200 <= e["responseStatus"]["code"] < 300], "the leader's Lease writes"
        late = [e for e in own if 200 <= e["responseStatus"]["code"] < 300
                and _time(e["stageTimestamp"]) > taken]
        assert not late, [(e["verb"], e["objectRef"], e["responseStatus"]["code"]) for e in late]
        for r, d in replicas.items():
            if r != lead:
                assert d.alive(), d.output()
    finally:
        for d in replicas.values():
            if d.proc.poll() is None:
                d.proc.send_signal(signal.SIGCONT)
            d.stop()


def _time(rfc3339):
    """Seconds since the epoch of an RFC 3339 UTC timestamp with
    microseconds (audit stageTimestamp, Lease acquireTime)."""
    base, _, frac = rfc3339.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S")) + float("0." + (frac or "0"))
