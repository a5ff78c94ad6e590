"""A thin Kubernetes REST layer: resource paths, get/list/apply/delete/status, error translation.

Server-side apply (`application/apply-patch+yaml`, field manager `bindy-agent`, force) is the only
way objects are written. Every write is counted in `writes`, so tests and metrics can prove that
a second sync of the same revision writes nothing. Library exceptions stop here and become the
project's `KubeError` (forbidden / not_found / conflict / invalid / server), keeping their cause.
An agent whose RBAC is namespaced Roles (deploy/) may not list a kind across the cluster: a
connection given `namespaces` lists each of those instead.

Requests go straight to the client library's urllib3 pool (its TLS settings, CA, client certificate,
proxy): the URL, headers and JSON body are built here, the credential header is asked for at most
once a second. The library's generic per-call serialization cost more client CPU than the request
itself, and a first sync is thousands of applies.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import os
import threading
import time
import urllib.parse
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import urllib3
import urllib3.exceptions
import urllib3.util
import yaml

from agent.clients.deadline import UNBOUNDED, Deadline
from agent.errors import KubeError
from agent.model import calls, kinds
from agent.model.names import FIELD_MANAGER
from agent.sources import operatorfile

if TYPE_CHECKING:
    import kubernetes.client

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class ApiResource:
    api_version: str
    kind: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None = None, name: str | None = None,
             sub: str | None = None) -> str:
        group = "/api" if "/" not in self.api_version else "/apis"
        out = f"{group}/{self.api_version}"
        if self.namespaced and namespace:
            out += f"/namespaces/{namespace}"
        out += f"/{self.plural}"
        if name:
            out += f"/{name}"
        if sub:
            out += f"/{sub}"
        return out


RESOURCES: dict[str, ApiResource] = {
    "Namespace": ApiResource("v1", "Namespace", "namespaces", False),
    "ServiceAccount": ApiResource("v1", "ServiceAccount", "serviceaccounts", True),
    "Secret": ApiResource("v1", "Secret", "secrets", True),
    "ConfigMap": ApiResource("v1", "ConfigMap", "configmaps", True),
    "Service": ApiResource("v1", "Service", "services", True),
    "Deployment": ApiResource("apps/v1", "Deployment", "deployments", True),
    "Endpoints": ApiResource("v1", "Endpoints", "endpoints", True),
    # listed only, to say why an instance is not ready
    "Pod": ApiResource("v1", "Pod", "pods", True),
    "PersistentVolumeClaim": ApiResource("v1", "PersistentVolumeClaim", "persistentvolumeclaims",
                                         True),
    "Lease": ApiResource("coordination.k8s.io/v1", "Lease", "leases", True),
    "Event": ApiResource("v1", "Event", "events", True),
    "CustomResourceDefinition": ApiResource("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                                         "customresourcedefinitions", False),
    **{k.name: ApiResource(kinds.API_VERSION, k.name, k.plural, k.namespaced)
       for k in kinds.KINDS.values()},
}

CONNECTIONS = 16  # kept open to the API server, at least: more than the apply's concurrent calls
_AUTH_REFRESH = 1.0  # seconds a credential header is reused before the configuration is asked again

_VERBS = {"GET": "get", "PATCH": "patch", "DELETE": "delete", "POST": "create", "PUT": "update"}


def _check_kubeconfig(path: str) -> None:
    """Each file of a kubeconfig path (':'-separated, as $KUBECONFIG) that exists must be a YAML
    mapping: the client library fails on anything else with errors that do not say which file or
    why."""
    for one in path.split(os.pathsep):
        try:
            doc = yaml.safe_load(operatorfile.read_text(one, setting="kubeconfig",
                                                        limit=operatorfile.SETTINGS_BYTES))
        except operatorfile.Missing:
            # kubectl skips a missing file of the list; one missing file is reported by the library
            continue
        except operatorfile.Unreadable as exc:
            raise KubeError(str(exc), reason="config") from exc
        except yaml.YAMLError as exc:
            raise KubeError(f"{one}: not a kubeconfig file ({operatorfile.yaml_problem(exc)})",
                            reason="config") from exc
        if not isinstance(doc, dict):
            raise KubeError(f"{one}: not a kubeconfig file (expected a mapping with clusters, "
                            f"users and contexts)",
                            reason="config")


class KubeApi:
    """One connection to an API server. `reads` and `writes` count calls by verb. With `namespaces`,
    the namespaced kinds are only ever listed in those namespaces (never cluster-wide)."""

    def __init__(self, api_client: kubernetes.client.ApiClient, *, timeout: float = 30,
                 namespaces: Iterable[str] | None = None) -> None:
        self.client = api_client
        self.timeout = timeout
        self.namespaces = tuple(sorted(set(namespaces))) if namespaces is not None else None
        self.reads: collections.Counter[str] = collections.Counter()
        self.writes: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()  # calls may come from several threads
        self.deadline: Deadline = UNBOUNDED  # the current run's; every call's timeout is cut to it
        self._conn: tuple[urllib3.PoolManager | urllib3.HTTPConnectionPool, str] | None = None
        self._auth_cache: tuple[float, dict[str, str]] | None = None

    @classmethod
    def from_kubeconfig(cls, path: str | None, *, context: str | None = None,
                        namespaces: Iterable[str] | None = None) -> KubeApi:
        # imported here: the client library costs 14 MB and 0.2 s, which `plan DIR` never needs
        import kubernetes.client
        import kubernetes.config

        try:
            if path:
                _check_kubeconfig(path)
                client = kubernetes.config.new_client_from_config(config_file=path, context=context)
            else:
                configuration = kubernetes.client.Configuration()
                kubernetes.config.load_incluster_config(client_configuration=configuration)
                client = kubernetes.client.ApiClient(configuration)
        except (kubernetes.config.ConfigException, OSError) as exc:
            raise KubeError(f"cannot load Kubernetes credentials from {path or 'the pod'}: {exc}",
                            reason="config") from exc
        return cls(client, namespaces=namespaces)

    def close(self) -> None:
        with self._lock:
            self._conn = None
        self.client.close()

    @property
    def write_count(self) -> int:
        return sum(self.writes.values())

    def _pool(self) -> tuple[urllib3.PoolManager | urllib3.HTTPConnectionPool, str]:
        """The connection pool of the API server and the URL prefix a request's path goes after.
        The pool is the client library's own (its TLS settings, CA, client certificate, retries),
        kept at least CONNECTIONS large: a connection returned to a full pool is closed, and the
        next request pays a new TLS handshake."""
        with self._lock:
            if self._conn is None:
                manager = self.client.rest_client.pool_manager
                host = self.client.configuration.host.rstrip("/")
                # the manager sends each request the proxy's way
                if isinstance(manager, urllib3.ProxyManager):
                    self._conn = (manager, host)
                else:
                    size = max(self.client.configuration.connection_pool_maxsize or 0, CONNECTIONS)
                    self._conn = (manager.connection_from_url(host, pool_kwargs={"maxsize": size}),
                                  urllib3.util.parse_url(host).path or "")
            return self._conn

    def _auth(self) -> dict[str, str]:
        """The credential headers, asked of the client's configuration (which refreshes an expiring
        token) at most once a second rather than for every request."""
        now = time.monotonic()
        cached = self._auth_cache
        if cached is not None and now - cached[0] < _AUTH_REFRESH:
            return cached[1]
        headers = {str(s["key"]): str(s["value"])
                   for s in self.client.configuration.auth_settings().values()
                   if s.get("in") == "header" and s.get("value")}
        self._auth_cache = (now, headers)
        return headers

    @calls.measured("kubernetes", op=lambda self, *args, **kwargs: calls.kube_verb(*args, **kwargs))
    def _call(self, method: str, path: str, *, query: list[tuple[str, str]] | None = None,
              body: Any = None, content_type: str = "application/json",
              accept: str = "application/json") -> Any:
        """One request on the pooled connections: the reply decoded, or the translated error."""
        with self._lock:
            (self.writes if method in ("PATCH", "DELETE", "POST", "PUT")
             else self.reads)[method] += 1
        conn, prefix = self._pool()
        url = prefix + path + ("?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
                               if query else "")
        if body is not None and not isinstance(body, bytes):
            body = (body if isinstance(body, str) else json.dumps(body)).encode()
        headers = {**self.client.default_headers, **self._auth(), "Accept": accept,
                   "Content-Type": content_type}
        if self.client.cookie:
            headers["Cookie"] = self.client.cookie
        if self.deadline.expired:
            raise KubeError(f"{method} {path}: not sent: the run's deadline passed",
                            reason="timeout", retryable=True)
        try:
            response = conn.urlopen(method, url, body=body, headers=headers, preload_content=True,
                                    timeout=urllib3.Timeout(total=self.deadline.timeout(self.timeout)))
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise KubeError(f"{method} {path}: cannot reach the API server: {exc}",
                            reason="unreachable", retryable=True) from exc
        if response.status >= 400:
            raise _translate(method, path, response.status, response.data)
        return json.loads(response.data) if response.data else None

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] = self._call("GET", RESOURCES[kind].path(namespace, name))
            return result
        except KubeError as exc:
            if exc.reason == "not_found":
                return None
            raise

    def get_metadata(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """An object's metadata only (PartialObjectMetadata): a Secret's labels without its
        values."""
        accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
        try:
            result: dict[str, Any] = self._call("GET", RESOURCES[kind].path(namespace, name),
                                                accept=accept)
            return result
        except KubeError as exc:
            if exc.reason == "not_found":
                return None
            raise

    def list(self, kind: str, *, label_selector: str | None = None,
             namespace: str | None = None) -> list[dict[str, Any]]:
        """Objects of a kind, in one namespace or all (the items carry apiVersion/kind). "All" means
        the cluster, or each of `self.namespaces` when the connection is scoped to them."""
        res = RESOURCES[kind]
        if namespace is None and res.namespaced and self.namespaces is not None:
            return [item for ns in self.namespaces
                    for item in self.list(kind, label_selector=label_selector, namespace=ns)]
        query = [("labelSelector", label_selector)] if label_selector else []
        try:
            result = self._call("GET", res.path(namespace), query=query)
        except KubeError as exc:
            if exc.reason == "not_found":  # the CRD is not installed yet
                return []
            raise
        items: list[dict[str, Any]] = result.get("items", [])
        for item in items:
            item.setdefault("apiVersion", res.api_version)
            item.setdefault("kind", kind)
        return items

    def apply(self, body: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply of a whole object; returns the object as stored."""
        res = RESOURCES[body["kind"]]
        meta = body["metadata"]
        query = [("fieldManager", FIELD_MANAGER), ("force", "true")]
        result: dict[str, Any] = self._call("PATCH", res.path(meta.get("namespace"), meta["name"]),
                                            query=query, body=json.dumps(body),
                                            content_type="application/apply-patch+yaml")
        return result

    def apply_status(self, kind: str, namespace: str | None, name: str,
                     status: dict[str, Any]) -> dict[str, Any]:
        res = RESOURCES[kind]
        body = {"apiVersion": res.api_version, "kind": kind,
                "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
                "status": status}
        query = [("fieldManager", FIELD_MANAGER), ("force", "true")]
        result: dict[str, Any] = self._call("PATCH", res.path(namespace, name, "status"),
                                            query=query, body=json.dumps(body),
                                            content_type="application/apply-patch+yaml")
        return result

    def patch_status(self, kind: str, namespace: str | None, name: str,
                     patch: dict[str, Any]) -> dict[str, Any]:
        """A strategic merge patch of an object's status (a pod's condition merged by its `type`,
        the kubelet's own conditions left as they are)."""
        result: dict[str, Any] = self._call("PATCH",
                                            RESOURCES[kind].path(namespace, name, "status"),
                                            query=[("fieldManager", FIELD_MANAGER)], body=patch,
                                            content_type="application/strategic-merge-patch+json")
        return result

    def merge_patch(self, kind: str, namespace: str | None, name: str,
                    patch: dict[str, Any]) -> dict[str, Any]:
        """A JSON merge patch under a field manager of its own (fields the agent's applies never
        own)."""
        query = [("fieldManager", f"{FIELD_MANAGER}-cli")]
        result: dict[str, Any] = self._call("PATCH", RESOURCES[kind].path(namespace, name),
                                            query=query, body=patch,
                                            content_type="application/merge-patch+json")
        return result

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST a new object (fails with reason "conflict" if it exists)."""
        meta = body["metadata"]
        result: dict[str, Any] = self._call("POST",
                                            RESOURCES[body["kind"]].path(meta.get("namespace")),
                                            body=body)
        return result

    def replace(self, body: dict[str, Any]) -> dict[str, Any]:
        """PUT an object; with metadata.resourceVersion set, fails with reason "conflict" if it
        changed."""
        meta = body["metadata"]
        path = RESOURCES[body["kind"]].path(meta.get("namespace"), meta["name"])
        result: dict[str, Any] = self._call("PUT", path, body=body)
        return result

    def delete(self, kind: str, namespace: str | None, name: str, *,
               propagation: str = "Background", uid: str | None = None) -> bool:
        """Deletes an object; False if it was already gone. With `uid`, only that object: one made
        again under the same name since is refused (reason "conflict")."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions",
                                "propagationPolicy": propagation}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            self._call("DELETE", RESOURCES[kind].path(namespace, name), body=body)
            return True
        except KubeError as exc:
            if exc.reason == "not_found":
                return False
            raise


