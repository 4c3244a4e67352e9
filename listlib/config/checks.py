"""Checks of single string values: each returns what is wrong with one, or None.

Pure functions of the string alone, used by the tables' readers as ``check=``; never
record an issue themselves and never know which key they check.
"""

from __future__ import annotations

import re

from .schema import SECURITIES

__all__ = [
    "check_email",
    "check_env_name",
    "check_host",
    "check_list_id",
    "check_message_id_folder",
    "check_nonempty",
    "check_security",
    "check_url",
]

_EMAIL_RE = re.compile(r"[^@\s<>()\[\],;:\"]+@[^@\s<>()\[\],;:\"]+\.[^@\s<>()\[\],;:\".]+\Z")
_LIST_ID_RE = re.compile(r"[A-Za-z0-9_.+-]+(?:\.[A-Za-z0-9_-]+)+\Z")
_URL_RE = re.compile(r"https?://[^\s/]+(/\S*)?\Z")
_HOST_RE = re.compile(r"[^\s/@:]+\Z|\[[0-9A-Fa-f:.]+\]\Z")
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_FOLDER_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*(?:/[A-Za-z][A-Za-z0-9_-]*)*\Z")


def check_email(value: str) -> str | None:
    return None if _EMAIL_RE.match(value) else f"{value!r} is not an email address"


def check_list_id(value: str) -> str | None:
    bare = value.strip().strip("<>")
    return None if _LIST_ID_RE.match(bare) else f"{value!r} is not a List-Id (like 'dev.example.org')"


def check_url(value: str) -> str | None:
    if not _URL_RE.match(value):
        return f"{value!r} is not an absolute http(s) URL"
    return None


def check_nonempty(value: str) -> str | None:
    return None if value.strip() else "must not be empty"


def check_host(value: str) -> str | None:
    return None if _HOST_RE.match(value) else f"{value!r} is not a host name or IP address"


def check_env_name(value: str) -> str | None:
    return None if _ENV_NAME_RE.match(value) else f"{value!r} is not an environment variable name"


def check_security(value: str) -> str | None:
    return None if value in SECURITIES else f"{value!r} is not one of 'ssl', 'starttls', 'none'"


def check_message_id_folder(value: str) -> str | None:
    """A folder under a list: names that start with a letter (never a year, never a
    Message-ID, which has an ``@``), joined by ``/``; "" for the list's own folder."""
    if value == "" or _FOLDER_RE.match(value):
        return None
    return f"{value!r} is not a folder of names of letters, digits, '_' and '-' that start with a letter"


_LANGUAGE_RE = re.compile(r"[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*")


def check_language(value: str) -> str | None:
    """A BCP 47 language tag such as ``en``, ``de-CH`` or ``zh-Hant``."""
    if _LANGUAGE_RE.fullmatch(value):
        return None
    return f"{value!r} is not a language tag such as 'en' or 'de-CH'"


def check_scheduler(value: str) -> str | None:
    scheme, sep, rest = value.partition("://")
    if not sep or scheme not in ("tcp", "tls") or not rest or ":" not in rest:
        return "expected a Dask scheduler address such as tcp://HOST:8786"
    return None
