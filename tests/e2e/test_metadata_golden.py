"""`bootccm metadata` output for each cloud's default identity in each
format, compared byte for byte with tests/golden/metadata/<cloud>.<format>.

Regenerate after an intended change with:
    UPDATE_GOLDEN=1 /usr/bin/python3 -m pytest tests/e2e/test_metadata_golden.py
and review the diff."""

import os

import pytest

from conftest import ROOT
from test_metadata import CONFIGDRIVE, fake, metadata, ok  # noqa: F401 (fixture)

GOLDEN = os.path.join(ROOT, "tests", "golden", "metadata")
FORMATS = ["json", "env", "kubelet-flags"]
# name: (dialect, extra flags)
CLOUDS = {
    "ec2": ("ec2", []),
    "gce": ("gce", []),
    "azure": ("azure", []),
    "openstack": ("openstack", []),
    "openstack-configdrive": ("openstack", ["--metadata-config-drive=" + CONFIGDRIVE]),
    "digitalocean": ("digitalocean", []),
    "hetzner": ("hetzner", []),
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", sorted(CLOUDS))
def test_golden(name, fmt, fake):  # noqa: F811
    dialect, extra = CLOUDS[name]
    md = fake(dialect)
    r = metadata(md, dialect, "--format=" + fmt, *extra)
    out = ok(r)
    assert r.stderr == "", r.stderr
    path = os.path.join(GOLDEN, "%s.%s" % (name, fmt))
    if os.environ.get("UPDATE_GOLDEN"):
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w") as f:
            f.write(out)
    with open(path) as f:
        assert out == f.read(), "%s differs (UPDATE_GOLDEN=1 regenerates it)" % path


def test_every_golden_file_is_checked():
    want = {"%s.%s" % (n, f) for n in CLOUDS for f in FORMATS}
    assert set(os.listdir(GOLDEN)) == want
