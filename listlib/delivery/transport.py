"""One SMTP session with the configured server; the only user of smtplib.

``SmtpSession.send`` runs one transaction (MAIL FROM, one RCPT TO per recipient,
DATA) and returns every reply, so the caller can record per recipient what the
server said. Replies are data, not exceptions: 2xx accepted, 4xx temporary, 5xx
permanent. Only a failure to talk to the server at all (no connection, TLS or
login refused, the connection lost mid-transaction, no answer within the
timeout) raises ``TransportError``; then nothing of that transaction counts as
accepted. Never reads the environment (the caller resolves the password).
"""

from __future__ import annotations

import smtplib
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..config import SmtpConfig, read_secret
from ..errors import DeliveryError

__all__ = ["ConnectError", "Reply", "SmtpSession", "Transaction", "TransportError", "resolve_password"]


class TransportError(DeliveryError):
    """The SMTP server cannot be reached or used right now (always a temporary failure)."""


class ConnectError(TransportError):
    """No session could be started: connection, TLS, greeting or login failed."""


@dataclass(frozen=True)
class Reply:
    code: int
    text: str

    def __str__(self) -> str:
        return f"{self.code} {self.text}".strip()

    @property
    def accepted(self) -> bool:
        return 200 <= self.code < 300

    @property
    def permanent(self) -> bool:
        return 500 <= self.code < 600


@dataclass
class Transaction:
    """The server's answers to one transaction."""

    rcpt: dict[str, Reply] = field(default_factory=dict)
    """Per recipient: the RCPT TO reply (or the MAIL FROM reply when that was refused)."""
    data: Reply | None = None
    """The final reply to DATA; None when DATA was not sent (no recipient accepted)."""

    def outcome(self, recipient: str) -> Reply:
        """What happened to one recipient: its RCPT reply when refused, else the DATA reply."""
        reply = self.rcpt[recipient]
        if not reply.accepted or self.data is None:
            return reply
        return self.data


_NOT_ASCII = "5.1.3 not sent: listlib cannot send to non-ASCII addresses (SMTPUTF8)"


def _reply(code: int, text: bytes | str) -> Reply:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return Reply(code, " ".join(text.split()))


class SmtpSession:
    """A connection to the SMTP server, opened lazily and reused for many transactions."""

    def __init__(self, config: SmtpConfig, password: str | None) -> None:
        self.config = config
        self.password = password
        self.server = f"{config.host}:{config.port}"
        self._smtp: smtplib.SMTP | None = None

    def _context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.config.ca_file) if self.config.ca_file else None)
        return context

    def open(self) -> None:
        if self._smtp is not None:
            return
        cfg = self.config
        helo = cfg.helo or None
        smtp: smtplib.SMTP | None = None
        try:
            if cfg.security == "ssl":
                smtp = smtplib.SMTP_SSL(
                    cfg.host, cfg.port, local_hostname=helo, timeout=cfg.timeout, context=self._context()
                )
            else:
                smtp = smtplib.SMTP(cfg.host, cfg.port, local_hostname=helo, timeout=cfg.timeout)
            smtp.ehlo_or_helo_if_needed()
            if cfg.security == "starttls":
                if not smtp.has_extn("starttls"):
                    raise ConnectError(f"SMTP server {self.server} does not offer STARTTLS (security = 'starttls')")
                smtp.starttls(context=self._context())
                smtp.ehlo()
            if cfg.user is not None:
                smtp.login(cfg.user, self.password or "")
        except TransportError:
            _close_quietly(smtp)
            raise
        except smtplib.SMTPAuthenticationError as exc:
            _close_quietly(smtp)
            raise ConnectError(
                f"SMTP server {self.server} refused the login: {_reply(exc.smtp_code, exc.smtp_error)}"
            ) from None
        except (smtplib.SMTPException, OSError) as exc:
            _close_quietly(smtp)
            raise ConnectError(f"SMTP server {self.server} cannot be used: {_describe(exc)}") from None
        self._smtp = smtp

    def send(self, sender: str, recipients: list[str], data: bytes) -> Transaction:
        """One transaction; raise TransportError when the connection fails (the session is then closed)."""
        self.open()
        smtp = self._smtp
        assert smtp is not None
        result = Transaction()
        try:
            options = ["BODY=8BITMIME"] if smtp.has_extn("8bitmime") and not data.isascii() else []
            code, text = (smtp.mail(sender, options)) if sender.isascii() else (553, _NOT_ASCII)
            if code != 250:
                refused = _reply(code, text)
                result.rcpt = dict.fromkeys(recipients, refused)
                self._reset(smtp)
                return result
            for recipient in recipients:
                # smtplib cannot send a non-ASCII address (that needs SMTPUTF8): refuse it here
                # rather than let one subscriber stop the whole run.
                code, text = smtp.rcpt(recipient) if recipient.isascii() else (553, _NOT_ASCII)
                result.rcpt[recipient] = _reply(code, text)
            if not any(reply.accepted for reply in result.rcpt.values()):
                self._reset(smtp)
                return result
            try:
                code, text = smtp.data(data)
            except smtplib.SMTPDataError as exc:  # DATA itself refused (not 354)
                result.data = _reply(exc.smtp_code, exc.smtp_error)
                self._reset(smtp)
                return result
            result.data = _reply(code, text)
            return result
        except (smtplib.SMTPException, OSError) as exc:
            self.abort()
            raise TransportError(f"SMTP server {self.server}: {_describe(exc)}") from None

    def _reset(self, smtp: smtplib.SMTP) -> None:
        try:
            smtp.rset()
        except (smtplib.SMTPException, OSError):
            self.abort()

    def abort(self) -> None:
        smtp, self._smtp = self._smtp, None
        if smtp is not None:
            smtp.close()

    def close(self) -> None:
        smtp, self._smtp = self._smtp, None
        if smtp is None:
            return
        try:
            smtp.quit()
        except (smtplib.SMTPException, OSError):
            smtp.close()

    def __enter__(self) -> SmtpSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close_quietly(smtp: smtplib.SMTP | None) -> None:
    if smtp is not None:
        smtp.close()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, smtplib.SMTPResponseException):
        return str(_reply(exc.smtp_code, exc.smtp_error))
    if isinstance(exc, smtplib.SMTPServerDisconnected):
        return "the connection was closed by the server"
    if isinstance(exc, socket.timeout | TimeoutError):
        return "no answer within the timeout"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate not trusted ({exc.verify_message})"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower() if exc.strerror[:1].isupper() else exc.strerror
    return str(exc) or type(exc).__name__


def resolve_password(config: SmtpConfig, environ: Mapping[str, str]) -> str | None:
    """The SMTP password from listlib.toml, ``password_file`` or ``password_env``; None without ``user``."""
    if config.user is None:
        return None
    return read_secret("[smtp]", config.password, config.password_env, config.password_file, environ, DeliveryError)
