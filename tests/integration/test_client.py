"""The API client against the fake API server (tests/drivers/drv_client.c):
retries of 429 and 5xx with Retry-After, no retries of other 4xx, outages
ridden out, the retry limit, shutdown, the conflict loop, resourceVersion
preconditions, create/update helpers, escaping, watches and the QPS limit."""

import datetime
import json
import os
import subprocess
import time

import pytest

from conftest import driver_path, logged_all, wait_until

NODES = "/api/v1/nodes"
CMS = "/api/v1/namespaces/default/configmaps"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"


@pytest.fixture
def kc(api, tmp):
    return api.write_kubeconfig(os.path.join(tmp, "kc"), user="client-admin",
                                tls_server_name="kubernetes")


def drive(kubeconfig, *args, timeout=30, stdin=None):
    """Run the driver; returns (ops by name, stderr, exit status)."""
    p = subprocess.run([driver_path("drv_client"), kubeconfig] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=timeout, input=stdin)
    ops = {}
    for line in p.stdout.splitlines():
        o = json.loads(line)
        ops[o.get("op") or o.get("event")] = o
    assert "ERROR: AddressSanitizer" not in p.stderr, p.stderr
    assert "WARNING: ThreadSanitizer" not in p.stderr, p.stderr
    assert "runtime error:" not in p.stderr, p.stderr
    return ops, p.stderr, p.returncode


def t_of(entry):
    return datetime.datetime.strptime(entry["time"], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def hits(api, seq, path, method=None):
    """The requests of path logged since seq, once the driver is gone."""
    return [e for e in logged_all(api).request_log(since=seq)
            if e["path"] == path and (method is None or e["method"] == method)]


def metric(ops, series):
    for line in ops["metrics"]["lines"]:
        name, _, value = line.rpartition(" ")
        if name == series:
            return float(value)
    return None


def node(name, labels=None):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels or {}}}


def cm(name):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": {"k": "v"}}


def retry_lines(stderr):
    return [l for l in stderr.splitlines() if '"Retrying API request"' in l]


# --- retries ----------------------------------------------------------------


def test_429_with_retry_after_is_retried_after_it(api, kc):
    api.create_object(node("n429"))
    api.inject_fault(path_prefix=NODES + "/n429", status=429, retry_after=1, count=1)
    seq = api.log_seq()
    ops, err, rc = drive(kc, "-v", "2", "--metrics", "request", "GET", NODES + "/n429")
    assert rc == 0 and ops["request"]["rc"] == 0, ops
    assert ops["request"]["object"]["metadata"]["name"] == "n429"
    h = hits(api, seq, NODES + "/n429")
    assert [e["code"] for e in h] == [429, 200]
    assert t_of(h[1]) - t_of(h[0]) >= 0.99
    lines = retry_lines(err)
    assert len(lines) == 1 and 'reason="HTTP 429"' in lines[0] and 'delay="1000ms"' in lines[0]
    host = ops["info"]["host"]
    assert metric(ops, 'rest_client_requests_total{code="429",host="%s",method="GET"}' % host) == 1
    assert metric(ops, 'rest_client_requests_total{code="200",host="%s",method="GET"}' % host) == 1
    assert metric(ops, 'bootccm_api_requests_total{verb="get",resource="nodes",code="429"}') == 1
    assert metric(ops, 'bootccm_api_requests_total{verb="get",resource="nodes",code="200"}') == 1
    assert metric(ops, 'rest_client_request_duration_seconds_count{verb="GET",host="%s"}'
                  % host) == 2
    assert metric(ops, 'rest_client_rate_limiter_duration_seconds_count{verb="GET",host="%s"}'
                  % host) == 2


