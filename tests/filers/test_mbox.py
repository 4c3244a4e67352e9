import io
import re
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from listlib.filers import mbox
from listlib.filers.mbox import _CONTENT_LENGTH_RE, is_separator, iter_mbox, quote_mboxrd, separator_date
from listlib.message import blank_line

from ..support.helpers import early_pipermail, make_message, mboxrd


def parts(data: bytes, fmt: str = "auto") -> list[bytes]:
    return [p.raw for p in iter_mbox(io.BytesIO(data), fmt)]  # type: ignore[arg-type]


def test_separator_rule_is_strict() -> None:
    assert is_separator(b"From mboxrd@z Thu Jan  1 00:00:00 1970")
    assert is_separator(b"From andrew-twisted at puzzling.org  Tue Oct  1 01:41:07 2002")
    assert is_separator(b"From MAILER-DAEMON Fri Jul  8 12:08:34 2011")
    assert is_separator(b"From j\xf6rg@example.org Mon Jan 12 10:00:00 +0100 2009")
    assert is_separator(b"From someone@example.org Mon, 18 Apr 2016 10:15:40 +0200", b"From: someone@example.org")
    assert not is_separator(b"From what I can see, homematic is a networked home automation server.")
    assert not is_separator(b"From twisted.internet.defer import Deferred")
    assert separator_date(b"From mboxrd@z Thu Jan  1 00:00:00 1970") is None
    assert separator_date(b"From a at b.org  Tue Oct  1 01:41:07 2002") == 1033436467


_EARLY_PIPERMAIL_DATES = [
    "Thu, 1 Jul 1999 06:06:56 -0400 (EDT)",
    "1 Jul 1999 06:06:56 -0400",
    "Thu, 1 Jul 99 06:06:56 -0400",
    "Fri, 2 Jul 1999 13:01:02 +0000 (GMT)",
    "Fri, 02 Jul 1999 13:01:02 -0700 (PDT)",
    "Fri, 2 Jul 1999 13:01:02 GMT",
    "Fri, 2 Jul 1999 13:01 EDT",
    "Fri, 2 Jul 1999 13:01:02 -0400 (Eastern Daylight Time)",
    "Mon, 18 Apr 2016 10:15:40 +0200",
]


@pytest.mark.parametrize("date", _EARLY_PIPERMAIL_DATES)
@pytest.mark.parametrize("sender", [b"someone@example.org", b"someone at example.org", b"MAILER-DAEMON"])
def test_rfc2822_dated_separators_need_a_header_line_after_them(sender: bytes, date: str) -> None:
    line = b"From " + sender + b" " + date.encode()
    assert is_separator(line, b"Date: " + date.encode())
    assert is_separator(line + b"\r", b"From: x\r")
    assert separator_date(line) is not None
    # A quoted separator-like line in a body is followed by text, a blank line or nothing.
    assert not is_separator(line, b"this is body text")
    assert not is_separator(line, b"")
    assert not is_separator(line)


def test_rfc2822_dated_separators_stay_strict() -> None:
    header = b"Subject: x"
    assert not is_separator(b"From what I can see, 1 Jul 1999 06:06:56 -0400", header)
    assert not is_separator(b"From someone@example.org Thu, 1 Jul 1999 06:06:56 -0400 and more", header)
    assert not is_separator(b"From someone@example.org Thu, 41 Jul 1999 06:06:56 -0400", header)
    assert not is_separator(b"From someone@example.org 1999-07-01 06:06:56", header)
    assert not is_separator(b"From: someone@example.org Thu, 1 Jul 1999 06:06:56 -0400", header)


def test_early_pipermail_month_splits_into_its_messages() -> None:
    tricky = (
        "Hi,\n\nFrom what I can see, this works.\n"
        "From: x\n"
        "From someone@example.org Thu, 1 Jul 1999 06:06:56 -0400 (EDT)\n"
        "was quoted above.\n\n"
        "From someone@example.org Thu, 1 Jul 1999 06:06:56 -0400 (EDT)\n"
    )
    messages = [
        make_message(message_id=f"<{i}@x>", date=date, body=tricky if i == 1 else "Hello.\n")
        for i, date in enumerate(_EARLY_PIPERMAIL_DATES[:4])
    ]
    data = early_pipermail(messages, _EARLY_PIPERMAIL_DATES[:4])
    assert parts(data) == messages
    assert parts(data.replace(b"\n", b"\r\n")) == [m.replace(b"\n", b"\r\n") for m in messages]


