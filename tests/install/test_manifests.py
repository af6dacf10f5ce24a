"""static-pod/*.yaml: valid against the Kubernetes schemas, and shaped by the
bootstrap rules (static pods reference no API object; kubeadm's probe
numbers; every bootstrap toleration on the Deployment)."""

import copy

import pytest
import yaml

from helpers import STATIC_POD, load_yaml_docs, validate_k8s

MANIFESTS = sorted(STATIC_POD.glob("*.yaml"))
STATIC_PODS = [STATIC_POD / "bootccm.yaml", STATIC_POD / "bootccm-hostbinary.yaml"]

KUBECONFIG = "/etc/kubernetes/cloud-controller-manager.conf"
CLOUD_DIR = "/etc/kubernetes/bootccm"
CLOUD_CONFIG = CLOUD_DIR + "/cloud-config.yaml"
DMI_DIR = "/sys/class/dmi/id"
BINARY = "/usr/local/bin/bootccm"

# kubeadm's kube-controller-manager probes (kubeadm.md §2), on port 10258.
PROBE_TARGET = {"host": "127.0.0.1", "path": "/healthz", "port": 10258, "scheme": "HTTPS"}
LIVENESS = {"initialDelaySeconds": 10, "timeoutSeconds": 15, "periodSeconds": 10, "failureThreshold": 8}
STARTUP = {"initialDelaySeconds": 10, "timeoutSeconds": 15, "periodSeconds": 10, "failureThreshold": 24}

BOOTSTRAP_TOLERATIONS = {
    ("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule"),
    ("node.kubernetes.io/not-ready", "NoSchedule"),
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/network-unavailable", "NoSchedule"),
    ("node-role.kubernetes.io/control-plane", "NoSchedule"),
    ("node-role.kubernetes.io/master", "NoSchedule"),
}


def the_pod(path):
    docs = load_yaml_docs(path)
    assert len(docs) == 1 and docs[0]["kind"] == "Pod", f"{path}: one Pod expected"
    return docs[0]


def only_container(spec):
    assert len(spec["containers"]) == 1
    assert not spec.get("initContainers") and not spec.get("ephemeralContainers")
    return spec["containers"][0]


def api_references(spec):
    """Every reference of a pod spec to an API object (what a static pod may
    not have)."""
    refs = []
    for key in ("serviceAccountName", "serviceAccount", "resourceClaims", "imagePullSecrets"):
        if spec.get(key):
            refs.append(key)
    if spec.get("automountServiceAccountToken"):
        refs.append("automountServiceAccountToken")
    for v in spec.get("volumes", []):
        kinds = set(v) - {"name"}
        if kinds != {"hostPath"}:
            refs.append(f"volume {v['name']}: {sorted(kinds)}")
    containers = spec.get("containers", []) + spec.get("initContainers", [])
    for c in containers:
        if c.get("envFrom"):
            refs.append(f"container {c['name']}: envFrom")
        for e in c.get("env", []):
            vf = e.get("valueFrom")
            if vf is not None and set(vf) != {"fieldRef"}:
                refs.append(f"env {e['name']}: valueFrom {sorted(vf)}")
    return refs


def flags(container):
    return container.get("command", []) + container.get("args", [])


@pytest.fixture(scope="module")
def validation(node_modules):
    return validate_k8s(node_modules, *MANIFESTS)


def test_every_manifest_validates_against_the_kubernetes_schemas(validation):
    rc, lines, summary = validation
    expected = sum(len(load_yaml_docs(p)) for p in MANIFESTS)
    assert rc == 0, "\n".join(line for line in lines if line.startswith("FAIL"))
    assert summary == {"checked": expected, "failed": 0}
    assert sum(line.startswith("ok ") for line in lines) == expected


