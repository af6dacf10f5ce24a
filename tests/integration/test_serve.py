"""The HTTPS serving endpoint (drv_serve) against the fake API server:
probes without credentials, /metrics behind TokenReview and
SubjectAccessReview, the certificate served, and clients that misbehave."""

import http.client
import json
import os
import signal
import socket
import ssl
import struct
import subprocess
import tempfile
import time

import pytest
import yaml

from conftest import ROOT, driver_path, free_port

import pki

CCM_USER = "system:cloud-controller-manager"
RBAC_YAML = os.path.join(ROOT, "static-pod", "rbac.yaml")
METRICS_TOKEN = "metrics-reader-token-0123456789"
OTHER_TOKEN = "unauthorized-user-token-0123456789"
BAD_TOKEN = "not-a-known-token-0123456789"
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SARS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"




def insecure_ctx():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


class Serve(object):
    """drv_serve running in the background."""

    def __init__(self, kubeconfig, args, port=None, host="127.0.0.1"):
        self.host = host
        self.port = free_port(host) if port is None else port
        argv = [driver_path("drv_serve"), kubeconfig] + list(args)
        if not any(a.startswith("--secure-port") for a in args):
            argv.append("--secure-port=%d" % self.port)
        if not any(a.startswith("--bind-address") for a in args):
            argv.append("--bind-address=%s" % host)
        fd, self.err_path = tempfile.mkstemp(prefix="drv-serve-", suffix=".log")
        self.err = os.fdopen(fd, "w")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, text=True)
        line = self.proc.stdout.readline()
        if not line:
            rc, _, err = self.stop()
            raise AssertionError("drv_serve exited %s saying nothing:\n%s" % (rc, err))
        self.first = json.loads(line)

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rest = self.proc.stdout.read()
        self.err.close()
        err = self.stderr()
        os.unlink(self.err_path)
        return self.proc.returncode, rest, err

    def conn(self, ctx=None, timeout=10):
        return http.client.HTTPSConnection(self.host, self.port, context=ctx or insecure_ctx(),
                                           timeout=timeout)

    def get(self, path, token=None, method="GET", conn=None):
        c = conn or self.conn()
        headers = {"Authorization": "Bearer " + token} if token else {}
        c.request(method, path, headers=headers)
        r = c.getresponse()
        body = r.read().decode("utf-8", "replace")
        if conn is None:
            c.close()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), body


@pytest.fixture
def cluster(api, tmp):
    """The fake API server with static-pod/rbac.yaml applied, a kubeconfig for
    bootccm's own identity, and tokens for a metrics reader and for a user
    without rights."""
    with open(RBAC_YAML) as f:
        for doc in yaml.safe_load_all(f):
            if doc:
                api.create_object(doc)
    api.create_object({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "metrics-reader"},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})
    api.create_object({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "metrics-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "prometheus",
                      "namespace": "monitoring"}]})
    api.add_token(METRICS_TOKEN, "system:serviceaccount:monitoring:prometheus",
                  ["system:serviceaccounts", "system:serviceaccounts:monitoring"])
    api.add_token(OTHER_TOKEN, "jane")
    api.kubeconfig = os.path.join(tmp, "bootccm.conf")
    api.write_kubeconfig(api.kubeconfig, user=CCM_USER, groups=(),
                         tls_server_name="kubernetes")
    return api


@pytest.fixture
def serve(cluster):
    started = []

    def start(*args, **kw):
        s = Serve(kw.pop("kubeconfig", cluster.kubeconfig), args, **kw)
        started.append(s)
        return s

    yield start
    for s in started:
        rc, out, err = s.stop()
        assert "ERROR: AddressSanitizer" not in err, err
        assert "WARNING: ThreadSanitizer" not in err, err
        assert "runtime error:" not in err, err
        for t in (METRICS_TOKEN, OTHER_TOKEN, BAD_TOKEN):
            assert t not in err, "a token reached the log"
        if s.first.get("event") == "serving":
            assert rc == 0, "drv_serve exited %s:\n%s" % (rc, err)
            assert '"event":"stopped"' in out


def reviews(api, since, n=0):
    """The reviews logged since seq. The fake logs a request once it has
    answered it, so bootccm can answer its client before the review that
    decided it is logged: with n, wait (up to 5 s) for n of them."""
    end = time.monotonic() + 5
    while True:
        got = [(e["path"], e["user"], e["code"]) for e in api.request_log(since=since)
               if e["path"] in (TOKEN_REVIEWS, SARS)]
        if len(got) >= n or time.monotonic() > end:
            return got
        time.sleep(0.02)


