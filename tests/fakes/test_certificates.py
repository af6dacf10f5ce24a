"""certificates.k8s.io/v1 CertificateSigningRequests in the fake, against the
real server's rules (pkg/registry/certificates, pkg/apis/certificates/
validation, the CertificateApproval and CertificateSigning admission
plugins), checked with kubectl and with raw requests."""

import base64
import json
import subprocess

import pytest

from kubectl import kubectl

GROUP = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
SIGNER = "kubernetes.io/kubelet-serving"


@pytest.fixture(scope="module")
def kc(srv, tmp_path_factory):
    return srv.write_kubeconfig(str(tmp_path_factory.mktemp("kc") / "admin.conf"),
                                tls_server_name="kubernetes")


@pytest.fixture(scope="module")
def pems(tmp_path_factory):
    """Requests made by openssl req: a good one, and one whose signature
    byte was flipped."""
    d = tmp_path_factory.mktemp("csr")
    good = subprocess.run(
        ["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt",
         "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(d / "k.pem"),
         "-subj", "/CN=system:node:n1/O=system:nodes",
         "-addext", "subjectAltName=DNS:n1,IP:10.0.0.1"],
        capture_output=True, check=True, timeout=30).stdout.decode()
    der = bytearray(subprocess.run(
        ["openssl", "req", "-outform", "DER"], input=good.encode(),
        capture_output=True, check=True, timeout=30).stdout)
    der[-3] ^= 1
    bad = subprocess.run(["openssl", "req", "-inform", "DER"], input=bytes(der),
                         capture_output=True, check=True, timeout=30).stdout.decode()
    return {"good": good, "bad": bad}


def csr_obj(name, pem, signer=SIGNER, **spec):
    s = {"request": base64.b64encode(pem.encode()).decode(), "signerName": signer,
         "usages": ["digital signature", "server auth"]}
    s.update(spec)
    return {"apiVersion": "certificates.k8s.io/v1",
            "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": s}




def grant(srv, name, rules, user):
    srv.create_object({"apiVersion": "rbac.authorization.k8s.io/v1",
                       "kind": "ClusterRole", "metadata": {"name": name},
                       "rules": rules})
    srv.create_object({"apiVersion": "rbac.authorization.k8s.io/v1",
                       "kind": "ClusterRoleBinding", "metadata": {"name": name},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                   "kind": "ClusterRole", "name": name},
                       "subjects": [{"kind": "User", "name": user,
                                     "apiGroup": "rbac.authorization.k8s.io"}]})


CREATE_CSR = {"apiGroups": ["certificates.k8s.io"],
              "resources": ["certificatesigningrequests"],
              "verbs": ["create", "get", "list", "watch"]}


def test_create_takes_the_requester_from_the_request(srv, client_for, pems):
    grant(srv, "csr-node-n1", [CREATE_CSR], "system:node:n1")
    node = client_for("system:node:n1", ["system:nodes"])
    body = csr_obj("c-create", pems["good"], username="system:admin",
                   groups=["system:masters"], uid="forged")
    body["status"] = {"conditions": [{"type": "Approved", "status": "True"}]}
    code, _, out = node.request("POST", GROUP, body)
    assert code == 201, out
    assert out["spec"]["username"] == "system:node:n1"
    assert out["spec"]["groups"] == ["system:nodes", "system:authenticated"]
    assert "uid" not in out["spec"]
    assert out["status"] == {}


def test_create_checks_the_request_and_its_signature(admin, pems):
    code, _, out = admin.request("POST", GROUP, csr_obj("c-bad", pems["bad"]))
    assert code == 422, out
    assert out["message"] == (
        'CertificateSigningRequest.certificates.k8s.io "c-bad" is invalid: '
        'spec.request: Invalid value: "[]byte{...}": x509: ECDSA verification failure')
    code, _, out = admin.request("POST", GROUP, csr_obj(
        "c-usage", pems["good"], usages=["server auth", "server auth", "bogus"]))
    assert code == 422
    causes = {(c["field"], c["reason"]) for c in out["details"]["causes"]}
    assert ("spec.usages[1]", "FieldValueDuplicate") in causes
    assert ("spec.usages[2]", "FieldValueNotSupported") in causes
    code, _, out = admin.request("POST", GROUP, csr_obj(
        "c-exp", pems["good"], expirationSeconds=60))
    assert code == 422 and "may not specify a duration less than 600 seconds" in out["message"]


