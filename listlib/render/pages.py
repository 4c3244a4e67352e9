"""Runs jobs (see ``site``): renders their pages with the theme's templates, makes their
downloads and copies, and hands every file to the writer.

Each ``render_<kind>`` is a pure function of the job's inputs and the stored messages
(read by call number, whose bytes never change), which is what makes incremental
builds give the same bytes as a build from scratch. Templates get plain dictionaries,
a ``url()`` function that turns an output path into a link relative to the page being
rendered, and the message display model from ``display``.
"""

from __future__ import annotations

import calendar
import dataclasses
import html
import logging
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from ..controls import SUBJECT_CHARS
from ..display import Attachment, DisplayOptions, MessageDisplay, display_message
from ..display.sanitize import sanitize_html
from ..fsutil import read_file
from ..search.document import search_text
from ..search.spool import SpoolWriter
from ..theme import Theme
from ..threader import normalize_subject
from ..urls import attachment_dir, month_date_path, month_index_path, relative_url
from ..values import Month
from .downloads import encode_mboxrd, gzip_bytes
from .writer import Writer

__all__ = ["Renderer"]

logger = logging.getLogger(__name__)

TOC_THRESHOLD = 6
"""Threads with at least this many messages get a table of contents."""
MAX_INDENT = 8
"""Deeper replies are drawn at this depth, so deep threads stay readable on a phone."""
_SUBJECT_KEY_CHARS = SUBJECT_CHARS - 50
"""Replies whose subjects agree this far are not marked as changing the subject (shown
subjects are cut at ``SUBJECT_CHARS``, and "Re: " moves the cut)."""


def _utc(seconds: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))


def _day(seconds: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(seconds))


