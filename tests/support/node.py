"""A real single-node Kubernetes on this machine, for the e2e tests and `scripts/node`.

etcd + kube-apiserver + kube-controller-manager + kube-scheduler, containerd (runc, cgroupfs) with
a bridge + host-local CNI network, kubelet and kube-proxy (iptables mode), all started as root by
`Node.up()` and stopped by PID by `Node.down()`. The binaries come from scripts/install-test-deps
(Debian packages, kube binaries built from Debian's `kubernetes` 1.20.2 source), the images from
images/build (pause, bind9, zone-api, agent), imported into containerd's k8s.io namespace.

Layout (BINDY_AGENT_CACHE, default ~/.cache/bindy-agent):
    node/containerd/   containerd's root: the imported images, kept between nodes
    node/state/        everything of the running node, removed by down(): node.json (pids, ports,
                       token), kubeconfig, etcd data, certificates, containerd state and socket,
                       kubelet root
    node/logs/         each component's log and command line, of the last node started

Network: the bridge `bindy0` holds the node address 10.244.0.1/24 (the pods' gateway); pods get
10.244.0.2-254, Services 10.96.0.0/24. The API server listens on the node address only (pods reach
it through the `kubernetes` Service). Traffic never leaves the machine: the CNI bridge does not
masquerade, and a rule in iptables' raw table drops everything from the bridge that is not for a
pod, a Service or the node address; traffic *to* the pod and Service ranges never takes the default
route, even before the node is up or after it is down (a lingering agent, a test that asks a pod
address after teardown): `fence()` adds `unreachable` routes for both ranges (metric FENCE_METRIC)
before the bridge exists and never removes them (they go when the machine reboots); while the node
runs, the bridge's own routes for the same ranges have metric 0 and win. containerd pulls through a
proxy on a closed loopback port, so an image that was not built here fails at once ("connection
refused") and nothing is fetched (a registry on loopback, which Go never proxies, is the exception:
tests/support/registry.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pathlib
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

from tests.support.procs import CACHE, ComponentError, free_port

STATE = CACHE / "node" / "state"
LOGS = CACHE / "node" / "logs"  # the last node's logs, kept after down() for a failure's report
CONTAINERD_ROOT = CACHE / "node" / "containerd"
IMAGES = CACHE / "images"
KUBE_BIN = CACHE / "kube" / "bin"
CNI_BIN = pathlib.Path("/usr/lib/cni")
NODE_NAME = "bindy-node"
BRIDGE = "bindy0"
NODE_IP = "10.244.0.1"
POD_CIDR = "10.244.0.0/24"
SERVICE_CIDR = "10.96.0.0/24"
CLUSTER_DOMAIN = "cluster.local"
_CLOSED_PORT = 9  # discard: nothing listens on it here; proxies pointed at it refuse at once
RAW_CHAIN = "BINDY-NODE"
FENCE_METRIC = 4242  # the unreachable routes' metric: the bridge's routes (metric 0) win while it exists
# the kubelet 1.20 writes container logs here, whatever its root directory (a constant in its code)
POD_LOG_DIRS = (pathlib.Path("/var/log/pods"), pathlib.Path("/var/log/containers"))  # iptables -t raw: what pods may reach
REGISTRY = "localhost/bindy-e2e"  # images/build's names
IMAGE_NAMES = ("pause", "bind9", "zone-api", "agent")
# Components in start order; down() stops them in reverse.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "cluster-dns", "containerd",
              "kubelet", "kube-proxy")
# The names a user mirroring Bindy's images would give the local ones: Bindy's admission (and the
# agent's default allowed_registries) trust only these repositories for bind9 and bindcar. The tag
# is the local image's (its inputs' hash), prefixed with e2e-.
MIRRORS = {"bind9": "docker.io/internetsystemsconsortium/bind9", "zone-api": "ghcr.io/firestoned/bindcar"}
FIX_DEPS = "run scripts/install-test-deps (as root)"


def _log(msg: str) -> None:
    print(f"[node] {msg}", file=sys.stderr, flush=True)


def _run(argv: list[str], *, check: bool = True, component: str = "node", timeout: float = 120,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except FileNotFoundError as exc:
        raise ComponentError(f"{component}: `{argv[0]}` not found; {FIX_DEPS}") from exc
    if check and done.returncode != 0:
        raise ComponentError(f"{component}: `{' '.join(argv)}` failed ({done.returncode}):\n"
                             f"{done.stdout}{done.stderr}".rstrip())
    return done


def _binary(name: str, component: str | None = None) -> str:
    for candidate in (KUBE_BIN / name, pathlib.Path("/usr/bin") / name, pathlib.Path("/usr/sbin") / name):
        if candidate.exists():
            return str(candidate)
    found = shutil.which(name)
    if not found:
        raise ComponentError(f"{component or name}: `{name}` not found; {FIX_DEPS}")
    return found


def _component_env() -> dict[str, str]:
    """Every component's environment: HTTP(S) to anything but this node goes to a closed loopback
    port (nothing leaves the machine, e.g. kubelet's in-tree AWS credential provider would otherwise
    ask the EC2 metadata address 169.254.169.254 for credentials at start), and the AWS SDK is told
    not to use the metadata service at all."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "no_proxy")}
    closed = f"http://127.0.0.1:{_CLOSED_PORT}"
    env.update({"HTTP_PROXY": closed, "HTTPS_PROXY": closed, "http_proxy": closed, "https_proxy": closed,
                "NO_PROXY": f"127.0.0.1,localhost,{NODE_NAME},{NODE_IP},{POD_CIDR},{SERVICE_CIDR}",
                "no_proxy": f"127.0.0.1,localhost,{NODE_NAME},{NODE_IP},{POD_CIDR},{SERVICE_CIDR}",
                "AWS_EC2_METADATA_DISABLED": "true", "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"})
    return env


