"""Real named, run the way the generated pod runs it, with the generated named.conf.

The pod runs named as uid/gid 53 with every capability dropped, no privilege escalation and a
read-only root filesystem (emptyDirs on /var/cache/bind and /run/named). Here the same named 9.18
runs under those constraints in private mount and network namespaces (`unshare`, `setpriv`, as
root): it serves on the unprivileged ports the Service maps 53 to. The alternative - port 53 with
NET_BIND_SERVICE added, which Kubernetes puts only in the bounding and inheritable sets of a non-root
container - leaves named running but listening on nothing, which is why the agent does not use it.
"""

from __future__ import annotations

import base64
import os
import pathlib
import secrets
import shutil
import subprocess

import pytest

from agent.desired import hierarchy as desired
from agent.desired import workloads
from tests.conftest import SAMPLE, load_dir

SCRIPT = r"""
set -e
mount --bind "$DIR" "$DIR"  # stays writable (a mount of its own) when / goes read-only below
exec 3>"$DIR/named.log" 4>"$DIR/probe.txt"
ip link set lo up
mkdir -p /etc/bind /var/cache/bind /run/named
mount -t tmpfs tmpfs /etc/bind
mkdir /etc/bind/keys
cp "$DIR/named.conf" /etc/bind/named.conf
cp "$DIR/rndc.key" /etc/bind/keys/rndc.key
mount -t tmpfs -o uid=53,gid=53,mode=0755 tmpfs /var/cache/bind
mount -t tmpfs -o uid=53,gid=53,mode=0755 tmpfs /run/named
mount -o remount,ro,bind /
if touch /.writable 2>/dev/null; then echo "the root filesystem is still writable" >&2; exit 1; fi
setpriv --reuid=53 --regid=53 --clear-groups --no-new-privs --inh-caps="$CAPS" --bounding-set="$CAPS" \
    /usr/sbin/named -g -c /etc/bind/named.conf >&3 2>&1 &
NAMED=$!
for _ in $(seq 100); do
    rndc -s 127.0.0.1 -p 8953 -k /etc/bind/keys/rndc.key status >/dev/null 2>&1 && break
    sleep 0.1
done
rndc -s 127.0.0.1 -p 8953 -k /etc/bind/keys/rndc.key status >&4 2>&1 || true
dig @127.0.0.1 -p "$PORT" version.bind CH TXT +short +tries=1 +time=1 >&4 2>&1 || true
kill "$NAMED"
wait "$NAMED" || true
"""


def _named(tmp_path: pathlib.Path, conf: str, *, port: int, caps: str) -> tuple[str, str]:
    """Runs named as the pod would; returns (named's log, rndc status + dig answer)."""
    if os.geteuid() != 0 or not all(shutil.which(b) for b in ("unshare", "setpriv", "named", "rndc", "dig", "ip")):
        pytest.fail("needs root with unshare, setpriv, ip, named, rndc and dig; run scripts/install-test-deps "
                    "(as root) and the tests as root, as scripts/test does")
    (tmp_path / "named.conf").write_text(conf)
    key = base64.b64encode(secrets.token_bytes(32)).decode()
    (tmp_path / "rndc.key").write_text(f'key "dns-primary-0-rndc-key" {{ algorithm hmac-sha256; secret "{key}"; }};\n')
    env = {**os.environ, "DIR": str(tmp_path), "PORT": str(port), "CAPS": caps}
    done = subprocess.run(["unshare", "--mount", "--net", "sh", "-c", SCRIPT], env=env, timeout=60,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return (tmp_path / "named.log").read_text(), (tmp_path / "probe.txt").read_text()


def _generated_conf() -> str:
    conf = desired.build(load_dir(SAMPLE)).object("ConfigMap", "dns-system", "dns-primary-0-config")
    assert conf is not None
    return str(conf.body["data"]["named.conf"])


def test_named_serves_on_the_unprivileged_ports_as_uid_53_without_capabilities(tmp_path: pathlib.Path) -> None:
    log, probe = _named(tmp_path, _generated_conf(), port=workloads.DNS_CONTAINER_PORT, caps="-all")
    assert "listening on IPv4 interface lo, 127.0.0.1#5353" in log, log
    assert "command channel listening on 127.0.0.1#8953" in log, log
    assert "server is up and running" in probe and '"9.18.' in probe, probe + log


def test_port_53_with_net_bind_service_added_as_kubernetes_adds_it_listens_on_nothing(tmp_path: pathlib.Path) -> None:
    conf = _generated_conf().replace(f"port {workloads.DNS_CONTAINER_PORT} ", "port 53 ")
    log, probe = _named(tmp_path, conf, port=53, caps="-all,+net_bind_service")
    assert "creating IPv4 interface lo failed; interface ignored" in log, log
    assert "server is up and running" in probe  # named runs...
    assert '"9.18.' not in probe, probe  # ...but answers nothing on 53
