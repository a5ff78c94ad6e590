"""Pod, storage and default fields rendered as Bindy's operator renders them (pure): image pull
settings falling back instance -> cluster -> provider, configMapRefs mounted and included in
named.conf, bindcarConfig.serviceSpec merged into the Service, the sidecar's image and
environment, and Bindy's TTL for a record without one."""

from __future__ import annotations

from typing import Any

from agent.desired import hierarchy
from agent.model.problems import Severity
from tests.conftest import Repo, load_dir
from tests.support import clirun

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"


def _indent(text: str, by: int) -> str:
    return "".join(" " * by + line + "\n" for line in text.strip("\n").split("\n")) if text.strip() else ""


def _cluster(spec: str = "", kind: str = "Bind9Cluster") -> str:
    meta = "{name: dns}" if kind == "ClusterBind9Provider" else "{name: dns, namespace: dns-system}"
    extra = "  namespace: dns-system\n" if kind == "ClusterBind9Provider" else ""
    return (HEAD + f"kind: {kind}\nmetadata: {meta}\nspec:\n{extra}  secondary: {{replicas: 0}}\n"
            + _indent(spec, 2))


def _instance(spec: str = "") -> str:
    return (HEAD + "kind: Bind9Instance\nmetadata: {name: dns-primary-0, namespace: dns-system}\n"
            "spec:\n  clusterRef: dns\n  role: primary\n" + _indent(spec, 2))


def _build(repo: Repo, *docs: str) -> hierarchy.Desired:
    repo.add("infra.yaml", "---\n".join(docs))
    manifest = load_dir(repo.root)
    assert manifest.ok, [str(p) for p in manifest.problems]
    state = hierarchy.build(manifest)
    assert [str(p) for p in state.problems if p.severity is Severity.ERROR] == []
    return state


def _pod(state: hierarchy.Desired, name: str = "dns-primary-0") -> dict[str, Any]:
    found = state.object("Deployment", "dns-system", name)
    assert found is not None
    return found.body["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def _containers(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in pod["containers"]}


# -- image pull settings: instance -> cluster -> provider ---------------------------------------------

def test_pull_secrets_and_policy_set_on_the_cluster_reach_its_generated_instances(repo: Repo) -> None:
    state = _build(repo, _cluster("image:\n  imagePullPolicy: Always\n  imagePullSecrets: [regcred]"))
    pod = _pod(state)
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert _containers(pod)["bind9"]["imagePullPolicy"] == "Always"


def test_pull_settings_on_a_provider_reach_the_pods_of_its_clusters(repo: Repo) -> None:
    state = _build(repo, _cluster("image: {imagePullPolicy: Never, imagePullSecrets: [mirror]}",
                                  kind="ClusterBind9Provider"))
    pod = _pod(state)
    assert pod["imagePullSecrets"] == [{"name": "mirror"}]
    assert _containers(pod)["bind9"]["imagePullPolicy"] == "Never"


def test_an_instances_image_block_wins_over_its_clusters_whole_as_in_bindy(repo: Repo) -> None:
    state = _build(repo, _cluster("primary: {replicas: 0}\nimage: {imagePullPolicy: Always, imagePullSecrets: [a]}"),
                   _instance("image: {imagePullSecrets: [b]}"))
    pod = _pod(state)
    assert pod["imagePullSecrets"] == [{"name": "b"}]
    # Bindy takes the first image block whole: the cluster's policy does not fill in the instance's
    assert _containers(pod)["bind9"]["imagePullPolicy"] == "IfNotPresent"


def test_pull_policy_defaults_to_bindys_if_not_present_on_both_containers(repo: Repo) -> None:
    containers = _containers(_pod(_build(repo, _cluster())))
    assert containers["bind9"]["imagePullPolicy"] == "IfNotPresent"
    assert containers["bindcar"]["imagePullPolicy"] == "IfNotPresent"
    assert "imagePullSecrets" not in _pod(_build(repo, _cluster()))


# -- configMapRefs --------------------------------------------------------------------------------------

def test_named_conf_options_and_zones_refs_are_mounted_and_included(repo: Repo) -> None:
    state = _build(repo, _cluster("configMapRefs: {namedConfOptions: my-options, namedConfZones: my-zones}"))
    pod = _pod(state)
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["named-conf-options"] == {"name": "named-conf-options", "configMap": {"name": "my-options"}}
    assert volumes["named-conf-zones"] == {"name": "named-conf-zones", "configMap": {"name": "my-zones"}}
    mounts = {m["mountPath"]: m for m in _containers(pod)["bind9"]["volumeMounts"]}
    assert mounts["/etc/bind/named.conf.options"]["subPath"] == "named.conf.options"
    assert mounts["/etc/bind/named.conf.zones"]["subPath"] == "named.conf.zones"
    conf = state.object("ConfigMap", "dns-system", "dns-primary-0-config")
    assert conf is not None
    text = conf.body["data"]["named.conf"]
    # the user's options file replaces the generated options block; the zones file comes after it
    assert "options {" not in text and "allow-new-zones" not in text
    lines = text.split("\n")
    assert lines.index('include "/etc/bind/named.conf.options";') < lines.index(
        'include "/etc/bind/named.conf.zones";')


def test_a_zones_ref_alone_keeps_the_generated_options(repo: Repo) -> None:
    state = _build(repo, _instance("configMapRefs: {namedConfZones: my-zones}"),
                   _cluster("primary: {replicas: 0}"))
    conf = state.object("ConfigMap", "dns-system", "dns-primary-0-config")
    assert conf is not None
    text = conf.body["data"]["named.conf"]
    assert "allow-new-zones yes;" in text and "named.conf.options" not in text
    assert text.index("allow-new-zones yes;") < text.index('include "/etc/bind/named.conf.zones";')


# -- Service ----------------------------------------------------------------------------------------------

def test_bindcar_service_spec_is_merged_into_the_service_before_the_roles(repo: Repo) -> None:
    state = _build(repo, _cluster("""
global:
  bindcarConfig:
    serviceSpec:
      sessionAffinity: ClientIP
      type: NodePort
      ports: [{name: http, port: 8080, targetPort: 8080, protocol: TCP, nodePort: 30080}]
      selector: {app: other}
primary:
  service:
    spec: {type: LoadBalancer}
"""))
    svc = state.object("Service", "dns-system", "dns-primary-0")
    assert svc is not None
    spec = svc.body["spec"]
    assert spec["sessionAffinity"] == "ClientIP"
    assert spec["type"] == "LoadBalancer"  # the role's service.spec is merged last, as Bindy does
    ports = {p["name"]: p for p in spec["ports"]}
    assert ports["http"]["nodePort"] == 30080 and set(ports) == {"dns-udp", "dns-tcp", "http"}
    assert spec["selector"] == {"app.kubernetes.io/instance": "dns-primary-0", "app.kubernetes.io/name": "bind9"}


# -- the sidecar ------------------------------------------------------------------------------------------

def test_sidecar_image_and_environment_follow_bindys_operator(repo: Repo) -> None:
    pod = _pod(_build(repo, _cluster()))
    bindcar = _containers(pod)["bindcar"]
    assert bindcar["image"] == "ghcr.io/firestoned/bindcar:v0.7.2"
    env = {e["name"]: e for e in bindcar["env"]}
    assert env["RUST_LOG"]["value"] == "info"
    assert env["BIND_ALLOWED_SERVICE_ACCOUNTS"]["value"] == "system:serviceaccount:bindy-agent:bindy-agent"
    assert env["BIND_TOKEN_AUDIENCES"]["value"] == "bindcar"
    assert env["TMPDIR"]["value"] == "/tmp"
    assert env["NSUPDATE_PORT"]["value"] == "5353"
    assert env["RNDC_ALGORITHM"]["valueFrom"]["secretKeyRef"] == {"name": "dns-primary-0-rndc-key",
                                                                  "key": "algorithm"}
    # its own token for bindcar's TokenReview, in the sidecar only; the pod automounts none
    assert pod["automountServiceAccountToken"] is False
    token = next(v for v in pod["volumes"] if v["name"] == "api-token")
    assert {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}} in token["projected"]["sources"]
    assert {"name": "api-token", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            "readOnly": True} in bindcar["volumeMounts"]
    assert all(m["name"] != "api-token" for m in _containers(pod)["bind9"]["volumeMounts"])


