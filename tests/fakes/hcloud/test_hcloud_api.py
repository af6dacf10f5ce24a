"""The fake Hetzner Cloud API's own semantics: auth, errors, rate limit,
paging, selectors, servers, load balancers (every action, its validation and
limits), networks and routes, actions, faults, the request log, the control
API, the CLI and TLS.

Run: /usr/bin/python3 -m pytest tests/fakes/hcloud
Everything binds 127.0.0.1 on port 0.
"""

import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request

import pytest

pytest.register_assert_rewrite("hcfixtures")

import fakehcloud  # noqa: E402
from hcfixtures import Api  # noqa: E402

pytest_plugins = ("hcfixtures",)  # the hc and api fixtures

HERE = os.path.dirname(os.path.abspath(__file__))


def _net(hc, **kw):
    kw.setdefault("name", "k8s")
    return hc.add_network(**kw)


def _lb(api, name="lb1", **kw):
    body = {"name": name, "load_balancer_type": "lb11", "location": "fsn1"}
    body.update(kw)
    return api.ok("POST", "load_balancers", body)["load_balancer"]


# -- auth and the error envelope ----------------------------------------------

def test_no_token_is_401_unauthorized(hc):
    api = Api(hc, token="")
    assert api.error("GET", "servers") == (401, "unauthorized")


def test_wrong_token_is_401_and_tokens_change_at_run_time(hc):
    assert Api(hc, token="wrong").error("GET", "servers") == \
        (401, "unauthorized")
    hc.set_tokens(["rotated"])
    assert Api(hc, token=fakehcloud.DEFAULT_TOKEN).error(
        "GET", "servers") == (401, "unauthorized")
    assert Api(hc, token="rotated").get("servers")[0] == 200
    hc.add_token("second")
    assert Api(hc, token="second").get("servers")[0] == 200
    hc.remove_token("second")
    assert Api(hc, token="second").get("servers")[0] == 401


def test_readonly_token_may_only_get(hc):
    hc.add_token("ro", readonly=True)
    api = Api(hc, token="ro")
    assert api.get("servers")[0] == 200
    assert api.error("POST", "load_balancers", {}) == (401, "token_readonly")


def test_every_error_is_a_json_envelope(hc, api):
    assert api.error("GET", "nothing-here") == (404, "not_found")
    assert api.error("GET", "servers/99") == (404, "not_found")
    assert api.error("DELETE", "locations") == (405, "method_not_allowed")
    st, h, out = api.request("POST", "load_balancers", raw=b"{not json",
                             headers={"Content-Type": "application/json"})
    assert (st, out["error"]["code"]) == (400, "json_error")
    assert h["content-type"] == "application/json"
    assert api.error("POST", "load_balancers", {}) == (422, "invalid_input")
    st, _, out = api.request("POST", "load_balancers", {})
    assert out["error"]["details"]["fields"][0]["name"] == "name"


def test_not_found_message(api):
    st, _, out = api.get("servers/99")
    assert out["error"] == {"code": "not_found", "details": None,
                            "message": "server with ID '99' not found"}


# -- rate limiting ------------------------------------------------------------

def test_rate_limit_headers_on_every_answer(hc, api):
    lb = _lb(api)
    answers = [api.get("servers"), Api(hc, token="").get("servers"),
               api.get("servers/1"),
               api.request("DELETE", "load_balancers/%d" % lb["id"])]
    assert [a[0] for a in answers] == [200, 401, 404, 204]
    for st, h, out in answers:
        assert int(h["ratelimit-limit"]) == 3600
        assert 0 <= int(h["ratelimit-remaining"]) < 3600
        assert int(h["ratelimit-reset"]) >= int(time.time())
    assert answers[3][2] == b"" and "content-type" not in answers[3][1]


def test_rate_limit_bucket_empties_and_refills_one_per_second(hc, api):
    hc.set_rate_limit(limit=3)
    seen = [int(api.get("locations")[1]["ratelimit-remaining"])
            for _ in range(3)]
    assert seen == [2, 1, 0]
    st, h, out = api.get("locations")
    assert (st, out["error"]["code"]) == (429, "rate_limit_exceeded")
    assert h["content-type"] == "application/json"
    assert h["ratelimit-remaining"] == "0" and h["ratelimit-limit"] == "3"
    # full again in ~3 s: Reset is when the bucket is full
    assert int(h["ratelimit-reset"]) - time.time() == pytest.approx(3, abs=1)
    time.sleep(1.1)
    assert api.get("locations")[0] == 200
    assert api.get("locations")[0] == 429


def test_rate_limit_counts_unauthenticated_requests(hc, api):
    hc.set_rate_limit(limit=2)
    assert Api(hc, token="").get("servers")[0] == 401
    assert Api(hc, token="").get("servers")[0] == 401
    assert api.error("GET", "servers") == (429, "rate_limit_exceeded")


# -- pagination, filters, sorting ---------------------------------------------

def _seed_many(hc, n=60):
    for i in range(n):
        hc.add_server(name="node-%02d" % i,
                      labels={"pool": "a" if i % 2 else "b", "i": str(i)})


def test_paging_meta_and_link_header(hc, api):
    _seed_many(hc)
    st, h, out = api.get("servers")
    pag = out["meta"]["pagination"]
    assert pag == {"page": 1, "per_page": 25, "previous_page": None,
                   "next_page": 2, "last_page": 3, "total_entries": 60}
    assert len(out["servers"]) == 25
    assert 'page=2&per_page=25>; rel="next"' in h["link"]
    assert 'page=3&per_page=25>; rel="last"' in h["link"]
    assert 'rel="prev"' not in h["link"]
    st, h, out = api.get("servers?page=3")
    assert len(out["servers"]) == 10
    assert out["meta"]["pagination"]["next_page"] is None
    assert out["meta"]["pagination"]["previous_page"] == 2
    assert 'rel="next"' not in h["link"] and 'rel="prev"' in h["link"]


def test_per_page_is_at_most_50(hc, api):
    _seed_many(hc)
    out = api.ok("GET", "servers?per_page=100")
    assert out["meta"]["pagination"]["per_page"] == 50
    assert len(out["servers"]) == 50
    assert api.error("GET", "servers?per_page=0")[1] == "invalid_input"
    assert api.error("GET", "servers?page=x")[1] == "invalid_input"


def test_link_next_walks_every_page(hc, api):
    _seed_many(hc, 12)
    url, ids = "servers?per_page=5&label_selector=pool", []
    while url:
        st, h, out = api.get(url)
        ids += [s["id"] for s in out["servers"]]
        url = None
        for part in h["link"].split(", "):
            if part.endswith('rel="next"'):
                url = part[1:part.index(">")].split("127.0.0.1:%d" %
                                                    hc.port)[1]
    assert ids == sorted(s["id"] for s in hc.servers())


def test_page_past_the_end_is_empty(hc, api):
    _seed_many(hc, 3)
    out = api.ok("GET", "servers?page=7")
    assert out["servers"] == []
    assert out["meta"]["pagination"]["last_page"] == 1


