"""--validate runs every check the daemon runs before it starts: each input
that made the daemon refuse (or spin) after --validate had said valid now
fails both the same way, before anything is contacted: a flag exits 2 naming
it, for --validate and the daemon alike; a file the daemon cannot use (the
serving certificate and key) exits 1 from the daemon and 2 from --validate."""

import os

import pytest

from conftest import free_port, run

import pki

BIG = "9223372036854775807ns"

FLAG_CASES = [
    (["--leader-elect-resource-name=../x%y"], "--leader-elect-resource-name"),
    (["--leader-elect-resource-namespace=Kube_System"], "--leader-elect-resource-namespace"),
    (["--node-name=" + "a" * 100000], "--node-name"),
    (["--node-name=Not_A_Node"], "--node-name"),
    (["--leader-elect-lease-duration=" + BIG], "--leader-elect-lease-duration"),
    (["--leader-elect-retry-period=7686143364045646500ns"], "--leader-elect-retry-period"),
    (["--leader-elect-renew-deadline=" + BIG], "--leader-elect-renew-deadline"),
    (["--node-monitor-period=" + BIG], "--node-monitor-period"),
    (["--service-sync-period=" + BIG], "--service-sync-period"),
    (["--node-status-update-frequency=" + BIG], "--node-status-update-frequency"),
    (["--route-reconciliation-period=" + BIG], "--route-reconciliation-period"),
    (["--min-resync-period=" + BIG], "--min-resync-period"),
    (["--node-deletion-grace-period=" + BIG], "--node-deletion-grace-period"),
    (["--authentication-token-webhook-cache-ttl=" + BIG],
     "--authentication-token-webhook-cache-ttl"),
    (["--node-monitor-period=-9223372036854775807ns"], "--node-monitor-period"),
    # the elector compares whole seconds: 2.5s is written as 2
    (["--leader-elect-lease-duration=2500ms", "--leader-elect-renew-deadline=2100ms",
      "--leader-elect-retry-period=1s"], "--leader-elect-"),
    (["--cluster-name=my cluster"], "--cluster-name"),
    (["--cluster-name="], "--cluster-name"),
    (["--cluster-name=" + "c" * 64], "--cluster-name"),
]


@pytest.mark.parametrize("args, flag", FLAG_CASES,
                         ids=[c[1] + "-%d" % i for i, c in enumerate(FLAG_CASES)])
def test_a_bad_flag_exits_2_naming_it_for_validate_and_the_daemon(api, tmp, args, flag):
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="v-user",
                              tls_server_name="kubernetes")
    seq = api.log_seq()
    r = run(["--validate", "--kubeconfig", kc, "--secure-port=0"] + args)
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    assert flag in r.stderr and r.stdout == "", r.stderr
    assert len(r.stderr) < 1000, r.stderr   # a huge value is not echoed whole
    # the daemon refuses the same way at once (it would otherwise run until
    # the timeout, and fail the test)
    d = run(["--kubeconfig", kc, "--secure-port=0"] + args, timeout=30)
    assert d.returncode == 2, (args, d.stderr)
    assert flag in d.stderr, d.stderr
    assert api.request_log(seq) == []


@pytest.fixture
def pair(tmp):
    d = os.path.join(tmp, "pki")
    ca = pki.make_ca(d, cn="serving-ca")
    return (pki.make_server_cert(d, ca, "serving", ["DNS:localhost"], cn="bootccm"),
            pki.make_server_cert(d, ca, "other", ["DNS:localhost"], cn="other"))


def test_the_serving_certificate_and_key_are_loaded_and_matched_before_start(api, tmp,
                                                                             pair):
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="v-user",
                              tls_server_name="kubernetes")
    good, other = pair
    garbage = os.path.join(tmp, "garbage.pem")
    with open(garbage, "w") as f:
        f.write("not a certificate\n")
    cases = [
        (["--tls-cert-file=" + good.cert, "--tls-private-key-file=" + other.key],
         "does not match"),
        (["--tls-cert-file=" + good.cert], "--tls-private-key-file"),
        (["--tls-cert-file=" + os.path.join(tmp, "missing.crt"),
          "--tls-private-key-file=" + good.key], "--tls-cert-file"),
        (["--tls-cert-file=" + good.cert,
          "--tls-private-key-file=" + os.path.join(tmp, "missing.key")],
         "--tls-private-key-file"),
        (["--tls-cert-file=" + garbage, "--tls-private-key-file=" + good.key],
         "--tls-cert-file " + garbage),
        (["--tls-cert-file=" + good.key, "--tls-private-key-file=" + good.cert],
         "--tls-cert-file"),
        (["--authorization-always-allow-paths=/a*b"], "--authorization-always-allow-paths"),
    ]
    port = "--secure-port=%d" % free_port()
    seq = api.log_seq()
    for args, why in cases:
        r = run(["--validate", "--kubeconfig", kc, port] + args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert why in r.stderr and r.stdout == "", (args, r.stderr)
        d = run(["--kubeconfig", kc, port] + args, timeout=30)
        assert d.returncode == 1, (args, d.stderr)
        assert why in d.stderr, (args, d.stderr)
    # nothing was contacted: both refused before the API server
    assert api.request_log(seq) == []
    r = run(["--validate", "--kubeconfig", kc, port, "--tls-cert-file=" + good.cert,
             "--tls-private-key-file=" + good.key])
    assert r.returncode == 0, r.stderr
    # --secure-port=0 serves nothing, so the files are not read (as upstream)
    r = run(["--validate", "--kubeconfig", kc, "--secure-port=0",
             "--tls-cert-file=" + good.cert, "--tls-private-key-file=" + other.key])
    assert r.returncode == 0, r.stderr


def test_a_missing_hcloud_token_file_fails_validate(api, tmp):
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="v-user",
                              tls_server_name="kubernetes")
    cc = os.path.join(tmp, "cloud.yaml")
    with open(cc, "w") as f:
        f.write("hcloud:\n  tokenFile: token\n  endpoint: http://127.0.0.1:9/v1\n")
    args = ["--validate", "--kubeconfig", kc, "--secure-port=0",
            "--cloud-provider=hcloud", "--cloud-config=" + cc]
    token = os.path.join(tmp, "token")
    r = run(args)
    assert r.returncode == 2, r.stderr
    assert "tokenFile" in r.stderr and token in r.stderr, r.stderr
    with open(token, "w") as f:
        f.write("\n")
    r = run(args)
    assert r.returncode == 2 and "empty" in r.stderr, r.stderr
    with open(token, "w") as f:
        f.write("validate-token-0123456789\n")
    r = run(args)
    assert r.returncode == 0, r.stderr
    assert "validate-token-0123456789" not in r.stdout + r.stderr


@pytest.mark.parametrize("args, rc", [
    (["metadata", "--timeout=" + BIG], 2),
    (["metadata", "--timeout=1h0m0.000000001s"], 2),
    (["doctor", "--timeout=" + BIG], 3),
    (["doctor", "--threshold=" + BIG], 3),
    (["check-kubeconfig", "--timeout=" + BIG], 2),
])
def test_the_subcommands_durations_are_bounded_too(args, rc):
    r = run(args, timeout=30)
    flag = args[1].split("=")[0]
    assert r.returncode == rc, (args, r.stderr)
    assert flag + " " in r.stderr and "at most" in r.stderr, r.stderr
