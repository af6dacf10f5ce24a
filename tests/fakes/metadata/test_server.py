"""Tests of the fake metadata services: each dialect's strict wire behaviour,
the fault controls, the CLI, the DMI trees and the config drive.

Run: /usr/bin/python3 -m pytest tests/fakes/metadata
Everything binds 127.0.0.1 on port 0.
"""

import filecmp
import http.client
import importlib.util
import json
import os
import re
import signal
import socket
import stat
import subprocess
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name, filename):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, filename))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


srv = _load("bootccm_fake_metadata_server", "server.py")
dmi = _load("bootccm_fake_metadata_dmi", "dmi.py")

TWO_POW_53 = 2 ** 53


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

@pytest.fixture
def make():
    fakes = []

    def _make(dialect, identity=None, **kw):
        f = srv.FakeMetadata(dialect, identity, **kw).start()
        fakes.append(f)
        return f

    yield _make
    for f in fakes:
        f.stop()


def call(fake_or_port, method, path, headers=None, body=None, timeout=5):
    """One request on a fresh connection: (status, headers (lower-case), body)."""
    port = fake_or_port if isinstance(fake_or_port, int) else fake_or_port.port
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        c.close()


def get(fake, path, headers=None, **kw):
    return call(fake, "GET", path, headers, **kw)


def refused(port):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(("127.0.0.1", port))
        return False
    except (ConnectionRefusedError, ConnectionResetError):
        # reset: the connect reached the listener's backlog just as the
        # listener closed; it is as down as a refusal says
        return True
    finally:
        s.close()


