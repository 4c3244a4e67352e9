"""Patch series: the ``[PATCH vN M/K]`` messages of a thread grouped into series, and
the versions of a series linked to each other; pure (no I/O, no clock).

Grouping (per thread, in thread order; subjects read by ``patchsubject``):

- A *head* starts a series: a cover letter (``[PATCH 0/K]``, not a reply), a lone patch
  (``[PATCH]``, no ``M/K``; but one that answers a cover letter of its author and
  version that has no patch yet is that series' patch 1), or a numbered patch ``M/K`` that no series of its thread
  takes (see next rule; a series sent without a cover letter is headed by its first patch).
- A numbered patch ``M/K`` belongs to the nearest series among its ancestors (git
  send-email answers the cover letter, or the previous patch with ``--chain-reply-to``)
  with the same version and size K that has no patch M yet (a cover letter by the same
  author takes it whatever K says: ``0/7`` over ``1/6`` … happens); else to the latest
  such series of its thread by the same author; else it heads a new one.
- Replies (``Re:``) and messages without ``PATCH``/``RFC`` are never part of a series.

Versions (across threads of one list): a series' *keys* are the normalized titles of its
cover letter and of its first patch (lower case, whitespace collapsed, a trailing period
dropped), each with its author's address. The *previous version* of a series S is, among
the series dated before S that share a key with S and rank below S, the one of highest
rank, the latest on a tie; rank is (version, RFC before non-RFC, original before RESEND).
The *next version* of P is, among the series whose previous version is P, the
highest-ranked, then one that is itself some series' previous version, then the
earliest (a v5 sent twice continues with the posting v6 names as its previous
version). So v1 -> v2
-> v3 form a chain; two unrelated series that reuse a title link only when the later one
says it is a later version; a rename between versions breaks the chain (both titles of a
series are tried, which catches the common cover-letter-added-in-v2 case).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .patchsubject import PatchSubject, is_reply, parse_subject

__all__ = ["Posting", "Series", "group_series", "link_versions", "series_key", "version_chain", "version_label"]


@dataclass(frozen=True)
class Posting:
    """One message as series grouping sees it."""

    call: str
    parent: str | None
    """The call number of the message it answers in its thread (None for a root)."""
    subject: str
    author: str
    """The sender's address (compared case-insensitively)."""
    date: int
    thread: str


@dataclass(frozen=True)
class Series:
    """One posting of a patch series (one version)."""

    head: str
    """The call number of its cover letter, else of its lowest-numbered patch."""
    thread: str
    title: str
    author: str
    date: int
    version: int
    rfc: bool
    resend: bool
    tags: tuple[str, ...]
    total: int
    """K of ``M/K`` (1 for a lone patch)."""
    cover: str | None
    patches: tuple[tuple[int, str], ...]
    """(M, call number) of its patches found, in order."""
    first_title: str = ""
    """The title of its first patch ("" when none was found)."""

    @property
    def keys(self) -> frozenset[str]:
        """What versions are matched by (module docstring)."""
        found = {series_key(self.title, self.author)}
        if self.first_title:
            found.add(series_key(self.first_title, self.author))
        return frozenset(found)

    @property
    def rank(self) -> tuple[int, int, int]:
        return (self.version, 0 if self.rfc else 1, 1 if self.resend else 0)

    @property
    def calls(self) -> tuple[str, ...]:
        """Its cover letter (if any) and its patches."""
        return ((self.cover,) if self.cover else ()) + tuple(call for _n, call in self.patches)


def version_label(series: Series) -> str:
    """How a page names its version: ``v2``, ``RFC v1``, ``v3 RESEND``, with its tags."""
    words = [*(["RFC"] if series.rfc else []), f"v{series.version}", *(["RESEND"] if series.resend else [])]
    return " ".join([*words, *series.tags])


_SPACE_RE = re.compile(r"\s+")


def series_key(title: str, author: str) -> str:
    """A title and author as versions are matched by (module docstring)."""
    return _SPACE_RE.sub(" ", title).strip().rstrip(".").strip().lower() + "\0" + author.strip().lower()


@dataclass
class _Open:
    head: Posting
    parsed: PatchSubject
    cover: str | None
    patches: dict[int, Posting] = field(default_factory=dict)

    def takes(self, parsed: PatchSubject, author: str, answered: bool = False) -> bool:
        """Whether patch ``parsed`` by ``author`` may join; ``answered``: it answers this
        series' messages (then a cover letter by the same author takes it even when the
        sizes disagree: ``[PATCH v2 0/7]`` over ``[PATCH v2 1/6]`` … happens)."""
        same_size = parsed.total == self.parsed.total or (
            answered and self.cover is not None and author.lower() == self.head.author.lower()
        )
        return (
            same_size
            and parsed.version == self.parsed.version
            and parsed.number not in self.patches
            and parsed.rfc == self.parsed.rfc
        )

    def close(self) -> Series:
        numbers = sorted(self.patches)
        first = self.patches[numbers[0]] if numbers else None
        # Without a cover letter the lowest-numbered patch heads it, whichever came first
        # (a "2/2" sent before its "1/2" happens).
        head = self.head if self.cover is not None or first is None else first
        parsed = self.parsed if head is self.head else parse_subject(head.subject)
        return Series(
            head=head.call,
            thread=head.thread,
            title=parsed.title,
            author=head.author.lower(),
            date=head.date,
            version=parsed.version,
            rfc=parsed.rfc,
            resend=parsed.resend,
            tags=parsed.tags,
            total=parsed.total or 1,
            cover=self.cover,
            patches=tuple((n, self.patches[n].call) for n in numbers),
            first_title=parse_subject(first.subject).title if first is not None else "",
        )


