"""The dev server's HTTP side: serves ``output/`` read-only, with live reload.

Serves files of the output folder and nothing else: request paths are decoded once,
and any ``..``/``.`` segment, encoded slash or backslash, NUL byte or dot-file
(temporary files of a build in progress) is refused; the file finally opened is
resolved (symlinks included) and must lie inside the output folder. Directories are
served by their ``index.html`` (``/dir`` is redirected to ``/dir/``), missing files
by the theme's ``404.html`` with status 404. ``HEAD`` and single byte ranges (206,
416) are supported; ``.gz`` downloads are served as the gzip files they are, never
with ``Content-Encoding``.

Every file is opened under the gate's read side (``SiteGate.reading``), so a request
never sees a site half-way through a rebuild: it waits for the rebuild to finish.

Live reload: HTML responses (and only those, only as they are sent: files in
``output/`` are never modified) get a small script that listens to server-sent
events at ``/_listlib/events`` and reloads the page after a successful rebuild; after
a failed one it shows the error (as text, never as HTML) in an overlay, which the
server also puts into every HTML page it sends until a rebuild succeeds. ``/_listlib/``
can never collide with the site: no list slug or output name starts with ``_``.

Never prints: the request log is silenced (see ``DevHTTPServer``).
"""

from __future__ import annotations

import html
import json
import mimetypes
import os
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import parse_qs, unquote

__all__ = ["RESERVED_PREFIX", "BuildStatus", "DevHTTPServer", "SiteGate", "content_type", "parse_range"]

RESERVED_PREFIX = "/_listlib/"
"""URLs the dev server answers itself; never a path of the site."""

_KEEPALIVE = 15.0
"""Seconds between comment lines on an idle event stream (finds closed connections)."""

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".bin": "application/octet-stream",
    ".atom": "application/atom+xml; charset=utf-8",
    ".xml": "application/xml; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".eml": "message/rfc822",
    ".mbox": "application/mbox",
    ".gz": "application/gzip",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".ico": "image/x-icon",
    ".pdf": "application/pdf",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
}


def content_type(name: str) -> str:
    """The Content-Type of an output file. A ``.gz`` file is ``application/gzip`` as it
    is: announcing ``Content-Encoding: gzip`` would make browsers save it unpacked."""
    suffix = os.path.splitext(name)[1].lower()
    known = _TYPES.get(suffix)
    if known:
        return known
    guessed, encoding = mimetypes.guess_type(name, strict=False)
    if guessed is None or encoding is not None:
        return "application/octet-stream"
    return guessed


class Unsatisfiable(Exception):
    """A byte range that starts past the end of the file (answered with 416)."""


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The inclusive byte range a ``Range`` header asks for, or None to send the whole
    file (no header, another unit, several ranges, or a malformed one: RFC 9110 §14.2
    lets a server ignore those). Raises Unsatisfiable when no byte of it exists."""
    if not header:
        return None
    unit, _, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first, dash, last = spec.strip().partition("-")
    if not dash or not (first.isdigit() or last.isdigit()) or (first and not first.isdigit()):
        return None
    if last and not last.isdigit():
        return None
    if not first:
        suffix = int(last)
        if suffix == 0 or size == 0:
            raise Unsatisfiable
        return max(0, size - suffix), size - 1
    start = int(first)
    end = int(last) if last else size - 1
    if last and end < start:
        return None
    if start >= size:
        raise Unsatisfiable
    return start, min(end, size - 1)


@dataclass(frozen=True)
class BuildStatus:
    """What the browsers are told: ``version`` counts the rebuilds that changed the
    site or failed; ``error`` is the last rebuild's error, None when it succeeded."""

    version: int = 0
    error: str | None = None


