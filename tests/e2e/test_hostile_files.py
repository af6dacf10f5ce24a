"""A FIFO (or another file that is not a regular file) at any path bootccm
reads: the kubeconfig and the files it names (CA, client certificate and key,
token file), the cloud config, the static provider's inventory, the hcloud
tokenFile and --tls-cert-file / --tls-private-key-file. Opening a FIFO for
reading waits for a writer, forever; each command must instead name the file
and what it is within a few seconds, and exit non-zero where the file is
required. Replaced by a FIFO while the daemon runs (the inventory, the hcloud
tokenFile), the file is refused with a log line, serving goes on, and SIGTERM
still ends the process at once."""

import os
import signal
import time

import pytest

from conftest import free_port, run
from test_bootstrap import ccm_kubeconfig, register, wait_initialized
from test_hcloud import hc, hcloud_args, servers_and_nodes  # noqa: F401 (fixture)
from test_static_provider import put, static_args

USER = "system:cloud-controller-manager"
FIFO_SAYS = "is a FIFO, not a regular file"
TOKEN = "hostile-files-token-0123"
# Each command's own deadline is a few seconds; this bound only stops a hang
# from hanging the suite (the old code blocked in open() for ever).
HANG_S = 30


def fifo(path):
    """A FIFO at path (no writer ever opens it), renamed over what was there."""
    if os.path.lexists(path + ".fifo"):
        os.unlink(path + ".fifo")
    os.mkfifo(path + ".fifo")
    os.rename(path + ".fifo", path)
    return path


def kubeconfig_with_fifo(api, tmp, which):
    """A kubeconfig whose file `which` is a FIFO: the kubeconfig itself, or
    one of the files it names (paths, not *-data fields)."""
    kc = os.path.join(tmp, "kc")
    if which == "tokenFile":
        api.write_kubeconfig(kc, user=USER, groups=(), token=TOKEN,
                             tls_server_name="kubernetes")
        with open(kc) as f:
            text = f.read()
        text = text.replace("    token: " + TOKEN,
                            "    tokenFile: " + os.path.join(tmp, "token"))
        put(tmp, "kc", text)
        return kc, fifo(os.path.join(tmp, "token"))
    api.write_kubeconfig(kc, user=USER, groups=(), embed=False,
                         tls_server_name="kubernetes")
    if which == "kubeconfig":
        return kc, fifo(kc)
    with open(kc) as f:
        text = f.read()
    for line in text.splitlines():
        k, _, v = line.strip().partition(": ")
        if k == which:
            path = os.path.join(tmp, which + ".pem")
            put(tmp, "kc", text.replace(line, line.replace(v, path)))
            return kc, fifo(path)
    raise AssertionError("no %s in %s" % (which, text))


def refused(args, rc, path):
    """Runs bootccm with args: it ends within its deadline with exit status
    rc, naming path as a FIFO."""
    t0 = time.monotonic()
    r = run(args, timeout=HANG_S)
    took = time.monotonic() - t0
    out = r.stdout + r.stderr
    assert r.returncode == rc, (args, r.returncode, out)
    assert "%s: %s" % (path, FIFO_SAYS) in out, (args, out)
    assert took < 10, (args, took)
    assert "AddressSanitizer" not in out and "runtime error:" not in out, out


@pytest.mark.parametrize("which", ["kubeconfig", "certificate-authority",
                                   "client-certificate", "client-key", "tokenFile"])
def test_fifo_in_the_kubeconfig(api, tmp, which):
    kc, path = kubeconfig_with_fifo(api, tmp, which)
    refused(["check-kubeconfig", "--kubeconfig", kc, "--timeout=3s"], 1, path)
    refused(["doctor", "--kubeconfig", kc, "--timeout=3s"], 3, path)
    refused(["--kubeconfig", kc, "--validate"], 2, path)
    refused(["--kubeconfig", kc, "--node-name=cp-1", "--secure-port=0",
             "--leader-elect=false"], 1, path)


