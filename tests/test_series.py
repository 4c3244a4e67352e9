"""Patch series (listlib.series) and their trailers (listlib.trailers), on hand-made threads."""

from __future__ import annotations

from listlib.series import Posting, Series, group_series, link_versions, version_chain, version_label
from listlib.trailers import Reply, collect_reviews, find_trailers, reply_text

from .support.helpers import make_message

ALICE = "alice@example.org"


def posting(call: str, parent: str | None, subject: str, author: str = ALICE, date: int = 0) -> Posting:
    return Posting(call, parent, subject, author, date or int(call.strip("abcdefghijklmnopqrstuvwxyz") or 0), "t")


def test_a_cover_letter_and_its_patches_make_one_series_in_patch_order() -> None:
    thread = [
        posting("c0", None, "[PATCH v2 0/3] md: faster resync"),
        posting("c3", "c0", "[PATCH v2 3/3] md: three"),
        posting("c1", "c0", "[PATCH v2 1/3] md: one"),
        posting("r1", "c1", "Re: [PATCH v2 1/3] md: one", "bob@example.org"),
        posting("c2", "c0", "[PATCH v2 2/3] md: two"),
    ]
    (series,) = group_series(thread)
    assert series.cover == "c0" and series.head == "c0"
    assert series.patches == ((1, "c1"), (2, "c2"), (3, "c3"))
    assert (series.version, series.total, series.title, series.first_title) == (2, 3, "md: faster resync", "md: one")
    assert version_label(series) == "v2"


def test_patches_chained_to_each_other_without_a_cover_letter_are_one_series() -> None:
    thread = [
        posting("c1", None, "[PATCH 1/2] a"),
        posting("c2", "c1", "[PATCH 2/2] b"),
    ]
    (series,) = group_series(thread)
    assert series.head == "c1" and series.cover is None and series.patches == ((1, "c1"), (2, "c2"))


def test_a_new_version_sent_in_the_old_versions_thread_is_a_series_of_its_own() -> None:
    thread = [
        posting("c0", None, "[PATCH 0/2] x"),
        posting("c1", "c0", "[PATCH 1/2] a"),
        posting("c2", "c0", "[PATCH 2/2] b"),
        posting("d0", "c0", "[PATCH v2 0/2] x"),
        posting("d1", "d0", "[PATCH v2 1/2] a"),
        posting("d2", "d0", "[PATCH v2 2/2] b"),
    ]
    first, second = group_series(thread)
    assert first.patches == ((1, "c1"), (2, "c2")) and second.patches == ((1, "d1"), (2, "d2"))


def test_a_cover_letter_takes_its_patches_when_their_count_disagrees() -> None:
    thread = [posting("c0", None, "[PATCH v2 0/7] x"), posting("c1", "c0", "[PATCH v2 1/6] a")]
    (series,) = group_series(thread)
    assert series.patches == ((1, "c1"),)


def test_an_unnumbered_patch_answering_its_empty_cover_letter_is_its_first_patch() -> None:
    (series,) = group_series([posting("c0", None, "[PATCH v7 0/1] x"), posting("c1", "c0", "[PATCH v7] x")])
    assert series.cover == "c0" and series.patches == ((1, "c1"),)


def test_a_version_sent_twice_continues_with_the_posting_the_next_version_follows() -> None:
    v4 = make_series("v4", "t", 4, 10)
    broken = make_series("v5", "t", 5, 20)
    again = make_series("v5again", "t", 5, 21)
    v6 = make_series("v6", "t", 6, 30)
    links = link_versions([v4, broken, again, v6])
    assert links["v5"] == ("v4", None) and links["v5again"] == ("v4", "v6") and links["v6"] == ("v5again", None)
    assert links["v4"] == (None, "v5again")
    assert version_chain("v4", links) == ["v4", "v5again", "v6"]
    resend = make_series("v5r", "t", 5, 22, resend=True)
    assert link_versions([v4, broken, resend])["v5r"] == ("v5", None)  # a RESEND follows its original


def test_replies_and_plain_mail_are_no_series() -> None:
    assert group_series([posting("c1", None, "md: a question"), posting("c2", "c1", "Re: [PATCH] x")]) == []


def make_series(head: str, title: str, version: int, date: int, author: str = ALICE, **more: object) -> Series:
    values: dict[str, object] = dict(
        head=head,
        thread=head,
        title=title,
        author=author,
        date=date,
        version=version,
        rfc=False,
        resend=False,
        tags=(),
        total=1,
        cover=None,
        patches=((1, head),),
    )
    values.update(more)
    return Series(**values)  # type: ignore[arg-type]


