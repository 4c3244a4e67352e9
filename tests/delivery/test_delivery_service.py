"""Delivery driven from a site's config, in this process: the intake, a delivery run,
the queue listing and the bounce report that the commands print."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from listlib.config import Config, load_config
from listlib.delivery.bounce import Bounce, BounceLog, bounce_report
from listlib.delivery.intake import open_intake
from listlib.delivery.queue import NewPost
from listlib.delivery.runner import ProgressCallback
from listlib.delivery.service import deliver_queue, open_outbound, queue_listing
from listlib.errors import DeliveryError
from listlib.filing import file_sources
from listlib.store.core import Store

from ..support.delivery_site import NOW, make_site, post
from ..support.smtpserver import SmtpServer

NO_DELIVERY = """\
[site]
title = "Test archive"
base_url = "https://lists.example.org/archive/"

[lists.dev]
addresses = ["dev@lists.example.org"]
"""


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with SmtpServer() as server:
        yield server


def site_config(root: Path, server: SmtpServer | int, subscribers: list[str], **options: object) -> Config:
    return load_config(make_site(root, server, subscribers, **options) / "listlib.toml")


def no_delivery_config(root: Path) -> Config:
    root.mkdir(parents=True)
    (root / "listlib.toml").write_text(NO_DELIVERY)
    return load_config(root / "listlib.toml")


def new_post(post_id: str, *, recipients: tuple[str, ...], held: str | None = None) -> NewPost:
    return NewPost(
        id=post_id,
        slug="dev",
        data=f"Subject: {post_id}\r\nMessage-ID: <{post_id}@x>\r\n\r\nbody\r\n".encode(),
        sender="dev-bounces@lists.example.org",
        recipients=recipients,
        message_id=f"{post_id}@x",
        poster="ok-poster@example.org",
        queued_at=NOW,
        held_reason=held,
    )


def test_open_intake_touches_nothing_when_no_list_delivers(tmp_path: Path) -> None:
    config = no_delivery_config(tmp_path / "site")
    with Store(config.site.content_dir).open() as store:
        assert open_intake(config, store, clock=lambda: NOW) is None
    assert config.site.queue_dir is not None and not config.site.queue_dir.exists()


def test_open_intake_queues_filed_posts_at_the_time_of_the_clock_passed_in(tmp_path: Path) -> None:
    config = site_config(tmp_path / "site", 25, ["ok-poster@example.org", "ann@example.com"])
    (tmp_path / "one.eml").write_bytes(post(1))
    with Store(config.site.content_dir).open() as store:
        intake = open_intake(config, store, clock=lambda: NOW + 5)
        assert intake is not None
        file_sources(store, config.lists, [tmp_path / "one.eml"], parallel=False, after_filing=intake)
    assert len(intake.report.queued) == 1
    [queued] = queue_listing(config).posts
    assert (queued.stage, queued.queued_at, queued.id) == ("new", NOW + 5, intake.report.queued[0])


def test_deliver_queue_sends_the_due_posts_and_shows_progress_only_while_sending(
    tmp_path: Path, smtp: SmtpServer
) -> None:
    config = site_config(tmp_path / "site", smtp, ["ann@example.com"])
    open_outbound(config).enqueue(
        [
            new_post("0000000A", recipients=("ann@example.com", "bob@example.com")),
            new_post("0000000B", recipients=("ann@example.com",)),
        ]
    )
    seen: list[tuple[int, int, int]] = []
    entered: list[str] = []

    @contextmanager
    def progress() -> Iterator[ProgressCallback]:
        entered.append("bar")
        yield lambda done, total, messages: seen.append((done, total, messages))

    report = deliver_queue(config, environ={}, wait=0, clock=lambda: NOW, progress=progress)
    assert (report.posts, report.delivered, report.completed) == (2, 3, ["0000000A", "0000000B"])
    assert entered == ["bar"] and seen[-1] == (3, 3, 3)
    assert smtp.handler.received == Counter({"ann@example.com": 2, "bob@example.com": 1})
    assert queue_listing(config).posts == ()


def test_deliver_queue_retries_by_the_clock_passed_in(tmp_path: Path, smtp: SmtpServer) -> None:
    config = site_config(tmp_path / "site", smtp, ["ann@example.com"])
    open_outbound(config).enqueue([new_post("0000000A", recipients=("temp1-x@example.net",))])
    first = deliver_queue(config, environ={}, wait=0, clock=lambda: NOW)
    assert first.to_retry == ["0000000A"]
    [waiting] = queue_listing(config).posts
    assert waiting.next_try == NOW + 5 * 60, "retry_first_minutes after the clock's now, not the real time"
    assert deliver_queue(config, environ={}, wait=0, clock=lambda: NOW + 60).not_due == 1
    assert deliver_queue(config, environ={}, wait=0, clock=lambda: NOW + 5 * 60).completed == ["0000000A"]


def test_deliver_queue_reads_the_password_from_the_environ_passed_in_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = make_site(tmp_path / "site", 25, ["ann@example.com"])
    toml = site / "listlib.toml"
    toml.write_text(
        toml.read_text().replace("[smtp]\n", '[smtp]\nuser = "list"\npassword_env = "LISTLIB_TEST_SMTP_PW"\n')
    )
    config = load_config(toml)
    monkeypatch.setenv("LISTLIB_TEST_SMTP_PW", "in the process environment")
    with pytest.raises(DeliveryError, match=r"LISTLIB_TEST_SMTP_PW .* is not set"):
        deliver_queue(config, environ={}, wait=0)


def test_deliver_queue_is_skipped_as_busy_while_another_run_holds_the_queue(tmp_path: Path, smtp: SmtpServer) -> None:
    config = site_config(tmp_path / "site", smtp, ["ann@example.com"])
    outbound = open_outbound(config)
    outbound.enqueue([new_post("0000000A", recipients=("ann@example.com",))])

    def progress() -> AbstractContextManager[ProgressCallback]:
        raise AssertionError("a skipped run shows no progress bar")

    with outbound.running(0):
        report = deliver_queue(config, environ={}, wait=0, progress=progress)
    assert report.busy and report.summary() == "deliver: another 'listlib deliver' is still running; skipped"
    assert smtp.handler.transactions == 0 and [p.id for p in queue_listing(config).posts] == ["0000000A"]


def test_deliver_queue_without_an_smtp_table_says_so(tmp_path: Path) -> None:
    config = no_delivery_config(tmp_path / "site")
    with pytest.raises(DeliveryError, match=r"listlib\.toml: no \[smtp\] table: 'listlib deliver' needs a server"):
        deliver_queue(config, environ={}, wait=0)


def test_queue_listing_of_a_site_without_a_queue_is_empty_and_creates_nothing(tmp_path: Path) -> None:
    config = no_delivery_config(tmp_path / "site")
    listing = queue_listing(config)
    assert listing.to_list() == []
    assert list(listing.lines()) == ["0 posts queued: 0 new, 0 retry, 0 failed, 0 held"]
    assert config.site.queue_dir is not None and not config.site.queue_dir.exists()


def test_queue_listing_shows_each_post_by_stage_with_its_replies_and_next_try(tmp_path: Path) -> None:
    config = site_config(tmp_path / "site", 25, ["ann@example.com"])
    outbound = open_outbound(config)
    outbound.enqueue(
        [
            new_post("0000000A", recipients=("ann@example.com", "bob@example.com", "cy@example.com")),
            new_post("0000000B", recipients=("ann@example.com",)),
            new_post("0000000C", recipients=("ann@example.com",), held="stranger@example.com is not a subscriber"),
        ]
    )
    tried = outbound.load("new", "0000000A")
    outbound.record(
        tried,
        [
            {"r": "ann@example.com", "s": "done"},
            {"r": "bob@example.com", "s": "failed", "reply": "550 no such user"},
            {"r": "cy@example.com", "s": "temp", "reply": "450 busy"},
            {"attempt": 1, "at": NOW, "next": NOW + 300},
        ],
    )
    outbound.move(tried, "retry")
    listing = queue_listing(config)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(NOW + 300))
    assert list(listing.lines()) == [
        "new     0000000B  dev  0000000B@x  1 recipient: 0 done, 0 failed, 1 pending",
        f"retry   0000000A  dev  0000000A@x  3 recipients: 1 done, 1 failed, 1 pending; try 2 at {when}",
        "        failed  bob@example.com: 550 no such user",
        "        pending cy@example.com: 450 busy",
        "held    0000000C  dev  0000000C@x  1 recipient: 0 done, 0 failed, 1 pending; "
        "held: stranger@example.com is not a subscriber",
        "3 posts queued: 1 new, 1 retry, 0 failed, 1 held",
    ]
    assert [(p["id"], p["stage"]) for p in listing.to_list()] == [
        ("0000000B", "new"),
        ("0000000A", "retry"),
        ("0000000C", "held"),
    ]


def test_bounce_report_reads_the_bounces_recorded_in_the_site_queue(tmp_path: Path) -> None:
    config = site_config(tmp_path / "site", 25, ["ann@example.com"])
    assert bounce_report(config) == []
    assert config.site.queue_dir is not None
    BounceLog(config.site.queue_dir).record(
        [
            (Bounce("dev", "ann@example.com", "verp"), "0000000A", NOW),
            (Bounce("dev", "ann@example.com", "dsn"), "0000000B", NOW + 60),
        ]
    )
    assert bounce_report(config) == [
        {"list": "dev", "address": "ann@example.com", "bounces": 2, "first": NOW, "last": NOW + 60}
    ]
    assert bounce_report(config, "announce") == []
