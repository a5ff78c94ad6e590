"""Syncing revisions into a real kube-apiserver (+ kube-controller-manager for GC).

Each test syncs a copy of sample-repo moved into its own namespace, with that namespace as the
agent's identity, so tests sharing the cluster never prune each other's objects.
"""

from __future__ import annotations

import base64
import concurrent.futures
import json
import logging
import pathlib
import shutil
import subprocess
import sys
import time
import uuid
from typing import Any

import pytest
import urllib3
from kubernetes import client

from agent.clients import kubeapi
from agent.clients.kubeapi import KubeApi
from agent.desired import hierarchy as desired
from agent.errors import KubeError
from agent.plan import render
from agent.reconcile import kubeapply
from tests.conftest import ROOT, load_dir
from tests.support import clirun
from tests.support.kube import KubeCluster, service_account_token, token_client
from tests.support.kuberepo import _repo, _sync
from tests.support.procs import wait_for

GROUP, VERSION = "bindy.firestoned.io", "v1beta1"


def _cr(api_client: Any, plural: str, namespace: str, name: str) -> dict[str, Any]:
    return client.CustomObjectsApi(api_client).get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)


def _ready(obj: dict[str, Any]) -> str:
    return next(c["status"] for c in obj["status"]["conditions"] if c["type"] == "Ready")


def _gone(fn: Any, *args: Any) -> bool:
    try:
        fn(*args)
        return False
    except client.ApiException as exc:
        return exc.status == 404


