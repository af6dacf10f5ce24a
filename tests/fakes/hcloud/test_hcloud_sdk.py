"""The official Python SDK (Debian's python3-hcloud 1.18.2) against the fake:
a client that disagrees with the fake shows a bug in the fake.  Skipped when
the package is missing (apt-get install python3-hcloud).

Run: /usr/bin/python3 -m pytest tests/fakes/hcloud/test_hcloud_sdk.py
"""

import time

import pytest

hcloud = pytest.importorskip("hcloud", reason="python3-hcloud is not "
                             "installed")
if not hasattr(hcloud, "Client"):  # pragma: no cover - a shadowing package
    pytest.skip("the hcloud package found is not the SDK",
                allow_module_level=True)

from hcloud import APIException, Client  # noqa: E402
from hcloud.actions.domain import ActionFailedException  # noqa: E402
from hcloud.load_balancer_types.domain import LoadBalancerType  # noqa: E402
from hcloud.load_balancers.domain import (  # noqa: E402
    LoadBalancerAlgorithm, LoadBalancerHealthCheck, LoadBalancerService,
    LoadBalancerTarget, LoadBalancerTargetLabelSelector)
from hcloud.locations.domain import Location  # noqa: E402
from hcloud.networks.domain import NetworkRoute  # noqa: E402

import fakehcloud  # noqa: E402

pytest_plugins = ("hcfixtures",)  # the hc fixture


@pytest.fixture
def client(hc):
    return Client(token=hc.token, api_endpoint=hc.endpoint,
                  poll_interval=0.05)


def _create_lb(client, name="lb1", **kw):
    r = client.load_balancers.create(
        name=name, load_balancer_type=LoadBalancerType(name="lb11"),
        location=Location(name="fsn1"), **kw)
    r.action.wait_until_finished()
    return client.load_balancers.get_by_id(r.load_balancer.id)


def test_get_all_walks_the_pages(hc, client):
    for i in range(60):
        hc.add_server(name="n%02d" % i)
    seq = hc.log_seq()
    servers = client.servers.get_all()
    assert [s.name for s in servers] == ["n%02d" % i for i in range(60)]
    assert [e["query"] for e in hc.request_log(seq)] == [
        "page=1&per_page=50", "page=2&per_page=50"]


def test_server_fields(hc, client):
    n = hc.add_network(name="k8s")
    s = hc.add_server(name="node-a", private_net=[n["id"]],
                      labels={"role": "worker"}, status="off")
    got = client.servers.get_by_name("node-a")
    assert (got.id, got.name, got.status) == (s["id"], "node-a", "off")
    assert got.public_net.ipv4.ip == s["public_net"]["ipv4"]["ip"]
    assert got.public_net.ipv6.ip == s["public_net"]["ipv6"]["ip"]
    assert got.private_net[0].ip == "10.0.0.2"
    assert got.private_net[0].network.id == n["id"]
    assert got.server_type.name == "cx22"
    assert got.labels == {"role": "worker"}
    assert got.datacenter is None  # today's API has none; the SDK copes
    assert client.servers.get_by_name("node") is None
    assert [x.name for x in client.servers.get_all(
        label_selector="role=worker")] == ["node-a"]
    assert [x.name for x in client.servers.get_all(status=["running"])] == []


def test_server_labels_update(hc, client):
    s = hc.add_server(name="node-a", labels={"keep": "1"})
    srv = client.servers.get_by_id(s["id"])
    got = client.servers.update(srv, labels={"keep": "1", "pool": "ingress"})
    assert got.labels == {"keep": "1", "pool": "ingress"}
    assert [x.id for x in client.servers.get_all(
        label_selector="pool=ingress")] == [s["id"]]
    assert hc.server(s["id"])["labels"] == {"keep": "1", "pool": "ingress"}


