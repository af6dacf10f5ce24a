"""bootccm doctor against the fake API server, under the shipped read-only
ClusterRole bootccm-doctor (static-pod/rbac-doctor.yaml): each broken
cluster is built, and the finding, its evidence and its fix are asserted;
a healthy cluster reports nothing and exits 0. Two scenarios run the real
daemon: a cluster without a cloud-controller-manager (found, then fixed by
starting bootccm), and a kubelet --node-ip the instance does not have (the
daemon's own InitializationFailed Event is the evidence)."""

import base64
import datetime
import http.server
import json
import os
import socket
import subprocess
import threading

import pytest
import yaml

from conftest import ROOT, run
from kubectl import kubectl
from test_bootstrap import (EC2_A, LEASE_FLAGS, PROVIDED_NODE_IP, ccm_kubeconfig, daemon_args,
                            load_rbac, metadata, register, untainted_within, wait_event)

assert metadata  # a fixture, imported for the scenarios that run the daemon

DOCTOR_USER = "oncall"
UNINIT = "node.cloudprovider.kubernetes.io/uninitialized"
NETWORK = "node.kubernetes.io/network-unavailable"
FINALIZER = "service.kubernetes.io/load-balancer-cleanup"



def csr_pem(tmp, cn="system:node:w-1"):
    """A PKCS#10 request as a kubelet makes it, from openssl."""
    out = subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt",
                          "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                          os.path.join(tmp, "csr.key"), "-subj", "/O=system:nodes/CN=" + cn],
                         capture_output=True, text=True, check=True, timeout=30)
    return out.stdout


def rfc3339(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def doctor_kubeconfig(api, tmp):
    """A kubeconfig for a user bound to the shipped ClusterRole only."""
    with open(os.path.join(ROOT, "static-pod", "rbac-doctor.yaml")) as f:
        for o in yaml.safe_load_all(f):
            if o and api.get_object("clusterroles", o["metadata"]["name"],
                                    group="rbac.authorization.k8s.io") is None:
                api.create_object(o)
    if api.get_object("clusterrolebindings", "bootccm-doctor",
                      group="rbac.authorization.k8s.io") is None:
        api.create_object({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "bootccm-doctor"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "bootccm-doctor"},
            "subjects": [{"kind": "User", "name": DOCTOR_USER,
                          "apiGroup": "rbac.authorization.k8s.io"}]})
    return api.write_kubeconfig(os.path.join(tmp, "doctor.conf"), user=DOCTOR_USER,
                                groups=(), tls_server_name="kubernetes")


def doctor(api, tmp, *extra):
    """Runs bootccm doctor -o json; returns (exit status, findings by id,
    the whole report, stderr). Every request must have been a read."""
    seq = api.log_seq()
    r = run(["doctor", "--kubeconfig", doctor_kubeconfig(api, tmp), "-o", "json",
             "--threshold=0s", "--timeout=20s"] + list(extra))
    mine = [e for e in api.request_log(seq) if e.get("user") == DOCTOR_USER]
    assert mine, "the doctor's requests are in the log under its user"
    writes = [e for e in mine if e["method"] not in ("GET", "HEAD")]
    assert writes == [], writes
    if r.returncode == 3:
        return r.returncode, {}, None, r.stderr
    report = json.loads(r.stdout)
    by_id = {}
    for f in report["findings"]:
        assert set(f) == {"id", "severity", "summary", "objects", "evidence", "fix"}, f
        assert f["severity"] in ("warning", "deadlock") and f["fix"] and f["evidence"], f
        by_id.setdefault(f["id"], []).append(f)
    return r.returncode, by_id, report, r.stderr


def node(name, taints=(), provider_id=None, addresses=(), annotations=None, conditions=()):
    n = {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name},
                      "annotations": dict(annotations or {})},
         "spec": {"taints": [dict(t) for t in taints]}}
    if provider_id:
        n["spec"]["providerID"] = provider_id
    return n, [dict(a) for a in addresses], [dict(c) for c in conditions]


