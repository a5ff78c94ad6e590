"""What an instance's status says when its image cannot be pulled (issue 26, pull secrets): the
kubelet's ErrImagePull message is containerd's error chain, whose cause comes last (`401
Unauthorized` for a missing Secret or a wrong password, `not found` for a wrong tag); the status keeps
it, however long the image name. The message is the one measured on the e2e node
(tests/e2e/test_pull_secrets_node.py)."""

from __future__ import annotations

from typing import Any

from agent.outcome import conditions, pods

IMAGE = "docker.io/internetsystemsconsortium/bind9:e2e-pull-b30d72fcf533"
UNAUTHORIZED = (f'rpc error: code = Unknown desc = failed to pull and unpack image "{IMAGE}": failed to resolve '
                f'reference "{IMAGE}": pulling from host 127.0.0.1:48997 failed with status code '
                "[manifests e2e-pull-b30d72fcf533]: 401 Unauthorized")


def _pod(message: str) -> dict[str, Any]:
    return {"metadata": {"name": "dns-primary-0-6c9f7d-x2x7q"}, "status": {"phase": "Pending", "containerStatuses": [
        {"name": "bind9", "ready": False, "image": IMAGE, "imageID": "",
         "state": {"waiting": {"reason": "ErrImagePull", "message": message}}}]}}


def _deployment() -> dict[str, Any]:
    return {"spec": {"replicas": 1}, "status": {"replicas": 1, "unavailableReplicas": 1}}


def test_the_cause_at_the_end_of_a_long_pull_error_is_in_the_status() -> None:
    assert len(UNAUTHORIZED) > pods.MESSAGE_LIMIT
    ready = conditions.readiness(_deployment(), [_pod(UNAUTHORIZED)])[0]
    assert ready["status"] == "False"
    assert ready["message"].endswith("[manifests e2e-pull-b30d72fcf533]: 401 Unauthorized"), ready["message"]
    assert ready["message"].startswith("Waiting for pods to become ready: pod dns-primary-0-6c9f7d-x2x7q: "
                                       "ErrImagePull: container bind9: rpc error: code = Unknown desc = failed to "
                                       "pull and unpack image"), ready["message"]


def test_a_long_message_keeps_its_start_and_end_within_the_limit() -> None:
    text = "start " + "x" * 2000 + " the cause"
    found = pods.problem([_pod(text)])
    assert found is not None
    detail = found.detail.removeprefix("container bind9: ")
    assert len(detail) == pods.MESSAGE_LIMIT and detail.startswith("start x") and detail.endswith("x the cause")
    assert " ... " in detail
    short = "a short message that fits"
    assert pods.problem([_pod(short)]).detail == f"container bind9: {short}"  # type: ignore[union-attr]
