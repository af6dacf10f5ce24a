"""TLS, authentication, non-resource endpoints, faults, outages, request log,
kubeconfigs and the CLI of the fake API server."""

import json
import os
import signal
import socket
import ssl
import subprocess
import time

import pytest

from kubectl import kubectl

import apiserver
import pki
from conftest import Client

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"


def test_serving_cert_has_kubeadm_sans_not_loopback(srv):
    ctx = ssl.create_default_context(cafile=srv.ca_file)
    with socket.create_connection(("127.0.0.1", srv.port)) as s:
        with pytest.raises(ssl.SSLCertVerificationError):
            ctx.wrap_socket(s, server_hostname="127.0.0.1")
    for name in ("kubernetes", "kubernetes.default.svc.cluster.local",
                 "control-plane"):
        with socket.create_connection(("127.0.0.1", srv.port)) as s:
            with ctx.wrap_socket(s, server_hostname=name) as t:
                sans = t.getpeercert()["subjectAltName"]
    assert ("IP Address", "10.96.0.1") in sans
    assert ("IP Address", "127.0.0.1") not in sans
    assert ("DNS", "kubernetes.default") in sans


def test_client_cert_identity(admin, client_for):
    c = client_for("system:cloud-controller-manager", ["g1", "g2"])
    code, _, body = c.request(
        "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert code == 201
    assert body["status"]["userInfo"] == {
        "username": "system:cloud-controller-manager",
        "groups": ["g1", "g2", "system:authenticated"]}


def test_token_identity_and_bad_token(srv, client_for):
    c = client_for("alice", ["devs"], token="tok-alice")
    code, _, body = c.request(
        "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert code == 201
    assert body["status"]["userInfo"]["username"] == "alice"
    assert body["status"]["userInfo"]["groups"] == ["devs", "system:authenticated"]
    bad = Client(srv, token="nope")
    code, _, body = bad.get("/version")
    bad.close()
    assert code == 401
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                    "status": "Failure", "message": "Unauthorized",
                    "reason": "Unauthorized", "code": 401}


def test_anonymous_public_info_only(srv):
    c = Client(srv)
    code, _, body = c.get("/version")
    assert code == 200 and body["gitVersion"] == "v1.32.0"
    assert c.get("/healthz")[2] == "ok"
    assert c.get("/readyz")[0] == 200
    code, _, body = c.get("/api")
    assert code == 403
    assert body["message"] == 'forbidden: User "system:anonymous" cannot get path "/api"'
    assert body["details"] == {}
    code, _, body = c.get("/api/v1/nodes")
    assert code == 403
    assert body["message"] == ('nodes is forbidden: User "system:anonymous" cannot '
                               'list resource "nodes" in API group "" at the cluster scope')
    c.close()


def test_json_is_compact_sorted_newline_terminated(admin):
    admin.request("GET", "/version")
    conn = admin.conn
    conn.request("GET", "/api/v1/namespaces/default")
    raw = conn.getresponse().read()
    assert raw.endswith(b"}\n")
    obj = json.loads(raw)
    assert raw == (json.dumps(obj, sort_keys=True, separators=(",", ":"))
                   + "\n").encode()


def test_discovery(admin):
    code, _, body = admin.get("/apis")
    names = [g["name"] for g in body["groups"]]
    assert "coordination.k8s.io" in names and "events.k8s.io" in names
    code, _, body = admin.get("/api/v1")
    res = {r["name"]: r for r in body["resources"]}
    assert res["nodes"]["namespaced"] is False
    assert res["nodes/status"]["verbs"] == ["get", "patch", "update"]
    code, _, body = admin.get("/apis/coordination.k8s.io/v1")
    assert body["resources"][0]["kind"] == "Lease"


def test_fault_status_with_retry_after(srv, admin):
    fid = srv.inject_fault("/api/v1/nodes", status=429, retry_after=3, count=2)
    for _ in range(2):
        code, r, body = admin.get("/api/v1/nodes")
        assert code == 429
        assert r.getheader("Retry-After") == "3"
        assert body["reason"] == "TooManyRequests"
        assert body["details"] == {"retryAfterSeconds": 3}
    assert admin.get("/api/v1/nodes")[0] == 200
    assert admin.get("/api/v1/namespaces")[0] == 200
    assert [e["id"] for e in srv.faults()] == [fid]
    srv.clear_faults()


def test_fault_filters_by_method_and_verb(srv, admin):
    srv.inject_fault("/api/v1/namespaces", status=503, verb="watch")
    assert admin.get("/api/v1/namespaces")[0] == 200
    code, _, body = admin.get("/api/v1/namespaces?watch=true&timeoutSeconds=1")
    assert code == 503 and body["reason"] == "ServiceUnavailable"
    srv.inject_fault("/", status=500, method="PATCH")
    assert admin.get("/api/v1/namespaces/default")[0] == 200
    srv.clear_faults()


def test_fault_delay(srv, admin):
    srv.inject_fault("/version", delay=0.3)
    t = time.time()
    assert admin.get("/version")[0] == 200
    assert time.time() - t >= 0.3
    t = time.time()
    admin.get("/version")
    assert time.time() - t < 0.3


def test_fault_abort_resets_connection(srv, admin):
    assert admin.get("/version")[0] == 200
    seq = srv.log_seq()
    srv.inject_fault("/api/v1/namespaces", abort=True)
    with pytest.raises((ConnectionError, OSError)) as ei:
        admin.get("/api/v1/namespaces")
    assert not isinstance(ei.value, TimeoutError)
    assert admin.get("/api/v1/namespaces")[0] == 200
    log = srv.request_log(seq)
    assert log[0]["aborted"] is True and log[0]["code"] == 0


def test_outage_refuse_then_recover(srv, admin):
    assert admin.get("/version")[0] == 200
    srv.outage(0.5, "refuse")
    with pytest.raises((ConnectionError, OSError)):
        admin.get("/version")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", srv.port), timeout=1).close()
    time.sleep(0.7)
    assert admin.get("/version")[0] == 200


def test_outage_reset(srv, admin):
    srv.outage(0.4, "reset")
    with pytest.raises((ConnectionError, OSError, ssl.SSLError)):
        admin.get("/version")
    time.sleep(0.6)
    assert admin.get("/version")[0] == 200


def test_control_api_only_for_masters(srv, admin, client_for):
    c = client_for("bob", ["devs"])
    code, _, body = c.request("POST", "/_fake/faults", {"pathPrefix": "/version"})
    assert code == 403
    code, _, body = admin.request("POST", "/_fake/faults",
                                  {"pathPrefix": "/version", "status": 504,
                                   "count": 1})
    assert code == 201
    assert admin.get("/version")[0] == 504
    assert admin.get("/version")[0] == 200
    code, _, body = admin.request("POST", "/_fake/compact", {})
    assert code == 200 and int(body["resourceVersion"]) == srv.resource_version
    code, _, body = admin.get("/_fake/requests")
    assert body["items"][-1]["path"] == "/version"


def test_request_log_fields_and_file(srv, admin):
    seq = srv.log_seq()
    admin.request("PATCH", "/api/v1/namespaces/default",
                  {"metadata": {"labels": {"a": "b"}}},
                  ctype="application/merge-patch+json")
    e = srv.request_log(seq)[-1]
    assert e["verb"] == "patch" and e["method"] == "PATCH"
    assert e["user"] == "kubernetes-admin"
    assert e["contentType"] == "application/merge-patch+json"
    assert e["code"] == 200
    assert e["body"] == {"metadata": {"labels": {"a": "b"}}}
    assert e["resource"] == "namespaces" and e["name"] == "default"
    assert srv.writes(seq) == [e]
    with open(os.path.join(srv.state_dir, "requests.log")) as f:
        lines = [json.loads(x) for x in f]
    assert lines[-1]["seq"] == e["seq"]


def test_body_limit_413(admin):
    big = b'{"metadata":{"name":"x"},"data":{"k":"' + b"a" * (3 * 1024 * 1024) + b'"}}'
    code, _, body = admin.request("POST", "/api/v1/namespaces/default/configmaps", big)
    assert code == 413
    assert body["reason"] == "RequestEntityTooLarge"




def test_kubeconfig_forms_work_withkubectl(srv, tmp_path):
    forms = [
        dict(tls_server_name="kubernetes"),
        dict(tls_server_name="kubernetes", embed=False),
        dict(tls_server_name="kubernetes", token="kc-token", user="tok-user",
             groups=["system:masters"]),
    ]
    for i, kw in enumerate(forms):
        kc = srv.write_kubeconfig(str(tmp_path / ("kc%d" % i)), **kw)
        r = kubectl(kc, "get", "ns", "kube-system", "-o", "name")
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "namespace/kube-system"
    # without tls-server-name the certificate does not match 127.0.0.1
    kc = srv.write_kubeconfig(str(tmp_path / "plain"))
    r = kubectl(kc, "get", "ns")
    assert r.returncode != 0 and "127.0.0.1" in r.stderr


def test_kubeconfig_layout_like_kubeadm(srv, tmp_path):
    kc = srv.write_kubeconfig(str(tmp_path / "kc"), user="u1", groups=["g"],
                              tls_server_name="kubernetes")
    text = open(kc).read()
    lines = text.splitlines()
    assert lines[0] == "apiVersion: v1"
    assert "    certificate-authority-data: " in text
    assert "    server: https://127.0.0.1:%d" % srv.port in lines
    assert "    tls-server-name: kubernetes" in lines
    assert "current-context: u1@kubernetes" in lines
    assert "kind: Config" in lines
    assert any(x.startswith("    client-certificate-data: ") for x in lines)
    assert any(x.startswith("    client-key-data: ") for x in lines)


def test_idle_keepalive_connection_closed(tmp_path):
    s = apiserver.FakeAPIServer(idle_timeout=0.3).start()
    try:
        c = Client(s, cert=s.client_cert("u", []))
        assert c.get("/version")[0] == 200
        first = c.conn.sock
        assert c.get("/version")[0] == 200
        assert c.conn.sock is first          # kept alive
        time.sleep(0.6)
        with pytest.raises((ConnectionError, OSError)):
            c.get("/version")               # closed by the server meanwhile
        c.close()
    finally:
        s.stop()


def test_require_client_cert(tmp_path):
    s = apiserver.FakeAPIServer(str(tmp_path / "st"), require_client_cert=True)
    s.start()
    try:
        c = Client(s)
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            c.get("/version")
        c.close()
        c = Client(s, cert=s.client_cert("u", []))
        assert c.get("/version")[0] == 200
        c.close()
    finally:
        s.stop()


def test_cli_runs_until_sigterm(tmp_path):
    st = str(tmp_path / "state")
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}]}))
    p = subprocess.Popen([PY, os.path.join(HERE, "apiserver.py"), "--state-dir",
                          st, "--seed", str(seed)])
    try:
        for _ in range(200):
            if os.path.exists(os.path.join(st, "port")):
                break
            time.sleep(0.05)
        port = int(open(os.path.join(st, "port")).read())
        kc = str(tmp_path / "user.kubeconfig")
        r = subprocess.run([PY, os.path.join(HERE, "apiserver.py"), "kubeconfig",
                            "--state-dir", st, "--out", kc, "--user", "admin2",
                            "--group", "system:masters",
                            "--tls-server-name", "kubernetes"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        r = kubectl(kc, "get", "nodes", "-o", "name")
        assert r.stdout.strip() == "node/n1", r.stderr
        r = kubectl(os.path.join(st, "admin.kubeconfig"), "get", "--raw", "/version")
        assert json.loads(r.stdout)["gitVersion"] == "v1.32.0"
        assert port > 0
        # the control API with curl and the admin certificate
        pk = os.path.join(st, "pki")
        r = subprocess.run(["curl", "-sS", "--cacert", os.path.join(pk, "ca.crt"),
                            "--cert", os.path.join(pk, "admin.crt"),
                            "--key", os.path.join(pk, "admin.key"),
                            "--resolve", "kubernetes:%d:127.0.0.1" % port,
                            "-X", "POST", "-d", '{"pathPrefix":"/version","status":503,"count":null}',
                            "https://kubernetes:%d/_fake/faults" % port],
                           capture_output=True, text=True, timeout=30)
        assert json.loads(r.stdout)["id"] >= 1, r.stderr
        r = kubectl(os.path.join(st, "admin.kubeconfig"), "get", "--raw", "/version")
        assert r.returncode != 0 and "ServiceUnavailable" in r.stderr
    finally:
        p.send_signal(signal.SIGTERM)
        assert p.wait(10) == 0


def test_pki_cli(tmp_path):
    d = str(tmp_path)
    for args in (["ca", d], ["client", d, "c", "--user", "u", "--group", "a",
                             "--group", "b"]):
        subprocess.run([PY, os.path.join(HERE, "pki.py")] + args, check=True,
                       capture_output=True)
    out = subprocess.run(["openssl", "x509", "-in", os.path.join(d, "c.crt"),
                          "-noout", "-subject"], capture_output=True,
                         text=True).stdout
    assert "O = a, O = b, CN = u" in out
    assert pki.load_ca(d).cert.endswith("ca.crt")


def test_client_cert_from_another_ca_fails_handshake(srv, tmp_path):
    other = pki.make_ca(str(tmp_path), "other")
    cert = pki.make_client_cert(str(tmp_path), other, "intruder", "x",
                                ["system:masters"])
    c = Client(srv, cert=cert)
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        c.get("/version")
    c.close()


def test_end_watches_and_reset_connections(srv, admin, client_for):
    import threading
    out = {}
    watcher = client_for("kubernetes-admin", ["system:masters"])

    def run():
        out["r"] = watcher.get("/api/v1/namespaces?watch=1&timeoutSeconds=30"
                               "&resourceVersion=%d" % srv.resource_version)
    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.2)
    code, _, _ = admin.request("POST", "/_fake/end-watches", {})
    assert code == 200
    t.join(5)
    assert out["r"][0] == 200          # a clean end of the stream
    assert watcher.get("/version")[0] == 200   # same connection still usable
    code, _, _ = admin.request("POST", "/_fake/reset-connections", {})
    assert code == 200
    time.sleep(0.1)
    with pytest.raises((ConnectionError, OSError)):
        watcher.get("/version")


def test_large_answers_gzipped_on_request(srv, admin):
    for i in range(3):
        srv.create_object({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "big%d" % i, "namespace": "default"},
                           "data": {"k": "x" * 60000}})
    admin.get("/version")
    conn = admin.conn
    conn.request("GET", "/api/v1/namespaces/default/configmaps",
                 headers={"Accept-Encoding": "gzip"})
    r = conn.getresponse()
    raw = r.read()
    assert r.getheader("Content-Encoding") == "gzip"
    import gzip
    assert len(json.loads(gzip.decompress(raw))["items"]) >= 3
    conn.request("GET", "/api/v1/namespaces/default/configmaps")
    r = conn.getresponse()
    assert r.getheader("Content-Encoding") is None and json.loads(r.read())
    conn.request("GET", "/api/v1/namespaces/default/configmaps/big0",
                 headers={"Accept-Encoding": "gzip"})
    r = conn.getresponse()
    assert r.getheader("Content-Encoding") is None and json.loads(r.read())
