"""Where each Bind9Instance is reached inside a cluster, read from the cluster (part of observing):
its Service's name, the TSIG key in its RNDC Secret, the addresses of its ready pods (its Service's
Endpoints, and the pods there that wait for their zones), and whether its named.conf has an
allow-transfer ACL of its own."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import logging
import pathlib
import re
import typing
from collections.abc import Callable, Mapping

from agent.clients.endpoints import (
    ZONE_API_AUDIENCE,
    ZONE_API_TOKEN,
    Endpoint,
    Server,
    TsigKey,
    own_addresses,
    zone_api_token,
)
from agent.clients.kubeapi import KubeApi
from agent.desired import workloads
from agent.desired.hierarchy import Desired
from agent.errors import KubeError, ReadError
from agent.load import rulechecks
from agent.model import names, podreadiness
from agent.model.base import HmacAlgorithm
from agent.model.key import ObjectKey
from agent.observe import keyprobe

log = logging.getLogger("agent.observe.endpoints")  # the lines operators already filter on
pods_log = logging.getLogger("agent.observe.podwait")  # likewise: the lines of the pods that wait


def from_cluster(api: KubeApi, desired: Desired, *, token_file: pathlib.Path = ZONE_API_TOKEN,
                 audience: str = ZONE_API_AUDIENCE, cluster_domain: str = "cluster.local",
                 send_token_to: Callable[[ObjectKey], bool] | None = None,
                 read_in: Callable[[ObjectKey], bool] | None = None,
                 agent_addresses: list[str] | None = None) -> dict[str, Endpoint]:
    """Every instance's endpoint: `<instance>.<namespace>.svc.<domain>` on ports 53 and 8080, the
    audience-bound zone API token (see `zone_api_token`), the key from the instance's RNDC Secret
    (the generated `<instance>-rndc-key`, or the Secret its rndcSecretRef names), and the addresses
    of its ready pods from its Service's Endpoints (BIND's `primaries` and `also-notify` take
    addresses, not names).

    `send_token_to` decides which instances get the token at all (default: every instance of the
    revision); the others are reached without one. `read_in` decides whose Endpoints are read
    (default: `send_token_to`'s instances: those in the allowed namespaces). `agent_addresses`: the
    agent's own pod address(es), allowed to transfer zones (default: POD_IP, else the pod's
    hostname)."""
    token = zone_api_token(token_file, audience=audience)
    readable = read_in or send_token_to
    agent = tuple(agent_addresses) if agent_addresses is not None else own_addresses()
    out: dict[str, Endpoint] = {}
    for key in desired.instances:
        namespace, name = key.namespace or "", key.name
        deployment = desired.object("Deployment", namespace, name)
        if deployment is None:
            continue
        volumes = deployment.body["spec"]["template"]["spec"]["volumes"]
        secret_name = next(v["secret"]["secretName"] for v in volumes if v["name"] == "rndc-key")
        config_name = next((v["configMap"]["name"] for v in volumes if v["name"] == "config"),
                           f"{name}-config")
        host = f"{name}.{namespace}.svc.{cluster_domain}"
        granted = token if send_token_to is None or send_token_to(key) else ""
        ready = (ready_pods(api, namespace, name) if readable is None or readable(key)
                 else Ready((), 0, 0, known=False))
        dns_port = ready.dns_port or workloads.DNS_CONTAINER_PORT
        try:
            tsig, previous = _tsig(api, desired, key, secret_name)
        except ReadError as exc:
            # no usable key name: no endpoint ("no endpoint for instance ..." in the plan)
            log.error("%s/%s is unreachable: %s", namespace, name, exc)
            continue
        servers = pod_servers(ready.ips, dns_port, ready.api_port or workloads.API_PORT,
                              waiting=ready.waiting)
        wanted = deployment.body["spec"].get("replicas", 1)
        if not ready.known or servers:
            starting = ""
        elif wanted == 0:
            starting = f"{name} is scaled to 0 pods"
        else:
            starting = f"waiting for {name} to start"
        out[f"{namespace}/{name}"] = Endpoint(
            f"{namespace}/{name}", host, workloads.DNS_PORT, f"http://{host}:{workloads.API_PORT}",
            granted, tsig, pods=tuple(sorted({*ready.ips, *ready.waiting})), pod_port=dns_port,
            transfer_acl=None if explicit_transfer_acl(desired, namespace, config_name) else agent,
            servers=keyprobe.choose(servers, tsig, previous) if tsig is not None else servers,
            starting=starting)
    return out


@dataclasses.dataclass(frozen=True)
class Ready:
    """An instance's ready pods as its Service's Endpoints list them, with their DNS and zone API
    ports, and the pods that wait for their zones (agent/model/podreadiness.py): address -> pod
    name."""

    ips: tuple[str, ...]
    dns_port: int
    api_port: int
    waiting: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # its Endpoints could be read (or do not exist yet: no pod at all); False: unknown
    known: bool = True


def agent_addresses(api: KubeApi, namespace: str) -> list[str]:
    """The addresses of every replica of the agent (its pods in `namespace`) and of this process's
    own pod: the leader reads zones with AXFR and a standby follows them, so a zone's allow-transfer
    lists them all and a new leader can read every zone at once. Without `list pods`, this pod's own
    only."""
    try:
        pods = api.list("Pod", namespace=namespace, label_selector=",".join(
            f"{k}={v}" for k, v in names.AGENT_APP_LABELS.items()))
    except KubeError as exc:
        log.warning("could not list the agent's pods in %s (%s): zones allow transfers to this "
                    "replica only (allow `list pods` there: deploy/rbac.yaml)", namespace, exc)
        pods = []
    found = {str(p.get("status", {}).get("podIP")) for p in pods
             if (p.get("status") or {}).get("podIP")}
    return sorted(found | set(own_addresses()))


def ready_pods(api: KubeApi, namespace: str, name: str) -> Ready:
    """The ready pods' addresses of the instance's Service (its Endpoints object's addresses), their
    DNS and zone API ports, and the pods among its not-ready addresses that wait for their zones
    (agent/model/podreadiness.py: the pods are listed only when it has one); none when it cannot be
    read (said in the log: the instance is then written through its Service, and transfers wait)."""
    try:
        found = api.get("Endpoints", namespace, name)
    except KubeError as exc:
        log.warning("%s/%s: cannot read its Endpoints, so no pod address (zones and records go "
                    "through its Service, transfers wait): %s", namespace, name, exc)
        return Ready((), 0, 0, known=False)
    ips: list[str] = []
    # the pods not ready (which may wait for their zones): address -> name
    not_ready: dict[str, str] = {}
    ports: dict[str, int] = {}
    for subset in (found or {}).get("subsets") or []:
        ips += [a["ip"] for a in subset.get("addresses") or [] if a.get("ip")]
        pending = subset.get("notReadyAddresses") or []
        not_ready.update({a["ip"]: a["targetRef"]["name"] for a in pending
                          if a.get("ip") and (a.get("targetRef") or {}).get("kind") == "Pod"})
        for p in subset.get("ports") or []:
            ports.setdefault(p.get("name", ""), p.get("port", 0))
    # a pods list only when one may wait
    waiting = pods_waiting(api, namespace, name) if not_ready else {}
    waits = {ip: pod for ip, pod in waiting.items() if not_ready.get(ip) == pod and ip not in ips}
    return Ready(tuple(sorted(set(ips))), ports.get("dns-tcp", 0), ports.get("http", 0), waits)


def pod_servers(ips: tuple[str, ...], dns_port: int, api_port: int, *,
                waiting: Mapping[str, str] | None = None) -> tuple[Server, ...]:
    """Each ready pod, and each pod waiting for its zones, as a server of its own (named
    `namespace/name@<ip>`): Bindy writes zones and records to every pod of an instance, each has its
    own zone list (an emptyDir)."""
    waiting = waiting or {}
    return tuple(Server(ip, ip, dns_port,
                        f"http://[{ip}]:{api_port}" if ":" in ip else f"http://{ip}:{api_port}",
                        waiting=waiting.get(ip, "")) for ip in sorted({*ips, *waiting}))


_DEFAULT_TRANSFER = re.compile(r'allow-transfer \{ key "[^"]+"; none; \};')


def explicit_transfer_acl(desired: Desired, namespace: str, config_name: str) -> bool:
    """Whether the instance's named.conf has an allow-transfer ACL of its own: an explicit
    `allowTransfer` in its config, or a named.conf the user supplies (a ConfigMap the agent does not
    generate). Then zones carry no per-zone ACL, which would override it."""
    generated = desired.object("ConfigMap", namespace, config_name)
    text = (generated.body.get("data") or {}).get("named.conf") if generated is not None else None
    return not isinstance(text, str) or not _DEFAULT_TRANSFER.search(text)


_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
MAX_NAME_OCTETS = 255


def is_key_name(text: str) -> bool:
    """A DNS name as a TSIG key's name is written: labels of letters, digits, '-' and '_' (no '-' at
    either end), each at most 63 octets, at most 255 octets in all (wire form), a final dot
    allowed."""
    labels = text[:-1].split(".") if text.endswith(".") else text.split(".")
    return (bool(text) and all(_LABEL.fullmatch(label) for label in labels)
            and sum(len(label) + 1 for label in labels) + 1 <= MAX_NAME_OCTETS)


def _raw(data: dict[str, str], key: str) -> bytes | None:
    """The bytes of one key of a Secret's data; None when it is not base64 (the API server never
    returns that)."""
    try:
        return base64.b64decode(data.get(key) or "", validate=True)
    except (binascii.Error, ValueError):
        return None


def key_name_of(data: dict[str, str], key_field: str, secret_field: str, where: str) -> str:
    """The TSIG key name a Secret's `data` holds at `key_field` ("" when it holds none). ReadError
    when that key holds a secret (by name: `secret_field`, a key the agent keeps secrets under), or
    anything but a DNS name, or the same bytes as another key of the Secret (a copy of its secret):
    the name is shown (plans, updateKeyName, notes, logs), so no value of the Secret may pass for
    it, and the message names the Secret's key, never its value."""
    fix = ("put only the key's name under it, or point rndcSecretRef.keyNameKey at the key that "
           "holds the name")
    clash = rulechecks.key_name_clash(key_field, secret_field)
    if clash is not None and data.get(key_field):
        raise ReadError(f"RNDC Secret {where}: its key {key_field!r}, read as the TSIG key name "
                        f"(rndcSecretRef.keyNameKey), holds {clash}; set keyNameKey to the key "
                        f"that holds only the key's name",
                        retryable=False)
    text = _value(data, key_field, where,
                  "a TSIG key name (a DNS name: letters, digits, '-' and '_', at most 63 "
                  "octets a label, 255 in all)", is_key_name)
    raw = _raw(data, key_field)
    same = sorted(k for k in data if k != key_field and _raw(data, k) == raw)
    if same:
        raise ReadError(f"RNDC Secret {where}: its key {key_field!r}, read as the TSIG key name, "
                        f"holds the same value as its key(s) {', '.join(map(repr, same))}: " + fix,
                        retryable=False)
    return text


