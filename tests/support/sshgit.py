"""A real sshd on loopback serving Git over SSH with one deploy key, for testing the agent's SSH
auth and host-key checking. It runs as the current (root) user with its own host key, config and
authorized_keys; nothing of the machine's own SSH setup is used or changed."""

from __future__ import annotations

import pathlib
import socket

from tests.support.procs import Process, free_port, require, run


class SshGitServer:
    def __init__(self, workdir: pathlib.Path) -> None:
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc: Process | None = None
        self.client_key = self.dir / "deploy_key"
        self.known_hosts = self.dir / "known_hosts"
        self.wrong_known_hosts = self.dir / "known_hosts.wrong"

    def start(self) -> SshGitServer:
        sshd = require("sshd", component="sshd (openssh-server)")
        keygen = require("ssh-keygen", component="ssh-keygen (openssh-client)")
        host_key, other_key = self.dir / "host_key", self.dir / "other_host_key"
        for key in (host_key, other_key, self.client_key):
            run([keygen, "-q", "-t", "ed25519", "-N", "", "-f", str(key)])
        (self.dir / "authorized_keys").write_text((self.dir / "deploy_key.pub").read_text())
        (self.dir / "authorized_keys").chmod(0o600)
        host_pub = (self.dir / "host_key.pub").read_text().split()
        other_pub = (self.dir / "other_host_key.pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {host_pub[0]} {host_pub[1]}\n")
        self.wrong_known_hosts.write_text(f"[127.0.0.1]:{self.port} {other_pub[0]} {other_pub[1]}\n")
        config = self.dir / "sshd_config"
        config.write_text(f"""Port {self.port}
ListenAddress 127.0.0.1
HostKey {host_key}
PidFile {self.dir}/sshd.pid
AuthorizedKeysFile {self.dir}/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
""")
        pathlib.Path("/run/sshd").mkdir(exist_ok=True)
        self.proc = Process("sshd", [sshd, "-D", "-e", "-f", str(config)], self.dir / "sshd.log")
        self.proc.wait_until(self._listening, timeout=15, what="listening")
        return self

    def _listening(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1):
            return True

    def url(self, path: pathlib.Path) -> str:
        return f"ssh://root@127.0.0.1:{self.port}{path}"

    def logs(self) -> dict[str, str]:
        return {"sshd": self.proc.tail(40)} if self.proc else {}

    def stop(self) -> None:
        if self.proc:
            self.proc.stop()
