"""Trailers (``Reviewed-by:``, ``Acked-by:``, ``Fixes:`` …) given in replies to a
patch series, collected onto the patches they apply to the way b4 0.16 does; pure.

A reply's trailers are the lines of its first text/plain part, above the ``-- ``
signature line, that read ``Name: value`` with a word-like name (quoted ``> `` lines
never match). b4's filters apply: known non-trailers (``Phone:``, ``Email:`` …) and
commit metadata (``From:``, ``Cc:``, ``Subject:`` …) are skipped; a person trailer
(any name but ``Fixes``, ``Link``, ``Closes`` …) needs an address in its value, and
must be given by that person (the From address, or the From name, matches); only
link trailers may hold a URL; ``Fixes:`` needs a commit hash.

A reply applies to the patch it answers, or — through other replies — the nearest
patch or cover letter up its chain, carrying the trailers of the replies it passes
(b4's walk); trailers given to a cover letter apply to every patch of its series.
A trailer is listed once per patch however often it was given.
"""

from __future__ import annotations

import email.parser
import email.policy
import email.utils
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.message import Message

from .series import Series

__all__ = ["Reply", "Review", "Trailer", "collect_reviews", "find_trailers", "reply_text", "reply_trailers"]


@dataclass(frozen=True)
class Trailer:
    name: str
    value: str
    given_in: str
    """The call number of the reply that gave it."""


@dataclass(frozen=True)
class Reply:
    """A message of a series' thread that is not one of its patches."""

    call: str
    parent: str | None
    from_name: str
    from_addr: str
    text: str
    """Its first text/plain part (``reply_text``)."""


@dataclass(frozen=True)
class Review:
    """What a patch got: the replies that reached it and the trailers they gave."""

    replies: tuple[str, ...]
    trailers: tuple[Trailer, ...]

    @property
    def state(self) -> str:
        """``reviewed`` (a Reviewed-by, Acked-by or Tested-by), ``discussed`` (replies),
        else ``new``."""
        if any(t.name.lower() in _REVIEW_NAMES for t in self.trailers):
            return "reviewed"
        return "discussed" if self.replies else "new"


_REVIEW_NAMES = frozenset(("reviewed-by", "acked-by", "tested-by"))
_IGNORED = frozenset(("phone", "mail", "email", "e-mail", "prerequisite-message-id"))
_HEADERS = frozenset(("subject", "date", "from"))
_LINKS = frozenset(("link", "buglink", "closes"))
_NON_PERSON = _LINKS | {"fixes", "subject", "date", "obsoleted-by", "change-id", "base-commit"}
_METADATA = frozenset(
    ("from", "author", "cc", "to", "date", "subject", "subscribe", "unsubscribe", "base-commit", "change-id")
) | {"message-id"}
_LINE_RE = re.compile(r"^\s*(\w\S+):\s+(\S.*)", re.I)
_ADDRESS_RE = re.compile(r"\S+@\S+\.\S+")
_EXTINFO_RE = re.compile(r"(.*\S+)(\s+#[^#]+)$")
# b4's patterns for a trailer wrapped onto a second line, kept to one line each: b4's
# own ``[^<]+`` and ``[^)]+`` run across lines, which costs seconds on long replies.
_FIXES_WRAP_RE = re.compile(r"^(\S+:[ \t]+[\da-f]+[ \t]+\([^)\n]+)\n([^\n]+\))", re.M)
_NAME_WRAP_RE = re.compile(r"^(\S+:[ \t]+[^<\n]+)\n(<[^>\n]+>)$", re.M)
_PERSON_RE = re.compile(r"^\s*(.*?)\s*<([^>]+)>")


def find_trailers(text: str) -> list[tuple[str, str]]:
    """The (name, value) trailers a reply's text gives (module docstring), in order,
    before the check of who gave them."""
    body = text.replace("\r\n", "\n").split("\n-- \n", 1)[0].strip() + "\n"
    body = _NAME_WRAP_RE.sub(r"\1 \2", _FIXES_WRAP_RE.sub(r"\1 \2", body))
    found: list[tuple[str, str]] = []
    other = False
    for line in body.split("\n"):
        match = _LINE_RE.match(line.strip("\r")) if ":" in line else None
        if match is None:
            other = True
            continue
        name, value = match.groups()
        lname = name.lower()
        if lname in _IGNORED or (other and lname in _HEADERS) or not lname.isascii():
            continue
        if not _ADDRESS_RE.search(value) and lname not in _NON_PERSON:
            continue
        if ("http://" in value or "https://" in value) and lname not in _LINKS:
            continue
        if lname == "fixes" and not re.match(r"[0-9a-f]{6,}", value):
            continue
        if extinfo := _EXTINFO_RE.search(value):
            value = extinfo.group(1)
        if lname not in _METADATA:
            found.append((name, value.strip()))
    return found


