"""The JSON plan (agent/plan/render_json.py) writes a CR from Git through pydantic's own writer only where
that gives the very bytes json.dumps writes."""

from __future__ import annotations

import json

from agent.desired.hierarchy import TIER_RECORD, KubeObject
from agent.load.loaded import Loaded
from agent.model import kinds
from agent.model.key import ObjectKey
from agent.model.problems import Origin
from agent.plan import render_json
from agent.plan.changes import _shown


def _record(kind: str, spec: dict[str, object], **meta: object) -> KubeObject:
    doc = {"apiVersion": kinds.API_VERSION, "kind": kind, "metadata": {"name": "r", "namespace": "dns", **meta},
           "spec": spec}
    model = kinds.KINDS[kind].model.from_document(doc)
    loaded = Loaded(ObjectKey(kind, "dns", "r"), model, Origin("x.yaml", 1))
    return KubeObject(loaded.key, loaded, TIER_RECORD, origin=loaded.origin)


def test_a_cr_is_written_in_the_json_plan_as_json_dumps_writes_it() -> None:
    texts = ["plain", 'quote " and \\ backslash', "tab\tnew\nline\x01", "caf\u00e9", "del\x7f", "\u2028", ""]
    objects = [_record("TXTRecord", {"name": "t", "ttl": 300, "text": [t]}, labels={"zone": "z"},
                       annotations={"note": t}) for t in texts]
    objects += [_record("ARecord", {"name": "a", "ipv4Addresses": ["192.0.2.1"]}, generation=2**70),
                _record("ARecord", {"name": "a", "ipv4Addresses": ["192.0.2.1"]},
                        managedFields=[{"f": 1.5, "g": None}])]
    written = []
    for obj in objects:
        want = json.dumps(_shown(obj), indent=2).replace("\n", "\n      ")
        fast = render_json._cr(obj)
        assert fast is None or fast == want, (fast, want)
        written.append(fast is not None)
    # pydantic writes the ASCII ones; json's escapes (non-ASCII, DEL) and floats go the general way
    assert written == [True, True, True, False, False, False, True, True, False]
