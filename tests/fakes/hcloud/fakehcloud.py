#!/usr/bin/python3
"""Fake Hetzner Cloud API (v1) for tests: servers, load balancers, networks
and routes, actions, locations, server and load balancer types; bearer-token
auth, the project rate limit, pagination, fault injection, a request log.

Module:  with FakeHcloud(tokens=["t"]) as hc: ...   (hc.endpoint is the
         HCLOUD_ENDPOINT value, http://127.0.0.1:PORT/v1)
CLI:     fakehcloud.py [--port N] [--port-file F] [--token T] [--tls DIR] ...
See README.md beside this file for the full interface.
"""

import argparse
import datetime
import fnmatch
import http.server
import json
import os
import re
import signal
import socket
import ssl
import struct
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))  # tests/fakes: pki.py

import hclabels  # noqa: E402
import hcstate  # noqa: E402
from hcstate import ApiError  # noqa: E402

DEFAULT_TOKEN = "fake-hcloud-token-" + "0" * 46  # 64 characters, as real
MAX_PER_PAGE = 50
DEFAULT_PER_PAGE = 25
BODY_LIMIT = 1024 * 1024

FAULT_CODES = {400: "json_error", 401: "unauthorized", 403: "forbidden",
               404: "not_found", 405: "method_not_allowed", 409: "conflict",
               410: "deprecated_api_endpoint", 412: "resource_unavailable",
               422: "service_error", 423: "locked",
               429: "rate_limit_exceeded", 500: "server_error",
               502: "bad_gateway", 503: "unavailable", 504: "timeout"}


def _now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ")


def _dump(obj):
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


class Fault(object):
    """One fault-injection rule; see FakeHcloud.inject_fault."""

    _ids = 0
    _ids_lock = threading.Lock()

    def __init__(self, path="*", method=None, count=1, status=None,
                 code=None, message=None, delay=0.0, close=False,
                 reset=False, truncate=False, keep=None, body=None,
                 content_type="application/json", headers=None):
        with Fault._ids_lock:
            Fault._ids += 1
            self.id = Fault._ids
        self.path = path or "*"
        self.method = method.upper() if method else None
        self.count = count
        self.status = status
        self.code = code or (FAULT_CODES.get(status, "server_error")
                             if status else None)
        self.message = message
        self.delay = float(delay or 0)
        self.close = bool(close)
        self.reset = bool(reset)
        self.truncate = bool(truncate)
        self.keep = keep
        self.body = body
        self.content_type = content_type
        self.headers = dict(headers or {})
        self.hits = 0

    def matches(self, method, path):
        if self.count is not None and self.count <= 0:
            return False
        if self.method and self.method != method:
            return False
        return fnmatch.fnmatchcase(path, self.path)

    def to_dict(self):
        return {"id": self.id, "path": self.path, "method": self.method,
                "count": self.count, "status": self.status,
                "code": self.code, "message": self.message,
                "delay": self.delay, "close": self.close,
                "reset": self.reset, "truncate": self.truncate,
                "keep": self.keep, "hits": self.hits}


class RateLimiter(object):
    """The project's token bucket: `limit` requests, refilled by `refill`
    per second (the API: 3600 per hour, 1 per second)."""

    def __init__(self, limit=3600, refill=1.0, clock=time.time):
        self.clock = clock
        self.limit = int(limit)
        self.refill = float(refill)
        self.level = float(limit)
        self.t = clock()
        self.lock = threading.Lock()

    def _update(self):
        now = self.clock()
        self.level = min(float(self.limit),
                         self.level + (now - self.t) * self.refill)
        self.t = now
        return now

    def take(self):
        """(allowed, headers) for one request."""
        with self.lock:
            now = self._update()
            ok = self.level >= 1.0
            if ok:
                self.level -= 1.0
            return ok, self._headers(now)

    def peek(self):
        with self.lock:
            return self._headers(self._update())

    def _headers(self, now):
        missing = self.limit - self.level
        reset = now + (missing / self.refill if self.refill > 0 else 0)
        return {"RateLimit-Limit": str(self.limit),
                "RateLimit-Remaining": str(int(self.level)),
                "RateLimit-Reset": str(int(reset + 0.999))}

    def set(self, limit=None, remaining=None, refill=None):
        with self.lock:
            self._update()
            if limit is not None:
                self.limit = int(limit)
                self.level = min(self.level, float(self.limit))
            if refill is not None:
                self.refill = float(refill)
            if remaining is not None:
                self.level = float(max(0, min(int(remaining), self.limit)))


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-hcloud"
    sys_version = ""
    disable_nagle_algorithm = True

    def setup(self):
        self.timeout = self.server.fake.idle_timeout
        http.server.BaseHTTPRequestHandler.setup(self)
        self.server.fake._track(self.connection, True)

    def finish(self):
        try:
            http.server.BaseHTTPRequestHandler.finish(self)
        finally:
            self.server.fake._track(self.connection, False)

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        self.server.fake._handle(self)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_GET

    def send_raw(self, status, headers, body, keep=None):
        """Status line, headers, then body (or only `keep` bytes of it,
        after which the connection is closed)."""
        self.send_response_only(status)
        self.send_header("Date", self.date_time_string())
        for k, v in headers.items():
            self.send_header(k, v)
        if status != 204:
            self.send_header("Content-Length", str(len(body)))
        if keep is not None:
            self.send_header("Connection", "close")
        elif self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD" and status != 204:
            self.wfile.write(body if keep is None else body[:keep])
        self.wfile.flush()
        if keep is not None:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def reset(self):
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr, fake):
        self.fake = fake
        http.server.ThreadingHTTPServer.__init__(self, addr, _Handler)

    def get_request(self):
        sock, addr = self.socket.accept()
        if self.fake._ssl_ctx is not None:
            sock = self.fake._ssl_ctx.wrap_socket(
                sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request, client_address):
        pass