def _iso(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _local(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M %z") if moment else ""


def _local_iso(moment: datetime | None) -> str:
    return moment.isoformat() if moment else ""


def _size(count: int) -> str:
    value = float(count)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{count} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} bytes"


def _month_name(month: tuple[int, int]) -> str:
    return f"{calendar.month_name[month[1]]} {month[0]}"


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


class Renderer:
    """Renders jobs of one site into one output folder."""

    def __init__(self, theme: Theme, content_dir: Path, output_dir: Path, spool: Path | None = None) -> None:
        self.theme = theme
        self.spool = SpoolWriter(spool) if spool is not None else None
        self.content_dir = content_dir
        self.writer = Writer(output_dir)
        theme.env.filters.update(utc=_utc, iso=_iso, day=_day, local=_local, local_iso=_local_iso, size=_size)
        theme.env.filters["month_name"] = _month_name
        self._kinds: dict[str, Callable[[dict[str, Any], Mapping[str, str]], dict[str, str]]] = {
            "thread": self.render_thread,
            "tmbox": self.render_mbox,
            "mmbox": self.render_mbox,
            "messages": self.render_messages,
            "month": self.render_month,
            "date": self.render_date,
            "list": self.render_list,
            "feed": self.render_feed,
            "sitemap": self.render_sitemap,
            "site": self.render_site,
            "mid": self.render_mid,
            "static": self.render_static,
        }

    def close(self) -> None:
        if self.spool is not None:
            self.spool.close()

    def run(self, kind: str, args: dict[str, Any], old: Mapping[str, str]) -> dict[str, str]:
        """Make the files of one job; ``old`` are its files from the last build (path ->
        digest). Returns the files it made now."""
        return self._kinds[kind](args, old)

    # -- helpers --------------------------------------------------------------

    def _site(self, args: Mapping[str, Any]) -> dict[str, Any]:
        title, base_url, _obfuscate, _images = args["site"]
        return {"title": title, "base_url": base_url}

    def _page(self, template: str, path: str, args: Mapping[str, Any], **context: Any) -> bytes:
        url = partial(relative_url, path)
        html = self.theme.render(
            template, site=self._site(args), page=path, url=url, absolute=self._absolute(args), **context
        )
        return html.encode("utf-8")

    @staticmethod
    def _absolute(args: Mapping[str, Any]) -> Callable[[str], str]:
        base = args["site"][1]
        return lambda path: base + urllib.parse.quote(path, safe="/#")

    def _put(self, files: dict[str, str], old: Mapping[str, str], path: str, data: bytes) -> None:
        if path in files:
            raise ValueError(f"one job wrote {path!r} twice")
        files[path] = self.writer.put(path, data, old.get(path))

    def _raw(self, store_path: str) -> bytes:
        return read_file(f"{self.content_dir}/{store_path}")

    @staticmethod
    def _list(info: tuple[str, str, str]) -> dict[str, str]:
        slug, name, address = info
        return {"slug": slug, "name": name, "address": address}

    # -- kinds ----------------------------------------------------------------

    def render_thread(self, args: dict[str, Any], old: Mapping[str, str]) -> dict[str, str]:
        files: dict[str, str] = {}
        page = args["page"]
        slug, _name, address = args["list"]
        _title, _base, obfuscate, images = args["site"]
        shown: list[_Message] = []
        subjects: dict[str, str] = {}
        for call, parent, depth, year, month, store_path, raw_hash, no_archive, message_id, refs in args["messages"]:
            folder = attachment_dir(slug, Month(year, month), call)
            options = DisplayOptions(
                obfuscate_addresses=obfuscate,
                load_remote_images=images,
                attachment_base=relative_url(page, folder + "/x")[:-1],
            )
            display = _display(self._raw(store_path), options, call, no_archive)
            if self.spool is not None and not no_archive:
                self.spool.add(call, raw_hash, search_text(display, obfuscate))
            # Compared on their first characters: displayed subjects are cut (SUBJECT_CHARS), and
            # "Re: " + a long subject is cut four characters earlier than the subject it answers.
            subject_key = normalize_subject(display.subject)[0][:_SUBJECT_KEY_CHARS]
            subjects[call] = subject_key
            changed = parent is None or subjects.get(parent, subject_key) != subject_key
            attachments = []
            for attachment in display.attachments:
                target = f"{folder}/{attachment.filename}"
                self._put(files, old, target, attachment.data)
                attachments.append((attachment, relative_url(page, target)))
            permalink_path = f"{slug}/{year:04d}/{month:02d}/{call}.html"
            shown.append(
                _Message(
                    call=call,
                    parent=parent,
                    depth=depth,
                    indent=min(depth, MAX_INDENT),
                    display=display,
                    subject_changed=changed and not display.no_archive,
                    permalink=relative_url(page, permalink_path),
                    raw=relative_url(page, f"{slug}/{year:04d}/{month:02d}/{call}.eml"),
                    reply=_reply_link(address, display, message_id, refs) if address and not no_archive else "",
                    attachments=tuple(attachments),
                    message_id=message_id,
                )
            )
        prev, nxt = args["prev"], args["next"]
        root_month = page.split("/")[1:3]
        month = Month(int(root_month[0]), int(root_month[1]))
        html = self._page(
            "thread.html",
            page,
            args,
            list=self._list(args["list"]),
            subject=args["subject"],
            thread_id=args["id"],
            missing_root=args["missing_root"],
            messages=shown,
            toc=len(shown) >= TOC_THRESHOLD,
            prev={"path": prev[0], "subject": prev[1]} if prev else None,
            next={"path": nxt[0], "subject": nxt[1]} if nxt else None,
            month={"path": month_index_path(slug, month), "name": _month_name(month)},
            mbox=page[: -len(".html")] + ".mbox.gz",
        )
        self._put(files, old, page, html)
        if self.spool is not None:
            self.spool.flush()  # pool workers end without flushing
        return files

    def render_mbox(self, args: dict[str, Any], old: Mapping[str, str]) -> dict[str, str]:
        files: dict[str, str] = {}
        messages = ((sender, date, self._raw(path)) for path, _hash, sender, date in args["messages"])
        self._put(files, old, args["path"], gzip_bytes(encode_mboxrd(messages)))
        return files

    def render_messages(self, args: dict[str, Any], old: Mapping[str, str]) -> dict[str, str]:
        files: dict[str, str] = {}
        for _call, store_path, raw_hash, raw_target, page, target, subject in args["messages"]:
            if raw_target is not None:
                files[raw_target] = self.writer.copy(
                    raw_target, f"{self.content_dir}/{store_path}", raw_hash, old.get(raw_target)
                )
            if target is not None:
                self._put(files, old, page, self._page("redirect.html", page, args, target=target, title=subject))
        return files

    def render_month(self, args: dict[str, Any], old: Mapping[str, str]) -> dict[str, str]:
        files: dict[str, str] = {}
        threads = [
            {
                "path": path,
                "subject": subject,
                "participants": participants[0],
                "more": participants[1],
                "here": here,
                "total": total,
                "first": first,
                "last": last,
                "earlier": earlier,
                "later": later,
            }
            for path, subject, participants, here, total, first, last, earlier, later in args["threads"]
        ]
        context = self._month_context(args)
        path = context["month"]["path"]
        self._put(files, old, path, self._page("month.html", path, args, threads=threads, **context))
        return files

    def render_date(self, args: dict[str, Any], old: Mapping[str, str]) -> dict[str, str]:
        files: dict[str, str] = {}
        messages = [
            {"path": path, "subject": subject, "author": author, "date": date}
            for path, subject, author, date in args["messages"]
        ]
        context = self._month_context(args)
        path = context["month"]["date_path"]
        self._put(files, old, path, self._page("date.html", path, args, messages=messages, **context))
        return files

    def _month_context(self, args: dict[str, Any]) -> dict[str, Any]:
        """What both month pages have: the list, the month, its neighbours, its download."""
        slug = args["list"][0]

        def describe(value: tuple[int, int]) -> dict[str, Any]:
            month = Month(*value)
            return {
                "name": _month_name(value),
                "path": month_index_path(slug, month),
                "date_path": month_date_path(slug, month),
            }

        return {
            "list": self._list(args["list"]),
            "month": describe(args["month"]),
            "prev": describe(args["prev"]) if args["prev"] else None,
            "next": describe(args["next"]) if args["next"] else None,
            "mbox": args["mbox"],
        }

    def render_list(self, args: dict[str, Any], old: Mapping[str, str]) -> dict[str, str]:
        files: dict[str, str] = {}
        slug = args["list"][0]
        path = f"{slug}/index.html"
        years: dict[int, dict[int, dict[str, Any]]] = {}
        for year, month, messages, threads in args["months"]:
            years.setdefault(year, {})[month] = {
                "messages": messages,
                "threads": threads,
                "path": month_index_path(slug, Month(year, month)),
            }
        description_html = _markdown(args["markdown"]) if args["markdown"] else ""
        html = self._page(
            "list.html",
            path,
            args,
            list=self._list(args["list"]),
            description=args["description"],
            description_html=description_html,
            years=[(year, years[year]) for year in sorted(years, reverse=True)],
            latest=[{"path": p, "subject": s, "last": last, "count": count} for p, s, last, count in args["latest"]],
            messages=args["messages"],
            threads=args["threads"],
            feed=f"{slug}/feed.atom",
        )
        self._put(files, old, path, html)
        return files

    def render_feed(self, args: dict[str, Any], old: Mapping[str, str]) -> dict[str, str]:
        files: dict[str, str] = {}
        path = args["path"]
        _title, _base, obfuscate, _images = args["site"]
        entries = []
        for call, store_path, _hash, link, permalink, subject, author, date, no_archive, new_thread in args["entries"]:
            summary = ""
            if not no_archive:
                display = _display(self._raw(store_path), DisplayOptions(obfuscate_addresses=obfuscate), call, False)
                summary = _excerpt(display.text)
            entries.append(
                {
                    "call": call,
                    "link": link,
                    "permalink": permalink,
                    "subject": subject,
                    "author": author,
                    "date": date,
                    "summary": summary,
                    "new_thread": new_thread,
                }
            )
        updated = max((entry["date"] for entry in entries), default=0)
        body = self._page(
            "feed.atom", path, args, list=self._list(args["list"]), entries=entries, updated=updated, feed=path
        )
        self._put(files, old, path, body)
        return files

    def render_sitemap(self, args: dict[str, Any], old: Mapping[str, str]) -> dict[str, str]:
        files: dict[str, str] = {}
        pages = [{"path": path, "last": last} for path, last in args["pages"]]
        self._put(files, old, args["path"], self._page("sitemap.xml", args["path"], args, pages=pages))
        return files

    def render_site(self, args: dict[str, Any], old: Mapping[str, str]) -> dict[str, str]:
        files: dict[str, str] = {}
        lists = [
            {
                "slug": slug,
                "name": name,
                "description": description,
                "messages": messages,
                "threads": threads,
                "last": last,
                "path": path,
                "sitemaps": sitemaps,
                "feed": feed,
            }
            for slug, name, description, messages, threads, last, path, sitemaps, feed in args["lists"]
        ]
        for template in ("index.html", "404.html", "robots.txt"):
            self._put(files, old, template, self._page(template, template, args, lists=lists))
        self._put(files, old, "sitemap.xml", self._page("sitemap-index.xml", "sitemap.xml", args, lists=lists))
        self._put(files, old, "search/index.html", self._page("search.html", "search/index.html", args, lists=lists))
        return files

    def render_mid(self, args: dict[str, Any], old: Mapping[str, str]) -> dict[str, str]:
        files: dict[str, str] = {}
        for digest, entries in args["entries"]:
            path = f"mid/{digest[:2]}/{digest[2:]}.html"
            found = [
                {"message_id": mid, "slug": slug, "list": name, "path": link, "subject": subject, "date": int(date)}
                for mid, slug, name, link, subject, date in entries
            ]
            if len(found) == 1:
                html = self._page("redirect.html", path, args, target=found[0]["path"], title=found[0]["subject"])
            else:
                html = self._page("mid.html", path, args, messages=found, message_id=found[0]["message_id"])
            self._put(files, old, path, html)
        return files

    def render_static(self, args: dict[str, Any], old: Mapping[str, str]) -> dict[str, str]:
        files: dict[str, str] = {}
        for rel, source, digest in args["files"]:
            target = f"static/{rel}"
            files[target] = self.writer.copy(target, Path(source), digest, old.get(target))
        return files


def _display(raw: bytes, options: DisplayOptions, call: str, no_archive: bool) -> MessageDisplay:
    """The display of a message. Should displaying ever fail: its raw text, escaped, with
    a note, so that one message can never break a build (invariant 5). A message the
    index knows as not to be archived is never shown, whatever happens."""
    try:
        display = display_message(raw, options)
    except Exception as exc:  # a bug in display must not lose the page
        logger.warning("%s: cannot display (%s: %s); showing the raw text", call, type(exc).__name__, exc)
        text = "" if no_archive else raw.decode("utf-8", "replace")
        display = MessageDisplay(
            subject="",
            author_name="",
            author_address="",
            author_shown="",
            date=None,
            message_id=None,
            body_html=(
                '<div class="msg-body"><div class="note">This message could not be displayed; '
                f'its raw text follows.</div><pre class="text">{html.escape(text)}</pre></div>'
            ),
            attachments=(),
            no_archive=False,
            text="",
        )
    if no_archive and not display.no_archive:
        display = dataclasses.replace(
            display,
            subject="",
            author_name="",
            author_address="",
            author_shown="",
            body_html="",
            attachments=(),
            no_archive=True,
            text="",
        )
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
