"""The harness the end-to-end tests (tests/e2e/) and the integration tests
(tests/integration/) share: the binary under test (BOOTCCM, default
build/bootccm), the driver programs (BOOTCCM_DRIVERS, default
build/dev/drivers), the fake API server, a running daemon, and polling
helpers. Each suite's conftest.py re-exports all of it, so tests keep writing
`from conftest import ...`."""

import os
import random
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "fakes"))

import apiserver  # noqa: E402

__all__ = ["ROOT", "bootccm_path", "driver_path", "free_port", "https_get", "wait_until",
           "logged_all", "run", "Daemon", "rbac_objects", "load_rbac", "metrics_reader", "events_about",
           # fixtures
           "bootccm", "tmp", "api", "daemon"]


def bootccm_path():
    p = os.environ.get("BOOTCCM") or os.path.join(ROOT, "build", "bootccm")
    if not os.access(p, os.X_OK):
        raise RuntimeError("no bootccm binary at %s (set BOOTCCM or run make)" % p)
    return os.path.abspath(p)


def driver_path(name):
    """A driver program (tests/drivers/NAME.c) from BOOTCCM_DRIVERS (default
    build/dev/drivers): one module run against the fake API server."""
    d = os.environ.get("BOOTCCM_DRIVERS") or os.path.join(ROOT, "build", "dev", "drivers")
    p = os.path.join(d, name)
    if not os.access(p, os.X_OK):
        raise RuntimeError("no driver %s (run make dev tsan)" % p)
    return os.path.abspath(p)


def rbac_objects():
    """The objects of static-pod/rbac.yaml, the RBAC bootccm ships."""
    with open(os.path.join(ROOT, "static-pod", "rbac.yaml")) as f:
        return [o for o in yaml.safe_load_all(f) if o]


def load_rbac(srv, kinds=None):
    """Creates static-pod/rbac.yaml's objects (only those of the given kinds,
    when kinds is set) in the fake API server srv, as an admin applies it.
    Those already there are left as they are, so a test that starts a second
    program may load it again."""
    for o in rbac_objects():
        if kinds is not None and o["kind"] not in kinds:
            continue
        if srv.get_object(o["kind"].lower() + "s", o["metadata"]["name"],
                          namespace=o["metadata"].get("namespace", ""),
                          group="rbac.authorization.k8s.io") is None:
            srv.create_object(o)


def metrics_reader(srv, token, user="metrics-reader"):
    """Registers token for user and lets user get /metrics (a ClusterRole
    and its binding named after the user), as a Prometheus scraper is set
    up; returns token."""
    srv.add_token(token, user)
    srv.create_object({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                       "metadata": {"name": user},
                       "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})
    srv.create_object({"apiVersion": "rbac.authorization.k8s.io/v1",
                       "kind": "ClusterRoleBinding", "metadata": {"name": user},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                   "kind": "ClusterRole", "name": user},
                       "subjects": [{"kind": "User", "name": user,
                                     "apiGroup": "rbac.authorization.k8s.io"}]})
    return token


@pytest.fixture(scope="session")
def bootccm():
    return bootccm_path()


@pytest.fixture
def tmp(tmp_path):
    return str(tmp_path)


@pytest.fixture
def api():
    with apiserver.FakeAPIServer() as srv:
        yield srv


def free_port(host="127.0.0.1"):
    """A free port on host, below the ephemeral range when it can, so that no
    outgoing connection takes it while a test waits to listen on it."""
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low = int(f.read().split()[0])
    rng = random.Random()
    for _ in range(200):
        p = rng.randrange(10000, max(10001, low))
        with socket.socket(fam) as s:
            try:
                s.bind((host, p))
            except OSError:
                continue
            return p
    with socket.socket(fam) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def https_get(port, path, token=None, timeout=10):
    """(status, body) of GET https://127.0.0.1:PORT/PATH on bootccm's own
    serving port (its certificate is self-signed: not verified here)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request("https://127.0.0.1:%d%s" % (port, path))
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def wait_until(pred, timeout=10.0, what="condition", interval=0.05):
    """Poll pred until it returns something true (returned), or fail the
    test after timeout seconds naming what was awaited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))


def logged_all(api, timeout=10.0):
    """Wait until the fake API server has no connection open, and so has
    logged every request it answered: it logs a request after sending the
    answer, so a client can have its answer (and a test see the client's
    effect) before the entry is in the log. For after the clients have
    exited (a driver, a one-shot command), when none had a watch open: the
    fake notices a watcher gone only at its next write; returns api."""
    wait_until(lambda: not api._conns, timeout=timeout,
               what="the fake API server to finish its connections")
    return api


def run(args, timeout=30, env=None):
    """Run bootccm to completion; returns CompletedProcess with text output."""
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run([bootccm_path()] + list(args), capture_output=True,
                          text=True, timeout=timeout, env=e)


class Daemon(object):
    """bootccm running in the background, its stderr collected in a file;
    prefix: a command that runs it (unshare ...), or empty."""

    def __init__(self, args, env=None, prefix=()):
        self.log_path = tempfile.mktemp(prefix="bootccm-", suffix=".log")
        self.log = open(self.log_path, "w")
        self.result = None
        e = dict(os.environ)
        if env:
            e.update(env)
        self.proc = subprocess.Popen(list(prefix) + [bootccm_path()] + list(args),
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     env=e)

    def output(self):
        if self.result is not None:
            return self.result[1]
        with open(self.log_path) as f:
            return f.read()

    def wait_for(self, text, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output():
                return True
            if self.proc.poll() is not None:
                raise AssertionError("bootccm exited with %s before %r:\n%s"
                                     % (self.proc.returncode, text, self.output()))
            time.sleep(0.02)
        raise AssertionError("no %r within %ss:\n%s" % (text, timeout, self.output()))

    def alive(self):
        return self.proc.poll() is None

    def stop(self, timeout=10):
        if self.result is not None:
            return self.result
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        rc = self.proc.returncode
        out = self.output()
        os.unlink(self.log_path)
        self.result = (rc, out)
        return self.result


@pytest.fixture
def daemon():
    started = []

    def start(args, env=None, prefix=()):
        d = Daemon(args, env, prefix)
        started.append(d)
        return d

    yield start
    for d in started:
        rc, out = d.stop()
        # a sanitizer report or a crash fails the test that started it
        assert "ERROR: AddressSanitizer" not in out, out
        assert "runtime error:" not in out, out
        assert rc in (0, -signal.SIGTERM), "bootccm exited %s:\n%s" % (rc, out)


# The apiVersion of an Event's involvedObject, as upstream's recorder fills it
# from the object's reference.
EVENT_API_VERSIONS = {"Node": "v1", "Service": "v1",
                      "CertificateSigningRequest": "certificates.k8s.io/v1",
                      "Lease": "coordination.k8s.io/v1"}


def events_about(srv, kind=None, name=None, reason=None, namespace="default"):
    """The Events in namespace about an object of kind (any when None) named
    name (any when None) with reason (any when None); each one's
    involvedObject must carry the apiVersion of its kind."""
    out = []
    for e in srv.list_objects("events", namespace=namespace):
        io = e.get("involvedObject") or {}
        if ((kind is None or io.get("kind") == kind) and (name is None or io.get("name") == name)
                and (reason is None or e.get("reason") == reason)):
            assert io.get("apiVersion") == EVENT_API_VERSIONS.get(io.get("kind")), e
            out.append(e)
    return out