# path regex, {method: handler name}
_ROUTES = [(re.compile(p + "$"), m) for p, m in [
    (r"/servers", {"GET": "list_servers"}),
    (r"/servers/(\d+)", {"GET": "get_server", "PUT": "update_server",
                          "DELETE": "delete_server"}),
    (r"/servers/(\d+)/actions", {"GET": "res_actions"}),
    (r"/servers/(\d+)/actions/(\d+)", {"GET": "res_action"}),
    (r"/load_balancers", {"GET": "list_lbs", "POST": "create_lb"}),
    (r"/load_balancers/(\d+)", {"GET": "get_lb", "PUT": "update_lb",
                                "DELETE": "delete_lb"}),
    (r"/load_balancers/(\d+)/actions", {"GET": "res_actions"}),
    (r"/load_balancers/(\d+)/actions/(\d+)", {"GET": "res_action"}),
    (r"/load_balancers/(\d+)/actions/([a-z_]+)", {"POST": "lb_action"}),
    (r"/load_balancer_types", {"GET": "list_lb_types"}),
    (r"/load_balancer_types/(\d+)", {"GET": "get_lb_type"}),
    (r"/networks", {"GET": "list_networks"}),
    (r"/networks/(\d+)", {"GET": "get_network"}),
    (r"/networks/(\d+)/actions", {"GET": "res_actions"}),
    (r"/networks/(\d+)/actions/(\d+)", {"GET": "res_action"}),
    (r"/networks/(\d+)/actions/(add_route|delete_route)",
     {"POST": "route_action"}),
    (r"/actions", {"GET": "list_actions"}),
    (r"/actions/(\d+)", {"GET": "get_action"}),
    (r"/locations", {"GET": "list_locations"}),
    (r"/locations/(\d+)", {"GET": "get_location"}),
    (r"/server_types", {"GET": "list_server_types"}),
    (r"/server_types/(\d+)", {"GET": "get_server_type"}),
]]

_RES_KIND = {"servers": "server", "load_balancers": "load_balancer",
             "networks": "network"}