def test_versions_of_a_series_link_by_title_and_author_to_the_nearest_earlier_version() -> None:
    series = [
        make_series("a1", "md: fix the thing", 1, 10),
        make_series("a2", "md: Fix  the thing.", 2, 20),
        make_series("a3", "md: fix the thing", 3, 30),
        make_series("other", "md: fix the thing", 2, 25, author="bob@example.org"),
        make_series("unrelated", "md: something else", 2, 26),
    ]
    links = link_versions(series)
    assert links["a1"] == (None, "a2") and links["a2"] == ("a1", "a3") and links["a3"] == ("a2", None)
    assert links["other"] == (None, None) and links["unrelated"] == (None, None)
    assert version_chain("a2", links) == ["a1", "a2", "a3"]


def test_a_version_finds_its_predecessor_by_the_first_patch_title_when_the_cover_letter_came_later() -> None:
    v1 = make_series("p1", "md: fix x", 1, 10)
    v2 = make_series("p2", "fixes for x", 2, 20, cover="p2", first_title="md: fix x", total=2)
    assert link_versions([v1, v2])["p2"] == ("p1", None)


def test_an_old_series_reusing_a_title_is_no_later_version_of_a_newer_one() -> None:
    links = link_versions([make_series("new", "t", 1, 50), make_series("old", "t", 2, 10)])
    assert links["new"] == (None, None) and links["old"] == (None, None)


def test_an_rfc_comes_before_the_patch_of_the_same_version() -> None:
    links = link_versions([make_series("rfc", "t", 1, 10, rfc=True), make_series("patch", "t", 1, 20)])
    assert links["patch"] == ("rfc", None)


def test_trailers_are_read_like_b4_reads_them() -> None:
    text = (
        "> Reviewed-by: Quoted Person <q@example.org>\n"
        "Looks good.\n\n"
        "Reviewed-by: Bob Reviewer <bob@example.org>\n"
        "Acked-by: Bob Reviewer\n"
        'Fixes: 0123456789ab ("md: broke it")\n'
        "Fixes: not a hash\n"
        "Link: https://example.org/bug\n"
        "Tested-by: Bob Reviewer <bob@example.org> # on x86\n"
        "Cc: someone@example.org\n"
        "-- \nSignature: Bob <bob@example.org>\n"
    )
    assert find_trailers(text) == [
        ("Reviewed-by", "Bob Reviewer <bob@example.org>"),
        ("Fixes", '0123456789ab ("md: broke it")'),
        ("Link", "https://example.org/bug"),
        ("Tested-by", "Bob Reviewer <bob@example.org>"),
    ]


def test_a_reply_applies_to_its_patch_and_a_reply_to_the_cover_letter_to_every_patch() -> None:
    (series,) = group_series(
        [
            posting("c0", None, "[PATCH 0/2] x"),
            posting("c1", "c0", "[PATCH 1/2] a"),
            posting("c2", "c0", "[PATCH 2/2] b"),
        ]
    )
    replies = [
        Reply("r1", "c1", "Bob", "bob@example.org", "Reviewed-by: Bob <bob@example.org>\n"),
        Reply("r2", "r1", "Carol", "carol@example.org", "Tested-by: Carol <carol@example.org>\n"),
        Reply("r3", "c0", "Dave", "dave@example.org", "For the series:\n\nAcked-by: Dave <dave@example.org>\n"),
        Reply("r4", "c2", "Eve", "eve@example.org", "Reviewed-by: Mallory <mallory@example.org>\n"),
    ]
    reviews = collect_reviews(series, replies)
    one = [(t.name, t.value) for t in reviews["c1"].trailers]
    two = [(t.name, t.value) for t in reviews["c2"].trailers]
    assert one == [
        ("Reviewed-by", "Bob <bob@example.org>"),
        ("Tested-by", "Carol <carol@example.org>"),
        ("Acked-by", "Dave <dave@example.org>"),
    ]
    assert two == [("Acked-by", "Dave <dave@example.org>")]  # Eve cannot review for Mallory
    assert reviews["c1"].replies == ("r1", "r2", "r3") and reviews["c1"].state == "reviewed"
    assert reviews["c2"].replies == ("r3", "r4")


def test_a_patch_without_replies_is_new_and_one_with_replies_but_no_trailer_discussed() -> None:
    (series,) = group_series([posting("c1", None, "[PATCH 1/2] a"), posting("c2", "c1", "[PATCH 2/2] b")])
    reviews = collect_reviews(series, [Reply("r", "c2", "Bob", "bob@example.org", "Why?\n")])
    assert reviews["c1"].state == "new" and reviews["c2"].state == "discussed"


def test_reply_text_reads_the_first_plain_part_of_mime_mail() -> None:
    plain = make_message(body="Reviewed-by: A <a@example.org>\n")
    assert "Reviewed-by: A <a@example.org>" in reply_text(plain)
    mime = (
        b"From: a@example.org\r\nSubject: Re: x\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n'
        b"--b\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
        b"Acked-by: J=C3=BCrgen <j@example.org>\r\n--b--\r\n"
    )
    assert reply_text(mime).strip() == "Acked-by: J\u00fcrgen <j@example.org>"
