"""bootccm doctor on the real control plane, as a user bound to nothing but
the read-only ClusterRole bootccm-doctor of static-pod/rbac-doctor.yaml as
shipped (the real RBAC authorizer answers every read): a Node its kubelet
registered keeps the uninitialized taint while no cloud-controller-manager
runs, and doctor names that deadlock; once bootccm (metadata provider, the
fake EC2 metadata service) has initialized it, doctor finds the cluster
healthy. Without the binding the same reads are refused, so the role is
what lets them through."""

import json
import os

import pytest

from controlplane import ROOT
from harness import Daemon, run
from nodes import (NODE, NODE_IP, fake_metadata, kubelet_node, metadata_daemon_args, poll,
                   tainted)

DOCTOR_USER = "oncall"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cloud-controller-manager"
TIMEOUT_S = 30


@pytest.fixture(scope="module")
def doctor_conf(ccm_cp):
    """The kubeconfig of DOCTOR_USER, bound to the shipped ClusterRole
    bootccm-doctor and nothing else."""
    cp = ccm_cp
    conf = cp.write_kubeconfig("doctor", "doctor", DOCTOR_USER)
    cp.kubectl("apply", "-f", os.path.join(ROOT, "static-pod", "rbac-doctor.yaml"))
    cp.kubectl("create", "clusterrolebinding", "bootccm-doctor", "--clusterrole=bootccm-doctor",
               "--user=" + DOCTOR_USER)
    # RBAC is read from the authorizer's watch cache: wait until it allows
    poll(lambda: cp.kubectl("auth", "can-i", "list", "nodes", "--as=" + DOCTOR_USER,
                            check=False).returncode == 0, "the binding in force")
    return conf


def doctor(conf, *extra):
    """bootccm doctor -o json: (exit status, the report or None, findings
    by id, stderr)."""
    r = run(["doctor", "--kubeconfig", conf, "-o", "json", "--threshold=0s",
             "--timeout=20s"] + list(extra), timeout=60)
    if r.returncode == 3:
        return r.returncode, None, {}, r.stderr
    report = json.loads(r.stdout)
    found = {}
    for f in report["findings"]:
        found.setdefault(f["id"], []).append(f)
    return r.returncode, report, found, r.stderr


def test_doctor_needs_its_role(ccm_cp):
    conf = ccm_cp.write_kubeconfig("nobody", "nobody", "nobody")
    code, _, _, err = doctor(conf)
    assert code == 3, err
    assert "forbidden" in err.lower() or "403" in err, err


def test_a_stuck_node_then_healthy_once_bootccm_ran(ccm_cp, doctor_conf):
    cp = ccm_cp
    status, obj = cp.node_client(NODE).request("POST", "/api/v1/nodes",
                                                kubelet_node(NODE, NODE_IP))
    assert status == 201, obj

    code, report, found, err = doctor(doctor_conf)
    assert code == 2, (report, err)
    assert list(found) == ["uninitialized-no-ccm"], report
    [f] = found["uninitialized-no-ccm"]
    assert f["severity"] == "deadlock"
    assert f["objects"] == ["node/" + NODE, "lease/kube-system/cloud-controller-manager"]
    assert "no Lease kube-system/cloud-controller-manager exists" in f["evidence"]
    assert report["summary"]["nodes"] == 1

    md = fake_metadata().FakeMetadata("ec2").start()
    d = Daemon(metadata_daemon_args(cp, md, extra=["--secure-port=0"]))
    admin = cp.client("admin")
    try:
        def initialized():
            status, node = admin.request("GET", "/api/v1/nodes/" + NODE)
            assert status == 200, node
            return not tainted(node)
        poll(initialized, "initialization of " + NODE, d, TIMEOUT_S)
        # bootccm as its static pod runs it: the mirror pod, on the host
        # network of the node named like the Lease holder's host part
        holder = poll(lambda: lease_holder(admin), "the Lease taken", d, TIMEOUT_S)
        static_pod(admin, holder.rsplit("_", 1)[0])
        code, report, found, err = doctor(doctor_conf)
        assert (code, found) == (0, {}), (report, err)
        assert report["summary"]["result"] == "healthy"
        r = run(["doctor", "--kubeconfig", doctor_conf, "--threshold=0s"], timeout=60)
        assert r.returncode == 0 and r.stdout.startswith("doctor: healthy: 0 deadlocks"), \
            r.stdout + r.stderr
        assert d.alive(), d.output()
    finally:
        rc, out = d.stop()
        md.stop()
    # the doctor only reads: not one write of its user in the audit log
    assert cp.writes(DOCTOR_USER) == []
    assert "forbidden" not in out.lower(), out


def lease_holder(admin):
    status, lease = admin.request("GET", LEASE)
    return status == 200 and lease["spec"].get("holderIdentity")


def static_pod(admin, host):
    """A Running host-network pod bootccm-HOST in kube-system on node HOST,
    as the kubelet mirrors a static pod (made by the admin: no kubelet)."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "bootccm-" + host, "namespace": "kube-system"},
           "spec": {"nodeName": host, "hostNetwork": True,
                    "containers": [{"name": "bootccm", "image": "bootccm:test"}]}}
    # the ServiceAccount admission plugin refuses pods in a namespace until
    # kube-controller-manager has made its default ServiceAccount
    poll(lambda: admin.request(
        "GET", "/api/v1/namespaces/kube-system/serviceaccounts/default")[0] == 200,
        "the ServiceAccount kube-system/default")
    path = "/api/v1/namespaces/kube-system/pods"
    status, body = admin.request("POST", path, pod)
    assert status == 201, body
    body["status"] = {"phase": "Running"}
    status, body = admin.request("PUT", "%s/%s/status" % (path, pod["metadata"]["name"]), body)
    assert status == 200, body