def wait_until(pred, timeout=3.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


# ---------------------------------------------------------------------------
# EC2 IMDSv2
# ---------------------------------------------------------------------------

TTL = "X-aws-ec2-metadata-token-ttl-seconds"
TOK = "X-aws-ec2-metadata-token"


def ec2_token(fake, ttl="21600"):
    st, h, body = call(fake, "PUT", "/latest/api/token", {TTL: ttl})
    assert st == 200
    return body.decode()


def ec2_get(fake, path, token=None):
    return get(fake, path, {TOK: token or ec2_token(fake)})


def test_ec2_token_put_answers_token_with_ttl_header(make):
    f = make("ec2")
    st, h, body = call(f, "PUT", "/latest/api/token", {TTL: "21600"})
    assert st == 200
    assert h["x-aws-ec2-metadata-token-ttl-seconds"] == "21600"
    assert h["content-type"] == "text/plain"
    assert h["server"] == "EC2ws"
    assert len(body) > 20 and b"\n" not in body


@pytest.mark.parametrize("ttl", [None, "", "0", "21601", "-1", "abc", "1.5"])
def test_ec2_token_put_rejects_missing_or_invalid_ttl(make, ttl):
    f = make("ec2")
    headers = {} if ttl is None else {TTL: ttl}
    st, _, _ = call(f, "PUT", "/latest/api/token", headers)
    assert st == 400


@pytest.mark.parametrize("ttl", ["1", "21600"])
def test_ec2_token_ttl_bounds_accepted(make, ttl):
    f = make("ec2")
    st, h, _ = call(f, "PUT", "/latest/api/token", {TTL: ttl})
    assert st == 200 and h["x-aws-ec2-metadata-token-ttl-seconds"] == ttl


def test_ec2_token_put_with_x_forwarded_for_is_rejected(make):
    f = make("ec2")
    st, _, _ = call(f, "PUT", "/latest/api/token", {TTL: "60", "X-Forwarded-For": "10.0.0.9"})
    assert st == 403


def test_ec2_get_without_token_is_401_when_v2_required(make):
    f = make("ec2")
    st, h, _ = get(f, "/latest/meta-data/instance-id")
    assert st == 401
    assert h["content-type"] == "text/html"


def test_ec2_get_with_unknown_token_is_401(make):
    f = make("ec2")
    assert get(f, "/latest/meta-data/instance-id", {TOK: "AQAEAnotatoken=="})[0] == 401


def test_ec2_token_expires_after_its_ttl(make):
    f = make("ec2")
    tok = ec2_token(f, "1")
    assert ec2_get(f, "/latest/meta-data/instance-id", tok)[0] == 200
    time.sleep(1.1)
    assert ec2_get(f, "/latest/meta-data/instance-id", tok)[0] == 401


def test_ec2_expire_tokens_then_fresh_token_works(make):
    f = make("ec2")
    tok = ec2_token(f)
    f.expire_tokens()
    assert ec2_get(f, "/latest/meta-data/instance-id", tok)[0] == 401
    st, _, body = ec2_get(f, "/latest/meta-data/instance-id")
    assert (st, body) == (200, b"i-0a33f80f09c96477f")


def test_ec2_v1_allowed_when_optional_but_bad_token_still_401(make):
    f = make("ec2", imdsv2="optional")
    st, _, body = get(f, "/latest/meta-data/instance-id")
    assert (st, body) == (200, b"i-0a33f80f09c96477f")
    assert get(f, "/latest/meta-data/instance-id", {TOK: "bogus"})[0] == 401
    f.set_imdsv2("required")
    assert get(f, "/latest/meta-data/instance-id")[0] == 401


@pytest.mark.parametrize("path,value", [
    ("instance-id", "i-0a33f80f09c96477f"),
    ("instance-type", "t3.small"),
    ("placement/availability-zone", "us-east-2b"),
    ("placement/region", "us-east-2"),
    ("local-ipv4", "172.31.3.15"),
    ("public-ipv4", "3.14.15.92"),
    ("ipv6", "2600:1f16:8c5:b902:51fa:3e40:1b29:d3a7"),
    ("local-hostname", "ip-172-31-3-15.us-east-2.compute.internal"),
    ("hostname", "ip-172-31-3-15.us-east-2.compute.internal"),
    ("mac", "06:17:04:d7:26:09"),
    ("network/interfaces/macs/06:17:04:d7:26:09/device-number", "0"),
    ("network/interfaces/macs/06:17:04:d7:26:08/device-number", "1"),
    ("network/interfaces/macs/06:17:04:d7:26:09/vpc-id", "vpc-0bb1c79de3e6a0f37"),
    ("network/interfaces/macs/06:17:04:d7:26:09/local-ipv4s", "172.31.3.15"),
    ("network/interfaces/macs/06:17:04:d7:26:08/local-ipv4s", "172.31.7.201\n172.31.7.202"),
    ("network/interfaces/macs/06:17:04:d7:26:09/subnet-ipv4-cidr-block", "172.31.0.0/20"),
    ("network/interfaces/macs/06:17:04:d7:26:09/interface-id", "eni-0123456789abcdef0"),
])
def test_ec2_leaves(make, path, value):
    f = make("ec2")
    st, h, body = ec2_get(f, "/latest/meta-data/" + path)
    assert st == 200
    assert h["content-type"] == "text/plain"
    assert body.decode() == value


def test_ec2_macs_listing_sorted_lexically_with_slashes(make):
    f = make("ec2")
    st, _, body = ec2_get(f, "/latest/meta-data/network/interfaces/macs/")
    # 06:..:08 is device 1, 06:..:09 the primary: order is lexical, not by device.
    assert (st, body) == (200, b"06:17:04:d7:26:08/\n06:17:04:d7:26:09/\n")


def test_ec2_directory_listing_format(make):
    f = make("ec2")
    tok = ec2_token(f)
    st, _, body = ec2_get(f, "/latest/meta-data/", tok)
    lines = body.decode().split("\n")
    assert st == 200 and body.endswith(b"\n") and lines[-1] == ""
    assert "placement/" in lines and "network/" in lines and "instance-id" in lines
    assert lines[:-1] == sorted(lines[:-1])
    # a directory without its trailing slash lists too; a leaf with one is 404
    assert ec2_get(f, "/latest/meta-data/placement", tok)[2] == ec2_get(
        f, "/latest/meta-data/placement/", tok)[2]
    assert ec2_get(f, "/latest/meta-data/instance-id/", tok)[0] == 404


def test_ec2_missing_items_are_404(make):
    f = make("ec2", {"public_ipv4": None, "public_hostname": None, "private_ipv4": None,
                     "extra_interfaces": []})
    tok = ec2_token(f)
    for path in ("public-ipv4", "local-ipv4", "public-hostname", "no-such-thing",
                 "network/interfaces/macs/06:17:04:d7:26:09/public-ipv4s"):
        assert ec2_get(f, "/latest/meta-data/" + path, tok)[0] == 404, path
    assert ec2_get(f, "/latest/user-data", tok)[0] == 404


def test_ec2_identity_document(make):
    f = make("ec2")
    st, _, body = ec2_get(f, "/latest/dynamic/instance-identity/document")
    doc = json.loads(body)
    assert st == 200
    assert doc["region"] == "us-east-2"
    assert doc["instanceId"] == "i-0a33f80f09c96477f"
    assert doc["availabilityZone"] == "us-east-2b"
    assert doc["privateIp"] == "172.31.3.15"
    assert set(doc) >= {"accountId", "architecture", "imageId", "instanceType",
                        "pendingTime", "version"}


def test_ec2_versions(make):
    f = make("ec2")
    tok = ec2_token(f)
    st, _, body = ec2_get(f, "/", tok)
    versions = body.decode().split("\n")[:-1]
    assert versions[0] == "2009-04-04" and versions[-1] == "latest"
    for v in ("2021-03-23", "2018-09-24", "2016-09-02"):
        assert v in versions
        assert ec2_get(f, "/%s/meta-data/instance-id" % v, tok)[2] == b"i-0a33f80f09c96477f"
    # placement/region arrived 2020-08-24: absent under older versions
    assert ec2_get(f, "/2018-09-24/meta-data/placement/region", tok)[0] == 404
    assert ec2_get(f, "/2021-03-23/meta-data/placement/region", tok)[2] == b"us-east-2"
    assert ec2_get(f, "/2008-02-01/meta-data/instance-id", tok)[0] == 404


def test_ec2_head_allowed_and_other_methods_not(make):
    f = make("ec2")
    tok = ec2_token(f)
    st, h, body = call(f, "HEAD", "/latest/meta-data/instance-id", {TOK: tok})
    assert st == 200 and body == b"" and h["content-length"] == str(len("i-0a33f80f09c96477f"))
    assert call(f, "GET", "/latest/api/token", {TOK: tok})[0] == 405
    assert call(f, "POST", "/latest/meta-data/instance-id", {TOK: tok})[0] == 405


def test_ec2_public_keys(make):
    f = make("ec2")
    tok = ec2_token(f)
    assert ec2_get(f, "/latest/meta-data/public-keys/", tok)[2] == b"0=node-key\n"
    body = ec2_get(f, "/latest/meta-data/public-keys/0/openssh-key", tok)[2]
    assert body.startswith(b"ssh-ed25519 ")


def test_ec2_log_records_token_headers_and_status(make):
    f = make("ec2")
    tok = ec2_token(f)
    ec2_get(f, "/latest/meta-data/instance-id", tok)
    log = f.request_log()
    assert [(e["method"], e["path"], e["status"]) for e in log] == [
        ("PUT", "/latest/api/token", 200), ("GET", "/latest/meta-data/instance-id", 200)]
    assert log[0]["headers"]["x-aws-ec2-metadata-token-ttl-seconds"] == "21600"
    assert log[1]["headers"]["x-aws-ec2-metadata-token"] == tok


# ---------------------------------------------------------------------------
# GCE
# ---------------------------------------------------------------------------

G = {"Metadata-Flavor": "Google"}
GV1 = "/computeMetadata/v1/"


@pytest.mark.parametrize("headers", [{}, {"Metadata-Flavor": "Something-Else"},
                                     {"Metadata-Flavor": "google"}])
def test_gce_requires_metadata_flavor_google(make, headers):
    f = make("gce")
    for path in (GV1, GV1 + "instance/id", GV1 + "instance"):
        st, h, _ = get(f, path, headers)
        assert st == 403
        assert h["metadata-flavor"] == "Google"
        assert h["content-type"] == "text/html; charset=UTF-8"


def test_gce_every_answer_carries_metadata_flavor(make):
    f = make("gce")
    for path, headers, want in [("/", {}, 200), (GV1 + "instance/id", G, 200),
                                (GV1 + "nope", G, 404), (GV1 + "instance?alt=json", G, 400)]:
        st, h, _ = get(f, path, headers)
        assert st == want and h["metadata-flavor"] == "Google", path


def test_gce_zone_and_machine_type_forms(make):
    f = make("gce")
    st, h, zone = get(f, GV1 + "instance/zone", G)
    assert st == 200 and h["content-type"] == "application/text"
    assert zone == b"projects/911957843158/zones/us-central1-a"
    assert len(zone.split(b"/")) == 4
    mt = get(f, GV1 + "instance/machine-type", G)[2]
    assert mt == b"projects/911957843158/machineTypes/e2-medium"
    assert len(mt.split(b"/")) == 4
    net = get(f, GV1 + "instance/network-interfaces/0/network", G)[2]
    assert net == b"projects/911957843158/networks/default"


def test_gce_id_exceeds_2_pow_53_and_is_exact(make):
    f = make("gce")
    text = get(f, GV1 + "instance/id", G)[2]
    assert int(text) > TWO_POW_53
    st, h, js = get(f, GV1 + "instance/id?alt=json", G)
    assert h["content-type"] == "application/json"
    assert js == text  # a JSON number with every digit
    assert int(float(js)) != int(js)  # which a double cannot hold


@pytest.mark.parametrize("path,value", [
    ("instance/name", "node-a"),
    ("instance/hostname", "node-a.us-central1-a.c.demo-proj.internal"),
    ("instance/network-interfaces/0/ip", "10.128.0.2"),
    ("instance/network-interfaces/0/mac", "42:01:0a:80:00:02"),
    ("instance/network-interfaces/0/access-configs/0/external-ip", "34.1.2.3"),
    ("instance/attributes/cluster-name", "demo"),
    ("project/project-id", "demo-proj"),
    ("project/numeric-project-id", "911957843158"),
    ("project//project-id", "demo-proj"),
])
def test_gce_leaves(make, path, value):
    f = make("gce")
    st, h, body = get(f, GV1 + path, G)
    assert (st, body.decode()) == (200, value)
    assert h["content-type"] == "application/text"
    assert "etag" in h


def test_gce_directory_listings(make):
    f = make("gce")
    for path in ("instance/network-interfaces/", "instance/network-interfaces"):
        st, h, body = get(f, GV1 + path, G)
        assert (st, body) == (200, b"0/\n")
        assert h["content-type"] == "application/text"
    assert get(f, GV1 + "instance/network-interfaces/0/access-configs/", G)[2] == b"0/\n"
    assert get(f, GV1, G)[2] == b"instance/\nproject/\n"
    assert get(f, GV1 + "instance/network-interfaces/0/forwarded-ips/", G)[2] == b""


def test_gce_no_public_ip_means_no_access_config(make):
    f = make("gce", {"public_ipv4": None})
    assert get(f, GV1 + "instance/network-interfaces/0/access-configs/", G)[2] == b""
    assert get(f, GV1 + "instance/network-interfaces/0/access-configs/0/external-ip",
               G)[0] == 404


def test_gce_empty_external_ip(make):
    f = make("gce", {"public_ipv4": ""})
    st, _, body = get(f, GV1 + "instance/network-interfaces/0/access-configs/0/external-ip", G)
    assert (st, body) == (200, b"")


def test_gce_ipv6s_list(make):
    f = make("gce", {"ipv6": "2600:1900:4000:1::2"})
    assert get(f, GV1 + "instance/network-interfaces/0/ipv6s", G)[2] == b"2600:1900:4000:1::2\n"


def test_gce_recursive_instance_json(make):
    f = make("gce")
    st, h, body = get(f, GV1 + "instance/?recursive=true", G)
    assert st == 200 and h["content-type"] == "application/json"
    assert re.search(rb'"id":7397947137517811906[,}]', body)  # a number, not a string
    doc = json.loads(body)
    assert doc["zone"] == "projects/911957843158/zones/us-central1-a"
    assert doc["machineType"] == "projects/911957843158/machineTypes/e2-medium"
    nic = doc["networkInterfaces"][0]
    assert nic["accessConfigs"] == [{"externalIp": "34.1.2.3", "type": "ONE_TO_ONE_NAT"}]
    assert nic["ip"] == "10.128.0.2" and nic["mtu"] == 1460
    for key in ("forwardedIps", "ipAliases", "targetInstanceIps", "dnsServers", "subnetmask"):
        assert key in nic
    assert doc["scheduling"] == {"automaticRestart": "TRUE", "onHostMaintenance": "MIGRATE",
                                 "preemptible": "FALSE"}
    assert doc["attributes"] == {"cluster-name": "demo"}  # user keys stay verbatim
    # with or without the trailing slash
    assert get(f, GV1 + "instance?recursive=true", G)[2] == body


def test_gce_recursive_project_json(make):
    f = make("gce")
    st, h, body = get(f, GV1 + "project/?recursive=true", G)
    assert body == b'{"attributes":{},"numericProjectId":911957843158,"projectId":"demo-proj"}'


def test_gce_recursive_text(make):
    f = make("gce")
    st, h, body = get(f, GV1 + "instance/network-interfaces/?recursive=true&alt=text", G)
    assert st == 200 and h["content-type"] == "application/text"
    lines = body.decode().splitlines()
    assert "0/access-configs/0/external-ip 34.1.2.3" in lines
    assert "0/ip 10.128.0.2" in lines


def test_gce_strict_errors(make):
    f = make("gce")
    for path in ("instance?alt=json", "instance?alt=text", "instance/?wait_for_change=true",
                 "instance/id?alt=yaml"):
        assert get(f, GV1 + path, G)[0] == 400, path
    for path in ("nope", "instance/id/", "instance/network-interfaces/1",
                 "instance/network-interfaces/x", "computeMetadata"):
        assert get(f, GV1 + path, G)[0] == 404, path
    assert call(f, "POST", GV1 + "instance/id", G)[0] == 405


def test_gce_leaf_alt_and_recursive(make):
    f = make("gce")
    assert get(f, GV1 + "instance/name?alt=json", G)[2] == b'"node-a"'
    assert get(f, GV1 + "instance/name?alt=text", G)[2] == b"node-a"
    assert get(f, GV1 + "instance/name?recursive=true", G)[2] == b"node-a"
    st, h, body = get(f, GV1 + "instance/tags", G)  # tags default to JSON
    assert (body, h["content-type"]) == (b'["k8s-node"]', "application/json")
    assert get(f, GV1 + "instance/tags?alt=text", G)[2] == b"k8s-node\n"
    # unknown parameters are ignored; recursive=other is not recursive
    assert get(f, GV1 + "instance/name?foo=bar&timeout_sec=1", G)[2] == b"node-a"
    assert get(f, GV1 + "instance/network-interfaces?recursive=xyz", G)[2] == b"0/\n"


def test_gce_wait_for_change(make):
    f = make("gce")
    st, h, _ = get(f, GV1 + "instance/name", G)
    etag = h["etag"]
    # a stale last_etag returns at once
    t0 = time.monotonic()
    get(f, GV1 + "instance/name?wait_for_change=true&last_etag=0000&timeout_sec=5", G)
    assert time.monotonic() - t0 < 1.0
    # current etag and no change: waits for timeout_sec
    t0 = time.monotonic()
    body = get(f, GV1 + "instance/name?wait_for_change=true&last_etag=%s&timeout_sec=0.4"
               % etag, G)[2]
    assert time.monotonic() - t0 >= 0.35 and body == b"node-a"
    # a change wakes the waiter
    threading.Timer(0.2, lambda: f.update_identity(name="node-b")).start()
    t0 = time.monotonic()
    body = get(f, GV1 + "instance/name?wait_for_change=true&last_etag=%s&timeout_sec=5"
               % etag, G)[2]
    assert body == b"node-b" and time.monotonic() - t0 < 3


# ---------------------------------------------------------------------------
# Azure
# ---------------------------------------------------------------------------

A = {"Metadata": "true"}
AZI = "/metadata/instance?api-version=2021-10-01&format=json"


def test_azure_requires_metadata_header(make):
    f = make("azure")
    st, h, body = get(f, AZI)
    assert st == 400
    assert json.loads(body)["error"] == "Bad request. Required metadata header not specified"
    assert get(f, AZI, {"Metadata": "false"})[0] == 400
    assert get(f, AZI, {"Metadata": "True"})[0] == 200  # AZCP's spelling


def test_azure_api_version_missing(make):
    f = make("azure")
    st, h, body = get(f, "/metadata/instance", A)
    assert st == 400
    assert json.loads(body) == {
        "error": "Bad request. api-version was not specified in the request. "
                 "For more information refer to aka.ms/azureimds",
        "newest-versions": ["2020-10-01", "2020-09-01", "2020-07-15"]}


def test_azure_api_version_unsupported_is_400_and_fallback_works(make):
    f = make("azure")
    st, _, body = get(f, "/metadata/instance?api-version=2099-01-01", A)
    assert st == 400 and "api-version" in json.loads(body)["error"]
    # cloud-init's fallback version, and the CCM's
    for v in ("2019-06-01", "2021-08-01", "2021-10-01"):
        assert get(f, "/metadata/instance?api-version=%s&format=json" % v, A)[0] == 200


def test_azure_instance_shape(make):
    f = make("azure")
    st, h, body = get(f, AZI, A)
    assert st == 200 and h["content-type"].startswith("application/json")
    doc = json.loads(body)
    c = doc["compute"]
    assert c["name"] == "node-a" and c["location"] == "westeurope" and c["zone"] == "2"
    assert c["vmSize"] == "Standard_D2s_v5"
    assert c["vmId"] == "0b6c1a52-4c1e-4a53-9f10-6f2b3c6d7e8f"
    assert c["subscriptionId"] == "11111111-2222-3333-4444-555555555555"
    assert c["resourceGroupName"] == "rg-k8s" and c["vmScaleSetName"] == ""
    assert c["platformFaultDomain"] == "0" and c["osType"] == "Linux"
    assert c["resourceId"] == ("/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/"
                               "rg-k8s/providers/Microsoft.Compute/virtualMachines/node-a")
    nic = doc["network"]["interface"][0]
    assert nic["macAddress"] == "000D3A047598"
    assert nic["ipv4"]["ipAddress"] == [{"privateIpAddress": "10.0.0.4",
                                         "publicIpAddress": "20.1.2.3"}]
    assert nic["ipv4"]["subnet"] == [{"address": "10.0.0.0", "prefix": "24"}]
    assert nic["ipv6"] == {"ipAddress": []}

    def primitives(o):
        if isinstance(o, dict):
            for v in o.values():
                yield from primitives(v)
        elif isinstance(o, list):
            for v in o:
                yield from primitives(v)
        else:
            yield o
    assert all(isinstance(p, str) for p in primitives(doc))


def test_azure_vmss_resource_id(make):
    f = make("azure", {"vm_scale_set": "pool1", "vmss_instance_id": "3", "name": "pool1_3"})
    c = json.loads(get(f, AZI, A)[2])["compute"]
    assert c["vmScaleSetName"] == "pool1"
    assert c["resourceId"].endswith("/virtualMachineScaleSets/pool1/virtualMachines/3")


def test_azure_leaf_text_and_filters(make):
    f = make("azure")
    st, h, body = get(f, "/metadata/instance/compute/vmId?api-version=2021-10-01&format=text", A)
    assert (st, body) == (200, b"0b6c1a52-4c1e-4a53-9f10-6f2b3c6d7e8f")
    assert h["content-type"].startswith("text/plain")
    assert get(f, "/metadata/instance/compute/vmId?api-version=2021-10-01", A)[0] == 400
    assert get(f, "/metadata/instance/compute/vmId?api-version=2021-10-01&format=json",
               A)[0] == 400
    st, _, body = get(f, "/metadata/instance/network/interface/0?api-version=2021-10-01", A)
    assert json.loads(body)["macAddress"] == "000D3A047598"
    assert get(f, "/metadata/instance/network/interface/0/ipv4/ipAddress/0/privateIpAddress"
               "?api-version=2021-10-01&format=text", A)[2] == b"10.0.0.4"
    assert get(f, "/metadata/instance/compute/nope?api-version=2021-10-01", A)[0] == 404
    assert get(f, "/metadata/instance/network/interface/5?api-version=2021-10-01", A)[0] == 404


def test_azure_fields_follow_api_version(make):
    f = make("azure")
    c = json.loads(get(f, "/metadata/instance/compute?api-version=2019-02-01", A)[2])
    assert "resourceId" not in c and "vmId" in c  # resourceId since 2019-03-11
    c = json.loads(get(f, "/metadata/instance/compute?api-version=2019-03-11", A)[2])
    assert "resourceId" in c


def test_azure_loadbalancer(make):
    f = make("azure")
    st, _, body = get(f, "/metadata/loadbalancer?api-version=2020-10-01&format=json", A)
    assert json.loads(body) == {"loadbalancer": {"publicIpAddresses": [
        {"frontendIpAddress": "20.1.2.3", "privateIpAddress": "10.0.0.4"}]}}
    assert get(f, "/metadata/loadbalancer?api-version=2019-06-01&format=json", A)[0] == 400
    f.update_identity(lb_public_ipv4=None)
    assert get(f, "/metadata/loadbalancer?api-version=2020-10-01&format=json", A)[0] == 404


def test_azure_strict_requests(make):
    f = make("azure")
    assert call(f, "POST", AZI, A)[0] == 405
    assert get(f, "/metadata/nope?api-version=2021-10-01", A)[0] == 404
    assert get(f, AZI + "&api-version=2021-10-01", A)[0] == 400  # duplicate parameter
    assert get(f, AZI, {"Metadata": "true", "X-Forwarded-For": "1.2.3.4"})[0] == 400
    st, _, body = get(f, "/metadata/versions", A)
    assert st == 200 and "2021-10-01" in json.loads(body)["apiVersions"]


def test_azure_rate_limit(make):
    f = make("azure", azure_rate_limit=True)
    codes = [get(f, AZI, A)[0] for _ in range(7)]
    assert codes[:5] == [200] * 5 and 429 in codes[5:]


# ---------------------------------------------------------------------------
# OpenStack
# ---------------------------------------------------------------------------

def test_openstack_meta_data(make):
    f = make("openstack")
    st, h, body = get(f, "/openstack/latest/meta_data.json")
    assert st == 200 and h["content-type"] == "application/json"
    md = json.loads(body)
    assert md["uuid"] == "b0fa911b-69d4-4476-bbe2-1c92bff6535c"
    assert md["name"] == "node-a" and md["hostname"] == "node-a.novalocal"
    assert md["availability_zone"] == "nova" and md["launch_index"] == 0
    assert isinstance(md["public_keys"], dict) and isinstance(md["meta"], dict)
    assert isinstance(md["devices"], list) and md["project_id"]


def test_openstack_network_data(make):
    f = make("openstack")
    nd = json.loads(get(f, "/openstack/latest/network_data.json")[2])
    link = nd["links"][0]
    assert link["ethernet_mac_address"] == "fa:16:3e:69:b0:58" and link["type"] == "ovs"
    assert nd["networks"][0]["link"] == link["id"]
    assert nd["networks"][0]["type"] == "ipv4_dhcp"
    assert nd["services"] == [{"type": "dns", "address": "8.8.8.8"}]
    f.update_identity(network_type="ipv4", netmask="255.255.255.0")
    net = json.loads(get(f, "/openstack/latest/network_data.json")[2])["networks"][0]
    assert (net["type"], net["ip_address"], net["netmask"]) == ("ipv4", "10.0.0.12",
                                                                "255.255.255.0")
    assert "routes" in net


def test_openstack_listings_and_versions(make):
    f = make("openstack")
    versions = get(f, "/openstack")[2].decode().split("\n")
    assert versions[0] == "2012-08-10" and "2018-08-27" in versions and versions[-1] == "latest"
    files = get(f, "/openstack/latest/")[2].decode().split("\n")
    assert {"meta_data.json", "network_data.json", "vendor_data.json"} <= set(files)
    assert get(f, "/openstack/2012-08-10/network_data.json")[0] == 404
    assert get(f, "/openstack/2015-10-15/network_data.json")[0] == 200
    assert get(f, "/openstack/1999-01-01/meta_data.json")[0] == 404
    assert get(f, "/openstack/latest/user_data")[0] == 404
    f.update_identity(user_data="#cloud-config\n")
    assert get(f, "/openstack/latest/user_data")[2] == b"#cloud-config\n"


@pytest.mark.parametrize("path,value", [
    ("instance-id", "i-00000001"),
    ("instance-type", "m1.small"),
    ("local-ipv4", "10.0.0.12"),
    ("public-ipv4", "172.24.4.10"),
    ("local-hostname", "node-a.novalocal"),
    ("placement/availability-zone", "nova"),
])
def test_openstack_ec2_compatible_paths_need_no_token(make, path, value):
    f = make("openstack")
    for ver in ("latest", "2009-04-04"):
        st, _, body = get(f, "/%s/meta-data/%s" % (ver, path))
        assert (st, body.decode()) == (200, value)


def test_openstack_rejects_writes(make):
    f = make("openstack")
    assert call(f, "PUT", "/latest/api/token", {TTL: "60"})[0] == 405
    assert call(f, "POST", "/openstack/latest/meta_data.json")[0] == 405


def test_configdrive_matches_generator_and_service(make, tmp_path):
    cfg = srv.load_identity("openstack")
    srv.write_configdrive(cfg, str(tmp_path))
    shipped = os.path.join(HERE, "configdrive")
    cmp = filecmp.dircmp(os.path.join(shipped, "openstack", "latest"),
                         os.path.join(str(tmp_path), "openstack", "latest"))
    assert not cmp.left_only and not cmp.right_only and not cmp.diff_files
    f = make("openstack")
    for name in ("meta_data.json", "network_data.json"):
        with open(os.path.join(shipped, "openstack", "latest", name)) as fh:
            assert json.load(fh) == json.loads(get(f, "/openstack/latest/" + name)[2])


# ---------------------------------------------------------------------------
# DigitalOcean
# ---------------------------------------------------------------------------

def test_digitalocean_v1_json(make):
    f = make("digitalocean")
    st, h, body = get(f, "/metadata/v1.json")
    assert st == 200 and h["content-type"] == "application/json"
    assert re.search(rb'"droplet_id": 22532410[,}]', body)  # a number
    doc = json.loads(body)
    assert doc["hostname"] == "node-a" and doc["region"] == "fra1"
    pub = doc["interfaces"]["public"][0]
    assert pub["ipv4"] == {"ip_address": "164.90.1.2", "netmask": "255.255.240.0",
                           "gateway": "164.90.0.1"}
    assert pub["ipv6"]["cidr"] == 64 and pub["type"] == "public"
    assert doc["interfaces"]["private"][0]["ipv4"]["ip_address"] == "10.114.0.2"
    assert doc["dns"]["nameservers"][0] == "67.207.67.2"
    assert doc["floating_ip"] == {"ipv4": {"active": False}}
    assert isinstance(doc["public_keys"], list)


@pytest.mark.parametrize("path,value", [
    ("id", "22532410"),
    ("hostname", "node-a"),
    ("region", "fra1"),
    ("interfaces/public/0/ipv4/address", "164.90.1.2"),
    ("interfaces/private/0/ipv4/address", "10.114.0.2"),
    ("interfaces/public/0/mac", "04:01:57:d1:9e:01"),
    ("interfaces/public/0/ipv6/address", "2A03:B0C0:0003:00D0:0000:0000:0001:0001"),
    ("floating_ip/ipv4/active", "false"),
    ("dns/nameservers", "67.207.67.2\n67.207.67.3\n"),
    ("tags", "k8s\n"),
    ("public-keys", ""),
])
def test_digitalocean_plain_paths(make, path, value):
    f = make("digitalocean")
    st, h, body = get(f, "/metadata/v1/" + path)
    assert (st, body.decode()) == (200, value)
    assert h["content-type"].startswith("text/plain")


def test_digitalocean_listings_and_404(make):
    f = make("digitalocean")
    root = get(f, "/metadata/v1/")[2].decode().split("\n")
    assert {"id", "hostname", "region", "interfaces/", "dns/", "floating_ip/", "tags/"} <= set(root)
    assert get(f, "/metadata/v1/interfaces/")[2] == b"private/\npublic/\n"
    assert get(f, "/metadata/v1/interfaces/public/0/ipv4/")[2] == b"address\ngateway\nnetmask\n"
    for path in ("/metadata/v1/nope", "/metadata/v1/interfaces/public/1/ipv4/address",
                 "/metadata/v1/user-data", "/metadata/v2/id", "/metadata/v1/id/"):
        assert get(f, path)[0] == 404, path


def test_digitalocean_without_private_interface(make):
    f = make("digitalocean", {"private_ipv4": None})
    assert json.loads(get(f, "/metadata/v1.json")[2])["interfaces"]["private"] == []
    assert get(f, "/metadata/v1/interfaces/private/0/ipv4/address")[0] == 404


# ---------------------------------------------------------------------------
# Hetzner
# ---------------------------------------------------------------------------

HZ = "/hetzner/v1/metadata"


@pytest.mark.parametrize("path,value", [
    ("hostname", "node-a"),
    ("instance-id", "4711"),
    ("public-ipv4", "203.0.113.10"),
    ("region", "eu-central"),
    ("availability-zone", "fsn1-dc14"),
])
def test_hetzner_text_leaves(make, path, value):
    f = make("hetzner")
    st, _, body = get(f, HZ + "/" + path)
    assert (st, body.decode().strip()) == (200, value)


def test_hetzner_root_yaml(make):
    yaml = pytest.importorskip("yaml")
    f = make("hetzner")
    st, _, body = get(f, HZ)
    assert st == 200
    assert body.startswith(b"availability-zone: fsn1-dc14\nhostname: node-a\ninstance-id: 4711\n")
    doc = yaml.safe_load(body)
    assert doc["instance-id"] == 4711 and doc["region"] == "eu-central"
    assert doc["public-ipv4"] == "203.0.113.10" and doc["availability-zone"] == "fsn1-dc14"
    assert doc["public-keys"] == [] and doc["network-config"]["version"] == 1
    assert {"local-ipv4", "network-sysconfig", "vendor_data"} <= set(doc)


def test_hetzner_private_networks(make):
    yaml = pytest.importorskip("yaml")
    two = [
        {"ip": "10.0.0.2", "alias_ips": ["10.0.0.3", "10.0.0.4"], "interface_num": 1,
         "mac_address": "86:00:00:2a:7d:e0", "network_id": 1234, "network_name": "nw-test1",
         "network": "10.0.0.0/8", "subnet": "10.0.0.0/24", "gateway": "10.0.0.1"},
        {"ip": "192.168.0.2", "alias_ips": [], "interface_num": 2,
         "mac_address": "86:00:00:2a:7d:e1", "network_id": 4321, "network_name": "nw-test2",
         "network": "192.168.0.0/16", "subnet": "192.168.0.0/24", "gateway": "192.168.0.1"},
    ]
    f = make("hetzner", {"private_networks": two})
    st, _, body = get(f, HZ + "/private-networks")
    assert st == 200
    assert body.decode() == (
        "- ip: 10.0.0.2\n  alias_ips: [10.0.0.3, 10.0.0.4]\n  interface_num: 1\n"
        "  mac_address: 86:00:00:2a:7d:e0\n  network_id: 1234\n  network_name: nw-test1\n"
        "  network: 10.0.0.0/8\n  subnet: 10.0.0.0/24\n  gateway: 10.0.0.1\n"
        "- ip: 192.168.0.2\n  alias_ips: []\n  interface_num: 2\n"
        "  mac_address: 86:00:00:2a:7d:e1\n  network_id: 4321\n  network_name: nw-test2\n"
        "  network: 192.168.0.0/16\n  subnet: 192.168.0.0/24\n  gateway: 192.168.0.1\n")
    assert yaml.safe_load(body) == two
    f.update_identity(private_networks=[])
    assert yaml.safe_load(get(f, HZ + "/private-networks")[2]) == []


def test_hetzner_userdata_and_404(make):
    f = make("hetzner")
    st, _, body = get(f, "/hetzner/v1/userdata")
    assert (st, body) == (204, b"")
    f.update_identity(user_data="#cloud-config\n")
    assert get(f, "/hetzner/v1/userdata")[2] == b"#cloud-config\n"
    assert get(f, HZ + "/nope")[0] == 404
    assert get(f, "/hetzner/v2/metadata")[0] == 404


def test_yaml_emitter_quotes_what_yaml11_would_retype():
    yaml = pytest.importorskip("yaml")
    tricky = {"a": "86:00:00:12:34:56", "b": "0123", "c": "yes", "d": "", "e": "1.5",
              "f": "x: y", "g": "multi\nline", "h": "- dash", "i": "null", "j": "#hash",
              "k": "2001:db8::1/64", "l": [], "m": {}, "n": ["1", 2, True]}
    assert yaml.safe_load(srv.yaml_dump(tricky)) == tricky


# ---------------------------------------------------------------------------
# Faults and controls
# ---------------------------------------------------------------------------

def test_fail_next_n_then_recover(make):
    f = make("hetzner")
    f.fail(500, count=2)
    codes = [get(f, HZ + "/hostname")[0] for _ in range(3)]
    assert codes == [500, 500, 200]
    assert [e["fault"] for e in f.request_log()] == ["status", "status", None]


def test_fail_for_a_path_only(make):
    f = make("digitalocean")
    f.fail(404, count=None, path="/metadata/v1/region")
    assert get(f, "/metadata/v1/region")[0] == 404
    assert get(f, "/metadata/v1/region")[0] == 404
    assert get(f, "/metadata/v1/id")[0] == 200
    f.clear_faults()
    assert get(f, "/metadata/v1/region")[0] == 200


def test_injected_errors_use_the_dialect_format(make):
    f = make("gce")
    f.fail(503, path=GV1 + "*")
    st, h, _ = get(f, GV1 + "instance/id", G)
    assert st == 503 and h["metadata-flavor"] == "Google"
    a = make("azure")
    a.fail(410)
    st, h, body = get(a, AZI, A)
    assert st == 410 and "error" in json.loads(body)


def test_delay_makes_client_time_out(make):
    f = make("openstack")
    f.delay(2.0, path="/openstack/latest/meta_data.json")
    with pytest.raises(socket.timeout):
        get(f, "/openstack/latest/meta_data.json", timeout=0.3)
    assert get(f, "/openstack/latest/meta_data.json")[0] == 200


def test_delay_then_status(make):
    f = make("hetzner")
    f.add_fault("status", status=500, delay_s=0.3)
    t0 = time.monotonic()
    assert get(f, HZ)[0] == 500
    assert time.monotonic() - t0 >= 0.25


def test_truncated_body(make):
    f = make("azure")
    f.truncate(path="/metadata/instance")
    c = http.client.HTTPConnection("127.0.0.1", f.port, timeout=5)
    c.request("GET", AZI, headers=A)
    r = c.getresponse()
    assert r.status == 200
    with pytest.raises(http.client.IncompleteRead):
        r.read()
    c.close()
    assert json.loads(get(f, AZI, A)[2])["compute"]["name"] == "node-a"


def test_malformed_body(make):
    f = make("openstack")
    f.malform(path="/openstack/latest/meta_data.json")
    st, h, body = get(f, "/openstack/latest/meta_data.json")
    assert st == 200 and h["content-type"] == "application/json"
    with pytest.raises(ValueError):
        json.loads(body)
    f.malform(body='{"uuid": ""}')
    assert get(f, "/openstack/latest/meta_data.json")[2] == b'{"uuid": ""}'


def test_drop_closes_without_answer(make):
    f = make("ec2", imdsv2="optional")
    f.drop()
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        get(f, "/latest/meta-data/instance-id")
    assert get(f, "/latest/meta-data/instance-id")[0] == 200
    assert f.request_log()[0]["status"] == 0


def test_fault_method_filter(make):
    f = make("ec2")
    f.fail(503, method="PUT")
    assert call(f, "PUT", "/latest/api/token", {TTL: "60"})[0] == 503
    assert call(f, "PUT", "/latest/api/token", {TTL: "60"})[0] == 200


def test_go_down_refuses_then_comes_up_on_same_port(make):
    f = make("hetzner")
    port = f.port
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", HZ + "/hostname")
    assert c.getresponse().read() == b"node-a"
    f.go_down()
    assert not f.is_up and refused(port)
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError, OSError)):
        c.request("GET", HZ + "/hostname")  # the kept-alive connection is gone too
        c.getresponse()
    c.close()
    f.come_up()
    assert f.port == port and get(f, HZ + "/hostname")[2] == b"node-a"


