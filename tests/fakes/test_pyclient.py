"""Debian's python3-kubernetes (the official client) against the fake."""

import threading

import pytest

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config, watch  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402


@pytest.fixture(scope="module")
def api(srv, tmp_path_factory):
    kc = srv.write_kubeconfig(str(tmp_path_factory.mktemp("py") / "kc"),
                              tls_server_name="kubernetes")
    cfg = client.Configuration()
    config.load_kube_config(config_file=kc, client_configuration=cfg)
    # this client version predates tls-server-name: verify the certificate
    # for the name the kubeconfig asks for
    cfg.tls_server_name = "kubernetes"
    c = client.ApiClient(cfg)
    try:
        import urllib3
        pm = c.rest_client.pool_manager
        pm.connection_pool_kw["server_hostname"] = "kubernetes"
        pm.connection_pool_kw["assert_hostname"] = "kubernetes"
        _ = urllib3
    except AttributeError:
        pass
    yield c
    c.close() if hasattr(c, "close") else None


def _node(name, labels=None):
    return client.V1Node(metadata=client.V1ObjectMeta(name=name, labels=labels or {}))


def test_list_and_paging(api, srv):
    core = client.CoreV1Api(api)
    for i in range(5):
        core.create_node(_node("py-%d" % i, {"pool": "a" if i % 2 else "b"}))
    nl = core.list_node(label_selector="pool=a")
    assert sorted(n.metadata.name for n in nl.items) == ["py-1", "py-3"]
    page = core.list_node(limit=2)
    assert len(page.items) == 2 and page.metadata._continue
    seen = [n.metadata.name for n in page.items]
    while page.metadata._continue:
        page = core.list_node(limit=2, _continue=page.metadata._continue)
        seen += [n.metadata.name for n in page.items]
    assert [s for s in seen if s.startswith("py-")] == ["py-%d" % i for i in range(5)]


def test_watch_sees_changes(api, srv):
    core = client.CoreV1Api(api)
    core.create_node(_node("pw-1"))
    rv = core.list_node().metadata.resource_version
    events = []

    def run():
        w = watch.Watch()
        for ev in w.stream(core.list_node, resource_version=rv,
                           timeout_seconds=2, field_selector="metadata.name=pw-1"):
            events.append((ev["type"], ev["object"].metadata.labels))
            if len(events) == 2:
                w.stop()
    t = threading.Thread(target=run)
    t.start()
    core.patch_node("pw-1", {"metadata": {"labels": {"x": "1"}}})
    core.delete_node("pw-1")
    t.join(5)
    assert events[0] == ("MODIFIED", {"x": "1"})
    assert events[1][0] == "DELETED"


def test_conflict_409(api):
    core = client.CoreV1Api(api)
    cm = core.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="pycm"), data={"a": "1"}))
    cm.data = {"a": "2"}
    core.replace_namespaced_config_map("pycm", "default", cm)
    cm.data = {"a": "3"}
    with pytest.raises(ApiException) as ei:
        core.replace_namespaced_config_map("pycm", "default", cm)
    assert ei.value.status == 409
    assert "the object has been modified" in ei.value.body


def test_expired_resource_version_410(api, srv):
    core = client.CoreV1Api(api)
    old_rv = core.list_namespace().metadata.resource_version
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="pyns")))
    srv.compact()
    w = watch.Watch()
    with pytest.raises(ApiException) as ei:
        for _ in w.stream(core.list_namespace, resource_version=old_rv,
                          timeout_seconds=2):
            pass
    assert ei.value.status == 410
    assert "too old resource version: %s" % old_rv in str(ei.value.reason)


def test_certificate_signing_request_approval(api, tmp_path):
    """CertificatesV1Api: create (the requester replaced by the caller),
    the approval subresource (the condition stamped), read back, and a stale
    object refused with 409."""
    import base64
    import subprocess
    pem = subprocess.run(
        ["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", str(tmp_path / "k"), "-subj", "/CN=system:node:n1/O=system:nodes"],
        capture_output=True, check=True, timeout=30).stdout
    certs = client.CertificatesV1Api(api)
    made = certs.create_certificate_signing_request(client.V1CertificateSigningRequest(
        metadata=client.V1ObjectMeta(name="c-py"),
        spec=client.V1CertificateSigningRequestSpec(
            request=base64.b64encode(pem).decode(), signer_name="kubernetes.io/kubelet-serving",
            usages=["digital signature", "server auth"], username="someone-else")))
    assert made.spec.username == "kubernetes-admin"
    made.status = client.V1CertificateSigningRequestStatus(conditions=[
        client.V1CertificateSigningRequestCondition(type="Approved", status="True",
                                                    reason="PyApprove", message="ok")])
    out = certs.replace_certificate_signing_request_approval("c-py", made)
    [cond] = out.status.conditions
    assert (cond.type, cond.reason) == ("Approved", "PyApprove")
    assert cond.last_update_time is not None
    got = certs.read_certificate_signing_request("c-py")
    assert [c.type for c in got.status.conditions] == ["Approved"]
    with pytest.raises(ApiException) as ei:
        certs.replace_certificate_signing_request_approval("c-py", made)
    assert ei.value.status == 409
