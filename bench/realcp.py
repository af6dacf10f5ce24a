"""realcp.py - the real control plane behind the benchmarks' `--apiserver
real` mode (bench/node_burst.py, bench/lb_burst.py): etcd, kube-apiserver
and kube-controller-manager of tests/k8s/controlplane.py, static-pod/rbac.yaml
applied as shipped, and kwok keeping every Node labelled type=kwok alive with
the project's stages (tests/k8s/kwok-stages/: Ready and heartbeats, never an
address, so a Node's addresses are bootccm's work).

    with RealAPI() as api:
        api.watch("/api/v1/nodes", on_event)     # on_event(t, type, obj)
        api.create_all("/api/v1/nodes", nodes)   # as the admin, 8 at a time
        n0 = api.writes_seen(USER)
        ...
        api.wait_quiet(USER, 1.0, 60)
        log = api.request_log(USER, n0)          # the fake's request log shape

Times are stamped as the watch delivers the events (wall clock, strictly
increasing in the order of the events); writes come from the real audit log
(cp.writes), reshaped like the fake API server's request log so that the
benchmarks' analyses read either."""

import concurrent.futures
import http.client
import json
import os
import queue
import re
import ssl
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "common"))
sys.path.insert(0, os.path.join(ROOT, "tests", "k8s"))

from controlplane import (REQUEST_TIMEOUT_S, SERVING_NAME, ControlPlane,  # noqa: E402
                          _connect)

KWOK_LABELS = {"type": "kwok"}   # controlplane.KWOK_SELECTOR
# one /24 a Node: 16,384 Nodes (the tests' 10.244.0.0/16 holds 256, and
# kube-controller-manager would write a CIDRNotAvailable Event for each other)
POD_CIDR = "100.64.0.0/10"
RBAC_TIMEOUT_S = 30
CREATE_THREADS = 8


class _Conn(object):
    """Requests as one identity over a kept-alive HTTPS connection per
    thread (a TLS handshake with RSA client certificates per request would
    cost the bench more CPU than the requests)."""

    def __init__(self, cp, identity):
        base = cp.identities[identity][0]
        self.port = cp.port
        self.ctx = ssl.create_default_context(cafile=cp.pki.path("ca.crt"))
        self.ctx.load_cert_chain(cp.pki.path(base + ".crt"), cp.pki.path(base + ".key"))
        self.local = threading.local()

    def request(self, method, path, body=None):
        data = json.dumps(body) if body is not None else None
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        for attempt in (0, 1):
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = self.local.conn = _connect(self.port, self.ctx, SERVING_NAME,
                                                  REQUEST_TIMEOUT_S)
            try:
                conn.request(method, path, body=data, headers=headers)
                r = conn.getresponse()
                raw = r.read()
                return r.status, json.loads(raw) if raw else None
            except (OSError, http.client.HTTPException):
                conn.close()
                self.local.conn = None
                if attempt:
                    raise
        return None   # not reached


class _Watch(object):
    """A watch on the collection PATH from resourceVersion RV, calling
    on_event(t, type, obj) for each event, t the wall clock when its line
    arrived (strictly increasing). One thread only reads and stamps lines
    (kube-apiserver closes a watch whose client falls behind), another
    decodes them; a watch the server ends is restarted from the last
    resourceVersion read, as a reflector does (counted in restarts)."""

    RV = re.compile(rb'"resourceVersion":"([0-9]+)"')

    def __init__(self, api, path, rv, on_event):
        self.api, self.path, self.rv, self.on_event = api, path, rv, on_event
        self.established = threading.Event()
        self.error = None
        self.conn = None
        self.stopping = False
        self.restarts = 0
        self.lines = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.decoder = threading.Thread(target=self._decode, daemon=True)

    def start(self):
        self.reader.start()
        self.decoder.start()

    def _read(self):
        last = 0.0
        try:
            while not self.stopping:
                self.conn = _connect(self.api.cp.port, self.api.admin.ctx, SERVING_NAME, None)
                self.conn.request("GET", "%s?watch=1&resourceVersion=%s&timeoutSeconds=7200"
                                  % (self.path, self.rv),
                                  headers={"Accept": "application/json"})
                r = self.conn.getresponse()
                if r.status != 200:
                    raise RuntimeError("watch %s: %s %s" % (self.path, r.status,
                                                            r.read()[:300]))
                self.established.set()
                for line in r:
                    t = max(time.time(), last + 1e-6)
                    last = t
                    m = self.RV.search(line)   # the object's own, first in its metadata
                    if m:
                        self.rv = m.group(1).decode()
                    self.lines.put((t, line))
                self.conn.close()
                if not self.stopping:
                    self.restarts += 1
        except Exception as e:  # noqa: BLE001  (reported by RealAPI.check())
            if not self.stopping:
                self.error = e
        finally:
            self.established.set()
            self.lines.put(None)

    def _decode(self):
        while True:
            item = self.lines.get()
            if item is None:
                return
            t, line = item
            try:
                ev = json.loads(line)
                if ev["type"] == "ERROR":
                    raise RuntimeError("watch %s: %s" % (self.path, ev["object"]))
                self.on_event(t, ev["type"], ev["object"])
            except Exception as e:  # noqa: BLE001
                if not self.stopping:
                    self.error = e

    def idle(self):
        """Every line read so far has been decoded."""
        return self.lines.empty()

    def stop(self):
        self.stopping = True
        try:
            if self.conn and self.conn.sock:
                self.conn.sock.shutdown(2)
        except OSError:
            pass


