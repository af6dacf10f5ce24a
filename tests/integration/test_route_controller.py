"""The route controller against the fake API server, through
tests/drivers/drv_routectl.c and its scripted route provider (an in-memory
route table the test seeds and reads, failures injected per call, creates
held at a gate, every call reported as a JSON line): a route per podCIDR
with its target Node, dual-stack; stale and blackholed routes inside the
cluster CIDR deleted, routes outside it never touched; the
NetworkUnavailable condition written once, never rewritten unchanged, and
never over a CNI's; a podCIDR outside the cluster CIDR is an Event and no
route; a failed listing changes nothing and the next pass retries; Node
events trigger a pass at once, at most one per period; at most
--concurrent-route-syncs provider calls in flight; leadership stops and
restarts it. The driver runs as system:cloud-controller-manager under the
shipped RBAC role."""

import json
import os
import subprocess
import threading
import time

import pytest

from conftest import driver_path, load_rbac, wait_until
from conftest import events_about
from test_nodelifecycle import Lifecycle

USER = "system:cloud-controller-manager"
CIDR4 = "10.244.0.0/16"
CIDR6 = "fd00:10:244::/56"


def node(name, cidrs=None, conditions=None):
    """A Node as its kubelet and the CIDR allocator left it."""
    o = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
         "spec": {}, "status": {
             "addresses": [{"type": "InternalIP", "address": "192.168.0.%d" % (len(name) + 10)}],
             "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                             "lastHeartbeatTime": "2026-11-21T08:00:00Z",
                             "lastTransitionTime": "2026-11-21T08:00:00Z"}]}}
    if cidrs:
        o["spec"]["podCIDRs"] = list(cidrs)
        o["spec"]["podCIDR"] = cidrs[0]
    if conditions:
        o["status"]["conditions"] += conditions
    return o


def set_pod_cidrs(api, name, cidrs):
    """What the CIDR allocator does after the kubelet registered the Node."""
    o = api.get_object("nodes", name)
    o["spec"]["podCIDRs"] = list(cidrs)
    o["spec"]["podCIDR"] = cidrs[0]
    api.update_object(o)


def network_unavailable(api, name):
    for c in api.get_object("nodes", name)["status"].get("conditions", []):
        if c["type"] == "NetworkUnavailable":
            return c
    return None


def status_writes(api, name=None, since=0):
    return [w for w in api.writes(since) if w["resource"] == "nodes" and
            w.get("subresource") == "status" and (name is None or w["name"] == name)]


def node_events(api, reason):
    return events_about(api, "Node", None, reason)


