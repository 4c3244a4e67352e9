"""The ``[pop3.<name>]`` tables: the mailboxes ``listlib fetch`` files mail from.

Checks each account's server, security, login and password source (exactly one of
``password``, ``password_file``, ``password_env``) and the list it files under.
The keys every mail account shares are read here for ``[imap.<name>]`` too.
Records problems on the Reader; never reads the password (``secret.read_secret`` does,
at fetch time) and never connects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ..errors import ConfigIssue
from ..values import is_slug
from .checks import check_env_name, check_host, check_nonempty, check_security
from .reader import Reader, kind_of
from .schema import SECURITIES, ListConfig, Pop3Account, Security

__all__ = ["SERVER_KEYS", "account_tables", "read_mailbox_server", "read_pop3"]

_DEFAULT_PORTS: dict[Security, int] = {"ssl": 995, "starttls": 110, "none": 110}
SERVER_KEYS = frozenset(
    {"host", "port", "security", "user", "password", "password_file", "password_env", "ca_file", "timeout"}
    | {"list", "max_messages"}
)
"""The keys every remote mailbox account has (``[pop3.<name>]``, ``[imap.<name>]``)."""
_POP3_KEYS = SERVER_KEYS | {"keep_on_server"}


def read_pop3(reader: Reader, data: Mapping[str, Any], lists: tuple[ListConfig, ...]) -> tuple[Pop3Account, ...]:
    out = []
    for name, table, where in account_tables(reader, data, "pop3"):
        reader.unknown(table, _POP3_KEYS, where)
        out.append(
            Pop3Account(
                **read_mailbox_server(reader, table, where, name, lists, _DEFAULT_PORTS),
                keep_on_server=reader.boolean(table, "keep_on_server", where, False),
                max_messages=reader.integer(table, "max_messages", where, 1, 10**9),
            )
        )
    return tuple(out)


def account_tables(reader: Reader, data: Mapping[str, Any], kind: str) -> list[tuple[str, Mapping[str, Any], str]]:
    """The ``[<kind>.<name>]`` tables as (name, table, key path); a bad name or a value
    that is not a table is recorded."""
    accounts = reader.table(data, kind, kind)
    out = []
    for name, table in accounts.items():
        where = f"{kind}.{name}"
        if not isinstance(table, Mapping):
            reader.issues.append(ConfigIssue(where, f"expected a table [{kind}.<account>], got {kind_of(table)}"))
            continue
        if not is_slug(name):
            reader.issues.append(
                ConfigIssue(where, f"{name!r} is not an account name (lower-case letters, digits and dashes)")
            )
        out.append((name, table, where))
    return out


def read_mailbox_server(
    reader: Reader,
    table: Mapping[str, Any],
    where: str,
    name: str,
    lists: tuple[ListConfig, ...],
    default_ports: Mapping[Security, int],
) -> dict[str, Any]:
    """The keys every mail account has (server, security, login, password source, list),
    as keyword arguments of its dataclass."""
    slugs = {lst.slug for lst in lists}
    security = reader.string(table, "security", where, default="ssl", check=check_security)
    security = cast(Security, security if security in SECURITIES else "ssl")
    sources = [key for key in ("password", "password_file", "password_env") if key in table]
    if not sources:
        reader.issues.append(ConfigIssue(where, "one of password_file, password_env or password is required"))
    elif len(sources) > 1:
        reader.issues.append(ConfigIssue(where, f"give only one of {', '.join(sources)}"))
    password = reader.string(table, "password", where, default="") if "password" in table else None
    password_env = reader.string(table, "password_env", where, default="", check=check_env_name) or None
    target = reader.string(table, "list", where, default="") or None
    if target is not None and target not in slugs:
        reader.issues.append(ConfigIssue(f"{where}.list", f"no list {target!r} in [lists]"))
    ca_file = reader.path(table, "ca_file", where, None)
    if ca_file is not None and security == "none":
        reader.warnings.append(f"{where}.ca_file: unused with security = 'none'")
    port = reader.integer(table, "port", where, 1, 65535)
    return {
        "name": name,
        "host": reader.string(table, "host", where, check=check_host),
        "port": port or default_ports[security],
        "security": security,
        "user": reader.string(table, "user", where, check=check_nonempty),
        "password": password,
        "password_file": reader.path(table, "password_file", where, None),
        "password_env": password_env,
        "ca_file": ca_file,
        "timeout": reader.number(table, "timeout", where, 60.0),
        "list": target,
    }
