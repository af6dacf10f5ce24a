"""kubeadm/*.yaml: kubeadm.k8s.io/v1beta4 with {name, value} extra args,
nothing cloud-related on kube-apiserver, kubelet `cloud-provider: external`
plus the bootccm metadata placeholders; and their rendering by
install-bootccm.sh --render-kubeadm-config."""

import os
import re

import pytest
import yaml

from helpers import INSTALL, KUBEADM, load_yaml_docs, mode, run

V1BETA4 = "kubeadm.k8s.io/v1beta4"
FILES = {
    "init.yaml": ["InitConfiguration", "ClusterConfiguration", "KubeletConfiguration"],
    "join-control-plane.yaml": ["JoinConfiguration"],
    "join-worker.yaml": ["JoinConfiguration"],
}
ARGS = ("extraArgs", "kubeletExtraArgs")

# Field names of kubeadm v1beta4 (cmd/kubeadm/app/apis/kubeadm/v1beta4/types.go),
# for the parts these files use; a misspelt field fails here instead of being
# refused by kubeadm on a node at first boot.
ARG_LIST = "arg-list"
STRINGS = "strings"
ANY = "any"
NODE_REGISTRATION = {
    "name": ANY, "criSocket": ANY, "taints": ANY, "kubeletExtraArgs": ARG_LIST,
    "ignorePreflightErrors": STRINGS, "imagePullPolicy": ANY, "imagePullSerial": ANY,
}
API_ENDPOINT = {"advertiseAddress": ANY, "bindPort": ANY}
COMPONENT = {"extraArgs": ARG_LIST, "extraVolumes": ANY, "extraEnvs": ANY}
TIMEOUTS = {k: ANY for k in (
    "controlPlaneComponentHealthCheck", "kubeletHealthCheck", "kubernetesAPICall",
    "etcdAPICall", "tlsBootstrap", "discovery", "upgradeManifests")}
SCHEMA = {
    "InitConfiguration": {
        "apiVersion": ANY, "kind": ANY,
        "bootstrapTokens": [{"token": ANY, "description": ANY, "ttl": ANY, "expires": ANY,
                             "usages": STRINGS, "groups": STRINGS}],
        "dryRun": ANY, "nodeRegistration": NODE_REGISTRATION, "localAPIEndpoint": API_ENDPOINT,
        "certificateKey": ANY, "skipPhases": STRINGS, "patches": {"directory": ANY},
        "timeouts": TIMEOUTS,
    },
    "ClusterConfiguration": {
        "apiVersion": ANY, "kind": ANY, "etcd": ANY,
        "networking": {"serviceSubnet": ANY, "podSubnet": ANY, "dnsDomain": ANY},
        "kubernetesVersion": ANY, "controlPlaneEndpoint": ANY,
        "apiServer": {**COMPONENT, "certSANs": STRINGS},
        "controllerManager": COMPONENT, "scheduler": COMPONENT,
        "dns": ANY, "proxy": ANY, "certificatesDir": ANY, "imageRepository": ANY,
        "featureGates": ANY, "clusterName": ANY, "encryptionAlgorithm": ANY,
        "certificateValidityPeriod": ANY, "caCertificateValidityPeriod": ANY,
    },
    # kubelet.config.k8s.io/v1beta1, the part init.yaml sets
    "KubeletConfiguration": {"apiVersion": ANY, "kind": ANY, "serverTLSBootstrap": ANY},
    "JoinConfiguration": {
        "apiVersion": ANY, "kind": ANY, "dryRun": ANY, "nodeRegistration": NODE_REGISTRATION,
        "caCertPath": ANY,
        "discovery": {
            "bootstrapToken": {"token": ANY, "apiServerEndpoint": ANY, "caCertHashes": STRINGS,
                               "unsafeSkipCAVerification": ANY},
            "file": {"kubeConfigPath": ANY}, "tlsBootstrapToken": ANY,
        },
        "controlPlane": {"localAPIEndpoint": API_ENDPOINT, "certificateKey": ANY},
        "skipPhases": STRINGS, "patches": {"directory": ANY}, "timeouts": TIMEOUTS,
    },
}

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
NODE_FACTS = {"BOOTCCM_NODE_IP", "BOOTCCM_PROVIDER_ID", "BOOTCCM_NODE_LABELS"}
CLUSTER_FACTS = {
    "init.yaml": {"KUBEADM_TOKEN", "KUBEADM_CERTIFICATE_KEY", "KUBERNETES_VERSION",
                  "CONTROL_PLANE_ENDPOINT", "BOOTCCM_SERVER_TLS_BOOTSTRAP"},
    "join-control-plane.yaml": {"KUBEADM_TOKEN", "KUBEADM_CERTIFICATE_KEY",
                                "KUBEADM_CA_CERT_HASH", "CONTROL_PLANE_ENDPOINT"},
    "join-worker.yaml": {"KUBEADM_TOKEN", "KUBEADM_CA_CERT_HASH", "CONTROL_PLANE_ENDPOINT"},
}
CLUSTER_VALUES = {
    "KUBEADM_TOKEN": "abcdef.0123456789abcdef",
    "KUBEADM_CERTIFICATE_KEY": "e6a2eb8581237ab72a4f494f30285ec12a9694d750b9785706a83bfcbbbd2204",
    "KUBEADM_CA_CERT_HASH": "sha256:" + "ab" * 32,
    "KUBERNETES_VERSION": "v1.33.4",
    "CONTROL_PLANE_ENDPOINT": "k8s-api.example.internal:6443",
}
FLAGS = ("--provider-id=aws:///eu-west-1a/i-0abc --node-ip=10.0.0.5 "
         "--node-labels=topology.kubernetes.io/zone=eu-west-1a,"
         "topology.kubernetes.io/region=eu-west-1")


