"""tests/demo.py (make demo): it runs to the end and both nodes end
initialized, each from its own source, with the Events to show it; then, on
bare metal, two nodes are initialized from the static provider's inventory
and a LoadBalancer Service gets its address from its pool; bootccm doctor
finds the deadlock before bootccm runs, and then nothing, and the demo ends
with it."""

import os
import re
import sys

import pytest

from helpers import REPO, run

DEMO = REPO / "tests" / "demo.py"


@pytest.fixture(scope="module")
def demo(bootccm_binary):
    path = bootccm_binary.path if bootccm_binary.real else REPO / "build" / "bootccm"
    if not os.access(path, os.X_OK):
        pytest.fail(f"the demo needs the real bootccm: set BOOTCCM or build {path} (make)",
                    pytrace=False)
    return run([sys.executable, DEMO, "--bootccm", path], timeout=120)


def section(out, title):
    start = out.index("--- " + title)
    end = out.find("\n--- ", start + 1)
    return out[start:end if end >= 0 else len(out)]


def test_demo_ends_with_both_nodes_initialized(demo):
    out = demo.stdout
    before = section(out, "Nodes as kubelet")
    after = section(out, "Nodes after bootccm ran")
    assert before.count("uninitialized:NoSchedule") == 2
    assert "uninitialized" not in after
    assert "providerID: <none>" in before and "providerID: <none>" not in after
    assert re.search(r"cp-1\n  providerID: aws:///us-east-2b/i-0a33f80f09c96477f\n"
                     r"  addresses:  InternalIP=172\.31\.3\.15,", after), after
    assert re.search(r"worker-1\n  providerID: aws:///us-east-2c/i-0f1e2d3c4b5a69788\n"
                     r"  addresses:  InternalIP=172\.31\.40\.7", after), after
    # the control-plane and not-ready taints are not bootccm's
    assert "control-plane:NoSchedule" in after and "not-ready:NoExecute" in after
    assert "Both nodes initialized" in out


def test_demo_shows_bootccm_and_its_events(demo):
    out = demo.stdout
    assert '"Initialized node" node="cp-1" source="instance-metadata"' in out
    assert '"Initialized node" node="worker-1" source="kubelet-reported"' in out
    events = section(out, "Events")
    assert re.search(r"Normal +Synced +cp-1 +.*instance metadata", events), events
    assert re.search(r"Normal +Synced +worker-1 +.*kubelet", events), events
    assert "not built yet" not in out


def test_demo_gives_a_loadbalancer_service_an_address_from_a_static_pool(demo):
    out = demo.stdout
    before = section(out, "Service default/web before bootccm ran")
    after = section(out, "Service default/web after bootccm ran")
    assert re.search(r"web +LoadBalancer +10\.96\.\S+ +<pending> +80:\d+/TCP", before), before
    assert "finalizers: <none>" in before
    # the pool's first address (192.168.10.200-192.168.10.220)
    assert re.search(r"web +LoadBalancer +10\.96\.\S+ +192\.168\.10\.200 +80:\d+/TCP",
                     after), after
    assert "finalizers: service.kubernetes.io/load-balancer-cleanup" in after
    assert "kube-vip.io/loadbalancerIPs: 192.168.10.200" in after
    nodes = section(out, "Bare-metal nodes after bootccm ran")
    assert "uninitialized" not in nodes
    assert re.search(r"metal-1\n  providerID: static://metal-1\n  addresses:  "
                     r"InternalIP=10\.20\.0\.11\n  labels:     zone=rack-1, region=dc-1, "
                     r"instance-type=r650", nodes), nodes
    assert "providerID: static://metal-2" in nodes
    events = section(out, "Events of the bare-metal cluster")
    assert re.search(r"Normal +EnsuringLoadBalancer +web +Ensuring load balancer", events)
    assert re.search(r"Normal +EnsuredLoadBalancer +web +Ensured load balancer", events)
    assert '"Initialized node" node="metal-2" source="inventory"' in out
    assert "web got its address" in out


def test_demo_finds_the_deadlock_then_ends_with_a_healthy_doctor(demo):
    out = demo.stdout
    before = section(out, "Before bootccm runs")
    assert "DEADLOCK uninitialized-no-ccm" in before, before
    assert "objects: node/cp-1, node/worker-1, lease/kube-system/cloud-controller-manager" \
        in before, before
    assert "(exit status 2)" in before
    after = section(out, "After bootccm ran")
    assert "doctor: healthy: 0 deadlocks, 0 warnings" in after and "(exit status 0)" in after
    last = section(out, "The bare-metal cluster, checked")
    assert "doctor: healthy" in last and "(exit status 0)" in last
    assert out.rstrip().endswith("bootccm doctor finds nothing wrong with the bare-metal cluster.")
