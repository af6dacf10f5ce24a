"""LoadBalancer Services on the static provider, end to end: the real binary
with --cloud-provider=static and a cloud-config of address pools against
the fake API server, as system:cloud-controller-manager under the shipped
RBAC (static-pod/rbac.yaml). Every write counted here is one the fake's
request log recorded from bootccm's user.

1. A new Service: the finalizer, then the address in its status: two
   writes, and no more; a third, kube-vip.io/loadbalancerIPs, only with
   kubeVipAnnotation, removed again at cleanup.
2. A change of ports or annotations syncs it again, a label does not.
3. Deleted: DeletingLoadBalancer, the release, then the finalizer's
   removal and DeletedLoadBalancer; while the Service is still there no
   other shows its address, and once it is gone a waiting Service gets it
   within 2 s, not after its backoff.
4. type LoadBalancer -> ClusterIP: cleanup, the address freed.
5. Classes: a foreign loadBalancerClass is left alone (its address still
   counts as taken), a configured one is served.
6. A Node's exclusion label: the backends are updated for every Service
   (the static provider's update_hosts has nothing to do: the Events and
   the writes show the controller's part).
7. A cleanup whose write fails keeps the finalizer and the address until
   it is retried (the static provider's release cannot fail: a provider
   error during deletion is tests/integration/test_service_controller.py's).
8. Drift: a Service's status cleared, or its kube-vip annotation, is
   written again within one --service-sync-period.

The address rules (requests, sharing, exhaustion, families, namespaces,
metrics) are in test_static_lb_ipam.py, restarts and MetalLB's recurring
bugs in test_static_lb_restart.py; tests/e2e/staticlb.py has what they share."""

import time

import pytest

pytest.register_assert_rewrite("staticlb")

from conftest import wait_until  # noqa: E402
from staticlb import (  # noqa: E402
    EXCLUDE, FIN, IPS, KUBE_VIP, NS, PUBLIC, one_held_one_waiting, path_of, wall)

pytest_plugins = ("staticlb",)  # the lb fixture


def test_create_writes_the_finalizer_then_the_status_and_nothing_more(api, lb):
    lb.start(PUBLIC)
    seq = api.log_seq()
    lb.service("web")
    assert lb.wait_ips("web") == ["192.0.2.1"]
    lb.wait_event("web", "EnsuredLoadBalancer")
    lb.quiesce()
    w = lb.writes(seq, "web")
    # two writes: the finalizer (before any address), then the status
    assert [(e["verb"], e["subresource"], e["code"]) for e in w] == \
        [("patch", "", 200), ("patch", "status", 200)], w
    assert w[0]["contentType"] == "application/merge-patch+json"
    assert w[0]["body"]["metadata"]["finalizers"] == [FIN]
    assert "resourceVersion" in w[0]["body"]["metadata"]
    assert w[1]["body"]["status"] == {"loadBalancer": {"ingress": [
        {"ip": "192.0.2.1", "ipMode": "VIP"}]}}
    s = lb.get("web")
    assert s["metadata"]["finalizers"] == [FIN]
    assert s["status"]["loadBalancer"]["ingress"] == [{"ip": "192.0.2.1", "ipMode": "VIP"}]
    assert KUBE_VIP not in (s["metadata"].get("annotations") or {})
    ensuring = lb.events("web", "EnsuringLoadBalancer")
    ensured = lb.events("web", "EnsuredLoadBalancer")
    assert [(e["type"], e["message"], e["count"]) for e in ensuring] == \
        [("Normal", "Ensuring load balancer", 1)]
    assert [(e["type"], e["message"], e["count"]) for e in ensured] == \
        [("Normal", "Ensured load balancer", 1)]
    assert lb.events("web", "SyncLoadBalancerFailed") == []


def test_kube_vip_annotation_is_written_and_removed_at_cleanup(api, lb):
    lb.start(PUBLIC, kube_vip=True)
    seq = api.log_seq()
    lb.service("web", annotations={"example.com/team": "shop"})
    assert lb.wait_ips("web") == ["192.0.2.1"]
    lb.wait_event("web", "EnsuredLoadBalancer")
    lb.quiesce()
    w = lb.writes(seq, "web")
    # a third write: the annotation kube-vip announces, before the status
    assert [(e["subresource"], e["code"]) for e in w] == \
        [("", 200), ("", 200), ("status", 200)], w
    assert w[0]["body"]["metadata"]["finalizers"] == [FIN]
    assert w[1]["body"]["metadata"]["annotations"] == {KUBE_VIP: "192.0.2.1"}
    assert lb.get("web")["metadata"]["annotations"] == {KUBE_VIP: "192.0.2.1",
                                                        "example.com/team": "shop"}
    # its own output is no change of the Service: one sync
    assert lb.event_count("web", "EnsuringLoadBalancer") == 1

    seq = api.log_seq()
    lb.update("web", lambda o: o["spec"].update(type="ClusterIP"))
    wait_until(lambda: not lb.has_finalizer("web"), what="the finalizer removed")
    lb.wait_event("web", "DeletedLoadBalancer")
    s = lb.get("web")
    assert s["metadata"]["annotations"] == {"example.com/team": "shop"}
    assert s["status"] == {"loadBalancer": {}}
    lb.quiesce()
    w = lb.writes(seq, "web")
    # the API server already cleared the status of a ClusterIP Service:
    # one write, the finalizer and the annotation together
    assert len(w) == 1 and w[0]["body"]["metadata"]["finalizers"] is None, w
    assert w[0]["body"]["metadata"]["annotations"] == {KUBE_VIP: None}


