"""HTML mail -> a safe HTML fragment (nh3, an allow-list sanitizer); the only module that uses nh3.

What survives: text, the formatting tags of nh3's default allow-list, links to
``http``, ``https``, ``ftp`` and ``mailto`` URLs (with
``rel="nofollow noopener noreferrer"``), and images. What never survives:
scripts, styles (elements and attributes), event handlers, forms, frames,
objects, SVG and MathML, ``<meta>``/``<base>``/``<link>``, comments, ids and
classes (mail must not borrow the theme's classes or clobber the page's
names), relative URLs (they would point into the archive) and every other
URL scheme (``javascript:``, ``data:``, ``vbscript:`` ...).

Images are rewritten afterwards by ``rewrite_images``: ``cid:`` images point
at their saved attachment; remote images become a ``[image: ...]``
placeholder unless the site allows loading them (tracking pixels would tell
senders who read the archive); anything else becomes the placeholder.

Never trusts its input and never raises on it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from html import escape, unescape
from typing import Any
from urllib.parse import unquote

import nh3

from ..translation import Texts, english

__all__ = ["MAX_DEPTH", "html_as_text", "html_to_text", "rewrite_images", "sanitize_html", "too_deep"]

REL = "nofollow noopener noreferrer"
MAX_DEPTH = 512
_TAGS = set(nh3.ALLOWED_TAGS)
# Elements removed with everything inside them; the rest of the non-allowed
# elements lose their tags but keep their text.
_CLEAN_CONTENT = {
    "script",
    "style",
    "title",
    "head",
    "template",
    "iframe",
    "frame",
    "frameset",
    "object",
    "embed",
    "applet",
    "noembed",
    "noframes",
    "noscript",
    "svg",
    "math",
    "xmp",
    "select",
    "textarea",
} - _TAGS
_ATTRIBUTES = {tag: set(names) for tag, names in nh3.ALLOWED_ATTRIBUTES.items()}
_ATTRIBUTES["*"] = {"title", "lang", "dir"}
_ATTRIBUTES["img"] = {"src", "alt", "width", "height", "align"}
_ATTRIBUTES["a"] = {"href", "hreflang"}
_SCHEMES = {"http", "https", "ftp", "mailto", "cid"}
_URL_ATTRIBUTES = {"href", "src", "cite"}
_SCHEME_RE = re.compile(r"\s*([A-Za-z][A-Za-z0-9+.-]*):")
# Tags as nh3 writes them: attribute values always double-quoted with '"' escaped.
_IMG_RE = re.compile(r'<img((?:\s+[A-Za-z_:][-A-Za-z0-9_:.]*(?:="[^"]*")?)*)\s*/?>')
_ATTR_RE = re.compile(r'([A-Za-z_:][-A-Za-z0-9_:.]*)(?:="([^"]*)")?')
_TAG_TOKEN_RE = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)[^>]*?(/?)>")
_ANY_TAG_RE = re.compile(r"<[^>]*>")
# Void elements and elements whose end tag is implied by the next one of their kind.
_NOT_NESTING = {
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track",
    "wbr", "p", "li", "dt", "dd", "option", "optgroup", "tr", "td", "th", "tbody", "thead", "tfoot",
    "colgroup", "rb", "rt", "rp", "rtc", "html", "head", "body",
}  # fmt: skip
_BLOCK_END_RE = re.compile(r"<br\s*/?>|</(?:p|div|tr|li|h[1-6]|blockquote|pre|table|dt|dd)>|<hr\s*/?>", re.I)
# Both start with a literal or match every run once, so long runs of blanks stay linear.
_TEXT_BLANK_RE = re.compile(r"\n[ \n]*\n ?")
_SPACES_RE = re.compile(r"[ \t\r\f\v\xa0]+")


def _attribute_filter(drop_mailto: bool) -> Callable[[str, str, str], str | None]:
    def keep(element: str, attribute: str, value: str) -> str | None:
        if attribute not in _URL_ATTRIBUTES:
            return value
        scheme = _SCHEME_RE.match(value)
        if scheme is None:
            return None  # a relative URL would point into the archive itself
        name = scheme.group(1).lower()
        if name not in _SCHEMES or (name == "cid" and (element, attribute) != ("img", "src")):
            return None
        if name == "mailto" and drop_mailto:
            return None
        return value

    return keep


def _clean(html: str, **options: Any) -> str:
    """``nh3.clean``, with a Rust panic (a BaseException, which would stop a build) made harmless."""
    try:
        return nh3.clean(html, **options)
    except Exception:
        raise
    except BaseException as exc:
        if type(exc).__name__ != "PanicException":
            raise
        return f"<pre>{escape(html, quote=False)}</pre>"


def too_deep(html: str) -> bool:
    """Whether elements nest deeper than ``MAX_DEPTH``.

    The HTML parser behind nh3 takes time quadratic in the nesting depth (each
    ``<div>`` searches the stack of open elements): 100,000 nested ``<div>``
    would take minutes. The depth is over-estimated cheaply: start tags count,
    end tags and elements that close themselves (``p``, ``li``, ``td`` ...) do not.
    """
    if html.count("<") <= MAX_DEPTH:
        return False
    depth = 0
    for closing, name, self_closing in _TAG_TOKEN_RE.findall(html):
        name = name.lower()
        if name in _NOT_NESTING or self_closing:
            continue
        if closing:
            depth = max(0, depth - 1)
        else:
            depth += 1
            if depth > MAX_DEPTH:
                return True
    return False


def html_as_text(html: str) -> str:
    """The text of HTML with every tag dropped, for HTML that cannot be sanitized; needs escaping."""
    text = _SPACES_RE.sub(" ", unescape(_ANY_TAG_RE.sub(" ", html)))
    return _TEXT_BLANK_RE.sub("\n\n", text).strip()


def sanitize_html(html: str, drop_mailto: bool = False) -> str:
    """A safe fragment of an HTML part; ``cid:`` image sources are kept for ``rewrite_images``."""
    return _clean(
        html,
        tags=_TAGS,
        clean_content_tags=_CLEAN_CONTENT,
        attributes=_ATTRIBUTES,
        attribute_filter=_attribute_filter(drop_mailto),
        strip_comments=True,
        link_rel=REL,
        url_schemes=_SCHEMES,
    )


def _placeholder(texts: Texts, css: str, alt: str, title: str | None = None) -> str:
    label = texts.text("display.image_alt", alt=alt) if alt.strip() else texts.text("display.image")
    titled = f' title="{escape(title)}"' if title else ""
    return f'<span class="{css}"{titled}>{escape(label, quote=False)}</span>'


def rewrite_images(
    html: str, cid_urls: Mapping[str, tuple[str, str]], load_remote: bool, texts: Texts | None = None
) -> tuple[str, set[str]]:
    """Point ``cid:`` images at their attachment URL and block remote ones; returns the cids used.
    ``cid_urls``: each Content-ID's (URL, alt text for an image whose HTML gives none);
    ``texts``: the words of the placeholders (English when None)."""
    words = texts or english()
    used: set[str] = set()
    if "<img" not in html:
        return html, used

    def replace(match: re.Match[str]) -> str:
        attrs = {name.lower(): unescape(value or "") for name, value in _ATTR_RE.findall(match.group(1))}
        src = attrs.pop("src", "").strip()
        alt = attrs.get("alt", "")
        scheme = src.split(":", 1)[0].lower() if ":" in src else ""
        if scheme == "cid":
            cid = unquote(src[4:]).strip().strip("<>")
            found = cid_urls.get(cid) or cid_urls.get(cid.lower())
            if found is None:
                return _placeholder(words, "missing-image", alt)
            used.add(cid)
            src, fallback = found
            if "alt" not in attrs or not attrs["alt"].strip():
                attrs["alt"] = fallback
        elif scheme in ("http", "https", "ftp"):
            if not load_remote:
                return _placeholder(words, "remote-image", alt, src)
            attrs["referrerpolicy"] = "no-referrer"
            attrs["loading"] = "lazy"
        else:
            return _placeholder(words, "missing-image", alt)
        rest = "".join(f' {name}="{escape(value)}"' for name, value in attrs.items())
        return f'<img src="{escape(src)}"{rest}>'

    return _IMG_RE.sub(replace, html), used


def html_to_text(html: str) -> str:
    """Readable plain text of a (sanitized) HTML fragment, quotes left out, for search and feeds."""
    marked = _BLOCK_END_RE.sub(lambda m: m.group(0) + "\n", html)
    text = unescape(_clean(marked, tags=set(), clean_content_tags={"blockquote"}, attributes={}))
    return _TEXT_BLANK_RE.sub("\n\n", _SPACES_RE.sub(" ", text)).strip()
