"""The delta a pull request makes (agent/plan/delta.py) and the renderings people read: exactly what
head changes relative to base, for objects, zone placements and RRsets, and a Markdown comment
that fits GitHub's limit with every total still shown."""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest

from agent.desired import hierarchy
from agent.desired.hierarchy import Desired
from agent.gate import safety, verdict
from agent.plan import build, delta, render
from agent.plan.changes import Action, Change, KubeTarget, Plan, RRsetTarget, ZoneTarget
from tests.conftest import SAMPLE, load_dir


def _state(root: pathlib.Path) -> Desired:
    state = hierarchy.build(load_dir(root))
    assert not [p for p in state.problems if p.severity.value == "error"]
    return state


@pytest.fixture
def pair(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    base, head = tmp_path / "base", tmp_path / "head"
    shutil.copytree(SAMPLE, base)
    shutil.copytree(SAMPLE, head)
    return base, head


def _edit(path: pathlib.Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def _summary(plan: Plan) -> list[str]:
    return [f"{c.action.value} {c.target.layer} {c.target}" for c in plan.changes]


def test_the_same_revision_on_both_sides_changes_nothing() -> None:
    state = _state(SAMPLE)
    plan = delta.delta(state, _state(SAMPLE), base_revision="a", head_revision="b")
    assert plan.changes == [] and plan.conflicts == [] and plan.unplanned == []
    assert render.render_text(plan).endswith("No changes: the head does exactly what the base does.\n")


def test_a_changed_record_is_one_object_update_and_one_rrset_update(pair: tuple[pathlib.Path, pathlib.Path]) -> None:
    base, head = pair
    web = head / "records" / "example-com" / "web.yaml"
    _edit(web, "    - 192.0.2.10\n", "    - 192.0.2.20\n")
    _edit(web, "  ttl: 300\n", "")  # a field removed is a change too (kubediff alone cannot see it)
    plan = delta.delta(_state(base), _state(head))
    assert _summary(plan) == ["update kubernetes ARecord dns-system/www", "update records www.example.com. A"]
    obj, rrset = plan.changes
    assert obj.fields == ("spec.ipv4Addresses[0]", "spec.ttl")
    assert obj.before is not None and obj.before["spec"]["ttl"] == 300
    assert rrset.before == {"ttl": 300, "values": ["192.0.2.10", "192.0.2.11", "192.0.2.12"]}
    assert rrset.after == {"ttl": 3600, "values": ["192.0.2.11", "192.0.2.12", "192.0.2.20"]}


def test_added_and_removed_records_and_a_zone_leaving_git(pair: tuple[pathlib.Path, pathlib.Path]) -> None:
    base, head = pair
    (head / "records" / "example-org" / "site.yaml").unlink()
    (head / "zones" / "internal.yaml").unlink()
    (head / "records" / "internal" / "hosts.yaml").unlink()
    (head / "records" / "example-com" / "extra.yaml").write_text(
        "apiVersion: bindy.firestoned.io/v1beta1\nkind: TXTRecord\nmetadata:\n  name: verify\n"
        "  namespace: dns-system\n  labels: {zone: example-com}\nspec:\n  name: _verify\n  text: [abc]\n")
    plan = delta.delta(_state(base), _state(head))
    kinds = {(c.action, c.target.layer) for c in plan.changes}
    assert (Action.CREATE, "records") in kinds and (Action.DELETE, "records") in kinds
    zones = [str(c.target) for c in plan.changes if isinstance(c.target, ZoneTarget)]
    assert zones == ["internal.example.net. on dns-system/dns-primary-0 (no longer selected)",
                     "internal.example.net. on dns-system/dns-secondary-0 (no longer selected)"]
    created = [c for c in plan.changes if isinstance(c.target, RRsetTarget) and c.action is Action.CREATE]
    assert [(c.target.name, c.target.rtype) for c in created] == [("_verify.example.com.", "TXT")]
    deleted = [c for c in plan.changes if isinstance(c.target, RRsetTarget) and c.action is Action.DELETE]
    assert {c.target.zone for c in deleted} == {"example.org."}  # a zone leaving Git goes whole, not by RRset
    assert any(c.action is Action.DELETE and c.target == KubeTarget("DNSZone", "dns-system", "internal")
               for c in plan.changes)


def test_a_new_secondary_is_new_objects_new_placements_and_a_renotify(
        pair: tuple[pathlib.Path, pathlib.Path]) -> None:
    base, head = pair
    _edit(head / "infrastructure" / "cluster.yaml", "  secondary:\n    replicas: 1\n", "  secondary:\n    replicas: 2\n")
    plan = delta.delta(_state(base), _state(head))
    kube = [str(c.target) for c in plan.changes if c.target.layer == "kubernetes" and c.action is Action.CREATE]
    assert "Bind9Instance dns-system/dns-secondary-1" in kube and "Deployment dns-system/dns-secondary-1" in kube
    zones = [(c.action.value, str(c.target)) for c in plan.changes if isinstance(c.target, ZoneTarget)]
    assert ("create", "example.com. on dns-system/dns-secondary-1 (secondary)") in zones
    assert ("update", "example.com. on dns-system/dns-primary-0 (primary)") in zones  # its also-notify list
    assert not [c for c in plan.changes if isinstance(c.target, RRsetTarget)]  # the data does not change


def test_the_gate_sees_a_delta_as_a_sync_would(pair: tuple[pathlib.Path, pathlib.Path]) -> None:
    """Deleting most of a zone's records in one pull request is refused, and the comment says so."""
    base, head = pair
    many = "".join(f"---\napiVersion: bindy.firestoned.io/v1beta1\nkind: ARecord\nmetadata:\n  name: h{i}\n"
                   f"  namespace: dns-system\n  labels: {{zone: example-com}}\nspec:\n  name: h{i}\n"
                   f"  ipv4Addresses: [192.0.2.{i + 100}]\n" for i in range(12))
    (base / "records" / "example-com" / "many.yaml").write_text(many)
    plan = delta.delta(_state(base), _state(head))
    plan = verdict.approve(plan, safety.Policy())
    assert plan.summary["delete"] == 24  # 12 ARecord CRs, 12 RRsets
    assert len(plan.refusals) == 1 and "refusing to delete 12 of" in plan.refusals[0]
    assert "### The safety gate would refuse this plan (1): a sync applies nothing" in render.render_markdown(plan)
    assert json.loads(render.render_json(plan))["refusals"] == plan.refusals


def test_would_be_is_what_an_applied_revision_leaves() -> None:
    """Planning a revision against the world it leaves finds nothing to do, Secrets included."""
    state = _state(SAMPLE)
    world = delta.would_be(state)
    assert build.build(state, world).changes == []
    assert world.dns is not None and sorted(world.dns.ownership) == ["example.com.", "example.org.",
                                                                      "internal.example.net."]


def test_changed_fields_sees_added_removed_and_nested_values() -> None:
    before = {"spec": {"a": 1, "gone": True, "list": [1, 2], "map": {"k.x/y": "v"}}}
    after = {"spec": {"a": 2, "new": 0, "list": [1, 3], "map": {"k.x/y": "w"}}}
    assert delta.changed_fields(before, after) == ["spec.a", "spec.gone", "spec.list[1]", "spec.map.k.x/y",
                                                   "spec.new"]
    assert delta.changed_fields({"l": [1]}, {"l": [1, 2]}) == ["l"]


# -- renderings ---------------------------------------------------------------------------------
def _big_plan(records: int) -> Plan:
    changes = [Change(Action.CREATE, RRsetTarget("example.com.", f"host{i}.example.com.", "A"),
                      new={"ttl": 300, "values": [f"192.0.2.{i % 250}"]}) for i in range(records)]
    changes.append(Change(Action.UPDATE, KubeTarget("ARecord", "dns-system", "www"), old={"spec": {"ttl": 1}},
                          new={"spec": {"ttl": 2}}, fields=("spec.ttl",)))
    return Plan(changes, revision="b" * 40, base="a" * 40, labels={"a" * 40: "main (aaaaaaaaaaaa)"})


def test_markdown_fits_a_github_comment_and_keeps_every_total() -> None:
    md = render.render_markdown(_big_plan(5000))
    assert len(md) <= render.MARKDOWN_LIMIT
    assert "**1 edit to the repository's CRs**: 1 changed." in md
    assert "| DNS records (RRsets) | `+5,000` | 0 | 0 |\n" in md and "| CRs of the repository | 0 | `~1` | 0 |\n" in md
    assert "### DNS records (5000)" in md and "### CRs of the repository (1)" in md
    assert md.count("**`example.com.`**") == 1  # the zone once, its records below it
    shown = md.count("| `+` | `host")
    assert 100 < shown < 5000
    assert f"| | ... and {5000 - shown:,} more | | | |" in md
    assert "Cut to fit a 65,536-character comment" in md
    assert "`spec.ttl`: `1` -> `2`" in md  # the small section is shown whole


def test_markdown_that_fits_is_not_cut() -> None:
    md = render.render_markdown(_big_plan(20))
    assert "more |" not in md and "Cut to fit" not in md
    assert md.startswith("## bindy-agent plan\n\nChanges from base `main (aaaaaaaaaaaa)` to head `bbbb")


def test_markdown_survives_pipes_and_backticks_in_values() -> None:
    plan = Plan([Change(Action.CREATE, RRsetTarget("example.com.", "t.example.com.", "TXT"),
                        new={"ttl": 60, "values": ['"a|b`c"']})])
    row = next(line for line in render.render_markdown(plan).splitlines() if line.startswith("| `+` "))
    assert row.replace("\\|", "").count("|") == 6 and "a\\|b`c" in row  # five cells, the pipe escaped


def test_json_of_a_delta_names_base_and_head_and_tags_problems() -> None:
    from agent.model.problems import Origin, Problem

    plan = Plan([], [Problem(Origin("a.yaml", 3), "ARecord/ns/a", "spec.name", "required field is missing")],
                revision="h" * 40, base="b" * 40,
                base_problems=[Problem(Origin("b.yaml", 1), "", "", "YAML syntax error")], invalid=("base", "head"))
    doc = json.loads(render.render_json(plan))
    assert (doc["revision"], doc["base"], doc["invalid"]) == ("h" * 40, "b" * 40, ["base", "head"])
    assert [(p["file"], p["revision"]) for p in doc["problems"]] == [("b.yaml", "base"), ("a.yaml", "head")]
    assert doc["summary"] == {"create": 0, "update": 0, "delete": 0} and doc["changes"] == []
    md = render.render_markdown(plan)
    assert "**Not planned: the base has 1 errors, head has 1 errors.**" in md
    assert "### Errors in the base (1)" in md and "### Errors in the head (1)" in md


def test_a_plan_that_could_not_see_a_zone_never_says_the_world_matches() -> None:
    plan = Plan([], unplanned=["example.com. on dns/p-0: AXFR of example.com. failed: connection refused"])
    text = render.render_text(plan)
    assert "the world matches" not in text
    assert "  ? example.com. on dns/p-0: AXFR of example.com. failed: connection refused\n" in text
    assert text.endswith("No changes planned, but 1 zones could not be observed on their servers (above): "
                         "the world may still differ from the revision.\n")
    assert json.loads(render.render_json(plan))["unplanned"] == plan.unplanned
