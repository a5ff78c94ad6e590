"""The `bindy-agent` command line. The only module that prints.

    bindy-agent validate DIR               exit 0 valid, 1 invalid, 2 usage error
    bindy-agent plan DIR [--output FMT]    exit 0 no changes, 1 changes, 2 error (like `flux diff`)
    bindy-agent schemas [--check]          write (or check) schemas/ from the models
    bindy-agent install-crds --kubeconfig F      apply the CRDs, wait until Established
    bindy-agent sync DIR --kubeconfig F [--dry-run]
                                           exit 0 applied/nothing to do, 1 partial,
                                           2 rejected (invalid), 3 could not run

Problems go to stderr as `file:line: Kind/ns/name: field.path: message`; the plan goes to stdout.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import logging
import pathlib
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from agent import __version__, config, desired, kubediff, loader, plan, problems
from agent.errors import KubeError
from agent.model import schema

EXIT_OK, EXIT_CHANGES, EXIT_ERROR = 0, 1, 2
EXIT_INVALID = 1
EXIT_PARTIAL, EXIT_REJECTED, EXIT_UNREACHABLE = 1, 2, 3
DEFAULT_SCHEMAS = pathlib.Path("schemas")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


def _directory(value: str) -> pathlib.Path:
    path = pathlib.Path(value)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{value!r} is not a directory")
    return path


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="bindy-agent", description="GitOps agent for Bindy DNS custom resources: "
                     "validates a repository of bindy.firestoned.io/v1beta1 CRs and plans or applies "
                     "them to Kubernetes and BIND9.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details to stderr")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    verbs.required = True

    common = _Parser(add_help=False)
    common.add_argument("directory", type=_directory, metavar="DIR",
                        help="directory of CR YAML files (searched recursively)")
    common.add_argument("--namespace", default="default", metavar="NS",
                        help="namespace for namespaced objects that name none (default: %(default)s)")

    v = verbs.add_parser("validate", parents=[common], help="check a directory of CRs",
                         description="Parse and validate every YAML document below DIR; report every "
                         "problem with file:line. Exit 0 valid, 1 invalid, 2 usage error.")
    v.set_defaults(func=_validate)
    v.add_argument("-q", "--quiet", action="store_true", help="do not print warnings")

    kube = _Parser(add_help=False)
    kube.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig to use (default: in-cluster)")
    kube.add_argument("--context", help="kubeconfig context (default: the current one)")
    kube.add_argument("--agent-namespace", default="bindy-agent", metavar="NS",
                      help="namespace of the agent's inventory (default: %(default)s)")

    p = verbs.add_parser("plan", parents=[common], help="show what a sync would change (dry run)",
                         description="Compute the plan for DIR. Offline (no --kubeconfig), the world "
                         "is empty, so the plan lists every Kubernetes object, every zone on every "
                         "instance and every RRset. With --kubeconfig, the Kubernetes layer is diffed "
                         "against the live cluster (creates, field-level updates, drift, deletes, "
                         "conflicts). Exit 0 no changes, 1 changes, 2 error.")
    p.add_argument("--kubeconfig", metavar="FILE", help="plan against this cluster instead of offline")
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--agent-namespace", default="bindy-agent", metavar="NS", help=argparse.SUPPRESS)
    p.set_defaults(func=_plan)
    p.add_argument("-o", "--output", choices=sorted(plan.RENDERERS), default="text",
                   help="plan format (default: %(default)s)")

    sy = verbs.add_parser("sync", parents=[kube], help="apply a directory or a Git repository",
                          description="Validate a revision as a whole, then apply it: CRDs (unless "
                          "--no-install-crds), the hierarchy of objects with server-side apply, prune of what the "
                          "agent created and Git no longer has, zones and records (with --endpoints or "
                          "--in-cluster-dns), and CR status. With --repo, the revision comes from Git and a "
                          "report is attached to the commit as a git note. Exit 0 applied or nothing to do, "
                          "1 partial, 2 rejected (invalid or unsafe), 3 could not run.")
    sy.set_defaults(func=_sync)
    sy.add_argument("directory", type=_directory, metavar="DIR", nargs="?",
                    help="directory of CR YAML files (or use --repo)")
    sy.add_argument("--namespace", default="default", metavar="NS",
                    help="namespace for namespaced objects that name none (default: %(default)s)")
    sy.add_argument("--dry-run", action="store_true", help="plan against the live world; write nothing")
    sy.add_argument("--no-install-crds", dest="install_crds", action="store_false",
                    help="do not apply the CRDs first")
    sy.add_argument("--rotate-rndc-keys", action="store_true",
                    help="generate new RNDC keys for every generated key Secret")
    sy.add_argument("--endpoints", type=pathlib.Path, metavar="FILE",
                    help="instance -> DNS/zone API/key map (see agent/config.py); enables the DNS steps")
    sy.add_argument("--in-cluster-dns", action="store_true",
                    help="reach instances through their Services and RNDC Secrets (when the agent runs in "
                    "the cluster); instead of --endpoints")
    sy.add_argument("--state", type=pathlib.Path, metavar="FILE",
                    help="the agent's state file for runs without a cluster "
                    "(default: ~/.cache/bindy-agent/state/<source digest>.json)")
    sy.add_argument("--force", action="store_true",
                    help="apply plans the safety gate refuses (mass deletes, apex NS changes)")
    sy.add_argument("--batch", type=int, default=1000, metavar="N",
                    help="changes per DNS UPDATE message (default: %(default)s)")
    git_args = sy.add_argument_group("Git source")
    git_args.add_argument("--repo", metavar="URL", help="Git repository (URL or local path) instead of DIR")
    git_args.add_argument("--branch", default="main", help="branch to follow (default: %(default)s)")
    git_args.add_argument("--ref", help="pin a tag or commit instead of following the branch")
    git_args.add_argument("--path", default="", help="sub-directory of the repository holding the CRs")
    git_args.add_argument("--cache", type=pathlib.Path, default=pathlib.Path.home() / ".cache" / "bindy-agent" / "git",
                          help="where the clone is kept (default: %(default)s)")
    git_args.add_argument("--ssh-key", type=pathlib.Path, metavar="FILE", help="SSH deploy key")
    git_args.add_argument("--known-hosts", type=pathlib.Path, metavar="FILE", help="known_hosts for the SSH key")
    git_args.add_argument("--insecure-ignore-host-key", action="store_true",
                          help="do not check the Git server's SSH host key (not recommended)")
    git_args.add_argument("--token-file", type=pathlib.Path, metavar="FILE", help="HTTPS token, read from a file")
    git_args.add_argument("--no-push-notes", dest="push_notes", action="store_false",
                          help="keep the commit reports local instead of pushing refs/notes/bindy-agent")
    git_args.add_argument("--resync-after", type=float, default=600, metavar="SECONDS",
                          help="an unchanged revision is a no-op until this long after the last full "
                          "reconcile (default: %(default)s)")

    rn = verbs.add_parser("run", help="the long-running agent: scheduled syncs, webhook, health, metrics",
                          description="Sync a Git repository on an interval and on signed push webhooks; serve "
                          "/healthz, /readyz, /metrics and POST /hooks/git. Settings come from flags, then "
                          "BINDY_AGENT_* environment variables, then --config FILE. SIGTERM finishes the "
                          "current run and exits.")
    rn.set_defaults(func=_run)
    rn.add_argument("--config", type=pathlib.Path, metavar="FILE", help="YAML file of settings")
    rn.add_argument("--print-config", action="store_true", help="print the effective settings and exit")
    for name, field in config.Settings.model_fields.items():
        flag = "--" + name.replace("_", "-")
        if field.annotation is bool:
            rn.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=None)
        else:
            rn.add_argument(flag, dest=name, default=None, help=field.description)

    rp = verbs.add_parser("report", help="print the report the agent attached to a commit",
                          description="Fetch refs/notes/bindy-agent from the repository and print the report on "
                          "REV (default: the head of --branch). Exit 0 shown, 1 no report, 3 could not run.")
    rp.set_defaults(func=_report)
    rp.add_argument("revision", nargs="?", metavar="REV", help="commit (default: the branch head)")
    rp.add_argument("--repo", required=True, metavar="URL", help="Git repository (URL or local path)")
    rp.add_argument("--branch", default="main", help="branch whose head is shown by default")
    rp.add_argument("-o", "--output", choices=["text", "json"], default="text")
    rp.add_argument("--cache", type=pathlib.Path, default=pathlib.Path.home() / ".cache" / "bindy-agent" / "git")
    for name in ("ref", "ssh_key", "known_hosts", "token_file"):
        rp.set_defaults(**{name: None})
    rp.set_defaults(path="", insecure_ignore_host_key=False)
    rp.add_argument("--ssh-key", type=pathlib.Path, metavar="FILE", help="SSH deploy key")
    rp.add_argument("--known-hosts", type=pathlib.Path, metavar="FILE", help="known_hosts for the SSH key")
    rp.add_argument("--token-file", type=pathlib.Path, metavar="FILE", help="HTTPS token, read from a file")

    ic = verbs.add_parser("install-crds", parents=[kube], help="apply the CRDs and wait until Established",
                          description="Apply the 12 CRDs generated from the models (schemas/crds) and wait "
                          "until the API server serves them. Exit 0 done, 3 could not run.")
    ic.set_defaults(func=_install_crds)

    s = verbs.add_parser("schemas", help="write the JSON Schemas and CRDs generated from the models",
                         description="Write schemas/json/<Kind>.json and schemas/crds/<crd>.yaml from "
                         "the models. With --check, write nothing and exit 1 if they differ.")
    s.set_defaults(func=_schemas)
    s.add_argument("--dir", type=pathlib.Path, default=DEFAULT_SCHEMAS, metavar="DIR",
                   help="output directory (default: %(default)s)")
    s.add_argument("--check", action="store_true", help="exit 1 if the files differ from the models")
    return parser


def _print_problems(items: Sequence[problems.Problem], root: pathlib.Path, out: TextIO,
                    *, quiet: bool = False) -> None:
    for p in problems.sorted_problems(items):
        if quiet and p.severity is problems.Severity.WARNING:
            continue
        prefix = "warning: " if p.severity is problems.Severity.WARNING else ""
        if p.origin:
            p = problems.Problem(problems.Origin(str(root / p.origin.file), p.origin.line), p.obj,
                                 p.path, p.message, p.severity)
        print(f"{prefix}{p}", file=out)


def _load(args: argparse.Namespace) -> tuple[loader.Manifest, desired.Desired | None]:
    manifest = loader.load_dir(args.directory, default_namespace=args.namespace)
    if not manifest.ok:
        return manifest, None
    return manifest, desired.build(manifest)


def _validate(args: argparse.Namespace) -> int:
    manifest, state = _load(args)
    found = manifest.problems + (state.problems if state else [])
    _print_problems(found, args.directory, sys.stderr, quiet=args.quiet)
    errors, warns = len(problems.errors(found)), len(problems.warnings(found))
    where = f"{args.directory}: {len(manifest.objects)} objects in {manifest.files} files"
    if errors:
        print(f"{where}: invalid: {errors} errors, {warns} warnings", file=sys.stderr)
        return EXIT_INVALID
    print(f"{where}: valid ({warns} warnings)", file=sys.stderr)
    return EXIT_OK


def _valid_state(args: argparse.Namespace, verb: str) -> desired.Desired | None:
    manifest, state = _load(args)
    found = manifest.problems + (state.problems if state else [])
    _print_problems(found, args.directory, sys.stderr)
    if state is None or problems.errors(found):
        print(f"{args.directory}: invalid: nothing {verb} ({len(problems.errors(found))} errors)", file=sys.stderr)
        return None
    return state


def _kube_api(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from agent.reconcile import kubeapi

    return kubeapi.KubeApi.from_kubeconfig(args.kubeconfig, context=args.context)


def _plan(args: argparse.Namespace) -> int:
    state = _valid_state(args, "planned")
    if state is None:
        return EXIT_ERROR
    if not args.kubeconfig:
        result = plan.offline(state)
    else:
        from agent.reconcile import kube
        from agent.sources import localdir

        try:
            api = _kube_api(args)
            observed = kube.observe(api, state, agent_namespace=args.agent_namespace)
        except KubeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_ERROR
        changes = kubediff.diff(state.objects, observed.live, observed.inventory, agent=args.agent_namespace)
        result = plan.online_kube(state, changes, revision=localdir.revision(args.directory))
    sys.stdout.write(plan.RENDERERS[args.output](result))
    return EXIT_OK if result.empty else EXIT_CHANGES


def _install_crds(args: argparse.Namespace) -> int:
    from agent.reconcile import kube

    try:
        api = _kube_api(args)
        changed = kube.install_crds(api)
    except KubeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    print(f"CRDs: {len(changed)} applied, all {12} Established", file=sys.stderr)
    return EXIT_OK


def _state_store(args: argparse.Namespace, api: object | None, source_key: str):  # type: ignore[no-untyped-def]
    from agent.reconcile import state as agent_state

    if args.state:
        return agent_state.FileStore(args.state)
    if api is not None:
        return agent_state.ConfigMapStore(api, args.agent_namespace)  # type: ignore[arg-type]
    digest = hashlib.sha256(source_key.encode()).hexdigest()[:16]
    path = pathlib.Path.home() / ".cache" / "bindy-agent" / "state" / f"{digest}.json"
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


def _sync(args: argparse.Namespace) -> int:
    from agent import config, runner
    from agent.errors import AgentError
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
        return EXIT_ERROR
    try:
        api = _kube_api(args) if args.kubeconfig or args.in_cluster_dns else None
        endpoints: Any = config.load_endpoints(args.endpoints) if args.endpoints else None
        if args.in_cluster_dns:
            from agent.reconcile import endpoints as cluster_endpoints

            assert api is not None
            endpoints = functools.partial(cluster_endpoints.from_cluster, api)
        store = _state_store(args, api, args.repo or str(args.directory.resolve()))
        common = {"kube_api": api, "endpoints": endpoints, "dry_run": args.dry_run, "force": args.force,
                  "install_crds": args.install_crds, "agent_namespace": args.agent_namespace,
                  "rotate_rndc_keys": args.rotate_rndc_keys, "batch": args.batch}
        if args.repo:
            return _sync_git(args, store, common)
        state = _valid_state(args, "applied")
        if state is None:
            return EXIT_REJECTED
        revision = localdir.revision(args.directory)
        agent_state = store.load()
        run = runner.apply_revision(state, revision=revision, agent_state=agent_state, **common)
        if not args.dry_run:
            store.save(agent_state)
    except AgentError as exc:
        print(f"error: could not run: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    kube_changes = run.kube.plan_changes if run.kube else None
    sys.stdout.write(plan.render_text(plan.online(state, kube_changes, run.dns, revision=revision)))
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
        return EXIT_REJECTED
    return EXIT_PARTIAL if run.failures else EXIT_OK


def _git_source(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from agent.sources.git import GitSource

    return GitSource(args.repo, args.cache, branch=args.branch, ref=args.ref, path=args.path, ssh_key=args.ssh_key,
                     known_hosts=args.known_hosts, insecure_ignore_host_key=args.insecure_ignore_host_key,
                     token_file=args.token_file)


def _sync_git(args: argparse.Namespace, store: Any, common: dict[str, Any]) -> int:
    from agent import runner

    source = _git_source(args)
    run = runner.sync_git(source, store=store, push_notes=args.push_notes, resync_after=args.resync_after,
                          default_namespace=args.namespace, **common)
    prefix = f"run {run.run_id}"
    if run.outcome == "unreachable":
        print(f"error: could not run: {run.message}", file=sys.stderr)
        return EXIT_UNREACHABLE
    if run.outcome == "unchanged":
        print(f"{prefix}: {run.message}", file=sys.stderr)
        return EXIT_OK
    _print_problems(run.problems, pathlib.Path(args.path or "."), sys.stderr)
    for sha in run.superseded:
        print(f"{prefix}: {sha[:12]} superseded by {run.revision[:12] if run.revision else '?'}", file=sys.stderr)
    if run.result is None:
        print(f"{prefix}: rejected {run.revision}: {run.message}; the last good revision keeps serving",
              file=sys.stderr)
        return EXIT_REJECTED
    if run.plan is not None:
        sys.stdout.write(plan.render_text(run.plan))
    if run.notes_pushed is False:
        print(f"{prefix}: warning: the report could not be pushed (kept in the local clone)", file=sys.stderr)
    return _finish(run.result, common["kube_api"], args)


def _report(args: argparse.Namespace) -> int:
    from agent import report
    from agent.errors import AgentError

    source = _git_source(args)
    try:
        source.repo()
        source.fetch_notes()
        rev = args.revision or source.remote_head()
        if len(rev) != 40:
            rev = str(source.repo().git.rev_parse(rev)) if rev != "HEAD" else source.remote_head()
    except AgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    note = source.note(rev)
    if note is None:
        print(f"no bindy-agent report on {rev}", file=sys.stderr)
        return EXIT_CHANGES
    try:
        doc = report.parse(note)
    except ValueError as exc:
        print(f"{rev}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    sys.stdout.write(json.dumps(doc, indent=2) + "\n" if args.output == "json" else report.render_text(doc))
    return EXIT_OK


def _schemas(args: argparse.Namespace) -> int:
    files = schema.rendered()
    stale = []
    for rel, text in sorted(files.items()):
        path = args.dir / rel
        current = path.read_text() if path.exists() else None
        if current != text:
            stale.append(rel)
            if not args.check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    known = set(files)
    extra = sorted(p.relative_to(args.dir).as_posix() for p in args.dir.rglob("*")
                   if p.is_file() and p.relative_to(args.dir).as_posix() not in known) if args.dir.exists() else []
    if args.check:
        for rel in stale:
            print(f"{args.dir / rel}: differs from the models; run `bindy-agent schemas`", file=sys.stderr)
        for rel in extra:
            print(f"{args.dir / rel}: not generated from any model; remove it", file=sys.stderr)
        return EXIT_CHANGES if stale or extra else EXIT_OK
    print(f"{args.dir}: {len(stale)} of {len(files)} files written", file=sys.stderr)
    return EXIT_OK




def _run(args: argparse.Namespace) -> int:
    import signal
    import threading

    from agent import logs, scheduler
    from agent.errors import AgentError

    flags = {name: getattr(args, name) for name in config.Settings.model_fields}
    try:
        settings = config.load_settings(flags, config_file=args.config)
    except AgentError as exc:
        print(f"bindy-agent run: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.print_config:
        print(json.dumps(settings.masked(), indent=2))
        return EXIT_OK
    logs.configure(settings.log_format)
    try:
        agent = scheduler.Agent(settings)
    except (AgentError, OSError) as exc:
        print(f"bindy-agent run: error: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    agent.start()
    done.wait()
    logging.getLogger("agent").info("stopping: finishing the current run")
    agent.stop()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    return int(args.func(args))
