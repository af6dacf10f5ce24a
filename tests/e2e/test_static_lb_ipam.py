"""The static provider's address rules, end to end (the real binary, the
fake API server, the shipped RBAC; helpers in staticlb.py), as
../shared static-provider contract words them and a user sees them: the
Service's status and its SyncLoadBalancerFailed Events.

1. Requested addresses: each annotation and spec.loadBalancerIP, with
   their precedence; an address in no pool refused.
2. A requested address taken: the older Service keeps it (also when a
   newer one asked first), the Event names namespace/name; an address in
   a status is never taken away, even for an older Service (no
   preemption).
3. Sharing by key with ports apart; an overlapping Service refused when
   it asks for the address, given another when assigned automatically;
   a shared address counts once in the metrics.
4. Exhaustion: an Event and a retry; a freed address reaches the waiting
   Service within 2 s, though its backoff has grown.
5. Dual-stack: RequireDualStack two addresses or none, PreferDualStack
   what the pools give, in spec.ipFamilies order.
6. A namespace pool and a pool without autoAssign.
7. bootccm_lb_pool_addresses per pool, family and state."""

import pytest

pytest.register_assert_rewrite("staticlb")

from conftest import https_get, wait_until  # noqa: E402
from staticlb import (  # noqa: E402
    IPS, KUBE_VIP, METRICS_TOKEN, NS, POOL, PUBLIC, SHARED, created_after, failed, pool, wall)

pytest_plugins = ("staticlb",)  # the lb fixture


def test_requested_addresses_with_their_precedence(api, lb):
    lb.service("ours", annotations={IPS: "192.0.2.6", "metallb.io/loadBalancerIPs": "192.0.2.5"})
    lb.service("metallb", annotations={"metallb.io/loadBalancerIPs": "192.0.2.5"})
    lb.service("metallb-old", annotations={"metallb.universe.tf/loadBalancerIPs": "192.0.2.4",
                                           KUBE_VIP: "192.0.2.1"})
    lb.service("kube-vip", annotations={KUBE_VIP: "192.0.2.3"}, loadBalancerIP="192.0.2.1")
    lb.service("spec", loadBalancerIP="192.0.2.2")
    lb.service("nowhere", annotations={IPS: "198.51.100.7"})
    lb.service("auto")
    lb.start(PUBLIC)
    want = {"ours": "192.0.2.6", "metallb": "192.0.2.5", "metallb-old": "192.0.2.4",
            "kube-vip": "192.0.2.3", "spec": "192.0.2.2", "auto": "192.0.2.1"}
    for name, ip in sorted(want.items()):
        assert lb.wait_ips(name) == [ip], name
    assert failed(lb, "nowhere") == \
        "service default/nowhere: requested address 198.51.100.7 is in no pool"
    assert lb.ips("nowhere") == [] and lb.has_finalizer("nowhere")


def test_requested_address_the_older_service_wins_and_keeps_it(api, lb):
    # asked for at once (before bootccm starts): the older one gets it,
    # although the newer one's name comes first
    lb.service("z-old", annotations={IPS: "192.0.2.5"})
    lb.service("elder", type="ClusterIP")
    created_after(lb, "elder")
    lb.service("a-new", annotations={IPS: "192.0.2.5"})
    lb.start(PUBLIC)
    assert lb.wait_ips("z-old") == ["192.0.2.5"]
    msg = failed(lb, "a-new")
    assert msg.startswith("service default/a-new: ") and "default/z-old" in msg, msg
    assert lb.ips("a-new") == []
    # a newer Service asking for an address another holds
    lb.service("keeper")
    assert lb.wait_ips("keeper") == ["192.0.2.1"]
    lb.service("asker", annotations={IPS: "192.0.2.1"})
    assert failed(lb, "asker") == \
        "service default/asker: address 192.0.2.1 is taken by default/keeper"
    # no preemption: an older Service asking for it later does not get it
    lb.update("elder", lambda o: (o["spec"].update(type="LoadBalancer"),
                                  o["metadata"].update(annotations={IPS: "192.0.2.1"})))
    assert failed(lb, "elder") == \
        "service default/elder: address 192.0.2.1 is taken by default/keeper"
    lb.quiesce()
    assert lb.ips("keeper") == ["192.0.2.1"] and lb.ips("z-old") == ["192.0.2.5"]
    assert lb.ips("elder") == [] and lb.ips("asker") == []


