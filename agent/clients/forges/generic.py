"""A generic sender (a CI job, a script): deliveries signed `X-Signature-256: sha256=<hex>`, with no
event header - every delivery asks for a run (of its "ref", when its JSON body names one). It takes
no commit statuses."""

from __future__ import annotations

import hmac

from agent.clients.forges.base import Forge, ForgeName, hmac_sha256


class Generic(Forge):
    name = ForgeName.GENERIC
    signature_header = "X-Signature-256"

    def signed(self, secret: bytes, body: bytes, value: str) -> bool:
        return hmac.compare_digest(value.strip().encode(), b"sha256=" + hmac_sha256(secret, body))
