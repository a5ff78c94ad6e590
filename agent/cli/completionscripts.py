"""The completion scripts of bash, zsh and fish, written from the verbs the parser has
(completion.py).

Each finds the verb as the first word after `bindy-agent` that is not an option (the options before
a verb take no value), then completes that verb's flags, a flag's value (its choices, a file, a
directory), or the verb's operand.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.cli.completion import Flag, Verb

Script = Callable[[Sequence["Verb"], Sequence[str]], str]


def _words(items: Sequence[str]) -> str:
    return " ".join(items)


def _bash_value(kind: str | None, choices: Sequence[str]) -> str:
    if kind == "choice":
        return f'COMPREPLY=($(compgen -W "{_words(choices)}" -- "$cur"))'
    if kind == "dir":
        return 'compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur"))'
    if kind == "file":
        return 'compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur"))'
    return "COMPREPLY=()"


def bash(verbs: Sequence[Verb], top: Sequence[str]) -> str:
    values, flags, operands = [], [], []
    for verb in verbs:
        flags.append(f'        {verb.name}) '
                     f'flags="{_words([n for f in verb.flags for n in f.names])}" ;;')
        operands.append(f"        {verb.name}) {_bash_value(verb.positional, verb.choices)} ;;")
        grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
        for flag in verb.flags:
            if flag.takes is not None:
                grouped.setdefault((flag.takes, flag.choices), []).extend(flag.names)
        for (takes, choices), names in grouped.items():
            cases = "|".join(f"{verb.name}:{name}" for name in names)
            values.append(f"        {cases})\n            {_bash_value(takes, choices)}; return ;;")
    return "\n".join([
        "# bash completion for bindy-agent (`source <(bindy-agent completion bash)`)",
        "_bindy_agent() {",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" verb="" '
        'flags="" i',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        case "${COMP_WORDS[i]}" in -*) ;; *) verb="${COMP_WORDS[i]}"; break ;; esac',
        "    done",
        '    if [[ -z "$verb" ]]; then',
        f'        if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "{_words(top)}" -- "$cur"))',
        f'        else COMPREPLY=($(compgen -W "{_words([v.name for v in verbs])}" -- "$cur")); fi',
        "        return",
        "    fi",
        '    if [[ "$prev" == -* ]] && (( COMP_CWORD > i + 1 )); then',
        '        case "$verb:$prev" in',
        *values,
        "        esac",
        "    fi",
        '    case "$verb" in',
        *flags,
        "    esac",
        '    if [[ "$cur" == -* ]]; then',
        '        COMPREPLY=($(compgen -W "$flags" -- "$cur"))',
        "        return",
        "    fi",
        '    case "$verb" in',
        *operands,
        "    esac",
        "}",
        "complete -F _bindy_agent bindy-agent",
        ""])


def _zsh_quote(text: str) -> str:
    """Text inside a single-quoted _arguments spec: no quote, bracket or colon of its own."""
    for old, new in (("'", ""), ("[", "("), ("]", ")"), (":", " -"), ("\\", "")):
        text = text.replace(old, new)
    return text


def _zsh_action(kind: str | None, choices: Sequence[str]) -> str:
    return {"choice": f"({' '.join(choices)})", "dir": "_files -/",
            "file": "_files"}.get(kind or "", " ")


def _zsh_flag(flag: Flag) -> str:
    value = ""
    if flag.takes:
        value = f":{flag.names[-1].lstrip('-')}:{_zsh_action(flag.takes, flag.choices)}"
    names = flag.names[0] if len(flag.names) == 1 else "{" + ",".join(flag.names) + "}"
    exclusive = "" if len(flag.names) == 1 else "'(" + " ".join(flag.names) + ")'"
    return f"{exclusive}{names}'[{_zsh_quote(flag.help)}]{value}'"


def zsh(verbs: Sequence[Verb], top: Sequence[str]) -> str:
    cases = []
    for verb in verbs:
        specs = [_zsh_flag(f) for f in verb.flags]
        if verb.positional:
            specs.append(f"'1:{verb.name} operand:{_zsh_action(verb.positional, verb.choices)}'")
        cases.append(f"        {verb.name}) _arguments -s \\\n            "
                     + " \\\n            ".join(specs) + " ;;")
    described = " ".join(f"'{v.name}:{_zsh_quote(v.help)}'" for v in verbs)
    return "\n".join([
        "#compdef bindy-agent",
        "# zsh completion for bindy-agent (`bindy-agent completion zsh > "
        "\"${fpath[1]}/_bindy-agent\"`)",
        "_bindy_agent() {",
        "    local -a verbs",
        f"    verbs=({described})",
        "    local i verb",
        "    for (( i = 2; i < CURRENT; i++ )); do",
        "        if [[ $words[i] != -* ]]; then verb=$words[i]; break; fi",
        "    done",
        "    if [[ -z $verb ]]; then",
        f"        if [[ $PREFIX == -* ]]; then compadd -- {_words(top)}; else _describe verb "
        f"verbs; fi",
        "        return",
        "    fi",
        "    words=(${words[i,-1]})",
        "    (( CURRENT -= i - 1 ))",
        "    case $verb in",
        *cases,
        "    esac",
        "}",
        'if [[ $zsh_eval_context[-1] == loadautofunc ]]; then _bindy_agent "$@"',
        "else compdef _bindy_agent bindy-agent; fi",
        ""])


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_value(kind: str | None, choices: Sequence[str]) -> str:
    if kind == "choice":
        return f" -x -a {_fish_quote(' '.join(choices))}"
    if kind == "dir":
        return " -x -a '(__fish_complete_directories)'"
    if kind == "file":
        return " -r -F"
    return " -x" if kind else ""


def fish(verbs: Sequence[Verb], top: Sequence[str]) -> str:
    lines = ["# fish completion for bindy-agent",
             "# (`bindy-agent completion fish > ~/.config/fish/completions/bindy-agent.fish`)",
             "complete -c bindy-agent -f",
             "complete -c bindy-agent -n __fish_use_subcommand -s h -l help -d 'show the help'",
             "complete -c bindy-agent -n __fish_use_subcommand -l version -d 'show the version'",
             "complete -c bindy-agent -n __fish_use_subcommand -s v -l verbose -d 'log debug "
             "details'"]
    names = " ".join(v.name for v in verbs)
    for verb in verbs:
        lines.append(f"complete -c bindy-agent -n 'not __fish_seen_subcommand_from {names}' -a "
                     f"{verb.name} -d {_fish_quote(verb.help)}")
        seen = f"-n '__fish_seen_subcommand_from {verb.name}'"
        for flag in verb.flags:
            parts = " ".join(f"-s {n[1:]}" if len(n) == 2 else f"-l {n[2:]}" for n in flag.names)
            lines.append(f"complete -c bindy-agent {seen} "
                         f"{parts}{_fish_value(flag.takes, flag.choices)} -d "
                         f"{_fish_quote(flag.help)}")
        if verb.positional:
            lines.append(f"complete -c bindy-agent "
                         f"{seen}{_fish_value(verb.positional, verb.choices)}")
    return "\n".join(lines) + "\n"


SCRIPTS: dict[str, Script] = {"bash": bash, "zsh": zsh, "fish": fish}
