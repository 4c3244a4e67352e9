"""Deletions public-inbox recorded upstream (``d`` commits that ``listlib import`` read
from an inbox's epochs): report them and, when asked (``--apply-deletions``), take the
stored copies down through ``listlib remove``'s own path (``stewardship.steward``,
with its ledger entry and tombstones), then forget them in the epochs' records.

A deletion stays in its epoch's record until this has run to the end, so a kill at any
instant only means it is reported (and applied) again by the next import: a copy
already removed is then counted as such, never removed twice. Click-free; never prints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .config import Config
from .filing import FilingReport
from .inboxlog import STATE_FOLDER, forget_deletions
from .stewardship import Selector, StewardReport, steward
from .store.index import FILED, HIDDEN, REMOVED
from .values import plural

__all__ = ["REASON", "UpstreamReport", "settle_upstream_deletions"]

REASON = "deleted upstream in public-inbox"
"""The ledger's reason for a take-down applied from a public-inbox deletion."""


@dataclass
class UpstreamReport:
    """What became of the deletions an import read."""

    deletions: list[dict[str, object]] = field(default_factory=list)
    applied: bool = False
    """``--apply-deletions``: stored copies were removed (or, on a dry run, would be)."""
    dry_run: bool = False
    stored: list[str] = field(default_factory=list)
    """Call numbers of the stored copies (filed or hidden) of deleted messages."""
    already_removed: int = 0
    not_stored: int = 0
    removal: StewardReport | None = None

    def summary(self) -> str:
        count = plural(len(self.deletions), "message")
        absent = f", {self.not_stored} not in the store" if self.not_stored else ""
        gone = f", {self.already_removed} already removed" if self.already_removed else ""
        if not self.applied:
            return (
                f"{count} deleted upstream in public-inbox: {len(self.stored)} stored here{gone}{absent} "
                "(not removed; see --apply-deletions)"
            )
        verb = "would be removed" if self.dry_run else "removed"
        entry = f" (ledger entry {self.removal.entry.seq})" if self.removal and self.removal.entry else ""
        return f"{count} deleted upstream in public-inbox: {len(self.stored)} {verb}{entry}{gone}{absent}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "deletions": self.deletions,
            "applied": self.applied,
            "stored": self.stored,
            "already_removed": self.already_removed,
            "not_stored": self.not_stored,
            "removal": self.removal.to_dict() if self.removal is not None else None,
        }


def settle_upstream_deletions(
    config: Config,
    report: FilingReport,
    *,
    apply: bool,
    by: str,
    clock: Callable[[], float],
    fault: Callable[[str], None] | None = None,
) -> UpstreamReport:
    """Deal with the deletions of ``report`` (see the module docstring); run it after the
    import's store is closed (``steward`` takes the store lock itself)."""
    result = UpstreamReport(report.deleted_upstream, apply, report.dry_run)
    stored: set[str] = set()
    for item in report.deleted_upstream:
        states = list(item["states"])  # type: ignore[call-overload]
        calls = list(item["calls"])  # type: ignore[call-overload]
        live = [call for call, state in zip(calls, states, strict=True) if state in (FILED, HIDDEN)]
        stored.update(live)
        if not live and REMOVED in states:
            result.already_removed += 1
        elif not live:
            result.not_stored += 1
    result.stored = sorted(stored)
    if apply and stored and not report.dry_run:
        selector = Selector(ids=tuple(result.stored))
        result.removal = steward(config, "remove", selector, reason=REASON, by=by, clock=clock, fault=fault)
        if fault is not None:
            fault("upstream-removed")
    if not report.dry_run and report.deleted_upstream:
        done: dict[str, set[str]] = {}
        for item in report.deleted_upstream:
            done.setdefault(str(item["root"]), set()).add(str(item["commit"]))
        forget_deletions(config.site.content_dir / STATE_FOLDER, done)
    return result
