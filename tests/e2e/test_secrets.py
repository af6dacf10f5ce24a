"""Credentials go only over verified TLS, and no subcommand prints one: every
byte bootccm writes (stdout and stderr, the daemon and the one-shot
commands) is grepped for the secret, against servers that refuse it and
servers that echo it back."""

import http.server
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import bootccm_path, free_port, run
from rawserver import RawServer
from test_bootstrap import daemon_args, load_rbac, metadata, register, wait_event  # noqa: F401
from test_hcloud import fakehcloud, hcloud_args

TOKEN = "s3cret-t0ken-4a7b9c1d2e3f"
SA_TOKEN = "pr0jected-sa-t0ken-9f8e7d6c"
IMDS_TOKEN = "AQAEAImdsV2-sess10n-t0ken-77=="


@pytest.fixture
def listener():
    """A plain-HTTP listener that records what it is sent and answers 401."""
    li = RawServer("401")
    yield li
    li.close()


class EchoHandler(http.server.BaseHTTPRequestHandler):
    """An API server that refuses (401, 403) or accepts (echo) whatever
    credentials it gets, and puts the Authorization header it received into
    every answer: Status messages, /version's gitVersion, the
    SelfSubjectReview's user name and groups; or (hostile) answers with
    control characters in its texts."""

    protocol_version = "HTTP/1.1"
    mode = "401"

    def log_message(self, *a):
        pass

    def _answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        auth = self.headers.get("Authorization", "")
        if self.mode == "hostile":
            # /version answers, everything else is refused: with HOSTILE text
            if self.path.startswith("/version"):
                code, body = 200, {"major": "1", "minor": "32", "gitVersion": HOSTILE}
            else:
                code, body = 403, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                   "message": HOSTILE, "reason": "Forbidden", "code": 403}
        elif self.mode in ("401", "403", "part"):
            code = 403 if self.mode == "403" else 401
            # part: a piece of the token, as a server cutting its echo short
            said = "...%s..." % auth[12:24] if self.mode == "part" else auth
            body = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                    "message": "bad token %s" % said, "reason":
                    "Unauthorized" if code == 401 else "Forbidden", "code": code}
        elif self.path.startswith("/version"):
            code, body = 200, {"major": "1", "minor": "32", "gitVersion": auth}
        else:
            code, body = 201, {"kind": "SelfSubjectReview", "apiVersion":
                               "authentication.k8s.io/v1", "status": {"userInfo": {
                                   "username": auth, "groups": [auth, "echo"]}}}
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer


class _TLSServer(http.server.ThreadingHTTPServer):
    """Each connection's TLS handshake in its own thread (as the fake API
    server does), not in the accepting one, where a slow handshake on a busy
    machine held up every other client."""
    ctx = None

    def finish_request(self, request, client_address):
        request.settimeout(10)
        try:
            tls = self.ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        try:
            super().finish_request(tls, client_address)
        finally:
            tls.close()


def echo_server(api, mode):
    """An echoing HTTPS server with the fake API server's serving certificate
    (so a kubeconfig made by api.write_kubeconfig verifies it)."""
    handler = type("Echo" + mode, (EchoHandler,), {"mode": mode})
    srv = _TLSServer(("127.0.0.1", 0), handler)
    srv.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    srv.ctx.load_cert_chain(api.serving.cert, api.serving.key)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def kubeconfig(path, server, user, ca_file=None, tls_server_name=None):
    """A kubeconfig for SERVER whose user entry holds USER (YAML lines, ""
    for an anonymous user)."""
    cluster = "    server: %s\n" % server
    if ca_file:
        cluster += "    certificate-authority: %s\n" % ca_file
    if tls_server_name:
        cluster += "    tls-server-name: %s\n" % tls_server_name
    with open(path, "w") as f:
        f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n%s"
                "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                "current-context: x\nusers:\n- name: u\n  user:%s"
                % (cluster, "\n" + user if user else " {}\n"))
    return path


def assert_no_secret(secret, *outputs):
    """Neither SECRET nor any 8 bytes of it in a row (the redactor's
    promise: a server may echo a credential cut short) in OUTPUTS."""
    for out in outputs:
        data = out.encode() if isinstance(out, str) else out
        s = secret.encode()
        for i in range(max(1, len(s) - 7)):
            assert s[i:i + 8] not in data, "%r of the secret was printed:\n%s" % (
                s[i:i + 8], data.decode(errors="replace"))