def _is_secret(text: str) -> bool:
    """A TSIG secret as BIND and dnspython read it: base64."""
    try:
        return bool(base64.decodebytes(text.encode()))
    except (binascii.Error, ValueError):
        return False


ALGORITHMS = frozenset(typing.get_args(HmacAlgorithm))


def _value(data: dict[str, str], key: str, where: str, what: str,
           fits: Callable[[str], bool]) -> str:
    """The text at one key of a Secret's data ("" when absent); ReadError, naming the key and never
    the value, when it is not `what`."""
    raw = _raw(data, key)
    if raw == b"":
        return ""
    try:
        text = raw.decode("ascii") if raw is not None else ""
    except UnicodeDecodeError:
        text = ""
    if not fits(text):
        raise ReadError(f"RNDC Secret {where}: its key {key!r} does not hold {what}: fix the "
                        "Secret, or the instance's rndcSecretRef", retryable=False)
    return text


def _tsig(api: KubeApi, desired: Desired, key: ObjectKey,
          secret_name: str) -> tuple[TsigKey | None, TsigKey | None]:
    """The instance's key, and the one a rotation replaced while its pods still roll
    (plan/rotation.py); ReadError when the Secret holds no usable key name where the instance's
    rndcSecretRef says, or an algorithm or secret that cannot be used."""
    namespace, name = key.namespace or "", key.name
    secret = api.get("Secret", namespace, secret_name)
    if secret is None:
        log.warning("%s/%s: RNDC Secret %s not found; DNS UPDATE will be unsigned", namespace, name,
                    secret_name)
        return None, None
    data = secret.get("data") or {}
    ref = desired.instances[key].spec.rndc_secret_ref
    key_field, secret_field = ((ref.key_name_key, ref.secret_key) if ref
                               else (rulechecks.KEY_NAME_KEY, rulechecks.SECRET_KEY))
    where = f"{namespace}/{secret_name}"
    key_name = key_name_of(data, key_field, secret_field, where)
    algorithm = _value(data, rulechecks.ALGORITHM_KEY, where,
                       f"an algorithm ({', '.join(sorted(ALGORITHMS))})", ALGORITHMS.__contains__)
    current = TsigKey(key_name or workloads.rndc_key_name(name),
                      algorithm or (ref.algorithm if ref else "hmac-sha256"),
                      _value(data, secret_field, where, "a TSIG secret (base64)", _is_secret))
    previous = ""
    if not ref:
        previous = _value(data, names.PREVIOUS_SECRET_KEY, where, "a TSIG secret (base64)",
                          _is_secret)
    return current, dataclasses.replace(current, secret=previous) if previous else None


def pods_waiting(api: KubeApi, namespace: str, instance: str) -> dict[str, str]:
    """Address -> name of the instance's pods that wait for their zones; none when its pods cannot
    be listed (said in the log: they stay not Ready until they can)."""
    try:
        pods = api.list("Pod", label_selector=podreadiness.selector(instance), namespace=namespace)
    except KubeError as exc:
        pods_log.warning("%s/%s: cannot list its pods, so a new pod waiting for its zones is not "
                         "written yet and stays not Ready (allow `list pods` there: "
                         "deploy/target/role.yaml): %s", namespace, instance,
                         exc)
        return {}
    return podreadiness.waiting_of(pods)