_UTILITY = frozenset(
    ("fixes", "link", "buglink", "closes", "obsoleted-by", "message-id", "change-id", "base-commit", "based-on")
)
_MAILTO_RE = re.compile(r"<mailto:[^>]+>")
_NAME_ADDR_RE = re.compile(r"^(.*?)\s*<([^>]+)>\s*$")
_PLUS_RE = re.compile(r"\+[^@]+@")


def _person(name: str, value: str) -> tuple[str, tuple[str, str] | None]:
    """A trailer's value as b4 writes it back (``Name <address>``, a mail client's
    ``<mailto:…>`` dropped), and the (name, address) of a person trailer, else None."""
    if name.lower() in _UTILITY or "://" in value or not _ADDRESS_RE.search(value):
        return value, None
    value = _MAILTO_RE.sub("", value)
    found = _NAME_ADDR_RE.match(value)
    pair = (found.group(1).strip(), found.group(2).strip()) if found else email.utils.parseaddr(value)
    if not pair[0] and not pair[1]:
        return value, None
    if not pair[0] or pair[0] == pair[1]:
        return pair[1], pair
    return f"{pair[0]} <{pair[1]}>", pair


def _same_address(ours: str, theirs: str) -> bool:
    """b4's ``email_eq``: equal, or equal without a ``+tag``, or the same local part at
    a domain one label longer (``foo@linux.intel.com`` and ``foo@intel.com``)."""
    ours, theirs = ours.lower(), theirs.lower()
    if ours == theirs:
        return True
    if "@" not in ours or "@" not in theirs:
        return False
    ours, theirs = _PLUS_RE.sub("@", ours), _PLUS_RE.sub("@", theirs)
    if ours == theirs:
        return True
    our_local, our_domain = ours.split("@", 1)
    their_local, their_domain = theirs.split("@", 1)
    if our_local != their_local:
        return False
    return abs(our_domain.count(".") - their_domain.count(".")) == 1 and (
        our_domain.endswith(f".{their_domain}") or their_domain.endswith(f".{our_domain}")
    )


def _given_by_sender(person: tuple[str, str] | None, reply: Reply) -> bool:
    """b4's check that a person trailer is the sender's own (its ``sloppy`` off): the
    address matches the From address, or the name the From name."""
    if person is None:
        return True
    if reply.from_addr and _same_address(person[1], reply.from_addr):
        return True
    sender = reply.from_name.lower()
    if person[0].lower() == sender:
        return True
    if sender.find(",") > 0:
        return all(sender.find(chunk.strip()) >= 0 for chunk in sender.split(","))
    return False


def _trailers_of(reply: Reply) -> list[Trailer]:
    found = []
    for name, value in find_trailers(reply.text):
        shown, person = _person(name, value)
        if _given_by_sender(person, reply):
            found.append(Trailer(name, shown, reply.call))
    return found


def reply_trailers(replies: Sequence[Reply]) -> dict[str, list[Trailer]]:
    """Reply call number -> the trailers it gives (those its sender may give)."""
    return {reply.call: _trailers_of(reply) for reply in replies}