class FakeHcloud(object):
    """The fake API on http(s)://HOST:PORT/v1; see README.md."""

    def __init__(self, port=0, host="127.0.0.1", tokens=(DEFAULT_TOKEN,),
                 tls=False, state_dir=None, sans=(), rate_limit=3600,
                 rate_refill=1.0, action_seconds=0.0, legacy_datacenter=False,
                 max_routes=100, default_health="healthy", idle_timeout=60.0,
                 log_file=None, seed=None):
        self.host = host
        self.port = port
        self.tls = bool(tls)
        self.sans = list(sans)
        self._own_dir = state_dir is None
        self.state_dir = state_dir
        self.idle_timeout = idle_timeout
        self.state = hcstate.State(action_seconds=action_seconds,
                                   legacy_datacenter=legacy_datacenter,
                                   max_routes=max_routes,
                                   default_health=default_health)
        self.rate = RateLimiter(rate_limit, rate_refill)
        self._lock = threading.RLock()
        self._tokens = {}
        for t in tokens or ():
            self.add_token(t)
        self._faults = []
        self._log = []
        self._seq = 0
        self._log_path = log_file
        self._log_fp = None
        self._conns = set()
        self._stop = threading.Event()
        self._server = None
        self._thread = None
        self._ssl_ctx = None
        self.ca_file = None
        self.ca_pem = None
        self._seed = seed

    # -- lifecycle ---------------------------------------------------------

    def start(self):
        """Listen and serve; returns self."""
        if self.tls:
            self._make_tls()
        if self._seed:
            self.seed(self._seed)
        if self._log_path:
            self._log_fp = open(self._log_path, "a")
        self._server = _Server((self.host, self.port), self)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        name="fakehcloud", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Close the port and every connection; wake delayed requests."""
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(5)
        if self._log_fp:
            self._log_fp.close()
            self._log_fp = None
        if self._own_dir and self.state_dir:
            import shutil
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def __enter__(self):
        return self.start() if self._server is None else self

    def __exit__(self, *a):
        self.stop()

    def _make_tls(self):
        import pki
        if self.state_dir is None:
            self.state_dir = tempfile.mkdtemp(prefix="fakehcloud-")
        d = os.path.join(self.state_dir, "pki")
        ca = pki.load_ca(d) if os.path.exists(os.path.join(d, "ca.crt")) \
            else pki.make_ca(d, cn="fake-hcloud-ca")
        sans = ["IP:127.0.0.1", "DNS:localhost"] + self.sans
        cert = pki.make_server_cert(d, ca, "hcloud", sans, cn="fake-hcloud")
        self.ca_file = ca.cert
        with open(ca.cert) as f:
            self.ca_pem = f.read()
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(cert.cert, cert.key)
        ctx.set_alpn_protocols(["http/1.1"])
        self._ssl_ctx = ctx

    @property
    def url(self):
        return "%s://%s:%d" % ("https" if self.tls else "http", self.host,
                               self.port)

    @property
    def endpoint(self):
        """What HCLOUD_ENDPOINT / api_endpoint should be."""
        return self.url + "/v1"

    @property
    def token(self):
        """The first token (the default one unless tokens= was given)."""
        with self._lock:
            return next(iter(self._tokens), None)

    def _track(self, conn, add):
        with self._lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    # -- tokens, rate limit, switches ----------------------------------------

    def add_token(self, token, readonly=False):
        """Accept 'Authorization: Bearer <token>' (readonly: GET only, other
        methods get 401 token_readonly)."""
        with self._lock:
            self._tokens[token] = {"readonly": bool(readonly)}

    def remove_token(self, token):
        with self._lock:
            self._tokens.pop(token, None)

    def set_tokens(self, tokens):
        """Replace every token (e.g. a rotated one)."""
        with self._lock:
            self._tokens = {t: {"readonly": False} for t in tokens}

    def set_rate_limit(self, limit=None, remaining=None, refill=None):
        """Change the bucket: its size (RateLimit-Limit), what is left now,
        the refill per second."""
        self.rate.set(limit, remaining, refill)

    def set_legacy_datacenter(self, enabled=True):
        """Serve servers with the pre-2026-07 `datacenter` object."""
        with self.state.lock:
            self.state.legacy_datacenter = bool(enabled)

    def set_action_seconds(self, seconds):
        with self.state.lock:
            self.state.action_seconds = float(seconds)

    # -- state: seeding and inspection ----------------------------------------

    def add_server(self, **kw):
        return self.state.add_server(**kw)

    def update_server(self, server_id, **kw):
        return self.state.update_server(server_id, **kw)

    def remove_server(self, server_id):
        self.state.remove_server(server_id)

    def add_network(self, **kw):
        return self.state.add_network(**kw)

    def add_load_balancer(self, **kw):
        return self.state.add_load_balancer(**kw)

    def add_robot_ip(self, ip):
        self.state.add_robot_ip(ip)

    def set_load_balancer_type(self, name, **fields):
        """Change (or add) a load balancer type: max_targets, max_services,
        ...; returns it."""
        return self.state.set_lb_type(name, **fields)

    def set_target_health(self, load_balancer, listen_port, status,
                          server=None, ip=None):
        self.state.set_target_health(load_balancer, listen_port, status,
                                     server, ip)

    def seed(self, doc):
        """Create {"servers": [add_server kwargs], "networks": [...],
        "load_balancers": [...], "robot_ips": [...], "load_balancer_types":
        {name: fields}} (networks first, load balancers last)."""
        for n in doc.get("networks", []):
            self.add_network(**n)
        for s in doc.get("servers", []):
            self.add_server(**s)
        for ip in doc.get("robot_ips", []):
            self.add_robot_ip(ip)
        for name, fields in doc.get("load_balancer_types", {}).items():
            self.set_load_balancer_type(name, **fields)
        for lb in doc.get("load_balancers", []):
            self.add_load_balancer(**lb)

    def _read(self, fn, *a):
        with self.state.lock:
            self.state.advance()
            return fn(*a)

    def servers(self):
        """Every server as the API renders it."""
        return self._read(self.state.list_servers)

    def server(self, server_id):
        """One server as the API renders it, or None."""
        with self.state.lock:
            self.state.advance()
            if server_id not in self.state.servers:
                return None
            return self.state.render_server(server_id)

    def networks(self):
        return self._read(self.state.list_networks)

    def network(self, network_id):
        with self.state.lock:
            self.state.advance()
            if network_id not in self.state.networks:
                return None
            return self.state.render_network(network_id)

    def load_balancers(self):
        return self._read(self.state.list_lbs)

    def load_balancer(self, id_or_name):
        """One load balancer (by id or name) as the API renders it, or None."""
        with self.state.lock:
            self.state.advance()
            for lid, lb in self.state.lbs.items():
                if id_or_name in (lid, lb["name"]):
                    return self.state.render_lb(lid)
            return None

    def actions(self):
        with self.state.lock:
            self.state.advance()
            return [self.state.render_action(a)
                    for a in sorted(self.state.actions)]

    def action(self, action_id):
        with self.state.lock:
            self.state.advance()
            if action_id not in self.state.actions:
                return None
            return self.state.render_action(action_id)

    def script_action(self, command=None, seconds=None, error=None,
                      halfway=False, never=False, count=1):
        """See hcstate.State.script_action."""
        self.state.script_action(command, seconds, error, halfway, never,
                                 count)

    def clear_action_scripts(self):
        self.state.clear_action_scripts()

    def finish_action(self, action_id, error=None):
        self.state.finish_action(action_id, error)

    # -- faults --------------------------------------------------------------

    def inject_fault(self, path="*", method=None, count=1, status=None,
                     code=None, message=None, delay=0.0, close=False,
                     reset=False, truncate=False, keep=None, body=None,
                     content_type="application/json", headers=None):
        """The next `count` requests (None = every one) whose path (without
        the query; fnmatch pattern, e.g. "/v1/load_balancers/*") and method
        match get the fault; see README.md.  Returns the fault id."""
        f = Fault(path, method, count, status, code, message, delay, close,
                  reset, truncate, keep, body, content_type, headers)
        with self._lock:
            self._faults.append(f)
        return f.id

    def burst(self, status=503, count=3, path="*", method=None):
        """A burst of `count` error answers (a 5xx burst by default)."""
        return self.inject_fault(path=path, method=method, count=count,
                                 status=status)

    def clear_faults(self, fault_id=None):
        with self._lock:
            self._faults = [f for f in self._faults
                            if fault_id is not None and f.id != fault_id]

    def faults(self):
        with self._lock:
            return [f.to_dict() for f in self._faults]

    def _take_fault(self, method, path):
        with self._lock:
            for f in self._faults:
                if f.matches(method, path):
                    if f.count is not None:
                        f.count -= 1
                    f.hits += 1
                    return f
        return None

    # -- request log ----------------------------------------------------------

    def request_log(self, since=0):
        """Logged API requests with seq > since, oldest first."""
        with self._lock:
            return [dict(e) for e in self._log if e["seq"] > since]

    def log_seq(self):
        with self._lock:
            return self._seq

    def clear_log(self):
        with self._lock:
            self._log = []

    def wait_for_request(self, pred, timeout=5.0, since=0):
        end = time.time() + timeout
        while time.time() < end:
            for e in self.request_log(since):
                if pred(e):
                    return e
            time.sleep(0.01)
        raise AssertionError("no matching request within %.1fs" % timeout)

    def _append_log(self, e):
        with self._lock:
            self._seq += 1
            e["seq"] = self._seq
            self._log.append(e)
            if self._log_fp:
                self._log_fp.write(json.dumps(e, sort_keys=True) + "\n")
                self._log_fp.flush()

    # -- request handling -----------------------------------------------------

    def _read_body(self, h):
        te = h.headers.get("Transfer-Encoding", "").lower()
        if "chunked" in te:
            data = bytearray()
            while True:
                line = h.rfile.readline(65537)
                n = int(line.split(b";")[0].strip() or b"0", 16)
                if n == 0:
                    while h.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += h.rfile.read(n)
                h.rfile.readline(3)
                if len(data) > BODY_LIMIT:
                    h.close_connection = True
                    raise ApiError(400, "json_error", "body too large")
        n = int(h.headers.get("Content-Length") or 0)
        if n > BODY_LIMIT:
            h.close_connection = True
            raise ApiError(400, "json_error", "body too large")
        return h.rfile.read(n) if n else b""

    def _handle(self, h):
        url = urllib.parse.urlsplit(h.path)
        path = url.path
        if path.startswith("/_fake/") or path == "/_fake":
            return self._control(h, path, url.query)
        auth = h.headers.get("Authorization")
        entry = {"time": _now_rfc3339(), "method": h.command, "path": path,
                 "query": url.query, "status": 0,
                 "token": bool(auth and auth.strip()),
                 "userAgent": h.headers.get("User-Agent", ""),
                 "fault": None, "action": None, "error": None}
        logged = False
        try:
            try:
                raw = self._read_body(h)
            except ApiError as e:
                raw = None
                early = e
            else:
                early = None
            if raw and h.command in ("POST", "PUT", "PATCH", "DELETE"):
                try:
                    entry["body"] = json.loads(raw)
                except ValueError:
                    entry["body"] = raw.decode("utf-8", "replace")
            f = self._take_fault(h.command, path)
            if f is not None:
                entry["fault"] = f.id
                if f.delay and self._stop.wait(f.delay):
                    h.close_connection = True
                    return
                if f.reset or f.close:
                    # logged first: a client that sees the connection end
                    # finds its request in the log
                    self._append_log(entry)
                    logged = True
                    if f.reset:
                        h.reset()
                    else:
                        h.close_connection = True
                        try:
                            h.connection.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                    return
                if f.status:
                    hdrs = self.rate.peek()
                    hdrs.update(f.headers)
                    hdrs["Content-Type"] = f.content_type
                    if f.body is not None:
                        body = f.body.encode() if isinstance(f.body, str) \
                            else f.body
                    else:
                        body = _dump({"error": {
                            "code": f.code,
                            "message": f.message or "fault injected",
                            "details": None}})
                    entry["status"] = f.status
                    entry["error"] = f.code
                    self._append_log(entry)
                    logged = True
                    return h.send_raw(f.status, hdrs, body, f.keep
                                      if f.truncate else None)
            status, hdrs, body = self._serve(h, path, url.query, raw, early,
                                             entry)
            entry["status"] = status
            keep = None
            if f is not None and f.truncate:
                keep = f.keep if f.keep is not None else len(body) // 2
            self._append_log(entry)
            logged = True
            h.send_raw(status, hdrs, body, keep)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError,
                socket.timeout, OSError):
            h.close_connection = True
        finally:
            if not logged:
                self._append_log(entry)

    def _serve(self, h, path, query, raw, early, entry):
        ok, hdrs = self.rate.take()
        hdrs["Content-Type"] = "application/json"
        hdrs["X-Correlation-Id"] = uuid.uuid4().hex[:16]
        try:
            if early is not None:
                raise early
            if not ok:
                raise ApiError(429, "rate_limit_exceeded",
                               "limit of %s requests per hour reached"
                               % hdrs["RateLimit-Limit"])
            self._authenticate(h, entry)
            if not path.startswith("/v1/"):
                raise ApiError(404, "not_found", "not found")
            q = urllib.parse.parse_qs(query, keep_blank_values=True)
            body = None
            if h.command in ("POST", "PUT"):
                try:
                    body = json.loads(raw) if raw and raw.strip() else {}
                except ValueError:
                    raise ApiError(400, "json_error", "invalid JSON in body")
                if not isinstance(body, dict):
                    raise ApiError(400, "json_error",
                                   "body must be a JSON object")
            status, out, extra = self._route(h, path[3:], q, body, entry)
            hdrs.update(extra)
            if status == 204:
                del hdrs["Content-Type"]
                return status, hdrs, b""
            return status, hdrs, _dump(out)
        except ApiError as e:
            entry["error"] = e.code
            hdrs.update(e.headers)
            return e.status, hdrs, _dump(e.body())
        except Exception as e:  # noqa: BLE001 - a bug of the fake itself
            tb = traceback.format_exc()
            sys.stderr.write("fake hcloud: %s %s failed:\n%s"
                             % (h.command, h.path, tb))
            if self.state_dir:
                with open(os.path.join(self.state_dir, "errors.log"),
                          "a") as f:
                    f.write("%s %s %s\n%s\n" % (_now_rfc3339(), h.command,
                                                h.path, tb))
            entry["error"] = "server_error"
            entry["exception"] = repr(e)
            return 500, hdrs, _dump({"error": {
                "code": "server_error",
                "message": "fake hcloud bug: %r" % e, "details": None}})

    def _authenticate(self, h, entry):
        auth = h.headers.get("Authorization", "")
        parts = auth.split(" ", 1)
        token = parts[1].strip() if len(parts) == 2 and \
            parts[0].lower() == "bearer" else ""
        with self._lock:
            info = self._tokens.get(token) if token else None
        if info is None:
            raise ApiError(401, "unauthorized", "unable to authenticate")
        if info["readonly"] and h.command not in ("GET", "HEAD"):
            raise ApiError(401, "token_readonly",
                           "the token is only allowed to perform GET requests")

    def _route(self, h, rel, q, body, entry):
        for rx, methods in _ROUTES:
            m = rx.match(rel)
            if m is None:
                continue
            name = methods.get(h.command)
            if name is None:
                raise ApiError(405, "method_not_allowed",
                               "method not allowed")
            st = self.state
            with st.lock:
                st.advance()
                return getattr(self, "_r_" + name)(h, rel, m.groups(), q,
                                                   body, entry)
        raise ApiError(404, "not_found", "not found")

    # -- list helpers --------------------------------------------------------

    def _selector(self, q):
        v = q.get("label_selector")
        if not v:
            return None
        try:
            return hclabels.parse(v[-1])
        except ValueError as e:
            raise hcstate.invalid("label_selector", str(e))

    def _name(self, q):
        v = q.get("name")
        return v[-1] if v else None

    def _page(self, h, rel, q, key, items, sort_fields):
        for spec in reversed(q.get("sort", [])):
            field, _, order = spec.partition(":")
            if field not in sort_fields or order not in ("", "asc", "desc"):
                raise hcstate.invalid("sort", "invalid sort %r" % spec)
            items.sort(key=lambda x: (x[field] is None, x[field]),
                       reverse=(order == "desc"))
        try:
            page = int(q.get("page", ["1"])[-1] or 1)
            per_page = int(q.get("per_page", [str(DEFAULT_PER_PAGE)])[-1]
                           or DEFAULT_PER_PAGE)
        except ValueError:
            raise hcstate.invalid("page", "must be an integer")
        if page < 1:
            raise hcstate.invalid("page", "must be at least 1")
        if per_page < 1:
            raise hcstate.invalid("per_page", "must be at least 1")
        per_page = min(per_page, MAX_PER_PAGE)
        total = len(items)
        last = max(1, (total + per_page - 1) // per_page)
        start = (page - 1) * per_page
        pag = {"page": page, "per_page": per_page,
               "previous_page": page - 1 if page > 1 else None,
               "next_page": page + 1 if page < last else None,
               "last_page": last, "total_entries": total}
        host = h.headers.get("Host") or "%s:%d" % (self.host, self.port)
        base = "%s://%s/v1%s" % ("https" if self.tls else "http", host, rel)
        keep = [(k, v) for k, vs in q.items() if k not in ("page", "per_page")
                for v in vs]

        def link(p):
            qs = urllib.parse.urlencode(keep + [("page", p),
                                                ("per_page", per_page)])
            return "<%s?%s>" % (base, qs)
        links = []
        if pag["previous_page"]:
            links.append('%s; rel="prev"' % link(page - 1))
        if pag["next_page"]:
            links.append('%s; rel="next"' % link(page + 1))
        links.append('%s; rel="last"' % link(last))
        out = {key: items[start:start + per_page],
               "meta": {"pagination": pag}}
        return 200, out, {"Link": ", ".join(links)}

    # -- handlers (called with state.lock held) -----------------------------

    def _r_list_servers(self, h, rel, g, q, body, entry):
        statuses = q.get("status", [])
        for s in statuses:
            if s not in hcstate.SERVER_STATUSES:
                raise hcstate.invalid("status", "invalid status %r" % s)
        items = self.state.list_servers(self._name(q), self._selector(q),
                                        statuses)
        return self._page(h, rel, q, "servers", items,
                          ("id", "name", "created"))

    def _r_get_server(self, h, rel, g, q, body, entry):
        return 200, {"server": self.state.get_server(int(g[0]))}, {}

    def _r_update_server(self, h, rel, g, q, body, entry):
        return 200, {"server": self.state.put_server(int(g[0]), body)}, {}

    def _r_delete_server(self, h, rel, g, q, body, entry):
        a = self.state.delete_server(int(g[0]))
        entry["action"] = a["id"]
        return 200, {"action": a}, {}

    def _r_list_lbs(self, h, rel, g, q, body, entry):
        items = self.state.list_lbs(self._name(q), self._selector(q))
        return self._page(h, rel, q, "load_balancers", items,
                          ("id", "name", "created"))

    def _r_create_lb(self, h, rel, g, q, body, entry):
        lb, a = self.state.create_lb(body)
        entry["action"] = a["id"]
        return 201, {"load_balancer": lb, "action": a}, {}

    def _r_get_lb(self, h, rel, g, q, body, entry):
        return 200, {"load_balancer": self.state.get_lb(int(g[0]))}, {}

    def _r_update_lb(self, h, rel, g, q, body, entry):
        return 200, {"load_balancer": self.state.update_lb(int(g[0]),
                                                           body)}, {}

    def _r_delete_lb(self, h, rel, g, q, body, entry):
        self.state.delete_lb(int(g[0]))
        return 204, None, {}

    def _r_lb_action(self, h, rel, g, q, body, entry):
        a = self.state.lb_action(int(g[0]), g[1], body)
        entry["action"] = a["id"]
        return 201, {"action": a}, {}

    def _r_route_action(self, h, rel, g, q, body, entry):
        nid = int(g[0])
        if g[1] == "add_route":
            a = self.state.add_route(nid, body)
        else:
            a = self.state.delete_route(nid, body)
        entry["action"] = a["id"]
        return 201, {"action": a}, {}

    def _r_list_networks(self, h, rel, g, q, body, entry):
        items = self.state.list_networks(self._name(q), self._selector(q))
        return self._page(h, rel, q, "networks", items,
                          ("id", "name", "created"))

    def _r_get_network(self, h, rel, g, q, body, entry):
        return 200, {"network": self.state.get_network(int(g[0]))}, {}

    def _res(self, rel):
        parts = rel.strip("/").split("/")
        kind = _RES_KIND[parts[0]]
        rid = int(parts[1])
        store = {"server": self.state.servers,
                 "load_balancer": self.state.lbs,
                 "network": self.state.networks}[kind]
        if rid not in store:
            raise hcstate.not_found(kind, rid)
        return kind, rid

    def _r_res_actions(self, h, rel, g, q, body, entry):
        kind, rid = self._res(rel)
        items = self.state.actions_for(kind, rid)
        st = q.get("status", [])
        if st:
            items = [a for a in items if a["status"] in st]
        return self._page(h, rel, q, "actions", items, _ACTION_SORT)

    def _r_res_action(self, h, rel, g, q, body, entry):
        kind, rid = self._res(rel)
        aid = int(g[1])
        for a in self.state.actions_for(kind, rid):
            if a["id"] == aid:
                return 200, {"action": a}, {}
        raise hcstate.not_found("action", aid)

    def _r_list_actions(self, h, rel, g, q, body, entry):
        ids = q.get("id", [])
        if not ids:
            raise hcstate.invalid("id", "is required")
        want = []
        for i in ids:
            try:
                want.append(int(i))
            except ValueError:
                raise hcstate.invalid("id", "must be an integer")
        items = [self.state.render_action(a) for a in sorted(set(want))
                 if a in self.state.actions]
        st = q.get("status", [])
        if st:
            items = [a for a in items if a["status"] in st]
        return self._page(h, rel, q, "actions", items, _ACTION_SORT)

    def _r_get_action(self, h, rel, g, q, body, entry):
        aid = int(g[0])
        if aid not in self.state.actions:
            raise hcstate.not_found("action", aid)
        return 200, {"action": self.state.render_action(aid)}, {}

    def _simple_list(self, h, rel, q, key, items):
        return self._page(h, rel, q, key, items, ("id", "name"))

    def _simple_get(self, key, kind, items, rid):
        for x in items:
            if x["id"] == rid:
                return 200, {key: x}, {}
        raise hcstate.not_found(kind, rid)

    def _r_list_locations(self, h, rel, g, q, body, entry):
        return self._simple_list(h, rel, q, "locations",
                                 self.state.list_locations(self._name(q)))

    def _r_get_location(self, h, rel, g, q, body, entry):
        return self._simple_get("location", "location",
                                self.state.list_locations(), int(g[0]))

    def _r_list_server_types(self, h, rel, g, q, body, entry):
        return self._simple_list(h, rel, q, "server_types",
                                 self.state.list_server_types(self._name(q)))

    def _r_get_server_type(self, h, rel, g, q, body, entry):
        return self._simple_get("server_type", "server_type",
                                self.state.list_server_types(), int(g[0]))

    def _r_list_lb_types(self, h, rel, g, q, body, entry):
        return self._simple_list(h, rel, q, "load_balancer_types",
                                 self.state.list_lb_types(self._name(q)))

    def _r_get_lb_type(self, h, rel, g, q, body, entry):
        return self._simple_get("load_balancer_type", "load_balancer_type",
                                self.state.list_lb_types(), int(g[0]))

    # -- control API ----------------------------------------------------------

    def _control(self, h, path, query):
        try:
            raw = self._read_body(h)
            args = json.loads(raw) if raw.strip() else {}
        except (ValueError, ApiError):
            return h.send_raw(400, {"Content-Type": "application/json"},
                              _dump({"error": "control body must be JSON"}))
        try:
            status, out = self._control_op(h.command, path[len("/_fake"):]
                                           .rstrip("/"), query, args)
        except (KeyError, ValueError, TypeError) as e:
            status, out = 400, {"error": repr(e)}
        except ApiError as e:
            status, out = e.status, e.body()
        h.send_raw(status, {"Content-Type": "application/json"}, _dump(out))

    def _control_op(self, m, p, query, a):
        q = urllib.parse.parse_qs(query)
        if p == "/state" and m == "GET":
            return 200, {"servers": self.servers(),
                         "networks": self.networks(),
                         "load_balancers": self.load_balancers(),
                         "actions": self.actions()}
        if p == "/servers" and m == "POST":
            return 201, self.add_server(**a)
        if p.startswith("/servers/") and m == "PATCH":
            return 200, self.update_server(int(p.split("/")[2]), **a)
        if p.startswith("/servers/") and m == "DELETE":
            self.remove_server(int(p.split("/")[2]))
            return 200, {}
        if p == "/networks" and m == "POST":
            return 201, self.add_network(**a)
        if p == "/load_balancers" and m == "POST":
            return 201, self.add_load_balancer(**a)
        if p.startswith("/load_balancer_types/") and m == "PATCH":
            return 200, self.set_load_balancer_type(p.split("/")[2], **a)
        if p == "/robot-ips" and m == "POST":
            self.add_robot_ip(a["ip"])
            return 201, {}
        if p == "/target-health" and m == "POST":
            self.set_target_health(a["load_balancer"], a["listen_port"],
                                   a["status"], a.get("server"), a.get("ip"))
            return 200, {}
        if p == "/faults" and m == "POST":
            return 201, {"id": self.inject_fault(**a)}
        if p == "/faults" and m == "GET":
            return 200, {"faults": self.faults()}
        if p == "/faults" and m == "DELETE":
            self.clear_faults()
            return 200, {}
        if p.startswith("/faults/") and m == "DELETE":
            self.clear_faults(int(p.split("/")[2]))
            return 200, {}
        if p == "/action-scripts" and m == "POST":
            if isinstance(a.get("error"), list):
                a["error"] = tuple(a["error"])
            self.script_action(**a)
            return 201, {}
        if p == "/action-scripts" and m == "DELETE":
            self.clear_action_scripts()
            return 200, {}
        if re.match(r"^/actions/\d+/finish$", p) and m == "POST":
            err = a.get("error")
            self.finish_action(int(p.split("/")[2]),
                               tuple(err) if isinstance(err, list) else err)
            return 200, {}
        if p == "/log" and m == "GET":
            return 200, {"items": self.request_log(
                int(q.get("since", ["0"])[0]))}
        if p == "/log" and m == "DELETE":
            self.clear_log()
            return 200, {}
        if p == "/tokens" and m == "POST":
            self.add_token(a["token"], a.get("readonly", False))
            return 201, {}
        if p == "/tokens" and m == "PUT":
            self.set_tokens(a["tokens"])
            return 200, {}
        if p == "/tokens" and m == "DELETE":
            self.remove_token(a["token"])
            return 200, {}
        if p == "/rate-limit" and m == "POST":
            self.set_rate_limit(a.get("limit"), a.get("remaining"),
                                a.get("refill"))
            return 200, self.rate.peek()
        if p == "/legacy-datacenter" and m == "POST":
            self.set_legacy_datacenter(a.get("enabled", True))
            return 200, {}
        if p == "/action-seconds" and m == "POST":
            self.set_action_seconds(a["seconds"])
            return 200, {}
        return 404, {"error": "no control operation %s %s" % (m, p)}


_ACTION_SORT = ("id", "command", "status", "progress", "started", "finished")


def main(argv=None):
    p = argparse.ArgumentParser(description="fake Hetzner Cloud API")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file", help="write the port here once listening")
    p.add_argument("--token", action="append", default=None,
                   help="accepted bearer token (repeatable; default: %s)"
                   % DEFAULT_TOKEN)
    p.add_argument("--tls", metavar="DIR",
                   help="serve HTTPS with a CA made in DIR/pki (ca.crt)")
    p.add_argument("--san", action="append", default=[],
                   help="extra serving-cert SAN (DNS:x or IP:y)")
    p.add_argument("--seed", action="append", default=[],
                   help="JSON file {servers, networks, load_balancers, "
                   "robot_ips} to create at start")
    p.add_argument("--rate-limit", type=int, default=3600)
    p.add_argument("--rate-refill", type=float, default=1.0)
    p.add_argument("--action-seconds", type=float, default=0.0)
    p.add_argument("--max-routes", type=int, default=100)
    p.add_argument("--legacy-datacenter", action="store_true",
                   help="serve servers with the pre-2026-07 datacenter")
    p.add_argument("--log-file", help="append one JSON line per request")
    a = p.parse_args(argv)
    hc = FakeHcloud(port=a.port, host=a.host,
                    tokens=a.token or (DEFAULT_TOKEN,), tls=bool(a.tls),
                    state_dir=a.tls, sans=a.san, rate_limit=a.rate_limit,
                    rate_refill=a.rate_refill,
                    action_seconds=a.action_seconds,
                    legacy_datacenter=a.legacy_datacenter,
                    max_routes=a.max_routes, log_file=a.log_file)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *x: stop.set())
    signal.signal(signal.SIGINT, lambda *x: stop.set())
    hc.start()
    for path in a.seed:
        with open(path) as f:
            hc.seed(json.load(f))
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % hc.port)
        os.rename(tmp, a.port_file)
    print("fake-hcloud listening on %s" % hc.endpoint, flush=True)
    while not stop.wait(0.5):
        pass
    hc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