def test_sync_creates_the_hierarchy_and_a_second_sync_writes_nothing(
        kube: KubeCluster, kube_client: Any, namespace: str, tmp_path: pathlib.Path) -> None:
    root = _repo(tmp_path, namespace)
    api, first = _sync(kube, root, namespace)
    assert first.kube is not None and first.kube.ok, first.kube.failed if first.kube else None
    assert len(first.kube.applied) == 38

    cluster = _cr(kube_client, "bind9clusters", namespace, "dns")
    assert (_ready(cluster), cluster["status"]["lastAppliedRevision"]) == ("True", "rev-1")
    assert cluster["status"]["instances"] == ["dns-primary-0", "dns-secondary-0"]
    instance = _cr(kube_client, "bind9instances", namespace, "dns-primary-0")
    # no kubelet in this control plane: the instances' pods never run, so they are not Ready (issue 25)
    assert _ready(instance) == "False" and instance["status"]["zonesCount"] == 3
    assert next(c for c in instance["status"]["conditions"] if c["type"] == "Ready")["reason"] == "NotReady"
    assert instance["status"]["serviceAddress"].startswith("10.96.0.")
    assert instance["metadata"]["ownerReferences"][0]["kind"] == "Bind9Cluster"
    zone = _cr(kube_client, "dnszones", namespace, "internal")
    assert (zone["status"]["selectionMethod"], zone["status"]["selectedByInstance"]) == ("labelSelector", "dns-primary-0")

    shown = subprocess.run(["kubectl", "--kubeconfig", str(kube.kubeconfig), "get", "bind9instances", "-n", namespace,
                            "-o", "custom-columns=NAME:.metadata.name,READY:.status.conditions[?(@.type=='Ready')].status",
                            "--no-headers"], capture_output=True, text=True, check=True)
    assert shown.stdout.split() == ["dns-primary-0", "False", "dns-secondary-0", "False"]
    columns = subprocess.run(["kubectl", "--kubeconfig", str(kube.kubeconfig), "get", "bind9clusters,dnszones", "-n",
                              namespace], capture_output=True, text=True, check=True).stdout
    assert columns.count("REVISION") == 2 and columns.count("rev-1") == 4  # the cluster and its three zones

    apps, core = client.AppsV1Api(kube_client), client.CoreV1Api(kube_client)
    deploy = apps.read_namespaced_deployment("dns-primary-0", namespace)
    assert [(r.kind, r.name) for r in deploy.metadata.owner_references] == [("Bind9Instance", "dns-primary-0")]
    assert core.read_namespaced_service_account("bind9", namespace).metadata.owner_references is None
    key_before = core.read_namespaced_secret("dns-primary-0-rndc-key", namespace).data["secret"]
    assert len(base64.b64decode(base64.b64decode(key_before))) == 32  # a 256-bit HMAC key
    # what the pod mounts is a configuration named accepts: named.conf and the key block it includes
    chroot = tmp_path / "chroot"
    (chroot / "etc/bind/keys").mkdir(parents=True)
    (chroot / "var/cache/bind").mkdir(parents=True)  # the zones volume
    conf = core.read_namespaced_config_map("dns-primary-0-config", namespace).data["named.conf"]
    (chroot / "etc/bind/named.conf").write_text(conf)
    key_file = core.read_namespaced_secret("dns-primary-0-rndc-key", namespace).data["rndc.key"]
    (chroot / "etc/bind/keys/rndc.key").write_text(base64.b64decode(key_file).decode())
    assert base64.b64decode(key_before).decode() in (chroot / "etc/bind/keys/rndc.key").read_text()
    checked = subprocess.run(["named-checkconf", "-t", str(chroot), "/etc/bind/named.conf"], capture_output=True,
                             text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    api2, second = _sync(kube, root, namespace)
    assert second.plan.changes == [] and api2.write_count == 0
    assert core.read_namespaced_secret("dns-primary-0-rndc-key", namespace).data["secret"] == key_before
    first_plan = first.plan
    key = base64.b64decode(key_before).decode()
    as_json = render.render_json(first_plan)
    assert key not in render.render_text(first_plan) and key not in as_json
    secret = next(c for c in json.loads(as_json)["changes"] if c["target"].get("name") == "dns-primary-0-rndc-key")
    assert secret["after"]["stringData"]["secret"] == "<secret>"

    api3, rotated = _sync(kube, root, namespace, rotate_rndc_keys=True)
    assert rotated.kube is not None and rotated.kube.ok
    assert core.read_namespaced_secret("dns-primary-0-rndc-key", namespace).data["secret"] != key_before


def test_hand_deleted_and_hand_edited_objects_are_restored_as_drift(
        kube: KubeCluster, kube_client: Any, namespace: str, tmp_path: pathlib.Path) -> None:
    root = _repo(tmp_path, namespace)
    _sync(kube, root, namespace)
    apps, core = client.AppsV1Api(kube_client), client.CoreV1Api(kube_client)
    apps.delete_namespaced_deployment("dns-secondary-0", namespace)
    core.patch_namespaced_config_map("dns-primary-0-config", namespace, {"data": {"named.conf": "# hacked\n"}})

    _, dry = _sync(kube, root, namespace, dry_run=True)
    assert dry.plan is not None
    rendered = render.render_text(dry.plan)
    assert f"+ Deployment {namespace}/dns-secondary-0  (drift: deleted by hand)" in rendered
    assert f"~ ConfigMap {namespace}/dns-primary-0-config  (drift: edited by hand) changed: data.named.conf" in rendered

    _, fixed = _sync(kube, root, namespace)
    assert fixed.kube is not None and sorted(map(str, fixed.kube.applied)) == [
        f"ConfigMap/{namespace}/dns-primary-0-config", f"Deployment/{namespace}/dns-secondary-0"]
    assert "allow-new-zones yes;" in core.read_namespaced_config_map("dns-primary-0-config", namespace).data["named.conf"]
    api, again = _sync(kube, root, namespace)
    assert api.write_count == 0


def test_prune_removes_exactly_what_git_dropped_and_spares_unmanaged_objects(
        kube: KubeCluster, kube_client: Any, namespace: str, tmp_path: pathlib.Path) -> None:
    core = client.CoreV1Api(kube_client)
    core.create_namespaced_config_map(namespace, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="dns-secondary-0-config"), data={"named.conf": "# someone else's\n"}))
    root = _repo(tmp_path, namespace)
    _, first = _sync(kube, root, namespace)
    assert first.plan is not None
    rendered = render.render_text(first.plan)
    assert f"! ConfigMap {namespace}/dns-secondary-0-config: exists but was not created by this agent" in rendered

    (root / "zones" / "internal.yaml").unlink()
    (root / "records" / "internal" / "hosts.yaml").unlink()  # with its records (left behind: in no zone, an error)
    cluster = root / "infrastructure" / "cluster.yaml"
    cluster.write_text(cluster.read_text().replace("  secondary:\n    replicas: 1", "  secondary:\n    replicas: 0"))
    _, second = _sync(kube, root, namespace, revision="rev-2")
    assert second.kube is not None
    # Records, then zones (independent of the servers), then each instance's children before the instance;
    # the Deployment goes before what it uses.
    assert [str(k) for k in second.kube.deleted] == [
        f"AAAARecord/{namespace}/db-v6", f"ARecord/{namespace}/db", f"SRVRecord/{namespace}/postgres",
        f"DNSZone/{namespace}/internal", f"Deployment/{namespace}/dns-secondary-0",
        f"Service/{namespace}/dns-secondary-0", f"Secret/{namespace}/dns-secondary-0-rndc-key",
        f"Bind9Instance/{namespace}/dns-secondary-0"]
    assert core.read_namespaced_config_map("dns-secondary-0-config", namespace).data == {"named.conf": "# someone else's\n"}
    assert _gone(_cr, kube_client, "dnszones", namespace, "internal")
    assert not _gone(_cr, kube_client, "dnszones", namespace, "example-com")
    assert _cr(kube_client, "bind9clusters", namespace, "dns")["status"]["instances"] == ["dns-primary-0"]


