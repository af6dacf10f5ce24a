"""The peers bootccm is measured against (bench/peers/), each run once on the
real control plane so they keep working against our fakes and control plane:
the smoke version of the comparison. Their binaries come from
scripts/k8s-build.sh (make k8s; make check builds them beside bootccm): a
missing one fails the test, it is never skipped.

kube-vip-cloud-provider runs as upstream deploys it (its own manifest's
ServiceAccount and RBAC, leader election on its own Lease name), outside a
Pod (--OutSideCluster: its IPAM client reads $HOME/.kube/config), with a
range pool in its ConfigMap kube-system/kubevip. It is the IPAM half of
kube-vip only: it writes the address it picks into the Service (annotation
kube-vip.io/loadbalancerIPs and spec.loadBalancerIP); the status
(status.loadBalancer.ingress) is written by kube-vip's node daemon, once it
announces the address, which is not part of this comparison.

The official Hetzner Cloud CCM is not here: the Go module proxy this project
reaches refuses its module (docs/build.md, "The peers")."""

import ipaddress
import os

import pytest
import yaml

from controlplane import peer, peers_dir
from nodes import create_lb_service, poll

TIMEOUT_S = 60
KUBE_VIP = "kube-vip-cloud-provider"
KUBE_VIP_USER = "system:serviceaccount:kube-system:kube-vip-cloud-controller"
KUBE_VIP_POOL = ("192.0.2.20", "192.0.2.29")  # range-global, documentation addresses
KUBE_VIP_IPS = "kube-vip.io/loadbalancerIPs"


def upstream_manifest(name, filename, skip_kinds=()):
    """The documents of a peer's own manifest (as scripts/k8s-build.sh
    keeps it beside the binary), less SKIP_KINDS, as one YAML stream."""
    with open(os.path.join(peers_dir(), "manifests", name, filename)) as f:
        docs = [d for d in yaml.safe_load_all(f) if d and d["kind"] not in skip_kinds]
    return yaml.safe_dump_all(docs)


def start_kube_vip(cp, pool):
    """kube-vip-cloud-provider under its upstream RBAC and ServiceAccount
    name (a client certificate of that name), with POOL (first, last) as
    range-global; the process."""
    # upstream's ServiceAccount, ClusterRole and binding; its Deployment is
    # what this process stands for
    cp.kubectl("apply", "-f", "-", input=upstream_manifest(
        KUBE_VIP, "kube-vip-cloud-controller.yaml", skip_kinds=("Deployment",)))
    conf = cp.write_kubeconfig("kube-vip", "kube-vip", KUBE_VIP_USER,
                               orgs=("system:serviceaccounts",
                                     "system:serviceaccounts:kube-system"))
    home = cp.path("kube-vip-home")
    os.makedirs(os.path.join(home, ".kube"), exist_ok=True)
    with open(conf) as src, open(os.path.join(home, ".kube", "config"), "w") as dst:
        dst.write(src.read())
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "kubevip", "namespace": "kube-system"},
          "data": {"range-global": "%s-%s" % pool}}
    status, body = cp.client("admin").request(
        "POST", "/api/v1/namespaces/kube-system/configmaps", cm)
    assert status == 201, body
    return cp.spawn(KUBE_VIP, *kube_vip_command(cp))


def kube_vip_command(cp):
    """kube-vip-cloud-provider's argv and environment (its kubeconfig,
    and as $HOME/.kube/config for its IPAM client), serving no port."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": cp.path("kube-vip-home")}
    return [peer(KUBE_VIP), "--OutSideCluster", "--kubeconfig", cp.kubeconfig("kube-vip"),
            "--leader-elect-resource-name=kube-vip-cloud-controller",
            "--secure-port=0", "--webhook-secure-port=0", "-v=2"], env


def kube_vip_address(cp, admin, proc, name):
    """The address kube-vip-cloud-provider gave Service NAME, once it has."""
    def address():
        assert proc.poll() is None, "%s exited:\n%s" % (KUBE_VIP, cp.log(KUBE_VIP)[-3000:])
        status, body = admin.request("GET", "/api/v1/namespaces/default/services/" + name)
        assert status == 200, body
        return body["metadata"].get("annotations", {}).get(KUBE_VIP_IPS)
    return poll(address, "kube-vip address for " + name, timeout=TIMEOUT_S,
                log=lambda: cp.log(KUBE_VIP)[-3000:])


def service_writes(cp):
    return [e for e in cp.writes(KUBE_VIP_USER) if e["objectRef"]["resource"] == "services"]


def test_kube_vip_cloud_provider_gives_a_service_an_address(cp):
    proc = start_kube_vip(cp, KUBE_VIP_POOL)
    admin = cp.client("admin")
    create_lb_service(admin, "kv-web")
    ip = kube_vip_address(cp, admin, proc, "kv-web")
    first, last = (ipaddress.ip_address(a) for a in KUBE_VIP_POOL)
    assert first <= ipaddress.ip_address(ip) <= last, ip
    status, body = admin.request("GET", "/api/v1/namespaces/default/services/kv-web")
    assert body["spec"].get("loadBalancerIP") == ip, body["spec"]
    assert body["metadata"]["labels"].get("implementation") == "kube-vip", body["metadata"]
    # it wrote as itself, and the real authorizer refused it nothing
    writes = service_writes(cp)
    assert writes and all(e["responseStatus"]["code"] < 400 for e in writes), writes
    # a restart keeps the address: a second Service gets another one
    cp.stop_process(KUBE_VIP)
    log = cp.log(KUBE_VIP)
    assert "forbidden" not in log.lower(), log[-3000:]
    proc = cp.spawn(KUBE_VIP, *kube_vip_command(cp))
    create_lb_service(admin, "kv-api")
    ip2 = kube_vip_address(cp, admin, proc, "kv-api")
    assert ip2 != ip and first <= ipaddress.ip_address(ip2) <= last, (ip, ip2)
    status, body = admin.request("GET", "/api/v1/namespaces/default/services/kv-web")
    assert body["metadata"]["annotations"][KUBE_VIP_IPS] == ip, body["metadata"]
    cp.stop_process(KUBE_VIP)
    log = cp.log(KUBE_VIP)
    assert "forbidden" not in log.lower(), log[-3000:]
    assert all(e["responseStatus"]["code"] < 400 for e in service_writes(cp))


@pytest.fixture(scope="module", autouse=True)
def _peers_built():
    """Name every missing peer at once, before any control plane starts."""
    missing = []
    for name in (KUBE_VIP,):
        try:
            peer(name)
        except FileNotFoundError as e:
            missing.append(str(e))
    assert not missing, "\n".join(missing)
