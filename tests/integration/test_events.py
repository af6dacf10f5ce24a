"""The Event recorder, driven through tests/drivers/drv_events.c against the
fake API server: repeats aggregate into one Event with a count, different
messages make different Events, Node events land in "default", a PATCH of a
garbage-collected Event re-creates it, the per-object spam filter and
similar-message combining, and a caller that never waits, even while the API
server is down."""

import json
import os
import re
import subprocess
import time

import pytest

from conftest import driver_path, wait_until

NODE_UID = "6f1b3d2e-0000-4000-8000-000000000001"
SMP = "application/strategic-merge-patch+json"
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
# a call that merely takes a lock and copies a few KiB: a thread of a
# sanitizer build descheduled on a loaded machine can take tens of ms, a call
# that waited for a send or a retry (the retry intervals here are 0.1 s and
# more, the request timeout seconds) takes longer than this
RECORD_MAX_US = 90000


class Recorder(object):
    def __init__(self, kubeconfig, tmp, *extra):
        self.err_path = os.path.join(tmp, "drv_events.stderr")
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen([driver_path("drv_events"), kubeconfig, "-v", "4"]
                                     + list(extra), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, text=True)
        assert self.read()["event"] == "ready"

    def read(self):
        line = self.proc.stdout.readline()
        assert line, "drv_events ended:\n" + self.stderr()
        return json.loads(line)

    def send(self, *fields):
        self.proc.stdin.write("\t".join(str(f) for f in fields) + "\n")
        self.proc.stdin.flush()
        return self.read()

    def record(self, kind, ns, name, uid, typ, reason, message):
        r = self.send("record", kind, ns, name, uid, typ, reason, message)
        assert r["event"] == "recorded" and r["max_us"] < RECORD_MAX_US, r
        return r

    def node(self, reason, message, typ="Normal", name="node-1", uid=NODE_UID):
        return self.record("Node", "", name, uid, typ, reason, message)

    def metrics(self):
        return self.send("metrics")

    def stop(self, flush="2s"):
        took = self.send("stop", flush)
        final = self.read()
        assert self.proc.wait(10) == 0
        return took, final

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()


@pytest.fixture
def recorder(api, tmp):
    started = []

    def start(*extra, kubeconfig=None):
        kc = kubeconfig or api.write_kubeconfig(os.path.join(tmp, "kc"),
                                                tls_server_name="kubernetes")
        r = Recorder(kc, tmp, *extra)
        started.append(r)
        return r

    yield start
    for r in started:
        r.close()
        err = r.stderr()
        assert "Sanitizer" not in err and "runtime error:" not in err, err
        assert r.proc.returncode == 0, err


def events(api, namespace="default", reason=None):
    return [e for e in api.list_objects("events", namespace=namespace)
            if reason is None or e["reason"] == reason]


def wait_events(api, pred, namespace="default", reason=None, timeout=10.0):
    end = time.time() + timeout
    while True:
        got = events(api, namespace, reason)
        if pred(got):
            return got
        if time.time() > end:
            raise AssertionError("events in %s: %s" % (namespace, json.dumps(got, indent=1)))
        time.sleep(0.05)


def wait_metric(r, key, value, timeout=5.0):
    end = time.time() + timeout
    while r.metrics()[key] != value:
        assert time.time() < end, r.metrics()
        time.sleep(0.02)


def event_writes(api, since=0, n=None, timeout=5.0):
    """The Event writes logged since seq. The fake logs a request once it has
    answered it, so a write can be seen stored (and its answer counted by the
    recorder) before its entry is in the log: with n, wait for n of them."""
    end = time.time() + timeout
    while True:
        w = [e for e in api.writes(since) if e.get("resource") == "events"]
        if n is None or len(w) >= n or time.time() > end:
            return w
        time.sleep(0.02)


