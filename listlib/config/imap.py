"""The ``[imap.<name>]`` tables: the IMAP folders ``listlib fetch`` files mail from.

The server, security, login and list keys are those of ``[pop3.<name>]`` (read by
``pop3.read_mailbox_server``); IMAP adds ``folders``, ``after`` (``delete``, ``move``,
``keep`` or ``seen``) and ``move_to``. An account name may not be both a POP3 and an IMAP
account (``listlib fetch NAME`` must mean one). Records problems on the Reader;
never connects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ..errors import ConfigIssue
from .pop3 import SERVER_KEYS, account_tables, read_mailbox_server
from .reader import Reader
from .schema import AFTER_FILING, AfterFilingAction, ImapAccount, ListConfig, Security

__all__ = ["read_imap"]

_DEFAULT_PORTS: dict[Security, int] = {"ssl": 993, "starttls": 143, "none": 143}
_IMAP_KEYS = SERVER_KEYS | {"folders", "after", "move_to"}


def check_folder_name(value: str) -> str | None:
    """An IMAP folder name listlib can send as it is: printable ASCII, not empty."""
    if not value.strip():
        return "must not be empty"
    if not value.isascii() or not value.isprintable():
        return f"{value!r} is not a folder name listlib can use (printable ASCII only)"
    return None


def _check_after(value: str) -> str | None:
    return None if value in AFTER_FILING else f"{value!r} is not one of 'delete', 'move', 'keep', 'seen'"


def read_imap(
    reader: Reader, data: Mapping[str, Any], lists: tuple[ListConfig, ...], pop3_names: set[str]
) -> tuple[ImapAccount, ...]:
    out = []
    for name, table, where in account_tables(reader, data, "imap"):
        reader.unknown({key: value for key, value in table.items() if key != "keep_on_server"}, _IMAP_KEYS, where)
        if "keep_on_server" in table:  # a POP3 habit
            reader.issues.append(ConfigIssue(f"{where}.keep_on_server", 'is a POP3 key; for IMAP write after = "keep"'))
        if name in pop3_names:
            problem = f"{name!r} is also a [pop3.{name}] account; give each its own name"
            reader.issues.append(ConfigIssue(where, problem))
        folders = reader.strings(table, "folders", where, check_folder_name) if "folders" in table else ("INBOX",)
        if not folders and "folders" in table and not table["folders"]:
            reader.issues.append(ConfigIssue(f"{where}.folders", "must name at least one folder"))
        if len(set(folders)) != len(folders):
            reader.issues.append(ConfigIssue(f"{where}.folders", "names a folder twice"))
        after = reader.string(table, "after", where, default="delete", check=_check_after)
        after = cast(AfterFilingAction, after if after in AFTER_FILING else "delete")
        move_to = reader.string(table, "move_to", where, default="", check=check_folder_name) or None
        if after == "move" and move_to is None and "move_to" not in table:
            reader.issues.append(ConfigIssue(f"{where}.move_to", 'is required with after = "move"'))
        if after != "move" and move_to is not None:
            reader.warnings.append(f'{where}.move_to: unused without after = "move"')
        if move_to is not None and move_to in folders:
            reader.issues.append(ConfigIssue(f"{where}.move_to", f"{move_to!r} is also one of the folders fetched"))
        out.append(
            ImapAccount(
                **read_mailbox_server(reader, table, where, name, lists, _DEFAULT_PORTS),
                folders=folders,
                after=after,
                move_to=move_to,
                max_messages=reader.integer(table, "max_messages", where, 1, 10**9),
            )
        )
    return tuple(out)
