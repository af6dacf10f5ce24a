"""Debian's `hcloud` CLI (hcloud-cli 1.30.3, built on hcloud-go 1.35.3)
against the fake: a client that disagrees with the fake shows a bug in the
fake.  Skipped when /usr/bin/hcloud is missing (apt-get install hcloud-cli).

Run: /usr/bin/python3 -m pytest tests/fakes/hcloud/test_hcloud_cli.py
"""

import json
import os
import shutil
import subprocess

import pytest

import fakehcloud

HCLOUD = shutil.which("hcloud")
pytestmark = pytest.mark.skipif(HCLOUD is None,
                                reason="hcloud-cli is not installed")
pytest_plugins = ("hcfixtures",)  # the hc fixture


@pytest.fixture
def cli(hc, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "HOME": str(home), "HCLOUD_ENDPOINT": hc.endpoint,
           "HCLOUD_TOKEN": hc.token}

    def run(*args, ok=True, extra_env=None, drop=()):
        e = dict(env, **(extra_env or {}))
        for k in drop:
            e.pop(k, None)
        r = subprocess.run([HCLOUD] + list(args), capture_output=True,
                           text=True, env=e, timeout=60)
        if ok:
            assert r.returncode == 0, (args, r.stdout, r.stderr)
        return r
    run.home = home
    return run


def _net(hc):
    return hc.add_network(name="k8s")


def _requests(hc, since=0):
    return [(e["method"], e["path"], e["query"], e["status"])
            for e in hc.request_log(since)]


def test_server_list(hc, cli):
    n = _net(hc)
    a = hc.add_server(name="node-a", private_net=[n["id"]])
    b = hc.add_server(name="node-b", public_ipv6=None, status="off")
    out = cli("server", "list").stdout.splitlines()
    assert out[0].split()[:6] == ["ID", "NAME", "STATUS", "IPV4", "IPV6",
                                  "PRIVATE"]
    row_a = out[1].split()
    assert row_a[:5] == [str(a["id"]), "node-a", "running",
                         a["public_net"]["ipv4"]["ip"],
                         a["public_net"]["ipv6"]["ip"]]
    assert "10.0.0.2 (k8s)" in out[1]
    assert out[2].split()[:5] == [str(b["id"]), "node-b", "off",
                                  b["public_net"]["ipv4"]["ip"], "-"]
    assert ("GET", "/v1/servers", "page=1&per_page=50&sort=id%3Aasc",
            200) in _requests(hc)


def test_server_list_follows_pages(hc, cli):
    for i in range(60):
        hc.add_server(name="n%02d" % i)
    seq = hc.log_seq()
    out = cli("server", "list", "-o", "noheader", "-o",
              "columns=name").stdout.split()
    assert out == ["n%02d" % i for i in range(60)]
    pages = [e["query"] for e in hc.request_log(seq)
             if e["path"] == "/v1/servers"]
    assert pages == ["page=1&per_page=50&sort=id%3Aasc",
                     "page=2&per_page=50&sort=id%3Aasc"]


def test_server_list_label_selector(hc, cli):
    hc.add_server(name="w", labels={"role": "worker"})
    hc.add_server(name="d", labels={"role": "db"})
    out = cli("server", "list", "-l", "role=worker", "-o", "noheader", "-o",
              "columns=name").stdout.split()
    assert out == ["w"]


def test_server_location_needs_the_legacy_datacenter(hc, cli):
    # hcloud-go 1.35 has no top-level Server.Location: the CLI reads the
    # location from datacenter.location.  With today's shape (no
    # datacenter) it still succeeds but cannot show a location.
    hc.add_server(name="node-a", location="hel1")
    cols = ("server", "list", "-o", "noheader", "-o",
            "columns=name,location,datacenter")
    assert cli(*cols).stdout.split() == ["node-a"]
    hc.set_legacy_datacenter(True)
    assert cli(*cols).stdout.split() == ["node-a", "hel1", "hel1-dc2"]


def test_server_describe(hc, cli):
    n = _net(hc)
    s = hc.add_server(name="node-a", location="hel1", private_net=[n["id"]],
                      labels={"role": "worker"})
    out = cli("server", "describe", "node-a").stdout
    assert "ID:\t\t%d" % s["id"] in out
    assert "Name:\t\tnode-a" in out
    assert "Server Type:\tcx22 (ID: 104)" in out
    assert "IP:\t\t%s" % s["public_net"]["ipv4"]["ip"] in out
    assert "IP:\t\t\t10.0.0.2" in out and "Name:\t\tk8s" in out
    assert "role: worker" in out
    # today's shape: the location is only in the raw JSON
    raw = json.loads(cli("server", "describe", "node-a", "-o",
                         "json").stdout)
    assert raw["location"]["name"] == "hel1" and "datacenter" not in raw
    hc.set_legacy_datacenter(True)
    out = cli("server", "describe", str(s["id"])).stdout
    assert "Name:\t\thel1-dc2" in out
    assert "Location:\n    Name:\t\thel1" in out


