"""A CI job as GitHub Actions and GitLab CI run one, for the repository's own CI kit (action.yml,
templates/gitlab/bindy-agent-plan.yml): a pull request in a real Git remote, the job's shallow clone of
its head, and the steps or script of the kit run by bash with the variables the CI sets.

Only what cannot run here is left out: `uses:` steps of the Action (actions/setup-python: this
machine's python3 is the one they would set up) and the forge's API (tests/support/forgeapi.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
import shutil
import subprocess
from typing import Any

import yaml

from tests.conftest import ROOT, SAMPLE
from tests.support.gitremote import GitRemote

SPARE_ZONE = """\
apiVersion: bindy.firestoned.io/v1beta1
kind: DNSZone
metadata: {name: spare-com, namespace: dns-system}
spec:
  zoneName: spare.com
  soaRecord: {primaryNs: ns1.spare.com., adminEmail: admin.spare.com., serial: 1, refresh: 3600, retry: 600,
              expire: 604800, negativeTtl: 300}
"""
BAD = "apiVersion: bindy.firestoned.io/v1beta1\nkind: ARecord\nmetadata: {name: a, namespace: dns-system}\nspec: {}\n"


def source_copy(dest: pathlib.Path) -> pathlib.Path:
    """This repository's files as a checkout of it has them (tracked and new files; nothing ignored)."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


