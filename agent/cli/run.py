"""`bindy-agent run`: the long-running agent (agent/run/agent.py)."""

from __future__ import annotations

import argparse
import json
import logging
import pathlib
import signal
import sys
import threading

from agent.cli import common, flagsets, settingflags
from agent.errors import AgentError, ConfigError
from agent.run import settings as config

EXAMPLES = flagsets.examples(
    ("follow a branch and apply each push to the cluster of the kubeconfig",
     "bindy-agent run --repo https://git.example.com/dns.git --kubeconfig ~/.kube/config"),
    ("the same settings from the environment (as in the agent's Deployment)",
     "BINDY_AGENT_REPO=https://git.example.com/dns.git "
     "BINDY_AGENT_IN_CLUSTER=true bindy-agent run"),
    ("the settings run would use, and why it would refuse them",
     "bindy-agent run --config agent.yaml --print-config"))


def build(add: common.AddVerb) -> None:
    rn = add(description="Sync a Git repository on an interval and on signed push webhooks; serve "
             "/healthz, /readyz, /metrics and POST /hooks/git. Settings come from flags, then "
             "BINDY_AGENT_* environment variables, then --config FILE. SIGTERM finishes the "
             "current run and exits.", epilog=EXAMPLES)
    rn.set_defaults(func=run)
    rn.add_argument("--config", type=common.readable_file, metavar="FILE",
                    help="YAML file of settings")
    rn.add_argument("--print-config", action="store_true",
                    help="print the effective settings and exit")
    for name, field in config.Settings.model_fields.items():
        settingflags.setting_flag(rn, name, field)
    flagsets.alias(rn, "--namespace", "-n")


def _fail(exc: Exception, status: int) -> int:
    print(f"bindy-agent run: error: {exc}", file=sys.stderr)
    return status


def print_config(flags: dict[str, object], args: argparse.Namespace) -> int:
    """The effective settings on stdout (even incomplete ones); why `run` would refuse them on
    stderr."""
    try:
        shown, refusals = config.effective(flags, config_file=args.config)
    except AgentError as exc:
        return _fail(exc, common.EXIT_ERROR)
    print(json.dumps(shown, indent=2))
    for reason in refusals:
        print(f"bindy-agent run: note: `run` would refuse these settings: {reason}",
              file=sys.stderr)
    return common.EXIT_OK


def _with_found_kubeconfig(settings: config.Settings) -> config.Settings:
    """With no target at all, the cluster kubectl would use ($KUBECONFIG, ~/.kube/config) is the
    target."""
    if settings.kubeconfig or settings.in_cluster or settings.endpoints or settings.in_cluster_dns:
        return settings
    found = common.kubeconfig(None)
    if found is None:
        return settings
    print(f"bindy-agent run: using the cluster of {found} (as kubectl would)", file=sys.stderr)
    return settings.model_copy(update={"kubeconfig": pathlib.Path(found)})


def stop_requested() -> threading.Event:
    """An event SIGTERM and SIGINT set (installed from the main thread, before the agent's threads
    start)."""
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    return done


def wait_until(stop: threading.Event, *, tick: float = 0.25) -> None:
    """Block the main thread until `stop` is set.

    Python runs a signal's handler in the main thread, but the kernel may deliver SIGTERM to any of
    the agent's threads; a main thread blocked in a wait without a timeout is then never woken to
    run the handler and the agent ignores the signal. Waking every `tick` lets the handler run
    within a tick.
    """
    while not stop.wait(tick):
        pass


def run(args: argparse.Namespace) -> int:
    from agent.run import agent as run_agent
    from agent.run import logs

    flags = {name: getattr(args, name) for name in config.Settings.model_fields}
    if args.print_config:
        return print_config(flags, args)
    try:
        settings = _with_found_kubeconfig(config.load_settings(flags, config_file=args.config))
        config.check_runnable(settings)
    except AgentError as exc:
        return _fail(exc, common.EXIT_ERROR)
    logs.configure(settings.log_format, logs.level(settings.log_level))
    try:
        agent = run_agent.Agent(settings)
    except ConfigError as exc:
        return _fail(exc, common.EXIT_ERROR)
    except (AgentError, OSError) as exc:
        return _fail(exc, common.EXIT_UNREACHABLE)
    stop = stop_requested()
    agent.start()
    wait_until(stop)
    logging.getLogger("agent").info("stopping: finishing the current run")
    agent.stop()
    return common.EXIT_OK
