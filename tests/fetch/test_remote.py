"""The remote-mailbox interface: the fetch loop drives any source that implements
``listlib.remote.RemoteMailbox``, and settles a message only once it is in the store.

The source here is a mailbox in memory (a third protocol, as a new source module would
be); the loop, the filing and the store are the real ones. POP3 and IMAP implement the
same interface against real Dovecot servers in test_fetch.py and test_imap.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from listlib.config import ImapAccount, load_config
from listlib.errors import FetchError
from listlib.fetch import fetch_account
from listlib.filers.imap import ImapSession
from listlib.filers.pop3 import Pop3Session
from listlib.remote import RemoteMailbox
from listlib.store.core import Store

from ..support.helpers import make_message, stored_files


@dataclass(frozen=True)
class MemoryEntry:
    key: int
    size: int

    @property
    def identity(self) -> str:
        return f"memory-{self.key}"

    @property
    def label(self) -> str:
        return str(self.key)

    def describe(self) -> dict[str, object]:
        return {"key": self.key}


@dataclass
class MemoryMailbox:
    """Messages in a dict; records what the loop asked of it."""

    site: Path
    messages: dict[int, bytes]
    tracks: bool = False
    break_after: int | None = None
    """Retrieve this many messages, then lose the connection."""
    kind: str = "imap"
    server: str = "memory:0"
    settled_verb: str = "deleted"
    warnings: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    settled: list[int] = field(default_factory=list)
    sent = 0

    @property
    def settles(self) -> bool:
        return not self.tracks

    def open(self) -> MemoryMailbox:
        self.calls.append("open")
        return self

    def entries(self) -> list[MemoryEntry]:
        return [MemoryEntry(key, len(raw)) for key, raw in sorted(self.messages.items())]

    def retrieve(self, entries: Sequence[MemoryEntry]) -> Iterator[tuple[MemoryEntry, bytes | None, str]]:
        for entry in entries:
            if self.break_after is not None and self.sent >= self.break_after:
                raise FetchError("memory: the connection broke off")
            self.sent += 1
            yield entry, self.messages[entry.key], ""

    def settle(self, entries: Sequence[MemoryEntry]) -> list[tuple[MemoryEntry, str]]:
        stored = set(stored_files(self.site / "content").values())
        for entry in entries:
            assert self.messages[entry.key] in stored, "settled before it was durable in the store"
            del self.messages[entry.key]
            self.settled.append(entry.key)
        return []

    def finish(self) -> None:
        self.calls.append("finish")

    def abort(self) -> None:
        self.calls.append("abort")


def run(site: Path, mailbox: MemoryMailbox, **account: object) -> object:
    config = load_config(site / "listlib.toml")
    options: dict[str, object] = {"name": "mem", "host": "memory", "port": 1, "security": "none", "user": "u"}
    options.update(account)
    with Store(config.site.content_dir).open() as store:
        return fetch_account(store, config.lists, ImapAccount(**options), "", session=mailbox)  # type: ignore[arg-type]


def batch_of_messages(count: int) -> dict[int, bytes]:
    return {key: make_message(f"m {key}", message_id=f"<mem{key}@x>") for key in range(count)}


def test_the_loop_settles_only_what_is_durable_then_finishes(site: Path) -> None:
    mailbox = MemoryMailbox(site, batch_of_messages(600))  # three batches
    report = run(site, mailbox)
    assert (report.retrieved, report.deleted, report.error) == (600, 600, None)  # type: ignore[attr-defined]
    assert sorted(mailbox.settled) == list(range(600)) and not mailbox.messages
    assert mailbox.calls == ["open", "finish", "abort"]
    assert len(stored_files(site / "content")) == 600


def test_a_tracking_source_is_never_settled_and_each_message_is_fetched_once(site: Path) -> None:
    mailbox = MemoryMailbox(site, batch_of_messages(5), tracks=True)
    assert run(site, mailbox).kept == 5  # type: ignore[attr-defined]
    assert mailbox.settled == [] and len(mailbox.messages) == 5
    mailbox.messages[99] = make_message("new", message_id="<new@x>")
    again = run(site, mailbox)
    assert (again.known, again.retrieved) == (5, 1)  # type: ignore[attr-defined]
    assert (site / "content" / ".imap" / "mem.uids").read_text().count("memory-") == 6


def test_a_broken_connection_files_what_arrived_and_settles_nothing_unfiled(site: Path) -> None:
    mailbox = MemoryMailbox(site, batch_of_messages(300), break_after=270)
    report = run(site, mailbox)
    assert report.error == "memory: the connection broke off"  # type: ignore[attr-defined]
    assert len(stored_files(site / "content")) == 270
    assert set(mailbox.settled) <= set(range(270)) and "finish" not in mailbox.calls
    mailbox.break_after = None
    left = len(mailbox.messages)  # what was filed but not settled is still there, and comes again
    assert left >= 30 and run(site, mailbox).retrieved == left  # type: ignore[attr-defined]
    assert len(stored_files(site / "content")) == 300 and not mailbox.messages


@pytest.mark.parametrize("session", [Pop3Session, ImapSession, MemoryMailbox])
def test_every_source_offers_what_the_interface_asks(session: type) -> None:
    wanted = [name for name in dir(RemoteMailbox) if not name.startswith("_")]
    wanted += list(RemoteMailbox.__annotations__)
    missing = [
        name for name in wanted if not hasattr(session, name) and name not in getattr(session, "__annotations__", {})
    ]
    instance_attributes = {"server", "warnings", "settled_verb"}  # set in __init__ by the real sessions
    assert not [name for name in missing if name not in instance_attributes], missing
