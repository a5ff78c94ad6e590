"""The pre-commit hook (.pre-commit-hooks.yaml) as a user's repository runs it: `pre-commit try-repo`
installs this repository as pre-commit installs a hook (its own venv, `pip install .`), then runs
`bindy-agent validate` on a repository holding a good directory of CRs, then a bad file too."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

from tests.conftest import SAMPLE
from tests.support import cijob

PRE_COMMIT = pathlib.Path(sys.executable).parent / "pre-commit"


def _git(cwd: pathlib.Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


def _repository(path: pathlib.Path) -> pathlib.Path:
    _git(path, "init", "-q", "-b", "main")
    _git(path, "-c", "user.name=t", "-c", "user.email=t@example.com", "add", "-A")
    _git(path, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "files")
    return path


def test_the_hook_passes_a_good_repository_and_fails_a_bad_file_at_its_line(tmp_path: pathlib.Path) -> None:
    hooks = _repository(cijob.source_copy(tmp_path / "bindy-agent"))
    user = tmp_path / "user"
    shutil.copytree(SAMPLE, user / "dns")
    (user / ".pre-commit-config.yaml").write_text("repos: []\n")  # YAML that is not a CR: skipped, not an error
    _repository(user)
    env = cijob.job_environment(tmp_path, PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"))

    def try_repo() -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(PRE_COMMIT), "try-repo", str(hooks), "bindy-agent-validate", "--all-files"],
                              cwd=user, env=env, capture_output=True, text=True, timeout=900)

    good = try_repo()
    assert good.returncode == 0, good.stdout[-3000:] + good.stderr[-3000:]
    assert "bindy-agent validate" in good.stdout and "Passed" in good.stdout

    (user / "dns" / "records" / "bad.yaml").write_text(cijob.BAD)
    _git(user, "add", "dns/records/bad.yaml")
    bad = try_repo()
    assert bad.returncode == 1, bad.stdout[-3000:] + bad.stderr[-3000:]
    assert "Failed" in bad.stdout
    assert "dns/records/bad.yaml:4: ARecord/dns-system/a: spec.name: required field is missing" in bad.stdout
    assert ".: 27 objects in 10 files: invalid: 2 errors, 0 warnings" in bad.stdout