def test_server_name_is_an_exact_match(hc, api):
    hc.add_server(name="node-a")
    hc.add_server(name="node-ab")
    out = api.ok("GET", "servers?name=node-a")
    assert [s["name"] for s in out["servers"]] == ["node-a"]
    assert api.ok("GET", "servers?name=node")["servers"] == []


@pytest.mark.parametrize("sel,want", [
    ("pool=a", {1, 3}), ("pool==a", {1, 3}), ("pool!=a", {0, 2, 4}),
    ("pool in (a,b)", {0, 1, 2, 3}), ("pool notin (a)", {0, 2, 4}),
    ("pool", {0, 1, 2, 3}), ("!pool", {4}), ("pool=b,i!=0", {2}),
    ("pool in (a, b),!x", {0, 1, 2, 3}),
])
def test_label_selectors(hc, api, sel, want):
    for i in range(5):
        labels = {"i": str(i)}
        if i < 4:
            labels["pool"] = "a" if i % 2 else "b"
        hc.add_server(name="s%d" % i, labels=labels)
    out = api.ok("GET", "servers?" + urllib.parse.urlencode(
        {"label_selector": sel}))
    assert {int(s["labels"]["i"]) for s in out["servers"]} == want


def test_bad_label_selector_is_invalid_input(api):
    assert api.error("GET", "servers?label_selector=a%3D%3D%3Db") == \
        (422, "invalid_input")
    assert api.error("GET", "servers?label_selector=a%20in%20(x") == \
        (422, "invalid_input")


def test_status_filter_is_repeatable(hc, api):
    hc.add_server(name="a", status="running")
    hc.add_server(name="b", status="off")
    hc.add_server(name="c", status="starting")
    out = api.ok("GET", "servers?status=off&status=starting")
    assert sorted(s["name"] for s in out["servers"]) == ["b", "c"]
    assert api.error("GET", "servers?status=bogus")[1] == "invalid_input"


def test_sort(hc, api):
    for n in ("b", "c", "a"):
        hc.add_server(name=n)
    names = [s["name"] for s in api.ok("GET", "servers?sort=name:desc")[
        "servers"]]
    assert names == ["c", "b", "a"]
    assert api.error("GET", "servers?sort=ipv4")[1] == "invalid_input"


# -- servers ------------------------------------------------------------------

def test_server_shape_has_location_and_no_datacenter(hc, api):
    n = _net(hc)
    s = hc.add_server(name="node-a", location="nbg1", private_net=[n["id"]],
                      labels={"k": "v"})
    out = api.ok("GET", "servers/%d" % s["id"])["server"]
    assert "datacenter" not in out
    assert out["location"]["name"] == "nbg1"
    assert out["location"]["network_zone"] == "eu-central"
    assert out["public_net"]["ipv4"]["ip"]
    assert out["public_net"]["ipv6"]["ip"].endswith("::/64")
    assert out["private_net"] == [{"network": n["id"], "ip": "10.0.0.2",
                                   "alias_ips": [],
                                   "mac_address": out["private_net"][0][
                                       "mac_address"]}]
    assert out["server_type"]["name"] == "cx22"
    assert out["labels"] == {"k": "v"}
    for key in ("id", "name", "status", "created", "image", "locked",
                "protection", "load_balancers", "volumes",
                "primary_disk_size", "placement_group"):
        assert key in out


def test_server_without_public_ipv4(hc, api):
    s = hc.add_server(name="private-only", public_ipv4=None, public_ipv6=None)
    out = api.ok("GET", "servers/%d" % s["id"])["server"]
    assert out["public_net"]["ipv4"] is None
    assert out["public_net"]["ipv6"] is None


def test_legacy_datacenter_is_opt_in(hc, api):
    s = hc.add_server(name="node-a", location="hel1")
    hc.set_legacy_datacenter(True)
    out = api.ok("GET", "servers/%d" % s["id"])["server"]
    assert out["datacenter"]["name"] == "hel1-dc2"
    assert out["datacenter"]["location"] == out["location"]
    hc.set_legacy_datacenter(False)
    assert "datacenter" not in api.ok("GET", "servers/%d" % s["id"])["server"]


def test_server_changes_from_python(hc, api):
    s = hc.add_server(name="node-a")
    hc.update_server(s["id"], status="off", labels={"x": "y"},
                     public_ipv4="203.0.113.7")
    out = api.ok("GET", "servers/%d" % s["id"])["server"]
    assert (out["status"], out["labels"]) == ("off", {"x": "y"})
    assert out["public_net"]["ipv4"]["ip"] == "203.0.113.7"
    hc.remove_server(s["id"])
    assert api.error("GET", "servers/%d" % s["id"])[0] == 404


def test_update_server_name_and_labels(hc, api):
    s = hc.add_server(name="node-a", labels={"keep": "1"})
    hc.add_server(name="node-b")
    p = "servers/%d" % s["id"]
    out = api.ok("PUT", p, {"labels": {"keep": "1", "bootccm.io/lb-x": ""}})
    assert out["server"]["labels"] == {"keep": "1", "bootccm.io/lb-x": ""}
    # labels are replaced whole, the name is kept
    out = api.ok("PUT", p, {"labels": {"new": "v"}})["server"]
    assert (out["name"], out["labels"]) == ("node-a", {"new": "v"})
    sel = api.ok("GET", "servers?label_selector=new")["servers"]
    assert [x["id"] for x in sel] == [s["id"]]
    assert api.ok("PUT", p, {"name": "node-c"})["server"]["name"] == "node-c"
    assert api.error("PUT", p, {"name": "node-b"}) == (409, "uniqueness_error")
    assert api.error("PUT", p, {"name": ""}) == (422, "invalid_input")
    assert api.error("PUT", p, {"labels": {"a b": "c"}}) == (
        422, "invalid_input")
    assert api.error("PUT", p, {"labels": "x"}) == (422, "invalid_input")
    assert api.error("PUT", "servers/99", {"labels": {}}) == (404, "not_found")


def test_delete_server_returns_an_action(hc, api):
    s = hc.add_server(name="node-a")
    st, _, out = api.request("DELETE", "servers/%d" % s["id"])
    assert st == 200 and out["action"]["command"] == "delete_server"
    assert api.get("servers/%d" % s["id"])[0] == 404


# -- load balancers: create, list, update, delete -----------------------------

def test_create_load_balancer_is_201_with_an_action(hc, api):
    st, _, out = api.request("POST", "load_balancers", {
        "name": "lb1", "load_balancer_type": "lb11", "location": "fsn1",
        "labels": {"hcloud-ccm/service-uid": "1234"}})
    assert st == 201
    lb, a = out["load_balancer"], out["action"]
    assert a["command"] == "create_load_balancer"
    assert a["status"] == "running"
    assert a["resources"] == [{"id": lb["id"], "type": "load_balancer"}]
    assert set(a) == {"id", "command", "status", "progress", "started",
                      "finished", "resources", "error"}
    assert lb["public_net"]["enabled"] is True
    assert lb["public_net"]["ipv4"]["ip"] and lb["public_net"]["ipv6"]["ip"]
    assert lb["algorithm"] == {"type": "round_robin"}
    assert lb["location"]["name"] == "fsn1"
    assert lb["load_balancer_type"]["name"] == "lb11"
    assert lb["labels"] == {"hcloud-ccm/service-uid": "1234"}
    assert api.ok("GET", "actions/%d" % a["id"])["action"]["status"] == \
        "success"