# ---------------------------------------------------------------- probes


def test_probes_answer_without_credentials(serve, cluster):
    s = serve()
    assert s.first == {"event": "serving", "port": s.port}
    seq = cluster.log_seq()
    for path in ("/healthz", "/livez", "/readyz"):
        code, hdrs, body = s.get(path)
        assert (code, body) == (200, "ok"), path
        assert hdrs["content-type"] == "text/plain; charset=utf-8"
        assert hdrs["x-content-type-options"] == "nosniff"
    assert s.get("/healthz?verbose")[2] == \
        "[+]ping ok\n[+]leaderElection ok\nhealthz check passed\n"
    assert s.get("/livez?verbose")[2] == "[+]ping ok\nlivez check passed\n"
    assert s.get("/readyz?verbose")[2] == \
        "[+]ping ok\n[+]leaderElection ok\n[+]informer-sync ok\nreadyz check passed\n"
    code, hdrs, body = s.get("/healthz", method="HEAD")
    assert (code, hdrs["content-length"], body) == (200, "2", "")
    # probes never reach the API server
    assert reviews(cluster, seq) == []


def test_readyz_fails_until_the_check_passes(serve):
    t0 = time.monotonic()
    s = serve("--ready-after=1.5", "-v=2")
    code, _, body = s.get("/readyz")
    assert code == 500
    assert body == ("[+]ping ok\n[+]leaderElection ok\n"
                    "[-]informer-sync failed: reason withheld\nreadyz check failed\n")
    assert s.get("/healthz")[:3:2] == (200, "ok")
    deadline = time.monotonic() + 10
    while s.get("/readyz")[0] != 200:
        assert time.monotonic() < deadline, "/readyz never became ready"
        time.sleep(0.1)
    assert time.monotonic() - t0 >= 1.4
    # the reason went to the log only
    assert "informer-sync: caches not synced yet" in s.stderr()
    assert s.get("/readyz")[2] == "ok"


def test_failing_health_check(serve):
    s = serve("--unhealthy", "-v=2")
    code, _, body = s.get("/healthz")
    assert code == 500
    assert body == ("[+]ping ok\n[-]leaderElection failed: reason withheld\n"
                    "healthz check failed\n")
    assert "renewed" not in body
    assert s.get("/healthz?exclude=leaderElection")[:3:2] == (200, "ok")
    assert s.get("/livez")[0] == 200
    assert s.get("/readyz")[0] == 500
    # a single check needs authorization, and then tells its reason
    assert s.get("/healthz/leaderElection")[0] == 401
    assert "the lease was not renewed in time" in s.stderr()


# ---------------------------------------------------------------- /metrics


def test_metrics_without_a_token_is_401(serve, cluster):
    s = serve()
    seq = cluster.log_seq()
    code, hdrs, body = s.get("/metrics")
    assert code == 401
    assert hdrs["content-type"] == "application/json"
    assert json.loads(body) == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                "status": "Failure", "message": "Unauthorized",
                                "reason": "Unauthorized", "code": 401}
    # a scheme other than Bearer is no token either
    c = s.conn()
    c.request("GET", "/metrics", headers={"Authorization": "Basic YTpi"})
    assert c.getresponse().status == 401
    assert reviews(cluster, seq) == []


def test_metrics_with_a_rejected_token_is_401(serve, cluster):
    s = serve()
    seq = cluster.log_seq()
    code, _, body = s.get("/metrics", BAD_TOKEN)
    assert code == 401
    assert json.loads(body)["reason"] == "Unauthorized"
    # reviewed once, with bootccm's own identity; no authorization asked
    assert reviews(cluster, seq, 1) == [(TOKEN_REVIEWS, CCM_USER, 201)]
    review = [e for e in cluster.request_log(since=seq) if e["path"] == TOKEN_REVIEWS][0]
    assert review["body"]["kind"] == "TokenReview"
    assert review["body"]["spec"] == {"token": BAD_TOKEN}
    # the rejection is cached
    seq = cluster.log_seq()
    assert s.get("/metrics", BAD_TOKEN)[0] == 401
    assert reviews(cluster, seq) == []


