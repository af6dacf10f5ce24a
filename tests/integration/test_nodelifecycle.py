"""The cloud-node-lifecycle controller against the fake API server, through
tests/drivers/drv_nodelifecycle.c and its scripted provider (answers read
from a file on every call, so a test changes them while the controller
runs): a Node is deleted only when a definitive provider says its instance
does not exist and the Node is older than the grace period, never on an
error, a rate limit, a timeout, a non-definitive provider or the metadata
provider; the shutdown taint follows the instance; deletions carry uid and
resourceVersion preconditions; a stop ends a long pass at once. The driver
runs as system:cloud-controller-manager under the shipped RBAC role."""

import calendar
import json
import os
import signal
import subprocess
import threading
import time

import pytest
import yaml

from conftest import ROOT, driver_path
from conftest import events_about

USER = "system:cloud-controller-manager"
SHUTDOWN = "node.cloudprovider.kubernetes.io/shutdown"
PERIOD = "0.2s"


def node(name, ready="False", taints=None):
    """A Node as its kubelet left it; ready None: no Ready condition yet."""
    o = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
         "spec": {"providerID": "scripted://" + name}, "status": {}}
    if taints is not None:
        o["spec"]["taints"] = taints
    if ready is not None:
        o["status"]["conditions"] = [{"type": "Ready", "status": ready}]
    return o


def set_ready(api, name, status):
    o = api.get_object("nodes", name)
    o["status"]["conditions"] = [{"type": "Ready", "status": status}]
    api.update_object(o, subresource="status")


def rfc3339_s(s):
    """Seconds since the epoch of an RFC 3339 UTC time, fraction kept."""
    frac = 0.0
    if "." in s:
        s, f = s.rstrip("Z").split(".")
        frac, s = float("0." + f), s + "Z"
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ")) + frac


def node_events(api, reason=None):
    return events_about(api, "Node", None, reason)