def test_create_validation(hc, api):
    base = {"name": "x", "load_balancer_type": "lb11", "location": "fsn1"}

    def bad(**kw):
        b = dict(base, **kw)
        for k, v in list(b.items()):
            if v is None:
                del b[k]
        return api.error("POST", "load_balancers", b)
    assert bad(name=None) == (422, "invalid_input")
    assert bad(load_balancer_type="lb99") == (422, "invalid_input")
    assert bad(location=None) == (422, "invalid_input")
    assert bad(network_zone="eu-central") == (422, "invalid_input")
    assert bad(location="mars1") == (422, "invalid_input")
    assert bad(algorithm={"type": "random"}) == (422, "invalid_input")
    assert bad(labels={"hetzner.cloud/x": "y"}) == (422, "invalid_input")
    assert bad(network=424242) == (404, "not_found")
    _lb(api, "taken")
    st, _, out = api.request("POST", "load_balancers",
                             dict(base, name="taken"))
    assert (st, out["error"]["code"]) == (409, "uniqueness_error")
    assert out["error"]["details"] == {"fields": [{"name": "name"}]}


def test_create_by_network_zone_and_type_id(api):
    lb = _lb(api, location=None, network_zone="us-east",
             load_balancer_type=3)
    assert lb["location"]["name"] == "ash"
    assert lb["load_balancer_type"]["name"] == "lb31"


def test_create_with_services_targets_and_network(hc, api):
    n = _net(hc)
    s = hc.add_server(name="node-a", private_net=[n["id"]])
    lb = _lb(api, network=n["id"], public_interface=False, services=[
        {"protocol": "tcp", "listen_port": 80, "destination_port": 30080,
         "proxyprotocol": False,
         "health_check": {"protocol": "tcp", "port": 30080, "interval": 15,
                          "timeout": 10, "retries": 3}}],
        targets=[{"type": "server", "server": {"id": s["id"]},
                  "use_private_ip": True}])
    assert lb["private_net"] == [{"network": n["id"], "ip": "10.0.0.3"}]
    assert lb["public_net"]["enabled"] is False
    assert lb["services"][0]["listen_port"] == 80
    assert lb["targets"][0]["server"] == {"id": s["id"]}
    assert lb["targets"][0]["health_status"] == [
        {"listen_port": 80, "status": "healthy"}]
    assert api.ok("GET", "networks/%d" % n["id"])["network"][
        "load_balancers"] == [lb["id"]]
    # the same source port twice in one create is refused
    st, code = api.error("POST", "load_balancers", {
        "name": "two", "load_balancer_type": "lb11", "location": "fsn1",
        "services": [{"protocol": "tcp", "listen_port": 80,
                      "destination_port": 1},
                     {"protocol": "tcp", "listen_port": 80,
                      "destination_port": 2}]})
    assert (st, code) == (412, "source_port_already_used")


def test_list_by_name_and_label_selector(hc, api):
    _lb(api, "a", labels={"hcloud-ccm/service-uid": "u1"})
    _lb(api, "b", labels={"hcloud-ccm/service-uid": "u2"})
    out = api.ok("GET", "load_balancers?name=a")
    assert [x["name"] for x in out["load_balancers"]] == ["a"]
    out = api.ok("GET", "load_balancers?label_selector=hcloud-ccm/"
                 "service-uid%3Du2")
    assert [x["name"] for x in out["load_balancers"]] == ["b"]
    assert out["meta"]["pagination"]["total_entries"] == 1


def test_update_name_and_labels(hc, api):
    lb = _lb(api, "a")
    _lb(api, "b")
    out = api.ok("PUT", "load_balancers/%d" % lb["id"],
                 {"name": "renamed", "labels": {"x": "1"}})["load_balancer"]
    assert (out["name"], out["labels"]) == ("renamed", {"x": "1"})
    assert api.error("PUT", "load_balancers/%d" % lb["id"],
                     {"name": "b"}) == (409, "uniqueness_error")


def test_delete_is_204_without_body_then_404(hc, api):
    lb = _lb(api)
    st, h, out = api.request("DELETE", "load_balancers/%d" % lb["id"])
    assert (st, out) == (204, b"")
    assert api.error("GET", "load_balancers/%d" % lb["id"]) == \
        (404, "not_found")
    assert api.error("DELETE", "load_balancers/%d" % lb["id"]) == \
        (404, "not_found")


def test_delete_protection(hc, api):
    lb = _lb(api)
    p = "load_balancers/%d" % lb["id"]
    assert api.action("POST", p + "/actions/change_protection",
                      {"delete": True})["status"] == "success"
    assert api.error("DELETE", p) == (423, "protected")
    api.action("POST", p + "/actions/change_protection", {"delete": False})
    assert api.request("DELETE", p)[0] == 204


# -- load balancer actions ----------------------------------------------------

def test_add_and_remove_server_target(hc, api):
    s = hc.add_server(name="node-a")
    lb = _lb(api)
    p = "load_balancers/%d/actions/" % lb["id"]
    a = api.action("POST", p + "add_target",
                   {"type": "server", "server": {"id": s["id"]}})
    assert (a["command"], a["status"]) == ("add_target", "success")
    assert {"id": s["id"], "type": "server"} in a["resources"]
    got = api.ok("GET", "load_balancers/%d" % lb["id"])["load_balancer"]
    assert got["targets"] == [{"type": "server", "server": {"id": s["id"]},
                               "use_private_ip": False, "health_status": []}]
    assert api.ok("GET", "servers/%d" % s["id"])["server"][
        "load_balancers"] == [lb["id"]]
    api.action("POST", p + "remove_target",
               {"type": "server", "server": {"id": s["id"]}})
    assert api.ok("GET", "load_balancers/%d" % lb["id"])["load_balancer"][
        "targets"] == []
    assert api.error("POST", p + "remove_target",
                     {"type": "server", "server": {"id": s["id"]}}) == \
        (422, "invalid_input")