def test_metrics_for_an_unauthorized_user_is_403(serve, cluster):
    s = serve()
    seq = cluster.log_seq()
    code, hdrs, body = s.get("/metrics", OTHER_TOKEN)
    assert code == 403
    assert hdrs["content-type"] == "application/json"
    st = json.loads(body)
    assert st["message"] == 'forbidden: User "jane" cannot get path "/metrics"'
    assert (st["reason"], st["code"], st["details"]) == ("Forbidden", 403, {})
    assert reviews(cluster, seq, 2) == [(TOKEN_REVIEWS, CCM_USER, 201), (SARS, CCM_USER, 201)]
    sar = [e for e in cluster.request_log(since=seq) if e["path"] == SARS][0]["body"]
    assert sar["spec"]["user"] == "jane"
    assert sar["spec"]["groups"] == ["system:authenticated"]
    assert sar["spec"]["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}
    # the denial is cached too
    seq = cluster.log_seq()
    assert s.get("/metrics", OTHER_TOKEN)[0] == 403
    assert reviews(cluster, seq) == []


def test_metrics_for_an_authorized_token(serve, cluster):
    s = serve("-v=9")
    s.get("/healthz")
    seq = cluster.log_seq()
    code, hdrs, body = s.get("/metrics", METRICS_TOKEN)
    assert code == 200, body
    assert hdrs["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert reviews(cluster, seq, 2) == [(TOKEN_REVIEWS, CCM_USER, 201), (SARS, CCM_USER, 201)]
    sar = [e for e in cluster.request_log(since=seq) if e["path"] == SARS][0]["body"]
    assert sar["spec"]["user"] == "system:serviceaccount:monitoring:prometheus"
    assert sar["spec"]["groups"] == ["system:serviceaccounts",
                                     "system:serviceaccounts:monitoring",
                                     "system:authenticated"]
    # bootccm_build_info is main's (tests/e2e/test_daemon.py checks it)
    lines = body.splitlines()
    assert "# TYPE bootccm_http_requests_total counter" in lines
    assert 'bootccm_http_requests_total{path="/healthz",code="200"} 1' in lines
    # within the cache lifetimes a second scrape asks the API server nothing
    seq = cluster.log_seq()
    code, _, body = s.get("/metrics", METRICS_TOKEN)
    assert code == 200
    assert 'bootccm_http_requests_total{path="/metrics",code="200"} 1' in body.splitlines()
    assert reviews(cluster, seq) == []
    # the user is named in the log, the token never (checked at teardown)
    assert "system:serviceaccount:monitoring:prometheus" in s.stderr()


def test_keep_alive_serves_several_requests(serve):
    s = serve()
    c = s.conn()
    for path in ("/healthz", "/livez", "/metrics", "/readyz"):
        code, _, _ = s.get(path, METRICS_TOKEN if path == "/metrics" else None, conn=c)
        assert code == 200
    c.close()


def test_always_allow_paths_flag(serve, cluster):
    s = serve("--authorization-always-allow-paths=/metrics, livez,/debug/*")
    seq = cluster.log_seq()
    code, _, body = s.get("/metrics")
    assert code == 200 and "bootccm_http_requests_total" in body
    assert s.get("/livez")[0] == 200
    assert s.get("/healthz")[0] == 401
    assert s.get("/readyz")[0] == 401
    # allowed but served by nothing
    assert s.get("/debug/pprof")[:3:2] == (404, "404 page not found\n")
    assert reviews(cluster, seq) == []
    # other paths go through the API server's authorization, where
    # system:public-info-viewer lets every user read /readyz
    assert s.get("/readyz", OTHER_TOKEN)[0] == 200
    assert s.get("/healthz/ping", OTHER_TOKEN)[0] == 403


def test_single_checks_and_unknown_paths(serve, cluster):
    cluster.create_object({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "jane-health"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "jane-health"},
        "subjects": [{"kind": "User", "name": "jane"}]})
    cluster.create_object({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "jane-health"},
        "rules": [{"nonResourceURLs": ["/healthz/*", "/readyz/*", "/nope"], "verbs": ["get"]}]})
    s = serve("--unhealthy")
    code, _, body = s.get("/healthz/leaderElection", OTHER_TOKEN)
    assert (code, body) == (500, "internal server error: the lease was not renewed in time\n")
    assert s.get("/readyz/informer-sync", OTHER_TOKEN)[:3:2] == (200, "ok")
    assert s.get("/healthz/ping", OTHER_TOKEN)[:3:2] == (200, "ok")
    assert s.get("/healthz/nothing", OTHER_TOKEN)[0] == 404
    assert s.get("/nope", OTHER_TOKEN)[:3:2] == (404, "404 page not found\n")
    # authorization first, as upstream: an unknown path is 401 or 403
    assert s.get("/nope")[0] == 401
    assert s.get("/other", OTHER_TOKEN)[0] == 403
    code, hdrs, _ = s.get("/healthz", method="POST")
    assert code == 405 and hdrs["allow"] == "GET, HEAD"


