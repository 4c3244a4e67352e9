"""A link checker for a built site: every internal link, image, stylesheet and redirect
points at a file that exists, and every #fragment at an element id of its page; every
URL of the sitemaps (found from ``robots.txt``) is one of the site's files.
Pages are parsed once; the parse also lists each page's message sections and any
markup that could run, for tests that want those.

The parse finds start tags with html.parser's own patterns (a tag name, then attributes
quoted, unquoted or bare) and skips comments, but does not walk the text between tags:
the pages escape every ``<`` of the mail they show, and a corpus site has 130,000 pages
(800 MB), which HTMLParser took 2 minutes to read. Unlike a browser it also looks for
tags inside ``<script>``/``<style>`` content: stricter for the danger check, and the
theme's own scripts hold no tag."""

from __future__ import annotations

import posixpath
import re
from html import unescape
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
_COMMENT_RE = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_TAG_RE = re.compile(r"""<([a-zA-Z][^\t\n\r\f />\x00]*)((?:[^>"']+|"[^"]*"|'[^']*')*)>""")
_ATTR_RE = re.compile(r"""([^\s/>=][^\s/=>]*)(?:\s*(=)+\s*(?:'([^']*)'|"([^"]*)"|(?!['"])([^>\s]*)))?""")
_LINKING_TAGS = frozenset(("a", "link", "img", "script", "source", "iframe"))


class Page:
    """What one HTML file holds: links, element ids, message sections, active markup."""

    def __init__(self) -> None:
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.messages: list[str] = []
        self.dangers: list[str] = []

    def feed(self, text: str) -> None:
        """Read every start tag of ``text`` (names lower-cased, values unquoted and their
        character references resolved, as HTMLParser hands them)."""
        if "<!--" in text:
            text = _COMMENT_RE.sub("", text)
        for tag, rest in _TAG_RE.findall(text):
            tag = tag.lower()
            if not rest.strip(" \t\n\r\f/"):
                if tag in _ACTIVE_TAGS:
                    self.dangers.append(f"<{tag}>")
                continue
            attrs: dict[str, str | None] = {}
            for name, equals, single, double, bare in _ATTR_RE.findall(rest):
                value = (single or double or bare) if equals else None
                if value and "&" in value:
                    value = unescape(value)
                name = name.lower()
                attrs.setdefault(name, value)
                if name.startswith("on") or name == "style":
                    self.dangers.append(f"{tag}[{name}]")
                if name in ("href", "src", "action") and value and _ACTIVE_URL_RE.match(value):
                    self.dangers.append(f"{tag}[{name}={value[:30]!r}]")
            self._start(tag, attrs)

    def _start(self, tag: str, values: dict[str, str | None]) -> None:
        if values.get("id"):
            self.ids.add(values["id"] or "")
        if tag in ("article", "section") and "message" in (values.get("class") or "").split():
            self.messages.append(values.get("id") or "")
        if tag in _ACTIVE_TAGS and not self._theme_own(tag, values):
            self.dangers.append(f"<{tag}>")
        if tag in _LINKING_TAGS:
            self.links.extend(value for name in ("href", "src") if (value := values.get(name)))
        if tag == "meta" and (values.get("http-equiv") or "").lower() == "refresh":
            found = _REFRESH_RE.search(values.get("content") or "")
            if found:
                self.links.append(found.group(1).strip())

    @staticmethod
    def _theme_own(tag: str, values: dict[str, str | None]) -> bool:
        """Whether an active tag is one the theme itself writes: its script (static/times.js
        on thread pages, which the link check finds), the words it hands its scripts (JSON
        data, which no browser runs), its search box (a GET to the site's own search page)."""
        if tag == "script":
            return (
                _THEME_SCRIPT_RE.fullmatch(values.get("src") or "") is not None and set(values) == {"src", "defer"}
            ) or (set(values) == {"type", "id"} and values["type"] == "application/json")
        return (
            tag == "form"
            and values.get("role") == "search"
            and bool(_SEARCH_PAGE_RE.search(values.get("action") or ""))
        )


def parse_page(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def parse_site(root: Path) -> dict[Path, Page]:
    """Every HTML page under ``root``, parsed."""
    return {path: parse_page(path) for path in sorted(root.rglob("*.html"))}


def check_links(root: Path, pages: dict[Path, Page] | None = None, base_path: str = "/") -> list[str]:
    """Every broken internal link under ``root`` as 'page -> link (why)'. A link from the
    host's root (the 404 page's) must start with ``base_path``, where the site is served."""
    problems: list[str] = []
    targets: dict[tuple[str, bool], Path | None] = {}
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
                key = (joined, parts.path.endswith("/"))
                if key not in targets:  # pages share most of their links: one stat each
                    found = root / joined
                    if key[1] or found.is_dir():
                        found = found / "index.html"
                    targets[key] = found if found.is_file() else None
                if (found_target := targets[key]) is None:
                    problems.append(f"{rel} -> {link} (missing)")
                    continue
                target = found_target
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
