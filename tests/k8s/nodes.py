"""What the tests in tests/k8s/ share about Nodes and bootccm: a Node as a
kubelet registers it, the fake EC2 metadata service, bootccm's command
line for the metadata provider, a token allowed to read its /metrics, and
the poll that waits on what it does."""

import importlib.util
import os
import time

from controlplane import ROOT

FAKES = os.path.join(ROOT, "tests", "fakes", "metadata")
EC2_DMI = os.path.join(FAKES, "dmi", "ec2")
NODE = "worker-a"
# the InternalIP of the fake's default EC2 identity (identities/ec2.json)
NODE_IP = "172.31.3.15"
UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized"


def fake_metadata():
    """The fake metadata services' module (tests/fakes/metadata/server.py):
    fake_metadata().FakeMetadata("ec2").start() serves the default EC2
    identity on loopback."""
    spec = importlib.util.spec_from_file_location("fake_metadata_server",
                                                  os.path.join(FAKES, "server.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def kubelet_node(name, node_ip, provider_id=None):
    """A Node as kubelet --cloud-provider=external --node-ip registers it
    (with --provider-id when provider_id is given)."""
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                    "kubernetes.io/arch": "amd64"},
                         "annotations": {"alpha.kubernetes.io/provided-node-ip": node_ip}},
            "spec": {"taints": [
                {"key": UNINITIALIZED, "value": "true", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}}
    if provider_id:
        node["spec"]["providerID"] = provider_id
    return node


def create_lb_service(admin, name, ns="default"):
    """A LoadBalancer Service NAME (one TCP port, selector app=NAME) created
    by ADMIN (a controlplane.Client); the object stored."""
    obj = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": name, "namespace": ns},
           "spec": {"type": "LoadBalancer", "selector": {"app": name},
                    "ports": [{"name": "http", "port": 80, "protocol": "TCP",
                               "targetPort": 8080}]}}
    status, body = admin.request("POST", "/api/v1/namespaces/%s/services" % ns, obj)
    assert status == 201, body
    return body


def tainted(node):
    return any(t["key"] == UNINITIALIZED for t in node["spec"].get("taints") or [])


def metadata_daemon_args(cp, md, node=NODE, extra=()):
    """bootccm's arguments: the metadata provider for NODE with the fake
    EC2 metadata service md, as system:cloud-controller-manager."""
    return ["--kubeconfig", cp.kubeconfig("cloud-controller-manager"),
            "--cloud-provider=metadata", "--node-name", node,
            "--metadata-cloud=ec2", "--metadata-endpoint=" + md.url,
            "--metadata-dmi-dir=" + EC2_DMI] + list(extra)


def metrics_reader_token(cp, name):
    """A token of a new ServiceAccount default/NAME that the ClusterRole
    metrics-reader (made on first use) lets get /metrics, as a Prometheus
    scraper is set up."""
    token = cp.service_account_token(name)
    if cp.kubectl("get", "clusterrole", "metrics-reader", check=False).returncode != 0:
        cp.kubectl("create", "clusterrole", "metrics-reader", "--verb=get",
                   "--non-resource-url=/metrics")
    cp.kubectl("create", "clusterrolebinding", "metrics-reader-" + name,
               "--clusterrole=metrics-reader", "--serviceaccount=default:" + name)
    return token


def poll(pred, what, daemon=None, timeout=30.0, log=None, interval=0.1):
    """pred()'s first true value, polled every INTERVAL; fails after TIMEOUT
    seconds, or as soon as DAEMON (a harness.Daemon) has exited, naming
    WHAT, with the end of DAEMON's output (or of log())."""
    def tail():
        if log:
            return log()
        return daemon.output()[-3000:] if daemon else ""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        assert daemon is None or daemon.alive(), "bootccm exited:\n" + tail()
        assert time.monotonic() < deadline, "no %s within %ss:\n%s" % (what, timeout, tail())
        time.sleep(interval)
