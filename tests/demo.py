#!/usr/bin/python3
"""make demo: bootccm's main job on the bundled fakes.

Starts the fake API server (with bootccm's shipped RBAC role) and fake EC2
metadata services on loopback, registers two nodes the way kubelets with
`--cloud-provider=external` do, runs the static bootccm binary against them
the way the static pod's command line does, waits until both are
initialized, and shows the nodes before and after and the Events.

- cp-1 is the control-plane node bootccm runs on. Its kubelet had no
  --node-ip: no addresses, no providerID. bootccm initializes it from its
  own instance metadata service.
- worker-1 was set up by cloud-init/worker.yaml: its kubelet got the flags
  `bootccm metadata --format=kubelet-flags` printed on that machine
  (providerID, node IP, zone/region/instance-type labels). bootccm
  initializes it from what that kubelet reported.

Then a bare-metal cluster (another fake API server): bootccm
--cloud-provider=static initializes its two nodes from an inventory file,
and a LoadBalancer Service gets its address from the cloud-config's pool,
with the kube-vip.io/loadbalancerIPs annotation kube-vip announces it by.

Both kubelets ask for serving certificates (kubeadm's serverTLSBootstrap);
bootccm's csr-approver (--controllers=*,csr-approver --csr-deny) approves
cp-1's, whose addresses came from its metadata service, and denies
worker-1's, whose addresses came only from its kubelet.

`bootccm doctor` (as a user bound to the read-only ClusterRole
bootccm-doctor) reads each cluster: it finds the deadlock before bootccm
runs (the nodes keep the uninitialized taint and no cloud-controller-manager
leads), reports the cluster healthy once bootccm has run, and ends the demo
with the bare-metal cluster healthy.

Exits 0 when the four nodes ended initialized, the requests were decided
so, the Service got its address and the doctor's verdicts were those, 1
otherwise."""

import argparse
import base64
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "fakes"))
sys.path.insert(0, os.path.join(ROOT, "tests", "fakes", "metadata"))

import yaml  # noqa: E402  (python3-yaml)

import apiserver  # noqa: E402
from server import FakeMetadata  # noqa: E402

DMI_EC2 = os.path.join(ROOT, "tests", "fakes", "metadata", "dmi", "ec2")
UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized"
TAINTS = [
    {"key": UNINITIALIZED, "value": "true", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
]
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
# worker-1's own instance: another EC2 instance in another zone.
WORKER_IDENTITY = {
    "instance_id": "i-0f1e2d3c4b5a69788", "instance_type": "m6i.large", "zone": "us-east-2c",
    "zone_id": "use2-az3", "private_ipv4": "172.31.40.7", "public_ipv4": None,
    "hostname": "ip-172-31-40-7.us-east-2.compute.internal", "public_hostname": None,
    "ipv6": None, "extra_interfaces": [],
}
SHOWN_LABELS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region",
                "node.kubernetes.io/instance-type")
WAIT_S = 10.0


def say(msg=""):
    print(msg, flush=True)


def short(key):
    return key.rsplit("/", 1)[-1]


def show_nodes(srv, title):
    say("--- %s" % title)
    for n in srv.list_objects("nodes"):
        labels = n["metadata"].get("labels", {})
        addrs = ["%s=%s" % (a["type"], a["address"])
                 for a in n.get("status", {}).get("addresses", [])]
        say(n["metadata"]["name"])
        say("  providerID: %s" % (n["spec"].get("providerID") or "<none>"))
        say("  addresses:  %s" % (", ".join(addrs) or "<none>"))
        say("  labels:     %s" % (", ".join("%s=%s" % (short(k), labels[k])
                                            for k in SHOWN_LABELS if k in labels) or "<none>"))
        say("  taints:     %s" % (", ".join("%s:%s" % (short(t["key"]), t["effect"])
                                            for t in n["spec"].get("taints", [])) or "<none>"))
    say()


