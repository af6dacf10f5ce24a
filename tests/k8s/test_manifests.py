"""Every manifest in static-pod/ as shipped is accepted by the real
kube-apiserver (server-side dry run: defaulting, validation and admission,
nothing stored). The kubeadm configuration and what cloud-init/ writes are
not API objects and are not checked here yet."""

import glob
import os
import time

import pytest

from controlplane import ROOT

SA_TIMEOUT_S = 30
MANIFESTS = sorted(glob.glob(os.path.join(ROOT, "static-pod", "*.yaml")))


@pytest.fixture(scope="module")
def sa_cp(cp):
    """cp once kube-controller-manager made kube-system/default: a Pod
    without serviceAccountName is admitted only then."""
    deadline = time.monotonic() + SA_TIMEOUT_S
    path = "/api/v1/namespaces/kube-system/serviceaccounts/default"
    while cp.client("admin").request("GET", path)[0] != 200:
        assert time.monotonic() < deadline, "no kube-system/default ServiceAccount"
        time.sleep(0.2)
    return cp


@pytest.mark.parametrize("manifest", MANIFESTS, ids=os.path.basename)
def test_shipped_manifest_passes_server_side_dry_run(sa_cp, manifest):
    r = sa_cp.kubectl("apply", "--dry-run=server", "-f", manifest, check=False)
    assert r.returncode == 0, r.stderr
    assert "(server dry run)" in r.stdout
    assert r.stderr == "", r.stderr  # no warning either (deprecated fields...)
