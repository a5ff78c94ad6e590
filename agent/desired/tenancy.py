"""Tenancy from the agent's settings (pure): the namespaces a repository may reach, and its
references.

Like Flux's multi-tenancy lockdown and Argo CD's AppProject destinations, the agent, not the
repository, decides where a repository's objects may go:
  * every namespaced CR, and every target namespace of a ClusterBind9Provider, must be allowed;
  * references across namespaces are off unless the settings allow them: a record joining a
    DNSZone of another namespace (through spec.zone, or by the longest suffix of its FQDN), a
    Secret reference naming another namespace. A ClusterBind9Provider spanning namespaces, and a
    DNSZone served by it, are the provider's purpose and allowed (within allowed namespaces);
  * a CR may reference only Secrets the agent generates, or that carry the opt-in label
    `bindy.firestoned.io/allow-reference: "true"` (checked against live labels the observe step
    reads).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from agent.desired.hierarchy import Desired
from agent.load.loaded import Loaded
from agent.load.manifest import Manifest
from agent.model import names
from agent.model.problems import Problem, Severity

if TYPE_CHECKING:  # pragma: no cover - types only
    from agent.desired.policy import PolicySettings, SecretLabels

OPT_IN = f'{names.ALLOW_REFERENCE_LABEL}: "{names.ALLOW_REFERENCE_VALUE}"'
# the kinds whose spec can name a Secret (RNDC keys, DNSSEC keys, volumes, pull secrets, env)
REFERRING_KINDS = {"ClusterBind9Provider", "Bind9Cluster", "Bind9Instance", "DNSZone"}


@dataclasses.dataclass(frozen=True)
class SecretRef:
    """A Secret named by a CR: where (object, field path) and which (namespace, name)."""

    obj: Loaded
    path: str
    namespace: str
    name: str
    explicit_namespace: bool  # the reference names its namespace (DNSSEC keysFrom.secretRef)


def targets(obj: Loaded) -> list[tuple[str, str]]:
    """The namespaces an object acts in, each with the field path that puts it there."""
    if obj.key.kind == "ClusterBind9Provider":
        # its model imported only then (agent/model/kinds.py)
        from agent.model.infra import ClusterBind9Provider

        assert isinstance(obj.model, ClusterBind9Provider)
        spec = obj.model.spec
        if spec.namespaces:
            return [(ns, f"spec.namespaces[{i}]") for i, ns in enumerate(spec.namespaces)]
        path = "spec.namespace" if spec.namespace else "spec"
        return [(spec.namespace or names.DEFAULT_PROVIDER_NAMESPACE, path)]
    return [(obj.key.namespace, "metadata.namespace")] if obj.key.namespace is not None else []


def check(manifest: Manifest, state: Desired, settings: PolicySettings,
          labels: SecretLabels | None) -> list[Problem]:
    out = _namespaces(manifest, settings)
    out += _records_across_namespaces(manifest, state, settings)
    out += _secrets(secret_refs(manifest), state, settings, labels)
    return out


def _problem(obj: Loaded, path: str, message: str, severity: Severity = Severity.ERROR) -> Problem:
    return Problem(obj.origin_at(path), str(obj.key), path, message, severity)


def _namespaces(manifest: Manifest, settings: PolicySettings) -> list[Problem]:
    out: list[Problem] = []
    if "*" in settings.allowed_namespaces:  # any namespace (policy.ANY)
        return out
    allowed, permitted = ", ".join(settings.allowed_namespaces), set(settings.allowed_namespaces)
    for obj in manifest.objects:
        if obj.key.namespace in permitted and obj.key.kind != "ClusterBind9Provider":
            # the usual case, decided without looking further (a revision may hold 100,000)
            continue
        for namespace, path in targets(obj):
            if not settings.namespace_allowed(namespace):
                out.append(_outside(obj, namespace, path, allowed, settings))
    return out


def _outside(obj: Loaded, namespace: str, path: str, allowed: str,
             settings: PolicySettings) -> Problem:
    """A CR that acts in a namespace the agent may not manage; one that names none is told so, with
    the fix."""
    decides = ("the agent's setting allowed_namespaces (--allowed-namespaces) decides, not the "
               "repository")
    if path == "metadata.namespace" and not obj.written(path):
        first = settings.default_namespace
        return _problem(obj, path, f"missing: the object was put in namespace {namespace} (from "
                        f"--namespace), which this agent may not manage (allowed: {allowed}); "
                        f"write metadata.namespace: {first}")
    default = " (the default)" if path == "spec" else ""
    return _problem(obj, path, f"namespace {namespace}{default} is not one this agent may manage "
                    f"(allowed: {allowed}); {decides}")


def _records_across_namespaces(manifest: Manifest, state: Desired,
                               settings: PolicySettings) -> list[Problem]:
    if settings.allow_cross_namespace_refs:
        return []
    across = [(zone, key) for zone in state.zones for key in zone.from_other_namespaces]
    if not across:
        return []
    by_key = {o.key: o for o in manifest.objects}
    out: list[Problem] = []
    for zone, key in sorted(across, key=lambda zk: (state.zones.index(zk[0]), zk[1])):
        record = by_key.get(key)
        if record is None:
            continue
        path = "spec.zone" if record.model.spec.zone else "spec.name"  # type: ignore[attr-defined]
        out.append(_problem(record, path, f"joins DNSZone {zone.key} ({zone.name}) in another "
                            "namespace; references across namespaces are off (the agent's setting "
                            "allow_cross_namespace_refs, --allow-cross-namespace-refs)"))
    return out


def _walk(node: Any, path: str) -> Iterator[tuple[str, str, str | None]]:
    """(field path, name, namespace) of every Secret reference below `node`."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _walk(item, f"{path}[{i}]")
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        here = f"{path}.{key}"
        found = _references(key, value, here)
        if found is None:
            yield from _walk(value, here)
        else:
            yield from found


