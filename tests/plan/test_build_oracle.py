"""The oracle of the build: after any random history of imports, removals (of a file, or
a take-down by 'listlib remove'), hiding, config edits (class rules too),
template and static-file edits, about pages and damage to output/, an incremental build
leaves output/ byte for byte as a clean build of the same store and configuration makes
it (DESIGN.md invariant 7). The search index's segment layout depends on its history
by design; there, the same queries must give the same ranked answers."""

from __future__ import annotations

import random
import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from listlib.config import load_config
from listlib.search.reader import Source, search
from listlib.stewardship import Selector, steward
from listlib.store.core import Store
from listlib.store.index import FILED

from ..build.test_build import T0, add, build, post, tree
from ..support.helpers import make_message
from .test_build_incremental import remove_message

QUERIES = ["topic", "plans", "release", "message number", "re*", "list:dev topic", "-topic plans", "is:patch"]
QUERIES += ["topic -is:announcement"]
DIFF = "Plans.\n---\ndiff --git a/a.c b/a.c\n--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-old\n+new\n"
CLASS_RULES = '[[classes.rules]]\nclass = "announcement"\nsubject = "^Topic \\\\d*[05] "\n'
"""Topics whose number ends in 0 or 5 are announcements (the rule flips on and off)."""

BASE = """\
[site]
title = "{title}"
base_url = "https://lists.example.org/"
obfuscate_addresses = {obfuscate}
{theme}
[lists.dev]
name = "Developers"
description = "{description}"
addresses = ["dev@lists.example.org"]
list_ids = ["dev.lists.example.org"]

[lists.announce]
name = "Announcements"
description = "Releases."
addresses = ["announce@lists.example.org"]
list_ids = ["announce.lists.example.org"]
publish = {publish}
{classes}"""


class History:
    """One site and the random steps applied to it; the settings that make its config."""

    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root = root
        self.rng = rng
        self.number = 0
        self.posted: list[int] = []
        self.removed: set[int] = set()
        """Messages whose file was deleted (and the index repaired)."""
        self.taken_down: set[int] = set()
        """Messages removed as 'listlib remove' does (a tombstone, a placeholder in their thread)."""
        self.parent: dict[int, int] = {}
        """Reply -> the message number it answers (maybe one posted later, or never)."""
        self.announced: set[int] = set()
        self.hidden: dict[int, list[str]] = {}
        """Message number -> the call numbers of its hidden copies."""
        self.settings = {
            "title": "Oracle archive",
            "obfuscate": "true",
            "description": "Development talk.",
            "publish": "true",
            "theme": "",
            "classes": "",
        }
        self.write_config()

    def write_config(self) -> None:
        (self.root / "listlib.toml").write_text(BASE.format(**self.settings))

    def import_some(self) -> None:
        batch = []
        for _ in range(self.rng.randint(1, 8)):
            self.number += 1
            n = self.number
            at = timedelta(days=self.rng.randint(-60, 150), minutes=n)
            if self.rng.random() < 0.15:
                batch.append(make_message(f"Release {n}", message_id=f"<m{n}@example.org>", to=ANNOUNCE, date=T0 + at))
                self.announced.add(n)
            elif self.posted and self.rng.random() < 0.6:
                parent = self.rng.choice(self.posted) if self.rng.random() < 0.85 else n + self.rng.randint(1, 4)
                self.parent[n] = parent
                batch.append(post(n, f"Re: Topic {parent}", reply_to=parent, refs=(parent,), at=at))
            elif self.rng.random() < 0.2:
                batch.append(post(n, f"[PATCH] Topic {n} plans", at=at, body=DIFF))
            else:
                extra = {"X-No-Archive": "yes"} if self.rng.random() < 0.08 else None
                batch.append(post(n, f"Topic {n} plans", at=at, extra=extra))
            self.posted.append(n)
        add(self.root, *batch)

    def gone(self) -> set[int]:
        return self.removed | self.taken_down

    def remove_one(self) -> None:
        alive = [n for n in self.posted if n not in self.gone() and n not in self.announced and n not in self.hidden]
        if alive:
            victim = self.rng.choice(alive)
            remove_message(self.root, victim)
            self.removed.add(victim)

    def hide_some(self) -> None:
        """Hide one to three messages (or unhide what is hidden), as 'listlib hide' does."""
        config = load_config(self.root / "listlib.toml")
        if self.hidden and self.rng.random() < 0.4:
            back = self.rng.sample(sorted(self.hidden), k=min(len(self.hidden), self.rng.randint(1, 2)))
            calls = tuple(call for n in back for call in self.hidden.pop(n))
            steward(config, "unhide", Selector(ids=calls), reason="", by="oracle")
            return
        alive = [n for n in self.posted if n not in self.gone() and n not in self.hidden]
        if not alive:
            return
        with Store(self.root / "content").open() as store:
            for n in self.rng.sample(alive, k=min(len(alive), self.rng.randint(1, 3))):
                found = [row.call for row in store.index.find_rows((FILED,), message_id=f"m{n}@example.org")]
                if found:
                    self.hidden[n] = found
        chosen = tuple(call for calls in self.hidden.values() for call in calls)
        if chosen:
            steward(config, "hide", Selector(ids=chosen), reason="oracle", by="oracle")

    def take_down(self) -> None:
        """Remove one filed message as 'listlib remove' does: a thread's root, a message
        with answers, or any."""
        filed = [n for n in self.posted if n not in self.gone() and n not in self.hidden]
        answered = set(self.parent.values())
        pools = {
            "root": [n for n in filed if n not in self.parent and n in answered],
            "answered": [n for n in filed if n in self.parent and n in answered],
            "any": filed,
        }
        pool = pools[self.rng.choice(sorted(pools))] or filed
        if not pool:
            return
        victim = self.rng.choice(pool)
        with Store(self.root / "content").open() as store:
            calls = tuple(row.call for row in store.index.find_rows((FILED,), message_id=f"m{victim}@example.org"))
        if calls:
            config = load_config(self.root / "listlib.toml")
            steward(config, "remove", Selector(ids=calls), reason="oracle", by="oracle")
            self.taken_down.add(victim)

    def edit_config(self) -> None:
        key = self.rng.choice(["title", "obfuscate", "description", "publish", "classes"])
        flips = {"obfuscate": ("true", "false"), "publish": ("true", "false"), "classes": ("", CLASS_RULES)}
        if key in flips:
            a, b = flips[key]
            self.settings[key] = b if self.settings[key] == a else a
        else:
            self.settings[key] = f"{key.title()} {self.rng.randint(0, 999)}"
        self.write_config()

    def edit_theme(self) -> None:
        theme = self.root / "mytheme"
        choice = self.rng.choice(["footer", "style", "drop"])
        if choice == "drop":
            shutil.rmtree(theme, ignore_errors=True)
            self.settings["theme"] = ""
        else:
            self.settings["theme"] = '[theme]\ndir = "mytheme"\n'
            (theme / "templates").mkdir(parents=True, exist_ok=True)
            (theme / "static").mkdir(parents=True, exist_ok=True)
            if choice == "footer":
                words = self.rng.randint(0, 999)
                (theme / "templates" / "base.html").write_text(
                    f'{{% extends "!default/base.html" %}}{{% block footer %}}<p>Footer {words}</p>{{% endblock %}}'
                )
            else:
                (theme / "static" / "extra.css").write_text(f"body {{ margin: {self.rng.randint(0, 9)}px }}\n")
        self.write_config()

    def edit_about(self) -> None:
        about = self.root / "content" / "dev" / "about.md"
        if about.exists() and self.rng.random() < 0.3:
            about.unlink()
        else:
            about.parent.mkdir(parents=True, exist_ok=True)
            about.write_text(f"# About dev\n\nWe talk about *plans*, version {self.rng.randint(0, 99)}.\n")

    def damage_output(self) -> None:
        files = sorted(p for p in (self.root / "output").rglob("*") if p.is_file())
        if not files:
            return
        victim = self.rng.choice(files)
        if self.rng.random() < 0.5:
            victim.unlink()
        else:
            victim.with_name(victim.name + ".new").write_bytes(b"edited by hand\n")
            victim.with_name(victim.name + ".new").replace(victim)


