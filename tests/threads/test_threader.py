"""The threader: scenarios stored as data, real notmuch and hyperkitty fixtures, properties."""

from __future__ import annotations

import calendar
import random
import shlex
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from listlib.message import parse_message
from listlib.threader import (
    MAX_CHAIN,
    Thread,
    ThreadInput,
    cluster_keys,
    digest,
    normalize_subject,
    override_keys,
    reference_chain,
    stand_in,
    thread_messages,
)

from ..support.helpers import CORPORA

SCENARIOS = Path(__file__).parent.parent / "data" / "threading"


def load_scenario(path: Path) -> tuple[list[ThreadInput], list[str], dict[str, str | None]]:
    """Messages (one per line: name, date, key=value ...), overrides (``attach X to Y``,
    ``detach X``) and the expected tree (names indented two spaces per level; ``<id>``
    for a placeholder root)."""
    head, _, tail = path.read_text(encoding="utf-8").partition("\n---\n")
    messages = []
    overrides: dict[str, str | None] = {}
    for line in head.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        words = shlex.split(line)
        if words[0] == "attach" and len(words) == 4 and words[2] == "to":
            overrides[words[1]] = words[3]
            continue
        if words[0] == "detach" and len(words) == 2:
            overrides[words[1]] = None
            continue
        name, when, *pairs = words
        fields = dict(pair.split("=", 1) for pair in pairs)
        date = calendar.timegm(time.strptime(when, "%Y-%m-%dT%H:%M"))
        messages.append(
            ThreadInput(
                call=name,
                message_id=fields.get("id"),
                in_reply_to=fields.get("irt"),
                references=tuple(fields.get("refs", "").split()),
                subject=fields.get("subject", ""),
                date=date,
                raw_hash=name,
            )
        )
    return messages, [line for line in tail.splitlines() if line.strip()], overrides


def render(threads: list[Thread]) -> list[str]:
    """Threads as indented names, ordered by their first message's date."""
    lines = []
    for thread in threads:
        if thread.missing_root:
            lines.append(f"<{thread.missing_root}>")
        lines.extend("  " * p.depth + p.call for p in thread.messages)
    return lines


def ordered(threads: list[Thread], messages: list[ThreadInput]) -> list[Thread]:
    key = {m.call: m.sort_key for m in messages}
    return sorted(threads, key=lambda t: key[t.messages[0].call])


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.txt")), ids=lambda p: p.stem)
def test_scenario_gives_the_expected_threads(path: Path) -> None:
    messages, expected, overrides = load_scenario(path)
    assert render(ordered(thread_messages(messages, overrides=overrides), messages)) == expected


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.txt")), ids=lambda p: p.stem)
def test_scenario_does_not_depend_on_input_order(path: Path) -> None:
    messages, _, overrides = load_scenario(path)
    expected = thread_messages(messages, overrides=overrides)
    for seed in range(5):
        shuffled = messages[:]
        rnd = random.Random(seed)
        rnd.shuffle(shuffled)
        items = list(overrides.items())
        rnd.shuffle(items)
        assert thread_messages(shuffled, overrides=dict(items)) == expected


def test_thread_is_named_after_its_root_and_placeholder_root_after_its_first_answer() -> None:
    messages, _, _ = load_scenario(SCENARIOS / "missing_parent_groups_answers.txt")
    [thread] = thread_messages(messages)
    assert thread.id == "b"
    assert thread.missing_root == "x"
    assert [(p.call, p.parent, p.depth) for p in thread.messages] == [
        ("b", None, 1),
        ("c", None, 1),
        ("d", "c", 2),
    ]


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("Hello", ("hello", False)),
        ("Re: Hello", ("hello", True)),
        ("RE:Re: re[2]: Hello", ("hello", True)),
        ("[dev] Re: [dev] Hello  world ", ("hello world", True)),
        ("Aw: Sv: Antw: Fwd: FW: Hello", ("hello", True)),
        ("回复\uff1a答复: 你好", ("你好", True)),
        ("[PATCH v2 3/5] md: fix raid5", ("md: fix raid5", False)),
        ("Re:", ("", True)),
        ("", ("", False)),
        ("Regarding: x", ("regarding: x", False)),
    ],
)
def test_normalize_subject_strips_reply_prefixes_and_tags(subject: str, expected: tuple[str, bool]) -> None:
    assert normalize_subject(subject) == expected