def _references(key: str, value: Any, here: str) -> list[tuple[str, str, str | None]] | None:
    """The Secret references of field `key` (at `here`); None when it is no reference field, and
    what is below it is walked."""
    if key.endswith(("SecretRef", "secretRef", "secretKeyRef")) and isinstance(value, dict) \
            and isinstance(value.get("name"), str):
        return [(f"{here}.name", value["name"], value.get("namespace"))]
    if key == "secret" and isinstance(value, dict) and isinstance(value.get("secretName"), str):
        return [(f"{here}.secretName", value["secretName"], None)]  # a secret volume
    if key == "secret" and isinstance(value, dict) and isinstance(value.get("name"), str):
        return [(f"{here}.name", value["name"], None)]  # a projected volume's source
    if key == "secretName" and isinstance(value, str):
        return [(here, value, None)]  # azureFile and the like
    if key in ("imagePullSecrets", "rndcSecretRefs") and isinstance(value, list):
        return list(_listed(value, here))
    return None


def _listed(items: list[Any], here: str) -> Iterator[tuple[str, str, str | None]]:
    """A list of Secrets, each by its name or as {name: ...}."""
    for i, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else item
        if isinstance(name, str):
            yield f"{here}[{i}]" + (".name" if isinstance(item, dict) else ""), name, None


def _named_secrets(obj: Loaded) -> list[tuple[str, str, str | None]]:
    """(field path, name, namespace) of the Secrets one CR names; kept with the object, which a
    long-running agent reuses while its file is unchanged (a revision may hold 1,000 DNSZones)."""
    return obj.derived(_secrets_named)


