"""`bindy-agent sync DIR | --repo URL`: validate a revision as a whole, then apply it.

    exit 0 applied or nothing to do, 1 partial, 2 rejected (invalid or unsafe), 3 could not run
"""

from __future__ import annotations

import argparse
import hashlib
import pathlib
import sys
from typing import Any

from agent.cli import common, flagsets, progress, settingflags
from agent.errors import AgentError, ConfigError
from agent.model import names, printable
from agent.plan import render
from agent.run import compose, orchestrator
from agent.run import options as run_options
from agent.run import settings as config

UNPUSHED = "the report could not be pushed (kept in the local clone; pushed on a later run)"
DESCRIPTION = ("Validate a revision as a whole, then apply it: CRDs (unless --no-install-crds), "
               "the hierarchy of objects with server-side apply, prune of what the agent created "
               "and Git no longer has, zones and records (with --endpoints or --in-cluster-dns), "
               "and CR status. With --repo, the revision comes from Git and a report is attached "
               "to the commit as a git note. Exit 0 applied or nothing to do, 1 partial, 2 "
               "rejected (invalid or unsafe), 3 could not run.")
EXAMPLES = flagsets.examples(
    ("what a sync would do to the cluster, writing nothing",
     "bindy-agent sync dns/ --context prod --dry-run"),
    ("apply a directory to the cluster of the current context", "bindy-agent sync dns/"),
    ("apply the head of a branch, and attach a report to its commit",
     "bindy-agent sync --repo https://git.example.com/dns.git --branch main --path dns "
     "--kubeconfig ~/.kube/prod"),
    ("zones and records only, to servers outside a cluster",
     "bindy-agent sync dns/ --endpoints endpoints.yaml"))


def build(add: common.AddVerb) -> None:
    sy = add(parents=[flagsets.kube(), flagsets.guard()], description=DESCRIPTION, epilog=EXAMPLES)
    sy.set_defaults(func=sync)
    sy.add_argument("directory", type=common.directory, metavar="DIR", nargs="?",
                    help="directory of CR YAML files (or use --repo)")
    flagsets.add_namespace(sy)
    sy.add_argument("--dry-run", action="store_true",
                    help="plan against the live world; write nothing")
    sy.add_argument("--no-install-crds", dest="install_crds", action="store_false",
                    help="do not apply the CRDs first")
    sy.add_argument("--rotate-rndc-keys", action="store_true",
                    help="generate new RNDC keys for every generated key Secret")
    sy.add_argument("--endpoints", type=common.readable_file, metavar="FILE",
                    help="YAML map of each Bind9Instance to its DNS server, zone API and TSIG key "
                    "file; enables the DNS steps")
    sy.add_argument("--in-cluster-dns", action="store_true",
                    help="reach instances through their Services and RNDC Secrets (when the agent "
                    "runs in the cluster); instead of --endpoints")
    sy.add_argument("--state", type=pathlib.Path, metavar="DIR",
                    help="where the agent keeps what it owns in DNS, for runs without a cluster (a "
                    "directory; a state file of an earlier version there is converted; default: "
                    "~/.cache/bindy-agent/state/<source digest>)")
    sy.add_argument("--force", action="store_true",
                    help="apply plans the safety gate refuses (mass deletes, whole-zone deletes, "
                    "apex NS changes, large Kubernetes prunes)")
    sy.add_argument("--allow-prune", action="store_true",
                    help="allow deleting more than 30%% of the Kubernetes objects the agent "
                         "manages (only that)")
    sy.add_argument("--create-namespaces", action="store_true",
                    help="create missing namespaces (by default the agent never writes namespaces)")
    sy.add_argument("--deadline", type=common.seconds, default=names.DEFAULT_DEADLINE,
                    metavar="SECONDS",
                    help="the most a run may take; a stalled server ends it as partial (0: no "
                    "limit; default: %(default)s)")
    sy.add_argument("--lock-wait", type=common.seconds, default=names.DEFAULT_LOCK_WAIT,
                    metavar="SECONDS",
                    help="how long to wait for another sync of the same source to finish (default: "
                         "%(default)s)")
    sy.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default=None,
                    help="the least important log lines written to stderr (default: warning; -v: "
                         "debug)")
    sy.add_argument("--batch", type=common.positive, default=1000, metavar="N",
                    help="changes per DNS UPDATE message (default: %(default)s)")
    common.add_limit_flags(sy)
    common.add_transfer_flags(sy)
    git_flags(sy)
    # run's settings of the same names: commit statuses, alerts, the zone API token
    add_arguments(sy)