# --- 1. credentials only over verified TLS -----------------------------------

def test_a_token_is_never_sent_to_a_plain_http_server(tmp, listener):
    server = "http://127.0.0.1:%d" % listener.port
    cases = {
        "token": "    token: %s\n" % TOKEN,
        "tokenFile": "    tokenFile: %s\n" % os.path.join(tmp, "token"),
    }
    with open(os.path.join(tmp, "token"), "w") as f:
        f.write(SA_TOKEN + "\n")
    for field, user in cases.items():
        kc = kubeconfig(os.path.join(tmp, field + ".conf"), server, user)
        for args in (["check-kubeconfig", "--kubeconfig", kc],
                     ["--kubeconfig", kc, "--secure-port=0", "--cloud-provider="]):
            r = run(args, timeout=20)
            assert r.returncode == 1, (args, r.returncode, r.stderr)
            # the file and the field
            assert kc in r.stderr and "users[0].user.%s" % field in r.stderr, r.stderr
            assert "plain HTTP" in r.stderr, r.stderr
    time.sleep(0.2)
    assert listener.received == b"", listener.received


def test_a_client_certificate_is_never_offered_over_plain_http(api, tmp, listener):
    kc = api.write_kubeconfig(os.path.join(tmp, "cert.conf"), user="cert-user",
                              server="http://127.0.0.1:%d" % listener.port)
    r = run(["check-kubeconfig", "--kubeconfig", kc])
    assert r.returncode == 1
    assert kc in r.stderr and "users[0].user.client-certificate-data" in r.stderr, r.stderr
    assert listener.received == b""


def test_plain_http_without_credentials_is_still_allowed(tmp, listener):
    # client-go allows an anonymous http:// server; nothing secret goes out
    kc = kubeconfig(os.path.join(tmp, "anon.conf"), "http://127.0.0.1:%d" % listener.port, "")
    r = run(["check-kubeconfig", "--kubeconfig", kc])
    assert r.returncode == 1 and "HTTP 401" in r.stderr, r.stderr
    assert b"GET /version" in listener.received
    assert b"Authorization" not in listener.received


def test_master_cannot_send_the_kubeconfig_credentials_in_clear(api, tmp, listener):
    kc = api.write_kubeconfig(os.path.join(tmp, "tok.conf"), user="tok-user", token=TOKEN,
                              tls_server_name="kubernetes")
    # the repro: a scheme-less --master made curl speak plain HTTP
    r = run(["check-kubeconfig", "--kubeconfig", kc, "--master",
             "127.0.0.1:%d" % listener.port])
    assert r.returncode == 2, r.stderr
    assert "--master" in r.stderr and "https://" in r.stderr
    # an http:// --master with a token kubeconfig: refused at load, naming both
    r = run(["check-kubeconfig", "--kubeconfig", kc, "--master",
             "http://127.0.0.1:%d" % listener.port])
    assert r.returncode == 1, r.stderr
    assert "--master" in r.stderr and kc in r.stderr and "users[0].user.token" in r.stderr
    time.sleep(0.2)
    assert listener.received == b""
    assert_no_secret(TOKEN, r.stdout, r.stderr)


@pytest.mark.parametrize("master", ["ftp://127.0.0.1:6443", "file:///etc/passwd", "notaurl",
                                    "https://", "https://127.0.0.1:0", "https://127.0.0.1:99999",
                                    "https://127.0.0.1:6443?x=1", "https://u:p@127.0.0.1:6443",
                                    "https://[::1:6443", "https://host name:6443"])
def test_master_is_validated_like_server_before_anything_starts(api, tmp, master):
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="m-user", token=TOKEN,
                              tls_server_name="kubernetes")
    seq = api.log_seq()
    t0 = time.monotonic()
    r = run(["--kubeconfig", kc, "--master", master, "--secure-port=0"])
    # exit 2 at once: no DNS lookup, no connection, nothing served
    assert r.returncode == 2, (master, r.returncode, r.stderr)
    assert "--master" in r.stderr, r.stderr
    assert time.monotonic() - t0 < 5
    assert "u:p" not in r.stderr
    assert api.request_log(seq) == []


