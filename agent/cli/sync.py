"""The verbs that change the world: install-crds, sync (a directory or a Git repository), and
report (the note the agent attached to a commit)."""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import pathlib
import sys
from typing import Any

from agent.cli import common
from agent.errors import KubeError
from agent.model import names
from agent.plan import build, render
from agent.reconcile import endpoints as config


def install_crds(args: argparse.Namespace) -> int:
    from agent.reconcile import kube

    try:
        api = common.kube_api(args)
        changed = kube.install_crds(api)
    except KubeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    print(f"CRDs: {len(changed)} applied, all {12} Established", file=sys.stderr)
    return common.EXIT_OK


def _state_store(args: argparse.Namespace, api: Any, source_key: str) -> Any:
    from agent.reconcile import state as agent_state

    if args.state:
        return agent_state.FileStore(args.state)
    if api is not None:
        return agent_state.ConfigMapStore(api, args.agent_namespace)
    digest = hashlib.sha256(source_key.encode()).hexdigest()[:16]
    path = names.CACHE_DIR / "state" / f"{digest}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return agent_state.FileStore(path)


def _summary(run: Any, api: Any, dry_run: bool) -> str:
    parts = []
    if run.kube and run.kube.result:
        r = run.kube.result
        parts.append(f"Kubernetes: applied {len(r.applied)}, deleted {len(r.deleted)}, statuses written "
                     f"{len(r.statuses_written)}")
    if run.dns:
        changed = sum(len(z.changes) for z in run.dns.zones)
        verified = sum(1 for z in run.dns.zones for c in z.checks if c.ok)
        checks = sum(len(z.checks) for z in run.dns.zones)
        parts.append(f"DNS: {changed} RRset changes in {run.dns.updates_sent} UPDATE messages, "
                     f"{len(run.dns.deleted)} zone deletions, verified {verified}/{checks}")
    if api is not None:
        parts.append(f"{api.write_count} API writes")
    return f"{'Dry run' if dry_run else 'Sync'} of revision {run.revision}: " + "; ".join(parts)


def sync(args: argparse.Namespace) -> int:
    from agent.errors import AgentError
    from agent.run import orchestrator as runner
    from agent.sources import localdir

    usage = None
    if bool(args.directory) == bool(args.repo):
        usage = "give either DIR or --repo"
    elif not args.kubeconfig and not args.endpoints and not args.in_cluster_dns:
        usage = "nothing to sync to: give --kubeconfig (Kubernetes) and/or --endpoints (DNS)"
    elif args.endpoints and args.in_cluster_dns:
        usage = "--endpoints and --in-cluster-dns exclude each other"
    if usage:
        print(f"bindy-agent sync: error: {usage}", file=sys.stderr)
        return common.EXIT_ERROR
    try:
        api = common.kube_api(args) if args.kubeconfig or args.in_cluster_dns else None
        endpoints: Any = config.load_endpoints(args.endpoints) if args.endpoints else None
        if args.in_cluster_dns:
            from agent.reconcile import endpoints as cluster_endpoints

            assert api is not None
            endpoints = functools.partial(cluster_endpoints.from_cluster, api)
        store = _state_store(args, api, args.repo or str(args.directory.resolve()))
        apply_args = {"kube_api": api, "endpoints": endpoints, "dry_run": args.dry_run, "force": args.force,
                  "install_crds": args.install_crds, "agent_namespace": args.agent_namespace,
                  "rotate_rndc_keys": args.rotate_rndc_keys, "batch": args.batch}
        if args.repo:
            return _sync_git(args, store, apply_args)
        state = common.valid_state(args, "applied")
        if state is None:
            return common.EXIT_REJECTED
        revision = localdir.revision(args.directory)
        agent_state = store.load()
        run = runner.apply_revision(state, revision=revision, agent_state=agent_state, **apply_args)
        if not args.dry_run:
            store.save(agent_state)
    except AgentError as exc:
        print(f"error: could not run: {exc}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    kube_changes = run.kube.plan_changes if run.kube else None
    sys.stdout.write(render.render_text(build.online(state, kube_changes, run.dns, revision=revision)))
    return _finish(run, api, args)


def _finish(run: Any, api: Any, args: argparse.Namespace) -> int:
    if api is None:
        print("notice: no --kubeconfig: Kubernetes steps skipped (zones and records only)", file=sys.stderr)
    for line in run.failures:
        print(f"failed: {line}", file=sys.stderr)
    for line in run.refused:
        print(f"refused: {line}", file=sys.stderr)
    print(_summary(run, api, args.dry_run), file=sys.stderr)
    if run.refused:
        return common.EXIT_REJECTED
    return common.EXIT_PARTIAL if run.failures else common.EXIT_OK


def _git_source(args: argparse.Namespace) -> Any:
    from agent.sources.git import GitSource

    return GitSource(args.repo, args.cache, branch=args.branch, ref=args.ref, path=args.path, ssh_key=args.ssh_key,
                     known_hosts=args.known_hosts, insecure_ignore_host_key=args.insecure_ignore_host_key,
                     token_file=args.token_file)


def _sync_git(args: argparse.Namespace, store: Any, apply_args: dict[str, Any]) -> int:
    from agent.run import orchestrator as runner

    source = _git_source(args)
    run = runner.sync_git(source, store=store, push_notes=args.push_notes, resync_after=args.resync_after,
                          default_namespace=args.namespace, **apply_args)
    prefix = f"run {run.run_id}"
    if run.outcome == "unreachable":
        print(f"error: could not run: {run.message}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    if run.outcome == "unchanged":
        print(f"{prefix}: {run.message}", file=sys.stderr)
        return common.EXIT_OK
    common.print_problems(run.problems, pathlib.Path(args.path or "."), sys.stderr)
    for sha in run.superseded:
        print(f"{prefix}: {sha[:12]} superseded by {run.revision[:12] if run.revision else '?'}", file=sys.stderr)
    if run.result is None:
        print(f"{prefix}: rejected {run.revision}: {run.message}; the last good revision keeps serving",
              file=sys.stderr)
        return common.EXIT_REJECTED
    if run.plan is not None:
        sys.stdout.write(render.render_text(run.plan))
    if run.notes_pushed is False:
        print(f"{prefix}: warning: the report could not be pushed (kept in the local clone)", file=sys.stderr)
    return _finish(run.result, apply_args["kube_api"], args)


def report(args: argparse.Namespace) -> int:
    from agent.errors import AgentError
    from agent.outcome import report

    source = _git_source(args)
    try:
        source.repo()
        source.fetch_notes()
        rev = args.revision or source.remote_head()
        if len(rev) != 40:
            rev = str(source.repo().git.rev_parse(rev)) if rev != "HEAD" else source.remote_head()
    except AgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    note = source.note(rev)
    if note is None:
        print(f"no bindy-agent report on {rev}", file=sys.stderr)
        return common.EXIT_CHANGES
    try:
        doc = report.parse(note)
    except ValueError as exc:
        print(f"{rev}: {exc}", file=sys.stderr)
        return common.EXIT_ERROR
    sys.stdout.write(json.dumps(doc, indent=2) + "\n" if args.output == "json" else report.render_text(doc))
    return common.EXIT_OK
