"""Runs jobs (see ``plan``): renders their pages with the theme's templates, makes their
downloads and copies, and hands every file to the writer.

Each ``render_<kind>`` is a pure function of the job's inputs and the stored messages
(read by call number, whose bytes never change), which is what makes incremental
builds give the same bytes as a build from scratch. Templates get plain dictionaries,
a ``url()`` function that turns an output path into a link relative to the page being
rendered, and the message display model from ``display``.

Length: one ``render_<kind>`` per page kind, on purpose, next to the context helpers
they share (dates, links, the message model).
"""

from __future__ import annotations

import dataclasses
import html
import logging
import posixpath
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import markupsafe

from ..controls import SUBJECT_CHARS
from ..display import Attachment, DisplayOptions, MessageDisplay, display_message, obfuscate_addresses
from ..display.sanitize import sanitize_html
from ..fsutil import read_file
from ..patchsubject import parse_subject
from ..plan.kinds import (
    DATED_MESSAGE_FIELDS,
    KINDS,
    MONTH_THREAD_FIELDS,
    SITEMAP_ENTRY_FIELDS,
    DatePage,
    Download,
    FeedPage,
    LegacyMaps,
    LegacyPages,
    ListInfo,
    ListPage,
    MessageCopies,
    MidPages,
    MonthFrame,
    MonthPage,
    Removed,
    SeriesFeedPage,
    SeriesSection,
    SitemapPage,
    SitePages,
    SiteSettings,
    StaticFiles,
    ThreadPage,
)
from ..series import Series
from ..theme import Theme
from ..threader import strip_subject
from ..trailers import Reply, Review, collect_reviews, reply_text, reply_trailers
from ..translation import Texts, english
from ..urls import (
    LEGACY_APACHE_PATH,
    LEGACY_NGINX_PATH,
    MID_PAGE_NAME,
    MID_RAW_NAME,
    MID_THREAD_MBOX_NAME,
    NOT_FOUND_PATH,
    REDIRECTS_PATH,
    ROBOTS_PATH,
    SEARCH_PAGE_PATH,
    SITE_INDEX_PATH,
    SITEMAP_INDEX_PATH,
    SitePaths,
    attachment_dir,
    attachment_path,
    feed_path,
    list_index_path,
    message_path,
    mid_page_path,
    month_date_path,
    month_index_path,
    raw_path,
    relative_url,
    rooted_url,
    static_path,
    thread_mbox_path,
    thread_page_path,
)
from ..values import Month
from .downloads import encode_mboxrd, gzip_bytes
from .writer import Writer

__all__ = ["OnDisplay", "Renderer"]

logger = logging.getLogger(__name__)

TOC_THRESHOLD = 6
"""Threads with at least this many messages get a table of contents."""
MAX_INDENT = 5
"""Deeper replies are drawn at this depth, so deep threads stay readable on a phone; each
says "reply to NAME" instead (``_Message.parent_name``)."""
_SUBJECT_KEY_CHARS = SUBJECT_CHARS - 50
"""Replies whose subjects agree this far are not marked as changing the subject (shown
subjects are cut at ``SUBJECT_CHARS``, and "Re: " moves the cut)."""


def _seconds(moment: int | datetime) -> int:
    """Unix seconds of a stored date or of a message's own (a date without a zone is UTC)."""
    if isinstance(moment, datetime):
        return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp())
    return moment


def _utc(moment: int | datetime) -> str:
    """A page's times are in one zone, UTC (the theme's ``times.js`` may show the reader's)."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(_seconds(moment)))


def _day(seconds: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(seconds))


def _iso(moment: int | datetime) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(_seconds(moment)))


def _local(moment: datetime | None) -> str:
    """The sender's own clock: the date as written, with its offset."""
    return moment.strftime("%Y-%m-%d %H:%M %z") if moment else ""


def _local_iso(moment: datetime | None) -> str:
    return moment.isoformat() if moment else ""


