"""Test helpers for DNS syncs: sample-repo with unique zone names, and an endpoint map for the
real named pair + zone API servers."""

from __future__ import annotations

import pathlib
import shutil
import uuid

import yaml

from tests.support.bind import TSIG_NAME, BindPair
from tests.support.zone_api import ZoneApi

SAMPLE = pathlib.Path(__file__).resolve().parent.parent.parent / "sample-repo"


def unique_sample(dest: pathlib.Path, namespace: str = "dns-system") -> tuple[pathlib.Path, str]:
    """A copy of sample-repo whose zones are renamed example-<id>.com/.org/.net (tests share named)."""
    tag = uuid.uuid4().hex[:6]
    shutil.copytree(SAMPLE, dest)
    for path in dest.rglob("*.yaml"):
        text = path.read_text().replace("dns-system", namespace)
        for tld in ("com", "org", "net"):
            text = text.replace(f"example.{tld}", f"example-{tag}.{tld}")
        path.write_text(text)
    return dest, tag


def endpoint_map(dest: pathlib.Path, bind: BindPair, apis: dict[str, ZoneApi], namespace: str = "dns-system",
                 cluster: str = "dns") -> pathlib.Path:
    (dest / "tsig.key").write_text(
        f'key "{TSIG_NAME}" {{ algorithm hmac-sha256; secret "{bind.keys.tsig}"; }};\n')
    (dest / "token").write_text(apis["primary"].token + "\n")
    doc = {"instances": {
        f"{namespace}/{cluster}-primary-0": {"dns": f"{bind.primary.address}:{bind.primary.port}",
                                             "api": apis["primary"].url, "tokenFile": "token",
                                             "tsigKeyFile": "tsig.key"},
        f"{namespace}/{cluster}-secondary-0": {"dns": f"{bind.secondary.address}:{bind.secondary.port}",
                                               "api": apis["secondary"].url, "tokenFile": "token",
                                               "tsigKeyFile": "tsig.key"},
    }}
    path = dest / "endpoints.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path
