"""The on-disk outbound queue: queueing once, journal replay, torn lines, stage moves, recovery, damage."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from listlib.delivery.queue import NewPost, Outbound

from ..support.delivery_site import DAMAGES


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


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_post_is_read_with_its_damage_and_isolated_in_failed(tmp_path: Path, damage: str) -> None:
    kind, harm = DAMAGES[damage]
    queue = Outbound(tmp_path / "queue").open()
    queue.enqueue([new_post("0000000A"), new_post("0000000B")])
    harm(tmp_path / "queue" / "new" / "0000000A")
    before = {p.name: p.read_bytes() for p in (tmp_path / "queue" / "new" / "0000000A").iterdir()}
    damaged, healthy = queue.iter_stage("new", repair=True)
    assert healthy.damage is None and healthy.message() == new_post().data
    if damage == "altered message.eml":  # same size: found when the bytes are read to be sent
        assert damaged.damage is None and damaged.message() is None
    assert damaged.damage is not None and damaged.damage.kind == kind, damaged.damage
    assert damaged.message() is None, "never the bytes of a damaged post"
    assert {p.name: p.read_bytes() for p in damaged.path.iterdir()} == before, "a damaged post is left as found"
    queue.isolate(damaged, 2000.0)
    assert queue.find("0000000A") == "failed"
    record = json.loads((tmp_path / "queue" / "failed" / "0000000A" / "damage.json").read_bytes())
    assert (record["kind"], record["reason"], record["at"]) == (kind, damaged.damage.reason, 2000.0)
    [again] = Outbound(tmp_path / "queue").iter_stage("failed")
    assert again.damage == damaged.damage and again.to_dict()["damage"] == {"kind": kind, "reason": record["reason"]}
    queue.remove(again)  # what 'listlib deliver --drop' does
    assert queue.find("0000000A") is None and "0000000A" in queue.sent_ids()


def test_the_message_is_checked_against_the_size_and_hash_recorded_at_queueing(tmp_path: Path) -> None:
    queue = Outbound(tmp_path / "queue").open()
    queue.enqueue([new_post("0000000A"), new_post("0000000B")])
    folder = tmp_path / "queue" / "new"
    data = new_post().data
    meta = json.loads((folder / "0000000A" / "post.json").read_bytes())
    assert (meta["version"], meta["size"], meta["sha256"]) == (2, len(data), hashlib.sha256(data).hexdigest())
    (folder / "0000000A" / "message.eml").write_bytes(data.replace(b"body", b"bodY"))
    post = queue.load("new", "0000000A")
    assert post.damage is None, "same size: only the hash tells"
    assert post.message() is None and post.damage is not None and post.damage.kind == "message-mismatch"
    assert "sha256" in post.damage.reason
    # A post queued by an older listlib has no size or hash: it is sent as before.
    old = {k: v for k, v in meta.items() if k not in ("size", "sha256")} | {"id": "0000000B", "version": 1}
    (folder / "0000000B" / "post.json").write_text(json.dumps(old))
    post = queue.load("new", "0000000B")
    assert post.damage is None and post.message() == data