def test_a_roles_rndc_key_algorithm_reaches_the_generated_secret(repo: Repo) -> None:
    state = _build(repo, _cluster("primary:\n  rndcKey: {algorithm: hmac-sha512}"))
    secret = state.object("Secret", "dns-system", "dns-primary-0-rndc-key")
    assert secret is not None and secret.body["stringData"]["algorithm"] == "hmac-sha512"


def test_inline_rndc_secret_annotations_are_kept(repo: Repo) -> None:
    state = _build(repo, _cluster("primary: {replicas: 0}"), _instance(
        "rndcKey:\n  secret:\n    metadata: {name: own, annotations: {team: dns}}\n    stringData: {secret: x}"))
    secret = state.object("Secret", "dns-system", "own")
    assert secret is not None and secret.body["metadata"]["annotations"] == {"team": "dns"}


# -- defaults ---------------------------------------------------------------------------------------------

def test_a_record_without_ttl_gets_bindys_300_seconds(repo: Repo) -> None:
    zone = (HEAD + "kind: DNSZone\nmetadata: {name: z, namespace: dns-system}\nspec:\n  zoneName: example.com\n"
            "  clusterRef: dns\n  soaRecord: {primaryNs: ns1.example.com., adminEmail: a.example.com., serial: 1,"
            " refresh: 3600, retry: 600, expire: 604800, negativeTtl: 300}\n")
    record = (HEAD + "kind: ARecord\nmetadata: {name: www, namespace: dns-system, labels: {zone: example.com}}\n"
              "spec: {name: www, ipv4Addresses: [192.0.2.1]}\n")
    zone += "  recordsFrom: [{selector: {matchLabels: {zone: example.com}}}]\n"
    state = _build(repo, _cluster(), zone, record)
    (placed,) = state.zones
    assert placed.rrsets[("www.example.com.", "A")].ttl == 300


# -- what the agent mounts and sets is the agent's --------------------------------------------------

def test_a_repo_cannot_shadow_the_sidecar_token_or_the_included_files(repo: Repo) -> None:
    """The sidecar's token volume and the included named.conf files are the agent's volumes: a CR
    reusing one of their names is refused, as the older ones are (Bindy's own admission rules already
    refuse mounts outside /data/ and the operator's sidecar variables)."""
    for name in ("api-token", "named-conf-options", "named-conf-zones"):
        repo.add("infra.yaml", _cluster() + "---\n" + _instance(f"volumes: [{{name: {name}, emptyDir: {{}}}}]"))
        result = clirun.main("validate", str(repo.root))
        assert result.returncode == 1, result.stderr
        assert f"{name!r} is used by the agent's own volumes" in result.stderr
