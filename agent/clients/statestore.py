"""Where the agent keeps what it owns between runs: a local directory, or ConfigMaps in its
namespace.

One small record per zone (agent/model/ownership.py) and one for the run, so a run that touches
one zone writes one zone's record - twice: its intent before the first write, settled after.

    FileStore(DIR)       DIR/run.json, DIR/zones/<zone>.json        (runs without a cluster)
    ConfigMapStore(api)  ConfigMap bindy-agent-state (the run), one ConfigMap per zone labelled
                         bindy.firestoned.io/state=zone, gzip-compressed when large

Every write is atomic (a rename, or one server-side apply), so a kill never leaves half a
record. The single-file / single-ConfigMap layout of earlier versions is read and converted.

A record is read through the operator's file door (agent/sources/operatorfile.py: a regular file,
at most STATE_BYTES; a ConfigMap's gzip inflated to no more) and must have the record's shape
(agent/model/ownership.py). One that does not - a hand edit gone wrong, a file replaced by a FIFO -
is quarantined: moved aside (agent/clients/statequarantine.py: into a quarantine/ folder beside it,
DIR/quarantine/ or DIR/zones/quarantine/; or copied to the ConfigMap bindy-agent-state-quarantined-
<hash> with a Warning Event), logged and counted (`listen`), and the run goes on as for a missing
record: the run's record starts afresh (the world is read again), a zone's record is as if the agent
owned nothing in that zone yet (nothing is deleted that it does not know it wrote). A standby
(`quarantine=False`, `ReadOnly`) only reads: an unreadable record is then an error of that read. A
store that `moves` nothing (a dry run, a plan) reads it as missing and leaves it where it is.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import os
import pathlib
import re
import stat
import threading
import zlib
from collections.abc import Callable
from typing import Any, Protocol

from agent.clients import statequarantine as quarantine_
from agent.clients.kubeapi import KubeApi
from agent.errors import ConfigError, KubeError
from agent.model import names
from agent.model.ownership import RunState, Unreadable, ZoneOwnership, from_legacy
from agent.sources import boundary, operatorfile

STATE_LABEL = "bindy.firestoned.io/state"
# larger zone records are stored gzip-compressed (a ConfigMap holds at most 1 MiB)
_PLAIN_LIMIT = 256 * 1024
_SAFE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
STATE_BYTES = operatorfile.STATE_BYTES
StateUnreadable = quarantine_.StateUnreadable
listen = quarantine_.listen


class Store(Protocol):
    @property
    def quarantined(self) -> int: ...  # records this store quarantined so far

    def load_run(self, *, quarantine: bool = True) -> RunState: ...
    def save_run(self, state: RunState) -> None: ...
    def suspend(self, on: bool) -> None: ...
    def load_zones(self, *, refresh: bool = True,
                   quarantine: bool = True) -> dict[str, ZoneOwnership]: ...
    def save_zone(self, zone: ZoneOwnership) -> None: ...


class _Remembered:
    """The zone records as last read or written by this process: a long-running agent (the only
    writer, by leader election) reads them back only when asked to refresh."""

    def __init__(self, *, moves: bool = True) -> None:
        self._zones: dict[str, ZoneOwnership] | None = None
        self._zones_lock = threading.Lock()
        self.quarantined = 0
        # False (a dry run, a plan): an unreadable record is read as missing, left in place
        self.moves = moves

    def _told(self, kind: str, record: str, aside: str | None, why: str) -> None:
        self.quarantined += 1
        quarantine_.told(kind, record, aside, why)

    def _left(self, record: str, why: str) -> None:
        """An unreadable record met by a run that writes nothing: read as missing, left where it
        is."""
        self.quarantined += 1
        quarantine_.log.warning("state record %s is unreadable (%s): read as missing; a run that "
                                "writes moves it aside", record, why)

    def _recall(self, refresh: bool) -> dict[str, ZoneOwnership] | None:
        with self._zones_lock:
            return None if refresh or self._zones is None else dict(self._zones)

    def _remember_all(self, zones: dict[str, ZoneOwnership]) -> dict[str, ZoneOwnership]:
        """A record read back that says what the remembered one says stays the very same object (a
        zone's plan is reused while its inputs are the same objects: agent/desired/memo.py)."""
        with self._zones_lock:
            old = self._zones or {}
            zones = {name: old[name] if old.get(name) == zone else zone
                     for name, zone in zones.items()}
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
    return (base if _SAFE.match(base) and len(base) < 200
            else hashlib.sha256(zone.encode()).hexdigest()[:32])


def _write_atomic(path: pathlib.Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)  # a kill leaves the old or the new record, never half of one


class FileStore(_Remembered):
    """The state as files in a directory (created on first save)."""

    def __init__(self, path: pathlib.Path, *, moves: bool = True) -> None:
        super().__init__(moves=moves)
        self.root = path
        self._legacy: tuple[RunState, dict[str, ZoneOwnership]] | None = None
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = stat.S_IFDIR  # made on the first save
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            raise ConfigError(f"--state {path}: not used: {boundary.kind_of(mode)}, not a "
                              "directory; give a directory (it is created when missing)")
        if stat.S_ISREG(mode):  # an earlier version's single state file
            self._legacy = self._read(path, "run", from_legacy, quarantine=True)

    def _read(self, path: pathlib.Path, kind: str, parse: Callable[[bytes], Any], *,
              quarantine: bool) -> Any:
        """The record at `path` parsed; None when there is none, or when it is unreadable (then
        quarantined, or StateUnreadable without `quarantine`)."""
        try:
            return parse(operatorfile.read_bytes(path, setting="state record", limit=STATE_BYTES))
        except operatorfile.Missing:
            return None
        except (operatorfile.Unreadable, Unreadable) as exc:
            why = exc.why if isinstance(exc, operatorfile.Unreadable) else str(exc)
            if not quarantine:
                raise StateUnreadable(f"state record {path}: {why}") from None
        if not self.moves:
            self._left(str(path), why)
            return None
        self._told(kind, str(path), quarantine_.move_file(path, beside=path == self.root), why)
        return None

    def _migrate(self) -> None:
        if self._legacy is None:
            return
        run, zones = self._legacy
        self._legacy = None
        self.root.rename(self.root.with_name(self.root.name + ".legacy"))
        self.save_run(run)
        for zone in zones.values():
            self.save_zone(zone)

    def load_run(self, *, quarantine: bool = True) -> RunState:
        if self._legacy is not None:
            return self._legacy[0]
        state = self._read(self.root / "run.json", "run", RunState.from_json,
                           quarantine=quarantine) or RunState()
        state.suspended = (self.root / "suspended").exists()
        return state

    def suspend(self, on: bool) -> None:
        """A mark file in the state directory: while it is there, runs read and write nothing."""
        self.root.mkdir(parents=True, exist_ok=True)
        if on:
            (self.root / "suspended").write_text("runs are suspended: `bindy-agent resume` to "
                                                 "continue\n")
        else:
            (self.root / "suspended").unlink(missing_ok=True)

    def save_run(self, state: RunState) -> None:
        self._migrate()
        self.root.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.root / "run.json", state.to_json())

    def load_zones(self, *, refresh: bool = True,
                   quarantine: bool = True) -> dict[str, ZoneOwnership]:
        if self._legacy is not None:
            return dict(self._legacy[1])
        remembered = self._recall(refresh)
        if remembered is not None:
            return remembered
        out: dict[str, ZoneOwnership] = {}
        folder = self.root / "zones"
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            zone = self._read(path, "zone", ZoneOwnership.from_json, quarantine=quarantine)
            if zone is not None:
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

    def __init__(self, api: KubeApi, namespace: str, *, moves: bool = True) -> None:
        super().__init__(moves=moves)
        self.api, self.namespace = api, namespace
        self._saved: dict[str, str] = {}  # ConfigMap name -> the text last read or written
        self._lock = threading.Lock()
        self._legacy_zones: dict[str, ZoneOwnership] | None = None

    def _labels(self, kind: str) -> dict[str, str]:
        return {**names.AGENT_APP_LABELS, names.AGENT_LABEL: self.namespace, STATE_LABEL: kind}

    def load_run(self, *, quarantine: bool = True) -> RunState:
        body = self.api.get("ConfigMap", self.namespace, self.NAME)
        data = (body or {}).get("data") or {}
        annotations = ((body or {}).get("metadata") or {}).get("annotations") or {}
        try:
            if "run" not in data and data.get("state"):  # an earlier version's single document
                run, self._legacy_zones = from_legacy(data["state"])
            else:
                run = RunState.from_json(data.get("run", ""))
                self._saved[self.NAME] = data.get("run", "")
        except Unreadable as exc:
            if not quarantine:
                raise StateUnreadable(f"state ConfigMap {self.namespace}/{self.NAME}: "
                                      f"{exc}") from None
            assert body is not None
            self._quarantine(body, "run", str(exc))
            self._saved.pop(self.NAME, None)
            run = RunState()
            if self.moves:
                self._fresh_run(run)
        run.suspended = annotations.get(names.SUSPEND_ANNOTATION, "").lower() == "true"
        return run

    def suspend(self, on: bool) -> None:
        """The suspend annotation on the state ConfigMap (a merge patch of its own: the agent's
        server-side applies of the record leave it alone)."""
        if self.api.get("ConfigMap", self.namespace, self.NAME) is None:
            self.save_run(RunState())
        self.api.merge_patch("ConfigMap", self.namespace, self.NAME,
                             {"metadata": {"annotations": {names.SUSPEND_ANNOTATION: "true" if on
                                                           else None}}})

    def save_run(self, state: RunState) -> None:
        if self._legacy_zones is not None:  # converting: every zone gets its own record first
            legacy, self._legacy_zones = self._legacy_zones, None
            for zone in legacy.values():
                self.save_zone(zone)
        text = state.to_json()
        if self._saved.get(self.NAME) == text:
            return
        shown = {"revision": state.applied or "", "lastSeen": state.seen or "",
                 # the agent's status, for `kubectl get configmap -o yaml`
                 "outcome": state.outcome or "", "message": state.message}
        self.api.apply({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": self.NAME, "namespace": self.namespace,
                                     "labels": self._labels("run")},
                        "data": {"run": text, **shown}})
        self._saved[self.NAME] = text

    @staticmethod
    def _zone_name(zone: str) -> str:
        return f"{names.STATE_NAME}-zone-{hashlib.sha256(zone.encode()).hexdigest()[:16]}"

    def _fresh_run(self, run: RunState) -> None:
        """The run's record written afresh in place of a quarantined one (its suspend mark
        stays)."""
        try:
            self.save_run(run)
        except KubeError as exc:
            quarantine_.log.warning("state ConfigMap %s/%s could not be written afresh: %s",
                                    self.namespace, self.NAME, exc)

    def _quarantine(self, body: dict[str, Any], kind: str, why: str) -> None:
        if not self.moves:
            self._left(f"ConfigMap {self.namespace}/{(body.get('metadata') or {}).get('name')}",
                       why)
            return
        aside = quarantine_.move_configmap(self.api, body, labels=self._labels("quarantined"),
                                           why=why, delete=kind == "zone")
        self._told(kind, f"ConfigMap {self.namespace}/{(body.get('metadata') or {}).get('name')}",
                   aside, why)

    @staticmethod
    def _decode(body: dict[str, Any]) -> str:
        """A zone record's text: gzip-compressed in binaryData when large, inflated to STATE_BYTES
        at most."""
        data, binary = body.get("data") or {}, body.get("binaryData") or {}
        if "state.gz" not in binary:
            return str(data.get("state", ""))
        try:
            inflate = zlib.decompressobj(wbits=31)  # gzip
            text = inflate.decompress(base64.b64decode(binary["state.gz"], validate=True),
                                      STATE_BYTES + 1)
            if len(text) > STATE_BYTES or not inflate.eof:
                raise Unreadable(f"unreadable: expected a gzip-compressed record of at most "
                                 f"{operatorfile.size_text(STATE_BYTES)} (binaryData state.gz)")
            return text.decode()
        except (binascii.Error, zlib.error, UnicodeDecodeError, TypeError) as exc:
            raise Unreadable("unreadable: expected binaryData state.gz to be gzip-compressed UTF-8 "
                             f"text in base64 ({type(exc).__name__})") from None

    def load_zones(self, *, refresh: bool = True,
                   quarantine: bool = True) -> dict[str, ZoneOwnership]:
        remembered = self._recall(refresh)
        if remembered is not None:
            return remembered
        out = dict(self._legacy_zones or {})
        for body in self.api.list("ConfigMap", namespace=self.namespace,
                                  label_selector=f"{STATE_LABEL}=zone"):
            try:
                text = self._decode(body)
                zone = ZoneOwnership.from_json(text)
            except Unreadable as exc:
                if not quarantine:
                    raise StateUnreadable(f"state ConfigMap "
                                          f"{self.namespace}/{body['metadata']['name']}: "
                                          f"{exc}") from None
                self._quarantine(body, "zone", str(exc))
                continue
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
            metadata = {"name": name, "namespace": self.namespace, "labels": self._labels("zone"),
                        "annotations": {"bindy.firestoned.io/zone": zone.zone}}
            body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}
            if len(text) > _PLAIN_LIMIT:
                packed = gzip.compress(text.encode(), 6)
                body["binaryData"] = {"state.gz": base64.b64encode(packed).decode()}
            else:
                body["data"] = {"state": text}
            self.api.apply(body)
        with self._lock:
            self._saved[name] = text
        self._remember(zone)


class ReadOnly:
    """A standby's view of a store: it reads, and an unreadable record is an error of that read (the
    leader, the only writer, quarantines it on its next run)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @property
    def quarantined(self) -> int:
        return self.store.quarantined

    def load_run(self, *, quarantine: bool = False) -> RunState:
        return self.store.load_run(quarantine=False)

    def load_zones(self, *, refresh: bool = True,
                   quarantine: bool = False) -> dict[str, ZoneOwnership]:
        return self.store.load_zones(refresh=refresh, quarantine=False)

    def save_run(self, state: RunState) -> None:
        self.store.save_run(state)

    def suspend(self, on: bool) -> None:
        self.store.suspend(on)

    def save_zone(self, zone: ZoneOwnership) -> None:
        self.store.save_zone(zone)
