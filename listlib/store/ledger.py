"""The ledger: ``content/ledger.jsonl``, the store's own record of what its stewards did
(hide, unhide, thread overrides ...), one JSON object per line, appended and fsynced before the action
takes effect, never rewritten.

It lives in the store, not the cache, because nothing else can rebuild it: the index
is derived from the message files *and* the ledger (``Store.rebuild_index`` applies
every entry), so a rebuilt index, a store copied to another machine and a re-import
all see the same hidden mail. Each entry says what was done, when, why and by which
command, and names the messages by call number and list::

    {"seq": 3, "at": "2026-11-25T16:20:05Z", "action": "hide", "reason": "spam",
     "by": "listlib hide --query casino", "messages": [{"call": "0Abc12Xy", "list": "dev"}]}

A take-down (``remove``) keeps, per message, only what refuses a copy of it later and
what keeps its place: the digests of its bytes (``raw_hash``), of its sender, subject
and normalized body (``vitals``) and of its Message-ID (``mid_hash``), where it was
filed (``path``, ``date``) and its place in its thread (``pins``: the calls it answers
and its answers', then the digests of its Message-ID, In-Reply-To, normalized subject
and References, which thread it as it was) -- never its content::

    {"seq": 4, "at": "...", "action": "remove", "reason": "privacy request", "by": "...",
     "messages": [{"call": "0Abc12Xy", "list": "dev", "path": "dev/2024/05/0Abc12Xy.eml",
                   "date": 1715941800, "raw_hash": "...", "vitals": "...",
                   "mid_hash": "...", "pins": "0Abc12Xw 0Abc12Y3 | ... - r... ..."}]}

A redaction (``redact``) keeps the digests of what the message was, so that a copy of
the original is known as the redacted message's duplicate, and the hash of the edited
copy that replaced it (``new_hash``)::

    {"seq": 5, "at": "...", "action": "redact", "reason": "phone number", "by": "...",
     "messages": [{"call": "0Abc12Xy", "list": "dev", "path": "dev/2024/05/0Abc12Xy.eml",
                   "raw_hash": "...", "vitals": "...", "new_hash": "..."}]}

Thread overrides are recorded here too, as an audit record: ``attach`` names the
message and then the message it now answers, ``detach`` the message that now starts
its own thread, ``undo-override`` the message whose override was removed. Their truth
is ``content/threads.toml`` (``listlib.overrides``); applying them to the index does
nothing.

Entries are appended before the action is applied, so a process killed in between
leaves an entry whose action the next holder of the store lock applies (the index
remembers how many bytes of the ledger it has applied). A line cut short by a kill
is the record of an action that never started: it is cut off under the lock.

This module reads and appends the file; it never touches the index or the messages.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal, NamedTuple

from ..errors import StoreError
from ..fsutil import fsync_dir

__all__ = [
    "ACTIONS",
    "LEDGER_NAME",
    "Action",
    "Entry",
    "LedgerMessage",
    "Redaction",
    "Removal",
    "append_entry",
    "cut_torn_line",
    "hidden_of",
    "ledger_size",
    "read_ledger",
    "removed_of",
]

LEDGER_NAME = "ledger.jsonl"

Action = Literal["hide", "unhide", "remove", "redact", "attach", "detach", "undo-override"]
ACTIONS: tuple[Action, ...] = ("hide", "unhide", "remove", "redact", "attach", "detach", "undo-override")


class Removal(NamedTuple):
    """What the ledger keeps of a removed message (see the module docstring)."""

    path: str
    date: int
    raw_hash: str
    vitals: str
    mid_hash: str | None
    pins: str | None


class Redaction(NamedTuple):
    """What the ledger keeps of a redacted message's original (see the module docstring)."""

    path: str
    raw_hash: str
    vitals: str
    new_hash: str
    """The content hash of the edited copy that replaced it."""


class LedgerMessage(NamedTuple):
    """A message an entry acts on."""

    call: str
    list: str
    removal: Removal | None = None
    """For ``remove``: what is kept of it."""
    redaction: Redaction | None = None
    """For ``redact``: what is kept of its original."""

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"call": self.call, "list": self.list}
        for kept in (self.removal, self.redaction):
            if kept is not None:
                data.update(kept._asdict())
        return data


