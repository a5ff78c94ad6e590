"""`python -m agent` is the same as the `bindy-agent` console script."""

from agent import cli

cli.entry()
