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

Exits 0 when both nodes ended initialized, 1 otherwise."""

import argparse
import os
import signal
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
    --provider-id, --node-ip and --node-labels when FLAGS has them."""
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"taints": list(TAINTS)}}
    if flags is None:
        node["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = ""
        node["spec"]["taints"].append(CONTROL_PLANE_TAINT)
    else:
        node["spec"]["providerID"] = flags["provider-id"]
        node["metadata"]["labels"].update(kv.split("=", 1)
                                          for kv in flags["node-labels"].split(","))
        node["metadata"]["annotations"] = {"alpha.kubernetes.io/provided-node-ip":
                                           flags["node-ip"]}
        node["status"] = {"addresses": [{"type": "InternalIP", "address": flags["node-ip"]},
                                        {"type": "Hostname", "address": name}]}
    srv.create_object(node)


def show_events(srv):
    say("--- Events")
    for e in srv.list_objects("events", namespace="default"):
        say("%-7s %-22s %-9s %s" % (e.get("type", ""), e.get("reason", ""),
                                    e["involvedObject"].get("name", ""), e.get("message", "")))
    say()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootccm", default=os.path.join(ROOT, "build", "bootccm"))
    args = ap.parse_args()

    state = tempfile.mkdtemp(prefix="bootccm-demo-")
    with apiserver.FakeAPIServer(state_dir=state) as srv, \
            FakeMetadata("ec2").start() as md, \
            FakeMetadata("ec2", WORKER_IDENTITY).start() as worker_md:
        say("Fake API server on %s (certificate without 127.0.0.1, like kubeadm's)" % srv.url)
        say("Fake EC2 metadata service of cp-1 on %s" % md.url)
        with open(os.path.join(ROOT, "static-pod", "rbac.yaml")) as f:
            for obj in yaml.safe_load_all(f):
                if obj:
                    srv.create_object(obj)
        say("Applied static-pod/rbac.yaml: bootccm runs as system:cloud-controller-manager")
        say()
        register(srv, "cp-1")
        register(srv, "worker-1", kubelet_flags(args.bootccm, worker_md))
        show_nodes(srv, "Nodes as kubelet --cloud-provider=external registers them")

        kc = srv.write_kubeconfig(os.path.join(state, "cloud-controller-manager.conf"),
                                  user="system:cloud-controller-manager", groups=(),
                                  tls_server_name="kubernetes")
        # The static pod's command line, with the fakes' metadata service
        # instead of 169.254.169.254 and no HTTPS port.
        cmd = [args.bootccm, "--kubeconfig=" + kc, "--cloud-provider=metadata",
               "--metadata-dmi-dir=" + DMI_EC2, "--metadata-endpoint=" + md.url,
               "--leader-elect=true", "--secure-port=0", "--node-name=cp-1"]
        say("cp-1$ %s" % " ".join(cmd))
        log_path = os.path.join(state, "bootccm.log")
        with open(log_path, "w") as log:
            p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and p.poll() is None:
            if all(initialized(n) for n in srv.list_objects("nodes")):
                break
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
        show_nodes(srv, "Nodes after bootccm ran")
        show_events(srv)
        waiting = [n["metadata"]["name"] for n in srv.list_objects("nodes")
                   if not initialized(n)]
        if waiting:
            say("NOT initialized within %.0f s: %s" % (WAIT_S, ", ".join(waiting)))
            return 1
        say("Both nodes initialized: addresses, providerID and labels set, the")
        say("uninitialized taint gone (the not-ready taints are the kubelet's to lift).")
        return 0 if p.returncode in (0, -signal.SIGTERM) else 1


if __name__ == "__main__":
    sys.exit(main())
