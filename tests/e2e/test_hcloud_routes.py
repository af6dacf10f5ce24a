"""The hcloud provider's routes, end to end: the real binary's route
controller against the fake API server and the fake Hetzner Cloud API.

1. Each Node's podCIDR gets a route in the configured network via its
   server's private IP (NetworkUnavailable False/RouteCreated); a Node
   deleted loses its route; routes outside the cluster CIDR stay.
2. An idle reconcile costs one request: the network's GET.
3. The network's route limit (the cloud-config's maxRoutes, or the API's
   resource_limit_exceeded) is a FailedToCreateRoute Event naming it, and
   no request is tried again while the network is full.
4. A conflict (another change of the network running) is retried.
5. A route whose gateway no server has any more is deleted.
6. Passes faster than the project's refill are paced by the rate limiter
   before the project runs dry: no 429."""

import time

import pytest

from test_bootstrap import events_for, wait_initialized
from test_hcloud import hc, hcloud_args, private_ip, servers_and_nodes  # noqa: F401
from test_hcloud_lb import Api

CLUSTER_CIDR = "10.244.0.0/16"


def with_pod_cidr(api, name, cidr):
    o = api.get_object("nodes", name)
    o["spec"]["podCIDR"] = cidr
    o["spec"]["podCIDRs"] = [cidr]
    api.update_object(o)


def routes(hc, net_id):
    return sorted((r["destination"], r["gateway"]) for r in hc.network(net_id)["routes"])


