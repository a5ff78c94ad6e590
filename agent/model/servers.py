"""The ids of the servers a zone is written to: an instance ("namespace/name"), or one pod of an
instance written pod by pod ("namespace/name@pod"). Plans, observe, the writers and the endpoint map
name servers this way."""

from __future__ import annotations

from agent.model.key import ObjectKey


def instance_id(key: ObjectKey) -> str:
    return f"{key.namespace}/{key.name}"


# A server is one `named` with its zone API: an instance written through one address is its own id,
# each pod of an instance written pod by pod is "namespace/name@<pod>" (Kubernetes names have no
# "@").
SERVER_SEPARATOR = "@"


def instance_of(server: str) -> str:
    """The instance ("namespace/name") of a server id ("namespace/name@pod", or the instance
    itself)."""
    return server.partition(SERVER_SEPARATOR)[0]