def test_absurdly_long_references_keep_the_origin_and_the_latest_ids() -> None:
    refs = tuple(f"r{i}" for i in range(10_000)) + ("r5",) * 1000
    message = ThreadInput("m", "m", "r9999", refs, "x", 0, "h")
    chain = reference_chain(message)
    assert len(chain) == MAX_CHAIN
    assert chain[0] == "r0" and chain[-1] == "r9999"
    started = time.perf_counter()
    threads = thread_messages([message, ThreadInput("p", "r9999", None, (), "x", 0, "p")])
    assert time.perf_counter() - started < 1.0
    assert [(p.call, p.parent) for t in threads for p in t.messages] == [("p", None), ("m", "p")]


def test_cluster_keys_name_every_id_and_the_subject() -> None:
    message = ThreadInput("m", "m@x", "p@x", ("r@x", "p@x"), "Re: [dev] Hi", 0, "h")
    assert cluster_keys(message) == ["<" + digest(i)[:16] for i in ("r@x", "p@x", "m@x")] + ["s:" + digest("hi")[:16]]
    # A stand-in (a removed message's digests) has the keys its message had.
    assert cluster_keys(stand_in(message)) == cluster_keys(message)


# Real fixtures: notmuch's threading/broken vectors and hyperkitty's odd In-Reply-To.

NOTMUCH = CORPORA / "edge" / "notmuch"
HYPERKITTY = CORPORA / "edge" / "hyperkitty"


def inputs_from_files(paths: list[Path]) -> list[ThreadInput]:
    found = []
    for path in paths:
        raw = path.read_bytes()
        if raw.startswith(b"From "):  # a one-message mbox
            raw = raw.split(b"\n", 1)[1]
        facts = parse_message(raw)
        found.append(
            ThreadInput(
                call=path.name,
                message_id=facts.message_id,
                in_reply_to=facts.in_reply_to,
                references=facts.references,
                subject=facts.subject,
                date=facts.date or 0,
                raw_hash=facts.raw_hash,
            )
        )
    return found


def tree_of(threads: list[Thread], messages: list[ThreadInput]) -> list[str]:
    return render(ordered(threads, messages))


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("folder", "expected"),
    [
        (
            "threading/ghost-root",
            [
                "real-root",
                "  child",
                "    fake-root",
                "    grand-child",
                "      great-grand-child",
                "    grand-child2",
                "<RT-Ticket-33575@xxxxxxx-xxxxxxxxxxxxxxxxx-xxxxxxxxx-xxxxxxxxx.de>",
                "  1529425589.M615261P21663.len:2,S",
                "    1532672447.R3166642290392477575.len:2,S",
                "  1532672447.R6968667928580738175.len:2,S",
            ],
        ),
        ("threading/parent-priority", ["root", "  child", "    grand-child"]),
        ("broken/loop", ["loop-12", "  loop-21"]),
    ],
)
def test_notmuch_threading_fixtures(folder: str, expected: list[str]) -> None:
    base = NOTMUCH / folder
    if not base.is_dir():
        pytest.skip("../shared/corpora is not available")
    paths = [p for p in base.rglob("*") if p.is_file() and not p.name.startswith(".")]
    messages = inputs_from_files(paths)
    assert tree_of(thread_messages(messages), messages) == expected


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("name", "parent"),
    [
        ("strange-in-reply-to-header.txt", "200704070053.46646.other.person@example.com"),
        ("wrong-in-reply-to-header.txt", None),
    ],
)
def test_hyperkitty_odd_in_reply_to(name: str, parent: str | None) -> None:
    path = HYPERKITTY / name
    if not path.is_file():
        pytest.skip("../shared/corpora is not available")
    [message] = inputs_from_files([path])
    assert message.in_reply_to == parent
    if parent is None:
        # An unterminated id is no reference: the message is a root of its own.
        assert reference_chain(message) == []
        return
    archived_parent = ThreadInput("parent", parent, None, (), "Dummy subject", message.date - 60, "p")
    [thread] = thread_messages([message, archived_parent])
    assert [(p.call, p.parent) for p in thread.messages] == [("parent", None), (name, "parent")]