def _offset(moment: datetime | None) -> str:
    """The sender's UTC offset (``+0900``), or ``""`` when it is UTC or unknown."""
    offset = moment.utcoffset() if moment else None
    return moment.strftime("%z") if moment and offset else ""


def _size(texts: Texts, count: int) -> str:
    """Bytes in words (``1.5 KB``), in the site's language."""
    value = float(count)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            if unit == "bytes":
                return texts.text("size.bytes", n=count)
            return texts.text("size.units", n=texts.number(value, 1), unit=texts.text(f"size.{unit}"))
        value /= 1024
    return texts.text("size.bytes", n=count)


def _month_name(texts: Texts, month: tuple[int, int]) -> str:
    """A month and its year in words (``November 2025``), in the site's language."""
    return texts.text("months.with_year", month=texts.text(f"months.{month[1]}"), year=month[0])


def _counted(texts: Texts, count: int, noun: str) -> str:
    """``{{ n|counted("message") }}``: the plural entry ``count.<noun>`` for ``n``."""
    return texts.text(f"count.{noun}", n=count)


@dataclass(frozen=True)
class _Message:
    """A message of a thread page, as its template sees it."""

    call: str
    parent: str | None
    depth: int
    indent: int
    display: MessageDisplay
    subject_changed: bool
    permalink: str
    raw: str
    reply: str
    attachments: tuple[tuple[Attachment, str], ...]
    message_id: str | None
    removed: dict[str, str] | None = None
    """For a removed message (a placeholder): ``at`` (its date) and ``reason`` ("" when not shown)."""
    edited: dict[str, str] | None = None
    """For a redacted message: ``at`` (when it was edited) and ``reason`` ("" when not shown)."""
    href: str = ""
    """Its anchor as the page being rendered links to it ("#call", or another page's)."""
    parent_href: str = ""
    """Its parent's anchor, likewise ("" for a root)."""
    parent_name: str = ""
    """Who wrote its parent, when it is drawn deeper than ``MAX_INDENT`` allows (else "")."""
    review: dict[str, Any] | None = None
    """For a patch of a series: ``state`` and ``trailers`` (``name``, ``value``) collected
    from the replies (``trailers.collect_reviews``)."""

    def __post_init__(self) -> None:
        # Frozen: the anchors on its own page are filled in as the dataclass docs show.
        if not self.href:
            object.__setattr__(self, "href", f"#{self.call}")
        if self.parent and not self.parent_href:
            object.__setattr__(self, "parent_href", f"#{self.parent}")


OnDisplay = Callable[[str, str, MessageDisplay], None]
"""Told (call number, raw hash, display) of every archived message a thread page shows:
the build wires it to the search index's spool (``search.spool.DisplayedText``)."""

Files = dict[str, str]
"""The files a job made: path under output/ -> digest."""

_LINK_SLOT = "LISTLIB-LEGACY-LINK-SLOT"
_CANONICAL_SLOT = "LISTLIB-LEGACY-CANONICAL-SLOT"
"""Where ``render_legacy`` fills in each page's links (autoescaping leaves them as they are)."""


