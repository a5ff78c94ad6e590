"""`bindy-agent suspend` / `resume`: the mark every run of the agent looks at before anything else.

    exit 0 done, 3 could not run
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from agent.cli import common, flagsets
from agent.errors import AgentError
from agent.model import names


def build(add: common.AddVerb, *, on: bool) -> None:
    verb = "suspend" if on else "resume"
    sp = add(parents=[flagsets.kube()],
             description=("Suspend" if on else "Resume") + " the agent's runs: sets (or removes) "
             f"the annotation {names.SUSPEND_ANNOTATION}: \"true\" on its state ConfigMap in "
             "--agent-namespace (or, with --state DIR, a mark in that directory). While suspended, "
             "runs read and write nothing. Exit 0 done, 3 could not run.",
             epilog=flagsets.examples(
                 (f"{verb} the agent of the cluster of the current context", f"bindy-agent {verb}"),
                 (f"{verb} an agent installed in another namespace",
                  f"bindy-agent {verb} --context prod --agent-namespace dns-agent")))
    sp.set_defaults(func=suspend, suspend=on)
    sp.add_argument("--state", type=pathlib.Path, metavar="DIR",
                    help="the state directory of runs without a "
                    "cluster")


def suspend(args: argparse.Namespace) -> int:
    """suspend / resume: the mark every run looks at before anything else."""
    from agent.clients import statestore

    try:
        store: statestore.Store = (statestore.FileStore(args.state) if args.state
                                   else statestore.ConfigMapStore(common.kube_api(args),
                                                                  args.agent_namespace))
        store.suspend(args.suspend)
    except AgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    where = args.state or f"ConfigMap {args.agent_namespace}/{names.STATE_NAME}"
    print(f"{'suspended' if args.suspend else 'resumed'}: {where}" + (
        "; runs read and write nothing until `bindy-agent resume`" if args.suspend else ""),
          file=sys.stderr)
    return common.EXIT_OK
