"""The hcloud provider's load balancers, end to end: the real binary against
the fake API server and the fake Hetzner Cloud API.

1. The lifecycle with the official CCM's annotations: created in one
   request with services, targets and labels; changed annotations change
   the balancer; a port removed is removed; the Service deleted deletes it.
2. A Node added becomes a target, one removed stops being one.
3. bootccm killed between the create and the status write: the restart
   finds the same balancer by its uid label (one balancer, one create).
4. A balancer of the same name that is not the Service's is left alone,
   with a Warning Event.
5. Services and targets someone else added to bootccm's balancer are never
   touched.
6. More Nodes than the type's max_targets: the balancer serves with as many
   as fit, one Event names the limit, no loop of failing requests.
7. node-selector: one label-selector target; a Node joining costs one
   server label write however many balancers select it.
8. A balancer deleted by hand is made again by the drift check (one listing
   of the cluster's balancers a period).
9. hostname, disable-public-network, proxy protocol: the Service's status.
10. A balancer the official CCM made is handed over as the operator guide
    says: the cluster label added, its services and targets deleted."""

import json
import os
import signal
import time

import pytest

from conftest import Daemon
from conftest import events_about
from test_bootstrap import register, wait_initialized
from test_hcloud import (fakehcloud, hc, hcloud_args, servers_and_nodes,  # noqa: F401
                         private_ip, server_ip)

A = "load-balancer.hetzner.cloud/"
UID_LABEL = "hcloud-ccm/service-uid"


def service(name="web", annotations=None, ports=((80, "TCP"),), namespace="default"):
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": namespace,
                         "annotations": dict(annotations or {})},
            "spec": {"type": "LoadBalancer", "selector": {"app": name},
                     "ports": [{"name": "p%d" % p, "port": p, "protocol": proto}
                               for p, proto in ports]}}


def ingress(api, name="web", namespace="default"):
    o = api.get_object("services", name, namespace=namespace)
    return ((o or {}).get("status") or {}).get("loadBalancer", {}).get("ingress") or []


def wait_ingress(api, name="web", timeout=30, pred=lambda ing: bool(ing)):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ing = ingress(api, name)
        if pred(ing):
            return ing
        time.sleep(0.1)
    raise AssertionError("no status for Service %s within %ss: %s; events: %s"
                         % (name, timeout, ingress(api, name), svc_events(api, name)))


def svc_events(api, name, reason=None):
    return [(e["type"], e["reason"], e["message"]) for e in
            events_about(api, "Service", name, reason)]


def wait_svc_event(api, name, reason, timeout=30, pred=lambda m: True):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = [e for e in svc_events(api, name, reason) if pred(e[2])]
        if got:
            return got[0]
        time.sleep(0.1)
    raise AssertionError("no %s Event for Service %s: %s" % (reason, name,
                                                             svc_events(api, name)))


def ours(hc, svc_uid):
    return [lb for lb in hc.load_balancers()
            if lb["labels"].get(UID_LABEL) == svc_uid]


