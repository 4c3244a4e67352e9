"""The password of a POP3 account or of the SMTP server, read when it is needed.

Given inline, by an environment variable or by a file's first line; the one place
either side reads a secret. Never logs, prints or stores the secret, and never reads
listlib.toml (the config holds where the password is, not the password from a file).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..errors import ListlibError

__all__ = ["read_secret"]


def read_secret(
    where: str,
    password: str | None,
    password_env: str | None,
    password_file: Path | None,
    environ: Mapping[str, str],
    error: type[ListlibError],
) -> str:
    """A password given inline, by ``password_env`` or by the first line of
    ``password_file`` (POP3 accounts and the SMTP server share the rule); problems
    raise ``error`` naming ``where``."""
    if password is not None:
        return password
    if password_env is not None:
        value = environ.get(password_env)
        if not value:
            raise error(f"{where}: the environment variable {password_env} (password_env) is not set")
        return value
    if password_file is not None:
        try:
            text = password_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise error(f"{where}: password_file {password_file} cannot be read: {reason}") from None
        secret = text.split("\n", 1)[0].rstrip("\r")
        if not secret:
            raise error(f"{where}: password_file {password_file} is empty")
        return secret
    raise error(f"{where}: no password configured")
