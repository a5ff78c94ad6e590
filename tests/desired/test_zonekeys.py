"""One DNSSEC key set per signed zone (agent/desired/zonekeys.py, agent/reconcile/zonekeys.py): the
zone's key Secret, mounted by every primary's Deployment and copied into named's key directory by an
init container; what cannot be made consistent refused at the DNSZone's line; the keys made once
and then kept; the DS shown only when every server serves the same KSK."""

from __future__ import annotations

import base64
import datetime
import pathlib
import subprocess
from typing import Any

import pytest

from agent.desired import hierarchy, namedconf, workloads, zonekeys
from agent.model import names
from agent.model.key import ObjectKey
from agent.model.observed import KubeObserved, Observed
from agent.outcome import dnssecstatus
from agent.plan import build, changes, kubechange, kubediff
from agent.reconcile import zonekeys as making
from tests.conftest import Repo, load_dir
from tests.support.dnssecworld import DS, HEAD, KSK, ZONE, ZSK, _cluster, _served

P = workloads.SECRET_PLACEHOLDER


def _desired(repo: Repo, policy: str = "shared", **cluster: Any) -> hierarchy.Desired:
    repo.add("cluster.yaml", _cluster(**cluster))
    repo.add("zone.yaml", ZONE + f"  dnssecPolicy: {policy}\n")
    repo.add("plain.yaml", ZONE.replace("name: secure", "name: plain").replace("example.net", "example.com"))
    return hierarchy.build(load_dir(repo.root))


def _problems(desired: hierarchy.Desired) -> list[str]:
    return [str(p) for p in desired.problems]


def test_a_signed_zone_gets_one_key_secret_that_every_primary_deployment_mounts(repo: Repo) -> None:
    desired = _desired(repo)
    assert _problems(desired) == []
    secrets = [o for o in desired.objects if o.key.kind == "Secret" and o.key.name.endswith("-dnssec-keys")]
    assert [o.key for o in secrets] == [ObjectKey("Secret", "dns", "secure-dnssec-keys")]  # the plain zone: none
    body = secrets[0].body
    assert body["metadata"]["labels"][zonekeys.LABEL] == "true"
    assert body["stringData"] == {
        "zone": "example.net.", "algorithm": "13", "roles": "ksk zsk",
        **{f"{role}{sep}{f}": P for role in ("ksk", "zsk") for sep, f in (("-", "file"), (".", "key"),
                                                                          (".", "private"), (".", "state"))}}
    for name in ("dns-primary-0", "dns-primary-1"):
        pod = desired.object("Deployment", "dns", name).body["spec"]["template"]["spec"]
        [volume] = [v for v in pod["volumes"] if v["name"] == zonekeys.VOLUME]
        [source] = volume["projected"]["sources"]
        assert source["secret"]["name"] == "secure-dnssec-keys"
        assert {i["path"] for i in source["secret"]["items"]} == {"example.net/roles"} | {
            f"example.net/{role}{sep}{f}" for role in ("ksk", "zsk")
            for sep, f in (("-", "file"), (".", "key"), (".", "private"), (".", "state"))}
        [init] = pod["initContainers"]
        bind9 = pod["containers"][0]
        assert init["image"] == bind9["image"] and init["securityContext"] == bind9["securityContext"]
        assert {m["mountPath"] for m in init["volumeMounts"]} == {zonekeys.MOUNT, namedconf.KEY_DIRECTORY}
    secondary = desired.object("Deployment", "dns", "dns-secondary-0").body["spec"]["template"]["spec"]
    assert "initContainers" not in secondary  # a secondary takes the signed zone by transfer


def test_the_builtin_default_policy_gets_one_combined_key(repo: Repo) -> None:
    desired = _desired(repo, policy="default")
    secret = desired.object("Secret", "dns", "secure-dnssec-keys")
    assert secret is not None and secret.body["stringData"]["roles"] == "csk"


