"""A state record the agent cannot read - a hand edit gone wrong, valid JSON of the wrong shape, a file
replaced by a FIFO, a huge file - is quarantined: moved aside, told (log, metric, Event), and the run
goes on as for a missing record, in both stores. Before, every such record made every run exit 70."""

from __future__ import annotations

import base64
import gzip
import json
import logging
import os
import pathlib
import re
from typing import Any

import pytest

from agent.clients import statestore
from agent.errors import KubeError
from agent.model.ownership import RunState, ZoneOwnership
from agent.run import memorize, metrics
from agent.run.memory import Memory

GOOD_ZONE = ZoneOwnership("good.test.", {"dns/a": "primary"}, {("www.good.test.", "A")})
# text -> what the quarantine says was expected
BAD_RUNS = ["[]", "null", "42", '"text"', '{"applied": 5}', '{"reconciledAt": "yesterday"}',
            '{"reconciledAt": Infinity}', '{"reconciledAt": 1e999}', '{"notesPending": "yes"}', "{garbage",
            '{"applied": "a"} trailing']
BAD_ZONES = ["[]", "null", "{}", '{"zone": 5}', '{"zone": "x.test.", "managed": [["only-a-name"]]}',
             '{"zone": "x.test.", "managed": "all"}', '{"zone": "x.test.", "placements": {"dns/a": 1}}',
             '{"zone": "x.test.", "pending": {"writes": [[1, 2, 3]]}}', '{"zone": "x.test.", "pending": []}',
             '{"zone": "x.test.", "notify": "10.0.0.1"}', "", "\xff"]


@pytest.fixture
def heard() -> Any:
    kinds: list[str] = []
    stop = statestore.listen(kinds.append)
    yield kinds
    stop()


@pytest.mark.parametrize("text", BAD_RUNS)
def test_a_file_stores_run_record_of_the_wrong_shape_is_moved_aside_and_the_run_starts_afresh(
        text: str, tmp_path: pathlib.Path, heard: list[str], caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "run.json").write_text(text)
    store = statestore.FileStore(tmp_path)
    assert store.load_run() == RunState()
    assert heard == ["run"] and store.quarantined == 1 and not (tmp_path / "run.json").exists()
    (aside,) = (tmp_path / "quarantine").iterdir()
    assert aside.name.startswith("run.json.unreadable-") and aside.read_text() == text
    assert "unreadable: expected a JSON object with applied, seen" in caplog.text and "quarantined" in caplog.text
    assert store.load_run() == RunState() and heard == ["run"]  # gone: read again as a missing record


@pytest.mark.parametrize("text", BAD_ZONES)
def test_a_file_stores_zone_record_of_the_wrong_shape_is_moved_aside_the_others_are_read(
        text: str, tmp_path: pathlib.Path, heard: list[str]) -> None:
    store = statestore.FileStore(tmp_path)
    store.save_zone(GOOD_ZONE)
    (tmp_path / "zones" / "bad.test.json").write_text(text, errors="surrogateescape")
    assert statestore.FileStore(tmp_path).load_zones() == {"good.test.": GOOD_ZONE}
    assert heard == ["zone"] and sorted(p.name for p in (tmp_path / "zones").iterdir()) == ["good.test.json",
                                                                                          "quarantine"]


@pytest.mark.parametrize("kind", ["fifo", "directory", "huge"])
def test_a_record_that_is_no_regular_file_or_too_large_is_moved_aside_at_once(
        kind: str, tmp_path: pathlib.Path, heard: list[str], caplog: pytest.LogCaptureFixture) -> None:
    for path in (tmp_path / "run.json", tmp_path / "zones" / "x.test.json"):
        path.parent.mkdir(exist_ok=True)
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "directory":
            path.mkdir()
        else:
            with open(path, "wb") as fh:
                fh.truncate(statestore.STATE_BYTES + 1)
    store = statestore.FileStore(tmp_path)
    assert store.load_run() == RunState() and store.load_zones() == {}
    assert heard == ["run", "zone"]
    assert {"fifo": "a named pipe (FIFO)", "directory": "a directory", "huge": "over the limit of 256 MiB"}[kind] \
        in caplog.text


def test_a_state_directory_that_is_a_fifo_is_a_setting_error(tmp_path: pathlib.Path) -> None:
    os.mkfifo(tmp_path / "state")
    with pytest.raises(statestore.ConfigError, match="--state .*: not used: a named pipe"):
        statestore.FileStore(tmp_path / "state")


