"""kubeadm/install-bootccm.sh, run into a temporary --root before the API
server exists: what it creates, with which modes, what the kubeconfig says,
that a second run changes nothing, and its errors."""

import base64
import os
import shutil
import subprocess
import tarfile

import pytest
import yaml

from helpers import (CCM_USER, INSTALL, KUBEADM, STATIC_POD, load_yaml_docs, make_ca, mode,
                     require_tool, run, snapshot, validate_k8s)

KUBECONFIG = "etc/kubernetes/cloud-controller-manager.conf"
MANIFEST = "etc/kubernetes/manifests/bootccm.yaml"
CLOUD_CONFIG = "etc/kubernetes/bootccm/cloud-config.yaml"
BINARY = "usr/local/bin/bootccm"

# Tools the script may use; tests that hide kubeadm/kubectl run it with a
# PATH of only these.
SCRIPT_TOOLS = ("sh", "dirname", "basename", "pwd", "mktemp", "rm", "cat", "awk", "tr",
                "stat", "cmp", "cp", "chmod", "mv", "mkdir", "base64", "openssl", "grep",
                "date", "sleep", "rmdir", "ln", "touch", "dd", "head")


def install(root, *args, check=True, env=None):
    return run(["sh", INSTALL, "--root", root, *args], check=check, env=env)


def install_ok(root, binary, *args):
    return install(root, "--binary", binary.path, "--no-wait", *args)


def minimal_path(tmp_path, extra=None):
    """A PATH holding only SCRIPT_TOOLS, plus EXTRA {name: script text}."""
    d = tmp_path / "bin"
    d.mkdir(exist_ok=True)
    extra = extra or {}
    for t in SCRIPT_TOOLS:
        src = require_tool(t, "coreutils" if t != "openssl" else "openssl")
        # a stand-in replaces the tool: never write through the link
        if t not in extra and not (d / t).exists():
            (d / t).symlink_to(src)
    for name, text in extra.items():
        if (d / name).is_symlink():
            (d / name).unlink()
        (d / name).write_text(text)
        (d / name).chmod(0o755)
    return dict(os.environ, PATH=str(d))


def kubeconfig_parts(root):
    kc = yaml.safe_load((root / KUBECONFIG).read_text())
    cluster = kc["clusters"][0]["cluster"]
    user = kc["users"][0]["user"]
    ctx = next(c for c in kc["contexts"] if c["name"] == kc["current-context"])["context"]
    return kc, cluster, user, ctx


