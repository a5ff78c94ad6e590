"""Messages a person gets from the CLI: where the kubeconfig comes from (and where it does not),
`report` on a revision that is not there, and a little fuzzing - bad paths, files that are not what
a flag needs, bad values - never answered with a traceback."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from agent.outcome import report
from agent.sources.git import GitSource
from tests.conftest import ROOT, SAMPLE
from tests.support import clirun
from tests.support.gitremote import GitRemote
from tests.support.procs import free_port


def _cli(*args: str, env: dict[str, str] | None = None, cwd: pathlib.Path = ROOT) -> clirun.Result:
    """`bindy-agent ARGS` with the environment `env` (in process, for speed)."""
    saved = dict(os.environ)
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        return clirun.main(*args, cwd=cwd)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _env(home: pathlib.Path, **extra: str) -> dict[str, str]:
    """A user's environment: their own HOME, and $KUBECONFIG only when given."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    return {**env, "HOME": str(home), **extra}


def _kubeconfig(path: pathlib.Path) -> pathlib.Path:
    """A kubeconfig whose API server is a port nobody listens on: using it shows as 'cannot reach'."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:{free_port()}", insecure-skip-tls-verify: true}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: nowhere, context: {{cluster: c, user: u}}}}]
current-context: nowhere
""")
    return path


# -- where the kubeconfig comes from ------------------------------------------------------------
def test_plan_stays_offline_whatever_kubeconfig_is_around(tmp_path: pathlib.Path) -> None:
    home = tmp_path / "home"
    _kubeconfig(home / ".kube" / "config")
    env = _env(home, KUBECONFIG=str(_kubeconfig(tmp_path / "kc")))
    offline = _cli("plan", "sample-repo", env=env)
    assert (offline.returncode, offline.stderr) == (0, "")
    assert offline.stdout == _cli("plan", "sample-repo", env=_env(tmp_path / "empty")).stdout
    online = _cli("plan", "sample-repo", "--context", "nowhere", env=env)  # asked for: $KUBECONFIG is used
    assert online.returncode == 1 and "cannot reach the API server" in online.stderr


def test_install_crds_finds_the_kubeconfig_as_kubectl_does(tmp_path: pathlib.Path) -> None:
    home = tmp_path / "home"
    nothing = _cli("install-crds", env=_env(home))
    assert nothing.returncode == 3
    assert nothing.stderr == ("error: no kubeconfig: give --kubeconfig FILE, set $KUBECONFIG, or create "
                              "~/.kube/config (inside a pod, its ServiceAccount is used)\n")
    _kubeconfig(home / ".kube" / "config")
    from_home = _cli("install-crds", env=_env(home))
    assert from_home.returncode == 3 and "cannot reach the API server" in from_home.stderr
    broken = tmp_path / "broken"
    broken.write_text("clusters: [\n")
    from_env = _cli("install-crds", env=_env(home, KUBECONFIG=str(broken)))  # $KUBECONFIG before ~/.kube/config
    assert from_env.returncode == 3 and f"{broken}: not a kubeconfig file" in from_env.stderr


def test_sync_uses_a_found_kubeconfig_only_as_its_one_target(tmp_path: pathlib.Path) -> None:
    kubeconfig = _kubeconfig(tmp_path / "kc")
    env = _env(tmp_path / "home", KUBECONFIG=str(kubeconfig))
    alone = _cli("sync", "sample-repo", "--state", str(tmp_path / "state"), env=env)
    assert alone.returncode == 3
    assert f"using the cluster of {kubeconfig} (as kubectl would)" in alone.stderr
    assert "cannot reach the API server" in alone.stderr
    endpoints = tmp_path / "endpoints.yaml"
    endpoints.write_text(f"instances:\n  dns-system/dns-primary-0: {{dns: '127.0.0.1:{free_port()}', "
                         f"api: 'http://127.0.0.1:{free_port()}'}}\n")
    dns_only = _cli("sync", "sample-repo", "--endpoints", str(endpoints), "--state", str(tmp_path / "s2"), env=env)
    assert dns_only.returncode == 1  # the DNS servers are not there either: partial, and said so
    assert (f"notice: no --kubeconfig: Kubernetes steps skipped (zones and records only); {kubeconfig} was not "
            "used: add --kubeconfig or --context to include its cluster") in dns_only.stderr
    assert "the world matches" not in dns_only.stdout