def check_fields(node, schema, where, errors):
    if schema == ANY:
        return
    if schema == STRINGS:
        if not (isinstance(node, list) and all(isinstance(x, str) for x in node)):
            errors.append(f"{where}: a list of strings expected")
        return
    if schema == ARG_LIST:
        if not isinstance(node, list):
            errors.append(f"{where}: v1beta4 wants a list of {{name, value}}, not {type(node).__name__}")
            return
        for i, a in enumerate(node):
            if not (isinstance(a, dict) and set(a) == {"name", "value"}
                    and isinstance(a["name"], str) and isinstance(a["value"], str)):
                errors.append(f"{where}[{i}]: {{name: string, value: string}} expected, got {a!r}")
        return
    if isinstance(schema, list):
        if not isinstance(node, list):
            errors.append(f"{where}: a list expected")
            return
        for i, item in enumerate(node):
            check_fields(item, schema[0], f"{where}[{i}]", errors)
        return
    if not isinstance(node, dict):
        errors.append(f"{where}: an object expected")
        return
    for key, value in node.items():
        if key not in schema:
            errors.append(f"{where}.{key}: not a kubeadm v1beta4 field")
        else:
            check_fields(value, schema[key], f"{where}.{key}", errors)


def all_arg_lists(node, path="$"):
    """Every extraArgs/kubeletExtraArgs anywhere in NODE."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ARGS:
                yield f"{path}.{k}", v
            yield from all_arg_lists(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from all_arg_lists(v, f"{path}[{i}]")


def kubelet_args(doc):
    return {a["name"]: a["value"] for a in doc["nodeRegistration"]["kubeletExtraArgs"]}


@pytest.mark.parametrize("name", sorted(FILES))
def test_v1beta4_kinds(name):
    docs = load_yaml_docs(KUBEADM / name)
    assert [d["kind"] for d in docs] == FILES[name]
    assert all(d["apiVersion"] == (V1BETA4 if d["kind"] != "KubeletConfiguration"
                                   else "kubelet.config.k8s.io/v1beta1") for d in docs)


@pytest.mark.parametrize("name", sorted(FILES))
def test_fields_are_kubeadm_v1beta4_fields(name):
    errors = []
    for d in load_yaml_docs(KUBEADM / name):
        check_fields(d, SCHEMA[d["kind"]], d["kind"], errors)
    assert errors == []


def test_field_check_catches_v1beta3_style_and_typos():
    errors = []
    check_fields({"apiVersion": V1BETA4, "kind": "JoinConfiguration",
                  "nodeRegistration": {"kubeletExtraArgs": {"cloud-provider": "external"}},
                  "discovery": {"bootstrapToken": {"tokn": "x"}}},
                 SCHEMA["JoinConfiguration"], "JoinConfiguration", errors)
    assert any("list of {name, value}" in e for e in errors)
    assert any("tokn" in e for e in errors)


@pytest.mark.parametrize("name", sorted(FILES))
def test_extra_args_are_name_value_lists_everywhere(name):
    found = 0
    for d in load_yaml_docs(KUBEADM / name):
        for where, args in all_arg_lists(d):
            found += 1
            assert isinstance(args, list), where
            for a in args:
                assert set(a) == {"name", "value"}, where
                assert isinstance(a["name"], str) and isinstance(a["value"], str), where
    assert found >= 1


@pytest.mark.parametrize("name", sorted(FILES))
def test_kubelet_runs_with_an_external_cloud_provider_and_node_facts(name):
    for d in load_yaml_docs(KUBEADM / name):
        if d["kind"] in ("ClusterConfiguration", "KubeletConfiguration"):
            continue
        args = kubelet_args(d)
        assert args["cloud-provider"] == "external"
        assert args["node-ip"] == "${BOOTCCM_NODE_IP}"
        assert args["provider-id"] == "${BOOTCCM_PROVIDER_ID}"
        assert args["node-labels"] == "${BOOTCCM_NODE_LABELS}"


def test_nothing_cloud_related_on_the_api_server():
    for name in FILES:
        for d in load_yaml_docs(KUBEADM / name):
            api = d.get("apiServer", {})
            names = [a["name"] for a in api.get("extraArgs", [])]
            assert not any("cloud" in n for n in names), (name, names)
            assert "cloud" not in yaml.safe_dump(api), name


def test_cluster_configuration():
    cluster = load_yaml_docs(KUBEADM / "init.yaml")[1]
    assert cluster["networking"]["podSubnet"]
    assert {a["name"]: a["value"] for a in cluster["controllerManager"]["extraArgs"]} == {
        "cloud-provider": "external"}


def test_api_server_port_is_6443_everywhere():
    init = load_yaml_docs(KUBEADM / "init.yaml")[0]
    assert init["localAPIEndpoint"]["bindPort"] == 6443
    join = load_yaml_docs(KUBEADM / "join-control-plane.yaml")[0]
    assert join["controlPlane"]["localAPIEndpoint"]["bindPort"] == 6443
    assert "controlPlane" not in load_yaml_docs(KUBEADM / "join-worker.yaml")[0]


@pytest.mark.parametrize("name", sorted(FILES))
def test_placeholders_are_the_documented_ones(name):
    text = "\n".join(line for line in (KUBEADM / name).read_text().splitlines()
                     if not line.lstrip().startswith("#"))
    assert set(PLACEHOLDER.findall(text)) == NODE_FACTS | CLUSTER_FACTS[name]
    readme = (KUBEADM / "README.md").read_text()
    for p in NODE_FACTS | CLUSTER_FACTS[name]:
        assert "${" + p + "}" in readme, f"README.md does not document ${{{p}}}"


def render(name, tmp_path, flags=FLAGS, env=CLUSTER_VALUES, check=True):
    out = tmp_path / f"rendered-{name}"
    e = {k: v for k, v in os.environ.items() if k not in CLUSTER_VALUES}
    e.update(env)
    proc = run(["sh", INSTALL, "--render-kubeadm-config", KUBEADM / name, out,
                "--kubelet-flags", flags], env=e, check=check)
    return proc, out


@pytest.mark.parametrize("name", sorted(FILES))
def test_render_fills_every_placeholder(name, tmp_path):
    proc, out = render(name, tmp_path)
    assert mode(out) == 0o600, "holds the join token: 0600"
    text = out.read_text()
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert "${" not in body
    docs = list(yaml.safe_load_all(text))
    node = next(d for d in docs if d["kind"] not in ("ClusterConfiguration",
                                                     "KubeletConfiguration"))
    args = kubelet_args(node)
    assert args == {
        "cloud-provider": "external",
        "node-ip": "10.0.0.5",
        "provider-id": "aws:///eu-west-1a/i-0abc",
        "node-labels": "topology.kubernetes.io/zone=eu-west-1a,topology.kubernetes.io/region=eu-west-1",
    }
    for name_, value in CLUSTER_VALUES.items():
        if name_ in CLUSTER_FACTS[name]:
            assert value in text
    errors = []
    for d in docs:
        check_fields(d, SCHEMA[d["kind"]], d["kind"], errors)
    assert errors == []


def test_render_drops_kubelet_args_the_node_has_no_value_for(tmp_path):
    proc, out = render("join-worker.yaml", tmp_path, flags="--node-ip=10.0.0.6")
    node = yaml.safe_load(out.read_text())
    assert kubelet_args(node) == {"cloud-provider": "external", "node-ip": "10.0.0.6"}


def test_render_warns_about_flags_it_has_no_place_for(tmp_path):
    proc, out = render("join-worker.yaml", tmp_path, flags=FLAGS + " --hostname-override=x")
    assert "--hostname-override=x" in proc.stderr


def test_render_names_every_unset_placeholder(tmp_path):
    env = dict(CLUSTER_VALUES)
    del env["KUBEADM_TOKEN"], env["CONTROL_PLANE_ENDPOINT"]
    proc, out = render("join-worker.yaml", tmp_path, env=env, check=False)
    assert proc.returncode != 0
    assert "KUBEADM_TOKEN" in proc.stderr and "CONTROL_PLANE_ENDPOINT" in proc.stderr
    assert not out.exists()


def test_render_refuses_values_that_would_break_the_yaml(tmp_path):
    env = dict(CLUSTER_VALUES, KUBEADM_TOKEN='abc"def')
    proc, out = render("join-worker.yaml", tmp_path, env=env, check=False)
    assert proc.returncode != 0
    assert "KUBEADM_TOKEN" in proc.stderr
    assert not out.exists()


def test_render_asks_bootccm_metadata_when_no_flags_are_given(tmp_path, bootccm_binary):
    out = tmp_path / "join.yaml"
    env = dict(os.environ, **CLUSTER_VALUES)
    proc = run(["sh", INSTALL, "--render-kubeadm-config", KUBEADM / "join-worker.yaml", out,
                "--binary", bootccm_binary.path], env=env, check=False)
    if not bootccm_binary.real:
        # The stand-in answers like `bootccm metadata --format=kubelet-flags`.
        assert proc.returncode == 0, proc.stderr
        assert kubelet_args(yaml.safe_load(out.read_text()))["node-ip"] == "10.0.0.5"
    else:
        # Off a cloud the real metadata lookup may fail; then it must say so.
        assert proc.returncode == 0 or "metadata --format=kubelet-flags' failed" in proc.stderr


def test_render_is_idempotent(tmp_path):
    render("init.yaml", tmp_path)
    proc, out = render("init.yaml", tmp_path)
    assert "unchanged" in proc.stdout


def test_render_passes_the_metadata_flags_to_bootccm_metadata(tmp_path):
    """--extra-arg=--metadata-* (an unusual cloud or endpoint) reaches the
    `bootccm metadata` run; other extra flags do not."""
    log = tmp_path / "bootccm.log"
    fake = tmp_path / "bootccm"
    fake.write_text(f"""#!/bin/sh
