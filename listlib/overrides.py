"""Thread overrides: ``content/threads.toml``, the operator's corrections to the threads
listlib makes from the headers, editable by hand or with ``listlib threads --attach``,
``--detach`` and ``--undo``.

The format, one table per list, messages named by call number (stable forever;
a Message-ID may name several messages)::

    [dev]
    detach = ["0Abc55Zz"]        # these messages start threads of their own

    [dev.attach]
    0Abc12Xy = "0Abc00Aa"        # this message answers that one

Each message has at most one override. The file is checked as a whole; every
problem is reported at once, naming the file, the line and the entry:

* TOML that does not parse; a list table with keys other than ``attach`` and
  ``detach``; entries that are not call numbers; a message listed twice or both
  attached and detached; a message attached to itself;
* a list that is not configured in listlib.toml; a call number that names no
  message in the store, or a message of another list;
* attachments that make a loop (a answers b, b answers a).

A bad file is an error that stops threading ('listlib build' and 'listlib threads'
exit 1 and leave the website as it was), and 'listlib check' reports it: an
override silently ignored would re-root threads and rewrite pages the operator
corrected, then rewrite them back once the file is fixed (DESIGN.md, invariant 7:
a configuration mistake is an error naming the key). An override naming a hidden
message is kept, and has no effect while the message is hidden.

The file is written whole, in the form above, to a temporary file that is fsynced
and renamed over it (the caller holds the store lock); comments written by hand are
not kept by such a rewrite. This module reads, checks and writes the file; it never
threads and never touches the ledger.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from .errors import OverridesError
from .fsutil import fsync_dir, naming, write_all
from .store.index import FILED, HIDDEN, REMOVED, Index
from .values import is_call_number

__all__ = [
    "OVERRIDES_NAME",
    "ListOverrides",
    "Lookup",
    "check_against_store",
    "find_loop",
    "format_overrides",
    "index_lookup",
    "load_overrides",
    "overrides_problems",
    "parse_overrides",
    "read_overrides",
    "write_overrides",
]

OVERRIDES_NAME = "threads.toml"

ListOverrides = dict[str, dict[str, str | None]]
"""List slug -> call number -> the call number it answers, or None (detached)."""

Lookup = Callable[[Iterable[str]], Mapping[str, str]]
"""Call numbers -> the list of each one that the store holds (filed or hidden)."""

_HEADER = """\
# Thread overrides: corrections to the threads listlib makes from the headers.
# Per list: [<list>] detach = [...] names messages that start threads of their own;
# [<list>.attach] <call> = "<parent call>" says a message answers another one.
# Edit by hand, or with 'listlib threads --attach/--detach/--undo' (which rewrites
# this file in this form; comments are not kept). See README.md, "Threads".
"""


def parse_overrides(text: str, where: str) -> tuple[ListOverrides, list[str]]:
    """The overrides in ``text`` and the problems of its form (``where``: the file's
    name, for messages). Entries with problems are left out."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        text = str(exc)
        place = re.search(r" \(at line (\d+), column (\d+)\)$", text)
        if place:
            where, text = f"{where}, line {place[1]}, column {place[2]}", text[: place.start()]
        elif text.endswith(" (at end of document)"):
            text = text.removesuffix(" (at end of document)") + " at the end of the file"
        return {}, [f"{where}: TOML syntax error: {text}"]
    locate = _Locator(text, where)
    found: ListOverrides = {}
    problems: list[str] = []
    for slug, table in data.items():
        if not isinstance(table, dict):
            problems.append(f"{locate(slug)}: {slug!r} must be a table of a list's overrides ([{slug}])")
            continue
        mine = found[slug] = {}
        for key in table.keys() - {"attach", "detach"}:
            problems.append(f"{locate(slug, key)}: [{slug}] {key}: unknown key (only 'attach' and 'detach')")
        detach = table.get("detach", [])
        if not isinstance(detach, list):
            problems.append(f"{locate(slug, 'detach')}: [{slug}] detach must be a list of call numbers")
            detach = []
        for call in detach:
            at = locate(slug, call if isinstance(call, str) else "detach")
            if not isinstance(call, str) or not is_call_number(call):
                problems.append(f"{at}: [{slug}] detach: {call!r} is not a call number")
            elif call in mine:
                problems.append(f"{at}: [{slug}] detach: {call} is listed twice")
            else:
                mine[call] = None
        attach = table.get("attach", {})
        if not isinstance(attach, dict):
            problems.append(f"{locate(slug, 'attach')}: [{slug}] attach must be a table ([{slug}.attach])")
            attach = {}
        for call, parent in attach.items():
            at = locate(slug, call, key=True)
            if not is_call_number(call):
                problems.append(f"{at}: [{slug}.attach] {call!r} is not a call number")
            elif not isinstance(parent, str) or not is_call_number(parent):
                problems.append(f"{at}: [{slug}.attach] {call} = {parent!r}: the parent is not a call number")
            elif parent == call:
                problems.append(f"{at}: [{slug}.attach] {call} cannot answer itself")
            elif call in mine:
                problems.append(f"{at}: [{slug}] {call} is both detached and attached")
            else:
                mine[call] = parent
        attached = {call: parent for call, parent in mine.items() if parent is not None}
        while loop := find_loop(attached):
            shown = " -> ".join([*loop, loop[0]])
            problems.append(f"{locate(slug, loop[0], key=True)}: [{slug}.attach] attachments make a loop: {shown}")
            for call in loop:
                attached.pop(call, None)
                mine.pop(call, None)
    return found, problems


