"""The static provider's instances, end to end: the real binary with
--cloud-provider=static against the fake API server under the shipped RBAC.

1. Nodes in the inventory are initialized from it (providerID, topology and
   extra labels, addresses); a node outside a non-authoritative inventory
   from what its kubelet reported.
2. A broken inventory edit: the last good inventory stays in force, a log
   line and a Warning Event on the local Node name the file and line; the
   fixed file is read without a restart, with a Normal Event.
3. authoritative: true deletes a NotReady Node absent from the inventory
   (and not one in it); without it, nothing is deleted."""

import os

import pytest

from test_bootstrap import (ccm_kubeconfig, check_event, events_for, load_rbac, register,
                            wait_event, wait_initialized)

INVENTORY = """\
instances:
  - name: cp-1
    addresses:
      - {type: InternalIP, address: 10.0.0.1}
    zone: rack-1
    region: dc-1
    instanceType: r640
  - name: worker-1
    providerID: metal://rack-2/u17
    addresses:
      - {type: InternalIP, address: 10.0.0.11}
      - {type: ExternalIP, address: 192.0.2.50}
    zone: rack-2
    region: dc-1
    instanceType: r650
    labels: {example.com/pool: gpu}
"""

# What the kubelet of a node outside the inventory reported (--provider-id,
# --node-ip, --node-labels).
WORKER_9 = {"providerID": "metal://rack-9/u1", "zone": "rack-9", "region": "dc-1",
            "instanceType": "r650", "addresses": [{"type": "InternalIP",
                                                   "address": "10.0.0.99"}]}


def static_args(api, tmp, inventory=INVENTORY, authoritative=False):
    load_rbac(api)
    put(tmp, "inventory.yaml", inventory)
    cfg = put(tmp, "cloud.yaml", "static:\n  inventory: inventory.yaml\n"
              "  authoritative: %s\n" % ("true" if authoritative else "false"))
    kc = ccm_kubeconfig(api, tmp)
    return ["--kubeconfig", kc, "--cloud-provider=static", "--cloud-config", cfg,
            "--node-name", "cp-1", "--secure-port=0", "--leader-elect=false"]


def put(tmp, name, text):
    """Writes name as an installer should: a new file renamed over the old."""
    path = os.path.join(tmp, name)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)
    return path


def labels(node):
    return node["metadata"].get("labels") or {}


def addresses(node):
    return [(a["type"], a["address"]) for a in node["status"].get("addresses") or []]


def test_nodes_from_the_inventory_and_from_their_kubelet(api, tmp, daemon):
    args = static_args(api, tmp)
    register(api, "cp-1", control_plane=True)
    register(api, "worker-1")
    register(api, "worker-9", reported=WORKER_9)     # not in the inventory
    d = daemon(args)
    for name in ("cp-1", "worker-1", "worker-9"):
        wait_initialized(api, name, timeout=15)
    w1 = api.get_object("nodes", "worker-1")
    assert w1["spec"]["providerID"] == "metal://rack-2/u17"
    assert labels(w1)["topology.kubernetes.io/zone"] == "rack-2"
    assert labels(w1)["topology.kubernetes.io/region"] == "dc-1"
    assert labels(w1)["node.kubernetes.io/instance-type"] == "r650"
    assert labels(w1)["example.com/pool"] == "gpu"
    assert addresses(w1) == [("InternalIP", "10.0.0.11"), ("ExternalIP", "192.0.2.50")]
    cp = api.get_object("nodes", "cp-1")
    assert cp["spec"]["providerID"] == "static://cp-1"
    assert labels(cp)["topology.kubernetes.io/zone"] == "rack-1"
    w9 = api.get_object("nodes", "worker-9")
    assert w9["spec"]["providerID"] == "metal://rack-9/u1"
    assert addresses(w9) == [("InternalIP", "10.0.0.99")]
    assert labels(w9)["topology.kubernetes.io/zone"] == "rack-9"
    check_event(wait_event(api, "worker-9", "Synced"), "Normal", "kubelet")
    check_event(wait_event(api, "worker-1", "Synced"), "Normal", "inventory file")
    assert d.alive(), d.output()


def test_broken_inventory_keeps_the_last_good_and_says_where(api, tmp, daemon):
    args = static_args(api, tmp)
    register(api, "cp-1", control_plane=True)
    d = daemon(args)
    wait_initialized(api, "cp-1", timeout=15)
    # worker-2 added, but its zone (the file's last line) is no string
    put(tmp, "inventory.yaml", INVENTORY + "  - name: worker-2\n    zone: [rack-3]\n")
    ev = wait_event(api, "cp-1", "ProviderInputInvalid", timeout=15)
    where = "%s:%d:11:" % (os.path.join(tmp, "inventory.yaml"), INVENTORY.count("\n") + 2)
    check_event(ev, "Warning", where,
                "key \"zone\" in instances[2]", "the last good inventory stays in force")
    d.wait_for("The cloud provider's input is broken", timeout=5)
    # the last good inventory still answers
    register(api, "worker-1")
    wait_initialized(api, "worker-1", timeout=15)
    assert labels(api.get_object("nodes", "worker-1"))["topology.kubernetes.io/zone"] == \
        "rack-2"
    # fixed: read again without a restart
    put(tmp, "inventory.yaml", INVENTORY + "  - name: worker-2\n    zone: rack-3\n")
    check_event(wait_event(api, "cp-1", "ProviderInputValid", timeout=15), "Normal",
                "good again")
    # an entry without addresses: those its kubelet reported (--node-ip)
    register(api, "worker-2", node_ip="10.0.0.12")
    wait_initialized(api, "worker-2", timeout=15)
    w2 = api.get_object("nodes", "worker-2")
    assert labels(w2)["topology.kubernetes.io/zone"] == "rack-3"
    assert w2["spec"]["providerID"] == "static://worker-2"
    assert addresses(w2) == [("InternalIP", "10.0.0.12")]
    assert len(events_for(api, "cp-1", "ProviderInputInvalid")) == 1
    assert d.alive(), d.output()


def not_ready(api, name):
    o = api.get_object("nodes", name)
    o["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    api.update_object(o, subresource="status")


@pytest.mark.parametrize("authoritative", [True, False])
def test_authoritative_decides_deletion(api, tmp, daemon, authoritative):
    args = static_args(api, tmp, authoritative=authoritative)
    register(api, "cp-1", control_plane=True)
    register(api, "worker-1")
    register(api, "gone", node_ip="10.0.0.77")
    for n in ("worker-1", "gone"):
        not_ready(api, n)
    d = daemon(args + ["--node-monitor-period=200ms", "--node-deletion-grace-period=0"])
    if authoritative:
        api.wait_for_object("nodes", "gone", lambda o: o is None, timeout=15)
        check_event(wait_event(api, "gone", "DeletingNode"), "Normal")
    else:
        # the lifecycle controller asked and was told "cannot tell"
        d.wait_for("The cloud provider cannot tell whether instances exist", timeout=15)
        assert api.get_object("nodes", "gone") is not None
    assert api.get_object("nodes", "worker-1") is not None
    assert d.alive(), d.output()
