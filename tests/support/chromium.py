"""Headless Chromium for tests, driven with the standard library only: the flags that
keep it off the network, ``DevTools``, a client of the DevTools protocol over
``--remote-debugging-pipe`` (used by test_browser.py and test_serve_browser.py),
``open_url`` (a page in a fresh tab, its title once loaded) and ``Marker``, a listener that
hostile payloads ask for an image, so that a script that ran is seen
(test_attachment_servers.py, test_hostile.py).
Nothing here ever downloads a browser; ``CHROMIUM`` is None when none is installed."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
]


def _fd_above(fd: int, lowest: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, lowest)
    os.close(fd)
    return moved


class DevTools:
    """A Chromium (fresh profile) driven over ``--remote-debugging-pipe``: requests on fd 3,
    answers and events on fd 4, each a JSON text ended by a NUL byte."""

    def __init__(self, profile: Path) -> None:
        to_browser, self._write_fd = os.pipe()
        self._read_fd, from_browser = os.pipe()
        # Out of the way of fds 3 and 4, which the shell below overwrites.
        to_browser, from_browser = (_fd_above(fd, 10) for fd in (to_browser, from_browser))
        assert CHROMIUM is not None
        self.proc = subprocess.Popen(
            # bash (dash knows fds 0-9 only) puts the pipe ends on fds 3 and 4, then becomes Chromium.
            [
                "bash",
                "-c",
                f'exec "$0" "$@" 3<&{to_browser} 4>&{from_browser}',
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            pass_fds=(to_browser, from_browser),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._reader = os.fdopen(self._read_fd, "rb", buffering=0)
        self._buffer = bytearray()
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer in time")
            chunk = self._reader.read(1 << 20)
            if not chunk:
                raise EOFError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        end = self._buffer.index(b"\0")
        message = json.loads(self._buffer[:end])
        del self._buffer[: end + 1]
        return message  # type: ignore[no-any-return]

    def send(self, method: str, session: str | None = None, timeout: float = 20, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        request: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            request["sessionId"] = session
        os.write(self._write_fd, json.dumps(request).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            message = self._receive(deadline)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]  # type: ignore[no-any-return]
            self.events.append(message)

    def wait_for(self, method: str, session: str, timeout: float = 20) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for event in self.events:
            if event.get("method") == method and event.get("sessionId") == session:
                return event
        while True:
            message = self._receive(deadline)
            self.events.append(message)
            if message.get("method") == method and message.get("sessionId") == session:
                return message

    def close(self) -> None:
        with contextlib.suppress(OSError, EOFError, TimeoutError, RuntimeError):
            self.send("Browser.close", timeout=5)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._write_fd)
        self._reader.close()


@contextlib.contextmanager
def fresh_browser() -> Iterator[DevTools]:
    """A headless Chromium with a fresh profile, closed (and the profile deleted) after."""
    with tempfile.TemporaryDirectory(prefix="listlib-chromium-") as profile:
        devtools = DevTools(Path(profile))
        try:
            yield devtools
        finally:
            devtools.close()


@contextlib.contextmanager
def browser_without_downloads() -> Iterator[DevTools]:
    """A headless Chromium with a fresh profile that saves no download (an attachment
    it cannot show is left alone, never written to disk)."""
    with fresh_browser() as devtools:
        devtools.send("Browser.setDownloadBehavior", behavior="deny")
        yield devtools


def open_url(browser: DevTools, url: str) -> str:
    """Open ``url`` in a new tab; its title once loaded ("" when it became a download)."""
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    try:
        browser.send("Page.enable", session)
        browser.events.clear()
        navigated = browser.send("Page.navigate", session, url=url)
        if not navigated.get("errorText"):
            browser.wait_for("Page.loadEventFired", session)
        for _ in range(3):
            seen = len(browser.events)
            try:
                title = browser.send("Runtime.evaluate", session, expression="document.title", returnByValue=True)
                return str(title["result"].get("value", ""))
            except RuntimeError as error:
                # A page that moves on by itself (a redirect page's meta refresh): ask the next one.
                if "navigated or closed" not in str(error):
                    raise
                browser.events[:seen] = [e for e in browser.events[:seen] if e.get("method") != "Page.loadEventFired"]
                browser.wait_for("Page.loadEventFired", session)
        raise RuntimeError(f"{url} kept navigating")
    finally:
        browser.send("Target.closeTarget", targetId=target)


class Marker:
    """A listener on 127.0.0.1 that records the path of every request: a script that ran."""

    def __init__(self) -> None:
        hits: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(unquote(self.path))
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.hits = hits
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/ran?"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)
