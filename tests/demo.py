#!/usr/bin/python3
"""make demo: bootccm's main job on the bundled fakes.

Starts the fake API server (with bootccm's shipped RBAC role) and a fake EC2
metadata service on loopback, registers nodes the way `kubelet
--cloud-provider=external` does after Kubernetes 1.29 (no addresses, every
bootstrap taint), runs the static bootccm binary against them the way the
static pod's command line does, and shows the nodes before and after."""

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

TAINTS = [
    {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
    {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
]


def say(msg=""):
    print(msg, flush=True)


def show_nodes(srv, title):
    say("--- %s" % title)
    say("%-10s %-40s %-28s %s" % ("NAME", "PROVIDER-ID", "ADDRESSES", "TAINTS"))
    for n in srv.list_objects("nodes"):
        addrs = ",".join(a["address"] for a in n.get("status", {}).get("addresses", [])) or "<none>"
        taints = ",".join("%s:%s" % (t["key"].split("/")[-1], t["effect"])
                          for t in n.get("spec", {}).get("taints", [])) or "<none>"
        say("%-10s %-40s %-28s %s" % (n["metadata"]["name"], n["spec"].get("providerID") or "<none>",
                                     addrs, taints))
    say()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootccm", default=os.path.join(ROOT, "build", "bootccm"))
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()

    state = tempfile.mkdtemp(prefix="bootccm-demo-")
    with apiserver.FakeAPIServer(state_dir=state) as srv, \
            FakeMetadata("ec2").start() as md:
        say("Fake API server on %s (certificate without 127.0.0.1, like kubeadm's)" % srv.url)
        say("Fake EC2 metadata service on %s" % md.url)
        with open(os.path.join(ROOT, "static-pod", "rbac.yaml")) as f:
            for obj in yaml.safe_load_all(f):
                if obj:
                    srv.create_object(obj)
        say("Applied static-pod/rbac.yaml: bootccm runs as system:cloud-controller-manager")
        for name in ("cp-1", "worker-1"):
            node = {"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                    "spec": {"taints": [t for t in TAINTS if name == "cp-1" or
                                        "control-plane" not in t["key"]]}}
            srv.create_object(node)
        show_nodes(srv, "Nodes as kubelet --cloud-provider=external registers them")

        kc = srv.write_kubeconfig(os.path.join(state, "cloud-controller-manager.conf"),
                                  user="system:cloud-controller-manager", groups=(),
                                  tls_server_name="kubernetes")
        cmd = [args.bootccm, "--kubeconfig", kc, "--node-name", "cp-1",
               "--leader-elect=true", "--secure-port=0", "--cloud-provider=metadata"]
        say("$ bootccm check-kubeconfig --kubeconfig %s" % kc)
        subprocess.run([args.bootccm, "check-kubeconfig", "--kubeconfig", kc])
        say()
        say("$ %s" % " ".join(cmd))
        p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        time.sleep(args.seconds)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=10)
        sys.stdout.write(err)
        say()
        show_nodes(srv, "Nodes after bootccm ran")
        say("This version connects, authenticates and waits for the API server in any")
        say("start order; the node controller that initializes these nodes (addresses,")
        say("providerID, labels, taint removal) from the metadata service is not built")
        say("yet, so the nodes above are unchanged.")
        return p.returncode


if __name__ == "__main__":
    sys.exit(main())