def openssl(*args, input_bytes=None):
    exe = require_tool("openssl", "openssl")
    proc = subprocess.run([exe, *map(str, args)], input=input_bytes, capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode()


@pytest.fixture(scope="module")
def shared_ca(tmp_path_factory):
    """One CA for the tests that do not care which (RSA keys are slow)."""
    return make_ca(tmp_path_factory.mktemp("ca"))


@pytest.fixture
def root(tmp_path, shared_ca):
    """An empty root holding only the cluster CA."""
    r = tmp_path / "root"
    pki = r / "etc/kubernetes/pki"
    pki.mkdir(parents=True)
    for f in ("ca.crt", "ca.key"):
        shutil.copy2(shared_ca / f, pki / f)
    return r


def test_help():
    proc = run(["sh", INSTALL, "--help"])
    for opt in ("--root", "--bind-port", "--cloud-provider", "--cloud-config", "--dry-run",
                "--binary", "--manifest", "--no-wait", "--render-kubeadm-config"):
        assert opt in proc.stdout


def test_dry_run_prints_every_action_and_changes_nothing(root, bootccm_binary):
    before = snapshot(root)
    proc = install(root, "--dry-run", "--binary", bootccm_binary.path, "--no-wait")
    assert snapshot(root) == before
    out = proc.stdout
    for what in (f"would create {root}/{KUBECONFIG}", f"would install bootccm binary ({root}/{BINARY}",
                 f"would install static pod manifest ({root}/{MANIFEST}",
                 f"would install empty cloud config ({root}/{CLOUD_CONFIG}",
                 "dry run: 6 change(s) would be made"):
        assert what in out, out


def test_dry_run_without_a_ca_says_it_would_create_one(tmp_path, bootccm_binary):
    r = tmp_path / "r"
    r.mkdir()
    fake = "#!/bin/sh\necho kubeadm must not run in a dry run >&2\nexit 1\n"
    proc = install(r, "--dry-run", "--binary", bootccm_binary.path, "--no-wait",
                   env=minimal_path(tmp_path, {"kubeadm": fake}))
    assert "would create the cluster CA: kubeadm init phase certs ca --cert-dir" in proc.stdout
    assert list(r.iterdir()) == []


def test_install_into_root_before_the_api_server_exists(root, bootccm_binary):
    proc = install_ok(root, bootccm_binary)
    assert "RBAC not applied (--no-wait)" in proc.stdout
    assert mode(root / KUBECONFIG) == 0o600
    assert mode(root / MANIFEST) == 0o600
    assert mode(root / "etc/kubernetes/manifests") == 0o700
    assert mode(root / CLOUD_CONFIG) == 0o600
    assert mode(root / "etc/kubernetes/bootccm") == 0o700
    assert mode(root / BINARY) == 0o755
    assert (root / BINARY).read_bytes() == bootccm_binary.path.read_bytes()
    assert yaml.safe_load((root / CLOUD_CONFIG).read_text()) == {}
    assert not any(p.name.startswith(".") for p in root.rglob("*")), "temporary files left"


def test_kubeconfig(root, bootccm_binary):
    install_ok(root, bootccm_binary)
    kc, cluster, user, ctx = kubeconfig_parts(root)
    assert kc["apiVersion"] == "v1" and kc["kind"] == "Config"
    assert cluster["server"] == "https://127.0.0.1:6443"
    assert cluster["tls-server-name"] == "kubernetes"
    assert ctx["user"] == CCM_USER == kc["users"][0]["name"]
    ca = root / "etc/kubernetes/pki/ca.crt"
    assert base64.b64decode(cluster["certificate-authority-data"]) == ca.read_bytes()
    cert = base64.b64decode(user["client-certificate-data"])
    key = base64.b64decode(user["client-key-data"])
    (root.parent / "c.crt").write_bytes(cert)
    assert openssl("x509", "-noout", "-subject", "-nameopt", "RFC2253", "-in",
                   root.parent / "c.crt").strip() == f"subject=CN={CCM_USER}"
    assert openssl("verify", "-CAfile", ca, "-purpose", "sslclient",
                   root.parent / "c.crt").strip().endswith("OK")
    text = openssl("x509", "-noout", "-text", "-in", root.parent / "c.crt")
    assert "TLS Web Client Authentication" in text
    assert "CA:FALSE" in text
    pub_cert = openssl("x509", "-noout", "-pubkey", "-in", root.parent / "c.crt")
    pub_key = openssl("pkey", "-pubout", input_bytes=key)
    assert pub_cert == pub_key
    # Valid for a year, more than the 30-day renewal margin.
    openssl("x509", "-noout", "-checkend", str(300 * 86400), "-in", root.parent / "c.crt")


def test_second_run_is_idempotent(root, bootccm_binary):
    install_ok(root, bootccm_binary)
    before = snapshot(root)
    proc = install_ok(root, bootccm_binary)
    assert snapshot(root) == before
    assert "nothing changed" in proc.stdout
    assert proc.stdout.count("unchanged:") == 5


# A bootccm that has one more provider than the real one: the installer asks
# the binary which providers exist.
TWO_PROVIDERS = """#!/bin/sh
printf '%s\\n' "$*" >>"$0.log"
case $1 in
--version) echo "bootccm v9.9.9"; exit 0 ;;
--validate) exit 0 ;;
check-kubeconfig) ;;
*) exit 1 ;;
esac
case $2 in
--cloud-provider=metadata | --cloud-provider=hcloud) echo "bootccm: check-kubeconfig: no such file" >&2; exit 1 ;;
esac
echo "bootccm: --cloud-provider \\"${2#*=}\\": unknown provider; known: hcloud, metadata" >&2
exit 2
"""


@pytest.fixture
def two_providers(tmp_path):
    b = tmp_path / "two" / "bootccm"
    b.parent.mkdir()
    b.write_text(TWO_PROVIDERS)
    b.chmod(0o755)
    return b


def test_manifest_is_the_template_with_this_installations_values(root, two_providers, node_modules):
    install(root, "--binary", two_providers, "--no-wait", "--image", "registry.internal/bootccm:v9.9.9",
            "--cloud-provider", "hcloud", "--extra-arg", "--cluster-cidr=10.244.0.0/16",
            "--extra-arg=--configure-cloud-routes=true")
    pod = load_yaml_docs(root / MANIFEST)[0]
    tmpl = load_yaml_docs(STATIC_POD / "bootccm.yaml")[0]
    c, t = pod["spec"]["containers"][0], tmpl["spec"]["containers"][0]
    assert c["image"] == "registry.internal/bootccm:v9.9.9"
    i = t["command"].index("--cloud-provider=metadata")
    t["command"][i] = "--cloud-provider=hcloud"
    t["command"] += ["--cluster-cidr=10.244.0.0/16", "--configure-cloud-routes=true"]
    t["image"] = c["image"]
    assert pod == tmpl
    rc, lines, summary = validate_k8s(node_modules, root / MANIFEST)
    assert rc == 0 and summary == {"checked": 1, "failed": 0}, lines


def test_image_tag_defaults_to_the_binary_version(root, bootccm_binary):
    install_ok(root, bootccm_binary)
    image = load_yaml_docs(root / MANIFEST)[0]["spec"]["containers"][0]["image"]
    if not bootccm_binary.real:
        assert image == "bootccm:v0.0.0-stand-in"
    else:
        assert image.startswith("bootccm:") and image != "bootccm:VERSION"


def test_hostbinary_manifest(root, bootccm_binary, node_modules):
    install_ok(root, bootccm_binary, "--manifest", "hostbinary",
               "--pause-image", "registry.internal/pause:3.10")
    pod = load_yaml_docs(root / MANIFEST)[0]
    c = pod["spec"]["containers"][0]
    assert c["image"] == "registry.internal/pause:3.10"
    assert c["command"][0] == "/usr/local/bin/bootccm"
    rc, lines, summary = validate_k8s(node_modules, root / MANIFEST)
    assert rc == 0, lines


def test_hostbinary_needs_the_binary(root):
    proc = install(root, "--manifest", "hostbinary", "--no-wait", check=False)
    assert proc.returncode == 1
    assert "--binary" in proc.stderr and "usr/local/bin/bootccm" in proc.stderr
    assert not (root / MANIFEST).exists()


def test_cloud_config_is_installed_0600(root, bootccm_binary, tmp_path):
    cc = tmp_path / "cc.yaml"
    # settings of the metadata provider (an API-backed provider's would hold
    # a token): bootccm --validate checks the file against the provider
    cc.write_text("metadata:\n  endpoint: http://169.254.169.254\n")
    cc.chmod(0o644)
    install_ok(root, bootccm_binary, "--cloud-config", cc)
    assert (root / CLOUD_CONFIG).read_text() == "metadata:\n  endpoint: http://169.254.169.254\n"
    assert mode(root / CLOUD_CONFIG) == 0o600
    proc = install_ok(root, bootccm_binary, "--cloud-config", cc)
    assert "nothing changed" in proc.stdout


def test_existing_cloud_config_is_kept(root, bootccm_binary):
    p = root / CLOUD_CONFIG
    p.parent.mkdir(parents=True)
    p.write_text("metadata: {cloud: openstack}\n")
    install_ok(root, bootccm_binary)
    assert p.read_text() == "metadata: {cloud: openstack}\n"


def test_bind_port_and_replacing_a_kubeconfig_that_no_longer_fits(root, bootccm_binary):
    install_ok(root, bootccm_binary)
    first = (root / KUBECONFIG).read_bytes()
    proc = install_ok(root, bootccm_binary, "--bind-port", "7443")
    assert "its server is 'https://127.0.0.1:6443', not https://127.0.0.1:7443" in proc.stdout
    assert kubeconfig_parts(root)[1]["server"] == "https://127.0.0.1:7443"
    assert (root / (KUBECONFIG + ".old")).read_bytes() == first
    assert mode(root / (KUBECONFIG + ".old")) == 0o600
    assert mode(root / KUBECONFIG) == 0o600


def test_kubeconfig_for_another_ca_is_replaced(root, bootccm_binary):
    install_ok(root, bootccm_binary)
    pki = root / "etc/kubernetes/pki"
    for f in ("ca.crt", "ca.key"):
        (pki / f).unlink()
    make_ca(root)
    proc = install_ok(root, bootccm_binary)
    assert "is not " in proc.stdout and "ca.crt" in proc.stdout
    cluster = kubeconfig_parts(root)[1]
    assert base64.b64decode(cluster["certificate-authority-data"]) == (pki / "ca.crt").read_bytes()


def test_kubeconfig_mode_is_repaired(root, bootccm_binary):
    install_ok(root, bootccm_binary)
    (root / KUBECONFIG).chmod(0o644)
    proc = install_ok(root, bootccm_binary)
    assert "set mode 600" in proc.stdout
    assert mode(root / KUBECONFIG) == 0o600


def test_missing_ca_without_kubeadm_is_a_clear_error(tmp_path, bootccm_binary):
    r = tmp_path / "r"
    r.mkdir()
    proc = install(r, "--binary", bootccm_binary.path, "--no-wait", check=False,
                   env=minimal_path(tmp_path))
    assert proc.returncode == 1
    assert "ca.crt" in proc.stderr and "kubeadm is not installed" in proc.stderr
    assert list(r.iterdir()) == []


def test_missing_ca_is_created_with_kubeadm(tmp_path, bootccm_binary):
    r = tmp_path / "r"
    r.mkdir()
    log = tmp_path / "kubeadm.log"
    openssl_path = require_tool("openssl", "openssl")
    # A kubeadm that records its arguments and makes a CA like
    # `kubeadm init phase certs ca --cert-dir DIR` does.
    fake = f"""#!/bin/sh
printf "%s\n" "$*" >>{log}
[ "$1 $2 $3 $4 $5" = "init phase certs ca --cert-dir" ] || exit 3
mkdir -p "$6"
{openssl_path} req -x509 -newkey rsa:2048 -nodes -keyout "$6/ca.key" -out "$6/ca.crt" \\
  -days 3650 -subj /CN=kubernetes -addext basicConstraints=critical,CA:TRUE \\
  -addext keyUsage=critical,keyCertSign,digitalSignature 2>/dev/null
"""
    env = minimal_path(tmp_path, {"kubeadm": fake})
    proc = install(r, "--binary", bootccm_binary.path, "--no-wait", env=env)
    assert log.read_text() == f"init phase certs ca --cert-dir {r}/etc/kubernetes/pki\n"
    assert "creating a new cluster CA" in proc.stderr
    assert (r / KUBECONFIG).exists()
    proc = install(r, "--binary", bootccm_binary.path, "--no-wait", env=env)
    assert "nothing changed" in proc.stdout
    assert len(log.read_text().splitlines()) == 1


def test_kubeadm_config_is_passed_to_kubeadm(tmp_path, bootccm_binary):
    r = tmp_path / "r"
    r.mkdir()
    cfg = tmp_path / "init.yaml"
    cfg.write_text("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n")
    log = tmp_path / "kubeadm.log"
    fake = f'#!/bin/sh\nprintf "%s\\n" "$*" >>{log}\n'
    proc = install(r, "--binary", bootccm_binary.path, "--no-wait", "--kubeadm-config", cfg,
                   check=False, env=minimal_path(tmp_path, {"kubeadm": fake}))
    assert log.read_text() == f"init phase certs ca --config {cfg}\n"
    # This kubeadm made no CA: the script must notice.
    assert proc.returncode == 1 and "did not create" in proc.stderr


def test_no_create_ca(tmp_path, bootccm_binary):
    r = tmp_path / "r"
    r.mkdir()
    proc = install(r, "--binary", bootccm_binary.path, "--no-wait", "--no-create-ca", check=False)
    assert proc.returncode == 1
    assert "after 'kubeadm join --control-plane'" in proc.stderr


def test_ca_without_its_key(tmp_path, bootccm_binary):
    r = tmp_path / "r"
    make_ca(r)
    (r / "etc/kubernetes/pki/ca.key").unlink()
    proc = install(r, "--binary", bootccm_binary.path, "--no-wait", check=False)
    assert proc.returncode == 1 and "ca.key does not" in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--cloud-provider", "aws"], '--cloud-provider "aws": unknown provider; known: metadata'),
    (["--cloud-provider", "Bad name"], "--cloud-provider must be a provider name"),
    (["--bind-port", "0"], "--bind-port must be a port number"),
    (["--bind-port", "x"], "--bind-port must be a port number"),
    (["--manifest", "daemonset"], "--manifest must be static, hostbinary or a file path"),
    (["--frobnicate"], "unknown argument '--frobnicate'"),
    (["--binary"], "--binary needs a value"),
    (["--extra-arg", "cluster-cidr=x"], "must be a flag starting with --"),
    (["--image", "bad image"], "is not an image reference"),
    (["--cloud-config", "/nonexistent/cc.yaml"], "cloud config not found: /nonexistent/cc.yaml"),
    (["--cloud-config", "/dev/null"], "cloud config /dev/null is not a regular file"),
    (["--cloud-config", "/"], "cloud config / is not a regular file"),
])
def test_bad_options_are_clear_errors(root, bootccm_binary, args, message):
    proc = install(root, "--binary", bootccm_binary.path, "--no-wait", *args, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr


def test_cloud_provider_is_checked_by_the_binary(root, two_providers):
    log = two_providers.parent / "bootccm.log"
    proc = install(root, "--binary", two_providers, "--no-wait", "--cloud-provider", "nope",
                   check=False)
    assert proc.returncode == 1
    assert ('--cloud-provider "nope": unknown provider; known: hcloud, metadata (asked %s)'
            % two_providers) in proc.stderr
    # asked who it is, then whether it has the provider
    calls = log.read_text().splitlines()
    assert calls[0] == "--version"
    assert calls[1].startswith("check-kubeconfig --cloud-provider=nope ")
    assert not (root / MANIFEST).exists() and not (root / KUBECONFIG).exists()
    install(root, "--binary", two_providers, "--no-wait", "--cloud-provider", "hcloud")
    assert "- --cloud-provider=hcloud\n" in (root / MANIFEST).read_text()


def test_cloud_provider_is_checked_by_the_installed_binary(root, two_providers):
    install(root, "--binary", two_providers, "--no-wait", "--cloud-provider", "hcloud")
    proc = install(root, "--no-wait", "--cloud-provider", "hcloud")
    assert "nothing changed" in proc.stdout
    proc = install(root, "--no-wait", "--cloud-provider", "other", check=False)
    assert proc.returncode == 1
    assert "(asked %s/%s)" % (root, BINARY) in proc.stderr


def test_without_a_binary_only_metadata_is_accepted(root):
    proc = install(root, "--image", "bootccm:v1", "--no-wait", "--cloud-provider", "hcloud",
                   check=False)
    assert proc.returncode == 1
    assert "no bootccm binary to ask" in proc.stderr and "only 'metadata'" in proc.stderr
    assert not (root / MANIFEST).exists()
    install(root, "--image", "bootccm:v1", "--no-wait", "--cloud-provider", "metadata")
    assert "- --cloud-provider=metadata\n" in (root / MANIFEST).read_text()


def test_the_real_binary_refuses_what_it_does_not_have(root, bootccm_binary):
    """Whatever bootccm is tested, the installer's answer is the binary's own
    (the stand-in mimics the real one's exit status 2 and message)."""
    proc = install(root, "--binary", bootccm_binary.path, "--no-wait", "--cloud-provider",
                   "no-such-provider", check=False)
    assert proc.returncode == 1
    assert '--cloud-provider "no-such-provider": unknown provider; known: ' in proc.stderr
    assert not (root / MANIFEST).exists()


def test_missing_binary_is_named(root):
    proc = install(root, "--binary", "/nonexistent/bootccm", "--image", "bootccm:v1",
                   "--no-wait", check=False)
    assert proc.returncode == 1 and "/nonexistent/bootccm" in proc.stderr


def test_rbac_waits_until_admin_conf_exists(root, bootccm_binary):
    proc = install(root, "--binary", bootccm_binary.path)
    assert "RBAC not applied: no " in proc.stdout and "admin.conf yet" in proc.stdout


def fake_kubectl(log, ready):
    return f"""#!/bin/sh
printf "%s\n" "$*" >>{log}
case "$*" in
*"get --raw /readyz"*) {"exit 0" if ready else "exit 1"} ;;
*"apply -f"*) echo "clusterrole.rbac.authorization.k8s.io/system:cloud-controller-manager created" ;;
esac
"""


def test_rbac_is_applied_once_the_api_server_answers(root, bootccm_binary, tmp_path):
    admin = root / "etc/kubernetes/admin.conf"
    admin.write_text("apiVersion: v1\nkind: Config\n")
    log = tmp_path / "kubectl.log"
    env = minimal_path(tmp_path, {"kubectl": fake_kubectl(log, True)})
    proc = install(root, "--binary", bootccm_binary.path, env=env)
    calls = log.read_text().splitlines()
    assert calls[0] == f"--kubeconfig {admin} --request-timeout=5s get --raw /readyz"
    assert calls[-1] == f"--kubeconfig {admin} apply -f {STATIC_POD / 'rbac.yaml'}"
    assert "created" in proc.stdout


def test_rbac_wait_is_bounded(root, bootccm_binary, tmp_path):
    (root / "etc/kubernetes/admin.conf").write_text("apiVersion: v1\nkind: Config\n")
    log = tmp_path / "kubectl.log"
    env = minimal_path(tmp_path, {"kubectl": fake_kubectl(log, False)})
    proc = install(root, "--binary", bootccm_binary.path, "--wait-timeout", "0", env=env,
                   check=False)
    assert proc.returncode == 1
    assert "did not answer within 0s: RBAC not applied (everything else is installed)" in proc.stderr
    assert "apply" not in log.read_text()
    assert (root / MANIFEST).exists()


def test_rbac_without_kubectl_is_a_clear_error(root, bootccm_binary, tmp_path):
    (root / "etc/kubernetes/admin.conf").write_text("apiVersion: v1\nkind: Config\n")
    proc = install(root, "--binary", bootccm_binary.path, env=minimal_path(tmp_path), check=False)
    assert proc.returncode == 1 and "kubectl is not installed" in proc.stderr


def test_image_archive_needs_ctr(root, bootccm_binary, tmp_path):
    archive = tmp_path / "img.tar"
    archive.write_bytes(b"x")
    proc = install(root, "--binary", bootccm_binary.path, "--no-wait", "--image-archive", archive,
                   env=minimal_path(tmp_path), check=False)
    assert proc.returncode == 1 and "ctr is not installed" in proc.stderr


def test_image_archive_is_imported_into_containerd(root, bootccm_binary, tmp_path):
    archive = tmp_path / "img.tar"
    archive.write_bytes(b"x")
    log = tmp_path / "ctr.log"
    state = tmp_path / "imported"
    fake = f"""#!/bin/sh
printf "%s\n" "$*" >>{log}
case "$*" in
*"images import"*) : >{state} ;;
*"images ls"*) [ -f {state} ] && echo docker.io/library/bootccm:v1.2.3 ;;
esac
exit 0
"""
    env = minimal_path(tmp_path, {"ctr": fake})
    install(root, "--binary", bootccm_binary.path, "--no-wait", "--image", "bootccm:v1.2.3",
            "--image-archive", archive, env=env)
    assert f"-n k8s.io images import {archive}" in log.read_text()
    proc = install(root, "--binary", bootccm_binary.path, "--no-wait", "--image", "bootccm:v1.2.3",
                   "--image-archive", archive, env=env)
    assert "unchanged: image docker.io/library/bootccm:v1.2.3 is in containerd" in proc.stdout
    assert "nothing changed" in proc.stdout


def test_install_script_passes_shellcheck():
    shellcheck = require_tool("shellcheck", "shellcheck")
    run([shellcheck, INSTALL])
    dash = require_tool("dash", "dash")
    run([dash, "-n", INSTALL])


# --- what bootccm itself checks, before anything changes ---------------------------

def test_a_binary_that_is_not_bootccm_is_refused(root, tmp_path):
    before = snapshot(root)
    proc = install(root, "--binary", "/etc/passwd", "--no-wait", check=False)
    assert proc.returncode == 1 and "/etc/passwd is not executable" in proc.stderr
    other = tmp_path / "other"
    other.write_text("#!/bin/sh\necho hello\n")
    other.chmod(0o755)
    proc = install(root, "--binary", other, "--no-wait", check=False)
    assert proc.returncode == 1 and f"{other} is not a bootccm binary" in proc.stderr
    assert snapshot(root) == before


@pytest.mark.parametrize("what", ["extra-arg", "cloud-config"])
def test_the_command_line_is_checked_by_bootccm_before_anything_changes(root, bootccm_binary,
                                                                       tmp_path, what):
    if what == "extra-arg":
        args = ["--extra-arg", "--bogus-flag=1"]
        want = "--bogus-flag"
    else:
        cc = tmp_path / "cc.yaml"
        cc.write_text("broken: [\n")
        args = ["--cloud-config", cc]
        want = str(cc)
    before = snapshot(root)
    for dry in ([], ["--dry-run"]):
        proc = install(root, "--binary", bootccm_binary.path, "--no-wait", *dry, *args,
                       check=False)
        assert proc.returncode == 1, proc.stdout
        assert "bootccm refuses the command line the manifest would run" in proc.stderr
        assert want in proc.stderr, proc.stderr
        assert "done:" not in proc.stdout and "would be made" not in proc.stdout
    assert snapshot(root) == before


def test_a_valid_extra_arg_passes_the_check(root, bootccm_binary):
    proc = install_ok(root, bootccm_binary, "--extra-arg", "--cluster-cidr=10.244.0.0/16")
    assert "done: 6 change(s)" in proc.stdout
    assert '- "--cluster-cidr=10.244.0.0/16"' in (root / MANIFEST).read_text()


def test_server_tls_bootstrap_runs_the_csr_approver(root, bootccm_binary):
    """The real binary accepts the command line (it is asked with
    --validate) and the manifest runs the approver."""
    proc = install_ok(root, bootccm_binary, "--server-tls-bootstrap")
    assert '- "--controllers=*,csr-approver"' in (root / MANIFEST).read_text(), proc.stdout


def test_server_tls_bootstrap_with_controllers_of_ones_own(root, bootccm_binary):
    proc = install(root, "--binary", bootccm_binary.path, "--no-wait", "--server-tls-bootstrap",
                   "--extra-arg", "--controllers=cloud-node", check=False)
    assert proc.returncode != 0
    assert "--server-tls-bootstrap needs csr-approver in --extra-arg --controllers" in proc.stderr
    install_ok(root, bootccm_binary, "--server-tls-bootstrap",
               "--extra-arg", "--controllers=cloud-node,csr-approver")
    text = (root / MANIFEST).read_text()
    assert '- "--controllers=cloud-node,csr-approver"' in text
    assert "--controllers=*,csr-approver" not in text


def test_dry_run_without_kubeadm_says_what_it_would_do(tmp_path, bootccm_binary):
    r = tmp_path / "r"
    r.mkdir()
    proc = install(r, "--dry-run", "--binary", bootccm_binary.path, "--no-wait",
                   env=minimal_path(tmp_path))
    assert "kubeadm is not installed: it is needed to create the cluster CA" in proc.stderr
    assert "would create the cluster CA: kubeadm init phase certs ca" in proc.stdout
    # the CA, the kubeconfig, two directories, the cloud config, binary, manifest
    assert "dry run: 7 change(s) would be made" in proc.stdout
    assert list(r.iterdir()) == []


# --- --uninstall ---------------------------------------------------------------------

def test_uninstall_removes_what_the_install_made(root, bootccm_binary):
    ca = snapshot(root)
    install_ok(root, bootccm_binary)
    install_ok(root, bootccm_binary, "--bind-port", "7443")   # leaves a .old kubeconfig
    installed = snapshot(root)
    proc = install(root, "--uninstall", "--dry-run", "--no-wait")
    assert snapshot(root) == installed
    assert f"would remove static pod manifest ({root}/{MANIFEST})" in proc.stdout
    assert "dry run: 6 change(s) would be made" in proc.stdout
    proc = install(root, "--uninstall", "--no-wait")
    out = proc.stdout
    assert out.index("remove static pod manifest") < out.index("remove kubeconfig")
    for p in (MANIFEST, KUBECONFIG, KUBECONFIG + ".old", CLOUD_CONFIG, BINARY):
        assert not (root / p).exists(), p
    assert not (root / "etc/kubernetes/bootccm").exists()
    assert "RBAC not removed (--no-wait" in out and "delete --ignore-not-found -f" in out
    assert "done: 6 change(s)" in out
    # what is left is what was there before the install (and empty directories)
    left = {k: v for k, v in snapshot(root).items() if v[1] is not None}
    assert left == {k: v for k, v in ca.items() if v[1] is not None}
    proc = install(root, "--uninstall", "--no-wait")
    assert "nothing to remove" in proc.stdout


def test_uninstall_removes_the_rbac_once_the_api_server_answers(root, bootccm_binary, tmp_path):
    install_ok(root, bootccm_binary)
    admin = root / "etc/kubernetes/admin.conf"
    admin.write_text("apiVersion: v1\nkind: Config\n")
    log = tmp_path / "kubectl.log"
    env = minimal_path(tmp_path, {"kubectl": fake_kubectl(log, True)})
    install(root, "--uninstall", env=env)
    calls = log.read_text().splitlines()
    assert calls[-1] == (f"--kubeconfig {admin} delete --ignore-not-found -f "
                         f"{STATIC_POD / 'rbac.yaml'}")
    log.unlink()
    env = minimal_path(tmp_path, {"kubectl": fake_kubectl(log, False)})
    proc = install(root, "--uninstall", env=env)
    assert "the API server does not answer" in proc.stdout
    assert "delete" not in log.read_text()


def test_uninstall_keeps_a_binary_that_is_not_bootccm(root):
    b = root / BINARY
    b.parent.mkdir(parents=True)
    b.write_text("#!/bin/sh\necho something else\n")
    b.chmod(0o755)
    proc = install(root, "--uninstall", "--no-wait")
    assert f"kept: {b} is not a bootccm binary" in proc.stdout
    assert b.exists()


# --- every check before the first change; a failure halfway puts everything back --

def full_snapshot(root):
    """snapshot() and each entry's owner: what a rollback must restore."""
    snap = snapshot(root)
    return {k: (v, os.lstat(os.path.join(root, k)).st_uid, os.lstat(os.path.join(root, k)).st_gid)
            for k, v in snap.items()}


def tar_archive(path):
    """A small tar file standing for scripts/make-image.sh's output."""
    member = path.parent / "index.json"
    member.write_text("{}\n")
    with tarfile.open(path, "w") as t:
        t.add(member, arcname="index.json")
    return path


@pytest.fixture
def installed(root, bootccm_binary, tmp_path):
    """ROOT with bootccm installed, its cloud config owned by another user
    with an unusual mode: what a rollback must bring back exactly."""
    cc = tmp_path / "cc-first.yaml"
    cc.write_text("metadata:\n  endpoint: http://169.254.169.254\n")
    install_ok(root, bootccm_binary, "--cloud-config", cc)
    os.chown(root / CLOUD_CONFIG, 1234, 4321)
    os.chmod(root / CLOUD_CONFIG, 0o640)
    return root


@pytest.mark.parametrize("kind", ["missing", "directory", "fifo", "empty"])
def test_a_bad_image_archive_changes_nothing(installed, bootccm_binary, tmp_path, kind):
    archive = tmp_path / "img.tar"
    if kind == "directory":
        archive.mkdir()
    elif kind == "fifo":
        os.mkfifo(archive)
    elif kind == "empty":
        archive.write_bytes(b"")
    log = tmp_path / "ctr.log"
    ctr = f'#!/bin/sh\nprintf "%s\\n" "$*" >>{log}\n'
    cc = tmp_path / "cc-second.yaml"
    cc.write_text("metadata:\n  endpoint: http://169.254.169.254:8080\n")
    before = full_snapshot(installed)
    # every file would change: a new port (a new kubeconfig), cloud config, image
    proc = install(installed, "--binary", bootccm_binary.path, "--no-wait", "--bind-port", "7443",
                   "--cloud-config", cc, "--image", "bootccm:v1.2.3", "--image-archive", archive,
                   env=minimal_path(tmp_path, {"ctr": ctr}), check=False)
    assert proc.returncode == 1, proc.stdout
    assert str(archive) in proc.stderr and "image archive" in proc.stderr, proc.stderr
    assert full_snapshot(installed) == before
    assert not log.exists(), "ctr was run"
    assert proc.stdout.count("install-bootccm.sh: ") == 1, proc.stdout  # "installing under"


REAL_MV = shutil.which("mv")
REAL_CP = shutil.which("cp")

# Stand-ins for the tools the script changes files with, failing once on one
# file the way a full disk or an I/O error would.
FAILING_MV = f"""#!/bin/sh
for last; do :; done
case $last in
*/manifests/bootccm.yaml)
  if [ ! -e "$0.failed" ]; then
    : >"$0.failed"
    echo "mv: cannot move to '$last': Input/output error" >&2
    exit 1
  fi ;;
esac
exec {REAL_MV} "$@"
"""
FAILING_CP = f"""#!/bin/sh
for last; do :; done
case $last in
*/.bootccm.tmp.*)
  head -c 1000 "$1" >"$last"
  echo "cp: error writing '$last': No space left on device" >&2
  exit 1 ;;
esac
exec {REAL_CP} "$@"
"""


@pytest.mark.parametrize("tool, text", [("mv", FAILING_MV), ("cp", FAILING_CP)])
def test_a_failure_halfway_restores_every_file(installed, two_providers, tmp_path, tool, text):
    cc = tmp_path / "cc-second.yaml"
    cc.write_text("metadata:\n  endpoint: http://169.254.169.254:8080\n")
    before = full_snapshot(installed)
    # a new kubeconfig (and .old), cloud config, binary and manifest
    proc = install(installed, "--binary", two_providers, "--no-wait", "--bind-port", "7443",
                   "--cloud-config", cc, env=minimal_path(tmp_path, {tool: text}), check=False)
    assert proc.returncode != 0, proc.stdout
    err = proc.stderr
    assert "putting back what was there before" in err, err
    assert f"rollback: restored {installed}/{KUBECONFIG} (its previous contents" in err
    assert f"rollback: removed {installed}/{KUBECONFIG}.old (it did not exist before)" in err
    assert f"rollback: restored {installed}/{CLOUD_CONFIG}" in err
    assert "rollback: done: every file is as it was before this run" in err, err
    assert full_snapshot(installed) == before
    assert "done:" not in proc.stdout


def test_a_failure_halfway_on_a_new_node_leaves_it_empty(tmp_path, bootccm_binary):
    """Everything this run made goes, the CA kubeadm made and the directories
    included, and the root is left as it was."""
    r = tmp_path / "r"
    r.mkdir()
    openssl_path = require_tool("openssl", "openssl")
    kubeadm = f"""#!/bin/sh
mkdir -p "$6"
{openssl_path} req -x509 -newkey rsa:2048 -nodes -keyout "$6/ca.key" -out "$6/ca.crt" \\
  -days 3650 -subj /CN=kubernetes -addext basicConstraints=critical,CA:TRUE \\
  -addext keyUsage=critical,keyCertSign,digitalSignature 2>/dev/null
"""
    before = full_snapshot(tmp_path / "r")
    mtime = r.stat().st_mtime_ns
    proc = install(r, "--binary", bootccm_binary.path, "--no-wait", check=False,
                   env=minimal_path(tmp_path, {"kubeadm": kubeadm, "mv": FAILING_MV}))
    assert proc.returncode != 0
    assert f"rollback: removed {r}/etc/kubernetes/pki/ca.key (it did not exist before)" in proc.stderr
    assert f"rollback: removed directory {r}/etc (it did not exist before)" in proc.stderr
    assert full_snapshot(r) == before == {}
    assert r.stat().st_mtime_ns == mtime


# kubeadm stand-ins stopping halfway: failing after one file, and the
# script getting SIGTERM (from its parent, the way systemd would stop it)
# after both.
KUBEADM_FAILS = '#!/bin/sh\nmkdir -p "$6"\necho half >"$6/ca.crt"\nexit 1\n'
KUBEADM_SIGNALLED = ('#!/bin/sh\nmkdir -p "$6"\necho ca >"$6/ca.crt"\necho key >"$6/ca.key"\n'
                     'kill -TERM $PPID\n')


@pytest.mark.parametrize("kubeadm, status, message", [
    (KUBEADM_FAILS, 1, "kubeadm init phase certs ca --cert-dir"),
    (KUBEADM_SIGNALLED, 143, "putting back what was there before"),
])
def test_a_kubeadm_stopped_halfway_leaves_nothing(tmp_path, bootccm_binary, kubeadm, status,
                                                  message):
    r = tmp_path / "r"
    r.mkdir()
    proc = install(r, "--binary", bootccm_binary.path, "--no-wait", check=False,
                   env=minimal_path(tmp_path, {"kubeadm": kubeadm}))
    assert proc.returncode == status, proc.stderr
    assert message in proc.stderr
    assert f"rollback: removed {r}/etc/kubernetes/pki/ca.crt" in proc.stderr
    assert "rollback: done: every file is as it was before this run" in proc.stderr
    assert list(r.iterdir()) == []


def test_a_cloud_config_bootccm_would_refuse_for_its_size_changes_nothing(root, bootccm_binary,
                                                                          tmp_path):
    cc = tmp_path / "cc.yaml"
    cc.write_text("# " + "x" * (1 << 20) + "\n{}\n")
    before = full_snapshot(root)
    proc = install(root, "--binary", bootccm_binary.path, "--no-wait", "--cloud-config", cc,
                   check=False)
    assert proc.returncode == 1
    assert f"cloud config {cc} is larger than 1048576 bytes" in proc.stderr
    assert full_snapshot(root) == before


def test_a_target_in_the_way_is_refused_before_any_change(root, bootccm_binary):
    (root / MANIFEST).mkdir(parents=True)
    before = full_snapshot(root)
    proc = install(root, "--binary", bootccm_binary.path, "--no-wait", check=False)
    assert proc.returncode == 1
    assert f"{root}/{MANIFEST} is in the way: it is not a regular file" in proc.stderr
    assert full_snapshot(root) == before


def test_a_failing_image_import_changes_no_file(installed, bootccm_binary, tmp_path):
    archive = tar_archive(tmp_path / "img.tar")
    ctr = "#!/bin/sh\ncase \"$*\" in *'images import'*) echo 'ctr: broken archive' >&2; exit 1 ;; esac\n"
    before = full_snapshot(installed)
    proc = install(installed, "--binary", bootccm_binary.path, "--no-wait", "--bind-port", "7443",
                   "--image", "bootccm:v1.2.3", "--image-archive", archive,
                   env=minimal_path(tmp_path, {"ctr": ctr}), check=False)
    assert proc.returncode == 1
    assert f"ctr -n k8s.io images import {archive} failed" in proc.stderr
    assert full_snapshot(installed) == before


@pytest.mark.parametrize("option, value", [
    ("--cert-days", "99999999999999999999"),
    ("--cert-days", "18446744073709551617"),
    ("--cert-days", "0"),
    ("--cert-days", "36501"),
    ("--cert-days", "-1"),
    ("--cert-days", "0365"),
    ("--cert-days", "+5"),
    ("--bind-port", "18446744073709551617"),
    ("--bind-port", "65536"),
    ("--wait-timeout", "99999999999999999999"),
    ("--wait-timeout", "86401"),
])
def test_numbers_are_parsed_with_bounds_before_any_change(installed, bootccm_binary, option, value):
    before = full_snapshot(installed)
    proc = install(installed, "--binary", bootccm_binary.path, "--no-wait", option, value,
                   check=False)
    assert proc.returncode == 1
    assert f"{option} must be" in proc.stderr and f"not '{value}'" in proc.stderr, proc.stderr
    assert full_snapshot(installed) == before


def test_the_largest_numbers_are_accepted(root, bootccm_binary):
    install_ok(root, bootccm_binary, "--cert-days", "36500", "--bind-port", "65535",
               "--wait-timeout", "86400")
    cert = base64.b64decode(kubeconfig_parts(root)[2]["client-certificate-data"])
    (root.parent / "c.crt").write_bytes(cert)
    openssl("x509", "-noout", "-checkend", str(36000 * 86400), "-in", root.parent / "c.crt")


@pytest.mark.parametrize("where", ["beside the source", "where it is installed"])
def test_a_relative_inventory_is_checked_where_it_will_be_installed(root, bootccm_binary,
                                                                    tmp_path, where):
    """The static provider reads a relative inventory from the cloud
    config's directory: once installed, /etc/kubernetes/bootccm (which the
    pod mounts), not the directory the cloud config was copied from."""
    src = tmp_path / "src"
    src.mkdir()
    cc = src / "cc.yaml"
    cc.write_text("static:\n  inventory: inventory.yaml\n")
    installed_dir = root / "etc/kubernetes/bootccm"
    if where == "beside the source":
        (src / "inventory.yaml").write_text("instances: []\n")
    else:
        installed_dir.mkdir(parents=True, mode=0o700)
        (installed_dir / "inventory.yaml").write_text("instances: []\n")
    before = full_snapshot(root)
    proc = install(root, "--binary", bootccm_binary.path, "--no-wait", "--cloud-provider", "static",
                   "--cloud-config", cc, check=False)
    if where == "beside the source":
        assert proc.returncode == 1, proc.stdout
        assert "bootccm refuses the command line the manifest would run" in proc.stderr
        assert f"{installed_dir}/inventory.yaml" in proc.stderr, proc.stderr
        assert str(cc) in proc.stderr, proc.stderr
        assert full_snapshot(root) == before
    else:
        assert proc.returncode == 0, proc.stderr
        assert (root / CLOUD_CONFIG).read_text() == cc.read_text()
        assert "- --cloud-provider=static\n" in (root / MANIFEST).read_text()


@pytest.mark.parametrize("flags, message", [
    ("--node-ip=999.1.1.1", "--node-ip=999.1.1.1: '999.1.1.1' is not an IPv4 or IPv6 address"),
    ("--node-ip=10.0.0.256", "'10.0.0.256' is not an IPv4 or IPv6 address"),
    ("--node-ip=10.0.0", "'10.0.0' is not an IPv4 or IPv6 address"),
    ("--node-ip=010.0.0.5", "'010.0.0.5' is not an IPv4 or IPv6 address"),
    ("--node-ip=2001:db8:::1", "'2001:db8:::1' is not an IPv4 or IPv6 address"),
    ("--node-ip=2001:db8::1::2", "'2001:db8::1::2' is not an IPv4 or IPv6 address"),
    ("--node-ip=2001:db8::g1", "'2001:db8::g1' is not an IPv4 or IPv6 address"),
    ("--node-ip=1:2:3:4:5:6:7:8:9", "is not an IPv4 or IPv6 address"),
    ("--node-ip=1::2:3:4:5:6:7:8", "is not an IPv4 or IPv6 address"),
    ("--node-ip=fe80::1%eth0", "is not an IPv4 or IPv6 address"),
    ("--node-ip=::ffff:1.2.3.999", "is not an IPv4 or IPv6 address"),
    ("--node-ip=127.0.0.1", "is a loopback address"),
    ("--node-ip=0:0:0:0:0:0:0:1", "is a loopback address"),
    ("--node-ip=fe80::1", "is a link-local address"),
    ("--node-ip=169.254.1.1", "is a link-local address"),
    ("--node-ip=ff02::1", "is a multicast address"),
    ("--node-ip=10.0.0.5,10.0.0.6", "at most one IPv4 and one IPv6 address"),
    ("--node-ip=10.0.0.5,", "an empty element"),
    ("--node-labels=example.com/a=b,example.com/a=c", "label 'example.com/a' given twice"),
    ("--node-labels=Example.com/pool=gpu", "the prefix is not a DNS subdomain"),
    ("--node-labels=example.com/-pool=gpu", "the name is not 1 to 63"),
    ("--node-labels=pool=gpu!", "the value 'gpu!' is not"),
    ("--node-labels=pool=" + "a" * 64, "is not at most 63"),
    ("--node-labels=pool", "'pool' is not key=value"),
    ("--node-labels=node-role.kubernetes.io/control-plane=",
     "not one a kubelet may set on itself"),
    ("--provider-id=i-0abc", "'i-0abc' is not scheme://id"),
    ("--provider-id=aws:///eu-west-1a/i-*", "a glob character"),
    ("--provider-id=aws:///zone/i-0abc --provider-id=aws:///zone/i-0def", "given twice"),
])
def test_kubelet_flags_are_checked_before_rendering(tmp_path, flags, message):
    out = tmp_path / "out" / "join.yaml"
    env = dict(os.environ, KUBEADM_TOKEN="abcdef.0123456789abcdef",
               KUBEADM_CA_CERT_HASH="sha256:" + "ab" * 32,
               CONTROL_PLANE_ENDPOINT="k8s-api.example.internal:6443")
    proc = run(["sh", INSTALL, "--render-kubeadm-config", KUBEADM / "join-worker.yaml", out,
                "--kubelet-flags", flags], env=env, check=False)
    assert proc.returncode == 1
    assert f"error: --kubelet-flags: {flags.split()[-1].split('=')[0]}" in proc.stderr, proc.stderr
    assert message in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flags", [
    "--node-ip=10.0.0.5,2001:db8::5",
    "--node-ip=2001:DB8:0:0:0:0:2:1",
    "--node-ip=1:2:3:4:5:6:7::",
    "--node-ip=::ffff:192.0.2.1",
    "--node-ip=1:2:3:4:5:6:192.0.2.1",
    "--node-ip=0.0.0.0",
    "--node-ip=::",
    "--node-labels=topology.kubernetes.io/zone=eu-west-1a,example.com/pool=gpu,"
    "kubelet.kubernetes.io/x=,x.node.kubernetes.io/y=z,kubernetes.io/os=linux",
    "--provider-id=azure:///subscriptions/s/resourceGroups/rg/providers/"
    "Microsoft.Compute/virtualMachines/vm-1",
    "--provider-id=static://worker-1",
])
def test_good_kubelet_flags_are_rendered(tmp_path, flags):
    out = tmp_path / "join.yaml"
    env = dict(os.environ, KUBEADM_TOKEN="abcdef.0123456789abcdef",
               KUBEADM_CA_CERT_HASH="sha256:" + "ab" * 32,
               CONTROL_PLANE_ENDPOINT="k8s-api.example.internal:6443")
    run(["sh", INSTALL, "--render-kubeadm-config", KUBEADM / "join-worker.yaml", out,
         "--kubelet-flags", flags], env=env)
    assert flags.split("=", 1)[1] in out.read_text()
