"""Classes in a built site: a badge on month and by-date pages, worked out once per
message and kept by content and rules, so that new rules rewrite exactly the pages
whose badges change."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from listlib import classcache
from listlib.classcache import ClassCache
from listlib.config import load_config
from listlib.store.core import Store

from ..build.test_build import add, build, post, tree
from ..plan.test_build_oracle import _clean_copy
from ..support.helpers import SITE_TOML

DIFF = "---\n a.c | 2 +-\n\ndiff --git a/a.c b/a.c\n--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-old\n+new\n"
QUOTED = "> @@ -1 +1 @@\n> -old\n> +new\n\nWhy new?\n"
MESSAGES = [
    post(1, "[PATCH] md: fix the resync", body=DIFF, at=timedelta(hours=1)),
    post(2, "Re: [PATCH] md: fix the resync", reply_to=1, refs=(1,), body=QUOTED, at=timedelta(hours=2)),
    post(3, "Disk trouble", at=timedelta(hours=3)),
    post(4, "Re: Disk trouble", reply_to=3, refs=(3,), at=timedelta(hours=4)),
]
BADGE = '<span class="tag class-badge class-{}">{}</span>'


def test_month_pages_badge_each_thread_by_its_root_and_by_date_pages_each_message(site: Path) -> None:
    add(site, *MESSAGES)
    build(site)
    month = (site / "output/dev/2024/03/index.html").read_text()
    by_date = (site / "output/dev/2024/03/date.html").read_text()
    assert month.count(BADGE.format("patch", "Patch")) == 1
    assert "class-review" not in month  # the review is in the patch's thread, not a thread of its own
    assert by_date.count(BADGE.format("patch", "Patch")) == 1
    assert by_date.count(BADGE.format("review", "Review")) == 1
    # Discussion, the class of most mail, has no badge.
    assert "class-discussion" not in month + by_date


def set_rules(site: Path, rules: str) -> None:
    (site / "listlib.toml").write_text(SITE_TOML + rules)


def test_new_rules_rewrite_exactly_the_pages_whose_badges_change(site: Path, tmp_path: Path) -> None:
    add(site, *MESSAGES, post(5, "Later thread", at=timedelta(days=40)))
    build(site)
    set_rules(site, '[[classes.rules]]\nclass = "announcement"\nsubject = "^Disk trouble"\n')
    report = build(site)
    assert set(report.written) == {"dev/2024/03/index.html", "dev/2024/03/date.html"}
    assert BADGE.format("announcement", "Announcement") in (site / "output/dev/2024/03/index.html").read_text()
    assert tree(site / "output") == tree(_clean_copy(site, tmp_path / "clean") / "output")
    # A rule that changes no message's class rewrites nothing.
    set_rules(site, '[[classes.rules]]\nclass = "announcement"\nsubject = "^Disk trouble"\n'
              '[[classes.rules]]\nclass = "vote"\nsubject = "no such subject"\n')  # fmt: skip
    assert build(site).written == []
    set_rules(site, "")
    report = build(site)
    assert set(report.written) == {"dev/2024/03/index.html", "dev/2024/03/date.html"}
    assert "class-announcement" not in (site / "output/dev/2024/03/index.html").read_text()


def test_a_message_is_read_and_classified_once_per_content_and_rules(site: Path) -> None:
    add(site, *MESSAGES)
    config = load_config(site / "listlib.toml")
    cache_dir = config.site.cache_dir
    with Store(config.site.content_dir).open() as store:
        with ClassCache(cache_dir, config.classes.rules) as cache:
            assert cache.update(store.index, store.root) == 4
            assert cache.update(store.index, store.root) == 0
            assert set(cache.all().values()) == {"patch", "review", "discussion"}
        set_rules(site, '[[classes.rules]]\nclass = "vote"\nsubject = "trouble"\n')
        rules = load_config(site / "listlib.toml").classes.rules
        with ClassCache(cache_dir, rules) as cache:
            assert cache.update(store.index, store.root) == 4
            assert sorted(cache.all().values()) == ["patch", "review", "vote", "vote"]


def test_many_messages_are_classified_on_every_core_with_the_same_classes(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    add(site, *MESSAGES)
    config = load_config(site / "listlib.toml")
    monkeypatch.setattr(classcache, "_PARALLEL_FROM", 1)
    with Store(config.site.content_dir).open() as store:
        with ClassCache(config.site.cache_dir / "serial", config.classes.rules) as serial:
            serial.update(store.index, store.root)
            expected = serial.all()
        with ClassCache(config.site.cache_dir / "forked", config.classes.rules) as forked:
            assert forked.update(store.index, store.root, workers=2) == 4
            assert forked.all() == expected


@pytest.mark.parametrize("workers", [1, 2])
def test_an_update_holds_a_round_of_messages_at_a_time_with_the_same_classes(
    site: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """Classified ``_ROUND`` at a time (one pool for every round), the classes are those of
    one round: nothing left out, nothing twice; no round holds more than ``_ROUND`` and
    the months left over."""
    add(site, *MESSAGES, post(5, "Later thread", at=timedelta(days=40)))
    config = load_config(site / "listlib.toml")
    with Store(config.site.content_dir).open() as store:
        with ClassCache(config.site.cache_dir / "whole", config.classes.rules) as whole:
            assert whole.update(store.index, store.root) == 5
            expected = whole.all()
        monkeypatch.setattr(classcache, "_ROUND", 2)
        monkeypatch.setattr(classcache, "_PARALLEL_FROM", 1)
        rounds: list[int] = []
        classify = classcache._Rounds._classify

        def counted(self: classcache._Rounds) -> None:
            rounds.append(len(self.todo))
            classify(self)

        monkeypatch.setattr(classcache._Rounds, "_classify", counted)
        with ClassCache(config.site.cache_dir / "rounds", config.classes.rules) as cache:
            assert cache.update(store.index, store.root, workers=workers) == 5
            assert cache.all() == expected
    assert sum(rounds) == 5 and len(rounds) >= 2, rounds
    assert max(rounds) < 2 + 4, rounds  # a round is filled by whole months (of at most 4 here)


def _fresh_classes(site: Path) -> dict[str, str]:
    """The classes a cache made from nothing has of the store as it is now."""
    config = load_config(site / "listlib.toml")
    folder = config.site.cache_dir / "fresh"
    shutil.rmtree(folder, ignore_errors=True)
    with Store(config.site.content_dir).open() as store, ClassCache(folder, []) as fresh:
        fresh.update(store.index, store.root)
        return fresh.all()


def test_an_update_reads_only_the_months_whose_messages_changed(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from listlib.stewardship import Selector, redact, steward
    from listlib.store.index import Index

    from ..build.test_build import call_of

    add(site, *MESSAGES, post(5, "Later thread", at=timedelta(days=40)))
    config = load_config(site / "listlib.toml")
    with Store(config.site.content_dir).open() as store, ClassCache(config.site.cache_dir, []) as cache:
        assert cache.update(store.index, store.root) == 5
    # From now on no update may read every filed message: only those of months that changed.
    read_months: list[tuple[str, int, int]] = []
    month_contents = Index.month_contents

    def counting(self: Index, slug: str, year: int, month: int):  # type: ignore[no-untyped-def]
        read_months.append((slug, year, month))
        return month_contents(self, slug, year, month)

    monkeypatch.setattr(Index, "month_contents", counting)

    def month_of(n: int) -> tuple[str, int, int]:
        slug, year, month, _name = call_of(site, n)[1].split("/")
        return slug, int(year), int(month)

    def update() -> int:
        read_months.clear()
        with Store(config.site.content_dir).open() as store, ClassCache(config.site.cache_dir, []) as cache:
            found = cache.update(store.index, store.root)
            assert cache.all() == expected()
        return found

    def expected() -> dict[str, str]:
        # A fresh cache reads every month (not counted: it is the reference, not the update).
        monkeypatch.setattr(Index, "month_contents", month_contents)
        try:
            return _fresh_classes(site)
        finally:
            monkeypatch.setattr(Index, "month_contents", counting)

    assert update() == 0 and read_months == []  # nothing changed: nothing read
    add(site, post(6, "Re: Later thread", reply_to=5, refs=(5,), at=timedelta(days=41)))
    assert update() == 1 and read_months == [month_of(6)]
    hidden, _path = call_of(site, 3)
    steward(config, "hide", Selector(ids=(hidden,)), reason="spam", by="test")
    assert update() == 0 and read_months == [month_of(1)]  # its class forgotten
    steward(config, "unhide", Selector(ids=(hidden,)), reason="", by="test")
    assert update() == 1 and read_months == [month_of(1)]
    # A redaction changes the bytes under the same call number: classified again.
    edited, path = call_of(site, 1)
    raw = (site / "content" / path).read_bytes().replace(b"+new", b"+[redacted]")
    redact(config, edited, raw, reason="secret", by="test")
    assert update() == 1 and read_months == [month_of(1)]
    # A store whose index was made again (another life: its months counted afresh) is read
    # whole, a month at a time; nothing is classified again (the bytes are the same).
    with Store(config.site.content_dir).open() as store:
        store.rebuild_index()
        every = sorted(store.index.all_month_versions())
    assert len(every) >= 2
    assert update() == 0 and read_months == every


def test_a_message_that_cannot_be_read_is_classified_by_the_next_update(site: Path) -> None:
    from ..build.test_build import call_of

    add(site, *MESSAGES)
    config = load_config(site / "listlib.toml")
    with Store(config.site.content_dir).open() as store, ClassCache(config.site.cache_dir, []) as cache:
        cache.update(store.index, store.root)
    add(site, post(6, "New thread", at=timedelta(hours=6)))
    call, path = call_of(site, 6)
    stored = site / "content" / path
    raw = stored.read_bytes()
    stored.unlink()
    with Store(config.site.content_dir).open() as store, ClassCache(config.site.cache_dir, []) as cache:
        assert cache.update(store.index, store.root) == 0
        assert call not in cache.all()
    stored.write_bytes(raw)
    with Store(config.site.content_dir).open() as store, ClassCache(config.site.cache_dir, []) as cache:
        assert cache.update(store.index, store.root) == 1
        assert cache.all() == _fresh_classes(site)
