"""The reflector against the fake API server (tests/drivers/drv_reflector.c):
every object created, changed or deleted while it watches reaches the
handlers and the cache, across dropped watches, compaction (410, re-list,
synthesized deletions), outages, paging, oversized events and objects the
decoder refuses."""

import datetime
import json
import os
import signal
import subprocess
import threading
import time

import pytest

from conftest import driver_path
from harness import wait_until
import apiserver

BOOKMARK_S = 0.5   # the fake's bookmark period (the real server's: about 1 min)


def node(name, labels=None, **extra):
    o = {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": name, "labels": labels or {}}}
    o.update(extra)
    return o


class Driver(object):
    """drv_reflector running in the background; its JSON lines collected."""

    def __init__(self, srv, tmp, *args):
        self.kubeconfig = os.path.join(tmp, "kubeconfig")
        srv.write_kubeconfig(self.kubeconfig, tls_server_name="kubernetes")
        self.err_path = os.path.join(tmp, "driver.err")
        self.err = open(self.err_path, "w")
        self.lines = []
        self.cond = threading.Condition()
        self.proc = subprocess.Popen(
            [driver_path("drv_reflector"), self.kubeconfig] + list(args),
            stdout=subprocess.PIPE, stderr=self.err, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.final = None

    def _read(self):
        for line in self.proc.stdout:
            ev = json.loads(line)
            with self.cond:
                self.lines.append(ev)
                self.cond.notify_all()

    def events(self, kind=None):
        with self.cond:
            return [e for e in self.lines if kind is None or e["event"] == kind]

    def wait(self, pred, timeout=10.0, what="condition"):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                r = pred(self.lines)
                if r:
                    return r
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError("no %s within %ss; driver lines:\n%s\nstderr:\n%s"
                                         % (what, timeout, "\n".join(map(json.dumps, self.lines[-30:])),
                                            self.stderr()[-4000:]))
                self.cond.wait(min(left, 0.1))

    def wait_event(self, kind, key, timeout=10.0, pred=None):
        def find(lines):
            for e in lines:
                if e["event"] == kind and e["object"]["key"] == key and \
                        (pred is None or pred(e)):
                    return e
            return None
        return self.wait(find, timeout, "%s of %s" % (kind, key))

    def wait_synced(self, timeout=10.0):
        return self.wait(lambda ls: next((e for e in ls if e["event"] == "synced"), None),
                         timeout, "synced")

    def stderr(self):
        if not self.err.closed:
            self.err.flush()
        with open(self.err_path) as f:
            return f.read()

    def stop(self):
        if self.final is None:
            self.proc.send_signal(signal.SIGTERM)
            rc = self.proc.wait(15)
            self.reader.join(5)
            self.err.close()
            err = self.stderr()
            assert "ERROR: AddressSanitizer" not in err, err
            assert "runtime error:" not in err, err
            assert "WARNING: ThreadSanitizer" not in err, err
            assert rc == 0, "driver exited %s:\n%s" % (rc, err)
            store = self.events("store")[0]
            self.final = {
                "store": {o["key"]: o for o in store["items"]},
                "bytes": store["bytes"],
                "counts": store["counts"],
                "metrics": self.events("metrics")[0]["lines"],
                "stop": self.events("exit")[0]["stopSeconds"],
            }
            # a stop aborts the request in progress
            assert self.final["stop"] < 1.5, self.final["stop"]
            # the second handler set heard of every change the first did
            calls = {k: len(self.events(k)) for k in ("add", "update", "delete")}
            assert self.final["counts"] == calls, (self.final["counts"], calls)
        return self.final

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def srv():
    with apiserver.FakeAPIServer(bookmark_interval=BOOKMARK_S) as s:
        yield s


@pytest.fixture
def drivers():
    started = []
    yield started
    for d in started:
        d.kill()


def start(drivers, srv, tmp, *args):
    d = Driver(srv, tmp, *args)
    drivers.append(d)
    return d


def metric(final, name, **labels):
    want = {'%s="%s"' % kv for kv in labels.items()}
    for line in final["metrics"]:
        head, _, value = line.rpartition(" ")
        mname, _, rest = head.partition("{")
        if mname == name and set(rest.rstrip("}").split(",")) - {""} == want:
            return float(value)
    return 0.0


def server_state(srv, resource="nodes"):
    out = {}
    for o in srv.list_objects(resource):
        md = o["metadata"]
        key = md["name"] if resource == "nodes" else "%s/%s" % (md["namespace"], md["name"])
        out[key] = md["resourceVersion"]
    return out


def assert_store_matches(srv, final, resource="nodes"):
    assert {k: o["rv"] for k, o in final["store"].items()} == server_state(srv, resource)


def watch_rv(entry):
    return int(entry["query"].split("resourceVersion=")[1].split("&")[0])


def requests(srv, verb, since=0):
    return [e for e in srv.request_log(since=since)
            if e["verb"] == verb and e["path"].startswith("/api/v1/")]


def test_list_then_watch_delivers_every_change(srv, tmp, drivers):
    srv.create_object(node("cp-1", {"node-role.kubernetes.io/control-plane": ""},
                           spec={"providerID": "hcloud://42", "podCIDRs": ["10.244.0.0/24"],
                                 "taints": [{"key": "node.cloudprovider.kubernetes.io/uninitialized",
                                             "value": "true", "effect": "NoSchedule"}]}))
    st = srv.get_object("nodes", "cp-1")
    st["status"] = {"addresses": [{"type": "InternalIP", "address": "10.0.0.2"},
                                  {"type": "InternalIP", "address": "10.0.0.3"}],
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "images": [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 320368}]}
    srv.update_object(st, subresource="status")
    for n in ("w-1", "w-2"):
        srv.create_object(node(n))
    d = start(drivers, srv, tmp)
    synced = d.wait_synced()
    assert synced["objects"] == 3
    lines = d.events()
    assert [e["event"] for e in lines[:4]] == ["add", "add", "add", "synced"]
    cp = d.wait_event("add", "cp-1")["object"]
    assert cp["providerID"] == "hcloud://42"
    assert cp["labels"] == {"node-role.kubernetes.io/control-plane": ""}
    assert cp["taints"] == [{"key": "node.cloudprovider.kubernetes.io/uninitialized",
                             "value": "true", "effect": "NoSchedule"}]
    assert cp["addresses"] == [{"type": "InternalIP", "address": "10.0.0.2"},
                               {"type": "InternalIP", "address": "10.0.0.3"}]
    assert cp["podCIDRs"] == ["10.244.0.0/24"]
    assert cp["ready"] == "True"
    assert cp["uid"] == srv.get_object("nodes", "cp-1")["metadata"]["uid"]

    srv.create_object(node("w-3"))
    w1 = srv.get_object("nodes", "w-1")
    w1["metadata"]["labels"]["pool"] = "a"
    srv.update_object(w1)
    srv.delete_object("nodes", "w-2")
    d.wait_event("add", "w-3")
    upd = d.wait_event("update", "w-1")
    assert upd["object"]["labels"] == {"pool": "a"}
    assert upd["old"]["rv"] == w1["metadata"]["resourceVersion"]
    d.wait_event("delete", "w-2")
    final = d.stop()
    assert_store_matches(srv, final)
    # each version delivered once
    seen = [(e["event"], e["object"]["key"], e["object"]["rv"]) for e in d.events()
            if e["event"] in ("add", "update", "delete")]
    assert len(seen) == len(set(seen)) == 6
    assert len(requests(srv, "list")) == 1
    assert metric(final, "bootccm_reflector_store_objects", resource="nodes") == 3
    assert metric(final, "bootccm_reflector_synced", resource="nodes") == 1
    assert metric(final, "bootccm_reflector_lists_total", resource="nodes") == 1
    assert metric(final, "bootccm_reflector_relists_total", resource="nodes") == 0
    assert final["bytes"] == sum(o["size"] for o in final["store"].values())


def test_paging_yields_every_object_once(srv, tmp, drivers):
    for i in range(23):
        srv.create_object(node("n-%02d" % i))
    d = start(drivers, srv, tmp, "--limit", "5")
    assert d.wait_synced()["objects"] == 23
    adds = [e["object"]["key"] for e in d.events("add")]
    assert sorted(adds) == ["n-%02d" % i for i in range(23)]
    lists = requests(srv, "list")
    assert len(lists) == 5
    assert "continue=" not in lists[0]["query"] and "limit=5" in lists[0]["query"]
    assert all("continue=" in e["query"] for e in lists[1:])
    final = d.stop()
    assert_store_matches(srv, final)


def test_default_page_limit_over_500(srv, tmp, drivers):
    for i in range(1001):
        srv.create_object(node("n-%04d" % i))
    d = start(drivers, srv, tmp)
    assert d.wait_synced(30)["objects"] == 1001
    assert len({e["object"]["key"] for e in d.events("add")}) == len(d.events("add")) == 1001
    lists = requests(srv, "list")
    assert len(lists) == 3 and all("limit=500" in e["query"] for e in lists)
    d.stop()


def test_expired_continue_token_restarts_the_list(srv, tmp, drivers):
    for i in range(6):
        srv.create_object(node("n-%d" % i))
    srv.inject_fault("/api/v1/nodes", verb="list", count=1)              # page 1 as is
    srv.inject_fault("/api/v1/nodes", verb="list", count=1, delay=1.5)   # page 2 late
    d = start(drivers, srv, tmp, "--limit", "2")
    srv.wait_for_request(lambda e: e["verb"] == "list", timeout=10)
    srv.delete_object("nodes", "n-5")
    srv.compact()
    d.wait_synced()
    lists = requests(srv, "list")
    assert [e["code"] for e in lists[:2]] == [200, 410]
    assert "continue=" not in lists[2]["query"]
    assert sorted(e["object"]["key"] for e in d.events("add")) == ["n-%d" % i for i in range(5)]
    final = d.stop()
    assert_store_matches(srv, final)
    assert metric(final, "bootccm_reflector_errors_total", resource="nodes", kind="expired") == 1


def test_has_synced_only_after_the_initial_list(srv, tmp, drivers):
    srv.create_object(node("a"))
    srv.inject_fault("/api/v1/nodes", verb="list", count=1, delay=1.0)
    t0 = time.monotonic()
    d = start(drivers, srv, tmp)
    d.wait_synced()
    assert time.monotonic() - t0 >= 1.0
    assert [e["event"] for e in d.events()][:2] == ["add", "synced"]
    d.stop()


@pytest.mark.parametrize("how", ["reset", "end", "abort"])
def test_dropped_watch_rewatches_from_last_version(srv, tmp, drivers, how):
    srv.create_object(node("a"))
    d = start(drivers, srv, tmp, "--backoff-min", "100ms", "--backoff-max", "300ms")
    d.wait_synced()
    srv.create_object(node("b"))
    b_rv = d.wait_event("add", "b")["object"]["rv"]
    seq = srv.log_seq()
    if how == "abort":
        # the next two watch requests are cut off before any answer
        srv.inject_fault("/api/v1/nodes", verb="watch", abort=True, count=2)
        srv.reset_connections()
    elif how == "reset":
        srv.reset_connections()
    else:
        srv.end_watches()
    # changes while the stream is down
    srv.create_object(node("c"))
    srv.delete_object("nodes", "a")
    bn = srv.get_object("nodes", "b")
    bn["metadata"]["labels"] = {"x": "y"}
    srv.update_object(bn)
    d.wait_event("add", "c")
    d.wait_event("delete", "a")
    d.wait_event("update", "b", pred=lambda e: e["object"]["labels"] == {"x": "y"})
    final = d.stop()
    assert_store_matches(srv, final)
    # re-watched from the last version seen (the watch is logged when it
    # ends), never re-listed
    srv.wait_for_request(lambda e: e["verb"] == "watch" and
                         watch_rv(e) >= int(b_rv), since=seq)
    assert len(requests(srv, "list")) == 1
    if how == "abort":
        watches = requests(srv, "watch", since=seq)
        assert sum(1 for e in watches if e.get("aborted")) == 2, watches


def test_compaction_while_down_relists_and_synthesizes_deletes(srv, tmp, drivers):
    for n in ("a", "b", "c"):
        srv.create_object(node(n))
    d = start(drivers, srv, tmp, "--backoff-min", "100ms", "--backoff-max", "300ms",
              "-v", "1")
    d.wait_synced()
    fid = srv.inject_fault("/api/v1/nodes", verb="watch", abort=True, count=None)
    seq = srv.log_seq()
    srv.reset_connections()
    # the watch that was open has ended before anything changes
    srv.wait_for_request(lambda e: e["verb"] == "watch", since=seq)
    srv.delete_object("nodes", "a")
    b = srv.get_object("nodes", "b")
    b["metadata"]["labels"] = {"v": "2"}
    srv.update_object(b)
    srv.create_object(node("d"))
    srv.compact()
    time.sleep(0.3)
    srv.clear_faults(fid)
    d.wait_event("delete", "a")
    d.wait_event("update", "b", pred=lambda e: e["object"]["labels"] == {"v": "2"})
    d.wait_event("add", "d")
    # c did not change: no event for it
    assert not [e for e in d.events() if e["event"] != "synced" and
                e["object"]["key"] == "c" and e["event"] != "add"]
    final = d.stop()
    assert_store_matches(srv, final)
    assert len(requests(srv, "list")) == 2
    assert metric(final, "bootccm_reflector_relists_total", resource="nodes") == 1
    assert metric(final, "bootccm_reflector_errors_total", resource="nodes", kind="expired") == 1
    assert "Watch expired: re-listing" in d.stderr()
    assert "too old resource version" in d.stderr()


def test_410_answer_to_a_watch_relists(srv, tmp, drivers):
    srv.create_object(node("a"))
    srv.inject_fault("/api/v1/nodes", verb="watch", status=410, count=1)
    d = start(drivers, srv, tmp, "--backoff-min", "100ms", "--backoff-max", "300ms")
    d.wait_synced()
    d.wait(lambda ls: len(requests(srv, "list")) == 2, what="a second list")
    srv.create_object(node("b"))
    d.wait_event("add", "b")
    final = d.stop()
    assert_store_matches(srv, final)
    # the re-list found nothing new: "a" was delivered once
    assert len([e for e in d.events("add") if e["object"]["key"] == "a"]) == 1


def log_time(entry):
    """A request log entry's start, in seconds since the epoch."""
    return datetime.datetime.strptime(entry["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def outage_test(srv, tmp, drivers, seconds, mode, backoff_max):
    for n in ("a", "b"):
        srv.create_object(node(n))
    d = start(drivers, srv, tmp, "--backoff-min", "200ms", "--backoff-max", backoff_max)
    d.wait_synced()
    # the watch that follows the list is established (answered, registered
    # with the store) before the outage begins: sent a moment after "synced",
    # it could otherwise still be in flight when the outage resets its
    # connection, and be the first request logged after t_begin
    deadline = time.time() + 10
    while not srv.store.watchers:
        assert time.time() < deadline, "no watch after the list"
        time.sleep(0.01)
    before = d.events()
    t_begin = time.time()
    srv.outage(seconds, mode)
    t_end = time.time() + seconds   # the outage ends between t_begin + seconds and this
    # the API server's storage changes while nothing answers
    c_rv = int(srv.create_object(node("c"))["metadata"]["resourceVersion"])
    srv.delete_object("nodes", "a")
    bn = srv.get_object("nodes", "b")
    bn["metadata"]["labels"] = {"during": "outage"}
    srv.update_object(bn)
    during = before
    while True:
        seen = d.events()
        if not srv.in_outage():
            break
        during = seen   # delivered while the outage still lasted
        time.sleep(0.1)
    d.wait_event("add", "c", timeout=10)
    d.wait_event("delete", "a", timeout=10)
    d.wait_event("update", "b", timeout=10,
                 pred=lambda e: e["object"]["labels"] == {"during": "outage"})
    # nothing reached the handlers while the API server did not answer
    assert during == before, during[len(before):]
    srv.create_object(node("after"))
    d.wait_event("add", "after")
    final = d.stop()
    assert_store_matches(srv, final)
    assert len(requests(srv, "list")) == 1
    assert metric(final, "bootccm_reflector_errors_total", resource="nodes", kind="watch") >= 1
    # the recovery: the first request after the outage began is a watch (not a
    # list) from a resourceVersion older than the first change made during
    # the outage, so that the changes were replayed to it; sent once the API
    # server answered again, at most one capped backoff (--backoff-max) later,
    # with 2 s to spare for a loaded machine (doubling from 200 ms without the
    # cap, the reflector would come back 21 s after a 30 s outage)
    # (a watch is logged when it ends: the driver's stop ends the last one)
    # (a request that raced the outage's start, a re-watch over a connection
    # the outage was closing, is logged cut: no answer, or the fake's own
    # error on the torn connection; nothing was answered until the end)
    srv.wait_for_request(lambda e: e["verb"] == "watch" and log_time(e) >= t_begin + seconds)
    log = srv.request_log()
    cut = [e for e in log if t_begin <= log_time(e) < t_begin + seconds]
    assert all(e["code"] == 0 or "error" in e for e in cut), cut
    after = sorted((e for e in log if log_time(e) >= t_begin + seconds), key=log_time)
    first = after[0]
    assert first["verb"] == "watch" and first["code"] == 200, after
    assert watch_rv(first) < c_rv, (first, c_rv)
    cap = float(backoff_max.rstrip("s"))
    assert t_begin + seconds <= log_time(first) <= t_end + cap + 2.0, \
        (log_time(first) - (t_begin + seconds), first)


def test_short_outage(srv, tmp, drivers):
    outage_test(srv, tmp, drivers, 3, "refuse", "1s")


def test_30s_outage(srv, tmp, drivers):
    outage_test(srv, tmp, drivers, 30, "reset", "2s")


def test_watch_line_over_the_cap_relists(srv, tmp, drivers):
    srv.create_object(node("a"))
    d = start(drivers, srv, tmp, "--line-max", "4096",
              "--backoff-min", "100ms", "--backoff-max", "300ms")
    d.wait_synced()
    big = node("big")
    big["metadata"]["annotations"] = {"blob": "x" * 8192}
    srv.create_object(big)
    d.wait(lambda ls: len(requests(srv, "list")) == 2, what="a re-list")
    srv.create_object(node("after"))
    d.wait_event("add", "after")
    # back under the cap: the next change of it arrives like any other
    big = srv.get_object("nodes", "big")
    big["metadata"]["annotations"] = {"blob": "small"}
    srv.update_object(big)
    d.wait_event("add", "big")
    final = d.stop()
    assert sorted(final["store"]) == ["a", "after", "big"]
    assert_store_matches(srv, final)
    err = d.stderr()
    assert "a watch event longer than 4096 bytes" in err
    assert metric(final, "bootccm_reflector_errors_total", resource="nodes", kind="stream") == 1
    assert metric(final, "bootccm_reflector_relists_total", resource="nodes") == 1


def test_bad_objects_are_skipped_and_logged_once(srv, tmp, drivers):
    srv.create_object(node("good"))
    # objects no validating API server would store, put straight into storage
    bad = node("bad", spec={"taints": [{"key": "k", "effect": 5}]})
    srv.store.create(("", "nodes"), bad)
    nameless = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "x", "labels": []}}
    srv.store.create(("", "nodes"), nameless)
    d = start(drivers, srv, tmp, "--resync", "300ms")
    assert d.wait_synced()["objects"] == 1
    srv.create_object(node("later"))
    d.wait_event("add", "later")
    time.sleep(0.8)  # a few resyncs: they must not log again
    final = d.stop()
    assert sorted(final["store"]) == ["good", "later"]
    err = d.stderr()
    lines = [l for l in err.splitlines() if "Skipping an object" in l]
    assert len(lines) == 2, err
    assert any('object="bad"' in l and "spec.taints[0].effect: expected a string" in l
               for l in lines), lines
    assert any('object="x"' in l and "metadata.labels: expected an object" in l
               for l in lines), lines
    assert metric(final, "bootccm_reflector_errors_total", resource="nodes", kind="object") == 2


def test_bad_version_keeps_the_last_good_one(srv, tmp, drivers):
    srv.create_object(node("n", {"v": "1"}))
    d = start(drivers, srv, tmp)
    d.wait_synced()
    cur = srv.get_object("nodes", "n")
    cur["metadata"]["labels"] = {"v": 2}
    srv.store.update(("", "nodes"), cur)
    srv.create_object(node("m"))
    d.wait_event("add", "m")
    final = d.stop()
    assert final["store"]["n"]["labels"] == {"v": "1"}
    assert not d.events("update") and not d.events("delete")


def test_label_selector(srv, tmp, drivers):
    srv.create_object(node("w-1", {"role": "worker"}))
    srv.create_object(node("cp-1", {"role": "control-plane"}))
    d = start(drivers, srv, tmp, "--label-selector", "role=worker")
    assert d.wait_synced()["objects"] == 1
    srv.create_object(node("w-2", {"role": "worker"}))
    d.wait_event("add", "w-2")
    # stops matching: a deletion; starts matching: an addition
    w1 = srv.get_object("nodes", "w-1")
    w1["metadata"]["labels"]["role"] = "gone"
    srv.update_object(w1)
    d.wait_event("delete", "w-1")
    cp = srv.get_object("nodes", "cp-1")
    cp["metadata"]["labels"]["role"] = "worker"
    srv.update_object(cp)
    d.wait_event("add", "cp-1")
    final = d.stop()
    assert sorted(final["store"]) == ["cp-1", "w-2"]
    for e in requests(srv, "list") + requests(srv, "watch"):
        assert "labelSelector=role%3Dworker" in e["query"], e["query"]


def test_stop_is_prompt_on_an_idle_watch(tmp, drivers):
    # bookmarks only once a minute, as from the real server
    with apiserver.FakeAPIServer() as slow:
        slow.create_object(node("a"))
        d = start(drivers, slow, tmp)
        d.wait_synced()
        time.sleep(1.5)   # the watch is idle
        final = d.stop()
        assert final["stop"] < 1.5, final["stop"]
        assert sorted(final["store"]) == ["a"]


def test_empty_list(srv, tmp, drivers):
    srv.create_object(node("a", {"role": "worker"}))
    d = start(drivers, srv, tmp, "--label-selector", "role=gpu")
    assert d.wait_synced()["objects"] == 0
    srv.create_object(node("g", {"role": "gpu"}))
    d.wait_event("add", "g")
    final = d.stop()
    assert sorted(final["store"]) == ["g"]


def test_field_selector(srv, tmp, drivers):
    srv.create_object(node("a"))
    srv.create_object(node("b"))
    d = start(drivers, srv, tmp, "--field-selector", "metadata.name=b")
    assert d.wait_synced()["objects"] == 1
    final = d.stop()
    assert sorted(final["store"]) == ["b"]


def test_resync_redelivers_every_object(srv, tmp, drivers):
    for n in ("a", "b"):
        srv.create_object(node(n))
    d = start(drivers, srv, tmp, "--resync", "500ms")
    d.wait_synced()

    def resynced(lines):
        ups = [e for e in lines if e["event"] == "update" and
               e["old"]["rv"] == e["object"]["rv"]]
        return len({e["object"]["key"] for e in ups}) == 2 and ups
    d.wait(resynced, timeout=5, what="a resync")
    final = d.stop()
    assert metric(final, "bootccm_reflector_resyncs_total", resource="nodes") >= 1


def test_services(srv, tmp, drivers):
    srv.create_object({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "default",
                     "annotations": {"example.com/lb": "yes"}},
        "spec": {"type": "LoadBalancer", "loadBalancerClass": "bootccm.io/lb",
                 "externalTrafficPolicy": "Local",
                 "ports": [{"name": "http", "port": 80, "targetPort": "web"}],
                 "selector": {"app": "web"}}})
    d = start(drivers, srv, tmp, "--resource", "services")
    synced = d.wait_synced()
    assert synced["objects"] == 2
    k = d.wait_event("add", "default/kubernetes")["object"]
    assert k["type"] == "ClusterIP" and k["ports"][0]["port"] == 443
    web = d.wait_event("add", "default/web")["object"]
    assert web["type"] == "LoadBalancer"
    assert web["loadBalancerClass"] == "bootccm.io/lb"
    assert web["externalTrafficPolicy"] == "Local"
    assert web["healthCheckNodePort"] > 0
    assert web["ports"][0]["targetPort"] == "web"
    assert 30000 <= web["ports"][0]["nodePort"] <= 32767
    assert web["annotations"] == {"example.com/lb": "yes"}
    assert web["ipFamilies"] == 1
    st = srv.get_object("services", "web", namespace="default")
    st["status"] = {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}
    srv.update_object(st, subresource="status")
    upd = d.wait_event("update", "default/web")
    assert upd["object"]["ingress"] == [{"ip": "203.0.113.7", "hostname": None,
                                         "ipMode": "VIP"}]
    srv.delete_object("services", "web", namespace="default")
    d.wait_event("delete", "default/web")
    final = d.stop()
    assert_store_matches(srv, final, "services")


def test_waits_for_the_api_server(srv, tmp, drivers):
    srv.create_object(node("a"))
    srv.outage(600, "refuse")  # until ended below, whatever the machine's load
    d = start(drivers, srv, tmp, "--backoff-min", "200ms", "--backoff-max", "500ms")
    # two refused lists: it retries, and is not synced meanwhile
    wait_until(lambda: d.stderr().count('"Failed to list"') >= 2, timeout=30,
               what="two failed lists")
    assert not d.events("synced")
    srv.end_outage()
    d.wait_synced(10)
    final = d.stop()
    assert metric(final, "bootccm_reflector_errors_total", resource="nodes", kind="list") >= 1
    assert_store_matches(srv, final)
