"""Where every page and file of the website lives, as paths relative to ``output/``.

These paths are the site's public URLs, so they are a promise (DESIGN.md, invariant 4):
a message's page is ``<list>/<yyyy>/<mm>/<call>.html`` under the month it was filed
in, forever. When the message is the root of a thread that file is the thread page;
otherwise it is a small redirect to the message's place in its thread page, so the
URL keeps working whichever thread the message ends up in. A long thread has more
pages (``plan.paging``): page 1 is the root's page, page ``k`` is
``<list>/<yyyy>/<mm>/<call>-<k>.html`` beside it (``thread_page_path``; call numbers
have no ``-``, so no message's page can be called that), and a message's redirect
leads to the page that holds it. Thread URLs of old roots
therefore keep working too: the old root's page turns into such a redirect.

A message can also be found from its Message-ID alone: ``mid/<h[0:2]>/<h[2:]>.html``
where ``h`` is the lower-case hex SHA-256 of the Message-ID without its angle brackets
(see ``message_id_path``).
With ``[site] message_id_paths`` a message is also at public-inbox's (lore's) place:
``<list>/<Message-ID>/`` (a redirect to the message), ``.../raw`` (its ``.eml`` copy)
and ``.../t.mbox.gz`` (its thread's download), the last two as symbolic links (see
``message_id_folder``; ``mid_escape`` spells their URLs as public-inbox does).

Links inside the site are relative (``relative_url``) so the output works from any
sub-path and from ``file://``; directory pages are linked as ``.../index.html``.
Templates reach the site-wide paths through ``SitePaths`` (``paths`` in every
template). Nothing else in listlib spells an output path. Pure: no I/O.
"""

from __future__ import annotations

import functools
import posixpath
import re
import urllib.parse
from urllib.parse import quote

from .values import Month, message_id_hash

__all__ = [
    "MID_DIR",
    "NOT_FOUND_PATH",
    "ROBOTS_PATH",
    "LEGACY_APACHE_PATH",
    "LEGACY_DIR",
    "LEGACY_NGINX_PATH",
    "REDIRECTS_PATH",
    "ROOT_NAMES",
    "SEARCH_DIR",
    "SEARCH_PAGE_PATH",
    "SITEMAP_INDEX_PATH",
    "SITE_INDEX_PATH",
    "STATIC_DIR",
    "SitePaths",
    "attachment_dir",
    "attachment_path",
    "feed_path",
    "legacy_page_path",
    "list_index_path",
    "message_id_hash",
    "message_id_folder",
    "message_id_path",
    "mid_escape",
    "mid_page_path",
    "message_path",
    "month_date_path",
    "month_index_path",
    "month_mbox_path",
    "raw_path",
    "relative_url",
    "sitemap_path",
    "static_path",
    "thread_mbox_path",
    "thread_page_path",
    "MID_RAW_NAME",
    "MID_THREAD_MBOX_NAME",
    "MID_PAGE_NAME",
    "NAME_MAX",
]

SITE_INDEX_PATH = "index.html"
NOT_FOUND_PATH = "404.html"
"""The page static hosts show for a missing path."""
ROBOTS_PATH = "robots.txt"
SITEMAP_INDEX_PATH = "sitemap.xml"
"""The sitemap index: every list's monthly sitemaps."""
SEARCH_DIR = "search"
"""The search page and the static search index's files."""
SEARCH_PAGE_PATH = f"{SEARCH_DIR}/index.html"
STATIC_DIR = "static"
"""The theme's static files."""
MID_DIR = "mid"
"""The Message-ID lookup pages."""

REDIRECTS_PATH = "_redirects"
"""Legacy redirects in the Netlify / Cloudflare Pages format (only with ``[lists.<slug>.legacy]``)."""
LEGACY_DIR = "_legacy"
"""The legacy redirect maps for web servers that redirect with a real 301."""
LEGACY_NGINX_PATH = f"{LEGACY_DIR}/nginx-map.conf"
"""An nginx ``map`` include: ``"/old/url" "/new/url";`` a line."""
LEGACY_APACHE_PATH = f"{LEGACY_DIR}/apache-rewritemap.txt"
"""An Apache ``RewriteMap`` text file: ``/old/url /new/url`` a line."""

ROOT_NAMES = frozenset(
    {STATIC_DIR, MID_DIR, SEARCH_DIR, SITE_INDEX_PATH, NOT_FOUND_PATH, ROBOTS_PATH, SITEMAP_INDEX_PATH}
    | {REDIRECTS_PATH, LEGACY_DIR}
)
"""Top-level names of the output the site itself uses; no list may be called this."""


