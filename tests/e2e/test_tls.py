"""HTTPS to the API server: verification, client certificates from kubeconfig
data and files, tokens, tls-server-name, aborted connections."""

import base64
import os
import socket

import pytest

import apiserver
from conftest import logged_all, run, wait_until


def check(kubeconfig, *extra):
    return run(["check-kubeconfig", "--kubeconfig", kubeconfig] + list(extra))


@pytest.fixture
def strict_api():
    """An API server whose TLS handshake requires a client certificate."""
    with apiserver.FakeAPIServer(require_client_cert=True) as srv:
        yield srv


def test_client_certificate_from_kubeconfig_data_is_presented(strict_api, tmp):
    kc = strict_api.write_kubeconfig(os.path.join(tmp, "kc"), user="system:cloud-controller-manager",
                                     groups=("bootccm-test",), embed=True,
                                     tls_server_name="kubernetes")
    r = check(kc)
    assert r.returncode == 0, r.stderr
    assert "user: system:cloud-controller-manager\n" in r.stdout
    assert "bootccm-test" in r.stdout
    assert "version: v1.32.0" in r.stdout


def test_client_certificate_from_files_is_presented(strict_api, tmp):
    kc = strict_api.write_kubeconfig(os.path.join(tmp, "kc"), user="file-user",
                                     groups=(), embed=False, tls_server_name="kubernetes")
    with open(kc) as f:
        text = f.read()
    assert "client-certificate:" in text and "client-certificate-data" not in text
    r = check(kc)
    assert r.returncode == 0, r.stderr
    assert "user: file-user\n" in r.stdout


def test_without_a_client_certificate_a_strict_server_refuses(strict_api, tmp):
    kc = strict_api.write_kubeconfig(os.path.join(tmp, "kc"), user="tok-user",
                                     token="tok-0123456789abcdef", tls_server_name="kubernetes")
    r = check(kc)
    assert r.returncode == 1
    assert "/version: " in r.stderr
    assert "tok-0123456789abcdef" not in r.stderr + r.stdout


def test_bearer_token(api, tmp):
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="token-user",
                              groups=("g1",), token="t0ken-abcdefghijklmnop",
                              tls_server_name="kubernetes")
    r = check(kc)
    assert r.returncode == 0, r.stderr
    assert "user: token-user\n" in r.stdout
    entries = [e for e in logged_all(api).request_log()
               if e["path"].endswith("selfsubjectreviews")]
    assert entries and entries[-1]["user"] == "token-user"


def test_token_file_is_read_and_reread(api, tmp):
    api.add_token("first-token-aaaaaaaa", "first")
    api.add_token("second-token-bbbbbbbb", "second")
    tokfile = os.path.join(tmp, "token")
    with open(tokfile, "w") as f:
        f.write("first-token-aaaaaaaa\n")
    kc = os.path.join(tmp, "kc")
    with open(kc, "w") as f:
        f.write("""apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
    certificate-authority: %s
    tls-server-name: kubernetes
users:
- name: u
  user:
    tokenFile: %s
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
""" % (api.url, api.ca_file, tokfile))
    r = check(kc)
    assert r.returncode == 0, r.stderr
    assert "user: first\n" in r.stdout
    with open(tokfile, "w") as f:
        f.write("second-token-bbbbbbbb\n")
    r = check(kc)
    assert "user: second\n" in r.stdout, r.stderr


def test_unknown_token_is_unauthorized(api, tmp):
    kc = apiserver.write_kubeconfig(os.path.join(tmp, "kc"), api.url, api.ca_file,
                                    "u", token="not-a-known-token-xyz",
                                    tls_server_name="kubernetes")
    r = check(kc)
    # /version is public; the SelfSubjectReview needs a valid token
    assert r.returncode == 1
    assert "HTTP 401" in r.stderr and "Unauthorized" in r.stderr
    assert "not-a-known-token-xyz" not in r.stderr + r.stdout


def test_wrong_ca_is_refused(api, tmp):
    other = apiserver.FakeAPIServer()
    other.start()
    try:
        kc = apiserver.write_kubeconfig(os.path.join(tmp, "kc"), api.url, other.ca_file,
                                        "u", token="whatever-token-1234",
                                        tls_server_name="kubernetes")
    finally:
        other.stop()
    r = check(kc)
    assert r.returncode == 1
    assert "/version: tls failure:" in r.stderr
    assert api.request_log() == [] or all(e["path"] != "/version" for e in api.request_log())


def test_dns_san_mismatch_is_refused(api, tmp):
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), token="tok-dns-san-1234",
                              tls_server_name="not-in-the-certificate.example")
    r = check(kc)
    assert r.returncode == 1, r.stdout
    assert "/version: tls failure:" in r.stderr


def test_loopback_without_tls_server_name_fails_cleanly(api, tmp):
    # kubeadm's serving certificate has no IP:127.0.0.1
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), token="tok-no-sni-12345",
                              tls_server_name=None)
    r = check(kc)
    assert r.returncode == 1, r.stdout
    assert "/version: tls failure:" in r.stderr


def test_ip_san_is_verified(tmp):
    with apiserver.FakeAPIServer(sans=["IP:127.0.0.1"]) as good:
        kc = good.write_kubeconfig(os.path.join(tmp, "good"), user="ip-user",
                                   tls_server_name=None)
        r = check(kc)
        assert r.returncode == 0, r.stderr
        assert "user: ip-user" in r.stdout
    with apiserver.FakeAPIServer(sans=["IP:127.0.0.2", "DNS:localhost"]) as bad:
        kc = bad.write_kubeconfig(os.path.join(tmp, "bad"), user="ip-user",
                                  tls_server_name=None)
        r = check(kc)
        assert r.returncode == 1, r.stdout
        assert "/version: tls failure:" in r.stderr


def test_tls_server_name_with_ipv4_literal_server(api, tmp):
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="sni-user",
                              tls_server_name="kubernetes.default.svc")
    r = check(kc)
    assert r.returncode == 0, r.stderr
    assert "server: https://127.0.0.1:%d" % api.port in r.stdout


def test_aborted_connection_is_an_error_not_a_crash(api, tmp):
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="u", tls_server_name="kubernetes")
    api.inject_fault(path_prefix="/version", abort=True, count=None)
    r = check(kc)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "/version: transient failure:" in r.stderr


def test_daemon_survives_aborts_and_connects(api, tmp, daemon):
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="u", tls_server_name="kubernetes")
    api.inject_fault(path_prefix="/version", abort=True, count=5)
    d = daemon(["--kubeconfig", kc, "--secure-port=0"])
    d.wait_for("API server answered", timeout=15)
    assert d.alive()
    # each cut request is logged by its own connection's thread, which the
    # daemon's next attempt does not wait for
    wait_until(lambda: len([e for e in api.request_log() if e.get("aborted")]) >= 5,
               what="the five cut requests in the log")
    aborted = [e for e in api.request_log() if e.get("aborted")]
    assert len(aborted) == 5


def test_explicit_insecure_skip_tls_verify_warns(api, tmp, daemon):
    kc = os.path.join(tmp, "kc")
    with open(kc, "w") as f:
        f.write("""apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "%s", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: insecure-token-123456}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
""" % api.url)
    # a user name sharing no 8 bytes with the token, which is redacted
    api.add_token("insecure-token-123456", "skip-verify-user")
    d = daemon(["--kubeconfig", kc, "--secure-port=0"])
    d.wait_for("Authenticated")
    out = d.output()
    assert "TLS verification of the API server is off" in out
    assert "skip-verify-user" in out
    assert "insecure-token-123456" not in out
