"""The kinds of page a site is made of: for each, the typed record of its jobs'
arguments, the templates it renders with, and the names of the builder that describes
its jobs (``plan.builders.SiteJobs``) and of the renderer that makes its files
(``render.pages.Renderer``). Pure data; never imports what renders.

Adding a kind of page means one ``Kind`` here, its record, its builder and renderer
methods, its template, and a line in the incremental rules (``plan.incremental``)
saying which changes reach it. ``tests/plan/test_plan_kinds.py`` checks that every entry's
builder and renderer exist. (The renderer is named, not referenced: only the processes
that render load it.)

A job's key is a digest of its record (``plan.jobs.job_key``), so a record holds
exactly what the job's files depend on, as plain values: strings, numbers, None and
tuples of those or of other records here. Every record starts with the site-wide
settings every page depends on.

========  ==========================================  ======================================
kind      files                                       inputs (besides templates and site)
========  ==========================================  ======================================
thread    thread page(s) + attachments of its         the tree, content hashes, sizes (page
          messages                                    breaks), prev/next, its patch series
                                                      and the links to their other versions
tmbox     the thread's ``.mbox.gz``                   its messages
messages  the ``.eml`` copies and redirect pages of  those messages and their thread
          one thread's non-root messages in a month
month     month page (the threads active in it)       those threads and their roots' classes,
                                                      prev/next month
date      the month's by-date page                    the month's messages and their classes,
                                                      prev/next month
mmbox     the month's ``.mbox.gz``                    its messages
list      list index                                  months, counts, latest threads
feed      Atom feed                                   the latest messages
series    Atom feed of new patch series               the latest series (their heads)
sitemap   a month's sitemap: the thread pages rooted  those threads, their last dates and
          in it (every page of a long thread)         their pages
site      site index, 404 page, robots.txt, sitemap   every list's summary and sitemaps
          index, search page
mid       Message-ID lookup pages for one hash prefix those messages' pages (and threads,
          and with ``message_id_paths`` their        for the links)
          public-inbox-style folders
legacy    redirect pages of an old archive's URLs:    the map's entries, where their messages
          those of the messages filed in one month,   are (filed or removed), the list's
          or its index pages (``pages``)              months
legacymap ``_redirects``, nginx and Apache maps of    every legacy redirect
          every legacy URL
static    the theme's static files                    their digests
========  ==========================================  ======================================

Length: one record per kind of page, and the registry; apart they would drift.
"""

from __future__ import annotations

from typing import NamedTuple

from ..values import Month

__all__ = [
    "DATED_MESSAGE_FIELDS",
    "KINDS",
    "MBOX_ITEM_FIELDS",
    "MESSAGE_COPY_FIELDS",
    "MID_ENTRY_FIELDS",
    "MID_PATH_FIELDS",
    "MONTH_THREAD_FIELDS",
    "SITEMAP_ENTRY_FIELDS",
    "THREAD_MESSAGE_FIELDS",
    "TOMBSTONE_FIELDS",
    "TEMPLATES",
    "DatedMessage",
    "DatePage",
    "Download",
    "FeedEntry",
    "FeedPage",
    "Kind",
    "LegacyMaps",
    "LegacyPages",
    "LegacyRedirect",
    "LatestThread",
    "Link",
    "Removed",
    "ListInfo",
    "ListPage",
    "ListSummary",
    "MboxItem",
    "MessageCopies",
    "MessageCopy",
    "MidEntry",
    "MidGroup",
    "MidPages",
    "MidPath",
    "MonthCount",
    "MonthFrame",
    "MonthPage",
    "MonthThread",
    "SeriesEntry",
    "SeriesFeedPage",
    "SeriesSection",
    "SeriesVersion",
    "SitePages",
    "SiteSettings",
    "SitemapEntry",
    "SitemapPage",
    "StaticFile",
    "StaticFiles",
    "ThreadMessage",
    "ThreadPage",
    "Tombstone",
]


# -- parts shared by several records ------------------------------------------------------


class SiteSettings(NamedTuple):
    """Site-wide settings every page depends on."""

    title: str
    base_url: str
    obfuscate_addresses: bool
    load_remote_images: bool
    show_removal_reasons: bool = False
    language: str = "en"
    """The ``lang`` of every page (a BCP 47 tag, ``[site] language``)."""


class ListInfo(NamedTuple):
    """A list as its pages name it."""

    slug: str
    name: str
    address: str
    """The posting address ("" when none is configured)."""


