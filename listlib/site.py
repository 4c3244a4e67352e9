"""The pages of a site, described as jobs: a pure function of the configuration, the
index rows of the filed messages and the cached threads.

Each job carries exactly the inputs its files depend on (see ``plan``), so its key
changes when, and only when, one of its files may change:

========  ==========================================  ======================================
kind      files                                       inputs (besides templates and site)
========  ==========================================  ======================================
thread    thread page + attachments of its messages   the tree, content hashes, prev/next
tmbox     the thread's ``.mbox.gz``                   its messages
messages  a month's ``.eml`` copies and the redirect  the month's messages and their threads
          pages of its non-root messages
month     month page (threads) and by-date page       the month's threads and messages,
                                                      prev/next month
mmbox     the month's ``.mbox.gz``                    its messages
list      list index                                  months, counts, latest threads
feed      Atom feed                                   the latest messages
sitemap   the list's sitemap                          thread pages and their last dates
site      site index, 404 page, robots.txt, sitemap   every list's summary
mid       Message-ID lookup pages for one hash prefix those messages' pages
static    the theme's static files                    their digests
========  ==========================================  ======================================
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from .config import ListConfig
from .index import Row
from .plan import Job, job_key
from .threadcache import ThreadEntry
from .urls import (
    feed_path,
    list_index_path,
    message_id_hash,
    message_path,
    month_mbox_path,
    raw_path,
    thread_mbox_path,
)
from .values import Month

__all__ = ["FEED_SIZE", "LATEST_THREADS", "TEMPLATES", "ListData", "SiteInputs", "site_jobs"]

FEED_SIZE = 30
"""Messages in a list's Atom feed."""
LATEST_THREADS = 10
"""Threads listed as latest on a list's index page."""
PARTICIPANTS_SHOWN = 4
SITEMAP_SIZE = 40_000
"""Thread pages per sitemap file (the protocol allows 50,000)."""

TEMPLATES: dict[str, tuple[str, ...]] = {
    "thread": ("thread.html",),
    "tmbox": (),
    "messages": ("redirect.html",),
    "month": ("month.html", "date.html"),
    "mmbox": (),
    "list": ("list.html",),
    "feed": ("feed.atom",),
    "sitemap": ("sitemap.xml",),
    "site": ("index.html", "404.html", "robots.txt", "sitemap-index.xml"),
    "mid": ("redirect.html", "mid.html"),
    "static": (),
}
"""The templates each kind of job renders with (their fingerprints are part of its key)."""

NOT_ARCHIVED = "(not archived)"


@dataclass(frozen=True)
class SiteInputs:
    """Site-wide settings every page depends on."""

    title: str
    base_url: str
    obfuscate_addresses: bool
    load_remote_images: bool

    def as_tuple(self) -> tuple[object, ...]:
        return (self.title, self.base_url, self.obfuscate_addresses, self.load_remote_images)


@dataclass(frozen=True)
class ListData:
    """One list as the renderer sees it."""

    config: ListConfig
    rows: Mapping[str, Row]
    """Filed messages by call number."""
    threads: Sequence[ThreadEntry]
    description_markdown: str | None = None


def _month(row: Row) -> Month:
    return Month(row.year, row.month)


def _subject(row: Row) -> str:
    if row.no_archive:
        return NOT_ARCHIVED
    return " ".join(row.subject.split()) or "(no subject)"


def _author(row: Row) -> str:
    if row.no_archive:
        return ""
    return row.from_name.strip() or row.from_addr.split("@")[0] or "(unknown)"


def _list_info(config: ListConfig) -> tuple[str, str, str]:
    return (config.slug, config.name, config.addresses[0] if config.addresses else "")


class _Jobs:
    def __init__(self, site: SiteInputs, fingerprints: Mapping[str, str]) -> None:
        self.site = site.as_tuple()
        self.fingerprints = {
            kind: ",".join(fingerprints[name] for name in names) for kind, names in TEMPLATES.items()
        }

    def make(self, kind: str, job_id: str, args: dict[str, object], weight: int = 1) -> Job:
        args["site"] = self.site
        return Job(f"{kind}:{job_id}", kind, job_key(kind, self.fingerprints[kind], args), args, weight)


