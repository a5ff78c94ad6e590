"""The zone HTTP API sidecar of the e2e node's bind9 pods.

It serves tests/support/zone_api.py - the server the integration tests already use in place of
bindcar - unchanged, with bindcar's environment contract (the env agent/desired/workloads.py
`_bindcar` gives the sidecar):

    BIND_ZONE_DIR   named's directory, shared with the bind9 container (zone files go there)
    RNDC_SERVER     host:port of named's control channel (127.0.0.1:8953)
    RNDC_ALGORITHM  the RNDC key's algorithm (hmac-sha256)
    RNDC_SECRET     the RNDC key's secret (from the instance's Secret)
    API_PORT        the port to serve on, on every address of the pod (8080)
    BIND_API_TOKEN  a static bearer token the API accepts (the smoke test's pods only). Unset:
                    bindcar's TokenReview mode, below.
    BIND_ALLOWED_SERVICE_ACCOUNTS  comma-separated `system:serviceaccount:NS:NAME` allowed to call
    BIND_TOKEN_AUDIENCES           comma-separated audiences a caller's token must be bound to

TokenReview mode, as bindcar does it: the caller's bearer token is sent to the API server in a
TokenReview (authentication.k8s.io/v1, the audiences above), made with the sidecar's own
ServiceAccount token (KUBERNETES_SERVICE_HOST/PORT, the token and ca.crt in
/var/run/secrets/kubernetes.io/serviceaccount, re-read on every review: the kubelet rotates it).
Unauthenticated: 401; authenticated as an account not allowed: 403. A verdict is kept 30 s per
token. The pod's ServiceAccount needs `create tokenreviews` (deploy/bind9-tokenreview.yaml).

The rndc configuration goes to a private file under $TMPDIR (/tmp, a volume in the generated pod:
the root filesystem is read-only).
"""

from __future__ import annotations

import collections
import hashlib
import http.server
import json
import os
import pathlib
import re
import secrets
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import types
import urllib.error
import urllib.request


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
ALLOWED = {a.strip() for a in os.environ.get("BIND_ALLOWED_SERVICE_ACCOUNTS", "").split(",")
           if a.strip()}
AUDIENCES = [a.strip() for a in os.environ.get("BIND_TOKEN_AUDIENCES", "").split(",") if a.strip()]
SA_DIR = pathlib.Path("/var/run/secrets/kubernetes.io/serviceaccount")
VERDICT_SECONDS = 30

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
for _name, _module in {"tests": types.ModuleType("tests"),
                       "tests.support": types.ModuleType("tests.support"),
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
            done = subprocess.run(["rndc", "-c", self.conf, *args], capture_output=True, text=True,
                                  timeout=30)
        except subprocess.TimeoutExpired as exc:
            raise ComponentError(f"rndc {' '.join(args[:1])}: no answer within 30 s") from exc
        if done.returncode != 0:
            output = f"{done.stdout}{done.stderr}".strip()
            raise ComponentError(f"rndc {' '.join(args)} failed ({done.returncode}): {output}")
        return done.stdout


class TokenReviewer:
    """bindcar's authentication: the API server says who a bearer token belongs to."""

    def __init__(self) -> None:
        host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        self.url = f"https://{'[' + host + ']' if ':' in host else host}:{port}" \
            "/apis/authentication.k8s.io/v1/tokenreviews"
        self.verdicts: dict[str, tuple[float, tuple[int, str] | None]] = {}
        self.lock = threading.Lock()

    def denied(self, auth: str) -> tuple[int, str] | None:
        scheme, _, token = auth.partition(" ")
        if scheme != "Bearer" or not token.strip():
            return 401, "missing bearer token"
        digest = hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        with self.lock:
            kept = self.verdicts.get(digest)
            if kept and now - kept[0] < VERDICT_SECONDS:
                return kept[1]
        verdict = self._review(token.strip())
        with self.lock:
            self.verdicts = {k: v for k, v in self.verdicts.items() if now - v[0] < VERDICT_SECONDS}
            self.verdicts[digest] = (now, verdict)
        return verdict

    def _review(self, token: str) -> tuple[int, str] | None:
        spec = {"token": token, **({"audiences": AUDIENCES} if AUDIENCES else {})}
        body = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                           "spec": spec}).encode()
        try:
            own = (SA_DIR / "token").read_text().strip()
            ctx = ssl.create_default_context(cafile=str(SA_DIR / "ca.crt"))
            req = urllib.request.Request(self.url, data=body, method="POST", headers={
                "Authorization": f"Bearer {own}", "Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10, context=ctx) as resp:
                status = json.loads(resp.read()).get("status") or {}
        except (OSError, ValueError) as exc:  # urllib.error.URLError is an OSError
            detail = ""
            if isinstance(exc, urllib.error.HTTPError):
                detail = exc.read().decode(errors="replace")[:300]
            print(f"zone-api: TokenReview failed: {exc} {detail}".rstrip(), file=sys.stderr)
            return 500, f"cannot review the token with the API server: {exc}"
        if not status.get("authenticated"):
            why = status.get("error") or "rejected by the API server"
            return 401, f"token not authenticated: {why}"
        user = (status.get("user") or {}).get("username", "")
        if user not in ALLOWED:
            return 403, f"{user} is not an allowed service account"
        return None


def main() -> None:
    api = zone_api.ZoneApi(Rndc(), TOKEN or secrets.token_hex(32))
    if not TOKEN:
        if not ALLOWED:
            print("zone-api: neither BIND_API_TOKEN nor BIND_ALLOWED_SERVICE_ACCOUNTS set: every "
                  "endpoint but health/ready answers 401", file=sys.stderr)
        api.denied = TokenReviewer().denied
    # the test server keeps every request for its logs; a long-running sidecar the last 200
    api.requests = collections.deque(maxlen=200)
    handler = api.httpd.RequestHandlerClass
    # the test server listens on loopback only; a sidecar on the pod's addresses
    api.httpd.server_close()
    api.httpd = http.server.ThreadingHTTPServer(("", PORT), handler)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=api.httpd.shutdown).start())
    print(f"zone-api: serving on :{PORT}, rndc {RNDC_SERVER}, zones in {ZONE_DIR}", file=sys.stderr)
    api.httpd.serve_forever()


if __name__ == "__main__":
    main()
