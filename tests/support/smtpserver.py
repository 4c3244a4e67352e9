"""A real SMTP server for the delivery tests: aiosmtpd on 127.0.0.1 with scripted replies.

The reply to RCPT TO depends on the recipient's local part, so tests (and the
``listlib deliver`` subprocesses they run) need no shared state but the server:

- ``perm...@``: 550 always;
- ``tempN...@`` (N a digit): 450 for the first N attempts, then accepted;
- ``fullN...@``: 452 for the first N attempts, then accepted;
- ``reject-data...@``: accepted, but DATA of any transaction holding it gets 554;
- ``drop...@``: the first DATA holding it drops the connection without a reply;
- anything else: 250.

``down`` makes every new connection get a 421 greeting-time refusal (the server
socket keeps listening); ``stop()`` closes the port. Every accepted DATA is
recorded: ``received[recipient]`` counts copies, ``messages`` keeps the envelopes
and bytes.
"""

from __future__ import annotations

import re
import socket
import ssl
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session

_COUNT_RE = re.compile(r"^(temp|full)(\d)")


@dataclass
class Received:
    mail_from: str
    recipients: list[str]
    data: bytes


@dataclass
class ScriptedHandler:
    received: Counter[str] = field(default_factory=Counter)
    messages: list[Received] = field(default_factory=list)
    attempts: Counter[str] = field(default_factory=Counter)
    dropped: set[str] = field(default_factory=set)
    transactions: int = 0
    down: bool = False
    hold_temporary: bool | None = None
    """True: ``temp``/``full`` recipients fail temporarily whatever their count; False: they
    are accepted whatever their count; None: their count decides."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_EHLO(
        self, server: SMTP, session: Session, envelope: Envelope, hostname: str, responses: list[str]
    ) -> list[str]:
        session.host_name = hostname
        if self.down:
            return ["421 4.3.2 service not available, try later"]
        return responses

    async def handle_MAIL(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        if self.down:
            return "421 4.3.2 service not available, try later"
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 OK"

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        local = address.split("@")[0].lower()
        with self.lock:
            self.attempts[address] += 1
            tries = self.attempts[address]
        if local.startswith("perm"):
            return "550 5.1.1 no such user here"
        match = _COUNT_RE.match(local)
        failing = tries <= int(match.group(2)) if match and self.hold_temporary is None else self.hold_temporary
        if match and failing:
            if match.group(1) == "temp":
                return "450 4.2.1 mailbox busy, try later"
            return "452 4.2.2 mailbox full"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        recipients = list(envelope.rcpt_tos)
        with self.lock:
            self.transactions += 1
            if any(r.split("@")[0].lower().startswith("reject-data") for r in recipients):
                return "554 5.6.0 message content rejected"
            droppers = [r for r in recipients if r.split("@")[0].lower().startswith("drop") and r not in self.dropped]
            if droppers:
                self.dropped.update(droppers)
                assert server.transport is not None
                server.transport.abort()
                return "421 dropped"  # never reaches the client: the connection is gone
            data: Any = envelope.original_content or envelope.content
            self.messages.append(Received(str(envelope.mail_from), recipients, bytes(data)))
            self.received.update(recipients)
        return "250 2.0.0 accepted"


class SmtpServer:
    """aiosmtpd on a free port of 127.0.0.1, with a ScriptedHandler."""

    def __init__(
        self,
        port: int | None = None,
        *,
        tls: ssl.SSLContext | None = None,
        implicit_tls: bool = False,
        login: tuple[str, str] | None = None,
    ) -> None:
        """With ``tls``: STARTTLS (required), or TLS from the start with ``implicit_tls``.
        With ``login``: AUTH is required, with this user and password."""
        self.handler = ScriptedHandler()
        self.port = port or _free_port()
        options: dict[str, Any] = {}
        if tls is not None and implicit_tls:
            options["ssl_context"] = tls
        elif tls is not None:
            options.update(tls_context=tls, require_starttls=True)
        if login is not None:
            user, password = login

            def authenticate(server: SMTP, session: Session, envelope: Envelope, mechanism: str, data: Any) -> Any:
                ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
                    user.encode(),
                    password.encode(),
                )
                return AuthResult(success=ok, handled=False)

            # With TLS from the start aiosmtpd does not know the session is encrypted.
            options.update(
                authenticator=authenticate, auth_required=True, auth_require_tls=tls is not None and not implicit_tls
            )
        self.controller = Controller(self.handler, hostname="127.0.0.1", port=self.port, ready_timeout=5.0, **options)

    def start(self) -> SmtpServer:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()
        self.controller.loop.close()  # Controller.stop leaves its event loop open (a ResourceWarning)

    def __enter__(self) -> SmtpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
