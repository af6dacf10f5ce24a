"""kubectl for the suites that run against the stand-ins: the kubectl of the
pinned Kubernetes release (scripts/k8s-build.sh kubectl builds it once into
the cache, before the other upstream programs), never whichever kubectl a
machine happens to have. BOOTCCM_KUBECTL names another one."""

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_path = None


def kubectl_path():
    """The pinned kubectl's path; waits for (or makes) its build."""
    global _path
    if _path is None:
        p = os.environ.get("BOOTCCM_KUBECTL")
        if not p:
            r = subprocess.run([os.path.join(ROOT, "scripts", "k8s-build.sh"), "kubectl"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError("scripts/k8s-build.sh kubectl failed:\n" + r.stderr)
            p = r.stdout.strip()
        _path = p
    return _path


def kubectl(kc, *args, stdin=None, timeout=30):
    """kubectl --kubeconfig KC ARGS..., its output captured."""
    return subprocess.run([kubectl_path(), "--kubeconfig", kc] + list(args),
                          capture_output=True, text=True, input=stdin, timeout=timeout)
