"""The seven bootstrap scenarios, end to end: the real binary against the fake
API server (static-pod/rbac.yaml loaded, bootccm authenticating as
system:cloud-controller-manager over a kubeconfig with tls-server-name, like
the installer writes) and the fake EC2 metadata service.

Nodes are registered the way kubelet --cloud-provider=external does since
Kubernetes 1.29: no addresses, the uninitialized taint, both not-ready taints
and, on control-plane nodes, the control-plane taint.

1. bootccm starts 30 s before the API server: it waits quietly, and the first
   node is initialized within one second of the server listening.
2. Addresses, providerID, GA and beta labels, only the uninitialized taint
   removed; a watch sees the addresses before the taint goes.
3. The RBAC bindings do not exist yet: 403s, no exit, nodes initialized
   within seconds of the bindings appearing.
4. The metadata service is down, then answers partially: nothing is written
   until it answers fully, then the local node is initialized at once.
5. Two replicas: each initializes its own node, only the leader a remote one,
   and no write is lost.
6. Remote nodes: one that reported providerID, labels and node IP is
   initialized from them; one that reported nothing keeps the taint and gets
   a Warning Event saying so.
7. A provided node IP the metadata does not list: the taint stays, with a
   Warning Event naming the IP."""

import datetime
import importlib.util
import os
import re
import threading
import time

import pytest
import yaml

import apiserver
from conftest import ROOT, free_port, https_get as probe
from conftest import events_about

FAKES = os.path.join(ROOT, "tests", "fakes", "metadata")
EC2_DMI = os.path.join(FAKES, "dmi", "ec2")
CCM_USER = "system:cloud-controller-manager"
LEASE_FLAGS = ["--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s",
               "--leader-elect-retry-period=500ms"]
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"

UNINITIALIZED = {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true",
                 "effect": "NoSchedule"}