def test_unescaped_from_lines_in_bodies_do_not_split_messages() -> None:
    body = "Hi,\n\nFrom what I know, tuples jelly fine.\nFrom the spec:\n\nFrom here on\n"
    data = b"From a at b.org  Tue Oct  1 01:41:07 2002\n" + make_message(body=body) + b"\n"
    data += b"From c at d.org  Tue Oct  1 03:00:00 2002\n" + make_message(message_id="<m2@x>") + b"\n"
    got = parts(data)
    assert len(got) == 2
    assert got[0] == make_message(body=body)


def test_mboxrd_quoting_is_undone_exactly() -> None:
    raw = make_message(body="From here\n>From there\n>>From everywhere\n> From not quoted\n")
    data = mboxrd([raw])
    assert b"\n>From here\n>>From there\n>>>From everywhere\n" in data
    assert parts(data) == [raw]
    assert parts(data, "mboxo") == [quote_mboxrd(raw)]


def test_separators_with_8bit_bytes_do_not_crash() -> None:
    data = b"From j\xf6rg\xe9@example.org Mon Jan 12 10:00:00 2009\nFrom: x\n\nbody\n"
    assert parts(data) == [b"From: x\n\nbody\n"]


def test_content_length_is_trusted_when_it_lands_on_a_separator() -> None:
    body = b"line\n\nFrom someone@example.org Mon Jan 12 10:00:00 2009\nnot a separator here\n"
    msg = b"From: a\nContent-Length: %d\n\n" % len(body) + body
    data = b"From a@b Mon Jan 12 10:00:00 2009\n" + msg + b"\nFrom c@d Mon Jan 12 11:00:00 2009\nFrom: c\n\nx\n"
    assert parts(data) == [msg, b"From: c\n\nx\n"]


def test_wrong_content_length_is_ignored() -> None:
    msg = b"From: a\nContent-Length: 3\n\nlonger body\n"
    data = b"From a@b Mon Jan 12 10:00:00 2009\n" + msg + b"\nFrom c@d Mon Jan 12 11:00:00 2009\nFrom: c\n\nx\n"
    assert parts(data) == [msg, b"From: c\n\nx\n"]


def test_crlf_mbox() -> None:
    data = (
        b"From a@b Mon Jan 12 10:00:00 2009\r\nFrom: a\r\n\r\nx\r\n\r\n"
        b"From c@d Mon Jan 12 11:00:00 2009\r\nFrom: c\r\n\r\ny\r\n"
    )
    assert parts(data) == [b"From: a\r\n\r\nx\r\n", b"From: c\r\n\r\ny\r\n"]


def test_empty_messages_and_missing_final_newline() -> None:
    data = b"From a@b Mon Jan 12 10:00:00 2009\nFrom c@d Mon Jan 12 11:00:00 2009\nFrom: c\n\nno newline"
    assert parts(data) == [b"", b"From: c\n\nno newline"]


def test_not_an_mbox() -> None:
    with pytest.raises(ValueError):
        parts(b"From: a\n\nbody\n")


_line = st.one_of(
    st.sampled_from(["From here", ">From there", ">>From x", "", "From a@b Mon Jan 12 10:00:00 2009", "> quoted"]),
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=40),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_line, max_size=12), min_size=1, max_size=6))
def test_mboxrd_round_trip_property(bodies: list[list[str]]) -> None:
    messages = [
        make_message(message_id=f"<{i}@x>", body="\n".join(lines).replace("\r", "") + "\n")
        for i, lines in enumerate(bodies)
    ]
    data = mboxrd(messages)
    got = list(iter_mbox(io.BytesIO(data)))
    assert [p.raw for p in got] == messages
    # The mbox is exactly the separators, the re-quoted messages and their blank lines.
    rebuilt = b"".join(p.separator + b"\n" + quote_mboxrd(p.raw) + p.trailer for p in got)
    assert rebuilt == data


