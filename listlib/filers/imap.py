"""The IMAP filer: one session with an IMAP server, as raw messages (a ``remote.RemoteMailbox``).

RFC 3501 over IMAPS, STARTTLS or plain TCP, with UIDPLUS (RFC 4315: ``UID
EXPUNGE``), MOVE (RFC 6851) and IDLE (RFC 2177) when the server offers them.
Messages are named by (folder, UIDVALIDITY, UID): a UID is only ever used with
the UIDVALIDITY it was listed under, and a folder whose UIDVALIDITY changed
during a session stops the session before anything is settled there. Bodies are
fetched with ``BODY.PEEK[]``, which never sets ``\\Seen``: nothing looks read
before it is filed.

What the server sends has CRLF line ends; they become LF, so a message stored
from IMAP has the bytes of the server's maildir file (and of the same message
fetched over POP3 or imported from an mbox), and fetching it again is a
duplicate by exact bytes.

This module never decides what to settle: ``settle`` acts on exactly the
messages its caller names (after their bytes are durable). ``seen`` sets
``\\Seen`` (the fetch loop also records the UIDs, as for ``keep``). ``delete`` is
``UID STORE +FLAGS (\\Deleted)`` then ``UID EXPUNGE`` of those UIDs; a server
without UIDPLUS gets one plain ``EXPUNGE`` at ``finish``, and only when every
message flagged ``\\Deleted`` in the folder is one this session filed (else
they stay flagged, with a warning). ``move`` is ``UID MOVE``, or ``UID COPY``
then the same as ``delete``. Every failure becomes a FetchError that names the
account and the server. The only module that uses imaplib.

Length: every IMAP command listlib sends is here, because imaplib is allowed in this
module alone (``tests/test_architecture.py``); the settle actions share its session.
"""

from __future__ import annotations

import contextlib
import imaplib
import re
import socket
import ssl
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from ..config import ImapAccount
from ..errors import FetchError
from ..remote import network_failure, tls_context

__all__ = ["ImapEntry", "ImapSession", "ImapWatcher"]

Fault = Callable[[str], None]