def test_go_down_for_a_while(make):
    f = make("gce")
    f.go_down(for_s=0.3)
    assert refused(f.port)
    assert wait_until(lambda: not refused(f.port))
    assert get(f, GV1 + "instance/name", G)[2] == b"node-a"


def test_flap_alternates_down_and_up_until_stopped(make):
    f = make("ec2")
    port = f.port
    f.flap(0.2, 0.2)
    assert wait_until(lambda: refused(port))
    assert wait_until(lambda: not refused(port))
    assert wait_until(lambda: refused(port))   # and down again
    f.stop_flapping()
    assert f.is_up and f.port == port and not refused(port)
    time.sleep(0.5)
    assert not refused(port)                  # stays up


def test_request_log_file(make, tmp_path):
    path = str(tmp_path / "log.jsonl")
    f = make("digitalocean", log_file=path)
    get(f, "/metadata/v1/id", {"User-Agent": "bootccm/test"})
    get(f, "/metadata/v1/nope")
    with open(path) as fh:
        lines = [json.loads(x) for x in fh]
    assert [(e["path"], e["status"]) for e in lines] == [("/metadata/v1/id", 200),
                                                         ("/metadata/v1/nope", 404)]
    assert lines[0]["headers"]["user-agent"] == "bootccm/test"