NOT_READY = [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
             {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]
CONTROL_PLANE = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
PROVIDED_NODE_IP = "alpha.kubernetes.io/provided-node-ip"

# What the default EC2 identity (tests/fakes/metadata/identities/ec2.json)
# says about the instance, as the node controller must write it.
EC2_A = {
    "providerID": "aws:///us-east-2b/i-0a33f80f09c96477f",
    "instanceType": "t3.small", "zone": "us-east-2b", "region": "us-east-2",
    "addresses": [
        {"type": "InternalIP", "address": "172.31.3.15"},
        {"type": "InternalIP", "address": "172.31.7.201"},
        {"type": "InternalIP", "address": "172.31.7.202"},
        {"type": "ExternalIP", "address": "3.14.15.92"},
        {"type": "Hostname", "address": "ip-172-31-3-15.us-east-2.compute.internal"},
        {"type": "InternalDNS", "address": "ip-172-31-3-15.us-east-2.compute.internal"},
        {"type": "ExternalDNS", "address": "ec2-3-14-15-92.us-east-2.compute.amazonaws.com"},
    ],
}

# A second instance, for the second replica of scenario 5.
EC2_B_IDENTITY = {
    "instance_id": "i-0b5e2c9d1a7f30c41", "name": "node-b",
    "hostname": "ip-172-31-20-8.us-east-2.compute.internal",
    "instance_type": "m5.large", "zone": "us-east-2c", "zone_id": "use2-az3",
    "private_ipv4": "172.31.20.8", "public_ipv4": "3.14.15.93",
    "public_hostname": "ec2-3-14-15-93.us-east-2.compute.amazonaws.com",
    "ipv6": None, "mac": "06:17:04:d7:27:01", "interface_id": "eni-0b0b0b0b0b0b0b0b0",
    "extra_interfaces": [],
}
EC2_B = {
    "providerID": "aws:///us-east-2c/i-0b5e2c9d1a7f30c41",
    "instanceType": "m5.large", "zone": "us-east-2c", "region": "us-east-2",
    "addresses": [
        {"type": "InternalIP", "address": "172.31.20.8"},
        {"type": "ExternalIP", "address": "3.14.15.93"},
        {"type": "Hostname", "address": "ip-172-31-20-8.us-east-2.compute.internal"},
        {"type": "InternalDNS", "address": "ip-172-31-20-8.us-east-2.compute.internal"},
        {"type": "ExternalDNS", "address": "ec2-3-14-15-93.us-east-2.compute.amazonaws.com"},
    ],
}

# A worker whose kubelet ran with what `bootccm metadata --format=kubelet-flags`
# printed on it: --provider-id, --node-ip and the topology labels.
WORKER_REPORTED = {
    "providerID": "aws:///us-east-2a/i-0c55aa11bb22cc33d",
    "instanceType": "m5.xlarge", "zone": "us-east-2a", "region": "us-east-2",
    "addresses": [{"type": "InternalIP", "address": "172.31.12.7"}],
}


def _load(name):
    spec = importlib.util.spec_from_file_location("fake_metadata_" + name,
                                                  os.path.join(FAKES, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


mdserver = _load("server")


# ---- helpers ------------------------------------------------------------------



def rbac_objects():
    with open(os.path.join(ROOT, "static-pod", "rbac.yaml")) as f:
        return [o for o in yaml.safe_load_all(f) if o]


def load_rbac(srv, kinds=None):
    for o in rbac_objects():
        if kinds is None or o["kind"] in kinds:
            srv.create_object(o)


def ccm_kubeconfig(srv, tmp, name="kc", groups=()):
    return srv.write_kubeconfig(os.path.join(tmp, name), user=CCM_USER, groups=groups,
                                tls_server_name="kubernetes")


def node_object(name, control_plane=False, reported=None, node_ip=None):
    """A Node as kubelet --cloud-provider=external registers it; `reported`
    (like WORKER_REPORTED) adds --provider-id, --node-ip and the topology
    labels; node_ip alone sets only the provided-node-ip annotation."""
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
              "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
              "beta.kubernetes.io/arch": "amd64"}
    annotations = {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}
    taints = [dict(UNINITIALIZED)] + [dict(t) for t in NOT_READY]
    if control_plane:
        taints.append(dict(CONTROL_PLANE))
        labels["node-role.kubernetes.io/control-plane"] = ""
    spec = {"taints": taints}
    if reported:
        spec["providerID"] = reported["providerID"]
        labels["topology.kubernetes.io/zone"] = reported["zone"]
        labels["topology.kubernetes.io/region"] = reported["region"]
        labels["node.kubernetes.io/instance-type"] = reported["instanceType"]
        node_ip = reported["addresses"][0]["address"]
    if node_ip:
        annotations[PROVIDED_NODE_IP] = node_ip
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "annotations": annotations},
            "spec": spec}


def register(srv, name, **kw):
    return srv.create_object(node_object(name, **kw))


def tainted(node):
    return any(t.get("key") == UNINITIALIZED["key"] for t in node["spec"].get("taints") or [])


def wait_initialized(srv, name, timeout=10.0):
    return srv.wait_for_object("nodes", name, lambda o: o is not None and not tainted(o),
                               timeout=timeout)


def untainted_within(srv, names, timeout):
    """Poll until every named node lost the uninitialized taint; returns the
    seconds it took, or fails naming the nodes still tainted. Then waits for
    the write that removed it to be in the request log (the fake logs a
    request once it answered it, after storing)."""
    t0 = time.monotonic()
    deadline = t0 + timeout
    while True:
        left = [n for n in names if tainted(srv.get_object("nodes", n))]
        if not left:
            took = time.monotonic() - t0
            break
        if time.monotonic() >= deadline:
            raise AssertionError("still tainted after %ss: %s" % (timeout, left))
        time.sleep(0.02)
    for n in names:
        srv.wait_for_request(lambda e, n=n: e.get("resource") == "nodes" and e.get("name") == n
                             and e.get("subresource") == "" and 200 <= e["code"] < 300
                             and e["verb"] in ("patch", "update"), timeout=5)
    return took


def daemon_args(kc, node, md=None, extra=(), secure_port=0):
    args = ["--kubeconfig", kc, "--cloud-provider=metadata", "--node-name", node,
            "--secure-port=%d" % secure_port]
    if secure_port:
        args.append("--bind-address=127.0.0.1")
    if md is not None:
        args += ["--metadata-cloud=ec2", "--metadata-endpoint=" + md.url,
                 "--metadata-dmi-dir=" + EC2_DMI]
    return args + list(extra)


