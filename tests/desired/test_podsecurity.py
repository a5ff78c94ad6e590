"""Pod Security Standards rules (baseline, restricted), and the generated pods meeting "restricted"."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agent.desired import hierarchy as desired
from agent.desired import podsecurity, workloads
from agent.desired.podsecurity import BASELINE, RESTRICTED
from tests.conftest import SAMPLE, Repo, load_dir

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"


def _restricted_pod() -> dict[str, Any]:
    return {
        "securityContext": {"runAsNonRoot": True, "runAsUser": 53, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "c", "image": "x", "securityContext": {
            "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}],
        "volumes": [{"name": "v", "emptyDir": {}}],
    }


def _with(change: dict[str, Any], container: dict[str, Any] | None = None) -> dict[str, Any]:
    pod = _restricted_pod()
    pod.update(change)
    if container:
        pod["containers"][0]["securityContext"].update(container)
    return pod


def test_a_pod_that_meets_restricted_has_no_violation_at_either_level() -> None:
    assert podsecurity.check_pod(_restricted_pod(), RESTRICTED) == []
    assert podsecurity.check_pod(_restricted_pod(), BASELINE) == []


@pytest.mark.parametrize("pod, path, message", [
    (_with({"hostNetwork": True}), "hostNetwork", "sharing the host's namespaces is forbidden"),
    (_with({"hostPID": True}), "hostPID", "sharing the host's namespaces is forbidden"),
    (_with({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}), "volumes[0].hostPath",
     "hostPath volumes are forbidden by Pod Security 'baseline' (they expose the node's files)"),
    (_with({}, {"privileged": True}), "containers[0].securityContext.privileged", "privileged containers are forbidden"),
    (_with({}, {"capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}),
     "containers[0].securityContext.capabilities.add[0]", "adding capability SYS_ADMIN is forbidden by Pod Security "
     "'baseline' (allowed: AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD, NET_BIND_SERVICE, SETFCAP, "
     "SETGID, SETPCAP, SETUID, SYS_CHROOT)"),
    (_with({}, {"procMount": "Unmasked"}), "containers[0].securityContext.procMount",
     "only the Default /proc mount type is allowed"),
    (_with({}, {"seccompProfile": {"type": "Unconfined"}}), "containers[0].securityContext.seccompProfile.type",
     "seccomp profile Unconfined is forbidden"),
    (_with({}, {"seLinuxOptions": {"type": "spc_t"}}), "containers[0].securityContext.seLinuxOptions.type",
     "SELinux type 'spc_t' is not allowed"),
    (_with({}, {"windowsOptions": {"hostProcess": True}}),
     "containers[0].securityContext.windowsOptions.hostProcess", "Windows HostProcess containers are forbidden"),
    (_with({"securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"},
                                "sysctls": [{"name": "kernel.msgmax", "value": "1"}]}}),
     "securityContext.sysctls[0].name", "sysctl 'kernel.msgmax' is not a safe sysctl"),
])
def test_baseline_rules_reject_at_both_levels(pod: dict[str, Any], path: str, message: str) -> None:
    assert podsecurity.check_pod(pod, BASELINE) == [(path, message)]
    assert (path, message.replace("'baseline'", "'restricted'").replace(
        "AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD, NET_BIND_SERVICE, SETFCAP, SETGID, SETPCAP, "
        "SETUID, SYS_CHROOT", "NET_BIND_SERVICE")) in podsecurity.check_pod(pod, RESTRICTED)


def test_host_ports_and_apparmor_unconfined_are_rejected() -> None:
    pod = _restricted_pod()
    pod["containers"][0]["ports"] = [{"containerPort": 53, "hostPort": 53}]
    annotations = {"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}
    assert podsecurity.check_pod(pod, BASELINE, annotations) == [
        ("metadata.annotations.container.apparmor.security.beta.kubernetes.io/c", "AppArmor profile unconfined is forbidden"),
        ("containers[0].ports[0].hostPort", "host ports are forbidden")]


@pytest.mark.parametrize("pod, path", [
    (_with({}, {"allowPrivilegeEscalation": True}), "containers[0].securityContext.allowPrivilegeEscalation"),
    (_with({}, {"capabilities": {}}), "containers[0].securityContext.capabilities.drop"),
    (_with({"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}),
     "containers[0].securityContext.runAsNonRoot"),
    (_with({}, {"runAsNonRoot": False}), "containers[0].securityContext.runAsNonRoot"),
    (_with({"securityContext": {"runAsNonRoot": True}}), "containers[0].securityContext.seccompProfile.type"),
    (_with({}, {"runAsUser": 0}), "containers[0].securityContext.runAsUser"),
    (_with({"volumes": [{"name": "n", "nfs": {"server": "x", "path": "/"}}]}), "volumes[0].nfs"),
    (_with({}, {"capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}}), "containers[0].securityContext.capabilities.add[0]"),
])
def test_restricted_rules_reject_only_at_restricted(pod: dict[str, Any], path: str) -> None:
    assert podsecurity.check_pod(pod, BASELINE) == []
    assert [p for p, _ in podsecurity.check_pod(pod, RESTRICTED)] == [path]


def test_restricted_accepts_container_level_settings_instead_of_the_pods() -> None:
    pod = _restricted_pod()
    del pod["securityContext"]
    pod["containers"][0]["securityContext"].update({"runAsNonRoot": True, "seccompProfile": {"type": "Localhost"},
                                                    "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}})
    assert podsecurity.check_pod(pod, RESTRICTED) == []
    pod["initContainers"] = [copy.deepcopy(pod["containers"][0]) | {"securityContext": {}}]
    assert {p.split(".")[0] for p, _ in podsecurity.check_pod(pod, RESTRICTED)} == {"initContainers[0]"}


def test_generated_deployments_meet_restricted() -> None:
    state = desired.build(load_dir(SAMPLE))
    deployments = [o for o in state.objects if o.key.kind == "Deployment"]
    assert len(deployments) == 2
    for obj in deployments:
        template = obj.body["spec"]["template"]
        assert podsecurity.check_pod(template["spec"], RESTRICTED, template["metadata"].get("annotations")) == []
        pod = template["spec"]
        assert pod["automountServiceAccountToken"] is False
        for c in pod["containers"]:
            assert c["securityContext"]["readOnlyRootFilesystem"] is True
            assert set(c["resources"]) == {"requests", "limits"}
    account = state.object("ServiceAccount", "dns-system", "bind9")
    assert account is not None and account.body["automountServiceAccountToken"] is False


def test_the_checker_bites_on_a_pod_without_a_security_context() -> None:
    state = desired.build(load_dir(SAMPLE))
    obj = state.object("Deployment", "dns-system", "dns-primary-0")
    assert obj is not None
    pod = copy.deepcopy(obj.body["spec"]["template"]["spec"])
    del pod["securityContext"]
    for c in pod["containers"]:
        del c["securityContext"]
    found = {p for p, _ in podsecurity.check_pod(pod, RESTRICTED)}
    assert {"containers[0].securityContext.allowPrivilegeEscalation", "containers[1].securityContext.runAsNonRoot",
            "containers[1].securityContext.capabilities.drop", "containers[0].securityContext.seccompProfile.type"} <= found


def test_named_listens_on_unprivileged_ports_that_the_service_maps_to_53() -> None:
    state = desired.build(load_dir(SAMPLE))
    conf = state.object("ConfigMap", "dns-system", "dns-primary-0-config")
    service = state.object("Service", "dns-system", "dns-primary-0")
    deploy = state.object("Deployment", "dns-system", "dns-primary-0")
    assert conf is not None and service is not None and deploy is not None
    text = conf.body["data"]["named.conf"]
    assert "listen-on port 5353 { any; };" in text and "controls { inet 127.0.0.1 port 8953 " in text
    assert [(p["port"], p["targetPort"], p["protocol"]) for p in service.body["spec"]["ports"]] == [
        (53, 5353, "UDP"), (53, 5353, "TCP"), (8080, 8080, "TCP")]
    bind9, bindcar = deploy.body["spec"]["template"]["spec"]["containers"]
    assert [p["containerPort"] for p in bind9["ports"]] == [5353, 5353, 8953]
    assert {"name": "RNDC_SERVER", "value": "127.0.0.1:8953"} in bindcar["env"]


def test_resources_default_and_a_cr_replaces_them(repo: Repo) -> None:
    repo.add("c.yaml", HEAD + """kind: Bind9Cluster