# ---------------------------------------------------------------- API server trouble


def test_api_server_unreachable(serve, cluster):
    s = serve()
    cluster.outage(30, "refuse")
    try:
        t0 = time.monotonic()
        code, _, body = s.get("/metrics", METRICS_TOKEN)
        assert code == 503
        assert json.loads(body)["reason"] == "ServiceUnavailable"
        assert time.monotonic() - t0 < 3
        assert s.get("/healthz")[:3:2] == (200, "ok")
        assert s.alive()
    finally:
        cluster.end_outage()
    # nothing was cached for the failure: once the pause after a review
    # without an answer is over, the same token works
    deadline = time.monotonic() + 5
    while s.get("/metrics", METRICS_TOKEN)[0] != 200:
        assert time.monotonic() < deadline, "/metrics never recovered"
        time.sleep(0.2)


def test_api_server_errors(serve, cluster):
    s = serve()
    cluster.inject_fault(TOKEN_REVIEWS, status=500, count=1)
    assert s.get("/metrics", METRICS_TOKEN)[0] == 503
    cluster.inject_fault(SARS, status=429, count=1, retry_after=1)
    assert s.get("/metrics", METRICS_TOKEN)[0] == 503
    assert s.get("/metrics", METRICS_TOKEN)[0] == 200


def test_slow_api_server_is_bounded(serve, cluster):
    """A hung API server holds the serving thread one review timeout (5 s),
    then reviews fail at once for a while: requests queued behind it do not
    hold the probes one timeout each."""
    s = serve()
    cluster.inject_fault(TOKEN_REVIEWS, delay=8.0, count=None)
    conns = [s.conn() for _ in range(3)]
    probe = s.conn()
    # one answer on each connection first: the server's side of every
    # handshake is done before it is held up
    for c in conns + [probe]:
        assert s.get("/livez", conn=c)[0] == 200
    t0 = time.monotonic()
    for c in conns:
        c.request("GET", "/metrics", headers={"Authorization": "Bearer " + METRICS_TOKEN})
    time.sleep(0.2)   # the first review is under way
    assert s.get("/healthz", conn=probe)[:3:2] == (200, "ok")
    assert 4 < time.monotonic() - t0 < 6.5
    for c in conns:
        r = c.getresponse()
        assert r.status == 503
        assert json.loads(r.read())["reason"] == "ServiceUnavailable"
    seq = cluster.log_seq()
    t0 = time.monotonic()
    assert s.get("/metrics", METRICS_TOKEN)[0] == 503
    assert time.monotonic() - t0 < 0.5
    assert reviews(cluster, seq) == []
    cluster.clear_faults()
    deadline = time.monotonic() + 5
    while s.get("/metrics", METRICS_TOKEN)[0] != 200:
        assert time.monotonic() < deadline, "/metrics never recovered"
        time.sleep(0.2)


def test_own_identity_without_rights(serve, cluster, tmp):
    """Without create on tokenreviews bootccm cannot tell: a 500, not a 401."""
    kc = os.path.join(tmp, "norights.conf")
    cluster.write_kubeconfig(kc, user="someone-else", groups=(), tls_server_name="kubernetes")
    s = serve("-v=2", kubeconfig=kc)
    code, _, body = s.get("/metrics", METRICS_TOKEN)
    assert code == 500
    assert json.loads(body)["reason"] == "InternalError"
    assert "tokenreviews" in s.stderr() and "forbidden" in s.stderr()


def test_serves_before_the_api_server_exists(tmp, api):
    """Probes answer while nothing listens at the kubeconfig's server."""
    kc = os.path.join(tmp, "gone.conf")
    api.write_kubeconfig(kc, user=CCM_USER, groups=(), tls_server_name="kubernetes",
                         server="https://127.0.0.1:%d" % free_port())
    s = Serve(kc, ["--ready-after=30"])
    try:
        assert s.get("/healthz")[:3:2] == (200, "ok")
        assert s.get("/readyz")[0] == 500
        assert s.get("/metrics", METRICS_TOKEN)[0] == 503
    finally:
        rc, _, err = s.stop()
    assert rc == 0, err


# ---------------------------------------------------------------- TLS