class SiteGate:
    """A readers/writer gate over the output folder, and the live-reload status.

    Requests hold the read side while they find and open a file; a rebuild holds the
    write side from start to end. A waiting rebuild stops new readers from entering,
    and readers wait (no time limit) for it to finish, so no request is ever answered
    from a half-rebuilt site. Readers hold the gate only to open files: an open file
    keeps its content when a rebuild renames a new version over it."""

    def __init__(self, output: Path) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._output = output
        self._status = BuildStatus()
        self.stopping = False

    @contextmanager
    def reading(self) -> Iterator[Path]:
        """Hold the read side; yields the output folder to read."""
        with self._cond:
            self._cond.wait_for(lambda: not self._writing)
            self._readers += 1
            output = self._output
        try:
            yield output
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the write side: wait for the readers inside to leave, keep new ones out."""
        with self._cond:
            self._cond.wait_for(lambda: not self._writing)
            self._writing = True
            self._cond.wait_for(lambda: self._readers == 0)
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()

    @property
    def building(self) -> bool:
        return self._writing

    def set_output(self, output: Path) -> None:
        with self._cond:
            self._output = output

    @property
    def status(self) -> BuildStatus:
        return self._status

    def publish(self, *, changed: bool, error: str | None) -> BuildStatus:
        """Record a finished rebuild. Browsers hear of it when it failed, when it changed
        files, or when it fixed the previous failure (so their overlay goes away)."""
        with self._cond:
            old = self._status
            if error is not None or changed or old.error is not None:
                self._status = BuildStatus(old.version + 1, error)
            self._cond.notify_all()
            return self._status

    def wait_for_change(self, version: int, timeout: float) -> BuildStatus | None:
        """The status once its version differs from ``version``; None after ``timeout``
        seconds without a change, or when the server stops."""
        with self._cond:
            changed = self._cond.wait_for(lambda: self.stopping or self._status.version != version, timeout)
            if self.stopping or not changed:
                return None
            return self._status

    def stop(self) -> None:
        with self._cond:
            self.stopping = True
            self._cond.notify_all()


_CLIENT_JS = r"""// listlib serve: live reload (added by the dev server only; not part of the site).
(() => {
  const script = document.currentScript;
  const version = script ? script.dataset.version : "";
  const overlayId = "listlib-error";
  function showError(text) {
    let box = document.getElementById(overlayId);
    if (!box) {
      box = document.createElement("div");
      box.id = overlayId;
      box.setAttribute("role", "alert");
      box.setAttribute("style", OVERLAY_STYLE);
      document.body.appendChild(box);
    }
    const title = document.createElement("strong");
    title.textContent = "listlib: the last rebuild failed";
    const pre = document.createElement("pre");
    pre.setAttribute("style", "white-space: pre-wrap; margin: .5em 0 0");
    pre.textContent = text;
    box.replaceChildren(title, pre);
  }
  const events = new EventSource("/_listlib/events?version=" + encodeURIComponent(version));
  events.addEventListener("build", (event) => {
    const status = JSON.parse(event.data);
    if (status.error) {
      showError(status.error);
    } else if (String(status.version) !== version) {
      events.close();
      location.reload();
    }
  });
})();
"""

_OVERLAY_STYLE = (
    "position: fixed; inset: auto 0 0 0; z-index: 2147483647; max-height: 60vh; overflow: auto; "
    "margin: 0; padding: 1em; background: #3b0d0d; color: #fff; font: 14px/1.4 monospace; "
    "border-top: 4px solid #e0463c"
)
CLIENT_JS = _CLIENT_JS.replace("OVERLAY_STYLE", json.dumps(_OVERLAY_STYLE)).encode()

_BODY_END = re.compile(rb"</body\s*>", re.IGNORECASE)


def inject(page: bytes, status: BuildStatus) -> bytes:
    """``page`` with the live-reload script (and the error overlay after a failed
    rebuild) added before its last ``</body>``, or at its end."""
    parts = []
    if status.error is not None:
        parts.append(
            f'<div id="listlib-error" role="alert" style="{html.escape(_OVERLAY_STYLE)}">'
            "<strong>listlib: the last rebuild failed</strong>"
            f'<pre style="white-space: pre-wrap; margin: .5em 0 0">{html.escape(status.error)}</pre></div>'
        )
    parts.append(f'<script src="{RESERVED_PREFIX}reload.js" data-version="{status.version}"></script>')
    snippet = "\n".join(parts).encode()
    ends = list(_BODY_END.finditer(page))
    if not ends:
        return page + snippet
    at = ends[-1].start()
    return page[:at] + snippet + b"\n" + page[at:]


class Refused(Exception):
    """A request path that tries to leave the output folder (answered with 403)."""


def resolve(output: Path, raw_path: str) -> tuple[Path | None, bool]:
    """The file or folder of the output that ``raw_path`` (the request target without
    its query) names, and whether it is a folder; (None, False) when nothing is there.
    Raises Refused for anything that tries to leave the folder."""
    if not raw_path.startswith("/") or "\\" in raw_path or "\0" in raw_path:
        raise Refused
    lowered = raw_path.lower()
    if "%2f" in lowered or "%5c" in lowered or "%00" in lowered:
        raise Refused
    decoded = unquote(raw_path, errors="surrogateescape")
    if "\\" in decoded or "\0" in decoded:
        raise Refused
    segments = [s for s in decoded.split("/") if s]
    if any(s in (".", "..") for s in segments):
        raise Refused
    if any(s.startswith(".") for s in segments):
        return None, False  # dot-files: a build's temporary files, never part of the site
    root = os.path.realpath(output)
    try:
        target = os.path.realpath(os.path.join(root, *segments))
    except ValueError:
        raise Refused from None
    if target != root and not target.startswith(root + os.sep):
        raise Refused
    if os.path.isdir(target):
        return Path(target), True
    if os.path.isfile(target):
        return Path(target), False
    return None, False


@dataclass
class _Reply:
    status: int
    headers: dict[str, str]
    body: bytes | None = None
    file: BinaryIO | None = None
    start: int = 0
    length: int = 0


class DevHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server over a ``SiteGate``; ``live_reload`` adds the script."""

    daemon_threads = True
    # socketserver's default listen backlog is 5: a browser opening a page with its
    # styles, scripts and images, plus a few live-reload clients, overflowed it, and
    # each dropped connection waited a second for its SYN to be sent again.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], gate: SiteGate, *, live_reload: bool) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.gate = gate
        self.live_reload = live_reload
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # socketserver prints a traceback here; request threads stay silent (see
        # _Handler.log_message) and the connection is simply closed.
        pass