@functools.lru_cache(maxsize=8192)
def _month_dir(slug: str, month: Month) -> str:
    """A list's folder of one month (remembered: a full plan asks 235,000 times)."""
    return f"{slug}/{month.year:04d}/{month.month:02d}"


def list_index_path(slug: str) -> str:
    return f"{slug}/index.html"


def feed_path(slug: str) -> str:
    return f"{slug}/feed.atom"


def series_feed_path(slug: str) -> str:
    """A list's Atom feed of new patch series."""
    return f"{slug}/series.atom"


def month_index_path(slug: str, month: Month) -> str:
    """The month page: the threads active that month."""
    return f"{_month_dir(slug, month)}/index.html"


def month_date_path(slug: str, month: Month) -> str:
    """The month's messages by date."""
    return f"{_month_dir(slug, month)}/date.html"


def month_mbox_path(slug: str, month: Month) -> str:
    return f"{_month_dir(slug, month)}/{slug}-{month.year:04d}-{month.month:02d}.mbox.gz"


def sitemap_path(slug: str, month: Month, number: int = 1) -> str:
    """A sitemap of the thread pages rooted in a month (``number`` > 1 only when a month
    has more threads than one sitemap file may list)."""
    name = "sitemap.xml" if number == 1 else f"sitemap-{number}.xml"
    return f"{_month_dir(slug, month)}/{name}"


def message_path(slug: str, month: Month, call: str) -> str:
    """A message's permanent page: its thread page when it is a root, else a redirect."""
    return f"{_month_dir(slug, month)}/{call}.html"


def thread_page_path(slug: str, month: Month, thread_id: str, number: int) -> str:
    """Page ``number`` (from 1) of a thread rooted in ``month``: page 1 is the root's
    ``message_path``, the others sit beside it."""
    if number == 1:
        return message_path(slug, month, thread_id)
    return f"{_month_dir(slug, month)}/{thread_id}-{number}.html"


def raw_path(slug: str, month: Month, call: str) -> str:
    """The message exactly as stored."""
    return f"{_month_dir(slug, month)}/{call}.eml"


def thread_mbox_path(slug: str, month: Month, thread_id: str) -> str:
    return f"{_month_dir(slug, month)}/{thread_id}.mbox.gz"


def attachment_dir(slug: str, month: Month, call: str) -> str:
    """The folder of a message's attachments (file names come from ``display.safe_filename``)."""
    return f"{_month_dir(slug, month)}/{call}"


def attachment_path(slug: str, month: Month, call: str, filename: str) -> str:
    """One attachment of a message."""
    return f"{attachment_dir(slug, month, call)}/{filename}"


def static_path(rel: str) -> str:
    """A file of the theme's static/ folder (``rel``: its path there)."""
    return f"{STATIC_DIR}/{rel}"


def message_id_path(message_id: str) -> str:
    """The Message-ID lookup page of a message."""
    return mid_page_path(message_id_hash(message_id))


def mid_page_path(digest: str) -> str:
    """The lookup page of the Message-ID whose ``message_id_hash`` is ``digest``."""
    return f"{MID_DIR}/{digest[:2]}/{digest[2:]}.html"


MID_PAGE_NAME = "index.html"
"""In a Message-ID folder: the page that redirects to the message."""
MID_RAW_NAME = "raw"
"""In a Message-ID folder: the message as stored (public-inbox's ``/raw``)."""
MID_THREAD_MBOX_NAME = "t.mbox.gz"
"""In a Message-ID folder: its whole thread as gzipped mboxrd (public-inbox's ``/t.mbox.gz``)."""
NAME_MAX = 255
"""The longest file name (in bytes) of the file systems output/ is written to."""

_MID_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@")
"""What public-inbox's ``mid_escape`` leaves as it is (``PublicInbox::MID::MID_ESC``:
RFC 3986's unreserved characters and the sub-delimiters, ``:`` and ``@``)."""
_MID_NAME_BAD_RE = re.compile(r"[\x00-\x1f\x7f/\\]|[\ud800-\udfff]")


def mid_escape(message_id: str) -> str:
    """A Message-ID (without its angle brackets) as public-inbox spells it in a URL: its
    UTF-8 bytes, each outside ``_MID_UNRESERVED`` (``/`` and ``%`` among them) as ``%XX``."""
    data = message_id.encode("utf-8", "surrogateescape")
    return "".join(chr(b) if b in _MID_UNRESERVED else f"%{b:02X}" for b in data)