def test_identical_events_aggregate_into_one_with_a_count(api, recorder):
    r = recorder("--host", "cp-1")
    seq = api.log_seq()
    r.node("Synced", "Node synced successfully")
    first = wait_events(api, lambda g: len(g) == 1, reason="Synced")[0]
    time.sleep(1.1)  # lastTimestamp has seconds precision
    for _ in range(4):
        r.node("Synced", "Node synced successfully")
    ev, = wait_events(api, lambda g: g and g[0]["count"] == 5, reason="Synced")
    assert ev["metadata"]["name"] == first["metadata"]["name"]
    assert re.match(r"^node-1\.[0-9a-f]{16}$", ev["metadata"]["name"])
    assert ev["metadata"]["namespace"] == "default"
    assert ev["involvedObject"] == {"kind": "Node", "name": "node-1", "uid": NODE_UID,
                                    "apiVersion": "v1"}
    assert ev["source"] == {"component": "cloud-controller-manager", "host": "cp-1"}
    assert ev["reportingComponent"] == "cloud-controller-manager"
    assert ev["reportingInstance"] == "cp-1"
    assert ev["type"] == "Normal" and ev["message"] == "Node synced successfully"
    assert TIME.match(ev["firstTimestamp"]) and TIME.match(ev["lastTimestamp"])
    assert ev["firstTimestamp"] == first["firstTimestamp"]
    assert ev["lastTimestamp"] > ev["firstTimestamp"]
    w = event_writes(api, seq, n=5)
    assert [(e["verb"], e["code"]) for e in w] == [("create", 201)] + [("patch", 200)] * 4
    assert "resourceVersion" not in w[0]["body"]["metadata"]
    for i, e in enumerate(w[1:]):
        assert e["contentType"] == SMP
        assert e["name"] == ev["metadata"]["name"]
        assert sorted(e["body"]) == ["count", "lastTimestamp", "message"]
        assert e["body"]["count"] == i + 2
    # counted once the answers are in: after the stored Events, maybe later
    wait_metric(r, "sent", 5)
    m = r.metrics()
    assert m["aggregated"] == 4 and m["queue"] == 0


def test_different_messages_make_different_events(api, recorder):
    r = recorder()
    for msg in ("first", "second", "third"):
        r.node("AddressesChanged", msg)
    got = wait_events(api, lambda g: len(g) == 3, reason="AddressesChanged")
    assert sorted(e["message"] for e in got) == ["first", "second", "third"]
    assert all(e["count"] == 1 for e in got)
    assert len({e["metadata"]["name"] for e in got}) == 3
    # another type or another object is another Event too
    r.node("AddressesChanged", "first", typ="Warning")
    r.node("AddressesChanged", "first", name="node-2", uid="other-uid")
    wait_events(api, lambda g: len(g) == 5, reason="AddressesChanged")


def test_node_events_in_default_namespaced_objects_in_theirs(api, recorder):
    api.create_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    r = recorder()
    r.node("Synced", "ok")
    r.record("Service", "shop", "web", "svc-uid-1", "Normal", "EnsuredLoadBalancer",
             "Ensured load balancer")
    wait_events(api, lambda g: len(g) == 1, namespace="shop")
    ev, = events(api, "shop")
    assert ev["involvedObject"]["namespace"] == "shop"
    assert ev["metadata"]["name"].startswith("web.")
    assert [e["reason"] for e in events(api, "default")] == ["Synced"]
    assert "namespace" not in events(api, "default")[0]["involvedObject"]


def test_a_patch_of_a_collected_event_creates_it_again(api, recorder):
    r = recorder()
    r.node("Synced", "gone soon")
    ev, = wait_events(api, lambda g: len(g) == 1, reason="Synced")
    name = ev["metadata"]["name"]
    api.delete_object("events", name, namespace="default")
    seq = api.log_seq()
    r.node("Synced", "gone soon")
    again, = wait_events(api, lambda g: len(g) == 1, reason="Synced")
    assert again["metadata"]["name"] == name and again["count"] == 2
    assert again["metadata"]["uid"] != ev["metadata"]["uid"]
    w = event_writes(api, seq, n=2)
    assert [(e["verb"], e["code"]) for e in w] == [("patch", 404), ("create", 201)]
    assert "resourceVersion" not in w[1]["body"]["metadata"]
    # and the next repeat patches the new object
    r.node("Synced", "gone soon")
    wait_events(api, lambda g: g and g[0]["count"] == 3, reason="Synced")


def test_spam_filter_limits_events_about_one_object(api, recorder):
    r = recorder()
    for i in range(30):
        r.node("Reason%d" % i, "m")
    wait_events(api, lambda g: len(g) == 25)
    wait_metric(r, "sent", 25)
    wait_metric(r, "dropped_spam", 5)
    time.sleep(0.3)
    assert len(events(api)) == 25
    # another object is not limited by node-1's flood
    r.node("Synced", "ok", name="node-2", uid="u2")
    wait_events(api, lambda g: len(g) == 26)