def node_writes(srv, name, since=0, ok_only=False):
    """Writes to nodes/NAME and nodes/NAME/status, oldest first."""
    out = []
    for e in srv.request_log(since):
        if e.get("resource") == "nodes" and e.get("name") == name \
                and e["verb"] in ("patch", "update", "delete") \
                and (not ok_only or 200 <= e["code"] < 300):
            out.append(e)
    return out


def events_for(srv, name, reason=None):
    return events_about(srv, "Node", name, reason)


def wait_event(srv, name, reason, pred=lambda ev: True, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        got = [ev for ev in events_for(srv, name, reason) if pred(ev)]
        if got:
            return got[0]
        if time.monotonic() >= deadline:
            raise AssertionError("no %s Event for node %s within %ss; events: %s"
                                 % (reason, name, timeout,
                                    [(e.get("reason"), e.get("message"))
                                     for e in events_for(srv, name)]))
        time.sleep(0.05)


def check_event(ev, typ, *words):
    assert ev["type"] == typ, ev
    assert ev.get("source", {}).get("component") == "cloud-controller-manager", ev
    for w in words:
        assert w in ev["message"], (w, ev["message"])


def expected_labels(name, facts, control_plane=False):
    want = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": "amd64",
            "node.kubernetes.io/instance-type": facts["instanceType"],
            "beta.kubernetes.io/instance-type": facts["instanceType"],
            "topology.kubernetes.io/zone": facts["zone"],
            "failure-domain.beta.kubernetes.io/zone": facts["zone"],
            "topology.kubernetes.io/region": facts["region"],
            "failure-domain.beta.kubernetes.io/region": facts["region"]}
    if control_plane:
        want["node-role.kubernetes.io/control-plane"] = ""
    return want


def taint_set(taints):
    return sorted((t["key"], t.get("value", ""), t["effect"]) for t in taints or [])


def check_initialized(node, facts, control_plane=False, addresses=None):
    """The node carries exactly what `facts` says, every other taint and label
    it was registered with, and no uninitialized taint."""
    name = node["metadata"]["name"]
    assert node["spec"].get("providerID") == facts["providerID"], node
    assert node["status"].get("addresses") == (addresses or facts["addresses"]), node
    assert node["metadata"]["labels"] == expected_labels(name, facts, control_plane), node
    want = NOT_READY + ([CONTROL_PLANE] if control_plane else [])
    assert taint_set(node["spec"]["taints"]) == taint_set(want), node


def check_still_registered(node, control_plane=False):
    """Nothing written: the node is as kubelet registered it."""
    assert tainted(node), node
    assert not node["status"].get("addresses"), node
    want = [UNINITIALIZED] + NOT_READY + ([CONTROL_PLANE] if control_plane else [])
    assert taint_set(node["spec"]["taints"]) == taint_set(want), node


def rv_precondition(e):
    """The resourceVersion a logged PATCH was conditional on, or None: a
    merge patch's metadata.resourceVersion, or a JSON patch's test of
    /metadata/resourceVersion."""
    ctype, body = e["contentType"].split(";")[0].strip(), e.get("body")
    if ctype == MERGE_PATCH and isinstance(body, dict):
        return (body.get("metadata") or {}).get("resourceVersion") or None
    if ctype == JSON_PATCH and isinstance(body, list):
        for op in body:
            if op.get("op") == "test" and op.get("path") == "/metadata/resourceVersion":
                return op.get("value") or None
    return None


def check_guarded(e):
    """A node write is a PATCH conditional on a resourceVersion; one that
    failed, failed only on that precondition (409 for a merge patch, 422 for
    a JSON patch's failed test: a stale cache, harmless)."""
    assert e["verb"] == "patch" and rv_precondition(e), e
    if not 200 <= e["code"] < 300:
        ctype = e["contentType"].split(";")[0].strip()
        assert (e["code"], ctype) in ((409, MERGE_PATCH), (422, JSON_PATCH)), e


