"""bootccm's csr-approver (--controllers=*,csr-approver) on the real control
plane: a Node registered with its kubelet's identity is initialized by
bootccm from the fake EC2 metadata service (so its addresses are verified);
kubelet serving certificate requests made with openssl and created with the
node's own identity (system:node:NAME in system:nodes) are then decided by
bootccm as system:cloud-controller-manager under static-pod/rbac.yaml as
shipped. An approved one is signed by the real kube-controller-manager with
the cluster CA; one naming an address the node lacks stays pending, or with
--csr-deny is denied (and so never signed)."""

import base64
import subprocess

import pytest

from harness import Daemon
from nodes import (NODE, NODE_IP, fake_metadata, kubelet_node, metadata_daemon_args, poll,
                   tainted)

USER = "system:cloud-controller-manager"
SIGNER = "kubernetes.io/kubelet-serving"
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
NOT_APPROVED = "KubeletServingCSRNotApproved"
OTHER_IP = "10.9.9.9"  # an address the node does not have
TIMEOUT_S = 30  # the approver lists every 5 s; a loaded machine


class Approver(object):
    """bootccm with the csr-approver against cp and the fake EC2 metadata
    service md, as system:cloud-controller-manager."""

    def __init__(self, cp, md):
        self.cp, self.md, self.d = cp, md, None

    def start(self, extra=()):
        self.d = Daemon(metadata_daemon_args(self.cp, self.md, extra=[
            "--secure-port=0", "--controllers=*,csr-approver"] + list(extra)))

    def stop(self):
        rc, out = self.d.stop()
        assert rc == 0, out
        assert "forbidden" not in out.lower(), out


@pytest.fixture(scope="module")
def approver(ccm_cp):
    """bootccm with the csr-approver, once it has initialized NODE from the
    metadata service: (the Approver, the Node)."""
    cp = ccm_cp
    status, obj = cp.node_client(NODE).request("POST", "/api/v1/nodes",
                                                kubelet_node(NODE, NODE_IP))
    assert status == 201, obj
    md = fake_metadata().FakeMetadata("ec2").start()
    a = Approver(cp, md)
    a.start()
    try:
        admin = cp.client("admin")

        def initialized():
            status, node = admin.request("GET", "/api/v1/nodes/" + NODE)
            assert status == 200, node
            return not tainted(node) and node
        node = poll(initialized, "initialization of " + NODE, a.d, TIMEOUT_S)
        assert node["metadata"]["annotations"]["bootccm.io/address-source"] == \
            "instance-metadata", node["metadata"]
        yield a, node
    finally:
        if a.d.result is None:
            a.stop()
        md.stop()


def request(tmp_path, name, sans):
    """A kubelet's PKCS#10 serving certificate request (openssl, P-256) as
    a CertificateSigningRequest object."""
    key, csr = str(tmp_path / (name + ".key")), str(tmp_path / (name + ".csr"))
    subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", csr,
                    "-subj", "/O=system:nodes/CN=system:node:" + NODE,
                    "-addext", "subjectAltName=" + sans],
                   check=True, capture_output=True, timeout=30)
    with open(csr, "rb") as f:
        pem = f.read()
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name},
            "spec": {"request": base64.b64encode(pem).decode(), "signerName": SIGNER,
                     "usages": ["digital signature", "server auth"]}}


def conditions(csr):
    return {c["type"]: c for c in (csr.get("status") or {}).get("conditions") or []}


def csr_writes(cp, name):
    return [(e["verb"], e["objectRef"].get("subresource"), e["responseStatus"]["code"])
            for e in cp.writes(USER)
            if e["objectRef"]["resource"] == "certificatesigningrequests"
            and e["objectRef"].get("name") == name]


def events(cp, name):
    status, body = cp.client("admin").request("GET", "/api/v1/namespaces/default/events")
    assert status == 200, body
    return [e for e in body["items"]
            if e["involvedObject"].get("kind") == "CertificateSigningRequest"
            and e["involvedObject"].get("name") == name]


