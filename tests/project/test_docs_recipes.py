"""Recipes the docs give a user to copy, run as written: the webhook page's signed test delivery reaches the
agent's own webhook endpoint and is accepted (and refused with another secret), and its Ingress sends only
/hooks/git to the Service deploy/ installs."""

from __future__ import annotations

import pathlib
import re
import subprocess
import threading
import wsgiref.simple_server
from collections.abc import Iterator

import prometheus_client
import pytest
import yaml

from agent.run import webhook
from tests.conftest import ROOT

PAGE = ROOT / "docs" / "webhooks.md"
DOC_URL = "https://dns-hook.example.com/hooks/git"


class _Quiet(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # the request log: not wanted in test output
        pass


@pytest.fixture
def endpoint(tmp_path: pathlib.Path) -> Iterator[tuple[str, list[int], pathlib.Path]]:
    """The agent's webhook application with a secret written as the docs write it (`openssl rand -hex 32 >
    webhook-secret`), served on loopback: its URL, the deliveries it accepted, the secret file."""
    secret_file = tmp_path / "webhook-secret"
    subprocess.run(f"openssl rand -hex 32 > {secret_file}", shell=True, check=True)
    accepted: list[int] = []
    app = webhook.App(alive=lambda: True, ready=lambda: True, exposition=lambda: b"",
                      secret=webhook.read_secret(secret_file),
                      deliveries=prometheus_client.Counter("docs_recipe_deliveries", "test", ["result"],
                                                           registry=prometheus_client.CollectorRegistry()),
                      on_delivery=lambda: accepted.append(1))
    server = wsgiref.simple_server.make_server("127.0.0.1", 0, app, handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hooks/git", accepted, secret_file
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _recipe() -> str:
    """The shell lines under "Testing it"."""
    section = PAGE.read_text().split("## Testing it", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"\n((?: {4}.*\n)+)", section)
    assert block, "the Testing it section shows a command"
    return "\n".join(line[4:] for line in block.group(1).splitlines())


def test_the_webhook_pages_signed_test_delivery_is_accepted_by_the_agent(
        endpoint: tuple[str, list[int], pathlib.Path]) -> None:
    url, accepted, secret_file = endpoint
    recipe = _recipe()
    assert DOC_URL in recipe
    done = subprocess.run(["bash", "-c", recipe.replace(DOC_URL, url)], capture_output=True, text=True,
                          cwd=secret_file.parent, check=False, timeout=60)
    assert re.search(r"^HTTP/1\.[01] 202 Accepted", done.stdout, re.MULTILINE), done.stdout + done.stderr
    assert "sync requested" in done.stdout and accepted == [1]


def test_the_same_recipe_with_another_secret_is_refused(endpoint: tuple[str, list[int], pathlib.Path]) -> None:
    url, accepted, secret_file = endpoint
    (secret_file.parent / "other").mkdir()
    subprocess.run("openssl rand -hex 32 > other/webhook-secret", shell=True, check=True, cwd=secret_file.parent)
    done = subprocess.run(["bash", "-c", _recipe().replace(DOC_URL, url)], capture_output=True, text=True,
                          cwd=secret_file.parent / "other", check=False, timeout=60)
    assert re.search(r"^HTTP/1\.[01] 401 ", done.stdout, re.MULTILINE), done.stdout
    assert accepted == []


def test_the_webhook_pages_ingress_exposes_only_the_hook_of_the_service_deploy_installs() -> None:
    blocks = re.findall(r"```yaml\n(.*?)\n```", PAGE.read_text(), re.DOTALL)
    ingress = next(yaml.safe_load(b) for b in blocks if "kind: Ingress" in b)
    service = next(d for d in yaml.safe_load_all((ROOT / "deploy" / "service.yaml").read_text())
                   if d["metadata"]["name"] == "bindy-agent")
    assert ingress["apiVersion"] == "networking.k8s.io/v1"
    assert ingress["metadata"]["namespace"] == service["metadata"]["namespace"]
    paths = [p for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]]
    assert [(p["path"], p["pathType"]) for p in paths] == [("/hooks/git", "Exact")]
    backend = paths[0]["backend"]["service"]
    assert (backend["name"], backend["port"]["number"]) == ("bindy-agent", service["spec"]["ports"][0]["port"])
