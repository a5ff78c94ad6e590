"""The habits of kubectl and flux a user brings to bindy-agent: flags after the verb, -n, -o for formats
only, BINDY_AGENT_* variables for a verb's flags that are the agent's settings, Examples in every help and
no source file named there, colours on a terminal only, and errors that say how to fix a shallow clone."""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import subprocess
import sys

import pytest

from agent import cli
from tests.conftest import ROOT, SAMPLE
from tests.support import clirun, tty
from tests.support.gitremote import GitRemote

BAD = "apiVersion: bindy.firestoned.io/v1beta1\nkind: ARecord\nmetadata: {name: a, namespace: dns-system}\nspec: {}\n"
SCRIPT = pathlib.Path(sys.executable).parent / "bindy-agent"


def _help(verb: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        cli.main([verb, "--help"])
    return capsys.readouterr().out


@pytest.mark.parametrize("verb", list(cli.VERBS))
def test_every_help_has_examples_and_names_no_source_file(verb: str, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # no line broken at a hyphen
    shown = _help(verb, capsys)
    examples = shown.split("\nExamples:\n", 1)[1]
    commands = [line.strip() for line in examples.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert commands and all(c.startswith(("bindy-agent ", "source <(bindy-agent", "BINDY_AGENT_", "--"))
                            for c in commands), commands
    assert f"bindy-agent {verb}" in examples
    assert not re.search(r"\b[\w/]+\.py\b|(?<![\w-])agent/", shown), re.findall(r"\S*(?:\.py|agent/)\S*", shown)


def test_the_top_help_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "\nExamples:\n  # check a directory of CRs" in capsys.readouterr().out


def test_v_is_accepted_after_the_verb_too() -> None:
    code = ("import sys; from agent import cli; from agent.cli import validate\n"
            "validate.validate = lambda args: 1 / 0\nsys.exit(cli.main(sys.argv[1:]))\n")
    for argv in (["-v", "validate", str(SAMPLE)], ["validate", str(SAMPLE), "-v"], ["validate", "--verbose", str(SAMPLE)]):
        loud = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT)
        assert "Traceback" in loud.stderr and "ZeroDivisionError" in loud.stderr, argv
    quiet = subprocess.run([sys.executable, "-c", code, "validate", str(SAMPLE)], capture_output=True, text=True,
                           cwd=ROOT)
    assert quiet.returncode == 70 and "Traceback" not in quiet.stderr


@pytest.mark.parametrize("verb", ["validate", "plan", "sync", "ci-plan", "run", "import"])
def test_n_is_namespace(verb: str) -> None:
    operands = {"run": [], "import": ["--zone", "example.com", "--server", "127.0.0.1"]}.get(verb, [str(SAMPLE)])
    argv = [verb, *operands, "-n", "dns-lab"]
    assert cli._parser(argv).parse_args(argv).namespace == "dns-lab"


def test_o_is_an_output_format_and_import_writes_files_with_output_dir(tmp_path: pathlib.Path) -> None:
    refused = clirun.main("import", "--zone", "example.com", "--server", "127.0.0.1:1", "-o", str(tmp_path))
    assert refused.returncode == 2
    assert (f"bindy-agent import: error: -o/--output is an output format in every verb; give the directory with "
            f"--output-dir {tmp_path} (import prints YAML when it has none)") in refused.stderr
    argv = ["import", "--zone", "example.com", "--server", "127.0.0.1:1", "-o", "yaml"]
    assert cli._parser(argv).parse_args(argv).output_dir is None  # yaml: what import prints anyway
    for verb in ("plan", "report", "version"):
        action = next(a for a in cli._parser([verb])._subparsers._group_actions[0].choices[verb]._actions  # type: ignore[union-attr]
                      if "-o" in a.option_strings)
        assert action.choices is not None and "text" in action.choices, verb


# -- BINDY_AGENT_* -----------------------------------------------------------------------------------
def _args(argv: list[str], monkeypatch: pytest.MonkeyPatch, **env: str) -> argparse.Namespace:
    for name in [n for n in os.environ if n.startswith("BINDY_AGENT_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return cli._parser(argv).parse_args(argv)


def test_a_verbs_setting_flags_read_bindy_agent_variables_and_a_flag_wins(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: pathlib.Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    env = {"BINDY_AGENT_NAMESPACE": "dns-lab", "BINDY_AGENT_MAX_DOCUMENTS": "7", "BINDY_AGENT_KUBECONFIG": str(kubeconfig),
           "BINDY_AGENT_ALLOWED_NAMESPACES": "dns-lab,dns-system", "BINDY_AGENT_PUSH_NOTES": "false",
           "BINDY_AGENT_POD_SECURITY": "baseline"}
    sync = _args(["sync", str(SAMPLE)], monkeypatch, **env)
    assert (sync.namespace, sync.max_documents, sync.kubeconfig, sync.allowed_namespaces, sync.push_notes,
            sync.pod_security) == ("dns-lab", 7, kubeconfig, ["dns-lab,dns-system"], False, "baseline")
    given = _args(["sync", str(SAMPLE), "-n", "x", "--max-documents", "9", "--allowed-namespaces", "a",
                   "--allowed-namespaces", "b"], monkeypatch, **env)
    assert (given.namespace, given.max_documents, given.allowed_namespaces) == ("x", 9, ["a", "b"])
    validate = _args(["validate", str(SAMPLE)], monkeypatch, **env)
    assert (validate.namespace, validate.max_documents, validate.allowed_namespaces) == (
        "dns-lab", 7, ["dns-lab,dns-system"])


def test_what_is_never_read_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    env = {"BINDY_AGENT_FORCE": "true", "BINDY_AGENT_ALLOW_PRUNE": "true", "BINDY_AGENT_KUBECONFIG": str(kubeconfig),
           "BINDY_AGENT_CACHE": str(tmp_path)}
    sync = _args(["sync", str(SAMPLE)], monkeypatch, **env)
    assert (sync.force, sync.allow_prune) == (False, False)  # the safety gate is overridden on the command line only
    plan = _args(["plan", str(SAMPLE)], monkeypatch, **env)
    assert plan.kubeconfig is None and plan.cache != tmp_path  # an offline plan stays offline


def test_a_bad_variable_is_a_usage_error_that_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BINDY_AGENT_POD_SECURITY", "lax")
    refused = clirun.main("validate", str(SAMPLE))
    assert refused.returncode == 2 and "BINDY_AGENT_POD_SECURITY='lax': not one of restricted, baseline" in refused.stderr
    monkeypatch.setenv("BINDY_AGENT_POD_SECURITY", "restricted")
    monkeypatch.setenv("BINDY_AGENT_INSTALL_CRDS", "maybe")
    refused = clirun.main("sync", str(SAMPLE), "--dry-run")
    assert refused.returncode == 2 and "BINDY_AGENT_INSTALL_CRDS='maybe': give true or false" in refused.stderr


def test_a_variable_reaches_the_verb(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BINDY_AGENT_MAX_DOCUMENTS", "3")
    limited = clirun.main("validate", str(SAMPLE))
    assert limited.returncode == 1 and "more than 3 YAML documents in the revision" in limited.stderr


# -- colours -----------------------------------------------------------------------------------------
def _terminal_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    return {**env, "TERM": "xterm", **extra}


def test_a_plan_and_errors_are_coloured_on_a_terminal_only(tmp_path: pathlib.Path) -> None:
    shown = tty.run([str(SCRIPT), "plan", str(SAMPLE)], cwd=ROOT, env=_terminal_env(), stdout_too=True)
    assert shown.returncode == 0
    assert "\n  \x1b[32m+ Bind9Cluster dns-system/dns\x1b[0m\n" in shown.stdout
    plain = tty.run([str(SCRIPT), "plan", str(SAMPLE)], cwd=ROOT, env=_terminal_env(NO_COLOR="1"), stdout_too=True)
    assert "\x1b[3" not in plain.stdout and "\n  + Bind9Cluster dns-system/dns\n" in plain.stdout
    piped = subprocess.run([str(SCRIPT), "plan", str(SAMPLE)], capture_output=True, text=True, env=_terminal_env())
    assert "\x1b" not in piped.stdout and piped.stdout == plain.stdout

    (tmp_path / "bad.yaml").write_text(BAD)
    red = tty.run([str(SCRIPT), "validate", str(tmp_path)], cwd=ROOT, env=_terminal_env())
    assert red.returncode == 1
    assert f"\x1b[31m{tmp_path}/bad.yaml:4: ARecord/dns-system/a: spec.name: required field is missing\x1b[0m" \
        in red.terminal
    assert f"\x1b[31m{tmp_path}: 0 objects in 1 files: invalid: 2 errors, 0 warnings\x1b[0m" in red.terminal
    usage = tty.run([str(SCRIPT), "plan", "--no-such-flag"], cwd=ROOT, env=_terminal_env())
    assert "\x1b[31mbindy-agent: error: unrecognized arguments: --no-such-flag\x1b[0m" in usage.terminal
    none = tty.run([str(SCRIPT), "validate", str(tmp_path)], cwd=ROOT, env=_terminal_env(NO_COLOR="1"))
    assert "\x1b[3" not in none.terminal and "bad.yaml:4: ARecord" in none.terminal


def test_a_hostile_name_cannot_colour_the_terminal(tmp_path: pathlib.Path) -> None:
    (tmp_path / "bad.yaml").write_text(BAD.replace("name: a,", 'name: "a\\e[32mgreen",'))
    shown = tty.run([str(SCRIPT), "validate", str(tmp_path)], cwd=ROOT, env=_terminal_env())
    assert "\x1b[32m" not in shown.terminal and "\\x1b[32mgreen" in shown.terminal


# -- a shallow clone ---------------------------------------------------------------------------------
def test_an_unknown_base_in_a_shallow_clone_says_how_to_fetch_it(tmp_path: pathlib.Path) -> None:
    remote = GitRemote(tmp_path / "git")
    remote.commit("one", {"dns/zone.yaml": "# nothing yet\n"})
    remote.push()
    remote.commit("two", {"dns/zone.yaml": "# still nothing\n"})
    remote.push()
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", remote.url, str(clone)], check=True)
    base = remote.cmd("rev-parse", "HEAD~1")
    for rev, fetch in (("origin/other", "git fetch --no-tags --depth=1 origin +refs/heads/other:refs/remotes/origin/other"),
                       (base, f"git fetch --no-tags --depth=1 origin {base})"),
                       ("HEAD~1", "git fetch --deepen=50")):
        shown = clirun.main("plan", "dns", "--base", rev, cwd=clone)
        assert shown.returncode == 1
        assert shown.stderr.startswith(f"bindy-agent plan: error: unknown revision '{rev}' in {clone} (give a branch, "
                                       "a tag or a commit SHA); this clone is shallow (a CI checkout fetches one "
                                       f"commit): fetch the revision first ({fetch}"), shown.stderr
        assert "git fetch --unshallow; on GitHub Actions: actions/checkout with fetch-depth: 0; on GitLab CI: the " \
               "variable GIT_DEPTH: 0)" in shown.stderr
    subprocess.run(["git", "-C", str(clone), "fetch", "-q", "--no-tags", "--depth=1", "origin", base], check=True)
    assert clirun.main("plan", "dns", "--base", base, cwd=clone).returncode == 0  # as the message said


def test_ci_plan_fetches_the_base_a_shallow_clone_lacks(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside a pull request, with --base and --no-comment: a branch of origin, fetched one commit deep."""
    for name in [n for n in os.environ if n.startswith(("GITHUB_", "GITLAB_", "CI_"))]:
        monkeypatch.delenv(name)  # this test's own CI is not the job it plays
    remote = GitRemote(tmp_path / "git")
    remote.commit("one", {"dns/zone.yaml": "# nothing yet\n"})
    remote.push()
    remote.cmd("push", "-q", "origin", "HEAD:refs/heads/feature")
    remote.commit("two", {"dns/zone.yaml": "# still nothing\n"})
    remote.cmd("push", "-q", "origin", "HEAD:refs/heads/feature")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", "feature", remote.url, str(clone)], check=True)
    done = clirun.main("ci-plan", "dns", "--base", "origin/main", "--no-comment", cwd=clone)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("fetched the base origin/main from origin (the clone did not have it)\n")
    assert done.stdout.startswith("<!-- bindy-agent ci-plan: dns -->\n## bindy-agent plan\n")
    missing = clirun.main("ci-plan", "dns", "--base", "origin/nope", "--no-comment", cwd=clone)
    assert missing.returncode == 1
    assert missing.stderr.startswith("bindy-agent ci-plan: error: the base origin/nope is not in this clone, and "
                                     "fetching it failed (git fetch origin origin/nope: ")
    assert "check out the whole history (actions/checkout with fetch-depth: 0; GitLab CI: GIT_DEPTH: 0)" in missing.stderr
    outside = clirun.main("ci-plan", "dns", cwd=clone)
    assert (outside.returncode, outside.stderr) == (1, "bindy-agent ci-plan: error: no base revision: this job does not "
                                                    "run for a pull request (GitHub Actions: a pull_request event) nor a "
                                                    "merge request (GitLab CI: a merge request pipeline); give --base REV\n")