def test_run_with_no_target_takes_the_cluster_kubectl_would(tmp_path: pathlib.Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from agent.cli import run
    from agent.run import settings as config

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    bare = config.Settings(repo="https://example.com/dns.git")
    assert run._with_found_kubeconfig(bare).kubeconfig is None  # nothing found: `run` refuses, as before
    monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(tmp_path / "kc")))
    assert run._with_found_kubeconfig(bare).kubeconfig == tmp_path / "kc"
    dns_only = config.Settings(repo="https://example.com/dns.git", endpoints=tmp_path / "endpoints.yaml")
    assert run._with_found_kubeconfig(dns_only).kubeconfig is None  # it has a target: nothing is added


# -- report on a revision ------------------------------------------------------------------------
@pytest.fixture
def reported(tmp_path: pathlib.Path) -> GitRemote:
    """A remote whose first commit carries a report note; its second commit has none."""
    git = GitRemote(tmp_path)
    first = git.commit("first", {"a.yaml": "# nothing\n"})
    git.commit("second", {"b.yaml": "# nothing\n"})
    git.push()
    source = GitSource(git.url, tmp_path / "writer")
    source.fetch()
    item = report.Report("run1", first, "applied", {"sha": first}, "2026-01-01T00:00:00Z", 1.0)
    source.add_note(first, report.to_note(item), report.to_full(item))
    source.push_notes()
    return git


def test_report_finds_a_commit_by_abbreviated_sha_branch_or_default(reported: GitRemote,
                                                                    tmp_path: pathlib.Path) -> None:
    first = reported.cmd("rev-parse", "HEAD~1")
    cache = ["--repo", reported.url, "--cache", str(tmp_path / "cache")]
    shown = _cli("report", first[:8], *cache)
    assert shown.returncode == 4, shown.stderr  # shown, but unverified: written without a report key
    assert first in shown.stdout and "applied" in shown.stdout
    head = _cli("report", *cache)  # the branch head: no report on it
    assert (head.returncode, head.stderr) == (1, f"no bindy-agent report on {reported.head()}\n")
    assert _cli("report", "main", *cache).returncode == 1


@pytest.mark.parametrize("rev", ["nosuchbranch", "deadbeef", "HEAD~1"])
def test_report_on_an_unknown_revision_says_so(reported: GitRemote, tmp_path: pathlib.Path, rev: str) -> None:
    result = _cli("report", rev, "--repo", reported.url, "--cache", str(tmp_path / "cache"))
    assert result.returncode == 2
    assert result.stderr == (f"error: unknown revision {rev!r}: no commit with a report starts with it, and "
                             f"{reported.url} has no branch or tag of that name\n")


