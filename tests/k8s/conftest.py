"""tests/k8s/: tests against a real control plane (controlplane.py), run by
make check-k8s once make k8s has built the upstream binaries. Each module
that asks for `cp` gets a control plane of its own, shared by its tests;
`ccm_cp` is one where static-pod/rbac.yaml is applied as shipped."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from controlplane import ROOT, ControlPlane  # noqa: E402


@pytest.fixture(scope="module")
def cp():
    with ControlPlane() as c:
        yield c


@pytest.fixture(scope="module")
def ccm_cp(cp):
    cp.kubectl("apply", "-f", os.path.join(ROOT, "static-pod", "rbac.yaml"))
    return cp
