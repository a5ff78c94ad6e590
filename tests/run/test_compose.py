"""One composition root (agent/run/compose.py): `sync` and `run` given the same inputs build the same
run - the same zone-API token to the same instances, the same state store, the same options, commit
statuses and alerts - and what was only one verb's (--batch, statuses, alerts) is both verbs'."""

from __future__ import annotations

import base64
import json
import pathlib
import shutil
from typing import Any

import pytest

from agent import cli
from agent.cli import sync
from agent.clients import commitstatus, statestore
from agent.desired import hierarchy
from agent.outcome import forge
from agent.run import agent as run_agent
from agent.run import compose
from agent.run import options as run_options
from agent.run import settings as config
from tests.conftest import load_dir
from tests.support.procs import free_port
from tests.support.recorder import Recorder

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample-repo"  # its two instances are in dns-system


class NoCluster:
    """A cluster client that finds nothing: enough to say where each instance is reached, and with
    which token (the RNDC Secrets and the Services' Endpoints are then missing)."""

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return None

    def list(self, kind: str, **_: Any) -> list[dict[str, Any]]:
        return []  # no agent pods either


def _token(tmp_path: pathlib.Path) -> pathlib.Path:
    """A projected ServiceAccount token bound to the zone API's audience (its signature is the zone API's business)."""
    claims = base64.urlsafe_b64encode(json.dumps({"aud": ["bindcar"]}).encode()).decode().rstrip("=")
    path = tmp_path / "zone-api-token"
    path.write_text(f"eyJhbGciOiJSUzI1NiJ9.{claims}.c2lnbmF0dXJl\n")
    return path