def test_503_is_retried_for_a_create_and_creates_once(api, kc):
    api.inject_fault(path_prefix=CMS, status=503, count=2, method="POST")
    seq = api.log_seq()
    ops, err, rc = drive(kc, "-v", "2", "--metrics", "create", CMS, json.dumps(cm("c503")))
    assert ops["create"]["rc"] == 0, ops
    assert [e["code"] for e in hits(api, seq, CMS, "POST")] == [503, 503, 201]
    assert len(retry_lines(err)) == 2
    assert all('reason="HTTP 503"' in l for l in retry_lines(err))
    assert api.get_object("configmaps", "c503", namespace="default")["data"] == {"k": "v"}
    assert metric(ops, 'bootccm_api_requests_total{verb="create",resource="configmaps",'
                  'code="503"}') == 2


@pytest.mark.parametrize("case", ["403", "404", "422", "409", "400", "410"])
def test_other_4xx_are_not_retried(api, kc, tmp, case):
    args, path, method = None, None, "GET"
    if case == "403":
        # a real RBAC denial: this user has no roles
        kc = api.write_kubeconfig(os.path.join(tmp, "nobody"), user="nobody", groups=(),
                                  tls_server_name="kubernetes")
        path = NODES
        args = ["request", "GET", path]
        want = "forbidden"
    elif case == "404":
        path = NODES + "/missing"
        args = ["request", "GET", path]
        want = "not found"
    elif case == "422":
        path, method = NODES, "POST"
        args = ["create", path, json.dumps(node("bad", {"-bad-": "x"}))]
        want = "invalid"
    else:
        api.create_object(node("n" + case))
        path = NODES + "/n" + case
        api.inject_fault(path_prefix=path, status=int(case), count=1)
        args = ["request", "GET", path]
        want = {"409": "conflict", "400": "invalid", "410": "gone"}[case]
    seq = api.log_seq()
    ops, err, rc = drive(kc, "-v", "2", *args)
    op = ops[args[0]]
    assert op["code"] == want, op
    assert len(hits(api, seq, path, method)) == 1
    assert retry_lines(err) == []
    assert "attempts" not in op["err"]


def test_refused_outage_is_ridden_out_even_by_a_create(api, kc):
    seq = api.log_seq()
    api.outage(2, "refuse")
    ops, err, rc = drive(kc, "-v", "2", "create", CMS, json.dumps(cm("after-outage")))
    assert ops["create"]["rc"] == 0, ops
    assert ops["create"]["seconds"] >= 1.5
    lines = retry_lines(err)
    assert lines and all('reason="connection refused"' in l for l in lines)
    # the create reached the server once
    assert [e["code"] for e in hits(api, seq, CMS, "POST")] == [201]


def test_reset_outage_is_ridden_out_even_by_a_patch(api, kc):
    n = api.create_object(node("n-reset"))
    seq = api.log_seq()
    api.outage(1.5, "reset")
    ops, err, rc = drive(kc, "-v", "2", "patch-merge", NODES + "/n-reset",
                         n["metadata"]["resourceVersion"],
                         json.dumps({"metadata": {"labels": {"seen": "reset"}}}))
    assert ops["patch-merge"]["rc"] == 0, (ops, err)
    assert retry_lines(err)
    assert all('reason="TLS handshake cut off"' in l or 'reason="connection refused"' in l
               for l in retry_lines(err)), err
    assert [e["code"] for e in hits(api, seq, NODES + "/n-reset", "PATCH")] == [200]
    assert api.get_object("nodes", "n-reset")["metadata"]["labels"] == {"seen": "reset"}