def reference_split(data: bytes, fmt: str = "auto") -> list[tuple[bytes, bytes, bytes, int]]:
    """What ``iter_mbox`` must yield, worked out the plain way with the whole mbox in memory:
    (separator, raw, trailer, end) per message."""
    line_starts = [0, *(m.end() for m in re.finditer(rb"\n", data) if m.end() < len(data))]
    lines = {s: data[s:].split(b"\n", 1)[0] for s in line_starts}

    def separator_at(start: int) -> bool:
        following = start + len(lines[start]) + 1
        return is_separator(lines[start].rstrip(b"\r"), lines[following][:1000] if following in lines else None)

    separators = [s for s in line_starts if data.startswith(b"From ", s) and separator_at(s)]
    rd = fmt == "mboxrd" or (fmt == "auto" and data.startswith(b"From mboxrd@z "))
    out = []
    sep = 0
    while True:
        separator = lines[sep]
        if sep + len(separator) == len(data):  # a separator without a newline at the very end
            return [*out, (separator.rstrip(b"\r"), b"", b"", len(data))]
        start = sep + len(separator) + 1
        search = start
        header_end = blank_line(data, start)[1]
        length = _CONTENT_LENGTH_RE.search(data, start, header_end) if header_end >= 0 and not rd else None
        if length:
            # mboxcl: trusted when it ends at the end, or on a blank line and a separator.
            end = header_end + int(length.group(1))
            for blank in (b"", b"\n", b"\r\n"):
                if data.startswith(blank, end) and (
                    end + len(blank) == len(data) or (blank and end + len(blank) in separators)
                ):
                    search = end + 1
                    break
        next_sep = min((s for s in separators if s >= search), default=None)
        end = len(data) if next_sep is None else next_sep
        raw, trailer = data[start:end], b""
        for blank in (b"\r\n", b"\n"):
            if (next_sep is not None and raw == blank) or raw.endswith(blank * 2):
                raw, trailer = raw[: -len(blank)], blank
                break
        if rd:
            raw = re.sub(rb"^>(>*From )", rb"\1", raw, flags=re.M)
        out.append((separator.rstrip(b"\r"), raw, trailer, end))
        if next_sep is None:
            return out
        sep = next_sep


_tricky_line = st.one_of(
    st.sampled_from(
        [
            b"From here on",
            b"From what I can see, 1 Jul 1999 06:06:56 -0400",
            b">From there",
            b">>From x",
            b"From: x",
            b"Subject: y",
            b"",
            b"\r",
            b"From a@b Mon Jan 12 10:00:00 2009",
            b"From mboxrd@z Thu Jan  1 00:00:00 1970",
            b"From ann@example.org Thu, 1 Jul 1999 06:06:56 -0400 (EDT)",
            b"From bob at example.org 2 Jul 99 10:00 GMT",
            b"Content-Length: 0",
            b"Content-Length: 12",
        ]
    ),
    st.integers(0, 80).map(lambda n: b"Content-Length: %d" % n),
    st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")),
)


_SEPARATORS = [
    b"From mboxrd@z Thu Jan  1 00:00:00 1970",
    b"From a@b Mon Jan 12 10:00:00 2009",
    b"From ann@example.org Thu, 1 Jul 1999 06:06:56 -0400 (EDT)",
]


@st.composite
def _messages(draw: st.DrawFn) -> bytes:
    """One mbox entry: a separator, header lines, maybe a Content-Length (right, or off by
    a little), a body of tricky lines, the writer's blank line, all with random line ends."""
    eol = draw(st.sampled_from([b"\n", b"\r\n"]))
    headers = draw(st.lists(_tricky_line, max_size=4))
    body = eol.join(draw(st.lists(_tricky_line, max_size=12))) + draw(st.sampled_from([b"", eol]))
    length = draw(st.sampled_from([None, 0, 0, 0, -1, 1, 2, -2]))
    if length is not None:
        headers.append(b"Content-Length: %d" % (len(body) + length))
    head = b"".join(line + eol for line in [draw(st.sampled_from(_SEPARATORS)), b"Date: x", *headers])
    return head + eol + body + draw(st.sampled_from([b"", eol]))


@settings(max_examples=400, deadline=None)
@given(
    entries=st.lists(_messages(), min_size=1, max_size=6),
    ending=st.sampled_from([b"", b"\n", b"\n\n", b"\r\n\r\n"]),
    fmt=st.sampled_from(["auto", "mboxo", "mboxrd"]),
    chunk=st.sampled_from([1, 2, 3, 7, 64, 1 << 20]),
)
def test_reader_splits_like_the_plain_reference_at_any_read_size(
    entries: list[bytes], ending: bytes, fmt: str, chunk: int
) -> None:
    # The reader sees the stream a chunk at a time: every separator, Content-Length and
    # blank line may straddle a chunk boundary. Output must not depend on where they fall.
    data = b"".join(entries) + ending
    with mock.patch.object(mbox, "_CHUNK", chunk):
        got = [(p.separator, p.raw, p.trailer, p.end) for p in iter_mbox(io.BytesIO(data), fmt)]  # type: ignore[arg-type]
    assert got == reference_split(data, fmt)
    assert all(type(part) is bytes for parts in got for part in parts[:3])
