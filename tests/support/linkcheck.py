"""A link checker for a built site: every internal link, image, stylesheet and redirect
points at a file that exists, and every #fragment at an element id of its page; every
URL of the sitemaps (found from ``robots.txt``) is one of the site's files.
Pages are parsed once; the parse also lists each page's message sections and any
markup that could run, for tests that want those."""

from __future__ import annotations

import posixpath
import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

_REFRESH_RE = re.compile(r"url=(.*)", re.IGNORECASE)
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_ACTIVE_URL_RE = re.compile(r"\s*(javascript|vbscript|data:text)", re.IGNORECASE)
_THEME_SCRIPT_RE = re.compile(r"(\.\./)*static/[a-z]+\.js")
_ACTIVE_TAGS = ("script", "iframe", "object", "embed", "form", "base")
_SEARCH_PAGE_RE = re.compile(r"\A(?:\.\./)*(?:/[\w./-]*)?search/index\.html\Z")
_SITEMAP_RE = re.compile(r"^Sitemap:\s*(\S+)/sitemap\.xml\s*$", re.MULTILINE)
_LOC_RE = re.compile(r"<loc>([^<]*)</loc>")


class Page(HTMLParser):
    """What one HTML file holds: links, element ids, message sections, active markup."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.messages: list[str] = []
        self.dangers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(values["id"] or "")
        if tag in ("article", "section") and "message" in (values.get("class") or "").split():
            self.messages.append(values.get("id") or "")
        if tag == "script" and _THEME_SCRIPT_RE.fullmatch(values.get("src") or "") and set(values) == {"src", "defer"}:
            pass  # the theme's own script (static/times.js on thread pages), which the link check finds
        elif tag == "script" and set(values) == {"type", "id"} and values["type"] == "application/json":
            pass  # the words the theme hands its scripts (data, which no browser runs)
        elif tag == "form" and values.get("role") == "search" and _SEARCH_PAGE_RE.search(values.get("action") or ""):
            pass  # the theme's search box (every page's header), a GET to the site's own search page
        elif tag in _ACTIVE_TAGS:
            self.dangers.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on") or name == "style":
                self.dangers.append(f"{tag}[{name}]")
            if name in ("href", "src", "action") and _ACTIVE_URL_RE.match(value or ""):
                self.dangers.append(f"{tag}[{name}={(value or '')[:30]!r}]")
        for name in ("href", "src"):
            if values.get(name) and tag in ("a", "link", "img", "script", "source", "iframe"):
                self.links.append(values[name] or "")
        if tag == "meta" and (values.get("http-equiv") or "").lower() == "refresh":
            found = _REFRESH_RE.search(values.get("content") or "")
            if found:
                self.links.append(found.group(1).strip())


def parse_page(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def parse_site(root: Path) -> dict[Path, Page]:
    """Every HTML page under ``root``, parsed."""
    return {path: parse_page(path) for path in sorted(root.rglob("*.html"))}


def check_links(root: Path, pages: dict[Path, Page] | None = None, base_path: str = "/") -> list[str]:
    """Every broken internal link under ``root`` as 'page -> link (why)'. A link from the
    host's root (the 404 page's) must start with ``base_path``, where the site is served."""
    problems: list[str] = []
    parsed = pages if pages is not None else parse_site(root)
    for path, page in parsed.items():
        rel = path.relative_to(root).as_posix()
        for link in page.links:
            if _SCHEME_RE.match(link) or link.startswith("//"):
                continue  # not a link inside the site (mail can hold malformed ones: http://[host]/)
            parts = urlsplit(link)
            target = path
            if parts.path.startswith("/"):
                if not parts.path.startswith(base_path):
                    problems.append(f"{rel} -> {link} (outside {base_path})")
                    continue
                parts = parts._replace(path="../" * rel.count("/") + (parts.path[len(base_path) :] or "."))
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
            if fragment and target.suffix == ".html":
                other = parsed.get(target) or parse_page(target)
                if fragment not in other.ids:
                    problems.append(f"{rel} -> {link} (no id {fragment!r})")
    return problems + _sitemap_problems(root)


def _sitemap_problems(root: Path) -> list[str]:
    """Every URL of every sitemap under ``root`` that is not the URL of one of its files
    (the site's own URL is the one ``robots.txt`` gives its root sitemap)."""
    robots = root / "robots.txt"
    found = _SITEMAP_RE.search(robots.read_text(encoding="utf-8")) if robots.is_file() else None
    if found is None:
        return []
    base = found.group(1) + "/"
    problems = []
    for sitemap in sorted(root.rglob("sitemap.xml")):
        rel = sitemap.relative_to(root).as_posix()
        for loc in _LOC_RE.findall(sitemap.read_text(encoding="utf-8")):
            url = unescape(loc)
            if not url.startswith(base):
                problems.append(f"{rel} -> {url} (outside {base})")
                continue
            target = root / unquote(urlsplit(url[len(base) :]).path)
            if url.endswith("/") or target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                problems.append(f"{rel} -> {url} (missing)")
    return problems