def test_ports_or_annotations_change_resync_a_label_does_not(api, lb):
    lb.start(PUBLIC)
    lb.service("web")
    assert lb.wait_ips("web") == ["192.0.2.1"]
    lb.wait_event("web", "EnsuredLoadBalancer")
    lb.quiesce()

    # a label: upstream's needsUpdate ignores it
    seq = api.log_seq()
    lb.update("web", lambda o: o["metadata"].update(labels={"team": "a"}))
    lb.quiesce()
    assert lb.writes(seq) == [] and lb.event_count("web", "EnsuringLoadBalancer") == 1

    # ports: synced again (the address stays, so nothing to write)
    lb.update("web", lambda o: o["spec"]["ports"][0].update(port=81))
    wait_until(lambda: lb.event_count("web", "EnsuredLoadBalancer") == 2,
               what="a second Ensured Event")
    assert lb.event_count("web", "EnsuringLoadBalancer") == 2
    lb.quiesce()
    assert lb.writes(seq) == [] and lb.ips("web") == ["192.0.2.1"]

    # an annotation: synced again, here one that asks for another address
    lb.update("web", lambda o: o["metadata"].update(annotations={IPS: "192.0.2.5"}))
    assert wait_until(lambda: lb.ips("web") == ["192.0.2.5"], what="the requested address")
    # the recorder sends Events on its own thread, after the status write
    wait_until(lambda: lb.event_count("web", "EnsuredLoadBalancer") == 3,
               what="a third Ensured Event")
    assert lb.event_count("web", "EnsuringLoadBalancer") == 3
    lb.quiesce()
    w = lb.writes(seq)
    assert [(e["name"], e["subresource"]) for e in w] == [("web", "status")], w
    assert lb.metrics()[("public", "IPv4", "used")] == 1


def test_delete_releases_the_address_before_the_finalizer_goes(api, lb):
    ev = one_held_one_waiting(lb)
    assert ev["type"] == "Warning" and ev["message"] == (
        "Error syncing load balancer: failed to ensure load balancer: service default/new: "
        "every pool this Service may use is exhausted (IPv4)")
    # it waits with the finalizer already on (added before allocation)
    assert lb.has_finalizer("new") and lb.ips("new") == []
    # the finalizer's removal is held up for a while in the API server
    api.inject_fault(path_of("old"), method="PATCH", delay=2.0, count=1)
    seq = api.log_seq()
    api.delete_object("services", "old", namespace=NS)
    lb.wait_event("old", "DeletingLoadBalancer")
    # until the Service is gone, no other shows its address: meanwhile it
    # is still there, being deleted, with its finalizer and address
    pending, deadline = 0, time.monotonic() + 15
    while True:
        new = lb.ips("new")
        old = lb.get("old")
        if old is not None:
            assert new == [], "192.0.2.10 shown by both old and new"
            pending += bool(old["metadata"].get("deletionTimestamp")) and \
                lb.has_finalizer("old")
        if new:
            break
        assert time.monotonic() < deadline, "new never got the address"
        time.sleep(0.02)
    assert pending > 0 and new == ["192.0.2.10"]
    w = lb.wait_writes(seq, 2)
    assert [(e["name"], e["subresource"]) for e in w] == [("old", ""), ("new", "status")], w
    assert w[0]["body"]["metadata"]["finalizers"] is None
    # released when the finalizer's write ended (it arrived 2 s before):
    # the waiting Service got it then, not after its backoff
    assert wall(w[1]) - (wall(w[0]) + 2.0) < 2.0, w
    # the order the user sees: Deleting, the finalizer removed, Deleted
    lb.wait_event("old", "DeletedLoadBalancer")
    log = api.request_log(seq)
    reasons = [(e.get("body") or {}).get("reason") for e in log
               if e.get("resource") == "events" and e["verb"] == "create"
               and ((e.get("body") or {}).get("involvedObject") or {}).get("name") == "old"]
    assert reasons == ["DeletingLoadBalancer", "DeletedLoadBalancer"], reasons
    seqs = {r: e["seq"] for e in log for r in [(e.get("body") or {}).get("reason")]
            if e.get("resource") == "events" and r}
    assert seqs["DeletingLoadBalancer"] < w[0]["seq"] < seqs["DeletedLoadBalancer"]


