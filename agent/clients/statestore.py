"""Where the agent keeps what it owns between runs: a local directory, or ConfigMaps in its namespace.

One small record per zone (agent/model/ownership.py) and one for the run, so a run that touches
one zone writes one zone's record - twice: its intent before the first write, settled after.

    FileStore(DIR)       DIR/run.json, DIR/zones/<zone>.json        (runs without a cluster)
    ConfigMapStore(api)  ConfigMap bindy-agent-state (the run), one ConfigMap per zone labelled
                         bindy.firestoned.io/state=zone, gzip-compressed when large

Every write is atomic (a rename, or one server-side apply), so a kill never leaves half a
record. The single-file / single-ConfigMap layout of earlier versions is read and converted.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import pathlib
import re
import threading
from typing import Any, Protocol

from agent.clients.kubeapi import KubeApi
from agent.errors import ConfigError
from agent.model import names
from agent.model.ownership import RunState, ZoneOwnership, from_legacy

STATE_LABEL = "bindy.firestoned.io/state"
_PLAIN_LIMIT = 256 * 1024  # larger zone records are stored gzip-compressed (a ConfigMap holds at most 1 MiB)
_SAFE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


class Store(Protocol):
    def load_run(self) -> RunState: ...
    def save_run(self, state: RunState) -> None: ...
    def suspend(self, on: bool) -> None: ...
    def load_zones(self, *, refresh: bool = True) -> dict[str, ZoneOwnership]: ...
    def save_zone(self, zone: ZoneOwnership) -> None: ...


class _Remembered:
    """The zone records as last read or written by this process: a long-running agent (the only
    writer, by leader election) reads them back only when asked to refresh."""

    def __init__(self) -> None:
        self._zones: dict[str, ZoneOwnership] | None = None
        self._zones_lock = threading.Lock()

    def _recall(self, refresh: bool) -> dict[str, ZoneOwnership] | None:
        with self._zones_lock:
            return None if refresh or self._zones is None else dict(self._zones)

    def _remember_all(self, zones: dict[str, ZoneOwnership]) -> dict[str, ZoneOwnership]:
        """A record read back that says what the remembered one says stays the very same object (a
        zone's plan is reused while its inputs are the same objects: agent/desired/memo.py)."""
        with self._zones_lock:
            old = self._zones or {}
            zones = {name: old[name] if old.get(name) == zone else zone for name, zone in zones.items()}
            self._zones = dict(zones)
        return zones

    def _remember(self, zone: ZoneOwnership) -> None:
        with self._zones_lock:
            if self._zones is not None:
                if zone.empty:
                    self._zones.pop(zone.zone, None)
                else:
                    self._zones[zone.zone] = zone


def _file_name(zone: str) -> str:
    base = zone.rstrip(".")
    return base if _SAFE.match(base) and len(base) < 200 else hashlib.sha256(zone.encode()).hexdigest()[:32]


def _write_atomic(path: pathlib.Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)  # a kill leaves the old or the new record, never half of one


class FileStore(_Remembered):
    """The state as files in a directory (created on first save)."""

    def __init__(self, path: pathlib.Path) -> None:
        super().__init__()
        self.root = path
        self._legacy: tuple[RunState, dict[str, ZoneOwnership]] | None = None
        if path.is_file():  # an earlier version's single state file
            try:
                self._legacy = from_legacy(path.read_text())
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise self._unreadable(path, exc) from exc

    @staticmethod
    def _unreadable(path: pathlib.Path, exc: Exception) -> ConfigError:
        return ConfigError(f"{path}: unreadable state ({exc}); move it away to start over (the agent then manages "
                           "only what Git says and deletes nothing it did not write)")

    def _migrate(self) -> None:
        if self._legacy is None:
            return
        run, zones = self._legacy
        self._legacy = None
        self.root.rename(self.root.with_name(self.root.name + ".legacy"))
        self.save_run(run)
        for zone in zones.values():
            self.save_zone(zone)

    def load_run(self) -> RunState:
        if self._legacy is not None:
            return self._legacy[0]
        path = self.root / "run.json"
        try:
            state = RunState.from_json(path.read_text()) if path.exists() else RunState()
        except (OSError, ValueError) as exc:
            raise self._unreadable(path, exc) from exc
        state.suspended = (self.root / "suspended").exists()
        return state

    def suspend(self, on: bool) -> None:
        """A mark file in the state directory: while it is there, runs read and write nothing."""
        self.root.mkdir(parents=True, exist_ok=True)
        if on:
            (self.root / "suspended").write_text("runs are suspended: `bindy-agent resume` to continue\n")
        else:
            (self.root / "suspended").unlink(missing_ok=True)

    def save_run(self, state: RunState) -> None:
        self._migrate()
        self.root.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.root / "run.json", state.to_json())

    def load_zones(self, *, refresh: bool = True) -> dict[str, ZoneOwnership]:
        if self._legacy is not None:
            return dict(self._legacy[1])
        remembered = self._recall(refresh)
        if remembered is not None:
            return remembered
        out: dict[str, ZoneOwnership] = {}
        folder = self.root / "zones"
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                zone = ZoneOwnership.from_json(path.read_text())
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise self._unreadable(path, exc) from exc
            out[zone.zone] = zone
        return self._remember_all(out)

    def save_zone(self, zone: ZoneOwnership) -> None:
        self._migrate()
        folder = self.root / "zones"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{_file_name(zone.zone)}.json"
        if zone.empty:
            path.unlink(missing_ok=True)
        else:
            _write_atomic(path, zone.to_json())
        self._remember(zone)


