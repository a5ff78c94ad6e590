"""Report documents shaped exactly as the orchestrator makes them (agent.outcome.report.Report.as_dict())."""

from __future__ import annotations

from typing import Any

from agent.model.problems import Origin, Problem
from agent.outcome import report

SHA = "3f2a9c1d0b7e" + "a" * 28


def _kube(action: str, name: str) -> dict[str, Any]:
    return {"action": action, "layer": "kubernetes", "target": {"kind": "Bind9Instance", "namespace": "dns",
                                                                "name": name}, "result": "applied"}


def report_doc(outcome: str, *, revision: str = SHA, created: int = 0, updated: int = 0, deleted: int = 0,
               rrsets: int = 0, errors: int = 0, failures: tuple[str, ...] = (), refusals: tuple[str, ...] = (),
               subject: str = "Add shop CNAME") -> dict[str, Any]:
    changes = ([_kube("create", f"new-{i}") for i in range(created)]
               + [_kube("update", f"changed-{i}") for i in range(updated)]
               + [_kube("delete", f"gone-{i}") for i in range(deleted)]
               + [{"action": "create", "layer": "records", "target": {"zone": "example.com", "name": f"r{i}",
                                                                       "type": "A"}, "result": "applied"}
                  for i in range(rrsets)])
    problems = [Problem(Origin("zones/example.com.yaml", 3 + i), "DNSZone/dns/example-com", "spec.soaRecord.serial",
                        "must be a positive integer") for i in range(errors)]
    commit = {"sha": revision, "author": "Ada <ada@example.com>", "subject": subject,
              "date": "2024-05-01T12:00:00+00:00"}
    return report.Report("run0123abcd", revision, outcome, commit, "2024-05-01T12:00:05Z", 2.4, changes, problems,
                         [], list(refusals), list(failures)).as_dict()