def _tail(path: pathlib.Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _cmdline(pid: int) -> list[str]:
    try:
        return pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def _processes() -> Iterator[tuple[int, list[str]]]:
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            cmd = _cmdline(int(entry.name))
            if cmd:
                yield int(entry.name), cmd


def _alive(pid: int, argv0: str) -> bool:
    """`pid` runs `argv0` (not a recycled pid, not a zombie)."""
    cmd = _cmdline(pid)
    if not cmd or cmd[0] != argv0:
        return False
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


class Node:
    """The node described by STATE/node.json. `up()` reuses a running one."""

    def __init__(self, state: pathlib.Path = STATE) -> None:
        self.state = state
        self.info_path = state / "node.json"
        self.info: dict[str, Any] = {}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}  # the ones this process started
        self.log_dir = LOGS
        # name -> the reference imported by up(): a rebuild meanwhile (images/build rewrites the .ref
        # file) does not change the images this session's pods use
        self.pinned: dict[str, str] = {}
        if self.info_path.exists():
            with contextlib.suppress(ValueError, OSError):
                self.info = json.loads(self.info_path.read_text())

    # --- what callers use ---------------------------------------------------------------------
    @staticmethod
    @contextlib.contextmanager
    def lock() -> Iterator[None]:
        """One user of the node at a time: `scripts/node up/down`, or a whole e2e pytest session
        (a second one waits for the first to end)."""
        path = CACHE / "node" / "lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                _log(f"waiting for the node's other user to finish ({path})")
                fcntl.flock(fh, fcntl.LOCK_EX)
            yield


    @property
    def kubeconfig(self) -> pathlib.Path:
        return self.state / "kubeconfig"

    @property
    def address(self) -> str:
        return NODE_IP

    @property
    def api_url(self) -> str:
        return str(self.info["api_url"])

    @property
    def token(self) -> str:
        return str(self.info["token"])

    @property
    def ca(self) -> pathlib.Path:
        return self.state / "certs" / "apiserver.crt"

    def image(self, name: str) -> str:
        """The reference of a locally built image (images/build), e.g. image("bind9"): the one up()
        imported, else the newest built."""
        if name in self.pinned:
            return self.pinned[name]
        ref = IMAGES / f"{name}.ref"
        if not ref.exists():
            raise ComponentError(f"image {name}: not built ({ref} missing); run images/build {name} "
                                 f"(scripts/install-test-deps builds them all)")
        return ref.read_text().strip()

    def running(self) -> bool:
        pids = self.info.get("pids") or {}
        if set(pids) != set(COMPONENTS):
            return False
        if not all(_alive(p["pid"], p["argv0"]) for p in pids.values()):
            return False
        try:
            return self._api_ready() and self._node_ready()
        except Exception:
            return False

    def logs(self, lines: int = 30) -> dict[str, str]:
        return {name: _tail(self.log_dir / f"{name}.log", lines) for name in COMPONENTS
                if (self.log_dir / f"{name}.log").exists()}

    # --- up -----------------------------------------------------------------------------------
    def up(self, *, timeout: float = 180) -> bool:
        """Starts the node unless it runs already; True when it started it."""
        if os.geteuid() != 0:
            raise ComponentError("node: needs root (containerd, kubelet, network namespaces, iptables)")
        if self.running():
            self._import_images()
            return False
        if self.info or self.state.exists():
            _log("a previous node left state behind: cleaning it up first")
            self.down()
        started = time.monotonic()
        self._preflight()
        self.state.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.log_dir, ignore_errors=True)
        self.log_dir.mkdir(parents=True)
        self.info = {"pids": {}, "token": secrets.token_hex(16), "started": time.time()}
        self.info["pod_logs_before"] = sorted(str(e) for d in POD_LOG_DIRS if d.is_dir() for e in d.iterdir())
        try:
            self._network()
            self._control_plane()
            self._cluster_dns()
            self._containerd()
            self._import_images()
            self._kubelet()
            self._kube_proxy()
            self._wait(self._node_ready, timeout, "kubelet", "the node Ready")
        except BaseException:
            self._save()
            _log(f"up failed: stopping what it started (logs stay in {self.log_dir})")
            self.down()
            raise
        self.info["up_seconds"] = round(time.monotonic() - started, 1)
        self._save()
        _log(f"up in {self.info['up_seconds']} s")
        return True

    def _save(self) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        tmp = self.info_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.info, indent=1))
        tmp.replace(self.info_path)

    def _preflight(self) -> None:
        for name, component in (("etcd", "etcd"), ("kube-apiserver", "kube-apiserver"),
                                ("kube-controller-manager", "kube-controller-manager"),
                                ("kube-scheduler", "kube-scheduler"), ("kubelet", "kubelet"),
                                ("kube-proxy", "kube-proxy"), ("containerd", "containerd"), ("runc", "runc"),
                                ("ctr", "containerd (ctr)"), ("iptables", "kube-proxy (iptables)"),
                                ("ip", "iproute2"), ("openssl", "openssl")):
            _binary(name, component)
        for plugin in ("bridge", "host-local", "loopback"):
            if not (CNI_BIN / plugin).exists():
                raise ComponentError(f"CNI: plugin {CNI_BIN / plugin} missing (containernetworking-plugins); "
                                     f"{FIX_DEPS}")
        for name in IMAGE_NAMES:
            self.image(name)
        cgroups = pathlib.Path("/proc/self/cgroup").read_text()
        for controller in ("cpu", "cpuacct", "cpuset", "memory", "pids"):
            if not any(controller in line.split(":")[1].split(",") for line in cgroups.splitlines() if ":" in line):
                raise ComponentError(f"kubelet: cgroup v1 controller {controller!r} is not mounted; kubelet's "
                                     f"cgroupfs driver needs cpu, cpuacct, cpuset, memory and pids")

    def _start(self, name: str, argv: list[str], *, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - the child owns it
        try:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, env={**_component_env(), **(env or {})})
        finally:
            log.close()
        self.procs[name] = proc
        self.info["pids"][name] = {"pid": proc.pid, "argv0": argv[0]}
        (self.log_dir / f"{name}.cmd").write_text(" ".join(argv) + "\n")
        self._save()
        return proc

    def _wait(self, check: Callable[[], bool], timeout: float, component: str, what: str) -> float:
        start = time.monotonic()
        proc = self.procs.get(component)
        log = self.log_dir / f"{component}.log"
        while time.monotonic() - start < timeout:
            if proc and proc.poll() is not None:
                raise ComponentError(f"{component} exited ({proc.returncode}) before {what}; its log ({log}) "
                                     f"ends:\n{_tail(log)}")
            try:
                if check():
                    return time.monotonic() - start
            except Exception:
                pass
            time.sleep(0.2)
        raise ComponentError(f"{component}: not {what} after {timeout:.0f} s; its log ({log}) ends:\n{_tail(log)}")

    # network: the bridge with the node address, and what pods may reach
    def _network(self) -> None:
        fence()
        bridge()
        forward = pathlib.Path("/proc/sys/net/ipv4/ip_forward")
        self.info["ip_forward"] = forward.read_text().strip()
        # Service traffic is DNATed on the node and forwarded back onto the bridge
        forward.write_text("1\n")
        nf = pathlib.Path("/proc/sys/net/bridge/bridge-nf-call-iptables")
        if nf.exists():
            self.info["bridge_nf_call_iptables"] = nf.read_text().strip()
            nf.write_text("1\n")  # pod -> Service -> pod on the same bridge goes through kube-proxy's rules
        self._raw_rules(add=True)

    def _raw_rules(self, *, add: bool) -> None:
        ipt = "iptables"
        _run([ipt, "-t", "raw", "-D", "PREROUTING", "-i", BRIDGE, "-j", RAW_CHAIN], check=False)
        _run([ipt, "-t", "raw", "-F", RAW_CHAIN], check=False)
        _run([ipt, "-t", "raw", "-X", RAW_CHAIN], check=False)
        if not add:
            return
        rules = [["-N", RAW_CHAIN],
                 ["-A", RAW_CHAIN, "-d", POD_CIDR, "-j", "RETURN"],
                 ["-A", RAW_CHAIN, "-d", SERVICE_CIDR, "-j", "RETURN"],
                 ["-A", RAW_CHAIN, "-d", "255.255.255.255", "-j", "RETURN"],
                 ["-A", RAW_CHAIN, "-j", "DROP"],
                 ["-I", "PREROUTING", "-i", BRIDGE, "-j", RAW_CHAIN]]
        for rule in rules:
            _run([ipt, "-t", "raw", *rule], component="network (iptables raw table)")

    # control plane
    def _control_plane(self) -> None:
        st = self.state
        (st / "certs").mkdir(exist_ok=True)
        client, peer = free_port(), free_port()
        self._start("etcd", [
            _binary("etcd"), "--data-dir", str(st / "etcd"), "--name", "node",
            "--listen-client-urls", f"http://127.0.0.1:{client}", "--advertise-client-urls", f"http://127.0.0.1:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"node=http://127.0.0.1:{peer}", "--log-level", "warn", "--logger", "zap",
            "--unsafe-no-fsync"])
        self._wait(lambda: urllib.request.urlopen(f"http://127.0.0.1:{client}/health", timeout=1).status == 200,
                   30, "etcd", "healthy")
        sa_key = st / "certs" / "sa.key"
        _run(["openssl", "genrsa", "-out", str(sa_key), "2048"], component="openssl")
        (st / "tokens.csv").write_text(f'{self.info["token"]},admin,admin,"system:masters"\n')
        port = free_port(NODE_IP)
        self.info["api_url"] = f"https://{NODE_IP}:{port}"
        self._start("kube-apiserver", [
            _binary("kube-apiserver"), "--etcd-servers", f"http://127.0.0.1:{client}",
            "--bind-address", NODE_IP, "--advertise-address", NODE_IP, "--secure-port", str(port),
            "--cert-dir", str(st / "certs"), "--token-auth-file", str(st / "tokens.csv"),
            "--authorization-mode", "Node,RBAC",
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-account-key-file", str(sa_key), "--service-account-signing-key-file", str(sa_key),
            "--service-cluster-ip-range", SERVICE_CIDR, "--allow-privileged",
            "--kubelet-preferred-address-types", "InternalIP", "--enable-priority-and-fairness=false", "--v=1"])
        self._wait(self._api_ready, 90, "kube-apiserver", "ready (/readyz)")
        self._write_kubeconfig()
        self._start("kube-controller-manager", [
            _binary("kube-controller-manager"), "--kubeconfig", str(self.kubeconfig),
            "--service-account-private-key-file", str(sa_key), "--root-ca-file", str(self.ca),
            "--bind-address", "127.0.0.1", "--secure-port", "0", "--port", "0", "--leader-elect=false", "--v=1"])
        self._start("kube-scheduler", [
            _binary("kube-scheduler"), "--kubeconfig", str(self.kubeconfig), "--leader-elect=false",
            "--bind-address", "127.0.0.1", "--secure-port", "0", "--port", "0", "--v=1"])

    def _api(self, path: str, *, method: str = "GET", body: Any = None) -> Any:
        ctx = ssl.create_default_context(cafile=str(self.ca))
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{self.api_url}{path}", data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5, context=ctx) as resp:
            text = resp.read()
            return json.loads(text) if resp.headers.get_content_type() == "application/json" else text.decode()

    def _api_ready(self) -> bool:
        if not self.ca.exists():
            return False
        self._api("/readyz")
        self._api("/api/v1/namespaces/default")
        return True

    def _node_ready(self) -> bool:
        node = self._api(f"/api/v1/nodes/{NODE_NAME}")
        return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))

    def _write_kubeconfig(self) -> None:
        self.kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "node",
            "clusters": [{"name": "node", "cluster": {"server": self.api_url, "certificate-authority": str(self.ca)}}],
            "users": [{"name": "admin", "user": {"token": self.info["token"]}}],
            "contexts": [{"name": "node", "context": {"cluster": "node", "user": "admin"}}],
        }, indent=1))
        self.kubeconfig.chmod(0o600)

    # containerd
    @property
    def containerd_sock(self) -> pathlib.Path:
        return self.state / "containerd" / "containerd.sock"

    def ctr(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return _run([_binary("ctr"), "--address", str(self.containerd_sock), "-n", "k8s.io", *args],
                    check=check, component="containerd (ctr)", timeout=timeout)

    @property
    def registry_hosts(self) -> pathlib.Path:
        """containerd's registry config_path (one hosts.toml per registry host)."""
        return self.state / "containerd" / "certs.d"

    def _containerd(self) -> None:
        st = self.state
        (st / "containerd").mkdir(exist_ok=True)
        self.registry_hosts.mkdir(exist_ok=True)
        (st / "cni").mkdir(exist_ok=True)
        CONTAINERD_ROOT.mkdir(parents=True, exist_ok=True)
        (st / "cni" / "10-bindy.conflist").write_text(json.dumps({
            "cniVersion": "0.4.0", "name": "bindy", "plugins": [{
                "type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": False, "hairpinMode": True,
                "ipam": {"type": "host-local", "dataDir": str(st / "cni-ipam"),
                         "ranges": [[{"subnet": POD_CIDR, "gateway": NODE_IP}]],
                         "routes": [{"dst": "0.0.0.0/0"}]}}]}, indent=1))
        (st / "containerd.toml").write_text(f"""version = 2
root = "{CONTAINERD_ROOT}"
state = "{st / 'containerd' / 'state'}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "{self.containerd_sock}"
[ttrpc]
  address = "{st / 'containerd' / 'containerd.sock.ttrpc'}"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "{st / 'containerd' / 'opt'}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{self.image('pause')}"
  enable_selinux = false
  disable_apparmor = true
  # This machine withholds CAP_SYS_RESOURCE even from root: lowering an oom_score_adj (the kubelet
  # gives pod sandboxes -998) is refused, and runc fails with "failed to update
  # /proc/self/oom_score_adj: Permission denied". Clamp to containerd's own score instead.
  restrict_oom_score_adj = {str(self._no_sys_resource()).lower()}
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "{_binary('runc')}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{st / 'cni'}"
    max_conf_num = 1
  # how containerd reaches a registry (<host>/hosts.toml: its address, its CA): read at every pull, so
  # a test adds and removes a host while the node runs (tests/support/registry.py)
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{self.registry_hosts}"
""")
        # No image is ever pulled: registries are reached only through the closed proxy port.
        self._start("containerd", [_binary("containerd"), "--config", str(st / "containerd.toml")],
                    env={"NO_PROXY": "", "no_proxy": ""})
        self._wait(lambda: self.ctr("version", check=False, timeout=5).returncode == 0, 30, "containerd",
                   "serving on its socket")

    @staticmethod
    def _no_sys_resource() -> bool:
        for line in pathlib.Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return not int(line.split()[1], 16) & (1 << 24)  # CAP_SYS_RESOURCE
        return False

    def mirror(self, name: str) -> str:
        """The local image `name` under the name Bindy trusts (MIRRORS), e.g. mirror("bind9") ==
        "docker.io/internetsystemsconsortium/bind9:e2e-<hash>"; tagged in containerd by up()."""
        return f"{MIRRORS[name]}:e2e-{self.image(name).rpartition(':')[2]}"

    def _cluster_dns(self) -> None:
        """Service names for the pods' resolver (tests/support/clusterdns.py: why not CoreDNS)."""
        self._start("cluster-dns", [sys.executable, "-m", "tests.support.clusterdns", "--kubeconfig",
                                    str(self.kubeconfig), "--listen", NODE_IP, "--domain", CLUSTER_DOMAIN],
                    env={"PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[2])})
        probe = f"kubernetes.default.svc.{CLUSTER_DOMAIN}"
        self._wait(lambda: _run(["dig", f"@{NODE_IP}", "+short", "+time=1", "+tries=1", probe], check=False,
                                timeout=5).stdout.strip() == "10.96.0.1", 30, "cluster-dns", f"answering {probe}")

    def _import_images(self) -> None:
        listed = set(self.ctr("images", "ls", "-q").stdout.split())
        self.pinned = {}
        for name in IMAGE_NAMES:
            ref = self.pinned[name] = self.image(name)
            if ref in listed:
                continue
            tarball = next(iter(sorted(IMAGES.glob(f"{name}-{ref.rpartition(':')[2]}.tar"))), None)
            if tarball is None:
                raise ComponentError(f"image {name}: {ref} has no tarball in {IMAGES}; run images/build {name}")
            started = time.monotonic()
            self.ctr("images", "import", str(tarball), timeout=600)
            _log(f"imported {ref} in {time.monotonic() - started:.1f} s")
        for name in MIRRORS:
            if self.mirror(name) not in listed:
                self.ctr("images", "tag", "--force", self.image(name), self.mirror(name))
        # earlier builds of the images (their containers went with the last node), and the CRI's
        # `sha256:<id>` names of them
        current = {self.image(name) for name in IMAGE_NAMES} | {self.mirror(name) for name in MIRRORS}
        ours = ("sha256:", f"{REGISTRY}/", *(f"{repo}:e2e-" for repo in MIRRORS.values()))
        rows = [line.split()[:3] for line in self.ctr("images", "ls").stdout.splitlines()[1:] if line.strip()]
        keep = {digest for ref, _, digest in rows if ref in current or not ref.startswith(ours)}
        stale = [ref for ref, _, digest in rows if ref.startswith(ours) and ref not in current
                 and digest not in keep]
        if stale:
            self.ctr("images", "rm", *stale, check=False)

    # kubelet and kube-proxy
    def _kubelet(self) -> None:
        st = self.state
        root = st / "kubelet"
        root.mkdir(exist_ok=True)
        # pods get the node's cluster DNS (clusterDNS) and no other name server: nothing outside this
        # machine is reachable
        (st / "resolv.conf").write_text("options ndots:1\n")
        kport, hport = free_port(NODE_IP), free_port()
        self.info["kubelet_port"] = kport
        (st / "kubelet.yaml").write_text(json.dumps({
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "address": NODE_IP, "port": kport, "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1", "healthzPort": hport,
            # the API server reaches the kubelet (logs, exec) without a client certificate; pods
            # are kept from the kubelet's port by the raw-table rule
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "cgroupDriver": "cgroupfs", "failSwapOn": False, "protectKernelDefaults": False,
            "makeIPTablesUtilChains": False,  # kube-proxy makes what it needs; down() removes its rules
            "clusterDomain": CLUSTER_DOMAIN, "clusterDNS": [NODE_IP], "resolvConf": str(st / "resolv.conf"),
            "staticPodPath": "", "serializeImagePulls": False, "maxPods": 100,
            "evictionHard": {"memory.available": "50Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                             "nodefs.inodesFree": "1%"},
            "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
            "volumeStatsAggPeriod": "0s", "syncFrequency": "10s", "fileCheckFrequency": "10s",
            "nodeStatusReportFrequency": "10s", "runtimeRequestTimeout": "2m",
        }, indent=1))
        self._raw_block_kubelet(kport)
        self._start("kubelet", [
            _binary("kubelet"), "--config", str(st / "kubelet.yaml"), "--kubeconfig", str(self.kubeconfig),
            "--container-runtime", "remote", "--container-runtime-endpoint", f"unix://{self.containerd_sock}",
            "--image-service-endpoint", f"unix://{self.containerd_sock}",
            "--root-dir", str(root), "--cert-dir", str(root / "pki"),
            "--volume-plugin-dir", str(root / "volume-plugins"),
            "--hostname-override", NODE_NAME, "--node-ip", NODE_IP, "--v=1"])

    def _raw_block_kubelet(self, port: int) -> None:
        _run(["iptables", "-t", "raw", "-I", RAW_CHAIN, "1", "-d", NODE_IP, "-p", "tcp", "--dport", str(port),
              "-j", "DROP"], component="network (iptables raw table)")
        _run(["iptables", "-t", "raw", "-I", RAW_CHAIN, "2", "-d", NODE_IP, "-j", "RETURN"],
             component="network (iptables raw table)")

    def _kube_proxy(self) -> None:
        st = self.state
        (st / "kube-proxy.yaml").write_text(json.dumps({
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(self.kubeconfig)}, "mode": "iptables",
            "clusterCIDR": POD_CIDR, "hostnameOverride": NODE_NAME, "bindAddress": NODE_IP,
            "healthzBindAddress": f"127.0.0.1:{free_port()}", "metricsBindAddress": f"127.0.0.1:{free_port()}",
            # leave the host's conntrack sysctls alone
            "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
        }, indent=1))
        self._start("kube-proxy", [_binary("kube-proxy"), "--config", str(st / "kube-proxy.yaml"), "--v=1"])

    # --- down ---------------------------------------------------------------------------------
    def down(self) -> None:
        """Stops every process up() started (by PID), removes the pods' containers, network
        namespaces and mounts, the bridge and the iptables rules, and the state directory."""
        pids = self.info.get("pids") or {}
        for name in ("kube-proxy", "kubelet", "kube-scheduler", "kube-controller-manager", "cluster-dns"):
            self._stop(name, pids.get(name))
        containerd_up = bool(pids.get("containerd")) and _alive(pids["containerd"]["pid"], pids["containerd"]["argv0"])
        netns: set[str] = set()
        if containerd_up:
            netns = self._remove_containers()
        self._stop("containerd", pids.get("containerd"))
        self._kill_orphan_shims()
        for name in ("kube-apiserver", "etcd"):
            self._stop(name, pids.get(name))
        for path in sorted(netns):
            _run(["umount", path], check=False)
            with contextlib.suppress(OSError):
                os.unlink(path)
        self._unmount_under(self.state, CONTAINERD_ROOT)
        kube_proxy = KUBE_BIN / "kube-proxy"
        if kube_proxy.exists():
            _run([str(kube_proxy), "--cleanup"], check=False)
        self._raw_rules(add=False)
        self._remove_kube_chains()
        self._remove_pod_logs()
        _run(["ip", "link", "del", BRIDGE], check=False)
        if "ip_forward" in self.info:
            pathlib.Path("/proc/sys/net/ipv4/ip_forward").write_text(self.info["ip_forward"] + "\n")
        if "bridge_nf_call_iptables" in self.info:
            with contextlib.suppress(OSError):
                pathlib.Path("/proc/sys/net/bridge/bridge-nf-call-iptables").write_text(
                    self.info["bridge_nf_call_iptables"] + "\n")
        if self.state.exists():
            shutil.rmtree(self.state, ignore_errors=True)
        self.info = {}

    @staticmethod
    def _remove_kube_chains() -> None:
        """What `kube-proxy --cleanup` leaves: the kubelet's chains (KUBE-FIREWALL, KUBE-MARK-*,
        the canaries) of a node started without makeIPTablesUtilChains: false. Nothing is removed
        while another kubelet or kube-proxy runs on this machine: the chains would be its own."""
        if any(pathlib.Path(cmd[0]).name in ("kubelet", "kube-proxy") for _, cmd in _processes()):
            return
        for table, chain in (("filter", "INPUT"), ("filter", "OUTPUT")):
            while _run(["iptables", "-t", table, "-D", chain, "-j", "KUBE-FIREWALL"], check=False).returncode == 0:
                pass
        for table in ("filter", "nat", "mangle"):
            listed = _run(["iptables", "-t", table, "-S"], check=False).stdout.split("\n")
            chains = [line.split()[1] for line in listed if line.startswith("-N KUBE-")]
            for chain in chains:
                _run(["iptables", "-t", table, "-F", chain], check=False)
            for chain in chains:
                _run(["iptables", "-t", table, "-X", chain], check=False)

    def _remove_pod_logs(self) -> None:
        """The logs the kubelet wrote outside the state directory, of pods of this node."""
        if "pod_logs_before" not in self.info or any(
                pathlib.Path(cmd[0]).name == "kubelet" for _, cmd in _processes()):
            return
        before = set(self.info["pod_logs_before"])
        for directory in POD_LOG_DIRS:
            for entry in directory.iterdir() if directory.is_dir() else ():
                if str(entry) in before:
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        entry.unlink()

    def _stop(self, name: str, entry: dict[str, Any] | None, timeout: float = 15) -> None:
        if not entry or not _alive(entry["pid"], entry["argv0"]):
            return
        pid = entry["pid"]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _alive(pid, entry["argv0"]):
            time.sleep(0.1)
        if _alive(pid, entry["argv0"]):
            _log(f"{name} (pid {pid}) ignored SIGTERM for {timeout:.0f} s: SIGKILL")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        if name in self.procs:
            self.procs.pop(name).wait(5)

    def _remove_containers(self) -> set[str]:
        """Kills and deletes every container of the k8s.io namespace; returns the pods' netns paths."""
        netns: set[str] = set()
        ids = self.ctr("containers", "ls", "-q", check=False).stdout.split()
        for cid in ids:
            info = self.ctr("containers", "info", cid, check=False)
            with contextlib.suppress(ValueError, KeyError, TypeError):
                for ns in json.loads(info.stdout)["Spec"]["linux"]["namespaces"]:
                    if ns.get("type") == "network" and ns.get("path", "").startswith("/var/run/netns/"):
                        netns.add(ns["path"])
            self.ctr("tasks", "kill", "-s", "SIGKILL", cid, check=False)
        for cid in ids:
            self.ctr("tasks", "delete", "-f", cid, check=False)
            self.ctr("containers", "delete", cid, check=False)
        return netns

    def _kill_orphan_shims(self) -> None:
        """containerd-shim-runc-v2 processes of this node's containerd (left when it was killed)."""
        marker = str(self.state / "containerd")
        for pid, cmd in _processes():
            if cmd[0].endswith("containerd-shim-runc-v2") and any(marker in a for a in cmd):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    @staticmethod
    def _unmount_under(*roots: pathlib.Path) -> None:
        def mounts() -> Iterator[str]:
            for line in pathlib.Path("/proc/self/mountinfo").read_text().splitlines():
                point = line.split()[4].replace("\\040", " ")
                if any(point == str(r) or point.startswith(f"{r}/") for r in roots):
                    yield point
        for point in sorted(set(mounts()), key=len, reverse=True):
            if _run(["umount", point], check=False).returncode != 0:
                _run(["umount", "-l", point], check=False)

    # --- status -------------------------------------------------------------------------------
    def describe(self) -> str:
        return f"KUBECONFIG={self.kubeconfig}\nNODE_ADDRESS={self.address}\n"


def bridge() -> None:
    """The bridge with the node address (the pods' range is its connected route), and the Service range
    routed to it: Service addresses are DNATed by kube-proxy, and the route must exist for a connection
    to one to start at all; a packet that misses kube-proxy's rules (before its first sync) goes to
    the bridge rather than out of the machine. down() deletes the bridge, and its routes with it."""
    if _run(["ip", "link", "show", BRIDGE], check=False).returncode != 0:
        _run(["ip", "link", "add", BRIDGE, "type", "bridge"], component="network (bridge)")
    _run(["ip", "addr", "replace", f"{NODE_IP}/24", "dev", BRIDGE], component="network (bridge)")
    _run(["ip", "link", "set", BRIDGE, "up"], component="network (bridge)")
    _run(["ip", "route", "replace", SERVICE_CIDR, "dev", BRIDGE, "src", NODE_IP], component="network (route)")


def fence() -> None:
    """`unreachable` routes for the pod and Service ranges (metric FENCE_METRIC), so that nothing sent to
    them ever takes the default route off the machine; idempotent, and kept after the node is down."""
    for cidr in (POD_CIDR, SERVICE_CIDR):
        _run(["ip", "route", "replace", "unreachable", cidr, "metric", str(FENCE_METRIC)],
             component="network (fence)")


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("up", "down", "status", "env", "fence"):
        print("usage: scripts/node up|down|status|env|fence", file=sys.stderr)
        return 2
    if argv[0] == "fence":  # no lock: the node's own routes are not touched
        try:
            fence()
        except ComponentError as exc:
            print(f"node: {exc}", file=sys.stderr)
            return 3
        return 0
    try:
        with Node.lock():
            return _main(Node(), argv[0])
    except ComponentError as exc:
        print(f"node: {exc}", file=sys.stderr)
        return 3


def _main(node: Node, verb: str) -> int:
    if verb == "up":
        if not node.up():
            _log("already up")
    elif verb == "down":
        node.down()
        _log("down")
        return 0
    elif verb == "status" and not node.running():
        print("node: not running", file=sys.stderr)
        return 1
    sys.stdout.write(node.describe())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
