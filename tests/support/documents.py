"""Small Bindy documents that unit tests write into a repository: one DNSZone valid on its own, and a
Bind9Cluster or a Bind9Instance (with its cluster) around a spec, whose line a refusal must point at is
marked with MARK (`_marked_line` finds it)."""

from __future__ import annotations

import textwrap

ZONE = """\
apiVersion: bindy.firestoned.io/v1beta1
kind: DNSZone
metadata:
  name: example-com
  namespace: dns-system
spec:
  zoneName: example.com
  ttl: 3600
  soaRecord: {primaryNs: ns1.example.com., adminEmail: admin.example.com., serial: 1, refresh: 3600, retry: 600,
              expire: 604800, negativeTtl: 300}
"""


HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
MARK = "# <-"  # marks the line a rejection must point at


def _spec(body: str) -> str:
    return textwrap.indent(textwrap.dedent(body).strip("\n"), "  ") + "\n"


def cluster(body: str) -> str:
    return HEAD + "kind: Bind9Cluster\nmetadata: {name: dns, namespace: dns-system}\nspec:\n" + _spec(body)


def instance(body: str) -> str:
    return (cluster("version: '9.18'") + "---\n" + HEAD + "kind: Bind9Instance\n"
            "metadata: {name: edge-0, namespace: dns-system}\nspec:\n  clusterRef: dns\n  role: primary\n"
            + _spec(body))


def _marked_line(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if MARK in line)