ANNOUNCE = "announce@lists.example.org"


def _answers(output: Path) -> list[list[tuple[str, float]]]:
    source = Source(output / "search")
    return [[(hit.call, round(hit.score, 9)) for hit in search(source, q, limit=1000).hits] for q in QUERIES]


def _clean_copy(site: Path, where: Path) -> Path:
    """The same store, configuration and theme in a fresh folder, built from scratch."""
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    # Without the index: the clean copy rebuilds it from the files and the ledger.
    shutil.copytree(site / "content", where / "content", ignore=shutil.ignore_patterns(".lock", ".index"))
    shutil.copy(site / "listlib.toml", where / "listlib.toml")
    if (site / "mytheme").exists():
        shutil.copytree(site / "mytheme", where / "mytheme")
    build(where, clean=True)
    return where


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 12, 13])
def test_random_histories_build_what_a_clean_build_makes(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    site = tmp_path / "site"
    site.mkdir()
    history = History(site, rng)
    history.import_some()
    build(site)
    steps = [history.import_some] * 4 + [
        history.remove_one,
        history.take_down,
        history.hide_some,
        history.edit_config,
        history.edit_theme,
        history.edit_about,
        history.damage_output,
    ]
    done: list[str] = []
    for number in range(14):
        fixed = {4: history.hide_some, 6: history.take_down, 9: history.hide_some, 11: history.take_down}
        step = fixed[number] if number in fixed else rng.choice(steps)  # every history hides and takes down
        step()
        done.append(step.__name__)
        build(site)
        if number % 3 == 2 or number == 13 or step == history.take_down:
            clean = _clean_copy(site, tmp_path / "clean")
            assert tree(site / "output") == tree(clean / "output"), f"after {done}"
            assert _answers(site / "output") == _answers(clean / "output"), f"after {done}"