metadata: {name: dns, namespace: dns-system}
spec:
  resources: {requests: {cpu: 200m, memory: 256Mi}}
  secondary: {replicas: 0}
---
""" + HEAD + """kind: Bind9Instance
metadata: {name: own, namespace: dns-system}
spec:
  clusterRef: dns
  role: secondary
  resources: {limits: {memory: 1Gi}}
  bindcarConfig: {resources: {requests: {cpu: 10m}}}
""")
    state = desired.build(load_dir(repo.root))

    def resources(name: str) -> list[dict[str, Any]]:
        obj = state.object("Deployment", "dns-system", name)
        assert obj is not None
        return [c["resources"] for c in obj.body["spec"]["template"]["spec"]["containers"]]

    assert resources("dns-primary-0") == [{"requests": {"cpu": "200m", "memory": "256Mi"}},
                                          workloads.BINDCAR_RESOURCES]
    assert resources("own") == [{"limits": {"memory": "1Gi"}}, {"requests": {"cpu": "10m"}}]
    sample = desired.build(load_dir(SAMPLE)).object("Deployment", "dns-system", "dns-primary-0")
    assert sample is not None
    assert [c["resources"] for c in sample.body["spec"]["template"]["spec"]["containers"]] == [
        {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
        {"requests": {"cpu": "50m", "memory": "32Mi"}, "limits": {"cpu": "250m", "memory": "128Mi"}}]
