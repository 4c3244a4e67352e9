"""A removal keeps its thread's shape: removing any message from a reply forest, with
the pins ``stewardship._places`` records (the message it answers, and its answers) and
the threader input a removed row gives (``threadset.thread_input`` of its facts: no
Message-ID, no references, no subject), threads every message as before -- the same
thread, parent and depth, in the same order, and the removed one at its place.

Pure: the threader (``thread_messages``) on plain inputs, the pins merged as
``Index.removal_pins`` and ``overrides.threading_overrides`` merge them."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from listlib.store.index import pins_as_overrides
from listlib.threader import (
    SUBJECT_WINDOW,
    Thread,
    ThreadInput,
    stand_in,
    stand_in_from_text,
    stand_in_text,
    thread_messages,
)

Shape = list[tuple[str, str | None, tuple[tuple[str, str | None, int], ...]]]


def call(n: int) -> str:
    return f"01HZ{n:04d}"


def mid(n: int) -> str:
    return f"m{n}@example.org"


def shape(threads: Sequence[Thread]) -> Shape:
    """Every thread's id, missing root and (call, parent, depth) in display order."""
    return sorted((t.id, t.missing_root, tuple((p.call, p.parent, p.depth) for p in t.messages)) for t in threads)


def places(threads: Sequence[Thread], removed: str) -> str | None:
    """The pins of ``removed`` as ``stewardship._places`` writes them: the call it
    answers or ``-``, then its answers' calls; None when it is alone in its thread."""
    for thread in threads:
        messages = [(p.call, p.parent, p.depth) for p in thread.messages]
        if any(c == removed for c, _p, _d in messages):
            parent = next(p for c, p, _d in messages if c == removed)
            children = [c for c, p, _d in messages if p == removed]
            return " ".join([parent or "-", *children]) if parent or children else None
    raise AssertionError(f"{removed} is in no thread")


def removal_pins(pins_of: dict[str, str]) -> dict[str, str]:
    """What removed messages pin, as ``Index.removal_pins`` reads the rows' pins."""
    return pins_as_overrides(sorted(pins_of.items()))


def removed_input(message: ThreadInput) -> ThreadInput:
    """The threader's view of a removed row: its stand-in, as the store keeps it (call,
    date and hash, and the digests of its headers, through their text form)."""
    return stand_in_from_text(message.call, message.date, message.raw_hash, stand_in_text(stand_in(message)))


def remove(messages: list[ThreadInput], pins_of: dict[str, str], victim: str) -> list[ThreadInput]:
    """Remove ``victim`` the way ``listlib remove`` does: its pins as threading (with the
    pins of earlier removals) places it now go into ``pins_of``; the new inputs are returned."""
    before = thread_messages(messages, overrides=removal_pins(pins_of))
    placed = places(before, victim)
    if placed is not None:
        pins_of[victim] = placed
    return [removed_input(m) if m.call == victim else m for m in messages]


@st.composite
def forests(draw: st.DrawFn, least: int = 1) -> list[ThreadInput]:
    """A small reply forest: every message starts a thread or answers an earlier one --
    with In-Reply-To and References, with References only, or through a message the
    archive lacks (under one it has), or by its subject alone (no references). Dates
    rise one hour apart, or stay in the same second."""
    count = draw(st.integers(min_value=least, max_value=12))
    messages: list[ThreadInput] = []
    chains: list[tuple[str, ...]] = []
    subjects: list[str] = []
    date = 1_700_000_000
    for n in range(count):
        date += 0 if n and draw(st.booleans()) else 3600
        how = draw(st.sampled_from(["root", "reply", "refs-only", "via-missing", "subject-only"])) if n else "root"
        if how == "root":
            subjects.append(f"Topic {n}")
            chains.append(())
            messages.append(ThreadInput(call(n), mid(n), None, (), subjects[n], date, f"h{n}"))
            continue
        parent = draw(st.integers(min_value=0, max_value=n - 1))
        subjects.append(subjects[parent])
        subject = f"Re: {subjects[parent]}"
        chain = (*chains[parent], mid(parent))
        in_reply_to: str | None = mid(parent)
        if how == "subject-only":
            chain, in_reply_to = (), None
        elif how == "refs-only":
            in_reply_to = None
        elif how == "via-missing":
            chain = (*chain, f"gone{n}@example.org")
            in_reply_to = chain[-1]
        chains.append(chain)
        messages.append(ThreadInput(call(n), mid(n), in_reply_to, chain, subject, date, f"h{n}"))
    return messages


@given(forests(), st.data())
def test_removing_any_message_with_its_pins_keeps_every_thread_as_it_was(
    messages: list[ThreadInput], data: st.DataObject
) -> None:
    victim = data.draw(st.sampled_from([m.call for m in messages]))
    before = shape(thread_messages(messages))
    pins: dict[str, str] = {}
    after = thread_messages(remove(messages, pins, victim), overrides=removal_pins(pins))
    assert shape(after) == before


@given(forests(least=2), st.data())
def test_removing_two_messages_one_after_the_other_keeps_every_thread_as_it_was(
    messages: list[ThreadInput], data: st.DataObject
) -> None:
    victims = data.draw(st.lists(st.sampled_from([m.call for m in messages]), min_size=2, max_size=2, unique=True))
    before = shape(thread_messages(messages))
    pins: dict[str, str] = {}
    for victim in victims:
        messages = remove(messages, pins, victim)
    assert shape(thread_messages(messages, overrides=removal_pins(pins))) == before