def peer_cert(host, port):
    with socket.create_connection((host, port), timeout=5) as raw:
        with insecure_ctx().wrap_socket(raw) as t:
            return t.getpeercert(binary_form=True), t.version()


def decode_cert(der, tmp):
    path = os.path.join(tmp, "served.pem")
    with open(path, "w") as f:
        f.write(ssl.DER_cert_to_PEM_cert(der))
    return path, ssl._ssl._test_decode_cert(path)


def test_self_signed_certificate(serve, tmp):
    s = serve()
    der, version = peer_cert("127.0.0.1", s.port)
    assert version == "TLSv1.3"
    path, cert = decode_cert(der, tmp)
    host = socket.gethostname()
    assert dict(x[0] for x in cert["subject"])["commonName"] == host
    assert cert["subject"] == cert["issuer"]
    sans = cert["subjectAltName"]
    for want in (("DNS", host), ("DNS", "localhost"), ("IP Address", "127.0.0.1"),
                 ("IP Address", "0:0:0:0:0:0:0:1")):
        assert want in sans, sans
    days = (ssl.cert_time_to_seconds(cert["notAfter"]) -
            ssl.cert_time_to_seconds(cert["notBefore"])) / 86400
    assert 364 <= days <= 367
    text = subprocess.run(["openssl", "x509", "-noout", "-text", "-in", path],
                          capture_output=True, text=True, check=True).stdout
    assert "id-ecPublicKey" in text and "prime256v1" in text
    assert "ecdsa-with-SHA256" in text
    # a client that pins the served certificate verifies both names
    ctx = ssl.create_default_context(cafile=path)
    for name in ("localhost", "127.0.0.1"):
        with socket.create_connection(("127.0.0.1", s.port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname=name):
                pass
    with pytest.raises(ssl.SSLCertVerificationError):
        with socket.create_connection(("127.0.0.1", s.port), timeout=5) as raw:
            ctx.wrap_socket(raw, server_hostname="example.com")
    # TLS 1.2 is accepted too
    ctx12 = insecure_ctx()
    ctx12.maximum_version = ssl.TLSVersion.TLSv1_2
    with socket.create_connection(("127.0.0.1", s.port), timeout=5) as raw:
        with ctx12.wrap_socket(raw) as t:
            assert t.version() == "TLSv1.2"
    # a new key and certificate at every start
    s2 = serve()
    assert peer_cert("127.0.0.1", s2.port)[0] != der


def test_given_certificate(serve, tmp):
    d = os.path.join(tmp, "pki")
    ca = pki.make_ca(d, cn="serving-ca")
    pair = pki.make_server_cert(d, ca, "serving", ["DNS:localhost", "IP:127.0.0.1"],
                                cn="bootccm")
    s = serve("--tls-cert-file=" + pair.cert, "--tls-private-key-file=" + pair.key)
    with open(pair.cert) as f:
        want = ssl.PEM_cert_to_DER_cert(f.read())
    assert peer_cert("127.0.0.1", s.port)[0] == want
    ctx = ssl.create_default_context(cafile=ca.cert)
    c = s.conn(ctx=ctx)
    c.request("GET", "/healthz")
    assert c.getresponse().status == 200


def test_certificate_errors(serve, tmp):
    d = os.path.join(tmp, "pki")
    ca = pki.make_ca(d, cn="serving-ca")
    pair = pki.make_server_cert(d, ca, "serving", ["DNS:localhost"])
    other = pki.make_server_cert(d, ca, "other", ["DNS:localhost"])
    s = serve("--tls-cert-file=" + pair.cert, "--tls-private-key-file=" + other.key)
    assert s.first["event"] == "error" and s.first["code"] == "tls failure"
    assert "does not match" in s.first["err"]
    s = serve("--tls-cert-file=" + pair.key, "--tls-private-key-file=" + pair.key)
    assert s.first["event"] == "error"
    assert "--tls-cert-file " + pair.key in s.first["err"]
    s = serve("--tls-cert-file=" + pair.cert)
    assert s.first["event"] == "error"
    assert "must be given together" in s.first["err"]
    s = serve("--tls-cert-file=" + pair.cert, "--tls-private-key-file=/nonexistent")
    assert s.first["event"] == "error"
    assert "/nonexistent: No such file or directory" in s.first["err"]


# ---------------------------------------------------------------- listening


def listening_sockets(pid):
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                parts = line.split()
                if parts[3] == "0A" and parts[9] in inodes:
                    found.append(parts[1])
    return found


def test_secure_port_zero_does_not_listen(serve):
    s = serve("--secure-port=0")
    assert s.first == {"event": "serving", "port": 0}
    assert listening_sockets(s.proc.pid) == []
    s2 = serve()
    assert len(listening_sockets(s2.proc.pid)) == 1


def test_ipv6_loopback(serve):
    s = serve(host="::1")
    assert s.get("/healthz")[:3:2] == (200, "ok")
    der = peer_cert("::1", s.port)[0]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", s.port), timeout=2).close()
    assert der


def test_unspecified_address_serves_both_families(serve):
    port = free_port("::")
    s = serve("--bind-address=0.0.0.0", port=port)
    for host in ("127.0.0.1", "::1"):
        c = http.client.HTTPSConnection(host, port, context=insecure_ctx(), timeout=5)
        c.request("GET", "/livez")
        assert c.getresponse().status == 200
        c.close()


def test_bind_errors(serve):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        s = serve(port=taken.getsockname()[1])
        assert s.first["event"] == "error"
        # glibc says "Address already in use", musl "Address in use"
        assert s.first["err"].startswith("cannot listen on 127.0.0.1:%d: Address "
                                         % taken.getsockname()[1])
        assert s.first["err"].endswith("in use")
    s = serve("--bind-address=localhost")
    assert s.first["event"] == "error"
    assert s.first["err"] == '--bind-address "localhost" is not an IP address'


# ---------------------------------------------------------------- misbehaving clients


def tls_socket(port, host="127.0.0.1"):
    raw = socket.create_connection((host, port), timeout=5)
    return insecure_ctx().wrap_socket(raw)


def reset(sock):
    """Close with a TCP reset instead of a FIN."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def raw_exchange(port, data):
    with tls_socket(port) as t:
        t.sendall(data)
        out = b""
        while True:
            chunk = t.recv(65536)
            if not chunk:
                break
            out += chunk
    return out.decode("utf-8", "replace")


def test_silent_and_aborting_clients(serve):
    s = serve()
    silent = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(3)]
    half_hello = socket.create_connection(("127.0.0.1", s.port))
    half_hello.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
    partial = tls_socket(s.port)
    partial.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthor")
    t0 = time.monotonic()
    assert s.get("/healthz")[:3:2] == (200, "ok")
    assert time.monotonic() - t0 < 1
    # clients that go away mid-handshake, mid-request, or before reading
    reset(partial)
    reset(half_hello)
    for _ in range(20):
        t = tls_socket(s.port)
        t.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        reset(t)
        raw = socket.create_connection(("127.0.0.1", s.port))
        raw.sendall(b"\x16\x03\x01\x00")
        reset(raw)
    for c in silent:
        reset(c)
    t0 = time.monotonic()
    assert s.get("/livez")[0] == 200
    assert time.monotonic() - t0 < 1
    assert s.alive()


def test_more_silent_clients_than_slots(serve):
    s = serve()
    silent = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(48)]
    time.sleep(0.2)
    t0 = time.monotonic()
    assert s.get("/healthz")[:3:2] == (200, "ok")
    assert time.monotonic() - t0 < 1
    for c in silent:
        c.close()


def test_bad_requests(serve):
    s = serve()
    out = raw_exchange(s.port, b"GARBAGE\r\n\r\n")
    assert out.startswith("HTTP/1.1 400 Bad Request\r\n")
    assert "Connection: close\r\n" in out
    assert out.endswith("400 Bad Request: malformed HTTP request")
    out = raw_exchange(s.port, b"GET / HTTP/1.1\r\n\r\n")
    assert out.endswith("400 Bad Request: missing required Host header")
    out = raw_exchange(s.port, b"GET / HTTP/2.0\r\nHost: x\r\n\r\n")
    assert out.startswith("HTTP/1.1 505 HTTP Version Not Supported\r\n")
    out = raw_exchange(s.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 20000)
    assert out.startswith("HTTP/1.1 431 Request Header Fields Too Large\r\n")
    # pipelined requests are answered in order; Connection: close ends it
    out = raw_exchange(s.port, b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n"
                       b"GET /healthz?verbose HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert out.count("HTTP/1.1 200 OK\r\n") == 2
    assert out.index("\r\n\r\nok") < out.index("healthz check passed")
    # HTTP/1.0 closes after one answer
    out = raw_exchange(s.port, b"GET /healthz HTTP/1.0\r\n\r\n")
    assert out.startswith("HTTP/1.1 200 OK\r\n") and out.endswith("\r\n\r\nok")
    assert s.get("/healthz")[0] == 200