@pytest.mark.parametrize("policy", ["none", "insecure"])
def test_a_zone_that_is_not_signed_gets_no_keys(repo: Repo, policy: str) -> None:
    desired = _desired(repo, policy=policy)
    assert desired.object("Secret", "dns", "secure-dnssec-keys") is None
    assert "initContainers" not in desired.object("Deployment", "dns", "dns-primary-0").body["spec"]["template"]["spec"]


def test_key_lifetimes_on_more_than_one_primary_pod_are_refused_at_the_zones_line(repo: Repo) -> None:
    finite = "{enabled: true, policy: shared, kskLifetime: 365d, zskLifetime: 30d}"
    assert _problems(_desired(repo, signing_=finite)) == [
        "zone.yaml:10: DNSZone/dns/secure: spec.dnssecPolicy: the zone is signed by 2 primary pods with key lifetimes "
        "that are not unlimited (kskLifetime 365d, zskLifetime 30d): each pod's named would roll keys of its own, and "
        "the servers would serve different DNSKEY sets. Leave the lifetimes unset (unlimited), or serve the zone from "
        "one primary pod"]
    one = _desired(repo, signing_=finite, primaries=1).problems  # one pod rolls its keys alone: allowed, but
    assert [(p.severity.value, p.path) for p in one] == [("warning", "spec.dnssecPolicy")]  # a replaced pod
    assert "stay in the pod's emptyDir on dns/dns-primary-0" in one[0].message  # forgets the rolled keys
    assert "Give the instance storage (persistentVolumeClaim)" in one[0].message


def test_a_primary_in_another_namespace_is_refused(repo: Repo) -> None:
    repo.add("provider.yaml", HEAD + """kind: ClusterBind9Provider
metadata: {name: fleet}
spec:
  namespaces: [dns, edge]
  primary: {replicas: 1}
  global: {dnssec: {signing: {enabled: true, policy: shared}}}
""")
    repo.add("zone.yaml", (ZONE + "  dnssecPolicy: shared\n").replace("  clusterRef: dns\n", "  clusterProviderRef: fleet\n"))
    found = _problems(hierarchy.build(load_dir(repo.root)))
    assert any("the zone is signed on primary instance(s) edge/fleet-primary-0 in another namespace than the zone's "
               "(dns)" in p for p in found), found


def test_one_policy_name_meaning_different_keys_is_refused(repo: Repo) -> None:
    repo.add("cluster.yaml", _cluster(primaries=1) + "---\n" + HEAD + """kind: Bind9Instance
metadata: {name: odd, namespace: dns}
spec:
  clusterRef: dns
  role: primary
  config: {dnssec: {signing: {enabled: true, policy: shared, algorithm: RSASHA256}}}
""")
    repo.add("zone.yaml", ZONE + "  dnssecPolicy: shared\n")
    found = _problems(hierarchy.build(load_dir(repo.root)))
    assert any("the DNSSEC policy 'shared' means different keys on the zone's primaries" in p for p in found), found


def _want(roles: str = "ksk zsk", algorithm: str = "13") -> dict[str, str]:
    return {"zone": "example.net.", "algorithm": algorithm, "roles": roles,
            **{f"{r}{sep}{f}": P for r in roles.split() for sep, f in (("-", "file"), (".", "key"), (".", "private"),
                                                                       (".", "state"))}}


def _live(filled: dict[str, str]) -> dict[str, Any]:
    return {"data": {k: base64.b64encode(v.encode()).decode() for k, v in filled.items()}}


