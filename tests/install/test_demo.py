"""tests/demo.py (make demo): it runs to the end and both nodes end
initialized, each from its own source, with the Events to show it."""

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
