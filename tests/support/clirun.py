"""`bindy-agent ARGS` in this process (much faster than a new interpreter for each call), with what
it printed; for tests whose point is not the process boundary itself."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import pathlib


@dataclasses.dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def main(*args: str, cwd: pathlib.Path | None = None) -> Result:
    from agent import cli

    out, err = io.StringIO(), io.StringIO()
    before = pathlib.Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(list(args))
            except SystemExit as exit_:  # argparse's --help and usage errors
                code = int(exit_.code or 0)
    finally:
        os.chdir(before)
    return Result(code, out.getvalue(), err.getvalue())
