"""`bootccm metadata` against the fake metadata services: detection from DMI
trees without network, each dialect's protocol (EC2 tokens, GCE and Azure
headers, Azure api-version, OpenStack source order), exit statuses, and that
a failed or partial answer never prints anything."""

import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import ROOT, bootccm_path, run

FAKES = os.path.join(ROOT, "tests", "fakes", "metadata")
DMI = os.path.join(FAKES, "dmi")
CONFIGDRIVE = os.path.join(FAKES, "configdrive")
DIALECTS = ["ec2", "gce", "azure", "openstack", "digitalocean", "hetzner"]


def _load(name):
    spec = importlib.util.spec_from_file_location("fake_metadata_" + name,
                                                  os.path.join(FAKES, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


mdserver = _load("server")
mddmi = _load("dmi")


@pytest.fixture
def fake():
    """start(dialect, identity=None, **kw) -> a running FakeMetadata."""
    started = []

    def start(dialect, identity=None, **kw):
        md = mdserver.FakeMetadata(dialect, identity, **kw).start()
        started.append(md)
        return md

    yield start
    for md in started:
        md.stop()


def metadata(md, cloud, *args, dmi=None, timeout=60):
    """Run `bootccm metadata` for the fake md (or a URL), detecting the cloud
    from the DMI tree of `cloud` (or the directory dmi)."""
    url = md if isinstance(md, str) else md.url
    argv = ["metadata", "--metadata-endpoint=" + url,
            "--metadata-dmi-dir=" + (dmi or os.path.join(DMI, cloud))] + list(args)
    return run(argv, timeout=timeout)


def clean(r):
    """The process ended on its own, without a sanitizer report."""
    assert "Sanitizer" not in r.stderr and "runtime error:" not in r.stderr, r.stderr
    assert r.returncode >= 0, r


def ok(r):
    clean(r)
    assert r.returncode == 0, r.stderr
    return r.stdout


def failed(r, status):
    """A failure prints nothing on stdout: never a partial instance."""
    clean(r)
    assert r.returncode == status, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "", r.stdout
    return r.stderr


def facts(md, cloud, *args):
    return json.loads(ok(metadata(md, cloud, "--format=json", *args)))


def service_requests(md):
    return [(l["method"], l["path"]) for l in md.request_log()]


# ---- detection -------------------------------------------------------------

DETECTED = {"ec2": "ec2", "ec2-xen": "ec2", "gce": "gce", "azure": "azure",
            "openstack": "openstack", "digitalocean": "digitalocean",
            "hetzner": "hetzner", "baremetal": None, "kvm": None}


def test_every_dmi_tree_is_known():
    assert sorted(mddmi.clouds()) == sorted(DETECTED)


@pytest.mark.parametrize("tree", sorted(DETECTED))
def test_detection_from_dmi_touches_no_network(tree, fake):
    md = fake("ec2")
    r = metadata(md, tree, "--detect")
    if DETECTED[tree]:
        assert ok(r) == DETECTED[tree] + "\n"
    else:
        assert "no known cloud in the DMI data" in failed(r, 3)
    assert md.request_log() == []


@pytest.mark.parametrize("tree", ["baremetal", "kvm"])
def test_no_cloud_in_dmi_is_not_found_without_waiting(tree, fake):
    md = fake("ec2")
    t0 = time.monotonic()
    err = failed(metadata(md, tree), 3)
    assert time.monotonic() - t0 < 2
    assert "--metadata-cloud" in err
    assert md.request_log() == []


def test_missing_dmi_directory_is_not_found(tmp):
    err = failed(run(["metadata", "--metadata-dmi-dir=" + os.path.join(tmp, "none")]), 3)
    assert "no DMI data at" in err


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop privileges")
@pytest.mark.parametrize("tree,want", [("ec2", "ec2"), ("ec2-xen", None), ("gce", "gce"),
                                       ("azure", "azure"), ("hetzner", "hetzner")])
def test_detection_as_non_root_uses_the_world_readable_files(tree, want):
    # product_uuid and product_serial are 0400: Nitro is still known by its
    # sys_vendor, a Xen EC2 guest (UUID only) is not
    top = tempfile.mkdtemp(prefix="bootccm-dmi-")  # pytest's tmp is root-only
    try:
        os.chmod(top, 0o755)
        d = os.path.join(top, "dmi")
        mddmi.install(tree, d, modes=True)
        # the checkout may sit in a directory only root can enter: run a copy
        binary = os.path.join(top, "bootccm")
        shutil.copy(bootccm_path(), binary)
        os.chmod(binary, 0o755)
        r = subprocess.run([binary, "metadata", "--detect",
                            "--metadata-dmi-dir=" + d],
                           capture_output=True, text=True, timeout=30, user=65534)
    finally:
        shutil.rmtree(top)
    if want:
        assert ok(r) == want + "\n"
    else:
        failed(r, 3)


# ---- EC2 IMDSv2 -------------------------------------------------------------

def test_ec2_every_read_carries_a_session_token(fake):
    md = fake("ec2")
    f = facts(md, "ec2")
    assert f["providerID"] == "aws:///us-east-2b/i-0a33f80f09c96477f"
    log = md.request_log()
    assert (log[0]["method"], log[0]["path"]) == ("PUT", "/latest/api/token")
    assert log[0]["headers"]["x-aws-ec2-metadata-token-ttl-seconds"] == "21600"
    assert "x-forwarded-for" not in log[0]["headers"]
    gets = [l for l in log if l["method"] == "GET"]
    assert gets and all(l["headers"].get("x-aws-ec2-metadata-token") for l in gets)
    assert len({l["headers"]["x-aws-ec2-metadata-token"] for l in gets}) == 1
    assert [l["method"] for l in log].count("PUT") == 1
    assert all(l["status"] == 200 or l["path"].endswith(("/ipv6s", "/public-hostname"))
               for l in gets)


def test_ec2_a_401_gets_a_fresh_token_and_one_more_try(fake):
    md = fake("ec2")
    md.fail(401, path="/latest/meta-data/instance-type")
    f = facts(md, "ec2")
    assert f["instanceType"] == "t3.small"
    log = md.request_log()
    assert [l["method"] for l in log].count("PUT") == 2
    tries = [l for l in log if l["path"] == "/latest/meta-data/instance-type"]
    assert [t["status"] for t in tries] == [401, 200]
    assert (tries[0]["headers"]["x-aws-ec2-metadata-token"]
            != tries[1]["headers"]["x-aws-ec2-metadata-token"])


def test_ec2_an_expired_token_is_replaced(fake):
    md = fake("ec2")
    # the read after instance-id waits a second; the tokens expire meanwhile
    md.delay(1.0, path="/latest/meta-data/instance-type")

    def expire():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if any(l["path"] == "/latest/meta-data/instance-id" for l in md.request_log()):
                md.expire_tokens()
                return
            time.sleep(0.01)

    t = threading.Thread(target=expire)
    t.start()
    f = facts(md, "ec2")
    t.join()
    assert f["instanceType"] == "t3.small"
    log = md.request_log()
    assert [l["method"] for l in log].count("PUT") == 2
    assert [l["status"] for l in log if l["path"] == "/latest/meta-data/instance-type"] == [401, 200]


def test_ec2_a_refused_token_is_an_error_not_imdsv1(fake):
    md = fake("ec2", imdsv2="optional")  # tokenless reads would work here
    md.fail(403, path="/latest/api/token", count=None)
    err = failed(metadata(md, "ec2"), 4)
    assert "PUT " + md.url + "/latest/api/token: HTTP 403" in err
    assert "IMDSv1 is not used" in err
    assert [l["method"] for l in md.request_log()] == ["PUT"]


def test_ec2_a_token_refused_twice_is_an_error(fake):
    md = fake("ec2")
    md.fail(401, path="/latest/meta-data/instance-type", count=None)
    err = failed(metadata(md, "ec2"), 4)
    assert "the session token was refused" in err and "/latest/meta-data/instance-type" in err
    # one fresh token, and no more: a new token refused at once is no expiry
    assert [l["method"] for l in md.request_log()] == ["PUT", "GET", "GET", "PUT", "GET"]


def test_ec2_old_service_region_from_the_identity_document(fake):
    md = fake("ec2")
    md.fail(404, path="/latest/meta-data/placement/region", count=None)
    f = facts(md, "ec2")
    assert f["region"] == "us-east-2"
    assert ("GET", "/latest/dynamic/instance-identity/document") in service_requests(md)


def test_ec2_interfaces_in_device_order_not_mac_order(fake):
    md = fake("ec2")
    f = facts(md, "ec2")
    internal = [a["address"] for a in f["addresses"] if a["type"] == "InternalIP"]
    assert internal == ["172.31.3.15", "172.31.7.201", "172.31.7.202"]
    assert f["nodeIP"] == "172.31.3.15"


def test_ec2_ipv6_only_instance(fake):
    md = fake("ec2", {"private_ipv4": None, "public_ipv4": None, "extra_interfaces": []})
    f = facts(md, "ec2")
    assert f["nodeIP"] == "2600:1f16:8c5:b902:51fa:3e40:1b29:d3a7"


# ---- GCE, Azure ---------------------------------------------------------------

def test_gce_sends_metadata_flavor_which_the_server_requires(fake):
    md = fake("gce")
    f = facts(md, "gce")
    assert f["providerID"] == "gce://demo-proj/us-central1-a/node-a"
    assert f["instanceID"] == "7397947137517811906"
    log = md.request_log()
    assert log and all(l["headers"].get("metadata-flavor") == "Google" and l["status"] == 200
                       for l in log)
    # the fake refuses a request without it, so the client must send it
    with pytest.raises(urllib.error.HTTPError) as ex:
        urllib.request.urlopen(md.url + "/computeMetadata/v1/project/project-id", timeout=5)
    assert ex.value.code == 403


def test_gce_big_ids_stay_exact(fake):
    md = fake("gce", {"instance_id": "18446744073709551614"})
    assert facts(md, "gce")["instanceID"] == "18446744073709551614"


def test_azure_api_version_and_metadata_header(fake):
    md = fake("azure")
    f = facts(md, "azure")
    assert f["zone"] == "westeurope-2" and f["region"] == "westeurope"
    log = md.request_log()
    assert [l["path"] for l in log] == ["/metadata/instance?api-version=2021-10-01&format=json"]
    assert log[0]["headers"]["metadata"] == "true"


def test_azure_public_ip_from_the_load_balancer(fake):
    md = fake("azure", {"public_ipv4": None})
    f = facts(md, "azure")
    assert {"type": "ExternalIP", "address": "20.1.2.3"} in f["addresses"]
    assert md.request_log()[-1]["path"] == "/metadata/loadbalancer?api-version=2021-10-01&format=json"
    md2 = fake("azure", {"public_ipv4": None, "lb_public_ipv4": None})
    f = facts(md2, "azure")  # 404: no load balancer, no ExternalIP
    assert not [a for a in f["addresses"] if a["type"] == "ExternalIP"]


def test_azure_zoneless_vm_uses_the_fault_domain(fake):
    md = fake("azure", {"zone": "", "platform_fault_domain": "1"})
    f = facts(md, "azure")
    assert f["zone"] == "1"


def test_azure_scale_set_provider_id(fake):
    md = fake("azure", {"vm_scale_set": "pool", "vmss_instance_id": "3"})
    assert facts(md, "azure")["providerID"] == (
        "azure:///subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/rg-k8s/"
        "providers/Microsoft.Compute/virtualMachineScaleSets/pool/virtualMachines/3")


# ---- OpenStack: config drive and service ---------------------------------------

def test_openstack_config_drive_comes_first(fake):
    md = fake("openstack")
    f = facts(md, "openstack", "--metadata-config-drive=" + CONFIGDRIVE)
    assert f["source"] == "config-drive"
    assert f["providerID"] == "openstack:///b0fa911b-69d4-4476-bbe2-1c92bff6535c"
    assert md.request_log() == []


def test_openstack_without_a_drive_asks_the_service(fake, tmp):
    md = fake("openstack")
    f = facts(md, "openstack", "--metadata-config-drive=" + tmp)
    assert f["source"] == "metadata-service"
    assert f["instanceType"] == "m1.small"
    assert ("GET", "/openstack/latest/meta_data.json") in service_requests(md)


def test_openstack_a_broken_drive_is_an_error_not_a_fall_through(fake, tmp):
    md = fake("openstack")
    drive = os.path.join(tmp, "cd")
    shutil.copytree(CONFIGDRIVE, drive)
    path = os.path.join(drive, "openstack", "latest", "meta_data.json")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text[:len(text) // 2])
    err = failed(metadata(md, "openstack", "--metadata-config-drive=" + drive), 4)
    assert path + ": JSON text cut short" in err
    assert md.request_log() == []


def test_openstack_drive_with_ec2_metadata_and_static_network(fake, tmp):
    ident = {"network_type": "ipv4", "ipv6": "2001:db8::12", "instance_id": "u-2"}
    drive = os.path.join(tmp, "cd")
    mdserver.write_configdrive(mdserver.load_identity("openstack", ident), drive)
    os.makedirs(os.path.join(drive, "ec2", "latest"))
    with open(os.path.join(drive, "ec2", "latest", "meta-data.json"), "w") as f:
        json.dump({"instance-type": "m1.large", "local-ipv4": "10.0.0.12",
                   "public-ipv4": "172.24.4.10"}, f)
    md = fake("openstack")
    f = facts(md, "openstack", "--metadata-config-drive=" + drive)
    assert f["providerID"] == "openstack:///u-2" and f["instanceType"] == "m1.large"
    assert f["addresses"] == [
        {"type": "InternalIP", "address": "10.0.0.12"},
        {"type": "InternalIP", "address": "2001:db8::12"},
        {"type": "ExternalIP", "address": "172.24.4.10"}]
    assert f["nodeIP"] == "10.0.0.12,2001:db8::12"


def test_openstack_neither_drive_nor_service_is_not_found(fake, tmp):
    md = fake("openstack")
    md.go_down()
    err = failed(metadata(md, "openstack", "--metadata-config-drive=" + tmp), 3)
    assert "no config drive at " + tmp in err and "no metadata service at" in err


# ---- failures -------------------------------------------------------------------

@pytest.mark.parametrize("dialect", DIALECTS)
def test_service_down_exits_3_quickly(dialect, fake):
    md = fake(dialect)
    md.go_down()
    t0 = time.monotonic()
    err = failed(metadata(md, dialect), 3)
    elapsed = time.monotonic() - t0
    assert elapsed < 3, elapsed
    assert "no metadata service at " + md.url in err


# the main answer of each dialect, and one a later step needs
PATHS = {
    "ec2": ["/latest/meta-data/instance-id", "/latest/meta-data/network/interfaces/macs/"],
    "gce": ["/computeMetadata/v1/instance/", "/computeMetadata/v1/project/project-id"],
    "azure": ["/metadata/instance", "/metadata/loadbalancer"],
    "openstack": ["/openstack/latest/meta_data.json", "/openstack/latest/network_data.json"],
    "digitalocean": ["/metadata/v1.json"],
    "hetzner": ["/hetzner/v1/metadata", "/hetzner/v1/metadata/private-networks"],
}
CASES = [(d, p) for d in DIALECTS for p in PATHS[d]]
# Azure asks the load balancer only without a public IP on the interface
IDENTITY = {"azure": {"public_ipv4": None}}


@pytest.mark.parametrize("dialect,path", CASES)
def test_truncated_answer_exits_4_naming_the_path(dialect, path, fake):
    md = fake(dialect, IDENTITY.get(dialect))
    md.truncate(path=path, count=None)
    err = failed(metadata(md, dialect), 4)
    assert md.url + path in err, err
    # retried: the truncation happened on every try
    assert len([l for l in md.request_log() if l["path"].split("?")[0] == path]) == 3


@pytest.mark.parametrize("dialect,path", CASES)
def test_malformed_answer_exits_4_naming_the_path(dialect, path, fake):
    md = fake(dialect, IDENTITY.get(dialect))
    md.malform(path=path, count=None)
    err = failed(metadata(md, dialect), 4)
    assert md.url + path in err, err
    # not retried: a malformed answer is an answer
    assert len([l for l in md.request_log() if l["path"].split("?")[0] == path]) == 1


@pytest.mark.parametrize("dialect", DIALECTS)
def test_one_truncated_answer_is_retried(dialect, fake):
    md = fake(dialect, IDENTITY.get(dialect))
    want = facts(md, dialect)
    md.clear_log()
    md.truncate(path=PATHS[dialect][0], count=1)
    assert facts(md, dialect) == want


@pytest.mark.parametrize("dialect", ["ec2", "gce", "hetzner"])
def test_server_errors_are_retried(dialect, fake):
    md = fake(dialect)
    want = facts(md, dialect)
    md.fail(503, count=2, path=PATHS[dialect][0])
    assert facts(md, dialect) == want
    md.fail(500, count=None, path=PATHS[dialect][0])
    t0 = time.monotonic()
    err = failed(metadata(md, dialect), 4)
    assert time.monotonic() - t0 < 5
    assert "HTTP 500" in err and PATHS[dialect][0] in err


def test_a_dropped_connection_is_retried_and_then_an_error(fake):
    md = fake("digitalocean")
    md.drop(path="/metadata/v1.json", count=1)
    assert facts(md, "digitalocean")["providerID"] == "digitalocean://22532410"
    md.drop(path="/metadata/v1.json", count=None)
    err = failed(metadata(md, "digitalocean"), 4)
    assert "/metadata/v1.json" in err


def test_a_slow_answer_times_out_and_is_retried(fake):
    md = fake("digitalocean")
    md.delay(4.0, path="/metadata/v1.json", count=1)
    t0 = time.monotonic()
    assert facts(md, "digitalocean")["region"] == "fra1"
    assert 2.5 < time.monotonic() - t0 < 6


def test_a_missing_fact_exits_4(fake):
    md = fake("gce")
    md.fail(404, path="/computeMetadata/v1/project/project-id", count=None)
    err = failed(metadata(md, "gce"), 4)
    assert "/computeMetadata/v1/project/project-id: HTTP 404 (no such item)" in err


def test_forced_cloud_talking_to_another_service_exits_4(fake):
    md = fake("hetzner")
    err = failed(run(["metadata", "--metadata-cloud=gce", "--metadata-endpoint=" + md.url]), 4)
    assert "/computeMetadata/v1/instance/" in err


@pytest.mark.parametrize("dialect", ["hetzner", "digitalocean"])
def test_dmi_serial_must_name_the_same_instance(dialect, fake, tmp):
    md = fake(dialect)
    d = os.path.join(tmp, "dmi")
    shutil.copytree(os.path.join(DMI, dialect), d)
    with open(os.path.join(d, "product_serial"), "w") as f:
        f.write("999\n")
    err = failed(metadata(md, dialect, dmi=d), 4)
    assert "DMI product_serial is \"999\"" in err


# ---- output -----------------------------------------------------------------------

def test_env_output_is_shell_safe(fake):
    nasty = "it's $(touch /tmp/bootccm-pwned) `id` \"x\""
    md = fake("openstack", {"name": nasty})
    out = ok(metadata(md, "openstack", "--format=env"))
    script = 'eval "$1"; printf "%s|%s" "$BOOTCCM_NAME" "$BOOTCCM_PROVIDER_ID"'
    r = subprocess.run(["sh", "-c", script, "sh", out], capture_output=True, text=True,
                       timeout=10)
    assert r.returncode == 0, r.stderr
    assert r.stdout == nasty + "|openstack:///b0fa911b-69d4-4476-bbe2-1c92bff6535c"
    assert not os.path.exists("/tmp/bootccm-pwned")


def test_invalid_label_values_are_sanitized_or_omitted_with_a_warning(fake):
    md = fake("openstack", {"zone": "zone one"})
    r = metadata(md, "openstack", "--format=kubelet-flags")
    out = ok(r)
    assert "topology.kubernetes.io/zone=zone-one" in out
    assert '"zone one" is not a valid label value' in r.stderr
    md.set_identity({"zone": "???"})
    r = metadata(md, "openstack", "--format=kubelet-flags")
    out = ok(r)
    assert "topology.kubernetes.io/zone" not in out
    assert "no topology.kubernetes.io/zone label" in r.stderr


def test_kubelet_flags_render_into_the_kubeadm_template(fake, tmp):
    md = fake("ec2")
    flags = ok(metadata(md, "ec2", "--format=kubelet-flags")).strip()
    out = os.path.join(tmp, "join.yaml")
    env = dict(os.environ, KUBEADM_TOKEN="abcdef.0123456789abcdef",
               KUBEADM_CA_CERT_HASH="sha256:" + "ab" * 32,
               CONTROL_PLANE_ENDPOINT="k8s-api.example.internal:6443")
    r = subprocess.run(["sh", os.path.join(ROOT, "kubeadm", "install-bootccm.sh"),
                        "--render-kubeadm-config",
                        os.path.join(ROOT, "kubeadm", "join-worker.yaml"), out,
                        "--kubelet-flags", flags], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr.lower(), r.stderr
    yaml = pytest.importorskip("yaml")
    with open(out) as f:
        doc = yaml.safe_load(f)
    args = {a["name"]: a["value"] for a in doc["nodeRegistration"]["kubeletExtraArgs"]}
    assert args == {
        "cloud-provider": "external",
        "provider-id": "aws:///us-east-2b/i-0a33f80f09c96477f",
        "node-ip": "172.31.3.15",
        "node-labels": "topology.kubernetes.io/zone=us-east-2b,"
                       "topology.kubernetes.io/region=us-east-2,"
                       "node.kubernetes.io/instance-type=t3.small",
    }


# ---- command line ---------------------------------------------------------------------

@pytest.mark.parametrize("args,needle", [
    (["--format=yaml"], "--format \"yaml\""),
    (["--metadata-cloud=aws"], "--metadata-cloud \"aws\""),
    (["--metadata-endpoint=https://169.254.169.254"], "--metadata-endpoint"),
    (["--no-such-flag"], "unknown flag: --no-such-flag"),
    (["extra"], "extra"),
])
def test_usage_errors_exit_2(args, needle):
    err = failed(run(["metadata"] + args), 2)
    assert needle in err


def test_help_lists_the_flags():
    out = ok(run(["metadata", "--help"]))
    for flag in ("--format", "--detect", "--metadata-cloud", "--metadata-endpoint",
                 "--metadata-dmi-dir", "--metadata-config-drive"):
        assert flag in out
    assert "3 no metadata service found" in out


def test_the_daemon_takes_and_checks_the_metadata_flags():
    out = ok(run(["--help"]))
    for flag in ("--metadata-cloud", "--metadata-endpoint", "--metadata-dmi-dir",
                 "--metadata-config-drive"):
        assert flag in out
    assert "metadata [flags]" in out
    r = run(["--metadata-cloud=aws"])
    clean(r)
    assert r.returncode == 2 and "--metadata-cloud \"aws\"" in r.stderr
