"""A hostile corpus: every payload of issue 23 written as the input files an operator imports.

``write_hostile_corpus(folder)`` writes, deterministically (same bytes on every run):

- ``mboxrd/hostile.mbox``: an mboxrd file (``From mboxrd@z`` separators, ``>From`` quoting)
  with hostile attachments, path-traversal and control-character attachment names (raw,
  RFC 2231 and RFC 2047 encoded), hostile HTML mail, control characters in headers (raw
  and in encoded words), a 2 MB Subject, 8-bit headers, bogus charsets, absurd dates,
  MIME nested ``MIME_DEPTH`` deep, a ``BIG_MB`` MB message, a From-quoting trap, one
  half of a Message-ID collision and a message the maildir repeats byte for byte;
- ``mboxo/hostile.mbox``: an mboxo file (asctime separators, only ``From `` lines quoted)
  with a reply chain ``CHAIN_DEPTH`` deep and the From-quoting trap;
- ``maildir/``: the other half of the collision, the exact duplicate, a message with only
  a Subject, one with no header at all, one with CRLF line ends and controls in From;
- ``pipermail/``: ``1999-July.txt`` with early Pipermail's RFC 2822-dated separators and
  ``1999-August.txt`` with a separator shape no reader knows (one failed blob with a detail).

Every active payload runs ``attachments.script(beacon)``, so a browser test that passes its
own listener as ``beacon`` sees any script that runs. The returned ``HostileCorpus`` says what
an import must count per source and, per payload, the Message-IDs and words to look for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..helpers import early_pipermail, make_message, mboxrd
from .attachments import BIDI, CONTROLS, HOSTILE, TRAVERSAL, attachment_message, hostile_attachment_message, polyglot
from .bodies import big_message, deep_mime_message, html_messages, quoting_trap_message, reply_chain
from .headers import LONG_SUBJECT, OSC52, control_header_messages, odd_header_messages

__all__ = ["BIG_MB", "CHAIN_DEPTH", "MIME_DEPTH", "HostileCorpus", "Payload", "Source", "write_hostile_corpus"]

CHAIN_DEPTH = 600
"""Deeper than the ~450 at which a recursive walk of a thread fails (issue 23 item 6)."""
MIME_DEPTH = 1200
BIG_MB = 4
DEFAULT_BEACON = "http://127.0.0.1:9/ran?"


@dataclass(frozen=True)
class Source:
    path: str
    """Relative to the corpus folder, as passed to ``listlib import``."""
    messages: int
    """How many messages the import reads from it."""
    failed: int = 0
    """How many of them cannot be filed (go to ``_failed``)."""
    duplicates: int = 0
    """How many are byte-for-byte repeats of mail imported before (sources in this order)."""


@dataclass(frozen=True)
class Payload:
    name: str
    description: str
    message_ids: tuple[str, ...] = ()
    """Raw Message-IDs (with their control characters) of the messages carrying it."""
    words: tuple[str, ...] = ()
    """Plain words in those messages' bodies that ``listlib search`` must find."""
    raw: tuple[str, ...] = ()
    """Text that must never appear raw in any page or feed."""
    shown: tuple[str, ...] = ()
    """Text that some page must show (HTML as written)."""


@dataclass(frozen=True)
class HostileCorpus:
    folder: Path
    sources: tuple[Source, ...]
    payloads: dict[str, Payload]
    stored: dict[str, bytes] = field(default_factory=dict)
    """Message-ID -> the exact bytes the store must hold (From-quoting undone, or kept, right)."""

    @property
    def messages(self) -> int:
        return sum(s.messages for s in self.sources)

    @property
    def failed(self) -> int:
        return sum(s.failed for s in self.sources)

    @property
    def duplicates(self) -> int:
        return sum(s.duplicates for s in self.sources)

    def paths(self) -> list[Path]:
        return [self.folder / s.path for s in self.sources]


def mboxo(messages: list[bytes], sender: str = "ann@example.org", date: str = "Mon Jan  1 12:00:00 2024") -> bytes:
    """Messages as an mboxo file: only body lines starting ``From `` get a ``>``."""
    return b"".join(
        f"From {sender} {date}\n".encode() + re.sub(rb"^From ", b">From ", raw, flags=re.M) + b"\n" for raw in messages
    )


