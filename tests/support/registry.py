"""A private image registry for the e2e node, as a user's private mirror of Bindy's images would be.

Debian's `docker-registry` (distribution 2.8) on loopback, with TLS (a self-signed certificate for
127.0.0.1, made here) and htpasswd basic auth (bcrypt, `htpasswd -B`). containerd on the node reaches
it directly (Go never proxies a loopback address; everything else it fetches goes to a closed port:
tests/support/node.py) and is told of it by a hosts.toml under the node's registry config_path
(`Node.registry_hosts`, read at every pull): `mirror(host)` makes this registry the server of a
registry host, its CA trusted. The images keep the names Bindy's admission trusts (e.g.
docker.io/internetsystemsconsortium/bind9:<tag>), which is how a cluster without Internet access
serves them: a registry mirror. `push` copies a locally built image there with skopeo.

Credentials come only from the pod's image pull Secret: containerd has none of its own for this
registry, so a pull without the Secret, or with a wrong password, gets 401 (ErrImagePull).
"""

from __future__ import annotations

import base64
import json
import pathlib
import secrets
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request

from tests.support.node import IMAGES, Node
from tests.support.procs import ComponentError, Process, free_port, require

HOST = "127.0.0.1"
FIX = "apt-get install docker-registry apache2-utils skopeo (scripts/install-test-deps)"


class Registry:
    def __init__(self, node: Node, root: pathlib.Path, *, user: str = "bindy-pull") -> None:
        self.node, self.root, self.user = node, root, user
        self.password = secrets.token_hex(16)
        self.port = free_port(HOST)
        self.address = f"{HOST}:{self.port}"
        self.ca = root / "certs" / "ca.crt"  # the self-signed certificate is its own CA
        self.proc: Process | None = None
        self.mirrored: list[pathlib.Path] = []

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        binary = require("docker-registry", component=f"image registry ({FIX})")
        htpasswd = require("htpasswd", component=f"image registry's htpasswd ({FIX})")
        (self.root / "certs").mkdir(parents=True, exist_ok=True)
        key = self.root / "registry.key"  # not beside the CA: skopeo's cert dir takes a *.key for a client's
        subprocess.run([require("openssl", component="openssl"), "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", f"/CN={HOST}",
                        "-addext", f"subjectAltName=IP:{HOST}", "-keyout", str(key), "-out", str(self.ca)],
                       check=True, capture_output=True)
        users = self.root / "htpasswd"
        users.write_text(subprocess.run([htpasswd, "-nbB", self.user, self.password], check=True, capture_output=True,
                                        text=True).stdout)
        config = self.root / "config.yml"
        config.write_text(json.dumps({  # YAML is a superset of JSON
            "version": 0.1,
            "log": {"level": "info", "accesslog": {"disabled": False}},
            "storage": {"filesystem": {"rootdirectory": str(self.root / "data")}},
            "http": {"addr": self.address, "tls": {"certificate": str(self.ca), "key": str(key)}},
            "auth": {"htpasswd": {"realm": "bindy-e2e", "path": str(users)}},
        }, indent=1))
        self.proc = Process("docker-registry", [binary, "serve", str(config)], self.root / "registry.log")
        self.proc.wait_until(self._answers, timeout=30, what=f"serving https://{self.address}/v2/")

    def _answers(self) -> bool:
        try:
            urllib.request.urlopen(f"https://{self.address}/v2/", timeout=2,
                                   context=ssl.create_default_context(cafile=str(self.ca)))
        except urllib.error.HTTPError as exc:
            return exc.code == 401  # up, and asking for credentials
        return False

    def stop(self) -> None:
        self.unmirror()
        if self.proc is not None:
            self.proc.stop()
            self.proc = None

    def log(self, lines: int = 40) -> str:
        return self.proc.tail(lines) if self.proc is not None else ""

    def requests(self) -> list[str]:
        """The access log's lines (`"GET /v2/... HTTP/1.1" 200 ... "<user agent>"`), oldest first."""
        text = self.proc.log.read_text(errors="replace") if self.proc is not None else ""
        return [line for line in text.splitlines() if '"' in line and " HTTP/1.1\" " in line]

    # --- images -------------------------------------------------------------------------------
    def push(self, name: str, repository: str, tag: str) -> str:
        """Copies the locally built image `name` (images/build's docker-archive) to
        `<this registry>/<repository>:<tag>`; returns that reference."""
        ref = self.node.image(name)
        tarball = IMAGES / f"{name}-{ref.rpartition(':')[2]}.tar"
        if not tarball.exists():
            raise ComponentError(f"image {name}: {tarball} missing; run images/build {name}")
        dest = f"{self.address}/{repository}:{tag}"
        authfile = self.root / "push-auth.json"
        authfile.write_text(self.dockerconfigjson(self.address))
        done = subprocess.run([require("skopeo", component=f"skopeo ({FIX})"), "copy", "--quiet",
                               "--dest-authfile", str(authfile), "--dest-cert-dir", str(self.ca.parent),
                               f"docker-archive:{tarball}:{ref}", f"docker://{dest}"], capture_output=True, text=True,
                              timeout=300, check=False)
        if done.returncode != 0:
            raise ComponentError(f"skopeo copy {name} -> {dest} failed ({done.returncode}): {done.stderr.strip()}\n"
                                 f"registry log:\n{self.log(10)}")
        return dest

    def mirror(self, host: str) -> None:
        """containerd pulls images named `host/...` from this registry (and only from it), trusting its CA."""
        if not self.node.registry_hosts.is_dir():
            raise ComponentError(f"the running node has no containerd registry config_path ({self.node.registry_hosts}):"
                                 " it was started before tests/support/node.py set one; restart it "
                                 "(scripts/node down && scripts/node up)")
        path = self.node.registry_hosts / host / "hosts.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        ca = path.parent / "ca.crt"
        shutil.copyfile(self.ca, ca)
        # containerd 1.6 wants a [host] table (without one: "failed to decode hosts.toml: invalid `host`
        # tree"); the server is the same registry, so no pull falls through to the real host
        path.write_text(f'server = "https://{self.address}"\nca = "{ca}"\n\n[host."https://{self.address}"]\n'
                        f'  capabilities = ["pull", "resolve"]\n  ca = "{ca}"\n')
        self.mirrored.append(path.parent)

    def unmirror(self) -> None:
        for directory in self.mirrored:
            shutil.rmtree(directory, ignore_errors=True)
        self.mirrored = []

    def dockerconfigjson(self, host: str, *, password: str | None = None) -> str:
        """A `.dockerconfigjson` with this registry's user for images named `host/...`."""
        secret = password if password is not None else self.password
        auth = base64.b64encode(f"{self.user}:{secret}".encode()).decode()
        return json.dumps({"auths": {host: {"username": self.user, "password": secret, "auth": auth}}})
