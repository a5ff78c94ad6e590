"""Start-up cost of the CLI: `bindy-agent validate` of a one-file repository, as a pre-commit hook runs it.

    .venv/bin/python bench/cli_startup_bench.py [--runs 15] [--checkout DIR ...]

Prints the median wall time of N runs of each command, and its ratio to `python -c pass` and to the
floor (`import yaml, pydantic`), all measured in the same rounds (each round runs every command once,
in turn), so a loaded machine shows as a slower baseline rather than as a slower agent; and its CPU
time (user + system), which others' load hardly moves:

    python -c pass                      the interpreter
    python -c "import yaml, pydantic"   the floor: what any validation needs
    one pydantic model, built and used  the floor of validating with pydantic at all: `import pydantic`
                                        loads little; the first model class loads the rest of it
                                        (pydantic.main, fields, types, annotated_types, the schema
                                        generator), and its first use builds its validator
    one DNSZone model, built and used   the same with the agent's models: the models' module, the
                                        zone's validator built, the file parsed and checked
    bindy-agent --help                  building the parser (imports no verb's modules)
    bindy-agent validate DIR            the target: under 0.2 s

What `validate` costs beyond the fourth is the agent's own: its modules, the desired state (the zone's
apex NS is rendered by dnspython; its import no longer reads package metadata: agent/model/libraries.py),
the policy, and the process's end (none: it ends once its output is flushed, agent/cli `entry`). A kind's
models, dnspython's record types, the safety gate and the plan are not loaded for a repository of one
zone (tests/cli/test_startup_models.py, tests/cli/test_entry.py).

`--checkout DIR` adds `validate` run from another checkout of the project (e.g. `git worktree add
/tmp/old HEAD~1`), for before/after numbers from the same rounds. Bytecode is written and used, as
for an installed agent (PYTHONDONTWRITEBYTECODE is dropped; a first run warms it). `python -X
importtime -m agent validate DIR` shows where the rest goes.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
FLOOR = "python -c 'import yaml, pydantic'"
ZONE = """\
apiVersion: bindy.firestoned.io/v1beta1
kind: DNSZone
metadata:
  name: example-com
  namespace: dns-system
spec:
  zoneName: example.com
  ttl: 3600
  soaRecord:
    primaryNs: ns1.example.com.
    adminEmail: admin.example.com.
    serial: 2024010101
    refresh: 3600
    retry: 600
    expire: 604800
    negativeTtl: 300
"""
ONE_PYDANTIC_MODEL = ("import pathlib, sys, yaml\n"
                      "from pydantic import BaseModel, ConfigDict\n"
                      "class Zone(BaseModel):\n"
                      "    model_config = ConfigDict(defer_build=True, extra='allow')\n"
                      "    kind: str\n"
                      "doc = yaml.load(pathlib.Path(sys.argv[1]).read_text(), Loader=yaml.CSafeLoader)\n"
                      "Zone.model_validate(doc)\n")
ONE_MODEL = ("import pathlib, sys, yaml\n"
             "from agent.model import zone\n"
             "doc = yaml.load(pathlib.Path(sys.argv[1]).read_text(), Loader=yaml.CSafeLoader)\n"
             "zone.DNSZone.from_document(doc)\n")
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _once(command: list[str], cwd: pathlib.Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run."""
    start, cpu = time.perf_counter(), _cpu()
    subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, check=False)
    return time.perf_counter() - start, _cpu() - cpu


def medians(commands: dict[str, tuple[list[str], pathlib.Path]], runs: int) -> dict[str, tuple[float, float]]:
    """The median (wall, CPU) seconds of each command over `runs` rounds, each round running every command
    once. CPU time (user + system) hardly moves when other processes share the machine; wall time does."""
    for command, cwd in commands.values():  # warm the bytecode and the page cache
        _once(command, cwd)
    times: dict[str, list[tuple[float, float]]] = {label: [] for label in commands}
    for _ in range(runs):
        for label, (command, cwd) in commands.items():
            times[label].append(_once(command, cwd))
    return {label: (statistics.median(w for w, _ in spent), statistics.median(c for _, c in spent))
            for label, spent in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--checkout", type=pathlib.Path, action="append", default=[], metavar="DIR",
                        help="another checkout of the project whose validate is measured in the same rounds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = pathlib.Path(tmp)
        (repo / "zone.yaml").write_text(ZONE)
        agent = [sys.executable, "-m", "agent"]
        check = subprocess.run([*agent, "validate", str(repo)], cwd=ROOT, env=ENV, capture_output=True, text=True,
                               check=False)
        print(f"validate of the one-file repository: exit {check.returncode}: {check.stderr.strip()}")
        commands = {"python -c pass": ([sys.executable, "-c", "pass"], ROOT),
                    FLOOR: ([sys.executable, "-c", "import yaml, pydantic"], ROOT),
                    "one pydantic model, built and used": ([sys.executable, "-c", ONE_PYDANTIC_MODEL,
                                                            str(repo / "zone.yaml")], ROOT),
                    "one DNSZone model, built and used": ([sys.executable, "-c", ONE_MODEL, str(repo / "zone.yaml")],
                                                          ROOT),
                    "bindy-agent --help": ([*agent, "--help"], ROOT),
                    "bindy-agent validate DIR (one file)": ([*agent, "validate", str(repo)], ROOT)}
        for other in args.checkout:
            commands[f"validate DIR from {other}"] = ([*agent, "validate", str(repo)], other.resolve())
        spent = medians(commands, args.runs)
        base, base_cpu = spent["python -c pass"]
        floor, floor_cpu = spent[FLOOR]
        print(f"{'median of ' + str(args.runs) + ' runs':<40} {'wall':>8} {'CPU':>8}   x python -c pass   x floor"
              "   (wall, CPU)")
        for label, (wall, cpu) in spent.items():
            print(f"{label:<40} {wall:>7.3f}s {cpu:>7.3f}s   {wall / base:4.1f}x {cpu / base_cpu:4.1f}x"
                  f"       {wall / floor:4.2f}x {cpu / floor_cpu:4.2f}x")


if __name__ == "__main__":
    main()
