"""The tests' network cannot leak (tests/support/node.py, .ci/leakcount), shown in network namespaces
of the test's own - a namespace whose default route leads over a veth pair into a second, silent one -
so that no packet of this test leaves the machine, and the machine's routes are never touched:

- .ci/leakcount counts what leaves by the default route for 10/8, 172.16/12, 192.168/16 and 169.254/16
  (the resolver of resolv.conf on port 53 apart, as allowed), and `check` fails on any of it;
- without the node's fence, a packet to a pod or Service address with no bridge up takes the default
  route (and is counted); with it (`fence()`, as `node up` adds before the bridge and keeps), it is
  refused at once, before the node is up and after it is down;
- while the bridge is up, the pod range and the Service range reach it: a connection to a Service
  address DNATed to the node address (kube-proxy's way) gets through, the fence notwithstanding.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator

import pytest

from tests.conftest import ROOT
from tests.support import node

pytestmark = pytest.mark.integration
LEAKCOUNT = ROOT / ".ci" / "leakcount"
RESOLVER = "10.9.9.53"  # what the namespace's resolv.conf names (/etc/netns/<name>/resolv.conf)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture
def netns() -> Iterator[str]:
    """A namespace whose default route goes over a veth pair into a second namespace that drops it all."""
    if os.geteuid() != 0 or not shutil.which("iptables"):
        pytest.skip("needs root and iptables (network namespaces)")
    tag = uuid.uuid4().hex[:6]
    inner, sink, here, there = f"i40-{tag}", f"i40-{tag}-sink", f"lk{tag}a", f"lk{tag}b"
    etc = pathlib.Path("/etc/netns") / inner
    _ip("netns", "add", inner)
    _ip("netns", "add", sink)
    try:
        _ip("link", "add", here, "netns", inner, "type", "veth", "peer", "name", there, "netns", sink)
        for ns, dev, addr in ((inner, here, "198.51.100.2/24"), (sink, there, "198.51.100.1/24")):
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "addr", "add", addr, "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
        _ip("-n", inner, "route", "add", "default", "via", "198.51.100.1")
        etc.mkdir(parents=True)
        (etc / "resolv.conf").write_text(f"nameserver {RESOLVER}\n")
        yield inner
    finally:
        shutil.rmtree(etc, ignore_errors=True)
        subprocess.run(["ip", "netns", "del", inner], capture_output=True)
        subprocess.run(["ip", "netns", "del", sink], capture_output=True)


def _in(ns: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True, text=True, cwd=ROOT, timeout=60)


def _python(ns: str, code: str) -> str:
    done = _in(ns, sys.executable, "-c", textwrap.dedent(code))
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


SEND = """
    import socket, sys
    out = []
    for address in sys.argv[1:]:
        host, _, port = address.partition(":")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.sendto(b"x", (host, int(port or 9)))
                out.append("sent")
            except OSError as exc:
                out.append(exc.strerror)
    print(",".join(out))
"""


def _send(ns: str, *addresses: str) -> list[str]:
    done = _in(ns, sys.executable, "-c", textwrap.dedent(SEND), *addresses)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().split(",")


def _leaked(ns: str) -> tuple[int, str]:
    done = _in(ns, str(LEAKCOUNT), "check")
    assert done.returncode in (0, 1), done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.endswith("packets left by the default route for a private or link-local address"), done.stdout
    return int(last.split()[1]), done.stdout


def test_the_counter_counts_private_destinations_by_the_default_route_and_check_fails(netns: str) -> None:
    assert _in(netns, str(LEAKCOUNT), "start").returncode == 0
    assert _leaked(netns)[0] == 0 and _in(netns, str(LEAKCOUNT), "check").returncode == 0
    assert _send(netns, "203.0.113.5", f"{RESOLVER}:53") == ["sent", "sent"]  # public; the resolver: allowed
    count, shown = _leaked(netns)
    assert count == 0 and f"allowed 1 packets to {RESOLVER}:53" in shown, shown
    assert _send(netns, "10.1.2.3", "172.20.0.1", "192.168.1.1", "169.254.169.254", f"{RESOLVER}:54") == ["sent"] * 5
    count, shown = _leaked(netns)
    assert count == 5 and "leaked 2 packets to 10.0.0.0/8" in shown, shown
    assert _in(netns, str(LEAKCOUNT), "check").returncode == 1
    assert _in(netns, str(LEAKCOUNT), "stop").returncode == 0
    assert "BINDY-LEAK-COUNT" not in _in(netns, "iptables", "-t", "mangle", "-S").stdout


def test_without_the_fence_a_pod_or_service_address_takes_the_default_route(netns: str) -> None:
    """What the fence is for: with no bridge up, these packets would leave by the default route."""
    _in(netns, str(LEAKCOUNT), "start")
    assert _send(netns, "10.244.0.9", "10.96.0.1:443") == ["sent", "sent"]
    assert _leaked(netns)[0] == 2


def test_with_the_fence_nothing_for_the_node_leaves_before_up_while_up_or_after_down(netns: str) -> None:
    _in(netns, str(LEAKCOUNT), "start")
    _python(netns, "from tests.support import node; node.fence(); node.fence()")  # idempotent
    before = _send(netns, "10.244.0.9", "10.244.0.1", "10.96.0.1:443", "10.96.0.10:53")
    assert before == ["No route to host"] * 4
    # up: the bridge and its routes as `node up` makes them, and a Service DNATed to the node address as
    # kube-proxy does it: the connection gets through the fence
    _python(netns, "from tests.support import node; node.bridge()")
    routes = _in(netns, "ip", "route").stdout
    assert f"unreachable {node.POD_CIDR} metric {node.FENCE_METRIC}" in routes
    assert f"{node.SERVICE_CIDR} dev {node.BRIDGE}" in routes
    _in(netns, "iptables", "-t", "nat", "-A", "OUTPUT", "-d", "10.96.0.1", "-p", "tcp", "--dport", "443",
        "-j", "DNAT", "--to-destination", f"{node.NODE_IP}:8443")
    reply = _python(netns, f"""
        import socket, threading
        server = socket.create_server(("{node.NODE_IP}", 8443))
        threading.Thread(target=lambda: server.accept()[0].sendall(b"through the Service"), daemon=True).start()
        with socket.create_connection(("10.96.0.1", 443), timeout=5) as c:
            print(c.recv(100).decode())
    """)
    assert reply == "through the Service"
    assert _send(netns, "10.244.0.9") == ["sent"]  # onto the bridge (no pod answers), not the default route
    # down: the bridge goes, its routes with it; the fence stays
    _ip("-n", netns, "link", "del", node.BRIDGE)
    assert _send(netns, "10.244.0.9", "10.96.0.1:443") == ["No route to host"] * 2
    count, shown = _leaked(netns)
    assert count == 0, shown


def test_ci_fences_the_nodes_ranges_and_fails_on_a_leak() -> None:
    """.ci/run fences the very ranges the node uses (before anything else runs: the venv that
    `scripts/node fence` needs is made later), counts the whole run and fails on a leak."""
    text = (ROOT / ".ci" / "run").read_text()
    for cidr in (node.POD_CIDR, node.SERVICE_CIDR):
        assert f"ip route replace unreachable {cidr} metric {node.FENCE_METRIC}\n" in text
    assert text.index(".ci/leakcount start") < text.index("scripts/test") < text.index(".ci/leakcount check")
    assert "trap '.ci/leakcount stop' EXIT" in text