def initialized(node):
    return not any(t["key"] == UNINITIALIZED for t in node["spec"].get("taints", []))


def kubelet_flags(bootccm, md):
    """What `bootccm metadata --format=kubelet-flags` prints on the worker
    (cloud-init/worker.yaml runs it before kubeadm join)."""
    argv = [bootccm, "metadata", "--format=kubelet-flags", "--metadata-endpoint=" + md.url,
            "--metadata-dmi-dir=" + DMI_EC2]
    say("worker-1$ bootccm metadata --format=kubelet-flags")
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()
    say(out)
    say()
    return dict(f[2:].split("=", 1) for f in out.split())


def register(srv, name, flags=None):
    """The Node a kubelet with --cloud-provider=external registers: with
    --provider-id, --node-ip and --node-labels when FLAGS has them (without
    FLAGS, a control-plane node)."""
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"taints": list(TAINTS)}}
    if flags is None:
        node["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = ""
        node["spec"]["taints"].append(CONTROL_PLANE_TAINT)
    else:
        if flags.get("provider-id"):
            node["spec"]["providerID"] = flags["provider-id"]
        node["metadata"]["labels"].update(kv.split("=", 1)
                                          for kv in flags.get("node-labels", "").split(",")
                                          if kv)
        node["metadata"]["annotations"] = {"alpha.kubernetes.io/provided-node-ip":
                                           flags["node-ip"]}
        node["status"] = {"addresses": [{"type": "InternalIP", "address": flags["node-ip"]},
                                        {"type": "Hostname", "address": name}]}
    srv.create_object(node)


def show_events(srv, title="Events"):
    say("--- %s" % title)
    for e in srv.list_objects("events", namespace="default"):
        say("%-7s %-22s %-9s %s" % (e.get("type", ""), e.get("reason", ""),
                                    e["involvedObject"].get("name", ""), e.get("message", "")))
    say()


# The bare-metal cluster: its inventory and its pool.
INVENTORY = """\
instances:
  - name: metal-1
    addresses:
      - {type: InternalIP, address: 10.20.0.11}
    zone: rack-1
    region: dc-1
    instanceType: r650
  - name: metal-2
    addresses:
      - {type: InternalIP, address: 10.20.0.12}
    zone: rack-2
    region: dc-1
    instanceType: r650
"""
CLOUD_CONFIG = """\
static:
  inventory: inventory.yaml
  pools:
    - name: lan
      addresses: [192.168.10.200-192.168.10.220]
  kubeVipAnnotation: true
"""
KUBE_VIP = "kube-vip.io/loadbalancerIPs"


def ingress_ips(svc):
    return [i.get("ip") for i in
            ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []]


def show_service(srv, name, title):
    """The Service as `kubectl get svc -o wide` and its metadata show it."""
    s = srv.get_object("services", name, namespace="default")
    say("--- %s" % title)
    ports = ",".join("%d:%d/%s" % (p["port"], p.get("nodePort", 0), p["protocol"])
                     if p.get("nodePort") else "%d/%s" % (p["port"], p["protocol"])
                     for p in s["spec"]["ports"])
    say("%-6s %-13s %-15s %-16s %s" % ("NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)"))
    say("%-6s %-13s %-15s %-16s %s" % (name, s["spec"]["type"], s["spec"]["clusterIP"],
                                       ",".join(ingress_ips(s)) or "<pending>", ports))
    say("  finalizers: %s" % (", ".join(s["metadata"].get("finalizers") or []) or "<none>"))
    ann = s["metadata"].get("annotations") or {}
    say("  %s: %s" % (KUBE_VIP, ann.get(KUBE_VIP, "<none>")))
    say()


def bind(srv, role, kind, name):
    """A ClusterRoleBinding of the ClusterRole role (and its name) to the
    User or Group name."""
    srv.create_object({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": role},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": role},
        "subjects": [{"kind": kind, "name": name, "apiGroup": "rbac.authorization.k8s.io"}]})


