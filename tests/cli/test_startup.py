"""The command line imports what a verb needs when it needs it (issue 27, "start-up cost of the CLI").

Measured in bench/cli_startup_bench.py, never timed here: these tests check, in a fresh process as a
pre-commit hook starts one, which modules a command line loaded."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from agent import cli
from agent.cli import settingflags
from tests.support.documents import ZONE

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample-repo"
VERB_MODULES = ("agent.cli.validate", "agent.cli.schemas", "agent.cli.plan", "agent.cli.plandelta", "agent.cli.ciplan",
                "agent.cli.sync", "agent.cli.report", "agent.cli.installcrds", "agent.cli.suspend", "agent.cli.run",
                "agent.cli.importzone", "agent.cli.version", "agent.cli.completion")
NETWORK = ("kubernetes", "httpx", "git", "prometheus_client", "apscheduler", "dns")


def _loaded(*argv: str) -> tuple[int, str, set[str]]:
    """(exit status, stderr, the top-level packages and agent modules loaded) of `bindy-agent ARGV`."""
    code = ("import json, sys\n"
            "from agent import cli\n"
            "try:\n    status = cli.main(sys.argv[1:])\n"
            "except SystemExit as exit_:\n    status = exit_.code or 0\n"
            "names = {m for m in sys.modules if m.startswith('agent.')} | {m.split('.')[0] for m in sys.modules}\n"
            "print(json.dumps([status, sorted(names)]), file=sys.__stdout__)\n")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT, check=False,
                          timeout=120)
    status, names = json.loads(done.stdout.strip().splitlines()[-1])
    return int(status), done.stderr, set(names)


def test_help_imports_no_verb_and_no_library_of_one() -> None:
    status, _, loaded = _loaded("--help")
    assert status == 0
    assert not loaded & {*VERB_MODULES, *NETWORK, "pydantic", "yaml", "agent.run.settings", "agent.run.orchestrator"}


def test_validate_imports_no_other_verb_nor_the_settings_of_run(tmp_path: pathlib.Path) -> None:
    (tmp_path / "zone.yaml").write_text(ZONE)
    status, err, loaded = _loaded("validate", str(tmp_path))
    assert status == 0, err
    assert f"{tmp_path}: 1 objects in 1 files: valid" in err
    assert "agent.cli.validate" in loaded
    assert not loaded & {*VERB_MODULES} - {"agent.cli.validate"}
    assert not loaded & {"agent.cli.plan", "agent.cli.sync", "agent.cli.run", "agent.cli.importzone",
                         "agent.run.settings", "apscheduler", "prometheus_client", "kubernetes", "httpx", "git",
                         "agent.run.orchestrator", "agent.run.planner", "agent.model.schema", "agent.clients.kubeapi"}


def test_a_usage_error_names_the_verb_without_importing_it() -> None:
    status, err, loaded = _loaded("sync", "--no-such-flag")
    assert status == 2 and "unrecognized arguments: --no-such-flag" in err
    status, err, loaded = _loaded("no-such-verb")
    assert status == 2 and "invalid choice: 'no-such-verb'" in err
    assert not loaded & set(VERB_MODULES)


def test_the_policy_flags_are_described_from_runs_settings_when_help_is_printed(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The help of the policy flags is read from the settings only when printed: it is still there."""
    from agent.run import settings as config

    with pytest.raises(SystemExit) as exit_:
        cli.main(["validate", "--help"])
    assert exit_.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    for name in settingflags.POLICY_FLAGS:
        description = " ".join(str(config.Settings.model_fields[name].description).split())
        assert f"--{name.replace('_', '-')}" in shown and description in shown, name
    threshold = config.Settings.model_fields["delete_threshold_percent"]
    assert f"(default: {threshold.default})" in shown


@pytest.mark.parametrize("verb", list(cli.VERBS))
def test_every_verb_still_has_its_help(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main([verb, "--help"])
    assert exit_.value.code == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"usage: bindy-agent {verb} ") and "options:" in shown


def test_the_top_help_lists_every_verb(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    shown = capsys.readouterr().out
    for verb, (summary, _, _) in cli.VERBS.items():
        assert verb in shown and summary in " ".join(shown.split()), verb
