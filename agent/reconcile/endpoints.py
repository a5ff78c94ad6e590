"""How to reach each Bind9Instance inside a cluster: its Service, and the TSIG key in its RNDC Secret.

Outside a cluster an explicit map is used instead (agent/config.py `load_endpoints`).
"""

from __future__ import annotations

import base64
import logging
import pathlib

from agent import workloads
from agent.config import Endpoint, TsigKey
from agent.desired import Desired
from agent.reconcile.kubeapi import KubeApi

log = logging.getLogger(__name__)
SERVICE_ACCOUNT_TOKEN = pathlib.Path("/var/run/secrets/kubernetes.io/serviceaccount/token")


def _decode(data: dict[str, str], key: str) -> str:
    return base64.b64decode(data.get(key, "")).decode() if data.get(key) else ""


def from_cluster(api: KubeApi, desired: Desired, *, token_file: pathlib.Path = SERVICE_ACCOUNT_TOKEN,
                 cluster_domain: str = "cluster.local") -> dict[str, Endpoint]:
    """Every instance's endpoint: `<instance>.<namespace>.svc.<domain>` on ports 53 and 8080, the
    zone API token of the agent's ServiceAccount, and the key from the instance's RNDC Secret (the
    generated `<instance>-rndc-key`, or the Secret its rndcSecretRef names)."""
    token = token_file.read_text().strip() if token_file.exists() else ""
    out: dict[str, Endpoint] = {}
    for key in desired.instances:
        namespace, name = key.namespace or "", key.name
        deployment = desired.object("Deployment", namespace, name)
        if deployment is None:
            continue
        volumes = deployment.body["spec"]["template"]["spec"]["volumes"]
        secret_name = next(v["secret"]["secretName"] for v in volumes if v["name"] == "rndc-key")
        secret = api.get("Secret", namespace, secret_name)
        tsig = None
        if secret is None:
            log.warning("%s/%s: RNDC Secret %s not found; DNS UPDATE will be unsigned", namespace, name, secret_name)
        else:
            data = secret.get("data") or {}
            instance = desired.instances[key]
            ref = instance.spec.rndc_secret_ref
            key_field, secret_field = (ref.key_name_key, ref.secret_key) if ref else ("key-name", "secret")
            tsig = TsigKey(_decode(data, key_field) or workloads.rndc_key_name(name),
                           _decode(data, "algorithm") or (ref.algorithm if ref else "hmac-sha256"),
                           _decode(data, secret_field))
        host = f"{name}.{namespace}.svc.{cluster_domain}"
        out[f"{namespace}/{name}"] = Endpoint(f"{namespace}/{name}", host, workloads.DNS_PORT,
                                              f"http://{host}:{workloads.API_PORT}", token, tsig)
    return out
