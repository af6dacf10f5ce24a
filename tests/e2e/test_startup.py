"""What happens before the daemon starts: every flag and URL is checked first
(a bad one exits 2 naming it), the upstream cloud-controller-manager's
command line is understood, a controller that will not run says so, the
one-shot commands end within their --timeout, and help and the cloud
config's errors read as a user expects."""

import importlib.util
import os
import re
import time

import pytest

from conftest import ROOT, free_port, https_get, run
from rawserver import RawServer

METADATA_OFFLINE = ["--metadata-cloud=ec2", "--metadata-endpoint=http://127.0.0.1:9"]


def lines(out, text):
    return [l for l in out.splitlines() if text in l]


# --- 4. every flag before anything starts -------------------------------------

@pytest.mark.parametrize("args, flag", [
    (["--bind-address=notanip"], "--bind-address"),
    (["--cluster-cidr=bogus"], "--cluster-cidr"),
    (["--cluster-cidr=10.0.0.0/16,fd00::/48,10.1.0.0/16"], "--cluster-cidr"),
    (["--cluster-cidr=10.0.0.0/16,10.1.0.0/16"], "--cluster-cidr"),
    (["--master=https://127.0.0.1:99999"], "--master"),
    (["--timeout=5s"], "--timeout"),
])
def test_a_bad_flag_exits_2_before_the_kubeconfig_is_read(tmp, args, flag):
    # the kubeconfig does not exist: reading it would exit 1
    missing = os.path.join(tmp, "missing.conf")
    r = run(["--kubeconfig", missing, "--secure-port=0"] + args)
    assert r.returncode == 2, (args, r.returncode, r.stderr)
    assert flag in r.stderr and missing not in r.stderr, r.stderr


# --- 3. controllers that do not run say so ------------------------------------

@pytest.mark.parametrize("controllers", ["service,route", "*"])
def test_controllers_that_do_not_run_are_named_once_at_start(api, tmp, daemon, controllers):
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="ctl-user",
                              tls_server_name="kubernetes")
    d = daemon(["--kubeconfig", kc, "--secure-port=0", "--cloud-provider=metadata",
                "--controllers=" + controllers, "--leader-elect=false"] + METADATA_OFFLINE)
    d.wait_for("Started leading")
    out = d.output()
    for name in ("service", "route"):
        got = lines(out, 'controller="%s"' % name)
        assert len(got) == 1, out
        assert got[0].startswith("W") and '"Controller does not run"' in got[0], got
        # the metadata provider serves neither: the reason names the group
        assert 'reason="provider \\"metadata\\" has no ' in got[0], got
    # cloud-node and cloud-node-lifecycle run: nothing said about them
    assert not lines(out, 'controller="cloud-node')


# --- 6. the upstream command line ----------------------------------------------

def test_a_kubeadm_style_upstream_command_line_starts(api, tmp, daemon):
    port = free_port()
    main = api.write_kubeconfig(os.path.join(tmp, "ccm.conf"), user="ccm-main",
                                groups=("system:masters",), tls_server_name="kubernetes")
    authn = api.write_kubeconfig(os.path.join(tmp, "authn.conf"), user="ccm-authn",
                                 groups=("system:masters",), tls_server_name="kubernetes")
    authz = api.write_kubeconfig(os.path.join(tmp, "authz.conf"), user="ccm-authz",
                                 groups=("system:masters",), tls_server_name="kubernetes")
    cloud_config = os.path.join(tmp, "cloud.conf")
    with open(cloud_config, "w") as f:
        f.write("metadata:\n  cloud: ec2\n  endpoint: http://127.0.0.1:9\n")
    api.add_token("scraper-token-0123456789", "prometheus", ("system:masters",))
    # what kubeadm writes for kube-controller-manager, and what cloud
    # providers' manifests add for their cloud-controller-manager
    d = daemon([
        "--authentication-kubeconfig=" + authn, "--authorization-kubeconfig=" + authz,
        "--bind-address=127.0.0.1", "--secure-port=%d" % port,
        "--client-ca-file=" + api.ca_file, "--requestheader-client-ca-file=" + api.ca_file,
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-username-headers=X-Remote-User",
        "--cluster-name=kubernetes", "--kubeconfig=" + main, "--leader-elect=true",
        "--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s",
        "--leader-elect-retry-period=500ms",
        "--use-service-account-credentials=true", "--profiling=false",
        "--cloud-provider=metadata", "--cloud-config=" + cloud_config,
        "--configure-cloud-routes=false", "--allocate-node-cidrs=false",
        "--feature-gates=CloudControllerManagerWebhook=false,"
        "CloudControllerManagerWatchBasedRoutesReconciliation=true", "--v=2",
        "--authentication-token-webhook-cache-ttl=10s", "--logtostderr=true",
        "--controllers=*,-route,-service",
    ])
    d.wait_for("Started leading", timeout=15)
    code, _ = https_get(port, "/healthz")
    assert code == 200
    code, body = https_get(port, "/metrics", "scraper-token-0123456789")
    assert code == 200 and "bootccm_build_info" in body
    # each review went to its own kubeconfig's identity (the fake logs a
    # request once answered: the answer can be here before the entry)
    api.wait_for_request(lambda e: e.get("resource") == "subjectaccessreviews")
    reviews = {(e.get("resource"), e["user"]) for e in api.request_log()
               if e.get("resource") in ("tokenreviews", "subjectaccessreviews")}
    assert reviews == {("tokenreviews", "ccm-authn"),
                       ("subjectaccessreviews", "ccm-authz")}, reviews
    out = d.output()
    noted = set(re.findall(r'"Upstream flag has no effect" flag="(--[a-z-]+)"', out))
    assert noted == {"--use-service-account-credentials", "--client-ca-file",
                     "--requestheader-client-ca-file", "--requestheader-allowed-names",
                     "--feature-gates"}, out
    for l in lines(out, "Upstream flag has no effect"):
        assert l.startswith("W"), l


