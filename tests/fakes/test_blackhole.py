"""The fake API server's network partitions: the "blackhole" outage (every
connection goes silent) and the blackhole fault rule (one user's requests
go silent, as when one replica is cut off), used by the fault and failover
matrices (tests/e2e/test_fault_*.py, tests/e2e/test_failover.py)."""

import socket
import ssl
import threading
import time

import pytest

from conftest import Client


def _timed_get(c, path, timeout):
    """(exception or status, seconds) of GET path with a client timeout."""
    c.close()
    c._connect()
    c.conn.timeout = timeout
    t0 = time.monotonic()
    try:
        code = c.get(path)[0]
    except (OSError, ConnectionError, ssl.SSLError) as e:
        code = e
    return code, time.monotonic() - t0


def test_blackhole_outage_accepts_and_never_answers_then_resets(srv, admin):
    assert admin.get("/version")[0] == 200
    srv.outage(1.5, "blackhole")
    try:
        # the TCP connection is accepted (not refused), but TLS never answers
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=1)
        s.settimeout(0.5)
        s.sendall(b"\x16\x03\x01\x00\x05hello")
        with pytest.raises(socket.timeout):
            s.recv(1)
        s.close()
        # a request on a connection opened before goes unanswered too
        got, took = _timed_get(admin, "/version", 0.5)
        assert isinstance(got, (socket.timeout, TimeoutError)), got
    finally:
        time.sleep(1.7)
    assert not srv.in_outage()
    assert admin.get("/version")[0] == 200


def test_blackhole_outage_silences_an_open_watch(srv, admin):
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bh-watch"}}
    c = Client(srv, cert=srv.client_cert("kubernetes-admin", ["system:masters"]))
    c._connect()
    c.conn.request("GET", "/api/v1/configmaps?watch=true&resourceVersion=%d"
                   % srv.resource_version)
    r = c.conn.getresponse()
    assert r.status == 200
    srv.create_object(ns)
    srv.create_object({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "before", "namespace": "bh-watch"}})
    size = int(r.fp.readline().strip(), 16)     # chunked: size line, then data
    assert b"before" in r.fp.read(size + 2)
    srv.outage(1.0, "blackhole")
    srv.create_object({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "during", "namespace": "bh-watch"}})
    got = []
    t = threading.Thread(target=lambda: got.append(r.fp.read(200)), daemon=True)
    t.start()
    t.join(0.6)
    assert t.is_alive() or got == [b""], got   # nothing of "during" arrives
    t.join(3)
    # once it ends the connection is reset: no event was ever delivered
    assert not any(b"during" in g for g in got), got
    c.close()


def test_blackhole_fault_partitions_one_user_until_cleared(srv, admin, client_for):
    a = client_for("replica-a")
    b = client_for("replica-b")
    assert a.get("/version")[0] == 200
    seq = srv.log_seq()
    fid = srv.inject_fault("/", count=None, user="replica-a", blackhole=True)
    try:
        got, took = _timed_get(a, "/version", 0.5)
        assert isinstance(got, (socket.timeout, TimeoutError)), got
        assert b.get("/version")[0] == 200          # the other user is served
        assert admin.get("/version")[0] == 200
        assert srv.faults()[0]["blackhole"] is True
    finally:
        srv.clear_faults(fid)
    # cleared: the held request's connection is reset and logged as aborted
    e = srv.wait_for_request(lambda e: e["user"] == "replica-a" and e.get("aborted"),
                             timeout=3, since=seq)
    assert e["code"] == 0
    a.close()
    assert a.get("/version")[0] == 200


def test_blackhole_fault_over_the_control_api(srv, admin, client_for):
    a = client_for("replica-c")
    code, _, body = admin.request("POST", "/_fake/faults",
                                  {"user": "replica-c", "count": None, "blackhole": True})
    assert code == 201
    try:
        got, _ = _timed_get(a, "/version", 0.5)
        assert isinstance(got, (socket.timeout, TimeoutError)), got
    finally:
        assert admin.request("DELETE", "/_fake/faults/%d" % body["id"])[0] == 200
    a.close()
    assert a.get("/version")[0] == 200
