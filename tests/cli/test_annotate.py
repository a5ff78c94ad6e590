"""`validate` and `plan --error-format github|gitlab`: problems as the CI shows them on the files - GitHub's
workflow commands (escaped as the runner unescapes them), GitLab's Code Quality report - named by the path
the CI knows the file by (relative to the checkout, or inside the repository for a revision read from Git)."""

from __future__ import annotations

import json
import pathlib
import shutil

from tests.conftest import SAMPLE
from tests.support import clirun
from tests.support.gitremote import GitRemote

BAD = "apiVersion: bindy.firestoned.io/v1beta1\nkind: ARecord\nmetadata: {name: a, namespace: dns-system}\nspec: {}\n"
ODD = ("apiVersion: bindy.firestoned.io/v1beta1\nkind: TXTRecord\nmetadata: {name: \"t%1,x:y\", namespace: dns-system}\n"
       "spec: {name: t, text: [x], ttl: -1}\n")


def _checkout(tmp_path: pathlib.Path) -> pathlib.Path:
    shutil.copytree(SAMPLE, tmp_path / "dns")
    (tmp_path / "dns" / "records" / "bad.yaml").write_text(BAD)
    return tmp_path


def test_validate_writes_github_workflow_commands_instead_of_lines(tmp_path: pathlib.Path) -> None:
    done = clirun.main("validate", "dns", "--error-format", "github", cwd=_checkout(tmp_path))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "::error file=dns/records/bad.yaml,line=4,title=bindy-agent%3A ARecord/dns-system/a::ARecord/dns-system/a: "
        "spec.ipv4Addresses: required field is missing",
        "::error file=dns/records/bad.yaml,line=4,title=bindy-agent%3A ARecord/dns-system/a::ARecord/dns-system/a: "
        "spec.name: required field is missing",
        "dns: 27 objects in 10 files: invalid: 2 errors, 0 warnings"]


def test_a_workflow_command_cannot_be_broken_by_what_a_file_holds(tmp_path: pathlib.Path) -> None:
    (tmp_path / "odd.yaml").write_text(ODD)
    done = clirun.main("validate", ".", "--error-format", "github", cwd=tmp_path)
    commands = [line for line in done.stderr.splitlines() if line.startswith("::")]
    title = "title=bindy-agent%3A TXTRecord/dns-system/t%251%2Cx%3Ay::TXTRecord/dns-system/t%251,x:y: "
    assert [line.split(",", 2)[:2] for line in commands] == [["::error file=odd.yaml", "line=3"],
                                                             ["::error file=odd.yaml", "line=4"]], commands
    assert all(title in line for line in commands), commands


def test_validate_and_plan_write_gitlabs_code_quality_report(tmp_path: pathlib.Path) -> None:
    root = _checkout(tmp_path)
    done = clirun.main("validate", "dns", "--error-format", "gitlab", "--error-report", "cq.json", cwd=root)
    assert done.returncode == 1 and "dns/records/bad.yaml:4: ARecord/dns-system/a: spec.name:" in done.stderr
    report = json.loads((root / "cq.json").read_text())
    assert [(i["location"], i["severity"], i["description"]) for i in report] == [
        ({"path": "dns/records/bad.yaml", "lines": {"begin": 4}}, "major",
         "ARecord/dns-system/a: spec.ipv4Addresses: required field is missing"),
        ({"path": "dns/records/bad.yaml", "lines": {"begin": 4}}, "major",
         "ARecord/dns-system/a: spec.name: required field is missing")]
    assert len({i["fingerprint"] for i in report}) == 2
    (root / "dns" / "records" / "bad.yaml").unlink()
    planned = clirun.main("plan", "dns", "--error-format", "gitlab", cwd=root)
    assert planned.returncode == 0 and json.loads((root / "gl-code-quality-report.json").read_text()) == []


def test_a_delta_names_the_files_of_a_revision_by_their_path_in_the_repository(tmp_path: pathlib.Path) -> None:
    git = GitRemote(tmp_path)
    shutil.copytree(SAMPLE, git.work / "dns")
    git.commit("base", {})
    git.commit("head", {"dns/records/bad.yaml": BAD})
    done = clirun.main("plan", "--base", "HEAD~1", "--head", "HEAD", "--path", "dns", "--error-format", "github",
                       cwd=git.work)
    assert done.returncode == 1
    assert "::error file=dns/records/bad.yaml,line=4,title=bindy-agent%3A ARecord/dns-system/a::" in done.stderr
