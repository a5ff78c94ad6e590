"""One key set per signed zone on real `named`: the key Secret a revision asks for, filled as the
agent fills it, laid out as the kubelet mounts it, copied into each server's key directory by the
init container's own command - then two primaries ("pods") sign the zone with the same keys, serve
the same DNSKEY set, `dnssec-verify` passes on both, `delv` validates answers from each against the
DS the DNSZone status would show (also BIND's own `dnssec-dsfromkey`), and a server started afresh
in place of one of them (a replaced pod) serves the same keys and still validates. Against the real
kube-apiserver: the zone's only primary instance leaves Git, then the zone itself, then both come
back - the agent keeps the key Secret throughout, and the returning primary serves the DNSKEY set
the first one served."""

from __future__ import annotations

import base64
import pathlib
import subprocess
import textwrap
from typing import Any

import dns.query
import dns.rdataclass
import dns.rdatatype
import dns.zone
from kubernetes import client

from agent.clients.kubeapi import KubeApi
from agent.desired import hierarchy, namedconf, zonekeys
from agent.desired.rrsets import RRset, build
from agent.outcome import dnssecstatus
from agent.reconcile import zonekeys as making
from tests.conftest import Repo, load_dir
from tests.support import agentrun
from tests.support import bind as bind_support
from tests.support.dnssecworld import ZONE, _cluster
from tests.support.procs import require, until

ZONE_NAME = "example.net."


def _pod_volume(desired: hierarchy.Desired, filled: dict[str, str], root: pathlib.Path,
                deployment: tuple[str, str] = ("dns", "dns-primary-0")) -> str:
    """The key volume of `deployment`'s pod (namespace, name) as the kubelet projects it under `root`;
    the init command."""
    pod = desired.object("Deployment", *deployment).body["spec"]["template"]["spec"]
    [volume] = [v for v in pod["volumes"] if v["name"] == zonekeys.VOLUME]
    for source in volume["projected"]["sources"]:
        for item in source["secret"]["items"]:
            (root / item["path"]).parent.mkdir(parents=True, exist_ok=True)
            (root / item["path"]).write_text(filled[item["key"]])
    [init] = pod["initContainers"]
    assert init["command"][:2] == ["sh", "-c"]
    return str(init["command"][2])


def _start(tmp: pathlib.Path, name: str, address: str, keys: bind_support.Keys, policy: str, init: str,
           mount: pathlib.Path) -> bind_support.BindServer:
    """A primary "pod": the init container's copy into its (empty) key directory, then named, then the
    zone added as the zone API adds it."""
    server = bind_support.BindServer(tmp / name, address, keys, name, policy)
    script = init.replace(zonekeys.MOUNT, str(mount)).replace(namedconf.KEY_DIRECTORY, str(server.dir))
    subprocess.run(["sh", "-c", script], check=True)
    server.start()
    (server.dir / "example.net.zone").write_text(
        "$TTL 300\n@ SOA ns1.example.net. hostmaster.example.net. 1 3600 600 604800 300\n@ NS ns1.example.net.\n"
        "ns1 A 192.0.2.53\nwww A 192.0.2.80\n")
    server.rndc("addzone", "example.net", '{ type primary; file "example.net.zone"; dnssec-policy "shared"; '
                "inline-signing yes; };")
    return server


def _served(server: bind_support.BindServer) -> tuple[dns.zone.Zone, dict[tuple[str, str], RRset]]:
    xfr = dns.zone.from_xfr(dns.query.xfr(server.address, ZONE_NAME, port=server.port, lifetime=10,
                                          relativize=False), relativize=False)
    apex = xfr.get_node(ZONE_NAME)
    out = {}
    for rdataset in apex.rdatasets if apex is not None else []:
        rtype = dns.rdatatype.to_text(rdataset.rdtype)
        out[(ZONE_NAME, rtype)] = build(ZONE_NAME, ZONE_NAME, rtype, rdataset.ttl, [r.to_text() for r in rdataset])
    return xfr, out


def _signed(server: bind_support.BindServer) -> bool:
    try:
        xfr, apex = _served(server)
    except Exception:
        return False
    www = xfr.get_node("www.example.net.")
    return (ZONE_NAME, "DNSKEY") in apex and www is not None and www.get_rdataset(
        dns.rdataclass.IN, dns.rdatatype.RRSIG, dns.rdatatype.A) is not None


def _verify(server: bind_support.BindServer, tmp: pathlib.Path) -> None:
    xfr, _ = _served(server)
    path = tmp / f"{server.name}.axfr"
    xfr.to_file(str(path), relativize=False)
    done = subprocess.run([require("dnssec-verify", component="dnssec-verify (bind9-utils)"), "-o", ZONE_NAME,
                           str(path)], capture_output=True, text=True)
    assert done.returncode == 0 and "Zone fully signed" in done.stdout + done.stderr, done.stdout + done.stderr