def _attachment_name_messages(beacon: str) -> list[bytes]:
    """Traversal and control-character names, raw, RFC 2231- and RFC 2047-encoded."""
    names = [*TRAVERSAL, f"{CONTROLS}.html", f"{BIDI}.html", f"report{OSC52}.pdf"]
    parts = [(name, "text/html", polyglot(beacon).encode()) for name in names]
    return [
        attachment_message(
            f"attachment names {how}",
            f"<names-{how}@example.org>",
            parts,
            text=f"traversalpayload {how}\n",
            name_encoding=how,
        )
        for how in ("raw", "rfc2231", "rfc2047")
    ]


def _write_maildir(folder: Path, messages: list[bytes]) -> None:
    for sub in ("cur", "new", "tmp"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    for n, raw in enumerate(messages):
        (folder / "cur" / f"1700000000.M{n}P1.hostile:2,S").write_bytes(raw)


def write_hostile_corpus(folder: Path, beacon: str = DEFAULT_BEACON) -> HostileCorpus:
    """Write the corpus into ``folder`` (created; must be empty) and describe it."""
    folder.mkdir(parents=True, exist_ok=True)
    half = len(HOSTILE) // 2
    attachments = [
        hostile_attachment_message(1, beacon, HOSTILE[:half]),
        hostile_attachment_message(2, beacon, HOSTILE[half:]),
    ]
    names = _attachment_name_messages(beacon)
    html = html_messages(beacon)
    controls = control_header_messages()
    odd = odd_header_messages()
    collision = [
        make_message("collision one", "collisionpayload one\n", message_id="<collide@example.org>"),
        make_message("collision two", "collisionpayload two\n", message_id="<collide@example.org>"),
    ]
    duplicate = make_message("duplicate", "duplicatepayload\n", message_id="<dup@example.org>")
    trap_rd, trap_o = quoting_trap_message("<trap-rd@example.org>"), quoting_trap_message("<trap-o@example.org>")
    chain = reply_chain(CHAIN_DEPTH)
    deep, big = deep_mime_message(MIME_DEPTH), big_message(BIG_MB)

    rd = [*attachments, *names, *html, *controls, *odd, deep, big, trap_rd, collision[0], duplicate]
    (folder / "mboxrd").mkdir()
    (folder / "mboxrd" / "hostile.mbox").write_bytes(mboxrd(rd))
    (folder / "mboxo").mkdir()
    (folder / "mboxo" / "hostile.mbox").write_bytes(mboxo([*chain, trap_o]))

    subject_only = b"Subject: missingheaders only a subject\n\nmissingheaders subject only\n"
    no_headers = b"just text, missingheaders none\nsecond line\n"
    crlf = make_message(
        "crlf \x1b[31mred",
        "crlfpayload\n",
        message_id="<crlf@example.org>",
        sender="\x1b]52;c;eA==\x07 <c@example.org>",
    ).replace(b"\n", b"\r\n")
    _write_maildir(folder / "maildir", [collision[1], duplicate, subject_only, no_headers, crlf])

    july_dates = [
        "Thu, 1 Jul 1999 06:06:56 -0400 (EDT)",
        "Fri, 2 Jul 1999 07:00:00 +0000 (GMT)",
        "Sat, 3 Jul 1999 08:00:00 -0700 (PDT)",
    ]
    july_body = (
        "pipermailpayload\nFrom what I can see, this is body text.\nFrom: not a header either\n\n"
        "From someone@example.org Thu, 1 Jul 1999 06:06:56 -0400 (EDT)\n\nwas quoted above.\n"
    )
    july = [
        make_message(f"july {i}", july_body, message_id=f"<july-{i}@example.org>", date=d)
        for i, d in enumerate(july_dates)
    ]
    august = b"".join(
        b"From ann@example.org 1999-08-0%d 06:06:56\n" % i
        + make_message(f"august {i}", "unknownseparator\n", message_id=f"<august-{i}@example.org>")
        + b"\n"
        for i in range(1, 4)
    )
    (folder / "pipermail").mkdir()
    (folder / "pipermail" / "1999-July.txt").write_bytes(early_pipermail(july, july_dates))
    (folder / "pipermail" / "1999-August.txt").write_bytes(august)

    sources = (
        Source("mboxrd/hostile.mbox", len(rd)),
        Source("mboxo/hostile.mbox", len(chain) + 1),
        Source("maildir", 5, failed=1, duplicates=1),
        Source("pipermail", len(july) + 1, failed=1),
    )
    payloads = [
        Payload(
            "attachments",
            "extensionless HTML+script, defused names, rare extensions, SVG with script, HTML under lying types",
            ("<hostile1@example.org>", "<hostile2@example.org>"),
            raw=("<script>document.title",),
        ),
        Payload(
            "attachment-names",
            "path traversal (../, absolute, drive, UNC) and controls/bidi in attachment names, raw and encoded",
            tuple(f"<names-{how}@example.org>" for how in ("raw", "rfc2231", "rfc2047")),
            ("traversalpayload",),
            raw=(OSC52, "\x1b[2J"),
        ),
        Payload(
            "html",
            "HTML-only and alternative mail: script, event handlers, javascript: URLs, CSS expressions, "
            "meta refresh, base href, forms",
            ("<html-0@example.org>", "<html-1@example.org>"),
            ("htmlpayload",),
            raw=("evil.example", "expression("),
            shown=("htmlpayload Hello <b>world</b>",),
        ),
        Payload(
            "header-controls",
            "NUL, ESC (OSC 52, clear screen), BEL, DEL, C1, U+FFFE/U+FFFF in Subject, From and Message-ID, raw "
            "and in RFC 2047 encoded words; a Message-ID collision; a 2 MB Subject",
            ("<h0\x01\x1b[2J@example.org>", "<twin\x1b[2J@example.org>", "<reply@example.org>"),
            raw=(OSC52, "\x1b[2J", "\x07", "spam " * 61),
            shown=("osc \u241b]52;c;aGVsbG8=\u2407 clear \u241b[2J\u241b[H",),
        ),
        Payload(
            "long-subject",
            "a 2 MB Subject",
            ("<h6\x01\x1b[2J@example.org>",),
            raw=(LONG_SUBJECT[:1000],),
        ),
        Payload(
            "odd-headers",
            "8-bit bytes, U+FFFE/U+FFFF and bidi overrides in headers, bogus charsets, absurd dates",
            tuple(f"<odd-{n}@example.org>" for n in range(len(odd))),
            ("oddheaders",),
        ),
        Payload("deep-mime", f"multipart nested {MIME_DEPTH} deep", ("<deep-mime@example.org>",), ("mimebottom",)),
        # Too long to show or index: attached to its page instead.
        Payload(
            "big", f"a {BIG_MB} MB message", ("<big@example.org>",), shown=("is too long to show; it is attached",)
        ),
        Payload("chain", f"a reply chain {CHAIN_DEPTH} deep", ("<chain-0@example.org>",), ("chainlink",)),
        Payload(
            "quoting",
            "mboxrd and mboxo From-quoting traps",
            ("<trap-rd@example.org>", "<trap-o@example.org>"),
            ("quotingtrap",),
        ),
        Payload(
            "collision", "two different messages with one Message-ID", ("<collide@example.org>",), ("collisionpayload",)
        ),
        Payload(
            "duplicate",
            "the same message in the mboxrd file and the maildir",
            ("<dup@example.org>",),
            ("duplicatepayload",),
        ),
        Payload("missing-headers", "a message with only a Subject, one with no header at all", (), ("missingheaders",)),
        Payload(
            "crlf", "CRLF line ends, an OSC 52 write as the sender's name", ("<crlf@example.org>",), ("crlfpayload",)
        ),
        Payload(
            "pipermail", "early Pipermail RFC 2822-dated separators", ("<july-0@example.org>",), ("pipermailpayload",)
        ),
        Payload("unknown-separator", "a month whose separators no reader knows: one failed blob with a detail"),
    ]
    stored = {
        "<trap-rd@example.org>": trap_rd,  # mboxrd quoting undone exactly
        "<trap-o@example.org>": re.sub(rb"^From ", b">From ", trap_o, flags=re.M),  # mboxo keeps its quotes
        "<crlf@example.org>": crlf,
    }
    return HostileCorpus(folder, sources, {p.name: p for p in payloads}, stored)