# how the API server's refusals read, by status code: (message, reason, retryable); {where} is the
# request, {message} what the server said
_STATUS_ERRORS = {
    401: ("{where}: unauthorized: the credentials were rejected", "unauthorized", False),
    404: ("{where}: not found", "not_found", False),
    409: ("{where}: conflict: {message}", "conflict", True),
    400: ("{where}: invalid: {message}", "invalid", False),
    422: ("{where}: invalid: {message}", "invalid", False),
    429: ("{where}: server error {status}: {message}", "server", True),
}
_SERVER_ERROR = ("{where}: server error {status}: {message}", "server", True)
_OTHER_ERROR = ("{where}: HTTP {status}: {message}", "http", False)


def _translate(method: str, path: str, status: int, data: bytes | None) -> KubeError:
    try:
        detail = json.loads(data or b"{}")
    except ValueError:
        detail = {}
    message = detail.get("message") or (data or b"").decode(errors="replace")[:300]
    where = f"{method} {urllib.parse.unquote(path)}"
    if status == 403:
        return _forbidden(method, path, detail, f"{where}: forbidden", message)
    text, reason, retryable = _STATUS_ERRORS.get(
        status, _SERVER_ERROR if status >= 500 else _OTHER_ERROR)
    return KubeError(text.format(where=where, status=status, message=message), reason=reason,
                     retryable=retryable)


def _forbidden(method: str, path: str, detail: dict[str, Any], what: str,
               message: str) -> KubeError:
    """A 403, naming the RBAC rule the agent's account lacks: the verb and the resource."""
    d = detail.get("details") or {}
    resource = d.get("kind") or path.rsplit("/", 2)[-2]
    verb = _VERBS.get(method, method.lower())
    if method == "GET" and path.split("?")[0].rstrip("/").endswith("/" + resource):
        verb = "list"  # a GET of a collection
    return KubeError(f"{what}: the agent's account may not {verb} {resource} "
                     f"(missing RBAC rule: verbs [{verb}] on resource {resource}): {message}",
                     reason="forbidden")
