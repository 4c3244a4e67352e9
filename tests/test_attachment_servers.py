"""Hostile attachments served by real web servers and opened in a real browser: no script
from a message runs in the archive's origin (DESIGN.md invariant 6).

A site is built from messages whose attachments carry a script: names without an
extension, names listlib defuses (``x.php``, ``.htaccess``, ``nul``), rare and active
extensions (``x.xhtm``, ``x.svg``, ``x.var`` ...), and HTML bytes under a declared type
that lies. Debian's Apache httpd and nginx (tests/webservers.py: their stock type
configs, own config files, random ports) each serve the output folder, and headless
Chromium (tests/chromium.py) opens every attachment and every page of the site. The
script sets the page title and asks a small listener of the test for an image, so it
is seen either way. A positive control, ``control.html`` placed in the output by hand
with the same script, must be seen to run on each server, or the test proves nothing.
Skipped when Chromium, Apache or nginx is not installed.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest

from listlib.build import build_site
from listlib.config import load_config
from listlib.filing import file_sources
from listlib.store import Store

from .chromium import CHROMIUM, DevTools
from .conftest import SITE_TOML, make_message, mboxrd
from .webservers import WebServer, apache_missing, nginx_missing, public_copy, start_apache, start_nginx

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")

PWNED = "PWNED"


def script(marker: str) -> str:
    return f"document.title='{PWNED}';new Image().src='{marker}'+encodeURIComponent(location.pathname);"


def polyglot(marker: str) -> str:
    """A page whose script runs whether it is read as HTML or as XHTML."""
    return (
        '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title></head>'
        f"<body><p>hostile</p><script>{script(marker)}</script></body></html>\n"
    )


def svg(marker: str) -> str:
    return f'<svg xmlns="http://www.w3.org/2000/svg"><script>{script(marker)}</script></svg>\n'


def type_map(marker: str) -> str:
    """An Apache type map (mod_negotiation's ``.var`` handler) that answers with HTML of its own."""
    return f"URI: x\n\nContent-type: text/html\nBody:----x----\n{polyglot(marker)}----x----\n"


# (file name or None, declared content type, body maker)
HOSTILE = [
    ("notes", "text/plain", polyglot),
    ("README", "application/octet-stream", polyglot),
    ("Makefile", "text/html", polyglot),
    ("x.php", "application/octet-stream", polyglot),
    (".htaccess", "text/plain", polyglot),
    ("nul", "application/octet-stream", polyglot),
    ("x.xhtm", "application/xhtml+xml", polyglot),
    ("x.xht", "application/xhtml+xml", polyglot),
    ("x.xhtml", "application/xhtml+xml", polyglot),
    ("x.shtml", "text/html", polyglot),
    ("x.svg", "image/svg+xml", svg),
    ("x.svgz", "image/svg+xml", svg),
    ("x.xml", "text/xml", polyglot),
    ("x.xsl", "application/xml", polyglot),
    ("x.atom", "application/atom+xml", polyglot),
    ("x.rss", "application/rss+xml", polyglot),
    ("x.kml", "application/octet-stream", polyglot),
    ("x.xspf", "application/octet-stream", polyglot),
    ("x.mml", "text/mathml", polyglot),
    ("x.mht", "application/octet-stream", polyglot),
    ("x.html", "text/html", polyglot),
    ("x.HTM", "text/html", polyglot),
    ("x.html.en", "text/html", polyglot),
    ("x.html.gz", "application/gzip", polyglot),
    ("x.var", "text/plain", type_map),
    ("x.log", "text/plain", polyglot),
    ("x.json", "application/json", polyglot),
    ("x.eml", "text/plain", polyglot),
    ("x.png", "image/png", polyglot),
    ("photo.jpg", "application/octet-stream", polyglot),
    ("report.pdf", "text/html", polyglot),
    ("x.txt", "text/html", polyglot),
    ("x.patch", "text/x-patch", polyglot),
    ("x.unknownext", "application/octet-stream", polyglot),
    (None, "text/html", polyglot),
    (None, "image/svg+xml", svg),
    (None, "application/xhtml+xml", polyglot),
    (None, "application/x-unheard-of", polyglot),
]


def hostile_message(n: int, marker: str, parts: list[tuple[str | None, str, Any]]) -> bytes:
    boundary = "b0undary"
    body = [f"--{boundary}\nContent-Type: text/plain; charset=utf-8\n\nAttachments follow.\n"]
    for name, content_type, make in parts:
        disposition = "attachment" + (f'; filename="{name}"' if name is not None else "")
        encoded = base64.encodebytes(make(marker).encode()).decode()
        body.append(
            f"--{boundary}\nContent-Type: {content_type}\nContent-Disposition: {disposition}\n"
            f"Content-Transfer-Encoding: base64\n\n{encoded}"
        )
    body.append(f"--{boundary}--\n")
    return make_message(
        f"Hostile attachments {n}",
        "\n".join(body),
        message_id=f"<hostile{n}@example.org>",
        date=datetime(2024, 5, n, 9, 0, tzinfo=UTC),
        extra={"MIME-Version": "1.0", "Content-Type": f'multipart/mixed; boundary="{boundary}"'},
    )


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


@dataclass
class Site:
    www: Path
    """A world-readable copy of the output folder, with control.html added."""
    attachments: list[str]
    """Paths (relative, unquoted) of every attachment file the build wrote."""
    pages: list[str]
    """Paths of every HTML page the build wrote."""
    marker: Marker


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    marker = Marker()
    root = tmp_path_factory.mktemp("attachment-servers") / "site"
    root.mkdir()
    (root / "listlib.toml").write_text(SITE_TOML)
    half = len(HOSTILE) // 2
    messages = [hostile_message(1, marker.url, HOSTILE[:half]), hostile_message(2, marker.url, HOSTILE[half:])]
    source = root.parent / "in.mbox"
    source.write_bytes(mboxrd(messages))
    config = load_config(root / "listlib.toml")
    with Store(config.site.content_dir).open() as store:
        report = file_sources(store, config.lists, [source])
        assert report.failed == 0 and report.filed == 2, report.summary()
    build_site(config, workers=1)
    output = root / "output"
    attachments = sorted(
        str(p.relative_to(output))
        for p in output.glob("dev/*/*/*/*")
        if p.is_file() and p.parent.with_suffix(".eml").is_file()
    )
    assert len(attachments) == len(HOSTILE), attachments
    pages = sorted(str(p.relative_to(output)) for p in output.rglob("*.html"))
    www = public_copy(output)
    (www / "control.html").write_text(polyglot(marker.url))
    os.chmod(www / "control.html", 0o644)
    try:
        yield Site(www, attachments, pages, marker)
    finally:
        marker.close()
        shutil.rmtree(www.parent)


@pytest.fixture(scope="module")
def browser() -> Iterator[DevTools]:
    with tempfile.TemporaryDirectory(prefix="listlib-chromium-") as profile:
        devtools = DevTools(Path(profile))
        try:
            devtools.send("Browser.setDownloadBehavior", behavior="deny")
            yield devtools
        finally:
            devtools.close()


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
        title = browser.send("Runtime.evaluate", session, expression="document.title", returnByValue=True)
        return str(title["result"].get("value", ""))
    finally:
        browser.send("Target.closeTarget", targetId=target)


def visit_all(browser: DevTools, server: WebServer, site: Site) -> None:
    before = len(site.marker.hits)
    assert open_url(browser, server.url + "control.html") == PWNED, f"{server.name}: the control did not run"
    assert site.marker.hits[before:] == ["/ran?/control.html"], f"{server.name}: the marker missed the control"
    ran = []
    for path in site.attachments + site.pages:
        if open_url(browser, server.url + quote(path)) == PWNED:
            ran.append(path)
    # An image request may still be on its way when the tab closes; one more page settles it.
    open_url(browser, server.url + "index.html")
    hits = sorted({hit for hit in site.marker.hits[before + 1 :]})
    print(f"{server.name}: {len(site.attachments)} attachments and {len(site.pages)} pages opened; ran: {ran}")
    assert ran == [] and hits == [], f"{server.name}: scripts ran in {ran}, marker saw {hits}\n{server.errors()}"


@contextlib.contextmanager
def served(start: Any, site: Site, tmp_path: Path) -> Iterator[WebServer]:
    server = start(site.www, tmp_path)
    try:
        yield server
    finally:
        server.stop()


def test_no_attachment_runs_a_script_on_apache(browser: DevTools, site: Site, tmp_path: Path) -> None:
    if reason := apache_missing():
        pytest.skip(reason)
    with served(start_apache, site, tmp_path) as server:
        visit_all(browser, server, site)


def test_no_attachment_runs_a_script_on_nginx(browser: DevTools, site: Site, tmp_path: Path) -> None:
    if reason := nginx_missing():
        pytest.skip(reason)
    with served(start_nginx, site, tmp_path) as server:
        visit_all(browser, server, site)
