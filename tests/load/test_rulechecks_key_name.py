"""The TSIG key *name* is shown (plans, the zone API's updateKeyName, the commit's note, logs), so it
must only ever be a key name: `validate` refuses an rndcSecretRef whose keyNameKey names a key that
holds a secret (secretKey, or one the agent keeps secrets under) or the algorithm, at its file:line;
and the observe step takes a key name from a Secret only when it is a DNS name that is no copy of
another value of that Secret - otherwise the instance is unreachable, and the error names the
Secret and its key, never a value."""

from __future__ import annotations

import base64
import dataclasses
import logging
import pathlib
import shutil
from typing import Any

import pytest

from agent.clients import endpoints as endpoint_map
from agent.desired import hierarchy, workloads
from agent.load import parse, rulechecks
from agent.model import names
from agent.model.observed import DnsObserved, Observed
from agent.model.problems import Problem, Severity
from agent.observe import dnsobserve, instancereach
from agent.plan import build, render
from tests.conftest import SAMPLE, load_dir
from tests.support.documents import MARK, _marked_line, cluster, instance

SECRET = "c2VjcmV0LW9mLXRoZS1zZWNvbmRhcnkh"  # a TSIG secret (base64) that is also a valid DNS label


def _errors(text: str) -> list[Problem]:
    manifest = parse.load_text(text, "crs.yaml")
    found = list(manifest.problems)
    if manifest.ok:
        found += hierarchy.build(manifest).problems
    return [p for p in found if p.severity is Severity.ERROR]


REFUSED = [
    (instance(f"rndcSecretRef:\n  name: bindy-rndc\n  keyNameKey: secret  {MARK}"),
     "spec.rndcSecretRef.keyNameKey", "'secret' names the Secret key holding the TSIG secret itself"),
    (instance(f"rndcSecretRef:\n  name: bindy-rndc\n  secretKey: tsig\n  keyNameKey: tsig  {MARK}"),
     "spec.rndcSecretRef.keyNameKey", "'tsig' names the Secret key holding the TSIG secret itself"),
    (instance(f"rndcSecretRef:\n  name: bindy-rndc\n  secretKey: tsig\n  keyNameKey: secret  {MARK}"),
     "spec.rndcSecretRef.keyNameKey", "holding a TSIG secret (the agent's generated Secrets keep one under 'secret')"),
    (instance(f"rndcKey:\n  secretRef:\n    name: bindy-rndc\n    keyNameKey: previous-secret  {MARK}"),
     "spec.rndcKey.secretRef.keyNameKey", "holding a TSIG secret"),
    (instance(f"rndcSecretRef:\n  name: bindy-rndc\n  keyNameKey: rndc.key  {MARK}"),
     "spec.rndcSecretRef.keyNameKey", "holding a TSIG secret"),
    (instance(f"rndcSecretRef:\n  name: bindy-rndc\n  keyNameKey: algorithm  {MARK}"),
     "spec.rndcSecretRef.keyNameKey", "holding the key's algorithm"),
    (instance(f"rndcSecretRef:\n  name: bindy-rndc\n  secretKey: key-name  {MARK}"),
     "spec.rndcSecretRef.secretKey", "secretKey 'key-name' is also where the TSIG key name is read from"),
    (cluster(f"primary:\n  rndcSecretRef: {{name: dns-secondary-0-rndc-key, keyNameKey: secret}}  {MARK}"),
     "spec.primary.rndcSecretRef.keyNameKey", "the TSIG secret itself"),
    (cluster(f"secondary:\n  rndcKey:\n    secretRef: {{name: x, keyNameKey: previous-secret}}  {MARK}"),
     "spec.secondary.rndcKey.secretRef.keyNameKey", "holding a TSIG secret"),
    (cluster(f"global:\n  rndcSecretRef:\n    name: x\n    keyNameKey: secret  {MARK}"),
     "spec.global.rndcSecretRef.keyNameKey", "the TSIG secret itself"),
    (cluster(f"rndcSecretRefs:\n  - name: x\n    keyNameKey: secret  {MARK}"),
     "spec.rndcSecretRefs[0].keyNameKey", "the TSIG secret itself"),
    (instance(f"config:\n  rndcSecretRef:\n    name: x\n    keyNameKey: secret  {MARK}"),
     "spec.config.rndcSecretRef.keyNameKey", "the TSIG secret itself"),
]


@pytest.mark.parametrize(("text", "path", "message"), REFUSED, ids=[r[1] + ":" + str(i) for i, r in enumerate(REFUSED)])
def test_validate_refuses_a_key_name_key_that_names_a_secret_at_its_line(text: str, path: str, message: str) -> None:
    found = _errors(text)
    assert [(p.origin.line if p.origin else None, p.path) for p in found] == [(_marked_line(text), path)], found
    assert message in found[0].message, found[0].message
    assert "keyNameKey" in found[0].message and "(bindy-agent rule rndc-key-name-key)" in found[0].message


