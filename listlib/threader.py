"""JWZ threading of one list's messages: pure functions over plain data.

Given messages (call number, Message-ID, In-Reply-To, References, subject,
date), decide which message answers which and group them into threads. The
result depends only on the set of messages, never on the order they are given
in or were imported in: every decision is taken in *sort order* (date, then the
digest of the Message-ID, then content hash), so a rebuild from scratch, a build
month by month and an incremental update agree.

A removed message (``listlib remove``) is threaded as a *stand-in*
(``stand_in``): the same input with its Message-ID, references and normalized
subject replaced by their digests (``digest``), which is all the store keeps of
them. Threading restores each digest that another message's headers name, so a
stand-in links, sorts and matches subjects exactly as the message did, and the
thread keeps its shape.

The rules, in the order they are applied:

1. **Own claims.** A message's parent is its In-Reply-To when that names an
   archived message; otherwise the last entry of its reference chain
   (References with In-Reply-To moved to the end; a missing message becomes a
   placeholder). A claim that would close a loop is dropped; claims are taken
   latest message first, so the earliest message of a loop becomes its root.
2. **Implied links.** Each consecutive pair of a reference chain says the later
   id answers the earlier one. This only gives a parent to containers that have
   none yet: placeholders and messages whose own headers name no parent. It
   never re-parents a message that is already threaded under a real parent
   (the hijack guard), and never closes a loop.
3. **Subject fallback.** A message with no usable references at all, whose
   subject carries a reply prefix (``Re:``, ``Aw:``, ``Fwd:`` ...), joins the
   thread of the latest earlier message with the same normalized subject within
   ``SUBJECT_WINDOW`` seconds (under that thread's root). Two threads that both
   have real references are never merged by subject.
4. **Overrides.** An operator's corrections (``overrides``: call number -> the
   call number it answers, or None for "starts its own thread") are applied over
   rules 1-3: every overridden message leaves the parent they gave it; a detached
   one stays a root, an attached one goes under the message named. When the new
   parent sits below the attached message (its headers made it a descendant),
   the new parent leaves its own place first: the override wins over headers.
   Overrides naming a message that is not being threaded are ignored; overrides
   that only form a loop among themselves (a validated file never has one) lose
   the attachment of the smallest call number of the loop. The result depends on
   the set of overrides, never on their order.
5. **Pruning.** Placeholders without children disappear; a placeholder that
   is not a root is replaced by its children; a placeholder root with a single
   child gives way to it. A placeholder root with several children stays: the
   thread is a set of answers to a message the archive does not have.

A thread is named by the call number of its root message (for a placeholder
root: of its first child). Threading can only link messages that share a
*key* (a Message-ID they carry or reference, or a normalized subject, or an
override naming both: ``override_keys``), so ``cluster_keys`` lets a cache
rethread just the messages a change can reach.

This module never touches the disk, the clock or the store.

Length: the JWZ passes, the stand-ins of removed messages and the operator overrides
all work on one node structure in one sort order; apart they could disagree.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "MAX_CHAIN",
    "Overrides",
    "SUBJECT_WINDOW",
    "Placement",
    "Thread",
    "ThreadInput",
    "cluster_keys",
    "digest",
    "forget_threading",
    "normalize_subject",
    "override_keys",
    "reference_chain",
    "stand_in",
    "stand_in_from_text",
    "stand_in_text",
    "strip_subject",
    "thread_messages",
]

SUBJECT_WINDOW = 45 * 86400
"""How far back (seconds) the subject fallback looks for an earlier message."""

MAX_CHAIN = 128
"""References kept per message: the first (the thread's origin) and the last ones.

Real chains are rarely past 60; some broken clients repeat ids by the thousand."""


Overrides = Mapping[str, str | None]
"""Call number -> the call number it answers (attach), or None (detach: a root)."""

STAND_IN = "\0#"
"""The prefix of a digest in a stand-in's fields (no header value starts with NUL)."""

_KEY_DIGITS = 16
"""Hex digits of a digest in a cluster key (a collision only joins two clusters)."""


@functools.lru_cache(maxsize=1 << 14)
def digest(text: str) -> str:
    """The lower-case hex SHA-256 of a Message-ID or a normalized subject (the last
    16,384 remembered, about 3 MB: a thread's replies name the same ids again and again)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _digest_of(value: str) -> str:
    """The digest of a field's value, or the digest a stand-in's field holds."""
    return value[len(STAND_IN) :] if value.startswith(STAND_IN) else digest(value)


class ThreadInput(NamedTuple):
    """What threading needs to know about one message."""

    call: str
    message_id: str | None
    in_reply_to: str | None
    references: tuple[str, ...]
    subject: str
    date: int
    """Seconds since the epoch (the date the message is filed under)."""
    raw_hash: str
    """Content hash: the last tie-breaker of the sort order."""

    @property
    def sort_key(self) -> tuple[int, str, str]:
        """(date, digest of the Message-ID, content hash): a stand-in sorts where its
        message did."""
        mid = self.message_id
        if not mid:
            return (self.date, "", self.raw_hash)
        return (self.date, mid[2:] if mid[0] == "\0" else digest(mid), self.raw_hash)


class Placement(NamedTuple):
    """Where one message sits in its thread."""

    call: str
    parent: str | None
    """Call number of the message it answers; None for the root and for the
    children of a placeholder root."""
    depth: int
    """0 for the root; children of a placeholder root have depth 1."""


@dataclass(frozen=True, slots=True)
class Thread:
    """One thread: its messages in display order (depth-first, answers in sort order)."""

    id: str
    """Call number of the root message, or of the first child of a placeholder root."""
    missing_root: str | None
    """Message-ID of the missing message a placeholder root stands for (empty when only
    removed messages named it), else None."""
    messages: tuple[Placement, ...]


# Reply and forward markers in many languages, with counters like Re[2]: or Re^3:;
# full-width colons come from Chinese and Japanese clients.
_PREFIX_RE = re.compile(
    r"\s*(?:(?:re|aw|sv|vs|antw|antwort|fwd?|fw|wg|tr|rif|odp|ynt|res|r|回复|回覆|答复|答覆|转发|轉寄)"
    r"\s*(?:\[\d+\]|\(\d+\)|\^\d+)?\s*[:\uff1a]"
    r"|\[[^\]]*\])",
    re.IGNORECASE,
)
_SPACE_RE = re.compile(r"\s+")


@functools.lru_cache(maxsize=16384)
def normalize_subject(subject: str) -> tuple[str, bool]:
    """``strip_subject``, cached: threading asks for a message's subject several times."""
    return strip_subject(subject)


def strip_subject(subject: str) -> tuple[str, bool]:
    """The subject without reply/forward prefixes and ``[tag]`` prefixes, case-folded
    and with runs of white space collapsed; and whether a reply prefix was there. Not
    cached (``normalize_subject`` is): for callers that see each subject once or twice,
    such as a render worker, whose cache would fill over a build with subjects it never
    asks for again (some 3.5 MB of each render worker's heap at 80,000 messages, issue 28)."""
    text = subject
    replied = False
    while True:
        match = _PREFIX_RE.match(text)
        if not match or match.end() == 0:
            break
        if not match.group(0).lstrip().startswith("["):
            replied = True
        text = text[match.end() :]
    return _SPACE_RE.sub(" ", text).strip().casefold(), replied


def forget_threading() -> None:
    """Empty the caches of Message-ID digests and normalized subjects (a caller that
    threads list after list, so that they hold one list's at most)."""
    digest.cache_clear()
    normalize_subject.cache_clear()


def _subject_key(message: ThreadInput) -> tuple[str, bool]:
    """(normalized subject, reply prefix) of a message; for a stand-in, the digest
    its subject field holds (prefixed) and the flag it keeps."""
    if message.subject.startswith(STAND_IN):
        return message.subject[:2] + message.subject[3:], message.subject[2] == "r"
    return normalize_subject(message.subject)


def stand_in(message: ThreadInput) -> ThreadInput:
    """The input threading keeps of a removed message: its Message-ID, In-Reply-To,
    References and normalized subject as digests (``STAND_IN`` + ``digest``); call,
    date and content hash as they were."""
    subject, replied = normalize_subject(message.subject)
    return message._replace(
        message_id=STAND_IN + digest(message.message_id) if message.message_id else None,
        in_reply_to=STAND_IN + digest(message.in_reply_to) if message.in_reply_to else None,
        references=tuple(STAND_IN + digest(ref) for ref in message.references),
        subject=f"{STAND_IN}{'r' if replied else '-'}{digest(subject)}" if subject else "",
    )


def stand_in_text(message: ThreadInput) -> str:
    """A stand-in's digests as one line of text (the store keeps it with the removal):
    Message-ID, In-Reply-To, subject (``r`` or ``-`` for its reply prefix, then its
    digest), then the References; ``-`` for an empty field."""
    fields = [message.message_id, message.in_reply_to, message.subject, *message.references]
    return " ".join(field[len(STAND_IN) :] if field else "-" for field in fields)


def stand_in_from_text(call: str, date: int, raw_hash: str, text: str) -> ThreadInput:
    """The stand-in ``stand_in_text`` wrote."""
    mid, irt, subject, *refs = (None if field == "-" else STAND_IN + field for field in text.split())
    return ThreadInput(call, mid, irt, tuple(ref for ref in refs if ref), subject or "", date, raw_hash)


def _restore(messages: list[ThreadInput]) -> list[ThreadInput]:
    """Stand-ins with every digest that another message's headers (or subject) name
    replaced by that value; digests nobody names stay (only stand-ins share them)."""
    if not any(_is_stand_in(m) for m in messages):
        return messages
    named: dict[str, str] = {}
    subjects: dict[str, str] = {}
    for message in messages:
        if _is_stand_in(message):
            continue
        for value in (message.message_id, message.in_reply_to, *message.references):
            if value and value not in named:
                named[value] = ""
        subject, _ = normalize_subject(message.subject)
        if subject:
            subjects[subject] = ""
    ids = {digest(value): value for value in named}
    texts = {digest(subject): subject for subject in subjects}

    def restored(value: str | None) -> str | None:
        if not value or not value.startswith(STAND_IN):
            return value
        return ids.get(value[len(STAND_IN) :], value)

    out = []
    for message in messages:
        if not _is_stand_in(message):
            out.append(message)
            continue
        subject = message.subject
        if subject.startswith(STAND_IN):
            text = texts.get(subject[3:])
            if text is not None:
                candidate = ("Re: " if subject[2] == "r" else "") + text
                if normalize_subject(candidate) == (text, subject[2] == "r"):
                    subject = candidate
        out.append(
            message._replace(
                message_id=restored(message.message_id),
                in_reply_to=restored(message.in_reply_to),
                references=tuple(restored(ref) or ref for ref in message.references),
                subject=subject,
            )
        )
    return out


def _is_stand_in(message: ThreadInput) -> bool:
    # A stand-in's fields are all digests (or empty): its first field that is not tells.
    first = message.message_id or message.in_reply_to or message.subject or next(iter(message.references), "")
    return first.startswith(STAND_IN)


def reference_chain(message: ThreadInput) -> list[str]:
    """The ids a message refers to, oldest first, its In-Reply-To last; no repeats,
    no self-references, at most ``MAX_CHAIN`` entries."""
    own = message.message_id
    chain = [ref for ref in dict.fromkeys(message.references) if ref != own]
    irt = message.in_reply_to
    if irt and irt != own:
        if irt in chain:
            chain.remove(irt)
        chain.append(irt)
    if len(chain) > MAX_CHAIN:
        chain = [chain[0], *chain[len(chain) - MAX_CHAIN + 1 :]]
    return chain


def cluster_keys(message: ThreadInput, chain: list[str] | None = None) -> list[str]:
    """The keys through which threading can link this message to another one
    (``chain``: its ``reference_chain`` when already known).

    Two messages whose threads can influence each other are always connected by
    a path of shared keys: ids (``<``-prefixed) and normalized subjects (``s:``),
    each by its digest, so that a stand-in has the keys its message had.
    """
    keys = ["<" + _digest_of(ref)[:_KEY_DIGITS] for ref in (reference_chain(message) if chain is None else chain)]
    if message.message_id:
        keys.append("<" + _digest_of(message.message_id)[:_KEY_DIGITS])
    subject, _ = _subject_key(message)
    if subject:
        keys.append("s:" + _digest_of(subject)[:_KEY_DIGITS])
    return keys


def override_keys(overrides: Overrides) -> dict[str, list[str]]:
    """Call number -> the extra keys overrides give it: an attachment links the
    attached message and its new parent through a key both carry (``o:<call>``)."""
    keys: dict[str, list[str]] = {}
    for call, parent in overrides.items():
        if parent is not None:
            keys.setdefault(call, []).append("o:" + call)
            keys.setdefault(parent, []).append("o:" + call)
    return keys


class _Node:
    __slots__ = ("children", "id", "key", "message", "own_parent", "parent")

    def __init__(self, id: str, message: ThreadInput | None, key: tuple[int, str, str] | None = None) -> None:
        self.id = id
        self.message = message
        self.key = key
        """The message's ``sort_key`` (None for a placeholder)."""
        self.parent: _Node | None = None
        self.children: list[_Node] = []
        self.own_parent = False

    def root(self) -> _Node:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def has_ancestor(self, other: _Node) -> bool:
        node: _Node | None = self
        while node is not None:
            if node is other:
                return True
            node = node.parent
        return False


def _link(child: _Node, parent: _Node) -> bool:
    if parent.has_ancestor(child):
        return False
    child.parent = parent
    parent.children.append(child)
    return True


def thread_messages(
    messages: Iterable[ThreadInput],
    chains: Mapping[str, list[str]] | None = None,
    overrides: Overrides | None = None,
) -> list[Thread]:
    """Group messages into threads; the result depends only on the set of messages
    and the set of overrides.

    ``chains`` maps call numbers to their ``reference_chain`` when already known;
    ``overrides`` are the operator's corrections (rule 4)."""
    given = list(messages)
    restored = _restore(given)
    # Chains made before stand-ins were restored hold digests: make them again.
    chains_of = chains if restored is given else None
    keys = [m.sort_key for m in restored]
    by_id: dict[str, _Node] = {}
    nodes: list[_Node] = []
    for at in sorted(range(len(keys)), key=keys.__getitem__):
        message, sort_key = restored[at], keys[at]
        key = message.message_id
        if key is None or (key in by_id and by_id[key].message is not None):
            # No Message-ID, or a second message with the same one: nobody can
            # refer to it by id, so it gets a container of its own.
            key = "\0" + message.call
        node = by_id.get(key)
        if node is None:
            node = by_id[key] = _Node(key, message, sort_key)
        else:
            node.message = message
            node.key = sort_key
        nodes.append(node)

    def container(ref: str) -> _Node:
        node = by_id.get(ref)
        if node is None:
            node = by_id[ref] = _Node(ref, None)
        return node

    chains = [
        reference_chain(message) if chains_of is None else chains_of[message.call]
        for message in (node.message for node in nodes)
        if message is not None
    ]
    # 1. Own claims, latest first: In-Reply-To when archived, else the chain's last id.
    for node, chain in zip(reversed(nodes), reversed(chains), strict=True):
        message = node.message
        assert message is not None
        if not chain:
            continue
        irt = message.in_reply_to
        target = irt if irt and irt in chain and _is_archived(by_id.get(irt)) else chain[-1]
        if _link(node, container(target)):
            node.own_parent = True
    # 2. Implied links from every chain, in sort order, for parentless containers only.
    for chain in chains:
        for earlier, later in itertools.pairwise(chain):
            child = container(later)
            if child.parent is None:
                _link(child, container(earlier))
    # 3. Subject fallback for messages without references that ended up as roots.
    _thread_by_subject(nodes, chains)
    # 4. The operator's overrides, over everything the headers said.
    if overrides:
        _apply_overrides(nodes, overrides)
    roots = [node for node in by_id.values() if node.parent is None]
    return _collect(roots)


def _is_archived(node: _Node | None) -> bool:
    return node is not None and node.message is not None


def _thread_by_subject(nodes: Sequence[_Node], chains: Sequence[list[str]]) -> None:
    latest: dict[str, _Node] = {}
    """Normalized subject -> the latest message so far (in sort order) carrying it."""
    for node, chain in zip(nodes, chains, strict=True):
        message = node.message
        assert message is not None
        subject, replied = _subject_key(message)
        if not subject:
            continue
        earlier = latest.get(subject)
        latest[subject] = node
        if chain or not replied or node.parent is not None or earlier is None:
            continue
        assert earlier.message is not None
        if message.date - earlier.message.date > SUBJECT_WINDOW:
            continue
        target = earlier.root()
        if target is not node:
            _link(node, target)


def _apply_overrides(nodes: Sequence[_Node], overrides: Overrides) -> None:
    node_of = {node.message.call: node for node in nodes}  # type: ignore[union-attr]
    wanted = {
        call: parent
        for call, parent in overrides.items()
        if call in node_of and (parent is None or (parent in node_of and parent != call))
    }
    attach = {call: parent for call, parent in wanted.items() if parent is not None}
    _drop_override_loops(attach)
    for call in wanted:
        _unlink(node_of[call])

    def reaches(start: str, goal: str) -> bool:
        """Whether the parents ``start`` has now, attachments included, lead to ``goal``."""
        node: _Node | None = node_of[start]
        seen: set[int] = set()
        while node is not None and id(node) not in seen:
            seen.add(id(node))
            call = node.message.call if node.message is not None else None
            if call == goal:
                return True
            node = node_of[attach[call]] if call in attach else node.parent
        return False

    # A new parent below the message it adopts leaves the place its headers gave it.
    lifted = {parent for call, parent in attach.items() if parent not in attach and reaches(parent, call)}
    for call in lifted:
        _unlink(node_of[call])
    for call in sorted(attach):
        _link(node_of[call], node_of[attach[call]])


def _drop_override_loops(attach: dict[str, str]) -> None:
    """Remove, from each loop made by attachments alone, the one of the smallest call."""
    done: set[str] = set()
    for start in sorted(attach):
        path: list[str] = []
        call: str | None = start
        while call is not None and call not in done and call not in path:
            path.append(call)
            call = attach.get(call)
        if call is not None and call in path:
            del attach[min(path[path.index(call) :])]
        done.update(path)


def _unlink(node: _Node) -> None:
    parent = node.parent
    if parent is not None:
        parent.children.remove(node)
        node.parent = None


def _sort_key(node: _Node) -> tuple[int, str, str]:
    if node.key is not None:
        return node.key
    return min(_sort_key(child) for child in node.children)


def _collect(roots: list[_Node]) -> list[Thread]:
    threads: list[Thread] = []
    for root in roots:
        top = _prune(root)
        if not top:
            continue
        if len(top) == 1:
            placements = _walk(top[0], None, 0)
            threads.append(Thread(top[0].message.call, None, tuple(placements)))  # type: ignore[union-attr]
            continue
        top.sort(key=_sort_key)
        placements = []
        for child in top:
            placements.extend(_walk(child, None, 1))
        # A missing message only stand-ins named: its Message-ID is not known (nor shown).
        missing = "" if root.id.startswith(STAND_IN) else root.id
        threads.append(Thread(placements[0].call, missing, tuple(placements)))
    threads.sort(key=lambda t: t.id)
    return threads


def _prune(node: _Node) -> list[_Node]:
    """The real nodes that take this node's place: itself, or for a placeholder its
    children's replacements (recursively); children are pruned in place."""
    stack = [node]
    while stack:
        current = stack.pop()
        kept: list[_Node] = []
        for child in current.children:
            kept.extend(_replacements(child))
        current.children = kept
        stack.extend(kept)
    if node.message is not None:
        return [node]
    return node.children


def _replacements(node: _Node) -> list[_Node]:
    if node.message is not None:
        return [node]
    found: list[_Node] = []
    pending = list(node.children)
    while pending:
        child = pending.pop()
        if child.message is not None:
            found.append(child)
        else:
            pending.extend(child.children)
    return found


def _walk(top: _Node, parent: str | None, depth: int) -> list[Placement]:
    out: list[Placement] = []
    stack: list[tuple[_Node, str | None, int]] = [(top, parent, depth)]
    while stack:
        node, parent_call, level = stack.pop()
        assert node.message is not None
        out.append(Placement(node.message.call, parent_call, level))
        children = sorted(node.children, key=_sort_key)
        stack.extend((child, node.message.call, level + 1) for child in reversed(children))
    return out