def test_identity_file_and_merge(make, tmp_path):
    p = tmp_path / "id.json"
    p.write_text(json.dumps({"instance_id": "i-0123456789abcdef0", "zone": "eu-west-1a",
                             "region": "eu-west-1"}))
    f = make("ec2", str(p))
    tok = ec2_token(f)
    assert ec2_get(f, "/latest/meta-data/instance-id", tok)[2] == b"i-0123456789abcdef0"
    assert ec2_get(f, "/latest/meta-data/placement/region", tok)[2] == b"eu-west-1"
    assert ec2_get(f, "/latest/meta-data/instance-type", tok)[2] == b"t3.small"  # default kept


def jpost(port, path, obj=None, method="POST"):
    body = json.dumps(obj).encode() if obj is not None else None
    st, _, out = call(port, method, path, {"Content-Type": "application/json"}, body)
    return st, json.loads(out)


def test_http_control_api(make):
    f = make("ec2")
    st, _, body = call(f, "GET", "/_fake/status")
    status = json.loads(body)
    assert st == 200 and status["dialect"] == "ec2" and status["up"] is True
    st, out = jpost(f.port, "/_fake/faults", {"action": "status", "status": 500, "count": 1,
                                              "path": "/latest/api/token"})
    assert st == 200 and out["id"] >= 1
    assert call(f, "PUT", "/latest/api/token", {TTL: "60"})[0] == 500
    tok = ec2_token(f)
    assert jpost(f.port, "/_fake/expire-tokens")[0] == 200
    assert ec2_get(f, "/latest/meta-data/instance-id", tok)[0] == 401
    assert jpost(f.port, "/_fake/imdsv2", {"mode": "optional"})[1] == {"imdsv2": "optional"}
    assert get(f, "/latest/meta-data/instance-id")[0] == 200
    assert jpost(f.port, "/_fake/identity", {"instance_type": "m5.large"}, "PATCH")[0] == 200
    assert get(f, "/latest/meta-data/instance-type")[2] == b"m5.large"
    log = json.loads(call(f, "GET", "/_fake/log")[2])
    assert all(not e["path"].startswith("/_fake") for e in log) and len(log) == 5
    assert jpost(f.port, "/_fake/log", method="DELETE")[0] == 200
    assert f.request_log() == []
    assert jpost(f.port, "/_fake/faults", {"bogus": 1})[0] == 400
    assert jpost(f.port, "/_fake/faults", {"action": "explode"})[0] == 400
    assert call(f, "GET", "/_fake/nope")[0] == 404
    st, out = jpost(f.port, "/_fake/down", {"for_s": 0.3})
    assert st == 200 and refused(f.port)
    assert wait_until(lambda: not refused(f.port))


