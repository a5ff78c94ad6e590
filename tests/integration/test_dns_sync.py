"""Zones and records follow Git on real named (primary + secondary) through the zone API server."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time
from typing import Any

import dns.query
import dns.rcode
import dns.tsigkeyring
import dns.update
import pytest

from agent.clients import axfr
from agent.clients import endpoints as config
from agent.clients import rfc2136 as records
from agent.clients.statestore import FileStore
from agent.desired import hierarchy as desired
from agent.reconcile import dnsresult
from agent.run import orchestrator
from tests.conftest import ROOT, load_dir
from tests.support import agentrun, dnsrepo
from tests.support import bind as bind_support


@pytest.fixture
def sample(tmp_path: pathlib.Path, bind: bind_support.BindPair, zone_api: Any) -> dict[str, Any]:
    root, tag = dnsrepo.unique_sample(tmp_path / "repo")
    endpoints_file = dnsrepo.endpoint_map(tmp_path, bind, zone_api)
    return {"root": root, "tag": tag, "endpoints_file": endpoints_file,
            "endpoints": config.load_endpoints(endpoints_file), "state": tmp_path / "state.json"}


def _run(sample: dict[str, Any], **kwargs: Any) -> orchestrator.RunOutcome:
    return agentrun.sync_dir(sample["root"], state=sample["state"], endpoints=sample["endpoints"], **kwargs)


def _sync(sample: dict[str, Any], **kwargs: Any) -> dnsresult.DnsResult:
    run = _run(sample, **kwargs)
    assert run.dns is not None, (run.outcome, run.message, [str(p) for p in run.problems], run.refusals)
    return run.dns


def _servers(sample: dict[str, Any]) -> list[Any]:
    return [sample["endpoints"]["dns-system/dns-primary-0"], sample["endpoints"]["dns-system/dns-secondary-0"]]


def _out_of_band(bind: bind_support.BindPair, zone: str, change: Any) -> None:
    keyring = dns.tsigkeyring.from_text({bind_support.TSIG_NAME: ("hmac-sha256", bind.keys.tsig)})
    update = dns.update.UpdateMessage(zone, keyring=keyring, keyalgorithm="hmac-sha256")
    change(update)
    response = dns.query.tcp(update, bind.primary.address, port=bind.primary.port, timeout=5)
    assert response.rcode() == dns.rcode.NOERROR


def _dig(server: Any, name: str, rtype: str) -> str:
    return subprocess.run(["dig", f"@{server.dns_host}", "-p", str(server.dns_port), name, rtype, "+short"],
                          capture_output=True, text=True, check=False).stdout.strip()


def test_sample_repo_is_served_by_primary_and_secondary(sample: dict[str, Any]) -> None:
    cli = [sys.executable, "-m", "agent", "sync", str(sample["root"]), "--endpoints", str(sample["endpoints_file"]),
           "--state", str(sample["state"])]
    first = subprocess.run(cli, capture_output=True, text=True, cwd=ROOT, check=False)
    assert first.returncode == 0, first.stderr
    assert "DNS: 21 RRset changes in 3 UPDATE messages, 0 zone deletions, verified 42/42" in first.stderr
    state = desired.build(load_dir(sample["root"]))
    for zone in state.zones:
        for rrset in zone.rrsets.values():
            for server in _servers(sample):
                assert records.query(server, rrset.name, rrset.rtype) == rrset.rdatas, (server.instance, rrset)
    tag = sample["tag"]
    secondary = _servers(sample)[1]
    assert sorted(_dig(secondary, f"www.example-{tag}.com", "A").split()) == ["192.0.2.10", "192.0.2.11", "192.0.2.12"]
    dkim = _dig(secondary, f"mail2026._domainkey.example-{tag}.com", "TXT")
    assert dkim.count('" "') == 1 and len(dkim) > 255  # one 400-byte string, split in two

    second = subprocess.run(cli, capture_output=True, text=True, cwd=ROOT, check=False)
    assert second.returncode == 0
    assert "DNS: 0 RRset changes in 0 UPDATE messages" in second.stderr
    assert "No changes" in second.stdout


def test_git_changes_become_exactly_those_dns_changes_and_foreign_records_survive(
        sample: dict[str, Any], bind: bind_support.BindPair) -> None:
    tag, root = sample["tag"], sample["root"]
    zone = f"example-{tag}.com"
    _sync(sample)
    _out_of_band(bind, zone, lambda u: u.add("_acme-challenge", 60, "TXT", "token-from-cert-manager"))

    web = root / "records" / "example-com" / "web.yaml"
    web.write_text(web.read_text().replace("    - 192.0.2.12\n", "    - 192.0.2.13\n"))
    services = root / "records" / "example-com" / "services.yaml"
    services.write_text(services.read_text().replace("  value: mailto:security@example", "  value: mailto:pki@example"))
    mail = root / "records" / "example-com" / "mail.yaml"
    text = mail.read_text()
    mail.write_text(text[:text.index("---\napiVersion: bindy.firestoned.io/v1beta1\nkind: TXTRecord\nmetadata:\n  name: dmarc")]
                    + text[text.index("---\napiVersion: bindy.firestoned.io/v1beta1\nkind: TXTRecord\nmetadata:\n  name: dkim"):])
    (root / "records" / "example-com" / "new.yaml").write_text("""apiVersion: bindy.firestoned.io/v1beta1