printf '%s\\n' "$*" >>{log}
echo --node-ip=10.9.8.7 --provider-id=openstack:///0a1b
""")
    fake.chmod(0o755)
    out = tmp_path / "join.yaml"
    env = dict(os.environ, **CLUSTER_VALUES)
    run(["sh", INSTALL, "--render-kubeadm-config", KUBEADM / "join-worker.yaml", out,
         "--binary", fake, "--extra-arg=--metadata-cloud=openstack",
         "--extra-arg", "--cluster-cidr=10.244.0.0/16",
         "--extra-arg=--metadata-endpoint=http://169.254.169.254:8080"], env=env)
    assert log.read_text() == ("metadata --metadata-cloud=openstack "
                               "--metadata-endpoint=http://169.254.169.254:8080 "
                               "--format=kubelet-flags\n")
    args = kubelet_args(yaml.safe_load(out.read_text()))
    assert args["node-ip"] == "10.9.8.7" and args["provider-id"] == "openstack:///0a1b"


def test_render_names_the_failing_metadata_command(tmp_path):
    fake = tmp_path / "bootccm"
    fake.write_text("#!/bin/sh\necho 'bootccm: metadata: no cloud found' >&2\nexit 3\n")
    fake.chmod(0o755)
    env = dict(os.environ, **CLUSTER_VALUES)
    proc = run(["sh", INSTALL, "--render-kubeadm-config", KUBEADM / "join-worker.yaml",
                tmp_path / "join.yaml", "--binary", fake, "--extra-arg=--metadata-cloud=gce"],
               env=env, check=False)
    assert proc.returncode == 1
    assert ("'%s metadata --metadata-cloud=gce --format=kubelet-flags' failed" % fake
            in proc.stderr), proc.stderr
    assert not (tmp_path / "join.yaml").exists()


def test_server_tls_bootstrap_is_an_installer_option(tmp_path):
    """Off unless --server-tls-bootstrap: nothing would approve the kubelets'
    serving certificate requests without bootccm's csr-approver."""
    _, out = render("init.yaml", tmp_path)
    kubelet = [d for d in yaml.safe_load_all(out.read_text())
               if d["kind"] == "KubeletConfiguration"]
    assert kubelet == [{"apiVersion": "kubelet.config.k8s.io/v1beta1",
                        "kind": "KubeletConfiguration", "serverTLSBootstrap": False}]
    out2 = tmp_path / "tls.yaml"
    e = {k: v for k, v in os.environ.items() if k not in CLUSTER_VALUES}
    e.update(CLUSTER_VALUES)
    run(["sh", INSTALL, "--render-kubeadm-config", KUBEADM / "init.yaml", out2,
         "--kubelet-flags", FLAGS, "--server-tls-bootstrap"], env=e)
    kubelet = [d for d in yaml.safe_load_all(out2.read_text())
               if d["kind"] == "KubeletConfiguration"]
    assert kubelet[0]["serverTLSBootstrap"] is True