@pytest.mark.parametrize("spec", [
    "rndcSecretRef: {name: bindy-rndc}",
    "rndcSecretRef: {name: bindy-rndc, keyNameKey: tsig-name, secretKey: tsig-secret}",
    "rndcSecretRef: {name: bindy-rndc, keyNameKey: name}",
    "rndcSecretRef: {name: bindy-rndc, secretKey: rndc-secret}",
])
def test_validate_accepts_a_key_name_key_that_names_no_secret(spec: str) -> None:
    assert _errors(instance(spec)) == []


def test_the_refused_keys_are_every_key_of_the_generated_secret_but_the_key_name() -> None:
    """keyNameKey may not point at anything the agent's own RNDC Secret holds besides the name,
    including the key a rotation keeps the previous secret under."""
    generated = workloads.rndc_secret("s", "ns", {}, "k", "hmac-sha256")["stringData"]
    assert set(rulechecks.NOT_KEY_NAME_KEYS) == (set(generated) | {names.PREVIOUS_SECRET_KEY}) - {rulechecks.KEY_NAME_KEY}
    assert (rulechecks.KEY_NAME_KEY, rulechecks.SECRET_KEY) == ("key-name", "secret")  # Bindy's defaults


# -- observe: the key name read from the Secret ---------------------------------------------------------

def _b64(value: str | bytes) -> str:
    return base64.b64encode(value.encode() if isinstance(value, str) else value).decode()


class _Cluster:
    """Every RNDC Secret holds what `data` says (values as they are, base64-encoded here)."""

    def __init__(self, data: dict[str, str | bytes]) -> None:
        self.data = {k: _b64(v) for k, v in data.items()}

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        return {"data": dict(self.data)} if kind == "Secret" else None


def _desired(tmp_path: pathlib.Path, ref: str = "", **bypass: str) -> hierarchy.Desired:
    """The sample revision, its primary with rndcSecretRef `ref`; `bypass`: fields of that reference
    set after validation (as if a revision validate refuses were planned anyway)."""
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
    if ref:
        path = root / "infrastructure" / "cluster.yaml"
        path.write_text(path.read_text().replace("  primary:\n    replicas: 1\n",
                                                 f"  primary:\n    replicas: 1\n    rndcSecretRef: {ref}\n"))
    manifest = load_dir(root)
    assert manifest.ok, [str(p) for p in manifest.problems]
    desired = hierarchy.build(manifest)
    if bypass:
        (key,) = [k for k in desired.instances if k.name == "dns-primary-0"]
        spec = desired.instances[key].spec
        assert spec.rndc_secret_ref is not None
        spec = spec.model_copy(update={"rndc_secret_ref": spec.rndc_secret_ref.model_copy(update=bypass)})
        desired.instances[key] = dataclasses.replace(desired.instances[key], spec=spec)
    return desired


def _observe(tmp_path: pathlib.Path, data: dict[str, str | bytes], ref: str = "",
             **bypass: str) -> tuple[hierarchy.Desired, dict[str, endpoint_map.Endpoint]]:
    desired = _desired(tmp_path, ref, **bypass)
    eps = instancereach.from_cluster(_Cluster(data), desired, token_file=tmp_path / "none",  # type: ignore[arg-type]
                                     agent_addresses=[])
    return desired, eps


def _plan_json(desired: hierarchy.Desired, eps: dict[str, endpoint_map.Endpoint]) -> str:
    dns = DnsObserved({}, {z.name: {} for z in desired.zones}, set(eps), servers=dnsobserve.reach(eps),
                      pods=endpoint_map.servers_of(eps))
    return render.render_json(build.build(desired, Observed(None, dns), revision="r", agent="bindy-agent"))


PRIMARY, SECONDARY = "dns-system/dns-primary-0", "dns-system/dns-secondary-0"


def test_a_key_name_from_the_secret_is_used_and_shown_as_the_update_key(tmp_path: pathlib.Path) -> None:
    desired, eps = _observe(tmp_path, {"key-name": "tsig.example.", "secret": SECRET, "algorithm": "hmac-sha256"})
    assert {PRIMARY, SECONDARY} <= set(eps)
    assert eps[PRIMARY].tsig is not None and eps[PRIMARY].tsig.name == "tsig.example."
    shown = _plan_json(desired, eps)
    assert '"updateKeyName": "tsig.example."' in shown
    assert SECRET not in shown


