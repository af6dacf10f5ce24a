"""bootccm's /metrics behind the real delegated authentication and
authorization: service-account tokens issued by kube-apiserver are checked
with its TokenReview and SubjectAccessReview APIs, as bootccm's identity under
static-pod/rbac.yaml as shipped."""

import pytest

from harness import Daemon, free_port, https_get as probe
from nodes import metrics_reader_token


@pytest.mark.usefixtures("ccm_cp")  # static-pod/rbac.yaml applied
def test_metrics_need_a_token_rbac_allows(cp):
    scraper = metrics_reader_token(cp, "prometheus")
    nobody = cp.service_account_token("nobody")
    port = free_port()
    d = Daemon(["--kubeconfig", cp.kubeconfig("cloud-controller-manager"),
                "--secure-port=%d" % port, "--bind-address=127.0.0.1"])
    try:
        d.wait_for("Started leading", timeout=20)
        assert probe(port, "/metrics")[0] == 401
        assert probe(port, "/metrics", "not-a-token-at-all-xyz")[0] == 401
        code, body = probe(port, "/metrics", nobody)
        assert code == 403, body
        code, body = probe(port, "/metrics", scraper)
        assert code == 200, body
        assert "bootccm_build_info" in body
    finally:
        rc, out = d.stop()
    for token in (scraper, nobody):
        assert token not in out
    # and no call of bootccm's own was refused by the real authorizer
    assert "forbidden" not in out.lower(), out
