"""named is real: a TSIG-signed DNS UPDATE on the primary is answered by `dig` on the secondary
after NOTIFY and transfer. Git is real: a push is fetched by another clone; a force-push too."""

from __future__ import annotations

import pathlib
import subprocess
import time
import uuid

import dns.message
import dns.query
import dns.rcode
import dns.tsigkeyring
import dns.update

from tests.support import bind as bind_support
from tests.support.gitremote import GitRemote
from tests.support.procs import run

ZONE_FILE = """$TTL 300
@ IN SOA ns1.{zone}. admin.{zone}. 1 3600 600 604800 300
@ IN NS ns1.{zone}.
ns1 IN A 127.0.0.10
"""


def _dig(server: bind_support.BindServer, name: str, rtype: str = "A") -> str:
    return subprocess.run(["dig", f"@{server.address}", "-p", str(server.port), name, rtype, "+short",
                           "+time=1", "+tries=1"], capture_output=True, text=True).stdout.strip()


def test_tsig_update_on_primary_reaches_secondary_after_notify(bind: bind_support.BindPair) -> None:
    zone = f"z{uuid.uuid4().hex[:8]}.test"
    p, s = bind.primary, bind.secondary
    (p.dir / f"{zone}.db").write_text(ZONE_FILE.format(zone=zone))
    p.rndc("addzone", zone, f'{{ type primary; file "{zone}.db"; allow-update {{ key "{bind_support.TSIG_NAME}"; }}; '
           f"also-notify {{ {s.address} port {s.port}; }}; }};")
    s.rndc("addzone", zone, f'{{ type secondary; file "{zone}.sec"; primaries {{ {p.address} port {p.port}; }}; }};')

    keyring = dns.tsigkeyring.from_text({bind_support.TSIG_NAME: ("hmac-sha256", bind.keys.tsig)})
    update = dns.update.UpdateMessage(zone, keyring=keyring, keyalgorithm="hmac-sha256")
    update.add("www", 300, "A", "192.0.2.80")
    response = dns.query.tcp(update, p.address, port=p.port, timeout=5)
    assert dns.rcode.to_text(response.rcode()) == "NOERROR"

    unsigned = dns.update.UpdateMessage(zone)
    unsigned.add("evil", 300, "A", "192.0.2.66")
    refused = dns.query.tcp(unsigned, p.address, port=p.port, timeout=5)
    assert dns.rcode.to_text(refused.rcode()) == "REFUSED"

    assert _dig(p, f"www.{zone}") == "192.0.2.80"
    deadline = time.monotonic() + 15
    while _dig(s, f"www.{zone}") != "192.0.2.80":
        assert time.monotonic() < deadline, "secondary never served the update"
        time.sleep(0.2)
    assert _dig(s, f"evil.{zone}") == ""


def test_push_is_fetched_by_another_clone_and_force_push_is_followed(
        git_remote: GitRemote, tmp_path: pathlib.Path) -> None:
    first = git_remote.commit("add zone", {"zones/a.yaml": "kind: DNSZone\n"})
    git_remote.push()
    clone = tmp_path / "clone"
    run(["git", "clone", "-q", git_remote.url, str(clone)])
    assert run(["git", "-C", str(clone), "rev-parse", "HEAD"]).strip() == first

    rewritten = git_remote.rewrite_last("add zone (fixed)", {"zones/a.yaml": "kind: DNSZone # fixed\n"})
    git_remote.push(force=True)
    run(["git", "-C", str(clone), "fetch", "-q", "origin", "+main:refs/remotes/origin/main"])
    assert run(["git", "-C", str(clone), "rev-parse", "origin/main"]).strip() == rewritten != first
