"""`storage.persistentVolumeClaim` on a Bind9Instance (issue 26, "Pods and storage"): the agent creates
the claim (size, storageClassName, accessModes) when it does not exist and mounts it as the zones
volume; a claim that exists - the agent's or anyone's - is left alone: never resized, never deleted.
Bindy's operator reads none of these fields. Pure: the plan, without a cluster."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from agent.desired import hierarchy
from agent.desired.hierarchy import Desired
from agent.model.key import ObjectKey
from agent.model.observed import KubeObserved, Observed
from agent.plan import build as plan_build
from agent.plan import kubechange, kubediff
from tests.conftest import SAMPLE, load_dir
from tests.support.clirun import main

AGENT = "bindy-agent"
CLAIM = ObjectKey("PersistentVolumeClaim", "dns-system", "stored-0-zones")
INSTANCE = """apiVersion: bindy.firestoned.io/v1beta1
kind: Bind9Instance
metadata: {{name: stored-0, namespace: dns-system}}
spec:
  clusterRef: dns
  role: primary
  storage:
    storageType: persistentVolumeClaim
    persistentVolumeClaim: {pvc}
"""


def _repo(tmp_path: Path, pvc: str = "{size: 2Gi, storageClassName: fast, accessModes: [ReadWriteMany]}") -> Path:
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
    (root / "infrastructure" / "stored.yaml").write_text(INSTANCE.format(pvc=pvc))
    return root


def _desired(tmp_path: Path, **kw: str) -> Desired:
    return hierarchy.build(load_dir(_repo(tmp_path, **kw)))


def _objects(desired: Desired) -> dict[ObjectKey, Any]:
    return {o.key: o for o in desired.objects}


def _zones_volume(desired: Desired) -> dict[str, Any]:
    deploy = _objects(desired)[ObjectKey("Deployment", "dns-system", "stored-0")].body
    return next(v for v in deploy["spec"]["template"]["spec"]["volumes"] if v["name"] == "zones")


def test_the_plan_creates_the_claim_with_its_size_class_and_modes_and_mounts_it(tmp_path: Path) -> None:
    desired = _desired(tmp_path)
    obj = _objects(desired)[CLAIM]
    body = kubechange.manifest(obj, AGENT)
    assert body["spec"] == {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "2Gi"}},
                            "storageClassName": "fast"}
    assert body["metadata"]["labels"]["app.kubernetes.io/instance"] == "stored-0"
    assert kubechange.is_managed(body, AGENT)
    assert "ownerReferences" not in body["metadata"]  # deleting the instance never garbage-collects the data
    assert _zones_volume(desired) == {"name": "zones", "persistentVolumeClaim": {"claimName": "stored-0-zones"}}
    changes = kubediff.diff(desired.objects, {}, set(), agent=AGENT)
    order = [c.key for c in changes]
    assert ("create", CLAIM) in [(c.action, c.key) for c in changes]
    assert order.index(CLAIM) < order.index(ObjectKey("Deployment", "dns-system", "stored-0"))


def test_defaults_one_read_write_once_claim_and_the_cluster_default_class(tmp_path: Path) -> None:
    body = _objects(_desired(tmp_path, pvc="{claimName: data, size: 1Gi}"))[
        ObjectKey("PersistentVolumeClaim", "dns-system", "data")].body
    assert body["spec"] == {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}


def test_without_a_size_the_named_claim_is_mounted_but_not_created(tmp_path: Path) -> None:
    desired = _desired(tmp_path, pvc="{claimName: bring-your-own}")
    assert not [k for k in _objects(desired) if k.kind == "PersistentVolumeClaim"]
    assert _zones_volume(desired)["persistentVolumeClaim"] == {"claimName": "bring-your-own"}


def _live_claim(size: str, *, ours: bool) -> dict[str, Any]:
    labels = {"app.kubernetes.io/managed-by": "bindy-agent", "bindy.firestoned.io/agent": AGENT} if ours else {}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": CLAIM.name, "namespace": "dns-system", "labels": labels},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}},
                     "storageClassName": "standard", "volumeName": "pv-1"},
            "status": {"phase": "Bound", "capacity": {"storage": size}}}


def test_an_existing_claim_is_left_alone_whoever_made_it_and_whatever_it_asks(tmp_path: Path) -> None:
    desired = _desired(tmp_path)
    for ours in (True, False):
        live = {CLAIM: kubechange_body(_live_claim("50Gi", ours=ours))}
        changes = kubediff.diff(desired.objects, live, {CLAIM}, agent=AGENT)
        assert [c for c in changes if c.key == CLAIM] == [], ours  # no update (resize), no conflict


def test_a_claim_is_never_pruned_when_the_instance_or_its_storage_goes(tmp_path: Path) -> None:
    desired = _desired(tmp_path, pvc="{claimName: other, size: 1Gi}")  # the old claim is no longer wanted
    live = {CLAIM: kubechange_body(_live_claim("2Gi", ours=True))}
    changes = kubediff.diff(desired.objects, live, {CLAIM}, agent=AGENT)
    assert [c for c in changes if c.key == CLAIM] == []
    shutil.rmtree(tmp_path / "repo")
    gone = hierarchy.build(load_dir(_repo(tmp_path)))  # the instance removed from Git
    gone_objects = [o for o in gone.objects if o.key.name != "stored-0" and o.key != CLAIM]
    assert [c for c in kubediff.diff(gone_objects, live, {CLAIM}, agent=AGENT) if c.key == CLAIM] == []


def kubechange_body(body: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(body))


def test_validate_and_plan_take_the_fields_without_a_warning_and_show_the_claim(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    checked = main("validate", str(root))
    assert checked.returncode == 0 and "has no effect" not in checked.stdout + checked.stderr, checked.stderr
    planned = main("plan", str(root), "-o", "json")
    assert planned.returncode == 0, planned.stderr
    creates = [c for c in json.loads(planned.stdout)["changes"]
               if c["target"].get("kind") == "PersistentVolumeClaim" and c["action"] == "create"]
    assert [c["target"]["name"] for c in creates] == ["stored-0-zones"], planned.stdout[:2000]


def test_the_prune_gate_counts_the_same_whether_the_claim_was_remembered_or_listed(tmp_path: Path) -> None:
    """The instance leaves Git: a long-running agent's remembered cluster still has its claim, a full
    observe does not list claims. The prune limit's base (what the agent may prune) is the same both
    ways, so the same revision is never refused by one run and applied by the next."""
    before = _desired(tmp_path)
    live = {o.key: kubechange.manifest(o, AGENT) for o in before.objects}
    (tmp_path / "repo" / "infrastructure" / "stored.yaml").unlink()
    after = hierarchy.build(load_dir(tmp_path / "repo"))
    namespaces = {"dns-system", AGENT}
    remembered = KubeObserved(live, set(live), namespaces)
    listed = KubeObserved({k: v for k, v in live.items() if k != CLAIM}, set(live), namespaces)
    plans = [plan_build.build(after, Observed(kube, None), agent=AGENT) for kube in (remembered, listed)]
    deletes = [sorted(str(c.key) for c in p.kube or [] if c.action == "delete") for p in plans]
    assert deletes[0] == deletes[1] and deletes[0] and str(CLAIM) not in deletes[0], deletes
    assert plans[0].kube_managed == plans[1].kube_managed == len(live) - 1, [p.kube_managed for p in plans]
