"""The header reader against its plain definitions.

``split_message`` and the field readers use search shapes chosen for speed (see
``listlib.message``); the references below are the direct definitions: match
the header block line by line, find fields with ``^`` and ``re.M``. Both must
agree on generated headers and on every message of the corpora.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from listlib.errors import SourceError
from listlib.filers import open_source
from listlib.message import _iter_fields, _received_date, parse_date, split_message

from ..support.helpers import CORPORA

_BLOCK_RE = re.compile(rb"(?:(?:[\x21-\x39\x3b-\x7e]+[ \t]*:|[ \t])[^\n]*(?:\n|\Z))*")
_LEADING_BLANK_RE = re.compile(rb"(?:[ \t\r]*\n)+")
_FIELD_RE = re.compile(
    rb"^(message-id|in-reply-to|references|subject|from|date|list-id|received|to|cc|delivered-to"
    rb"|x-original-to|resent-to|envelope-to|x-no-archive|archive)[ \t]*:([^\n]*(?:\n[ \t][^\n]*)*)",
    re.M | re.I,
)


def reference_split(raw: bytes) -> tuple[bytes, bytes]:
    start = 0
    if raw[:1] in (b" ", b"\t", b"\r", b"\n"):
        lead = _LEADING_BLANK_RE.match(raw)
        start = lead.end() if lead else 0
    blank = raw.find(b"\n\n", start)
    crlf = raw.find(b"\n\r\n", start, blank if blank >= 0 else len(raw))
    if crlf >= 0:
        end, body = crlf + 1, crlf + 3
    elif blank >= 0:
        end, body = blank + 1, blank + 2
    else:
        end = body = len(raw)
    valid = _BLOCK_RE.match(raw, start, end)
    assert valid is not None
    if valid.end() == end:
        return raw[start:end], raw[body:]
    return raw[start : valid.end()], raw[valid.end() :]


def reference_fields(header: bytes) -> tuple[list[tuple[str, bytes]], int | None]:
    """(the wanted fields but Received, the date of the first Received that has a ';')."""
    fields = []
    received: int | None = None
    dated = False
    for name, value in _FIELD_RE.findall(header):
        lower = name.decode("ascii").lower()
        unfolded = b" ".join(value.split()) if b"\n" in value else value.strip()
        if lower != "received":
            fields.append((lower, unfolded))
        elif not dated and b";" in value:
            dated = True
            received = parse_date(unfolded.rpartition(b";")[2].decode("utf-8", "replace"))
    return fields, received


def assert_agrees(raw: bytes) -> None:
    assert split_message(raw) == reference_split(raw)
    header = split_message(raw)[0]
    fields, received = reference_fields(header)
    assert _iter_fields(header) == fields
    assert _received_date(header) == received


_names = st.sampled_from(
    [b"From", b"SUBJECT", b"date", b"Message-Id", b"References", b"In-Reply-To", b"to", b"Cc", b"List-ID",
     b"Received", b"received", b"X-No-Archive", b"Archive", b"X-Junk", b"Delivered-To", b"Subjects", b"Fromage"]
)  # fmt: skip
_line = st.one_of(
    st.builds(
        lambda n, sp, v: n + sp + b":" + v, _names, st.sampled_from([b"", b" ", b"\t", b"  "]), st.binary(max_size=30)
    ),
    st.builds(lambda v: b"Received: from a by b" + v + b"; Tue, 9 Dec 2025 14:03:11 +0000", st.binary(max_size=10)),
    st.builds(lambda c, v: c + v, st.sampled_from([b" ", b"\t"]), st.binary(max_size=30)),
    st.binary(max_size=20),
    st.just(b""),
    st.just(b"\r"),
)


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(_line, max_size=14),
    st.sampled_from([b"\n", b"\r\n"]),
    st.sampled_from([b"", b"\n", b" \n\n", b"\t\r\n"]),
    st.binary(max_size=40),
)
def test_header_reading_matches_the_line_by_line_definition(
    lines: list[bytes], newline: bytes, lead: bytes, body: bytes
) -> None:
    header = newline.join(lines)
    assert_agrees(lead + header)
    assert_agrees(lead + header + newline)
    assert_agrees(lead + header + newline + newline + body)


def test_header_edge_shapes_match_the_definition() -> None:
    shapes = [b"", b"X", b"X:", b"X:\n", b"\n", b"\r\n", b"X: a\nnot a field\nY: b\n\nbody", b" lead\nX: a\n\n"]
    shapes += [b"X: a\r\n\r\n", b"X: a\n\r\nY: b\n\n", b"Received: a;\n\t Tue, 9 Dec 2025 14:03:11 +0000\n"]
    for raw in shapes:
        assert_agrees(raw)


def _corpus_files() -> list[Path]:
    if not CORPORA.is_dir():
        pytest.skip(f"{CORPORA} not present")
    return sorted(p for p in CORPORA.rglob("*") if p.is_file() and not p.name.endswith(("README.md", ".json")))


def test_every_corpus_message_is_read_as_the_definition_reads_it() -> None:
    checked = 0
    for path in _corpus_files():
        try:
            source = open_source(path)
        except SourceError:  # not a mail file; the filer tests cover those
            continue
        for mail in source.iter_mail():
            assert_agrees(mail.raw)
            checked += 1
    assert checked > 20_000