def test_the_removed_message_keeps_its_place_and_its_answers_stay_under_it() -> None:
    # 0 <- 1 <- 2, 1 <- 3 (3 through a message the archive lacks): remove 1.
    messages = [
        ThreadInput(call(0), mid(0), None, (), "Plans", 0, "h0"),
        ThreadInput(call(1), mid(1), mid(0), (mid(0),), "Re: Plans", 10, "h1"),
        ThreadInput(call(2), mid(2), mid(1), (mid(0), mid(1)), "Re: Plans", 20, "h2"),
        ThreadInput(call(3), mid(3), "gone@example.org", (mid(0), mid(1), "gone@example.org"), "Re: Plans", 30, "h3"),
    ]
    pins: dict[str, str] = {}
    after = thread_messages(remove(messages, pins, call(1)), overrides=removal_pins(pins))
    assert pins == {call(1): f"{call(0)} {call(2)} {call(3)}"}
    assert shape(after) == [
        (call(0), None, ((call(0), None, 0), (call(1), call(0), 1), (call(2), call(1), 2), (call(3), call(1), 2)))
    ]
    # Without its digests and pins the answers would lose their place (the test can fail).
    bare = [ThreadInput(m.call, None, None, (), "", m.date, m.raw_hash) if m.call == call(1) else m for m in messages]
    assert shape(thread_messages(bare)) != shape(after)


# Corner cases where a removed message without its digests would change its thread.

_UNDER_A_MISSING_ROOT = [
    ThreadInput(call(0), mid(0), "gone@example.org", ("gone@example.org",), "Re: Plans", 0, "h0"),
    ThreadInput(call(1), mid(1), "gone@example.org", ("gone@example.org",), "Re: Plans", 10, "h1"),
    ThreadInput(call(2), mid(2), mid(0), ("gone@example.org", mid(0)), "Re: Plans", 20, "h2"),
]

_SUBJECT_ONLY_REPLY = [
    ThreadInput(call(0), mid(0), None, (), "Plans", 0, "h0"),
    ThreadInput(call(1), mid(1), None, (), "Other", 10, "h1"),
    ThreadInput(call(2), mid(2), mid(1), (mid(1),), "Re: Plans", 20, "h2"),  # answers 1 under 0's subject
    ThreadInput(call(3), mid(3), None, (), "Re: Plans", 30, "h3"),  # no references: joins by subject
]

_SUBJECT_WINDOW = [
    ThreadInput(call(0), mid(0), None, (), "Plans", 0, "h0"),
    ThreadInput(call(1), mid(1), mid(0), (mid(0),), "Re: Plans", 40 * 86400, "h1"),
    ThreadInput(call(2), mid(2), None, (), "Re: Plans", 40 * 86400 + SUBJECT_WINDOW - 86400, "h2"),
]

_SUBJECT_UNDER_ITS_ANSWER = [
    ThreadInput(call(0), mid(0), None, (), "Plans", 0, "h0"),
    ThreadInput(call(1), mid(1), None, (), "Re: Plans", 10, "h1"),  # joins 0 by subject
    ThreadInput(call(2), mid(2), mid(1), (mid(1),), "Re: Plans", 20, "h2"),
    ThreadInput(call(3), mid(3), None, (), "Re: Plans", 30, "h3"),  # joins by subject, through 2
]

_SAME_DATE = [
    ThreadInput(call(0), mid(0), None, (), "Plans", 0, "h0"),
    ThreadInput(call(1), mid(1), mid(0), (mid(0),), "Re: Plans", 50, "h1"),
    ThreadInput(call(2), mid(2), mid(0), (mid(0),), "Re: Plans", 50, "h2"),  # the same second as 1
    ThreadInput(call(3), mid(3), mid(2), (mid(0), mid(2)), "Re: Plans", 60, "h3"),
]


@pytest.mark.parametrize(
    ("messages", "victim"),
    [
        pytest.param(
            _UNDER_A_MISSING_ROOT,
            call(0),
            id="answer-to-a-missing-root",
        ),
        pytest.param(
            _SUBJECT_ONLY_REPLY,
            call(2),
            id="subject-only-reply-elsewhere",
        ),
        pytest.param(
            _SUBJECT_WINDOW,
            call(1),
            id="subject-window",
        ),
        pytest.param(
            _SUBJECT_UNDER_ITS_ANSWER,
            call(1),
            id="subject-only-reply-after-an-answer",
        ),
        pytest.param(
            _SAME_DATE,
            call(2),
            id="answers-of-the-same-second",
        ),
    ],
)
def test_a_removal_keeps_the_thread_in_threading_corner_cases(messages: list[ThreadInput], victim: str) -> None:
    before = shape(thread_messages(messages))
    pins: dict[str, str] = {}
    after = thread_messages(remove(messages, pins, victim), overrides=removal_pins(pins))
    assert shape(after) == before
    # With its pins only (no digests), the thread would change (the test can fail).
    bare = [ThreadInput(m.call, None, None, (), "", m.date, m.raw_hash) if m.call == victim else m for m in messages]
    assert shape(thread_messages(bare, overrides=removal_pins(pins))) != before


def test_a_missing_root_only_removed_messages_named_keeps_its_place_but_not_its_id() -> None:
    messages = [
        ThreadInput(call(0), mid(0), "gone@example.org", ("gone@example.org",), "Re: Plans", 0, "h0"),
        ThreadInput(call(1), mid(1), "gone@example.org", ("gone@example.org",), "Re: Plans", 10, "h1"),
    ]
    before = thread_messages(messages)
    assert [t.missing_root for t in before] == ["gone@example.org"]
    after = thread_messages([removed_input(m) for m in messages])
    assert [(t.id, t.messages) for t in after] == [(t.id, t.messages) for t in before]
    assert [t.missing_root for t in after] == [""]