class _Handler(BaseHTTPRequestHandler):
    server: DevHTTPServer
    server_version = "listlib-serve"

    def log_message(self, format: str, *args: Any) -> None:
        # Silent: request threads must never write to stdio (a rebuild forks workers
        # while they run, and a lock held at fork time would freeze a worker).
        pass

    def do_GET(self) -> None:
        self._answer(head=False)

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def _answer(self, *, head: bool) -> None:
        target, _, query = self.path.partition("?")
        target = target.partition("#")[0]
        if target.startswith(RESERVED_PREFIX) and self.server.live_reload:
            self._reserved(target[len(RESERVED_PREFIX) :], query, head)
            return
        try:
            reply = self._reply_for(target, query)
        except (Refused, PermissionError):
            reply = _plain(HTTPStatus.FORBIDDEN, "Forbidden\n")
        except OSError:
            reply = _plain(HTTPStatus.NOT_FOUND, "Not found\n")
        self._send(reply, head)

    def _reply_for(self, target: str, query: str) -> _Reply:
        gate = self.server.gate
        with gate.reading() as output:
            path, is_dir = resolve(output, target)
            if is_dir and not target.endswith("/"):
                location = target + "/" + (f"?{query}" if query else "")
                return _Reply(HTTPStatus.MOVED_PERMANENTLY, {"Location": location, "Content-Length": "0"}, b"")
            if is_dir and path is not None:
                index = path / "index.html"
                path = index if index.is_file() else None
            if path is None:
                return self._not_found(output)
            return self._file_reply(path)

    def _not_found(self, output: Path) -> _Reply:
        try:
            page = (output / "404.html").read_bytes()
        except OSError:
            return _plain(HTTPStatus.NOT_FOUND, "Not found\n")
        return self._html_reply(HTTPStatus.NOT_FOUND, page)

    def _html_reply(self, status: int, page: bytes) -> _Reply:
        if self.server.live_reload:
            page = inject(page, self.server.gate.status)
        headers = {"Content-Type": _TYPES[".html"], "Content-Length": str(len(page))}
        return _Reply(status, headers, page)

    def _file_reply(self, path: Path) -> _Reply:
        kind = content_type(path.name)
        if self.server.live_reload and kind.startswith("text/html"):
            return self._html_reply(HTTPStatus.OK, path.read_bytes())
        handle = path.open("rb")
        size = os.fstat(handle.fileno()).st_size
        headers = {"Content-Type": kind, "Accept-Ranges": "bytes"}
        try:
            wanted = parse_range(self.headers.get("Range"), size)
        except Unsatisfiable:
            handle.close()
            return _Reply(
                HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE,
                {"Content-Range": f"bytes */{size}", "Content-Length": "0"},
                b"",
            )
        if wanted is None:
            headers["Content-Length"] = str(size)
            return _Reply(HTTPStatus.OK, headers, file=handle, length=size)
        start, end = wanted
        headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        headers["Content-Length"] = str(end - start + 1)
        return _Reply(HTTPStatus.PARTIAL_CONTENT, headers, file=handle, start=start, length=end - start + 1)

    def _send(self, reply: _Reply, head: bool) -> None:
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            if head:
                return
            if reply.body is not None:
                self.wfile.write(reply.body)
            elif reply.file is not None:
                reply.file.seek(reply.start)
                left = reply.length
                while left > 0:
                    chunk = reply.file.read(min(left, 1 << 16))
                    if not chunk:
                        break
                    self.wfile.write(chunk)
                    left -= len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            if reply.file is not None:
                reply.file.close()

    def _reserved(self, name: str, query: str, head: bool) -> None:
        if name == "reload.js":
            headers = {"Content-Type": _TYPES[".js"], "Content-Length": str(len(CLIENT_JS))}
            self._send(_Reply(HTTPStatus.OK, headers, CLIENT_JS), head)
        elif name == "events" and not head:
            self._events(query)
        else:
            self._send(_plain(HTTPStatus.NOT_FOUND, "Not found\n"), head)

    def _events(self, query: str) -> None:
        """Server-sent events: the status at once when the page is out of date, then
        every change, until the browser goes away or the server stops."""
        gate = self.server.gate
        try:
            known = int(parse_qs(query).get("version", ["-1"])[0])
        except ValueError:
            known = -1
        self.close_connection = True
        try:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(b"retry: 1000\n\n")
            status = gate.status
            if status.version == known:
                status = None
            while not gate.stopping:
                if status is None:
                    self.wfile.write(b": waiting\n\n")
                else:
                    data = json.dumps({"version": status.version, "error": status.error})
                    self.wfile.write(f"event: build\ndata: {data}\n\n".encode())
                    known = status.version
                status = gate.wait_for_change(known, _KEEPALIVE)
        except (BrokenPipeError, ConnectionResetError):
            pass


def _plain(status: int, text: str) -> _Reply:
    body = text.encode()
    return _Reply(status, {"Content-Type": _TYPES[".txt"], "Content-Length": str(len(body))}, body)
