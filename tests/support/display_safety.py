"""The "nothing executable" check for display HTML, shared by the display tests.

Parses a fragment back with the stdlib HTML parser (as a browser would
tokenize it) and fails on anything that could run or load: dangerous
elements, event handlers, style attributes, URLs with a scheme other than
http, https, ftp and mailto, and unbalanced markup that could close the
page's own elements. Fragments without a sanitized HTML part are held to a
stricter rule: nothing but listlib's own tags (an allow-list) around text
that has no literal '<' or '>'.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

FORBIDDEN_ELEMENTS = {
    "script", "style", "iframe", "frame", "frameset", "object", "embed", "applet", "form", "input", "button",
    "textarea", "select", "svg", "math", "base", "meta", "link", "template", "noscript", "video", "audio",
    "source", "picture", "portal",
}  # fmt: skip
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "poster", "background", "data", "cite"}
SAFE_SCHEMES = {"http", "https", "ftp", "mailto"}
VOID = {"br", "hr", "img", "wbr", "col", "area", "input", "meta", "link", "base", "source", "embed", "param"}
_SCHEME_RE = re.compile(r"([a-z][a-z0-9+.-]*):")
_INVISIBLE_RE = re.compile(r"[\x00-\x20]+")


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._check(tag, attrs)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._check(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"unbalanced </{tag}> (open: {self.stack[-3:]})")
        else:
            self.stack.pop()

    def _check(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in FORBIDDEN_ELEMENTS:
            self.problems.append(f"<{tag}> element")
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"{name} handler on <{tag}>")
            if name in ("style", "srcdoc", "srcset", "id", "name", "http-equiv"):
                self.problems.append(f"{name} attribute on <{tag}>")
            if name in URL_ATTRIBUTES and value is not None:
                url = _INVISIBLE_RE.sub("", value).lower()
                scheme = _SCHEME_RE.match(url)
                if scheme and scheme.group(1) not in SAFE_SCHEMES:
                    self.problems.append(f"{name}={value!r} on <{tag}>")
                if not scheme and not (tag == "img" and name == "src"):
                    self.problems.append(f"relative {name}={value!r} on <{tag}>")


# The markup listlib writes itself around escaped text. A fragment made only of these
# tags (and text without a literal '<' or '>') is checked exactly by the allow-list,
# a hundred times faster than by the parser; sanitized HTML parts always get the parser.
_TAG_RE = re.compile(r"<[^>]*>")
_OWN_TAG_RE = re.compile(
    r'<(?:div class="(?:msg-body|note [a-z -]+|diff|diff diffstat)"|pre class="text"'
    r'|span class="(?:quote|attribution|lines|first from-mail|diff-(?:file|meta|hunk|add|del|bin))"'
    r'|pre class="text wide" tabindex="0" role="region" aria-label="Text with long lines, scrolls sideways"'
    r'|a href="(?i:https?|ftp|mailto):[^"<>]*" rel="nofollow noopener noreferrer"'
    r'|details class="(?:quote|quote repeat|signature|footer)"|summary|section class="attached-message"'
    r'|dl class="attached-header"|dt|dd|time datetime="[0-9T:.+-]+")>'
    r"|</(?:div|pre|span|a|details|summary|section|dl|dt|dd|time)>"
)
_NAME_RE = re.compile(r"</?([a-z]+)")


def _own_markup_problems(html: str) -> list[str]:
    problems = []
    stack: list[str] = []
    for tag in _TAG_RE.findall(html):
        if not _OWN_TAG_RE.fullmatch(tag):
            problems.append(f"unexpected tag {tag[:80]!r}")
            continue
        name = _NAME_RE.match(tag).group(1)  # type: ignore[union-attr]
        if tag[1] != "/":
            stack.append(name)
        elif not stack or stack.pop() != name:
            problems.append(f"unbalanced {tag}")
    if stack:
        problems.append(f"unclosed elements {stack}")
    text = _TAG_RE.sub("", html)
    if "<" in text or ">" in text:
        problems.append("a literal '<' or '>' outside the markup")
    return problems


def executable_problems(html: str) -> list[str]:
    """What in an HTML fragment could run, load or break out; empty when it is safe."""
    if '<div class="html-part">' not in html:
        return _own_markup_problems(html)
    checker = _Checker()
    checker.feed(html)
    checker.close()
    problems = checker.problems
    if checker.stack:
        problems.append(f"unclosed elements {checker.stack}")
    if "<script" in html.lower():
        problems.append("'<script' in the HTML")
    return problems


def assert_nothing_executable(html: str) -> None:
    problems = executable_problems(html)
    assert not problems, problems