def test_errors_are_api_exceptions(hc, client):
    with pytest.raises(APIException) as e:
        client.servers.get_by_id(4242)
    assert e.value.code == "not_found"
    assert str(e.value) == "server with ID '4242' not found"
    with pytest.raises(APIException) as e:
        client.load_balancers.create(
            name="x", load_balancer_type=LoadBalancerType(name="nope"),
            location=Location(name="fsn1"))
    assert e.value.code == "invalid_input"
    assert e.value.details["fields"][0]["name"] == "load_balancer_type"
    bad = Client(token="wrong", api_endpoint=hc.endpoint)
    with pytest.raises(APIException) as e:
        bad.servers.get_all()
    assert e.value.code == "unauthorized"


def test_load_balancer_lifecycle(hc, client):
    s = hc.add_server(name="node-a")
    r = client.load_balancers.create(
        name="lb1", load_balancer_type=LoadBalancerType(name="lb11"),
        location=Location(name="fsn1"),
        labels={"hcloud-ccm/service-uid": "u1"},
        algorithm=LoadBalancerAlgorithm(type="least_connections"),
        services=[LoadBalancerService(
            protocol="tcp", listen_port=443, destination_port=30443,
            proxyprotocol=False,
            health_check=LoadBalancerHealthCheck(
                protocol="tcp", port=30443, interval=15, timeout=10,
                retries=3))])
    assert r.action.command == "create_load_balancer"
    r.action.wait_until_finished()
    lb = r.load_balancer
    lb.add_target(LoadBalancerTarget(
        type="server", server=client.servers.get_by_id(s["id"]),
        use_private_ip=False)).wait_until_finished()
    lb.add_service(LoadBalancerService(
        protocol="http", listen_port=80, destination_port=30080)
    ).wait_until_finished()
    got = client.load_balancers.get_by_name("lb1")
    assert got.algorithm.type == "least_connections"
    assert got.public_net.enabled is True
    assert got.public_net.ipv4.ip == hc.load_balancer("lb1")[
        "public_net"]["ipv4"]["ip"]
    assert [(t.type, t.server.id, t.use_private_ip) for t in got.targets] \
        == [("server", s["id"], False)]
    assert [(x.protocol, x.listen_port, x.destination_port)
            for x in got.services] == [("tcp", 443, 30443),
                                       ("http", 80, 30080)]
    assert got.services[1].http.cookie_name == "HCLBSTICKY"
    assert got.services[1].health_check.http.status_codes == ["2??", "3??"]
    assert got.load_balancer_type.max_targets == 25
    assert got.location.name == "fsn1"
    upd = client.load_balancers.update(got, name="lb2", labels={"a": "b"})
    assert (upd.name, upd.labels) == ("lb2", {"a": "b"})
    got.update_service(LoadBalancerService(
        listen_port=443, destination_port=31443)).wait_until_finished()
    got.delete_service(LoadBalancerService(listen_port=80)
                       ).wait_until_finished()
    assert [x.destination_port for x in
            client.load_balancers.get_by_id(got.id).services] == [31443]
    assert client.load_balancers.delete(got) is True
    assert hc.load_balancer(got.id) is None


def test_label_selector_targets(hc, client):
    n = hc.add_network(name="k8s")
    w = hc.add_server(name="w", labels={"role": "worker"},
                      private_net=[n["id"]])
    hc.add_server(name="d", labels={"role": "db"})
    lb = _create_lb(client, network=client.networks.get_by_id(n["id"]))
    assert lb.private_net[0].network.id == n["id"]
    lb.add_target(LoadBalancerTarget(
        type="label_selector", use_private_ip=True,
        label_selector=LoadBalancerTargetLabelSelector(
            selector="role=worker"))).wait_until_finished()
    got = client.load_balancers.get_by_id(lb.id)
    assert got.targets[0].label_selector.selector == "role=worker"
    assert hc.load_balancer(lb.id)["targets"][0]["targets"][0]["server"] == \
        {"id": w["id"]}