# -- fuzzing: bad input is a message and a status, never a traceback -----------------------------
def _fuzz_cases(tmp: pathlib.Path) -> list[tuple[list[str], int, str]]:
    afile = tmp / "a-file"
    afile.write_text("x\n")
    garbage = tmp / "garbage.yaml"
    garbage.write_bytes(b"\xff\xfe\x00binary")
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    not_kube = tmp / "not-kube"
    not_kube.write_text("clusters: [\n")
    endpoints = tmp / "endpoints.yaml"
    endpoints.write_text("instances: [oops\n")
    good = tmp / "good-endpoints"
    good.write_text(f"instances:\n  dns-system/dns-primary-0: {{dns: '127.0.0.1:{free_port()}', "
                    f"api: 'http://127.0.0.1:{free_port()}'}}\n")
    return [
        (["validate", str(afile)], 2, "is not a directory"),
        (["plan", "/no/such/dir"], 1, "is not a directory"),  # plan: 1 on every error
        (["plan", "sample-repo", "--kubeconfig", str(not_kube)], 1, "not a kubeconfig file"),
        (["plan", "sample-repo", "--kubeconfig", str(fifo)], 1, "is not a regular file"),
        (["plan", "sample-repo", "-o", "yaml"], 1, "invalid choice: 'yaml'"),
        (["sync", "sample-repo", "--endpoints", str(tmp)], 2, "is not a regular file"),
        (["sync", "sample-repo", "--endpoints", str(endpoints)], 3, "endpoints.yaml: not valid YAML at line 2"),
        (["sync", "sample-repo", "--endpoints", str(afile), "--batch", "0"], 2, "'0' must be at least 1"),
        (["sync", "sample-repo", "--endpoints", str(afile), "--batch", "many"], 2, "'many' is not a whole number"),
        (["sync", "sample-repo", "--endpoints", str(afile), "--deadline", "nan"], 2, "must be a finite number"),
        (["sync", "sample-repo", "--endpoints", str(afile), "--lock-wait", "-1"], 2, "must be a finite number"),
        (["sync", "--repo", str(tmp), "--endpoints", str(afile), "--cache", str(afile)], 3, "a-file"),
        (["sync", "sample-repo", "--endpoints", str(good), "--state", str(fifo)], 3, "not a directory"),
        (["report", "--repo", str(tmp / "nowhere"), "--cache", str(tmp / "c")], 3, "does not appear to be a git"),
        (["report", "--repo", str(tmp), "--cache", str(afile)], 3, "a-file"),
        (["schemas", "--dir", str(afile)], 2, "Not a directory"),
        (["run", "--config", str(tmp)], 2, "is not a regular file"),
        (["import", "--zone", "example.com", "--server", "nowhere.invalid"], 3, "cannot resolve the server"),
        (["import", "--zone", "example.com", "--server", "1.2.3.4:0"], 2, "is not HOST:PORT"),
        (["import", "--zone", "example.com", "--server", "127.0.0.1:1", "--output-dir", str(afile)], 3, "AXFR"),
        (["import", "--zone", "example.com", "--server", "127.0.0.1:1", "-o", str(afile)], 2,
         f"-o/--output is an output format in every verb; give the directory with --output-dir {afile}"),
        (["validate", str(tmp)], 1, f"{garbage.name}:1: cannot read file"),
    ]


def test_no_traceback_for_bad_paths_files_and_flags(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """In process, for speed: a traceback would fail the test, and the last net's "internal error" too."""
    from agent import cli

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.chdir(ROOT)
    for args, status, message in _fuzz_cases(tmp_path):
        try:
            code = cli.main(args)
        except SystemExit as exit_:  # argparse's usage errors
            code = int(exit_.code or 0)
        out, err = capsys.readouterr()
        said = out + err
        assert "Traceback" not in said and "internal error" not in said, (args, said)
        assert code == status, (args, said)
        assert message in said, (args, said)


def test_a_bug_is_told_as_one_and_v_shows_its_traceback(tmp_path: pathlib.Path) -> None:
    """The last net of the command line: an unexpected exception is named, with exit 70."""
    code = ("import sys; from agent import cli; from agent.cli import validate\n"
            "validate.validate = lambda args: 1 / 0\n"
            "sys.exit(cli.main(sys.argv[1:]))\n")
    quiet = subprocess.run([sys.executable, "-c", code, "validate", str(SAMPLE)], capture_output=True, text=True,
                           cwd=ROOT)
    assert quiet.returncode == 70 and "Traceback" not in quiet.stderr
    assert quiet.stderr.startswith("bindy-agent validate: internal error: ZeroDivisionError: division by zero (a bug")
    loud = subprocess.run([sys.executable, "-c", code, "-v", "validate", str(SAMPLE)], capture_output=True, text=True,
                          cwd=ROOT)
    assert "Traceback" in loud.stderr and "ZeroDivisionError" in loud.stderr
