"""The zone HTTP API (bindcar) gets an audience-bound projected ServiceAccount token, never the
agent's Kubernetes API token: tokens minted by the real API server's TokenRequest API, as the
kubelet projects them (issue 15, "credentials go only where they belong")."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from agent.clients import endpoints
from agent.clients.kubeapi import KubeApi
from agent.errors import ConfigError, KubeError
from tests.support.kube import KubeCluster, service_account_token, token_client


@pytest.fixture
def account(kube_client: Any, namespace: str) -> tuple[str, str]:
    from kubernetes import client

    client.CoreV1Api(kube_client).create_namespaced_service_account(
        namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="agent")))
    return namespace, "agent"


def test_the_zone_api_token_is_bound_to_its_audience_and_useless_against_kubernetes(
        kube: KubeCluster, kube_client: Any, account: tuple[str, str], tmp_path: pathlib.Path) -> None:
    bound = service_account_token(kube_client, *account, audiences=["bindcar"])
    path = tmp_path / "token"
    path.write_text(bound + "\n")
    assert endpoints.zone_api_token(path) == bound
    with pytest.raises(KubeError) as rejected:  # a zone API that replays it gets nowhere
        KubeApi(token_client(kube, bound)).get("Namespace", None, account[0])
    assert rejected.value.reason == "unauthorized"
    # what bindcar's TokenReview mode asks the API server: who is this, for audience bindcar?
    assert _review(kube_client, bound) == (True, f"system:serviceaccount:{account[0]}:{account[1]}")
    assert _review(kube_client, service_account_token(kube_client, *account))[0] is False


def _review(kube_client: Any, token: str) -> tuple[bool, str]:
    from kubernetes import client

    review = client.AuthenticationV1Api(kube_client).create_token_review(client.V1TokenReview(
        spec=client.V1TokenReviewSpec(token=token, audiences=[endpoints.ZONE_API_AUDIENCE])))
    user = review.status.user.username if review.status.user else ""
    return bool(review.status.authenticated), user or ""


def test_the_kubernetes_api_token_is_never_sent_to_a_zone_api(
        kube: KubeCluster, kube_client: Any, account: tuple[str, str], tmp_path: pathlib.Path) -> None:
    api_token = service_account_token(kube_client, *account)  # what is automounted for the API server
    with pytest.raises(KubeError) as known:  # the API server knows it (authenticated, merely not authorized)
        KubeApi(token_client(kube, api_token)).get("Namespace", None, "default")
    assert known.value.reason == "forbidden"
    path = tmp_path / "token"
    path.write_text(api_token)
    with pytest.raises(ConfigError) as refused:
        endpoints.zone_api_token(path)
    assert "expected a projected ServiceAccount token with audience 'bindcar'" in str(refused.value)
    assert api_token not in str(refused.value)
    path.write_text("a-static-secret")
    with pytest.raises(ConfigError, match="not a ServiceAccount token"):
        endpoints.zone_api_token(path)
    with pytest.raises(ConfigError, match="that is the agent's Kubernetes API token"):
        endpoints.zone_api_token(endpoints.SERVICE_ACCOUNT_DIR / "token")


def test_without_a_token_file_no_token_is_sent(tmp_path: pathlib.Path) -> None:
    assert endpoints.zone_api_token(tmp_path / "absent") == ""