def _delv(server: bind_support.BindServer, ds: list[str], tmp: pathlib.Path) -> str:
    """delv's answer for www, validated from the DS records given as the only trust anchor."""
    anchors = tmp / "anchors.conf"
    anchors.write_text("trust-anchors {\n" + "".join(
        f'  {f[0]} static-ds {f[3]} {f[4]} {f[5]} "{f[6]}";\n' for f in (d.split() for d in ds)) + "};\n")
    done = subprocess.run([require("delv", component="delv (bind9-dnsutils)"), f"@{server.address}", "-p",
                           str(server.port), "-a", str(anchors), f"+root={ZONE_NAME}", "www.example.net", "A"],
                          capture_output=True, text=True, timeout=30)
    return done.stdout + done.stderr


def test_two_primaries_and_a_replacement_sign_with_the_zones_one_key_set(tmp_path: pathlib.Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.add("cluster.yaml", _cluster("{enabled: true, policy: shared, nsec3: true, nsec3Iterations: 0}"))
    repo.add("zone.yaml", ZONE + "  dnssecPolicy: shared\n")
    desired = hierarchy.build(load_dir(repo.root))
    assert [str(p) for p in desired.problems] == []
    secret = desired.object("Secret", "dns", "secure-dnssec-keys")
    assert secret is not None
    filled = making.fill(secret.body["stringData"], None)  # what the agent writes when it creates the Secret
    mount = tmp_path / "mount"
    init = _pod_volume(desired, filled, mount)
    conf = desired.object("ConfigMap", "dns", "dns-primary-0-config").body["data"]["named.conf"]
    policy = conf[conf.index('dnssec-policy "shared"'):]
    keys = bind_support.Keys()
    servers = [_start(tmp_path, name, address, keys, policy, init, mount)
               for name, address in (("pod-a", "127.0.0.61"), ("pod-b", "127.0.0.62"))]
    try:
        for server in servers:
            until(f"{server.name} serving the signed zone", lambda s=server: _signed(s), 30)
        served = [_served(s)[1] for s in servers]
        assert served[0][(ZONE_NAME, "DNSKEY")].rdatas == served[1][(ZONE_NAME, "DNSKEY")].rdatas
        tags = {int(filled[f"{role}-file"].rsplit("+", 1)[1]) for role in ("ksk", "zsk")}
        dnskeys = served[0][(ZONE_NAME, "DNSKEY")].rdatas
        assert len(dnskeys) == 2 and {dnssecstatus.dns.dnssec.key_id(dnssecstatus.dns.rdata.from_text(
            "IN", "DNSKEY", k)) for k in dnskeys} == tags  # the Secret's keys, no key of the servers' own
        zone = desired.zones[0]
        shown = dnssecstatus.status(zone, served)
        assert shown is not None and shown["signed"] is True and len(shown["dsRecords"]) == 1
        xfr, _ = _served(servers[0])
        xfr.to_file(str(tmp_path / "keys.zone"), relativize=False)
        bind_ds = subprocess.run(["dnssec-dsfromkey", "-2", "-f", str(tmp_path / "keys.zone"), ZONE_NAME],
                                 capture_output=True, text=True, check=True).stdout.split()
        assert shown["dsRecords"][0].split() == bind_ds
        for server in servers:
            _verify(server, tmp_path)
            answer = _delv(server, shown["dsRecords"], tmp_path)
            assert "; fully validated" in answer and "192.0.2.80" in answer, answer
        # pod-b is replaced: a new server, an empty directory, the same Secret
        servers[1].stop()
        servers[1] = _start(tmp_path, "pod-b-new", "127.0.0.63", keys, policy, init, mount)
        until("the replacement serving the signed zone", lambda: _signed(servers[1]), 30)
        assert _served(servers[1])[1][(ZONE_NAME, "DNSKEY")].rdatas == dnskeys
        answer = _delv(servers[1], shown["dsRecords"], tmp_path)
        assert "; fully validated" in answer, answer
        assert dnssecstatus.differs(zone, [(s.name, _served(s)[1]) for s in servers]) == ""
    finally:
        for server in servers:
            server.stop()


def _instance(namespace: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: bindy.firestoned.io/v1beta1
        kind: Bind9Instance
        metadata: {{name: kept-0, namespace: {namespace}}}
        spec: {{clusterRef: dns, role: primary}}
        """)


def _keys(core: client.CoreV1Api, namespace: str) -> tuple[str, dict[str, str]]:
    """The zone's key Secret as the cluster has it: its uid and its data."""
    secret = core.read_namespaced_secret("secure-dnssec-keys", namespace)
    return secret.metadata.uid, {k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()}


def _serve(tmp: pathlib.Path, name: str, address: str, repo: Repo, keys: dict[str, str], namespace: str) -> Any:
    """A pod of kept-0 as the revision in `repo` makes it, its key volume from the Secret's `keys`:
    the DNSKEY set it serves once it has signed the zone."""
    desired = hierarchy.build(load_dir(repo.root))
    mount = tmp / f"{name}-mount"
    init = _pod_volume(desired, keys, mount, (namespace, "kept-0"))
    conf = desired.object("ConfigMap", namespace, "kept-0-config").body["data"]["named.conf"]
    server = _start(tmp, name, address, bind_support.Keys(), conf[conf.index('dnssec-policy "shared"'):], init, mount)
    try:
        until(f"{name} serving the signed zone", lambda: _signed(server), 30)
        return _served(server)[1][(ZONE_NAME, "DNSKEY")].rdatas
    finally:
        server.stop()


def test_the_keys_outlive_the_zones_primary_and_the_zone_leaving_git_and_come_back_with_them(
        tmp_path: pathlib.Path, kube_client: Any, namespace: str) -> None:
    repo = Repo(tmp_path / "repo")
    cluster = _cluster("{enabled: true, policy: shared, nsec3: true, nsec3Iterations: 0}", primaries=0, secondaries=0)
    repo.add("cluster.yaml", cluster.replace("namespace: dns}", f"namespace: {namespace}}}"))
    repo.add("kept.yaml", _instance(namespace))
    zone = (ZONE + "  dnssecPolicy: shared\n").replace("namespace: dns}", f"namespace: {namespace}}}")
    repo.add("zone.yaml", zone)
    api, core = KubeApi(kube_client), client.CoreV1Api(kube_client)
    apps = client.AppsV1Api(kube_client)

    def sync(what: str) -> None:
        done = agentrun.sync_dir(repo.root, state=tmp_path / "state", kube_api=api, agent_namespace=namespace,
                                 allow_prune=True)
        assert done.outcome == "applied" and done.kube is not None and not done.kube.failed, (what, done.message)

    sync("a signed zone on kept-0")
    uid, made = _keys(core, namespace)
    assert made["zone"] == ZONE_NAME and made["roles"] == "ksk zsk"
    first = _serve(tmp_path, "pod-a", "127.0.0.64", repo, made, namespace)

    (repo.root / "kept.yaml").unlink()  # the zone's only primary leaves Git: nothing signs the zone now
    sync("kept-0 leaves Git")
    assert "kept-0" not in {d.metadata.name for d in apps.list_namespaced_deployment(namespace).items}
    assert _keys(core, namespace) == (uid, made)
    (repo.root / "zone.yaml").unlink()  # the zone too (a mistake, undone below)
    sync("the zone leaves Git")
    sync("a later run")
    assert _keys(core, namespace) == (uid, made)

    repo.add("kept.yaml", _instance(namespace))
    repo.add("zone.yaml", zone)
    sync("both back in Git")
    assert _keys(core, namespace) == (uid, made)  # the same Secret, the same keys
    again = _serve(tmp_path, "pod-b", "127.0.0.65", repo, _keys(core, namespace)[1], namespace)
    assert again == first, "the returning primary serves other keys: the DS published for the zone no longer matches"


def test_keys_named_keeps_in_its_key_directory_win_over_the_secrets(tmp_path: pathlib.Path) -> None:
    """A pod on a claim where named signed the zone with keys of its own (a rollover's successors, or
    keys from before the agent kept the zone's): the init container copies none of the Secret's, and
    named restarted serves the keys it had."""
    repo = Repo(tmp_path / "repo")
    repo.add("cluster.yaml", _cluster(primaries=1))
    repo.add("zone.yaml", ZONE + "  dnssecPolicy: shared\n")
    desired = hierarchy.build(load_dir(repo.root))
    secret = desired.object("Secret", "dns", "secure-dnssec-keys")
    assert secret is not None
    filled = making.fill(secret.body["stringData"], None)
    mount = tmp_path / "mount"
    init = _pod_volume(desired, filled, mount)
    conf = desired.object("ConfigMap", "dns", "dns-primary-0-config").body["data"]["named.conf"]
    server = _start(tmp_path, "claim", "127.0.0.66", bind_support.Keys(), conf[conf.index('dnssec-policy "shared"'):],
                    ":", mount)  # no copy: named makes the zone's keys itself
    try:
        until("named signing with keys of its own", lambda: _signed(server), 30)
        own = _served(server)[1][(ZONE_NAME, "DNSKEY")].rdatas
        server.stop()
        script = init.replace(zonekeys.MOUNT, str(mount)).replace(namedconf.KEY_DIRECTORY, str(server.dir))
        done = subprocess.run(["sh", "-c", script], check=True, capture_output=True, text=True)
        assert "the key directory has keys of its own" in done.stdout, done.stdout + done.stderr
        assert not [p for p in server.dir.iterdir() if p.name.startswith(filled["ksk-file"])]
        server.restart()
        until("named serving the zone again", lambda: _signed(server), 30)
        assert _served(server)[1][(ZONE_NAME, "DNSKEY")].rdatas == own
    finally:
        server.stop()
