"""Fixtures and a small client for the fake Hetzner Cloud API's own tests.

Not a conftest.py: when tests/fakes is collected as a whole, a second
rootless conftest module would replace tests/fakes/conftest.py, which the
apiserver tests import from.  The test modules load it as a plugin:

    pytest_plugins = ("hcfixtures",)
"""

import http.client
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fakehcloud  # noqa: E402


class Api(object):
    """A small HTTP client for the fake: one request per connection,
    JSON in and out; answers are (status, headers (lower-case), body)."""

    def __init__(self, hc, token=None):
        self.hc = hc
        self.token = hc.token if token is None else token

    def request(self, method, path, body=None, token=None, headers=None,
                timeout=10, raw=None):
        token = self.token if token is None else token
        c = http.client.HTTPConnection(self.hc.host, self.hc.port,
                                       timeout=timeout)
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + token
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        try:
            c.request(method, path if path.startswith("/") else
                      "/v1/" + path, body=data, headers=h)
            r = c.getresponse()
            out = r.read()
            hdrs = {k.lower(): v for k, v in r.getheaders()}
            if out and hdrs.get("content-type", "").startswith(
                    "application/json"):
                out = json.loads(out)
            return r.status, hdrs, out
        finally:
            c.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body if body is not None else {},
                            **kw)

    def ok(self, method, path, body=None, status=None):
        """The body of a successful answer (asserts the status)."""
        st, _, out = self.request(method, path, body)
        want = status or {"POST": 201, "DELETE": 204}.get(method, 200)
        assert st == want, (st, out)
        return out

    def error(self, method, path, body=None):
        """(status, code) of an error answer; asserts the envelope."""
        st, h, out = self.request(method, path, body)
        assert h["content-type"] == "application/json", h
        assert set(out) == {"error"} and set(out["error"]) == {
            "code", "message", "details"}, out
        return st, out["error"]["code"]

    def action(self, method, path, body=None):
        """Start an action and return it once it has ended."""
        out = self.ok(method, path, body)
        a = out["action"]
        return self.ok("GET", "actions/%d" % a["id"])["action"]


@pytest.fixture
def hc():
    with fakehcloud.FakeHcloud() as f:
        yield f


@pytest.fixture
def api(hc):
    return Api(hc)
