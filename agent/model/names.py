"""The names the agent gives to things, each defined once: labels, annotations, defaults."""

from __future__ import annotations

import pathlib

# Ownership: every object the agent writes carries both labels; nothing without them is touched.
MANAGED_BY_KEY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "bindy-agent"
MANAGED_BY = {MANAGED_BY_KEY: MANAGED_BY_VALUE}
AGENT_LABEL = "bindy.firestoned.io/agent"  # which agent instance (its namespace) owns the object
HASH_ANNOTATION = "bindy.firestoned.io/applied-hash"
# the RNDC Secret's key holding the key the not yet rolled pods still use
PREVIOUS_SECRET_KEY = "previous-secret"
FIELD_MANAGER = "bindy-agent"


def selector(agent: str) -> str:
    """The label selector of the objects one agent (its namespace) owns."""
    return f"{MANAGED_BY_KEY}={MANAGED_BY_VALUE},{AGENT_LABEL}={agent}"


# The hierarchy: which CR generated an object.
PARENT_KIND_LABEL = "bindy.firestoned.io/managed-by"
PROVIDER_LABEL = "bindy.firestoned.io/cluster-provider"
CLUSTER_LABEL = "bindy.firestoned.io/cluster"
ROLE_LABEL = "bindy.firestoned.io/role"

# Per-zone overrides of the safety gate (DNSZone annotations).
FORCE_ANNOTATION = "bindy.firestoned.io/allow-unsafe-plan"
THRESHOLD_ANNOTATION = "bindy.firestoned.io/delete-threshold-percent"
# share of a zone's records one plan may delete unless forced (gate/safety.py)
DEFAULT_DELETE_THRESHOLD = 0.30

# Defaults.
# where a ClusterBind9Provider puts its cluster by default
DEFAULT_PROVIDER_NAMESPACE = "dns-system"
# for namespaced objects in Git that name none, when no allowed namespace says otherwise (the
# agent's settings put them in the first allowed namespace: policy.PolicySettings.default_namespace)
DEFAULT_NAMESPACE = DEFAULT_PROVIDER_NAMESPACE
DEFAULT_AGENT_NAMESPACE = "bindy-agent"  # where the agent keeps its inventory, state and Lease

# Objects the agent keeps about itself in its namespace.
INVENTORY_NAME = "bindy-agent-inventory"
# "true" on the state ConfigMap: runs read and write nothing
SUSPEND_ANNOTATION = "bindy.firestoned.io/suspend"
STATE_NAME = "bindy-agent-state"
AGENT_APP_LABELS = {"app.kubernetes.io/name": "bindy-agent"}
CACHE_DIR = pathlib.Path.home() / ".cache" / "bindy-agent"  # clones, local state, locks
GIT_CACHE = CACHE_DIR / "git"  # where `sync --repo`, `report` and `run` keep their clone

# Defaults of a run, shared by the flags of `sync`, the settings of `run` and planner.Options.
DEFAULT_DEADLINE = 300  # seconds one run may take
DEFAULT_LOCK_WAIT = 30  # seconds a run waits for another run of the same source to finish
DEFAULT_RESYNC_AFTER = 600  # seconds after which an unchanged revision is reconciled again
LEASE_NAME = "bindy-agent"  # the Lease of leader election, in the agent's namespace
DEFAULT_LEASE_DURATION = 15  # seconds before a silent leader is replaced
# "true" on the Lease holder's pod: the webhook Service selects it
LEADER_LABEL = "bindy.firestoned.io/leader"
# The readiness gate of every generated BIND9 pod: the agent sets this pod condition True once the
# pod serves every zone placed on its instance, so that a pod is Ready (in its Service, and a
# rollout's old pod kept) only with its zones (agent/podready/condition.py)
ZONES_LOADED_CONDITION = "bindy.firestoned.io/zones-loaded"

# Tenancy: the agent's settings decide where a repository may reach, never the repository.
# Bindy's own namespace; widen with settings
DEFAULT_ALLOWED_NAMESPACES = (DEFAULT_PROVIDER_NAMESPACE,)
ALLOW_REFERENCE_LABEL = "bindy.firestoned.io/allow-reference"  # on a Secret the agent did not make:
ALLOW_REFERENCE_VALUE = "true"  # CRs in the repository may reference it