class Link(NamedTuple):
    """A link to a page, with the subject it is shown by."""

    path: str
    subject: str


MboxItem = tuple[str, str, str, int]
"""A message of a download: (its file in the store, raw hash, sender address, date).
Per-message items are plain tuples, not NamedTuples: 400,000 of them cross to the render
workers in a full build at 50,000 messages, and a tuple subclass pickles four times
slower (a second of CPU there). Their fields are named once here, in ``*_FIELDS``."""
MBOX_ITEM_FIELDS = ("stored", "raw_hash", "sender", "date")


SitemapEntry = tuple[str, int]
"""A sitemap line: (a page, when it last changed)."""
SITEMAP_ENTRY_FIELDS = ("path", "last")


# -- one record per kind ------------------------------------------------------------------


Removed = tuple[str, str]
"""What a tombstone says of a removed message, or a page of a redacted one: (when it was
removed or edited, the public reason or "" when the site does not show reasons)."""

ThreadMessage = tuple[str, str | None, int, Month, str, str, bool, str | None, str, Removed | None, Removed | None, int]
"""A message of a thread page, in thread order (a plain tuple, see ``MboxItem``)."""
THREAD_MESSAGE_FIELDS = (
    "call",
    "parent",
    "depth",
    "month",
    "stored",
    "raw_hash",
    "no_archive",
    "message_id",
    "refs",
    "removed",
    "edited",
    "page",
)
"""``month``: the month it was filed in (where its permalink and attachments live);
``removed``: for a removed message (a placeholder), its tombstone; ``edited``: for a
redacted one, when and why; ``page``: the page of the thread that shows it, from 1
(``plan.paging``)."""


SeriesVersion = tuple[str, str, bool]
"""A version of a series, as its thread page links it: (its label, e.g. ``v2``, the link
to its head, whether it is the series the section is about)."""


class SeriesSection(NamedTuple):
    """A patch series on the thread page of its thread (``series.Series``)."""

    head: str
    label: str
    title: str
    total: int
    cover: str | None
    patches: tuple[tuple[int, str], ...]
    """(M, call number) of its patches, in order."""
    versions: tuple[SeriesVersion, ...]
    """Every version on its chain, oldest first (one: no other version is known)."""


class ThreadPage(NamedTuple):
    """``thread``: a thread's page and its messages' attachments."""

    site: SiteSettings
    list: ListInfo
    id: str
    month: Month
    """The month of its root, where its page lives."""
    page: str
    subject: str
    missing_root: bool
    messages: tuple[ThreadMessage, ...]
    prev: Link | None
    next: Link | None
    series: tuple[SeriesSection, ...] = ()


class Download(NamedTuple):
    """``tmbox``, ``mmbox``: a thread's or a month's messages as a gzipped mbox."""

    site: SiteSettings
    path: str
    messages: tuple[MboxItem, ...]


MessageCopy = tuple[str, str, str, str | None, str, str | None, str]
"""A message's files in its month folder: its raw copy and, when it is not the root of
its thread, its redirect page (a plain tuple, see ``MboxItem``)."""
MESSAGE_COPY_FIELDS = ("call", "stored", "raw_hash", "raw", "page", "target", "subject")
"""``raw``: where its ``.eml`` copy goes, None when it is not archived; ``target``: its
place in its thread page, for the redirect, None for a root."""


Tombstone = tuple[str, str, str | None, str, str]
"""The page at a removed message's permanent URL: (its call number, the page, its
placeholder in its thread or None, when it was removed, the public reason or "")."""
TOMBSTONE_FIELDS = ("call", "page", "thread", "at", "reason")


class MessageCopies(NamedTuple):
    """``messages``: the messages of one thread in a month, copied and redirected, and
    the tombstones of its removed messages (but those whose place is a thread's root: the
    thread page is there); a removed message in no thread has a job of its own."""

    site: SiteSettings
    messages: tuple[MessageCopy, ...]
    tombstones: tuple[Tombstone, ...] = ()


MonthThread = tuple[str, str, tuple[str, ...], int, int, int, int, int, bool, bool, str | None, tuple[str, int] | None]
"""A thread line of a month page (a plain tuple, see ``MboxItem``)."""
MONTH_THREAD_FIELDS = (
    "path", "subject", "participants", "more", "here", "total", "first", "last", "earlier", "later", "cls", "series"
)  # fmt: skip
"""``more``: participants not named; ``here``: its messages in this month; ``earlier``,
``later``: it has messages in earlier, later months; ``cls``: its root message's class
(``classify``), None when it has none; ``series``: for a thread rooted in a patch series,
its version label and size (``plan.series.month_series_label``), else None."""


