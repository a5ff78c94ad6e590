"""The zone API test server is real: a zone created through it on the primary and the secondary is
served by named; it checks the bearer token and refuses values that would break rndc config."""

from __future__ import annotations

import subprocess
import time
import uuid
from typing import Any

import httpx

from tests.support import bind as bind_support
from tests.support.zone_api import ZoneApi


def _dig(server: bind_support.BindServer, name: str, rtype: str) -> str:
    return subprocess.run(["dig", f"@{server.address}", "-p", str(server.port), name, rtype, "+short",
                           "+time=1", "+tries=1"], capture_output=True, text=True).stdout.strip()


def test_zone_created_through_the_api_is_served_by_primary_and_secondary(
        bind: bind_support.BindPair, zone_api: dict[str, ZoneApi]) -> None:
    zone = f"api{uuid.uuid4().hex[:8]}.test"
    p, s = bind.primary, bind.secondary
    headers = {"Authorization": f"Bearer {zone_api['primary'].token}"}
    body: dict[str, Any] = {
        "zoneName": zone, "zoneType": "primary", "updateKeyName": bind_support.TSIG_NAME,
        "zoneConfig": {"ttl": 300, "soa": {"primaryNs": f"ns1.{zone}.", "adminEmail": f"admin.{zone}."},
                       "nameServers": [f"ns1.{zone}."], "nameServerIps": {f"ns1.{zone}.": p.address},
                       "alsoNotify": [f"{s.address}:{s.port}"]}}
    with httpx.Client(base_url=zone_api["primary"].url, headers=headers, timeout=10) as api:
        assert httpx.get(f"{zone_api['primary'].url}/api/v1/zones", timeout=5).status_code == 401
        created = api.post("/api/v1/zones", json=body)
        assert created.status_code == 201, created.text
        assert api.post("/api/v1/zones", json=body).status_code == 409
        assert zone in api.get("/api/v1/zones").json()["zones"]
        assert api.get(f"/api/v1/zones/{zone}").json()["zoneType"] == "primary"
        bad = api.post("/api/v1/zones", json={**body, "zoneName": 'x"; };'})
        assert bad.status_code == 400
    assert _dig(p, f"ns1.{zone}", "A") == p.address

    with httpx.Client(base_url=zone_api["secondary"].url, headers=headers, timeout=10) as api:
        created = api.post("/api/v1/zones", json={"zoneName": zone, "zoneType": "secondary",
                                                  "zoneConfig": {"primaries": [f"{p.address}:{p.port}"]}})
        assert created.status_code == 201, created.text
    deadline = time.monotonic() + 15
    while _dig(s, zone, "SOA") == "":
        assert time.monotonic() < deadline, "secondary never transferred the zone"
        time.sleep(0.2)

    with httpx.Client(base_url=zone_api["primary"].url, headers=headers, timeout=10) as api:
        assert api.post(f"/api/v1/zones/{zone}/notify").status_code == 200
        assert api.delete(f"/api/v1/zones/{zone}").status_code == 200
        assert api.get(f"/api/v1/zones/{zone}").status_code == 404
    assert _dig(p, zone, "SOA") == ""
