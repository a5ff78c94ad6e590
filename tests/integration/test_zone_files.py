"""Zone files in and out, for users who come from BIND or go to it:

* `import --zone-file FILE --zone Z` writes the very CRs the AXFR import writes for the same zone served by a
  real `named` from that file ($ORIGIN, $TTL and $GENERATE read as named reads them); $INCLUDE, a file over
  the transfer limits, and a file of another zone are refused with a clear message;
* `export DIR --output-dir OUT` writes one zone file per DNSZone that `named-checkzone` loads, and that
  imports back to the same RRsets."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import uuid

from agent.desired import zonefile
from tests.conftest import ROOT, SAMPLE
from tests.support import bind as bind_support

ZONE_FILE = """; a zone kept by hand, as BIND loads it
$ORIGIN {zone}.
$TTL 3600
@ IN SOA ns1 hostmaster 2024010101 7200 900 1209600 600
  IN NS ns1
  IN NS ns2.example.net.
  IN MX 10 mail
  IN TXT "v=spf1 -all"
ns1 IN A 192.0.2.53
mail 300 IN A 192.0.2.25
www IN A 192.0.2.10
    IN A 192.0.2.11
    IN AAAA 2001:db8::10
alias IN CNAME www
$TTL 60
short IN A 192.0.2.60
$ORIGIN svc.{zone}.
_sip._tcp IN SRV 10 60 5060 sip
sip IN A 192.0.2.70
$ORIGIN {zone}.
$GENERATE 1-3 host$ IN A 192.0.2.$
"""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent", *args], capture_output=True, text=True, cwd=ROOT)


def _served(bind: bind_support.BindPair, zone: str, text: str) -> None:
    (bind.primary.dir / f"{zone}.db").write_text(text)
    bind.primary.rndc("addzone", zone, f'{{ type primary; file "{zone}.db"; }};')


def _without_header(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("# Imported by"))


def test_a_zone_file_imports_as_the_axfr_of_that_zone_served_by_named(tmp_path: pathlib.Path,
                                                                       bind: bind_support.BindPair) -> None:
    zone = f"hand-{uuid.uuid4().hex[:6]}.test"
    text = ZONE_FILE.format(zone=zone)
    _served(bind, zone, text)
    key = tmp_path / "tsig.key"
    key.write_text(f'key "{bind_support.TSIG_NAME}" {{ algorithm hmac-sha256; secret "{bind.keys.tsig}"; }};\n')
    (tmp_path / "zone.db").write_text(text)
    by_axfr = _cli("import", "--zone", zone, "--server", f"{bind.primary.address}:{bind.primary.port}",
                   "--tsig-key-file", str(key), "--cluster-ref", "dns")
    by_file = _cli("import", "--zone", zone, "--zone-file", str(tmp_path / "zone.db"), "--cluster-ref", "dns")
    assert by_axfr.returncode == 0, by_axfr.stderr
    assert by_file.returncode == 0, by_file.stderr
    assert _without_header(by_file.stdout) == _without_header(by_axfr.stdout)
    assert f"# Imported by `bindy-agent import` from {tmp_path / 'zone.db'} (zone file of {zone}.)." in by_file.stdout
    assert by_file.stderr == by_axfr.stderr  # the same summary: RRsets, what went into the DNSZone
    assert f"{zone}.: 15 RRsets -> 1 DNSZone and 13 record CRs" in by_file.stderr
    for line in ("name: host2", "namespace: dns-system", "ttl: 60",
                 "name: _sip._tcp.svc", f"target: sip.svc.{zone}."):
        assert line in by_file.stdout, line

    repo = tmp_path / "repo"
    imported = _cli("import", "--zone", zone, "--zone-file", str(tmp_path / "zone.db"), "--cluster-ref", "dns",
                    "--output-dir", str(repo))
    assert imported.returncode == 0, imported.stderr
    (repo / "infrastructure").mkdir()
    (repo / "infrastructure" / "cluster.yaml").write_text((SAMPLE / "infrastructure" / "cluster.yaml").read_text())
    assert _cli("validate", str(repo)).returncode == 0


def test_what_a_zone_file_import_will_not_read_is_refused_clearly(tmp_path: pathlib.Path) -> None:
    zone = "example.test"
    cases = {
        "include": (ZONE_FILE.format(zone=zone) + "$INCLUDE /etc/passwd\n", (),
                    "include.db:22: $INCLUDE is refused: an import reads one file; write what it includes into it"),
        "other-zone": (ZONE_FILE.format(zone="other.test"), (),
                       "other-zone.db: no SOA record at the zone's origin example.test.: is this the file of "
                       "example.test.? (its $ORIGIN, or --zone)"),
        "too-many": (ZONE_FILE.format(zone=zone), ("--max-transfer-records", "10"),
                     "too-many.db: 17 records, more than the 10 an import reads (--max-transfer-records)"),
        "generate-bomb": (ZONE_FILE.format(zone=zone) + "$GENERATE 1-100000000 h$ A 192.0.2.1\n", (),
                          "generate-bomb.db: its $GENERATE lines make 100,000,003 records, more than the 500,000 an "
                          "import reads (--max-transfer-records)"),
        "too-big": (ZONE_FILE.format(zone=zone), ("--max-transfer-bytes", "100"),
                    "too-big.db: 498 bytes, more than the 100 an import reads (--max-transfer-bytes)"),
        "bad-address": (ZONE_FILE.format(zone=zone).replace("192.0.2.60", "999.0.2.60"), (), "bad-address.db:"),
    }
    for name, (text, flags, message) in cases.items():
        path = tmp_path / f"{name}.db"
        path.write_text(text)
        done = _cli("import", "--zone", zone, "--zone-file", str(path), *flags)
        assert done.returncode == 1, (name, done.stderr)
        assert done.stdout == "" and "Traceback" not in done.stderr, name
        assert done.stderr.startswith(f"bindy-agent import: error: {tmp_path}/{message}"), (name, done.stderr)
    both = _cli("import", "--zone", zone, "--zone-file", str(path), "--server", "127.0.0.1:53")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


def _checkzone(zone: str, path: pathlib.Path) -> subprocess.CompletedProcess[str]:
    """named's own check of a zone file, as named loads it (`-i local`: integrity inside the zone, as a load
    checks it; nothing is looked up elsewhere)."""
    return subprocess.run(["named-checkzone", "-i", "local", zone, str(path)], capture_output=True, text=True,
                          check=False)


def test_every_exported_zone_loads_in_named_checkzone_and_imports_back_the_same(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "zones"
    done = _cli("export", str(SAMPLE), "--output-dir", str(out))
    assert done.returncode == 0, done.stderr
    files = sorted(p.name for p in out.iterdir())
    assert files == ["example.com.zone", "example.org.zone", "internal.example.net.zone"]
    from agent.desired import hierarchy
    from tests.conftest import load_dir

    zones = {z.name: z for z in hierarchy.build(load_dir(SAMPLE)).zones}
    for name in files:
        zone = name.removesuffix(".zone")
        checked = _checkzone(zone, out / name)
        assert checked.returncode == 0 and checked.stdout.endswith("OK\n"), checked.stdout + checked.stderr
        back = zonefile.parse((out / name).read_text(), zone + ".", filename=name, max_records=1000)
        built = zones[zone + "."]
        assert {k: v for k, v in back.items() if k[1] != "SOA"} == built.rrsets
        soa = back[(zone + ".", "SOA")].rdatas[0].split()
        assert int(soa[2]) == built.spec.soa_record.serial
    again = _cli("export", str(SAMPLE), "--output-dir", str(out))
    assert again.returncode == 3 and "already exists; nothing written" in again.stderr


def test_an_invalid_repository_exports_nothing(tmp_path: pathlib.Path) -> None:
    repo = tmp_path / "repo"
    (repo / "zones").mkdir(parents=True)
    (repo / "zones" / "z.yaml").write_text((SAMPLE / "zones" / "example-com.yaml").read_text().replace(
        "adminEmail: hostmaster.example.com.", "adminEmail: hostmaster@example.com"))
    done = _cli("export", str(repo), "--output-dir", str(tmp_path / "out"))
    assert done.returncode == 1
    assert "write 'hostmaster.example.com.'" in done.stderr and not (tmp_path / "out").exists()
