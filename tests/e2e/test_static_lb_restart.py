"""The static provider keeps no database: its allocation is rebuilt from
every Service's status when bootccm starts. End to end (the real binary,
the fake API server, the shipped RBAC; helpers in staticlb.py):

1. A restart with 200 allocated Services writes nothing (no Service, no
   Event) and leaves 200 distinct addresses where they were.
2. MetalLB's recurring bugs, each by name:
   - #1774, #2443, #2479: addresses assigned twice after a restart (new
     Services, created while the allocator was down, given addresses that
     Services it had not looked at yet held);
   - duplicates when a pool changes (a restart with pools shrunk, moved,
     renamed and added);
   - #2723: an address that moves when another Service is deleted."""

import pytest

pytest.register_assert_rewrite("staticlb")

from conftest import wait_until  # noqa: E402
from staticlb import (  # noqa: E402
    IPS, KUBE_VIP, NS, PUBLIC, SHARED, USER, failed, pool)

pytest_plugins = ("staticlb",)  # the lb fixture

# A budget that lets 200 Services through in seconds, not the default's 20
# writes per second: what is measured is the count of writes, not their pace.
FAST = ["--kube-api-qps=200", "--kube-api-burst=200", "--concurrent-service-syncs=4"]


def all_ips(lb, ns=NS):
    """{name: [addresses]} of every Service of ns that shows any."""
    out = {}
    for s in lb.api.list_objects("services", namespace=ns):
        ips = [i.get("ip") for i in
               (s.get("status") or {}).get("loadBalancer", {}).get("ingress") or []]
        if ips:
            out[s["metadata"]["name"]] = ips
    return out


def wait_assigned(lb, names, timeout=60.0):
    """Waits until every named Service shows an address; returns all_ips."""
    def done():
        got = all_ips(lb)
        return all(n in got for n in names) and got
    return wait_until(done, timeout=timeout, interval=0.2,
                      what="addresses for %d Services" % len(names))


def no_duplicates(ips):
    flat = [a for v in ips.values() for a in v]
    assert len(flat) == len(set(flat)), sorted(flat)


def restart_quietly(lb, pools, n, *flags, kube_vip=False):
    """Restarts bootccm on pools and waits until it has synced n served
    Services and found nothing to change (its own count of such syncs);
    then checks it wrote nothing: no Service, no Event. Returns the
    request log's position before the restart."""
    lb.stop()
    seq = lb.api.log_seq()
    lb.start(pools, *flags, kube_vip=kube_vip)
    wait_until(lambda: lb.syncs("unchanged") >= n, timeout=60,
               what="%d quiet syncs after the restart" % n)
    lb.quiesce()
    assert lb.syncs("unchanged") == n and lb.syncs("ensured") == 0
    # (its reviews of who it is and of /metrics' callers change nothing)
    writes = [e for e in lb.api.writes(seq) if e["user"] == USER and e.get("apiGroup") not in
              ("authentication.k8s.io", "authorization.k8s.io")]
    assert writes == [], writes
    return seq


def test_restart_with_200_allocated_services_writes_nothing(api, lb):
    pools = [pool("big", "10.200.0.0/24")]   # 254 addresses
    lb.start(pools, *FAST)
    names = ["svc-%03d" % i for i in range(200)]
    seq = api.log_seq()
    for n in names:
        lb.service(n)
    before = wait_assigned(lb, names, timeout=120)
    lb.quiesce()
    no_duplicates(before)
    # two writes each, the finalizer and the status
    w = lb.writes(seq)
    assert len(w) == 400, len(w)
    assert sorted((e["name"], e["subresource"]) for e in w) == \
        sorted([(n, "") for n in names] + [(n, "status") for n in names])
    events = len(api.list_objects("events", namespace=NS))
    restart_quietly(lb, pools, 200, *FAST)
    assert all_ips(lb) == before
    assert len(api.list_objects("events", namespace=NS)) == events
    assert lb.metrics() == {("big", "IPv4", "used"): 200, ("big", "IPv4", "free"): 54}


def test_metallb_1774_2443_2479_no_double_assignment_after_a_restart(api, lb):
    pools = [pool("p", "192.0.2.0/27")]    # .1 to .30
    lb.start(pools)
    old = ["old-%02d" % i for i in range(20)]
    for n in old:
        lb.service(n)
    before = wait_assigned(lb, old)
    lb.quiesce()
    lb.stop()
    # while bootccm is down: new Services whose names come first, one that
    # asks for an address an old one holds, and another implementation's
    # Service given an address by its own controller
    new = ["a-new-%d" % i for i in range(8)]
    for n in new:
        lb.service(n)
    taken = before["old-05"][0]
    lb.service("a-asks", annotations={IPS: taken})
    lb.service("foreign", loadBalancerClass="other.io/lb")
    api.update_object(dict(lb.get("foreign"), status={"loadBalancer": {"ingress": [
        {"ip": "192.0.2.25"}]}}), subresource="status")
    seq = api.log_seq()
    lb.start(pools)
    after = wait_assigned(lb, old + new + ["foreign"])
    assert failed(lb, "a-asks") == \
        "service default/a-asks: address %s is taken by default/old-05" % taken
    lb.quiesce()
    after = all_ips(lb)
    no_duplicates(after)
    assert {n: after[n] for n in old} == before
    assert "a-asks" not in after and after["foreign"] == ["192.0.2.25"]
    # the old Services were not written to; each new one twice
    w = lb.writes(seq)
    assert sorted(e["name"] for e in w) == sorted(new * 2 + ["a-asks"]), w


