"""Mail that matched no list (``_no_list``): what would route it, and re-filing it.

``_no_list`` is never published unless ``[site] publish_unrouted`` says so: mail that
matched no configured list was not sent to a list the site archives, and may be
private. ``unrouted_report`` groups it by each List-Id and each recipient address the
router reads (``routing``), with the ``listlib.toml`` lines that would route it.
``refile_unrouted`` routes it again with the current configuration and moves what now
matches into its list (``Store.refile``: new copy durable first, old one removed after,
so a kill at any instant loses nothing and files nothing twice).

Never prints; the messages' bytes are only read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from .config import Config
from .fsutil import read_file
from .message import MessageFacts, parse_message
from .routing import Router
from .store.batch import Prepared
from .store.core import Store
from .store.index import Row
from .urls import ROOT_NAMES
from .values import NO_LIST, RESERVED_SLUGS, is_slug

__all__ = ["RefileReport", "Route", "UnroutedReport", "refile_unrouted", "unrouted_report"]

Kind = Literal["list_id", "address"]
_BATCH = 500
"""Messages moved per store batch."""


@dataclass
class Route:
    """Messages of ``_no_list`` that one List-Id or one recipient address would route."""

    kind: Kind
    value: str
    messages: int = 0
    first: int = 0
    """Unix seconds of the oldest of them."""
    last: int = 0
    example_subject: str = ""
    slug: str = ""
    """The slug the config snippet suggests (the list it routes to, when it does)."""
    slug_exists: bool = False
    """``slug`` is a configured list: the key goes into its existing table."""
    routed_to: str | None = None
    """The list the current configuration routes this value to (``--refile`` moves the mail)."""

    @property
    def snippet(self) -> str:
        """The listlib.toml lines that route these messages to ``slug``."""
        key = "list_ids" if self.kind == "list_id" else "addresses"
        return f"[lists.{self.slug}]\n{key} = [{json.dumps(self.value)}]"

    def add(self, row: Row) -> None:
        if not self.messages or row.date < self.first:
            self.first = row.date
            self.example_subject = row.subject
        self.last = max(self.last, row.date) if self.messages else row.date
        self.messages += 1

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "value": self.value,
            "messages": self.messages,
            "first": self.first,
            "last": self.last,
            "example_subject": self.example_subject,
            "slug": self.slug,
            "slug_exists": self.slug_exists,
            "routed_to": self.routed_to,
            "snippet": self.snippet,
        }


@dataclass
class UnroutedReport:
    """What is in ``_no_list`` and what would route it."""

    messages: int = 0
    list_ids: list[Route] = field(default_factory=list)
    addresses: list[Route] = field(default_factory=list)
    unaddressed: int = 0
    """Messages with neither a List-Id nor a recipient address (only ``import --list`` files them)."""
    routable: dict[str, int] = field(default_factory=dict)
    """Messages the current configuration already routes, by list: ``--refile`` moves them."""

    def to_dict(self) -> dict[str, object]:
        return {
            "messages": self.messages,
            "list_ids": [route.to_dict() for route in self.list_ids],
            "addresses": [route.to_dict() for route in self.addresses],
            "unaddressed": self.unaddressed,
            "routable": dict(sorted(self.routable.items())),
        }


@dataclass
class RefileReport:
    """What ``refile_unrouted`` did."""

    messages: int = 0
    """Messages in ``_no_list`` before."""
    moved: dict[str, int] = field(default_factory=dict)
    """Moved messages by list (including those the list already had: their copy in
    ``_no_list`` is removed, nothing is filed twice)."""
    duplicates: int = 0
    """Of the moved ones, those the list already had."""
    dry_run: bool = False

    @property
    def remaining(self) -> int:
        return self.messages - sum(self.moved.values())

    def to_dict(self) -> dict[str, object]:
        return {
            "messages": self.messages,
            "moved": dict(sorted(self.moved.items())),
            "duplicates": self.duplicates,
            "remaining": self.remaining,
            "dry_run": self.dry_run,
        }

    def summary(self) -> str:
        verb = "would be moved" if self.dry_run else "moved"
        into = ", ".join(f"{n} to {slug}" for slug, n in sorted(self.moved.items()))
        already = f"; {self.duplicates} were already in their list" if self.duplicates else ""
        return (
            f"{self.messages} messages in {NO_LIST}: {sum(self.moved.values())} {verb}"
            f"{f' ({into})' if into else ''}{already}, {self.remaining} still match no list"
        )


def _iter_unrouted(store: Store) -> Iterator[tuple[Row, bytes, MessageFacts]]:
    """Every filed message of ``_no_list``, oldest call number first, with its bytes and facts."""
    for row in sorted(store.index.filed_rows(NO_LIST)):
        try:
            raw = read_file(str(store.root / row.path))
        except OSError:
            continue  # 'listlib check' reports a missing file; there is nothing to route
        yield row, raw, parse_message(raw)


def suggest_slug(value: str) -> str:
    """A list slug for a List-Id (its first label) or an address (its local part)."""
    name = value.partition("@")[0] if "@" in value else value.partition(".")[0]
    slug = re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", name.lower())).strip("-")[:64].strip("-")
    if not is_slug(slug) or slug in RESERVED_SLUGS or slug in ROOT_NAMES:
        return "unsorted"
    return slug


def unrouted_report(store: Store, config: Config) -> UnroutedReport:
    """Group ``_no_list`` by the List-Ids and recipient addresses that would route it."""
    report = UnroutedReport()
    router = Router(config.lists)
    configured = {lst.slug for lst in config.lists}
    known = {("list_id", i): lst.slug for lst in config.lists for i in lst.list_ids}
    known.update({("address", a): lst.slug for lst in config.lists for a in lst.addresses})
    routes: dict[tuple[str, str], Route] = {}
    with store.locked():  # a killed refile is finished first
        for row, _raw, facts in _iter_unrouted(store):
            report.messages += 1
            now = router.route(facts)
            if now is not None:
                report.routable[now] = report.routable.get(now, 0) + 1
            keys: list[tuple[Kind, str]] = [("list_id", i) for i in dict.fromkeys(facts.list_ids)]
            keys += [("address", a) for a in dict.fromkeys(facts.recipients)]
            if not keys:
                report.unaddressed += 1
            for kind, value in keys:
                route = routes.get((kind, value))
                if route is None:
                    routed_to = known.get((kind, value))
                    slug = routed_to or suggest_slug(value)
                    route = Route(kind, value, slug=slug, slug_exists=slug in configured, routed_to=routed_to)
                    routes[(kind, value)] = route
                route.add(row)
    ordered = sorted(routes.values(), key=lambda r: (-r.messages, r.value))
    report.list_ids = [r for r in ordered if r.kind == "list_id"]
    report.addresses = [r for r in ordered if r.kind == "address"]
    return report


def refile_unrouted(store: Store, config: Config, *, dry_run: bool = False) -> RefileReport:
    """Route ``_no_list`` again with the current lists and move what matches into its list.

    A moved message gets a new call number in its list (as if imported now, so dedup
    against the list's mail is the import's): its ``_no_list`` copy was never
    published, so no link breaks (unless ``publish_unrouted`` published it: then its
    Message-ID page follows it to the list). Its date, and so its month, stay.
    """
    report = RefileReport(dry_run=dry_run)
    router = Router(config.lists)
    batch: list[tuple[Row, Prepared]] = []

    def flush() -> None:
        for _row, item in batch:
            report.moved[item.slug] = report.moved.get(item.slug, 0) + 1
        if not dry_run:
            report.duplicates += sum(1 for outcome in store.refile(batch) if outcome.status == "duplicate")
        batch.clear()

    with store.locked():
        for row, raw, facts in _iter_unrouted(store):
            report.messages += 1
            slug = router.route(facts)
            if slug is None:
                continue
            batch.append((row, Prepared(raw, facts, slug, row.date, row.date_source, row.origin)))
            if len(batch) >= _BATCH:
                flush()
        if batch:
            flush()
    return report
