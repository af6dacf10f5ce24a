"""kubeadm/install-bootccm.sh end to end, the way a first control-plane node
boots: the script runs into a temporary root before any API server exists
(a stand-in `kubeadm` makes the cluster CA, as `kubeadm init phase certs ca`
would), bootccm starts the way the installed static pod's command line says,
the API server comes up later with a serving certificate from that CA
(DNS:kubernetes, no IP:127.0.0.1, like kubeadm's), bootccm waits through
refused connections and 403s, the script's after-init run applies the RBAC,
and the tainted control-plane node gets initialized from the instance
metadata service. Also: the kubeconfig the script writes, against a server
whose certificate does not name `kubernetes`."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest
import yaml

import apiserver
from conftest import ROOT, bootccm_path, free_port, https_get as get
from conftest import events_about
from kubectl import kubectl_path

sys.path.insert(0, os.path.join(ROOT, "tests", "fakes", "metadata"))
import dmi  # noqa: E402
from server import FakeMetadata  # noqa: E402

INSTALL = os.path.join(ROOT, "kubeadm", "install-bootccm.sh")
RBAC_YAML = os.path.join(ROOT, "static-pod", "rbac.yaml")
CCM_USER = "system:cloud-controller-manager"
NODE = "cp-1"
METRICS_TOKEN = "install-e2e-metrics-token-0123456789"
KUBECONFIG = "etc/kubernetes/cloud-controller-manager.conf"
MANIFEST = "etc/kubernetes/manifests/bootccm.yaml"

UNINITIALIZED = {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true",
                 "effect": "NoSchedule"}
# What a control-plane Node carries right after `kubelet --cloud-provider=external`
# registered it and kubeadm's mark-control-plane phase ran.
OTHER_TAINTS = [
    {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
    {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
]

# `kubeadm init phase certs ca --cert-dir DIR`, as far as this script needs:
# an RSA-2048 CA (kubeadm's default) in DIR/ca.{crt,key}.
FAKE_KUBEADM = """#!/bin/sh
printf '%%s\\n' "$*" >>"%(log)s"
[ "$1 $2 $3 $4 $5" = "init phase certs ca --cert-dir" ] || exit 3
mkdir -p "$6"
"%(openssl)s" req -x509 -newkey rsa:2048 -nodes -keyout "$6/ca.key" -out "$6/ca.crt" \\
  -days 3650 -subj /CN=kubernetes -addext basicConstraints=critical,CA:TRUE \\
  -addext keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign 2>/dev/null