def test_an_unreadable_single_state_file_of_an_earlier_version_is_moved_beside_itself(
        tmp_path: pathlib.Path, heard: list[str]) -> None:
    (tmp_path / "state").write_text('{"zones": [1, 2]}')
    store = statestore.FileStore(tmp_path / "state")
    assert store.load_run() == RunState() and store.load_zones() == {} and heard == ["run"]
    store.save_run(RunState(applied="abc"))
    assert statestore.FileStore(tmp_path / "state").load_run().applied == "abc"
    assert [p.name.split(".unreadable-")[0] for p in tmp_path.iterdir() if ".unreadable-" in p.name] == ["state"]


def test_a_standby_only_reads_an_unreadable_record_is_an_error_left_for_the_leader(tmp_path: pathlib.Path,
                                                                                  heard: list[str]) -> None:
    (tmp_path / "run.json").write_text("[]")
    view = statestore.ReadOnly(statestore.FileStore(tmp_path))
    with pytest.raises(statestore.StateUnreadable, match="unreadable: expected a JSON object"):
        view.load_run()
    assert heard == [] and (tmp_path / "run.json").exists()


def test_a_quarantined_run_record_makes_a_long_running_agent_forget_the_world(tmp_path: pathlib.Path) -> None:
    memory = Memory()
    memory.kube_at = memory.dns_at = 1.0
    store = statestore.FileStore(tmp_path)
    store.save_run(RunState(applied="abc"))
    assert memorize.load_run(store, memory).applied == "abc" and memory.kube_at == 1.0
    (tmp_path / "run.json").write_text("null")
    assert memorize.load_run(store, memory) == RunState() and (memory.kube_at, memory.dns_at) == (0.0, 0.0)


def test_the_metric_counts_quarantined_records_by_kind(tmp_path: pathlib.Path) -> None:
    served = metrics.Metrics()
    try:
        (tmp_path / "run.json").write_text("[]")
        statestore.FileStore(tmp_path).load_run()
        text = served.exposition().decode()
        assert 'bindy_agent_state_quarantined_total{record="run"} 1.0' in text
        assert 'bindy_agent_state_quarantined_total{record="zone"} 0.0' in text
    finally:
        served.stop_listening()


