"""The peers bootccm is measured against (bench/peers/), run on the real
control plane (controlplane.py) as upstream deploys them, for
tests/k8s/test_peers.py and bench/peers.py. Their binaries and manifests
come from scripts/k8s-build.sh (controlplane.peer, peers_dir)."""

import os

import yaml

from controlplane import peer, peers_dir

KUBE_VIP = "kube-vip-cloud-provider"
KUBE_VIP_USER = "system:serviceaccount:kube-system:kube-vip-cloud-controller"
KUBE_VIP_POOL = ("192.0.2.20", "192.0.2.29")  # range-global, documentation addresses
KUBE_VIP_MARKER = "successfully acquired lease"  # its log, before its controllers start
KUBE_VIP_IPS = "kube-vip.io/loadbalancerIPs"


def upstream_manifest(name, filename, skip_kinds=()):
    """The documents of a peer's own manifest (as scripts/k8s-build.sh
    keeps it beside the binary), less SKIP_KINDS, as one YAML stream."""
    with open(os.path.join(peers_dir(), "manifests", name, filename)) as f:
        docs = [d for d in yaml.safe_load_all(f) if d and d["kind"] not in skip_kinds]
    return yaml.safe_dump_all(docs)


def start_kube_vip(cp, pool=KUBE_VIP_POOL):
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