class Renderer:
    """Renders jobs of one site into one output folder."""

    def __init__(self, theme: Theme, content_dir: Path, output_dir: Path, on_display: OnDisplay | None = None) -> None:
        self.theme = theme
        self.on_display = on_display
        self.content_dir = content_dir
        self.writer = Writer(output_dir)
        self.texts = theme.texts
        theme.env.filters.update(utc=_utc, iso=_iso, day=_day, local=_local, local_iso=_local_iso, offset=_offset)
        # The filters that say words read the table (theme.FILTER_TEXTS names their keys).
        theme.env.filters["size"] = partial(_size, self.texts)
        theme.env.filters["month_name"] = partial(_month_name, self.texts)
        theme.env.filters["counted"] = partial(_counted, self.texts)
        self._kinds: dict[str, Callable[[Any, Mapping[str, str]], Files]] = {
            name: getattr(self, kind.renderer) for name, kind in KINDS.items()
        }

    def run(self, kind: str, args: object, old: Mapping[str, str]) -> Files:
        """Make the files of one job (``args``: the record of its kind); ``old`` are its
        files from the last build (path -> digest). Returns the files it made now."""
        return self._kinds[kind](args, old)

    # -- helpers --------------------------------------------------------------

    def _page(self, template: str, path: str, site: SiteSettings, **context: Any) -> bytes:
        # The 404 page is sent for missing URLs at any depth: its links start at the root.
        url = partial(rooted_url, site.base_url) if path == NOT_FOUND_PATH else partial(relative_url, path)
        html = self.theme.render(
            template,
            site={"title": site.title, "base_url": site.base_url, "language": site.language},
            page=path,
            url=url,
            absolute=partial(_absolute, site.base_url),
            paths=SitePaths,
            **context,
        )
        return html.encode("utf-8")

    def _put(self, files: Files, old: Mapping[str, str], path: str, data: bytes) -> None:
        if path in files:
            raise ValueError(f"one job wrote {path!r} twice")
        files[path] = self.writer.put(path, data, old.get(path))

    def _link(self, files: Files, old: Mapping[str, str], path: str, to: str) -> None:
        """Make ``path`` a relative symbolic link to the output file ``to``."""
        if path in files:
            raise ValueError(f"one job wrote {path!r} twice")
        files[path] = self.writer.link(path, posixpath.relpath(to, posixpath.dirname(path)), old.get(path))

    def _raw(self, stored: str) -> bytes:
        return read_file(f"{self.content_dir}/{stored}")

    @staticmethod
    def _list(info: ListInfo) -> dict[str, str]:
        return {"slug": info.slug, "name": info.name, "address": info.address}

    # -- kinds ----------------------------------------------------------------

    def render_thread(self, args: ThreadPage, old: Mapping[str, str]) -> Files:
        files: Files = {}
        page = args.page
        slug, address = args.list.slug, args.list.address
        site = args.site
        shown: list[_Message] = []
        subjects: dict[str, str] = {}
        numbers: dict[str, int] = {}
        """call -> the page that shows it."""
        keys: dict[str, frozenset[str]] = {}
        """call -> its ``quote_keys`` (its replies' quotes of it fold sooner)."""
        names: dict[str, str] = {}
        """call -> who wrote it, as its heading says."""
        raws: dict[str, bytes] = {}
        """call -> its bytes, for the replies of a thread with patch series (their trailers)."""
        answered = {message[1] for message in args.messages if message[1]}
        """The calls of the messages the page shows replies to (their ``quote_keys`` are needed)."""
        for (
            call,
            parent,
            depth,
            month,
            stored,
            raw_hash,
            no_archive,
            message_id,
            refs,
            removed,
            edited,
            number,
        ) in args.messages:
            numbers[call] = number
            if removed is not None:
                permalink = relative_url(page, message_path(slug, month, call))
                shown.append(_placeholder(call, parent, depth, removed, permalink, names.get(parent or "", "")))
                names[call] = self.texts.text("thread.toc_removed")
                subjects[call] = subjects.get(parent or "", "") if parent else ""
                continue
            folder = attachment_dir(slug, month, call)
            options = DisplayOptions(
                obfuscate_addresses=site.obfuscate_addresses,
                load_remote_images=site.load_remote_images,
                attachment_base=relative_url(page, folder + "/x")[:-1],
                texts=self.texts,
                parent=keys.get(parent or "", frozenset()),
                keys=call in answered,
            )
            raw = self._raw(stored)
            if args.series and not no_archive:
                raws[call] = raw
            display = _display(raw, options, call, no_archive)
            if display.quote_keys:
                keys[call] = display.quote_keys
            names[call] = (
                self.texts.text("thread.toc_not_archived")
                if display.no_archive
                else display.author_shown or self.texts.text("message.unknown_sender")
            )
            if self.on_display is not None and not no_archive:
                self.on_display(call, raw_hash, display)
            # Compared on their first characters: displayed subjects are cut (SUBJECT_CHARS), and
            # "Re: " + a long subject is cut four characters earlier than the subject it answers.
            subject_key = strip_subject(display.subject)[0][:_SUBJECT_KEY_CHARS]
            subjects[call] = subject_key
            changed = parent is None or subjects.get(parent, subject_key) != subject_key
            attachments = []
            for attachment in display.attachments:
                target = attachment_path(slug, month, call, attachment.filename)
                self._put(files, old, target, attachment.data)
                attachments.append((attachment, relative_url(page, target)))
            shown.append(
                _Message(
                    call=call,
                    parent=parent,
                    depth=depth,
                    indent=min(depth, MAX_INDENT),
                    parent_name=names.get(parent or "", "") if depth > MAX_INDENT else "",
                    display=display,
                    subject_changed=changed and not display.no_archive,
                    permalink=relative_url(page, message_path(slug, month, call)),
                    raw=relative_url(page, raw_path(slug, month, call)),
                    reply=(_reply_link(address, display, message_id, refs) if address and not no_archive else ""),
                    attachments=tuple(attachments),
                    message_id=message_id,
                    edited={"at": edited[0], "reason": edited[1]} if edited else None,
                )
            )
        prev, nxt = args.prev, args.next
        root_month = args.month
        count = max(numbers.values(), default=1)
        paths = [thread_page_path(slug, root_month, args.id, number) for number in range(1, count + 1)]
        series = _series_view(args.series, shown, raws, site.obfuscate_addresses) if args.series else []
        if series:
            reviews = {patch["call"]: patch["review"] for section in series for patch in section["patches"]}
            shown = [dataclasses.replace(m, review=reviews[m.call]) if m.call in reviews else m for m in shown]
        for number, path in enumerate(paths, start=1):
            here = shown if count == 1 else _seen_from(shown, numbers, paths, number)
            hrefs = {m.call: m.href for m in here}
            html = self._page(
                "thread.html",
                path,
                site,
                list=self._list(args.list),
                subject=args.subject,
                thread_id=args.id,
                missing_root=args.missing_root,
                messages=here,
                page_messages=[m for m in here if numbers[m.call] == number],
                pages=None if count == 1 else _pager(paths, number),
                toc=len(shown) >= TOC_THRESHOLD or count > 1,
                prev={"path": prev.path, "subject": prev.subject} if prev else None,
                next={"path": nxt.path, "subject": nxt.subject} if nxt else None,
                month={"path": month_index_path(slug, root_month), "name": _month_name(self.texts, root_month)},
                mbox=thread_mbox_path(slug, root_month, args.id),
                series=[_series_links(section, hrefs) for section in series] if number == 1 else [],
            )
            self._put(files, old, path, html)
        return files

    def render_mbox(self, args: Download, old: Mapping[str, str]) -> Files:
        files: Files = {}
        messages = ((sender, date, self._raw(stored)) for stored, _hash, sender, date in args.messages)
        self._put(files, old, args.path, gzip_bytes(encode_mboxrd(messages)))
        return files

    def render_messages(self, args: MessageCopies, old: Mapping[str, str]) -> Files:
        files: Files = {}
        for _call, stored, raw_hash, raw, page, target, subject in args.messages:
            if raw is not None:
                files[raw] = self.writer.copy(raw, f"{self.content_dir}/{stored}", raw_hash, old.get(raw))
            if target is not None:
                self._put(files, old, page, self._page("redirect.html", page, args.site, target=target, title=subject))
        for _call, page, thread, at, reason in args.tombstones:
            html = self._page(
                "tombstone.html", page, args.site, removed=[{"list": "", "at": at, "reason": reason}], thread=thread
            )
            self._put(files, old, page, html)
        return files

    def render_month(self, args: MonthPage, old: Mapping[str, str]) -> Files:
        files: Files = {}
        threads = [dict(zip(MONTH_THREAD_FIELDS, line, strict=True)) for line in args.threads]
        context = self._month_context(args.frame)
        path = context["month"]["path"]
        self._put(files, old, path, self._page("month.html", path, args.site, threads=threads, **context))
        return files

    def render_date(self, args: DatePage, old: Mapping[str, str]) -> Files:
        files: Files = {}
        messages = [dict(zip(DATED_MESSAGE_FIELDS, line, strict=True)) for line in args.messages]
        context = self._month_context(args.frame)
        path = context["month"]["date_path"]
        self._put(files, old, path, self._page("date.html", path, args.site, messages=messages, **context))
        return files

    def _month_context(self, frame: MonthFrame) -> dict[str, Any]:
        """What both month pages have: the list, the month, its neighbours, its download."""
        slug = frame.list.slug

        def describe(value: Month) -> dict[str, Any]:
            return {
                "name": _month_name(self.texts, value),
                "path": month_index_path(slug, value),
                "date_path": month_date_path(slug, value),
            }

        return {
            "list": self._list(frame.list),
            "month": describe(frame.month),
            "prev": describe(frame.prev) if frame.prev else None,
            "next": describe(frame.next) if frame.next else None,
            "mbox": frame.mbox,
        }

    def render_list(self, args: ListPage, old: Mapping[str, str]) -> Files:
        files: Files = {}
        slug = args.list.slug
        path = list_index_path(slug)
        years: dict[int, dict[int, dict[str, Any]]] = {}
        for count in args.months:
            years.setdefault(count.month.year, {})[count.month.month] = {
                "messages": count.messages,
                "threads": count.threads,
                "path": month_index_path(slug, count.month),
            }
        description_html = _markdown(args.markdown) if args.markdown else ""
        html = self._page(
            "list.html",
            path,
            args.site,
            list=self._list(args.list),
            description=args.description,
            description_html=description_html,
            years=[(year, years[year]) for year in sorted(years, reverse=True)],
            latest=[line._asdict() for line in args.latest],
            messages=args.messages,
            threads=args.threads,
            feed=feed_path(slug),
        )
        self._put(files, old, path, html)
        return files

    def render_feed(self, args: FeedPage, old: Mapping[str, str]) -> Files:
        files: Files = {}
        path = args.path
        options = DisplayOptions(obfuscate_addresses=args.site.obfuscate_addresses)
        entries = []
        for entry in args.entries:
            summary = ""
            if not entry.no_archive:
                summary = _excerpt(_display(self._raw(entry.stored), options, entry.call, False).text)
            entries.append(
                {
                    "call": entry.call,
                    "link": entry.link,
                    "permalink": entry.permalink,
                    "subject": entry.subject,
                    "author": entry.author,
                    "date": entry.date,
                    "summary": summary,
                    "new_thread": entry.new_thread,
                }
            )
        updated = max((entry["date"] for entry in entries), default=0)
        body = self._page(
            "feed.atom", path, args.site, list=self._list(args.list), entries=entries, updated=updated, feed=path
        )
        self._put(files, old, path, body)
        return files

    def render_series_feed(self, args: SeriesFeedPage, old: Mapping[str, str]) -> Files:
        files: Files = {}
        entries = [entry._asdict() for entry in args.entries]
        updated = max((entry["date"] for entry in entries), default=0)
        body = self._page(
            "series.atom",
            args.path,
            args.site,
            list=self._list(args.list),
            entries=entries,
            updated=updated,
            feed=args.path,
        )
        self._put(files, old, args.path, body)
        return files

    def render_sitemap(self, args: SitemapPage, old: Mapping[str, str]) -> Files:
        files: Files = {}
        pages = [dict(zip(SITEMAP_ENTRY_FIELDS, entry, strict=True)) for entry in args.pages]
        self._put(files, old, args.path, self._page("sitemap.xml", args.path, args.site, pages=pages))
        return files

    def render_site(self, args: SitePages, old: Mapping[str, str]) -> Files:
        files: Files = {}
        lists = [summary._asdict() for summary in args.lists]
        pages = (
            ("index.html", SITE_INDEX_PATH),
            ("404.html", NOT_FOUND_PATH),
            ("robots.txt", ROBOTS_PATH),
            ("sitemap-index.xml", SITEMAP_INDEX_PATH),
            ("search.html", SEARCH_PAGE_PATH),
        )
        for template, path in pages:
            self._put(files, old, path, self._page(template, path, args.site, lists=lists))
        return files

    def render_mid(self, args: MidPages, old: Mapping[str, str]) -> Files:
        files: Files = {}
        for group in args.entries:
            path = mid_page_path(group.digest)
            found = [
                {"message_id": mid, "slug": slug, "list": name, "path": link, "subject": subject, "date": int(date)}
                for mid, slug, name, link, subject, date in group.entries
            ]
            removed = [{"list": name, "at": at, "reason": reason} for name, at, reason in group.removed]
            if not found:
                html = self._page("tombstone.html", path, args.site, removed=removed, thread=None)
            elif len(found) == 1 and not removed:
                html = self._page("redirect.html", path, args.site, target=found[0]["path"], title=found[0]["subject"])
            else:
                html = self._page(
                    "mid.html", path, args.site, messages=found, message_id=found[0]["message_id"], removed=removed
                )
            self._put(files, old, path, html)
        for folder, link, raw, tmbox, subject in args.paths:
            page = f"{folder}/{MID_PAGE_NAME}"
            self._put(files, old, page, self._page("redirect.html", page, args.site, target=link, title=subject))
            self._link(files, old, f"{folder}/{MID_RAW_NAME}", raw)
            self._link(files, old, f"{folder}/{MID_THREAD_MBOX_NAME}", tmbox)
        return files

    def render_legacy(self, args: LegacyPages, old: Mapping[str, str]) -> Files:
        """The redirect pages of old URLs: the template is rendered once and its two links
        filled in for each page (tens of thousands of them: a template render each was
        half their cost). So ``legacy.html`` gets ``site``, ``link`` and ``canonical`` only."""
        files: Files = {}
        site = {"title": args.site.title, "base_url": args.site.base_url, "language": args.site.language}
        frame = self.theme.render("legacy.html", site=site, link=_LINK_SLOT, canonical=_CANONICAL_SLOT)
        for page, _url, target in args.redirects:
            link = markupsafe.escape(relative_url(page, target))
            canonical = markupsafe.escape(_absolute(args.site.base_url, target))
            html = frame.replace(_LINK_SLOT, link).replace(_CANONICAL_SLOT, canonical)
            self._put(files, old, page, html.encode("utf-8"))
        return files

    def render_legacy_maps(self, args: LegacyMaps, old: Mapping[str, str]) -> Files:
        """The same redirects as the legacy pages, for hosts that redirect with a real 301:
        URLs are paths from the host's root (under ``base_url``'s own path)."""
        files: Files = {}
        base = urllib.parse.urlsplit(args.site.base_url).path or "/"
        pairs = [(_server_path(base, url), _server_path(base, target)) for url, target in args.redirects]
        note = "Generated by listlib build from the legacy redirect maps (listlib legacy import); do not edit."
        netlify = [f"# {note}", "# Netlify / Cloudflare Pages: old URL, new URL, status.", ""]
        netlify += [f"{url} {target} 301" for url, target in pairs]
        nginx = [
            f"# {note}",
            "# Inside a map block: map $uri $listlib_legacy { include .../nginx-map.conf; }",
            "# then, in the server block: if ($listlib_legacy) { return 301 $listlib_legacy; }",
            "",
        ]
        nginx += [f'"{url}" "{target}";' for url, target in pairs]
        apache = [
            f"# {note}",
            '# RewriteMap listlib_legacy "txt:/path/to/apache-rewritemap.txt"',
            '# RewriteCond ${listlib_legacy:%{REQUEST_URI}} !=""',
            "# RewriteRule ^ ${listlib_legacy:%{REQUEST_URI}} [R=301,L]",
            "",
        ]
        apache += [f"{url} {target}" for url, target in pairs]
        for path, lines in ((REDIRECTS_PATH, netlify), (LEGACY_NGINX_PATH, nginx), (LEGACY_APACHE_PATH, apache)):
            self._put(files, old, path, ("\n".join(lines) + "\n").encode("utf-8"))
        return files

    def render_static(self, args: StaticFiles, old: Mapping[str, str]) -> Files:
        files: Files = {}
        for static in args.files:
            target = static_path(static.rel)
            source = self.theme.static_layer(static.layer) / static.rel
            files[target] = self.writer.copy(target, source, static.digest, old.get(target))
        return files


