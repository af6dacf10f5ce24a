"""Fixtures for the fake API server's own tests."""

import http.client
import json
import os
import socket
import ssl
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "common"))

import apiserver  # noqa: E402


class _Conn(http.client.HTTPSConnection):
    """HTTPS to 127.0.0.1, verifying the certificate for another name (like
    kubeconfig's tls-server-name)."""

    def __init__(self, port, ctx, server_name):
        http.client.HTTPSConnection.__init__(self, "127.0.0.1", port,
                                             context=ctx, timeout=10)
        self._sni = server_name

    def connect(self):
        sock = socket.create_connection((self.host, self.port), self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self._context.wrap_socket(sock, server_hostname=self._sni)


class Client(object):
    """A small HTTPS client: one keep-alive connection, JSON in and out."""

    def __init__(self, srv, cert=None, token=None, server_name="kubernetes"):
        self.srv = srv
        self.ctx = ssl.create_default_context(cafile=srv.ca_file)
        if cert is not None:
            self.ctx.load_cert_chain(cert.cert, cert.key)
        self.token = token
        self.server_name = server_name
        self.conn = None

    def _connect(self):
        self.conn = _Conn(self.srv.port, self.ctx, self.server_name)

    def request(self, method, path, body=None, ctype="application/json",
                headers=None):
        """Returns (status, headers, parsed JSON or text)."""
        if self.conn is None:
            self._connect()
        h = dict(headers or {})
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            h["Content-Type"] = ctype
        try:
            self.conn.request(method, path, body=data, headers=h)
            r = self.conn.getresponse()
        except (ConnectionError, http.client.HTTPException, OSError):
            self.close()
            raise
        raw = r.read()
        try:
            out = json.loads(raw) if raw else None
        except ValueError:
            out = raw.decode()
        return r.status, r, out

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


@pytest.fixture(scope="module")
def srv():
    s = apiserver.FakeAPIServer(bookmark_interval=0.3).start()
    yield s
    s.stop()


@pytest.fixture
def admin(srv):
    c = Client(srv, cert=srv.client_cert("kubernetes-admin", ["system:masters"]))
    yield c
    c.close()


@pytest.fixture
def client_for(srv):
    made = []

    def make(user, groups=(), token=None):
        if token:
            srv.add_token(token, user, groups)
            c = Client(srv, token=token)
        else:
            c = Client(srv, cert=srv.client_cert(user, groups))
        made.append(c)
        return c
    yield make
    for c in made:
        c.close()
