from listlib.message import decode_header_value, parse_date, parse_message, split_message

from ..support.helpers import make_message


def test_facts_of_a_plain_message() -> None:
    facts = parse_message(
        make_message(
            extra={
                "In-Reply-To": "<parent@example.org>",
                "References": "<root@example.org>\n <parent@example.org>",
                "List-Id": "Dev talk <dev.lists.example.org>",
                "Cc": "Bob <BOB@example.org>, carol@example.org",
            }
        )
    )
    assert facts.has_headers
    assert facts.message_id == "m1@example.org"
    assert facts.in_reply_to == "parent@example.org"
    assert facts.references == ("root@example.org", "parent@example.org")
    assert facts.list_ids == ("dev.lists.example.org",)
    assert facts.from_name == "Ann Example" and facts.from_addr == "ann@example.org"
    assert set(facts.recipients) == {"dev@lists.example.org", "bob@example.org", "carol@example.org"}
    assert facts.date == 1715941800


def test_junky_in_reply_to_takes_the_last_id() -> None:
    raw = make_message(extra={"In-Reply-To": 'Your message of "Mon, 1 Jan 2001" <junk@x> <real@example.org>'})
    assert parse_message(raw).in_reply_to == "real@example.org"


def test_rfc2047_subject_and_names_are_decoded_even_when_broken() -> None:
    assert decode_header_value(b"=?UTF-8?Q?Gr=C3=BC=C3=9Fe?= aus  Berlin") == "Grüße aus Berlin"
    assert decode_header_value(b"=?non-existing-codec?Q?abc?=") == "abc"  # unknown charset: UTF-8, else cp1252
    assert decode_header_value(b"caf\xe9") == "café"  # unlabelled 8-bit treated as cp1252


def test_broken_encoded_words_decode_without_raising() -> None:
    assert decode_header_value(b"=?utf-8?b?a?=") == ""  # one base64 character carries no byte
    assert decode_header_value(b"=?utf-8?b?SGVsbG8?=") == "Hello"  # padding missing
    assert decode_header_value(b"=?utf-8?q?=E2=82?= ok") == "\ufffd ok"  # truncated UTF-8
    assert decode_header_value(b"=?zlib?q?abc?=") == "abc"  # not a charset


def test_a_character_split_across_two_encoded_words_survives() -> None:
    # "\u4e2d\u6587" as UTF-8 is e4 b8 ad e6 96 87; the break falls inside the second character.
    assert decode_header_value(b"=?UTF-8?B?5Lit5g==?=\n =?UTF-8?B?loc=?=") == "\u4e2d\u6587"
    assert decode_header_value(b"=?UTF-8?B?5Lit?=\n =?UTF-8?B?5paH?=") == "\u4e2d\u6587"
    assert decode_header_value(b"=?gb2312?B?1tDOxA==?=") == "\u4e2d\u6587"


def test_pipermail_obfuscated_sender() -> None:
    raw = b"From: andrew-twisted at puzzling.org (Andrew Bennetts)\nSubject: x\n\nbody\n"
    facts = parse_message(raw)
    assert facts.from_addr == "andrew-twisted@puzzling.org"
    assert facts.from_name == "Andrew Bennetts"


def test_split_is_lenient_about_leading_blank_lines_and_non_header_lines() -> None:
    assert split_message(b"   \n\nFrom: a\nSubject: b\n\nbody") == (b"From: a\nSubject: b\n", b"body")
    assert split_message(b"From: a\nthis is body\n") == (b"From: a\n", b"this is body\n")
    assert split_message(b"From: a\r\nX: y\r\n\r\nbody\r\n") == (b"From: a\r\nX: y\r\n", b"body\r\n")
    header, _body = split_message(b"Send Ppp mailing list submissions to\n\tppp@zzz.org\n")
    assert header == b""
    assert not parse_message(b"Send Ppp mailing list submissions to\n\nbody").has_headers


def test_dates_with_absurd_offsets_and_years() -> None:
    assert parse_date("Tue, 1 Oct 2002 15:41:07 +1000") == 1033450867
    assert parse_date("Tue, 1 Oct 2002 15:41:07 +9900") == 1033486867  # offset ignored
    assert parse_date("Mon, 1 Jan 0101 00:00:00 +0000") is None
    assert parse_date("not a date") is None


def test_copies_of_one_post_share_vitals_across_mangling() -> None:
    original = make_message(body="J\u00fcrgen wrote the patch.\nFrom here on it works.\n")
    mangled = make_message(body="J?rgen  wrote the patch.\n>From here on it works.\n\n")
    assert parse_message(original).vitals == parse_message(mangled).vitals
    assert parse_message(original).vitals != parse_message(make_message(body="Something else")).vitals


def test_never_raises_on_garbage() -> None:
    for raw in (b"", b"\x00\xff" * 100, b":\n:\n", b"From: \n\n", b"Date: 99 Foo 99999\n\n", b"Subject: =?x?q?\n\n"):
        parse_message(raw)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_header_line = st.one_of(
    st.builds(
        lambda n, v: n + b": " + v,
        st.sampled_from(
            [
                b"From",
                b"Subject",
                b"Date",
                b"Message-ID",
                b"References",
                b"In-Reply-To",
                b"To",
                b"List-Id",
                b"Received",
                b"X-Junk",
            ]
        ),
        st.binary(max_size=60),
    ),
    st.binary(max_size=40),
    st.just(b"\tcontinued"),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_header_line, max_size=12), st.binary(max_size=200))
def test_parse_message_never_raises_and_is_deterministic(lines: list[bytes], body: bytes) -> None:
    raw = b"\n".join(lines) + b"\n\n" + body
    first = parse_message(raw)
    assert first == parse_message(raw)
    header, rest = split_message(raw)
    assert raw.endswith(rest) and len(header) + len(rest) <= len(raw)


def test_received_date_is_the_newest_received_that_has_one() -> None:
    raw = make_message(
        date=None,
        extra={
            "Received": "by localhost (no date here)",
            "X-Other": "x",
        },
    ).replace(
        b"X-Other: x\n",
        b"Received: from a by b; Tue, 9 Dec 2025 14:03:11 +0000\n"
        b"Received: from c by d; Mon, 8 Dec 2025 10:00:00 +0000\n",
    )
    assert parse_message(raw).received_date == 1765288991


def test_requests_not_to_be_archived_are_recognised() -> None:
    def facts(header: str) -> bool:
        return parse_message(f"From: a@b.c\n{header}\nSubject: s\n\nbody\n".encode()).no_archive

    assert facts("X-No-Archive: yes")
    assert facts("x-no-archive: Yes, please")
    assert facts("Archive: no")
    assert facts("Archive: no; reason=private")
    assert not facts("Archive: yes")
    assert not facts("X-No-Archive: no")
    assert not facts("X-Archive: no")