# Properties over random message sets.

IDS = [f"m{i}" for i in range(12)]
SUBJECTS = ["Hello", "Re: Hello", "Other", "Re: Other", "Fwd: Hello", ""]


@st.composite
def message_sets(draw: st.DrawFn) -> list[ThreadInput]:
    count = draw(st.integers(min_value=1, max_value=12))
    messages = []
    for i in range(count):
        message_id = draw(st.one_of(st.none(), st.sampled_from(IDS)))
        refs = draw(st.lists(st.sampled_from(IDS), max_size=4))
        irt = draw(st.one_of(st.none(), st.sampled_from(IDS)))
        subject = draw(st.sampled_from(SUBJECTS))
        date = draw(st.integers(min_value=0, max_value=200)) * 86400
        messages.append(ThreadInput(f"c{i:02d}", message_id, irt, tuple(refs), subject, date, f"h{i:02d}"))
    return messages


def parents(threads: list[Thread]) -> dict[str, str | None]:
    return {p.call: p.parent for t in threads for p in t.messages}


@settings(max_examples=300, deadline=None)
@given(message_sets(), st.randoms(use_true_random=False))
def test_every_message_is_in_exactly_one_thread_whatever_the_order(
    messages: list[ThreadInput], rnd: random.Random
) -> None:
    threads = thread_messages(messages)
    calls = [p.call for t in threads for p in t.messages]
    assert sorted(calls) == sorted(m.call for m in messages)
    shuffled = messages[:]
    rnd.shuffle(shuffled)
    assert thread_messages(shuffled) == threads


@settings(max_examples=300, deadline=None)
@given(message_sets())
def test_trees_are_well_formed_and_answers_sit_under_their_in_reply_to(messages: list[ThreadInput]) -> None:
    threads = thread_messages(messages)
    by_call = {m.call: m for m in messages}
    owner: dict[str, str] = {}
    for message in sorted(messages, key=lambda m: m.sort_key):
        if message.message_id:
            owner.setdefault(message.message_id, message.call)
    for thread in threads:
        seen: dict[str, int] = {}
        assert thread.id == thread.messages[0].call
        for placement in thread.messages:
            if placement.parent is None:
                assert placement.depth == (1 if thread.missing_root else 0)
            else:
                assert seen[placement.parent] == placement.depth - 1  # parent listed earlier, one level up
            seen[placement.call] = placement.depth
    parent_of = parents(threads)
    for message in messages:
        irt = message.in_reply_to
        if not irt or irt == message.message_id or irt not in owner:
            continue
        target = owner[irt]
        if parent_of[message.call] != target:
            # Only allowed when following In-Reply-To would close a loop.
            node: str | None = target
            ancestors = set()
            while node is not None:
                ancestors.add(node)
                node = parent_of[node]
            assert message.call in ancestors, (message, by_call[target])


@settings(max_examples=300, deadline=None)
@given(message_sets())
def test_threading_decomposes_over_clusters_of_shared_keys(messages: list[ThreadInput]) -> None:
    """What the cache relies on: threading each cluster alone gives the same threads."""
    assert_decomposes(messages, {})


