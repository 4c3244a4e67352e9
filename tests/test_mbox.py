import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from listlib.filers.mbox import is_separator, iter_mbox, quote_mboxrd, separator_date

from .conftest import early_pipermail, make_message, mboxrd


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
