"""Before/after harness: every offline output of a checkout's `bindy-agent`, normalised, in files.

    .venv/bin/python bench/golden.py --checkout DIR --out OUT [--jobs 2] [--keep-inputs]
    diff -r OUT_before OUT_after          # empty: byte for byte as before

Runs the code of DIR (`PYTHONPATH=DIR`, this venv's libraries) on inputs this harness generates once
per run, the same for every checkout: sample-repo/, each tests/seeds example in its own directory (and
000_instance.yaml with Bindy's spelling of the role, and all the seeds' API examples together), a
parse_bench repository (2,000 records, 20 zones), a dns_bench repository (1,000 records, 10 zones) and a
tests/support/dnsworld series of 6 revisions (values changed, a zone removed, records deleted above the
delete threshold, an invalid revision, a good one again), also as commits of one Git repository.

Per repository: `validate`, `validate -q`, `plan -o text|json|markdown`, `export`. Per consecutive pair
of the series: `plan NEW --base-dir OLD -o text|json|markdown`, with `--delete-threshold-percent 100` and
`0`, with `--detailed-exitcode`, and `plan --base REV --head REV` of the Git series. `schemas --dir`
(its files), `schemas --check` against the committed schemas/, every verb's `--help`, `--version`,
`completion bash|zsh|fish` (not the `version` verb: it prints the commit it was built from). Each case
records argv, stdout, stderr and the exit status, after replacing the paths of the inputs and of the
checkout (OUT/<case>/{argv,stdout,stderr,status}, an export's files in OUT/<case>/files/). To compare
old and new code on the same inputs:

    git archive <old-commit> | tar -x -C /tmp/old
    .venv/bin/python bench/golden.py --checkout /tmp/old --out /tmp/golden-old
    .venv/bin/python bench/golden.py --checkout .        --out /tmp/golden-new
    diff -r /tmp/golden-old /tmp/golden-new

The inputs come from this harness's own tree (the bench/ and tests/support generators, sample-repo/,
tests/seeds/, schemas/), so both checkouts read the same bytes.

`--world [FILE ...]` (kube-apiserver, etcd, named, git: scripts/install-test-deps) also runs those
integration test files of the checkout (default: WORLD, the files that exercise a run's path) with
the pytest plugin bench/golden_world.py, into OUT/world/: per test, what each run, each report and
each in-process CLI call produced, normalised. Slow (minutes per file) and less stable than the
offline part: a test that depends on timing can differ from one run to the next on the same code;
run it twice on the old code to see that noise before reading a difference as a change.

`--scenario` (the same components) drives the checkout's CLI through a scripted series of commits of
sample-repo against its own kube-apiserver + etcd and named pair, into OUT/scenario/<nn-step>/: the CLI's
streams and status, `report` text and JSON, CR statuses, AXFR of every zone on both servers, the state
ConfigMaps (bench/golden_scenario.py; about a minute; stable run to run: a difference is a change):

    .venv/bin/python bench/golden.py --checkout /tmp/old --out /tmp/golden-old --scenario --no-offline
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RUNNER = "import sys; sys.argv[0] = 'bindy-agent'; from agent.cli import entry; entry()"
VERBS = ("validate", "plan", "ci-plan", "sync", "run", "report", "install-crds", "suspend", "resume", "schemas",
         "import", "export", "version", "completion")
WORLD = ("test_dns_sync.py", "test_full_sync.py", "test_git_sync.py", "test_kube_sync.py", "test_import.py",
         "test_pushes_first.py", "test_transfer_still_refused.py", "test_drift_under_rejected_head.py",
         "test_incremental_runs.py", "test_statuses_settle.py", "test_warm_standby.py", "test_faults.py")
HOME = "/tmp/golden-home"  # a fixed path: --help prints defaults below it, wrapped by its length
FORMATS = ("text", "json", "markdown")
GIT_ENV = {"GIT_AUTHOR_NAME": "golden", "GIT_AUTHOR_EMAIL": "golden@example.test",
           "GIT_COMMITTER_NAME": "golden", "GIT_COMMITTER_EMAIL": "golden@example.test",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]
    files: str | None = None  # a directory (relative to the inputs) the case writes, kept in its output


# -- inputs ---------------------------------------------------------------------------------------
def _seeds(repos: pathlib.Path) -> list[str]:
    names = []
    seeds = ROOT / "tests" / "seeds"
    for seed in sorted(seeds.glob("*.yaml")):
        d = repos / f"seed-{seed.stem}"
        d.mkdir()
        shutil.copy(seed, d / seed.name)
        names.append(d.name)
    fixed = repos / "seed-000_instance-fixed"
    fixed.mkdir()
    (fixed / "000_instance.yaml").write_text((seeds / "000_instance.yaml").read_text().replace(
        "role: Primary", "role: primary"))
    together = repos / "seeds-000"
    together.mkdir()
    for seed in sorted(seeds.glob("000_*.yaml")):
        shutil.copy(fixed / seed.name if seed.name == "000_instance.yaml" else seed, together / seed.name)
    return names + [fixed.name, together.name]


def _world_series(repos: pathlib.Path) -> list[str]:
    """Six revisions of a generated DNS repository: a start, every value changed, a zone removed, most
    records of a zone deleted (above the 30% threshold), an invalid revision, a good one again."""
    from tests.support import dnsworld

    zones = dnsworld.zone_names(4, tag="gold")
    start = dnsworld.revision(zones, 15)
    changed = dnsworld.revision(zones, 15, generation=1)
    fewer_zones = {z: r for z, r in changed.items() if z != zones[3]}
    deleted = dict(fewer_zones)
    deleted[zones[0]] = dict(list(changed[zones[0]].items())[:2])
    names = []
    for i, rev in enumerate((start, changed, fewer_zones, deleted, deleted, changed)):
        d = dnsworld.write_repo(repos / f"world-{i}", rev)
        if i == 4:
            (d / "broken.yaml").write_text(
                dnsworld.HEAD + "kind: ARecord\nmetadata: {name: broken, namespace: dns-system}\n"
                f"spec:\n  name: broken.{zones[1]}.\n  ttl: -5\n  ipv4Addresses: [300.1.1.1]\n")
        names.append(d.name)
    return names


def _git_series(inputs: pathlib.Path, series: list[str]) -> pathlib.Path:
    """The series as commits of one repository (fixed names and dates: the same shas every run)."""
    repo = inputs / "gitrepo"
    repo.mkdir()
    env = {**os.environ, **GIT_ENV}

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    for i, name in enumerate(series):
        dns = repo / "dns"
        if dns.exists():
            shutil.rmtree(dns)
        shutil.copytree(inputs / "repos" / name, dns)
        git("add", "-A")
        git("commit", "-q", "-m", f"revision {i}")
        git("tag", f"r{i}")
    return repo


def prepare(inputs: pathlib.Path) -> tuple[list[str], list[str]]:
    """Writes every input below `inputs`; (the repositories, the world series) by directory name."""
    sys.path.insert(0, str(ROOT / "bench"))
    import dns_bench
    import parse_bench

    repos = inputs / "repos"
    repos.mkdir(parents=True)
    shutil.copytree(ROOT / "sample-repo", repos / "sample")
    names = ["sample", *_seeds(repos)]
    (repos / "parse").mkdir()
    parse_bench.generate(repos / "parse", 2000, 20)
    (repos / "dnsbench").mkdir()
    dns_bench.write_repo(repos / "dnsbench", "b", 1000, 10)
    names += ["parse", "dnsbench"]
    series = _world_series(repos)
    _git_series(inputs, series)
    shutil.copytree(ROOT / "schemas", inputs / "schemas-committed")
    return names + series, series


def cases(names: list[str], series: list[str]) -> list[Case]:
    out = [Case("help", ("--help",)), Case("version-flag", ("--version",))]
    out += [Case(f"help-{verb}", (verb, "--help")) for verb in VERBS]
    out += [Case(f"completion-{shell}", ("completion", shell)) for shell in ("bash", "zsh", "fish")]
    out += [Case("schemas-write", ("schemas", "--dir", "out/schemas"), files="out/schemas"),
            Case("schemas-check", ("schemas", "--check", "--dir", "schemas-committed"))]
    for name in names:
        r = f"repos/{name}"
        out += [Case(f"{name}/validate", ("validate", r)), Case(f"{name}/validate-q", ("validate", "-q", r))]
        out += [Case(f"{name}/plan-{fmt}", ("plan", r, "-o", fmt)) for fmt in FORMATS]
        out.append(Case(f"{name}/export", ("export", r, "--output-dir", f"out/export-{name}"),
                        files=f"out/export-{name}"))
    for old, new in zip(series, series[1:], strict=False):
        pair = f"delta-{old}-{new}"
        base = ("plan", f"repos/{new}", "--base-dir", f"repos/{old}")
        for fmt in FORMATS:
            out.append(Case(f"{pair}/{fmt}", (*base, "-o", fmt)))
            out.append(Case(f"{pair}/{fmt}-threshold-100", (*base, "-o", fmt, "--delete-threshold-percent", "100")))
        out.append(Case(f"{pair}/text-threshold-0", (*base, "--delete-threshold-percent", "0")))
        out.append(Case(f"{pair}/detailed-exitcode", (*base, "--detailed-exitcode")))
    for i in range(1, len(series)):
        for fmt in FORMATS:
            out.append(Case(f"git-r{i - 1}-r{i}/{fmt}", ("plan", "gitrepo/dns", "--base", f"r{i - 1}",
                                                          "--head", f"r{i}", "-o", fmt)))
    return out


# -- running --------------------------------------------------------------------------------------
def _env(checkout: pathlib.Path, inputs: pathlib.Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BINDY", "KUBECONFIG", "GIT_", "PYTHON", "COLUMNS", "LINES"))}
    env.update(PYTHONPATH=str(checkout), COLUMNS="100", LINES="40", NO_COLOR="1", TZ="UTC", LC_ALL="C.UTF-8",
               HOME=HOME, PYTHONHASHSEED="0", **GIT_ENV)
    return env


class Normal:
    """Replaces what differs between runs and places, not between versions of the code."""

    def __init__(self, inputs: pathlib.Path, checkout: pathlib.Path) -> None:
        self.subs = [(str(inputs.resolve()), "<INPUTS>"), (str(inputs), "<INPUTS>"),
                     (str(checkout.resolve()), "<CHECKOUT>"), (sys.prefix, "<VENV>")]

    def __call__(self, text: str) -> str:
        for old, new in self.subs:
            text = text.replace(old, new)
        return text


def run_case(case: Case, python: str, inputs: pathlib.Path, out: pathlib.Path, env: dict[str, str],
             normal: Normal) -> None:
    done = subprocess.run([python, "-c", RUNNER, *case.argv], cwd=inputs, env=env, capture_output=True,
                          timeout=600, check=False)
    dest = out / case.name
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "argv").write_text(" ".join(case.argv) + "\n")
    (dest / "status").write_text(f"{done.returncode}\n")
    (dest / "stdout").write_text(normal(done.stdout.decode("utf-8", "backslashreplace")))
    (dest / "stderr").write_text(normal(done.stderr.decode("utf-8", "backslashreplace")))
    if case.files is not None and (inputs / case.files).is_dir():
        for path in sorted((inputs / case.files).rglob("*")):
            if path.is_file():
                target = dest / "files" / path.relative_to(inputs / case.files)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(normal(path.read_text()))


def check_checkout(python: str, checkout: pathlib.Path, env: dict[str, str], cwd: pathlib.Path) -> None:
    found = subprocess.run([python, "-c", "import agent; print(agent.__file__)"], cwd=cwd, env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    if pathlib.Path(found).resolve().parent.parent != checkout.resolve():
        sys.exit(f"golden: `import agent` finds {found}, not the checkout {checkout}")


def world(checkout: pathlib.Path, out: pathlib.Path, files: list[str]) -> None:
    """The integration test files of `checkout`, run with the golden_world plugin (this harness's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BINDY", "KUBECONFIG", "PYTHONPATH"))}
    env["PYTHONPATH"] = str(ROOT / "bench")  # the plugin only: agent/ and tests/ are the checkout's (its rootdir)
    paths = [f if "/" in f else f"tests/integration/{f}" for f in files]
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "golden_world", "--golden-out", str(out.resolve()),
                           "-q", *paths], cwd=checkout, env=env, check=False)
    print(f"golden: world of {len(paths)} files of {checkout} in {out} (pytest exit {done.returncode})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkout", type=pathlib.Path, required=True, help="the tree whose agent/ runs")
    ap.add_argument("--out", type=pathlib.Path, required=True, help="directory of the normalised outputs")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep-inputs", action="store_true", help="keep the generated inputs (printed)")
    ap.add_argument("--only", default="", help="run only the cases whose name contains this")
    ap.add_argument("--world", nargs="*", metavar="FILE", default=None,
                    help="also the integration test files (of tests/integration/; default: WORLD) with golden_world")
    ap.add_argument("--scenario", action="store_true",
                    help="also the scripted Git scenario (bench/golden_scenario.py) into OUT/scenario/")
    ap.add_argument("--no-offline", action="store_true", help="skip the offline cases (with --world, --scenario)")
    args = ap.parse_args()
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    inputs = pathlib.Path(tempfile.mkdtemp(prefix="golden-"))
    try:
        names, series = prepare(inputs)
        env = _env(args.checkout, inputs)
        python = sys.executable
        check_checkout(python, args.checkout, env, inputs)
        normal = Normal(inputs, args.checkout)
        todo = [c for c in cases(names, series) if args.only in c.name and not args.no_offline]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            for f in [pool.submit(run_case, c, python, inputs, args.out, env, normal) for c in todo]:
                f.result()
        print(f"golden: {len(todo)} cases of {args.checkout} in {args.out}")
        if args.scenario:
            import golden_scenario

            golden_scenario.run_scenario(args.checkout, args.out / "scenario")
        if args.world is not None:
            world(args.checkout, args.out / "world", args.world or list(WORLD))
    finally:
        if args.keep_inputs:
            print(f"golden: inputs kept in {inputs}")
        else:
            shutil.rmtree(inputs, ignore_errors=True)


if __name__ == "__main__":
    main()