def test_sharing_by_key_and_refused_on_overlapping_ports(api, lb):
    lb.start(PUBLIC)
    dns_tcp = [{"name": "dns", "port": 53, "protocol": "TCP"}]
    dns_udp = [{"name": "dns", "port": 53, "protocol": "UDP"}]
    lb.service("dns-tcp", ports=dns_tcp, annotations={SHARED: "dns"})
    assert lb.wait_ips("dns-tcp") == ["192.0.2.1"]
    # same key, ports apart (UDP/53 is not TCP/53): assigned the same address
    lb.service("dns-udp", ports=dns_udp, annotations={SHARED: "dns"})
    assert lb.wait_ips("dns-udp") == ["192.0.2.1"]
    # another key, or none: another address
    lb.service("web", annotations={SHARED: "web"})
    assert lb.wait_ips("web") == ["192.0.2.2"]
    # same key, overlapping ports, asking for the address: none, and why
    lb.service("dns-clash", ports=dns_tcp, annotations={SHARED: "dns", IPS: "192.0.2.1"})
    assert failed(lb, "dns-clash") == ("service default/dns-clash: address 192.0.2.1: "
                                       "ports overlap with the sharing Service default/dns-tcp")
    # the same, assigned automatically: another address
    lb.service("dns-more", ports=dns_tcp, annotations={SHARED: "dns"})
    assert lb.wait_ips("dns-more") == ["192.0.2.3"]
    # a shared address counts once
    assert lb.metrics() == {("public", "IPv4", "used"): 3, ("public", "IPv4", "free"): 3}
    lb.quiesce()
    assert lb.ips("dns-clash") == []
    # a sharing Service deleted: the other keeps the address
    seq = api.log_seq()
    api.delete_object("services", "dns-tcp", namespace=NS)
    lb.wait_event("dns-tcp", "DeletedLoadBalancer")
    lb.quiesce()
    assert lb.ips("dns-udp") == ["192.0.2.1"] and lb.writes(seq, "dns-udp") == []
    assert lb.metrics()[("public", "IPv4", "used")] == 3


@pytest.mark.parametrize("release", ["delete", "ClusterIP"])
def test_exhausted_then_a_freed_address_reaches_the_waiting_service(api, lb, release):
    lb.start([pool("small", "192.0.2.10-192.0.2.11")])
    for name in ("a", "b"):
        lb.service(name)
        lb.wait_ips(name)
    assert sorted(lb.ips("a") + lb.ips("b")) == ["192.0.2.10", "192.0.2.11"]
    lb.service("c")
    assert failed(lb, "c") == \
        "service default/c: every pool this Service may use is exhausted (IPv4)"
    assert lb.has_finalizer("c")
    # a second failure: its next try is 10 s away
    wait_until(lambda: lb.event_count("c", "SyncLoadBalancerFailed") == 2, timeout=20,
               what="a second SyncLoadBalancerFailed")
    assert lb.metrics() == {("small", "IPv4", "used"): 2, ("small", "IPv4", "free"): 0}
    freed = lb.ips("a")[0]
    seq = api.log_seq()
    if release == "delete":
        api.delete_object("services", "a", namespace=NS)
    else:
        lb.update("a", lambda o: o["spec"].update(type="ClusterIP"))
    assert lb.wait_ips("c", timeout=5) == [freed]
    w = lb.wait_writes(seq, 2)
    assert [(e["name"], e["subresource"]) for e in w] == [("a", ""), ("c", "status")], w
    # from the write that let the address go to the one that shows it again
    assert wall(w[1]) - wall(w[0]) < 2.0, w
    lb.quiesce()
    assert lb.metrics() == {("small", "IPv4", "used"): 2, ("small", "IPv4", "free"): 0}


DUAL = [pool("public", "192.0.2.0/29", "2001:db8:1::/125"),
        pool("v4only", "198.51.100.0/30", autoAssign=False)]