def test_similar_messages_are_combined(api, recorder):
    r = recorder()
    for i in range(1, 13):
        r.record("Service", "default", "web", "svc-uid", "Warning", "SyncLoadBalancerFailed",
                 "error %d" % i)
    got = wait_events(api, lambda g: any(e["count"] == 3 for e in g),
                      reason="SyncLoadBalancerFailed")
    plain = sorted(e["message"] for e in got if not e["message"].startswith("(combined"))
    combined = [e for e in got if e["message"].startswith("(combined")]
    assert plain == sorted("error %d" % i for i in range(1, 10))
    assert len(combined) == 1 and combined[0]["count"] == 3
    assert combined[0]["message"] == "(combined from similar events): error 12"


def test_the_caller_never_waits_while_the_api_server_is_down(api, recorder):
    r = recorder("--retry-interval", "0.2s", "--max-tries", "60")
    r.node("Synced", "before")
    wait_events(api, lambda g: len(g) == 1)
    wait_metric(r, "sent", 1)
    api.outage(2.5, "refuse")
    t0 = time.time()
    worst = 0
    for i in range(50):
        got = r.node("NodeNotReady", "node %d is down" % i, name="node-%d" % i, uid="u%d" % i)
        worst = max(worst, got["max_us"])
    assert time.time() - t0 < 2.0    # 50 calls, each returning at once
    print("record during outage: worst call %d us" % worst)
    m = r.metrics()
    assert m["queue"] >= 40 and m["sent"] == 1
    # retried once the API server is back: every event arrives, once
    got = wait_events(api, lambda g: len(g) == 51, timeout=15)
    assert all(e["count"] == 1 for e in got)
    # the recorder counts an Event once its answer is in, after the fake
    # stored it: wait on the count itself
    wait_metric(r, "sent", 51)
    m = r.metrics()
    assert m["queue"] == 0
    assert all(m["dropped_" + k] == 0 for k in ("queue_full", "retries", "rejected", "spam"))


def test_a_full_queue_drops_and_counts(api, recorder):
    r = recorder("--retry-interval", "0.2s", "--max-tries", "60", "--queue-max", "10")
    api.outage(2.0, "refuse")
    for i in range(30):
        r.node("NodeNotReady", "down", name="node-%d" % i, uid="u%d" % i)
    m = r.metrics()
    # ten queued, at most one in the sending thread's hands, the rest dropped
    assert m["queue"] == 10 and 19 <= m["dropped_queue_full"] <= 20, m
    kept = 30 - m["dropped_queue_full"]
    wait_events(api, lambda g: len(g) == kept, timeout=15)
    wait_metric(r, "sent", kept)
    assert "too many queued events" in r.stderr()


def test_rejected_events_are_dropped_not_retried(api, recorder, tmp):
    kc = api.write_kubeconfig(os.path.join(tmp, "kc-ccm"), user="system:cloud-controller-manager",
                              groups=(), tls_server_name="kubernetes")
    r = recorder("--retry-interval", "0.1s", kubeconfig=kc)
    seq = api.log_seq()
    r.node("Synced", "no permission")
    api.wait_for_request(lambda e: e.get("resource") == "events", since=seq)
    time.sleep(0.5)
    w = [e for e in api.request_log(seq) if e.get("resource") == "events"]
    assert [(e["verb"], e["code"]) for e in w] == [("create", 403)]
    wait_metric(r, "dropped_rejected", 1)
    # logged right after the count
    wait_until(lambda: "Server rejected event (will not retry!)" in r.stderr(),
               what="the rejection logged")


def test_stop_flushes_what_is_queued(api, recorder):
    r = recorder()
    for i in range(20):
        r.node("Synced", "ok", name="node-%d" % i, uid="u%d" % i)
    took, final = r.stop("5s")
    assert final["queue"] == 0 and final["sent"] == 20 and final["dropped_shutdown"] == 0
    assert len(events(api)) == 20


def test_stop_gives_up_at_the_flush_deadline_during_an_outage(api, recorder):
    # retrying all of these would take over 100 s; stop ends at the flush
    # deadline, waiting only for the request in flight
    r = recorder("--retry-interval", "0.2s", "--max-tries", "100")
    api.outage(30, "refuse")
    for i in range(5):
        r.node("Synced", "ok", name="node-%d" % i, uid="u%d" % i)
    took, final = r.stop("0.5s")
    print("stop during an outage took %.3fs" % (took["us"] / 1e6))
    assert took["us"] < 9000000, took
    assert final["queue"] == 0 and final["sent"] == 0 and final["dropped_shutdown"] == 5
    api.end_outage()
