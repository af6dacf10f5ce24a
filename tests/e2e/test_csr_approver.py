"""The csr-approver controller (--controllers=*,csr-approver) with the real
binary under the shipped RBAC (static-pod/rbac.yaml) against the fake API
server: kubelet serving certificate requests made with `openssl req` and
created by each node's own identity (kubectl with a client certificate of
system:node:NAME in system:nodes), each ending with the right outcome and
Event. The nodes: cp-1 initialized from the EC2 metadata service (verified
addresses), w-1 initialized from what its kubelet reported (not proof), w-2
never initialized."""

import base64
import json
import os
import subprocess

import pytest

from conftest import run  # noqa: F401  (the suite's conftest re-exports the harness)
from conftest import events_about
from kubectl import kubectl
from test_bootstrap import (EC2_A, LEASE_FLAGS, WORKER_REPORTED, ccm_kubeconfig, daemon_args,
                            load_rbac, metadata, node_object, register, untainted_within,
                            wait_event)

assert metadata  # a fixture

SIGNER = "kubernetes.io/kubelet-serving"
CP_IP = EC2_A["addresses"][0]["address"]         # 172.31.3.15
CP_DNS = EC2_A["addresses"][4]["address"]        # its Hostname
W1_IP = WORKER_REPORTED["addresses"][0]["address"]
W3_IP = "10.0.0.3"
REFUSED = "KubeletServingCSRNotApproved"
GROUP = "certificates.k8s.io"


def openssl_csr(tmp, name, cn, sans, o="system:nodes"):
    subj = "/CN=%s/O=%s" % (cn, o)
    args = ["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-keyout", os.path.join(tmp, name + ".key"), "-subj", subj]
    if sans:
        args += ["-addext", "subjectAltName=" + sans]
    return subprocess.run(args, capture_output=True, text=True, check=True, timeout=30).stdout


def csr_object(name, pem, signer=SIGNER, usages=("digital signature", "server auth")):
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name},
            "spec": {"request": base64.b64encode(pem.encode()).decode(),
                     "signerName": signer, "usages": list(usages)}}


def allow_csr_create(api):
    """Nodes (and alice) may create requests, as kubeadm's bootstrap roles
    let kubelets do."""
    api.create_object({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                       "metadata": {"name": "csr-create"},
                       "rules": [{"apiGroups": [GROUP],
                                  "resources": ["certificatesigningrequests"],
                                  "verbs": ["create", "get"]}]})
    api.create_object({"apiVersion": "rbac.authorization.k8s.io/v1",
                       "kind": "ClusterRoleBinding", "metadata": {"name": "csr-create"},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                   "kind": "ClusterRole", "name": "csr-create"},
                       "subjects": [{"kind": "Group", "name": "system:nodes",
                                     "apiGroup": "rbac.authorization.k8s.io"},
                                    {"kind": "User", "name": "alice",
                                     "apiGroup": "rbac.authorization.k8s.io"}]})


def create_as(api, tmp, user, groups, obj):
    """kubectl create as user: the API server fills spec.username/groups."""
    kc = api.write_kubeconfig(os.path.join(tmp, "kc-" + user.replace(":", "-")), user=user,
                              groups=groups, tls_server_name="kubernetes")
    return kubectl(kc, "create", "-f", "-", stdin=json.dumps(obj))


def node_creates(api, tmp, node, obj):
    r = create_as(api, tmp, "system:node:" + node, ["system:nodes"], obj)
    assert r.returncode == 0, r.stderr


def csr(api, name):
    return api.get_object("certificatesigningrequests", name, group=GROUP)


def conditions(api, name):
    return [c["type"] for c in (csr(api, name).get("status") or {}).get("conditions") or []]


def csr_events(api, name):
    return events_about(api, "CertificateSigningRequest", name)


def wait_csr_event(api, name, reason, timeout=15.0):
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = [ev for ev in csr_events(api, name) if ev.get("reason") == reason]
        if got:
            return got[0]
        time.sleep(0.05)
    raise AssertionError("no %s Event on %s; events: %s" % (reason, name, csr_events(api, name)))


def seed_unvalidated(api, obj, user, groups):
    """Stores a request the API server's create validation would refuse (a
    malformed PEM, a bad self-signature), as a restore of old data could:
    the approver must not trust the server to have checked."""
    import kresources
    o = json.loads(json.dumps(obj))
    o["spec"]["username"] = user
    o["spec"]["groups"] = groups
    api.registry._create_internal(kresources.for_object(o), o, "restore")