def site_jobs(
    site: SiteInputs,
    lists: Sequence[ListData],
    fingerprints: Mapping[str, str],
    static_files: Sequence[tuple[str, str, str]],
) -> Iterator[Job]:
    """Every job of the site. ``fingerprints``: template name -> fingerprint, for every
    template in ``TEMPLATES``; ``static_files``: (path under static/, source, digest)."""
    jobs = _Jobs(site, fingerprints)
    summaries = []
    mid_entries: dict[str, list[tuple[str, ...]]] = defaultdict(list)
    for data in lists:
        yield from _list_jobs(jobs, data, summaries, mid_entries)
    yield jobs.make("site", "site", {"lists": tuple(summaries)})
    buckets: dict[str, list[tuple[str, tuple[tuple[str, ...], ...]]]] = defaultdict(list)
    for digest in sorted(mid_entries):
        buckets[digest[:2]].append((digest, tuple(sorted(mid_entries[digest]))))
    for prefix, entries in sorted(buckets.items()):
        yield jobs.make("mid", prefix, {"entries": tuple(entries)}, weight=max(1, len(entries) // 20))
    yield jobs.make("static", "static", {"files": tuple(static_files)}, weight=len(static_files))


def _list_jobs(
    jobs: _Jobs,
    data: ListData,
    summaries: list[tuple[object, ...]],
    mid_entries: dict[str, list[tuple[str, ...]]],
) -> Iterator[Job]:
    config = data.config
    slug = config.slug
    rows = data.rows
    info = _list_info(config)
    threads = sorted(data.threads, key=lambda t: (t.first, t.id))
    thread_of: dict[str, str] = {}
    page_of: dict[str, str] = {}
    for entry in threads:
        page = message_path(slug, _month(rows[entry.id]), entry.id)
        page_of[entry.id] = page
        for call, _parent, _depth in entry.messages:
            thread_of[call] = entry.id

    def link(call: str) -> str:
        return f"{page_of[thread_of[call]]}#{call}"

    # Thread pages, thread downloads.
    for position, entry in enumerate(threads):
        root = rows[entry.id]
        neighbours = []
        for other in (position - 1, position + 1):
            if 0 <= other < len(threads):
                neighbour = threads[other]
                neighbours.append((page_of[neighbour.id], _subject(rows[neighbour.id])))
            else:
                neighbours.append(None)
        messages = []
        for call, parent, depth in entry.messages:
            row = rows[call]
            month = _month(row)
            messages.append(
                (
                    call, parent, depth, month.year, month.month, row.path, row.raw_hash, row.no_archive,
                    row.message_id, row.refs,
                )
            )
        yield jobs.make(
            "thread",
            f"{slug}:{entry.id}",
            {
                "list": info,
                "id": entry.id,
                "page": page_of[entry.id],
                "subject": _subject(root),
                "missing_root": entry.missing_root,
                "messages": tuple(messages),
                "prev": neighbours[0],
                "next": neighbours[1],
            },
            weight=2 + entry.count,
        )
        by_date = sorted(entry.messages, key=lambda m: (rows[m[0]].date, m[0]))
        yield jobs.make(
            "tmbox",
            f"{slug}:{entry.id}",
            {
                "path": thread_mbox_path(slug, _month(root), entry.id),
                "messages": tuple(_mbox_item(rows[c]) for c, _p, _d in by_date if not rows[c].no_archive),
            },
            weight=1 + entry.count // 4,
        )

    # Months.
    by_month: dict[Month, list[Row]] = defaultdict(list)
    for row in rows.values():
        by_month[_month(row)].append(row)
    months = sorted(by_month)
    threads_by_id = {entry.id: entry for entry in threads}
    thread_months: dict[Month, dict[str, int]] = defaultdict(dict)
    for entry in threads:
        for year, month, count in entry.months:
            thread_months[Month(year, month)][entry.id] = count
    month_table = []
    for position, month in enumerate(months):
        month_rows = sorted(by_month[month], key=lambda r: (r.date, r.call))
        yield jobs.make(
            "messages",
            f"{slug}:{month}",
            {
                "messages": tuple(
                    (
                        r.call,
                        r.path,
                        r.raw_hash,
                        None if r.no_archive else raw_path(slug, month, r.call),
                        message_path(slug, month, r.call),
                        None if thread_of[r.call] == r.call else link(r.call),
                        _subject(r),
                    )
                    for r in month_rows
                ),
            },
            weight=1 + len(month_rows) // 20,
        )
        active = sorted(
            thread_months[month].items(), key=lambda item: (threads_by_id[item[0]].first, item[0])
        )
        thread_lines = []
        for thread_id, here in active:
            entry = threads_by_id[thread_id]
            thread_lines.append(
                (
                    page_of[thread_id],
                    _subject(rows[thread_id]),
                    _participants(entry, rows),
                    here,
                    entry.count,
                    entry.first,
                    entry.last,
                    (entry.months[0][0], entry.months[0][1]) < month,
                    (entry.months[-1][0], entry.months[-1][1]) > month,
                )
            )
        prev_month = months[position - 1] if position > 0 else None
        next_month = months[position + 1] if position + 1 < len(months) else None
        yield jobs.make(
            "month",
            f"{slug}:{month}",
            {
                "list": info,
                "month": tuple(month),
                "threads": tuple(thread_lines),
                "messages": tuple((link(r.call), _subject(r), _author(r), r.date) for r in month_rows),
                "prev": tuple(prev_month) if prev_month else None,
                "next": tuple(next_month) if next_month else None,
                "mbox": month_mbox_path(slug, month),
            },
            weight=1 + len(month_rows) // 10,
        )
        yield jobs.make(
            "mmbox",
            f"{slug}:{month}",
            {
                "path": month_mbox_path(slug, month),
                "messages": tuple(_mbox_item(r) for r in month_rows if not r.no_archive),
            },
            weight=1 + len(month_rows) // 4,
        )
        month_table.append((month.year, month.month, len(month_rows), len(thread_months[month])))
        for r in month_rows:
            if r.message_id:
                mid_entries[message_id_hash(r.message_id)].append(
                    (r.message_id, slug, config.name, link(r.call), _subject(r), str(r.date))
                )

    latest = sorted(threads, key=lambda t: (t.last, t.id), reverse=True)[:LATEST_THREADS]
    last_date = max((row.date for row in rows.values()), default=0)
    yield jobs.make(
        "list",
        slug,
        {
            "list": info,
            "description": config.description,
            "markdown": data.description_markdown,
            "months": tuple(month_table),
            "latest": tuple((page_of[t.id], _subject(rows[t.id]), t.last, t.count) for t in latest),
            "messages": len(rows),
            "threads": len(threads),
        },
    )
    recent = sorted(rows.values(), key=lambda r: (r.date, r.call), reverse=True)[:FEED_SIZE]
    yield jobs.make(
        "feed",
        slug,
        {
            "list": info,
            "path": feed_path(slug),
            "entries": tuple(
                (
                    r.call,
                    r.path,
                    r.raw_hash,
                    link(r.call),
                    message_path(slug, _month(r), r.call),
                    _subject(r),
                    _author(r),
                    r.date,
                    r.no_archive,
                    thread_of[r.call] == r.call,
                )
                for r in recent
            ),
        },
        weight=3,
    )
    pages = tuple((page_of[t.id], t.last) for t in threads)
    sitemap_files = []
    for number, start in enumerate(range(0, max(len(pages), 1), SITEMAP_SIZE), start=1):
        name = f"{slug}/sitemap.xml" if number == 1 else f"{slug}/sitemap-{number}.xml"
        sitemap_files.append(name)
        yield jobs.make("sitemap", f"{slug}:{number}", {"path": name, "pages": pages[start : start + SITEMAP_SIZE]})
    summaries.append(
        (slug, config.name, config.description, len(rows), len(threads), last_date, list_index_path(slug),
         tuple(sitemap_files), feed_path(slug))
    )


def _mbox_item(row: Row) -> tuple[str, str, str, int]:
    return (row.path, row.raw_hash, row.from_addr, row.date)


def _participants(entry: ThreadEntry, rows: Mapping[str, Row]) -> tuple[tuple[str, ...], int]:
    names: list[str] = []
    seen: set[str] = set()
    for call, _parent, _depth in entry.messages:
        name = _author(rows[call])
        key = name.casefold()
        if name and key not in seen:
            seen.add(key)
            names.append(name)
    return tuple(names[:PARTICIPANTS_SHOWN]), max(0, len(names) - PARTICIPANTS_SHOWN)
