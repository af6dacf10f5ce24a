"""The cloud-node controller against the fake API server, through
tests/drivers/drv_nodectl.c and its scripted cloud provider (answers read from
a file at every call): the local node falls back to the instance metadata
service when the cloud API fails and the Event says so; a replica that does
not lead touches only its own node; a conflict re-reads the Node and still
initializes it in two writes; a version of the Node the controller has
already written over is never written again, however late the watch brings
it; the periodic address refresh uses the batched listing (cloud calls per
period = pages, not nodes). The driver runs as system:cloud-controller-manager
under the shipped RBAC role."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import yaml

from conftest import ROOT, driver_path, wait_until
from conftest import events_about

sys.path.insert(0, os.path.join(ROOT, "tests", "fakes", "metadata"))
from server import FakeMetadata  # noqa: E402

USER = "system:cloud-controller-manager"
UNINIT = "node.cloudprovider.kubernetes.io/uninitialized"
TAINTS = [{"key": UNINIT, "value": "true", "effect": "NoSchedule"},
          {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute",
           "timeAdded": "2026-11-21T08:00:01Z"}]


def tainted(name, provider_id=None):
    o = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
         "spec": {"taints": [dict(t) for t in TAINTS]}}
    if provider_id:
        o["spec"]["providerID"] = provider_id
    return o


def instance(name, ip, zone="z1"):
    return {"providerID": "scripted://" + name, "zone": zone, "region": "r1",
            "instanceType": "m1", "addresses": [["InternalIP", ip], ["Hostname", name]]}


class Driver(object):
    def __init__(self, api, tmp, script, node_name, *args):
        for o in yaml.safe_load_all(open(os.path.join(ROOT, "static-pod", "rbac.yaml"))):
            if o and api.get_object(o["kind"].lower() + "s", o["metadata"]["name"],
                                    namespace=o["metadata"].get("namespace", ""),
                                    group="rbac.authorization.k8s.io") is None:
                api.create_object(o)
        self.script = os.path.join(tmp, "script.json")
        self.write(script)
        kc = api.write_kubeconfig(os.path.join(tmp, "kc-%s" % node_name), user=USER, groups=(),
                                 tls_server_name="kubernetes")
        self.log = open(os.path.join(tmp, "drv-%s.log" % node_name), "w")
        self.proc = subprocess.Popen(
            [driver_path("drv_nodectl"), kc, self.script, node_name] + list(args),
            stdout=subprocess.PIPE, stderr=self.log, text=True)
        # with --hold-reads, a worker's "read" lines may come before "ready"
        self.lines = []
        for line in iter(self.proc.stdout.readline, ""):
            if json.loads(line)["event"] == "ready":
                break
            self.lines.append(json.loads(line))
        else:
            raise AssertionError("the driver exited before it was ready")

    def wait_line(self, pred, timeout=10.0):
        """The first line printed since the last one taken (stdout, JSON)
        that pred accepts; the driver is stopped if none came within
        timeout."""
        timer = threading.Timer(timeout, self.proc.send_signal, (signal.SIGTERM,))
        timer.start()
        try:
            while True:
                if self.lines:
                    e = self.lines.pop(0)
                else:
                    line = self.proc.stdout.readline()
                    assert line, "the driver ended: no such line within %.0f s" % timeout
                    e = json.loads(line)
                    assert e["event"] != "stopped", "no such line within %.0f s" % timeout
                if pred(e):
                    return e
        finally:
            timer.cancel()

    def write(self, script):
        tmp = self.script + ".new"
        with open(tmp, "w") as f:
            json.dump(script, f)
        os.rename(tmp, self.script)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=15)
        self.log.close()
        with open(self.log.name) as f:
            err = f.read()
        assert self.proc.returncode == 0, err
        assert "Sanitizer" not in err and "runtime error" not in err, err
        return json.loads(out.strip().splitlines()[-1]), err


@pytest.fixture
def driver(api, tmp):
    started = []

    def start(script, node_name, *args):
        d = Driver(api, tmp, script, node_name, *args)
        started.append(d)
        return d

    yield start
    for d in started:
        if d.proc.poll() is None:
            d.stop()


def initialized(api, name):
    n = api.get_object("nodes", name)
    return n is not None and not any(t["key"] == UNINIT for t in n["spec"].get("taints", []))


def node_writes(api, name, since=0, ok=0):
    """Writes to nodes/NAME and nodes/NAME/status. The fake logs a request
    once it has answered it, so a write can be seen stored before it is
    logged: with ok, wait for that many successful ones."""
    def get():
        return [r for r in api.request_log(since) if r["method"] in ("PATCH", "PUT")
                and r["path"] in ("/api/v1/nodes/" + name, "/api/v1/nodes/%s/status" % name)]
    if ok:
        wait_until(lambda: len([r for r in get() if r["code"] < 300]) >= ok,
                   what="%d writes of %s logged" % (ok, name))
    return get()


def events(api, name, reason):
    return events_about(api, None, name, reason)


def test_local_node_falls_back_to_instance_metadata_when_cloud_api_fails(api, driver):
    api.create_object(tainted("cp-1"))
    api.create_object(tainted("w-1"))
    with FakeMetadata("ec2").start() as md:
        d = driver({"fail": "transient", "instances": {}}, "cp-1",
                   "--metadata-cloud", "ec2", "--metadata-endpoint", md.url)
        wait_until(lambda: initialized(api, "cp-1"), what="cp-1 initialized from metadata")
        n = api.get_object("nodes", "cp-1")
        assert n["spec"]["providerID"].startswith("aws:///")
        assert n["status"]["addresses"], n
        # the other taints stay, timeAdded included
        assert n["spec"]["taints"] == [TAINTS[1]]
        ev = wait_until(lambda: events(api, "cp-1", "Synced"), what="Synced event")
        assert "instance metadata" in ev[0]["message"] and "fallback" in ev[0]["message"], ev
        assert "scripted" in ev[0]["message"], ev
        # a remote node has no fallback: the cloud API's failure keeps its taint
        wait_until(lambda: events(api, "w-1", "InitializationFailed"), what="w-1 warning")
        assert not initialized(api, "w-1")
        stats, _ = d.stop()
        assert stats["metadata_calls"] >= 2


def test_cloud_api_answer_is_used_and_named_when_it_works(api, driver):
    api.create_object(tainted("w-1"))
    driver({"instances": {"w-1": instance("w-1", "10.1.0.1")}}, "cp-1")
    wait_until(lambda: initialized(api, "w-1"), what="w-1 initialized")
    n = api.get_object("nodes", "w-1")
    assert n["spec"]["providerID"] == "scripted://w-1"
    assert n["status"]["addresses"] == [{"type": "InternalIP", "address": "10.1.0.1"},
                                        {"type": "Hostname", "address": "w-1"}]
    labels = n["metadata"]["labels"]
    assert labels["topology.kubernetes.io/zone"] == labels["failure-domain.beta.kubernetes.io/zone"] == "z1"
    assert labels["node.kubernetes.io/instance-type"] == labels["beta.kubernetes.io/instance-type"] == "m1"
    ev = wait_until(lambda: events(api, "w-1", "Synced"), what="Synced event")
    assert "cloud provider" in ev[0]["message"] and "fallback" not in ev[0]["message"]
    # exactly two writes: the status, then the Node
    w = node_writes(api, "w-1", ok=2)
    assert [r["path"] for r in w] == ["/api/v1/nodes/w-1/status", "/api/v1/nodes/w-1"], w


def test_existing_provider_id_is_never_replaced(api, driver):
    api.create_object(tainted("w-1", provider_id="scripted://kept"))
    driver({"instances": {"w-1": instance("w-1", "10.1.0.1")}}, "cp-1")
    wait_until(lambda: initialized(api, "w-1"), what="w-1 initialized")
    assert api.get_object("nodes", "w-1")["spec"]["providerID"] == "scripted://kept"


def test_a_replica_that_does_not_lead_touches_only_its_own_node(api, driver):
    api.create_object(tainted("cp-1"))
    api.create_object(tainted("w-1"))
    insts = {"cp-1": instance("cp-1", "10.0.0.1"), "w-1": instance("w-1", "10.0.0.2")}
    d = driver({"instances": insts}, "cp-1", "--leading", "0")
    wait_until(lambda: initialized(api, "cp-1"), what="cp-1 initialized")
    time.sleep(1.0)
    assert not initialized(api, "w-1")
    assert node_writes(api, "w-1") == []
    d.stop()


def test_conflict_rereads_the_node_and_still_initializes(api, driver):
    api.create_object(tainted("w-1"))
    # the first status write meets a conflict, as when the kubelet wrote the
    # Node between the cache's view and ours
    api.inject_fault("/api/v1/nodes/w-1/status", status=409, count=1, method="PATCH")
    driver({"instances": {"w-1": instance("w-1", "10.1.0.1")}}, "cp-1")
    wait_until(lambda: initialized(api, "w-1"), what="w-1 initialized after a conflict")
    n = api.get_object("nodes", "w-1")
    assert n["status"]["addresses"][0] == {"type": "InternalIP", "address": "10.1.0.1"}
    ok = [r for r in node_writes(api, "w-1", ok=2) if r["code"] < 300]
    assert [r["path"] for r in ok] == ["/api/v1/nodes/w-1/status", "/api/v1/nodes/w-1"], ok


def test_a_bad_provided_node_ip_keeps_the_taint_with_a_warning(api, driver):
    o = tainted("w-1")
    o["metadata"]["annotations"] = {"alpha.kubernetes.io/provided-node-ip": "10.9.9.9"}
    api.create_object(o)
    driver({"instances": {"w-1": instance("w-1", "10.1.0.1")}}, "cp-1")
    ev = wait_until(lambda: events(api, "w-1", "InitializationFailed"), what="warning")
    assert "10.9.9.9" in ev[0]["message"] and "not among" in ev[0]["message"], ev
    assert not initialized(api, "w-1")
    assert node_writes(api, "w-1") == []


def test_refresh_uses_the_batched_listing(api, driver):
    names = ["n%02d" % i for i in range(25)]
    for i, name in enumerate(names):
        o = tainted(name)
        o["spec"]["taints"] = TAINTS[1:]   # already initialized
        o["spec"]["providerID"] = "scripted://" + name
        api.create_object(o)
    insts = {name: instance(name, "10.2.0.%d" % (i + 1)) for i, name in enumerate(names)}
    d = driver({"instances": insts}, "cp-1", "--list", "1", "--page", "10",
               "--refresh", "1s")
    wait_until(lambda: all(api.get_object("nodes", n).get("status", {}).get("addresses")
                           for n in names), timeout=15, what="every node's addresses refreshed")
    # addresses change in the cloud: the next period writes the new ones
    insts["n03"]["addresses"] = [["InternalIP", "10.3.0.3"], ["Hostname", "n03"]]
    d.write({"instances": insts})
    wait_until(lambda: api.get_object("nodes", "n03")["status"]["addresses"][0]["address"]
               == "10.3.0.3", timeout=15, what="n03's new address")
    stats, _ = d.stop()
    assert stats["metadata_calls"] == 0, stats
    # three pages of ten per period, one listing per period
    assert stats["list_calls"] >= 2 and stats["list_pages"] == 3 * stats["list_calls"], stats


def test_local_node_does_not_wait_for_the_initial_list(api, driver):
    """The node a replica runs on is read and initialized directly: a slow
    initial LIST (thousands of Nodes) does not hold it back."""
    api.create_object(tainted("cp-1"))
    api.create_object(tainted("w-1"))
    api.inject_fault("/api/v1/nodes", verb="list", delay=4.0, count=None)
    t0 = time.monotonic()
    driver({"instances": {"cp-1": instance("cp-1", "10.0.0.1"),
                          "w-1": instance("w-1", "10.0.0.2")}}, "cp-1")
    wait_until(lambda: initialized(api, "cp-1"), what="cp-1 initialized")
    took = time.monotonic() - t0
    assert took < 3.0, "the local node waited %.1fs, as long as the LIST" % took
    assert not initialized(api, "w-1")  # the others come with the cache
    api.clear_faults()
    wait_until(lambda: initialized(api, "w-1"), timeout=15, what="w-1 initialized")
    # the cache's older copy of cp-1 was not written over again
    w = node_writes(api, "cp-1")
    assert [(r["path"], r["code"]) for r in w] == [("/api/v1/nodes/cp-1/status", 200),
                                                   ("/api/v1/nodes/cp-1", 200)], w


def test_local_node_forbidden_or_not_registered_yet_is_retried_soon(api, driver):
    """Until the cache has synced, the local node's sync reads it directly; a
    Node the API server does not let us read yet (403: the RBAC binding is not
    there) or does not have yet (404: the kubelet has not registered) is
    retried on the local node's short backoff (capped at 2 s), through the
    work queue, not left for the slow initial LIST."""
    api.create_object(tainted("w-1"))
    api.inject_fault("/api/v1/nodes", verb="list", delay=6.0, count=None)
    api.inject_fault("/api/v1/nodes/cp-1", status=403, count=2, method="GET")
    seq = api.log_seq()
    driver({"instances": {"cp-1": instance("cp-1", "10.0.0.1"),
                          "w-1": instance("w-1", "10.0.0.2")}}, "cp-1")
    wait_until(lambda: [r for r in api.request_log(seq) if r["method"] == "GET"
                        and r["path"] == "/api/v1/nodes/cp-1" and r["code"] == 404],
               what="a read of the unregistered cp-1")
    api.create_object(tainted("cp-1"))
    t0 = time.monotonic()
    wait_until(lambda: initialized(api, "cp-1"), what="cp-1 initialized")
    took = time.monotonic() - t0
    assert took < 3.0, "cp-1 initialized %.1fs after it registered" % took
    assert not initialized(api, "w-1")  # the LIST is still on its way
    gets = [r["code"] for r in api.request_log(seq) if r["method"] == "GET"
            and r["path"] == "/api/v1/nodes/cp-1"]
    assert gets[:2] == [403, 403] and gets[2] == 404 and gets[-1] == 200, gets
    api.clear_faults()
    wait_until(lambda: initialized(api, "w-1"), timeout=15, what="w-1 initialized")
    w = node_writes(api, "cp-1")
    assert [(r["path"], r["code"]) for r in w] == [("/api/v1/nodes/cp-1/status", 200),
                                                   ("/api/v1/nodes/cp-1", 200)], w


def test_a_version_written_over_is_not_written_again_when_the_watch_is_late(api, driver):
    """The interleaving an API server at 5,000 nodes and QPS 1,000 produced:
    the watch brings the status write's version only after the untaint has
    been answered (the fake holds the stream back), that version re-queues
    the Node, and the untaint's own version arrives while a worker holds the
    status write's copy read from the cache (the driver waits there for it).
    That copy is one this replica has written over: nothing more is written.
    Before, it was taken for fresh and the same JSON patch went out behind a
    test of its resourceVersion: 422, then a GET."""
    api.create_object(tainted("w-1"))
    seq = api.log_seq()
    api.hold_watch("nodes", "w-1", until=("PATCH", "/api/v1/nodes/w-1"))
    d = driver({"instances": {"w-1": instance("w-1", "10.1.0.1")}}, "cp-1",
               "--hold-reads", "1", "--workers", "4")
    wait_until(lambda: initialized(api, "w-1"), what="w-1 initialized")
    status_rv = None
    for r in api.request_log(seq):
        if r["method"] == "PATCH" and r["path"] == "/api/v1/nodes/w-1":
            # the untaint's test names the status write's resourceVersion
            status_rv = r["body"][0]["value"]
    assert status_rv is not None
    # the held events went out after the untaint's answer; the status
    # write's version re-queued w-1 and its copy was overtaken while held
    wait_until(lambda: api.watch_holds() == [], what="the watch released")
    e = d.wait_line(lambda e: e["event"] == "superseded" and e["read"][0] == "w-1")
    assert e["read"][1] == status_rv, e
    # whatever the worker wrote from that copy is in the log once it is
    # done with it
    d.wait_line(lambda e: e["event"] == "done" and e["node"] == "w-1" and e["rv"] == status_rv)
    stats, _ = d.stop()
    assert [s[1] for s in stats["superseded_reads"] if s[0] == "w-1"] == [status_rv], stats
    w = node_writes(api, "w-1")
    assert [(r["path"], r["code"]) for r in w] == [("/api/v1/nodes/w-1/status", 200),
                                                   ("/api/v1/nodes/w-1", 200)], w
    assert not [r for r in api.request_log(seq) if r["method"] == "GET"
                and r["path"] == "/api/v1/nodes/w-1"]
