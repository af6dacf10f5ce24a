"""kubectl against the fake, through a kubeconfig the fake wrote."""

import json

import pytest

from kubectl import kubectl


@pytest.fixture(scope="module")
def kc(srv, tmp_path_factory):
    return srv.write_kubeconfig(str(tmp_path_factory.mktemp("kc") / "admin.conf"),
                                tls_server_name="kubernetes")




def ok(kc, *args, stdin=None):
    r = kubectl(kc, *args, stdin=stdin)
    assert r.returncode == 0, r.stderr
    return r.stdout


NODE = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "kn1", "labels": {"a": "1"}},
        "spec": {"taints": [{"key": "node.cloudprovider.kubernetes.io/uninitialized",
                             "value": "true", "effect": "NoSchedule"}]}}


def test_create_get_label_taint_patch_delete(srv, kc):
    out = ok(kc, "create", "-f", "-", stdin=json.dumps(NODE))
    assert "node/kn1 created" in out
    n = json.loads(ok(kc, "get", "node", "kn1", "-o", "json"))
    assert n["metadata"]["labels"] == {"a": "1"}
    assert n["kind"] == "Node" and n["metadata"]["uid"]
    names = ok(kc, "get", "nodes", "-o", "name").split()
    assert "node/kn1" in names
    lines = ok(kc, "get", "node", "kn1", "-o", "wide").splitlines()
    assert lines[0].split()[:5] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert lines[1].split()[:3] == ["kn1", "Unknown", "<none>"]
    assert "Taints:             node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule" \
        in ok(kc, "describe", "node", "kn1")

    ok(kc, "label", "node", "kn1", "zone=z1")
    ok(kc, "label", "node", "kn1", "a-")
    assert srv.get_object("nodes", "kn1")["metadata"]["labels"] == {"zone": "z1"}

    ok(kc, "taint", "node", "kn1", "dedicated=x:NoExecute")
    ok(kc, "taint", "node", "kn1",
       "node.cloudprovider.kubernetes.io/uninitialized:NoSchedule-")
    # created through the API: TaintNodesByCondition added not-ready;
    # kubectl taint puts the taints it adds before the ones it keeps
    assert srv.get_object("nodes", "kn1")["spec"]["taints"] == [
        {"key": "dedicated", "value": "x", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]
    r = kubectl(kc, "taint", "node", "kn1", "k=v:Bogus")
    assert r.returncode != 0

    ok(kc, "patch", "node", "kn1", "--type", "merge", "-p",
       '{"spec":{"providerID":"static://kn1"}}')
    ok(kc, "patch", "node", "kn1", "--type", "json", "-p",
       '[{"op":"add","path":"/metadata/annotations","value":{"x":"y"}}]')
    ok(kc, "patch", "node", "kn1", "--type", "strategic", "--subresource",
       "status", "-p",
       '{"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.5"}]}}')
    n = srv.get_object("nodes", "kn1")
    assert n["spec"]["providerID"] == "static://kn1"
    assert n["metadata"]["annotations"] == {"x": "y"}
    assert n["status"]["addresses"] == [{"type": "InternalIP", "address": "10.0.0.5"}]

    r = kubectl(kc, "patch", "node", "kn1", "--type", "merge", "-p",
                '{"spec":{"providerID":"static://other"}}')
    assert r.returncode != 0
    assert ('The Node "kn1" is invalid: spec.providerID: Invalid value: null: '
            'field cannot be modified once set') in r.stderr

    r = kubectl(kc, "patch", "node", "kn1", "--type", "json", "-p",
                '[{"op":"test","path":"/metadata/resourceVersion","value":"1"},'
                '{"op":"remove","path":"/spec/providerID"}]')
    assert r.returncode != 0 and \
        "the server rejected our request due to an error in our request" in r.stderr

    assert "deleted" in ok(kc, "delete", "node", "kn1")
    r = kubectl(kc, "get", "node", "kn1")
    assert r.returncode != 0
    assert 'Error from server (NotFound): nodes "kn1" not found' in r.stderr


CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"},
      "data": {"k": "v"}}


def test_namespaced_objects_and_errors(srv, kc):
    ok(kc, "create", "-n", "kube-system", "-f", "-", stdin=json.dumps(CM))
    r = kubectl(kc, "create", "-n", "kube-system", "-f", "-", stdin=json.dumps(CM))
    assert 'configmaps "cm1" already exists' in r.stderr
    r = kubectl(kc, "create", "-n", "nope", "-f", "-", stdin=json.dumps(CM))
    assert 'namespaces "nope" not found' in r.stderr
    bad = dict(CM, spec={"x": 1})
    r = kubectl(kc, "create", "-n", "default", "-f", "-", stdin=json.dumps(bad))
    assert r.returncode != 0
    assert 'unknown field "spec"' in r.stderr
    # typed commands send protobuf bodies
    ok(kc, "create", "namespace", "typed")
    ok(kc, "create", "configmap", "tcm", "-n", "typed", "--from-literal", "a=1",
       "--from-literal", "b=two")
    ok(kc, "create", "secret", "generic", "tsec", "-n", "typed",
       "--from-literal", "k=v")
    assert srv.get_object("configmaps", "tcm", "typed")["data"] == {"a": "1", "b": "two"}
    assert srv.get_object("secrets", "tsec", "typed")["data"] == {"k": "dg=="}
    assert srv.get_object("secrets", "tsec", "typed")["type"] == "Opaque"
    ns = srv.get_object("namespaces", "typed")
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "typed"}
    out = ok(kc, "get", "cm", "-A", "-o", "name")
    assert "configmap/cm1" in out
    ok(kc, "delete", "cm", "cm1", "-n", "kube-system")


def test_service_and_status_via_kubectl(srv, kc):
    svc = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "lb1", "namespace": "default"},
           "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}}
    ok(kc, "create", "-f", "-", stdin=json.dumps(svc))
    s = json.loads(ok(kc, "get", "svc", "lb1", "-o", "json"))
    assert s["spec"]["ports"][0]["nodePort"] >= 30000
    assert s["spec"]["ports"][0]["targetPort"] == 80
    assert s["status"] == {"loadBalancer": {}}
    ok(kc, "patch", "svc", "lb1", "--subresource", "status", "--type", "merge",
       "-p", '{"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.1"}]}}}')
    s = srv.get_object("services", "lb1", "default")
    assert s["status"]["loadBalancer"]["ingress"] == [{"ip": "192.0.2.1", "ipMode": "VIP"}]
    ok(kc, "delete", "svc", "lb1")


def test_kubectl_sees_rbac_denial(srv, kc, tmp_path):
    kc2 = srv.write_kubeconfig(str(tmp_path / "ccm.conf"),
                               user="system:cloud-controller-manager", groups=[],
                               tls_server_name="kubernetes")
    r = kubectl(kc2, "get", "nodes")
    assert r.returncode != 0
    assert ('nodes is forbidden: User "system:cloud-controller-manager" cannot '
            'list resource "nodes" in API group "" at the cluster scope') in r.stderr
    assert kubectl(kc2, "auth", "can-i", "list", "nodes").stdout.strip() == "no"
    assert kubectl(kc, "auth", "can-i", "list", "nodes").stdout.strip() == "yes"
    ssar = {"apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "list", "resource": "nodes"}}}
    out = json.loads(ok(kc2, "create", "--validate=false", "-f", "-", "-o", "json",
                        stdin=json.dumps(ssar)))
    assert out["status"]["allowed"] is False