@pytest.fixture
def cluster(api, tmp, daemon, metadata):
    """cp-1 initialized from the metadata service, w-1 from its kubelet's
    report, w-2 not at all; the daemon runs with extra flags."""
    def start(extra=()):
        md = metadata()
        load_rbac(api)
        allow_csr_create(api)
        register(api, "cp-1", control_plane=True)
        register(api, "w-1", reported=WORKER_REPORTED)
        register(api, "w-2")
        # w-3: initialized by some other controller (no taint, addresses,
        # and no word of where they came from)
        other = node_object("w-3")
        other["spec"] = {"providerID": "aws:///eu-west-1a/i-0333"}
        o = api.create_object(other)
        o["status"] = {"addresses": [{"type": "InternalIP", "address": W3_IP}]}
        api.update_object(o, subresource="status")
        d = daemon(daemon_args(ccm_kubeconfig(api, tmp), "cp-1", md,
                               LEASE_FLAGS + ["--controllers=*,csr-approver"] + list(extra)))
        untainted_within(api, ["cp-1", "w-1"], timeout=15)
        wait_event(api, "w-1", "Synced")
        wait_event(api, "cp-1", "Synced")
        # the initialization recorded each node's source on the Node
        for name, src in (("cp-1", "instance-metadata"), ("w-1", "kubelet-reported")):
            ann = api.get_object("nodes", name)["metadata"]["annotations"]
            assert ann.get("bootccm.io/address-source") == src, (name, ann)
        return d
    return start


def test_each_request_ends_with_the_right_outcome(api, tmp, cluster):
    d = cluster()
    good = openssl_csr(tmp, "good", "system:node:cp-1", "DNS:%s,IP:%s" % (CP_DNS, CP_IP))
    node_creates(api, tmp, "cp-1", csr_object("good", good))
    node_creates(api, tmp, "cp-1", csr_object(
        "other-ip", openssl_csr(tmp, "o", "system:node:cp-1", "IP:%s,IP:%s" % (CP_IP, W1_IP))))
    node_creates(api, tmp, "cp-1", csr_object(
        "extra-dns", openssl_csr(tmp, "x", "system:node:cp-1",
                                 "DNS:%s,DNS:api.example.com" % CP_DNS)))
    node_creates(api, tmp, "cp-1", csr_object("wrong-signer", good,
                                              signer="kubernetes.io/kube-apiserver-client-kubelet",
                                              usages=("digital signature", "client auth")))
    r = create_as(api, tmp, "alice", [], csr_object("not-the-node", good))
    assert r.returncode == 0, r.stderr
    node_creates(api, tmp, "cp-1", csr_object(
        "forged-cn", openssl_csr(tmp, "f", "system:node:w-1", "IP:" + W1_IP)))
    node_creates(api, tmp, "w-2", csr_object(
        "uninitialized", openssl_csr(tmp, "u", "system:node:w-2", "IP:10.0.0.2")))
    node_creates(api, tmp, "w-1", csr_object(
        "kubelet-reported", openssl_csr(tmp, "k", "system:node:w-1", "IP:" + W1_IP)))
    node_creates(api, tmp, "w-3", csr_object(
        "no-source", openssl_csr(tmp, "n", "system:node:w-3", "IP:" + W3_IP)))
    # a malformed PEM and a bad self-signature: the API server refuses them
    # (as the real one does) ...
    broken = good.replace("-----END CERTIFICATE REQUEST-----", "").rstrip() + "\n"
    r = create_as(api, tmp, "system:node:cp-1", ["system:nodes"],
                  csr_object("malformed", broken))
    assert r.returncode != 0 and "PEM block type must be CERTIFICATE REQUEST" in r.stderr
    der = bytearray(subprocess.run(["openssl", "req", "-outform", "DER"], input=good.encode(),
                                   capture_output=True, check=True, timeout=30).stdout)
    der[-3] ^= 1
    badsig = subprocess.run(["openssl", "req", "-inform", "DER"], input=bytes(der),
                            capture_output=True, check=True, timeout=30).stdout.decode()
    r = create_as(api, tmp, "system:node:cp-1", ["system:nodes"], csr_object("bad-sig", badsig))
    assert r.returncode != 0 and "x509: ECDSA verification failure" in r.stderr
    # ... and the approver does not trust that: stored anyway, they stay pending
    node = ("system:node:cp-1", ["system:nodes", "system:authenticated"])
    seed_unvalidated(api, csr_object("malformed", broken), *node)
    seed_unvalidated(api, csr_object("bad-sig", badsig), *node)

    api.wait_for_object("certificatesigningrequests", "good",
                        lambda o: "Approved" in [c["type"] for c in
                                                 (o.get("status") or {}).get("conditions") or []],
                        group=GROUP, timeout=15)
    [cond] = csr(api, "good")["status"]["conditions"]
    assert cond["reason"] == "AutoApproved" and cond["status"] == "True"
    assert "cp-1" in cond["message"]

    expect = {
        "other-ip": "(check ip-san): IP SAN %s is not among the addresses of node cp-1" % W1_IP,
        "extra-dns": "(check dns-san): DNS SAN api.example.com",
        "not-the-node": "(check requester): requested by alice",
        "forged-cn": "(check subject): subject: CN system:node:w-1 is not system:node:cp-1",
        "uninitialized": "(check initialized): node w-2 is not initialized yet",
        "kubelet-reported": "(check source): node w-1: its addresses came only from its own kubelet",
        "no-source": "(check source): node w-3: no bootccm.io/address-source annotation says "
                     "where its addresses came from",
        "malformed": "(check request): PEM",
        "bad-sig": "(check request): signature: does not verify",
    }
    for name, words in expect.items():
        ev = wait_csr_event(api, name, REFUSED)
        assert ev["type"] == "Warning", ev
        assert words in ev["message"], (name, ev["message"])
        assert conditions(api, name) == [], name
        assert "Kubelet serving certificate request left pending" in d.output()
    # another signer's request is not the approver's business
    assert conditions(api, "wrong-signer") == [] and csr_events(api, "wrong-signer") == []
    # level-triggered and idempotent: another pass writes nothing new and
    # records no second Event for an unchanged request
    n_events = len(api.list_objects("events", namespace="default"))
    since = api.log_seq()
    d.wait_for("Approved kubelet serving certificate request", timeout=1)
    import time
    time.sleep(6)
    writes = [e for e in api.request_log(since) if e.get("resource") == "certificatesigningrequests"
              and e["verb"] != "list"]
    assert writes == [], writes
    assert len(api.list_objects("events", namespace="default")) == n_events
    assert d.alive(), d.output()


