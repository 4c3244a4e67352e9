"""The POP3 filer: one session with a POP3 server, as raw messages.

RFC 1939 (USER/PASS, LIST, UIDL, RETR, DELE, QUIT), RFC 2449 (CAPA,
PIPELINING) and RFC 2595 (STLS), over POP3S, STLS or plain TCP. ``RETR`` is
pipelined when the server offers PIPELINING, so the server never waits for us
between messages.

What the server sends is the message in its wire form: CRLF line ends and
dot-stuffing. Both are undone, so a message stored from POP3 has the same bytes
as the server's maildir file (and as the same message imported from an mbox),
and re-fetching it is recognised as a duplicate by exact bytes.

This module never decides what to delete: ``delete`` marks exactly the
messages its caller names (after their bytes are durable), and deletions take
effect only at ``quit``; a session that ends any other way deletes nothing.
Every failure becomes a FetchError that names the account and the server. It
is the only module that uses poplib.
"""

from __future__ import annotations

import contextlib
import poplib
import socket
import ssl
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from ..config import Pop3Account
from ..errors import FetchError
from ..remote import network_failure, tls_context

__all__ = ["MailboxEntry", "Pop3Session", "from_wire"]

Fault = Callable[[str], None]

#: Commands sent ahead of the responses read when the server allows pipelining.
_RETR_WINDOW = 16
_DELE_WINDOW = 64
_TERMINATOR = b"\r\n.\r\n"
_MAX_STATUS_LINE = 8192


@dataclass(frozen=True, slots=True)
class MailboxEntry:
    """One message in the mailbox, as LIST and UIDL describe it."""

    number: int
    """Its message number in this session (RFC 1939: valid until QUIT)."""
    size: int
    """Its size in octets, as the server counts them (wire form)."""
    uidl: str | None
    """Its unique id, persistent across sessions; None when the server lacks UIDL."""

    @property
    def identity(self) -> str | None:
        return self.uidl

    @property
    def label(self) -> str:
        return self.uidl or str(self.number)

    def describe(self) -> dict[str, object]:
        return {"number": self.number, "uidl": self.uidl}


def from_wire(data: bytes | bytearray) -> bytes:
    """A multi-line response body -> message bytes: undo dot-stuffing and CRLF line ends.

    ``data`` starts with a CRLF that stands for the end of the status line (so that
    the first line is unstuffed like the others) and ends with its last line's CRLF.
    Only a doubled dot is unstuffed (as poplib does): a server stuffs every line
    that starts with a dot, except Dovecot 2.3, which does not stuff the first line
    of a message, so a message starting ``.x`` arrives as ``.x``, not ``..x``.
    """
    return bytes(data).replace(b"\r\n..", b"\r\n.").replace(b"\r\n", b"\n")[1:]


def _no_fault(point: str) -> None:
    return None