@pytest.mark.parametrize("arg, why", [
    ("--enable-leader-migration", "leader migration is not supported"),
    ("--leader-migration-config=/etc/lm.yaml", "leader migration is not supported"),
    ("--webhooks=foo", "serves no webhooks"),
    ("--tls-cipher-suites=TLS_AES_128_GCM_SHA256", "remove the flag"),
    ("--tls-min-version=VersionTLS13", "use VersionTLS12"),
    ("--tls-sni-cert-key=a.crt,a.key", "use --tls-cert-file"),
    ("--feature-gates=NoValue", "key=true or key=false"),
    ("--feature-gates=CloudControllerManagerWatchBasedRoutes=true",
     "unrecognized feature gate: CloudControllerManagerWatchBasedRoutes"),
    ("--feature-gates=DeclarativeValidation=false",
     "cannot set feature gate DeclarativeValidation to false, feature is locked to true"),
])
def test_upstream_flags_bootccm_cannot_honour_are_refused_with_the_reason(arg, why):
    r = run([arg, "--secure-port=0"])
    assert r.returncode == 2, (arg, r.stderr)
    assert arg.split("=")[0] in r.stderr and why in r.stderr, r.stderr


# --- 7. --validate ----------------------------------------------------------------

def test_validate_checks_everything_and_starts_nothing(api, tmp):
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="v-user",
                              tls_server_name="kubernetes")
    seq = api.log_seq()
    r = run(["--validate", "--kubeconfig", kc, "--cloud-provider=metadata",
             "--profiling"] + METADATA_OFFLINE)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("valid: kubeconfig %s" % kc), r.stdout
    assert "--profiling" in r.stderr   # what will not happen is said
    bad = os.path.join(tmp, "bad.yaml")
    with open(bad, "w") as f:
        f.write("metadata:\n  clouds: ec2\n")
    for args in (["--kubeconfig", os.path.join(tmp, "missing")],
                 ["--kubeconfig", kc, "--cloud-provider=metadata", "--cloud-config=" + bad],
                 ["--kubeconfig", kc, "--authorization-kubeconfig=" + bad],
                 ["--kubeconfig", kc, "--bogus-flag=1"]):
        r = run(["--validate"] + args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stdout == "", r.stdout
    assert api.request_log(seq) == []


# --- 10. help, the cloud config's errors ------------------------------------------

def test_help_and_dash_h_are_help():
    want = run(["--help"])
    assert want.returncode == 0 and want.stdout.startswith("Usage:")
    for args in (["help"], ["-h"]):
        r = run(args)
        assert (r.returncode, r.stdout) == (0, want.stdout), args
    r = run(["metadata", "-h"])
    assert r.returncode == 0 and r.stdout.startswith("Usage: bootccm metadata")


def test_a_bad_cloud_config_value_is_named_by_file_line_and_column(api, tmp):
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="cc-user",
                              tls_server_name="kubernetes")
    cc = os.path.join(tmp, "cloud.yaml")
    with open(cc, "w") as f:
        f.write("# the metadata provider's settings\nmetadata:\n  cloud: aws\n")
    r = run(["--validate", "--kubeconfig", kc, "--cloud-provider=metadata",
             "--cloud-config=" + cc])
    assert r.returncode == 2
    assert '%s:3:10: key "cloud" in metadata: "aws": want auto, ec2' % cc in r.stderr, r.stderr
    assert "--metadata-cloud" not in r.stderr
    with open(cc, "w") as f:
        f.write("metadata:\n  endpoint: https://169.254.169.254\n")
    r = run(["--kubeconfig", kc, "--cloud-provider=metadata", "--cloud-config=" + cc,
             "--secure-port=0"])
    assert r.returncode == 1
    # in a log line: the quotes escaped
    assert '%s:2:13: key \\"endpoint\\" in metadata' % cc in r.stderr, r.stderr