def _server_path(base: str, path: str) -> str:
    """An output path as a URL path from the host's root (``base``: ``base_url``'s path),
    percent-encoded but for the characters legacy URLs are made of."""
    return urllib.parse.quote(base + path, safe="/@+=~-._")


def _absolute(base_url: str, path: str) -> str:
    """The absolute URL of an output path (feeds, sitemaps and canonical links)."""
    return base_url + urllib.parse.quote(path, safe="/#")


_BLANK = MessageDisplay(
    subject="",
    author_name="",
    author_address="",
    author_shown="",
    date=None,
    message_id=None,
    body_html="",
    attachments=(),
    no_archive=False,
    text="",
)
"""A display with nothing from the message (placeholders and displays that failed start from it)."""


def _seen_from(shown: list[_Message], numbers: Mapping[str, int], paths: list[str], number: int) -> list[_Message]:
    """A paged thread's messages as page ``number`` links to them: an anchor on this
    page, or the page that shows the message and its anchor there."""

    def href(call: str) -> str:
        there = numbers.get(call, 1)
        return f"#{call}" if there == number else relative_url(paths[number - 1], f"{paths[there - 1]}#{call}")

    return [dataclasses.replace(m, href=href(m.call), parent_href=href(m.parent) if m.parent else "") for m in shown]