def test_keys_are_made_once_and_then_kept() -> None:
    now = datetime.datetime(2026, 12, 7, 18, 45, 7, tzinfo=datetime.UTC)
    made = making.fill(_want(), None, now=now)
    ksk, zsk = made["ksk-file"], made["zsk-file"]
    assert ksk.startswith("Kexample.net.+013+") and zsk.startswith("Kexample.net.+013+") and ksk != zsk
    assert made["ksk.key"].splitlines()[-1].startswith("example.net. IN DNSKEY 257 3 13 ")
    assert made["zsk.key"].splitlines()[-1].startswith("example.net. IN DNSKEY 256 3 13 ")
    assert made["ksk.private"].startswith("Private-key-format: v1.3\nAlgorithm: 13 (ECDSAP256SHA256)\nPrivateKey: ")
    assert "Created: 20261207184507\n" in made["ksk.private"] and "KSK: yes\nZSK: no\n" in made["ksk.state"]
    assert making.fill(_want(), _live(made)) == made  # kept, run after run
    assert making.fill(_want(), _live({k: v for k, v in made.items() if k != "zsk.private"}))["ksk-file"] != ksk
    rsa = making.fill(_want(algorithm="8"), _live(made))  # the algorithm changed: a new set
    assert rsa["ksk-file"].startswith("Kexample.net.+008+") and "Modulus: " in rsa["ksk.private"]
    csk = making.fill(_want(roles="csk"), None)
    assert "KSK: yes\nZSK: yes\n" in csk["csk.state"] and set(csk) == set(_want(roles="csk"))


def test_the_ds_shown_is_the_one_every_server_serves() -> None:
    repo_zone = hierarchy.build(load_dir(_write(ZONE + "  dnssecPolicy: default\n"))).zones[0]
    other = "257 3 13 " + KSK.split(" ", 3)[3][::-1]  # a second KSK, as a pod with keys of its own would serve
    assert dnssecstatus.status(repo_zone, [_served(KSK, ZSK), _served(KSK, ZSK)])["dsRecords"] == [DS]
    split = dnssecstatus.status(repo_zone, [_served(KSK, ZSK), _served(other, ZSK)])
    assert split is not None and split["dsRecords"] == []
    assert dnssecstatus.differs(repo_zone, [("a", _served(KSK, ZSK)), ("b", _served(KSK, ZSK))]) == ""
    assert "its servers serve different key-signing keys (a: 55648, b: " in dnssecstatus.differs(
        repo_zone, [("a", _served(KSK, ZSK)), ("b", _served(other, ZSK))])


def _write(zone: str) -> pathlib.Path:
    import tempfile

    root = pathlib.Path(tempfile.mkdtemp())
    (root / "cluster.yaml").write_text(_cluster(primaries=1))
    (root / "zone.yaml").write_text(zone)
    return root


AGENT = "dns-system"
SECRET = ObjectKey("Secret", "dns", "secure-dnssec-keys")


def _applied(desired: hierarchy.Desired) -> dict[ObjectKey, dict[str, Any]]:
    """The cluster as the agent leaves it after applying `desired`, the zone's keys filled."""
    live = {o.key: kubechange.manifest(o, AGENT) for o in desired.objects}
    live[SECRET]["data"] = _live(making.fill(live[SECRET].pop("stringData"), None))["data"]
    return live


def _plan(desired: hierarchy.Desired, live: dict[ObjectKey, dict[str, Any]]) -> changes.Plan:
    return build.build(desired, Observed(kube=KubeObserved(live, set(live), {"dns", AGENT})), agent=AGENT)


@pytest.mark.parametrize("change", ["no primaries", "zone leaves Git", "policy removed"])
def test_the_key_secret_is_never_pruned_and_the_same_keys_come_back(repo: Repo, change: str) -> None:
    live = _applied(_desired(repo))
    keys = dict(live[SECRET]["data"])
    if change == "no primaries":  # the zone's only primaries scaled to 0 (as its instance leaving Git)
        repo.add("cluster.yaml", _cluster(primaries=0, secondaries=0))
    elif change == "zone leaves Git":
        (repo.root / "zone.yaml").unlink()
    else:
        repo.add("zone.yaml", ZONE)
    desired = hierarchy.build(load_dir(repo.root))
    assert not [p for p in desired.problems if p.severity.value == "error"], _problems(desired)
    assert desired.object("Secret", "dns", "secure-dnssec-keys") is None  # no primaries: no algorithm to ask for
    plan = _plan(desired, live)
    deletes = [c.key for c in plan.kube or [] if c.action == "delete"]
    assert SECRET not in deletes, deletes
    if change != "policy removed":  # the rest of what left Git goes; the keys stay
        assert deletes, plan.kube
        # the prune gate's base: what the agent may delete, which a key Secret never is (nor counted)
        assert plan.kube_managed == len(live) - 1
    left = {k: v for k, v in live.items() if k not in deletes}
    back = _desired(repo)  # the primaries, the zone, its policy back in Git: the live keys kept, no change
    assert [c for c in _plan(back, left).kube or [] if c.key == SECRET] == []
    want = back.object("Secret", "dns", "secure-dnssec-keys")
    assert want is not None and making.fill(want.body["stringData"], left[SECRET]) == {
        k: base64.b64decode(v).decode() for k, v in keys.items()}


