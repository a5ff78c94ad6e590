"""A signed zone's DNSSEC keys, made once and kept in its Secret (agent/desired/zonekeys.py says
why).

The Secret's placeholders are filled when it is first created: a key-signing and a zone-signing key
(or one combined key for BIND's built-in `default` policy) of the zone's algorithm, as BIND's own
files - `K<zone>+<alg>+<tag>.key` (the DNSKEY) and `.private` (format v1.3) - which named adopts in
its key directory as `dnssec-keygen` would have made them. Once there, the keys are kept: a later
run writes the live values back unchanged, so every pod, today's and every replacement, signs with
them. New keys are made only when the Secret lacks one of them, or the zone's algorithm or key roles
changed (then the DS changes too, as with any algorithm change). The agent never deletes the Secret
(plan/kubediff.py `prunable`). The key material never reaches a plan, a log or a report.
"""

from __future__ import annotations

import base64
import datetime
import warnings
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa

with warnings.catch_warnings():
    # dnspython loads its DSA code from cryptography, which says DSA is deprecated
    warnings.filterwarnings("ignore", message="DSA is deprecated")
    import dns.dnssec
import dns.dnssectypes
import dns.name

from agent.desired import workloads

FLAGS = {"ksk": 257, "csk": 257, "zsk": 256}  # ZONE, plus SEP for a key-signing key
RSA_BITS = 2048
CURVES = {13: ec.SECP256R1, 14: ec.SECP384R1}
TITLE = {"ksk": "key-signing", "csk": "key-signing", "zsk": "zone-signing"}


def fill(want: dict[str, str], live: dict[str, Any] | None, *,
         now: datetime.datetime | None = None) -> dict[str, str]:
    """The Secret's stringData: the live keys when it holds a whole set for this zone, algorithm and
    roles; else a new set."""
    data = {k: _text(v) for k, v in ((live or {}).get("data") or {}).items()}
    literal = {k: v for k, v in want.items() if v != workloads.SECRET_PLACEHOLDER}
    kept = all(k in data for k in want) and all(data[k] == v for k, v in literal.items())
    if kept:
        return {k: data[k] for k in want}
    made = dict(literal)
    for role in want["roles"].split():
        made_at = now or datetime.datetime.now(datetime.UTC)
        made.update(key_files(want["zone"], int(want["algorithm"]), role, made_at))
    return made


def _text(value: Any) -> str:
    try:
        return base64.b64decode(str(value)).decode()
    except (ValueError, UnicodeDecodeError):
        return ""


def key_files(zone: str, algorithm: int, role: str, now: datetime.datetime) -> dict[str, str]:
    """One new key as `dnssec-keygen -k <policy>` writes it: `<role>-file` (the base name),
    `<role>.key`, `<role>.private` and `<role>.state` (which says its role: a combined key needs
    it)."""
    private, fields, bits = _private(algorithm)
    dnskey = dns.dnssec.make_dnskey(private.public_key(), algorithm, flags=FLAGS[role])
    tag = dns.dnssec.key_id(dnskey)
    name = dns.name.from_text(zone).to_text()
    stamp = now.strftime("%Y%m%d%H%M%S")
    when = f"{stamp} ({now.strftime('%a %b %d %H:%M:%S %Y')})"
    times = [("Created", stamp), ("Publish", stamp), ("Activate", stamp)]
    mnemonic = dns.dnssectypes.Algorithm(algorithm).name
    key = (f"; This is a {TITLE[role]} key, keyid {tag}, for {name}\n"
           + "".join(f"; {label}: {when}\n" for label, _ in times)
           + f"{name} IN DNSKEY {dnskey.to_text()}\n")
    secret = (f"Private-key-format: v1.3\nAlgorithm: {algorithm} ({mnemonic})\n"
              + "".join(f"{label}: {value}\n" for label, value in (*fields, *times)))
    state = (f"; This is the state of key {tag}, for {name}\nAlgorithm: {algorithm}\n"
             f"Length: {bits}\nLifetime: 0\n"
             f"KSK: {'yes' if role != 'zsk' else 'no'}\nZSK: {'yes' if role != 'ksk' else 'no'}\n"
             f"Generated: {when}\nPublished: {when}\nActive: {when}\n")
    return {f"{role}-file": f"K{name}+{algorithm:03d}+{tag:05d}", f"{role}.key": key,
            f"{role}.private": secret, f"{role}.state": state}


def _b64(number: int, size: int | None = None) -> str:
    raw = number.to_bytes(size or (number.bit_length() + 7) // 8, "big")
    return base64.b64encode(raw).decode()


PrivateKey = (rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey
              | ed448.Ed448PrivateKey)


def _private(algorithm: int) -> tuple[PrivateKey, list[tuple[str, str]], int]:
    """A new private key of the DNSSEC algorithm, the fields of BIND's private key file, its size in
    bits."""
    from cryptography.hazmat.primitives import serialization

    raw = serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    if algorithm in CURVES:
        ecdsa = ec.generate_private_key(CURVES[algorithm]())
        size = ecdsa.curve.key_size // 8
        value = _b64(ecdsa.private_numbers().private_value, size)
        return ecdsa, [("PrivateKey", value)], ecdsa.curve.key_size
    edwards: ed25519.Ed25519PrivateKey | ed448.Ed448PrivateKey
    if algorithm == 15:
        edwards = ed25519.Ed25519PrivateKey.generate()
        value = base64.b64encode(edwards.private_bytes(*raw)).decode()
        return edwards, [("PrivateKey", value)], 256
    if algorithm == 16:
        edwards = ed448.Ed448PrivateKey.generate()
        value = base64.b64encode(edwards.private_bytes(*raw)).decode()
        return edwards, [("PrivateKey", value)], 456
    key = rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)
    n = key.private_numbers()
    fields = [("Modulus", _b64(n.public_numbers.n)), ("PublicExponent", _b64(n.public_numbers.e)),
              ("PrivateExponent", _b64(n.d)), ("Prime1", _b64(n.p)), ("Prime2", _b64(n.q)),
              ("Exponent1", _b64(n.dmp1)), ("Exponent2", _b64(n.dmq1)),
              ("Coefficient", _b64(n.iqmp))]
    return key, fields, RSA_BITS
