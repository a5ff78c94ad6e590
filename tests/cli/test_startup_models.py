"""`bindy-agent validate` as a pre-commit hook starts it: a kind's models, dnspython's record types, the
safety gate and the plan are loaded only by a repository that needs them, and pydantic does not search the
installed distributions for plugins.

Measured in bench/cli_startup_bench.py, never timed here: these tests check, in a fresh process, which
modules a command line loaded, and that what is loaded late is still what a repository gets."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

from agent.model import recordtypes
from tests.support.documents import ZONE

ROOT = pathlib.Path(__file__).resolve().parents[2]


RECORD = """\
apiVersion: bindy.firestoned.io/v1beta1
kind: TXTRecord
metadata: {name: spf, namespace: dns-system}
spec: {zone: example.com, name: "@", text: ["v=spf1 -all"]}
"""


CLUSTER = """\
apiVersion: bindy.firestoned.io/v1beta1
kind: Bind9Cluster
metadata: {name: dns, namespace: dns-system}
spec: {version: "9.18", primary: {replicas: 1}}
"""


LATE = ("agent.model.infra", "agent.model.records", "agent.desired.recorddata", "dns.rdtypes.ANY.TXT",
        "dns.rdtypes.IN.A", *(f"agent.model.recordtypes.{m}" for m in recordtypes.BUILT_IN))
NEVER_FOR_VALIDATE = ("agent.gate.safety", "agent.plan", "agent.model.ownership", "logging", "difflib")


def _validate(repo: pathlib.Path) -> tuple[int, str, set[str]]:
    """(exit status, stderr, every module loaded) of `bindy-agent validate REPO` in a fresh process."""
    code = ("import json, sys\n"
            "from agent import cli\n"
            "try:\n    status = cli.main(sys.argv[1:])\n"
            "except SystemExit as exit_:\n    status = exit_.code or 0\n"
            "print(json.dumps([status, sorted(sys.modules)]), file=sys.__stdout__)\n")
    done = subprocess.run([sys.executable, "-c", code, "validate", str(repo)], capture_output=True, text=True,
                          cwd=ROOT, check=False, timeout=120)
    status, names = json.loads(done.stdout.strip().splitlines()[-1])
    return int(status), done.stderr, set(names)


def _repo(tmp_path: pathlib.Path, *documents: str) -> pathlib.Path:
    for i, text in enumerate(documents):
        (tmp_path / f"{i}.yaml").write_text(text)
    return tmp_path


def test_a_repository_of_one_zone_loads_no_other_kind_nor_the_gate_of_a_sync(tmp_path: pathlib.Path) -> None:
    status, err, loaded = _validate(_repo(tmp_path, ZONE))
    assert status == 0, err
    assert f"{tmp_path}: 1 objects in 1 files: valid (1 warnings)" in err
    assert "agent.model.zone" in loaded
    assert not loaded & {*LATE, *NEVER_FOR_VALIDATE}, loaded & {*LATE, *NEVER_FOR_VALIDATE}


def test_records_and_infrastructure_load_their_models_when_the_repository_has_them(tmp_path: pathlib.Path) -> None:
    status, err, loaded = _validate(_repo(tmp_path, ZONE, RECORD, CLUSTER))
    assert status == 0, err
    assert f"{tmp_path}: 3 objects in 3 files: valid" in err
    assert {"agent.model.records", "agent.model.infra", "agent.desired.recorddata", "dns.rdtypes.ANY.TXT",
            "agent.model.recordtypes.txt"} <= loaded
    assert not loaded & set(NEVER_FOR_VALIDATE)
    # only the record types the repository holds: one TXT record defines no other record kind's model
    assert not loaded & {f"agent.model.recordtypes.{m}" for m in recordtypes.BUILT_IN if m != "txt"}


def test_a_record_loaded_late_is_still_checked(tmp_path: pathlib.Path) -> None:
    """The record types come with the first record: a bad value is still an error, with its field."""
    bad = RECORD.replace('text: ["v=spf1 -all"]', 'text: ["a\\u0001b"]')
    status, err, _ = _validate(_repo(tmp_path, ZONE, bad))
    assert status == 1
    assert "1.yaml:4: TXTRecord/dns-system/spf: spec.text[0]: contains a control character" in err


def test_no_distribution_is_searched_for_pydantic_plugins() -> None:
    """Building a model's validator reads no package metadata (pydantic's plugin search did, through
    importlib.metadata: a fifth of a one-file `validate`)."""
    code = ("import sys\n"
            "from agent.model import zone\n"
            "zone.DNSZone.model_rebuild()\n"
            "print('importlib.metadata' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True,
                          timeout=120)
    assert done.stdout.strip() == "False", done.stderr
