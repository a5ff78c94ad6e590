"""`bindy-agent import` adopts a zone made by hand on real named: the CRs it writes validate, and a
sync of them (with the sample's cluster) changes nothing in DNS - not one RRset, not the serial."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import uuid

import yaml

from agent.clients import endpoints as config
from agent.clients import rfc2136
from tests.conftest import ROOT, SAMPLE
from tests.support import bind as bind_support
from tests.support import dnsrepo, procs
from tests.support.zone_api import ZoneApi

LEGACY = """$TTL 3600
@ IN SOA ns1.{zone}. hostmaster.{zone}. 2024010101 7200 900 1209600 600
@ IN NS ns1.{zone}.
@ IN NS ns2.example.net.
ns1 IN A 192.0.2.53
@ IN A 192.0.2.1
@ IN MX 10 mail.{zone}.
@ IN MX 20 mail2.example.net.
@ IN TXT "v=spf1 -all"
@ IN TXT "google-site-verification=xyz" "a second string"
@ IN CAA 0 issue "letsencrypt.org"
mail 300 IN A 192.0.2.25
mail IN AAAA 2001:db8::25
www IN A 192.0.2.10
www IN A 192.0.2.11
*.apps IN A 192.0.2.80
alias IN CNAME www.{zone}.
_sip._tcp IN SRV 10 60 5060 sip.example.net.
_dmarc IN TXT "v=DMARC1; p=none"
long IN TXT "{long}" "{rest}"
sub IN NS ns.sub.{zone}.
ns.sub IN A 192.0.2.99
1.2 IN PTR host.example.net.
info IN HINFO "PC" "Linux"
"""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent", *args], capture_output=True, text=True, cwd=ROOT)


def _by_hand(bind: bind_support.BindPair, zone: str) -> None:
    """A zone someone made without the agent: a zone file on the primary, a plain secondary."""
    text = LEGACY.format(zone=zone, long="k=" + "x" * 253, rest="y" * 47)  # a DKIM key longer than one string
    (bind.primary.dir / f"{zone}.db").write_text(text)
    key = f'allow-update {{ key "{bind_support.TSIG_NAME}"; }};'
    bind.primary.rndc("addzone", zone, f'{{ type primary; file "{zone}.db"; {key} }};')
    primary = f"{bind.primary.address} port {bind.primary.port}"
    bind.secondary.rndc("addzone", zone, f'{{ type secondary; file "{zone}.sec"; primaries {{ {primary}; }}; }};')


def _axfr(endpoint: config.Endpoint, zone: str) -> list[str]:
    """The whole zone as dig shows it, SOA (and so its serial) included, in a stable order."""
    return sorted(subprocess.run(["dig", f"@{endpoint.dns_host}", "-p", str(endpoint.dns_port), zone, "AXFR",
                                  "+noall", "+answer", "+onesoa"], capture_output=True, text=True,
                                 check=True).stdout.splitlines())


def test_an_imported_zone_validates_and_a_sync_of_it_changes_nothing(
        tmp_path: pathlib.Path, bind: bind_support.BindPair, zone_api: dict[str, ZoneApi]) -> None:
    zone = f"legacy-{uuid.uuid4().hex[:6]}.test"
    _by_hand(bind, zone)
    endpoints_file = dnsrepo.endpoint_map(tmp_path, bind, zone_api)
    servers = config.load_endpoints(endpoints_file)
    primary, secondary = servers["dns-system/dns-primary-0"], servers["dns-system/dns-secondary-0"]
    before = _axfr(primary, zone)
    assert len(before) == 23  # 19 RRsets
    procs.wait_for(lambda: _axfr(secondary, zone) == before, 10)

    repo = tmp_path / "repo"
    (repo / "infrastructure").mkdir(parents=True)
    shutil.copy(SAMPLE / "infrastructure" / "cluster.yaml", repo / "infrastructure")
    imported = _cli("import", "--zone", zone, "--server", primary.dns, "--tsig-key-file", str(tmp_path / "tsig.key"),
                    "--namespace", "dns-system", "--cluster-ref", "dns", "--output-dir", str(repo))
    assert imported.returncode == 0, imported.stderr
    assert f"{zone}.: 19 RRsets -> 1 DNSZone and 17 record CRs" in imported.stderr
    assert f"into the DNSZone: {zone}. SOA -> DNSZone spec.soaRecord (serial 2024010101)" in imported.stderr
    assert f"into the DNSZone: {zone}. NS (2 name servers) -> DNSZone spec.nameServers" in imported.stderr
    assert f"skipped (the agent leaves it alone): 1.2.{zone}. PTR: no Bindy record kind for PTR" in imported.stderr
    assert f"skipped (the agent leaves it alone): info.{zone}. HINFO: no Bindy record kind for HINFO" in imported.stderr

    stem = zone.replace(".", "-")
    dnszone = yaml.safe_load((repo / "zones" / f"{stem}.yaml").read_text())
    assert dnszone["spec"]["nameServers"] == [{"hostname": "ns1." + zone + ".", "ipv4Address": "192.0.2.53"},
                                              {"hostname": "ns2.example.net."}]
    records = list(yaml.safe_load_all((repo / "records" / f"{stem}.yaml").read_text()))
    kinds = sorted(r["kind"] for r in records)
    assert kinds.count("MXRecord") == 2 and kinds.count("TXTRecord") == 4 and "NSRecord" in kinds
    long_txt = next(r for r in records if r["spec"]["name"] == "long")
    assert [len(t) for t in long_txt["spec"]["text"]] == [255, 47]

    valid = _cli("validate", str(repo))
    assert valid.returncode == 0, valid.stderr
    assert valid.stderr == f"{repo}: 19 objects in 3 files: valid (0 warnings)\n"

    state = tmp_path / "state"
    planned = _cli("sync", str(repo), "--endpoints", str(endpoints_file), "--state", str(state), "--dry-run")
    assert planned.returncode == 0, planned.stderr
    assert "Records" not in planned.stdout  # not one RRset to change
    synced = _cli("sync", str(repo), "--endpoints", str(endpoints_file), "--state", str(state))
    assert synced.returncode == 0, synced.stderr
    assert "DNS: 0 RRset changes in 0 UPDATE messages, 0 zone deletions" in synced.stderr
    assert _axfr(primary, zone) == before  # the serial too: nothing was written
    assert _axfr(secondary, zone) == before
    again = _cli("sync", str(repo), "--endpoints", str(endpoints_file), "--state", str(state))
    assert again.stdout.endswith("No changes: the world matches the revision.\n")

    # adopted: from now on a change in Git is the agent's to make
    web = repo / "records" / f"{stem}.yaml"
    web.write_text(web.read_text().replace("- 192.0.2.11\n", "- 192.0.2.12\n"))
    changed = _cli("sync", str(repo), "--endpoints", str(endpoints_file), "--state", str(state))
    assert changed.returncode == 0, changed.stderr
    assert "DNS: 1 RRset changes in 1 UPDATE messages, 0 zone deletions, verified 2/2" in changed.stderr
    for server in (primary, secondary):  # the adopted primary was told its secondary: it notifies it
        assert rfc2136.query(server, f"www.{zone}.", "A") == ("192.0.2.10", "192.0.2.12")


def test_import_refuses_what_it_cannot_read_without_a_traceback(tmp_path: pathlib.Path,
                                                                bind: bind_support.BindPair) -> None:
    server = f"{bind.primary.address}:{bind.primary.port}"
    missing = _cli("import", "--zone", "not-here.test", "--server", server)
    assert missing.returncode == 3
    assert "does not serve zone not-here.test." in missing.stderr and "Traceback" not in missing.stderr
    bad_key = tmp_path / "bad.key"
    bad_key.write_text("not a key\n")
    refused = _cli("import", "--zone", "x.test", "--server", server, "--tsig-key-file", str(bad_key))
    assert refused.returncode == 3 and "no `key \"name\"" in refused.stderr
    usage = _cli("import", "--zone", "a..b", "--server", "nowhere:99999")
    assert usage.returncode == 2 and "is not a zone name" in usage.stderr