def message_id_folder(slug: str, folder: str, message_id: str) -> str | None:
    """The folder of a Message-ID's public-inbox-style paths under list ``slug`` (``folder``:
    ``[site] message_id_folder``, "" for the list's own folder, as on lore), or None when
    the Message-ID cannot have one (it is then found only through ``mid/``).

    Static servers (Apache, nginx, ``python -m http.server``, object storage, ``file://``)
    decode a URL's ``%XX`` before they look for the file, so the folder's name on disk is
    the Message-ID itself: what ``mid_escape``'s URL (or b4's ``quote_plus``) decodes to.
    None for a Message-ID without ``@`` (so no name can meet the list's own files: years,
    ``index.html``, ``feed.atom``), with a ``/`` (a server would look in a subfolder, and
    Apache refuses an encoded ``/`` by default), a ``\\``, a control character or bytes
    that are not UTF-8, one starting with ``.`` (hidden, or not published, on many hosts),
    or one longer than ``NAME_MAX`` bytes in UTF-8."""
    if (
        "@" not in message_id
        or message_id.startswith(".")
        or _MID_NAME_BAD_RE.search(message_id)
        or len(message_id.encode("utf-8")) > NAME_MAX
    ):
        return None
    return f"{slug}/{folder}/{message_id}" if folder else f"{slug}/{message_id}"


def legacy_page_path(prefix: str, old: str) -> str:
    """The static redirect page of an old archive's URL ``old`` (relative to the old
    archive's root, e.g. ``2024-May/000123.html`` or ``list/dev@example.org/message/H/``),
    whose archive lived at ``prefix`` (``[lists.<slug>.legacy] path``). A URL ending in
    ``/`` is a folder: its page is the folder's ``index.html``."""
    path = f"{prefix}/{old}" if prefix else old
    return path + "index.html" if path.endswith("/") else path


class SitePaths:
    """The output paths templates link to, as ``paths`` (``url(paths.search)``,
    ``url(paths.list_index(list.slug))``, ``url(paths.static('style.css'))``)."""

    site_index = SITE_INDEX_PATH
    search = SEARCH_PAGE_PATH
    sitemap_index = SITEMAP_INDEX_PATH
    list_index = staticmethod(list_index_path)
    feed = staticmethod(feed_path)
    static = staticmethod(static_path)


RELATIVE_KEPT = 1024
"""How many relative URLs a process keeps (``relative_url``, by the linking page's folder
and the target): a build's pages link to the same few places again and again. Most
other targets are linked once or twice (a message's own page): 8,192 kept them too,
some 3.5 MB in each render worker once full (issue 28), for 6% more hits (19,163 of
30,816 calls rendering 2,100 messages, 18,054 with 1,024)."""


def relative_url(from_path: str, to_path: str) -> str:
    """The URL of ``to_path`` as seen from the page at ``from_path`` (both relative to
    the output root), percent-encoded; an optional ``#fragment`` is kept."""
    target, hash_mark, fragment = to_path.partition("#")
    if not target:
        url = _quote(posixpath.basename(from_path))
    else:
        url = _relative(from_path[: from_path.rfind("/") + 1], target)
    return url + (hash_mark + _quote(fragment) if hash_mark else "")


@functools.lru_cache(maxsize=RELATIVE_KEPT)
def _relative(folder: str, target: str) -> str:
    """``target`` from a page in ``folder`` (``a/b/``, or empty for the root), quoted:
    kept, as a build's pages of one folder link to the same few places."""
    here = folder.split("/")[:-1]
    there = target.split("/")
    common = 0
    while common < len(here) and common < len(there) - 1 and here[common] == there[common]:
        common += 1
    return _quote("../" * (len(here) - common) + "/".join(there[common:]))


def rooted_url(base_url: str, to_path: str) -> str:
    """The URL of ``to_path`` from the root of ``base_url``'s host (``/lists/static/...``):
    for the 404 page, which a server sends for a missing URL at any depth, where a
    relative link would resolve against the wrong folder."""
    root = urllib.parse.urlsplit(base_url).path.rstrip("/") + "/"
    target, hash_mark, fragment = to_path.partition("#")
    return _quote(root + target) + (hash_mark + _quote(fragment) if hash_mark else "")


_SAFE_RE = re.compile(r"[A-Za-z0-9/._~-]*\Z")


def _quote(text: str) -> str:
    """``urllib.parse.quote``, skipped for the plain names almost every path is made of."""
    return text if _SAFE_RE.match(text) else quote(text)
