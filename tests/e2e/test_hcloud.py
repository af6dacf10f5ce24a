"""The hcloud provider's instances and client, end to end: the real binary
with --cloud-provider=hcloud against the fake API server and the fake
Hetzner Cloud API (tests/fakes/hcloud), under the shipped RBAC.

1. Nodes are initialized from the servers API (providerID, the zone and
   region the official CCM sets, instance type, addresses), one listing for
   all of them.
2. A deleted server: its NotReady Node is deleted once the API says
   not_found, after the grace period, and never on a 429, a 5xx or a
   timeout.
3. The API down, the token missing or refused, every call rate-limited:
   the local node is initialized from the Hetzner metadata service, the
   remote ones wait with an Event; when the API is back everything
   converges, and nothing is deleted.
4. A token file rotated is picked up without a restart.
5. The token never appears in any output at -v=10, nor in any object the
   daemon wrote.
6. Plain http:// is refused to anything but loopback; https:// is verified.

The helpers here (hcloud_args, heartbeat...) serve test_hcloud_lb.py and
test_hcloud_routes.py too."""

import datetime
import importlib.util
import ipaddress
import os
import sys
import threading
import time

import pytest

from conftest import ROOT, run
from test_bootstrap import (ccm_kubeconfig, check_event, events_for, load_rbac,
                            register, tainted, wait_event, wait_initialized)

sys.path.insert(0, os.path.join(ROOT, "tests", "fakes", "hcloud"))
import fakehcloud  # noqa: E402

MD_FAKES = os.path.join(ROOT, "tests", "fakes", "metadata")
HETZNER_DMI = os.path.join(MD_FAKES, "dmi", "hetzner")