def test_spec_is_immutable_and_approval_only_through_approval(srv, admin, pems):
    code, _, o = admin.request("POST", GROUP, csr_obj("c-imm", pems["good"]))
    assert code == 201
    o["spec"]["signerName"] = "example.com/other"
    o["spec"]["usages"] = ["client auth"]
    code, _, out = admin.request("PUT", GROUP + "/c-imm", o)
    assert code == 200, out
    assert out["spec"]["signerName"] == SIGNER
    assert out["spec"]["usages"] == ["digital signature", "server auth"]
    # Approved through the object or /status: refused
    o = out
    o["status"] = {"conditions": [{"type": "Approved", "status": "True",
                                   "reason": "R", "message": "m"}]}
    code, _, out = admin.request("PUT", GROUP + "/c-imm/status", o)
    assert code == 422, out
    assert 'status.conditions: Forbidden: updates may not add a condition of type "Approved"' \
        in out["message"]
    code, _, out = admin.request("PUT", GROUP + "/c-imm", o)
    assert code == 200 and out["status"] == {}
    # through /approval: the condition lands with its timestamps
    code, _, out = admin.request("PUT", GROUP + "/c-imm/approval", o)
    assert code == 200, out
    [c] = out["status"]["conditions"]
    assert c["type"] == "Approved" and c["status"] == "True" and c["reason"] == "R"
    assert c["lastUpdateTime"] and c["lastTransitionTime"]
    # once there it stays
    out["status"]["conditions"] = []
    code, _, err = admin.request("PUT", GROUP + "/c-imm/approval", out)
    assert code == 422
    assert 'updates may not remove a condition of type "Approved"' in err["message"]
    # and Denied beside it is refused
    out["status"]["conditions"] = [c, {"type": "Denied", "status": "True"}]
    code, _, err = admin.request("PUT", GROUP + "/c-imm/approval", out)
    assert code == 422
    assert ('status.conditions[1].type: Invalid value: "Denied": Approved and '
            'Denied conditions are mutually exclusive') in err["message"]


def test_approval_condition_status_must_be_true(admin, pems):
    code, _, o = admin.request("POST", GROUP, csr_obj("c-false", pems["good"]))
    o["status"] = {"conditions": [{"type": "Approved", "status": "False"}]}
    code, _, out = admin.request("PUT", GROUP + "/c-false/approval", o)
    assert code == 422
    assert ('status.conditions[0].status: Unsupported value: "False": '
            'supported values: "True"') in out["message"]


def test_approving_needs_approve_on_the_signer(srv, client_for, pems, admin):
    code, _, o = admin.request("POST", GROUP, csr_obj("c-rbac", pems["good"]))
    assert code == 201
    o["status"] = {"conditions": [{"type": "Approved", "status": "True",
                                   "reason": "ok", "message": "ok"}]}
    update_approval = {"apiGroups": ["certificates.k8s.io"],
                       "resources": ["certificatesigningrequests/approval"],
                       "verbs": ["update"]}
    # no update on /approval: the authorizer says no
    nobody = client_for("approver-0")
    code, _, out = nobody.request("PUT", GROUP + "/c-rbac/approval", o)
    assert code == 403
    # update on /approval, approve on another signer: the admission plugin says no
    grant(srv, "approver-1", [update_approval, {
        "apiGroups": ["certificates.k8s.io"], "resources": ["signers"],
        "resourceNames": ["kubernetes.io/kube-apiserver-client"],
        "verbs": ["approve"]}], "approver-1")
    c1 = client_for("approver-1")
    code, _, out = c1.request("PUT", GROUP + "/c-rbac/approval", o)
    assert code == 403, out
    assert out["message"] == (
        'certificatesigningrequests.certificates.k8s.io "c-rbac" is forbidden: '
        'user not permitted to approve requests with signerName "kubernetes.io/kubelet-serving"')
    # the signer by name, or its domain with "/*"
    grant(srv, "approver-2", [update_approval, {
        "apiGroups": ["certificates.k8s.io"], "resources": ["signers"],
        "resourceNames": [SIGNER], "verbs": ["approve"]}], "approver-2")
    code, _, out = client_for("approver-2").request("PUT", GROUP + "/c-rbac/approval", o)
    assert code == 200, out
    code, _, o = admin.request("POST", GROUP, csr_obj("c-rbac-2", pems["good"]))
    o["status"] = {"conditions": [{"type": "Denied", "status": "True"}]}
    grant(srv, "approver-3", [update_approval, {
        "apiGroups": ["certificates.k8s.io"], "resources": ["signers"],
        "resourceNames": ["kubernetes.io/*"], "verbs": ["approve"]}], "approver-3")
    code, _, out = client_for("approver-3").request("PUT", GROUP + "/c-rbac-2/approval", o)
    assert code == 200, out