def test_metallb_pool_change_moves_nobody_and_duplicates_nothing(api, lb):
    lb.start([pool("a", "192.0.2.0/28")])   # .1 to .14
    names = ["s%d" % i for i in range(10)]
    for n in names:
        lb.service(n)
    before = wait_assigned(lb, names)
    lb.quiesce()
    assert sorted(a for v in before.values() for a in v) == \
        sorted("192.0.2.%d" % i for i in range(1, 11))
    # shrunk and renamed (.1 to .6), its upper half a pool of its own (.9 to
    # .14), .7 and .8 now in no pool, and a new pool
    pools = [pool("alpha", "192.0.2.0/29"), pool("b", "192.0.2.8/29"),
             pool("c", "198.51.100.0/30")]
    restart_quietly(lb, pools, 10)
    assert all_ips(lb) == before
    # new Services: what is left of b, then c; never .7 or .8, still taken
    more = ["t%d" % i for i in range(6)]
    for n in more:
        lb.service(n)
    after = wait_assigned(lb, names + more)
    no_duplicates(after)
    assert {n: after[n] for n in names} == before
    assert sorted(a for n in more for a in after[n]) == sorted(
        ["192.0.2.11", "192.0.2.12", "192.0.2.13", "192.0.2.14", "198.51.100.1",
         "198.51.100.2"])
    lb.service("t6")
    assert failed(lb, "t6") == \
        "service default/t6: every pool this Service may use is exhausted (IPv4)"
    assert lb.metrics() == {
        ("alpha", "IPv4", "used"): 6, ("alpha", "IPv4", "free"): 0,
        ("b", "IPv4", "used"): 6, ("b", "IPv4", "free"): 0,
        ("c", "IPv4", "used"): 2, ("c", "IPv4", "free"): 0}


def test_metallb_2723_an_address_stays_when_another_service_is_deleted(api, lb):
    lb.start(PUBLIC)
    for n in ("a", "b", "c"):
        lb.service(n)
        lb.wait_ips(n)
    lb.service("s1", annotations={SHARED: "k"})
    lb.service("s2", annotations={SHARED: "k"},
               ports=[{"name": "dns", "port": 53, "protocol": "UDP"}])
    before = wait_assigned(lb, ["a", "b", "c", "s1", "s2"])
    assert before == {"a": ["192.0.2.1"], "b": ["192.0.2.2"], "c": ["192.0.2.3"],
                      "s1": ["192.0.2.4"], "s2": ["192.0.2.4"]}
    lb.quiesce()
    seq = api.log_seq()
    for n in ("b", "s1"):
        api.delete_object("services", n, namespace=NS)
        lb.wait_event(n, "DeletedLoadBalancer")
    lb.quiesce()
    # nobody else moved, nobody else was written to
    assert all_ips(lb) == {n: before[n] for n in ("a", "c", "s2")}
    assert sorted(e["name"] for e in lb.writes(seq)) == ["b", "s1"]
    # the freed address goes to the next Service; the shared one stays s2's
    lb.service("d")
    assert lb.wait_ips("d") == ["192.0.2.2"]
    lb.service("e")
    assert lb.wait_ips("e") == ["192.0.2.5"]
    restart_quietly(lb, PUBLIC, 5)
    assert all_ips(lb) == {"a": ["192.0.2.1"], "c": ["192.0.2.3"], "s2": ["192.0.2.4"],
                           "d": ["192.0.2.2"], "e": ["192.0.2.5"]}


def test_a_restart_with_kube_vip_annotations_is_quiet_too(api, lb):
    pools = [pool("public", "192.0.2.0/29", "2001:db8:1::/125")]
    lb.start(pools, kube_vip=True)
    for n in ("a", "b"):
        lb.service(n, ipFamilyPolicy="PreferDualStack")
    before = wait_assigned(lb, ["a", "b"])
    assert before == {"a": ["192.0.2.1", "2001:db8:1::"], "b": ["192.0.2.2", "2001:db8:1::1"]}
    lb.quiesce()
    assert lb.get("a")["metadata"]["annotations"] == {KUBE_VIP: "192.0.2.1,2001:db8:1::"}
    restart_quietly(lb, pools, 2, kube_vip=True)
    assert all_ips(lb) == before