def assert_decomposes(messages: list[ThreadInput], overrides: dict[str, str | None]) -> None:
    extra = override_keys(overrides)
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    for message in messages:
        for key in cluster_keys(message) + extra.get(message.call, []):
            parent[find("call:" + message.call)] = find(key)
    clusters: dict[str, list[ThreadInput]] = {}
    for message in messages:
        clusters.setdefault(find("call:" + message.call), []).append(message)
    separately = [t for group in clusters.values() for t in thread_messages(group, overrides=overrides)]
    assert sorted(separately, key=lambda t: t.id) == thread_messages(messages, overrides=overrides)


@pytest.mark.corpus
def test_every_notmuch_broken_and_threading_file_lands_in_exactly_one_thread() -> None:
    paths = [
        p
        for folder in ("broken", "threading")
        for p in (NOTMUCH / folder).rglob("*")
        if p.is_file() and not p.name.startswith(".")
    ]
    if not paths:
        pytest.skip("../shared/corpora is not available")
    messages = inputs_from_files(paths)
    placed = [p.call for t in thread_messages(messages) for p in t.messages]
    assert sorted(placed) == sorted(p.name for p in paths)


# Overrides: the operator's attach ("X answers Y") and detach ("X starts a thread").


@st.composite
def overridden_sets(draw: st.DrawFn, *, loops: bool) -> tuple[list[ThreadInput], dict[str, str | None]]:
    """Messages and overrides; without ``loops``, an attachment only names an earlier
    call (so overrides alone never loop, as in a validated file), else any call; names
    of messages that are not there come up too (a hidden message)."""
    messages = draw(message_sets())
    calls = [m.call for m in messages] + ["c99"]
    overrides: dict[str, str | None] = {}
    for index, call in enumerate(calls):
        choice = draw(st.sampled_from(["none", "none", "detach", "attach"]))
        if choice == "detach":
            overrides[call] = None
        elif choice == "attach":
            targets = calls if loops else calls[:index]
            if targets:
                overrides[call] = draw(st.sampled_from(targets))
    return messages, overrides


@settings(max_examples=300, deadline=None)
@given(overridden_sets(loops=True), st.randoms(use_true_random=False))
def test_overrides_in_any_order_and_messages_in_any_order_give_the_same_threads(
    case: tuple[list[ThreadInput], dict[str, str | None]], rnd: random.Random
) -> None:
    messages, overrides = case
    threads = thread_messages(messages, overrides=overrides)
    assert sorted(p.call for t in threads for p in t.messages) == sorted(m.call for m in messages)
    for _ in range(3):
        shuffled = messages[:]
        rnd.shuffle(shuffled)
        items = list(overrides.items())
        rnd.shuffle(items)
        assert thread_messages(shuffled, overrides=dict(items)) == threads


@settings(max_examples=300, deadline=None)
@given(overridden_sets(loops=False))
def test_every_override_is_obeyed_and_trees_stay_well_formed(
    case: tuple[list[ThreadInput], dict[str, str | None]],
) -> None:
    messages, overrides = case
    threads = thread_messages(messages, overrides=overrides)
    present = {m.call for m in messages}
    thread_of = {p.call: t for t in threads for p in t.messages}
    parent_of = parents(threads)
    for call, target in overrides.items():
        if call not in present or (target is not None and target not in present) or target == call:
            continue
        assert parent_of[call] == target
        if target is None:
            assert thread_of[call].id == call and not thread_of[call].missing_root
    for thread in threads:
        seen: dict[str, int] = {}
        assert thread.id == thread.messages[0].call
        for placement in thread.messages:
            if placement.parent is not None:
                assert seen[placement.parent] == placement.depth - 1
            seen[placement.call] = placement.depth


@settings(max_examples=300, deadline=None)
@given(overridden_sets(loops=True))
def test_threading_with_overrides_decomposes_over_clusters(
    case: tuple[list[ThreadInput], dict[str, str | None]],
) -> None:
    assert_decomposes(*case)