def test_add_target_errors(hc, api):
    n = _net(hc)
    other = hc.add_network(name="other", ip_range="192.168.0.0/16")
    in_net = hc.add_server(name="in-net", private_net=[n["id"]])
    elsewhere = hc.add_server(name="elsewhere", private_net=[other["id"]])
    no_v4 = hc.add_server(name="no-v4", public_ipv4=None)
    lb = _lb(api)
    p = "load_balancers/%d/actions/add_target" % lb["id"]

    def srv(s, private=False):
        return {"type": "server", "server": {"id": s}, "use_private_ip":
                private}
    assert api.error("POST", p, srv(in_net["id"], True)) == \
        (422, "load_balancer_not_attached_to_network")
    assert api.error("POST", p, srv(no_v4["id"])) == \
        (422, "resolve_cloud_public_targets_error")
    assert api.error("POST", p, srv(999)) == (404, "not_found")
    assert api.error("POST", p, {"type": "server"}) == (422, "invalid_input")
    assert api.error("POST", p, {"type": "vm"}) == (422, "invalid_input")
    api.action("POST", "load_balancers/%d/actions/attach_to_network"
               % lb["id"], {"network": n["id"]})
    assert api.error("POST", p, srv(elsewhere["id"], True)) == \
        (422, "resolve_cloud_private_targets_error")
    api.action("POST", p, srv(in_net["id"], True))
    assert api.error("POST", p, srv(in_net["id"], True)) == \
        (422, "target_already_defined")
    assert api.error("POST", p, srv(in_net["id"], False)) == \
        (422, "target_already_defined")


def test_ip_targets(hc, api):
    s = hc.add_server(name="cloud")
    lb = _lb(api)
    p = "load_balancers/%d/actions/add_target" % lb["id"]
    assert api.error("POST", p, {"type": "ip", "ip": {
        "ip": s["public_net"]["ipv4"]["ip"]}}) == \
        (422, "cloud_resource_ip_not_allowed")
    assert api.error("POST", p, {"type": "ip", "ip": {"ip": "192.0.2.9"}}) \
        == (422, "ip_not_owned")
    hc.add_robot_ip("192.0.2.9")
    api.action("POST", p, {"type": "ip", "ip": {"ip": "192.0.2.9"}})
    got = api.ok("GET", "load_balancers/%d" % lb["id"])["load_balancer"]
    assert got["targets"][0]["ip"] == {"ip": "192.0.2.9"}


def test_max_targets_of_the_type(hc, api):
    lb = _lb(api)
    p = "load_balancers/%d/actions/" % lb["id"]
    servers = [hc.add_server(name="n%d" % i)["id"] for i in range(26)]
    for sid in servers[:25]:
        api.action("POST", p + "add_target",
                   {"type": "server", "server": {"id": sid}})
    st, code = api.error("POST", p + "add_target",
                         {"type": "server", "server": {"id": servers[25]}})
    assert (st, code) == (403, "resource_limit_exceeded")
    assert api.action("POST", p + "change_type",
                      {"load_balancer_type": "lb21"})["status"] == "success"
    api.action("POST", p + "add_target",
               {"type": "server", "server": {"id": servers[25]}})
    # 26 targets no longer fit lb11
    assert api.error("POST", p + "change_type",
                     {"load_balancer_type": "lb11"}) == \
        (422, "invalid_load_balancer_type")
    assert api.error("POST", p + "change_type",
                     {"load_balancer_type": "lb77"}) == \
        (422, "invalid_input")


@pytest.mark.parametrize("lbtype,targets,services", [
    ("lb11", 25, 5), ("lb21", 75, 15), ("lb31", 150, 30)])
def test_type_limits(api, lbtype, targets, services):
    out = api.ok("GET", "load_balancer_types?name=" + lbtype)
    t = out["load_balancer_types"][0]
    assert (t["max_targets"], t["max_services"]) == (targets, services)
    assert api.ok("GET", "load_balancer_types/%d" % t["id"])[
        "load_balancer_type"] == t


def test_max_services_of_the_type(api):
    lb = _lb(api)
    p = "load_balancers/%d/actions/add_service" % lb["id"]
    for port in range(1, 6):
        api.action("POST", p, {"protocol": "tcp", "listen_port": port,
                               "destination_port": 8000 + port})
    assert api.error("POST", p, {"protocol": "tcp", "listen_port": 6,
                                 "destination_port": 8006}) == \
        (403, "resource_limit_exceeded")


def test_source_port_already_used_is_412(api):
    lb = _lb(api)
    p = "load_balancers/%d/actions/add_service" % lb["id"]
    api.action("POST", p, {"protocol": "tcp", "listen_port": 80,
                           "destination_port": 30080})
    assert api.error("POST", p, {"protocol": "http", "listen_port": 80}) == \
        (412, "source_port_already_used")


def test_https_redirect_takes_port_80(hc, api):
    lb = _lb(api)
    p = "load_balancers/%d/actions/" % lb["id"]
    api.action("POST", p + "add_service", {
        "protocol": "https", "http": {"certificates": [1],
                                      "redirect_http": True}})
    assert api.error("POST", p + "add_service", {
        "protocol": "tcp", "listen_port": 80, "destination_port": 1}) == \
        (412, "source_port_already_used")
    api.action("POST", p + "update_service", {
        "listen_port": 443, "http": {"redirect_http": False}})
    api.action("POST", p + "add_service", {
        "protocol": "tcp", "listen_port": 80, "destination_port": 1})
    # turning the redirect on again would take port 80: 422 on update
    assert api.error("POST", p + "update_service", {
        "listen_port": 443, "http": {"redirect_http": True}}) == \
        (422, "source_port_already_used")


def test_load_balancer_types_can_be_changed(hc, api):
    hc.set_load_balancer_type("lb11", max_targets=1)
    hc.add_robot_ip("192.0.2.1")
    hc.add_robot_ip("192.0.2.2")
    lb = _lb(api)
    assert lb["load_balancer_type"]["max_targets"] == 1
    p = "load_balancers/%d/actions/add_target" % lb["id"]
    api.action("POST", p, {"type": "ip", "ip": {"ip": "192.0.2.1"}})
    assert api.error("POST", p, {"type": "ip", "ip": {"ip": "192.0.2.2"}}) \
        == (403, "resource_limit_exceeded")
    t = hc.set_load_balancer_type("lb-tiny", max_services=0)
    assert api.ok("GET", "load_balancer_types/%d" % t["id"])[
        "load_balancer_type"]["name"] == "lb-tiny"


def test_service_defaults_and_validation(api):
    lb = _lb(api)
    p = "load_balancers/%d/actions/add_service" % lb["id"]
    api.action("POST", p, {"protocol": "tcp", "listen_port": 443,
                           "destination_port": 30443})
    api.action("POST", p, {"protocol": "http"})
    svcs = api.ok("GET", "load_balancers/%d" % lb["id"])["load_balancer"][
        "services"]
    tcp, http = svcs
    assert tcp == {"protocol": "tcp", "listen_port": 443,
                   "destination_port": 30443, "proxyprotocol": False,
                   "health_check": {"protocol": "tcp", "port": 30443,
                                    "interval": 15, "timeout": 10,
                                    "retries": 3}}
    assert (http["listen_port"], http["destination_port"]) == (80, 80)
    assert http["health_check"]["protocol"] == "http"
    assert http["health_check"]["http"]["path"] == "/"
    assert http["http"]["cookie_name"] == "HCLBSTICKY"
    for bad in ({"protocol": "tcp", "listen_port": 1},
                {"protocol": "udp", "listen_port": 1, "destination_port": 1},
                {"protocol": "tcp", "listen_port": 70000,
                 "destination_port": 1},
                {"protocol": "tcp", "listen_port": 2, "destination_port": 1,
                 "health_check": {"interval": 2}},
                {"protocol": "tcp", "listen_port": 2, "destination_port": 1,
                 "health_check": {"timeout": 61}},
                {"protocol": "tcp", "listen_port": "2",
                 "destination_port": 1},
                {"protocol": "https", "listen_port": 8443}):
        assert api.error("POST", p, bad) == (422, "invalid_input"), bad


