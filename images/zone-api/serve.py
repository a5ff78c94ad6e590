"""The zone HTTP API sidecar of the e2e node's bind9 pods.

It serves tests/support/zone_api.py - the server the integration tests already use in place of
bindcar - unchanged, with bindcar's environment contract (the env agent/desired/workloads.py
`_bindcar` gives the sidecar):

    BIND_ZONE_DIR   named's directory, shared with the bind9 container (zone files are written there)
    RNDC_SERVER     host:port of named's control channel (127.0.0.1:8953)
    RNDC_ALGORITHM  the RNDC key's algorithm (hmac-sha256)
    RNDC_SECRET     the RNDC key's secret (from the instance's Secret)
    API_PORT        the port to serve on, on every address of the pod (8080)
    BIND_API_TOKEN  the bearer token the API accepts (test images only; bindcar checks a
                    ServiceAccount token with a TokenReview). Unset: only health and ready answer.

The rndc configuration goes to a private file under $TMPDIR (/tmp, a volume in the generated pod:
the root filesystem is read-only).
"""

from __future__ import annotations

import collections
import http.server
import os
import pathlib
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import types


class ComponentError(RuntimeError):
    """rndc failed: the API answers 500 with its message."""


def _env(name: str, default: str | None = None) -> str:
    value = os.environ.get(name, default)
    if value is None or value == "":
        sys.exit(f"zone-api: environment variable {name} is required")
    return value


ZONE_DIR = pathlib.Path(_env("BIND_ZONE_DIR", "/var/cache/bind"))
RNDC_SERVER = _env("RNDC_SERVER", "127.0.0.1:953")
ALGORITHM = _env("RNDC_ALGORITHM", "hmac-sha256")
SECRET = _env("RNDC_SECRET")
PORT = int(_env("API_PORT", "8080"))
TOKEN = os.environ.get("BIND_API_TOKEN", "")

if not re.fullmatch(r"hmac-(md5|sha1|sha224|sha256|sha384|sha512)", ALGORITHM):
    sys.exit(f"zone-api: RNDC_ALGORITHM {ALGORITHM!r} is not an HMAC algorithm rndc knows")
if not re.fullmatch(r"[A-Za-z0-9+/=]+", SECRET):
    sys.exit("zone-api: RNDC_SECRET is not base64")
_host, _, _port = RNDC_SERVER.rpartition(":")
if not re.fullmatch(r"[0-9.]+|\[[0-9a-fA-F:]+\]", _host) or not _port.isdigit():
    sys.exit(f"zone-api: RNDC_SERVER {RNDC_SERVER!r} is not ADDRESS:PORT")

# zone_api.py imports these two test-support modules; the image has only what it uses of them.
_procs = types.ModuleType("tests.support.procs")
_procs.ComponentError = ComponentError  # type: ignore[attr-defined]
_procs.free_port = lambda host="127.0.0.1": PORT  # type: ignore[attr-defined]
_bind = types.ModuleType("tests.support.bind")
_bind.BindServer = object  # type: ignore[attr-defined]
for _name, _module in {"tests": types.ModuleType("tests"), "tests.support": types.ModuleType("tests.support"),
                       "tests.support.procs": _procs, "tests.support.bind": _bind}.items():
    sys.modules.setdefault(_name, _module)

import zone_api  # type: ignore[import-not-found]  # noqa: E402  (after the stand-ins above)


class Rndc:
    """What ZoneApi needs of a BindServer: named's directory and `rndc`."""

    def __init__(self) -> None:
        self.dir = ZONE_DIR
        fd, path = tempfile.mkstemp(prefix="rndc-", suffix=".conf")
        with os.fdopen(fd, "w") as fh:
            fh.write(f'key "bindcar" {{ algorithm {ALGORITHM}; secret "{SECRET}"; }};\n'
                     f'options {{ default-key "bindcar"; default-server {_host.strip("[]")}; '
                     f"default-port {_port}; }};\n")
        self.conf = path

    def rndc(self, *args: str) -> str:
        try:
            done = subprocess.run(["rndc", "-c", self.conf, *args], capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired as exc:
            raise ComponentError(f"rndc {' '.join(args[:1])}: no answer within 30 s") from exc
        if done.returncode != 0:
            output = f"{done.stdout}{done.stderr}".strip()
            raise ComponentError(f"rndc {' '.join(args)} failed ({done.returncode}): {output}")
        return done.stdout


def main() -> None:
    if not TOKEN:
        print("zone-api: BIND_API_TOKEN not set: every endpoint but health/ready answers 401", file=sys.stderr)
    api = zone_api.ZoneApi(Rndc(), TOKEN or secrets.token_hex(32))
    # the test server keeps every request for its logs; a long-running sidecar the last 200
    api.requests = collections.deque(maxlen=200)
    handler = api.httpd.RequestHandlerClass
    api.httpd.server_close()  # the test server listens on loopback only; a sidecar on the pod's addresses
    api.httpd = http.server.ThreadingHTTPServer(("", PORT), handler)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=api.httpd.shutdown).start())
    print(f"zone-api: serving on :{PORT}, rndc {RNDC_SERVER}, zones in {ZONE_DIR}", file=sys.stderr)
    api.httpd.serve_forever()


if __name__ == "__main__":
    main()
