"""An offline `bindy-agent plan` loads no cluster client, TLS or Git library (checked in a fresh process)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT

HEAVY = {"git", "ssl", "httpx", "kubernetes", "agent.run.planner", "agent.clients.kubeapi", "agent.sources.git"}


def test_an_offline_plan_loads_no_client_tls_or_git() -> None:
    code = ("import json, sys, io, contextlib\nfrom agent import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    status = cli.main(['plan', sys.argv[1], '-o', 'json'])\n"
            "print(json.dumps([status, sorted({m.split('.')[0] for m in sys.modules} | set(sys.modules))]),"
            " file=sys.__stdout__)\n")
    done = subprocess.run([sys.executable, "-c", code, str(ROOT / "sample-repo")], capture_output=True, text=True,
                          cwd=ROOT, check=False, timeout=120)
    status, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert status == 0, done.stderr  # the plan was made
    assert not set(loaded) & HEAVY
