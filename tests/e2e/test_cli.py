"""The command line: flags, help, version, errors, logging, secrets."""

import base64
import json
import os
import re
import time

import apiserver
from conftest import ROOT, free_port, run

# the upstream cloud-controller-manager flags design.md names
UPSTREAM_FLAGS = [
    "--kubeconfig", "--cloud-provider", "--cloud-config", "--controllers",
    "--leader-elect", "--leader-elect-lease-duration", "--leader-elect-renew-deadline",
    "--leader-elect-retry-period", "--leader-elect-resource-name",
    "--leader-elect-resource-namespace", "--secure-port", "--bind-address",
    "--kube-api-qps", "--kube-api-burst", "--concurrent-service-syncs",
    "--concurrent-node-syncs", "--node-monitor-period", "--node-status-update-frequency",
    "--configure-cloud-routes", "--allocate-node-cidrs", "--cluster-cidr",
    "--cluster-name", "-v",
]


def test_help_lists_every_upstream_flag_with_defaults():
    r = run(["--help"])
    assert r.returncode == 0
    for flag in UPSTREAM_FLAGS:
        assert re.search(r"^\s+%s[ =]" % re.escape(flag), r.stdout, re.M), flag
    assert re.search(r"--secure-port int .*\(default 10258\)", r.stdout)
    assert re.search(r"--kube-api-qps float .*\(default 20\)", r.stdout)
    assert re.search(r"--kube-api-burst int .*\(default 30\)", r.stdout)
    assert re.search(r"--leader-elect-lease-duration duration .*\(default 15s\)", r.stdout)
    assert re.search(r"--bind-address string .*\(default \"0.0.0.0\"\)", r.stdout)


def test_help_usage_names_every_subcommand_and_the_man_page_too():
    usage = run(["--help"]).stdout.split("\nFlags:")[0]
    cmds = re.findall(r"^(?:Usage:)?\s+bootccm ([a-z][a-z-]*)", usage, re.M)
    assert set(cmds) == {"check-kubeconfig", "metadata", "doctor", "version", "help"}, usage
    with open(os.path.join(ROOT, "docs", "bootccm.8")) as f:
        man = f.read()
    synopsis = man[man.index(".SH SYNOPSIS"):man.index(".SH DESCRIPTION")]
    for c in cmds:
        # each one the usage names is one the binary runs
        r = run([c] if c in ("version", "help") else [c, "--help"])
        assert r.returncode == 0 and r.stdout, (c, r.stderr)
        assert re.search(r"^\.B(R)? (bootccm )?%s\b" % re.escape(c), synopsis, re.M), c


def test_version_names_the_libraries():
    r = run(["--version"])
    assert r.returncode == 0
    assert re.match(r"bootccm \d+\.\d+\.\d+ \(commit [0-9a-f]{7,}(-dirty)?\)\n", r.stdout), r.stdout
    assert "libcurl 7.88.1" in r.stdout and "json-c 0.16" in r.stdout
    assert "libyaml 0.2.5" in r.stdout


def test_unknown_flag_exits_2_naming_it():
    r = run(["--no-such-flag=1"])
    assert r.returncode == 2
    assert "unknown flag: --no-such-flag" in r.stderr


def test_malformed_values_exit_2_naming_the_flag():
    for args, name in [(["--node-monitor-period=5"], "--node-monitor-period"),
                       (["--secure-port", "http"], "--secure-port"),
                       (["--leader-elect=perhaps"], "--leader-elect"),
                       (["-v=x"], "--v"),
                       (["--kube-api-qps"], "--kube-api-qps")]:
        r = run(args)
        assert r.returncode == 2, args
        assert name in r.stderr, (args, r.stderr)


def test_malformed_kubeconfig_is_named_and_exits_1(tmp):
    kc = os.path.join(tmp, "broken.conf")
    with open(kc, "w") as f:
        f.write("apiVersion: v1\nclusters: [\n  - name: x\n")
    r = run(["--kubeconfig", kc, "--secure-port=0"])
    assert r.returncode == 1
    assert kc in r.stderr
    r = run(["check-kubeconfig", "--kubeconfig", kc])
    assert r.returncode == 1 and kc in r.stderr


