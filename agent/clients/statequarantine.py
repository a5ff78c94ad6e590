"""Where an unreadable state record goes (agent/clients/statestore.py): moved aside, told, counted.

    a file        <its folder>/quarantine/<name>.unreadable-<UTC time> (a rename: a FIFO, a device
                  node or a directory moves as well); the single state file of an earlier version
                  beside itself
    a ConfigMap   copied to bindy-agent-state-quarantined-<hash of its content> (labelled
                  bindy.firestoned.io/state=quarantined, annotated with where it came from and why),
                  a Warning Event StateQuarantined on the copy; a zone's record is then deleted
                  (by its uid: one written meanwhile stays), the run's written afresh by the store

Each one is logged (one warning line: which record, why, where it went) and heard by the listeners
(`listen`: the long-running agent's metric bindy_agent_state_quarantined).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
import os
import pathlib
import threading
from collections.abc import Callable
from typing import Any

from agent.clients.kubeapi import KubeApi
from agent.errors import ConfigError, KubeError
from agent.model import names

FOLDER = "quarantine"
QUARANTINED_FROM = "bindy.firestoned.io/quarantined-from"
QUARANTINED_WHY = "bindy.firestoned.io/quarantined-because"
log = logging.getLogger(__name__)
_listeners: list[Callable[[str], None]] = []
_lock = threading.Lock()


class StateUnreadable(ConfigError):
    """An unreadable record met by a reader that may not quarantine it (a standby only reads: the
    leader quarantines it on its next run)."""


def listen(listener: Callable[[str], None]) -> Callable[[], None]:
    """Hears each record quarantined from now on ("run" or "zone"); returns the function that stops
    it."""
    with _lock:
        _listeners.append(listener)

    def stop() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)
    return stop


def told(kind: str, record: str, aside: str | None, why: str) -> None:
    """A record was quarantined: one log line, and every listener hears its kind."""
    where = f"moved to {aside}" if aside else ("it could not be moved aside: the next write "
                                               "replaces it")
    log.warning("state record %s is unreadable (%s): quarantined (%s); the run goes on as without "
                "it, reading the world again", record, why, where)
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(kind)


def stamp() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")


def move_file(path: pathlib.Path, *, beside: bool = False) -> str | None:
    """`path` renamed into the quarantine folder next to it (`beside`: next to it); where it went,
    or None."""
    folder = path.parent if beside else path.parent / FOLDER
    target = folder / f"{path.name}.unreadable-{stamp()}"
    try:
        folder.mkdir(exist_ok=True)
        os.replace(path, target)
    except OSError as exc:
        log.warning("state record %s could not be moved aside: %s", path, exc.strerror)
        return None
    return str(target)


def move_configmap(api: KubeApi, body: dict[str, Any], *, labels: dict[str, str], why: str,
                   delete: bool) -> str | None:
    """A copy of the ConfigMap under a name of its own (the same content: the same copy) and a
    Warning Event on it; with `delete`, the ConfigMap itself is deleted then. Where it went, or
    None."""
    meta = body.get("metadata") or {}
    name, namespace = str(meta.get("name")), str(meta.get("namespace"))
    content = {k: body[k] for k in ("data", "binaryData") if body.get(k)}
    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:12]
    aside = f"{names.STATE_NAME}-quarantined-{digest}"
    try:
        copy = api.apply({"apiVersion": "v1", "kind": "ConfigMap", **content, "metadata": {
            "name": aside, "namespace": namespace, "labels": labels,
            "annotations": {QUARANTINED_FROM: name, QUARANTINED_WHY: why[:1000]}}})
        if delete:
            api.delete("ConfigMap", namespace, name, uid=meta.get("uid"))
    except KubeError as exc:
        log.warning("state ConfigMap %s/%s could not be moved aside: %s", namespace, name, exc)
        return None
    _event(api, copy,
           f"state record {name} is unreadable ({why}): moved to {aside}; the agent goes on "
                      "without it and reads the world again")
    return f"ConfigMap {namespace}/{aside}"


def _event(api: KubeApi, obj: dict[str, Any], message: str) -> None:
    meta = obj.get("metadata") or {}
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        api.create({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{meta.get('name')}.",
                         "namespace": meta.get("namespace")},
            "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "name": meta.get("name"),
                               "namespace": meta.get("namespace"), "uid": meta.get("uid")},
            "reason": "StateQuarantined", "message": message[:1024], "type": "Warning", "count": 1,
            "firstTimestamp": now, "lastTimestamp": now, "source": {"component": "bindy-agent"},
            "reportingComponent": "bindy-agent"})
    except KubeError as exc:
        log.warning("event StateQuarantined not recorded: %s", exc)