def test_the_daemon_binary_rides_out_a_reset_outage(api, kc, daemon):
    # the static binary's TLS library words a cut handshake its own way. The
    # daemon's Event writes retry it: a local node that cannot be initialized
    # (no metadata service) gets a Warning at every failed sync, every 2 s at
    # most. (check-kubeconfig, which used to show this, connects once now.)
    node = "cp-outage"
    api.create_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node},
                       "spec": {"taints": [{"key": "node.cloudprovider.kubernetes.io/"
                                            "uninitialized", "value": "true",
                                            "effect": "NoSchedule"}]}})
    d = daemon(["--kubeconfig", kc, "--secure-port=0", "-v=2", "--leader-elect=false",
                "--cloud-provider=metadata", "--metadata-cloud=ec2",
                "--metadata-endpoint=http://127.0.0.1:9", "--node-name=" + node])

    def failed():
        got = [e for e in api.list_objects("events", namespace="default")
               if e["reason"] == "InitializationFailed"]
        return got[0]["count"] if got else 0

    wait_until(failed, timeout=15, what="the first InitializationFailed event")
    # the outage lasts until a handshake was cut and said so (a write on a
    # connection opened before it fails another way, and under load the
    # next retry may come seconds later), then the API server is back
    api.outage(60.0, "reset")
    d.wait_for('reason="TLS handshake cut off"', timeout=30)
    api.end_outage()
    # ridden out: the Event is written again once the API server answers
    count = failed()
    wait_until(lambda: failed() > count, timeout=10, what="an Event write after the outage")
    assert d.alive()


def test_a_write_cut_after_sending_is_not_retried_a_read_is(api, kc):
    api.inject_fault(path_prefix=CMS, abort=True, count=1, method="POST")
    seq = api.log_seq()
    ops, err, rc = drive(kc, "-v", "2", "create", CMS, json.dumps(cm("cut")))
    assert ops["create"]["code"] == "transient failure", ops
    assert len(hits(api, seq, CMS, "POST")) == 1
    assert retry_lines(err) == []
    api.inject_fault(path_prefix=CMS, abort=True, count=1, method="GET")
    seq = api.log_seq()
    ops, err, rc = drive(kc, "-v", "2", "request", "GET", CMS)
    assert ops["request"]["rc"] == 0, ops
    assert [e["code"] for e in hits(api, seq, CMS, "GET")] == [0, 200]
    assert 'reason="connection reset"' in retry_lines(err)[0]


def test_retries_stop_at_the_limit(api, kc):
    api.inject_fault(path_prefix="/api/v1/namespaces/default", status=503, count=None)
    seq = api.log_seq()
    ops, err, rc = drive(kc, "--backoff-ms", "1,5", "request", "GET",
                         "/api/v1/namespaces/default")
    limit = ops["info"]["retry_max"]
    assert limit == 10
    assert ops["request"]["code"] == "transient failure"
    assert ops["request"]["status"] == 503
    assert "(%d attempts)" % (limit + 1) in ops["request"]["err"]
    assert len(hits(api, seq, "/api/v1/namespaces/default")) == limit + 1
    seq = api.log_seq()
    ops, err, rc = drive(kc, "--retries", "2", "--backoff-ms", "1,5", "request", "GET",
                         "/api/v1/namespaces/default")
    assert len(hits(api, seq, "/api/v1/namespaces/default")) == 3


def test_default_backoff_is_capped(api, kc):
    # without Retry-After: 100, 200, 400, 500, 500 ms at most (jitter shortens)
    api.inject_fault(path_prefix="/api/v1/namespaces/kube-system", status=500, count=5)
    seq = api.log_seq()
    ops, err, rc = drive(kc, "-v", "2", "request", "GET", "/api/v1/namespaces/kube-system")
    assert ops["request"]["rc"] == 0
    h = hits(api, seq, "/api/v1/namespaces/kube-system")
    assert len(h) == 6
    gaps = [t_of(b) - t_of(a) for a, b in zip(h, h[1:])]
    for gap, cap in zip(gaps, [0.1, 0.2, 0.4, 0.5, 0.5]):
        assert cap * 0.8 - 0.01 <= gap <= cap + 0.35, gaps