def find_loop(attach: Mapping[str, str]) -> list[str] | None:
    """The first loop (in call number order) the attachments make, or None."""
    done: set[str] = set()
    for start in sorted(attach):
        path: dict[str, int] = {}
        call: str | None = start
        while call is not None and call not in done and call not in path:
            path[call] = len(path)
            call = attach.get(call)
        if call is not None and call in path:
            return list(path)[path[call] :]
        done.update(path)
    return None


def check_against_store(
    overrides: ListOverrides, text: str, where: str, lists: Iterable[str], lookup: Lookup
) -> list[str]:
    """Problems of overrides that name a list not configured, or messages the store
    does not have in that list."""
    locate = _Locator(text, where)
    known = set(lists)
    named = {call for mine in overrides.values() for c, p in mine.items() for call in (c, p) if call}
    list_of = lookup(sorted(named))
    problems: list[str] = []
    for slug, mine in overrides.items():
        if slug not in known:
            problems.append(f"{locate(slug)}: [{slug}]: no list {slug!r} in listlib.toml")
            continue
        for call, parent in mine.items():
            table = f"[{slug}.attach] {call}" if parent else f"[{slug}] detach {call}"
            at = locate(slug, call, key=parent is not None)
            for name, role in ((call, "message"), (parent, "parent")):
                if name is None:
                    continue
                if name not in list_of:
                    problems.append(f"{at}: {table}: no {role} {name} in the store")
                elif list_of[name] != slug:
                    problems.append(f"{at}: {table}: {role} {name} is in list {list_of[name]!r}, not {slug!r}")
    return problems


def index_lookup(index: Index) -> Lookup:
    """A ``Lookup`` over the index: filed, hidden and removed messages count (a removed
    one keeps its place)."""

    def lookup(calls: Iterable[str]) -> dict[str, str]:
        return {row.call: row.list for row in index.rows_by_call(calls) if row.state in (FILED, HIDDEN, REMOVED)}

    return lookup


def read_overrides(root: Path) -> str | None:
    """The text of ``root``/threads.toml, or None when there is none."""
    path = root / OVERRIDES_NAME
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise OverridesError(str(path), [f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})"]) from None
    except OSError as exc:
        raise OverridesError(str(path), [f"{path}: cannot be read: {exc.strerror}"]) from None