def git_flags(sy: argparse.ArgumentParser) -> None:
    """where sync finds the Git revision"""
    git_args = sy.add_argument_group("Git source")
    git_args.add_argument("--repo", metavar="URL", type=common.git_operand("the repository"),
                          help="Git repository (URL or local path) instead of DIR")
    git_args.add_argument("--branch", default="main", type=common.git_operand("the branch"),
                          help="branch to follow (default: %(default)s)")
    git_args.add_argument("--ref", type=common.git_operand("the ref"),
                          help="pin a tag or commit instead of following the branch")
    git_args.add_argument("--path", default="",
                          help="sub-directory of the repository holding the CRs")
    git_args.add_argument("--cache", type=pathlib.Path, default=names.GIT_CACHE,
                          help="where the clone is kept (default: %(default)s)")
    git_args.add_argument("--ssh-key", type=common.readable_file, metavar="FILE",
                          help="SSH deploy key")
    git_args.add_argument("--known-hosts", type=common.readable_file, metavar="FILE",
                          help="known_hosts for the SSH key")
    git_args.add_argument("--insecure-ignore-host-key", action="store_true",
                          help="do not check the Git server's SSH host key (not recommended)")
    git_args.add_argument("--token-file", type=common.readable_file, metavar="FILE",
                          help="HTTPS token, read from a file; sent as Basic auth with the user "
                          "x-access-token (GitHub, GitLab, Gitea), or write 'user:token' in the "
                          "file for another user")
    git_args.add_argument("--no-push-notes", dest="push_notes", action="store_false",
                          help="keep the commit reports local instead of pushing "
                               "refs/notes/bindy-agent")
    settingflags.report_key_flag(git_args, "signs each commit report (HMAC-SHA256)")
    git_args.add_argument("--resync-after", type=common.seconds, default=names.DEFAULT_RESYNC_AFTER,
                          metavar="SECONDS",
                          help="an unchanged revision is a no-op until this long after the last "
                          "full reconcile (default: %(default)s)")


def _summary(run: orchestrator.RunOutcome, api: Any, dry_run: bool) -> str:
    parts = []
    if dry_run and run.plan is not None:
        s = run.plan.summary
        parts.append(f"{s['create']} to create, {s['update']} to update, {s['delete']} to delete")
    if run.kube is not None:
        r = run.kube
        parts.append(f"Kubernetes: applied {len(r.applied)}, deleted {len(r.deleted)}, statuses "
                     f"written {len(r.statuses_written)}")
    if run.dns is not None:
        changed = sum(len(z.changes) for z in run.dns.zones)
        verified = sum(1 for z in run.dns.zones for c in z.checks if c.ok)
        checks = sum(len(z.checks) for z in run.dns.zones)
        parts.append(f"DNS: {changed} RRset changes in {run.dns.updates_sent} UPDATE messages, "
                     f"{len(run.dns.deleted)} zone deletions, verified {verified}/{checks}")
    if api is not None:
        parts.append(f"{api.write_count} API writes")
    failed = len(run.failures) + len(run.conflicts)
    outcome = (f"{run.outcome} ({failed} failures and conflicts above)" if run.outcome == "partial"
               else run.outcome)
    return (f"{'Dry run' if dry_run else 'Sync'} of revision {run.revision}: {outcome}; "
            + "; ".join(parts))


def _usage(args: argparse.Namespace) -> str | None:
    if bool(args.directory) == bool(args.repo):
        return "give either DIR or --repo"
    if args.endpoints and args.in_cluster_dns:
        return "--endpoints and --in-cluster-dns exclude each other"
    if args.commit_status not in (None, "off") and not args.repo:
        return ("--commit-status posts a status on a commit: it needs --repo (a directory has no "
                "commit)")
    if not _wants_cluster(args) and not args.endpoints:
        return ("nothing to sync to: give --kubeconfig (Kubernetes; $KUBECONFIG or ~/.kube/config "
                "are used when there is no other target) and/or --endpoints (DNS)")
    return None


def _wants_cluster(args: argparse.Namespace) -> bool:
    """A cluster when asked for, when DNS is found through it, or as the only target (found as
    kubectl does)."""
    if common.cluster_requested(args) or args.in_cluster_dns:
        return True
    return not args.endpoints and common.kubeconfig(None) is not None


# the settings of `run` that sync takes as flags of the same names: commit statuses, alerts, the
# zone-API token
ANNOUNCEMENTS = ("commit_status", "commit_status_token_file", "commit_status_api_url",
                 "commit_status_project", "commit_status_context", "report_url",
                 "alert_webhook_url", "alert_webhook_secret_file", "alert_slack_url_file",
                 "notify_timeout", "notify_retries")