@pytest.mark.parametrize("server, why", [
    ("https://127.0.0.1:99999", "port"), ("https://127.0.0.1:0", "port"),
    ("https://127.0.0.1:64x", "port"), ("https://[::1]:70000", "port"),
    ("https://[fe80::1", "host"), ("https://k8s%41pi:6443", "host"),
])
def test_a_bad_server_url_is_refused_at_load(tmp, server, why):
    kc = kubeconfig(os.path.join(tmp, "bad.conf"), server, "    token: %s\n" % TOKEN)
    for args in (["check-kubeconfig", "--kubeconfig", kc],
                 ["--kubeconfig", kc, "--secure-port=0", "--cloud-provider="]):
        t0 = time.monotonic()
        r = run(args, timeout=20)
        assert r.returncode == 1, (server, args, r.returncode, r.stderr)
        assert kc in r.stderr and why in r.stderr, r.stderr
        assert time.monotonic() - t0 < 5


# --- 2. one redaction for every output path ----------------------------------

@pytest.mark.parametrize("mode", ["401", "403", "part", "echo"])
def test_check_kubeconfig_prints_no_secret(api, tmp, mode):
    srv = echo_server(api, mode)
    try:
        server = "https://127.0.0.1:%d" % srv.server_address[1]
        tok = api.write_kubeconfig(os.path.join(tmp, "tok"), user="t", token=TOKEN,
                                   server=server, tls_server_name="kubernetes")
        with open(os.path.join(tmp, "sa-token"), "w") as f:
            f.write(SA_TOKEN + "\n")
        tokfile = kubeconfig(os.path.join(tmp, "tokfile"), server,
                             "    tokenFile: %s\n" % os.path.join(tmp, "sa-token"),
                             ca_file=api.ca_file, tls_server_name="kubernetes")
        for kc, secret in ((tok, TOKEN), (tokfile, SA_TOKEN)):
            for v in ("0", "10"):
                r = run(["check-kubeconfig", "--kubeconfig", kc, "-v=" + v])
                assert r.returncode == (0 if mode == "echo" else 1), r.stderr
                # the answer was printed, with the secret masked
                assert "[redacted]" in r.stdout + r.stderr, r.stdout + r.stderr
                assert_no_secret(secret, r.stdout, r.stderr)
    finally:
        srv.shutdown()


@pytest.mark.parametrize("mode", ["401", "403", "part"])
def test_doctor_and_validate_print_no_secret(api, tmp, mode):
    srv = echo_server(api, mode)
    try:
        server = "https://127.0.0.1:%d" % srv.server_address[1]
        with open(os.path.join(tmp, "sa-token"), "w") as f:
            f.write(SA_TOKEN + "\n")
        tok = api.write_kubeconfig(os.path.join(tmp, "tok"), user="t", token=TOKEN,
                                   server=server, tls_server_name="kubernetes")
        tokfile = kubeconfig(os.path.join(tmp, "tokfile"), server,
                             "    tokenFile: %s\n" % os.path.join(tmp, "sa-token"),
                             ca_file=api.ca_file, tls_server_name="kubernetes")
        for kc, secret in ((tok, TOKEN), (tokfile, SA_TOKEN)):
            r = run(["doctor", "--kubeconfig", kc, "-v=10"])
            assert r.returncode == 3, r.stderr
            assert "[redacted]" in r.stderr, r.stderr
            assert_no_secret(secret, r.stdout, r.stderr)
            r = run(["--kubeconfig", kc, "--validate", "--secure-port=0", "-v=10"])
            assert r.returncode == 0, r.stderr
            assert_no_secret(secret, r.stdout, r.stderr)
    finally:
        srv.shutdown()


@pytest.mark.parametrize("mode", ["401", "part", "echo"])
def test_the_daemon_logs_no_token_file_secret(api, tmp, daemon, mode):
    srv = echo_server(api, mode)
    try:
        server = "https://127.0.0.1:%d" % srv.server_address[1]
        with open(os.path.join(tmp, "sa-token"), "w") as f:
            f.write(SA_TOKEN + "\n")
        kc = kubeconfig(os.path.join(tmp, "tokfile"), server,
                        "    tokenFile: %s\n" % os.path.join(tmp, "sa-token"),
                        ca_file=api.ca_file, tls_server_name="kubernetes")
        d = daemon(["--kubeconfig", kc, "--secure-port=0", "-v=10", "--leader-elect=false"])
        d.wait_for("[redacted]", timeout=10)
        time.sleep(0.5)
        assert_no_secret(SA_TOKEN, d.output())
    finally:
        srv.shutdown()