def test_dual_stack_require_and_prefer(api, lb):
    lb.start(DUAL)
    lb.service("req", ipFamilyPolicy="RequireDualStack")
    assert lb.wait_ips("req", n=2) == ["192.0.2.1", "2001:db8:1::"]
    lb.service("pref6", ipFamilyPolicy="PreferDualStack", ipFamilies=["IPv6", "IPv4"])
    assert lb.wait_ips("pref6", n=2) == ["2001:db8:1::1", "192.0.2.2"]
    lb.service("single6", ipFamilies=["IPv6"])
    assert lb.wait_ips("single6") == ["2001:db8:1::2"]
    # a pool with IPv4 only: RequireDualStack gets nothing, Prefer its IPv4
    lb.service("req-v4", ipFamilyPolicy="RequireDualStack", annotations={POOL: "v4only"})
    assert failed(lb, "req-v4") == ("service default/req-v4: RequireDualStack: requested "
                                    "pool v4only has no IPv6 addresses")
    lb.service("pref-v4", ipFamilyPolicy="PreferDualStack", annotations={POOL: "v4only"})
    assert lb.wait_ips("pref-v4") == ["198.51.100.1"]
    lb.quiesce()
    assert lb.ips("req-v4") == []
    for name in ("req", "pref6", "pref-v4"):
        assert lb.get(name)["status"]["loadBalancer"]["ingress"][0]["ipMode"] == "VIP"
    assert lb.metrics() == {
        ("public", "IPv4", "used"): 2, ("public", "IPv4", "free"): 4,
        ("public", "IPv6", "used"): 3, ("public", "IPv6", "free"): 5,
        ("v4only", "IPv4", "used"): 1, ("v4only", "IPv4", "free"): 1}


def test_namespace_pool_and_a_pool_only_for_those_who_ask(api, lb):
    api.create_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    lb.start([pool("team-a", "203.0.113.0/30", namespaces=["team-a"]),
              pool("reserved", "198.51.100.8/30", autoAssign=False),
              pool("public", "192.0.2.0/29")])
    lb.service("web", ns="team-a")
    assert lb.wait_ips("web", ns="team-a") == ["203.0.113.1"]
    lb.service("web")
    assert lb.wait_ips("web") == ["192.0.2.1"]
    lb.service("pool-ask", annotations={POOL: "team-a"})
    assert failed(lb, "pool-ask") == \
        "service default/pool-ask: requested pool team-a does not allow namespace default"
    lb.service("ip-ask", annotations={IPS: "203.0.113.2"})
    assert failed(lb, "ip-ask") == ("service default/ip-ask: requested address 203.0.113.2 "
                                    "is in pool team-a, which namespace default may not use")
    lb.service("vip", annotations={POOL: "reserved"}, ns="team-a")
    assert lb.wait_ips("vip", ns="team-a") == ["198.51.100.9"]
    lb.service("vip-ip", annotations={IPS: "198.51.100.10"})
    assert lb.wait_ips("vip-ip") == ["198.51.100.10"]
    # team-a's pool exhausted (two addresses): its Services go on to public
    lb.service("api", ns="team-a")
    assert lb.wait_ips("api", ns="team-a") == ["203.0.113.2"]
    lb.service("db", ns="team-a")
    assert lb.wait_ips("db", ns="team-a") == ["192.0.2.2"]


def test_pool_metrics(api, lb):
    lb.start(DUAL)
    assert lb.metrics() == {
        ("public", "IPv4", "used"): 0, ("public", "IPv4", "free"): 6,
        ("public", "IPv6", "used"): 0, ("public", "IPv6", "free"): 8,
        ("v4only", "IPv4", "used"): 0, ("v4only", "IPv4", "free"): 2}
    lb.service("a", ipFamilyPolicy="RequireDualStack", annotations={SHARED: "k"})
    lb.service("b", ports=[{"name": "dns", "port": 53, "protocol": "UDP"}],
               ipFamilyPolicy="RequireDualStack", annotations={SHARED: "k"})
    lb.service("c", annotations={IPS: "198.51.100.2"})
    assert lb.wait_ips("a", n=2) == lb.wait_ips("b", n=2)
    lb.wait_ips("c")
    m = lb.metrics()
    assert m == {
        ("public", "IPv4", "used"): 1, ("public", "IPv4", "free"): 5,
        ("public", "IPv6", "used"): 1, ("public", "IPv6", "free"): 7,
        ("v4only", "IPv4", "used"): 1, ("v4only", "IPv4", "free"): 1}, m
    api.delete_object("services", "c", namespace=NS)
    wait_until(lambda: lb.metrics()[("v4only", "IPv4", "used")] == 0, what="c's address free")
    body = https_get(lb.port, "/metrics", METRICS_TOKEN)[1]
    assert "# TYPE bootccm_lb_pool_addresses gauge" in body.splitlines()