def add_node(api, name, **kw):
    obj, addresses, conditions = node(name, **kw)
    api.create_object(obj)
    if addresses or conditions:
        cur = api.get_object("nodes", name)
        cur["status"] = {"addresses": addresses, "conditions": conditions}
        api.update_object(cur, "status")


def good_node(api, name):
    add_node(api, name, provider_id="aws:///us-east-2b/i-%s" % name,
             addresses=[{"type": "InternalIP", "address": "10.0.0.%d" % (len(name) + 10)}])


def lease(api, holder, renewed_ago=0.0, duration=15):
    api.create_object({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "cloud-controller-manager", "namespace": "kube-system"},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration,
                 "acquireTime": rfc3339(now() - datetime.timedelta(seconds=renewed_ago)),
                 "renewTime": rfc3339(now() - datetime.timedelta(seconds=renewed_ago))}})


def pod(api, ns, name, phase, node_name=None, host_network=False, conditions=()):
    spec = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
    if node_name:
        spec["nodeName"] = node_name
    if host_network:
        spec["hostNetwork"] = True
    api.create_object({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "namespace": ns}, "spec": spec})
    cur = api.get_object("pods", name, namespace=ns)
    cur["status"] = {"phase": phase, "conditions": [dict(c) for c in conditions]}
    api.update_object(cur, "status")


def running_ccm(api, holder_host="cp-1"):
    """A leading CCM as a static pod's mirror: the Lease, renewed now, held
    by HOST_uuid, and a Running host-network pod on node HOST."""
    lease(api, holder_host + "_6a1c1b0e-5d43-4a39-9a0d-7a6c2f1e9b11")
    pod(api, "kube-system", "bootccm-" + holder_host, "Running", node_name=holder_host,
        host_network=True)


def unschedulable(taint):
    return {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 node(s) had untolerated taint "
                       "{%s: true}. preemption: 0/1 nodes are available: 1 Preemption "
                       "is not helpful for scheduling." % taint}


def service(api, name, lb_class=None, finalizer=False, ingress=None, ns="default"):
    svc = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": name, "namespace": ns},
           "spec": {"type": "LoadBalancer", "ports": [{"port": 80, "protocol": "TCP"}]}}
    if lb_class:
        svc["spec"]["loadBalancerClass"] = lb_class
    if finalizer:
        svc["metadata"]["finalizers"] = [FINALIZER]
    api.create_object(svc)
    if ingress:
        cur = api.get_object("services", name, namespace=ns)
        cur["status"] = {"loadBalancer": {"ingress": [{"ip": ingress, "ipMode": "VIP"}]}}
        api.update_object(cur, "status")


def csr(api, tmp, name, signer="kubernetes.io/kubelet-serving"):
    api.create_object({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": base64.b64encode(csr_pem(tmp).encode()).decode(),
                 "signerName": signer, "usages": ["digital signature", "server auth"],
                 "username": "system:node:w-1", "groups": ["system:nodes"]}})


# ---- a healthy cluster -------------------------------------------------------

def test_a_healthy_cluster_reports_nothing(api, tmp):
    good_node(api, "cp-1")
    good_node(api, "w-1")
    running_ccm(api)
    pod(api, "kube-system", "coredns-5d78c9869d-abcde", "Running", node_name="w-1")
    service(api, "web", finalizer=True, ingress="192.0.2.10")
    code, found, report, _ = doctor(api, tmp)
    assert (code, found) == (0, {}), report
    assert report["summary"]["result"] == "healthy"
    # every Service is read: default/kubernetes and web
    assert report["summary"]["nodes"] == 2 and report["summary"]["services"] == 2
    # the text form says the same in one line
    r = run(["doctor", "--kubeconfig", doctor_kubeconfig(api, tmp), "--threshold=0s"])
    assert r.returncode == 0 and r.stdout.startswith("doctor: healthy: 0 deadlocks"), r.stdout


