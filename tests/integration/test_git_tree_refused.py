"""A pushed commit whose tree git itself would refuse (an entry named
`records/example-com/web.yaml`, slash and all, beside the real file) is rejected by the agent's Git
sync: nothing of it is applied, the last good revision keeps serving, the report names the commit
and the tree, and the next good commit - whose history holds the bad one - applies."""

from __future__ import annotations

import pathlib

import pytest

from agent.clients import endpoints as config
from agent.clients import rfc2136 as records
from agent.clients.statestore import FileStore
from agent.outcome import report
from agent.run import orchestrator
from agent.sources.git import GitSource
from tests.support import agentrun, dnsrepo, rawtree
from tests.support import bind as bind_support
from tests.support.gitremote import GitRemote
from tests.support.rawtree import WEB

pytestmark = pytest.mark.integration


def test_a_tree_git_would_refuse_is_rejected_and_the_next_commit_applies(
        tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: object) -> None:
    sample, tag = dnsrepo.unique_sample(tmp_path / "sample")
    endpoints = config.load_endpoints(dnsrepo.endpoint_map(tmp_path, bind, zone_api))  # type: ignore[arg-type]
    remote = git_remote
    remote.commit("Initial DNS", {str(p.relative_to(sample)): p.read_text() for p in sample.rglob("*.yaml")})
    remote.push()
    source = GitSource(remote.url, tmp_path / "cache")  # one source for every run, as `bindy-agent run` keeps it
    store = FileStore(tmp_path / "state.json")

    def sync() -> orchestrator.RunOutcome:
        return agentrun.sync_git(source, store=store, endpoints=endpoints)

    assert sync().outcome == "applied"
    primary, www = endpoints["dns-system/dns-primary-0"], f"www.example-{tag}.com."
    assert records.query(primary, www, "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.12")

    web = (remote.work / WEB).read_text()
    bad = rawtree.commit_on_main(remote.work, rawtree.with_slash_name(remote.work, web.replace(
        "192.0.2.10", "192.0.2.66")), "a tree with a slash in a name")
    remote.push()
    assert "192.0.2.66" not in rawtree.git(remote.work, "show", f"{bad}:{WEB}")  # what git shows there
    run = sync()
    assert run.outcome == "rejected" and run.revision == bad
    assert records.query(primary, www, "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.12")
    note = report.parse(remote.note_seen_by_a_fresh_clone(tmp_path / "fresh", bad))
    assert note["outcome"] == "rejected" and note["changes"] == []
    assert any(f"of commit {bad[:12]} has an entry with the name '{WEB}'" in p["message"] for p in note["problems"])

    fixed = remote.commit("Fix: new front end", {WEB: web.replace("192.0.2.10", "192.0.2.20")})
    remote.push()
    assert rawtree.git(remote.work, "rev-parse", "HEAD^") == bad
    run = sync()
    assert run.outcome == "applied" and run.revision == fixed
    assert records.query(primary, www, "A") == ("192.0.2.11", "192.0.2.12", "192.0.2.20")