class ImdsEcho(http.server.BaseHTTPRequestHandler):
    """EC2's IMDSv2 that hands out a session token and then echoes it in its
    refusals (403) or in every answer (echo)."""

    protocol_version = "HTTP/1.1"
    mode = "403"

    def log_message(self, *a):
        pass

    def _send(self, code, text):
        data = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_PUT(self):
        # "space": a token bootccm refuses (a header cannot carry it)
        self._send(200, IMDS_TOKEN.replace("-sess", " sess") if self.mode == "space"
                   else IMDS_TOKEN)

    def do_GET(self):
        got = self.headers.get("X-aws-ec2-metadata-token", "")
        if self.mode == "403":
            self._send(403, "token %s is not allowed here" % got)
        elif self.mode == "part":
            # a piece of it, as a service cutting its echo short would
            self._send(403, "token ...%s... is not allowed here" % got[6:18])
        else:
            self._send(200, got)


@pytest.mark.parametrize("mode", ["403", "echo", "part", "space"])
def test_metadata_prints_no_session_token(mode):
    handler = type("Imds" + mode, (ImdsEcho,), {"mode": mode})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        for fmt in ("json", "env", "kubelet-flags"):
            r = run(["metadata", "--metadata-cloud=ec2", "--format=" + fmt,
                     "--metadata-endpoint=http://127.0.0.1:%d" % srv.server_address[1]])
            assert r.returncode in (0, 4), r.stderr
            assert "[redacted]" in r.stdout + r.stderr, r.stdout + r.stderr
            assert_no_secret(IMDS_TOKEN.replace("-sess", " sess") if mode == "space"
                             else IMDS_TOKEN, r.stdout, r.stderr)
    finally:
        srv.shutdown()


# --- 3. no core dump carries a secret -----------------------------------------

