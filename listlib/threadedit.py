"""Editing the thread overrides: ``listlib threads --attach ID --to PARENT``,
``--detach ID`` and ``--undo ID``.

An ID (a call number, or a Message-ID that names exactly one message, of the list
given when several lists hold it) is resolved in the store; the new set of overrides
is checked as a whole (known messages of one list, no loop); then, under the store
lock, the edit is recorded in the ledger (an audit record: ``attach``, ``detach``,
``undo-override``) and ``content/threads.toml`` is replaced atomically. The file is
the truth for threading: the next build or 'listlib threads' rethreads exactly the
threads the edit names. A process killed between the two leaves a ledger entry for
an edit not made; running the command again makes it.

Click-free: the CLI parses, calls ``edit_override`` and prints what it returns;
nothing here prints. A file with errors of form (bad TOML, unknown keys) is never
rewritten: it must be fixed by hand first, so nothing an operator wrote is lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import Config
from .errors import ListlibError, OverridesError
from .overrides import (
    OVERRIDES_NAME,
    ListOverrides,
    check_against_store,
    find_loop,
    index_lookup,
    parse_overrides,
    read_overrides,
    write_overrides,
)
from .store.core import Store
from .store.index import FILED, HIDDEN, Index, Row
from .store.ledger import Action, Entry
from .values import is_call_number

__all__ = ["OverrideEdit", "edit_override", "resolve_message"]

_NONE = "-"
"""``OverrideEdit.before`` when the message had no override."""


@dataclass
class OverrideEdit:
    """What an attach, detach or undo did (or, with ``dry_run``, would do)."""

    action: Action
    dry_run: bool
    path: Path
    message: Row
    parent: Row | None = None
    """The message it now answers (attach)."""
    before: str | None = _NONE
    """Its override before: the call it answered, None (detached), or ``"-"`` (none)."""
    changed: bool = True
    """False when the override was already as asked (nothing written or recorded)."""
    entry: Entry | None = None

    def summary(self) -> str:
        call, slug = self.message.call, self.message.list
        if self.action == "attach":
            assert self.parent is not None
            what = f"{call} answers {self.parent.call} in list {slug}"
        elif self.action == "detach":
            what = f"{call} starts its own thread in list {slug}"
        else:
            was = "detached" if self.before is None else f"attached to {self.before}"
            what = f"{call} is no longer {was}: its headers thread it again in list {slug}"
        if not self.changed:
            return f"already so: {what}; nothing was changed"
        if self.dry_run:
            return f"would write {self.path.name}: {what} (dry run: nothing was changed)"
        entry = f"; ledger entry {self.entry.seq}" if self.entry is not None else ""
        return f"{what} (written to {self.path}{entry})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "dry_run": self.dry_run,
            "changed": self.changed,
            "list": self.message.list,
            "message": self.message.call,
            "parent": self.parent.call if self.parent is not None else None,
            "before": None if self.before == _NONE else {"parent": self.before},
            "file": str(self.path),
            "ledger_entry": self.entry.seq if self.entry is not None else None,
        }


def resolve_message(index: Index, ident: str, slug: str | None = None) -> Row:
    """The one filed or hidden message ``ident`` (a call number or a Message-ID) names,
    in list ``slug`` when given; ``ListlibError`` when it names none or several."""
    states = (FILED, HIDDEN)
    found: list[Row] = []
    if is_call_number(ident):
        found = [row for row in index.rows_by_call([ident]) if row.state in states]
    if not found:
        found = index.find_rows(states, message_id=ident.strip().strip("<>"))
    if slug is not None:
        found = [row for row in found if row.list == slug]
    where = f" in list {slug!r}" if slug is not None else ""
    if not found:
        raise ListlibError(f"no message{where} has the call number or Message-ID {ident!r}; nothing was changed")
    if len(found) > 1:
        shown = ", ".join(f"{row.call} (list {row.list})" for row in found[:6])
        raise ListlibError(
            f"the Message-ID {ident!r} names {len(found)} messages{where}: {shown}; "
            "give a call number (or --list); nothing was changed"
        )
    return found[0]


def edit_override(
    config: Config,
    action: Action,
    ident: str,
    *,
    parent: str | None = None,
    slug: str | None = None,
    reason: str = "",
    by: str,
    dry_run: bool = False,
    clock: Callable[[], float] = time.time,
) -> OverrideEdit:
    """Attach ``ident`` to ``parent``, detach it, or undo its override (``action``:
    ``attach``, ``detach`` or ``undo-override``); ``by``: the command line, kept in the
    ledger with ``reason``. Raises ``ListlibError`` (nothing changed) when an ID is
    unknown or ambiguous, the message has no override to undo, or the result would be
    a bad file."""
    if action not in ("attach", "detach", "undo-override"):
        raise ValueError(action)
    if (action == "attach") != (parent is not None):
        raise ValueError("a parent is given with attach, and only then")
    content = config.site.content_dir
    path = content / OVERRIDES_NAME
    with Store(content).open() as store, store.locked():
        current = _current(store.root, path)
        row = resolve_message(store.index, ident, slug)
        mine = current.get(row.list, {})
        report = OverrideEdit(action, dry_run, path, row, before=mine.get(row.call, _NONE))
        wanted: str | None
        if action == "attach":
            assert parent is not None
            report.parent = resolve_message(store.index, parent, row.list)
            if report.parent.call == row.call:
                raise ListlibError(f"message {row.call} cannot answer itself; nothing was changed")
            wanted = report.parent.call
        elif action == "detach":
            wanted = None
        elif report.before == _NONE:
            raise ListlibError(f"message {row.call} of list {row.list} has no thread override; nothing was changed")
        else:
            wanted = _NONE
        if wanted == report.before:
            report.changed = False
            return report
        edited = {s: dict(items) for s, items in current.items()}
        if wanted == _NONE:
            edited[row.list].pop(row.call)
        else:
            edited.setdefault(row.list, {})[row.call] = wanted
        _check(edited, store.index, config, path, row)
        if dry_run:
            return report
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock()))
        rows = [row] if report.parent is None else [row, report.parent]
        report.entry = store.record(action, rows, reason.strip(), by, at)
        write_overrides(store.root, {s: items for s, items in edited.items() if items})
    return report


def _current(root: Path, path: Path) -> ListOverrides:
    """The overrides in the file now; a file with errors of form is refused."""
    text = read_overrides(root)
    if text is None:
        return {}
    current, problems = parse_overrides(text, str(path))
    if problems:
        raise OverridesError(str(path), [*problems, "fix the file by hand first; nothing was changed"])
    return current


def _check(edited: ListOverrides, index: Index, config: Config, path: Path, row: Row) -> None:
    loop = find_loop({call: parent for call, parent in edited.get(row.list, {}).items() if parent is not None})
    if loop:
        shown = " -> ".join([*loop, loop[0]])
        raise ListlibError(
            f"attaching {row.call} would make the overrides of list {row.list} loop: {shown}; nothing was changed"
        )
    lists = [lst.slug for lst in config.lists]
    problems = check_against_store(edited, "", str(path), lists, index_lookup(index))
    if problems:
        raise OverridesError(str(path), [*problems, "nothing was changed"])
