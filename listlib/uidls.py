"""The durable record of POP3 messages already filed, for accounts that keep mail on the server.

One text file per account, ``content/.pop3/<account>.uidls``: a header line
naming the mailbox (``listlib-uidls 1 user@host``), then one UIDL per line
(RFC 1939: UIDLs are 1-70 printable ASCII characters, no spaces). UIDLs are
appended and fsync'ed after the messages they name are durable in the store,
so a crash can only forget a UIDL (the message is fetched again and recognised
as a duplicate by the store), never record one that was not filed.

It lives in the store folder, not in the cache: it is not derived from the
messages, and losing it means downloading the whole mailbox again. Only the
holder of the account's fetch lock touches it. Nothing here knows POP3.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .fsutil import fsync_dir, make_dirs, write_file

__all__ = ["UidlLog"]

_MAGIC = "listlib-uidls 1"
#: Rewrite the file without UIDLs that left the server once this many accumulate...
_COMPACT_MIN_STALE = 64
#: ... or once they are this share of the file.
_COMPACT_STALE_SHARE = 0.25


class UidlLog:
    """The UIDLs of one account's messages that are filed (and left on the server)."""

    def __init__(self, path: Path, mailbox: str) -> None:
        self.path = path
        self.header = f"{_MAGIC} {mailbox}\n"
        self.uidls: set[str] = set()

    def load(self) -> set[str]:
        """Read the record; a missing file, or one for another mailbox, is an empty record.

        A last line cut short by a crash is dropped (it was never fsync'ed as
        complete, so the message it names is simply fetched again).
        """
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            self.uidls = set()
            return set()
        first, _, rest = data.partition(b"\n")
        if first + b"\n" != self.header.encode():
            # Another server or user under this account name: its UIDLs mean nothing here.
            self._rewrite(set())
            return set()
        complete, _, partial = rest.rpartition(b"\n")
        self.uidls = {line.decode("utf-8", "replace") for line in complete.split(b"\n") if line}
        if partial:
            with self.path.open("r+b") as f:
                f.truncate(len(data) - len(partial))
                os.fsync(f.fileno())
        return set(self.uidls)

    def add(self, uidls: Iterable[str]) -> None:
        """Record UIDLs durably (call only once their messages are durable in the store)."""
        new = [u for u in uidls if u not in self.uidls]
        if not new:
            return
        if not self.path.exists():
            self._rewrite(set())
        with self.path.open("ab") as f:
            f.write("".join(f"{u}\n" for u in new).encode())
            f.flush()
            os.fsync(f.fileno())
        self.uidls.update(new)

    def forget_others(self, on_server: set[str]) -> bool:
        """Drop UIDLs no longer on the server (their messages were deleted there), when
        enough have accumulated to be worth a rewrite; return whether it rewrote."""
        stale = len(self.uidls - on_server)
        if not stale or (stale < _COMPACT_MIN_STALE and stale < _COMPACT_STALE_SHARE * len(self.uidls)):
            return False
        self._rewrite(self.uidls & on_server)
        return True

    def _rewrite(self, uidls: set[str]) -> None:
        """Replace the file atomically: temporary file, fsync, rename, folder fsync."""
        make_dirs(self.path.parent)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        body = self.header + "".join(f"{u}\n" for u in sorted(uidls))
        write_file(tmp, body.encode(), sync=True)
        os.replace(tmp, self.path)
        fsync_dir(self.path.parent)
        self.uidls = set(uidls)