def _secrets_named(obj: Loaded) -> list[tuple[str, str, str | None]]:
    spec: Any = getattr(obj.model, "spec", None)
    # through the object's own serializer, which validating it built: the spec's class would build
    # its own
    if not hasattr(spec, "model_dump"):
        return []
    dumped = obj.model.model_dump(include={"spec"}, by_alias=True, exclude_none=True, mode="json")
    return list(_walk(dumped["spec"], "spec"))


def secret_refs(manifest: Manifest) -> list[SecretRef]:
    """Every Secret the revision's CRs reference, once for each namespace it resolves in."""
    out = []
    for obj in manifest.of_kind(*sorted(REFERRING_KINDS)):
        # a record's spec names no Secret (no place for one)
        for path, name, namespace in _named_secrets(obj):
            if namespace is not None:
                out.append(SecretRef(obj, path, namespace, name, True))
            else:
                out += [SecretRef(obj, path, ns, name, False) for ns, _ in targets(obj)]
    return out


def secrets_to_observe(manifest: Manifest) -> set[tuple[str, str]]:
    """(namespace, name) of every referenced Secret: what the observe step must read the labels
    of."""
    return {(r.namespace, r.name) for r in secret_refs(manifest)}


def _secrets(refs: list[SecretRef], state: Desired, settings: PolicySettings,
             labels: SecretLabels | None) -> list[Problem]:
    generated = {(o.key.namespace, o.key.name) for o in state.infrastructure
                 if o.key.kind == "Secret"}
    out = []
    for ref in refs:
        where = f"Secret {ref.namespace}/{ref.name}"
        if ref.explicit_namespace and ref.namespace != ref.obj.key.namespace:
            if not settings.allow_cross_namespace_refs:
                out.append(_problem(ref.obj, ref.path, f"{where} is in another namespace; "
                                    "references across namespaces are off (the agent's setting "
                                    "allow_cross_namespace_refs, --allow-cross-namespace-refs)"))
                continue
            if not settings.namespace_allowed(ref.namespace):
                out.append(_problem(ref.obj, ref.path, f"{where}: namespace {ref.namespace} is not "
                                    "one this agent may manage (the agent's setting "
                                    "allowed_namespaces, --allowed-namespaces)"))
                continue
        key = (ref.namespace, ref.name)
        verdict = _secret_verdict(where, key in generated, labels, key)
        if verdict:
            out.append(_problem(ref.obj, ref.path, *verdict))
    return out


def _secret_verdict(where: str, generated: bool, labels: SecretLabels | None,
                    key: tuple[str, str]) -> tuple[str, Severity] | None:
    """None if the reference is allowed, else why not and how bad."""
    if labels is None:
        # no cluster: what the agent generates is fine, the rest cannot be checked yet
        unchecked = (f"{where} is not generated by the agent; a sync accepts the reference only if "
                     f"that Secret is labelled {OPT_IN}", Severity.WARNING)
        return None if generated else unchecked
    if key not in labels:
        return f"{where} was not observed, so the reference cannot be checked", Severity.ERROR
    live = labels[key]
    opted_in = (live is not None
                and live.get(names.ALLOW_REFERENCE_LABEL) == names.ALLOW_REFERENCE_VALUE)
    if generated:
        return _generated_verdict(where, live, opted_in)
    if live is None:
        return f"{where} does not exist", Severity.ERROR
    if opted_in:
        return None
    return (f"{where} was not generated by the agent and is not labelled {OPT_IN}; a CR may "
            "reference only Secrets the agent generates or that opt in with that label",
            Severity.ERROR)


def _generated_verdict(where: str, live: Mapping[str, str] | None,
                       opted_in: bool) -> tuple[str, Severity] | None:
    """A reference to a Secret the agent generates: fine unless another Secret holds its name."""
    if live is None or opted_in or live.get(names.MANAGED_BY_KEY) == names.MANAGED_BY_VALUE:
        return None
    return (f"{where} is one the agent generates, but a Secret of that name exists that the agent "
            f"did not make; rename one, or label it {OPT_IN}", Severity.ERROR)
