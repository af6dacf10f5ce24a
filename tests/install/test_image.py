"""scripts/make-image.sh: a reproducible OCI image layout archive that
skopeo and umoci read, whose unpacked rootfs runs bootccm --version."""

import gzip
import hashlib
import io
import json
import os
import tarfile

import pytest

from helpers import MAKE_IMAGE, require_tool, run

TAG = "bootccm:v0.0.0-test"


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def image(tmp_path_factory, bootccm_binary):
    d = tmp_path_factory.mktemp("image")
    out = d / "bootccm-image.tar"
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    run(["sh", MAKE_IMAGE, bootccm_binary.path, out, TAG], env=env)
    return out


def layout(archive):
    """{name: bytes} of the files in the archive, and its members."""
    with tarfile.open(archive) as t:
        members = t.getmembers()
        files = {m.name: t.extractfile(m).read() for m in members if m.isfile()}
    return files, members


def blob(files, digest):
    algo, hexd = digest.split(":")
    data = files[f"blobs/{algo}/{hexd}"]
    assert hashlib.sha256(data).hexdigest() == hexd
    return data


def test_two_builds_are_identical(image, bootccm_binary, tmp_path):
    again = tmp_path / "again.tar"
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    run(["sh", MAKE_IMAGE, bootccm_binary.path, again, TAG], env=env)
    assert sha256(again) == sha256(image)


def test_source_date_epoch_sets_the_times(image, bootccm_binary, tmp_path):
    other = tmp_path / "other.tar"
    run(["sh", MAKE_IMAGE, bootccm_binary.path, other, TAG],
        env=dict(os.environ, SOURCE_DATE_EPOCH="1700000000"))
    assert sha256(other) != sha256(image)
    files, members = layout(other)
    assert {m.mtime for m in members} == {1700000000}
    index = json.loads(files["index.json"])
    manifest = json.loads(blob(files, index["manifests"][0]["digest"]))
    assert json.loads(blob(files, manifest["config"]["digest"]))["created"] == "2023-11-14T22:13:20Z"


