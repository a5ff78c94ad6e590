"""Real BIND9 `named` processes on their own loopback addresses, with a TSIG key for DNS UPDATE,
an rndc control channel, `allow-new-zones yes`, and transfers + NOTIFY between them.

named listens only on addresses configured on an interface, so each address is added to `lo`
first (binding the control channel alone would work without it and hide the problem).
"""

from __future__ import annotations

import base64
import dataclasses
import pathlib
import secrets
import signal
import socket
import subprocess

from tests.support.procs import ComponentError, Process, free_port, require, run

TSIG_NAME = "bindy-test-tsig"
RNDC_NAME = "rndc-key"


def ensure_loopback(address: str) -> None:
    shown = subprocess.run(["ip", "-4", "addr", "show", "dev", "lo"], capture_output=True, text=True).stdout
    if f"inet {address}/" in shown:
        return
    result = subprocess.run(["ip", "addr", "add", f"{address}/32", "dev", "lo"], capture_output=True, text=True)
    if result.returncode != 0 and "File exists" not in result.stderr:
        raise ComponentError(f"named: cannot add {address} to lo ({result.stderr.strip()}); run as root "
                             f"or `ip addr add {address}/32 dev lo` first")


def _secret() -> str:
    return base64.b64encode(secrets.token_bytes(32)).decode()


@dataclasses.dataclass
class Keys:
    tsig: str = dataclasses.field(default_factory=_secret)
    rndc: str = dataclasses.field(default_factory=_secret)


class BindServer:
    def __init__(self, workdir: pathlib.Path, address: str, keys: Keys, name: str, extra: str = "") -> None:
        self.dir, self.address, self.keys, self.name = workdir, address, keys, name
        self.extra = extra  # top-level named.conf statements after the options (e.g. dnssec-policy blocks)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = 0
        self.rndc_port = 0
        self.proc: Process | None = None

    @property
    def rndc_conf(self) -> pathlib.Path:
        return self.dir / "rndc.conf"

    def start(self) -> BindServer:
        named = require("named", component="named (bind9)")
        require("rndc", component="rndc (bind9-utils)")
        ensure_loopback(self.address)
        self.port, self.rndc_port = free_port(self.address), free_port()
        keys = (f'key "{TSIG_NAME}" {{ algorithm hmac-sha256; secret "{self.keys.tsig}"; }};\n'
                f'key "{RNDC_NAME}" {{ algorithm hmac-sha256; secret "{self.keys.rndc}"; }};\n')
        conf = self.dir / "named.conf"
        conf.write_text(keys + f"""
controls {{ inet 127.0.0.1 port {self.rndc_port} allow {{ 127.0.0.1; }} keys {{ "{RNDC_NAME}"; }}; }};
options {{
    directory "{self.dir}";
    pid-file "{self.dir}/named.pid";
    session-keyfile "{self.dir}/session.key";
    managed-keys-directory "{self.dir}";
    listen-on port {self.port} {{ {self.address}; }};
    listen-on-v6 {{ none; }};
    allow-new-zones yes;
    recursion no;
    dnssec-validation no;
    allow-query {{ any; }};
    allow-transfer {{ 127.0.0.0/8; }};
    notify-source {self.address};
    transfer-source {self.address};
    notify explicit;
    notify-delay 0;
    notify-rate 1000;
    serial-query-rate 1000;
    transfers-per-ns 10;
    minimal-responses yes;
}};
logging {{ category default {{ default_stderr; }}; category lame-servers {{ null; }}; }};
""" + self.extra)
        self.rndc_conf.write_text(keys + f'options {{ default-key "{RNDC_NAME}"; default-server 127.0.0.1; '
                                  f'default-port {self.rndc_port}; }};\n')
        self.proc = Process(f"named {self.name} ({self.address}:{self.port})",
                            [named, "-g", "-c", str(conf), "-n", "1"], self.dir / "named.log")
        self.proc.wait_until(self._answers, timeout=30, what="answering rndc and DNS")
        return self

    def _answers(self) -> bool:
        self.rndc("status")
        with socket.create_connection((self.address, self.port), timeout=1):
            return True

    def rndc(self, *args: str) -> str:
        return run(["rndc", "-c", str(self.rndc_conf), *args])

    def logs(self) -> dict[str, str]:
        return {self.proc.name: self.proc.tail(60)} if self.proc else {}

    def stop(self) -> None:
        if self.proc:
            self.proc.stop()

    # -- faults, for the tests that own this server ----------------------------------------------
    def kill(self) -> None:
        """SIGKILL: named dies without flushing anything it has not written yet."""
        assert self.proc is not None
        self.proc.kill()

    def pause(self) -> None:
        """SIGSTOP: the kernel still accepts connections, named answers nothing."""
        assert self.proc is not None
        self.proc.signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.signal(signal.SIGCONT)

    def restart(self) -> None:
        """named again with the same config and directory: its added zones (NZD) and journals come back."""
        assert self.proc is not None
        self.proc.restart()
        self.proc.wait_until(self._answers, timeout=30, what="answering rndc and DNS after a restart")


@dataclasses.dataclass
class BindPair:
    primary: BindServer
    secondary: BindServer
    keys: Keys

    def logs(self) -> dict[str, str]:
        return {**self.primary.logs(), **self.secondary.logs()}

    def stop(self) -> None:
        self.secondary.stop()
        self.primary.stop()


def start_pair(workdir: pathlib.Path, extra: str = "") -> BindPair:
    """`extra`: named.conf statements both servers get after their options (dnssec-policy blocks)."""
    keys = Keys()
    primary = BindServer(workdir / "primary", "127.0.0.10", keys, "primary", extra)
    secondary = BindServer(workdir / "secondary", "127.0.0.11", keys, "secondary", extra)
    pair = BindPair(primary, secondary, keys)
    try:
        primary.start()
        secondary.start()
    except BaseException:
        pair.stop()
        raise
    return pair
