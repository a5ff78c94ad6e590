"""Several real named servers as the pods of one instance (fixture `pods`: two pods of the primary and a
secondary, named + zone API each), and `bindy-agent sync` run against them with an endpoint map that lists
every pod."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest
import yaml

from tests.conftest import ROOT
from tests.support import bind as bind_support
from tests.support import dnsworld
from tests.support.zone_api import ZoneApi

NAMESPACE = "dns-system"
PRIMARY, SECONDARY = f"{NAMESPACE}/dns-primary-0", f"{NAMESPACE}/dns-secondary-0"


class Pods:
    """Two pods of the primary instance and one secondary: named + zone API each, owned by one test."""

    def __init__(self, root: pathlib.Path) -> None:
        self.keys = bind_support.Keys()
        self.token = uuid.uuid4().hex
        self.pods = [bind_support.BindServer(root / f"pod-{i}", f"127.0.0.{21 + i}", self.keys, f"primary pod {i}")
                     for i in range(2)]
        self.secondary = bind_support.BindServer(root / "secondary", "127.0.0.23", self.keys, "secondary")
        self.apis: list[ZoneApi] = []
        for server in [*self.pods, self.secondary]:
            server.start()
            self.apis.append(ZoneApi(server, self.token).start())
        self.world = dnsworld.Dns(bind_support.BindPair(self.pods[0], self.secondary, self.keys),
                                  {"primary": self.apis[0], "secondary": self.apis[2]}, root / "endpoints.yaml")
        self.endpoints = self._endpoint_map(root)

    @property
    def servers(self) -> list[bind_support.BindServer]:
        return [*self.pods, self.secondary]

    def _endpoint_map(self, root: pathlib.Path) -> pathlib.Path:
        (root / "tsig.key").write_text(f'key "{bind_support.TSIG_NAME}" {{ algorithm hmac-sha256; '
                                       f'secret "{self.keys.tsig}"; }};\n')
        (root / "token").write_text(self.token + "\n")
        doc = {"instances": {
            PRIMARY: {"pods": [{"dns": f"{s.address}:{s.port}", "api": a.url}
                               for s, a in zip(self.pods, self.apis[:2], strict=True)],
                      "tokenFile": "token", "tsigKeyFile": "tsig.key"},
            SECONDARY: {"dns": f"{self.secondary.address}:{self.secondary.port}", "api": self.apis[2].url,
                        "tokenFile": "token", "tsigKeyFile": "tsig.key"}}}
        path = root / "endpoints.yaml"
        path.write_text(yaml.safe_dump(doc))
        return path

    def wipe(self, pod: int) -> None:
        """The pod replaced: a fresh `named` on the same address and port, with an empty directory
        (no zone file, no NZD of added zones, no journal), as a new pod with an empty emptyDir."""
        server = self.pods[pod]
        server.kill()
        for path in server.dir.iterdir():
            if path.name not in ("named.conf", "rndc.conf", "named.log"):
                path.unlink()
        server.restart()

    def stop(self) -> None:
        for api in self.apis:
            api.stop()
        for server in self.servers:
            server.stop()


@pytest.fixture
def pods(tmp_path: pathlib.Path) -> Iterator[Pods]:
    started = Pods(tmp_path / "dns")
    try:
        yield started
    finally:
        started.stop()


def _agent(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout, check=False)


def _sync(pods: Pods, repo: pathlib.Path, state: pathlib.Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _agent("sync", str(repo), "--endpoints", str(pods.endpoints), "--state", str(state), *extra)
