#!/usr/bin/python3
"""Fake kube-apiserver for tests: HTTPS, authn, RBAC, storage, watch, faults.

Module:  srv = FakeAPIServer(state_dir).start(); ...; srv.stop()
CLI:     apiserver.py --state-dir DIR [--port N] [--san DNS:kubernetes ...]
                      [--require-client-cert]
See README.md beside this file for the full interface.
"""

import argparse
import base64
import datetime
import gzip
import json
import os
import select
import shutil
import signal
import socket
import ssl
import struct
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kerrors  # noqa: E402
import kregistry  # noqa: E402
import krbac  # noqa: E402
import kresources  # noqa: E402
import kstore  # noqa: E402
import pki  # noqa: E402

GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")  # strconv.ParseBool
GZIP_MIN = 128 * 1024  # bytes: smaller answers are never compressed
BODY_LIMIT = 3 * 1024 * 1024  # bytes, like the real server
GIT_VERSION = "v1.32.0"
ADMIN_USER = "kubernetes-admin"
ADMIN_GROUPS = ("system:masters",)


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ")


def default_sans(node_name):
    return ["DNS:" + node_name, "DNS:kubernetes", "DNS:kubernetes.default",
            "DNS:kubernetes.default.svc",
            "DNS:kubernetes.default.svc.cluster.local", "IP:10.96.0.1"]


def dump_json(obj):
    """Compact JSON with sorted keys and the encoder's trailing newline."""
    return kerrors.go_json(obj)


class Fault(object):
    """One fault-injection rule; see FakeAPIServer.inject_fault."""

    _ids = 0

    def __init__(self, path_prefix="/", status=None, count=1, method=None,
                 verb=None, retry_after=None, delay=0.0, abort=False,
                 message=None, user=None, blackhole=False):
        Fault._ids += 1
        self.id = Fault._ids
        self.path_prefix = path_prefix
        self.status = status
        self.count = count
        self.method = method.upper() if method else None
        self.verb = verb
        self.retry_after = retry_after
        self.delay = float(delay or 0)
        self.abort = bool(abort)
        self.message = message
        self.user = user
        self.blackhole = bool(blackhole)
        self.hits = 0

    def matches(self, method, path, verb, user):
        if self.count is not None and self.count <= 0:
            return False
        if not path.startswith(self.path_prefix):
            return False
        if self.method and self.method != method:
            return False
        if self.verb and self.verb != verb:
            return False
        if self.user and self.user != user:
            return False
        return True

    def to_dict(self):
        return {"id": self.id, "pathPrefix": self.path_prefix,
                "status": self.status, "count": self.count,
                "method": self.method, "verb": self.verb,
                "retryAfter": self.retry_after, "delay": self.delay,
                "abort": self.abort, "message": self.message,
                "user": self.user, "blackhole": self.blackhole,
                "hits": self.hits}


class WatchHold(object):
    """One held-back watch delivery; see FakeAPIServer.hold_watch."""

    _ids = 0

    def __init__(self, rkey, name, since_rv, until):
        WatchHold._ids += 1
        self.id = WatchHold._ids
        self.rkey = rkey
        self.name = name
        self.since_rv = since_rv
        self.until = until          # (method, path) or None
        self.start_rv = None        # the first change held back
        self.released = threading.Event()

    def to_dict(self):
        return {"id": self.id, "group": self.rkey[0], "resource": self.rkey[1],
                "name": self.name, "until": list(self.until) if self.until else None,
                "holding": self.start_rv is not None and not self.released.is_set(),
                "released": self.released.is_set()}


class RequestInfo(object):
    """k8s.io/apiserver RequestInfoFactory, reduced."""

    def __init__(self, method, path, query):
        self.path = path
        self.query = query
        self.is_resource = False
        self.verb = method.lower()
        self.api_prefix = ""
        self.group = ""
        self.version = ""
        self.namespace = ""
        self.resource = ""
        self.subresource = ""
        self.name = ""
        self.parts = []
        parts = [p for p in path.strip("/").split("/") if p != ""]
        if not parts or parts[0] not in ("api", "apis"):
            return
        self.api_prefix = parts[0]
        parts = parts[1:]
        if self.api_prefix == "apis":
            if len(parts) < 2:
                return
            self.group = parts[0]
            parts = parts[1:]
        if not parts:
            return
        self.version = parts[0]
        parts = parts[1:]
        if not parts:
            return
        self.is_resource = True
        method_verb = {"POST": "create", "GET": "get", "HEAD": "get",
                       "PUT": "update", "PATCH": "patch",
                       "DELETE": "delete"}.get(method, "")
        if parts[0] == "watch":
            method_verb = "watch"
            parts = parts[1:]
        if parts and parts[0] == "namespaces":
            if len(parts) > 1:
                self.namespace = parts[1]
                if len(parts) > 2 and parts[2] not in ("status", "finalize"):
                    parts = parts[2:]
        self.parts = parts
        if len(parts) >= 1:
            self.resource = parts[0]
        if len(parts) >= 2:
            self.name = parts[1]
        if len(parts) >= 3:
            self.subresource = parts[2]
        if len(parts) > 3:
            self.subresource = "/".join(parts[2:])
        if not self.name:
            if method_verb == "get":
                method_verb = "list"
            elif method_verb == "delete":
                method_verb = "deletecollection"
        if method_verb == "list" and \
                query.get("watch", [""])[0] in GO_TRUE:
            method_verb = "watch"
        self.verb = method_verb
        if self.resource == "namespaces" and self.name:
            self.namespace = self.name if not self.namespace else self.namespace


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = ""
    sys_version = ""
    disable_nagle_algorithm = True  # Go sets TCP_NODELAY on every connection
    wbufsize = -1  # buffered: one write per response; flushed in reply()

    def __init__(self, sock, addr, fake):
        self.fake = fake
        self.timeout = fake.idle_timeout
        BaseHTTPRequestHandler.__init__(self, sock, addr, None)

    def log_message(self, fmt, *args):
        pass

    def send_response(self, code, message=None):
        self.send_response_only(code, message)
        self.send_header("Date", self.date_time_string())

    def do_GET(self):
        self.fake._handle(self)

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    # -- response helpers ------------------------------------------------

    def reply(self, code, obj, headers=None):
        body = dump_json(obj)
        self.send_response(code)
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", "application/json")
        if len(body) >= GZIP_MIN and "gzip" in \
                self.headers.get("Accept-Encoding", "").lower():
            # APIResponseCompression: large answers are gzipped on request
            body = gzip.compress(body, 5)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Vary", "Accept-Encoding")
        self.send_header("X-Kubernetes-Pf-Flowschema-Uid", self.fake.pf_uids[0])
        self.send_header("X-Kubernetes-Pf-Prioritylevel-Uid", self.fake.pf_uids[1])
        for k, v in (headers or {}).items():
            if isinstance(v, list):
                for x in v:
                    self.send_header(k, x)
            else:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self._code = code

    def reply_text(self, code, text, ctype="text/plain; charset=utf-8"):
        body = text.encode()
        self.send_response(code)
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", ctype)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self._code = code

    def reply_error(self, e):
        h = dict(e.headers)
        self.reply(e.code, e.status(), h)

    def start_stream(self):
        self.send_response(200)
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        self._code = 200

    def stream_chunk(self, data):
        # a black-holed watch goes silent, then is reset
        self.fake._hold_while_blackholed(self)
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def abort(self):
        """Reset the TCP connection without an HTTP answer."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _rst(sock):
    """Close sock with a TCP RST (SO_LINGER 0) and no TLS close_notify."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                        struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