def test_update_and_delete_service(api):
    lb = _lb(api)
    p = "load_balancers/%d/actions/" % lb["id"]
    api.action("POST", p + "add_service", {
        "protocol": "tcp", "listen_port": 80, "destination_port": 30080})
    api.action("POST", p + "update_service", {
        "listen_port": 80, "destination_port": 31080, "proxyprotocol": True,
        "health_check": {"interval": 5}})
    svc = api.ok("GET", "load_balancers/%d" % lb["id"])["load_balancer"][
        "services"][0]
    assert (svc["destination_port"], svc["proxyprotocol"]) == (31080, True)
    assert svc["health_check"]["interval"] == 5
    assert svc["health_check"]["port"] == 30080  # unchanged
    assert api.error("POST", p + "update_service", {"listen_port": 81}) == \
        (422, "invalid_input")
    api.action("POST", p + "delete_service", {"listen_port": 80})
    assert api.ok("GET", "load_balancers/%d" % lb["id"])["load_balancer"][
        "services"] == []


def test_label_selector_targets_are_resolved(hc, api):
    n = _net(hc)
    a = hc.add_server(name="a", labels={"role": "worker"},
                      private_net=[n["id"]])
    b = hc.add_server(name="b", labels={"role": "worker"})
    hc.add_server(name="c", labels={"role": "db"})
    lb = _lb(api, services=[{"protocol": "tcp", "listen_port": 80,
                             "destination_port": 30080}])
    p = "load_balancers/%d/actions/add_target" % lb["id"]
    api.action("POST", p, {"type": "label_selector",
                           "label_selector": {"selector": "role=worker"}})
    t = api.ok("GET", "load_balancers/%d" % lb["id"])["load_balancer"][
        "targets"][0]
    assert t["label_selector"] == {"selector": "role=worker"}
    assert [x["server"]["id"] for x in t["targets"]] == [a["id"], b["id"]]
    assert t["targets"][0]["health_status"] == [
        {"listen_port": 80, "status": "healthy"}]
    hc.update_server(b["id"], labels={"role": "db"})
    t = api.ok("GET", "load_balancers/%d" % lb["id"])["load_balancer"][
        "targets"][0]
    assert [x["server"]["id"] for x in t["targets"]] == [a["id"]]
    assert api.ok("GET", "servers/%d" % a["id"])["server"][
        "load_balancers"] == [lb["id"]]
    # a private selector only resolves servers in the LB's network
    lb2 = _lb(api, "lb2", network=n["id"])
    hc.update_server(b["id"], labels={"role": "worker"})
    api.action("POST", "load_balancers/%d/actions/add_target" % lb2["id"],
               {"type": "label_selector", "use_private_ip": True,
                "label_selector": {"selector": "role=worker"}})
    t = api.ok("GET", "load_balancers/%d" % lb2["id"])["load_balancer"][
        "targets"][0]
    assert [x["server"]["id"] for x in t["targets"]] == [a["id"]]
    assert api.error("POST", p, {"type": "label_selector",
                                 "label_selector": {"selector": "a=b=c"}}) \
        == (422, "invalid_input")


def test_server_listing_names_the_same_balancers_as_each_server(hc, api):
    """GET /servers (balancers resolved once per listing) and GET
    /servers/{id} agree on every server's load_balancers: server targets,
    label selectors, private selectors, none."""
    n = _net(hc)
    servers = [hc.add_server(name="s%d" % i, labels={"pool": "p%d" % (i % 3)},
                             private_net=[n["id"]] if i % 2 else [])
               for i in range(9)]
    lbs = [_lb(api, "by-id"), _lb(api, "p0"), _lb(api, "p1-private", network=n["id"]),
           _lb(api, "empty")]
    for s in servers[:2]:
        api.action("POST", "load_balancers/%d/actions/add_target" % lbs[0]["id"],
                   {"type": "server", "server": {"id": s["id"]}})
    api.action("POST", "load_balancers/%d/actions/add_target" % lbs[1]["id"],
               {"type": "label_selector", "label_selector": {"selector": "pool=p0"}})
    api.action("POST", "load_balancers/%d/actions/add_target" % lbs[2]["id"],
               {"type": "label_selector", "use_private_ip": True,
                "label_selector": {"selector": "pool in (p1,p0)"}})
    listed = {s["id"]: s["load_balancers"]
              for s in api.ok("GET", "servers?per_page=50")["servers"]}
    each = {s["id"]: api.ok("GET", "servers/%d" % s["id"])["server"]["load_balancers"]
            for s in servers}
    assert listed == each
    assert listed[servers[0]["id"]] == [lbs[0]["id"], lbs[1]["id"]]
    assert listed[servers[1]["id"]] == [lbs[0]["id"], lbs[2]["id"]]
    assert listed[servers[2]["id"]] == []
    assert listed[servers[3]["id"]] == [lbs[1]["id"], lbs[2]["id"]]


def test_target_health_is_settable(hc, api):
    s = hc.add_server(name="a")
    lb = _lb(api, services=[{"protocol": "tcp", "listen_port": 80,
                             "destination_port": 1}],
             targets=[{"type": "server", "server": {"id": s["id"]}}])
    hc.set_target_health(lb["id"], 80, "unhealthy", server=s["id"])
    t = api.ok("GET", "load_balancers/%d" % lb["id"])["load_balancer"][
        "targets"][0]
    assert t["health_status"] == [{"listen_port": 80, "status": "unhealthy"}]


def test_attach_and_detach_network(hc, api):
    n = _net(hc, subnets=[{"ip_range": "10.0.0.0/24"},
                          {"ip_range": "10.0.1.0/24",
                           "network_zone": "us-east"}])
    lb = _lb(api)
    p = "load_balancers/%d/actions/" % lb["id"]
    assert api.error("POST", p + "attach_to_network", {"network": 42}) == \
        (404, "not_found")
    assert api.error("POST", p + "attach_to_network",
                     {"network": n["id"], "ip": "10.0.1.7"}) == \
        (422, "ip_not_available")
    a = api.action("POST", p + "attach_to_network",
                   {"network": n["id"], "ip": "10.0.0.9"})
    assert {"id": n["id"], "type": "network"} in a["resources"]
    got = api.ok("GET", "load_balancers/%d" % lb["id"])["load_balancer"]
    assert got["private_net"] == [{"network": n["id"], "ip": "10.0.0.9"}]
    assert api.error("POST", p + "attach_to_network",
                     {"network": n["id"]}) == \
        (422, "load_balancer_already_attached")
    api.action("POST", p + "detach_from_network", {"network": n["id"]})
    assert api.error("POST", p + "detach_from_network",
                     {"network": n["id"]}) == \
        (422, "load_balancer_not_attached_to_network")
    us = _lb(api, "us", location="ash")
    api.action("POST", "load_balancers/%d/actions/attach_to_network"
               % us["id"], {"network": n["id"]})
    got = api.ok("GET", "load_balancers/%d" % us["id"])["load_balancer"]
    assert got["private_net"][0]["ip"] == "10.0.1.2"
    only_eu = hc.add_network(name="eu-only", ip_range="172.16.0.0/12")
    assert api.error("POST", "load_balancers/%d/actions/attach_to_network"
                     % _lb(api, "us2", location="hil")["id"],
                     {"network": only_eu["id"]}) == \
        (422, "no_subnet_available")