def test_a_cloud_config_directory_says_so(api, tmp):
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="cc-user",
                              tls_server_name="kubernetes")
    r = run(["--validate", "--kubeconfig", kc, "--cloud-provider=metadata",
             "--cloud-config=" + tmp])
    assert r.returncode == 2
    assert "%s: is a directory, not a regular file" % tmp in r.stderr, r.stderr


# --- 5. the one-shot commands' deadline -------------------------------------------

@pytest.fixture
def slow():
    made = []

    def make(mode):
        s = RawServer(mode)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def timed(args, timeout=60):
    t0 = time.monotonic()
    r = run(args, timeout=timeout)
    return r, time.monotonic() - t0


def anonymous_kubeconfig(path, server):
    with open(path, "w") as f:
        f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
                "    server: %s\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                "current-context: x\nusers:\n- name: u\n  user: {}\n" % server)
    return path


@pytest.mark.parametrize("mode", ["silent", "drip"])
def test_check_kubeconfig_ends_within_its_timeout(tmp, slow, mode):
    srv = slow(mode)
    # plain HTTP, so the drip reaches the HTTP layer: an anonymous user may
    kc = anonymous_kubeconfig(os.path.join(tmp, "kc"), "http://127.0.0.1:%d" % srv.port)
    r, took = timed(["check-kubeconfig", "--kubeconfig", kc, "--timeout=2s"])
    assert r.returncode == 1, r.stderr
    assert "no answer within --timeout 2s" in r.stderr, r.stderr
    assert 1.8 <= took < 3.5, took
    assert srv.accepted == 1


def test_check_kubeconfig_has_a_default_timeout(tmp, slow):
    srv = slow("silent")
    kc = anonymous_kubeconfig(os.path.join(tmp, "kc"), "http://127.0.0.1:%d" % srv.port)
    r, took = timed(["check-kubeconfig", "--kubeconfig", kc])
    assert r.returncode == 1 and "no answer within --timeout 10s" in r.stderr, r.stderr
    assert 9.8 <= took < 11.5, took


def test_check_kubeconfig_connects_once(api, tmp, slow):
    srv = slow("close")
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="t-user",
                              server="https://127.0.0.1:%d" % srv.port,
                              tls_server_name="kubernetes")
    r, took = timed(["check-kubeconfig", "--kubeconfig", kc])
    assert r.returncode == 1
    time.sleep(0.3)
    assert srv.accepted == 1, srv.accepted
    # a refused port: one attempt, at once
    kc2 = api.write_kubeconfig(os.path.join(tmp, "kc2"), user="t-user",
                               server="https://127.0.0.1:%d" % free_port(),
                               tls_server_name="kubernetes")
    r, took = timed(["check-kubeconfig", "--kubeconfig", kc2])
    assert r.returncode == 1 and "attempts" not in r.stderr, r.stderr
    assert took < 2, took


@pytest.mark.parametrize("mode", ["silent", "drip"])
def test_metadata_ends_within_its_timeout(slow, mode):
    srv = slow(mode)
    r, took = timed(["metadata", "--metadata-cloud=ec2", "--timeout=3s",
                     "--metadata-endpoint=http://127.0.0.1:%d" % srv.port])
    assert r.returncode == 4, r.stderr
    assert "no answer within --timeout 3s" in r.stderr, r.stderr
    assert r.stdout == ""
    assert 2.8 <= took < 4.5, took


def _fake_metadata_module():
    path = os.path.join(ROOT, "tests", "fakes", "metadata", "server.py")
    spec = importlib.util.spec_from_file_location("fake_metadata_server_startup", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_metadata_has_a_default_timeout():
    # every answer 2.5 s late: 13 requests used to take 32.5 s
    md = _fake_metadata_module().FakeMetadata("ec2").start()
    try:
        md.delay(2.5, count=None)
        r, took = timed(["metadata", "--metadata-cloud=ec2", "--metadata-endpoint=" + md.url])
    finally:
        md.stop()
    assert r.returncode == 4 and "no answer within --timeout 10s" in r.stderr, r.stderr
    assert r.stdout == ""
    assert 9.8 <= took < 11, took
