"""`python -m agent` is the same as the `bindy-agent` console script."""

import sys

from agent import cli

sys.exit(cli.main())