def test_control_port_survives_down(make):
    f = make("hetzner", control_port=0)
    cport = f.control_port
    assert jpost(cport, "/_fake/down")[0] == 200
    assert refused(f.port)
    assert json.loads(call(cport, "GET", "/_fake/status")[2])["up"] is False
    assert call(cport, "GET", HZ)[0] == 404  # the control port serves only /_fake/
    assert jpost(cport, "/_fake/up")[0] == 200
    assert get(f, HZ + "/hostname")[2] == b"node-a"


def test_cli(tmp_path):
    port_file = str(tmp_path / "port")
    ident = tmp_path / "gce.json"
    ident.write_text(json.dumps({"name": "cli-node"}))
    proc = subprocess.Popen(
        ["/usr/bin/python3", os.path.join(HERE, "server.py"), "--dialect", "gce",
         "--identity", str(ident), "--port", "0", "--port-file", port_file,
         "--control-port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+) \(control port (\d+)\)", line)
        assert m, line
        port, cport = int(m.group(1)), int(m.group(2))
        with open(port_file) as fh:
            assert int(fh.read()) == port
        assert get(port, GV1 + "instance/name", G)[2] == b"cli-node"
        proc.send_signal(signal.SIGUSR1)
        assert wait_until(lambda: refused(port))
        assert json.loads(call(cport, "GET", "/_fake/status")[2])["up"] is False
        proc.send_signal(signal.SIGUSR2)
        assert wait_until(lambda: not refused(port))
        assert get(port, GV1 + "instance/name", G)[0] == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_cli_rejects_unknown_dialect():
    r = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "server.py"), "--dialect", "aws"],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and "invalid choice" in r.stderr