class Pop3Session:
    """A logged-in session; use as a context manager (leaving it without ``quit`` deletes nothing).

    A ``remote.RemoteMailbox``: ``settle`` is DELE, ``finish`` is QUIT, and it
    ``tracks`` (keeps messages, recording their UIDLs) with ``keep_on_server``
    when the server has UIDL.
    """

    kind = "pop3"
    settled_verb = "deleted"

    def __init__(self, account: Pop3Account, password: str, *, fault: Fault | None = None) -> None:
        self.account = account
        self._password = password
        self._fault = fault or _no_fault
        self._conn: poplib.POP3 | None = None
        self._caps: dict[str, list[str]] = {}
        self.has_uidl = False
        """Whether the server answers UIDL (known after ``entries``)."""
        self.server = f"{account.host}:{account.port}"
        self.warnings: list[str] = []

    @property
    def tracks(self) -> bool:
        return self.account.keep_on_server and self.has_uidl

    @property
    def settles(self) -> bool:
        return not self.tracks

    # -- errors --------------------------------------------------------------------

    def _error(self, message: str) -> FetchError:
        return FetchError(f"pop3 account {self.account.name!r}: {message}")

    def _translate(self, exc: BaseException, doing: str) -> FetchError:
        """A clear one-line FetchError for a network, TLS or protocol failure."""
        server = self.server
        if isinstance(exc, FetchError):
            return exc
        common = network_failure(exc, self.account, server, doing)
        if common is not None:
            return self._error(common)
        if isinstance(exc, poplib.error_proto):
            text = _text(exc.args[0]) if exc.args else str(exc)
            if text == "-ERR EOF":
                return self._error(f"the connection to {server} broke off while {doing}")
            return self._error(f"{server} refused {doing}: {text}")
        if isinstance(exc, ValueError):
            return self._error(f"{server} sent something unexpected while {doing}: {exc}")
        raise exc

    # -- session -------------------------------------------------------------------

    def __enter__(self) -> Pop3Session:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.abort()

    def open(self) -> Pop3Session:
        """Connect, secure the connection as configured, and log in."""
        account = self.account
        doing = "connecting"
        try:
            context = self._tls_context() if account.security != "none" else None
            if account.security == "ssl":
                doing = "setting up TLS"
                self._conn = poplib.POP3_SSL(account.host, account.port, context=context, timeout=account.timeout)
            else:
                self._conn = poplib.POP3(account.host, account.port, timeout=account.timeout)
            self._caps = self._capa()
            if account.security == "starttls":
                if "STLS" not in self._caps:
                    raise self._error(
                        f"{self.server} does not offer STLS (use security = 'ssl', "
                        "or 'none' to send the password in plain text)"
                    )
                doing = "starting TLS (STLS)"
                self._conn.stls(context)
                self._caps = self._capa()
            doing = f"the login as {account.user!r}"
            self._conn.user(account.user)
            self._conn.pass_(self._password)
            doing = "CAPA after login"
            self._caps = self._capa()  # RFC 2449: capabilities may change once logged in
        except BaseException as exc:
            self.abort()
            if isinstance(exc, poplib.error_proto) and doing.startswith("the login"):
                raise self._error(f"login as {account.user!r} refused by {self.server}: {_text(exc.args[0])}") from None
            raise self._translate(exc, doing) from None
        return self

    def _tls_context(self) -> ssl.SSLContext:
        return tls_context(self.account.ca_file, self._error)

    def _capa(self) -> dict[str, list[str]]:
        assert self._conn is not None
        try:
            return self._conn.capa()
        except poplib.error_proto:
            return {}  # a server without CAPA (RFC 1939 only): no pipelining, UIDL maybe

    @property
    def pipelining(self) -> bool:
        return "PIPELINING" in self._caps

    @property
    def _connection(self) -> poplib.POP3:
        if self._conn is None:
            raise self._error("the session is closed")
        return self._conn

    def entries(self) -> list[MailboxEntry]:
        """Every message in the mailbox: number, size and (when the server has UIDL) unique id."""
        conn = self._connection
        try:
            _resp, lines, _ = conn.list()
            sizes = [(int(number), int(size)) for number, size, *_ in (line.split() for line in lines)]
            uidls: dict[int, str] = {}
            try:
                _resp, lines, _ = conn.uidl()
                for line in lines:
                    number, uidl = line.split(None, 1)
                    uidls[int(number)] = _text(uidl.strip())
                self.has_uidl = True
            except poplib.error_proto:
                if "UIDL" in self._caps:
                    raise
                self.has_uidl = False
        except BaseException as exc:
            raise self._translate(exc, "listing the mailbox") from None
        if self.account.keep_on_server and not self.has_uidl:
            self.warnings.append(
                f"{self.server} does not support UIDL, so messages cannot be recognised on the next run: "
                "they are deleted once filed, despite keep_on_server"
            )
        return [MailboxEntry(number, size, uidls.get(number)) for number, size in sizes]

    def retrieve(self, entries: Sequence[MailboxEntry]) -> Iterator[tuple[MailboxEntry, bytes | None, str]]:
        """RETR each entry, in order: (entry, message bytes, "") or (entry, None, the server's -ERR text).

        Consume the iterator to the end, or abort the session: with pipelining,
        answers to commands already sent are still on their way.
        """
        conn = self._connection
        window = _RETR_WINDOW if self.pipelining else 1
        queued = iter(entries)
        sent: deque[MailboxEntry] = deque()
        doing = "RETR"
        try:
            self._send_more(queued, sent, window, "RETR")
            while sent:
                entry = sent.popleft()
                doing = f"RETR {entry.number}"
                status = self._status_line(conn.file)
                if status.startswith(b"+OK"):
                    body = self._read_body(conn.file)
                    self._send_more(queued, sent, window, "RETR")
                    self._fault("retrieved")
                    yield entry, body, ""
                else:
                    self._send_more(queued, sent, window, "RETR")
                    yield entry, None, _text(status)
        except (OSError, EOFError, poplib.error_proto) as exc:
            raise self._translate(exc, doing) from None

    def _send_more(self, queued: Iterator[MailboxEntry], sent: deque[MailboxEntry], window: int, verb: str) -> None:
        commands = []
        while len(sent) < window:
            entry = next(queued, None)
            if entry is None:
                break
            sent.append(entry)
            commands.append(f"{verb} {entry.number}\r\n")
        if commands:
            self._connection.sock.sendall("".join(commands).encode("ascii"))

    def _status_line(self, stream: BinaryIO) -> bytes:
        line = stream.readline(_MAX_STATUS_LINE)
        if not line:
            raise EOFError("the server closed the connection")
        if not line.endswith(b"\n"):
            raise poplib.error_proto("status line too long")
        return line.rstrip(b"\r\n")

    def _read_body(self, stream: BinaryIO) -> bytes:
        """Read a multi-line response body up to and including the CRLF.CRLF terminator."""
        data = bytearray(b"\r\n")
        while True:
            chunk = stream.peek(1 << 16)  # type: ignore[attr-defined]  # a BufferedReader
            if not chunk:
                raise EOFError("the server closed the connection in the middle of a message")
            before = len(data)
            data += chunk
            end = data.find(_TERMINATOR, max(0, before - 4))
            if end >= 0:
                stream.read(end + len(_TERMINATOR) - before)
                del data[end + 2 :]
                return from_wire(data)
            stream.read(len(chunk))
            self._fault("receiving")

    def delete(self, numbers: Iterable[int]) -> list[tuple[int, str]]:
        """Mark messages for deletion at QUIT; return (number, -ERR text) for those the server refused."""
        conn = self._connection
        window = _DELE_WINDOW if self.pipelining else 1
        queued = (MailboxEntry(number, 0, None) for number in numbers)
        sent: deque[MailboxEntry] = deque()
        refused = []
        try:
            self._send_more(queued, sent, window, "DELE")
            while sent:
                entry = sent.popleft()
                status = self._status_line(conn.file)
                if not status.startswith(b"+OK"):
                    refused.append((entry.number, _text(status)))
                self._send_more(queued, sent, window, "DELE")
        except (OSError, EOFError, poplib.error_proto) as exc:
            raise self._translate(exc, "DELE") from None
        return refused

    def settle(self, entries: Sequence[MailboxEntry]) -> list[tuple[MailboxEntry, str]]:
        """DELE the entries (they go at ``finish``); return those the server refused."""
        by_number = {entry.number: entry for entry in entries}
        return [(by_number[number], text) for number, text in self.delete(by_number)]

    def finish(self) -> None:
        self.quit()

    def quit(self) -> None:
        """QUIT: the server now removes the messages marked for deletion."""
        conn = self._connection
        try:
            conn.quit()
        except (OSError, EOFError, poplib.error_proto) as exc:
            raise self._translate(exc, "QUIT (committing deletions)") from None
        finally:
            self.abort()

    def abort(self) -> None:
        """Close the connection without QUIT: nothing marked for deletion is deleted.

        Safe while another thread is blocked reading from the connection: the
        socket is shut down first, which wakes that read up with an error.
        """
        conn, self._conn = self._conn, None
        if conn is None:
            return
        sock = conn.sock  # None once poplib closed it (after QUIT)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            conn.close()


def _text(data: bytes | str) -> str:
    return data if isinstance(data, str) else data.decode("utf-8", "replace")