# -- the ConfigMap store ------------------------------------------------------------------------------
class _Api:
    """The few calls the ConfigMap store makes, in memory (integration tests use a real API server)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.uid = 0

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.objects.get((kind, name))

    def list(self, kind: str, *, namespace: str | None = None, label_selector: str = "") -> list[dict[str, Any]]:
        key, _, value = label_selector.partition("=")
        return [o for (k, _), o in sorted(self.objects.items())
                if k == kind and o["metadata"].get("labels", {}).get(key) == value]

    def apply(self, body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        live = self.objects.get((body["kind"], name))
        self.uid += live is None
        merged = {**(live or {}), **json.loads(json.dumps(body))}
        merged["metadata"]["uid"] = (live or {}).get("metadata", {}).get("uid", str(self.uid))
        self.objects[(body["kind"], name)] = merged
        return merged

    def delete(self, kind: str, namespace: str | None, name: str, *, uid: str | None = None) -> bool:
        live = self.objects.get((kind, name))
        if live is not None and uid and live["metadata"]["uid"] != uid:
            raise KubeError("uid precondition", reason="conflict")
        return self.objects.pop((kind, name), None) is not None

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", body["firstTimestamp"])  # what the API server takes
        self.events.append(body)
        return body


def _zone_configmap(api: _Api, name: str, **content: Any) -> None:
    api.apply({"kind": "ConfigMap", "metadata": {"name": name, "namespace": "bindy-agent",
                                                 "labels": {statestore.STATE_LABEL: "zone"}}, **content})


@pytest.mark.parametrize("text", BAD_RUNS)
def test_a_hand_edited_run_configmap_is_copied_aside_with_an_event_and_written_afresh(
        text: str, heard: list[str]) -> None:
    api = _Api()
    store = statestore.ConfigMapStore(api, "bindy-agent")  # type: ignore[arg-type]
    store.save_run(RunState(applied="abc"))
    api.objects[("ConfigMap", "bindy-agent-state")]["data"]["run"] = text  # kubectl edit
    assert statestore.ConfigMapStore(api, "bindy-agent").load_run() == RunState()  # type: ignore[arg-type]
    assert heard == ["run"]
    (aside,) = [o for (_, n), o in api.objects.items() if n.startswith("bindy-agent-state-quarantined-")]
    assert aside["data"]["run"] == text and aside["metadata"]["labels"][statestore.STATE_LABEL] == "quarantined"
    assert "unreadable: expected" in aside["metadata"]["annotations"][statestore.quarantine_.QUARANTINED_WHY]
    assert json.loads(api.objects[("ConfigMap", "bindy-agent-state")]["data"]["run"])["applied"] is None
    (event,) = api.events
    assert (event["reason"], event["type"], event["involvedObject"]["name"]) == (
        "StateQuarantined", "Warning", aside["metadata"]["name"])


@pytest.mark.parametrize("content", [
    *({"data": {"state": text}} for text in BAD_ZONES),
    {"binaryData": {"state.gz": "not base64!"}},
    {"binaryData": {"state.gz": base64.b64encode(b"not gzip").decode()}},
    {"binaryData": {"state.gz": base64.b64encode(gzip.compress(b"\xff\xfe")).decode()}},
    {"binaryData": {"state.gz": base64.b64encode(gzip.compress(b"[]")).decode()}},
], ids=lambda c: json.dumps(c)[:40])
def test_a_hand_edited_zone_configmap_is_copied_aside_deleted_and_the_others_are_read(
        content: dict[str, Any], heard: list[str]) -> None:
    api = _Api()
    store = statestore.ConfigMapStore(api, "bindy-agent")  # type: ignore[arg-type]
    store.save_zone(GOOD_ZONE)
    _zone_configmap(api, "bindy-agent-state-zone-0000", **content)
    assert statestore.ConfigMapStore(api, "bindy-agent").load_zones() == {  # type: ignore[arg-type]
        "good.test.": GOOD_ZONE}
    assert heard == ["zone"] and ("ConfigMap", "bindy-agent-state-zone-0000") not in api.objects
    assert len(api.events) == 1


def test_a_gzip_bomb_in_a_zone_configmap_is_inflated_no_further_than_the_limit(heard: list[str]) -> None:
    api = _Api()
    bomb = gzip.compress(b'{"zone": "x.test.", "managed": [' + b" " * (statestore.STATE_BYTES + 10) + b"]}", 9)
    _zone_configmap(api, "bindy-agent-state-zone-0000", binaryData={"state.gz": base64.b64encode(bomb).decode()})
    assert statestore.ConfigMapStore(api, "bindy-agent").load_zones() == {}  # type: ignore[arg-type]
    assert heard == ["zone"]


def test_a_standby_leaves_an_unreadable_configmap_to_the_leader(heard: list[str],
                                                               caplog: pytest.LogCaptureFixture) -> None:
    api = _Api()
    _zone_configmap(api, "bindy-agent-state-zone-0000", data={"state": "[]"})
    view = statestore.ReadOnly(statestore.ConfigMapStore(api, "bindy-agent"))  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING), pytest.raises(statestore.StateUnreadable):
        view.load_zones()
    assert heard == [] and ("ConfigMap", "bindy-agent-state-zone-0000") in api.objects and not api.events


def test_a_dry_run_or_a_plan_reads_an_unreadable_record_as_missing_and_leaves_it_where_it_is(
        tmp_path: pathlib.Path, heard: list[str], caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "zones").mkdir()
    (tmp_path / "run.json").write_text("[]")
    (tmp_path / "zones" / "x.test.json").write_text("null")
    store = statestore.FileStore(tmp_path, moves=False)
    assert store.load_run() == RunState() and store.load_zones() == {}
    assert heard == [] and (tmp_path / "run.json").read_text() == "[]" and not (tmp_path / "quarantine").exists()
    assert "read as missing; a run that writes moves it aside" in caplog.text
    api = _Api()
    _zone_configmap(api, "bindy-agent-state-zone-0000", data={"state": "[]"})
    assert statestore.ConfigMapStore(api, "bindy-agent", moves=False).load_zones() == {}  # type: ignore[arg-type]
    assert list(api.objects) == [("ConfigMap", "bindy-agent-state-zone-0000")] and not api.events


def test_sync_dry_run_moves_nothing(tmp_path: pathlib.Path) -> None:
    from agent.run import compose, planner

    state = tmp_path / "state"
    state.mkdir()
    (state / "run.json").write_text("{}}")
    request = compose.Request(planner.Options(dry_run=True), directory=tmp_path, state=state)
    assert compose.store(request, None).load_run() == RunState() and (state / "run.json").read_text() == "{}}"