@dataclasses.dataclass
class PullRequest:
    """origin: main holds the sample repository under dns/; the branch `feature` changes an address, adds
    a record and a zone that selects no server (a warning)."""

    remote: GitRemote
    base: str
    head: str

    @classmethod
    def make(cls, tmp: pathlib.Path) -> PullRequest:
        git = GitRemote(tmp)
        shutil.copytree(SAMPLE, git.work / "dns")
        base = git.commit("the sample", {})
        git.cmd("push", "-q", "origin", "main")
        git.cmd("checkout", "-q", "-b", "feature")
        web = git.work / "dns" / "records" / "example-com" / "web.yaml"
        head = git.commit("feature", {
            "dns/records/example-com/web.yaml": web.read_text().replace("    - 192.0.2.10\n", "    - 192.0.2.20\n"),
            "dns/zones/spare.yaml": SPARE_ZONE})
        git.cmd("push", "-q", "origin", "feature")
        return cls(git, base, head)

    def push(self, message: str, files: dict[str, str | None]) -> str:
        self.head = self.remote.commit(message, files)
        self.remote.cmd("push", "-q", "origin", "feature")
        return self.head

    def shallow_clone(self, dest: pathlib.Path) -> pathlib.Path:
        """The job's checkout: the head of the pull request, one commit deep (`git clone --depth 1`)."""
        subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", "feature", self.remote.url, str(dest)],
                       check=True, capture_output=True)
        shallow = subprocess.run(["git", "-C", str(dest), "rev-parse", "--is-shallow-repository"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        assert shallow == "true"
        return dest


def job_environment(tmp: pathlib.Path, **variables: str) -> dict[str, str]:
    """A CI runner's environment: this machine's PATH, HOME (its pip cache) and pip settings; no variable of
    the agent's, nor of a venv; `variables` on top."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "PIP_CONFIG_FILE", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "SSL_CERT_FILE",
            "REQUESTS_CA_BUNDLE", "PYENV_ROOT", "PYENV_VERSION")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    env["TMPDIR"] = str(tmp)
    return {**env, **variables}


@dataclasses.dataclass
class StepRun:
    name: str
    returncode: int
    stdout: str
    stderr: str


@dataclasses.dataclass
class ActionRun:
    steps: list[StepRun]
    outputs: dict[str, str]
    summary: str

    @property
    def last(self) -> StepRun:
        return self.steps[-1]


_EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


def _expand(text: str, context: dict[str, str]) -> str:
    def value(found: re.Match[str]) -> str:
        name = found.group(1)
        assert name in context, f"action.yml uses ${{{{ {name} }}}}, which the test does not provide"
        return context[name]
    return _EXPRESSION.sub(value, text)


def _read_outputs(path: pathlib.Path) -> dict[str, str]:
    found: dict[str, str] = {}
    lines = path.read_text().splitlines() if path.exists() else []
    while lines:
        line = lines.pop(0)
        if "<<" in line and "=" not in line.split("<<")[0]:
            name, delimiter = line.split("<<", 1)
            value = []
            while lines and lines[0] != delimiter:
                value.append(lines.pop(0))
            lines.pop(0)
            found[name] = "\n".join(value)
        elif "=" in line:
            name, _, text = line.partition("=")
            found[name] = text
    path.write_text("")
    return found


def run_action(action: pathlib.Path, workspace: pathlib.Path, runner: pathlib.Path, *, inputs: dict[str, str],
               token: str, env: dict[str, str]) -> ActionRun:
    """The composite action's steps, as the runner runs them: each `run:` step by bash -eo pipefail in the
    workspace, with its env: expanded; GITHUB_PATH, GITHUB_OUTPUT and the job summary carried along."""
    spec = yaml.safe_load((action / "action.yml").read_text())
    github = {"github.token": token, "github.action_path": str(action)}
    given = {**{f"inputs.{k}": _expand(str(v.get("default", "")), github) for k, v in spec["inputs"].items()},
             **{f"inputs.{k}": v for k, v in inputs.items()}}
    context = {**given, **github}
    files = {name: runner / name.lower() for name in ("GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_ENV",
                                                       "GITHUB_STEP_SUMMARY")}
    for path in files.values():
        path.write_text("")
    base = {**env, **{k: str(v) for k, v in files.items()}, "RUNNER_TEMP": str(runner),
            "GITHUB_ACTION_PATH": str(action), "GITHUB_WORKSPACE": str(workspace)}
    path_entries: list[str] = []
    steps, outputs = [], {}
    for step in spec["runs"]["steps"]:
        if "uses" in step:
            assert step["uses"].startswith("actions/setup-python@"), step  # the only step the test cannot run
            continue
        assert "if" not in step, step
        step_env = {**base, **{k: _expand(str(v), context) for k, v in step.get("env", {}).items()}}
        step_env["PATH"] = os.pathsep.join([*reversed(path_entries), base["PATH"]])
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", _expand(step["run"], context)],
                              cwd=workspace, env=step_env, capture_output=True, text=True, timeout=900)
        steps.append(StepRun(step["name"], done.returncode, done.stdout, done.stderr))
        path_entries += [line for line in files["GITHUB_PATH"].read_text().splitlines() if line]
        files["GITHUB_PATH"].write_text("")
        for name, value in _read_outputs(files["GITHUB_OUTPUT"]).items():
            outputs[f"steps.{step.get('id', '')}.outputs.{name}"] = value
        if done.returncode != 0:
            break
    declared = {name: _expand(str(o["value"]), {**context, **outputs}) if all(
        m in outputs for m in _EXPRESSION.findall(str(o["value"]))) else "" for name, o in spec["outputs"].items()}
    return ActionRun(steps, declared, files["GITHUB_STEP_SUMMARY"].read_text())


def github_event(runner: pathlib.Path, number: int, base: str, head: str) -> pathlib.Path:
    path = runner / "event.json"
    path.write_text(json.dumps({"action": "synchronize", "number": number, "pull_request": {
        "number": number, "base": {"sha": base, "ref": "main"}, "head": {"sha": head, "ref": "feature"}}}))
    return path


def gitlab_job(template: pathlib.Path, name: str) -> dict[str, Any]:
    """The job `name` of a GitLab CI template, its global variables under "variables" unless it sets them."""
    doc = yaml.safe_load(template.read_text())
    job = dict(doc[name])
    job["variables"] = {**doc.get("variables", {}), **job.get("variables", {})}
    return job


def run_gitlab_script(job: dict[str, Any], workspace: pathlib.Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The job's before_script and script, as the runner's shell runs them: one bash -eo pipefail, in the
    project directory, with the job's variables under the pipeline's."""
    script = "\n".join([*job.get("before_script", []), *job["script"]])
    variables = {k: str(v) for k, v in job["variables"].items()}
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=workspace,
                          env={**variables, **env}, capture_output=True, text=True, timeout=900)