def overrides_problems(root: Path, index: Index, lists: Iterable[str]) -> tuple[ListOverrides, list[str]]:
    """The overrides of the store at ``root`` and every problem of its file."""
    path = root / OVERRIDES_NAME
    try:
        text = read_overrides(root)
    except OverridesError as exc:
        return {}, list(exc.problems)
    if text is None:
        return {}, []
    overrides, problems = parse_overrides(text, str(path))
    problems.extend(check_against_store(overrides, text, str(path), lists, index_lookup(index)))
    return overrides, problems


def load_overrides(root: Path, index: Index, lists: Iterable[str]) -> ListOverrides:
    """The overrides of the store at ``root``, checked; ``OverridesError`` listing
    every problem when the file has any."""
    overrides, problems = overrides_problems(root, index, lists)
    if problems:
        raise OverridesError(str(root / OVERRIDES_NAME), problems)
    return {slug: mine for slug, mine in overrides.items() if mine}


def threading_overrides(root: Path, index: Index, lists: Iterable[str]) -> ListOverrides:
    """What the threader applies: the operator's overrides (``load_overrides``), plus
    what removed messages pin (``Index.removal_pins``: a removed message stays under
    the message it answered, its answers under it) where the operator says nothing."""
    merged = {slug: dict(mine) for slug, mine in load_overrides(root, index, lists).items()}
    for slug in index.slugs_with_removals():
        mine = merged.setdefault(slug, {})
        for call, parent in index.removal_pins(slug).items():
            mine.setdefault(call, parent)
    return merged


def format_overrides(overrides: ListOverrides) -> str:
    """The file's text for these overrides (lists and calls sorted)."""
    parts = [_HEADER]
    for slug in sorted(overrides):
        mine = overrides[slug]
        if not mine:
            continue
        name = slug if re.fullmatch(r"[A-Za-z0-9_-]+", slug) else json.dumps(slug)
        detached = sorted(call for call, parent in mine.items() if parent is None)
        attached = sorted((call, parent) for call, parent in mine.items() if parent is not None)
        parts.append(f"\n[{name}]\n")
        parts.append("detach = [" + ", ".join(json.dumps(call) for call in detached) + "]\n")
        if attached:
            parts.append(f"\n[{name}.attach]\n")
            parts.extend(f"{call} = {json.dumps(parent)}\n" for call, parent in attached)
    return "".join(parts)


def write_overrides(root: Path, overrides: ListOverrides) -> None:
    """Replace the file atomically: a temporary file, fsync, rename, folder fsync."""
    path = root / OVERRIDES_NAME
    temporary = root / f".{OVERRIDES_NAME}.tmp"
    data = format_overrides(overrides).encode("utf-8")
    try:
        with naming(temporary):
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
        with naming(path):
            os.replace(temporary, path)
            fsync_dir(root)
    except OSError as exc:
        raise OverridesError(str(path), [f"{path}: cannot be written: {exc}"]) from exc


class _Locator:
    """``file, line N`` of a list's table or one of its entries (the first line that
    names it after the list's table header), or just ``file`` when it is not found."""

    def __init__(self, text: str, where: str) -> None:
        self.lines = text.splitlines()
        self.where = where

    def __call__(self, slug: str, name: str | None = None, *, key: bool = False) -> str:
        header = re.compile(r"\s*\[\s*\"?" + re.escape(slug) + r"\"?\s*[.\]]")
        start = next((n for n, line in enumerate(self.lines) if header.match(line)), None)
        if start is None:
            assigned = re.compile(r"\s*\"?" + re.escape(slug) + r"\"?\s*[.=]")
            start = next((n for n, line in enumerate(self.lines) if assigned.match(line)), None)
        if name is None:
            return self._at(start)
        if key:
            pattern = re.compile(r"\s*\"?" + re.escape(name) + r"\"?\s*=")
        else:
            pattern = re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])")
        match = pattern.match if key else pattern.search
        order = list(range(start or 0, len(self.lines))) + list(range(start or 0))
        return self._at(next((n for n in order if match(self.lines[n])), start))

    def _at(self, number: int | None) -> str:
        return self.where if number is None else f"{self.where}, line {number + 1}"
