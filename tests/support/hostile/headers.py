"""Header fields that attack pages, feeds and terminals: control characters raw and hidden in
RFC 2047 encoded words, a 2 MB Subject, raw 8-bit bytes, bogus charsets, absurd dates,
missing fields. Used by test_controls.py and by the hostile corpus."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

from ..helpers import make_message

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
LONG_SUBJECT = "spam " * 400_000  # 2 MB
OSC52 = "\x1b]52;c;aGVsbG8=\x07"  # writes the clipboard
CLEAR = "\x1b[2J\x1b[H"
BIDI_OVERRIDE = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: "txt.exe" reads as "exe.txt"


def control_header_messages() -> list[bytes]:
    """Subjects, names and Message-IDs carrying controls, raw and RFC 2047-encoded, and a 2 MB subject.

    11 messages of March 2024 in list dev; two share the Message-ID ``<twin\\x1b[2J@example.org>``
    with different subjects (a collision), one replies to the first."""
    subjects = [
        "hello \x1b[31mworld\x1b[0m",
        "nul\x00byte",
        "bell\x07 and del\x7f",
        "=?utf-8?q?c1=C2=85=C2=9B_and_ffff=EF=BF=BF_fffe=EF=BF=BE?=",
        "=?utf-7?q?lone_surrogate_+2AA-?=",
        "=?utf-8?b?" + base64.b64encode(b"encoded \x1b]0;title\x07 esc").decode() + "?=",
        LONG_SUBJECT,
        f"osc {OSC52} clear {CLEAR}",
    ]
    senders = [
        "=?utf-8?q?Evil=1B=5B2J_Name?= <evil@example.org>",
        '"Bell\x07 Name" <bell@example.org>',
        "Plain Name <plain\x01x@example.org>",
    ]
    messages = [
        make_message(
            subject,
            f"Body {n}\n",
            message_id=f"<h{n}\x01\x1b[2J@example.org>",
            sender=senders[n % len(senders)],
            date=T0 + timedelta(days=n),
        )
        for n, subject in enumerate(subjects)
    ]
    # Two messages sharing a Message-ID get a lookup page that lists both.
    messages.append(make_message("twin\x1b one", message_id="<twin\x1b[2J@example.org>", date=T0 + timedelta(hours=1)))
    messages.append(make_message("twin\x1b two", message_id="<twin\x1b[2J@example.org>", date=T0 + timedelta(hours=2)))
    # A reply, so the thread page shows a changed subject inside the thread.
    messages.append(
        make_message(
            "Re: changed \x1b[5m subject\x07",
            message_id="<reply@example.org>",
            date=T0 + timedelta(days=20),
            extra={"In-Reply-To": "<h0\x01\x1b[2J@example.org>"},
        )
    )
    return messages


def encoded_word(text: str, charset: str = "utf-8") -> str:
    """``text`` as one RFC 2047 base64 encoded word (whatever it holds)."""
    return f"=?{charset}?b?{base64.b64encode(text.encode(charset, 'surrogatepass')).decode()}?="


def odd_header_messages() -> list[bytes]:
    """Raw 8-bit and noncharacter bytes in headers, bidi overrides, bogus charsets (header and
    body), encoded words hiding C1 and bidi controls, and absurd or missing dates.

    10 messages in list dev, Message-IDs ``<odd-N@example.org>``, body word ``oddheaders``."""
    raw_headers = [
        # Latin-1 bytes, UTF-8 C1 controls, U+FFFE/U+FFFF and a bidi override, all unencoded.
        b"Subject: caf\xe9 \xc2\x85\xc2\x9b \xef\xbf\xbe\xef\xbf\xbf \xe2\x80\xaetxt.exe\n"
        b"From: J\xf6rg \x1b[2J <j@example.org>\n",
        # An encoded word in a charset nobody knows, and one whose bytes are not in its charset.
        b"Subject: =?x-bogus-charset?q?bogus=1B=5B2J?= and =?utf-8?q?=FF=FE=1B=07?=\n",
        # Encoded words hiding a bidi override, DEL and an OSC 52 clipboard write in the name.
        (
            "From: " + encoded_word(f"{BIDI_OVERRIDE}evil\x7f{OSC52}") + " <e@example.org>\nSubject: encoded name\n"
        ).encode(),
    ]
    dates = [
        "Sat, 1 Jan 0000 00:00:00 +0000",
        "Fri, 31 Dec 9999 23:59:59 -2359",
        "Thu, 1 Jan 1970 00:00:00 -9999",
        "Mon, 32 Foo 2024 25:61:61 +0000",
        "yesterday",
    ]
    messages = []
    for n, head in enumerate(raw_headers):
        date = f"Date: Tue, {n + 1} Apr 2024 10:00:00 +0000\n"
        messages.append(
            head
            + date.encode()
            + f"To: dev@lists.example.org\nMessage-ID: <odd-{n}@example.org>\n\noddheaders {n}\n".encode()
        )
    for n, date in enumerate(dates, start=len(raw_headers)):
        # Filed under the import time when the date is unusable: always among a feed's latest entries.
        subject = f"absurd date {date} \x1b[31m\x07\x00 {OSC52}"
        messages.append(make_message(subject, f"oddheaders {n}\n", message_id=f"<odd-{n}@example.org>", date=date))
    # A bogus body charset (a name no codec has) and a charset that cannot decode the bytes.
    messages.append(
        make_message(
            "bogus body charset",
            "oddheaders bogus \x1b[2J\n",
            message_id=f"<odd-{len(messages)}@example.org>",
            extra={"MIME-Version": "1.0", "Content-Type": 'text/plain; charset="x-no-such\x1b[2J"'},
        )
    )
    messages.append(
        make_message(
            "wrong body charset",
            "oddheaders wrong\n",
            message_id=f"<odd-{len(messages)}@example.org>",
            extra={"MIME-Version": "1.0", "Content-Type": "text/plain; charset=utf-7"},
        ).replace(b"oddheaders wrong", b"oddheaders wrong \xff\xfe+2AA- \x80\x9b")
    )
    return messages