def test_deleting_a_provider_from_git_removes_its_whole_tree(
        kube: KubeCluster, kube_client: Any, namespace: str, tmp_path: pathlib.Path) -> None:
    name = f"p-{uuid.uuid4().hex[:6]}"
    root = tmp_path / "repo"
    root.mkdir()
    (root / "provider.yaml").write_text(f"""apiVersion: {GROUP}/{VERSION}
kind: ClusterBind9Provider
metadata: {{name: {name}}}
spec: {{namespace: {namespace}, primary: {{replicas: 1}}, secondary: {{replicas: 1}}}}
""")
    _, first = _sync(kube, root, namespace)
    assert first.kube is not None and first.kube.ok
    assert _cr(kube_client, "bind9clusters", namespace, name)["metadata"]["ownerReferences"][0]["kind"] == \
        "ClusterBind9Provider"
    (root / "provider.yaml").unlink()
    api, refused = _sync(kube, root, namespace, revision="rev-2")  # the whole tree: past the prune limit
    assert refused.outcome == "rejected" and refused.kube is None and "DELETE" not in api.writes
    assert refused.refusals[0].startswith("Kubernetes: refusing to delete 13 of the 13 objects the agent manages")
    assert "allow it with `--allow-prune` (or `--force`)" in refused.refusals[0]
    assert _cr(kube_client, "bind9clusters", namespace, name)["metadata"]["name"] == name  # still there
    _, second = _sync(kube, root, namespace, revision="rev-2", allow_prune=True)
    assert second.kube is not None
    order = [k.kind for k in second.kube.deleted]
    assert order.index("Deployment") < order.index("Bind9Instance") < order.index("Bind9Cluster") \
        < order.index("ClusterBind9Provider")
    apps, core = client.AppsV1Api(kube_client), client.CoreV1Api(kube_client)
    selector = f"bindy.firestoned.io/agent={namespace}"
    wait_for(lambda: not apps.list_namespaced_deployment(namespace, label_selector=selector).items
          and not apps.list_namespaced_replica_set(namespace).items
          and not core.list_namespaced_secret(namespace, label_selector=selector).items
          and not core.list_namespaced_service(namespace, label_selector=selector).items)
    crs = client.CustomObjectsApi(kube_client)
    for plural in ("bind9clusters", "bind9instances"):
        assert crs.list_namespaced_custom_object(GROUP, VERSION, namespace, plural)["items"] == []