def test_stop_abandons_retries(api, kc):
    api.outage(5, "refuse")
    try:
        ops, err, rc = drive(kc, "--stop-after-ms", "400", "request", "GET", "/version")
    finally:
        api.end_outage()
    assert ops["request"]["code"] == "transient failure"
    assert "retries abandoned: stopping" in ops["request"]["err"]
    assert ops["request"]["seconds"] < 1.5


def test_no_token_in_retry_logs(api, tmp):
    token = "client-secret-token-0123456789"
    kc = api.write_kubeconfig(os.path.join(tmp, "tok"), user="tok-admin",
                              groups=("system:masters",), token=token,
                              tls_server_name="kubernetes")
    api.inject_fault(path_prefix="/version", status=503, count=2)
    ops, err, rc = drive(kc, "-v", "10", "request", "GET", "/version")
    assert ops["request"]["rc"] == 0
    assert len(retry_lines(err)) == 2
    assert "Bearer <masked>" in err
    assert token not in err and token not in json.dumps(ops)


# --- watches ------------------------------------------------------------------


def test_watch_is_retried_until_its_answer_begins(api, kc):
    api.create_object(node("w1"))
    api.inject_fault(path_prefix=NODES, status=503, verb="watch", count=1)
    seq = api.log_seq()
    ops, err, rc = drive(kc, "-v", "2", "stream", NODES + "?watch=1&timeoutSeconds=1", 10000)
    st = ops["stream"]
    assert st["rc"] == 0 and st["status"] == 200, st
    assert st["lines"] >= 1  # the ADDED event of w1
    assert [e["code"] for e in hits(api, seq, NODES) if e["verb"] == "watch"] == [503, 200]


