"""A Bind9Instance's zones volume on a PersistentVolumeClaim: which claim, and the claim to create
(pure).

`storage.persistentVolumeClaim` (Bindy's operator reads none of `storage`): the zones volume uses
`claimName`, else `<instance>-zones`; with `size` the agent creates that claim when it does not
exist. Once it exists the agent never changes it (no resize, no new class or modes) and never
deletes it (plan/kubediff.py CREATE_ONLY): it holds the zone files and DNSSEC keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.model.infra import Bind9InstanceSpec

CLAIM_ACCESS_MODES = ["ReadWriteOnce"]  # a claim's access modes when `accessModes` is not given


def claim_name(instance: str, spec: Bind9InstanceSpec) -> str | None:
    """The PersistentVolumeClaim the zones volume uses (`claimName`, else `<instance>-zones`), or
    None for an emptyDir."""
    storage = spec.storage
    if (storage and storage.storage_type == "persistentVolumeClaim"
        and storage.persistent_volume_claim):
        return storage.persistent_volume_claim.claim_name or f"{instance}-zones"
    return None


def claim(instance: str, namespace: str, lbl: dict[str, str],
          spec: Bind9InstanceSpec) -> dict[str, Any] | None:
    """The claim to create when it does not exist, from `storage.persistentVolumeClaim` (Bindy reads
    neither these fields nor the claim): only when `size` is given (a claim must request a size);
    without it, the claim named is one that someone else creates. Once it exists the agent never
    changes it (no resize, no new class or modes) and never deletes it: it holds the zones and
    keys."""
    name = claim_name(instance, spec)
    pvc = spec.storage.persistent_volume_claim if spec.storage else None
    if name is None or pvc is None or not pvc.size:
        return None
    claim_spec: dict[str, Any] = {"accessModes": list(pvc.access_modes or CLAIM_ACCESS_MODES),
                                  "resources": {"requests": {"storage": pvc.size}}}
    if pvc.storage_class_name is not None:
        claim_spec["storageClassName"] = pvc.storage_class_name
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(lbl)},
            "spec": claim_spec}
