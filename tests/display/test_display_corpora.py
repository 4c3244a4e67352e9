"""Every message of the shared real-mail corpora displays, without falling back, and nothing in it can run."""

from __future__ import annotations

from pathlib import Path

import pytest

from listlib.display import DisplayOptions, display_message
from listlib.filers import open_source

from ..support.display_safety import executable_problems

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

SOURCES = [
    "mbox",
    "pipermail/twisted-python",
    "pipermail/twisted-web",
    "pipermail/imagej-devel",
    "maildir",
    "eml",
    "edge",
]
OPTIONS = DisplayOptions(attachment_base="att/")


@pytest.mark.parametrize("source", SOURCES)
def test_every_corpus_message_displays_safely(corpora: Path, source: str) -> None:
    path = corpora / source
    if not path.exists():
        pytest.skip(f"{path} not present")
    count = 0
    problems: list[str] = []
    for mail in open_source(path).iter_mail():
        count += 1
        shown = display_message(mail.raw, OPTIONS)
        if 'class="note unreadable"' in shown.body_html:
            problems.append(f"{mail.origin}: the walk failed and the raw fallback was used")
        found = executable_problems(shown.body_html)
        if found:
            problems.append(f"{mail.origin}: {found[:3]}")
        for text in (shown.body_html, shown.text, shown.subject, shown.author_shown, shown.author_name):
            text.encode("utf-8")
        names = [a.filename.casefold() for a in shown.attachments]
        if len(set(names)) != len(names):
            problems.append(f"{mail.origin}: duplicate attachment names {names}")
    assert count > 0
    assert not problems, problems[:20]