class ConfigMapStore(_Remembered):
    """The state as ConfigMaps in the agent's namespace; written only when a record changed."""

    NAME = names.STATE_NAME

    def __init__(self, api: KubeApi, namespace: str) -> None:
        super().__init__()
        self.api, self.namespace = api, namespace
        self._saved: dict[str, str] = {}  # ConfigMap name -> the text last read or written
        self._lock = threading.Lock()
        self._legacy_zones: dict[str, ZoneOwnership] | None = None

    def _labels(self, kind: str) -> dict[str, str]:
        return {**names.AGENT_APP_LABELS, names.AGENT_LABEL: self.namespace, STATE_LABEL: kind}

    def load_run(self) -> RunState:
        body = self.api.get("ConfigMap", self.namespace, self.NAME)
        data = (body or {}).get("data") or {}
        annotations = ((body or {}).get("metadata") or {}).get("annotations") or {}
        if "run" not in data and data.get("state"):  # an earlier version's single document
            run, self._legacy_zones = from_legacy(data["state"])
        else:
            self._saved[self.NAME] = data.get("run", "")
            run = RunState.from_json(data.get("run", ""))
        run.suspended = annotations.get(names.SUSPEND_ANNOTATION, "").lower() == "true"
        return run

    def suspend(self, on: bool) -> None:
        """The suspend annotation on the state ConfigMap (a merge patch of its own: the agent's
        server-side applies of the record leave it alone)."""
        if self.api.get("ConfigMap", self.namespace, self.NAME) is None:
            self.save_run(RunState())
        self.api.merge_patch("ConfigMap", self.namespace, self.NAME,
                             {"metadata": {"annotations": {names.SUSPEND_ANNOTATION: "true" if on else None}}})

    def save_run(self, state: RunState) -> None:
        if self._legacy_zones is not None:  # converting: every zone gets its own record first
            legacy, self._legacy_zones = self._legacy_zones, None
            for zone in legacy.values():
                self.save_zone(zone)
        text = state.to_json()
        if self._saved.get(self.NAME) == text:
            return
        shown = {"revision": state.applied or "", "lastSeen": state.seen or "", "outcome": state.outcome or "",
                 "message": state.message}  # the agent's status, for `kubectl get configmap -o yaml`
        self.api.apply({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": self.NAME, "namespace": self.namespace, "labels": self._labels("run")},
                        "data": {"run": text, **shown}})
        self._saved[self.NAME] = text

    @staticmethod
    def _zone_name(zone: str) -> str:
        return f"{names.STATE_NAME}-zone-{hashlib.sha256(zone.encode()).hexdigest()[:16]}"

    @staticmethod
    def _decode(body: dict[str, Any]) -> str:
        data, binary = body.get("data") or {}, body.get("binaryData") or {}
        if "state.gz" in binary:
            return gzip.decompress(base64.b64decode(binary["state.gz"])).decode()
        return str(data.get("state", ""))

    def load_zones(self, *, refresh: bool = True) -> dict[str, ZoneOwnership]:
        remembered = self._recall(refresh)
        if remembered is not None:
            return remembered
        out = dict(self._legacy_zones or {})
        for body in self.api.list("ConfigMap", namespace=self.namespace, label_selector=f"{STATE_LABEL}=zone"):
            text = self._decode(body)
            zone = ZoneOwnership.from_json(text)
            out[zone.zone] = zone
            with self._lock:
                self._saved[body["metadata"]["name"]] = text
        return self._remember_all(out)

    def save_zone(self, zone: ZoneOwnership) -> None:
        name, text = self._zone_name(zone.zone), zone.to_json()
        with self._lock:
            if self._saved.get(name) == ("" if zone.empty else text):
                return
        if zone.empty:
            self.api.delete("ConfigMap", self.namespace, name)
            text = ""
        else:
            body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": name, "namespace": self.namespace,
                                                 "labels": self._labels("zone"),
                                                 "annotations": {"bindy.firestoned.io/zone": zone.zone}}}
            if len(text) > _PLAIN_LIMIT:
                body["binaryData"] = {"state.gz": base64.b64encode(gzip.compress(text.encode(), 6)).decode()}
            else:
                body["data"] = {"state": text}
            self.api.apply(body)
        with self._lock:
            self._saved[name] = text
        self._remember(zone)
