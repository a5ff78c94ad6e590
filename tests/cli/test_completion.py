"""`bindy-agent completion bash|zsh|fish`: the bash script is sourced by a real bash, whose completion
function is driven as bash drives it on <TAB> (COMP_WORDS, COMP_CWORD); what it offers is compared with
what the parser has. zsh and fish are checked by their own shells where they are installed."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import pytest

from agent import cli
from tests.conftest import ROOT

SCRIPT = pathlib.Path(sys.executable).parent / "bindy-agent"


def _script(shell: str) -> str:
    done = subprocess.run([str(SCRIPT), "completion", shell], capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("completion") / "bindy-agent.bash"
    path.write_text(_script("bash"))
    return path


def _complete(script: pathlib.Path, *words: str, cwd: pathlib.Path = ROOT) -> list[str]:
    """What bash offers for the command line `words` (the last one being completed)."""
    driver = (f'source "{script}"\n'
              'COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=()\n'
              'COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}\n'
              'complete -p bindy-agent >/dev/null\n'
              '"$(complete -p bindy-agent | sed -E "s/.*-F ([^ ]+).*/\\1/")"\n'
              'printf "%s\\n" "${COMPREPLY[@]}"\n')
    done = subprocess.run(["bash", "--noprofile", "--norc", "-c", driver, "bash", "bindy-agent", *words],
                          capture_output=True, text=True, cwd=cwd, check=True)
    return [line for line in done.stdout.splitlines() if line]


def test_bash_completes_the_verbs(bash_script: pathlib.Path) -> None:
    assert _complete(bash_script, "") == list(cli.VERBS)
    assert _complete(bash_script, "pl") == ["plan"]
    assert _complete(bash_script, "-v", "va") == ["validate"]  # -v before the verb takes no value
    assert _complete(bash_script, "--ver") == ["--version", "--verbose"]


def test_bash_completes_a_verbs_flags_and_their_values(bash_script: pathlib.Path, tmp_path: pathlib.Path) -> None:
    assert _complete(bash_script, "plan", "--det") == ["--detailed-exitcode"]
    assert _complete(bash_script, "plan", "sample-repo", "--base", "x", "--err") == ["--error-format", "--error-report"]
    assert _complete(bash_script, "plan", "-o", "") == ["json", "markdown", "text"]
    assert _complete(bash_script, "validate", "--error-format", "g") == ["github", "gitlab"]
    assert _complete(bash_script, "completion", "") == ["bash", "zsh", "fish"]
    assert sorted(_complete(bash_script, "import", "--output")) == ["--output", "--output-dir"]
    assert "--namespace" in _complete(bash_script, "sync", "--na") and "-n" in _complete(bash_script, "sync", "-")
    assert _complete(bash_script, "plan", "--base", "") == []  # a revision: nothing to guess
    (tmp_path / "dns").mkdir()
    (tmp_path / "dns.yaml").write_text("")
    assert _complete(bash_script, "validate", "dn", cwd=tmp_path) == ["dns"]  # DIR: directories only
    assert sorted(_complete(bash_script, "sync", "dns", "--endpoints", "dn", cwd=tmp_path)) == ["dns", "dns.yaml"]


def test_every_flag_of_every_verb_is_offered(bash_script: pathlib.Path) -> None:
    import argparse

    parser = cli._parser(every_verb=True)
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in verbs.choices.items():
        shown = set(_complete(bash_script, name, "-"))
        flags = {s for a in sub._actions if a.help != argparse.SUPPRESS for s in a.option_strings}
        assert shown == flags, name


@pytest.mark.parametrize("shell, check", [("zsh", ["zsh", "-n"]), ("fish", ["fish", "--no-execute"])])
def test_zsh_and_fish_scripts_parse(shell: str, check: list[str], tmp_path: pathlib.Path) -> None:
    if shutil.which(check[0]) is None:
        pytest.skip(f"{shell} is not installed")
    path = tmp_path / f"bindy-agent.{shell}"
    path.write_text(_script(shell))
    done = subprocess.run([*check, str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_fish_completes_verbs_flags_and_values(tmp_path: pathlib.Path) -> None:
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed")
    path = tmp_path / "bindy-agent.fish"
    path.write_text(_script("fish"))

    def offered(line: str) -> list[str]:
        done = subprocess.run(["fish", "--no-config", "-c", f"source {path}; complete -C'{line}'"],
                              capture_output=True, text=True, check=True)
        return [row.split("\t")[0] for row in done.stdout.splitlines()]

    assert offered("bindy-agent pl") == ["plan"]
    assert offered("bindy-agent plan --det") == ["--detailed-exitcode"]
    assert offered("bindy-agent plan -o ") == ["json", "markdown", "text"]
    assert sorted(offered("bindy-agent completion ")) == ["bash", "fish", "zsh"]


def test_zsh_loads_the_script_and_registers_it(tmp_path: pathlib.Path) -> None:
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed")
    path = tmp_path / "_bindy-agent"
    path.write_text(_script("zsh"))
    done = subprocess.run(["zsh", "-f", "-c", f"autoload -U compinit; compinit -u -D; source {path}; "
                           "print -r -- $_comps[bindy-agent]"], capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip()) == (0, "_bindy_agent"), done.stderr
