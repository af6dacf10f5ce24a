"""Leader election on the kube-system/cloud-controller-manager Lease, driven
through tests/drivers/drv_lease.c against the fake API server: one leader at a
time, failover after SIGSTOP within the lease duration, no acting after a
resume, an immediate handover on SIGTERM, client-go's Lease fields, foreign
holders (an upstream CCM) respected, RBAC denials survived.

Short timings keep each test to a few seconds: lease duration 2 s, renew
deadline 1.5 s, retry period 0.5 s. A replica "acts" (PUTs the ConfigMap
kube-system/acts with its identity) every 0.2 s while lease_is_leader() says
so; the request log then shows who acted when."""

import datetime
import json
import os
import re
import signal
import statistics
import subprocess
import threading
import time

import pytest

from conftest import driver_path, wait_until

LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
LEASE_NAME = "cloud-controller-manager"
DURATION, RENEW, RETRY = 2.0, 1.5, 0.5
SLACK = 0.6           # scheduling, TLS handshakes, sanitizer builds
MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
IDENTITY = re.compile(r"^[^_]+_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def rfc3339(s):
    return datetime.datetime.strptime(s.replace("Z", "+0000"),
                                      "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def micro_now(offset=0.0):
    t = datetime.datetime.fromtimestamp(time.time() + offset, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Replica(object):
    """One drv_lease process; its JSON lines collected as they come."""

    def __init__(self, api, tmp, name, kubeconfig=None, act=True, extra=()):
        self.name = name
        kc = kubeconfig or api.write_kubeconfig(os.path.join(tmp, "kc-" + name),
                                                tls_server_name="kubernetes")
        args = [driver_path("drv_lease"), kc, "--lease-duration", "%gs" % DURATION,
                "--renew-deadline", "%gs" % RENEW, "--retry-period", "%gs" % RETRY,
                "--act-period", "0.2s", "-v", "4"]
        if act:
            args += ["--act-configmap", "acts"]
        self.err_path = os.path.join(tmp, name + ".stderr")
        self.err = open(self.err_path, "w")
        self.lines = []
        self.cond = threading.Condition()
        self.proc = subprocess.Popen(args + list(extra), stdout=subprocess.PIPE,
                                     stderr=self.err, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.identity = self.wait("ready")["identity"]

    def _read(self):
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(json.loads(line))
                self.cond.notify_all()

    def events(self, name):
        with self.cond:
            return [e for e in self.lines if e["event"] == name]

    def wait(self, name, count=1, timeout=10.0):
        end = time.time() + timeout
        with self.cond:
            while True:
                got = [e for e in self.lines if e["event"] == name]
                if len(got) >= count:
                    return got[count - 1]
                left = end - time.time()
                if left <= 0 or self.proc.poll() is not None and not self.reader.is_alive():
                    raise AssertionError("%s: no %r #%d within %ss; stdout %s\nstderr:\n%s"
                                         % (self.name, name, count, timeout, self.lines,
                                            self.stderr()))
                self.cond.wait(min(left, 0.05))

    def leading(self):
        return len(self.events("started_leading")) > len(self.events("stopped_leading"))

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=15):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.reader.join(5)
        self.err.close()
        return rc


@pytest.fixture
def replicas(api, tmp):
    started = []
    api.create_object({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "acts", "namespace": "kube-system"},
                       "data": {}})

    def start(name, **kw):
        r = Replica(api, tmp, name, **kw)
        started.append(r)
        return r

    yield start
    for r in started:
        rc = r.stop()
        err = r.stderr()
        assert "ThreadSanitizer" not in err and "AddressSanitizer" not in err, err
        assert "runtime error:" not in err, err
        assert rc == 0, "%s exited %s:\n%s" % (r.name, rc, err)


def lease_writes(api, since=0, until=None, timeout=5.0):
    """Successful Lease writes: (entry, spec) oldest first. The fake logs a
    request once it has answered it, so a replica can report what a write did
    before the write is in the log: with until, wait (up to timeout) for the
    list to satisfy it."""
    end = time.time() + timeout
    while True:
        out = [(e, e["body"]["spec"]) for e in api.request_log(since)
               if e.get("resource") == "leases" and e["verb"] in ("create", "update")
               and 200 <= e["code"] < 300]
        if until is None or until(out) or time.time() > end:
            return out
        time.sleep(0.02)


def held_by(identity):
    """A lease_writes until: some write names identity as the holder."""
    return lambda w: any(s["holderIdentity"] == identity for _, s in w)


def acts(api, since=0):
    return [e for e in api.request_log(since)
            if e.get("resource") == "configmaps" and e["verb"] == "update"
            and 200 <= e["code"] < 300]


def check_fenced(api):
    """Replaying the request log: every act happened while its actor held the
    Lease on the server (the last successful Lease write named it). Returns
    how many acts each identity made."""
    holder, counts = None, {}
    for e in api.request_log():
        if e.get("resource") == "leases" and e["verb"] in ("create", "update") \
                and 200 <= e["code"] < 300:
            holder = e["body"]["spec"]["holderIdentity"]
        elif e.get("resource") == "configmaps" and e["verb"] == "update" \
                and 200 <= e["code"] < 300:
            who = e["body"]["data"]["holder"]
            assert who == holder, "seq %d: %s acted while the Lease was held by %r" \
                % (e["seq"], who, holder)
            counts[who] = counts.get(who, 0) + 1
    return counts


def check_fields(spec, holder, transitions=None):
    assert spec["holderIdentity"] == holder
    assert spec["leaseDurationSeconds"] == int(DURATION)
    assert MICRO.match(spec["acquireTime"]), spec
    assert MICRO.match(spec["renewTime"]), spec
    if transitions is not None:
        assert spec["leaseTransitions"] == transitions, spec


def test_creates_the_lease_and_renews_it_like_client_go(api, replicas):
    a = replicas("a")
    assert IDENTITY.match(a.identity), a.identity
    a.wait("started_leading")
    a.wait("act", 5)
    w = lease_writes(api)
    first, spec0 = w[0]
    # created (no resourceVersion on create), then renewed with PUTs
    assert first["verb"] == "create" and first["method"] == "POST"
    assert "resourceVersion" not in first["body"]["metadata"]
    assert first["body"]["apiVersion"] == "coordination.k8s.io/v1"
    assert first["body"]["kind"] == "Lease"
    check_fields(spec0, a.identity, 0)
    assert spec0["acquireTime"] == spec0["renewTime"]
    w = wait_until(lambda: (lambda w: w if len(w) >= 4 else None)(lease_writes(api)),
                   timeout=15, what="three renewals")
    renewals = w[1:]
    times = [rfc3339(s["renewTime"]) for _, s in w]
    gaps = [t - t_prev for t_prev, t in zip(times, times[1:])]
    for (e, spec), gap in zip(renewals, gaps):
        assert e["method"] == "PUT"
        assert e["body"]["metadata"]["resourceVersion"], e["body"]["metadata"]
        check_fields(spec, a.identity, 0)
        assert spec["acquireTime"] == spec0["acquireTime"]
        # never before the retry period, never so late that the lease ran out
        # (a descheduled thread on a loaded machine may be late once)
        assert RETRY - 0.1 <= gap < DURATION, gaps
    # every retry period: the typical gap
    assert statistics.median(gaps) <= RETRY + SLACK, gaps
    stored = api.get_object("leases", LEASE_NAME, "kube-system", "coordination.k8s.io")
    check_fields(stored["spec"], a.identity, 0)
    assert check_fenced(api)[a.identity] >= 5


def test_two_replicas_never_lead_at_once(api, replicas):
    a = replicas("a")
    a.wait("started_leading")
    b = replicas("b")
    time.sleep(2 * DURATION)
    assert a.leading() and not b.leading()
    assert b.events("started_leading") == []
    counts = check_fenced(api)
    assert counts.get(a.identity, 0) >= 10 and b.identity not in counts
    # b only read the Lease: never wrote it
    assert all(s["holderIdentity"] == a.identity for _, s in lease_writes(api))


def test_sigstop_fails_over_and_the_resumed_leader_stops_before_acting(api, replicas):
    a = replicas("a")
    a.wait("started_leading")
    b = replicas("b")
    a.wait("act", 3)
    # stop a right after an act: its actor then sleeps 0.2 s before checking
    # lease_is_leader() again, so the stop cannot fall between that check and
    # the write (a window no lease-based scheme can close without fencing)
    seq = api.log_seq()
    api.wait_for_request(lambda e: e.get("resource") == "configmaps", since=seq)
    a.signal(signal.SIGSTOP)
    stopped_at = time.time()
    got = b.wait("started_leading", timeout=DURATION + 4)
    took = got["t"] - stopped_at
    w = lease_writes(api, until=held_by(b.identity))
    renews_a = [e for e, s in w if s["holderIdentity"] == a.identity]
    takeover = [(e, s) for e, s in w if s["holderIdentity"] == b.identity][0]
    gap = rfc3339(takeover[0]["time"]) - rfc3339(renews_a[-1]["time"])
    # never before a's last renewal expired, and soon after
    assert DURATION <= gap <= DURATION + RETRY + SLACK, gap
    assert took <= DURATION + RETRY + SLACK, took
    print("SIGSTOP: taken over %.3fs after the stop, %.3fs after the last renewal"
          % (took, gap))
    check_fields(takeover[1], b.identity, 1)
    assert takeover[1]["acquireTime"] == takeover[1]["renewTime"]
    b.wait("act", 3)

    seq = api.log_seq()
    a.signal(signal.SIGCONT)
    a.wait("stopped_leading", timeout=5)
    time.sleep(1.0)
    assert not a.leading() and b.leading()
    # a never acted nor wrote the Lease after resuming; b kept going
    for e in api.request_log(seq):
        if 200 <= e["code"] < 300 and e["verb"] in ("create", "update"):
            if e.get("resource") == "configmaps":
                assert e["body"]["data"]["holder"] == b.identity, e
            if e.get("resource") == "leases":
                assert e["body"]["spec"]["holderIdentity"] == b.identity, e
    counts = check_fenced(api)
    assert counts[a.identity] >= 3 and counts[b.identity] >= 3
    assert "Stopped leading" in a.stderr()


def test_sigterm_hands_over_at_once(api, replicas):
    a = replicas("a")
    a.wait("started_leading")
    b = replicas("b")
    a.wait("act", 3)
    time.sleep(RETRY)   # b has seen the lease held
    seq = api.log_seq()
    a.signal(signal.SIGTERM)
    got = b.wait("started_leading", timeout=DURATION + 3)
    assert a.proc.wait(5) == 0
    a_out = [e["event"] for e in a.lines]
    assert a_out[-2:] == ["stopped_leading", "exit"], a_out
    w = lease_writes(api, seq, until=held_by(b.identity))
    # a renewal of a's may land between the mark and the signal
    while w and w[0][1]["holderIdentity"] == a.identity:
        w = w[1:]
    assert len(w) >= 2, w
    release, rel_spec = w[0]
    # client-go's ReleaseOnCancel record
    assert rel_spec["holderIdentity"] == "" and rel_spec["leaseDurationSeconds"] == 1
    assert MICRO.match(rel_spec["renewTime"]) and rel_spec["leaseTransitions"] == 0
    assert a.events("stopped_leading")[0]["t"] <= rfc3339(release["time"])
    take, spec = w[1]
    check_fields(spec, b.identity, 1)
    # at the next retry, not after the lease duration
    gap = rfc3339(take["time"]) - rfc3339(release["time"])
    print("SIGTERM: taken over %.3fs after the release" % gap)
    assert gap <= RETRY + SLACK and gap < DURATION, gap
    assert got["t"] - rfc3339(release["time"]) < DURATION
    b.wait("act", 2)
    check_fenced(api)


def foreign_lease(api, holder, renew, duration=2, transitions=3):
    return api.create_object({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": LEASE_NAME, "namespace": "kube-system"},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration,
                 "acquireTime": micro_now(-3600), "renewTime": renew,
                 "leaseTransitions": transitions}})


def test_a_foreign_holder_that_renews_is_never_taken(api, replicas):
    """An upstream CCM holding the same Lease keeps it as long as it renews."""
    lease = foreign_lease(api, "upstream-cp-1_0b9c8a3e", micro_now())
    a = replicas("a")
    end = time.time() + 2 * DURATION
    last = time.time()
    while time.time() < end:
        time.sleep(RETRY)
        lease["spec"]["renewTime"] = micro_now()
        lease = api.update_object(lease)
        last = time.time()
        assert not a.leading()
    assert a.events("started_leading") == []
    assert lease_writes(api) == []
    # the upstream CCM dies: taken over once its last renewal expired
    got = a.wait("started_leading", timeout=DURATION + 3)
    assert DURATION <= got["t"] - last <= DURATION + RETRY + SLACK, \
        got["t"] - last
    (e, spec), = lease_writes(api, until=held_by(a.identity))[:1]
    assert e["method"] == "PUT" and e["body"]["metadata"]["resourceVersion"]
    check_fields(spec, a.identity, 4)


@pytest.mark.parametrize("skew", [-3600.0, 86400.0])
def test_expiry_is_judged_on_the_local_clock(api, replicas, skew):
    """A stale holder is taken over a lease duration after this replica first
    saw the record, whatever its renewTime says (an hour ago, a day ahead)."""
    foreign_lease(api, "gone_1", micro_now(skew))
    seq = api.log_seq()
    a = replicas("a", act=False)
    first = api.wait_for_request(lambda e: e.get("resource") == "leases", since=seq)
    got = a.wait("started_leading", timeout=DURATION + 3)
    waited = got["t"] - rfc3339(first["time"])
    assert DURATION <= waited <= DURATION + RETRY + SLACK, waited
    check_fields(lease_writes(api, until=held_by(a.identity))[0][1], a.identity, 4)


def test_rbac_denial_is_retried_without_crashing(api, replicas, tmp):
    kc = api.write_kubeconfig(os.path.join(tmp, "kc-ccm"), user="system:cloud-controller-manager",
                              groups=(), tls_server_name="kubernetes")
    a = replicas("a", kubeconfig=kc, act=False)
    seq = api.log_seq()
    deadline = time.time() + 5
    while len([e for e in api.request_log(seq) if e.get("resource") == "leases"]) < 3:
        assert time.time() < deadline, api.request_log(seq)
        time.sleep(0.1)
    assert all(e["code"] == 403 for e in api.request_log(seq) if e.get("resource") == "leases")
    assert a.proc.poll() is None and not a.leading()
    # logged once at error level, repeats only at -v=4
    assert a.stderr().count("E1") >= 1
    api.create_object({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                       "metadata": {"name": "ccm-lease", "namespace": "kube-system"},
                       "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                                  "verbs": ["get", "create", "update"]}]})
    api.create_object({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                       "metadata": {"name": "ccm-lease", "namespace": "kube-system"},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                   "name": "ccm-lease"},
                       "subjects": [{"kind": "User", "name": "system:cloud-controller-manager"}]})
    a.wait("started_leading", timeout=RETRY + 3)
    check_fields(lease_writes(api, until=held_by(a.identity))[0][1], a.identity, 0)


def test_renewal_failures_stop_leading_before_the_lease_expires(api, replicas):
    a = replicas("a")
    a.wait("act", 3)
    outage = DURATION + 1.0
    api.outage(outage, "refuse")
    t_out = time.time()
    stopped = a.wait("stopped_leading", timeout=DURATION + 2)
    last_renew = [e for e, s in lease_writes(api) if s["holderIdentity"] == a.identity][-1]
    # the callback has returned (actors joined) before anyone could take over
    assert stopped["t"] < rfc3339(last_renew["time"]) + DURATION, \
        (stopped["t"], last_renew["time"])
    assert stopped["t"] >= rfc3339(last_renew["time"]) + RENEW - 0.6
    print("outage: stopped leading %.3fs after the last renewal (lease %.1fs)"
          % (stopped["t"] - rfc3339(last_renew["time"]), DURATION))
    assert "Failed to renew lease" in a.stderr()
    # campaigns again (the process does not exit) and leads again afterwards
    assert a.proc.poll() is None
    a.wait("started_leading", 2, timeout=outage + 5)
    assert time.time() - t_out >= outage - 0.5
    a.wait("act", len(a.events("act")) + 2)
    check_fenced(api)


def test_a_conflict_on_renewal_rereads_and_keeps_leading(api, replicas):
    a = replicas("a")
    a.wait("act", 2)
    seq = api.log_seq()
    api.inject_fault(path_prefix=LEASE, status=409, count=1, method="PUT")
    # the 409'd renewal is followed by a GET and a successful PUT
    conflict = api.wait_for_request(lambda e: e.get("resource") == "leases" and
                                    e["code"] == 409, since=seq, timeout=3)
    api.wait_for_request(lambda e: e.get("resource") == "leases" and e["verb"] == "update"
                         and e["code"] == 200, since=conflict["seq"], timeout=3)
    time.sleep(2 * RETRY)   # and keeps leading
    log = [e for e in api.request_log(seq) if e.get("resource") == "leases"]
    codes = [(e["verb"], e["code"]) for e in log]
    i = codes.index(("update", 409))
    assert codes[i + 1] == ("get", 200) and codes[i + 2] == ("update", 200), codes
    assert a.leading() and a.events("stopped_leading") == []
    check_fenced(api)