def openssl_x509(pem, *args):
    r = subprocess.run(["openssl", "x509", "-noout"] + list(args), input=pem,
                       capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout.decode()


def test_a_request_for_the_nodes_own_addresses_is_approved_and_signed(ccm_cp, approver,
                                                                        tmp_path):
    cp = ccm_cp
    a, node = approver
    dns = [a["address"] for a in node["status"]["addresses"]
           if a["type"] in ("Hostname", "InternalDNS")][0]
    name = "serving-" + NODE
    status, body = cp.node_client(NODE).request(
        "POST", CSRS, request(tmp_path, name, "DNS:%s,IP:%s" % (dns, NODE_IP)))
    assert status == 201, body
    assert body["spec"]["username"] == "system:node:" + NODE
    admin = cp.client("admin")

    def signed():
        status, body = admin.request("GET", "%s/%s" % (CSRS, name))
        assert status == 200, body
        return body["status"].get("certificate") and body
    body = poll(signed, "certificate for " + name, a.d, TIMEOUT_S)
    approved = conditions(body)["Approved"]
    assert (approved["status"], approved["reason"]) == ("True", "AutoApproved"), approved
    assert NODE in approved["message"]
    assert "Denied" not in conditions(body) and "Failed" not in conditions(body)
    # one write: the approval, accepted at once
    assert csr_writes(cp, name) == [("update", "approval", 200)]

    pem = base64.b64decode(body["status"]["certificate"])
    r = subprocess.run(["openssl", "verify", "-CAfile", cp.pki.path("ca.crt")], input=pem,
                       capture_output=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(cp.pki.path("ca.crt"), "rb") as f:
        ca_subject = openssl_x509(f.read(), "-subject").split("=", 1)[1].strip()
    assert openssl_x509(pem, "-issuer").split("=", 1)[1].strip() == ca_subject
    subject = openssl_x509(pem, "-subject", "-nameopt", "sep_multiline")
    assert "O=system:nodes" in subject and "CN=system:node:" + NODE in subject, subject
    sans = openssl_x509(pem, "-ext", "subjectAltName").splitlines()[-1].strip()
    assert sorted(s.strip() for s in sans.split(",")) == \
        sorted(["DNS:" + dns, "IP Address:" + NODE_IP]), sans
    assert "TLS Web Server Authentication" in openssl_x509(pem, "-ext", "extendedKeyUsage")


def test_a_request_for_an_address_the_node_lacks_stays_pending(ccm_cp, approver, tmp_path):
    cp = ccm_cp
    a, _ = approver
    name = "other-ip-" + NODE
    status, body = cp.node_client(NODE).request(
        "POST", CSRS, request(tmp_path, name, "IP:%s,IP:%s" % (NODE_IP, OTHER_IP)))
    assert status == 201, body
    ev = poll(lambda: [e for e in events(cp, name) if e["reason"] == NOT_APPROVED],
              "%s Event for %s" % (NOT_APPROVED, name), a.d, TIMEOUT_S)[0]
    assert ev["type"] == "Warning", ev
    assert "(check ip-san)" in ev["message"] and OTHER_IP in ev["message"], ev
    # without --csr-deny it is left pending: no condition, no certificate,
    # and bootccm wrote nothing to it
    status, body = cp.client("admin").request("GET", "%s/%s" % (CSRS, name))
    assert status == 200, body
    assert conditions(body) == {} and not body["status"].get("certificate"), body["status"]
    assert csr_writes(cp, name) == []
    assert not [e for e in cp.writes(USER) if e["responseStatus"]["code"] == 403]


def test_with_csr_deny_the_same_request_is_denied_and_not_signed(ccm_cp, approver, tmp_path):
    cp = ccm_cp
    a, _ = approver
    a.stop()
    a.start(["--csr-deny"])
    name = "denied-" + NODE
    status, body = cp.node_client(NODE).request(
        "POST", CSRS, request(tmp_path, name, "IP:%s,IP:%s" % (NODE_IP, OTHER_IP)))
    assert status == 201, body
    admin = cp.client("admin")

    def decided():
        status, body = admin.request("GET", "%s/%s" % (CSRS, name))
        assert status == 200, body
        return conditions(body) and body
    body = poll(decided, "a decision on " + name, a.d, TIMEOUT_S)
    denied = conditions(body)["Denied"]
    assert (denied["status"], denied["reason"]) == ("True", "AutoDenied"), denied
    assert "(check ip-san)" in denied["message"], denied
    assert list(conditions(body)) == ["Denied"]
    ev = poll(lambda: [e for e in events(cp, name) if e["reason"] == "AutoDenied"],
              "AutoDenied Event for " + name, a.d, TIMEOUT_S)[0]
    assert ev["type"] == "Warning", ev
    # the real API server took the Denied condition through /approval, once
    assert csr_writes(cp, name) == [("update", "approval", 200)]
    # and the signer leaves a denied request alone
    status, body = admin.request("GET", "%s/%s" % (CSRS, name))
    assert status == 200 and not body["status"].get("certificate"), body
    a.stop()