def check_two_writes(srv, name, since=0):
    """Initialization is a merge patch of nodes/NAME/status (the addresses)
    and then one patch of nodes/NAME (the taint), each conditional on the
    resourceVersion, the second on the one the first returned; with one
    replica, no other write is even attempted."""
    for e in node_writes(srv, name, since):
        check_guarded(e)
    ok = node_writes(srv, name, since, ok_only=True)
    assert [(e["verb"], e["subresource"], e["code"]) for e in node_writes(srv, name, since)] == \
        [(e["verb"], e["subresource"], e["code"]) for e in ok], "a refused node write"
    assert [(e["verb"], e["subresource"]) for e in ok] == [("patch", "status"), ("patch", "")], \
        [(e["verb"], e["subresource"], e["code"]) for e in node_writes(srv, name, since)]
    assert ok[0]["contentType"].split(";")[0] == MERGE_PATCH, ok[0]
    assert ok[0]["body"]["status"]["addresses"]
    first, second = rv_precondition(ok[0]), rv_precondition(ok[1])
    assert first and second, ok
    assert int(second) > int(first), ok
    return ok


def rfc3339(s):
    return datetime.datetime.strptime(s.replace("Z", "+0000"),
                                      "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def initialized(name):
    """The start of the log line for a node's initialization."""
    return '"Initialized node" node="%s"' % name


def initialized_log_line(out, name):
    lines = [l for l in out.splitlines()
             if '"Initialized node"' in l and 'node="%s"' % name in l]
    return lines


def klog_lines(out, sev):
    return [l for l in out.splitlines() if re.match(r"^%s\d{4} " % sev, l)]




def wait_probe(port, path, code, timeout=10.0, token=None):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = probe(port, path, token)
            if last[0] == code:
                return last
        except OSError as e:
            last = e
        time.sleep(0.05)
    raise AssertionError("%s never answered %d: %r" % (path, code, last))


def metric(body, series):
    """The value of one series (name with its labels, as exposed), or None."""
    for line in body.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return None


@pytest.fixture
def metadata():
    """start(identity=None) -> a running fake EC2 metadata service."""
    started = []

    def start(identity=None):
        md = mdserver.FakeMetadata("ec2", identity).start()
        started.append(md)
        return md

    yield start
    for md in started:
        md.stop()


class TimedAPIServer(apiserver.FakeAPIServer):
    """The fake API server, remembering when it first began to listen."""

    listening_at = None

    def _listen(self):
        super()._listen()
        if self.listening_at is None:
            self.listening_at = time.time()


# ---- 1 ---------------------------------------------------------------------------

WAIT_BEFORE_APISERVER_S = 30


def test_scenario_1_starts_before_apiserver(tmp, daemon, metadata):
    md = metadata()
    state = os.path.join(tmp, "apiserver")
    port = free_port()
    # the installer's kubeconfig exists (minted with the cluster CA) before
    # any API server has ever listened
    first = apiserver.FakeAPIServer(state_dir=state, port=port).start()
    kc = ccm_kubeconfig(first, tmp)
    first.stop()

    seed = rbac_objects() + [node_object("cp-1", control_plane=True),
                             node_object("worker-1", reported=WORKER_REPORTED)]
    probe_port = free_port()
    d = daemon(daemon_args(kc, "cp-1", md, LEASE_FLAGS, secure_port=probe_port))
    started = time.monotonic()
    srv = None
    try:
        # alive but not ready while there is no API server
        wait_probe(probe_port, "/healthz", 200, timeout=10)
        code, body = probe(probe_port, "/readyz")
        assert code != 200, body
        while time.monotonic() - started < WAIT_BEFORE_APISERVER_S:
            assert d.alive(), d.output()
            time.sleep(0.5)
        assert probe(probe_port, "/healthz")[0] == 200
        assert probe(probe_port, "/readyz")[0] != 200
        quiet = d.output()
        assert klog_lines(quiet, "E") == [], quiet
        assert klog_lines(quiet, "F") == [], quiet
        assert len(klog_lines(quiet, "W")) <= 4, quiet
        assert len(quiet.splitlines()) <= 20, quiet

        srv = TimedAPIServer(state_dir=state, port=port, seed=seed).start()
        untainted_within(srv, ["cp-1", "worker-1"], timeout=15)
        # the write that removes the taint is the one to nodes/NAME itself
        removals = [e for e in srv.request_log()
                    if e.get("resource") == "nodes" and e["verb"] in ("patch", "update")
                    and e.get("subresource") == "" and 200 <= e["code"] < 300]
        assert removals, srv.request_log()
        first_removal = min(rfc3339(e["time"]) for e in removals)
        took = first_removal - srv.listening_at
        # the goal is 1 s (bench/RESULTS.md measures it); the bound here is
        # the one every bootstrap test keeps on a busy machine, with the
        # sanitizer binary too
        assert 0 <= took <= 2.0, "first node initialized %.3fs after the API server listened" % took
        check_initialized(srv.get_object("nodes", "cp-1"), EC2_A, control_plane=True)
        check_initialized(srv.get_object("nodes", "worker-1"), WORKER_REPORTED)
        wait_probe(probe_port, "/readyz", 200, timeout=10)
        assert d.alive()
    finally:
        d.stop()
        if srv is not None:
            srv.stop()


# ---- 2 ---------------------------------------------------------------------------

def _python_client(srv):
    from kubernetes import client, config
    cfg = client.Configuration()
    config.load_kube_config(config_file=os.path.join(srv.state_dir, "admin.kubeconfig"),
                            client_configuration=cfg)
    # this client version predates tls-server-name: verify the certificate
    # for the name the kubeconfig asks for
    cfg.tls_server_name = "kubernetes"
    c = client.ApiClient(cfg)
    pm = c.rest_client.pool_manager
    pm.connection_pool_kw["server_hostname"] = "kubernetes"
    pm.connection_pool_kw["assert_hostname"] = "kubernetes"
    return client, c


class NodeWatch(object):
    """A watch on /api/v1/nodes from the official Python client, kept until
    every named node lost the uninitialized taint (or the timeout)."""

    def __init__(self, srv, names, timeout_s=20):
        from kubernetes import watch
        client, self.api_client = _python_client(srv)
        self.core = client.CoreV1Api(self.api_client)
        self.names = set(names)
        self.events = []           # (type, name, addresses, taint keys)
        self.error = None
        rv = self.core.list_node().metadata.resource_version
        self.watch = watch.Watch()
        self.thread = threading.Thread(target=self._run, args=(rv, timeout_s), daemon=True)
        self.thread.start()

    def _run(self, rv, timeout_s):
        done = set()
        try:
            for ev in self.watch.stream(self.core.list_node, resource_version=rv,
                                        timeout_seconds=timeout_s):
                n = ev["object"]
                addrs = [(a.type, a.address) for a in (n.status.addresses or [])]
                keys = [t.key for t in (n.spec.taints or [])]
                self.events.append((ev["type"], n.metadata.name, addrs, keys))
                if UNINITIALIZED["key"] not in keys:
                    done.add(n.metadata.name)
                if self.names <= done:
                    self.watch.stop()
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = e

    def join(self, timeout):
        self.thread.join(timeout)
        self.api_client.close()
        assert self.error is None, self.error
        return self.events


def test_scenario_2_addresses_before_untaint(api, tmp, daemon, metadata):
    md = metadata()
    load_rbac(api)
    register(api, "cp-1", control_plane=True)
    register(api, "worker-1", reported=WORKER_REPORTED)
    assert not api.get_object("nodes", "cp-1")["status"].get("addresses")
    assert not api.get_object("nodes", "worker-1")["status"].get("addresses")
    # a reader of /metrics
    token = "metrics-reader-token-0123456789"
    api.add_token(token, "prometheus")
    api.create_object({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                       "metadata": {"name": "metrics-reader"},
                       "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})
    api.create_object({"apiVersion": "rbac.authorization.k8s.io/v1",
                       "kind": "ClusterRoleBinding", "metadata": {"name": "metrics-reader"},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                   "kind": "ClusterRole", "name": "metrics-reader"},
                       "subjects": [{"kind": "User", "name": "prometheus",
                                     "apiGroup": "rbac.authorization.k8s.io"}]})
    kc = ccm_kubeconfig(api, tmp)
    w = NodeWatch(api, ["cp-1", "worker-1"])
    seq = api.log_seq()
    port = free_port()
    d = daemon(daemon_args(kc, "cp-1", md, LEASE_FLAGS, secure_port=port))
    untainted_within(api, ["cp-1", "worker-1"], timeout=15)
    events = w.join(10)

    # what a watching client saw: for each node, addresses in an event
    # before the one in which the taint is gone, and never a node without
    # the taint and without addresses
    for name in ("cp-1", "worker-1"):
        mine = [e for e in events if e[1] == name]
        assert mine and all(t == "MODIFIED" for t, _, _, _ in mine), mine
        gone = [i for i, e in enumerate(mine) if UNINITIALIZED["key"] not in e[3]]
        assert gone, mine
        first_addr = [i for i, e in enumerate(mine) if e[2]]
        assert first_addr and first_addr[0] < gone[0], mine
        assert all(e[2] for e in mine if UNINITIALIZED["key"] not in e[3]), mine

    cp = api.get_object("nodes", "cp-1")
    check_initialized(cp, EC2_A, control_plane=True)
    # the kubelet's annotation kept, and where the addresses came from added
    assert cp["metadata"]["annotations"] == {
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        "bootccm.io/address-source": "instance-metadata"}
    worker = api.get_object("nodes", "worker-1")
    check_initialized(worker, WORKER_REPORTED)
    assert worker["metadata"]["annotations"]["bootccm.io/address-source"] == "kubelet-reported"
    check_two_writes(api, "cp-1", seq)
    check_two_writes(api, "worker-1", seq)

    synced = wait_event(api, "cp-1", "Synced")
    check_event(synced, "Normal", "instance metadata")
    assert "fallback" not in synced["message"]  # the provider itself read it
    check_event(wait_event(api, "worker-1", "Synced"), "Normal", "kubelet")
    d.wait_for(initialized("cp-1"), timeout=5)
    d.wait_for(initialized("worker-1"), timeout=5)

    code, body = wait_probe(port, "/metrics", 200, token=token)
    assert metric(body, 'bootccm_node_initializations_total{source="instance-metadata"}') == 1, body
    assert metric(body, 'bootccm_node_initializations_total{source="kubelet-reported"}') == 1, body
    assert metric(body, "node_controller_cloud_provider_taint_removal_delay_seconds_count") == 2, body

    # nothing changed afterwards: a second pass finds nothing to do
    after = api.log_seq()
    time.sleep(1.0)
    for name in ("cp-1", "worker-1"):
        assert node_writes(api, name, after, ok_only=True) == []
        for e in node_writes(api, name, after):
            check_guarded(e)


# ---- 3 ---------------------------------------------------------------------------

def test_scenario_3_rbac_binding_missing(api, tmp, daemon, metadata):
    md = metadata()
    load_rbac(api, kinds=("ClusterRole", "Role"))
    register(api, "cp-1", control_plane=True)
    register(api, "worker-1", reported=WORKER_REPORTED)
    kc = ccm_kubeconfig(api, tmp)
    d = daemon(daemon_args(kc, "cp-1", md, LEASE_FLAGS))
    for resource in ("nodes", "leases"):
        api.wait_for_request(lambda e, r=resource: e["code"] == 403 and e.get("resource") == r
                             and e["user"] == CCM_USER, timeout=10)
    # keeps trying (its backoff is capped at a few seconds), never exits,
    # writes nothing
    seq = api.log_seq()
    api.wait_for_request(lambda e: e["code"] == 403 and e.get("resource") == "nodes",
                         since=seq, timeout=10)
    assert d.alive(), d.output()
    for name in ("cp-1", "worker-1"):
        assert node_writes(api, name, ok_only=True) == []
        check_still_registered(api.get_object("nodes", name), control_plane=name == "cp-1")

    load_rbac(api, kinds=("ClusterRoleBinding", "RoleBinding"))
    took = untainted_within(api, ["cp-1", "worker-1"], timeout=10)
    assert took <= 10
    assert d.alive()
    check_initialized(api.get_object("nodes", "cp-1"), EC2_A, control_plane=True)
    check_initialized(api.get_object("nodes", "worker-1"), WORKER_REPORTED)


# ---- 4 ---------------------------------------------------------------------------

def test_scenario_4_metadata_service_late(api, tmp, daemon, metadata):
    md = metadata()
    md.go_down()                     # nothing listens on its port
    load_rbac(api)
    register(api, "cp-1", control_plane=True)
    kc = ccm_kubeconfig(api, tmp)
    d = daemon(daemon_args(kc, "cp-1", md, LEASE_FLAGS))

    # down: the initialization fails, is reported, and nothing is written
    ev = wait_event(api, "cp-1", "InitializationFailed", timeout=10)
    check_event(ev, "Warning")
    assert d.alive(), d.output()

    # up, but one read fails: what was read is partial and must not be used
    public = "/latest/meta-data/public-ipv4"
    md.fail(500, count=None, path=public)
    md.come_up()
    deadline = time.monotonic() + 10
    while len([l for l in md.request_log() if l["path"] == public and l["status"] == 500]) < 2:
        assert time.monotonic() < deadline, md.request_log()
        time.sleep(0.05)
    assert any(l["path"] == "/latest/meta-data/instance-id" and l["status"] == 200
               for l in md.request_log())
    assert d.alive(), d.output()

    seq_up = api.log_seq()
    md.clear_faults()
    took = untainted_within(api, ["cp-1"], timeout=5)
    assert took <= 5
    before = [(e["verb"], e["path"], e["code"]) for e in node_writes(api, "cp-1")
              if e["seq"] <= seq_up]
    assert before == []
    node = api.get_object("nodes", "cp-1")
    check_initialized(node, EC2_A, control_plane=True)
    check_two_writes(api, "cp-1", seq_up)
    assert d.alive()


# ---- 5 ---------------------------------------------------------------------------

def test_scenario_5_two_replicas(api, tmp, daemon, metadata):
    md_a = metadata()
    md_b = metadata(EC2_B_IDENTITY)
    load_rbac(api)
    register(api, "cp-a", control_plane=True)
    register(api, "cp-b", control_plane=True)
    register(api, "worker-1", reported=WORKER_REPORTED)
    # the same user; a group that grants nothing tells the replicas apart in
    # the request log
    groups = {"a": "bootccm-test-replica-a", "b": "bootccm-test-replica-b"}
    kc_a = ccm_kubeconfig(api, tmp, "kc-a", groups=(groups["a"],))
    kc_b = ccm_kubeconfig(api, tmp, "kc-b", groups=(groups["b"],))
    seq = api.log_seq()
    reps = {"a": daemon(daemon_args(kc_a, "cp-a", md_a, ["--leader-elect=true"] + LEASE_FLAGS)),
            "b": daemon(daemon_args(kc_b, "cp-b", md_b, ["--leader-elect=true"] + LEASE_FLAGS))}
    untainted_within(api, ["cp-a", "cp-b", "worker-1"], timeout=15)

    leaders = [k for k, d in reps.items() if "Started leading" in d.output()]
    assert len(leaders) == 1, {k: d.output() for k, d in reps.items()}
    leader = leaders[0]
    other = "b" if leader == "a" else "a"
    for d in reps.values():
        assert d.alive(), d.output()

    def replica(e):
        hits = [k for k, g in groups.items() if g in e["groups"]]
        assert len(hits) == 1 and e["user"] == CCM_USER, e
        return hits[0]

    # each node written only by the replica that should: its own replica for
    # cp-a and cp-b, the leader for worker-1; the other replica never even
    # tried to write worker-1
    owners = {"cp-a": "a", "cp-b": "b", "worker-1": leader}
    for name, owner in owners.items():
        ok = node_writes(api, name, seq, ok_only=True)
        assert ok and {replica(e) for e in ok} == {owner}, \
            (name, [(replica(e), e["verb"], e["subresource"]) for e in ok])
        assert [(e["verb"], e["subresource"]) for e in ok] == [("patch", "status"), ("patch", "")], \
            (name, [(replica(e), e["verb"], e["subresource"], e["code"])
                    for e in node_writes(api, name, seq)])
    assert [e for e in node_writes(api, "worker-1", seq) if replica(e) == other] == []
    for name in owners:
        for e in node_writes(api, name, seq):
            check_guarded(e)

    # nothing lost: every node exactly as it should be
    check_initialized(api.get_object("nodes", "cp-a"), EC2_A, control_plane=True)
    check_initialized(api.get_object("nodes", "cp-b"), EC2_B, control_plane=True)
    check_initialized(api.get_object("nodes", "worker-1"), WORKER_REPORTED)
    # (each replica logs after its last write)
    reps["a"].wait_for(initialized("cp-a"), timeout=5)
    reps["b"].wait_for(initialized("cp-b"), timeout=5)
    reps[leader].wait_for(initialized("worker-1"), timeout=5)
    assert not initialized_log_line(reps[other].output(), "worker-1"), reps[other].output()
    assert not initialized_log_line(reps["a"].output(), "cp-b")
    assert not initialized_log_line(reps["b"].output(), "cp-a")


# ---- 6 ---------------------------------------------------------------------------

def test_scenario_6_remote_nodes_from_kubelet_data(api, tmp, daemon, metadata):
    md = metadata()
    load_rbac(api)
    register(api, "cp-1", control_plane=True)
    register(api, "worker-1", reported=WORKER_REPORTED)
    register(api, "worker-2")                  # its kubelet reported nothing
    kc = ccm_kubeconfig(api, tmp)
    seq = api.log_seq()
    d = daemon(daemon_args(kc, "cp-1", md, LEASE_FLAGS))
    untainted_within(api, ["cp-1", "worker-1"], timeout=10)
    check_initialized(api.get_object("nodes", "worker-1"), WORKER_REPORTED)
    check_two_writes(api, "worker-1", seq)
    check_event(wait_event(api, "worker-1", "Synced"), "Normal", "kubelet")

    ev = wait_event(api, "worker-2", "InitializationFailed", timeout=10)
    check_event(ev, "Warning", "reported nothing")
    assert events_for(api, "worker-2", "Synced") == []
    check_still_registered(api.get_object("nodes", "worker-2"))
    assert node_writes(api, "worker-2", seq) == []
    assert not initialized_log_line(d.output(), "worker-2")
    assert d.alive(), d.output()


# ---- 7 ---------------------------------------------------------------------------

def test_scenario_7_provided_node_ip_not_in_metadata(api, tmp, daemon, metadata):
    md = metadata()
    load_rbac(api)
    stray = "10.200.0.9"
    register(api, "cp-1", control_plane=True, node_ip=stray)
    kc = ccm_kubeconfig(api, tmp)
    seq = api.log_seq()
    d = daemon(daemon_args(kc, "cp-1", md, LEASE_FLAGS))

    ev = wait_event(api, "cp-1", "InitializationFailed", timeout=10)
    check_event(ev, "Warning", stray, "not among")
    # the metadata service answered, and still nothing was written
    assert any(l["path"] == "/latest/meta-data/instance-id" for l in md.request_log())
    check_still_registered(api.get_object("nodes", "cp-1"), control_plane=True)
    assert node_writes(api, "cp-1", seq) == []
    assert events_for(api, "cp-1", "Synced") == []

    # the kubelet is restarted with a --node-ip the instance has: initialized,
    # that IP first and the only InternalIP
    node = api.get_object("nodes", "cp-1")
    node["metadata"]["annotations"][PROVIDED_NODE_IP] = "172.31.7.201"
    api.update_object(node)
    untainted_within(api, ["cp-1"], timeout=10)
    want = [{"type": "InternalIP", "address": "172.31.7.201"}] + \
        [a for a in EC2_A["addresses"] if a["type"] != "InternalIP"]
    check_initialized(api.get_object("nodes", "cp-1"), EC2_A, control_plane=True,
                      addresses=want)
    check_two_writes(api, "cp-1", seq)
    assert d.alive(), d.output()