def _load_md():
    spec = importlib.util.spec_from_file_location(
        "fake_metadata_server_hc", os.path.join(MD_FAKES, "server.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


mdserver = _load_md()

# the fake metadata service's default Hetzner identity
# (tests/fakes/metadata/identities/hetzner.json): server 4711, node-a
MD_SERVER_ID = 4711


@pytest.fixture
def hc():
    with fakehcloud.FakeHcloud() as f:
        yield f


@pytest.fixture
def hetzner_md():
    md = mdserver.FakeMetadata("hetzner").start()
    yield md
    md.stop()


def write_file(path, text):
    """Writes path as an installer should: a new file renamed over it."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)
    return path


def hcloud_args(api, hc, tmp, node="cp-1", network="k8s", token=None, extra_cfg="",
                endpoint=None, md=None, extra=(), rbac=True, request_timeout="2s"):
    """bootccm's command line and files for --cloud-provider=hcloud: the
    token file (the fake's token unless given; False writes none), the
    cloud-config, the shipped RBAC (unless loaded already), the
    kubeconfig."""
    if rbac:
        load_rbac(api)
    if token is not False:
        write_file(os.path.join(tmp, "token"), (token or hc.token) + "\n")
    cfg = "hcloud:\n  tokenFile: token\n  endpoint: %s\n" % (endpoint or hc.endpoint)
    if network:
        cfg += "  network: %s\n" % network
    cfg += "  requestTimeout: %s\n" % request_timeout + extra_cfg
    write_file(os.path.join(tmp, "cloud.yaml"), cfg)
    kc = ccm_kubeconfig(api, tmp)
    args = ["--kubeconfig", kc, "--cloud-provider=hcloud",
            "--cloud-config", os.path.join(tmp, "cloud.yaml"), "--node-name", node,
            "--secure-port=0", "--leader-elect=false"]
    if md is not None:
        args += ["--metadata-cloud=hetzner", "--metadata-endpoint=" + md.url,
                 "--metadata-dmi-dir=" + HETZNER_DMI]
    return args + list(extra)


def servers_and_nodes(api, hc, n, node_labels=None):
    """A network k8s, n servers in it (cp-1, worker-1...) and their Nodes
    registered (node_labels: more labels by Node name)."""
    net = hc.add_network(name="k8s", ip_range="10.0.0.0/8")
    servers = {}
    for i in range(n):
        name = "cp-1" if i == 0 else "worker-%d" % i
        servers[name] = hc.add_server(name=name, private_net=[net["id"]])
        register(api, name, control_plane=(i == 0))
        if node_labels and name in node_labels:
            o = api.get_object("nodes", name)
            o["metadata"]["labels"].update(node_labels[name])
            api.update_object(o)
    return net, servers


def labels(node):
    return node["metadata"].get("labels") or {}


def addresses(node):
    return [(a["type"], a["address"]) for a in node["status"].get("addresses") or []]


def server_ip(s):
    return s["public_net"]["ipv4"]["ip"]


def private_ip(s):
    return s["private_net"][0]["ip"]


class Heartbeat(object):
    """Plays the kubelets of some Nodes: updates their Ready condition's
    heartbeat every interval, as a kubelet does (so the controllers see
    the Nodes change, as in a real cluster)."""

    def __init__(self, api, names, ready=True, interval=0.5):
        self.api, self.names, self.ready = api, list(names), ready
        self.interval = interval
        self.done = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while not self.done.wait(self.interval):
            for n in self.names:
                try:
                    set_ready(self.api, n, self.ready)
                except Exception:   # a Node deleted meanwhile
                    pass

    def stop(self):
        self.done.set()
        self.t.join()


def set_ready(api, name, ready):
    o = api.get_object("nodes", name)
    if o is None:
        return
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    o["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False",
                                  "lastHeartbeatTime": now, "lastTransitionTime": now,
                                  "reason": "KubeletReady" if ready else "KubeletNotReady",
                                  "message": "heartbeat"}]
    api.update_object(o, subresource="status")


def register_initialized(api, name, server, ready=False):
    """A Node bootccm initialized before: providerID set, no taint."""
    o = {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
         "spec": {"providerID": "hcloud://%d" % server["id"]}}
    api.create_object(o)
    set_ready(api, name, ready)


def api_requests(hc, since=0, path=None, method=None):
    return [e for e in hc.request_log(since)
            if (path is None or e["path"].startswith(path))
            and (method is None or e["method"] == method)]


# ---- 1 ---------------------------------------------------------------------------


def test_nodes_initialized_from_the_servers_api(api, hc, tmp, daemon):
    net = hc.add_network(name="k8s", ip_range="10.0.0.0/8")
    cp = hc.add_server(name="cp-1", private_net=[net["id"]])
    w1 = hc.add_server(name="worker-1", private_net=[net["id"]], location="nbg1",
                       server_type="cpx21")
    w2 = hc.add_server(name="worker-2", private_net=[net["id"]], location="hel1")
    register(api, "cp-1", control_plane=True)
    register(api, "worker-1")
    register(api, "worker-2")
    seq = hc.log_seq()
    d = daemon(hcloud_args(api, hc, tmp))
    node = wait_initialized(api, "worker-1", timeout=20)
    for n in ("cp-1", "worker-2"):
        wait_initialized(api, n, timeout=20)
    assert node["spec"]["providerID"] == "hcloud://%d" % w1["id"]
    lab = labels(node)
    # the official CCM's labels today: region the location, zone its legacy
    # datacenter name (servers no longer carry datacenter)
    assert lab["topology.kubernetes.io/region"] == "nbg1"
    assert lab["topology.kubernetes.io/zone"] == "nbg1-dc3"
    assert lab["failure-domain.beta.kubernetes.io/zone"] == "nbg1-dc3"
    assert lab["node.kubernetes.io/instance-type"] == "cpx21"
    assert lab["instance.hetzner.cloud/provided-by"] == "cloud"
    assert addresses(node) == [("Hostname", "worker-1"), ("ExternalIP", server_ip(w1)),
                               ("InternalIP", private_ip(w1))]
    assert labels(api.get_object("nodes", "worker-2"))["topology.kubernetes.io/zone"] == \
        "hel1-dc2"
    assert api.get_object("nodes", "cp-1")["spec"]["providerID"] == "hcloud://%d" % cp["id"]
    check_event(wait_event(api, "worker-1", "Synced"), "Normal")
    # three nodes, one listing of the servers (and the network's id once)
    servers = api_requests(hc, seq, "/v1/servers")
    assert len(servers) == 1, servers
    assert servers[0]["query"] == "page=1&per_page=50"
    assert all(e["status"] < 400 for e in hc.request_log(seq))
    # the plain-HTTP endpoint is said at start
    d.wait_for("is plain HTTP (allowed to loopback only", timeout=10)
    assert d.alive()


def test_address_family_dualstack_and_no_network(api, hc, tmp, daemon):
    s = hc.add_server(name="cp-1")
    register(api, "cp-1", control_plane=True)
    daemon(hcloud_args(api, hc, tmp, network=None, extra_cfg="  addressFamily: dualstack\n"))
    node = wait_initialized(api, "cp-1", timeout=20)
    # the server's address in its /64 is <prefix>::1
    v6 = str(ipaddress.IPv6Network(s["public_net"]["ipv6"]["ip"])[1])
    assert addresses(node) == [("Hostname", "cp-1"), ("ExternalIP", server_ip(s)),
                               ("ExternalIP", v6)]


# ---- 2 ---------------------------------------------------------------------------


def rfc3339_s(t):
    return datetime.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()


def test_deleted_server_deletes_the_node_after_the_grace_period(api, hc, tmp, daemon):
    gone = hc.add_server(name="gone")
    kept = hc.add_server(name="kept")
    register_initialized(api, "gone", gone, ready=False)
    register_initialized(api, "kept", kept, ready=False)
    created = api.get_object("nodes", "gone")["metadata"]["creationTimestamp"]
    hc.remove_server(gone["id"])
    grace = 4
    seq = hc.log_seq()
    d = daemon(hcloud_args(api, hc, tmp, extra=[
        "--node-monitor-period=200ms", "--node-deletion-grace-period=%ds" % grace]))
    api.wait_for_object("nodes", "gone", lambda o: o is None, timeout=30)
    check_event(wait_event(api, "gone", "DeletingNode"), "Normal")
    deleted = [e for e in api.request_log() if e.get("resource") == "nodes" and
               e.get("name") == "gone" and e["verb"] == "delete"]
    # not within the grace period counted from the Node's creation (whole
    # seconds: creationTimestamp has no fraction)
    assert deleted and rfc3339_s(deleted[0]["time"]) >= rfc3339_s(created) + grace - 1
    # on the API's own word: not_found for the server's id
    assert any(e["path"] == "/v1/servers/%d" % gone["id"] and e["status"] == 404
               for e in hc.request_log(seq))
    assert api.get_object("nodes", "kept") is not None
    assert d.alive()


def test_no_deletion_on_429_5xx_or_timeout(api, hc, tmp, daemon):
    gone = hc.add_server(name="gone")
    register_initialized(api, "gone", gone, ready=False)
    hc.remove_server(gone["id"])
    # every answer about servers is a 429, then a 503, a 504 timeout, an
    # answer slower than the request timeout (2s), a reset connection
    faults = [dict(status=429), dict(status=503), dict(status=504, code="timeout"),
              dict(delay=3.0), dict(reset=True)]
    fid = hc.inject_fault(path="/v1/servers*", count=None, **faults[0])
    seq = hc.log_seq()
    d = daemon(hcloud_args(api, hc, tmp, extra=[
        "--node-monitor-period=200ms", "--node-deletion-grace-period=0s"]))
    for f in faults[1:] + [None]:
        # the lifecycle controller asked (again and again) and got no answer
        # it may act on
        hc.wait_for_request(lambda e: e["path"].startswith("/v1/servers") and
                            e["fault"] == fid, timeout=10, since=seq)
        time.sleep(1.5)
        assert api.get_object("nodes", "gone") is not None, d.output()
        hc.clear_faults(fid)
        seq = hc.log_seq()
        if f is not None:
            fid = hc.inject_fault(path="/v1/servers*", count=None, **f)
    # the API answers again: not_found, deleted
    api.wait_for_object("nodes", "gone", lambda o: o is None, timeout=20)
    assert d.alive()


def test_a_404_without_the_envelope_deletes_nothing(api, hc, tmp, daemon):
    gone = hc.add_server(name="gone")
    register_initialized(api, "gone", gone, ready=False)
    hc.remove_server(gone["id"])
    # a proxy's 404 page is no word of the API's
    fid = hc.inject_fault(path="/v1/servers*", count=None, status=404, body="<html>404</html>",
                          content_type="text/html")
    seq = hc.log_seq()
    d = daemon(hcloud_args(api, hc, tmp, extra=[
        "--node-monitor-period=200ms", "--node-deletion-grace-period=0s"]))
    hc.wait_for_request(lambda e: e["fault"] == fid, timeout=10, since=seq)
    time.sleep(2)
    assert api.get_object("nodes", "gone") is not None
    assert d.alive()


# ---- 3 ---------------------------------------------------------------------------


def check_fallback_then_converge(api, hc, tmp, daemon, md, break_api, fix_api, why):
    """The API is broken by break_api: the local node (node-a, server 4711 in
    the metadata service) initializes from the metadata service, the remote
    one waits with an Event naming why; fix_api brings the API back and the
    remote node converges; nothing is deleted throughout."""
    net = hc.add_network(name="k8s", ip_range="10.0.0.0/8")
    hc.add_server(name="node-a", id=MD_SERVER_ID,
                  private_net=[{"network": net["id"], "ip": "10.0.0.2"}],
                  public_ipv4="203.0.113.10")
    w = hc.add_server(name="worker-1", private_net=[net["id"]])
    register(api, "node-a", control_plane=True)
    register(api, "worker-1")
    args = break_api()
    hb = Heartbeat(api, ["node-a", "worker-1"], ready=False)
    try:
        d = daemon(args + ["--node-monitor-period=200ms", "--node-deletion-grace-period=0s"])
        local = wait_initialized(api, "node-a", timeout=20)
        assert local["spec"]["providerID"] == "hcloud://%d" % MD_SERVER_ID
        assert labels(local)["topology.kubernetes.io/zone"] == "fsn1-dc14"
        assert labels(local)["topology.kubernetes.io/region"] == "fsn1"
        synced = wait_event(api, "node-a", "Synced")
        check_event(synced, "Normal", "instance metadata", "fallback")
        # the remote node waits, saying why
        ev = wait_event(api, "worker-1", "InitializationFailed", timeout=20)
        check_event(ev, "Warning", why)
        assert tainted(api.get_object("nodes", "worker-1"))
        time.sleep(1)
        assert api.get_object("nodes", "node-a") is not None
        fix_api()
        node = wait_initialized(api, "worker-1", timeout=30)
        assert node["spec"]["providerID"] == "hcloud://%d" % w["id"]
        assert labels(node)["instance.hetzner.cloud/provided-by"] == "cloud"
        # the lifecycle controller asks about both NotReady nodes now: the
        # API knows them, so nothing is deleted
        time.sleep(2)
        assert api.get_object("nodes", "node-a") is not None
        assert api.get_object("nodes", "worker-1") is not None
        assert d.alive()
    finally:
        hb.stop()


def test_api_unreachable_bootstrap(api, hc, tmp, daemon, hetzner_md):
    fid = []

    def broken():
        fid.append(hc.inject_fault(path="/v1/*", count=None, reset=True))
        return hcloud_args(api, hc, tmp, node="node-a", md=hetzner_md)

    check_fallback_then_converge(api, hc, tmp, daemon, hetzner_md, broken,
                                 lambda: hc.clear_faults(fid[0]), "transient")


def test_token_missing_bootstrap(api, hc, tmp, daemon, hetzner_md):
    def broken():
        return hcloud_args(api, hc, tmp, node="node-a", md=hetzner_md, token=False)

    check_fallback_then_converge(
        api, hc, tmp, daemon, hetzner_md, broken,
        lambda: write_file(os.path.join(tmp, "token"), hc.token + "\n"),
        "No such file or directory")


def test_token_refused_bootstrap(api, hc, tmp, daemon, hetzner_md):
    def broken():
        return hcloud_args(api, hc, tmp, node="node-a", md=hetzner_md,
                           token="wrong-token-0123456789")

    check_fallback_then_converge(
        api, hc, tmp, daemon, hetzner_md, broken,
        lambda: write_file(os.path.join(tmp, "token"), hc.token + "\n"), "unauthorized")


def test_rate_limited_bootstrap(api, hc, tmp, daemon, hetzner_md):
    def broken():
        hc.set_rate_limit(remaining=0, refill=0)
        return hcloud_args(api, hc, tmp, node="node-a", md=hetzner_md)

    check_fallback_then_converge(
        api, hc, tmp, daemon, hetzner_md, broken,
        lambda: hc.set_rate_limit(remaining=3600, refill=1), "rate")


# ---- 4 ---------------------------------------------------------------------------


def test_token_file_rotated_without_restart(api, hc, tmp, daemon):
    net = hc.add_network(name="k8s")
    hc.add_server(name="cp-1", private_net=[net["id"]])
    register(api, "cp-1", control_plane=True)
    d = daemon(hcloud_args(api, hc, tmp))
    wait_initialized(api, "cp-1", timeout=20)
    # a server the daemon has not seen yet: it must ask the API for it
    w = hc.add_server(name="worker-1", private_net=[net["id"]])
    new = "rotated-token-" + "x" * 50
    # the project's token is replaced: the old one is refused from now on
    hc.set_tokens([new])
    write_file(os.path.join(tmp, "token"), new + "\n")
    seq = hc.log_seq()
    register(api, "worker-1")
    node = wait_initialized(api, "worker-1", timeout=20)
    assert node["spec"]["providerID"] == "hcloud://%d" % w["id"]
    log = hc.request_log(seq)
    assert log and all(e["status"] == 200 for e in log), log
    # (the fake refuses the old token now: every request carried the new)
    assert d.alive()


# ---- 5 ---------------------------------------------------------------------------


def test_token_never_in_any_output(api, hc, tmp, daemon, hetzner_md):
    secret = "s3cr3t-hcloud-token-" + "q" * 44
    hc.add_token(secret)
    net = hc.add_network(name="k8s")
    hc.add_server(name="node-a", id=MD_SERVER_ID, private_net=[net["id"]])
    hc.add_server(name="worker-1", private_net=[net["id"]])
    register(api, "node-a", control_plane=True)
    register(api, "worker-1")
    wrong = "wrong-hcloud-token-" + "z" * 45
    d = daemon(hcloud_args(api, hc, tmp, node="node-a", md=hetzner_md, token=wrong,
                           extra=["-v=10"]))
    wait_event(api, "worker-1", "InitializationFailed", timeout=20)
    write_file(os.path.join(tmp, "token"), secret + "\n")
    # a refused token is a permanent failure, retried three times at once
    # and then once a minute: the kubelet's status updates bring the Node
    # back sooner, as in a cluster
    hb = Heartbeat(api, ["worker-1"], ready=True)
    try:
        wait_initialized(api, "worker-1", timeout=30)
    finally:
        hb.stop()
    api.create_object({"apiVersion": "v1", "kind": "Service",
                       "metadata": {"name": "web", "namespace": "default"},
                       "spec": {"type": "LoadBalancer", "selector": {"app": "web"},
                                "ports": [{"port": 80, "protocol": "TCP"}]}})
    time.sleep(3)
    rc, out = d.stop()
    assert rc in (0, -15), out
    objects = [str(o) for r in ("nodes", "events", "services") for o in
               api.list_objects(r)]
    for tok in (secret, wrong):
        for needle in (tok, tok[:16], tok[-16:]):
            assert needle not in out, needle
            for o in objects:
                assert needle not in o, needle
    # the log did say what happened
    assert "unauthorized" in out


# ---- 6 ---------------------------------------------------------------------------


def test_plain_http_only_to_loopback(api, hc, tmp):
    args = hcloud_args(api, hc, tmp, endpoint="http://192.0.2.1/v1")
    r = run(args, timeout=30)
    assert r.returncode != 0
    assert "plain http:// is allowed only to a loopback address" in r.stderr + r.stdout


def test_https_endpoint_is_verified(api, tmp, daemon):
    with fakehcloud.FakeHcloud(tls=True) as hcs:
        net = hcs.add_network(name="k8s")
        hcs.add_server(name="cp-1", private_net=[net["id"]])
        register(api, "cp-1", control_plane=True)
        # an unknown CA: refused, nothing initialized
        d = daemon(hcloud_args(api, hcs, tmp, extra_cfg="  caFile: %s\n" % os.path.join(
            ROOT, "tests", "fakes", "hcloud", "README.md")))
        ev = wait_event(api, "cp-1", "InitializationFailed", timeout=20)
        check_event(ev, "Warning")
        assert tainted(api.get_object("nodes", "cp-1"))
        assert not hcs.request_log(), "a request went through an unverified connection"
        d.stop()
        # its CA: initialized
        daemon(hcloud_args(api, hcs, tmp, extra_cfg="  caFile: %s\n" % hcs.ca_file,
                           rbac=False))
        wait_initialized(api, "cp-1", timeout=20)
