"""The default class rules against messages labelled by hand (``tests/data/classes.tsv``):
every class the rules give is right at least 90% of the time. Prints precision and
recall per class (``pytest -s`` shows the table)."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest

from listlib.classify import CLASSES, DEFAULT_RULES, classify_message
from listlib.filers import open_source
from listlib.message import parse_message

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

LABELS = Path(__file__).resolve().parents[1] / "data" / "classes.tsv"
PRECISION = 0.90


def read_labels() -> dict[str, dict[str, str]]:
    """Corpus file -> Message-ID -> class."""
    labels: dict[str, dict[str, str]] = defaultdict(dict)
    lines = [line for line in LABELS.read_text().splitlines() if line and not line.startswith("#")]
    assert lines[0] == "file\tmessage_id\tclass"
    for line in lines[1:]:
        file, message_id, cls = line.split("\t")
        assert cls in CLASSES, line
        labels[file][message_id] = cls
    return labels


def classify_labelled(corpora: Path, labels: dict[str, dict[str, str]]) -> list[tuple[str, str]]:
    """(label, class the rules give) for every labelled message, read from its corpus file."""
    pairs = []
    for file, wanted in sorted(labels.items()):
        found: dict[str, bytes] = {}
        for mail in open_source(corpora / file).iter_mail():
            message_id = parse_message(mail.raw).message_id
            if message_id in wanted and message_id not in found:
                found[message_id] = mail.raw
        missing = sorted(wanted.keys() - found.keys())
        assert not missing, f"{file}: labelled messages not found: {missing}"
        pairs.extend((wanted[message_id], classify_message(raw, DEFAULT_RULES)) for message_id, raw in found.items())
    return pairs


def table(pairs: list[tuple[str, str]]) -> dict[str, tuple[int, int, int]]:
    """Class -> (labelled, given by the rules, both)."""
    labelled = Counter(label for label, _ in pairs)
    given = Counter(cls for _, cls in pairs)
    right = Counter(label for label, cls in pairs if label == cls)
    return {cls: (labelled[cls], given[cls], right[cls]) for cls in CLASSES}


def test_labels_cover_every_class_and_two_hundred_messages() -> None:
    labels = read_labels()
    counts = Counter(cls for wanted in labels.values() for cls in wanted.values())
    assert sum(counts.values()) >= 200
    assert set(counts) == set(CLASSES)


def test_every_class_the_default_rules_give_is_right_nine_times_in_ten(corpora: Path) -> None:
    rows = table(classify_labelled(corpora, read_labels()))
    print(f"\n{'class':<14}{'labelled':>9}{'given':>7}{'precision':>11}{'recall':>8}")
    low = []
    for cls, (labelled, given, right) in rows.items():
        precision = right / given if given else None
        recall = right / labelled if labelled else None
        shown = [f"{value:.2f}" if value is not None else "-" for value in (precision, recall)]
        print(f"{cls:<14}{labelled:>9}{given:>7}{shown[0]:>11}{shown[1]:>8}")
        if precision is not None and precision < PRECISION:
            low.append(f"{cls} {precision:.2f}")
    assert not low, f"classes below {PRECISION:.0%} precision: {', '.join(low)}"
    # The rules must find most of what matters on a patch list, not just be cautious.
    assert rows["patch"][2] / rows["patch"][0] >= 0.8 and rows["review"][2] / rows["review"][0] >= 0.8
