"""A take-down (``listlib remove``) reaches the outbound queue: a post of a removed message
is never sent, and no file under queue/ keeps its bytes, whether ``remove`` deletes the
post itself or, killed before it could, the next ``listlib deliver`` does."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from listlib import stewardship
from listlib.config import load_config
from listlib.delivery.queue import Outbound
from listlib.stewardship import Selector, steward

from ..support.delivery_site import NOW, deliver, import_posts, make_site, post, queue_status
from ..support.helpers import run_listlib, subprocess_env
from ..support.smtpserver import SmtpServer
from ..support.traces import files_holding

SECRET = b"Her phone number is 555-0199 and she lives at 12 Quince Lane."


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with SmtpServer() as server:
        yield server


def _site_with_secret(root: Path, smtp: SmtpServer) -> tuple[Path, str, str]:
    """A site with two posts queued: the first tells a secret; (site, its call, the other's)."""
    site = make_site(root, smtp, ["ok-poster@example.org", "ann@example.com"])
    import_posts(site, post(1, body=SECRET.decode() + "\n"), post(2))
    (site / "incoming").rename(root.parent / f"{root.name}-incoming")  # the import's own copy is not the site's
    [secret, other] = [p["id"] for p in queue_status(site)]
    assert files_holding(site / "queue", [SECRET]), "the post is queued with the secret in it"
    return site, secret, other


def _traces(site: Path) -> list[str]:
    """Files of the store and the queue that hold the secret."""
    return files_holding(site / "content", [SECRET]) + files_holding(site / "queue", [SECRET])


def test_a_post_removed_before_delivery_is_deleted_from_the_queue_and_never_sent(
    tmp_path: Path, smtp: SmtpServer
) -> None:
    site, secret, other = _site_with_secret(tmp_path / "site", smtp)
    removed = run_listlib("remove", secret, "--reason", "privacy request", cwd=site, check=True)
    assert "1 message removed; ledger entry 1; 1 queued post deleted" in removed.stdout
    assert _traces(site) == []
    assert [p["id"] for p in queue_status(site)] == [other]
    assert secret in (site / "queue" / "sent.log").read_text().split()  # never queued again
    result = deliver(site)
    assert "1 post in" in result.stdout and "deleted from the queue" not in result.stdout
    [sent] = smtp.handler.messages
    assert b"<post2@example.org>" in sent.data and SECRET not in sent.data
    assert _traces(site) == [] and queue_status(site) == []


def test_posts_of_a_removed_message_leave_every_stage_held_failed_and_retry(tmp_path: Path, smtp: SmtpServer) -> None:
    site = make_site(tmp_path / "site", smtp, ["ok-poster@example.org", "temp2-ann@example.net", "perm@example.net"])
    import_posts(site, post(1, body=f"{SECRET.decode()} (1)\n"))
    deliver(site)  # ann's first try fails
    import_posts(site, post(2, body=f"{SECRET.decode()} (2)\n", sender="stranger@example.org"))  # held
    import_posts(site, post(3, body=f"{SECRET.decode()} (3)\n"))
    # Post 3 goes first (ann's second try fails: to retry/), then post 1 is due again (ann
    # accepts; perm failed for good: to failed/).
    deliver(site, NOW + 600)
    shutil.rmtree(site / "incoming")
    stages = {p["id"]: p["stage"] for p in queue_status(site)}
    assert sorted(stages.values()) == ["failed", "held", "retry"]
    before = len(smtp.handler.messages)
    report = json.loads(run_listlib("remove", *stages, "--reason", "privacy", "--json", cwd=site, check=True).stdout)
    assert sorted(report["queued_posts_deleted"]) == sorted(stages) and report["queue_busy"] is False
    assert queue_status(site) == [] and _traces(site) == []
    assert "nothing to send" in deliver(site, NOW + 86400).stdout  # the retry would have been due
    assert len(smtp.handler.messages) == before


@pytest.mark.parametrize(
    "point",
    [
        "files-removed",  # in the store's take-down, before the ledger entry counts as applied
        "ledger-applied",  # the take-down done, the queue not yet touched
        "purge-logged",  # the posts in sent.log, their folders not yet deleted
        "deleting",  # the post's folder moved to tmp/ to be deleted, still whole
    ],
)
def test_a_remove_killed_before_its_purge_leaves_the_post_to_the_next_delivery_run_which_deletes_it(
    tmp_path: Path, smtp: SmtpServer, point: str
) -> None:
    site, secret, other = _site_with_secret(tmp_path / "site", smtp)
    env = {**subprocess_env(), "LISTLIB_CRASH_AT": f"{point}:1"}
    killed = run_listlib("remove", secret, "--reason", "privacy", cwd=site, env=env)
    assert killed.returncode == -9, killed.stderr
    assert files_holding(site / "queue", [SECRET]), "the kill came before the post was deleted"
    result = deliver(site, NOW, "--json")
    report = json.loads(result.stdout)
    if point == "purge-logged":  # sent.log already said so: the run's recovery finishes the deletion
        assert report["recovered"] == [secret] and report["purged"] == []
    elif point == "deleting":  # out of its stage already: the run's recovery empties tmp/
        assert report["recovered"] == [] and report["purged"] == []
    else:
        assert report["purged"] == [secret]
    assert report["completed"] == [other]
    [sent] = smtp.handler.messages
    assert b"<post2@example.org>" in sent.data
    assert _traces(site) == [] and queue_status(site) == []


def test_a_remove_during_a_delivery_run_leaves_the_post_to_the_next_run(
    tmp_path: Path, smtp: SmtpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    site, secret, other = _site_with_secret(tmp_path / "site", smtp)
    config = load_config(site / "listlib.toml")
    monkeypatch.setattr(stewardship, "_QUEUE_WAIT", 0.2)
    with Outbound(site / "queue").running(0):  # as a 'listlib deliver' run holds it
        report = steward(config, "remove", Selector((secret,)), reason="privacy", by="test")
    assert report.queue_busy and report.purged == []
    assert "the outbound queue is busy: the next 'listlib deliver' deletes their queued posts" in report.summary()
    assert files_holding(site / "content", [SECRET]) == []
    result = deliver(site)
    assert "1 post of removed messages deleted from the queue" in result.stdout
    [sent] = smtp.handler.messages
    assert b"<post2@example.org>" in sent.data
    assert _traces(site) == [] and queue_status(site) == []
    assert other in (site / "queue" / "sent.log").read_text().split()


def test_a_damaged_post_of_a_removed_message_is_deleted_not_kept_in_failed(tmp_path: Path, smtp: SmtpServer) -> None:
    site, secret, other = _site_with_secret(tmp_path / "site", smtp)
    env = {**subprocess_env(), "LISTLIB_CRASH_AT": "ledger-applied:1"}
    assert run_listlib("remove", secret, "--reason", "privacy", cwd=site, env=env).returncode == -9
    (site / "queue" / "new" / secret / "journal").unlink()  # damaged: would go to failed/ with its bytes
    report = json.loads(deliver(site, NOW, "--json").stdout)
    assert (report["purged"], report["damaged"], report["completed"]) == ([secret], [], [other])
    assert _traces(site) == [] and queue_status(site) == []
