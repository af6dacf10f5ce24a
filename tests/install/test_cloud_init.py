"""cloud-init/*.yaml: valid for Debian's cloud-init (`cloud-init schema`),
every top-level key a real module key of the installed cloud-init (its own
schema does not reject unknown keys before 23.4), and the first-boot scripts
fail-fast, consistent with the kubeadm templates they fill."""

import importlib.util
import json
import pathlib
import re

import pytest
import yaml

from helpers import CLOUD_INIT, KUBEADM, REPO, require_tool, run

FILES = sorted(CLOUD_INIT.glob("*.yaml"))
TEMPLATE_OF = {"control-plane.yaml": "init.yaml", "worker.yaml": "join-worker.yaml"}
PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def cloud_init_schema_path():
    spec = importlib.util.find_spec("cloudinit")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("the cloudinit Python package is not installed: Debian package 'cloud-init' "
                    "(run the tests with /usr/bin/python3)", pytrace=False)
    path = pathlib.Path(spec.submodule_search_locations[0]) / "config" / "schemas" / \
        "schema-cloud-config-v1.json"
    if not path.is_file():
        pytest.fail(f"{path} not found: is the installed cloud-init older than 22.2?", pytrace=False)
    return path


@pytest.fixture(scope="module")
def module_keys():
    """Top-level keys the installed cloud-init's modules accept: the properties
    of every schema in its top-level allOf, resolved through $defs."""
    schema = json.loads(cloud_init_schema_path().read_text())
    defs = schema.get("$defs", {})
    keys, patterns = set(), []

    def collect(node):
        if "$ref" in node:
            ref = node["$ref"]
            assert ref.startswith("#/$defs/"), ref
            collect(defs[ref[len("#/$defs/"):]])
        keys.update(node.get("properties", {}))
        patterns.extend(node.get("patternProperties", {}))
        for sub in node.get("allOf", []) + node.get("anyOf", []) + node.get("oneOf", []):
            collect(sub)

    collect(schema)
    assert "runcmd" in keys and "write_files" in keys, "unexpected cloud-init schema layout"
    return keys, patterns


def unknown_top_level_keys(path, module_keys):
    keys, patterns = module_keys
    doc = yaml.safe_load(pathlib.Path(path).read_text())
    return sorted(k for k in doc
                  if k not in keys and not any(re.search(p, k) for p in patterns))


def cloud_init_schema(path):
    exe = require_tool("cloud-init", "cloud-init")
    return run([exe, "schema", "--config-file", path], check=False)


