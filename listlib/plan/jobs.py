"""Jobs, their names and keys, and what a build must do: compare the jobs the site
needs now with the jobs done last time. Pure.

A *job* makes one or more output files (a thread page and its attachments, a month's
raw copies and redirects, ...). Its *key* is a digest of everything the output depends
on: the job's own inputs (call numbers, content hashes, neighbouring links, list
settings) and the fingerprints of the templates it renders with. Rendering is a pure
function of the key's inputs and the stored messages (whose bytes never change under a
call number), so a job whose key is unchanged needs no work at all, and a job whose
key changed is run again; its files are then compared with what is on disk and only
the ones that differ are written (``render.writer``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["Job", "Plan", "job_id", "job_key", "plan_build"]


def job_id(kind: str, *parts: object) -> str:
    """The name of a job: its kind and what it is of (a list slug, a thread id, a
    month ...), e.g. ``thread:dev:0Abc12Xy`` or ``month:dev:2024-05``. The one place
    a job id is spelled: the builders name their jobs with it, and the incremental
    planner the jobs it looks for."""
    return ":".join((kind, *map(str, parts)))


def job_key(kind: str, fingerprint: str, inputs: object) -> str:
    """The key of a job: ``inputs`` must be plain data (str, int, None, tuples and the
    records of ``plan.kinds``) so that its ``repr`` is stable."""
    return hashlib.sha256(f"{kind}\0{fingerprint}\0{inputs!r}".encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Job:
    """One unit of rendering work."""

    id: str
    """Stable name, e.g. ``thread:dev:0Abc12Xy``; one job per id per build."""
    kind: str
    """Which renderer runs it."""
    key: str
    args: object = field(compare=False)
    """The renderer's inputs: the record of its kind (``plan.kinds``)."""
    weight: int = 1
    """Rough cost, used to hand out work evenly."""

    def __reduce__(self) -> tuple[type[Job], tuple[str, str, str, object, int]]:
        # By its fields: a frozen dataclass with slots pickles through dataclasses.fields()
        # for each object: 13,334 times in the full plan of 20,000 generated messages (plan.full).
        return (Job, (self.id, self.kind, self.key, self.args, self.weight))


@dataclass(frozen=True)
class Plan:
    """The outcome of comparing this build's jobs with the last build's."""

    run: tuple[Job, ...]
    """New jobs and jobs whose key changed."""
    kept: tuple[str, ...]
    """Ids of jobs whose key is unchanged: their files stay as they are."""
    dropped: tuple[str, ...]
    """Ids of jobs that no longer exist: their files are removed."""
    keys: dict[str, str]
    """The key of every job of this build."""


def plan_build(previous: Mapping[str, str], jobs: Iterable[Job], *, rebuild_all: bool = False) -> Plan:
    """Split ``jobs`` into what must run and what stays, given the keys recorded by the
    previous build (``previous``: job id -> key)."""
    run: list[Job] = []
    kept: list[str] = []
    keys: dict[str, str] = {}
    for job in jobs:
        if job.id in keys:
            raise ValueError(f"two jobs are named {job.id!r}")
        keys[job.id] = job.key
        if not rebuild_all and previous.get(job.id) == job.key:
            kept.append(job.id)
        else:
            run.append(job)
    dropped = sorted(name for name in previous if name not in keys)
    return Plan(tuple(run), tuple(kept), tuple(dropped), keys)