class MonthFrame(NamedTuple):
    """What both pages of a month show around their lists: the list, the month, its
    neighbours and its download."""

    list: ListInfo
    month: Month
    prev: Month | None
    next: Month | None
    mbox: str


class MonthPage(NamedTuple):
    """``month``: the threads active in a month."""

    site: SiteSettings
    frame: MonthFrame
    threads: tuple[MonthThread, ...]


DatedMessage = tuple[str, str, str, int, str | None]
"""A line of a month's by-date page (a plain tuple, see ``MboxItem``)."""
DATED_MESSAGE_FIELDS = ("path", "subject", "author", "date", "cls")
"""``cls``: the message's class (``classify``), None when it has none."""


class DatePage(NamedTuple):
    """``date``: a month's messages by date."""

    site: SiteSettings
    frame: MonthFrame
    messages: tuple[DatedMessage, ...]


class MonthCount(NamedTuple):
    """A month of a list's index page."""

    month: Month
    messages: int
    threads: int


class LatestThread(NamedTuple):
    """A latest thread of a list's index page."""

    path: str
    subject: str
    last: int
    count: int


class ListPage(NamedTuple):
    """``list``: a list's index page."""

    site: SiteSettings
    list: ListInfo
    description: str
    markdown: str | None
    """Its ``about.md`` from content/, when there is one."""
    months: tuple[MonthCount, ...]
    latest: tuple[LatestThread, ...]
    messages: int
    threads: int


class FeedEntry(NamedTuple):
    """A message of a list's feed."""

    call: str
    stored: str
    raw_hash: str
    link: str
    permalink: str
    subject: str
    author: str
    date: int
    no_archive: bool
    new_thread: bool


class FeedPage(NamedTuple):
    """``feed``: a list's Atom feed."""

    site: SiteSettings
    list: ListInfo
    path: str
    entries: tuple[FeedEntry, ...]


class SeriesEntry(NamedTuple):
    """A patch series of a list's series feed."""

    call: str
    """Its head (cover letter, else first patch)."""
    link: str
    permalink: str
    """The head's permanent URL (the entry's id)."""
    title: str
    label: str
    total: int
    author: str
    date: int


class SeriesFeedPage(NamedTuple):
    """``series``: a list's Atom feed of new patch series."""

    site: SiteSettings
    list: ListInfo
    path: str
    entries: tuple[SeriesEntry, ...]


class SitemapPage(NamedTuple):
    """``sitemap``: the thread pages rooted in a month (or a part of them)."""

    site: SiteSettings
    path: str
    pages: tuple[SitemapEntry, ...]


class ListSummary(NamedTuple):
    """A list as the site-wide pages show it."""

    slug: str
    name: str
    description: str
    messages: int
    threads: int
    last: int
    path: str
    sitemaps: tuple[SitemapEntry, ...]
    feed: str


class SitePages(NamedTuple):
    """``site``: the site index, 404 page, robots.txt, sitemap index and search page."""

    site: SiteSettings
    lists: tuple[ListSummary, ...]


MidEntry = tuple[str, str, str, str, str, str]
"""A message found under a Message-ID (a plain tuple, see ``MboxItem``); its date is a
decimal string (entries sort by their text)."""
MID_ENTRY_FIELDS = ("message_id", "slug", "list", "link", "subject", "date")


class MidGroup(NamedTuple):
    """The messages of one Message-ID (by its digest), and those of it removed: (the
    list's name, when, the public reason or "")."""

    digest: str
    entries: tuple[MidEntry, ...]
    removed: tuple[tuple[str, str, str], ...] = ()


MidPath = tuple[str, str, str, str, str]
"""A Message-ID's public-inbox-style folder under a list (a plain tuple, see ``MboxItem``)."""
MID_PATH_FIELDS = ("folder", "link", "raw", "tmbox", "subject")
"""``folder``: ``urls.message_id_folder``; ``link``: the message's place in its thread
page (its ``index.html`` redirects there); ``raw``: its ``.eml`` copy (the ``raw`` link);
``tmbox``: its thread's download (the ``t.mbox.gz`` link); ``subject``: as its page shows it."""


