"""A secondary follows its primary's pod when that pod is replaced (issue 26).

A replaced pod has a new address. A secondary zone transfers from the addresses it was created with
(`primaries`), which bindcar's PATCH cannot change: without the agent re-creating it, the secondary
keeps asking the old, dead address, refuses the new pod's NOTIFY (it is not one of its primaries) and
serves the old data until the zone expires. Here real `named` + zone API processes play the pods:
the primary instance's one pod, then its replacement at another address (the endpoint map's `pods:`
changes as the instance's Endpoints would), and the secondary. Served data is read by DNS, the
secondary's configuration by `rndc showzone`, independently of the agent's code.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import dns.message
import dns.query
import pytest
import yaml

from tests.conftest import ROOT
from tests.support import bind as bind_support
from tests.support import dnsworld
from tests.support.zone_api import ZoneApi

pytestmark = pytest.mark.integration
NAMESPACE = "dns-system"
PRIMARY, SECONDARY = f"{NAMESPACE}/dns-primary-0", f"{NAMESPACE}/dns-secondary-0"
OLD, NEW, SECONDARY_ADDRESS = "127.0.0.41", "127.0.0.42", "127.0.0.43"


class Pods:
    """The primary's pod (replaced by `move`) and the secondary's: named + zone API each."""

    def __init__(self, root: pathlib.Path) -> None:
        self.root, self.keys, self.token = root, bind_support.Keys(), uuid.uuid4().hex
        self.primary = bind_support.BindServer(root / "primary-old", OLD, self.keys, "primary pod")
        self.secondary = bind_support.BindServer(root / "secondary", SECONDARY_ADDRESS, self.keys, "secondary")
        self.apis: dict[str, ZoneApi] = {}
        self.retired: list[bind_support.BindServer] = []
        for role, server in (("primary", self.primary), ("secondary", self.secondary)):
            server.start()
            self.apis[role] = ZoneApi(server, self.token).start()
        (root / "tsig.key").write_text(f'key "{bind_support.TSIG_NAME}" {{ algorithm hmac-sha256; '
                                       f'secret "{self.keys.tsig}"; }};\n')
        (root / "token").write_text(self.token + "\n")
        self.endpoints = root / "endpoints.yaml"
        self.write_map()

    def write_map(self) -> None:
        """The endpoint map as the instances' Endpoints list their ready pods now."""
        doc = {"instances": {
            PRIMARY: {"pods": [{"dns": f"{self.primary.address}:{self.primary.port}",
                                "api": self.apis["primary"].url}], "tokenFile": "token", "tsigKeyFile": "tsig.key"},
            SECONDARY: {"dns": f"{self.secondary.address}:{self.secondary.port}", "api": self.apis["secondary"].url,
                        "tokenFile": "token", "tsigKeyFile": "tsig.key"}}}
        self.endpoints.write_text(yaml.safe_dump(doc))

    def move(self) -> None:
        """The primary's pod is replaced: the old one is gone, a new one with an empty directory runs
        at another address."""
        self.apis["primary"].stop()
        self.primary.stop()
        self.retired.append(self.primary)
        self.primary = bind_support.BindServer(self.root / "primary-new", NEW, self.keys, "replacement pod").start()
        self.apis["primary"] = ZoneApi(self.primary, self.token).start()
        self.write_map()

    def stop(self) -> None:
        for api in self.apis.values():
            api.stop()
        for server in (self.primary, self.secondary):
            server.stop()


@pytest.fixture
def pods(tmp_path: pathlib.Path) -> Iterator[Pods]:
    started = Pods(tmp_path / "dns")
    try:
        yield started
    finally:
        started.stop()


def _sync(pods: Pods, repo: pathlib.Path, state: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent", "sync", str(repo), "--endpoints", str(pods.endpoints),
                           "--state", str(state)], capture_output=True, text=True, cwd=ROOT, timeout=180, check=False)


def _a(server: bind_support.BindServer, name: str) -> list[str]:
    answer = dns.query.udp(dns.message.make_query(name, "A"), server.address, port=server.port, timeout=2)
    return sorted(str(r) for rrset in answer.answer for r in rrset)


def _until(what: str, check: object, timeout: float = 15) -> float:
    """Seconds until `check()` is true; fails after `timeout`."""
    start = time.monotonic()
    while not check():  # type: ignore[operator]
        assert time.monotonic() - start < timeout, f"{what}: not within {timeout} s"
        time.sleep(0.1)
    return time.monotonic() - start


def test_a_secondary_transfers_from_its_primarys_replacement_pod(tmp_path: pathlib.Path, pods: Pods) -> None:
    zones = dnsworld.zone_names(2)
    repo, state = tmp_path / "repo", tmp_path / "state"
    rev = dnsworld.revision(zones, 4)
    dnsworld.write_repo(repo, rev)
    first = _sync(pods, repo, state)
    assert first.returncode == 0, first.stderr
    for zone in zones:
        assert f"{OLD} port {pods.primary.port}" in pods.secondary.rndc("showzone", zone)

    pods.move()
    moved = time.monotonic()
    pushed = {**rev, zones[0]: {**rev[zones[0]], ("moved", "A"): ("192.0.2.77",)}}
    dnsworld.write_repo(repo, pushed)
    after = _sync(pods, repo, state)
    assert after.returncode == 0, (after.stdout, after.stderr)
    name = f"moved.{zones[0]}."
    assert _a(pods.primary, name) == ["192.0.2.77"]  # the replacement pod got the zone and the record
    waited = _until("the secondary serving the push from the replacement pod",
                    lambda: _a(pods.secondary, name) == ["192.0.2.77"])
    print(f"\nprimary pod moved -> secondary serves the push in {time.monotonic() - moved:.2f} s "
          f"(sync {time.monotonic() - moved - waited:.2f} s, then {waited:.2f} s)")
    for zone in zones:
        shown = pods.secondary.rndc("showzone", zone)
        assert f"{NEW} port {pods.primary.port}" in shown and OLD not in shown, shown
    found = [dnsworld.divergence(dnsworld.Dns(bind_support.BindPair(pods.primary, pods.secondary, pods.keys),
                                              pods.apis, pods.endpoints), s, pushed)
             for s in (pods.primary, pods.secondary)]
    assert all(d.clean for d in found), dnsworld.summary(found)
    stored = json.loads(next((state / "zones").glob(f"{zones[0]}*.json")).read_text())  # what the next run compares with
    assert stored["transferFrom"] == [f"{NEW}:{pods.primary.port}"], stored

    # a later push with the pods where they are: the secondary is not created again, it transfers
    again = {**pushed, zones[0]: {**pushed[zones[0]], ("later", "A"): ("192.0.2.78",)}}
    dnsworld.write_repo(repo, again)
    later = _sync(pods, repo, state)
    assert later.returncode == 0, later.stderr
    assert "created again" not in later.stdout + later.stderr
    _until("the secondary serving the next push", lambda: _a(pods.secondary, f"later.{zones[0]}.") == ["192.0.2.78"])