def test_type_change_to_cluster_ip_cleans_up_and_frees_the_address(api, lb):
    one_held_one_waiting(lb, "web", "next")
    assert lb.metrics() == {("one", "IPv4", "used"): 1, ("one", "IPv4", "free"): 0}
    seq = api.log_seq()
    lb.update("web", lambda o: o["spec"].update(type="ClusterIP"))
    lb.wait_event("web", "DeletedLoadBalancer")
    assert lb.wait_ips("next", timeout=5) == ["192.0.2.10"]
    s = lb.get("web")
    assert s["spec"]["type"] == "ClusterIP" and s["status"] == {"loadBalancer": {}}
    assert not lb.has_finalizer("web")
    lb.quiesce()
    w = lb.writes(seq)
    assert [(e["name"], e["subresource"]) for e in w] == [("web", ""), ("next", "status")], w
    assert w[0]["body"]["metadata"]["finalizers"] is None
    # and back to LoadBalancer: the pool is empty now
    lb.update("web", lambda o: o["spec"].update(type="LoadBalancer"))
    ev = lb.wait_event("web", "SyncLoadBalancerFailed")
    assert "every pool this Service may use is exhausted (IPv4)" in ev["message"]
    assert lb.has_finalizer("web") and lb.ips("web") == []


@pytest.mark.parametrize("class_only", [False, True])
def test_foreign_class_ignored_its_address_taken_configured_class_served(api, lb, class_only):
    # another implementation's Service, with the address its controller gave it
    lb.service("foreign", loadBalancerClass="other.io/lb")
    api.update_object(dict(lb.get("foreign"), status={"loadBalancer": {"ingress": [
        {"ip": "192.0.2.1"}]}}), subresource="status")
    lb.start(PUBLIC, "--load-balancer-class=example.com/static",
             *(["--load-balancer-class-only"] if class_only else []))
    seq = api.log_seq()
    lb.service("mine", loadBalancerClass="example.com/static")
    lb.service("plain")
    assert lb.wait_ips("mine") == ["192.0.2.2"]
    if class_only:
        lb.quiesce()
        assert lb.ips("plain") == [] and not lb.has_finalizer("plain")
    else:
        assert lb.wait_ips("plain") == ["192.0.2.3"]
    # the foreign Service's address moves: the new one is taken, the old
    # one free again
    api.update_object(dict(lb.get("foreign"), status={"loadBalancer": {"ingress": [
        {"ip": "192.0.2.4"}]}}), subresource="status")
    lb.service("later", loadBalancerClass="example.com/static")
    lb.service("last", loadBalancerClass="example.com/static")
    assert lb.wait_ips("later") == ["192.0.2.1"]
    assert lb.wait_ips("last") == ["192.0.2.3" if class_only else "192.0.2.5"]
    lb.quiesce()
    assert lb.ips("foreign") == ["192.0.2.4"] and not lb.has_finalizer("foreign")
    assert lb.writes(seq, "foreign") == [] and lb.events("foreign") == []
    if class_only:
        assert lb.writes(seq, "plain") == [] and lb.events("plain") == []


def test_exclusion_label_updates_the_backends_of_every_service(api, lb):
    lb.start(PUBLIC)
    for name in ("a", "b"):
        lb.service(name)
        lb.wait_ips(name)
        lb.wait_event(name, "EnsuredLoadBalancer")
    lb.quiesce()
    seq = api.log_seq()

    def updated(n):
        wait_until(lambda: all(lb.event_count(s, "UpdatedLoadBalancer") == n
                               for s in ("a", "b")),
                   what="%d UpdatedLoadBalancer Event(s) on a and b" % n)

    def label(node, labels):
        o = api.get_object("nodes", node)
        o["metadata"]["labels"] = labels
        api.update_object(o)

    label("n2", {EXCLUDE: ""})          # excluded
    updated(1)
    ev = lb.events("a", "UpdatedLoadBalancer")[0]
    assert (ev["type"], ev["message"]) == ("Normal", "Updated load balancer with new hosts")
    label("n1", {"team": "x"})          # no change of the set
    label("n2", {EXCLUDE: "false"})     # "false" includes it again
    updated(2)
    lb.node("n3")                       # a new Node
    updated(3)
    lb.quiesce()
    assert lb.event_count("a", "UpdatedLoadBalancer") == 3
    # the provider keeps no backends: nothing changes on the Services
    assert lb.writes(seq) == []
    assert lb.event_count("a", "EnsuringLoadBalancer") == 1