def test_fifo_as_the_cloud_config_and_the_inventory(api, tmp):
    args = static_args(api, tmp)
    cfg = args[args.index("--cloud-config") + 1]
    inventory = fifo(os.path.join(tmp, "inventory.yaml"))
    refused(args + ["--validate"], 2, inventory)
    refused(args, 1, inventory)
    fifo(cfg)
    refused(args + ["--validate"], 2, cfg)
    refused(args, 1, cfg)


@pytest.mark.parametrize("which", ["--tls-cert-file", "--tls-private-key-file"])
def test_fifo_as_the_serving_certificate_or_key(api, tmp, which):
    # the other file is a regular one: the FIFO is what must be named
    other = os.path.join(tmp, "other.pem")
    with open(other, "w") as f:
        f.write("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
    path = fifo(os.path.join(tmp, "serving.pem"))
    files = {"--tls-cert-file": other, "--tls-private-key-file": other}
    files[which] = path
    args = (["--kubeconfig", ccm_kubeconfig(api, tmp), "--node-name=cp-1",
             "--leader-elect=false", "--bind-address=127.0.0.1",
             "--secure-port=%d" % free_port()] +
            ["%s=%s" % kv for kv in files.items()])
    refused(args + ["--validate"], 2, path)
    refused(args, 1, path)


def stops_at_once(d):
    """SIGTERM ends the daemon within 5 s, exit 0."""
    t0 = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    d.proc.wait(HANG_S)
    took = time.monotonic() - t0
    rc, out = d.stop()
    assert rc == 0, out
    assert took < 5, (took, out)


def test_inventory_replaced_by_a_fifo_at_run_time(api, tmp, daemon):
    args = static_args(api, tmp)
    register(api, "cp-1", control_plane=True)
    d = daemon(args + ["-v=2"])
    wait_initialized(api, "cp-1", timeout=15)
    inventory = fifo(os.path.join(tmp, "inventory.yaml"))
    d.wait_for("%s: %s" % (inventory, FIFO_SAYS), timeout=15)
    # the last good inventory still answers
    register(api, "worker-1")
    wait_initialized(api, "worker-1", timeout=15)
    assert d.alive()
    stops_at_once(d)


def test_kubeconfig_token_file_replaced_by_a_fifo_at_run_time(api, tmp, daemon):
    args = static_args(api, tmp)
    kc, token = kubeconfig_with_fifo(api, tmp, "tokenFile")
    put(tmp, "token", TOKEN + "\n")
    args[args.index("--kubeconfig") + 1] = kc
    register(api, "cp-1", control_plane=True)
    d = daemon(args)
    wait_initialized(api, "cp-1", timeout=15)
    # the token file is re-read on change: a FIFO now, and the last good
    # token stays in use (the old reader blocked in open() for ever)
    fifo(token)
    register(api, "worker-1")
    wait_initialized(api, "worker-1", timeout=15)
    assert d.alive()
    stops_at_once(d)


def test_hcloud_token_file_a_fifo_at_start_and_at_run_time(api, hc, tmp, daemon):  # noqa: F811
    servers_and_nodes(api, hc, 1)
    token = fifo(os.path.join(tmp, "token"))
    args = hcloud_args(api, hc, tmp, token=False)
    # --validate reads the token file (the daemon would start and wait)
    refused(args + ["--validate"], 2, token)
    d = daemon(args + ["-v=2"])
    d.wait_for("tokenFile %s: %s" % (token, FIFO_SAYS), timeout=15)
    stops_at_once(d)

    # a good token first, then a FIFO in its place
    put(tmp, "token", hc.token + "\n")
    d = daemon(args + ["-v=2"])
    wait_initialized(api, "cp-1", timeout=15)
    fifo(token)
    register(api, "worker-9")  # a request that needs the token
    d.wait_for("tokenFile %s: %s" % (token, FIFO_SAYS), timeout=15)
    assert d.alive()
    stops_at_once(d)