def _series_view(
    sections: tuple[SeriesSection, ...], shown: list[_Message], raws: Mapping[str, bytes], obfuscate: bool
) -> list[dict[str, Any]]:
    """The patch series of a thread page: each patch with its title, review state and
    the trailers its replies gave (``trailers.collect_reviews``; read from the replies'
    bytes, where addresses are whole: the page obfuscates them after)."""
    by_call = {m.call: m for m in shown}
    taken = {call for section in sections for call in ((section.cover,) if section.cover else ()) + _calls(section)}
    replies = [
        Reply(m.call, m.parent, m.display.author_name, m.display.author_address, reply_text(raws[m.call]))
        for m in shown
        if m.call not in taken and m.call in raws
    ]
    given = reply_trailers(replies)
    view = []
    for section in sections:
        series = Series(
            section.head, "", section.title, "", 0, 1, False, False, (), section.total, section.cover, section.patches
        )
        reviews = collect_reviews(series, replies, given)
        patches = []
        for number, call in section.patches:
            message = by_call.get(call)
            review = reviews.get(call) or Review((), ())
            trailers = [
                {"name": t.name, "value": obfuscate_addresses(t.value) if obfuscate else t.value}
                for t in review.trailers
            ]
            patches.append(
                {
                    "call": call,
                    "number": number,
                    "title": parse_subject(message.display.subject).title if message else "",
                    "review": {"state": review.state, "replies": len(review.replies), "trailers": trailers},
                }
            )
        view.append({**section._asdict(), "patches": patches})
    return view