ZONE_API = ("zone_api_token_file", "zone_api_audience")
_METAVARS: dict[Any, str] = {float: "SECONDS", int: "N", pathlib.Path: "FILE",
                             pathlib.Path | None: "FILE"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """sync's flags that are run's settings of the same name and meaning (agent/run/settings.py)."""
    groups = ((parser.add_argument_group("commit status and alerts (as `run`'s settings of the "
                                         "same names; statuses only with --repo)"), ANNOUNCEMENTS),
              (parser.add_argument_group("the zone API token (with --in-cluster-dns)"), ZONE_API))
    for group, fields in groups:
        for name in fields:
            field = config.Settings.model_fields[name]
            default = field.get_default()
            shown = f" (default: {default})" if default not in (None, "") else ""
            text = " ".join((field.description or "").split()) + shown
            group.add_argument("--" + name.replace("_", "-"), dest=name, default=None,
                               help=text.replace("%", "%%"),
                               metavar=_METAVARS.get(field.annotation, name.split("_")[-1].upper()))


def _given(args: argparse.Namespace) -> config.Settings:
    """sync's flags that are run's settings, checked as run checks them (ConfigError: which flag,
    why)."""
    named = {name: getattr(args, name, None) for name in ANNOUNCEMENTS + ZONE_API}
    return config.load_settings({"repo": args.repo or "", **named}, environ={})


def request(args: argparse.Namespace) -> compose.Request:
    """What this sync was given, said as every verb says it (agent/run/compose.py)."""
    given = _given(args)
    source_key = args.repo or str(args.directory.resolve())
    git = compose.Git.of(vars(args)) if args.repo else None
    state_dir = hashlib.sha256(source_key.encode()).hexdigest()[:16]
    return compose.Request(
        run_options.of(vars(args), common.policy_settings(args)), git,
        None if args.repo else args.directory, limits=common.limits(args),
        cluster=_wants_cluster(args), kubeconfig=common.kubeconfig(args.kubeconfig),
        context=args.context, endpoints=args.endpoints, in_cluster_dns=args.in_cluster_dns,
        zone_api_token_file=given.zone_api_token_file, zone_api_audience=given.zone_api_audience,
        state=args.state,
        local_state=names.CACHE_DIR / "state" / state_dir,
        forge=given.forge_settings(), alerts=given.notify_settings())


def sync(args: argparse.Namespace) -> int:
    usage = _usage(args)
    if usage:
        print(f"bindy-agent sync: error: {usage}", file=sys.stderr)
        return common.EXIT_ERROR
    try:
        asked = request(args)
    except ConfigError as exc:
        print(f"bindy-agent sync: error: {exc}", file=sys.stderr)
        return common.EXIT_ERROR
    try:
        built = compose.build(asked)
    except AgentError as exc:
        print(f"error: could not run: {exc}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    if built.targets.kube_api is not None and not args.kubeconfig:
        print(f"using the cluster of {common.kubeconfig(None) or 'the pod'} (as kubectl would)",
              file=sys.stderr)
    report = progress.Reporter.for_stderr()
    try:
        run = orchestrator.run(built.source, built.targets, built.options, progress=report)
    finally:
        report.done()
    return _show(run, args, built.targets.kube_api)


def _show(run: orchestrator.RunOutcome, args: argparse.Namespace, api: Any) -> int:
    prefix = f"run {run.run_id}"
    idle = _show_idle(run, prefix)
    if idle is not None:
        return idle
    root = args.directory if args.directory else pathlib.Path(args.path or ".")
    common.print_problems(run.problems, root, sys.stderr)
    for sha in run.superseded:
        print(f"{prefix}: {sha[:12]} superseded by {run.revision[:12] if run.revision else '?'}",
              file=sys.stderr)
    if run.plan is None:
        print(f"{prefix}: rejected {run.revision}: {run.message}; the last good revision keeps "
              f"serving",
              file=sys.stderr)
        return common.EXIT_REJECTED
    _show_applied(run, api, args.dry_run, prefix)
    if run.refusals:
        return common.EXIT_REJECTED
    return common.EXIT_PARTIAL if run.outcome == "partial" else common.EXIT_OK


def _show_idle(run: orchestrator.RunOutcome, prefix: str) -> int | None:
    """The exit code of a run that planned nothing (it could not run, was suspended or found its
    revision unchanged), after saying why; None for a run that planned."""
    if run.outcome in ("unreachable", "busy"):
        print(f"error: could not run: {run.message}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    # the operator's choice, not a failure: nothing read, nothing written
    if run.outcome == "suspended":
        print(f"{prefix}: {run.message}", file=sys.stderr)
        return common.EXIT_OK
    if run.outcome == "unchanged":
        print(f"{prefix}: {run.message}", file=sys.stderr)
        if run.notes_pushed is False:
            print(f"{prefix}: warning: {UNPUSHED}", file=sys.stderr)
        return common.EXIT_OK
    return None


def _show_applied(run: orchestrator.RunOutcome, api: Any, dry_run: bool, prefix: str) -> None:
    """The plan a run applied (or would apply), then what failed, was refused or conflicted, and
    the summary."""
    assert run.plan is not None
    # written as rendered: never the whole plan at once
    for chunk in render.chunks(run.plan, "text"):
        sys.stdout.write(chunk)
    if run.notes_pushed is False:
        print(f"{prefix}: warning: {UNPUSHED}", file=sys.stderr)
    if api is None:
        print(f"notice: no --kubeconfig: Kubernetes steps skipped (zones and records "
              f"only){_unused_kubeconfig()}",
              file=sys.stderr)
    for label, items in (("failed", run.failures), ("refused", run.refusals),
                         ("conflict", run.conflicts)):
        for line in items:  # one line each, whatever a name in it holds
            print(f"{label}: {printable.line(line)}", file=sys.stderr)
    print(_summary(run, api, dry_run), file=sys.stderr)
    if run.outcome == "partial":
        print(f"{prefix}: {run.message}", file=sys.stderr)


def _unused_kubeconfig() -> str:
    found = common.kubeconfig(None)
    return (f"; {found} was not used: add --kubeconfig or --context to include its cluster" if found
            else "")


