"""The on-disk outbound queue: queueing once, journal replay, torn lines, stage moves, recovery."""

from __future__ import annotations

from pathlib import Path

from listlib.delivery.queue import NewPost, Outbound


def new_post(post_id: str = "0000000A", held: str | None = None) -> NewPost:
    return NewPost(
        id=post_id,
        slug="dev",
        data=b"Subject: x\r\n\r\nbody\r\n",
        sender="dev-bounces@lists.example.org",
        recipients=("a@x.org", "b@x.org", "c@x.org"),
        message_id="m@x",
        poster="a@x.org",
        queued_at=1000.0,
        held_reason=held,
    )


def test_a_post_is_queued_once_even_after_it_left_the_queue(tmp_path: Path) -> None:
    queue = Outbound(tmp_path / "queue").open()
    assert queue.enqueue([new_post(), new_post()]) == ["0000000A"]
    assert queue.enqueue([new_post()]) == []
    post = queue.load("new", "0000000A")
    assert post.pending() == ["a@x.org", "b@x.org", "c@x.org"] and post.message() == new_post().data
    queue.remove(post)
    assert queue.find("0000000A") is None
    assert Outbound(tmp_path / "queue").open().enqueue([new_post()]) == [], "sent.log remembers it"
    assert queue.enqueue([new_post("0000000B", held="not a subscriber")]) == ["0000000B"]
    assert queue.find("0000000B") == "held"


def test_the_journal_replays_outcomes_and_a_torn_last_line_is_cut_off(tmp_path: Path) -> None:
    queue = Outbound(tmp_path / "queue").open()
    queue.enqueue([new_post()])
    post = queue.load("new", "0000000A")
    queue.record(post, [{"r": "a@x.org", "s": "done"}, {"r": "b@x.org", "s": "failed", "reply": "550 no"}])
    queue.record(post, [{"r": "c@x.org", "s": "temp", "reply": "450 later"}, {"attempt": 1, "at": 5, "next": 305}])
    journal = post.path / "journal"
    with journal.open("ab") as f:
        f.write(b'{"r":"c@x.org","s":"do')  # a crash in the middle of a mark
    again = queue.load("new", "0000000A", repair=True)
    assert again.state == {"a@x.org": "done", "b@x.org": "failed", "c@x.org": "todo"}
    assert again.replies == {"b@x.org": "550 no", "c@x.org": "450 later"}
    assert (again.attempts, again.next_try) == (1, 305.0)
    assert journal.read_bytes().endswith(b"}\n"), "the torn line is gone"
    queue.record(again, [{"r": "c@x.org", "s": "done"}])
    assert queue.load("new", "0000000A").pending() == []


def test_stage_moves_and_recovery_of_a_post_recorded_as_sent(tmp_path: Path) -> None:
    queue = Outbound(tmp_path / "queue").open()
    queue.enqueue([new_post(), new_post("0000000B")])
    post = queue.load("new", "0000000A")
    queue.move(post, "retry")
    assert queue.find("0000000A") == "retry" and queue.load("retry", "0000000A").pending()
    # A run killed after recording the post as sent, before deleting its folder:
    (tmp_path / "queue" / "sent.log").write_text("0000000B\n")
    assert queue.recover() == ["0000000B"]
    assert queue.find("0000000B") is None and queue.find("0000000A") == "retry"