def test_exec_plugins_are_refused_clearly(tmp):
    kc = os.path.join(tmp, "exec.conf")
    with open(kc, "w") as f:
        f.write("""apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {exec: {command: aws, apiVersion: client.authentication.k8s.io/v1}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
""")
    r = run(["check-kubeconfig", "--kubeconfig", kc])
    assert r.returncode == 1
    assert "exec" in r.stderr and kc in r.stderr


def test_context_flag_selects_a_context(api, tmp):
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="ctx-user",
                              tls_server_name="kubernetes")
    r = run(["check-kubeconfig", "--kubeconfig", kc, "--context", "missing"])
    assert r.returncode == 1 and 'context "missing" not found' in r.stderr
    r = run(["check-kubeconfig", "--kubeconfig", kc, "--context", "ctx-user@kubernetes"])
    assert r.returncode == 0, r.stderr


def test_no_secret_in_any_log_line_at_v10(api, tmp, daemon):
    token = "s3cret-token-0123456789abcdef"
    kc_tok = api.write_kubeconfig(os.path.join(tmp, "tok"), user="tok-user",
                                  token=token, tls_server_name="kubernetes")
    kc_cert = api.write_kubeconfig(os.path.join(tmp, "cert"), user="cert-user",
                                   tls_server_name="kubernetes")
    # the secret material: the token and every line of the client key
    with open(kc_cert) as f:
        m = re.search(r"client-key-data: (\S+)", f.read())
    key_pem = base64.b64decode(m.group(1)).decode()
    secrets = [token] + [l for l in key_pem.splitlines() if l and not l.startswith("-----")]
    # errors on the way: 401s, 500s, aborts
    api.inject_fault(path_prefix="/version", status=500, count=2)
    api.inject_fault(path_prefix="/apis/authentication.k8s.io", status=401, count=1)
    for kc in (kc_tok, kc_cert):
        d = daemon(["--kubeconfig", kc, "-v=10", "--secure-port=0"])
        d.wait_for("API server answered")
        d.wait_for("Started leading")
        time.sleep(0.2)
        out = d.output()
        assert "Response body" in out
        assert ("Bearer <masked>" in out) == (kc == kc_tok)
        for s in secrets:
            assert s not in out, "secret leaked into the log"
        d.stop()  # hand the Lease over to the next one
    r = run(["check-kubeconfig", "--kubeconfig", kc_tok, "-v=10"])
    assert token not in r.stdout + r.stderr


def test_json_log_lines(api, tmp, daemon):
    kc = api.write_kubeconfig(os.path.join(tmp, "kc"), user="json-user",
                              tls_server_name="kubernetes")
    d = daemon(["--kubeconfig", kc, "--logging-format=json", "--secure-port=0"])
    d.wait_for("Authenticated")
    lines = [l for l in d.output().splitlines() if l.strip()]
    assert lines
    for l in lines:
        o = json.loads(l)
        assert "ts" in o and "msg" in o and "caller" in o
    assert any(json.loads(l).get("user") == "json-user" for l in lines)




def test_waits_quietly_for_a_late_api_server(tmp, daemon):
    port = free_port()
    pki = os.path.join(tmp, "state")
    # the CA exists before the API server runs, as with kubeadm's certs phase
    first = apiserver.FakeAPIServer(state_dir=pki, port=port)
    first.start()
    kc = first.write_kubeconfig(os.path.join(tmp, "kc"), user="late-user",
                                tls_server_name="kubernetes")
    first.stop()
    d = daemon(["--kubeconfig", kc, "--secure-port=0"])
    d.wait_for("Waiting for the API server")
    time.sleep(3)
    assert d.alive()
    # quiet: one warning, not one per retry
    assert d.output().count("Waiting for the API server") == 1
    srv = apiserver.FakeAPIServer(state_dir=pki, port=port)
    srv.start()
    try:
        t0 = time.monotonic()
        d.wait_for("API server answered", timeout=5)
        assert time.monotonic() - t0 < 1.5
    finally:
        d.stop()
        srv.stop()


def test_unknown_cloud_provider_exits_2_with_the_known_ones():
    r = run(["--cloud-provider=nosuchcloud", "--secure-port=0"])
    assert r.returncode == 2
    assert '--cloud-provider "nosuchcloud": unknown provider; known: metadata, static, hcloud' in r.stderr
