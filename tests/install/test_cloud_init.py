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
