"""RNDC / TSIG key rotation without a gap (issue 26): the pure phase decision (clock injected), the
Secret and Deployment a rotation plans, `sync --rotate-rndc-keys` on the same path, the status, and
the loader's check of rotateAfter. The real-named half is tests/integration/test_key_rotation.py."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

import pytest

from agent.desired import hierarchy
from agent.model import names
from agent.model.infra import RndcKeyConfig
from agent.model.observed import KubeObserved, Observed
from agent.model.problems import Severity
from agent.plan import build, kubechange, rotation
from tests.conftest import Repo, load_dir
from tests.support import clirun

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
AUTO = RndcKeyConfig.model_validate({"autoRotate": True, "rotateAfter": "24h"})
HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
CLUSTER = HEAD + """kind: Bind9Cluster
metadata: {name: dns, namespace: dns-system}
spec:
  secondary: {replicas: 0}
  primary:
    replicas: 1
    rndcKey: {autoRotate: true, rotateAfter: 24h}
"""
SECRET = ("Secret", "dns-system", "dns-primary-0-rndc-key")
DEPLOYMENT = ("Deployment", "dns-system", "dns-primary-0")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _secret(created: dt.datetime | None, count: int = 0, previous: bool = False,
            born: dt.datetime = T0) -> dict[str, Any]:
    annotations = {} if created is None else {rotation.CREATED_AT: rotation.stamp(created),
                                              rotation.ROTATION_COUNT: str(count)}
    data = {"key-name": _b64("dns-primary-0-rndc-key"), "algorithm": _b64("hmac-sha256"), "secret": _b64("cur"),
            "rndc.key": _b64("x")}
    if previous:
        data[names.PREVIOUS_SECRET_KEY] = _b64("old")
    return {"metadata": {"annotations": annotations, "creationTimestamp": rotation.stamp(born)}, "data": data}


def _deployment(rolled_at: str | None, *, done: bool) -> dict[str, Any]:
    template: dict[str, Any] = {"annotations": {rotation.ROTATED_AT: rolled_at}} if rolled_at else {}
    status = ({"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1} if done
              else {"observedGeneration": 2, "replicas": 2, "updatedReplicas": 1, "availableReplicas": 1,
                    "unavailableReplicas": 1})  # a surge pod next to the old one
    return {"metadata": {"generation": 2}, "spec": {"replicas": 1, "template": {"metadata": template}},
            "status": status}


# -- the phase decision ------------------------------------------------------------------------------------
def test_without_auto_rotate_there_is_no_rotation_bookkeeping() -> None:
    decision = rotation.decide(RndcKeyConfig(), _secret(None), None, T0 + dt.timedelta(days=400))
    assert decision.phase == rotation.OFF and decision.annotations == {} and decision.status() is None


def test_a_new_key_gets_bindys_annotations_and_rotates_after_rotate_after() -> None:
    new = rotation.decide(AUTO, None, None, T0)
    assert new.phase == rotation.STEADY and not new.rotate
    assert new.annotations == {rotation.CREATED_AT: "2026-01-01T00:00:00Z", rotation.ROTATION_COUNT: "0",
                               rotation.ROTATE_AT: "2026-01-02T00:00:00Z"}
    young = rotation.decide(AUTO, _secret(T0), None, T0 + dt.timedelta(hours=23, minutes=59))
    assert young.phase == rotation.STEADY and young.annotations == new.annotations
    due = rotation.decide(AUTO, _secret(T0), _deployment(None, done=True), T0 + dt.timedelta(hours=24))
    assert due.rotate and due.keep_previous and due.rolled_at == "2026-01-02T00:00:00Z"
    assert due.annotations == {rotation.CREATED_AT: "2026-01-02T00:00:00Z", rotation.ROTATION_COUNT: "1",
                               rotation.ROTATE_AT: "2026-01-03T00:00:00Z"}
    assert due.status() == {"createdAt": "2026-01-02T00:00:00Z", "rotateAt": "2026-01-03T00:00:00Z",
                            "lastRotatedAt": "2026-01-02T00:00:00Z", "rotationCount": 1}


def test_a_key_made_before_rotation_was_on_counts_its_age_from_its_creation() -> None:
    decision = rotation.decide(AUTO, _secret(None, born=T0), None, T0 + dt.timedelta(days=2))
    assert decision.rotate and decision.annotations[rotation.ROTATION_COUNT] == "1"


def test_the_previous_key_stays_until_every_pod_has_rolled_and_no_rotation_starts_meanwhile() -> None:
    rolled_at = rotation.stamp(T0)
    live = _secret(T0, count=1, previous=True)
    later = T0 + dt.timedelta(days=5)  # due again, but the last rotation's pods are still rolling
    rolling = rotation.decide(AUTO, live, _deployment(rolled_at, done=False), later)
    assert rolling.phase == rotation.ROLLING and rolling.keep_previous and not rolling.rotate
    assert "still rolling out" in rolling.why_not and rolling.rolled_at == rolled_at
    stale = rotation.decide(AUTO, live, {**_deployment(None, done=True)}, T0 + dt.timedelta(hours=2))
    assert stale.keep_previous, "a Deployment whose template does not carry the rotation has not rolled"
    done = rotation.decide(AUTO, live, _deployment(rolled_at, done=True), T0 + dt.timedelta(hours=2))
    assert done.phase == rotation.STEADY and not done.keep_previous and done.rolled_at == rolled_at


def test_bindys_rate_limit_and_a_forced_rotation() -> None:
    live = _secret(T0 - dt.timedelta(days=9), count=3)
    live["metadata"]["annotations"][rotation.CREATED_AT] = rotation.stamp(T0)
    assert not rotation.decide(AUTO, live, None, T0 + dt.timedelta(minutes=30)).rotate
    forced = rotation.decide(RndcKeyConfig(), _secret(T0), None, T0 + dt.timedelta(minutes=1), force=True)
    assert forced.rotate and forced.annotations[rotation.ROTATION_COUNT] == "1"


# -- what a sync plans -------------------------------------------------------------------------------------
def _desired(repo: Repo, text: str = CLUSTER) -> hierarchy.Desired:
    repo.add("infra.yaml", text)
    manifest = load_dir(repo.root)
    assert manifest.ok, [str(p) for p in manifest.problems]
    state = hierarchy.build(manifest)
    assert [str(p) for p in state.problems if p.severity is Severity.ERROR] == []
    return state


def _live(desired: hierarchy.Desired, secret: dict[str, Any], deployment: dict[str, Any]) -> KubeObserved:
    """The cluster as the last run left it: what it applied (the objects in the phase `secret` and
    `deployment` are in), with the Secret's data and the Deployment's status."""
    keys = {tuple(o.key): o.key for o in desired.objects}
    before = {keys[SECRET]: secret, keys[DEPLOYMENT]: deployment}
    created = rotation._parse(secret["metadata"]["annotations"].get(rotation.CREATED_AT)) or T0
    applied, _ = rotation.rotated(desired, before, created)
    live = {}
    for obj in applied:
        body = kubechange.manifest(obj, names.DEFAULT_AGENT_NAMESPACE)
        if tuple(obj.key) == SECRET:
            body["metadata"]["creationTimestamp"] = secret["metadata"]["creationTimestamp"]
            body["data"] = secret["data"]
            body.pop("stringData")
        if tuple(obj.key) == DEPLOYMENT:
            body["metadata"].update(deployment["metadata"])
            body["status"] = deployment["status"]
        live[obj.key] = body
    return KubeObserved(live, set(live), {"dns-system", names.DEFAULT_AGENT_NAMESPACE})


def _changes(plan: Any) -> dict[tuple[str, str, str], Any]:
    return {(c.key.kind, c.key.namespace or "", c.key.name): c for c in plan}


def test_a_due_key_is_replaced_keeping_the_old_one_and_the_pods_roll(repo: Repo) -> None:
    desired = _desired(repo)
    observed = _live(desired, _secret(T0), _deployment(None, done=True))
    changes = _changes(build.kube_changes(desired, observed, agent=names.DEFAULT_AGENT_NAMESPACE,
                                          now=T0 + dt.timedelta(days=1)))
    secret = changes[SECRET].desired.body
    assert secret["stringData"]["secret"] == rotation.NEW_SECRET
    assert secret["stringData"][names.PREVIOUS_SECRET_KEY] == rotation.CURRENT_SECRET
    assert secret["stringData"]["key-name"] == "dns-primary-0-rndc-key"  # the name the zones' allow-update names
    assert secret["metadata"]["annotations"][rotation.ROTATION_COUNT] == "1"
    template = changes[DEPLOYMENT].desired.body["spec"]["template"]["metadata"]
    assert template["annotations"][rotation.ROTATED_AT] == "2026-01-02T00:00:00Z"


def test_a_key_not_due_plans_nothing_and_a_rolled_out_rotation_drops_the_previous_key(repo: Repo) -> None:
    desired = _desired(repo)
    quiet = _live(desired, _secret(T0), _deployment(None, done=True))
    assert build.kube_changes(desired, quiet, agent=names.DEFAULT_AGENT_NAMESPACE,
                              now=T0 + dt.timedelta(hours=3)) == []
    rolled_at = rotation.stamp(T0)
    done = _live(desired, _secret(T0, count=1, previous=True), _deployment(rolled_at, done=True))
    changes = _changes(build.kube_changes(desired, done, agent=names.DEFAULT_AGENT_NAMESPACE,
                                          now=T0 + dt.timedelta(hours=3)))
    assert list(changes) == [SECRET] and f"data.{names.PREVIOUS_SECRET_KEY}" in changes[SECRET].fields
    assert names.PREVIOUS_SECRET_KEY not in changes[SECRET].desired.body["stringData"]


def test_manual_rotation_takes_the_same_path_or_says_why_not(repo: Repo) -> None:
    desired = _desired(repo, CLUSTER.replace("rndcKey: {autoRotate: true, rotateAfter: 24h}", "rndcKey: {}"))
    observed = _live(desired, _secret(T0), _deployment(None, done=True))
    plan = build.build(desired, Observed(observed, None), choices=build.KubeChoices(rotate_rndc_keys=True, now=T0 + dt.timedelta(hours=2)))
    secret = next(c for c in plan.kube or [] if tuple(c.key) == SECRET).desired
    assert secret is not None and secret.body["stringData"][names.PREVIOUS_SECRET_KEY] == rotation.CURRENT_SECRET
    rolling = _live(desired, _secret(T0, count=1, previous=True), _deployment(rotation.stamp(T0), done=False))
    plan = build.build(desired, Observed(rolling, None), choices=build.KubeChoices(rotate_rndc_keys=True, now=T0 + dt.timedelta(hours=2)))
    assert not any(tuple(c.key) == SECRET and c.action == "update" and "data.secret" in c.fields
                   for c in plan.kube or [])
    assert any("not rotated: the last rotation is still rolling out" in n for n in plan.notes), plan.notes


def test_a_roles_rotation_reaches_its_instances(repo: Repo) -> None:
    desired = _desired(repo)
    spec = desired.instances[next(iter(desired.instances))].spec
    assert spec.rndc_key is not None and spec.rndc_key.auto_rotate and spec.rndc_key.rotate_after == "24h"


# -- status and validation ---------------------------------------------------------------------------------
def test_status_shows_rndc_key_rotation_as_bindy_does() -> None:
    assert rotation.status(AUTO, _secret(T0, count=2)) == {"createdAt": "2026-01-01T00:00:00Z", "rotationCount": 2,
                                                           "lastRotatedAt": "2026-01-01T00:00:00Z"}
    assert rotation.status(RndcKeyConfig(), _secret(T0, count=2)) is None


@pytest.mark.parametrize("value", ["30m", "1y", "0h", "9000h", "720"])
def test_validate_warns_of_a_rotate_after_bindy_cannot_read_at_its_line(repo: Repo, value: str) -> None:
    repo.add("infra.yaml", CLUSTER.replace("rotateAfter: 24h", f"rotateAfter: {value!r}"))
    result = clirun.main("validate", str(repo.root))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "infra.yaml:8" in out and "rotateAfter has no effect in bindy-agent" in out and "720h" in out, out
    assert rotation.decide(RndcKeyConfig.model_validate({"autoRotate": True, "rotateAfter": value}), _secret(T0),
                           None, T0 + dt.timedelta(days=400)).phase == rotation.STEADY


def test_validate_no_longer_warns_about_rotation(repo: Repo) -> None:
    repo.add("infra.yaml", CLUSTER)
    result = clirun.main("validate", str(repo.root))
    assert result.returncode == 0 and "has no effect" not in result.stdout + result.stderr