def wait_routes(hc, net_id, want, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if routes(hc, net_id) == sorted(want):
            return
        time.sleep(0.1)
    raise AssertionError("routes %s, not %s" % (routes(hc, net_id), sorted(want)))


def condition(api, name):
    for c in api.get_object("nodes", name)["status"].get("conditions") or []:
        if c["type"] == "NetworkUnavailable":
            return c["status"], c.get("reason")
    return None


def routed_cluster(api, hc, tmp, n, extra_cfg="", period="1s"):
    net, servers = servers_and_nodes(api, hc, n)
    args = hcloud_args(api, hc, tmp, extra_cfg=extra_cfg, extra=[
        "--cluster-cidr=" + CLUSTER_CIDR, "--route-reconciliation-period=" + period])
    return net, servers, args


def test_routes_follow_pod_cidrs(api, hc, tmp, daemon):
    net, servers, args = routed_cluster(api, hc, tmp, 3)
    d = daemon(args)
    for n in servers:
        wait_initialized(api, n, timeout=20)
    # someone's route outside the cluster CIDR: never touched
    Api(hc).post("networks/%d/actions/add_route" % net["id"],
                 {"destination": "192.168.77.0/24", "gateway": private_ip(servers["cp-1"])})
    want = [("192.168.77.0/24", private_ip(servers["cp-1"]))]
    for i, n in enumerate(servers):
        cidr = "10.244.%d.0/24" % i
        with_pod_cidr(api, n, cidr)
        want.append((cidr, private_ip(servers[n])))
    wait_routes(hc, net["id"], want)
    for n in servers:
        api.wait_for_object("nodes", n, lambda o: condition(api, n) == ("False", "RouteCreated"),
                            timeout=20)
    # a Node deleted: its route goes
    api.delete_object("nodes", "worker-2")
    want = [w for w in want if w[1] != private_ip(servers["worker-2"])]
    wait_routes(hc, net["id"], want)
    assert d.alive()


def route_all(api, hc, net, servers):
    """Gives every Node a podCIDR (10.244.i.0/24) once initialized and
    waits for their routes."""
    for i, n in enumerate(servers):
        wait_initialized(api, n, timeout=20)
        with_pod_cidr(api, n, "10.244.%d.0/24" % i)
    wait_routes(hc, net["id"], [("10.244.%d.0/24" % i, private_ip(servers[n]))
                               for i, n in enumerate(servers)])


def test_idle_reconcile_costs_one_request(api, hc, tmp, daemon):
    net, servers, args = routed_cluster(api, hc, tmp, 2)
    d = daemon(args)
    route_all(api, hc, net, servers)
    time.sleep(1.5)
    seq = hc.log_seq()
    time.sleep(4)
    log = [(e["method"], e["path"]) for e in hc.request_log(seq)]
    assert log, "no reconcile in 4 s"
    # every pass: the network, nothing else (the official CCM lists every
    # server as well)
    assert set(log) == {("GET", "/v1/networks/%d" % net["id"])}, log
    assert 2 <= len(log) <= 6, log
    assert d.alive()


def route_events(api, name):
    return [e["message"] for e in events_for(api, name, "FailedToCreateRoute")]


def wait_limited(api, hc, net, servers, timeout=30):
    """Waits until two routes exist and one Node has the Event; returns
    that Node's name (which one is left out depends on the order of the
    route controller's parallel creates)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        routed = {gw for _, gw in routes(hc, net["id"])}
        left = [n for n in servers if private_ip(servers[n]) not in routed]
        if len(routed) == 2 and len(left) == 1 and route_events(api, left[0]):
            return left[0]
        time.sleep(0.1)
    raise AssertionError("routes %s; events %s" % (routes(hc, net["id"]), {
        n: route_events(api, n) for n in servers}))


def check_limit(api, hc, d, limited):
    """The Node left out has an Event naming the limit; the passes go on
    without another add_route."""
    msg = route_events(api, limited)[0]
    assert "the most it takes" in msg, msg
    seq = hc.log_seq()
    time.sleep(3)
    assert [e for e in hc.request_log(seq) if e["method"] == "POST"] == []
    api.wait_for_object("nodes", limited, lambda o: condition(api, limited) ==
                        ("True", "NoRouteCreated"), timeout=10)
    assert d.alive()


@pytest.mark.parametrize("where", ["cloud-config", "api"])
def test_route_limit_is_an_event_not_a_loop(api, hc, tmp, daemon, where):
    # the limit of 2 routes is the cloud-config's maxRoutes, or the API's own
    net, servers, args = routed_cluster(api, hc, tmp, 3, extra_cfg="  maxRoutes: 2\n"
                                        if where == "cloud-config" else "")
    if where == "api":
        hc.state.max_routes = 2
    d = daemon(args)
    for i, n in enumerate(servers):
        wait_initialized(api, n, timeout=20)
        with_pod_cidr(api, n, "10.244.%d.0/24" % i)
    limited = wait_limited(api, hc, net, servers)
    check_limit(api, hc, d, limited)
    refused = [e for e in hc.request_log() if e["error"] == "resource_limit_exceeded"]
    # the cloud-config's limit: the API is not even asked; the API's: once
    assert len(refused) == (0 if where == "cloud-config" else 1), refused


def test_conflict_is_retried(api, hc, tmp, daemon):
    net, servers, args = routed_cluster(api, hc, tmp, 1)
    fid = hc.inject_fault(path="/v1/networks/*/actions/add_route", status=409,
                          code="conflict", count=2)
    d = daemon(args)
    wait_initialized(api, "cp-1", timeout=20)
    with_pod_cidr(api, "cp-1", "10.244.0.0/24")
    wait_routes(hc, net["id"], [("10.244.0.0/24", private_ip(servers["cp-1"]))])
    assert [f for f in hc.faults() if f["id"] == fid][0]["hits"] == 2
    assert route_events(api, "cp-1") == []
    assert d.alive()


def test_blackholed_route_is_deleted(api, hc, tmp, daemon):
    net, servers, args = routed_cluster(api, hc, tmp, 2)
    gone = hc.add_server(name="gone", private_net=[net["id"]])
    Api(hc).post("networks/%d/actions/add_route" % net["id"],
                 {"destination": "10.244.9.0/24", "gateway": private_ip(gone)})
    hc.remove_server(gone["id"])
    d = daemon(args)
    # the gone server's route: deleted (no server has its gateway)
    route_all(api, hc, net, servers)
    assert d.alive()


# ---- 6 ---------------------------------------------------------------------------


def test_requests_are_paced_before_the_project_limit(api, hc, tmp, daemon):
    """A route pass every 100 ms asks for the network ten times a second;
    the project refills one request a second and has 30 left. bootccm's
    bucket, fed by the RateLimit-* headers, goes at once down to its
    reserve and then at the refill rate: the project never runs dry and
    no request is answered 429 (the official CCM has no limiter and runs
    into them: hcloud-ccm #308, #661)."""
    hc.set_rate_limit(limit=100, remaining=30, refill=1.0)
    net, servers, args = routed_cluster(api, hc, tmp, 2, period="100ms")
    d = daemon(args)
    for n in servers:
        wait_initialized(api, n, timeout=20)
    for i, n in enumerate(sorted(servers)):
        with_pod_cidr(api, n, "10.244.%d.0/24" % i)
    wait_routes(hc, net["id"], [("10.244.%d.0/24" % i, private_ip(servers[n]))
                                for i, n in enumerate(sorted(servers))])
    time.sleep(4)
    seq = hc.log_seq()
    t0 = time.monotonic()
    time.sleep(8)
    secs = time.monotonic() - t0
    log = hc.request_log(seq)
    assert all(e["status"] != 429 for e in hc.request_log()), \
        [e for e in hc.request_log() if e["status"] == 429][:3]
    # paced at the refill rate (a second each), not at the 10 a second asked
    assert 3 <= len(log) <= secs + 3, len(log)
    assert int(hc.rate.peek()["RateLimit-Remaining"]) >= 1
    assert d.alive()
