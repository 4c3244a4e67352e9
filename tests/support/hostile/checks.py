"""Checks on what listlib writes from hostile mail: raw control characters in files and on
the terminal, pages that could run script or load a foreign one, deeply nested JSON."""

from __future__ import annotations

import json
import re
import sys
import threading
from html.parser import HTMLParser
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

# What XML 1.0 refuses (C0 but tab, LF and CR; U+FFFE, U+FFFF; lone surrogates), plus
# DEL and the C1 controls, which no page should carry raw either.
RAW_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff\ud800-\udfff]")
# What a terminal acts on: ESC, BEL and the other C0 controls but tab and newline, DEL, C1.
TERMINAL_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
CSP_META = (
    "<meta http-equiv=\"Content-Security-Policy\" content=\"script-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'\">"
)
_INVISIBLE_RE = re.compile(r"[\x00-\x20]+")

THEME_TEXTS = frozenset({"search-texts", "times-texts", "visits-texts"})
"""The ids of the default theme's word blocks for its scripts (``texts_json``)."""


def assert_terminal_safe(output: str) -> None:
    found = TERMINAL_CONTROL_RE.search(output.replace("\n", ""))
    assert found is None, (
        f"{found.group()!r} at {found.start()}: {output[max(0, found.start() - 60) : found.end() + 60]!r}"
    )


class _PageChecker(HTMLParser):
    def __init__(self, page: PurePosixPath) -> None:
        super().__init__(convert_charrefs=True)
        self.page = page
        self.problems: list[str] = []

    def handle_data(self, data: str) -> None:
        if found := RAW_CONTROL_RE.search(data):
            self.problems.append(f"control character {found.group()!r} in text {data[:80]!r}")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "script" and not self._own_script(values):
            self.problems.append(f"<script {attrs}>")
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"{name} handler on <{tag}>")
            value = value or ""
            if found := RAW_CONTROL_RE.search(value):
                self.problems.append(f"control character {found.group()!r} in {name} of <{tag}>")
            plain = _INVISIBLE_RE.sub("", value).lower()
            if "javascript:" in plain or "vbscript:" in plain or (name != "content" and "expression(" in plain):
                self.problems.append(f"{name}={value[:80]!r} on <{tag}>")
        if tag == "form" and self._site_path(values.get("action") or "") != ["search", "index.html"]:
            self.problems.append(f"<form {attrs}>")
        if tag in ("base", "iframe", "object", "embed", "svg", "math"):
            self.problems.append(f"<{tag}> element")
        if tag == "meta" and (values.get("http-equiv") or "").lower() == "refresh":
            # The theme's redirect pages point inside the site; nothing else may refresh.
            target = (values.get("content") or "").partition("url=")[2]
            if self._site_path(target.partition("#")[0]) is None:
                self.problems.append(f"<meta {attrs}>")

    def _own_script(self, values: dict[str, str | None]) -> bool:
        """A theme script: a file of the site's static/ folder, or the words the theme
        hands its scripts (``<script type="application/json" id="…-texts">``: data, which
        no browser runs)."""
        if set(values) == {"type", "id"} and values["type"] == "application/json":
            return values["id"] in THEME_TEXTS
        path = self._site_path(values.get("src") or "")
        return path is not None and len(path) == 2 and path[0] == "static" and path[1].endswith(".js")

    def _site_path(self, url: str) -> list[str] | None:
        """The parts of the output path a ``url`` of this page points to, relative or from
        the root of the site (served at ``/``, as the 404 page's links are); None: elsewhere."""
        parts = urlsplit(url)
        if parts.scheme or parts.netloc or not parts.path:
            return None
        if parts.path.startswith("/"):
            return [part for part in unquote(parts.path).split("/") if part]
        resolved = list(self.page.parts[:-1])
        for part in unquote(parts.path).split("/"):
            if part == "..":
                if not resolved:
                    return None
                resolved.pop()
            elif part not in (".", ""):
                resolved.append(part)
        return resolved


def page_problems(page: PurePosixPath, html: str) -> list[str]:
    """What in a page (``page`` relative to output/) could run script or leave the page: raw
    control characters, scripts other than the theme's, event handlers, javascript: URLs,
    CSS expressions, <base>, refresh, frames, forms, plugins; or a missing CSP meta."""
    checker = _PageChecker(page)
    checker.feed(html)
    checker.close()
    if CSP_META not in html:
        checker.problems.append("no Content-Security-Policy meta")
    return checker.problems


def load_deep_json(text: str) -> Any:
    """``json.loads`` of very deeply nested JSON: the stdlib decoder recurses, so it runs
    in a thread with a large stack and a raised recursion limit."""
    found: dict[str, Any] = {}
    limit = sys.getrecursionlimit()
    size = threading.stack_size(1 << 29)
    try:
        sys.setrecursionlimit(200_000)
        worker = threading.Thread(target=lambda: found.update(data=json.loads(text)))
        worker.start()
        worker.join()
    finally:
        threading.stack_size(size)
        sys.setrecursionlimit(limit)
    return found["data"]
