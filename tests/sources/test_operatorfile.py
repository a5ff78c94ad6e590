"""Every file the operator names is read through one door (agent/sources/operatorfile.py): a FIFO, a
device, a directory or a socket is a one-line error naming the setting (never a hang), a file over its
limit is refused from its size (never read whole), and the error never quotes the file."""

from __future__ import annotations

import os
import pathlib
import socket
import time
from collections.abc import Callable, Iterator

import pytest

from agent.cli import prcontext
from agent.clients import endpoints, kubeapi
from agent.errors import AgentError
from agent.outcome import delivery, notesignature
from agent.run import settings as config
from agent.run import webhook
from agent.sources import operatorfile
from agent.sources.git import GitSource

SECRET = "hunter2-do-not-print-me"


def _map_naming(tmp: pathlib.Path, key: str, target: pathlib.Path) -> pathlib.Path:
    path = tmp / "endpoints.yaml"
    path.write_text(f"instances:\n  dns/x: {{dns: '127.0.0.1:53', api: 'http://127.0.0.1:1', {key}: '{target}'}}\n")
    return path


# what reads the file -> (how the error names the setting)
READERS: dict[str, tuple[Callable[[pathlib.Path, pathlib.Path], object], str]] = {
    "run --config": (lambda p, tmp: config.load_settings({"repo": "x"}, config_file=p, environ={}), "--config"),
    "endpoint map": (lambda p, tmp: endpoints.load_endpoints(p), "endpoint map"),
    "tsigKeyFile": (lambda p, tmp: endpoints.load_endpoints(_map_naming(tmp, "tsigKeyFile", p)), "tsigKeyFile"),
    "tokenFile": (lambda p, tmp: endpoints.load_endpoints(_map_naming(tmp, "tokenFile", p)), "tokenFile"),
    "zone API token": (lambda p, tmp: endpoints.zone_api_token(p), "zone API token"),
    "Git token": (lambda p, tmp: GitSource("https://example.invalid/r.git", tmp / "cache",
                                           token_file=p)._basic_credentials(), "--token-file"),
    "webhook secret": (lambda p, tmp: webhook.read_secret(p), "webhook secret file"),
    "report key": (lambda p, tmp: notesignature.read_key(p), "report key file"),
    "kubeconfig": (lambda p, tmp: kubeapi._check_kubeconfig(str(p)), "kubeconfig"),
    "CI event": (lambda p, tmp: prcontext._event({"GITHUB_EVENT_PATH": str(p)}), "GITHUB_EVENT_PATH"),
}


@pytest.fixture
def odd(tmp_path: pathlib.Path) -> Iterator[dict[str, pathlib.Path]]:
    """A FIFO (nobody writes to it), a character device, a directory, a socket, and a sparse 3 GiB file."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    huge = tmp_path / "huge"
    with open(huge, "wb") as fh:
        fh.truncate(3 * 1024**3)
    sock_path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    try:
        yield {"fifo": fifo, "device": pathlib.Path("/dev/zero"), "directory": folder, "socket": sock_path,
               "huge": huge}
    finally:
        sock.close()


_WORDS = {"fifo": "a named pipe (FIFO), not a regular file", "device": "a character device, not a regular file",
          "directory": "a directory, not a regular file", "socket": "a socket, not a regular file",
          "huge": "3 GiB, over the limit of"}


@pytest.mark.timeout(20)
@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("kind", sorted(_WORDS))
def test_each_operator_file_refuses_fifos_devices_directories_sockets_and_huge_files_at_once(
        reader: str, kind: str, odd: dict[str, pathlib.Path], tmp_path: pathlib.Path) -> None:
    read, setting = READERS[reader]
    started = time.monotonic()
    with pytest.raises(AgentError) as caught:
        read(odd[kind], tmp_path)
    message = str(caught.value)
    assert time.monotonic() - started < 5  # neither hangs on the FIFO nor reads the 3 GiB
    assert setting in message and str(odd[kind]) in message and _WORDS[kind] in message, message
    assert "\n" not in message


def test_a_secret_given_as_the_settings_file_or_the_endpoint_map_is_never_quoted(tmp_path: pathlib.Path) -> None:
    for text in (f"password: [{SECRET}\n", f"token: !!binary {SECRET}\n", f"{SECRET}\n", f"- {SECRET}\n",
                 f"interval: {'9' * 30}{SECRET}\n", b"\xff" + SECRET.encode()):
        path = tmp_path / "secrets"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        for read in (lambda p: config.load_settings({"repo": "x"}, config_file=p, environ={}),
                     endpoints.load_endpoints):
            with pytest.raises(AgentError) as caught:
                read(path)
            assert SECRET not in str(caught.value) and str(path) in str(caught.value), caught.value


def test_the_limits_are_stated_and_a_file_that_grows_past_its_size_is_not_read_further(tmp_path: pathlib.Path) -> None:
    key = tmp_path / "key"
    key.write_bytes(b"k" * (operatorfile.KEY_BYTES + 1))
    with pytest.raises(operatorfile.Unreadable, match=r"over the limit of 64 KiB"):
        operatorfile.read_bytes(key, setting="--token-file", limit=operatorfile.KEY_BYTES)
    key.write_bytes(b"k" * operatorfile.KEY_BYTES)
    assert len(operatorfile.read_bytes(key, setting="--token-file", limit=operatorfile.KEY_BYTES)) == 64 * 1024
    # /proc files say they are empty and are not: no more than the limit and one byte is read
    with pytest.raises(operatorfile.Unreadable, match="more than that, over the limit of 16 bytes"):
        operatorfile.read_bytes("/proc/self/status", setting="--config", limit=16)


def test_an_alert_secret_that_is_no_regular_file_is_logged_and_not_sent(odd: dict[str, pathlib.Path],
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    assert delivery.read_secret(odd["fifo"], "Slack alert") is None
    assert f"Slack alert file {odd['fifo']}: not read: a named pipe (FIFO)" in caplog.text


def test_ssh_files_and_token_files_given_to_run_are_checked_at_start(odd: dict[str, pathlib.Path],
                                                                      tmp_path: pathlib.Path) -> None:
    """Files run hands to ssh (or reads on every fetch) are checked before it starts, not when the first fetch hangs."""
    known = tmp_path / "known_hosts"
    known.write_text("")
    for flags, setting in (({"ssh_key": odd["fifo"], "known_hosts": known}, "--ssh-key"),
                           ({"ssh_key": known, "known_hosts": odd["directory"]}, "--known-hosts"),
                           ({"token_file": odd["device"]}, "--token-file")):
        settings = config.load_settings({"repo": "x", "endpoints": known, **flags}, environ={})
        with pytest.raises(AgentError, match=f"^{setting} .*not a regular file"):
            config.check_runnable(settings)