def test_only_the_agents_own_key_secrets_are_kept() -> None:
    ours = {"metadata": {"labels": {**names.MANAGED_BY, names.AGENT_LABEL: AGENT, zonekeys.LABEL: "true"}}}
    rndc = {"metadata": {"labels": {**names.MANAGED_BY, names.AGENT_LABEL: AGENT}}}
    assert not kubediff.prunable(SECRET, ours, AGENT)
    assert kubediff.prunable(ObjectKey("Secret", "dns", "dns-primary-0-rndc-key"), rndc, AGENT)
    assert not kubediff.zone_keys(ObjectKey("ConfigMap", "dns", "x"), ours)


def _copy(secret: dict[str, str], keys: pathlib.Path, mount: pathlib.Path) -> str:
    """The init container's command with the Secret as the kubelet projects it: what it prints."""
    zone = mount / secret["zone"].rstrip(".")
    zone.mkdir(parents=True, exist_ok=True)
    for name, text in secret.items():
        (zone / name).write_text(text)
    keys.mkdir(exist_ok=True)
    script = zonekeys.COPY.replace(zonekeys.MOUNT, str(mount)).replace(namedconf.KEY_DIRECTORY, str(keys))
    return subprocess.run(["sh", "-c", script], check=True, capture_output=True, text=True).stdout


def _files(keys: pathlib.Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(keys.iterdir())}


def _bind_names(secret: dict[str, str]) -> dict[str, str]:
    return {f"{secret[f'{r}-file']}.{ext}": secret[f"{r}.{ext}"] for r in secret["roles"].split()
            for ext in ("key", "private", "state")}


def test_the_init_container_copies_the_zones_keys_and_never_replaces_what_named_keeps(tmp_path: pathlib.Path) -> None:
    secret = making.fill(_want(), None)
    keys, mount = tmp_path / "keys", tmp_path / "mount"
    _copy(secret, keys, mount)  # an empty key directory (a new pod, a new claim): the Secret's keys
    assert _files(keys) == _bind_names(secret)
    # named rewrote a state file, and a copy was cut short (a file missing): the rest is finished, named's kept
    ksk = keys / f"{secret['ksk-file']}.state"
    ksk.write_text(ksk.read_text() + "DSPublish: 20261207184507\n")
    (keys / f"{secret['zsk-file']}.key").unlink()
    _copy(secret, keys, mount)
    assert _files(keys) == {**_bind_names(secret), ksk.name: ksk.read_text()} and "DSPublish" in ksk.read_text()
    # a rollover on the claim: named's successor keys there, and the Secret's keys purged since - none come back
    successor = making.fill(_want(), None)
    for name in list(_files(keys)):
        (keys / name).unlink()
    for name, text in _bind_names(successor).items():
        (keys / name).write_text(text)
    said = _copy(secret, keys, mount)
    assert _files(keys) == _bind_names(successor), "the init container brought back keys named had retired"
    assert "the key directory has keys of its own" in said and successor["ksk-file"] in said
    # keys of another algorithm (the policy's algorithm changed): the Secret's new keys are copied beside them
    rsa = making.fill(_want(algorithm="8"), None)
    _copy(rsa, keys, mount)
    assert _files(keys) == {**_bind_names(successor), **_bind_names(rsa)}
