"""The verbs that reach a cluster or a Git remote: install-crds, suspend, resume, sync and report.

sync applies a directory or a Git repository; report prints the note a sync attached to a commit."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import pathlib
import sys
from typing import Any

from agent.cli import common, progress
from agent.clients import statestore
from agent.errors import AgentError, ConfigError, KubeError
from agent.model import kinds, names, printable
from agent.outcome import signature
from agent.plan import render
from agent.run import compose, crds, orchestrator
from agent.run import settings as config
from agent.sources import gitrevs
from agent.sources.git import NOTES_REF, GitSource, StoredNote

UNPUSHED = "the report could not be pushed (kept in the local clone; pushed on a later run)"
EXIT_UNVERIFIED = 4  # report: shown, but not known to be the agent's (no key, no or a wrong signature, malformed)


def install_crds(args: argparse.Namespace) -> int:
    try:
        api = common.kube_api(args)
        changed = crds.install_crds(api)
    except KubeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    print(f"CRDs: {len(changed)} applied, all {len(kinds.KINDS)} Established", file=sys.stderr)
    return common.EXIT_OK


def suspend(args: argparse.Namespace) -> int:
    """suspend / resume: the mark every run looks at before anything else."""
    try:
        store: statestore.Store = (statestore.FileStore(args.state) if args.state
                                   else statestore.ConfigMapStore(common.kube_api(args), args.agent_namespace))
        store.suspend(args.suspend)
    except AgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    where = args.state or f"ConfigMap {args.agent_namespace}/{names.STATE_NAME}"
    print(f"{'suspended' if args.suspend else 'resumed'}: {where}" + (
        "; runs read and write nothing until `bindy-agent resume`" if args.suspend else ""), file=sys.stderr)
    return common.EXIT_OK


def _summary(run: orchestrator.RunOutcome, api: Any, dry_run: bool) -> str:
    parts = []
    if dry_run and run.plan is not None:
        s = run.plan.summary
        parts.append(f"{s['create']} to create, {s['update']} to update, {s['delete']} to delete")
    if run.kube is not None:
        r = run.kube
        parts.append(f"Kubernetes: applied {len(r.applied)}, deleted {len(r.deleted)}, statuses written "
                     f"{len(r.statuses_written)}")
    if run.dns is not None:
        changed = sum(len(z.changes) for z in run.dns.zones)
        verified = sum(1 for z in run.dns.zones for c in z.checks if c.ok)
        checks = sum(len(z.checks) for z in run.dns.zones)
        parts.append(f"DNS: {changed} RRset changes in {run.dns.updates_sent} UPDATE messages, "
                     f"{len(run.dns.deleted)} zone deletions, verified {verified}/{checks}")
    if api is not None:
        parts.append(f"{api.write_count} API writes")
    failed = len(run.failures) + len(run.conflicts)
    outcome = f"{run.outcome} ({failed} failures and conflicts above)" if run.outcome == "partial" else run.outcome
    return f"{'Dry run' if dry_run else 'Sync'} of revision {run.revision}: {outcome}; " + "; ".join(parts)


def _usage(args: argparse.Namespace) -> str | None:
    if bool(args.directory) == bool(args.repo):
        return "give either DIR or --repo"
    if args.endpoints and args.in_cluster_dns:
        return "--endpoints and --in-cluster-dns exclude each other"
    if args.commit_status not in (None, "off") and not args.repo:
        return "--commit-status posts a status on a commit: it needs --repo (a directory has no commit)"
    if not _wants_cluster(args) and not args.endpoints:
        return ("nothing to sync to: give --kubeconfig (Kubernetes; $KUBECONFIG or ~/.kube/config are used when "
                "there is no other target) and/or --endpoints (DNS)")
    return None


def _wants_cluster(args: argparse.Namespace) -> bool:
    """A cluster when asked for, when DNS is found through it, or as the only target (found as kubectl does)."""
    if common.cluster_requested(args) or args.in_cluster_dns:
        return True
    return not args.endpoints and common.kubeconfig(None) is not None


def git_source(args: argparse.Namespace) -> GitSource:
    return GitSource(args.repo, args.cache, branch=args.branch, ref=args.ref, path=args.path, ssh_key=args.ssh_key,
                     known_hosts=args.known_hosts, insecure_ignore_host_key=args.insecure_ignore_host_key,
                     token_file=args.token_file, limits=common.limits(args))


# the settings of `run` that sync takes as flags of the same names: commit statuses, alerts, the zone-API token
ANNOUNCEMENTS = ("commit_status", "commit_status_token_file", "commit_status_api_url", "commit_status_project",
                 "commit_status_context", "report_url", "alert_webhook_url", "alert_webhook_secret_file",
                 "alert_slack_url_file", "notify_timeout", "notify_retries")
ZONE_API = ("zone_api_token_file", "zone_api_audience")
_METAVARS: dict[Any, str] = {float: "SECONDS", int: "N", pathlib.Path: "FILE", pathlib.Path | None: "FILE"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """sync's flags that are run's settings of the same name and meaning (agent/run/settings.py)."""
    groups = ((parser.add_argument_group("commit status and alerts (as `run`'s settings of the same names; "
                                         "statuses only with --repo)"), ANNOUNCEMENTS),
              (parser.add_argument_group("the zone API token (with --in-cluster-dns)"), ZONE_API))
    for group, fields in groups:
        for name in fields:
            field = config.Settings.model_fields[name]
            default = field.get_default()
            shown = f" (default: {default})" if default not in (None, "") else ""
            text = " ".join((field.description or "").split()) + shown
            group.add_argument("--" + name.replace("_", "-"), dest=name, default=None, help=text.replace("%", "%%"),
                               metavar=_METAVARS.get(field.annotation, name.split("_")[-1].upper()))


def _given(args: argparse.Namespace) -> config.Settings:
    """sync's flags that are run's settings, checked as run checks them (ConfigError: which flag, why)."""
    named = {name: getattr(args, name, None) for name in ANNOUNCEMENTS + ZONE_API}
    return config.load_settings({"repo": args.repo or "", **named}, environ={})


def request(args: argparse.Namespace) -> compose.Request:
    """What this sync was given, said as every verb says it (agent/run/compose.py)."""
    given = _given(args)
    source_key = args.repo or str(args.directory.resolve())
    git = compose.Git(**{f.name: getattr(args, f.name) for f in dataclasses.fields(compose.Git)}) if args.repo else None
    return compose.Request(
        compose.options(vars(args), common.policy_settings(args)), git, None if args.repo else args.directory,
        limits=common.limits(args), cluster=_wants_cluster(args), kubeconfig=common.kubeconfig(args.kubeconfig),
        context=args.context, endpoints=args.endpoints, in_cluster_dns=args.in_cluster_dns,
        zone_api_token_file=given.zone_api_token_file, zone_api_audience=given.zone_api_audience, state=args.state,
        local_state=names.CACHE_DIR / "state" / hashlib.sha256(source_key.encode()).hexdigest()[:16],
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
        print(f"using the cluster of {common.kubeconfig(None) or 'the pod'} (as kubectl would)", file=sys.stderr)
    report = progress.Reporter.for_stderr()
    try:
        run = orchestrator.run(built.source, built.targets, built.options, progress=report)
    finally:
        report.done()
    return _show(run, args, built.targets.kube_api)


def _show(run: orchestrator.RunOutcome, args: argparse.Namespace, api: Any) -> int:
    prefix = f"run {run.run_id}"
    if run.outcome in ("unreachable", "busy"):
        print(f"error: could not run: {run.message}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    if run.outcome == "suspended":  # the operator's choice, not a failure: nothing read, nothing written
        print(f"{prefix}: {run.message}", file=sys.stderr)
        return common.EXIT_OK
    if run.outcome == "unchanged":
        print(f"{prefix}: {run.message}", file=sys.stderr)
        if run.notes_pushed is False:
            print(f"{prefix}: warning: {UNPUSHED}", file=sys.stderr)
        return common.EXIT_OK
    root = args.directory if args.directory else pathlib.Path(args.path or ".")
    common.print_problems(run.problems, root, sys.stderr)
    for sha in run.superseded:
        print(f"{prefix}: {sha[:12]} superseded by {run.revision[:12] if run.revision else '?'}", file=sys.stderr)
    if run.plan is None:
        print(f"{prefix}: rejected {run.revision}: {run.message}; the last good revision keeps serving",
              file=sys.stderr)
        return common.EXIT_REJECTED
    for chunk in render.chunks(run.plan, "text"):  # written as rendered: never the whole plan at once
        sys.stdout.write(chunk)
    if run.notes_pushed is False:
        print(f"{prefix}: warning: {UNPUSHED}", file=sys.stderr)
    if api is None:
        print(f"notice: no --kubeconfig: Kubernetes steps skipped (zones and records only){_unused_kubeconfig()}",
              file=sys.stderr)
    for label, items in (("failed", run.failures), ("refused", run.refusals), ("conflict", run.conflicts)):
        for line in items:  # one line each, whatever a name in it holds
            print(f"{label}: {printable.line(line)}", file=sys.stderr)
    print(_summary(run, api, args.dry_run), file=sys.stderr)
    if run.outcome == "partial":
        print(f"{prefix}: {run.message}", file=sys.stderr)
    if run.refusals:
        return common.EXIT_REJECTED
    return common.EXIT_PARTIAL if run.outcome == "partial" else common.EXIT_OK


def _unused_kubeconfig() -> str:
    found = common.kubeconfig(None)
    return f"; {found} was not used: add --kubeconfig or --context to include its cluster" if found else ""


def _report_key(args: argparse.Namespace) -> bytes | None:
    """The key that signs (sync) or checks (report) the commit reports; None without one."""
    return signature.read_key(args.report_key_file) if args.report_key_file else None


def report(args: argparse.Namespace) -> int:
    from agent.outcome import report

    try:
        key = _report_key(args)
    except AgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    # a clone of its own under the cache: fetching notes into the one a sync is using would collide on
    # git's ref locks, and waiting for the sync's lock would block a read behind a whole run (or a sync
    # behind a read)
    source = dataclasses.replace(git_source(args), cache=args.cache / "reports")
    try:
        rev, note, full = _notes(source, args.revision, full=args.output == "json")
    except gitrevs.UnknownRevision as exc:
        print(f"error: {exc}", file=sys.stderr)
        return common.EXIT_ERROR
    except AgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    if note is None:
        print(f"no bindy-agent report on {rev}", file=sys.stderr)
        return common.EXIT_CHANGES
    summary = shown = _checked(note, rev, key, "summary")
    whole = False
    if full is not None:  # -o json: the complete report, when it is at least as trusted as the summary
        complete = _checked(full, rev, key, "full")
        if not complete.malformed and (complete.verified or not shown.verified):
            shown, whole = complete, True
        elif shown.verified:
            print(f"warning: the complete report on {rev[:12]} is not shown ({complete.reason}); this is the "
                  "summary's JSON", file=sys.stderr)
    if not shown.verified:
        print(f"warning: the report on {rev} is UNVERIFIED: {shown.reason}", file=sys.stderr)
    if args.output == "json":
        later = _later_runs(summary, shown) if whole else {}
        sys.stdout.write((shown.json_text(rev, later) if whole else json.dumps(shown.as_json(rev), indent=2)) + "\n")
    elif shown.doc is None:
        sys.stdout.write(f"UNVERIFIED: {rev}: {shown.reason}\n")
    else:
        if not shown.verified:
            sys.stdout.write(f"UNVERIFIED: {shown.reason}\n")
        sys.stdout.write(report.render_text(shown.doc))
        if shown.verified:
            sys.stdout.write("verified: signed with the report key\n")
    return common.EXIT_OK if shown.verified else EXIT_UNVERIFIED


def _later_runs(summary: signature.Shown, shown: signature.Shown) -> dict[str, Any]:
    """The later runs the note lists (report.py), for the complete report of the commit's first run:
    only from a note at least as trusted as what is shown."""
    doc = summary.doc or {}
    later = {k: doc[k] for k in ("laterRuns", "laterRunsDropped") if doc.get(k)}
    if later and shown.verified and not summary.verified:
        print(f"warning: the later runs in the note are not shown ({summary.reason})", file=sys.stderr)
        return {}
    return later


def _checked(note: StoredNote, rev: str, key: bytes | None, kind: signature.Kind) -> signature.Shown:
    if note.unread is not None:
        return signature.malformed(note.unread)
    return signature.examine(note.data, sha=rev, key=key, kind=kind)


def _notes(source: GitSource, revision: str | None, *,
           full: bool) -> tuple[str, StoredNote | None, StoredNote | None]:
    """(commit, its note, its full report) from the remote's notes, fetched into the cache; each read
    only up to the size a report may have."""
    source.repo()
    source.fetch_notes(keep_local=False)  # what the remote holds now, nothing older
    rev = gitrevs.noted_revision(source, revision, NOTES_REF)
    return (rev, source.note(rev, limit=signature.MAX_NOTE_BYTES),
            source.note(rev, full=True, limit=signature.MAX_FULL_BYTES) if full else None)
