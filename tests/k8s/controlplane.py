"""A real Kubernetes control plane on loopback for the tests: etcd,
kube-apiserver and kube-controller-manager as scripts/k8s-build.sh builds them,
started with the flags kubeadm gives their static pods and a PKI laid out like
kubeadm's /etc/kubernetes (made here with openssl).

    with ControlPlane() as cp:
        client = cp.client("admin")        # or cp.node_client("node-1")
        status, obj = client.request("GET", "/version")
        cp.kubectl("get", "nodes")
        cp.writes()                        # audit entries of every write

Differences from kubeadm, all for running unprivileged on a shared machine:
every port is a free loopback port instead of 2379/2380/6443/10257, the files
live in a temporary directory instead of /etc/kubernetes, kube-apiserver
listens on 127.0.0.1 only and advertises an address no one connects to
(ADVERTISE_ADDRESS), etcd syncs nothing to disk (--unsafe-no-fsync: the
data is thrown away) and kube-controller-manager runs with
--cloud-provider=external. The serving certificate of kube-apiserver carries
kubeadm's names only (no 127.0.0.1), so every kubeconfig here, like the one
bootccm's installer writes, reaches https://127.0.0.1:PORT with
tls-server-name "kubernetes". The audit policy logs every write (create,
update, patch, delete, deletecollection) at Request level, one entry per
request, to audit.log, so tests can count the writes a client made.

Every process runs with a parent-death signal (SIGKILL) and is stopped at
stop() (SIGTERM, then SIGKILL after a bound), so none outlives the tests."""

import atexit
import base64
import ctypes
import glob
import http.client
import itertools
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "common"))

from harness import free_port  # noqa: E402

LOOPBACK = "127.0.0.1"
# kube-apiserver's advertise address goes into the "kubernetes" Endpoints,
# which may not hold a loopback address (the apiserver refuses to start with
# one under kubeadm's lease reconciler). Nothing here connects to it: it is a
# documentation address (RFC 5737), never bound.
ADVERTISE_ADDRESS = "192.0.2.10"
CLUSTER_NAME = "kubernetes"
SERVING_NAME = "kubernetes"  # a name kubeadm's serving certificate lists
DNS_DOMAIN = "cluster.local"
SERVICE_CIDR = "10.96.0.0/12"
SERVICE_IP = "10.96.0.1"  # the first address of SERVICE_CIDR
POD_CIDR = "10.244.0.0/16"
NODE_NAME = "cp-1"  # the control-plane node the certificates name
CERT_DAYS = 2
RSA_BITS = 2048  # kubeadm's default encryptionAlgorithm, RSA-2048
START_TIMEOUT_S = 90
STOP_TIMEOUT_S = 10
KWOK_SELECTOR = "type=kwok"  # the label of the Nodes kwok keeps alive
KWOK_LEASE_S = 40  # the node Lease duration kwok renews, like a kubelet's default
REQUEST_TIMEOUT_S = 15
KCM_CONTROLLERS = "*,bootstrapsigner,tokencleaner"  # kubeadm's
QUIET_S = 2  # no new write for this long: a controller has nothing left to do
QUIET_TIMEOUT_S = 60

_PR_SET_PDEATHSIG = 1


def bin_dir():
    """The directory of the upstream binaries: BOOTCCM_K8S_BIN, else what
    scripts/k8s-build.sh names for the current pin (not built here)."""
    d = os.environ.get("BOOTCCM_K8S_BIN")
    if d:
        return d
    return subprocess.run([os.path.join(ROOT, "scripts", "k8s-build.sh"), "bindir"],
                          check=True, capture_output=True, text=True).stdout.strip()


def peers_dir():
    """The directory of the peers' builds (bin/NAME, manifests/NAME/):
    BOOTCCM_PEERS_DIR, else what scripts/k8s-build.sh names for the current
    pin of bench/peers/ (not built here)."""
    d = os.environ.get("BOOTCCM_PEERS_DIR")
    if d:
        return d
    return subprocess.run([os.path.join(ROOT, "scripts", "k8s-build.sh"), "peersdir"],
                          check=True, capture_output=True, text=True).stdout.strip()


