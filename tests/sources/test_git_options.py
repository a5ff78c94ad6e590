"""An operator's value is never an option of git (agent/sources/git.py): a repository, branch or ref starting
with '-' is a usage error naming the flag or the setting, with advice for that flag, and GitSource refuses it."""

from __future__ import annotations

import pathlib

import pytest

from agent.errors import ConfigError
from agent.sources.git import GitSource
from tests.support import clirun, samplegit
from tests.support.gitremote import GitRemote

repo = samplegit.repo  # the fixture, shared


DELTA_ERROR = 1  # plan's error status (0: planned)


# -- an operator's value is never an option of git ---------------------------------------------
ATTACK = "--upload-pack=touch {mark}"


def _endpoints(tmp_path: pathlib.Path) -> str:
    path = tmp_path / "endpoints.yaml"
    path.write_text("instances: {}\n")
    return str(path)


@pytest.mark.parametrize("verb", ["sync-repo", "sync-branch", "sync-ref", "report", "report-branch", "plan"])
def test_a_git_value_starting_with_a_dash_is_a_usage_error(
        repo: GitRemote, tmp_path: pathlib.Path, verb: str) -> None:
    mark = tmp_path / "pwned"
    attack = ATTACK.format(mark=mark)
    common = ["--cache", str(tmp_path / "cache")]
    sync = ["sync", "--endpoints", _endpoints(tmp_path), "--state", str(tmp_path / "st"), *common]
    argv, status, flag = {
        "sync-repo": ([*sync, f"--repo={attack}"], 2, "--repo"),
        "sync-branch": ([*sync, "--repo", repo.url, f"--branch={attack}"], 2, "--branch"),
        "sync-ref": ([*sync, "--repo", repo.url, f"--ref={attack}"], 2, "--ref"),
        "report": (["report", f"--repo={attack}", *common], 2, "--repo"),
        "report-branch": (["report", "--repo", repo.url, f"--branch={attack}", *common], 2, "--branch"),
        "plan": (["plan", f"--repo={attack}", "--base", "main", "--head", "main", *common], DELTA_ERROR, "--repo"),
    }[verb]
    result = clirun.main(*argv)
    assert result.returncode == status, result.stderr
    assert f"argument {flag}: " in result.stderr and "starts with '-', which git would take for an option" in (
        result.stderr)
    assert not mark.exists()


@pytest.mark.parametrize("where", ["environment", "config file"])
def test_run_refuses_a_repo_setting_starting_with_a_dash(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    attack = ATTACK.format(mark=tmp_path / "pwned")
    args = ["run", "--print-config"]
    if where == "environment":
        monkeypatch.setenv("BINDY_AGENT_REPO", attack)
    else:
        (tmp_path / "settings.yaml").write_text(f"repo: '{attack}'\n")
        args += ["--config", str(tmp_path / "settings.yaml")]
    result = clirun.main(*args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "setting repo: " in result.stderr and "starts with '-'" in result.stderr


def test_a_git_source_never_gives_git_an_option(tmp_path: pathlib.Path) -> None:
    for kwargs in ({"url": "--upload-pack=sh"}, {"url": "x", "branch": "-b"}, {"url": "x", "ref": "--output=/tmp/f"}):
        with pytest.raises(ConfigError, match="starts with '-'"):
            GitSource(cache=tmp_path, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("flag", "advice"), [
    ("--repo", "give the repository's URL, or its path (./-x for a directory of that name)"),
    ("--branch", "no branch name git accepts does (git check-ref-format --branch): give the branch's name"),
    ("--ref", "pin a tag of another name, or the commit by its 40-hex-digit id (git rev-parse "
              "'refs/tags/-x^{commit}')"),
])
def test_a_value_starting_with_a_dash_gets_advice_for_its_own_flag(tmp_path: pathlib.Path, flag: str,
                                                                   advice: str) -> None:
    # --branch and --ref were told to give "a URL, a path (./-x ...)", which is --repo's advice
    repo = [] if flag == "--repo" else ["--repo", "https://example.invalid/r.git"]
    result = clirun.main("sync", *repo, "--endpoints", _endpoints(tmp_path), "--cache", str(tmp_path / "cache"),
                         f"{flag}=-x")
    assert result.returncode == 2, result.stderr
    error = result.stderr.splitlines()[-1]  # the usage lines above it name every flag
    what = "the repository" if flag == "--repo" else f"the {flag.removeprefix('--')}"
    assert f"argument {flag}: {what} '-x' starts with '-', which git would take for an option; {advice}" in error, (
        error)
    if flag != "--repo":
        assert "URL" not in error and "./-x" not in error
    setting = flag.removeprefix("--")
    configured = clirun.main("run", "--print-config", f"--{setting}=-x") if setting != "repo" else None
    if configured is not None:  # the same words from the settings
        assert configured.returncode == 2 and advice in configured.stderr, configured.stderr
