"""From a real Git remote to applied state, with a report note on every commit handled."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest
from kubernetes import client

from agent.clients import axfr
from agent.clients import endpoints as config
from agent.clients import rfc2136 as records
from agent.clients.kubeapi import KubeApi
from agent.clients.statestore import ConfigMapStore, FileStore
from agent.load import loader
from agent.outcome import report
from agent.run import orchestrator
from agent.sources.git import GitSource
from tests.conftest import ROOT
from tests.support import agentrun, dnsrepo
from tests.support import bind as bind_support
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster


def _files(root: pathlib.Path) -> dict[str, str | None]:
    return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*.yaml")}


@pytest.fixture
def world(tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any) -> dict[str, Any]:
    sample, tag = dnsrepo.unique_sample(tmp_path / "sample")
    endpoints_file = dnsrepo.endpoint_map(tmp_path, bind, zone_api)
    return {"remote": git_remote, "files": _files(sample), "tag": tag, "endpoints_file": endpoints_file,
            "endpoints": config.load_endpoints(endpoints_file), "state": tmp_path / "state.json",
            "cache": tmp_path / "cache", "tmp": tmp_path}


def _source(world: dict[str, Any]) -> GitSource:
    return GitSource(world["remote"].url, world["cache"])


def _sync(world: dict[str, Any], **kwargs: Any) -> orchestrator.RunOutcome:
    return agentrun.sync_git(_source(world), store=FileStore(world["state"]), endpoints=world["endpoints"],
                           **kwargs)


def _zone_snapshot(world: dict[str, Any]) -> dict[Any, Any]:
    primary = world["endpoints"]["dns-system/dns-primary-0"]
    tag = world["tag"]
    return {z: axfr.read_zone(primary, z) for z in (f"example-{tag}.com.", f"example-{tag}.org.")}


def _note_from_fresh_clone(world: dict[str, Any], sha: str) -> str:
    return str(world["remote"].note_seen_by_a_fresh_clone(world["tmp"] / f"fresh-{sha[:8]}", sha))


def test_a_pushed_commit_is_applied_and_its_note_is_readable_with_plain_git(world: dict[str, Any]) -> None:
    remote = world["remote"]
    sha = remote.commit("Add DNS for example", world["files"])
    remote.push()
    key = world["tmp"] / "report.key"
    key.write_text("a report key of more than 32 characters\n")
    signed = ["--report-key-file", str(key)]
    cli = [sys.executable, "-m", "agent", "sync", "--repo", remote.url, "--endpoints", str(world["endpoints_file"]),
           "--state", str(world["state"]), "--cache", str(world["cache"]), *signed]
    done = subprocess.run(cli, capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    primary = world["endpoints"]["dns-system/dns-primary-0"]
    assert records.query(primary, f"www.example-{world['tag']}.com.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.12")

    note = _note_from_fresh_clone(world, sha)
    assert note.startswith(f'bindy-agent: applied {sha[:12]} "Add DNS for example" (Test Author <author@example.com>)')
    doc = report.parse(note)
    assert (doc["outcome"], doc["revision"], doc["summary"]["rrsetChanges"]) == ("applied", sha, 21)
    assert doc["summary"]["verified"] == doc["summary"]["checks"] == 42
    assert all(c["result"] == "applied" for c in doc["changes"])

    shown = subprocess.run([sys.executable, "-m", "agent", "report", "--repo", remote.url, "--cache",
                            str(world["tmp"] / "report-cache"), *signed], capture_output=True, text=True, cwd=ROOT,
                           check=False)
    assert shown.returncode == 0 and shown.stdout.startswith("bindy-agent: applied")
    assert shown.stdout.endswith("verified: signed with the report key\n")
    as_json = subprocess.run([sys.executable, "-m", "agent", "report", sha, "--repo", remote.url, "-o", "json",
                              "--cache", str(world["tmp"] / "report-cache"), *signed], capture_output=True, text=True,
                             cwd=ROOT, check=False)
    assert (json.loads(as_json.stdout)["outcome"], json.loads(as_json.stdout)["verified"]) == ("applied", True)


def test_bad_commits_are_rejected_change_nothing_and_the_fix_applies(
        world: dict[str, Any], kube: KubeCluster, namespace: str) -> None:
    remote, tag = world["remote"], world["tag"]
    files = {k: v.replace("dns-system", namespace) if v else v for k, v in world["files"].items()}
    endpoints = {k.replace("dns-system", namespace): dataclasses.replace(v, instance=k.replace("dns-system", namespace))
                 for k, v in world["endpoints"].items()}
    world["endpoints"] = {**world["endpoints"], **endpoints}
    api = KubeApi.from_kubeconfig(str(kube.kubeconfig))

    def sync(api: KubeApi) -> orchestrator.RunOutcome:
        return agentrun.sync_git(_source(world), store=ConfigMapStore(api, namespace), kube_api=api,
                               endpoints=endpoints, agent_namespace=namespace)

    remote.commit("Initial DNS", files)
    remote.push()
    assert sync(api).outcome == "applied"
    before = _zone_snapshot(world)

    web = "records/example-com/web.yaml"
    bad_commits = [
        ("Broken YAML", {web: files[web] + "---\nkind: [unclosed\n"},
         f"{web}:50: YAML syntax error: while parsing a flow sequence (opened at line 49)"),
        ("Schema error", {web: files[web].replace("  ttl: 300\n  ipv4Addresses:", "  ttl: soon\n  ipv4Addresses:")},
         f"{web}:10: ARecord/{namespace}/www: spec.ttl: must be an integer (the API server checks types strictly), not the string 'soon'"),
        ("CNAME conflict", {web: files[web] + f"""---