def test_public_interface(hc, api):
    n = _net(hc)
    s = hc.add_server(name="a", private_net=[n["id"]])
    lb = _lb(api, network=n["id"])
    p = "load_balancers/%d/actions/" % lb["id"]
    api.action("POST", p + "add_target", {"type": "server", "server": {
        "id": s["id"]}})
    assert api.error("POST", p + "disable_public_interface") == \
        (422, "targets_without_use_private_ip")
    api.action("POST", p + "remove_target", {"type": "server", "server": {
        "id": s["id"]}})
    api.action("POST", p + "add_target", {"type": "server", "server": {
        "id": s["id"]}, "use_private_ip": True})
    api.action("POST", p + "disable_public_interface")
    got = api.ok("GET", "load_balancers/%d" % lb["id"])["load_balancer"]
    assert got["public_net"]["enabled"] is False
    other = hc.add_server(name="b")
    assert api.error("POST", p + "add_target", {"type": "server", "server": {
        "id": other["id"]}}) == \
        (422, "load_balancer_public_interface_disabled")
    api.action("POST", p + "enable_public_interface")
    assert api.ok("GET", "load_balancers/%d" % lb["id"])["load_balancer"][
        "public_net"]["enabled"] is True


def test_algorithm_and_dns_ptr(api):
    lb = _lb(api)
    p = "load_balancers/%d/actions/" % lb["id"]
    api.action("POST", p + "change_algorithm", {"type": "least_connections"})
    assert api.error("POST", p + "change_algorithm", {"type": "x"}) == \
        (422, "invalid_input")
    v4 = lb["public_net"]["ipv4"]["ip"]
    api.action("POST", p + "change_dns_ptr", {"ip": v4,
                                              "dns_ptr": "lb.example.com"})
    got = api.ok("GET", "load_balancers/%d" % lb["id"])["load_balancer"]
    assert got["algorithm"] == {"type": "least_connections"}
    assert got["public_net"]["ipv4"]["dns_ptr"] == "lb.example.com"
    assert api.error("POST", p + "change_dns_ptr",
                     {"ip": "192.0.2.1", "dns_ptr": "x"}) == \
        (422, "invalid_input")
    assert api.error("POST", p + "explode") == (404, "not_found")


# -- actions ------------------------------------------------------------------

def test_action_runs_then_applies(hc, api):
    hc.set_action_seconds(0.4)
    s = hc.add_server(name="a")
    lb = hc.add_load_balancer(name="lb1")
    a = api.ok("POST", "load_balancers/%d/actions/add_target" % lb["id"],
               {"type": "server", "server": {"id": s["id"]}})["action"]
    assert (a["status"], a["progress"], a["finished"]) == ("running", 0, None)
    time.sleep(0.2)
    mid = api.ok("GET", "actions/%d" % a["id"])["action"]
    assert mid["status"] == "running" and 0 < mid["progress"] < 100
    # the change is made when the action succeeds
    assert api.ok("GET", "load_balancers/%d" % lb["id"])["load_balancer"][
        "targets"] == []
    time.sleep(0.3)
    done = api.ok("GET", "actions/%d" % a["id"])["action"]
    assert (done["status"], done["progress"]) == ("success", 100)
    assert done["finished"] is not None and done["error"] is None
    assert len(api.ok("GET", "load_balancers/%d" % lb["id"])[
        "load_balancer"]["targets"]) == 1


def test_locked_while_an_action_runs(hc, api):
    hc.set_action_seconds(5)
    s = hc.add_server(name="a")
    lb = hc.add_load_balancer(name="lb1")
    p = "load_balancers/%d" % lb["id"]
    a = api.ok("POST", p + "/actions/add_target",
               {"type": "server", "server": {"id": s["id"]}})["action"]
    assert api.error("POST", p + "/actions/change_algorithm",
                     {"type": "least_connections"}) == (423, "locked")
    assert api.error("PUT", p, {"name": "x"}) == (423, "locked")
    assert api.error("DELETE", p) == (423, "locked")
    hc.finish_action(a["id"])
    assert api.request("DELETE", p)[0] == 204


def test_actions_by_ids_and_sorting(hc, api):
    hc.set_action_seconds(5)
    lbs = [hc.add_load_balancer(name="lb%d" % i) for i in range(3)]
    ids = [api.ok("POST", "load_balancers/%d/actions/change_algorithm"
                  % lb["id"], {"type": "least_connections"})["action"]["id"]
           for lb in lbs]
    hc.finish_action(ids[1])
    out = api.ok("GET", "actions?id=%d&id=%d&id=%d&id=9999&sort=status&"
                 "sort=id" % tuple(ids))
    assert [(a["id"], a["status"]) for a in out["actions"]] == [
        (ids[0], "running"), (ids[2], "running"), (ids[1], "success")]
    assert out["meta"]["pagination"]["total_entries"] == 3
    out = api.ok("GET", "actions?id=%d&id=%d&sort=id:desc" % (ids[0], ids[2]))
    assert [a["id"] for a in out["actions"]] == [ids[2], ids[0]]
    assert api.error("GET", "actions") == (422, "invalid_input")
    assert api.error("GET", "actions/9999") == (404, "not_found")
    out = api.ok("GET", "load_balancers/%d/actions" % lbs[0]["id"])
    assert [a["id"] for a in out["actions"]] == [ids[0]]
    assert api.ok("GET", "load_balancers/%d/actions/%d" % (
        lbs[0]["id"], ids[0]))["action"]["command"] == "change_algorithm"


def test_scripted_action_error_changes_nothing(hc, api):
    s = hc.add_server(name="a")
    lb = hc.add_load_balancer(name="lb1")
    hc.script_action("add_target", error=("action_failed", "Action failed"))
    a = api.action("POST", "load_balancers/%d/actions/add_target" % lb["id"],
                   {"type": "server", "server": {"id": s["id"]}})
    assert a["status"] == "error"
    assert a["error"] == {"code": "action_failed", "message": "Action failed"}
    assert a["progress"] == 0
    assert hc.load_balancer(lb["id"])["targets"] == []
    # the script was used up: the next one works
    a = api.action("POST", "load_balancers/%d/actions/add_target" % lb["id"],
                   {"type": "server", "server": {"id": s["id"]}})
    assert a["status"] == "success"