def test_server_add_and_remove_label(hc, cli):
    s = hc.add_server(name="node-a", labels={"keep": "1"})
    seq = hc.log_seq()
    cli("server", "add-label", "node-a", "pool=ingress")
    assert hc.server(s["id"])["labels"] == {"keep": "1", "pool": "ingress"}
    assert ("PUT", "/v1/servers/%d" % s["id"], "", 200) in _requests(hc, seq)
    cli("server", "remove-label", "node-a", "pool")
    assert hc.server(s["id"])["labels"] == {"keep": "1"}


def test_server_describe_unknown(hc, cli):
    r = cli("server", "describe", "nope", ok=False)
    assert r.returncode != 0 and "server not found: nope" in r.stderr


def test_load_balancer_lifecycle(hc, cli):
    hc.add_server(name="node-a")
    b = hc.add_server(name="node-b")
    out = cli("load-balancer", "create", "--name", "lb1", "--type", "lb11",
              "--location", "fsn1", "--label",
              "hcloud-ccm/service-uid=u1").stdout
    lb = hc.load_balancer("lb1")
    assert "LoadBalancer %d created" % lb["id"] in out
    assert "IPv4: %s" % lb["public_net"]["ipv4"]["ip"] in out
    assert lb["labels"] == {"hcloud-ccm/service-uid": "u1"}
    assert lb["load_balancer_type"]["name"] == "lb11"
    out = cli("load-balancer", "add-target", "lb1", "--server",
              "node-b").stdout
    assert "Target added to Load Balancer %d" % lb["id"] in out
    cli("load-balancer", "add-service", "lb1", "--protocol", "tcp",
        "--listen-port", "80", "--destination-port", "30080")
    got = hc.load_balancer("lb1")
    assert got["targets"][0]["server"] == {"id": b["id"]}
    assert got["services"][0]["destination_port"] == 30080
    out = cli("load-balancer", "describe", "lb1").stdout
    assert "Name:\t\t\t\tlb1" in out
    assert "Listen Port:\t\t80" in out
    assert "Destination Port:\t\t30080" in out
    assert "Name:\t\t\tnode-b" in out
    assert "Status:\t\t\thealthy" in out
    assert "Max Targets:\t\t\t25" in out
    out = cli("load-balancer", "delete", "lb1").stdout
    assert "Load Balancer lb1 deleted" in out
    assert hc.load_balancer("lb1") is None
    assert ("DELETE", "/v1/load_balancers/%d" % lb["id"], "", 204) in \
        _requests(hc)


def test_load_balancer_errors_reach_the_user(hc, cli):
    hc.add_server(name="node-a")
    hc.add_server(name="dark", public_ipv4=None)
    cli("load-balancer", "create", "--name", "lb1", "--type", "lb11",
        "--location", "fsn1")
    cli("load-balancer", "add-target", "lb1", "--server", "node-a")
    r = cli("load-balancer", "add-target", "lb1", "--server", "node-a",
            ok=False)
    assert r.returncode != 0
    assert "target is already defined (target_already_defined)" in r.stderr
    r = cli("load-balancer", "add-target", "lb1", "--server", "dark",
            ok=False)
    assert "(resolve_cloud_public_targets_error)" in r.stderr
    r = cli("load-balancer", "add-target", "lb1", "--server", "node-a",
            "--use-private-ip", ok=False)
    assert "(target_already_defined)" in r.stderr
    cli("load-balancer", "add-service", "lb1", "--protocol", "tcp",
        "--listen-port", "80", "--destination-port", "1")
    r = cli("load-balancer", "add-service", "lb1", "--protocol", "tcp",
            "--listen-port", "80", "--destination-port", "2", ok=False)
    assert "(source_port_already_used)" in r.stderr
    r = cli("load-balancer", "create", "--name", "lb1", "--type", "lb11",
            "--location", "fsn1", ok=False)
    assert "(uniqueness_error)" in r.stderr


def test_label_selector_and_private_targets(hc, cli):
    n = _net(hc)
    w = hc.add_server(name="w1", labels={"role": "worker"},
                      private_net=[n["id"]])
    cli("load-balancer", "create", "--name", "lb1", "--type", "lb11",
        "--location", "fsn1")
    r = cli("load-balancer", "add-target", "lb1", "--label-selector",
            "role=worker", "--use-private-ip", ok=False)
    assert "(load_balancer_not_attached_to_network)" in r.stderr
    cli("load-balancer", "attach-to-network", "lb1", "--network", "k8s")
    cli("load-balancer", "add-target", "lb1", "--label-selector",
        "role=worker", "--use-private-ip")
    out = cli("load-balancer", "describe", "lb1").stdout
    assert "Label Selector:\t\trole=worker\n      Targets: (1)" in out
    assert "Private Net:\n  - ID:\t\t\t%d\n    Name:\t\tk8s\n" \
        "    IP:\t\t\t10.0.0.3" % n["id"] in out
    t = hc.load_balancer("lb1")["targets"][0]
    assert [x["server"]["id"] for x in t["targets"]] == [w["id"]]


