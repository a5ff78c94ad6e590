"""How a run ends: its state is saved once, after its reports were published, and says whether they
still wait to be pushed (the write-ahead mark before the first Kubernetes write aside)."""

from __future__ import annotations

import pathlib

import pytest

from agent.clients.statestore import FileStore
from agent.model.ownership import RunState
from agent.outcome import report
from agent.run import orchestrator
from agent.run.options import Options, Targets
from agent.run.revisions import DirectoryRevisions
from tests.conftest import SAMPLE


class CountingStore(FileStore):
    def __init__(self, path: pathlib.Path) -> None:
        super().__init__(path)
        self.saved: list[RunState] = []

    def save_run(self, state: RunState) -> None:
        self.saved.append(state)
        super().save_run(state)


class UnpushedReports(DirectoryRevisions):
    """A source whose reports could not be pushed (the remote is away)."""

    def publish(self, reports: list[report.Report], *, push: bool) -> bool | None:
        return False


@pytest.mark.parametrize("pushed", [True, False])
def test_a_run_saves_its_state_once_at_its_end(tmp_path: pathlib.Path, pushed: bool) -> None:
    store = CountingStore(tmp_path / "state")
    source = DirectoryRevisions(SAMPLE) if pushed else UnpushedReports(SAMPLE)
    run = orchestrator.run(source, Targets(store), Options(lock_wait=1))
    assert run.outcome == "applied", run.message
    [state] = store.saved
    assert (state.applied, state.seen, state.outcome) == (run.revision, run.revision, "applied")
    assert state.notes_pending is not pushed
    assert store.load_run() == state
