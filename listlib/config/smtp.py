"""The ``[smtp]`` and ``[delivery]`` tables: the server ``listlib deliver`` hands posts
to, and its site-wide retry and VERP settings.

Records problems on the Reader; never reads the password (``secret.read_secret`` does,
at delivery time) and never connects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ..errors import ConfigIssue
from .checks import check_env_name, check_host, check_nonempty, check_security
from .reader import Reader
from .schema import SECURITIES, DeliveryConfig, Security, SmtpConfig

__all__ = ["read_delivery", "read_smtp"]

_SMTP_KEYS = {
    "host",
    "port",
    "security",
    "user",
    "password",
    "password_file",
    "password_env",
    "ca_file",
    "timeout",
    "helo",
    "max_recipients",
}
_SMTP_PORTS: dict[Security, int] = {"ssl": 465, "starttls": 587, "none": 25}
_DELIVERY_KEYS = {"verp", "retry_first_minutes", "retry_max_minutes", "give_up_days"}


def read_smtp(reader: Reader, data: Mapping[str, Any]) -> SmtpConfig | None:
    if "smtp" not in data:
        return None
    where = "smtp"
    table = reader.table(data, "smtp", where)
    reader.unknown(table, _SMTP_KEYS, where)
    security = reader.string(table, "security", where, default="starttls", check=check_security)
    security = cast(Security, security if security in SECURITIES else "starttls")
    user = reader.string(table, "user", where, default="", check=check_nonempty) if "user" in table else None
    sources = [key for key in ("password", "password_file", "password_env") if key in table]
    if user is not None and not sources:
        reader.issues.append(ConfigIssue(where, "one of password_file, password_env or password is required with user"))
    elif user is None and sources:
        reader.issues.append(ConfigIssue(f"{where}.{sources[0]}", "needs a user to log in with"))
    elif len(sources) > 1:
        reader.issues.append(ConfigIssue(where, f"give only one of {', '.join(sources)}"))
    ca_file = reader.path(table, "ca_file", where, None)
    if ca_file is not None and security == "none":
        reader.warnings.append(f"{where}.ca_file: unused with security = 'none'")
    port = reader.integer(table, "port", where, 1, 65535)
    return SmtpConfig(
        host=reader.string(table, "host", where, check=check_host),
        port=port or _SMTP_PORTS[security],
        security=security,
        user=user,
        password=reader.string(table, "password", where, default="") if "password" in table else None,
        password_file=reader.path(table, "password_file", where, None),
        password_env=reader.string(table, "password_env", where, default="", check=check_env_name) or None,
        ca_file=ca_file,
        timeout=reader.number(table, "timeout", where, 60.0),
        helo=reader.string(table, "helo", where, default="", check=check_host) or None,
        max_recipients=reader.integer(table, "max_recipients", where, 1, 1000) or 50,
    )


def read_delivery(reader: Reader, data: Mapping[str, Any]) -> DeliveryConfig:
    table = reader.table(data, "delivery", "delivery")
    reader.unknown(table, _DELIVERY_KEYS, "delivery")
    first = reader.number(table, "retry_first_minutes", "delivery", 5.0)
    most = reader.number(table, "retry_max_minutes", "delivery", 240.0)
    if most < first:
        reader.issues.append(ConfigIssue("delivery.retry_max_minutes", "must not be less than retry_first_minutes"))
    return DeliveryConfig(
        verp=reader.boolean(table, "verp", "delivery", False),
        retry_first_minutes=first,
        retry_max_minutes=most,
        give_up_days=reader.number(table, "give_up_days", "delivery", 5.0),
    )