def test_the_validator_rejects_wrong_types_unknown_fields_and_kinds(node_modules, tmp_path):
    pod = the_pod(STATIC_POD / "bootccm.yaml")
    wrong_type = copy.deepcopy(pod)
    wrong_type["spec"]["hostNetwork"] = "yes"
    typo = copy.deepcopy(pod)
    sc = typo["spec"]["containers"][0]["securityContext"]
    sc["readOnlyRootFileSystem"] = sc.pop("readOnlyRootFilesystem")
    unknown_kind = {"apiVersion": "v1", "kind": "Poddd", "metadata": {"name": "x"}}
    bad_enum = copy.deepcopy(pod)
    bad_enum["spec"]["volumes"][0]["hostPath"]["type"] = "Fil"
    files = []
    for name, doc in [("wrong-type", wrong_type), ("typo", typo),
                      ("unknown-kind", unknown_kind), ("bad-enum", bad_enum)]:
        f = tmp_path / f"{name}.yaml"
        f.write_text(yaml.safe_dump(doc))
        files.append(f)
    rc, lines, summary = validate_k8s(node_modules, *files)
    assert rc != 0
    assert summary == {"checked": 4, "failed": 4}, "\n".join(lines)
    out = "\n".join(lines)
    assert "hostNetwork must be boolean" in out
    assert "readOnlyRootFileSystem" in out
    assert "no schema for v1 Poddd" in out
    assert "must be equal to one of the allowed values" in out


@pytest.mark.parametrize("path", STATIC_PODS, ids=lambda p: p.name)
def test_static_pod_references_no_api_object(path):
    spec = the_pod(path)["spec"]
    assert api_references(spec) == []