def group_series(postings: Iterable[Posting]) -> list[Series]:
    """The series of one thread's messages (given in thread order: a message after the
    one it answers), in the order of their heads."""
    opened: list[_Open] = []
    owner: dict[str, _Open] = {}
    """call -> the series its message belongs to."""
    parent_of: dict[str, str | None] = {}
    for posting in postings:
        parent_of[posting.call] = posting.parent
        if "[" not in posting.subject or is_reply(posting.subject):
            continue  # most of a patch thread: its replies
        parsed = parse_subject(posting.subject)
        if not parsed.is_patch or parsed.reply:
            continue
        if parsed.cover_letter:
            found = _Open(posting, parsed, posting.call)
        elif parsed.number is None or not parsed.total:
            waiting = _waiting_cover(posting, parsed, owner)
            if waiting is not None:
                waiting.patches[1] = posting
                owner[posting.call] = waiting
                continue
            found = _Open(posting, parsed, None, {1: posting})
        else:
            taker = _ancestor_series(posting, parsed, parent_of, owner) or _same_author_series(posting, parsed, opened)
            if taker is not None:
                taker.patches[parsed.number] = posting
                owner[posting.call] = taker
                continue
            found = _Open(posting, parsed, None, {parsed.number: posting})
        opened.append(found)
        owner[posting.call] = found
    return [series.close() for series in opened]


def _waiting_cover(posting: Posting, parsed: PatchSubject, owner: Mapping[str, _Open]) -> _Open | None:
    """The series of the cover letter an unnumbered patch answers, when it is by the same
    author, of the same version and still has no patch (``[PATCH v7 0/1]`` answered by
    ``[PATCH v7]`` happens)."""
    series = owner.get(posting.parent or "")
    if (
        series is not None
        and series.cover == posting.parent
        and not series.patches
        and series.parsed.version == parsed.version
        and series.head.author.lower() == posting.author.lower()
    ):
        return series
    return None


def _ancestor_series(
    posting: Posting, parsed: PatchSubject, parent_of: Mapping[str, str | None], owner: Mapping[str, _Open]
) -> _Open | None:
    seen = {posting.call}
    at = posting.parent
    while at is not None and at not in seen:
        seen.add(at)
        series = owner.get(at)
        if series is not None and series.takes(parsed, posting.author, answered=True):
            return series
        at = parent_of.get(at)
    return None


def _same_author_series(posting: Posting, parsed: PatchSubject, opened: Sequence[_Open]) -> _Open | None:
    for series in reversed(opened):
        if series.head.author.lower() == posting.author.lower() and series.takes(parsed, posting.author):
            return series
    return None


def link_versions(series: Iterable[Series]) -> dict[str, tuple[str | None, str | None]]:
    """Head -> (the head of its previous version, of its next version), by the rule of
    the module docstring, for every series given (those of one list)."""
    ordered = sorted(series, key=lambda s: (s.date, s.head))
    by_key: dict[str, list[Series]] = defaultdict(list)
    previous: dict[str, str | None] = {}
    for current in ordered:
        candidates = {
            other.head: other for key in current.keys for other in by_key[key] if other.rank < current.rank
        }.values()
        best = max(candidates, key=lambda s: (s.rank, s.date, s.head), default=None)
        previous[current.head] = best.head if best is not None else None
        for key in current.keys:
            by_key[key].append(current)
    continued = {before for before in previous.values() if before is not None}
    candidates: dict[str, list[Series]] = defaultdict(list)
    for current in ordered:
        before = previous[current.head]
        if before is not None:
            candidates[before].append(current)
    following = {
        before: max(found, key=lambda s: (s.rank, s.head in continued, -s.date, s.head)).head
        for before, found in candidates.items()
    }
    return {head: (before, following.get(head)) for head, before in previous.items()}


def version_chain(head: str, links: Mapping[str, tuple[str | None, str | None]]) -> list[str]:
    """The heads of every version of the series headed by ``head``, oldest first, along
    ``link_versions``' links (a later version that is not its predecessor's *next* one,
    e.g. a second v2, is not on the chain)."""
    chain = [head]
    seen = {head}
    at = links.get(head, (None, None))[0]
    while at is not None and at not in seen:
        chain.insert(0, at)
        seen.add(at)
        at = links.get(at, (None, None))[0]
    at = links.get(head, (None, None))[1]
    while at is not None and at not in seen:
        chain.append(at)
        seen.add(at)
        at = links.get(at, (None, None))[1]
    return chain