def test_network_add_route(hc, cli):
    n = _net(hc)
    out = cli("network", "add-route", "k8s", "--destination",
              "10.244.1.0/24", "--gateway", "10.0.0.2").stdout
    assert "Route added to network %d" % n["id"] in out
    assert hc.network(n["id"])["routes"] == [
        {"destination": "10.244.1.0/24", "gateway": "10.0.0.2"}]
    out = cli("network", "describe", "k8s").stdout
    assert "Destination:\t10.244.1.0/24\n    Gateway:\t\t10.0.0.2" in out
    r = cli("network", "add-route", "k8s", "--destination", "8.8.8.0/24",
            "--gateway", "10.0.0.2", ok=False)
    assert "(invalid_input)" in r.stderr
    cli("network", "remove-route", "k8s", "--destination", "10.244.1.0/24",
        "--gateway", "10.0.0.2")
    assert hc.network(n["id"])["routes"] == []


def test_conflict_is_retried_by_the_client(hc, cli):
    n = _net(hc)
    hc.inject_fault(path="/v1/networks/*/actions/add_route", status=409,
                    count=2)
    seq = hc.log_seq()
    cli("network", "add-route", "k8s", "--destination", "10.244.1.0/24",
        "--gateway", "10.0.0.2")
    posts = [e["status"] for e in hc.request_log(seq)
             if e["method"] == "POST"]
    assert posts == [409, 409, 201]
    assert len(hc.network(n["id"])["routes"]) == 1


def test_client_waits_for_a_running_action(hc, cli):
    _net(hc)
    hc.set_action_seconds(1.2)
    seq = hc.log_seq()
    cli("network", "add-route", "k8s", "--destination", "10.244.1.0/24",
        "--gateway", "10.0.0.2")
    polls = [e for e in hc.request_log(seq) if e["path"] == "/v1/actions"]
    assert len(polls) >= 2
    assert polls[0]["query"].startswith("id=")


def test_failed_action_is_an_error(hc, cli):
    _net(hc)
    hc.script_action("add_route", error=("action_failed", "no route today"))
    r = cli("network", "add-route", "k8s", "--destination", "10.244.1.0/24",
            "--gateway", "10.0.0.2", ok=False)
    assert r.returncode != 0 and "no route today (action_failed)" in r.stderr


def test_error_bodies_need_the_json_content_type(hc, cli):
    hc.inject_fault(path="/v1/servers", status=503)
    r = cli("server", "list", ok=False)
    assert "fault injected (unavailable)" in r.stderr
    hc.inject_fault(path="/v1/servers", status=502,
                    body='{"error":{"code":"bad_gateway","message":"x"}}',
                    content_type="text/html")
    r = cli("server", "list", ok=False)
    assert "server responded with status code 502" in r.stderr


def test_rate_limit_answer(hc, cli):
    hc.set_rate_limit(remaining=0, refill=0.001)
    r = cli("server", "list", ok=False)
    assert "(rate_limit_exceeded)" in r.stderr


def test_wrong_token(hc, cli):
    r = cli("server", "list", ok=False, extra_env={"HCLOUD_TOKEN": "x" * 64})
    assert "unable to authenticate (unauthorized)" in r.stderr


def test_token_from_a_config_file(hc, cli):
    # hcloud-cli 1.30 does not look for the file under $HOME: it is named by
    # HCLOUD_CONFIG (its --config flag)
    hc.add_server(name="node-a")
    cfg = cli.home / "cli.toml"
    cfg.write_text(
        'active_context = "fake"\n\n[[contexts]]\n  name = "fake"\n'
        '  token = "%s"\n' % hc.token)
    out = cli("server", "list", "-o", "noheader", "-o", "columns=name",
              drop=("HCLOUD_TOKEN",),
              extra_env={"HCLOUD_CONFIG": str(cfg)}).stdout.split()
    assert out == ["node-a"]


def test_tls_with_verification(tmp_path):
    with fakehcloud.FakeHcloud(tls=True, state_dir=str(tmp_path)) as hc:
        hc.add_server(name="node-a")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "HOME": str(tmp_path), "HCLOUD_ENDPOINT": hc.endpoint,
               "HCLOUD_TOKEN": hc.token}
        r = subprocess.run([HCLOUD, "server", "list"], capture_output=True,
                           text=True, env=env, timeout=60)
        assert r.returncode != 0 and "certificate" in r.stderr
        env["SSL_CERT_FILE"] = hc.ca_file
        r = subprocess.run([HCLOUD, "server", "list"], capture_output=True,
                           text=True, env=env, timeout=60)
        assert r.returncode == 0 and "node-a" in r.stdout, r.stderr