def collect_reviews(
    series: Series, replies: Sequence[Reply], own: Mapping[str, list[Trailer]] | None = None
) -> dict[str, Review]:
    """Patch call number -> its review, for every patch of ``series``; ``replies``: the
    other messages of its thread (those of other series left out); ``own``: their
    ``reply_trailers`` when already worked out (a thread with several series)."""
    patches = {call for _n, call in series.patches}
    cover = series.cover
    by_call: Mapping[str, Reply] = {reply.call: reply for reply in replies}
    reached: dict[str, list[str]] = {call: [] for call in patches}
    given: dict[str, list[Trailer]] = {call: [] for call in patches}
    if own is None:
        own = reply_trailers(replies)
    for reply in replies:
        trailers = list(own[reply.call])
        seen = {reply.call}
        at = reply.parent
        while at is not None and at not in seen:
            seen.add(at)
            if at in patches or at == cover:
                targets = [at] if at in patches else sorted(patches)
                for target in targets:
                    reached[target].append(reply.call)
                    given[target].extend(trailers)
                break
            parent = by_call.get(at)
            if parent is None:
                break  # another series' message, or one not in the thread
            trailers.extend(own[at])
            at = parent.parent
    reviews = {}
    for call in patches:
        unique: dict[tuple[str, str], Trailer] = {}
        for trailer in given[call]:
            unique.setdefault((trailer.name.lower(), trailer.value), trailer)
        reviews[call] = Review(tuple(dict.fromkeys(reached[call])), tuple(unique.values()))
    return reviews


_CONTENT_TYPE_RE = re.compile(rb"^content-type:[ \t]*([^;\r\n]*)", re.I | re.M)
_ENCODING_RE = re.compile(rb"^content-transfer-encoding:[ \t]*(\S*)", re.I | re.M)
_CHARSET_RE = re.compile(rb"charset=\"?([\w.:-]+)", re.I)
_PARSER = email.parser.BytesParser(policy=email.policy.compat32)


_MARKS = (b"-by:", b"-By:", b"-BY:", b"Fixes:", b"fixes:", b"FIXES:", b"Link:", b"link:", b"Closes:", b"closes:")
"""What a body holds when a line of it may be a trailer: every person trailer in use
ends in ``-by`` (b4 would take any name with an address; ``Cc:`` and the like it drops
as metadata), and the others b4 keeps are ``Fixes``, ``Link``, ``BugLink``, ``Closes``.
Looked for with ``bytes.find``: a regex over every reply's bytes costs seconds a build."""


def _may_have_trailers(raw: bytes, start: int) -> bool:
    """Whether a line of the body from ``start`` may be a trailer: a mark preceded on its
    line only by one word, not a quote (``> Signed-off-by:`` is in most replies)."""
    if b"base64" in raw:
        return True
    for mark in _MARKS:
        at = raw.find(mark, start)
        while at >= 0:
            line = raw.rfind(b"\n", start, at)
            word = raw[start if line < 0 else line + 1 : at].lstrip(b" \t")
            if not word.startswith(b">") and len(word.split()) <= 1:
                return True
            at = raw.find(mark, at + len(mark))
    return False


def reply_text(raw: bytes) -> str:
    """A message's first text/plain part as text (what b4 reads trailers from): the body
    as it is for plain 7/8-bit mail, else through the stdlib's MIME parser. "" when no
    line of the body can be a trailer (``_MARKS``; base64 hides its lines, so it is
    always read): most replies have none, and parsing them all costs seconds a build."""
    end = _header_end(raw)
    if end is not None and not _may_have_trailers(raw, end[1]):
        return ""
    if end is not None:
        headers = raw[: end[0]]
        kind = _CONTENT_TYPE_RE.search(headers)
        encoding = _ENCODING_RE.search(headers)
        plain = kind is None or kind.group(1).strip().lower() in (b"text/plain", b"")
        simple = encoding is None or encoding.group(1).lower() in (b"7bit", b"8bit", b"binary", b"")
        if plain and simple:
            charset = _CHARSET_RE.search(kind.group(0) if kind else b"")
            return _decode(raw[end[1] :], charset.group(1).decode("ascii") if charset else "utf-8")
    message = _PARSER.parsebytes(raw)
    part = _first_plain(message)
    if part is None:
        return ""
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return ""
    return _decode(payload, part.get_content_charset() or "utf-8")


def _header_end(raw: bytes) -> tuple[int, int] | None:
    """Where the header ends and the body starts (a blank line, LF or CRLF), or None."""
    found = [(at, at + 2) for at in (raw.find(b"\n\n"),) if at >= 0]
    found += [(at, at + 4) for at in (raw.find(b"\r\n\r\n"),) if at >= 0]
    return min(found) if found else None


def _first_plain(message: Message) -> Message | None:
    for part in message.walk():
        if part.get_content_type() == "text/plain" and not part.is_multipart():
            return part
    return None


def _decode(data: bytes, charset: str) -> str:
    try:
        return data.decode(charset, "replace")
    except LookupError:
        return data.decode("utf-8", "replace")