def _calls(section: SeriesSection) -> tuple[str, ...]:
    return tuple(call for _n, call in section.patches)


def _series_links(section: dict[str, Any], hrefs: Mapping[str, str]) -> dict[str, Any]:
    """A series section as one page of its thread links it: its patches' anchors on
    that page (or another page of the thread); its versions' links stay site paths
    (the template's ``url`` makes them relative)."""
    return {
        **section,
        "cover_href": hrefs.get(section["cover"] or "", ""),
        "patches": [{**patch, "href": hrefs.get(patch["call"], "")} for patch in section["patches"]],
        "versions": [
            {"label": label, "href": link, "current": current} for label, link, current in section["versions"]
        ],
    }


def _pager(paths: list[str], number: int) -> dict[str, Any]:
    """What a paged thread's page says of its pages (``pages`` in ``thread.html``):
    its ``number`` of ``count``, and the links to the others (``url``ed by the template)."""
    return {
        "number": number,
        "count": len(paths),
        "prev": paths[number - 2] if number > 1 else None,
        "next": paths[number] if number < len(paths) else None,
        "all": [{"number": n, "path": path} for n, path in enumerate(paths, start=1)],
    }


def _placeholder(
    call: str, parent: str | None, depth: int, removed: Removed, permalink: str, parent_name: str
) -> _Message:
    """A removed message's place in its thread: no author, no text, no links but its own
    (and its parent's, as every reply drawn deeper than ``MAX_INDENT``)."""
    at, reason = removed
    display = dataclasses.replace(_BLANK, no_archive=True)
    return _Message(
        call=call,
        parent=parent,
        depth=depth,
        indent=min(depth, MAX_INDENT),
        parent_name=parent_name if depth > MAX_INDENT else "",
        display=display,
        subject_changed=False,
        permalink=permalink,
        raw="",
        reply="",
        attachments=(),
        message_id=None,
        removed={"at": at, "reason": reason},
    )


