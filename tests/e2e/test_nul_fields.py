"""A NUL character (\\u0000) in a string the API server does not validate:
JSON allows it and Go strings hold it, so anyone who may patch a Service
can put one in an annotation, and a kubelet or a user one in a Node's
spec.providerID. What bootccm does not read never stops it from serving an
object; what it reads and cannot accept gets a Warning Event naming the
field; a Service being deleted is always cleaned up; doctor reports the one
bad Node and checks the others."""

import pytest

pytest.register_assert_rewrite("staticlb")

from conftest import wait_until  # noqa: E402
from staticlb import NS, POOL, PUBLIC  # noqa: E402
from test_bootstrap import (node_object, register, wait_event,  # noqa: E402
                            wait_initialized)
from test_doctor import add_node, doctor  # noqa: E402
from test_static_provider import not_ready, static_args  # noqa: E402

pytest_plugins = ("staticlb",)  # the lb fixture

NOTE = "example.com/note"
TAINT = {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true",
         "effect": "NoSchedule"}


def gone(lb, name):
    """Waits until the Service is deleted for good (its finalizer removed)."""
    wait_until(lambda: lb.get(name) is None, timeout=20,
               what="Service %s to be gone (finalizer removed)" % name)


def test_fake_api_server_keeps_a_nul_like_the_real_one(api):
    # encoding/json decodes \u0000 into a Go string, which holds it: the
    # fake must store and serve it, escaped, the same way
    api.create_object({"apiVersion": "v1", "kind": "Service",
                       "metadata": {"name": "n", "namespace": NS,
                                    "annotations": {NOTE: "a\x00b"}},
                       "spec": {"ports": [{"port": 80}]}})
    assert api.get_object("services", "n", namespace=NS)["metadata"]["annotations"] == \
        {NOTE: "a\x00b"}


def test_service_with_a_nul_in_an_annotation_it_does_not_read(api, lb):
    lb.start(PUBLIC)
    lb.service("web", annotations={NOTE: "a\x00b"})
    assert lb.wait_ips("web") == ["192.0.2.1"]
    lb.wait_event("web", "EnsuredLoadBalancer")
    assert lb.has_finalizer("web")
    assert lb.events("web", "SyncLoadBalancerFailed") == []
    # a NUL patched in once it is served (kubectl patch ... "a\u0000b")
    lb.service("shop")
    lb.wait_ips("shop")
    lb.update("shop", lambda o: o["metadata"].setdefault("annotations", {}).update(
        {NOTE: "\x00"}))
    # deleted, each is cleaned up: the address released, the finalizer gone
    for name in ("web", "shop"):
        api.delete_object("services", name, namespace=NS)
        lb.wait_event(name, "DeletedLoadBalancer")
        gone(lb, name)
    # the address is free again: a Service asking for it gets it
    lb.service("next", annotations={"bootccm.io/load-balancer-ips": "192.0.2.1"})
    assert lb.wait_ips("next") == ["192.0.2.1"]


def test_service_with_a_nul_in_an_annotation_it_reads(api, lb):
    lb.start(PUBLIC)
    lb.service("pooled", annotations={POOL: "pub\x00lic", NOTE: "x"})
    ev = lb.wait_event("pooled", "SyncLoadBalancerFailed",
                       pred=lambda e: POOL in e["message"])
    assert ev["type"] == "Warning", ev
    assert "Service default/pooled: annotation %s holds a NUL character" % POOL in \
        ev["message"], ev
    # not served on a value read in part: no address from another pool
    assert lb.ips("pooled") == []
    lb.d.wait_for("annotation %s holds a NUL character" % POOL, timeout=10)
    # fixed, it is served
    lb.update("pooled", lambda o: o["metadata"]["annotations"].update({POOL: "public"}))
    assert lb.wait_ips("pooled") == ["192.0.2.1"]
    # broken again, then deleted: cleaned up all the same
    lb.update("pooled", lambda o: o["metadata"]["annotations"].update({POOL: "\x00"}))
    assert lb.has_finalizer("pooled")
    api.delete_object("services", "pooled", namespace=NS)
    gone(lb, "pooled")


def nul_node(api, name, **fields):
    """A Node as a kubelet registers it, tainted, with fields (spec) set."""
    o = node_object(name)
    o["spec"].update(fields)
    o["spec"].setdefault("taints", [dict(TAINT)])
    return api.create_object(o)


def test_node_with_a_nul_in_its_provider_id(api, tmp, daemon):
    args = static_args(api, tmp)
    register(api, "cp-1", control_plane=True)
    nul_node(api, "bad-1", providerID="metal://rack-1/\x00")
    register(api, "worker-1")
    d = daemon(args)
    wait_initialized(api, "cp-1", timeout=15)
    wait_initialized(api, "worker-1", timeout=15)
    ev = wait_event(api, "bad-1", "InitializationFailed", timeout=15)
    assert ev["type"] == "Warning", ev
    assert "node bad-1: spec.providerID holds a NUL character" in ev["message"], ev
    d.wait_for("spec.providerID holds a NUL character", timeout=10)
    bad = api.get_object("nodes", "bad-1")
    assert any(t["key"] == TAINT["key"] for t in bad["spec"]["taints"]), bad
    assert bad["spec"]["providerID"] == "metal://rack-1/\x00"  # never rewritten


def test_node_with_a_nul_in_its_provider_id_is_never_deleted(api, tmp, daemon):
    # an authoritative inventory deletes a NotReady Node it does not list;
    # a providerID bootccm cannot read names no instance: never on doubt
    args = static_args(api, tmp, authoritative=True)
    register(api, "cp-1", control_plane=True)
    nul_node(api, "bad-1", providerID="metal://rack-1/\x00", taints=[])
    register(api, "gone", node_ip="10.0.0.77")
    for n in ("bad-1", "gone"):
        not_ready(api, n)
    daemon(args + ["--node-monitor-period=200ms", "--node-deletion-grace-period=0"])
    # the pass that deletes "gone" has gone over "bad-1" (sorted by name)
    api.wait_for_object("nodes", "gone", lambda o: o is None, timeout=15)
    assert api.get_object("nodes", "bad-1") is not None


def test_doctor_reports_the_bad_node_and_checks_the_others(api, tmp):
    add_node(api, "good-1", taints=[TAINT])
    add_node(api, "bad-1", taints=[TAINT], provider_id="aws:///\x00")
    add_node(api, "ok-2", provider_id="aws:///zone/i-2",
             addresses=[{"type": "InternalIP", "address": "10.0.0.2"}])
    rc, by_id, report, err = doctor(api, tmp)
    assert rc == 2, (rc, err)   # a deadlock found, not "could not read the cluster"
    f = by_id["node-field-unreadable"]
    assert len(f) == 1 and f[0]["objects"] == ["node/bad-1"], f
    assert f[0]["severity"] == "deadlock"
    assert "spec.providerID holds a NUL character" in f[0]["summary"], f
    # the other tainted node is still reported, and every node was read
    assert any("node/good-1" in x["objects"] for fs in by_id.values() for x in fs), by_id
    assert report["summary"]["nodes"] == 3, report
