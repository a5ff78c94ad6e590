"""A zone's hash: the same RRsets in any order give the same digest, a TTL or an rdata changes it,
and a long-running agent hashes again only the zones a commit changed."""

from __future__ import annotations

import pathlib
import shutil

import git
import pytest

from agent.desired import zonehash
from agent.model.limits import Limits
from agent.model.rrset import RRset
from agent.run import planner
from agent.run.memory import Memory
from agent.sources import gittree

SAMPLE = pathlib.Path(__file__).resolve().parents[2] / "sample-repo"
Z = "example.com."


def _rrsets(*sets: RRset) -> dict[tuple[str, str], RRset]:
    return {rr.key: rr for rr in sets}


WWW = RRset(Z, f"www.{Z}", "A", 300, ("192.0.2.1", "192.0.2.2"))
MAIL = RRset(Z, Z, "MX", 3600, ("10 mail.example.com.",))
TXT = RRset(Z, Z, "TXT", 3600, ('"v=spf1 -all"',))


def test_the_digest_is_short_prefixed_and_independent_of_order() -> None:
    one = zonehash.digest(_rrsets(WWW, MAIL, TXT))
    assert one.startswith("sha256:") and len(one) == len("sha256:") + 16
    assert zonehash.digest(_rrsets(TXT, WWW, MAIL)) == one
    swapped = RRset(Z, f"www.{Z}", "A", 300, ("192.0.2.2", "192.0.2.1"))  # rdatas in another order
    assert zonehash.digest(_rrsets(MAIL, swapped, TXT)) == one


@pytest.mark.parametrize("changed", [
    RRset(Z, f"www.{Z}", "A", 301, ("192.0.2.1", "192.0.2.2")),  # the TTL
    RRset(Z, f"www.{Z}", "A", 300, ("192.0.2.1", "192.0.2.3")),  # one rdata
    RRset(Z, f"www.{Z}", "A", 300, ("192.0.2.1",)),  # one rdata fewer
    RRset(Z, f"web.{Z}", "A", 300, ("192.0.2.1", "192.0.2.2")),  # the owner
    RRset(Z, f"www.{Z}", "AAAA", 300, ("192.0.2.1", "192.0.2.2")),  # the type
])
def test_a_ttl_an_rdata_an_owner_or_a_type_changes_the_digest(changed: RRset) -> None:
    assert zonehash.digest(_rrsets(changed, MAIL, TXT)) != zonehash.digest(_rrsets(WWW, MAIL, TXT))


def test_an_rrset_more_or_less_changes_the_digest_and_no_rrsets_have_one_too() -> None:
    assert zonehash.digest(_rrsets(WWW, MAIL)) != zonehash.digest(_rrsets(WWW, MAIL, TXT))
    assert zonehash.digest({}).startswith("sha256:")


def _commit(repo: git.Repo, message: str) -> None:
    repo.git.add("-A")
    repo.git.commit("-q", "-m", message)


def test_a_one_record_commit_hashes_only_its_zone_again(tmp_path: pathlib.Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(SAMPLE, tmp_path / "repo")
    repo = git.Repo.init(tmp_path / "repo")
    repo.git.config("user.name", "t")
    repo.git.config("user.email", "t@example.com")
    _commit(repo, "sample")
    memory, listing = Memory(), gittree.Listing()
    options = planner.Options(default_namespace="dns-system")
    hashed: list[int] = []
    digest = zonehash.digest
    monkeypatch.setattr(zonehash, "digest", lambda rrsets: hashed.append(len(rrsets))
                        or digest(rrsets))

    def zones() -> dict[str, str]:
        done = planner.validate(gittree.files(repo, "HEAD", listing), options, limits=Limits(),
                                memory=memory)
        assert done.desired is not None
        return {z.name: zonehash.of(z) for z in done.desired.zones}

    try:
        first = zones()
        assert len(hashed) == len(first) == 3
        hashed.clear()
        assert zones() == first and hashed == []  # nothing changed: nothing hashed again
        site = tmp_path / "repo" / "records" / "example-org" / "site.yaml"
        site.write_text(site.read_text().replace("198.51.100.80", "198.51.100.81"))
        _commit(repo, "one record")
        second = zones()
    finally:
        repo.close()
    assert len(hashed) == 1  # the changed zone only
    assert second["example.org."] != first["example.org."]
    assert {n: h for n, h in second.items() if n != "example.org."} == {
        n: h for n, h in first.items() if n != "example.org."}
