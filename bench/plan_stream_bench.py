"""Whole plans as whole processes: `bindy-agent plan -o json|text|markdown` and `validate`, against a
bare C-loader parse of the same files, measured in the same run (issue 28, "Streamed plans").

    .venv/bin/python bench/plan_stream_bench.py [--records 100000] [--repeat 3] [--dir DIR] [--checkout DIR ...]
                                                [--only validate,plan -o json]

N records in N/100 zones (bench/parse_bench.py's generator; an existing --dir is used as it is).
Every figure is a fresh process, measured from outside: wall time from spawn to exit, CPU time
(user + system) and peak RSS (ru_maxrss of the child, from wait4). The baseline is
`list(yaml.load_all(f, CSafeLoader))` of every file, keeping its documents, in a fresh interpreter.
Runs are interleaved (a shared machine's speed drifts between runs, not within a round), every other
round in the reverse order (no process always runs right after the same one); the best time and the
highest peak of --repeat are shown, and beside them the median of each round's own ratio to that
round's bare parse (paired: a round slowed by the machine slows both), the spread of those ratios
saying how much to trust the figure. `--only` runs the bare parse and the named processes alone
(e.g. `--only validate`: more rounds in the same time).
Plans are written to a file; "first byte" is when the first byte of `plan -o json` reached a pipe
the bench drains (a streamed plan starts writing as soon as the plan is made).

Targets at 100,000 records: plan -o json <= 1.5x the bare parse in time and in peak RSS,
validate <= 1.2x in time.

`--checkout DIR` adds `validate` run from another checkout of the project (e.g. `git worktree add
/tmp/old HEAD~1`), for before/after figures from the same rounds.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

BARE = """
import pathlib, sys, yaml
root = pathlib.Path(sys.argv[1])
kept = [list(yaml.load_all(p.read_text(), Loader=yaml.CSafeLoader)) for p in sorted(root.rglob("*.yaml"))]
print(sum(map(len, kept)))
"""
FLAGS = ["--namespace", "dns", "--allowed-namespaces", "*"]


def commands(root: pathlib.Path, checkouts: tuple[pathlib.Path, ...] = ()) -> dict[str, tuple[list[str], pathlib.Path]]:
    """Each process, with the directory it runs in (`python -m agent` runs the agent of that checkout)."""
    agent = [sys.executable, "-m", "agent"]
    out = {
        "bare parse": ([sys.executable, "-c", BARE, str(root)], ROOT),
        "validate": ([*agent, "validate", str(root), *FLAGS, "-q"], ROOT),
        "plan -o json": ([*agent, "plan", str(root), *FLAGS, "-o", "json"], ROOT),
        "plan -o text": ([*agent, "plan", str(root), *FLAGS, "-o", "text"], ROOT),
        "plan -o markdown": ([*agent, "plan", str(root), *FLAGS, "-o", "markdown"], ROOT),
    }
    for i, other in enumerate(checkouts, 1):
        out[f"validate ({i})"] = ([*agent, "validate", str(root), *FLAGS, "-q"], other.resolve())
    return out


def measure(argv: list[str], out: pathlib.Path, cwd: pathlib.Path = ROOT) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MiB) of one process writing its stdout to `out`."""
    with open(out, "wb") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.DEVNULL, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:  # plan and validate of a valid revision: 0
        raise SystemExit(f"{argv[2:4]} exited {proc.returncode}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def first_byte(argv: list[str]) -> tuple[float, float]:
    """(seconds to the first byte on a pipe, seconds to the end) of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    assert proc.stdout is not None
    first = proc.stdout.read(1)
    first_at = time.perf_counter() - start
    while proc.stdout.read(1 << 20):
        pass
    proc.wait()
    assert first, "no output"
    return first_at, time.perf_counter() - start


def run(root: pathlib.Path, repeat: int, checkouts: tuple[pathlib.Path, ...] = (),
        only: tuple[str, ...] = ()) -> None:
    cmds = commands(root, checkouts) if checkouts else commands(root)
    if only:
        unknown = set(only) - set(cmds)
        if unknown:
            raise SystemExit(f"--only: no process {', '.join(sorted(unknown))}; known: {', '.join(cmds)}")
        cmds = {name: cmd for name, cmd in cmds.items()
                if name == "bare parse" or name in only or name.startswith("validate (")}
    wall: dict[str, list[float]] = {name: [] for name in cmds}
    cpu: dict[str, list[float]] = {name: [] for name in cmds}
    peaks: dict[str, list[float]] = {name: [] for name in cmds}
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(repeat):
            for name, (argv, cwd) in list(cmds.items())[::-1 if round_ % 2 else 1]:
                out = pathlib.Path(tmp) / "out"
                seconds, busy, peak = measure(argv, out, cwd)
                wall[name].append(seconds)
                cpu[name].append(busy)
                peaks[name].append(peak)
                sizes[name] = out.stat().st_size
                print(f"  {name:<18} {seconds:7.2f} s {busy:7.2f} s CPU {peak:8.0f} MiB", file=sys.stderr, flush=True)
    bare = {"wall": min(wall["bare parse"]), "cpu": min(cpu["bare parse"]), "rss": max(peaks["bare parse"])}
    targets = {"validate": ("<=1.20x", ""), "plan -o json": ("<=1.50x", "<=1.50x")}
    print(f"{'process':<18} {'wall s':>7} {'x bare':>7} {'CPU s':>7} {'x bare':>7} {'target':>8} {'peak MiB':>9}"
          f" {'x bare':>7} {'target':>8} {'output':>9}")
    for name in cmds:
        w, c, m = min(wall[name]), min(cpu[name]), max(peaks[name])
        t_target, m_target = targets.get(name, ("", ""))
        print(f"{name:<18} {w:7.2f} {w / bare['wall']:6.2f}x {c:7.2f} {c / bare['cpu']:6.2f}x {t_target:>8}"
              f" {m:9.0f} {m / bare['rss']:6.2f}x {m_target:>8} {sizes[name] / 1e6:7.1f}MB")
    print("per round, x that round's bare parse: median [lowest - highest]")
    for name in cmds:
        if name != "bare parse":
            print(f"{name:<18} wall {_paired(wall[name], wall['bare parse'])}"
                  f"   CPU {_paired(cpu[name], cpu['bare parse'])}")
    if "plan -o json" in cmds:
        first, whole = first_byte(cmds["plan -o json"][0])
        print(f"plan -o json to a pipe: first byte after {first:.2f} s, last after {whole:.2f} s")
    for i, other in enumerate(checkouts, 1):
        theirs = f"validate ({i})"
        print(f"{theirs}: from {other}; validate x {theirs}, same round: wall {_paired(wall['validate'], wall[theirs])}"
              f"   CPU {_paired(cpu['validate'], cpu[theirs])}")
    print("(best wall and CPU time of the runs, highest peak RSS; times on a shared machine: compare CPU)")


def _paired(times: list[float], bare: list[float]) -> str:
    """The median of each round's ratio to the bare parse of the same round, and their range."""
    ratios = [t / b for t, b in zip(times, bare, strict=True)]
    return f"{statistics.median(ratios):5.2f}x [{min(ratios):.2f} - {max(ratios):.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=pathlib.Path, help="the generated repository (made if missing; kept)")
    parser.add_argument("--checkout", type=pathlib.Path, action="append", default=[], metavar="DIR",
                        help="another checkout of the project whose validate is measured in the same rounds")
    parser.add_argument("--only", default="", metavar="NAMES",
                        help="comma-separated processes to measure beside the bare parse (e.g. validate)")
    args = parser.parse_args()
    import parse_bench

    with tempfile.TemporaryDirectory() as tmp:
        root = args.dir or pathlib.Path(tmp) / "repo"
        if not root.exists():
            root.mkdir(parents=True)
            parse_bench.generate(root, args.records, zones=max(1, args.records // 100))
        docs = subprocess.run([sys.executable, "-c", BARE, str(root)], capture_output=True, text=True, check=True)
        print(f"{int(docs.stdout)} documents ({args.records:,} records, {max(1, args.records // 100):,} zones)")
        run(root, args.repeat, tuple(args.checkout), tuple(n.strip() for n in args.only.split(",") if n.strip()))


if __name__ == "__main__":
    main()
