"""`bindy-agent plan --base/--head` and `--base-dir` as a CI job runs them: real git (a work tree and a
remote), the three output forms, and `terraform plan -detailed-exitcode`'s exit statuses. In process
for speed; test_a_pull_request_as_ci_runs_it runs the real command."""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest

from tests.conftest import ROOT, SAMPLE
from tests.support import clirun
from tests.support.gitremote import GitRemote

BAD = "apiVersion: bindy.firestoned.io/v1beta1\nkind: ARecord\nmetadata: {name: a, namespace: dns-system}\nspec: {}\n"


def _plan(*args: str, cwd: pathlib.Path = ROOT) -> clirun.Result:
    return clirun.main("plan", *args, cwd=cwd)


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> GitRemote:
    """main: sample-repo under dns/; branch feature: one address changed, one record added."""
    git = GitRemote(tmp_path)
    shutil.copytree(SAMPLE, git.work / "dns")
    git.commit("the sample", {})
    git.cmd("checkout", "-q", "-b", "feature")
    web = git.work / "dns" / "records" / "example-com" / "web.yaml"
    git.commit("feature", {
        "dns/records/example-com/web.yaml": web.read_text().replace("    - 192.0.2.10\n", "    - 192.0.2.20\n"),
        "dns/records/example-com/verify.yaml": "apiVersion: bindy.firestoned.io/v1beta1\nkind: TXTRecord\n"
        "metadata: {name: verify, namespace: dns-system, labels: {zone: example-com}}\n"
        "spec: {name: _verify, text: [token]}\n"})
    return git


def test_a_pull_request_in_a_work_tree(repo: GitRemote) -> None:
    text = _plan("dns", "--base", "main", "--head", "feature", cwd=repo.work)
    assert text.returncode == 0, text.stderr
    main, feature = repo.cmd("rev-parse", "main"), repo.cmd("rev-parse", "feature")
    assert text.stdout.startswith(f"Base: main ({main[:12]})\nHead: feature ({feature[:12]})\n\n")
    assert "  ~ ARecord dns-system/www  changed: spec.ipv4Addresses[0]\n" in text.stdout
    assert "  + TXTRecord dns-system/verify\n" in text.stdout
    assert "    + _verify.example.com. 3600 TXT \"token\"\n" in text.stdout
    assert text.stdout.endswith("Plan: 2 to create, 2 to update, 0 to delete.\n")

    doc = json.loads(_plan("--base", "main", "--head", "feature", "--path", "dns", "-o", "json", cwd=repo.work).stdout)
    assert (doc["base"], doc["revision"]) == (main, feature)
    assert doc["summary"] == {"create": 2, "update": 2, "delete": 0}

    same = _plan("--base", "main", "--head", main[:8], "--path", "dns", cwd=repo.work)
    assert (same.returncode, same.stdout.splitlines()[-1]) == (0, "No changes: the head does exactly what the base "
                                                                  "does.")


def test_uncommitted_files_against_a_base(repo: GitRemote) -> None:
    """Without --head, DIR's files as they are on disk are the head: what my edits would change."""
    (repo.work / "dns" / "records" / "example-com" / "verify.yaml").unlink()
    result = _plan("dns", "--base", "feature", cwd=repo.work)
    assert result.returncode == 0
    assert result.stdout.splitlines()[1] == f"Head: dns ({repo.head()[:12]}-dirty)"
    assert "  - TXTRecord dns-system/verify\n" in result.stdout and "    - _verify.example.com. 3600 TXT" in result.stdout


def test_a_pull_request_from_a_remote(repo: GitRemote, tmp_path: pathlib.Path) -> None:
    repo.cmd("push", "-q", "origin", "main", "feature")
    md = _plan("--repo", repo.url, "--path", "dns", "--base", "main", "--head", "feature", "-o", "markdown",
               "--cache", str(tmp_path / "cache"), cwd=tmp_path)
    assert md.returncode == 0, md.stderr
    assert md.stdout.startswith("## bindy-agent plan\n\nChanges from base `main (")
    assert "**2 edits to the repository's CRs**: 1 added, 1 changed." in md.stdout
    assert ("| `~` | `ARecord dns-system/www` | `spec.ipv4Addresses[0]`: `\"192.0.2.10\"` -> `\"192.0.2.20\"` | "
            "`records/example-com/web.yaml:2` |") in md.stdout
    unknown = _plan("--repo", repo.url, "--path", "dns", "--base", "main", "--head", "nope", "--cache",
                    str(tmp_path / "cache"), cwd=tmp_path)
    assert unknown.returncode == 1
    assert unknown.stderr == (f"bindy-agent plan: error: unknown revision 'nope' in {repo.url} (give a branch, a "
                              "tag or a commit SHA)\n")


def test_two_directories(tmp_path: pathlib.Path) -> None:
    head = tmp_path / "head"
    shutil.copytree(SAMPLE, head)
    (head / "zones" / "internal.yaml").unlink()
    (head / "records" / "internal" / "hosts.yaml").unlink()  # its records too: left alone they would be in no zone
    result = _plan(str(head), "--base-dir", str(SAMPLE))
    assert result.returncode == 0
    assert "  - internal.example.net. on dns-system/dns-primary-0 (no longer selected)\n" in result.stdout
    assert _plan(str(SAMPLE), "--base-dir", str(SAMPLE)).returncode == 0