def test_a_failed_cleanup_write_keeps_the_finalizer_and_the_address(api, lb):
    one_held_one_waiting(lb)
    # the finalizer's removal is refused once (not retried by the client)
    api.inject_fault(path_of("old"), method="PATCH", status=403, count=1)
    seq = api.log_seq()
    api.delete_object("services", "old", namespace=NS)
    ev = lb.wait_event("old", "SyncLoadBalancerFailed")
    assert ev["type"] == "Warning" and ev["message"].startswith(
        "Error syncing load balancer: failed to remove load balancer cleanup finalizer: ")
    assert lb.has_finalizer("old") and lb.ips("old") == ["192.0.2.10"]
    assert lb.events("old", "DeletedLoadBalancer") == []
    assert lb.ips("new") == []
    # retried on the Service's backoff (5 s): then it goes, and new gets it
    lb.wait_event("old", "DeletedLoadBalancer", timeout=20)
    assert lb.wait_ips("new", timeout=5) == ["192.0.2.10"]
    assert lb.get("old") is None
    w = lb.wait_writes(seq, 3)
    assert [(e["name"], e["code"]) for e in w] == [("old", 403), ("old", 200), ("new", 200)], w
    assert wall(w[1]) - wall(w[0]) >= 4.0, w   # the key's backoff, with its jitter


def test_drift_is_repaired_within_one_sync_period(api, lb):
    lb.start(PUBLIC, "--service-sync-period=2s", kube_vip=True)
    lb.service("web")
    assert lb.wait_ips("web") == ["192.0.2.1"]
    lb.wait_event("web", "EnsuredLoadBalancer")
    lb.quiesce()

    def repaired(change, what):
        seq = api.log_seq()
        changed = time.time()
        change()
        w = wait_until(lambda: lb.writes(seq, "web"), timeout=10, what=what)
        # found by the next check (a period, plus a second of slack for a
        # loaded machine) and written back at once
        assert wall(w[0]) - changed < 2.0 + 1.0, (changed, w)
        return w

    # someone clears the status
    w = repaired(lambda: api.update_object(dict(lb.get("web"), status={"loadBalancer": {}}),
                                           subresource="status"), "the status written again")
    assert w[0]["subresource"] == "status"
    assert wait_until(lambda: lb.ips("web") == ["192.0.2.1"], what="the same address")
    ev = lb.wait_event("web", "EnsuringLoadBalancer",
                       pred=lambda e: "missing or changed" in e["message"])
    assert ev["message"] == "Ensuring load balancer: the provider reports it missing or changed"

    # someone removes the kube-vip annotation
    def drop():
        o = lb.get("web")
        del o["metadata"]["annotations"][KUBE_VIP]
        api.update_object(o)
    w = repaired(drop, "the annotation written again")
    assert w[0]["subresource"] == "" and \
        w[0]["body"]["metadata"]["annotations"] == {KUBE_VIP: "192.0.2.1"}
    lb.quiesce()
    assert lb.get("web")["metadata"]["annotations"] == {KUBE_VIP: "192.0.2.1"}
    assert lb.ips("web") == ["192.0.2.1"]


def test_a_cache_behind_its_own_write_writes_nothing_again(api, lb):
    # A watch cache that lags: the controller's status write is out, its
    # watch event held back, and drift checks come every second meanwhile.
    # Acting on the cache's older version would write the status again
    # with a resourceVersion the API server has moved past (409, each
    # second): the controller waits for the event instead.
    lb.start(PUBLIC, "--service-sync-period=1s")
    lb.service("web")
    assert lb.wait_ips("web") == ["192.0.2.1"]
    lb.quiesce()
    seq = api.log_seq()
    conflicts = lb.syncs("conflict")
    api.update_object(dict(lb.get("web"), status={"loadBalancer": {}}), subresource="status")
    hold = api.hold_watch("services", "web")   # from the repair on
    w = lb.wait_writes(seq, 1, "web")
    assert [(e["subresource"], e["code"]) for e in w] == [("status", 200)], w
    assert lb.ips("web") == ["192.0.2.1"]
    time.sleep(3.5)                            # three drift checks
    api.release_watch(hold)
    lb.quiesce(seconds=2.5)                    # and two more after it
    assert [(e["subresource"], e["code"]) for e in lb.writes(seq, "web")] == \
        [("status", 200)], lb.writes(seq, "web")
    assert lb.syncs("conflict") == conflicts
    assert lb.ips("web") == ["192.0.2.1"]