def _display(raw: bytes, options: DisplayOptions, call: str, no_archive: bool) -> MessageDisplay:
    """The display of a message. Should displaying ever fail: its raw text, escaped, with
    a note, so that one message can never break a build (invariant 5). A message the
    index knows as not to be archived is never shown, whatever happens."""
    try:
        display = display_message(raw, options)
    except Exception as exc:  # a bug in display must not lose the page
        logger.warning("%s: cannot display (%s: %s); showing the raw text", call, type(exc).__name__, exc)
        text = "" if no_archive else raw.decode("utf-8", "replace")
        note = html.escape((options.texts or english()).text("display.undisplayable"))
        display = dataclasses.replace(
            _BLANK,
            body_html=(
                f'<div class="msg-body"><div class="note">{note}</div><pre class="text">{html.escape(text)}</pre></div>'
            ),
        )
    if no_archive and not display.no_archive:
        display = dataclasses.replace(_BLANK, date=display.date, message_id=display.message_id, no_archive=True)
    return display


REPLY_REFERENCES = 10
"""At most this many References in a reply link (the oldest one and the latest ones)."""


def _reply_link(address: str, display: MessageDisplay, message_id: str | None, refs: str) -> str:
    """A mailto: link that answers in the thread (RFC 6068 header fields)."""
    subject = display.subject
    if not subject.lower().startswith("re:"):
        subject = f"Re: {subject}"
    fields = {"subject": subject}
    if message_id:
        fields["In-Reply-To"] = f"<{message_id}>"
        chain = [*refs.split(), message_id]
        if len(chain) > REPLY_REFERENCES:
            chain = chain[:1] + chain[-(REPLY_REFERENCES - 1) :]
        fields["References"] = " ".join(f"<{ref}>" for ref in chain)
    return f"mailto:{urllib.parse.quote(address, safe='@')}?" + urllib.parse.urlencode(
        fields, quote_via=urllib.parse.quote
    )


def _excerpt(text: str, limit: int = 400) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat.rfind(" ", 0, limit)
    return flat[: cut if cut > limit // 2 else limit] + " …"


def _markdown(text: str) -> str:
    """A Markdown page from content/, sanitized like HTML mail."""
    import markdown  # 28 ms to import; most builds render no Markdown page

    return sanitize_html(markdown.markdown(text, extensions=["extra", "sane_lists"], output_format="html"))