class Routes(Lifecycle):
    """drv_routectl running in the background, its JSON lines collected: the
    lifecycle driver's runner (waits on the lines, a sanitizer-clean stop)
    with this driver's command line and stdin commands."""

    def __init__(self, api, tmp, cloud, *args):
        load_rbac(api)
        kc = api.write_kubeconfig(os.path.join(tmp, "kubeconfig"), user=USER, groups=(),
                                  tls_server_name="kubernetes")
        seed = os.path.join(tmp, "seed.json")
        with open(seed, "w") as f:
            json.dump(cloud, f)
        self.err_path = os.path.join(tmp, "driver.err")
        self.err = open(self.err_path, "w")
        self.lines = []
        self.cond = threading.Condition()
        self.proc = subprocess.Popen(
            [driver_path("drv_routectl"), kc, "--seed", seed] + list(args),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.final = None
        self.rc = None
        self.wait(lambda: self.events("ready"), what="ready")

    def calls(self, op, phase=None, **match):
        return [e for e in self.events("call") if e["op"] == op and
                (phase is None or e.get("phase") == phase) and
                all(e.get(k) == v for k, v in match.items())]

    def cmd(self, **kw):
        """Send one command and wait for its answer."""
        kind = "table" if kw["cmd"] == "table" else "ok"
        with self.cond:
            before = len(self.events(kind))
        self.proc.stdin.write(json.dumps(kw) + "\n")
        self.proc.stdin.flush()
        return self.wait(lambda: self.events(kind)[before:], what="answer to %s" % kw)[0]

    def table(self):
        return sorted((r["target"], r["cidr"], r["blackhole"])
                      for r in self.cmd(cmd="table")["routes"])

    def syncs(self):
        """route_controller_route_sync_total now: {"OUTCOME/TRIGGER": n}."""
        got = self.events("pass")
        return got[-1]["syncs"] if got else {}


@pytest.fixture
def routes(api, tmp):
    started = []

    def start(*args, seed=(), fails=(), gate=False):
        """The driver with the cloud as it starts: its routes, the failures
        it will answer ("fail" commands) and whether creates are held."""
        d = Routes(api, tmp, {"routes": list(seed), "fails": list(fails), "gate": gate},
                   *args)
        started.append(d)
        return d

    yield start
    for d in started:
        d.kill()


def route(target, cidr, name=None, blackhole=False):
    return {"name": name or "seeded-%s-%s" % (target, cidr), "target": target, "cidr": cidr,
            "blackhole": blackhole}


def test_creates_a_route_per_pod_cidr_with_its_target_node(api, routes):
    api.create_object(node("a", ["10.244.1.0/24"]))
    api.create_object(node("b", ["10.244.2.0/24"]))
    api.create_object(node("bare"))   # no podCIDR yet: nothing to route
    uid = api.get_object("nodes", "a")["metadata"]["uid"]
    r = routes("--cluster-cidr", CIDR4, "--period", "0.3s")
    r.wait(lambda: len(r.calls("create", "end", rc="ok")) >= 2, what="two creates")
    assert r.table() == [("a", "10.244.1.0/24", False), ("b", "10.244.2.0/24", False)]
    begin, = r.calls("create", "begin", node="a")
    # the target Node travels with the create; its uid is the name hint
    assert begin["target"] == "a" and begin["targetCIDRs"] == ["10.244.1.0/24"]
    assert begin["hint"] == uid
    for name in ("a", "b"):
        api.wait_for_object("nodes", name, pred=lambda o: any(
            x["type"] == "NetworkUnavailable" for x in o["status"]["conditions"]), timeout=15)
        c = network_unavailable(api, name)
        assert (c["status"], c["reason"], c["message"]) == (
            "False", "RouteCreated", "RouteController created a route")
        assert c["lastTransitionTime"] == c["lastHeartbeatTime"]
        # the kubelet's conditions are kept
        assert api.get_object("nodes", name)["status"]["conditions"][0]["type"] == "Ready"
    assert network_unavailable(api, "bare") is None
    # one write per Node: a JSON patch behind a test of the resourceVersion
    r.wait_passes(2)
    writes = status_writes(api)
    assert sorted(w["name"] for w in writes) == ["a", "b"]
    for w in writes:
        assert w["verb"] == "patch" and w["user"] == USER and w["code"] == 200
        assert w["contentType"] == "application/json-patch+json"
        assert w["body"][0]["op"] == "test" and w["body"][0]["path"] == "/metadata/resourceVersion"
    # later passes: nothing more to do
    assert len(r.calls("create", "begin")) == 2
    assert r.calls("delete") == []
    assert all(c["rc"] == "ok" for c in r.calls("list"))


def test_deletes_stale_and_blackholed_routes_inside_the_cluster_cidr(api, routes):
    api.create_object(node("a", ["10.244.1.0/24"]))
    api.create_object(node("b", ["10.244.2.0/24"]))
    seed = [
        route("a", "10.244.1.0/24", "keep-a"),
        route("gone", "10.244.9.0/24", "stale-gone"),          # its Node is gone
        route("a", "10.244.7.0/24", "stale-a"),                # a's CIDR no more
        route("b", "10.244.2.0/24", "hole-b", blackhole=True), # b's instance was replaced
        route("", "10.244.8.0/24", "no-target"),
    ]
    r = routes("--cluster-cidr", CIDR4, "--period", "0.3s", seed=seed)
    r.wait(lambda: len(r.calls("delete", rc="ok")) >= 4, what="four deletes")
    r.wait(lambda: r.calls("create", "end", node="b", rc="ok"), what="b's route again")
    assert sorted(c["name"] for c in r.calls("delete")) == [
        "hole-b", "no-target", "stale-a", "stale-gone"]
    assert r.table() == [("a", "10.244.1.0/24", False), ("b", "10.244.2.0/24", False)]
    # deletes before creates in one pass: b's new route comes after its hole went
    hole, = r.calls("delete", name="hole-b")
    created, = r.calls("create", "begin", node="b")
    assert created["t"] >= hole["t"]
    assert r.calls("create", "begin", node="a") == []
    # the blackholed route never counted: b's condition says routed only
    # once its new route exists, in that same pass
    # (the fake logs a request once it has answered it: wait for the entry)
    wait_until(lambda: status_writes(api, "b"), what="b's condition written")
    r.wait_passes(2)
    assert network_unavailable(api, "b")["reason"] == "RouteCreated"
    assert len(status_writes(api, "b")) == 1


def test_routes_outside_the_cluster_cidr_are_left_alone(api, routes):
    api.create_object(node("a", ["10.244.1.0/24"]))
    seed = [
        route("a", "10.244.1.0/24", "ours"),
        route("other-cluster-node", "10.42.3.0/24", "theirs"),
        route("", "192.168.50.0/24", "vpn"),
        route("a", "10.244.0.0/8", "wider"),           # neither end inside: not ours
        route("x", "not-a-cidr", "odd"),
        route("gone", "10.42.4.0/24", "theirs-hole", blackhole=True),
    ]
    r = routes("--cluster-cidr", CIDR4, "--period", "0.2s", seed=seed)
    r.wait_passes(4)
    assert r.calls("delete") == [] and r.calls("create") == []
    assert len(r.table()) == 6


def test_dual_stack_two_routes_per_node(api, routes):
    api.create_object(node("ds", ["10.244.1.0/24", "fd00:10:244:1::/64"]))
    api.create_object(node("v4", ["10.244.2.0/24"]))
    api.create_object(node("v6", ["fd00:10:244:3::/64"]))
    # the cloud lists a's IPv6 route written its own way: the same prefix
    seed = [route("ds", "fd00:10:244:1:0::/64", "ds-v6")]
    r = routes("--cluster-cidr", "%s,%s" % (CIDR4, CIDR6), "--period", "0.3s", seed=seed)
    r.wait(lambda: len(r.calls("create", "end", rc="ok")) >= 3, what="three creates")
    r.wait_passes(2)
    assert sorted((c["node"], c["cidr"]) for c in r.calls("create", "begin")) == [
        ("ds", "10.244.1.0/24"), ("v4", "10.244.2.0/24"), ("v6", "fd00:10:244:3::/64")]
    assert r.calls("delete") == []
    assert len(r.table()) == 4
    for name in ("ds", "v4", "v6"):
        assert network_unavailable(api, name)["reason"] == "RouteCreated"


def test_a_new_node_gets_its_route_within_two_seconds(api, routes):
    api.create_object(node("a", ["10.244.1.0/24"]))
    # a period far longer than the test: only the event can explain a pass
    r = routes("--cluster-cidr", CIDR4, "--period", "5m")
    r.wait(lambda: r.calls("create", "end", node="a", rc="ok"), what="a's route")
    r.wait(lambda: r.passes() >= 1, what="the first pass")
    lists = len(r.calls("list"))
    # the kubelet registers it, then the allocator gives it its podCIDR
    api.create_object(node("new"))
    t0 = time.monotonic()
    set_pod_cidrs(api, "new", ["10.244.5.0/24"])
    got = r.wait(lambda: r.calls("create", "end", node="new", rc="ok"), timeout=10,
                 what="the new node's route")[0]
    assert got["t"] - t0 < 2.0, "route after %.2fs" % (got["t"] - t0)
    api.wait_for_object("nodes", "new", pred=lambda o: network_unavailable(api, "new"),
                        timeout=15)
    # one pass for the podCIDR; the registration alone triggered none
    assert len(r.calls("list")) == lists + 1


def test_a_deleted_nodes_route_goes_at_once(api, routes):
    api.create_object(node("a", ["10.244.1.0/24"]))
    api.create_object(node("b", ["10.244.2.0/24"]))
    seed = [route("a", "10.244.1.0/24", "a"), route("b", "10.244.2.0/24", "b")]
    r = routes("--cluster-cidr", CIDR4, "--period", "5m", seed=seed)
    r.wait(lambda: r.passes() >= 1, what="the first pass")
    t0 = time.monotonic()
    api.delete_object("nodes", "a")
    got = r.wait(lambda: r.calls("delete", name="a"), timeout=10, what="a's route deleted")[0]
    assert got["t"] - t0 < 2.0, "deleted after %.2fs" % (got["t"] - t0)
    assert r.table() == [("b", "10.244.2.0/24", False)]


def test_event_passes_are_rate_limited_to_one_per_period(api, routes):
    period = 3.0
    r = routes("--cluster-cidr", CIDR4, "--period", "%ss" % period)
    r.wait(lambda: r.passes() >= 1, what="the first pass")
    api.create_object(node("x", ["10.244.1.0/24"]))
    x = r.wait(lambda: r.calls("create", "end", node="x", rc="ok"), what="x's route")[0]
    # an event right after an event-triggered pass waits for the period
    # since that pass ended (which was after x's create)
    api.create_object(node("y", ["10.244.2.0/24"]))
    y = r.wait(lambda: r.calls("create", "begin", node="y"), timeout=period + 10,
               what="y's route")[0]
    assert y["t"] - x["t"] >= period, "y after %.2fs" % (y["t"] - x["t"])
    # the periodic passes go on
    n = len(r.calls("list"))
    r.wait(lambda: len(r.calls("list")) >= n + 2, timeout=4 * period + 10,
           what="periodic passes")


def test_condition_unchanged_is_not_written_and_a_cni_condition_is_left_alone(api, routes):
    cni = [{"type": "NetworkUnavailable", "status": "False", "reason": "CalicoIsUp",
            "message": "Calico is running on this node",
            "lastHeartbeatTime": "2026-11-21T08:00:00Z",
            "lastTransitionTime": "2026-11-21T08:00:00Z"}]
    api.create_object(node("calico", ["10.244.1.0/24"], cni))
    api.create_object(node("plain", ["10.244.2.0/24"]))
    api.create_object(node("cni-down", ["10.244.3.0/24"], [dict(
        cni[0], status="True", reason="CiliumIsDown", message="Cilium is not ready")]))
    # calico's route cannot be created: upstream writes True/NoRouteCreated
    # over Calico's condition (before 1.36 too: it compared the status only;
    # since 1.36 it writes False/RouteCreated over it as well); we never do
    r = routes("--cluster-cidr", CIDR4, "--period", "0.2s",
               fails=[{"op": "create", "cidr": "10.244.1.0/24", "count": -1}])
    r.wait(lambda: r.calls("create", "end", node="plain", rc="ok"), what="plain's route")
    api.wait_for_object("nodes", "plain", pred=lambda o: network_unavailable(api, "plain"),
                        timeout=15)
    r.wait(lambda: r.calls("create", "end", node="calico"), what="calico's failed create")
    r.wait_passes(4)
    assert network_unavailable(api, "calico") == cni[0]
    assert network_unavailable(api, "cni-down")["reason"] == "CiliumIsDown"
    assert network_unavailable(api, "plain")["reason"] == "RouteCreated"
    assert [w["name"] for w in status_writes(api)] == ["plain"]
    # its failures are Events, retried every pass
    assert len(r.calls("create", "end", node="calico")) >= 2
    ev = wait_until(lambda: node_events(api, "FailedToCreateRoute"), what="the Event")[0]
    assert ev["type"] == "Warning" and ev["involvedObject"]["name"] == "calico"
    assert "10.244.1.0/24" in ev["message"]


def test_condition_follows_route_creation_failures(api, routes):
    api.create_object(node("w", ["10.244.4.0/24"]))
    r = routes("--cluster-cidr", CIDR4, "--period", "0.3s",
               fails=[{"op": "create", "count": -1, "code": "rate-limited"}])
    r.wait(lambda: r.calls("create", "end", rc="too many requests"), what="a failed create")
    # (the fake logs a request once it has answered it: wait for the entry)
    wait_until(lambda: status_writes(api, "w"), what="w's condition written")
    c = network_unavailable(api, "w")
    assert c["reason"] == "NoRouteCreated"
    assert (c["status"], c["message"]) == ("True", "RouteController failed to create a route")
    seq = api.log_seq()
    r.wait_passes(3)
    assert status_writes(api, "w", seq) == []     # unchanged: not written again
    r.cmd(cmd="clear")
    r.wait(lambda: r.calls("create", "end", node="w", rc="ok"), what="the route at last")
    wait_until(lambda: status_writes(api, "w", seq), what="w's condition rewritten")
    r.wait_passes(2)
    c2 = network_unavailable(api, "w")
    assert (c2["status"], c2["reason"]) == ("False", "RouteCreated")
    assert c2["lastTransitionTime"] >= c["lastTransitionTime"]
    writes = status_writes(api, "w", seq)
    # the condition exists now: read, then replaced in place
    assert len(writes) == 1 and writes[0]["body"][1]["op"] == "replace"
    assert [x["type"] for x in api.get_object("nodes", "w")["status"]["conditions"]] == [
        "Ready", "NetworkUnavailable"]


def test_pod_cidr_outside_the_cluster_cidr_is_an_event_and_no_route(api, routes):
    # hcloud-ccm #482/#734: a wrong --cluster-cidr must not leak routes
    api.create_object(node("k3s", ["10.42.0.0/24"]))
    api.create_object(node("ok", ["10.244.1.0/24"]))
    r = routes("--cluster-cidr", CIDR4, "--period", "0.2s")
    r.wait(lambda: r.calls("create", "end", node="ok", rc="ok"), what="ok's route")
    r.wait_passes(5)
    assert r.calls("create", node="k3s") == [] and r.calls("delete") == []
    ev, = node_events(api, "PodCIDROutsideClusterCIDR")
    assert ev["type"] == "Warning" and ev["involvedObject"]["name"] == "k3s"
    assert ev["count"] == 1   # once per Node and CIDR, not once per pass
    assert "10.42.0.0/24" in ev["message"] and CIDR4 in ev["message"]
    c = network_unavailable(api, "k3s")
    assert (c["status"], c["reason"]) == ("True", "NoRouteCreated")


def test_failed_listing_changes_nothing_and_the_next_pass_retries(api, routes):
    api.create_object(node("a", ["10.244.1.0/24"]))
    seed = [route("gone", "10.244.9.0/24", "stale")]
    r = routes("--cluster-cidr", CIDR4, "--period", "0.2s", seed=seed,
               fails=[{"op": "list", "count": -1}])
    r.wait(lambda: len(r.calls("list")) >= 3, what="failed lists")
    n = len(r.calls("list"))
    assert all(c["rc"] != "ok" for c in r.calls("list"))
    assert r.calls("create") == [] and r.calls("delete") == []
    assert r.table() == [("gone", "10.244.9.0/24", False)]
    assert status_writes(api) == []
    # said once for the run of failures, not once per pass
    assert r.stderr().count("Cannot list routes") == 1
    r.cmd(cmd="clear")
    r.wait(lambda: r.calls("delete", name="stale", rc="ok"), what="the stale route deleted")
    r.wait(lambda: r.calls("create", "end", node="a", rc="ok"), what="a's route")
    assert r.table() == [("a", "10.244.1.0/24", False)]
    assert len(r.calls("list")) > n
    # a failed delete is tried again next pass too
    r.cmd(cmd="seed", routes=[route("a", "10.244.1.0/24", "a"),
                              route("gone", "10.244.8.0/24", "stale2")])
    r.cmd(cmd="fail", op="delete", count=2)
    r.wait(lambda: r.calls("delete", name="stale2", rc="ok"), what="the delete retried")
    assert len(r.calls("delete", name="stale2")) == 3


def test_at_most_concurrent_route_syncs_creates_in_flight(api, routes):
    for i in range(10):
        api.create_object(node("n%d" % i, ["10.244.%d.0/24" % (i + 10)]))
    r = routes("--cluster-cidr", CIDR4, "--period", "1s", "--concurrency", "3", gate=True)
    # creates begin; three get in, the others wait for one to end
    r.wait(lambda: any(c["inflight"] == 3 for c in r.calls("create", "begin")),
           what="three creates in flight")
    assert max(c["inflight"] for c in r.calls("create", "begin")) <= 3
    r.cmd(cmd="gate", closed=False)
    r.wait(lambda: len(r.table()) == 10, what="ten routes")
    r.wait_passes(2)
    final = r.stop()
    assert final["maxInflight"] == 3
    assert max(c["inflight"] for c in r.calls("create", "begin")) == 3


def test_stops_and_restarts_with_leadership(api, routes):
    api.create_object(node("a", ["10.244.1.0/24"]))
    r = routes("--cluster-cidr", CIDR4, "--period", "0.2s")
    r.wait(lambda: r.calls("create", "end", node="a", rc="ok"), what="a's route")
    r.cmd(cmd="stop")
    n = len(r.calls("list"))
    # not leading: a new Node waits, nothing is called
    api.create_object(node("b", ["10.244.2.0/24"]))
    # a negative: nothing may happen in five periods (load only makes it
    # easier to pass)
    time.sleep(1.0)
    assert len(r.calls("list")) == n and r.calls("create", node="b") == []
    r.cmd(cmd="start")
    r.wait(lambda: r.calls("create", "end", node="b", rc="ok"), what="b's route")
    r.cmd(cmd="stop")
    r.cmd(cmd="start")
    r.wait_passes(2)
    assert r.table() == [("a", "10.244.1.0/24", False), ("b", "10.244.2.0/24", False)]
    assert r.stop()["stopSeconds"] < 2.0


def test_route_sync_total_counts_passes_by_trigger_and_outcome(api, routes):
    """upstream's labels (k8s.io/cloud-provider v0.37): trigger node_change
    or periodic, outcome changed, noop or error."""
    api.create_object(node("a", ["10.244.1.0/24"]))
    r = routes("--cluster-cidr", CIDR4, "--period", "2s")
    # the first pass, for the Nodes listed, creates a's route
    first = r.wait(lambda: [e for e in r.events("pass") if e["syncs"]], what="the first pass")[0]
    assert first["syncs"] == {"changed/node_change": 1}
    r.wait(lambda: r.syncs().get("noop/periodic"), timeout=20, what="an idle periodic pass")
    api.create_object(node("b", ["10.244.2.0/24"]))
    r.wait(lambda: r.calls("create", "end", node="b", rc="ok"), what="b's route")

    def changed():
        s = r.syncs()
        return s.get("changed/node_change", 0) + s.get("changed/periodic", 0)
    r.wait(lambda: changed() == 2, what="b's pass counted")
    assert r.syncs().get("changed/node_change", 0) >= 1
    # a failed listing: an error, whatever asked for the pass
    r.cmd(cmd="fail", op="list", count=1)
    r.wait(lambda: sum(v for k, v in r.syncs().items() if k.startswith("error/")) == 1,
           timeout=20, what="an error pass")
    api.delete_object("nodes", "b")
    r.wait(lambda: r.calls("delete", cidr="10.244.2.0/24", rc="ok"), timeout=20,
           what="b's route deleted")
    r.wait(lambda: changed() == 3, what="the delete's pass counted")
    assert set(r.syncs()) <= {"%s/%s" % (o, t) for o in ("changed", "noop", "error")
                              for t in ("node_change", "periodic")}
