"""`bindy-agent completion bash|zsh|fish`: the shell's completion script, made from the parser
itself (every verb, its flags, the values a flag takes: its choices, a file or a directory), so it
cannot drift from --help. The script holds all of it: completing never starts bindy-agent.
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import re
import sys

from agent.cli import common, flagsets

SHELLS = ("bash", "zsh", "fish")
EXAMPLES = flagsets.examples(
    ("bash, in the current shell", "source <(bindy-agent completion bash)"),
    ("bash, for every new shell",
     "bindy-agent completion bash > ~/.local/share/bash-completion/completions/bindy-agent"),
    ("zsh (a directory of your $fpath)",
     "bindy-agent completion zsh > \"${fpath[1]}/_bindy-agent\""),
    ("fish", "bindy-agent completion fish > ~/.config/fish/completions/bindy-agent.fish"))


def build(add: common.AddVerb) -> None:
    c = add(description="Print the completion script of SHELL: verbs, each verb's flags, and the "
            "values of the flags that have a few (output formats, ...), files and directories.",
            epilog=EXAMPLES)
    c.set_defaults(func=show)
    c.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")


@dataclasses.dataclass(frozen=True)
class Flag:
    names: tuple[str, ...]
    help: str
    takes: str | None  # None: no value; "file", "dir", "choice" or "value"
    choices: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Verb:
    name: str
    help: str
    flags: tuple[Flag, ...]
    positional: str | None  # "file", "dir", "choice" or None
    choices: tuple[str, ...] = ()


def _kind(action: argparse.Action) -> str:
    if action.choices is not None:
        return "choice"
    kind = getattr(action.type, "__name__", "")
    if kind == "directory" or action.metavar == "DIR" or action.dest in ("cache", "state"):
        return "dir"
    if kind == "readable_file" or action.metavar == "FILE" or action.type is pathlib.Path:
        return "file"
    return "value"


def _help(action: argparse.Action) -> str:
    text = " ".join(str(action.help or "").split())
    text = re.sub(r"\s*\(default.*$", "", text).replace("%%", "%")
    return text[:77] + "..." if len(text) > 80 else text


def _verb(name: str, summary: str, parser: argparse.ArgumentParser) -> Verb:
    flags: list[Flag] = []
    positional: str | None = None
    choices: tuple[str, ...] = ()
    for action in parser._actions:
        if action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            takes = None if action.nargs == 0 else _kind(action)
            flags.append(Flag(tuple(action.option_strings), _help(action), takes,
                              tuple(map(str, action.choices or ()))))
        elif positional is None:
            positional, choices = _kind(action), tuple(map(str, action.choices or ()))
    return Verb(name, summary, tuple(flags), positional, choices)


def verbs() -> list[Verb]:
    """Every verb, as the parser has it."""
    from agent import cli

    parser = cli._parser(every_verb=True)
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {c.dest: str(c.help) for c in action._choices_actions}
    return [_verb(name, summaries[name], sub) for name, sub in action.choices.items()]


TOP_FLAGS = ("-h", "--help", "--version", "-v", "--verbose")


def show(args: argparse.Namespace) -> int:
    from agent.cli import completionscripts

    sys.stdout.write(completionscripts.SCRIPTS[args.shell](verbs(), TOP_FLAGS))
    return common.EXIT_OK