def test_a_failing_object_degrades_its_cr_and_spares_the_rest(
        kube: KubeCluster, kube_client: Any, namespace: str, tmp_path: pathlib.Path) -> None:
    root = _repo(tmp_path, namespace)
    (root / "infrastructure" / "extra.yaml").write_text(f"""apiVersion: {GROUP}/{VERSION}
kind: Bind9Instance
metadata: {{name: broken, namespace: {namespace}}}
spec:
  clusterRef: dns
  role: secondary
  bindcarConfig:
    envVars: [{{name: "not a valid name", value: "x"}}]
""")
    _, outcome = _sync(kube, root, namespace)
    result = outcome.kube
    assert result is not None and not result.ok
    assert list(map(str, result.failed)) == [f"Deployment/{namespace}/broken"]
    assert "invalid" in result.failed[next(iter(result.failed))]
    broken = _cr(kube_client, "bind9instances", namespace, "broken")
    degraded = next(c for c in broken["status"]["conditions"] if c["type"] == "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "ApplyFailed")
    warnings = [e for e in client.CoreV1Api(kube_client).list_namespaced_event(namespace).items
                if e.involved_object.name == "broken" and e.type == "Warning"]
    assert [e.reason for e in warnings] == ["ApplyFailed"] and "not a valid name" not in warnings[0].reason
    assert f"Deployment/{namespace}/broken" in degraded["message"]
    spared = _cr(kube_client, "bind9instances", namespace, "dns-primary-0")  # not failed: its pods are awaited
    assert [(c["type"], c["status"]) for c in spared["status"]["conditions"]] == [
        ("Ready", "False"), ("Progressing", "True"), ("Degraded", "False")]
    client.AppsV1Api(kube_client).read_namespaced_deployment("dns-primary-0", namespace)


def test_forbidden_names_the_missing_verb_and_resource(kube: KubeCluster, kube_client: Any, namespace: str) -> None:
    core, rbac = client.CoreV1Api(kube_client), client.RbacAuthorizationV1Api(kube_client)
    core.create_namespaced_service_account(namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="ro")))
    rbac.create_namespaced_role(namespace, client.V1Role(metadata=client.V1ObjectMeta(name="ro"), rules=[
        client.V1PolicyRule(api_groups=[""], resources=["configmaps"], verbs=["get", "list"])]))
    rbac.create_namespaced_role_binding(namespace, client.V1RoleBinding(
        metadata=client.V1ObjectMeta(name="ro"), role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io",
                                                                           kind="Role", name="ro"),
        subjects=[client.RbacV1Subject(kind="ServiceAccount", name="ro", namespace=namespace)]))
    token = ""

    def has_token() -> bool:
        nonlocal token
        for secret in core.list_namespaced_secret(namespace).items:
            if secret.type == "kubernetes.io/service-account-token" and secret.metadata.annotations.get(
                    "kubernetes.io/service-account.name") == "ro":
                token = base64.b64decode(secret.data["token"]).decode()
                return True
        return False

    wait_for(has_token)
    config = client.Configuration()
    config.host, config.ssl_ca_cert = kube.url, str(kube.ca)
    config.api_key = {"authorization": f"Bearer {token}"}
    api = KubeApi(client.ApiClient(config))
    assert api.get("ConfigMap", namespace, "nope") is None
    with pytest.raises(KubeError) as err:
        api.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": namespace}})
    assert err.value.reason == "forbidden"
    assert "may not patch configmaps (missing RBAC rule: verbs [patch] on resource configmaps)" in str(err.value)


def test_a_refused_apply_names_the_object_and_the_servers_reason(kube: KubeCluster, namespace: str) -> None:
    api = KubeApi.from_kubeconfig(str(kube.kubeconfig))
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "refused", "namespace": namespace, "labels": {"tier": "not valid!"}}}
    with pytest.raises(KubeError) as err:
        api.apply(body)
    assert err.value.reason == "invalid" and not err.value.retryable
    message = str(err.value)
    assert message.startswith(f"PATCH /api/v1/namespaces/{namespace}/configmaps/refused: invalid: ")
    assert 'metadata.labels: Invalid value: "not valid!"' in message
    assert kube.token not in message
    assert api.writes["PATCH"] == 1 and api.reads["GET"] == 0