kind: AAAARecord
metadata: {name: api, namespace: dns-system, labels: {zone: example-com}}
spec: {name: api, ipv6Addresses: ["2001:db8::443"]}
""")
    result = _sync(sample)
    com = next(z for z in result.zones if z.name == f"{zone}.")
    assert sorted((c.action, c.key) for c in com.changes) == [
        ("create", (f"api.{zone}.", "AAAA")), ("delete", (f"_dmarc.{zone}.", "TXT")),
        ("update", (f"{zone}.", "CAA")), ("update", (f"www.{zone}.", "A"))]
    assert all(c.ok for c in com.checks)
    for server in _servers(sample):
        assert records.query(server, f"www.{zone}.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.13")
        assert records.query(server, f"_dmarc.{zone}.", "TXT") == ()
        assert records.query(server, f"_acme-challenge.{zone}.", "TXT") == ('"token-from-cert-manager"',)

    # Git now wants the foreign name and type: reported as a conflict, never overwritten
    (root / "records" / "example-com" / "acme.yaml").write_text("""apiVersion: bindy.firestoned.io/v1beta1
kind: TXTRecord
metadata: {name: acme, namespace: dns-system, labels: {zone: example-com}}
spec: {name: _acme-challenge, text: ["from-git"]}
""")
    again = next(z for z in _sync(sample).zones if z.name == f"{zone}.")
    assert again.changes == []
    assert again.conflicts == [f'_acme-challenge.{zone}. TXT: exists with data the agent did not write '
                               '("token-from-cert-manager"); not overwritten']
    assert records.query(_servers(sample)[0], f"_acme-challenge.{zone}.", "TXT") == ('"token-from-cert-manager"',)
    assert _sync(sample).updates_sent == 0


def test_a_concurrent_change_fails_the_prerequisite_and_is_replanned_once(
        sample: dict[str, Any], bind: bind_support.BindPair, monkeypatch: pytest.MonkeyPatch) -> None:
    tag, root = sample["tag"], sample["root"]
    zone = f"example-{tag}.com"
    _sync(sample)
    web = root / "records" / "example-com" / "web.yaml"
    web.write_text(web.read_text().replace("    - 192.0.2.12\n", "    - 192.0.2.99\n"))
    real_observe = axfr.read_zone
    races = {"left": 1, "value": 7}

    def observe_then_race(endpoint: Any, name: str, **kw: Any) -> Any:
        seen = real_observe(endpoint, name, **kw)
        if name == f"{zone}." and races["left"] > 0:  # someone edits www between observe and apply
            races["left"] -= 1
            value = f"203.0.113.{races['value']}"
            races["value"] += 1
            _out_of_band(bind, zone, lambda u: u.replace("www", 300, "A", value))
        return seen

    monkeypatch.setattr(axfr, "read_zone", observe_then_race)
    com = next(z for z in _sync(sample).zones if z.name == f"{zone}.")
    assert com.primary_error == "" and [c.key for c in com.changes] == [(f"www.{zone}.", "A")]
    assert com.changes[0].before is not None and com.changes[0].before.rdatas == ("203.0.113.7",)
    assert records.query(_servers(sample)[0], f"www.{zone}.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.99")

    web.write_text(web.read_text().replace("    - 192.0.2.99\n", "    - 192.0.2.98\n"))
    races["left"] = 2  # it happens again on the re-plan: give up and report, clobber nothing
    failed = next(z for z in _sync(sample).zones if z.name == f"{zone}.")
    assert "the zone changed since it was observed" in failed.primary_error
    assert records.query(_servers(sample)[0], f"www.{zone}.", "A") == ("203.0.113.9",)


def test_safety_gate_refuses_mass_deletes_until_forced(sample: dict[str, Any]) -> None:
    tag, root = sample["tag"], sample["root"]
    _sync(sample)
    for name in ("services.yaml", "web.yaml"):  # 9 of 17 managed RRsets (the 15 records' and 2 glue)
        (root / "records" / "example-com" / name).unlink()
    refused = _run(sample)
    assert refused.outcome == "rejected" and refused.dns is None
    assert refused.refusals == [(
        f"zone example-{tag}.com.: refusing to delete 9 of 17 managed RRsets (53%); the limit is 30% for zones "
        "with at least 10 managed RRsets; the operator can allow it for one run with `bindy-agent sync --force` (for "
        "`bindy-agent run`: the setting force, --force or BINDY_AGENT_FORCE=true); a DNSZone annotation cannot relax "
        "the gate, or raise the agent's delete threshold (--delete-threshold-percent, "
        "BINDY_AGENT_DELETE_THRESHOLD_PERCENT)")]
    assert records.query(_servers(sample)[0], f"sip1.example-{tag}.com.", "A") == ("192.0.2.60",)
    forced = next(z for z in _sync(sample, force=True).zones if z.name == f"example-{tag}.com.")
    assert forced.refused == "" and sum(c.action == "delete" for c in forced.changes) == 9
    assert records.query(_servers(sample)[0], f"sip1.example-{tag}.com.", "A") == ()


def test_a_zone_dropped_from_git_is_deleted_from_exactly_its_instances(sample: dict[str, Any]) -> None:
    tag, root = sample["tag"], sample["root"]
    _sync(sample)
    (root / "zones" / "internal.yaml").unlink()
    (root / "records" / "internal" / "hosts.yaml").unlink()  # with its records (left behind: in no zone, an error)
    result = _sync(sample)
    assert sorted(result.deleted) == [(f"internal.example-{tag}.net.", "dns-system/dns-primary-0"),
                                      (f"internal.example-{tag}.net.", "dns-system/dns-secondary-0")]
    for server in _servers(sample):
        assert records.query(server, f"internal.example-{tag}.net.", "SOA") == ()  # answered: not served
        soa = records.query(server, f"example-{tag}.com.", "SOA")  # still served, with the SOA in Git
        assert soa is not None and len(soa) == 1, soa
        assert soa[0].split()[:2] == [f"ns1.example-{tag}.com.", f"hostmaster.example-{tag}.com."], soa
    assert f"internal.example-{tag}.net." not in FileStore(sample["state"]).load_zones()


def test_adding_a_secondary_later_updates_the_primary_and_serves_the_zone(
        sample: dict[str, Any], zone_api: Any) -> None:
    tag, root = sample["tag"], sample["root"]
    cluster = root / "infrastructure" / "cluster.yaml"
    original = cluster.read_text()
    cluster.write_text(original.replace("  secondary:\n    replicas: 1", "  secondary:\n    replicas: 0"))
    first = _sync(sample)
    assert all(set(z.instances) == {"dns-system/dns-primary-0"} for z in first.zones)
    secondary = _servers(sample)[1]
    assert records.query(secondary, f"www.example-{tag}.com.", "A") == ()  # answered: the zone is not there

    cluster.write_text(original)
    calls_before = len(zone_api["primary"].requests)
    second = _sync(sample)
    patched = [p for m, p in zone_api["primary"].requests[calls_before:] if m == "PATCH"]
    assert sorted(patched) == sorted(f"/api/v1/zones/{z.name.rstrip('.')}" for z in second.zones)
    assert all(z.instances["dns-system/dns-secondary-0"][0] == "Configured" for z in second.zones)
    deadline = time.monotonic() + 10
    while records.query(secondary, f"www.example-{tag}.com.", "A") != ("192.0.2.10", "192.0.2.11", "192.0.2.12"):
        assert time.monotonic() < deadline, "secondary never served the zone"
        time.sleep(0.1)
