"""`bindy-agent run`: the long-running agent (see agent/run/scheduler.py)."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from agent.cli import common
from agent.run import settings as config


def run(args: argparse.Namespace) -> int:
    import signal
    import threading

    from agent.errors import AgentError
    from agent.run import logs, scheduler

    flags = {name: getattr(args, name) for name in config.Settings.model_fields}
    try:
        settings = config.load_settings(flags, config_file=args.config)
    except AgentError as exc:
        print(f"bindy-agent run: error: {exc}", file=sys.stderr)
        return common.EXIT_ERROR
    if args.print_config:
        print(json.dumps(settings.masked(), indent=2))
        return common.EXIT_OK
    logs.configure(settings.log_format)
    try:
        agent = scheduler.Agent(settings)
    except (AgentError, OSError) as exc:
        print(f"bindy-agent run: error: {exc}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    agent.start()
    done.wait()
    logging.getLogger("agent").info("stopping: finishing the current run")
    agent.stop()
    return common.EXIT_OK
