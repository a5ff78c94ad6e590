"""How the observe step reaches an instance (agent/observe/instancereach.py): the TSIG key name is read from
the RNDC Secret's key-name field, never from a field the repository points it at, so a plan cannot show
another instance's secret as a key name."""

from __future__ import annotations

import base64
import pathlib
import shutil
from typing import Any

from agent.clients import endpoints as endpoint_map
from agent.desired import hierarchy
from agent.model.observed import DnsObserved, Observed
from agent.observe import dnsobserve, instancereach
from agent.plan import build, render
from tests.conftest import SAMPLE, load_dir

# -- secrets: a key name read from a Secret field the repository chooses --------------------------------

class _SecretApi:
    """The cluster as the observe step reads it: every RNDC Secret holds a key name and a secret."""

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        if kind != "Secret":
            return None
        return {"data": {"key-name": _b64(name), "secret": _b64(f"{VICTIM_SECRET}-{name}"), "algorithm":
                         _b64("hmac-sha256")}}


VICTIM_SECRET = "c2VjcmV0LW9mLXRoZS1zZWNvbmRhcnk"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_a_repository_cannot_publish_another_instances_rndc_secret_as_its_key_name(tmp_path: pathlib.Path) -> None:
    """`rndcSecretRef: {name: dns-secondary-0-rndc-key, keyNameKey: secret}` on the cluster's primary:
    the Secret is one the agent generates, so tenancy allows the reference, and validate says "valid
    (0 warnings)". The observe step takes the TSIG key *name* from the field the repository chose
    (observe/instancereach._tsig), i.e. the secondary's secret; it becomes Reach.update_key and the
    zone-API body's `updateKeyName` (plan/zonecalls.create_body), which the plan now shows (plan JSON of
    `sync --dry-run`, the changes of the report in the git note the repository writer can read)."""
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
    path = root / "infrastructure" / "cluster.yaml"
    path.write_text(path.read_text().replace(
        "  primary:\n    replicas: 1\n",
        "  primary:\n    replicas: 1\n    rndcSecretRef: {name: dns-secondary-0-rndc-key, keyNameKey: secret}\n"))
    desired = hierarchy.build(load_dir(root))
    eps = instancereach.from_cluster(_SecretApi(), desired, token_file=tmp_path / "none",  # type: ignore[arg-type]
                                     agent_addresses=[])
    dns = DnsObserved({}, {z.name: {} for z in desired.zones}, set(eps), servers=dnsobserve.reach(eps),
                      pods=endpoint_map.servers_of(eps))
    shown = render.render_json(build.build(desired, Observed(None, dns), revision="r", agent="bindy-agent"))
    assert VICTIM_SECRET not in shown, "another instance's RNDC secret is printed in the plan as a key name"
