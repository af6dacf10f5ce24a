"""The daemon as a whole: probes while waiting, readiness once the caches
sync, one leader among replicas with prompt handover, /metrics behind
delegated authorization, and everything under the shipped RBAC role."""

import os
import re
import signal
import socket
import time

import pytest
import yaml

import apiserver
from conftest import ROOT, free_port, https_get as probe

LEASE_FLAGS = ["--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s",
               "--leader-elect-retry-period=500ms"]






def wait_probe(port, path, code, timeout=10.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = probe(port, path)
            if last[0] == code:
                return last
        except OSError as e:
            last = e
        time.sleep(0.05)
    raise AssertionError("%s never answered %d: %r" % (path, code, last))


def load_rbac(srv):
    with open(os.path.join(ROOT, "static-pod", "rbac.yaml")) as f:
        for obj in yaml.safe_load_all(f):
            if obj:
                srv.create_object(obj)


def ccm_kubeconfig(srv, tmp, name="kc"):
    return srv.write_kubeconfig(os.path.join(tmp, name), user="system:cloud-controller-manager",
                                groups=(), tls_server_name="kubernetes")


def lease(srv):
    return srv.get_object("leases", "cloud-controller-manager", namespace="kube-system",
                          group="coordination.k8s.io")


def test_probes_while_waiting_then_ready_when_caches_sync(api, tmp, daemon):
    port = free_port()
    kc = ccm_kubeconfig(api, tmp)
    load_rbac(api)
    api.outage(3)
    d = daemon(["--kubeconfig", kc, "--secure-port=%d" % port, "--bind-address=127.0.0.1"])
    wait_probe(port, "/livez", 200)
    assert probe(port, "/healthz")[0] == 200
    code, body = probe(port, "/readyz?verbose")
    assert code == 500 and "[-]informer-sync failed" in body
    wait_probe(port, "/readyz", 200, timeout=10)
    d.wait_for("Started leading")


def test_runs_under_the_shipped_rbac_role(api, tmp, daemon):
    kc = ccm_kubeconfig(api, tmp)
    load_rbac(api)
    seq = api.log_seq()
    d = daemon(["--kubeconfig", kc, "--secure-port=0"] + LEASE_FLAGS)
    d.wait_for("Started leading")
    time.sleep(1.5)  # a few renewals
    rc, _ = d.stop()
    assert rc == 0
    mine = [e for e in api.request_log(since=seq) if e["user"] == "system:cloud-controller-manager"]
    assert mine
    denied = [(e["verb"], e["path"], e["code"]) for e in mine if e["code"] in (401, 403)]
    assert denied == []
    verbs = {(e["verb"], e.get("resource")) for e in mine}
    # (the fake logs a watch only when it notices its end)
    assert ("list", "nodes") in verbs and ("list", "services") in verbs
    assert ("create", "leases") in verbs and ("update", "leases") in verbs


def test_without_rbac_it_waits_on_403s_and_starts_once_granted(api, tmp, daemon):
    kc = ccm_kubeconfig(api, tmp)
    d = daemon(["--kubeconfig", kc, "--secure-port=0"] + LEASE_FLAGS)
    api.wait_for_request(lambda e: e["code"] == 403 and e.get("resource") == "leases",
                         timeout=10)
    time.sleep(1)
    assert d.alive()
    load_rbac(api)
    d.wait_for("Started leading", timeout=10)


def test_one_leader_and_sigterm_hands_over_at_once(api, tmp, daemon):
    kc = ccm_kubeconfig(api, tmp)
    load_rbac(api)
    a = daemon(["--kubeconfig", kc, "--secure-port=0", "--node-name=cp-a"] + LEASE_FLAGS)
    a.wait_for("Started leading")
    b = daemon(["--kubeconfig", kc, "--secure-port=0", "--node-name=cp-b"] + LEASE_FLAGS)
    b.wait_for("Attempting to acquire leader lease", timeout=10)
    time.sleep(1.0)
    assert "Started leading" not in b.output()
    before = lease(api)["spec"]
    assert before["holderIdentity"].startswith(socket.gethostname() + "_")
    t0 = time.monotonic()
    rc, _ = a.stop()
    assert rc == 0
    b.wait_for("Started leading", timeout=3)
    took = time.monotonic() - t0
    # handover at once: within a couple of retry periods, not a lease duration
    assert took < 2.5, took
    after = lease(api)["spec"]
    assert after["holderIdentity"] != before["holderIdentity"]
    assert after["leaseTransitions"] == before.get("leaseTransitions", 0) + 1


def test_a_stopped_leader_is_replaced_within_the_lease_duration(api, tmp, daemon):
    kc = ccm_kubeconfig(api, tmp)
    load_rbac(api)
    a = daemon(["--kubeconfig", kc, "--secure-port=0", "--node-name=cp-a"] + LEASE_FLAGS)
    a.wait_for("Started leading")
    b = daemon(["--kubeconfig", kc, "--secure-port=0", "--node-name=cp-b"] + LEASE_FLAGS)
    b.wait_for("Attempting to acquire leader lease", timeout=10)
    time.sleep(1.0)
    a.proc.send_signal(signal.SIGSTOP)
    t0 = time.monotonic()
    try:
        b.wait_for("Started leading", timeout=6)
        took = time.monotonic() - t0
        assert took <= 3 + 1.0, took  # lease duration + a retry period + slack
    finally:
        a.proc.send_signal(signal.SIGCONT)
    # the old leader notices and stops acting
    a.wait_for("Stopped leading", timeout=6)


def test_metrics_need_an_authorized_token(api, tmp, daemon):
    port = free_port()
    kc = ccm_kubeconfig(api, tmp)
    load_rbac(api)
    api.add_token("scraper-token-0123456789", "prometheus")
    api.add_token("nobody-token-0123456789", "nobody")
    api.create_object({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                       "metadata": {"name": "metrics-reader"},
                       "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})
    api.create_object({"apiVersion": "rbac.authorization.k8s.io/v1",
                       "kind": "ClusterRoleBinding", "metadata": {"name": "metrics-reader"},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                   "kind": "ClusterRole", "name": "metrics-reader"},
                       "subjects": [{"kind": "User", "name": "prometheus",
                                     "apiGroup": "rbac.authorization.k8s.io"}]})
    d = daemon(["--kubeconfig", kc, "--secure-port=%d" % port, "--bind-address=127.0.0.1"]
               + LEASE_FLAGS)
    d.wait_for("Started leading")
    assert probe(port, "/metrics")[0] == 401
    assert probe(port, "/metrics", "not-a-token-at-all-xyz")[0] == 401
    code, body = probe(port, "/metrics", "nobody-token-0123456789")
    assert code == 403 and "nobody" in body
    code, body = probe(port, "/metrics", "scraper-token-0123456789")
    assert code == 200
    for name in ("bootccm_build_info", "rest_client_requests_total",
                 "bootccm_api_requests_total", "leader_election_master_status",
                 "bootccm_reflector_lists_total", "bootccm_events_"):
        assert name in body, name
    assert 'leader_election_master_status{name="cloud-controller-manager"} 1' in body
    with open(os.path.join(ROOT, "Makefile")) as f:
        version = re.search(r"^VERSION := (\S+)$", f.read(), re.M).group(1)
    lines = body.splitlines()
    info = [l for l in lines if l.startswith("bootccm_build_info{")]
    assert len(info) == 1, body
    # the commit is the build's (git's short hash, "unknown" outside git),
    # which moves with the tree
    assert re.fullmatch(r'bootccm_build_info\{version="%s",'
                        r'commit="(?:[0-9a-f]{12}(?:-dirty)?|unknown)",'
                        r'libcurl="7\.\d+\.\d+",wolfssl="5\.\d+\.\d+"\} 1'
                        % re.escape(version), info[0]), info[0]
    assert "# TYPE bootccm_build_info gauge" in lines
    out = d.output()
    for secret in ("scraper-token-0123456789", "nobody-token-0123456789"):
        assert secret not in out