@pytest.mark.parametrize("output", ["json", "markdown"])
def test_an_invalid_head_is_a_whole_document_with_the_errors(repo: GitRemote, output: str) -> None:
    (repo.work / "dns" / "bad.yaml").write_text(BAD)
    result = _plan("dns", "--base", "main", "-o", output, cwd=repo.work)
    assert result.returncode == 1
    assert "dns/bad.yaml:4: ARecord/dns-system/a: spec.name: required field is missing" in result.stderr
    if output == "json":
        doc = json.loads(result.stdout)
        assert doc["invalid"] == ["head"] and doc["changes"] == []
        assert {(p["file"], p["path"], p["revision"]) for p in doc["problems"]} == {
            ("bad.yaml", "spec.name", "head"), ("bad.yaml", "spec.ipv4Addresses", "head")}
    else:
        assert "**Not planned: the head has 2 errors.**" in result.stdout
        assert "- `bad.yaml:4: ARecord/dns-system/a: spec.name: required field is missing`" in result.stdout


def test_an_invalid_base_is_reported_as_the_base(repo: GitRemote) -> None:
    repo.cmd("checkout", "-q", "main")
    repo.commit("broken main", {"dns/bad.yaml": BAD})
    doc = json.loads(_plan("--base", "main", "--head", "feature", "--path", "dns", "-o", "json",
                           cwd=repo.work).stdout)
    assert doc["invalid"] == ["base"]
    assert {p["revision"] for p in doc["problems"]} == {"base"}


@pytest.mark.parametrize("output", ["json", "markdown"])
def test_plan_dir_on_invalid_input_prints_a_document_too(tmp_path: pathlib.Path, output: str) -> None:
    (tmp_path / "bad.yaml").write_text(BAD)
    result = _plan(str(tmp_path), "-o", output)
    assert result.returncode == 1  # an error, as for a delta
    if output == "json":
        doc = json.loads(result.stdout)
        assert doc["invalid"] == ["revision"] and len(doc["problems"]) == 2
    else:
        assert "**Not planned: the revision has 2 errors.**" in result.stdout


@pytest.mark.parametrize("args, message", [
    (["--base", "main", "--head", "feature", "--kubeconfig", "/dev/null"], "is not a regular file"),
    (["--base", "main", "--head", "feature", "--context", "prod"], "--kubeconfig and --context do not apply"),
    (["--base", "main", "--base-dir", "."], "--base and --base-dir exclude each other"),
    (["--base", "main", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    (["--base-dir", "."], "--base-dir OLD needs the new directory"),
    (["--base", "main"], "give --head REV, or DIR to compare its files with --base"),
])
def test_usage_errors_of_a_delta_exit_1_like_every_error(repo: GitRemote, args: list[str], message: str) -> None:
    result = _plan(*args, cwd=repo.work)
    assert result.returncode == 1 and message in result.stderr and result.stdout == ""


def test_outside_a_work_tree_the_delta_says_what_to_give(tmp_path: pathlib.Path) -> None:
    shutil.copytree(SAMPLE, tmp_path / "dns")
    result = _plan("dns", "--base", "main", cwd=tmp_path)
    assert result.returncode == 1
    assert "not inside a Git work tree (give --repo URL, or --base-dir DIR to compare two directories)" in result.stderr


def test_a_pull_request_as_ci_runs_it(repo: GitRemote) -> None:
    """The console script in a fresh process: the exit status a CI step sees."""
    import subprocess
    import sys

    script = pathlib.Path(sys.executable).parent / "bindy-agent"
    changed = subprocess.run([str(script), "plan", "dns", "--base", "main", "--head", "feature", "-o", "markdown"],
                             capture_output=True, text=True, cwd=repo.work)
    assert (changed.returncode, changed.stderr) == (0, "")
    assert "**2 edits to the repository's CRs**: 1 added, 1 changed." in changed.stdout
    detailed = subprocess.run([str(script), "plan", "dns", "--base", "main", "--head", "feature", "--detailed-exitcode"],
                              capture_output=True, text=True, cwd=repo.work)
    assert (detailed.returncode, detailed.stderr) == (2, "")
    same = subprocess.run([str(script), "plan", "dns", "--base", "main", "--head", "main", "--detailed-exitcode"],
                          capture_output=True, text=True, cwd=repo.work)
    assert (same.returncode, same.stderr) == (0, "")
    typo = subprocess.run([str(script), "plan", "--base", "main", "--hed=feature"], capture_output=True,
                          text=True, cwd=repo.work)
    assert typo.returncode == 1 and "unrecognized arguments: --hed=feature" in typo.stderr


def test_a_base_without_the_directory_plans_everything_as_new(repo: GitRemote) -> None:
    """The pull request that adds the directory of CRs: its base has none, so every object is a create."""
    repo.cmd("checkout", "-q", "main")
    repo.cmd("mv", "dns", "moved")
    repo.commit("the CRs move to moved/", {})
    done = _plan("moved", "--base", "main~1", "--head", "main", cwd=repo.work)
    assert done.returncode == 0, done.stderr
    base = repo.cmd("rev-parse", "main~1")
    assert done.stderr == f"base main~1 ({base[:12]}) has no directory 'moved': planned as an empty revision\n"
    assert done.stdout.endswith("Plan: 65 to create, 0 to update, 0 to delete.\n")
    typo = _plan("--base", "main~1", "--head", "main", "--path", "dsn", cwd=repo.work)
    assert typo.returncode == 1 and "no directory 'dsn' in the commit" in typo.stderr