def test_concurrent_calls_share_a_few_connections_and_a_rotated_token_is_used(
        kube: KubeCluster, namespace: str, caplog: pytest.LogCaptureFixture) -> None:
    """The apply's threads reuse pooled connections (a connection dropped from a full pool costs a
    new TLS handshake), and a token the configuration changes is sent within a second."""
    assert kubeapply.WORKERS <= kubeapi.CONNECTIONS
    api = KubeApi(token_client(kube, kube.token))

    def put(i: int) -> None:
        api.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}", "namespace": namespace},
                   "data": {"i": str(i)}})

    with caplog.at_level(logging.WARNING, logger="urllib3"), \
            concurrent.futures.ThreadPoolExecutor(kubeapply.WORKERS) as pool:
        list(pool.map(put, range(5 * kubeapply.WORKERS)))
    assert api.writes["PATCH"] == 5 * kubeapply.WORKERS
    assert not [r for r in caplog.records if "pool is full" in r.getMessage()]
    connections = api._pool()[0]
    assert isinstance(connections, urllib3.HTTPConnectionPool) and connections.num_connections <= kubeapply.WORKERS
    assert api.get("ConfigMap", namespace, "c3")["data"] == {"i": "3"}  # type: ignore[index]
    api.client.configuration.api_key = {"authorization": "Bearer not-the-token"}
    time.sleep(1.1)
    with pytest.raises(KubeError) as err:
        api.get("ConfigMap", namespace, "c3")
    assert err.value.reason == "unauthorized" and "not-the-token" not in str(err.value)


def test_cli_exit_codes(kube: KubeCluster, namespace: str, tmp_path: pathlib.Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "agent", *args], capture_output=True, text=True, cwd=ROOT)

    assert cli("install-crds", "--kubeconfig", str(kube.kubeconfig)).returncode == 0
    root = _repo(tmp_path, namespace)
    allowed = ("--allowed-namespaces", namespace)  # the repository's namespace, which the agent must allow
    ok = cli("sync", str(root), "--kubeconfig", str(kube.kubeconfig), "--agent-namespace", namespace, *allowed)
    assert ok.returncode == 0, ok.stderr
    assert "Kubernetes: applied 38, deleted 0" in ok.stderr
    planned = cli("plan", str(root), "--kubeconfig", str(kube.kubeconfig), "--agent-namespace", namespace, *allowed)
    assert (planned.returncode, planned.stdout.splitlines()[-1]) == (0, "No changes: the world matches the revision.")
    (root / "bad.yaml").write_text("apiVersion: bindy.firestoned.io/v1beta1\nkind: Nope\nmetadata: {name: x}\n")
    assert cli("sync", str(root), "--kubeconfig", str(kube.kubeconfig)).returncode == 2
    (root / "bad.yaml").unlink()
    broken = tmp_path / "unreachable.kubeconfig"
    broken.write_text(kube.kubeconfig.read_text().replace(kube.url, "https://127.0.0.1:1"))
    down = cli("sync", str(root), "--kubeconfig", str(broken), *allowed)
    assert down.returncode == 3 and "cannot reach the API server" in down.stderr