def _blackhole():
    """A listener that accepts connections (the kernel does) and never
    answers: every command below waits on it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    return s


def _proc_owner_and_uid(pid):
    st = os.stat("/proc/%d/status" % pid)
    with open("/proc/%d/status" % pid) as f:
        uid = [int(l.split()[1]) for l in f if l.startswith("Uid:")][0]
    return st.st_uid, uid


@pytest.mark.parametrize("cmd", ["daemon", "check-kubeconfig", "doctor", "metadata"])
def test_no_core_dumps_for_the_daemon_and_every_subcommand(cmd):
    # A process that is not dumpable (prctl PR_SET_DUMPABLE 0) writes no core
    # file and its /proc/PID files belong to root, whoever runs it: run it as
    # an unprivileged user and look at who owns /proc/PID/status.
    hole = _blackhole()
    d = tempfile.mkdtemp(prefix="bootccm-dump-")
    os.chmod(d, 0o755)
    try:
        kc = kubeconfig(os.path.join(d, "kc"), "https://127.0.0.1:%d" % hole.getsockname()[1],
                        "    token: %s\n" % TOKEN)
        os.chmod(kc, 0o644)
        args = {
            "daemon": ["--kubeconfig", kc, "--secure-port=0", "--cloud-provider=",
                       "--leader-elect=false"],
            "check-kubeconfig": ["check-kubeconfig", "--kubeconfig", kc, "--timeout=60s"],
            "doctor": ["doctor", "--kubeconfig", kc, "--timeout=60s"],
            "metadata": ["metadata", "--metadata-cloud=ec2", "--timeout=60s",
                         "--metadata-endpoint=http://127.0.0.1:%d" % hole.getsockname()[1]],
        }[cmd]
        pre = None
        if os.getuid() == 0:
            def pre():
                os.setgid(65534)
                os.setgroups([])
                os.setuid(65534)
        p = subprocess.Popen([bootccm_path()] + args, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, preexec_fn=pre)
        try:
            exe = os.path.realpath(bootccm_path())
            deadline = time.monotonic() + 20
            owner, uid = None, None
            while time.monotonic() < deadline and p.poll() is None:
                try:
                    if os.readlink("/proc/%d/exe" % p.pid) == exe:
                        owner, uid = _proc_owner_and_uid(p.pid)
                        if owner == 0:
                            break
                except OSError:
                    pass
                time.sleep(0.02)
            assert p.poll() is None, "%s ended before it could be looked at" % cmd
            assert uid is not None and uid != 0, uid
            assert owner == 0, "/proc/%d of %s belongs to uid %s: dumpable" % (p.pid, cmd, owner)
        finally:
            p.kill()
            p.wait()
    finally:
        hole.close()
        shutil.rmtree(d, ignore_errors=True)


# --- 4. server and device text is printed escaped -----------------------------

# CR and LF would forge a line ("DEADLOCK ..."), ESC [2J clears a terminal,
# U+009B is a one-character CSI; legitimate UTF-8 (é) is kept
HOSTILE = "x\r\nDEADLOCK forged\x1b[2J\u009b\u00e9"


def assert_escaped(out):
    raw = out.encode() if isinstance(out, str) else out
    assert b"\r" not in raw and b"\x1b" not in raw and "\u009b".encode() not in raw, raw
    # the forged line is not a line of its own
    for line in raw.split(b"\n"):
        assert not line.startswith(b"DEADLOCK forged"), raw
    assert b"x\\r\\nDEADLOCK forged\\x1b[2J\\xc2\\x9b\xc3\xa9" in raw, raw


def test_check_kubeconfig_and_doctor_escape_the_servers_text(api, tmp):
    srv = echo_server(api, "hostile")
    try:
        server = "https://127.0.0.1:%d" % srv.server_address[1]
        kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="t", token=TOKEN,
                                  server=server, tls_server_name="kubernetes")
        r = subprocess.run([bootccm_path(), "check-kubeconfig", "--kubeconfig", kc],
                           capture_output=True, timeout=30)
        assert r.returncode == 1, r.stderr
        assert b"version: " in r.stdout, r.stdout
        assert_escaped(r.stdout)     # gitVersion
        assert_escaped(r.stderr)     # the SelfSubjectReview's 403 message
        r = subprocess.run([bootccm_path(), "doctor", "--kubeconfig", kc],
                           capture_output=True, timeout=30)
        assert r.returncode == 3, r.stderr
        assert_escaped(r.stderr)
    finally:
        srv.shutdown()


def test_metadata_escapes_dmi_text(tmp):
    dmi = os.path.join(tmp, "dmi")
    os.makedirs(dmi)
    for name, value in (("sys_vendor", b"Acme\x1b[2J\rFAKE\xff\xfe"),
                        ("product_name", "Box\u00e9\u009b".encode())):
        with open(os.path.join(dmi, name), "wb") as f:
            f.write(value + b"\n")
    r = subprocess.run([bootccm_path(), "metadata", "--detect", "--metadata-dmi-dir=" + dmi],
                       capture_output=True, timeout=30)
    assert r.returncode == 3, r.stderr
    assert b"\x1b" not in r.stderr and b"\r" not in r.stderr and b"\xff" not in r.stderr
    assert "\u009b".encode() not in r.stderr
    assert b'sys_vendor "Acme\\x1b[2J\\rFAKE\\xff\\xfe"' in r.stderr, r.stderr
    assert b'product_name "Box\xc3\xa9\\xc2\\x9b"' in r.stderr, r.stderr


# --- 5. Events and conditions carry no secret a server echoed -----------------

KUBE_TOKEN = "kUbE-b3arer-t0ken-5d6e7f8a9b0c1d2e"


def _echo_message(secret):
    # the whole secret, and a piece of it as a server cutting its echo short
    return "Internal error: request had Authorization: Bearer %s; retry (%s)" % (
        secret, secret[5:17])


def _no_secret_in_events(api, *secrets):
    import json as _json
    events = api.list_objects("events")
    text = _json.dumps(events)
    for s in secrets:
        assert_no_secret(s, text)
    return events


def test_events_carry_no_bearer_token_a_server_echoed(api, tmp, daemon, metadata):
    md = metadata()
    load_rbac(api)
    register(api, "cp-1", control_plane=True)
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="system:cloud-controller-manager",
                              groups=(), token=KUBE_TOKEN, tls_server_name="kubernetes")
    # the serving key (--tls-private-key-file) is a secret in use too: a
    # line of its body rides along in the echo
    with open(api.serving.key) as f:
        key_line = [l for l in f.read().splitlines() if l and not l.startswith("-----")][1]
    # every write of the Node is answered 500 with the token in the message
    api.inject_fault("/api/v1/nodes/cp-1", status=500, count=None, method="PATCH",
                     message=_echo_message(KUBE_TOKEN) + " key " + key_line)
    d = daemon(daemon_args(kc, "cp-1", md, ["--leader-elect=false",
                                            "--tls-cert-file=" + api.serving.cert,
                                            "--tls-private-key-file=" + api.serving.key],
                           secure_port=free_port()))
    ev = wait_event(api, "cp-1", "InitializationFailed", timeout=30)
    assert "[redacted]" in ev["message"], ev
    assert "Internal error" in ev["message"], ev
    _no_secret_in_events(api, KUBE_TOKEN, key_line)
    # a repeat is counted into the same Event by a patch: still redacted
    wait_event(api, "cp-1", "InitializationFailed", pred=lambda e: e.get("count", 1) > 1,
               timeout=60)
    _no_secret_in_events(api, KUBE_TOKEN, key_line)
    assert_no_secret(KUBE_TOKEN, d.output())
    assert_no_secret(key_line, d.output())


def test_events_carry_no_hcloud_token_the_api_echoed(api, tmp, daemon):
    with fakehcloud.FakeHcloud() as hc:
        net = hc.add_network(name="k8s")
        hc.add_server(name="cp-1", private_net=[net["id"]])
        register(api, "cp-1", control_plane=True)
        hc.inject_fault(path="/v1/*", status=500, count=None, code="server_error",
                        message=_echo_message(hc.token))
        d = daemon(hcloud_args(api, hc, tmp))
        ev = wait_event(api, "cp-1", "InitializationFailed", timeout=30)
        assert "[redacted]" in ev["message"], ev
        _no_secret_in_events(api, hc.token)
        assert_no_secret(hc.token, d.output())


def test_no_write_carries_a_secret_the_cloud_echoed(api, tmp, daemon):
    # every body the daemon sends the API server (Events, the Node's status
    # and conditions, annotations) while the Networks API echoes the token:
    # the API client redacts each string of an object it writes
    with fakehcloud.FakeHcloud() as hc:
        net = hc.add_network(name="k8s")
        hc.add_server(name="cp-1", private_net=[net["id"]])
        register(api, "cp-1", control_plane=True)
        seq = api.log_seq()
        hc.inject_fault(path="/v1/networks*", status=500, count=None, code="server_error",
                        message=_echo_message(hc.token))
        d = daemon(hcloud_args(api, hc, tmp, extra=["--configure-cloud-routes=true",
                                                     "--cluster-cidr=10.244.0.0/16",
                                                     "--allocate-node-cidrs=true"]))
        wait_event(api, "cp-1", "InitializationFailed", timeout=30)
        import json as _json
        assert_no_secret(hc.token, _json.dumps(api.request_log(seq)), d.output())
        _no_secret_in_events(api, hc.token)


# --- 6. the hcloud endpoint: no user part echoed, the position named ----------

@pytest.mark.parametrize("endpoint, why", [
    ("https://admin:hunter2-hcloud-pass@api.example/v1", "user part"),
    ("http://admin:hunter2-hcloud-pass@192.0.2.1/v1", "user part"),
    ("ftp://admin:hunter2-hcloud-pass@api.example/v1", "not an http:// or https:// URL"),
])
def test_hcloud_endpoint_errors_name_the_position_not_the_password(api, tmp, endpoint, why):
    with open(os.path.join(tmp, "token"), "w") as f:
        f.write("a-valid-looking-token\n")
    cfg = os.path.join(tmp, "cloud.yaml")
    with open(cfg, "w") as f:
        f.write("hcloud:\n  tokenFile: token\n  endpoint: \"%s\"\n" % endpoint)
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="system:cloud-controller-manager",
                              groups=(), tls_server_name="kubernetes")
    for extra in (["--validate"], []):
        r = run(["--kubeconfig", kc, "--cloud-provider=hcloud", "--cloud-config", cfg,
                 "--secure-port=0", "--leader-elect=false"] + extra, timeout=30)
        assert r.returncode != 0, r.stderr
        out = r.stdout + r.stderr
        # FILE:LINE:COL of the value, like every other cloud-config error
        assert cfg + ":3:13:" in out, out
        assert why in out and "[redacted]@" in out, out
        assert_no_secret("hunter2-hcloud-pass", out)
        assert "admin:" not in out, out
