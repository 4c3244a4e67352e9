"""``listlib serve`` as a real subprocess for tests, and plain HTTP/SSE clients for it.

``DevServer.start`` runs ``python -m listlib serve --port 0`` in a site folder, reads
its output on a thread and waits for the ``Serving ... at URL`` line; ``stop`` sends
SIGINT (what Ctrl-C sends) and returns the exit code. ``Events`` reads the live-reload
server-sent events the way a browser's EventSource does.
"""

from __future__ import annotations

import http.client
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from listlib.config import load_config
from listlib.filing import file_sources
from listlib.store.core import Store

from .helpers import SITE_TOML, make_message, mboxrd, subprocess_env

T0 = datetime(2024, 5, 2, 8, 0, tzinfo=UTC)


def post(n: int, subject: str, reply_to: int | None = None) -> bytes:
    """Message s<n> to the dev list, an hour after the previous one."""
    extra = {"In-Reply-To": f"<s{reply_to}@example.org>"} if reply_to else {}
    return make_message(
        subject,
        f"Message number {n}.\n" + "Some text. " * 50 + "\n",
        message_id=f"<s{n}@example.org>",
        date=T0 + timedelta(hours=n),
        extra=extra,
    )


def fill(root: Path, messages: list[bytes]) -> None:
    """File messages into the site's store in-process (as listlib import would)."""
    config = load_config(root / "listlib.toml")
    source = root.parent / f"in-{time.monotonic_ns()}.mbox"
    source.write_bytes(mboxrd(messages))
    with Store(config.site.content_dir).open() as store:
        assert file_sources(store, config.lists, [source]).filed == len(messages)


THEME_TOML = '\n[theme]\ndir = "themes/site"\n'


def write_site(root: Path, footer: str = "footer-v1") -> None:
    """A site with lists 'dev' and 'announce' and a site theme overriding the footer."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "listlib.toml").write_text(SITE_TOML + THEME_TOML)
    set_footer(root, footer)


def set_footer(root: Path, footer: str) -> None:
    """(Re)write the site theme's base.html with this footer text (any Jinja allowed)."""
    templates = root / "themes" / "site" / "templates"
    templates.mkdir(parents=True, exist_ok=True)
    (templates / "base.html").write_text(
        '{% extends "!default/base.html" %}\n{% block footer %}<p class="marker">' + footer + "</p>{% endblock %}\n"
    )


class DevServer:
    """A running ``listlib serve``; ``lines`` holds everything it printed so far."""

    def __init__(self, proc: subprocess.Popen[str], site: Path) -> None:
        self.proc = proc
        self.site = site
        self.lines: list[str] = []
        self.url = ""
        self._seen = threading.Condition()
        for stream, tag in ((proc.stdout, "out"), (proc.stderr, "err")):
            threading.Thread(target=self._read, args=(stream, tag), daemon=True).start()

    @classmethod
    def start(cls, site: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 30) -> DevServer:
        proc = subprocess.Popen(
            [sys.executable, "-m", "listlib", "serve", "--port", "0", *args],
            cwd=site,
            env={**subprocess_env(), **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        server = cls(proc, site)
        line = server.wait_for_line("Serving ", timeout)
        match = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert match, line
        server.url = match.group(0)
        return server

    def _read(self, stream: Any, tag: str) -> None:
        for line in stream:
            with self._seen:
                self.lines.append(f"{tag}: {line.rstrip()}")
                self._seen.notify_all()
        stream.close()

    def wait_for_line(self, text: str, timeout: float = 10, start: int = 0) -> str:
        deadline = time.monotonic() + timeout
        exited = None
        with self._seen:
            while True:
                for line in self.lines[start:]:
                    if text in line:
                        return line
                now = time.monotonic()
                if self.proc.poll() is not None:
                    exited = exited or now
                if now > deadline or (exited and now - exited > 1):
                    raise AssertionError(f"no line with {text!r} from listlib serve:\n" + "\n".join(self.lines))
                self._seen.wait(0.1)

    def output(self) -> str:
        with self._seen:
            return "\n".join(self.lines)

    def stop(self, timeout: float = 10) -> int:
        """Ctrl-C: SIGINT to the server; its exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()

    def get(
        self, path: str, method: str = "GET", headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        return request(self.url, path, method, headers)


def request(
    base: str, path: str, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers with lower-case names, body) of one request; ``path`` is sent as is."""
    host, port = base.split("//")[1].strip("/").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        body = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body
    finally:
        conn.close()


def raw_request(base: str, target: bytes) -> tuple[int, bytes]:
    """A GET with any bytes as its target (http.client refuses NULs and the like)."""
    host, port = base.split("//")[1].strip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"GET " + target + b" HTTP/1.0\r\nHost: x\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status_line = data.split(b"\r\n", 1)[0].split()
    return int(status_line[1]), data


def page_version(page: bytes) -> int:
    """The build version a served page was made at (from its reload script)."""
    match = re.search(rb'src="/_listlib/reload\.js" data-version="(\d+)"', page)
    assert match, page[-500:]
    return int(match.group(1))


class Events:
    """The live-reload event stream, as a page of ``version`` opens it."""

    def __init__(self, base: str, version: int) -> None:
        host, port = base.split("//")[1].strip("/").split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=30)
        self.conn.request("GET", f"/_listlib/events?version={version}")
        self.sock = self.conn.sock
        assert self.sock is not None
        self.response = self.conn.getresponse()
        assert self.response.status == 200
        assert self.response.getheader("Content-Type") == "text/event-stream"

    def next(self, timeout: float) -> dict[str, Any]:
        """The next ``build`` event's data."""
        self.sock.settimeout(timeout)
        event = None
        while True:
            raw = self.response.fp.readline()
            if not raw:
                raise EOFError("the event stream was closed")
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "build":
                return json.loads(line[6:])  # type: ignore[no-any-return]

    def close(self) -> None:
        self.response.close()
        self.sock.close()
        self.conn.close()
