"""Verify the store against its index, and repair what can be repaired.

``check_store`` changes nothing and reports every problem; ``repair_store``
rebuilds the index from the files (the files are the truth) and removes
leftovers. Both hold the store lock, so they see the store between batches.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .errors import StoreError
from .store.core import Store
from .store.index import FILED, HIDDEN, REMOVED, Row
from .store.layout import iter_message_files, row_from_file
from .store.ledger import hidden_of, read_ledger, removed_of
from .values import is_call_number

__all__ = ["CheckReport", "check_store", "repair_store"]


@dataclass
class CheckReport:
    """Problems found by ``check_store``; empty lists mean a clean store."""

    messages: int = 0
    problems: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and not self.leftovers


def check_store(store: Store) -> CheckReport:
    """Verify the store against its index without changing anything."""
    report = CheckReport()
    with store.locked(recover=False):
        rows = {row.call: row for row in store.index.iter_rows()}
        report.messages = len(rows)
        seen: dict[str, str] = {}
        pending = 0
        for rel, path in iter_message_files(store.root):
            result = row_from_file(rel, path)
            if isinstance(result, str):
                report.problems.append(result)
                continue
            if result.call in seen:
                report.problems.append(f"{rel}: call number {result.call} is also used by {seen[result.call]}")
                continue
            seen[result.call] = rel
            row = rows.get(result.call)
            if row is None:
                report.problems.append(f"{rel}: not in the index")
            elif row.state == REMOVED:
                report.problems.append(
                    f"{rel}: removed by the ledger, but its file is in the store: 'listlib check --repair' deletes it"
                )
            elif row.path != rel:
                report.problems.append(f"{rel}: the index has it at {row.path}")
            elif row.raw_hash != result.raw_hash:
                report.problems.append(f"{rel}: its bytes changed since it was filed")
            elif row.state not in (FILED, HIDDEN):
                pending += 1
        never_stored = 0
        for call, row in rows.items():
            if call not in seen and row.state != REMOVED:
                if row.state not in (FILED, HIDDEN):
                    never_stored += 1
                else:
                    report.problems.append(f"{row.path}: in the index but the file is missing")
        if pending or never_stored:
            # A killed import or fetch leaves its last batch pending; the next run (or
            # --repair) resolves it. Thousands of lines, one per row, would hide that.
            report.problems.append(
                f"an interrupted import or fetch left {pending + never_stored} messages pending "
                f"({pending} stored, {never_stored} not yet stored): the next 'listlib import' or "
                "'listlib fetch', or 'listlib check --repair', finishes them; import the same "
                "sources again (or fetch again) to file the ones not yet stored"
            )
        if store.refile_interrupted():
            report.problems.append(
                "an interrupted 'listlib unrouted --refile' is unfinished: "
                "the next 'listlib import', 'listlib fetch' or 'listlib unrouted', or 'listlib check --repair', "
                "finishes it"
            )
        report.problems.extend(_ledger_problems(store, rows))
        report.leftovers.extend(_summarised(_leftovers(store)))
    return report


def _ledger_problems(store: Store, rows: dict[str, Row]) -> list[str]:
    """Where the index disagrees with the ledger (which the next lock holder, or
    ``--repair``, brings it back to), or the ledger names mail the store lost."""
    try:
        entries, _size = read_ledger(store.root)
    except StoreError as exc:
        return [str(exc)]
    problems = []
    hidden = hidden_of(entries)
    for call, message in sorted(hidden.items()):
        row = rows.get(call)
        if row is None:
            problems.append(f"ledger: hidden message {message.list}/{call} is not in the store")
        elif row.state != HIDDEN:
            problems.append(f"ledger: {row.path} is hidden by the ledger but not in the index")
    for call, row in sorted(rows.items()):
        if row.state == HIDDEN and call not in hidden:
            problems.append(f"ledger: {row.path} is hidden in the index but not by the ledger")
    removed = removed_of(entries)
    for call, (message, _entry) in sorted(removed.items()):
        row = rows.get(call)
        if row is None or row.state != REMOVED:
            problems.append(f"ledger: {message.list}/{call} is removed by the ledger but not in the index")
    for call, row in sorted(rows.items()):
        if row.state == REMOVED and call not in removed:
            problems.append(f"ledger: {row.path} is removed in the index but not by the ledger")
    edited = {m.call: m.redaction for entry in entries if entry.action == "redact" for m in entry.messages}
    for call, kept in sorted(edited.items()):
        row = rows.get(call)
        if kept is not None and row is not None and row.state in (FILED, HIDDEN) and row.raw_hash != kept.new_hash:
            problems.append(f"ledger: {row.path} is not the edited copy its redaction made")
    return problems


def _summarised(leftovers: list[str]) -> list[str]:
    """The leftovers, with the temporary files of an interrupted run counted on one line."""
    temporary = [line for line in leftovers if line.startswith(".tmp/")]
    if len(temporary) <= 3:
        return leftovers
    rest = [line for line in leftovers if not line.startswith(".tmp/")]
    return [f".tmp/: {len(temporary)} temporary files left by an interrupted run", *rest]


def _leftovers(store: Store) -> list[str]:
    found = [f".tmp/{entry.name}: temporary file left by an interrupted run" for entry in os.scandir(store.tmp_dir)]
    for dirpath, dirnames, filenames in os.walk(store.root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if name.endswith(".json") and name[:-5] + ".eml" not in filenames and is_call_number(name[:-5]):
                rel = os.path.relpath(os.path.join(dirpath, name), store.root)
                found.append(f"{rel}: metadata without its message")
    return sorted(found)


def repair_store(store: Store) -> list[str]:
    """Rebuild the index from the files and remove leftovers; return what was done."""
    done: list[str] = []
    with store.locked():
        for entry in _leftovers(store):
            rel = entry.split(":", 1)[0]
            if not rel.startswith(".tmp/"):
                (store.root / rel).unlink(missing_ok=True)
            done.append(f"removed {rel}")
        refused = store.rebuild_index()
        done.extend(f"not indexed: {line}" for line in refused)
        done.append(f"rebuilt the index: {store.index.count()} messages")
    return done