def _kubeconfig(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                    "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                    "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n")
    return path


def _sync_request(*argv: str) -> compose.Request:
    line = ["sync", *argv]
    args = cli._parser(line).parse_args(line)
    return sync.request(args)


def _run_request(**settings: Any) -> compose.Request:
    return compose.from_settings(config.load_settings(settings, environ={}))


def _tokens(request: compose.Request) -> dict[str, str]:
    reach = compose.zone_endpoints(request, NoCluster())  # type: ignore[arg-type]
    assert isinstance(reach, run_options.InCluster)
    found = run_options.endpoints(reach, hierarchy.build(load_dir(SAMPLE)), NoCluster(), request.options)  # type: ignore[arg-type]
    return {name: e.token for name, e in found.items()}


@pytest.mark.parametrize("allowed", ["dns-system", "elsewhere"])
def test_sync_and_run_send_the_zone_api_token_to_the_same_instances_only_in_allowed_namespaces(
        tmp_path: pathlib.Path, allowed: str) -> None:
    token, kubeconfig = _token(tmp_path), _kubeconfig(tmp_path)
    by_sync = _tokens(_sync_request(str(SAMPLE), "--kubeconfig", str(kubeconfig), "--in-cluster-dns",
                                    "--zone-api-token-file", str(token), "--allowed-namespaces", allowed))
    by_run = _tokens(_run_request(repo="https://git.example/dns.git", kubeconfig=str(kubeconfig), in_cluster_dns=True,
                                  zone_api_token_file=str(token), allowed_namespaces=allowed))
    sent = token.read_text().strip() if allowed == "dns-system" else ""
    assert by_sync == by_run == {name: sent for name in by_sync}
    assert sorted(by_sync) == ["dns-system/dns-primary-0", "dns-system/dns-secondary-0"]


@pytest.mark.parametrize("named", [True, False])
def test_sync_and_run_keep_their_state_in_the_same_place(tmp_path: pathlib.Path, named: bool) -> None:
    """A cluster's ConfigMap, unless the user names a state directory: then that directory, for both."""
    kubeconfig, state = _kubeconfig(tmp_path), tmp_path / "state"
    flags = ["--state", str(state)] if named else []
    by_sync = compose.store(_sync_request(str(SAMPLE), "--kubeconfig", str(kubeconfig), *flags),
                            NoCluster())  # type: ignore[arg-type]
    by_run = compose.store(_run_request(repo="https://git.example/dns.git", kubeconfig=str(kubeconfig),
                                        **({"state": str(state)} if named else {})), NoCluster())  # type: ignore[arg-type]
    if named:
        assert isinstance(by_sync, statestore.FileStore) and isinstance(by_run, statestore.FileStore)
        assert by_sync.root == by_run.root == state
    else:
        assert isinstance(by_sync, statestore.ConfigMapStore) and isinstance(by_run, statestore.ConfigMapStore)


def test_run_with_a_cluster_and_a_named_state_directory_keeps_its_state_there(tmp_path: pathlib.Path) -> None:
    """Before, `run` used the cluster's ConfigMap and ignored --state, while `sync` used the directory."""
    state = tmp_path / "state"
    settings = config.load_settings({"repo": str(tmp_path / "none"), "cache": str(tmp_path / "cache"),
                                     "kubeconfig": str(_kubeconfig(tmp_path)), "state": str(state),
                                     "leader_election": False, "listen": f"127.0.0.1:{free_port()}"}, environ={})
    agent = run_agent.Agent(settings)  # reads its state as it starts: from the directory, the cluster is never asked
    try:
        assert isinstance(agent.store, statestore.FileStore) and agent.store.root == state
    finally:
        agent.http_stop.set()
        agent.httpd.serve(agent.http_stop)  # closes its socket at once: never started
        assert agent.api is not None
        agent.api.close()


SAME = {"force": True, "allow_prune": True, "delete_threshold_percent": 50, "batch": 7, "deadline": 99.0,
        "create_namespaces": True, "install_crds": False, "push_notes": False, "resync_after": 120.0,
        "agent_namespace": "agents", "namespace": "team-a", "max_transfer_bytes": 4096, "max_transfer_records": 64,
        "allowed_namespaces": ["team-a", "dns-system"], "pod_security": "baseline",
        "commit_status": "gitea", "commit_status_token_file": "/dev/null", "commit_status_context": "dns",
        "report_url": "https://ops.example/{revision}", "alert_webhook_url": "https://hooks.example/a",
        "notify_timeout": 5.0, "notify_retries": 1}


def _argv(values: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for name, value in values.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            out.append(flag)
        elif value is False:
            out.append("--no-" + name.replace("_", "-"))
        else:
            out += [flag, ",".join(value) if isinstance(value, list) else str(value)]
    return out


def test_the_same_flags_and_settings_give_the_same_options_statuses_and_alerts(tmp_path: pathlib.Path) -> None:
    repo, endpoints = "https://gitea.example/acme/dns.git", tmp_path / "map"
    endpoints.write_text("instances: {}\n")
    by_sync = _sync_request("--repo", repo, "--endpoints", str(endpoints), *_argv(SAME))
    by_run = _run_request(repo=repo, endpoints=str(endpoints), **SAME)
    assert by_sync.options == by_run.options
    assert (by_sync.options.batch, by_sync.options.deadline, by_sync.options.policy.delete_threshold) == (7, 99.0, 0.5)
    assert by_sync.forge == by_run.forge is not None and by_sync.forge.context == "dns"
    assert by_sync.alerts == by_run.alerts is not None
    assert by_sync.git == by_run.git


def test_a_run_with_commit_statuses_is_given_the_pending_one_its_writes_begin_with(tmp_path: pathlib.Path) -> None:
    store = statestore.FileStore(tmp_path / "state")
    settings = forge.configure("gitea", repo="https://gitea.example/acme/dns.git", token_file=tmp_path / "token")
    assert run_options.Targets(store, forge=settings).pending == commitstatus.CommitStatus(
        settings, "pending", "applying this commit")
    assert run_options.Targets(store).pending is None  # statuses off: nothing is posted when the writes begin


def test_run_takes_batch_as_sync_does(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--print-config", "--repo", "https://git.example/dns.git", "--batch", "7"]) == 0
    assert json.loads(capsys.readouterr().out)["batch"] == 7
    assert _run_request(repo="x", batch="7").options.batch == 7


def test_a_commit_status_needs_a_commit(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["sync", str(SAMPLE), "--endpoints", str(SAMPLE / "README.md"), "--commit-status", "github"]) == 2
    assert "--commit-status posts a status on a commit: it needs --repo" in capsys.readouterr().err


def test_a_bad_announcement_flag_is_a_usage_error_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["sync", "--repo", "https://github.com/acme/dns.git", "--endpoints", str(SAMPLE / "README.md"),
                     "--commit-status", "svn"]) == 2
    err = capsys.readouterr().err
    assert "setting commit_status" in err and "--commit-status" in err and "Traceback" not in err


def test_sync_alerts_on_a_rejected_revision(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Alerts were `run`'s only: a sync of an invalid revision now sends the refusal alert too."""
    repo = tmp_path / "repo"
    shutil.copytree(SAMPLE, repo)
    zone = repo / "zones" / "internal.yaml"
    zone.write_text(zone.read_text().replace("spec:", "spec:\n  notAField: 1", 1))
    endpoints = tmp_path / "endpoints.yaml"
    endpoints.write_text("instances: {}\n")
    with Recorder() as hook:
        status = cli.main(["sync", str(repo), "--endpoints", str(endpoints), "--state", str(tmp_path / "state"),
                           "--alert-webhook-url", hook.url + "/alerts"])
    assert status == 2, capsys.readouterr().err
    [alert] = hook.received
    assert (alert.path, alert.json()["event"], alert.json()["outcome"]) == ("/alerts", "refusal", "rejected")