def test_stop_interrupts_delayed_requests(make):
    f = make("hetzner")
    f.delay(30)
    errors = []

    def client():
        try:
            get(f, HZ, timeout=10)
        except Exception as e:  # the connection is closed under it
            errors.append(e)

    t = threading.Thread(target=client)
    t.start()
    assert wait_until(lambda: f.faults() == [])  # the request took the fault
    t0 = time.monotonic()
    f.stop()
    t.join(5)
    assert not t.is_alive() and time.monotonic() - t0 < 3 and errors


# ---------------------------------------------------------------------------
# Real clients: cloud-init's readers and google-auth against the fakes
# (skipped where those Debian packages are not installed)
# ---------------------------------------------------------------------------

@pytest.fixture
def no_proxy(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def test_cloudinit_ec2_crawl_and_token_refresh(make, no_proxy):
    ec2ds = pytest.importorskip("cloudinit.sources.DataSourceEc2")
    f = make("ec2")
    ds = ec2ds.DataSourceEc2({}, None, None)
    ds.metadata_address = f.url
    ds._cloud_name = ec2ds.CloudNames.AWS
    ds.wait_for_metadata_service = lambda: True
    assert ds.get_metadata_api_version() == "2021-03-23"
    crawled = ds.crawl_metadata()
    md = crawled["meta-data"]
    assert md["instance-id"] == "i-0a33f80f09c96477f"
    assert md["placement"]["region"] == "us-east-2"
    assert sorted(md["network"]["interfaces"]["macs"]) == ["06:17:04:d7:26:08",
                                                          "06:17:04:d7:26:09"]
    assert crawled["dynamic"]["instance-identity"]["document"]["region"] == "us-east-2"
    puts = [e for e in f.request_log() if e["method"] == "PUT"]
    assert puts and puts[0]["headers"]["x-aws-ec2-metadata-token-ttl-seconds"] == "21600"
    # an expired token: 401, cloud-init drops it and PUTs a new one
    f.expire_tokens()
    f.clear_log()
    assert ds.crawl_metadata()["meta-data"]["instance-id"] == "i-0a33f80f09c96477f"
    seen = [(e["method"], e["status"]) for e in f.request_log()]
    assert ("GET", 401) in seen
    assert ("PUT", 200) in seen[seen.index(("GET", 401)):]


def test_cloudinit_gce_read_md(make, no_proxy):
    gce = pytest.importorskip("cloudinit.sources.DataSourceGCE")
    sources = pytest.importorskip("cloudinit.sources")
    f = make("gce", {"attributes": {"ssh-keys": "core:ssh-ed25519 AAAA core"}})
    params = sources.URLParams(max_wait_seconds=0, timeout_seconds=5, num_retries=0,
                               sec_between_retries=0)
    r = gce.read_md(address=f.url + GV1, url_params=params, platform_check=False)
    assert r["success"], r["reason"]
    md = r["meta-data"]
    assert md["instance-id"] == "7397947137517811906"
    assert md["availability-zone"] == "us-central1-a"
    assert md["local-hostname"] == "node-a.us-central1-a.c.demo-proj.internal"
    assert md["public-keys-data"] == ["core:ssh-ed25519 AAAA core"]
    # cloud-init spells it recursive=True
    assert any("recursive=True" in e["path"] for e in f.request_log())


def test_cloudinit_azure_imds_and_api_version_fallback(make, no_proxy):
    az = pytest.importorskip("cloudinit.sources.DataSourceAzure")
    from cloudinit.url_helper import UrlError
    import types
    f = make("azure")
    md_type = types.SimpleNamespace(value=f.url + "/metadata/instance")
    md = az.get_metadata_from_imds(retries=0, md_type=md_type, api_version="2021-08-01")
    assert md["compute"]["vmId"] == "0b6c1a52-4c1e-4a53-9f10-6f2b3c6d7e8f"
    assert md["network"]["interface"][0]["macAddress"] == "000D3A047598"
    with pytest.raises(UrlError) as e:
        az.get_metadata_from_imds(retries=0, md_type=md_type, api_version="2099-01-01")
    assert e.value.code == 400
    md = az.get_metadata_from_imds(retries=0, md_type=md_type, api_version=az.IMDS_VER_MIN)
    assert md["compute"]["name"] == "node-a"
    assert f.request_log()[0]["headers"]["metadata"] == "true"


def test_cloudinit_openstack_service_and_config_drive(make, no_proxy):
    osh = pytest.importorskip("cloudinit.sources.helpers.openstack")
    ec2h = pytest.importorskip("cloudinit.sources.helpers.ec2")
    f = make("openstack")
    reader = osh.MetadataReader(f.url, retries=0)
    # the reader's EC2 part has the link-local address built in: point it here
    reader._read_ec2_metadata = lambda: ec2h.get_instance_metadata(
        metadata_address=f.url, timeout=5, retries=0)
    r = reader.read_v2()
    assert r["metadata"]["instance-id"] == "b0fa911b-69d4-4476-bbe2-1c92bff6535c"
    assert r["ec2-metadata"]["instance-id"] == "i-00000001"
    assert r["ec2-metadata"]["placement"]["availability-zone"] == "nova"
    assert r["networkdata"]["links"][0]["ethernet_mac_address"] == "fa:16:3e:69:b0:58"
    r = osh.ConfigDriveReader(os.path.join(HERE, "configdrive")).read_v2()
    assert r["metadata"]["instance-id"] == "b0fa911b-69d4-4476-bbe2-1c92bff6535c"
    assert r["networkdata"]["services"][0]["address"] == "8.8.8.8"


def test_cloudinit_digitalocean_and_hetzner(make, no_proxy):
    do = pytest.importorskip("cloudinit.sources.helpers.digitalocean")
    hz = pytest.importorskip("cloudinit.sources.helpers.hetzner")
    f = make("digitalocean")
    md = do.read_metadata(f.url + "/metadata/v1.json", timeout=2, sec_between=0, retries=0)
    assert (md["droplet_id"], md["region"]) == (22532410, "fra1")
    h = make("hetzner")
    md = hz.read_metadata(h.url + HZ, timeout=2, sec_between=0, retries=0)
    assert (md["instance-id"], md["region"]) == (4711, "eu-central")
    assert md["network-config"]["config"][0]["mac_address"] == "96:00:01:23:45:6a"
    assert hz.read_userdata(h.url + "/hetzner/v1/userdata", timeout=2, sec_between=0,
                            retries=0) == b""


def test_google_auth_metadata_client(make, no_proxy):
    md = pytest.importorskip("google.auth.compute_engine._metadata")
    gtr = pytest.importorskip("google.auth.transport.requests")
    requests = pytest.importorskip("requests")
    f = make("gce")
    root = f.url + GV1
    session = requests.Session()
    session.trust_env = False
    req = gtr.Request(session)
    # ping() probes the address root and checks only the response header
    ping_root = md._METADATA_IP_ROOT
    md._METADATA_IP_ROOT = f.url
    try:
        assert md.ping(req)
    finally:
        md._METADATA_IP_ROOT = ping_root
    assert md.get(req, "project/project-id", root=root) == "demo-proj"
    inst = md.get(req, "instance/", root=root, recursive=True)
    assert inst["id"] == 7397947137517811906 and inst["name"] == "node-a"


# ---------------------------------------------------------------------------
# DMI trees
# ---------------------------------------------------------------------------

OPENSTACK_PRODUCTS = {"OpenStack Nova", "OpenStack Compute"}
OPENSTACK_TAGS = OPENSTACK_PRODUCTS | {"OpenTelekomCloud", "SAP CCloud VM", "HUAWEICLOUD",
                                       "Samsung Cloud Platform"}


def detect(d):
    """The detection table of the metadata reference, applied to a DMI tree."""
    uuid = d.get("product_uuid", "").lower()
    found = []
    first = uuid.split("-")[0]
    swapped = "".join(reversed([first[i:i + 2] for i in range(0, len(first), 2)]))
    if uuid.startswith("ec2") or (len(first) == 8 and swapped.startswith("ec2")):
        found.append("ec2")
    if d.get("product_name") in ("Google Compute Engine", "Google") or d.get(
            "product_serial", "").startswith("GoogleCloud-"):
        found.append("gce")
    if d.get("chassis_asset_tag") == "7783-7084-3265-9085-8269-3286-77":
        found.append("azure")
    if d.get("product_name") in OPENSTACK_PRODUCTS or d.get("chassis_asset_tag") in OPENSTACK_TAGS:
        found.append("openstack")
    if d.get("sys_vendor") == "DigitalOcean":
        found.append("digitalocean")
    if d.get("sys_vendor") == "Hetzner":
        found.append("hetzner")
    return found


@pytest.mark.parametrize("cloud,want", [
    ("ec2", ["ec2"]), ("ec2-xen", ["ec2"]), ("gce", ["gce"]), ("azure", ["azure"]),
    ("openstack", ["openstack"]), ("digitalocean", ["digitalocean"]),
    ("hetzner", ["hetzner"]), ("baremetal", []), ("kvm", []),
])
def test_dmi_tree_detects_as_its_cloud(cloud, want):
    assert detect(dmi.read(cloud)) == want


def test_dmi_trees_list():
    assert set(dmi.clouds()) == {"ec2", "ec2-xen", "gce", "azure", "openstack", "digitalocean",
                                 "hetzner", "baremetal", "kvm"}


def test_dmi_values_match_identities():
    ec2 = srv.default_identity("ec2")
    d = dmi.read("ec2")
    assert d["sys_vendor"] == "Amazon EC2" and d["board_asset_tag"] == ec2["instance_id"]
    assert d["product_name"] == ec2["instance_type"]
    gce = dmi.read("gce")
    assert (gce["sys_vendor"], gce["product_name"]) == ("Google", "Google Compute Engine")
    az = dmi.read("azure")
    assert az["product_uuid"] == srv.default_identity("azure")["instance_id"]
    os_ = dmi.read("openstack")
    assert (os_["sys_vendor"], os_["product_name"]) == ("OpenStack Foundation", "OpenStack Nova")
    assert os_["product_uuid"] == srv.default_identity("openstack")["instance_id"]
    do = dmi.read("digitalocean")
    assert (do["sys_vendor"], do["product_name"]) == ("DigitalOcean", "Droplet")
    assert do["product_serial"] == srv.default_identity("digitalocean")["instance_id"]
    hz = dmi.read("hetzner")
    assert (hz["sys_vendor"], hz["product_name"]) == ("Hetzner", "vServer")
    assert hz["product_serial"] == srv.default_identity("hetzner")["instance_id"]


def test_dmi_files_are_newline_terminated_single_lines():
    for cloud in dmi.clouds():
        for name in os.listdir(dmi.source(cloud)):
            with open(os.path.join(dmi.source(cloud), name), "rb") as fh:
                data = fh.read()
            assert data.endswith(b"\n") and data.count(b"\n") == 1, (cloud, name)


def test_dmi_install_applies_kernel_modes(tmp_path):
    dest = dmi.install("baremetal", str(tmp_path / "id"))
    modes = {n: stat.S_IMODE(os.stat(os.path.join(dest, n)).st_mode) for n in os.listdir(dest)}
    assert modes["product_uuid"] == 0o400 and modes["product_serial"] == 0o400
    assert modes["board_serial"] == 0o400 and modes["chassis_serial"] == 0o400
    assert modes["sys_vendor"] == 0o444 and modes["chassis_asset_tag"] == 0o444


# ---------------------------------------------------------------------------
# Identities
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dialect", srv.DIALECTS)
def test_default_identities_have_the_common_facts(dialect):
    ident = srv.default_identity(dialect)
    for key in ("instance_id", "name", "hostname", "instance_type", "region",
                "private_ipv4", "public_ipv4"):
        assert ident.get(key), key


def test_unknown_dialect_rejected():
    with pytest.raises(ValueError):
        srv.FakeMetadata("aws")
