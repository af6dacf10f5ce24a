"""Every Kubernetes object bootccm ships or has written is accepted by the
real kube-apiserver (server-side dry run: defaulting, validation and
admission, nothing stored): the manifests in static-pod/ as shipped, the
static pod kubeadm/install-bootccm.sh writes for each --manifest kind, and
what the cloud-init/ first boot writes and applies (its install-bootccm.sh
calls replayed, into a temporary --root). The kubeadm configuration
(kubeadm/*.yaml, and as the first boot renders it) holds no API object:
`kubeadm config validate` checks it when the build has a kubeadm, else the
test asserts that its every kind belongs to a group the API server does not
serve, so nothing in it escapes the dry runs."""

import glob
import os
import re
import shutil
import sys
import time

import pytest
import yaml

from controlplane import ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "install"))
import test_cloud_init as cloud_init  # noqa: E402  (its first-boot sandbox)
from helpers import CLOUD_INIT, INSTALL, make_ca, run  # noqa: E402

SA_TIMEOUT_S = 30
MANIFESTS = sorted(glob.glob(os.path.join(ROOT, "static-pod", "*.yaml")))
KUBEADM_FILES = sorted(glob.glob(os.path.join(ROOT, "kubeadm", "*.yaml")))
CLOUD_INIT_FILES = sorted(CLOUD_INIT.glob("*.yaml"))
# the groups of kubeadm's configuration files: read by kubeadm and the
# kubelet, never served by the API server
CONFIG_GROUPS = {"kubeadm.k8s.io", "kubelet.config.k8s.io", "kubeproxy.config.k8s.io"}


def bootccm():
    return os.path.abspath(os.environ.get("BOOTCCM", os.path.join(ROOT, "build", "bootccm")))


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


def dry_run(cp, path):
    r = cp.kubectl("apply", "--dry-run=server", "-f", str(path), check=False)
    assert r.returncode == 0, "%s: %s" % (path, r.stderr)
    assert "(server dry run)" in r.stdout, r.stdout
    assert r.stderr == "", r.stderr  # no warning either (deprecated fields...)
    return r.stdout


def api_objects(root):
    """The files under ROOT that hold Kubernetes API objects (not a kubeconfig,
    not a configuration file of kubeadm's)."""
    out = []
    for p in sorted(glob.glob(os.path.join(str(root), "**", "*.yaml"), recursive=True)):
        with open(p) as f:
            docs = [d for d in yaml.safe_load_all(f) if isinstance(d, dict)]
        if any(d.get("kind") and d.get("kind") != "Config" and
               d.get("apiVersion", "").split("/")[0] not in CONFIG_GROUPS for d in docs):
            out.append(p)
    return out


def kubeadm_config_ok(cp, path):
    """kubeadm config validate, or: no document of PATH is of a served group."""
    kubeadm = shutil.which("kubeadm", path=os.environ.get("BOOTCCM_K8S_BIN", ""))
    if kubeadm:
        r = run([kubeadm, "config", "validate", "--config", path], check=False)
        assert r.returncode == 0, r.stdout + r.stderr
        return
    served = set(cp.kubectl("api-versions").stdout.split())
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    assert docs, path
    for d in docs:
        group = d["apiVersion"].split("/")[0]
        assert group in CONFIG_GROUPS and d["apiVersion"] not in served, (path, d["kind"])


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    return make_ca(tmp_path_factory.mktemp("ca"))


def new_root(tmp_path, ca):
    r = tmp_path / "root"
    (r / "etc/kubernetes/pki").mkdir(parents=True)
    for f in ("ca.crt", "ca.key"):
        shutil.copy2(ca / f, r / "etc/kubernetes/pki" / f)
    return r


@pytest.mark.parametrize("manifest", MANIFESTS, ids=os.path.basename)
def test_shipped_manifest_passes_server_side_dry_run(sa_cp, manifest):
    dry_run(sa_cp, manifest)


@pytest.mark.parametrize("path", KUBEADM_FILES, ids=os.path.basename)
def test_kubeadm_configuration_holds_no_api_object_or_validates(sa_cp, path):
    kubeadm_config_ok(sa_cp, path)


@pytest.mark.parametrize("kind", ["static", "hostbinary"])
def test_what_the_installer_writes_passes_server_side_dry_run(sa_cp, tmp_path, ca, kind):
    root = new_root(tmp_path, ca)
    run(["sh", INSTALL, "--root", root, "--binary", bootccm(), "--no-wait", "--manifest", kind,
         "--cloud-provider", "metadata"])
    written = api_objects(root)
    assert [os.path.basename(p) for p in written] == ["bootccm.yaml"], written
    assert "pod/bootccm" in dry_run(sa_cp, written[0])


@pytest.mark.parametrize("path", CLOUD_INIT_FILES, ids=lambda p: p.name)
def test_what_cloud_init_writes_and_applies_passes_server_side_dry_run(sa_cp, tmp_path, ca,
                                                                       path):
    """The first boot runs with stubs that log their calls (tests/install);
    its install-bootccm.sh calls run again for real, into a --root: the
    kubeadm configuration rendered, the static pod written, and (with
    --dry-run) the RBAC the second call would apply."""
    top = tmp_path / "top"
    top.mkdir()
    proc, calls = cloud_init.sandboxed(path, top, {})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    root = new_root(tmp_path, ca)
    installs = [c[1:] for c in calls if c[0] == "install-bootccm.sh"]
    applied, rendered = [], []
    for args in installs:
        if args[0] == "--render-kubeadm-config":
            # the kubelet flags were one argument
            i = args.index("--kubelet-flags")
            run(["sh", INSTALL] + args[:i + 1] + [" ".join(args[i + 1:])],
                env=dict(os.environ, **cloud_init.env_file(path)))
            rendered.append(args[2])
            continue
        args = list(args)
        args[args.index("--binary") + 1] = bootccm()
        if "--no-wait" in args:
            run(["sh", INSTALL, "--root", root] + args)
        else:
            # after kubeadm init, which wrote admin.conf
            shutil.copy(sa_cp.kubeconfig("admin"), root / "etc/kubernetes/admin.conf")
            out = run(["sh", INSTALL, "--root", root, "--dry-run"] + args).stdout
            applied += re.findall(r"kubectl --kubeconfig \S+ apply -f (\S+)", out)
    assert rendered, calls
    for p in rendered:
        kubeadm_config_ok(sa_cp, p)
    written = api_objects(root)
    if path.name == "control-plane.yaml":
        assert [os.path.basename(p) for p in written] == ["bootccm.yaml"], written
        assert applied == [os.path.join(ROOT, "static-pod", "rbac.yaml")], installs
    else:
        assert written == [] and applied == [], (written, applied)
    for p in written + applied:
        dry_run(sa_cp, p)