def peer(name):
    """The path of a peer's binary, which must be built: a test of a peer
    fails (never skips) without it."""
    p = os.path.join(peers_dir(), "bin", name)
    if not os.access(p, os.X_OK):
        raise FileNotFoundError("%s is not built (run make k8s: scripts/k8s-build.sh builds "
                                "the peers of bench/peers/ beside the upstream programs)" % p)
    return p


def pinned_version(module="k8s.io/kubernetes", gomod=os.path.join(HERE, "go.mod")):
    """The version tests/k8s/go.mod requires of module."""
    with open(gomod) as f:
        for line in f:
            w = line.split()
            if module in w:
                i = w.index(module)
                if i + 1 < len(w) and w[i + 1].startswith("v"):
                    return w[i + 1]
    raise LookupError("%s is not required in %s" % (module, gomod))


def _die_with_parent():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _openssl(*args):
    r = subprocess.run(["openssl"] + list(args), capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("openssl %s: %s" % (" ".join(args[:2]), r.stderr.strip()))


def _connect(port, ctx, server_name, timeout):
    """An HTTPS connection to 127.0.0.1:PORT whose TLS handshake is done
    with ctx for server_name (http.client would use the address)."""
    sock = socket.create_connection((LOOPBACK, port), timeout)
    try:
        tls = ctx.wrap_socket(sock, server_hostname=server_name)
    except BaseException:
        sock.close()
        raise
    conn = http.client.HTTPSConnection(LOOPBACK, port, timeout=timeout)
    conn.sock = tls
    return conn


# The client identities every control plane has: kubeconfig name, CN, O.
# admin.conf is in kubeadm:cluster-admins, which kubeadm binds to
# cluster-admin with super-admin.conf (system:masters) after init.
IDENTITIES = (
    ("super-admin", "kubernetes-super-admin", ("system:masters",)),
    ("admin", "kubernetes-admin", ("kubeadm:cluster-admins",)),
    ("controller-manager", "system:kube-controller-manager", ()),
    ("cloud-controller-manager", "system:cloud-controller-manager", ()),
)

_serials = itertools.count(int(time.time()) << 16)
_template = []  # the directory of the PKI made once per process


class PKI(object):
    """The certificates and keys of kubeadm's certs phase, under DIR/pki with
    kubeadm's file names: three CAs (ca, front-proxy-ca, etcd/ca), the
    serving and client certificates signed by them, and the service-account
    key pair; plus the client certificates of IDENTITIES."""

    def __init__(self, root, make_dir=True):
        self.dir = os.path.join(root, "pki")
        if make_dir:
            os.makedirs(os.path.join(self.dir, "etcd"), mode=0o700)

    def path(self, name):
        return os.path.join(self.dir, name)

    def _genpkey(self, name):
        return ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt",
                "rsa_keygen_bits:%d" % RSA_BITS, "-out", self.path(name + ".key")]

    def keys(self, names):
        """Generate the private keys NAME.key at once, one openssl each (an
        RSA key costs a few hundred milliseconds of CPU)."""
        procs = [(n, subprocess.Popen(self._genpkey(n), stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True)) for n in names]
        failed = []
        for n, p in procs:
            _, err = p.communicate(timeout=60)
            if p.returncode != 0:
                failed.append("%s: %s" % (n, err.strip()))
            else:
                os.chmod(self.path(n + ".key"), 0o600)
        if failed:
            raise RuntimeError("openssl genpkey: " + "; ".join(failed))

    def _key(self, name):
        if not os.path.exists(self.path(name + ".key")):
            self.keys([name])

    @staticmethod
    def _subject(cn, orgs):
        return "".join("/O=%s" % o for o in orgs) + "/CN=%s" % cn

    def ca(self, name, cn):
        self._key(name)
        _openssl("req", "-x509", "-new", "-key", self.path(name + ".key"), "-subj", "/CN=" + cn,
                 "-days", str(CERT_DAYS), "-sha256", "-out", self.path(name + ".crt"),
                 "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign")

    def cert(self, name, ca, cn, orgs=(), server=False, client=False, dns=(), ips=()):
        """Key and certificate NAME.{key,crt} signed by CA (a base name)."""
        self._key(name)
        csr = self.path(name + ".csr")
        ext = self.path(name + ".ext")
        _openssl("req", "-new", "-key", self.path(name + ".key"), "-subj", self._subject(cn, orgs),
                 "-out", csr)
        usage = [u for u, on in (("serverAuth", server), ("clientAuth", client)) if on]
        lines = ["basicConstraints=critical,CA:FALSE",
                 "keyUsage=critical,digitalSignature,keyEncipherment",
                 "extendedKeyUsage=" + ",".join(usage)]
        san = ["DNS:" + d for d in dns] + ["IP:" + i for i in ips]
        if san:
            lines.append("subjectAltName=" + ",".join(san))
        with open(ext, "w") as f:
            f.write("\n".join(lines) + "\n")
        _openssl("x509", "-req", "-in", csr, "-CA", self.path(ca + ".crt"),
                 "-CAkey", self.path(ca + ".key"), "-set_serial", str(next(_serials)),
                 "-days", str(CERT_DAYS), "-sha256", "-extfile", ext,
                 "-out", self.path(name + ".crt"))
        os.unlink(csr)
        os.unlink(ext)

    def service_account_keys(self):
        self._key("sa")
        _openssl("pkey", "-in", self.path("sa.key"), "-pubout", "-out", self.path("sa.pub"))

    MADE = ("ca", "apiserver", "apiserver-kubelet-client", "front-proxy-ca",
            "front-proxy-client", "etcd/ca", "etcd/server", "etcd/peer",
            "etcd/healthcheck-client", "apiserver-etcd-client", "sa")

    def make(self):
        """Everything kubeadm init phase certs all makes, for NODE_NAME, and
        the client certificates of IDENTITIES."""
        self.keys(self.MADE + tuple(i[0] for i in IDENTITIES))
        self.ca("ca", "kubernetes")
        self.cert("apiserver", "ca", "kube-apiserver", server=True,
                  dns=(NODE_NAME, "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                       "kubernetes.default.svc." + DNS_DOMAIN),
                  ips=(SERVICE_IP, ADVERTISE_ADDRESS))
        self.cert("apiserver-kubelet-client", "ca", "kube-apiserver-kubelet-client",
                  client=True)
        self.ca("front-proxy-ca", "front-proxy-ca")
        self.cert("front-proxy-client", "front-proxy-ca", "front-proxy-client", client=True)
        self.ca("etcd/ca", "etcd-ca")
        etcd_names = dict(dns=(NODE_NAME, "localhost"), ips=(LOOPBACK, "::1"))
        self.cert("etcd/server", "etcd/ca", NODE_NAME, server=True, client=True, **etcd_names)
        self.cert("etcd/peer", "etcd/ca", NODE_NAME, server=True, client=True, **etcd_names)
        self.cert("etcd/healthcheck-client", "etcd/ca", "kube-etcd-healthcheck-client", client=True)
        self.cert("apiserver-etcd-client", "etcd/ca", "kube-apiserver-etcd-client", client=True)
        self.service_account_keys()
        for base, cn, orgs in IDENTITIES:
            self.cert(base, "ca", cn, orgs=orgs, client=True)

    @classmethod
    def copy_of_template(cls, root):
        """A copy under ROOT of the PKI made once per process: the
        certificates name no port, so every control plane can have the same
        (a certificate of one is valid on another: these are test clusters),
        and RSA keys cost seconds to generate."""
        if not _template:
            d = tempfile.mkdtemp(prefix="bootccm-k8s-pki-")
            atexit.register(shutil.rmtree, d, True)
            cls(d).make()
            _template.append(d)
        shutil.copytree(os.path.join(_template[0], "pki"), os.path.join(root, "pki"))
        return cls(root, make_dir=False)


class Client(object):
    """HTTPS requests to kube-apiserver as one client certificate, verifying
    the server against the cluster CA under the name SERVING_NAME."""

    def __init__(self, port, ca, cert, key):
        self.port = port
        self.ctx = ssl.create_default_context(cafile=ca)
        self.ctx.load_cert_chain(cert, key)

    def request(self, method, path, body=None, content_type="application/json",
                timeout=REQUEST_TIMEOUT_S):
        """(status, decoded JSON body or text) of one request."""
        conn = _connect(self.port, self.ctx, SERVING_NAME, timeout)
        try:
            data = None
            headers = {"Accept": "application/json"}
            if body is not None:
                data = body if isinstance(body, (bytes, str)) else json.dumps(body)
                headers["Content-Type"] = content_type
            conn.request(method, path, body=data, headers=headers)
            r = conn.getresponse()
            raw = r.read().decode(errors="replace")
            try:
                return r.status, json.loads(raw)
            except ValueError:
                return r.status, raw
        finally:
            conn.close()


class ControlPlane(object):
    """etcd, kube-apiserver and kube-controller-manager on loopback, in a
    temporary directory removed at stop()."""

    def __init__(self, bindir=None, pod_cidr=POD_CIDR, node_cidr_mask=24,
                 controllers=KCM_CONTROLLERS):
        self.bin = bindir or bin_dir()
        self.controllers = controllers  # kube-controller-manager --controllers
        self.pod_cidr = pod_cidr
        self.node_cidr_mask = node_cidr_mask
        self.dir = None
        self.procs = {}
        self.logs = {}
        self.port = None
        self.version = None

    # --- layout -----------------------------------------------------------

    def path(self, *names):
        return os.path.join(self.dir, *names)

    def _exe(self, name):
        p = os.path.join(self.bin, name)
        if not os.access(p, os.X_OK):
            raise FileNotFoundError("%s is not built (run make k8s)" % p)
        return p

    def write_kubeconfig(self, name, cert_base, cn, orgs=()):
        """NAME.conf (mode 0600, everything embedded, as kubeadm writes
        them) for a client certificate CN/O signed by the cluster CA (made
        unless the PKI has it), server https://127.0.0.1:PORT,
        tls-server-name SERVING_NAME."""
        if not os.path.exists(self.pki.path(cert_base + ".crt")):
            self.pki.cert(cert_base, "ca", cn, orgs=orgs, client=True)
        user = cn

        def data(name):
            with open(self.pki.path(name), "rb") as f:
                return base64.b64encode(f.read()).decode()
        conf = {
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": CLUSTER_NAME, "cluster": {
                "server": "https://%s:%d" % (LOOPBACK, self.port),
                "tls-server-name": SERVING_NAME,
                "certificate-authority-data": data("ca.crt")}}],
            "users": [{"name": user, "user": {
                "client-certificate-data": data(cert_base + ".crt"),
                "client-key-data": data(cert_base + ".key")}}],
            "contexts": [{"name": "%s@%s" % (user, CLUSTER_NAME),
                          "context": {"cluster": CLUSTER_NAME, "user": user}}],
            "current-context": "%s@%s" % (user, CLUSTER_NAME),
        }
        path = self.path(name + ".conf")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(conf, f, default_flow_style=False)
        self.identities[name] = (cert_base, path)
        return path

    def kubeconfig(self, name):
        """The path of an identity's kubeconfig: admin, super-admin,
        controller-manager, cloud-controller-manager, or node-NAME."""
        return self.identities[name][1]

    def node_kubeconfig(self, node):
        """A kubelet's kubeconfig for NODE (CN system:node:NODE, O
        system:nodes), made on first use."""
        name = "node-" + node
        if name not in self.identities:
            self.write_kubeconfig(name, "kubelet-" + node, "system:node:" + node,
                                  orgs=("system:nodes",))
        return self.kubeconfig(name)

    def client(self, name="admin"):
        base = self.identities[name][0]
        return Client(self.port, self.pki.path("ca.crt"), self.pki.path(base + ".crt"),
                      self.pki.path(base + ".key"))

    def node_client(self, node):
        self.node_kubeconfig(node)
        return self.client("node-" + node)

    def _write_audit_policy(self):
        policy = {
            "apiVersion": "audit.k8s.io/v1", "kind": "Policy",
            "omitStages": ["RequestReceived"],
            "rules": [
                {"level": "Request",
                 "verbs": ["create", "update", "patch", "delete", "deletecollection"]},
                {"level": "None"},
            ],
        }
        with open(self.path("audit-policy.yaml"), "w") as f:
            yaml.safe_dump(policy, f)

    # --- processes --------------------------------------------------------

    def _spawn(self, name, argv, env=None):
        log = open(self.path("logs", name + ".log"), "w")
        self.logs[name] = log.name
        self.procs[name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, cwd=self.dir, env=env,
                                            preexec_fn=_die_with_parent)
        log.close()

    def spawn(self, name, argv, env=None):
        """Run ARGV as NAME (its output in log(NAME)) until stop(name) or
        the control plane's stop()."""
        self._spawn(name, argv, env)
        return self.procs[name]

    def stop_process(self, name):
        """Stop NAME with SIGTERM (SIGKILL after STOP_TIMEOUT_S); its exit
        status."""
        p = self.procs.pop(name)
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        try:
            return p.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            p.kill()
            return p.wait()

    def log(self, name):
        with open(self.logs[name], errors="replace") as f:
            return f.read()

    def _wait(self, name, probe, deadline):
        while time.monotonic() < deadline:
            if self.procs[name].poll() is not None:
                raise RuntimeError("%s exited with %s:\n%s" % (
                    name, self.procs[name].returncode, self.log(name)[-4000:]))
            try:
                if probe():
                    return
            except (OSError, ssl.SSLError, http.client.HTTPException):
                pass
            time.sleep(0.1)
        raise RuntimeError("%s not ready in %ss:\n%s" % (name, START_TIMEOUT_S,
                                                         self.log(name)[-4000:]))

    def _https_ok(self, port, path, ca, cert, key, name):
        ctx = ssl.create_default_context(cafile=ca)
        if cert:
            ctx.load_cert_chain(cert, key)
        if not ca:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        conn = _connect(port, ctx, name, 2)
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            r.read()
            return r.status == 200
        finally:
            conn.close()

    def prepare(self):
        """Everything but the processes: the directory, the PKI, the ports,
        the kubeconfigs and the audit policy, so a client can be started
        with its kubeconfig before the API server exists; start() calls it
        unless it ran. Returns self."""
        self.dir = tempfile.mkdtemp(prefix="bootccm-k8s-")
        try:
            os.makedirs(self.path("logs"))
            self.pki = PKI.copy_of_template(self.dir)
            self.identities = {}
            self.port = free_port()
            self.etcd_ports = tuple(free_port() for _ in range(3))  # client, peer, metrics
            self.kcm_port = free_port()
            for base, cn, orgs in IDENTITIES:
                self.write_kubeconfig(base, base, cn, orgs)
            self._write_audit_policy()
        except BaseException:
            self.stop()
            raise
        return self

    def start(self, timeout=START_TIMEOUT_S):
        """Start etcd, kube-apiserver and kube-controller-manager, each once
        the one before answers; returns self once all three are ready, or
        stops what it started and raises."""
        deadline = time.monotonic() + timeout
        if self.dir is None:
            self.prepare()
        try:
            self._start(deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, deadline):
        exe = {n: self._exe(n) for n in ("etcd", "kube-apiserver", "kube-controller-manager")}
        pki = self.pki.path
        etcd_port, peer_port, metrics_port = self.etcd_ports
        kcm_port = self.kcm_port

        client_url = "https://%s:%d" % (LOOPBACK, etcd_port)
        peer_url = "https://%s:%d" % (LOOPBACK, peer_port)
        self._spawn("etcd", [
            exe["etcd"],
            "--name=" + NODE_NAME,
            "--listen-client-urls=" + client_url,
            "--advertise-client-urls=" + client_url,
            "--listen-peer-urls=" + peer_url,
            "--initial-advertise-peer-urls=" + peer_url,
            "--initial-cluster=%s=%s" % (NODE_NAME, peer_url),
            "--data-dir=" + self.path("etcd"),
            "--cert-file=" + pki("etcd/server.crt"),
            "--key-file=" + pki("etcd/server.key"),
            "--trusted-ca-file=" + pki("etcd/ca.crt"),
            "--client-cert-auth=true",
            "--peer-cert-file=" + pki("etcd/peer.crt"),
            "--peer-key-file=" + pki("etcd/peer.key"),
            "--peer-trusted-ca-file=" + pki("etcd/ca.crt"),
            "--peer-client-cert-auth=true",
            "--snapshot-count=10000",
            "--listen-metrics-urls=http://%s:%d" % (LOOPBACK, metrics_port),
            "--feature-gates=InitialCorruptCheck=true",
            "--watch-progress-notify-interval=5s",
            "--unsafe-no-fsync=true",
        ])
        self._wait("etcd", lambda: self._https_ok(
            etcd_port, "/health", pki("etcd/ca.crt"), pki("etcd/healthcheck-client.crt"),
            pki("etcd/healthcheck-client.key"), LOOPBACK), deadline)

        self._spawn("kube-apiserver", [
            exe["kube-apiserver"],
            "--advertise-address=" + ADVERTISE_ADDRESS,
            "--bind-address=" + LOOPBACK,
            "--secure-port=%d" % self.port,
            "--allow-privileged=true",
            "--authorization-mode=Node,RBAC",
            "--client-ca-file=" + pki("ca.crt"),
            "--enable-admission-plugins=NodeRestriction",
            "--enable-bootstrap-token-auth=true",
            "--etcd-servers=" + client_url,
            "--etcd-cafile=" + pki("etcd/ca.crt"),
            "--etcd-certfile=" + pki("apiserver-etcd-client.crt"),
            "--etcd-keyfile=" + pki("apiserver-etcd-client.key"),
            "--kubelet-client-certificate=" + pki("apiserver-kubelet-client.crt"),
            "--kubelet-client-key=" + pki("apiserver-kubelet-client.key"),
            "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
            "--proxy-client-cert-file=" + pki("front-proxy-client.crt"),
            "--proxy-client-key-file=" + pki("front-proxy-client.key"),
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-client-ca-file=" + pki("front-proxy-ca.crt"),
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-username-headers=X-Remote-User",
            "--service-account-issuer=https://kubernetes.default.svc." + DNS_DOMAIN,
            "--service-account-key-file=" + pki("sa.pub"),
            "--service-account-signing-key-file=" + pki("sa.key"),
            "--service-cluster-ip-range=" + SERVICE_CIDR,
            "--tls-cert-file=" + pki("apiserver.crt"),
            "--tls-private-key-file=" + pki("apiserver.key"),
            "--audit-policy-file=" + self.path("audit-policy.yaml"),
            "--audit-log-path=" + self.path("audit.log"),
            "--audit-log-mode=blocking",
        ])
        sa = self.identities["super-admin"][0]
        self._wait("kube-apiserver", lambda: self._https_ok(
            self.port, "/readyz", pki("ca.crt"), pki(sa + ".crt"), pki(sa + ".key"),
            SERVING_NAME), deadline)
        self._bind_cluster_admins(deadline)

        kcm_conf = self.kubeconfig("controller-manager")
        self._spawn("kube-controller-manager", [
            exe["kube-controller-manager"],
            "--bind-address=" + LOOPBACK,
            "--secure-port=%d" % kcm_port,
            "--leader-elect=true",
            "--kubeconfig=" + kcm_conf,
            "--authentication-kubeconfig=" + kcm_conf,
            "--authorization-kubeconfig=" + kcm_conf,
            "--client-ca-file=" + pki("ca.crt"),
            "--requestheader-client-ca-file=" + pki("front-proxy-ca.crt"),
            "--root-ca-file=" + pki("ca.crt"),
            "--service-account-private-key-file=" + pki("sa.key"),
            "--cluster-signing-cert-file=" + pki("ca.crt"),
            "--cluster-signing-key-file=" + pki("ca.key"),
            "--use-service-account-credentials=true",
            "--controllers=" + self.controllers,
            "--allocate-node-cidrs=true",
            "--cluster-cidr=" + self.pod_cidr,
            "--node-cidr-mask-size=%d" % self.node_cidr_mask,
            "--service-cluster-ip-range=" + SERVICE_CIDR,
            "--cluster-name=" + CLUSTER_NAME,
            "--cloud-provider=external",
        ])
        self._wait("kube-controller-manager", lambda: self._https_ok(
            kcm_port, "/healthz", None, None, None, LOOPBACK), deadline)
        status, self.version = self.client("admin").request("GET", "/version")
        if status != 200:
            raise RuntimeError("GET /version: %s %s" % (status, self.version))

    def _bind_cluster_admins(self, deadline):
        """kubeadm's ClusterRoleBinding kubeadm:cluster-admins, made with the
        super-admin identity (the RBAC bootstrap roles exist once /readyz
        answers)."""
        crb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "kubeadm:cluster-admins"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "cluster-admin"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                             "name": "kubeadm:cluster-admins"}]}
        status, body = self.client("super-admin").request(
            "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", crb)
        if status not in (201, 409):
            raise RuntimeError("creating kubeadm:cluster-admins: %s %s" % (status, body))

    def stop(self):
        """Stop the processes newest first, each with SIGTERM and, after
        STOP_TIMEOUT_S, SIGKILL (kube-apiserver shuts down in about a second
        while etcd answers, but hangs on an etcd stopped beside it); remove
        the directory (BOOTCCM_K8S_KEEP=1 keeps it)."""
        for name in reversed(list(self.procs)):
            self.stop_process(name)
        if self.dir and not os.environ.get("BOOTCCM_K8S_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # --- helpers for tests ------------------------------------------------

    def start_kwok(self, selector=KWOK_SELECTOR, lease_duration_s=KWOK_LEASE_S):
        """kwok (as the admin) keeping the Nodes that match the label
        selector Ready without kubelets, with the stages of
        tests/k8s/kwok-stages/ (no address, no NetworkUnavailable: those
        are for bootccm and the CNI to write) and node Leases. Its HOME is
        the control plane's directory, so no ~/.kwok configuration is read.
        Stopped with the control plane."""
        argv = [self._exe("kwok"), "--kubeconfig", self.kubeconfig("admin"),
                "--manage-nodes-with-label-selector=" + selector,
                "--node-lease-duration-seconds=%d" % lease_duration_s,
                "--server-address=%s:%d" % (LOOPBACK, free_port())]
        for stage in sorted(glob.glob(os.path.join(HERE, "kwok-stages", "*.yaml"))):
            argv += ["--config", stage]
        env = dict(os.environ, HOME=self.dir)
        self._spawn("kwok", argv, env)

    def kubectl(self, *args, identity="admin", timeout=60, check=True, input=None):
        """kubectl of the same release under an identity's kubeconfig."""
        r = subprocess.run([self._exe("kubectl"), "--kubeconfig", self.kubeconfig(identity)]
                           + list(args), capture_output=True, text=True, timeout=timeout,
                           input=input)
        if check and r.returncode != 0:
            raise RuntimeError("kubectl %s: %s" % (" ".join(args), r.stderr.strip()))
        return r

    def service_account_token(self, name, namespace="default", seconds=600):
        """A bound token (TokenRequest API) of a new ServiceAccount NAME,
        made by the admin."""
        admin = self.client("admin")
        sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
        status, body = admin.request(
            "POST", "/api/v1/namespaces/%s/serviceaccounts" % namespace, sa)
        if status != 201:
            raise RuntimeError("creating ServiceAccount %s: %s %s" % (name, status, body))
        req = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"expirationSeconds": seconds}}
        status, body = admin.request(
            "POST", "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (namespace, name), req)
        if status != 201:
            raise RuntimeError("TokenRequest for %s: %s %s" % (name, status, body))
        return body["status"]["token"]

    def quiet_writes(self, user, seconds=QUIET_S, timeout=QUIET_TIMEOUT_S):
        """The audit entries of USER's writes once the audit log has held
        no new one of them for SECONDS (a controller with nothing left to
        do), waiting at most TIMEOUT for that quiet."""
        deadline = time.monotonic() + timeout
        last = self.writes(user)
        since = time.monotonic()
        while time.monotonic() - since < seconds:
            if time.monotonic() > deadline:
                raise AssertionError("%s kept writing for %ss: %s" % (
                    user, timeout, [(e["verb"], e["objectRef"]) for e in last[-5:]]))
            time.sleep(0.1)
            now = self.writes(user)
            if len(now) != len(last):
                last, since = now, time.monotonic()
        return last

    def writes(self, user=None):
        """The audit entries of every write so far, optionally of one user
        name only, in order."""
        out = []
        try:
            f = open(self.path("audit.log"))
        except FileNotFoundError:
            return out
        with f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue  # a line being written
                if user is None or e.get("user", {}).get("username") == user:
                    out.append(e)
        return out