class MidPages(NamedTuple):
    """``mid``: the Message-ID lookup pages of one bucket, and the public-inbox-style
    folders of its Message-IDs (``[site] message_id_paths``)."""

    site: SiteSettings
    entries: tuple[MidGroup, ...]
    paths: tuple[MidPath, ...] = ()


LegacyRedirect = tuple[str, str, str]
"""An old URL's redirect: (its page in output/, the old URL relative to the site's root,
the target in output/)."""


class LegacyPages(NamedTuple):
    """``legacy``: the redirect pages of some of a list's old URLs (``legacy.mapfile``)."""

    site: SiteSettings
    redirects: tuple[LegacyRedirect, ...]


class LegacyMaps(NamedTuple):
    """``legacymap``: every old URL and its target, as files web servers and static
    hosts redirect by."""

    site: SiteSettings
    redirects: tuple[tuple[str, str], ...]
    """(old URL relative to the site's root, target in output/), sorted."""


class StaticFile(NamedTuple):
    rel: str
    """Its path under the theme's static/ folder."""
    layer: str
    """The name of the theme layer it is read from (not its folder: moving an install
    must not change a job's key)."""
    digest: str


class StaticFiles(NamedTuple):
    """``static``: the theme's static files."""

    site: SiteSettings
    files: tuple[StaticFile, ...]


# A record's repr is a plain tuple's: keys hash it (``plan.jobs.job_key``), and the
# field-named repr of a NamedTuple, a Python function called once per nested record,
# costs half a second at 50,000 messages. The fields are in the class, not the key.
for _record in (
    SiteSettings,
    ListInfo,
    Link,
    ThreadPage,
    Download,
    MessageCopies,
    MonthFrame,
    MonthPage,
    DatePage,
    MonthCount,
    LatestThread,
    ListPage,
    FeedEntry,
    FeedPage,
    SeriesSection,
    SeriesEntry,
    SeriesFeedPage,
    SitemapPage,
    ListSummary,
    SitePages,
    MidGroup,
    MidPages,
    LegacyPages,
    LegacyMaps,
    StaticFile,
    StaticFiles,
):
    _record.__repr__ = tuple.__repr__  # type: ignore[assignment,method-assign]


# -- the registry -------------------------------------------------------------------------


class Kind(NamedTuple):
    """A kind of page."""

    name: str
    record: type
    """The type of its jobs' arguments."""
    templates: tuple[str, ...]
    """The templates it renders with (their fingerprints are part of its jobs' keys)."""
    builder: str
    """The ``SiteJobs`` method that describes its jobs."""
    renderer: str
    """The ``Renderer`` method that makes its files."""
    texts: tuple[str, ...] = ()
    """The prefixes of the translation table's keys its renderer's own code uses
    (besides its templates'): part of its jobs' keys, so that editing one of those
    strings rebuilds its pages."""


_SITE_TEMPLATES = ("index.html", "404.html", "robots.txt", "sitemap-index.xml", "search.html")

KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind("thread", ThreadPage, ("thread.html",), "thread", "render_thread", ("display.", "months.")),
        Kind("tmbox", Download, (), "tmbox", "render_mbox"),
        Kind("messages", MessageCopies, ("redirect.html", "tombstone.html"), "messages", "render_messages"),
        Kind("month", MonthPage, ("month.html",), "month", "render_month", ("months.",)),
        Kind("date", DatePage, ("date.html",), "date", "render_date", ("months.",)),
        Kind("mmbox", Download, (), "mmbox", "render_mbox"),
        Kind("list", ListPage, ("list.html",), "list", "render_list"),
        Kind("feed", FeedPage, ("feed.atom",), "feed", "render_feed"),
        Kind("series", SeriesFeedPage, ("series.atom",), "series_feed", "render_series_feed"),
        Kind("sitemap", SitemapPage, ("sitemap.xml",), "sitemaps", "render_sitemap"),
        Kind("site", SitePages, _SITE_TEMPLATES, "site_index", "render_site"),
        Kind("mid", MidPages, ("redirect.html", "mid.html", "tombstone.html"), "mid", "render_mid"),
        Kind("legacy", LegacyPages, ("legacy.html",), "legacy_pages", "render_legacy"),
        Kind("legacymap", LegacyMaps, (), "legacy_maps", "render_legacy_maps"),
        Kind("static", StaticFiles, (), "static", "render_static"),
    )
}
"""Every kind of page, by name (the first part of its jobs' ids)."""

TEMPLATES: dict[str, tuple[str, ...]] = {name: kind.templates for name, kind in KINDS.items()}
"""The templates each kind renders with."""