def wait_until(pred, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        r = pred()
        if r:
            return r
        if time.monotonic() > deadline:
            raise AssertionError("no %s within %ss" % (what, timeout))
        time.sleep(0.05)


def node_deletes(api, since=0):
    return [e for e in api.writes(since) if e["verb"] == "delete" and e["resource"] == "nodes"]


class Lifecycle(object):
    """drv_nodelifecycle running in the background; its JSON lines collected."""

    def __init__(self, api, tmp, answers, *args):
        self.answers_path = os.path.join(tmp, "answers")
        self.set_answers(answers)
        kc = api.write_kubeconfig(os.path.join(tmp, "kubeconfig"), user=USER, groups=(),
                                  tls_server_name="kubernetes")
        self.err_path = os.path.join(tmp, "driver.err")
        self.err = open(self.err_path, "w")
        self.lines = []
        self.cond = threading.Condition()
        self.proc = subprocess.Popen(
            [driver_path("drv_nodelifecycle"), kc, self.answers_path,
             "--monitor-period", PERIOD] + list(args),
            stdout=subprocess.PIPE, stderr=self.err, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.final = None
        self.rc = None

    def _read(self):
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(json.loads(line))
                self.cond.notify_all()

    def set_answers(self, answers):
        tmp = self.answers_path + ".new"
        with open(tmp, "w") as f:
            for name, answer in answers.items():
                f.write("%s %s\n" % (name, answer))
        os.replace(tmp, self.answers_path)

    def events(self, kind):
        with self.cond:
            return [e for e in self.lines if e["event"] == kind]

    def calls(self, node_name=None, op="exists"):
        return [e for e in self.events("call")
                if e["op"] == op and (node_name is None or e["node"] == node_name)]

    def passes(self):
        got = self.events("pass")
        return got[-1]["passes"] if got else 0

    def wait(self, pred, timeout=15.0, what="condition"):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                r = pred()
                if r:
                    return r
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None and not self.reader.is_alive():
                    raise AssertionError("no %s within %ss; last lines:\n%s\nstderr:\n%s"
                                         % (what, timeout,
                                            "\n".join(map(json.dumps, self.lines[-20:])),
                                            self.stderr()[-4000:]))
                self.cond.wait(min(left, 0.1))

    def wait_passes(self, more=3, timeout=20.0):
        """Wait until `more` passes have completed after now."""
        target = self.passes() + more
        self.wait(lambda: self.passes() >= target, timeout, "%d passes" % target)

    def wait_calls(self, node_name, count=1, op="exists", timeout=15.0):
        self.wait(lambda: len(self.calls(node_name, op)) >= count, timeout,
                  "%d %s calls for %s" % (count, op, node_name))

    def stderr(self):
        if not self.err.closed:
            self.err.flush()
        with open(self.err_path) as f:
            return f.read()

    def stop(self):
        if self.final is None:
            self.proc.send_signal(signal.SIGTERM)
            self.rc = self.proc.wait(20)
            self.reader.join(5)
            self.err.close()
            err = self.stderr()
            assert "ERROR: AddressSanitizer" not in err, err
            assert "runtime error:" not in err, err
            assert "WARNING: ThreadSanitizer" not in err, err
            assert self.rc == 0, "driver exited %s:\n%s" % (self.rc, err)
            self.final = self.events("exit")[0]
        return self.final

    def metric(self, series):
        """A metric's value at exit (after stop), 0 when the series is absent."""
        for line in self.stop()["metrics"]:
            name, _, value = line.rpartition(" ")
            if name == series:
                return float(value)
        return 0.0

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def api(api):
    with open(os.path.join(ROOT, "static-pod", "rbac.yaml")) as f:
        for obj in yaml.safe_load_all(f):
            if obj:
                api.create_object(obj)
    return api


@pytest.fixture
def lifecycle(api, tmp):
    started = []

    def start(answers, *args):
        d = Lifecycle(api, tmp, answers, *args)
        started.append(d)
        return d

    yield start
    for d in started:
        d.kill()


def refused(lc, reason):
    return lc.metric('bootccm_node_lifecycle_deletions_refused_total{reason="%s"}' % reason)


def test_deletes_node_whose_instance_is_definitively_gone(api, lifecycle):
    for n in (node("gone"), node("alive"), node("gone-but-ready", ready="True"),
              node("unreported", ready=None), node("unknown", ready="Unknown")):
        api.create_object(n)
    uid = api.get_object("nodes", "gone")["metadata"]["uid"]
    lc = lifecycle({"gone": "not-found", "gone-but-ready": "not-found", "*": "exists"},
                   "--definitive")
    api.wait_for_object("nodes", "gone", pred=lambda o: o is None, timeout=15)
    lc.wait_passes(2)
    names = sorted(n["metadata"]["name"] for n in api.list_objects("nodes"))
    assert names == ["alive", "gone-but-ready", "unknown", "unreported"]
    # only Ready=True counts as ready (upstream defaults a missing condition
    # to Unknown); a Ready node's instance is never looked up
    assert lc.calls("unreported") and lc.calls("unknown") and lc.calls("alive")
    assert lc.calls("gone-but-ready") == []
    dels = node_deletes(api)
    assert [(d["name"], d["code"], d["user"]) for d in dels] == [("gone", 200, USER)]
    ev, = wait_until(lambda: node_events(api, "DeletingNode"), what="DeletingNode event")
    assert ev["type"] == "Normal"
    assert ev["message"] == "Deleting node gone because it does not exist in the cloud provider"
    assert ev["involvedObject"]["name"] == "gone" and ev["involvedObject"]["uid"] == uid
    assert node_events(api, "DeletingNodeFailed") == []
    assert lc.metric("bootccm_node_lifecycle_deletions_total") == 1
    assert lc.metric("bootccm_node_lifecycle_pass_duration_seconds_count") >= 2


def assert_kept(api, lc, names, since=0):
    """Several passes later, every one of names still exists, nothing was
    deleted and no DeletingNode Event was recorded."""
    for n in names:
        lc.wait_calls(n, 2)
    lc.wait_passes(3)
    for n in names:
        assert api.get_object("nodes", n) is not None, n
    assert node_deletes(api, since) == []
    assert node_events(api, "DeletingNode") == []


def test_never_deletes_on_rate_limited_answer_cloud_provider_azure_2880(api, lifecycle):
    # cloud-provider-azure#2880: a rate-limited cache refresh made every
    # instance look absent and the CCM deleted the Nodes
    for name in ("w1", "w2"):
        api.create_object(node(name))
    lc = lifecycle({"*": "rate-limited"}, "--definitive")
    assert_kept(api, lc, ["w1", "w2"])
    # the same controller does delete once the cloud answers "gone"
    lc.set_answers({"w1": "not-found", "*": "rate-limited"})
    api.wait_for_object("nodes", "w1", pred=lambda o: o is None, timeout=15)
    lc.wait_passes(1)
    assert api.get_object("nodes", "w2") is not None
    assert refused(lc, "error") >= 4
    assert lc.metric("bootccm_node_lifecycle_deletions_total") == 1


def test_never_deletes_on_error_or_timeout(api, lifecycle):
    answers = {"transient": "error-transient", "timeout": "timeout",
               "unimplemented": "not-implemented"}
    for name in answers:
        api.create_object(node(name))
    lc = lifecycle(answers, "--definitive")
    assert_kept(api, lc, list(answers))
    # an error also keeps the shutdown check from running: no taint either
    assert lc.calls(op="shutdown") == []
    assert all(not api.get_object("nodes", n)["spec"].get("taints") for n in answers)
    assert refused(lc, "error") >= 4 and refused(lc, "not-implemented") >= 2
    # many failing passes, one warning (the rest at -v=2)
    err = lc.stderr()
    assert err.count("could not tell whether instances exist") == 1, err
    assert err.count("cannot tell whether instances exist") == 1, err


def test_never_deletes_node_younger_than_grace_period_kubernetes_58334(api, lifecycle):
    # kubernetes#58334: a Node registered before its instance showed up in
    # the cloud's inventory was deleted at once
    grace = 3.0
    lc = lifecycle({"young": "not-found"}, "--definitive", "--grace-period", "%gs" % grace)
    lc.wait_passes(1)
    api.create_object(node("young"))
    created = rfc3339_s(api.get_object("nodes", "young")["metadata"]["creationTimestamp"])
    lc.wait_calls("young", 2)
    assert api.get_object("nodes", "young") is not None
    assert node_deletes(api) == []
    d = api.wait_for_request(lambda e: e["verb"] == "delete" and e["resource"] == "nodes",
                             timeout=grace + 15)
    assert d["code"] == 200 and api.get_object("nodes", "young") is None
    lc.wait_passes(1)
    assert rfc3339_s(d["time"]) - created >= grace
    assert refused(lc, "grace-period") >= 1
    assert lc.metric("bootccm_node_lifecycle_deletions_total") == 1


def test_instance_not_found_is_not_an_error_cloud_provider_57(api, lifecycle):
    # cloud-provider#57: InstanceNotFound returned as an error was treated
    # like any error, so such Nodes were never deleted
    api.create_object(node("vanished"))
    api.create_object(node("flaky"))
    lc = lifecycle({"vanished": "instance-not-found", "flaky": "error-transient"},
                   "--definitive")
    api.wait_for_object("nodes", "vanished", pred=lambda o: o is None, timeout=15)
    lc.wait_passes(2)
    assert api.get_object("nodes", "flaky") is not None
    assert [d["name"] for d in node_deletes(api)] == ["vanished"]
    wait_until(lambda: node_events(api, "DeletingNode"), what="DeletingNode event")
    assert lc.metric("bootccm_node_lifecycle_deletions_total") == 1


def test_non_definitive_provider_never_deletes(api, lifecycle):
    for name in ("false", "notfound"):
        api.create_object(node(name))
    lc = lifecycle({"false": "not-found", "notfound": "instance-not-found"})
    assert_kept(api, lc, ["false", "notfound"])
    assert refused(lc, "not-definitive") >= 4
    assert lc.metric("bootccm_node_lifecycle_deletions_total") == 0


def test_metadata_provider_never_deletes(api, lifecycle):
    for name in ("cp-1", "worker-1", "worker-2"):
        api.create_object(node(name, ready="Unknown"))
    seq = api.log_seq()
    lc = lifecycle({}, "--provider", "metadata")
    lc.wait_passes(4)
    for name in ("cp-1", "worker-1", "worker-2"):
        assert api.get_object("nodes", name)["spec"].get("taints") is None
    assert [w for w in api.writes(seq) if w["user"] == USER] == []
    assert refused(lc, "not-implemented") >= 12
    assert lc.metric("bootccm_node_lifecycle_deletions_total") == 0
    # once, not once a node and a pass
    err = lc.stderr()
    assert err.count("cannot tell whether instances exist") == 1, err
    assert lc.calls() == []   # the scripted provider was not used


def taints(api, name):
    return api.get_object("nodes", name)["spec"].get("taints") or []


def test_shutdown_taint_added_and_removed(api, lifecycle):
    not_ready = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute",
                 "timeAdded": "2026-01-02T03:04:05Z"}
    api.create_object(node("stopped", taints=[not_ready]))
    api.create_object(node("bare"))
    seq = api.log_seq()
    lc = lifecycle({"*": "shutdown"}, "--definitive")
    shut = {"key": SHUTDOWN, "effect": "NoSchedule"}
    wait_until(lambda: taints(api, "stopped") == [not_ready, shut], what="taint on stopped")
    wait_until(lambda: taints(api, "bare") == [shut], what="taint on bare")
    lc.wait_passes(3)
    patches = [w for w in api.writes(seq) if w["verb"] == "patch"]
    assert len(patches) == 2           # added once, not again each pass
    for p in patches:                  # with the cached resourceVersion as precondition
        if p["contentType"] == "application/json-patch+json":
            assert p["body"][0]["op"] == "test"
            assert p["body"][0]["path"] == "/metadata/resourceVersion"
        else:
            assert p["contentType"] == "application/merge-patch+json"
            assert p["body"]["metadata"]["resourceVersion"]
    # back up: the taint goes, the other taint and its timeAdded stay
    set_ready(api, "stopped", "True")
    wait_until(lambda: taints(api, "stopped") == [not_ready], what="taint removed")
    # still NotReady: the taint stays even when the instance runs again
    lc.set_answers({"*": "exists"})
    lc.wait_calls("bare", len(lc.calls("bare")) + 2)
    assert taints(api, "bare") == [shut]
    set_ready(api, "bare", "True")
    wait_until(lambda: taints(api, "bare") == [], what="taint removed from bare")
    assert node_deletes(api) == []


def test_delete_uses_preconditions(api, lifecycle):
    api.create_object(node("reborn"))
    old = api.get_object("nodes", "reborn")["metadata"]
    lc = lifecycle({"reborn": "not-found"}, "--definitive", "--delay", "1.5s")
    # while the provider is answering for the old Node, it is deleted and a
    # new Node registers under the same name
    lc.wait_calls("reborn", 1)
    api.delete_object("nodes", "reborn")
    api.create_object(node("reborn"))
    lc.set_answers({"reborn": "exists"})
    new = api.get_object("nodes", "reborn")["metadata"]
    assert new["uid"] != old["uid"]
    d = api.wait_for_request(lambda e: e["verb"] == "delete" and e["resource"] == "nodes",
                             timeout=15)
    assert d["body"]["preconditions"] == {"uid": old["uid"],
                                          "resourceVersion": old["resourceVersion"]}
    assert d["code"] == 409
    failed, = wait_until(lambda: node_events(api, "DeletingNodeFailed"),
                         what="DeletingNodeFailed event")
    assert failed["type"] == "Warning" and failed["involvedObject"]["uid"] == old["uid"]
    assert failed["message"].startswith("Failed deleting node reborn: ")
    lc.wait_calls("reborn", 3)
    assert api.get_object("nodes", "reborn")["metadata"]["uid"] == new["uid"]
    assert len(node_deletes(api)) == 1
    assert lc.metric("bootccm_node_lifecycle_deletions_total") == 0


def test_stop_is_prompt(api, lifecycle):
    n = 1000
    for i in range(n):
        api.create_object(node("n%04d" % i))
    lc = lifecycle({"*": "exists"}, "--definitive", "--delay", "20ms")
    lc.wait(lambda: len(lc.calls()) >= 20, what="a pass under way")
    t0 = time.monotonic()
    final = lc.stop()
    took = time.monotonic() - t0
    assert took < 2.0, took
    assert final["stopSeconds"] < 1.0, final
    # stopped in the middle of the first pass, which is not measured
    assert len(lc.calls()) < n
    assert lc.passes() == 0
    assert lc.metric("bootccm_node_lifecycle_pass_duration_seconds_count") == 0


def test_does_not_start_without_exists(api, lifecycle):
    lc = lifecycle({}, "--no-exists")
    got, = lc.wait(lambda: lc.events("refused"), what="refused")
    assert got["code"] == "not implemented"
    assert lc.proc.wait(10) == 0
    assert lc.events("started") == []