def test_watch_dropped_after_events_is_not_retried(api, kc):
    api.create_object(node("w2"))
    seq = api.log_seq()
    p = subprocess.Popen([driver_path("drv_client"), kc, "stream", NODES + "?watch=1", "20000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert json.loads(p.stdout.readline())["op"] == "info"
        assert json.loads(p.stdout.readline())["event"] == "data"
        api.reset_connections()
        out, err = p.communicate(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
    st = json.loads(out.splitlines()[-1])
    assert st["op"] == "stream" and st["code"] == "transient failure", st
    assert st["lines"] >= 1
    # a retry would have opened a second watch and still be reading it
    assert "attempts" not in st["err"] and st["seconds"] < 10
    # the fake logs a watch when it notices its end: on its next event
    api.create_object(node("w3"))
    api.wait_for_request(lambda e: e["verb"] == "watch", timeout=5, since=seq)
    assert len([e for e in api.request_log(since=seq) if e["verb"] == "watch"]) == 1


# --- writes --------------------------------------------------------------------


def test_stale_preconditions_are_409_and_422(api, kc):
    old = api.create_object(node("pre"))["metadata"]["resourceVersion"]
    cur = api.update_object(node("pre", {"changed": "yes"}))["metadata"]["resourceVersion"]
    assert old != cur
    seq = api.log_seq()
    ops, _, _ = drive(kc, "patch-merge", NODES + "/pre", old,
                      json.dumps({"metadata": {"labels": {"a": "b"}}}))
    assert ops["patch-merge"]["status"] == 409 and ops["patch-merge"]["code"] == "conflict"
    ops, _, _ = drive(kc, "patch-json", NODES + "/pre", old,
                      json.dumps([{"op": "add", "path": "/metadata/labels/a", "value": "b"}]))
    assert ops["patch-json"]["status"] == 422 and ops["patch-json"]["code"] == "conflict"
    assert "the object has changed" in ops["patch-json"]["err"]
    assert len(hits(api, seq, NODES + "/pre", "PATCH")) == 2
    h = hits(api, seq, NODES + "/pre", "PATCH")
    assert h[0]["contentType"] == "application/merge-patch+json"
    assert h[0]["body"]["metadata"]["resourceVersion"] == old
    assert h[1]["contentType"] == "application/json-patch+json"
    assert h[1]["body"][0] == {"op": "test", "path": "/metadata/resourceVersion", "value": old}
    assert api.get_object("nodes", "pre")["metadata"]["labels"] == {"changed": "yes"}
    # with the current resourceVersion both go through
    ops, _, _ = drive(kc, "patch-json", NODES + "/pre", cur,
                      json.dumps([{"op": "add", "path": "/metadata/labels/a", "value": "b"}]))
    assert ops["patch-json"]["rc"] == 0
    cur = ops["patch-json"]["object"]["metadata"]["resourceVersion"]
    ops, _, _ = drive(kc, "patch-merge", NODES + "/pre", cur,
                      json.dumps({"metadata": {"labels": {"c": "d"}}}))
    assert ops["patch-merge"]["rc"] == 0
    assert api.get_object("nodes", "pre")["metadata"]["labels"] == \
        {"changed": "yes", "a": "b", "c": "d"}


@pytest.mark.parametrize("mode", ["merge", "json"])
def test_conflict_loop_rereads_after_a_concurrent_change(api, kc, mode):
    name = "conf-" + mode
    api.create_object(node(name, {"x": "1"}))
    seq = api.log_seq()
    p = subprocess.Popen([driver_path("drv_client"), kc, "-v", "2", "label",
                          NODES + "/" + name, "a", "b", mode, "pause"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert json.loads(p.stdout.readline())["op"] == "info"
        ev = json.loads(p.stdout.readline())
        assert ev["event"] == "read"
        # between the driver's read and its write, someone else writes
        obj = api.get_object("nodes", name)
        assert obj["metadata"]["resourceVersion"] == ev["rv"]
        obj["metadata"]["labels"]["x"] = "2"
        api.update_object(obj)
        out, err = p.communicate("go\n", timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
    res = json.loads(out.splitlines()[-1])
    assert res["op"] == "label" and res["rc"] == 0, (res, err)
    assert res["builds"] == 2
    codes = [(e["method"], e["code"]) for e in hits(api, seq, NODES + "/" + name)]
    stale = 409 if mode == "merge" else 422
    assert codes == [("GET", 200), ("PATCH", stale), ("GET", 200), ("PATCH", 200)]
    assert api.get_object("nodes", name)["metadata"]["labels"] == {"x": "2", "a": "b"}
    assert "Object changed before the write, re-reading it" in err
    # again: nothing to do, nothing written
    seq = api.log_seq()
    ops, _, _ = drive(kc, "label", NODES + "/" + name, "a", "b", mode)
    assert ops["label"]["rc"] == 0 and ops["label"]["builds"] == 1
    assert [e["method"] for e in hits(api, seq, NODES + "/" + name)] == ["GET"]


def test_conflict_loop_gives_up_after_its_limit(api, kc):
    api.create_object(node("stubborn"))
    api.inject_fault(path_prefix=NODES + "/stubborn", status=409, method="PATCH", count=None)
    seq = api.log_seq()
    ops, _, _ = drive(kc, "label", NODES + "/stubborn", "a", "b", "merge")
    n = ops["info"]["conflict_retries"]
    assert ops["label"]["code"] == "conflict" and ops["label"]["builds"] == n + 1
    assert len(hits(api, seq, NODES + "/stubborn", "PATCH")) == n + 1


def test_create_never_sends_a_resource_version(api, kc):
    obj = cm("with-rv")
    obj["metadata"]["resourceVersion"] = "12345"
    seq = api.log_seq()
    # the API server refuses a create that carries one...
    ops, _, _ = drive(kc, "--retries", 0, "request", "POST", CMS, json.dumps(obj))
    assert ops["request"]["status"] == 500
    # ...so the helper drops it
    ops, _, _ = drive(kc, "create", CMS, json.dumps(obj))
    assert ops["create"]["rc"] == 0, ops
    bodies = [e["body"] for e in hits(api, seq, CMS, "POST")]
    assert "resourceVersion" in bodies[0]["metadata"]
    assert "resourceVersion" not in bodies[1]["metadata"]
    ops, _, _ = drive(kc, "create", CMS, json.dumps(obj))
    assert ops["create"]["code"] == "already exists"


def test_lease_updates_always_carry_a_resource_version(api, kc):
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "l1", "namespace": "kube-system"},
             "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
    created = drive(kc, "create", LEASES, json.dumps(lease))[0]["create"]
    assert created["rc"] == 0, created
    seq = api.log_seq()
    lease["spec"]["holderIdentity"] = "b"
    ops, _, _ = drive(kc, "update", LEASES + "/l1", json.dumps(lease))
    assert ops["update"]["code"] == "invalid"
    assert "must carry metadata.resourceVersion" in ops["update"]["err"]
    assert hits(api, seq, LEASES + "/l1", "PUT") == []
    lease["metadata"]["resourceVersion"] = created["object"]["metadata"]["resourceVersion"]
    ops, _, _ = drive(kc, "update", LEASES + "/l1", json.dumps(lease))
    assert ops["update"]["rc"] == 0
    assert api.get_object("leases", "l1", namespace="kube-system",
                          group="coordination.k8s.io")["spec"]["holderIdentity"] == "b"
    # a stale one is a conflict
    ops, _, _ = drive(kc, "update", LEASES + "/l1", json.dumps(lease))
    assert ops["update"]["code"] == "conflict"


# --- paths ------------------------------------------------------------------------


def test_names_and_selectors_are_escaped(api, kc):
    name = "system:odd name?x#y&z=1+2@3;4,5"
    api.create_object({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                       "metadata": {"name": name}, "rules": []})
    ops, _, _ = drive(kc, "path", "/apis/rbac.authorization.k8s.io/v1", "-", "clusterroles",
                      name)
    assert ops["path"]["rc"] == 0, ops
    assert ops["path"]["object"]["metadata"]["name"] == name
    assert ops["path"]["path"].endswith(
        "/clusterroles/system:odd%20name%3Fx%23y&z=1+2@3%3B4%2C5")
    api.create_object(node("sel-1", {"role": "a", "tier": "x"}))
    api.create_object(node("sel-2", {"role": "a", "tier": "y"}))
    api.create_object(node("sel-3", {"role": "b"}))
    ops, _, _ = drive(kc, "path", "/api/v1", "-", "nodes", "-",
                      "labelSelector=role=a,tier!=x,!gone")
    assert ops["path"]["rc"] == 0, ops
    assert "labelSelector=role%3Da%2Ctier%21%3Dx%2C%21gone" in ops["path"]["path"]
    assert [i["metadata"]["name"] for i in ops["path"]["object"]["items"]] == ["sel-2"]


# --- the rate limit ------------------------------------------------------------


def test_qps_and_burst_hold_across_threads(api, kc):
    qps, burst, n = 10.0, 5, 25
    seq = api.log_seq()
    ops, _, rc = drive(kc, "--kube-api-qps", qps, "--kube-api-burst", burst,
                       "burst", n, 4, "/api/v1/namespaces/default")
    assert ops["burst"]["ok"] == n, ops
    times = sorted(t_of(e) for e in hits(api, seq, "/api/v1/namespaces/default"))
    assert len(times) == n
    # n requests take (n - burst) / qps seconds at least
    assert ops["burst"]["seconds"] >= (n - burst) / qps - 0.05
    assert times[-1] - times[0] >= (n - burst) / qps - 0.15
    # no window holds more than burst + qps * its length, give or take the
    # arrival jitter of two requests on a loaded machine (without a limit the
    # excess would be about n - burst = 20)
    worst = 0
    for i in range(n):
        for j in range(i, n):
            excess = (j - i + 1) - (burst + qps * (times[j] - times[i]))
            worst = max(worst, excess)
    assert worst <= 2.0, worst