def test_trusting_kubelet_addresses_and_denying(api, tmp, cluster):
    cluster(["--csr-trust-kubelet-addresses", "--csr-deny"])
    node_creates(api, tmp, "w-1", csr_object(
        "kubelet-reported", openssl_csr(tmp, "k", "system:node:w-1", "IP:" + W1_IP)))
    node_creates(api, tmp, "w-1", csr_object(
        "w1-other-ip", openssl_csr(tmp, "o", "system:node:w-1", "IP:" + CP_IP)))
    # asked at boot, before the node is initialized or even registered:
    # pending, not denied, whatever --csr-deny says
    node_creates(api, tmp, "w-2", csr_object(
        "uninitialized", openssl_csr(tmp, "u", "system:node:w-2", "IP:10.0.0.2")))
    node_creates(api, tmp, "w-9", csr_object(
        "unregistered", openssl_csr(tmp, "g", "system:node:w-9", "IP:10.0.0.9")))
    api.wait_for_object("certificatesigningrequests", "kubelet-reported",
                        lambda o: (o.get("status") or {}).get("conditions"), group=GROUP,
                        timeout=15)
    assert conditions(api, "kubelet-reported") == ["Approved"]
    api.wait_for_object("certificatesigningrequests", "w1-other-ip",
                        lambda o: (o.get("status") or {}).get("conditions"), group=GROUP,
                        timeout=15)
    [cond] = csr(api, "w1-other-ip")["status"]["conditions"]
    assert cond["type"] == "Denied" and cond["reason"] == "AutoDenied"
    assert "(check ip-san)" in cond["message"]
    ev = wait_csr_event(api, "w1-other-ip", "AutoDenied")
    assert ev["type"] == "Warning"
    for name, check in (("uninitialized", "initialized"), ("unregistered", "node")):
        ev = wait_csr_event(api, name, REFUSED)
        assert "(check %s)" % check in ev["message"], ev
        assert conditions(api, name) == [], name


def test_without_approve_on_the_signer_nothing_is_approved(api, tmp, cluster):
    """The shipped RBAC's signers rule is needed: without it the API
    server's admission refuses the approval (403), said once, tried again
    every pass."""
    import time
    d = cluster()
    role = api.get_object("clusterroles", "system:cloud-controller-manager",
                          group="rbac.authorization.k8s.io")
    role["rules"] = [r for r in role["rules"] if r.get("resources") != ["signers"]]
    api.update_object(role)
    node_creates(api, tmp, "cp-1", csr_object(
        "no-approve", openssl_csr(tmp, "n", "system:node:cp-1", "IP:" + CP_IP)))
    d.wait_for("Cannot approve a kubelet serving certificate request", timeout=15)
    assert 'user not permitted to approve requests with signerName ' \
        '\\"kubernetes.io/kubelet-serving\\"' in d.output(), d.output()
    time.sleep(6)
    assert d.output().count("Cannot approve a kubelet serving certificate request") == 1
    assert conditions(api, "no-approve") == []
    refused = [e for e in api.request_log() if e.get("subresource") == "approval"]
    assert len(refused) >= 2 and all(e["code"] == 403 for e in refused), refused