class FakeAPIServer(object):
    """A kube-apiserver stand-in listening on https://127.0.0.1:PORT.

    state_dir: where PKI, kubeconfigs, 'port' and 'requests.log' go (a
    temporary directory, removed by stop(), when None).
    """

    def __init__(self, state_dir=None, port=0, host="127.0.0.1", sans=None,
                 node_name="control-plane", require_client_cert=False,
                 tokens=None, git_version=GIT_VERSION, key_type="ec",
                 idle_timeout=90.0, bookmark_interval=60.0,
                 watch_timeout=(1800, 3600), first_rv=1000, seed=()):
        self._seed = list(seed)
        self.pf_uids = (str(uuid.uuid4()), str(uuid.uuid4()))
        self._own_dir = state_dir is None
        self.state_dir = state_dir or tempfile.mkdtemp(prefix="fakeapi-")
        os.makedirs(self.state_dir, exist_ok=True)
        self.host = host
        self.port = port
        self.node_name = node_name
        self.sans = list(sans) if sans else default_sans(node_name)
        self.require_client_cert = require_client_cert
        self.git_version = git_version
        self.key_type = key_type
        self.idle_timeout = idle_timeout
        self.bookmark_interval = bookmark_interval
        self.watch_timeout = watch_timeout
        self.tokens = {}
        for t, v in (tokens or {}).items():
            if isinstance(v, str):
                self.add_token(t, v)
            else:
                self.add_token(t, v[0], v[1] if len(v) > 1 else ())
        self.store = kstore.Store(first_rv)
        self.authz = krbac.Authorizer(self.store)
        self.registry = kregistry.Registry(self.store, self)
        self._lock = threading.RLock()
        self._faults = []
        self._watch_holds = []
        self._log = []
        self._seq = 0
        # writes past the fault checks and not logged yet: a test that saw
        # a write's effect (an object changed or gone) and then reads the
        # log must find the write there (request_log waits for them)
        self._writes_in_flight = set()
        self._writes_done = threading.Condition(self._lock)
        self._log_file = None
        self._conns = set()
        self._lsock = None
        self._accept_thread = None
        self._stopping = False
        self._outage_until = 0.0
        self._outage_mode = None
        self._started = False
        self._client_serial = 0
        self.ca = None

    # -- lifecycle ---------------------------------------------------------

    def start(self):
        """Create PKI, seed the default objects, listen; returns self."""
        pkidir = os.path.join(self.state_dir, "pki")
        if os.path.exists(os.path.join(pkidir, "ca.crt")):
            self.ca = pki.load_ca(pkidir)
        else:
            self.ca = pki.make_ca(pkidir, key_type=self.key_type)
        self.serving = pki.make_server_cert(pkidir, self.ca, "apiserver",
                                            self.sans, key_type=self.key_type)
        with open(self.ca.cert) as f:
            self.ca_pem = f.read()
        self._ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        self._ctx.load_cert_chain(self.serving.cert, self.serving.key)
        self._ctx.load_verify_locations(self.ca.cert)
        self._ctx.verify_mode = (ssl.CERT_REQUIRED if self.require_client_cert
                                 else ssl.CERT_OPTIONAL)
        self._ctx.set_alpn_protocols(["http/1.1"])
        self.registry.bootstrap()
        for o in self._seed:
            self.create_object(o)
        self._log_file = open(os.path.join(self.state_dir, "requests.log"), "a")
        self._listen()
        self._accept_thread = threading.Thread(target=self._accept_loop,
                                               name="fakeapi-accept",
                                               daemon=True)
        self._accept_thread.start()
        admin = pki.make_client_cert(pkidir, self.ca, "admin", ADMIN_USER,
                                     ADMIN_GROUPS, key_type=self.key_type)
        self.write_kubeconfig(
            os.path.join(self.state_dir, "admin.kubeconfig"), cert=admin,
            tls_server_name="kubernetes" if "DNS:kubernetes" in self.sans
            else None)
        tmp = os.path.join(self.state_dir, "port.tmp")
        with open(tmp, "w") as f:
            f.write("%d\n" % self.port)
        os.rename(tmp, os.path.join(self.state_dir, "port"))
        self._started = True
        return self

    def stop(self):
        """Stop listening, end every connection and watch."""
        self._stopping = True
        self.release_watch()
        self.store.close()
        if self._accept_thread is not None:
            self._accept_thread.join(5)
        with self._lock:
            self._close_listener()
        self._kill_connections(reset=False)
        if self._log_file:
            self._log_file.close()
            self._log_file = None
        if self._own_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def __enter__(self):
        return self.start() if not self._started else self

    def __exit__(self, *a):
        self.stop()

    @property
    def url(self):
        return "https://%s:%d" % (self.host, self.port)

    @property
    def ca_file(self):
        return self.ca.cert

    def _listen(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((self.host, self.port))
        s.listen(128)
        self.port = s.getsockname()[1]
        self._lsock = s

    def _outage_now(self):
        """The outage mode in force, or None (call with self._lock held)."""
        if self._outage_mode and time.time() >= self._outage_until:
            self._outage_mode = None
        return self._outage_mode

    def _accept_loop(self):
        while not self._stopping:
            with self._lock:
                mode = self._outage_now()
                if mode == "refuse":
                    self._close_listener()
                elif self._lsock is None:
                    try:
                        self._listen()
                    except OSError:
                        pass
                ls = self._lsock
            if ls is None:
                time.sleep(0.02)
                continue
            try:
                r, _, _ = select.select([ls], [], [], 0.05)
                if not r:
                    continue
                conn, addr = ls.accept()
            except (OSError, ValueError):
                continue
            with self._lock:
                mode = self._outage_now()
            if mode == "blackhole" and not self._stopping:
                # accepted, never answered: reset once the outage ends
                threading.Thread(target=self._hold_conn, args=(conn,),
                                 name="fakeapi-held", daemon=True).start()
                continue
            if mode is not None or self._stopping:
                _rst(conn)
                continue
            t = threading.Thread(target=self._serve_conn, args=(conn, addr),
                                 name="fakeapi-conn", daemon=True)
            t.start()

    def _hold_conn(self, conn):
        while not self._stopping:
            with self._lock:
                if self._outage_now() != "blackhole":
                    break
            time.sleep(0.05)
        _rst(conn)

    def _close_listener(self):
        if self._lsock is not None:
            try:
                # shutdown first: a close() while the accept thread sits in
                # select() would leave the socket listening until it returns
                self._lsock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                self._lsock.close()
            except OSError:
                pass
            self._lsock = None

    def _serve_conn(self, conn, addr):
        conn.settimeout(10)
        try:
            ssock = self._ctx.wrap_socket(conn, server_side=True)
        except (ssl.SSLError, OSError):
            try:
                conn.close()
            except OSError:
                pass
            return
        with self._lock:
            self._conns.add(ssock)
        try:
            _Handler(ssock, addr, self)
        except (OSError, ssl.SSLError, ValueError):
            pass
        finally:
            with self._lock:
                self._conns.discard(ssock)
            try:
                ssock.close()
            except OSError:
                pass

    def _kill_connections(self, reset=True):
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                if reset:
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                 struct.pack("ii", 1, 0))
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    # -- users -------------------------------------------------------------

    def add_token(self, token, user, groups=(), uid=""):
        """Accept 'Authorization: Bearer <token>' as user with groups."""
        self.tokens[token] = {"username": user, "uid": uid,
                              "groups": list(groups)}

    def remove_token(self, token):
        self.tokens.pop(token, None)

    def client_cert(self, user, groups=(), name=None):
        """Sign a client certificate for user/groups; returns pki.Pair."""
        with self._lock:
            self._client_serial += 1
            n = self._client_serial
        name = name or "client-%d-%s" % (n, "".join(
            c if c.isalnum() else "_" for c in user))
        return pki.make_client_cert(os.path.join(self.state_dir, "pki"),
                                    self.ca, name, user, groups,
                                    key_type=self.key_type)

    def write_kubeconfig(self, path, user=ADMIN_USER, groups=ADMIN_GROUPS,
                         token=None, embed=True, tls_server_name=None,
                         server=None, cluster_name="kubernetes",
                         context_name=None, user_name=None, cert=None):
        """Write a kubeadm-style kubeconfig for user/groups; returns path.

        token: use this bearer token instead of a client certificate (it is
        registered with the server).  embed: *-data fields (True) or file
        paths.  tls_server_name: adds tls-server-name.  cert: an existing
        pki.Pair to use instead of minting one.
        """
        if token is not None:
            if token not in self.tokens:
                self.add_token(token, user, groups)
        elif cert is None:
            cert = self.client_cert(user, groups)
        user_name = user_name or user
        context_name = context_name or "%s@%s" % (user_name, cluster_name)
        server = server or self.url
        return write_kubeconfig(path, server, self.ca.cert, user_name,
                                cert=cert, token=token, embed=embed,
                                tls_server_name=tls_server_name,
                                cluster_name=cluster_name,
                                context_name=context_name)

    def _authenticate(self, h):
        """Returns (user, groups, uid) or raises 401."""
        cert = None
        try:
            cert = h.connection.getpeercert()
        except (ValueError, OSError):
            cert = None
        if cert:
            cn = None
            orgs = []
            for rdn in cert.get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        cn = v
                    elif k == "organizationName":
                        orgs.append(v)
            if cn:
                return cn, _with_authenticated(orgs), ""
        auth = h.headers.get("Authorization")
        if auth:
            parts = auth.split(" ", 1)
            if len(parts) == 2 and parts[0].lower() == "bearer" and \
                    parts[1].strip():
                t = self.tokens.get(parts[1].strip())
                if t is None:
                    raise kerrors.unauthorized()
                return (t["username"], _with_authenticated(t["groups"]),
                        t["uid"])
            raise kerrors.unauthorized()
        return "system:anonymous", ["system:unauthenticated"], ""

    def token_review(self, token):
        """TokenReview status for a token."""
        t = self.tokens.get(token)
        if t is None:
            return {"authenticated": False, "user": {},
                    "error": "invalid bearer token"}
        return {"authenticated": True, "audiences": ["https://kubernetes.default.svc.cluster.local"],
                "user": {"username": t["username"], "uid": t["uid"],
                         "groups": _with_authenticated(t["groups"])}}

    # -- faults ------------------------------------------------------------

    def inject_fault(self, path_prefix="/", status=None, count=1, method=None,
                     verb=None, retry_after=None, delay=0.0, abort=False,
                     message=None, user=None, blackhole=False):
        """The next `count` requests (None = all) whose path starts with
        path_prefix (and method / Kubernetes verb / user, when given) get the
        fault: delayed by `delay` s, then answered with `status` (a Status
        body; Retry-After when retry_after is set), or their connection reset
        without an answer (abort=True), or served normally (delay only).
        blackhole=True: a network partition: each such request goes
        unanswered for as long as the rule exists (until clear_faults
        removes it), then its connection is reset; open watches of the
        same user and path go silent the same way.  Returns the fault id."""
        with self._lock:
            f = Fault(path_prefix, status, count, method, verb, retry_after,
                      delay, abort, message, user, blackhole)
            self._faults.append(f)
        return f.id

    def clear_faults(self, fault_id=None):
        with self._lock:
            self._faults = [f for f in self._faults
                            if fault_id is not None and f.id != fault_id]
        if fault_id is None:
            self.release_watch()

    def hold_watch(self, resource, name, until=None, group=""):
        """Hold back the watch delivery of `resource`'s changes from the
        next change of the object `name` on: every watch of that resource
        stops sending at that change, and the changes after it (of any
        object) queue behind it in order, as behind a slow watch cache,
        until a request matching `until` = (method, path) has been answered
        (the answer sent), or release_watch() is called. The held events
        then go out in their order. Returns the hold id."""
        rkey = (group, resource)
        with self._lock:
            h = WatchHold(rkey, name, self.store.current_rv(),
                          (until[0].upper(), until[1]) if until else None)
            self._watch_holds.append(h)
        return h.id

    def release_watch(self, hold_id=None):
        """Let the events a hold keeps back go out (None: every hold)."""
        with self._lock:
            for h in self._watch_holds:
                if hold_id is None or h.id == hold_id:
                    h.released.set()
            self._watch_holds = [h for h in self._watch_holds if not h.released.is_set()]

    def watch_holds(self):
        with self._lock:
            return [h.to_dict() for h in self._watch_holds]

    def _watch_gate(self, change):
        """Called by a watch before it sends change: waits while a hold
        keeps it back."""
        with self._lock:
            holds = [h for h in self._watch_holds
                     if h.rkey == change.rkey and not h.released.is_set()]
            for h in holds:
                if h.start_rv is None and change.name == h.name and \
                        change.rv > h.since_rv:
                    h.start_rv = change.rv
        for h in holds:
            if h.start_rv is not None and change.rv >= h.start_rv:
                while not h.released.wait(0.1):
                    if self._stopping:
                        return

    def _watch_answered(self, method, path):
        """Ends the holds waiting for this answer, once their object has
        changed (a watch may not have reached that change yet: it then
        finds the hold ended, and the change still goes out after this
        answer)."""
        with self._lock:
            waiting = [h for h in self._watch_holds if h.until == (method, path)]
        for h in waiting:
            if self.store.changed_since(h.rkey, h.name, h.since_rv):
                self.release_watch(h.id)

    def faults(self):
        with self._lock:
            return [f.to_dict() for f in self._faults]

    def _take_fault(self, method, path, verb, user):
        with self._lock:
            for f in self._faults:
                if f.matches(method, path, verb, user):
                    if f.count is not None:
                        f.count -= 1
                    f.hits += 1
                    return f
        return None

    def outage(self, seconds, mode="refuse"):
        """For `seconds`, refuse connections (mode "refuse": nothing listens)
        or accept and reset them ("reset").  Open connections are reset at
        once, like a restarting API server.  Mode "blackhole" is a network
        that drops every packet: connections are accepted but never
        answered, requests on open connections go unanswered and open
        watches go silent; when it ends, all of those are reset."""
        if mode not in ("refuse", "reset", "blackhole"):
            raise ValueError("mode must be refuse, reset or blackhole")
        with self._lock:
            self._outage_mode = mode
            self._outage_until = time.time() + float(seconds)
            if mode == "refuse":
                self._close_listener()
        if mode != "blackhole":
            self._kill_connections(reset=True)

    def _blackholed(self, h):
        """Whether h's request (or watch) must go unanswered now: a
        blackhole outage, or a blackhole fault rule matching it."""
        info = getattr(h, "_bh", None)
        with self._lock:
            if self._outage_now() == "blackhole":
                return True
            if info is None:
                return False
            return any(f.blackhole and f.path_prefix and info[1].startswith(f.path_prefix)
                       and (not f.method or f.method == info[0])
                       and (not f.verb or f.verb == info[2])
                       and (not f.user or f.user == info[3])
                       for f in self._faults)

    def _hold_while_blackholed(self, h):
        """Holds h unanswered while it is black-holed; if it was, resets its
        connection and raises OSError."""
        held = False
        while not self._stopping and self._blackholed(h):
            held = True
            time.sleep(0.05)
        if held:
            h.abort()
            raise OSError("black-holed")

    def end_watches(self):
        """End every open watch cleanly (final chunk, connection kept), as
        the real server does when a watch times out."""
        self.store.end_watches()

    def reset_connections(self):
        """Reset every open connection (RST) without an outage."""
        self._kill_connections(reset=True)

    def end_outage(self):
        with self._lock:
            self._outage_until = 0.0

    def in_outage(self):
        with self._lock:
            return time.time() < self._outage_until

    # -- request log -------------------------------------------------------

    def request_log(self, since=0):
        """Logged requests (dicts) with seq > since, oldest first. A write
        being served when this is called (its effect may already be seen)
        is waited for, at most 5 s, so the log holds it."""
        with self._lock:
            pending = set(self._writes_in_flight)
            if pending:
                self._writes_done.wait_for(
                    lambda: not (pending & self._writes_in_flight), timeout=5.0)
            return [dict(e) for e in self._log if e["seq"] > since]

    def clear_request_log(self):
        with self._lock:
            self._log = []

    def log_seq(self):
        """The seq of the last logged request (pass to request_log)."""
        with self._lock:
            return self._seq

    def _append_log(self, e):
        with self._lock:
            self._seq += 1
            e["seq"] = self._seq
            self._log.append(e)
            if id(e) in self._writes_in_flight:
                self._writes_in_flight.discard(id(e))
                self._writes_done.notify_all()
            if self._log_file:
                self._log_file.write(json.dumps(e, sort_keys=True) + "\n")
                self._log_file.flush()

    def wait_for_request(self, pred, timeout=5.0, since=0):
        """Wait until a logged request satisfies pred(entry); returns it."""
        end = time.time() + timeout
        while time.time() < end:
            for e in self.request_log(since):
                if pred(e):
                    return e
            time.sleep(0.01)
        raise AssertionError("no matching request within %.1fs" % timeout)

    def writes(self, since=0):
        """Logged create/update/patch/delete/deletecollection requests."""
        return [e for e in self.request_log(since)
                if e["verb"] in ("create", "update", "patch", "delete",
                                 "deletecollection")]

    # -- storage helpers for tests -------------------------------------------

    def wait_for_object(self, resource, name, pred=lambda o: o is not None,
                        namespace="", group="", timeout=5.0):
        """Poll until pred(object or None) is true; returns the object."""
        end = time.time() + timeout
        while True:
            o = self.get_object(resource, name, namespace, group)
            if pred(o):
                return o
            if time.time() >= end:
                raise AssertionError("%s %s: condition not met within %.1fs"
                                     % (resource, name, timeout))
            time.sleep(0.01)

    def create_object(self, obj):
        """Create obj (a full object with apiVersion/kind) as an admin would;
        returns the stored object."""
        res = kresources.for_object(obj)
        if res is None:
            raise ValueError("unknown kind %s %s" % (obj.get("apiVersion"),
                                                     obj.get("kind")))
        ns = obj.get("metadata", {}).get("namespace", "") if res.namespaced \
            else ""
        if res.namespaced and not ns:
            ns = "default"
        code, out, _ = self.registry.create(res, ns, json.dumps(obj).encode(),
                                            {}, "fake-test")
        return out

    def get_object(self, resource, name, namespace="", group=""):
        """The stored object or None; resource is plural ("nodes")."""
        res = _find_res(group, resource)
        o = kregistry.View(self.store, res).get(
            namespace if res.namespaced else "", name)
        if o is not None:
            o = self.registry.external(res, o)
        return o

    def list_objects(self, resource, namespace=None, group=""):
        res = _find_res(group, resource)
        _, items = kregistry.View(self.store, res).snapshot(namespace)
        return [self.registry.external(res, o) for _, o in items]

    def update_object(self, obj, subresource=""):
        """PUT obj as an admin; returns the stored object."""
        res = kresources.for_object(obj)
        md = obj.get("metadata", {})
        code, out, _ = self.registry.update(
            res, subresource, md.get("namespace", "") if res.namespaced else "",
            md["name"], json.dumps(obj).encode(), {}, "fake-test")
        return out

    def delete_object(self, resource, name, namespace="", group=""):
        res = _find_res(group, resource)
        return self.registry.delete(res, namespace if res.namespaced else "",
                                    name, b"", {})

    def compact(self, resource_version=None):
        """Drop watch history up to resource_version (default: now); watches
        and continue tokens from before it get 410.  Returns the revision."""
        return self.store.compact(resource_version)

    @property
    def resource_version(self):
        return self.store.current_rv()

    # -- request handling ----------------------------------------------------

    def _handle(self, h):
        h._code = 0
        url = urllib.parse.urlsplit(h.path)
        # Go's server hands the apiserver the decoded path (r.URL.Path):
        # "/clusterroles/a%20b" names the object "a b"
        path = urllib.parse.unquote(url.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        info = RequestInfo(h.command, path, query)
        entry = {"time": now_rfc3339(), "method": h.command, "path": path,
                 "query": url.query, "verb": info.verb,
                 "contentType": h.headers.get("Content-Type", ""),
                 "userAgent": h.headers.get("User-Agent", ""),
                 "user": "", "groups": [], "code": 0}
        if info.is_resource:
            entry.update({"resource": info.resource,
                          "subresource": info.subresource,
                          "namespace": info.namespace, "name": info.name,
                          "apiGroup": info.group})
        control = path.startswith("/_fake/")
        body = b""
        try:
            try:
                user, groups, uid = self._authenticate(h)
            except kerrors.StatusError:
                entry["user"] = ""
                self._read_body(h, drain_only=True)
                raise
            entry["user"] = user
            entry["groups"] = groups
            h._bh = (h.command, path, info.verb, user)
            if not control:
                f = self._take_fault(h.command, path, info.verb, user)
                if f is not None:
                    entry["fault"] = f.id
                if (f is not None and f.blackhole) or self._blackholed(h):
                    entry["aborted"] = True
                    try:
                        self._hold_while_blackholed(h)
                    except OSError:
                        pass
                    h.abort()
                    return
                if f is not None:
                    if f.delay:
                        time.sleep(f.delay)
                    if f.abort:
                        entry["code"] = 0
                        entry["aborted"] = True
                        h.abort()
                        return
                    if f.status:
                        self._read_body(h, drain_only=True)
                        raise kerrors.status_for_code(f.status, f.message,
                                                      f.retry_after)
            if not control and h.command in ("POST", "PUT", "PATCH", "DELETE"):
                with self._lock:
                    self._writes_in_flight.add(id(entry))
            body = self._read_body(h)
            if body and h.command in ("POST", "PUT", "PATCH", "DELETE"):
                entry["body"] = _loggable(body)
            if control:
                self._control(h, path, query, body, groups)
                return
            self._authorize(info, user, groups)
            self._route(h, info, query, body, user, groups, uid)
        except kerrors.StatusError as e:
            h.reply_error(e)
            if e.code == 413:
                h.close_connection = True
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError,
                socket.timeout, OSError):
            h.close_connection = True
        except Exception as e:  # noqa: BLE001 - a bug of the fake itself
            # answer 500 and leave the traceback where a test author looks
            import traceback
            tb = traceback.format_exc()
            sys.stderr.write("fake apiserver: %s %s failed:\n%s" %
                             (h.command, h.path, tb))
            with open(os.path.join(self.state_dir, "errors.log"), "a") as f:
                f.write("%s %s %s\n%s\n" % (now_rfc3339(), h.command, h.path, tb))
            entry["error"] = repr(e)
            if not h._code:
                h.close_connection = True
                h.reply_error(kerrors.internal("fake apiserver bug: %r" % e))
        finally:
            entry["code"] = h._code
            if not control:
                self._append_log(entry)
                self._watch_answered(h.command, path)

    def _read_body(self, h, drain_only=False):
        te = h.headers.get("Transfer-Encoding", "").lower()
        if "chunked" in te:
            data = bytearray()
            while True:
                line = h.rfile.readline(65537)
                n = int(line.split(b";")[0].strip() or b"0", 16)
                if n == 0:
                    while h.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                if len(data) + n > BODY_LIMIT:
                    h.close_connection = True
                    raise _too_large()
                data += h.rfile.read(n)
                h.rfile.readline(3)
            return bytes(data)
        n = h.headers.get("Content-Length")
        if not n:
            return b""
        try:
            n = int(n)
        except ValueError:
            h.close_connection = True
            raise kerrors.bad_request("invalid Content-Length")
        if n > BODY_LIMIT:
            h.close_connection = True
            # read what the client sends so that it sees the answer, not a
            # reset for unread data (net/http's lingering close does the same)
            left = min(n, 64 * BODY_LIMIT)
            while left > 0:
                chunk = h.rfile.read(min(left, 65536))
                if not chunk:
                    break
                left -= len(chunk)
            if drain_only:
                return b""
            raise _too_large()
        return h.rfile.read(n)

    def _authorize(self, info, user, groups):
        a = krbac.Attributes(user, groups, info.verb, info.path,
                             info.is_resource, info.group, info.version,
                             info.resource, info.subresource, info.namespace,
                             info.name)
        ok, reason = self.authz.authorize(a)
        if ok:
            return
        msg = krbac.forbidden_message(a)
        if reason:
            msg += ": " + reason
        if info.is_resource:
            raise kerrors.forbidden(info.group, info.resource, info.name, msg)
        raise kerrors.forbidden("", "", "", msg)

    def _route(self, h, info, query, body, user, groups, uid):
        path = info.path
        if not info.is_resource:
            return self._nonresource(h, info, path, query)
        res = kresources.lookup(info.group, info.version, info.resource)
        if res is None:
            raise kerrors.StatusError(
                404, "NotFound", "the server could not find the requested resource", {})
        self.registry.serve(h, res, info, query, body, user, groups, uid)

    def _nonresource(self, h, info, path, query):
        p = path.rstrip("/") or "/"
        if h.command not in ("GET", "HEAD"):
            if p in ("/version", "/healthz", "/livez", "/readyz", "/api",
                     "/apis") or p.startswith("/api"):
                raise kerrors.StatusError(
                    405, "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                    {})
            raise _nf_path()
        if p == "/version":
            return h.reply(200, self.version_info())
        if p in ("/healthz", "/livez", "/readyz") or \
                p.startswith(("/healthz/", "/livez/", "/readyz/")):
            if "verbose" in query:
                return h.reply_text(200, "[+]ping ok\n[+]etcd ok\n%s check passed\n" % p[1:])
            return h.reply_text(200, "ok")
        if p == "/api":
            return h.reply(200, {"kind": "APIVersions", "versions": ["v1"],
                                 "serverAddressByClientCIDRs": [
                                     {"clientCIDR": "0.0.0.0/0",
                                      "serverAddress": "%s:%d" % (self.host, self.port)}]})
        if p == "/apis":
            return h.reply(200, kresources.api_group_list())
        if p == "/api/v1":
            return h.reply(200, kresources.api_resource_list("", "v1"))
        parts = p.strip("/").split("/")
        if parts[0] == "apis" and len(parts) == 2:
            g = kresources.api_group(parts[1])
            if g:
                return h.reply(200, g)
        if parts[0] == "apis" and len(parts) == 3:
            if parts[2] in kresources.GROUP_VERSIONS.get(parts[1], []):
                return h.reply(200, kresources.api_resource_list(parts[1], parts[2]))
        if p == "/openapi/v3":
            return h.reply(200, kresources.openapi_v3_root())
        if p.startswith("/openapi/v3/"):
            rest = p[len("/openapi/v3/"):].split("/")
            if rest == ["api", "v1"]:
                return h.reply(200, kresources.openapi_v3_gv("", "v1"))
            if len(rest) == 3 and rest[0] == "apis" and \
                    rest[2] in kresources.GROUP_VERSIONS.get(rest[1], []):
                return h.reply(200, kresources.openapi_v3_gv(rest[1], rest[2]))
        raise _nf_path()

    def version_info(self):
        major, minor = self.git_version.lstrip("v").split(".")[:2]
        return {"major": major, "minor": minor, "gitVersion": self.git_version,
                "gitCommit": "0" * 40, "gitTreeState": "clean",
                "buildDate": "2024-12-11T18:04:20Z", "goVersion": "go1.23.3",
                "compiler": "gc", "platform": "linux/amd64"}

    # -- control API -------------------------------------------------------

    def _control(self, h, path, query, body, groups):
        if "system:masters" not in groups:
            raise kerrors.forbidden("", "", "", "fake control API needs system:masters")
        try:
            args = json.loads(body) if body else {}
        except ValueError:
            raise kerrors.bad_request("control API body must be JSON")
        p = path[len("/_fake"):].rstrip("/")
        m = h.command
        if p == "/faults" and m == "POST":
            fid = self.inject_fault(
                args.get("pathPrefix", "/"), args.get("status"),
                args.get("count", 1), args.get("method"), args.get("verb"),
                args.get("retryAfter"), args.get("delay", 0),
                args.get("abort", False), args.get("message"),
                args.get("user"), args.get("blackhole", False))
            return h.reply(201, {"id": fid})
        if p == "/faults" and m == "GET":
            return h.reply(200, {"faults": self.faults()})
        if p == "/faults" and m == "DELETE":
            self.clear_faults()
            return h.reply(200, {})
        if p.startswith("/faults/") and m == "DELETE":
            self.clear_faults(int(p.split("/")[-1]))
            return h.reply(200, {})
        if p == "/watch-holds" and m == "POST":
            until = args.get("until")
            hid = self.hold_watch(args["resource"], args["name"],
                                  tuple(until) if until else None, args.get("group", ""))
            return h.reply(201, {"id": hid})
        if p == "/watch-holds" and m == "GET":
            return h.reply(200, {"holds": self.watch_holds()})
        if p == "/watch-holds" and m == "DELETE":
            self.release_watch()
            return h.reply(200, {})
        if p == "/outage" and m == "POST":
            self.outage(args.get("seconds", 1), args.get("mode", "refuse"))
            h.close_connection = True
            return h.reply(200, {})
        if p == "/end-watches" and m == "POST":
            self.end_watches()
            return h.reply(200, {})
        if p == "/reset-connections" and m == "POST":
            h.close_connection = True
            h.reply(200, {})
            h.wfile.flush()
            self.reset_connections()
            return
        if p == "/requests" and m == "GET":
            since = int(query.get("since", ["0"])[0] or 0)
            return h.reply(200, {"items": self.request_log(since)})
        if p == "/requests" and m == "DELETE":
            self.clear_request_log()
            return h.reply(200, {})
        if p == "/compact" and m == "POST":
            rv = args.get("resourceVersion")
            c = self.compact(int(rv) if rv is not None else None)
            return h.reply(200, {"resourceVersion": str(c)})
        if p == "/tokens" and m == "POST":
            self.add_token(args["token"], args["user"], args.get("groups", []),
                           args.get("uid", ""))
            return h.reply(201, {})
        if p == "/kubeconfig" and m == "POST":
            out = args.get("path") or os.path.join(
                self.state_dir, "%s.kubeconfig" % uuid.uuid4().hex[:8])
            self.write_kubeconfig(out, args.get("user", ADMIN_USER),
                                  args.get("groups", list(ADMIN_GROUPS)),
                                  token=args.get("token"),
                                  embed=args.get("embed", True),
                                  tls_server_name=args.get("tlsServerName"))
            return h.reply(201, {"path": out})
        if p == "/state" and m == "GET":
            return h.reply(200, {"resourceVersion": str(self.resource_version),
                                 "compacted": str(self.store.compacted),
                                 "outage": self.in_outage()})
        raise _nf_path()


def _find_res(group, resource):
    for r in kresources.RESOURCES:
        if r.name == resource and r.group == group:
            return r
    raise ValueError("unknown resource %s/%s" % (group, resource))


def _too_large():
    return kerrors.StatusError(413, "RequestEntityTooLarge",
                               "Request entity too large: limit is %d" % BODY_LIMIT,
                               None)


def _nf_path():
    return kerrors.StatusError(404, "NotFound",
                               "the server could not find the requested resource",
                               {})


def _with_authenticated(groups):
    g = list(groups)
    if "system:authenticated" not in g:
        g.append("system:authenticated")
    return g


def _loggable(body):
    try:
        return json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace")


def _b64file(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def write_kubeconfig(path, server, ca_file, user_name, cert=None, token=None,
                     embed=True, tls_server_name=None,
                     cluster_name="kubernetes", context_name=None):
    """Write a kubeconfig the way kubeadm does (block YAML, 2-space indent).

    cert: pki.Pair for client-certificate auth; token: a bearer token.
    embed: base64 *-data fields (kubeadm's form) or file paths.
    """
    context_name = context_name or "%s@%s" % (user_name, cluster_name)
    L = ["apiVersion: v1", "clusters:", "- cluster:"]
    if embed:
        L.append("    certificate-authority-data: " + _b64file(ca_file))
    else:
        L.append("    certificate-authority: " + os.path.abspath(ca_file))
    L.append("    server: " + server)
    if tls_server_name:
        L.append("    tls-server-name: " + tls_server_name)
    L += ["  name: " + cluster_name, "contexts:", "- context:",
          "    cluster: " + cluster_name, "    user: " + user_name,
          "  name: " + context_name, "current-context: " + context_name,
          "kind: Config", "preferences: {}", "users:", "- name: " + user_name,
          "  user:"]
    if token is not None:
        L.append("    token: " + token)
    elif cert is not None:
        if embed:
            L.append("    client-certificate-data: " + _b64file(cert.cert))
            L.append("    client-key-data: " + _b64file(cert.key))
        else:
            L.append("    client-certificate: " + os.path.abspath(cert.cert))
            L.append("    client-key: " + os.path.abspath(cert.key))
    else:
        L[-1] = "  user: {}"
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(L) + "\n")
    os.chmod(tmp, 0o600)
    os.rename(tmp, path)
    return path


def _kubeconfig_cli(argv):
    p = argparse.ArgumentParser(
        prog="apiserver.py kubeconfig",
        description="write a kubeconfig for a running fake API server")
    p.add_argument("--state-dir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--user", default=ADMIN_USER)
    p.add_argument("--group", action="append", default=None)
    p.add_argument("--token", help="bearer token instead of a client cert "
                   "(must be known to the server: --token-auth-file or "
                   "POST /_fake/tokens)")
    p.add_argument("--no-embed", action="store_true")
    p.add_argument("--tls-server-name")
    p.add_argument("--server")
    a = p.parse_args(argv)
    pkidir = os.path.join(a.state_dir, "pki")
    ca = pki.load_ca(pkidir)
    with open(os.path.join(a.state_dir, "port")) as f:
        port = int(f.read().strip())
    server = a.server or "https://127.0.0.1:%d" % port
    groups = a.group if a.group is not None else list(ADMIN_GROUPS)
    cert = None
    if a.token is None:
        name = "cli-%s-%s" % (uuid.uuid4().hex[:8], "".join(
            c if c.isalnum() else "_" for c in a.user))
        cert = pki.make_client_cert(pkidir, ca, name, a.user, groups)
    write_kubeconfig(a.out, server, ca.cert, a.user, cert=cert, token=a.token,
                     embed=not a.no_embed, tls_server_name=a.tls_server_name)
    print(a.out)
    return 0


def _read_token_file(path):
    """kube-apiserver --token-auth-file CSV: token,user,uid,"g1,g2"."""
    import csv
    out = {}
    with open(path) as f:
        for row in csv.reader(f):
            if not row or row[0].startswith("#"):
                continue
            groups = row[3].split(",") if len(row) > 3 and row[3] else []
            out[row[0]] = (row[1], groups, row[2] if len(row) > 2 else "")
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "kubeconfig":
        return _kubeconfig_cli(argv[1:])
    p = argparse.ArgumentParser(description="fake kube-apiserver")
    p.add_argument("--state-dir", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--san", action="append", default=None,
                   help="serving-cert SAN (DNS:x or IP:y); repeatable; "
                   "replaces the kubeadm-like defaults")
    p.add_argument("--node-name", default="control-plane")
    p.add_argument("--require-client-cert", action="store_true")
    p.add_argument("--token-auth-file")
    p.add_argument("--seed", action="append", default=[],
                   help="JSON file with an object, a list of objects or a "
                   "v1 List to create at start")
    p.add_argument("--git-version", default=GIT_VERSION)
    p.add_argument("--key-type", default="ec", choices=["ec", "rsa"])
    p.add_argument("--bookmark-interval", type=float, default=60.0)
    p.add_argument("--idle-timeout", type=float, default=90.0)
    p.add_argument("--watch-timeout", type=float, default=None,
                   help="seconds a watch without timeoutSeconds lasts "
                   "(default: random 1800-3600)")
    a = p.parse_args(argv)
    tokens = {}
    if a.token_auth_file:
        for t, (u, g, uid) in _read_token_file(a.token_auth_file).items():
            tokens[t] = (u, g)
    seed = []
    for path in a.seed:
        with open(path) as f:
            doc = json.load(f)
        if isinstance(doc, dict) and doc.get("kind", "").endswith("List"):
            seed += doc.get("items", [])
        elif isinstance(doc, list):
            seed += doc
        else:
            seed.append(doc)
    srv = FakeAPIServer(a.state_dir, port=a.port, sans=a.san, seed=seed,
                        node_name=a.node_name,
                        require_client_cert=a.require_client_cert,
                        tokens=tokens, git_version=a.git_version,
                        key_type=a.key_type,
                        bookmark_interval=a.bookmark_interval,
                        idle_timeout=a.idle_timeout,
                        watch_timeout=(a.watch_timeout, a.watch_timeout)
                        if a.watch_timeout else (1800, 3600))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *x: stop.set())
    signal.signal(signal.SIGINT, lambda *x: stop.set())
    srv.start()
    while not stop.wait(0.5):
        pass
    srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