class RealAPI(object):
    """The control plane, RBAC applied, kwok running; stopped at exit."""

    def __init__(self, bindir=None, cp=None):
        """A control plane of its own, or CP (started, e.g. a test's), which
        is left running at exit."""
        self.own = cp is None
        self.cp = ControlPlane(bindir, pod_cidr=POD_CIDR) if self.own else cp
        self.watches = []
        self._audit = (0, 0)   # (bytes read, lines of USER seen)

    def __enter__(self):
        if self.own:
            self.cp.start()
        try:
            self.cp.kubectl("apply", "-f", os.path.join(ROOT, "static-pod", "rbac.yaml"))
            if "kwok" not in self.cp.procs:
                self.cp.start_kwok()
            self.admin = _Conn(self.cp, "admin")
            ccm = _Conn(self.cp, "cloud-controller-manager")
            end = time.time() + RBAC_TIMEOUT_S   # the authorizer's cache has the rules
            while ccm.request("GET", "/api/v1/nodes?limit=1")[0] != 200:
                if time.time() > end:
                    raise RuntimeError("static-pod/rbac.yaml not in force after %ss"
                                       % RBAC_TIMEOUT_S)
                time.sleep(0.1)
        except BaseException:
            if self.own:
                self.cp.stop()
            raise
        return self

    def __exit__(self, *exc):
        for w in self.watches:
            w.stop()
        if self.own:
            self.cp.stop()

    def kubeconfig(self):
        """bootccm's kubeconfig: system:cloud-controller-manager."""
        return self.cp.kubeconfig("cloud-controller-manager")

    def watch(self, path, on_event):
        """Watch the collection PATH from now on; returns once the watch is
        established."""
        status, body = self.admin.request("GET", path + "?limit=1")
        if status != 200:
            raise RuntimeError("list %s: %s %s" % (path, status, body))
        w = _Watch(self, path, body["metadata"]["resourceVersion"], on_event)
        w.start()
        w.established.wait(REQUEST_TIMEOUT_S)
        self.watches.append(w)
        self.check()
        return w

    def watch_restarts(self):
        return sum(w.restarts for w in self.watches)

    def check(self):
        for w in self.watches:
            if w.error:
                raise RuntimeError(str(w.error))

    def create_all(self, path, objs, threads=CREATE_THREADS):
        """POST every object of OBJS to PATH as the admin, THREADS at a time."""
        def create(obj):
            status, body = self.admin.request("POST", path, obj)
            if status != 201:
                raise RuntimeError("create %s: %s %s" % (obj["metadata"]["name"], status,
                                                         body))
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(create, objs))

    def create(self, path, obj):
        self.create_all(path, [obj], 1)

    def proc_pids(self):
        """{name: pid} of etcd, kube-apiserver, kube-controller-manager, kwok."""
        return {k: p.pid for k, p in self.cp.procs.items()}

    def writes_seen(self, user):
        """How many writes of USER the audit log holds, read incrementally
        (only lines naming USER are decoded)."""
        off, count = self._audit
        key = '"username":"%s"' % user
        with open(self.cp.path("audit.log"), "rb") as f:
            f.seek(off)
            data = f.read()
        end = data.rfind(b"\n") + 1
        count += data[:end].decode(errors="replace").count(key)
        self._audit = (off + end, count)
        return count

    def wait_quiet(self, user, quiet_s, timeout_s):
        """Wait until the audit log has held no new write of USER for
        quiet_s; False if timeout_s passed first."""
        end = time.time() + timeout_s
        last, since = self.writes_seen(user), time.time()
        while time.time() < end:
            time.sleep(0.1)
            cur = self.writes_seen(user)
            if cur != last:
                last, since = cur, time.time()
            elif time.time() - since >= quiet_s:
                return True
        return False

    def request_log(self, user, skip=0):
        """USER's writes from the audit log after the first SKIP, in the
        shape of the fake API server's request log (user, verb, resource,
        subresource, name, code, time, body)."""
        out = []
        for e in self.cp.writes(user)[skip:]:
            ref = e.get("objectRef") or {}
            out.append({"user": user, "verb": e["verb"], "resource": ref.get("resource"),
                        "subresource": ref.get("subresource"), "name": ref.get("name"),
                        "namespace": ref.get("namespace"),
                        "code": (e.get("responseStatus") or {}).get("code"),
                        "time": e["stageTimestamp"], "body": e.get("requestObject"),
                        "path": e.get("requestURI"),
                        "received": e.get("requestReceivedTimestamp")})
        return out


def write_latency_ms(log, parse_time, percentile):
    """p50, p99 and max of how long kube-apiserver took to answer the
    writes of LOG other than Events (the audit entry's ResponseComplete
    stage less its request's arrival), in ms."""
    lat = [1000.0 * (parse_time(e["time"]) - parse_time(e["received"])) for e in log
           if e.get("received") and e.get("resource") != "events"]
    return {"p50": round(percentile(lat, 50), 1) if lat else None,
            "p99": round(percentile(lat, 99), 1) if lat else None,
            "max": round(max(lat), 1) if lat else None}