@pytest.mark.parametrize(("key_name", "why"), [
    ("abc+/def==", "does not hold a TSIG key name"),  # a base64 secret
    ("a" * 64, "does not hold a TSIG key name"),  # a label past 63 octets
    (".".join(["a" * 63] * 4), "does not hold a TSIG key name"),  # 257 octets in wire form
    ("-tsig", "does not hold a TSIG key name"),
    ("tsig key", "does not hold a TSIG key name"),
    (b"\xff\xfe", "does not hold a TSIG key name"),  # not text
    (SECRET, "holds the same value as its key(s) 'secret'"),  # the secret copied under key-name
])
def test_a_secret_whose_key_name_is_no_key_name_makes_the_instance_unreachable_without_showing_it(
        tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture, key_name: str | bytes, why: str) -> None:
    caplog.set_level(logging.INFO)
    desired, eps = _observe(tmp_path, {"key-name": key_name, "secret": SECRET, "algorithm": "hmac-sha256"})
    assert PRIMARY not in eps and SECONDARY not in eps  # both read the same (fake) Secret
    (primary,) = [r.getMessage() for r in caplog.records if PRIMARY in r.getMessage()]
    assert f"{PRIMARY} is unreachable: RNDC Secret dns-system/dns-primary-0-rndc-key: its key 'key-name'" in primary
    assert why in primary
    shown = _plan_json(desired, eps) + caplog.text
    assert SECRET not in shown
    if isinstance(key_name, str):
        assert key_name not in shown
    assert f"no endpoint for instance {PRIMARY}" in shown


def test_a_key_name_key_at_a_secret_is_refused_when_observing_too(
        tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture) -> None:
    """The adversary's repository (refused by validate) planned anyway: the secret never becomes the name."""
    desired, eps = _observe(tmp_path, {"key-name": "dns-secondary-0-rndc-key", "secret": SECRET,
                                       "algorithm": "hmac-sha256"},
                            ref="{name: dns-secondary-0-rndc-key}", key_name_key="secret")
    assert PRIMARY not in eps and SECONDARY in eps
    assert "its key 'secret', read as the TSIG key name (rndcSecretRef.keyNameKey), holds the TSIG secret" \
        in caplog.text
    shown = _plan_json(desired, eps) + caplog.text
    assert SECRET not in shown


def test_a_custom_key_name_key_holding_a_name_is_used(tmp_path: pathlib.Path) -> None:
    desired, eps = _observe(tmp_path, {"name": "shared-tsig", "tsig": SECRET, "algorithm": "hmac-sha512"},
                            ref="{name: bindy-shared-rndc, keyNameKey: name, secretKey: tsig}")
    assert eps[PRIMARY].tsig is not None
    assert (eps[PRIMARY].tsig.name, eps[PRIMARY].tsig.algorithm) == ("shared-tsig", "hmac-sha512")
    assert eps[PRIMARY].tsig.secret == SECRET
    assert SECRET not in _plan_json(desired, eps)


@pytest.mark.parametrize(("data", "key", "what"), [
    ({"key-name": "k", "secret": "not base64!!", "algorithm": "hmac-sha256"}, "secret", "a TSIG secret (base64)"),
    ({"key-name": "k", "secret": b"\xff\xfe", "algorithm": "hmac-sha256"}, "secret", "a TSIG secret (base64)"),
    ({"key-name": "k", "secret": SECRET, "algorithm": "hmac-md5"}, "algorithm", "an algorithm (hmac-sha1, "),
    ({"key-name": "k", "secret": SECRET, "algorithm": "hmac-sha256", "previous-secret": "%%%"}, "previous-secret",
     "a TSIG secret (base64)"),
])
def test_a_secret_that_cannot_sign_makes_the_instance_unreachable_with_the_key_named(
        tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture, data: dict[str, str | bytes], key: str,
        what: str) -> None:
    """Before, such a Secret ended the run in a traceback (UnicodeDecodeError, binascii.Error) or
    failed every signed exchange later."""
    _, eps = _observe(tmp_path, data)
    assert PRIMARY not in eps
    assert f"dns-primary-0-rndc-key: its key {key!r} does not hold {what}" in caplog.text
    assert "not base64!!" not in caplog.text and "%%%" not in caplog.text


def test_a_name_the_secret_leaves_out_is_the_generated_one(tmp_path: pathlib.Path) -> None:
    _, eps = _observe(tmp_path, {"secret": SECRET, "algorithm": "hmac-sha256"})
    assert eps[PRIMARY].tsig is not None and eps[PRIMARY].tsig.name == "dns-primary-0-rndc-key"


@pytest.mark.parametrize(("name", "ok"), [
    ("k", True), ("dns-primary-0-rndc-key", True), ("_tsig.example.com.", True), ("a" * 63, True),
    (".".join(["a" * 63] * 3 + ["a" * 61]), True),  # 255 octets in wire form
    (".".join(["a" * 63] * 3 + ["a" * 62]), False), ("a" * 64, False), ("", False), (".", False),
    ("a..b", False), ("a-", False), ("a/b", False), ("a=", False), ('k"; };', False),
])
def test_what_passes_for_a_key_name(name: str, ok: bool) -> None:
    assert instancereach.is_key_name(name) is ok