def serving_csr(srv, state, node, ips, dns):
    """What a kubelet with serverTLSBootstrap does: a key, a PKCS#10 request
    for CN=system:node:NODE with its addresses, POSTed as the node."""
    sans = ",".join(["IP:" + a for a in ips] + ["DNS:" + d for d in dns])
    pem = subprocess.run(
        ["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", os.path.join(state, node + "-serving.key"),
         "-subj", "/CN=system:node:%s/O=system:nodes" % node,
         "-addext", "subjectAltName=" + sans],
        capture_output=True, text=True, check=True, timeout=30).stdout
    body = json.dumps({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "csr-" + node},
        "spec": {"request": base64.b64encode(pem.encode()).decode(),
                 "signerName": "kubernetes.io/kubelet-serving",
                 "usages": ["digital signature", "server auth"]}})
    token = "kubelet-" + node
    srv.add_token(token, "system:node:" + node, groups=("system:nodes",))
    if srv.get_object("clusterroles", "demo:node-csr",
                      group="rbac.authorization.k8s.io") is None:
        # what the API server's Node authorizer grants every kubelet
        srv.create_object({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "demo:node-csr"},
            "rules": [{"apiGroups": ["certificates.k8s.io"],
                       "resources": ["certificatesigningrequests"],
                       "verbs": ["create", "get", "list", "watch"]}]})
        bind(srv, "demo:node-csr", "Group", "system:nodes")
    ctx = ssl.create_default_context(cafile=srv.ca_file)
    port = int(srv.url.rsplit(":", 1)[1])
    conn = http.client.HTTPSConnection("kubernetes", port, context=ctx, timeout=30)
    conn.sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30),
                                server_hostname="kubernetes")
    conn.request("POST", "/apis/certificates.k8s.io/v1/certificatesigningrequests", body,
                 {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    r = conn.getresponse()
    r.read()
    conn.close()
    if r.status != 201:
        raise RuntimeError("creating csr-%s: HTTP %d" % (node, r.status))
    say("%s$ kubelet: asks for a serving certificate for %s" % (node, sans))


def csr_decided(srv, name):
    o = srv.get_object("certificatesigningrequests", name, group="certificates.k8s.io")
    return [c["type"] for c in ((o or {}).get("status") or {}).get("conditions") or []]


def show_csrs(srv, title):
    say("--- %s" % title)
    say("%-14s %-30s %-20s %s" % ("NAME", "SIGNERNAME", "REQUESTOR", "CONDITION"))
    objs = srv.list_objects("certificatesigningrequests", group="certificates.k8s.io")
    for o in objs:
        conds = csr_decided(srv, o["metadata"]["name"]) or ["Pending"]
        say("%-14s %-30s %-20s %s" % (o["metadata"]["name"], o["spec"]["signerName"],
                                      o["spec"]["username"], ",".join(conds)))
    for o in objs:
        for c in (o.get("status") or {}).get("conditions") or []:
            say("  %s %s: %s" % (o["metadata"]["name"], c["reason"], c["message"]))
    say()


def run_bootccm(cmd, state, done, wait_s=WAIT_S):
    """Runs bootccm until done() or wait_s, then SIGTERM; prints its log;
    returns its exit status."""
    log_path = os.path.join(state, "bootccm.log")
    with open(log_path, "w") as log:
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and p.poll() is None and not done():
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    with open(log_path) as f:
        sys.stdout.write(f.read())
    say()
    return p.returncode


def rbac(srv):
    with open(os.path.join(ROOT, "static-pod", "rbac.yaml")) as f:
        for obj in yaml.safe_load_all(f):
            if obj:
                srv.create_object(obj)
    say("Applied static-pod/rbac.yaml: bootccm runs as system:cloud-controller-manager")
    say()


def doctor(bootccm, srv, state, title):
    """Runs bootccm doctor as a user bound to static-pod/rbac-doctor.yaml's
    ClusterRole; prints what it printed; returns its exit status."""
    if srv.get_object("clusterroles", "bootccm-doctor",
                      group="rbac.authorization.k8s.io") is None:
        with open(os.path.join(ROOT, "static-pod", "rbac-doctor.yaml")) as f:
            for obj in yaml.safe_load_all(f):
                if obj:
                    srv.create_object(obj)
        bind(srv, "bootccm-doctor", "User", "oncall")
    kc = srv.write_kubeconfig(os.path.join(state, "oncall.conf"), user="oncall", groups=(),
                              tls_server_name="kubernetes")
    say("--- %s" % title)
    # the nodes here are seconds old: --threshold=0s reports them at once
    # (5m by default, as a node is uninitialized for a moment on every boot)
    say("$ bootccm doctor --kubeconfig oncall.conf --threshold=0s")
    p = subprocess.run([bootccm, "doctor", "--kubeconfig", kc, "--threshold=0s"],
                       capture_output=True, text=True, timeout=60)
    sys.stdout.write(p.stdout + p.stderr)
    say("(exit status %d)" % p.returncode)
    say()
    return p.returncode


def bare_metal(bootccm):
    """The static provider: nodes from an inventory, a LoadBalancer
    Service's address from a pool. Returns 0 when both came true."""
    say("=== A bare-metal cluster: --cloud-provider=static")
    say()
    with tempfile.TemporaryDirectory(prefix="bootccm-demo-metal-") as state, \
            apiserver.FakeAPIServer(state_dir=state) as srv:
        say("Fake API server on %s" % srv.url)
        rbac(srv)
        for name, path, text in (("inventory", "inventory.yaml", INVENTORY),
                                 ("cloud-config", "cloud-config.yaml", CLOUD_CONFIG)):
            with open(os.path.join(state, path), "w") as f:
                f.write(text)
            say("%s (%s):" % (name, path))
            sys.stdout.write(text)
            say()
        register(srv, "metal-1")
        register(srv, "metal-2", {"node-ip": "10.20.0.12"})
        kc = srv.write_kubeconfig(os.path.join(state, "cloud-controller-manager.conf"),
                                  user="system:cloud-controller-manager", groups=(),
                                  tls_server_name="kubernetes")
        srv.create_object({"apiVersion": "v1", "kind": "Service",
                           "metadata": {"name": "web", "namespace": "default"},
                           "spec": {"type": "LoadBalancer", "selector": {"app": "web"},
                                    "ports": [{"port": 80, "protocol": "TCP",
                                               "targetPort": 8080}]}})
        say("$ kubectl expose deployment web --port=80 --target-port=8080 --type=LoadBalancer")
        say()
        show_service(srv, "web", "Service default/web before bootccm ran")
        cmd = [bootccm, "--kubeconfig=" + kc, "--cloud-provider=static",
               "--cloud-config=" + os.path.join(state, "cloud-config.yaml"),
               "--leader-elect=true", "--secure-port=0", "--node-name=metal-1"]
        say("metal-1$ %s" % " ".join(cmd))

        def done():
            # the recorder sends the Events on its own thread, after the writes
            web = srv.get_object("services", "web", namespace="default")
            return ingress_ips(web) and KUBE_VIP in (web["metadata"].get("annotations") or {}) \
                and all(initialized(n) for n in srv.list_objects("nodes")) \
                and any(e.get("reason") == "EnsuredLoadBalancer"
                        for e in srv.list_objects("events", namespace="default"))
        rc = run_bootccm(cmd, state, done)
        show_nodes(srv, "Bare-metal nodes after bootccm ran")
        show_service(srv, "web", "Service default/web after bootccm ran")
        show_events(srv, "Events of the bare-metal cluster")
        ok = done()
        healthy = doctor(bootccm, srv, state, "The bare-metal cluster, checked") == 0
    if not ok:
        say("NOT done within %.0f s: the nodes initialized and web's address" % WAIT_S)
        return 1
    say("Both bare-metal nodes initialized from the inventory, and web got its address")
    say("from the pool lan, with the annotation kube-vip announces it by.")
    if not healthy:
        say("NOT healthy: bootccm doctor found something")
        return 1
    say("bootccm doctor finds nothing wrong with the bare-metal cluster.")
    return 0 if rc in (0, -signal.SIGTERM) else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootccm", default=os.path.join(ROOT, "build", "bootccm"))
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="bootccm-demo-") as state, \
            apiserver.FakeAPIServer(state_dir=state) as srv, \
            FakeMetadata("ec2").start() as md, \
            FakeMetadata("ec2", WORKER_IDENTITY).start() as worker_md:
        say("Fake API server on %s (certificate without 127.0.0.1, like kubeadm's)" % srv.url)
        say("Fake EC2 metadata service of cp-1 on %s" % md.url)
        rbac(srv)
        register(srv, "cp-1")
        register(srv, "worker-1", kubelet_flags(args.bootccm, worker_md))
        show_nodes(srv, "Nodes as kubelet --cloud-provider=external registers them")
        if doctor(args.bootccm, srv, state, "Before bootccm runs") != 2:
            say("NOT found: the doctor should report the deadlock")
            return 1
        # kubeadm's serverTLSBootstrap: each kubelet asks for a serving
        # certificate, which nobody approves until bootccm's csr-approver runs
        cp = md.identity
        serving_csr(srv, state, "cp-1", [cp["private_ipv4"]], [cp["hostname"]])
        serving_csr(srv, state, "worker-1", [WORKER_IDENTITY["private_ipv4"]], [])
        say()

        kc = srv.write_kubeconfig(os.path.join(state, "cloud-controller-manager.conf"),
                                  user="system:cloud-controller-manager", groups=(),
                                  tls_server_name="kubernetes")
        # The static pod's command line, with the fakes' metadata service
        # instead of 169.254.169.254 and no HTTPS port.
        cmd = [args.bootccm, "--kubeconfig=" + kc, "--cloud-provider=metadata",
               "--metadata-dmi-dir=" + DMI_EC2, "--metadata-endpoint=" + md.url,
               "--leader-elect=true", "--secure-port=0", "--node-name=cp-1",
               "--controllers=*,csr-approver", "--csr-deny"]
        say("cp-1$ %s" % " ".join(cmd))
        rc = run_bootccm(cmd, state,
                         lambda: all(initialized(n) for n in srv.list_objects("nodes")) and
                         csr_decided(srv, "csr-cp-1") and csr_decided(srv, "csr-worker-1"))
        show_nodes(srv, "Nodes after bootccm ran")
        show_events(srv)
        show_csrs(srv, "Kubelet serving certificate requests after bootccm ran")
        if csr_decided(srv, "csr-cp-1") != ["Approved"] or \
                csr_decided(srv, "csr-worker-1") != ["Denied"]:
            say("NOT decided as the trust chain says: cp-1's approved (addresses from its")
            say("metadata service), worker-1's denied (addresses only from its kubelet)")
            return 1
        waiting = [n["metadata"]["name"] for n in srv.list_objects("nodes")
                   if not initialized(n)]
        if waiting:
            say("NOT initialized within %.0f s: %s" % (WAIT_S, ", ".join(waiting)))
            return 1
        say("Both nodes initialized: addresses, providerID and labels set, the")
        say("uninitialized taint gone (the not-ready taints are the kubelet's to lift).")
        say("cp-1's serving certificate request approved: its addresses came from its")
        say("instance metadata service; worker-1's denied (--csr-deny): its addresses")
        say("came only from its own kubelet (--csr-trust-kubelet-addresses accepts them).")
        say()
        if doctor(args.bootccm, srv, state, "After bootccm ran") != 0:
            say("NOT fixed: the doctor still reports something")
            return 1
    if rc not in (0, -signal.SIGTERM):
        return 1
    return bare_metal(args.bootccm)


if __name__ == "__main__":
    sys.exit(main())