def test_cloud_init_schema_validation_is_active(tmp_path):
    """Without python3-jsonschema `cloud-init schema` silently validates
    nothing; prove it rejects an unquoted write_files permission."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("#cloud-config\nwrite_files:\n  - path: /x\n    permissions: 0600\n")
    proc = cloud_init_schema(bad)
    assert proc.returncode != 0, (
        "cloud-init schema accepted an integer permissions: python3-jsonschema missing?\n"
        + proc.stdout + proc.stderr)
    assert "permissions" in proc.stdout + proc.stderr


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_cloud_init_schema_accepts(path):
    proc = cloud_init_schema(path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Valid cloud-config: {path}" in proc.stdout


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_top_level_keys_are_module_keys(path, module_keys):
    assert unknown_top_level_keys(path, module_keys) == []


def test_key_check_catches_a_misspelt_module(tmp_path, module_keys):
    bad = tmp_path / "typo.yaml"
    bad.write_text("#cloud-config\nrun_cmd:\n  - [echo, hi]\n")
    assert unknown_top_level_keys(bad, module_keys) == ["run_cmd"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_shape(path):
    text = path.read_text()
    assert text.splitlines()[0] == "#cloud-config"
    doc = yaml.safe_load(text)
    # bootcmd runs before write_files: nothing here may depend on it.
    assert "bootcmd" not in doc
    files = {f["path"]: f for f in doc["write_files"]}
    for f in files.values():
        assert isinstance(f["permissions"], str) and re.fullmatch(r"0[0-7]{3}", f["permissions"]), f
        assert f.get("owner") == "root:root"
    assert files["/etc/bootccm/firstboot.env"]["permissions"] == "0600", "holds the join token"
    script = files["/usr/local/sbin/bootccm-firstboot"]
    assert script["permissions"] == "0755"
    # runcmd has no `set -e`: one item, the fail-fast script.
    assert doc["runcmd"] == [["/usr/local/sbin/bootccm-firstboot"]]


def firstboot(path):
    doc = yaml.safe_load(path.read_text())
    return next(f["content"] for f in doc["write_files"]
                if f["path"] == "/usr/local/sbin/bootccm-firstboot")


def env_file(path):
    doc = yaml.safe_load(path.read_text())
    content = next(f["content"] for f in doc["write_files"]
                   if f["path"] == "/etc/bootccm/firstboot.env")
    out = {}
    for line in content.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            k, _, v = line.partition("=")
            assert re.fullmatch(r"[A-Z_][A-Z0-9_]*", k), line
            out[k] = v
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_firstboot_script_is_fail_fast_and_clean(path, tmp_path):
    script = tmp_path / "firstboot"
    script.write_text(firstboot(path))
    lines = script.read_text().splitlines()
    assert lines[0] == "#!/bin/sh"
    assert "set -eu" in lines
    run(["sh", "-n", script])
    shellcheck = require_tool("shellcheck", "shellcheck")
    run([shellcheck, "--shell=sh", "--exclude=SC1091", script])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_firstboot_uses_bundle_files_that_exist(path):
    """Every $B/<path> the script uses is a file of the repository laid out
    as the bundle, except the bundle-only binary and image."""
    bundle_only = {"bin/bootccm", "bootccm-image.tar"}
    used = set(re.findall(r'\$B/([A-Za-z0-9_./-]+)', firstboot(path)))
    assert used, "the script uses nothing from the bundle?"
    for rel in used - bundle_only:
        assert (REPO / rel).is_file(), f"{rel} is not in the repository"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_env_file_sets_every_placeholder_of_its_kubeadm_template(path):
    template = KUBEADM / TEMPLATE_OF[path.name]
    assert f"$B/kubeadm/{template.name}" in firstboot(path)
    text = "\n".join(line for line in template.read_text().splitlines()
                     if not line.lstrip().startswith("#"))
    needed = {p for p in PLACEHOLDER.findall(text) if not p.startswith("BOOTCCM_")}
    env = env_file(path)
    assert needed <= set(env), f"not set in firstboot.env: {sorted(needed - set(env))}"
    assert env["BOOTCCM_BUNDLE"]
    # the metadata settings are there to fill in, empty for the defaults
    assert env["BOOTCCM_METADATA_CLOUD"] == "" and env["BOOTCCM_METADATA_ENDPOINT"] == ""


# ---- the first-boot scripts, run -------------------------------------------

# Absolute paths the scripts use, moved into a temporary directory to run
# them; any other absolute path fails the test until it is listed here.
MOVED = ("/etc/bootccm", "/opt/bootccm", "/etc/kubernetes", "/var/tmp", "/usr/local/bin")
KEPT = ("/bin/sh", "/dev/null")
ABSOLUTE = re.compile(r"(?<![\w.:/$}-])(/[A-Za-z0-9_.-]+)+")

STUB = """#!/bin/sh
printf '%s\\n' "$(basename "$0") $*" >>"{log}"
{body}
"""
NODE_FLAGS = "--provider-id=aws:///us-east-2b/i-0abc --node-ip=172.31.3.15"
STUBS = {
    "bundle/bin/bootccm": f'[ "$1" = metadata ] && echo "{NODE_FLAGS}"; exit 0',
    "bundle/kubeadm/install-bootccm.sh": "exit 0",
    "path/kubeadm": "exit 0",
    "path/kubectl": "exit 0",
}
MD = {"BOOTCCM_METADATA_CLOUD": "openstack",
      "BOOTCCM_METADATA_ENDPOINT": "http://169.254.169.254:8775"}
MD_FLAGS = ["--metadata-cloud=openstack", "--metadata-endpoint=http://169.254.169.254:8775"]


def sandboxed(path, top, env_values, stubs=None):
    """Run the first-boot script of PATH with its absolute paths moved under
    TOP, its firstboot.env with ENV_VALUES applied and BOOTCCM_BUNDLE a
    directory of stubs (STUBS, updated by STUBS) that log their arguments;
    kubeadm and kubectl are stubs too. Returns (process, [argv of each call])."""
    text = firstboot(path)
    for p in MOVED:
        text = text.replace(p, str(top) + p)
    rest = {m.group(0) for m in ABSOLUTE.finditer(text)
            if not m.group(0).startswith(str(top)) and m.group(0) not in KEPT}
    assert rest == set(), f"absolute paths the test does not move: {sorted(rest)}"
    env = env_file(path)
    env.update(env_values, BOOTCCM_BUNDLE=str(top / "bundle"))
    (top / "etc/bootccm").mkdir(parents=True)
    for d in ("usr/local/bin", "var/tmp"):  # there on every system
        (top / d).mkdir(parents=True)
    (top / "etc/bootccm/firstboot.env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    log = top / "calls"
    log.touch()
    for rel, body in dict(STUBS, **(stubs or {})).items():
        f = top / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(STUB.format(log=log, body=body))
        f.chmod(0o755)
    for t in TEMPLATE_OF.values():
        (top / "bundle/kubeadm" / t).write_text((KUBEADM / t).read_text())
    script = top / "firstboot"
    script.write_text(text)
    proc = run(["sh", script], check=False,
               env={"PATH": f"{top / 'path'}:/usr/bin:/bin", "HOME": str(top)})
    return proc, [line.split(" ") for line in log.read_text().splitlines()]


@pytest.mark.parametrize("md", [{}, MD], ids=["default-metadata", "metadata-flags"])
def test_control_plane_firstboot_runs_in_order_with_the_metadata_flags(tmp_path, md):
    top = tmp_path
    proc, calls = sandboxed(CLOUD_INIT / "control-plane.yaml", top, md)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    flags = MD_FLAGS if md else []
    b = f"{top}/opt/bootccm"
    config = f"{top}/etc/kubernetes/kubeadm/init.yaml"
    assert [c[0] for c in calls] == ["bootccm", "install-bootccm.sh", "install-bootccm.sh",
                                     "kubeadm", "install-bootccm.sh"], calls
    assert calls[0][1:] == ["metadata"] + flags + ["--format=kubelet-flags"]
    assert calls[1][1:] == ["--render-kubeadm-config", b + "/kubeadm/init.yaml", config,
                            "--kubelet-flags"] + NODE_FLAGS.split()
    extra = [x for f in flags for x in ("--extra-arg", f)]
    want = ["--binary", b + "/bin/bootccm", "--manifest", "hostbinary", "--cloud-provider",
            "metadata", "--kubeadm-config", config] + extra
    assert calls[2][1:] == want + ["--no-wait"], "before kubeadm init"
    assert calls[3][1:] == ["init", "--config", config, "--upload-certs"]
    assert calls[4][1:] == want, "after kubeadm init, to apply the RBAC"


@pytest.mark.parametrize("md", [{}, MD], ids=["default-metadata", "metadata-flags"])
def test_worker_firstboot_runs_in_order_with_the_metadata_flags(tmp_path, md):
    top = tmp_path
    proc, calls = sandboxed(CLOUD_INIT / "worker.yaml", top, md)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    flags = MD_FLAGS if md else []
    assert [c[0] for c in calls] == ["bootccm", "install-bootccm.sh", "kubeadm"], calls
    assert calls[0][1:] == ["metadata"] + flags + ["--format=kubelet-flags"]
    assert (top / "usr/local/bin/bootccm").stat().st_mode & 0o777 == 0o755
    assert calls[1][1:] == ["--render-kubeadm-config", f"{top}/opt/bootccm/kubeadm/join-worker.yaml",
                            f"{top}/etc/kubernetes/kubeadm/join.yaml",
                            "--kubelet-flags"] + NODE_FLAGS.split()
    assert calls[2][1:] == ["join", "--config", f"{top}/etc/kubernetes/kubeadm/join.yaml"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_firstboot_stops_when_bootccm_metadata_fails(tmp_path, path):
    proc, calls = sandboxed(path, tmp_path, MD, stubs={"bundle/bin/bootccm": "exit 3"})
    assert proc.returncode == 1
    assert "bootccm-firstboot: error: bootccm metadata failed" in proc.stderr
    assert [c[0] for c in calls] == ["bootccm"], "nothing runs after the failure"