def test_action_fails_halfway(hc, api):
    lb = hc.add_load_balancer(name="lb1")
    hc.script_action("change_algorithm", seconds=0.4, error=True,
                     halfway=True)
    p = "load_balancers/%d/actions/change_algorithm" % lb["id"]
    a = api.ok("POST", p, {"type": "least_connections"})["action"]
    time.sleep(0.3)
    mid = api.ok("GET", "actions/%d" % a["id"])["action"]
    assert mid["status"] == "running" and 0 < mid["progress"] <= 50
    time.sleep(0.2)
    end = api.ok("GET", "actions/%d" % a["id"])["action"]
    assert (end["status"], end["progress"]) == ("error", 50)
    assert hc.load_balancer(lb["id"])["algorithm"]["type"] == "round_robin"


def test_action_that_never_finishes(hc, api):
    lb = hc.add_load_balancer(name="lb1")
    hc.script_action(never=True)
    a = api.ok("POST", "load_balancers/%d/actions/change_algorithm"
               % lb["id"], {"type": "least_connections"})["action"]
    time.sleep(0.1)
    assert api.ok("GET", "actions/%d" % a["id"])["action"]["status"] == \
        "running"
    hc.finish_action(a["id"], error=("timeout", "gave up"))
    got = api.ok("GET", "actions/%d" % a["id"])["action"]
    assert (got["status"], got["error"]["code"]) == ("error", "timeout")


# -- networks and routes ------------------------------------------------------

def test_network_shape(hc, api):
    n = _net(hc)
    s = hc.add_server(name="a", private_net=[n["id"]])
    out = api.ok("GET", "networks/%d" % n["id"])["network"]
    assert out["subnets"] == [{"type": "cloud", "ip_range": "10.0.0.0/24",
                               "network_zone": "eu-central",
                               "gateway": "10.0.0.1"}]
    assert out["servers"] == [s["id"]]
    assert out["routes"] == [] and out["load_balancers"] == []
    assert api.ok("GET", "networks?name=k8s")["networks"][0]["id"] == n["id"]
    assert api.error("GET", "networks/1") == (404, "not_found")


def test_add_and_delete_route(hc, api):
    n = _net(hc)
    p = "networks/%d/actions/" % n["id"]
    r = {"destination": "10.244.1.0/24", "gateway": "10.0.0.2"}
    a = api.action("POST", p + "add_route", r)
    assert (a["command"], a["status"]) == ("add_route", "success")
    assert a["resources"] == [{"id": n["id"], "type": "network"}]
    assert api.ok("GET", "networks/%d" % n["id"])["network"]["routes"] == [r]
    a = api.action("POST", p + "delete_route", r)
    assert a["command"] == "delete_route"
    assert api.ok("GET", "networks/%d" % n["id"])["network"]["routes"] == []
    assert api.error("POST", p + "delete_route", r) == (422, "invalid_input")


@pytest.mark.parametrize("dest,gw", [
    ("8.8.8.0/24", "10.0.0.2"),       # not RFC 1918
    ("10.0.0.0/24", "10.0.0.2"),      # a subnet's range
    ("10.244.1.5/24", "10.0.0.2"),    # not a network address
    ("10.244.1.0/24", "10.0.0.1"),    # the network's first address
    ("10.244.1.0/24", "172.31.1.1"),  # the public gateway
    ("10.244.1.0/24", "192.168.0.5"), # outside the network
    ("10.244.1.0/24", None), (None, "10.0.0.2")])
def test_route_validation(hc, api, dest, gw):
    n = _net(hc)
    body = {k: v for k, v in (("destination", dest), ("gateway", gw))
            if v is not None}
    assert api.error("POST", "networks/%d/actions/add_route" % n["id"],
                     body) == (422, "invalid_input")


def test_overlapping_routes_are_refused(hc, api):
    n = _net(hc, routes=[{"destination": "10.244.0.0/16",
                          "gateway": "10.0.0.2"}])
    assert api.error("POST", "networks/%d/actions/add_route" % n["id"], {
        "destination": "10.244.5.0/24", "gateway": "10.0.0.3"}) == \
        (422, "invalid_input")


def test_route_conflict_while_the_network_changes(hc, api):
    n = _net(hc)
    hc.set_action_seconds(5)
    p = "networks/%d/actions/" % n["id"]
    a = api.ok("POST", p + "add_route", {"destination": "10.244.1.0/24",
                                         "gateway": "10.0.0.2"})["action"]
    assert api.error("POST", p + "add_route", {
        "destination": "10.244.2.0/24", "gateway": "10.0.0.3"}) == \
        (409, "conflict")
    assert api.error("POST", p + "delete_route", {
        "destination": "10.244.1.0/24", "gateway": "10.0.0.2"}) == \
        (409, "conflict")
    assert api.error("POST", p + "add_route", {}) == (409, "conflict")
    hc.finish_action(a["id"])
    api.ok("POST", p + "add_route", {"destination": "10.244.2.0/24",
                                     "gateway": "10.0.0.3"})


def test_route_limit_is_100(hc, api):
    n = _net(hc, routes=[{"destination": "10.%d.%d.0/24" % (100 + i // 250,
                                                           i % 250),
                          "gateway": "10.0.0.2"} for i in range(99)])
    p = "networks/%d/actions/add_route" % n["id"]
    api.action("POST", p, {"destination": "10.200.0.0/24",
                           "gateway": "10.0.0.2"})
    st, _, out = api.request("POST", p, {"destination": "10.200.1.0/24",
                                         "gateway": "10.0.0.2"})
    assert (st, out["error"]["code"]) == (403, "resource_limit_exceeded")
    assert len(hc.network(n["id"])["routes"]) == 100


# -- locations and server types -----------------------------------------------

def test_locations_and_server_types(api):
    locs = api.ok("GET", "locations")["locations"]
    assert {x["name"] for x in locs} >= {"fsn1", "nbg1", "hel1", "ash",
                                         "hil", "sin"}
    fsn1 = api.ok("GET", "locations?name=fsn1")["locations"][0]
    assert fsn1["network_zone"] == "eu-central"
    assert api.ok("GET", "locations/%d" % fsn1["id"])["location"] == fsn1
    st = api.ok("GET", "server_types?name=cx22")["server_types"][0]
    assert (st["cores"], st["architecture"]) == (2, "x86")
    assert api.ok("GET", "server_types/%d" % st["id"])["server_type"] == st
    assert api.error("GET", "server_types/1") == (404, "not_found")


# -- faults -------------------------------------------------------------------

def test_fault_burst_of_5xx(hc, api):
    hc.burst(503, count=3, path="/v1/servers")
    got = [api.get("servers") for _ in range(4)]
    assert [g[0] for g in got] == [503, 503, 503, 200]
    assert got[0][2]["error"]["code"] == "unavailable"
    assert got[0][1]["content-type"] == "application/json"
    assert api.get("locations")[0] == 200


