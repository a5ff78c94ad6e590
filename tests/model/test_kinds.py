"""The registry of kinds (agent/model/kinds.py) names the module of each kind's model, and the model is the
class of the kind's name there, the same class every time."""

from __future__ import annotations

import importlib

import pytest

from agent.model import infra, kinds, zone


@pytest.mark.parametrize("kind", list(kinds.KINDS.values()), ids=list(kinds.KINDS))
def test_each_kind_still_names_its_model(kind: kinds.Kind) -> None:
    """The registry names the module of each kind's model; the model is the class of the kind's name there."""
    module = {"infra": infra, "zone": zone}.get(kind.module) or importlib.import_module(f"agent.model.{kind.module}")
    assert kind.model is getattr(module, kind.name)
    assert kinds.KINDS[kind.name].model is kind.model  # the same class every time