class Entry(NamedTuple):
    """One line of the ledger."""

    seq: int
    at: str
    """UTC time, ISO 8601 (``2026-11-25T16:20:05Z``)."""
    action: Action
    reason: str
    """Why (as the operator gave it; may be empty for ``unhide``)."""
    by: str
    """The command that did it."""
    messages: tuple[LedgerMessage, ...]

    def to_dict(self) -> dict[str, object]:
        """The entry as its line holds it (and ``listlib ledger --json`` shows it)."""
        return {
            "seq": self.seq,
            "at": self.at,
            "action": self.action,
            "reason": self.reason,
            "by": self.by,
            "messages": [m.to_dict() for m in self.messages],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


def _entry(data: object, line: Callable[[], int], path: Path) -> Entry:
    try:
        assert isinstance(data, dict)
        action = data["action"]
        if action not in ACTIONS:
            raise ValueError(f"unknown action {action!r}")
        messages = tuple(_message(m, action) for m in data["messages"])
        return Entry(int(data["seq"]), str(data["at"]), action, str(data["reason"]), str(data["by"]), messages)
    except (AssertionError, KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"{path}, line {line()}: not a ledger entry ({exc}); the ledger must not be edited") from None


def _message(data: dict[str, object], action: str) -> LedgerMessage:
    removal = None
    if action == "remove":
        mid_hash, pins = data.get("mid_hash"), data.get("pins")
        removal = Removal(
            str(data["path"]),
            int(data["date"]),  # type: ignore[call-overload]
            str(data["raw_hash"]),
            str(data["vitals"]),
            None if mid_hash is None else str(mid_hash),
            None if pins is None else str(pins),
        )
    redaction = None
    if action == "redact":
        redaction = Redaction(str(data["path"]), str(data["raw_hash"]), str(data["vitals"]), str(data["new_hash"]))
    return LedgerMessage(str(data["call"]), str(data["list"]), removal, redaction)


def read_ledger(root: Path, start: int = 0) -> tuple[list[Entry], int]:
    """The entries of the ledger from byte ``start`` on, and the byte length of its
    complete lines (a torn last line is left out). No ledger: no entries."""
    path = root / LEDGER_NAME
    try:
        with open(path, "rb") as file:
            file.seek(start)
            data = file.read()
    except FileNotFoundError:
        return [], 0
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the ledger: {exc.strerror}") from exc
    complete = data.rfind(b"\n") + 1
    entries = []
    for number, text in enumerate(data[:complete].splitlines()):
        if not text.strip():
            continue
        try:
            decoded = json.loads(text)
        except ValueError as exc:
            line = _line_number(path, start, number)
            raise StoreError(f"{path}, line {line}: not JSON ({exc}); the ledger must not be edited") from None
        entries.append(_entry(decoded, lambda n=number: _line_number(path, start, n), path))
    return entries, start + complete


def _line_number(path: Path, start: int, number: int) -> int:
    """The line number, for an error, of the ``number``-th line read from byte ``start``."""
    if not start:
        return number + 1
    with open(path, "rb") as file:
        return file.read(start).count(b"\n") + number + 1


def cut_torn_line(root: Path) -> bool:
    """Cut off a last line a killed append left unfinished (call under the store lock).
    Returns whether there was one."""
    path = root / LEDGER_NAME
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return False
    if size == 0:
        return False
    with open(path, "rb+") as file:
        file.seek(max(0, size - 65536))
        tail = file.read()
        if tail.endswith(b"\n"):
            return False
        cut = tail.rfind(b"\n")
        keep = size - len(tail) + cut + 1 if cut >= 0 else 0
        if cut < 0 and size > len(tail):
            raise StoreError(
                f"{path}: its last line is unfinished and longer than 64 KiB; the ledger must not be edited"
            )
        file.truncate(keep)
        os.fsync(file.fileno())
    return True


def ledger_size(root: Path) -> int:
    """The ledger's length in bytes (0 when there is none)."""
    try:
        return (root / LEDGER_NAME).stat().st_size
    except FileNotFoundError:
        return 0


def append_entry(root: Path, entry: Entry) -> int:
    """Append ``entry`` and make it durable (call under the store lock); returns the
    ledger's new length."""
    path = root / LEDGER_NAME
    created = not path.exists()
    line = (entry.to_json() + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(28, "short write")
            os.fsync(fd)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if created:
            fsync_dir(root)
    except OSError as exc:
        raise StoreError(f"{path}: cannot append to the ledger: {exc.strerror or exc}") from exc
    return size


def hidden_of(entries: Iterable[Entry]) -> dict[str, LedgerMessage]:
    """Call number -> message, of the messages hidden (and not unhidden since)."""
    hidden: dict[str, LedgerMessage] = {}
    for entry in entries:
        for message in entry.messages:
            if entry.action == "hide":
                hidden[message.call] = message
            elif entry.action in ("unhide", "remove"):
                hidden.pop(message.call, None)
    return hidden


def removed_of(entries: Iterable[Entry]) -> dict[str, tuple[LedgerMessage, Entry]]:
    """Call number -> (message, entry) of the messages removed."""
    return {m.call: (m, entry) for entry in entries if entry.action == "remove" for m in entry.messages}
