"""Start-up cost of the CLI: `bindy-agent validate` of a one-file repository, as a pre-commit hook runs it.

    .venv/bin/python bench/cli_startup_bench.py [--runs 15]

Prints the median wall time of N runs of each, measured in the same run so a loaded machine shows
as a slower baseline: `python -c pass`, `python -c "import yaml, pydantic"` (what any validation
needs), and `python -m agent validate DIR` (target: under 0.2 s). `python -X importtime -m agent
validate DIR` shows where the rest goes.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
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


def median_seconds(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = pathlib.Path(tmp)
        (repo / "zone.yaml").write_text(ZONE)
        check = subprocess.run([sys.executable, "-m", "agent", "validate", str(repo)], cwd=ROOT, capture_output=True,
                               text=True, check=False)
        print(f"validate of the one-file repository: exit {check.returncode}: {check.stderr.strip()}")
        for label, command in (("python -c pass", [sys.executable, "-c", "pass"]),
                               ("python -c 'import yaml, pydantic'", [sys.executable, "-c", "import yaml, pydantic"]),
                               ("bindy-agent validate DIR (one file)", [sys.executable, "-m", "agent", "validate",
                                                                        str(repo)])):
            print(f"{label:<40} median of {args.runs}: {median_seconds(command, args.runs):.3f} s")


if __name__ == "__main__":
    main()
