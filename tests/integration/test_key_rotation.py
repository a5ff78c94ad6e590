"""A key rotation on real named (issue 26): two `named` stand for an instance's pods during the
rollout a rotation starts, one started with the old key and one with the new (same key name, as
each zone's allow-update names it). The agent picks each pod's key by a signed query
(agent/observe/keyprobe.py) and keeps writing: no UPDATE is refused at any moment; at the end the
new key works and the old one is refused."""

from __future__ import annotations

import base64
import pathlib
import secrets

import dns.query
import dns.rcode
import dns.update
import pytest

from agent.clients.endpoints import Server, TsigKey
from agent.clients.rfc2136 import tsig_keyring
from agent.observe import keyprobe
from tests.support import bind as bind_support

pytestmark = pytest.mark.integration
ZONE = "rotate.test"


def _pod(tmp: pathlib.Path, name: str, address: str, secret: str) -> bind_support.BindServer:
    server = bind_support.BindServer(tmp / name, address, bind_support.Keys(tsig=secret), name).start()
    (server.dir / f"{ZONE}.db").write_text(f"$TTL 300\n@ SOA ns1.{ZONE}. admin.{ZONE}. 1 3600 600 604800 300\n"
                                           f"@ NS ns1.{ZONE}.\nns1 A 192.0.2.1\n")
    server.rndc("addzone", ZONE, f'{{ type primary; file "{ZONE}.db"; '
                f'allow-update {{ key "{bind_support.TSIG_NAME}"; }}; }};')  # as bindcar's updateKeyName
    return server


def _update(server: Server, i: int) -> int:
    assert server.tsig is not None
    keyring, name, algorithm = tsig_keyring(server.tsig)
    update = dns.update.UpdateMessage(ZONE, keyring=keyring, keyname=name, keyalgorithm=algorithm)
    update.replace(f"r{i}", 300, "A", f"192.0.2.{i % 250 + 1}")
    return dns.query.tcp(update, server.dns_host, port=server.dns_port, timeout=5).rcode()  # type: ignore[no-any-return]


def test_a_rotation_rolling_over_pods_never_refuses_an_update(tmp_path: pathlib.Path) -> None:
    old_secret, new_secret = (base64.b64encode(secrets.token_bytes(32)).decode() for _ in range(2))
    old = TsigKey(bind_support.TSIG_NAME, "hmac-sha256", old_secret)
    new = TsigKey(bind_support.TSIG_NAME, "hmac-sha256", new_secret)
    old_pod = _pod(tmp_path, "old-pod", "127.0.0.71", old_secret)
    new_pod = None
    try:
        pods = (Server("old-pod", old_pod.address, old_pod.port, ""),)
        rcodes = []
        # before: the Secret holds one key
        rcodes += [_update(s, 1) for s in keyprobe.choose(tuple(
            Server(p.name, p.dns_host, p.dns_port, "", tsig=old) for p in pods), old, None)]
        # the rotation: the Secret now holds new (secret) and old (previous-secret); a surge pod starts with new
        new_pod = _pod(tmp_path, "new-pod", "127.0.0.72", new_secret)
        pods = (*pods, Server("new-pod", new_pod.address, new_pod.port, ""))
        for i in range(2, 12):  # runs while the rollout goes on: each pod written with the key it accepts
            rcodes += [_update(s, i) for s in keyprobe.choose(pods, new, old)]
        old_pod.stop()  # rolled out; the previous key leaves the Secret
        pods = pods[1:]
        for i in range(12, 15):
            rcodes += [_update(s, i) for s in keyprobe.choose(tuple(
                Server(p.name, p.dns_host, p.dns_port, "", tsig=new) for p in pods), new, None)]
        assert rcodes and all(r == dns.rcode.NOERROR for r in rcodes), [dns.rcode.to_text(r) for r in rcodes]
        assert keyprobe.accepts(new_pod.address, new_pod.port, new) is True
        assert keyprobe.accepts(new_pod.address, new_pod.port, old) is False
    finally:
        old_pod.stop()
        if new_pod is not None:
            new_pod.stop()
