"""A real browser for the docs site: Debian's headless Chromium, looking at pages served on loopback.

`serve(directory)` serves a built site on 127.0.0.1 (an ephemeral port) from a thread of the test process;
`Chromium(profile)` runs the browser once per call, with a new empty profile, every background service
off, and every host name but 127.0.0.1 resolving to nothing, so the test reaches no other machine.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import pathlib
import shutil
import struct
import subprocess
import threading
import zlib
from collections.abc import Iterator

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
         "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1")


def executable() -> str:
    """Debian's chromium (installed by scripts/install-test-deps)."""
    found = shutil.which("chromium")
    if not found:
        raise FileNotFoundError("chromium is not installed: run scripts/install-test-deps (Debian package chromium)")
    return found


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # the request log: not wanted in test output
        pass


@contextlib.contextmanager
def serve(directory: pathlib.Path) -> Iterator[str]:
    """The site in `directory` at the yielded base URL (http://127.0.0.1:PORT/), until the block ends."""
    handler = functools.partial(_Quiet, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="docs-site", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class Chromium:
    """One headless browser run per call, each with a new empty profile under `workdir`."""

    def __init__(self, workdir: pathlib.Path, width: int = 1280, height: int = 900) -> None:
        self.workdir = workdir
        self.size = (width, height)
        self.runs = 0

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        self.runs += 1
        profile = self.workdir / f"profile-{self.runs}"
        profile.mkdir(parents=True)
        return subprocess.run([executable(), *FLAGS, f"--user-data-dir={profile}",
                               f"--window-size={self.size[0]},{self.size[1]}", *args],
                              capture_output=True, text=True, check=False, timeout=120)

    def screenshot(self, url: str, png: pathlib.Path) -> bytes:
        """The page as a PNG of the window's size."""
        done = self._run("--virtual-time-budget=5000", f"--screenshot={png}", "--hide-scrollbars", url)
        if not png.is_file():
            raise AssertionError(f"chromium wrote no screenshot of {url}: {done.stderr[-2000:]}")
        return png.read_bytes()

    def dom(self, url: str) -> str:
        """The page's DOM after its scripts ran (--dump-dom)."""
        done = self._run("--virtual-time-budget=5000", "--dump-dom", url)
        if done.returncode != 0 or "<html" not in done.stdout:
            raise AssertionError(f"chromium could not load {url}: {done.stderr[-2000:]}")
        return done.stdout


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's header."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def png_pixels(data: bytes) -> bytes:
    """The decompressed image data of a PNG (each row with its filter byte): enough to tell a blank
    image from a drawn one."""
    chunks, at = [], 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"IDAT":
            chunks.append(data[at + 8:at + 8 + length])
        at += 12 + length
    return zlib.decompress(b"".join(chunks))
