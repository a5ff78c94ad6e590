"""RNDC / TSIG key rotation of a generated `<instance>-rndc-key` Secret (pure: the clock is an
argument).

Bindy's bookkeeping, with Bindy's names (src/constants.rs, src/bind9/rndc.rs): the Secret carries
`bindy.firestoned.io/rndc-created-at`, `rndc-rotate-at` (created + rotateAfter) and
`rndc-rotation-count`; a rotation is due when rotate-at has passed and the key is at least an hour
old; a rotation sets `bindy.firestoned.io/rndc-rotated-at` on the Deployment's pod template, which
rolls the pods; the instance's status shows `rndcKeyRotation`.

Bindy replaces the key and rolls the pods at once, so until the rollout ends the operator signs
with a key the old pods do not know. Here the key keeps its name (each zone's `allow-update`
names it, and bindcar cannot change that) and every pod keeps the key it started with (named reads
the key file and the sidecar its environment once, at start), so a pod's named and sidecar always
agree. What changes at a rotation:

    steady    Secret: secret (current)                  every pod: current
    rotate    Secret: secret := new,                    pods roll: old pods old key, new pods
              previous-secret := old                    new
    rolling   Secret keeps both until the Deployment    the agent signs each pod with the key
              has rolled every pod (updated =           that pod accepts (a TSIG-signed SOA
              available = replicas, generation          query first: agent/observe/keyprobe.py),
              observed)                                 never a guess
    dropped   previous-secret dropped                   only the new key is accepted anywhere

A rotation never starts while the last one is rolling out (its previous key still has pods).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
from collections.abc import Iterable
from typing import Any

from agent.desired import workloads
from agent.desired.hierarchy import Desired, KubeObject
from agent.load import rulechecks
from agent.model.infra import RndcKeyConfig
from agent.model.key import ObjectKey
from agent.model.names import PREVIOUS_SECRET_KEY

CREATED_AT = "bindy.firestoned.io/rndc-created-at"
ROTATE_AT = "bindy.firestoned.io/rndc-rotate-at"
ROTATION_COUNT = "bindy.firestoned.io/rndc-rotation-count"
# on the Deployment's pod template: rolls the pods
ROTATED_AT = "bindy.firestoned.io/rndc-rotated-at"
ANNOTATIONS = (CREATED_AT, ROTATE_AT, ROTATION_COUNT)
MIN_AGE = dt.timedelta(hours=1)  # Bindy's MIN_TIME_BETWEEN_ROTATIONS_HOURS

OFF, STEADY, ROTATE, ROLLING = "off", "steady", "rotate", "rolling"


def parse_duration(text: str) -> dt.timedelta:
    """`rotateAfter` as Bindy reads it: `720h`, `30d`, `4w`, within 1h..8760h (load/rulechecks.py;
    the loader refuses anything else, with file:line). ValueError says what is wrong."""
    return dt.timedelta(hours=rulechecks.rotation_hours(text))


def stamp(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    try:
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


@dataclasses.dataclass(frozen=True)
class Decision:
    """What one instance's key Secret and Deployment carry after this run."""

    # OFF, STEADY, ROTATE (a new key now), ROLLING (pods still start over to the last new key)
    phase: str
    annotations: dict[str, str]  # the Secret's rotation annotations (none when OFF)
    rolled_at: str | None  # the pod template's rndc-rotated-at (None: never rotated)
    keep_previous: bool  # previous-secret stays in the Secret
    why_not: str = ""  # a rotation that was asked for and waits, and why

    @property
    def rotate(self) -> bool:
        return self.phase == ROTATE

    def status(self) -> dict[str, Any] | None:
        """The instance's `rndcKeyRotation`, as Bindy's update_rotation_status fills it."""
        if self.phase == OFF or CREATED_AT not in self.annotations:
            return None
        count = int(self.annotations.get(ROTATION_COUNT, "0"))
        out: dict[str, Any] = {"createdAt": self.annotations[CREATED_AT], "rotationCount": count}
        if ROTATE_AT in self.annotations:
            out["rotateAt"] = self.annotations[ROTATE_AT]
        if count > 0:
            out["lastRotatedAt"] = self.annotations[CREATED_AT]
        return out