apiVersion: bindy.firestoned.io/v1beta1
kind: CNAMERecord
metadata: {{name: www-alias, namespace: {namespace}, labels: {{zone: example-com}}}}
spec: {{name: www, target: shop.example-{tag}.com.}}
"""}, "a CNAME cannot share its name with other records (A, AAAA)"),
    ]
    for subject, change, expected in bad_commits:
        sha = remote.commit(subject, {**files, **change})
        remote.push()
        checker = KubeApi.from_kubeconfig(str(kube.kubeconfig))
        run = sync(checker)
        assert run.outcome == "rejected" and run.revision == sha
        # nothing applied or deleted: the only writes are CR statuses and Events saying why, and the state
        assert set(checker.writes) == {"PATCH", "POST"} and "DELETE" not in checker.writes
        assert len(list(client.CustomObjectsApi(kube.api_client()).list_namespaced_custom_object(
            "bindy.firestoned.io", "v1beta1", namespace, "arecords")["items"])) == 8
        www = client.CustomObjectsApi(kube.api_client()).get_namespaced_custom_object(
            "bindy.firestoned.io", "v1beta1", namespace, "arecords", "www")
        progressing = next(c for c in www["status"]["conditions"] if c["type"] == "Progressing")
        assert (progressing["status"], progressing["reason"]) == ("False", "RevisionRejected")
        assert progressing["message"].startswith(f"revision {sha[:12]} rejected: ")
        assert next(c for c in www["status"]["conditions"] if c["type"] == "Ready")["status"] == "True"
        zone = client.CustomObjectsApi(kube.api_client()).get_namespaced_custom_object(
            "bindy.firestoned.io", "v1beta1", namespace, "dnszones", "example-com")
        assert zone["status"]["lastAppliedRevision"] not in (None, sha)
        rejected = [e for e in client.CoreV1Api(kube.api_client()).list_namespaced_event(namespace).items
                    if e.reason == "RevisionRejected" and sha[:12] in e.message]
        assert {e.involved_object.name for e in rejected} >= {"www", "dns", "example-com"}
        assert _zone_snapshot(world) == before
        note = report.parse(_note_from_fresh_clone(world, sha))
        assert note["outcome"] == "rejected" and note["changes"] == []
        messages = [f"{p['file']}:{p['line']}: {p['object'] + ': ' if p['object'] else ''}"
                    f"{p['path'] + ': ' if p['path'] else ''}{p['message']}" for p in note["problems"]]
        assert any(expected in m for m in messages), (expected, messages)

    fixed = files[web].replace("    - 192.0.2.12\n", "    - 192.0.2.14\n")
    sha = remote.commit("Fix: new front end", {**files, web: fixed})
    remote.push()
    run = sync(api)
    assert run.outcome == "applied" and run.revision == sha
    assert records.query(world["endpoints"][f"{namespace}/dns-primary-0"], f"www.example-{tag}.com.", "A") == (
        "192.0.2.10", "192.0.2.11", "192.0.2.14")


def test_two_commits_before_a_sync_the_older_is_superseded(world: dict[str, Any]) -> None:
    remote = world["remote"]
    remote.commit("Initial DNS", world["files"])
    remote.push()
    assert _sync(world).outcome == "applied"
    web = "records/example-com/web.yaml"
    older = remote.commit("Step 1", {web: world["files"][web].replace("192.0.2.12", "192.0.2.21")})
    newer = remote.commit("Step 2", {web: world["files"][web].replace("192.0.2.12", "192.0.2.22")})
    remote.push()
    run = _sync(world)
    assert (run.outcome, run.revision, run.superseded) == ("applied", newer, [older])
    old_note = report.parse(_note_from_fresh_clone(world, older))
    assert (old_note["outcome"], old_note["supersededBy"]) == ("superseded", newer)
    assert report.parse(_note_from_fresh_clone(world, newer))["outcome"] == "applied"


def test_a_force_push_rewriting_history_is_followed(world: dict[str, Any]) -> None:
    remote, tag = world["remote"], world["tag"]
    remote.commit("Initial DNS", world["files"])
    remote.push()
    assert _sync(world).outcome == "applied"
    web = "records/example-com/web.yaml"
    remote.commit("Oops", {web: world["files"][web].replace("192.0.2.12", "192.0.2.66")})
    remote.push()
    assert _sync(world).outcome == "applied"
    rewritten = remote.rewrite_last("Oops (fixed)", {web: world["files"][web].replace("192.0.2.12", "192.0.2.77")})
    remote.push(force=True)
    run = _sync(world)
    assert (run.outcome, run.revision) == ("applied", rewritten)
    primary = world["endpoints"]["dns-system/dns-primary-0"]
    assert records.query(primary, f"www.example-{tag}.com.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.77")


def test_the_same_revision_twice_is_a_no_op_without_parsing_or_writes(
        world: dict[str, Any], kube: KubeCluster, namespace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    remote = world["remote"]
    files = {k: v.replace("dns-system", namespace) if v else v for k, v in world["files"].items()}
    remote.commit("Initial", files)
    remote.push()
    first_api = KubeApi.from_kubeconfig(str(kube.kubeconfig))
    store = ConfigMapStore(first_api, namespace)
    assert agentrun.sync_git(_source(world), store=store, kube_api=first_api, agent_namespace=namespace).outcome == "applied"

    loads: list[Any] = []
    real_load = loader.load_files
    monkeypatch.setattr(loader, "load_files", lambda *a, **k: loads.append(a) or real_load(*a, **k))
    fetch_head = world["cache"].glob("repo-*/.git/FETCH_HEAD")
    mtimes = [p.stat().st_mtime for p in fetch_head]
    api = KubeApi.from_kubeconfig(str(kube.kubeconfig))
    run = agentrun.sync_git(_source(world), store=ConfigMapStore(api, namespace), kube_api=api,
                          agent_namespace=namespace)
    assert (run.outcome, run.parsed, loads, api.write_count) == ("unchanged", False, [], 0)
    assert [p.stat().st_mtime for p in world["cache"].glob("repo-*/.git/FETCH_HEAD")] == mtimes  # no fetch


def test_a_pinned_tag_and_a_sub_path(world: dict[str, Any]) -> None:
    remote, tag = world["remote"], world["tag"]
    nested = {f"dns/{k}": v for k, v in world["files"].items()}
    pinned = remote.commit("Release 1", {**nested, "README.md": "not DNS\n"})
    remote.cmd("tag", "-a", "v1", "-m", "release 1")
    web = "dns/records/example-com/web.yaml"
    remote.commit("Later work", {web: nested[web].replace("192.0.2.12", "192.0.2.88")})
    remote.push()
    remote.cmd("push", "-q", "origin", "v1")
    source = GitSource(remote.url, world["cache"], ref="v1", path="dns")
    run = agentrun.sync_git(source, store=FileStore(world["state"]), endpoints=world["endpoints"])
    assert (run.outcome, run.revision) == ("applied", pinned)
    primary = world["endpoints"]["dns-system/dns-primary-0"]
    assert records.query(primary, f"www.example-{tag}.com.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.12")
    missing = GitSource(remote.url, world["tmp"] / "cache2", path="nope")
    assert agentrun.sync_git(missing, store=FileStore(world["tmp"] / "s2.json"), endpoints=world["endpoints"]).outcome \
        == "unreachable"


def test_https_token_auth_fetches_and_pushes_the_report(world: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    """Basic auth with the user x-access-token, as GitHub's git endpoint requires (GitLab and Gitea
    accept it too); `user:token` in the file for a forge that wants its own user."""
    from tests.support.githttp import GitHttpServer

    caplog.set_level("DEBUG")
    remote = world["remote"]
    sha = remote.commit("Initial DNS", world["files"])
    remote.push()
    subprocess.run(["git", "-C", str(remote.bare), "config", "http.receivepack", "true"], check=True)
    server = GitHttpServer(remote.bare.parent, "tok-123").start()
    try:
        token = world["tmp"] / "git-token"
        token.write_text("tok-123\n")
        source = GitSource(server.url(remote.bare.name), world["cache"], token_file=token)
        run = agentrun.sync_git(source, store=FileStore(world["state"]), endpoints=world["endpoints"])
        assert (run.outcome, run.revision, run.notes_pushed) == ("applied", sha, True)
        assert report.parse(_note_from_fresh_clone(world, sha))["outcome"] == "applied"  # pushed over HTTPS
        assert set(server.authorizations) == {server.expected}  # Basic on every request, never Bearer
        assert "tok-123" not in caplog.text and server.expected not in caplog.text

        token.write_text("wrong\n")
        denied = GitSource(server.url(remote.bare.name), world["tmp"] / "cache-denied", token_file=token)
        failed = agentrun.sync_git(denied, store=FileStore(world["tmp"] / "s-denied.json"),
                                 endpoints=world["endpoints"])
        assert failed.outcome == "unreachable" and "wrong" not in failed.message and "tok-123" not in failed.message
        assert "the server refused the credentials (check --token-file" in failed.message
        assert any(status == 401 for _, _, status in server.requests)
    finally:
        server.stop()

    gitlab = GitHttpServer(remote.bare.parent, "glpat-456", user="oauth2").start()
    try:
        token.write_text("oauth2:glpat-456\n")
        source = GitSource(gitlab.url(remote.bare.name), world["tmp"] / "cache-gitlab", token_file=token)
        run = agentrun.sync_git(source, store=FileStore(world["tmp"] / "s-gitlab.json"), endpoints=world["endpoints"],
                              push_notes=False)
        assert (run.outcome, run.revision) == ("applied", sha)
        assert set(gitlab.authorizations) == {gitlab.expected}
    finally:
        gitlab.stop()


def test_ssh_deploy_key_with_host_key_checking(world: dict[str, Any]) -> None:
    from agent.errors import ConfigError
    from tests.support.sshgit import SshGitServer

    remote = world["remote"]
    sha = remote.commit("Initial DNS", world["files"])
    remote.push()
    server = SshGitServer(world["tmp"] / "ssh").start()
    try:
        url = server.url(remote.bare)
        source = GitSource(url, world["cache"], ssh_key=server.client_key, known_hosts=server.known_hosts)
        run = agentrun.sync_git(source, store=FileStore(world["state"]), endpoints=world["endpoints"])
        assert (run.outcome, run.revision, run.notes_pushed) == ("applied", sha, True)
        assert report.parse(_note_from_fresh_clone(world, sha))["outcome"] == "applied"  # pushed over SSH

        impostor = GitSource(url, world["tmp"] / "cache-mitm", ssh_key=server.client_key,
                             known_hosts=server.wrong_known_hosts)
        refused = agentrun.sync_git(impostor, store=FileStore(world["tmp"] / "s-mitm.json"),
                                  endpoints=world["endpoints"])
        assert refused.outcome == "unreachable"
        assert "the server's SSH host key does not match --known-hosts" in refused.message
        with pytest.raises(ConfigError, match="needs --known-hosts"):
            GitSource(url, world["cache"], ssh_key=server.client_key)
    finally:
        server.stop()


def test_each_run_posts_its_commit_status_and_alerts_on_refusal_and_recovery(world: dict[str, Any]) -> None:
    from agent.outcome import forge, notify
    from tests.support.recorder import Recorder

    remote = world["remote"]
    token = world["tmp"] / "forge-token"
    token.write_text("forge-secret\n")
    with Recorder() as server:
        statuses = forge.configure("github", repo="https://github.com/acme/dns.git", token_file=token,
                                   api_url=server.url)
        alerts = notify.NotifySettings(webhook_url=server.url + "/alerts")

        def sync() -> orchestrator.RunOutcome:
            return agentrun.sync_git(_source(world), store=FileStore(world["state"]), endpoints=world["endpoints"],
                                     forge=statuses, alerts=alerts)

        good = remote.commit("Initial DNS", world["files"])
        remote.push()
        assert sync().outcome == "applied"
        posted = [(r.path, r.json()["state"]) for r in server.received if "/statuses/" in r.path]
        assert posted == [(f"/repos/acme/dns/statuses/{good}", "pending"), (f"/repos/acme/dns/statuses/{good}", "success")]
        assert not [r for r in server.received if r.path == "/alerts"]  # nothing to say about a plain success

        web = "records/example-com/web.yaml"
        bad = remote.commit("Broken", {web: world["files"][web] + "---\nkind: [unclosed\n"})
        remote.push()
        assert sync().outcome == "rejected"
        # pending is posted once the gate passed a commit: an invalid one gets only its final status
        assert [r.json()["state"] for r in server.received if r.path.endswith(bad)] == ["error"]
        assert [r.json()["event"] for r in server.received if r.path == "/alerts"] == ["refusal"]

        dropped = {rel: None for rel in world["files"] if rel.startswith("records/example-com/")}
        unsafe = remote.commit("Drop example.com's records", {web: world["files"][web], **dropped})
        remote.push()
        refused = sync()
        assert refused.outcome == "rejected" and refused.refusals, refused.message
        assert [r.json()["state"] for r in server.received if r.path.endswith(unsafe)] == ["error"]  # so does a refused one
        assert [r.json()["event"] for r in server.received if r.path == "/alerts"] == ["refusal", "refusal"]

        fixed = remote.commit("Fixed", {**{rel: world["files"][rel] for rel in dropped},
                                        web: world["files"][web].replace("192.0.2.12", "192.0.2.31")})
        remote.push()
        assert sync().outcome == "applied"
        assert [r.json()["state"] for r in server.received if r.path.endswith(fixed)] == ["pending", "success"]
        assert [r.json()["event"] for r in server.received if r.path == "/alerts"] == ["refusal", "refusal", "recovery"]
        assert all("forge-secret" not in r.body.decode() for r in server.received)
