"""The serving port's key exchange: --tls-curve-preferences takes Go's
numeric crypto/tls CurveID values, like the upstream manager; a handshake
uses a listed group or fails, and a value upstream refuses (or one bootccm's
TLS library cannot honour) stops bootccm before it starts."""

import os
import subprocess
import time

import pytest

from conftest import free_port, https_get, run


def handshake(port, *args):
    """openssl s_client's output for one handshake with the serving port."""
    r = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port] + list(args),
                       input="", capture_output=True, text=True, timeout=30)
    return r.stdout + r.stderr


def serving(api, tmp, daemon, curves):
    port = free_port()
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="system:cloud-controller-manager",
                              groups=(), tls_server_name="kubernetes")
    daemon(["--kubeconfig", kc, "--secure-port=%d" % port, "--bind-address=127.0.0.1",
            "--tls-curve-preferences=" + curves])
    deadline = time.monotonic() + 30
    while True:
        try:
            if https_get(port, "/livez")[0] == 200:
                return port
        except OSError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.05)


def test_the_negotiated_group_is_a_listed_one(api, tmp, daemon):
    port = serving(api, tmp, daemon, "24,29")
    # the client's first choice among the listed groups wins
    assert "Server Temp Key: X25519" in handshake(port, "-groups", "X25519:P-384")
    assert "Server Temp Key: ECDH, secp384r1" in handshake(port, "-groups", "P-384:X25519")
    # a client offering only an unlisted group gets no handshake
    out = handshake(port, "-groups", "P-256")
    assert "Server Temp Key" not in out and "Cipher is (NONE)" in out
    # TLS 1.2 would choose its curve outside the list: not served
    out = handshake(port, "-tls1_2")
    assert "Cipher is (NONE)" in out and "protocol version" in out


def test_without_the_flag_every_group_is_served(api, tmp, daemon):
    port = serving(api, tmp, daemon, "")
    assert "Server Temp Key: ECDH, prime256v1" in handshake(port, "-groups", "P-256")
    assert "Server Temp Key: X25519" in handshake(port, "-groups", "X25519")
    assert "Server Temp Key: ECDH, prime256v1" in handshake(port, "-tls1_2", "-groups", "P-256")


@pytest.mark.parametrize("value,why", [
    ("23,abc", '"abc" is not a 32-bit number'),
    ("0", "curve preference 0 is out of range (must be 1-65535)"),
    ("65536", "curve preference 65536 is out of range"),
    ("23,0x17", "duplicate curve preference 23"),
    ("30", "curve preference 30 is not a Go crypto/tls CurveID"),
    ("29,4588", "curve preference 4588 (X25519MLKEM768) is not supported"),
])
def test_a_bad_value_is_refused_naming_the_flag(value, why):
    r = run(["--validate", "--kubeconfig", "/dev/null", "--tls-curve-preferences=" + value])
    assert r.returncode == 2, r.stderr
    assert "--tls-curve-preferences" in r.stderr and why in r.stderr, r.stderr


def test_with_secure_port_0_the_value_is_not_parsed():
    # upstream reads the curves only when it serves HTTPS
    r = run(["--validate", "--kubeconfig", "/dev/null", "--secure-port=0",
             "--tls-curve-preferences=30"])
    assert "--tls-curve-preferences" not in r.stderr


@pytest.mark.parametrize("args,why", [
    (["--webhook-secure-port=70000"], "--webhook-secure-port 70000 must be between 0 and 65535"),
    (["--webhook-secure-port=10258"], "--webhook-secure-port 10258 cannot be the same value as --secure-port"),
    (["--webhook-bind-address=nowhere"], '--webhook-bind-address "nowhere" is not an IP address'),
    (["--webhook-tls-curve-preferences=23,x"], '--webhook-tls-curve-preferences "23,x": "x" is not a 32-bit number'),
    (["--webhook-disable-http2-serving=maybe"], "--webhook-disable-http2-serving"),
])
def test_webhook_serving_values_upstream_refuses_are_refused(args, why):
    r = run(["--validate", "--kubeconfig", "/dev/null"] + args)
    assert r.returncode == 2 and why in r.stderr, r.stderr


def test_webhook_serving_flags_are_accepted_without_effect():
    # no webhook is served, so upstream never reads the TLS values either
    r = run(["--validate", "--kubeconfig", "/dev/null", "--webhook-disable-http2-serving",
             "--webhook-tls-cipher-suites=TLS_AES_128_GCM_SHA256",
             "--webhook-tls-curve-preferences=30,4588", "--webhook-tls-min-version=VersionTLS13",
             "--webhook-tls-sni-cert-key=a.crt,a.key:example.com",
             "--webhook-secure-port=0", "--webhook-bind-address=::"])
    assert "webhook" not in r.stderr, r.stderr