@pytest.mark.parametrize("path", STATIC_PODS, ids=lambda p: p.name)
def test_static_pod_is_shaped_like_kubeadms_control_plane_pods(path):
    pod = the_pod(path)
    assert pod["metadata"]["namespace"] == "kube-system"
    assert pod["metadata"]["labels"] == {"component": "bootccm", "tier": "control-plane"}
    spec = pod["spec"]
    assert spec["hostNetwork"] is True
    assert "dnsPolicy" not in spec
    assert spec["priorityClassName"] == "system-node-critical"
    assert spec["priority"] == 2000001000
    assert spec["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert spec["tolerations"] == [{"operator": "Exists"}]
    c = only_container(spec)
    assert c["livenessProbe"] == {"httpGet": PROBE_TARGET, **LIVENESS}
    assert c["startupProbe"] == {"httpGet": PROBE_TARGET, **STARTUP}
    assert "readinessProbe" not in c
    assert c["resources"] == {"requests": {"cpu": "50m", "memory": "32Mi"}}
    assert c["imagePullPolicy"] == "IfNotPresent"
    assert c["securityContext"] == {
        "runAsUser": 0,
        "runAsGroup": 0,
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }


@pytest.mark.parametrize("path", STATIC_PODS, ids=lambda p: p.name)
def test_static_pod_flags_and_node_name(path):
    c = only_container(the_pod(path)["spec"])
    f = flags(c)
    assert f[0] == BINARY
    for want in (
        f"--kubeconfig={KUBECONFIG}",
        f"--cloud-config={CLOUD_CONFIG}",
        "--cloud-provider=metadata",
        "--leader-elect=true",
        "--bind-address=127.0.0.1",
        "--secure-port=10258",
        "--node-name=$(NODE_NAME)",
    ):
        assert want in f, want
    assert c["env"] == [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
    ]


@pytest.mark.parametrize("path", STATIC_PODS, ids=lambda p: p.name)
def test_static_pod_host_paths(path):
    spec = the_pod(path)["spec"]
    c = only_container(spec)
    volumes = {v["name"]: v["hostPath"] for v in spec["volumes"]}
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    assert set(volumes) == set(mounts)
    assert all(m.get("readOnly") is True for m in mounts.values())
    by_host = {hp["path"]: (hp["type"], mounts[name]["mountPath"]) for name, hp in volumes.items()}
    assert by_host[KUBECONFIG] == ("File", KUBECONFIG)
    # the directory, so an inventory or token file beside the cloud config
    # is in the pod, and a rename over one is seen
    assert by_host[CLOUD_DIR] == ("Directory", CLOUD_DIR)
    dmi_type, dmi_mount = by_host[DMI_DIR]
    assert dmi_type == "Directory"
    assert f"--metadata-dmi-dir={dmi_mount}" in flags(c)
    expected = {KUBECONFIG, CLOUD_DIR, DMI_DIR}
    if path.name == "bootccm-hostbinary.yaml":
        assert by_host[BINARY] == ("File", BINARY)
        expected.add(BINARY)
    assert set(by_host) == expected


def test_image_variant_runs_the_placeholder_image():
    c = only_container(the_pod(STATIC_POD / "bootccm.yaml")["spec"])
    assert c["image"] == "bootccm:VERSION"


def test_hostbinary_variant_runs_the_host_binary_in_the_pause_image():
    c = only_container(the_pod(STATIC_POD / "bootccm-hostbinary.yaml")["spec"])
    assert c["image"] == "registry.k8s.io/pause:3.10"
    assert c["command"][0] == BINARY


def test_the_two_static_pod_variants_differ_only_in_image_and_binary_mount():
    a = the_pod(STATIC_POD / "bootccm.yaml")
    b = the_pod(STATIC_POD / "bootccm-hostbinary.yaml")
    for pod in (a, b):
        c = pod["spec"]["containers"][0]
        c.pop("image")
        c["volumeMounts"] = [m for m in c["volumeMounts"] if m["name"] != "bootccm-binary"]
        pod["spec"]["volumes"] = [v for v in pod["spec"]["volumes"] if v["name"] != "bootccm-binary"]
    assert a == b


def deployment_docs():
    docs = load_yaml_docs(STATIC_POD / "deployment.yaml")
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def test_deployment_tolerates_every_bootstrap_taint():
    dep = deployment_docs()[("Deployment", "bootccm")]
    tol = dep["spec"]["template"]["spec"]["tolerations"]
    got = {(t["key"], t["effect"]) for t in tol}
    assert got == BOOTSTRAP_TOLERATIONS
    assert all(t["operator"] == "Exists" for t in tol)
    assert len(tol) == len(BOOTSTRAP_TOLERATIONS)


def test_deployment_placement_and_identity():
    docs = deployment_docs()
    dep = docs[("Deployment", "bootccm")]
    assert dep["metadata"]["namespace"] == "kube-system"
    assert dep["spec"]["replicas"] == 2
    spec = dep["spec"]["template"]["spec"]
    assert spec["hostNetwork"] is True
    assert spec["priorityClassName"] == "system-cluster-critical"
    assert spec["nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
    anti = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert len(anti) == 1 and anti[0]["topologyKey"] == "kubernetes.io/hostname"
    assert anti[0]["labelSelector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()
    assert spec["serviceAccountName"] == "cloud-controller-manager"
    sa = docs[("ServiceAccount", "cloud-controller-manager")]
    assert sa["metadata"]["namespace"] == "kube-system"
    c = only_container(spec)
    f = flags(c)
    assert "--node-name=$(NODE_NAME)" in f
    assert "--leader-elect=true" in f
    assert not any(x.startswith("--kubeconfig") for x in f), "in-cluster config expected"
    assert c["env"] == [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
    ]
    assert c["livenessProbe"] == {"httpGet": PROBE_TARGET, **LIVENESS}
    assert c["startupProbe"] == {"httpGet": PROBE_TARGET, **STARTUP}


def test_deployment_binds_its_service_account_to_the_static_pod_roles():
    docs = deployment_docs()
    rbac = {(d["kind"], d["metadata"]["name"]) for d in load_yaml_docs(STATIC_POD / "rbac.yaml")}
    sa = {"kind": "ServiceAccount", "name": "cloud-controller-manager", "namespace": "kube-system"}
    crb = docs[("ClusterRoleBinding", "system:cloud-controller-manager:serviceaccount")]
    assert ("ClusterRole", crb["roleRef"]["name"]) in rbac and crb["roleRef"]["kind"] == "ClusterRole"
    assert crb["subjects"] == [sa]
    rb = docs[("RoleBinding", "system:cloud-controller-manager:serviceaccount")]
    assert rb["metadata"]["namespace"] == "kube-system"
    assert ("Role", rb["roleRef"]["name"]) in rbac and rb["roleRef"]["kind"] == "Role"
    assert rb["subjects"] == [sa]