def rolled_out(deployment: dict[str, Any] | None, rolled_at: str | None) -> bool:
    """Whether every pod of the Deployment started after the rotation stamped `rolled_at`: its pod
    template carries the stamp, the controller saw that generation, and every replica is updated
    and available with none of the old ones left. No Deployment: no pod holds an old key."""
    if deployment is None:
        return True
    template = (((deployment.get("spec") or {}).get("template") or {}).get("metadata") or {})
    if rolled_at is not None and (template.get("annotations") or {}).get(ROTATED_AT) != rolled_at:
        return False
    meta, spec, status = (deployment.get("metadata") or {}, deployment.get("spec") or {},
                          deployment.get("status") or {})
    want = spec.get("replicas", 1)
    return (status.get("observedGeneration", 0) >= meta.get("generation", 0)
            and status.get("updatedReplicas", 0) == want and status.get("replicas", 0) == want
            and status.get("availableReplicas", 0) == want
            and not status.get("unavailableReplicas"))


def decide(config: RndcKeyConfig | None, secret: dict[str, Any] | None,
           deployment: dict[str, Any] | None, now: dt.datetime, *, force: bool = False) -> Decision:
    """The phase of a generated key Secret. `config`: the instance's rndcKey; `secret` and
    `deployment`: the live objects (None: not there yet); `force`: `sync --rotate-rndc-keys`, a
    rotation now whatever rotate-at says (still never while the last one rolls out)."""
    auto = config is not None and config.auto_rotate
    try:
        after = parse_duration(config.rotate_after) if auto and config is not None else None
    # warned at validate (load/inert.py): as in Bindy, such a key is never rotated
    except ValueError:
        after = None
    meta = (secret or {}).get("metadata") or {}
    live = {k: v for k, v in (meta.get("annotations") or {}).items() if k in ANNOTATIONS}
    has_previous = PREVIOUS_SECRET_KEY in ((secret or {}).get("data") or {})
    created = _parse(live.get(CREATED_AT))
    count = int(live[ROTATION_COUNT]) if live.get(ROTATION_COUNT, "").isdigit() else 0
    rolled_at = live.get(CREATED_AT) if count > 0 else None
    rolling = has_previous and not rolled_out(deployment, rolled_at)
    # never rotated and not asked to: no bookkeeping, as Bindy
    if not auto and not force and not live:
        return Decision(OFF, {}, None, rolling)
    if secret is None:  # created in this run
        return Decision(STEADY, _annotations(now, after, 0), None, False)
    if created is None:  # made before rotation was on: its age counts from its creation
        created = _parse(meta.get("creationTimestamp")) or now
    due = force or (after is not None and now >= created + after and now - created >= MIN_AGE)
    if due and rolling:
        return Decision(ROLLING, _annotations(created, after, count), rolled_at, True,
                        why_not="the last rotation is still rolling out: its previous key is in "
                                "use until every pod has restarted; rotate again once the "
                                "Deployment is rolled out")
    if due:
        return Decision(ROTATE, _annotations(now, after, count + 1), stamp(now), True)
    return Decision(ROLLING if rolling else STEADY, _annotations(created, after, count), rolled_at,
                    rolling)


def _annotations(created: dt.datetime, after: dt.timedelta | None, count: int) -> dict[str, str]:
    out = {CREATED_AT: stamp(created), ROTATION_COUNT: str(count)}
    if after is not None:
        out[ROTATE_AT] = stamp(created + after)
    return out


def status(config: RndcKeyConfig | None, secret: dict[str, Any] | None) -> dict[str, Any] | None:
    """`rndcKeyRotation` of an instance from its live key Secret (Bindy shows it only with
    autoRotate)."""
    if config is None or not config.auto_rotate or secret is None:
        return None
    annotations = (secret.get("metadata") or {}).get("annotations") or {}
    return Decision(STEADY, {k: v for k, v in annotations.items() if k in ANNOTATIONS}, None,
                    False).status()


# -- the objects a revision wants, with each generated key Secret in its phase
# -------------------------
# stringData: the reconciler generates a new key (agent/reconcile/kubeapply.py)
NEW_SECRET = "<new secret>"
# stringData: the live Secret's `secret` (the key being replaced)
CURRENT_SECRET = "<current secret>"


