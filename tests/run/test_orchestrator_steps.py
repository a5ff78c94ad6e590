"""A run measures the wall time of each step it makes (RunOutcome.steps), and only of the steps it made."""

from __future__ import annotations

import pathlib
import shutil

from tests.conftest import SAMPLE
from tests.support import agentrun


def test_a_sync_outcome_has_the_steps_it_ran(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
    done = agentrun.sync_dir(root, state=tmp_path / "state")
    assert done.outcome == "applied", done.message
    assert {"fetch", "load", "desired", "validate", "observe", "plan", "gate", "report", "push"} <= set(done.steps)
    assert not {"apply_kubernetes", "apply_dns", "verify", "status"} & set(done.steps)  # nothing to apply them to
    assert all(seconds >= 0 for seconds in done.steps.values())


def test_a_rejected_revision_stops_after_the_steps_it_ran(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
    (root / "zones" / "broken.yaml").write_text("apiVersion: bindy.firestoned.io/v1beta1\nkind: DNSZone\n"
                                                "metadata: {name: broken, namespace: dns-system}\nspec: {}\n")
    done = agentrun.sync_dir(root, state=tmp_path / "state")
    assert done.outcome == "rejected"
    assert {"fetch", "load", "report", "push"} <= set(done.steps) and "observe" not in done.steps
