"""The pure parts of delivery: the bytes sent, who may post, VERP and bounce recognition."""

from __future__ import annotations

from pathlib import Path

import pytest

from listlib.config import ListDelivery
from listlib.delivery.bounce import decode_verp, find_bounces, verp_sender
from listlib.delivery.compose import compose_post
from listlib.delivery.policy import decide, load_subscribers
from listlib.errors import DeliveryError

DELIVERY = ListDelivery(
    post_address="dev@lists.example.org",
    list_id="dev.lists.example.org",
    bounces_address="dev-bounces@lists.example.org",
    request_address="dev-request@lists.example.org",
    subscribers=("ann@example.com", "bob@example.net"),
)
RAW = (
    b"From: Ann <ann@example.com>\nSubject: Hello\n  folded on\nList-Id: other\n list <up.example>\n"
    b"Message-ID: <m@x>\nX-Odd: \xe9\n\nBody line\n.dot\n\n"
)


def compose(raw: bytes = RAW, **changes: object) -> bytes:
    delivery = ListDelivery(**{**DELIVERY.__dict__, **changes})  # type: ignore[arg-type]
    return compose_post(raw, delivery, "Dev, the list", "https://x.org/dev/index.html", "https://x.org/dev/a.html")


def test_list_headers_are_prepended_and_everything_else_is_kept_byte_for_byte() -> None:
    out = compose()
    head, _, body = out.partition(b"\r\n\r\n")
    assert body == b"Body line\r\n.dot\r\n\r\n"
    assert head.split(b"\r\n") == [
        b'List-Id: "Dev, the list" <dev.lists.example.org>',
        b"List-Post: <mailto:dev@lists.example.org>",
        b"List-Archive: <https://x.org/dev/index.html>",
        b"List-Subscribe: <mailto:dev-request@lists.example.org?subject=subscribe>",
        b"List-Unsubscribe: <mailto:dev-request@lists.example.org?subject=unsubscribe>",
        b"Archived-At: <https://x.org/dev/a.html>",
        b"Precedence: list",
        b"X-Loop: dev@lists.example.org",
        b"From: Ann <ann@example.com>",
        b"Subject: Hello",
        b"  folded on",
        b"Message-ID: <m@x>",
        b"X-Odd: \xe9",
    ]
    assert b"\n" not in out.replace(b"\r\n", b""), "CRLF line ends only"


def test_subject_prefix_is_added_once_and_footer_only_to_plain_single_part_text() -> None:
    out = compose(subject_prefix="[dev]", footer="Unsubscribe: dev-request@lists.example.org")
    assert b"\r\nSubject: [dev] Hello\r\n  folded on\r\n" in out
    assert out.endswith(b".dot\r\n\r\n-- \r\nUnsubscribe: dev-request@lists.example.org\r\n")
    reply = RAW.replace(b"Subject: Hello", b"Subject: Re: [dev] Hello")
    assert b"Subject: Re: [dev] Hello\r\n" in compose(reply, subject_prefix="[dev]")
    html = RAW.replace(b"X-Odd", b"Content-Type: text/html; charset=utf-8\nX-Odd")
    assert compose(html, footer="F").endswith(b".dot\r\n\r\n")
    qp = RAW.replace(b"X-Odd", b"Content-Transfer-Encoding: base64\nX-Odd")
    assert compose(qp, footer="F").endswith(b".dot\r\n\r\n")


def test_a_message_without_a_body_still_gets_its_headers() -> None:
    out = compose(b"Subject: only a header\n")
    assert out.endswith(b"X-Loop: dev@lists.example.org\r\nSubject: only a header\r\n\r\n")


@pytest.mark.parametrize(
    ("poster", "list_ids", "loops", "expected"),
    [
        ("ann@example.com", (), (), "queue"),
        ("ANN@example.com", (), (), "queue"),
        ("eve@example.org", (), (), "hold"),
        ("ann@example.com", ("dev.lists.example.org",), (), "loop"),
        ("ann@example.com", ("other.example",), ("dev@lists.example.org",), "loop"),
        ("dev-bounces@lists.example.org", (), (), "loop"),
        ("dev-bounces+ann=example.com@lists.example.org", (), (), "loop"),
        ("dev-request@lists.example.org", (), (), "loop"),
    ],
)
def test_decide(poster: str, list_ids: tuple[str, ...], loops: tuple[str, ...], expected: str) -> None:
    assert decide(DELIVERY, DELIVERY.subscribers, poster, list_ids, loops).action == expected


def test_anyone_may_post_and_the_poster_is_left_out_when_asked() -> None:
    delivery = ListDelivery(**{**DELIVERY.__dict__, "posters": "anyone", "exclude_poster": True})
    decision = decide(delivery, DELIVERY.subscribers, "Bob@example.net", (), ())
    assert (decision.action, decision.recipients) == ("queue", ("ann@example.com",))


def test_subscribers_file_is_read_with_comments_and_each_address_once(tmp_path: Path) -> None:
    path = tmp_path / "subs.txt"
    path.write_text("# the list\nCarol@Example.org  # our carol\n\nann@example.com\n")
    delivery = ListDelivery(**{**DELIVERY.__dict__, "subscribers_file": path})
    assert load_subscribers("dev", delivery) == ("ann@example.com", "bob@example.net", "carol@example.org")
    path.unlink()
    with pytest.raises(DeliveryError, match=r"subscribers_file .* cannot be read"):
        load_subscribers("dev", delivery)


def test_verp_round_trip() -> None:
    sender = verp_sender("dev-bounces@lists.example.org", "ann.o=k@example.com")
    assert sender == "dev-bounces+ann.o=k=example.com@lists.example.org"
    assert decode_verp(sender.upper(), "dev-bounces@lists.example.org") == "ann.o=k@example.com"
    assert decode_verp("dev-bounces@lists.example.org", "dev-bounces@lists.example.org") is None
    assert decode_verp("other+ann=example.com@lists.example.org", "dev-bounces@lists.example.org") is None


def test_bounces_are_found_by_verp_address_or_delivery_status_notification() -> None:
    lists = [("dev", DELIVERY)]
    verp = b"Delivered-To: dev-bounces+bob=example.net@lists.example.org\nSubject: x\n\nbody\n"
    assert [(b.slug, b.address, b.how) for b in find_bounces(verp, lists)] == [("dev", "bob@example.net", "verp")]
    dsn = (
        b"To: dev-bounces@lists.example.org\nSubject: x\n\n"
        b"Final-Recipient: rfc822; <ann@example.com>\r\nAction: failed\n"
    )
    assert [b.address for b in find_bounces(dsn, lists)] == ["ann@example.com"]
    delayed = dsn.replace(b"Action: failed", b"Action: delayed")
    assert find_bounces(delayed, lists) == []
    post = b"To: dev@lists.example.org\nSubject: about bounces\n\nFinal-Recipient: rfc822; a@b.c\nAction: failed\n"
    assert find_bounces(post, lists) == []


def test_no_archived_at_for_a_post_that_asked_not_to_be_archived() -> None:
    delivery = ListDelivery(**DELIVERY.__dict__)
    out = compose_post(RAW, delivery, "dev", "https://x.org/dev/index.html", None)
    assert b"Archived-At" not in out and b"List-Archive: <https://x.org/dev/index.html>\r\n" in out
