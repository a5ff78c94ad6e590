"""`bindy-agent install-crds`: apply the CRDs generated from the models and wait until they are
served.

    exit 0 done, 3 could not run
"""

from __future__ import annotations

import argparse
import sys

from agent.cli import common, flagsets
from agent.errors import KubeError
from agent.model import kinds

EXAMPLES = flagsets.examples(
    ("into the cluster of the current context", "bindy-agent install-crds"),
    ("into another cluster", "bindy-agent install-crds --kubeconfig ~/.kube/prod --context dns"))


def build(add: common.AddVerb) -> None:
    ic = add(parents=[flagsets.kube()],
             description=f"Apply the {len(kinds.KINDS)} CRDs generated from the models "
             "(schemas/crds) and wait until the API server serves them. The cluster: --kubeconfig, "
             "else $KUBECONFIG, else ~/.kube/config, as kubectl finds it. Exit 0 done, 3 could not "
             "run.", epilog=EXAMPLES)
    ic.set_defaults(func=install_crds)


def install_crds(args: argparse.Namespace) -> int:
    from agent.run import crds

    try:
        api = common.kube_api(args)
        changed = crds.install_crds(api)
    except KubeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    print(f"CRDs: {len(changed)} applied, all {len(kinds.KINDS)} Established", file=sys.stderr)
    return common.EXIT_OK
