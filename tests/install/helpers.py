"""Helpers shared by the tests/install modules: paths, required tools, YAML,
the Kubernetes schema validator, the installer and image scripts."""

import json
import os
import pathlib
import shutil
import subprocess

import pytest
import yaml

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
STATIC_POD = REPO / "static-pod"
KUBEADM = REPO / "kubeadm"
CLOUD_INIT = REPO / "cloud-init"
INSTALL = KUBEADM / "install-bootccm.sh"
MAKE_IMAGE = REPO / "scripts" / "make-image.sh"

CCM_USER = "system:cloud-controller-manager"


def require_tool(name, package):
    """Path of tool NAME; a missing tool fails the test (never skips it)."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(
            f"'{name}' is not installed: it comes with the Debian package "
            f"'{package}' (listed in scripts/packages.txt; "
            f"scripts/install-packages.sh installs it)",
            pytrace=False,
        )
    return path


def run(args, *, check=True, timeout=300, **kw):
    """Run ARGS, capture text output; on an unexpected exit status fail with
    the command and both streams."""
    proc = subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )
    if check and proc.returncode != 0:
        pytest.fail(
            f"{' '.join(map(str, args))} exited {proc.returncode}\n"
            f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}",
            pytrace=False,
        )
    return proc


def load_yaml_docs(path):
    """Every non-empty YAML document of PATH."""
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def validate_k8s(node_modules, *paths):
    """Run validate-k8s.mjs on PATHS; return (returncode, output lines,
    summary dict)."""
    node = require_tool("node", "nodejs")
    proc = run([node, HERE / "validate-k8s.mjs", *paths], check=False, cwd=HERE)
    lines = proc.stdout.splitlines()
    summary = None
    for line in lines:
        if line.startswith("SUMMARY "):
            summary = json.loads(line[len("SUMMARY "):])
    if summary is None:
        pytest.fail(
            f"validate-k8s.mjs printed no summary (exit {proc.returncode})\n"
            f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}",
            pytrace=False,
        )
    return proc.returncode, lines, summary


def make_ca(root):
    """A cluster CA as kubeadm lays it out: ROOT/etc/kubernetes/pki/ca.{crt,key}."""
    openssl = require_tool("openssl", "openssl")
    pki = pathlib.Path(root) / "etc" / "kubernetes" / "pki"
    pki.mkdir(parents=True, exist_ok=True)
    run([
        openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes",
        "-keyout", pki / "ca.key", "-out", pki / "ca.crt", "-days", "3650",
        "-subj", "/CN=kubernetes",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign",
    ])
    os.chmod(pki / "ca.key", 0o600)
    return pki


def snapshot(root):
    """{relative path: (mode, bytes, mtime_ns)} of everything under ROOT."""
    root = pathlib.Path(root)
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        data = p.read_bytes() if p.is_file() else None
        out[str(p.relative_to(root))] = (st.st_mode, data, st.st_mtime_ns)
    return out


def mode(path):
    return pathlib.Path(path).stat().st_mode & 0o7777