chmod 600 "$6/ca.key"
"""


def need(tool):
    path = shutil.which(tool)
    if path is None:
        pytest.fail("'%s' is not installed (scripts/packages.txt)" % tool, pytrace=False)
    return path




def script(args, env, timeout=120):
    proc = subprocess.run(["sh", INSTALL] + [str(a) for a in args], capture_output=True,
                          text=True, env=env, timeout=timeout)
    assert proc.returncode == 0, "install-bootccm.sh %s exited %d\n%s%s" % (
        " ".join(map(str, args)), proc.returncode, proc.stdout, proc.stderr)
    return proc


def pod_command(root, node_name, replace):
    """The bootccm container's command line from ROOT's installed manifest,
    as the kubelet would run it on this node: $(NODE_NAME) expanded from the
    pod's env, every absolute path mapped through its volume mount to the
    hostPath and then into ROOT (a path no mount covers fails the test: the
    pod could not see it); REPLACE {flag: value} swaps the value of a flag
    (only for the ports of the fakes)."""
    with open(os.path.join(root, MANIFEST)) as f:
        pod = yaml.safe_load(f)
    c = pod["spec"]["containers"][0]
    env = {}
    for e in c.get("env", []):
        if "value" in e:
            env[e["name"]] = e["value"]
        elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName":
            env[e["name"]] = node_name
    vols = {v["name"]: v["hostPath"]["path"] for v in pod["spec"]["volumes"] if "hostPath" in v}
    mounts = sorted(((m["mountPath"], vols[m["name"]]) for m in c.get("volumeMounts", [])),
                    key=lambda m: -len(m[0]))

    def host(path):
        for mp, hp in mounts:
            if path == mp or path.startswith(mp + "/"):
                return root + hp + path[len(mp):]
        pytest.fail("%s is in the command line but no volume mounts it" % path)

    out = []
    for a in c["command"] + c.get("args", []):
        for k, v in env.items():
            a = a.replace("$(%s)" % k, v)
        flag, eq, val = a.partition("=")
        if eq and flag in replace:
            val = replace[flag]
        if a.startswith("/"):
            a = host(a)
        elif eq and val.startswith("/"):
            a = flag + "=" + host(val)
        elif eq:
            a = flag + "=" + val
        out.append(a)
    return out


class Pod(object):
    """The bootccm container's process, its output in a file."""

    def __init__(self, argv):
        self.argv = argv
        fd, self.log_path = tempfile.mkstemp(prefix="bootccm-pod-", suffix=".log")
        with os.fdopen(fd, "w") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)

    def output(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_for(self, text, timeout=30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output():
                return
            assert self.proc.poll() is None, "bootccm exited %s before %r:\n%s" % (
                self.proc.returncode, text, self.output())
            time.sleep(0.05)
        raise AssertionError("no %r within %ss:\n%s" % (text, timeout, self.output()))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        out = self.output()
        os.unlink(self.log_path)
        return self.proc.returncode, out




def probe(port, path):
    return get(port, path)[0]


def wait_probe(port, path, want, timeout=30.0):
    deadline = time.monotonic() + timeout
    got = None
    while time.monotonic() < deadline:
        try:
            got = probe(port, path)
        except OSError as e:
            got = e
        if got == want:
            return
        time.sleep(0.1)
    raise AssertionError("%s answered %s, not %s, within %ss" % (path, got, want, timeout))


def san_of(cert_path):
    out = subprocess.run([need("openssl"), "x509", "-noout", "-ext", "subjectAltName", "-in",
                          cert_path], capture_output=True, text=True, check=True).stdout
    return {s.strip() for s in out.splitlines()[-1].split(",")}


def kubelet_node(name):
    """A Node as `kubelet --cloud-provider=external` (no --node-ip) registers
    it on Kubernetes 1.29+: no addresses, no providerID."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                    "kubernetes.io/arch": "amd64",
                                    "node-role.kubernetes.io/control-plane": ""}},
            "spec": {"taints": [UNINITIALIZED] + OTHER_TAINTS}}


@pytest.fixture
def node_root(tmp):
    """A node's root file system with the EC2 DMI tree and a stand-in
    kubeadm on PATH; (root, env, kubeadm log)."""
    root = os.path.join(tmp, "root")
    os.makedirs(root)
    dmi.install("ec2", os.path.join(root, "sys/class/dmi/id"))
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir)
    log = os.path.join(tmp, "kubeadm.log")
    with open(os.path.join(bindir, "kubeadm"), "w") as f:
        f.write(FAKE_KUBEADM % {"log": log, "openssl": need("openssl")})
    os.chmod(os.path.join(bindir, "kubeadm"), 0o755)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"))
    return root, env, log


def api_server_with_ca_of(root, tmp, port, sans=None):
    """The fake API server on PORT, serving a certificate signed by ROOT's
    cluster CA (the fake reuses a CA already in its state directory)."""
    state = os.path.join(tmp, "apiserver")
    os.makedirs(os.path.join(state, "pki"))
    for f in ("ca.crt", "ca.key"):
        shutil.copy2(os.path.join(root, "etc/kubernetes/pki", f), os.path.join(state, "pki", f))
    return apiserver.FakeAPIServer(state_dir=state, port=port, sans=sans).start()


def test_install_before_the_api_server_then_rbac_then_the_node_is_initialized(node_root, tmp):
    root, env, kubeadm_log = node_root
    # the installer applies the RBAC with kubectl: the pinned release's
    env["PATH"] = os.path.dirname(kubectl_path()) + os.pathsep + env["PATH"]
    bind_port = free_port()
    with FakeMetadata("ec2") as md:
        # --- before kubeadm init: no CA, no API server ---------------------
        args = ["--root", root, "--binary", bootccm_path(), "--manifest", "hostbinary",
                "--bind-port", bind_port, "--extra-arg=--metadata-endpoint=" + md.url]
        first = script(args + ["--no-wait"], env)
        with open(kubeadm_log) as f:
            assert f.read() == "init phase certs ca --cert-dir %s/etc/kubernetes/pki\n" % root
        assert "RBAC not applied (--no-wait)" in first.stdout
        with open(os.path.join(root, KUBECONFIG)) as f:
            cluster = yaml.safe_load(f)["clusters"][0]["cluster"]
        assert cluster["server"] == "https://127.0.0.1:%d" % bind_port
        assert cluster["tls-server-name"] == "kubernetes"

        # The kubelet starts the static pod; nothing listens on the port yet.
        serve_port = free_port()
        argv = pod_command(root, NODE, {"--secure-port": str(serve_port)})
        assert argv[0] == os.path.join(root, "usr/local/bin/bootccm")
        assert "--metadata-endpoint=" + md.url in argv
        assert "--metadata-dmi-dir=%s/sys/class/dmi/id" % root in argv
        assert "--leader-elect=true" in argv and "--node-name=" + NODE in argv
        pod = Pod(argv)
        try:
            pod.wait_for('"Waiting for the API server"')
            wait_probe(serve_port, "/healthz", 200)
            assert probe(serve_port, "/readyz") != 200

            # --- kubeadm init: the API server comes up on the kubeconfig's port
            srv = api_server_with_ca_of(root, tmp, bind_port)
            try:
                check_init(root, env, args, srv, pod, serve_port, md)
            finally:
                srv.stop()
        finally:
            rc, out = pod.stop()
        assert "ERROR: AddressSanitizer" not in out and "runtime error:" not in out, out
        assert rc in (0, -signal.SIGTERM), "bootccm exited %s:\n%s" % (rc, out)


def check_init(root, env, args, srv, pod, serve_port, md):
    ca = os.path.join(root, "etc/kubernetes/pki/ca.crt")
    subprocess.run([need("openssl"), "verify", "-CAfile", ca, srv.serving.cert], check=True,
                   capture_output=True)
    sans = san_of(srv.serving.cert)
    assert "DNS:kubernetes" in sans and not any(s.startswith("IP Address:127.") for s in sans), sans

    # The kubelet registers its Node; bootccm has no RBAC yet: 403s, and it waits.
    srv.create_object(kubelet_node(NODE))
    pod.wait_for('"API server answered"')
    pod.wait_for('"Authenticated" user="%s"' % CCM_USER)
    srv.wait_for_request(lambda e: e["user"] == CCM_USER and e.get("resource") == "nodes"
                         and e["verb"] == "list" and e["code"] == 403, timeout=30)
    pod.wait_for("(HTTP 403, Forbidden)")
    assert pod.proc.poll() is None
    assert probe(serve_port, "/readyz") != 200
    node = srv.get_object("nodes", NODE)
    assert node["spec"]["taints"] == [UNINITIALIZED] + OTHER_TAINTS
    assert not node["status"].get("addresses")

    # kubeadm init wrote admin.conf; the script's run after init applies the RBAC.
    shutil.copy2(os.path.join(srv.state_dir, "admin.kubeconfig"),
                 os.path.join(root, "etc/kubernetes/admin.conf"))
    with open(os.path.join(root, MANIFEST), "rb") as f:
        manifest = f.read()
    seq = srv.log_seq()
    second = script(args, env)
    assert "nothing changed" in second.stdout, second.stdout
    assert "clusterrole.rbac.authorization.k8s.io/%s created" % CCM_USER in second.stdout
    with open(os.path.join(root, MANIFEST), "rb") as f:
        assert f.read() == manifest, "the kubelet would restart the pod"
    assert srv.get_object("clusterrolebindings", CCM_USER, group="rbac.authorization.k8s.io")

    # The node is initialized from the metadata service, addresses first.
    node = srv.wait_for_object("nodes", NODE, timeout=30, pred=lambda n: UNINITIALIZED not in
                               n["spec"].get("taints", []))
    ident = md.identity_snapshot()
    facts = json.loads(subprocess.run(
        [bootccm_path(), "metadata", "--format=json", "--metadata-endpoint=" + md.url,
         "--metadata-dmi-dir=%s/sys/class/dmi/id" % root],
        capture_output=True, text=True, check=True).stdout)
    assert node["spec"]["providerID"] == "aws:///%s/%s" % (ident["zone"], ident["instance_id"])
    assert node["status"]["addresses"] == facts["addresses"]
    assert {"type": "InternalIP", "address": ident["private_ipv4"]} in node["status"]["addresses"]
    labels = node["metadata"]["labels"]
    for ga, beta, want in (
            ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone", ident["zone"]),
            ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region",
             ident["region"]),
            ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type",
             ident["instance_type"])):
        assert labels.get(ga) == want and labels.get(beta) == want, labels
    assert node["spec"]["taints"] == OTHER_TAINTS

    # Two writes did it: the addresses, then labels, providerID and the taint
    # (the fake logs the second once it has answered it, after storing it).
    srv.wait_for_request(lambda e: e.get("resource") == "nodes" and e.get("name") == NODE
                         and not e.get("subresource") and e["code"] == 200, since=seq)
    writes = [e for e in srv.writes(since=seq)
              if e["user"] == CCM_USER and e.get("resource") == "nodes" and e.get("name") == NODE]
    done = [e for e in writes if e["code"] == 200]
    assert [(e["verb"], e.get("subresource") or "") for e in writes] == \
        [("patch", "status"), ("patch", "")], json.dumps(writes, indent=1)
    assert "taints" not in json.dumps(done[0]["body"])

    ev = poll(lambda: synced_events(srv), "a Synced event for %s" % NODE)
    assert "instance metadata" in ev[0]["message"], ev
    pod.wait_for('"Initialized node" node="%s" source="instance-metadata"' % NODE)
    wait_probe(serve_port, "/readyz", 200)
    srv.add_token(METRICS_TOKEN, "kubernetes-admin", ("system:masters",))
    code, metrics = get(serve_port, "/metrics", METRICS_TOKEN)
    assert code == 200, metrics
    assert re.search(r'^bootccm_node_initializations_total\{source="instance-metadata"\} 1$',
                     metrics, re.M), metrics


def poll(fn, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = fn()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("no %s within %ss" % (what, timeout))


def synced_events(srv):
    return events_about(srv, "Node", NODE, "Synced")


def test_installed_kubeconfig_works_on_loopback_and_fails_cleanly_on_a_name_mismatch(
        node_root, tmp):
    """The kubeconfig install-bootccm.sh writes reaches https://127.0.0.1 with
    tls-server-name kubernetes on a certificate that has DNS:kubernetes and
    no IP:127.0.0.1; against a certificate from the same CA that does not
    name kubernetes it is refused with a clear error, and the daemon keeps
    waiting instead of crashing."""
    root, env, _ = node_root
    bind_port = free_port()
    script(["--root", root, "--binary", bootccm_path(), "--manifest", "hostbinary",
            "--bind-port", bind_port, "--no-wait"], env)
    kc = os.path.join(root, KUBECONFIG)

    with api_server_with_ca_of(root, tmp, bind_port) as srv:
        assert "DNS:kubernetes" in srv.sans and not any("127.0.0.1" in s for s in srv.sans)
        r = subprocess.run([bootccm_path(), "check-kubeconfig", "--kubeconfig", kc],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert "user: %s\n" % CCM_USER in r.stdout
        assert "server: https://127.0.0.1:%d" % bind_port in r.stdout

    shutil.rmtree(os.path.join(tmp, "apiserver"))
    wrong = ["DNS:control-plane", "DNS:kube-apiserver.example", "IP:10.96.0.1"]
    with api_server_with_ca_of(root, tmp, bind_port, sans=wrong) as srv:
        r = subprocess.run([bootccm_path(), "check-kubeconfig", "--kubeconfig", kc],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "https://127.0.0.1:%d/version: tls failure:" % bind_port in r.stderr
        # The reason names the mismatch and the name looked for (wording is
        # wolfSSL's in the static build, OpenSSL's in the sanitizer build).
        assert re.search(r"tls failure:.*match.*\bkubernetes\b", r.stderr), r.stderr
        assert "runtime error:" not in r.stderr and "Sanitizer" not in r.stderr
        # A peer that cannot be verified never sees a request.
        assert srv.request_log() == []

        pod = Pod(pod_command(root, NODE, {"--secure-port": "0"}))
        try:
            pod.wait_for('"Waiting for the API server"')
            pod.wait_for("tls failure")
            assert pod.proc.poll() is None
        finally:
            rc, out = pod.stop()
        assert rc in (0, -signal.SIGTERM), out
        assert "ERROR: AddressSanitizer" not in out and "runtime error:" not in out, out
        assert srv.request_log() == []


def test_pod_command_maps_every_path_through_its_mount(node_root, tmp):
    """The helper the end-to-end test starts bootccm with: host paths go
    into the root, paths no volume mounts fail."""
    root, env, _ = node_root
    script(["--root", root, "--binary", bootccm_path(), "--manifest", "hostbinary", "--no-wait"],
           env)
    argv = pod_command(root, "n1", {"--secure-port": "0"})
    assert argv[0] == root + "/usr/local/bin/bootccm"
    assert "--kubeconfig=%s/%s" % (root, KUBECONFIG) in argv
    assert "--node-name=n1" in argv and "--secure-port=0" in argv
    with open(os.path.join(root, MANIFEST)) as f:
        text = f.read()
    with open(os.path.join(root, MANIFEST), "w") as f:
        f.write(text.replace("- --leader-elect=true", "- --leader-elect=true\n        - --x=/opt/x"))
    with pytest.raises(pytest.fail.Exception, match="/opt/x is in the command line but no volume"):
        pod_command(root, "n1", {})
