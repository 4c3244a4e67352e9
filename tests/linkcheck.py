"""A link checker for a built site: every internal link, image, stylesheet and redirect
points at a file that exists, and every #fragment at an element id of its page."""

from __future__ import annotations

import posixpath
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

_REFRESH_RE = re.compile(r"url=(.*)", re.IGNORECASE)


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(values["id"] or "")
        for name in ("href", "src"):
            if values.get(name) and tag in ("a", "link", "img", "script", "source", "iframe"):
                self.links.append(values[name] or "")
        if tag == "meta" and (values.get("http-equiv") or "").lower() == "refresh":
            found = _REFRESH_RE.search(values.get("content") or "")
            if found:
                self.links.append(found.group(1).strip())


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def check_links(root: Path) -> list[str]:
    """Every broken internal link under ``root`` as 'page -> link (why)'."""
    problems: list[str] = []
    parsed: dict[Path, _Page] = {}

    def page(path: Path) -> _Page:
        if path not in parsed:
            parsed[path] = _parse(path)
        return parsed[path]

    for path in sorted(root.rglob("*.html")):
        rel = path.relative_to(root).as_posix()
        for link in page(path).links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:
                continue
            target = path
            if parts.path:
                joined = posixpath.normpath(posixpath.join(posixpath.dirname(rel), unquote(parts.path)))
                if joined.startswith(".."):
                    problems.append(f"{rel} -> {link} (leaves the site)")
                    continue
                target = root / joined
                if parts.path.endswith("/") or target.is_dir():
                    target = target / "index.html"
                if not target.is_file():
                    problems.append(f"{rel} -> {link} (missing)")
                    continue
            fragment = unquote(parts.fragment)
            if fragment and target.suffix == ".html" and fragment not in page(target).ids:
                problems.append(f"{rel} -> {link} (no id {fragment!r})")
    return problems
