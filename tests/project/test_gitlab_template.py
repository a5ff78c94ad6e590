"""The GitLab CI template (templates/gitlab/bindy-agent-plan.yml) as a merge request pipeline runs its job:
a shallow clone of the merge request's head, the job's script run by bash with GitLab's variables,
bindy-agent installed as the template installs it outside the agent's image, the plan as one note on the
merge request (a local stand-in for GitLab's notes API), updated in place on the next push, and the
problems in the Code Quality report the job declares."""

from __future__ import annotations

import json
import pathlib
import subprocess
import tomllib

import pytest

from tests.conftest import ROOT
from tests.support import cijob
from tests.support.forgeapi import ForgeApi

TEMPLATE = ROOT / "templates" / "gitlab" / "bindy-agent-plan.yml"
TOKEN = "glpat-test-token-0123456789"
MARKER = "<!-- bindy-agent ci-plan: dns -->"


@pytest.fixture
def gitlab() -> ForgeApi:
    api = ForgeApi("gitlab", TOKEN, "42", 5).start()
    yield api  # type: ignore[misc]
    api.stop()


def _pipeline(tmp: pathlib.Path, pr: cijob.PullRequest, api: ForgeApi, source: pathlib.Path, run: int,
              **variables: str) -> tuple[subprocess.CompletedProcess[str], pathlib.Path]:
    workspace = pr.shallow_clone(tmp / f"project-{run}")
    env = cijob.job_environment(tmp, GITLAB_CI="true", CI_PIPELINE_SOURCE="merge_request_event",
                                CI_PROJECT_DIR=str(workspace), CI_PROJECT_ID="42", CI_API_V4_URL=api.url,
                                CI_PROJECT_URL="https://gitlab.example/acme/dns",
                                CI_MERGE_REQUEST_IID="5", CI_MERGE_REQUEST_DIFF_BASE_SHA=pr.base,
                                CI_MERGE_REQUEST_TARGET_BRANCH_NAME="main",
                                BINDY_PLAN_DIR="dns", BINDY_PLAN_INSTALL=str(source), **variables)
    return cijob.run_gitlab_script(cijob.gitlab_job(TEMPLATE, "bindy-agent-plan"), workspace, env), workspace


def test_the_template_runs_for_merge_requests_in_the_agents_image() -> None:
    job = cijob.gitlab_job(TEMPLATE, "bindy-agent-plan")
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert job["image"] == {"name": f"ghcr.io/bindy-gitops/bindy-agent:{version}", "entrypoint": [""]}
    assert job["artifacts"] == {"when": "always", "reports": {"codequality": "gl-code-quality-report.json"}}


def test_the_template_posts_one_note_and_updates_it_on_the_next_push(tmp_path: pathlib.Path, gitlab: ForgeApi) -> None:
    pr = cijob.PullRequest.make(tmp_path / "git")
    source = cijob.source_copy(tmp_path / "bindy-agent")

    first, workspace = _pipeline(tmp_path, pr, gitlab, source, 1, GITLAB_TOKEN=TOKEN)
    assert first.returncode == 0, first.stderr[-3000:]
    assert f"fetched the base {pr.base} from origin" in first.stderr
    [note] = gitlab.comments
    created = note.body
    assert created.startswith(MARKER + "\n## bindy-agent plan\n") and "| `~` | `ARecord dns-system/www` |" in created
    assert "(https://gitlab.example/acme/dns/-/blob/" in created  # each change linked to its file and line
    report = json.loads((workspace / "gl-code-quality-report.json").read_text())
    assert [(i["location"], i["severity"], i["check_name"]) for i in report] == [
        ({"path": "dns/zones/spare.yaml", "lines": {"begin": 4}}, "minor", "bindy-agent/warning")]
    assert report[0]["description"].startswith("DNSZone/dns-system/spare-com: spec: selects no Bind9Instance")

    pr.push("a record without a name", {"dns/records/bad.yaml": cijob.BAD})
    second, workspace = _pipeline(tmp_path, pr, gitlab, source, 2, GITLAB_TOKEN=TOKEN)
    assert second.returncode == 1, second.stderr[-3000:]
    [updated] = gitlab.comments
    assert updated.id == note.id and updated.body != created and "**Not planned: the head has 2 errors.**" in updated.body
    assert ("PUT", f"/api/v4/projects/42/merge_requests/5/notes/{note.id}") in gitlab.requests
    report = json.loads((workspace / "gl-code-quality-report.json").read_text())
    errors = [(i["location"]["path"], i["location"]["lines"]["begin"], i["description"]) for i in report
              if i["severity"] == "major"]
    assert errors == [("dns/records/bad.yaml", 4, "ARecord/dns-system/a: spec.ipv4Addresses: required field is missing"),
                      ("dns/records/bad.yaml", 4, "ARecord/dns-system/a: spec.name: required field is missing")]
    assert len({i["fingerprint"] for i in report}) == len(report)

    untokened, _ = _pipeline(tmp_path, pr, gitlab, source, 3)  # no GITLAB_TOKEN: printed, not posted
    assert "no GITLAB_TOKEN: the plan is not posted" in untokened.stdout
    assert untokened.stdout.count(MARKER) == 1 and len(gitlab.comments) == 1
