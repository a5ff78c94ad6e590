"""The e2e node's cluster DNS: Service names (`<service>.<namespace>.svc.cluster.local`) answered
from the API server, for the pods' resolver (the kubelet's clusterDNS).

A real cluster runs CoreDNS (its `kubernetes` plugin) for this. No CoreDNS can be had on this
machine: Debian has no package of it, no container registry is reachable, and building it needs
Go modules from a proxy that is not reachable either. So the node answers the one thing pods ask
of it, the way CoreDNS does for ClusterIP Services: an A record with the Service's cluster IP
(headless Services: the ready addresses of its Endpoints), TTL 5; NXDOMAIN for a name in the
cluster domain that names no Service; REFUSED for anything else (pods reach nothing outside the
machine). UDP and TCP on the node's address, port 53. Started and stopped with the node
(tests/support/node.py), its log in the node's logs (`cluster-dns.log`).

    python -m tests.support.clusterdns --kubeconfig PATH --listen 10.244.0.1 [--domain cluster.local]
"""

from __future__ import annotations

import argparse
import json
import socket
import socketserver
import ssl
import struct
import sys
import threading
import urllib.error
import urllib.request
from typing import Any

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

TTL = 5


class Api:
    """GETs with the kubeconfig's token (the node's admin: it reads Services and Endpoints)."""

    def __init__(self, kubeconfig: str) -> None:
        with open(kubeconfig) as fh:
            cfg = json.load(fh)
        cluster = cfg["clusters"][0]["cluster"]
        self.server = cluster["server"]
        self.token = cfg["users"][0]["user"]["token"]
        self.ctx = ssl.create_default_context(cafile=cluster["certificate-authority"])

    def get(self, path: str) -> dict[str, Any] | None:
        req = urllib.request.Request(f"{self.server}{path}", headers={"Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(req, timeout=5, context=self.ctx) as resp:
                found: dict[str, Any] = json.loads(resp.read())
                return found
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise


class Resolver:
    def __init__(self, api: Api, domain: str) -> None:
        self.api = api
        self.domain = dns.name.from_text(f"svc.{domain}")

    def addresses(self, qname: dns.name.Name) -> list[str] | None:
        """The Service's addresses; None: no such Service (NXDOMAIN)."""
        labels = qname.relativize(self.domain).labels
        if len(labels) != 2:
            return None
        service, namespace = (label.decode().lower() for label in labels)
        found = self.api.get(f"/api/v1/namespaces/{namespace}/services/{service}")
        if found is None:
            return None
        cluster_ip = found.get("spec", {}).get("clusterIP")
        if cluster_ip and cluster_ip != "None":
            return [cluster_ip]
        endpoints = self.api.get(f"/api/v1/namespaces/{namespace}/endpoints/{service}") or {}
        return sorted({a["ip"] for s in endpoints.get("subsets") or [] for a in s.get("addresses") or []})

    def answer(self, wire: bytes) -> bytes | None:
        try:
            query = dns.message.from_wire(wire)
        except Exception:
            return None
        reply = dns.message.make_response(query)
        reply.flags |= dns.flags.AA
        if len(query.question) != 1:
            reply.set_rcode(dns.rcode.FORMERR)
            return reply.to_wire()
        question = query.question[0]
        if not question.name.is_subdomain(self.domain.parent()):
            reply.flags &= ~dns.flags.AA
            reply.set_rcode(dns.rcode.REFUSED)
            return reply.to_wire()
        try:
            found = self.addresses(question.name) if question.name.is_subdomain(self.domain) else None
        except (OSError, ValueError) as exc:
            print(f"cluster-dns: {question.name}: the API server did not answer: {exc}", file=sys.stderr, flush=True)
            reply.set_rcode(dns.rcode.SERVFAIL)
            return reply.to_wire()
        if found is None:
            reply.set_rcode(dns.rcode.NXDOMAIN)
        elif question.rdtype in (dns.rdatatype.A, dns.rdatatype.ANY) and found:
            reply.answer.append(dns.rrset.from_text_list(question.name, TTL, dns.rdataclass.IN, dns.rdatatype.A,
                                                         found))
        return reply.to_wire()


def serve(resolver: Resolver, host: str, port: int) -> None:
    class Udp(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            data, sock = self.request
            out = resolver.answer(data)
            if out is not None:
                sock.sendto(out, self.client_address)

    class Tcp(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            while True:
                head = self.rfile.read(2)
                if len(head) < 2:
                    return
                out = resolver.answer(self.rfile.read(struct.unpack("!H", head)[0]))
                if out is None:
                    return
                self.wfile.write(struct.pack("!H", len(out)) + out)

    class UdpServer(socketserver.ThreadingMixIn, socketserver.UDPServer):
        allow_reuse_address = True
        daemon_threads = True

    class TcpServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
        allow_reuse_address = True
        daemon_threads = True
        address_family = socket.AF_INET

    udp, tcp = UdpServer((host, port), Udp), TcpServer((host, port), Tcp)
    threading.Thread(target=tcp.serve_forever, daemon=True).start()
    print(f"cluster-dns: serving *.{resolver.domain} on {host}:{port}", file=sys.stderr, flush=True)
    udp.serve_forever()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="clusterdns")
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--listen", required=True)
    parser.add_argument("--port", type=int, default=53)
    parser.add_argument("--domain", default="cluster.local")
    args = parser.parse_args(argv)
    serve(Resolver(Api(args.kubeconfig), args.domain), args.listen, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