def test_target_errors(hc, client):
    s = hc.add_server(name="a")
    lb = _create_lb(client)
    t = LoadBalancerTarget(type="server",
                           server=client.servers.get_by_id(s["id"]),
                           use_private_ip=False)
    lb.add_target(t).wait_until_finished()
    with pytest.raises(APIException) as e:
        lb.add_target(t)
    assert e.value.code == "target_already_defined"
    with pytest.raises(APIException) as e:
        lb.add_target(LoadBalancerTarget(
            type="server", server=client.servers.get_by_id(s["id"]),
            use_private_ip=True))
    assert e.value.code == "target_already_defined"
    lb.remove_target(t).wait_until_finished()
    with pytest.raises(APIException) as e:
        lb.add_target(LoadBalancerTarget(
            type="server", server=client.servers.get_by_id(s["id"]),
            use_private_ip=True))
    assert e.value.code == "load_balancer_not_attached_to_network"


def test_type_limits(client):
    types = {t.name: t for t in client.load_balancer_types.get_all()}
    assert {n: (t.max_targets, t.max_services) for n, t in types.items()} == \
        {"lb11": (25, 5), "lb21": (75, 15), "lb31": (150, 30)}
    assert {x.name for x in client.locations.get_all()} >= {"fsn1", "nbg1"}
    assert client.server_types.get_by_name("cx22").cores == 2


def test_routes(hc, client):
    n = hc.add_network(name="k8s")
    net = client.networks.get_by_name("k8s")
    assert net.ip_range == "10.0.0.0/8"
    assert net.subnets[0].gateway == "10.0.0.1"
    r = NetworkRoute(destination="10.244.1.0/24", gateway="10.0.0.2")
    a = net.add_route(r)
    assert a.command == "add_route"
    a.wait_until_finished()
    got = client.networks.get_by_id(n["id"])
    assert [(x.destination, x.gateway) for x in got.routes] == [
        ("10.244.1.0/24", "10.0.0.2")]
    net.delete_route(r).wait_until_finished()
    assert client.networks.get_by_id(n["id"]).routes == []
    with pytest.raises(APIException) as e:
        net.add_route(NetworkRoute(destination="1.2.3.0/24",
                                   gateway="10.0.0.2"))
    assert e.value.code == "invalid_input"


def test_wait_until_finished_polls_the_action(hc, client):
    hc.add_network(name="k8s")
    hc.set_action_seconds(0.5)
    net = client.networks.get_by_name("k8s")
    seq = hc.log_seq()
    a = net.add_route(NetworkRoute(destination="10.244.1.0/24",
                                   gateway="10.0.0.2"))
    assert a.status == "running"
    a.wait_until_finished()
    assert a.status == "success"
    polls = [e for e in hc.request_log(seq)
             if e["path"] == "/v1/actions/%d" % a.id]
    assert len(polls) >= 3


def test_failed_action_raises(hc, client):
    hc.add_network(name="k8s")
    hc.script_action("add_route", error=True)
    net = client.networks.get_by_name("k8s")
    a = net.add_route(NetworkRoute(destination="10.244.1.0/24",
                                   gateway="10.0.0.2"))
    with pytest.raises(ActionFailedException):
        a.wait_until_finished()
    assert a.error == {"code": "action_failed", "message": "Action failed"}
    assert client.networks.get_by_id(net.id).routes == []


def test_the_sdk_retries_an_empty_bucket(hc, client):
    # the SDK sleeps 0.5 s, then 1 s between tries on rate_limit_exceeded:
    # an empty bucket refilling 1/s lets its third try through
    hc.add_server(name="a")
    hc.set_rate_limit(remaining=0)
    seq = hc.log_seq()
    t = time.time()
    assert [s.name for s in client.servers.get_all()] == ["a"]
    assert [e["status"] for e in hc.request_log(seq)] == [429, 429, 200]
    assert 1.4 < time.time() - t < 3


def test_tls_with_verification(tmp_path, monkeypatch):
    import requests
    with fakehcloud.FakeHcloud(tls=True, state_dir=str(tmp_path)) as hc:
        hc.add_server(name="node-a")
        c = Client(token=hc.token, api_endpoint=hc.endpoint)
        with pytest.raises(requests.exceptions.SSLError):
            c.servers.get_all()
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", hc.ca_file)
        c = Client(token=hc.token, api_endpoint=hc.endpoint)
        assert [s.name for s in c.servers.get_all()] == ["node-a"]