_CHUNK = 1 << 16
_UID_RE = re.compile(rb"\bUID (\d+)")
_SIZE_RE = re.compile(rb"\bRFC822\.SIZE (\d+)")
_EXISTS_RE = re.compile(rb"^\* (\d+) EXISTS", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ImapEntry:
    """One message in one folder, named the way that survives sessions."""

    folder: str
    uidvalidity: int
    uid: int
    size: int
    """Its RFC822.SIZE (CRLF line ends)."""

    @property
    def identity(self) -> str:
        # The folder last: it may contain spaces, never a line end.
        return f"{self.uidvalidity} {self.uid} {self.folder}"

    @property
    def label(self) -> str:
        return f"{self.folder}/{self.uidvalidity}/{self.uid}"

    def describe(self) -> dict[str, object]:
        return {"folder": self.folder, "uidvalidity": self.uidvalidity, "uid": self.uid}


def _no_fault(point: str) -> None:
    return None


class _Reading:
    """imaplib reads a literal (a message body) in one call: read it in chunks, calling
    the fault hook after each one, so that crash tests can stop in the middle of a FETCH."""

    fault: Fault = staticmethod(_no_fault)
    file: Any

    def read(self, size: int) -> bytes:
        parts = []
        left = size
        while left > 0:
            chunk = self.file.read(min(left, _CHUNK))
            if not chunk:
                break
            parts.append(chunk)
            left -= len(chunk)
            self.fault("receiving")
        return b"".join(parts)


class _IMAP4(_Reading, imaplib.IMAP4):
    pass


class _IMAP4_SSL(_Reading, imaplib.IMAP4_SSL):
    pass


def quote(name: str) -> str:
    """A folder name as an IMAP quoted string."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _text(data: object) -> str:
    if isinstance(data, list):
        return " ".join(_text(item) for item in data if item is not None)
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return str(data)


def _uid_set(uids: Sequence[int]) -> str:
    """UIDs as a compact sequence set (ranges of consecutive UIDs)."""
    parts = []
    ordered = sorted(uids)
    start = prev = ordered[0]
    for uid in ordered[1:]:
        if uid == prev + 1:
            prev = uid
            continue
        parts.append(f"{start}:{prev}" if prev > start else str(start))
        start = prev = uid
    parts.append(f"{start}:{prev}" if prev > start else str(start))
    return ",".join(parts)


class ImapSession:
    """A logged-in session with one ``[imap.<name>]`` account; use as a context manager."""

    kind = "imap"

    def __init__(self, account: ImapAccount, password: str, *, fault: Fault | None = None) -> None:
        self.account = account
        self._password = password
        self._fault = fault or _no_fault
        self._conn: imaplib.IMAP4 | None = None
        self.caps: set[str] = set()
        self.server = f"{account.host}:{account.port}"
        self.warnings: list[str] = []
        self.settled_verb = {"move": "moved", "seen": "seen"}.get(account.after, "deleted")
        self._selected: str | None = None
        self._validity: dict[str, int] = {}
        """Each folder's UIDVALIDITY as listed by ``entries``."""
        self._flagged: dict[str, set[int]] = {}
        """Per folder, the UIDs this session flagged \\Deleted and did not expunge yet."""

    @property
    def tracks(self) -> bool:
        return self.account.after in ("keep", "seen")

    @property
    def settles(self) -> bool:
        return self.account.after != "keep"

    # -- errors --------------------------------------------------------------------

    def _error(self, message: str) -> FetchError:
        return FetchError(f"imap account {self.account.name!r}: {message}")

    def _translate(self, exc: BaseException, doing: str) -> FetchError:
        """A clear one-line FetchError for a network, TLS or protocol failure."""
        server = self.server
        if isinstance(exc, FetchError):
            return exc
        common = network_failure(exc, self.account, server, doing)
        if common is not None:
            return self._error(common)
        if isinstance(exc, imaplib.IMAP4.abort):
            return self._error(f"the connection to {server} broke off while {doing}")
        if isinstance(exc, imaplib.IMAP4.error):
            return self._error(f"{server} refused {doing}: {_text(exc.args[0]) if exc.args else exc}")
        if isinstance(exc, ValueError):
            return self._error(f"{server} sent something unexpected while {doing}: {exc}")
        raise exc

    # -- session -------------------------------------------------------------------

    def __enter__(self) -> ImapSession:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.abort()

    def open(self) -> ImapSession:
        """Connect, secure the connection as configured, log in and read the capabilities."""
        account = self.account
        doing = "connecting"
        try:
            context = self._tls_context() if account.security != "none" else None
            if account.security == "ssl":
                doing = "setting up TLS"
                conn: imaplib.IMAP4 = _IMAP4_SSL(
                    account.host, account.port, ssl_context=context, timeout=account.timeout
                )
            else:
                conn = _IMAP4(account.host, account.port, timeout=account.timeout)
            self._conn = conn
            conn.fault = self._fault  # type: ignore[attr-defined]
            if account.security == "starttls":
                if "STARTTLS" not in conn.capabilities:
                    raise self._error(
                        f"{self.server} does not offer STARTTLS (use security = 'ssl', "
                        "or 'none' to send the password in plain text)"
                    )
                doing = "starting TLS (STARTTLS)"
                conn.starttls(context)
            doing = f"the login as {account.user!r}"
            try:
                conn.login(account.user, self._password)
            except imaplib.IMAP4.abort:
                raise
            except imaplib.IMAP4.error as exc:
                raise self._error(
                    f"login as {account.user!r} refused by {self.server}: {_text(exc.args[0]) if exc.args else exc}"
                ) from None
            doing = "CAPABILITY after login"
            _typ, data = conn.capability()  # capabilities may change once logged in
            self.caps = {word.upper() for word in _text(data[-1]).split()}
        except BaseException as exc:
            self.abort()
            raise self._translate(exc, doing) from None
        return self

    def _tls_context(self) -> ssl.SSLContext:
        return tls_context(self.account.ca_file, self._error)

    @property
    def _connection(self) -> imaplib.IMAP4:
        if self._conn is None:
            raise self._error("the session is closed")
        return self._conn

    def _check(self, typ: str, data: list[Any], doing: str) -> list[Any]:
        if typ != "OK":
            raise self._error(f"{self.server} refused {doing}: {_text(data)}")
        return data

    def _select(self, folder: str, *, listing: bool = False) -> int:
        """SELECT a folder (EXAMINE when nothing will change there); return how many messages it has.

        Outside ``entries`` the folder's UIDVALIDITY must be the one its entries were
        listed under: UIDs of another UIDVALIDITY name other messages.
        """
        conn = self._connection
        doing = f"selecting folder {folder!r}"
        typ, data = conn.select(quote(folder), readonly=self.account.after == "keep")
        self._check(typ, data, doing)
        self._selected = folder
        _typ, validity = conn.response("UIDVALIDITY")
        if not validity or validity[-1] is None:
            raise self._error(f"{self.server} sent no UIDVALIDITY for folder {folder!r}")
        uidvalidity = int(validity[-1])
        if listing:
            self._validity[folder] = uidvalidity
        elif self._validity.get(folder) != uidvalidity:
            raise self._error(
                f"the UIDVALIDITY of folder {folder!r} changed during the session (the folder was recreated); "
                "nothing more was done there: run again"
            )
        return int(data[0] or 0)

    def entries(self) -> list[ImapEntry]:
        """Every message of every configured folder, folder by folder, UIDs ascending."""
        conn = self._connection
        found: list[ImapEntry] = []
        doing = "listing the folders"
        try:
            for folder in self.account.folders:
                doing = f"listing folder {folder!r}"
                exists = self._select(folder, listing=True)
                if not exists:
                    continue
                typ, data = conn.uid("FETCH", "1:*", "(UID RFC822.SIZE)")
                self._check(typ, data, doing)
                listed: dict[int, int] = {}
                for item in data:
                    head = item[0] if isinstance(item, tuple) else item
                    if not isinstance(head, bytes):
                        continue
                    uid, size = _UID_RE.search(head), _SIZE_RE.search(head)
                    if uid and size:
                        listed[int(uid.group(1))] = int(size.group(1))
                validity = self._validity[folder]
                found.extend(ImapEntry(folder, validity, uid, listed[uid]) for uid in sorted(listed))
            if self.account.after == "move":
                doing = f"checking folder {self.account.move_to!r} (move_to)"
                self._ensure_folder(self.account.move_to or "")
        except BaseException as exc:
            raise self._translate(exc, doing) from None
        return found

    def _ensure_folder(self, folder: str) -> None:
        conn = self._connection
        typ, data = conn.list('""', quote(folder))
        if typ == "OK" and any(item for item in data if item):
            return
        typ, data = conn.create(quote(folder))
        self._check(typ, data, f"creating folder {folder!r} (move_to)")

    def retrieve(self, entries: Sequence[ImapEntry]) -> Iterator[tuple[ImapEntry, bytes | None, str]]:
        """``UID FETCH (BODY.PEEK[])`` the entries, folder by folder, in one command per folder."""
        conn = self._connection
        doing = "FETCH"
        try:
            for folder, group in groupby(entries, key=lambda entry: entry.folder):
                batch = list(group)
                doing = f"selecting folder {folder!r}"
                self._select(folder)
                doing = f"UID FETCH in folder {folder!r}"
                typ, data = conn.uid("FETCH", _uid_set([e.uid for e in batch]), "(UID BODY.PEEK[])")
                self._check(typ, data, doing)
                bodies = _bodies(data)
                for entry in batch:
                    raw = bodies.pop(entry.uid, None)
                    if raw is None:
                        yield entry, None, "the server did not send it (expunged by another client?)"
                        continue
                    self._fault("retrieved")
                    yield entry, raw.replace(b"\r\n", b"\n"), ""
        except (OSError, EOFError, imaplib.IMAP4.error) as exc:
            raise self._translate(exc, doing) from None

    def settle(self, entries: Sequence[ImapEntry]) -> list[tuple[ImapEntry, str]]:
        """Delete or move messages that are durable in the store; return those refused."""
        conn = self._connection
        refused: list[tuple[ImapEntry, str]] = []
        doing = "settling"
        try:
            for folder, group in groupby(entries, key=lambda entry: entry.folder):
                batch = list(group)
                uids = _uid_set([e.uid for e in batch])
                doing = f"selecting folder {folder!r}"
                self._select(folder)
                if self.account.after == "seen":
                    doing = f"UID STORE \\Seen in folder {folder!r}"
                    typ, data = conn.uid("STORE", uids, "+FLAGS.SILENT", r"(\Seen)")
                    if typ != "OK":
                        refused.extend((e, _text(data)) for e in batch)
                    continue
                if self.account.after == "move":
                    target = quote(self.account.move_to or "")
                    if "MOVE" in self.caps:
                        doing = f"UID MOVE in folder {folder!r}"
                        self._fault("moving")
                        typ, data = conn.uid("MOVE", uids, target)
                        if typ != "OK":
                            refused.extend((e, _text(data)) for e in batch)
                        continue
                    doing = f"UID COPY in folder {folder!r}"
                    typ, data = conn.uid("COPY", uids, target)
                    if typ != "OK":
                        refused.extend((e, _text(data)) for e in batch)
                        continue
                    self._fault("copied")
                doing = f"UID STORE \\Deleted in folder {folder!r}"
                typ, data = conn.uid("STORE", uids, "+FLAGS.SILENT", r"(\Deleted)")
                if typ != "OK":
                    refused.extend((e, _text(data)) for e in batch)
                    continue
                self._fault("flagged")
                if "UIDPLUS" in self.caps:
                    doing = f"UID EXPUNGE in folder {folder!r}"
                    self._fault("expunging")
                    typ, data = conn.uid("EXPUNGE", uids)
                    self._check(typ, data, doing)
                    self._fault("expunged")
                else:
                    self._flagged.setdefault(folder, set()).update(e.uid for e in batch)
        except (OSError, EOFError, imaplib.IMAP4.error) as exc:
            raise self._translate(exc, doing) from None
        return refused

    def finish(self) -> None:
        """Without UIDPLUS: EXPUNGE each folder where that removes only what this session
        filed. Then LOGOUT."""
        conn = self._connection
        doing = "EXPUNGE"
        try:
            for folder, ours in self._flagged.items():
                doing = f"selecting folder {folder!r}"
                self._select(folder)
                doing = f"UID SEARCH DELETED in folder {folder!r}"
                typ, data = conn.uid("SEARCH", "DELETED")
                self._check(typ, data, doing)
                flagged = {int(word) for word in _text(data).split() if word.isdigit()}
                if not flagged <= ours:
                    self.warnings.append(
                        f"{self.server} has no UIDPLUS and folder {folder!r} holds messages flagged \\Deleted "
                        f"that listlib did not file: the {len(ours)} filed ones stay there, flagged \\Deleted, "
                        "until the folder is expunged"
                    )
                    continue
                doing = f"EXPUNGE in folder {folder!r}"
                self._fault("expunging")
                typ, data = conn.expunge()
                self._check(typ, data, doing)
                self._fault("expunged")
            self._flagged.clear()
            doing = "LOGOUT"
            with contextlib.suppress(imaplib.IMAP4.abort, OSError):
                conn.logout()
        except (OSError, EOFError, imaplib.IMAP4.error) as exc:
            raise self._translate(exc, doing) from None
        finally:
            self.abort()

    def abort(self) -> None:
        """Close the connection at once (no EXPUNGE is sent); safe from another thread."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        sock = getattr(conn, "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError, AttributeError):
            conn.shutdown()


def _bodies(data: list[Any]) -> dict[int, bytes]:
    """UID -> message bytes from a ``UID FETCH (UID BODY.PEEK[])`` response.

    imaplib gives a (head, literal) pair per message, then the rest of that message's
    response as bytes (where a server that sends the UID after the body puts it)."""
    found: dict[int, bytes] = {}
    items = list(data)
    for index, item in enumerate(items):
        if not isinstance(item, tuple) or len(item) != 2:
            continue
        head, literal = item
        if b"BODY[]" not in head.upper():
            continue
        match = _UID_RE.search(head)
        if match is None and index + 1 < len(items) and isinstance(items[index + 1], bytes):
            match = _UID_RE.search(items[index + 1])
        if match is not None:
            found[int(match.group(1))] = literal
    return found


class ImapWatcher:
    """A second connection to one folder that waits for new mail: with IDLE when the
    server has it, else it only says that it cannot (the caller polls)."""

    def __init__(self, account: ImapAccount, password: str, folder: str) -> None:
        self.session = ImapSession(account, password)
        self.folder = folder

    def open(self) -> ImapWatcher:
        self.session.open()
        conn = self.session._connection
        try:
            typ, data = conn.select(quote(self.folder), readonly=True)
            self.session._check(typ, data, f"selecting folder {self.folder!r}")
        except BaseException as exc:
            self.session.abort()
            raise self.session._translate(exc, f"selecting folder {self.folder!r}") from None
        return self

    @property
    def can_idle(self) -> bool:
        return "IDLE" in self.session.caps

    def idle(self, seconds: float) -> bool:
        """IDLE until the server reports a new message (True) or ``seconds`` pass (False).

        After False, or an error, the connection is closed (a read that timed out
        leaves it unusable): open a new watcher."""
        session = self.session
        conn = session._connection
        tag = conn._new_tag()  # type: ignore[attr-defined]
        try:
            conn.send(tag + b" IDLE\r\n")
            while True:
                line = conn.readline()
                if not line:
                    raise EOFError("the server closed the connection")
                if line.startswith(b"+"):
                    break
                if line.startswith(tag):
                    raise session._error(f"{session.server} refused IDLE: {_text(line.strip())}")
            conn.sock.settimeout(seconds)
            while True:
                try:
                    line = conn.readline()
                except TimeoutError:
                    session.abort()
                    return False
                if not line:
                    raise EOFError("the server closed the connection")
                if _EXISTS_RE.match(line):
                    conn.sock.settimeout(session.account.timeout)
                    conn.send(b"DONE\r\n")
                    while not (line := conn.readline()).startswith(tag):
                        if not line:
                            raise EOFError("the server closed the connection")
                    return True
        except (OSError, EOFError, imaplib.IMAP4.error) as exc:
            session.abort()
            raise session._translate(exc, "IDLE") from None

    def close(self) -> None:
        self.session.abort()
