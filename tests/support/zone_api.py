"""A test server that speaks the BIND9 sidecar's zone HTTP API (bindcar; ../shared/bindcar-api.md)
by running real `rndc` against a real `named`. Test support only - the agent's client talks to it
exactly as it would to the sidecar in a pod. Every endpoint but health/ready needs the bearer token.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
from typing import Any

from tests.support.bind import BindServer
from tests.support.procs import ComponentError, free_port

UNSAFE = re.compile(r'["{};\s]')
ZONE = r"(?P<zone>[A-Za-z0-9._-]+)"


class _Error(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ZoneApi:
    def __init__(self, server: BindServer, token: str) -> None:
        self.bind, self.token = server, token
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.requests: list[tuple[str, str]] = []
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _dispatch(self, method: str) -> None:
                api.requests.append((method, self.path))
                try:
                    status, body = api.handle(method, self.path, self.headers.get("Authorization", ""),
                                              self._body())
                except _Error as exc:
                    status, body = exc.status, {"success": False, "message": str(exc)}
                except ComponentError as exc:
                    status, body = 500, {"success": False, "message": str(exc)}
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client was killed meanwhile
                    pass

            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                if not length:
                    return None
                try:
                    return json.loads(self.rfile.read(length))
                except ValueError as exc:
                    raise _Error(400, f"invalid JSON: {exc}") from exc

            def do_GET(self) -> None:
                self._dispatch("GET")

            def do_POST(self) -> None:
                self._dispatch("POST")

            def do_DELETE(self) -> None:
                self._dispatch("DELETE")

            def do_PATCH(self) -> None:
                self._dispatch("PATCH")

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="zone-api", daemon=True)

    def start(self) -> ZoneApi:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)

    def logs(self) -> dict[str, str]:
        return {f"zone API {self.url}": "\n".join(f"{m} {p}" for m, p in self.requests[-40:])}

    # --- the contract -------------------------------------------------------------------------
    def denied(self, auth: str) -> tuple[int, str] | None:
        """Why a request with this Authorization header is refused (status, message); None: allowed.
        The static token here; the e2e image's sidecar asks the API server (images/zone-api/serve.py)."""
        if auth != f"Bearer {self.token}":
            return 401, "missing or invalid bearer token"
        return None

    def handle(self, method: str, path: str, auth: str, body: Any) -> tuple[int, Any]:
        if method == "GET" and path in ("/api/v1/health", "/api/v1/ready"):
            return 200, {"status": "ok"}
        denied = self.denied(auth)
        if denied is not None:
            raise _Error(*denied)
        if method == "GET" and path == "/api/v1/server/status":
            return 200, {"status": self.bind.rndc("status")}
        if path == "/api/v1/zones":
            if method == "POST":
                return self._create(body)
            if method == "GET":
                zones = self._zones()
                return 200, {"zones": zones, "count": len(zones)}
        m = re.fullmatch(rf"/api/v1/zones/{ZONE}(?P<rest>/[a-z]+)?", path)
        if not m:
            raise _Error(404, f"no route {method} {path}")
        zone, rest = m["zone"], m["rest"] or ""
        if not self._exists(zone):
            raise _Error(404, f"zone {zone} not found")
        if method == "GET" and rest == "":
            return 200, self._info(zone)
        if method == "GET" and rest == "/status":
            return 200, {"zoneName": zone, "status": self.bind.rndc("zonestatus", zone)}
        if method == "DELETE" and rest == "":
            self.bind.rndc("delzone", "-clean", zone)
            return 200, {"success": True, "message": f"zone {zone} deleted"}
        if method == "PATCH" and rest == "":
            return self._modify(zone, body or {})
        if method == "POST" and rest in ("/reload", "/freeze", "/thaw", "/notify"):
            self.bind.rndc(rest[1:], zone)
            return 200, {"success": True, "message": f"{rest[1:]} {zone}"}
        raise _Error(404, f"no route {method} {path}")

    def _zones(self) -> list[str]:
        """Zones with a file: primaries at once, secondaries once their first transfer wrote one."""
        listed = [p.name[: -len(".db")] for p in self.bind.dir.glob("*.db")]
        listed += [p.name[: -len(".sec")] for p in self.bind.dir.glob("*.sec")]
        return sorted(z for z in set(listed) if self._exists(z))

    def _exists(self, zone: str) -> bool:
        try:
            self.bind.rndc("zonestatus", zone)
            return True
        except ComponentError:
            return False

    def _info(self, zone: str) -> dict[str, Any]:
        status = self.bind.rndc("zonestatus", zone)
        serial = re.search(r"serial: (\d+)", status)
        kind = re.search(r"type: (\w+)", status)
        return {"name": zone, "zoneType": kind[1] if kind else None, "serial": int(serial[1]) if serial else None,
                "filePath": str(self.bind.dir / f"{zone}.db")}

    @staticmethod
    def _check(value: Any, what: str) -> str:
        if not isinstance(value, str) or not value or UNSAFE.search(value):
            raise _Error(400, f"invalid {what}: {value!r}")
        return value

    def _ips(self, values: Any, what: str) -> list[str]:
        return [self._check(v, what) for v in values or []]

    def _create(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict):
            raise _Error(400, "body must be a JSON object")
        zone = self._check(body.get("zoneName"), "zoneName").rstrip(".")
        kind = body.get("zoneType")
        cfg = body.get("zoneConfig") or {}
        if self._exists(zone):
            raise _Error(409, f"zone {zone} already exists")
        notify = " ".join(f"{self._addr(a)};" for a in self._ips(cfg.get("alsoNotify"), "alsoNotify"))
        transfer = " ".join(f"{a};" for a in self._ips(cfg.get("allowTransfer"), "allowTransfer"))
        if kind == "primary":
            soa = cfg.get("soa") or {}
            primary_ns = self._check(soa.get("primaryNs"), "soa.primaryNs")
            admin = self._check(soa.get("adminEmail"), "soa.adminEmail")
            lines = [f"$TTL {int(cfg.get('ttl', 3600))}",
                     f"@ IN SOA {primary_ns} {admin} {int(soa.get('serial', 1))} {int(soa.get('refresh', 3600))} "
                     f"{int(soa.get('retry', 600))} {int(soa.get('expire', 604800))} {int(soa.get('negativeTtl', 86400))}"]
            for ns in cfg.get("nameServers") or [primary_ns]:
                lines.append(f"@ IN NS {self._check(ns, 'nameServers')}")
            for host, ip in (cfg.get("nameServerIps") or {}).items():
                rtype = "AAAA" if ":" in ip else "A"
                lines.append(f"{self._check(host, 'nameServerIps')} IN {rtype} {self._check(ip, 'nameServerIps')}")
            for r in cfg.get("records") or []:
                prio = f"{int(r['priority'])} " if r.get("priority") is not None else ""
                lines.append(f"{self._check(r['name'], 'record name')} {int(r.get('ttl') or 3600)} IN "
                             f"{self._check(r['type'], 'record type')} {prio}{r['value']}")
            (self.bind.dir / f"{zone}.db").write_text("\n".join(lines) + "\n")
            options = f'type primary; file "{zone}.db";'
            key = body.get("updateKeyName")
            if key:
                options += f' allow-update {{ key "{self._check(key, "updateKeyName")}"; }};'
        elif kind == "secondary":
            primaries = self._ips(cfg.get("primaries"), "primaries")
            if not primaries:
                raise _Error(400, "secondary zones need zoneConfig.primaries")
            options = (f'type secondary; file "{zone}.sec"; '
                       f"primaries {{ {' '.join(self._addr(p) + ';' for p in primaries)} }};")
        else:
            raise _Error(400, f"zoneType must be primary or secondary, got {kind!r}")
        if notify:
            options += f" also-notify {{ {notify} }};"
        if transfer:
            options += f" allow-transfer {{ {transfer} }};"
        # like bindcar: the policy and inline signing as given, for any zone type
        if cfg.get("dnssecPolicy") is not None:
            options += f' dnssec-policy "{self._check(cfg["dnssecPolicy"], "dnssecPolicy")}";'
        if cfg.get("inlineSigning") is not None:
            options += f" inline-signing {'yes' if cfg['inlineSigning'] else 'no'};"
        self.bind.rndc("addzone", zone, f"{{ {options} }};")
        return 201, {"success": True, "message": f"zone {zone} created", "details": options}

    @staticmethod
    def _addr(value: str) -> str:
        host, _, port = value.rpartition(":") if value.count(":") == 1 else (value, "", "")
        return f"{host} port {port}" if port else value

    def _modify(self, zone: str, body: dict[str, Any]) -> tuple[int, Any]:
        fields = {k: body.get(k) for k in ("alsoNotify", "allowTransfer", "allowUpdate") if body.get(k) is not None}
        if not fields:
            raise _Error(400, "PATCH needs at least one of alsoNotify, allowTransfer, allowUpdate")
        # like bindcar: the zone's current configuration (`rndc showzone`) with only the given fields replaced
        options = ""
        for key, clause in (("alsoNotify", "also-notify"), ("allowTransfer", "allow-transfer"),
                            ("allowUpdate", "allow-update")):
            if key in fields:
                values = " ".join(f"{self._addr(v)};" for v in self._ips(fields[key], key))
                options += f" {clause} {{ {values} }};"
        replaced = {clause for key, clause in (("alsoNotify", "also-notify"), ("allowTransfer", "allow-transfer"),
                                               ("allowUpdate", "allow-update")) if key in fields}
        kept = [c for c in _clauses(self.bind.rndc("showzone", zone)) if c.split()[0] not in replaced]
        options = " ".join(f"{c};" for c in kept) + options
        self.bind.rndc("modzone", zone, f"{{ {options} }};")
        return 200, {"success": True, "message": f"zone {zone} modified"}


def _clauses(showzone: str) -> list[str]:
    """The top-level clauses of `rndc showzone` output: 'type primary', 'allow-update { key "k"; }', ..."""
    inner = showzone[showzone.index("{") + 1: showzone.rindex("}")]
    out, depth, current = [], 0, ""
    for char in inner:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == ";" and depth == 0:
            out.append(current.strip())
            current = ""
        else:
            current += char
    return [c for c in out if c]
