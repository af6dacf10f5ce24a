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

import pytest

from controlplane import peer
from nodes import create_lb_service, poll
from peerrun import KUBE_VIP, KUBE_VIP_IPS, KUBE_VIP_POOL, KUBE_VIP_USER, kube_vip_command, \
    start_kube_vip

TIMEOUT_S = 60


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
