"""The remote-mailbox interface that ``listlib fetch`` drives (POP3 and IMAP implement it).

A session lists what is on the server (``entries``), retrieves a batch
(``retrieve``), and, only once the store says that batch is durable, settles it:
``settle`` deletes, moves or marks seen its messages on the server, and, for a
session that ``tracks``, the fetch loop records each entry's ``identity``. ``finish``
ends the session so that what was settled takes effect (POP3: QUIT; IMAP: the
last EXPUNGE, LOGOUT); ``abort`` closes it without that (POP3 then deletes
nothing). Adding a source is one module implementing this; the fetch loop
(``listlib.fetch``) owns batching, filing, the account lock and the identity
record, and knows no protocol.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

__all__ = ["BROKEN_OFF", "RemoteEntry", "RemoteMailbox", "network_failure", "tls_context"]

BROKEN_OFF = (ssl.SSLEOFError, ssl.SSLZeroReturnError, ConnectionResetError, BrokenPipeError, EOFError)
"""What a connection that broke off mid-session raises, whatever the protocol."""


class _Account(Protocol):
    @property
    def host(self) -> str: ...

    @property
    def timeout(self) -> float: ...

    @property
    def ca_file(self) -> Path | None: ...


def network_failure(exc: BaseException, account: _Account, server: str, doing: str) -> str | None:
    """The one-line reason for a network or TLS failure, the same for every protocol;
    None for anything else (the session's own protocol errors)."""
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve host {account.host!r}: {exc.strerror or exc}"
    if isinstance(exc, UnicodeError):  # the IDNA codec refused the host name
        return f"cannot resolve host {account.host!r}: not a valid host name"
    if isinstance(exc, BROKEN_OFF):
        return f"the connection to {server} broke off while {doing}"
    if isinstance(exc, ssl.SSLCertVerificationError):
        hint = "" if account.ca_file else " (set ca_file to the certificate authority that signed it)"
        return f"the TLS certificate of {server} is not trusted: {exc.verify_message}{hint}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS with {server} failed while {doing}: {exc.reason or exc}"
    if isinstance(exc, TimeoutError):
        return f"{server} did not answer within {account.timeout:g} s while {doing}"
    if isinstance(exc, ConnectionRefusedError):
        return f"cannot connect to {server}: connection refused"
    if isinstance(exc, OSError):
        return f"connection to {server} failed while {doing}: {exc.strerror or exc}"
    return None


def tls_context(ca_file: Path | None, error: Callable[[str], Exception]) -> ssl.SSLContext:
    """The TLS context of an account: the system's trusted authorities, or ``ca_file``'s;
    ``error(message)`` is raised when that file cannot be used."""
    try:
        return ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
    except (OSError, ssl.SSLError) as exc:
        reason = getattr(exc, "strerror", None) or getattr(exc, "reason", None) or exc
        raise error(f"ca_file {ca_file} cannot be used: {reason}") from None


class RemoteEntry(Protocol):
    """One message on the server, as the listing describes it."""

    @property
    def size(self) -> int:
        """Its size in octets, as the server counts them."""
        ...

    @property
    def identity(self) -> str | None:
        """An id that names this message across sessions (for the ``keep`` record), or None."""
        ...

    @property
    def label(self) -> str:
        """A short name for its origin in the store (``pop3:<account>/<label>``)."""
        ...

    def describe(self) -> dict[str, object]:
        """Where it is, for reports of a message that could not be retrieved or settled."""
        ...


EntryT = TypeVar("EntryT", bound=RemoteEntry)


class RemoteMailbox(Protocol[EntryT]):
    """A logged-in session with one account's mailbox (see the module docstring)."""

    kind: str
    """``pop3`` or ``imap``: names the account in messages and its state folder."""
    server: str
    """``host:port``, for messages."""
    warnings: list[str]
    """What the run should tell the admin (known once ``entries`` returned)."""
    settled_verb: str
    """What ``settle`` does to a message, for the report: ``deleted``, ``moved`` or ``seen``."""

    @property
    def tracks(self) -> bool:
        """Whether filed messages stay on the server and are recognised by ``identity``
        (known once ``entries`` returned)."""
        ...

    def open(self) -> RemoteMailbox[EntryT]:
        """Connect, secure the connection, log in; raise FetchError when that fails."""
        ...

    @property
    def settles(self) -> bool:
        """Whether filed messages are handed to ``settle`` (a session may both track and
        settle: IMAP ``after = "seen"`` marks them read and records them)."""
        ...

    def entries(self) -> list[EntryT]:
        """Every message on the server, in the order to retrieve them."""
        ...

    def retrieve(self, entries: Sequence[EntryT]) -> Iterator[tuple[EntryT, bytes | None, str]]:
        """(entry, its bytes, "") or (entry, None, why it could not be retrieved), in order."""
        ...

    def settle(self, entries: Sequence[EntryT]) -> list[tuple[EntryT, str]]:
        """Delete or move messages whose bytes are durable; return those the server refused."""
        ...

    def finish(self) -> None:
        """End the session so that everything settled takes effect."""
        ...

    def abort(self) -> None:
        """Close the connection at once (safe from another thread blocked reading it)."""
        ...