def wait_lb(hc, uid, pred, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lbs = ours(hc, uid)
        if len(lbs) == 1 and pred(lbs[0]):
            return lbs[0]
        time.sleep(0.1)
    raise AssertionError("load balancer of %s never became as wanted: %s"
                         % (uid, json.dumps(ours(hc, uid))[:3000]))


def target_ids(lb, kind="server"):
    return sorted(t["server"]["id"] for t in lb["targets"] if t["type"] == kind)


def ports_of(lb):
    return sorted(s["listen_port"] for s in lb["services"])


def cluster(api, hc, tmp, n=3, extra_cfg="", extra=(), labels=None):
    """A network, n servers and their Nodes initialized, and the daemon's
    command line (default location fsn1)."""
    net, servers = servers_and_nodes(api, hc, n, labels)
    # a short drift period: a Node whose providerID reaches the service
    # controller while a Service's first ensure runs is only seen by the
    # next drift check (servicectl_queue_served skips Services not yet
    # ensured)
    if not any(a.startswith("--service-sync-period") for a in extra):
        extra = list(extra) + ["--service-sync-period=3s"]
    args = hcloud_args(api, hc, tmp, extra_cfg="  loadBalancers:\n    location: fsn1\n" +
                       extra_cfg, extra=extra)
    return net, servers, args


def serve(api, hc, daemon, args, servers, svc=None):
    """Starts the daemon, waits for the Nodes, creates the Service (web by
    default) and waits for its status and for every Node's server as a
    target. Returns (daemon, Service uid, balancer)."""
    d = daemon(args)
    for n in servers:
        wait_initialized(api, n, timeout=20)
    svc = api.create_object(svc or service())
    wait_ingress(api, svc["metadata"]["name"])
    uid = svc["metadata"]["uid"]
    lb = wait_lb(hc, uid, lambda lb: target_ids(lb) == sorted(s["id"] for s in
                                                              servers.values()))
    return d, uid, lb


def lb_writes(hc, since=0):
    """The requests that change load balancers (not reads)."""
    return [(e["method"], e["path"]) for e in hc.request_log(since)
            if e["path"].startswith("/v1/load_balancers") and e["method"] != "GET"]


# ---- 1 ---------------------------------------------------------------------------


def test_lifecycle_with_annotations(api, hc, tmp, daemon):
    net, servers, args = cluster(api, hc, tmp)
    d = daemon(args)
    for n in servers:
        wait_initialized(api, n, timeout=20)
    seq = hc.log_seq()
    api.create_object(service(annotations={
        A + "use-private-ip": "true",
        A + "algorithm-type": "least_connections",
        A + "type": "lb11",
        A + "health-check-interval": "20s",
        A + "health-check-retries": "2",
        A + "uses-proxyprotocol": "true"}))
    ing = wait_ingress(api)
    uid = api.get_object("services", "web", namespace="default")["metadata"]["uid"]
    want = sorted(s["id"] for s in servers.values())
    lb = wait_lb(hc, uid, lambda lb: target_ids(lb) == want)
    # created in one request: services, targets and labels in the body (a
    # Node whose providerID the controller's cache saw late is added after:
    # recorded in the balancer's labels, then add_target)
    writes = lb_writes(hc, seq)
    assert writes[0] == ("POST", "/v1/load_balancers")
    assert all(p.endswith("/actions/add_target") or
               (m, p) == ("PUT", "/v1/load_balancers/%d" % lb["id"]) for m, p in writes[1:]), \
        writes
    assert all(set(e["body"]) == {"labels"} for e in hc.request_log(seq)
               if e["method"] == "PUT"), writes
    (create,) = [e for e in hc.request_log(seq) if e["method"] == "POST" and
                 e["path"] == "/v1/load_balancers"]
    assert [s["listen_port"] for s in create["body"]["services"]] == [80]
    assert create["body"]["targets"] and create["body"]["network"] == net["id"]
    assert lb["name"] == "a" + uid.replace("-", "")[:31]
    assert lb["labels"]["bootccm.io/cluster"] == "kubernetes"
    assert lb["load_balancer_type"]["name"] == "lb11"
    assert lb["algorithm"]["type"] == "least_connections"
    assert lb["location"]["name"] == "fsn1"
    svc = api.get_object("services", "web", namespace="default")
    node_port = svc["spec"]["ports"][0]["nodePort"]
    (s80,) = lb["services"]
    assert (s80["listen_port"], s80["destination_port"], s80["proxyprotocol"]) == \
        (80, node_port, True)
    assert (s80["health_check"]["protocol"], s80["health_check"]["port"],
            s80["health_check"]["interval"], s80["health_check"]["retries"]) == \
        ("tcp", node_port, 20, 2)
    assert all(t["use_private_ip"] for t in lb["targets"])
    # ingress: public IPv4, IPv6, the private IP; Proxy with the PROXY protocol
    assert ing == [{"ip": lb["public_net"]["ipv4"]["ip"], "ipMode": "Proxy"},
                   {"ip": lb["public_net"]["ipv6"]["ip"], "ipMode": "Proxy"},
                   {"ip": lb["private_net"][0]["ip"], "ipMode": "Proxy"}]
    assert "service.kubernetes.io/load-balancer-cleanup" in svc["metadata"]["finalizers"]
    wait_svc_event(api, "web", "EnsuredLoadBalancer")
    # annotations changed and a port added: the balancer follows
    svc["metadata"]["annotations"][A + "health-check-interval"] = "30s"
    svc["metadata"]["annotations"][A + "algorithm-type"] = "round_robin"
    svc["spec"]["ports"].append({"name": "p443", "port": 443, "protocol": "TCP"})
    api.update_object(svc)
    lb = wait_lb(hc, uid, lambda lb: ports_of(lb) == [80, 443] and
                 lb["algorithm"]["type"] == "round_robin" and
                 all(s["health_check"]["interval"] == 30 for s in lb["services"]))
    # a port removed: its service removed, nothing else
    svc = api.get_object("services", "web", namespace="default")
    svc["spec"]["ports"] = [p for p in svc["spec"]["ports"] if p["port"] == 443]
    api.update_object(svc)
    # (and its record forgotten: 443 in base 36)
    wait_lb(hc, uid, lambda lb: ports_of(lb) == [443] and
            lb["labels"]["bootccm.io/ports"] == "cb")
    # deleted: the balancer goes, then the finalizer
    seq = hc.log_seq()
    api.delete_object("services", "web", namespace="default")
    api.wait_for_object("services", "web", lambda o: o is None, namespace="default",
                        timeout=30)
    assert ours(hc, uid) == []
    assert lb_writes(hc, seq) == [("DELETE", "/v1/load_balancers/%d" % lb["id"])]
    assert d.alive()


# ---- 2 ---------------------------------------------------------------------------


def test_node_added_and_removed(api, hc, tmp, daemon):
    net, servers, args = cluster(api, hc, tmp, n=2)
    d, uid, _ = serve(api, hc, daemon, args, servers)
    s3 = hc.add_server(name="worker-3", private_net=[net["id"]])
    seq = hc.log_seq()
    register(api, "worker-3")
    wait_initialized(api, "worker-3", timeout=20)
    lb = wait_lb(hc, uid, lambda lb: s3["id"] in target_ids(lb))
    assert ("POST", "/v1/load_balancers/%d/actions/add_target" % lb["id"]) in lb_writes(hc, seq)
    assert all(p != "/v1/load_balancers" for _, p in lb_writes(hc, seq))
    api.delete_object("nodes", "worker-1")
    wait_lb(hc, uid, lambda lb: target_ids(lb) == sorted([servers["cp-1"]["id"], s3["id"]]))
    assert d.alive()


# ---- 3 ---------------------------------------------------------------------------


def test_crash_between_create_and_status_write(api, hc, tmp, daemon):
    net, servers, args = cluster(api, hc, tmp, n=2)
    # the status write always fails: the daemon created the balancer and
    # is stuck before recording it
    fid = api.inject_fault(path_prefix="/api/v1/namespaces/default/services/web/status",
                           status=500, count=None)
    d = Daemon(args)
    try:
        for n in servers:
            wait_initialized(api, n, timeout=20)
        api.create_object(service())
        hc.wait_for_request(lambda e: e["method"] == "POST" and
                            e["path"] == "/v1/load_balancers" and e["status"] == 201,
                            timeout=30)
        api.wait_for_request(lambda e: e.get("subresource") == "status" and
                             e.get("resource") == "services" and e["code"] == 500,
                             timeout=30)
    finally:
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
        d.stop()
    assert ingress(api) == []
    api.clear_faults(fid)
    d2 = daemon(args)
    ing = wait_ingress(api)
    uid = api.get_object("services", "web", namespace="default")["metadata"]["uid"]
    lbs = ours(hc, uid)
    assert len(lbs) == 1, lbs
    assert len(hc.load_balancers()) == 1
    creates = [e for e in hc.request_log() if e["method"] == "POST" and
               e["path"] == "/v1/load_balancers"]
    assert len(creates) == 1
    assert ing[0]["ip"] == lbs[0]["public_net"]["ipv4"]["ip"]
    assert d2.alive()


# ---- 4 ---------------------------------------------------------------------------


def test_foreign_balancer_with_the_same_name_is_left_alone(api, hc, tmp, daemon):
    net, servers, args = cluster(api, hc, tmp, n=1)
    other = hc.add_server(name="db-1")
    foreign = hc.add_load_balancer(
        name="shared-lb", labels={"team": "db"},
        services=[{"protocol": "tcp", "listen_port": 5432, "destination_port": 5432}],
        targets=[{"type": "server", "server": {"id": other["id"]}}])
    before = hc.load_balancer(foreign["id"])
    d = daemon(args)
    wait_initialized(api, "cp-1", timeout=20)
    seq = hc.log_seq()
    api.create_object(service(annotations={A + "name": "shared-lb"}))
    _, _, msg = wait_svc_event(api, "web", "SyncLoadBalancerFailed")
    assert "shared-lb" in msg and "leaves it alone" in msg, msg
    time.sleep(1)
    assert hc.load_balancer(foreign["id"]) == before
    assert all(p != "/v1/load_balancers/%d" % foreign["id"] and
               not p.startswith("/v1/load_balancers/%d/" % foreign["id"])
               for _, p in lb_writes(hc, seq))
    assert ingress(api) == []
    # the Service deleted: nothing of bootccm's to delete, the foreign one stays
    api.delete_object("services", "web", namespace="default")
    api.wait_for_object("services", "web", lambda o: o is None, namespace="default",
                        timeout=30)
    assert hc.load_balancer(foreign["id"]) == before
    assert d.alive()


def test_balancer_with_the_uid_but_another_cluster_is_left_alone(api, hc, tmp, daemon):
    net, servers, args = cluster(api, hc, tmp, n=1)
    d = daemon(args)
    wait_initialized(api, "cp-1", timeout=20)
    svc = api.create_object(service())
    uid = svc["metadata"]["uid"]
    # the official CCM made one for this Service: the uid label, no cluster
    wait_ingress(api)
    lb = ours(hc, uid)[0]
    api_c = Api(hc)
    labels = dict(lb["labels"])
    del labels["bootccm.io/cluster"]
    api_c.put("load_balancers/%d" % lb["id"], {"labels": labels})
    before = hc.load_balancer(lb["id"])
    # a port added: bootccm does not touch it, and says why
    svc = api.get_object("services", "web", namespace="default")
    svc["spec"]["ports"].append({"name": "p443", "port": 443, "protocol": "TCP"})
    api.update_object(svc)
    _, _, msg = wait_svc_event(api, "web", "SyncLoadBalancerFailed",
                               pred=lambda m: "bootccm.io/cluster" in m)
    assert "leaves it alone" in msg, msg
    assert hc.load_balancer(lb["id"]) == before
    assert d.alive()


def test_handover_of_a_balancer_the_official_ccm_made(api, hc, tmp, daemon):
    """The operator guide's migration: a balancer the official CCM made (its
    uid label, its service and server targets) is left alone until the
    bootccm.io/cluster label is added and its services and targets are
    deleted; then bootccm serves the Service with that same balancer."""
    net, servers, args = cluster(api, hc, tmp, n=2)
    svc = api.create_object(service())
    uid = svc["metadata"]["uid"]
    node_port = svc["spec"]["ports"][0]["nodePort"]
    old = hc.add_load_balancer(
        name="web-lb", labels={UID_LABEL: uid},
        services=[{"protocol": "tcp", "listen_port": 80, "destination_port": node_port}],
        targets=[{"type": "server", "server": {"id": s["id"]}} for s in servers.values()])
    d = daemon(args)
    for n in servers:
        wait_initialized(api, n, timeout=20)
    _, _, msg = wait_svc_event(api, "web", "SyncLoadBalancerFailed",
                               pred=lambda m: "bootccm.io/cluster" in m)
    assert "web-lb" in msg and "leaves it alone" in msg, msg
    assert ingress(api) == []
    # the handover: the label, then the official CCM's service and targets go
    c = Api(hc)
    labels = dict(hc.load_balancer(old["id"])["labels"])
    labels["bootccm.io/cluster"] = "kubernetes"
    c.put("load_balancers/%d" % old["id"], {"labels": labels})
    c.post("load_balancers/%d/actions/delete_service" % old["id"], {"listen_port": 80})
    for s in servers.values():
        c.post("load_balancers/%d/actions/remove_target" % old["id"],
               {"type": "server", "server": {"id": s["id"]}})
    # bootccm serves the Service with the same balancer: its port, its nodes
    lb = wait_lb(hc, uid, lambda lb: ports_of(lb) == [80] and target_ids(lb) == sorted(
        s["id"] for s in servers.values()), timeout=30)
    assert lb["id"] == old["id"]
    assert [x for x in lb["services"] if x["listen_port"] == 80][0]["destination_port"] == \
        node_port
    ing = wait_ingress(api)
    assert {"ip": lb["public_net"]["ipv4"]["ip"]} in [{"ip": i.get("ip")} for i in ing]
    assert len(hc.load_balancers()) == 1
    # and it is bootccm's now: the Service deleted deletes it
    api.delete_object("services", "web", namespace="default")
    api.wait_for_object("services", "web", lambda o: o is None, namespace="default",
                        timeout=30)
    assert hc.load_balancers() == []
    assert d.alive()


class Api(object):
    """Writes to the fake Hetzner API as a person with the console would."""

    def __init__(self, hc):
        import http.client
        self.hc, self.http = hc, http.client

    def req(self, method, path, body=None):
        c = self.http.HTTPConnection(self.hc.host, self.hc.port, timeout=10)
        h = {"Authorization": "Bearer " + self.hc.token, "Content-Type": "application/json"}
        c.request(method, "/v1/" + path, body=json.dumps(body) if body is not None else None,
                  headers=h)
        r = c.getresponse()
        out = r.read()
        c.close()
        assert r.status < 300, (r.status, out)
        return json.loads(out) if out else None

    def put(self, path, body):
        return self.req("PUT", path, body)

    def post(self, path, body):
        out = self.req("POST", path, body)
        aid = out["action"]["id"]
        for _ in range(100):
            a = self.req("GET", "actions/%d" % aid)["action"]
            if a["status"] != "running":
                return a
            time.sleep(0.05)
        raise AssertionError("action %d still running" % aid)

    def delete(self, path):
        return self.req("DELETE", path)


# ---- 5 ---------------------------------------------------------------------------


def test_foreign_services_and_targets_are_never_touched(api, hc, tmp, daemon):
    net, servers, args = cluster(api, hc, tmp, n=3)
    bastion = hc.add_server(name="bastion", private_net=[net["id"]])
    d, uid, lb = serve(api, hc, daemon, args, servers,
                       service(ports=((80, "TCP"), (443, "TCP"))))
    # someone adds ssh to the bastion by hand
    c = Api(hc)
    c.post("load_balancers/%d/actions/add_service" % lb["id"],
           {"protocol": "tcp", "listen_port": 22, "destination_port": 22})
    c.post("load_balancers/%d/actions/add_target" % lb["id"],
           {"type": "server", "server": {"id": bastion["id"]}})
    # the Service drops 443 and a node leaves: bootccm removes what it made
    svc = api.get_object("services", "web", namespace="default")
    svc["spec"]["ports"] = [p for p in svc["spec"]["ports"] if p["port"] == 80]
    api.update_object(svc)
    api.delete_object("nodes", "worker-2")
    lb = wait_lb(hc, uid, lambda lb: ports_of(lb) == [22, 80] and
                 servers["worker-2"]["id"] not in target_ids(lb))
    assert bastion["id"] in target_ids(lb)
    assert 22 in ports_of(lb)
    # and the Service deleted: the balancer is bootccm's, so it goes
    api.delete_object("services", "web", namespace="default")
    api.wait_for_object("services", "web", lambda o: o is None, namespace="default",
                        timeout=30)
    assert ours(hc, uid) == []
    assert d.alive()


# ---- 6 ---------------------------------------------------------------------------


def test_max_targets_is_an_event_not_a_loop(api, hc, tmp, daemon):
    hc.set_load_balancer_type("lb11", max_targets=2)
    net, servers, args = cluster(api, hc, tmp, n=4)
    d = daemon(args)
    for n in servers:
        wait_initialized(api, n, timeout=20)
    seq = hc.log_seq()
    api.create_object(service())
    wait_ingress(api, timeout=40)
    uid = api.get_object("services", "web", namespace="default")["metadata"]["uid"]
    lb = ours(hc, uid)[0]
    assert len(target_ids(lb)) == 2
    assert lb["services"][0]["listen_port"] == 80   # served all the same
    ev = [e for e in svc_events(api, "web", "SyncLoadBalancerFailed")]
    assert len(ev) == 1, ev
    assert "takes at most 2 targets" in ev[0][2] and "of the Service's" in ev[0][2]
    # a while later: no request failed, nothing was tried again
    time.sleep(3)
    assert [e for e in hc.request_log(seq) if e["status"] >= 400] == []
    assert [p for _, p in lb_writes(hc, seq) if p.endswith("add_target")] == []
    assert len(svc_events(api, "web", "SyncLoadBalancerFailed")) == 1
    assert d.alive()


# ---- 7 ---------------------------------------------------------------------------


def test_node_selector_uses_label_selector_targets(api, hc, tmp, daemon):
    ingress_nodes = {"worker-1": {"pool": "ingress"}, "worker-2": {"pool": "ingress"}}
    net, servers, args = cluster(api, hc, tmp, n=3, labels=ingress_nodes)
    d = daemon(args)
    for n in servers:
        wait_initialized(api, n, timeout=20)
    for name in ("web", "api"):
        api.create_object(service(name=name, annotations={A + "node-selector": "pool=ingress"}))
        wait_ingress(api, name)
    uids = [api.get_object("services", n, namespace="default")["metadata"]["uid"]
            for n in ("web", "api")]
    want = sorted(servers[n]["id"] for n in ingress_nodes)
    for uid in uids:
        lb = ours(hc, uid)[0]
        (t,) = lb["targets"]
        assert t["type"] == "label_selector"
        assert t["label_selector"]["selector"].startswith("bootccm.io/lb-")
        assert target_ids({"targets": t["targets"]}) == want
    # a Node joins the pool: one server label write, for both balancers
    seq = hc.log_seq()
    o = api.get_object("nodes", "cp-1")
    o["metadata"]["labels"]["pool"] = "ingress"
    api.update_object(o)
    for uid in uids:
        wait_lb(hc, uid, lambda lb: target_ids({"targets": lb["targets"][0]["targets"]}) ==
                sorted(want + [servers["cp-1"]["id"]]))
    writes = [(e["method"], e["path"]) for e in hc.request_log(seq) if e["method"] != "GET"]
    assert writes == [("PUT", "/v1/servers/%d" % servers["cp-1"]["id"])], writes
    # and leaves it
    seq = hc.log_seq()
    o = api.get_object("nodes", "worker-1")
    del o["metadata"]["labels"]["pool"]
    api.update_object(o)
    for uid in uids:
        wait_lb(hc, uid, lambda lb: servers["worker-1"]["id"] not in
                target_ids({"targets": lb["targets"][0]["targets"]}))
    writes = [(e["method"], e["path"]) for e in hc.request_log(seq) if e["method"] != "GET"]
    assert writes == [("PUT", "/v1/servers/%d" % servers["worker-1"]["id"])], writes
    assert d.alive()


# ---- 8 ---------------------------------------------------------------------------


def test_a_balancer_deleted_by_hand_is_made_again(api, hc, tmp, daemon):
    net, servers, args = cluster(api, hc, tmp, n=2, extra=["--service-sync-period=2s"])
    d, uid, lb = serve(api, hc, daemon, args, servers)
    time.sleep(0.5)
    # idle: one listing of the cluster's balancers a period
    seq = hc.log_seq()
    time.sleep(5)
    idle = hc.request_log(seq)
    assert idle and all(e["path"] == "/v1/load_balancers" and "bootccm.io" in
                        e["query"] for e in idle), idle
    Api(hc).delete("load_balancers/%d" % lb["id"])
    new = wait_lb(hc, uid, lambda x: x["id"] != lb["id"], timeout=30)
    wait_ingress(api, pred=lambda ing: ing and ing[0]["ip"] == new["public_net"]["ipv4"]["ip"])
    assert d.alive()


# ---- 9 ---------------------------------------------------------------------------


@pytest.mark.parametrize("annotations,want", [
    ({A + "hostname": "lb.example.com"}, lambda lb: [{"hostname": "lb.example.com"}]),
    ({A + "use-private-ip": "true", A + "disable-public-network": "true"},
     lambda lb: [{"ip": lb["private_net"][0]["ip"], "ipMode": "VIP"}]),
    ({A + "ipv6-disabled": "true", A + "disable-private-ingress": "true"},
     lambda lb: [{"ip": lb["public_net"]["ipv4"]["ip"], "ipMode": "VIP"}]),
])
def test_status(api, hc, tmp, daemon, annotations, want):
    net, servers, args = cluster(api, hc, tmp, n=1)
    daemon(args)
    wait_initialized(api, "cp-1", timeout=20)
    api.create_object(service(annotations=annotations))
    ing = wait_ingress(api)
    uid = api.get_object("services", "web", namespace="default")["metadata"]["uid"]
    lb = ours(hc, uid)[0]
    assert ing == want(lb)
    if A + "disable-public-network" in annotations:
        assert lb["public_net"]["enabled"] is False


def test_bad_annotation_is_an_event_naming_it(api, hc, tmp, daemon):
    net, servers, args = cluster(api, hc, tmp, n=1)
    d = daemon(args)
    wait_initialized(api, "cp-1", timeout=20)
    seq = hc.log_seq()
    api.create_object(service(annotations={A + "health-check-interval": "often"}))
    _, _, msg = wait_svc_event(api, "web", "SyncLoadBalancerFailed")
    assert "annotation load-balancer.hetzner.cloud/health-check-interval" in msg, msg
    assert "not a duration" in msg
    assert [e for e in hc.request_log(seq) if e["path"].startswith("/v1/load_balancers")] == []
    assert d.alive()