def _generated_key(obj: KubeObject) -> bool:
    # the body last: a CR written in Git makes its body anew when asked (a record's, 100,000 times)
    return (obj.key.kind == "Secret" and obj.owner is not None and obj.owner.kind == "Bind9Instance"
            and obj.key.name == workloads.rndc_key_name(obj.owner.name)
            and (obj.body.get("stringData") or {}).get("secret") == workloads.SECRET_PLACEHOLDER)


def rotated(desired: Desired, live: dict[ObjectKey, dict[str, Any]], now: dt.datetime, *,
            force: bool = False) -> tuple[Iterable[KubeObject], list[KubeObject]]:
    """The revision's objects with every generated key Secret and its Deployment in their phase
    (`decide`), and the Secrets whose previous key is to be dropped now (their rollout is done:
    a change of its own, as a key left out of stringData stays in the live Secret)."""
    infrastructure, dropping = rotated_infrastructure(desired, live, now, force=force)
    # no generated key: the revision's objects as they are (not copied: 100,000 CRs)
    if infrastructure is None:
        return desired.objects, dropping
    return itertools.chain(infrastructure,
                           itertools.islice(desired.objects, desired.infra, None)), dropping


def rotated_infrastructure(desired: Desired, live: dict[ObjectKey, dict[str, Any]],
                           now: dt.datetime, *,
                           force: bool = False) -> tuple[list[KubeObject] | None, list[KubeObject]]:
    """`rotated` of the objects before the Git CRs (`Desired.infrastructure`: every generated key
    Secret and Deployment is one of them); None when no key is generated (they are as they are)."""
    phases: dict[ObjectKey, Decision] = {}
    out: list[KubeObject] = []
    dropping: list[KubeObject] = []
    # the generated objects (key Secrets, Deployments) are all here
    infrastructure = desired.infrastructure
    for obj in infrastructure:
        if not _generated_key(obj):
            continue
        instance = desired.instances.get(obj.owner) if obj.owner else None
        config = instance.spec.rndc_key if instance else None
        deployment = ObjectKey("Deployment", obj.key.namespace, obj.owner.name if obj.owner else "")
        decision = decide(config, live.get(obj.key), live.get(deployment), now, force=force)
        phases[obj.key] = phases[deployment] = decision
    if not phases:
        return None, dropping
    for obj in infrastructure:
        phase = phases.get(obj.key)
        if phase is None:
            out.append(obj)
        elif obj.key.kind == "Secret":
            new = dataclasses.replace(obj, content=_secret_body(obj.body_copy(), phase))
            out.append(new)
            data = (live.get(obj.key) or {}).get("data") or {}
            if not phase.keep_previous and PREVIOUS_SECRET_KEY in data:
                dropping.append(new)
        else:
            out.append(dataclasses.replace(obj, content=_deployment_body(obj.body_copy(), phase))
                       if phase.rolled_at else obj)
    return out, dropping


def _secret_body(body: dict[str, Any], decision: Decision) -> dict[str, Any]:
    if decision.annotations:
        body["metadata"]["annotations"] = {**(body["metadata"].get("annotations") or {}),
                                           **decision.annotations}
    data = body["stringData"]
    if decision.rotate:
        data["secret"] = NEW_SECRET
        data[PREVIOUS_SECRET_KEY] = CURRENT_SECRET
    elif decision.keep_previous:
        data[PREVIOUS_SECRET_KEY] = workloads.SECRET_PLACEHOLDER  # kept as it is
    return body


def _deployment_body(body: dict[str, Any], decision: Decision) -> dict[str, Any]:
    template = body["spec"]["template"]["metadata"]
    template["annotations"] = {**(template.get("annotations") or {}),
                               ROTATED_AT: decision.rolled_at}
    return body


def why_not(desired: Desired, live: dict[ObjectKey, dict[str, Any]], now: dt.datetime) -> list[str]:
    """For `sync --rotate-rndc-keys`: each generated key that cannot be rotated now, and why."""
    out = []
    for obj in desired.infrastructure:
        if _generated_key(obj) and obj.owner is not None:
            instance = desired.instances.get(obj.owner)
            decision = decide(instance.spec.rndc_key if instance else None, live.get(obj.key),
                              live.get(ObjectKey("Deployment", obj.key.namespace, obj.owner.name)),
                              now, force=True)
            if decision.why_not:
                out.append(f"{obj.key}: not rotated: {decision.why_not}")
    return out