def test_certificate_through_status_needs_sign(srv, admin, client_for, pems, tmp_path):
    code, _, o = admin.request("POST", GROUP, csr_obj("c-sign", pems["good"]))
    cert = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", str(tmp_path / "k"), "-subj", "/CN=x", "-days", "1"],
        capture_output=True, check=True, timeout=30).stdout
    o["status"] = {"certificate": base64.b64encode(cert).decode()}
    # the object and /approval keep the stored certificate, whatever is sent
    code, _, out = admin.request("PUT", GROUP + "/c-sign/approval", o)
    assert code == 200 and "certificate" not in out["status"], out
    code, _, out = admin.request("PUT", GROUP + "/c-sign", o)
    assert code == 200 and "certificate" not in out["status"], out
    grant(srv, "signer-0", [{"apiGroups": ["certificates.k8s.io"],
                             "resources": ["certificatesigningrequests/status"],
                             "verbs": ["update"]}], "signer-0")
    code, _, out = client_for("signer-0").request("PUT", GROUP + "/c-sign/status", o)
    assert code == 403
    assert 'user not permitted to sign requests with signerName' in out["message"]
    code, _, out = admin.request("PUT", GROUP + "/c-sign/status", o)
    assert code == 200, out
    assert out["status"]["certificate"] == o["status"]["certificate"]


def test_kubectl_certificate_approve_deny_and_get(srv, kc, admin, pems):
    for n in ("c-k1", "c-k2", "c-k3"):
        code, _, _ = admin.request("POST", GROUP, csr_obj(n, pems["good"]))
        assert code == 201
    r = kubectl(kc, "certificate", "approve", "c-k1")
    assert r.returncode == 0, r.stderr
    assert "certificatesigningrequest.certificates.k8s.io/c-k1 approved" in r.stdout
    r = kubectl(kc, "certificate", "deny", "c-k2")
    assert r.returncode == 0, r.stderr
    [c] = srv.get_object("certificatesigningrequests", "c-k1",
                         group="certificates.k8s.io")["status"]["conditions"]
    assert c["type"] == "Approved" and c["reason"] == "KubectlApprove"
    # kubectl reads the conditions back: a denied request stays denied
    r = kubectl(kc, "certificate", "approve", "c-k2", "--force")
    assert r.returncode != 0
    assert 'certificate signing request "c-k2" is already Denied' in r.stderr
    rows = {line.split()[0]: line.split() for line in
            kubectl(kc, "get", "csr").stdout.splitlines()[1:]}
    assert rows["c-k1"][-1] == "Approved"
    assert rows["c-k2"][-1] == "Denied"
    assert rows["c-k3"][-1] == "Pending"
    assert rows["c-k3"][2] == SIGNER and rows["c-k3"][3] == "kubernetes-admin"
    out = json.loads(kubectl(kc, "get", "csr", "c-k1", "-o", "json").stdout)
    assert out["spec"]["username"] == "kubernetes-admin"