def test_the_threshold_keeps_young_objects_out(api, tmp):
    add_node(api, "w-new", taints=[{"key": UNINIT, "value": "true", "effect": "NoSchedule"}])
    service(api, "fresh")
    r = run(["doctor", "--kubeconfig", doctor_kubeconfig(api, tmp), "-o", "json"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["findings"] == []


# ---- uninitialized nodes and why -----------------------------------------------

TAINT = {"key": UNINIT, "value": "true", "effect": "NoSchedule"}


def test_no_ccm_at_all_is_a_deadlock(api, tmp):
    add_node(api, "w-1", taints=[TAINT])
    add_node(api, "w-2", taints=[TAINT])
    code, found, _, _ = doctor(api, tmp)
    assert code == 2
    [f] = found["uninitialized-no-ccm"]
    assert f["severity"] == "deadlock"
    assert f["objects"] == ["node/w-1", "node/w-2", "lease/kube-system/cloud-controller-manager"]
    assert "no Lease kube-system/cloud-controller-manager exists" in f["evidence"]
    assert "static pod" in f["fix"] and "hostNetwork" in f["fix"]


def test_a_lease_nobody_renews_is_a_deadlock(api, tmp):
    add_node(api, "w-1", taints=[TAINT])
    lease(api, "cp-9_0f0e0d0c-0000-4000-8000-000000000000", renewed_ago=3600)
    code, found, _, _ = doctor(api, tmp)
    assert code == 2
    [f] = found["uninitialized-ccm-stopped"]
    assert "held by cp-9_0f0e0d0c" in f["evidence"] and "last renewed it 1h0m ago" in f["evidence"]
    assert "lease-holder-unknown" not in found  # a stale Lease is this finding's, not that one's


def test_a_failed_initialization_names_the_event(api, tmp):
    add_node(api, "w-1", taints=[TAINT], provider_id="aws:///us-east-2b/i-1")
    running_ccm(api)
    api.create_object({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "w-1.17a0", "namespace": "default"},
        "involvedObject": {"kind": "Node", "name": "w-1", "apiVersion": "v1"},
        "reason": "InitializationFailed", "type": "Warning",
        "message": "failed to get instance metadata: cloud API: HTTP 401: unauthorized",
        "source": {"component": "cloud-controller-manager"}, "count": 1,
        "firstTimestamp": rfc3339(now()).split(".")[0] + "Z",
        "lastTimestamp": rfc3339(now()).split(".")[0] + "Z"})
    code, found, _, _ = doctor(api, tmp)
    assert code == 2
    [f] = found["uninitialized-init-failed"]
    assert f["objects"] == ["node/w-1"]
    assert "HTTP 401: unauthorized" in f["evidence"]
    assert "kubectl describe node w-1" in f["fix"]


def test_a_node_without_provider_id_or_failure(api, tmp):
    add_node(api, "w-1", taints=[TAINT])
    running_ccm(api)
    code, found, _, _ = doctor(api, tmp)
    assert code == 2
    [f] = found["uninitialized-no-provider-id"]
    assert f["objects"] == ["node/w-1"]
    assert "bootccm metadata --format=kubelet-flags" in f["fix"]


def test_the_cluster_without_a_ccm_found_then_fixed(api, tmp, daemon, metadata):
    """The real thing: the control-plane node stays tainted while no CCM
    runs; bootccm starts, initializes it, and the doctor finds nothing."""
    md = metadata()
    load_rbac(api)
    register(api, "cp-1", control_plane=True)
    code, found, _, _ = doctor(api, tmp)
    assert code == 2 and list(found) == ["uninitialized-no-ccm"], found
    # the CCM runs as the static pod's mirror shows it: on the host network
    # of the node named like this machine (the Lease holder's host part)
    pod(api, "kube-system", "bootccm-cp-1", "Running", node_name=socket.gethostname(),
        host_network=True)
    d = daemon(daemon_args(ccm_kubeconfig(api, tmp), "cp-1", md, LEASE_FLAGS))
    untainted_within(api, ["cp-1"], timeout=15)
    code, found, report, _ = doctor(api, tmp)
    assert (code, found) == (0, {}), report
    assert d.alive(), d.output()


def test_a_node_ip_the_instance_does_not_have(api, tmp, daemon, metadata):
    md = metadata()
    load_rbac(api)
    register(api, "cp-1", control_plane=True, node_ip="10.200.0.9")
    pod(api, "kube-system", "bootccm-cp-1", "Running", node_name=socket.gethostname(),
        host_network=True)
    d = daemon(daemon_args(ccm_kubeconfig(api, tmp), "cp-1", md, LEASE_FLAGS))
    wait_event(api, "cp-1", "InitializationFailed", timeout=10)
    code, found, _, _ = doctor(api, tmp)
    assert code == 2 and list(found) == ["uninitialized-node-ip-mismatch"], found
    [f] = found["uninitialized-node-ip-mismatch"]
    assert f["objects"] == ["node/cp-1"]
    assert PROVIDED_NODE_IP + "=10.200.0.9" in f["evidence"] and "not among" in f["evidence"]
    assert "--node-ip" in f["fix"]
    # the fix: the kubelet restarted with an address the instance has
    n = api.get_object("nodes", "cp-1")
    n["metadata"]["annotations"][PROVIDED_NODE_IP] = EC2_A["addresses"][1]["address"]
    api.update_object(n)
    untainted_within(api, ["cp-1"], timeout=15)
    code, found, report, _ = doctor(api, tmp)
    assert (code, found) == (0, {}), report
    assert d.alive(), d.output()


# ---- other nodes ---------------------------------------------------------------

def test_an_untainted_node_without_addresses(api, tmp):
    add_node(api, "w-1", provider_id="aws:///us-east-2b/i-1")
    good_node(api, "cp-1")
    running_ccm(api)
    code, found, _, _ = doctor(api, tmp)
    assert code == 2 and list(found) == ["initialized-without-addresses"], found
    [f] = found["initialized-without-addresses"]
    assert f["objects"] == ["node/w-1"] and f["severity"] == "deadlock"
    assert "kubectl taint node NAME %s=true:NoSchedule" % UNINIT in f["fix"]


def test_a_kubelet_without_cloud_provider_external(api, tmp):
    good_node(api, "cp-1")
    add_node(api, "w-legacy", addresses=[{"type": "InternalIP", "address": "10.0.0.50"}])
    running_ccm(api)
    code, found, _, _ = doctor(api, tmp)
    assert code == 1 and list(found) == ["kubelet-not-external"], found
    [f] = found["kubelet-not-external"]
    assert f["objects"] == ["node/w-legacy"] and f["severity"] == "warning"
    assert "--cloud-provider=external" in f["fix"]


def test_network_unavailable_with_and_without_a_route(api, tmp):
    running_ccm(api)
    good_node(api, "cp-1")
    add_node(api, "w-1", provider_id="aws:///x/i-1",
             addresses=[{"type": "InternalIP", "address": "10.0.0.61"}],
             conditions=[{"type": "NetworkUnavailable", "status": "True",
                          "reason": "NoRouteCreated",
                          "message": "Node created without a route"}])
    add_node(api, "w-2", provider_id="aws:///x/i-2",
             addresses=[{"type": "InternalIP", "address": "10.0.0.62"}],
             conditions=[{"type": "NetworkUnavailable", "status": "True",
                          "reason": "CalicoIsDown", "message": "calico is not running"}])
    code, found, _, _ = doctor(api, tmp)
    assert code == 1
    [route] = found["network-unavailable-no-route"]
    [cni] = found["network-unavailable"]
    assert route["objects"] == ["node/w-1"] and "--cluster-cidr" in route["fix"]
    assert "NoRouteCreated: Node created without a route" in route["evidence"]
    assert cni["objects"] == ["node/w-2"] and "CalicoIsDown" in cni["evidence"]


# ---- pods the taints keep Pending ------------------------------------------------

def test_pending_dns_pods_on_the_uninitialized_taint_are_the_loop(api, tmp):
    add_node(api, "w-1", taints=[TAINT])
    pod(api, "kube-system", "coredns-5d78c9869d-abcde", "Pending",
        conditions=[unschedulable(UNINIT)])
    pod(api, "default", "web-0", "Pending", conditions=[unschedulable(UNINIT)])
    pod(api, "default", "web-1", "Pending", conditions=[unschedulable(NETWORK)])
    pod(api, "default", "big-0", "Pending", conditions=[{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "0/1 nodes are available: 1 Insufficient memory."}])
    code, found, _, _ = doctor(api, tmp)
    assert code == 2
    [u] = found["pods-pending-uninitialized"]
    assert u["severity"] == "deadlock"
    assert sorted(u["objects"]) == ["pod/default/web-0", "pod/kube-system/coredns-5d78c9869d-abcde"]
    assert "untolerated taint {%s: true}" % UNINIT in u["evidence"]
    assert "the network or DNS add-on is among them" in u["evidence"]
    [n] = found["pods-pending-network-unavailable"]
    assert n["severity"] == "warning" and n["objects"] == ["pod/default/web-1"]
    assert all("big-0" not in o for f in found.values() for x in f for o in x["objects"])


# ---- LoadBalancer Services --------------------------------------------------------

def test_load_balancers_nobody_serves(api, tmp):
    service(api, "orphan")
    service(api, "classy", lb_class="example.com/lb")
    service(api, "taken", finalizer=True)
    service(api, "done", finalizer=True, ingress="192.0.2.20")
    code, found, _, _ = doctor(api, tmp)
    assert code == 1
    assert found["lb-not-served"][0]["objects"] == ["service/default/orphan"]
    [c] = found["lb-class-not-served"]
    assert c["objects"] == ["service/default/classy"]
    assert "--load-balancer-class=example.com/lb" in c["fix"]
    assert found["lb-pending"][0]["objects"] == ["service/default/taken"]
    assert "SyncLoadBalancerFailed" in found["lb-pending"][0]["fix"]


# ---- certificates and the Lease -----------------------------------------------------

def test_kubelet_serving_requests_nobody_approves(api, tmp):
    good_node(api, "w-1")
    running_ccm(api)
    csr(api, tmp, "csr-kubelet-w-1")
    csr(api, tmp, "csr-client", signer="kubernetes.io/kube-apiserver-client-kubelet")
    code, found, _, _ = doctor(api, tmp)
    assert code == 1 and list(found) == ["csr-pending"], found
    [f] = found["csr-pending"]
    assert f["objects"] == ["certificatesigningrequest/csr-kubelet-w-1"]
    assert "kubectl certificate approve NAME" in f["fix"]
    assert "--controllers=*,csr-approver" in f["fix"]
    # kubectl agrees that it is pending
    kc = api.write_kubeconfig(os.path.join(tmp, "admin.conf"), tls_server_name="kubernetes")
    out = kubectl(kc, "get", "csr", "csr-kubelet-w-1")
    assert out.returncode == 0 and "Pending" in out.stdout, out.stdout + out.stderr


def test_a_lease_held_by_no_running_pod(api, tmp):
    good_node(api, "cp-1")
    lease(api, "old-ccm-host_9b2f0c1e-1111-4222-8333-444455556666")
    pod(api, "kube-system", "old-ccm-host", "Failed")
    code, found, _, _ = doctor(api, tmp)
    assert code == 1 and list(found) == ["lease-holder-unknown"], found
    [f] = found["lease-holder-unknown"]
    assert "old-ccm-host_9b2f0c1e" in f["evidence"]
    assert f["objects"] == ["lease/kube-system/cloud-controller-manager"]


def test_local_checks_the_ccm_kubeconfig(api, tmp):
    good_node(api, "cp-1")
    running_ccm(api)
    far = api.write_kubeconfig(os.path.join(tmp, "far.conf"), server="https://10.0.0.10:6443",
                              tls_server_name="kubernetes")
    code, found, _, _ = doctor(api, tmp, "--local", "--ccm-kubeconfig", far)
    assert code == 1 and list(found) == ["ccm-kubeconfig-not-local"], found
    assert "https://10.0.0.10:6443" in found["ccm-kubeconfig-not-local"][0]["evidence"]
    near = api.write_kubeconfig(os.path.join(tmp, "near.conf"), tls_server_name="kubernetes")  # https://127.0.0.1:PORT
    code, found, _, _ = doctor(api, tmp, "--local", "--ccm-kubeconfig", near)
    assert (code, found) == (0, {})


# ---- cannot read -----------------------------------------------------------------------

def test_a_user_without_the_role_cannot_read(api, tmp):
    kc = api.write_kubeconfig(os.path.join(tmp, "nobody.conf"), user="nobody", groups=(),
                              tls_server_name="kubernetes")
    r = run(["doctor", "--kubeconfig", kc])
    assert r.returncode == 3 and r.stdout == ""
    assert "forbidden" in r.stderr and "nodes" in r.stderr, r.stderr


def test_an_api_server_that_never_answers(api, tmp):
    kc = doctor_kubeconfig(api, tmp)
    api.inject_fault("/api/v1/nodes", delay=30, count=None)
    r = run(["doctor", "--kubeconfig", kc, "--timeout=2s"], timeout=20)
    assert r.returncode == 3, r.stderr
    assert "no answer within --timeout 2s" in r.stderr


class _BadLists(http.server.BaseHTTPRequestHandler):
    """A plain-HTTP API server (no credentials are sent to it) whose Node
    list holds a taint that is not an object."""

    def do_GET(self):
        if self.path.startswith("/api/v1/nodes"):
            body = {"kind": "NodeList", "apiVersion": "v1", "metadata": {},
                    "items": [{"metadata": {"name": "w-9"}, "spec": {"taints": ["oops"]}}]}
        else:
            body = {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_a_malformed_answer_names_the_object(tmp):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _BadLists)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        kc = os.path.join(tmp, "plain.conf")
        with open(kc, "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "
                    "'http://127.0.0.1:%d'}}]\ncontexts: [{name: x, context: {cluster: c, "
                    "user: u}}]\nusers: [{name: u, user: {}}]\ncurrent-context: x\n"
                    % srv.server_address[1])
        r = run(["doctor", "--kubeconfig", kc])
    finally:
        srv.shutdown()
    # nothing is concluded from it
    assert r.returncode == 3 and r.stdout == "", r.stdout
    assert "node w-9: spec.taints[0]: expected an object" in r.stderr, r.stderr


@pytest.mark.parametrize("args, message", [
    (["-o", "yaml"], '--output "yaml": want text or json'),
    (["--timeout=0s"], "--timeout must be greater than zero"),
    (["--frobnicate"], "frobnicate"),
])
def test_bad_flags_exit_3(args, message):
    r = run(["doctor"] + args)
    assert r.returncode == 3 and message in r.stderr, r.stderr


# ---- the findings are documented ---------------------------------------------------------

def finding_ids():
    """Every finding id the sources can report (doctor.c's doc_add calls)."""
    import re
    with open(os.path.join(ROOT, "src", "doctor", "doctor.c")) as f:
        src = f.read()
    ids = set()
    for m in re.finditer(r"doc_add\((.*?)DOCTOR_(?:WARNING|DEADLOCK)", src, re.S):
        ids.update(re.findall(r'"([a-z]+(?:-[a-z]+)+)"', m.group(1)))
    return ids


def test_every_finding_is_in_the_guide_and_the_man_page():
    ids = finding_ids()
    assert len(ids) >= 18, ids
    with open(os.path.join(ROOT, "docs", "operator-guide.md")) as f:
        table = {line.split("`")[1] for line in f if line.startswith("| `")}
    with open(os.path.join(ROOT, "docs", "bootccm.8")) as f:
        man = f.read().replace("\\-", "-")
    assert ids <= table, ids - table
    assert [i for i in ids if "\\fB%s\\fR" % i not in man] == []


def test_the_shipped_role_only_reads():
    with open(os.path.join(ROOT, "static-pod", "rbac-doctor.yaml")) as f:
        docs = [o for o in yaml.safe_load_all(f) if o]
    assert [(o["kind"], o["metadata"]["name"]) for o in docs] == [("ClusterRole", "bootccm-doctor")]
    verbs = {v for rule in docs[0]["rules"] for v in rule["verbs"]}
    assert verbs <= {"get", "list"}, verbs