def test_oci_layout(image):
    files, members = layout(image)
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    names = [m.name for m in members]
    assert names == sorted(names)
    assert all(m.uid == 0 and m.gid == 0 and m.mtime == 0 for m in members)
    index = json.loads(files["index.json"])
    assert index["schemaVersion"] == 2
    (desc,) = index["manifests"]
    assert desc["annotations"] == {
        "org.opencontainers.image.ref.name": TAG,
        "io.containerd.image.name": "docker.io/library/" + TAG,
    }
    assert desc["platform"] == {"architecture": "amd64", "os": "linux"}
    assert desc["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    manifest_bytes = blob(files, desc["digest"])
    assert len(manifest_bytes) == desc["size"]
    manifest = json.loads(manifest_bytes)
    config = json.loads(blob(files, manifest["config"]["digest"]))
    assert config["os"] == "linux" and config["architecture"] == "amd64"
    assert config["config"]["Entrypoint"] == ["/usr/local/bin/bootccm"]
    assert config["created"] == "1970-01-01T00:00:00Z"
    (layer,) = manifest["layers"]
    assert layer["mediaType"] == "application/vnd.oci.image.layer.v1.tar+gzip"
    compressed = blob(files, layer["digest"])
    raw = gzip.decompress(compressed)
    assert config["rootfs"] == {
        "type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(raw).hexdigest()]}


def test_layer_holds_only_the_binary(image, bootccm_binary):
    files, _ = layout(image)
    index = json.loads(files["index.json"])
    manifest = json.loads(blob(files, index["manifests"][0]["digest"]))
    with tarfile.open(fileobj=io.BytesIO(blob(files, manifest["layers"][0]["digest"]))) as t:
        members = t.getmembers()
        assert [(m.name, m.type, oct(m.mode), m.uid, m.gid, m.mtime) for m in members] == [
            ("usr", tarfile.DIRTYPE, "0o755", 0, 0, 0),
            ("usr/local", tarfile.DIRTYPE, "0o755", 0, 0, 0),
            ("usr/local/bin", tarfile.DIRTYPE, "0o755", 0, 0, 0),
            ("usr/local/bin/bootccm", tarfile.REGTYPE, "0o755", 0, 0, 0),
        ]
        assert t.extractfile("usr/local/bin/bootccm").read() == bootccm_binary.path.read_bytes()


def test_skopeo_inspects_and_copies(image, tmp_path):
    skopeo = require_tool("skopeo", "skopeo")
    info = json.loads(run([skopeo, "inspect", f"oci-archive:{image}:{TAG}"]).stdout)
    assert info["Architecture"] == "amd64" and info["Os"] == "linux"
    assert len(info["Layers"]) == 1
    dest = tmp_path / "copy"
    run([skopeo, "--insecure-policy", "copy", f"oci-archive:{image}", f"dir:{dest}"])
    manifest = json.loads((dest / "manifest.json").read_text())
    layer = manifest["layers"][0]["digest"].split(":")[1]
    assert (dest / layer).is_file()


def test_umoci_unpacks_a_rootfs_that_runs(image, bootccm_binary, tmp_path):
    umoci = require_tool("umoci", "umoci")
    oci = tmp_path / "oci"
    oci.mkdir()
    with tarfile.open(image) as t:
        t.extractall(oci)
    bundle = tmp_path / "bundle"
    args = [umoci, "unpack", "--image", f"{oci}:{TAG}", bundle]
    if os.geteuid() != 0:
        args.insert(2, "--rootless")
    run(args)
    exe = bundle / "rootfs" / "usr" / "local" / "bin" / "bootccm"
    got = run([exe, "--version"]).stdout
    want = run([bootccm_binary.path, "--version"]).stdout
    assert got == want and got.strip()
    cfg = json.loads((bundle / "config.json").read_text())
    assert cfg["process"]["args"] == ["/usr/local/bin/bootccm"]


def test_tag_only_and_registry_references(bootccm_binary, tmp_path):
    for tag, name in [
        ("v1.2.3", "docker.io/library/bootccm:v1.2.3"),
        ("registry.internal:5000/infra/bootccm:v1", "registry.internal:5000/infra/bootccm:v1"),
        ("infra/bootccm:v1", "docker.io/infra/bootccm:v1"),
    ]:
        out = tmp_path / "i.tar"
        run(["sh", MAKE_IMAGE, bootccm_binary.path, out, tag])
        files, _ = layout(out)
        ann = json.loads(files["index.json"])["manifests"][0]["annotations"]
        assert ann == {"org.opencontainers.image.ref.name": tag, "io.containerd.image.name": name}


def test_default_tag_is_the_binary_version(bootccm_binary, tmp_path):
    out = tmp_path / "i.tar"
    proc = run(["sh", MAKE_IMAGE, bootccm_binary.path, out])
    files, _ = layout(out)
    ref = json.loads(files["index.json"])["manifests"][0]["annotations"][
        "org.opencontainers.image.ref.name"]
    assert ref.startswith("bootccm:v") or ref.startswith("bootccm:")
    if not bootccm_binary.real:
        assert ref == "bootccm:v0.0.0-stand-in"
    assert ref in proc.stdout


@pytest.mark.parametrize("case", ["dynamic", "not-elf", "bad-tag", "missing"])
def test_refuses_what_would_not_run(case, tmp_path, bootccm_binary):
    binary, tag = bootccm_binary.path, TAG
    if case == "dynamic":
        binary = require_tool("sh", "dash")
        binary = os.path.realpath(binary)
        message = "dynamically linked"
    elif case == "not-elf":
        binary = tmp_path / "script"
        binary.write_text("#!/bin/sh\n")
        message = "not an ELF executable"
    elif case == "bad-tag":
        tag = 'bad"tag'
        message = "not a valid image tag or reference"
    else:
        binary = tmp_path / "nothing"
        message = "binary not found"
    proc = run(["sh", MAKE_IMAGE, binary, tmp_path / "o.tar", tag], check=False)
    assert proc.returncode == 1 and message in proc.stderr
    assert not (tmp_path / "o.tar").exists()


def test_make_image_passes_shellcheck():
    shellcheck = require_tool("shellcheck", "shellcheck")
    run([shellcheck, MAKE_IMAGE])
