"""The checks of Bindy's admission validations (pure): one function per CEL validation, from the
values a rule reads to the message a user reads; most take one string and return None when it is
fine. The table that says which kinds and fields each applies to is load/admission.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from agent.load.fieldvalues import Found, Loc

# bindy-acl-validation: every allowQuery / allowTransfer entry
MAX_ACL_ENTRIES = MAX_ACL_ENTRY_BYTES = 256
_ACL_UNSAFE = re.compile(r'[;{}"\\\n\r]')
_ACL_TOKEN = re.compile(
    r"!?\s*((any|none|localhost|localnets)"
    r"|((25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)(/(3[0-2]|[12]?[0-9]))?"
    r"|[0-9a-fA-F:]+(/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))?"
    r'|key\s+"?[A-Za-z0-9._-]+"?)')


def acl_list_size(found: Found) -> Iterator[tuple[Loc, str]]:
    if len(found) > MAX_ACL_ENTRIES:
        yield found[MAX_ACL_ENTRIES][0], (
            f"{len(found)} allowQuery/allowTransfer entries in this object; Bindy accepts at most "
            f"{MAX_ACL_ENTRIES}: merge addresses into wider prefixes")


def acl_entry_length(entry: str) -> str | None:
    if not entry:
        return "an empty ACL entry: remove it"
    size = len(entry.encode())
    if size > MAX_ACL_ENTRY_BYTES:
        return (f"{entry[:40]!r}... is {size} bytes; an ACL entry must be 1 to "
                f"{MAX_ACL_ENTRY_BYTES} bytes: "
                "shorten it")
    return None


def acl_injection(entry: str) -> str | None:
    if _ACL_UNSAFE.search(entry):
        return (f"{entry!r} contains ';', '{{', '}}', '\"', '\\' or a line break, which would "
                "break out of named.conf's ACL block: write one address-match element per entry")
    return None


def acl_token(entry: str) -> str | None:
    if not _ACL_TOKEN.fullmatch(entry):
        return (f"{entry!r} is not an ACL entry Bindy accepts: use any, none, localhost, "
                "localnets, an IPv4 or IPv6 address (optionally with /prefix) or 'key <name>', "
                "each optionally prefixed with '!'")
    return None


# bindy-zone-name-validation: zone names, and the names of records
MAX_NAME = 253
_NAME_UNSAFE = re.compile(r'[;{}"\\ \n\r\t]')
_IPV4 = re.compile(r"((25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}"
                   r"(25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.?")


def name_length(name: str) -> str | None:
    if len(name) > MAX_NAME:
        return (f"{name[:40]!r}... is {len(name)} characters; Bindy allows at most {MAX_NAME}, a "
                "final dot included: shorten it")
    return None


def name_chars(name: str) -> str | None:
    if _NAME_UNSAFE.search(name):
        return (f"{name!r} contains ';', '{{', '}}', '\"', '\\', whitespace or a control "
                "character, which would break the zone declaration or a DNS UPDATE: remove it")
    return None


def name_dots(name: str) -> str | None:
    if name.startswith((".", "-")) or ".." in name:
        return (f"{name!r} starts with '.' or '-' or contains '..': leave no empty label and start "
                "the name with a letter, digit or '_'")
    return None


def name_not_ipv4(name: str) -> str | None:
    if _IPV4.fullmatch(name):
        octets = name.rstrip(".").split(".")
        reverse = ".".join(reversed(octets[:3])) + ".in-addr.arpa"
        return (f"{name!r} is an IPv4 address, not a DNS name: name a reverse zone like "
                f"{reverse!r}; "
                "an address belongs in an ARecord")
    return None


# bindy-rndc-algorithm-strict
FORBIDDEN_ALGORITHMS = ("hmac-md5", "hmac-sha1")


def rndc_algorithm(algorithm: str) -> str | None:
    if algorithm in FORBIDDEN_ALGORITHMS:
        return (f"{algorithm} is refused by Bindy (hmac-md5 and hmac-sha1 are deprecated, RFC 8945 "
                "§10): use hmac-sha256 or stronger")
    return None


# bindy-agent's own rule on every rndcSecretRef (Bindy accepts any keys): the value at `keyNameKey`
# is read as the TSIG key *name*, which is no secret and is shown (plans, the zone API's
# updateKeyName, the commit's note, logs), so it may not be a key that holds a secret or anything
# but the name. The keys of the Secret the agent generates (desired/workloads.rndc_secret, and
# model/names.PREVIOUS_SECRET_KEY while a rotation rolls out); a test holds this list to them.
KEY_NAME_KEY, SECRET_KEY, ALGORITHM_KEY = "key-name", "secret", "algorithm"  # Bindy's defaults
SECRET_HOLDING_KEYS = (SECRET_KEY, "previous-secret", "rndc.key")
NOT_KEY_NAME_KEYS = (*SECRET_HOLDING_KEYS, ALGORITHM_KEY)


def key_name_clash(key_name_key: str, secret_key: str) -> str | None:
    """What the Secret key `key_name_key` holds instead of a key name, or None when it may hold
    one."""
    if key_name_key == secret_key:
        return "the TSIG secret itself (it is also secretKey)"
    if key_name_key in SECRET_HOLDING_KEYS:
        return f"a TSIG secret (the agent's generated Secrets keep one under {key_name_key!r})"
    if key_name_key == ALGORITHM_KEY:
        return "the key's algorithm"
    return None


def _ref_keys(ref: Any) -> tuple[str, str, bool] | None:
    """(keyNameKey, secretKey, whether keyNameKey is written) of an rndcSecretRef, model or
    mapping."""
    if isinstance(ref, dict):
        key_name, secret = ref.get("keyNameKey", KEY_NAME_KEY), ref.get("secretKey", SECRET_KEY)
        written = "keyNameKey" in ref
    else:
        key_name, secret = getattr(ref, "key_name_key", None), getattr(ref, "secret_key", None)
        written = "key_name_key" in getattr(ref, "model_fields_set", ())
    if not isinstance(key_name, str) or not isinstance(secret, str):
        return None
    return key_name, secret, written


def key_name_key(found: Found) -> Iterator[tuple[Loc, str]]:
    for loc, ref in found:
        keys = _ref_keys(ref)
        clash = key_name_clash(keys[0], keys[1]) if keys else None
        if keys is None or clash is None:
            continue
        key_name, secret, written = keys
        if written:
            yield loc + ("keyNameKey",), (
                f"keyNameKey {key_name!r} names the Secret key holding {clash}; the agent reads "
                "the TSIG key name from keyNameKey and shows it (plans, the zone API's "
                f"updateKeyName, the commit's note): name the key that holds only the key name "
                f"(Bindy's default is {KEY_NAME_KEY!r}), never "
                f"{', '.join(repr(k) for k in NOT_KEY_NAME_KEYS)} or secretKey")
        else:
            yield loc + ("secretKey",), (
                f"secretKey {secret!r} is also where the TSIG key name is read from (keyNameKey "
                f"defaults to {KEY_NAME_KEY!r}), so the secret would be shown as the key name: "
                f"keep the secret under another key (Bindy's default is {SECRET_KEY!r}), or set "
                f"keyNameKey to the key holding the name")


# bindy-pod-shape-validation: user volumes and mounts in the BIND9 pod
PREFIX = "bindy-"  # Secrets, ConfigMaps and claims users may mount
MOUNT_PREFIXES = ("/data/", "/var/log/bind/")
_NAMED_SOURCES = {"configMap": ("name", "ConfigMap"), "secret": ("secretName", "Secret"),
                  "persistentVolumeClaim": ("claimName", "claim")}
_SOURCES_HINT = ("use emptyDir, or a configMap, secret or persistentVolumeClaim whose name starts "
                 "with 'bindy-'")


def _volume(loc: Loc, volume: dict[str, Any]) -> tuple[Loc, str] | None:
    name = volume.get("name")
    sources = [k for k in volume if k != "name"]
    forbidden = [k for k in sources if k != "emptyDir" and k not in _NAMED_SOURCES]
    if forbidden:
        return loc + (forbidden[0],
                      ), (f"volume {name!r} uses {forbidden[0]}, which Bindy forbids: "
                          f"{_SOURCES_HINT}")
    if not sources:
        return loc, f"volume {name!r} names no source Bindy allows: {_SOURCES_HINT}"
    for key, (field, what) in _NAMED_SOURCES.items():
        source = volume.get(key, {})
        ref = source.get(field) if isinstance(source, dict) else None
        if key not in volume or (isinstance(ref, str) and ref.startswith(PREFIX)):
            continue
        if not isinstance(ref, str):
            return loc + (key,), f"{key} names no {field}: Bindy mounts only {what}s named bindy-*"
        return loc + (key, field), (f"{what} {ref!r} does not start with 'bindy-': Bindy mounts "
                                    f"only Secrets, ConfigMaps and claims named bindy-* (e.g. "
                                    f"'bindy-{ref}')")
    return None


def volume_sources(found: Found) -> Iterator[tuple[Loc, str]]:
    for loc, volume in found:
        problem = _volume(loc, volume) if isinstance(volume, dict) else None
        if problem:
            yield problem


def mount_prefix(path: str) -> str | None:
    if not path.startswith(MOUNT_PREFIXES):
        return (f"{path!r} is outside the paths Bindy lets users mount: mount under /data/ or "
                "/var/log/bind/ (the rest of the pod belongs to the operator)")
    return None


def traversal(path: str) -> str | None:
    if ".." in path:
        return f"{path!r} contains '..': Bindy refuses path traversal; write the path without '..'"
    return None


def keys_secret(name: str) -> str | None:
    if not name.startswith(PREFIX):
        return (f"DNSSEC key Secret {name!r} does not start with 'bindy-': Bindy mounts only "
                f"Secrets named bindy-* into the BIND9 pod (e.g. 'bindy-{name}')")
    return None


# bindy-dnssec-policy-validation (Bindy's CRD schema holds the same patterns)
_POLICY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}")
_SIGNING_TOKEN = re.compile(r"[A-Za-z0-9]{1,32}")


def policy_name(name: str) -> str | None:
    if not _POLICY_NAME.fullmatch(name):
        return (f"{name!r} is not a DNSSEC policy name Bindy accepts: start with a letter or "
                "digit, then letters, digits, '_' or '-', at most 63 characters")
    return None


def signing_token(value: str) -> str | None:
    if not _SIGNING_TOKEN.fullmatch(value):
        return (f"{value!r} must be 1 to 32 letters or digits (an algorithm such as "
                "ECDSAP256SHA256 or a duration such as 90d)")
    return None


# bindy-record-value-validation: names a record points at
_TARGET_CHARS = re.compile(r"[A-Za-z0-9._-]+")


def target_absolute(target: str) -> str | None:
    if not target.endswith("."):
        return (f"{target!r} must be fully qualified with a trailing dot (write '{target}.'); "
                "without it a DNS server appends the zone name")
    return None


def target_charset(target: str) -> str | None:
    if not _TARGET_CHARS.fullmatch(target):
        return (f"{target!r} may contain only letters, digits, '.', '-' and '_' (no whitespace, "
                "control characters, ';', '{', '}', '\"', '\\' or '$')")
    return None


def target_length(target: str) -> str | None:
    if len(target) > MAX_NAME:
        return (f"{target[:40]!r}... is {len(target)} characters; Bindy allows at most {MAX_NAME}, "
                "a final dot included: shorten it")
    return None


def target_dots(target: str) -> str | None:
    if target.startswith(".") or ".." in target:
        return f"{target!r} starts with '.' or contains '..': remove the empty label"
    return None


# bindy-image-provenance-validation: image overrides
BINDCAR_REGISTRY = "ghcr.io/firestoned/"
BIND9_SOURCES = ("internetsystemsconsortium/bind9", "docker.io/internetsystemsconsortium/bind9",
                 BINDCAR_REGISTRY)


def bindcar_registry(image: str) -> str | None:
    if image and not image.startswith(BINDCAR_REGISTRY):
        return (f"{image!r} is not from {BINDCAR_REGISTRY}: Bindy trusts only firestoned's bindcar "
                "images (e.g. ghcr.io/firestoned/bindcar:v0.7.3)")
    return None


def bind9_registry(image: str) -> str | None:
    if image and not image.startswith(BIND9_SOURCES):
        return (f"{image!r} is not internetsystemsconsortium/bind9 (Docker Hub) or a "
                f"{BINDCAR_REGISTRY} "
                "mirror, the only BIND9 images Bindy trusts")
    return None


def immutable(image: str) -> str | None:
    tagged = ":" in image[image.rfind("/") + 1:] and not image.endswith(":latest")
    if image and not ("@sha256:" in image or tagged):
        return (f"{image!r} is mutable: pin a digest (@sha256:...) or a named tag other than "
                ":latest (e.g. internetsystemsconsortium/bind9:9.18)")
    return None


# the image a version without spec.image.image makes (desired/hierarchy.py)
BIND9_REPOSITORY = BIND9_SOURCES[0]


def version_immutable(version: str) -> str | None:
    """`spec.version` is the tag of the BIND9 image when spec.image.image does not name one."""
    image = f"{BIND9_REPOSITORY}:{version}"
    if not version.strip():
        return (f"an empty version makes the BIND9 image {image!r}, which names no tag: write a "
                "version (e.g. 9.18), or leave the field out")
    if immutable(image):
        return (f"version {version!r} makes the BIND9 image {image!r}, which is mutable: write a "
                "named version other than latest (e.g. 9.18), or pin a digest (@sha256:...) in "
                "spec.image.image")
    return None


# bindy-bindcar-env-validation: sidecar variables the operator sets
RESERVED_ENV = frozenset({
    "BIND_API_TOKEN", "DISABLE_AUTH", "BIND_ALLOW_ANY_SERVICEACCOUNT",
    "BIND_ALLOWED_SERVICE_ACCOUNTS", "BIND_ALLOWED_NAMESPACES", "BIND_TOKEN_AUDIENCES",
    "BIND_ZONE_DIR", "RNDC_SECRET", "RNDC_ALGORITHM", "RNDC_KEY_NAME"})
RESERVED_ENV_PREFIXES = ("BIND_TLS_", "KUBE_")


def env_name(name: str) -> str | None:
    if name in RESERVED_ENV:
        return (f"{name} is set by the operator; Bindy refuses it in bindcarConfig.envVars (the "
                "last duplicate wins and could disable the sidecar's authentication): remove it")
    return None


def env_prefix(name: str) -> str | None:
    if name.startswith(RESERVED_ENV_PREFIXES):
        return (f"{name} is in an operator-managed family (BIND_TLS_*, KUBE_*); Bindy refuses it "
                "in bindcarConfig.envVars: remove it")
    return None


# -- rndcKey.rotateAfter, read as Bindy's operator reads it (src/bind9/duration.rs)
# -----------------
_DURATION = re.compile(r"^(\d{1,12})([hdw])$")
_UNIT_HOURS = {"h": 1, "d": 24, "w": 168}
ROTATE_AFTER_HOURS = (1, 8760)  # Bindy's MIN/MAX_ROTATION_INTERVAL_HOURS


def rotation_hours(text: str) -> int:
    """`rotateAfter` in hours: a whole number of hours, days or weeks (`720h`, `30d`, `4w`) within
    1h..8760h; ValueError says what is wrong and how to write it."""
    m = _DURATION.match(text)
    if m is None:
        raise ValueError(f"{text!r} is not a rotation interval Bindy reads: write a whole number "
                         "of hours, days or weeks, e.g. 720h, 30d or 4w")
    hours = int(m.group(1)) * _UNIT_HOURS[m.group(2)]
    low, high = ROTATE_AFTER_HOURS
    if not low <= hours <= high:
        raise ValueError(f"{text!r} is outside {low}h..{high}h, the rotation intervals Bindy "
                         f"accepts")
    return hours


def rotate_after(text: str) -> str | None:
    try:
        rotation_hours(text)
    except ValueError as exc:
        return str(exc)
    return None