def test_fault_matches_path_pattern_and_method(hc, api):
    lb = hc.add_load_balancer(name="lb1")
    hc.inject_fault(path="/v1/load_balancers/*/actions/*", method="POST",
                    status=409, code="conflict", count=None)
    assert api.get("load_balancers/%d" % lb["id"])[0] == 200
    for _ in range(2):
        assert api.error("POST", "load_balancers/%d/actions/change_algorithm"
                         % lb["id"], {"type": "round_robin"}) == \
            (409, "conflict")
    assert hc.faults()[0]["hits"] == 2
    hc.clear_faults()
    assert api.post("load_balancers/%d/actions/change_algorithm" % lb["id"],
                    {"type": "round_robin"})[0] == 201


def test_fault_non_json_error_body(hc, api):
    hc.inject_fault(status=502, body="<html>bad gateway</html>",
                    content_type="text/html")
    st, h, out = api.get("servers")
    assert (st, h["content-type"], out) == (502, "text/html",
                                           b"<html>bad gateway</html>")


def test_fault_delay_past_a_client_timeout(hc, api):
    hc.inject_fault(path="/v1/servers", delay=1.0)
    t = time.time()
    with pytest.raises(socket.timeout):
        api.get("servers", timeout=0.3)
    assert time.time() - t < 0.9
    hc.inject_fault(path="/v1/servers", delay=0.2)
    assert api.get("servers")[0] == 200  # a delay alone still answers


def test_fault_close_without_answer(hc, api):
    hc.inject_fault(close=True)
    with pytest.raises((http.client.RemoteDisconnected,
                        ConnectionResetError)):
        api.get("servers")
    assert hc.wait_for_request(lambda e: e["fault"])["status"] == 0


def test_fault_reset(hc, api):
    hc.inject_fault(reset=True)
    with pytest.raises((ConnectionResetError, http.client.RemoteDisconnected)):
        api.get("servers")


def test_fault_truncated_answer_after_the_change_was_made(hc, api):
    hc.inject_fault(path="/v1/load_balancers", method="POST", truncate=True)
    with pytest.raises(http.client.IncompleteRead):
        api.post("load_balancers", {"name": "lb1", "load_balancer_type":
                                    "lb11", "location": "fsn1"})
    assert hc.load_balancer("lb1") is not None


def test_control_paths_are_never_faulted_nor_logged(hc, api):
    hc.inject_fault(status=500, count=None)
    r = urllib.request.urlopen(hc.url + "/_fake/faults")
    assert json.load(r)["faults"][0]["status"] == 500
    assert hc.request_log() == []


# -- request log --------------------------------------------------------------

def test_request_log_never_holds_the_token(tmp_path):
    log = tmp_path / "requests.log"
    secret = "s3cret-" + "x" * 57
    with fakehcloud.FakeHcloud(tokens=[secret], log_file=str(log)) as hc:
        api = Api(hc)
        seq = hc.log_seq()
        api.get("servers?name=a")
        Api(hc, token="").get("servers")
        api.post("load_balancers", {"name": "lb1", "load_balancer_type":
                                    "lb11", "location": "fsn1"})
        e = hc.request_log(seq)
        assert [(x["method"], x["path"], x["query"], x["status"],
                 x["token"]) for x in e] == [
            ("GET", "/v1/servers", "name=a", 200, True),
            ("GET", "/v1/servers", "", 401, False),
            ("POST", "/v1/load_balancers", "", 201, True)]
        assert e[1]["error"] == "unauthorized"
        assert e[2]["action"] is not None and e[2]["body"]["name"] == "lb1"
        found = hc.wait_for_request(lambda x: x["method"] == "POST")
        assert found["seq"] == e[2]["seq"]
        assert secret not in json.dumps(hc.request_log())
    text = log.read_text()
    assert len(text.splitlines()) == 3 and secret not in text


# -- control API, CLI, TLS ----------------------------------------------------

def _ctl(hc, method, path, body=None):
    req = urllib.request.Request(
        hc.url + "/_fake" + path, method=method,
        data=json.dumps(body).encode() if body is not None else None)
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def test_control_api(hc, api):
    n = _ctl(hc, "POST", "/networks", {"name": "k8s"})
    s = _ctl(hc, "POST", "/servers", {"name": "a", "private_net": [n["id"]]})
    _ctl(hc, "PATCH", "/servers/%d" % s["id"], {"status": "off"})
    assert api.ok("GET", "servers/%d" % s["id"])["server"]["status"] == "off"
    _ctl(hc, "POST", "/faults", {"path": "/v1/servers", "status": 500})
    assert api.get("servers")[0] == 500
    _ctl(hc, "POST", "/tokens", {"token": "t2"})
    assert Api(hc, token="t2").get("servers")[0] == 200
    _ctl(hc, "POST", "/rate-limit", {"limit": 10, "remaining": 0})
    assert api.get("servers")[0] == 429
    _ctl(hc, "POST", "/rate-limit", {"remaining": 10})
    _ctl(hc, "POST", "/legacy-datacenter", {"enabled": True})
    assert "datacenter" in api.ok("GET", "servers/%d" % s["id"])["server"]
    _ctl(hc, "POST", "/action-scripts", {"command": "add_route",
                                         "never": True})
    a = api.ok("POST", "networks/%d/actions/add_route" % n["id"], {
        "destination": "10.244.0.0/24", "gateway": "10.0.0.2"})["action"]
    _ctl(hc, "POST", "/actions/%d/finish" % a["id"],
         {"error": ["action_failed", "no"]})
    assert api.ok("GET", "actions/%d" % a["id"])["action"]["status"] == \
        "error"
    st = _ctl(hc, "GET", "/state")
    assert [x["name"] for x in st["servers"]] == ["a"]
    assert len(_ctl(hc, "GET", "/log?since=0")["items"]) == 7


def test_cli_process(tmp_path):
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps({
        "networks": [{"name": "k8s", "id": 42}],
        "servers": [{"name": "node-a", "id": 4711,
                     "private_net": [{"network": 42, "ip": "10.0.0.2"}]}]}))
    port_file = tmp_path / "port"
    p = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "fakehcloud.py"), "--port-file",
         str(port_file), "--seed", str(seed), "--token", "cli-token"],
        stdout=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        port = int(port_file.read_text())
        assert line.strip() == \
            "fake-hcloud listening on http://127.0.0.1:%d/v1" % port
        req = urllib.request.Request(
            "http://127.0.0.1:%d/v1/servers/4711" % port,
            headers={"Authorization": "Bearer cli-token"})
        s = json.load(urllib.request.urlopen(req))["server"]
        assert s["private_net"][0]["ip"] == "10.0.0.2"
    finally:
        p.send_signal(signal.SIGTERM)
        assert p.wait(10) == 0


def test_tls_with_its_own_ca(tmp_path):
    with fakehcloud.FakeHcloud(tls=True, state_dir=str(tmp_path)) as hc:
        assert hc.endpoint.startswith("https://127.0.0.1:")
        ctx = ssl.create_default_context(cafile=hc.ca_file)
        req = urllib.request.Request(hc.endpoint + "/locations", headers={
            "Authorization": "Bearer " + hc.token})
        out = json.load(urllib.request.urlopen(req, context=ctx))
        assert out["locations"]
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(req, context=ssl.create_default_context())
    assert os.path.exists(os.path.join(str(tmp_path), "pki", "ca.crt"))