def test_plan_against_the_cluster_is_the_plan_a_sync_applies_or_refuses(
        kube: KubeCluster, kube_client: Any, namespace: str, tmp_path: pathlib.Path) -> None:
    """`plan --kubeconfig`, `sync --dry-run` and `sync` plan a revision the same way: the same plan,
    the one the sync then applies, and the same refusal of an unsafe one."""
    assert clirun.main("install-crds", "--kubeconfig", str(kube.kubeconfig)).returncode == 0
    root = _repo(tmp_path, namespace)
    target = (str(root), "--kubeconfig", str(kube.kubeconfig), "--agent-namespace", namespace,
              "--allowed-namespaces", namespace)
    as_json = clirun.main("plan", *target, "-o", "json")
    shown, dry, synced = clirun.main("plan", *target), clirun.main("sync", *target, "--dry-run"), \
        clirun.main("sync", *target)
    assert (as_json.returncode, shown.returncode, dry.returncode, synced.returncode) == (0, 0, 0, 0), synced.stderr
    assert shown.stdout == dry.stdout == synced.stdout  # one plan, shown three times
    doc = json.loads(as_json.stdout)
    planned = {(c["target"]["kind"], c["target"]["namespace"], c["target"]["name"]) for c in doc["changes"]
               if c["layer"] == "kubernetes"}
    assert doc["summary"] == {"create": len(planned), "update": 0, "delete": 0} and len(planned) == 38
    assert f"Kubernetes: applied {len(planned)}, deleted 0" in synced.stderr
    inventory = client.CoreV1Api(kube_client).read_namespaced_config_map("bindy-agent-inventory", namespace)
    assert {tuple(k) for k in json.loads(inventory.data["objects"])} == planned  # what the sync applied

    shutil.rmtree(root / "records")
    shutil.rmtree(root / "zones")
    as_json, shown = clirun.main("plan", *target, "-o", "json"), clirun.main("plan", *target)
    dry, refused = clirun.main("sync", *target, "--dry-run"), clirun.main("sync", *target)
    [refusal] = json.loads(as_json.stdout)["refusals"]
    assert refusal.startswith("Kubernetes: refusing to delete "), refusal
    assert f"  ! {refusal}" in shown.stdout and shown.stdout == dry.stdout == refused.stdout
    assert (shown.returncode, refused.returncode) == (0, 2)  # the plan is made (and shows the refusal)
    assert f"refused: {refusal}" in refused.stderr.splitlines()
    assert _cr(kube_client, "dnszones", namespace, "internal")["metadata"]["name"] == "internal"  # nothing deleted


def test_in_cluster_endpoints_come_from_services_and_rndc_secrets(
        kube: KubeCluster, kube_client: Any, namespace: str, tmp_path: pathlib.Path) -> None:
    from agent.observe import instancereach
    root = _repo(tmp_path, namespace)
    api, _ = _sync(kube, root, namespace)
    token = tmp_path / "token"
    bound = service_account_token(kube_client, namespace, "bind9", audiences=["bindcar"])
    token.write_text(bound + "\n")  # as the kubelet projects it
    found = instancereach.from_cluster(api, desired.build(load_dir(root)), token_file=token)
    primary = found[f"{namespace}/dns-primary-0"]
    assert (primary.dns_host, primary.dns_port) == (f"dns-primary-0.{namespace}.svc.cluster.local", 53)
    assert primary.api_url == f"http://dns-primary-0.{namespace}.svc.cluster.local:8080"
    assert primary.token == bound
    # the kubelet rotates the projected token: every run reads the file again
    rotated = service_account_token(kube_client, namespace, "bind9", audiences=["bindcar"], seconds=3601)
    token.write_text(rotated)
    state = desired.build(load_dir(root))
    assert instancereach.from_cluster(api, state, token_file=token)[f"{namespace}/dns-primary-0"].token == rotated != bound
    # the seam that decides which instances get a token at all
    chosen = instancereach.from_cluster(api, state, token_file=token, send_token_to=lambda key: "primary" in key.name)
    assert (chosen[f"{namespace}/dns-primary-0"].token, chosen[f"{namespace}/dns-secondary-0"].token) == (rotated, "")
    # the agent sends the token only to instances in the allowed namespaces
    from agent.run import compose, options
    from agent.run import settings as config
    for allowed, sent in ((namespace, rotated), ("elsewhere", "")):
        settings = config.load_settings({"repo": "unused", "in_cluster_dns": True, "zone_api_token_file": str(token),
                                         "allowed_namespaces": allowed}, environ={})
        request = compose.from_settings(settings)
        reach = compose.zone_endpoints(request, api)  # read by each run's observe step
        assert isinstance(reach, options.InCluster)
        assert {e.token for e in options.endpoints(reach, state, api, request.options).values()} == {sent}
    secret = client.CoreV1Api(kube_client).read_namespaced_secret("dns-primary-0-rndc-key", namespace)
    assert primary.tsig is not None
    assert (primary.tsig.name, primary.tsig.algorithm) == ("dns-primary-0-rndc-key", "hmac-sha256")
    assert primary.tsig.secret == base64.b64decode(secret.data["secret"]).decode()
    assert primary.tsig.secret not in repr(primary)
