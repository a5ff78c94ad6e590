"""Kubernetes Pod Security Standards (baseline, restricted) as pure checks on pod specs and volumes.

Follows the field lists of https://kubernetes.io/docs/concepts/security/pod-security-standards/
(policy version "latest"): every check returns `(field path, message)` pairs, the path relative to
what it was given, so a caller can prefix the path of the object it came from.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

BASELINE, RESTRICTED = "baseline", "restricted"
LEVELS = (BASELINE, RESTRICTED)

BASELINE_CAPABILITIES = frozenset({"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID",
                                   "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID",
                                   "SETPCAP", "SETUID", "SYS_CHROOT"})
RESTRICTED_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})
RESTRICTED_VOLUMES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                                "persistentVolumeClaim", "projected", "secret"})
SAFE_SYSCTLS = frozenset({"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
                          "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies",
                          "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                          "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                          "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"})
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t",
                           "container_engine_t"})
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
APPARMOR_PREFIX = "container.apparmor.security.beta.kubernetes.io/"

Violation = tuple[str, str]


def volume_type(volume: dict[str, Any]) -> str | None:
    """The source type of a Volume ("emptyDir", "hostPath" ...), None if it names none or
    several."""
    types = [k for k in volume if k != "name"]
    return types[0] if len(types) == 1 else None


def check_volume(volume: dict[str, Any], level: str) -> list[Violation]:
    kind = volume_type(volume)
    if kind == "hostPath":
        return [("hostPath", f"hostPath volumes are forbidden by Pod Security {level!r} "
                             "(they expose the node's files)")]
    if level == RESTRICTED and kind not in RESTRICTED_VOLUMES:
        allowed = ", ".join(sorted(RESTRICTED_VOLUMES))
        return [(kind or "", f"volume type {kind!r} is not allowed by Pod Security 'restricted' "
                             f"(allowed: {allowed})")]
    return []


def _security_context(ctx: dict[str, Any], where: str, level: str) -> Iterator[Violation]:
    """The rules shared by pod- and container-level securityContext."""
    if (ctx.get("windowsOptions") or {}).get("hostProcess"):
        yield f"{where}.windowsOptions.hostProcess", "Windows HostProcess containers are forbidden"
    selinux = ctx.get("seLinuxOptions") or {}
    if selinux.get("type", "") not in SELINUX_TYPES:
        yield f"{where}.seLinuxOptions.type", f"SELinux type {selinux['type']!r} is not allowed"
    for field in ("user", "role"):
        if selinux.get(field):
            yield f"{where}.seLinuxOptions.{field}", f"a custom SELinux {field} is forbidden"
    seccomp = (ctx.get("seccompProfile") or {}).get("type")
    if seccomp == "Unconfined":
        yield f"{where}.seccompProfile.type", "seccomp profile Unconfined is forbidden"
    if (ctx.get("appArmorProfile") or {}).get("type") == "Unconfined":
        yield f"{where}.appArmorProfile.type", "AppArmor profile Unconfined is forbidden"
    if level == RESTRICTED and ctx.get("runAsUser") == 0:
        yield f"{where}.runAsUser", "must not be 0 (root) (Pod Security 'restricted')"


def _container(c: dict[str, Any], where: str, level: str,
               pod: dict[str, Any]) -> Iterator[Violation]:
    ctx = c.get("securityContext") or {}
    yield from _security_context(ctx, f"{where}.securityContext", level)
    yield from _baseline_container(c, ctx, where, level)
    if level == RESTRICTED:
        yield from _restricted_container(ctx, pod.get("securityContext") or {}, where)


def _baseline_container(c: dict[str, Any], ctx: dict[str, Any], where: str,
                        level: str) -> Iterator[Violation]:
    """A container's own rules of both levels: no privileges, host ports or added capabilities
    beyond the level's."""
    if ctx.get("privileged"):
        yield f"{where}.securityContext.privileged", "privileged containers are forbidden"
    if ctx.get("procMount", "Default") != "Default":
        yield f"{where}.securityContext.procMount", "only the Default /proc mount type is allowed"
    for i, port in enumerate(c.get("ports") or []):
        if port.get("hostPort"):
            yield f"{where}.ports[{i}].hostPort", "host ports are forbidden"
    caps = ctx.get("capabilities") or {}
    allowed = RESTRICTED_CAPABILITIES if level == RESTRICTED else BASELINE_CAPABILITIES
    for i, cap in enumerate(caps.get("add") or []):
        if cap not in allowed:
            message = (f"adding capability {cap} is forbidden by Pod Security {level!r} "
                       f"(allowed: {', '.join(sorted(allowed))})")
            yield f"{where}.securityContext.capabilities.add[{i}]", message


def _restricted_container(ctx: dict[str, Any], pod_ctx: dict[str, Any],
                          where: str) -> Iterator[Violation]:
    """What 'restricted' asks of a container besides: capabilities dropped, no escalation, not
    root, a confined seccomp profile (its own or the pod's)."""
    where = f"{where}.securityContext"
    if "ALL" not in ((ctx.get("capabilities") or {}).get("drop") or []):
        yield f"{where}.capabilities.drop", "must drop ALL capabilities (Pod Security 'restricted')"
    if ctx.get("allowPrivilegeEscalation") is not False:
        yield f"{where}.allowPrivilegeEscalation", "must be false (Pod Security 'restricted')"
    if not ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot")):
        yield (f"{where}.runAsNonRoot", "must be true here or in the pod's securityContext "
               "(Pod Security 'restricted')")
    seccomp = (ctx.get("seccompProfile") or pod_ctx.get("seccompProfile") or {}).get("type")
    if seccomp not in ("RuntimeDefault", "Localhost"):
        yield (f"{where}.seccompProfile.type", "must be RuntimeDefault or Localhost here or in "
               "the pod's securityContext (Pod Security 'restricted')")


def check_pod(pod: dict[str, Any], level: str,
              annotations: dict[str, str] | None = None) -> list[Violation]:
    """Every violation of `level` in a PodSpec (and its pod's annotations, for AppArmor)."""
    out: list[Violation] = []
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(field):
            out.append((field, "sharing the host's namespaces is forbidden"))
    ctx = pod.get("securityContext") or {}
    out += _security_context(ctx, "securityContext", level)
    for i, sysctl in enumerate(ctx.get("sysctls") or []):
        if sysctl.get("name") not in SAFE_SYSCTLS:
            out.append((f"securityContext.sysctls[{i}].name",
                        f"sysctl {sysctl.get('name')!r} is not a safe sysctl"))
    for i, volume in enumerate(pod.get("volumes") or []):
        out += [(f"volumes[{i}]" + (f".{p}" if p else ""), m)
                for p, m in check_volume(volume, level)]
    for key, value in (annotations or {}).items():
        if key.startswith(APPARMOR_PREFIX) and value == "unconfined":
            out.append((f"metadata.annotations.{key}", "AppArmor profile unconfined is forbidden"))
    for field in CONTAINER_LISTS:
        for i, c in enumerate(pod.get(field) or []):
            out += _container(c, f"{field}[{i}]", level, pod)
    return out
