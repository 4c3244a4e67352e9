"""Hostile attachments served by real web servers and opened in a real browser: no script
from a message runs in the archive's origin (DESIGN.md invariant 6).

A site is built from messages whose attachments carry a script: names without an
extension, names listlib defuses (``x.php``, ``.htaccess``, ``nul``), rare and active
extensions (``x.xhtm``, ``x.svg``, ``x.var`` ...), and HTML bytes under a declared type
that lies. Debian's Apache httpd and nginx (tests/support/webservers.py: their stock type
configs, own config files, random ports) each serve the output folder, and headless
Chromium (tests/support/chromium.py) opens every attachment and every page of the site. The
script sets the page title and asks a small listener of the test for an image, so it
is seen either way. A positive control, ``control.html`` placed in the output by hand
with the same script, must be seen to run on each server, or the test proves nothing.
Skipped when Chromium, Apache or nginx is not installed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from listlib.build import build_site
from listlib.config import load_config
from listlib.filing import file_sources
from listlib.store.core import Store

from ..support.chromium import CHROMIUM, DevTools, Marker, browser_without_downloads, open_url
from ..support.helpers import SITE_TOML, mboxrd
from ..support.hostile.attachments import HOSTILE, PWNED, hostile_attachment_message, polyglot
from ..support.webservers import WebServer, apache_missing, nginx_missing, public_copy, start_apache, start_nginx

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")


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
    messages = [
        hostile_attachment_message(1, marker.url, HOSTILE[:half]),
        hostile_attachment_message(2, marker.url, HOSTILE[half:]),
    ]
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
    with browser_without_downloads() as devtools:
        yield devtools


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
