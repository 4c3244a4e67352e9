"""Verify the store against its index, and repair what can be repaired.

``check_store`` changes nothing and reports every problem; ``repair_store``
rebuilds the index from the files (the files are the truth) and removes
leftovers. Both hold the store lock, so they see the store between batches.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .index import FILED
from .layout import iter_message_files, row_from_file
from .store import Store
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
            elif row.path != rel:
                report.problems.append(f"{rel}: the index has it at {row.path}")
            elif row.raw_hash != result.raw_hash:
                report.problems.append(f"{rel}: its bytes changed since it was filed")
            elif row.state != FILED:
                report.problems.append(f"{rel}: filing was interrupted (row still pending)")
        for call, row in rows.items():
            if call not in seen:
                report.problems.append(f"{row.path}: in the index but the file is missing")
        report.leftovers.extend(_leftovers(store))
    return report


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
